/*
 * infer.c - shape inference and cost counting, one function per operator
 * family.  Every check that fails names the node and what does not fit.
 *
 * Cost conventions: a multiply-add counts 2 FLOPs (convolution, Gemm,
 * MatMul; bias additions are not counted, as in torchvision's figures);
 * element-wise ops, pooling and normalisation count one FLOP per element
 * they touch; data movement (Concat, Transpose, Slice...) counts none.
 * Bytes are each input and output once.
 */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "graph/graph_impl.h"

typedef struct infer_args {
    opsched_graph *g;
    const char *name;
    opsched_op_kind op;
    opsched_op_attr *attr;
    const opsched_tensor *in[128];
    int n_in;
    int n_out;
    opsched_shape *out;
    opsched_dtype *dt;
    opsched_cost *cost;
} infer_args;

#define BAD(a, ...) bad_shape((a), __FILE__, __LINE__, __VA_ARGS__)

static opsched_status bad_shape(const infer_args *a, const char *file, int line, const char *fmt,
                                ...) OS_PRINTF(4, 5);

#include <stdarg.h>
#include <stdio.h>

static opsched_status bad_shape(const infer_args *a, const char *file, int line, const char *fmt,
                                ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return os_fail(a->g->ctx, OPSCHED_ERR_SHAPE, file, line, "node '%s' (%s): %s", a->name,
                   opsched_op_name(a->op), msg);
}

static opsched_status bad_arg(const infer_args *a, const char *what)
{
    return OS_FAIL(a->g->ctx, OPSCHED_ERR_INVALID_ARG, "node '%s' (%s): %s", a->name,
                   opsched_op_name(a->op), what);
}

static const char *fmt_shape(const opsched_shape *s, char *buf, size_t n)
{
    return opsched_shape_format(s, buf, n);
}

static int64_t tensor_bytes(const opsched_tensor *t)
{
    return opsched_shape_numel(&t->shape) * (int64_t)opsched_dtype_size(t->dtype);
}

static opsched_status need_inputs(const infer_args *a, int lo, int hi)
{
    if (a->n_in < lo || a->n_in > hi) {
        char m[96];
        snprintf(m, sizeof(m), "takes %d to %d inputs, got %d", lo, hi, a->n_in);
        return bad_arg(a, m);
    }
    for (int i = 0; i < lo; i++)
        if (!a->in[i]) return bad_arg(a, "a required input is missing");
    return OPSCHED_OK;
}

static opsched_status need_outputs(const infer_args *a, int n)
{
    if (a->n_out != n) {
        char m[64];
        snprintf(m, sizeof(m), "has %d outputs, expected %d", a->n_out, n);
        return bad_arg(a, m);
    }
    return OPSCHED_OK;
}

static opsched_status need_rank(const infer_args *a, int idx, int rank)
{
    if (a->in[idx]->shape.ndim != rank) {
        char b[128];
        return BAD(a, "input %d '%s' must have rank %d, has shape %s", idx, a->in[idx]->name,
                   rank, fmt_shape(&a->in[idx]->shape, b, sizeof(b)));
    }
    return OPSCHED_OK;
}

static int norm_axis(int64_t *axis, int rank)
{
    if (*axis < -rank || *axis >= rank) return 0;
    if (*axis < 0) *axis += rank;
    return 1;
}

int os_broadcast(const opsched_shape *x, const opsched_shape *y, opsched_shape *out)
{
    int n = OS_MAX(x->ndim, y->ndim);
    opsched_shape r = {.ndim = n};
    for (int i = 0; i < n; i++) {
        int xi = x->ndim - n + i, yi = y->ndim - n + i;
        int64_t dx = xi >= 0 ? x->d[xi] : 1, dy = yi >= 0 ? y->d[yi] : 1;
        if (dx == dy || dy == 1)
            r.d[i] = dx;
        else if (dx == 1)
            r.d[i] = dy;
        else
            return 0;
    }
    *out = r;
    return 1;
}

/* Output extent of a sliding window; ceil_mode follows PyTorch (the last
 * window must start inside the input or the left padding). */
static int64_t window_out(int64_t in, int64_t pad0, int64_t pad1, int64_t k, int64_t stride,
                          int64_t dil, int ceil_mode)
{
    int64_t eff = (k - 1) * dil + 1;
    int64_t span = in + pad0 + pad1 - eff;
    /* In ceil mode a window may overhang the end by less than a stride. */
    if (span < 0 && !(ceil_mode && span > -stride)) return -1;
    int64_t o = span < 0 ? 1 : ceil_mode ? (span + stride - 1) / stride + 1 : span / stride + 1;
    if (ceil_mode && (o - 1) * stride >= in + pad0) o--;
    return o;
}

/* The rank of a window op's input: 4, or 5 for a 3-D op (whose depth
 * attributes are checked and defaulted here: a zero stride or dilation is 1,
 * a zero kernel the weight's when there is one). */
static opsched_status window_rank(infer_args *a, opsched_window_depth *dp, const opsched_shape *w,
                                  int *rank)
{
    const opsched_shape *x = &a->in[0]->shape;
    char b[128];
    *rank = x->ndim;
    if (x->ndim == 4 && dp->kernel == 0 && dp->stride == 0 && dp->dilation == 0 &&
        dp->pad_begin == 0 && dp->pad_end == 0 && dp->output_padding == 0)
        return OPSCHED_OK;
    if (x->ndim != 5)
        return BAD(a, "input 0 '%s' must have rank 4 (or 5 with a depth window), has shape %s",
                   a->in[0]->name, fmt_shape(x, b, sizeof(b)));
    if (w && w->ndim != 5)
        return BAD(a, "the weight of a 3-D window op must have rank 5, has shape %s",
                   fmt_shape(w, b, sizeof(b)));
    if (dp->stride == 0) dp->stride = 1;
    if (dp->dilation == 0) dp->dilation = 1;
    if (dp->kernel == 0 && w) dp->kernel = w->d[2];
    if (dp->kernel <= 0 || dp->stride < 0 || dp->dilation < 0 || dp->pad_begin < 0 ||
        dp->pad_end < 0 || dp->output_padding < 0)
        return BAD(a, "the depth window needs a positive kernel, stride and dilation and "
                      "no negative padding");
    return OPSCHED_OK;
}

static opsched_status infer_conv(infer_args *a)
{
    OS_TRY(need_inputs(a, 2, 3));
    OS_TRY(need_outputs(a, 1));
    opsched_conv_attr *c = &a->attr->conv;
    const opsched_shape *x = &a->in[0]->shape, *w = &a->in[1]->shape;
    int rank;
    OS_TRY(window_rank(a, &c->depth, w, &rank));
    OS_TRY(need_rank(a, 1, rank));
    int hw = rank - 2; /* where H is */
    char b1[128], b2[128];
    if (c->groups == 0) c->groups = 1;
    for (int i = 0; i < 2; i++) {
        if (c->stride[i] == 0) c->stride[i] = 1;
        if (c->dilation[i] == 0) c->dilation[i] = 1;
        if (c->kernel[i] == 0) c->kernel[i] = w->d[hw + i];
    }
    if (c->groups < 0 || c->stride[0] < 0 || c->stride[1] < 0 || c->dilation[0] < 0 ||
        c->dilation[1] < 0)
        return BAD(a, "groups, strides and dilations must be positive");
    for (int i = 0; i < 4; i++)
        if (c->pads[i] < 0) return BAD(a, "negative padding");
    if (c->kernel[0] != w->d[hw] || c->kernel[1] != w->d[hw + 1] ||
        (rank == 5 && c->depth.kernel != w->d[2]))
        return BAD(a, "kernel %s%lldx%lld does not match weight %s", rank == 5 ? "(depth) " : "",
                   (long long)c->kernel[0], (long long)c->kernel[1], fmt_shape(w, b1, sizeof(b1)));
    int64_t C = x->d[1], M = w->d[0], g = c->groups;
    if (C % g != 0)
        return BAD(a, "input channels %lld are not divisible by groups %lld", (long long)C,
                   (long long)g);
    if (M % g != 0)
        return BAD(a, "output channels %lld are not divisible by groups %lld", (long long)M,
                   (long long)g);
    if (w->d[1] != C / g)
        return BAD(a, "weight %s expects %lld input channels per group, input %s has %lld",
                   fmt_shape(w, b1, sizeof(b1)), (long long)w->d[1], fmt_shape(x, b2, sizeof(b2)),
                   (long long)(C / g));
    if (a->n_in == 3 && a->in[2]) {
        const opsched_shape *bs = &a->in[2]->shape;
        if (bs->ndim != 1 || bs->d[0] != M)
            return BAD(a, "bias %s does not match %lld output channels",
                       fmt_shape(bs, b1, sizeof(b1)), (long long)M);
    }
    int64_t oh = window_out(x->d[hw], c->pads[0], c->pads[2], c->kernel[0], c->stride[0],
                            c->dilation[0], 0);
    int64_t ow = window_out(x->d[hw + 1], c->pads[1], c->pads[3], c->kernel[1], c->stride[1],
                            c->dilation[1], 0);
    int64_t od = rank == 5 ? window_out(x->d[2], c->depth.pad_begin, c->depth.pad_end,
                                        c->depth.kernel, c->depth.stride, c->depth.dilation, 0)
                           : 1;
    if (oh < 0 || ow < 0 || od < 0)
        return BAD(a, "kernel %lldx%lld (dilation %lld) is larger than the padded input %lldx%lld",
                   (long long)c->kernel[0], (long long)c->kernel[1], (long long)c->dilation[0],
                   (long long)(x->d[hw] + c->pads[0] + c->pads[2]),
                   (long long)(x->d[hw + 1] + c->pads[1] + c->pads[3]));
    opsched_shape o = {.ndim = 4, .d = {x->d[0], M, oh, ow}};
    if (rank == 5) o = (opsched_shape){.ndim = 5, .d = {x->d[0], M, od, oh, ow}};
    a->out[0] = o;
    int64_t macs = 1;
    int64_t f[] = {x->d[0], M, od, oh, ow, C / g, c->kernel[0], c->kernel[1],
                   rank == 5 ? c->depth.kernel : 1};
    for (size_t i = 0; i < OS_ARRAY_LEN(f); i++)
        if (!os_mul_ok(macs, f[i], &macs)) return BAD(a, "FLOP count overflows");
    a->cost->flops = 2 * macs;
    return OPSCHED_OK;
}

