/*
 * cpu_index.c - indexing operators on every type: GatherElements,
 * GatherND, ScatterElements and ScatterND (with their reductions), Tile,
 * Trilu and OneHot.
 *
 * Indices are int32 or int64 and may be negative (counting from the end of
 * their axis).  An index outside [-extent, extent) fails the launch with
 * OPSCHED_ERR_INVALID_ARG naming it; nothing is read or written out of
 * bounds.  Scatter with reduction none and repeated indices keeps the last
 * update in row-major order of the indices.
 */
#include <stdlib.h>

#include "backend/cpu/cpu_impl.h"

/* Resolves index v of an axis of `extent` (negative counts from the end). */
static opsched_status resolve(opsched_ctx *ctx, const cpu_node *n, int64_t v, int64_t extent,
                              int axis, int64_t *out)
{
    if (v < -extent || v >= extent)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "cpu: %s index %lld is outside axis %d of extent %lld",
                       opsched_op_name(n->op), (long long)v, axis, (long long)extent);
    *out = v < 0 ? v + extent : v;
    return OPSCHED_OK;
}

/* dst[di] = dst[di] (reduction) src[si]: none replaces. */
static void scatter_apply(void *dst, int64_t di, const void *src, int64_t si, opsched_dtype dt,
                          opsched_scatter_reduction red)
{
    if (red == OPSCHED_SCATTER_NONE) {
        cpu_copy_elem(dst, di, src, si, cpu_esize(dt));
    } else if (cpu_is_float(dt)) {
        double a = cpu_load_f(dst, dt, di), b = cpu_load_f(src, dt, si);
        double r = red == OPSCHED_SCATTER_ADD   ? a + b
                   : red == OPSCHED_SCATTER_MUL ? a * b
                   : red == OPSCHED_SCATTER_MAX ? (isnan(a) || isnan(b) ? NAN
                                                   : a > b              ? a
                                                                        : b)
                                                : (isnan(a) || isnan(b) ? NAN
                                                   : a < b              ? a
                                                                        : b);
        cpu_store_f(dst, dt, di, r);
    } else {
        int64_t a = cpu_load_i(dst, dt, di), b = cpu_load_i(src, dt, si);
        int64_t r = red == OPSCHED_SCATTER_ADD   ? (int64_t)((uint64_t)a + (uint64_t)b)
                    : red == OPSCHED_SCATTER_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
                    : red == OPSCHED_SCATTER_MAX ? (a > b ? a : b)
                                                 : (a < b ? a : b);
        cpu_store_i(dst, dt, di, r);
    }
}

/* ---- GatherElements and ScatterElements ---------------------------------- */

/* Walks the indices (shape of the updates too) with walker offsets into the
 * data that leave out the axis; the statements given run with `at` the
 * index's position and `base` its data offset without the axis term. */
#define FOR_EACH_INDEX(w, ind, xs, axis, ...)                                                      \
    do {                                                                                           \
        int64_t len_, rows_, at = 0;                                                               \
        cpu_walk_init(&(w), (ind));                                                                \
        for (int d_ = 0; d_ < (ind)->ndim; d_++)                                                   \
            (w).st[0][d_] = d_ == (axis) ? 0 : (xs)[d_];                                           \
        cpu_rows((ind), &len_, &rows_);                                                            \
        int last_ = (ind)->ndim - 1;                                                               \
        int64_t s_ = last_ >= 0 ? (w).st[0][last_] : 0;                                            \
        for (int64_t r_ = 0; r_ < rows_; r_++, cpu_walk_step(&(w), last_)) {                       \
            for (int64_t j_ = 0; j_ < len_; j_++, at++) {                                          \
                int64_t base = (w).off[0] + j_ * s_;                                               \
                __VA_ARGS__;                                                                       \
            }                                                                                      \
        }                                                                                          \
    } while (0)

