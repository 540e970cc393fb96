/*
 * autodiff.c - the training graph of a forward graph (opsched/training.h):
 * the forward pass, a loss and the backward pass, all of it ordinary
 * operators, so every backend runs it and the harness, the predictor and
 * the scheduler see its nodes as they see any other.
 *
 * Reverse mode over the forward nodes in reverse order.  A tensor's
 * gradient is the sum of what its readers send back (an Add where it fans
 * out); a broadcast operand gets the sum over the axes it was broadcast
 * along.  Only what leads to a trained parameter (a float WEIGHT) is
 * differentiated: graph inputs and constants get no gradient.  The rules:
 *
 *   MatMul, Gemm        products with the other operand transposed
 *   Conv (2-D, grouped) ConvTranspose for the input (cuDNN's backward
 *                       data); ConvBackwardFilter for the filter
 *   BatchNorm           in training form (BatchNormTraining: the batch's
 *                       statistics), its gradient one BatchNormBackward
 *   MaxPool, AvgPool    dy scattered to the maxima (the indices the forward
 *                       keeps); a ConvTranspose by the uniform window
 *   Add, Sub, Mul       the gradient (times the other operand), summed to
 *                       the operand's shape
 *   Div, Sqrt           dy / b and -dy y / b; dy / (2 y)
 *   Relu, Clip          dy where the input is inside the range, else 0
 *   Sigmoid, Tanh       dy * y * (1 - y), dy * (1 - y * y)
 *   Gelu                dy (Phi(x) + x phi(x)), or its tanh form's derivative
 *   Softmax, LogSoftmax y (dy - sum(dy y)), dy - exp(y) sum(dy) (last axis)
 *   LayerNorm           the normalisation's gradient from the recomputed
 *                       mean and deviation; scale and bias summed
 *   ReduceSum/Mean, GlobalAveragePool, Expand   spread back or summed
 *   Concat, Slice       each input its slice; dy padded back with zeros
 *   Gather (axis 0)     dy added into zeros at the picked rows (ScatterND)
 *   Where, Cast         dy where the operand was chosen; cast back
 *   Transpose           the inverse permutation
 *   Reshape, Flatten, Identity, Dropout (inference)   a Reshape back
 *
 * Another operator on the way to a parameter fails with
 * OPSCHED_ERR_UNSUPPORTED naming it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "opsched/training.h"

#define SQRT1_2 0.70710678118654752440        /* 1 / sqrt(2) */
#define INV_SQRT_2PI 0.39894228040143267794   /* 1 / sqrt(2 pi) */
#define SQRT_2_OVER_PI 0.79788456080286535588 /* sqrt(2 / pi) */

typedef struct ad {
    opsched_ctx *ctx;
    const opsched_graph *g; /* the forward graph */
    opsched_graph *t;       /* the training graph being built */
    int *map;               /* forward tensor -> its copy in t */
    int *grad;              /* forward tensor -> its gradient in t, -1 while none */
    unsigned char *need;    /* forward tensor: leads to a trained parameter */
    unsigned char *buffer;  /* forward tensor: a BatchNorm's running statistic, no parameter */
    int (*aux)[2];          /* per forward node: what its training form keeps for backward
                             * (BatchNorm: the saved mean and inverse deviation; MaxPool:
                             * the indices) */
    int serial;             /* for unique node and tensor names */
} ad;

static int is_float(opsched_dtype d)
{
    return d == OPSCHED_F32 || d == OPSCHED_F16 || d == OPSCHED_BF16;
}

/* Tensor t_id's shape in t.  The pointer lives until the next tensor is
 * added to t (the array may move): a shape kept across an edit is copied
 * (shape_copy). */
static const opsched_shape *shape_of(const ad *a, int t_id)
{
    return &opsched_graph_tensor(a->t, t_id)->shape;
}

static opsched_shape shape_copy(const ad *a, int t_id)
{
    return *shape_of(a, t_id);
}

/* A node of t with one output, named "<base>/<serial>". */
static opsched_status node(ad *a, const char *base, opsched_op_kind op, const opsched_op_attr *attr,
                           const int *in, int n_in, int *out)
{
    char name[256];
    snprintf(name, sizeof(name), "%s/%d", base, a->serial++);
    return opsched_graph_add_node(a->t, name, op, attr, in, n_in, 1, NULL, out);
}

static opsched_status scalar(ad *a, float v, int *out)
{
    char name[64];
    opsched_shape s = {.ndim = 1, .d = {1}};
    snprintf(name, sizeof(name), "grad/const/%d", a->serial++);
    OS_TRY(opsched_graph_add_tensor(a->t, name, OPSCHED_TENSOR_CONSTANT, OPSCHED_F32, &s, out));
    return opsched_graph_set_data(a->t, *out, &v, sizeof(v));
}

static opsched_status binary(ad *a, const char *base, opsched_op_kind op, int x, int y, int *out)
{
    int in[2] = {x, y};
    return node(a, base, op, NULL, in, 2, out);
}

static opsched_status reshape(ad *a, const char *base, int x, const opsched_shape *s, int *out)
{
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    at.shape.shape = *s;
    return node(a, base, OPSCHED_OP_RESHAPE, &at, &x, 1, out);
}

/* The last two axes of x swapped. */
static opsched_status swap_last(ad *a, const char *base, int x, int *out)
{
    const opsched_shape *s = shape_of(a, x);
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    at.transpose.n = s->ndim;
    for (int i = 0; i < s->ndim; i++)
        at.transpose.perm[i] = i;
    at.transpose.perm[s->ndim - 1] = s->ndim - 2;
    at.transpose.perm[s->ndim - 2] = s->ndim - 1;
    return node(a, base, OPSCHED_OP_TRANSPOSE, &at, &x, 1, out);
}

/* g (a gradient of a broadcast result) summed to shape s: over its extra
 * leading axes and over the axes where s has size 1 and g has more. */
static opsched_status reduce_to(ad *a, const char *base, int g, const opsched_shape *sp, int *out)
{
    const opsched_shape s_v = *sp, gs_v = shape_copy(a, g), *s = &s_v, *gs = &gs_v;
    int lead = gs->ndim - s->ndim;
    if (lead < 0)
        return OS_FAIL(a->ctx, OPSCHED_ERR_SHAPE,
                       "autodiff: a gradient of rank %d for a tensor of "
                       "rank %d",
                       gs->ndim, s->ndim);
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    at.reduce.fn = OPSCHED_REDUCE_SUM;
    at.reduce.keepdims = 1;
    for (int i = 0; i < gs->ndim; i++) {
        int64_t want = i < lead ? 1 : s->d[i - lead];
        if (want == 1 && gs->d[i] != 1) at.reduce.axes[at.reduce.n_axes++] = i;
    }
    int r = g;
    if (at.reduce.n_axes) OS_TRY(node(a, base, OPSCHED_OP_REDUCE, &at, &g, 1, &r));
    if (lead || at.reduce.n_axes) {
        const opsched_shape *rs = shape_of(a, r);
        int same = rs->ndim == s->ndim;
        for (int i = 0; same && i < s->ndim; i++)
            same = rs->d[i] == s->d[i];
        if (!same) OS_TRY(reshape(a, base, r, s, &r));
    }
    *out = r;
    return OPSCHED_OK;
}

static opsched_status unary_fn(ad *a, const char *base, opsched_unary_fn fn, int x, int *out)
{
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    at.unary.fn = fn;
    return node(a, base, OPSCHED_OP_UNARY, &at, &x, 1, out);
}

