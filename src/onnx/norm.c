/*
 * norm.c - normalisations, reductions and the ops that work along one
 * axis.
 *
 *   BatchNormalization, LayerNormalization      their own kinds (LayerNormalization's
 *                                               Mean and InvStdDev decomposed);
 *                                               BatchNormalization's training_mode:
 *                                               ReduceMean, Sub, Mul, Add, Sqrt, Div,
 *                                               Mul, Add, and the running statistics
 *   InstanceNormalization                       GROUPNORM, groups = channels
 *   GroupNormalization                          GROUPNORM; opset 18's scale and
 *                                               bias per group become per channel
 *   LpNormalization                             REDUCE L1/L2 (keepdims), Div; a zero
 *                                               norm gives 0 (Equal, Where)
 *   MeanVarianceNormalization                   as its ONNX function: ReduceMean,
 *                                               Mul, Sub, Sqrt, Add 1e-9, Div
 *   RMSNormalization                            Mul, ReduceMean, Add, Sqrt,
 *                                               Reciprocal, Mul, Mul (stash_type:
 *                                               float32 compute, Cast back)
 *   Reduce*                                     REDUCE (REDUCEMEAN for the mean)
 *   ArgMax, ArgMin, CumSum, TopK                their own kinds
 *   Softmax, LogSoftmax, Hardmax                their own kinds (ops.c)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

static opsched_status bad(os_loader *L, int node, const char *what)
{
    return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "%s", what);
}

/* ---- reductions ------------------------------------------------------------------ */

static const struct {
    const char *name;
    opsched_reduce_fn fn;
} reduce_defs[] = {
    {"ReduceMean", OPSCHED_REDUCE_MEAN},
    {"ReduceSum", OPSCHED_REDUCE_SUM},
    {"ReduceMax", OPSCHED_REDUCE_MAX},
    {"ReduceMin", OPSCHED_REDUCE_MIN},
    {"ReduceProd", OPSCHED_REDUCE_PROD},
    {"ReduceL1", OPSCHED_REDUCE_L1},
    {"ReduceL2", OPSCHED_REDUCE_L2},
    {"ReduceLogSum", OPSCHED_REDUCE_LOGSUM},
    {"ReduceLogSumExp", OPSCHED_REDUCE_LOGSUMEXP},
    {"ReduceSumSquare", OPSCHED_REDUCE_SUMSQUARE},
};

opsched_status os_onnx_reduce_attrs(os_loader *L, int node, const char *op,
                                    opsched_reduce_attr *out, int *n_axes_given)
{
    memset(out, 0, sizeof(*out));
    int found = 0;
    for (size_t i = 0; i < OS_ARRAY_LEN(reduce_defs); i++)
        if (strcmp(reduce_defs[i].name, op) == 0) {
            out->fn = reduce_defs[i].fn;
            found = 1;
        }
    if (!found) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "not a reduction");
    int64_t keep = 1, noop = 0;
    int n = -1;
    /* The axes became an input in opset 13 for ReduceSum, 18 for the rest. */
    int64_t input_from = out->fn == OPSCHED_REDUCE_SUM ? 13 : 18;
    OS_TRY(os_onnx_attr_int(L, node, "keepdims", &keep));
    if (L->opset < input_from) {
        OS_TRY(os_onnx_attr_ints(L, node, "axes", out->axes, OPSCHED_MAX_DIMS, &n));
    } else {
        OS_TRY(os_onnx_attr_int(L, node, "noop_with_empty_axes", &noop));
        OS_TRY(os_onnx_in_ints(L, node, 1, "axes", out->axes, OPSCHED_MAX_DIMS, &n));
    }
    out->n_axes = n < 0 ? 0 : n;
    out->keepdims = keep != 0;
    out->noop_with_empty_axes = noop != 0 && out->n_axes == 0;
    *n_axes_given = n;
    return OPSCHED_OK;
}

/* A reduction over no axes still applies its element-wise parts
 * (ReduceSumSquare squares, ReduceL1 takes |x|, ...). */
