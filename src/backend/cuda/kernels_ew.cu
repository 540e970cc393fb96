/*
 * kernels_ew.cu - the element-wise family (kernels.h): unary and binary
 * functions, Where, Cast, QuantizeLinear and DequantizeLinear, on every
 * storage type.
 *
 * A functor holds the operands and the function; three drivers run it:
 * k_flat (every operand packed alike), k_flat4 (the same, 4 elements per
 * aligned access, the tail done by the first threads) and k_nd (offsets
 * from a cuk_nd, in 32- or 64-bit index arithmetic).
 */
#include <stdint.h>

#include "backend/cuda/kernels_common.cuh"

using namespace cuk;

namespace
{

/* ---- unary functions ------------------------------------------------ */

template <typename C> __device__ C uint_fn(cuk_ufn fn, C x, const cuk_ew_params &p)
{
    switch (fn) {
    case CUK_U_ABS:
        return x < 0 ? wsub<C>(0, x) : x;
    case CUK_U_NEG:
        return wsub<C>(0, x);
    case CUK_U_SIGN:
        return (C)((x > 0) - (x < 0));
    case CUK_U_BITWISE_NOT:
        return (C)~x;
    case CUK_U_RELU:
        return x > 0 ? x : 0;
    case CUK_U_CLIP:
        return (C)((int64_t)x < p.lo ? p.lo : ((int64_t)x > p.hi ? p.hi : (int64_t)x));
    default:
        return x;
    }
}

/* FN >= 0: the function fixed at compile time (the activations networks
 * run between products): ufloat's switch over every unary function,
 * inlined whole, holds the registers of its largest case (and the stack of
 * the trigonometric ones' slow paths), which a memory-bound pass pays for
 * in occupancy. */
template <typename TX, typename TY, int FN = -1> struct unary_f {
    const TX *x;
    TY *y;
    cuk_ufn fn;
    cuk_ew_params p;

    __device__ __forceinline__ TY apply(TX v) const
    {
        if constexpr (FN >= 0) {
            return store<TY>(ufloat((cuk_ufn)FN, load<TX>(v), p));
        } else if constexpr (tr<TY>::is_bool && tr<TX>::fp) {
            float f = load<TX>(v);
            int r = fn == CUK_U_ISNAN ? f != f
                                      : (isinf(f) && ((f > 0.0f && p.alpha != 0.0f) ||
                                                      (f < 0.0f && p.beta != 0.0f)));
            return store<TY>(r);
        } else if constexpr (tr<TX>::is_bool) {
            return store<TY>(fn == CUK_U_NOT ? !load<TX>(v) : load<TX>(v));
        } else if constexpr (tr<TX>::fp) {
            return store<TY>(ufloat(fn, load<TX>(v), p));
        } else {
            return store<TY>(uint_fn<typename tr<TX>::C>(fn, load<TX>(v), p));
        }
    }
    __device__ __forceinline__ void at(int64_t i) const
    {
        y[i] = apply(x[i]);
    }
    __device__ __forceinline__ void at4(int64_t i) const
    {
        vec4<TX> a = ((const vec4<TX> *)x)[i];
        vec4<TY> r;
#pragma unroll
        for (int k = 0; k < 4; k++)
            r.v[k] = apply(a.v[k]);
        ((vec4<TY> *)y)[i] = r;
    }
    bool aligned4() const
    {
        return (uintptr_t)x % sizeof(vec4<TX>) == 0 && (uintptr_t)y % sizeof(vec4<TY>) == 0;
    }
};

/* ---- binary functions ----------------------------------------------- */

__device__ __forceinline__ float nan_or(float a, float b, float r)
{
    return (a != a || b != b) ? __int_as_float(0x7fc00000) : r;
}

__device__ float bfloat(cuk_bfn fn, float a, float b)
{
    switch (fn) {
    case CUK_B_ADD:
        return a + b;
    case CUK_B_SUB:
        return a - b;
    case CUK_B_MUL:
        return a * b;
    case CUK_B_DIV:
        return a / b;
    case CUK_B_POW:
        return powf(a, b);
    case CUK_B_MOD: {
        float r = fmodf(a, b);
        return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
    }
    case CUK_B_FMOD:
        return fmodf(a, b);
    case CUK_B_MIN:
        return nan_or(a, b, fminf(a, b));
    case CUK_B_MAX:
        return nan_or(a, b, fmaxf(a, b));
    case CUK_B_PRELU:
        return a < 0.0f ? a * b : a;
    default:
        return a;
    }
}

/* b^e for integers: exact by squaring (wrapping); a negative exponent
 * truncates 1 / b^|e| toward zero. */
template <typename C> __device__ C ipow(C b, int64_t e)
{
    if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);
    C r = 1;
    while (e) {
        if (e & 1) r = wmul<C>(r, b);
        b = wmul<C>(b, b);
        e >>= 1;
    }
    return r;
}

