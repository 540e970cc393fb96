/*
 * cpu_deconv.c - ConvTranspose (2-D, groups, dilations, pads,
 * output_padding): oneDNN's deconvolution primitive on the caller's
 * buffers, or a plain loop.
 *
 * ONNX's weight [C, M/groups, kh, kw] is oneDNN's (g)iohw layout, so the
 * primitive reads it in place through strides.  oneDNN derives the output
 * extent from the padding, so output_padding is given to it as that much
 * less padding at the end (the extra rows and columns only receive what
 * the kernel reaches there).  The loop scatters every input element
 * through the kernel into a double accumulator.
 */
#include <stdio.h>
#include <stdlib.h>

#include "backend/cpu/cpu_impl.h"

enum { IN0 = 0, IN1 = 1, IN2 = 2, OUT0 = CPU_IO_OUT(0) };

static opsched_status deconv_prim(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                  opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    const opsched_conv_transpose_attr *c = &n->attr.conv_transpose;
    const opsched_shape *x = &n->in[0], *w = &n->in[1], *o = &n->out[0];
    int64_t G = c->groups, icg = x->d[1] / G, ocg = w->d[1], KH = w->d[2], KW = w->d[3];
    int has_bias = n->n_in > 2 && n->has_in[2];
    dnnl_memory_desc_t src, wei, bias, dst;
    OS_TRY(cpu_plain_md(ctx, 4, x->d, &src));
    OS_TRY(cpu_plain_md(ctx, 4, o->d, &dst));
    if (G > 1) {
        dnnl_dims_t d = {G, ocg, icg, KH, KW};
        dnnl_dims_t s = {icg * ocg * KH * KW, KH * KW, ocg * KH * KW, KW, 1};
        CPU_DNNL(ctx, dnnl_memory_desc_init_by_strides(&wei, 5, d, dnnl_f32, s));
    } else {
        dnnl_dims_t d = {ocg, icg, KH, KW};
        dnnl_dims_t s = {KH * KW, ocg * KH * KW, KW, 1};
        CPU_DNNL(ctx, dnnl_memory_desc_init_by_strides(&wei, 4, d, dnnl_f32, s));
    }
    int64_t M = ocg * G;
    if (has_bias) OS_TRY(cpu_plain_md(ctx, 1, &M, &bias));
    dnnl_dims_t strides = {c->stride[0], c->stride[1]};
    dnnl_dims_t dil = {c->dilation[0] - 1, c->dilation[1] - 1};
    dnnl_dims_t pl = {c->pads[0], c->pads[1]};
    dnnl_dims_t pr = {c->pads[2] - c->output_padding[0], c->pads[3] - c->output_padding[1]};
    dnnl_deconvolution_desc_t dd;
    CPU_DNNL(ctx, dnnl_dilated_deconvolution_forward_desc_init(
                      &dd, dnnl_forward_inference, dnnl_deconvolution_direct, &src, &wei,
                      has_bias ? &bias : NULL, &dst, strides, dil, pl, pr));
    dnnl_primitive_desc_t pd = NULL;
    OS_TRY(cpu_pd_create(ctx, dev, &dd, 1.0f, NULL, "ConvTranspose", &pd));
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
        snprintf(info->algo, sizeof(info->algo), "%s", impl);
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    int io[4] = {IN0, IN1, OUT0, IN2};
    return cpu_prim_from_pd(ctx, dev, &p->main, pd, args, io, has_bias ? 4 : 3);
}

opsched_status cpu_ops_conv_transpose(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                      const opsched_plan_options *opts, opsched_plan_info *info)
{
    const char *algo = opts && opts->algo ? opts->algo : "heuristic";
    int loop = strcmp(algo, "loop") == 0, direct = strcmp(algo, "direct") == 0;
    if (!loop && !direct && strcmp(algo, "heuristic") != 0 && strcmp(algo, "find") != 0)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "cpu backend: unknown ConvTranspose algorithm '%s' (valid: heuristic, "
                       "find, direct, loop)",
                       algo);
    for (int i = 0; i < p->node.n_in; i++)
        if (p->node.has_in[i] && !cpu_is_float(p->node.in_dt[i]))
            return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                           "cpu backend: ConvTranspose of %s tensors (float only)",
                           opsched_dtype_name(p->node.in_dt[i]));
    if (!loop) {
        opsched_status st = deconv_prim(ctx, dev, p, info);
        if (st == OPSCHED_OK || direct) return st;
        if (st != OPSCHED_ERR_UNSUPPORTED) return st;
        opsched_ctx_clear_error(ctx);
        cpu_prim_release(&p->main);
    }
    p->loop = cpu_loop_conv_transpose;
    snprintf(info->algo, sizeof(info->algo), "loop");
    return OPSCHED_OK;
}

/* y[n, g*ocg + m, ih*s - pad + kh*dil, ...] += x[n, g*icg + c, ih, iw] *
 * w[g*icg + c, m, kh, kw], then the bias. */
opsched_status cpu_loop_conv_transpose(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                       void *const *out)
{
    const opsched_conv_transpose_attr *c = &n->attr.conv_transpose;
    const opsched_shape *xs = &n->in[0], *ws = &n->in[1], *os = &n->out[0];
    int64_t N = xs->d[0], C = xs->d[1], H = xs->d[2], W = xs->d[3];
    int64_t G = c->groups, icg = C / G, ocg = ws->d[1], KH = ws->d[2], KW = ws->d[3];
    int64_t M = os->d[1], OH = os->d[2], OW = os->d[3];
    const float *x = in[0], *w = in[1], *bias = n->n_in > 2 && n->has_in[2] ? in[2] : NULL;
    int64_t total = opsched_shape_numel(os);
    double *acc = calloc((size_t)(total ? total : 1), sizeof(double));
    if (!acc) return OS_NOMEM(ctx);
    for (int64_t b = 0; b < N; b++) {
        for (int64_t ci = 0; ci < C; ci++) {
            int64_t g = ci / icg;
            const float *wc = w + ci * ocg * KH * KW;
            for (int64_t ih = 0; ih < H; ih++) {
                for (int64_t iw = 0; iw < W; iw++) {
                    double v = x[((b * C + ci) * H + ih) * W + iw];
                    for (int64_t m = 0; m < ocg; m++) {
                        double *ym = acc + (b * M + g * ocg + m) * OH * OW;
                        for (int64_t kh = 0; kh < KH; kh++) {
                            int64_t oh = ih * c->stride[0] - c->pads[0] + kh * c->dilation[0];
                            if (oh < 0 || oh >= OH) continue;
                            for (int64_t kw = 0; kw < KW; kw++) {
                                int64_t ow = iw * c->stride[1] - c->pads[1] + kw * c->dilation[1];
                                if (ow < 0 || ow >= OW) continue;
                                ym[oh * OW + ow] += v * wc[(m * KH + kh) * KW + kw];
                            }
                        }
                    }
                }
            }
        }
    }
    float *y = out[0];
    for (int64_t e = 0; e < total; e++)
        y[e] = (float)(acc[e] + (bias ? bias[e / (OH * OW) % M] : 0.0));
    free(acc);
    return OPSCHED_OK;
}
