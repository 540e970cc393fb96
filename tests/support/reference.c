/*
 * reference.c - the conformance test's ground truth: each operator written
 * from its definition, one output element at a time, with coordinates
 * unravelled explicitly and sums in double.  Slow on purpose; it is meant to
 * be read and believed, not to be fast.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/reference.h"

#define REF_MAX_IO 40

typedef struct ref_node {
    const opsched_node *n;
    const opsched_op_attr *a;
    const opsched_shape *in[REF_MAX_IO];
    opsched_dtype in_dt[REF_MAX_IO];
    const opsched_shape *out[REF_MAX_IO];
    const float *x[REF_MAX_IO]; /* f32 inputs (NULL when omitted) */
    const void *raw[REF_MAX_IO];
    float *const *y;
} ref_node;

/* ---- coordinates -------------------------------------------------------- */

static void unravel(int64_t idx, const opsched_shape *s, int64_t *c)
{
    for (int i = s->ndim - 1; i >= 0; i--) {
        c[i] = s->d[i] ? idx % s->d[i] : 0;
        idx = s->d[i] ? idx / s->d[i] : 0;
    }
}

static int64_t ravel(const int64_t *c, const opsched_shape *s)
{
    int64_t idx = 0;
    for (int i = 0; i < s->ndim; i++)
        idx = idx * s->d[i] + c[i];
    return idx;
}

/* The element of `s` that output coordinates oc (rank on) read under numpy
 * broadcasting. */
static int64_t bcast_index(const int64_t *oc, int on, const opsched_shape *s)
{
    int64_t idx = 0;
    for (int i = 0; i < s->ndim; i++) {
        int64_t c = s->d[i] == 1 ? 0 : oc[on - s->ndim + i];
        idx = idx * s->d[i] + c;
    }
    return idx;
}

static int64_t numel(const opsched_shape *s)
{
    return opsched_shape_numel(s);
}

static int64_t index_at(const ref_node *r, int input, int64_t k)
{
    if (r->in_dt[input] == OPSCHED_INT32) return ((const int32_t *)r->raw[input])[k];
    return ((const int64_t *)r->raw[input])[k];
}

/* ---- operators ---------------------------------------------------------- */

static void ref_conv(const ref_node *r)
{
    const opsched_conv_attr *c = &r->a->conv;
    const opsched_shape *xs = r->in[0], *ws = r->in[1], *ys = r->out[0];
    const float *x = r->x[0], *w = r->x[1], *b = r->x[2];
    int64_t C = xs->d[1], H = xs->d[2], W = xs->d[3], M = ws->d[0];
    int64_t G = c->groups, Cg = C / G, Mg = M / G;
    int64_t yc[4];
    for (int64_t i = 0; i < numel(ys); i++) {
        unravel(i, ys, yc);
        int64_t n = yc[0], m = yc[1], g = m / Mg;
        double acc = b ? b[m] : 0.0;
        for (int64_t ci = 0; ci < Cg; ci++) {
            for (int64_t kh = 0; kh < ws->d[2]; kh++) {
                int64_t h = yc[2] * c->stride[0] - c->pads[0] + kh * c->dilation[0];
                if (h < 0 || h >= H) continue;
                for (int64_t kw = 0; kw < ws->d[3]; kw++) {
                    int64_t v = yc[3] * c->stride[1] - c->pads[1] + kw * c->dilation[1];
                    if (v < 0 || v >= W) continue;
                    double xv = x[((n * C + g * Cg + ci) * H + h) * W + v];
                    double wv = w[((m * Cg + ci) * ws->d[2] + kh) * ws->d[3] + kw];
                    acc += xv * wv;
                }
            }
        }
        r->y[0][i] = (float)acc;
    }
}

static void ref_gemm(const ref_node *r)
{
    const opsched_gemm_attr *a = &r->a->gemm;
    const opsched_shape *as = r->in[0], *bs = r->in[1], *ys = r->out[0];
    int64_t M = ys->d[0], N = ys->d[1], K = a->trans_a ? as->d[0] : as->d[1];
    const float *A = r->x[0], *B = r->x[1], *C = r->x[2];
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++) {
                double av = a->trans_a ? A[k * as->d[1] + i] : A[i * as->d[1] + k];
                double bv = a->trans_b ? B[j * bs->d[1] + k] : B[k * bs->d[1] + j];
                acc += av * bv;
            }
            double v = a->alpha * acc;
            if (C) {
                int64_t oc[2] = {i, j};
                v += a->beta * C[bcast_index(oc, 2, r->in[2])];
            }
            r->y[0][i * N + j] = (float)v;
        }
    }
}

