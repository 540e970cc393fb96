/*
 * kernels_gconv.cu - a grouped convolution in NHWC as an implicit GEMM on
 * the tensor cores (fp16, bf16, and fp32 data under TF32 math), for groups
 * of 8 or more channels.
 *
 * RegNetY-8GF's groups of 56 channels made every other way slow on an
 * H200 at batch 16 fp16: cuDNN's engines for them (41, 10, 35) transform
 * the tensors into another layout and back (0.15-0.69 ms a layer), the
 * columns and a batched product (pick_im2col) write nine times the input
 * before the product reads it (0.34 ms for the first stage's layer), and
 * PyTorch's own call of cuDNN took 0.14-0.23 ms for the same layers.
 *
 * One block computes BM output pixels (n, oy, ox flattened) by BN output
 * channels of one group: for each tap of the window and each slice of 32
 * or 64 of the group's input channels (the planner times both for groups
 * of 48 or more 2-byte channels), it stages the BM pixels' input slice
 * (16-byte loads; zeros in the padding and past the group's channels) and
 * the slice's filters in shared memory, and eight warps multiply them with
 * WMMA (16x16x16, or 16x16x8 in TF32; float accumulators), each warp a
 * 32 x 32 block of the output.  The next slice's loads are issued into
 * registers before the current slice's products, so the memory latency
 * hides behind them.  The bias and an element-wise activation are applied
 * as the accumulators are written, 16 bytes at a time.
 */
#include <mma.h>
#include <stdint.h>

#include "backend/cuda/kernels_common.cuh"

using namespace cuk;

