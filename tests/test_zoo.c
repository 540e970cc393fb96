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
 *
 * The networks torchvision lacks have references of their own.  RandWire's
 * graphs are ours (fixed seeds), so its numbers come from a second
 * implementation of the generator and the layer rules,
 * tests/zoo_randwire_reference.py:
 *
 *   randwire        params=5640289 folded=5621420 macs=583829240 size=224
 *                   nodes=519 folded=420 wiring=0xb49fc74cd2f4e1b3
 *   randwire_large  params=62040718 folded=61967905 macs=7864030896 size=224
 *                   nodes=603 folded=489 wiring=0xe3a97de200cb47c2
 *
 * (the paper reports 5.6M parameters and 583M multiply-adds for the small
 * regime with C = 78, 61.5M and 7.9G for the regular one with C = 154, on
 * graphs of its own).  NASNet-A's come from tests/zoo_nasnet_reference.py,
 * the network in PyTorch, whose parameter counts equal Keras' published
 * trainable parameters (NASNetMobile 5,289,978, NASNetLarge 88,753,150):
 *
 *   nasnet          params=5289978 folded=5271939 macs=563638816 size=224
 *   nasnet_large    params=88753150 folded=88656076 macs=23783414658 size=331
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opsched/zoo.h"

typedef struct zoo_ref {
    const char *name;
    int64_t default_size;
    int64_t min_size;      /* torchvision's, except AlexNet and VGG (see zoo.c) */
    int64_t params;        /* torchvision's num_params (or the reference's), fold_bn = 0 */
    int64_t params_folded; /* each conv-then-BN's 2C parameters become a C bias */
    int64_t macs;          /* Conv2d + Linear multiply-adds, batch 1, default size */
    double gflops;         /* published GFLOPS (multiply-adds, rounded): torchvision, papers */
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
    {"randwire", 224, 1, 5640289, 5621420, 583829240, 0.583,
     "Conv:195 Gemm:1 GlobalAveragePool:1 Relu:98 Add:121 Mul:3 BatchNormalization:99 Flatten:1",
     "Conv:195 Gemm:1 GlobalAveragePool:1 Relu:98 Add:121 Mul:3 Flatten:1"},
    {"randwire_large", 224, 1, 62040718, 61967905, 7864030896, 7.9,
     "Conv:226 Gemm:1 GlobalAveragePool:1 Relu:113 Add:143 Mul:4 BatchNormalization:114 "
     "Flatten:1",
     "Conv:226 Gemm:1 GlobalAveragePool:1 Relu:113 Add:143 Mul:4 Flatten:1"},
    {"nasnet", 224, 3, 5289978, 5271939, 563638816, 0.564,
     "Conv:356 Gemm:1 MaxPool:8 AveragePool:52 GlobalAveragePool:1 Relu:192 Add:80 Concat:20 "
     "Slice:4 BatchNormalization:192 Pad:4 Flatten:1 Dropout:1",
     "Conv:356 Gemm:1 MaxPool:8 AveragePool:52 GlobalAveragePool:1 Relu:192 Add:80 Concat:20 "
     "Slice:4 BatchNormalization:4 Pad:4 Flatten:1"},
    {"nasnet_large", 331, 3, 88753150, 88656076, 23783414658, 23.8,
     "Conv:488 Gemm:1 MaxPool:8 AveragePool:70 GlobalAveragePool:1 Relu:264 Add:110 Concat:26 "
     "Slice:4 BatchNormalization:264 Pad:4 Flatten:1 Dropout:1",
     "Conv:488 Gemm:1 MaxPool:8 AveragePool:70 GlobalAveragePool:1 Relu:264 Add:110 Concat:26 "
     "Slice:4 BatchNormalization:4 Pad:4 Flatten:1"},
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
        fail_msg("%s fold_bn=%d: %lld parameters, the reference has %lld", r->name, fold,
                 (long long)t.params, (long long)(fold ? r->params_folded : r->params));
    /* Folding moves no multiply-add: the scale goes into the weights. */
    assert_int_equal(conv_gemm_flops(g), 2 * r->macs);
    double gmacs = (double)conv_gemm_flops(g) / 2e9;
    if (fabs(gmacs - r->gflops) > 0.02 * r->gflops)
        fail_msg("%s: %.4f GMACs, the published figure is %.3g", r->name, gmacs, r->gflops);
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

/* ---- RandWire and NASNet-A --------------------------------------------- */

/* Two graphs are the same: tensors (names, kinds, shapes, payloads) and
 * nodes (names, operators, inputs, outputs, costs), in the same order. */
static void assert_same_graph(const opsched_graph *a, const opsched_graph *b)
{
    assert_int_equal(opsched_graph_num_tensors(a), opsched_graph_num_tensors(b));
    assert_int_equal(opsched_graph_num_nodes(a), opsched_graph_num_nodes(b));
    for (int i = 0; i < opsched_graph_num_tensors(a); i++) {
        const opsched_tensor *x = opsched_graph_tensor(a, i), *y = opsched_graph_tensor(b, i);
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->kind, y->kind);
        assert_true(opsched_shape_equal(&x->shape, &y->shape));
        assert_int_equal(x->data_bytes, y->data_bytes);
        if (x->data_bytes) assert_memory_equal(x->data, y->data, x->data_bytes);
    }
    for (int i = 0; i < opsched_graph_num_nodes(a); i++) {
        const opsched_node *x = opsched_graph_node(a, i), *y = opsched_graph_node(b, i);
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->op, y->op);
        assert_int_equal(x->n_inputs, y->n_inputs);
        assert_memory_equal(x->inputs, y->inputs, sizeof(int) * (size_t)x->n_inputs);
        assert_int_equal(x->n_outputs, y->n_outputs);
        assert_memory_equal(x->outputs, y->outputs, sizeof(int) * (size_t)x->n_outputs);
        assert_memory_equal(&x->cost, &y->cost, sizeof(x->cost));
    }
}

