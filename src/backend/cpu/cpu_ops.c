/*
 * cpu_ops.c - how the CPU backend runs each operator: the oneDNN primitive
 * it is mapped to (descriptors on plain row-major f32 layouts, so the
 * caller's buffers are used as they are) or the plain C loop that runs it
 * where oneDNN has no matching primitive or cannot express the semantics
 * (ONNX's even-sized LRN window, PyTorch's average pooling divisor in ceil
 * mode, a broadcast first operand of Sub or Div, Pow...), where a tensor is
 * not a float one (oneDNN sees f32 only here), and for every operator of
 * the generic families.
 *
 * A plan's info.algo names what runs: the convolution algorithm, oneDNN's
 * implementation ("jit:avx2", "ref:any"...) or "loop".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/cpu_impl.h"

enum { IN0 = 0, IN1 = 1, IN2 = 2, IN3 = 3, IN4 = 4, OUT0 = CPU_IO_OUT(0) };

static int64_t numel_from(const opsched_shape *s, int from, int to)
{
    int64_t n = 1;
    for (int i = from; i < to; i++)
        n *= s->d[i];
    return n;
}

static void set_algo(opsched_plan_info *info, const char *name)
{
    snprintf(info->algo, sizeof(info->algo), "%s", name);
}

/* Names oneDNN's implementation in info, then makes the primitive. */
static opsched_status finish(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p, dnnl_primitive_desc_t pd,
                             const int *args, const int *io, int n, opsched_plan_info *info)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
        set_algo(info, impl);
    return cpu_prim_from_pd(ctx, dev, &p->main, pd, args, io, n);
}

static opsched_status plain(opsched_ctx *ctx, const opsched_shape *s, dnnl_memory_desc_t *md)
{
    return cpu_plain_md(ctx, s->ndim, s->d, md);
}

/* A tensor seen as [N, C, 1, rest]: how per-channel primitives take any rank. */
static opsched_status nc1s_md(opsched_ctx *ctx, const opsched_shape *s, dnnl_memory_desc_t *md)
{
    int64_t d[4] = {s->d[0], s->ndim > 1 ? s->d[1] : 1, 1, numel_from(s, 2, s->ndim)};
    return cpu_plain_md(ctx, 4, d, md);
}

/* ---- convolution -------------------------------------------------------- */

/* The epilogue activation as oneDNN eltwise post-ops (HardSigmoid, which
 * oneDNN 2.6 lacks, as linear then clip). */
static opsched_status append_act(opsched_ctx *ctx, dnnl_post_ops_t po, const cpu_node *n)
{
    const opsched_op_attr *a = &n->act_attr;
    dnnl_alg_kind_t alg;
    float alpha = 0.f, beta = 0.f;
    switch (n->act_op) {
    case OPSCHED_OP_RELU: alg = dnnl_eltwise_relu; break;
    case OPSCHED_OP_CLIP:
        alg = dnnl_eltwise_clip_v2;
        alpha = a->clip.min;
        beta = a->clip.max;
        break;
    case OPSCHED_OP_SIGMOID: alg = dnnl_eltwise_logistic; break;
    case OPSCHED_OP_TANH: alg = dnnl_eltwise_tanh; break;
    case OPSCHED_OP_GELU:
        alg = a->gelu.tanh_approx ? dnnl_eltwise_gelu_tanh : dnnl_eltwise_gelu_erf;
        break;
    case OPSCHED_OP_HARDSWISH: alg = dnnl_eltwise_hardswish; break;
    case OPSCHED_OP_HARDSIGMOID:
        CPU_DNNL(ctx, dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear,
                                                   a->hardsigmoid.alpha, a->hardsigmoid.beta));
        alg = dnnl_eltwise_clip_v2;
        alpha = 0.f;
        beta = 1.f;
        break;
    case OPSCHED_OP_UNARY:
        alpha = a->unary.alpha;
        switch (a->unary.fn) {
        case OPSCHED_UNARY_LEAKY_RELU: alg = dnnl_eltwise_relu; break;
        case OPSCHED_UNARY_ELU: alg = dnnl_eltwise_elu; break;
        case OPSCHED_UNARY_SOFTPLUS: alg = dnnl_eltwise_soft_relu; alpha = 0.f; break;
        case OPSCHED_UNARY_SWISH: alg = dnnl_eltwise_swish; break;
        case OPSCHED_UNARY_MISH: alg = dnnl_eltwise_mish; alpha = 0.f; break;
        default:
            return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "cpu: %s is not an epilogue activation",
                           opsched_unary_fn_name(a->unary.fn));
        }
        break;
    default:
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "cpu: %s is not an epilogue activation",
                       opsched_op_name(n->act_op));
    }
    CPU_DNNL(ctx, dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, beta));
    return OPSCHED_OK;
}

static opsched_status conv_pd(opsched_ctx *ctx, cpu_dev *dev, const cpu_node *n,
                              dnnl_alg_kind_t alg, const char *what, dnnl_primitive_desc_t *pd)
{
    opsched_status st = OPSCHED_OK;
    const opsched_conv_attr *c = &n->attr.conv;
    const opsched_shape *w = &n->in[1];
    dnnl_memory_desc_t src, wei, bias, dst;
    dnnl_convolution_desc_t cd;
    dnnl_post_ops_t po = NULL;
    OS_TRY(plain(ctx, &n->in[0], &src));
    OS_TRY(plain(ctx, &n->out[0], &dst));
    if (c->groups > 1) {
        int64_t gd[OPSCHED_MAX_DIMS + 1] = {c->groups, w->d[0] / c->groups};
        for (int i = 1; i < w->ndim; i++)
            gd[1 + i] = w->d[i];
        OS_TRY(cpu_plain_md(ctx, w->ndim + 1, gd, &wei));
    } else {
        OS_TRY(plain(ctx, w, &wei));
    }
    int has_bias = n->n_in > 2 && n->has_in[2];
    if (has_bias) OS_TRY(cpu_plain_md(ctx, 1, &w->d[0], &bias));
    dnnl_dims_t kernel, strides, dil, pl, pr;
    cpu_window_dims(n->in[0].ndim, &c->depth, c->kernel, c->stride, c->dilation, c->pads, kernel,
                    strides, dil, pl, pr);
    CPU_DNNL(ctx, dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, alg, &src,
                                                             &wei, has_bias ? &bias : NULL, &dst,
                                                             strides, dil, pl, pr));
    if (n->fused_res || n->fused_act) CPU_DNNL(ctx, dnnl_post_ops_create(&po));
    /* The residual first, act(conv + b + r): a sum post-op over r copied
     * into the output first (cpu_loop_conv_residual).  With a binary add
     * post-op oneDNN took a slower implementation on these plain layouts:
     * ResNet-50's layer1.1.conv3 ran in 48 ms against 12 ms with the sum
     * (profiled on a 2-core machine). */
    if (n->fused_res) CPU_DNNL_GOTO(st, ctx, dnnl_post_ops_append_sum(po, 1.0f), done);
    if (n->fused_act) OS_TRY_GOTO(st, append_act(ctx, po, n), done);
    st = cpu_pd_create(ctx, dev, &cd, 1.0f, po, what, pd);
