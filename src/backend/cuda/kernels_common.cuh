/*
 * kernels_common.cuh - what the generic kernel families (kernels_ew.cu,
 * kernels_reduce.cu, kernels_index.cu) share: the storage types and how a
 * value is computed with, launch sizes, index descriptors with a 32-bit
 * variant, group (thread, warp, block) reductions and type dispatch.
 *
 * Computation types: f32, f16 and bf16 compute in float; int8, uint8,
 * int32 and bool in int32; int64 in int64.  Integer arithmetic wraps (it
 * goes through the unsigned type), so narrowing a result to its storage
 * type is two's complement truncation, as numpy does.
 */
#ifndef OS_CUDA_KERNELS_COMMON_CUH
#define OS_CUDA_KERNELS_COMMON_CUH

#include <math.h>
#include <stdint.h>

#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

#include "backend/cuda/kernels.h"
#include "backend/cuda/kernels_launch.cuh"

#if __cplusplus < 201703L
#error "the generic kernels need C++17 (nvcc's default since CUDA 11)"
#endif

namespace cuk
{

/* bool storage: one byte, 0 or 1, and a type of its own for dispatch. */
struct boolean {
    uint8_t v;
};

template <typename A, typename B> struct same_t {
    static constexpr bool value = false;
};
template <typename A> struct same_t<A, A> {
    static constexpr bool value = true;
};

/* Storage type traits: C is what the value is computed with. */
template <typename T> struct tr;
template <> struct tr<float> {
    typedef float C;
    static constexpr bool fp = true, is_bool = false;
    static constexpr int bits = 32;
};
template <> struct tr<__half> {
    typedef float C;
    static constexpr bool fp = true, is_bool = false;
    static constexpr int bits = 16;
};
template <> struct tr<__nv_bfloat16> {
    typedef float C;
    static constexpr bool fp = true, is_bool = false;
    static constexpr int bits = 16;
};
template <> struct tr<int8_t> {
    typedef int32_t C;
    static constexpr bool fp = false, is_bool = false;
    static constexpr int bits = 8;
};
template <> struct tr<uint8_t> {
    typedef int32_t C;
    static constexpr bool fp = false, is_bool = false;
    static constexpr int bits = 8;
};
template <> struct tr<int32_t> {
    typedef int32_t C;
    static constexpr bool fp = false, is_bool = false;
    static constexpr int bits = 32;
};
template <> struct tr<int64_t> {
    typedef int64_t C;
    static constexpr bool fp = false, is_bool = false;
    static constexpr int bits = 64;
};
template <> struct tr<boolean> {
    typedef int32_t C;
    static constexpr bool fp = false, is_bool = true;
    static constexpr int bits = 8;
};

/* Storage -> computation type. */
template <typename T> __device__ __forceinline__ typename tr<T>::C load(T v)
{
    return (typename tr<T>::C)v;
}
template <> __device__ __forceinline__ float load<__half>(__half v)
{
    return __half2float(v);
}
template <> __device__ __forceinline__ float load<__nv_bfloat16>(__nv_bfloat16 v)
{
    return __bfloat162float(v);
}
template <> __device__ __forceinline__ int32_t load<boolean>(boolean v)
{
    return v.v != 0;
}

/* Computation -> storage type: floats round to nearest even, integers
 * truncate (two's complement), bool is "not zero". */
template <typename T> __device__ __forceinline__ T store(typename tr<T>::C v)
{
    typedef typename tr<T>::C C;
    if constexpr (same_t<C, T>::value)
        return v;
    else
        return (T)(typename std::conditional<sizeof(C) == 8, uint64_t, uint32_t>::type)v;
}
template <> __device__ __forceinline__ __half store<__half>(float v)
{
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 store<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ boolean store<boolean>(int32_t v)
{
    boolean b;
    b.v = v != 0;
    return b;
}

/* Float value in any storage type (f32 compute). */
template <typename T> __device__ __forceinline__ float to_float(T v)
{
    return (float)load<T>(v);
}
template <typename T> __device__ __forceinline__ T from_float(float v)
{
    if constexpr (tr<T>::fp) {
        return store<T>(v);
    } else if constexpr (tr<T>::is_bool) {
        boolean b;
        b.v = v != 0.0f;
        return b;
    } else {
        /* truncation toward zero; saturates at int64's range, NaN is 0 */
        long long t = __float2ll_rz(v);
        return store<T>((typename tr<T>::C)t);
    }
}

/* Wrapping integer arithmetic (no signed overflow). */
template <typename C> struct uns {
    typedef typename std::conditional<sizeof(C) == 8, uint64_t, uint32_t>::type type;
};
template <typename C> __device__ __forceinline__ C wadd(C a, C b)
{
    return (C)((typename uns<C>::type)a + (typename uns<C>::type)b);
}
template <typename C> __device__ __forceinline__ C wsub(C a, C b)
{
    return (C)((typename uns<C>::type)a - (typename uns<C>::type)b);
}
template <typename C> __device__ __forceinline__ C wmul(C a, C b)
{
    return (C)((typename uns<C>::type)a * (typename uns<C>::type)b);
}

/* A float as an unsigned key that orders like the value (NaN above +inf). */
__device__ __forceinline__ uint64_t order_key_f(float v)
{
    if (v != v) return 0xffffffffffffffffull; /* every NaN, above +inf */
    uint32_t b = __float_as_uint(v);
    if (b == 0x80000000u) b = 0; /* -0 orders as +0 */
    b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    return (uint64_t)b << 32 | 0xffffffffull; /* below the NaN key */
}
template <typename T> __device__ __forceinline__ uint64_t order_key(T v)
{
    if constexpr (tr<T>::fp)
        return order_key_f(load<T>(v));
    else
        return (uint64_t)(int64_t)load<T>(v) ^ 0x8000000000000000ull;
}

/* ---- launch sizes --------------------------------------------------- */

const int kThreads = 256;
const int64_t kMaxBlocks = 65536;

inline unsigned grid_for(int64_t n, int per_block = kThreads)
{
    int64_t b = (n + per_block - 1) / per_block;
    return (unsigned)(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

/* The current device's multiprocessors, queried once (132, an H100's, when
 * the query fails): what launches sized to fill the GPU count blocks by. */
inline int sm_count()
{
    static int sms = 0;
    if (sms == 0) {
        int dev = 0, n = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
            n <= 0)
            n = 132;
        sms = n;
    }
    return sms;
}

#define CUK_GRID_STRIDE(i, n)                                                                      \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                     \
         i += (int64_t)gridDim.x * blockDim.x)

/* ---- index descriptors ---------------------------------------------- */

/* cuk_nd in the index type I (int32_t when every offset fits). */
template <typename I> struct ndx {
    int ndim;
    I shape[CUK_MAX_DIMS];
    I stride[CUK_ND_OPS][CUK_MAX_DIMS];
    I offset[CUK_ND_OPS];
};

/* Most elements a 32-bit grid-stride loop may cover without its index
 * overflowing on the last step. */
const int64_t kMax32 = (int64_t)INT32_MAX - kMaxBlocks * kThreads;

inline int64_t nd_count(const cuk_nd *d)
{
    int64_t n = 1;
    for (int i = 0; i < d->ndim; i++)
        n *= d->shape[i];
    return n;
}

/* 1 when the element count and every offset of the first nops operands
 * fit the 32-bit path. */
inline int nd_fits32(const cuk_nd *d, int nops)
{
    if (nd_count(d) > kMax32) return 0;
    for (int k = 0; k < nops; k++) {
        int64_t lo = d->offset[k], hi = d->offset[k];
        for (int j = 0; j < d->ndim; j++) {
            int64_t span = (d->shape[j] - 1) * d->stride[k][j];
            if (span > 0)
                hi += span;
            else
                lo += span;
        }
        if (lo < INT32_MIN || hi > INT32_MAX) return 0;
    }
    return 1;
}
template <typename I> ndx<I> nd_as(const cuk_nd *d)
{
    ndx<I> r;
    r.ndim = d->ndim;
    for (int j = 0; j < CUK_MAX_DIMS; j++) {
        r.shape[j] = j < d->ndim ? (I)d->shape[j] : 1;
        for (int k = 0; k < CUK_ND_OPS; k++)
            r.stride[k][j] = j < d->ndim ? (I)d->stride[k][j] : 0;
    }
    for (int k = 0; k < CUK_ND_OPS; k++)
        r.offset[k] = (I)d->offset[k];
    return r;
}

/* Element offsets of the first NOPS operands at linear index i. */
template <int NOPS, typename I>
__device__ __forceinline__ void nd_at(const ndx<I> &d, I i, I *off)
{
#pragma unroll
    for (int k = 0; k < NOPS; k++)
        off[k] = d.offset[k];
    for (int j = d.ndim - 1; j >= 0; j--) {
        I q = i / d.shape[j];
        I c = i - q * d.shape[j];
        i = q;
#pragma unroll
        for (int k = 0; k < NOPS; k++)
            off[k] += c * d.stride[k][j];
    }
}

/* Coordinates of linear index i over shape (row-major, rank n). */
__device__ __forceinline__ void coords_of(int64_t i, int n, const int64_t *shape, int64_t *c)
{
    for (int j = n - 1; j >= 0; j--) {
        int64_t q = i / shape[j];
        c[j] = i - q * shape[j];
        i = q;
    }
}

/* 4 elements in one aligned access. */
template <typename T> struct alignas(4 * sizeof(T)) vec4 {
    T v[4];
};

/* 16 bytes of elements (8 halves, 4 floats) in one aligned access. */
template <typename T> struct alignas(16) vec16 {
    T v[16 / sizeof(T)];
};

/* ---- group reductions ----------------------------------------------- */

/* Reduces v over a group of G threads (1, 32, or the whole block when G
 * is blockDim.x, a multiple of 32), with op(a, b); every thread of the
 * group gets the result.  sh: one T per warp of the block. */
template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T v, Op op)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T *sh)
{
    v = warp_reduce(v, op);
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    if (w == 0) {
        T u = sh[lane < nw ? lane : 0];
        u = warp_reduce(u, op);
        if (lane == 0) sh[0] = u;
    }
    __syncthreads();
    return sh[0];
}

