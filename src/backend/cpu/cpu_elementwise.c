/*
 * cpu_elementwise.c - element-wise operators on every type: the activation
 * kinds (Relu, Clip, Sigmoid...) and the Unary functions, the arithmetic
 * kinds (Add, Sub, Mul, Div, Pow) and the Binary functions with numpy
 * broadcasting, Where and Cast.
 *
 * Values are computed in one of two domains.  Floats (and any operation
 * that mixes a float in) are computed in double and rounded once when
 * stored.  Integers and bool are computed in int64 with the wrap-around of
 * two's complement, then stored wrapped to their width as NumPy's integer
 * arithmetic does.  Nothing is left undefined: integer division or modulo
 * by zero gives 0 (NumPy's answer), INT_MIN / -1 wraps, shifts by the
 * type's width or more give 0 (-1 for a negative value shifted right),
 * and float-to-integer conversions truncate toward zero and saturate.
 */
#include <stdlib.h>

#include "backend/cpu/cpu_impl.h"

/* ---- one value in double ------------------------------------------------- */

static double sigmoid(double x)
{
    return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

/* f(x) for every activation kind and Unary function, in double. */
static double unary_fx(opsched_op_kind op, const opsched_op_attr *at, double x)
{
    switch (op) {
    case OPSCHED_OP_RELU:
        return x < 0 ? 0.0 : x;
    case OPSCHED_OP_CLIP:
        return x < at->clip.min   ? at->clip.min
               : x > at->clip.max ? at->clip.max
                                      : x;
    case OPSCHED_OP_SIGMOID:
        return sigmoid(x);
    case OPSCHED_OP_TANH:
        return tanh(x);
    case OPSCHED_OP_GELU:
        if (at->gelu.tanh_approx)
            return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
        return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
    case OPSCHED_OP_ERF:
        return erf(x);
    case OPSCHED_OP_HARDSIGMOID: {
        double v = at->hardsigmoid.alpha * x + at->hardsigmoid.beta;
        return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    case OPSCHED_OP_HARDSWISH: {
        double v = x / 6.0 + 0.5;
        return x * (v < 0 ? 0 : v > 1 ? 1 : v);
    }
    case OPSCHED_OP_SQRT:
        return sqrt(x);
    case OPSCHED_OP_UNARY:
        return opsched_unary_eval(&at->unary, x);
    default: /* Identity, Dropout */
        return x;
    }
}

static double unary_f(const cpu_node *n, double x)
{
    return unary_fx(n->op, &n->attr, x);
}

/* 1 when f has exact integer semantics (unary_i); the others go through
 * double and are truncated. */
static int unary_is_integral(const cpu_node *n)
{
    switch (n->op) {
    case OPSCHED_OP_RELU:
    case OPSCHED_OP_CLIP:
    case OPSCHED_OP_IDENTITY:
    case OPSCHED_OP_DROPOUT:
        return 1;
    case OPSCHED_OP_UNARY:
        switch (n->attr.unary.fn) {
        case OPSCHED_UNARY_ABS:
        case OPSCHED_UNARY_NEG:
        case OPSCHED_UNARY_SIGN:
        case OPSCHED_UNARY_NOT:
        case OPSCHED_UNARY_BITWISE_NOT:
        case OPSCHED_UNARY_FLOOR:
        case OPSCHED_UNARY_CEIL:
        case OPSCHED_UNARY_ROUND:
        case OPSCHED_UNARY_ISNAN:
        case OPSCHED_UNARY_ISINF:
            return 1;
        default:
            return 0;
        }
    default:
        return 0;
    }
}

static int64_t unary_i(const cpu_node *n, int64_t x)
{
    switch (n->op) {
    case OPSCHED_OP_RELU:
        return x < 0 ? 0 : x;
    case OPSCHED_OP_CLIP: {
        int64_t lo = cpu_double_to_int(n->attr.clip.min, OPSCHED_INT64);
        int64_t hi = cpu_double_to_int(n->attr.clip.max, OPSCHED_INT64);
        return x < lo ? lo : x > hi ? hi : x;
    }
    case OPSCHED_OP_UNARY:
        break;
    default:
        return x;
    }
    switch (n->attr.unary.fn) {
    case OPSCHED_UNARY_ABS:
        return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case OPSCHED_UNARY_NEG:
        return (int64_t)(0 - (uint64_t)x);
    case OPSCHED_UNARY_SIGN:
        return (x > 0) - (x < 0);
    case OPSCHED_UNARY_NOT:
        return x == 0;
    case OPSCHED_UNARY_BITWISE_NOT:
        return ~x;
    case OPSCHED_UNARY_ISNAN:
    case OPSCHED_UNARY_ISINF:
        return 0;
    default: /* Floor, Ceil, Round */
        return x;
    }
}

opsched_status cpu_loop_unary(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out)
{
    (void)ctx;
    opsched_dtype xdt = n->in_dt[0], ydt = n->out_dt[0];
    int64_t total = opsched_shape_numel(&n->in[0]);
    if (cpu_is_float(xdt) && cpu_is_float(ydt)) {
        const float *x = in[0];
        float *y = out[0];
        for (int64_t i = 0; i < total; i++)
            y[i] = (float)unary_f(n, x[i]);
    } else if (!cpu_is_float(xdt) && unary_is_integral(n)) {
        for (int64_t i = 0; i < total; i++)
            cpu_store_i(out[0], ydt, i, unary_i(n, cpu_load_i(in[0], xdt, i)));
    } else {
        for (int64_t i = 0; i < total; i++)
            cpu_store_f(out[0], ydt, i, unary_f(n, cpu_load_f(in[0], xdt, i)));
    }
    return OPSCHED_OK;
}

/* ---- two values ---------------------------------------------------------- */

/* The Binary function a node computes; the arithmetic kinds map to
 * OPSCHED_BINARY_FN_COUNT and are told apart by op. */
static opsched_binary_fn binary_fnx(opsched_op_kind op, const opsched_op_attr *at)
{
    return op == OPSCHED_OP_BINARY ? at->binary.fn : OPSCHED_BINARY_FN_COUNT;
}

static opsched_binary_fn binary_fn(const cpu_node *n)
{
    return binary_fnx(n->op, &n->attr);
}

/* Python's modulo: the result has the sign of the divisor. */
static double mod_f(double a, double b)
{
    double r = fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r == 0 ? copysign(0.0, b) : r;
}

static double binary_fx(opsched_op_kind op, const opsched_op_attr *at, double a, double b)
{
    switch (op) {
    case OPSCHED_OP_ADD:
        return a + b;
    case OPSCHED_OP_SUB:
        return a - b;
    case OPSCHED_OP_MUL:
        return a * b;
    case OPSCHED_OP_DIV:
        return a / b;
    case OPSCHED_OP_POW:
        return pow(a, b);
    default:
        break;
    }
    switch (binary_fnx(op, at)) {
    case OPSCHED_BINARY_MOD:
        return mod_f(a, b);
    case OPSCHED_BINARY_FMOD:
        return fmod(a, b);
    case OPSCHED_BINARY_MIN: /* NaN wins, as numpy.minimum */
        return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    case OPSCHED_BINARY_MAX:
        return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case OPSCHED_BINARY_EQUAL:
        return a == b;
    case OPSCHED_BINARY_LESS:
        return a < b;
    case OPSCHED_BINARY_LESS_EQUAL:
        return a <= b;
    case OPSCHED_BINARY_GREATER:
        return a > b;
    case OPSCHED_BINARY_GREATER_EQUAL:
        return a >= b;
    case OPSCHED_BINARY_AND:
        return a != 0 && b != 0;
    case OPSCHED_BINARY_OR:
        return a != 0 || b != 0;
    case OPSCHED_BINARY_XOR:
        return (a != 0) != (b != 0);
    case OPSCHED_BINARY_PRELU:
        return a < 0 ? a * b : a;
    default: { /* shifts and bitwise functions: integers only in ONNX */
        int64_t x = cpu_double_to_int(a, OPSCHED_INT64), y = cpu_double_to_int(b, OPSCHED_INT64);
        switch (binary_fnx(op, at)) {
        case OPSCHED_BINARY_BITWISE_AND:
            return (double)(x & y);
        case OPSCHED_BINARY_BITWISE_OR:
            return (double)(x | y);
        case OPSCHED_BINARY_BITWISE_XOR:
            return (double)(x ^ y);
        default:
            return NAN;
        }
    }
    }
}

static double binary_f(const cpu_node *n, double a, double b)
{
    return binary_fx(n->op, &n->attr, a, b);
}

/* a to the power e, wrapping; a negative exponent leaves 1 / a^-e
 * truncated (0 unless a is 1 or -1). */
static int64_t pow_i(int64_t a, int64_t e)
{
    if (e < 0) return a == 1 ? 1 : a == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, base = (uint64_t)a;
    while (e) {
        if (e & 1) r *= base;
        base *= base;
        e >>= 1;
    }
    return (int64_t)r;
}

/* a >> s on the two's complement value (arithmetic for a negative a). */
static int64_t shift_right(int64_t a, int64_t s)
{
    return a < 0 ? ~(~a >> s) : a >> s;
}

/* f(a, b) on integers of `bits` bits. */
static int64_t binary_i(const cpu_node *n, int64_t a, int64_t b, int bits)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (n->op) {
    case OPSCHED_OP_ADD:
        return (int64_t)(ua + ub);
    case OPSCHED_OP_SUB:
        return (int64_t)(ua - ub);
    case OPSCHED_OP_MUL:
        return (int64_t)(ua * ub);
    case OPSCHED_OP_DIV: /* truncates toward zero */
        if (b == 0) return 0;
        if (b == -1) return (int64_t)(0 - ua);
        return a / b;
    case OPSCHED_OP_POW:
        return pow_i(a, b);
    default:
        break;
    }
    switch (binary_fn(n)) {
    case OPSCHED_BINARY_MOD: { /* the sign of the divisor */
        if (b == 0 || b == -1) return 0;
        int64_t r = a % b;
        return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
    }
    case OPSCHED_BINARY_FMOD: /* the sign of the dividend */
        return b == 0 || b == -1 ? 0 : a % b;
    case OPSCHED_BINARY_MIN:
        return a < b ? a : b;
    case OPSCHED_BINARY_MAX:
        return a > b ? a : b;
    case OPSCHED_BINARY_EQUAL:
        return a == b;
    case OPSCHED_BINARY_LESS:
        return a < b;
    case OPSCHED_BINARY_LESS_EQUAL:
        return a <= b;
    case OPSCHED_BINARY_GREATER:
        return a > b;
    case OPSCHED_BINARY_GREATER_EQUAL:
        return a >= b;
    case OPSCHED_BINARY_AND:
        return a != 0 && b != 0;
    case OPSCHED_BINARY_OR:
        return a != 0 || b != 0;
    case OPSCHED_BINARY_XOR:
        return (a != 0) != (b != 0);
    case OPSCHED_BINARY_SHIFT_LEFT:
        return b < 0 || b >= bits ? 0 : (int64_t)(ua << b);
    case OPSCHED_BINARY_SHIFT_RIGHT:
        if (b < 0 || b >= bits) return a < 0 ? -1 : 0;
        return shift_right(a, b);
    case OPSCHED_BINARY_BITWISE_AND:
        return a & b;
    case OPSCHED_BINARY_BITWISE_OR:
        return a | b;
    case OPSCHED_BINARY_BITWISE_XOR:
        return a ^ b;
    case OPSCHED_BINARY_PRELU:
        return a < 0 ? (int64_t)(ua * ub) : a;
    default:
        return 0;
    }
}

opsched_status cpu_loop_binary(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    (void)ctx;
    const opsched_shape *o = &n->out[0];
    opsched_dtype adt = n->in_dt[0], bdt = n->in_dt[1], ydt = n->out_dt[0];
    int ints = !cpu_is_float(adt) && !cpu_is_float(bdt);
    int floats = cpu_is_float(adt) && cpu_is_float(bdt) && cpu_is_float(ydt);
    int bits = 8 * (int)cpu_esize(adt);
    cpu_walk w;
    int64_t len, rows, i = 0;
    cpu_walk_init(&w, o);
    cpu_bcast_strides(&n->in[0], o, w.st[0]);
    cpu_bcast_strides(&n->in[1], o, w.st[1]);
    cpu_rows(o, &len, &rows);
    int last = o->ndim - 1;
    int64_t sa = last >= 0 ? w.st[0][last] : 0, sb = last >= 0 ? w.st[1][last] : 0;
    for (int64_t r = 0; r < rows; r++, cpu_walk_step(&w, last)) {
        int64_t oa = w.off[0], ob = w.off[1];
        if (floats) {
            const float *a = in[0], *b = in[1];
            float *y = out[0];
            for (int64_t j = 0; j < len; j++)
                y[i++] = (float)binary_f(n, a[oa + j * sa], b[ob + j * sb]);
        } else if (ints) {
            for (int64_t j = 0; j < len; j++)
                cpu_store_i(out[0], ydt, i++,
                            binary_i(n, cpu_load_i(in[0], adt, oa + j * sa),
                                     cpu_load_i(in[1], bdt, ob + j * sb), bits));
        } else {
            for (int64_t j = 0; j < len; j++)
                cpu_store_f(out[0], ydt, i++,
                            binary_f(n, cpu_load_f(in[0], adt, oa + j * sa),
                                     cpu_load_f(in[1], bdt, ob + j * sb)));
        }
    }
    return OPSCHED_OK;
}

/* ---- element-wise chains ------------------------------------------------- */

/* Step c of a chain over v[0..m) (the running values, in double as the
 * one-element form computes them): Add, Sub, Mul and Relu as plain loops
 * the compiler vectorizes, anything else element by element.  u is the
 * step's side operand from element `at` of its row, `su` apart. */
static void chain_step_block(const cpu_chain_step *c, double *v, int64_t m, const float *u,
                             int64_t su)
{
    if (!c->binary) {
        if (c->op == OPSCHED_OP_RELU) {
            for (int64_t j = 0; j < m; j++)
                v[j] = v[j] < 0 ? 0.0 : v[j];
        } else {
            for (int64_t j = 0; j < m; j++)
                v[j] = unary_fx(c->op, &c->attr, v[j]);
        }
        return;
    }
    if (su == 0) { /* the same side value over the block (a per-channel constant) */
        double b = u[0];
        switch (c->op) {
        case OPSCHED_OP_ADD:
            for (int64_t j = 0; j < m; j++)
                v[j] += b;
            return;
        case OPSCHED_OP_MUL:
            for (int64_t j = 0; j < m; j++)
                v[j] *= b;
            return;
        case OPSCHED_OP_SUB:
            if (c->swap)
                for (int64_t j = 0; j < m; j++)
                    v[j] = b - v[j];
            else
                for (int64_t j = 0; j < m; j++)
                    v[j] -= b;
            return;
        default:
            break;
        }
    } else if (su == 1 && (c->op == OPSCHED_OP_ADD || c->op == OPSCHED_OP_MUL)) {
        if (c->op == OPSCHED_OP_ADD)
            for (int64_t j = 0; j < m; j++)
                v[j] += (double)u[j];
        else
            for (int64_t j = 0; j < m; j++)
                v[j] *= (double)u[j];
        return;
    }
    for (int64_t j = 0; j < m; j++) {
        double b = u[j * su];
        v[j] = c->swap ? binary_fx(c->op, &c->attr, b, v[j]) : binary_fx(c->op, &c->attr, v[j], b);
    }
}

#define CHAIN_BLOCK 256

opsched_status cpu_loop_chain(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out)
{
    if (n->n_in + 1 > CPU_WALK_OPS)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "cpu: a chain of %d operands", n->n_in);
    const opsched_shape *o = &n->out[0];
    cpu_walk w;
    int64_t len, rows, i = 0;
    cpu_walk_init(&w, o);
    for (int k = 0; k < n->n_in; k++)
        cpu_bcast_strides(&n->in[k], o, w.st[k]);
    cpu_walk_coalesce(&w, n->n_in);
    int last = w.nd - 1;
    len = last >= 0 ? w.dims[last] : 1;
    rows = 1;
    for (int d = 0; d < last; d++)
        rows *= w.dims[d];
    if (len == 0) rows = 0;
    int64_t step[CPU_WALK_OPS];
    for (int k = 0; k < n->n_in; k++)
        step[k] = last >= 0 ? w.st[k][last] : 0;
    float *y = out[0];
    double v[CHAIN_BLOCK];
    /* Block by block of a row, one step of the chain at a time: the same
     * double arithmetic in the same order as element by element. */
    for (int64_t r = 0; r < rows; r++, cpu_walk_step(&w, last)) {
        for (int64_t j0 = 0; j0 < len; j0 += CHAIN_BLOCK) {
            int64_t m = len - j0 < CHAIN_BLOCK ? len - j0 : CHAIN_BLOCK;
            const float *x = (const float *)in[0] + w.off[0] + j0 * step[0];
            for (int64_t j = 0; j < m; j++)
                v[j] = x[j * step[0]];
            for (int s = 0; s < n->n_chain; s++) {
                const cpu_chain_step *c = &n->chain[s];
                const float *u = c->binary ? (const float *)in[c->operand] + w.off[c->operand] +
                                                 j0 * step[c->operand]
                                           : NULL;
                chain_step_block(c, v, m, u, c->binary ? step[c->operand] : 0);
            }
            for (int64_t j = 0; j < m; j++)
                y[i++] = (float)v[j];
        }
    }
    return OPSCHED_OK;
}

