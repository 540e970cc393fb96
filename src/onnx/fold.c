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
#include <float.h>
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
    /* Scalars and shape-sized values always fit: a table filled by large
     * folded constants must not stop the shape arithmetic after it. */
    if (n > OS_ONNX_FOLD_SMALL && L->fold_used + n > OS_ONNX_FOLD_BUDGET) {
        L->fold_too_big = 1;
        return OS_FAIL(L->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "constant folding needs more than %lld elements in all",
                       (long long)OS_ONNX_FOLD_BUDGET);
    }
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

/* Stores x into element k, converted to the constant's type (a float is
 * true as a bool when it is not zero, as Cast has it). */
static void put(os_cval *cv, int64_t k, double f, int64_t i, int is_float)
{
    if (cv->is_float)
        cv->f[k] = os_onnx_round_to(cv->elem, is_float ? f : (double)i);
    else if (cv->elem == OS_ONNX_BOOL && is_float)
        cv->i[k] = f != 0.0;
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

/* Coordinates of element k of shape s, and back. */
static void unravel(int64_t k, const opsched_shape *s, int64_t *c)
{
    for (int d = s->ndim - 1; d >= 0; d--) {
        c[d] = s->d[d] ? k % s->d[d] : 0;
        k = s->d[d] ? k / s->d[d] : 0;
    }
}

static int64_t ravel(const int64_t *c, const opsched_shape *s)
{
    int64_t k = 0;
    for (int d = 0; d < s->ndim; d++)
        k = k * s->d[d] + c[d];
    return k;
}

static int elem_unsigned(int32_t elem)
{
    return elem == OS_ONNX_UINT8 || elem == OS_ONNX_UINT16 || elem == OS_ONNX_UINT32 ||
           elem == OS_ONNX_UINT64 || elem == OS_ONNX_BOOL;
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
    EW_FMOD,
    EW_PRELU,
    EW_SHL,
    EW_SHR,
    EW_BAND,
    EW_BOR,
    EW_BXOR,
    EW_EQ, /* the comparisons and logical ops, from here on, give bool */
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
    {"Add", EW_ADD},         {"Sub", EW_SUB},           {"Mul", EW_MUL},
    {"Div", EW_DIV},         {"Pow", EW_POW},           {"Max", EW_MAX},
    {"Min", EW_MIN},         {"Sum", EW_ADD},           {"Mean", EW_ADD},
    {"Equal", EW_EQ},        {"Less", EW_LT},           {"Greater", EW_GT},
    {"LessOrEqual", EW_LE},  {"GreaterOrEqual", EW_GE}, {"And", EW_AND},
    {"Or", EW_OR},           {"Xor", EW_XOR},           {"PRelu", EW_PRELU},
    {"BitwiseAnd", EW_BAND}, {"BitwiseOr", EW_BOR},     {"BitwiseXor", EW_BXOR},
    {"Mod", EW_MOD},         {"BitShift", EW_SHL},
};

/* Integer semantics of op on values of a type of `bits` bits; 0 for a
 * division by zero. */
static int int_op(ew_op op, int64_t a, int64_t b, int bits, int is_unsigned, int64_t *out)
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
    case EW_FMOD:
        if (b == 0) return 0;
        if (b == -1)
            *out = op == EW_DIV ? (int64_t)(0 - ua) : 0;
        else if (op == EW_DIV)
            *out = a / b;
        else {
            int64_t r = a % b; /* fmod: the dividend's sign; Mod: the divisor's */
            *out = op == EW_MOD && r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
        }
        return 1;
    case EW_POW:
        *out = os_onnx_float_to_int(pow((double)a, (double)b));
        return 1;
    case EW_MAX:
        *out = a > b ? a : b;
        return 1;
    case EW_MIN:
        *out = a < b ? a : b;
        return 1;
    case EW_PRELU:
        *out = a < 0 ? (int64_t)(ua * ub) : a;
        return 1;
    case EW_SHL:
        *out = b < 0 || b >= bits ? 0 : (int64_t)(ua << b);
        return 1;
    case EW_SHR:
        if (is_unsigned) {
            uint64_t m = bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
            *out = b < 0 || b >= bits ? 0 : (int64_t)((ua & m) >> b);
        } else if (b < 0 || b >= bits) {
            *out = a < 0 ? -1 : 0;
        } else {
            *out = a < 0 ? ~(~a >> b) : a >> b; /* arithmetic, whatever C does */
        }
        return 1;
    case EW_BAND:
        *out = (int64_t)(ua & ub);
        return 1;
    case EW_BOR:
        *out = (int64_t)(ua | ub);
        return 1;
    case EW_BXOR:
        *out = (int64_t)(ua ^ ub);
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
        return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case EW_MIN:
        return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    case EW_FMOD:
        return fmod(a, b);
    case EW_MOD: {
        double r = fmod(a, b);
        return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
    }
    case EW_PRELU:
        return a < 0 ? a * b : a;
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
    case EW_XOR:
        return (a != 0) != (b != 0);
    default:
        return NAN; /* bit operations on floats do not exist */
    }
}