/* x times a constant. */
static opsched_status scale(ad *a, const char *base, int x, float k, int *out)
{
    int c;
    OS_TRY(scalar(a, k, &c));
    return binary(a, base, OPSCHED_OP_MUL, x, c, out);
}

/* The sum (fn SUM) or mean of x over axes [from, ndim), kept as size 1. */
static opsched_status reduce_tail(ad *a, const char *base, opsched_reduce_fn fn, int x, int from,
                                  int *out)
{
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    at.reduce.fn = fn;
    at.reduce.keepdims = 1;
    for (int i = from; i < shape_of(a, x)->ndim; i++)
        at.reduce.axes[at.reduce.n_axes++] = i;
    return node(a, base, OPSCHED_OP_REDUCE, &at, &x, 1, out);
}

static opsched_status expand(ad *a, const char *base, int x, const opsched_shape *s, int *out)
{
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    at.shape.shape = *s;
    return node(a, base, OPSCHED_OP_EXPAND, &at, &x, 1, out);
}

/* Adds v to forward tensor f's gradient. */
static opsched_status accumulate(ad *a, int f, int v)
{
    if (a->grad[f] < 0) {
        a->grad[f] = v;
        return OPSCHED_OK;
    }
    return binary(a, "grad/accumulate", OPSCHED_OP_ADD, a->grad[f], v, &a->grad[f]);
}

/* The gradient of a product's operand A from dy and the other operand
 * B: dy @ B^T (a 2-D or batched MatMul), summed to A's shape. */
static opsched_status matmul_grads(ad *a, const char *base, int fa, int fb, int dy, int want_a,
                                   int want_b)
{
    int x = a->map[fa], w = a->map[fb], r;
    if (shape_of(a, x)->ndim < 2 || shape_of(a, w)->ndim < 2)
        return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "autodiff: node '%s': a product of a vector has no backward rule yet", base);
    if (want_a) {
        int wt;
        OS_TRY(swap_last(a, base, w, &wt));
        OS_TRY(binary(a, base, OPSCHED_OP_MATMUL, dy, wt, &r));
        OS_TRY(reduce_to(a, base, r, shape_of(a, x), &r));
        OS_TRY(accumulate(a, fa, r));
    }
    if (want_b) {
        int xt;
        OS_TRY(swap_last(a, base, x, &xt));
        OS_TRY(binary(a, base, OPSCHED_OP_MATMUL, xt, dy, &r));
        OS_TRY(reduce_to(a, base, r, shape_of(a, w), &r));
        OS_TRY(accumulate(a, fb, r));
    }
    return OPSCHED_OK;
}

/* Y = alpha op(A) op(B) + beta C: the products' gradients for op(A) and
 * op(B), transposed back where the node transposes, scaled by alpha. */
static opsched_status gemm_grads(ad *a, const opsched_node *n, int dy)
{
    const opsched_gemm_attr *at = &n->attr.gemm;
    const char *base = n->name;
    int fa = n->inputs[0], fb = n->inputs[1], fc = n->n_inputs > 2 ? n->inputs[2] : -1;
    int x = a->map[fa], w = a->map[fb];
    int ox = x, ow = w; /* op(A), op(B) */
    if (at->trans_a) OS_TRY(swap_last(a, base, x, &ox));
    if (at->trans_b) OS_TRY(swap_last(a, base, w, &ow));
    int d = dy;
    if (at->alpha != 1.0f) {
        int k;
        OS_TRY(scalar(a, at->alpha, &k));
        OS_TRY(binary(a, base, OPSCHED_OP_MUL, dy, k, &d));
    }
    int r;
    if (a->need[fa]) {
        int owt;
        OS_TRY(swap_last(a, base, ow, &owt));
        OS_TRY(binary(a, base, OPSCHED_OP_MATMUL, d, owt, &r));
        if (at->trans_a) OS_TRY(swap_last(a, base, r, &r));
        OS_TRY(accumulate(a, fa, r));
    }
    if (a->need[fb]) {
        int oxt;
        OS_TRY(swap_last(a, base, ox, &oxt));
        OS_TRY(binary(a, base, OPSCHED_OP_MATMUL, oxt, d, &r));
        if (at->trans_b) OS_TRY(swap_last(a, base, r, &r));
        OS_TRY(accumulate(a, fb, r));
    }
    if (fc >= 0 && a->need[fc]) {
        int dc = dy;
        if (at->beta != 1.0f) {
            int k;
            OS_TRY(scalar(a, at->beta, &k));
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, dy, k, &dc));
        }
        OS_TRY(reduce_to(a, base, dc, shape_of(a, a->map[fc]), &r));
        OS_TRY(accumulate(a, fc, r));
    }
    return OPSCHED_OK;
}

/* A 2-D convolution, y = conv(x, W) + b, in G groups:
 *   dx = ConvTranspose(dy, W) with the same window (output_padding makes
 *        up what the stride cut off), as cuDNN's backward data computes;
 *   dW = conv(x^T, dy^T)^T: x as [C, N, H, W] convolved with dy as a
 *        filter [M, N, OH, OW], stride and dilation swapped, cut to the
 *        kernel and permuted to [M, C, KH, KW];
 *   db = dy summed over N, H and W. */
static opsched_status conv_grads(ad *a, const opsched_node *n, int dy)
{
    const opsched_conv_attr *c = &n->attr.conv;
    const char *base = n->name;
    int fx = n->inputs[0], fw = n->inputs[1], fb = n->n_inputs > 2 ? n->inputs[2] : -1;
    int x = a->map[fx], w = a->map[fw], r;
    const opsched_shape xs_v = shape_copy(a, x), ws_v = shape_copy(a, w), ys_v = shape_copy(a, dy);
    const opsched_shape *xs = &xs_v, *ws = &ws_v, *ys = &ys_v;
    int64_t G = c->groups > 1 ? c->groups : 1;
    if (xs->ndim != 4)
        return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "autodiff: node '%s': a 3-D convolution has no backward rule yet", n->name);
    if (a->need[fx]) {
        opsched_op_attr at;
        memset(&at, 0, sizeof(at));
        opsched_conv_transpose_attr *t = &at.conv_transpose;
        for (int i = 0; i < 2; i++) {
            t->kernel[i] = ws->d[2 + i];
            t->stride[i] = c->stride[i];
            t->dilation[i] = c->dilation[i];
            int64_t made = (ys->d[2 + i] - 1) * c->stride[i] - c->pads[i] - c->pads[2 + i] +
                           c->dilation[i] * (ws->d[2 + i] - 1) + 1;
            t->output_padding[i] = xs->d[2 + i] - made;
        }
        memcpy(t->pads, c->pads, sizeof(t->pads));
        t->groups = G;
        int in[2] = {dy, w};
        OS_TRY(node(a, base, OPSCHED_OP_CONV_TRANSPOSE, &at, in, 2, &r));
        OS_TRY(accumulate(a, fx, r));
    }
    if (a->need[fw]) {
        /* cuDNN's backward filter (PyTorch's convolution_backward) as one node */
        opsched_op_attr at;
        memset(&at, 0, sizeof(at));
        at.conv = *c;
        at.conv.kernel[0] = ws->d[2];
        at.conv.kernel[1] = ws->d[3];
        at.conv.groups = G;
        int in[2] = {x, dy};
        OS_TRY(node(a, base, OPSCHED_OP_CONV_GRAD_FILTER, &at, in, 2, &r));
        OS_TRY(accumulate(a, fw, r));
    }
    if (fb >= 0 && a->need[fb]) {
        /* dy summed over N, OH and OW in two row reductions: the rows of
         * [N, M, OH * OW], then the column over N (one reduction over axes
         * 0, 2 and 3 strides across the whole tensor) */
        opsched_op_attr at;
        memset(&at, 0, sizeof(at));
        at.reduce.fn = OPSCHED_REDUCE_SUM;
        at.reduce.n_axes = 1;
        at.reduce.axes[0] = 2;
        OS_TRY(reshape(a, base, dy, &(opsched_shape){3, {ys->d[0], ys->d[1], ys->d[2] * ys->d[3]}},
                       &r));
        OS_TRY(node(a, base, OPSCHED_OP_REDUCE, &at, &r, 1, &r));
        at.reduce.axes[0] = 0;
        OS_TRY(node(a, base, OPSCHED_OP_REDUCE, &at, &r, 1, &r));
        OS_TRY(reshape(a, base, r, shape_of(a, a->map[fb]), &r));
        OS_TRY(accumulate(a, fb, r));
    }
    return OPSCHED_OK;
}

