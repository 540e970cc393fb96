/*
 * cpu_train.c - the training graph's own operators on the CPU backend:
 * BatchNormalization in training form and its backward, and a
 * convolution's filter gradient.
 *
 * The filter gradient is oneDNN's convolution backward-weights primitive
 * (planned with the forward convolution as its hint, as oneDNN asks), on
 * the caller's plain buffers; a plain loop where oneDNN has no
 * implementation or where `--algo loop` asks for it.  The batch-norm pair
 * are plain loops over the [N, C, rest] view, their sums in double: oneDNN's
 * training batch norm keeps the variance where these operators keep
 * 1 / sqrt(variance + epsilon), as cuDNN and PyTorch do.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_impl.h"

/* x as [N, C, S]: S the product of the axes after the channels. */
static void ncs(const opsched_shape *s, int64_t *n, int64_t *c, int64_t *sp)
{
    *n = s->d[0];
    *c = s->ndim > 1 ? s->d[1] : 1;
    *sp = cpu_span(s, 2, s->ndim);
}

/* y = (x - mean) inv scale + bias; outputs y, mean, inv. */
static opsched_status loop_bn_train(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                    void *const *out)
{
    (void)ctx;
    int64_t N, C, S;
    ncs(&n->in[0], &N, &C, &S);
    const double eps = n->attr.bn.epsilon, m = (double)(N * S);
    const opsched_dtype xt = n->in_dt[0], pt = n->in_dt[1];
    for (int64_t c = 0; c < C; c++) {
        double sum = 0, dev = 0;
        for (int64_t b = 0; b < N; b++)
            for (int64_t s = 0; s < S; s++)
                sum += cpu_load_f(in[0], xt, (b * C + c) * S + s);
        const double mean = sum / m;
        for (int64_t b = 0; b < N; b++)
            for (int64_t s = 0; s < S; s++) {
                double d = cpu_load_f(in[0], xt, (b * C + c) * S + s) - mean;
                dev += d * d;
            }
        const double inv = 1.0 / sqrt(dev / m + eps);
        const double k = inv * cpu_load_f(in[1], pt, c), sh = cpu_load_f(in[2], pt, c);
        for (int64_t b = 0; b < N; b++)
            for (int64_t s = 0; s < S; s++) {
                int64_t i = (b * C + c) * S + s;
                cpu_store_f(out[0], n->out_dt[0], i, (cpu_load_f(in[0], xt, i) - mean) * k + sh);
            }
        cpu_store_f(out[1], n->out_dt[1], c, mean);
        cpu_store_f(out[2], n->out_dt[2], c, inv);
    }
    return OPSCHED_OK;
}

/* dy, x, scale, mean, inv -> dx, dscale, dbias:
 * dbias = sum dy, dscale = sum dy xhat,
 * dx = scale inv (dy - dbias / m - xhat dscale / m). */
static opsched_status loop_bn_grad(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                   void *const *out)
{
    (void)ctx;
    int64_t N, C, S;
    ncs(&n->in[1], &N, &C, &S);
    const double m = (double)(N * S);
    const opsched_dtype gt = n->in_dt[0], xt = n->in_dt[1];
    for (int64_t c = 0; c < C; c++) {
        const double mean = cpu_load_f(in[3], n->in_dt[3], c);
        const double inv = cpu_load_f(in[4], n->in_dt[4], c);
        double db = 0, ds = 0;
        for (int64_t b = 0; b < N; b++)
            for (int64_t s = 0; s < S; s++) {
                int64_t i = (b * C + c) * S + s;
                double g = cpu_load_f(in[0], gt, i);
                db += g;
                ds += g * (cpu_load_f(in[1], xt, i) - mean) * inv;
            }
        const double k = cpu_load_f(in[2], n->in_dt[2], c) * inv;
        for (int64_t b = 0; b < N; b++)
            for (int64_t s = 0; s < S; s++) {
                int64_t i = (b * C + c) * S + s;
                double xhat = (cpu_load_f(in[1], xt, i) - mean) * inv;
                cpu_store_f(out[0], n->out_dt[0], i,
                            k * (cpu_load_f(in[0], gt, i) - db / m - xhat * ds / m));
            }
        cpu_store_f(out[1], n->out_dt[1], c, ds);
        cpu_store_f(out[2], n->out_dt[2], c, db);
    }
    return OPSCHED_OK;
}

/* dW[m, ci, kh, kw] = sum over n, oh, ow of dy[n, m, oh, ow] times the input
 * element the tap reads in the forward convolution. */