static opsched_status ew_apply(os_loader *L, int node, ew_op op, const os_cval *a, const os_cval *b,
                               os_cval **out)
{
    opsched_shape o;
    OS_TRY(os_onnx_broadcast(L, node, &a->shape, &b->shape, &o));
    int cmp = op >= EW_EQ;
    int fl = a->is_float || b->is_float;
    int32_t elem = cmp ? OS_ONNX_BOOL : (a->is_float || !b->is_float ? a->elem : b->elem);
    int bits = (int)os_onnx_elem_size(a->elem) * 8;
    if (bits == 0) bits = 64;
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, elem, &o, &r));
    for (int64_t k = 0; k < r->n; k++) {
        int64_t ia = bcast_index(&o, &a->shape, k), ib = bcast_index(&o, &b->shape, k);
        if (fl) {
            double v = float_op(op, os_onnx_cval_float(a, ia), os_onnx_cval_float(b, ib));
            put(r, k, v, 0, 1);
        } else {
            int64_t v;
            if (!int_op(op, a->i[ia], b->i[ib], bits, elem_unsigned(a->elem), &v))
                return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "integer division by zero");
            put(r, k, 0, v, 0);
        }
    }
    *out = r;
    return OPSCHED_OK;
}

/* Binary and variadic element-wise ops (Sum, Mean, Max, Min fold their
 * operands left to right). */
static opsched_status fold_ew(os_loader *L, int node, const char *opname, ew_op op)
{
    int n = os_onnx_num_file_in(L, node);
    if (strcmp(opname, "Mod") == 0) {
        int64_t fm = 0;
        OS_TRY(os_onnx_attr_int(L, node, "fmod", &fm));
        op = fm ? EW_FMOD : EW_MOD;
    } else if (strcmp(opname, "BitShift") == 0) {
        char buf[16];
        const char *dir = "";
        OS_TRY(os_onnx_attr_string(L, node, "direction", buf, sizeof(buf), &dir));
        if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "direction must be LEFT or RIGHT");
        op = dir[0] == 'L' ? EW_SHL : EW_SHR;
    }
    int variadic = strcmp(opname, "Sum") == 0 || strcmp(opname, "Mean") == 0 ||
                   strcmp(opname, "Max") == 0 || strcmp(opname, "Min") == 0;
    if (n < 1 || (!variadic && n != 2))
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "takes %s inputs, has %d",
                                 variadic ? "one or more" : "two", n);
    const os_cval *a = os_onnx_in_cval(L, node, 0);
    os_cval *r = NULL;
    if (n == 1) {
        OS_TRY(os_onnx_cval_new(L, a->elem, &a->shape, &r));
        for (int64_t k = 0; k < a->n; k++)
            copy_elem(r, k, a, k);
    }
    for (int k = 1; k < n; k++) {
        const os_cval *b = os_onnx_in_cval(L, node, k);
        if (!b) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "input %d is missing", k);
        OS_TRY(ew_apply(L, node, op, r ? r : a, b, &r));
    }
    if (strcmp(opname, "Mean") == 0 && n > 1) {
        os_cval *cnt;
        opsched_shape scalar = {0};
        OS_TRY(os_onnx_cval_new(L, r->elem, &scalar, &cnt));
        put(cnt, 0, (double)n, n, r->is_float);
        OS_TRY(ew_apply(L, node, EW_DIV, r, cnt, &r));
    }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

/* ---- unary ops ---------------------------------------------------------------- */

static double gelu(double x, int tanh_approx)
{
    if (tanh_approx)
        return 0.5 * x *
               (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

/* The graph's own unary kinds (Relu, Sigmoid, ...) and the functions of
 * OPSCHED_OP_UNARY; *done stays 0 for anything else. */
static opsched_status fold_unary(os_loader *L, int node, const char *op, const os_cval *a,
                                 int *done)
{
    static const char *const own[] = {"Relu", "Sigmoid",     "Tanh",      "Erf",
                                      "Sqrt", "HardSigmoid", "HardSwish", "Gelu"};
    int which = -1, fn = -1;
    for (size_t i = 0; i < OS_ARRAY_LEN(own); i++)
        if (strcmp(op, own[i]) == 0) which = (int)i;
    opsched_unary_attr ua;
    memset(&ua, 0, sizeof(ua));
    float hs_alpha = 0.2f, hs_beta = 0.5f;
    int tanh_approx = 0;
    if (which < 0) {
        OS_TRY(os_onnx_unary_attrs(L, node, op, &fn, &ua));
        if (fn < 0) return OPSCHED_OK;
    } else if (which == 5) {
        OS_TRY(os_onnx_attr_float(L, node, "alpha", &hs_alpha));
        OS_TRY(os_onnx_attr_float(L, node, "beta", &hs_beta));
    } else if (which == 7) {
        char buf[16];
        const char *approx = "none";
        OS_TRY(os_onnx_attr_string(L, node, "approximate", buf, sizeof(buf), &approx));
        tanh_approx = strcmp(approx, "tanh") == 0;
    }
    int to_bool = fn == OPSCHED_UNARY_ISNAN || fn == OPSCHED_UNARY_ISINF || fn == OPSCHED_UNARY_NOT;
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, to_bool ? OS_ONNX_BOOL : a->elem, &a->shape, &r));
    *done = 1;
    for (int64_t k = 0; k < a->n; k++) {
        if (!a->is_float) {
            int64_t x = a->i[k], v;
            uint64_t ux = (uint64_t)x;
            if (fn == OPSCHED_UNARY_NEG)
                v = (int64_t)(0 - ux);
            else if (fn == OPSCHED_UNARY_ABS)
                v = x < 0 ? (int64_t)(0 - ux) : x;
            else if (fn == OPSCHED_UNARY_SIGN)
                v = (x > 0) - (x < 0);
            else if (fn == OPSCHED_UNARY_NOT)
                v = x == 0;
            else if (fn == OPSCHED_UNARY_BITWISE_NOT)
                v = (int64_t)~ux;
            else if (fn == OPSCHED_UNARY_ISNAN || fn == OPSCHED_UNARY_ISINF)
                v = 0;
            else if (which == 0)
                v = x < 0 ? 0 : x;
            else if (fn == OPSCHED_UNARY_FLOOR || fn == OPSCHED_UNARY_CEIL ||
                     fn == OPSCHED_UNARY_ROUND)
                v = x;
            else {
                double f = which >= 0 ? (double)x
                                      : os_onnx_eval_unary((opsched_unary_fn)fn, (double)x,
                                                           ua.alpha, ua.beta, ua.gamma);
                if (which == 4) f = sqrt((double)x);
                v = os_onnx_float_to_int(f);
            }
            put(r, k, 0, v, 0);
            continue;
        }
        double x = a->f[k], v;
        switch (which) {
        case 0:
            v = x < 0 ? 0 : x;
            break;
        case 1:
            v = 1.0 / (1.0 + exp(-x));
            break;
        case 2:
            v = tanh(x);
            break;
        case 3:
            v = erf(x);
            break;
        case 4:
            v = sqrt(x);
            break;
        case 5:
            v = fmax(0.0, fmin(1.0, (double)hs_alpha * x + (double)hs_beta));
            break;
        case 6:
            v = x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5));
            break;
        case 7:
            v = gelu(x, tanh_approx);
            break;
        default:
            v = os_onnx_eval_unary((opsched_unary_fn)fn, x, ua.alpha, ua.beta, ua.gamma);
            break;
        }
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