typedef struct rw_edge {
    int stage, from, to;
} rw_edge;

static int rw_edge_cmp(const void *pa, const void *pb)
{
    const rw_edge *a = pa, *b = pb;
    if (a->stage != b->stage) return a->stage < b->stage ? -1 : 1;
    if (a->from != b->from) return a->from < b->from ? -1 : 1;
    return (a->to > b->to) - (a->to < b->to);
}

static uint64_t fnv1a(uint64_t h, int v)
{
    for (int i = 0; i < 4; i++) {
        h ^= ((uint32_t)v >> (8 * i)) & 0xFF;
        h *= UINT64_C(0x100000001B3);
    }
    return h;
}

/* The edges of every random stage, read back from the built (unfolded)
 * graph: node v of stage s aggregates "conv<s>.n<u>.bn" through its Adds,
 * or through its ReLU when it has one input.  Hashed as the reference
 * hashes them. */
static uint64_t rw_wiring(const opsched_graph *g, int *n_edges)
{
    rw_edge edges[512];
    int n = 0;
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *nd = opsched_graph_node(g, i);
        int s, v, u, s2;
        char rest[16];
        if (nd->op != OPSCHED_OP_ADD && nd->op != OPSCHED_OP_RELU) continue;
        if (sscanf(nd->name, "conv%d.n%d.%15s", &s, &v, rest) != 3) continue;
        for (int k = 0; k < nd->n_inputs; k++) {
            const char *in = opsched_graph_tensor(g, nd->inputs[k])->name;
            if (sscanf(in, "conv%d.n%d.%15s", &s2, &u, rest) != 3 || s2 != s ||
                strcmp(rest, "bn") != 0)
                continue;
            assert_true(n < (int)(sizeof(edges) / sizeof(edges[0])));
            assert_true(u < v);
            edges[n++] = (rw_edge){s, u, v};
        }
    }
    qsort(edges, (size_t)n, sizeof(edges[0]), rw_edge_cmp);
    uint64_t h = UINT64_C(0xCBF29CE484222325);
    for (int i = 0; i < n; i++)
        h = fnv1a(fnv1a(fnv1a(h, edges[i].stage), edges[i].from), edges[i].to);
    *n_edges = n;
    return h;
}