static void ref_matmul(const ref_node *r)
{
    opsched_shape A = *r->in[0], B = *r->in[1];
    int a1 = A.ndim == 1, b1 = B.ndim == 1;
    if (a1) {
        A.ndim = 2;
        A.d[1] = A.d[0];
        A.d[0] = 1;
    }
    if (b1) {
        B.ndim = 2;
        B.d[1] = 1;
    }
    int64_t M = A.d[A.ndim - 2], K = A.d[A.ndim - 1], N = B.d[B.ndim - 1];
    /* The output with the matrix dims restored, batch dims broadcast. */
    opsched_shape full = {0};
    int nb = (A.ndim > B.ndim ? A.ndim : B.ndim) - 2;
    for (int i = 0; i < nb; i++) {
        int ai = A.ndim - 2 - nb + i, bi = B.ndim - 2 - nb + i;
        int64_t da = ai >= 0 ? A.d[ai] : 1, db = bi >= 0 ? B.d[bi] : 1;
        full.d[i] = da > db ? da : db;
    }
    full.ndim = nb + 2;
    full.d[nb] = M;
    full.d[nb + 1] = N;
    int64_t c[OPSCHED_MAX_DIMS + 2], ac[OPSCHED_MAX_DIMS + 2], bc[OPSCHED_MAX_DIMS + 2];
    for (int64_t idx = 0; idx < numel(&full); idx++) {
        unravel(idx, &full, c);
        double acc = 0;
        for (int64_t k = 0; k < K; k++) {
            /* A's coordinates: its batch dims (1 -> 0), then (i, k). */
            for (int i = 0; i < A.ndim - 2; i++)
                ac[i] = A.d[i] == 1 ? 0 : c[nb - (A.ndim - 2) + i];
            ac[A.ndim - 2] = c[nb];
            ac[A.ndim - 1] = k;
            for (int i = 0; i < B.ndim - 2; i++)
                bc[i] = B.d[i] == 1 ? 0 : c[nb - (B.ndim - 2) + i];
            bc[B.ndim - 2] = k;
            bc[B.ndim - 1] = c[nb + 1];
            acc += (double)r->x[0][ravel(ac, &A)] * r->x[1][ravel(bc, &B)];
        }
        r->y[0][idx] = (float)acc; /* dropping 1-D dims does not move elements */
    }
}

static void ref_pool(const ref_node *r)
{
    const opsched_pool_attr *p = &r->a->pool;
    const opsched_shape *xs = r->in[0], *ys = r->out[0];
    int64_t H = xs->d[2], W = xs->d[3];
    int is_max = r->n->op == OPSCHED_OP_MAXPOOL;
    int64_t yc[4];
    for (int64_t i = 0; i < numel(ys); i++) {
        unravel(i, ys, yc);
        double best = -INFINITY, sum = 0;
        int64_t inside = 0, in_padding = 0;
        for (int64_t kh = 0; kh < p->kernel[0]; kh++) {
            for (int64_t kw = 0; kw < p->kernel[1]; kw++) {
                int64_t h = yc[2] * p->stride[0] - p->pads[0] + kh * p->dilation[0];
                int64_t v = yc[3] * p->stride[1] - p->pads[1] + kw * p->dilation[1];
                if (h >= -p->pads[0] && h < H + p->pads[2] && v >= -p->pads[1] &&
                    v < W + p->pads[3])
                    in_padding++;
                if (h < 0 || h >= H || v < 0 || v >= W) continue;
                double e = r->x[0][((yc[0] * xs->d[1] + yc[1]) * H + h) * W + v];
                inside++;
                sum += e;
                if (e > best) best = e;
            }
        }
        double out = is_max ? best : sum / (double)(p->count_include_pad ? in_padding : inside);
        r->y[0][i] = (float)out;
    }
}

static void ref_global_pool(const ref_node *r)
{
    const opsched_shape *xs = r->in[0];
    int64_t NC = xs->d[0] * xs->d[1], S = numel(xs) / (NC ? NC : 1);
    for (int64_t i = 0; i < NC; i++) {
        double sum = 0, best = -INFINITY;
        for (int64_t s = 0; s < S; s++) {
            double e = r->x[0][i * S + s];
            sum += e;
            if (e > best) best = e;
        }
        r->y[0][i] = (float)(r->n->op == OPSCHED_OP_GLOBALMAXPOOL ? best : sum / (double)S);
    }
}

