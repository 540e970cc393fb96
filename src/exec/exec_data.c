/*
 * exec_data.c - host-side data for the executor: the dtype and order a
 * tensor is stored in on the device, and conversion between that and the
 * f32 NCHW arrays callers (and graph payloads) hold.
 */
#include <math.h>
#include <string.h>

#include "core/half.h"
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
    case OPSCHED_INT32: {
        int32_t v;
        memcpy(&v, b + 4 * i, 4);
        return v;
    }
    default: {
        int64_t v;
        memcpy(&v, b + 8 * i, 8);
        return (double)v;
    }
    }
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
    case OPSCHED_INT8:
        b[i] = (unsigned char)(signed char)(isfinite(v) ? v : 0);
        break;
    case OPSCHED_INT32: {
        int32_t k = (int32_t)(isfinite(v) ? v : 0);
        memcpy(b + 4 * i, &k, 4);
        break;
    }
    default: {
        int64_t k = (int64_t)(isfinite(v) ? v : 0);
        memcpy(b + 8 * i, &k, 8);
        break;
    }
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
