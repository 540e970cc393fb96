/*
 * netref.c - whole networks on the host (see netref.h): every node through
 * ref_run_node, in graph order, each tensor kept until the end.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/netref.h"
#include "support/reference.h"
#include "support/rng.h"

#define NETREF_MAX_IO 40

/* BatchNormalization's running variances in [0.5, 1.5): a variance drawn
 * like the other rank-1 tensors, in +-0.1, would make var + eps negative
 * and the output NaN on every backend. */
static int set_bn_variances(opsched_graph *g, test_rng *r)
{
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        if (n->op != OPSCHED_OP_BATCHNORM || n->n_inputs < 5 || n->inputs[4] < 0) continue;
        int t = n->inputs[4];
        const opsched_tensor *ts = opsched_graph_tensor(g, t);
        if (ts->data || ts->dtype != OPSCHED_F32) continue;
        int64_t c = opsched_shape_numel(&ts->shape);
        float *v = malloc(sizeof(float) * (size_t)(c ? c : 1));
        if (!v) return -1;
        for (int64_t k = 0; k < c; k++)
            v[k] = (float)test_rng_uniform(r, 0.5, 1.5);
        int rc = opsched_graph_set_data(g, t, v, sizeof(float) * (size_t)c) == OPSCHED_OK ? 0 : -1;
        free(v);
        if (rc) return rc;
    }
    return 0;
}

int netref_set_weights(opsched_graph *g, uint64_t seed)
{
    test_rng r;
    test_rng_seed(&r, seed);
    if (set_bn_variances(g, &r)) return -1;
    for (int t = 0; t < opsched_graph_num_tensors(g); t++) {
        const opsched_tensor *ts = opsched_graph_tensor(g, t);
        if (ts->data || ts->dtype != OPSCHED_F32) continue;
        if (ts->kind != OPSCHED_TENSOR_WEIGHT && ts->kind != OPSCHED_TENSOR_CONSTANT) continue;
        int64_t n = opsched_shape_numel(&ts->shape);
        int64_t fan_in = ts->shape.ndim >= 2 && ts->shape.d[0] > 0 ? n / ts->shape.d[0] : 0;
        double a = fan_in > 0 ? sqrt(6.0 / (double)fan_in) : 0.1;
        float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
        if (!v) return -1;
        for (int64_t i = 0; i < n; i++)
            v[i] = (float)test_rng_uniform(&r, -a, a);
        int rc = opsched_graph_set_data(g, t, v, sizeof(float) * (size_t)n) == OPSCHED_OK ? 0 : -1;
        free(v);
        if (rc) return rc;
    }
    return 0;
}

float **netref_run(const opsched_graph *g, const float *const *inputs)
{
    int nt = opsched_graph_num_tensors(g), no = opsched_graph_num_outputs(g);
    const void **val = calloc((size_t)nt + 1, sizeof(*val));
    float **own = calloc((size_t)nt + 1, sizeof(*own));
    float **outs = calloc((size_t)no + 1, sizeof(*outs));
    int ok = val && own && outs;
    for (int i = 0; ok && i < opsched_graph_num_inputs(g); i++)
        val[opsched_graph_input(g, i)] = inputs[i];
    for (int t = 0; ok && t < nt; t++) {
        const opsched_tensor *ts = opsched_graph_tensor(g, t);
        if (ts->data) val[t] = ts->data;
    }
    for (int i = 0; ok && i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        const void *in[NETREF_MAX_IO] = {0};
        float *out[NETREF_MAX_IO] = {0};
        if (n->n_inputs > NETREF_MAX_IO || n->n_outputs > NETREF_MAX_IO) {
            ok = 0;
            break;
        }
        for (int k = 0; k < n->n_inputs; k++)
            in[k] = n->inputs[k] >= 0 ? val[n->inputs[k]] : NULL;
        for (int k = 0; k < n->n_outputs && ok; k++) {
            int t = n->outputs[k];
            int64_t cnt = opsched_shape_numel(&opsched_graph_tensor(g, t)->shape);
            own[t] = malloc(sizeof(float) * (size_t)(cnt ? cnt : 1));
            ok = own[t] != NULL;
            out[k] = own[t];
            val[t] = own[t];
        }
        if (ok) ok = ref_run_node(g, i, in, out, 0) == 0;
    }
    for (int i = 0; ok && i < no; i++) {
        int t = opsched_graph_output(g, i);
        int64_t cnt = opsched_shape_numel(&opsched_graph_tensor(g, t)->shape);
        outs[i] = malloc(sizeof(float) * (size_t)(cnt ? cnt : 1));
        ok = outs[i] && val[t];
        if (ok) memcpy(outs[i], val[t], sizeof(float) * (size_t)cnt);
    }
    for (int t = 0; own && t < nt; t++)
        free(own[t]);
    free(own);
    free(val);
    if (!ok && outs) {
        for (int i = 0; i < no; i++)
            free(outs[i]);
        free(outs);
        outs = NULL;
    }
    return outs;
}