static double clamp01(double v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* The activations of OPSCHED_OP_UNARY the tests use (written here, not
 * taken from the library); -1 for the others. */
static int unary_fn(const opsched_unary_attr *u, double x, double *y)
{
    double sp = x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); /* softplus */
    switch (u->fn) {
    case OPSCHED_UNARY_LEAKY_RELU: *y = x < 0 ? u->alpha * x : x; return 0;
    case OPSCHED_UNARY_ELU: *y = x < 0 ? u->alpha * (exp(x) - 1.0) : x; return 0;
    case OPSCHED_UNARY_SOFTPLUS: *y = sp; return 0;
    case OPSCHED_UNARY_SWISH: *y = x / (1.0 + exp(-u->alpha * x)); return 0;
    case OPSCHED_UNARY_MISH: *y = x * tanh(sp); return 0;
    default: return -1;
    }
}

static int ref_unary(const ref_node *r)
{
    const opsched_op_attr *a = r->a;
    for (int64_t i = 0; i < numel(r->out[0]); i++) {
        double x = r->x[0][i], y;
        switch (r->n->op) {
        case OPSCHED_OP_UNARY:
            if (unary_fn(&a->unary, x, &y) != 0) return -1;
            break;
        case OPSCHED_OP_RELU:
            y = x > 0 ? x : 0;
            break;
        case OPSCHED_OP_CLIP:
            y = x < a->clip.min ? a->clip.min : x > a->clip.max ? a->clip.max : x;
            break;
        case OPSCHED_OP_SIGMOID:
            y = 1.0 / (1.0 + exp(-x));
            break;
        case OPSCHED_OP_TANH:
            y = tanh(x);
            break;
        case OPSCHED_OP_GELU:
            y = a->gelu.tanh_approx ? 0.5 * x *
                                          (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) *
                                                      (x + 0.044715 * x * x * x)))
                                    : 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
            break;
        case OPSCHED_OP_ERF:
            y = erf(x);
            break;
        case OPSCHED_OP_HARDSIGMOID:
            y = clamp01(a->hardsigmoid.alpha * x + a->hardsigmoid.beta);
            break;
        case OPSCHED_OP_HARDSWISH:
            y = x * clamp01(x / 6.0 + 0.5);
            break;
        case OPSCHED_OP_SQRT:
            y = sqrt(x);
            break;
        default:
            y = x;
            break; /* Identity, Dropout, Flatten, Reshape */
        }
        r->y[0][i] = (float)y;
    }
    return 0;
}

static void ref_binary(const ref_node *r)
{
    const opsched_shape *ys = r->out[0];
    int64_t c[OPSCHED_MAX_DIMS];
    for (int64_t i = 0; i < numel(ys); i++) {
        unravel(i, ys, c);
        double u = r->x[0][bcast_index(c, ys->ndim, r->in[0])];
        double v = r->x[1][bcast_index(c, ys->ndim, r->in[1])], y;
        switch (r->n->op) {
        case OPSCHED_OP_ADD:
            y = u + v;
            break;
        case OPSCHED_OP_SUB:
            y = u - v;
            break;
        case OPSCHED_OP_MUL:
            y = u * v;
            break;
        case OPSCHED_OP_DIV:
            y = u / v;
            break;
        default:
            y = pow(u, v);
            break;
        }
        r->y[0][i] = (float)y;
    }
}

static void ref_concat(const ref_node *r)
{
    const opsched_shape *ys = r->out[0];
    int axis = (int)r->a->axis.axis;
    int64_t c[OPSCHED_MAX_DIMS];
    for (int64_t i = 0; i < numel(ys); i++) {
        unravel(i, ys, c);
        int k = 0;
        while (c[axis] >= r->in[k]->d[axis])
            c[axis] -= r->in[k++]->d[axis];
        r->y[0][i] = r->x[k][ravel(c, r->in[k])];
    }
}

