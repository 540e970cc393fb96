/*
 * cuda_dnn.c - the operators cuDNN's legacy API runs besides convolution:
 * pooling, activations, batch normalisation, softmax and LRN.
 *
 * Each falls back to an own kernel (kernels.cu) where cuDNN cannot express
 * the node: pooling with asymmetric padding, padding of more than half the
 * kernel, dilation, a ceil-mode output cuDNN's floor formula does not give,
 * or three spatial axes; Clip with a lower bound other than 0;
 * LRN parameters outside cuDNN's ranges or in NHWC; sizes beyond 32 bits.
 * bf16 data also goes to the own kernels (cuDNN's legacy pooling,
 * activation, softmax and LRN are not documented for bf16), as does batch
 * normalisation in fp16/bf16 or NHWC (cuDNN wants its parameters in fp32
 * there).  plan info's algo says which ran: "cudnn" or "kernel".
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

typedef struct dnn_plan {
    cu_plan base;
    cuk_type kt;
    int use_cudnn;
    cudnnTensorDescriptor_t x_desc, y_desc, p_desc;
    cudnnPoolingDescriptor_t pool_desc;
    cudnnActivationDescriptor_t act_desc;
    cudnnLRNDescriptor_t lrn_desc;
    double eps;
    cuk_pool_desc pool;
    cuk_lrn_desc lrn;
    cuk_ufn ufn; /* activations without cuDNN (cu_unary_fn_of) */
    cuk_ew_params prm;
    int64_t n, channels, cstride; /* element count; per-channel addressing */
    int64_t outer, axis, inner;   /* softmax */
    int col;                      /* global pooling as a column reduction */
    cuk_col_fn col_fn;
    int64_t col_o, col_r, col_c;
    int rows; /* global pooling of NCHW rows through the reduction family */
    cuk_red_fn row_fn;
    cuk_reduce_desc row_d;
    cuk_dtype pool_dt; /* the kernel pool's storage type */
    cuk_dtype bn_dt;   /* batch normalisation's storage type */
    cu_act act;        /* batch normalisation: the activation fused after it */
    /* Batch normalisation reading the inputs of its Concat in place
     * (norm_concat): the parts' sizes; their pointers are set per launch
     * (input 0, then inputs 5 on). */
    int cat;
    cuk_cat_parts parts;
} dnn_plan;

static void dnn_release(cu_plan *base)
{
    dnn_plan *p = (dnn_plan *)base;
    if (p->x_desc) (void)cudnnDestroyTensorDescriptor(p->x_desc);
    if (p->y_desc) (void)cudnnDestroyTensorDescriptor(p->y_desc);
    if (p->p_desc) (void)cudnnDestroyTensorDescriptor(p->p_desc);
    if (p->pool_desc) (void)cudnnDestroyPoolingDescriptor(p->pool_desc);
    if (p->act_desc) (void)cudnnDestroyActivationDescriptor(p->act_desc);
    if (p->lrn_desc) (void)cudnnDestroyLRNDescriptor(p->lrn_desc);
}

/* int8_ok: the op also takes int8 and uint8 data (MaxPool). */
static opsched_status dnn_new(const cu_plan_args *a, cu_launch_fn launch, int int8_ok,
                              dnn_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0);
    int ok = x && (cu_dtype_is_float(x->dtype) ||
                   (int8_ok && (x->dtype == OPSCHED_INT8 || x->dtype == OPSCHED_UINT8)));
    if (!ok) return CU_UNSUPPORTED(a, "%s data", x ? opsched_dtype_name(x->dtype) : "missing");
    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(dnn_plan), launch, dnn_release, &base));
    dnn_plan *p = (dnn_plan *)base;
    p->kt = a->kt;
    *out = p;
    return OPSCHED_OK;
}

static opsched_status dnn_done(const cu_plan_args *a, dnn_plan *p, cu_plan **out)
{
    snprintf(a->info->algo, sizeof(a->info->algo), "%s", p->use_cudnn ? "cudnn" : "kernel");
    *out = &p->base;
    return OPSCHED_OK;
}

