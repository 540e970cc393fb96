/*
 * test_zoo.c - the model zoo against torchvision: exact parameter counts in
 * both forms, exact multiply-add counts, torchvision's published GFLOPS,
 * the operators of each network (for the folded form, those of the ONNX
 * file torch.onnx.export writes), names, options and size limits.
 *
 * The reference numbers come from tests/zoo_reference.py (torch 1.13,
 * torchvision 0.14.1); its output with --onnx:
 *
 *   alexnet        params=61100840 folded=61100840 macs=714188480 size=224
 *       onnx: AveragePool:1 Conv:5 Flatten:1 Gemm:3 MaxPool:3 Relu:7
 *   vgg16          params=138357544 folded=138357544 macs=15470264320 size=224
 *       onnx: AveragePool:1 Conv:13 Flatten:1 Gemm:3 MaxPool:5 Relu:15
 *   resnet50       params=25557032 folded=25530472 macs=4089184256 size=224
 *       onnx: Add:16 Conv:53 Flatten:1 Gemm:1 GlobalAveragePool:1 MaxPool:1 Relu:49
 *   resnet152      params=60192808 folded=60117096 macs=11513626624 size=224
 *       onnx: Add:50 Conv:155 Flatten:1 Gemm:1 GlobalAveragePool:1 MaxPool:1 Relu:151
 *   densenet121    params=7978856 folded=7971368 macs=2834161664 size=224
 *       onnx: AveragePool:3 BatchNormalization:62 Concat:62 Constant:3 Conv:120 Flatten:1
 *             Gemm:1 GlobalAveragePool:1 MaxPool:1 Pad:3 Relu:121
 *   googlenet      params=6624904 folded=6617624 macs=1498376192 size=224
 *       onnx: Concat:9 Conv:57 Flatten:1 Gemm:1 GlobalAveragePool:1 MaxPool:13 Relu:57
 *   inception_v3   params=23834568 folded=23817352 macs=5713216096 size=299
 *       onnx: AveragePool:9 Concat:11 Constant:9 Conv:94 Flatten:1 Gemm:1
 *             GlobalAveragePool:1 MaxPool:4 Pad:9 Relu:94
 *   squeezenet1_1  params=1235496 folded=1235496 macs=349151936 size=224
 *       onnx: Concat:8 Conv:26 Flatten:1 GlobalAveragePool:1 MaxPool:3 Relu:26
 *
 * The ONNX files' Pad + Constant pairs are how the exporter writes a padded
 * average pool (and, oddly, DenseNet's unpadded one); the zoo keeps a
 * single AveragePool with pads, so they have no counterpart here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "opsched/zoo.h"

typedef struct zoo_ref {
    const char *name;
    int64_t default_size;
    int64_t min_size;      /* torchvision's, except AlexNet and VGG (see zoo.c) */
    int64_t params;        /* torchvision's num_params, fold_bn = 0 */
    int64_t params_folded; /* each conv-then-BN's 2C parameters become a C bias */
    int64_t macs;          /* Conv2d + Linear multiply-adds, batch 1, default size */
    double gflops;         /* torchvision's published GFLOPS (multiply-adds, rounded) */
    /* Nodes per operator, in opsched_op_kind order.  Unfolded: torchvision's
     * modules and functional calls one for one.  Folded: the ONNX file's
     * nodes above, less Pad and Constant. */
    const char *ops;
    const char *ops_folded;
} zoo_ref;

/*
 * inception_v3: torchvision publishes 27161264 parameters, which include
 * the AuxLogits head (3326696 parameters) that only runs in training; the
 * zoo has no auxiliary heads, so the reference is inception_v3(aux_logits=
 * False), 23834568.  GoogLeNet's published 6624904 already excludes its
 * two auxiliary heads.
 */
