/*
 * cpu_loops.c - operators the CPU backend runs as plain C loops: data
 * movement on every type (Split, Slice, Gather, Pad, Expand, views, and
 * Concat and Transpose beside oneDNN's f32 ones), and the cases of pooling,
 * LRN, MatMul and Gemm that oneDNN cannot express or that are not f32.
 *
 * Every loop reads row-major inputs and writes every output element.
 * Broadcasting follows numpy: shapes align at the right; an extent of 1 is
 * repeated, which an offset stride of 0 does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_impl.h"

opsched_status cpu_loop_copy(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out)
{
    (void)ctx;
    size_t bytes = (size_t)opsched_shape_numel(&n->out[0]) * cpu_esize(n->out_dt[0]);
    if (in[0] != out[0] && bytes) memmove(out[0], in[0], bytes);
    return OPSCHED_OK;
}

opsched_status cpu_loop_expand(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    (void)ctx;
    cpu_broadcast_copy(in[0], &n->in[0], &n->out[0], out[0], cpu_esize(n->in_dt[0]));
    return OPSCHED_OK;
}

opsched_status cpu_loop_gemm_c(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    (void)ctx;
    cpu_broadcast_copy(in[2], &n->in[2], &n->out[0], out[0], sizeof(float));
    return OPSCHED_OK;
}

opsched_status cpu_loop_conv_residual(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                      void *const *out)
{
    (void)ctx;
    memcpy(out[0], in[3], (size_t)opsched_shape_numel(&n->out[0]) * sizeof(float));
    return OPSCHED_OK;
}

opsched_status cpu_loop_split(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out)
{
    (void)ctx;
    const opsched_shape *x = &n->in[0];
    int axis = (int)n->attr.split.axis;
    size_t esz = cpu_esize(n->in_dt[0]);
    int64_t outer = cpu_span(x, 0, axis), inner = cpu_span(x, axis + 1, x->ndim);
    const char *src = in[0];
    for (int64_t o = 0; o < outer; o++) {
        for (int j = 0; j < n->n_out; j++) {
            size_t chunk = (size_t)(n->attr.split.sizes[j] * inner) * esz;
            if (chunk) memcpy((char *)out[j] + (size_t)o * chunk, src, chunk);
            src += chunk;
        }
    }
    return OPSCHED_OK;
}

opsched_status cpu_loop_concat(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    (void)ctx;
    const opsched_shape *o = &n->out[0];
    int axis = (int)n->attr.axis.axis;
    size_t esz = cpu_esize(n->out_dt[0]);
    int64_t outer = cpu_span(o, 0, axis), inner = cpu_span(o, axis + 1, o->ndim);
    char *dst = out[0];
    for (int64_t k = 0; k < outer; k++) {
        for (int j = 0; j < n->n_in; j++) {
            size_t chunk = (size_t)(n->in[j].d[axis] * inner) * esz;
            if (chunk) memcpy(dst, (const char *)in[j] + (size_t)k * chunk, chunk);
            dst += chunk;
        }
    }
    return OPSCHED_OK;
}

opsched_status cpu_loop_transpose(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                  void *const *out)
{
    (void)ctx;
    const opsched_shape *x = &n->in[0], *o = &n->out[0];
    const opsched_transpose_attr *t = &n->attr.transpose;
    size_t esz = cpu_esize(n->in_dt[0]);
    int64_t xs[OPSCHED_MAX_DIMS], len, rows, i = 0;
    cpu_row_strides(x, xs);
    cpu_walk w;
    cpu_walk_init(&w, o);
    for (int d = 0; d < o->ndim; d++)
        w.st[0][d] = xs[t->perm[d]]; /* output axis d walks input axis perm[d] */
    cpu_rows(o, &len, &rows);
    int64_t s = o->ndim > 0 ? w.st[0][o->ndim - 1] : 0;
    for (int64_t r = 0; r < rows; r++, cpu_walk_step(&w, o->ndim - 1))
        for (int64_t j = 0; j < len; j++)
            cpu_copy_elem(out[0], i++, in[0], w.off[0] + j * s, esz);
    return OPSCHED_OK;
}

