/*
 * cuda_resize.c - planning Resize (kernels_index.cu): every mode (nearest,
 * linear, cubic) over any axes, every coordinate transformation and
 * nearest mode, cubic_coeff_a, exclude_outside, tf_crop_and_resize's
 * extrapolation and antialiasing, as a separable filter.
 *
 * The taps of each axis depend only on the output coordinate along it, so
 * they are computed here once, in double on the host, into a table the
 * plan owns on the device: for each output coordinate the input indices
 * (clamped to the edge, as ONNX pads with edge values) and their weights.
 * The kernel multiplies the weights of one tap per resized axis and sums;
 * an axis that maps every coordinate to itself has no table.
 *
 * The taps are os_resize_taps_make's (graph/resize_taps.c), the same the
 * CPU backend uses: coordinates in double as ONNX's reference computes
 * them, every mode and coordinate transformation, taps clamped to the
 * edge, outside tf_crop_and_resize's crop the extrapolation value.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"
#include "graph/resize_taps.h"

typedef struct rs_plan {
    cu_plan base;
    cuk_resize_desc d;
    cuk_dtype t;
    size_t elem;
    void *table; /* meta, then tap offsets, then tap weights */
    const int32_t *meta;
    const int64_t *tap_off;
    const float *tap_w;
} rs_plan;

static void rs_release(cu_plan *base)
{
    rs_plan *p = (rs_plan *)base;
    if (p->table) (void)cudaFree(p->table);
}

static opsched_status rs_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                void *const *in, void *const *out)
{
    rs_plan *p = (rs_plan *)base;
    (void)dev;
    CUDA_CHECK(ctx, cuk_resize(p->t, p->elem, &p->d, p->meta, p->tap_off, p->tap_w, in[0], out[0],
                               s));
    return OPSCHED_OK;
}

/* ---- taps on the host ------------------------------------------------- */

/* The taps of every output coordinate of one axis. */
typedef struct axis_taps {
    int64_t out;
    int32_t *first, *count; /* [out] */
    int64_t *idx;           /* input indices */
    double *w;
    int64_t n, cap;
} axis_taps;

static void taps_free(axis_taps *t)
{
    free(t->first);
    free(t->count);
    free(t->idx);
    free(t->w);
    memset(t, 0, sizeof(*t));
}

static int taps_push(axis_taps *t, int64_t idx, double w)
{
    if (t->n == t->cap) {
        int64_t cap = t->cap ? 2 * t->cap : 64;
        int64_t *ni = realloc(t->idx, sizeof(int64_t) * (size_t)cap);
        if (!ni) return 0;
        t->idx = ni;
        double *nw = realloc(t->w, sizeof(double) * (size_t)cap);
        if (!nw) return 0;
        t->w = nw;
        t->cap = cap;
    }
    t->idx[t->n] = idx;
    t->w[t->n++] = w;
    return 1;
}

/* The taps of axis d (input extent in, output extent out) in the packed
 * form the kernel reads: the taps of os_resize_taps_make, a count of 0 for
 * extrapolation, and one tap of weight 0 where every weight is 0. */
static opsched_status axis_build(opsched_ctx *ctx, const opsched_resize_attr *r, int ndim, int d,
                                 int64_t in, int64_t out, axis_taps *t)
{
    memset(t, 0, sizeof(*t));
    os_resize_taps rt;
    memset(&rt, 0, sizeof(rt));
    opsched_status st = os_resize_taps_make(ctx, r, d, ndim, in, out, &rt);
    t->out = out;
    t->first = calloc((size_t)out, sizeof(int32_t));
    t->count = calloc((size_t)out, sizeof(int32_t));
    if (st == OPSCHED_OK && (!t->first || !t->count)) st = OS_NOMEM(ctx);
    for (int64_t x = 0; st == OPSCHED_OK && x < out; x++) {
        if (t->n > INT32_MAX - rt.width - 1) {
            st = OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                         "cuda: Resize: a tap table of more than 2^31 entries");
            break;
        }
        t->first[x] = (int32_t)t->n;
        if (rt.outside[x]) continue; /* count 0: extrapolate */
        const int64_t *ix = rt.index + x * rt.width;
        const double *w = rt.weight + x * rt.width;
        int c = rt.count[x];
        for (int k = 0; k < c; k++)
            if (!taps_push(t, ix[k], w[k])) st = OS_NOMEM(ctx);
        if (c == 0 && !taps_push(t, 0, 0.0)) st = OS_NOMEM(ctx);
        t->count[x] = c ? c : 1;
    }
    os_resize_taps_free(&rt);
    if (st != OPSCHED_OK) taps_free(t);
    return st;
}

/* 1 when every output coordinate takes its own input element, whole. */
static int axis_identity(const axis_taps *t, int64_t in)
{
    if (t->out != in) return 0;
    for (int64_t x = 0; x < t->out; x++) {
        int32_t f = t->first[x];
        if (t->count[x] != 1 || t->idx[f] != x || t->w[f] != 1.0) return 0;
    }
    return 1;
}

