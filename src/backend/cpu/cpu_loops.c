/*
 * cpu_loops.c - operators the CPU backend runs as plain C loops: data
 * movement (Split, Slice, Gather, Pad, Expand, views), element-wise
 * functions oneDNN 2.6 lacks (Erf, HardSigmoid, Pow), and the cases of
 * pooling, LRN, binary, MatMul and ReduceMean that oneDNN cannot express.
 *
 * Every loop reads f32 row-major inputs and writes every output element.
 * Broadcasting follows numpy: shapes align at the right; an extent of 1 is
 * repeated, which an offset stride of 0 does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_impl.h"

/* Walks the elements of `dims` in row-major order, keeping the offset of
 * up to two operands whose per-dimension strides are st[k]. */
typedef struct walker {
    int nd;
    int64_t dims[OPSCHED_MAX_DIMS];
    int64_t idx[OPSCHED_MAX_DIMS];
    int64_t st[2][OPSCHED_MAX_DIMS];
    int64_t off[2];
} walker;

static void walker_init(walker *w, const opsched_shape *dims)
{
    memset(w, 0, sizeof(*w));
    w->nd = dims->ndim;
    for (int i = 0; i < dims->ndim; i++)
        w->dims[i] = dims->d[i];
}

static void walker_next(walker *w)
{
    for (int i = w->nd - 1; i >= 0; i--) {
        w->idx[i]++;
        w->off[0] += w->st[0][i];
        w->off[1] += w->st[1][i];
        if (w->idx[i] < w->dims[i]) return;
        w->off[0] -= w->st[0][i] * w->dims[i];
        w->off[1] -= w->st[1][i] * w->dims[i];
        w->idx[i] = 0;
    }
}

/* Strides that read `in` broadcast to `out` (0 on repeated dimensions). */
static void bcast_strides(const opsched_shape *in, const opsched_shape *out, int64_t *st)
{
    int64_t s = 1;
    for (int i = out->ndim - 1; i >= 0; i--) {
        int ii = in->ndim - out->ndim + i;
        int64_t d = ii >= 0 ? in->d[ii] : 1;
        st[i] = d == 1 ? 0 : s;
        s *= d;
    }
}

static void row_strides(const opsched_shape *s, int64_t *st)
{
    int64_t m = 1;
    for (int i = s->ndim - 1; i >= 0; i--) {
        st[i] = m;
        m *= s->d[i];
    }
}

static int64_t span(const opsched_shape *s, int from, int to)
{
    int64_t n = 1;
    for (int i = from; i < to; i++)
        n *= s->d[i];
    return n;
}

opsched_status cpu_loop_copy(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out)
{
    (void)ctx;
    size_t bytes = (size_t)opsched_shape_numel(&n->out[0]) * sizeof(float);
    if (in[0] != out[0] && bytes) memmove(out[0], in[0], bytes);
    return OPSCHED_OK;
}

static float unary(const cpu_node *n, float xf)
{
    double x = xf;
    switch (n->op) {
    case OPSCHED_OP_RELU:
        return x > 0 ? xf : 0.0f;
    case OPSCHED_OP_CLIP:
        return fminf(fmaxf(xf, n->attr.clip.min), n->attr.clip.max);
    case OPSCHED_OP_SIGMOID:
        return (float)(1.0 / (1.0 + exp(-x)));
    case OPSCHED_OP_TANH:
        return (float)tanh(x);
    case OPSCHED_OP_GELU:
        if (n->attr.gelu.tanh_approx)
            return (float)(0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))));
        return (float)(0.5 * x * (1.0 + erf(x * 0.7071067811865476)));
    case OPSCHED_OP_ERF:
        return (float)erf(x);
    case OPSCHED_OP_HARDSIGMOID: {
        double v = n->attr.hardsigmoid.alpha * x + n->attr.hardsigmoid.beta;
        return (float)(v < 0 ? 0 : v > 1 ? 1 : v);
    }
    case OPSCHED_OP_HARDSWISH: {
        double v = x / 6.0 + 0.5;
        return (float)(x * (v < 0 ? 0 : v > 1 ? 1 : v));
    }
    case OPSCHED_OP_SQRT:
        return (float)sqrt(x);
    default:
        return xf;
    }
}