/* A 4-D cuDNN descriptor of n, c, h, w, created on first use. */
static opsched_status desc_4d(const cu_plan_args *a, cudnnTensorDescriptor_t *d, int nhwc,
                              int64_t n, int64_t c, int64_t h, int64_t w)
{
    if (!*d) CUDNN_CHECK(a->ctx, cudnnCreateTensorDescriptor(d));
    CUDNN_CHECK(a->ctx,
                cudnnSetTensor4dDescriptor(*d, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                           cu_cudnn_type(a->dt), (int)n, (int)c, (int)h, (int)w));
    return OPSCHED_OK;
}

/* 1 when all of n values are in 1..INT_MAX and so is their product. */
static int cudnn_dims_ok(const int64_t *v, int n)
{
    int64_t prod = 1;
    for (int i = 0; i < n; i++) {
        if (v[i] < 1 || !cu_fits_int(v[i])) return 0;
        prod *= v[i];
        if (!cu_fits_int(prod)) return 0;
    }
    return 1;
}

/* N, C and the product of the remaining dims of a rank >= 2 shape. */
static void ncs(const opsched_shape *s, int64_t *n, int64_t *c, int64_t *sp)
{
    *n = s->d[0];
    *c = s->ndim > 1 ? s->d[1] : 1;
    *sp = 1;
    for (int i = 2; i < s->ndim; i++)
        *sp *= s->d[i];
}

/* ---- pooling --------------------------------------------------------- */

static opsched_status pool_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                  void *const *in, void *const *out)
{
    dnn_plan *p = (dnn_plan *)base;
    const float one = 1.0f, zero = 0.0f;
    if (p->col) {
        CUDA_CHECK(ctx, cuk_colreduce(p->col_fn, p->kt, p->col_o, p->col_r, p->col_c, in[0], out[0],
                                      base->workspace, s));
        return OPSCHED_OK;
    }
    if (p->rows) {
        CUDA_CHECK(ctx, cuk_reduce(p->row_fn, (cuk_dtype)p->kt, 0, &p->row_d, in[0], out[0], s));
        return OPSCHED_OK;
    }
    if (!p->use_cudnn) {
        int64_t *ind = base->n_out > 1 ? out[1] : NULL; /* MaxPool's Indices */
        CUDA_CHECK(ctx, cuk_pool(p->pool_dt, &p->pool, in[0], out[0], ind, s));
        return OPSCHED_OK;
    }
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    CUDNN_CHECK(ctx, cudnnPoolingForward(dev->cudnn, p->pool_desc, &one, p->x_desc, in[0], &zero,
                                         p->y_desc, out[0]));
    return OPSCHED_OK;
}

/* Tries cuDNN pooling of an [n, c, h, w] input (window kh x kw, symmetric
 * pads ph, pw); leaves use_cudnn 0 when cuDNN's output differs from oh x ow. */
static opsched_status pool_cudnn(const cu_plan_args *a, dnn_plan *p, int is_max, int incl_pad,
                                 int nhwc, const int64_t *x4, int64_t oh, int64_t ow,
                                 const int64_t *win)
{
    int64_t dims[] = {x4[0],  x4[1],  x4[2],      x4[3],      oh,     ow,
                      win[0], win[1], win[2] + 1, win[3] + 1, win[4], win[5]};
    for (int i = 0; i < (int)OS_ARRAY_LEN(dims); i++)
        if (!cudnn_dims_ok(&dims[i], 1)) return OPSCHED_OK;
    if (!cudnn_dims_ok(x4, 4)) return OPSCHED_OK;
    cudnnPoolingMode_t mode = is_max     ? CUDNN_POOLING_MAX
                              : incl_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                         : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    CUDNN_CHECK(a->ctx, cudnnCreatePoolingDescriptor(&p->pool_desc));
    CUDNN_CHECK(a->ctx, cudnnSetPooling2dDescriptor(p->pool_desc, mode, CUDNN_NOT_PROPAGATE_NAN,
                                                    (int)win[0], (int)win[1], (int)win[2],
                                                    (int)win[3], (int)win[4], (int)win[5]));
    OS_TRY(desc_4d(a, &p->x_desc, nhwc, x4[0], x4[1], x4[2], x4[3]));
    int n = 0, c = 0, h = 0, w = 0;
    CUDNN_CHECK(a->ctx, cudnnGetPooling2dForwardOutputDim(p->pool_desc, p->x_desc, &n, &c, &h, &w));
    if (h != oh || w != ow) return OPSCHED_OK;
    OS_TRY(desc_4d(a, &p->y_desc, nhwc, n, c, h, w));
    p->use_cudnn = 1;
    return OPSCHED_OK;
}