namespace
{

constexpr int BM = 128, BN = 64, THREADS = 256;
constexpr int APAD = 8, CPAD = 4;

/* By element type: the 16-byte vector's length, how values sit in shared
 * memory (as their bits: the union's members need trivial constructors),
 * and the WMMA shape and operand type. */
template <typename T> struct mma_tr {
    static constexpr int VEC = 8, KSTEP = 16;
    typedef uint16_t S;
    typedef T F;
    typedef T L; /* what load_matrix_sync reads */
};
template <> struct mma_tr<float> {
    static constexpr int VEC = 4, KSTEP = 8;
    typedef float S;
    typedef nvcuda::wmma::precision::tf32 F;
    typedef float L;
};

/* BK: the input channels of a slice, 32, or 64 for groups of 48 or more
 * 2-byte channels (half the slices, so half the barriers, for RegNetY's
 * 56; a narrower group would leave most of a 64-channel slice zeros) */
template <typename S, int BK> struct __align__(128) gconv_smem
{
    union {
        struct {
            S a[BM][BK + APAD]; /* pixels x input channels (row major) */
            S b[BN][BK + APAD]; /* output x input channels: B column major */
        } ab;
        float c[BM][BN + CPAD];
    };
};

/* taps_outer: the filters are [m, kh, kw, cg] (else [m, cg, kh, kw]). */
template <typename T, int BK, bool TAPS_OUTER>
__global__ void __launch_bounds__(THREADS)
    k_gconv_mma(cuk_dw_desc d, const T *__restrict__ x, const T *__restrict__ w,
                const T *__restrict__ bias, T *__restrict__ y, int act, cuk_ufn fn,
                cuk_ew_params prm)
{
    cuk_kernel_enter();
    typedef mma_tr<T> tr;
    constexpr int VEC = tr::VEC;
    constexpr int AV = BK / VEC;          /* vectors a row of A (and of B) */
    constexpr int NA = BM * AV / THREADS; /* A vectors a thread loads */
    constexpr int NB = BN * AV / THREADS; /* B vectors a thread loads */
    constexpr int BS = BN * BK / THREADS; /* B values a thread loads, filters taps inner */
    __shared__ gconv_smem<typename tr::S, BK> sm;
    const int tid = threadIdx.x, warp = tid / 32;
    const int C = (int)d.c, H = (int)d.h, W = (int)d.w, OH = (int)d.oh, OW = (int)d.ow;
    const int cg = d.cg, KW = d.kw, KK = d.kh * d.kw;
    const int groups = C / cg, mg = (int)(d.m / groups);
    const int ntiles = (mg + BN - 1) / BN;
    const int g = blockIdx.y / ntiles, n0 = (blockIdx.y % ntiles) * BN;
    const int64_t P = d.n * (int64_t)OH * OW, p0 = (int64_t)blockIdx.x * BM;

    /* the A vectors this thread loads: rows (tid + i * THREADS) / AV, the
     * slice's vector tid % AV (THREADS is a multiple of AV) */
    const int acv = tid % AV;
    int arow[NA], aiy[NA], aix[NA];
    int64_t abase[NA];
#pragma unroll
    for (int i = 0; i < NA; i++) {
        arow[i] = (tid + i * THREADS) / AV;
        const int64_t p = p0 + arow[i];
        if (p < P) {
            const int ox = (int)(p % OW);
            const int64_t r = p / OW;
            const int oy = (int)(r % OH);
            const int64_t n = r / OH;
            aiy[i] = oy * d.sh - d.ph;
            aix[i] = ox * d.sw - d.pw;
            abase[i] = n * (int64_t)H * W * C + (int64_t)g * cg;
        } else {
            aiy[i] = INT32_MIN / 2; /* never inside the map */
            aix[i] = 0;
            abase[i] = 0;
        }
    }
    const int slices = (cg + BK - 1) / BK, steps = KK * slices;
    vec16<T> ra[NA], rb[TAPS_OUTER ? NB : 1];
    T rs[TAPS_OUTER ? 1 : BS];
    auto fetch = [&](int step) {
        const int t = step / slices, c0 = (step % slices) * BK;
        const int ky = t / KW, kx = t % KW;
#pragma unroll
        for (int i = 0; i < NA; i++) {
            const int iy = aiy[i] + ky * d.dh, ix = aix[i] + kx * d.dw;
            const int c = c0 + acv * VEC;
            if (iy >= 0 && iy < H && ix >= 0 && ix < W && c < cg)
                ra[i] = *reinterpret_cast<const vec16<T> *>(x + abase[i] +
                                                            ((int64_t)iy * W + ix) * C + c);
            else
                *reinterpret_cast<uint4 *>(&ra[i]) = make_uint4(0, 0, 0, 0);
        }
        if (TAPS_OUTER) {
#pragma unroll
            for (int j = 0; j < NB; j++) {
                const int v = tid + j * THREADS, bn = v / AV, c = c0 + (v % AV) * VEC;
                if (n0 + bn < mg && c < cg)
                    rb[j] = *reinterpret_cast<const vec16<T> *>(
                        w + ((int64_t)(g * mg + n0 + bn) * KK + t) * cg + c);
                else
                    *reinterpret_cast<uint4 *>(&rb[j]) = make_uint4(0, 0, 0, 0);
            }
        } else {
#pragma unroll
            for (int j = 0; j < BS; j++) {
                const int e = tid + j * THREADS, bn = e / BK, c = c0 + e % BK;
                rs[j] = n0 + bn < mg && c < cg ? w[((int64_t)(g * mg + n0 + bn) * cg + c) * KK + t]
                                               : from_float<T>(0.0f);
            }
        }
    };
    auto stage = [&]() {
#pragma unroll
        for (int i = 0; i < NA; i++)
            *reinterpret_cast<vec16<T> *>(&sm.ab.a[arow[i]][acv * VEC]) = ra[i];
        if (TAPS_OUTER) {
#pragma unroll
            for (int j = 0; j < NB; j++) {
                const int v = tid + j * THREADS;
                *reinterpret_cast<vec16<T> *>(&sm.ab.b[v / AV][(v % AV) * VEC]) = rb[j];
            }
        } else {
#pragma unroll
            for (int j = 0; j < BS; j++) {
                const int e = tid + j * THREADS;
                reinterpret_cast<T *>(&sm.ab.b[e / BK][0])[e % BK] = rs[j];
            }
        }
    };

    using namespace nvcuda;
    constexpr int KS = tr::KSTEP;
    wmma::fragment<wmma::accumulator, 16, 16, KS, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);
    const int wm = (warp / 2) * 32, wn = (warp % 2) * 32;