static opsched_status reduce_none(os_loader *L, int node, opsched_reduce_fn fn, int x)
{
    int t;
    switch (fn) {
    case OPSCHED_REDUCE_L1:
        return os_onnx_unfn(L, node, "abs", OPSCHED_UNARY_ABS, 0, 0, x, 0, NULL);
    case OPSCHED_REDUCE_L2:
        OS_TRY(os_onnx_binop(L, node, "square", OPSCHED_OP_MUL, x, x, OS_TMP, &t));
        return os_onnx_step(L, node, "sqrt", 0, OPSCHED_OP_SQRT, NULL, &t, 1, 1, NULL);
    case OPSCHED_REDUCE_SUMSQUARE:
        return os_onnx_binop(L, node, "square", OPSCHED_OP_MUL, x, x, 0, NULL);
    case OPSCHED_REDUCE_LOGSUM:
        return os_onnx_unfn(L, node, "log", OPSCHED_UNARY_LOG, 0, 0, x, 0, NULL);
    case OPSCHED_REDUCE_LOGSUMEXP:
        OS_TRY(os_onnx_unfn(L, node, "exp", OPSCHED_UNARY_EXP, 0, 0, x, OS_TMP, &t));
        return os_onnx_unfn(L, node, "log", OPSCHED_UNARY_LOG, 0, 0, t, 0, NULL);
    default:
        os_onnx_alias(L, node, 0, os_onnx_in(L, node, 0));
        return OPSCHED_OK;
    }
}

static opsched_status reduce(os_loader *L, int node, const char *op)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    int given, x;
    OS_TRY(os_onnx_reduce_attrs(L, node, op, &a.reduce, &given));
    OS_TRY(os_onnx_in_id(L, node, 0, &x));
    if (a.reduce.noop_with_empty_axes) return reduce_none(L, node, a.reduce.fn, x);
    opsched_op_kind kind =
        a.reduce.fn == OPSCHED_REDUCE_MEAN ? OPSCHED_OP_REDUCEMEAN : OPSCHED_OP_REDUCE;
    return os_onnx_step(L, node, "reduce", 0, kind, &a, &x, 1, 1, NULL);
}

/* ---- along one axis ------------------------------------------------------------- */

static opsched_status arg(os_loader *L, int node, int is_max)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    int64_t keep = 1, last = 0;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &a.arg.axis));
    OS_TRY(os_onnx_attr_int(L, node, "keepdims", &keep));
    OS_TRY(os_onnx_attr_int(L, node, "select_last_index", &last));
    a.arg.keepdims = keep != 0;
    a.arg.select_last_index = last != 0;
    int x = os_onnx_in(L, node, 0);
    return os_onnx_emit(L, node, is_max ? OPSCHED_OP_ARGMAX : OPSCHED_OP_ARGMIN, &a, &x, 1, 1);
}

/* An integer input that must be a single value known at load time. */
static opsched_status known_int(os_loader *L, int node, int k, const char *what, int64_t *out)
{
    int v = os_onnx_in(L, node, k);
    if (v < 0) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "'%s' is missing", what);
    const os_cval *c = os_onnx_in_cval(L, node, k);
    if (!c)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "'%s' ('%s') must be known when the model is loaded, but it is "
                                 "computed at run time",
                                 what, L->vals[v].name);
    if (c->n != 1 || c->is_float)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "'%s' must be one integer", what);
    *out = c->i[0];
    return OPSCHED_OK;
}

static opsched_status cumsum(os_loader *L, int node)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    int64_t ex = 0, rev = 0;
    OS_TRY(known_int(L, node, 1, "axis", &a.cumsum.axis));
    OS_TRY(os_onnx_attr_int(L, node, "exclusive", &ex));
    OS_TRY(os_onnx_attr_int(L, node, "reverse", &rev));
    a.cumsum.exclusive = ex != 0;
    a.cumsum.reverse = rev != 0;
    int x = os_onnx_in(L, node, 0);
    return os_onnx_emit(L, node, OPSCHED_OP_CUMSUM, &a, &x, 1, 1);
}

