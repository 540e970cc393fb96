/*
 * opconfig.c - operator configurations from named parameters, the way a
 * user writes them on the command line or in a sweep spec
 * ("conv2d", batch=16, in_channels=64, kernel=3, ...), built into
 * one-node graphs with the builder API so shape checks apply.
 */
#include <stdio.h>
#include <string.h>

#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/half.h"
#include "core/util.h"
#include "opsched/measure.h"

typedef enum shape_kind { SK_NCHW, SK_FEATURES, SK_MATMUL, SK_SEQ, SK_ATTENTION } shape_kind;

typedef struct op_def {
    const char *name;
    opsched_op_kind op;
    shape_kind shape;
    const opsched_param *params;
    int n_params;
} op_def;

#define P(...) ((const opsched_param[]){__VA_ARGS__})
#define NP(...) (int)(sizeof((const opsched_param[]){__VA_ARGS__}) / sizeof(opsched_param))
#define DEF(nm, opk, sk, ...) {nm, opk, sk, P(__VA_ARGS__), NP(__VA_ARGS__)}

/* Spatial ops: padding -1 means kernel/2 (size-preserving at stride 1). */
#define IMG {"batch", 1}, {"channels", 64}, {"height", 56}, {"width", 0}
static const op_def defs[] = {
    DEF("conv2d", OPSCHED_OP_CONV, SK_NCHW, {"batch", 1}, {"in_channels", 64},
        {"out_channels", 64}, {"height", 56}, {"width", 0}, {"kernel", 3}, {"kernel_w", 0},
        {"stride", 1}, {"padding", -1}, {"dilation", 1}, {"groups", 1}, {"bias", 1}),
    DEF("linear", OPSCHED_OP_GEMM, SK_FEATURES, {"batch", 1}, {"in_features", 1024},
        {"out_features", 1000}, {"bias", 1}),
    DEF("matmul", OPSCHED_OP_MATMUL, SK_MATMUL, {"batch", 1}, {"m", 512}, {"k", 512}, {"n", 512}),
    DEF("maxpool", OPSCHED_OP_MAXPOOL, SK_NCHW, IMG, {"kernel", 3}, {"stride", 2}, {"padding", 1},
        {"ceil_mode", 0}),
    DEF("avgpool", OPSCHED_OP_AVGPOOL, SK_NCHW, IMG, {"kernel", 3}, {"stride", 2}, {"padding", 1},
        {"ceil_mode", 0}, {"count_include_pad", 0}),
    DEF("globalavgpool", OPSCHED_OP_GLOBALAVGPOOL, SK_NCHW, IMG),
    DEF("relu", OPSCHED_OP_RELU, SK_NCHW, IMG),
    DEF("relu6", OPSCHED_OP_CLIP, SK_NCHW, IMG),
    DEF("sigmoid", OPSCHED_OP_SIGMOID, SK_NCHW, IMG),
    DEF("tanh", OPSCHED_OP_TANH, SK_NCHW, IMG),
    DEF("gelu", OPSCHED_OP_GELU, SK_NCHW, IMG),
    DEF("hardswish", OPSCHED_OP_HARDSWISH, SK_NCHW, IMG),
    DEF("add", OPSCHED_OP_ADD, SK_NCHW, IMG),
    DEF("mul", OPSCHED_OP_MUL, SK_NCHW, IMG),
    DEF("concat", OPSCHED_OP_CONCAT, SK_NCHW, IMG, {"inputs", 2}),
    DEF("batchnorm", OPSCHED_OP_BATCHNORM, SK_NCHW, IMG),
    DEF("lrn", OPSCHED_OP_LRN, SK_NCHW, IMG, {"size", 5}),
    DEF("softmax", OPSCHED_OP_SOFTMAX, SK_FEATURES, {"batch", 1}, {"features", 1000}),
    DEF("layernorm", OPSCHED_OP_LAYERNORM, SK_SEQ, {"batch", 1}, {"seq", 197}, {"hidden", 768}),
    /* Q [batch, heads, seq, head], K and V over kv_seq keys (0: seq), scale
     * 1/sqrt(head); causal: a [seq, kv_seq] bias of -inf above the diagonal */
    DEF("attention", OPSCHED_OP_ATTENTION, SK_ATTENTION, {"batch", 1}, {"heads", 12},
        {"seq", 128}, {"kv_seq", 0}, {"head", 64}, {"causal", 0}),
};