/* EyeLike needs only its input's shape. */
static opsched_status fold_eyelike(os_loader *L, int node, int *done)
{
    opsched_shape s;
    OS_TRY(os_onnx_shape_of(L, node, os_onnx_in(L, node, 0), &s));
    if (s.ndim != 2)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                 "the input must be 2-D, it has rank %d", s.ndim);
    int64_t k = 0, dt = 0;
    OS_TRY(os_onnx_attr_int(L, node, "k", &k));
    OS_TRY(os_onnx_attr_int(L, node, "dtype", &dt));
    int v = os_onnx_root(L, os_onnx_in(L, node, 0));
    int32_t elem = dt ? (int32_t)dt : L->vals[v].cv ? L->vals[v].cv->elem : L->vals[v].elem;
    if (os_onnx_elem_size(elem) == 0)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, "dtype %s is not supported",
                                 os_onnx_elem_name(elem));
    if (opsched_shape_numel(&s) > OS_ONNX_FOLD_MAX_ELEMS) return OPSCHED_OK;
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, elem, &s, &r));
    k = OS_MAX(-OS_ONNX_MAX_DIM, OS_MIN(OS_ONNX_MAX_DIM, k));
    for (int64_t i = 0; i < s.d[0]; i++) {
        int64_t j = i + k;
        if (j >= 0 && j < s.d[1]) put(r, i * s.d[1] + j, 1.0, 1, 0);
    }
    *done = 1;
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
    int n = os_onnx_num_file_in(L, node);
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

static opsched_status fold_split(os_loader *L, int node, const os_cval *a)
{
    opsched_split_attr sp;
    OS_TRY(os_onnx_split_sizes(L, node, &a->shape, &sp));
    int64_t outer = 1, inner = 1, off = 0, dim = a->shape.d[sp.axis];
    for (int d = 0; d < sp.axis; d++)
        outer *= a->shape.d[d];
    for (int d = (int)sp.axis + 1; d < a->shape.ndim; d++)
        inner *= a->shape.d[d];
    for (int p = 0; p < sp.n; p++) {
        opsched_shape o = a->shape;
        o.d[sp.axis] = sp.sizes[p];
        os_cval *r;
        OS_TRY(os_onnx_cval_new(L, a->elem, &o, &r));
        int64_t k = 0;
        for (int64_t i = 0; i < outer; i++)
            for (int64_t j = 0; j < sp.sizes[p] * inner; j++)
                copy_elem(r, k++, a, (i * dim + off) * inner + j);
        off += sp.sizes[p];
        set_out(L, node, p, r);
    }
    return OPSCHED_OK;
}