opsched_status cpu_loop_se(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out)
{
    const opsched_shape *xs = &n->in[0];
    int64_t N = xs->d[0], C = xs->d[1], HW = xs->d[2] * xs->d[3], H1 = n->se_hidden;
    const float *x = in[0], *w1 = in[n->se_side], *b1 = in[n->se_side + 1];
    const float *w2 = in[n->se_side + 2], *b2 = in[n->se_side + 3];
    float *s = out[0];
    double *m = malloc(sizeof(double) * (size_t)(C + H1 + 1));
    if (!m) return OS_NOMEM(ctx);
    double *h = m + C;
    for (int64_t b = 0; b < N; b++) {
        for (int64_t c = 0; c < C; c++) {
            double acc = 0;
            const float *xp = x + (b * C + c) * HW;
            for (int64_t r = 0; r < HW; r++)
                acc += xp[r];
            m[c] = acc / (double)HW;
        }
        for (int64_t j = 0; j < H1; j++) {
            double acc = n->has_in[n->se_side + 1] ? b1[j] : 0.0;
            for (int64_t c = 0; c < C; c++)
                acc += (double)w1[j * C + c] * m[c];
            h[j] = n->se_act[0] ? unary_fx(n->se_op[0], &n->se_attr[0], acc) : acc;
        }
        for (int64_t c = 0; c < C; c++) {
            double acc = n->has_in[n->se_side + 3] ? b2[c] : 0.0;
            for (int64_t j = 0; j < H1; j++)
                acc += (double)w2[c * H1 + j] * h[j];
            float sc = (float)(n->se_act[1] ? unary_fx(n->se_op[1], &n->se_attr[1], acc) : acc);
            if (!n->se_mul) {
                s[b * C + c] = sc;
                continue;
            }
            /* the multiply, in float as the Mul node computes it */
            const float *xp = x + (b * C + c) * HW;
            float *yp = s + (b * C + c) * HW;
            for (int64_t r = 0; r < HW; r++)
                yp[r] = xp[r] * sc;
        }
    }
    free(m);
    return OPSCHED_OK;
}

