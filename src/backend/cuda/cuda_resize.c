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
 * Semantics (the ONNX operator's, as its reference implementation, which
 * generates the ONNX node tests, computes them): the source coordinate
 * x_original of an output coordinate x is computed in float from the
 * axis's scale s (given, or output / input when sizes were given) and the
 * unfloored resized length L = s * in - half_pixel (x + 0.5) / s - 0.5;
 * half_pixel_symmetric the same shifted by (in / 2) * (1 - out / L);
 * pytorch_half_pixel as half_pixel, -0.5 when L is 1; align_corners x *
 * (in - 1) / (L - 1), 0 when L is 1; asymmetric x / s; tf_crop_and_resize
 * start * (in - 1) + x * (end - start) * (in - 1) / (L - 1) (the middle of
 * the crop when L is 1), and outside [0, in - 1] the output element is
 * extrapolation_value.  (ONNX Runtime divides by out - 1 instead of L - 1
 * and takes 0 for pytorch_half_pixel; the two agree whenever sizes were
 * given, the common case.)  With
 * i = floor(x_original) and ratio = x_original - i (i - 1 and ratio 1 when
 * x_original is an integer: the pixel on the left is preferred), linear
 * takes taps i, i + 1 with 1 - ratio, ratio; cubic i - 1 .. i + 2 with
 * Keys' weights for cubic_coeff_a; nearest picks i or i + 1 by the nearest
 * mode (round_prefer_floor: i + 1 only above half; round_prefer_ceil: from
 * half on; floor: i; ceil: i + 1; an integer x_original is itself).  With
 * antialias and a scale below 1, the linear (triangle) or cubic filter is
 * stretched by 1 / scale and normalised: 2 - 2 * (floor(-1 / scale) + 1)
 * or 2 - 2 * (floor(-2 / scale) + 1) taps centred the same way.
 * exclude_outside zeroes the weights of taps outside the input and
 * renormalises.  Taps of weight 0 are left out.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

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

/* x_original of output coordinate x on axis d, in float; *outside when
 * tf_crop_and_resize puts it outside the input. */
static float x_original(const opsched_resize_attr *r, int ndim, int d, int64_t x, int64_t in,
                        int64_t out, int *outside)
{
    const float scale = r->scales[d], xf = (float)x;
    const float len = scale * (float)in; /* the resized length before flooring */
    float xo;
    *outside = 0;
    switch (r->coord) {
    case OPSCHED_COORD_HALF_PIXEL_SYMMETRIC: {
        float adjustment = (float)out / (scale * (float)in);
        float center = (float)in / 2.0f;
        xo = center * (1.0f - adjustment) + (xf + 0.5f) / scale - 0.5f;
        break;
    }
    case OPSCHED_COORD_PYTORCH_HALF_PIXEL:
        xo = len == 1.0f ? -0.5f : (xf + 0.5f) / scale - 0.5f;
        break;
    case OPSCHED_COORD_ALIGN_CORNERS:
        xo = len == 1.0f ? 0.0f : xf * (float)(in - 1) / (len - 1.0f);
        break;
    case OPSCHED_COORD_ASYMMETRIC:
        xo = xf / scale;
        break;
    case OPSCHED_COORD_TF_CROP_AND_RESIZE: {
        float start = r->roi[d], end = r->roi[ndim + d];
        xo = len == 1.0f ? 0.5f * (start + end) * (float)(in - 1)
                         : start * (float)(in - 1) + xf * (end - start) * (float)(in - 1) /
                                                         (len - 1.0f);
        *outside = xo < 0.0f || xo > (float)(in - 1);
        break;
    }
    default: /* half_pixel */
        xo = (xf + 0.5f) / scale - 0.5f;
        break;
    }
    return xo;
}

static double cubic_kernel(double x, double A)
{
    x = fabs(x);
    if (x <= 1.0) return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    if (x < 2.0) return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    return 0.0;
}

/* The weights of the taps starting at `first` (count *n, up to cap) for
 * x_original = i + ratio; *first relative to i. */
