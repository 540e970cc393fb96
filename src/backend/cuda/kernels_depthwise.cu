/*
 * kernels_depthwise.cu - a depthwise convolution in NHWC for large maps:
 * four channels a thread and a TH x TW tile of outputs, for the batch-16
 * shapes of MobileNets and EfficientNets and ConvNeXt's 7x7 windows, where
 * the work is bound by memory
 * and k_dw_tile (kernels_conv.cu), one channel a thread, issues too many
 * loads: on an H200 it took 52 us for MobileNetV2's 16x144x56x56 layer
 * where cuDNN's depthwise kernel under PyTorch took 22.
 *
 * A thread holds four neighbouring channels' filters in registers (read
 * once, through shared memory so that the block's read is one coalesced
 * sweep) and walks output tiles with a grid stride, so the filters are
 * read once for many tiles.  Each input row a tile needs is read once, as
 * 16-byte (fp32) or 8-byte (fp16, bf16) vectors, and serves every output
 * row of the tile that covers it.  Threads of a block: channel vectors
 * fastest (a warp reads whole runs of a pixel's channels), then tiles.
 * Accumulation is in float.  The planner times the tile shapes against the
 * other kernels and cuDNN's engines (cuda_conv_graph.c).
 *
 * A prologue activation (pre) is applied to each input value as it is
 * read, before the padding's zeros join them: the activation after the
 * producing 1x1 product then costs no pass of its own (MobileNets' Relu6
 * and HardSwish, which cuBLASLt's epilogues lack).
 */
#include <math.h>
#include <stdint.h>

#include "backend/cuda/kernels_common.cuh"

using namespace cuk;

