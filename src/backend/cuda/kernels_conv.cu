/*
 * kernels_conv.cu - depthwise and grouped convolutions with few channels
 * a group (kernels.h): every channel (or group) convolved with its own
 * filters, the bias and an activation applied before the one store, in
 * NHWC or NCHW.  cuDNN's engines for grouped convolutions of RegNet's
 * shapes (24 channels a group) take 60 us where this takes a fraction;
 * the planner times both and keeps the faster (cuda_conv_graph.c).
 *
 * One thread an output element.  In NHWC the channel is the fastest index,
 * so a warp reads 32 neighbouring channels of one pixel (one transaction
 * per tap) and the filter taps of neighbouring channels sit kh * kw apart
 * (served from L1 after the first pixel).  In NCHW the output column is the
 * fastest index and a warp reads a row of one channel.  Accumulation is in
 * float for every storage type.
 *
 * Also the residual epilogue of a convolution (cuk_conv_residual): its
 * output plus the bias (when cuDNN's graph left it out) and the residual,
 * then the activation, in one pass.
 */
#include <stdint.h>

#include "backend/cuda/kernels_common.cuh"

using namespace cuk;

namespace
{

/* Output element i of [n, c, oh, ow] (stored NHWC or NCHW) as its indices. */
template <bool NHWC, typename I>
__device__ __forceinline__ void unflatten(I i, I C, I OH, I OW, I &c, I &oy, I &ox, I &n)
{
    if (NHWC) {
        c = i % C;
        i /= C;
        ox = i % OW;
        i /= OW;
        oy = i % OH;
        n = i / OH;
    } else {
        ox = i % OW;
        i /= OW;
        oy = i % OH;
        i /= OH;
        c = i % C;
        n = i / C;
    }
}

/* The sum over one group's cg input channels at one tap: x and w hold
 * them contiguous (NHWC); float4 loads where VEC (cg a multiple of 4, both
 * 16-byte aligned). */
template <typename T, bool VEC>
__device__ __forceinline__ float group_dot(const T *__restrict__ x, const T *__restrict__ w, int cg)
{
    float acc = 0.0f;
    for (int ci = 0; ci < cg; ci++)
        acc += to_float(x[ci]) * to_float(w[ci]);
    return acc;
}

template <>
__device__ __forceinline__ float group_dot<float, true>(const float *__restrict__ x,
                                                        const float *__restrict__ w, int cg)
{
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    const float4 *w4 = reinterpret_cast<const float4 *>(w);
    float acc = 0.0f;
    for (int ci = 0; ci < cg / 4; ci++) {
        const float4 a = x4[ci], b = __ldg(&w4[ci]);
        acc += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
    }
    return acc;
}

/* A grouped convolution, one thread an output element: the group's cg
 * input channels at every tap (a depthwise one has one: cg 1).  In NHWC
 * the output channel is the fastest index, so a warp reads neighbouring
 * channels of one pixel and the threads that share a group read the same
 * input values (broadcast), each its own filter, contiguous over taps and
 * channels.  Index arithmetic in I: int32_t when every offset of x, w and
 * y fits (the divisions of a 64-bit index cost several times a 32-bit
 * one's). */
template <typename T, bool NHWC, bool VEC, typename I>
__global__ void k_grouped(cuk_dw_desc d, const T *__restrict__ x, const T *__restrict__ w,
                          const T *__restrict__ b, T *__restrict__ y, int act, cuk_ufn fn,
                          cuk_ew_params p)
{
    cuk_kernel_enter();
    const I C = (I)d.c, M = (I)d.m, H = (I)d.h, W = (I)d.w, OH = (I)d.oh, OW = (I)d.ow;
    const I total = (I)d.n * M * OH * OW;
    const I mg = M / (C / d.cg), cg = d.cg;
    const I plane = H * W, taps = (I)d.kh * d.kw;
    for (I i = (I)(blockIdx.x * blockDim.x + threadIdx.x); i < total;
         i += (I)(gridDim.x * blockDim.x)) {
        I oc, ox, oy, n;
        unflatten<NHWC>(i, M, OH, OW, oc, oy, ox, n);
        const I c0 = (oc / mg) * cg;
        float acc = b ? to_float(b[oc]) : 0.0f;
        const I y0 = oy * d.sh - d.ph, x0 = ox * d.sw - d.pw;
        for (int ky = 0; ky < d.kh; ky++) {
            const I iy = y0 + (I)ky * d.dh;
            if (iy < 0 || iy >= H) continue;
            for (int kx = 0; kx < d.kw; kx++) {
                const I ix = x0 + (I)kx * d.dw;
                if (ix < 0 || ix >= W) continue;
                if (NHWC) {
                    acc += group_dot<T, VEC>(x + ((n * H + iy) * W + ix) * C + c0,
                                             w + ((oc * d.kh + ky) * d.kw + kx) * cg, d.cg);
                } else {
                    const T *xp = x + (n * C + c0) * plane + iy * W + ix;
                    const T *wp = w + oc * cg * taps + ky * d.kw + kx;
                    for (I ci = 0; ci < cg; ci++)
                        acc += to_float(xp[ci * plane]) * to_float(wp[ci * taps]);
                }
            }
        }
        if (act) acc = ufloat(fn, acc, p);
        y[i] = from_float<T>(acc);
    }
}

/* A depthwise convolution in NHWC (one filter a channel, dilation 1, a
 * square K x K window, stride S), tiled: a block is 32 channels (a warp
 * reads 32 neighbouring channels of one pixel) by 8 output strips; a
 * thread computes TW neighbouring outputs of one row and one channel, so
 * each input value it loads serves up to K of them from registers, and the
 * block's filters sit in shared memory tap by tap (a warp reads one line).
 * The planner times it against cuDNN's engines like the generic kernel. */
template <typename T, int K, int S, int TW>
__global__ void __launch_bounds__(256) k_dw_tile(cuk_dw_desc d, const T *__restrict__ x,
                                                 const T *__restrict__ w,
                                                 const T *__restrict__ b, T *__restrict__ y,
                                                 int act, cuk_ufn fn, cuk_ew_params p)
{
    cuk_kernel_enter();
    constexpr int NI = (TW - 1) * S + K;
    __shared__ float ws[K * K][32];
    const int C = (int)d.c, H = (int)d.h, W = (int)d.w, OH = (int)d.oh, OW = (int)d.ow;
    const int c0 = blockIdx.x * 32;
    const int tid = threadIdx.y * 32 + threadIdx.x;
    for (int k = tid; k < 32 * K * K; k += 256) {
        const int cl = k / (K * K), tap = k % (K * K);
        ws[tap][cl] = c0 + cl < C ? to_float(w[(int64_t)(c0 + cl) * K * K + tap]) : 0.0f;
    }
    __syncthreads();
    const int c = c0 + threadIdx.x;
    const int strips = (OW + TW - 1) / TW;
    const int64_t tile = (int64_t)blockIdx.y * 8 + threadIdx.y;
    if (c >= C || tile >= d.n * OH * strips) return;
    const int sx = (int)(tile % strips);
    const int64_t r = tile / strips;
    const int oy = (int)(r % OH);
    const int64_t n = r / OH;
    const int ox0 = sx * TW;
    const float bias = b ? to_float(b[c]) : 0.0f;
    float acc[TW];
#pragma unroll
    for (int j = 0; j < TW; j++)
        acc[j] = bias;
    const int y0 = oy * S - d.ph, x0 = ox0 * S - d.pw;
#pragma unroll
    for (int ky = 0; ky < K; ky++) {
        const int iy = y0 + ky;
        if (iy < 0 || iy >= H) continue;
        const T *row = x + ((n * H + iy) * W) * C + c;
        float xin[NI];
#pragma unroll
        for (int i = 0; i < NI; i++) {
            const int ix = x0 + i;
            xin[i] = ix >= 0 && ix < W ? to_float(row[(int64_t)ix * C]) : 0.0f;
        }
#pragma unroll
        for (int kx = 0; kx < K; kx++) {
            const float wv = ws[ky * K + kx][threadIdx.x];
#pragma unroll
            for (int j = 0; j < TW; j++)
                acc[j] += xin[j * S + kx] * wv;
        }
    }
    T *out = y + ((n * OH + oy) * OW + ox0) * C + c;
#pragma unroll
    for (int j = 0; j < TW; j++) {
        if (ox0 + j >= OW) break;
        const float v = act ? ufloat(fn, acc[j], p) : acc[j];
        out[(int64_t)j * C] = from_float<T>(v);
    }
}

/* Blocks a launch should fill the GPU with: two an SM. */
static int64_t dw_target_blocks()
{
    return 2 * (int64_t)sm_count();
}

/* Launches k_dw_tile for the shapes it has (1 when launched).  A thread
 * takes d->tile_w outputs of a row, or (tile_w 0) 4 where that still gives
 * the GPU two blocks an SM, else 2 or 1: late stages of MobileNets (14x14
 * and 7x7 maps at batch 1) would otherwise run on fewer blocks than the
 * GPU has SMs.  tile_w -1 asks for the generic kernel. */
template <typename T>
bool dw_tile_launch(const cuk_dw_desc *d, const T *x, const T *w, const T *b, T *y, int act,
                    cuk_ufn fn, const cuk_ew_params &p, cudaStream_t stream)
{
    if (d->cg != 1 || d->m != d->c || d->kh != d->kw || d->sh != d->sw || d->dh != 1 ||
        d->dw != 1 || d->c > INT32_MAX / 2 || d->h * d->w > INT32_MAX / 2 ||
        d->oh * d->ow > INT32_MAX / 2)
        return false;
    const int K = d->kh, S = d->sh;
    const int64_t cblocks = (d->c + 31) / 32, target = dw_target_blocks();
    if (d->tile_w < 0 || d->tile_w > 8 || (d->tile_w & (d->tile_w - 1))) return false;
    int TW = d->tile_w;
    if (TW == 0) {
        TW = 4;
        while (TW > 1 && cblocks * ((d->n * d->oh * ((d->ow + TW - 1) / TW) + 7) / 8) < target)
            TW /= 2;
    }
    const int64_t tiles = d->n * d->oh * ((d->ow + TW - 1) / TW);
    if ((tiles + 7) / 8 > 65535) return false;
    const dim3 grid((unsigned)cblocks, (unsigned)((tiles + 7) / 8)), block(32, 8);
#define CUK_DW_TILE(KK, SS, TT)                                                                    \
    if (K == KK && S == SS && TW == TT) {                                                          \
        cuk_launch(k_dw_tile<T, KK, SS, TT>, grid, block, 0, stream, *d, x, w, b, y, act, fn, p);  \
        return true;                                                                               \
    }
#define CUK_DW_TILES(KK, SS)                                                                       \
    CUK_DW_TILE(KK, SS, 8)                                                                         \
    CUK_DW_TILE(KK, SS, 4)                                                                         \
    CUK_DW_TILE(KK, SS, 2)                                                                         \
    CUK_DW_TILE(KK, SS, 1)
    CUK_DW_TILES(3, 1)
    CUK_DW_TILES(3, 2)
    CUK_DW_TILES(5, 1)
    CUK_DW_TILES(5, 2)
    CUK_DW_TILES(7, 1)
    CUK_DW_TILES(7, 2)
#undef CUK_DW_TILES
#undef CUK_DW_TILE
    return false;
}

/* Sums each of TW values over the block's channels (every thread of the
 * block holds one channel's): part is the block's scratch, a row a warp;
 * every thread gets the sums.  Two barriers, so part may be reused. */
struct sum_op {
    __device__ float operator()(float a, float b) const { return a + b; }
};

template <int TW>
__device__ __forceinline__ void channel_sums(const float (&v)[TW], float (&part)[32][TW],
                                             float (&out)[TW])
{
#pragma unroll
    for (int j = 0; j < TW; j++) {
        const float s = warp_reduce(v[j], sum_op());
        if (threadIdx.x == 0) part[threadIdx.y][j] = s;
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < TW; j++) {
        float s = 0.0f;
        for (int k = 0; k < (int)blockDim.y; k++)
            s += part[k][j];
        out[j] = s;
    }
    __syncthreads();
}

/* A depthwise convolution in NHWC (square K x K window, stride S, dilation
 * 1) and the LayerNormalization over the channels of each output pixel
 * after it (ConvNeXt's block start), in one pass: a block holds every
 * channel of TW neighbouring outputs of one row (a warp 32 channels, up to
 * 32 warps), a thread TW outputs of one channel as k_dw_tile computes
 * them, in float.  The block then sums each pixel's channels twice, the
 * mean and then the squared deviations from it (the two-pass variance, as
 * cuk_layernorm), and writes (v - mean) / sqrt(var + eps) * g + be.  The
 * filters are read from global memory through the cache: a block reads
 * each of its channels' K * K taps once.  (Copying them into shared memory
 * first, one coalesced sweep a block, measured slower on an H200: 13.1
 * against 11.3 us at ConvNeXt-T's 56x56x96.) */
template <typename T, int K, int S, int TW>
__global__ void __launch_bounds__(1024) k_dw_ln(cuk_dw_desc d, const T *__restrict__ x,
                                                const T *__restrict__ w, const T *__restrict__ b,
                                                const T *__restrict__ g,
                                                const T *__restrict__ be, float eps,
                                                T *__restrict__ y)
{
    cuk_kernel_enter();
    constexpr int NI = (TW - 1) * S + K;
    __shared__ float part[32][TW];
    const int C = (int)d.c, H = (int)d.h, W = (int)d.w, OH = (int)d.oh, OW = (int)d.ow;
    const int c = threadIdx.y * 32 + threadIdx.x;
    const bool on = c < C;
    const int strips = (OW + TW - 1) / TW;
    const int64_t tile = blockIdx.x;
    const int sx = (int)(tile % strips);
    const int64_t r = tile / strips;
    const int oy = (int)(r % OH);
    const int64_t n = r / OH;
    const int ox0 = sx * TW;
    const float bias = on && b ? to_float(b[c]) : 0.0f;
    float acc[TW];
#pragma unroll
    for (int j = 0; j < TW; j++)
        acc[j] = bias;
    if (on) {
        const T *wc = w + (int64_t)c * K * K;
        const int y0 = oy * S - d.ph, x0 = ox0 * S - d.pw;
#pragma unroll
        for (int ky = 0; ky < K; ky++) {
            const int iy = y0 + ky;
            if (iy < 0 || iy >= H) continue;
            const T *row = x + ((n * H + iy) * W) * C + c;
            float xin[NI];
#pragma unroll
            for (int i = 0; i < NI; i++) {
                const int ix = x0 + i;
                xin[i] = ix >= 0 && ix < W ? to_float(row[(int64_t)ix * C]) : 0.0f;
            }
#pragma unroll
            for (int kx = 0; kx < K; kx++) {
                const float wv = to_float(__ldg(&wc[ky * K + kx]));
#pragma unroll
                for (int j = 0; j < TW; j++)
                    acc[j] += xin[j * S + kx] * wv;
            }
        }
    }
    float v[TW], sum[TW];
#pragma unroll
    for (int j = 0; j < TW; j++)
        v[j] = on ? acc[j] : 0.0f;
    channel_sums<TW>(v, part, sum);
#pragma unroll
    for (int j = 0; j < TW; j++) {
        acc[j] -= sum[j] / (float)C;
        v[j] = on ? acc[j] * acc[j] : 0.0f;
    }
    channel_sums<TW>(v, part, sum);
    if (!on) return;
    const float gc = to_float(g[c]), bc = be ? to_float(be[c]) : 0.0f;
    T *out = y + ((n * OH + oy) * OW + ox0) * C + c;
#pragma unroll
    for (int j = 0; j < TW; j++) {
        if (ox0 + j >= OW) break;
        const float rstd = rsqrtf(sum[j] / (float)C + eps);
        out[(int64_t)j * C] = from_float<T>(acc[j] * rstd * gc + bc);
    }
}

/* Launches k_dw_ln for the shapes it has (1 when launched): a thread takes
 * d->tile_w outputs of a row, or (tile_w 0) 4 where that still gives the
 * GPU two blocks an SM, else 2 or 1. */
template <typename T>
bool dw_ln_launch(const cuk_dw_desc *d, const T *x, const T *w, const T *b, const T *g,
                  const T *be, float eps, T *y, cudaStream_t stream)
{
    if (!cuk_depthwise_ln_fits(d)) return false;
    const int K = d->kh, S = d->sh;
    int TW = d->tile_w;
    if (TW == 0) {
        TW = 4;
        while (TW > 1 && d->n * d->oh * ((d->ow + TW - 1) / TW) < dw_target_blocks())
            TW /= 2;
    }
    const int64_t tiles = d->n * d->oh * ((d->ow + TW - 1) / TW);
    if (tiles > INT32_MAX) return false;
    const dim3 grid((unsigned)tiles), block(32, (unsigned)((d->c + 31) / 32));
#define CUK_DW_LN(KK, SS, TT)                                                                      \
    if (K == KK && S == SS && TW == TT) {                                                          \
        cuk_launch(k_dw_ln<T, KK, SS, TT>, grid, block, 0, stream, *d, x, w, b, g, be, eps, y);    \
        return true;                                                                               \
    }
#define CUK_DW_LNS(KK, SS)                                                                         \
    CUK_DW_LN(KK, SS, 8)                                                                           \
    CUK_DW_LN(KK, SS, 4)                                                                           \
    CUK_DW_LN(KK, SS, 2)                                                                           \
    CUK_DW_LN(KK, SS, 1)
    CUK_DW_LNS(3, 1)
    CUK_DW_LNS(3, 2)
    CUK_DW_LNS(5, 1)
    CUK_DW_LNS(5, 2)
    CUK_DW_LNS(7, 1)
    CUK_DW_LNS(7, 2)
#undef CUK_DW_LNS
#undef CUK_DW_LN
    return false;
}

template <typename T, typename I>
__global__ void k_conv_residual(I n, I C, I cstride, const T *__restrict__ b,
                                const T *__restrict__ r, T *__restrict__ y, int act, cuk_ufn fn,
                                cuk_ew_params p)
{
    cuk_kernel_enter();
    for (I i = (I)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += (I)(gridDim.x * blockDim.x)) {
        float v = to_float(y[i]) + to_float(r[i]);
        if (b) v += to_float(b[(i / cstride) % C]);
        if (act) v = ufloat(fn, v, p);
        y[i] = from_float<T>(v);
    }
}

/* The columns of a grouped convolution's product (cuk_im2col): thread
 * (g, p, ci) gathers input channel ci of group g at every tap of output
 * pixel p0 + p into col[g][p][k], k = tap * cg + ci (TAPS_OUTER, filters
 * stored [m, kh, kw, cg]) or ci * taps + tap (filters [m, cg, kh, kw]),
 * zero where the tap falls in the padding.  Neighbouring threads take
 * neighbouring channels of one pixel: a warp's loads at one tap are one
 * run of NHWC memory (and so are its stores with TAPS_OUTER). */
template <typename T, bool TAPS_OUTER, typename I>
__global__ void k_im2col(cuk_dw_desc d, const T *__restrict__ x, T *__restrict__ col, I p0, I pc)
{
    cuk_kernel_enter();
    const I cg = d.cg, taps = (I)d.kh * d.kw, G = d.c / d.cg;
    const I total = G * pc * cg;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (I)gridDim.x * blockDim.x) {
        const I ci = i % cg, rest = i / cg;
        const I p = rest % pc, g = rest / pc;
        I q = p0 + p;
        const I ox = q % d.ow;
        q /= d.ow;
        const I oy = q % d.oh, n = q / d.oh;
        const T *xn = x + n * d.h * d.w * d.c + g * cg + ci;
        T *out = col + (g * pc + p) * cg * taps + (TAPS_OUTER ? ci : ci * taps);
        const I step = TAPS_OUTER ? cg : 1;
        for (int ky = 0; ky < d.kh; ky++) {
            const I iy = oy * d.sh - d.ph + (I)ky * d.dh;
            const bool row = iy >= 0 && iy < d.h;
            for (int kx = 0; kx < d.kw; kx++) {
                const I ix = ox * d.sw - d.pw + (I)kx * d.dw;
                out[(ky * d.kw + kx) * step] = row && ix >= 0 && ix < d.w
                                                   ? xn[(iy * d.w + ix) * d.c]
                                                   : from_float<T>(0.0f);
            }
        }
    }
}

} // namespace