/* ---- unary functions ------------------------------------------------ */

__device__ __forceinline__ float softplusf(float x)
{
    /* log(1 + e^x) without overflow for large x */
    return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}

/* A unary function of float data (the element-wise kernels', and the
 * activation epilogues of other kernels). */
__device__ __forceinline__ float ufloat(cuk_ufn fn, float x, const cuk_ew_params &p)
{
    switch (fn) {
    case CUK_U_ABS:
        return fabsf(x);
    case CUK_U_NEG:
        return -x;
    case CUK_U_EXP:
        return expf(x);
    case CUK_U_LOG:
        return logf(x);
    case CUK_U_RECIPROCAL:
        return 1.0f / x;
    case CUK_U_FLOOR:
        return floorf(x);
    case CUK_U_CEIL:
        return ceilf(x);
    case CUK_U_ROUND:
        return rintf(x); /* the default rounding mode: half to even */
    case CUK_U_SIGN:
        return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x); /* 0 and NaN as they are */
    case CUK_U_SIN:
        return sinf(x);
    case CUK_U_COS:
        return cosf(x);
    case CUK_U_TAN:
        return tanf(x);
    case CUK_U_ASIN:
        return asinf(x);
    case CUK_U_ACOS:
        return acosf(x);
    case CUK_U_ATAN:
        return atanf(x);
    case CUK_U_SINH:
        return sinhf(x);
    case CUK_U_COSH:
        return coshf(x);
    case CUK_U_ASINH:
        return asinhf(x);
    case CUK_U_ACOSH:
        return acoshf(x);
    case CUK_U_ATANH:
        return atanhf(x);
    case CUK_U_LEAKY_RELU:
        return x >= 0.0f ? x : p.alpha * x;
    case CUK_U_ELU:
        return x >= 0.0f ? x : p.alpha * expm1f(x);
    case CUK_U_SELU:
        return x > 0.0f ? p.gamma * x : p.gamma * p.alpha * expm1f(x);
    case CUK_U_CELU:
        return fmaxf(x, 0.0f) + fminf(0.0f, p.alpha * expm1f(x / p.alpha));
    case CUK_U_THRESHOLDED_RELU:
        return x > p.alpha ? x : 0.0f;
    case CUK_U_SOFTPLUS:
        return softplusf(x);
    case CUK_U_SOFTSIGN:
        return x / (1.0f + fabsf(x));
    case CUK_U_MISH:
        return x * tanhf(softplusf(x));
    case CUK_U_SHRINK: /* bias = alpha, lambd = beta */
        return x < -p.beta ? x + p.alpha : (x > p.beta ? x - p.alpha : 0.0f);
    case CUK_U_SWISH:
        return x / (1.0f + expf(-p.alpha * x));
    case CUK_U_RELU:
        return x > 0.0f ? x : (x == x ? 0.0f : x);
    case CUK_U_CLIP:
        return fminf(fmaxf(x, p.alpha), p.beta);
    case CUK_U_SIGMOID:
        return 1.0f / (1.0f + expf(-x));
    case CUK_U_TANH:
        return tanhf(x);
    case CUK_U_GELU_ERF:
        return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case CUK_U_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case CUK_U_ERF:
        return erff(x);
    case CUK_U_HARDSIGMOID:
        return fminf(fmaxf(p.alpha * x + p.beta, 0.0f), 1.0f);
    case CUK_U_HARDSWISH:
        return x * fminf(fmaxf(x * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f);
    case CUK_U_SQRT:
        return sqrtf(x);
    default:
        return x;
    }
}