static opsched_status fold_transpose(os_loader *L, int node, const os_cval *a)
{
    int64_t perm[OPSCHED_MAX_DIMS];
    int n = -1, rank = a->shape.ndim, seen[OPSCHED_MAX_DIMS] = {0};
    OS_TRY(os_onnx_attr_ints(L, node, "perm", perm, OPSCHED_MAX_DIMS, &n));
    if (n < 0) {
        n = rank;
        for (int d = 0; d < rank; d++)
            perm[d] = rank - 1 - d;
    }
    if (n != rank)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "perm has %d entries for rank %d", n,
                                 rank);
    opsched_shape o = {.ndim = rank};
    for (int d = 0; d < rank; d++) {
        OS_TRY(os_onnx_axis(L, node, perm[d], rank, &perm[d]));
        if (seen[perm[d]]++)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "perm is not a permutation");
        o.d[d] = a->shape.d[perm[d]];
    }
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, &o, &r));
    int64_t c[OPSCHED_MAX_DIMS], src[OPSCHED_MAX_DIMS];
    for (int64_t k = 0; k < r->n; k++) {
        unravel(k, &o, c);
        for (int d = 0; d < rank; d++)
            src[perm[d]] = c[d];
        copy_elem(r, k, a, ravel(src, &a->shape));
    }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_tile(os_loader *L, int node, const os_cval *a)
{
    int64_t rep[OPSCHED_MAX_DIMS];
    int n;
    OS_TRY(os_onnx_in_ints(L, node, 1, "repeats", rep, OPSCHED_MAX_DIMS, &n));
    if (n != a->shape.ndim)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "%d repeats for rank %d", n,
                                 a->shape.ndim);
    opsched_shape o = a->shape;
    for (int d = 0; d < n; d++)
        if (rep[d] < 0 || !os_mul_ok(a->shape.d[d], rep[d], &o.d[d]) || o.d[d] > OS_ONNX_MAX_DIM)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "invalid repeats");
    OS_TRY(os_onnx_check_dims(L, node, &o));
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, &o, &r));
    int64_t c[OPSCHED_MAX_DIMS];
    for (int64_t k = 0; k < r->n; k++) {
        unravel(k, &o, c);
        for (int d = 0; d < n; d++)
            c[d] %= a->shape.d[d];
        copy_elem(r, k, a, ravel(c, &a->shape));
    }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_trilu(os_loader *L, int node, const os_cval *a)
{
    int64_t upper = 1, k = 0;
    OS_TRY(os_onnx_attr_int(L, node, "upper", &upper));
    const os_cval *kv = os_onnx_in_cval(L, node, 1);
    if (kv) {
        if (kv->n != 1 || kv->is_float)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "k must be one integer");
        k = OS_MAX(-OS_ONNX_MAX_DIM, OS_MIN(OS_ONNX_MAX_DIM, kv->i[0]));
    }
    int rank = a->shape.ndim;
    if (rank < 2)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "the input must have rank 2 or more");
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, &a->shape, &r));
    int64_t c[OPSCHED_MAX_DIMS];
    for (int64_t e = 0; e < a->n; e++) {
        unravel(e, &a->shape, c);
        int64_t i = c[rank - 2], j = c[rank - 1];
        int keep = upper ? j - i >= k : j - i <= k;
        if (keep)
            copy_elem(r, e, a, e);
        else
            put(r, e, 0.0, 0, 0);
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
        if (dims[i] < 0 || dims[i] > OS_ONNX_MAX_DIM || !os_mul_ok(numel, dims[i], &numel))
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "invalid shape");
        o.d[i] = dims[i];
    }
    if (numel > OS_ONNX_FOLD_MAX_ELEMS) {
        *done = 0; /* too large to hold: a graph node fills it (views.c) */
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

/* Cast (to), and CastLike (the type of input 1, which need not be known). */
static opsched_status fold_cast(os_loader *L, int node, const os_cval *a, int32_t to, int *done)
{
    if (os_onnx_elem_size(to) == 0) return OPSCHED_OK; /* conversion names the type */
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, to, &a->shape, &r));
    for (int64_t k = 0; k < a->n; k++)
        copy_elem(r, k, a, k);
    *done = 1;
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

/* ---- reductions ------------------------------------------------------------------ */