/* A pooling run by a verdict: cuDNN's (own 0) or the four-channel kernel. */
typedef struct pool_run {
    dnn_plan *p;
    void *x, *y;
    int own;
} pool_run;

static opsched_status enqueue_pool(const cu_plan_args *a, void *env, cudaStream_t s)
{
    pool_run *r = env;
    void *in[1] = {r->x}, *out[1] = {r->y};
    r->p->use_cudnn = !r->own; /* pool_launch runs what the plan would */
    return pool_launch(a->ctx, a->dev, &r->p->base, s, in, out);
}

/* An NHWC pool cuDNN would run goes to the kernel that reads four
 * channels a thread (cuk_pool_nhwc4) where that measures faster, once per
 * plan on zeroed scratch tensors: cuDNN's NHWC pooling kernels measured
 * several times slower than their bytes need on Inception's 3x3 average
 * pools at batch 16.  Pools cuDNN cannot express take that kernel anyway
 * (cuk_pool picks it wherever it applies). */
static opsched_status pick_pool(const cu_plan_args *a, dnn_plan *p)
{
    /* stand-in pointers of the arena's alignment: the launch checks the real ones */
    void *aligned = (void *)(uintptr_t)256;
    if (!p->use_cudnn || !p->pool.nhwc ||
        !cuk_pool_nhwc4_ok(p->pool_dt, &p->pool, aligned, aligned))
        return OPSCHED_OK;
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    size_t xb = (size_t)opsched_shape_numel(&x->shape) * cu_elem_size(a, x);
    size_t yb = (size_t)opsched_shape_numel(&y->shape) * cu_elem_size(a, y);
    pool_run r = {.p = p};
    float own = -1.0f, cudnn = -1.0f;
    /* the kernel's side runs cuk_pool, which takes cuk_pool_nhwc4 on these aligned buffers */
    opsched_status st = OPSCHED_OK;
    OS_TRY_GOTO(st, cu_zeroed(a, xb, &r.x), done);
    OS_TRY_GOTO(st, cu_zeroed(a, yb, &r.y), done);
    OS_TRY_GOTO(st, cu_time_reps(a, enqueue_pool, &r, &cudnn), done);
    r.own = 1;
    OS_TRY_GOTO(st, cu_time_reps(a, enqueue_pool, &r, &own), done);
    os_log(a->ctx, OPSCHED_LOG_DEBUG,
           "cuda: node '%s': pooling %lldx%lld on %lldx%lldx%lldx%lld (NHWC): cuDNN %.4f ms, "
           "four channels a thread %.4f ms",
           a->node->name, (long long)p->pool.kh, (long long)p->pool.kw, (long long)p->pool.N,
           (long long)p->pool.C, (long long)p->pool.H, (long long)p->pool.W, (double)cudnn,
           (double)own);
    p->use_cudnn = !(own >= 0.0f && (cudnn < 0.0f || own < cudnn));
done:
    if (st != OPSCHED_OK) p->use_cudnn = 1;
    (void)cudaFree(r.x);
    (void)cudaFree(r.y);
    return st;
}

