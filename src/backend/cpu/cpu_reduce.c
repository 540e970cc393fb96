/*
 * cpu_reduce.c - reductions and what works along one axis: Reduce (every
 * function, any axes, keepdims) and ReduceMean beside oneDNN's f32 one,
 * ArgMax and ArgMin, LogSoftmax, Hardmax, CumSum, TopK and
 * GroupNormalization.
 *
 * Floats accumulate in double and are rounded once when stored.  Integer
 * sums, products, maxima and minima are exact in int64 (wrapping as the
 * type does); the reductions that leave the integers (mean, L2, log-sum,
 * log-sum-exp) are computed in double and truncated.  Reducing an empty
 * set gives what ONNX says: 0 for the sums, 1 for the product, -inf / +inf
 * for max / min (the type's least / greatest value for integers), NaN for
 * the mean, -inf for the logarithmic ones.  NaN propagates through max and
 * min as in NumPy; ArgMax and ArgMin pick a NaN as numpy.argmax and
 * numpy.argmin do; TopK orders NaN above every number, as NumPy's sort.
 */
#include <stdlib.h>

#include "backend/cpu/cpu_impl.h"

/* ---- Reduce -------------------------------------------------------------- */

/* The input shape with every reduced axis set to 1. */
static opsched_shape kept_shape(const cpu_node *n)
{
    const opsched_shape *x = &n->in[0];
    const opsched_reduce_attr *r = &n->attr.reduce;
    opsched_shape kept = *x;
    for (int i = 0; i < x->ndim; i++)
        if (r->n_axes == 0) kept.d[i] = 1;
    for (int k = 0; k < r->n_axes; k++)
        kept.d[r->axes[k]] = 1;
    return kept;
}

static int reduce_is_integral(opsched_reduce_fn fn)
{
    return fn == OPSCHED_REDUCE_SUM || fn == OPSCHED_REDUCE_PROD || fn == OPSCHED_REDUCE_MAX ||
           fn == OPSCHED_REDUCE_MIN || fn == OPSCHED_REDUCE_L1 || fn == OPSCHED_REDUCE_SUMSQUARE;
}

/* Runs the statements given for every element of x, with acc_i the index
 * of its output element and at its own index. */