static opsched_status topk(os_loader *L, int node)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    int64_t largest = 1, sorted = 1;
    a.topk.axis = -1;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &a.topk.axis));
    if (L->opset < 10) {
        a.topk.k = -1;
        OS_TRY(os_onnx_attr_int(L, node, "k", &a.topk.k));
    } else {
        OS_TRY(known_int(L, node, 1, "K", &a.topk.k));
        OS_TRY(os_onnx_attr_int(L, node, "largest", &largest));
        OS_TRY(os_onnx_attr_int(L, node, "sorted", &sorted));
    }
    a.topk.largest = largest != 0;
    a.topk.sorted = sorted != 0;
    int x = os_onnx_in(L, node, 0);
    return os_onnx_emit(L, node, OPSCHED_OP_TOPK, &a, &x, 1, 2);
}

/* ---- normalisations ------------------------------------------------------------------ */

/* BatchNormalization with training_mode=1 (opset 14 on): the statistics
 * of the batch, over every axis but the channels (the variance is the
 * population's), normalise X; the running statistics come out as
 * input * momentum + batch * (1 - momentum). */
static opsched_status batchnorm_training(os_loader *L, int node, float eps)
{
    float momentum = 0.9f;
    OS_TRY(os_onnx_attr_float(L, node, "momentum", &momentum));
    int x, sc, b, m_in, v_in;
    OS_TRY(os_onnx_in_id(L, node, 0, &x));
    OS_TRY(os_onnx_in_id(L, node, 1, &sc));
    OS_TRY(os_onnx_in_id(L, node, 2, &b));
    OS_TRY(os_onnx_in_id(L, node, 3, &m_in));
    OS_TRY(os_onnx_in_id(L, node, 4, &v_in));
    const opsched_shape xs = os_onnx_t(L, x)->shape;
    opsched_dtype dt = os_onnx_t(L, x)->dtype;
    if (xs.ndim < 2) return bad(L, node, "the input needs a channel axis");
    int64_t C = xs.d[1], axes[OPSCHED_MAX_DIMS];
    int n = 0;
    for (int k = 0; k < xs.ndim; k++)
        if (k != 1) axes[n++] = k;
    /* [C] as [C, 1, ...] to broadcast over the axes after the channels */
    opsched_shape per_c = {.ndim = xs.ndim - 1, .d = {C}}, flat = {.ndim = 1, .d = {C}};
    for (int k = 1; k < per_c.ndim; k++)
        per_c.d[k] = 1;
    int mean, d, var, t, e;
    OS_TRY(
        os_onnx_reduce(L, node, "batch_mean", OPSCHED_REDUCE_MEAN, x, axes, n, 1, OS_TMP, &mean));
    OS_TRY(os_onnx_binop(L, node, "centred", OPSCHED_OP_SUB, x, mean, OS_TMP, &d));
    OS_TRY(os_onnx_binop(L, node, "centred_sq", OPSCHED_OP_MUL, d, d, OS_TMP, &t));
    OS_TRY(os_onnx_reduce(L, node, "batch_var", OPSCHED_REDUCE_MEAN, t, axes, n, 1, OS_TMP, &var));
    OS_TRY(os_onnx_scalar(L, node, "epsilon", dt, eps, &e));
    OS_TRY(os_onnx_binop(L, node, "var_eps", OPSCHED_OP_ADD, var, e, OS_TMP, &t));
    OS_TRY(os_onnx_step(L, node, "std", OS_TMP, OPSCHED_OP_SQRT, NULL, &t, 1, 1, &t));
    OS_TRY(os_onnx_binop(L, node, "normalised", OPSCHED_OP_DIV, d, t, OS_TMP, &d));
    OS_TRY(os_onnx_reshape(L, node, "scale_c", sc, &per_c, OS_TMP, &sc));
    OS_TRY(os_onnx_reshape(L, node, "bias_c", b, &per_c, OS_TMP, &b));
    OS_TRY(os_onnx_binop(L, node, "scaled", OPSCHED_OP_MUL, d, sc, OS_TMP, &d));
    OS_TRY(os_onnx_binop(L, node, "y", OPSCHED_OP_ADD, d, b, 0, NULL));
    int stats[2] = {mean, var}, ins[2] = {m_in, v_in}, mom, rest;
    OS_TRY(os_onnx_scalar(L, node, "momentum", dt, momentum, &mom));
    OS_TRY(os_onnx_scalar(L, node, "one_minus_momentum", dt, 1.0 - (double)momentum, &rest));
    for (int k = 0; k < 2; k++) {
        if (os_onnx_out(L, node, 1 + k) < 0) continue;
        int run, cur;
        const char *nm = k ? "var" : "mean";
        char tag[32];
        snprintf(tag, sizeof(tag), "batch_%s_c", nm);
        OS_TRY(os_onnx_reshape(L, node, tag, stats[k], &flat, OS_TMP, &cur));
        snprintf(tag, sizeof(tag), "batch_%s_part", nm);
        OS_TRY(os_onnx_binop(L, node, tag, OPSCHED_OP_MUL, cur, rest, OS_TMP, &cur));
        snprintf(tag, sizeof(tag), "running_%s_part", nm);
        OS_TRY(os_onnx_binop(L, node, tag, OPSCHED_OP_MUL, ins[k], mom, OS_TMP, &run));
        snprintf(tag, sizeof(tag), "running_%s", nm);
        OS_TRY(os_onnx_binop(L, node, tag, OPSCHED_OP_ADD, run, cur, 1 + k, NULL));
    }
    return OPSCHED_OK;
}