static void ref_split(const ref_node *r)
{
    int axis = (int)r->a->split.axis;
    int64_t base = 0, c[OPSCHED_MAX_DIMS];
    for (int j = 0; j < r->n->n_outputs; j++) {
        for (int64_t i = 0; i < numel(r->out[j]); i++) {
            unravel(i, r->out[j], c);
            c[axis] += base;
            r->y[j][i] = r->x[0][ravel(c, r->in[0])];
        }
        base += r->a->split.sizes[j];
    }
}

static void ref_slice(const ref_node *r)
{
    const opsched_slice_attr *s = &r->a->slice;
    int64_t c[OPSCHED_MAX_DIMS];
    for (int64_t i = 0; i < numel(r->out[0]); i++) {
        unravel(i, r->out[0], c);
        for (int d = 0; d < r->in[0]->ndim; d++)
            c[d] = s->starts[d] + c[d] * s->steps[d];
        r->y[0][i] = r->x[0][ravel(c, r->in[0])];
    }
}

static int ref_gather(const ref_node *r)
{
    const opsched_shape *xs = r->in[0], *is = r->in[1], *ys = r->out[0];
    int axis = (int)r->a->axis.axis;
    int64_t c[OPSCHED_MAX_DIMS], ic[OPSCHED_MAX_DIMS], xc[OPSCHED_MAX_DIMS];
    for (int64_t i = 0; i < numel(ys); i++) {
        unravel(i, ys, c);
        for (int d = 0; d < is->ndim; d++)
            ic[d] = c[axis + d];
        int64_t j = index_at(r, 1, ravel(ic, is));
        if (j < 0) j += xs->d[axis];
        if (j < 0 || j >= xs->d[axis]) return -1;
        for (int d = 0; d < axis; d++)
            xc[d] = c[d];
        xc[axis] = j;
        for (int d = axis + 1; d < xs->ndim; d++)
            xc[d] = c[d - 1 + is->ndim];
        r->y[0][i] = r->x[0][ravel(xc, xs)];
    }
    return 0;
}

static void ref_batchnorm(const ref_node *r)
{
    const opsched_shape *xs = r->in[0];
    int64_t c[OPSCHED_MAX_DIMS];
    for (int64_t i = 0; i < numel(xs); i++) {
        unravel(i, xs, c);
        int64_t ch = c[1];
        double v =
            (r->x[0][i] - (double)r->x[3][ch]) / sqrt((double)r->x[4][ch] + r->a->bn.epsilon);
        r->y[0][i] = (float)(r->x[1][ch] * v + r->x[2][ch]);
    }
}

/* The batch's mean and population variance of channel ch over every
 * axis but 1, in double. */
static void channel_stats(const opsched_shape *xs, const float *x, int64_t ch, double *mean,
                          double *var)
{
    int64_t c[OPSCHED_MAX_DIMS], cnt = 0;
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < numel(xs); i++) {
        unravel(i, xs, c);
        if (c[1] != ch) continue;
        s += x[i];
        cnt++;
    }
    *mean = s / (double)cnt;
    for (int64_t i = 0; i < numel(xs); i++) {
        unravel(i, xs, c);
        if (c[1] != ch) continue;
        s2 += (x[i] - *mean) * (x[i] - *mean);
    }
    *var = s2 / (double)cnt;
}

/* y = (x - mean) / sqrt(var + eps) * scale + bias with the batch's mean and
 * variance; outputs y, the mean and 1 / sqrt(var + eps). */
static void ref_batchnorm_train(const ref_node *r)
{
    const opsched_shape *xs = r->in[0];
    int64_t C = xs->d[1], c[OPSCHED_MAX_DIMS];
    for (int64_t ch = 0; ch < C; ch++) {
        double mean, var;
        channel_stats(xs, r->x[0], ch, &mean, &var);
        double inv = 1.0 / sqrt(var + r->a->bn.epsilon);
        r->y[1][ch] = (float)mean;
        r->y[2][ch] = (float)inv;
        for (int64_t i = 0; i < numel(xs); i++) {
            unravel(i, xs, c);
            if (c[1] == ch)
                r->y[0][i] = (float)((r->x[0][i] - mean) * inv * r->x[1][ch] + r->x[2][ch]);
        }
    }
}

/* The gradients of ref_batchnorm_train from dy, x, scale and the saved mean
 * and inverse deviation (inputs 3 and 4, used as given):
 * dbias = sum dy, dscale = sum dy xhat,
 * dx = scale inv (dy - dbias / m - xhat dscale / m), m the count per channel. */
