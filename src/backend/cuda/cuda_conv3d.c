/*
 * cuda_conv3d.c - 3-D Conv and ConvTranspose ([N, C, D, H, W] tensors,
 * stored NCDHW in every layout) through cuDNN's legacy API with Nd
 * descriptors: cudnnConvolutionForward for Conv, cudnnConvolutionBackwardData
 * for ConvTranspose (the gradient of the forward convolution whose filter is
 * W, as in cuda_conv_transpose.c).
 *
 * cuDNN pads symmetrically.  A Conv's excess padding (the larger side minus
 * the smaller) is written by the pad kernel into a padded copy of the input
 * held at the start of the workspace; a ConvTranspose computes the full
 * result with the symmetric part of its padding into that scratch and the
 * pad kernel crops it into Y (a negative begin), output_padding being the
 * zeros past the result.  The bias is added after, per channel.
 *
 * Algorithm: the first result of cuDNN's v7 heuristic that it can run
 * within the workspace limit in a math type the mode allows; "heuristic",
 * "find" and their _v7 names all plan this way (the graph API's 3-D path
 * is not used).  Named forward algorithms are refused as unsupported.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

enum { NS = 3, RANK = 5 };

typedef struct c3_plan {
    cu_plan base;
    int transpose;
    cudnnTensorDescriptor_t x_desc, y_desc; /* Conv: x and y; ConvTranspose: dy (X) and dx */
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv_desc;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd;
    cuk_type kt;
    size_t elem;
    int use_pad; /* Conv: pad X into the scratch; ConvTranspose: crop the scratch into Y */
    cuk_pad_desc pad;
    size_t scratch_bytes; /* at the start of the workspace (256-byte multiple) */
    cu_conv_bias bias;
} c3_plan;

/* One window op's geometry per spatial axis D, H, W. */
typedef struct c3_geom {
    int64_t k[NS], s[NS], d[NS], p0[NS], p1[NS], outpad[NS];
    int64_t groups;
} c3_geom;

static void c3_release(cu_plan *base)
{
    c3_plan *p = (c3_plan *)base;
    if (p->x_desc) (void)cudnnDestroyTensorDescriptor(p->x_desc);
    if (p->y_desc) (void)cudnnDestroyTensorDescriptor(p->y_desc);
    if (p->w_desc) (void)cudnnDestroyFilterDescriptor(p->w_desc);
    if (p->conv_desc) (void)cudnnDestroyConvolutionDescriptor(p->conv_desc);
}

static opsched_status c3_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                void *const *in, void *const *out)
{
    c3_plan *p = (c3_plan *)base;
    const float one = 1.0f, zero = 0.0f;
    void *scratch = base->workspace;
    void *ws = (char *)base->workspace + p->scratch_bytes;
    size_t ws_bytes = base->workspace_bytes - p->scratch_bytes;
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    if (!p->transpose) {
        const void *x = in[0];
        if (p->use_pad) {
            CUDA_CHECK(ctx, cuk_pad(p->elem, &p->pad, in[0], scratch, s));
            x = scratch;
        }
        CUDNN_CHECK(ctx, cudnnConvolutionForward(dev->cudnn, &one, p->x_desc, x, p->w_desc, in[1],
                                                 p->conv_desc, p->fwd, ws_bytes ? ws : NULL,
                                                 ws_bytes, &zero, p->y_desc, out[0]));
    } else {
        void *dx = p->use_pad ? scratch : out[0];
        CUDNN_CHECK(ctx, cudnnConvolutionBackwardData(
                             dev->cudnn, &one, p->w_desc, in[1], p->x_desc, in[0], p->conv_desc,
                             p->bwd, ws_bytes ? ws : NULL, ws_bytes, &zero, p->y_desc, dx));
        if (p->use_pad) CUDA_CHECK(ctx, cuk_pad(p->elem, &p->pad, dx, out[0], s));
    }
    return cu_conv_bias_add(ctx, &p->bias, p->kt, base->n_in > 2 ? in[2] : NULL, out[0], s);
}

static cudnnMathType_t initial_math(opsched_math m)
{
    switch (m) {
    case OPSCHED_MATH_FP32:
        return CUDNN_FMA_MATH;
    case OPSCHED_MATH_TF32:
        return CUDNN_DEFAULT_MATH;
    default:
        return CUDNN_TENSOR_OP_MATH;
    }
}