namespace
{

__device__ __forceinline__ void fma4(float4 &a, float4 x, float4 w)
{
    a.x = fmaf(x.x, w.x, a.x);
    a.y = fmaf(x.y, w.y, a.y);
    a.z = fmaf(x.z, w.z, a.z);
    a.w = fmaf(x.w, w.w, a.w);
}

/* The activation of four values: one copy of ufloat's switch a kernel
 * rather than one an output the tile unrolls. */
__device__ __noinline__ float4 act4(float4 v, cuk_ufn fn, const cuk_ew_params p)
{
    return make_float4(ufloat(fn, v.x, p), ufloat(fn, v.y, p), ufloat(fn, v.z, p),
                       ufloat(fn, v.w, p));
}

/* A prologue activation lives in its own instantiations of the kernel
 * (PRE), in its clamp form (clamp_act, kernels_common.cuh): with the
 * activation's switch, or a call, among the unrolled loads the kernel
 * without a prologue measured 12-15% slower on an H200 too, and the
 * prologue itself twice as slow as its pass. */

/* Channel vectors (four channels) a block holds at most: its filters sit
 * in shared memory once, K * K taps by 4 * this many channels (half as
 * many for windows of more than 25 taps, within the 48 KiB a block has). */
constexpr int kMaxVecs = 64;

__host__ __device__ constexpr int max_vecs(int K)
{
    return K * K > 25 ? kMaxVecs / 2 : kMaxVecs;
}

/* Windows of more than 25 taps (7x7, ConvNeXt's) keep their filters in
 * shared memory, read a tap at a time as one 16-byte vector: 49 float4s
 * in registers spilled, and a tap read serves the tile's whole row. */
__host__ __device__ constexpr bool filters_shared(int K)
{
    return K * K > 25;
}

template <typename T, int K, int S, int TH, int TW, bool PRE>
__global__ void __launch_bounds__(256) k_dw_vec(cuk_dw_desc d, const T *__restrict__ x,
                                                const T *__restrict__ w,
                                                const T *__restrict__ b, T *__restrict__ y,
                                                int act, cuk_ufn fn, cuk_ew_params p, clamp_act pre)
{
    cuk_kernel_enter();
    constexpr int KK = K * K, NR = (TH - 1) * S + K, NI = (TW - 1) * S + K;
    constexpr bool WS = filters_shared(K);
    __shared__ float ws[KK][4 * max_vecs(K)];
    const int C = (int)d.c, H = (int)d.h, W = (int)d.w, OH = (int)d.oh, OW = (int)d.ow;
    const int CV = C / 4;
    const int v0 = blockIdx.x * blockDim.x; /* the block's first channel vector */
    const int nv = min((int)blockDim.x, CV - v0);
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
    /* the block's filters, read in their order ([c][tap], one sweep) */
    for (int k = tid; k < 4 * nv * KK; k += nthreads) {
        const int cl = k / KK, tap = k % KK;
        ws[tap][cl] = to_float(w[(int64_t)(4 * v0 + cl) * KK + tap]);
    }
    __syncthreads();
    if ((int)threadIdx.x >= nv) return;
    const int c = 4 * (v0 + (int)threadIdx.x);
    float4 wr[WS ? 1 : KK];
    if constexpr (!WS) {
#pragma unroll
        for (int t = 0; t < KK; t++)
            wr[t] = *reinterpret_cast<const float4 *>(&ws[t][4 * threadIdx.x]);
    }
    const float4 bias = b ? f4<T>::ld(b + c) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const int tiles_x = (OW + TW - 1) / TW, tiles_y = (OH + TH - 1) / TH;
    const int64_t ntiles = d.n * tiles_y * tiles_x;
    for (int64_t t = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; t < ntiles;
         t += (int64_t)gridDim.y * blockDim.y) {
        const int tx = (int)(t % tiles_x);
        const int64_t r = t / tiles_x;
        const int ty = (int)(r % tiles_y);
        const int64_t n = r / tiles_y;
        const int oy0 = ty * TH, ox0 = tx * TW;
        const int iy0 = oy0 * S - d.ph, ix0 = ox0 * S - d.pw;
        float4 acc[TH][TW];
#pragma unroll
        for (int i = 0; i < TH; i++)
#pragma unroll
            for (int j = 0; j < TW; j++)
                acc[i][j] = bias;
        const T *xn = x + n * H * W * C + c;
#pragma unroll
        for (int i = 0; i < NR; i++) {
            const int iy = iy0 + i;
            if (iy < 0 || iy >= H) continue;
            float4 xin[NI];
#pragma unroll
            for (int k = 0; k < NI; k++) {
                const int ix = ix0 + k;
                xin[k] = ix >= 0 && ix < W ? f4<T>::ld(xn + ((int64_t)iy * W + ix) * C)
                                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if constexpr (PRE) { /* the padding's zeros stay zeros: after it */
                    if (ix >= 0 && ix < W)
                        xin[k] = make_float4(clamp_apply(pre, xin[k].x), clamp_apply(pre, xin[k].y),
                                             clamp_apply(pre, xin[k].z), clamp_apply(pre, xin[k].w));
                }
            }
#pragma unroll
            for (int oy = 0; oy < TH; oy++) {
                const int ky = i - oy * S;
                if (ky < 0 || ky >= K) continue;
#pragma unroll
                for (int kx = 0; kx < K; kx++) {
                    float4 wv;
                    if constexpr (WS)
                        wv = *reinterpret_cast<const float4 *>(&ws[ky * K + kx][4 * threadIdx.x]);
                    else
                        wv = wr[ky * K + kx];
#pragma unroll
                    for (int ox = 0; ox < TW; ox++)
                        fma4(acc[oy][ox], xin[ox * S + kx], wv);
                }
            }
        }
#pragma unroll
        for (int oy = 0; oy < TH; oy++) {
            if (oy0 + oy >= OH) break;
            T *out = y + ((n * OH + oy0 + oy) * OW + ox0) * C + c;
#pragma unroll
            for (int ox = 0; ox < TW; ox++) {
                if (ox0 + ox >= OW) break;
                f4<T>::st(out + (int64_t)ox * C, act ? act4(acc[oy][ox], fn, p) : acc[oy][ox]);
            }
        }
    }
}

/* A depthwise convolution of stride 1 in NHWC whose block stages its input
 * in shared memory: a block is an 8 x 8 tile of outputs by 128 bytes of
 * channels (32 fp32 or 64 fp16/bf16), reads the tile's padded input patch
 * ((8 + K - 1)^2 pixels) once as 16-byte vectors, one coalesced sweep a
 * pixel, and every thread then computes four channels of a 1 x TW row
 * segment from shared memory.  k_dw_vec reads each input row from the
 * caches once for every output row it serves (7 times for a 7x7 window);
 * here the patch's halo is the only re-read.  The padding's zeros, and a
 * prologue activation applied to the values read (PRE), are written into
 * the patch.  Needs channels a multiple of a 16-byte vector and 16-byte
 * aligned x. */
template <typename T, int K, bool PRE>
__global__ void __launch_bounds__(256) k_dw_staged(cuk_dw_desc d, const T *__restrict__ x,
                                                   const T *__restrict__ w,
                                                   const T *__restrict__ b, T *__restrict__ y,
                                                   int act, cuk_ufn fn, cuk_ew_params p,
                                                   clamp_act pre)
{
    cuk_kernel_enter();
    constexpr int CB = 128 / (int)sizeof(T); /* channels a block */
    constexpr int NV = CB / 4;               /* channel vectors: a thread's four channels */
    constexpr int TPY = 256 / NV;            /* threads over the tile */
    constexpr int BH = 8, BW = 8, TW = BH * BW / TPY, SEG = BW / TW;
    constexpr int PH = BH + K - 1, PW = BW + K - 1, KK = K * K;
    constexpr int EPV = 16 / (int)sizeof(T), CH = CB / EPV; /* a patch pixel's vectors */
    __shared__ __align__(16) T xs[PH * PW][CB];
    __shared__ __align__(16) float ws[KK][CB];
    const int C = (int)d.c, H = (int)d.h, W = (int)d.w, OH = (int)d.oh, OW = (int)d.ow;
    const int c0 = blockIdx.x * CB;
    const int tiles_w = (OW + BW - 1) / BW;
    const int oy0 = (int)(blockIdx.y / tiles_w) * BH, ox0 = (int)(blockIdx.y % tiles_w) * BW;
    const int64_t n = blockIdx.z;
    const int tid = threadIdx.x;
    for (int k = tid; k < CB * KK; k += 256) { /* the filters in their order, [c][tap] */
        const int cl = k / KK, tap = k % KK;
        ws[tap][cl] = c0 + cl < C ? to_float(w[(int64_t)(c0 + cl) * KK + tap]) : 0.0f;
    }
    const int iy0 = oy0 - (int)d.ph, ix0 = ox0 - (int)d.pw;
    for (int k = tid; k < PH * PW * CH; k += 256) {
        const int px = k / CH, cv = k % CH;
        const int iy = iy0 + px / PW, ix = ix0 + px % PW, c = c0 + cv * EPV;
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (iy >= 0 && iy < H && ix >= 0 && ix < W && c < C) {
            v = *reinterpret_cast<const uint4 *>(x + ((n * H + iy) * W + ix) * C + c);
            if constexpr (PRE) { /* on values read, not on the padding's zeros */
                T *e = reinterpret_cast<T *>(&v);
#pragma unroll
                for (int j = 0; j < EPV; j++)
                    e[j] = from_float<T>(clamp_apply(pre, to_float(e[j])));
            }
        }
        *reinterpret_cast<uint4 *>(&xs[px][cv * EPV]) = v;
    }
    __syncthreads();
    const int cl = 4 * (tid % NV), sy = tid / NV;
    const int orow = sy / SEG, ocol = (sy % SEG) * TW;
    const int oy = oy0 + orow;
    if (c0 + cl >= C || oy >= OH) return;
    const float4 bias = b ? f4<T>::ld(b + c0 + cl) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float4 acc[TW];
#pragma unroll
    for (int j = 0; j < TW; j++)
        acc[j] = bias;
#pragma unroll
    for (int ky = 0; ky < K; ky++) {
        float4 xin[TW + K - 1];
#pragma unroll
        for (int i = 0; i < TW + K - 1; i++)
            xin[i] = f4<T>::ld(&xs[(orow + ky) * PW + ocol + i][cl]);
#pragma unroll
        for (int kx = 0; kx < K; kx++) {
            const float4 wv = *reinterpret_cast<const float4 *>(&ws[ky * K + kx][cl]);
#pragma unroll
            for (int j = 0; j < TW; j++)
                fma4(acc[j], xin[j + kx], wv);
        }
    }
    T *out = y + ((n * OH + oy) * OW + ox0 + ocol) * C + c0 + cl;
#pragma unroll
    for (int j = 0; j < TW; j++) {
        if (ox0 + ocol + j >= OW) break;
        f4<T>::st(out + (int64_t)j * C, act ? act4(acc[j], fn, p) : acc[j]);
    }
}

/* k_dw_staged's grid: channel blocks, 8 x 8 tiles, images (at most 65535
 * of each of the last two); stride 1 and a multiple of eight channels (a
 * 16-byte vector of 16-bit values). */
bool staged_fits(const cuk_dw_desc *d)
{
    return d->sh == 1 && d->c % 8 == 0 && d->n <= 65535 &&
           ((d->oh + 7) / 8) * ((d->ow + 7) / 8) <= 65535;
}

template <typename T>
cudaError_t dw_staged_launch(const cuk_dw_desc *d, const T *x, const T *w, const T *b, T *y,
                             int act, cuk_ufn fn, const cuk_ew_params &p, const clamp_act *pre,
                             cudaStream_t stream)
{
    constexpr int CB = 128 / (int)sizeof(T), EPV = 16 / (int)sizeof(T);
    if (!staged_fits(d) || d->c % EPV || (uintptr_t)x % 16) return cudaErrorNotSupported;
    const int64_t tiles = ((d->oh + 7) / 8) * ((d->ow + 7) / 8);
    const dim3 grid((unsigned)((d->c + CB - 1) / CB), (unsigned)tiles, (unsigned)d->n);
    const clamp_act none = {1.0f, 0.0f, 0.0f, 0.0f, 0};
#define CUK_DW_STAGED(KK)                                                                          \
    if (d->kh == KK) {                                                                             \
        if (pre)                                                                                   \
            cuk_launch(k_dw_staged<T, KK, true>, grid, 256, 0, stream, *d, x, w, b, y, act, fn, p, \
                       *pre);                                                                      \
        else                                                                                       \
            cuk_launch(k_dw_staged<T, KK, false>, grid, 256, 0, stream, *d, x, w, b, y, act, fn,   \
                       p, none);                                                                   \
        return cudaGetLastError();                                                                 \
    }
    CUK_DW_STAGED(3)
    CUK_DW_STAGED(5)
    CUK_DW_STAGED(7)
#undef CUK_DW_STAGED
    return cudaErrorNotSupported;
}

/* Blocks a launch should fill the GPU with: eight an SM. */
int64_t vec_target_blocks()
{
    return 8 * (int64_t)sm_count();
}

template <typename T>
cudaError_t dw_vec_launch(const cuk_dw_desc *d, const T *x, const T *w, const T *b, T *y, int act,
                          cuk_ufn fn, const cuk_ew_params &p, const clamp_act *pre,
                          cudaStream_t stream)
{
    const int K = d->kh, S = d->sh, TH = d->tile_h, TW = d->tile_w;
    if (TH == 8 && TW == 8) return dw_staged_launch<T>(d, x, w, b, y, act, fn, p, pre, stream);
    const int CV = (int)(d->c / 4);
    const clamp_act none = {1.0f, 0.0f, 0.0f, 0.0f, 0};
    /* channel vectors a block: the fewest blocks across the channels, then
     * as even a split as that allows; the rest of the 256 threads go to tiles */
    const int mv = max_vecs(K);
    const int bx = (CV + mv - 1) / mv;
    const int dx = (CV + bx - 1) / bx, dy = dx >= 256 ? 1 : 256 / dx;
    const int64_t ntiles = d->n * ((d->oh + TH - 1) / TH) * ((d->ow + TW - 1) / TW);
    int64_t gy = (ntiles + dy - 1) / dy;
    const int64_t want = (vec_target_blocks() + bx - 1) / bx;
    if (gy > want) gy = want;
    if (gy > 65535) gy = 65535;
    const dim3 grid((unsigned)bx, (unsigned)gy), block((unsigned)dx, (unsigned)dy);
#define CUK_DW_VEC(KK, SS, HH, WW)                                                                 \
    if (K == KK && S == SS && TH == HH && TW == WW) {                                              \
        if (pre)                                                                                   \
            cuk_launch(k_dw_vec<T, KK, SS, HH, WW, true>, grid, block, 0, stream, *d, x, w, b, y,  \
                       act, fn, p, *pre);                                                          \
        else                                                                                       \
            cuk_launch(k_dw_vec<T, KK, SS, HH, WW, false>, grid, block, 0, stream, *d, x, w, b, y, \
                       act, fn, p, none);                                                          \
        return cudaGetLastError();                                                                 \
    }
    CUK_DW_VEC(3, 1, 1, 4)
    CUK_DW_VEC(3, 1, 2, 2)
    CUK_DW_VEC(3, 1, 2, 4)
    CUK_DW_VEC(3, 2, 1, 2)
    CUK_DW_VEC(3, 2, 2, 2)
    CUK_DW_VEC(5, 1, 1, 2)
    CUK_DW_VEC(5, 1, 2, 2)
    CUK_DW_VEC(5, 2, 1, 1)
    CUK_DW_VEC(5, 2, 1, 2)
    CUK_DW_VEC(7, 1, 1, 4)
    CUK_DW_VEC(7, 1, 2, 4)
    CUK_DW_VEC(7, 1, 2, 8)
    CUK_DW_VEC(7, 1, 4, 4)
#undef CUK_DW_VEC
    return cudaErrorNotSupported;
}

} /* namespace */