opsched_status cpu_loop_unary(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out)
{
    (void)ctx;
    const float *x = in[0];
    float *y = out[0];
    int64_t total = opsched_shape_numel(&n->out[0]);
    for (int64_t i = 0; i < total; i++)
        y[i] = unary(n, x[i]);
    return OPSCHED_OK;
}

opsched_status cpu_loop_binary(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    (void)ctx;
    const float *a = in[0], *b = in[1];
    float *y = out[0];
    walker w;
    walker_init(&w, &n->out[0]);
    bcast_strides(&n->in[0], &n->out[0], w.st[0]);
    bcast_strides(&n->in[1], &n->out[0], w.st[1]);
    int64_t total = opsched_shape_numel(&n->out[0]);
    for (int64_t i = 0; i < total; i++, walker_next(&w)) {
        float u = a[w.off[0]], v = b[w.off[1]];
        switch (n->op) {
        case OPSCHED_OP_ADD:
            y[i] = u + v;
            break;
        case OPSCHED_OP_SUB:
            y[i] = u - v;
            break;
        case OPSCHED_OP_MUL:
            y[i] = u * v;
            break;
        case OPSCHED_OP_DIV:
            y[i] = u / v;
            break;
        default:
            y[i] = (float)pow(u, v);
            break;
        }
    }
    return OPSCHED_OK;
}

/* Writes `in` broadcast to shape `to` into y. */
static void broadcast_into(const float *x, const opsched_shape *from, const opsched_shape *to,
                           float *y)
{
    walker w;
    walker_init(&w, to);
    bcast_strides(from, to, w.st[0]);
    int64_t total = opsched_shape_numel(to);
    for (int64_t i = 0; i < total; i++, walker_next(&w))
        y[i] = x[w.off[0]];
}

opsched_status cpu_loop_expand(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    (void)ctx;
    broadcast_into(in[0], &n->in[0], &n->out[0], out[0]);
    return OPSCHED_OK;
}

opsched_status cpu_loop_gemm_c(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    (void)ctx;
    broadcast_into(in[2], &n->in[2], &n->out[0], out[0]);
    return OPSCHED_OK;
}

opsched_status cpu_loop_split(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out)
{
    (void)ctx;
    const opsched_shape *x = &n->in[0];
    int axis = (int)n->attr.split.axis;
    int64_t outer = span(x, 0, axis), inner = span(x, axis + 1, x->ndim);
    const float *src = in[0];
    for (int64_t o = 0; o < outer; o++) {
        for (int j = 0; j < n->n_out; j++) {
            int64_t chunk = n->attr.split.sizes[j] * inner;
            if (chunk) memcpy((float *)out[j] + o * chunk, src, (size_t)chunk * sizeof(float));
            src += chunk;
        }
    }
    return OPSCHED_OK;
}

opsched_status cpu_loop_slice(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out)
{
    (void)ctx;
    const opsched_shape *x = &n->in[0];
    const opsched_slice_attr *s = &n->attr.slice;
    int64_t xs[OPSCHED_MAX_DIMS], base = 0;
    row_strides(x, xs);
    walker w;
    walker_init(&w, &n->out[0]);
    for (int d = 0; d < x->ndim; d++) {
        base += s->starts[d] * xs[d];
        w.st[0][d] = s->steps[d] * xs[d];
    }
    const float *src = in[0];
    float *y = out[0];
    int64_t total = opsched_shape_numel(&n->out[0]);
    for (int64_t i = 0; i < total; i++, walker_next(&w))
        y[i] = src[base + w.off[0]];
    return OPSCHED_OK;
}

opsched_status cpu_loop_gather(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    const opsched_shape *x = &n->in[0];
    int axis = (int)n->attr.axis.axis;
    int64_t outer = span(x, 0, axis), dim = x->d[axis], inner = span(x, axis + 1, x->ndim);
    int64_t count = opsched_shape_numel(&n->in[1]);
    const float *src = in[0];
    float *y = out[0];
    for (int64_t k = 0; k < count; k++) {
        int64_t j = n->in_dt[1] == OPSCHED_INT32 ? ((const int32_t *)in[1])[k]
                                                 : ((const int64_t *)in[1])[k];
        if (j < -dim || j >= dim)
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "cpu: Gather index %lld is outside axis %d of extent %lld", (long long)j,
                           axis, (long long)dim);
    }
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t k = 0; k < count; k++) {
            int64_t j = n->in_dt[1] == OPSCHED_INT32 ? ((const int32_t *)in[1])[k]
                                                     : ((const int64_t *)in[1])[k];
            if (j < 0) j += dim;
            memcpy(y + (o * count + k) * inner, src + (o * dim + j) * inner,
                   (size_t)inner * sizeof(float));
        }
    }
    return OPSCHED_OK;
}

