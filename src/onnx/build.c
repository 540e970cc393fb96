/*
 * build.c - the graph nodes of decompositions.
 *
 * An ONNX operator the graph has no kind for becomes a few graph nodes
 * (LpPool: Abs, Pow, AveragePool, Mul, Pow).  Every step but the last gets
 * a tensor of its own, named "<first output>/<tag>" (made unique), and a
 * node named "<node>/<tag>"; the last step's outputs take the names the
 * file gives them, so the rest of the model reads them as usual.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

const opsched_tensor *os_onnx_t(const os_loader *L, int id)
{
    return opsched_graph_tensor(L->g, id);
}

opsched_status os_onnx_in_id(os_loader *L, int node, int k, int *out)
{
    int v = os_onnx_in(L, node, k);
    if (v < 0) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "input %d is missing", k);
    return os_onnx_tensor_id(L, v, out);
}

void os_onnx_bind(os_loader *L, int node, int k, int id)
{
    int v = os_onnx_out(L, node, k);
    if (v < 0) return;
    const opsched_tensor *t = opsched_graph_tensor(L->g, id);
    os_val *x = &L->vals[v];
    x->id = id;
    x->role = OS_ROLE_ACT;
    x->has_shape = 1;
    x->shape = t->shape;
    x->elem = os_onnx_elem_of(t->dtype);
    x->alias = -1;
}

/* 1 when name is free both in the graph and among the model's own names
 * (which the graph may not hold yet). */
static int name_free(const os_loader *L, const char *name)
{
    int id;
    if (opsched_graph_find_tensor(L->g, name, &id) == OPSCHED_OK) return 0;
    for (const os_loader *p = L; p; p = p->parent)
        if (os_onnx_find(p, name) >= 0) return 0;
    return 1;
}

/* "<base>/<tag>", or "<base>/<tag>_<n>" when that is taken. */
static opsched_status fresh_name(os_loader *L, int node, const char *tag, char *buf, size_t size)
{
    char lbl[96];
    int v = os_onnx_out(L, node, 0);
    const char *base =
        v >= 0 ? L->vals[v].name : os_onnx_node_label(L->gp->node[node], node, lbl, sizeof(lbl));
    /* Long names are cut so that the suffix always fits. */
    snprintf(buf, size, "%.200s/%.60s", base, tag);
    for (int n = 2; !name_free(L, buf); n++) {
        if (n > 100000)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "no free tensor name for '%s'",
                                     tag);
        snprintf(buf, size, "%.200s/%.60s_%d", base, tag, n);
    }
    return OPSCHED_OK;
}

opsched_status os_onnx_step(os_loader *L, int node, const char *tag, int out_k, opsched_op_kind op,
                            const opsched_op_attr *attr, const int *ids, int n_in, int n_out,
                            int *out)
{
    enum { MAX_OUT = 4 };
    if (n_out < 1 || n_out > MAX_OUT)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, "%d outputs", n_out);
    char names[MAX_OUT][320];
    const char *np[MAX_OUT];
    for (int k = 0; k < n_out; k++) {
        int v = out_k >= 0 ? os_onnx_out(L, node, out_k + k) : -1;
        if (v >= 0) {
            np[k] = L->vals[v].name;
        } else {
            char t[64];
            snprintf(t, sizeof(t), n_out > 1 ? "%s%d" : "%s", tag, k);
            OS_TRY(fresh_name(L, node, t, names[k], sizeof(names[k])));
            np[k] = names[k];
        }
    }
    char lbl[96], nname[256];
    const char *label = os_onnx_node_label(L->gp->node[node], node, lbl, sizeof(lbl));
    if (out_k >= 0)
        snprintf(nname, sizeof(nname), "%s", label);
    else
        snprintf(nname, sizeof(nname), "%s/%s", label, tag);
    int got[MAX_OUT];
    OS_TRY(opsched_graph_add_node(L->g, nname, op, attr, ids, n_in, n_out, np, got));
    for (int k = 0; k < n_out; k++) {
        if (out_k >= 0) os_onnx_bind(L, node, out_k + k, got[k]);
        if (out) out[k] = got[k];
    }
    return OPSCHED_OK;
}