static opsched_status batchnorm(os_loader *L, int node)
{
    int64_t training = 0;
    OS_TRY(os_onnx_attr_int(L, node, "training_mode", &training));
    if (training && L->opset >= 14) {
        float eps = 1e-5f;
        OS_TRY(os_onnx_attr_float(L, node, "epsilon", &eps));
        return batchnorm_training(L, node, eps);
    }
    if (training)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "training_mode=1 is not supported");
    for (int k = 1; k < os_onnx_num_out(L, node); k++)
        if (os_onnx_out(L, node, k) >= 0)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                     "the training outputs (running mean and variance) are not "
                                     "supported");
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.bn.epsilon = 1e-5f;
    OS_TRY(os_onnx_attr_float(L, node, "epsilon", &a.bn.epsilon));
    int ins[5];
    for (int k = 0; k < 5; k++) {
        ins[k] = os_onnx_in(L, node, k);
        if (ins[k] < 0)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "input %d is missing", k);
    }
    return os_onnx_emit(L, node, OPSCHED_OP_BATCHNORM, &a, ins, 5, 1);
}

/* LayerNormalization's Mean and InvStdDev outputs, computed beside the
 * LAYERNORM node in the stash type: ReduceMean, and 1/sqrt(mean of the
 * squared differences + epsilon). */
