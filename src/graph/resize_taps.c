/*
 * resize_taps.c - the taps of one axis of Resize (resize_taps.h), in
 * double, as ONNX's reference implementation computes coordinates, for the
 * CPU and CUDA backends alike.
 */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "graph/resize_taps.h"

/* The most taps of one coordinate: cubic antialias down to a scale of 1/128. */
#define RESIZE_MAX_TAPS 512

static double cubic_kernel(double x, double A)
{
    x = fabs(x);
    if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
    if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    return 0.0;
}

/* The number of taps of the axis (even), and their first offset from the
 * base coordinate floor(x) (x - 1 for a whole x). */
static int tap_count(const opsched_resize_attr *a, double scale, int *first)
{
    double s = scale < 1.0 ? scale : 1.0;
    if (a->mode == OPSCHED_RESIZE_NEAREST || (a->mode == OPSCHED_RESIZE_LINEAR && !a->antialias)) {
        *first = 0;
        return 2;
    }
    if (a->mode == OPSCHED_RESIZE_CUBIC && !a->antialias) {
        *first = -1;
        return 4;
    }
    /* antialias: the kernel stretched by 1 / scale when downsampling */
    double support = a->mode == OPSCHED_RESIZE_LINEAR ? 1.0 : 2.0;
    *first = (int)floor(-support / s) + 1;
    return 2 - 2 * *first;
}

/* The weights of taps first.. for ratio = x - base in (0, 1]. */
static void tap_weights(const opsched_resize_attr *a, double scale, double ratio, int first,
                        int count, double *w)
{
    double s = scale < 1.0 ? scale : 1.0, A = a->cubic_coeff_a;
    if (a->mode == OPSCHED_RESIZE_NEAREST) {
        int right;
        if (ratio == 1.0) {
            right = 1; /* a whole coordinate is itself */
        } else {
            switch (a->nearest) {
            case OPSCHED_NEAREST_ROUND_PREFER_CEIL:
                right = ratio >= 0.5;
                break;
            case OPSCHED_NEAREST_FLOOR:
                right = 0;
                break;
            case OPSCHED_NEAREST_CEIL:
                right = 1;
                break;
            default: /* round_prefer_floor */
                right = ratio > 0.5;
                break;
            }
        }
        w[0] = right ? 0.0 : 1.0;
        w[1] = right ? 1.0 : 0.0;
        return;
    }
    if (!a->antialias && a->mode == OPSCHED_RESIZE_LINEAR) {
        w[0] = 1.0 - ratio;
        w[1] = ratio;
        return;
    }
    if (!a->antialias) { /* cubic, as ONNX writes its four coefficients */
        w[0] = ((A * (ratio + 1) - 5 * A) * (ratio + 1) + 8 * A) * (ratio + 1) - 4 * A;
        w[1] = ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1;
        w[2] = ((A + 2) * (1 - ratio) - (A + 3)) * (1 - ratio) * (1 - ratio) + 1;
        w[3] = ((A * ((1 - ratio) + 1) - 5 * A) * ((1 - ratio) + 1) + 8 * A) * ((1 - ratio) + 1) -
               4 * A;
        return;
    }
    double sum = 0.0;
    for (int j = 0; j < count; j++) {
        double t = s * ((first + j) - ratio);
        w[j] = a->mode == OPSCHED_RESIZE_LINEAR ? fmax(0.0, 1.0 - fabs(t)) : cubic_kernel(t, A);
        sum += w[j];
    }
    for (int j = 0; j < count; j++)
        w[j] /= sum;
}