/* Finishes a step that changed nothing: x is the result. */
static opsched_status same(os_loader *L, int node, int x, int out_k, int *out)
{
    if (out_k >= 0) os_onnx_bind(L, node, out_k, x);
    if (out) *out = x;
    return OPSCHED_OK;
}

opsched_status os_onnx_const(os_loader *L, int node, const char *tag, opsched_dtype dt,
                             const opsched_shape *shape, const double *f, const int64_t *i,
                             int *out)
{
    opsched_status st = OPSCHED_OK;
    os_cval tmp;
    memset(&tmp, 0, sizeof(tmp));
    tmp.elem = os_onnx_elem_of(dt);
    tmp.shape = *shape;
    tmp.n = opsched_shape_numel(shape);
    tmp.is_float = f != NULL;
    tmp.f = (double *)f;
    tmp.i = (int64_t *)i;
    if (tmp.n < 0 || tmp.n > OS_ONNX_FOLD_MAX_ELEMS || (!f && !i))
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "a constant of %lld elements is too large", (long long)tmp.n);
    char name[320];
    OS_TRY(fresh_name(L, node, tag, name, sizeof(name)));
    void *buf = NULL;
    size_t bytes = 0;
    OS_TRY(os_onnx_cval_payload(L->ctx, &tmp, dt, &buf, &bytes));
    int id;
    OS_TRY_GOTO(st, opsched_graph_add_tensor(L->g, name, OPSCHED_TENSOR_CONSTANT, dt, shape, &id),
                done);
    OS_TRY_GOTO(st, opsched_graph_set_data(L->g, id, buf, bytes), done);
    *out = id;
done:
    free(buf);
    return st;
}

opsched_status os_onnx_scalar(os_loader *L, int node, const char *tag, opsched_dtype dt, double v,
                              int *out)
{
    opsched_shape s = {0};
    if (opsched_dtype_is_float(dt)) return os_onnx_const(L, node, tag, dt, &s, &v, NULL, out);
    int64_t i = isnan(v) ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
    return os_onnx_const(L, node, tag, dt, &s, NULL, &i, out);
}

opsched_status os_onnx_reshape(os_loader *L, int node, const char *tag, int x,
                               const opsched_shape *to, int out_k, int *out)
{
    if (opsched_shape_equal(&os_onnx_t(L, x)->shape, to)) return same(L, node, x, out_k, out);
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.shape.shape = *to;
    return os_onnx_step(L, node, tag, out_k, OPSCHED_OP_RESHAPE, &a, &x, 1, 1, out);
}

opsched_status os_onnx_transpose(os_loader *L, int node, const char *tag, int x,
                                 const int64_t *perm, int out_k, int *out)
{
    int rank = os_onnx_t(L, x)->shape.ndim, moves = 0;
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.transpose.n = rank;
    for (int d = 0; d < rank; d++) {
        a.transpose.perm[d] = perm[d];
        if (perm[d] != d) moves = 1;
    }
    if (!moves) return same(L, node, x, out_k, out);
    /* Moving only axes of size 1 is a reshape (no data moves). */
    const opsched_shape *s = &os_onnx_t(L, x)->shape;
    int64_t last = -1;
    int order_kept = 1;
    for (int d = 0; d < rank; d++) {
        if (s->d[perm[d]] == 1) continue;
        if (perm[d] < last) order_kept = 0;
        last = perm[d];
    }
    if (order_kept) {
        opsched_shape o = {.ndim = rank};
        for (int d = 0; d < rank; d++)
            o.d[d] = s->d[perm[d]];
        return os_onnx_reshape(L, node, tag, x, &o, out_k, out);
    }
    return os_onnx_step(L, node, tag, out_k, OPSCHED_OP_TRANSPOSE, &a, &x, 1, 1, out);
}

