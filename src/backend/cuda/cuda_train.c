/*
 * cuda_train.c - the training graph's own operators on the CUDA backend,
 * run the way PyTorch's eager training runs them:
 *
 *   BatchNormTraining   cudnnBatchNormalizationForwardTraining (spatial;
 *                       channels-last: the Ex call, spatial-persistent),
 *                       with running statistics of its own updated as
 *                       PyTorch's are (factor 0.1), so the work is the same
 *   BatchNormBackward   cudnnBatchNormalizationBackward from the saved mean
 *                       and inverse deviation
 *   ConvBackwardFilter  cudnnConvolutionBackwardFilter, the first algorithm
 *                       of cudnnGetConvolutionBackwardFilterAlgorithm_v7 that
 *                       runs within the workspace limit in a math type the
 *                       mode allows; an input with asymmetric padding is
 *                       padded into a scratch tensor first (cuDNN pads
 *                       symmetrically)
 *
 * cuDNN's batch norm wants its per-channel tensors in fp32, so fp16 and bf16
 * plans, sizes past cuDNN's 32-bit limits and an epsilon below
 * CUDNN_BN_MIN_EPSILON run the own kernels (kernels.cu: a block per
 * channel).  plan info's algo says which ran.
 */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

/* ---- batch norm -------------------------------------------------------- */

typedef struct bnt_plan {
    cu_plan base;
    int use_cudnn, nhwc;
    cuk_type kt;
    cudnnBatchNormMode_t mode;
    cudnnTensorDescriptor_t x_desc, p_desc;
    int64_t N, C, S;
    double eps;
    float *running; /* [2C]: the running mean and variance (forward only) */
    int ex;         /* channels-last: the Ex calls in spatial-persistent mode */
    void *ex_ws;    /* their workspace, in the plan's after `running` */
    size_t ex_ws_bytes;
} bnt_plan;

static void bnt_release(cu_plan *base)
{
    bnt_plan *p = (bnt_plan *)base;
    if (p->x_desc) (void)cudnnDestroyTensorDescriptor(p->x_desc);
    if (p->p_desc) (void)cudnnDestroyTensorDescriptor(p->p_desc);
}

static opsched_status bn_train_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base,
                                      cudaStream_t s, void *const *in, void *const *out)
{
    bnt_plan *p = (bnt_plan *)base;
    const float one = 1.0f, zero = 0.0f;
    if (!p->use_cudnn) {
        CUDA_CHECK(ctx, cuk_bn_train(p->kt, p->N, p->C, p->S, p->nhwc, (float)p->eps, in[0], in[1],
                                     in[2], out[0], out[1], out[2], s));
        return OPSCHED_OK;
    }
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    if (p->ex) {
        CUDNN_CHECK(ctx, cudnnBatchNormalizationForwardTrainingEx(
                             dev->cudnn, p->mode, CUDNN_BATCHNORM_OPS_BN, &one, &zero, p->x_desc,
                             in[0], NULL, NULL, p->x_desc, out[0], p->p_desc, in[1], in[2], 0.1,
                             p->running, p->running + p->C, p->eps, out[1], out[2], NULL, p->ex_ws,
                             p->ex_ws_bytes, NULL, 0));
        return OPSCHED_OK;
    }
    CUDNN_CHECK(ctx, cudnnBatchNormalizationForwardTraining(
                         dev->cudnn, p->mode, &one, &zero, p->x_desc, in[0], p->x_desc, out[0],
                         p->p_desc, in[1], in[2], 0.1, p->running, p->running + p->C, p->eps,
                         out[1], out[2]));
    return OPSCHED_OK;
}

