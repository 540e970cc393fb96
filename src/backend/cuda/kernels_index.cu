/*
 * kernels_index.cu - the gather/scatter family (kernels.h):
 * GatherElements, GatherND, ScatterElements, ScatterND (with their
 * reductions), Tile, Trilu, OneHot, and Resize (a gather of weighted taps).
 *
 * A thread per element of the iterated tensor; its linear index becomes
 * logical coordinates, and each operand's offset is the dot product of
 * those with the operand's strides.  Data that only moves is copied as
 * elements of its size (1, 2, 4 or 8 bytes); scatter reductions compute
 * in the storage type's computation type.
 */
#include <stdint.h>

#include "backend/cuda/kernels_common.cuh"

using namespace cuk;

namespace
{

/* ---- index resolution ----------------------------------------------- */

/* A gather index: counted from the end when negative, then clamped. */
__device__ __forceinline__ int64_t gather_index(int64_t k, int64_t len)
{
    if (k < 0) k += len;
    return k < 0 ? 0 : (k >= len ? len - 1 : k);
}

/* A scatter index: counted from the end when negative; -1 when outside. */
__device__ __forceinline__ int64_t scatter_index(int64_t k, int64_t len)
{
    if (k < 0) k += len;
    return (k < 0 || k >= len) ? -1 : k;
}

/* ---- atomics for the scatter reductions ------------------------------ */

template <typename T> __device__ __forceinline__ T reduce_pair(cuk_scatter_red red, T old, T v)
{
    typedef typename tr<T>::C C;
    C a = load<T>(old), b = load<T>(v);
    if constexpr (tr<T>::fp) {
        if (red == CUK_SCATTER_ADD) return store<T>(a + b);
        if (red == CUK_SCATTER_MUL) return store<T>(a * b);
        if (a != a || b != b) return store<T>(a != a ? a : b); /* NaN propagates */
        if (red == CUK_SCATTER_MAX) return store<T>(a > b ? a : b);
        return store<T>(a < b ? a : b);
    } else {
        if (red == CUK_SCATTER_ADD) return store<T>(wadd<C>(a, b));
        if (red == CUK_SCATTER_MUL) return store<T>(wmul<C>(a, b));
        if (red == CUK_SCATTER_MAX) return store<T>(a > b ? a : b);
        return store<T>(a < b ? a : b);
    }
}

template <typename W, typename T> __device__ __forceinline__ W bits_of(T v)
{
    W w = 0;
    memcpy(&w, &v, sizeof(T));
    return w;
}
template <typename T, typename W> __device__ __forceinline__ T value_of(W w)
{
    T v;
    memcpy(&v, &w, sizeof(T));
    return v;
}

/* *p = red(*p, v) atomically: a native atomic where the type has one, a
 * compare-and-swap loop on the element's word otherwise (bytes: on the
 * aligned 32-bit word holding them; the other bytes are written back as
 * they were). */
template <typename T> __device__ void atomic_reduce(T *p, T v, cuk_scatter_red red)
{
    if constexpr (same_t<T, float>::value || same_t<T, __half>::value ||
                  same_t<T, __nv_bfloat16>::value) {
        if (red == CUK_SCATTER_ADD) {
            atomicAdd(p, v);
            return;
        }
    } else if constexpr (same_t<T, int32_t>::value) {
        if (red == CUK_SCATTER_ADD) {
            atomicAdd(p, v);
            return;
        }
        if (red == CUK_SCATTER_MAX) {
            atomicMax(p, v);
            return;
        }
        if (red == CUK_SCATTER_MIN) {
            atomicMin(p, v);
            return;
        }
    } else if constexpr (same_t<T, int64_t>::value) {
        if (red == CUK_SCATTER_ADD) {
            atomicAdd((unsigned long long *)p, (unsigned long long)v);
            return;
        }
        if (red == CUK_SCATTER_MAX) {
            atomicMax((long long *)p, (long long)v);
            return;
        }
        if (red == CUK_SCATTER_MIN) {
            atomicMin((long long *)p, (long long)v);
            return;
        }
    }
    if constexpr (sizeof(T) == 8) {
        unsigned long long *w = (unsigned long long *)p, old = *w, assumed;
        do {
            assumed = old;
            T n = reduce_pair<T>(red, value_of<T>(assumed), v);
            old = atomicCAS(w, assumed, bits_of<unsigned long long>(n));
        } while (assumed != old);
    } else if constexpr (sizeof(T) == 4) {
        unsigned int *w = (unsigned int *)p, old = *w, assumed;
        do {
            assumed = old;
            T n = reduce_pair<T>(red, value_of<T>(assumed), v);
            old = atomicCAS(w, assumed, bits_of<unsigned int>(n));
        } while (assumed != old);
    } else if constexpr (sizeof(T) == 2) {
        unsigned short *w = (unsigned short *)p, old = *w, assumed;
        do {
            assumed = old;
            T n = reduce_pair<T>(red, value_of<T>(assumed), v);
            old = atomicCAS(w, assumed, bits_of<unsigned short>(n));
        } while (assumed != old);
    } else {
        unsigned int *w = (unsigned int *)((uintptr_t)p & ~(uintptr_t)3);
        const unsigned shift = (unsigned)((uintptr_t)p & 3) * 8;
        unsigned int old = *w, assumed;
        do {
            assumed = old;
            T cur = value_of<T>((uint8_t)(assumed >> shift));
            uint8_t nb = bits_of<uint8_t>(reduce_pair<T>(red, cur, v));
            old = atomicCAS(w, assumed, (assumed & ~(0xffu << shift)) | ((unsigned)nb << shift));
        } while (assumed != old);
    }
}

/* ---- GatherElements, ScatterElements ---------------------------------- */

__device__ __forceinline__ void elements_at(const cuk_elements_desc &d, int64_t i, int64_t &oi,
                                            int64_t &ox, int64_t &od)
{
    oi = ox = od = 0;
    for (int j = d.ndim - 1; j >= 0; j--) {
        int64_t q = i / d.shape[j], c = i - q * d.shape[j];
        i = q;
        oi += c * d.s_it[j];
        ox += c * d.s_idx[j];
        od += c * d.s_other[j];
    }
}

template <typename E, typename I>
__global__ void k_gather_elements(const __grid_constant__ cuk_elements_desc d, int64_t n,
                                  const E *data, const I *idx, E *y)
{
    cuk_kernel_enter();
    CUK_GRID_STRIDE(i, n)
    {
        int64_t oi, ox, od;
        elements_at(d, i, oi, ox, od);
        int64_t k = gather_index((int64_t)idx[ox], d.axis_len);
        y[oi] = data[od + k * d.axis_stride];
    }
}

template <typename T, typename I>
__global__ void k_scatter_elements(const __grid_constant__ cuk_elements_desc d, int64_t n,
                                   cuk_scatter_red red, const I *idx, const T *upd, T *y)
{
    cuk_kernel_enter();
    CUK_GRID_STRIDE(i, n)
    {
        int64_t oi, ox, od;
        elements_at(d, i, oi, ox, od);
        int64_t k = scatter_index((int64_t)idx[ox], d.axis_len);
        if (k < 0) continue;
        T *dst = y + od + k * d.axis_stride;
        if (red == CUK_SCATTER_NONE)
            *dst = upd[oi];
        else
            atomic_reduce<T>(dst, upd[oi], red);
    }
}

/* ---- GatherND, ScatterND ---------------------------------------------- */

__device__ __forceinline__ void nd_index_at(const cuk_nd_index_desc &d, int64_t i, int64_t &oi,
                                             int64_t &ox, int64_t &od)
{
    oi = ox = od = 0;
    for (int j = d.ndim - 1; j >= 0; j--) {
        int64_t q = i / d.shape[j], c = i - q * d.shape[j];
        i = q;
        oi += c * d.s_it[j];
        ox += c * d.s_idx[j];
        od += c * d.s_other[j];
    }
}

template <typename E, typename I>
__global__ void k_gather_nd(const __grid_constant__ cuk_nd_index_desc d, int64_t n, const E *data,
                            const I *idx, E *y)
{
    cuk_kernel_enter();
    CUK_GRID_STRIDE(i, n)
    {
        int64_t oi, ox, od;
        nd_index_at(d, i, oi, ox, od);
        for (int t = 0; t < d.k; t++)
            od += gather_index((int64_t)idx[ox + t * d.idx_last], d.tup_len[t]) * d.tup_stride[t];
        y[oi] = data[od];
    }
}

template <typename T, typename I>
__global__ void k_scatter_nd(const __grid_constant__ cuk_nd_index_desc d, int64_t n,
                             cuk_scatter_red red, const I *idx, const T *upd, T *y)
{
    cuk_kernel_enter();
    CUK_GRID_STRIDE(i, n)
    {
        int64_t oi, ox, od;
        nd_index_at(d, i, oi, ox, od);
        bool inside = true;
        for (int t = 0; t < d.k; t++) {
            int64_t k = scatter_index((int64_t)idx[ox + t * d.idx_last], d.tup_len[t]);
            if (k < 0) inside = false;
            od += k * d.tup_stride[t];
        }
        if (!inside) continue;
        if (red == CUK_SCATTER_NONE)
            y[od] = upd[oi];
        else
            atomic_reduce<T>(y + od, upd[oi], red);
    }
}

/* ---- Tile, Trilu, OneHot ---------------------------------------------- */

template <typename E>
__global__ void k_tile(const __grid_constant__ cuk_tile_desc d, int64_t n, const E *x, E *y)
{
    cuk_kernel_enter();
    CUK_GRID_STRIDE(i, n)
    {
        int64_t r = i, oy = 0, ox = 0;
        for (int j = d.ndim - 1; j >= 0; j--) {
            int64_t q = r / d.y_shape[j], c = r - q * d.y_shape[j];
            r = q;
            oy += c * d.ys[j];
            ox += (c % d.x_shape[j]) * d.xs[j];
        }
        y[oy] = x[ox];
    }
}

template <typename E>
__global__ void k_trilu(const __grid_constant__ cuk_trilu_desc d, int64_t n, const E *x, E *y)
{
    cuk_kernel_enter();
    CUK_GRID_STRIDE(i, n)
    {
        int64_t r = i, oy = 0, ox = 0, row = 0, col = 0;
        for (int j = d.ndim - 1; j >= 0; j--) {
            int64_t q = r / d.shape[j], c = r - q * d.shape[j];
            r = q;
            oy += c * d.ys[j];
            ox += c * d.xs[j];
            if (j == d.ndim - 1) col = c;
            if (j == d.ndim - 2) row = c;
        }
        bool keep = d.upper ? col - row >= d.k : col - row <= d.k;
        y[oy] = keep ? x[ox] : (E)0;
    }
}

template <typename TI> __device__ __forceinline__ int64_t index_value(TI v)
{
    if constexpr (tr<TI>::fp)
        return (int64_t)__float2ll_rz(load<TI>(v));
    else
        return (int64_t)load<TI>(v);
}

template <typename TI, typename E>
__global__ void k_onehot(const __grid_constant__ cuk_onehot_desc d, int64_t n, const TI *idx,
                         const E *values, E *y)
{
    cuk_kernel_enter();
    const E off = values[0], on = values[1];
    CUK_GRID_STRIDE(i, n)
    {
        int64_t r = i, oy = 0, ox = 0, at = 0;
        for (int j = d.ndim - 1; j >= 0; j--) {
            int64_t q = r / d.shape[j], c = r - q * d.shape[j];
            r = q;
            oy += c * d.ys[j];
            ox += c * d.s_idx[j];
            if (j == d.axis) at = c;
        }
        int64_t v = index_value<TI>(idx[ox]);
        if (v < 0) v += d.depth;
        y[oy] = v == at ? on : off;
    }
}

/* ---- Resize --------------------------------------------------------- */

/* The resized axes of output element i: the first tap and the tap count
 * of each (outermost first); the offset the unresized axes add; the
 * output's offset.  Returns the number of resized axes, -1 when the
 * element is outside the crop. */
__device__ __forceinline__ int resize_taps(const cuk_resize_desc &d, int64_t i,
                                           const int32_t *meta, int32_t *first, int32_t *cnt,
                                           int64_t &base, int64_t &oy)
{
    int nr = 0;
    bool outside = false;
    base = oy = 0;
    for (int j = d.ndim - 1; j >= 0; j--) {
        int64_t q = i / d.shape[j], c = i - q * d.shape[j];
        i = q;
        oy += c * d.ys[j];
        if (d.meta[j] < 0) {
            base += c * d.xs[j];
        } else {
            const int32_t *m = meta + d.meta[j];
            first[nr] = m[c];
            cnt[nr] = m[d.shape[j] + c];
            if (cnt[nr] == 0) outside = true;
            nr++;
        }
    }
    return outside ? -1 : nr;
}

template <typename T>
__global__ void k_resize_interp(const __grid_constant__ cuk_resize_desc d, int64_t n,
                                const int32_t *meta, const int64_t *toff, const float *tw,
                                const T *x, T *y)
{
    cuk_kernel_enter();
    CUK_GRID_STRIDE(i, n)
    {
        int32_t first[CUK_MAX_DIMS], cnt[CUK_MAX_DIMS], t[CUK_MAX_DIMS];
        int64_t base, oy;
        int nr = resize_taps(d, i, meta, first, cnt, base, oy);
        if (nr < 0) {
            y[oy] = store<T>(d.extrapolation_f);
            continue;
        }
        for (int q = 0; q < nr; q++)
            t[q] = 0;
        float acc = 0.0f;
        for (;;) {
            int64_t off = base;
            float w = 1.0f;
            for (int q = 0; q < nr; q++) {
                off += toff[first[q] + t[q]];
                w *= tw[first[q] + t[q]];
            }
            acc += w * load<T>(x[off]);
            int q = 0;
            while (q < nr && ++t[q] == cnt[q])
                t[q++] = 0;
            if (q == nr) break;
        }
        y[oy] = store<T>(acc);
    }
}

/* Resize in 32-bit arithmetic, for the common case: every offset fits
 * in 32 bits and one or two axes are resized (an image's height and
 * width).  The unresized axes of one element and the size-1 axes are
 * gone from the descriptor (resize_compact), so an NHWC image resized in
 * H and W decomposes its index with two 32-bit divisions, where the
 * general kernel spends a 64-bit division per axis and walks a tap loop
 * of any depth. */
struct resize32 {
    int ndim;
    uint32_t shape[CUK_MAX_DIMS], ys[CUK_MAX_DIMS], xs[CUK_MAX_DIMS];
    int32_t meta[CUK_MAX_DIMS]; /* -1: not resized */
    float extrapolation_f;
};

template <typename T, int NR>
__global__ void k_resize_interp32(const __grid_constant__ resize32 d, uint32_t n,
                                  const int32_t *__restrict__ meta,
                                  const int64_t *__restrict__ toff, const float *__restrict__ tw,
                                  const T *__restrict__ x, T *__restrict__ y)
{
    cuk_kernel_enter();
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += gridDim.x * blockDim.x) {
        uint32_t r = i, oy = 0, base = 0;
        int32_t first[2] = {0, 0}, cnt[2] = {1, 1};
        int k = 0;
        for (int j = d.ndim - 1; j >= 0; j--) {
            uint32_t q = r / d.shape[j], c = r - q * d.shape[j];
            r = q;
            oy += c * d.ys[j];
            if (d.meta[j] < 0) {
                base += c * d.xs[j];
            } else {
                const int32_t *m = meta + d.meta[j];
                first[k] = __ldg(m + c);
                cnt[k] = __ldg(m + d.shape[j] + c);
                k++;
            }
        }
        if (cnt[0] == 0 || (NR == 2 && cnt[1] == 0)) {
            y[oy] = store<T>(d.extrapolation_f);
            continue;
        }
        float acc = 0.0f;
        for (int a = 0; a < cnt[0]; a++) {
            const uint32_t off0 = base + (uint32_t)__ldg(toff + first[0] + a);
            const float w0 = __ldg(tw + first[0] + a);
            if (NR == 1) {
                acc += w0 * load<T>(x[off0]);
                continue;
            }
            float part = 0.0f;
            for (int b = 0; b < cnt[1]; b++)
                part += __ldg(tw + first[1] + b) *
                        load<T>(x[off0 + (uint32_t)__ldg(toff + first[1] + b)]);
            acc += w0 * part;
        }
        y[oy] = store<T>(acc);
    }
}