double netref_rel_l2(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i])) return INFINITY;
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

opsched_graph *netref_chain_graph(opsched_ctx *ctx, const opsched_shape *xs, uint64_t seed)
{
    opsched_graph *g = NULL;
    int64_t c = xs->d[1];
    opsched_shape bs = {3, {c, 1, 1}}, ss = {4, {1, c, 1, 1}};
    int x, bias, scale, t[6];
    opsched_conv_desc d = {.out_channels = c, .kernel_h = 3, .kernel_w = 3, .stride_h = 1,
                           .stride_w = 1, .pad_h = 1, .pad_w = 1, .bias = 1};
    if (opsched_graph_create(ctx, "chain", &g) != OPSCHED_OK ||
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, xs, &x) ||
        opsched_graph_add_tensor(g, "bias", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &bs, &bias) ||
        opsched_graph_add_tensor(g, "scale", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &ss, &scale) ||
        opsched_build_conv(g, "conv", x, &d, &t[0]) ||
        opsched_build_binary(g, "add_bias", OPSCHED_OP_ADD, t[0], bias, &t[1]) ||
        opsched_build_unary(g, "gelu", OPSCHED_OP_GELU, NULL, t[1], &t[2]) ||
        opsched_build_binary(g, "mul_scale", OPSCHED_OP_MUL, scale, t[2], &t[3]) ||
        opsched_build_binary(g, "add_x", OPSCHED_OP_ADD, t[3], x, &t[4]) ||
        opsched_build_unary(g, "sigmoid", OPSCHED_OP_SIGMOID, NULL, t[4], &t[5]) ||
        opsched_graph_mark_output(g, t[5]) || netref_set_weights(g, seed)) {
        opsched_graph_free(g);
        return NULL;
    }
    return g;
}

/* The attributes of a gate's ReduceMean over H and W (kept) and of
 * MobileNetV3's HardSigmoid. */
static void gate_attrs(opsched_op_attr *mean, opsched_op_attr *hsig)
{
    memset(mean, 0, sizeof(*mean));
    memset(hsig, 0, sizeof(*hsig));
    mean->reduce.n_axes = 2;
    mean->reduce.axes[0] = 2;
    mean->reduce.axes[1] = 3;
    mean->reduce.keepdims = 1;
    mean->reduce.fn = OPSCHED_REDUCE_MEAN;
    hsig->hardsigmoid.alpha = 1.0f / 6.0f;
    hsig->hardsigmoid.beta = 0.5f;
}

opsched_graph *netref_se_graph(opsched_ctx *ctx, const opsched_shape *xs, int64_t hidden,
                               uint64_t seed)
{
    opsched_graph *g = NULL;
    int64_t c = xs->d[1];
    int x, t[12];
    opsched_conv_desc down = {.out_channels = hidden, .kernel_h = 1, .kernel_w = 1,
                              .stride_h = 1, .stride_w = 1, .bias = 1};
    opsched_conv_desc up = down;
    up.out_channels = c;
    opsched_conv_desc down0 = down, up0 = up;
    down0.bias = up0.bias = 0;
    opsched_op_attr swish, mean, hsig;
    memset(&swish, 0, sizeof(swish));
    swish.unary.fn = OPSCHED_UNARY_SWISH;
    swish.unary.alpha = 1.0f;
    gate_attrs(&mean, &hsig);
    if (opsched_graph_create(ctx, "se", &g) != OPSCHED_OK ||
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, xs, &x) ||
        opsched_build_unary(g, "pool", OPSCHED_OP_GLOBALAVGPOOL, NULL, x, &t[0]) ||
        opsched_build_conv(g, "fc1", t[0], &down, &t[1]) ||
        opsched_build_unary(g, "swish", OPSCHED_OP_UNARY, &swish, t[1], &t[2]) ||
        opsched_build_conv(g, "fc2", t[2], &up, &t[3]) ||
        opsched_build_unary(g, "sigmoid", OPSCHED_OP_SIGMOID, NULL, t[3], &t[4]) ||
        opsched_build_binary(g, "scale", OPSCHED_OP_MUL, x, t[4], &t[5]) ||
        opsched_build_unary(g, "mean", OPSCHED_OP_REDUCEMEAN, &mean, t[5], &t[6]) ||
        opsched_build_conv(g, "fc3", t[6], &down0, &t[7]) ||
        opsched_build_unary(g, "relu", OPSCHED_OP_RELU, NULL, t[7], &t[8]) ||
        opsched_build_conv(g, "fc4", t[8], &up0, &t[9]) ||
        opsched_build_unary(g, "hsig", OPSCHED_OP_HARDSIGMOID, &hsig, t[9], &t[10]) ||
        opsched_build_binary(g, "scale2", OPSCHED_OP_MUL, t[10], t[5], &t[11]) ||
        opsched_graph_mark_output(g, t[11]) || netref_set_weights(g, seed)) {
        opsched_graph_free(g);
        return NULL;
    }
    return g;
}