static opsched_status bn_grad_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base,
                                     cudaStream_t s, void *const *in, void *const *out)
{
    bnt_plan *p = (bnt_plan *)base;
    const float one = 1.0f, zero = 0.0f;
    if (!p->use_cudnn) {
        CUDA_CHECK(ctx, cuk_bn_grad(p->kt, p->N, p->C, p->S, p->nhwc, in[0], in[1], in[2], in[3],
                                    in[4], out[0], out[1], out[2], s));
        return OPSCHED_OK;
    }
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    if (p->ex) {
        CUDNN_CHECK(ctx, cudnnBatchNormalizationBackwardEx(
                             dev->cudnn, p->mode, CUDNN_BATCHNORM_OPS_BN, &one, &zero, &one, &zero,
                             p->x_desc, in[1], NULL, NULL, p->x_desc, in[0], NULL, NULL, p->x_desc,
                             out[0], p->p_desc, in[2], NULL, out[1], out[2], p->eps, in[3], in[4],
                             NULL, p->ex_ws, p->ex_ws_bytes, NULL, 0));
        return OPSCHED_OK;
    }
    CUDNN_CHECK(ctx, cudnnBatchNormalizationBackward(dev->cudnn, p->mode, &one, &zero, &one, &zero,
                                                     p->x_desc, in[1], p->x_desc, in[0], p->x_desc,
                                                     out[0], p->p_desc, in[2], out[1], out[2],
                                                     p->eps, in[3], in[4]));
    return OPSCHED_OK;
}

/* Channels-last: spatial-persistent through the Ex calls when cuDNN wants no
 * reserve space for them; sizes their workspace.  Anything cuDNN refuses
 * keeps the plain spatial calls. */
static opsched_status try_ex(const cu_plan_args *a, bnt_plan *p, int grad)
{
    const cudnnBatchNormMode_t m = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
    cudnnTensorDescriptor_t pd = NULL;
    size_t reserve = 1, ws = 0;
    CUDNN_CHECK(a->ctx, cudnnCreateTensorDescriptor(&pd));
    int ok = cudnnDeriveBNTensorDescriptor(pd, p->x_desc, m) == CUDNN_STATUS_SUCCESS &&
             cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
                 a->dev->cudnn, m, CUDNN_BATCHNORM_OPS_BN, NULL, p->x_desc, &reserve) ==
                 CUDNN_STATUS_SUCCESS &&
             reserve == 0;
    if (ok && grad)
        ok = cudnnGetBatchNormalizationBackwardExWorkspaceSize(
                 a->dev->cudnn, m, CUDNN_BATCHNORM_OPS_BN, p->x_desc, NULL, p->x_desc, NULL,
                 p->x_desc, pd, NULL, &ws) == CUDNN_STATUS_SUCCESS;
    else if (ok)
        ok = cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
                 a->dev->cudnn, m, CUDNN_BATCHNORM_OPS_BN, p->x_desc, NULL, p->x_desc, pd, NULL,
                 &ws) == CUDNN_STATUS_SUCCESS;
    (void)cudnnDestroyTensorDescriptor(pd);
    if (!ok) {
        os_log(a->ctx, OPSCHED_LOG_DEBUG,
               "cuda: node '%s': channels-last batch norm stays in spatial mode "
               "(spatial-persistent: reserve %zu bytes, or refused)",
               a->node->name, reserve);
        return OPSCHED_OK;
    }
    p->ex = 1;
    p->mode = m;
    p->ex_ws_bytes = ws;
    return OPSCHED_OK;
}

