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
 */
#include <math.h>

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
                s[r][0] = fmaf(x.x, a0.x, fmaf(x.y, a0.y, fmaf(x.z, a0.z, fmaf(x.w, a0.w, s[r][0]))));
                s[r][1] = fmaf(x.x, a1.x, fmaf(x.y, a1.y, fmaf(x.z, a1.z, fmaf(x.w, a1.w, s[r][1]))));
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
                    acc[r][c] = fmaf(p[r].x, v0, fmaf(p[r].y, v1, fmaf(p[r].z, v2, fmaf(p[r].w, v3, acc[r][c]))));
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
#define ATT_NV(Q)                                                                                  \
    (nv == 2 ? att_fn<T, Q, 2>() : nv == 4 ? att_fn<T, Q, 4>() : att_fn<T, Q, 8>())
    return qpw == 8 ? ATT_NV(8) : qpw == 4 ? ATT_NV(4) : ATT_NV(2);
#undef ATT_NV
}

} // namespace

extern "C" size_t cuk_attention_shared_bytes(const cuk_attention_desc *d)
{
    return (size_t)att_floats(*d, d->qpw) * sizeof(float);
}

extern "C" int cuk_attention_ok(const cuk_attention_desc *d)
{
    return d->B >= 1 && d->H >= 1 && d->Sq >= 1 && d->Sk >= 1 && d->D >= 1 && d->Dv >= 1 &&
           d->D <= kMaxHead && d->Dv <= kMaxHead && d->B * d->H <= INT32_MAX &&
           (d->qpw == 2 || d->qpw == 4 || d->qpw == 8) &&
           (d->Sq + kWarps * d->qpw - 1) / (kWarps * d->qpw) <= 65535;
}

extern "C" void cuk_attention_shape(cuk_attention_desc *d, int sm_count, size_t max_shared)
{
    if (sm_count < 1) sm_count = 1;
    int64_t bh = d->B * d->H;
    int qpw = 2;
    if (bh * ((d->Sq + 31) / 32) >= 2 * (int64_t)sm_count) qpw = 8;
    else if (bh * ((d->Sq + 15) / 16) >= (int64_t)sm_count) qpw = 4;
    while (qpw > 2 && (size_t)att_floats(*d, qpw) * sizeof(float) > max_shared)
        qpw /= 2;
    d->qpw = qpw;
}

extern "C" cudaError_t cuk_attention_prepare(cuk_dtype t, const cuk_attention_desc *d)
{
    if (!cuk_attention_ok(d)) return cudaErrorInvalidValue;
    size_t shm = cuk_attention_shared_bytes(d);
    void *fn = nullptr;
    CUK_DISPATCH_FP(t, T, fn = att_pick<T>(d->qpw, d->Dv));
    return cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm);
}

extern "C" cudaError_t cuk_attention(cuk_dtype t, const cuk_attention_desc *d, const void *q,
                                     const void *k, const void *v, const void *bias, void *o,
                                     cudaStream_t stream)
{
    if (!cuk_attention_ok(d) || !q || !k || !v || !o) return cudaErrorInvalidValue;
    int qt = kWarps * d->qpw;
    dim3 grid((unsigned)(d->B * d->H), (unsigned)((d->Sq + qt - 1) / qt));
    size_t shm = cuk_attention_shared_bytes(d);
    void *fn = nullptr;
    CUK_DISPATCH_FP(t, T, fn = att_pick<T>(d->qpw, d->Dv));
    void *args[] = {(void *)d, (void *)&q, (void *)&k, (void *)&v, (void *)&bias, (void *)&o};
    return cudaLaunchKernel(fn, grid, dim3(kThreads), args, shm, stream);
}
