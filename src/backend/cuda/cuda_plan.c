/*
 * cuda_plan.c - planning a node on a CUDA device: which planner handles
 * which operator, the plan's common head, and the helpers every planner
 * uses to turn logical shapes into the strides the plan stores them with.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"
#include "core/half.h"

/* ---- tensors and types ----------------------------------------------- */

const opsched_tensor *cu_in(const cu_plan_args *a, int i)
{
    if (i < 0 || i >= a->node->n_inputs || a->node->inputs[i] < 0) return NULL;
    return opsched_graph_tensor(a->g, a->node->inputs[i]);
}

const opsched_tensor *cu_out(const cu_plan_args *a, int i)
{
    if (i < 0 || i >= a->node->n_outputs) return NULL;
    return opsched_graph_tensor(a->g, a->node->outputs[i]);
}

opsched_status cu_unsupported(const cu_plan_args *a, const char *file, int line, const char *fmt,
                              ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return os_fail(a->ctx, OPSCHED_ERR_UNSUPPORTED, file, line, "cuda: node '%s' (%s): %s",
                   a->node->name ? a->node->name : "?", opsched_op_name(a->node->op), msg);
}

int cu_dtype_is_float(opsched_dtype dt)
{
    return dt == OPSCHED_F32 || dt == OPSCHED_F16 || dt == OPSCHED_BF16;
}

size_t cu_elem_size(const cu_plan_args *a, const opsched_tensor *t)
{
    return opsched_dtype_size(cu_dtype_is_float(t->dtype) ? a->dt : t->dtype);
}

cudnnDataType_t cu_cudnn_type(opsched_dtype dt)
{
    return dt == OPSCHED_F16    ? CUDNN_DATA_HALF
           : dt == OPSCHED_BF16 ? CUDNN_DATA_BFLOAT16
                                : CUDNN_DATA_FLOAT;
}

int cu_fits_int(int64_t v)
{
    return v >= 0 && v <= 0x7fffffff;
}

opsched_dtype cu_storage(const cu_plan_args *a, opsched_dtype dt)
{
    return cu_dtype_is_float(dt) ? a->dt : dt;
}

cuk_dtype cu_kdt(const cu_plan_args *a, const opsched_tensor *t)
{
    switch (cu_storage(a, t->dtype)) {
    case OPSCHED_F32:
        return CUK_DT_F32;
    case OPSCHED_F16:
        return CUK_DT_F16;
    case OPSCHED_BF16:
        return CUK_DT_BF16;
    case OPSCHED_INT8:
        return CUK_DT_I8;
    case OPSCHED_INT32:
        return CUK_DT_I32;
    case OPSCHED_INT64:
        return CUK_DT_I64;
    case OPSCHED_UINT8:
        return CUK_DT_U8;
    case OPSCHED_BOOL:
        return CUK_DT_BOOL;
    default:
        return CUK_DT_COUNT;
    }
}

uint64_t cu_value_bits(opsched_dtype storage, double v)
{
    switch (storage) {
    case OPSCHED_F32: {
        float f = (float)v;
        uint32_t b;
        memcpy(&b, &f, 4);
        return b;
    }
    case OPSCHED_F16:
        return os_f32_to_f16((float)v);
    case OPSCHED_BF16:
        return os_f32_to_bf16((float)v);
    case OPSCHED_BOOL:
        return v != 0.0;
    default: {
        /* integers: truncated toward zero, saturated at int64's range */
        int64_t k = isnan(v) ? 0 : v >= 9223372036854775807.0 ? INT64_MAX
                                 : v <= -9223372036854775808.0 ? INT64_MIN
                                                               : (int64_t)v;
        size_t bytes = opsched_dtype_size(storage);
        return bytes >= 8 ? (uint64_t)k : (uint64_t)k & ((1ull << (8 * bytes)) - 1);
    }
    }
}

/* ---- layouts --------------------------------------------------------- */

int cu_is_nhwc(const cu_plan_args *a, const opsched_tensor *t)
{
    if (a->opts->layout != OPSCHED_LAYOUT_NHWC || t->shape.ndim != 4) return 0;
    if (a->opts->rowmajor && a->opts->rowmajor_graph == a->g) {
        ptrdiff_t id = opsched_graph_tensor_index(a->g, t);
        if (id >= 0 && a->opts->rowmajor[id]) return 0; /* kept row-major (layout.c) */
    }
    return 1;
}

void cu_mem_order(const cu_plan_args *a, const opsched_tensor *t, int *order)
{
    static const int nhwc[4] = {0, 2, 3, 1};
    for (int i = 0; i < t->shape.ndim; i++)
        order[i] = cu_is_nhwc(a, t) ? nhwc[i] : i;
}