static opsched_status plan_bn(const cu_plan_args *a, int grad, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, grad ? 1 : 0);
    for (int i = 0; i < a->node->n_inputs; i++) {
        const opsched_tensor *t = cu_in(a, i);
        if (!t || !cu_dtype_is_float(t->dtype))
            return CU_UNSUPPORTED(a, "%s of %s data", opsched_op_name(a->node->op),
                                  t ? opsched_dtype_name(t->dtype) : "missing");
    }
    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(bnt_plan), grad ? bn_grad_launch : bn_train_launch, bnt_release,
                         &base));
    bnt_plan *p = (bnt_plan *)base;
    opsched_status st = OPSCHED_OK;
    p->kt = a->kt;
    p->N = x->shape.d[0];
    p->C = x->shape.d[1];
    p->S = 1;
    for (int i = 2; i < x->shape.ndim; i++)
        p->S *= x->shape.d[i];
    p->nhwc = cu_is_nhwc(a, x);
    p->eps = a->node->attr.bn.epsilon;
    /* Spatial in NCHW.  Channels-last as PyTorch runs it: spatial-persistent through the Ex
     * calls with their workspace (taken when cuDNN asks for no reserve space, which only an
     * activation fused into the batch norm needs); the plain calls ran ResNet-50's
     * channels-last batch norms 15 times slower than NCHW's. */
    p->mode = CUDNN_BATCHNORM_SPATIAL;
    int64_t h = p->S, w = 1; /* a 4-D tensor keeps its H and W */
    if (x->shape.ndim == 4) {
        h = x->shape.d[2];
        w = x->shape.d[3];
    }
    int fits = cu_fits_int(p->N) && cu_fits_int(p->C) && cu_fits_int(p->S) &&
               cu_fits_int(p->N * p->C * p->S);
    if (a->dt == OPSCHED_F32 && fits && p->eps >= CUDNN_BN_MIN_EPSILON) {
        CUDNN_CHECK_GOTO(a->ctx, st, cudnnCreateTensorDescriptor(&p->x_desc), fail);
        CUDNN_CHECK_GOTO(a->ctx, st, cudnnCreateTensorDescriptor(&p->p_desc), fail);
        CUDNN_CHECK_GOTO(
            a->ctx, st,
            cudnnSetTensor4dDescriptor(p->x_desc, p->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                       CUDNN_DATA_FLOAT, (int)p->N, (int)p->C, (int)h, (int)w),
            fail);
        if (p->nhwc) OS_TRY_GOTO(st, try_ex(a, p, grad), fail);
        CUDNN_CHECK_GOTO(a->ctx, st, cudnnDeriveBNTensorDescriptor(p->p_desc, p->x_desc, p->mode),
                         fail);
        size_t running = grad ? 0 : ((size_t)(2 * p->C) * sizeof(float) + 255) / 256 * 256;
        base->workspace_bytes = running + p->ex_ws_bytes;
        if (base->workspace_bytes) {
            OS_TRY_GOTO(st, cu_malloc(a->ctx, base->workspace_bytes, &base->workspace), fail);
            CUDA_CHECK_GOTO(a->ctx, st, cudaMemset(base->workspace, 0, base->workspace_bytes),
                            fail);
        }
        if (!grad) p->running = base->workspace;
        if (p->ex_ws_bytes) p->ex_ws = (char *)base->workspace + running;
        p->use_cudnn = 1;
    }
    snprintf(a->info->algo, sizeof(a->info->algo), "%s",
             p->ex          ? "cudnn_persistent"
             : p->use_cudnn ? "cudnn"
                            : "kernel");
    *out = base;
    return OPSCHED_OK;
fail:
    cu_plan_destroy(base);
    return st;
}

opsched_status cu_plan_batchnorm_train(const cu_plan_args *a, cu_plan **out)
{
    return plan_bn(a, 0, out);
}

opsched_status cu_plan_batchnorm_grad(const cu_plan_args *a, cu_plan **out)
{
    return plan_bn(a, 1, out);
}

/* ---- a convolution's filter gradient ----------------------------------- */

static const char *const bwd_filter_names[] = {
    "bwd_filter_0",         "bwd_filter_1",        "bwd_filter_fft",
    "bwd_filter_3",         "bwd_filter_winograd", "bwd_filter_winograd_nonfused",
    "bwd_filter_fft_tiling"};

typedef struct gf_plan {
    cu_plan base;
    cudnnTensorDescriptor_t x_desc, dy_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv_desc;
    cudnnConvolutionBwdFilterAlgo_t algo;
    int pad_input; /* x padded into the start of the workspace first */
    cuk_pad_desc pad;
    size_t elem, scratch_bytes;
} gf_plan;

static void gf_release(cu_plan *base)
{
    gf_plan *p = (gf_plan *)base;
    if (p->x_desc) (void)cudnnDestroyTensorDescriptor(p->x_desc);
    if (p->dy_desc) (void)cudnnDestroyTensorDescriptor(p->dy_desc);
    if (p->w_desc) (void)cudnnDestroyFilterDescriptor(p->w_desc);
    if (p->conv_desc) (void)cudnnDestroyConvolutionDescriptor(p->conv_desc);
}

static opsched_status gf_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                void *const *in, void *const *out)
{
    gf_plan *p = (gf_plan *)base;
    const float one = 1.0f, zero = 0.0f;
    const void *x = in[0];
    if (p->pad_input) {
        CUDA_CHECK(ctx, cuk_pad(p->elem, &p->pad, in[0], base->workspace, s));
        x = base->workspace;
    }
    void *ws = (char *)base->workspace + p->scratch_bytes;
    size_t ws_bytes = base->workspace_bytes - p->scratch_bytes;
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    CUDNN_CHECK(ctx, cudnnConvolutionBackwardFilter(
                         dev->cudnn, &one, p->x_desc, x, p->dy_desc, in[1], p->conv_desc, p->algo,
                         ws_bytes ? ws : NULL, ws_bytes, &zero, p->w_desc, out[0]));
    return OPSCHED_OK;
}