static opsched_status infer_gemm(infer_args *a)
{
    OS_TRY(need_inputs(a, 2, 3));
    OS_TRY(need_outputs(a, 1));
    OS_TRY(need_rank(a, 0, 2));
    OS_TRY(need_rank(a, 1, 2));
    opsched_gemm_attr *m = &a->attr->gemm;
    const opsched_shape *A = &a->in[0]->shape, *B = &a->in[1]->shape;
    int64_t M = m->trans_a ? A->d[1] : A->d[0], K = m->trans_a ? A->d[0] : A->d[1];
    int64_t K2 = m->trans_b ? B->d[1] : B->d[0], N = m->trans_b ? B->d[0] : B->d[1];
    char b1[128], b2[128];
    if (K != K2)
        return BAD(a, "inner dimensions differ: A %s%s, B %s%s", fmt_shape(A, b1, sizeof(b1)),
                   m->trans_a ? " (transposed)" : "", fmt_shape(B, b2, sizeof(b2)),
                   m->trans_b ? " (transposed)" : "");
    opsched_shape o = {.ndim = 2, .d = {M, N}}, bc;
    if (a->n_in == 3 && a->in[2]) {
        if (!os_broadcast(&o, &a->in[2]->shape, &bc) || !opsched_shape_equal(&bc, &o))
            return BAD(a, "C %s does not broadcast to %s",
                       fmt_shape(&a->in[2]->shape, b1, sizeof(b1)), fmt_shape(&o, b2, sizeof(b2)));
    }
    a->out[0] = o;
    int64_t macs;
    if (!os_mul_ok(M, N, &macs) || !os_mul_ok(macs, K, &macs)) return BAD(a, "FLOPs overflow");
    a->cost->flops = 2 * macs;
    return OPSCHED_OK;
}

static opsched_status infer_matmul(infer_args *a)
{
    OS_TRY(need_inputs(a, 2, 2));
    OS_TRY(need_outputs(a, 1));
    opsched_shape A = a->in[0]->shape, B = a->in[1]->shape;
    char b1[128], b2[128];
    if (A.ndim < 1 || B.ndim < 1) return BAD(a, "inputs must have rank 1 or more");
    int a1 = A.ndim == 1, b1d = B.ndim == 1;
    if (a1) {
        A.ndim = 2;
        A.d[1] = A.d[0];
        A.d[0] = 1;
    }
    if (b1d) {
        B.ndim = 2;
        B.d[1] = 1;
    }
    int64_t M = A.d[A.ndim - 2], K = A.d[A.ndim - 1], K2 = B.d[B.ndim - 2], N = B.d[B.ndim - 1];
    if (K != K2)
        return BAD(a, "inner dimensions differ: %s times %s",
                   fmt_shape(&a->in[0]->shape, b1, sizeof(b1)),
                   fmt_shape(&a->in[1]->shape, b2, sizeof(b2)));
    opsched_shape ba = {.ndim = A.ndim - 2}, bb = {.ndim = B.ndim - 2}, bo;
    memcpy(ba.d, A.d, sizeof(int64_t) * (size_t)ba.ndim);
    memcpy(bb.d, B.d, sizeof(int64_t) * (size_t)bb.ndim);
    if (!os_broadcast(&ba, &bb, &bo))
        return BAD(a, "batch dimensions of %s and %s do not broadcast",
                   fmt_shape(&a->in[0]->shape, b1, sizeof(b1)),
                   fmt_shape(&a->in[1]->shape, b2, sizeof(b2)));
    opsched_shape o = bo;
    if (!a1) o.d[o.ndim++] = M;
    if (!b1d) o.d[o.ndim++] = N;
    if (o.ndim > OPSCHED_MAX_DIMS) return BAD(a, "rank too large");
    a->out[0] = o;
    int64_t macs = opsched_shape_numel(&bo);
    if (!os_mul_ok(macs, M, &macs) || !os_mul_ok(macs, N, &macs) || !os_mul_ok(macs, K, &macs))
        return BAD(a, "FLOPs overflow");
    a->cost->flops = 2 * macs;
    return OPSCHED_OK;
}

static opsched_status infer_pool(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    if (a->op != OPSCHED_OP_MAXPOOL || a->n_out != 2) OS_TRY(need_outputs(a, 1));
    opsched_pool_attr *p = &a->attr->pool;
    const opsched_shape *x = &a->in[0]->shape;
    int rank;
    OS_TRY(window_rank(a, &p->depth, NULL, &rank));
    if (p->depth.output_padding != 0) return BAD(a, "pooling has no output padding");
    int hw = rank - 2;
    for (int i = 0; i < 2; i++) {
        if (p->stride[i] == 0) p->stride[i] = 1;
        if (p->dilation[i] == 0) p->dilation[i] = 1;
        if (p->kernel[i] <= 0) return BAD(a, "pooling needs a kernel size");
        if (p->stride[i] < 0 || p->dilation[i] < 0) return BAD(a, "negative stride or dilation");
    }
    for (int i = 0; i < 4; i++)
        if (p->pads[i] < 0) return BAD(a, "negative padding");
    int64_t oh = window_out(x->d[hw], p->pads[0], p->pads[2], p->kernel[0], p->stride[0],
                            p->dilation[0], p->ceil_mode);
    int64_t ow = window_out(x->d[hw + 1], p->pads[1], p->pads[3], p->kernel[1], p->stride[1],
                            p->dilation[1], p->ceil_mode);
    int64_t od = rank == 5 ? window_out(x->d[2], p->depth.pad_begin, p->depth.pad_end,
                                        p->depth.kernel, p->depth.stride, p->depth.dilation,
                                        p->ceil_mode)
                           : 1;
    if (oh < 0 || ow < 0 || od < 0)
        return BAD(a, "kernel %lldx%lld is larger than the padded input %lldx%lld",
                   (long long)p->kernel[0], (long long)p->kernel[1],
                   (long long)(x->d[hw] + p->pads[0] + p->pads[2]),
                   (long long)(x->d[hw + 1] + p->pads[1] + p->pads[3]));
    opsched_shape o = {.ndim = 4, .d = {x->d[0], x->d[1], oh, ow}};
    if (rank == 5) o = (opsched_shape){.ndim = 5, .d = {x->d[0], x->d[1], od, oh, ow}};
    a->out[0] = o;
    if (a->n_out == 2) {
        a->out[1] = o;
        a->dt[1] = OPSCHED_INT64;
    }
    int64_t f = 0;
    if (!os_mul_ok(opsched_shape_numel(&o), p->kernel[0], &f) || !os_mul_ok(f, p->kernel[1], &f) ||
        !os_mul_ok(f, rank == 5 ? p->depth.kernel : 1, &f))
        return BAD(a, "FLOP count overflows");
    a->cost->flops = f;
    return OPSCHED_OK;
}

static opsched_status infer_global_pool(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    if (x->ndim < 3) return BAD(a, "input must have rank 3 or more (N, C, spatial...)");
    opsched_shape o = *x;
    for (int i = 2; i < o.ndim; i++) o.d[i] = 1;
    a->out[0] = o;
    a->cost->flops = opsched_shape_numel(x);
    return OPSCHED_OK;
}