/* The 32-bit form of d, without size-1 axes and with neighbouring
 * unresized axes merged; 0 when an offset may not fit or more than two
 * axes are resized. */
int resize_compact(const cuk_resize_desc &d, int64_t n, resize32 *o)
{
    if (n > kMax32) return 0;
    if (d.x_numel > INT32_MAX) return 0;
    int nr = 0;
    o->ndim = 0;
    o->extrapolation_f = d.extrapolation_f;
    for (int j = 0; j < d.ndim; j++) {
        if (d.shape[j] < 1) return 0;
        if (d.xs[j] < 0 || d.ys[j] < 0) return 0;
        if (d.meta[j] < 0 && d.shape[j] == 1) continue;
        if (d.meta[j] >= 0) nr++;
        int k = o->ndim;
        if (d.meta[j] < 0 && k > 0 && o->meta[k - 1] < 0 &&
            (int64_t)o->ys[k - 1] == d.ys[j] * d.shape[j] &&
            (int64_t)o->xs[k - 1] == d.xs[j] * d.shape[j]) {
            /* merged into the outer unresized axis */
            int64_t sh = (int64_t)o->shape[k - 1] * d.shape[j];
            if (sh > INT32_MAX) return 0;
            o->shape[k - 1] = (uint32_t)sh;
            o->ys[k - 1] = (uint32_t)d.ys[j];
            o->xs[k - 1] = (uint32_t)d.xs[j];
            continue;
        }
        if (d.ys[j] > INT32_MAX || d.xs[j] > INT32_MAX || d.meta[j] > INT32_MAX) return 0;
        o->shape[k] = (uint32_t)d.shape[j];
        o->ys[k] = (uint32_t)d.ys[j];
        o->xs[k] = (uint32_t)d.xs[j];
        o->meta[k] = (int32_t)d.meta[j];
        o->ndim++;
    }
    return nr >= 1 && nr <= 2 ? nr : 0;
}