/* 2-D pools go to cuDNN when it can express them (symmetric padding of at
 * most half the kernel, no dilation), otherwise and in 3-D to the kernel;
 * in NHWC the kernel that reads four channels a thread takes them where it
 * measures faster than cuDNN (pick_pool). */
opsched_status cu_plan_pool(const cu_plan_args *a, cu_plan **out)
{
    const opsched_pool_attr *at = &a->node->attr.pool;
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    dnn_plan *p = NULL;
    opsched_status st = OPSCHED_OK;
    int rank = x->shape.ndim;
    if ((rank != 4 && rank != 5) || y->shape.ndim != rank)
        return CU_UNSUPPORTED(a, "pooling of a rank-%d tensor (2-D and 3-D only)", rank);
    int is_max = a->node->op == OPSCHED_OP_MAXPOOL;
    OS_TRY(dnn_new(a, pool_launch, is_max, &p));
    p->pool_dt = cu_kdt(a, x);
    cuk_pool_desc *d = &p->pool;
    int64_t xs[5], ys[5];
    cu_strides(a, x, xs);
    cu_strides(a, y, ys);
    int hw = rank - 2; /* where H is */
    d->is_max = is_max;
    d->count_include_pad = at->count_include_pad;
    d->storage_order = at->storage_order;
    d->nhwc = cu_is_nhwc(a, y);
    d->N = x->shape.d[0];
    d->C = x->shape.d[1];
    d->H = x->shape.d[hw];
    d->W = x->shape.d[hw + 1];
    d->OH = y->shape.d[hw];
    d->OW = y->shape.d[hw + 1];
    d->kh = at->kernel[0];
    d->kw = at->kernel[1];
    d->sh = at->stride[0] ? at->stride[0] : 1;
    d->sw = at->stride[1] ? at->stride[1] : 1;
    d->dh = at->dilation[0] ? at->dilation[0] : 1;
    d->dw = at->dilation[1] ? at->dilation[1] : 1;
    d->pad_t = at->pads[0];
    d->pad_l = at->pads[1];
    d->pad_b = at->pads[2];
    d->pad_r = at->pads[3];
    int64_t xs4[4] = {xs[0], xs[1], xs[hw], xs[hw + 1]},
            ys4[4] = {ys[0], ys[1], ys[hw], ys[hw + 1]};
    memcpy(d->xs, xs4, sizeof(xs4));
    memcpy(d->ys, ys4, sizeof(ys4));
    d->D = d->OD = d->kd = d->sd = d->dd = 1;
    if (rank == 5) {
        d->D = x->shape.d[2];
        d->OD = y->shape.d[2];
        d->kd = at->depth.kernel;
        d->sd = at->depth.stride ? at->depth.stride : 1;
        d->dd = at->depth.dilation ? at->depth.dilation : 1;
        d->pad_front = at->depth.pad_begin;
        d->pad_back = at->depth.pad_end;
        d->xsd = xs[2];
        d->ysd = ys[2];
    }
    /* cuDNN has no Indices: MaxPool with its second output runs the kernel. */
    if (rank == 4 && a->node->n_outputs == 1 && a->dt != OPSCHED_BF16 &&
        cu_dtype_is_float(x->dtype) && d->dh == 1 && d->dw == 1 && d->pad_t == d->pad_b &&
        d->pad_l == d->pad_r && 2 * d->pad_t <= d->kh && 2 * d->pad_l <= d->kw) {
        int64_t x4[4] = {d->N, d->C, d->H, d->W};
        int64_t win[6] = {d->kh, d->kw, d->pad_t, d->pad_l, d->sh, d->sw};
        OS_TRY_GOTO(st,
                    pool_cudnn(a, p, is_max, d->count_include_pad, d->nhwc, x4, d->OH, d->OW, win),
                    fail);
    }
    d->generic = (a->opts->ablate & OPSCHED_ABLATE_POOL_VEC) != 0;
    if (!d->generic) OS_TRY_GOTO(st, pick_pool(a, p), fail);
    return dnn_done(a, p, out);
fail:
    cu_plan_destroy(&p->base);
    return st;
}