static opsched_status layernorm_stats(os_loader *L, int node, int64_t axis, float eps)
{
    int64_t stash = 1;
    OS_TRY(os_onnx_attr_int(L, node, "stash_type", &stash));
    int x, mean, d, v, e;
    OS_TRY(os_onnx_in_id(L, node, 0, &x));
    int rank = os_onnx_t(L, x)->shape.ndim;
    OS_TRY(os_onnx_axis(L, node, axis, rank, &axis));
    opsched_dtype dt;
    OS_TRY(os_onnx_dtype(L->ctx, (int32_t)stash, "the statistics", &dt));
    int64_t axes[OPSCHED_MAX_DIMS];
    int n = 0;
    for (int64_t k = axis; k < rank; k++)
        axes[n++] = k;
    int want_inv = os_onnx_out(L, node, 2) >= 0;
    OS_TRY(os_onnx_cast(L, node, "x_stash", x, dt, OS_TMP, &x));
    OS_TRY(os_onnx_reduce(L, node, "mean", OPSCHED_REDUCE_MEAN, x, axes, n, 1,
                          os_onnx_out(L, node, 1) >= 0 ? 1 : OS_TMP, &mean));
    if (!want_inv) return OPSCHED_OK;
    OS_TRY(os_onnx_binop(L, node, "diff", OPSCHED_OP_SUB, x, mean, OS_TMP, &d));
    OS_TRY(os_onnx_binop(L, node, "diff_sq", OPSCHED_OP_MUL, d, d, OS_TMP, &d));
    OS_TRY(os_onnx_reduce(L, node, "var", OPSCHED_REDUCE_MEAN, d, axes, n, 1, OS_TMP, &v));
    OS_TRY(os_onnx_scalar(L, node, "epsilon", dt, eps, &e));
    OS_TRY(os_onnx_binop(L, node, "var_eps", OPSCHED_OP_ADD, v, e, OS_TMP, &v));
    OS_TRY(os_onnx_step(L, node, "std", OS_TMP, OPSCHED_OP_SQRT, NULL, &v, 1, 1, &v));
    return os_onnx_unfn(L, node, "inv_std", OPSCHED_UNARY_RECIPROCAL, 0, 0, v, 2, NULL);
}

static opsched_status layernorm(os_loader *L, int node)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.layernorm.axis = -1;
    a.layernorm.epsilon = 1e-5f;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &a.layernorm.axis));
    OS_TRY(os_onnx_attr_float(L, node, "epsilon", &a.layernorm.epsilon));
    int ins[3] = {os_onnx_in(L, node, 0), os_onnx_in(L, node, 1), os_onnx_in(L, node, 2)};
    OS_TRY(os_onnx_emit(L, node, OPSCHED_OP_LAYERNORM, &a, ins, ins[2] >= 0 ? 3 : 2, 1));
    if (os_onnx_out(L, node, 1) < 0 && os_onnx_out(L, node, 2) < 0) return OPSCHED_OK;
    return layernorm_stats(L, node, a.layernorm.axis, a.layernorm.epsilon);
}

/* Scale or bias given per group (GroupNormalization before opset 21) made
 * per channel: each value repeated C/G times.  A weight from the file
 * becomes a weight of its own holding the repeated values; anything else is
 * repeated by the graph (Reshape, Expand, Reshape). */