static opsched_status infer_unary(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 3)); /* Clip may carry min/max as inputs */
    OS_TRY(need_outputs(a, 1));
    a->out[0] = a->in[0]->shape;
    a->cost->flops = opsched_op_is_view(a->op) ? 0 : opsched_shape_numel(&a->in[0]->shape);
    return OPSCHED_OK;
}

static opsched_status infer_binary(infer_args *a)
{
    OS_TRY(need_inputs(a, 2, 2));
    OS_TRY(need_outputs(a, 1));
    char b1[128], b2[128];
    if (!os_broadcast(&a->in[0]->shape, &a->in[1]->shape, &a->out[0]))
        return BAD(a, "shapes %s and %s do not broadcast",
                   fmt_shape(&a->in[0]->shape, b1, sizeof(b1)),
                   fmt_shape(&a->in[1]->shape, b2, sizeof(b2)));
    a->cost->flops = opsched_shape_numel(&a->out[0]);
    return OPSCHED_OK;
}

static opsched_status infer_concat(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 128));
    OS_TRY(need_outputs(a, 1));
    opsched_shape o = a->in[0]->shape;
    int64_t *axis = &a->attr->axis.axis;
    if (!norm_axis(axis, o.ndim)) return BAD(a, "axis %lld out of range", (long long)*axis);
    for (int i = 1; i < a->n_in; i++) {
        if (!a->in[i]) return bad_arg(a, "a required input is missing");
        const opsched_shape *s = &a->in[i]->shape;
        char b1[128], b2[128];
        int ok = s->ndim == o.ndim;
        for (int d = 0; ok && d < o.ndim; d++)
            if (d != *axis && s->d[d] != o.d[d]) ok = 0;
        if (!ok)
            return BAD(a, "input %d %s does not match %s outside axis %lld", i,
                       fmt_shape(s, b1, sizeof(b1)),
                       fmt_shape(&a->in[0]->shape, b2, sizeof(b2)), (long long)*axis);
        o.d[*axis] += s->d[*axis];
    }
    a->out[0] = o;
    return OPSCHED_OK;
}

static opsched_status infer_split(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    opsched_split_attr *s = &a->attr->split;
    const opsched_shape *x = &a->in[0]->shape;
    if (!norm_axis(&s->axis, x->ndim)) return BAD(a, "axis %lld out of range", (long long)s->axis);
    if (s->n != a->n_out || s->n < 1) return bad_arg(a, "split sizes do not match the outputs");
    int64_t sum = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->sizes[i] < 0 || s->sizes[i] > x->d[s->axis])
            return BAD(a, "split size %lld does not fit axis %lld of %lld", (long long)s->sizes[i],
                       (long long)s->axis, (long long)x->d[s->axis]);
        sum += s->sizes[i]; /* at most 32 terms of at most 2^40: no overflow */
        a->out[i] = *x;
        a->out[i].d[s->axis] = s->sizes[i];
    }
    if (sum != x->d[s->axis])
        return BAD(a, "split sizes add up to %lld, axis %lld has %lld", (long long)sum,
                   (long long)s->axis, (long long)x->d[s->axis]);
    return OPSCHED_OK;
}

static opsched_status infer_slice(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    opsched_slice_attr *s = &a->attr->slice;
    const opsched_shape *x = &a->in[0]->shape;
    opsched_shape o = *x;
    for (int d = 0; d < x->ndim; d++) {
        int64_t dim = x->d[d], st = s->starts[d], en = s->ends[d], step = s->steps[d];
        if (step == 0) return BAD(a, "slice step 0 on axis %d", d);
        if (step < -INT64_MAX) step = -INT64_MAX; /* so that -step exists */
        /* Clamp before any arithmetic: exporters write INT64_MAX for "to the end". */
        if (st < -dim) st = -dim - 1;
        if (en < -dim) en = -dim - 1;
        if (st > dim) st = dim;
        if (en > dim) en = dim;
        if (st < 0) st += dim;
        if (en < 0) en += dim;
        if (step > 0) {
            st = st < 0 ? 0 : st;
            en = en < 0 ? 0 : en;
            o.d[d] = en > st ? (en - st - 1) / step + 1 : 0;
        } else {
            st = st < 0 ? -1 : (st > dim - 1 ? dim - 1 : st);
            en = en < -1 ? -1 : (en > dim - 1 ? dim - 1 : en);
            o.d[d] = st > en ? (st - en - 1) / (-step) + 1 : 0;
        }
        s->starts[d] = st;
        s->ends[d] = en;
    }
    a->out[0] = o;
    return OPSCHED_OK;
}

static opsched_status infer_gather(infer_args *a)
{
    OS_TRY(need_inputs(a, 2, 2));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape, *idx = &a->in[1]->shape;
    int64_t *axis = &a->attr->axis.axis;
    if (!norm_axis(axis, x->ndim)) return BAD(a, "axis %lld out of range", (long long)*axis);
    if (x->ndim - 1 + idx->ndim > OPSCHED_MAX_DIMS) return BAD(a, "result rank too large");
    opsched_shape o = {0};
    for (int d = 0; d < *axis; d++) o.d[o.ndim++] = x->d[d];
    for (int d = 0; d < idx->ndim; d++) o.d[o.ndim++] = idx->d[d];
    for (int d = (int)*axis + 1; d < x->ndim; d++) o.d[o.ndim++] = x->d[d];
    a->out[0] = o;
    return OPSCHED_OK;
}

static opsched_status per_channel(infer_args *a, int first, int last, int64_t C)
{
    for (int i = first; i <= last && i < a->n_in; i++) {
        if (!a->in[i]) continue;
        const opsched_shape *s = &a->in[i]->shape;
        if (opsched_shape_numel(s) != C) {
            char b[128];
            return BAD(a, "input %d %s must hold %lld values", i, fmt_shape(s, b, sizeof(b)),
                       (long long)C);
        }
    }
    return OPSCHED_OK;
}

static opsched_status infer_batchnorm(infer_args *a)
{
    OS_TRY(need_inputs(a, 5, 5));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    if (x->ndim < 2) return BAD(a, "input must have a channel dimension");
    OS_TRY(per_channel(a, 1, 4, x->d[1]));
    a->out[0] = *x;
    a->cost->flops = 2 * opsched_shape_numel(x);
    return OPSCHED_OK;
}

/* The training operators' operands must all be present. */
static opsched_status need_all(infer_args *a)
{
    for (int i = 0; i < a->n_in; i++)
        if (!a->in[i]) return BAD(a, "input %d is missing", i);
    return OPSCHED_OK;
}

/* x, scale, bias -> y, mean [C], inverse deviation [C] (scale's type). */
static opsched_status infer_batchnorm_train(infer_args *a)
{
    OS_TRY(need_inputs(a, 3, 3));
    OS_TRY(need_outputs(a, 3));
    OS_TRY(need_all(a));
    const opsched_shape *x = &a->in[0]->shape;
    if (x->ndim < 2) return BAD(a, "input must have a channel dimension");
    if (opsched_shape_numel(x) < 1) return BAD(a, "no elements to take the batch's statistics over");
    OS_TRY(per_channel(a, 1, 2, x->d[1]));
    if (!(a->attr->bn.epsilon > 0)) return BAD(a, "epsilon must be positive");
    a->out[0] = *x;
    a->out[1] = (opsched_shape){1, {x->d[1]}};
    a->out[2] = a->out[1];
    a->dt[1] = a->dt[2] = a->in[1]->dtype;
    a->cost->flops = 5 * opsched_shape_numel(x); /* two passes for the statistics, one to apply */
    return OPSCHED_OK;
}

/* dy, x, scale, mean, inverse deviation -> dx, dscale [C], dbias [C]. */
static opsched_status infer_batchnorm_grad(infer_args *a)
{
    OS_TRY(need_inputs(a, 5, 5));
    OS_TRY(need_outputs(a, 3));
    OS_TRY(need_all(a));
    const opsched_shape *dy = &a->in[0]->shape, *x = &a->in[1]->shape;
    if (!opsched_shape_equal(dy, x)) {
        char b1[128], b2[128];
        return BAD(a, "the gradient %s and the input %s differ in shape",
                   fmt_shape(dy, b1, sizeof(b1)), fmt_shape(x, b2, sizeof(b2)));
    }
    if (x->ndim < 2) return BAD(a, "input must have a channel dimension");
    OS_TRY(per_channel(a, 2, 4, x->d[1]));
    a->out[0] = *x;
    a->out[1] = (opsched_shape){1, {x->d[1]}};
    a->out[2] = a->out[1];
    a->dt[0] = a->in[0]->dtype;
    a->dt[1] = a->dt[2] = a->in[2]->dtype;
    a->cost->flops = 6 * opsched_shape_numel(x); /* the two sums, then dx */
    return OPSCHED_OK;
}

/* x [N, C, H, W], dy [N, M, OH, OW] -> dW [M, C/groups, kh, kw] under the
 * forward convolution's attributes. */
