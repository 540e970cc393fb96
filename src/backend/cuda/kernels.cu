/*
 * kernels.cu - the CUDA backend's own kernels (see kernels.h).
 *
 * Plain grid-stride kernels that favour being obviously right over being
 * the fastest: element-wise maths in f32 whatever the storage type, one
 * thread per output element for data movement, one block (or warp) per row
 * for reductions.  Concat and Split, which DenseNet runs after every layer,
 * are the exception: wide row copies at memory bandwidth.  The host side
 * keeps the number of dimensions small by merging contiguous ones before
 * calling.
 */
#include <stdint.h>
#include <string.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

#include "backend/cuda/kernels.h"
#include "backend/cuda/kernels_launch.cuh"

namespace
{

const int kThreads = 256;
const int64_t kMaxBlocks = 65536;

int blocks_for(int64_t n)
{
    int64_t b = (n + kThreads - 1) / kThreads;
    return (int)(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

template <typename T> __device__ __forceinline__ float ld(T v);
template <> __device__ __forceinline__ float ld<float>(float v)
{
    return v;
}
template <> __device__ __forceinline__ float ld<__half>(__half v)
{
    return __half2float(v);
}
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(__nv_bfloat16 v)
{
    return __bfloat162float(v);
}

template <> __device__ __forceinline__ float ld<int8_t>(int8_t v)
{
    return (float)v;
}
template <> __device__ __forceinline__ float ld<uint8_t>(uint8_t v)
{
    return (float)v;
}

template <typename T> __device__ __forceinline__ T st(float v);
template <> __device__ __forceinline__ float st<float>(float v)
{
    return v;
}
/* The 8-bit integers get back values they gave (MaxPool), or for a window
 * with no tap (-inf) their lowest value. */
template <> __device__ __forceinline__ int8_t st<int8_t>(float v)
{
    return (int8_t)fminf(fmaxf(v, -128.0f), 127.0f);
}
template <> __device__ __forceinline__ uint8_t st<uint8_t>(float v)
{
    return (uint8_t)fminf(fmaxf(v, 0.0f), 255.0f);
}
template <> __device__ __forceinline__ __half st<__half>(float v)
{
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 st<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

#define GRID_STRIDE(i, n)                                                                          \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

/* Offsets of the first nops operands of nd at linear index i. */
template <int NOPS>
__device__ __forceinline__ void nd_offsets(const cuk_nd &d, int64_t i, int64_t *off)
{
    for (int k = 0; k < NOPS; k++)
        off[k] = d.offset[k];
    for (int j = d.ndim - 1; j >= 0; j--) {
        int64_t q = i / d.shape[j];
        int64_t r = i - q * d.shape[j];
        i = q;
        for (int k = 0; k < NOPS; k++)
            off[k] += r * d.stride[k][j];
    }
}

/* Sums v over a block of a multiple of 32 threads; every thread gets it. */
__device__ float block_sum(float v, float *sh)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < nw ? sh[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) sh[0] = v;
    }
    __syncthreads();
    return sh[0];
}

__device__ float block_max(float v, float *sh)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < nw ? sh[lane] : -CUDART_INF_F;
        for (int o = 16; o > 0; o >>= 1)
            v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (lane == 0) sh[0] = v;
    }
    __syncthreads();
    return sh[0];
}

/* ---- element-wise ---------------------------------------------------- */

/* ---- data movement --------------------------------------------------- */

/* Concat and Split move rows: `rows` rows of each piece, `row` units long,
 * from src (rows `spitch` apart) to dst (rows `dpitch` apart).  A unit is
 * the widest of 16, 8, 4, 2 or 1 bytes that every pointer, length and pitch
 * of the launch is a multiple of, so the copy is 16-byte loads and stores
 * whenever the tensors allow.  The launch's pieces are cut into tiles of
 * kThreads * kRowsUnroll units; a block finds its piece from the first tile
 * of each (once per tile, not per element), so large and small pieces share
 * the grid evenly. */
const int kRowsUnroll = 4;
const int kRowsTile = kThreads * kRowsUnroll;
const int kMaxPieces = 64; /* per launch: the argument stays under 4 KiB */

struct rows_piece {
    const char *src;
    char *dst;
    int64_t row, spitch, dpitch; /* in units of the launch */
};

struct rows_args {
    rows_piece p[kMaxPieces];
    int64_t first[kMaxPieces + 1]; /* first tile of each piece; first[n] = all tiles */
    int64_t rows;
    int n;
};

/* I is the index type: 32-bit when every offset of the launch fits. */
template <typename U, typename I> __global__ void k_copy_rows(const __grid_constant__ rows_args a)
{
    cuk_kernel_enter();
    const int64_t tiles = a.first[a.n];
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        int k = 0, hi = a.n - 1;
        while (k < hi) {
            int mid = (k + hi + 1) / 2;
            if (a.first[mid] <= t)
                k = mid;
            else
                hi = mid - 1;
        }
        const rows_piece &p = a.p[k];
        const U *src = (const U *)p.src;
        U *dst = (U *)p.dst;
        const I row = (I)p.row, sp = (I)p.spitch, dp = (I)p.dpitch, n = (I)(p.row * a.rows);
        const I j0 = (I)((t - a.first[k]) * kRowsTile) + (I)threadIdx.x;
        U v[kRowsUnroll];
        I at[kRowsUnroll];
#pragma unroll
        for (int u = 0; u < kRowsUnroll; u++) {
            I j = j0 + (I)(u * kThreads);
            at[u] = 0;
            if (j < n) {
                I r = j / row, c = j - r * row;
                v[u] = src[r * sp + c];
                at[u] = r * dp + c;
            }
        }
#pragma unroll
        for (int u = 0; u < kRowsUnroll; u++)
            if (j0 + (I)(u * kThreads) < n) dst[at[u]] = v[u];
    }
}