opsched_status cpu_loop_slice(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out)
{
    (void)ctx;
    const opsched_shape *x = &n->in[0], *o = &n->out[0];
    const opsched_slice_attr *s = &n->attr.slice;
    size_t esz = cpu_esize(n->in_dt[0]);
    int64_t xs[OPSCHED_MAX_DIMS], base = 0, len, rows, i = 0;
    cpu_row_strides(x, xs);
    cpu_walk w;
    cpu_walk_init(&w, o);
    for (int d = 0; d < x->ndim; d++) {
        base += s->starts[d] * xs[d];
        w.st[0][d] = s->steps[d] * xs[d];
    }
    cpu_rows(o, &len, &rows);
    int64_t step = o->ndim > 0 ? w.st[0][o->ndim - 1] : 0;
    for (int64_t r = 0; r < rows; r++, cpu_walk_step(&w, o->ndim - 1))
        for (int64_t j = 0; j < len; j++)
            cpu_copy_elem(out[0], i++, in[0], base + w.off[0] + j * step, esz);
    return OPSCHED_OK;
}

opsched_status cpu_loop_gather(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    const opsched_shape *x = &n->in[0];
    int axis = (int)n->attr.axis.axis;
    size_t esz = cpu_esize(n->in_dt[0]);
    int64_t outer = cpu_span(x, 0, axis), dim = x->d[axis], inner = cpu_span(x, axis + 1, x->ndim);
    int64_t count = opsched_shape_numel(&n->in[1]);
    const char *src = in[0];
    char *y = out[0];
    for (int64_t k = 0; k < count; k++) {
        int64_t j = cpu_load_i(in[1], n->in_dt[1], k);
        if (j < -dim || j >= dim)
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "cpu: Gather index %lld is outside axis %d of extent %lld", (long long)j,
                           axis, (long long)dim);
    }
    size_t row = (size_t)inner * esz;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t k = 0; k < count; k++) {
            int64_t j = cpu_load_i(in[1], n->in_dt[1], k);
            if (j < 0) j += dim;
            if (row)
                memcpy(y + (size_t)(o * count + k) * row, src + (size_t)(o * dim + j) * row, row);
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
    if (mode == OPSCHED_PAD_WRAP) { /* the axis repeated: numpy's "wrap" */
        j %= dim;
        return j < 0 ? j + dim : j;
    }
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
    opsched_dtype dt = n->in_dt[0];
    size_t esz = cpu_esize(dt);
    int64_t xs[OPSCHED_MAX_DIMS];
    cpu_row_strides(x, xs);
    /* The constant, stored once in the tensor's type. */
    uint64_t fill = 0;
    cpu_store_f(&fill, dt, 0, a->value);
    cpu_walk w;
    cpu_walk_init(&w, o);
    int64_t total = opsched_shape_numel(o);
    for (int64_t i = 0; i < total; i++, cpu_walk_step(&w, o->ndim)) {
        int64_t off = 0;
        int inside = 1;
        for (int d = 0; d < x->ndim && inside; d++) {
            int64_t j = pad_source(w.idx[d], a->pads[d], x->d[d], a->mode);
            if (j < 0) inside = 0;
            off += j * xs[d];
        }
        if (inside)
            cpu_copy_elem(out[0], i, in[0], off, esz);
        else
            cpu_copy_elem(out[0], i, &fill, 0, esz);
    }
    return OPSCHED_OK;
}

/* One spatial axis of a pooling window. */
typedef struct pool_axis {
    int64_t in, out, k, s, d, p0, p1;
} pool_axis;