/* Four neighbouring values of T as a float4, and back: 16-byte accesses in
 * fp32, 8-byte ones in fp16 and bf16 (the vector kernels' I/O). */
template <typename T> struct f4;
template <> struct f4<float> {
    static __device__ __forceinline__ float4 ld(const float *p)
    {
        return *reinterpret_cast<const float4 *>(p);
    }
    static __device__ __forceinline__ void st(float *p, float4 v)
    {
        *reinterpret_cast<float4 *>(p) = v;
    }
};
template <> struct f4<__half> {
    static __device__ __forceinline__ float4 ld(const __half *p)
    {
        const uint2 u = *reinterpret_cast<const uint2 *>(p);
        const float2 a = __half22float2(*reinterpret_cast<const __half2 *>(&u.x));
        const float2 b = __half22float2(*reinterpret_cast<const __half2 *>(&u.y));
        return make_float4(a.x, a.y, b.x, b.y);
    }
    static __device__ __forceinline__ void st(__half *p, float4 v)
    {
        const __half2 a = __floats2half2_rn(v.x, v.y), b = __floats2half2_rn(v.z, v.w);
        uint2 u;
        u.x = *reinterpret_cast<const uint32_t *>(&a);
        u.y = *reinterpret_cast<const uint32_t *>(&b);
        *reinterpret_cast<uint2 *>(p) = u;
    }
};
template <> struct f4<__nv_bfloat16> {
    static __device__ __forceinline__ float4 ld(const __nv_bfloat16 *p)
    {
        const uint2 u = *reinterpret_cast<const uint2 *>(p);
        const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&u.x));
        const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&u.y));
        return make_float4(a.x, a.y, b.x, b.y);
    }
    static __device__ __forceinline__ void st(__nv_bfloat16 *p, float4 v)
    {
        const __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y);
        const __nv_bfloat162 b = __floats2bfloat162_rn(v.z, v.w);
        uint2 u;
        u.x = *reinterpret_cast<const uint32_t *>(&a);
        u.y = *reinterpret_cast<const uint32_t *>(&b);
        *reinterpret_cast<uint2 *>(p) = u;
    }
};