    fetch(0);
    stage();
    __syncthreads();
    for (int s = 0; s < steps; s++) {
        if (s + 1 < steps) fetch(s + 1);
#pragma unroll
        for (int k = 0; k < BK; k += KS) {
            wmma::fragment<wmma::matrix_a, 16, 16, KS, typename tr::F, wmma::row_major> fa[2];
            wmma::fragment<wmma::matrix_b, 16, 16, KS, typename tr::F, wmma::col_major> fb[2];
#pragma unroll
            for (int i = 0; i < 2; i++)
                wmma::load_matrix_sync(
                    fa[i], reinterpret_cast<const typename tr::L *>(&sm.ab.a[wm + 16 * i][k]),
                    BK + APAD);
#pragma unroll
            for (int j = 0; j < 2; j++)
                wmma::load_matrix_sync(
                    fb[j], reinterpret_cast<const typename tr::L *>(&sm.ab.b[wn + 16 * j][k]),
                    BK + APAD);
            if constexpr (sizeof(T) == 4) { /* TF32: the operands rounded as the unit wants */
#pragma unroll
                for (int i = 0; i < 2; i++)
#pragma unroll
                    for (int e = 0; e < fa[i].num_elements; e++)
                        fa[i].x[e] = wmma::__float_to_tf32(fa[i].x[e]);
#pragma unroll
                for (int j = 0; j < 2; j++)
#pragma unroll
                    for (int e = 0; e < fb[j].num_elements; e++)
                        fb[j].x[e] = wmma::__float_to_tf32(fb[j].x[e]);
            }
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 2; j++)
                    wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();
        if (s + 1 < steps) {
            stage();
            __syncthreads();
        }
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(&sm.c[wm + 16 * i][wn + 16 * j], acc[i][j], BN + CPAD,
                                    wmma::mem_row_major);
    __syncthreads();

    /* the output, a 16-byte vector of one pixel's channels at a time */
    constexpr int CV = BN / VEC;
    const int64_t M = d.m;
    for (int v = tid; v < BM * CV; v += THREADS) {
        const int row = v / CV, cv = v % CV;
        const int64_t p = p0 + row;
        const int nn = n0 + cv * VEC;
        if (p >= P || nn >= mg) continue;
        const int o = g * mg + nn;
        vec16<T> out;
#pragma unroll
        for (int e = 0; e < VEC; e++) {
            float r = sm.c[row][cv * VEC + e];
            if (bias) r += to_float<T>(bias[o + e]);
            if (act) r = ufloat(fn, r, prm);
            out.v[e] = from_float<T>(r);
        }
        *reinterpret_cast<vec16<T> *>(y + p * M + o) = out;
    }
}

/* The slice width a launch takes: d->tile_w when it names one the type
 * has (32; 64 for 2-byte types), else 64 for groups of 48 or more 2-byte
 * channels and 32 otherwise. */
int gconv_slice(const cuk_dw_desc *d, size_t esz)
{
    if (d->tile_w == 32 || (d->tile_w == 64 && esz == 2)) return d->tile_w;
    return esz == 2 && d->cg >= 48 ? 64 : 32;
}

template <typename T>
cudaError_t gconv_launch(const cuk_dw_desc *d, int taps_outer, const T *x, const T *w, const T *b,
                         T *y, int act, cuk_ufn fn, const cuk_ew_params &p, cudaStream_t stream)
{
    const int64_t groups = d->c / d->cg, mg = d->m / groups;
    const int64_t P = d->n * d->oh * d->ow;
    const dim3 grid((unsigned)((P + BM - 1) / BM), (unsigned)(groups * ((mg + BN - 1) / BN)));
    constexpr int WIDE = sizeof(T) == 2 ? 64 : 32; /* fp32's 64-channel slices outgrow 48 KiB */
    if (WIDE == 64 && gconv_slice(d, sizeof(T)) == 64) {
        if (taps_outer)
            return cuk_launch(k_gconv_mma<T, WIDE, true>, grid, THREADS, 0, stream, *d, x, w, b, y,
                              act, fn, p);
        return cuk_launch(k_gconv_mma<T, WIDE, false>, grid, THREADS, 0, stream, *d, x, w, b, y,
                          act, fn, p);
    }
    if (taps_outer)
        return cuk_launch(k_gconv_mma<T, 32, true>, grid, THREADS, 0, stream, *d, x, w, b, y, act,
                          fn, p);
    return cuk_launch(k_gconv_mma<T, 32, false>, grid, THREADS, 0, stream, *d, x, w, b, y, act, fn,
                      p);
}

} /* namespace */