/* The tile shapes k_dw_vec is built for, by window and stride; the planner
 * times those of a layer's window (cuk_depthwise_vec_tiles).  8 x 8 names
 * k_dw_staged (stride 1, channels a multiple of 8). */
static const struct {
    int k, s, th, tw;
} vec_tiles[] = {{3, 1, 1, 4}, {3, 1, 2, 2}, {3, 1, 2, 4}, {3, 2, 1, 2}, {3, 2, 2, 2},
                 {5, 1, 1, 2}, {5, 1, 2, 2}, {5, 2, 1, 1}, {5, 2, 1, 2}, {7, 1, 1, 4},
                 {7, 1, 2, 4}, {7, 1, 2, 8}, {7, 1, 4, 4}, {3, 1, 8, 8}, {5, 1, 8, 8},
                 {7, 1, 8, 8}};

extern "C" int cuk_depthwise_vec_tiles(const cuk_dw_desc *d, int staged, int max, int *th,
                                       int *tw)
{
    if (!d || d->cg != 1 || d->m != d->c || d->c % 4 || d->kh != d->kw || d->sh != d->sw ||
        d->dh != 1 || d->dw != 1 || d->c > INT32_MAX / 2 || d->h * d->w > INT32_MAX / 2 ||
        d->oh * d->ow > INT32_MAX / 2)
        return 0;
    int n = 0;
    for (size_t k = 0; k < sizeof(vec_tiles) / sizeof(vec_tiles[0]); k++) {
        if (vec_tiles[k].k != d->kh || vec_tiles[k].s != d->sh) continue;
        if (vec_tiles[k].th == 8 && (!staged || !staged_fits(d))) continue;
        if (n < max) {
            th[n] = vec_tiles[k].th;
            tw[n] = vec_tiles[k].tw;
        }
        n++;
    }
    return n;
}