static int coeffs(const opsched_resize_attr *r, double scale, double ratio, double *c, int cap,
                  int64_t *first)
{
    const double A = r->cubic_coeff_a;
    int aa = r->antialias && scale < 1.0;
    double s = scale < 1.0 ? scale : 1.0;
    int n;
    if (r->mode == OPSCHED_RESIZE_LINEAR) {
        if (!aa) {
            c[0] = 1.0 - ratio;
            c[1] = ratio;
            *first = 0;
            return 2;
        }
        int64_t start = (int64_t)floor(-1.0 / s) + 1;
        n = (int)(2 - 2 * start);
        if (n > cap) return -1;
        double sum = 0;
        for (int t = 0; t < n; t++) {
            double v = 1.0 - fabs(((double)(start + t) - ratio) * s);
            c[t] = v < 0 ? 0 : (v > 1 ? 1 : v);
            sum += c[t];
        }
        for (int t = 0; t < n; t++)
            c[t] /= sum;
        *first = start;
        return n;
    }
    /* cubic */
    if (!aa) {
        c[0] = cubic_kernel(1.0 + ratio, A);
        c[1] = cubic_kernel(ratio, A);
        c[2] = cubic_kernel(1.0 - ratio, A);
        c[3] = cubic_kernel(2.0 - ratio, A);
        *first = -1;
        return 4;
    }
    int64_t i0 = (int64_t)floor(-2.0 / s) + 1, i1 = 2 - i0;
    n = (int)(i1 - i0);
    if (n > cap) return -1;
    double sum = 0;
    for (int t = 0; t < n; t++) {
        c[t] = cubic_kernel(s * ((double)(i0 + t) - ratio), A);
        sum += c[t];
    }
    for (int t = 0; t < n; t++)
        c[t] /= sum;
    *first = i0;
    return n;
}

/* The taps of axis d: input extent in, output extent out. */
static int axis_build(const opsched_resize_attr *r, int ndim, int d, int64_t in, int64_t out,
                      axis_taps *t)
{
    memset(t, 0, sizeof(*t));
    t->out = out;
    t->first = calloc((size_t)out, sizeof(int32_t));
    t->count = calloc((size_t)out, sizeof(int32_t));
    double scale = r->scales[d];
    int cap = 8;
    if (r->antialias && scale < 1.0) cap = (int)(2.0 * ceil(2.0 / scale)) + 8;
    double *c = malloc(sizeof(double) * (size_t)cap);
    if (!t->first || !t->count || !c) goto fail;
    for (int64_t x = 0; x < out; x++) {
        int outside = 0;
        float xo = x_original(r, ndim, d, x, in, out, &outside);
        if (t->n > INT32_MAX - cap) goto fail;
        t->first[x] = (int32_t)t->n;
        if (outside) continue; /* count 0: extrapolate */
        double xi = floor((double)xo), ratio = (double)xo - xi;
        if (r->mode == OPSCHED_RESIZE_NEAREST) {
            int64_t k = (int64_t)xi;
            if (ratio != 0.0) {
                switch (r->nearest) {
                case OPSCHED_NEAREST_ROUND_PREFER_CEIL:
                    k += ratio >= 0.5;
                    break;
                case OPSCHED_NEAREST_FLOOR:
                    break;
                case OPSCHED_NEAREST_CEIL:
                    k += 1;
                    break;
                default:
                    k += ratio > 0.5;
                    break;
                }
            }
            k = k < 0 ? 0 : (k > in - 1 ? in - 1 : k);
            if (!taps_push(t, k, 1.0)) goto fail;
            t->count[x] = 1;
            continue;
        }
        if (ratio == 0.0) {
            xi -= 1.0;
            ratio = 1.0;
        }
        int64_t rel = 0;
        int n = coeffs(r, scale, ratio, c, cap, &rel);
        if (n < 1) goto fail;
        if (r->exclude_outside) {
            double sum = 0;
            for (int k = 0; k < n; k++) {
                int64_t i = (int64_t)xi + rel + k;
                if (i < 0 || i >= in) c[k] = 0;
                sum += c[k];
            }
            if (sum != 0)
                for (int k = 0; k < n; k++)
                    c[k] /= sum;
        }
        int kept = 0;
        for (int k = 0; k < n; k++) {
            if (c[k] == 0.0 && !(k == n - 1 && kept == 0)) continue;
            int64_t i = (int64_t)xi + rel + k;
            i = i < 0 ? 0 : (i > in - 1 ? in - 1 : i);
            if (!taps_push(t, i, c[k])) goto fail;
            kept++;
        }
        t->count[x] = kept;
    }
    free(c);
    return 1;
fail:
    free(c);
    taps_free(t);
    return 0;
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
    cu_strides(a, y, d->ys);
    cu_strides(a, x, d->xs);
    int64_t n_meta = 0, n_taps = 0;
    for (int j = 0; j < nd; j++) {
        d->shape[j] = y->shape.d[j];
        d->meta[j] = -1;
        if (!axis_build(r, nd, j, x->shape.d[j], y->shape.d[j], &taps[j])) {
            st = OS_FAIL(a->ctx, OPSCHED_ERR_NOMEM, "cuda: node '%s' (Resize): the tap table of "
                         "axis %d does not fit in host memory", a->node->name, j);
            goto fail;
        }
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