opsched_graph *netref_gated_product_graph(opsched_ctx *ctx, const opsched_shape *xs,
                                          int64_t hidden, uint64_t seed)
{
    opsched_graph *g = NULL;
    int64_t c = xs->d[1];
    int x, t[16];
    opsched_conv_desc down = {.out_channels = hidden, .kernel_h = 1, .kernel_w = 1,
                              .stride_h = 1, .stride_w = 1, .bias = 1};
    opsched_conv_desc up = down, proj = down, down0 = down, up0 = down, widen = down;
    up.out_channels = proj.out_channels = c;
    down0.bias = 0;
    up0.out_channels = c;
    widen.out_channels = c / 2;
    widen.bias = 0;
    opsched_op_attr mean, hsig;
    gate_attrs(&mean, &hsig);
    if (opsched_graph_create(ctx, "gated_product", &g) != OPSCHED_OK ||
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, xs, &x) ||
        opsched_build_unary(g, "pool", OPSCHED_OP_GLOBALAVGPOOL, NULL, x, &t[0]) ||
        opsched_build_conv(g, "fc1", t[0], &down, &t[1]) ||
        opsched_build_unary(g, "relu1", OPSCHED_OP_RELU, NULL, t[1], &t[2]) ||
        opsched_build_conv(g, "fc2", t[2], &up, &t[3]) ||
        opsched_build_unary(g, "sigmoid", OPSCHED_OP_SIGMOID, NULL, t[3], &t[4]) ||
        opsched_build_binary(g, "scale", OPSCHED_OP_MUL, x, t[4], &t[5]) ||
        opsched_build_conv(g, "proj", t[5], &proj, &t[6]) ||
        opsched_build_binary(g, "add", OPSCHED_OP_ADD, t[6], x, &t[7]) ||
        opsched_build_unary(g, "mean", OPSCHED_OP_REDUCEMEAN, &mean, t[7], &t[8]) ||
        opsched_build_conv(g, "fc3", t[8], &down0, &t[9]) ||
        opsched_build_unary(g, "relu2", OPSCHED_OP_RELU, NULL, t[9], &t[10]) ||
        opsched_build_conv(g, "fc4", t[10], &up0, &t[11]) ||
        opsched_build_unary(g, "hsig", OPSCHED_OP_HARDSIGMOID, &hsig, t[11], &t[12]) ||
        opsched_build_binary(g, "scale2", OPSCHED_OP_MUL, t[12], t[7], &t[13]) ||
        opsched_build_conv(g, "narrow", t[13], &widen, &t[14]) ||
        opsched_build_unary(g, "relu3", OPSCHED_OP_RELU, NULL, t[14], &t[15]) ||
        opsched_graph_mark_output(g, t[15]) || netref_set_weights(g, seed)) {
        opsched_graph_free(g);
        return NULL;
    }
    return g;
}

opsched_graph *netref_inverted_residual_graph(opsched_ctx *ctx, const opsched_shape *xs,
                                              uint64_t seed)
{
    opsched_graph *g = NULL;
    int64_t c = xs->d[1];
    int x, t[8];
    opsched_conv_desc expand = {.out_channels = 4 * c, .kernel_h = 1, .kernel_w = 1,
                                .stride_h = 1, .stride_w = 1, .bias = 1};
    opsched_conv_desc dw = {.out_channels = 4 * c, .kernel_h = 3, .kernel_w = 3, .stride_h = 1,
                            .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 4 * c, .bias = 1};
    opsched_conv_desc project = expand, widen = expand;
    project.out_channels = c;
    widen.out_channels = 2 * c;
    opsched_op_attr clip, swish;
    memset(&clip, 0, sizeof(clip));
    memset(&swish, 0, sizeof(swish));
    clip.clip.min = 0.0f;
    clip.clip.max = 6.0f;
    swish.unary.fn = OPSCHED_UNARY_SWISH;
    swish.unary.alpha = 1.0f;
    if (opsched_graph_create(ctx, "inverted_residual", &g) != OPSCHED_OK ||
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, xs, &x) ||
        opsched_build_conv(g, "expand", x, &expand, &t[0]) ||
        opsched_build_unary(g, "relu6", OPSCHED_OP_CLIP, &clip, t[0], &t[1]) ||
        opsched_build_conv(g, "dw", t[1], &dw, &t[2]) ||
        opsched_build_unary(g, "hswish", OPSCHED_OP_HARDSWISH, NULL, t[2], &t[3]) ||
        opsched_build_conv(g, "project", t[3], &project, &t[4]) ||
        opsched_build_binary(g, "residual", OPSCHED_OP_ADD, t[4], x, &t[5]) ||
        opsched_build_conv(g, "widen", t[5], &widen, &t[6]) ||
        opsched_build_unary(g, "swish", OPSCHED_OP_UNARY, &swish, t[6], &t[7]) ||
        opsched_graph_mark_output(g, t[7]) || netref_set_weights(g, seed)) {
        opsched_graph_free(g);
        return NULL;
    }
    return g;
}