/* BatchNorm in training form: one BatchNormBackward node (cuDNN's, as
 * PyTorch runs it) from dy, x, the scale and the saved mean and inverse
 * deviation gives dx, dscale and dbias. */
static opsched_status batchnorm_grads(ad *a, const opsched_node *n, int i, int dy)
{
    int fx = n->inputs[0], fs = n->inputs[1], fb = n->inputs[2], outs[3];
    int in[5] = {dy, a->map[fx], a->map[fs], a->aux[i][0], a->aux[i][1]};
    static const char *const what[3] = {"dx", "dscale", "dbias"};
    const char *names[3];
    char nm[3][300], node_name[300];
    int serial = a->serial++;
    for (int k = 0; k < 3; k++) {
        snprintf(nm[k], sizeof(nm[k]), "%s/%s/%d", n->name, what[k], serial);
        names[k] = nm[k];
    }
    snprintf(node_name, sizeof(node_name), "%s/backward/%d", n->name, serial);
    OS_TRY(opsched_graph_add_node(a->t, node_name, OPSCHED_OP_BATCHNORM_GRAD, &n->attr, in, 5, 3,
                                  names, outs));
    if (a->need[fs]) {
        int r;
        OS_TRY(reshape(a, n->name, outs[1], shape_of(a, a->map[fs]), &r));
        OS_TRY(accumulate(a, fs, r));
    }
    if (a->need[fb]) {
        int r;
        OS_TRY(reshape(a, n->name, outs[2], shape_of(a, a->map[fb]), &r));
        OS_TRY(accumulate(a, fb, r));
    }
    return a->need[fx] ? accumulate(a, fx, outs[0]) : OPSCHED_OK;
}

/* MaxPool: dy added at each window's maximum (ScatterElements over the
 * flattened input, from the indices the forward kept). */
static opsched_status maxpool_grads(ad *a, const opsched_node *n, int i, int dy)
{
    const char *base = n->name;
    int x = a->map[n->inputs[0]], ind = a->aux[i][0], zero, zeros, r, in[3];
    const opsched_shape xs_v = shape_copy(a, x), *xs = &xs_v;
    opsched_shape flat_x = {1, {opsched_shape_numel(xs)}};
    opsched_shape flat_y = {1, {opsched_shape_numel(shape_of(a, dy))}};
    OS_TRY(scalar(a, 0.0f, &zero));
    OS_TRY(binary(a, base, OPSCHED_OP_MUL, x, zero, &zeros));
    OS_TRY(reshape(a, base, zeros, &flat_x, &in[0]));
    OS_TRY(reshape(a, base, ind, &flat_y, &in[1]));
    OS_TRY(reshape(a, base, dy, &flat_y, &in[2]));
    opsched_op_attr sa;
    memset(&sa, 0, sizeof(sa));
    sa.scatter.reduction = OPSCHED_SCATTER_ADD;
    OS_TRY(node(a, base, OPSCHED_OP_SCATTER_ELEMENTS, &sa, in, 3, &r));
    OS_TRY(reshape(a, base, r, xs, &r));
    return accumulate(a, n->inputs[0], r);
}

/* AveragePool without padding, or counting it: a ConvTranspose of dy by a
 * uniform 1 / (kh kw) window, one group per channel. */
static opsched_status avgpool_grads(ad *a, const opsched_node *n, int dy)
{
    const opsched_pool_attr *pa = &n->attr.pool;
    const char *base = n->name;
    const opsched_shape xs_v = shape_copy(a, a->map[n->inputs[0]]), ys_v = shape_copy(a, dy);
    const opsched_shape *xs = &xs_v, *ys = &ys_v;
    int padded = pa->pads[0] || pa->pads[1] || pa->pads[2] || pa->pads[3];
    if (xs->ndim != 4 || (padded && !pa->count_include_pad) || pa->dilation[0] > 1 ||
        pa->dilation[1] > 1)
        return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "autodiff: node '%s': an average pool %s has no backward rule yet", n->name,
                       xs->ndim != 4 ? "that is not 2-D" : "excluding its padding");
    int64_t c = xs->d[1], kh = pa->kernel[0], kw = pa->kernel[1];
    opsched_shape ws = {4, {c, 1, kh, kw}};
    size_t nw = (size_t)(c * kh * kw);
    float *wv = malloc(sizeof(float) * nw);
    if (!wv) return OS_NOMEM(a->ctx);
    for (size_t k = 0; k < nw; k++)
        wv[k] = 1.0f / (float)(kh * kw);
    char name[300];
    snprintf(name, sizeof(name), "%s/window/%d", base, a->serial++);
    int w, r;
    opsched_status st =
        opsched_graph_add_tensor(a->t, name, OPSCHED_TENSOR_CONSTANT, OPSCHED_F32, &ws, &w);
    if (st == OPSCHED_OK) st = opsched_graph_set_data(a->t, w, wv, sizeof(float) * nw);
    free(wv);
    OS_TRY(st);
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    opsched_conv_transpose_attr *t = &at.conv_transpose;
    for (int i = 0; i < 2; i++) {
        t->kernel[i] = pa->kernel[i];
        t->stride[i] = pa->stride[i];
        t->dilation[i] = 1;
        int64_t made =
            (ys->d[2 + i] - 1) * pa->stride[i] - pa->pads[i] - pa->pads[2 + i] + pa->kernel[i];
        t->output_padding[i] = xs->d[2 + i] - made;
        if (t->output_padding[i] < 0)
            return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                           "autodiff: node '%s': an average pool whose windows run past the "
                           "input (ceil mode) has no backward rule yet",
                           n->name);
    }
    memcpy(t->pads, pa->pads, sizeof(t->pads));
    t->groups = c;
    int in[2] = {dy, w};
    OS_TRY(node(a, base, OPSCHED_OP_CONV_TRANSPOSE, &at, in, 2, &r));
    return accumulate(a, n->inputs[0], r);
}