/* Where output coordinate i of a padded axis reads from, or -1 for the
 * constant. */
static int64_t pad_source(int64_t i, int64_t begin, int64_t dim, opsched_pad_mode mode)
{
    int64_t j = i - begin;
    if (j >= 0 && j < dim) return j;
    if (mode == OPSCHED_PAD_CONSTANT || dim == 0) return -1;
    if (mode == OPSCHED_PAD_EDGE || dim == 1) return j < 0 ? 0 : dim - 1;
    int64_t period = 2 * (dim - 1); /* reflect: the edge is not repeated */
    j %= period;
    if (j < 0) j += period;
    return j < dim ? j : period - j;
}

opsched_status cpu_loop_pad(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out)
{
    (void)ctx;
    const opsched_shape *x = &n->in[0], *o = &n->out[0];
    const opsched_pad_attr *a = &n->attr.pad;
    int64_t xs[OPSCHED_MAX_DIMS];
    row_strides(x, xs);
    const float *src = in[0];
    float *y = out[0];
    walker w;
    walker_init(&w, o);
    int64_t total = opsched_shape_numel(o);
    for (int64_t i = 0; i < total; i++, walker_next(&w)) {
        int64_t off = 0;
        int inside = 1;
        for (int d = 0; d < x->ndim && inside; d++) {
            int64_t j = pad_source(w.idx[d], a->pads[d], x->d[d], a->mode);
            if (j < 0) inside = 0;
            off += j * xs[d];
        }
        y[i] = inside ? src[off] : a->value;
    }
    return OPSCHED_OK;
}

/* Max and average pooling with PyTorch's divisors: exclude-pad counts the
 * taps inside the input; include-pad counts those inside the declared
 * padding, so a ceil-mode window hanging past it is not charged for that. */
opsched_status cpu_loop_pool(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out)
{
    (void)ctx;
    const opsched_pool_attr *a = &n->attr.pool;
    const opsched_shape *x = &n->in[0], *o = &n->out[0];
    int64_t H = x->d[2], W = x->d[3], OH = o->d[2], OW = o->d[3];
    int is_max = n->op == OPSCHED_OP_MAXPOOL;
    const float *src = in[0];
    float *y = out[0];
    for (int64_t nc = 0; nc < x->d[0] * x->d[1]; nc++) {
        const float *plane = src + nc * H * W;
        for (int64_t oh = 0; oh < OH; oh++) {
            for (int64_t ow = 0; ow < OW; ow++) {
                double acc = is_max ? -INFINITY : 0.0;
                int64_t inside = 0, padded = 0;
                for (int64_t kh = 0; kh < a->kernel[0]; kh++) {
                    int64_t h = oh * a->stride[0] - a->pads[0] + kh * a->dilation[0];
                    for (int64_t kw = 0; kw < a->kernel[1]; kw++) {
                        int64_t v = ow * a->stride[1] - a->pads[1] + kw * a->dilation[1];
                        if (h >= -a->pads[0] && h < H + a->pads[2] && v >= -a->pads[1] &&
                            v < W + a->pads[3])
                            padded++;
                        if (h < 0 || h >= H || v < 0 || v >= W) continue;
                        double e = plane[h * W + v];
                        inside++;
                        if (is_max)
                            acc = e > acc ? e : acc;
                        else
                            acc += e;
                    }
                }
                if (!is_max) {
                    int64_t div = a->count_include_pad ? padded : inside;
                    acc = div ? acc / (double)div : 0.0;
                }
                y[(nc * OH + oh) * OW + ow] = (float)acc;
            }
        }
    }
    return OPSCHED_OK;
}

