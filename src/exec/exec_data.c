/*
 * exec_data.c - host-side data for the executor: the dtype and order a
 * tensor is stored in on the device, conversion between that and the f32
 * NCHW arrays callers (and graph payloads) hold, and the values of tensors
 * without a payload (random from a seed).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/half.h"
#include "core/util.h"
#include "exec/exec_impl.h"

static int is_float(opsched_dtype dt)
{
    return dt == OPSCHED_F32 || dt == OPSCHED_F16 || dt == OPSCHED_BF16;
}

opsched_dtype os_exec_storage_dtype(opsched_dtype dt, opsched_math m)
{
    return is_float(dt) ? opsched_math_dtype(m) : dt;
}

size_t os_exec_tensor_bytes(const opsched_tensor *t, opsched_math m)
{
    return (size_t)opsched_shape_numel(&t->shape) *
           opsched_dtype_size(os_exec_storage_dtype(t->dtype, m));
}

int os_exec_is_nhwc(const opsched_tensor *t, opsched_layout layout)
{
    return layout == OPSCHED_LAYOUT_NHWC && t->shape.ndim == 4;
}

/* Element i of a typed array as a double (exact for every int32 and for
 * int64 up to 2^53). */
static double load(const void *p, opsched_dtype dt, size_t i)
{
    const unsigned char *b = p;
    switch (dt) {
    case OPSCHED_F32: {
        float v;
        memcpy(&v, b + 4 * i, 4);
        return v;
    }
    case OPSCHED_F16:
    case OPSCHED_BF16: {
        uint16_t h;
        memcpy(&h, b + 2 * i, 2);
        return dt == OPSCHED_F16 ? os_f16_to_f32(h) : os_bf16_to_f32(h);
    }
    case OPSCHED_INT8:
        return (signed char)b[i];
    case OPSCHED_UINT8:
        return b[i];
    case OPSCHED_BOOL:
        return b[i] != 0;
    case OPSCHED_INT32: {
        int32_t v;
        memcpy(&v, b + 4 * i, 4);
        return v;
    }
    case OPSCHED_INT64: {
        int64_t v;
        memcpy(&v, b + 8 * i, 8);
        return (double)v;
    }
    default: return 0; /* every type is above */
    }
}

/* v converted to an integer type's range (NaN as 0; saturated). */
static double clamp_int(double v, double lo, double hi)
{
    if (!(v == v)) return 0;
    return v < lo ? lo : v > hi ? hi : v;
}

static void store(void *p, opsched_dtype dt, size_t i, double v)
{
    unsigned char *b = p;
    switch (dt) {
    case OPSCHED_F32: {
        float f = (float)v;
        memcpy(b + 4 * i, &f, 4);
        break;
    }
    case OPSCHED_F16:
    case OPSCHED_BF16: {
        uint16_t h = dt == OPSCHED_F16 ? os_f32_to_f16((float)v) : os_f32_to_bf16((float)v);
        memcpy(b + 2 * i, &h, 2);
        break;
    }
    case OPSCHED_INT8: b[i] = (unsigned char)(signed char)clamp_int(v, -128, 127); break;
    case OPSCHED_UINT8: b[i] = (unsigned char)clamp_int(v, 0, 255); break;
    case OPSCHED_BOOL: b[i] = v != 0; break;
    case OPSCHED_INT32: {
        int32_t k = (int32_t)clamp_int(v, -2147483648.0, 2147483647.0);
        memcpy(b + 4 * i, &k, 4);
        break;
    }
    case OPSCHED_INT64: {
        /* 2^63 is not an int64: the largest double below it is the top. */
        int64_t k = (int64_t)clamp_int(v, -9223372036854775808.0, 9223372036854774784.0);
        memcpy(b + 8 * i, &k, 8);
        break;
    }
    default: break; /* every type is above */
    }
}

/* Where logical (NCHW row-major) element i goes in channels-last order. */
static size_t nhwc_index(size_t i, const opsched_shape *s)
{
    size_t C = (size_t)s->d[1], H = (size_t)s->d[2], W = (size_t)s->d[3];
    size_t w = i % W, h = i / W % H, c = i / (W * H) % C, n = i / (W * H * C);
    return ((n * H + h) * W + w) * C + c;
}

void os_exec_convert(const void *src, opsched_dtype sdt, void *dst, opsched_dtype ddt, size_t n,
                     const opsched_shape *s, int perm)
{
    if (perm && (!s || s->ndim != 4)) perm = 0;
    if (sdt == ddt && !perm) {
        memcpy(dst, src, n * opsched_dtype_size(sdt));
        return;
    }
    size_t esz = opsched_dtype_size(sdt);
    for (size_t i = 0; i < n; i++) {
        size_t from = perm < 0 ? nhwc_index(i, s) : i, to = perm > 0 ? nhwc_index(i, s) : i;
        if (sdt == ddt)
            memcpy((unsigned char *)dst + to * esz, (const unsigned char *)src + from * esz, esz);
        else
            store(dst, ddt, to, load(src, sdt, from));
    }
}

/* ---- values of tensors without a payload --------------------------------- */

/* Multiplying weights are scaled by fan-in (as PyTorch's default
 * initialisation does) so activations of a deep network stay in range even
 * in fp16; normalisation scales and variances stay positive. */