done:
    if (po) dnnl_post_ops_destroy(po);
    return st;
}

static opsched_status conv_prim(opsched_ctx *ctx, cpu_dev *dev, const cpu_node *n,
                                dnnl_alg_kind_t alg, const char *what, cpu_prim *out,
                                const char **chosen)
{
    dnnl_primitive_desc_t pd = NULL;
    OS_TRY(conv_pd(ctx, dev, n, alg, what, &pd));
    const dnnl_convolution_desc_t *cd = NULL;
    *chosen = alg == dnnl_convolution_winograd ? "winograd" : "direct";
    if (dnnl_primitive_desc_query(pd, dnnl_query_convolution_d, 0, &cd) == dnnl_success && cd)
        *chosen = cd->alg_kind == dnnl_convolution_winograd ? "winograd" : "direct";
    int has_bias = n->n_in > 2 && n->has_in[2];
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    int io[4] = {IN0, IN1, OUT0, IN2};
    return cpu_prim_from_pd(ctx, dev, out, pd, args, io, has_bias ? 4 : 3);
}

/* Milliseconds of the fastest of a few runs of prim on zeroed buffers. */
static opsched_status time_prim(opsched_ctx *ctx, cpu_dev *dev, const cpu_node *n, cpu_prim *prim,
                                double *best)
{
    opsched_status st = OPSCHED_OK;
    void *in[3] = {NULL, NULL, NULL}, *out[1] = {NULL}; /* x, w, bias: the residual is
                                                          * the pre-hook's, not run here */
    for (int i = 0; i < n->n_in && i < 3; i++) {
        if (!n->has_in[i]) continue;
        size_t bytes = (size_t)opsched_shape_numel(&n->in[i]) * sizeof(float);
        if (!(in[i] = cpu_aligned_alloc(bytes))) goto nomem;
        memset(in[i], 0, bytes);
    }
    size_t obytes = (size_t)opsched_shape_numel(&n->out[0]) * sizeof(float);
    if (!(out[0] = cpu_aligned_alloc(obytes))) goto nomem;
    memset(out[0], 0, obytes); /* a sum post-op reads it */
    *best = 1e300;
    for (int r = 0; r < 4; r++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        OS_TRY_GOTO(st, cpu_prim_run(ctx, prim, dev->stream, in, out), done);
        CPU_DNNL_GOTO(st, ctx, dnnl_stream_wait(dev->stream), done);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (r > 0 && ms < *best) *best = ms; /* the first run warms up */
    }
    goto done;
nomem:
    st = OS_FAIL(ctx, OPSCHED_ERR_DEVICE_OOM, "cpu: buffers to time the convolution do not fit");
done:
    for (int i = 0; i < 3; i++)
        free(in[i]);
    free(out[0]);
    return st;
}

static opsched_status conv_find(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                opsched_plan_info *info)
{
    static const dnnl_alg_kind_t algs[] = {dnnl_convolution_direct, dnnl_convolution_winograd};
    static const char *const names[] = {"direct", "winograd"};
    double best_ms = 0;
    for (int i = 0; i < 2; i++) {
        cpu_prim cand;
        const char *chosen = NULL;
        double ms = 0;
        memset(&cand, 0, sizeof(cand));
        opsched_status st = conv_prim(ctx, dev, &p->node, algs[i], names[i], &cand, &chosen);
        if (st == OPSCHED_ERR_UNSUPPORTED) continue;
        OS_TRY(st);
        st = time_prim(ctx, dev, &p->node, &cand, &ms);
        if (st != OPSCHED_OK) {
            cpu_prim_release(&cand);
            return st;
        }
        if (!p->main.prim || ms < best_ms) {
            cpu_prim_release(&p->main);
            p->main = cand;
            best_ms = ms;
            set_algo(info, chosen);
        } else {
            cpu_prim_release(&cand);
        }
    }
    if (!p->main.prim)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                       "find: oneDNN has no convolution algorithm for this shape");
    return OPSCHED_OK;
}

opsched_status cpu_ops_conv(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                            const opsched_plan_options *opts, opsched_plan_info *info)
{
    const char *algo = opts->algo ? opts->algo : "heuristic";
    const char *chosen = NULL;
    dnnl_alg_kind_t alg;
    for (int i = 0; i < p->node.n_in; i++)
        if (p->node.has_in[i] && !cpu_is_float(p->node.in_dt[i]))
            return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                           "cpu backend: Conv on %s tensors (it takes float tensors only)",
                           opsched_dtype_name(p->node.in_dt[i]));
    if (p->node.fused_res) p->pre = cpu_loop_conv_residual;
    if (strcmp(algo, "find") == 0) return conv_find(ctx, dev, p, info);
    if (strcmp(algo, "heuristic") == 0)
        alg = dnnl_convolution_auto;
    else if (strcmp(algo, "direct") == 0)
        alg = dnnl_convolution_direct;
    else if (strcmp(algo, "winograd") == 0)
        alg = dnnl_convolution_winograd;
    else
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "cpu backend: unknown convolution algorithm '%s' (valid: heuristic, find, "
                       "direct, winograd)",
                       algo);
    const char *what = alg == dnnl_convolution_auto ? "convolution" : algo;
    OS_TRY(conv_prim(ctx, dev, &p->node, alg, what, &p->main, &chosen));
    set_algo(info, chosen);
    return OPSCHED_OK;
}