/* ---- Where and Cast ------------------------------------------------------ */

opsched_status cpu_loop_where(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out)
{
    (void)ctx;
    const opsched_shape *o = &n->out[0];
    size_t esz = cpu_esize(n->out_dt[0]);
    const uint8_t *cond = in[0];
    cpu_walk w;
    int64_t len, rows, i = 0;
    cpu_walk_init(&w, o);
    for (int k = 0; k < 3; k++)
        cpu_bcast_strides(&n->in[k], o, w.st[k]);
    cpu_rows(o, &len, &rows);
    int last = o->ndim - 1;
    int64_t s[3] = {0, 0, 0};
    for (int k = 0; k < 3 && last >= 0; k++)
        s[k] = w.st[k][last];
    for (int64_t r = 0; r < rows; r++, cpu_walk_step(&w, last)) {
        for (int64_t j = 0; j < len; j++, i++) {
            if (cond[w.off[0] + j * s[0]])
                cpu_copy_elem(out[0], i, in[1], w.off[1] + j * s[1], esz);
            else
                cpu_copy_elem(out[0], i, in[2], w.off[2] + j * s[2], esz);
        }
    }
    return OPSCHED_OK;
}

/* Cast: float to float rounds to the target's precision (stored as f32);
 * float to integer truncates toward zero and saturates (NaN is 0), float to
 * bool is x != 0; integer to integer wraps as NumPy's astype; integer to
 * float rounds to nearest; bool reads as 0 or 1. */
opsched_status cpu_loop_cast(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out)
{
    (void)ctx;
    opsched_dtype from = n->in_dt[0], to = n->out_dt[0];
    int64_t total = opsched_shape_numel(&n->in[0]);
    if (cpu_is_float(from) && cpu_is_float(to)) {
        const float *x = in[0];
        float *y = out[0];
        for (int64_t i = 0; i < total; i++)
            y[i] = to == OPSCHED_F32 ? x[i] : (float)cpu_round_to(x[i], to);
    } else if (cpu_is_float(from)) {
        const float *x = in[0];
        for (int64_t i = 0; i < total; i++)
            cpu_store_f(out[0], to, i, x[i]);
    } else if (cpu_is_float(to)) {
        float *y = out[0];
        for (int64_t i = 0; i < total; i++) {
            int64_t v = cpu_load_i(in[0], from, i);
            /* int64 to f32 directly: one rounding, also above 2^53 */
            y[i] = to == OPSCHED_F32 ? (float)v : (float)cpu_round_to((double)v, to);
        }
    } else {
        for (int64_t i = 0; i < total; i++)
            cpu_store_i(out[0], to, i, cpu_load_i(in[0], from, i));
    }
    return OPSCHED_OK;
}
