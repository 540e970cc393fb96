/*
 * kernels_attention.cu - scaled dot-product attention in one launch
 * (cuk_attention, kernels.h).
 *
 * A block of kWarps warps takes QT = kWarps * QPW query rows of one
 * (batch, head): their rows of Q, scaled, sit in shared memory for the
 * whole launch.  The keys go by in tiles of kTile: the block stages the
 * tile's K and V in shared memory (K rows padded to a multiple of 4 floats
 * plus 4, so that the lanes' 16-byte reads of different rows fall in
 * different banks), then each warp works on its own QPW rows:
 *   - scores: lane l owns keys l and l + 32 of the tile, dot products over
 *     the head in float4 steps (Q broadcast, K from its own row);
 *   - the bias and the bounds, then the online softmax: the tile's max by
 *     shuffles, the running max m and sum l rescaled by exp(m_old - m_new);
 *     the probabilities go to the warp's rows of P in shared memory;
 *   - the product: lane l owns output columns l, l + 32, ... (NV of them),
 *     P read four keys at a time (broadcast), V by columns (no conflicts).
 * At the end each row is divided by its sum.  No score or probability ever
 * goes to global memory.  Every operand is read through the strides of its
 * canonical dims, so a [B, S, H, D] projection or a K stored transposed is
 * read where it is.  All arithmetic is in float, whatever the storage type.
 *
 * fp16 and bf16 with heads of a multiple of 16 up to 128 (d.tc) take a
 * second kernel on the tensor cores (WMMA, fp32 accumulation): a warp owns
 * 16 query rows, a block W warps; per key tile of 64 the warp's scores
 * Q K^T go from the tensor cores to shared memory in float, two lanes a row
 * apply the scale, the bias and the online softmax and write P in the
 * storage type, and O += P V runs on the tensor cores again on the warp's
 * running output, which lives in shared memory in float (rescaled there by
 * each row's exp(m_old - m_new) before the product).
 *
 * fp32 takes the same kernel (d.tc 2) with TF32 fragments three times over
 * (split TF32): each operand x is x_hi + x_lo, both rounded to TF32, and a
 * product a b is a_lo b_hi + a_hi b_lo + a_hi b_hi, which drops only a_lo b_lo
 * (2^-22 of it): fp32 accuracy on the tensor cores, as the products around
 * a softmax keep it whatever TF32 allows (precision.c).
 */
#include <math.h>
#include <mma.h>

#include "backend/cuda/kernels_common.cuh"