/* ---- Gemm and MatMul ---------------------------------------------------- */

/* Gemm as an inner product: the fully connected layer (transB, no scaling,
 * an optional per-column bias). */
static int gemm_is_linear(const cpu_node *n)
{
    const opsched_gemm_attr *a = &n->attr.gemm;
    int has_c = n->n_in > 2 && n->has_in[2];
    if (a->trans_a || !a->trans_b || a->alpha != 1.0f) return 0;
    if (!has_c || a->beta == 0.0f) return 1;
    const opsched_shape *c = &n->in[2];
    int64_t N = n->out[0].d[1];
    return a->beta == 1.0f &&
           ((c->ndim == 1 && c->d[0] == N) || (c->ndim == 2 && c->d[0] == 1 && c->d[1] == N));
}

static opsched_status build_gemm(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                 opsched_plan_info *info)
{
    opsched_status st = OPSCHED_OK;
    const cpu_node *n = &p->node;
    const opsched_gemm_attr *a = &n->attr.gemm;
    int64_t M = n->out[0].d[0], N = n->out[0].d[1];
    int64_t K = a->trans_a ? n->in[0].d[0] : n->in[0].d[1];
    int use_c = n->n_in > 2 && n->has_in[2] && a->beta != 0.0f;
    dnnl_memory_desc_t src, wei, bias, dst;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_post_ops_t po = NULL;
    OS_TRY(plain(ctx, &n->out[0], &dst));
    if (gemm_is_linear(n)) {
        dnnl_inner_product_desc_t d;
        OS_TRY(plain(ctx, &n->in[0], &src));
        OS_TRY(plain(ctx, &n->in[1], &wei));
        OS_TRY(cpu_plain_md(ctx, 1, &N, &bias));
        CPU_DNNL(ctx, dnnl_inner_product_forward_desc_init(&d, dnnl_forward_inference, &src, &wei,
                                                           use_c ? &bias : NULL, &dst));
        OS_TRY(cpu_pd_create(ctx, dev, &d, 1.0f, NULL, "Gemm (inner product)", &pd));
        int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
        int io[4] = {IN0, IN1, OUT0, IN2};
        return finish(ctx, dev, p, pd, args, io, use_c ? 4 : 3, info);
    }
    /* General form: op(A), op(B) through strides; alpha as the output
     * scale; beta*C by a sum post-op over Y prefilled with C. */
    dnnl_dims_t ad = {M, K}, as = {a->trans_a ? 1 : K, a->trans_a ? M : 1};
    dnnl_dims_t bd = {K, N}, bs = {a->trans_b ? 1 : N, a->trans_b ? K : 1};
    dnnl_matmul_desc_t d;
    CPU_DNNL(ctx, dnnl_memory_desc_init_by_strides(&src, 2, ad, dnnl_f32, as));
    CPU_DNNL(ctx, dnnl_memory_desc_init_by_strides(&wei, 2, bd, dnnl_f32, bs));
    CPU_DNNL(ctx, dnnl_matmul_desc_init(&d, &src, &wei, NULL, &dst));
    CPU_DNNL(ctx, dnnl_post_ops_create(&po));
    if (use_c) {
        CPU_DNNL_GOTO(st, ctx, dnnl_post_ops_append_sum(po, a->beta), done);
        p->pre = cpu_loop_gemm_c;
    }
    OS_TRY_GOTO(st, cpu_pd_create(ctx, dev, &d, a->alpha, po, "Gemm (matmul)", &pd), done);
    {
        int args[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
        int io[3] = {IN0, IN1, OUT0};
        st = finish(ctx, dev, p, pd, args, io, 3, info);
    }
done:
    dnnl_post_ops_destroy(po);
    return st;
}

static opsched_status build_matmul(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                   opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
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
    int R = A.ndim > B.ndim ? A.ndim : B.ndim;
    int64_t ad[OPSCHED_MAX_DIMS], bd[OPSCHED_MAX_DIMS], od[OPSCHED_MAX_DIMS];
    for (int i = 0; i < R; i++) {
        int ai = A.ndim - R + i, bi = B.ndim - R + i;
        ad[i] = ai >= 0 ? A.d[ai] : 1;
        bd[i] = bi >= 0 ? B.d[bi] : 1;
        od[i] = i < R - 2 ? (ad[i] > bd[i] ? ad[i] : bd[i]) : 0;
    }
    od[R - 2] = ad[R - 2];
    od[R - 1] = bd[R - 1];
    dnnl_memory_desc_t src, wei, dst, bias;
    dnnl_matmul_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    OS_TRY(cpu_plain_md(ctx, R, ad, &src));
    OS_TRY(cpu_plain_md(ctx, R, bd, &wei));
    OS_TRY(cpu_plain_md(ctx, R, od, &dst));
    int has_bias = n->n_in >= 3 && n->has_in[2]; /* a fused bias Add: one value a column */
    if (has_bias) {
        int64_t bdims[OPSCHED_MAX_DIMS];
        for (int i = 0; i < R; i++)
            bdims[i] = i == R - 1 ? od[R - 1] : 1;
        OS_TRY(cpu_plain_md(ctx, R, bdims, &bias));
    }
    CPU_DNNL(ctx, dnnl_matmul_desc_init(&d, &src, &wei, has_bias ? &bias : NULL, &dst));
    dnnl_post_ops_t po = NULL;
    opsched_status st = OPSCHED_OK;
    if (n->fused_act || n->fused_res) CPU_DNNL(ctx, dnnl_post_ops_create(&po));
    if (n->fused_res) { /* r copied into the output first, as for convolutions */
        CPU_DNNL_GOTO(st, ctx, dnnl_post_ops_append_sum(po, 1.0f), done);
        p->pre = cpu_loop_conv_residual;
    }
    if (n->fused_act) OS_TRY_GOTO(st, append_act(ctx, po, n), done);
    OS_TRY_GOTO(st, cpu_pd_create(ctx, dev, &d, 1.0f, po, "MatMul", &pd), done);
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    int io[4] = {IN0, IN1, OUT0, IN2};
    st = finish(ctx, dev, p, pd, args, io, has_bias ? 4 : 3, info);
done:
    if (po) dnnl_post_ops_destroy(po);
    return st;
}

/* ---- pooling ------------------------------------------------------------ */

/* oneDNN's pooling, or the loop for what it does not do as ONNX says:
 * PyTorch's include-pad divisor in ceil mode, padding of more than half
 * the kernel (windows that may lie wholly in the padding), MaxPool's
 * Indices. */
static opsched_status build_pool(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                 opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    const opsched_pool_attr *a = &n->attr.pool;
    int avg = n->op == OPSCHED_OP_AVGPOOL;
    dnnl_dims_t kernel, strides, dil, pl, pr;
    int ns = cpu_window_dims(n->in[0].ndim, &a->depth, a->kernel, a->stride, a->dilation, a->pads,
                             kernel, strides, dil, pl, pr);
    if (n->n_out > 1) { /* MaxPool's Indices */
        p->loop = cpu_loop_pool;
        set_algo(info, "loop");
        return OPSCHED_OK;
    }
    for (int i = 0; i < ns; i++) {
        int64_t in = n->in[0].d[2 + i], out = n->out[0].d[2 + i];
        int64_t eff = kernel[i] * (dil[i] + 1) - dil[i];
        if (2 * pl[i] > kernel[i] || 2 * pr[i] > kernel[i]) {
            p->loop = cpu_loop_pool;
            set_algo(info, "loop");
            return OPSCHED_OK;
        }
        /* ceil_mode: oneDNN's sizes round down, so the last window gets
         * extra right padding; it is never read (max, exclude-pad average)
         * but PyTorch's include-pad divisor stops at the declared padding,
         * which only the loop does. */
        if ((in + pl[i] + pr[i] - eff) / strides[i] + 1 != out) {
            pr[i] = (out - 1) * strides[i] + eff - in - pl[i];
            if (avg && a->count_include_pad) {
                p->loop = cpu_loop_pool;
                set_algo(info, "loop");
                return OPSCHED_OK;
            }
        }
    }
    dnnl_alg_kind_t alg = !avg                   ? dnnl_pooling_max
                          : a->count_include_pad ? dnnl_pooling_avg_include_padding
                                                 : dnnl_pooling_avg_exclude_padding;
    dnnl_memory_desc_t src, dst;
    dnnl_pooling_v2_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    OS_TRY(plain(ctx, &n->in[0], &src));
    OS_TRY(plain(ctx, &n->out[0], &dst));
    CPU_DNNL(ctx, dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &src, &dst,
                                                    strides, kernel, dil, pl, pr));
    OS_TRY(cpu_pd_create(ctx, dev, &d, 1.0f, NULL, opsched_op_name(n->op), &pd));
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    int io[2] = {IN0, OUT0};
    return finish(ctx, dev, p, pd, args, io, 2, info);
}