#define FOR_EACH_REDUCED(w, x, kept, ...)                                                          \
    do {                                                                                           \
        int64_t len_, rows_, at = 0;                                                               \
        cpu_walk_init(&(w), (x));                                                                  \
        cpu_bcast_strides((kept), (x), (w).st[0]);                                                 \
        cpu_rows((x), &len_, &rows_);                                                              \
        int last_ = (x)->ndim - 1;                                                                 \
        int64_t s_ = last_ >= 0 ? (w).st[0][last_] : 0;                                            \
        for (int64_t r_ = 0; r_ < rows_; r_++, cpu_walk_step(&(w), last_)) {                       \
            for (int64_t j_ = 0; j_ < len_; j_++, at++) {                                          \
                int64_t acc_i = (w).off[0] + j_ * s_;                                              \
                __VA_ARGS__;                                                                       \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static opsched_status reduce_int(opsched_ctx *ctx, const cpu_node *n, opsched_reduce_fn fn,
                                 const opsched_shape *kept, void *const *in, void *const *out)
{
    const opsched_shape *x = &n->in[0];
    opsched_dtype xdt = n->in_dt[0], ydt = n->out_dt[0];
    int64_t n_out = opsched_shape_numel(kept);
    int64_t *acc = malloc(sizeof(int64_t) * (size_t)(n_out ? n_out : 1));
    if (!acc) return OS_NOMEM(ctx);
    int64_t init = fn == OPSCHED_REDUCE_PROD  ? 1
                   : fn == OPSCHED_REDUCE_MAX ? cpu_int_min(xdt)
                   : fn == OPSCHED_REDUCE_MIN ? cpu_int_max(xdt)
                                              : 0;
    for (int64_t k = 0; k < n_out; k++)
        acc[k] = init;
    cpu_walk w;
    FOR_EACH_REDUCED(w, x, kept, {
        int64_t v = cpu_load_i(in[0], xdt, at);
        uint64_t a = (uint64_t)acc[acc_i], u = (uint64_t)v;
        switch (fn) {
        case OPSCHED_REDUCE_PROD:
            acc[acc_i] = (int64_t)(a * u);
            break;
        case OPSCHED_REDUCE_MAX:
            acc[acc_i] = v > acc[acc_i] ? v : acc[acc_i];
            break;
        case OPSCHED_REDUCE_MIN:
            acc[acc_i] = v < acc[acc_i] ? v : acc[acc_i];
            break;
        case OPSCHED_REDUCE_L1:
            acc[acc_i] = (int64_t)(a + (v < 0 ? 0 - u : u));
            break;
        case OPSCHED_REDUCE_SUMSQUARE:
            acc[acc_i] = (int64_t)(a + u * u);
            break;
        default: /* sum */
            acc[acc_i] = (int64_t)(a + u);
            break;
        }
    });
    for (int64_t k = 0; k < n_out; k++)
        cpu_store_i(out[0], ydt, k, acc[k]);
    free(acc);
    return OPSCHED_OK;
}

static opsched_status reduce_double(opsched_ctx *ctx, const cpu_node *n, opsched_reduce_fn fn,
                                    const opsched_shape *kept, void *const *in, void *const *out)
{
    const opsched_shape *x = &n->in[0];
    opsched_dtype xdt = n->in_dt[0], ydt = n->out_dt[0];
    int64_t n_out = opsched_shape_numel(kept), total = opsched_shape_numel(x);
    double count = n_out ? (double)(total / n_out) : 0.0;
    int lse = fn == OPSCHED_REDUCE_LOGSUMEXP;
    double *acc = malloc(sizeof(double) * (size_t)(n_out ? n_out : 1) * (lse ? 2 : 1));
    if (!acc) return OS_NOMEM(ctx);
    double init = fn == OPSCHED_REDUCE_PROD         ? 1.0
                  : fn == OPSCHED_REDUCE_MAX || lse ? -INFINITY
                  : fn == OPSCHED_REDUCE_MIN        ? INFINITY
                                                    : 0.0;
    for (int64_t k = 0; k < n_out; k++)
        acc[k] = init;
    cpu_walk w;
    FOR_EACH_REDUCED(w, x, kept, {
        double v = cpu_load_f(in[0], xdt, at), *a = &acc[acc_i];
        switch (fn) {
        case OPSCHED_REDUCE_PROD:
            *a *= v;
            break;
        case OPSCHED_REDUCE_MAX:
        case OPSCHED_REDUCE_LOGSUMEXP: /* the maximum first */
            *a = isnan(v) || v > *a ? v : *a;
            break;
        case OPSCHED_REDUCE_MIN:
            *a = isnan(v) || v < *a ? v : *a;
            break;
        case OPSCHED_REDUCE_L1:
            *a += fabs(v);
            break;
        case OPSCHED_REDUCE_L2:
        case OPSCHED_REDUCE_SUMSQUARE:
            *a += v * v;
            break;
        default: /* sum, mean, log-sum */
            *a += v;
            break;
        }
    });
    if (lse) { /* log(sum(exp(x - m))) + m with m the maximum, when finite */
        double *sum = acc + n_out;
        for (int64_t k = 0; k < n_out; k++) {
            sum[k] = 0.0;
            if (!isfinite(acc[k])) acc[k] = isnan(acc[k]) ? acc[k] : 0.0;
        }
        FOR_EACH_REDUCED(w, x, kept, sum[acc_i] += exp(cpu_load_f(in[0], xdt, at) - acc[acc_i]));
        for (int64_t k = 0; k < n_out; k++)
            acc[k] += log(sum[k]);
    }
    for (int64_t k = 0; k < n_out; k++) {
        double v = acc[k];
        if (fn == OPSCHED_REDUCE_MEAN)
            v /= count;
        else if (fn == OPSCHED_REDUCE_L2)
            v = sqrt(v);
        else if (fn == OPSCHED_REDUCE_LOGSUM)
            v = log(v);
        cpu_store_f(out[0], ydt, k, v);
    }
    free(acc);
    return OPSCHED_OK;
}

opsched_status cpu_loop_reduce(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    const opsched_reduce_attr *r = &n->attr.reduce;
    opsched_reduce_fn fn = n->op == OPSCHED_OP_REDUCEMEAN ? OPSCHED_REDUCE_MEAN : r->fn;
    if (n->op == OPSCHED_OP_REDUCE && r->n_axes == 0 && r->noop_with_empty_axes)
        return cpu_loop_copy(ctx, n, in, out);
    opsched_shape kept = kept_shape(n);
    if (!cpu_is_float(n->in_dt[0]) && reduce_is_integral(fn))
        return reduce_int(ctx, n, fn, &kept, in, out);
    return reduce_double(ctx, n, fn, &kept, in, out);
}

/* ---- along one axis ------------------------------------------------------ */

/* The input seen as [outer, extent, inner] around axis. */
typedef struct axis_view {
    int64_t outer, extent, inner;
} axis_view;

static axis_view view_around(const opsched_shape *x, int64_t axis)
{
    axis_view v = {cpu_span(x, 0, (int)axis), x->d[axis], cpu_span(x, (int)axis + 1, x->ndim)};
    return v;
}

/* 1 when a comes before b in descending order, NaN above every number. */
static int above_f(double a, double b)
{
    return isnan(b) ? 0 : isnan(a) || a > b;
}

/* Index along the axis of the greatest (want_max) or least element of the
 * line starting at base with stride `stride`; ties go to the first, or to
 * the last with last_index.  A NaN wins over every number for both, as in
 * numpy.argmax and numpy.argmin. */
static int64_t arg_line(const void *x, opsched_dtype dt, int64_t base, int64_t stride,
                        int64_t extent, int want_max, int last_index)
{
    int64_t best = 0;
    if (cpu_is_float(dt)) {
        double b = cpu_load_f(x, dt, base);
        for (int64_t a = 1; a < extent; a++) {
            double v = cpu_load_f(x, dt, base + a * stride);
            int better = want_max ? above_f(v, b) : !isnan(b) && (isnan(v) || v < b);
            int same = (v == b) || (isnan(v) && isnan(b));
            if (better || (last_index && same)) {
                best = a;
                b = v;
            }
        }
    } else {
        int64_t b = cpu_load_i(x, dt, base);
        for (int64_t a = 1; a < extent; a++) {
            int64_t v = cpu_load_i(x, dt, base + a * stride);
            if ((want_max ? v > b : v < b) || (last_index && v == b)) {
                best = a;
                b = v;
            }
        }
    }
    return best;
}

opsched_status cpu_loop_arg(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out)
{
    (void)ctx;
    const opsched_arg_attr *a = &n->attr.arg;
    axis_view v = view_around(&n->in[0], a->axis);
    int64_t *y = out[0];
    for (int64_t o = 0; o < v.outer; o++)
        for (int64_t i = 0; i < v.inner; i++)
            y[o * v.inner + i] =
                arg_line(in[0], n->in_dt[0], o * v.extent * v.inner + i, v.inner, v.extent,
                         n->op == OPSCHED_OP_ARGMAX, a->select_last_index);
    return OPSCHED_OK;
}

opsched_status cpu_loop_hardmax(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                void *const *out)
{
    (void)ctx;
    axis_view v = view_around(&n->in[0], n->attr.axis.axis);
    opsched_dtype dt = n->in_dt[0];
    if (v.extent == 0) return OPSCHED_OK;
    for (int64_t o = 0; o < v.outer; o++) {
        for (int64_t i = 0; i < v.inner; i++) {
            int64_t base = o * v.extent * v.inner + i;
            int64_t best = arg_line(in[0], dt, base, v.inner, v.extent, 1, 0);
            for (int64_t a = 0; a < v.extent; a++)
                cpu_store_f(out[0], dt, base + a * v.inner, a == best ? 1.0 : 0.0);
        }
    }
    return OPSCHED_OK;
}

/* log(softmax(x)) = x - m - log(sum(exp(x - m))), m the maximum. */
opsched_status cpu_loop_logsoftmax(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                   void *const *out)
{
    (void)ctx;
    axis_view v = view_around(&n->in[0], n->attr.axis.axis);
    const float *x = in[0];
    float *y = out[0];
    for (int64_t o = 0; o < v.outer; o++) {
        for (int64_t i = 0; i < v.inner; i++) {
            int64_t base = o * v.extent * v.inner + i;
            double m = -INFINITY, sum = 0.0;
            for (int64_t a = 0; a < v.extent; a++) {
                double e = x[base + a * v.inner];
                m = isnan(e) || e > m ? e : m;
            }
            for (int64_t a = 0; a < v.extent; a++)
                sum += exp(x[base + a * v.inner] - m);
            double lse = m + log(sum);
            for (int64_t a = 0; a < v.extent; a++)
                y[base + a * v.inner] = (float)(x[base + a * v.inner] - lse);
        }
    }
    return OPSCHED_OK;
}

opsched_status cpu_loop_cumsum(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    (void)ctx;
    const opsched_cumsum_attr *c = &n->attr.cumsum;
    axis_view v = view_around(&n->in[0], c->axis);
    opsched_dtype dt = n->in_dt[0];
    int ints = !cpu_is_float(dt);
    for (int64_t o = 0; o < v.outer; o++) {
        for (int64_t i = 0; i < v.inner; i++) {
            int64_t base = o * v.extent * v.inner + i;
            double fsum = 0.0;
            uint64_t isum = 0;
            for (int64_t k = 0; k < v.extent; k++) {
                int64_t at = base + (c->reverse ? v.extent - 1 - k : k) * v.inner;
                if (ints) {
                    uint64_t e = (uint64_t)cpu_load_i(in[0], dt, at);
                    if (!c->exclusive) isum += e;
                    cpu_store_i(out[0], dt, at, (int64_t)isum);
                    if (c->exclusive) isum += e;
                } else {
                    double e = cpu_load_f(in[0], dt, at);
                    if (!c->exclusive) fsum += e;
                    cpu_store_f(out[0], dt, at, fsum);
                    if (c->exclusive) fsum += e;
                }
            }
        }
    }
    return OPSCHED_OK;
}

/* ---- TopK ---------------------------------------------------------------- */

typedef struct topk_line {
    const void *x;
    opsched_dtype dt;
    int largest;
    double *fkey;  /* the line's values, floats */
    int64_t *ikey; /* or integers */
} topk_line;

/* 1 when element a of the line goes before element b: the greater (the
 * lesser when !largest) value, NaN the greatest.  Equal values keep their
 * order, since the sort is stable: the lower index first, as ONNX says. */
static int topk_before(const topk_line *l, int64_t a, int64_t b)
{
    if (l->fkey) {
        double u = l->fkey[a], v = l->fkey[b];
        return l->largest ? above_f(u, v) : above_f(v, u);
    }
    int64_t u = l->ikey[a], v = l->ikey[b];
    return l->largest ? u > v : u < v;
}

/* Stable bottom-up merge sort of idx[0..n) with tmp of n entries. */
static void topk_sort(const topk_line *l, int64_t *idx, int64_t *tmp, int64_t n)
{
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = topk_before(l, idx[j], idx[i]) ? idx[j++] : idx[i++];
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, sizeof(int64_t) * (size_t)n);
    }
}

/* The k first elements in the order topk_before defines (always sorted,
 * which sorted = 0 allows). */
opsched_status cpu_loop_topk(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out)
{
    const opsched_topk_attr *t = &n->attr.topk;
    axis_view v = view_around(&n->in[0], t->axis);
    opsched_dtype dt = n->in_dt[0];
    size_t esz = cpu_esize(dt);
    int64_t k = t->k, m = v.extent ? v.extent : 1;
    topk_line l = {.x = in[0], .dt = dt, .largest = t->largest};
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)m * 2);
    void *keys = malloc((cpu_is_float(dt) ? sizeof(double) : sizeof(int64_t)) * (size_t)m);
    if (!idx || !keys) {
        free(idx);
        free(keys);
        return OS_NOMEM(ctx);
    }
    if (cpu_is_float(dt))
        l.fkey = keys;
    else
        l.ikey = keys;
    int64_t *ind = out[1];
    for (int64_t o = 0; o < v.outer; o++) {
        for (int64_t i = 0; i < v.inner; i++) {
            int64_t base = o * v.extent * v.inner + i, obase = o * k * v.inner + i;
            for (int64_t a = 0; a < v.extent; a++) {
                idx[a] = a;
                if (l.fkey)
                    l.fkey[a] = cpu_load_f(in[0], dt, base + a * v.inner);
                else
                    l.ikey[a] = cpu_load_i(in[0], dt, base + a * v.inner);
            }
            topk_sort(&l, idx, idx + m, v.extent);
            for (int64_t a = 0; a < k; a++) {
                cpu_copy_elem(out[0], obase + a * v.inner, in[0], base + idx[a] * v.inner, esz);
                ind[obase + a * v.inner] = idx[a];
            }
        }
    }
    free(idx);
    free(keys);
    return OPSCHED_OK;
}