/* ---- the planner ------------------------------------------------------ */

opsched_status cu_plan_resize(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    const opsched_resize_attr *r = &a->node->attr.resize;
    int nd = x->shape.ndim, nearest = r->mode == OPSCHED_RESIZE_NEAREST;
    if (!nearest && !cu_dtype_is_float(x->dtype))
        return CU_UNSUPPORTED(a, "%s interpolation of %s data (nearest only)",
                              r->mode == OPSCHED_RESIZE_LINEAR ? "linear" : "cubic",
                              opsched_dtype_name(x->dtype));
    if (nd < 1 || nd > OPSCHED_MAX_DIMS) return CU_UNSUPPORTED(a, "rank %d", nd);
    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(rs_plan), rs_launch, rs_release, &base));
    rs_plan *p = (rs_plan *)base;
    opsched_status st = OPSCHED_OK;
    axis_taps taps[OPSCHED_MAX_DIMS];
    memset(taps, 0, sizeof(taps));
    int32_t *meta = NULL;
    int64_t *toff = NULL;
    float *tw = NULL;
    p->t = cu_kdt(a, x);
    p->elem = cu_elem_size(a, x);
    cuk_resize_desc *d = &p->d;
    d->ndim = nd;
    d->nearest = nearest;
    d->extrapolation = cu_value_bits(cu_storage(a, x->dtype), r->extrapolation_value);
    d->extrapolation_f = r->extrapolation_value;
    d->x_numel = opsched_shape_numel(&x->shape);
    cu_strides(a, y, d->ys);
    cu_strides(a, x, d->xs);
    int64_t n_meta = 0, n_taps = 0;
    for (int j = 0; j < nd; j++) {
        d->shape[j] = y->shape.d[j];
        d->meta[j] = -1;
        st = axis_build(a->ctx, r, nd, j, x->shape.d[j], y->shape.d[j], &taps[j]);
        if (st != OPSCHED_OK) goto fail;
        if (axis_identity(&taps[j], x->shape.d[j])) {
            taps_free(&taps[j]);
            continue;
        }
        d->meta[j] = n_meta;
        n_meta += 2 * taps[j].out;
        n_taps += taps[j].n;
    }
    if (n_meta > INT32_MAX || n_taps > INT32_MAX) {
        st = CU_UNSUPPORTED(a, "a tap table of more than 2^31 entries");
        goto fail;
    }
    if (n_meta > 0) {
        size_t meta_b = (size_t)n_meta * sizeof(int32_t), off_at = (meta_b + 15) / 16 * 16;
        size_t w_at = off_at + (size_t)n_taps * sizeof(int64_t);
        size_t bytes = w_at + (size_t)n_taps * sizeof(float);
        unsigned char *host = calloc(1, bytes);
        if (!host) {
            st = OS_NOMEM(a->ctx);
            goto fail;
        }
        meta = (int32_t *)host;
        toff = (int64_t *)(host + off_at);
        tw = (float *)(host + w_at);
        int64_t tap0 = 0;
        for (int j = 0; j < nd; j++) {
            if (d->meta[j] < 0) continue;
            axis_taps *t = &taps[j];
            for (int64_t o = 0; o < t->out; o++) {
                meta[d->meta[j] + o] = (int32_t)(tap0 + t->first[o]);
                meta[d->meta[j] + t->out + o] = t->count[o];
            }
            for (int64_t k = 0; k < t->n; k++) {
                toff[tap0 + k] = t->idx[k] * d->xs[j];
                tw[tap0 + k] = (float)t->w[k];
            }
            tap0 += t->n;
        }
        st = cu_malloc(a->ctx, bytes, &p->table);
        if (st == OPSCHED_OK) {
            cudaError_t e = cudaMemcpy(p->table, host, bytes, cudaMemcpyHostToDevice);
            /* pageable: finished only once the device is synchronised */
            if (e == cudaSuccess) e = cudaDeviceSynchronize();
            if (e != cudaSuccess) st = cu_fail_cuda(a->ctx, e, "cudaMemcpy", __FILE__, __LINE__);
        }
        free(host);
        if (st != OPSCHED_OK) goto fail;
        p->meta = (const int32_t *)p->table;
        p->tap_off = (const int64_t *)((const unsigned char *)p->table + off_at);
        p->tap_w = (const float *)((const unsigned char *)p->table + w_at);
    }
    for (int j = 0; j < nd; j++)
        taps_free(&taps[j]);
    snprintf(a->info->algo, sizeof(a->info->algo), "kernel");
    *out = base;
    return OPSCHED_OK;
fail:
    for (int j = 0; j < nd; j++)
        taps_free(&taps[j]);
    cu_plan_destroy(base);
    return st;
}