/* The backward step of forward node ni (n), whose output's gradient is dy. */
static opsched_status backward(ad *a, int ni, const opsched_node *n, int dy)
{
    const char *base = n->name;
    int f0 = n->n_inputs > 0 ? n->inputs[0] : -1, f1 = n->n_inputs > 1 ? n->inputs[1] : -1;
    int y = a->map[n->outputs[0]], r, k;
    switch (n->op) {
    case OPSCHED_OP_MATMUL:
        return matmul_grads(a, base, f0, f1, dy, a->need[f0], a->need[f1]);
    case OPSCHED_OP_GEMM:
        return gemm_grads(a, n, dy);
    case OPSCHED_OP_ADD:
    case OPSCHED_OP_SUB:
        if (a->need[f0]) {
            OS_TRY(reduce_to(a, base, dy, shape_of(a, a->map[f0]), &r));
            OS_TRY(accumulate(a, f0, r));
        }
        if (a->need[f1]) {
            int d = dy;
            if (n->op == OPSCHED_OP_SUB) {
                OS_TRY(scalar(a, -1.0f, &k));
                OS_TRY(binary(a, base, OPSCHED_OP_MUL, dy, k, &d));
            }
            OS_TRY(reduce_to(a, base, d, shape_of(a, a->map[f1]), &r));
            OS_TRY(accumulate(a, f1, r));
        }
        return OPSCHED_OK;
    case OPSCHED_OP_MUL:
        for (int i = 0; i < 2; i++) {
            int fi = n->inputs[i], other = a->map[n->inputs[1 - i]];
            if (!a->need[fi]) continue;
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, dy, other, &r));
            OS_TRY(reduce_to(a, base, r, shape_of(a, a->map[fi]), &r));
            OS_TRY(accumulate(a, fi, r));
        }
        return OPSCHED_OK;
    case OPSCHED_OP_RELU: {
        int zero, pos, in[3];
        opsched_op_attr at;
        memset(&at, 0, sizeof(at));
        at.binary.fn = OPSCHED_BINARY_GREATER;
        OS_TRY(scalar(a, 0.0f, &zero));
        in[0] = a->map[f0];
        in[1] = zero;
        OS_TRY(node(a, base, OPSCHED_OP_BINARY, &at, in, 2, &pos));
        in[0] = pos;
        in[1] = dy;
        in[2] = zero;
        OS_TRY(node(a, base, OPSCHED_OP_WHERE, NULL, in, 3, &r));
        return accumulate(a, f0, r);
    }
    case OPSCHED_OP_SIGMOID:
    case OPSCHED_OP_TANH: {
        int one, t1, t2;
        OS_TRY(scalar(a, 1.0f, &one));
        if (n->op == OPSCHED_OP_SIGMOID) { /* y (1 - y) */
            OS_TRY(binary(a, base, OPSCHED_OP_SUB, one, y, &t1));
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, y, t1, &t2));
        } else { /* 1 - y^2 */
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, y, y, &t1));
            OS_TRY(binary(a, base, OPSCHED_OP_SUB, one, t1, &t2));
        }
        OS_TRY(binary(a, base, OPSCHED_OP_MUL, dy, t2, &r));
        return accumulate(a, f0, r);
    }
    case OPSCHED_OP_DIV: /* d(a/b) = dy / b; -dy a / b^2 = -dy y / b */
        if (a->need[f0]) {
            OS_TRY(binary(a, base, OPSCHED_OP_DIV, dy, a->map[f1], &r));
            OS_TRY(reduce_to(a, base, r, shape_of(a, a->map[f0]), &r));
            OS_TRY(accumulate(a, f0, r));
        }
        if (a->need[f1]) {
            int t1;
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, dy, y, &t1));
            OS_TRY(binary(a, base, OPSCHED_OP_DIV, t1, a->map[f1], &t1));
            OS_TRY(scale(a, base, t1, -1.0f, &r));
            OS_TRY(reduce_to(a, base, r, shape_of(a, a->map[f1]), &r));
            OS_TRY(accumulate(a, f1, r));
        }
        return OPSCHED_OK;
    case OPSCHED_OP_SQRT: { /* dy / (2 y) */
        int t1;
        OS_TRY(binary(a, base, OPSCHED_OP_DIV, dy, y, &t1));
        OS_TRY(scale(a, base, t1, 0.5f, &r));
        return accumulate(a, f0, r);
    }
    case OPSCHED_OP_CLIP: { /* dy where min < x < max */
        int lo, hi, c1, c2, cond, zero, in[3];
        opsched_op_attr at;
        memset(&at, 0, sizeof(at));
        OS_TRY(scalar(a, n->attr.clip.min, &lo));
        OS_TRY(scalar(a, n->attr.clip.max, &hi));
        at.binary.fn = OPSCHED_BINARY_GREATER;
        in[0] = a->map[f0];
        in[1] = lo;
        OS_TRY(node(a, base, OPSCHED_OP_BINARY, &at, in, 2, &c1));
        at.binary.fn = OPSCHED_BINARY_LESS;
        in[1] = hi;
        OS_TRY(node(a, base, OPSCHED_OP_BINARY, &at, in, 2, &c2));
        at.binary.fn = OPSCHED_BINARY_AND;
        in[0] = c1;
        in[1] = c2;
        OS_TRY(node(a, base, OPSCHED_OP_BINARY, &at, in, 2, &cond));
        OS_TRY(scalar(a, 0.0f, &zero));
        in[0] = cond;
        in[1] = dy;
        in[2] = zero;
        OS_TRY(node(a, base, OPSCHED_OP_WHERE, NULL, in, 3, &r));
        return accumulate(a, f0, r);
    }
    case OPSCHED_OP_GELU: {
        int x = a->map[f0], t1, t2, d;
        if (!n->attr.gelu.tanh_approx) {
            /* Phi(x) + x phi(x): 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi) */
            int e, one, pdf;
            OS_TRY(scale(a, base, x, (float)SQRT1_2, &t1));
            OS_TRY(node(a, base, OPSCHED_OP_ERF, NULL, &t1, 1, &e));
            OS_TRY(scalar(a, 1.0f, &one));
            OS_TRY(binary(a, base, OPSCHED_OP_ADD, e, one, &e));
            OS_TRY(scale(a, base, e, 0.5f, &e));
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, x, x, &t2));
            OS_TRY(scale(a, base, t2, -0.5f, &t2));
            OS_TRY(unary_fn(a, base, OPSCHED_UNARY_EXP, t2, &pdf));
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, x, pdf, &t2));
            OS_TRY(scale(a, base, t2, (float)INV_SQRT_2PI, &t2));
            OS_TRY(binary(a, base, OPSCHED_OP_ADD, e, t2, &d));
        } else {
            /* u = c (x + 0.044715 x^3), t = tanh u:
             * 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 0.044715 x^2) */
            const float c = (float)SQRT_2_OVER_PI;
            int x2, u, t, one, p1, q, w;
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, x, x, &x2));
            OS_TRY(scale(a, base, x2, 0.044715f, &t1));
            OS_TRY(scalar(a, 1.0f, &one));
            OS_TRY(binary(a, base, OPSCHED_OP_ADD, t1, one, &t1));
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, x, t1, &u));
            OS_TRY(scale(a, base, u, c, &u));
            OS_TRY(node(a, base, OPSCHED_OP_TANH, NULL, &u, 1, &t));
            OS_TRY(binary(a, base, OPSCHED_OP_ADD, t, one, &p1));
            OS_TRY(scale(a, base, p1, 0.5f, &p1));
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, t, t, &q));
            OS_TRY(binary(a, base, OPSCHED_OP_SUB, one, q, &q));
            OS_TRY(scale(a, base, x2, 3 * 0.044715f, &w));
            OS_TRY(binary(a, base, OPSCHED_OP_ADD, w, one, &w));
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, q, w, &q));
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, q, x, &q));
            OS_TRY(scale(a, base, q, 0.5f * c, &q));
            OS_TRY(binary(a, base, OPSCHED_OP_ADD, p1, q, &d));
        }
        OS_TRY(binary(a, base, OPSCHED_OP_MUL, dy, d, &r));
        return accumulate(a, f0, r);
    }
    case OPSCHED_OP_SOFTMAX:
    case OPSCHED_OP_LOGSOFTMAX: {
        int axis = (int)n->attr.axis.axis, nd = shape_of(a, y)->ndim;
        if (axis < 0) axis += nd;
        if (axis != nd - 1)
            return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                           "autodiff: node '%s': a softmax over axis %d of %d: only the last "
                           "axis has a backward rule yet",
                           n->name, axis, nd);
        int t1, sm;
        if (n->op == OPSCHED_OP_SOFTMAX) { /* y (dy - sum(dy y)) */
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, dy, y, &t1));
            OS_TRY(reduce_tail(a, base, OPSCHED_REDUCE_SUM, t1, nd - 1, &sm));
            OS_TRY(binary(a, base, OPSCHED_OP_SUB, dy, sm, &t1));
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, y, t1, &r));
        } else { /* dy - exp(y) sum(dy) */
            int p;
            OS_TRY(reduce_tail(a, base, OPSCHED_REDUCE_SUM, dy, nd - 1, &sm));
            OS_TRY(unary_fn(a, base, OPSCHED_UNARY_EXP, y, &p));
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, p, sm, &t1));
            OS_TRY(binary(a, base, OPSCHED_OP_SUB, dy, t1, &r));
        }
        return accumulate(a, f0, r);
    }
    case OPSCHED_OP_LAYERNORM: {
        /* xhat = (x - mean) / sigma over axes [axis, ndim):
         * dx = (g - mean(g) - xhat mean(g xhat)) / sigma with g = dy * scale;
         * dscale = sum(dy xhat), dbias = sum(dy) over the other axes */
        int x = a->map[f0], axis = (int)n->attr.layernorm.axis, nd = shape_of(a, x)->ndim;
        if (axis < 0) axis += nd;
        int mu, xc, var, sig, xhat, eps, gg, m1, m2, t1;
        OS_TRY(reduce_tail(a, base, OPSCHED_REDUCE_MEAN, x, axis, &mu));
        OS_TRY(binary(a, base, OPSCHED_OP_SUB, x, mu, &xc));
        OS_TRY(binary(a, base, OPSCHED_OP_MUL, xc, xc, &t1));
        OS_TRY(reduce_tail(a, base, OPSCHED_REDUCE_MEAN, t1, axis, &var));
        OS_TRY(scalar(a, n->attr.layernorm.epsilon, &eps));
        OS_TRY(binary(a, base, OPSCHED_OP_ADD, var, eps, &var));
        OS_TRY(node(a, base, OPSCHED_OP_SQRT, NULL, &var, 1, &sig));
        OS_TRY(binary(a, base, OPSCHED_OP_DIV, xc, sig, &xhat));
        int fs = n->n_inputs > 1 ? n->inputs[1] : -1, fb = n->n_inputs > 2 ? n->inputs[2] : -1;
        if (fs >= 0 && a->need[fs]) {
            OS_TRY(binary(a, base, OPSCHED_OP_MUL, dy, xhat, &t1));
            OS_TRY(reduce_to(a, base, t1, shape_of(a, a->map[fs]), &r));
            OS_TRY(accumulate(a, fs, r));
        }
        if (fb >= 0 && a->need[fb]) {
            OS_TRY(reduce_to(a, base, dy, shape_of(a, a->map[fb]), &r));
            OS_TRY(accumulate(a, fb, r));
        }
        if (!a->need[f0]) return OPSCHED_OK;
        gg = dy;
        if (fs >= 0) OS_TRY(binary(a, base, OPSCHED_OP_MUL, dy, a->map[fs], &gg));
        OS_TRY(reduce_tail(a, base, OPSCHED_REDUCE_MEAN, gg, axis, &m1));
        OS_TRY(binary(a, base, OPSCHED_OP_MUL, gg, xhat, &t1));
        OS_TRY(reduce_tail(a, base, OPSCHED_REDUCE_MEAN, t1, axis, &m2));
        OS_TRY(binary(a, base, OPSCHED_OP_MUL, xhat, m2, &m2));
        OS_TRY(binary(a, base, OPSCHED_OP_SUB, gg, m1, &t1));
        OS_TRY(binary(a, base, OPSCHED_OP_SUB, t1, m2, &t1));
        OS_TRY(binary(a, base, OPSCHED_OP_DIV, t1, sig, &r));
        return accumulate(a, f0, r);
    }
    case OPSCHED_OP_REDUCE:
    case OPSCHED_OP_REDUCEMEAN: {
        const opsched_reduce_attr *ra = &n->attr.reduce;
        if (n->op == OPSCHED_OP_REDUCE && ra->fn != OPSCHED_REDUCE_SUM &&
            ra->fn != OPSCHED_REDUCE_MEAN)
            return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                           "autodiff: node '%s': only sums and means have a backward rule yet",
                           n->name);
        const opsched_shape xs_v = shape_copy(a, a->map[f0]), *xs = &xs_v;
        opsched_shape kept = *xs;
        int64_t count = 1;
        for (int i = 0; i < xs->ndim; i++) {
            int red = ra->n_axes == 0;
            for (int j = 0; j < ra->n_axes; j++)
                red |= ra->axes[j] == i;
            if (red) {
                count *= xs->d[i];
                kept.d[i] = 1;
            }
        }
        int d = dy;
        if (!ra->keepdims) OS_TRY(reshape(a, base, dy, &kept, &d));
        if (n->op == OPSCHED_OP_REDUCEMEAN || ra->fn == OPSCHED_REDUCE_MEAN)
            OS_TRY(scale(a, base, d, (float)(1.0 / (double)count), &d));
        OS_TRY(expand(a, base, d, xs, &r));
        return accumulate(a, f0, r);
    }
    case OPSCHED_OP_GLOBALAVGPOOL: { /* dy / (H W), spread over the map */
        const opsched_shape xs_v = shape_copy(a, a->map[f0]), *xs = &xs_v;
        int64_t hw = 1;
        for (int i = 2; i < xs->ndim; i++)
            hw *= xs->d[i];
        int d;
        OS_TRY(scale(a, base, dy, (float)(1.0 / (double)hw), &d));
        OS_TRY(expand(a, base, d, xs, &r));
        return accumulate(a, f0, r);
    }
    case OPSCHED_OP_EXPAND:
        OS_TRY(reduce_to(a, base, dy, shape_of(a, a->map[f0]), &r));
        return accumulate(a, f0, r);
    case OPSCHED_OP_CONCAT: { /* each input its slice of dy */
        int axis = (int)n->attr.axis.axis, nd = shape_of(a, y)->ndim;
        if (axis < 0) axis += nd;
        int64_t at0 = 0;
        for (int q = 0; q < n->n_inputs; q++) {
            int fk = n->inputs[q];
            const opsched_shape ks_v = shape_copy(a, a->map[fk]), *ks = &ks_v;
            if (a->need[fk]) {
                opsched_op_attr sl;
                memset(&sl, 0, sizeof(sl));
                for (int i = 0; i < nd; i++) {
                    sl.slice.starts[i] = i == axis ? at0 : 0;
                    sl.slice.ends[i] = i == axis ? at0 + ks->d[i] : ks->d[i];
                    sl.slice.steps[i] = 1;
                }
                OS_TRY(node(a, base, OPSCHED_OP_SLICE, &sl, &dy, 1, &r));
                OS_TRY(accumulate(a, fk, r));
            }
            at0 += ks->d[axis];
        }
        return OPSCHED_OK;
    }
    case OPSCHED_OP_CONV:
        return conv_grads(a, n, dy);
    case OPSCHED_OP_BATCHNORM:
        return batchnorm_grads(a, n, ni, dy);
    case OPSCHED_OP_MAXPOOL:
        if (a->aux[ni][0] < 0)
            return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                           "autodiff: node '%s': a MaxPool that already gives its indices has "
                           "no backward rule yet",
                           n->name);
        return maxpool_grads(a, n, ni, dy);
    case OPSCHED_OP_AVGPOOL:
        return avgpool_grads(a, n, dy);
    case OPSCHED_OP_GATHER: { /* an embedding's rows: dy added where they were picked */
        if (!a->need[f0]) return OPSCHED_OK; /* the indices take no gradient */
        int axis = (int)n->attr.axis.axis;
        if (axis != 0)
            return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                           "autodiff: node '%s': a Gather along axis %d: only axis 0 (an "
                           "embedding) has a backward rule yet",
                           n->name, axis);
        int data = a->map[f0], idx = a->map[f1], zero, zeros, in[3];
        opsched_shape is = *shape_of(a, idx);
        if (is.ndim >= OPSCHED_MAX_DIMS)
            return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                           "autodiff: node '%s': indices of rank %d", n->name, is.ndim);
        is.d[is.ndim++] = 1;
        OS_TRY(reshape(a, base, idx, &is, &idx));
        if (opsched_graph_tensor(a->t, idx)->dtype != OPSCHED_INT64) {
            opsched_op_attr ca;
            memset(&ca, 0, sizeof(ca));
            ca.cast.to = OPSCHED_INT64;
            OS_TRY(node(a, base, OPSCHED_OP_CAST, &ca, &idx, 1, &idx));
        }
        OS_TRY(scalar(a, 0.0f, &zero));
        OS_TRY(binary(a, base, OPSCHED_OP_MUL, data, zero, &zeros)); /* zero-filled, as PyTorch */
        opsched_op_attr sa;
        memset(&sa, 0, sizeof(sa));
        sa.scatter.reduction = OPSCHED_SCATTER_ADD;
        in[0] = zeros;
        in[1] = idx;
        in[2] = dy;
        OS_TRY(node(a, base, OPSCHED_OP_SCATTER_ND, &sa, in, 3, &r));
        return accumulate(a, f0, r);
    }
    case OPSCHED_OP_WHERE: { /* dy where the condition chose the operand, else 0 */
        int zero, in[3];
        OS_TRY(scalar(a, 0.0f, &zero));
        for (int q = 1; q <= 2; q++) {
            int fq = n->inputs[q];
            if (!a->need[fq]) continue;
            in[0] = a->map[n->inputs[0]];
            in[1] = q == 1 ? dy : zero;
            in[2] = q == 1 ? zero : dy;
            OS_TRY(node(a, base, OPSCHED_OP_WHERE, NULL, in, 3, &r));
            OS_TRY(reduce_to(a, base, r, shape_of(a, a->map[fq]), &r));
            OS_TRY(accumulate(a, fq, r));
        }
        return OPSCHED_OK;
    }
    case OPSCHED_OP_SLICE: { /* dy padded back with zeros */
        const opsched_shape xs_v = shape_copy(a, a->map[f0]), *xs = &xs_v;
        opsched_op_attr pa;
        memset(&pa, 0, sizeof(pa));
        for (int i = 0; i < xs->ndim; i++) {
            const opsched_slice_attr *sl = &n->attr.slice;
            if (sl->steps[i] != 1)
                return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                               "autodiff: node '%s': a Slice with step %lld: only step 1 has a "
                               "backward rule yet",
                               n->name, (long long)sl->steps[i]);
            pa.pad.pads[i] = sl->starts[i];
            pa.pad.pads[xs->ndim + i] = xs->d[i] - sl->ends[i];
        }
        pa.pad.mode = OPSCHED_PAD_CONSTANT;
        OS_TRY(node(a, base, OPSCHED_OP_PAD, &pa, &dy, 1, &r));
        return accumulate(a, f0, r);
    }
    case OPSCHED_OP_CAST: { /* back to the input's type */
        opsched_op_attr ca;
        memset(&ca, 0, sizeof(ca));
        ca.cast.to = opsched_graph_tensor(a->t, a->map[f0])->dtype;
        OS_TRY(node(a, base, OPSCHED_OP_CAST, &ca, &dy, 1, &r));
        return accumulate(a, f0, r);
    }
    case OPSCHED_OP_TRANSPOSE: {
        opsched_op_attr at;
        memset(&at, 0, sizeof(at));
        at.transpose.n = n->attr.transpose.n;
        for (int i = 0; i < at.transpose.n; i++)
            at.transpose.perm[n->attr.transpose.perm[i]] = i;
        OS_TRY(node(a, base, OPSCHED_OP_TRANSPOSE, &at, &dy, 1, &r));
        return accumulate(a, f0, r);
    }
    case OPSCHED_OP_RESHAPE:
    case OPSCHED_OP_FLATTEN:
    case OPSCHED_OP_IDENTITY:
    case OPSCHED_OP_DROPOUT:
        OS_TRY(reshape(a, base, dy, shape_of(a, a->map[f0]), &r));
        return accumulate(a, f0, r);
    default:
        return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "autodiff: node '%s' (%s) has no backward rule yet", n->name,
                       opsched_op_name(n->op));
    }
}