extern "C" cudaError_t cuk_depthwise_vec(cuk_type t, const cuk_dw_desc *d, const void *x,
                                         const void *w, const void *bias, int act, cuk_ufn fn,
                                         const cuk_ew_params *p, int pre, cuk_ufn pre_fn,
                                         const cuk_ew_params *pre_p, void *y,
                                         cudaStream_t stream)
{
    int th[8], tw[8];
    const int n = cuk_depthwise_vec_tiles(d, 1, 8, th, tw);
    bool known = false;
    for (int k = 0; k < n && k < 8; k++)
        known = known || (th[k] == d->tile_h && tw[k] == d->tile_w);
    if (!known) return cudaErrorNotSupported;
    const size_t align = t == CUK_F32 ? 16 : 8;
    if ((uintptr_t)x % align || (uintptr_t)y % align || (bias && (uintptr_t)bias % align))
        return cudaErrorNotSupported;
    if (d->n * d->oh * d->ow == 0) return cudaSuccess;
    cuk_ew_params none = {0.0f, 0.0f, 0.0f, 0, 0};
    const cuk_ew_params &pp = p ? *p : none;
    clamp_act in;
    if (pre && !clamp_act_of(pre_fn, pre_p ? *pre_p : none, &in))
        return cudaErrorNotSupported; /* a prologue it has no inline form for */
    CUK_DISPATCH_FP((cuk_dtype)t, T, {
        return dw_vec_launch<T>(d, (const T *)x, (const T *)w, (const T *)bias, (T *)y, act, fn,
                                pp, pre ? &in : NULL, stream);
    });
    return cudaErrorInvalidValue;
}

extern "C" int cuk_depthwise_vec_pre_ok(cuk_ufn fn)
{
    const cuk_ew_params none = {0.0f, 0.0f, 0.0f, 0, 0};
    return clamp_act_of(fn, none, NULL);
}
