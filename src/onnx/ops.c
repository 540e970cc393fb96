/*
 * ops.c - ONNX operators to graph nodes: the values that become graph
 * tensors when a node first reads them (weights and constants are created
 * lazily, so weights that only feed shape arithmetic never appear in the
 * graph), the operators with a kind of their own that need no more than
 * their attributes (Gemm, MatMul, Clip, the Softmax family, Concat, the
 * element-wise kinds Add..Pow, Relu..Sqrt, LRN, the global pools), and the
 * dispatch to the files of the other families.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

/* ---- values and graph tensors ----------------------------------------- */

opsched_status os_onnx_tensor_id(os_loader *L, int v, int *out)
{
    opsched_status st = OPSCHED_OK;
    void *buf = NULL;
    size_t bytes = 0;
    v = os_onnx_root(L, v);
    os_val *x = &L->vals[v];
    if (x->id >= 0) {
        *out = x->id;
        return OPSCHED_OK;
    }
    int is_data = x->cv || x->role == OS_ROLE_WEIGHT || x->role == OS_ROLE_CONST;
    if (!is_data || (!x->cv && !x->has_shape))
        return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "tensor '%s' is read before it is computed",
                       x->name);
    opsched_tensor_kind kind =
        x->role == OS_ROLE_WEIGHT ? OPSCHED_TENSOR_WEIGHT : OPSCHED_TENSOR_CONSTANT;
    int32_t elem = x->cv ? x->cv->elem : x->elem;
    opsched_dtype dt;
    OS_TRY(os_onnx_dtype(L->ctx, elem, x->name, &dt));
    const opsched_shape *shape = x->cv ? &x->cv->shape : &x->shape;
    int id;
    OS_TRY(opsched_graph_add_tensor(L->g, x->name, kind, dt, shape, &id));
    if (x->given) {
        /* The user's value, whatever load_weights says. */
        OS_TRY_GOTO(st, os_onnx_given_payload(L, v, dt, &buf, &bytes), done);
        OS_TRY_GOTO(st, opsched_graph_set_data(L->g, id, buf, bytes), done);
    } else if (kind == OPSCHED_TENSOR_CONSTANT || L->opts.load_weights) {
        if (x->init)
            OS_TRY_GOTO(st, os_onnx_tensor_payload(L, x->init, x->name, dt, &buf, &bytes), done);
        else if (x->cv)
            OS_TRY_GOTO(st, os_onnx_cval_payload(L->ctx, x->cv, dt, &buf, &bytes), done);
        if (buf) OS_TRY_GOTO(st, opsched_graph_set_data(L->g, id, buf, bytes), done);
    }
    x->id = id;
    *out = id;
done:
    free(buf);
    return st;
}

opsched_status os_onnx_shape_of(os_loader *L, int node, int v, opsched_shape *out)
{
    int r = os_onnx_root(L, v);
    if (r < 0) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "a required input is missing");
    const os_val *x = &L->vals[r];
    if (x->id >= 0) {
        *out = opsched_graph_tensor(L->g, x->id)->shape;
        return OPSCHED_OK;
    }
    if (x->cv) {
        *out = x->cv->shape;
        return OPSCHED_OK;
    }
    if (x->has_shape) {
        *out = x->shape;
        return OPSCHED_OK;
    }
    return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "input '%s' has no known shape", x->name);
}

const os_cval *os_onnx_in_cval(const os_loader *L, int node, int k)
{
    int v = os_onnx_root(L, os_onnx_in(L, node, k));
    if (v < 0) return NULL;
    /* A value known only because it was given is a constant only where the
     * load needs it; elsewhere it is run-time data. */
    if (L->taint && L->taint[v] && !os_onnx_load_slot(L->gp->node[node]->op_type, k) &&
        !os_onnx_node_needed(L, node))
        return NULL;
    return L->vals[v].cv;
}