opsched_status cu_plan_global_pool(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0);
    dnn_plan *p = NULL;
    opsched_status st = OPSCHED_OK;
    OS_TRY(dnn_new(a, pool_launch, 0, &p));
    int is_max = a->node->op == OPSCHED_OP_GLOBALMAXPOOL;
    int64_t n, c, sp;
    ncs(&x->shape, &n, &c, &sp);
    /* [N, C, spatial...] viewed as [N, C, S, 1]; channels-last keeps C innermost. */
    int nhwc = cu_is_nhwc(a, x);
    cuk_pool_desc *d = &p->pool;
    d->is_max = is_max;
    d->count_include_pad = 1;
    d->nhwc = nhwc;
    d->N = n;
    d->C = c;
    d->H = sp;
    d->W = 1;
    d->OH = d->OW = 1;
    d->kh = sp;
    d->kw = 1;
    d->sh = d->sw = d->dh = d->dw = 1;
    d->D = d->OD = d->kd = d->sd = d->dd = 1;
    int64_t xs_nchw[4] = {c * sp, sp, 1, 1}, xs_nhwc[4] = {c * sp, 1, c, c};
    int64_t ys[4] = {c, 1, 1, 1};
    memcpy(d->xs, nhwc ? xs_nhwc : xs_nchw, sizeof(d->xs));
    memcpy(d->ys, ys, sizeof(d->ys));
    int plain = (a->opts->ablate & OPSCHED_ABLATE_REDUCTIONS) != 0; /* the window, as before */
    if (!plain && nhwc && cuk_colreduce_ok(n, sp, c)) {
        /* Channels-last is [N, S, C]: a column reduction over S, spread
         * over many blocks, not a pooling window the size of the map (the
         * pooling kernel gives each output one thread, which walks all S
         * positions alone). */
        p->col = 1;
        p->col_fn = is_max ? CUK_COL_MAX : CUK_COL_MEAN;
        p->col_o = n;
        p->col_r = sp;
        p->col_c = c;
        OS_TRY_GOTO(st, cu_colreduce_alloc(a, &p->base, n, sp, c), fail);
        snprintf(a->info->algo, sizeof(a->info->algo), "kernel columns");
        *out = &p->base;
        return OPSCHED_OK;
    }
    if (!plain && !nhwc && sp > 1 && n * c > 0 &&
        cuk_reduce_ok(is_max ? CUK_R_MAX : CUK_R_MEAN, (cuk_dtype)a->kt)) {
        /* NCHW: a contiguous row of S a channel, reduced by a warp or a
         * block (the reduction family), not one thread walking the row. */
        p->rows = 1;
        p->row_fn = is_max ? CUK_R_MAX : CUK_R_MEAN;
        cuk_reduce_desc *r = &p->row_d;
        r->n_kept = 1;
        r->kept[0] = n * c;
        r->in_kept[0] = sp;
        r->out_kept[0] = 1;
        r->n_red = 1;
        r->red[0] = sp;
        r->in_red[0] = 1;
        snprintf(a->info->algo, sizeof(a->info->algo), "kernel rows");
        *out = &p->base;
        return OPSCHED_OK;
    }
    if (a->dt != OPSCHED_BF16) {
        int64_t x4[4] = {n, c, sp, 1};
        int64_t win[6] = {sp, 1, 0, 0, 1, 1};
        OS_TRY_GOTO(st, pool_cudnn(a, p, is_max, 1, nhwc, x4, 1, 1, win), fail);
    }
    return dnn_done(a, p, out);
fail:
    cu_plan_destroy(&p->base);
    return st;
}

/* ---- activations ----------------------------------------------------- */

