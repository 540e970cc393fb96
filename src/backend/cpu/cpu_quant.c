/*
 * cpu_quant.c - QuantizeLinear and DequantizeLinear, per tensor (a scale
 * of one element), per axis (a scale of the axis' extent) or blocked (a
 * scale shaped like the input with ceil(extent / block_size) along the
 * axis), as ONNX and ONNX Runtime compute them: in float, not double.
 *
 *   Quantize:   y = saturate(round_half_even(x / scale) + zero_point)
 *   Dequantize: y = (x - zero_point) * scale
 *
 * The quantized type is the zero point's (uint8 without one) and
 * saturation clamps to its range.  A NaN quantizes to 0.
 */
#include "backend/cpu/cpu_impl.h"

/* Where each element finds its scale and zero point. */
typedef struct quant_map {
    int64_t outer, extent, inner; /* the input around the axis */
    int per_tensor;
    int64_t block; /* 0: per axis */
} quant_map;

static quant_map map_of(const cpu_node *n)
{
    const opsched_shape *x = &n->in[0];
    const opsched_quant_attr *q = &n->attr.quant;
    quant_map m = {opsched_shape_numel(x), 1, 1, 1, 0}; /* per tensor */
    if (opsched_shape_numel(&n->in[1]) == 1) return m;
    int axis = (int)q->axis;
    m.per_tensor = 0;
    m.outer = cpu_span(x, 0, axis);
    m.extent = x->d[axis];
    m.inner = cpu_span(x, axis + 1, x->ndim);
    m.block = q->block_size > 0 ? q->block_size : 0;
    return m;
}

/* The scale index of element (o, a, i). */
static int64_t scale_index(const quant_map *m, int64_t o, int64_t a, int64_t i)
{
    if (m->per_tensor) return 0;
    if (!m->block) return a;
    int64_t blocks = (m->extent + m->block - 1) / m->block;
    return (o * blocks + a / m->block) * m->inner + i;
}

/* Runs the statements given for every element `at`, `k` its scale index. */
#define FOR_EACH_QUANT(m, ...)                                                                     \
    do {                                                                                           \
        for (int64_t o_ = 0; o_ < (m).outer; o_++)                                                 \
            for (int64_t a_ = 0; a_ < (m).extent; a_++)                                            \
                for (int64_t i_ = 0; i_ < (m).inner; i_++) {                                       \
                    int64_t at = (o_ * (m).extent + a_) * (m).inner + i_;                          \
                    int64_t k = scale_index(&(m), o_, a_, i_);                                     \
                    __VA_ARGS__;                                                                   \
                }                                                                                  \
    } while (0)

opsched_status cpu_loop_quantize(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                 void *const *out)
{
    (void)ctx;
    quant_map m = map_of(n);
    const float *x = in[0], *scale = in[1];
    int has_zp = n->n_in > 2 && n->has_in[2];
    opsched_dtype ydt = n->out_dt[0];
    FOR_EACH_QUANT(m, {
        float q = x[at] / scale[k]; /* in float, as ONNX Runtime */
        double zp = has_zp ? (double)cpu_load_i(in[2], n->in_dt[2], k) : 0.0;
        cpu_store_f(out[0], ydt, at, cpu_round_half_even(q) + zp);
    });
    return OPSCHED_OK;
}

opsched_status cpu_loop_dequantize(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                   void *const *out)
{
    (void)ctx;
    quant_map m = map_of(n);
    const float *scale = in[1];
    float *y = out[0];
    int has_zp = n->n_in > 2 && n->has_in[2];
    opsched_dtype xdt = n->in_dt[0];
    FOR_EACH_QUANT(m, {
        float v = (float)cpu_load_i(in[0], xdt, at);
        float zp = has_zp ? (float)cpu_load_i(in[2], n->in_dt[2], k) : 0.0f;
        y[at] = (v - zp) * scale[k];
    });
    return OPSCHED_OK;
}