static opsched_status build_global_pool(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                        opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    const opsched_shape *x = &n->in[0];
    int64_t S = numel_from(x, 2, x->ndim);
    int64_t sd[4] = {x->d[0], x->d[1], 1, S}, dd[4] = {x->d[0], x->d[1], 1, 1};
    dnnl_dims_t strides = {1, 1}, kernel = {1, S}, dil = {0, 0}, pad = {0, 0};
    dnnl_alg_kind_t alg =
        n->op == OPSCHED_OP_GLOBALMAXPOOL ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding;
    dnnl_memory_desc_t src, dst;
    dnnl_pooling_v2_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    OS_TRY(cpu_plain_md(ctx, 4, sd, &src));
    OS_TRY(cpu_plain_md(ctx, 4, dd, &dst));
    CPU_DNNL(ctx, dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &src, &dst,
                                                    strides, kernel, dil, pad, pad));
    OS_TRY(cpu_pd_create(ctx, dev, &d, 1.0f, NULL, opsched_op_name(n->op), &pd));
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    int io[2] = {IN0, OUT0};
    return finish(ctx, dev, p, pd, args, io, 2, info);
}

/* ---- element-wise ------------------------------------------------------- */

static opsched_status build_eltwise(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                    opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    dnnl_alg_kind_t alg;
    float alpha = 0.f, beta = 0.f;
    switch (n->op) {
    case OPSCHED_OP_RELU:
        alg = dnnl_eltwise_relu;
        break;
    case OPSCHED_OP_CLIP:
        alg = dnnl_eltwise_clip_v2;
        alpha = n->attr.clip.min;
        beta = n->attr.clip.max;
        break;
    case OPSCHED_OP_SIGMOID:
        alg = dnnl_eltwise_logistic;
        break;
    case OPSCHED_OP_TANH:
        alg = dnnl_eltwise_tanh;
        break;
    case OPSCHED_OP_GELU:
        alg = n->attr.gelu.tanh_approx ? dnnl_eltwise_gelu_tanh : dnnl_eltwise_gelu_erf;
        break;
    case OPSCHED_OP_HARDSWISH:
        alg = dnnl_eltwise_hardswish;
        break;
    case OPSCHED_OP_SQRT:
        alg = dnnl_eltwise_sqrt;
        break;
    default: /* Erf, HardSigmoid: no oneDNN 2.6 eltwise */
        p->loop = cpu_loop_unary;
        set_algo(info, "loop");
        return OPSCHED_OK;
    }
    int64_t total = opsched_shape_numel(&n->in[0]);
    dnnl_memory_desc_t md;
    dnnl_eltwise_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    OS_TRY(cpu_plain_md(ctx, 1, &total, &md));
    CPU_DNNL(ctx,
             dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, &md, alpha, beta));
    OS_TRY(cpu_pd_create(ctx, dev, &d, 1.0f, NULL, opsched_op_name(n->op), &pd));
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    int io[2] = {IN0, OUT0};
    return finish(ctx, dev, p, pd, args, io, 2, info);
}