opsched_status cpu_loop_gather_elements(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                        void *const *out)
{
    const opsched_shape *x = &n->in[0], *ind = &n->in[1];
    int axis = (int)n->attr.axis.axis;
    size_t esz = cpu_esize(n->in_dt[0]);
    int64_t xs[OPSCHED_MAX_DIMS];
    cpu_row_strides(x, xs);
    cpu_walk w;
    FOR_EACH_INDEX(w, ind, xs, axis, {
        int64_t k;
        OS_TRY(resolve(ctx, n, cpu_load_i(in[1], n->in_dt[1], at), x->d[axis], axis, &k));
        cpu_copy_elem(out[0], at, in[0], base + k * xs[axis], esz);
    });
    return OPSCHED_OK;
}

opsched_status cpu_loop_scatter_elements(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                         void *const *out)
{
    const opsched_shape *x = &n->in[0], *ind = &n->in[1];
    int axis = (int)n->attr.scatter.axis;
    opsched_dtype dt = n->in_dt[0];
    int64_t xs[OPSCHED_MAX_DIMS];
    cpu_row_strides(x, xs);
    if (in[0] != out[0]) memmove(out[0], in[0], (size_t)opsched_shape_numel(x) * cpu_esize(dt));
    cpu_walk w;
    FOR_EACH_INDEX(w, ind, xs, axis, {
        int64_t k;
        OS_TRY(resolve(ctx, n, cpu_load_i(in[1], n->in_dt[1], at), x->d[axis], axis, &k));
        scatter_apply(out[0], base + k * xs[axis], in[2], at, dt, n->attr.scatter.reduction);
    });
    return OPSCHED_OK;
}

/* ---- GatherND and ScatterND ---------------------------------------------- */

/* The data offset, in slices of the axes after the tuple, of the index
 * tuple starting at element `at` of the indices: tuple entry k indexes data
 * axis first + k. */
static opsched_status tuple_offset(opsched_ctx *ctx, const cpu_node *n, const void *ind,
                                   opsched_dtype idt, int64_t at, int64_t len, int first,
                                   int64_t *off)
{
    const opsched_shape *x = &n->in[0];
    int64_t o = 0;
    for (int64_t k = 0; k < len; k++) {
        int axis = first + (int)k;
        int64_t v;
        OS_TRY(resolve(ctx, n, cpu_load_i(ind, idt, at + k), x->d[axis], axis, &v));
        o = o * x->d[axis] + v;
    }
    *off = o;
    return OPSCHED_OK;
}

/* Output = indices.shape[:-1] + data.shape[batch_dims + last:]: for every
 * index tuple, the slice of the data it names within its batch. */
opsched_status cpu_loop_gather_nd(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                  void *const *out)
{
    const opsched_shape *x = &n->in[0], *ind = &n->in[1];
    int b = (int)n->attr.gather_nd.batch_dims, q = ind->ndim;
    int64_t last = ind->d[q - 1];
    size_t esz = cpu_esize(n->in_dt[0]);
    int64_t batches = cpu_span(x, 0, b), tuples = cpu_span(ind, b, q - 1);
    int64_t slice = cpu_span(x, b + (int)last, x->ndim), batch_size = cpu_span(x, b, x->ndim);
    const char *src = in[0];
    char *y = out[0];
    for (int64_t bi = 0; bi < batches; bi++) {
        for (int64_t t = 0; t < tuples; t++) {
            int64_t k = bi * tuples + t, off;
            OS_TRY(tuple_offset(ctx, n, in[1], n->in_dt[1], k * last, last, b, &off));
            if (slice)
                memcpy(y + (size_t)(k * slice) * esz,
                       src + (size_t)(bi * batch_size + off * slice) * esz, (size_t)slice * esz);
        }
    }
    return OPSCHED_OK;
}

opsched_status cpu_loop_scatter_nd(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                   void *const *out)
{
    const opsched_shape *x = &n->in[0], *ind = &n->in[1];
    int q = ind->ndim;
    int64_t last = ind->d[q - 1];
    opsched_dtype dt = n->in_dt[0];
    int64_t tuples = cpu_span(ind, 0, q - 1), slice = cpu_span(x, (int)last, x->ndim);
    if (in[0] != out[0]) memmove(out[0], in[0], (size_t)opsched_shape_numel(x) * cpu_esize(dt));
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off;
        OS_TRY(tuple_offset(ctx, n, in[1], n->in_dt[1], t * last, last, 0, &off));
        for (int64_t e = 0; e < slice; e++)
            scatter_apply(out[0], off * slice + e, in[2], t * slice + e, dt,
                          n->attr.scatter.reduction);
    }
    return OPSCHED_OK;
}