/* Element i of splitmix64's stream from state (os_rng_next's i + 1-th). */
__device__ __forceinline__ uint64_t splitmix_at(uint64_t state, int64_t i)
{
    uint64_t z = state + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* os_rng_sym: exact in double, rounded once to float. */
__device__ __forceinline__ float splitmix_sym(uint64_t z)
{
    return (float)((double)(z >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

template <cuk_fill_kind K> __global__ void k_fill_random(int64_t n, uint64_t state, void *y)
{
    cuk_kernel_enter();
    GRID_STRIDE(i, n)
    {
        uint64_t z = splitmix_at(state, i);
        if (K == CUK_FILL_F32)
            ((float *)y)[i] = splitmix_sym(z);
        else if (K == CUK_FILL_F16)
            ((__half *)y)[i] = __float2half_rn(splitmix_sym(z));
        else if (K == CUK_FILL_BF16)
            ((__nv_bfloat16 *)y)[i] = __float2bfloat16_rn(splitmix_sym(z));
        else if (K == CUK_FILL_U8)
            ((uint8_t *)y)[i] = (uint8_t)(z & 0xff);
        else if (K == CUK_FILL_I32)
            ((int32_t *)y)[i] = (int32_t)(z % 7);
        else if (K == CUK_FILL_BOOL)
            ((uint8_t *)y)[i] = (uint8_t)(z & 1);
        else
            ((int64_t *)y)[i] = (int64_t)(z % 7);
    }
}

template <typename E> __global__ void k_pad(cuk_pad_desc d, int64_t n, const E *x, E *y)
{
    cuk_kernel_enter();
    GRID_STRIDE(i, n)
    {
        int64_t rest = i, off = 0;
        bool inside = true;
        for (int j = d.ndim - 1; j >= 0; j--) {
            int64_t q = rest / d.out_shape[j];
            int64_t c = rest - q * d.out_shape[j] - d.begin[j];
            int64_t len = d.in_shape[j];
            rest = q;
            if (c < 0 || c >= len) {
                if (d.mode == CUK_PAD_CONSTANT || len == 0) {
                    inside = false;
                    break;
                }
                if (d.mode == CUK_PAD_EDGE) {
                    c = c < 0 ? 0 : len - 1;
                } else if (d.mode == CUK_PAD_WRAP) {
                    c %= len;
                    if (c < 0) c += len;
                } else if (len == 1) {
                    c = 0;
                } else {
                    int64_t period = 2 * (len - 1);
                    c %= period;
                    if (c < 0) c += period;
                    if (c >= len) c = period - c;
                }
            }
            off += c * d.in_stride[j];
        }
        y[i] = inside ? x[off] : (E)d.value;
    }
}

template <typename E, typename I>
__global__ void k_gather(int64_t outer, int64_t axis, int64_t n_idx, int64_t inner, const I *idx,
                         const E *x, E *y)
{
    cuk_kernel_enter();
    int64_t n = outer * n_idx * inner;
    GRID_STRIDE(i, n)
    {
        int64_t r = i % inner, t = i / inner;
        int64_t j = t % n_idx, o = t / n_idx;
        int64_t k = (int64_t)idx[j];
        if (k < 0) k += axis;
        k = k < 0 ? 0 : (k >= axis ? axis - 1 : k);
        y[i] = x[(o * axis + k) * inner + r];
    }
}

/* ---- per-channel ----------------------------------------------------- */

/* The bias kernels take the Relu a convolution's plan folds into them as a
 * template flag, so the epilogue after a convolution is one pass over y. */
template <typename T, bool RELU> __device__ __forceinline__ T bias_out(T y, float b)
{
    float v = ld<T>(y) + b;
    return st<T>(RELU ? fmaxf(v, 0.0f) : v);
}

template <typename T, bool RELU>
__global__ void k_bias_add(int64_t n, int64_t C, int64_t cstride, const T *bias, T *y)
{
    cuk_kernel_enter();
    GRID_STRIDE(i, n)
    {
        int64_t c = (i / cstride) % C;
        y[i] = bias_out<T, RELU>(y[i], ld<T>(bias[c]));
    }
}

/* Bias over NCHW planes: one channel per plane, so no division per element. */
template <typename T, bool RELU>
__global__ void k_bias_add_planes(unsigned planes, unsigned C, unsigned hw, const T *bias, T *y)
{
    cuk_kernel_enter();
    for (unsigned p = blockIdx.y; p < planes; p += gridDim.y) {
        float b = ld<T>(bias[p % C]);
        T *row = y + (size_t)p * hw;
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < hw;
             i += blockDim.x * gridDim.x)
            row[i] = bias_out<T, RELU>(row[i], b);
    }
}

/* Float NCHW planes whose size is a multiple of 4: 16-byte loads and stores
 * (the planes of a 16-byte aligned tensor then stay aligned). */
template <bool RELU>
__global__ void k_bias_add_planes4(unsigned planes, unsigned C, unsigned hw4, const float *bias,
                                   float4 *y)
{
    cuk_kernel_enter();
    for (unsigned p = blockIdx.y; p < planes; p += gridDim.y) {
        float b = bias[p % C];
        float4 *row = y + (size_t)p * hw4;
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < hw4;
             i += blockDim.x * gridDim.x) {
            float4 v = row[i];
            v.x += b;
            v.y += b;
            v.z += b;
            v.w += b;
            if (RELU) {
                v.x = fmaxf(v.x, 0.0f);
                v.y = fmaxf(v.y, 0.0f);
                v.z = fmaxf(v.z, 0.0f);
                v.w = fmaxf(v.w, 0.0f);
            }
            row[i] = v;
        }
    }
}

/* Bias with channels innermost (NHWC): 32-bit index arithmetic. */
template <typename T, bool RELU>
__global__ void k_bias_add_inner(unsigned n, unsigned C, const T *bias, T *y)
{
    cuk_kernel_enter();
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = bias_out<T, RELU>(y[i], ld<T>(bias[i % C]));
}

/* Batch norm in training form, one block per channel (grid-stride over
 * channels): element j of channel c, j = b * S + s, is at (b * C + c) * S + s
 * (NCHW) or (b * S + s) * C + c (channels last). */
__device__ __forceinline__ int64_t bn_at(int64_t j, int64_t c, int64_t C, int64_t S, int nhwc)
{
    return nhwc ? j * C + c : (j / S * C + c) * S + j % S;
}

template <typename T>
__global__ void k_bn_train(int64_t N, int64_t C, int64_t S, int nhwc, float eps, const T *x,
                           const T *scale, const T *bias, T *y, T *mean_out, T *inv_out)
{
    cuk_kernel_enter();
    __shared__ float sh[32];
    const int64_t m = N * S;
    for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
        float s = 0.0f;
        for (int64_t j = threadIdx.x; j < m; j += blockDim.x)
            s += ld<T>(x[bn_at(j, c, C, S, nhwc)]);
        const float mean = block_sum(s, sh) / (float)m;
        float v = 0.0f;
        for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
            float d = ld<T>(x[bn_at(j, c, C, S, nhwc)]) - mean;
            v += d * d;
        }
        const float inv = rsqrtf(block_sum(v, sh) / (float)m + eps);
        const float k = inv * ld<T>(scale[c]), b = ld<T>(bias[c]);
        for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
            int64_t i = bn_at(j, c, C, S, nhwc);
            y[i] = st<T>((ld<T>(x[i]) - mean) * k + b);
        }
        if (threadIdx.x == 0) {
            mean_out[c] = st<T>(mean);
            inv_out[c] = st<T>(inv);
        }
    }
}

template <typename T>
__global__ void k_bn_grad(int64_t N, int64_t C, int64_t S, int nhwc, const T *dy, const T *x,
                          const T *scale, const T *mean_in, const T *inv_in, T *dx, T *dscale,
                          T *dbias)
{
    cuk_kernel_enter();
    __shared__ float sh[32];
    const int64_t m = N * S;
    for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
        const float mean = ld<T>(mean_in[c]), inv = ld<T>(inv_in[c]);
        float sb = 0.0f, ss = 0.0f;
        for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
            int64_t i = bn_at(j, c, C, S, nhwc);
            float g = ld<T>(dy[i]);
            sb += g;
            ss += g * (ld<T>(x[i]) - mean) * inv;
        }
        const float db = block_sum(sb, sh), ds = block_sum(ss, sh);
        const float k = ld<T>(scale[c]) * inv, fm = (float)m;
        for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
            int64_t i = bn_at(j, c, C, S, nhwc);
            float xhat = (ld<T>(x[i]) - mean) * inv;
            dx[i] = st<T>(k * (ld<T>(dy[i]) - db / fm - xhat * ds / fm));
        }
        if (threadIdx.x == 0) {
            dscale[c] = st<T>(ds);
            dbias[c] = st<T>(db);
        }
    }
}

