/*
 * fold.c - evaluating shape arithmetic while loading.
 *
 * Exporters compute shapes at run time (Shape -> Gather -> Unsqueeze ->
 * Concat -> Reshape) even when every size is static.  A node whose operands
 * are all known here, and whose result is small, is evaluated on the host
 * and becomes a constant instead of a graph node; Shape and Size need only
 * the static shape of their input, which every tensor has.  Integers follow
 * ONNX integer semantics (wrapping, truncating division), floats are
 * rounded to their own precision after each op.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

opsched_status os_onnx_cval_new(os_loader *L, int32_t elem, const opsched_shape *shape,
                                os_cval **out)
{
    *out = NULL;
    int64_t n = opsched_shape_numel(shape);
    if (n < 0 || n > OS_ONNX_FOLD_MAX_ELEMS) {
        L->fold_too_big = 1;
        return OS_FAIL(L->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "a constant of %lld elements is too large to evaluate", (long long)n);
    }
    if (L->fold_used + n > OS_ONNX_FOLD_BUDGET)
        return OS_FAIL(L->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "constant folding needs more than %lld elements in all",
                       (long long)OS_ONNX_FOLD_BUDGET);
    OS_TRY(os_grow(L->ctx, (void **)&L->cvs, &L->cap_cvs, L->n_cvs + 1, sizeof(*L->cvs)));
    os_cval *cv = calloc(1, sizeof(*cv));
    if (!cv) return OS_NOMEM(L->ctx);
    cv->elem = elem;
    cv->shape = *shape;
    cv->n = n;
    cv->is_float = os_onnx_elem_is_float(elem);
    if (cv->is_float)
        cv->f = calloc((size_t)(n ? n : 1), sizeof(double));
    else
        cv->i = calloc((size_t)(n ? n : 1), sizeof(int64_t));
    if (!cv->f && !cv->i) {
        free(cv);
        return OS_NOMEM(L->ctx);
    }
    L->cvs[L->n_cvs++] = cv;
    L->fold_used += n;
    *out = cv;
    return OPSCHED_OK;
}

int64_t os_onnx_cval_int(const os_cval *cv, int64_t k)
{
    return cv->is_float ? os_onnx_float_to_int(cv->f[k]) : cv->i[k];
}

double os_onnx_cval_float(const os_cval *cv, int64_t k)
{
    return cv->is_float ? cv->f[k] : (double)cv->i[k];
}

/* Stores x into element k, converted to the constant's type. */
static void put(os_cval *cv, int64_t k, double f, int64_t i, int is_float)
{
    if (cv->is_float)
        cv->f[k] = os_onnx_round_to(cv->elem, is_float ? f : (double)i);
    else
        cv->i[k] = os_onnx_wrap_int(cv->elem, is_float ? os_onnx_float_to_int(f) : i);
}

static void copy_elem(os_cval *dst, int64_t k, const os_cval *src, int64_t j)
{
    if (src->is_float)
        put(dst, k, src->f[j], 0, 1);
    else
        put(dst, k, 0, src->i[j], 0);
}

static void set_out(os_loader *L, int node, int k, os_cval *cv)
{
    int v = os_onnx_out(L, node, k);
    if (v < 0) return;
    os_val *x = &L->vals[v];
    x->cv = cv;
    x->role = OS_ROLE_CONST;
    x->elem = cv->elem;
    x->has_shape = 1;
    x->shape = cv->shape;
}

/* Index into a tensor of shape s broadcast to shape o, for output index k. */
static int64_t bcast_index(const opsched_shape *o, const opsched_shape *s, int64_t k)
{
    int64_t idx = 0, stride = 1;
    for (int d = o->ndim - 1; d >= 0; d--) {
        int64_t c = k % o->d[d];
        k /= o->d[d];
        int sd = s->ndim - o->ndim + d;
        if (sd >= 0) {
            if (s->d[sd] != 1) idx += c * stride;
            stride *= s->d[sd];
        }
    }
    return idx;
}

/* ---- element-wise ops ------------------------------------------------------ */

typedef enum ew_op {
    EW_ADD,
    EW_SUB,
    EW_MUL,
    EW_DIV,
    EW_POW,
    EW_MAX,
    EW_MIN,
    EW_MOD,
    EW_EQ,
    EW_LT,
    EW_GT,
    EW_LE,
    EW_GE,
    EW_AND,
    EW_OR,
    EW_XOR
} ew_op;