opsched_status os_onnx_in_ints(os_loader *L, int node, int k, const char *what, int64_t *out,
                               int max, int *n)
{
    int v = os_onnx_in(L, node, k);
    *n = -1;
    if (v < 0) return OPSCHED_OK;
    const os_cval *cv = L->vals[os_onnx_root(L, v)].cv;
    if (!cv)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "'%s' (input %d, '%s') must be known when the model is loaded, "
                                 "but it is computed at run time",
                                 what, k, L->vals[v].name);
    if (cv->is_float || cv->shape.ndim > 1)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE,
                                 "'%s' (input %d) must be a vector of integers", what, k);
    if (cv->n > max)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "'%s' (input %d) has %lld values (at most %d supported)", what, k,
                                 (long long)cv->n, max);
    for (int64_t i = 0; i < cv->n; i++)
        out[i] = cv->i[i];
    *n = (int)cv->n;
    return OPSCHED_OK;
}

opsched_status os_onnx_axis(os_loader *L, int node, int64_t axis, int rank, int64_t *out)
{
    if (axis < -rank || axis >= rank)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                 "axis %lld is out of range for rank %d", (long long)axis, rank);
    *out = axis < 0 ? axis + rank : axis;
    return OPSCHED_OK;
}

void os_onnx_alias(os_loader *L, int node, int k, int v)
{
    int o = os_onnx_out(L, node, k);
    if (o >= 0 && o != v) L->vals[o].alias = os_onnx_root(L, v);
}

opsched_status os_onnx_emit(os_loader *L, int node, opsched_op_kind op, const opsched_op_attr *attr,
                            const int *in_vals, int n_in, int n_out)
{
    opsched_status st = OPSCHED_OK;
    int *ids = malloc(sizeof(int) * (size_t)(n_in > 0 ? n_in : 1));
    const char **names = malloc(sizeof(char *) * (size_t)(n_out > 0 ? n_out : 1));
    int *out_ids = malloc(sizeof(int) * (size_t)(n_out > 0 ? n_out : 1));
    if (!ids || !names || !out_ids) {
        st = OS_NOMEM(L->ctx);
        goto done;
    }
    for (int k = 0; k < n_in; k++) {
        ids[k] = -1;
        if (in_vals[k] >= 0) OS_TRY_GOTO(st, os_onnx_tensor_id(L, in_vals[k], &ids[k]), done);
    }
    for (int k = 0; k < n_out; k++) {
        int v = os_onnx_out(L, node, k);
        names[k] = v >= 0 ? L->vals[v].name : NULL; /* NULL: the graph names it "<node>:<k>" */
    }
    char buf[96];
    const char *label = os_onnx_node_label(L->gp->node[node], node, buf, sizeof(buf));
    OS_TRY_GOTO(st, opsched_graph_add_node(L->g, label, op, attr, ids, n_in, n_out, names, out_ids),
                done);
    for (int k = 0; k < n_out; k++) {
        int v = os_onnx_out(L, node, k);
        if (v < 0) continue;
        const opsched_tensor *t = opsched_graph_tensor(L->g, out_ids[k]);
        os_val *x = &L->vals[v];
        x->id = out_ids[k];
        x->role = OS_ROLE_ACT;
        x->has_shape = 1;
        x->shape = t->shape;
        x->elem = os_onnx_elem_of(t->dtype);
    }
done:
    free(ids);
    free(names);
    free(out_ids);
    return st;
}

/* Refuses a node whose output would hold more than 2^40 elements, given
 * an upper bound of its element count as factors; hostile pads or
 * broadcasts must not reach the graph's byte and FLOP arithmetic. */
static opsched_status bound_ok(os_loader *L, int node, const int64_t *f, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        if (f[i] < 0 || !os_mul_ok(p, f[i], &p) || p > OS_ONNX_MAX_NUMEL)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "the output would be too large");
    return OPSCHED_OK;
}

/* ---- the rest ------------------------------------------------------------ */