/* ---- normalisation and reductions ------------------------------------ */

template <typename T>
__global__ void k_layernorm(int64_t rows, int64_t cols, float eps, const T *x, const T *scale,
                            const T *bias, T *y)
{
    cuk_kernel_enter();
    __shared__ float sh[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * cols;
        T *yr = y + r * cols;
        float s = 0.0f;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
            s += ld<T>(xr[j]);
        float mean = block_sum(s, sh) / (float)cols;
        float v = 0.0f;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            float d = ld<T>(xr[j]) - mean;
            v += d * d;
        }
        float rstd = rsqrtf(block_sum(v, sh) / (float)cols + eps);
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            float o = (ld<T>(xr[j]) - mean) * rstd * ld<T>(scale[j]);
            if (bias) o += ld<T>(bias[j]);
            yr[j] = st<T>(o);
        }
    }
}

/* Short rows (at most 32 * V elements): a warp a row, its values held in
 * registers between the passes (one read of x), the sums by shuffles; a
 * 256-thread block per row of 96 would leave most of its threads idle and
 * wait at two barriers. */
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

template <typename T, int V>
__global__ void k_layernorm_warp(int64_t rows, int cols, float eps, const T *x, const T *scale,
                                 const T *bias, T *y)
{
    cuk_kernel_enter();
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; r < rows;
         r += warps) {
        const T *xr = x + r * cols;
        float v[V];
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int j = lane + 32 * k;
            v[k] = j < cols ? ld<T>(xr[j]) : 0.0f;
            s += v[k];
        }
        const float mean = warp_sum(s) / (float)cols;
        float q = 0.0f;
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int j = lane + 32 * k;
            const float d = j < cols ? v[k] - mean : 0.0f;
            q += d * d;
        }
        const float rstd = rsqrtf(warp_sum(q) / (float)cols + eps);
        T *yr = y + r * cols;
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int j = lane + 32 * k;
            if (j >= cols) break;
            float o = (v[k] - mean) * rstd * ld<T>(scale[j]);
            if (bias) o += ld<T>(bias[j]);
            yr[j] = st<T>(o);
        }
    }
}

/* Rows of a multiple of 4 elements (at most 128 * V) on 4-aligned data: a
 * warp a row, each lane V groups of 4 in one access each; x, the scale and
 * the bias are all loaded before the first sum, so the row's only wait on
 * memory is the first one. */
template <typename T> struct alignas(4 * sizeof(T)) vec4 {
    T v[4];
};

template <typename T, int V>
__global__ void k_layernorm_vec(int64_t rows, int cols, float eps, const T *x, const T *scale,
                                const T *bias, T *y)
{
    cuk_kernel_enter();
    const int lane = threadIdx.x & 31;
    const int groups = cols / 4;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    vec4<T> g[V], b[V];
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int j = lane + 32 * k;
        if (j < groups) {
            g[k] = reinterpret_cast<const vec4<T> *>(scale)[j];
            if (bias) b[k] = reinterpret_cast<const vec4<T> *>(bias)[j];
        }
    }
    for (int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; r < rows;
         r += warps) {
        const vec4<T> *xr = reinterpret_cast<const vec4<T> *>(x + r * cols);
        float v[V][4];
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int j = lane + 32 * k;
            vec4<T> w;
            if (j < groups) w = xr[j];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                v[k][e] = j < groups ? ld<T>(w.v[e]) : 0.0f;
                s += v[k][e];
            }
        }
        const float mean = warp_sum(s) / (float)cols;
        float q = 0.0f;
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int j = lane + 32 * k;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float d = j < groups ? v[k][e] - mean : 0.0f;
                q += d * d;
            }
        }
        const float rstd = rsqrtf(warp_sum(q) / (float)cols + eps);
        vec4<T> *yr = reinterpret_cast<vec4<T> *>(y + r * cols);
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int j = lane + 32 * k;
            if (j >= groups) break;
            vec4<T> o;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float z = (v[k][e] - mean) * rstd * ld<T>(g[k].v[e]);
                if (bias) z += ld<T>(b[k].v[e]);
                o.v[e] = st<T>(z);
            }
            yr[j] = o;
        }
    }
}

/* Rows of a multiple of 16 bytes (at most 128 chunks of 16 bytes) on
 * 16-aligned data: L lanes a row (a power of two up to a warp, so a warp
 * holds 32 / L rows), each lane V chunks of 16 bytes, every load in flight
 * before the first sum; the sums are shuffles inside each L-lane segment.
 * ConvNeXt's rows of 96 fp16 channels are 12 chunks: L = 4, V = 3 keeps
 * every lane busy where a warp a row left a quarter of them idle and had a
 * sixth of the bytes in flight. */
template <typename T> struct alignas(16) chunk16 {
    T v[16 / sizeof(T)];
};

template <typename T, int L, int V>
__global__ void __launch_bounds__(256) k_layernorm_seg(int64_t rows, int cols, float eps,
                                                        const T *__restrict__ x,
                                                        const T *__restrict__ scale,
                                                        const T *__restrict__ bias,
                                                        T *__restrict__ y)
{
    cuk_kernel_enter();
    constexpr int E = 16 / sizeof(T);
    const int lane = threadIdx.x % L;
    const int chunks = cols / E;
    /* a warp's rows move together (its shuffles name every lane); a lane
     * past the last row holds none */
    const int64_t stride = (int64_t)gridDim.x * (blockDim.x / L);
    for (int64_t r0 = (int64_t)blockIdx.x * (blockDim.x / L) + (threadIdx.x & ~31u) / L;
         r0 < rows; r0 += stride) {
        const int64_t r = r0 + (threadIdx.x & 31) / L;
        const int have = r < rows ? chunks : 0;
        const chunk16<T> *xr = reinterpret_cast<const chunk16<T> *>(x + (have ? r : 0) * cols);
        chunk16<T> c[V];
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int j = lane + L * k;
            if (j < have) c[k] = xr[j];
        }
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < V; k++) {
            if (lane + L * k >= have) continue;
#pragma unroll
            for (int e = 0; e < E; e++)
                s += ld<T>(c[k].v[e]);
        }