static opsched_status per_channel(os_loader *L, int node, int k, int64_t G, int64_t C, int *out)
{
    opsched_status st = OPSCHED_OK;
    int v = os_onnx_root(L, os_onnx_in(L, node, k)), id;
    if (v < 0) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "input %d is missing", k);
    const os_val *x = &L->vals[v];
    opsched_shape s;
    OS_TRY(os_onnx_shape_of(L, node, v, &s));
    if (opsched_shape_numel(&s) != G)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                 "input %d must hold one value per group (%lld), it has %lld", k,
                                 (long long)G, (long long)opsched_shape_numel(&s));
    int64_t rep = C / G;
    opsched_shape sc = {.ndim = 1, .d = {C}};
    if (C > ((int64_t)1 << 24))
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "%lld channels are too many to repeat the per-group values for",
                                 (long long)C);
    if (x->id < 0 && x->init && x->role == OS_ROLE_WEIGHT) {
        opsched_dtype dt;
        OS_TRY(os_onnx_dtype(L->ctx, x->elem, x->name, &dt));
        size_t len = strlen(x->name) + sizeof("/per_channel");
        char *name = malloc(len);
        if (!name) return OS_NOMEM(L->ctx);
        snprintf(name, len, "%s/per_channel", x->name);
        if (opsched_graph_find_tensor(L->g, name, &id) == OPSCHED_OK) {
            free(name);
            *out = id;
            return OPSCHED_OK;
        }
        st = opsched_graph_add_tensor(L->g, name, OPSCHED_TENSOR_WEIGHT, dt, &sc, &id);
        free(name);
        OS_TRY(st);
        if (L->opts.load_weights) {
            void *buf = NULL;
            size_t bytes = 0, es = opsched_dtype_size(dt);
            OS_TRY(os_onnx_tensor_payload(L, x->init, x->name, dt, &buf, &bytes));
            uint8_t *big = buf ? malloc((size_t)C * es) : NULL;
            if (buf && !big) st = OS_NOMEM(L->ctx);
            for (int64_t c = 0; big && c < C; c++)
                memcpy(big + (size_t)c * es, (uint8_t *)buf + (size_t)(c / rep) * es, es);
            if (big) st = opsched_graph_set_data(L->g, id, big, (size_t)C * es);
            free(buf);
            free(big);
            OS_TRY(st);
        }
        *out = id;
        return OPSCHED_OK;
    }
    OS_TRY(os_onnx_tensor_id(L, v, &id));
    opsched_shape g1 = {.ndim = 2, .d = {G, 1}};
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.shape.shape.ndim = 2;
    a.shape.shape.d[0] = G;
    a.shape.shape.d[1] = rep;
    char tag[32];
    snprintf(tag, sizeof(tag), "in%d_groups", k);
    OS_TRY(os_onnx_reshape(L, node, tag, id, &g1, OS_TMP, &id));
    snprintf(tag, sizeof(tag), "in%d_repeated", k);
    OS_TRY(os_onnx_step(L, node, tag, OS_TMP, OPSCHED_OP_EXPAND, &a, &id, 1, 1, &id));
    snprintf(tag, sizeof(tag), "in%d_channels", k);
    return os_onnx_reshape(L, node, tag, id, &sc, OS_TMP, out);
}

static opsched_status groupnorm(os_loader *L, int node, int instance)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.groupnorm.epsilon = 1e-5f;
    OS_TRY(os_onnx_attr_float(L, node, "epsilon", &a.groupnorm.epsilon));
    int ids[3];
    OS_TRY(os_onnx_in_id(L, node, 0, &ids[0]));
    const opsched_shape *x = &os_onnx_t(L, ids[0])->shape;
    if (x->ndim < 3) return bad(L, node, "the input must be N, C, spatial...");
    int64_t C = x->d[1];
    if (instance) {
        a.groupnorm.groups = C;
    } else {
        if (!os_onnx_attr(L->gp->node[node], "num_groups"))
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE,
                                     "attribute 'num_groups' is required");
        OS_TRY(os_onnx_attr_int(L, node, "num_groups", &a.groupnorm.groups));
        int64_t G = a.groupnorm.groups;
        if (G < 1 || C % G != 0) {
            char m[128];
            snprintf(m, sizeof(m), "%lld channels do not divide into %lld groups", (long long)C,
                     (long long)G);
            return bad(L, node, m);
        }
        if (L->opset < 21 && G != C) {
            OS_TRY(per_channel(L, node, 1, G, C, &ids[1]));
            OS_TRY(per_channel(L, node, 2, G, C, &ids[2]));
            return os_onnx_step(L, node, "norm", 0, OPSCHED_OP_GROUPNORM, &a, ids, 3, 1, NULL);
        }
    }
    OS_TRY(os_onnx_in_id(L, node, 1, &ids[1]));
    OS_TRY(os_onnx_in_id(L, node, 2, &ids[2]));
    return os_onnx_step(L, node, "norm", 0, OPSCHED_OP_GROUPNORM, &a, ids, 3, 1, NULL);
}