static opsched_status fold_reduce(os_loader *L, int node, const char *op, const os_cval *a)
{
    opsched_reduce_attr ra;
    int given;
    OS_TRY(os_onnx_reduce_attrs(L, node, op, &ra, &given));
    /* noop_with_empty_axes reduces nothing but keeps the element-wise parts
     * (ReduceSumSquare squares). */
    int none = ra.n_axes == 0 && ra.noop_with_empty_axes;
    int red[OPSCHED_MAX_DIMS] = {0};
    for (int i = 0; i < ra.n_axes; i++) {
        int64_t ax;
        OS_TRY(os_onnx_axis(L, node, ra.axes[i], a->shape.ndim, &ax));
        red[ax] = 1;
    }
    opsched_shape o = {0}, kept = a->shape;
    int64_t count = 1;
    for (int d = 0; d < a->shape.ndim; d++) {
        red[d] = !none && (ra.n_axes == 0 || red[d]);
        if (red[d]) {
            kept.d[d] = 1;
            count *= a->shape.d[d];
        }
        if (!red[d])
            o.d[o.ndim++] = a->shape.d[d];
        else if (ra.keepdims)
            o.d[o.ndim++] = 1;
    }
    opsched_reduce_fn fn = ra.fn;
    int as_int = !a->is_float &&
                 (fn == OPSCHED_REDUCE_SUM || fn == OPSCHED_REDUCE_PROD ||
                  fn == OPSCHED_REDUCE_MAX || fn == OPSCHED_REDUCE_MIN || fn == OPSCHED_REDUCE_L1 ||
                  fn == OPSCHED_REDUCE_SUMSQUARE || fn == OPSCHED_REDUCE_MEAN);
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, &o, &r));
    size_t nr = (size_t)(r->n ? r->n : 1);
    double *acc = malloc(nr * sizeof(double));
    int64_t *iacc = malloc(nr * sizeof(int64_t));
    if (!acc || !iacc) {
        free(acc);
        free(iacc);
        return OS_NOMEM(L->ctx);
    }
    for (size_t k = 0; k < nr; k++) {
        acc[k] = fn == OPSCHED_REDUCE_PROD  ? 1.0
                 : fn == OPSCHED_REDUCE_MAX ? -INFINITY
                 : fn == OPSCHED_REDUCE_MIN ? INFINITY
                                            : 0.0;
        iacc[k] = fn == OPSCHED_REDUCE_PROD  ? 1
                  : fn == OPSCHED_REDUCE_MAX ? INT64_MIN
                  : fn == OPSCHED_REDUCE_MIN ? INT64_MAX
                                             : 0;
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
        if (as_int) {
            int64_t x = a->i[k];
            uint64_t u = (uint64_t)iacc[slot], ux = (uint64_t)x;
            switch (fn) {
            case OPSCHED_REDUCE_PROD:
                iacc[slot] = (int64_t)(u * ux);
                break;
            case OPSCHED_REDUCE_MAX:
                iacc[slot] = OS_MAX(iacc[slot], x);
                break;
            case OPSCHED_REDUCE_MIN:
                iacc[slot] = OS_MIN(iacc[slot], x);
                break;
            case OPSCHED_REDUCE_L1:
                iacc[slot] = (int64_t)(u + (x < 0 ? 0 - ux : ux));
                break;
            case OPSCHED_REDUCE_SUMSQUARE:
                iacc[slot] = (int64_t)(u + ux * ux);
                break;
            default:
                iacc[slot] = (int64_t)(u + ux);
                break;
            }
            continue;
        }
        double x = os_onnx_cval_float(a, k);
        switch (fn) {
        case OPSCHED_REDUCE_PROD:
            acc[slot] *= x;
            break;
        case OPSCHED_REDUCE_MAX:
            acc[slot] = isnan(x) || isnan(acc[slot]) ? NAN : fmax(acc[slot], x);
            break;
        case OPSCHED_REDUCE_MIN:
            acc[slot] = isnan(x) || isnan(acc[slot]) ? NAN : fmin(acc[slot], x);
            break;
        case OPSCHED_REDUCE_L1:
            acc[slot] += fabs(x);
            break;
        case OPSCHED_REDUCE_L2:
        case OPSCHED_REDUCE_SUMSQUARE:
            acc[slot] += x * x;
            break;
        case OPSCHED_REDUCE_LOGSUMEXP:
            acc[slot] += exp(x);
            break;
        default:
            acc[slot] += x;
            break;
        }
    }
    for (int64_t k = 0; k < r->n; k++) {
        if (as_int) {
            int64_t v = iacc[k];
            if (fn == OPSCHED_REDUCE_MEAN) v = count ? v / count : 0;
            put(r, k, 0, v, 0);
            continue;
        }
        double v = acc[k];
        if (fn == OPSCHED_REDUCE_MEAN) v = v / (double)count;
        if (fn == OPSCHED_REDUCE_L2) v = sqrt(v);
        if (fn == OPSCHED_REDUCE_LOGSUM || fn == OPSCHED_REDUCE_LOGSUMEXP) v = log(v);
        put(r, k, v, 0, 1);
    }
    free(acc);
    free(iacc);
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_arg(os_loader *L, int node, const os_cval *a, int is_max)
{
    int64_t axis = 0, keep = 1, last = 0;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &axis));
    OS_TRY(os_onnx_attr_int(L, node, "keepdims", &keep));
    OS_TRY(os_onnx_attr_int(L, node, "select_last_index", &last));
    OS_TRY(os_onnx_axis(L, node, axis, a->shape.ndim, &axis));
    int64_t dim = a->shape.d[axis];
    if (dim == 0)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "axis %lld is empty", (long long)axis);
    opsched_shape o = {0};
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < a->shape.ndim; d++) {
        if (d < axis) outer *= a->shape.d[d];
        if (d > axis) inner *= a->shape.d[d];
        if (d != axis)
            o.d[o.ndim++] = a->shape.d[d];
        else if (keep)
            o.d[o.ndim++] = 1;
    }
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, OS_ONNX_INT64, &o, &r));
    for (int64_t i = 0; i < outer; i++)
        for (int64_t m = 0; m < inner; m++) {
            int64_t best = 0;
            double bv = os_onnx_cval_float(a, i * dim * inner + m);
            for (int64_t j = 1; j < dim; j++) {
                double v = os_onnx_cval_float(a, (i * dim + j) * inner + m);
                int better = is_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
                if (better) {
                    best = j;
                    bv = v;
                }
            }
            r->i[i * inner + m] = best;
        }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_cumsum(os_loader *L, int node, const os_cval *a, const os_cval *ax)
{
    int64_t exclusive = 0, reverse = 0, axis;
    OS_TRY(os_onnx_attr_int(L, node, "exclusive", &exclusive));
    OS_TRY(os_onnx_attr_int(L, node, "reverse", &reverse));
    if (!ax || ax->n != 1 || ax->is_float)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "axis must be one integer");
    OS_TRY(os_onnx_axis(L, node, ax->i[0], a->shape.ndim, &axis));
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, &a->shape, &r));
    int64_t outer = 1, inner = 1, dim = a->shape.d[axis];
    for (int d = 0; d < a->shape.ndim; d++) {
        if (d < axis) outer *= a->shape.d[d];
        if (d > axis) inner *= a->shape.d[d];
    }
    for (int64_t i = 0; i < outer; i++)
        for (int64_t m = 0; m < inner; m++) {
            double fs = 0;
            int64_t is = 0;
            for (int64_t t = 0; t < dim; t++) {
                int64_t j = reverse ? dim - 1 - t : t, e = (i * dim + j) * inner + m;
                if (exclusive) put(r, e, fs, is, a->is_float);
                if (a->is_float)
                    fs += a->f[e];
                else
                    is = (int64_t)((uint64_t)is + (uint64_t)a->i[e]);
                if (!exclusive) put(r, e, fs, is, a->is_float);
            }
        }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

/* ---- indexing ------------------------------------------------------------------------ */

static int index_ok(int64_t *at, int64_t dim)
{
    if (*at < -dim || *at >= dim) return 0;
    if (*at < 0) *at += dim;
    return 1;
}