int opsched_opconfig_count(void) { return (int)OS_ARRAY_LEN(defs); }

const char *opsched_opconfig_name(int i)
{
    return i >= 0 && i < (int)OS_ARRAY_LEN(defs) ? defs[i].name : NULL;
}

static const op_def *find_def(const char *op)
{
    for (size_t i = 0; op && i < OS_ARRAY_LEN(defs); i++)
        if (strcmp(defs[i].name, op) == 0) return &defs[i];
    return NULL;
}

opsched_status opsched_opconfig_params(const char *op, const opsched_param **params, int *n)
{
    const op_def *d = find_def(op);
    if (!d || !params || !n) return OPSCHED_ERR_NOT_FOUND;
    *params = d->params;
    *n = d->n_params;
    return OPSCHED_OK;
}

/* Resolved parameter values, by name. */
typedef struct pvals {
    const op_def *def;
    int64_t v[24];
} pvals;

static int64_t get(const pvals *p, const char *name)
{
    for (int i = 0; i < p->def->n_params; i++)
        if (strcmp(p->def->params[i].name, name) == 0) return p->v[i];
    return 0;
}

static opsched_status add_input(opsched_graph *g, const char *name, opsched_dtype dt, int ndim,
                                const int64_t *d, int *id)
{
    opsched_shape s = {.ndim = ndim};
    memcpy(s.d, d, sizeof(int64_t) * (size_t)ndim);
    return opsched_graph_add_tensor(g, name, OPSCHED_TENSOR_INPUT, dt, &s, id);
}

/* The causal bias [s, kv] in type dt: 0 on and below the diagonal (the
 * diagonal moved right by kv - s, as the last query sees every key), -inf
 * above. */
static opsched_status causal_bias(opsched_graph *g, int64_t s, int64_t kv, opsched_dtype dt,
                                  int *out)
{
    opsched_shape bs = {.ndim = 2, .d = {s, kv}};
    OS_TRY(opsched_graph_add_tensor(g, "causal", OPSCHED_TENSOR_CONSTANT, dt, &bs, out));
    size_t n = (size_t)(s * kv), es = opsched_dtype_size(dt);
    unsigned char *v = malloc(n * es);
    if (!v) return OS_NOMEM(opsched_graph_ctx(g));
    for (int64_t i = 0; i < s; i++)
        for (int64_t j = 0; j < kv; j++) {
            float f = j > i + (kv - s) ? -INFINITY : 0.0f;
            size_t k = (size_t)(i * kv + j);
            if (dt == OPSCHED_F16) {
                uint16_t h = os_f32_to_f16(f);
                memcpy(v + k * es, &h, es);
            } else if (dt == OPSCHED_BF16) {
                uint16_t h = os_f32_to_bf16(f);
                memcpy(v + k * es, &h, es);
            } else {
                memcpy(v + k * es, &f, es);
            }
        }
    opsched_status st = opsched_graph_set_data(g, *out, v, n * es);
    free(v);
    return st;
}

static opsched_status build_attention(opsched_graph *g, const pvals *p, opsched_dtype dt, int *y)
{
    int64_t b = get(p, "batch"), h = get(p, "heads"), s = get(p, "seq"), e = get(p, "head");
    int64_t kv = get(p, "kv_seq") ? get(p, "kv_seq") : s;
    int64_t qd[4] = {b, h, s, e}, kd[4] = {b, h, kv, e};
    int ins[4] = {-1, -1, -1, -1};
    OS_TRY(add_input(g, "q", dt, 4, qd, &ins[0]));
    OS_TRY(add_input(g, "k", dt, 4, kd, &ins[1]));
    OS_TRY(add_input(g, "v", dt, 4, kd, &ins[2]));
    int causal = get(p, "causal") != 0;
    if (causal) OS_TRY(causal_bias(g, s, kv, dt, &ins[3]));
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.attention.scale = (float)(1.0 / sqrt((double)e));
    a.attention.out_rank = 4;
    for (int x = 0; x < OPSCHED_ATT_OPERANDS; x++)
        for (int c = 0; c < 4; c++)
            a.attention.axes[x][c] = (int8_t)c;
    a.attention.axes[OPSCHED_ATT_BIAS][0] = a.attention.axes[OPSCHED_ATT_BIAS][1] = -1;
    a.attention.axes[OPSCHED_ATT_BIAS][2] = 0;
    a.attention.axes[OPSCHED_ATT_BIAS][3] = 1;
    return opsched_graph_add_node(g, "attention", OPSCHED_OP_ATTENTION, &a, ins, causal ? 4 : 3, 1,
                                  NULL, y);
}