void cu_strides(const cu_plan_args *a, const opsched_tensor *t, int64_t *st)
{
    int order[OPSCHED_MAX_DIMS];
    cu_mem_order(a, t, order);
    int64_t s = 1;
    for (int i = t->shape.ndim - 1; i >= 0; i--) {
        st[order[i]] = s;
        s *= t->shape.d[order[i]];
    }
}

void cu_axis_split(const cu_plan_args *a, const opsched_tensor *t, int axis, int64_t *outer,
                   int64_t *len, int64_t *inner)
{
    int order[OPSCHED_MAX_DIMS], pos = 0;
    cu_mem_order(a, t, order);
    while (pos < t->shape.ndim && order[pos] != axis)
        pos++;
    *outer = *inner = 1;
    for (int i = 0; i < t->shape.ndim; i++) {
        if (i < pos) *outer *= t->shape.d[order[i]];
        if (i > pos) *inner *= t->shape.d[order[i]];
    }
    *len = t->shape.d[axis];
}

void cu_aligned_strides(const cu_plan_args *a, const opsched_tensor *t, const opsched_shape *out,
                        int64_t *st)
{
    int64_t ts[OPSCHED_MAX_DIMS];
    cu_strides(a, t, ts);
    for (int i = 0; i < out->ndim; i++) {
        int ti = t->shape.ndim - out->ndim + i;
        st[i] = ti >= 0 && t->shape.d[ti] != 1 ? ts[ti] : 0;
    }
}

void cu_nd_over(const cu_plan_args *a, const opsched_tensor *y, cuk_nd *nd)
{
    memset(nd, 0, sizeof(*nd));
    nd->ndim = y->shape.ndim;
    for (int i = 0; i < y->shape.ndim; i++)
        nd->shape[i] = y->shape.d[i];
    cu_strides(a, y, nd->stride[0]);
}

static int64_t abs64(int64_t v)
{
    return v < 0 ? -v : v;
}

static void nd_move(int64_t *shape, int64_t (*stride)[CUK_MAX_DIMS], int nops, int to, int from)
{
    shape[to] = shape[from];
    for (int k = 0; k < nops; k++)
        stride[k][to] = stride[k][from];
}

static void nd_swap(int64_t *shape, int64_t (*stride)[CUK_MAX_DIMS], int nops, int i, int j)
{
    int64_t t = shape[i];
    shape[i] = shape[j];
    shape[j] = t;
    for (int k = 0; k < nops; k++) {
        t = stride[k][i];
        stride[k][i] = stride[k][j];
        stride[k][j] = t;
    }
}

void cu_dims_simplify(int *ndim, int64_t *shape, int64_t (*stride)[CUK_MAX_DIMS], int nops)
{
    int n = 0;
    for (int i = 0; i < *ndim; i++)
        if (shape[i] != 1) nd_move(shape, stride, nops, n++, i);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && abs64(stride[0][j - 1]) < abs64(stride[0][j]); j--)
            nd_swap(shape, stride, nops, j - 1, j);
    int m = 0;
    for (int i = 0; i < n; i++) {
        int merge = m > 0;
        for (int k = 0; merge && k < nops; k++)
            merge = stride[k][m - 1] == stride[k][i] * shape[i];
        if (merge) {
            shape[m - 1] *= shape[i];
            for (int k = 0; k < nops; k++)
                stride[k][m - 1] = stride[k][i];
        } else {
            nd_move(shape, stride, nops, m++, i);
        }
    }
    if (m == 0) {
        m = 1;
        shape[0] = 1;
        for (int k = 0; k < nops; k++)
            stride[k][0] = 0;
    }
    *ndim = m;
}

void cu_nd_simplify(cuk_nd *nd, int nops)
{
    cu_dims_simplify(&nd->ndim, nd->shape, nd->stride, nops);
}

/* ---- the plan head --------------------------------------------------- */

opsched_status cu_plan_alloc(const cu_plan_args *a, size_t size, cu_launch_fn launch,
                             cu_release_fn release, cu_plan **out)
{
    cu_plan *p = calloc(1, size);
    if (!p) return OS_NOMEM(a->ctx);
    p->launch = launch;
    p->release = release;
    p->n_in = a->node->n_inputs;
    p->n_out = a->node->n_outputs;
    for (int i = 0; i < p->n_in && i < 64; i++)
        if (a->node->inputs[i] >= 0) p->need_in |= 1ull << i;
    *out = p;
    return OPSCHED_OK;
}