/* An activation in its clamp form, computed inline without ufloat's
 * switch: t = min(max(s * x + o, lo), hi), then x * t when mul
 * (HardSwish), else t (Relu, Clip, HardSigmoid). */
struct clamp_act {
    float s, o, lo, hi;
    int mul;
};

/* 1 with *out the clamp form of fn, 0 for an activation without one. */
inline int clamp_act_of(cuk_ufn fn, const cuk_ew_params &p, clamp_act *out)
{
    clamp_act a = {1.0f, 0.0f, -INFINITY, INFINITY, 0};
    switch (fn) {
    case CUK_U_RELU:
        a.lo = 0.0f;
        break;
    case CUK_U_CLIP:
        a.lo = p.alpha;
        a.hi = p.beta;
        break;
    case CUK_U_HARDSIGMOID:
        a.s = p.alpha;
        a.o = p.beta;
        a.lo = 0.0f;
        a.hi = 1.0f;
        break;
    case CUK_U_HARDSWISH:
        a.s = 1.0f / 6.0f;
        a.o = 0.5f;
        a.lo = 0.0f;
        a.hi = 1.0f;
        a.mul = 1;
        break;
    default:
        return 0;
    }
    if (out) *out = a;
    return 1;
}

__device__ __forceinline__ float clamp_apply(const clamp_act &a, float x)
{
    const float t = fminf(fmaxf(fmaf(a.s, x, a.o), a.lo), a.hi);
    return a.mul ? x * t : t;
}

} /* namespace cuk */