/* x [.., K] times a new weight [K, n]. */
static int matmul_w(opsched_graph *g, const char *name, int x, int64_t n, int *out)
{
    const opsched_tensor *xt = opsched_graph_tensor(g, x);
    opsched_shape ws = {2, {xt->shape.d[xt->shape.ndim - 1], n}};
    char wn[64];
    int w;
    snprintf(wn, sizeof wn, "%s_w", name);
    if (opsched_graph_add_tensor(g, wn, OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &ws, &w)) return 1;
    int ins[2] = {x, w};
    return opsched_graph_add_node(g, name, OPSCHED_OP_MATMUL, NULL, ins, 2, 1, NULL, out) != 0;
}

opsched_graph *netref_bias_graph(opsched_ctx *ctx, const opsched_shape *xs, uint64_t seed)
{
    opsched_graph *g = NULL;
    int x, b0, b1, b2, b3, t[14];
    opsched_shape s0 = {1, {16}}, s1 = {3, {1, 1, 8}}, s2 = {1, {4}};
    opsched_op_attr gelu;
    memset(&gelu, 0, sizeof(gelu));
    gelu.gelu.tanh_approx = 1;
    if (opsched_graph_create(ctx, "bias", &g) != OPSCHED_OK ||
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, xs, &x) ||
        opsched_graph_add_tensor(g, "b0", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &s0, &b0) ||
        opsched_graph_add_tensor(g, "b1", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &s1, &b1) ||
        opsched_graph_add_tensor(g, "b2", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &s2, &b2) ||
        opsched_graph_add_tensor(g, "b3", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &s2, &b3) ||
        matmul_w(g, "mm0", x, 16, &t[0]) ||
        opsched_build_binary(g, "add0", OPSCHED_OP_ADD, t[0], b0, &t[1]) ||
        opsched_build_unary(g, "relu", OPSCHED_OP_RELU, NULL, t[1], &t[2]) ||
        matmul_w(g, "mm1", t[2], 8, &t[3]) ||
        opsched_build_binary(g, "add1", OPSCHED_OP_ADD, b1, t[3], &t[4]) ||
        opsched_build_unary(g, "gelu", OPSCHED_OP_GELU, &gelu, t[4], &t[5]) ||
        matmul_w(g, "mm2", t[5], 4, &t[6]) ||
        opsched_build_binary(g, "add2", OPSCHED_OP_ADD, t[6], b2, &t[7]) ||
        opsched_build_unary(g, "sigmoid", OPSCHED_OP_SIGMOID, NULL, t[7], &t[8]) ||
        matmul_w(g, "mm3", t[8], 4, &t[9]) ||
        opsched_build_binary(g, "add3", OPSCHED_OP_ADD, t[9], t[8], &t[10]) ||
        matmul_w(g, "mm4", t[10], 4, &t[11]) ||
        opsched_build_binary(g, "add4", OPSCHED_OP_ADD, t[11], b3, &t[12]) ||
        opsched_build_binary(g, "res", OPSCHED_OP_ADD, t[10], t[12], &t[13]) ||
        opsched_graph_mark_output(g, t[13]) || netref_set_weights(g, seed)) {
        opsched_graph_free(g);
        return NULL;
    }
    return g;
}