static const struct {
    const char *name;
    ew_op op;
} ew_names[] = {
    {"Add", EW_ADD},           {"Sub", EW_SUB}, {"Mul", EW_MUL},    {"Div", EW_DIV},
    {"Pow", EW_POW},           {"Max", EW_MAX}, {"Min", EW_MIN},    {"Mod", EW_MOD},
    {"Equal", EW_EQ},          {"Less", EW_LT}, {"Greater", EW_GT}, {"LessOrEqual", EW_LE},
    {"GreaterOrEqual", EW_GE}, {"And", EW_AND}, {"Or", EW_OR},      {"Xor", EW_XOR},
};

static int int_op(ew_op op, int64_t a, int64_t b, int64_t *out)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case EW_ADD:
        *out = (int64_t)(ua + ub);
        return 1;
    case EW_SUB:
        *out = (int64_t)(ua - ub);
        return 1;
    case EW_MUL:
        *out = (int64_t)(ua * ub);
        return 1;
    case EW_DIV:
    case EW_MOD:
        if (b == 0) return 0;
        if (b == -1)
            *out = op == EW_DIV ? (int64_t)(0 - ua) : 0;
        else if (op == EW_DIV)
            *out = a / b;
        else {
            int64_t r = a % b; /* Mod with fmod=0 takes the divisor's sign */
            *out = (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
        }
        return 1;
    case EW_POW: {
        double p = pow((double)a, (double)b);
        *out = os_onnx_float_to_int(p);
        return 1;
    }
    case EW_MAX:
        *out = a > b ? a : b;
        return 1;
    case EW_MIN:
        *out = a < b ? a : b;
        return 1;
    case EW_EQ:
        *out = a == b;
        return 1;
    case EW_LT:
        *out = a < b;
        return 1;
    case EW_GT:
        *out = a > b;
        return 1;
    case EW_LE:
        *out = a <= b;
        return 1;
    case EW_GE:
        *out = a >= b;
        return 1;
    case EW_AND:
        *out = a && b;
        return 1;
    case EW_OR:
        *out = a || b;
        return 1;
    default:
        *out = (a != 0) != (b != 0);
        return 1;
    }
}

static double float_op(ew_op op, double a, double b)
{
    switch (op) {
    case EW_ADD:
        return a + b;
    case EW_SUB:
        return a - b;
    case EW_MUL:
        return a * b;
    case EW_DIV:
        return a / b;
    case EW_POW:
        return pow(a, b);
    case EW_MAX:
        return a > b ? a : b;
    case EW_MIN:
        return a < b ? a : b;
    case EW_MOD:
        return fmod(a, b);
    case EW_EQ:
        return a == b;
    case EW_LT:
        return a < b;
    case EW_GT:
        return a > b;
    case EW_LE:
        return a <= b;
    case EW_GE:
        return a >= b;
    case EW_AND:
        return a != 0 && b != 0;
    case EW_OR:
        return a != 0 || b != 0;
    default:
        return (a != 0) != (b != 0);
    }
}