/* The axes D, H, W of a pool on x (a unit D for a 2-D pool). */
static void pool_axes(const cpu_node *n, pool_axis ax[3])
{
    const opsched_pool_attr *a = &n->attr.pool;
    const opsched_shape *x = &n->in[0], *o = &n->out[0];
    int hw = x->ndim - 2;
    ax[0] = (pool_axis){1, 1, 1, 1, 1, 0, 0};
    if (x->ndim == 5)
        ax[0] = (pool_axis){x->d[2],         o->d[2],           a->depth.kernel,
                            a->depth.stride, a->depth.dilation, a->depth.pad_begin,
                            a->depth.pad_end};
    for (int i = 0; i < 2; i++)
        ax[1 + i] = (pool_axis){x->d[hw + i],   o->d[hw + i], a->kernel[i],  a->stride[i],
                                a->dilation[i], a->pads[i],   a->pads[2 + i]};
}

/* Max and average pooling (2-D and 3-D) with PyTorch's divisors:
 * exclude-pad counts the taps inside the input; include-pad counts those
 * inside the declared padding, so a ceil-mode window hanging past it is
 * not charged for that.  A window with no tap in the input (padding wider
 * than the kernel) gives -inf for max, the maximum of nothing, and NaN for
 * the exclude-pad average, 0 / 0, as ONNX's reference computes it.
 * MaxPool's second output, when there is one, gets the flat input index
 * of each maximum (storage_order 1: the spatial axes column-major). */