static opsched_status pick_fwd(const cu_plan_args *a, c3_plan *p, size_t limit, size_t *bytes)
{
    cudnnConvolutionFwdAlgoPerf_t perf[CU_N_CONV_ALGOS];
    int n = 0;
    CUDNN_CHECK(a->ctx, cudnnGetConvolutionForwardAlgorithm_v7(a->dev->cudnn, p->x_desc, p->w_desc,
                                                               p->conv_desc, p->y_desc,
                                                               (int)OS_ARRAY_LEN(perf), &n, perf));
    for (int k = 0; k < n; k++) {
        const cudnnConvolutionFwdAlgoPerf_t *r = &perf[k];
        if (r->status != CUDNN_STATUS_SUCCESS || r->memory > limit ||
            !cu_conv_math_ok(a, r->mathType))
            continue;
        if ((int)r->algo < 0 || (int)r->algo >= CU_N_CONV_ALGOS) continue;
        OS_TRY(cu_conv_set_math(a, p->conv_desc, r->mathType));
        if (cudnnGetConvolutionForwardWorkspaceSize(a->dev->cudnn, p->x_desc, p->w_desc,
                                                    p->conv_desc, p->y_desc, r->algo,
                                                    bytes) != CUDNN_STATUS_SUCCESS ||
            *bytes > limit)
            continue;
        p->fwd = r->algo;
        snprintf(a->info->algo, sizeof(a->info->algo), "%s", cu_conv_algo_names[r->algo]);
        return OPSCHED_OK;
    }
    return CU_UNSUPPORTED(a,
                          "no cuDNN algorithm runs this 3-D convolution within %zu bytes of "
                          "workspace (%s)",
                          limit, opsched_math_name(a->opts->math));
}

static opsched_status pick_bwd(const cu_plan_args *a, c3_plan *p, size_t limit, size_t *bytes)
{
    cudnnConvolutionBwdDataAlgoPerf_t perf[8];
    int n = 0;
    CUDNN_CHECK(a->ctx, cudnnGetConvolutionBackwardDataAlgorithm_v7(
                            a->dev->cudnn, p->w_desc, p->x_desc, p->conv_desc, p->y_desc,
                            (int)OS_ARRAY_LEN(perf), &n, perf));
    for (int k = 0; k < n; k++) {
        const cudnnConvolutionBwdDataAlgoPerf_t *r = &perf[k];
        if (r->status != CUDNN_STATUS_SUCCESS || r->memory > limit ||
            !cu_conv_math_ok(a, r->mathType))
            continue;
        OS_TRY(cu_conv_set_math(a, p->conv_desc, r->mathType));
        if (cudnnGetConvolutionBackwardDataWorkspaceSize(a->dev->cudnn, p->w_desc, p->x_desc,
                                                         p->conv_desc, p->y_desc, r->algo,
                                                         bytes) != CUDNN_STATUS_SUCCESS ||
            *bytes > limit)
            continue;
        p->bwd = r->algo;
        snprintf(a->info->algo, sizeof(a->info->algo), "bwd_data_%d", (int)r->algo);
        return OPSCHED_OK;
    }
    return CU_UNSUPPORTED(a,
                          "no cuDNN backward-data algorithm runs this 3-D transposed "
                          "convolution within %zu bytes of workspace (%s)",
                          limit, opsched_math_name(a->opts->math));
}

/* An NCDHW tensor descriptor of dims. */
static opsched_status desc_5d(const cu_plan_args *a, cudnnTensorDescriptor_t *t,
                              const int64_t *dims)
{
    int d[RANK], st[RANK];
    int64_t s = 1;
    for (int i = RANK - 1; i >= 0; i--) {
        d[i] = (int)dims[i];
        st[i] = (int)s;
        s *= dims[i];
    }
    CUDNN_CHECK(a->ctx, cudnnCreateTensorDescriptor(t));
    CUDNN_CHECK(a->ctx, cudnnSetTensorNdDescriptor(*t, cu_cudnn_type(a->dt), RANK, d, st));
    return OPSCHED_OK;
}

/* The filter [out, in / groups, kd, kh, kw] and the convolution with the
 * symmetric part of the padding. */