static opsched_status fold_binary(os_loader *L, int node, ew_op op, const os_cval *a,
                                  const os_cval *b)
{
    opsched_shape o;
    OS_TRY(os_onnx_broadcast(L, node, &a->shape, &b->shape, &o));
    int cmp = op >= EW_EQ;
    int fl = a->is_float || b->is_float;
    int32_t elem = cmp ? OS_ONNX_BOOL : (a->is_float || !b->is_float ? a->elem : b->elem);
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, elem, &o, &r));
    for (int64_t k = 0; k < r->n; k++) {
        int64_t ia = bcast_index(&o, &a->shape, k), ib = bcast_index(&o, &b->shape, k);
        if (fl) {
            double v = float_op(op, os_onnx_cval_float(a, ia), os_onnx_cval_float(b, ib));
            put(r, k, v, 0, 1);
        } else {
            int64_t v;
            if (!int_op(op, a->i[ia], b->i[ib], &v))
                return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "integer division by zero");
            put(r, k, 0, v, 0);
        }
    }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_unary(os_loader *L, int node, const char *op, const os_cval *a)
{
    os_cval *r;
    int32_t elem = strcmp(op, "Not") == 0 ? OS_ONNX_BOOL : a->elem;
    OS_TRY(os_onnx_cval_new(L, elem, &a->shape, &r));
    for (int64_t k = 0; k < a->n; k++) {
        if (!a->is_float) {
            int64_t x = a->i[k], v = x;
            if (strcmp(op, "Neg") == 0)
                v = (int64_t)(0 - (uint64_t)x);
            else if (strcmp(op, "Abs") == 0)
                v = x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
            else if (strcmp(op, "Not") == 0)
                v = !x;
            else if (strcmp(op, "Sqrt") == 0)
                v = os_onnx_float_to_int(sqrt((double)x));
            put(r, k, 0, v, 0);
            continue;
        }
        double x = a->f[k], v = x;
        if (strcmp(op, "Neg") == 0)
            v = -x;
        else if (strcmp(op, "Abs") == 0)
            v = fabs(x);
        else if (strcmp(op, "Floor") == 0)
            v = floor(x);
        else if (strcmp(op, "Ceil") == 0)
            v = ceil(x);
        else if (strcmp(op, "Sqrt") == 0)
            v = sqrt(x);
        else if (strcmp(op, "Reciprocal") == 0)
            v = 1.0 / x;
        else if (strcmp(op, "Not") == 0)
            v = x == 0;
        put(r, k, v, 0, 1);
    }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

/* ---- shape ops --------------------------------------------------------------- */

static opsched_status fold_shape(os_loader *L, int node, int size_only)
{
    opsched_shape s;
    OS_TRY(os_onnx_shape_of(L, node, os_onnx_in(L, node, 0), &s));
    os_cval *r;
    if (size_only) {
        opsched_shape scalar = {0};
        OS_TRY(os_onnx_cval_new(L, OS_ONNX_INT64, &scalar, &r));
        r->i[0] = opsched_shape_numel(&s);
    } else {
        int64_t start = 0, end = s.ndim;
        OS_TRY(os_onnx_attr_int(L, node, "start", &start));
        OS_TRY(os_onnx_attr_int(L, node, "end", &end));
        if (start < 0) start += s.ndim;
        if (end < 0) end += s.ndim;
        start = OS_MAX(0, OS_MIN(start, s.ndim));
        end = OS_MAX(start, OS_MIN(end, s.ndim));
        opsched_shape vec = {.ndim = 1, .d = {end - start}};
        OS_TRY(os_onnx_cval_new(L, OS_ONNX_INT64, &vec, &r));
        for (int64_t d = start; d < end; d++)
            r->i[d - start] = s.d[d];
    }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

/* Same values, new shape (Reshape, Squeeze, Unsqueeze, Flatten, Identity). */
static opsched_status fold_view(os_loader *L, int node, const os_cval *a, const opsched_shape *s)
{
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, s, &r));
    if (r->n != a->n) return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "element count changes");
    for (int64_t k = 0; k < a->n; k++)
        copy_elem(r, k, a, k);
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_expand(os_loader *L, int node, const os_cval *a)
{
    opsched_shape o;
    OS_TRY(os_onnx_expand_to(L, node, &a->shape, &o));
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, &o, &r));
    for (int64_t k = 0; k < r->n; k++)
        copy_elem(r, k, a, bcast_index(&o, &a->shape, k));
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_gather(os_loader *L, int node, const os_cval *a, const os_cval *idx)
{
    int64_t axis = 0;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &axis));
    OS_TRY(os_onnx_axis(L, node, axis, a->shape.ndim, &axis));
    if (idx->is_float)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "indices must be integers");
    if (a->shape.ndim - 1 + idx->shape.ndim > OPSCHED_MAX_DIMS)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, "the result has too many dims");
    opsched_shape o = {0};
    int64_t outer = 1, inner = 1, dim = a->shape.d[axis];
    for (int d = 0; d < axis; d++) {
        o.d[o.ndim++] = a->shape.d[d];
        outer *= a->shape.d[d];
    }
    for (int d = 0; d < idx->shape.ndim; d++)
        o.d[o.ndim++] = idx->shape.d[d];
    for (int d = (int)axis + 1; d < a->shape.ndim; d++) {
        o.d[o.ndim++] = a->shape.d[d];
        inner *= a->shape.d[d];
    }
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, &o, &r));
    int64_t k = 0;
    for (int64_t i = 0; i < outer; i++)
        for (int64_t j = 0; j < idx->n; j++) {
            int64_t at = idx->i[j];
            if (at < -dim || at >= dim)
                return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                         "index %lld is out of range for size %lld", (long long)at,
                                         (long long)dim);
            if (at < 0) at += dim;
            for (int64_t m = 0; m < inner; m++)
                copy_elem(r, k++, a, (i * dim + at) * inner + m);
        }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_slice(os_loader *L, int node, const os_cval *a)
{
    opsched_slice_attr s;
    opsched_shape o;
    OS_TRY(os_onnx_slice_to(L, node, &a->shape, &s, &o));
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, &o, &r));
    for (int64_t k = 0; k < r->n; k++) {
        int64_t rest = k, src = 0, stride = 1;
        for (int d = o.ndim - 1; d >= 0; d--) {
            int64_t c = rest % o.d[d];
            rest /= o.d[d];
            src += (s.starts[d] + c * s.steps[d]) * stride;
            stride *= a->shape.d[d];
        }
        copy_elem(r, k, a, src);
    }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_concat(os_loader *L, int node)
{
    int n = os_onnx_num_in(L, node);
    const os_cval *first = os_onnx_in_cval(L, node, 0);
    int64_t axis = 0;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &axis));
    OS_TRY(os_onnx_axis(L, node, axis, first->shape.ndim, &axis));
    opsched_shape o = first->shape;
    o.d[axis] = 0;
    for (int k = 0; k < n; k++) {
        const os_cval *c = os_onnx_in_cval(L, node, k);
        /* an omitted ("") input is no tensor to concatenate */
        if (!c) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "input %d is missing", k);
        int ok = c->shape.ndim == o.ndim;
        for (int d = 0; ok && d < o.ndim; d++)
            if (d != axis && c->shape.d[d] != o.d[d]) ok = 0;
        if (!ok) return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "input %d does not fit", k);
        o.d[axis] += c->shape.d[axis];
        if (o.d[axis] > OS_ONNX_FOLD_MAX_ELEMS)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, "the result is too large");
    }
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, first->elem, &o, &r));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= o.d[d];
    for (int d = (int)axis + 1; d < o.ndim; d++)
        inner *= o.d[d];
    int64_t k = 0;
    for (int64_t i = 0; i < outer; i++)
        for (int j = 0; j < n; j++) {
            const os_cval *c = os_onnx_in_cval(L, node, j);
            int64_t chunk = c->shape.d[axis] * inner;
            for (int64_t m = 0; m < chunk; m++)
                copy_elem(r, k++, c, i * chunk + m);
        }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_constant_of_shape(os_loader *L, int node, int *done)
{
    int64_t dims[OPSCHED_MAX_DIMS];
    int n;
    OS_TRY(os_onnx_in_ints(L, node, 0, "shape", dims, OPSCHED_MAX_DIMS, &n));
    opsched_shape o = {.ndim = n < 0 ? 0 : n};
    int64_t numel = 1;
    for (int i = 0; i < o.ndim; i++) {
        if (dims[i] < 0 || !os_mul_ok(numel, dims[i], &numel))
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "invalid shape");
        o.d[i] = dims[i];
    }
    if (numel > OS_ONNX_FOLD_MAX_ELEMS) {
        *done = 0; /* too large to hold: reported as unsupported by conversion */
        return OPSCHED_OK;
    }
    const Onnx__AttributeProto *va = os_onnx_attr(L->gp->node[node], "value");
    os_cval *value = NULL, *r;
    if (va && va->t) OS_TRY(os_onnx_tensor_cval(L, va->t, "value", 1, &value));
    if (va && (!value || value->n != 1))
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE,
                                 "'value' must be a one-element tensor");
    OS_TRY(os_onnx_cval_new(L, value ? value->elem : OS_ONNX_FLOAT, &o, &r));
    for (int64_t k = 0; value && k < r->n; k++)
        copy_elem(r, k, value, 0);
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_range(os_loader *L, int node, const os_cval *s, const os_cval *l,
                                 const os_cval *d)
{
    if (s->n != 1 || l->n != 1 || d->n != 1)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "Range takes scalars");
    if (s->is_float != l->is_float || s->is_float != d->is_float)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE,
                                 "Range's start, limit and delta must have one type");
    double start = os_onnx_cval_float(s, 0), limit = os_onnx_cval_float(l, 0),
           delta = os_onnx_cval_float(d, 0);
    if (delta == 0 || isnan(start) || isnan(limit) || isnan(delta))
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "invalid range");
    double count = ceil((limit - start) / delta);
    if (count < 0) count = 0;
    if (count > (double)OS_ONNX_FOLD_MAX_ELEMS)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, "the range is too long");
    opsched_shape o = {.ndim = 1, .d = {(int64_t)count}};
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, s->elem, &o, &r));
    for (int64_t k = 0; k < r->n; k++) {
        if (r->is_float)
            put(r, k, start + (double)k * delta, 0, 1);
        else /* wraps rather than overflows on hostile values */
            put(r, k, 0, (int64_t)((uint64_t)s->i[0] + (uint64_t)k * (uint64_t)d->i[0]), 0);
    }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_where(os_loader *L, int node, const os_cval *c, const os_cval *x,
                                 const os_cval *y)
{
    opsched_shape t, o;
    OS_TRY(os_onnx_broadcast(L, node, &c->shape, &x->shape, &t));
    OS_TRY(os_onnx_broadcast(L, node, &t, &y->shape, &o));
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, x->elem, &o, &r));
    for (int64_t k = 0; k < r->n; k++) {
        int pick = os_onnx_cval_float(c, bcast_index(&o, &c->shape, k)) != 0;
        const os_cval *src = pick ? x : y;
        copy_elem(r, k, src, bcast_index(&o, &src->shape, k));
    }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_cast(os_loader *L, int node, const os_cval *a, int *done)
{
    int64_t to = 0;
    OS_TRY(os_onnx_attr_int(L, node, "to", &to));
    if (os_onnx_elem_size((int32_t)to) == 0) {
        *done = 0;
        return OPSCHED_OK;
    }
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, (int32_t)to, &a->shape, &r));
    for (int64_t k = 0; k < a->n; k++)
        copy_elem(r, k, a, k);
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_reduce(os_loader *L, int node, const os_cval *a, int prod)
{
    int64_t axes[OPSCHED_MAX_DIMS], keep = 1, noop = 0;
    int n = -1;
    OS_TRY(os_onnx_attr_int(L, node, "keepdims", &keep));
    OS_TRY(os_onnx_attr_int(L, node, "noop_with_empty_axes", &noop));
    if (L->opset < (prod ? 18 : 13))
        OS_TRY(os_onnx_attr_ints(L, node, "axes", axes, OPSCHED_MAX_DIMS, &n));
    else
        OS_TRY(os_onnx_in_ints(L, node, 1, "axes", axes, OPSCHED_MAX_DIMS, &n));
    if (n <= 0 && noop) return fold_view(L, node, a, &a->shape);
    int red[OPSCHED_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        int64_t ax;
        OS_TRY(os_onnx_axis(L, node, axes[i], a->shape.ndim, &ax));
        red[ax] = 1;
    }
    opsched_shape o = {0}, kept = a->shape;
    for (int d = 0; d < a->shape.ndim; d++) {
        red[d] = n <= 0 || red[d];
        if (red[d]) kept.d[d] = 1;
        if (!red[d])
            o.d[o.ndim++] = a->shape.d[d];
        else if (keep)
            o.d[o.ndim++] = 1;
    }
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, &o, &r));
    double *acc = calloc((size_t)(r->n ? r->n : 1), sizeof(double));
    int64_t *iacc = calloc((size_t)(r->n ? r->n : 1), sizeof(int64_t));
    if (!acc || !iacc) {
        free(acc);
        free(iacc);
        return OS_NOMEM(L->ctx);
    }
    for (int64_t k = 0; k < r->n; k++) {
        acc[k] = prod ? 1.0 : 0.0;
        iacc[k] = prod ? 1 : 0;
    }
    for (int64_t k = 0; k < a->n; k++) {
        /* The output slot of element k: its coordinates with the reduced
         * ones dropped. */
        int64_t rest = k, slot = 0, stride = 1;
        for (int d = a->shape.ndim - 1; d >= 0; d--) {
            int64_t c = rest % a->shape.d[d];
            rest /= a->shape.d[d];
            if (!red[d]) slot += c * stride;
            stride *= kept.d[d];
        }
        if (a->is_float)
            acc[slot] = prod ? acc[slot] * a->f[k] : acc[slot] + a->f[k];
        else
            iacc[slot] = (int64_t)(prod ? (uint64_t)iacc[slot] * (uint64_t)a->i[k]
                                        : (uint64_t)iacc[slot] + (uint64_t)a->i[k]);
    }
    for (int64_t k = 0; k < r->n; k++)
        put(r, k, acc[k], iacc[k], a->is_float);
    free(acc);
    free(iacc);
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_constant(os_loader *L, int node)
{
    const Onnx__NodeProto *n = L->gp->node[node];
    int v = os_onnx_out(L, node, 0);
    if (n->n_attribute != 1)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "needs exactly one value attribute");
    const Onnx__AttributeProto *a = n->attribute[0];
    const char *an = a->name ? a->name : "";
    opsched_shape scalar = {0}, vec = {.ndim = 1};
    os_cval *r = NULL;
    if (strcmp(an, "value") == 0 && a->t) {
        OS_TRY(os_onnx_tensor_check(L, a->t, v >= 0 ? L->vals[v].name : "value"));
        OS_TRY(os_onnx_tensor_cval(L, a->t, v >= 0 ? L->vals[v].name : "value",
                                   OS_ONNX_FOLD_MAX_ELEMS, &r));
        if (!r && v >= 0) {
            /* Too large to keep on the host: a constant the graph holds. */
            os_val *x = &L->vals[v];
            x->role = OS_ROLE_CONST;
            x->init = a->t;
            x->elem = a->t->data_type;
            OS_TRY(os_onnx_tensor_shape(L->ctx, a->t, x->name, &x->shape));
            x->has_shape = 1;
            return OPSCHED_OK;
        }
    } else if (strcmp(an, "value_float") == 0) {
        OS_TRY(os_onnx_cval_new(L, OS_ONNX_FLOAT, &scalar, &r));
        r->f[0] = a->f;
    } else if (strcmp(an, "value_int") == 0) {
        OS_TRY(os_onnx_cval_new(L, OS_ONNX_INT64, &scalar, &r));
        r->i[0] = a->i;
    } else if (strcmp(an, "value_floats") == 0) {
        vec.d[0] = (int64_t)a->n_floats;
        OS_TRY(os_onnx_cval_new(L, OS_ONNX_FLOAT, &vec, &r));
        for (size_t k = 0; k < a->n_floats; k++)
            r->f[k] = a->floats[k];
    } else if (strcmp(an, "value_ints") == 0) {
        vec.d[0] = (int64_t)a->n_ints;
        OS_TRY(os_onnx_cval_new(L, OS_ONNX_INT64, &vec, &r));
        for (size_t k = 0; k < a->n_ints; k++)
            r->i[k] = a->ints[k];
    } else {
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "a Constant given by '%s' is not supported", an);
    }
    if (!r) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "the value has no data");
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