/* A BatchNormalization in training form: one BatchNormTraining node,
 * normalised by the batch's mean and variance over every axis but the
 * channels (population variance), as PyTorch's training mode does; the
 * mean and inverse deviation it saves are kept in aux for the backward. */
static opsched_status batchnorm_forward(ad *a, const opsched_node *n, int i, const int *in,
                                        const char *name, int *out)
{
    int ins[3] = {in[0], in[1], in[2]}, outs[3];
    char m[300], v[300];
    snprintf(m, sizeof(m), "%s/saved_mean", n->name);
    snprintf(v, sizeof(v), "%s/saved_invstd", n->name);
    const char *names[3] = {name, m, v};
    OS_TRY(opsched_graph_add_node(a->t, n->name, OPSCHED_OP_BATCHNORM_TRAIN, &n->attr, ins, 3, 3,
                                  names, outs));
    *out = outs[0];
    a->aux[i][0] = outs[1];
    a->aux[i][1] = outs[2];
    return OPSCHED_OK;
}

/* The forward graph copied into t: its tensors that no node makes, then
 * its nodes, under their names. */
static opsched_status copy_forward(ad *a)
{
    const opsched_graph *g = a->g;
    for (int i = 0; i < opsched_graph_num_tensors(g); i++) {
        const opsched_tensor *x = opsched_graph_tensor(g, i);
        if (x->producer >= 0) continue;
        OS_TRY(opsched_graph_add_tensor(a->t, x->name, x->kind, x->dtype, &x->shape, &a->map[i]));
        if (x->data) OS_TRY(opsched_graph_set_data(a->t, a->map[i], x->data, x->data_bytes));
    }
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        int in[64], out[16];
        const char *names[16];
        if (n->n_inputs > 64 || n->n_outputs > 16)
            return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                           "autodiff: node '%s': too many "
                           "operands",
                           n->name);
        for (int k = 0; k < n->n_inputs; k++)
            in[k] = n->inputs[k] >= 0 ? a->map[n->inputs[k]] : -1;
        for (int k = 0; k < n->n_outputs; k++)
            names[k] = opsched_graph_tensor(g, n->outputs[k])->name;
        if (n->op == OPSCHED_OP_BATCHNORM) {
            OS_TRY(batchnorm_forward(a, n, i, in, names[0], out));
            a->map[n->outputs[0]] = out[0];
            continue;
        }
        int n_out = n->n_outputs;
        char ind[300];
        if (n->op == OPSCHED_OP_MAXPOOL && n_out == 1) {
            /* the indices, as PyTorch's max_pool2d_with_indices keeps them */
            snprintf(ind, sizeof(ind), "%s/indices", n->name);
            names[1] = ind;
            n_out = 2;
        }
        OS_TRY(opsched_graph_add_node(a->t, n->name, n->op, &n->attr, in, n->n_inputs, n_out, names,
                                      out));
        for (int k = 0; k < n->n_outputs; k++)
            a->map[n->outputs[k]] = out[k];
        if (n_out > n->n_outputs) a->aux[i][0] = out[1];
    }
    return OPSCHED_OK;
}