static opsched_status gemm(os_loader *L, int node)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    int64_t ta = 0, tb = 0;
    a.gemm.alpha = a.gemm.beta = 1.0f;
    OS_TRY(os_onnx_attr_float(L, node, "alpha", &a.gemm.alpha));
    OS_TRY(os_onnx_attr_float(L, node, "beta", &a.gemm.beta));
    OS_TRY(os_onnx_attr_int(L, node, "transA", &ta));
    OS_TRY(os_onnx_attr_int(L, node, "transB", &tb));
    a.gemm.trans_a = ta != 0;
    a.gemm.trans_b = tb != 0;
    int ins[3] = {os_onnx_in(L, node, 0), os_onnx_in(L, node, 1), os_onnx_in(L, node, 2)};
    opsched_shape A, B;
    OS_TRY(os_onnx_shape_of(L, node, ins[0], &A));
    OS_TRY(os_onnx_shape_of(L, node, ins[1], &B));
    if (A.ndim == 2 && B.ndim == 2) {
        int64_t f[2] = {A.d[ta ? 1 : 0], B.d[tb ? 0 : 1]};
        OS_TRY(bound_ok(L, node, f, 2));
    }
    return os_onnx_emit(L, node, OPSCHED_OP_GEMM, &a, ins, ins[2] >= 0 ? 3 : 2, 1);
}

/* Clip with a bound computed at run time: Max(x, min), then Min(., max). */
static opsched_status clip_tensors(os_loader *L, int node)
{
    int x, b;
    OS_TRY(os_onnx_in_id(L, node, 0, &x));
    int has_max = os_onnx_in(L, node, 2) >= 0;
    if (os_onnx_in(L, node, 1) >= 0) {
        OS_TRY(os_onnx_in_id(L, node, 1, &b));
        if (opsched_shape_numel(&os_onnx_t(L, b)->shape) != 1)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "min must be a scalar");
        OS_TRY(os_onnx_binfn(L, node, "min", OPSCHED_BINARY_MAX, x, b, has_max ? OS_TMP : 0, &x));
    }
    if (!has_max) return OPSCHED_OK;
    OS_TRY(os_onnx_in_id(L, node, 2, &b));
    if (opsched_shape_numel(&os_onnx_t(L, b)->shape) != 1)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "max must be a scalar");
    return os_onnx_binfn(L, node, "max", OPSCHED_BINARY_MIN, x, b, 0, NULL);
}

static opsched_status clip(os_loader *L, int node)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.clip.min = -FLT_MAX;
    a.clip.max = FLT_MAX;
    if (L->opset < 11) {
        OS_TRY(os_onnx_attr_float(L, node, "min", &a.clip.min));
        OS_TRY(os_onnx_attr_float(L, node, "max", &a.clip.max));
    } else {
        /* Bounds known only at run time, or integer bounds a float cannot
         * hold exactly, are compared as tensors. */
        for (int k = 1; k <= 2; k++) {
            if (os_onnx_in(L, node, k) < 0) continue;
            const os_cval *cv = os_onnx_in_cval(L, node, k);
            if (!cv || (!cv->is_float && cv->n == 1 && (double)(float)cv->i[0] != (double)cv->i[0]))
                return clip_tensors(L, node);
        }
        for (int k = 1; k <= 2; k++) {
            if (os_onnx_in(L, node, k) < 0) continue;
            const os_cval *cv = os_onnx_in_cval(L, node, k);
            if (cv->n != 1)
                return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "%s must be a scalar",
                                         k == 1 ? "min" : "max");
            double v = os_onnx_cval_float(cv, 0);
            v = v < -FLT_MAX ? -FLT_MAX : (v > FLT_MAX ? FLT_MAX : v);
            if (k == 1)
                a.clip.min = (float)v;
            else
                a.clip.max = (float)v;
        }
    }
    int x = os_onnx_in(L, node, 0);
    return os_onnx_emit(L, node, OPSCHED_OP_CLIP, &a, &x, 1, 1);
}