static void ref_batchnorm_grad(const ref_node *r)
{
    const opsched_shape *xs = r->in[1];
    const float *dy = r->x[0], *x = r->x[1];
    int64_t C = xs->d[1], c[OPSCHED_MAX_DIMS];
    for (int64_t ch = 0; ch < C; ch++) {
        double mean = r->x[3][ch], inv = r->x[4][ch], db = 0, ds = 0;
        int64_t m = 0;
        for (int64_t i = 0; i < numel(xs); i++) {
            unravel(i, xs, c);
            if (c[1] != ch) continue;
            db += dy[i];
            ds += dy[i] * (x[i] - mean) * inv;
            m++;
        }
        r->y[1][ch] = (float)ds;
        r->y[2][ch] = (float)db;
        for (int64_t i = 0; i < numel(xs); i++) {
            unravel(i, xs, c);
            if (c[1] != ch) continue;
            double xhat = (x[i] - mean) * inv;
            r->y[0][i] = (float)(r->x[2][ch] * inv * (dy[i] - db / m - xhat * ds / m));
        }
    }
}

/* dW[m, ci, kh, kw] = sum over n, oh, ow of dy[n, m, oh, ow] times the
 * input element that tap reads in the forward convolution. */
static void ref_conv_grad_filter(const ref_node *r)
{
    const opsched_conv_attr *c = &r->a->conv;
    const opsched_shape *xs = r->in[0], *ys = r->in[1], *ws = r->out[0];
    const float *x = r->x[0], *dy = r->x[1];
    int64_t N = xs->d[0], C = xs->d[1], H = xs->d[2], W = xs->d[3], M = ys->d[1];
    int64_t G = c->groups, Cg = C / G, Mg = M / G, wc[4];
    for (int64_t i = 0; i < numel(ws); i++) {
        unravel(i, ws, wc);
        int64_t m = wc[0], g = m / Mg;
        double acc = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t oh = 0; oh < ys->d[2]; oh++) {
                int64_t h = oh * c->stride[0] - c->pads[0] + wc[2] * c->dilation[0];
                if (h < 0 || h >= H) continue;
                for (int64_t ow = 0; ow < ys->d[3]; ow++) {
                    int64_t v = ow * c->stride[1] - c->pads[1] + wc[3] * c->dilation[1];
                    if (v < 0 || v >= W) continue;
                    acc += (double)dy[((n * M + m) * ys->d[2] + oh) * ys->d[3] + ow] *
                           x[((n * C + g * Cg + wc[1]) * H + h) * W + v];
                }
            }
        r->y[0][i] = (float)acc;
    }
}

/* outer x axis x inner views of a tensor around one axis. */
static void around(const opsched_shape *s, int axis, int64_t *outer, int64_t *len, int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < axis; d++)
        *outer *= s->d[d];
    for (int d = axis + 1; d < s->ndim; d++)
        *inner *= s->d[d];
    *len = s->d[axis];
}

static void ref_softmax(const ref_node *r)
{
    int64_t outer, len, inner;
    around(r->in[0], (int)r->a->axis.axis, &outer, &len, &inner);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t q = 0; q < inner; q++) {
            const float *x = r->x[0] + o * len * inner + q;
            float *y = r->y[0] + o * len * inner + q;
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < len; k++)
                mx = x[k * inner] > mx ? x[k * inner] : mx;
            for (int64_t k = 0; k < len; k++)
                sum += exp(x[k * inner] - mx);
            for (int64_t k = 0; k < len; k++)
                y[k * inner] = (float)(exp(x[k * inner] - mx) / sum);
        }
    }
}

static void ref_lrn(const ref_node *r)
{
    const opsched_lrn_attr *a = &r->a->lrn;
    const opsched_shape *xs = r->in[0];
    int64_t C = xs->d[1], c[OPSCHED_MAX_DIMS];
    int64_t lo = (int64_t)floor((a->size - 1) / 2.0), hi = (int64_t)ceil((a->size - 1) / 2.0);
    for (int64_t i = 0; i < numel(xs); i++) {
        unravel(i, xs, c);
        int64_t ch = c[1];
        double sum = 0;
        for (int64_t k = ch - lo; k <= ch + hi; k++) {
            if (k < 0 || k >= C) continue;
            c[1] = k;
            double v = r->x[0][ravel(c, xs)];
            sum += v * v;
        }
        r->y[0][i] = (float)(r->x[0][i] / pow(a->bias + a->alpha / (double)a->size * sum, a->beta));
    }
}

