/*
 * cpu_deconv.c - ConvTranspose (2-D and 3-D, groups, dilations, pads,
 * output_padding): oneDNN's deconvolution primitive on the caller's
 * buffers, or a plain loop.
 *
 * ONNX's weight [C, M/groups, k...] is oneDNN's (g)io(d)hw layout, so the
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

/* One spatial axis of a transposed convolution: input and output
 * extents, kernel, stride, dilation, padding at the beginning. */
typedef struct deconv_axis {
    int64_t in, out, k, s, d, p0;
} deconv_axis;

/* The axes D, H, W (a unit D for a 2-D op). */
static void deconv_axes(const cpu_node *n, deconv_axis ax[3])
{
    const opsched_conv_transpose_attr *c = &n->attr.conv_transpose;
    const opsched_shape *x = &n->in[0], *o = &n->out[0];
    int hw = x->ndim - 2;
    ax[0] = (deconv_axis){1, 1, 1, 1, 1, 0};
    if (x->ndim == 5)
        ax[0] = (deconv_axis){x->d[2],         o->d[2],           c->depth.kernel,
                              c->depth.stride, c->depth.dilation, c->depth.pad_begin};
    for (int i = 0; i < 2; i++)
        ax[1 + i] = (deconv_axis){x->d[hw + i], o->d[hw + i],   c->kernel[i],
                                  c->stride[i], c->dilation[i], c->pads[i]};
}

static opsched_status deconv_prim(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                  opsched_plan_info *info)
{
    const cpu_node *n = &p->node;
    const opsched_conv_transpose_attr *c = &n->attr.conv_transpose;
    const opsched_shape *x = &n->in[0], *w = &n->in[1], *o = &n->out[0];
    int rank = x->ndim, ns = rank - 2;
    int64_t G = c->groups, icg = x->d[1] / G, ocg = w->d[1];
    int64_t K = cpu_span(w, 2, rank); /* taps of one kernel */
    int has_bias = n->n_in > 2 && n->has_in[2];
    dnnl_memory_desc_t src, wei, bias, dst;
    OS_TRY(cpu_plain_md(ctx, rank, x->d, &src));
    OS_TRY(cpu_plain_md(ctx, rank, o->d, &dst));
    /* [g, ocg, icg, k...] (no g when 1) read from ONNX's [g*icg, ocg, k...]. */
    dnnl_dims_t d, st;
    int nd = 0;
    if (G > 1) {
        d[nd] = G;
        st[nd++] = icg * ocg * K;
    }
    d[nd] = ocg;
    st[nd++] = K;
    d[nd] = icg;
    st[nd++] = ocg * K;
    for (int i = 0; i < ns; i++) {
        d[nd] = w->d[2 + i];
        st[nd++] = cpu_span(w, 3 + i, rank);
    }
    CPU_DNNL(ctx, dnnl_memory_desc_init_by_strides(&wei, nd, d, dnnl_f32, st));
    int64_t M = ocg * G;
    if (has_bias) OS_TRY(cpu_plain_md(ctx, 1, &M, &bias));
    dnnl_dims_t kernel, strides, dil, pl, pr;
    cpu_window_dims(rank, &c->depth, c->kernel, c->stride, c->dilation, c->pads, kernel, strides,
                    dil, pl, pr);
    int64_t outpad[3] = {c->depth.output_padding, c->output_padding[0], c->output_padding[1]};
    for (int i = 0; i < ns; i++)
        pr[i] -= outpad[3 - ns + i];
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

/* y[n, g*ocg + m, i*s - pad + k*dil, ...] += x[n, g*icg + c, i, ...] *
 * w[g*icg + c, m, k, ...] over the spatial axes D, H, W, then the bias. */
opsched_status cpu_loop_conv_transpose(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                       void *const *out)
{
    const opsched_conv_transpose_attr *c = &n->attr.conv_transpose;
    const opsched_shape *xs = &n->in[0], *ws = &n->in[1], *os = &n->out[0];
    deconv_axis ax[3];
    deconv_axes(n, ax);
    int64_t N = xs->d[0], C = xs->d[1], M = os->d[1];
    int64_t G = c->groups, icg = C / G, ocg = ws->d[1];
    int64_t S = ax[0].in * ax[1].in * ax[2].in, OS = ax[0].out * ax[1].out * ax[2].out;
    int64_t K = ax[0].k * ax[1].k * ax[2].k;
    const float *x = in[0], *w = in[1], *bias = n->n_in > 2 && n->has_in[2] ? in[2] : NULL;
    int64_t total = opsched_shape_numel(os);
    double *acc = calloc((size_t)(total ? total : 1), sizeof(double));
    if (!acc) return OS_NOMEM(ctx);
    for (int64_t b = 0; b < N; b++) {
        for (int64_t ci = 0; ci < C; ci++) {
            int64_t g = ci / icg;
            const float *wc = w + ci * ocg * K;
            for (int64_t e = 0; e < S; e++) {
                double v = x[(b * C + ci) * S + e];
                int64_t i[3] = {e / (ax[1].in * ax[2].in), e / ax[2].in % ax[1].in, e % ax[2].in};
                for (int64_t t = 0; t < K; t++) {
                    int64_t k[3] = {t / (ax[1].k * ax[2].k), t / ax[2].k % ax[1].k, t % ax[2].k};
                    int64_t off = 0;
                    int inside = 1;
                    for (int a = 0; a < 3; a++) {
                        int64_t o = i[a] * ax[a].s - ax[a].p0 + k[a] * ax[a].d;
                        inside &= o >= 0 && o < ax[a].out;
                        off = off * ax[a].out + o;
                    }
                    if (!inside) continue;
                    for (int64_t m = 0; m < ocg; m++)
                        acc[(b * M + g * ocg + m) * OS + off] += v * wc[m * K + t];
                }
            }
        }
    }
    float *y = out[0];
    for (int64_t e = 0; e < total; e++)
        y[e] = (float)(acc[e] + (bias ? bias[e / OS % M] : 0.0));
    free(acc);
    return OPSCHED_OK;
}