static opsched_status infer_conv_grad_filter(infer_args *a)
{
    OS_TRY(need_inputs(a, 2, 2));
    OS_TRY(need_outputs(a, 1));
    OS_TRY(need_all(a));
    OS_TRY(need_rank(a, 0, 4));
    OS_TRY(need_rank(a, 1, 4));
    opsched_conv_attr *c = &a->attr->conv;
    const opsched_shape *x = &a->in[0]->shape, *dy = &a->in[1]->shape;
    char b1[128], b2[128];
    if (c->groups == 0) c->groups = 1;
    for (int i = 0; i < 2; i++) {
        if (c->stride[i] == 0) c->stride[i] = 1;
        if (c->dilation[i] == 0) c->dilation[i] = 1;
    }
    if (c->depth.kernel > 1) return BAD(a, "only 2-D convolutions have a filter gradient");
    if (c->groups < 0 || c->stride[0] < 0 || c->stride[1] < 0 || c->dilation[0] < 0 ||
        c->dilation[1] < 0 || c->kernel[0] < 1 || c->kernel[1] < 1)
        return BAD(a, "groups, strides, dilations and the kernel must be positive");
    for (int i = 0; i < 4; i++)
        if (c->pads[i] < 0) return BAD(a, "negative padding");
    int64_t C = x->d[1], M = dy->d[1], g = c->groups;
    if (C % g != 0 || M % g != 0)
        return BAD(a, "channels %lld -> %lld are not divisible by groups %lld", (long long)C,
                   (long long)M, (long long)g);
    int64_t oh = window_out(x->d[2], c->pads[0], c->pads[2], c->kernel[0], c->stride[0],
                            c->dilation[0], 0);
    int64_t ow = window_out(x->d[3], c->pads[1], c->pads[3], c->kernel[1], c->stride[1],
                            c->dilation[1], 0);
    if (dy->d[0] != x->d[0] || dy->d[2] != oh || dy->d[3] != ow)
        return BAD(a, "the gradient %s is not the output of the convolution of %s (%lldx%lld)",
                   fmt_shape(dy, b1, sizeof(b1)), fmt_shape(x, b2, sizeof(b2)), (long long)oh,
                   (long long)ow);
    a->out[0] = (opsched_shape){4, {M, C / g, c->kernel[0], c->kernel[1]}};
    int64_t macs = 1;
    int64_t f[] = {x->d[0], M, oh, ow, C / g, c->kernel[0], c->kernel[1]};
    for (size_t i = 0; i < OS_ARRAY_LEN(f); i++)
        if (!os_mul_ok(macs, f[i], &macs)) return BAD(a, "FLOP count overflows");
    a->cost->flops = 2 * macs;
    return OPSCHED_OK;
}

static opsched_status infer_axis_same(infer_args *a, int64_t flops_per_elem)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    if (!norm_axis(&a->attr->axis.axis, x->ndim))
        return BAD(a, "axis %lld out of range", (long long)a->attr->axis.axis);
    a->out[0] = *x;
    a->cost->flops = flops_per_elem * opsched_shape_numel(x);
    return OPSCHED_OK;
}

static opsched_status infer_lrn(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    if (a->attr->lrn.size <= 0) return BAD(a, "LRN size must be positive");
    if (a->in[0]->shape.ndim < 3) return BAD(a, "input must be N, C, spatial...");
    a->out[0] = a->in[0]->shape;
    a->cost->flops = opsched_shape_numel(&a->out[0]) * (a->attr->lrn.size + 3);
    return OPSCHED_OK;
}

static opsched_status infer_layernorm(infer_args *a)
{
    OS_TRY(need_inputs(a, 2, 3));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    opsched_layernorm_attr *l = &a->attr->layernorm;
    if (!norm_axis(&l->axis, x->ndim)) return BAD(a, "axis %lld out of range", (long long)l->axis);
    int64_t inner = 1;
    for (int d = (int)l->axis; d < x->ndim; d++) inner *= x->d[d];
    OS_TRY(per_channel(a, 1, 2, inner));
    a->out[0] = *x;
    a->cost->flops = 5 * opsched_shape_numel(x);
    return OPSCHED_OK;
}

static opsched_status infer_reduce(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    opsched_reduce_attr *r = &a->attr->reduce;
    int reduce[OPSCHED_MAX_DIMS] = {0};
    if (r->n_axes < 0 || r->n_axes > x->ndim) return BAD(a, "too many axes");
    for (int i = 0; i < r->n_axes; i++) {
        if (!norm_axis(&r->axes[i], x->ndim))
            return BAD(a, "axis %lld out of range", (long long)r->axes[i]);
        reduce[r->axes[i]] = 1;
    }
    opsched_shape o = {0};
    for (int d = 0; d < x->ndim; d++) {
        int red = r->n_axes == 0 || reduce[d];
        if (!red)
            o.d[o.ndim++] = x->d[d];
        else if (r->keepdims)
            o.d[o.ndim++] = 1;
    }
    a->out[0] = o;
    a->cost->flops = opsched_shape_numel(x);
    return OPSCHED_OK;
}

static opsched_status infer_transpose(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    opsched_transpose_attr *t = &a->attr->transpose;
    if (t->n == 0) {
        t->n = x->ndim;
        for (int i = 0; i < x->ndim; i++) t->perm[i] = x->ndim - 1 - i;
    }
    if (t->n != x->ndim) return BAD(a, "perm has %d entries for rank %d", t->n, x->ndim);
    int seen[OPSCHED_MAX_DIMS] = {0};
    opsched_shape o = {.ndim = x->ndim};
    for (int i = 0; i < t->n; i++) {
        if (!norm_axis(&t->perm[i], x->ndim) || seen[t->perm[i]])
            return BAD(a, "perm is not a permutation of 0..%d", x->ndim - 1);
        seen[t->perm[i]] = 1;
        o.d[i] = x->d[t->perm[i]];
    }
    a->out[0] = o;
    return OPSCHED_OK;
}

static opsched_status infer_pad(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    opsched_shape o = *x;
    for (int d = 0; d < x->ndim; d++) {
        o.d[d] = x->d[d] + a->attr->pad.pads[d] + a->attr->pad.pads[x->ndim + d];
        if (o.d[d] < 0) return BAD(a, "padding removes more than axis %d holds", d);
    }
    a->out[0] = o;
    return OPSCHED_OK;
}

static opsched_status infer_expand(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    char b1[128], b2[128];
    if (!os_broadcast(&a->in[0]->shape, &a->attr->shape.shape, &a->out[0]))
        return BAD(a, "%s cannot be expanded to %s", fmt_shape(&a->in[0]->shape, b1, sizeof(b1)),
                   fmt_shape(&a->attr->shape.shape, b2, sizeof(b2)));
    return OPSCHED_OK;
}

static opsched_status infer_flatten(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    int64_t axis = a->attr->axis.axis;
    if (axis < 0) axis += x->ndim;
    if (axis < 0 || axis > x->ndim) return BAD(a, "axis %lld out of range", (long long)axis);
    a->attr->axis.axis = axis;
    opsched_shape o = {.ndim = 2, .d = {1, 1}};
    for (int d = 0; d < x->ndim; d++) o.d[d < axis ? 0 : 1] *= x->d[d];
    a->out[0] = o;
    return OPSCHED_OK;
}

static opsched_status infer_reshape(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *t = &a->attr->shape.shape;
    char b1[128], b2[128];
    if (t->ndim < 0 || t->ndim > OPSCHED_MAX_DIMS) return BAD(a, "bad target rank");
    for (int d = 0; d < t->ndim; d++)
        if (t->d[d] < 0) return BAD(a, "target shape must be resolved (no -1)");
    if (opsched_shape_numel(t) != opsched_shape_numel(&a->in[0]->shape))
        return BAD(a, "cannot reshape %s (%lld elements) to %s",
                   fmt_shape(&a->in[0]->shape, b1, sizeof(b1)),
                   (long long)opsched_shape_numel(&a->in[0]->shape), fmt_shape(t, b2, sizeof(b2)));
    a->out[0] = *t;
    return OPSCHED_OK;
}

/* ---- the generic families ----------------------------------------------- */

static int is_compare(opsched_binary_fn f)
{
    return f == OPSCHED_BINARY_EQUAL || f == OPSCHED_BINARY_LESS ||
           f == OPSCHED_BINARY_LESS_EQUAL || f == OPSCHED_BINARY_GREATER ||
           f == OPSCHED_BINARY_GREATER_EQUAL || f == OPSCHED_BINARY_AND ||
           f == OPSCHED_BINARY_OR || f == OPSCHED_BINARY_XOR;
}