static void test_randwire(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        uint64_t wiring;
        int edges, nodes, nodes_folded;
    } want[] = {
        {"randwire", UINT64_C(0xb49fc74cd2f4e1b3), 3 * 64, 519, 420},
        {"randwire_large", UINT64_C(0xe3a97de200cb47c2), 32 + 3 * 64, 603, 489},
    };
    for (size_t m = 0; m < sizeof(want) / sizeof(want[0]); m++) {
        opsched_graph *g = build(want[m].name, 0, 0, 0, 0);
        opsched_graph *again = build(want[m].name, 0, 0, 0, 0);
        opsched_graph *folded = build(want[m].name, 0, 0, 0, 1);
        int n_edges = 0;
        uint64_t h = rw_wiring(g, &n_edges);
        if (h != want[m].wiring || n_edges != want[m].edges)
            fail_msg("%s: %d edges hashing to 0x%016llx, the reference has %d and 0x%016llx",
                     want[m].name, n_edges, (unsigned long long)h, want[m].edges,
                     (unsigned long long)want[m].wiring);
        assert_int_equal(opsched_graph_num_nodes(g), want[m].nodes);
        assert_int_equal(opsched_graph_num_nodes(folded), want[m].nodes_folded);
        /* The graphs come from fixed seeds: every build is the same. */
        assert_same_graph(g, again);
        opsched_graph_free(g);
        opsched_graph_free(again);
        opsched_graph_free(folded);
    }

    /* Input nodes read the stage input with stride 2, at the previous
     * stage's width; the stage output averages the sinks. */
    opsched_graph *g = build("randwire", 0, 0, 0, 0);
    int id;
    assert_int_equal(opsched_graph_find_tensor(g, "conv4.n0.dw.weight", &id), OPSCHED_OK);
    assert_int_equal(opsched_graph_tensor(g, id)->shape.d[0], 78);
    assert_int_equal(opsched_graph_find_tensor(g, "conv4.n0.dw", &id), OPSCHED_OK);
    const opsched_node *dw = opsched_graph_node(g, opsched_graph_tensor(g, id)->producer);
    assert_int_equal(dw->attr.conv.stride[0], 2);
    assert_int_equal(dw->attr.conv.groups, 78);
    assert_int_equal(opsched_graph_find_tensor(g, "conv4.n0.pw.weight", &id), OPSCHED_OK);
    assert_int_equal(opsched_graph_tensor(g, id)->shape.d[0], 156);
    assert_int_equal(opsched_graph_tensor(g, id)->shape.d[1], 78);
    assert_int_equal(opsched_graph_find_tensor(g, "conv4.n31.dw", &id), OPSCHED_OK);
    dw = opsched_graph_node(g, opsched_graph_tensor(g, id)->producer);
    assert_int_equal(dw->attr.conv.stride[0], 1);
    assert_int_equal(dw->attr.conv.groups, 156);
    assert_int_equal(opsched_graph_find_tensor(g, "conv5.out.scale", &id), OPSCHED_OK);
    const opsched_tensor *scale = opsched_graph_tensor(g, id);
    assert_int_equal(scale->kind, OPSCHED_TENSOR_CONSTANT);
    float v;
    assert_int_equal(scale->data_bytes, sizeof(v));
    memcpy(&v, scale->data, sizeof(v));
    assert_true(v == 1.0f / 3.0f); /* conv5 has 3 output nodes */
    assert_int_equal(opsched_graph_find_tensor(g, "conv5.out.mean", &id), OPSCHED_OK);
    const opsched_shape *s = &opsched_graph_tensor(g, id)->shape; /* 312 x 7 x 7 */
    assert_int_equal(s->d[1], 312);
    assert_int_equal(s->d[2], 7);
    opsched_graph_free(g);
}

/* The pads of the convolution or pooling that writes tensor name. */
static void assert_pads(const opsched_graph *g, const char *name, int64_t top, int64_t bottom)
{
    int id;
    if (opsched_graph_find_tensor(g, name, &id) != OPSCHED_OK) fail_msg("no tensor '%s'", name);
    const opsched_node *n = opsched_graph_node(g, opsched_graph_tensor(g, id)->producer);
    const int64_t *p = n->op == OPSCHED_OP_CONV ? n->attr.conv.pads : n->attr.pool.pads;
    if (p[0] != top || p[1] != top || p[2] != bottom || p[3] != bottom)
        fail_msg("%s: pads %lld %lld %lld %lld, want %lld %lld %lld %lld", name, (long long)p[0],
                 (long long)p[1], (long long)p[2], (long long)p[3], (long long)top, (long long)top,
                 (long long)bottom, (long long)bottom);
}

static void assert_shape(const opsched_graph *g, const char *name, int64_t c, int64_t hw)
{
    int id;
    if (opsched_graph_find_tensor(g, name, &id) != OPSCHED_OK) fail_msg("no tensor '%s'", name);
    const opsched_shape *s = &opsched_graph_tensor(g, id)->shape;
    if (s->d[1] != c || s->d[2] != hw || s->d[3] != hw)
        fail_msg("%s: %lldx%lldx%lld, want %lldx%lldx%lld", name, (long long)s->d[1],
                 (long long)s->d[2], (long long)s->d[3], (long long)c, (long long)hw,
                 (long long)hw);
}