static opsched_status bad_index(os_loader *L, int node, int64_t at, int64_t dim)
{
    return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "index %lld is out of range for size %lld",
                             (long long)at, (long long)dim);
}

static opsched_status fold_gather_elements(os_loader *L, int node, const os_cval *a,
                                           const os_cval *idx)
{
    int64_t axis = 0;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &axis));
    OS_TRY(os_onnx_axis(L, node, axis, a->shape.ndim, &axis));
    if (idx->is_float || idx->shape.ndim != a->shape.ndim)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                 "indices must be integers of the data's rank");
    for (int d = 0; d < a->shape.ndim; d++)
        if (d != axis && idx->shape.d[d] > a->shape.d[d])
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "indices do not fit the data");
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, &idx->shape, &r));
    int64_t c[OPSCHED_MAX_DIMS];
    for (int64_t k = 0; k < r->n; k++) {
        unravel(k, &idx->shape, c);
        int64_t at = idx->i[k];
        if (!index_ok(&at, a->shape.d[axis]))
            return bad_index(L, node, idx->i[k], a->shape.d[axis]);
        c[axis] = at;
        copy_elem(r, k, a, ravel(c, &a->shape));
    }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

/* The element of data that index tuple t (of `last` values, after `batch`
 * batch coordinates) names, and the count of elements a tuple selects. */
static opsched_status nd_base(os_loader *L, int node, const opsched_shape *data,
                              const int64_t *batch_c, int batch, const int64_t *t, int64_t last,
                              int64_t *base)
{
    int64_t c[OPSCHED_MAX_DIMS] = {0};
    for (int d = 0; d < batch; d++)
        c[d] = batch_c[d];
    for (int64_t j = 0; j < last; j++) {
        int64_t at = t[j];
        if (!index_ok(&at, data->d[batch + j])) return bad_index(L, node, t[j], data->d[batch + j]);
        c[batch + j] = at;
    }
    *base = ravel(c, data);
    return OPSCHED_OK;
}

static opsched_status fold_gather_nd(os_loader *L, int node, const os_cval *a, const os_cval *idx)
{
    int64_t b = 0;
    OS_TRY(os_onnx_attr_int(L, node, "batch_dims", &b));
    const opsched_shape *x = &a->shape, *is = &idx->shape;
    if (idx->is_float || is->ndim < 1)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                 "indices must be integers of rank 1 or more");
    int64_t last = is->d[is->ndim - 1];
    if (b < 0 || b >= is->ndim || b >= x->ndim || last < 1 || b + last > x->ndim)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "indices do not fit the data");
    opsched_shape o = {0};
    for (int d = 0; d < is->ndim - 1; d++)
        o.d[o.ndim++] = is->d[d];
    int64_t chunk = 1;
    for (int d = (int)(b + last); d < x->ndim; d++) {
        if (o.ndim == OPSCHED_MAX_DIMS)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                     "the result has too many dims");
        o.d[o.ndim++] = x->d[d];
        chunk *= x->d[d];
    }
    for (int d = 0; d < b; d++)
        if (x->d[d] != is->d[d])
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "batch axis %d differs", d);
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, &o, &r));
    int64_t tuples = last ? idx->n / last : 0, c[OPSCHED_MAX_DIMS];
    opsched_shape ts = *is;
    ts.ndim--;
    for (int64_t t = 0; t < tuples; t++) {
        unravel(t, &ts, c);
        int64_t base;
        OS_TRY(nd_base(L, node, x, c, (int)b, idx->i + t * last, last, &base));
        for (int64_t m = 0; m < chunk; m++)
            copy_elem(r, t * chunk + m, a, base + m);
    }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status scatter_reduction(os_loader *L, int node, int *red)
{
    char buf[16];
    const char *s = "none";
    OS_TRY(os_onnx_attr_string(L, node, "reduction", buf, sizeof(buf), &s));
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) {
            *red = i;
            return OPSCHED_OK;
        }
    return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "unknown reduction '%s'", s);
}

static void scatter_one(os_cval *r, int64_t at, const os_cval *u, int64_t k, int red)
{
    if (red == 0) {
        copy_elem(r, at, u, k);
        return;
    }
    if (r->is_float) {
        double x = r->f[at], y = os_onnx_cval_float(u, k);
        double v = red == 1 ? x + y : red == 2 ? x * y : red == 3 ? fmax(x, y) : fmin(x, y);
        put(r, at, v, 0, 1);
    } else {
        int64_t x = r->i[at], y = u->i[k];
        uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
        int64_t v = red == 1   ? (int64_t)(ux + uy)
                    : red == 2 ? (int64_t)(ux * uy)
                    : red == 3 ? OS_MAX(x, y)
                               : OS_MIN(x, y);
        put(r, at, 0, v, 0);
    }
}