/* oneDNN's binary broadcasts only its second source: the operand shaped
 * like the output goes first, which Sub and Div cannot swap. */
static opsched_status build_binary(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                   opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    const opsched_shape *o = &n->out[0];
    int64_t dims[2][OPSCHED_MAX_DIMS];
    int full[2];
    for (int k = 0; k < 2; k++) {
        const opsched_shape *s = &n->in[k];
        full[k] = 1;
        for (int i = 0; i < o->ndim; i++) {
            int si = s->ndim - o->ndim + i;
            dims[k][i] = si >= 0 ? s->d[si] : 1;
            if (dims[k][i] != o->d[i]) full[k] = 0;
        }
    }
    dnnl_alg_kind_t alg = dnnl_binary_add;
    int commutes = 1;
    switch (n->op) {
    case OPSCHED_OP_ADD:
        alg = dnnl_binary_add;
        break;
    case OPSCHED_OP_MUL:
        alg = dnnl_binary_mul;
        break;
    case OPSCHED_OP_SUB:
        alg = dnnl_binary_sub;
        commutes = 0;
        break;
    case OPSCHED_OP_DIV:
        alg = dnnl_binary_div;
        commutes = 0;
        break;
    default:
        commutes = -1;
        break; /* Pow */
    }
    int first = full[0] ? 0 : (full[1] && commutes == 1) ? 1 : -1;
    if (commutes < 0 || first < 0) {
        p->loop = cpu_loop_binary;
        set_algo(info, "loop");
        return OPSCHED_OK;
    }
    dnnl_memory_desc_t s0, s1, dst;
    dnnl_binary_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    OS_TRY(cpu_plain_md(ctx, o->ndim, dims[first], &s0));
    OS_TRY(cpu_plain_md(ctx, o->ndim, dims[1 - first], &s1));
    OS_TRY(plain(ctx, o, &dst));
    CPU_DNNL(ctx, dnnl_binary_desc_init(&d, alg, &s0, &s1, &dst));
    OS_TRY(cpu_pd_create(ctx, dev, &d, 1.0f, NULL, opsched_op_name(n->op), &pd));
    int args[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST};
    int io[3] = {first, 1 - first, OUT0};
    return finish(ctx, dev, p, pd, args, io, 3, info);
}

/* ---- data movement ------------------------------------------------------ */

static opsched_status build_concat(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                   opsched_plan_info *info)
{
    opsched_status st = OPSCHED_OK;
    const cpu_node *n = &p->node;
    dnnl_memory_desc_t srcs[128], dst;
    int args[129], io[129];
    if (n->n_in > 128)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "cpu: Concat of %d inputs", n->n_in);
    for (int i = 0; i < n->n_in; i++) {
        OS_TRY(plain(ctx, &n->in[i], &srcs[i]));
        args[i] = DNNL_ARG_MULTIPLE_SRC + i;
        io[i] = i;
    }
    args[n->n_in] = DNNL_ARG_DST;
    io[n->n_in] = OUT0;
    OS_TRY(plain(ctx, &n->out[0], &dst));
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    OS_TRY(cpu_attr_create(ctx, 1.0f, NULL, &attr));
    dnnl_status_t s = dnnl_concat_primitive_desc_create(&pd, &dst, n->n_in, (int)n->attr.axis.axis,
                                                        srcs, attr, dev->engine);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success) {
        st = cpu_dnnl_fail(ctx, s, "dnnl_concat_primitive_desc_create", __FILE__, __LINE__);
        return st;
    }
    return finish(ctx, dev, p, pd, args, io, n->n_in + 1, info);
}

static opsched_status build_transpose(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                      opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    const opsched_shape *x = &n->in[0];
    const opsched_transpose_attr *t = &n->attr.transpose;
    dnnl_dims_t in_strides, dims, strides;
    if (x->ndim == 0) {
        p->loop = cpu_loop_copy;
        set_algo(info, "loop");
        return OPSCHED_OK;
    }
    dnnl_dim_t s = 1;
    for (int i = x->ndim - 1; i >= 0; i--) {
        in_strides[i] = s;
        s *= x->d[i];
    }
    for (int i = 0; i < x->ndim; i++) {
        dims[i] = x->d[t->perm[i]];
        strides[i] = in_strides[t->perm[i]];
    }
    dnnl_memory_desc_t src, dst;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    CPU_DNNL(ctx, dnnl_memory_desc_init_by_strides(&src, x->ndim, dims, dnnl_f32, strides));
    OS_TRY(plain(ctx, &n->out[0], &dst));
    OS_TRY(cpu_attr_create(ctx, 1.0f, NULL, &attr));
    dnnl_status_t rs =
        dnnl_reorder_primitive_desc_create(&pd, &src, dev->engine, &dst, dev->engine, attr);
    dnnl_primitive_attr_destroy(attr);
    if (rs != dnnl_success)
        return cpu_dnnl_fail(ctx, rs, "dnnl_reorder_primitive_desc_create", __FILE__, __LINE__);
    int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    int io[2] = {IN0, OUT0};
    return finish(ctx, dev, p, pd, args, io, 2, info);
}

/* ---- normalisation and reduction ---------------------------------------- */

static opsched_status build_batchnorm(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                      opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    dnnl_memory_desc_t md;
    dnnl_batch_normalization_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    OS_TRY(nc1s_md(ctx, &n->in[0], &md));
    CPU_DNNL(ctx, dnnl_batch_normalization_forward_desc_init(
                      &d, dnnl_forward_inference, &md, n->attr.bn.epsilon,
                      dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift));
    OS_TRY(cpu_pd_create(ctx, dev, &d, 1.0f, NULL, "BatchNormalization", &pd));
    int args[6] = {DNNL_ARG_SRC,  DNNL_ARG_SCALE,    DNNL_ARG_SHIFT,
                   DNNL_ARG_MEAN, DNNL_ARG_VARIANCE, DNNL_ARG_DST};
    int io[6] = {IN0, IN1, IN2, IN3, IN4, OUT0};
    return finish(ctx, dev, p, pd, args, io, 6, info);
}