/* The first heuristic algorithm that runs within `limit` bytes. */
static opsched_status gf_pick(const cu_plan_args *a, gf_plan *p, size_t limit, size_t *ws_bytes)
{
    cudnnConvolutionBwdFilterAlgoPerf_t perf[8];
    int n = 0;
    CUDNN_CHECK(a->ctx, cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                            a->dev->cudnn, p->x_desc, p->dy_desc, p->conv_desc, p->w_desc,
                            (int)OS_ARRAY_LEN(perf), &n, perf));
    for (int k = 0; k < n; k++) {
        const cudnnConvolutionBwdFilterAlgoPerf_t *r = &perf[k];
        if (r->status != CUDNN_STATUS_SUCCESS || r->memory > limit) continue;
        if ((int)r->algo < 0 || (int)r->algo >= (int)OS_ARRAY_LEN(bwd_filter_names)) continue;
        if (!cu_conv_math_ok(a, r->mathType)) continue;
        OS_TRY(cu_conv_set_math(a, p->conv_desc, r->mathType));
        size_t bytes = 0;
        if (cudnnGetConvolutionBackwardFilterWorkspaceSize(a->dev->cudnn, p->x_desc, p->dy_desc,
                                                           p->conv_desc, p->w_desc, r->algo,
                                                           &bytes) != CUDNN_STATUS_SUCCESS ||
            bytes > limit)
            continue;
        p->algo = r->algo;
        *ws_bytes = bytes;
        return OPSCHED_OK;
    }
    return CU_UNSUPPORTED(a,
                          "no cuDNN backward-filter algorithm runs this convolution within %zu "
                          "bytes of workspace (%s)",
                          limit, opsched_math_name(a->opts->math));
}