static opsched_status build(opsched_graph *g, const pvals *p, opsched_dtype dt)
{
    const op_def *d = p->def;
    int64_t batch = get(p, "batch");
    int x = -1, y = -1;
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    if (d->shape == SK_NCHW) {
        int64_t c = d->op == OPSCHED_OP_CONV ? get(p, "in_channels") : get(p, "channels");
        int64_t h = get(p, "height"), w = get(p, "width") ? get(p, "width") : h;
        int64_t dims[4] = {batch, c, h, w};
        OS_TRY(add_input(g, "x", dt, 4, dims, &x));
        switch (d->op) {
        case OPSCHED_OP_CONV: {
            int64_t k = get(p, "kernel"), kw = get(p, "kernel_w") ? get(p, "kernel_w") : k;
            int64_t dil = get(p, "dilation"), pad = get(p, "padding");
            opsched_conv_desc cd = {.out_channels = get(p, "out_channels"), .kernel_h = k,
                                    .kernel_w = kw, .stride_h = get(p, "stride"),
                                    .stride_w = get(p, "stride"),
                                    .pad_h = pad >= 0 ? pad : dil * (k - 1) / 2,
                                    .pad_w = pad >= 0 ? pad : dil * (kw - 1) / 2,
                                    .dilation = dil, .groups = get(p, "groups"),
                                    .bias = get(p, "bias") != 0};
            OS_TRY(opsched_build_conv(g, "conv", x, &cd, &y));
            break;
        }
        case OPSCHED_OP_MAXPOOL:
        case OPSCHED_OP_AVGPOOL:
            OS_TRY(opsched_build_pool(g, "pool", d->op, x, get(p, "kernel"), get(p, "stride"),
                                      get(p, "padding"), (int)get(p, "ceil_mode"),
                                      d->op == OPSCHED_OP_AVGPOOL ? (int)get(p, "count_include_pad") : 0,
                                      &y));
            break;
        case OPSCHED_OP_ADD:
        case OPSCHED_OP_MUL: {
            int x2;
            OS_TRY(add_input(g, "x2", dt, 4, dims, &x2));
            OS_TRY(opsched_build_binary(g, d->name, d->op, x, x2, &y));
            break;
        }
        case OPSCHED_OP_CONCAT: {
            int64_t n = get(p, "inputs");
            if (n < 1 || n > 16)
                return OS_FAIL(opsched_graph_ctx(g), OPSCHED_ERR_INVALID_ARG,
                               "concat: inputs must be 1..16, got %lld", (long long)n);
            int xs[16] = {x};
            for (int i = 1; i < n; i++) {
                char nm[16];
                snprintf(nm, sizeof(nm), "x%d", i + 1);
                OS_TRY(add_input(g, nm, dt, 4, dims, &xs[i]));
            }
            OS_TRY(opsched_build_concat(g, "concat", xs, (int)n, 1, &y));
            break;
        }
        case OPSCHED_OP_BATCHNORM: OS_TRY(opsched_build_batchnorm(g, "bn", x, 1e-5f, &y)); break;
        case OPSCHED_OP_LRN:
            a.lrn.size = get(p, "size");
            a.lrn.alpha = 1e-4f;
            a.lrn.beta = 0.75f;
            a.lrn.bias = 1.0f;
            OS_TRY(opsched_build_unary(g, "lrn", d->op, &a, x, &y));
            break;
        case OPSCHED_OP_CLIP:
            a.clip.min = 0.0f;
            a.clip.max = 6.0f;
            OS_TRY(opsched_build_unary(g, d->name, d->op, &a, x, &y));
            break;
        default: OS_TRY(opsched_build_unary(g, d->name, d->op, NULL, x, &y)); break;
        }
    } else if (d->shape == SK_FEATURES) {
        int64_t f = d->op == OPSCHED_OP_GEMM ? get(p, "in_features") : get(p, "features");
        int64_t dims[2] = {batch, f};
        OS_TRY(add_input(g, "x", dt, 2, dims, &x));
        if (d->op == OPSCHED_OP_GEMM) {
            OS_TRY(opsched_build_linear(g, "linear", x, get(p, "out_features"), get(p, "bias") != 0, &y));
        } else {
            a.axis.axis = 1;
            OS_TRY(opsched_build_unary(g, "softmax", d->op, &a, x, &y));
        }
    } else if (d->shape == SK_MATMUL) {
        int64_t da[3] = {batch, get(p, "m"), get(p, "k")}, db[3] = {batch, get(p, "k"), get(p, "n")};
        int xb;
        OS_TRY(add_input(g, "a", dt, 3, da, &x));
        OS_TRY(add_input(g, "b", dt, 3, db, &xb));
        OS_TRY(opsched_build_binary(g, "matmul", d->op, x, xb, &y));
    } else if (d->shape == SK_ATTENTION) {
        OS_TRY(build_attention(g, p, dt, &y));
    } else {
        int64_t hidden = get(p, "hidden"), dims[3] = {batch, get(p, "seq"), hidden};
        OS_TRY(add_input(g, "x", dt, 3, dims, &x));
        opsched_shape ws = {.ndim = 1, .d = {hidden}};
        int ins[3] = {x, -1, -1};
        OS_TRY(opsched_graph_add_tensor(g, "ln.weight", OPSCHED_TENSOR_WEIGHT, dt, &ws, &ins[1]));
        OS_TRY(opsched_graph_add_tensor(g, "ln.bias", OPSCHED_TENSOR_WEIGHT, dt, &ws, &ins[2]));
        a.layernorm.axis = -1;
        a.layernorm.epsilon = 1e-5f;
        OS_TRY(opsched_graph_add_node(g, "layernorm", d->op, &a, ins, 3, 1, NULL, &y));
    }
    return opsched_graph_mark_output(g, y);
}