namespace
{

using cuk::from_float;
using cuk::to_float;

constexpr int kTile = 64;
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kMaxHead = 256;

__host__ __device__ inline int pad4(int64_t d)
{
    return (int)((d + 3) / 4 * 4);
}

/* Shared memory in floats: Q [QT][D4], K [kTile][D4 + 4], V [kTile][Dv4],
 * P [QT][kTile]. */
__host__ __device__ inline int64_t att_floats(const cuk_attention_desc &d, int qpw)
{
    int64_t qt = (int64_t)kWarps * qpw, d4 = pad4(d.D), v4 = pad4(d.Dv);
    return qt * d4 + (int64_t)kTile * (d4 + 4) + (int64_t)kTile * v4 + qt * kTile;
}

struct fmax_op {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct fadd_op {
    __device__ float operator()(float a, float b) const { return a + b; }
};

__device__ __forceinline__ float warp_max(float v)
{
    return cuk::warp_reduce(v, fmax_op());
}

__device__ __forceinline__ float warp_sum(float v)
{
    return cuk::warp_reduce(v, fadd_op());
}

/* Copies rows [0, rows) x columns [0, 4 * c4) of a strided operand (row
 * stride rs, column stride cs; rows from `valid` on and columns from
 * `cols` on read as 0) into shared memory with row stride ds, times mul.
 * Each thread puts up to kIlp * 4 loads in flight before it stores any:
 * the tile loads are latency-bound otherwise. */
constexpr int kIlp = 4;

template <typename T>
__device__ __forceinline__ void stage(float *dst, int ds, const T *src, int64_t rs, int64_t cs,
                                      int rows, int64_t valid, int c4, int64_t cols, float mul)
{
    const int total = rows * c4;
    for (int base = threadIdx.x; base < total; base += kThreads * kIlp) {
        float4 v[kIlp];
#pragma unroll
        for (int u = 0; u < kIlp; u++) {
            int idx = base + u * kThreads;
            v[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            int r = idx / c4, c = (idx - r * c4) * 4;
            if (idx < total && r < valid) {
                const T *p = src + r * rs + c * cs;
                if (c < cols) v[u].x = to_float(p[0]) * mul;
                if (c + 1 < cols) v[u].y = to_float(p[cs]) * mul;
                if (c + 2 < cols) v[u].z = to_float(p[2 * cs]) * mul;
                if (c + 3 < cols) v[u].w = to_float(p[3 * cs]) * mul;
            }
        }
#pragma unroll
        for (int u = 0; u < kIlp; u++) {
            int idx = base + u * kThreads;
            int r = idx / c4, c = (idx - r * c4) * 4;
            if (idx < total) *reinterpret_cast<float4 *>(dst + r * ds + c) = v[u];
        }
    }
}

template <typename T, int QPW, int NV>
__global__ void __launch_bounds__(kThreads)
    k_attention(const __grid_constant__ cuk_attention_desc d, const T *__restrict__ q,
                const T *__restrict__ k, const T *__restrict__ v, const T *__restrict__ bias,
                T *__restrict__ o)
{
    cuk_kernel_enter();
    extern __shared__ float4 att_smem[];
    constexpr int QT = kWarps * QPW;
    const int D4 = pad4(d.D), KS = D4 + 4, V4 = pad4(d.Dv);
    float *Qs = reinterpret_cast<float *>(att_smem);
    float *Ks = Qs + QT * D4;
    float *Vs = Ks + kTile * KS;
    float *Ps = Vs + kTile * V4;
    const int64_t bh = blockIdx.x, b = bh / d.H, h = bh % d.H;
    const int64_t q0 = (int64_t)blockIdx.y * QT;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const T *qb = q + b * d.q[0] + h * d.q[1];
    const T *kb = k + b * d.k[0] + h * d.k[1];
    const T *vb = v + b * d.v[0] + h * d.v[1];
    const T *bb = bias ? bias + b * d.bias[0] + h * d.bias[1] : nullptr;

    stage(Qs, D4, qb + q0 * d.q[2], d.q[2], d.q[3], QT, d.Sq - q0, D4 / 4, d.D, d.scale);
    float acc[QPW][NV], m[QPW], l[QPW];
#pragma unroll
    for (int r = 0; r < QPW; r++) {
        m[r] = -CUDART_INF_F;
        l[r] = 0.0f;
#pragma unroll
        for (int c = 0; c < NV; c++)
            acc[r][c] = 0.0f;
    }
    const float *qw = Qs + warp * QPW * D4;
    float *pw = Ps + warp * QPW * kTile;
    for (int64_t j0 = 0; j0 < d.Sk; j0 += kTile) {
        __syncthreads(); /* the last tile's readers are done (and Q is in) */
        stage(Ks, KS, kb + j0 * d.k[2], d.k[2], d.k[3], kTile, d.Sk - j0, D4 / 4, d.D, 1.0f);
        stage(Vs, V4, vb + j0 * d.v[2], d.v[2], d.v[3], kTile, d.Sk - j0, V4 / 4, d.Dv, 1.0f);
        __syncthreads();
        float s[QPW][2];
#pragma unroll
        for (int r = 0; r < QPW; r++)
            s[r][0] = s[r][1] = 0.0f;
        const float *k0 = Ks + lane * KS, *k1 = Ks + (lane + 32) * KS;
        for (int c = 0; c < D4; c += 4) {
            float4 a0 = *reinterpret_cast<const float4 *>(k0 + c);
            float4 a1 = *reinterpret_cast<const float4 *>(k1 + c);
#pragma unroll
            for (int r = 0; r < QPW; r++) {
                float4 x = *reinterpret_cast<const float4 *>(qw + r * D4 + c);
                s[r][0] =
                    fmaf(x.x, a0.x, fmaf(x.y, a0.y, fmaf(x.z, a0.z, fmaf(x.w, a0.w, s[r][0]))));
                s[r][1] =
                    fmaf(x.x, a1.x, fmaf(x.y, a1.y, fmaf(x.z, a1.z, fmaf(x.w, a1.w, s[r][1]))));
            }
        }
#pragma unroll
        for (int r = 0; r < QPW; r++) {
            int64_t i = q0 + warp * QPW + r;
#pragma unroll
            for (int t = 0; t < 2; t++) {
                int64_t j = j0 + lane + 32 * t;
                if (j >= d.Sk)
                    s[r][t] = -CUDART_INF_F;
                else if (bb && i < d.Sq)
                    s[r][t] += to_float(bb[i * d.bias[2] + j * d.bias[3]]);
            }
            float mn = fmaxf(m[r], warp_max(fmaxf(s[r][0], s[r][1])));
            float mu = mn == -CUDART_INF_F ? 0.0f : mn;
            float alpha = expf(m[r] - mu);
            m[r] = mn;
            float p0 = expf(s[r][0] - mu), p1 = expf(s[r][1] - mu);
            l[r] = l[r] * alpha + p0 + p1;
#pragma unroll
            for (int c = 0; c < NV; c++)
                acc[r][c] *= alpha;
            pw[r * kTile + lane] = p0;
            pw[r * kTile + lane + 32] = p1;
        }
        __syncwarp();
        int jn = (int)(d.Sk - j0 < kTile ? d.Sk - j0 : kTile);
        for (int j = 0; j < jn; j += 4) {
            float4 p[QPW];
#pragma unroll
            for (int r = 0; r < QPW; r++)
                p[r] = *reinterpret_cast<const float4 *>(pw + r * kTile + j);
#pragma unroll
            for (int c = 0; c < NV; c++) {
                int col = lane + 32 * c;
                if (col >= V4) break;
                float v0 = Vs[j * V4 + col], v1 = Vs[(j + 1) * V4 + col];
                float v2 = Vs[(j + 2) * V4 + col], v3 = Vs[(j + 3) * V4 + col];
#pragma unroll
                for (int r = 0; r < QPW; r++)
                    acc[r][c] =
                        fmaf(p[r].x, v0,
                             fmaf(p[r].y, v1, fmaf(p[r].z, v2, fmaf(p[r].w, v3, acc[r][c]))));
            }
        }
        __syncwarp(); /* P is rewritten by the next tile */
    }
#pragma unroll
    for (int r = 0; r < QPW; r++) {
        float sum = warp_sum(l[r]);
        int64_t i = q0 + warp * QPW + r;
        if (i >= d.Sq) continue;
        int zero = d.nan_rows_zero && m[r] == -CUDART_INF_F;
        T *orow = o + b * d.o[0] + h * d.o[1] + i * d.o[2];
#pragma unroll
        for (int c = 0; c < NV; c++) {
            int col = lane + 32 * c;
            if (col < d.Dv) orow[col * d.o[3]] = from_float<T>(zero ? 0.0f : acc[r][c] / sum);
        }
    }
}

template <typename T, int QPW, int NV> void *att_fn()
{
    return (void *)k_attention<T, QPW, NV>;
}

/* The kernel for (T, qpw, Dv). */
template <typename T> void *att_pick(int qpw, int64_t dv)
{
    int nv = dv <= 64 ? 2 : dv <= 128 ? 4 : 8;
#define ATT_NV(Q) (nv == 2 ? att_fn<T, Q, 2>() : nv == 4 ? att_fn<T, Q, 4>() : att_fn<T, Q, 8>())
    return qpw == 8 ? ATT_NV(8) : qpw == 4 ? ATT_NV(4) : ATT_NV(2);
#undef ATT_NV
}

/* ---- the tensor-core kernel (fp16, bf16; fp32 in split TF32) ----------- */

constexpr int kTcTile = 64; /* keys per tile */

/* Shared memory of the tensor-core kernel for heads padded to DP and W
 * warps: Q, K, V [rows][DP + 8] in T; per warp S [16][kTcTile + 4] and
 * O [16][DP + 4] in float, P [16][kTcTile + 8] in T. */
__host__ __device__ inline size_t tc_bytes(int dp, int w, size_t esz)
{
    size_t qkv = ((size_t)16 * w + 2 * kTcTile) * (dp + 8) * esz;
    size_t per = (size_t)16 * (kTcTile + 4) * 4 + (size_t)16 * (dp + 4) * 4 +
                 (size_t)16 * (kTcTile + 8) * esz;
    return qkv + per * w;
}

/* rows x DP of a strided operand into shared memory (row stride ld), zero
 * beyond `valid` rows and `cols` columns; as stored, no conversion. */
template <typename T, int DP, int NT>
__device__ __forceinline__ void stage_tc(T *dst, int ld, const T *src, int64_t rs, int64_t cs,
                                         int rows, int64_t valid, int64_t cols)
{
    const T zero = from_float<T>(0.0f);
    constexpr int V = 16 / (int)sizeof(T); /* elements in 16 bytes */
    if (cs == 1 && rs % V == 0 && cols % V == 0 && ((uintptr_t)src & 15) == 0) {
        /* rows of contiguous, aligned elements: 16 bytes at a time */
        constexpr int CV = DP / V;
        for (int idx = threadIdx.x; idx < rows * CV; idx += NT) {
            int r = idx / CV, c = (idx - r * CV) * V;
            uint4 w = make_uint4(0u, 0u, 0u, 0u);
            if (r < valid && c < cols) w = *reinterpret_cast<const uint4 *>(src + r * rs + c);
            *reinterpret_cast<uint4 *>(dst + r * ld + c) = w;
        }
        return;
    }
    for (int idx = threadIdx.x; idx < rows * DP; idx += NT) {
        int r = idx / DP, c = idx - r * DP;
        dst[r * ld + c] = (r < valid && c < cols) ? src[r * rs + c * cs] : zero;
    }
}

/* The fragments of T on the tensor cores: fp16 and bf16 as stored, 16
 * deep; fp32 as TF32, 8 deep, split in two (mma_tc). */
template <typename T> struct tc_frag {
    using in = T;
    static constexpr int K = 16;
    static constexpr bool split = false;
};
template <> struct tc_frag<float> {
    using in = nvcuda::wmma::precision::tf32;
    static constexpr int K = 8;
    static constexpr bool split = true;
};

/* A fragment loaded as floats becomes its TF32 high part; lo gets the
 * rest, rounded to TF32 too. */
template <typename Frag> __device__ __forceinline__ void split_tf32(Frag &f, Frag &lo)
{
#pragma unroll
    for (int t = 0; t < f.num_elements; t++) {
        const float x = f.x[t], hi = nvcuda::wmma::__float_to_tf32(x);
        f.x[t] = hi;
        lo.x[t] = nvcuda::wmma::__float_to_tf32(x - hi);
    }
}

/* acc += a b on the tensor cores; for split TF32, a and b loaded as floats
 * become their high parts and the low parts' products go first. */
template <bool Split, typename FA, typename FB, typename FC>
__device__ __forceinline__ void mma_tc(FC &acc, FA &a, FB &b)
{
    using namespace nvcuda;
    if constexpr (Split) {
        FA a_lo;
        FB b_lo;
        split_tf32(a, a_lo);
        split_tf32(b, b_lo);
        wmma::mma_sync(acc, a_lo, b, acc);
        wmma::mma_sync(acc, a, b_lo, acc);
    }
    wmma::mma_sync(acc, a, b, acc);
}

template <typename T, int DP, int W>
__global__ void __launch_bounds__(32 * W)
    k_attention_tc(const __grid_constant__ cuk_attention_desc d, const T *__restrict__ q,
                   const T *__restrict__ k, const T *__restrict__ v, const T *__restrict__ bias,
                   T *__restrict__ o)
{
    cuk_kernel_enter();
    using namespace nvcuda;
    using F = tc_frag<T>;
    using In = typename F::in;
    constexpr int KS = F::K;
    constexpr int NT = 32 * W, QT = 16 * W, LD = DP + 8, LS = kTcTile + 4, LO = DP + 4,
                  LP = kTcTile + 8;
    extern __shared__ float4 att_smem[];
    T *Qs = reinterpret_cast<T *>(att_smem);
    T *Ks = Qs + QT * LD;
    T *Vs = Ks + kTcTile * LD;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    char *per = reinterpret_cast<char *>(Vs + kTcTile * LD) +
                (size_t)warp * (16 * LS * 4 + 16 * LO * 4 + 16 * LP * sizeof(T));
    float *Ss = reinterpret_cast<float *>(per);
    float *Os = Ss + 16 * LS;
    T *Ps = reinterpret_cast<T *>(Os + 16 * LO);
    const int64_t bh = blockIdx.x, b = bh / d.H, h = bh % d.H;
    const int64_t q0 = (int64_t)blockIdx.y * QT;
    const T *kb = k + b * d.k[0] + h * d.k[1];
    const T *vb = v + b * d.v[0] + h * d.v[1];
    const T *bb = bias ? bias + b * d.bias[0] + h * d.bias[1] : nullptr;
    stage_tc<T, DP, NT>(Qs, LD, q + b * d.q[0] + h * d.q[1] + q0 * d.q[2], d.q[2], d.q[3], QT,
                        d.Sq - q0, d.D);
    /* two lanes a row: row r, columns [half * 32, half * 32 + 32) of a tile */
    const int r = lane >> 1, half = lane & 1;
    const int64_t i = q0 + warp * 16 + r;
    for (int c = half * (DP / 2); c < (half + 1) * (DP / 2); c++)
        Os[r * LO + c] = 0.0f;
    float m = -CUDART_INF_F, l = 0.0f;
    for (int64_t j0 = 0; j0 < d.Sk; j0 += kTcTile) {
        __syncthreads(); /* the last tile's readers are done (and Q is in) */
        stage_tc<T, DP, NT>(Ks, LD, kb + j0 * d.k[2], d.k[2], d.k[3], kTcTile, d.Sk - j0, d.D);
        stage_tc<T, DP, NT>(Vs, LD, vb + j0 * d.v[2], d.v[2], d.v[3], kTcTile, d.Sk - j0, d.Dv);
        __syncthreads();
        /* S = Q K^T for the warp's 16 rows */
#pragma unroll
        for (int n = 0; n < kTcTile / 16; n++) {
            wmma::fragment<wmma::accumulator, 16, 16, KS, float> acc;
            wmma::fill_fragment(acc, 0.0f);
#pragma unroll
            for (int kk = 0; kk < DP / KS; kk++) {
                wmma::fragment<wmma::matrix_a, 16, 16, KS, In, wmma::row_major> fa;
                wmma::fragment<wmma::matrix_b, 16, 16, KS, In, wmma::col_major> fb;
                wmma::load_matrix_sync(fa, Qs + warp * 16 * LD + kk * KS, LD);
                wmma::load_matrix_sync(fb, Ks + n * 16 * LD + kk * KS, LD);
                mma_tc<F::split>(acc, fa, fb);
            }
            wmma::store_matrix_sync(Ss + n * 16, acc, LS, wmma::mem_row_major);
        }
        __syncwarp();
        /* the online softmax, two lanes a row */
        float sv[32], tmax = -CUDART_INF_F;
#pragma unroll
        for (int c = 0; c < 32; c++) {
            const int col = half * 32 + c;
            const int64_t j = j0 + col;
            float x = Ss[r * LS + col] * d.scale;
            if (j >= d.Sk)
                x = -CUDART_INF_F;
            else if (bb && i < d.Sq)
                x += to_float(bb[i * d.bias[2] + j * d.bias[3]]);
            sv[c] = x;
            tmax = fmaxf(tmax, x);
        }
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
        const float mn = fmaxf(m, tmax), mu = mn == -CUDART_INF_F ? 0.0f : mn;
        const float alpha = expf(m - mu);
        float psum = 0.0f;
#pragma unroll
        for (int c = 0; c < 32; c++) {
            const float p = expf(sv[c] - mu);
            psum += p;
            Ps[r * LP + half * 32 + c] = from_float<T>(p);
        }
        psum += __shfl_xor_sync(0xffffffffu, psum, 1);
        l = l * alpha + psum;
        m = mn;
        for (int c = half * (DP / 2); c < (half + 1) * (DP / 2); c++)
            Os[r * LO + c] *= alpha;
        __syncwarp();
        /* O += P V */
#pragma unroll
        for (int nb = 0; nb < DP / 16; nb++) {
            wmma::fragment<wmma::accumulator, 16, 16, KS, float> acc;
            wmma::load_matrix_sync(acc, Os + nb * 16, LO, wmma::mem_row_major);
#pragma unroll
            for (int kk = 0; kk < kTcTile / KS; kk++) {
                wmma::fragment<wmma::matrix_a, 16, 16, KS, In, wmma::row_major> fa;
                wmma::fragment<wmma::matrix_b, 16, 16, KS, In, wmma::row_major> fb;
                wmma::load_matrix_sync(fa, Ps + kk * KS, LP);
                wmma::load_matrix_sync(fb, Vs + kk * KS * LD + nb * 16, LD);
                mma_tc<F::split>(acc, fa, fb);
            }
            wmma::store_matrix_sync(Os + nb * 16, acc, LO, wmma::mem_row_major);
        }
        __syncwarp();
    }
    if (i >= d.Sq) return;
    const int zero = d.nan_rows_zero && m == -CUDART_INF_F;
    T *orow = o + b * d.o[0] + h * d.o[1] + i * d.o[2];
    for (int c = half * (DP / 2); c < (half + 1) * (DP / 2); c++)
        if (c < d.Dv) orow[c * d.o[3]] = from_float<T>(zero ? 0.0f : Os[r * LO + c] / l);
}

template <typename T, int DP, int W> void *tc_fn()
{
    return (void *)k_attention_tc<T, DP, W>;
}

/* The tensor-core kernel for (T, the head, W warps). */
template <typename T> void *tc_pick(int64_t dh, int w)
{
#define TC_W(DP) (w == 4 ? tc_fn<T, DP, 4>() : w == 2 ? tc_fn<T, DP, 2>() : tc_fn<T, DP, 1>())
    return dh <= 32 ? TC_W(32) : dh <= 64 ? TC_W(64) : TC_W(128);
#undef TC_W
}

inline int tc_dp(int64_t dh)
{
    return dh <= 32 ? 32 : dh <= 64 ? 64 : 128;
}

template <typename T> struct tc_type {
    static constexpr bool ok = false;
};
template <> struct tc_type<__half> {
    static constexpr bool ok = true;
};
template <> struct tc_type<__nv_bfloat16> {
    static constexpr bool ok = true;
};
template <> struct tc_type<float> {
    static constexpr bool ok = true;
};

template <typename T> void *any_pick(const cuk_attention_desc *d)
{
    if constexpr (tc_type<T>::ok) {
        if (d->tc) return tc_pick<T>(d->D > d->Dv ? d->D : d->Dv, d->qpw);
    }
    return att_pick<T>(d->qpw, d->Dv);
}

/* The softmax between the two products of the product form: s holds the
 * scaled scores [B, H, Sq, Sk], row-major; a warp a row adds the bias read
 * through its strides, then writes the row's softmax over them in place
 * (max, sum and the divide in float, every sum in a fixed order). */
constexpr int kSoftmaxRows = 8; /* rows (warps) a block */

template <typename T>
__global__ void __launch_bounds__(32 * kSoftmaxRows)
    k_att_softmax(const __grid_constant__ cuk_attention_desc d, float *s, const T *bias)
{
    cuk_kernel_enter();
    const int lane = threadIdx.x & 31;
    const int64_t row = (int64_t)blockIdx.x * kSoftmaxRows + (threadIdx.x >> 5);
    if (row >= d.B * d.H * d.Sq) return;
    const int64_t i = row % d.Sq, bh = row / d.Sq, h = bh % d.H, b = bh / d.H;
    float *sr = s + row * d.Sk;
    const T *br = bias ? bias + b * d.bias[0] + h * d.bias[1] + i * d.bias[2] : nullptr;
    float m = -INFINITY;
    for (int64_t j = lane; j < d.Sk; j += 32) {
        float v = sr[j];
        if (br) {
            v += to_float(br[j * d.bias[3]]);
            sr[j] = v;
        }
        m = fmaxf(m, v);
    }
    for (int o = 16; o > 0; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (m == -INFINITY) { /* every score -inf: NaN as the fused kernels give, or 0 */
        const float z = d.nan_rows_zero ? 0.0f : __int_as_float(0x7fc00000);
        for (int64_t j = lane; j < d.Sk; j += 32)
            sr[j] = z;
        return;
    }
    float sum = 0.0f;
    for (int64_t j = lane; j < d.Sk; j += 32) {
        const float e = expf(sr[j] - m);
        sr[j] = e;
        sum += e;
    }
    for (int o = 16; o > 0; o >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float inv = 1.0f / sum;
    for (int64_t j = lane; j < d.Sk; j += 32)
        sr[j] *= inv;
}

} // namespace

extern "C" cudaError_t cuk_attention_softmax(cuk_dtype t, const cuk_attention_desc *d, float *s,
                                             const void *bias, cudaStream_t stream)
{
    const int64_t rows = d->B * d->H * d->Sq;
    if (!s || rows < 1 || d->Sk < 1 || (rows + kSoftmaxRows - 1) / kSoftmaxRows > INT32_MAX)
        return cudaErrorInvalidValue;
    dim3 grid((unsigned)((rows + kSoftmaxRows - 1) / kSoftmaxRows));
    CUK_DISPATCH_FP(
        t, T,
        cuk_launch(k_att_softmax<T>, grid, 32 * kSoftmaxRows, 0, stream, *d, s, (const T *)bias));
    return cudaGetLastError();
}

extern "C" size_t cuk_attention_shared_bytes(const cuk_attention_desc *d)
{
    if (d->tc) return tc_bytes(tc_dp(d->D > d->Dv ? d->D : d->Dv), d->qpw, d->tc == 2 ? 4 : 2);
    return (size_t)att_floats(*d, d->qpw) * sizeof(float);
}

/* The tensor-core kernel's code fits the type: 1 fp16 or bf16, 2 fp32
 * (split TF32); 0, the float kernel, fits every type. */
static int tc_type_ok(cuk_dtype t, const cuk_attention_desc *d)
{
    if (d->tc == 1) return t == CUK_DT_F16 || t == CUK_DT_BF16;
    if (d->tc == 2) return t == CUK_DT_F32;
    return d->tc == 0;
}

/* Query rows a block takes. */
static int64_t rows_per_block(const cuk_attention_desc *d)
{
    return d->tc ? 16 * (int64_t)d->qpw : (int64_t)kWarps * d->qpw;
}

extern "C" int cuk_attention_ok(const cuk_attention_desc *d)
{
    int shape = d->B >= 1 && d->H >= 1 && d->Sq >= 1 && d->Sk >= 1 && d->D >= 1 && d->Dv >= 1 &&
                d->D <= kMaxHead && d->Dv <= kMaxHead && d->B * d->H <= INT32_MAX;
    int tiles = d->tc ? (d->tc == 1 || d->tc == 2) && (d->qpw == 1 || d->qpw == 2 || d->qpw == 4) &&
                            d->D <= 128 && d->Dv <= 128 && d->D % 16 == 0 && d->Dv % 16 == 0
                      : d->qpw == 2 || d->qpw == 4 || d->qpw == 8;
    return shape && tiles && (d->Sq + rows_per_block(d) - 1) / rows_per_block(d) <= 65535;
}

extern "C" void cuk_attention_shape(cuk_attention_desc *d, int sm_count, size_t max_shared)
{
    if (sm_count < 1) sm_count = 1;
    int64_t bh = d->B * d->H;
    if (d->tc) { /* warps a block: 2 while 4 would not fill half the device (a block
                  * stages the whole key tile, so fewer than 2 costs more than it gains) */
        int w = 4;
        if (bh * ((d->Sq + 63) / 64) < (int64_t)sm_count / 2) w = 2;
        d->qpw = w;
        return;
    }
    int qpw = 2;
    if (bh * ((d->Sq + 31) / 32) >= 2 * (int64_t)sm_count)
        qpw = 8;
    else if (bh * ((d->Sq + 15) / 16) >= (int64_t)sm_count)
        qpw = 4;
    while (qpw > 2 && (size_t)att_floats(*d, qpw) * sizeof(float) > max_shared)
        qpw /= 2;
    d->qpw = qpw;
}

extern "C" cudaError_t cuk_attention_prepare(cuk_dtype t, const cuk_attention_desc *d)
{
    if (!cuk_attention_ok(d)) return cudaErrorInvalidValue;
    size_t shm = cuk_attention_shared_bytes(d);
    void *fn = nullptr;
    if (!tc_type_ok(t, d)) return cudaErrorInvalidValue;
    CUK_DISPATCH_FP(t, T, fn = any_pick<T>(d));
    return cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm);
}

extern "C" cudaError_t cuk_attention(cuk_dtype t, const cuk_attention_desc *d, const void *q,
                                     const void *k, const void *v, const void *bias, void *o,
                                     cudaStream_t stream)
{
    if (!cuk_attention_ok(d) || !q || !k || !v || !o) return cudaErrorInvalidValue;
    if (!tc_type_ok(t, d)) return cudaErrorInvalidValue;
    int64_t qt = rows_per_block(d);
    dim3 grid((unsigned)(d->B * d->H), (unsigned)((d->Sq + qt - 1) / qt));
    size_t shm = cuk_attention_shared_bytes(d);
    void *fn = nullptr;
    CUK_DISPATCH_FP(t, T, fn = any_pick<T>(d));
    void *args[] = {(void *)d, (void *)&q, (void *)&k, (void *)&v, (void *)&bias, (void *)&o};
    return cuk_launch_args(fn, grid, dim3(d->tc ? 32 * d->qpw : kThreads), shm, stream, args);
}