static opsched_status act_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                 void *const *in, void *const *out)
{
    dnn_plan *p = (dnn_plan *)base;
    const float one = 1.0f, zero = 0.0f;
    if (!p->use_cudnn) {
        CUDA_CHECK(ctx, cuk_ew_unary(p->ufn, &p->prm, (cuk_dtype)p->kt, (cuk_dtype)p->kt, p->n,
                                     in[0], out[0], s));
        return OPSCHED_OK;
    }
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    CUDNN_CHECK(ctx, cudnnActivationForward(dev->cudnn, p->act_desc, &one, p->x_desc, in[0], &zero,
                                            p->x_desc, out[0]));
    return OPSCHED_OK;
}

opsched_status cu_plan_activation(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0);
    dnn_plan *p = NULL;
    opsched_status st = OPSCHED_OK;
    OS_TRY(dnn_new(a, act_launch, 0, &p));
    p->n = opsched_shape_numel(&x->shape);
    cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
    double coef = 0.0;
    int cudnn_ok = a->dt != OPSCHED_BF16 && cudnn_dims_ok(&p->n, 1);
    cu_unary_fn_of(a->node, &p->ufn, &p->prm);
    switch (a->node->op) {
    case OPSCHED_OP_RELU:
        break;
    case OPSCHED_OP_SIGMOID:
        mode = CUDNN_ACTIVATION_SIGMOID;
        break;
    case OPSCHED_OP_TANH:
        mode = CUDNN_ACTIVATION_TANH;
        break;
    default: /* Clip: min in alpha, max in beta */
        if (p->prm.alpha != 0.0f) {
            cudnn_ok = 0;
        } else if (!isinf(p->prm.beta) || p->prm.beta < 0) {
            mode = CUDNN_ACTIVATION_CLIPPED_RELU;
            coef = p->prm.beta;
        }
        break;
    }
    if (cudnn_ok) {
        OS_TRY_GOTO(st, desc_4d(a, &p->x_desc, 0, 1, 1, 1, p->n), fail);
        CUDNN_CHECK_GOTO(a->ctx, st, cudnnCreateActivationDescriptor(&p->act_desc), fail);
        CUDNN_CHECK_GOTO(
            a->ctx, st,
            cudnnSetActivationDescriptor(p->act_desc, mode, CUDNN_NOT_PROPAGATE_NAN, coef), fail);
        p->use_cudnn = 1;
    }
    return dnn_done(a, p, out);
fail:
    cu_plan_destroy(&p->base);
    return st;
}

/* ---- batch normalisation --------------------------------------------- */

static opsched_status bn_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                void *const *in, void *const *out)
{
    dnn_plan *p = (dnn_plan *)base;
    const float one = 1.0f, zero = 0.0f;
    if (p->cat) {
        cuk_cat_parts parts = p->parts;
        for (int k = 0; k < parts.n; k++)
            parts.ptr[k] = in[k == 0 ? 0 : 4 + k];
        CUDA_CHECK(ctx, cuk_batchnorm_cat(p->bn_dt, p->n, p->channels, (float)p->eps, &parts,
                                          in[1], in[2], in[3], in[4], out[0], p->act.on,
                                          p->act.fn, &p->act.prm, s));
        return OPSCHED_OK;
    }
    if (!p->use_cudnn) {
        CUDA_CHECK(ctx, cuk_batchnorm(p->bn_dt, p->n, p->channels, p->cstride, (float)p->eps,
                                      in[0], in[1], in[2], in[3], in[4], out[0], p->act.on,
                                      p->act.fn, &p->act.prm, s));
        return OPSCHED_OK;
    }
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    CUDNN_CHECK(ctx, cudnnBatchNormalizationForwardInference(
                         dev->cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, p->x_desc, in[0],
                         p->x_desc, out[0], p->p_desc, in[1], in[2], in[3], in[4], p->eps));
    return OPSCHED_OK;
}

