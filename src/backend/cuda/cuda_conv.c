/*
 * cuda_conv.c - 2-D convolution: which path plans it (3-D goes to
 * cuda_conv3d.c), and the path through
 * cuDNN's legacy API (cudnnConvolutionForward) with every forward algorithm
 * selectable.
 *
 * Algorithm choice: "heuristic" (or NULL) and "find" go to cuDNN's graph
 * API (cuda_conv_graph.c), as PyTorch does with cudnn.benchmark off and on;
 * both also time the own kernel of depthwise and grouped convolutions with
 * few channels a group against cuDNN's choice, and "own" takes that kernel
 * (unsupported for any other convolution); both time a 1x1 convolution as
 * a cuBLASLt product too, and "cublaslt" takes that product (unsupported
 * for any other convolution), or, with a bias and an activation cuBLASLt's
 * epilogue lacks, the three as one cuDNN graph, which "cudnn_matmul" takes;
 * and a grouped one in NHWC as its columns and one batched cuBLASLt
 * product, which "im2col" takes.
 * The legacy API stays under explicit names: "heuristic_v7" takes the first
 * result of cudnnGetConvolutionForwardAlgorithm_v7 that fits the workspace
 * limit; "find_v7" measures with cudnnFindConvolutionForwardAlgorithmEx on
 * scratch buffers allocated (and freed) at plan time; a named algorithm is
 * checked against the heuristic's per-algorithm status and its workspace
 * query, and "not supported" comes back as OPSCHED_ERR_UNSUPPORTED naming it
 * and the configuration.  After the choice the descriptor takes the math type
 * the result was measured with (cuDNN 7.4+ needs algo + math type together),
 * except in strict fp32, which stays CUDNN_FMA_MATH.
 *
 * The legacy API pads symmetrically only: the symmetric part of the node's padding
 * goes to cuDNN and the excess (e.g. TensorFlow's "SAME" bottom/right) is
 * written by a pad kernel into a scratch copy of the input owned by the plan.
 * Bias is added by a per-channel kernel after the convolution; a following
 * Relu is never fused here (plan info reports fused_activation = 0); the
 * graph-API path fuses both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

const char *const cu_conv_algo_names[CU_N_CONV_ALGOS] = {
    "implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
    "winograd",      "winograd_nonfused"};

typedef struct conv_plan {
    cu_plan base;
    cudnnTensorDescriptor_t x_desc, y_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv_desc;
    cudnnConvolutionFwdAlgo_t algo;
    cuk_type kt;
    int pad_input; /* run `pad` into `padded` first */
    cuk_pad_desc pad;
    void *padded;
    cu_conv_bias bias;
} conv_plan;

/* What a plan is working on, for messages. */
typedef struct conv_shape {
    int64_t n, c, h, w; /* input as cuDNN sees it (padded) */
    int64_t m, kh, kw, oh, ow;
    int64_t groups;
} conv_shape;

static void conv_release(cu_plan *base)
{
    conv_plan *p = (conv_plan *)base;
    if (p->x_desc) (void)cudnnDestroyTensorDescriptor(p->x_desc);
    if (p->y_desc) (void)cudnnDestroyTensorDescriptor(p->y_desc);
    if (p->w_desc) (void)cudnnDestroyFilterDescriptor(p->w_desc);
    if (p->conv_desc) (void)cudnnDestroyConvolutionDescriptor(p->conv_desc);
    if (p->padded) (void)cudaFree(p->padded);
}