/* Softmax, LogSoftmax and Hardmax. */
static opsched_status softmax(os_loader *L, int node, opsched_op_kind op)
{
    int x = os_onnx_in(L, node, 0);
    opsched_shape s;
    OS_TRY(os_onnx_shape_of(L, node, x, &s));
    int64_t axis = L->opset < 13 ? 1 : -1;
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    OS_TRY(os_onnx_attr_int(L, node, "axis", &axis));
    OS_TRY(os_onnx_axis(L, node, axis, s.ndim, &a.axis.axis));
    if (L->opset < 13) {
        /* Before opset 13 these flatten to 2-D at axis; that is the op over
         * axis alone only when nothing follows it. */
        int64_t after = 1;
        for (int d = (int)a.axis.axis + 1; d < s.ndim; d++)
            after *= s.d[d];
        if (after != 1)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                     "opset %lld %s over the flattened axes %lld.. of a "
                                     "rank-%d input is not supported (re-export with opset 13+)",
                                     (long long)L->opset, opsched_op_name(op),
                                     (long long)a.axis.axis, s.ndim);
    }
    return os_onnx_emit(L, node, op, &a, &x, 1, 1);
}

static opsched_status concat(os_loader *L, int node)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    const Onnx__AttributeProto *ax = os_onnx_attr(L->gp->node[node], "axis");
    if (!ax) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "attribute 'axis' is required");
    OS_TRY(os_onnx_attr_int(L, node, "axis", &a.axis.axis));
    int n = os_onnx_num_in(L, node);
    for (int k = 0; k < n; k++)
        if (os_onnx_in(L, node, k) < 0)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "input %d is empty", k);
    if (n == 0) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "no inputs");
    return os_onnx_emit(L, node, OPSCHED_OP_CONCAT, &a, &L->in_val[L->in_off[node]], n, 1);
}

static opsched_status unary(os_loader *L, int node, opsched_op_kind op)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    if (op == OPSCHED_OP_HARDSIGMOID) {
        a.hardsigmoid.alpha = 0.2f;
        a.hardsigmoid.beta = 0.5f;
        OS_TRY(os_onnx_attr_float(L, node, "alpha", &a.hardsigmoid.alpha));
        OS_TRY(os_onnx_attr_float(L, node, "beta", &a.hardsigmoid.beta));
    } else if (op == OPSCHED_OP_GELU) {
        char buf[16];
        const char *approx = "none";
        OS_TRY(os_onnx_attr_string(L, node, "approximate", buf, sizeof(buf), &approx));
        if (strcmp(approx, "tanh") == 0)
            a.gelu.tanh_approx = 1;
        else if (strcmp(approx, "none") != 0)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "unknown approximate '%s'",
                                     approx);
    } else if (op == OPSCHED_OP_LRN) {
        a.lrn.alpha = 1e-4f;
        a.lrn.beta = 0.75f;
        a.lrn.bias = 1.0f;
        OS_TRY(os_onnx_attr_int(L, node, "size", &a.lrn.size));
        OS_TRY(os_onnx_attr_float(L, node, "alpha", &a.lrn.alpha));
        OS_TRY(os_onnx_attr_float(L, node, "beta", &a.lrn.beta));
        OS_TRY(os_onnx_attr_float(L, node, "bias", &a.lrn.bias));
    }
    int x = os_onnx_in(L, node, 0);
    return os_onnx_emit(L, node, op, &a, &x, 1, 1);
}

/* Bounds the output of an element-wise op (the broadcast shape) or of
 * MatMul (broadcast batch times M times N). */
static opsched_status binary_bound(os_loader *L, int node, opsched_op_kind op, const int *ins)
{
    opsched_shape a, b, o;
    OS_TRY(os_onnx_shape_of(L, node, ins[0], &a));
    OS_TRY(os_onnx_shape_of(L, node, ins[1], &b));
    if (op != OPSCHED_OP_MATMUL) {
        OS_TRY(os_onnx_broadcast(L, node, &a, &b, &o));
        return os_onnx_check_dims(L, node, &o);
    }
    if (a.ndim < 2 || b.ndim < 2) return OPSCHED_OK; /* no larger than an input */
    int64_t m = a.d[a.ndim - 2], n = b.d[b.ndim - 1];
    a.ndim -= 2;
    b.ndim -= 2;
    if (os_onnx_broadcast(L, node, &a, &b, &o) != OPSCHED_OK) {
        opsched_ctx_clear_error(L->ctx); /* the graph reports it, with the shapes */
        return OPSCHED_OK;
    }
    int64_t f[3] = {opsched_shape_numel(&o), m, n};
    return bound_ok(L, node, f, 3);
}