static const zoo_ref refs[] = {
    {"alexnet", 224, 223, 61100840, 61100840, 714188480, 0.71,
     "Conv:5 Gemm:3 MaxPool:3 AveragePool:1 Relu:7 Flatten:1 Dropout:2",
     "Conv:5 Gemm:3 MaxPool:3 AveragePool:1 Relu:7 Flatten:1"},
    {"vgg16", 224, 224, 138357544, 138357544, 15470264320, 15.47,
     "Conv:13 Gemm:3 MaxPool:5 AveragePool:1 Relu:15 Flatten:1 Dropout:2",
     "Conv:13 Gemm:3 MaxPool:5 AveragePool:1 Relu:15 Flatten:1"},
    {"resnet50", 224, 1, 25557032, 25530472, 4089184256, 4.09,
     "Conv:53 Gemm:1 MaxPool:1 GlobalAveragePool:1 Relu:49 Add:16 BatchNormalization:53 "
     "Flatten:1",
     "Conv:53 Gemm:1 MaxPool:1 GlobalAveragePool:1 Relu:49 Add:16 Flatten:1"},
    {"resnet152", 224, 1, 60192808, 60117096, 11513626624, 11.51,
     "Conv:155 Gemm:1 MaxPool:1 GlobalAveragePool:1 Relu:151 Add:50 BatchNormalization:155 "
     "Flatten:1",
     "Conv:155 Gemm:1 MaxPool:1 GlobalAveragePool:1 Relu:151 Add:50 Flatten:1"},
    {"densenet121", 224, 29, 7978856, 7971368, 2834161664, 2.83,
     "Conv:120 Gemm:1 MaxPool:1 AveragePool:3 GlobalAveragePool:1 Relu:121 Concat:62 "
     "BatchNormalization:121 Flatten:1",
     "Conv:120 Gemm:1 MaxPool:1 AveragePool:3 GlobalAveragePool:1 Relu:121 Concat:62 "
     "BatchNormalization:62 Flatten:1"},
    {"googlenet", 224, 15, 6624904, 6617624, 1498376192, 1.50,
     "Conv:57 Gemm:1 MaxPool:13 GlobalAveragePool:1 Relu:57 Concat:9 BatchNormalization:57 "
     "Flatten:1 Dropout:1",
     "Conv:57 Gemm:1 MaxPool:13 GlobalAveragePool:1 Relu:57 Concat:9 Flatten:1"},
    {"inception_v3", 299, 75, 23834568, 23817352, 5713216096, 5.71,
     "Conv:94 Gemm:1 MaxPool:4 AveragePool:9 GlobalAveragePool:1 Relu:94 Concat:15 "
     "BatchNormalization:94 Flatten:1 Dropout:1",
     "Conv:94 Gemm:1 MaxPool:4 AveragePool:9 GlobalAveragePool:1 Relu:94 Concat:11 "
     "Flatten:1"},
    {"squeezenet1_1", 224, 17, 1235496, 1235496, 349151936, 0.35,
     "Conv:26 MaxPool:3 GlobalAveragePool:1 Relu:26 Concat:8 Flatten:1 Dropout:1",
     "Conv:26 MaxPool:3 GlobalAveragePool:1 Relu:26 Concat:8 Flatten:1"},
};

#define N_REFS ((int)(sizeof(refs) / sizeof(refs[0])))

static opsched_ctx *ctx;

static const zoo_ref *ref(const char *name)
{
    for (int i = 0; i < N_REFS; i++)
        if (strcmp(refs[i].name, name) == 0) return &refs[i];
    fail_msg("no reference for %s", name);
    return NULL;
}

static int setup(void **state)
{
    (void)state;
    return opsched_ctx_create(&ctx) == OPSCHED_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    opsched_ctx_free(ctx);
    return 0;
}

/* Builds a model, failing the test with the library's message if it cannot. */
static opsched_graph *build(const char *name, int64_t batch, int64_t h, int64_t w, int fold)
{
    opsched_zoo_options o = {.batch = batch, .height = h, .width = w, .fold_bn = fold};
    opsched_graph *g = NULL;
    opsched_status st = opsched_zoo_build(ctx, name, &o, &g);
    if (st != OPSCHED_OK)
        fail_msg("%s batch %lld size %lldx%lld (0: default) fold_bn=%d: %s: %s", name,
                 (long long)batch, (long long)h, (long long)w, fold, opsched_status_str(st),
                 opsched_ctx_last_error(ctx));
    return g;
}

static opsched_graph_totals totals(const opsched_graph *g)
{
    opsched_graph_totals t;
    assert_int_equal(opsched_graph_totals_compute(g, &t), OPSCHED_OK);
    return t;
}

/* FLOPs of the convolutions and fully connected layers only, the ops that
 * torchvision's GFLOPS count (element-wise ops, pooling and BatchNorm add
 * another 0.1-1% in opsched's totals). */
static int64_t conv_gemm_flops(const opsched_graph *g)
{
    int64_t f = 0;
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        if (n->op == OPSCHED_OP_CONV || n->op == OPSCHED_OP_GEMM) f += n->cost.flops;
    }
    return f;
}