static opsched_status filter_conv(const cu_plan_args *a, c3_plan *p, const c3_geom *g,
                                  const int64_t *wdims, const int64_t *sym)
{
    int wd[RANK], pad[NS], str[NS], dil[NS];
    for (int i = 0; i < RANK; i++)
        wd[i] = (int)wdims[i];
    for (int i = 0; i < NS; i++) {
        pad[i] = (int)sym[i];
        str[i] = (int)g->s[i];
        dil[i] = (int)g->d[i];
    }
    CUDNN_CHECK(a->ctx, cudnnCreateFilterDescriptor(&p->w_desc));
    CUDNN_CHECK(a->ctx, cudnnSetFilterNdDescriptor(p->w_desc, cu_cudnn_type(a->dt),
                                                   CUDNN_TENSOR_NCHW, RANK, wd));
    CUDNN_CHECK(a->ctx, cudnnCreateConvolutionDescriptor(&p->conv_desc));
    CUDNN_CHECK(a->ctx, cudnnSetConvolutionNdDescriptor(p->conv_desc, NS, pad, str, dil,
                                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_CHECK(a->ctx, cudnnSetConvolutionGroupCount(p->conv_desc, (int)g->groups));
    CUDNN_CHECK(a->ctx, cudnnSetConvolutionMathType(p->conv_desc, initial_math(a->opts->math)));
    return OPSCHED_OK;
}

/* Checks cuDNN's forward output of x_desc (Conv) or dx (ConvTranspose)
 * against want. */
static opsched_status check_forward(const cu_plan_args *a, cudnnTensorDescriptor_t from,
                                    cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t c,
                                    const int64_t *want)
{
    int got[RANK];
    CUDNN_CHECK(a->ctx, cudnnGetConvolutionNdForwardOutputDim(c, from, w, RANK, got));
    for (int i = 0; i < RANK; i++)
        if (got[i] != want[i])
            return OS_FAIL(a->ctx, OPSCHED_ERR_BACKEND,
                           "cuda: node '%s': cuDNN's forward convolution gives %dx%dx%dx%dx%d, "
                           "not %lldx%lldx%lldx%lldx%lld",
                           a->node->name, got[0], got[1], got[2], got[3], got[4],
                           (long long)want[0], (long long)want[1], (long long)want[2],
                           (long long)want[3], (long long)want[4]);
    return OPSCHED_OK;
}

/* A pad kernel copy of a [5]-dims tensor `from` (contiguous) into `to`,
 * shifted by begin (negative: a crop). */
static void pad_desc(cuk_pad_desc *pd, const int64_t *to, const int64_t *from, const int64_t *begin)
{
    int64_t s = 1;
    pd->ndim = RANK;
    pd->mode = CUK_PAD_CONSTANT;
    pd->value = 0; /* +0 in every float type */
    for (int i = RANK - 1; i >= 0; i--) {
        pd->out_shape[i] = to[i];
        pd->in_shape[i] = from[i];
        pd->in_stride[i] = s;
        pd->begin[i] = begin[i];
        s *= from[i];
    }
}

static void geometry(const opsched_node *n, c3_geom *g)
{
    memset(g, 0, sizeof(*g));
    const opsched_window_depth *dp;
    const int64_t *k, *s, *d, *pads, *op = NULL;
    if (n->op == OPSCHED_OP_CONV) {
        const opsched_conv_attr *c = &n->attr.conv;
        dp = &c->depth, k = c->kernel, s = c->stride, d = c->dilation, pads = c->pads;
        g->groups = c->groups;
    } else {
        const opsched_conv_transpose_attr *c = &n->attr.conv_transpose;
        dp = &c->depth, k = c->kernel, s = c->stride, d = c->dilation, pads = c->pads;
        op = c->output_padding;
        g->groups = c->groups;
    }
    if (g->groups < 1) g->groups = 1;
    g->k[0] = dp->kernel;
    g->s[0] = dp->stride ? dp->stride : 1;
    g->d[0] = dp->dilation ? dp->dilation : 1;
    g->p0[0] = dp->pad_begin;
    g->p1[0] = dp->pad_end;
    g->outpad[0] = dp->output_padding;
    for (int i = 0; i < 2; i++) {
        g->k[1 + i] = k[i];
        g->s[1 + i] = s[i] ? s[i] : 1;
        g->d[1 + i] = d[i] ? d[i] : 1;
        g->p0[1 + i] = pads[i];
        g->p1[1 + i] = pads[2 + i];
        g->outpad[1 + i] = op ? op[i] : 0;
    }
}

opsched_status cu_plan_conv_3d(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0), *w = cu_in(a, 1), *y = cu_out(a, 0);
    int transpose = a->node->op == OPSCHED_OP_CONV_TRANSPOSE;
    if (!x || !w || !y || x->shape.ndim != RANK || w->shape.ndim != RANK || y->shape.ndim != RANK)
        return CU_UNSUPPORTED(a, "a 3-D window op needs 5-D tensors");
    if (!cu_dtype_is_float(x->dtype) || !cu_dtype_is_float(w->dtype))
        return CU_UNSUPPORTED(a, "3-D convolution of %s data", opsched_dtype_name(x->dtype));
    const char *algo = a->opts->algo;
    if (algo && strcmp(algo, "heuristic") != 0 && strcmp(algo, "find") != 0 &&
        strcmp(algo, "heuristic_v7") != 0 && strcmp(algo, "find_v7") != 0)
        return CU_UNSUPPORTED(a, "3-D convolutions run the cuDNN v7 heuristic's choice, not %s",
                              algo);
    c3_geom g;
    geometry(a->node, &g);
    const int64_t *xd = x->shape.d, *yd = y->shape.d;
    int64_t sym[NS], beg[RANK] = {0, 0, 0, 0, 0};
    /* Conv: the padded input; ConvTranspose: the full result cuDNN writes. */
    int64_t mid[RANK] = {xd[0], transpose ? yd[1] : xd[1]};
    int differs = 0;
    for (int i = 0; i < NS; i++) {
        /* ConvTranspose: output_padding reaches output_padding elements
         * into the end padding, which a symmetric cuDNN padding would cut */
        sym[i] = transpose ? OS_MIN(g.p0[i], OS_MAX(0, g.p1[i] - g.outpad[i]))
                           : OS_MIN(g.p0[i], g.p1[i]);
        if (!transpose) {
            mid[2 + i] = xd[2 + i] + g.p0[i] + g.p1[i] - 2 * sym[i];
            beg[2 + i] = g.p0[i] - sym[i];
        } else {
            int64_t full = (xd[2 + i] - 1) * g.s[i] + g.d[i] * (g.k[i] - 1) + 1;
            mid[2 + i] = full - 2 * sym[i];
            beg[2 + i] = -(g.p0[i] - sym[i]);
        }
        if (mid[2 + i] < 1)
            return CU_UNSUPPORTED(a, "padding larger than the transposed convolution's result");
        differs |= beg[2 + i] != 0 || mid[2 + i] != (transpose ? yd : xd)[2 + i];
    }
    int64_t numel_mid = mid[0] * mid[1] * mid[2] * mid[3] * mid[4];
    int64_t vals[] = {opsched_shape_numel(&x->shape),
                      opsched_shape_numel(&y->shape),
                      numel_mid,
                      g.groups,
                      sym[0],
                      sym[1],
                      sym[2],
                      g.s[0],
                      g.s[1],
                      g.s[2],
                      g.d[0],
                      g.d[1],
                      g.d[2]};
    for (size_t i = 0; i < OS_ARRAY_LEN(vals); i++)
        if (!cu_fits_int(vals[i]) || vals[i] < 0)
            return CU_UNSUPPORTED(a, "dimensions beyond cuDNN's 32-bit limits");

    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(c3_plan), c3_launch, c3_release, &base));
    c3_plan *p = (c3_plan *)base;
    opsched_status st = OPSCHED_OK;
    p->transpose = transpose;
    p->kt = a->kt;
    p->elem = opsched_dtype_size(a->dt);
    p->use_pad = differs;
    if (!transpose) {
        /* x_desc describes what cuDNN reads: X, or its padded copy. */
        OS_TRY_GOTO(st, desc_5d(a, &p->x_desc, differs ? mid : xd), fail);
        OS_TRY_GOTO(st, desc_5d(a, &p->y_desc, yd), fail);
        OS_TRY_GOTO(st, filter_conv(a, p, &g, w->shape.d, sym), fail);
        OS_TRY_GOTO(st, check_forward(a, p->x_desc, p->w_desc, p->conv_desc, yd), fail);
        if (differs) pad_desc(&p->pad, mid, xd, beg);
    } else {
        /* The forward filter: C outputs from M / groups inputs per group. */
        int64_t wf[RANK] = {xd[1], yd[1] / g.groups, g.k[0], g.k[1], g.k[2]};
        OS_TRY_GOTO(st, desc_5d(a, &p->x_desc, xd), fail);
        OS_TRY_GOTO(st, desc_5d(a, &p->y_desc, differs ? mid : yd), fail);
        OS_TRY_GOTO(st, filter_conv(a, p, &g, wf, sym), fail);
        OS_TRY_GOTO(st, check_forward(a, p->y_desc, p->w_desc, p->conv_desc, xd), fail);
        if (differs) pad_desc(&p->pad, yd, mid, beg);
    }
    if (differs) p->scratch_bytes = ((size_t)numel_mid * p->elem + 255) / 256 * 256;
    size_t limit = a->opts->workspace_limit ? a->opts->workspace_limit : cu_free_memory();
    limit = limit > p->scratch_bytes ? limit - p->scratch_bytes : 0;
    size_t ws = 0;
    if (transpose)
        OS_TRY_GOTO(st, pick_bwd(a, p, limit, &ws), fail);
    else
        OS_TRY_GOTO(st, pick_fwd(a, p, limit, &ws), fail);
    base->workspace_bytes = p->scratch_bytes + ws;
    if (base->workspace_bytes)
        OS_TRY_GOTO(st, cu_malloc(a->ctx, base->workspace_bytes, &base->workspace), fail);
    cu_conv_bias_init(a, &p->bias);
    a->info->fused_activation = 0;
    *out = base;
    return OPSCHED_OK;
fail:
    cu_plan_destroy(base);
    return st;
}