static opsched_status lp_norm(os_loader *L, int node)
{
    int64_t axis = -1, p = 2;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &axis));
    OS_TRY(os_onnx_attr_int(L, node, "p", &p));
    if (p != 1 && p != 2)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "p must be 1 or 2, not %lld",
                                 (long long)p);
    int x, n;
    OS_TRY(os_onnx_in_id(L, node, 0, &x));
    OS_TRY(os_onnx_axis(L, node, axis, os_onnx_t(L, x)->shape.ndim, &axis));
    OS_TRY(os_onnx_reduce(L, node, "norm", p == 1 ? OPSCHED_REDUCE_L1 : OPSCHED_REDUCE_L2, x, &axis,
                          1, 1, OS_TMP, &n));
    /* A zero vector stays zero (0/0 would be NaN). */
    int q, zero, ids[3];
    OS_TRY(os_onnx_binop(L, node, "div", OPSCHED_OP_DIV, x, n, OS_TMP, &q));
    OS_TRY(os_onnx_scalar(L, node, "zero", os_onnx_t(L, x)->dtype, 0.0, &zero));
    OS_TRY(os_onnx_binfn(L, node, "zero_norm", OPSCHED_BINARY_EQUAL, n, zero, OS_TMP, &ids[0]));
    ids[1] = zero;
    ids[2] = q;
    return os_onnx_step(L, node, "normalized", 0, OPSCHED_OP_WHERE, NULL, ids, 3, 1, NULL);
}

/* As MeanVarianceNormalization's function body: (X - E[X]) / (sqrt(E[X^2]
 * - E[X]^2) + 1e-9). */
static opsched_status mvn(os_loader *L, int node)
{
    int64_t axes[OPSCHED_MAX_DIMS] = {0, 2, 3};
    int n = 3, x, mean, msq, x2, ex2, var, sd, diff, eps, den;
    OS_TRY(os_onnx_attr_ints(L, node, "axes", axes, OPSCHED_MAX_DIMS, &n));
    OS_TRY(os_onnx_in_id(L, node, 0, &x));
    int rank = os_onnx_t(L, x)->shape.ndim;
    for (int i = 0; i < n; i++)
        OS_TRY(os_onnx_axis(L, node, axes[i], rank, &axes[i]));
    opsched_dtype dt = os_onnx_t(L, x)->dtype;
    OS_TRY(os_onnx_reduce(L, node, "mean", OPSCHED_REDUCE_MEAN, x, axes, n, 1, OS_TMP, &mean));
    OS_TRY(os_onnx_binop(L, node, "mean_sq", OPSCHED_OP_MUL, mean, mean, OS_TMP, &msq));
    OS_TRY(os_onnx_binop(L, node, "sq", OPSCHED_OP_MUL, x, x, OS_TMP, &x2));
    OS_TRY(os_onnx_reduce(L, node, "sq_mean", OPSCHED_REDUCE_MEAN, x2, axes, n, 1, OS_TMP, &ex2));
    OS_TRY(os_onnx_binop(L, node, "var", OPSCHED_OP_SUB, ex2, msq, OS_TMP, &var));
    OS_TRY(os_onnx_step(L, node, "std", OS_TMP, OPSCHED_OP_SQRT, NULL, &var, 1, 1, &sd));
    OS_TRY(os_onnx_binop(L, node, "centred", OPSCHED_OP_SUB, x, mean, OS_TMP, &diff));
    OS_TRY(os_onnx_scalar(L, node, "epsilon", dt, 1e-9, &eps));
    OS_TRY(os_onnx_binop(L, node, "std_eps", OPSCHED_OP_ADD, sd, eps, OS_TMP, &den));
    return os_onnx_binop(L, node, "div", OPSCHED_OP_DIV, diff, den, 0, NULL);
}

/* RMSNormalization (opset 23): X * 1/sqrt(mean(X^2) + epsilon) * scale
 * over the axes from `axis` on; stash_type 1 computes the first part in
 * float32 and casts the result back to X's type. */