static void op_histogram(const opsched_graph *g, char *buf, size_t size)
{
    int count[OPSCHED_OP_COUNT] = {0};
    for (int i = 0; i < opsched_graph_num_nodes(g); i++)
        count[opsched_graph_node(g, i)->op]++;
    size_t len = 0;
    buf[0] = '\0';
    for (int op = 0; op < OPSCHED_OP_COUNT; op++) {
        if (!count[op]) continue;
        int n = snprintf(buf + len, size - len, "%s%s:%d", len ? " " : "",
                         opsched_op_name((opsched_op_kind)op), count[op]);
        assert_true(n > 0 && (size_t)n < size - len);
        len += (size_t)n;
    }
}

static const opsched_shape *output_shape(const opsched_graph *g)
{
    assert_int_equal(opsched_graph_num_outputs(g), 1);
    return &opsched_graph_tensor(g, opsched_graph_output(g, 0))->shape;
}

static void assert_logits(const opsched_graph *g, int64_t batch)
{
    const opsched_shape *s = output_shape(g);
    assert_int_equal(s->ndim, 2);
    assert_int_equal(s->d[0], batch);
    assert_int_equal(s->d[1], 1000);
}

static int has_tensor(const opsched_graph *g, const char *name)
{
    int id;
    return opsched_graph_find_tensor(g, name, &id) == OPSCHED_OK;
}

/* ---- the registry ---------------------------------------------------- */

static void test_registry(void **state)
{
    (void)state;
    assert_int_equal(opsched_zoo_count(), N_REFS);
    for (int i = 0; i < N_REFS; i++) {
        const opsched_zoo_info *info = opsched_zoo_at(i);
        assert_non_null(info);
        assert_string_equal(info->name, refs[i].name);
        assert_ptr_equal(opsched_zoo_find(refs[i].name), info);
        assert_int_equal(info->default_size, refs[i].default_size);
        assert_int_equal(info->min_size, refs[i].min_size);
        assert_non_null(info->description);
        assert_true(strlen(info->description) > 0);
    }
    assert_null(opsched_zoo_at(-1));
    assert_null(opsched_zoo_at(N_REFS));
    assert_null(opsched_zoo_find("resnet"));
    assert_null(opsched_zoo_find(NULL));
}

/* ---- every model against torchvision --------------------------------- */

static void check_model(const zoo_ref *r, int fold)
{
    opsched_graph *g = build(r->name, 0, 0, 0, fold);
    opsched_graph_totals t = totals(g);
    char ops[512];

    assert_string_equal(opsched_graph_name(g), r->name);
    assert_int_equal(opsched_graph_num_inputs(g), 1);
    const opsched_tensor *in = opsched_graph_tensor(g, opsched_graph_input(g, 0));
    assert_string_equal(in->name, "input");
    assert_int_equal(in->dtype, OPSCHED_F32);
    assert_int_equal(in->shape.ndim, 4);
    assert_int_equal(in->shape.d[0], 1);
    assert_int_equal(in->shape.d[1], 3);
    assert_int_equal(in->shape.d[2], r->default_size);
    assert_int_equal(in->shape.d[3], r->default_size);
    assert_logits(g, 1);

    if (t.params != (fold ? r->params_folded : r->params))
        fail_msg("%s fold_bn=%d: %lld parameters, torchvision has %lld", r->name, fold,
                 (long long)t.params, (long long)(fold ? r->params_folded : r->params));
    /* Folding moves no multiply-add: the scale goes into the weights. */
    assert_int_equal(conv_gemm_flops(g), 2 * r->macs);
    double gmacs = (double)conv_gemm_flops(g) / 2e9;
    if (fabs(gmacs - r->gflops) > 0.02 * r->gflops)
        fail_msg("%s: %.4f GMACs, torchvision publishes %.2f", r->name, gmacs, r->gflops);
    assert_true(t.flops > conv_gemm_flops(g));

    op_histogram(g, ops, sizeof(ops));
    if (strcmp(ops, fold ? r->ops_folded : r->ops) != 0)
        fail_msg("%s fold_bn=%d:\n  got  %s\n  want %s", r->name, fold, ops,
                 fold ? r->ops_folded : r->ops);
    opsched_graph_free(g);
}

/* The per-model tests get their zoo_ref as the initial state. */
static void test_model_unfolded(void **state)
{
    check_model(*state, 0);
}