/* ---- dispatch ------------------------------------------------------------------ */

static int is_one_of(const char *op, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(op, list[i]) == 0) return 1;
    return 0;
}

static opsched_status fold_node(os_loader *L, int node, int *done)
{
    static const char *const unary_ops[] = {"Neg",  "Abs",        "Floor", "Ceil",
                                            "Sqrt", "Reciprocal", "Not"};
    static const char *const all_ops[] = {"Identity", "Dropout", "Cast",       "Reshape",
                                          "Flatten",  "Squeeze", "Unsqueeze",  "Expand",
                                          "Gather",   "Slice",   "Concat",     "ConstantOfShape",
                                          "Range",    "Where",   "ReduceProd", "ReduceSum"};
    const char *op = L->gp->node[node]->op_type;
    *done = 0;
    if (strcmp(op, "Constant") == 0) {
        *done = 1;
        return fold_constant(L, node);
    }
    if (os_onnx_out(L, node, 0) < 0) return OPSCHED_OK;
    if (strcmp(op, "Shape") == 0 || strcmp(op, "Size") == 0) {
        *done = 1;
        return fold_shape(L, node, op[1] == 'i');
    }
    ew_op ew = EW_ADD;
    int is_ew = 0;
    for (size_t i = 0; i < OS_ARRAY_LEN(ew_names); i++)
        if (strcmp(op, ew_names[i].name) == 0) {
            ew = ew_names[i].op;
            is_ew = 1;
        }
    int is_unary = is_one_of(op, unary_ops, OS_ARRAY_LEN(unary_ops));
    if (!is_ew && !is_unary && !is_one_of(op, all_ops, OS_ARRAY_LEN(all_ops))) return OPSCHED_OK;
    /* Every operand must be known (Dropout's ratio and mode do not matter). */
    int n_in = os_onnx_num_in(L, node);
    if (n_in == 0) return OPSCHED_OK;
    for (int k = 0; k < n_in; k++)
        if (os_onnx_in(L, node, k) >= 0 && !os_onnx_in_cval(L, node, k)) return OPSCHED_OK;
    const os_cval *a = os_onnx_in_cval(L, node, 0);
    if (!a) return OPSCHED_OK;
    *done = 1;
    if (is_ew) {
        const os_cval *b = os_onnx_in_cval(L, node, 1);
        if (!b || n_in != 2)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "needs two inputs");
        return fold_binary(L, node, ew, a, b);
    }
    if (is_unary) return fold_unary(L, node, op, a);
    if (strcmp(op, "Identity") == 0 || strcmp(op, "Dropout") == 0) {
        os_onnx_alias(L, node, 0, os_onnx_in(L, node, 0));
        return OPSCHED_OK;
    }
    opsched_shape s;
    if (strcmp(op, "Reshape") == 0) {
        OS_TRY(os_onnx_reshape_to(L, node, &a->shape, &s));
        return fold_view(L, node, a, &s);
    }
    if (strcmp(op, "Squeeze") == 0) {
        OS_TRY(os_onnx_squeeze_to(L, node, &a->shape, &s));
        return fold_view(L, node, a, &s);
    }
    if (strcmp(op, "Unsqueeze") == 0) {
        OS_TRY(os_onnx_unsqueeze_to(L, node, &a->shape, &s));
        return fold_view(L, node, a, &s);
    }
    if (strcmp(op, "Flatten") == 0) {
        int64_t axis;
        OS_TRY(os_onnx_flatten_to(L, node, &a->shape, &s, &axis));
        return fold_view(L, node, a, &s);
    }
    if (strcmp(op, "Cast") == 0) return fold_cast(L, node, a, done);
    if (strcmp(op, "Expand") == 0) return fold_expand(L, node, a);
    if (strcmp(op, "Slice") == 0) return fold_slice(L, node, a);
    if (strcmp(op, "Concat") == 0) return fold_concat(L, node);
    if (strcmp(op, "ConstantOfShape") == 0) return fold_constant_of_shape(L, node, done);
    if (strcmp(op, "ReduceProd") == 0 || strcmp(op, "ReduceSum") == 0)
        return fold_reduce(L, node, a, op[6] == 'P');
    const os_cval *b = os_onnx_in_cval(L, node, 1), *c = os_onnx_in_cval(L, node, 2);
    if (strcmp(op, "Gather") == 0) {
        if (!b) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "no indices");
        return fold_gather(L, node, a, b);
    }
    if (!b || !c) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "needs three inputs");
    if (strcmp(op, "Range") == 0) return fold_range(L, node, a, b, c);
    return fold_where(L, node, a, b, c);
}

opsched_status os_onnx_fold(os_loader *L, int node, int *done)
{
    L->fold_too_big = 0;
    opsched_status st = fold_node(L, node, done);
    if (st != OPSCHED_OK && L->fold_too_big) {
        /* A result too large for the host table: the node stays a graph
         * node (Expand of a constant, say) or is reported by conversion. */
        L->fold_too_big = 0;
        opsched_ctx_clear_error(L->ctx);
        for (int k = 0; k < os_onnx_num_out(L, node); k++) {
            int v = os_onnx_out(L, node, k);
            if (v >= 0 && L->vals[v].role == OS_ROLE_CONST) {
                L->vals[v].role = OS_ROLE_NONE;
                L->vals[v].cv = NULL;
                L->vals[v].has_shape = 0;
            }
        }
        *done = 0;
        return OPSCHED_OK;
    }
    return st;
}