/* ---- Tile, Trilu, OneHot ------------------------------------------------- */

/* Every output row (last axis) is an input row repeated: the row's source
 * is its outer coordinates modulo the input's extents. */
opsched_status cpu_loop_tile(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out)
{
    (void)ctx;
    const opsched_shape *x = &n->in[0], *o = &n->out[0];
    size_t esz = cpu_esize(n->in_dt[0]);
    if (x->ndim == 0) {
        memcpy(out[0], in[0], esz);
        return OPSCHED_OK;
    }
    int last = x->ndim - 1;
    int64_t xs[OPSCHED_MAX_DIMS], len, rows;
    cpu_row_strides(x, xs);
    cpu_rows(o, &len, &rows);
    size_t row = (size_t)x->d[last] * esz;
    int64_t reps = n->attr.tile.repeats[last];
    cpu_walk w;
    cpu_walk_init(&w, o);
    char *y = out[0];
    for (int64_t r = 0; r < rows; r++, cpu_walk_step(&w, last)) {
        int64_t src = 0;
        for (int d = 0; d < last; d++)
            src += (w.idx[d] % x->d[d]) * xs[d];
        for (int64_t k = 0; k < reps; k++, y += row)
            memcpy(y, (const char *)in[0] + (size_t)src * esz, row);
    }
    return OPSCHED_OK;
}

/* Keeps the elements on and above (upper) or on and below the k-th
 * diagonal of every matrix in the last two axes; the rest is 0. */
opsched_status cpu_loop_trilu(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out)
{
    (void)ctx;
    const opsched_shape *x = &n->in[0];
    const opsched_trilu_attr *t = &n->attr.trilu;
    size_t esz = cpu_esize(n->in_dt[0]);
    int64_t R = x->d[x->ndim - 2], C = x->d[x->ndim - 1], mats = cpu_span(x, 0, x->ndim - 2);
    const uint64_t zero = 0;
    for (int64_t m = 0; m < mats; m++) {
        for (int64_t i = 0; i < R; i++) {
            for (int64_t j = 0; j < C; j++) {
                int64_t at = (m * R + i) * C + j;
                int keep = t->upper ? j - i >= t->k : j - i <= t->k;
                if (keep)
                    cpu_copy_elem(out[0], at, in[0], at, esz);
                else
                    cpu_copy_elem(out[0], at, &zero, 0, esz);
            }
        }
    }
    return OPSCHED_OK;
}

/* OneHot: values [off, on] in the output's type; an index below 0 counts
 * from depth; one outside [-depth, depth), or a float index that is not a
 * whole number (ONNX's reference compares values), sets nothing. */
opsched_status cpu_loop_onehot(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    (void)ctx;
    const opsched_shape *ind = &n->in[0];
    const opsched_onehot_attr *h = &n->attr.onehot;
    opsched_dtype idt = n->in_dt[0];
    size_t esz = cpu_esize(n->out_dt[0]);
    int axis = (int)h->axis;
    int64_t depth = h->depth, outer = cpu_span(ind, 0, axis),
            inner = cpu_span(ind, axis, ind->ndim);
    int64_t total = outer * depth * inner;
    for (int64_t e = 0; e < total; e++)
        cpu_copy_elem(out[0], e, in[1], 0, esz);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t at = o * inner + i, v;
            if (cpu_is_float(idt)) {
                double f = cpu_load_f(in[0], idt, at);
                if (!(f >= (double)-depth && f < (double)depth) || f != trunc(f)) continue;
                v = (int64_t)f;
            } else {
                v = cpu_load_i(in[0], idt, at);
                if (v < -depth || v >= depth) continue;
            }
            if (v < 0) v += depth;
            cpu_copy_elem(out[0], (o * depth + v) * inner + i, in[1], 1, esz);
        }
    }
    return OPSCHED_OK;
}