opsched_status cu_plan_conv_grad_filter(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0), *dy = cu_in(a, 1), *w = cu_out(a, 0);
    const opsched_conv_attr *c = &a->node->attr.conv;
    if (!x || !dy || !w || x->shape.ndim != 4 || dy->shape.ndim != 4 || w->shape.ndim != 4)
        return CU_UNSUPPORTED(a, "only 2-D convolutions have a filter gradient");
    if (!cu_dtype_is_float(x->dtype) || !cu_dtype_is_float(dy->dtype))
        return CU_UNSUPPORTED(a, "filter gradient of %s data", opsched_dtype_name(x->dtype));
    const int nhwc = cu_is_nhwc(a, x);
    if (cu_is_nhwc(a, dy) != nhwc || cu_is_nhwc(a, w) != nhwc)
        return CU_UNSUPPORTED(a, "the input, the gradient and the filter gradient are stored in "
                                 "different layouts");
    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(gf_plan), gf_launch, gf_release, &base));
    gf_plan *p = (gf_plan *)base;
    opsched_status st = OPSCHED_OK;
    p->elem = opsched_dtype_size(a->dt);
    const int64_t N = x->shape.d[0], C = x->shape.d[1], M = dy->shape.d[1];
    const int64_t g = c->groups ? c->groups : 1;
    int64_t sym[2], ex0[2], ex1[2], hw[2];
    for (int i = 0; i < 2; i++) {
        sym[i] = OS_MIN(c->pads[i], c->pads[2 + i]);
        ex0[i] = c->pads[i] - sym[i];
        ex1[i] = c->pads[2 + i] - sym[i];
        hw[i] = x->shape.d[2 + i] + ex0[i] + ex1[i];
    }
    int64_t vals[] = {N,
                      C,
                      M,
                      hw[0],
                      hw[1],
                      c->kernel[0],
                      c->kernel[1],
                      sym[0],
                      sym[1],
                      c->stride[0],
                      c->stride[1],
                      c->dilation[0],
                      c->dilation[1],
                      g,
                      N * C * hw[0] * hw[1],
                      opsched_shape_numel(&dy->shape)};
    for (size_t i = 0; i < OS_ARRAY_LEN(vals); i++)
        if (!cu_fits_int(vals[i]) || vals[i] < 0) {
            st = CU_UNSUPPORTED(a, "dimensions beyond cuDNN's 32-bit limits");
            goto fail;
        }
    if (ex0[0] || ex0[1] || ex1[0] || ex1[1]) {
        const int64_t in[4] = {N, C, x->shape.d[2], x->shape.d[3]};
        const int64_t outd[4] = {N, C, hw[0], hw[1]}, beg[4] = {0, 0, ex0[0], ex0[1]};
        int order[4];
        int64_t strides[4];
        cu_mem_order(a, x, order);
        cu_strides(a, x, strides);
        p->pad.ndim = 4;
        p->pad.mode = CUK_PAD_CONSTANT;
        p->pad.value = 0;
        for (int i = 0; i < 4; i++) {
            p->pad.out_shape[i] = outd[order[i]];
            p->pad.in_shape[i] = in[order[i]];
            p->pad.in_stride[i] = strides[order[i]];
            p->pad.begin[i] = beg[order[i]];
        }
        p->pad_input = 1;
        p->scratch_bytes = ((size_t)(N * C * hw[0] * hw[1]) * p->elem + 255) / 256 * 256;
    }
    cudnnTensorFormat_t fmt = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    cudnnDataType_t dt = cu_cudnn_type(a->dt);
    CUDNN_CHECK_GOTO(a->ctx, st, cudnnCreateTensorDescriptor(&p->x_desc), fail);
    CUDNN_CHECK_GOTO(a->ctx, st, cudnnCreateTensorDescriptor(&p->dy_desc), fail);
    CUDNN_CHECK_GOTO(a->ctx, st, cudnnCreateFilterDescriptor(&p->w_desc), fail);
    CUDNN_CHECK_GOTO(a->ctx, st, cudnnCreateConvolutionDescriptor(&p->conv_desc), fail);
    CUDNN_CHECK_GOTO(
        a->ctx, st,
        cudnnSetTensor4dDescriptor(p->x_desc, fmt, dt, (int)N, (int)C, (int)hw[0], (int)hw[1]),
        fail);
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnSetTensor4dDescriptor(p->dy_desc, fmt, dt, (int)N, (int)M,
                                                (int)dy->shape.d[2], (int)dy->shape.d[3]),
                     fail);
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnSetFilter4dDescriptor(p->w_desc, dt, fmt, (int)M, (int)(C / g),
                                                (int)c->kernel[0], (int)c->kernel[1]),
                     fail);
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnSetConvolution2dDescriptor(p->conv_desc, (int)sym[0], (int)sym[1],
                                                     (int)c->stride[0], (int)c->stride[1],
                                                     (int)c->dilation[0], (int)c->dilation[1],
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                     fail);
    CUDNN_CHECK_GOTO(a->ctx, st, cudnnSetConvolutionGroupCount(p->conv_desc, (int)g), fail);
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnSetConvolutionMathType(p->conv_desc, a->opts->math == OPSCHED_MATH_FP32
                                                                   ? CUDNN_FMA_MATH
                                                                   : CUDNN_DEFAULT_MATH),
                     fail);
    int on = 0, oc = 0, oh = 0, ow = 0;
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnGetConvolution2dForwardOutputDim(p->conv_desc, p->x_desc, p->w_desc, &on,
                                                           &oc, &oh, &ow),
                     fail);
    if (on != N || oc != M || oh != dy->shape.d[2] || ow != dy->shape.d[3]) {
        st = OS_FAIL(a->ctx, OPSCHED_ERR_BACKEND,
                     "cuda: node '%s': cuDNN's convolution gives a %dx%dx%dx%d output, the "
                     "gradient is %lldx%lldx%lldx%lld",
                     a->node->name, on, oc, oh, ow, (long long)N, (long long)M,
                     (long long)dy->shape.d[2], (long long)dy->shape.d[3]);
        goto fail;
    }
    size_t limit = a->opts->workspace_limit ? a->opts->workspace_limit : cu_free_memory();
    limit = limit > p->scratch_bytes ? limit - p->scratch_bytes : 0;
    size_t ws = 0;
    OS_TRY_GOTO(st, gf_pick(a, p, limit, &ws), fail);
    base->workspace_bytes = p->scratch_bytes + ws;
    if (base->workspace_bytes)
        OS_TRY_GOTO(st, cu_malloc(a->ctx, base->workspace_bytes, &base->workspace), fail);
    snprintf(a->info->algo, sizeof(a->info->algo), "%s", bwd_filter_names[p->algo]);
    *out = base;
    return OPSCHED_OK;
fail:
    cu_plan_destroy(base);
    return st;
}