void cu_plan_destroy(cu_plan *p)
{
    if (!p) return;
    if (p->release) p->release(p);
    if (p->workspace) (void)cudaFree(p->workspace);
    (void)cudaGetLastError();
    free(p);
}

/* ---- the table's plan slots ------------------------------------------ */

/* 1 when some input of the node is not floating-point (the element-wise
 * kinds of their own then go to the generic family). */
static int any_input_not_float(const cu_plan_args *a)
{
    for (int i = 0; i < a->node->n_inputs; i++) {
        const opsched_tensor *t = cu_in(a, i);
        if (t && !cu_dtype_is_float(t->dtype)) return 1;
    }
    return 0;
}

int cu_conv_math_ok(const cu_plan_args *a, cudnnMathType_t m)
{
    return !(a->dt == OPSCHED_F32 && m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
}

opsched_status cu_conv_set_math(const cu_plan_args *a, cudnnConvolutionDescriptor_t conv,
                                cudnnMathType_t m)
{
    if (a->opts->math == OPSCHED_MATH_FP32) m = CUDNN_FMA_MATH;
    CUDNN_CHECK(a->ctx, cudnnSetConvolutionMathType(conv, m));
    return OPSCHED_OK;
}

opsched_status cu_plan_dispatch(const cu_plan_args *a, cu_plan **p)
{
    switch (a->node->op) {
    case OPSCHED_OP_RELU:
    case OPSCHED_OP_SIGMOID:
    case OPSCHED_OP_TANH:
    case OPSCHED_OP_CLIP:
    case OPSCHED_OP_GELU:
    case OPSCHED_OP_ERF:
    case OPSCHED_OP_HARDSIGMOID:
    case OPSCHED_OP_HARDSWISH:
    case OPSCHED_OP_SQRT:
    case OPSCHED_OP_ADD:
    case OPSCHED_OP_SUB:
    case OPSCHED_OP_MUL:
    case OPSCHED_OP_DIV:
    case OPSCHED_OP_POW:
        if (any_input_not_float(a)) return cu_plan_elementwise(a, p);
        break;
    case OPSCHED_OP_REDUCEMEAN:
        if (any_input_not_float(a)) return cu_plan_reduce_fn(a, p);
        break;
    default:
        break;
    }
    switch (a->node->op) {
    case OPSCHED_OP_CONV:
        return cu_plan_conv(a, p);
    case OPSCHED_OP_GEMM:
        return cu_plan_gemm(a, p);
    case OPSCHED_OP_MATMUL:
        return cu_plan_matmul(a, p);
    case OPSCHED_OP_MAXPOOL:
    case OPSCHED_OP_AVGPOOL:
        return cu_plan_pool(a, p);
    case OPSCHED_OP_GLOBALAVGPOOL:
    case OPSCHED_OP_GLOBALMAXPOOL:
        return cu_plan_global_pool(a, p);
    case OPSCHED_OP_RELU:
    case OPSCHED_OP_SIGMOID:
    case OPSCHED_OP_TANH:
    case OPSCHED_OP_CLIP:
        return cu_plan_activation(a, p);
    case OPSCHED_OP_GELU: /* the element-wise family: packed, any storage type */
    case OPSCHED_OP_ERF:
    case OPSCHED_OP_HARDSIGMOID:
    case OPSCHED_OP_HARDSWISH:
    case OPSCHED_OP_SQRT:
    case OPSCHED_OP_ADD:
    case OPSCHED_OP_SUB:
    case OPSCHED_OP_MUL:
    case OPSCHED_OP_DIV:
    case OPSCHED_OP_POW:
        return cu_plan_elementwise(a, p);
    case OPSCHED_OP_CONCAT:
        return cu_plan_concat(a, p);
    case OPSCHED_OP_SPLIT:
        return cu_plan_split(a, p);
    case OPSCHED_OP_SLICE:
        return cu_plan_slice(a, p);
    case OPSCHED_OP_GATHER:
        return cu_plan_gather(a, p);
    case OPSCHED_OP_BATCHNORM:
        return cu_plan_batchnorm(a, p);
    case OPSCHED_OP_SOFTMAX:
        return cu_plan_softmax(a, p);
    case OPSCHED_OP_LRN:
        return cu_plan_lrn(a, p);
    case OPSCHED_OP_LAYERNORM:
        return cu_plan_layernorm(a, p);
    case OPSCHED_OP_REDUCEMEAN:
        return cu_plan_reduce(a, p);
    case OPSCHED_OP_TRANSPOSE:
        return cu_plan_transpose(a, p);
    case OPSCHED_OP_PAD:
        return cu_plan_pad(a, p);
    case OPSCHED_OP_EXPAND:
        return cu_plan_expand(a, p);
    case OPSCHED_OP_FLATTEN:
    case OPSCHED_OP_RESHAPE:
    case OPSCHED_OP_IDENTITY:
    case OPSCHED_OP_DROPOUT:
        return cu_plan_view(a, p);
    case OPSCHED_OP_UNARY:
    case OPSCHED_OP_BINARY:
    case OPSCHED_OP_WHERE:
    case OPSCHED_OP_CAST:
    case OPSCHED_OP_QUANTIZE:
    case OPSCHED_OP_DEQUANTIZE:
        return cu_plan_elementwise(a, p);
    case OPSCHED_OP_REDUCE:
        return cu_plan_reduce_fn(a, p);
    case OPSCHED_OP_ARGMAX:
    case OPSCHED_OP_ARGMIN:
        return cu_plan_arg(a, p);
    case OPSCHED_OP_LOGSOFTMAX:
    case OPSCHED_OP_HARDMAX:
        return cu_plan_axis_norm(a, p);
    case OPSCHED_OP_GROUPNORM:
        return cu_plan_groupnorm(a, p);
    case OPSCHED_OP_CUMSUM:
        return cu_plan_cumsum(a, p);
    case OPSCHED_OP_TOPK:
        return cu_plan_topk(a, p);
    case OPSCHED_OP_GATHER_ELEMENTS:
    case OPSCHED_OP_GATHER_ND:
    case OPSCHED_OP_SCATTER_ELEMENTS:
    case OPSCHED_OP_SCATTER_ND:
    case OPSCHED_OP_TILE:
    case OPSCHED_OP_TRILU:
    case OPSCHED_OP_ONEHOT:
        return cu_plan_index(a, p);
    case OPSCHED_OP_RESIZE:
        return cu_plan_resize(a, p);
    case OPSCHED_OP_CONV_TRANSPOSE:
        return cu_plan_conv_transpose(a, p);
    case OPSCHED_OP_ATTENTION:
        return cu_plan_attention(a, p);
    case OPSCHED_OP_BATCHNORM_TRAIN:
        return cu_plan_batchnorm_train(a, p);
    case OPSCHED_OP_BATCHNORM_GRAD:
        return cu_plan_batchnorm_grad(a, p);
    case OPSCHED_OP_CONV_GRAD_FILTER:
        return cu_plan_conv_grad_filter(a, p);
    default:
        return CU_UNSUPPORTED(a, "operator %d is not supported", (int)a->node->op);
    }
}

static opsched_status empty_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                   void *const *in, void *const *out)
{
    (void)ctx;
    (void)dev;
    (void)base;
    (void)s;
    (void)in;
    (void)out;
    return OPSCHED_OK;
}