opsched_graph *netref_dense_graph(opsched_ctx *ctx, const opsched_shape *xs, int64_t growth,
                                  uint64_t seed)
{
    opsched_graph *g = NULL;
    int x, t[8];
    opsched_conv_desc c3 = {.out_channels = growth, .kernel_h = 3, .kernel_w = 3, .stride_h = 1,
                            .stride_w = 1, .pad_h = 1, .pad_w = 1, .bias = 1};
    opsched_conv_desc c1 = {.out_channels = growth, .kernel_h = 1, .kernel_w = 1, .stride_h = 1,
                            .stride_w = 1};
    if (opsched_graph_create(ctx, "dense", &g) != OPSCHED_OK ||
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, xs, &x) ||
        opsched_build_conv(g, "conv0", x, &c3, &t[0]))
        goto fail;
    int cat0[2] = {x, t[0]};
    if (opsched_build_concat(g, "cat0", cat0, 2, 1, &t[1]) ||
        opsched_build_batchnorm(g, "bn0", t[1], 1e-5f, &t[2]) ||
        opsched_build_unary(g, "relu0", OPSCHED_OP_RELU, NULL, t[2], &t[3]) ||
        opsched_build_conv(g, "conv1", t[3], &c1, &t[4]))
        goto fail;
    int cat1[3] = {x, t[0], t[4]};
    if (opsched_build_concat(g, "cat1", cat1, 3, 1, &t[5]) ||
        opsched_build_batchnorm(g, "bn1", t[5], 1e-5f, &t[6]) ||
        opsched_build_unary(g, "relu1", OPSCHED_OP_RELU, NULL, t[6], &t[7]) ||
        opsched_graph_mark_output(g, t[7]) || netref_set_weights(g, seed))
        goto fail;
    return g;
fail:
    opsched_graph_free(g);
    return NULL;
}

opsched_graph *netref_mlp_graph(opsched_ctx *ctx, const opsched_shape *xs, opsched_op_kind act,
                                const opsched_op_attr *attr, uint64_t seed)
{
    opsched_graph *g = NULL;
    int x, b0, b1, t[5];
    int64_t k = xs->d[xs->ndim - 1];
    opsched_shape s0 = {1, {4 * k}}, s1 = {1, {k}};
    if (opsched_graph_create(ctx, "mlp", &g) != OPSCHED_OK ||
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, xs, &x) ||
        opsched_graph_add_tensor(g, "b0", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &s0, &b0) ||
        opsched_graph_add_tensor(g, "b1", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &s1, &b1) ||
        matmul_w(g, "fc1", x, 4 * k, &t[0]) ||
        opsched_build_binary(g, "add0", OPSCHED_OP_ADD, t[0], b0, &t[1]) ||
        opsched_build_unary(g, "act", act, attr, t[1], &t[2]) ||
        matmul_w(g, "fc2", t[2], k, &t[3]) ||
        opsched_build_binary(g, "add1", OPSCHED_OP_ADD, t[3], b1, &t[4]) ||
        opsched_graph_mark_output(g, t[4]) || netref_set_weights(g, seed)) {
        opsched_graph_free(g);
        return NULL;
    }
    return g;
}

static int node1(opsched_graph *g, const char *name, opsched_op_kind op, const opsched_op_attr *a,
                 const int *ins, int n, int *out)
{
    return opsched_graph_add_node(g, name, op, a, ins, n, 1, NULL, out) != 0;
}

opsched_graph *netref_gemm_head_graph(opsched_ctx *ctx, const opsched_shape *xs, int shared,
                                      uint64_t seed)
{
    opsched_graph *g = NULL;
    int x, t[6];
    if (opsched_graph_create(ctx, "head", &g) != OPSCHED_OK ||
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, xs, &x) ||
        opsched_build_linear(g, "fc1", x, 128, 1, &t[0]) ||
        opsched_build_unary(g, "hswish", OPSCHED_OP_HARDSWISH, NULL, t[0], &t[1]) ||
        opsched_build_linear(g, "fc2", t[1], 64, 1, &t[2]) ||
        opsched_build_unary(g, "relu", OPSCHED_OP_RELU, NULL, t[2], &t[3]) ||
        opsched_build_linear(g, "fc3", t[3], 10, 1, &t[4]) || opsched_graph_mark_output(g, t[4]) ||
        (shared && (opsched_build_binary(g, "sum", OPSCHED_OP_ADD, t[2], t[3], &t[5]) ||
                    opsched_graph_mark_output(g, t[5]))) ||
        netref_set_weights(g, seed)) {
        opsched_graph_free(g);
        return NULL;
    }
    return g;
}