static opsched_status conv_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                  void *const *in, void *const *out)
{
    conv_plan *p = (conv_plan *)base;
    const float one = 1.0f, zero = 0.0f;
    const void *x = in[0];
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    if (p->pad_input) {
        CUDA_CHECK(ctx, cuk_pad(p->kt == CUK_F32 ? 4 : 2, &p->pad, in[0], p->padded, s));
        x = p->padded;
    }
    CUDNN_CHECK(ctx, cudnnConvolutionForward(dev->cudnn, &one, p->x_desc, x, p->w_desc, in[1],
                                             p->conv_desc, p->algo, base->workspace,
                                             base->workspace_bytes, &zero, p->y_desc, out[0]));
    return cu_conv_bias_add(ctx, &p->bias, p->kt, base->n_in > 2 ? in[2] : NULL, out[0], s);
}

void cu_conv_bias_init(const cu_plan_args *a, cu_conv_bias *b)
{
    const opsched_tensor *y = cu_out(a, 0);
    memset(b, 0, sizeof(*b));
    b->on = cu_in(a, 2) != NULL;
    b->numel = opsched_shape_numel(&y->shape);
    b->channels = y->shape.d[1];
    int64_t spatial = 1;
    for (int i = 2; i < y->shape.ndim; i++)
        spatial *= y->shape.d[i];
    b->channel_stride = cu_is_nhwc(a, y) ? 1 : spatial;
}

int cu_node_index(const cu_plan_args *a)
{
    if (!a->g) return -1;
    const opsched_node *first = opsched_graph_node(a->g, 0);
    ptrdiff_t i = first ? a->node - first : -1;
    if (i < 0 || i >= opsched_graph_num_nodes(a->g) || opsched_graph_node(a->g, (int)i) != a->node)
        return -1;
    return (int)i;
}

void cu_act_of(const cu_plan_args *a, int j, cu_act *act)
{
    memset(act, 0, sizeof(*act));
    if (j < 0) return;
    act->on = 1;
    act->node = opsched_graph_node(a->g, j);
    cu_unary_fn_of(act->node, &act->fn, &act->prm);
}

void cu_act_for(const cu_plan_args *a, cu_act *act)
{
    int i = cu_node_index(a);
    cu_act_of(a, a->opts->fuse_activation && i >= 0 ? opsched_node_epilogue(a->g, i) : -1, act);
}

opsched_status cu_conv_bias_add(opsched_ctx *ctx, const cu_conv_bias *b, cuk_type kt,
                                const void *bias, void *y, cudaStream_t s)
{
    int relu = b->act.on && b->act.fn == CUK_U_RELU;
    if (b->on || relu)
        CUDA_CHECK(ctx, cuk_bias_add(kt, b->numel, b->channels, b->channel_stride,
                                     b->on ? bias : NULL, relu, y, s));
    if (b->act.on && !relu)
        CUDA_CHECK(ctx, cuk_ew_unary(b->act.fn, &b->act.prm, (cuk_dtype)kt, (cuk_dtype)kt,
                                     b->numel, y, y, s));
    return OPSCHED_OK;
}

static const char *layout_name(const cu_plan_args *a)
{
    return a->opts->layout == OPSCHED_LAYOUT_NHWC ? "NHWC" : "NCHW";
}

static void describe(const cu_plan_args *a, const conv_shape *cs, char *buf, size_t size)
{
    const opsched_conv_attr *c = &a->node->attr.conv;
    snprintf(buf, size,
             "kernel %lldx%lld, stride %lldx%lld, dilation %lldx%lld, groups %lld, "
             "input %lldx%lldx%lldx%lld, %lld outputs, %s, %s",
             (long long)cs->kh, (long long)cs->kw, (long long)c->stride[0], (long long)c->stride[1],
             (long long)c->dilation[0], (long long)c->dilation[1], (long long)cs->groups,
             (long long)cs->n, (long long)cs->c, (long long)cs->h, (long long)cs->w,
             (long long)cs->m, opsched_math_name(a->opts->math), layout_name(a));
}

static cudnnMathType_t initial_math(opsched_math m)
{
    switch (m) {
    case OPSCHED_MATH_FP32:
        return CUDNN_FMA_MATH;
    case OPSCHED_MATH_TF32:
        return CUDNN_DEFAULT_MATH; /* TF32 allowed on Ampere and later */
    default:
        return CUDNN_TENSOR_OP_MATH;
    }
}