/* The input a node reads first. */
static const char *first_input(const opsched_graph *g, const char *node_output)
{
    int id;
    if (opsched_graph_find_tensor(g, node_output, &id) != OPSCHED_OK)
        fail_msg("no tensor '%s'", node_output);
    const opsched_node *n = opsched_graph_node(g, opsched_graph_tensor(g, id)->producer);
    return opsched_graph_tensor(g, n->inputs[0])->name;
}

static void test_nasnet(void **state)
{
    (void)state;
    /* Feature maps, as the reference prints them. */
    opsched_graph *g = build("nasnet", 0, 0, 0, 0);
    assert_shape(g, "cell_0.cat_1", 264, 28);
    assert_shape(g, "reduction_cell_0.cat", 352, 14);
    assert_shape(g, "reduction_cell_1.cat", 704, 7);
    assert_shape(g, "cell_15.cat", 1056, 7);
    /* SAME padding: a stride-2 window over an odd input (conv0's 111)
     * pads evenly; over an even one (cell_stem_0's 56) one less before. */
    assert_pads(g, "cell_stem_0.comb_iter_0_left.separable_1.depthwise_conv2d", 2, 2);
    assert_pads(g, "cell_stem_1.comb_iter_0_left.separable_1.depthwise_conv2d", 1, 2);
    assert_pads(g, "cell_stem_1.comb_iter_0_left.separable_2.depthwise_conv2d", 2, 2);
    assert_pads(g, "reduction_cell_1.comb_iter_1_left", 0, 1);
    assert_pads(g, "conv0.conv", 0, 0);
    int id;
    assert_int_equal(opsched_graph_find_tensor(g, "cell_stem_0.comb_iter_2_left", &id), OPSCHED_OK);
    const opsched_node *avg = opsched_graph_node(g, opsched_graph_tensor(g, id)->producer);
    assert_int_equal(avg->op, OPSCHED_OP_AVGPOOL);
    assert_int_equal(avg->attr.pool.count_include_pad, 0);
    /* The factorized reduction's second path, one pixel down and right. */
    assert_shape(g, "cell_stem_1.path_2.pad", 32, 112);
    assert_shape(g, "cell_stem_1.slice", 32, 111);
    assert_shape(g, "cell_stem_1.path_2.avgpool", 32, 56);
    /* Mobile: the first cell after a reduction reads its input as x_prev. */
    assert_string_equal(first_input(g, "cell_6.relu"), "cell_3.cat");
    assert_string_equal(first_input(g, "cell_12.relu"), "cell_9.cat");
    opsched_graph_free(g);

    g = build("nasnet", 0, 0, 0, 1);
    assert_true(has_tensor(g, "cell_0.final_path_bn"));
    assert_false(has_tensor(g, "cell_0.conv_1x1.bn"));
    assert_true(has_tensor(g, "cell_0.conv_1x1.conv.bias"));
    assert_false(has_tensor(g, "dropout"));
    opsched_graph_free(g);

    g = build("nasnet_large", 0, 0, 0, 0);
    assert_shape(g, "cell_0.cat_1", 1008, 42);
    assert_shape(g, "reduction_cell_0.cat", 1344, 21);
    assert_shape(g, "reduction_cell_1.cat", 2688, 11);
    assert_shape(g, "cell_17.cat", 4032, 11);
    assert_pads(g, "reduction_cell_0.comb_iter_0_left.separable_1.depthwise_conv2d", 1, 2);
    assert_pads(g, "reduction_cell_1.comb_iter_0_left.separable_1.depthwise_conv2d", 2, 2);
    /* Large: the cell before the reduction's input (skip_reduction_layer_input). */
    assert_string_equal(first_input(g, "cell_6.relu"), "cell_4.cat");
    assert_string_equal(first_input(g, "cell_12.relu"), "cell_10.cat");
    opsched_graph *again = build("nasnet_large", 0, 0, 0, 0);
    assert_same_graph(g, again);
    opsched_graph_free(again);
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
        cmocka_unit_test(test_null_options), cmocka_unit_test(test_randwire),
        cmocka_unit_test(test_nasnet),
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