#pragma unroll
        for (int o = L / 2; o > 0; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
        const float mean = s / (float)cols;
        float q = 0.0f;
#pragma unroll
        for (int k = 0; k < V; k++) {
            if (lane + L * k >= have) continue;
#pragma unroll
            for (int e = 0; e < E; e++) {
                const float d = ld<T>(c[k].v[e]) - mean;
                q += d * d;
            }
        }
#pragma unroll
        for (int o = L / 2; o > 0; o >>= 1)
            q += __shfl_xor_sync(0xffffffffu, q, o);
        const float rstd = rsqrtf(q / (float)cols + eps);
        chunk16<T> *yr = reinterpret_cast<chunk16<T> *>(y + (have ? r : 0) * cols);
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int j = lane + L * k;
            if (j >= have) continue;
            const chunk16<T> g = reinterpret_cast<const chunk16<T> *>(scale)[j];
            chunk16<T> b, o;
            if (bias) b = reinterpret_cast<const chunk16<T> *>(bias)[j];
#pragma unroll
            for (int e = 0; e < E; e++) {
                float z = (ld<T>(c[k].v[e]) - mean) * rstd * ld<T>(g.v[e]);
                if (bias) z += ld<T>(b.v[e]);
                o.v[e] = st<T>(z);
            }
            yr[j] = o;
        }
    }
}

/* The segment kernel's shape for rows of `chunks` 16-byte chunks: the
 * fewest idle lane slots, V at most 4, L a power of two up to 32 (0 where
 * no shape covers the row). */
static int layernorm_seg_shape(int chunks, int *lanes, int *per)
{
    int best = -1;
    for (int v = 4; v >= 1; v--) {
        int l = 1;
        while (l < 32 && l * v < chunks)
            l *= 2;
        if (l * v < chunks) continue;
        if (best < 0 || l * v - chunks < best) {
            best = l * v - chunks;
            *lanes = l;
            *per = v;
        }
    }
    return best >= 0;
}

template <typename T, int V>
__global__ void k_softmax_warp(int64_t rows, int len, const T *x, T *y)
{
    cuk_kernel_enter();
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; r < rows;
         r += warps) {
        const T *xr = x + r * len;
        float v[V];
        float m = -CUDART_INF_F;
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int j = lane + 32 * k;
            v[k] = j < len ? ld<T>(xr[j]) : -CUDART_INF_F;
            m = fmaxf(m, v[k]);
        }
        m = warp_max(m);
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int j = lane + 32 * k;
            v[k] = j < len ? expf(v[k] - m) : 0.0f;
            s += v[k];
        }
        const float inv = 1.0f / warp_sum(s);
        T *yr = y + r * len;
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int j = lane + 32 * k;
            if (j >= len) break;
            yr[j] = st<T>(v[k] * inv);
        }
    }
}

/* The warp-a-row kernels' launch for rows of n <= 1024 elements: V, the
 * values a lane holds, the smallest power of two that covers the row. */
#define WARP_ROWS_LAUNCH(KERNEL, n, rows, stream, ...)                                             \
    do {                                                                                           \
        const int64_t blocks_ = ((rows) + 7) / 8;                                                  \
        const int grid_ = (int)(blocks_ < kMaxBlocks ? blocks_ : kMaxBlocks);                      \
        if ((n) <= 32)                                                                             \
            cuk_launch(KERNEL<T, 1>, grid_, 256, 0, stream, __VA_ARGS__);                          \
        else if ((n) <= 64)                                                                        \
            cuk_launch(KERNEL<T, 2>, grid_, 256, 0, stream, __VA_ARGS__);                          \
        else if ((n) <= 128)                                                                       \
            cuk_launch(KERNEL<T, 4>, grid_, 256, 0, stream, __VA_ARGS__);                          \
        else if ((n) <= 256)                                                                       \
            cuk_launch(KERNEL<T, 8>, grid_, 256, 0, stream, __VA_ARGS__);                          \
        else if ((n) <= 512)                                                                       \
            cuk_launch(KERNEL<T, 16>, grid_, 256, 0, stream, __VA_ARGS__);                         \
        else                                                                                       \
            cuk_launch(KERNEL<T, 32>, grid_, 256, 0, stream, __VA_ARGS__);                         \
    } while (0)

/* Softmax over rows of contiguous elements: one block per row. */
template <typename T> __global__ void k_softmax_rows(int64_t rows, int64_t len, const T *x, T *y)
{
    cuk_kernel_enter();
    __shared__ float sh[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * len;
        T *yr = y + r * len;
        float m = -CUDART_INF_F;
        for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
            m = fmaxf(m, ld<T>(xr[j]));
        m = block_max(m, sh);
        float s = 0.0f;
        for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
            s += expf(ld<T>(xr[j]) - m);
        float inv = 1.0f / block_sum(s, sh);
        for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
            yr[j] = st<T>(expf(ld<T>(xr[j]) - m) * inv);
    }
}

/* Softmax over a strided axis: one thread per (outer, inner) pair. */
template <typename T>
__global__ void k_softmax_strided(int64_t outer, int64_t axis, int64_t inner, const T *x, T *y)
{
    cuk_kernel_enter();
    int64_t n = outer * inner;
    GRID_STRIDE(i, n)
    {
        int64_t o = i / inner, r = i - o * inner;
        const T *xp = x + o * axis * inner + r;
        T *yp = y + o * axis * inner + r;
        float m = -CUDART_INF_F;
        for (int64_t k = 0; k < axis; k++)
            m = fmaxf(m, ld<T>(xp[k * inner]));
        float s = 0.0f;
        for (int64_t k = 0; k < axis; k++)
            s += expf(ld<T>(xp[k * inner]) - m);
        float inv = 1.0f / s;
        for (int64_t k = 0; k < axis; k++)
            yp[k * inner] = st<T>(expf(ld<T>(xp[k * inner]) - m) * inv);
    }
}

/* One warp per output element. */
template <typename T>
__global__ void k_reduce_mean(cuk_reduce_desc d, int64_t n_out, int64_t n_red, const T *x, T *y)
{
    cuk_kernel_enter();
    int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int64_t n_warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    int lane = threadIdx.x & 31;
    for (int64_t o = warp; o < n_out; o += n_warps) {
        int64_t rest = o, in_base = 0, out_off = 0;
        for (int j = d.n_kept - 1; j >= 0; j--) {
            int64_t q = rest / d.kept[j], c = rest - q * d.kept[j];
            rest = q;
            in_base += c * d.in_kept[j];
            out_off += c * d.out_kept[j];
        }
        float s = 0.0f;
        for (int64_t r = lane; r < n_red; r += 32) {
            int64_t rr = r, off = in_base;
            for (int j = d.n_red - 1; j >= 0; j--) {
                int64_t q = rr / d.red[j], c = rr - q * d.red[j];
                rr = q;
                off += c * d.in_red[j];
            }
            s += ld<T>(x[off]);
        }
        for (int k = 16; k > 0; k >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, k);
        if (lane == 0) y[out_off] = st<T>(s / (float)n_red);
    }
}

/* Column reduction of x [O, R, C] (C contiguous) into y [O, C]: a block
 * holds 32 neighbouring columns (a warp reads 32 neighbouring elements)
 * and 8 rows at a time of part z of the R rows; the 8 row lanes meet in
 * shared memory.  With one part the block writes y.  With several, each
 * part writes its partial results to ws [P, O, C] and counts itself done
 * on its column block's counter (after ws, zero between launches); the
 * last part to finish combines the partials in a fixed order (the same sum
 * at every run), writes y and sets the counter back to zero: one launch,
 * where a second kernel would add its own launch and drain. */