static opsched_status build_softmax(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                    opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    dnnl_memory_desc_t src, dst;
    dnnl_softmax_v2_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    OS_TRY(plain(ctx, &n->in[0], &src));
    OS_TRY(plain(ctx, &n->out[0], &dst));
    CPU_DNNL(ctx,
             dnnl_softmax_v2_forward_desc_init(&d, dnnl_forward_inference, dnnl_softmax_accurate,
                                               &src, &dst, (int)n->attr.axis.axis));
    OS_TRY(cpu_pd_create(ctx, dev, &d, 1.0f, NULL, "Softmax", &pd));
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    int io[2] = {IN0, OUT0};
    return finish(ctx, dev, p, pd, args, io, 2, info);
}

/* oneDNN's channel window is symmetric; ONNX's window for an even size
 * reaches one channel further up, which only the loop does. */
static opsched_status build_lrn(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    const opsched_lrn_attr *a = &n->attr.lrn;
    if (a->size % 2 == 0) {
        p->loop = cpu_loop_lrn;
        set_algo(info, "loop");
        return OPSCHED_OK;
    }
    dnnl_memory_desc_t md;
    dnnl_lrn_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    OS_TRY(nc1s_md(ctx, &n->in[0], &md));
    CPU_DNNL(ctx, dnnl_lrn_forward_desc_init(&d, dnnl_forward_inference, dnnl_lrn_across_channels,
                                             &md, a->size, a->alpha, a->beta, a->bias));
    OS_TRY(cpu_pd_create(ctx, dev, &d, 1.0f, NULL, "LRN", &pd));
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    int io[2] = {IN0, OUT0};
    return finish(ctx, dev, p, pd, args, io, 2, info);
}

static opsched_status build_layernorm(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                      opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    const opsched_shape *x = &n->in[0];
    int axis = (int)n->attr.layernorm.axis;
    int has_shift = n->n_in > 2 && n->has_in[2];
    int64_t d2[2] = {numel_from(x, 0, axis), numel_from(x, axis, x->ndim)};
    dnnl_memory_desc_t md;
    dnnl_layer_normalization_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    OS_TRY(cpu_plain_md(ctx, 2, d2, &md));
    unsigned flags = dnnl_use_scale | (has_shift ? dnnl_use_shift : 0u);
    CPU_DNNL(ctx, dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &md, NULL,
                                                             n->attr.layernorm.epsilon, flags));
    OS_TRY(cpu_pd_create(ctx, dev, &d, 1.0f, NULL, "LayerNormalization", &pd));
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_DST, DNNL_ARG_SCALE, DNNL_ARG_SHIFT};
    int io[4] = {IN0, OUT0, IN1, IN2};
    return finish(ctx, dev, p, pd, args, io, has_shift ? 4 : 3, info);
}

static opsched_status build_reduce(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                   opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    const opsched_shape *x = &n->in[0];
    const opsched_reduce_attr *r = &n->attr.reduce;
    int64_t dd[OPSCHED_MAX_DIMS];
    int reduces = 0;
    for (int i = 0; i < x->ndim; i++)
        dd[i] = r->n_axes == 0 ? 1 : x->d[i];
    for (int k = 0; k < r->n_axes; k++)
        dd[r->axes[k]] = 1;
    for (int i = 0; i < x->ndim; i++)
        reduces |= dd[i] != x->d[i];
    if (!reduces) { /* every reduced axis has extent 1: the mean is the input */
        p->loop = cpu_loop_copy;
        set_algo(info, "loop");
        return OPSCHED_OK;
    }
    dnnl_memory_desc_t src, dst;
    dnnl_reduction_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    OS_TRY(plain(ctx, x, &src));
    OS_TRY(cpu_plain_md(ctx, x->ndim, dd, &dst));
    CPU_DNNL(ctx, dnnl_reduction_desc_init(&d, dnnl_reduction_mean, &src, &dst, 0.f, 0.f));
    OS_TRY(cpu_pd_create(ctx, dev, &d, 1.0f, NULL, "ReduceMean", &pd));
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    int io[2] = {IN0, OUT0};
    return finish(ctx, dev, p, pd, args, io, 2, info);
}

/* ---- dispatch ----------------------------------------------------------- */

/* The loop that can stand in when oneDNN has no implementation. */
static cpu_loop_fn fallback_loop(opsched_op_kind op)
{
    switch (op) {
    case OPSCHED_OP_RELU:
    case OPSCHED_OP_CLIP:
    case OPSCHED_OP_SIGMOID:
    case OPSCHED_OP_TANH:
    case OPSCHED_OP_GELU:
    case OPSCHED_OP_HARDSWISH:
    case OPSCHED_OP_SQRT:
        return cpu_loop_unary;
    case OPSCHED_OP_ADD:
    case OPSCHED_OP_SUB:
    case OPSCHED_OP_MUL:
    case OPSCHED_OP_DIV:
        return cpu_loop_binary;
    case OPSCHED_OP_MAXPOOL:
    case OPSCHED_OP_AVGPOOL:
        return cpu_loop_pool;
    case OPSCHED_OP_GEMM:
        return cpu_loop_gemm;
    case OPSCHED_OP_MATMUL:
        return cpu_loop_matmul;
    case OPSCHED_OP_CONCAT:
        return cpu_loop_concat;
    case OPSCHED_OP_TRANSPOSE:
        return cpu_loop_transpose;
    case OPSCHED_OP_REDUCEMEAN:
        return cpu_loop_reduce;
    case OPSCHED_OP_LRN:
        return cpu_loop_lrn;
    default:
        return NULL;
    }
}

/* The first tensor of the node that is not a float one, or -1: inputs are
 * 0.., outputs CPU_IO_OUT(j). */