typedef struct op_entry {
    const char *name;
    opsched_op_kind op;
    int arity; /* 1 unary, 2 binary, 0 special */
} op_entry;

static const op_entry op_table[] = {
    {"Gemm", OPSCHED_OP_GEMM, 0},
    {"MatMul", OPSCHED_OP_MATMUL, 2},
    {"GlobalAveragePool", OPSCHED_OP_GLOBALAVGPOOL, 1},
    {"GlobalMaxPool", OPSCHED_OP_GLOBALMAXPOOL, 1},
    {"Relu", OPSCHED_OP_RELU, 1},
    {"Clip", OPSCHED_OP_CLIP, 0},
    {"Sigmoid", OPSCHED_OP_SIGMOID, 1},
    {"Tanh", OPSCHED_OP_TANH, 1},
    {"Gelu", OPSCHED_OP_GELU, 1},
    {"Erf", OPSCHED_OP_ERF, 1},
    {"HardSigmoid", OPSCHED_OP_HARDSIGMOID, 1},
    {"HardSwish", OPSCHED_OP_HARDSWISH, 1},
    {"Sqrt", OPSCHED_OP_SQRT, 1},
    {"Add", OPSCHED_OP_ADD, 2},
    {"Sub", OPSCHED_OP_SUB, 2},
    {"Mul", OPSCHED_OP_MUL, 2},
    {"Div", OPSCHED_OP_DIV, 2},
    {"Pow", OPSCHED_OP_POW, 2},
    {"Concat", OPSCHED_OP_CONCAT, 0},
    {"Softmax", OPSCHED_OP_SOFTMAX, 0},
    {"LogSoftmax", OPSCHED_OP_LOGSOFTMAX, 0},
    {"Hardmax", OPSCHED_OP_HARDMAX, 0},
    {"LRN", OPSCHED_OP_LRN, 1},
};

typedef opsched_status (*family_fn)(os_loader *L, int node, const char *op, int *done);

opsched_status os_onnx_convert(os_loader *L, int node)
{
    static const family_fn families[] = {
        os_onnx_convert_view,   os_onnx_convert_math,   os_onnx_convert_norm,
        os_onnx_convert_window, os_onnx_convert_resize, os_onnx_convert_attention,
        os_onnx_convert_einsum, os_onnx_convert_lstm,
    };
    const char *op = L->gp->node[node]->op_type;
    if (strcmp(op, "If") == 0) return os_onnx_inline_if(L, node);
    for (size_t i = 0; i < OS_ARRAY_LEN(families); i++) {
        int done = 0;
        OS_TRY(families[i](L, node, op, &done));
        if (done) return OPSCHED_OK;
    }
    const op_entry *e = NULL;
    for (size_t i = 0; i < OS_ARRAY_LEN(op_table); i++)
        if (strcmp(op_table[i].name, op) == 0) e = &op_table[i];
    if (!e) return os_onnx_unsupported_op(L, node);
    if (os_onnx_in(L, node, 0) < 0)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "the first input is missing");
    /* Ops with one output: further outputs are optional ones we do not make. */
    if (e->arity == 1 || e->arity == 2) {
        if (os_onnx_num_out(L, node) < 1 || os_onnx_out(L, node, 0) < 0)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "no output");
    }
    if (e->arity == 2) {
        int ins[2] = {os_onnx_in(L, node, 0), os_onnx_in(L, node, 1)};
        if (ins[1] < 0)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "the second input is missing");
        OS_TRY(binary_bound(L, node, e->op, ins));
        return os_onnx_emit(L, node, e->op, NULL, ins, 2, 1);
    }
    if (e->arity == 1) return unary(L, node, e->op);
    switch (e->op) {
    case OPSCHED_OP_GEMM:
        return gemm(L, node);
    case OPSCHED_OP_CLIP:
        return clip(L, node);
    case OPSCHED_OP_CONCAT:
        return concat(L, node);
    default:
        return softmax(L, node, e->op);
    }
}