static void test_model_folded(void **state)
{
    check_model(*state, 1);
}

/* ---- names are torchvision's module paths ---------------------------- */

static void assert_names(const char *model, int fold, const char *const *present,
                         const char *const *absent)
{
    opsched_graph *g = build(model, 0, 0, 0, fold);
    for (; *present; present++)
        if (!has_tensor(g, *present))
            fail_msg("%s fold_bn=%d: no tensor '%s'", model, fold, *present);
    for (; absent && *absent; absent++)
        if (has_tensor(g, *absent))
            fail_msg("%s fold_bn=%d: unexpected '%s'", model, fold, *absent);
    opsched_graph_free(g);
}

static void test_names(void **state)
{
    (void)state;
    static const char *const alexnet[] = {"features.0.weight",   "features.0.bias",   "features.12",
                                          "classifier.1.weight", "classifier.6.bias", NULL};
    static const char *const vgg[] = {"features.28.weight", "features.30", "classifier.0.weight",
                                      "classifier.2", NULL};
    static const char *const resnet[] = {"conv1.weight",
                                         "bn1.running_var",
                                         "layer1.0.conv1.weight",
                                         "layer1.0.downsample.0.weight",
                                         "layer1.0.downsample.1.weight",
                                         "layer4.2.bn3.bias",
                                         "layer4.2.relu_2",
                                         "fc.weight",
                                         NULL};
    static const char *const resnet_folded[] = {"layer1.0.conv1.bias", "layer4.2.conv3.bias",
                                                "layer1.0.downsample.0.bias", NULL};
    static const char *const resnet_no_bn[] = {"bn1.weight", "layer1.0.bn1.weight",
                                               "layer1.0.downsample.1.weight", NULL};
    static const char *const googlenet[] = {"conv1.conv.weight",
                                            "conv1.bn.running_mean",
                                            "inception3a.branch4.1.conv.weight",
                                            "inception5b.branch3.1.conv.weight",
                                            "fc.weight",
                                            "dropout",
                                            NULL};
    static const char *const inception[] = {"Conv2d_1a_3x3.conv.weight",
                                            "Mixed_5b.branch_pool.bn.bias",
                                            "Mixed_6e.branch7x7dbl_5.conv.weight",
                                            "Mixed_7c.branch3x3dbl_3b.conv.weight",
                                            "Mixed_7c.cat_2",
                                            "fc.bias",
                                            NULL};
    static const char *const inception_folded[] = {"Mixed_7c.cat", "Mixed_5b.branch1x1.conv.bias",
                                                   NULL};
    static const char *const inception_folded_gone[] = {"Mixed_7c.cat_1", "Mixed_7c.cat_2",
                                                        "dropout", NULL};
    static const char *const squeeze[] = {"features.0.weight", "features.12.expand3x3.weight",
                                          "features.12.cat", "classifier.1.weight", NULL};
    assert_names("alexnet", 0, alexnet, NULL);
    assert_names("vgg16", 0, vgg, NULL);
    assert_names("resnet50", 0, resnet, resnet_folded);
    assert_names("resnet50", 1, resnet_folded, resnet_no_bn);
    assert_names("googlenet", 0, googlenet, NULL);
    assert_names("inception_v3", 0, inception, NULL);
    assert_names("inception_v3", 1, inception_folded, inception_folded_gone);
    assert_names("squeezenet1_1", 0, squeeze, NULL);
}

/* DenseNet apart: each dense layer concatenates all the maps before it,
 * up to 25 inputs, a case of its own for the graph. */
static void test_densenet(void **state)
{
    (void)state;
    static const char *const dense[] = {"features.conv0.weight",
                                        "features.norm5.running_mean",
                                        "features.denseblock4.denselayer16.conv2.weight",
                                        "features.denseblock4.denselayer16.norm1.weight",
                                        "features.transition3.norm.weight",
                                        "classifier.bias",
                                        NULL};
    static const char *const dense_folded_gone[] = {
        "features.norm0.weight", "features.denseblock1.denselayer1.norm2.weight", NULL};
    assert_names("densenet121", 0, dense, NULL);
    assert_names("densenet121", 1, dense, dense_folded_gone);

    int id;
    const opsched_shape *s;
    opsched_graph *g = build("densenet121", 0, 0, 0, 0);
    assert_int_equal(opsched_graph_find_tensor(g, "features.denseblock3.cat", &id), OPSCHED_OK);
    assert_int_equal(opsched_graph_node(g, opsched_graph_tensor(g, id)->producer)->n_inputs, 25);
    assert_int_equal(opsched_graph_find_tensor(g, "features.norm5", &id), OPSCHED_OK);
    s = &opsched_graph_tensor(g, id)->shape; /* 1024 x 7 x 7 */
    assert_int_equal(s->d[1], 1024);
    assert_int_equal(s->d[2], 7);
    opsched_graph_free(g);
}