static int first_non_float(const cpu_node *n)
{
    for (int i = 0; i < n->n_in; i++)
        if (n->has_in[i] && !cpu_is_float(n->in_dt[i])) return i;
    for (int j = 0; j < n->n_out; j++)
        if (!cpu_is_float(n->out_dt[j])) return CPU_IO_OUT(j);
    return -1;
}

/* UNSUPPORTED naming the type unless every tensor is a float one. */
static opsched_status need_float(opsched_ctx *ctx, const cpu_node *n)
{
    int k = first_non_float(n);
    if (k == -1) return OPSCHED_OK;
    opsched_dtype dt = k >= 0 ? n->in_dt[k] : n->out_dt[-k - 1];
    return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                   "cpu backend: %s on %s tensors (it takes float tensors only)",
                   opsched_op_name(n->op), opsched_dtype_name(dt));
}

static opsched_status need_index_type(opsched_ctx *ctx, const cpu_node *n, int i)
{
    if (n->in_dt[i] == OPSCHED_INT64 || n->in_dt[i] == OPSCHED_INT32) return OPSCHED_OK;
    return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                   "cpu backend: %s indices of type %s (int32 or int64 only)",
                   opsched_op_name(n->op), opsched_dtype_name(n->in_dt[i]));
}

/* GatherElements and ScatterElements: the indices may not reach past the
 * data on the axes other than `axis`. */
static opsched_status need_indices_inside(opsched_ctx *ctx, const cpu_node *n, int64_t axis)
{
    OS_TRY(need_index_type(ctx, n, 1));
    for (int d = 0; d < n->in[0].ndim; d++)
        if (d != axis && n->in[1].d[d] > n->in[0].d[d])
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "cpu backend: %s indices extend to %lld on axis %d, the data to %lld",
                           opsched_op_name(n->op), (long long)n->in[1].d[d], d,
                           (long long)n->in[0].d[d]);
    return OPSCHED_OK;
}

/* QuantizeLinear: float x and scale, an integer result; DequantizeLinear:
 * an integer x, a float scale. */
static opsched_status need_quant_types(opsched_ctx *ctx, const cpu_node *n)
{
    int q = n->op == OPSCHED_OP_QUANTIZE;
    opsched_dtype x = n->in_dt[0], y = n->out_dt[0];
    int ok = cpu_is_float(n->in_dt[1]) &&
             (q ? cpu_is_float(x) && !cpu_is_float(y) : !cpu_is_float(x) && cpu_is_float(y));
    if (n->n_in > 2 && n->has_in[2] && cpu_is_float(n->in_dt[2])) ok = 0;
    if (ok) return OPSCHED_OK;
    return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                   "cpu backend: %s from %s to %s with a %s scale is not supported",
                   opsched_op_name(n->op), opsched_dtype_name(x), opsched_dtype_name(y),
                   opsched_dtype_name(n->in_dt[1]));
}

/* The operators that have no oneDNN primitive here: their loop, after the
 * checks of what it takes (*done = 1); *done = 0 for the others. */
static opsched_status loop_only(opsched_ctx *ctx, cpu_plan *p, int *done)
{
    const cpu_node *n = &p->node;
    cpu_loop_fn loop = NULL;
    *done = 1;
    switch (n->op) {
    case OPSCHED_OP_SPLIT:
        loop = cpu_loop_split;
        break;
    case OPSCHED_OP_SLICE:
        loop = cpu_loop_slice;
        break;
    case OPSCHED_OP_PAD:
        loop = cpu_loop_pad;
        break;
    case OPSCHED_OP_EXPAND:
        loop = cpu_loop_expand;
        break;
    case OPSCHED_OP_GATHER:
        OS_TRY(need_index_type(ctx, n, 1));
        loop = cpu_loop_gather;
        break;
    case OPSCHED_OP_FLATTEN:
    case OPSCHED_OP_RESHAPE:
    case OPSCHED_OP_IDENTITY:
    case OPSCHED_OP_DROPOUT:
        loop = cpu_loop_copy;
        break;
    case OPSCHED_OP_UNARY:
        loop = cpu_loop_unary;
        break;
    case OPSCHED_OP_BINARY:
        loop = cpu_loop_binary;
        break;
    case OPSCHED_OP_WHERE:
        loop = cpu_loop_where;
        break;
    case OPSCHED_OP_CAST:
        loop = cpu_loop_cast;
        break;
    case OPSCHED_OP_REDUCE:
        loop = cpu_loop_reduce;
        break;
    case OPSCHED_OP_ARGMAX:
    case OPSCHED_OP_ARGMIN:
        loop = cpu_loop_arg;
        break;
    case OPSCHED_OP_LOGSOFTMAX:
        OS_TRY(need_float(ctx, n));
        loop = cpu_loop_logsoftmax;
        break;
    case OPSCHED_OP_HARDMAX:
        loop = cpu_loop_hardmax;
        break;
    case OPSCHED_OP_CUMSUM:
        loop = cpu_loop_cumsum;
        break;
    case OPSCHED_OP_TOPK:
        loop = cpu_loop_topk;
        break;
    case OPSCHED_OP_GATHER_ELEMENTS:
        OS_TRY(need_indices_inside(ctx, n, n->attr.axis.axis));
        loop = cpu_loop_gather_elements;
        break;
    case OPSCHED_OP_GATHER_ND:
        OS_TRY(need_index_type(ctx, n, 1));
        loop = cpu_loop_gather_nd;
        break;
    case OPSCHED_OP_SCATTER_ELEMENTS:
        OS_TRY(need_indices_inside(ctx, n, n->attr.scatter.axis));
        loop = cpu_loop_scatter_elements;
        break;
    case OPSCHED_OP_SCATTER_ND:
        OS_TRY(need_index_type(ctx, n, 1));
        loop = cpu_loop_scatter_nd;
        break;
    case OPSCHED_OP_TILE:
        loop = cpu_loop_tile;
        break;
    case OPSCHED_OP_TRILU:
        loop = cpu_loop_trilu;
        break;
    case OPSCHED_OP_ONEHOT:
        loop = cpu_loop_onehot;
        break;
    case OPSCHED_OP_RESIZE:
        if (opsched_shape_numel(&n->in[0]) == 0 && opsched_shape_numel(&n->out[0]) > 0)
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "cpu backend: Resize of an empty input to a non-empty output");
        loop = cpu_loop_resize;
        break;
    case OPSCHED_OP_GROUPNORM:
        OS_TRY(need_float(ctx, n));
        loop = cpu_loop_groupnorm;
        break;
    case OPSCHED_OP_ATTENTION:
        OS_TRY(need_float(ctx, n));
        loop = cpu_loop_attention;
        break;
    case OPSCHED_OP_QUANTIZE:
        OS_TRY(need_quant_types(ctx, n));
        loop = cpu_loop_quantize;
        break;
    case OPSCHED_OP_DEQUANTIZE:
        OS_TRY(need_quant_types(ctx, n));
        loop = cpu_loop_dequantize;
        break;
    default:
        *done = 0;
        break;
    }
    p->loop = loop;
    return OPSCHED_OK;
}