opsched_status cu_plan_batchnorm(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0);
    dnn_plan *p = NULL;
    opsched_status st = OPSCHED_OK;
    OS_TRY(dnn_new(a, bn_launch, 0, &p));
    int64_t n, c, sp;
    ncs(&x->shape, &n, &c, &sp);
    p->n = opsched_shape_numel(&x->shape);
    p->channels = c;
    p->cstride = cu_is_nhwc(a, x) ? 1 : sp;
    p->eps = a->node->attr.bn.epsilon;
    p->bn_dt = cu_kdt(a, x);
    /* the activation after it (opsched_node_epilogue) in the same pass:
     * the own kernel then, cuDNN's inference call has none */
    cu_act_for(a, &p->act);
    if (p->act.on && !cuk_ew_unary_ok(p->act.fn, p->bn_dt, p->bn_dt)) p->act.on = 0;
    a->info->fused_activation = p->act.on;
    int64_t dims[4] = {n, c, sp, 1};
    if (a->dt == OPSCHED_F32 && !p->act.on && !cu_is_nhwc(a, x) && cudnn_dims_ok(dims, 4) &&
        p->eps >= CUDNN_BN_MIN_EPSILON) {
        OS_TRY_GOTO(st, desc_4d(a, &p->x_desc, 0, n, c, sp, 1), fail);
        CUDNN_CHECK_GOTO(a->ctx, st, cudnnCreateTensorDescriptor(&p->p_desc), fail);
        CUDNN_CHECK_GOTO(
            a->ctx, st,
            cudnnDeriveBNTensorDescriptor(p->p_desc, p->x_desc, CUDNN_BATCHNORM_SPATIAL), fail);
        p->use_cudnn = 1;
    }
    /* the Concat it normalises read in place (NHWC: each part's channels
     * innermost, so a pixel's channels are found part by part) */
    int cat = a->opts->norm_concat && !(a->opts->ablate & OPSCHED_ABLATE_NORM_CONCAT) &&
                      cu_is_nhwc(a, x)
                  ? opsched_norm_concat(a->g, cu_node_index(a))
                  : -1;
    if (cat >= 0) {
        const opsched_node *cn = opsched_graph_node(a->g, cat);
        cuk_cat_parts *pp = &p->parts;
        int at = 0, ok = cn->n_inputs <= CUK_BN_MAX_PARTS;
        pp->n = cn->n_inputs;
        for (int k = 0; k < cn->n_inputs && ok; k++) {
            const opsched_tensor *t = opsched_graph_tensor(a->g, cn->inputs[k]);
            ok = cu_is_nhwc(a, t) && cu_kdt(a, t) == p->bn_dt && cu_fits_int(t->shape.d[1]);
            pp->ch[k] = ok ? (int)t->shape.d[1] : 0;
            pp->off[k] = at;
            at += pp->ch[k];
        }
        if (ok && cuk_batchnorm_cat_ok(p->n, p->channels, pp)) {
            p->cat = 1;
            p->use_cudnn = 0;
            a->info->fused_norm_concat = cn->n_inputs;
            p->base.n_in = 4 + cn->n_inputs;
            for (int k = 5; k < p->base.n_in && k < 64; k++)
                p->base.need_in |= 1ull << k;
        }
    }
    OS_TRY_GOTO(st, dnn_done(a, p, out), fail);
    if (p->act.on || p->cat)
        snprintf(a->info->algo, sizeof(a->info->algo), "kernel%s%s%s", p->cat ? "+concat" : "",
                 p->act.on ? "+" : "", p->act.on ? opsched_node_op_name(p->act.node) : "");
    return OPSCHED_OK;
fail:
    cu_plan_destroy(&p->base);
    return st;
}

/* ---- softmax --------------------------------------------------------- */

static opsched_status softmax_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base,
                                     cudaStream_t s, void *const *in, void *const *out)
{
    dnn_plan *p = (dnn_plan *)base;
    const float one = 1.0f, zero = 0.0f;
    if (!p->use_cudnn) {
        CUDA_CHECK(ctx, cuk_softmax(p->kt, p->outer, p->axis, p->inner, in[0], out[0], s));
        return OPSCHED_OK;
    }
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    CUDNN_CHECK(ctx,
                cudnnSoftmaxForward(dev->cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL,
                                    &one, p->x_desc, in[0], &zero, p->x_desc, out[0]));
    return OPSCHED_OK;
}