/* The shapes of a few layers, against torchvision's comments and code. */
static void test_shapes(void **state)
{
    (void)state;
    opsched_graph *g = build("googlenet", 0, 0, 0, 0);
    int id;
    assert_int_equal(opsched_graph_find_tensor(g, "inception3a.branch3.1.conv.weight", &id),
                     OPSCHED_OK);
    const opsched_shape *s = &opsched_graph_tensor(g, id)->shape; /* 3x3, not 5x5 */
    assert_int_equal(s->d[2], 3);
    assert_int_equal(s->d[3], 3);
    assert_int_equal(opsched_graph_find_tensor(g, "maxpool4", &id), OPSCHED_OK);
    s = &opsched_graph_tensor(g, id)->shape; /* N x 832 x 7 x 7 */
    assert_int_equal(s->d[1], 832);
    assert_int_equal(s->d[2], 7);
    opsched_graph_free(g);

    g = build("inception_v3", 0, 0, 0, 1);
    assert_int_equal(opsched_graph_find_tensor(g, "Mixed_7c.cat", &id), OPSCHED_OK);
    s = &opsched_graph_tensor(g, id)->shape; /* N x 2048 x 8 x 8 */
    assert_int_equal(s->d[1], 2048);
    assert_int_equal(s->d[2], 8);
    assert_int_equal(s->d[3], 8);
    opsched_graph_free(g);
}

/* ---- options ---------------------------------------------------------- */

static void test_model_batch(void **state)
{
    const zoo_ref *r = *state;
    opsched_graph *g1 = build(r->name, 0, 0, 0, 1);
    opsched_graph *g8 = build(r->name, 8, 0, 0, 1);
    opsched_graph_totals t1 = totals(g1), t8 = totals(g8);
    assert_int_equal(t8.flops, 8 * t1.flops);
    assert_int_equal(t8.params, t1.params);
    assert_logits(g8, 8);
    opsched_graph_free(g1);
    opsched_graph_free(g8);
}

static void test_sizes(void **state)
{
    (void)state;
    /* resnet50 at Inception's size, and a non-square input. */
    opsched_graph *g = build("resnet50", 2, 299, 0, 0);
    const opsched_tensor *in = opsched_graph_tensor(g, opsched_graph_input(g, 0));
    assert_int_equal(in->shape.d[0], 2);
    assert_int_equal(in->shape.d[2], 299);
    assert_int_equal(in->shape.d[3], 299);
    assert_logits(g, 2);
    assert_true(totals(g).flops > 0);
    opsched_graph_free(g);

    g = build("resnet50", 1, 240, 320, 1);
    in = opsched_graph_tensor(g, opsched_graph_input(g, 0));
    assert_int_equal(in->shape.d[2], 240);
    assert_int_equal(in->shape.d[3], 320);
    assert_logits(g, 1);
    opsched_graph_free(g);

    /* Feature maps that are not a multiple of the adaptive pool's output:
     * VGG at 256 (8x8 -> 7x7), AlexNet at 256x300 (7x8 -> 6x6). */
    g = build("vgg16", 1, 256, 0, 0);
    assert_int_equal(totals(g).params, ref("vgg16")->params);
    assert_logits(g, 1);
    opsched_graph_free(g);
    g = build("alexnet", 1, 256, 300, 0);
    assert_logits(g, 1);
    opsched_graph_free(g);

    /* Inception v3 at 224, the size it was not trained at, still works. */
    g = build("inception_v3", 1, 224, 0, 1);
    assert_logits(g, 1);
    opsched_graph_free(g);
}