__device__ __forceinline__ float col_acc(int fn, float a, float v)
{
    if (fn == CUK_COL_MAX) return a != a ? a : ((v != v || v > a) ? v : a); /* a NaN stays */
    if (fn == CUK_COL_MIN) return a != a ? a : ((v != v || v < a) ? v : a);
    return a + v;
}

__device__ __forceinline__ float col_final(int fn, float a, int64_t R)
{
    return fn == CUK_COL_MEAN ? a / (float)R : a;
}

__device__ __forceinline__ float col_init(int fn)
{
    return fn == CUK_COL_MAX ? -CUDART_INF_F : (fn == CUK_COL_MIN ? CUDART_INF_F : 0.0f);
}

template <typename T>
__global__ void k_colreduce(int fn, int64_t O, int64_t R, int64_t C, int64_t chunk, int parts,
                            const T *x, T *y, float *ws)
{
    cuk_kernel_enter();
    __shared__ float sh[8][33];
    __shared__ int last;
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    const int64_t c = (int64_t)blockIdx.x * 32 + tx, o = blockIdx.y;
    const int64_t r0 = (int64_t)blockIdx.z * chunk, r1 = r0 + chunk < R ? r0 + chunk : R;
    float acc = col_init(fn);
    if (c < C) {
        const T *xp = x + o * R * C + c;
        int64_t r = r0 + ty;
        /* four independent loads in flight a thread */
        float a1 = col_init(fn), a2 = a1, a3 = a1;
        for (; r + 24 < r1; r += 32) {
            acc = col_acc(fn, acc, ld<T>(xp[r * C]));
            a1 = col_acc(fn, a1, ld<T>(xp[(r + 8) * C]));
            a2 = col_acc(fn, a2, ld<T>(xp[(r + 16) * C]));
            a3 = col_acc(fn, a3, ld<T>(xp[(r + 24) * C]));
        }
        for (; r < r1; r += 8)
            acc = col_acc(fn, acc, ld<T>(xp[r * C]));
        acc = col_acc(fn, col_acc(fn, acc, a1), col_acc(fn, a2, a3));
    }
    sh[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && c < C) {
        for (int k = 1; k < 8; k++)
            acc = col_acc(fn, acc, sh[k][tx]);
        if (parts == 1)
            y[o * C + c] = st<T>(col_final(fn, acc, R));
        else
            ws[((int64_t)blockIdx.z * O + o) * C + c] = acc;
    }
    if (parts == 1) return;
    unsigned *count = (unsigned *)(ws + (int64_t)parts * O * C) + o * gridDim.x + blockIdx.x;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(count, 1u) == (unsigned)parts - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    /* the last part: row lane ty combines parts ty, ty + 8, ... in order,
     * then lane 0 the 8 lanes in order */
    acc = col_init(fn);
    if (c < C)
        for (int k = ty; k < parts; k += 8)
            acc = col_acc(fn, acc, __ldcg(&ws[((int64_t)k * O + o) * C + c]));
    __syncthreads();
    sh[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && c < C) {
        for (int k = 1; k < 8; k++)
            acc = col_acc(fn, acc, sh[k][tx]);
        y[o * C + c] = st<T>(col_final(fn, acc, R));
    }
    if (threadIdx.x == 0) *count = 0;
}

template <typename T>
__global__ void k_pool(cuk_pool_desc d, int64_t n, const T *x, T *y, int64_t *ind)
{
    cuk_kernel_enter();
    GRID_STRIDE(i, n)
    {
        int64_t t = i, nn, c, od, oh, ow;
        if (d.nhwc) {
            c = t % d.C;
            t /= d.C;
            ow = t % d.OW;
            t /= d.OW;
            oh = t % d.OH;
            t /= d.OH;
            od = t % d.OD;
            nn = t / d.OD;
        } else {
            ow = t % d.OW;
            t /= d.OW;
            oh = t % d.OH;
            t /= d.OH;
            od = t % d.OD;
            t /= d.OD;
            c = t % d.C;
            nn = t / d.C;
        }
        int64_t d0 = od * d.sd - d.pad_front, h0 = oh * d.sh - d.pad_t, w0 = ow * d.sw - d.pad_l;
        const T *xp = x + nn * d.xs[0] + c * d.xs[1];
        float acc = d.is_max ? -CUDART_INF_F : 0.0f;
        int64_t count = 0, best = -1, seen = 0;
        for (int64_t kz = 0; kz < d.kd; kz++) {
            int64_t z = d0 + kz * d.dd;
            bool z_in = z >= 0 && z < d.D, z_pad = z >= -d.pad_front && z < d.D + d.pad_back;
            for (int64_t ki = 0; ki < d.kh; ki++) {
                int64_t h = h0 + ki * d.dh;
                bool h_in = z_in && h >= 0 && h < d.H;
                bool h_pad = z_pad && h >= -d.pad_t && h < d.H + d.pad_b;
                for (int64_t kj = 0; kj < d.kw; kj++) {
                    int64_t w = w0 + kj * d.dw;
                    bool w_in = w >= 0 && w < d.W, w_pad = w >= -d.pad_l && w < d.W + d.pad_r;
                    if (h_in && w_in) {
                        float v = ld<T>(xp[z * d.xsd + h * d.xs[2] + w * d.xs[3]]);
                        if (!d.is_max) {
                            acc += v;
                        } else if (ind) {
                            if (!seen || v > acc || (isnan(v) && !isnan(acc))) {
                                acc = v;
                                best = d.storage_order ? z + d.D * (h + d.H * w)
                                                       : (z * d.H + h) * d.W + w;
                            }
                        } else {
                            acc = fmaxf(acc, v);
                        }
                        seen++;
                    }
                    if (d.count_include_pad ? (h_pad && w_pad) : (h_in && w_in)) count++;
                }
            }
        }
        float out = d.is_max ? acc : (count ? acc / (float)count : CUDART_NAN_F);
        int64_t at = nn * d.ys[0] + c * d.ys[1] + od * d.ysd + oh * d.ys[2] + ow * d.ys[3];
        y[at] = st<T>(out);
        if (ind) ind[at] = best < 0 ? -1 : (nn * d.C + c) * d.D * d.H * d.W + best;
    }
}

template <typename T> __global__ void k_lrn(cuk_lrn_desc d, int64_t n, const T *x, T *y)
{
    cuk_kernel_enter();
    GRID_STRIDE(i, n)
    {
        int64_t s = i % d.S, t = i / d.S;
        int64_t c = t % d.C, nn = t / d.C;
        int64_t base = nn * d.C * d.S + s * d.sstride;
        int64_t lo = c - (d.size - 1) / 2, hi = c + d.size / 2;
        if (lo < 0) lo = 0;
        if (hi > d.C - 1) hi = d.C - 1;
        float sum = 0.0f;
        for (int64_t k = lo; k <= hi; k++) {
            float v = ld<T>(x[base + k * d.cstride]);
            sum += v * v;
        }
        float v = ld<T>(x[base + c * d.cstride]);
        y[base + c * d.cstride] = st<T>(v / powf(d.bias + d.alpha / (float)d.size * sum, d.beta));
    }
}

} /* namespace */

/* ---- dispatch -------------------------------------------------------- */