static opsched_status infer_unary_fn(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    opsched_unary_fn f = a->attr->unary.fn;
    if ((int)f < 0 || f >= OPSCHED_UNARY_FN_COUNT) return bad_arg(a, "unknown unary function");
    a->out[0] = a->in[0]->shape;
    a->dt[0] = f == OPSCHED_UNARY_ISNAN || f == OPSCHED_UNARY_ISINF ? OPSCHED_BOOL
                                                                    : a->in[0]->dtype;
    a->cost->flops = opsched_shape_numel(&a->in[0]->shape);
    return OPSCHED_OK;
}

static opsched_status infer_binary_fn(infer_args *a)
{
    opsched_binary_fn f = a->attr->binary.fn;
    if ((int)f < 0 || f >= OPSCHED_BINARY_FN_COUNT) return bad_arg(a, "unknown binary function");
    OS_TRY(infer_binary(a));
    if (a->in[0]->dtype != a->in[1]->dtype && f != OPSCHED_BINARY_PRELU)
        return BAD(a, "inputs of types %s and %s differ", opsched_dtype_name(a->in[0]->dtype),
                   opsched_dtype_name(a->in[1]->dtype));
    a->dt[0] = is_compare(f) ? OPSCHED_BOOL : a->in[0]->dtype;
    return OPSCHED_OK;
}

static opsched_status infer_where(infer_args *a)
{
    OS_TRY(need_inputs(a, 3, 3));
    OS_TRY(need_outputs(a, 1));
    opsched_shape t;
    char b1[128], b2[128], b3[128];
    if (!os_broadcast(&a->in[0]->shape, &a->in[1]->shape, &t) ||
        !os_broadcast(&t, &a->in[2]->shape, &a->out[0]))
        return BAD(a, "condition %s, x %s and y %s do not broadcast",
                   fmt_shape(&a->in[0]->shape, b1, sizeof(b1)),
                   fmt_shape(&a->in[1]->shape, b2, sizeof(b2)),
                   fmt_shape(&a->in[2]->shape, b3, sizeof(b3)));
    if (a->in[0]->dtype != OPSCHED_BOOL)
        return BAD(a, "the condition is %s, not bool", opsched_dtype_name(a->in[0]->dtype));
    if (a->in[1]->dtype != a->in[2]->dtype)
        return BAD(a, "x is %s and y is %s", opsched_dtype_name(a->in[1]->dtype),
                   opsched_dtype_name(a->in[2]->dtype));
    a->dt[0] = a->in[1]->dtype;
    a->cost->flops = opsched_shape_numel(&a->out[0]);
    return OPSCHED_OK;
}

static opsched_status infer_cast(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    if ((int)a->attr->cast.to < 0 || a->attr->cast.to >= OPSCHED_DTYPE_COUNT)
        return bad_arg(a, "unknown target type");
    a->out[0] = a->in[0]->shape;
    a->dt[0] = a->attr->cast.to;
    return OPSCHED_OK;
}

static opsched_status infer_reduce_fn(infer_args *a)
{
    opsched_reduce_attr *r = &a->attr->reduce;
    if ((int)r->fn < 0 || r->fn >= OPSCHED_REDUCE_FN_COUNT) return bad_arg(a, "unknown reduction");
    if (r->n_axes == 0 && r->noop_with_empty_axes) {
        OS_TRY(need_inputs(a, 1, 1));
        OS_TRY(need_outputs(a, 1));
        a->out[0] = a->in[0]->shape;
        return OPSCHED_OK;
    }
    return infer_reduce(a);
}

static opsched_status infer_arg(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    opsched_arg_attr *r = &a->attr->arg;
    if (!norm_axis(&r->axis, x->ndim)) return BAD(a, "axis %lld out of range", (long long)r->axis);
    if (x->d[r->axis] == 0) return BAD(a, "axis %lld is empty", (long long)r->axis);
    opsched_shape o = {0};
    for (int d = 0; d < x->ndim; d++) {
        if (d != r->axis)
            o.d[o.ndim++] = x->d[d];
        else if (r->keepdims)
            o.d[o.ndim++] = 1;
    }
    a->out[0] = o;
    a->dt[0] = OPSCHED_INT64;
    a->cost->flops = opsched_shape_numel(x);
    return OPSCHED_OK;
}

static opsched_status infer_cumsum(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    if (!norm_axis(&a->attr->cumsum.axis, x->ndim))
        return BAD(a, "axis %lld out of range", (long long)a->attr->cumsum.axis);
    a->out[0] = *x;
    a->cost->flops = opsched_shape_numel(x);
    return OPSCHED_OK;
}

static opsched_status infer_topk(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 2));
    const opsched_shape *x = &a->in[0]->shape;
    opsched_topk_attr *t = &a->attr->topk;
    if (!norm_axis(&t->axis, x->ndim)) return BAD(a, "axis %lld out of range", (long long)t->axis);
    if (t->k < 0 || t->k > x->d[t->axis])
        return BAD(a, "k = %lld, axis %lld has %lld elements", (long long)t->k,
                   (long long)t->axis, (long long)x->d[t->axis]);
    a->out[0] = *x;
    a->out[0].d[t->axis] = t->k;
    a->out[1] = a->out[0];
    a->dt[1] = OPSCHED_INT64;
    a->cost->flops = opsched_shape_numel(x);
    return OPSCHED_OK;
}

static opsched_status need_index_type(infer_args *a, int i)
{
    opsched_dtype t = a->in[i]->dtype;
    if (t != OPSCHED_INT64 && t != OPSCHED_INT32)
        return BAD(a, "indices '%s' are %s, not int32 or int64", a->in[i]->name,
                   opsched_dtype_name(t));
    return OPSCHED_OK;
}

static opsched_status infer_gather_elements(infer_args *a)
{
    OS_TRY(need_inputs(a, 2, 2));
    OS_TRY(need_outputs(a, 1));
    OS_TRY(need_index_type(a, 1));
    const opsched_shape *x = &a->in[0]->shape, *i = &a->in[1]->shape;
    char b1[128], b2[128];
    if (!norm_axis(&a->attr->axis.axis, x->ndim))
        return BAD(a, "axis %lld out of range", (long long)a->attr->axis.axis);
    if (i->ndim != x->ndim)
        return BAD(a, "indices %s and data %s differ in rank", fmt_shape(i, b1, sizeof(b1)),
                   fmt_shape(x, b2, sizeof(b2)));
    a->out[0] = *i;
    return OPSCHED_OK;
}

static opsched_status infer_gather_nd(infer_args *a)
{
    OS_TRY(need_inputs(a, 2, 2));
    OS_TRY(need_outputs(a, 1));
    OS_TRY(need_index_type(a, 1));
    const opsched_shape *x = &a->in[0]->shape, *i = &a->in[1]->shape;
    int64_t b = a->attr->gather_nd.batch_dims;
    if (i->ndim < 1) return BAD(a, "indices must have rank 1 or more");
    int64_t last = i->d[i->ndim - 1];
    if (b < 0 || b >= i->ndim || b >= x->ndim) return BAD(a, "batch_dims %lld out of range", (long long)b);
    if (last < 1 || b + last > x->ndim)
        return BAD(a, "index tuples of %lld do not fit data of rank %d after %lld batch axes",
                   (long long)last, x->ndim, (long long)b);
    for (int d = 0; d < b; d++)
        if (x->d[d] != i->d[d]) return BAD(a, "batch axis %d differs between data and indices", d);
    opsched_shape o = {0};
    for (int d = 0; d < i->ndim - 1; d++) o.d[o.ndim++] = i->d[d];
    for (int d = (int)(b + last); d < x->ndim; d++) {
        if (o.ndim == OPSCHED_MAX_DIMS) return BAD(a, "result rank too large");
        o.d[o.ndim++] = x->d[d];
    }
    a->out[0] = o;
    return OPSCHED_OK;
}

static opsched_status infer_scatter(infer_args *a)
{
    OS_TRY(need_inputs(a, 3, 3));
    OS_TRY(need_outputs(a, 1));
    OS_TRY(need_index_type(a, 1));
    const opsched_shape *x = &a->in[0]->shape, *i = &a->in[1]->shape, *u = &a->in[2]->shape;
    char b1[128], b2[128];
    if (a->op == OPSCHED_OP_SCATTER_ELEMENTS) {
        if (!norm_axis(&a->attr->scatter.axis, x->ndim))
            return BAD(a, "axis %lld out of range", (long long)a->attr->scatter.axis);
        if (i->ndim != x->ndim || !opsched_shape_equal(i, u))
            return BAD(a, "indices %s and updates %s must have one shape of the data's rank",
                       fmt_shape(i, b1, sizeof(b1)), fmt_shape(u, b2, sizeof(b2)));
    } else {
        if (i->ndim < 1 || i->d[i->ndim - 1] > x->ndim || i->d[i->ndim - 1] < 1)
            return BAD(a, "index tuples %s do not fit data %s", fmt_shape(i, b1, sizeof(b1)),
                       fmt_shape(x, b2, sizeof(b2)));
        int64_t k = i->d[i->ndim - 1];
        int want = i->ndim - 1 + x->ndim - (int)k;
        int ok = u->ndim == want;
        for (int d = 0; ok && d < i->ndim - 1; d++) ok = u->d[d] == i->d[d];
        for (int d = 0; ok && d < x->ndim - k; d++) ok = u->d[i->ndim - 1 + d] == x->d[k + d];
        if (!ok) return BAD(a, "updates %s do not match indices and data", fmt_shape(u, b1, sizeof(b1)));
    }
    if (a->in[2]->dtype != a->in[0]->dtype)
        return BAD(a, "updates are %s, data %s", opsched_dtype_name(a->in[2]->dtype),
                   opsched_dtype_name(a->in[0]->dtype));
    a->out[0] = *x;
    a->cost->flops = opsched_shape_numel(u);
    return OPSCHED_OK;
}