/* min_size is the smallest side that builds: it does, one less does not. */
static void test_model_min_size(void **state)
{
    const zoo_ref *r = *state;
    const opsched_zoo_info *info = opsched_zoo_find(r->name);
    assert_non_null(info);
    for (int fold = 0; fold < 2; fold++) {
        opsched_graph *g = build(info->name, 1, info->min_size, 0, fold);
        assert_logits(g, 1);
        opsched_graph_free(g);
        if (info->min_size == 1) continue;
        opsched_zoo_options o = {.height = info->min_size - 1, .fold_bn = fold};
        g = (opsched_graph *)1;
        assert_int_equal(opsched_zoo_build(ctx, info->name, &o, &g), OPSCHED_ERR_SHAPE);
        assert_null(g);
        /* Either side alone too small fails as well. */
        o.height = info->default_size;
        o.width = info->min_size - 1;
        assert_int_equal(opsched_zoo_build(ctx, info->name, &o, &g), OPSCHED_ERR_SHAPE);
    }
}

static void test_errors(void **state)
{
    (void)state;
    opsched_graph *g = (opsched_graph *)1;
    opsched_zoo_options o = {.height = 16};

    assert_int_equal(opsched_zoo_build(ctx, "squeezenet1_1", &o, &g), OPSCHED_ERR_SHAPE);
    assert_null(g);
    assert_int_equal(opsched_ctx_last_status(ctx), OPSCHED_ERR_SHAPE);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "squeezenet1_1"));
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "16x16"));

    assert_int_equal(opsched_zoo_build(ctx, "resnet51", NULL, &g), OPSCHED_ERR_NOT_FOUND);
    assert_null(g);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "resnet51"));

    o.height = 0;
    o.batch = -1;
    assert_int_equal(opsched_zoo_build(ctx, "resnet50", &o, &g), OPSCHED_ERR_INVALID_ARG);
    o.batch = 0;
    o.width = -224;
    assert_int_equal(opsched_zoo_build(ctx, "resnet50", &o, &g), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_zoo_build(ctx, NULL, NULL, &g), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_zoo_build(ctx, "resnet50", NULL, NULL), OPSCHED_ERR_INVALID_ARG);
    g = (opsched_graph *)1;
    assert_int_equal(opsched_zoo_build(NULL, "resnet50", NULL, &g), OPSCHED_ERR_INVALID_ARG);
    assert_null(g);

    /* An input whose element count overflows is refused, not wrapped. */
    o.width = 0;
    o.batch = INT64_C(1) << 40;
    o.height = INT64_C(1) << 20;
    g = NULL;
    assert_int_not_equal(opsched_zoo_build(ctx, "resnet50", &o, &g), OPSCHED_OK);
    assert_null(g);
}

/* NULL options are the defaults: batch 1, default size, unfolded. */
static void test_null_options(void **state)
{
    (void)state;
    opsched_graph *g = NULL;
    assert_int_equal(opsched_zoo_build(ctx, "inception_v3", NULL, &g), OPSCHED_OK);
    const opsched_tensor *in = opsched_graph_tensor(g, opsched_graph_input(g, 0));
    assert_int_equal(in->shape.d[0], 1);
    assert_int_equal(in->shape.d[2], 299);
    assert_int_equal(in->shape.d[3], 299);
    assert_int_equal(totals(g).params, ref("inception_v3")->params);
    opsched_graph_free(g);
}

int main(void)
{
    static const struct {
        const char *what;
        CMUnitTestFunction fn;
    } per_model[] = {
        {"unfolded", test_model_unfolded},
        {"folded", test_model_folded},
        {"batch", test_model_batch},
        {"min_size", test_model_min_size},
    };
    static const struct CMUnitTest common[] = {
        cmocka_unit_test(test_registry),     cmocka_unit_test(test_names),
        cmocka_unit_test(test_densenet),     cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_sizes),        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_null_options),
    };
    enum { N_COMMON = sizeof(common) / sizeof(common[0]), N_PER = 4 };
    static char names[N_REFS * N_PER][64];
    struct CMUnitTest tests[N_COMMON + N_REFS * N_PER];
    int n = 0;
    for (int i = 0; i < N_COMMON; i++)
        tests[n++] = common[i];
    for (int i = 0; i < N_REFS; i++) {
        for (int k = 0; k < N_PER; k++) {
            char *name = names[i * N_PER + k];
            snprintf(name, sizeof(names[0]), "%s/%s", refs[i].name, per_model[k].what);
            struct CMUnitTest t = {name, per_model[k].fn, NULL, NULL, (void *)&refs[i]};
            tests[n++] = t;
        }
    }
    assert_int_equal(n, (int)(sizeof(tests) / sizeof(tests[0])));
    return cmocka_run_group_tests_name("zoo", tests, setup, teardown);
}