/* A result cuDNN reports as runnable, in a math type the mode allows. */
static int usable(const cu_plan_args *a, const cudnnConvolutionFwdAlgoPerf_t *r)
{
    if (r->status != CUDNN_STATUS_SUCCESS) return 0;
    if ((int)r->algo < 0 || (int)r->algo >= CU_N_CONV_ALGOS) return 0;
    return cu_conv_math_ok(a, r->mathType);
}

static opsched_status set_math(const cu_plan_args *a, conv_plan *p, cudnnMathType_t m)
{
    return cu_conv_set_math(a, p->conv_desc, m);
}

/* The heuristic's view of every algorithm; *n results in *perf (malloc'd). */
static opsched_status heuristic_list(const cu_plan_args *a, conv_plan *p,
                                     cudnnConvolutionFwdAlgoPerf_t **perf, int *n)
{
    int max = 0;
    CUDNN_CHECK(a->ctx, cudnnGetConvolutionForwardAlgorithmMaxCount(a->dev->cudnn, &max));
    if (max < CU_N_CONV_ALGOS) max = CU_N_CONV_ALGOS;
    *perf = calloc((size_t)max, sizeof(**perf));
    if (!*perf) return OS_NOMEM(a->ctx);
    cudnnStatus_t e = cudnnGetConvolutionForwardAlgorithm_v7(
        a->dev->cudnn, p->x_desc, p->w_desc, p->conv_desc, p->y_desc, max, n, *perf);
    if (e != CUDNN_STATUS_SUCCESS) {
        free(*perf);
        *perf = NULL;
        return cu_fail_cudnn(a->ctx, e, "cudnnGetConvolutionForwardAlgorithm_v7", __FILE__,
                             __LINE__);
    }
    return OPSCHED_OK;
}

static opsched_status pick_heuristic(const cu_plan_args *a, conv_plan *p, const conv_shape *cs,
                                     size_t limit)
{
    cudnnConvolutionFwdAlgoPerf_t *perf = NULL;
    int n = 0;
    OS_TRY(heuristic_list(a, p, &perf, &n));
    int k = 0;
    while (k < n && !(usable(a, &perf[k]) && perf[k].memory <= limit))
        k++;
    opsched_status st = OPSCHED_OK;
    if (k == n) {
        char d[256];
        describe(a, cs, d, sizeof(d));
        st = CU_UNSUPPORTED(
            a,
            "heuristic_v7: no cuDNN algorithm runs this convolution within %zu bytes of "
            "workspace (%s)",
            limit, d);
    } else {
        p->algo = perf[k].algo;
        st = set_math(a, p, perf[k].mathType);
    }
    free(perf);
    return st;
}

static opsched_status pick_named(const cu_plan_args *a, conv_plan *p, const conv_shape *cs,
                                 int algo)
{
    cudnnConvolutionFwdAlgoPerf_t *perf = NULL;
    int n = 0, listed = 0, found = -1;
    OS_TRY(heuristic_list(a, p, &perf, &n));
    for (int k = 0; k < n && found < 0; k++) {
        if ((int)perf[k].algo != algo) continue;
        listed = 1;
        if (usable(a, &perf[k])) found = k;
    }
    opsched_status st = OPSCHED_OK;
    char d[256];
    describe(a, cs, d, sizeof(d));
    if (listed && found < 0)
        st = CU_UNSUPPORTED(a, "%s: cuDNN does not support this configuration (%s)",
                            cu_conv_algo_names[algo], d);
    else if (found >= 0)
        st = set_math(a, p, perf[found].mathType);
    free(perf);
    p->algo = (cudnnConvolutionFwdAlgo_t)algo;
    return st;
}