/* The loss of output y against the input "target" (y's shape): its value
 * [1, ..., 1] and its gradient with respect to y. */
static opsched_status add_loss(ad *a, opsched_loss loss, int y, int *value, int *dy)
{
    const opsched_shape ys_v = shape_copy(a, y), *ys = &ys_v;
    int target, d, k, r;
    OS_TRY(
        opsched_graph_add_tensor(a->t, "target", OPSCHED_TENSOR_INPUT, OPSCHED_F32, ys, &target));
    opsched_op_attr red;
    memset(&red, 0, sizeof(red));
    red.reduce.keepdims = 1;
    int64_t numel = opsched_shape_numel(ys);
    if (loss == OPSCHED_LOSS_MSE) { /* mean((y - t)^2); 2 (y - t) / numel */
        OS_TRY(binary(a, "loss", OPSCHED_OP_SUB, y, target, &d));
        OS_TRY(binary(a, "loss", OPSCHED_OP_MUL, d, d, &r));
        red.reduce.fn = OPSCHED_REDUCE_MEAN;
        OS_TRY(node(a, "loss", OPSCHED_OP_REDUCE, &red, &r, 1, value));
        OS_TRY(scalar(a, (float)(2.0 / (double)numel), &k));
        return binary(a, "loss/backward", OPSCHED_OP_MUL, d, k, dy);
    }
    /* cross-entropy over the last axis against probabilities t:
     * -sum(t log softmax(y)) / rows; (softmax(y) - t) / rows */
    int64_t rows = numel / (ys->ndim ? ys->d[ys->ndim - 1] : 1);
    opsched_op_attr ax;
    memset(&ax, 0, sizeof(ax));
    ax.axis.axis = -1;
    int lp, p;
    OS_TRY(node(a, "loss", OPSCHED_OP_LOGSOFTMAX, &ax, &y, 1, &lp));
    OS_TRY(binary(a, "loss", OPSCHED_OP_MUL, target, lp, &r));
    red.reduce.fn = OPSCHED_REDUCE_SUM;
    OS_TRY(node(a, "loss", OPSCHED_OP_REDUCE, &red, &r, 1, &r));
    OS_TRY(scalar(a, (float)(-1.0 / (double)rows), &k));
    OS_TRY(binary(a, "loss", OPSCHED_OP_MUL, r, k, value));
    OS_TRY(node(a, "loss/backward", OPSCHED_OP_SOFTMAX, &ax, &y, 1, &p));
    OS_TRY(binary(a, "loss/backward", OPSCHED_OP_SUB, p, target, &d));
    OS_TRY(scalar(a, (float)(1.0 / (double)rows), &k));
    return binary(a, "loss/backward", OPSCHED_OP_MUL, d, k, dy);
}