static void weight_range(const opsched_graph *g, int tensor, os_exec_fill *f)
{
    const opsched_tensor *t = opsched_graph_tensor(g, tensor);
    f->lo = -1.0f;
    f->hi = 1.0f;
    if (t->kind == OPSCHED_TENSOR_INPUT) return;
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] != tensor || k == 0) continue;
            int64_t fan_in = 0;
            if ((n->op == OPSCHED_OP_CONV || n->op == OPSCHED_OP_GEMM) && k == 1 &&
                t->shape.ndim >= 2)
                fan_in = n->op == OPSCHED_OP_GEMM && !n->attr.gemm.trans_b
                             ? t->shape.d[0]
                             : opsched_shape_numel(&t->shape) / t->shape.d[0];
            else if (n->op == OPSCHED_OP_MATMUL && k == 1 && t->shape.ndim >= 2)
                fan_in = t->shape.d[t->shape.ndim - 2];
            if (fan_in > 0) {
                f->hi = sqrtf(6.0f / (float)fan_in);
                f->lo = -f->hi;
            } else if ((n->op == OPSCHED_OP_BATCHNORM && (k == 1 || k == 4)) ||
                       (n->op == OPSCHED_OP_BATCHNORM_TRAIN && k == 1) ||
                       (n->op == OPSCHED_OP_LAYERNORM && k == 1)) {
                f->lo = 0.5f;
                f->hi = 1.5f;
            } else {
                f->lo = -0.1f; /* biases, shifts, means, embeddings */
                f->hi = 0.1f;
            }
            return;
        }
    }
}

/* The extent random indices read by node n must stay below when tensor is
 * its index input (0: n reads no indices from it). */
static int64_t index_extent_of(const opsched_graph *g, const opsched_node *n, int tensor)
{
    if (n->n_inputs < 2 || n->inputs[1] != tensor || n->inputs[0] < 0) return 0;
    const opsched_tensor *d = opsched_graph_tensor(g, n->inputs[0]);
    const opsched_tensor *ix = opsched_graph_tensor(g, tensor);
    int64_t axis;
    switch (n->op) {
    case OPSCHED_OP_GATHER:
    case OPSCHED_OP_GATHER_ELEMENTS: axis = n->attr.axis.axis; break;
    case OPSCHED_OP_SCATTER_ELEMENTS: axis = n->attr.scatter.axis; break;
    case OPSCHED_OP_GATHER_ND:
    case OPSCHED_OP_SCATTER_ND: {
        /* index tuples address the dims after the batch ones: the
         * smallest of those bounds every coordinate */
        int64_t b = n->op == OPSCHED_OP_GATHER_ND ? n->attr.gather_nd.batch_dims : 0;
        int64_t k = ix->shape.ndim > 0 ? ix->shape.d[ix->shape.ndim - 1] : 0, ext = 0;
        for (int64_t j = b; j < b + k && j < d->shape.ndim; j++)
            if (ext == 0 || d->shape.d[j] < ext) ext = d->shape.d[j];
        return ext;
    }
    default: return 0;
    }
    return axis >= 0 && axis < d->shape.ndim ? d->shape.d[axis] : 0;
}

os_exec_fill os_exec_fill_for(const opsched_graph *g, int tensor)
{
    os_exec_fill f = {-1.0f, 1.0f, 0};
    weight_range(g, tensor, &f);
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        int64_t ext = index_extent_of(g, n, tensor);
        if (n->op == OPSCHED_OP_ONEHOT && n->n_inputs >= 1 && n->inputs[0] == tensor)
            ext = n->attr.onehot.depth;
        if (ext > 0 && (f.index_extent == 0 || ext < f.index_extent)) f.index_extent = ext;
    }
    return f;
}

void os_exec_random_values(const os_exec_fill *f, opsched_dtype dt, size_t n, uint64_t seed,
                           float *dst)
{
    os_rng rng;
    os_rng_seed(&rng, seed);
    uint64_t range = dt == OPSCHED_BOOL        ? 2
                     : f->index_extent > 0 ? (uint64_t)f->index_extent
                                           : 7;
    for (size_t i = 0; i < n; i++)
        dst[i] = !is_float(dt) ? (float)(os_rng_next(&rng) % range)
                               : f->lo + (f->hi - f->lo) * 0.5f * (os_rng_sym(&rng) + 1.0f);
}

opsched_status os_exec_tensor_values(opsched_ctx *ctx, const opsched_graph *g, int tensor,
                                     opsched_math m, opsched_layout layout, uint64_t seed,
                                     void *dst)
{
    const opsched_tensor *t = opsched_graph_tensor(g, tensor);
    size_t n = (size_t)opsched_shape_numel(&t->shape);
    opsched_dtype sdt = os_exec_storage_dtype(t->dtype, m);
    int nhwc = os_exec_is_nhwc(t, layout);
    if (t->kind != OPSCHED_TENSOR_INPUT && t->data &&
        t->data_bytes == n * opsched_dtype_size(t->dtype)) {
        os_exec_convert(t->data, t->dtype, dst, sdt, n, &t->shape, nhwc);
        return OPSCHED_OK;
    }
    float *v = malloc(sizeof(float) * (n ? n : 1));
    if (!v) return OS_NOMEM(ctx);
    os_exec_fill f = os_exec_fill_for(g, tensor);
    os_exec_random_values(&f, t->dtype, n, seed + (uint64_t)tensor, v);
    os_exec_convert(v, OPSCHED_F32, dst, sdt, n, &t->shape, nhwc);
    free(v);
    return OPSCHED_OK;
}
