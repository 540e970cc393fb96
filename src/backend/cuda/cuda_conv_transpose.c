/*
 * cuda_conv_transpose.c - 2-D ConvTranspose (3-D: cuda_conv3d.c) through cuDNN's backward-data
 * convolution (cudnnConvolutionBackwardData): the transposed convolution
 * of X with W [C, M / groups, kh, kw] is the gradient, with respect to its
 * input, of the forward convolution from M channels to C whose filter is
 * W, evaluated at dy = X.  Groups, strides and dilations carry over as
 * they are.
 *
 * cuDNN pads symmetrically and sizes the result from the forward
 * convolution, so the full result F = (in - 1) * stride + dilation * (k -
 * 1) + 1 is computed with the symmetric part of the padding (the start's
 * padding or the end's less output_padding, whichever is smaller: the
 * elements output_padding adds are real results), into a scratch tensor when anything is left over: the excess
 * padding at the start is a crop, the excess at the end and output_padding
 * a shorter or longer extent (elements past F are zero, as they are in the
 * transposed convolution: no tap reaches them).  The copy from scratch to
 * Y is the pad kernel with a negative begin.  The bias is added after, by
 * the same per-channel kernel as a convolution's.
 *
 * Algorithm: the first result of cudnnGetConvolutionBackwardDataAlgorithm_v7
 * that cuDNN can run within the workspace limit, in a math type the mode
 * allows ("heuristic", "find" and their _v7 names all plan this way;
 * forward algorithm names do not apply and are refused as unsupported).
 * The workspace holds the scratch tensor, then cuDNN's workspace.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

static const char *const bwd_names[] = {"bwd_data_0",          "bwd_data_1",
                                        "bwd_data_fft",        "bwd_data_fft_tiling",
                                        "bwd_data_winograd",   "bwd_data_winograd_nonfused"};

typedef struct ct_plan {
    cu_plan base;
    cudnnTensorDescriptor_t x_desc, d_desc; /* dy (the input) and dx (Y or the scratch) */
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv_desc;
    cudnnConvolutionBwdDataAlgo_t algo;
    cuk_type kt;
    size_t elem;
    int crop; /* cuDNN writes the scratch; a copy takes Y out of it */
    cuk_pad_desc pad;
    size_t scratch_bytes; /* at the start of the workspace (256-byte multiple) */
    cu_conv_bias bias;
} ct_plan;

static void ct_release(cu_plan *base)
{
    ct_plan *p = (ct_plan *)base;
    if (p->x_desc) (void)cudnnDestroyTensorDescriptor(p->x_desc);
    if (p->d_desc) (void)cudnnDestroyTensorDescriptor(p->d_desc);
    if (p->w_desc) (void)cudnnDestroyFilterDescriptor(p->w_desc);
    if (p->conv_desc) (void)cudnnDestroyConvolutionDescriptor(p->conv_desc);
}