static void ref_layernorm(const ref_node *r)
{
    const opsched_shape *xs = r->in[0];
    int axis = (int)r->a->layernorm.axis;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= xs->d[d];
    for (int d = axis; d < xs->ndim; d++)
        inner *= xs->d[d];
    for (int64_t o = 0; o < outer; o++) {
        const float *x = r->x[0] + o * inner;
        double mean = 0, var = 0;
        for (int64_t k = 0; k < inner; k++)
            mean += x[k];
        mean /= (double)inner;
        for (int64_t k = 0; k < inner; k++)
            var += (x[k] - mean) * (x[k] - mean);
        var /= (double)inner;
        for (int64_t k = 0; k < inner; k++) {
            double v = (x[k] - mean) / sqrt(var + r->a->layernorm.epsilon) * r->x[1][k];
            if (r->x[2]) v += r->x[2][k];
            r->y[0][o * inner + k] = (float)v;
        }
    }
}

/* Attention: for each (b, h, i), the scores over the keys in double, their
 * softmax, and its product with V; each operand addressed by the row-major
 * offsets of its canonical coordinates (axes -1 and broadcast dims of size
 * 1 take index 0). */
/* The element of operand x at canonical index c: through its view when it
 * has one (offset plus the view's strides), else row-major in its tensor. */
static int64_t att_offset(const opsched_attention_attr *at, int x, const opsched_shape *s,
                          const int64_t c[4])
{
    const opsched_attention_view *v = x < 3 && at->view[x].rank > 0 ? &at->view[x] : NULL;
    int rank = v ? v->rank : s->ndim;
    int64_t idx[OPSCHED_MAX_DIMS] = {0};
    for (int k = 0; k < 4; k++) {
        int a = at->axes[x][k];
        if (a >= 0 && (v ? v->d[a] : s->d[a]) > 1) idx[a] = c[k];
    }
    int64_t off = v ? v->offset : 0;
    for (int d = 0; d < rank; d++)
        off = v ? off + idx[d] * v->stride[d] : off * s->d[d] + idx[d];
    return off;
}

static int64_t att_dim(const opsched_attention_attr *at, int x, const opsched_shape *s, int k)
{
    int a = at->axes[x][k];
    if (a < 0) return 1;
    return x < 3 && at->view[x].rank > 0 ? at->view[x].d[a] : s->d[a];
}

static void ref_attention(const ref_node *r)
{
    const opsched_attention_attr *at = &r->a->attention;
    const opsched_shape *qs = r->in[0], *ks = r->in[1], *vs = r->in[2], *os = r->out[0];
    const opsched_shape *bs = r->x[3] ? r->in[3] : NULL;
    int64_t B = att_dim(at, 0, qs, 0), H = att_dim(at, 0, qs, 1);
    int64_t Sq = att_dim(at, 0, qs, 2), D = att_dim(at, 0, qs, 3);
    int64_t Sk = att_dim(at, 1, ks, 2), Dv = att_dim(at, 2, vs, 3);
    double *sc = malloc(sizeof(double) * (size_t)Sk);
    if (!sc) return;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < Sq; i++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < Sk; j++) {
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++) {
                        int64_t cq[4] = {b, h, i, d}, ck[4] = {b, h, j, d};
                        dot += (double)r->x[0][att_offset(at, 0, qs, cq)] *
                               r->x[1][att_offset(at, 1, ks, ck)];
                    }
                    sc[j] = dot * at->scale;
                    if (bs) {
                        int64_t cb[4] = {b, h, i, j};
                        sc[j] += r->x[3][att_offset(at, 3, bs, cb)];
                    }
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int64_t j = 0; j < Sk; j++) {
                    sc[j] = exp(sc[j] - mx);
                    sum += sc[j];
                }
                for (int64_t e = 0; e < Dv; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j < Sk; j++) {
                        int64_t cv[4] = {b, h, j, e};
                        acc += sc[j] / sum * r->x[2][att_offset(at, 2, vs, cv)];
                    }
                    int64_t co[4] = {b, h, i, e};
                    r->y[0][att_offset(at, 4, os, co)] = (float)acc;
                }
            }
    free(sc);
}