static opsched_status loop_conv_grad_filter(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                            void *const *out)
{
    (void)ctx;
    const opsched_conv_attr *c = &n->attr.conv;
    const opsched_shape *xs = &n->in[0], *ys = &n->in[1], *ws = &n->out[0];
    const int64_t N = xs->d[0], C = xs->d[1], H = xs->d[2], W = xs->d[3];
    const int64_t M = ys->d[1], OH = ys->d[2], OW = ys->d[3], KH = ws->d[2], KW = ws->d[3];
    const int64_t Cg = ws->d[1], Mg = M / c->groups;
    const opsched_dtype xt = n->in_dt[0], gt = n->in_dt[1];
    for (int64_t m = 0; m < M; m++) {
        const int64_t g = m / Mg;
        for (int64_t ci = 0; ci < Cg; ci++)
            for (int64_t kh = 0; kh < KH; kh++)
                for (int64_t kw = 0; kw < KW; kw++) {
                    double acc = 0;
                    for (int64_t b = 0; b < N; b++)
                        for (int64_t oh = 0; oh < OH; oh++) {
                            int64_t h = oh * c->stride[0] - c->pads[0] + kh * c->dilation[0];
                            if (h < 0 || h >= H) continue;
                            for (int64_t ow = 0; ow < OW; ow++) {
                                int64_t v = ow * c->stride[1] - c->pads[1] + kw * c->dilation[1];
                                if (v < 0 || v >= W) continue;
                                acc +=
                                    cpu_load_f(in[1], gt, ((b * M + m) * OH + oh) * OW + ow) *
                                    cpu_load_f(in[0], xt, ((b * C + g * Cg + ci) * H + h) * W + v);
                            }
                        }
                    cpu_store_f(out[0], n->out_dt[0], ((m * Cg + ci) * KH + kh) * KW + kw, acc);
                }
    }
    return OPSCHED_OK;
}

/* oneDNN's backward-weights primitive, the forward convolution its hint. */
static opsched_status grad_filter_prim(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                       opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    const opsched_conv_attr *c = &n->attr.conv;
    const opsched_shape *xs = &n->in[0], *ys = &n->in[1], *ws = &n->out[0];
    opsched_status st = OPSCHED_OK;
    dnnl_memory_desc_t src, wei, dst;
    OS_TRY(cpu_plain_md(ctx, 4, xs->d, &src));
    OS_TRY(cpu_plain_md(ctx, 4, ys->d, &dst));
    if (c->groups > 1) {
        int64_t gd[5] = {c->groups, ws->d[0] / c->groups, ws->d[1], ws->d[2], ws->d[3]};
        OS_TRY(cpu_plain_md(ctx, 5, gd, &wei));
    } else {
        OS_TRY(cpu_plain_md(ctx, 4, ws->d, &wei));
    }
    dnnl_dims_t kernel, strides, dil, pl, pr;
    cpu_window_dims(4, &c->depth, c->kernel, c->stride, c->dilation, c->pads, kernel, strides, dil,
                    pl, pr);
    dnnl_convolution_desc_t fd, bd;
    CPU_DNNL(ctx, dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training,
                                                             dnnl_convolution_direct, &src, &wei,
                                                             NULL, &dst, strides, dil, pl, pr));
    CPU_DNNL(ctx, dnnl_dilated_convolution_backward_weights_desc_init(
                      &bd, dnnl_convolution_direct, &src, &wei, NULL, &dst, strides, dil, pl, pr));
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    OS_TRY(cpu_attr_create(ctx, 1.0f, NULL, &attr));
    dnnl_status_t s = dnnl_primitive_desc_create(&hint, &fd, attr, dev->engine, NULL);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(&pd, &bd, attr, dev->engine, hint);
    dnnl_primitive_attr_destroy(attr);
    if (hint) dnnl_primitive_desc_destroy(hint);
    if (s == dnnl_unimplemented)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                       "ConvBackwardFilter: oneDNN has no implementation for this configuration");
    if (s != dnnl_success)
        return cpu_dnnl_fail(ctx, s, "dnnl_primitive_desc_create", __FILE__, __LINE__);
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
        snprintf(info->algo, sizeof(info->algo), "%s", impl);
    int args[3] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS};
    int io[3] = {0, 1, CPU_IO_OUT(0)};
    st = cpu_prim_from_pd(ctx, dev, &p->main, pd, args, io, 3);
    return st;
}

opsched_status cpu_ops_train(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                             const opsched_plan_options *opts, opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    for (int i = 0; i < n->n_in; i++)
        if (n->has_in[i] && !cpu_is_float(n->in_dt[i]))
            return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "cpu backend: %s of %s tensors",
                           opsched_op_name(n->op), opsched_dtype_name(n->in_dt[i]));
    snprintf(info->algo, sizeof(info->algo), "loop");
    switch (n->op) {
    case OPSCHED_OP_BATCHNORM_TRAIN:
        p->loop = loop_bn_train;
        return OPSCHED_OK;
    case OPSCHED_OP_BATCHNORM_GRAD:
        p->loop = loop_bn_grad;
        return OPSCHED_OK;
    case OPSCHED_OP_CONV_GRAD_FILTER: {
        const char *algo = opts && opts->algo ? opts->algo : "heuristic";
        int all_f32 = 1;
        for (int i = 0; i < n->n_in; i++)
            all_f32 &= n->in_dt[i] == OPSCHED_F32;
        if (strcmp(algo, "loop") != 0 && all_f32 && n->out_dt[0] == OPSCHED_F32) {
            opsched_status st = grad_filter_prim(ctx, dev, p, info);
            if (st != OPSCHED_ERR_UNSUPPORTED) return st;
            opsched_ctx_clear_error(ctx);
            cpu_prim_release(&p->main);
            snprintf(info->algo, sizeof(info->algo), "loop");
        }
        p->loop = loop_conv_grad_filter;
        return OPSCHED_OK;
    }
    default:
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "cpu backend: %s is not a training operator",
                       opsched_op_name(n->op));
    }
}