/* 1 when every output of the node has no elements: there is nothing to
 * compute, and neither a grid of no blocks nor a cuDNN descriptor with a
 * zero extent is valid. */
static int outputs_empty(const cu_plan_args *a)
{
    for (int i = 0; i < a->node->n_outputs; i++) {
        const opsched_tensor *t = cu_out(a, i);
        if (t && opsched_shape_numel(&t->shape) != 0) return 0;
    }
    return a->node->n_outputs > 0;
}

static opsched_status plan_create(opsched_ctx *ctx, cu_device *dev, const opsched_graph *g,
                                  int node, const opsched_plan_options *opts, void **plan,
                                  opsched_plan_info *info)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "cuda: node %d does not exist", node);
    if (opts->layout != OPSCHED_LAYOUT_NCHW && opts->layout != OPSCHED_LAYOUT_NHWC)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "cuda: unknown layout %d", (int)opts->layout);
    if (n->n_inputs > CUK_MAX_CONCAT)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "cuda: node '%s' has %d inputs (%d at most)",
                       n->name, n->n_inputs, CUK_MAX_CONCAT);
    cu_plan_args a = {.ctx = ctx,
                      .dev = dev,
                      .g = g,
                      .node = n,
                      .opts = opts,
                      .dt = opsched_math_dtype(opts->math),
                      .info = info};
    a.kt = a.dt == OPSCHED_F16 ? CUK_F16 : a.dt == OPSCHED_BF16 ? CUK_BF16 : CUK_F32;
    memset(info, 0, sizeof(*info));
    OS_TRY(cu_device_use(ctx, dev));
    cu_plan *p = NULL;
    /* The fused forms asked for, each taken where it runs: a movement run
     * as one strided copy, the squeeze-and-excitation gate from this mean
     * as one kernel, the element-wise chain from this node as one kernel;
     * else the node alone. */
    static opsched_status (*const fused[3])(const cu_plan_args *, cu_plan **) = {
        cu_plan_move, cu_plan_se, cu_plan_chain};
    const int asked[3] = {opts->move_path && opts->n_move_path >= 2, opts->fuse_se,
                          opts->fuse_chain};
    for (int k = 0; k < 3; k++) {
        if (!asked[k] || outputs_empty(&a)) continue;
        opsched_status st = fused[k](&a, &p);
        if (st == OPSCHED_OK) {
            info->workspace_bytes = k == 1 ? p->workspace_bytes : 0; /* as before: the gate's */
            *plan = p;
            return OPSCHED_OK;
        }
        if (st != OPSCHED_ERR_UNSUPPORTED) return st;
        opsched_ctx_clear_error(ctx);
        memset(info, 0, sizeof(*info));
        p = NULL;
    }
    if (outputs_empty(&a)) {
        OS_TRY(cu_plan_alloc(&a, sizeof(cu_plan), empty_launch, NULL, &p));
        snprintf(info->algo, sizeof(info->algo), "empty");
    } else {
        opsched_status st = cu_plan_dispatch(&a, &p);
        if (st == OPSCHED_ERR_UNSUPPORTED && opts->layout == OPSCHED_LAYOUT_NHWC) {
            /* planned again in NCHW between copies (cuda_layout.c); where
             * there is nothing to copy the first reason stands */
            char why[512];
            snprintf(why, sizeof why, "%s", opsched_ctx_last_error(ctx));
            memset(info, 0, sizeof(*info));
            if (cu_plan_nchw_adapter(&a, &p) == OPSCHED_OK) {
                opsched_ctx_clear_error(ctx);
                st = OPSCHED_OK;
            } else {
                st = OS_FAIL(ctx, st, "%s", why); /* the NHWC planner's reason */
            }
        }
        OS_TRY(st);
    }
    info->workspace_bytes = p->workspace_bytes;
    *plan = p;
    return OPSCHED_OK;
}