/* ReduceMean and the generic Reduce (every fn), in double. */
static int ref_reduce(const ref_node *r, opsched_reduce_fn fn)
{
    const opsched_shape *xs = r->in[0];
    const opsched_reduce_attr *a = &r->a->reduce;
    int reduced[OPSCHED_MAX_DIMS];
    opsched_shape kept = *xs;
    for (int d = 0; d < xs->ndim; d++)
        reduced[d] = a->n_axes == 0;
    for (int k = 0; k < a->n_axes; k++)
        reduced[a->axes[k]] = 1;
    for (int d = 0; d < xs->ndim; d++)
        if (reduced[d]) kept.d[d] = 1;
    int64_t n_out = numel(&kept), c[OPSCHED_MAX_DIMS];
    double *acc = malloc((size_t)(n_out ? n_out : 1) * sizeof(double));
    if (!acc) return -1;
    double init = fn == OPSCHED_REDUCE_MAX ? -INFINITY
                  : fn == OPSCHED_REDUCE_MIN ? INFINITY
                  : fn == OPSCHED_REDUCE_PROD ? 1.0 : 0.0;
    for (int64_t i = 0; i < n_out; i++)
        acc[i] = init;
    for (int64_t i = 0; i < numel(xs); i++) {
        unravel(i, xs, c);
        for (int d = 0; d < xs->ndim; d++)
            if (reduced[d]) c[d] = 0;
        double v = r->x[0][i], *o = &acc[ravel(c, &kept)];
        switch (fn) {
        case OPSCHED_REDUCE_MAX: *o = v > *o ? v : *o; break;
        case OPSCHED_REDUCE_MIN: *o = v < *o ? v : *o; break;
        case OPSCHED_REDUCE_PROD: *o *= v; break;
        case OPSCHED_REDUCE_L1: *o += fabs(v); break;
        case OPSCHED_REDUCE_L2:
        case OPSCHED_REDUCE_SUMSQUARE: *o += v * v; break;
        case OPSCHED_REDUCE_LOGSUMEXP: *o += exp(v); break;
        default: *o += v; break; /* mean, sum, logsum */
        }
    }
    double count = (double)numel(xs) / (double)(n_out ? n_out : 1);
    for (int64_t i = 0; i < n_out; i++) {
        double v = acc[i];
        if (fn == OPSCHED_REDUCE_MEAN) v /= count;
        else if (fn == OPSCHED_REDUCE_L2) v = sqrt(v);
        else if (fn == OPSCHED_REDUCE_LOGSUM || fn == OPSCHED_REDUCE_LOGSUMEXP) v = log(v);
        r->y[0][i] = (float)v;
    }
    free(acc);
    return 0;
}

static void ref_transpose(const ref_node *r)
{
    const opsched_transpose_attr *t = &r->a->transpose;
    int64_t c[OPSCHED_MAX_DIMS], xc[OPSCHED_MAX_DIMS];
    for (int64_t i = 0; i < numel(r->out[0]); i++) {
        unravel(i, r->out[0], c);
        for (int d = 0; d < t->n; d++)
            xc[t->perm[d]] = c[d];
        r->y[0][i] = r->x[0][ravel(xc, r->in[0])];
    }
}

static void ref_pad(const ref_node *r)
{
    const opsched_pad_attr *p = &r->a->pad;
    const opsched_shape *xs = r->in[0];
    int64_t c[OPSCHED_MAX_DIMS];
    for (int64_t i = 0; i < numel(r->out[0]); i++) {
        unravel(i, r->out[0], c);
        int inside = 1;
        for (int d = 0; d < xs->ndim; d++) {
            int64_t j = c[d] - p->pads[d], n = xs->d[d];
            if (j < 0 || j >= n) {
                if (p->mode == OPSCHED_PAD_CONSTANT) {
                    inside = 0;
                } else if (p->mode == OPSCHED_PAD_EDGE || n == 1) {
                    j = j < 0 ? 0 : n - 1;
                } else {
                    while (j < 0 || j >= n)
                        j = j < 0 ? -j : 2 * (n - 1) - j;
                }
            }
            c[d] = j;
        }
        r->y[0][i] = inside ? r->x[0][ravel(c, xs)] : p->value;
    }
}

static void ref_expand(const ref_node *r)
{
    const opsched_shape *ys = r->out[0];
    int64_t c[OPSCHED_MAX_DIMS];
    for (int64_t i = 0; i < numel(ys); i++) {
        unravel(i, ys, c);
        r->y[0][i] = r->x[0][bcast_index(c, ys->ndim, r->in[0])];
    }
}