/* ---- dispatch ------------------------------------------------------- */

/* Runs the statements with T the storage type of dt; unknown types return
 * cudaErrorInvalidValue from the enclosing function. */
#define CUK_DISPATCH_DT(dt, T, ...)                                                                \
    switch (dt) {                                                                                  \
    case CUK_DT_F32: {                                                                             \
        typedef float T;                                                                           \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case CUK_DT_F16: {                                                                             \
        typedef __half T;                                                                          \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case CUK_DT_BF16: {                                                                            \
        typedef __nv_bfloat16 T;                                                                   \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case CUK_DT_I8: {                                                                              \
        typedef int8_t T;                                                                          \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case CUK_DT_I32: {                                                                             \
        typedef int32_t T;                                                                         \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case CUK_DT_I64: {                                                                             \
        typedef int64_t T;                                                                         \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case CUK_DT_U8: {                                                                              \
        typedef uint8_t T;                                                                         \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case CUK_DT_BOOL: {                                                                            \
        typedef cuk::boolean T;                                                                    \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    default:                                                                                       \
        return cudaErrorInvalidValue;                                                              \
    }

/* The float storage types only. */
#define CUK_DISPATCH_FP(dt, T, ...)                                                                \
    switch (dt) {                                                                                  \
    case CUK_DT_F32: {                                                                             \
        typedef float T;                                                                           \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case CUK_DT_F16: {                                                                             \
        typedef __half T;                                                                          \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case CUK_DT_BF16: {                                                                            \
        typedef __nv_bfloat16 T;                                                                   \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    default:                                                                                       \
        return cudaErrorInvalidValue;                                                              \
    }

/* Element size only (data movement): E is an unsigned type of that size. */
#define CUK_DISPATCH_ELEM(elem, E, ...)                                                            \
    switch (elem) {                                                                                \
    case 1: {                                                                                      \
        typedef uint8_t E;                                                                         \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case 2: {                                                                                      \
        typedef uint16_t E;                                                                        \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case 4: {                                                                                      \
        typedef uint32_t E;                                                                        \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case 8: {                                                                                      \
        typedef uint64_t E;                                                                        \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    default:                                                                                       \
        return cudaErrorInvalidValue;                                                              \
    }

/* Index tensors: int32 or int64. */
#define CUK_DISPATCH_IDX(is32, I, ...)                                                             \
    if (is32) {                                                                                    \
        typedef int32_t I;                                                                         \
        __VA_ARGS__;                                                                               \
    } else {                                                                                       \
        typedef int64_t I;                                                                         \
        __VA_ARGS__;                                                                               \
    }

#endif /* OS_CUDA_KERNELS_COMMON_CUH */