static opsched_status infer_tile(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    opsched_shape o = *x;
    for (int d = 0; d < x->ndim; d++) {
        int64_t r = a->attr->tile.repeats[d];
        if (r < 0) return BAD(a, "repeat %lld on axis %d is negative", (long long)r, d);
        if (!os_mul_ok(x->d[d], r, &o.d[d])) return BAD(a, "the result is too large");
    }
    a->out[0] = o;
    return OPSCHED_OK;
}

static opsched_status infer_trilu(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    if (a->in[0]->shape.ndim < 2) return BAD(a, "input must have rank 2 or more");
    a->out[0] = a->in[0]->shape;
    return OPSCHED_OK;
}

static opsched_status infer_onehot(infer_args *a)
{
    OS_TRY(need_inputs(a, 2, 2));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *i = &a->in[0]->shape;
    opsched_onehot_attr *h = &a->attr->onehot;
    if (i->ndim + 1 > OPSCHED_MAX_DIMS) return BAD(a, "result rank too large");
    if (h->axis < 0) h->axis += i->ndim + 1;
    if (h->axis < 0 || h->axis > i->ndim) return BAD(a, "axis out of range");
    if (h->depth < 1) return BAD(a, "depth %lld must be positive", (long long)h->depth);
    if (opsched_shape_numel(&a->in[1]->shape) != 2) return BAD(a, "values must hold [off, on]");
    opsched_shape o = {0};
    for (int d = 0; d <= i->ndim; d++) {
        if (d == h->axis) o.d[o.ndim++] = h->depth;
        if (d < i->ndim) o.d[o.ndim++] = i->d[d];
    }
    a->out[0] = o;
    a->dt[0] = a->in[1]->dtype;
    return OPSCHED_OK;
}

/* Resize: the output extents and the scales are resolved by whoever builds
 * the node (the importer, from scales or sizes as ONNX defines them). */
static opsched_status infer_resize(infer_args *a)
{
    OS_TRY(need_inputs(a, 1, 1));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    opsched_shape o = *x;
    for (int d = 0; d < x->ndim; d++) {
        double s = a->attr->resize.scales[d];
        if (!(s > 0) || !isfinite(s)) return BAD(a, "scale %g on axis %d must be positive", s, d);
        if (!isfinite(a->attr->resize.roi[d]) || !isfinite(a->attr->resize.roi[x->ndim + d]))
            return BAD(a, "the roi of axis %d must be finite", d);
        o.d[d] = a->attr->resize.sizes[d];
        if (o.d[d] < 1) return BAD(a, "axis %d of the output would be empty", d);
    }
    a->out[0] = o;
    /* Each output weighs a window of taps per axis: 1 (nearest), 2
     * (linear) or 4 (cubic), widened by 1/scale when antialiasing a
     * reduction; the windows of the axes multiply. */
    const opsched_resize_attr *r = &a->attr->resize;
    double per = r->mode == OPSCHED_RESIZE_NEAREST ? 1 : r->mode == OPSCHED_RESIZE_LINEAR ? 2 : 4;
    double taps = 1;
    for (int d = 0; d < x->ndim && r->mode != OPSCHED_RESIZE_NEAREST; d++) {
        double s = r->scales[d];
        if (x->d[d] == o.d[d] && s == 1.0) continue;
        taps *= r->antialias && s < 1 ? ceil(per / s) : per;
    }
    double flops = 2.0 * (double)opsched_shape_numel(&o) * taps;
    a->cost->flops = flops < 9e18 ? (int64_t)flops : INT64_MAX;
    return OPSCHED_OK;
}

static opsched_status infer_groupnorm(infer_args *a)
{
    OS_TRY(need_inputs(a, 3, 3));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    if (x->ndim < 2) return BAD(a, "input must have a channel dimension");
    int64_t C = x->d[1], G = a->attr->groupnorm.groups;
    if (G < 1 || C % G != 0)
        return BAD(a, "%lld channels are not divisible into %lld groups", (long long)C, (long long)G);
    OS_TRY(per_channel(a, 1, 2, C));
    a->out[0] = *x;
    a->cost->flops = 5 * opsched_shape_numel(x);
    return OPSCHED_OK;
}

static opsched_status infer_conv_transpose(infer_args *a)
{
    OS_TRY(need_inputs(a, 2, 3));
    OS_TRY(need_outputs(a, 1));
    opsched_conv_transpose_attr *c = &a->attr->conv_transpose;
    const opsched_shape *x = &a->in[0]->shape, *w = &a->in[1]->shape;
    int rank;
    OS_TRY(window_rank(a, &c->depth, w, &rank));
    OS_TRY(need_rank(a, 1, rank));
    int hw = rank - 2;
    char b1[128], b2[128];
    if (c->groups == 0) c->groups = 1;
    /* Per spatial axis in the order D, H, W: kernel, stride, dilation,
     * pads begin and end, output padding. */
    int64_t *ax[3][6] = {
        {&c->depth.kernel, &c->depth.stride, &c->depth.dilation, &c->depth.pad_begin,
         &c->depth.pad_end, &c->depth.output_padding},
        {&c->kernel[0], &c->stride[0], &c->dilation[0], &c->pads[0], &c->pads[2],
         &c->output_padding[0]},
        {&c->kernel[1], &c->stride[1], &c->dilation[1], &c->pads[1], &c->pads[3],
         &c->output_padding[1]},
    };
    int first = rank == 5 ? 0 : 1;
    for (int i = first; i < 3; i++) {
        int64_t **v = ax[i];
        if (*v[1] == 0) *v[1] = 1;
        if (*v[2] == 0) *v[2] = 1;
        if (*v[0] == 0) *v[0] = w->d[hw - 1 + i];
        if (*v[1] < 0 || *v[2] < 0 || *v[5] < 0)
            return BAD(a, "negative stride, dilation or output padding");
        if (*v[5] >= *v[1] && *v[5] >= *v[2])
            return BAD(a, "output padding %lld must be below the stride or the dilation",
                       (long long)*v[5]);
        if (*v[0] != w->d[hw - 1 + i])
            return BAD(a, "kernel %lld on spatial axis %d does not match weight %s",
                       (long long)*v[0], i - first, fmt_shape(w, b1, sizeof(b1)));
    }
    int64_t C = x->d[1], g = c->groups;
    if (g < 1 || C % g != 0 || w->d[0] != C)
        return BAD(a, "weight %s does not fit input %s in %lld groups", fmt_shape(w, b1, sizeof(b1)),
                   fmt_shape(x, b2, sizeof(b2)), (long long)g);
    int64_t M = w->d[1] * g;
    if (a->n_in == 3 && a->in[2] && opsched_shape_numel(&a->in[2]->shape) != M)
        return BAD(a, "bias does not match %lld output channels", (long long)M);
    opsched_shape o = {.ndim = rank, .d = {x->d[0], M}};
    int64_t macs = 1;
    int64_t f[] = {x->d[0], C, M / g};
    for (size_t i = 0; i < OS_ARRAY_LEN(f); i++)
        if (!os_mul_ok(macs, f[i], &macs)) return BAD(a, "FLOP count overflows");
    for (int i = first; i < 3; i++) {
        int64_t **p = ax[i], in = x->d[hw - 1 + i];
        int64_t v = (in - 1) * *p[1] - *p[3] - *p[4] + *p[2] * (*p[0] - 1) + *p[5] + 1;
        if (v < 1) return BAD(a, "the output would be empty on spatial axis %d", i - first);
        o.d[hw - 1 + i] = v;
        if (!os_mul_ok(macs, in, &macs) || !os_mul_ok(macs, *p[0], &macs))
            return BAD(a, "FLOP count overflows");
    }
    a->out[0] = o;
    a->cost->flops = 2 * macs;
    return OPSCHED_OK;
}