int ref_run_node(const opsched_graph *g, int node, const void *const *in, float *const *out,
                 int relu_after)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || n->n_inputs > REF_MAX_IO || n->n_outputs > REF_MAX_IO) return -1;
    ref_node r;
    memset(&r, 0, sizeof(r));
    r.n = n;
    r.a = &n->attr;
    r.y = out;
    for (int i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0) continue;
        const opsched_tensor *t = opsched_graph_tensor(g, n->inputs[i]);
        r.in[i] = &t->shape;
        r.in_dt[i] = t->dtype;
        r.raw[i] = in[i];
        r.x[i] = in[i];
    }
    for (int i = 0; i < n->n_outputs; i++)
        r.out[i] = &opsched_graph_tensor(g, n->outputs[i])->shape;
    int rc = 0;
    switch (n->op) {
    case OPSCHED_OP_CONV:
        ref_conv(&r);
        break;
    case OPSCHED_OP_GEMM:
        ref_gemm(&r);
        break;
    case OPSCHED_OP_MATMUL:
        ref_matmul(&r);
        break;
    case OPSCHED_OP_MAXPOOL:
    case OPSCHED_OP_AVGPOOL:
        ref_pool(&r);
        break;
    case OPSCHED_OP_GLOBALAVGPOOL:
    case OPSCHED_OP_GLOBALMAXPOOL:
        ref_global_pool(&r);
        break;
    case OPSCHED_OP_RELU:
    case OPSCHED_OP_CLIP:
    case OPSCHED_OP_SIGMOID:
    case OPSCHED_OP_TANH:
    case OPSCHED_OP_GELU:
    case OPSCHED_OP_ERF:
    case OPSCHED_OP_HARDSIGMOID:
    case OPSCHED_OP_HARDSWISH:
    case OPSCHED_OP_SQRT:
    case OPSCHED_OP_FLATTEN:
    case OPSCHED_OP_RESHAPE:
    case OPSCHED_OP_IDENTITY:
    case OPSCHED_OP_DROPOUT:
    case OPSCHED_OP_UNARY:
        rc = ref_unary(&r);
        break;
    case OPSCHED_OP_ADD:
    case OPSCHED_OP_SUB:
    case OPSCHED_OP_MUL:
    case OPSCHED_OP_DIV:
    case OPSCHED_OP_POW:
        ref_binary(&r);
        break;
    case OPSCHED_OP_CONCAT:
        ref_concat(&r);
        break;
    case OPSCHED_OP_SPLIT:
        ref_split(&r);
        break;
    case OPSCHED_OP_SLICE:
        ref_slice(&r);
        break;
    case OPSCHED_OP_GATHER:
        rc = ref_gather(&r);
        break;
    case OPSCHED_OP_BATCHNORM:
        ref_batchnorm(&r);
        break;
    case OPSCHED_OP_BATCHNORM_TRAIN:
        ref_batchnorm_train(&r);
        break;
    case OPSCHED_OP_BATCHNORM_GRAD:
        ref_batchnorm_grad(&r);
        break;
    case OPSCHED_OP_CONV_GRAD_FILTER:
        ref_conv_grad_filter(&r);
        break;
    case OPSCHED_OP_SOFTMAX:
        ref_softmax(&r);
        break;
    case OPSCHED_OP_LRN:
        ref_lrn(&r);
        break;
    case OPSCHED_OP_LAYERNORM:
        ref_layernorm(&r);
        break;
    case OPSCHED_OP_ATTENTION:
        ref_attention(&r);
        break;
    case OPSCHED_OP_REDUCEMEAN:
        rc = ref_reduce(&r, OPSCHED_REDUCE_MEAN);
        break;
    case OPSCHED_OP_REDUCE:
        rc = ref_reduce(&r, r.a->reduce.fn);
        break;
    case OPSCHED_OP_TRANSPOSE:
        ref_transpose(&r);
        break;
    case OPSCHED_OP_PAD:
        ref_pad(&r);
        break;
    case OPSCHED_OP_EXPAND:
        ref_expand(&r);
        break;
    default:
        return -1;
    }
    if (rc == 0 && relu_after) {
        for (int j = 0; j < n->n_outputs; j++)
            for (int64_t i = 0; i < numel(r.out[j]); i++)
                if (!(out[j][i] > 0)) out[j][i] = 0;
    }
    return rc;
}