static opsched_status rms_norm(os_loader *L, int node)
{
    int64_t axis = -1, stash = 1;
    float eps = 1e-5f;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &axis));
    OS_TRY(os_onnx_attr_float(L, node, "epsilon", &eps));
    OS_TRY(os_onnx_attr_int(L, node, "stash_type", &stash));
    int x, scale, xc, sq, ms, e, me, rms, inv, nx;
    OS_TRY(os_onnx_in_id(L, node, 0, &x));
    OS_TRY(os_onnx_in_id(L, node, 1, &scale));
    const opsched_shape xs = os_onnx_t(L, x)->shape; /* tensors move as nodes are added */
    int rank = xs.ndim;
    opsched_dtype xdt = os_onnx_t(L, x)->dtype, cdt;
    OS_TRY(os_onnx_axis(L, node, axis, rank, &axis));
    if (stash == OS_ONNX_FLOAT)
        cdt = OPSCHED_F32;
    else if (stash == os_onnx_elem_of(xdt))
        cdt = xdt;
    else
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "stash_type %s is not supported (float, or the input's type)",
                                 os_onnx_elem_name((int32_t)stash));
    int64_t axes[OPSCHED_MAX_DIMS];
    int n = 0;
    for (int64_t d = axis; d < rank; d++)
        axes[n++] = d;
    OS_TRY(os_onnx_cast(L, node, "x_stash", x, cdt, OS_TMP, &xc));
    OS_TRY(os_onnx_binop(L, node, "sq", OPSCHED_OP_MUL, xc, xc, OS_TMP, &sq));
    OS_TRY(os_onnx_reduce(L, node, "mean_sq", OPSCHED_REDUCE_MEAN, sq, axes, n, 1, OS_TMP, &ms));
    OS_TRY(os_onnx_scalar(L, node, "epsilon", cdt, eps, &e));
    OS_TRY(os_onnx_binop(L, node, "mean_sq_eps", OPSCHED_OP_ADD, ms, e, OS_TMP, &me));
    OS_TRY(os_onnx_step(L, node, "rms", OS_TMP, OPSCHED_OP_SQRT, NULL, &me, 1, 1, &rms));
    OS_TRY(os_onnx_unfn(L, node, "inv_rms", OPSCHED_UNARY_RECIPROCAL, 0, 0, rms, OS_TMP, &inv));
    OS_TRY(os_onnx_binop(L, node, "normalized", OPSCHED_OP_MUL, xc, inv, OS_TMP, &nx));
    OS_TRY(os_onnx_cast(L, node, "normalized_x", nx, xdt, OS_TMP, &nx));
    opsched_shape o;
    OS_TRY(os_onnx_broadcast(L, node, &xs, &os_onnx_t(L, scale)->shape, &o));
    if (!opsched_shape_equal(&o, &xs))
        return bad(L, node, "the scale does not broadcast to the input");
    return os_onnx_binop(L, node, "scaled", OPSCHED_OP_MUL, nx, scale, 0, NULL);
}

opsched_status os_onnx_convert_norm(os_loader *L, int node, const char *op, int *done)
{
    *done = 1;
    if (strncmp(op, "Reduce", 6) == 0)
        for (size_t i = 0; i < OS_ARRAY_LEN(reduce_defs); i++)
            if (strcmp(reduce_defs[i].name, op) == 0) return reduce(L, node, op);
    if (strcmp(op, "ArgMax") == 0 || strcmp(op, "ArgMin") == 0) return arg(L, node, op[4] == 'a');
    if (strcmp(op, "CumSum") == 0) return cumsum(L, node);
    if (strcmp(op, "TopK") == 0) return topk(L, node);
    if (strcmp(op, "BatchNormalization") == 0) return batchnorm(L, node);
    if (strcmp(op, "LayerNormalization") == 0) return layernorm(L, node);
    if (strcmp(op, "InstanceNormalization") == 0) return groupnorm(L, node, 1);
    if (strcmp(op, "GroupNormalization") == 0) return groupnorm(L, node, 0);
    if (strcmp(op, "LpNormalization") == 0) return lp_norm(L, node);
    if (strcmp(op, "MeanVarianceNormalization") == 0) return mvn(L, node);
    if (strcmp(op, "RMSNormalization") == 0) return rms_norm(L, node);
    *done = 0;
    return OPSCHED_OK;
}