/* The loop for a node that has a oneDNN primitive in f32 but has a tensor
 * of another type; NULL where the operator takes floats only. */
static cpu_loop_fn typed_loop(opsched_op_kind op)
{
    switch (op) {
    case OPSCHED_OP_RELU:
    case OPSCHED_OP_CLIP:
    case OPSCHED_OP_SIGMOID:
    case OPSCHED_OP_TANH:
    case OPSCHED_OP_GELU:
    case OPSCHED_OP_ERF:
    case OPSCHED_OP_HARDSIGMOID:
    case OPSCHED_OP_HARDSWISH:
    case OPSCHED_OP_SQRT:
        return cpu_loop_unary;
    case OPSCHED_OP_ADD:
    case OPSCHED_OP_SUB:
    case OPSCHED_OP_MUL:
    case OPSCHED_OP_DIV:
    case OPSCHED_OP_POW:
        return cpu_loop_binary;
    case OPSCHED_OP_MAXPOOL:
        return cpu_loop_pool;
    case OPSCHED_OP_GEMM:
        return cpu_loop_gemm;
    case OPSCHED_OP_MATMUL:
        return cpu_loop_matmul;
    case OPSCHED_OP_CONCAT:
        return cpu_loop_concat;
    case OPSCHED_OP_TRANSPOSE:
        return cpu_loop_transpose;
    case OPSCHED_OP_REDUCEMEAN:
        return cpu_loop_reduce;
    default:
        return NULL;
    }
}

/* 1 when tensors of types a and b are stored alike. */
static int stored_alike(opsched_dtype a, opsched_dtype b)
{
    return a == b || (cpu_is_float(a) && cpu_is_float(b));
}

opsched_status cpu_ops_build(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p, opsched_plan_info *info)
{
    opsched_status st;
    cpu_node *n = &p->node;
    int done = 0;
    if (n->op == OPSCHED_OP_CONCAT) /* the loop copies bytes */
        for (int i = 0; i < n->n_in; i++)
            if (!stored_alike(n->in_dt[i], n->out_dt[0]))
                return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                               "cpu backend: Concat of %s and %s tensors",
                               opsched_dtype_name(n->in_dt[i]), opsched_dtype_name(n->out_dt[0]));
    OS_TRY(loop_only(ctx, p, &done));
    if (done) {
        set_algo(info, "loop");
        return OPSCHED_OK;
    }
    if (first_non_float(n) != -1) {
        p->loop = typed_loop(n->op);
        if (!p->loop) return need_float(ctx, n);
        set_algo(info, "loop");
        return OPSCHED_OK;
    }
    switch (n->op) {
    case OPSCHED_OP_GEMM:
        st = build_gemm(ctx, dev, p, info);
        break;
    case OPSCHED_OP_MATMUL:
        st = build_matmul(ctx, dev, p, info);
        break;
    case OPSCHED_OP_MAXPOOL:
    case OPSCHED_OP_AVGPOOL:
        st = build_pool(ctx, dev, p, info);
        break;
    case OPSCHED_OP_GLOBALAVGPOOL:
    case OPSCHED_OP_GLOBALMAXPOOL:
        st = build_global_pool(ctx, dev, p, info);
        break;
    case OPSCHED_OP_RELU:
    case OPSCHED_OP_CLIP:
    case OPSCHED_OP_SIGMOID:
    case OPSCHED_OP_TANH:
    case OPSCHED_OP_GELU:
    case OPSCHED_OP_ERF:
    case OPSCHED_OP_HARDSIGMOID:
    case OPSCHED_OP_HARDSWISH:
    case OPSCHED_OP_SQRT:
        st = build_eltwise(ctx, dev, p, info);
        break;
    case OPSCHED_OP_ADD:
    case OPSCHED_OP_SUB:
    case OPSCHED_OP_MUL:
    case OPSCHED_OP_DIV:
    case OPSCHED_OP_POW:
        st = build_binary(ctx, dev, p, info);
        break;
    case OPSCHED_OP_CONCAT:
        st = build_concat(ctx, dev, p, info);
        break;
    case OPSCHED_OP_TRANSPOSE:
        st = build_transpose(ctx, dev, p, info);
        break;
    case OPSCHED_OP_BATCHNORM:
        st = build_batchnorm(ctx, dev, p, info);
        break;
    case OPSCHED_OP_SOFTMAX:
        st = build_softmax(ctx, dev, p, info);
        break;
    case OPSCHED_OP_LRN:
        st = build_lrn(ctx, dev, p, info);
        break;
    case OPSCHED_OP_LAYERNORM:
        st = build_layernorm(ctx, dev, p, info);
        break;
    case OPSCHED_OP_REDUCEMEAN:
        st = build_reduce(ctx, dev, p, info);
        break;
    default:
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "cpu backend: operator %s is not supported",
                       opsched_op_name(n->op));
    }
    if (st == OPSCHED_ERR_UNSUPPORTED && fallback_loop(n->op)) {
        cpu_prim_release(&p->main);
        p->pre = NULL;
        p->loop = fallback_loop(n->op);
        st = OPSCHED_OK;
    }
    if (st == OPSCHED_OK && !p->main.prim) set_algo(info, "loop");
    return st;
}