/* The vector length of type t (values in 16 bytes). */
static int gconv_vec(cuk_type t)
{
    return t == CUK_F32 ? 4 : 8;
}

extern "C" int cuk_gconv_mma_fits(cuk_type t, int tf32, const cuk_dw_desc *d)
{
    if (!d || (t == CUK_F32 && !tf32) || (t != CUK_F32 && t != CUK_F16 && t != CUK_BF16)) return 0;
    const int vec = gconv_vec(t);
    if (d->cg < 8 || d->cg % vec || d->c % d->cg || d->c > INT32_MAX / 2 ||
        d->h * d->w > INT32_MAX / 2 || d->oh * d->ow > INT32_MAX / 2 || d->kh < 1 || d->kw < 1 ||
        d->kh * d->kw > 1024 || d->sh < 1 || d->sw < 1 || d->dh < 1 || d->dw < 1)
        return 0;
    const int64_t groups = d->c / d->cg;
    if (groups < 1 || d->m % groups) return 0;
    const int64_t mg = d->m / groups;
    const int64_t P = d->n * d->oh * d->ow;
    return mg >= 8 && mg % vec == 0 && groups * ((mg + BN - 1) / BN) <= 65535 && P >= 1 &&
           (P + BM - 1) / BM <= INT32_MAX && (int64_t)d->cg * d->kh * d->kw <= INT32_MAX / 4 &&
           d->m * d->cg * d->kh * d->kw < ((int64_t)1 << 40);
}

extern "C" int cuk_gconv_mma_slices(cuk_type t, const cuk_dw_desc *d, int *widths)
{
    if (t == CUK_F32 || !d || d->cg < 48) {
        widths[0] = 32;
        return 1;
    }
    widths[0] = 32;
    widths[1] = 64;
    return 2;
}

extern "C" cudaError_t cuk_gconv_mma(cuk_type t, int tf32, const cuk_dw_desc *d, int taps_outer,
                                     const void *x, const void *w, const void *bias, int act,
                                     cuk_ufn fn, const cuk_ew_params *p, void *y,
                                     cudaStream_t stream)
{
    if (!cuk_gconv_mma_fits(t, tf32, d)) return cudaErrorNotSupported;
    if ((uintptr_t)x % 16 || (uintptr_t)y % 16 || (taps_outer && (uintptr_t)w % 16))
        return cudaErrorNotSupported;
    const cuk_ew_params none = {0.0f, 0.0f, 0.0f, 0, 0};
    const cuk_ew_params &pp = p ? *p : none;
    if (t == CUK_F32)
        return gconv_launch<float>(d, taps_outer, (const float *)x, (const float *)w,
                                   (const float *)bias, (float *)y, act, fn, pp, stream);
    if (t == CUK_F16)
        return gconv_launch<__half>(d, taps_outer, (const __half *)x, (const __half *)w,
                                    (const __half *)bias, (__half *)y, act, fn, pp, stream);
    return gconv_launch<__nv_bfloat16>(d, taps_outer, (const __nv_bfloat16 *)x,
                                       (const __nv_bfloat16 *)w, (const __nv_bfloat16 *)bias,
                                       (__nv_bfloat16 *)y, act, fn, pp, stream);
}