opsched_graph *netref_norm_act_graph(opsched_ctx *ctx, const opsched_shape *xs, uint64_t seed)
{
    opsched_graph *g = NULL;
    int x, t[5];
    if (opsched_graph_create(ctx, "norm_act", &g) != OPSCHED_OK ||
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, xs, &x) ||
        opsched_build_batchnorm(g, "bn0", x, 1e-5f, &t[0]) ||
        opsched_build_unary(g, "hswish", OPSCHED_OP_HARDSWISH, NULL, t[0], &t[1]) ||
        opsched_build_batchnorm(g, "bn1", t[1], 1e-3f, &t[2]) ||
        opsched_build_unary(g, "relu", OPSCHED_OP_RELU, NULL, t[2], &t[3]) ||
        opsched_build_binary(g, "sum", OPSCHED_OP_ADD, t[1], t[3], &t[4]) ||
        opsched_graph_mark_output(g, t[4]) || netref_set_weights(g, seed)) {
        opsched_graph_free(g);
        return NULL;
    }
    return g;
}

static int reshape_to(opsched_graph *g, const char *name, int x, const opsched_shape *to, int *out)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.shape.shape = *to;
    return node1(g, name, OPSCHED_OP_RESHAPE, &a, &x, 1, out);
}

static int transpose4(opsched_graph *g, const char *name, int x, int p0, int p1, int p2, int p3,
                      int *out)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.transpose.n = 4;
    a.transpose.perm[0] = p0;
    a.transpose.perm[1] = p1;
    a.transpose.perm[2] = p2;
    a.transpose.perm[3] = p3;
    return node1(g, name, OPSCHED_OP_TRANSPOSE, &a, &x, 1, out);
}

opsched_graph *netref_transposed_residual_graph(opsched_ctx *ctx, const opsched_shape *xs,
                                                uint64_t seed)
{
    opsched_graph *g = NULL;
    int x, b, t[5];
    opsched_shape bs = {1, {xs->d[1]}};
    if (opsched_graph_create(ctx, "transposed_residual", &g) != OPSCHED_OK ||
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, xs, &x) ||
        opsched_graph_add_tensor(g, "b", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &bs, &b) ||
        transpose4(g, "to_last", x, 0, 2, 3, 1, &t[0]) ||
        matmul_w(g, "mm", t[0], xs->d[1], &t[1]) ||
        opsched_build_binary(g, "bias", OPSCHED_OP_ADD, t[1], b, &t[2]) ||
        transpose4(g, "to_first", t[2], 0, 3, 1, 2, &t[3]) ||
        opsched_build_binary(g, "res", OPSCHED_OP_ADD, t[3], x, &t[4]) ||
        opsched_graph_mark_output(g, t[4]) || netref_set_weights(g, seed)) {
        opsched_graph_free(g);
        return NULL;
    }
    return g;
}

/* LayerNormalization of x from `axis` on, eps, a scale (and a bias) of
 * the normalised extent. */
static int layernorm(opsched_graph *g, const char *name, int x, int axis, float eps, int bias,
                     int *out)
{
    const opsched_shape *xs = &opsched_graph_tensor(g, x)->shape;
    int64_t inner = 1;
    for (int d = axis; d < xs->ndim; d++)
        inner *= xs->d[d];
    opsched_shape ps = {1, {inner}};
    char sn[64], bn[64];
    snprintf(sn, sizeof sn, "%s_scale", name);
    snprintf(bn, sizeof bn, "%s_bias", name);
    int ins[3] = {x, -1, -1};
    if (opsched_graph_add_tensor(g, sn, OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &ps, &ins[1]) ||
        (bias && opsched_graph_add_tensor(g, bn, OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &ps, &ins[2])))
        return 1;
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.layernorm.axis = axis;
    a.layernorm.epsilon = eps;
    return node1(g, name, OPSCHED_OP_LAYERNORM, &a, ins, bias ? 3 : 2, out);
}