/* An INPUT state tensor "state/<kind>/<w>" of w's shape. */
static opsched_status state_input(ad *a, const char *kind, const opsched_tensor *w, int *out)
{
    char name[300];
    snprintf(name, sizeof(name), "state/%s/%s", kind, w->name);
    return opsched_graph_add_tensor(a->t, name, OPSCHED_TENSOR_INPUT, OPSCHED_F32, &w->shape, out);
}

static opsched_status named_output(ad *a, const char *kind, const char *wname, int id)
{
    char name[300];
    snprintf(name, sizeof(name), "step/%s%s%s", kind, *kind ? "/" : "", wname);
    OS_TRY(opsched_graph_rename_tensor(a->t, id, name));
    return opsched_graph_mark_output(a->t, id);
}

/* x * c for a constant c. */
static opsched_status scaled(ad *a, const char *base, int x, float c, int *out)
{
    int k;
    OS_TRY(scalar(a, c, &k));
    return binary(a, base, OPSCHED_OP_MUL, x, k, out);
}

/* The optimizer's update of parameter i (g's tensor id) with gradient gi
 * (see opsched_training_graph). */
static opsched_status optimizer_step(ad *a, const opsched_training_options *o, int i, int gi)
{
    const opsched_tensor *x = opsched_graph_tensor(a->g, i);
    int w = a->map[i];
    if (o->optimizer == OPSCHED_OPTIMIZER_SGD) {
        const float lr = 0.01f, momentum = 0.9f;
        int buf, g = gi, t, nb, nw;
        OS_TRY(state_input(a, "momentum", x, &buf));
        if (o->weight_decay > 0) { /* g + wd * w */
            OS_TRY(scaled(a, "sgd/decay", w, (float)o->weight_decay, &t));
            OS_TRY(binary(a, "sgd/decay", OPSCHED_OP_ADD, g, t, &g));
        }
        OS_TRY(scaled(a, "sgd/momentum", buf, momentum, &t));
        OS_TRY(binary(a, "sgd/momentum", OPSCHED_OP_ADD, t, g, &nb));
        OS_TRY(scaled(a, "sgd/update", nb, lr, &t));
        OS_TRY(binary(a, "sgd/update", OPSCHED_OP_SUB, w, t, &nw));
        OS_TRY(named_output(a, "", x->name, nw));
        return named_output(a, "momentum", x->name, nb);
    }
    const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    const float wd = o->weight_decay > 0 ? (float)o->weight_decay : 0.01f;
    const float bc1 = 1.0f - b1, bc2 = 1.0f - b2; /* step 1 */
    int m, v, t, u, nm, nv, d, nw, w1;
    OS_TRY(state_input(a, "exp_avg", x, &m));
    OS_TRY(state_input(a, "exp_avg_sq", x, &v));
    OS_TRY(scaled(a, "adamw/decay", w, 1.0f - lr * wd, &w1));
    OS_TRY(scaled(a, "adamw/exp_avg", m, b1, &t)); /* b1 m + (1 - b1) g */
    OS_TRY(scaled(a, "adamw/exp_avg", gi, 1.0f - b1, &u));
    OS_TRY(binary(a, "adamw/exp_avg", OPSCHED_OP_ADD, t, u, &nm));
    OS_TRY(binary(a, "adamw/exp_avg_sq", OPSCHED_OP_MUL, gi, gi, &u)); /* b2 v + (1 - b2) g^2 */
    OS_TRY(scaled(a, "adamw/exp_avg_sq", u, 1.0f - b2, &u));
    OS_TRY(scaled(a, "adamw/exp_avg_sq", v, b2, &t));
    OS_TRY(binary(a, "adamw/exp_avg_sq", OPSCHED_OP_ADD, t, u, &nv));
    int one[1] = {nv};
    OS_TRY(node(a, "adamw/denom", OPSCHED_OP_SQRT, NULL, one, 1, &d)); /* sqrt(v / bc2) + eps */
    OS_TRY(scaled(a, "adamw/denom", d, 1.0f / sqrtf(bc2), &d));
    OS_TRY(scalar(a, eps, &t));
    OS_TRY(binary(a, "adamw/denom", OPSCHED_OP_ADD, d, t, &d));
    OS_TRY(binary(a, "adamw/update", OPSCHED_OP_DIV, nm, d, &u)); /* w - lr / bc1 * m / denom */
    OS_TRY(scaled(a, "adamw/update", u, lr / bc1, &u));
    OS_TRY(binary(a, "adamw/update", OPSCHED_OP_SUB, w1, u, &nw));
    OS_TRY(named_output(a, "", x->name, nw));
    OS_TRY(named_output(a, "exp_avg", x->name, nm));
    return named_output(a, "exp_avg_sq", x->name, nv);
}