opsched_status cu_plan_softmax(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0);
    dnn_plan *p = NULL;
    opsched_status st = OPSCHED_OK;
    OS_TRY(dnn_new(a, softmax_launch, 0, &p));
    cu_axis_split(a, x, (int)a->node->attr.axis.axis, &p->outer, &p->axis, &p->inner);
    int64_t dims[4] = {p->outer, p->axis, p->inner, 1};
    if (a->dt != OPSCHED_BF16 && cudnn_dims_ok(dims, 4)) {
        /* Softmax over C of [outer, axis, inner, 1] for every (n, h, w). */
        OS_TRY_GOTO(st, desc_4d(a, &p->x_desc, 0, p->outer, p->axis, p->inner, 1), fail);
        p->use_cudnn = 1;
    }
    return dnn_done(a, p, out);
fail:
    cu_plan_destroy(&p->base);
    return st;
}

/* ---- LRN ------------------------------------------------------------- */

static opsched_status lrn_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                 void *const *in, void *const *out)
{
    dnn_plan *p = (dnn_plan *)base;
    const float one = 1.0f, zero = 0.0f;
    if (!p->use_cudnn) {
        CUDA_CHECK(ctx, cuk_lrn(p->kt, &p->lrn, in[0], out[0], s));
        return OPSCHED_OK;
    }
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    CUDNN_CHECK(ctx,
                cudnnLRNCrossChannelForward(dev->cudnn, p->lrn_desc, CUDNN_LRN_CROSS_CHANNEL_DIM1,
                                            &one, p->x_desc, in[0], &zero, p->x_desc, out[0]));
    return OPSCHED_OK;
}

opsched_status cu_plan_lrn(const cu_plan_args *a, cu_plan **out)
{
    const opsched_lrn_attr *l = &a->node->attr.lrn;
    const opsched_tensor *x = cu_in(a, 0);
    dnn_plan *p = NULL;
    opsched_status st = OPSCHED_OK;
    OS_TRY(dnn_new(a, lrn_launch, 0, &p));
    int64_t n, c, sp;
    ncs(&x->shape, &n, &c, &sp);
    int nhwc = cu_is_nhwc(a, x);
    cuk_lrn_desc *d = &p->lrn;
    d->N = n;
    d->C = c;
    d->S = sp;
    d->cstride = nhwc ? 1 : sp;
    d->sstride = nhwc ? c : 1;
    d->size = l->size;
    d->alpha = l->alpha;
    d->beta = l->beta;
    d->bias = l->bias;
    int64_t dims[4] = {n, c, sp, 1};
    /* cuDNN divides alpha by the window like ONNX, and centres the window
     * the same way (floor((n-1)/2) behind, the rest ahead). */
    if (a->dt != OPSCHED_BF16 && !nhwc && cudnn_dims_ok(dims, 4) && l->size >= CUDNN_LRN_MIN_N &&
        l->size <= CUDNN_LRN_MAX_N && l->bias >= CUDNN_LRN_MIN_K && l->beta >= CUDNN_LRN_MIN_BETA) {
        OS_TRY_GOTO(st, desc_4d(a, &p->x_desc, 0, n, c, sp, 1), fail);
        CUDNN_CHECK_GOTO(a->ctx, st, cudnnCreateLRNDescriptor(&p->lrn_desc), fail);
        CUDNN_CHECK_GOTO(
            a->ctx, st,
            cudnnSetLRNDescriptor(p->lrn_desc, (unsigned)l->size, l->alpha, l->beta, l->bias),
            fail);
        p->use_cudnn = 1;
    }
    return dnn_done(a, p, out);
fail:
    cu_plan_destroy(&p->base);
    return st;
}