static opsched_status fold_scatter(os_loader *L, int node, const char *op, const os_cval *a,
                                   const os_cval *idx, const os_cval *u)
{
    int red = 0;
    if (L->opset >= 16) OS_TRY(scatter_reduction(L, node, &red));
    if (idx->is_float)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "indices must be integers");
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, &a->shape, &r));
    for (int64_t k = 0; k < a->n; k++)
        copy_elem(r, k, a, k);
    const opsched_shape *x = &a->shape, *is = &idx->shape;
    int64_t c[OPSCHED_MAX_DIMS] = {0};
    if (strcmp(op, "ScatterND") == 0) {
        int64_t last = is->ndim ? is->d[is->ndim - 1] : 0, chunk = 1;
        if (is->ndim < 1 || last < 1 || last > x->ndim)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "indices do not fit the data");
        for (int d = (int)last; d < x->ndim; d++)
            chunk *= x->d[d];
        int64_t tuples = idx->n / last;
        if (u->n != tuples * chunk)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "updates do not fit");
        for (int64_t t = 0; t < tuples; t++) {
            int64_t base;
            OS_TRY(nd_base(L, node, x, c, 0, idx->i + t * last, last, &base));
            for (int64_t m = 0; m < chunk; m++)
                scatter_one(r, base + m, u, t * chunk + m, red);
        }
    } else {
        int64_t axis = 0;
        OS_TRY(os_onnx_attr_int(L, node, "axis", &axis));
        OS_TRY(os_onnx_axis(L, node, axis, x->ndim, &axis));
        if (is->ndim != x->ndim || !opsched_shape_equal(is, &u->shape))
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "indices and updates do not fit");
        for (int64_t k = 0; k < idx->n; k++) {
            unravel(k, is, c);
            int64_t at = idx->i[k];
            if (!index_ok(&at, x->d[axis])) return bad_index(L, node, idx->i[k], x->d[axis]);
            c[axis] = at;
            for (int d = 0; d < x->ndim; d++)
                if (c[d] >= x->d[d])
                    return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                             "indices do not fit the data");
            scatter_one(r, ravel(c, x), u, k, red);
        }
    }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_onehot(os_loader *L, int node, const os_cval *idx, const os_cval *dep,
                                  const os_cval *vals)
{
    int64_t axis = -1;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &axis));
    if (dep->n != 1 || vals->n != 2)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE,
                                 "depth must hold one value and values two");
    int64_t depth = os_onnx_cval_int(dep, 0), rank = idx->shape.ndim;
    if (depth < 1 || depth > OS_ONNX_MAX_DIM)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "depth %lld is invalid",
                                 (long long)depth);
    if (axis < 0) axis += rank + 1;
    if (axis < 0 || axis > rank || rank + 1 > OPSCHED_MAX_DIMS)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "axis out of range");
    opsched_shape o = {0};
    for (int d = 0; d <= rank; d++) {
        if (d == axis) o.d[o.ndim++] = depth;
        if (d < rank) o.d[o.ndim++] = idx->shape.d[d];
    }
    OS_TRY(os_onnx_check_dims(L, node, &o));
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, vals->elem, &o, &r));
    int64_t c[OPSCHED_MAX_DIMS], ic[OPSCHED_MAX_DIMS];
    for (int64_t k = 0; k < r->n; k++) {
        unravel(k, &o, c);
        for (int d = 0, j = 0; d <= rank; d++)
            if (d != axis) ic[j++] = c[d];
        int64_t at = os_onnx_cval_int(idx, ravel(ic, &idx->shape));
        if (at < 0) at += depth;
        copy_elem(r, k, vals, at == c[axis] ? 1 : 0);
    }
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
        if (os_onnx_elem_size(a->t->data_type) == 0)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                     "tensor '%s' has element type %s, which opsched graphs "
                                     "cannot hold",
                                     v >= 0 ? L->vals[v].name : "value",
                                     os_onnx_elem_name(a->t->data_type));
        opsched_status st = os_onnx_tensor_cval(L, a->t, v >= 0 ? L->vals[v].name : "value",
                                                OS_ONNX_FOLD_MAX_ELEMS, &r);
        if (st != OPSCHED_OK && !L->fold_too_big) return st;
        if (st != OPSCHED_OK) {
            /* The host table is full (many large constants): the graph
             * holds this one, as it holds one too large for the table. */
            L->fold_too_big = 0;
            opsched_ctx_clear_error(L->ctx);
            r = NULL;
        }
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
    } else if (strcmp(an, "value_string") == 0 || strcmp(an, "value_strings") == 0) {
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "a string constant ('%s') is not supported: opsched graphs hold "
                                 "no strings",
                                 an);
    } else if (strcmp(an, "sparse_value") == 0) {
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "a sparse constant ('sparse_value') is not supported");
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

static int is_reduce(const char *op)
{
    static const char *const ops[] = {
        "ReduceSum", "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",
        "ReduceL1",  "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
    return is_one_of(op, ops, OS_ARRAY_LEN(ops));
}

/* Clip of a known operand (pads computed from static shapes: timm's
 * "same" padding clamps them at zero).  Bounds absent are open; opset < 11
 * gives them as attributes. */
static opsched_status fold_clip(os_loader *L, int node, const os_cval *a, int *done)
{
    const os_cval *b[2] = {NULL, NULL};
    float att[2] = {-FLT_MAX, FLT_MAX};
    if (L->opset < 11) {
        OS_TRY(os_onnx_attr_float(L, node, "min", &att[0]));
        OS_TRY(os_onnx_attr_float(L, node, "max", &att[1]));
    } else {
        for (int k = 1; k <= 2; k++) {
            if (os_onnx_in(L, node, k) < 0) continue;
            b[k - 1] = os_onnx_in_cval(L, node, k);
            if (b[k - 1]->n != 1)
                return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "%s must be a scalar",
                                         k == 1 ? "min" : "max");
        }
    }
    os_cval *r;
    OS_TRY(os_onnx_cval_new(L, a->elem, &a->shape, &r));
    *done = 1;
    for (int64_t k = 0; k < a->n; k++) {
        if (a->is_float) {
            double v = a->f[k];
            double lo = b[0] ? os_onnx_cval_float(b[0], 0) : (L->opset < 11 ? att[0] : -INFINITY);
            double hi = b[1] ? os_onnx_cval_float(b[1], 0) : (L->opset < 11 ? att[1] : INFINITY);
            v = v < lo ? lo : v;
            r->f[k] = os_onnx_round_to(a->elem, v > hi ? hi : v);
        } else {
            int64_t v = a->i[k];
            if (b[0] && v < os_onnx_cval_int(b[0], 0)) v = os_onnx_cval_int(b[0], 0);
            if (b[1] && v > os_onnx_cval_int(b[1], 0)) v = os_onnx_cval_int(b[1], 0);
            r->i[k] = v;
        }
    }
    set_out(L, node, 0, r);
    return OPSCHED_OK;
}