static opsched_status build(ad *a, const opsched_training_options *o)
{
    const opsched_graph *g = a->g;
    OS_TRY(copy_forward(a));
    if (opsched_graph_num_outputs(g) < 1)
        return OS_FAIL(a->ctx, OPSCHED_ERR_INVALID_ARG, "autodiff: the graph has no output");
    int fy = opsched_graph_output(g, 0);
    if (!is_float(opsched_graph_tensor(g, fy)->dtype))
        return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "autodiff: the loss reads output '%s', which is not a float tensor",
                       opsched_graph_tensor(g, fy)->name);
    /* what leads to a trained parameter */
    int nt = opsched_graph_num_tensors(g);
    int any = 0;
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        if (n->op == OPSCHED_OP_BATCHNORM)
            for (int k = 3; k < n->n_inputs && k < 5; k++)
                if (n->inputs[k] >= 0) a->buffer[n->inputs[k]] = 1;
    }
    for (int i = 0; i < nt; i++) {
        const opsched_tensor *x = opsched_graph_tensor(g, i);
        a->need[i] = x->kind == OPSCHED_TENSOR_WEIGHT && is_float(x->dtype) && !a->buffer[i];
        any |= a->need[i];
    }
    if (!any)
        return OS_FAIL(a->ctx, OPSCHED_ERR_INVALID_ARG,
                       "autodiff: the graph has no float weight to train");
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        int need = 0;
        for (int k = 0; k < n->n_inputs; k++)
            need |= n->inputs[k] >= 0 && a->need[n->inputs[k]];
        for (int k = 0; k < n->n_outputs; k++)
            a->need[n->outputs[k]] =
                (unsigned char)(need && is_float(opsched_graph_tensor(g, n->outputs[k])->dtype));
    }
    int loss, dy;
    OS_TRY(add_loss(a, o->loss, a->map[fy], &loss, &dy));
    OS_TRY(opsched_graph_rename_tensor(a->t, loss, "loss"));
    OS_TRY(opsched_graph_mark_output(a->t, loss));
    a->grad[fy] = dy;
    for (int i = opsched_graph_num_nodes(g) - 1; i >= 0; i--) {
        const opsched_node *n = opsched_graph_node(g, i);
        if (n->n_outputs < 1 || !a->need[n->outputs[0]] || a->grad[n->outputs[0]] < 0) continue;
        if (n->n_outputs > 1)
            return OS_FAIL(a->ctx, OPSCHED_ERR_UNSUPPORTED,
                           "autodiff: node '%s' (%s) has %d outputs: no backward rule yet", n->name,
                           opsched_op_name(n->op), n->n_outputs);
        OS_TRY(backward(a, i, n, a->grad[n->outputs[0]]));
    }
    int n_taken = 0, *taken_ids = malloc(sizeof(int) * (size_t)(nt + 1));
    int *param_of = malloc(sizeof(int) * (size_t)(nt + 1));
    if (!taken_ids || !param_of) {
        free(taken_ids);
        free(param_of);
        return OS_NOMEM(a->ctx);
    }
    opsched_status st = OPSCHED_OK;
    for (int i = 0; i < nt && st == OPSCHED_OK; i++) {
        const opsched_tensor *x = opsched_graph_tensor(g, i);
        if (x->kind != OPSCHED_TENSOR_WEIGHT || !a->need[i]) continue;
        char name[300];
        snprintf(name, sizeof(name), "grad/%s", x->name);
        int gi = a->grad[i];
        if (gi < 0) { /* a parameter the loss does not read: zero */
            st = scalar(a, 0.0f, &gi);
            int in[2] = {a->map[i], gi};
            if (st == OPSCHED_OK) st = node(a, "grad/unused", OPSCHED_OP_MUL, NULL, in, 2, &gi);
        } else {
            /* its own tensor unless it is a result nothing else reads or
             * names (the same gradient may reach two parameters) */
            int taken = opsched_graph_tensor(a->t, gi)->kind != OPSCHED_TENSOR_ACTIVATION ||
                        opsched_graph_num_consumers(a->t, gi) > 0;
            for (int k = 0; k < n_taken && !taken; k++)
                taken = taken_ids[k] == gi;
            if (taken) st = reshape(a, "grad/out", gi, &x->shape, &gi);
        }
        param_of[n_taken] = i;
        taken_ids[n_taken++] = gi;
        if (st == OPSCHED_OK) st = opsched_graph_rename_tensor(a->t, gi, name);
        if (st == OPSCHED_OK) st = opsched_graph_mark_output(a->t, gi);
    }
    for (int k = 0; k < n_taken && st == OPSCHED_OK && o->step; k++)
        st = optimizer_step(a, o, param_of[k], taken_ids[k]);
    free(taken_ids);
    free(param_of);
    return st;
}

opsched_status opsched_training_graph(const opsched_graph *g, const opsched_training_options *o,
                                      opsched_graph **out)
{
    if (!g || !o || !out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    ad a;
    memset(&a, 0, sizeof(a));
    a.g = g;
    a.ctx = opsched_graph_ctx(g);
    int nt = opsched_graph_num_tensors(g);
    a.map = malloc(sizeof(int) * (size_t)(nt + 1));
    a.grad = malloc(sizeof(int) * (size_t)(nt + 1));
    a.need = calloc((size_t)nt + 1, 1);
    a.buffer = calloc((size_t)nt + 1, 1);
    int nn = opsched_graph_num_nodes(g);
    a.aux = malloc(sizeof(*a.aux) * (size_t)(nn + 1));
    char name[256];
    snprintf(name, sizeof(name), "%s/train", opsched_graph_name(g));
    opsched_status st = !a.map || !a.grad || !a.need || !a.buffer || !a.aux
                            ? OS_NOMEM(a.ctx)
                            : opsched_graph_create(a.ctx, name, &a.t);
    if (st == OPSCHED_OK) {
        for (int i = 0; i < nt; i++)
            a.map[i] = a.grad[i] = -1;
        for (int i = 0; i < nn; i++)
            a.aux[i][0] = a.aux[i][1] = -1;
        st = build(&a, o);
    }
    free(a.map);
    free(a.grad);
    free(a.need);
    free(a.buffer);
    free(a.aux);
    if (st != OPSCHED_OK) {
        opsched_graph_free(a.t);
        return st;
    }
    *out = a.t;
    return OPSCHED_OK;
}
