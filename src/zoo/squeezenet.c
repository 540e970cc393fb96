/*
 * squeezenet.c - SqueezeNet 1.1 as torchvision defines it
 * (torchvision/models/squeezenet.py): Fire modules (a 1x1 squeeze, then 1x1
 * and 3x3 expands concatenated), ceil-mode max pools, and a classifier that
 * is a 1x1 convolution to 1000 channels averaged over the image.  It has no
 * BatchNorm, so fold_bn only removes the Dropout.
 */
#include "zoo/zoo_impl.h"

static opsched_status conv(os_zoo_net *net, int x, const char *name, const char *relu,
                           int64_t out_channels, int64_t k, int64_t stride, int64_t pad, int *out)
{
    opsched_conv_desc d = os_zoo_conv_desc(out_channels, k, k, stride, pad, pad);
    d.bias = 1;
    return os_zoo_conv(net, x, &d, name, NULL, 0.0f, relu, out);
}

/* Fire "features.<i>". */
static opsched_status fire(os_zoo_net *net, int x, int i, int64_t squeeze, int64_t expand1x1,
                           int64_t expand3x3, int *out)
{
    char p[OS_ZOO_NAME_MAX], name[OS_ZOO_NAME_MAX], relu[OS_ZOO_NAME_MAX];
    int e[2];
    OS_TRY(os_zoo_name(net, p, "features.%d", i));
    OS_TRY(os_zoo_name(net, name, "%s.squeeze", p));
    OS_TRY(os_zoo_name(net, relu, "%s.squeeze_activation", p));
    OS_TRY(conv(net, x, name, relu, squeeze, 1, 1, 0, &x));
    OS_TRY(os_zoo_name(net, name, "%s.expand1x1", p));
    OS_TRY(os_zoo_name(net, relu, "%s.expand1x1_activation", p));
    OS_TRY(conv(net, x, name, relu, expand1x1, 1, 1, 0, &e[0]));
    OS_TRY(os_zoo_name(net, name, "%s.expand3x3", p));
    OS_TRY(os_zoo_name(net, relu, "%s.expand3x3_activation", p));
    OS_TRY(conv(net, x, name, relu, expand3x3, 3, 1, 1, &e[1]));
    OS_TRY(os_zoo_name(net, name, "%s.cat", p));
    return opsched_build_concat(net->g, name, e, 2, 1, out);
}

static opsched_status maxpool(os_zoo_net *net, int x, int i, int *out)
{
    char name[OS_ZOO_NAME_MAX];
    OS_TRY(os_zoo_name(net, name, "features.%d", i));
    return opsched_build_pool(net->g, name, OPSCHED_OP_MAXPOOL, x, 3, 2, 0, 1, 0, out);
}

opsched_status os_zoo_build_squeezenet1_1(os_zoo_net *net, int x, int *out)
{
    OS_TRY(conv(net, x, "features.0", "features.1", 64, 3, 2, 0, &x));
    OS_TRY(maxpool(net, x, 2, &x));
    OS_TRY(fire(net, x, 3, 16, 64, 64, &x));
    OS_TRY(fire(net, x, 4, 16, 64, 64, &x));
    OS_TRY(maxpool(net, x, 5, &x));
    OS_TRY(fire(net, x, 6, 32, 128, 128, &x));
    OS_TRY(fire(net, x, 7, 32, 128, 128, &x));
    OS_TRY(maxpool(net, x, 8, &x));
    OS_TRY(fire(net, x, 9, 48, 192, 192, &x));
    OS_TRY(fire(net, x, 10, 48, 192, 192, &x));
    OS_TRY(fire(net, x, 11, 64, 256, 256, &x));
    OS_TRY(fire(net, x, 12, 64, 256, 256, &x));
    OS_TRY(os_zoo_dropout(net, x, "classifier.0", &x));
    OS_TRY(conv(net, x, "classifier.1", "classifier.2", 1000, 1, 1, 0, &x));
    OS_TRY(os_zoo_adaptive_avgpool(net, x, "classifier.3", 1, 1, &x));
    return opsched_build_flatten(net->g, "flatten", x, 1, out);
}