static size_t tensor_bytes(cudnnTensorDescriptor_t t)
{
    size_t b = 0;
    if (cudnnGetTensorSizeInBytes(t, &b) != CUDNN_STATUS_SUCCESS) return 0;
    return b;
}

/* Measures the algorithms on zeroed scratch tensors and a workspace as
 * large as the hungriest runnable algorithm wants (within the limit), and
 * keeps the fastest. */
static opsched_status pick_find(const cu_plan_args *a, conv_plan *p, const conv_shape *cs,
                                size_t limit, size_t w_bytes)
{
    cudnnConvolutionFwdAlgoPerf_t *perf = NULL;
    void *x = NULL, *w = NULL, *y = NULL, *ws = NULL;
    size_t ws_bytes = 0, x_bytes = tensor_bytes(p->x_desc), y_bytes = tensor_bytes(p->y_desc);
    int n = 0;
    opsched_status st = OPSCHED_OK;
    OS_TRY(heuristic_list(a, p, &perf, &n));
    for (int k = 0; k < n; k++)
        if (usable(a, &perf[k]) && perf[k].memory <= limit && perf[k].memory > ws_bytes)
            ws_bytes = perf[k].memory;
    OS_TRY_GOTO(st, cu_malloc(a->ctx, x_bytes, &x), done);
    OS_TRY_GOTO(st, cu_malloc(a->ctx, w_bytes, &w), done);
    OS_TRY_GOTO(st, cu_malloc(a->ctx, y_bytes, &y), done);
    CUDA_CHECK_GOTO(a->ctx, st, cudaMemset(x, 0, x_bytes), done);
    CUDA_CHECK_GOTO(a->ctx, st, cudaMemset(w, 0, w_bytes), done);
    /* A workspace that does not fit shrinks to what the next algorithm needs. */
    while (ws_bytes && cudaMalloc(&ws, ws_bytes) != cudaSuccess) {
        size_t next = 0;
        (void)cudaGetLastError();
        ws = NULL;
        for (int k = 0; k < n; k++)
            if (usable(a, &perf[k]) && perf[k].memory < ws_bytes && perf[k].memory > next)
                next = perf[k].memory;
        ws_bytes = next;
    }
    CUDNN_CHECK_GOTO(a->ctx, st, cudnnSetStream(a->dev->cudnn, a->dev->stream), done);
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnFindConvolutionForwardAlgorithmEx(a->dev->cudnn, p->x_desc, x, p->w_desc,
                                                            w, p->conv_desc, p->y_desc, y, n, &n,
                                                            perf, ws, ws_bytes),
                     done);
    int k = 0;
    while (k < n && !(usable(a, &perf[k]) && perf[k].memory <= ws_bytes))
        k++;
    if (k == n) {
        char d[256];
        describe(a, cs, d, sizeof(d));
        st = CU_UNSUPPORTED(a,
                            "find_v7: no cuDNN algorithm ran this convolution within %zu bytes "
                            "of workspace (%s)",
                            ws_bytes, d);
        goto done;
    }
    p->algo = perf[k].algo;
    st = set_math(a, p, perf[k].mathType);
done:
    free(perf);
    (void)cudaFree(ws);
    (void)cudaFree(x);
    (void)cudaFree(w);
    (void)cudaFree(y);
    (void)cudaGetLastError();
    return st;
}