opsched_status os_onnx_cast(os_loader *L, int node, const char *tag, int x, opsched_dtype to,
                            int out_k, int *out)
{
    if (os_onnx_t(L, x)->dtype == to) return same(L, node, x, out_k, out);
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.cast.to = to;
    return os_onnx_step(L, node, tag, out_k, OPSCHED_OP_CAST, &a, &x, 1, 1, out);
}

opsched_status os_onnx_in_id_as(os_loader *L, int node, int k, const char *tag, opsched_dtype dt,
                                int *out)
{
    const os_cval *cv = os_onnx_in_cval(L, node, k);
    if (cv && os_onnx_elem_of(dt) != cv->elem && cv->n <= OS_ONNX_FOLD_MAX_ELEMS)
        return os_onnx_const(L, node, tag, dt, &cv->shape, cv->is_float ? cv->f : NULL,
                             cv->is_float ? NULL : cv->i, out);
    int id;
    OS_TRY(os_onnx_in_id(L, node, k, &id));
    return os_onnx_cast(L, node, tag, id, dt, OS_TMP, out);
}

opsched_status os_onnx_binop(os_loader *L, int node, const char *tag, opsched_op_kind op, int a,
                             int b, int out_k, int *out)
{
    int ids[2] = {a, b};
    return os_onnx_step(L, node, tag, out_k, op, NULL, ids, 2, 1, out);
}

opsched_status os_onnx_binfn(os_loader *L, int node, const char *tag, opsched_binary_fn fn, int a,
                             int b, int out_k, int *out)
{
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    at.binary.fn = fn;
    int ids[2] = {a, b};
    return os_onnx_step(L, node, tag, out_k, OPSCHED_OP_BINARY, &at, ids, 2, 1, out);
}

opsched_status os_onnx_unfn(os_loader *L, int node, const char *tag, opsched_unary_fn fn,
                            float alpha, float beta, int x, int out_k, int *out)
{
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    at.unary.fn = fn;
    at.unary.alpha = alpha;
    at.unary.beta = beta;
    return os_onnx_step(L, node, tag, out_k, OPSCHED_OP_UNARY, &at, &x, 1, 1, out);
}

opsched_status os_onnx_reduce(os_loader *L, int node, const char *tag, opsched_reduce_fn fn, int x,
                              const int64_t *axes, int n, int keepdims, int out_k, int *out)
{
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    if (n < 0 || n > OPSCHED_MAX_DIMS)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, "%d axes", n);
    at.reduce.fn = fn;
    at.reduce.n_axes = n;
    at.reduce.keepdims = keepdims != 0;
    for (int i = 0; i < n; i++)
        at.reduce.axes[i] = axes[i];
    opsched_op_kind op = fn == OPSCHED_REDUCE_MEAN ? OPSCHED_OP_REDUCEMEAN : OPSCHED_OP_REDUCE;
    return os_onnx_step(L, node, tag, out_k, op, &at, &x, 1, 1, out);
}

opsched_status os_onnx_slice(os_loader *L, int node, const char *tag, int x, int axis,
                             int64_t start, int64_t end, int64_t step, int out_k, int *out)
{
    const opsched_shape *s = &os_onnx_t(L, x)->shape;
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    for (int d = 0; d < s->ndim; d++) {
        a.slice.ends[d] = s->d[d];
        a.slice.steps[d] = 1;
    }
    if (axis < 0 || axis >= s->ndim)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "axis %d out of range", axis);
    if (start == 0 && end >= s->d[axis] && step == 1) return same(L, node, x, out_k, out);
    a.slice.starts[axis] = start;
    a.slice.ends[axis] = end;
    a.slice.steps[axis] = step;
    return os_onnx_step(L, node, tag, out_k, OPSCHED_OP_SLICE, &a, &x, 1, 1, out);
}