/* ONNX LRN: the window [c - floor((size-1)/2), c + ceil((size-1)/2)]. */
opsched_status cpu_loop_lrn(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out)
{
    (void)ctx;
    const opsched_lrn_attr *a = &n->attr.lrn;
    const opsched_shape *x = &n->in[0];
    int64_t C = x->d[1], S = span(x, 2, x->ndim);
    int64_t lo = (a->size - 1) / 2, hi = a->size - 1 - lo;
    const float *src = in[0];
    float *y = out[0];
    for (int64_t b = 0; b < x->d[0]; b++) {
        for (int64_t c = 0; c < C; c++) {
            int64_t c0 = c - lo < 0 ? 0 : c - lo, c1 = c + hi > C - 1 ? C - 1 : c + hi;
            for (int64_t s = 0; s < S; s++) {
                double sum = 0;
                for (int64_t k = c0; k <= c1; k++) {
                    double v = src[(b * C + k) * S + s];
                    sum += v * v;
                }
                int64_t at = (b * C + c) * S + s;
                y[at] = (float)(src[at] / pow(a->bias + a->alpha / (double)a->size * sum, a->beta));
            }
        }
    }
    return OPSCHED_OK;
}

opsched_status cpu_loop_matmul(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    (void)ctx;
    opsched_shape A = n->in[0], B = n->in[1];
    if (A.ndim == 1) {
        A.ndim = 2;
        A.d[1] = A.d[0];
        A.d[0] = 1;
    }
    if (B.ndim == 1) {
        B.ndim = 2;
        B.d[1] = 1;
    }
    int64_t M = A.d[A.ndim - 2], K = A.d[A.ndim - 1], N = B.d[B.ndim - 1];
    opsched_shape ab = {.ndim = A.ndim - 2}, bb = {.ndim = B.ndim - 2}, ob = {0};
    for (int i = 0; i < ab.ndim; i++)
        ab.d[i] = A.d[i];
    for (int i = 0; i < bb.ndim; i++)
        bb.d[i] = B.d[i];
    ob.ndim = ab.ndim > bb.ndim ? ab.ndim : bb.ndim;
    for (int i = 0; i < ob.ndim; i++) {
        int ai = ab.ndim - ob.ndim + i, bi = bb.ndim - ob.ndim + i;
        int64_t da = ai >= 0 ? ab.d[ai] : 1, db = bi >= 0 ? bb.d[bi] : 1;
        ob.d[i] = da > db ? da : db;
    }
    walker w;
    walker_init(&w, &ob);
    bcast_strides(&ab, &ob, w.st[0]);
    bcast_strides(&bb, &ob, w.st[1]);
    const float *a = in[0], *b = in[1];
    float *y = out[0];
    int64_t batches = opsched_shape_numel(&ob);
    for (int64_t t = 0; t < batches; t++, walker_next(&w)) {
        const float *pa = a + w.off[0] * M * K, *pb = b + w.off[1] * K * N;
        float *py = y + t * M * N;
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (double)pa[i * K + k] * pb[k * N + j];
                py[i * N + j] = (float)acc;
            }
        }
    }
    return OPSCHED_OK;
}

opsched_status cpu_loop_reduce_mean(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                    void *const *out)
{
    const opsched_shape *x = &n->in[0];
    const opsched_reduce_attr *r = &n->attr.reduce;
    int reduced[OPSCHED_MAX_DIMS] = {0};
    for (int i = 0; i < x->ndim; i++)
        reduced[i] = r->n_axes == 0;
    for (int k = 0; k < r->n_axes; k++)
        reduced[r->axes[k]] = 1;
    opsched_shape kept = *x; /* the output with reduced axes kept as 1 */
    for (int i = 0; i < x->ndim; i++)
        if (reduced[i]) kept.d[i] = 1;
    int64_t n_out = opsched_shape_numel(&kept), total = opsched_shape_numel(x);
    double *acc = calloc((size_t)(n_out ? n_out : 1), sizeof(double));
    if (!acc) return OS_NOMEM(ctx);
    walker w;
    walker_init(&w, x);
    bcast_strides(&kept, x, w.st[0]);
    const float *src = in[0];
    for (int64_t i = 0; i < total; i++, walker_next(&w))
        acc[w.off[0]] += src[i];
    double count = n_out ? (double)total / (double)n_out : 1.0;
    float *y = out[0];
    for (int64_t i = 0; i < n_out; i++)
        y[i] = (float)(acc[i] / count);
    free(acc);
    return OPSCHED_OK;
}