extern "C" int cuk_depthwise_ln_fits(const cuk_dw_desc *d)
{
    if (!d || d->cg != 1 || d->m != d->c || d->c < 1 || d->c > 1024 || d->kh != d->kw ||
        (d->kh != 3 && d->kh != 5 && d->kh != 7) || d->sh != d->sw || d->sh < 1 || d->sh > 2 ||
        d->dh != 1 || d->dw != 1 || d->h * d->w > INT32_MAX / 2 ||
        d->oh * d->ow > INT32_MAX / 2 || d->tile_w < 0 || d->tile_w > 8 ||
        (d->tile_w & (d->tile_w - 1)))
        return 0;
    return 1;
}

extern "C" cudaError_t cuk_conv_residual(cuk_type t, int64_t n, int64_t C, int64_t cstride,
                                         const void *bias, const void *r, int act, cuk_ufn fn,
                                         const cuk_ew_params *p, void *y, cudaStream_t stream)
{
    if (n < 0 || C <= 0 || cstride <= 0 || !r || !y) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    cuk_ew_params none = {0.0f, 0.0f, 0.0f, 0, 0};
    const cuk_ew_params &pp = p ? *p : none;
    const unsigned grid = grid_for(n);
    const bool narrow = n < ((int64_t)1 << 30) && (int64_t)grid * kThreads < ((int64_t)1 << 30);
    CUK_DISPATCH_FP((cuk_dtype)t, T, {
        if (narrow)
            cuk_launch(k_conv_residual<T, int32_t>, grid, kThreads, 0, stream, (int32_t)n,
                       (int32_t)C, (int32_t)cstride, (const T *)bias, (const T *)r, (T *)y, act, fn,
                       pp);
        else
            cuk_launch(k_conv_residual<T, int64_t>, grid, kThreads, 0, stream, n, C, cstride,
                       (const T *)bias, (const T *)r, (T *)y, act, fn, pp);
        return cudaGetLastError();
    });
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuk_depthwise(cuk_type t, const cuk_dw_desc *d, int nhwc, const void *x,
                                     const void *w, const void *bias, int act, cuk_ufn fn,
                                     const cuk_ew_params *p, void *y, cudaStream_t stream)
{
    if (!d || d->n < 0 || d->c <= 0 || d->m <= 0 || d->cg <= 0 || d->c % d->cg ||
        d->m % (d->c / d->cg) || d->kh <= 0 || d->kw <= 0 || d->sh <= 0 || d->sw <= 0 ||
        d->dh <= 0 || d->dw <= 0)
        return cudaErrorInvalidValue;
    int64_t total = d->n * d->m * d->oh * d->ow;
    if (total <= 0) return cudaSuccess;
    cuk_ew_params none = {0.0f, 0.0f, 0.0f, 0, 0};
    const cuk_ew_params &pp = p ? *p : none;
    unsigned grid = grid_for(total);
    const bool vec = nhwc && d->cg % 4 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)w % 16 == 0;
    /* 32-bit indices when every element of x, w and y (and the padded
     * window's reach past them) has one, with room for the grid's stride. */
    const int64_t lim = (int64_t)1 << 30;
    const int64_t reach = (int64_t)(d->kh + d->ph) * d->dh * d->w + (int64_t)(d->kw + d->pw) * d->dw;
    const bool narrow = d->n * d->c * d->h * d->w + reach < lim && total < lim &&
                        d->m * d->cg * d->kh * d->kw < lim && (int64_t)grid * kThreads < lim;
#define CUK_GROUPED_LAUNCH(T, I)                                                                   \
    do {                                                                                           \
        if (nhwc && vec)                                                                           \
            cuk_launch(k_grouped<T, true, true, I>, grid, kThreads, 0, stream, *d, (const T *)x,   \
                       (const T *)w, (const T *)bias, (T *)y, act, fn, pp);                        \
        else if (nhwc)                                                                             \
            cuk_launch(k_grouped<T, true, false, I>, grid, kThreads, 0, stream, *d, (const T *)x,  \
                       (const T *)w, (const T *)bias, (T *)y, act, fn, pp);                        \
        else                                                                                       \
            cuk_launch(k_grouped<T, false, false, I>, grid, kThreads, 0, stream, *d, (const T *)x, \
                       (const T *)w, (const T *)bias, (T *)y, act, fn, pp);                        \
    } while (0)
    if (nhwc && d->tile_h > 0) {
        const cudaError_t e =
            cuk_depthwise_vec(t, d, x, w, bias, act, fn, p, 0, fn, NULL, y, stream);
        if (e != cudaErrorNotSupported) return e;
        cuk_dw_desc one = *d; /* unaligned tensors: the one-channel kernel */
        one.tile_h = 0;
        one.tile_w = 0;
        return cuk_depthwise(t, &one, nhwc, x, w, bias, act, fn, p, y, stream);
    }
    CUK_DISPATCH_FP((cuk_dtype)t, T, {
        if (nhwc && dw_tile_launch<T>(d, (const T *)x, (const T *)w, (const T *)bias, (T *)y, act,
                                      fn, pp, stream))
            return cudaGetLastError();
        if (narrow)
            CUK_GROUPED_LAUNCH(T, int32_t);
        else
            CUK_GROUPED_LAUNCH(T, int64_t);
        return cudaGetLastError();
    });
#undef CUK_GROUPED_LAUNCH
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuk_depthwise_ln(cuk_type t, const cuk_dw_desc *d, const void *x,
                                        const void *w, const void *bias, const void *scale,
                                        const void *nbias, float eps, void *y,
                                        cudaStream_t stream)
{
    if (!d || d->n < 0 || d->c <= 0 || d->kh <= 0 || d->sh <= 0 || !scale)
        return cudaErrorInvalidValue;
    if (d->n * d->oh * d->ow == 0) return cudaSuccess;
    CUK_DISPATCH_FP((cuk_dtype)t, T, {
        if (dw_ln_launch<T>(d, (const T *)x, (const T *)w, (const T *)bias, (const T *)scale,
                            (const T *)nbias, eps, (T *)y, stream))
            return cudaGetLastError();
        return cudaErrorInvalidValue;
    });
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuk_im2col(cuk_type t, const cuk_dw_desc *d, int taps_outer,
                                  const void *x, void *col, int64_t p0, int64_t pc,
                                  cudaStream_t stream)
{
    if (!d || d->n <= 0 || d->cg <= 0 || d->c % d->cg || d->kh <= 0 || d->kw <= 0 || p0 < 0 ||
        pc < 0 || p0 + pc > d->n * d->oh * d->ow)
        return cudaErrorInvalidValue;
    const int64_t total = d->c * pc;
    if (total == 0) return cudaSuccess;
    unsigned grid = grid_for(total);
    const int64_t lim = (int64_t)1 << 30;
    const bool narrow = d->n * d->h * d->w * d->c < lim && total * d->kh * d->kw < lim &&
                        (int64_t)grid * kThreads < lim;
#define CUK_IM2COL_LAUNCH(T, OUTER)                                                                \
    do {                                                                                           \
        if (narrow)                                                                                \
            cuk_launch(k_im2col<T, OUTER, int32_t>, grid, kThreads, 0, stream, *d, (const T *)x,   \
                       (T *)col, (int32_t)p0, (int32_t)pc);                                        \
        else                                                                                       \
            cuk_launch(k_im2col<T, OUTER, int64_t>, grid, kThreads, 0, stream, *d, (const T *)x,   \
                       (T *)col, p0, pc);                                                          \
    } while (0)
    CUK_DISPATCH_FP((cuk_dtype)t, T, {
        if (taps_outer)
            CUK_IM2COL_LAUNCH(T, true);
        else
            CUK_IM2COL_LAUNCH(T, false);
        return cudaGetLastError();
    });
#undef CUK_IM2COL_LAUNCH
    return cudaErrorInvalidValue;
}

/* ---- a gated map's product: its weights scaled per sample ------------- */

template <typename T>
__global__ void k_gate_weights(int32_t total, int32_t M, int32_t K, const T *__restrict__ w,
                               const T *__restrict__ s, T *__restrict__ out)
{
    cuk_kernel_enter();
    for (int32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += gridDim.x * blockDim.x) {
        const int32_t k = i % K, nm = i / K, m = nm % M, n = nm / M;
        out[i] = from_float<T>(to_float(w[m * K + k]) * to_float(s[n * K + k]));
    }
}

extern "C" cudaError_t cuk_gate_weights(cuk_type t, int64_t n, int64_t m, int64_t k,
                                        const void *w, const void *s, void *out,
                                        cudaStream_t stream)
{
    if (n <= 0 || m <= 0 || k <= 0 || !w || !s || !out) return cudaErrorInvalidValue;
    const int64_t total = n * m * k;
    if (total >= ((int64_t)1 << 31)) return cudaErrorInvalidValue;
    const unsigned grid = grid_for(total);
    CUK_DISPATCH_FP((cuk_dtype)t, T, {
        cuk_launch(k_gate_weights<T>, grid, kThreads, 0, stream, (int32_t)total, (int32_t)m,
                   (int32_t)k, (const T *)w, (const T *)s, (T *)out);
        return cudaGetLastError();
    });
    return cudaErrorInvalidValue;
}