template <typename E>
__global__ void k_resize_nearest(const __grid_constant__ cuk_resize_desc d, int64_t n,
                                 const int32_t *meta, const int64_t *toff, const E *x, E *y)
{
    cuk_kernel_enter();
    CUK_GRID_STRIDE(i, n)
    {
        int32_t first[CUK_MAX_DIMS], cnt[CUK_MAX_DIMS];
        int64_t base, oy;
        int nr = resize_taps(d, i, meta, first, cnt, base, oy);
        if (nr < 0) {
            y[oy] = (E)d.extrapolation;
            continue;
        }
        for (int q = 0; q < nr; q++)
            base += toff[first[q]];
        y[oy] = x[base];
    }
}

int64_t count(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int j = 0; j < ndim; j++)
        n *= shape[j];
    return n;
}

} /* namespace */

/* ---- entry points --------------------------------------------------- */

extern "C" cudaError_t cuk_gather_elements(size_t elem, int idx32, const cuk_elements_desc *d,
                                           const void *data, const void *idx, void *y,
                                           cudaStream_t stream)
{
    if (!d || d->ndim < 0 || d->ndim > CUK_MAX_DIMS) return cudaErrorInvalidValue;
    int64_t n = count(d->ndim, d->shape);
    if (n <= 0) return cudaSuccess;
    if (d->axis_len <= 0) return cudaErrorInvalidValue;
    CUK_DISPATCH_ELEM(elem, E, {
        CUK_DISPATCH_IDX(idx32, I,
                         cuk_launch(k_gather_elements<E, I>, grid_for(n), kThreads, 0, stream, *d,
                                    n, (const E *)data, (const I *)idx, (E *)y));
    });
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_gather_nd(size_t elem, int idx32, const cuk_nd_index_desc *d,
                                     const void *data, const void *idx, void *y,
                                     cudaStream_t stream)
{
    if (!d || d->ndim < 0 || d->ndim > CUK_MAX_DIMS || d->k < 1 || d->k > CUK_MAX_DIMS)
        return cudaErrorInvalidValue;
    int64_t n = count(d->ndim, d->shape);
    if (n <= 0) return cudaSuccess;
    for (int t = 0; t < d->k; t++)
        if (d->tup_len[t] <= 0) return cudaErrorInvalidValue;
    CUK_DISPATCH_ELEM(elem, E, {
        CUK_DISPATCH_IDX(idx32, I,
                         cuk_launch(k_gather_nd<E, I>, grid_for(n), kThreads, 0, stream, *d, n,
                                    (const E *)data, (const I *)idx, (E *)y));
    });
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_scatter_elements(cuk_dtype t, int idx32, cuk_scatter_red red,
                                            const cuk_elements_desc *d, const void *idx,
                                            const void *updates, void *y, cudaStream_t stream)
{
    if (!d || d->ndim < 0 || d->ndim > CUK_MAX_DIMS || (int)red < 0 || red > CUK_SCATTER_MIN)
        return cudaErrorInvalidValue;
    int64_t n = count(d->ndim, d->shape);
    if (n <= 0) return cudaSuccess;
    CUK_DISPATCH_DT(t, T, {
        CUK_DISPATCH_IDX(idx32, I,
                         cuk_launch(k_scatter_elements<T, I>, grid_for(n), kThreads, 0, stream, *d,
                                    n, red, (const I *)idx, (const T *)updates, (T *)y));
    });
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_scatter_nd(cuk_dtype t, int idx32, cuk_scatter_red red,
                                      const cuk_nd_index_desc *d, const void *idx,
                                      const void *updates, void *y, cudaStream_t stream)
{
    if (!d || d->ndim < 0 || d->ndim > CUK_MAX_DIMS || d->k < 1 || d->k > CUK_MAX_DIMS ||
        (int)red < 0 || red > CUK_SCATTER_MIN)
        return cudaErrorInvalidValue;
    int64_t n = count(d->ndim, d->shape);
    if (n <= 0) return cudaSuccess;
    CUK_DISPATCH_DT(t, T, {
        CUK_DISPATCH_IDX(idx32, I,
                         cuk_launch(k_scatter_nd<T, I>, grid_for(n), kThreads, 0, stream, *d, n,
                                    red, (const I *)idx, (const T *)updates, (T *)y));
    });
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_tile(size_t elem, const cuk_tile_desc *d, const void *x, void *y,
                                cudaStream_t stream)
{
    if (!d || d->ndim < 0 || d->ndim > CUK_MAX_DIMS) return cudaErrorInvalidValue;
    int64_t n = count(d->ndim, d->y_shape);
    if (n <= 0) return cudaSuccess;
    CUK_DISPATCH_ELEM(
        elem, E,
        cuk_launch(k_tile<E>, grid_for(n), kThreads, 0, stream, *d, n, (const E *)x, (E *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_trilu(size_t elem, const cuk_trilu_desc *d, const void *x, void *y,
                                 cudaStream_t stream)
{
    if (!d || d->ndim < 2 || d->ndim > CUK_MAX_DIMS) return cudaErrorInvalidValue;
    int64_t n = count(d->ndim, d->shape);
    if (n <= 0) return cudaSuccess;
    CUK_DISPATCH_ELEM(
        elem, E,
        cuk_launch(k_trilu<E>, grid_for(n), kThreads, 0, stream, *d, n, (const E *)x, (E *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_onehot(cuk_dtype ti, size_t elem, const cuk_onehot_desc *d,
                                  const void *idx, const void *values, void *y,
                                  cudaStream_t stream)
{
    if (!d || d->ndim < 1 || d->ndim > CUK_MAX_DIMS || d->axis < 0 || d->axis >= d->ndim)
        return cudaErrorInvalidValue;
    int64_t n = count(d->ndim, d->shape);
    if (n <= 0) return cudaSuccess;
    CUK_DISPATCH_DT(ti, TI, {
        CUK_DISPATCH_ELEM(elem, E,
                          cuk_launch(k_onehot<TI, E>, grid_for(n), kThreads, 0, stream, *d, n,
                                     (const TI *)idx, (const E *)values, (E *)y));
    });
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_resize(cuk_dtype t, size_t elem, const cuk_resize_desc *d,
                                  const int32_t *meta, const int64_t *tap_off, const float *tap_w,
                                  const void *x, void *y, cudaStream_t stream)
{
    if (!d || d->ndim < 1 || d->ndim > CUK_MAX_DIMS) return cudaErrorInvalidValue;
    int64_t n = count(d->ndim, d->shape);
    if (n <= 0) return cudaSuccess;
    if (d->nearest) {
        CUK_DISPATCH_ELEM(elem, E,
                          cuk_launch(k_resize_nearest<E>, grid_for(n), kThreads, 0, stream, *d, n,
                                     meta, tap_off, (const E *)x, (E *)y));
    } else {
        resize32 c;
        int nr = resize_compact(*d, n, &c);
        if (nr == 1) {
            CUK_DISPATCH_FP(t, T,
                            cuk_launch(k_resize_interp32<T, 1>, grid_for(n), kThreads, 0, stream, c,
                                       (uint32_t)n, meta, tap_off, tap_w, (const T *)x, (T *)y));
        } else if (nr == 2) {
            CUK_DISPATCH_FP(t, T,
                            cuk_launch(k_resize_interp32<T, 2>, grid_for(n), kThreads, 0, stream, c,
                                       (uint32_t)n, meta, tap_off, tap_w, (const T *)x, (T *)y));
        } else {
            CUK_DISPATCH_FP(t, T,
                            cuk_launch(k_resize_interp<T>, grid_for(n), kThreads, 0, stream, *d, n,
                                       meta, tap_off, tap_w, (const T *)x, (T *)y));
        }
    }
    return cudaGetLastError();
}