static opsched_status ct_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                void *const *in, void *const *out)
{
    ct_plan *p = (ct_plan *)base;
    const float one = 1.0f, zero = 0.0f;
    void *dx = p->crop ? base->workspace : out[0];
    void *ws = (char *)base->workspace + p->scratch_bytes;
    size_t ws_bytes = base->workspace_bytes - p->scratch_bytes;
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    CUDNN_CHECK(ctx, cudnnConvolutionBackwardData(dev->cudnn, &one, p->w_desc, in[1], p->x_desc,
                                                  in[0], p->conv_desc, p->algo,
                                                  ws_bytes ? ws : NULL, ws_bytes, &zero,
                                                  p->d_desc, dx));
    if (p->crop) CUDA_CHECK(ctx, cuk_pad(p->elem, &p->pad, dx, out[0], s));
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

/* Contiguous strides of a [n, c, h, w] tensor stored as the plan stores
 * 4-D tensors. */
static void strides4(int nhwc, const int64_t *dims, int64_t *st)
{
    if (nhwc) {
        st[1] = 1;
        st[3] = dims[1];
        st[2] = dims[3] * dims[1];
        st[0] = dims[2] * st[2];
    } else {
        st[3] = 1;
        st[2] = dims[3];
        st[1] = dims[2] * dims[3];
        st[0] = dims[1] * st[1];
    }
}

/* Picks the algorithm and sizes cuDNN's workspace. */
static opsched_status pick(const cu_plan_args *a, ct_plan *p, size_t limit, size_t *ws_bytes)
{
    cudnnConvolutionBwdDataAlgoPerf_t perf[8];
    int n = 0;
    CUDNN_CHECK(a->ctx, cudnnGetConvolutionBackwardDataAlgorithm_v7(
                            a->dev->cudnn, p->w_desc, p->x_desc, p->conv_desc, p->d_desc,
                            (int)OS_ARRAY_LEN(perf), &n, perf));
    for (int k = 0; k < n; k++) {
        const cudnnConvolutionBwdDataAlgoPerf_t *r = &perf[k];
        if (r->status != CUDNN_STATUS_SUCCESS || r->memory > limit) continue;
        if ((int)r->algo < 0 || (int)r->algo >= (int)OS_ARRAY_LEN(bwd_names)) continue;
        if (!cu_conv_math_ok(a, r->mathType)) continue;
        OS_TRY(cu_conv_set_math(a, p->conv_desc, r->mathType));
        size_t bytes = 0;
        if (cudnnGetConvolutionBackwardDataWorkspaceSize(a->dev->cudnn, p->w_desc, p->x_desc,
                                                         p->conv_desc, p->d_desc, r->algo,
                                                         &bytes) != CUDNN_STATUS_SUCCESS ||
            bytes > limit)
            continue;
        p->algo = r->algo;
        *ws_bytes = bytes;
        return OPSCHED_OK;
    }
    return CU_UNSUPPORTED(a, "no cuDNN backward-data algorithm runs this transposed convolution "
                             "within %zu bytes of workspace (%s)",
                          limit, opsched_math_name(a->opts->math));
}

opsched_status cu_plan_conv_transpose(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0), *w = cu_in(a, 1), *y = cu_out(a, 0);
    const opsched_conv_transpose_attr *c = &a->node->attr.conv_transpose;
    if (x && x->shape.ndim == 5) return cu_plan_conv_3d(a, out);
    if (!x || !w || !y || x->shape.ndim != 4 || w->shape.ndim != 4 || y->shape.ndim != 4)
        return CU_UNSUPPORTED(a, "only 2-D and 3-D transposed convolution (4-D and 5-D tensors) "
                                 "is supported");
    if (!cu_dtype_is_float(x->dtype) || !cu_dtype_is_float(w->dtype))
        return CU_UNSUPPORTED(a, "transposed convolution of %s data",
                              opsched_dtype_name(x->dtype));
    const char *algo = a->opts->algo;
    if (algo && strcmp(algo, "heuristic") != 0 && strcmp(algo, "find") != 0 &&
        strcmp(algo, "heuristic_v7") != 0 && strcmp(algo, "find_v7") != 0)
        return CU_UNSUPPORTED(a, "%s is a forward convolution algorithm; ConvTranspose runs "
                                 "cuDNN's backward-data convolution",
                              algo);

    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(ct_plan), ct_launch, ct_release, &base));
    ct_plan *p = (ct_plan *)base;
    opsched_status st = OPSCHED_OK;
    p->kt = a->kt;
    p->elem = opsched_dtype_size(a->dt);
    const int nhwc = a->opts->layout == OPSCHED_LAYOUT_NHWC;
    const int64_t N = x->shape.d[0], C = x->shape.d[1], H = x->shape.d[2], W = x->shape.d[3];
    const int64_t g = c->groups ? c->groups : 1, M = y->shape.d[1];
    int64_t sym[2], ex[2], full[2], dims[4] = {N, M, 0, 0};
    for (int i = 0; i < 2; i++) {
        int64_t in = x->shape.d[2 + i];
        /* output_padding reaches that many elements into the end padding,
         * which a symmetric cuDNN padding would cut away */
        sym[i] = OS_MIN(c->pads[i], OS_MAX(0, c->pads[i + 2] - c->output_padding[i]));
        ex[i] = c->pads[i] - sym[i];
        full[i] = (in - 1) * c->stride[i] + c->dilation[i] * (c->kernel[i] - 1) + 1;
        dims[2 + i] = full[i] - 2 * sym[i];
    }
    int64_t vals[] = {N, C, H, W, M, c->kernel[0], c->kernel[1], sym[0], sym[1], c->stride[0],
                      c->stride[1], c->dilation[0], c->dilation[1], g, dims[2], dims[3],
                      N * C * H * W, N * M * dims[2] * dims[3], M / g};
    for (size_t i = 0; i < OS_ARRAY_LEN(vals); i++)
        if (!cu_fits_int(vals[i]) || vals[i] < 0) {
            st = CU_UNSUPPORTED(a, "dimensions beyond cuDNN's 32-bit limits");
            goto fail;
        }
    if (dims[2] < 1 || dims[3] < 1) {
        st = CU_UNSUPPORTED(a, "padding larger than the transposed convolution's result");
        goto fail;
    }
    p->crop = ex[0] || ex[1] || dims[2] != y->shape.d[2] || dims[3] != y->shape.d[3];

    cudnnTensorFormat_t fmt = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    cudnnDataType_t dt = cu_cudnn_type(a->dt);
    CUDNN_CHECK_GOTO(a->ctx, st, cudnnCreateTensorDescriptor(&p->x_desc), fail);
    CUDNN_CHECK_GOTO(a->ctx, st, cudnnCreateTensorDescriptor(&p->d_desc), fail);
    CUDNN_CHECK_GOTO(a->ctx, st, cudnnCreateFilterDescriptor(&p->w_desc), fail);
    CUDNN_CHECK_GOTO(a->ctx, st, cudnnCreateConvolutionDescriptor(&p->conv_desc), fail);
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnSetTensor4dDescriptor(p->x_desc, fmt, dt, (int)N, (int)C, (int)H, (int)W),
                     fail);
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnSetTensor4dDescriptor(p->d_desc, fmt, dt, (int)N, (int)M, (int)dims[2],
                                                (int)dims[3]),
                     fail);
    /* the forward filter: C outputs from M / g inputs per group */
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnSetFilter4dDescriptor(p->w_desc, dt, fmt, (int)C, (int)(M / g),
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
                     cudnnSetConvolutionMathType(p->conv_desc, initial_math(a->opts->math)), fail);
    int fn = 0, fc = 0, fh = 0, fw = 0;
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnGetConvolution2dForwardOutputDim(p->conv_desc, p->d_desc, p->w_desc,
                                                           &fn, &fc, &fh, &fw),
                     fail);
    if (fn != N || fc != C || fh != H || fw != W) {
        st = OS_FAIL(a->ctx, OPSCHED_ERR_BACKEND,
                     "cuda: node '%s': cuDNN's forward convolution of the %lldx%lldx%lldx%lld "
                     "result gives %dx%dx%dx%d, not the input %lldx%lldx%lldx%lld",
                     a->node->name, (long long)N, (long long)M, (long long)dims[2],
                     (long long)dims[3], fn, fc, fh, fw, (long long)N, (long long)C, (long long)H,
                     (long long)W);
        goto fail;
    }

    if (p->crop) {
        /* y[i] = scratch[i + ex] inside the scratch, 0 past it */
        int order[4];
        int64_t ss[4];
        const int64_t ydims[4] = {N, M, y->shape.d[2], y->shape.d[3]};
        const int64_t begin[4] = {0, 0, -ex[0], -ex[1]};
        cu_mem_order(a, y, order);
        strides4(nhwc, dims, ss);
        p->pad.ndim = 4;
        p->pad.mode = CUK_PAD_CONSTANT;
        p->pad.value = 0;
        for (int i = 0; i < 4; i++) {
            p->pad.out_shape[i] = ydims[order[i]];
            p->pad.in_shape[i] = dims[order[i]];
            p->pad.in_stride[i] = ss[order[i]];
            p->pad.begin[i] = begin[order[i]];
        }
        p->scratch_bytes = ((size_t)(N * M * dims[2] * dims[3]) * p->elem + 255) / 256 * 256;
    }
    size_t limit = a->opts->workspace_limit ? a->opts->workspace_limit : cu_free_memory();
    size_t ws = 0;
    limit = limit > p->scratch_bytes ? limit - p->scratch_bytes : 0;
    OS_TRY_GOTO(st, pick(a, p, limit, &ws), fail);
    base->workspace_bytes = p->scratch_bytes + ws;
    if (base->workspace_bytes)
        OS_TRY_GOTO(st, cu_malloc(a->ctx, base->workspace_bytes, &base->workspace), fail);
    cu_conv_bias_init(a, &p->bias);
    snprintf(a->info->algo, sizeof(a->info->algo), "%s", bwd_names[p->algo]);
    a->info->fused_activation = 0;
    *out = base;
    return OPSCHED_OK;
fail:
    cu_plan_destroy(base);
    return st;
}