/* Where output coordinate y of the axis comes from in the input. */
static double source_coord(const opsched_resize_attr *a, double y, double scale, int64_t in,
                           int64_t out, double out_w, double start, double span)
{
    switch (a->coord) {
    case OPSCHED_COORD_ALIGN_CORNERS:
        return out_w == 1.0 ? 0.0 : y * (double)(in - 1) / (out_w - 1.0);
    case OPSCHED_COORD_ASYMMETRIC:
        return y / scale;
    case OPSCHED_COORD_TF_CROP_AND_RESIZE: {
        double x = out_w == 1.0 ? span * (double)(in - 1) / 2.0
                                : y * span * (double)(in - 1) / (out_w - 1.0);
        return x + start * (double)(in - 1);
    }
    case OPSCHED_COORD_PYTORCH_HALF_PIXEL: /* -0.5 for one output, as ONNX's reference */
        return out_w == 1.0 ? -0.5 : (y + 0.5) / scale - 0.5;
    case OPSCHED_COORD_HALF_PIXEL_SYMMETRIC: {
        double adjustment = (double)out / out_w, center = (double)in / 2.0;
        return center * (1.0 - adjustment) + (y + 0.5) / scale - 0.5;
    }
    default: /* half_pixel */
        return (y + 0.5) / scale - 0.5;
    }
}

/* The scale of axis d: the attribute's, or out / in exactly when the
 * attribute is that ratio rounded to float (sizes were given: ONNX then
 * computes the scale in double). */
static double axis_scale(const opsched_resize_attr *a, int d, int64_t in, int64_t out)
{
    double r = (double)out / (double)in;
    return (float)r == a->scales[d] ? r : (double)a->scales[d];
}

opsched_status os_resize_taps_make(opsched_ctx *ctx, const opsched_resize_attr *a, int d, int nd,
                                   int64_t in, int64_t out, os_resize_taps *t)
{
    double scale = axis_scale(a, d, in, out), out_w = scale * (double)in;
    float start = a->roi[d], end = a->roi[nd + d];
    double span = (double)(end - start); /* the reference subtracts in float */
    int tf = a->coord == OPSCHED_COORD_TF_CROP_AND_RESIZE;
    int identity = fabs(scale - 1.0) <= 1e-9 && out == in &&
                   (!tf || (start == 0.0f && fabs(end - 1.0) <= 1e-9));
    int first = 0, width = identity ? 1 : tap_count(a, scale, &first);
    if (width > RESIZE_MAX_TAPS)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                       "Resize with antialias at scale %g needs %d taps per axis (at most %d)",
                       scale, width, RESIZE_MAX_TAPS);
    t->width = width;
    t->index = malloc(sizeof(int64_t) * (size_t)(out * width));
    t->weight = malloc(sizeof(double) * (size_t)(out * width));
    t->count = calloc((size_t)out, sizeof(int));
    t->outside = calloc((size_t)out, 1);
    if (!t->index || !t->weight || !t->count || !t->outside) return OS_NOMEM(ctx);
    double w[RESIZE_MAX_TAPS];
    for (int64_t o = 0; o < out; o++) {
        int64_t *ix = t->index + o * width;
        double *wt = t->weight + o * width;
        if (identity) {
            ix[0] = o;
            wt[0] = 1.0;
            t->count[o] = 1;
            continue;
        }
        double x = source_coord(a, (double)o, scale, in, out, out_w, start, span);
        if (tf && (x < 0 || x > (double)(in - 1))) {
            t->outside[o] = 1;
            continue;
        }
        double fl = floor(x);
        int64_t base = x == fl ? (int64_t)fl - 1 : (int64_t)fl;
        double ratio = x - (double)base; /* in (0, 1] */
        tap_weights(a, scale, ratio, first, width, w);
        if (a->exclude_outside) {
            double sum = 0.0;
            for (int j = 0; j < width; j++) {
                int64_t k = base + first + j;
                if (k < 0 || k >= in) w[j] = 0.0;
                sum += w[j];
            }
            for (int j = 0; j < width && sum != 0.0; j++)
                w[j] /= sum;
        }
        int c = 0;
        for (int j = 0; j < width; j++) {
            if (w[j] == 0.0) continue;
            int64_t k = base + first + j;
            ix[c] = k < 0 ? 0 : k >= in ? in - 1 : k; /* edge padding */
            wt[c] = w[j];
            c++;
        }
        t->count[o] = c;
    }
    return OPSCHED_OK;
}

void os_resize_taps_free(os_resize_taps *t)
{
    free(t->index);
    free(t->weight);
    free(t->count);
    free(t->outside);
}