#define DISPATCH_FLOAT(t, ...)                                                                     \
    switch (t) {                                                                                   \
    case CUK_F32: {                                                                                \
        typedef float T;                                                                           \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case CUK_F16: {                                                                                \
        typedef __half T;                                                                          \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    case CUK_BF16: {                                                                               \
        typedef __nv_bfloat16 T;                                                                   \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
    }                                                                                              \
    default:                                                                                       \
        return cudaErrorInvalidValue;                                                              \
    }

#define DISPATCH_SIZE(elem, ...)                                                                   \
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

/* A Concat or Split piece in bytes. */
typedef struct rows_bytes {
    const void *src;
    void *dst;
    int64_t row, spitch, dpitch;
} rows_bytes;

template <typename U> static cudaError_t rows_launch(const rows_args &a, bool wide, cudaStream_t s)
{
    const int64_t max_blocks = (int64_t)1 << 20;
    int64_t tiles = a.first[a.n];
    unsigned grid = (unsigned)(tiles < max_blocks ? tiles : max_blocks);
    if (wide)
        cuk_launch(k_copy_rows<U, int64_t>, grid, kThreads, 0, s, a);
    else
        cuk_launch(k_copy_rows<U, uint32_t>, grid, kThreads, 0, s, a);
    return cudaGetLastError();
}

/* Copies `rows` rows of up to kMaxPieces pieces in one launch. */
static cudaError_t rows_copy(const rows_bytes *pc, int n, int64_t rows, cudaStream_t s)
{
    uint64_t bits = 0;
    int64_t span = 0;
    for (int k = 0; k < n; k++) {
        if (pc[k].row <= 0) continue;
        bits |= (uint64_t)(uintptr_t)pc[k].src | (uint64_t)(uintptr_t)pc[k].dst |
                (uint64_t)pc[k].row | (uint64_t)pc[k].spitch | (uint64_t)pc[k].dpitch;
        int64_t pitch = pc[k].spitch > pc[k].dpitch ? pc[k].spitch : pc[k].dpitch;
        if (rows * pitch > span) span = rows * pitch;
    }
    if (!bits) return cudaSuccess; /* every piece empty */
    int64_t unit = (int64_t)(bits & (~bits + 1));
    if (unit > 16) unit = 16;
    rows_args a;
    memset(&a, 0, sizeof(a));
    a.rows = rows;
    for (int k = 0; k < n; k++) {
        if (pc[k].row <= 0) continue;
        rows_piece *p = &a.p[a.n];
        p->src = (const char *)pc[k].src;
        p->dst = (char *)pc[k].dst;
        p->row = pc[k].row / unit;
        p->spitch = pc[k].spitch / unit;
        p->dpitch = pc[k].dpitch / unit;
        a.first[a.n + 1] = a.first[a.n] + (rows * p->row + kRowsTile - 1) / kRowsTile;
        a.n++;
    }
    /* 32-bit indices when every offset, and a tile past the end, fit */
    bool wide = span / unit > (int64_t)INT32_MAX - kRowsTile;
    switch (unit) {
    case 16:
        return rows_launch<uint4>(a, wide, s);
    case 8:
        return rows_launch<uint2>(a, wide, s);
    case 4:
        return rows_launch<uint32_t>(a, wide, s);
    case 2:
        return rows_launch<uint16_t>(a, wide, s);
    default:
        return rows_launch<uint8_t>(a, wide, s);
    }
}

/* Concat (split = 0) or Split (split = 1): piece k is the contiguous tensor
 * part[k], [outer, axis[k], inner], and block k of the middle axis of
 * `whole`, [outer, sum(axis), inner].  Launches of up to kMaxPieces pieces. */
static cudaError_t concat_or_split(int split, size_t elem, int n, void *const *part,
                                   const int64_t *axis, int64_t outer, int64_t inner, void *whole,
                                   cudaStream_t s)
{
    if (n < 0 || outer < 0 || inner < 0 || elem == 0) return cudaErrorInvalidValue;
    int64_t total = 0;
    for (int k = 0; k < n; k++) {
        if (axis[k] < 0) return cudaErrorInvalidValue;
        total += axis[k];
    }
    if (outer == 0 || inner == 0 || total == 0) return cudaSuccess;
    const int64_t eb = (int64_t)elem * inner, pitch = total * eb;
    rows_bytes pc[kMaxPieces];
    int64_t off = 0;
    for (int k0 = 0; k0 < n; k0 += kMaxPieces) {
        int m = n - k0 < kMaxPieces ? n - k0 : kMaxPieces;
        for (int k = 0; k < m; k++) {
            char *at = (char *)whole + off;
            int64_t row = axis[k0 + k] * eb;
            pc[k].row = row;
            pc[k].src = split ? (const void *)at : (const void *)part[k0 + k];
            pc[k].dst = split ? part[k0 + k] : (void *)at;
            pc[k].spitch = split ? pitch : row;
            pc[k].dpitch = split ? row : pitch;
            off += row;
        }
        cudaError_t e = rows_copy(pc, m, outer, s);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

extern "C" cudaError_t cuk_concat(size_t elem, int n, const void *const *src, const int64_t *axis,
                                  int64_t outer, int64_t inner, void *dst, cudaStream_t stream)
{
    return concat_or_split(0, elem, n, (void *const *)src, axis, outer, inner, dst, stream);
}

extern "C" cudaError_t cuk_split(size_t elem, int n, const void *src, const int64_t *axis,
                                 int64_t outer, int64_t inner, void *const *dst,
                                 cudaStream_t stream)
{
    return concat_or_split(1, elem, n, dst, axis, outer, inner, (void *)src, stream);
}

extern "C" cudaError_t cuk_fill_random(cuk_fill_kind k, int64_t n, uint64_t state, void *y,
                                       cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    switch (k) {
    case CUK_FILL_F32:
        cuk_launch(k_fill_random<CUK_FILL_F32>, blocks_for(n), kThreads, 0, stream, n, state, y);
        break;
    case CUK_FILL_F16:
        cuk_launch(k_fill_random<CUK_FILL_F16>, blocks_for(n), kThreads, 0, stream, n, state, y);
        break;
    case CUK_FILL_BF16:
        cuk_launch(k_fill_random<CUK_FILL_BF16>, blocks_for(n), kThreads, 0, stream, n, state, y);
        break;
    case CUK_FILL_U8:
        cuk_launch(k_fill_random<CUK_FILL_U8>, blocks_for(n), kThreads, 0, stream, n, state, y);
        break;
    case CUK_FILL_I32:
        cuk_launch(k_fill_random<CUK_FILL_I32>, blocks_for(n), kThreads, 0, stream, n, state, y);
        break;
    case CUK_FILL_I64:
        cuk_launch(k_fill_random<CUK_FILL_I64>, blocks_for(n), kThreads, 0, stream, n, state, y);
        break;
    case CUK_FILL_BOOL:
        cuk_launch(k_fill_random<CUK_FILL_BOOL>, blocks_for(n), kThreads, 0, stream, n, state, y);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_pad(size_t elem, const cuk_pad_desc *d, const void *x, void *y,
                               cudaStream_t stream)
{
    int64_t n = 1;
    for (int i = 0; i < d->ndim; i++)
        n *= d->out_shape[i];
    if (n <= 0) return cudaSuccess;
    DISPATCH_SIZE(elem, cuk_launch(k_pad<E>, blocks_for(n), kThreads, 0, stream, *d, n,
                                   (const E *)x, (E *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_gather(size_t elem, int64_t outer, int64_t axis, int64_t n_idx,
                                  int64_t inner, const void *idx, int idx_is_32, const void *x,
                                  void *y, cudaStream_t stream)
{
    int64_t n = outer * n_idx * inner;
    if (n <= 0) return cudaSuccess;
    if (axis <= 0) return cudaErrorInvalidValue;
    if (idx_is_32) {
        DISPATCH_SIZE(elem,
                      cuk_launch(k_gather<E, int32_t>, blocks_for(n), kThreads, 0, stream, outer,
                                 axis, n_idx, inner, (const int32_t *)idx, (const E *)x, (E *)y));
    } else {
        DISPATCH_SIZE(elem,
                      cuk_launch(k_gather<E, int64_t>, blocks_for(n), kThreads, 0, stream, outer,
                                 axis, n_idx, inner, (const int64_t *)idx, (const E *)x, (E *)y));
    }
    return cudaGetLastError();
}

template <bool RELU>
static cudaError_t bias_add(cuk_type t, int64_t n, int64_t C, int64_t cstride, const void *bias,
                            void *y, cudaStream_t stream)
{
    if (n < ((int64_t)1 << 31) && n % cstride == 0) {
        unsigned planes = (unsigned)(n / cstride), hw = (unsigned)cstride;
        if (cstride == 1) {
            DISPATCH_FLOAT(t,
                           (cuk_launch(k_bias_add_inner<T, RELU>, blocks_for(n), kThreads, 0,
                                       stream, (unsigned)n, (unsigned)C, (const T *)bias, (T *)y)));
            return cudaGetLastError();
        }
        int vec = t == CUK_F32 && hw % 4 == 0 && (uintptr_t)y % 16 == 0;
        unsigned len = vec ? hw / 4 : hw;
        unsigned threads = len >= 256 ? 256u : ((len + 31u) / 32u) * 32u;
        unsigned gx = (len + threads - 1) / threads;
        if (gx > 64) gx = 64;
        dim3 grid(gx, planes < 65535u ? planes : 65535u);
        if (vec)
            cuk_launch(k_bias_add_planes4<RELU>, grid, threads, 0, stream, planes, (unsigned)C, len,
                       (const float *)bias, (float4 *)y);
        else
            DISPATCH_FLOAT(t, (cuk_launch(k_bias_add_planes<T, RELU>, grid, threads, 0, stream,
                                          planes, (unsigned)C, hw, (const T *)bias, (T *)y)));
        return cudaGetLastError();
    }
    DISPATCH_FLOAT(t, (cuk_launch(k_bias_add<T, RELU>, blocks_for(n), kThreads, 0, stream, n, C,
                                  cstride, (const T *)bias, (T *)y)));
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_bias_add(cuk_type t, int64_t n, int64_t C, int64_t cstride,
                                    const void *bias, int relu, void *y, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    if (C <= 0 || cstride <= 0) return cudaErrorInvalidValue;
    if (!bias) {
        const cuk_ew_params none = {0.0f, 0.0f, 0.0f, 0, 0};
        return relu ? cuk_ew_unary(CUK_U_RELU, &none, (cuk_dtype)t, (cuk_dtype)t, n, y, y, stream)
                    : cudaSuccess;
    }
    return relu ? bias_add<true>(t, n, C, cstride, bias, y, stream)
                : bias_add<false>(t, n, C, cstride, bias, y, stream);
}

extern "C" cudaError_t cuk_bn_train(cuk_type t, int64_t N, int64_t C, int64_t S, int nhwc,
                                    float eps, const void *x, const void *scale, const void *bias,
                                    void *y, void *mean, void *inv, cudaStream_t stream)
{
    if (N * C * S <= 0) return cudaSuccess;
    const int grid = (int)(C < kMaxBlocks ? C : kMaxBlocks);
    DISPATCH_FLOAT(t, cuk_launch(k_bn_train<T>, grid, kThreads, 0, stream, N, C, S, nhwc, eps,
                                 (const T *)x, (const T *)scale, (const T *)bias, (T *)y, (T *)mean,
                                 (T *)inv));
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_bn_grad(cuk_type t, int64_t N, int64_t C, int64_t S, int nhwc,
                                   const void *dy, const void *x, const void *scale,
                                   const void *mean, const void *inv, void *dx, void *dscale,
                                   void *dbias, cudaStream_t stream)
{
    if (N * C * S <= 0) return cudaSuccess;
    const int grid = (int)(C < kMaxBlocks ? C : kMaxBlocks);
    DISPATCH_FLOAT(t, cuk_launch(k_bn_grad<T>, grid, kThreads, 0, stream, N, C, S, nhwc,
                                 (const T *)dy, (const T *)x, (const T *)scale, (const T *)mean,
                                 (const T *)inv, (T *)dx, (T *)dscale, (T *)dbias));
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_layernorm(cuk_type t, int64_t rows, int64_t cols, float eps,
                                     const void *x, const void *scale, const void *bias, void *y,
                                     cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    const uintptr_t align = (uintptr_t)x | (uintptr_t)y | (uintptr_t)scale | (uintptr_t)bias;
    const int esz = t == CUK_F32 ? 4 : 2;
    int lanes = 0, per = 0;
    if ((cols * esz) % 16 == 0 && cols * esz <= 128 * 16 && align % 16 == 0 &&
        layernorm_seg_shape((int)(cols * esz / 16), &lanes, &per)) {
        /* 256 threads a block; one row a segment, the grid covering them */
        const int64_t blocks = (rows * lanes + 255) / 256;
        const int grid = (int)(blocks < INT32_MAX ? blocks : INT32_MAX);
#define LN_SEG(L, V)                                                                                   if (lanes == L && per == V)                                                                        cuk_launch(k_layernorm_seg<T, L, V>, grid, 256, 0, stream, rows, (int)cols, eps,                              (const T *)x, (const T *)scale, (const T *)bias, (T *)y)
#define LN_SEG_V(L)                                                                                    LN_SEG(L, 1);                                                                                      LN_SEG(L, 2);                                                                                      LN_SEG(L, 3);                                                                                      LN_SEG(L, 4)
        DISPATCH_FLOAT(t, {
            LN_SEG_V(1);
            LN_SEG_V(2);
            LN_SEG_V(4);
            LN_SEG_V(8);
            LN_SEG_V(16);
            LN_SEG_V(32);
        });
#undef LN_SEG_V
#undef LN_SEG
        return cudaGetLastError();
    }
    if (cols % 4 == 0 && cols <= 1024 && align % 16 == 0) {
        /* four rows a block: a row's warp per multiprocessor sooner than eight */
        const int64_t blocks = (rows + 3) / 4;
        const int grid = (int)(blocks < kMaxBlocks ? blocks : kMaxBlocks);
        const int groups = (int)((cols / 4 + 31) / 32);
#define LN_VEC(V)                                                                                  \
    cuk_launch(k_layernorm_vec<T, V>, grid, 128, 0, stream, rows, (int)cols, eps, (const T *)x,    \
               (const T *)scale, (const T *)bias, (T *)y)
        DISPATCH_FLOAT(t, {
            if (groups <= 1) LN_VEC(1);
            else if (groups <= 2) LN_VEC(2);
            else if (groups <= 4) LN_VEC(4);
            else if (groups <= 6) LN_VEC(6);
            else LN_VEC(8);
        });
#undef LN_VEC
        return cudaGetLastError();
    }
    if (cols <= 1024) {
        DISPATCH_FLOAT(t, WARP_ROWS_LAUNCH(k_layernorm_warp, cols, rows, stream, rows, (int)cols,
                                           eps, (const T *)x, (const T *)scale, (const T *)bias,
                                           (T *)y));
        return cudaGetLastError();
    }
    int grid = (int)(rows < kMaxBlocks ? rows : kMaxBlocks);
    DISPATCH_FLOAT(t, cuk_launch(k_layernorm<T>, grid, kThreads, 0, stream, rows, cols, eps,
                                 (const T *)x, (const T *)scale, (const T *)bias, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_softmax(cuk_type t, int64_t outer, int64_t axis, int64_t inner,
                                   const void *x, void *y, cudaStream_t stream)
{
    if (outer <= 0 || axis <= 0 || inner <= 0) return cudaSuccess;
    if (inner == 1 && axis <= 1024) {
        DISPATCH_FLOAT(t, WARP_ROWS_LAUNCH(k_softmax_warp, axis, outer, stream, outer, (int)axis,
                                           (const T *)x, (T *)y));
    } else if (inner == 1) {
        int grid = (int)(outer < kMaxBlocks ? outer : kMaxBlocks);
        DISPATCH_FLOAT(t, cuk_launch(k_softmax_rows<T>, grid, kThreads, 0, stream, outer, axis,
                                     (const T *)x, (T *)y));
    } else {
        DISPATCH_FLOAT(t, cuk_launch(k_softmax_strided<T>, blocks_for(outer * inner), kThreads, 0,
                                     stream, outer, axis, inner, (const T *)x, (T *)y));
    }
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_reduce_mean(cuk_type t, const cuk_reduce_desc *d, const void *x, void *y,
                                       cudaStream_t stream)
{
    int64_t n_out = 1, n_red = 1;
    for (int i = 0; i < d->n_kept; i++)
        n_out *= d->kept[i];
    for (int i = 0; i < d->n_red; i++)
        n_red *= d->red[i];
    if (n_out <= 0 || n_red <= 0) return cudaSuccess;
    int grid = blocks_for(n_out * 32);
    DISPATCH_FLOAT(t, cuk_launch(k_reduce_mean<T>, grid, kThreads, 0, stream, *d, n_out, n_red,
                                 (const T *)x, (T *)y));
    return cudaGetLastError();
}

/* Parts of the R rows: about two blocks an SM in all, at least 256 rows
 * a part (32 per row lane). */
static int colreduce_parts(int64_t O, int64_t R, int64_t C)
{
    int64_t blocks = (C + 31) / 32 * O;
    int64_t want = (264 + blocks - 1) / blocks, most = (R + 255) / 256;
    int64_t p = want < most ? want : most;
    return (int)(p < 1 ? 1 : (p > 4096 ? 4096 : p));
}

extern "C" int cuk_colreduce_ok(int64_t O, int64_t R, int64_t C)
{
    return O >= 1 && O <= 65535 && R >= 1 && C >= 1 && (C + 31) / 32 <= INT32_MAX &&
           O * R <= INT64_MAX / C;
}

/* The partials [P, O, C] as floats, then a counter a column block. */
extern "C" size_t cuk_colreduce_workspace(int64_t O, int64_t R, int64_t C)
{
    if (!cuk_colreduce_ok(O, R, C)) return 0;
    int parts = colreduce_parts(O, R, C);
    return parts > 1 ? (size_t)parts * (size_t)(O * C) * sizeof(float) +
                           (size_t)(O * ((C + 31) / 32)) * sizeof(unsigned)
                     : 0;
}

extern "C" cudaError_t cuk_colreduce(cuk_col_fn fn, cuk_type t, int64_t O, int64_t R, int64_t C,
                                     const void *x, void *y, void *ws, cudaStream_t stream)
{
    if (!cuk_colreduce_ok(O, R, C) || (int)fn < 0 || fn > CUK_COL_MIN) return cudaErrorInvalidValue;
    int parts = colreduce_parts(O, R, C);
    if (parts > 1 && !ws) return cudaErrorInvalidValue;
    int64_t chunk = (R + parts - 1) / parts;
    dim3 grid((unsigned)((C + 31) / 32), (unsigned)O, (unsigned)parts);
    DISPATCH_FLOAT(t, cuk_launch(k_colreduce<T>, grid, kThreads, 0, stream, (int)fn, O, R, C, chunk,
                                 parts, (const T *)x, (T *)y, (float *)ws));
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_pool(cuk_dtype t, const cuk_pool_desc *d, const void *x, void *y,
                                int64_t *ind, cudaStream_t stream)
{
    int64_t n = d->N * d->C * d->OD * d->OH * d->OW;
    if (n <= 0) return cudaSuccess;
    if (!ind && !d->generic && cuk_pool_nhwc4_ok(t, d, x, y)) return cuk_pool_nhwc4(t, d, x, y, stream);
#define POOL_LAUNCH(T)                                                                             \
    cuk_launch(k_pool<T>, blocks_for(n), kThreads, 0, stream, *d, n, (const T *)x, (T *)y, ind)
    switch (t) {
    case CUK_DT_F32:
        POOL_LAUNCH(float);
        break;
    case CUK_DT_F16:
        POOL_LAUNCH(__half);
        break;
    case CUK_DT_BF16:
        POOL_LAUNCH(__nv_bfloat16);
        break;
    case CUK_DT_I8:
        if (!d->is_max) return cudaErrorInvalidValue;
        POOL_LAUNCH(int8_t);
        break;
    case CUK_DT_U8:
        if (!d->is_max) return cudaErrorInvalidValue;
        POOL_LAUNCH(uint8_t);
        break;
    default:
        return cudaErrorInvalidValue;
    }
#undef POOL_LAUNCH
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_lrn(cuk_type t, const cuk_lrn_desc *d, const void *x, void *y,
                               cudaStream_t stream)
{
    int64_t n = d->N * d->C * d->S;
    if (n <= 0) return cudaSuccess;
    if (d->size <= 0) return cudaErrorInvalidValue;
    DISPATCH_FLOAT(
        t, cuk_launch(k_lrn<T>, blocks_for(n), kThreads, 0, stream, *d, n, (const T *)x, (T *)y));
    return cudaGetLastError();
}

/* ---- programmatic dependent launch (kernels_launch.cuh) ------------- */

static thread_local int pdl_on;

int cuk_set_pdl(int on)
{
    const int was = pdl_on;
    pdl_on = on != 0;
    return was;
}

int cuk_pdl_now(void)
{
    return pdl_on;
}