opsched_status opsched_opconfig_build(opsched_ctx *ctx, const char *op, const opsched_param *params,
                                      int n_params, opsched_dtype dtype, opsched_graph **out)
{
    if (!out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    const op_def *d = find_def(op);
    if (!d) {
        char names[512] = "";
        for (size_t i = 0; i < OS_ARRAY_LEN(defs); i++) {
            strncat(names, i ? ", " : "", sizeof(names) - strlen(names) - 1);
            strncat(names, defs[i].name, sizeof(names) - strlen(names) - 1);
        }
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "unknown operator '%s' (known: %s)",
                       op ? op : "(null)", names);
    }
    pvals p = {.def = d};
    for (int i = 0; i < d->n_params; i++) p.v[i] = d->params[i].value;
    for (int i = 0; i < n_params; i++) {
        int found = 0;
        for (int k = 0; k < d->n_params; k++) {
            if (strcmp(params[i].name, d->params[k].name) != 0) continue;
            found = 1;
            int64_t v = params[i].value;
            int may_be_neg = strcmp(params[i].name, "padding") == 0;
            int may_be_zero = strcmp(params[i].name, "bias") == 0 ||
                              strcmp(params[i].name, "causal") == 0 ||
                              strcmp(params[i].name, "kv_seq") == 0 ||
                              strcmp(params[i].name, "width") == 0 ||
                              strcmp(params[i].name, "kernel_w") == 0 ||
                              strcmp(params[i].name, "ceil_mode") == 0 ||
                              strcmp(params[i].name, "count_include_pad") == 0 || may_be_neg;
            if ((v < 0 && !(may_be_neg && v == -1)) || (v == 0 && !may_be_zero) || v > (1LL << 31))
                return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "%s: %s=%lld is out of range", op,
                               params[i].name, (long long)v);
            p.v[k] = v;
        }
        if (!found) {
            char names[256] = "";
            for (int k = 0; k < d->n_params; k++) {
                strncat(names, k ? ", " : "", sizeof(names) - strlen(names) - 1);
                strncat(names, d->params[k].name, sizeof(names) - strlen(names) - 1);
            }
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "%s has no parameter '%s' (it has: %s)",
                           op, params[i].name, names);
        }
    }
    opsched_graph *g = NULL;
    OS_TRY(opsched_graph_create(ctx, op, &g));
    opsched_status st = build(g, &p, dtype);
    if (st != OPSCHED_OK) {
        opsched_graph_free(g);
        return st;
    }
    *out = g;
    return OPSCHED_OK;
}