static opsched_status infer_quant(infer_args *a)
{
    OS_TRY(need_inputs(a, 2, 3));
    OS_TRY(need_outputs(a, 1));
    const opsched_shape *x = &a->in[0]->shape;
    opsched_quant_attr *q = &a->attr->quant;
    int64_t ns = opsched_shape_numel(&a->in[1]->shape);
    if (ns != 1) {
        if (!norm_axis(&q->axis, x->ndim)) return BAD(a, "axis %lld out of range", (long long)q->axis);
        int64_t want = q->block_size > 0 ? (x->d[q->axis] + q->block_size - 1) / q->block_size
                                         : x->d[q->axis];
        if (q->block_size > 0 ? opsched_shape_numel(&a->in[1]->shape) * x->d[q->axis] !=
                                    opsched_shape_numel(x) * want
                              : ns != want)
            return BAD(a, "scale of %lld values does not fit axis %lld", (long long)ns,
                       (long long)q->axis);
    }
    if (a->n_in == 3 && a->in[2] &&
        opsched_shape_numel(&a->in[2]->shape) != ns)
        return BAD(a, "zero point and scale differ in size");
    a->out[0] = *x;
    if (a->op == OPSCHED_OP_QUANTIZE)
        a->dt[0] = a->n_in == 3 && a->in[2] ? a->in[2]->dtype : OPSCHED_UINT8;
    else
        a->dt[0] = a->in[1]->dtype;
    a->cost->flops = 2 * opsched_shape_numel(x);
    return OPSCHED_OK;
}

/* ---- attention ---------------------------------------------------------- */

/* The shape operand x's axes name: its view's, else its tensor's (s). */
static opsched_shape att_shape(const opsched_attention_attr *at, int x, const opsched_shape *s)
{
    if (x > OPSCHED_ATT_V || at->view[x].rank <= 0) return *s;
    opsched_shape v;
    memset(&v, 0, sizeof(v));
    v.ndim = at->view[x].rank > 4 ? 4 : at->view[x].rank;
    for (int a = 0; a < v.ndim; a++)
        v.d[a] = at->view[x].d[a];
    return v;
}

/* The size of canonical dim c of operand x, whose tensor has shape s. */
static int64_t att_size(const opsched_attention_attr *at, int x, int c, const opsched_shape *s)
{
    opsched_shape v = att_shape(at, x, s);
    int ax = at->axes[x][c];
    return ax >= 0 && ax < v.ndim ? v.d[ax] : 1;
}

int64_t opsched_attention_strides(const opsched_attention_attr *at, int x, const opsched_shape *s,
                                  int64_t strides[4], int64_t sizes[4])
{
    int64_t rs[OPSCHED_MAX_DIMS], acc = 1, off = 0;
    opsched_shape v = att_shape(at, x, s);
    if (x <= OPSCHED_ATT_V && at->view[x].rank > 0) {
        for (int a = 0; a < v.ndim; a++)
            rs[a] = at->view[x].stride[a];
        off = at->view[x].offset;
    } else {
        for (int a = v.ndim - 1; a >= 0; a--) {
            rs[a] = acc;
            acc *= v.d[a];
        }
    }
    for (int c = 0; c < 4; c++) {
        int ax = at->axes[x][c];
        strides[c] = ax >= 0 && ax < v.ndim && v.d[ax] > 1 ? rs[ax] : 0;
        if (sizes) sizes[c] = ax >= 0 && ax < v.ndim ? v.d[ax] : 1;
    }
    return off;
}

/* A view of operand x that stays inside its tensor (shape s): 1. */
static int att_view_ok(const opsched_attention_view *v, const opsched_shape *s)
{
    if (v->rank <= 0) return 1;
    if (v->rank > 4 || v->offset < 0) return 0;
    int64_t last = v->offset;
    for (int a = 0; a < v->rank; a++) {
        if (v->d[a] < 1 || v->stride[a] < 0) return 0;
        last += (v->d[a] - 1) * v->stride[a];
    }
    return last < opsched_shape_numel(s);
}

/* 1 when operand x's axes name distinct axes of a tensor of rank r, and
 * every axis of it (all of O's). */
static int att_axes_ok(const opsched_attention_attr *at, int x, int rank)
{
    unsigned seen = 0;
    for (int c = 0; c < 4; c++) {
        int ax = at->axes[x][c];
        if (ax < -1 || ax >= rank) return 0;
        if (ax < 0) continue;
        if (seen & (1u << ax)) return 0;
        seen |= 1u << ax;
    }
    return seen == (1u << rank) - 1u;
}

static opsched_status infer_attention(infer_args *a)
{
    OS_TRY(need_inputs(a, 3, 4));
    OS_TRY(need_outputs(a, 1));
    opsched_attention_attr *at = &a->attr->attention;
    static const char *const what[] = {"Q", "K", "V", "the bias"};
    int64_t sz[OPSCHED_ATT_OPERANDS][4];
    for (int x = 0; x < a->n_in; x++) {
        if (!a->in[x]) continue;
        if (x <= OPSCHED_ATT_V && !att_view_ok(&at->view[x], &a->in[x]->shape))
            return BAD(a, "the view of %s reaches outside its tensor", what[x]);
        opsched_shape vs = att_shape(at, x, &a->in[x]->shape);
        const opsched_shape *s = &vs;
        /* every axis of the tensor is a canonical dim, except a bias's
         * broadcast axes of size 1 */
        if (s->ndim > 4 || !att_axes_ok(at, x, s->ndim)) {
            int ok = x == OPSCHED_ATT_BIAS && s->ndim <= 4;
            for (int c = 0; ok && c < 4; c++)
                ok = at->axes[x][c] < s->ndim;
            for (int ax = 0; ok && ax < s->ndim; ax++) {
                int named = 0;
                for (int c = 0; c < 4; c++)
                    named += at->axes[x][c] == ax;
                ok = named == 1 || (named == 0 && s->d[ax] == 1);
            }
            if (!ok) return BAD(a, "the axes given for %s do not fit its rank %d", what[x], s->ndim);
        }
        if (!opsched_dtype_is_float(a->in[x]->dtype) || a->in[x]->dtype != a->in[0]->dtype)
            return BAD(a, "%s must be floating-point like Q", what[x]);
        for (int c = 0; c < 4; c++)
            sz[x][c] = att_size(at, x, c, s);
    }
    int64_t B = sz[0][0], H = sz[0][1], Sq = sz[0][2], D = sz[0][3];
    int64_t Sk = sz[1][2], Dv = sz[2][3];
    for (int x = 1; x < 3; x++)
        for (int c = 0; c < 2; c++)
            if (sz[x][c] != sz[0][c] && sz[x][c] != 1)
                return BAD(a, "%s has %lld in dim %d where Q has %lld", what[x], (long long)sz[x][c],
                           c, (long long)sz[0][c]);
    if (sz[1][3] != D) return BAD(a, "K's head size %lld is not Q's %lld", (long long)sz[1][3], (long long)D);
    if (sz[2][2] != Sk)
        return BAD(a, "V has %lld rows where K has %lld", (long long)sz[2][2], (long long)Sk);
    if (a->n_in == 4 && a->in[3]) {
        int64_t want[4] = {B, H, Sq, Sk};
        for (int c = 0; c < 4; c++)
            if (sz[3][c] != want[c] && sz[3][c] != 1)
                return BAD(a, "the bias has %lld in dim %d where the scores have %lld",
                           (long long)sz[3][c], c, (long long)want[c]);
    }
    if (at->out_rank < 1 || at->out_rank > 4 || !att_axes_ok(at, OPSCHED_ATT_O, at->out_rank))
        return BAD(a, "the output's axes do not fit its rank %d", at->out_rank);
    int64_t osz[4] = {B, H, Sq, Dv};
    opsched_shape *o = &a->out[0];
    memset(o, 0, sizeof(*o));
    o->ndim = at->out_rank;
    for (int c = 0; c < 4; c++) {
        if (at->axes[OPSCHED_ATT_O][c] >= 0) o->d[at->axes[OPSCHED_ATT_O][c]] = osz[c];
        else if (osz[c] != 1)
            return BAD(a, "the output has no axis for a dim of %lld", (long long)osz[c]);
    }
    if (!(at->scale == at->scale)) return BAD(a, "the scale is NaN");
    /* two products, and the softmax's max, subtract, exp, sum and divide */
    a->cost->flops = 2 * B * H * Sq * Sk * (D + Dv) + 5 * B * H * Sq * Sk;
    return OPSCHED_OK;
}