/* Builds the descriptors: input (padded if needed), filter, conv, output. */
static opsched_status build_descs(const cu_plan_args *a, conv_plan *p, conv_shape *cs)
{
    const opsched_conv_attr *c = &a->node->attr.conv;
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    cudnnTensorFormat_t fmt =
        a->opts->layout == OPSCHED_LAYOUT_NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    cudnnDataType_t dt = cu_cudnn_type(a->dt);
    int64_t sym_h = OS_MIN(c->pads[0], c->pads[2]), sym_w = OS_MIN(c->pads[1], c->pads[3]);
    int64_t ex_t = c->pads[0] - sym_h, ex_b = c->pads[2] - sym_h;
    int64_t ex_l = c->pads[1] - sym_w, ex_r = c->pads[3] - sym_w;
    cs->n = x->shape.d[0];
    cs->c = x->shape.d[1];
    cs->h = x->shape.d[2] + ex_t + ex_b;
    cs->w = x->shape.d[3] + ex_l + ex_r;
    cs->m = y->shape.d[1];
    cs->oh = y->shape.d[2];
    cs->ow = y->shape.d[3];
    cs->kh = c->kernel[0];
    cs->kw = c->kernel[1];
    cs->groups = c->groups ? c->groups : 1;
    int64_t vals[] = {cs->n,
                      cs->c,
                      cs->h,
                      cs->w,
                      cs->m,
                      cs->kh,
                      cs->kw,
                      sym_h,
                      sym_w,
                      c->stride[0],
                      c->stride[1],
                      c->dilation[0],
                      c->dilation[1],
                      cs->groups,
                      cs->n * cs->c * cs->h * cs->w,
                      cs->n * cs->m * cs->oh * cs->ow};
    for (size_t i = 0; i < OS_ARRAY_LEN(vals); i++)
        if (!cu_fits_int(vals[i]))
            return CU_UNSUPPORTED(a, "dimensions beyond cuDNN's 32-bit limits");

    if (ex_t || ex_b || ex_l || ex_r) {
        cuk_pad_desc *pd = &p->pad;
        int64_t in[4] = {cs->n, cs->c, x->shape.d[2], x->shape.d[3]};
        int64_t outd[4] = {cs->n, cs->c, cs->h, cs->w}, beg[4] = {0, 0, ex_t, ex_l};
        int order[4] = {0, 1, 2, 3};
        int64_t st[4];
        cu_mem_order(a, x, order);
        cu_strides(a, x, st);
        pd->ndim = 4;
        pd->mode = CUK_PAD_CONSTANT;
        pd->value = 0; /* +0 in every float type */
        for (int i = 0; i < 4; i++) {
            pd->out_shape[i] = outd[order[i]];
            pd->in_shape[i] = in[order[i]];
            pd->in_stride[i] = st[order[i]];
            pd->begin[i] = beg[order[i]];
        }
        p->pad_input = 1;
        OS_TRY(cu_malloc(a->ctx,
                         (size_t)(cs->n * cs->c * cs->h * cs->w) * opsched_dtype_size(a->dt),
                         &p->padded));
    }

    CUDNN_CHECK(a->ctx, cudnnCreateTensorDescriptor(&p->x_desc));
    CUDNN_CHECK(a->ctx, cudnnCreateTensorDescriptor(&p->y_desc));
    CUDNN_CHECK(a->ctx, cudnnCreateFilterDescriptor(&p->w_desc));
    CUDNN_CHECK(a->ctx, cudnnCreateConvolutionDescriptor(&p->conv_desc));
    CUDNN_CHECK(a->ctx, cudnnSetTensor4dDescriptor(p->x_desc, fmt, dt, (int)cs->n, (int)cs->c,
                                                   (int)cs->h, (int)cs->w));
    CUDNN_CHECK(a->ctx,
                cudnnSetFilter4dDescriptor(p->w_desc, dt, fmt, (int)cs->m,
                                           (int)(cs->c / cs->groups), (int)cs->kh, (int)cs->kw));
    CUDNN_CHECK(a->ctx, cudnnSetConvolution2dDescriptor(p->conv_desc, (int)sym_h, (int)sym_w,
                                                        (int)c->stride[0], (int)c->stride[1],
                                                        (int)c->dilation[0], (int)c->dilation[1],
                                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_CHECK(a->ctx, cudnnSetConvolutionGroupCount(p->conv_desc, (int)cs->groups));
    CUDNN_CHECK(a->ctx, cudnnSetConvolutionMathType(p->conv_desc, initial_math(a->opts->math)));
    int on = 0, oc = 0, oh = 0, ow = 0;
    CUDNN_CHECK(a->ctx, cudnnGetConvolution2dForwardOutputDim(p->conv_desc, p->x_desc, p->w_desc,
                                                              &on, &oc, &oh, &ow));
    if (on != cs->n || oc != cs->m || oh != cs->oh || ow != cs->ow)
        return OS_FAIL(a->ctx, OPSCHED_ERR_BACKEND,
                       "cuda: node '%s': cuDNN computes a %dx%dx%dx%d output, the graph "
                       "%lldx%lldx%lldx%lld",
                       a->node->name, on, oc, oh, ow, (long long)cs->n, (long long)cs->m,
                       (long long)cs->oh, (long long)cs->ow);
    CUDNN_CHECK(a->ctx, cudnnSetTensor4dDescriptor(p->y_desc, fmt, dt, on, oc, oh, ow));
    return OPSCHED_OK;
}

static int algo_index(const char *name)
{
    for (int i = 0; i < CU_N_CONV_ALGOS; i++)
        if (strcmp(name, cu_conv_algo_names[i]) == 0) return i;
    return -1;
}

/* Sizes the chosen algorithm's workspace and allocates it. */
static opsched_status alloc_workspace(const cu_plan_args *a, conv_plan *p, const conv_shape *cs,
                                      size_t limit)
{
    size_t bytes = 0;
    cudnnStatus_t e = cudnnGetConvolutionForwardWorkspaceSize(
        a->dev->cudnn, p->x_desc, p->w_desc, p->conv_desc, p->y_desc, p->algo, &bytes);
    char d[256];
    describe(a, cs, d, sizeof(d));
    const char *name = cu_conv_algo_names[p->algo];
    if (e != CUDNN_STATUS_SUCCESS) {
        char why[256] = "";
        cudnnGetLastErrorString(why, sizeof(why));
        if (CUDNN_STATUS_CATEGORY(e) == CUDNN_STATUS_NOT_SUPPORTED ||
            CUDNN_STATUS_CATEGORY(e) == CUDNN_STATUS_BAD_PARAM)
            return CU_UNSUPPORTED(a, "%s: cuDNN does not support this configuration (%s): %s%s%s",
                                  name, d, cudnnGetErrorString(e), why[0] ? ": " : "", why);
        return cu_fail_cudnn(a->ctx, e, "cudnnGetConvolutionForwardWorkspaceSize", __FILE__,
                             __LINE__);
    }
    if (bytes > limit)
        return CU_UNSUPPORTED(a, "%s needs %zu bytes of workspace, more than the %zu allowed (%s)",
                              name, bytes, limit, d);
    p->base.workspace_bytes = bytes;
    if (bytes) OS_TRY(cu_malloc(a->ctx, bytes, &p->base.workspace));
    return OPSCHED_OK;
}

int cu_own_variant(const char *name, int *tile_h)
{
    static const struct {
        const char *name;
        int tile_w, tile_h;
    } v[] = {{"own", 0, 0},          {"own-generic", -1, 0}, {"own-tile1", 1, 0},
             {"own-tile2", 2, 0},    {"own-tile4", 4, 0},    {"own-tile8", 8, 0},
             {"own-vec1x1", 1, 1},   {"own-vec1x2", 2, 1},   {"own-vec1x4", 4, 1},
             {"own-vec2x2", 2, 2},   {"own-vec2x4", 4, 2},   {"own-vec2x8", 8, 2},
             {"own-vec4x4", 4, 4},   {"own-staged", 8, 8}};
    for (size_t k = 0; name && k < sizeof(v) / sizeof(v[0]); k++)
        if (strcmp(name, v[k].name) == 0) {
            if (tile_h) *tile_h = v[k].tile_h;
            return v[k].tile_w;
        }
    return -2;
}

opsched_status cu_plan_conv(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0), *w = cu_in(a, 1), *y = cu_out(a, 0);
    if (x && x->shape.ndim == 5) return cu_plan_conv_3d(a, out);
    if (!x || !w || !y || x->shape.ndim != 4 || w->shape.ndim != 4 || y->shape.ndim != 4)
        return CU_UNSUPPORTED(a, "only 2-D and 3-D convolution (4-D and 5-D tensors) is "
                                 "supported");
    if (!cu_dtype_is_float(x->dtype) || !cu_dtype_is_float(w->dtype))
        return CU_UNSUPPORTED(a, "convolution of %s data", opsched_dtype_name(x->dtype));
    const char *name = a->opts->algo ? a->opts->algo : "heuristic";
    if (strcmp(name, "heuristic") == 0) return cu_plan_conv_graph(a, 0, CU_CONV_TIMED, out);
    if (strcmp(name, "find") == 0) return cu_plan_conv_graph(a, 1, CU_CONV_TIMED, out);
    if (cu_own_variant(name, NULL) != -2) return cu_plan_conv_graph(a, 0, CU_CONV_OWN, out);
    if (strcmp(name, "cublaslt") == 0) return cu_plan_conv_graph(a, 0, CU_CONV_CUBLASLT, out);
    if (strcmp(name, "im2col") == 0) return cu_plan_conv_graph(a, 0, CU_CONV_IM2COL, out);
    if (strcmp(name, "igemm") == 0) return cu_plan_conv_graph(a, 0, CU_CONV_IGEMM, out);
    if (strcmp(name, "cudnn_matmul") == 0) return cu_plan_conv_graph(a, 0, CU_CONV_MM_GRAPH, out);
    int named = algo_index(name);
    if (named < 0 && strcmp(name, "heuristic_v7") != 0 && strcmp(name, "find_v7") != 0)
        return OS_FAIL(a->ctx, OPSCHED_ERR_INVALID_ARG,
                       "cuda: unknown convolution algorithm '%s' (heuristic, find, own, "
                       "own-generic, own-tile1, own-tile2, own-tile4, own-tile8, own-vec1x1, "
                       "own-vec1x2, own-vec1x4, own-vec2x2, own-vec2x4, own-vec2x8, own-vec4x4, "
                       "own-staged, "
                       "cublaslt, cudnn_matmul, "
                       "im2col, igemm, heuristic_v7, find_v7, implicit_gemm, implicit_precomp_gemm, gemm, "
                       "direct, fft, fft_tiling, winograd, winograd_nonfused)",
                       name);

    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(conv_plan), conv_launch, conv_release, &base));
    conv_plan *p = (conv_plan *)base;
    conv_shape cs;
    opsched_status st = OPSCHED_OK;
    p->kt = a->kt;
    OS_TRY_GOTO(st, build_descs(a, p, &cs), fail);

    size_t limit = a->opts->workspace_limit ? a->opts->workspace_limit : cu_free_memory();
    size_t w_bytes = (size_t)opsched_shape_numel(&w->shape) * opsched_dtype_size(a->dt);
    if (named >= 0)
        OS_TRY_GOTO(st, pick_named(a, p, &cs, named), fail);
    else if (strcmp(name, "find_v7") == 0)
        OS_TRY_GOTO(st, pick_find(a, p, &cs, limit, w_bytes), fail);
    else
        OS_TRY_GOTO(st, pick_heuristic(a, p, &cs, limit), fail);
    OS_TRY_GOTO(st, alloc_workspace(a, p, &cs, limit), fail);

    cu_conv_bias_init(a, &p->bias);
    snprintf(a->info->algo, sizeof(a->info->algo), "%s", cu_conv_algo_names[p->algo]);
    a->info->fused_activation = 0;
    *out = base;
    return OPSCHED_OK;
fail:
    cu_plan_destroy(base);
    return st;
}