opsched_status cpu_loop_pool(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out)
{
    (void)ctx;
    const opsched_shape *x = &n->in[0];
    pool_axis ax[3];
    pool_axes(n, ax);
    int is_max = n->op == OPSCHED_OP_MAXPOOL;
    int incl = n->attr.pool.count_include_pad, col = n->attr.pool.storage_order;
    int64_t *ind = is_max && n->n_out > 1 ? out[1] : NULL;
    opsched_dtype dt = n->in_dt[0];
    int64_t in_plane = ax[0].in * ax[1].in * ax[2].in, at = 0;
    for (int64_t nc = 0; nc < x->d[0] * x->d[1]; nc++) {
        int64_t plane = nc * in_plane;
        for (int64_t od = 0; od < ax[0].out; od++) {
            for (int64_t oh = 0; oh < ax[1].out; oh++) {
                for (int64_t ow = 0; ow < ax[2].out; ow++, at++) {
                    double acc = is_max ? -INFINITY : 0.0;
                    int64_t inside = 0, padded = 0, o[3] = {od, oh, ow}, best = -1;
                    int64_t k[3];
                    for (k[0] = 0; k[0] < ax[0].k; k[0]++) {
                        for (k[1] = 0; k[1] < ax[1].k; k[1]++) {
                            for (k[2] = 0; k[2] < ax[2].k; k[2]++) {
                                int in_x = 1, in_p = 1;
                                int64_t off = 0, v[3];
                                for (int i = 0; i < 3; i++) {
                                    v[i] = o[i] * ax[i].s - ax[i].p0 + k[i] * ax[i].d;
                                    in_p &= v[i] >= -ax[i].p0 && v[i] < ax[i].in + ax[i].p1;
                                    in_x &= v[i] >= 0 && v[i] < ax[i].in;
                                    off = off * ax[i].in + v[i];
                                }
                                padded += in_p;
                                if (!in_x) continue;
                                double e = cpu_load_f(in[0], dt, plane + off);
                                if (!is_max) {
                                    acc += e;
                                } else if (inside == 0 || e > acc || (isnan(e) && !isnan(acc))) {
                                    /* the first maximum (or NaN) in window order */
                                    acc = e;
                                    best = col ? v[0] + ax[0].in * (v[1] + ax[1].in * v[2]) : off;
                                }
                                inside++;
                            }
                        }
                    }
                    if (!is_max) {
                        int64_t div = incl ? padded : inside;
                        acc = div ? acc / (double)div : NAN;
                    }
                    cpu_store_f(out[0], dt, at, acc);
                    if (ind) ind[at] = best < 0 ? -1 : plane + best;
                }
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
    int64_t C = x->d[1], S = cpu_span(x, 2, x->ndim);
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

/* C[M,N] = A[M,K] B[K,N] for one batch: floats accumulate in double,
 * integers in int64 wrapping as their type does.  as and bs are the
 * strides of A's rows and columns and of B's. */
static void matmul_one(const void *a, opsched_dtype adt, int64_t a0, int64_t ar, int64_t ac,
                       const void *b, opsched_dtype bdt, int64_t b0, int64_t br, int64_t bc,
                       void *y, opsched_dtype ydt, int64_t y0, int64_t M, int64_t N, int64_t K)
{
    int ints = !cpu_is_float(adt) && !cpu_is_float(bdt);
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            if (ints) {
                uint64_t acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (uint64_t)cpu_load_i(a, adt, a0 + i * ar + k * ac) *
                           (uint64_t)cpu_load_i(b, bdt, b0 + k * br + j * bc);
                cpu_store_i(y, ydt, y0 + i * N + j, (int64_t)acc);
            } else {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += cpu_load_f(a, adt, a0 + i * ar + k * ac) *
                           cpu_load_f(b, bdt, b0 + k * br + j * bc);
                cpu_store_f(y, ydt, y0 + i * N + j, acc);
            }
        }
    }
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
    cpu_walk w;
    cpu_walk_init(&w, &ob);
    cpu_bcast_strides(&ab, &ob, w.st[0]);
    cpu_bcast_strides(&bb, &ob, w.st[1]);
    int64_t batches = opsched_shape_numel(&ob);
    for (int64_t t = 0; t < batches; t++, cpu_walk_step(&w, ob.ndim))
        matmul_one(in[0], n->in_dt[0], w.off[0] * M * K, K, 1, in[1], n->in_dt[1], w.off[1] * K * N,
                   N, 1, out[0], n->out_dt[0], t * M * N, M, N, K);
    return OPSCHED_OK;
}

/* Gemm on any type: Y = alpha * op(A) op(B) + beta * C, floats in double
 * and rounded once.  Integers stay exact (wrapping) when alpha and beta
 * are 1; otherwise the integer product is scaled in double and truncated. */
opsched_status cpu_loop_gemm(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out)
{
    (void)ctx;
    const opsched_gemm_attr *g = &n->attr.gemm;
    const opsched_shape *as = &n->in[0], *o = &n->out[0];
    int64_t M = o->d[0], N = o->d[1], K = g->trans_a ? as->d[0] : as->d[1];
    int64_t ar = g->trans_a ? 1 : K, ac = g->trans_a ? M : 1;
    int64_t br = g->trans_b ? 1 : N, bc = g->trans_b ? K : 1;
    opsched_dtype adt = n->in_dt[0], bdt = n->in_dt[1], ydt = n->out_dt[0];
    int has_c = n->n_in > 2 && n->has_in[2];
    opsched_dtype cdt = has_c ? n->in_dt[2] : ydt;
    int ints = !cpu_is_float(adt) && !cpu_is_float(bdt);
    int exact = ints && g->alpha == 1.0f && (!has_c || g->beta == 1.0f);
    int64_t cst[OPSCHED_MAX_DIMS] = {0};
    if (has_c) cpu_bcast_strides(&n->in[2], o, cst);
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            int64_t at = i * N + j, ci = i * cst[0] + j * cst[1];
            if (ints) {
                uint64_t acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (uint64_t)cpu_load_i(in[0], adt, i * ar + k * ac) *
                           (uint64_t)cpu_load_i(in[1], bdt, k * br + j * bc);
                if (exact) {
                    if (has_c) acc += (uint64_t)cpu_load_i(in[2], cdt, ci);
                    cpu_store_i(out[0], ydt, at, (int64_t)acc);
                    continue;
                }
                double v = (double)g->alpha * (double)(int64_t)acc;
                if (has_c) v += (double)g->beta * cpu_load_f(in[2], cdt, ci);
                cpu_store_f(out[0], ydt, at, v);
            } else {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += cpu_load_f(in[0], adt, i * ar + k * ac) *
                           cpu_load_f(in[1], bdt, k * br + j * bc);
                double v = (double)g->alpha * acc;
                if (has_c) v += (double)g->beta * cpu_load_f(in[2], cdt, ci);
                cpu_store_f(out[0], ydt, at, v);
            }
        }
    }
    return OPSCHED_OK;
}

