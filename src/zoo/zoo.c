/*
 * zoo.c - the registry of built-in networks and the one entry point that
 * builds them: options resolved, input checked against the model's
 * smallest size, input tensor created, model built, logits marked.
 */
#include <string.h>

#include "core/util.h"
#include "zoo/zoo_impl.h"

typedef struct zoo_model {
    opsched_zoo_info info; /* first, so &models[i].info is what callers see */
    os_zoo_build_fn build;
} zoo_model;

/*
 * min_size is the smallest side every layer accepts, the sizes below it
 * failing somewhere in the network.  It is torchvision's documented
 * min_size except where our form is stricter: AlexNet and VGG-16 end their
 * features in AdaptiveAvgPool2d((6, 6)) and ((7, 7)), which we can only
 * write as a pooling when the feature map is at least that large (see
 * os_zoo_adaptive_avgpool), that is from 223 and 224 pixels up.
 * GoogLeNet's 15 and SqueezeNet's 17 rest on ceil-mode max pooling giving
 * one output for a window that overhangs the input by less than a stride,
 * as PyTorch and the ONNX output-size formula both do.  RandWire pads
 * every window and NASNet pads SAME, so any size fits that NASNet's
 * unpadded 3x3 conv0 fits.
 */
static const zoo_model models[] = {
    {{"alexnet", "AlexNet, torchvision's one-GPU variant", 224, 223}, os_zoo_build_alexnet},
    {{"vgg16", "VGG-16 (configuration D) without batch norm", 224, 224}, os_zoo_build_vgg16},
    {{"resnet50", "ResNet-50 v1.5 (stride in the 3x3 convolution)", 224, 1}, os_zoo_build_resnet50},
    {{"resnet152", "ResNet-152 v1.5 (stride in the 3x3 convolution)", 224, 1},
     os_zoo_build_resnet152},
    {{"densenet121", "DenseNet-121 (growth rate 32, blocks 6-12-24-16)", 224, 29},
     os_zoo_build_densenet121},
    {{"googlenet", "GoogLeNet (Inception v1) with batch norm, no auxiliary heads", 224, 15},
     os_zoo_build_googlenet},
    {{"inception_v3", "Inception v3, no auxiliary head", 299, 75}, os_zoo_build_inception_v3},
    {{"squeezenet1_1", "SqueezeNet 1.1", 224, 17}, os_zoo_build_squeezenet1_1},
    {{"randwire", "RandWire-WS(4, 0.75), small regime, C=78 (fixed-seed graphs)", 224, 1},
     os_zoo_build_randwire},
    {{"randwire_large", "RandWire-WS(4, 0.75), regular regime, C=154 (IOS's RandWire)", 224, 1},
     os_zoo_build_randwire_large},
    {{"nasnet", "NASNet-A Mobile (4 @ 1056)", 224, 3}, os_zoo_build_nasnet},
    {{"nasnet_large", "NASNet-A Large (6 @ 4032), IOS's NasNet", 331, 3},
     os_zoo_build_nasnet_large},
};

int opsched_zoo_count(void)
{
    return (int)OS_ARRAY_LEN(models);
}

const opsched_zoo_info *opsched_zoo_at(int i)
{
    if (i < 0 || i >= opsched_zoo_count()) return NULL;
    return &models[i].info;
}

static const zoo_model *find_model(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < OS_ARRAY_LEN(models); i++)
        if (strcmp(models[i].info.name, name) == 0) return &models[i];
    return NULL;
}

const opsched_zoo_info *opsched_zoo_find(const char *name)
{
    const zoo_model *m = find_model(name);
    return m ? &m->info : NULL;
}

opsched_status opsched_zoo_build(opsched_ctx *ctx, const char *name,
                                 const opsched_zoo_options *opts, opsched_graph **out)
{
    if (out) *out = NULL;
    if (!ctx) return OPSCHED_ERR_INVALID_ARG;
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "zoo: no place for the graph");
    if (!name) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "zoo: no model name");
    const zoo_model *m = find_model(name);
    if (!m) return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND, "zoo: no model named '%s'", name);

    opsched_zoo_options o;
    memset(&o, 0, sizeof(o));
    if (opts) o = *opts;
    if (o.batch < 0 || o.height < 0 || o.width < 0)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "zoo: %s: batch %lld and size %lldx%lld must be positive (0 for the "
                       "default)",
                       name, (long long)o.batch, (long long)o.height, (long long)o.width);
    if (o.batch == 0) o.batch = 1;
    if (o.height == 0) o.height = m->info.default_size;
    if (o.width == 0) o.width = o.height;
    if (o.height < m->info.min_size || o.width < m->info.min_size)
        return OS_FAIL(ctx, OPSCHED_ERR_SHAPE,
                       "zoo: %s needs an input of at least %lldx%lld, got %lldx%lld", name,
                       (long long)m->info.min_size, (long long)m->info.min_size,
                       (long long)o.height, (long long)o.width);

    os_zoo_net net = {.g = NULL, .fold_bn = o.fold_bn != 0};
    opsched_shape in = {.ndim = 4, .d = {o.batch, 3, o.height, o.width}};
    int x, y;
    opsched_status st;
    OS_TRY(opsched_graph_create(ctx, name, &net.g));
    OS_TRY_GOTO(
        st, opsched_graph_add_tensor(net.g, "input", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &in, &x),
        fail);
    OS_TRY_GOTO(st, m->build(&net, x, &y), fail);
    OS_TRY_GOTO(st, opsched_graph_mark_output(net.g, y), fail);
    *out = net.g;
    return OPSCHED_OK;
fail:
    opsched_graph_free(net.g);
    return st;
}