opsched_graph *netref_conv_norm_graph(opsched_ctx *ctx, const opsched_shape *xs, uint64_t seed)
{
    opsched_graph *g = NULL;
    int64_t c = xs->d[1];
    int x, t[13];
    opsched_conv_desc dw7 = {.out_channels = c, .kernel_h = 7, .kernel_w = 7, .stride_h = 1,
                             .stride_w = 1, .pad_h = 3, .pad_w = 3, .groups = c, .bias = 1};
    opsched_conv_desc dw3 = {.out_channels = c, .kernel_h = 3, .kernel_w = 3, .stride_h = 1,
                             .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = c};
    opsched_conv_desc dw5 = {.out_channels = c, .kernel_h = 5, .kernel_w = 5, .stride_h = 2,
                             .stride_w = 2, .pad_h = 2, .pad_w = 2, .groups = c, .bias = 1};
    if (opsched_graph_create(ctx, "conv_norm", &g) != OPSCHED_OK ||
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, xs, &x) ||
        opsched_build_conv(g, "dw7", x, &dw7, &t[0]) ||
        transpose4(g, "to_last", t[0], 0, 2, 3, 1, &t[1]) ||
        layernorm(g, "norm", t[1], 3, 1e-6f, 1, &t[2]) || matmul_w(g, "mm", t[2], c, &t[3]) ||
        transpose4(g, "to_first", t[3], 0, 3, 1, 2, &t[4]) ||
        opsched_build_binary(g, "res", OPSCHED_OP_ADD, t[4], x, &t[5]) ||
        opsched_build_conv(g, "dw3", t[5], &dw3, &t[6]) ||
        transpose4(g, "to_last2", t[6], 0, 2, 3, 1, &t[7]) ||
        layernorm(g, "norm2", t[7], 3, 1e-5f, 0, &t[8]) ||
        transpose4(g, "to_first2", t[8], 0, 3, 1, 2, &t[9]) ||
        opsched_build_conv(g, "dw5", t[9], &dw5, &t[10]) ||
        transpose4(g, "to_last3", t[10], 0, 2, 3, 1, &t[11]) ||
        layernorm(g, "norm3", t[11], 2, 1e-5f, 1, &t[12]) || opsched_graph_mark_output(g, t[12]) ||
        netref_set_weights(g, seed)) {
        opsched_graph_free(g);
        return NULL;
    }
    return g;
}

/* The shuffle of ShuffleNetV2: x [N, C, H, W] as [N, 2, C/2, H, W], its
 * two groups swapped, back to [N, C, H, W]. */
static int shuffle(opsched_graph *g, const char *name, int x, int *out)
{
    const opsched_shape *xs = &opsched_graph_tensor(g, x)->shape;
    opsched_shape split = {5, {xs->d[0], 2, xs->d[1] / 2, xs->d[2], xs->d[3]}}, back = *xs;
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.transpose.n = 5;
    int perm[5] = {0, 2, 1, 3, 4};
    for (int d = 0; d < 5; d++)
        a.transpose.perm[d] = perm[d];
    char n1[64], n2[64], n3[64];
    snprintf(n1, sizeof(n1), "%s_split", name);
    snprintf(n2, sizeof(n2), "%s_swap", name);
    snprintf(n3, sizeof(n3), "%s_join", name);
    int t[2];
    return reshape_to(g, n1, x, &split, &t[0]) || node1(g, n2, OPSCHED_OP_TRANSPOSE, &a, &t[0], 1, &t[1]) ||
           reshape_to(g, n3, t[1], &back, out);
}

int netref_channel_slice(opsched_graph *g, const char *name, int x, int64_t c0, int64_t c1,
                         int *out)
{
    const opsched_shape *xs = &opsched_graph_tensor(g, x)->shape;
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    for (int d = 0; d < xs->ndim; d++) {
        a.slice.ends[d] = xs->d[d];
        a.slice.steps[d] = 1;
    }
    a.slice.starts[1] = c0;
    a.slice.ends[1] = c1;
    return node1(g, name, OPSCHED_OP_SLICE, &a, &x, 1, out);
}

opsched_graph *netref_shuffle_graph(opsched_ctx *ctx, const opsched_shape *xs, uint64_t seed)
{
    opsched_graph *g = NULL;
    int64_t c = xs->d[1];
    int x, t[12];
    opsched_conv_desc pw = {.out_channels = c, .kernel_h = 1, .kernel_w = 1, .stride_h = 1,
                            .stride_w = 1, .bias = 1};
    opsched_conv_desc half = pw;
    half.out_channels = c / 2;
    if (opsched_graph_create(ctx, "shuffle", &g) != OPSCHED_OK ||
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, xs, &x) ||
        opsched_build_conv(g, "pw", x, &pw, &t[0]) ||
        opsched_build_unary(g, "relu", OPSCHED_OP_RELU, NULL, t[0], &t[1]) ||
        shuffle(g, "shuffle1", t[1], &t[2]) || netref_channel_slice(g, "keep", t[2], 0, c / 2, &t[3]) ||
        netref_channel_slice(g, "branch", t[2], c / 2, c, &t[4]) ||
        opsched_build_conv(g, "branch_pw", t[4], &half, &t[5]) ||
        opsched_build_unary(g, "branch_relu", OPSCHED_OP_RELU, NULL, t[5], &t[6])) {
        opsched_graph_free(g);
        return NULL;
    }
    int parts[2] = {t[3], t[6]};
    if (opsched_build_concat(g, "cat", parts, 2, 1, &t[7]) || shuffle(g, "shuffle2", t[7], &t[8]) ||
        opsched_graph_mark_output(g, t[8]) || netref_set_weights(g, seed)) {
        opsched_graph_free(g);
        return NULL;
    }
    return g;
}