/* Attention (opsched_attention_attr): per batch, head and query row, the
 * scaled scores plus the bias, their softmax in double, and its product
 * with V.  Each operand is read through the strides of its canonical dims. */
opsched_status cpu_loop_attention(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                  void *const *out)
{
    const opsched_attention_attr *at = &n->attr.attention;
    int64_t st[OPSCHED_ATT_OPERANDS][4], sz[OPSCHED_ATT_OPERANDS][4];
    int64_t off[OPSCHED_ATT_OPERANDS] = {0};
    for (int x = 0; x < OPSCHED_ATT_OPERANDS; x++) {
        const opsched_shape *s = x == OPSCHED_ATT_O ? &n->out[0]
                                 : x < n->n_in && n->has_in[x] ? &n->in[x]
                                                                : NULL;
        if (s) {
            off[x] = opsched_attention_strides(at, x, s, st[x], sz[x]);
        } else {
            for (int c = 0; c < 4; c++)
                st[x][c] = 0, sz[x][c] = 1;
        }
    }
    int64_t B = sz[0][0], H = sz[0][1], Sq = sz[0][2], D = sz[0][3], Sk = sz[1][2], Dv = sz[2][3];
    const float *q = (const float *)in[0] + off[0], *k = (const float *)in[1] + off[1],
                *v = (const float *)in[2] + off[2];
    const float *bias = n->n_in > 3 && n->has_in[3] ? in[3] : NULL;
    float *o = out[0];
    double *row = malloc(sizeof(double) * (size_t)(Sk + Dv + 1));
    if (!row) return OS_NOMEM(ctx);
    double *acc = row + Sk;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < Sq; i++) {
                const float *qi = q + b * st[0][0] + h * st[0][1] + i * st[0][2];
                double mx = -INFINITY;
                for (int64_t j = 0; j < Sk; j++) {
                    const float *kj = k + b * st[1][0] + h * st[1][1] + j * st[1][2];
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++)
                        dot += (double)qi[d * st[0][3]] * kj[d * st[1][3]];
                    double sc = at->scale * dot;
                    if (bias)
                        sc += bias[b * st[3][0] + h * st[3][1] + i * st[3][2] + j * st[3][3]];
                    row[j] = sc;
                    if (sc > mx || isnan(sc)) mx = sc;
                }
                double sum = 0;
                for (int64_t j = 0; j < Sk; j++) {
                    row[j] = exp(row[j] - mx);
                    sum += row[j];
                }
                int zero = at->nan_rows_zero && mx == -INFINITY;
                for (int64_t d = 0; d < Dv; d++)
                    acc[d] = 0;
                for (int64_t j = 0; j < Sk && !zero; j++) {
                    const float *vj = v + b * st[2][0] + h * st[2][1] + j * st[2][2];
                    double p = row[j] / sum;
                    for (int64_t d = 0; d < Dv; d++)
                        acc[d] += p * vj[d * st[2][3]];
                }
                float *oi = o + b * st[4][0] + h * st[4][1] + i * st[4][2];
                for (int64_t d = 0; d < Dv; d++)
                    oi[d * st[4][3]] = (float)acc[d];
            }
    free(row);
    return OPSCHED_OK;
}