template <typename C> __device__ C bint(cuk_bfn fn, C a, C b)
{
    const int width = (int)sizeof(C) * 8;
    switch (fn) {
    case CUK_B_ADD:
        return wadd<C>(a, b);
    case CUK_B_SUB:
        return wsub<C>(a, b);
    case CUK_B_MUL:
        return wmul<C>(a, b);
    case CUK_B_DIV:
        return b == 0 ? 0 : (b == -1 ? wsub<C>(0, a) : a / b);
    case CUK_B_POW:
        return ipow<C>(a, (int64_t)b);
    case CUK_B_MOD: {
        if (b == 0 || b == -1) return 0;
        C r = a % b;
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    case CUK_B_FMOD:
        return (b == 0 || b == -1) ? 0 : a % b;
    case CUK_B_MIN:
        return a < b ? a : b;
    case CUK_B_MAX:
        return a > b ? a : b;
    case CUK_B_SHIFT_LEFT:
        return (b < 0 || b >= width) ? 0 : (C)((typename uns<C>::type)a << b);
    case CUK_B_SHIFT_RIGHT:
        return (b < 0 || b >= width) ? (a < 0 ? -1 : 0) : (C)(a >> b);
    case CUK_B_BITWISE_AND:
        return a & b;
    case CUK_B_BITWISE_OR:
        return a | b;
    case CUK_B_BITWISE_XOR:
        return a ^ b;
    case CUK_B_PRELU:
        return a < 0 ? wmul<C>(a, b) : a;
    default:
        return a;
    }
}

/* Comparisons and the logical functions (bool results). */
template <typename C> __device__ __forceinline__ int bcmp(cuk_bfn fn, C a, C b)
{
    switch (fn) {
    case CUK_B_EQUAL:
        return a == b;
    case CUK_B_LESS:
        return a < b;
    case CUK_B_LESS_EQUAL:
        return a <= b;
    case CUK_B_GREATER:
        return a > b;
    case CUK_B_GREATER_EQUAL:
        return a >= b;
    case CUK_B_AND:
        return (a != 0) && (b != 0);
    case CUK_B_OR:
        return (a != 0) || (b != 0);
    case CUK_B_XOR:
        return (a != 0) != (b != 0);
    default:
        return 0;
    }
}

template <typename TA, typename TB, typename TY> struct binary_f {
    const TA *a;
    const TB *b;
    TY *y;
    cuk_bfn fn;

    __device__ __forceinline__ TY apply(TA va, TB vb) const
    {
        typedef typename tr<TA>::C CA;
        if constexpr (tr<TY>::is_bool) {
            return store<TY>(bcmp<CA>(fn, load<TA>(va), (CA)load<TB>(vb)));
        } else if constexpr (!same_t<TA, TB>::value) {
            /* Pow with an exponent of another type: the base's type rules */
            if constexpr (tr<TA>::fp) {
                return store<TY>(powf(load<TA>(va), (float)load<TB>(vb)));
            } else if constexpr (tr<TB>::fp) {
                double r = pow((double)load<TA>(va), (double)load<TB>(vb));
                return store<TY>((CA)__double2ll_rz(r));
            } else {
                return store<TY>(ipow<CA>(load<TA>(va), (int64_t)load<TB>(vb)));
            }
        } else if constexpr (tr<TA>::fp) {
            return store<TY>(bfloat(fn, load<TA>(va), load<TB>(vb)));
        } else {
            return store<TY>(bint<CA>(fn, load<TA>(va), load<TB>(vb)));
        }
    }
    template <typename I> __device__ __forceinline__ void nd(const I *off) const
    {
        y[off[0]] = apply(a[off[1]], b[off[2]]);
    }
    __device__ __forceinline__ void at(int64_t i) const
    {
        y[i] = apply(a[i], b[i]);
    }
    __device__ __forceinline__ void at4(int64_t i) const
    {
        vec4<TA> u = ((const vec4<TA> *)a)[i];
        vec4<TB> v = ((const vec4<TB> *)b)[i];
        vec4<TY> r;
#pragma unroll
        for (int k = 0; k < 4; k++)
            r.v[k] = apply(u.v[k], v.v[k]);
        ((vec4<TY> *)y)[i] = r;
    }
    bool aligned4() const
    {
        return (uintptr_t)a % sizeof(vec4<TA>) == 0 && (uintptr_t)b % sizeof(vec4<TB>) == 0 &&
               (uintptr_t)y % sizeof(vec4<TY>) == 0;
    }
};

/* ---- Where ---------------------------------------------------------- */

template <typename E> struct where_f {
    const uint8_t *c;
    const E *x, *y;
    E *o;

    template <typename I> __device__ __forceinline__ void nd(const I *off) const
    {
        o[off[0]] = c[off[1]] ? x[off[2]] : y[off[3]];
    }
    __device__ __forceinline__ void at(int64_t i) const
    {
        o[i] = c[i] ? x[i] : y[i];
    }
    __device__ __forceinline__ void at4(int64_t i) const
    {
        vec4<uint8_t> cc = ((const vec4<uint8_t> *)c)[i];
        vec4<E> u = ((const vec4<E> *)x)[i], v = ((const vec4<E> *)y)[i], r;
#pragma unroll
        for (int k = 0; k < 4; k++)
            r.v[k] = cc.v[k] ? u.v[k] : v.v[k];
        ((vec4<E> *)o)[i] = r;
    }
    bool aligned4() const
    {
        return (uintptr_t)c % 4 == 0 && (uintptr_t)x % sizeof(vec4<E>) == 0 &&
               (uintptr_t)y % sizeof(vec4<E>) == 0 && (uintptr_t)o % sizeof(vec4<E>) == 0;
    }
};

/* ---- Copy ----------------------------------------------------------- */

/* A strided copy (movement gathers, layout copies): run_nd's 32-bit
 * index path where it fits, for a channel shuffle's divisions a dimension
 * an element (with 64-bit ones, ShuffleNetV2's shuffles at batch 16 took
 * several times what their bytes need on an H200, read by ncu), and its
 * packed path for a plain copy. */
template <typename E> struct copy_f {
    const E *x;
    E *y;

    template <typename I> __device__ __forceinline__ void nd(const I *off) const
    {
        y[off[0]] = x[off[1]];
    }
    __device__ __forceinline__ void at(int64_t i) const
    {
        y[i] = x[i];
    }
    __device__ __forceinline__ void at4(int64_t i) const
    {
        ((vec4<E> *)y)[i] = ((const vec4<E> *)x)[i];
    }
    bool aligned4() const
    {
        return (uintptr_t)x % sizeof(vec4<E>) == 0 && (uintptr_t)y % sizeof(vec4<E>) == 0;
    }
};

/* A gather through a Concat's output without it (opsched_move_concat):
 * the iteration's source offset s is an element of the Concat's output,
 * (o * extent + a) * inner + i, read from the input whose part of the axis
 * holds a. */
template <typename E> struct gather_concat_f {
    const E *x[CUK_MAX_GATHER_PARTS];
    E *y;
    int parts;
    int64_t inner, extent, start[CUK_MAX_GATHER_PARTS], len[CUK_MAX_GATHER_PARTS];

    template <typename I> __device__ __forceinline__ void nd(const I *off) const
    {
        const I s = off[1], i = s % (I)inner, q = s / (I)inner;
        const I a = q % (I)extent, o = q / (I)extent;
        int k = 0;
        while (k + 1 < parts && a >= (I)start[k + 1])
            k++;
        y[off[0]] = x[k][(o * (I)len[k] + a - (I)start[k]) * (I)inner + i];
    }
    __device__ __forceinline__ void at(int64_t i) const
    {
        const int64_t off[2] = {i, i};
        nd(off);
    }
    __device__ __forceinline__ void at4(int64_t i) const
    {
        for (int k = 0; k < 4; k++)
            at(4 * i + k);
    }
    bool aligned4() const
    {
        return false;
    }
};

/* ---- Cast ----------------------------------------------------------- */

template <typename TX, typename TY> struct cast_f {
    const TX *x;
    TY *y;
    cuk_dtype round_to;

    __device__ __forceinline__ TY apply(TX v) const
    {
        if constexpr (tr<TX>::fp) {
            float f = load<TX>(v);
            if constexpr (tr<TY>::fp) {
                if (round_to == CUK_DT_F16)
                    f = __half2float(__float2half_rn(f));
                else if (round_to == CUK_DT_BF16)
                    f = __bfloat162float(__float2bfloat16_rn(f));
                return store<TY>(f);
            } else {
                return from_float<TY>(f);
            }
        } else {
            int64_t w = (int64_t)load<TX>(v);
            if constexpr (tr<TY>::fp) {
                float f = (float)w;
                if (round_to == CUK_DT_F16)
                    f = __half2float(__float2half_rn(f));
                else if (round_to == CUK_DT_BF16)
                    f = __bfloat162float(__float2bfloat16_rn(f));
                return store<TY>(f);
            } else if constexpr (tr<TY>::is_bool) {
                return store<TY>(w != 0);
            } else {
                return store<TY>((typename tr<TY>::C)w);
            }
        }
    }
    __device__ __forceinline__ void at(int64_t i) const
    {
        y[i] = apply(x[i]);
    }
    __device__ __forceinline__ void at4(int64_t i) const
    {
        vec4<TX> a = ((const vec4<TX> *)x)[i];
        vec4<TY> r;
#pragma unroll
        for (int k = 0; k < 4; k++)
            r.v[k] = apply(a.v[k]);
        ((vec4<TY> *)y)[i] = r;
    }
    bool aligned4() const
    {
        return (uintptr_t)x % sizeof(vec4<TX>) == 0 && (uintptr_t)y % sizeof(vec4<TY>) == 0;
    }
};

/* ---- drivers -------------------------------------------------------- */

template <typename F> __global__ void k_flat(int64_t n, F f)
{
    cuk_kernel_enter();
    CUK_GRID_STRIDE(i, n) f.at(i);
}

template <typename F> __global__ void k_flat4(int64_t n, F f)
{
    cuk_kernel_enter();
    const int64_t n4 = n / 4;
    CUK_GRID_STRIDE(i, n4) f.at4(i);
    if (blockIdx.x == 0 && threadIdx.x < n - n4 * 4) f.at(n4 * 4 + threadIdx.x);
}

template <int NOPS, typename I, typename F>
__global__ void k_nd(const __grid_constant__ ndx<I> d, I n, F f)
{
    cuk_kernel_enter();
    for (I i = (I)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += (I)(gridDim.x * blockDim.x)) {
        I off[NOPS];
        nd_at<NOPS, I>(d, i, off);
        f.nd(off);
    }
}

/* Packed elements: 4 at a time when the functor's pointers allow. */
template <typename F> cudaError_t run_flat(int64_t n, const F &f, cudaStream_t s)
{
    if (n <= 0) return cudaSuccess;
    if (n >= 4 && f.aligned4())
        cuk_launch(k_flat4<F>, grid_for((n + 3) / 4), kThreads, 0, s, n, f);
    else
        cuk_launch(k_flat<F>, grid_for(n), kThreads, 0, s, n, f);
    return cudaGetLastError();
}

/* 1 when the first nops operands are packed row-major over the whole
 * iteration from offset 0. */
int nd_packed(const cuk_nd *d, int nops)
{
    for (int k = 0; k < nops; k++) {
        if (d->offset[k] != 0) return 0;
        int64_t want = 1;
        for (int j = d->ndim - 1; j >= 0; j--) {
            if (d->shape[j] != 1 && d->stride[k][j] != want) return 0;
            want *= d->shape[j];
        }
    }
    return 1;
}

template <int NOPS, typename F> cudaError_t run_nd(const cuk_nd *d, const F &f, cudaStream_t s)
{
    int64_t n = nd_count(d);
    if (n <= 0) return cudaSuccess;
    if (d->ndim < 1 || d->ndim > CUK_MAX_DIMS) return cudaErrorInvalidValue;
    if (nd_packed(d, NOPS)) return run_flat(n, f, s);
    if (nd_fits32(d, NOPS))
        cuk_launch(k_nd<NOPS, int32_t, F>, grid_for(n), kThreads, 0, s, nd_as<int32_t>(d),
                   (int32_t)n, f);
    else
        cuk_launch(k_nd<NOPS, int64_t, F>, grid_for(n), kThreads, 0, s, nd_as<int64_t>(d), n, f);
    return cudaGetLastError();
}

template <typename TA, typename TB, typename TY>
cudaError_t binary_run(cuk_bfn fn, const cuk_nd *nd, const void *a, const void *b, void *y,
                       cudaStream_t s)
{
    binary_f<TA, TB, TY> f;
    f.a = (const TA *)a;
    f.b = (const TB *)b;
    f.y = (TY *)y;
    f.fn = fn;
    return run_nd<3>(nd, f, s);
}

int is_fp(cuk_dtype t)
{
    return t == CUK_DT_F32 || t == CUK_DT_F16 || t == CUK_DT_BF16;
}

int is_int(cuk_dtype t)
{
    return t == CUK_DT_I8 || t == CUK_DT_U8 || t == CUK_DT_I32 || t == CUK_DT_I64;
}

int is_wide_int(cuk_dtype t)
{
    return t == CUK_DT_I32 || t == CUK_DT_I64;
}

/* ---- quantization --------------------------------------------------- */

template <typename TQ> __device__ __forceinline__ double qmin()
{
    return same_t<TQ, int8_t>::value ? -128.0 : (same_t<TQ, uint8_t>::value ? 0.0 : -2147483648.0);
}
template <typename TQ> __device__ __forceinline__ double qmax()
{
    return same_t<TQ, int8_t>::value ? 127.0 : (same_t<TQ, uint8_t>::value ? 255.0 : 2147483647.0);
}

__device__ __forceinline__ int64_t quant_at(const cuk_quant_desc &d, int64_t i)
{
    int64_t r = i % d.inner, t = i / d.inner;
    int64_t c = t % d.len, o = t / d.len;
    return o * d.s_outer + (c / d.block) * d.s_axis + r * d.s_inner;
}

template <typename TF, typename TQ>
__global__ void k_quantize(cuk_quant_desc d, const TF *x, const TF *scale, const TQ *zp, TQ *y)
{
    cuk_kernel_enter();
    CUK_GRID_STRIDE(i, d.n)
    {
        int64_t si = quant_at(d, i);
        float q = rintf(load<TF>(x[i]) / load<TF>(scale[si])); /* half to even */
        double v = q != q ? 0.0 : (double)q;                     /* NaN: the zero point */
        if (zp) v += (double)load<TQ>(zp[si]);
        v = v < qmin<TQ>() ? qmin<TQ>() : (v > qmax<TQ>() ? qmax<TQ>() : v);
        y[i] = (TQ)(int64_t)v;
    }
}

template <typename TQ, typename TF>
__global__ void k_dequantize(cuk_quant_desc d, const TQ *x, const TF *scale, const TQ *zp, TF *y)
{
    cuk_kernel_enter();
    CUK_GRID_STRIDE(i, d.n)
    {
        int64_t si = quant_at(d, i);
        int64_t v = (int64_t)load<TQ>(x[i]) - (zp ? (int64_t)load<TQ>(zp[si]) : 0);
        y[i] = store<TF>((float)v * load<TF>(scale[si]));
    }
}

#define DISPATCH_QTYPE(t, Q, ...)                                                                  \
    switch (t) {                                                                                   \
    case CUK_DT_I8: {                                                                              \
        typedef int8_t Q;                                                                          \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case CUK_DT_U8: {                                                                              \
        typedef uint8_t Q;                                                                         \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case CUK_DT_I32: {                                                                             \
        typedef int32_t Q;                                                                         \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    default:                                                                                       \
        return cudaErrorInvalidValue;                                                              \
    }

int quant_desc_ok(const cuk_quant_desc *d)
{
    return d->n >= 0 && d->len >= 1 && d->inner >= 1 && d->block >= 1;
}

/* ---- element-wise chains --------------------------------------------- */

/* ND: the iteration's dimensions (CUK_MAX_DIMS: any up to it, read from
 * d).  The element's index stays in registers (statically indexed) and
 * each operand's offset is formed where it is read; both structures are
 * grid constants, so indexing them by the step's operand reads the
 * constant bank (an array indexed at run time, or a by-value parameter so
 * indexed, would be copied to local memory for every element). */
template <typename T, typename I, int ND>
__global__ void k_chain(const __grid_constant__ cuk_chain_desc d,
                        const __grid_constant__ cuk_chain_ptrs p)
{
    cuk_kernel_enter();
    const int nd = ND < CUK_MAX_DIMS ? ND : d.ndim;
    I total = 1;
#pragma unroll
    for (int k = 0; k < ND; k++)
        if (k < nd) total *= (I)d.shape[k];
    for (I i = (I)(blockIdx.x * blockDim.x + threadIdx.x); i < total;
         i += (I)(gridDim.x * blockDim.x)) {
        I idx[ND];
        I r = i;
#pragma unroll
        for (int dim = ND - 1; dim >= 0; dim--) {
            idx[dim] = 0;
            if (dim >= nd) continue;
            if (dim > 0) {
                const I ext = (I)d.shape[dim];
                idx[dim] = r % ext;
                r /= ext;
            } else {
                idx[dim] = r;
            }
        }
        auto at = [&](int o) {
            I off = 0;
#pragma unroll
            for (int dim = 0; dim < ND; dim++)
                if (dim < nd) off += idx[dim] * (I)d.stride[o][dim];
            return off;
        };
        float v = to_float(((const T *)p.ops[1])[at(1)]);
        for (int s = 0; s < d.n_steps; s++) {
            const cuk_chain_step &st = d.steps[s];
            if (!st.binary) {
                v = ufloat((cuk_ufn)st.fn, v, st.prm);
            } else {
                const int o = st.operand;
                const float w = to_float(((const T *)p.ops[o])[at(o)]);
                v = st.swap ? bfloat((cuk_bfn)st.fn, w, v) : bfloat((cuk_bfn)st.fn, v, w);
            }
        }
        ((T *)p.ops[0])[at(0)] = from_float<T>(v);
    }
}

/* Batch normalisation in inference form, and the activation after it
 * (act): y = act((x - mean[c]) * scale[c] / sqrt(var[c] + eps) + bias[c]),
 * c = (i / cstride) % C.  I is the index type (32 bits when every index
 * fits). */
template <typename T, typename I>
__global__ void k_batchnorm(I n, I C, I cstride, float eps, const T *__restrict__ x,
                            const T *__restrict__ scale, const T *__restrict__ bias,
                            const T *__restrict__ mean, const T *__restrict__ var,
                            T *__restrict__ y, int act, cuk_ufn fn, cuk_ew_params prm)
{
    cuk_kernel_enter();
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        const I c = cstride == 1 ? i % C : (i / cstride) % C;
        const float s = to_float(scale[c]) * rsqrtf(to_float(var[c]) + eps);
        float v = (to_float(x[i]) - to_float(mean[c])) * s + to_float(bias[c]);
        if (act) v = ufloat(fn, v, prm);
        y[i] = from_float<T>(v);
    }
}

/* The same over channels innermost (cstride 1) with C a multiple of four:
 * four channels a thread as one vector (f4), the channels' factors read
 * as vectors too, and the activation inline in its clamp form (CLAMP, a
 * Relu after DenseNet's normalisations) or through ufloat.  The scalar
 * form took about twice the time DenseNet-121's bytes need at batch 16 on
 * an H200 (ncu), a modulo and four parameter loads an element. */
template <typename T, bool CLAMP>
__global__ void k_batchnorm4(uint32_t nv, uint32_t cv, float eps, const T *__restrict__ x,
                             const T *__restrict__ scale, const T *__restrict__ bias,
                             const T *__restrict__ mean, const T *__restrict__ var,
                             T *__restrict__ y, int act, cuk_ufn fn, cuk_ew_params prm,
                             clamp_act ca)
{
    cuk_kernel_enter();
    for (uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < nv; v += gridDim.x * blockDim.x) {
        const uint32_t c = 4 * (v % cv);
        const float4 sc = f4<T>::ld(scale + c), vr = f4<T>::ld(var + c);
        const float4 mu = f4<T>::ld(mean + c), bi = f4<T>::ld(bias + c);
        const float4 xv = f4<T>::ld(x + 4 * (size_t)v);
        float r[4] = {(xv.x - mu.x) * (sc.x * rsqrtf(vr.x + eps)) + bi.x,
                      (xv.y - mu.y) * (sc.y * rsqrtf(vr.y + eps)) + bi.y,
                      (xv.z - mu.z) * (sc.z * rsqrtf(vr.z + eps)) + bi.z,
                      (xv.w - mu.w) * (sc.w * rsqrtf(vr.w + eps)) + bi.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            if constexpr (CLAMP)
                r[k] = clamp_apply(ca, r[k]);
            else if (act)
                r[k] = ufloat(fn, r[k], prm);
        }
        f4<T>::st(y + 4 * (size_t)v, make_float4(r[0], r[1], r[2], r[3]));
    }
}

/* k_batchnorm's work over a concatenation read in place (cuk_batchnorm_cat):
 * VEC elements a thread (4: a float4 of each operand; 1: one), the part
 * holding channel c found by a scan of the parts' first channels. */
template <typename T, int VEC, bool CLAMP>
__global__ void k_batchnorm_cat(uint32_t nv, uint32_t cv, float eps, cuk_cat_parts parts,
                                const T *__restrict__ scale, const T *__restrict__ bias,
                                const T *__restrict__ mean, const T *__restrict__ var,
                                T *__restrict__ y, int act, cuk_ufn fn, cuk_ew_params prm,
                                clamp_act ca)
{
    cuk_kernel_enter();
    for (uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < nv; v += gridDim.x * blockDim.x) {
        const uint32_t pix = v / cv, c = VEC * (v - pix * cv);
        int k = 0;
        while (k + 1 < parts.n && (int)c >= parts.off[k + 1])
            k++;
        const T *xp = (const T *)parts.ptr[k] + (size_t)pix * (uint32_t)parts.ch[k] +
                      (c - (uint32_t)parts.off[k]);
        float r[VEC];
        if constexpr (VEC == 4) {
            const float4 sc = f4<T>::ld(scale + c), vr = f4<T>::ld(var + c);
            const float4 mu = f4<T>::ld(mean + c), bi = f4<T>::ld(bias + c);
            const float4 xv = f4<T>::ld(xp);
            r[0] = (xv.x - mu.x) * (sc.x * rsqrtf(vr.x + eps)) + bi.x;
            r[1] = (xv.y - mu.y) * (sc.y * rsqrtf(vr.y + eps)) + bi.y;
            r[2] = (xv.z - mu.z) * (sc.z * rsqrtf(vr.z + eps)) + bi.z;
            r[3] = (xv.w - mu.w) * (sc.w * rsqrtf(vr.w + eps)) + bi.w;
        } else {
            r[0] = (load<T>(xp[0]) - load<T>(mean[c])) *
                       (load<T>(scale[c]) * rsqrtf(load<T>(var[c]) + eps)) +
                   load<T>(bias[c]);
        }
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            if constexpr (CLAMP)
                r[j] = clamp_apply(ca, r[j]);
            else if (act)
                r[j] = ufloat(fn, r[j], prm);
        }
        if constexpr (VEC == 4)
            f4<T>::st(y + 4 * (size_t)v, make_float4(r[0], r[1], r[2], r[3]));
        else
            y[v] = store<T>(r[0]);
    }
}

} /* namespace */

/* ---- entry points --------------------------------------------------- */

extern "C" int cuk_ew_unary_ok(cuk_ufn fn, cuk_dtype tx, cuk_dtype ty)
{
    if ((int)tx < 0 || tx >= CUK_DT_COUNT || (int)fn < 0 || fn >= CUK_U_COUNT) return 0;
    switch (fn) {
    case CUK_U_ISNAN:
    case CUK_U_ISINF:
        return is_fp(tx) && ty == CUK_DT_BOOL;
    case CUK_U_NOT:
        return tx == CUK_DT_BOOL && ty == CUK_DT_BOOL;
    case CUK_U_BITWISE_NOT:
        return is_int(tx) && ty == tx;
    case CUK_U_ABS:
    case CUK_U_NEG:
    case CUK_U_SIGN:
    case CUK_U_RELU:
    case CUK_U_CLIP:
        return (is_fp(tx) || is_int(tx)) && ty == tx;
    default:
        return is_fp(tx) && ty == tx;
    }
}

extern "C" int cuk_ew_binary_ok(cuk_bfn fn, cuk_dtype ta, cuk_dtype tb, cuk_dtype ty)
{
    if ((int)ta < 0 || ta >= CUK_DT_COUNT || (int)tb < 0 || tb >= CUK_DT_COUNT || (int)fn < 0 ||
        fn >= CUK_B_COUNT)
        return 0;
    switch (fn) {
    case CUK_B_EQUAL:
    case CUK_B_LESS:
    case CUK_B_LESS_EQUAL:
    case CUK_B_GREATER:
    case CUK_B_GREATER_EQUAL:
        return ta == tb && ty == CUK_DT_BOOL;
    case CUK_B_AND:
    case CUK_B_OR:
    case CUK_B_XOR:
        return ta == CUK_DT_BOOL && tb == CUK_DT_BOOL && ty == CUK_DT_BOOL;
    case CUK_B_SHIFT_LEFT:
    case CUK_B_SHIFT_RIGHT:
    case CUK_B_BITWISE_AND:
    case CUK_B_BITWISE_OR:
    case CUK_B_BITWISE_XOR:
        return is_int(ta) && tb == ta && ty == ta;
    case CUK_B_POW:
        if (ty != ta || !(is_fp(ta) || is_int(ta))) return 0;
        if (tb == ta) return 1;
        return (is_fp(ta) && is_wide_int(tb)) || (is_wide_int(ta) && is_fp(tb)) ||
               (is_wide_int(ta) && is_wide_int(tb));
    default:
        return (is_fp(ta) || is_int(ta)) && tb == ta && ty == ta;
    }
}

extern "C" cudaError_t cuk_ew_unary(cuk_ufn fn, const cuk_ew_params *p, cuk_dtype tx,
                                    cuk_dtype ty, int64_t n, const void *x, void *y,
                                    cudaStream_t stream)
{
    if (!cuk_ew_unary_ok(fn, tx, ty) || !p) return cudaErrorInvalidValue;
    if (ty == CUK_DT_BOOL && tx != CUK_DT_BOOL) {
        CUK_DISPATCH_FP(tx, T, {
            unary_f<T, boolean> f = {(const T *)x, (boolean *)y, fn, *p};
            return run_flat(n, f, stream);
        });
    }
    if (tx == ty && is_fp(tx)) {
#define CUK_ACT(FN)                                                                                \
    case FN:                                                                                       \
        CUK_DISPATCH_FP(tx, T, {                                                                   \
            unary_f<T, T, FN> f = {(const T *)x, (T *)y, fn, *p};                                  \
            return run_flat(n, f, stream);                                                         \
        });                                                                                        \
        break;
        switch (fn) {
            CUK_ACT(CUK_U_GELU_ERF)
            CUK_ACT(CUK_U_GELU_TANH)
            CUK_ACT(CUK_U_RELU)
            CUK_ACT(CUK_U_CLIP)
            CUK_ACT(CUK_U_SIGMOID)
            CUK_ACT(CUK_U_SWISH)
            CUK_ACT(CUK_U_HARDSWISH)
            CUK_ACT(CUK_U_HARDSIGMOID)
            CUK_ACT(CUK_U_TANH)
        default:
            break;
        }
#undef CUK_ACT
    }
    CUK_DISPATCH_DT(tx, T, {
        unary_f<T, T> f = {(const T *)x, (T *)y, fn, *p};
        return run_flat(n, f, stream);
    });
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuk_ew_binary(cuk_bfn fn, cuk_dtype ta, cuk_dtype tb, cuk_dtype ty,
                                     const cuk_nd *nd, const void *a, const void *b, void *y,
                                     cudaStream_t stream)
{
    if (!cuk_ew_binary_ok(fn, ta, tb, ty) || !nd) return cudaErrorInvalidValue;
    if (ta == tb && ty == ta) {
        CUK_DISPATCH_DT(ta, T, return (binary_run<T, T, T>(fn, nd, a, b, y, stream)));
    }
    if (ta == tb && ty == CUK_DT_BOOL) {
        CUK_DISPATCH_DT(ta, T, return (binary_run<T, T, boolean>(fn, nd, a, b, y, stream)));
    }
    /* Pow with an exponent of another type */
    if (is_fp(ta)) {
        CUK_DISPATCH_FP(ta, T, {
            if (tb == CUK_DT_I32) return binary_run<T, int32_t, T>(fn, nd, a, b, y, stream);
            return binary_run<T, int64_t, T>(fn, nd, a, b, y, stream);
        });
    }
    if (ta == CUK_DT_I32) {
        if (tb == CUK_DT_I64) return binary_run<int32_t, int64_t, int32_t>(fn, nd, a, b, y, stream);
        CUK_DISPATCH_FP(tb, T, return (binary_run<int32_t, T, int32_t>(fn, nd, a, b, y, stream)));
    }
    if (tb == CUK_DT_I32) return binary_run<int64_t, int32_t, int64_t>(fn, nd, a, b, y, stream);
    CUK_DISPATCH_FP(tb, T, return (binary_run<int64_t, T, int64_t>(fn, nd, a, b, y, stream)));
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuk_ew_where(size_t elem, const cuk_nd *nd, const void *cond,
                                    const void *x, const void *y, void *out, cudaStream_t stream)
{
    if (!nd) return cudaErrorInvalidValue;
    CUK_DISPATCH_ELEM(elem, E, {
        where_f<E> f = {(const uint8_t *)cond, (const E *)x, (const E *)y, (E *)out};
        return run_nd<4>(nd, f, stream);
    });
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuk_copy(size_t elem, const cuk_nd *nd, const void *src, void *dst,
                                cudaStream_t stream)
{
    if (!nd) return cudaErrorInvalidValue;
    cuk_nd d = *nd;
    if (d.ndim == 0) { /* a scalar: one element */
        d.ndim = 1;
        d.shape[0] = 1;
        d.stride[0][0] = d.stride[1][0] = 1;
    }
    CUK_DISPATCH_ELEM(elem, E, {
        copy_f<E> f = {(const E *)src, (E *)dst};
        return run_nd<2>(&d, f, stream);
    });
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuk_gather_concat(size_t elem, const cuk_nd *nd, int parts,
                                         const void *const *srcs, const int64_t *lens,
                                         int64_t inner, void *dst, cudaStream_t stream)
{
    if (!nd || nd->ndim < 1 || parts < 1 || parts > CUK_MAX_GATHER_PARTS || !srcs || !lens ||
        inner < 1)
        return cudaErrorInvalidValue;
    CUK_DISPATCH_ELEM(elem, E, {
        gather_concat_f<E> f;
        memset(&f, 0, sizeof(f));
        f.y = (E *)dst;
        f.parts = parts;
        f.inner = inner;
        for (int k = 0; k < parts; k++) {
            if (!srcs[k] || lens[k] < 1) return cudaErrorInvalidValue;
            f.x[k] = (const E *)srcs[k];
            f.start[k] = f.extent;
            f.len[k] = lens[k];
            f.extent += lens[k];
        }
        return run_nd<2>(nd, f, stream);
    });
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuk_ew_cast(cuk_dtype tx, cuk_dtype ty, cuk_dtype round_to, int64_t n,
                                   const void *x, void *y, cudaStream_t stream)
{
    CUK_DISPATCH_DT(tx, TX, {
        CUK_DISPATCH_DT(ty, TY, {
            cast_f<TX, TY> f = {(const TX *)x, (TY *)y, round_to};
            return run_flat(n, f, stream);
        });
    });
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuk_quantize(cuk_dtype tf, cuk_dtype ty, const cuk_quant_desc *d,
                                    const void *x, const void *scale, const void *zero_point,
                                    void *y, cudaStream_t stream)
{
    if (!d || !quant_desc_ok(d)) return cudaErrorInvalidValue;
    if (d->n == 0) return cudaSuccess;
    CUK_DISPATCH_FP(tf, F, {
        DISPATCH_QTYPE(ty, Q, {
            cuk_launch(k_quantize<F, Q>, grid_for(d->n), kThreads, 0, stream, *d, (const F *)x,
                       (const F *)scale, (const Q *)zero_point, (Q *)y);
        });
    });
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_dequantize(cuk_dtype tq, cuk_dtype tf, const cuk_quant_desc *d,
                                      const void *x, const void *scale, const void *zero_point,
                                      void *y, cudaStream_t stream)
{
    if (!d || !quant_desc_ok(d)) return cudaErrorInvalidValue;
    if (d->n == 0) return cudaSuccess;
    CUK_DISPATCH_FP(tf, F, {
        DISPATCH_QTYPE(tq, Q, {
            cuk_launch(k_dequantize<Q, F>, grid_for(d->n), kThreads, 0, stream, *d, (const Q *)x,
                       (const F *)scale, (const Q *)zero_point, (F *)y);
        });
    });
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_ew_chain(cuk_type t, const cuk_chain_desc *d, const cuk_chain_ptrs *p,
                                    cudaStream_t stream)
{
    if (!d || !p || d->ndim < 1 || d->ndim > CUK_MAX_DIMS || d->n_ops < 2 ||
        d->n_ops > CUK_CHAIN_OPS || d->n_steps < 0 || d->n_steps > CUK_CHAIN_STEPS)
        return cudaErrorInvalidValue;
    int64_t total = 1, reach = 0;
    for (int k = 0; k < d->ndim; k++)
        total *= d->shape[k];
    for (int o = 0; o < d->n_ops; o++) {
        int64_t far = 0;
        for (int k = 0; k < d->ndim; k++)
            far += (d->shape[k] - 1) * (d->stride[o][k] < 0 ? -d->stride[o][k] : d->stride[o][k]);
        if (far > reach) reach = far;
    }
    if (total <= 0) return cudaSuccess;
    const unsigned grid = grid_for(total);
    const int64_t lim = (int64_t)1 << 30;
    const bool narrow = total < lim && reach < lim && (int64_t)grid * kThreads < lim;
    const cuk_chain_desc &c = *d; /* simplified by its plan (cu_dims_simplify) */
    CUK_DISPATCH_FP((cuk_dtype)t, T, {
        if (!narrow)
            cuk_launch(k_chain<T, int64_t, CUK_MAX_DIMS>, grid, kThreads, 0, stream, c, *p);
        else if (c.ndim == 1)
            cuk_launch(k_chain<T, int32_t, 1>, grid, kThreads, 0, stream, c, *p);
        else if (c.ndim == 2)
            cuk_launch(k_chain<T, int32_t, 2>, grid, kThreads, 0, stream, c, *p);
        else if (c.ndim == 3)
            cuk_launch(k_chain<T, int32_t, 3>, grid, kThreads, 0, stream, c, *p);
        else if (c.ndim == 4)
            cuk_launch(k_chain<T, int32_t, 4>, grid, kThreads, 0, stream, c, *p);
        else
            cuk_launch(k_chain<T, int32_t, CUK_MAX_DIMS>, grid, kThreads, 0, stream, c, *p);
        return cudaGetLastError();
    });
    return cudaErrorInvalidValue;
}

extern "C" int cuk_batchnorm_cat_ok(int64_t n, int64_t C, const cuk_cat_parts *parts)
{
    if (!parts || parts->n < 1 || parts->n > CUK_BN_MAX_PARTS || C <= 0 || n < 0 || n % C ||
        n > kMax32 || C > INT32_MAX)
        return 0;
    int64_t at = 0;
    for (int k = 0; k < parts->n; k++) {
        if (parts->ch[k] < 1 || parts->off[k] != at) return 0;
        at += parts->ch[k];
    }
    return at == C;
}

extern "C" cudaError_t cuk_batchnorm_cat(cuk_dtype t, int64_t n, int64_t C, float eps,
                                         const cuk_cat_parts *parts, const void *scale,
                                         const void *bias, const void *mean, const void *var,
                                         void *y, int act, cuk_ufn fn, const cuk_ew_params *prm,
                                         cudaStream_t stream)
{
    if (!cuk_batchnorm_cat_ok(n, C, parts) || (act && !prm)) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    const cuk_ew_params none = {0.0f, 0.0f, 0.0f, 0, 0};
    const cuk_ew_params &p = act ? *prm : none;
    const size_t align = t == CUK_DT_F32 ? 16 : 8;
    const void *ptrs[5] = {scale, bias, mean, var, y};
    int vec = C % 4 == 0;
    for (int k = 0; k < 5 && vec; k++)
        vec = (uintptr_t)ptrs[k] % align == 0;
    for (int k = 0; k < parts->n && vec; k++)
        vec = parts->ch[k] % 4 == 0 && (uintptr_t)parts->ptr[k] % align == 0;
    clamp_act ca;
    const int clamp = act && clamp_act_of(fn, p, &ca);
    if (!clamp) ca = clamp_act{1.0f, 0.0f, 0.0f, 0.0f, 0};
    const uint32_t cv = (uint32_t)(vec ? C / 4 : C), nv = (uint32_t)(vec ? n / 4 : n);
    CUK_DISPATCH_FP(t, T, {
        if (vec && clamp)
            cuk_launch(k_batchnorm_cat<T, 4, true>, grid_for(nv), kThreads, 0, stream, nv, cv, eps,
                       *parts, (const T *)scale, (const T *)bias, (const T *)mean, (const T *)var,
                       (T *)y, act, fn, p, ca);
        else if (vec)
            cuk_launch(k_batchnorm_cat<T, 4, false>, grid_for(nv), kThreads, 0, stream, nv, cv, eps,
                       *parts, (const T *)scale, (const T *)bias, (const T *)mean, (const T *)var,
                       (T *)y, act, fn, p, ca);
        else if (clamp)
            cuk_launch(k_batchnorm_cat<T, 1, true>, grid_for(nv), kThreads, 0, stream, nv, cv, eps,
                       *parts, (const T *)scale, (const T *)bias, (const T *)mean, (const T *)var,
                       (T *)y, act, fn, p, ca);
        else
            cuk_launch(k_batchnorm_cat<T, 1, false>, grid_for(nv), kThreads, 0, stream, nv, cv, eps,
                       *parts, (const T *)scale, (const T *)bias, (const T *)mean, (const T *)var,
                       (T *)y, act, fn, p, ca);
    });
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_batchnorm(cuk_dtype t, int64_t n, int64_t C, int64_t cstride,
                                     float eps, const void *x, const void *scale,
                                     const void *bias, const void *mean, const void *var, void *y,
                                     int act, cuk_ufn fn, const cuk_ew_params *prm,
                                     cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    if (C <= 0 || cstride <= 0 || (act && !prm)) return cudaErrorInvalidValue;
    const cuk_ew_params none = {0.0f, 0.0f, 0.0f, 0, 0};
    const cuk_ew_params &p = act ? *prm : none;
    const size_t align = t == CUK_DT_F32 ? 16 : 8;
    const void *ptrs[6] = {x, scale, bias, mean, var, y};
    int vec = cstride == 1 && C % 4 == 0 && n % 4 == 0 && n / 4 <= kMax32;
    for (int k = 0; k < 6 && vec; k++)
        vec = (uintptr_t)ptrs[k] % align == 0;
    clamp_act ca;
    const int clamp = act && clamp_act_of(fn, p, &ca);
    if (!clamp) ca = clamp_act{1.0f, 0.0f, 0.0f, 0.0f, 0};
    CUK_DISPATCH_FP(t, T, {
        if (vec && clamp)
            cuk_launch(k_batchnorm4<T, true>, grid_for(n / 4), kThreads, 0, stream,
                       (uint32_t)(n / 4), (uint32_t)(C / 4), eps, (const T *)x, (const T *)scale,
                       (const T *)bias, (const T *)mean, (const T *)var, (T *)y, act, fn, p, ca);
        else if (vec)
            cuk_launch(k_batchnorm4<T, false>, grid_for(n / 4), kThreads, 0, stream,
                       (uint32_t)(n / 4), (uint32_t)(C / 4), eps, (const T *)x, (const T *)scale,
                       (const T *)bias, (const T *)mean, (const T *)var, (T *)y, act, fn, p, ca);
        else if (n <= kMax32)
            cuk_launch(k_batchnorm<T, uint32_t>, grid_for(n), kThreads, 0, stream, (uint32_t)n,
                       (uint32_t)C, (uint32_t)cstride, eps, (const T *)x, (const T *)scale,
                       (const T *)bias, (const T *)mean, (const T *)var, (T *)y, act, fn, p);
        else
            cuk_launch(k_batchnorm<T, int64_t>, grid_for(n), kThreads, 0, stream, n, C, cstride,
                       eps, (const T *)x, (const T *)scale, (const T *)bias, (const T *)mean,
                       (const T *)var, (T *)y, act, fn, p);
    });
    return cudaGetLastError();
}