int opsched_attention_dims_get(const opsched_graph *g, const opsched_node *n,
                               opsched_attention_dims *out)
{
    if (!g || !n || !out || n->op != OPSCHED_OP_ATTENTION || n->n_inputs < 3) return 0;
    const opsched_attention_attr *at = &n->attr.attention;
    memset(out, 0, sizeof(*out));
    for (int x = 0; x < OPSCHED_ATT_OPERANDS; x++) {
        int id = x == OPSCHED_ATT_O ? n->outputs[0] : x < n->n_inputs ? n->inputs[x] : -1;
        const opsched_tensor *t = id >= 0 ? opsched_graph_tensor(g, id) : NULL;
        for (int c = 0; c < 4; c++)
            out->size[x][c] = t ? att_size(at, x, c, &t->shape) : 1;
    }
    out->B = out->size[0][0];
    out->H = out->size[0][1];
    out->Sq = out->size[0][2];
    out->D = out->size[0][3];
    out->Sk = out->size[1][2];
    out->Dv = out->size[2][3];
    return 1;
}

opsched_status os_infer(opsched_graph *g, const char *name, opsched_op_kind op,
                        opsched_op_attr *attr, const int *inputs, int n_in, int n_out,
                        opsched_shape *out_shapes, opsched_dtype *out_dtypes,
                        opsched_cost *cost)
{
    infer_args a = {.g = g, .name = name, .op = op, .attr = attr, .n_in = n_in, .n_out = n_out,
                    .out = out_shapes, .dt = out_dtypes, .cost = cost};
    if (n_in > (int)OS_ARRAY_LEN(a.in))
        return OS_FAIL(g->ctx, OPSCHED_ERR_UNSUPPORTED, "node '%s' (%s): %d inputs are too many",
                       name, opsched_op_name(op), n_in);
    for (int i = 0; i < n_in; i++) a.in[i] = inputs[i] >= 0 ? &g->tensors[inputs[i]] : NULL;
    if (n_in == 0 || !a.in[0])
        return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG, "node '%s' (%s): needs an input", name,
                       opsched_op_name(op));
    opsched_status st;
    for (int i = 0; i < n_out; i++) out_dtypes[i] = a.in[0]->dtype;
    switch (op) {
    case OPSCHED_OP_CONV: st = infer_conv(&a); break;
    case OPSCHED_OP_GEMM: st = infer_gemm(&a); break;
    case OPSCHED_OP_MATMUL: st = infer_matmul(&a); break;
    case OPSCHED_OP_MAXPOOL:
    case OPSCHED_OP_AVGPOOL: st = infer_pool(&a); break;
    case OPSCHED_OP_GLOBALAVGPOOL:
    case OPSCHED_OP_GLOBALMAXPOOL: st = infer_global_pool(&a); break;
    case OPSCHED_OP_RELU:
    case OPSCHED_OP_CLIP:
    case OPSCHED_OP_SIGMOID:
    case OPSCHED_OP_TANH:
    case OPSCHED_OP_GELU:
    case OPSCHED_OP_ERF:
    case OPSCHED_OP_HARDSIGMOID:
    case OPSCHED_OP_HARDSWISH:
    case OPSCHED_OP_SQRT:
    case OPSCHED_OP_IDENTITY:
    case OPSCHED_OP_DROPOUT: st = infer_unary(&a); break;
    case OPSCHED_OP_ADD:
    case OPSCHED_OP_SUB:
    case OPSCHED_OP_MUL:
    case OPSCHED_OP_DIV:
    case OPSCHED_OP_POW: st = infer_binary(&a); break;
    case OPSCHED_OP_CONCAT: st = infer_concat(&a); break;
    case OPSCHED_OP_SPLIT: st = infer_split(&a); break;
    case OPSCHED_OP_SLICE: st = infer_slice(&a); break;
    case OPSCHED_OP_GATHER: st = infer_gather(&a); break;
    case OPSCHED_OP_BATCHNORM: st = infer_batchnorm(&a); break;
    case OPSCHED_OP_SOFTMAX: st = infer_axis_same(&a, 3); break;
    case OPSCHED_OP_LRN: st = infer_lrn(&a); break;
    case OPSCHED_OP_LAYERNORM: st = infer_layernorm(&a); break;
    case OPSCHED_OP_REDUCEMEAN: st = infer_reduce(&a); break;
    case OPSCHED_OP_TRANSPOSE: st = infer_transpose(&a); break;
    case OPSCHED_OP_PAD: st = infer_pad(&a); break;
    case OPSCHED_OP_EXPAND: st = infer_expand(&a); break;
    case OPSCHED_OP_FLATTEN: st = infer_flatten(&a); break;
    case OPSCHED_OP_RESHAPE: st = infer_reshape(&a); break;
    case OPSCHED_OP_UNARY: st = infer_unary_fn(&a); break;
    case OPSCHED_OP_BINARY: st = infer_binary_fn(&a); break;
    case OPSCHED_OP_WHERE: st = infer_where(&a); break;
    case OPSCHED_OP_CAST: st = infer_cast(&a); break;
    case OPSCHED_OP_REDUCE: st = infer_reduce_fn(&a); break;
    case OPSCHED_OP_ARGMAX:
    case OPSCHED_OP_ARGMIN: st = infer_arg(&a); break;
    case OPSCHED_OP_LOGSOFTMAX:
    case OPSCHED_OP_HARDMAX: st = infer_axis_same(&a, 3); break;
    case OPSCHED_OP_CUMSUM: st = infer_cumsum(&a); break;
    case OPSCHED_OP_TOPK: st = infer_topk(&a); break;
    case OPSCHED_OP_GATHER_ELEMENTS: st = infer_gather_elements(&a); break;
    case OPSCHED_OP_GATHER_ND: st = infer_gather_nd(&a); break;
    case OPSCHED_OP_SCATTER_ELEMENTS:
    case OPSCHED_OP_SCATTER_ND: st = infer_scatter(&a); break;
    case OPSCHED_OP_TILE: st = infer_tile(&a); break;
    case OPSCHED_OP_TRILU: st = infer_trilu(&a); break;
    case OPSCHED_OP_ONEHOT: st = infer_onehot(&a); break;
    case OPSCHED_OP_RESIZE: st = infer_resize(&a); break;
    case OPSCHED_OP_GROUPNORM: st = infer_groupnorm(&a); break;
    case OPSCHED_OP_CONV_TRANSPOSE: st = infer_conv_transpose(&a); break;
    case OPSCHED_OP_QUANTIZE:
    case OPSCHED_OP_DEQUANTIZE: st = infer_quant(&a); break;
    case OPSCHED_OP_ATTENTION: st = infer_attention(&a); break;
    case OPSCHED_OP_BATCHNORM_TRAIN: st = infer_batchnorm_train(&a); break;
    case OPSCHED_OP_BATCHNORM_GRAD: st = infer_batchnorm_grad(&a); break;
    case OPSCHED_OP_CONV_GRAD_FILTER: st = infer_conv_grad_filter(&a); break;
    default:
        return OS_FAIL(g->ctx, OPSCHED_ERR_UNSUPPORTED, "node '%s': operator %d unknown", name,
                       (int)op);
    }
    if (st != OPSCHED_OK) return st;

    /* Shared accounting: dtypes, bytes, parameters, output elements. */
    for (int i = 0; i < n_out; i++) {
        int64_t n = opsched_shape_numel(&out_shapes[i]);
        if (n < 0 || n > OS_MAX_ELEMS) return BAD(&a, "output %d has more than 2^40 elements", i);
        cost->out_elems += n;
        cost->bytes_written += n * (int64_t)opsched_dtype_size(out_dtypes[i]);
    }
    for (int i = 0; i < n_in; i++) {
        if (!a.in[i]) continue;
        cost->bytes_read += tensor_bytes(a.in[i]);
        if (a.in[i]->kind == OPSCHED_TENSOR_WEIGHT) cost->params += opsched_shape_numel(&a.in[i]->shape);
    }
    if (op == OPSCHED_OP_ATTENTION) {
        /* an operand read through a view reads the view, not its whole tensor */
        for (int i = 0; i < n_in && i < 3; i++) {
            const opsched_attention_view *v = &attr->attention.view[i];
            if (!a.in[i] || v->rank <= 0) continue;
            int64_t e = 1;
            for (int d = 0; d < v->rank && d < 4; d++)
                e *= v->d[d];
            cost->bytes_read += e * (int64_t)opsched_dtype_size(a.in[i]->dtype) - tensor_bytes(a.in[i]);
        }
    }
    if ((op == OPSCHED_OP_GATHER || op == OPSCHED_OP_GATHER_ELEMENTS ||
         op == OPSCHED_OP_GATHER_ND) &&
        n_in >= 1 && a.in[0] && n_out >= 1) {
        /* a gather reads the rows it picks, not its whole table (an
         * embedding of 30522 x 768 read for 128 tokens) */
        int64_t whole = tensor_bytes(a.in[0]);
        int64_t picked = opsched_shape_numel(&out_shapes[0]) * (int64_t)opsched_dtype_size(a.in[0]->dtype);
        if (picked < whole) cost->bytes_read += picked - whole;
    }
    if (opsched_op_is_view(op)) {
        cost->bytes_read = 0;
        cost->bytes_written = 0;
        cost->flops = 0;
    }
    return OPSCHED_OK;
}