/* Whether a plan's own kernels are launched programmatically: where the
 * GPU has it and the options do not turn it off.  The planner's timings run
 * with the same setting as the launches they choose between. */
static int plan_pdl(const cu_device *dev, const opsched_plan_options *opts)
{
    return dev->pdl_ok && !(opts->ablate & OPSCHED_ABLATE_PDL);
}

opsched_status cu_plan_create(opsched_ctx *ctx, void *impl, const opsched_graph *g, int node,
                              const opsched_plan_options *opts, void **plan,
                              opsched_plan_info *info)
{
    cu_device *dev = impl;
    const int pdl = plan_pdl(dev, opts);
    const int was = cuk_set_pdl(pdl);
    opsched_status st = plan_create(ctx, dev, g, node, opts, plan, info);
    (void)cuk_set_pdl(was);
    if (st == OPSCHED_OK) ((cu_plan *)*plan)->pdl = pdl;
    return st;
}

int cu_launch_pdl(void *impl, int on)
{
    cu_device *dev = impl;
    if (!dev->pdl_ok) return -1;
    const int was = !dev->pdl_plain;
    if (on >= 0) dev->pdl_plain = !on;
    return was;
}

void cu_plan_free(void *impl, void *plan)
{
    cu_device *dev = impl;
    if (!plan) return;
    if (cudaSetDevice(dev->index) != cudaSuccess) (void)cudaGetLastError();
    cu_plan_destroy(plan);
}

opsched_status cu_plan_launch(opsched_ctx *ctx, void *impl, void *plan, void *stream,
                              void *const *in, void *const *out)
{
    cu_device *dev = impl;
    cu_plan *p = plan;
    /* Inputs past the mask's 64 bits (a Concat's) are never optional. */
    for (int i = 0; i < p->n_in; i++)
        if ((i >= 64 || (p->need_in >> i & 1)) && !in[i])
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "cuda: launch without input %d", i);
    for (int i = 0; i < p->n_out; i++)
        if (!out[i])
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "cuda: launch without output %d", i);
    OS_TRY(cu_device_use(ctx, dev));
    const int was = cuk_set_pdl(p->pdl && !dev->pdl_plain);
    opsched_status st =
        p->launch(ctx, dev, p, stream ? (cudaStream_t)stream : dev->stream, in, out);
    (void)cuk_set_pdl(was);
    return st;
}