/* ---- GroupNormalization -------------------------------------------------- */

/* Each group of C / G channels (contiguous in NCHW) is normalised by its
 * own mean and variance (two passes in double), then scaled and shifted
 * per channel. */
opsched_status cpu_loop_groupnorm(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                  void *const *out)
{
    (void)ctx;
    const opsched_shape *x = &n->in[0];
    int64_t N = x->d[0], C = x->d[1], S = cpu_span(x, 2, x->ndim);
    int64_t G = n->attr.groupnorm.groups, cg = C / G, size = cg * S;
    const float *src = in[0], *scale = in[1], *bias = in[2];
    float *y = out[0];
    for (int64_t b = 0; b < N; b++) {
        for (int64_t g = 0; g < G; g++) {
            int64_t base = (b * C + g * cg) * S;
            double mean = 0.0, var = 0.0;
            for (int64_t e = 0; e < size; e++)
                mean += src[base + e];
            mean /= (double)(size ? size : 1);
            for (int64_t e = 0; e < size; e++) {
                double d = src[base + e] - mean;
                var += d * d;
            }
            var /= (double)(size ? size : 1);
            double inv = 1.0 / sqrt(var + (double)n->attr.groupnorm.epsilon);
            for (int64_t c = 0; c < cg; c++) {
                int64_t ch = g * cg + c;
                for (int64_t s = 0; s < S; s++) {
                    int64_t at = base + c * S + s;
                    y[at] = (float)((src[at] - mean) * inv * scale[ch] + bias[ch]);
                }
            }
        }
    }
    return OPSCHED_OK;
}