static int scalar_const(opsched_graph *g, const char *name, float v, int *out)
{
    opsched_shape s = {0, {0}};
    return opsched_graph_add_tensor(g, name, OPSCHED_TENSOR_CONSTANT, OPSCHED_F32, &s, out) ||
           opsched_graph_set_data(g, *out, &v, sizeof(v));
}

opsched_graph *netref_attention_graph(opsched_ctx *ctx, int64_t B, int64_t S, int64_t H,
                                      int64_t D, int causal, uint64_t seed)
{
    opsched_graph *g = NULL;
    int64_t E = H * D;
    opsched_shape xs = {3, {B, S, E}}, hs = {4, {B, S, H, D}}, ms = {4, {B, 1, 1, S}};
    if (causal) ms = (opsched_shape){4, {1, 1, S, S}};
    int x, mask, sq, zero, t[24];
    int64_t n_mask = opsched_shape_numel(&ms);
    float *mv = malloc(sizeof(float) * (size_t)n_mask);
    if (!mv) return NULL;
    if (causal) {
        for (int64_t i = 0; i < S; i++) /* the last query row sees no key */
            for (int64_t j = 0; j < S; j++)
                mv[i * S + j] = (j > i || i == S - 1) ? -INFINITY : 0.0f;
    } else {
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < S; j++) /* batch 0 keeps all but 3 keys, batch 1 none */
                mv[b * S + j] = (b == 1 || (b == 0 && j >= S - 3)) ? -INFINITY : 0.0f;
    }
    opsched_op_attr sm, isnan_a;
    memset(&sm, 0, sizeof(sm));
    sm.axis.axis = -1;
    memset(&isnan_a, 0, sizeof(isnan_a));
    isnan_a.unary.fn = OPSCHED_UNARY_ISNAN;
    int fail = opsched_graph_create(ctx, "attention", &g) != OPSCHED_OK;
    fail = fail || opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x) ||
           opsched_graph_add_tensor(g, "mask", OPSCHED_TENSOR_CONSTANT, OPSCHED_F32, &ms, &mask) ||
           opsched_graph_set_data(g, mask, mv, sizeof(float) * (size_t)n_mask) ||
           scalar_const(g, "sqrt_scale", (float)pow((double)D, -0.25), &sq) ||
           scalar_const(g, "zero", 0.0f, &zero) || matmul_w(g, "q", x, E, &t[0]) ||
           matmul_w(g, "k", x, E, &t[1]) || matmul_w(g, "v", x, E, &t[2]) ||
           reshape_to(g, "q_heads", t[0], &hs, &t[3]) || reshape_to(g, "k_heads", t[1], &hs, &t[4]) ||
           reshape_to(g, "v_heads", t[2], &hs, &t[5]) ||
           transpose4(g, "q_t", t[3], 0, 2, 1, 3, &t[6]) ||
           transpose4(g, "k_t", t[4], 0, 2, 3, 1, &t[7]) ||
           transpose4(g, "v_t", t[5], 0, 2, 1, 3, &t[8]) ||
           opsched_build_binary(g, "q_scaled", OPSCHED_OP_MUL, t[6], sq, &t[9]) ||
           opsched_build_binary(g, "k_scaled", OPSCHED_OP_MUL, t[7], sq, &t[10]);
    if (!fail) {
        int qk[2] = {t[9], t[10]};
        fail = node1(g, "scores", OPSCHED_OP_MATMUL, NULL, qk, 2, &t[11]) ||
               opsched_build_binary(g, "masked", OPSCHED_OP_ADD, t[11], mask, &t[12]) ||
               node1(g, "Softmax", OPSCHED_OP_SOFTMAX, &sm, &t[12], 1, &t[13]) ||
               node1(g, "isnan", OPSCHED_OP_UNARY, &isnan_a, &t[13], 1, &t[14]);
    }
    if (!fail) {
        int w[3] = {t[14], zero, t[13]};
        fail = node1(g, "nan_zero", OPSCHED_OP_WHERE, NULL, w, 3, &t[15]);
    }
    if (!fail) {
        int pv[2] = {t[15], t[8]};
        fail = node1(g, "pv", OPSCHED_OP_MATMUL, NULL, pv, 2, &t[16]) ||
               transpose4(g, "out_t", t[16], 0, 2, 1, 3, &t[17]) ||
               reshape_to(g, "out", t[17], &xs, &t[18]) ||
               opsched_graph_mark_output(g, t[18]) || netref_set_weights(g, seed);
    }
    free(mv);
    if (fail) {
        opsched_graph_free(g);
        return NULL;
    }
    return g;
}