static opsched_status fold_node(os_loader *L, int node, int *done)
{
    static const char *const other_ops[] = {
        "Identity", "Dropout",         "Cast",      "Reshape",   "Flatten",
        "Squeeze",  "Unsqueeze",       "Expand",    "Gather",    "Slice",
        "Concat",   "ConstantOfShape", "Range",     "Where",     "ArgMax",
        "ArgMin",   "CumSum",          "Transpose", "Tile",      "Trilu",
        "Split",    "GatherElements",  "GatherND",  "ScatterND", "ScatterElements",
        "OneHot"};
    const char *op = L->gp->node[node]->op_type;
    *done = 0;
    if (strcmp(op, "Constant") == 0) {
        *done = 1;
        return fold_constant(L, node);
    }
    if (os_onnx_out(L, node, 0) < 0 && strcmp(op, "Split") != 0) return OPSCHED_OK;
    if (strcmp(op, "Shape") == 0 || strcmp(op, "Size") == 0) {
        *done = 1;
        return fold_shape(L, node, op[1] == 'i');
    }
    if (strcmp(op, "EyeLike") == 0) return fold_eyelike(L, node, done);
    ew_op ew = EW_ADD;
    int is_ew = 0;
    for (size_t i = 0; i < OS_ARRAY_LEN(ew_names); i++)
        if (strcmp(op, ew_names[i].name) == 0) {
            ew = ew_names[i].op;
            is_ew = 1;
        }
    /* Every operand must be known (Dropout's ratio and mode do not matter). */
    int n_in = os_onnx_num_file_in(L, node);
    if (n_in == 0) return OPSCHED_OK;
    const os_cval *a = os_onnx_in_cval(L, node, 0);
    if (!a) return OPSCHED_OK;
    if (strcmp(op, "CastLike") == 0) {
        /* Only the type of the second input matters. */
        int v = os_onnx_root(L, os_onnx_in(L, node, 1));
        if (v < 0) return OPSCHED_OK;
        const os_val *t = &L->vals[v];
        return fold_cast(L, node, a, t->cv ? t->cv->elem : t->elem, done);
    }
    for (int k = 0; k < n_in; k++)
        if (os_onnx_in(L, node, k) >= 0 && !os_onnx_in_cval(L, node, k)) return OPSCHED_OK;
    if (is_ew) {
        *done = 1;
        return fold_ew(L, node, op, ew);
    }
    if (is_reduce(op)) {
        *done = 1;
        return fold_reduce(L, node, op, a);
    }
    if (strcmp(op, "Clip") == 0) return fold_clip(L, node, a, done);
    if (!is_one_of(op, other_ops, OS_ARRAY_LEN(other_ops))) return fold_unary(L, node, op, a, done);
    *done = 1;
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
    if (strcmp(op, "Cast") == 0) {
        int64_t to = 0;
        OS_TRY(os_onnx_attr_int(L, node, "to", &to));
        *done = 0;
        return fold_cast(L, node, a, (int32_t)to, done);
    }
    if (strcmp(op, "Expand") == 0) return fold_expand(L, node, a);
    if (strcmp(op, "Slice") == 0) return fold_slice(L, node, a);
    if (strcmp(op, "Concat") == 0) return fold_concat(L, node);
    if (strcmp(op, "ConstantOfShape") == 0) return fold_constant_of_shape(L, node, done);
    if (strcmp(op, "ArgMax") == 0 || strcmp(op, "ArgMin") == 0)
        return fold_arg(L, node, a, op[4] == 'a');
    if (strcmp(op, "Transpose") == 0) return fold_transpose(L, node, a);
    if (strcmp(op, "Tile") == 0) return fold_tile(L, node, a);
    if (strcmp(op, "Trilu") == 0) return fold_trilu(L, node, a);
    if (strcmp(op, "Split") == 0) return fold_split(L, node, a);
    const os_cval *b = os_onnx_in_cval(L, node, 1), *c = os_onnx_in_cval(L, node, 2);
    if (strcmp(op, "CumSum") == 0) return fold_cumsum(L, node, a, b);
    if (!b) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "input 1 is missing");
    if (strcmp(op, "Gather") == 0) return fold_gather(L, node, a, b);
    if (strcmp(op, "GatherElements") == 0) return fold_gather_elements(L, node, a, b);
    if (strcmp(op, "GatherND") == 0) return fold_gather_nd(L, node, a, b);
    if (!c) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "needs three inputs");
    if (strcmp(op, "Range") == 0) return fold_range(L, node, a, b, c);
    if (strcmp(op, "OneHot") == 0) return fold_onehot(L, node, a, b, c);
    if (strcmp(op, "Where") == 0) return fold_where(L, node, a, b, c);
    return fold_scatter(L, node, op, a, b, c);
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
