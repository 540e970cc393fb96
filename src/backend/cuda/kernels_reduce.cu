/*
 * kernels_reduce.cu - the reduction family (kernels.h): any reduction over
 * any axes, ArgMax/ArgMin, the normalisations along an axis (Softmax,
 * LogSoftmax, Hardmax), GroupNormalization, CumSum and TopK.
 *
 * Every kernel maps a unit of output (an output element, a line along an
 * axis, a group of channels) to a group of G threads: G = 1 (a thread),
 * 32 (a warp) or blockDim.x (a block), chosen at launch from the strides.
 * The accumulators (racc) share one interface, so the group reduction is
 * written once: shuffles within a warp, then shared memory across warps.
 */
#include <stdint.h>

#include "backend/cuda/kernels_common.cuh"

using namespace cuk;

namespace
{

/* ---- accumulators --------------------------------------------------- */

enum { RK_ADD = 0, RK_MUL, RK_MAX, RK_MIN, RK_LSE, RK_ARG };

template <typename A> __device__ __forceinline__ bool is_nan(A v)
{
    if constexpr (std::is_floating_point<A>::value)
        return v != v;
    else
        return false;
}

template <typename A> __device__ __forceinline__ A lowest()
{
    if constexpr (same_t<A, float>::value)
        return -CUDART_INF_F;
    else if constexpr (same_t<A, double>::value)
        return -CUDART_INF;
    else
        return (A)INT64_MIN;
}
template <typename A> __device__ __forceinline__ A highest()
{
    if constexpr (same_t<A, float>::value)
        return CUDART_INF_F;
    else if constexpr (same_t<A, double>::value)
        return CUDART_INF;
    else
        return (A)INT64_MAX;
}

template <typename A> __device__ __forceinline__ A acc_add(A a, A b)
{
    if constexpr (same_t<A, int64_t>::value)
        return wadd<int64_t>(a, b);
    else
        return a + b;
}
template <typename A> __device__ __forceinline__ A acc_mul(A a, A b)
{
    if constexpr (same_t<A, int64_t>::value)
        return wmul<int64_t>(a, b);
    else
        return a * b;
}

template <typename A, int K> struct racc;

template <typename A> struct racc<A, RK_ADD> {
    A s;
    __device__ void init(int)
    {
        s = 0;
    }
    __device__ void add(A v)
    {
        s = acc_add<A>(s, v);
    }
    __device__ void merge(const racc &o)
    {
        s = acc_add<A>(s, o.s);
    }
    __device__ racc shfl(int o) const
    {
        racc r;
        r.s = __shfl_xor_sync(0xffffffffu, s, o);
        return r;
    }
};

template <typename A> struct racc<A, RK_MUL> {
    A s;
    __device__ void init(int)
    {
        s = 1;
    }
    __device__ void add(A v)
    {
        s = acc_mul<A>(s, v);
    }
    __device__ void merge(const racc &o)
    {
        s = acc_mul<A>(s, o.s);
    }
    __device__ racc shfl(int o) const
    {
        racc r;
        r.s = __shfl_xor_sync(0xffffffffu, s, o);
        return r;
    }
};

/* Max and min keep a NaN once they have seen one. */
template <typename A> struct racc<A, RK_MAX> {
    A s;
    __device__ void init(int)
    {
        s = lowest<A>();
    }
    __device__ void add(A v)
    {
        if (!is_nan(s) && (is_nan(v) || v > s)) s = v;
    }
    __device__ void merge(const racc &o)
    {
        add(o.s);
    }
    __device__ racc shfl(int o) const
    {
        racc r;
        r.s = __shfl_xor_sync(0xffffffffu, s, o);
        return r;
    }
};

template <typename A> struct racc<A, RK_MIN> {
    A s;
    __device__ void init(int)
    {
        s = highest<A>();
    }
    __device__ void add(A v)
    {
        if (!is_nan(s) && (is_nan(v) || v < s)) s = v;
    }
    __device__ void merge(const racc &o)
    {
        add(o.s);
    }
    __device__ racc shfl(int o) const
    {
        racc r;
        r.s = __shfl_xor_sync(0xffffffffu, s, o);
        return r;
    }
};

/* log(sum(exp(v))) online: the running maximum m and sum(exp(v - m)). */
template <typename A> struct racc<A, RK_LSE> {
    A m, s;
    __device__ void init(int)
    {
        m = lowest<A>();
        s = 0;
    }
    __device__ void merge2(A om, A os)
    {
        if (is_nan(m)) return;
        if (is_nan(om)) {
            m = om;
            s = 1;
            return;
        }
        if (om == lowest<A>()) return; /* the other is empty (or all -inf) */
        if (m == lowest<A>()) {
            m = om;
            s = os;
        } else if (om == m) {
            s += os; /* also +inf and +inf, where exp(m - om) would be NaN */
        } else if (om > m) {
            s = s * exp(m - om) + os;
            m = om;
        } else {
            s += os * exp(om - m);
        }
    }
    __device__ void add(A v)
    {
        merge2(v, 1);
    }
    __device__ void merge(const racc &o)
    {
        merge2(o.m, o.s);
    }
    __device__ racc shfl(int o) const
    {
        racc r;
        r.m = __shfl_xor_sync(0xffffffffu, m, o);
        r.s = __shfl_xor_sync(0xffffffffu, s, o);
        return r;
    }
    __device__ A result() const
    {
        return is_nan(m) ? m : (m == lowest<A>() ? m : m + log(s));
    }
};

/* The best (key, index): the largest key, on a tie the lowest index (the
 * highest with `last`).  An empty one has index -1. */
template <typename A> struct racc<A, RK_ARG> {
    uint64_t key;
    int64_t idx;
    int last;
    __device__ void init(int select_last)
    {
        key = 0;
        idx = -1;
        last = select_last;
    }
    __device__ void add2(uint64_t k, int64_t i)
    {
        if (i < 0) return;
        if (idx < 0 || k > key || (k == key && (last ? i > idx : i < idx))) {
            key = k;
            idx = i;
        }
    }
    __device__ void merge(const racc &o)
    {
        add2(o.key, o.idx);
    }
    __device__ racc shfl(int o) const
    {
        racc r;
        r.key = __shfl_xor_sync(0xffffffffu, key, o);
        r.idx = __shfl_xor_sync(0xffffffffu, idx, o);
        r.last = last;
        return r;
    }
};

/* Combines r over the group of G threads (1, 32 or the block); every
 * thread of the group gets the result.  sh: 32 entries in shared memory;
 * the whole block calls this when G is the block. */
template <typename R> __device__ R group_merge(R r, int G, R *sh, int last)
{
    if (G == 1) return r;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        r.merge(r.shfl(o));
    if (G == 32) return r;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) sh[w] = r;
    __syncthreads();
    if (w == 0) {
        R u;
        if (lane < nw)
            u = sh[lane];
        else
            u.init(last);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            u.merge(u.shfl(o));
        if (lane == 0) sh[0] = u;
    }
    __syncthreads();
    return sh[0];
}

/* Which unit of work this thread's group takes first, how many groups
 * there are, and the thread's lane in its group. */
struct group_pos {
    int64_t first, count;
    int lane;
};

__device__ __forceinline__ group_pos group_of(int G)
{
    group_pos p;
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t all = (int64_t)gridDim.x * blockDim.x;
    if (G == 1) {
        p.first = t;
        p.count = all;
        p.lane = 0;
    } else if (G == 32) {
        p.first = t >> 5;
        p.count = all >> 5;
        p.lane = threadIdx.x & 31;
    } else {
        p.first = blockIdx.x;
        p.count = gridDim.x;
        p.lane = threadIdx.x;
    }
    return p;
}

/* Launch grid for `units` units of work in groups of G threads. */
unsigned grid_groups(int64_t units, int G)
{
    if (G > 32) return (unsigned)(units < kMaxBlocks ? (units < 1 ? 1 : units) : kMaxBlocks);
    return grid_for(units * G);
}

/* ---- Reduce, ArgMax, ArgMin ----------------------------------------- */

struct red_args {
    cuk_reduce_desc d;
    int64_t n_out, n_red;
    int group, fn, last;
};

template <typename T> struct acc_of {
    typedef typename std::conditional<tr<T>::fp, float, int64_t>::type type;
};
/* LogSumExp of integers sums in double. */
template <typename T> struct lse_of {
    typedef typename std::conditional<tr<T>::fp, float, double>::type type;
};

template <typename T, typename A> __device__ __forceinline__ A premap(T v, int fn)
{
    A a = (A)load<T>(v);
    switch (fn) {
    case CUK_R_L1:
        return a < 0 ? acc_mul<A>(a, (A)-1) : a;
    case CUK_R_L2:
    case CUK_R_SUMSQUARE:
        return acc_mul<A>(a, a);
    default:
        return a;
    }
}

/* What a sum becomes (Mean, L2, LogSum). */
template <typename T, typename A> __device__ __forceinline__ T finish_sum(A s, int fn, int64_t n)
{
    if constexpr (tr<T>::fp) {
        float v = (float)s;
        if (fn == CUK_R_MEAN) v = v / (float)n;
        if (fn == CUK_R_L2) v = sqrtf(v);
        if (fn == CUK_R_LOGSUM) v = logf(v);
        return store<T>(v);
    } else {
        if (fn == CUK_R_MEAN || fn == CUK_R_L2 || fn == CUK_R_LOGSUM) {
            double v = (double)s;
            v = fn == CUK_R_MEAN ? v / (double)n : (fn == CUK_R_L2 ? sqrt(v) : log(v));
            return store<T>((typename tr<T>::C)__double2ll_rz(v));
        }
        return store<T>((typename tr<T>::C)s);
    }
}

template <typename T> __device__ __forceinline__ uint64_t arg_key(T v, int is_min)
{
    uint64_t k = order_key<T>(v);
    if (is_min && k != 0xffffffffffffffffull) k = ~k; /* NaN stays the winner */
    return k;
}

template <typename T, int K> __global__ void k_reduce(const __grid_constant__ red_args a, const T *x, void *y)
{
    cuk_kernel_enter();
    typedef typename std::conditional<K == RK_LSE, typename lse_of<T>::type,
                                      typename acc_of<T>::type>::type A;
    typedef racc<A, K> R;
    __shared__ R sh[32];
    const int G = a.group;
    group_pos gp = group_of(G);
    for (int64_t o = gp.first; o < a.n_out; o += gp.count) {
        int64_t rest = o, in_base = 0, out_off = 0;
        for (int j = a.d.n_kept - 1; j >= 0; j--) {
            int64_t q = rest / a.d.kept[j], c = rest - q * a.d.kept[j];
            rest = q;
            in_base += c * a.d.in_kept[j];
            out_off += c * a.d.out_kept[j];
        }
        R acc;
        acc.init(a.last);
        for (int64_t r = gp.lane; r < a.n_red; r += G) {
            int64_t rr = r, off = in_base;
            for (int j = a.d.n_red - 1; j >= 0; j--) {
                int64_t q = rr / a.d.red[j], c = rr - q * a.d.red[j];
                rr = q;
                off += c * a.d.in_red[j];
            }
            if constexpr (K == RK_ARG)
                acc.add2(arg_key<T>(x[off], a.fn == CUK_R_ARGMIN), r);
            else
                acc.add(premap<T, A>(x[off], a.fn));
        }
        acc = group_merge<R>(acc, G, sh, a.last);
        if (gp.lane != 0) continue;
        if constexpr (K == RK_ARG) {
            ((int64_t *)y)[out_off] = acc.idx < 0 ? 0 : acc.idx;
        } else if constexpr (K == RK_LSE) {
            A v = acc.result();
            if constexpr (tr<T>::fp)
                ((T *)y)[out_off] = store<T>((float)v);
            else
                ((T *)y)[out_off] = store<T>((typename tr<T>::C)__double2ll_rz((double)v));
        } else if constexpr (K == RK_ADD) {
            ((T *)y)[out_off] = finish_sum<T, A>(acc.s, a.fn, a.n_red);
        } else {
            ((T *)y)[out_off] = store<T>((typename tr<T>::C)acc.s);
        }
    }
}

int kind_of(cuk_red_fn fn)
{
    switch (fn) {
    case CUK_R_PROD:
        return RK_MUL;
    case CUK_R_MAX:
        return RK_MAX;
    case CUK_R_MIN:
        return RK_MIN;
    case CUK_R_LOGSUMEXP:
        return RK_LSE;
    case CUK_R_ARGMAX:
    case CUK_R_ARGMIN:
        return RK_ARG;
    default:
        return RK_ADD;
    }
}

template <typename T>
cudaError_t reduce_run(int kind, const red_args &a, unsigned grid, const void *x, void *y,
                       cudaStream_t s)
{
    const T *xt = (const T *)x;
    switch (kind) {
    case RK_ADD:
        cuk_launch(k_reduce<T, RK_ADD>, grid, kThreads, 0, s, a, xt, y);
        break;
    case RK_MUL:
        cuk_launch(k_reduce<T, RK_MUL>, grid, kThreads, 0, s, a, xt, y);
        break;
    case RK_MAX:
        cuk_launch(k_reduce<T, RK_MAX>, grid, kThreads, 0, s, a, xt, y);
        break;
    case RK_MIN:
        cuk_launch(k_reduce<T, RK_MIN>, grid, kThreads, 0, s, a, xt, y);
        break;
    case RK_LSE:
        cuk_launch(k_reduce<T, RK_LSE>, grid, kThreads, 0, s, a, xt, y);
        break;
    default:
        cuk_launch(k_reduce<T, RK_ARG>, grid, kThreads, 0, s, a, xt, y);
        break;
    }
    return cudaGetLastError();
}

/* ---- Softmax, LogSoftmax, Hardmax ----------------------------------- */

/* The thread, warp or block for lines [outer, len, inner]. */
int line_group(int64_t lines, int64_t len, int64_t inner)
{
    if (inner > 1) return 1;
    if (len >= 2048 && lines < 2048) return kThreads;
    return 32;
}

template <typename T, int OP>
__global__ void k_axis(int64_t outer, int64_t len, int64_t inner, int G, const T *x, T *y)
{
    cuk_kernel_enter();
    typedef racc<float, RK_MAX> RM;
    typedef racc<float, RK_ADD> RS;
    typedef racc<float, RK_ARG> RA;
    __shared__ RM shm[32];
    __shared__ RS shs[32];
    __shared__ RA sha[32];
    group_pos gp = group_of(G);
    const int64_t lines = outer * inner;
    for (int64_t l = gp.first; l < lines; l += gp.count) {
        int64_t o = l / inner, r = l - o * inner;
        const T *xl = x + o * len * inner + r;
        T *yl = y + o * len * inner + r;
        if (OP == CUK_AX_HARDMAX) {
            RA best;
            best.init(0);
            for (int64_t k = gp.lane; k < len; k += G)
                best.add2(arg_key<T>(xl[k * inner], 0), k);
            best = group_merge<RA>(best, G, sha, 0);
            for (int64_t k = gp.lane; k < len; k += G)
                yl[k * inner] = store<T>(k == best.idx ? 1.0f : 0.0f);
            continue;
        }
        RM m;
        m.init(0);
        for (int64_t k = gp.lane; k < len; k += G)
            m.add(load<T>(xl[k * inner]));
        m = group_merge<RM>(m, G, shm, 0);
        float mx = m.s == -CUDART_INF_F ? 0.0f : m.s; /* a line of -inf: no NaN from inf - inf */
        RS sum;
        sum.init(0);
        for (int64_t k = gp.lane; k < len; k += G)
            sum.add(expf(load<T>(xl[k * inner]) - mx));
        sum = group_merge<RS>(sum, G, shs, 0);
        float lg = logf(sum.s), inv = 1.0f / sum.s;
        for (int64_t k = gp.lane; k < len; k += G) {
            float v = load<T>(xl[k * inner]) - mx;
            yl[k * inner] = store<T>(OP == CUK_AX_LOGSOFTMAX ? v - lg : expf(v) * inv);
        }
    }
}

/* ---- GroupNormalization --------------------------------------------- */

template <typename T>
__global__ void k_groupnorm(cuk_groupnorm_desc d, int channels_fast, const T *x, const T *scale,
                            const T *bias, T *y)
{
    cuk_kernel_enter();
    typedef racc<float, RK_ADD> RS;
    __shared__ RS sh[32];
    const int64_t cg = d.C / d.G, m = cg * d.S;
    for (int64_t q = blockIdx.x; q < d.N * d.G; q += gridDim.x) {
        int64_t n = q / d.G, g = q - n * d.G;
        int64_t base = n * d.ns + g * cg * d.cs;
        RS s;
        s.init(0);
        for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
            int64_t c = channels_fast ? e % cg : e / d.S, sp = channels_fast ? e / cg : e % d.S;
            s.add(load<T>(x[base + c * d.cs + sp * d.ss]));
        }
        s = group_merge<RS>(s, blockDim.x, sh, 0);
        const float mean = s.s / (float)m;
        RS v;
        v.init(0);
        for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
            int64_t c = channels_fast ? e % cg : e / d.S, sp = channels_fast ? e / cg : e % d.S;
            float t = load<T>(x[base + c * d.cs + sp * d.ss]) - mean;
            v.add(t * t);
        }
        v = group_merge<RS>(v, blockDim.x, sh, 0);
        const float rstd = rsqrtf(v.s / (float)m + d.eps);
        for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
            int64_t c = channels_fast ? e % cg : e / d.S, sp = channels_fast ? e / cg : e % d.S;
            int64_t off = base + c * d.cs + sp * d.ss, ch = g * cg + c;
            float t = (load<T>(x[off]) - mean) * rstd;
            y[off] = store<T>(t * load<T>(scale[ch]) + load<T>(bias[ch]));
        }
    }
}

/* ---- the squeeze-and-excitation gate ---------------------------------- */

const int kSeThreads = 512;

__device__ __forceinline__ float se_act(const cuk_se_act &a, float v)
{
    return a.has ? ufloat(a.fn, v, a.prm) : v;
}

/* The channel blocks of a pooling launch: 32 channels a block channels-last,
 * one a warp channels-first. */
__host__ __device__ __forceinline__ int64_t se_cblocks(const cuk_se_desc &d)
{
    const int64_t per = d.nhwc ? 32 : kSeThreads / 32;
    return (d.C + per - 1) / per;
}

/* Channels-last sums of sample n's rows [r0, r1) over the block's 32
 * channels [c0, c0 + 32): lanes[w * 32 + j] gets warp w's share for
 * channel c0 + j (0 past C); the caller syncs and adds the warps' shares.
 * Where the channels come in 16-byte vectors (C a multiple of 8 halves or
 * 4 floats, x 16-aligned) a row takes 4 (8) lanes, so a block reads 128
 * (64) rows at once in 16-byte loads and the warp's row lanes meet by
 * shuffles; otherwise a lane a channel and 16 rows at once, as 2-byte
 * loads of 32 channels.  RegNetY-8GF's first gates (16x224x56x56 fp16)
 * spent 48 us of the split gate's first launch in the scalar form. */
template <typename T>
__device__ __forceinline__ void se_nhwc_warp_sums(const cuk_se_desc &d, const T *x, int64_t n,
                                                  int64_t c0, int64_t r0, int64_t r1,
                                                  float *lanes)
{
    constexpr int V = 16 / sizeof(T), LR = 32 / V, RL = kSeThreads / LR;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const T *xs = x + n * d.S * d.C;
    if (d.C % V == 0 && (uintptr_t)x % 16 == 0) {
        const int cv = lane % LR;
        const int64_t c = c0 + cv * V;
        float a[V], b[V];
#pragma unroll
        for (int e = 0; e < V; e++)
            a[e] = b[e] = 0.0f;
        if (c < d.C) {
            int64_t r = r0 + w * (32 / LR) + lane / LR;
            for (; r + RL < r1; r += 2 * RL) {
                const vec16<T> u = *reinterpret_cast<const vec16<T> *>(xs + r * d.C + c);
                const vec16<T> v = *reinterpret_cast<const vec16<T> *>(xs + (r + RL) * d.C + c);
#pragma unroll
                for (int e = 0; e < V; e++) {
                    a[e] += load<T>(u.v[e]);
                    b[e] += load<T>(v.v[e]);
                }
            }
            if (r < r1) {
                const vec16<T> u = *reinterpret_cast<const vec16<T> *>(xs + r * d.C + c);
#pragma unroll
                for (int e = 0; e < V; e++)
                    a[e] += load<T>(u.v[e]);
            }
        }
#pragma unroll
        for (int e = 0; e < V; e++) {
            a[e] += b[e];
            for (int o = 16; o >= LR; o >>= 1)
                a[e] += __shfl_xor_sync(0xffffffffu, a[e], o);
        }
        if (lane < LR) {
#pragma unroll
            for (int e = 0; e < V; e++)
                lanes[w * 32 + cv * V + e] = a[e];
        }
        return;
    }
    const int64_t c = c0 + lane;
    float a0 = 0.0f, a1 = 0.0f;
    if (c < d.C) {
        const T *xp = xs + c;
        int64_t r = r0 + w;
        for (; r + 16 < r1; r += 32) {
            a0 += load<T>(xp[r * d.C]);
            a1 += load<T>(xp[(r + 16) * d.C]);
        }
        for (; r < r1; r += 16)
            a0 += load<T>(xp[r * d.C]);
    }
    lanes[w * 32 + lane] = a0 + a1;
}

/* grid (channel blocks, N, parts).  Channels-last: a block is 16 row lanes
 * of 32 channels; channels-first: 16 warps, a channel each, the lanes
 * along S.  Each block writes its partial sums of its rows [r0, r1); the
 * last block of the sample to finish runs the two layers. */
template <typename T>
__global__ void __launch_bounds__(kSeThreads)
    k_se_gate(const __grid_constant__ cuk_se_desc d, int64_t chunk, const T *x, const T *w1,
              const T *b1, const T *w2, const T *b2, T *y, float *ws)
{
    cuk_kernel_enter();
    extern __shared__ float se_sh[]; /* m [C], then h [hidden]; first the lanes' sums */
    __shared__ int last;
    const int64_t n = blockIdx.y, parts = gridDim.z;
    const int64_t r0 = (int64_t)blockIdx.z * chunk, r1 = r0 + chunk < d.S ? r0 + chunk : d.S;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    float *part = ws + ((int64_t)blockIdx.z * d.N + n) * d.C;
    if (d.nhwc) {
        const int64_t c = (int64_t)blockIdx.x * 32 + lane;
        se_nhwc_warp_sums<T>(d, x, n, (int64_t)blockIdx.x * 32, r0, r1, se_sh);
        __syncthreads();
        if (w == 0 && c < d.C) {
            float acc = 0.0f;
            for (int k = 0; k < kSeThreads / 32; k++)
                acc += se_sh[k * 32 + lane];
            part[c] = acc;
        }
    } else {
        const int64_t c = (int64_t)blockIdx.x * (kSeThreads / 32) + w;
        if (c < d.C) {
            const T *xp = x + (n * d.C + c) * d.S;
            float a0 = 0.0f, a1 = 0.0f;
            int64_t r = r0 + lane;
            for (; r + 32 < r1; r += 64) {
                a0 += load<T>(xp[r]);
                a1 += load<T>(xp[r + 32]);
            }
            for (; r < r1; r += 32)
                a0 += load<T>(xp[r]);
            a0 += a1;
            for (int o = 16; o > 0; o >>= 1)
                a0 += __shfl_xor_sync(0xffffffffu, a0, o);
            if (lane == 0) part[c] = a0;
        }
    }
    unsigned *count = (unsigned *)(ws + parts * d.N * d.C) + n;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(count, 1u) == (unsigned)(gridDim.x * parts) - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    /* The sample's last block: m, then h, then y. */
    float *m = se_sh, *h = se_sh + d.C;
    const float inv = 1.0f / (float)d.S;
    for (int64_t c = threadIdx.x; c < d.C; c += kSeThreads) {
        float acc = 0.0f;
        for (int64_t k = 0; k < parts; k++)
            acc += __ldcg(&ws[(k * d.N + n) * d.C + c]);
        m[c] = acc * inv;
    }
    __syncthreads();
    for (int64_t j = w; j < d.hidden; j += kSeThreads / 32) {
        const T *row = w1 + j * d.C;
        float a0 = 0.0f, a1 = 0.0f;
        int64_t c = lane;
        for (; c + 32 < d.C; c += 64) {
            a0 += load<T>(row[c]) * m[c];
            a1 += load<T>(row[c + 32]) * m[c + 32];
        }
        if (c < d.C) a0 += load<T>(row[c]) * m[c];
        a0 += a1;
        for (int o = 16; o > 0; o >>= 1)
            a0 += __shfl_xor_sync(0xffffffffu, a0, o);
        if (lane == 0) h[j] = se_act(d.act1, a0 + (b1 ? load<T>(b1[j]) : 0.0f));
    }
    __syncthreads();
    for (int64_t c = threadIdx.x; c < d.C; c += kSeThreads) {
        const T *row = w2 + c * d.hidden;
        float a0 = b2 ? load<T>(b2[c]) : 0.0f, a1 = 0.0f;
        int64_t j = 0;
#pragma unroll 4
        for (; j + 1 < d.hidden; j += 2) {
            a0 += load<T>(row[j]) * h[j];
            a1 += load<T>(row[j + 1]) * h[j + 1];
        }
        if (j < d.hidden) a0 += load<T>(row[j]) * h[j];
        y[n * d.C + c] = store<T>(se_act(d.act2, a0 + a1));
    }
    if (threadIdx.x == 0) *count = 0;
}

/* The split gate's first launch: grid (channel blocks, N).  A block takes
 * the means of its channels over all of S as k_se_gate does (channels-last:
 * 32 channels, 16 row lanes; channels-first: 16 channels, a warp each),
 * then its share of h, W1[:, its channels] m, one warp a row of W1, into
 * ws's shares [N, blocks, hidden].  The second launch's blocks sum the
 * shares (se_hidden): no block here waits for the others. */
template <typename T>
__global__ void __launch_bounds__(kSeThreads)
    k_se_pool_fc1(const __grid_constant__ cuk_se_desc d, const T *x, const T *w1, float *ws)
{
    cuk_kernel_enter();
    __shared__ float lanes[kSeThreads];
    __shared__ float m[32];
    const int64_t n = blockIdx.y, nb = gridDim.x;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int per = d.nhwc ? 32 : kSeThreads / 32; /* channels a block */
    const int64_t c0 = (int64_t)blockIdx.x * per;
    const float inv = 1.0f / (float)d.S;
    if (d.nhwc) {
        const int64_t c = c0 + lane;
        se_nhwc_warp_sums<T>(d, x, n, c0, 0, d.S, lanes);
        __syncthreads();
        if (w == 0) {
            float acc = 0.0f;
            for (int k = 0; k < kSeThreads / 32; k++)
                acc += lanes[k * 32 + lane];
            m[lane] = c < d.C ? acc * inv : 0.0f;
        }
    } else {
        const int64_t c = c0 + w;
        float a0 = 0.0f, a1 = 0.0f;
        if (c < d.C) {
            const T *xp = x + (n * d.C + c) * d.S;
            int64_t r = lane;
            for (; r + 32 < d.S; r += 64) {
                a0 += load<T>(xp[r]);
                a1 += load<T>(xp[r + 32]);
            }
            for (; r < d.S; r += 32)
                a0 += load<T>(xp[r]);
        }
        a0 += a1;
        for (int o = 16; o > 0; o >>= 1)
            a0 += __shfl_xor_sync(0xffffffffu, a0, o);
        if (lane == 0) m[w] = c < d.C ? a0 * inv : 0.0f;
    }
    __syncthreads();
    /* This block's share of h: lanes along its channels. */
    float *share = ws + (n * nb + blockIdx.x) * d.hidden;
    const int64_t c = c0 + lane;
    const float mine = lane < per ? m[lane] : 0.0f;
#pragma unroll 4
    for (int64_t j = w; j < d.hidden; j += kSeThreads / 32) {
        float v = lane < per && c < d.C ? load<T>(w1[j * d.C + c]) * mine : 0.0f;
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) share[j] = v;
    }
}

/* The split gate's h for sample n into h [hidden] (shared): act1(b1 + the
 * sum of the first launch's nb shares).  The block's threads are lanes
 * along h (a multiple of 32 of them, up to the block) times parts along
 * the shares, so each thread's loads are few and independent; red is a
 * kSeThreads scratch; every sum in a fixed order.  Each block of the second
 * launch computes it, all at once, where one block a sample used to sum
 * the shares one after another at the end of the first launch
 * (EfficientNetV2-S's 48 shares of 64 at batch 16). */
template <typename T>
__device__ __forceinline__ void se_hidden(const cuk_se_desc &d, const float *ws, const T *b1,
                                          int64_t n, float *h, float *red)
{
    const int t = threadIdx.x;
    const int64_t nb = se_cblocks(d), h32 = (d.hidden + 31) / 32 * 32;
    const float *sh = ws + n * nb * d.hidden;
    for (int64_t j0 = 0; j0 < d.hidden; j0 += kSeThreads) {
        const int span = (int)(h32 - j0 < kSeThreads ? h32 - j0 : kSeThreads);
        const int parts = kSeThreads / span, p = t / span;
        const int64_t j = j0 + t % span;
        float acc = 0.0f;
        if (p < parts && j < d.hidden) {
#pragma unroll 4
            for (int64_t b = p; b < nb; b += parts)
                acc += __ldcg(&sh[b * d.hidden + j]);
        }
        red[t] = acc;
        __syncthreads();
        if (t < span && j0 + t < d.hidden) {
            float v = b1 ? load<T>(b1[j0 + t]) : 0.0f;
            for (int q = 0; q < parts; q++)
                v += red[q * span + t];
            h[j0 + t] = se_act(d.act1, v);
        }
        __syncthreads();
    }
}

/* The split gate's second launch: grid (output blocks, N), one warp an
 * output channel, y[n, c] = act2(W2[c, :] h[n] + b2[c]). */
template <typename T>
__global__ void __launch_bounds__(kSeThreads)
    k_se_fc2(const __grid_constant__ cuk_se_desc d, const float *ws, const T *b1, const T *w2,
             const T *b2, T *y)
{
    cuk_kernel_enter();
    extern __shared__ float se_sh[]; /* h [hidden] */
    __shared__ float red[kSeThreads];
    const int64_t n = blockIdx.y;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    se_hidden<T>(d, ws, b1, n, se_sh, red);
    const int64_t c = (int64_t)blockIdx.x * (kSeThreads / 32) + w;
    if (c >= d.C) return;
    const T *row = w2 + c * d.hidden;
    float a0 = 0.0f, a1 = 0.0f;
    int64_t j = lane;
    for (; j + 32 < d.hidden; j += 64) {
        a0 += load<T>(row[j]) * se_sh[j];
        a1 += load<T>(row[j + 32]) * se_sh[j + 32];
    }
    if (j < d.hidden) a0 += load<T>(row[j]) * se_sh[j];
    a0 += a1;
    for (int o = 16; o > 0; o >>= 1)
        a0 += __shfl_xor_sync(0xffffffffu, a0, o);
    if (lane == 0) y[n * d.C + c] = store<T>(se_act(d.act2, a0 + (b2 ? load<T>(b2[c]) : 0.0f)));
}

/* The split gate's second launch with the multiply: grid (32-channel
 * blocks, N, parts of S).  Each block computes s for its 32 channels (two
 * a warp, lanes along hidden), then y = x * s over its rows [r0, r1):
 * channels-last, lanes along the channels (16-byte vectors of them where
 * they come so) and warps along the rows; channels-first, a warp a channel
 * and lanes along the rows. */
template <typename T>
__global__ void __launch_bounds__(kSeThreads)
    k_se_fc2_mul(const __grid_constant__ cuk_se_desc d, int64_t chunk, const float *ws, const T *b1,
                 const T *w2, const T *b2, const T *x, T *y)
{
    cuk_kernel_enter();
    extern __shared__ float se_sh[]; /* h [hidden] */
    __shared__ float red[kSeThreads];
    __shared__ float g[32];
    const int64_t n = blockIdx.y, c0 = (int64_t)blockIdx.x * 32;
    const int64_t r0 = (int64_t)blockIdx.z * chunk, r1 = r0 + chunk < d.S ? r0 + chunk : d.S;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    se_hidden<T>(d, ws, b1, n, se_sh, red);
    for (int k = w; k < 32; k += kSeThreads / 32) {
        const int64_t c = c0 + k;
        float a0 = 0.0f;
        if (c < d.C) {
            const T *row = w2 + c * d.hidden;
            for (int64_t j = lane; j < d.hidden; j += 32)
                a0 += load<T>(row[j]) * se_sh[j];
        }
        for (int o = 16; o > 0; o >>= 1)
            a0 += __shfl_xor_sync(0xffffffffu, a0, o);
        if (lane == 0)
            g[k] = c < d.C ? load<T>(store<T>(se_act(d.act2, a0 + (b2 ? load<T>(b2[c]) : 0.0f))))
                           : 0.0f;
    }
    __syncthreads();
    constexpr int V = 16 / sizeof(T), LR = 32 / V, RL = kSeThreads / LR;
    if (d.nhwc && d.C % V == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)y % 16 == 0) {
        /* 16-byte vectors: a row 4 (fp32: 8) lanes, 128 (64) rows at once */
        const int cv = lane % LR;
        const int64_t c = c0 + cv * V;
        if (c >= d.C) return;
        float gv[V];
#pragma unroll
        for (int e = 0; e < V; e++)
            gv[e] = g[cv * V + e];
        const T *xs = x + n * d.S * d.C + c;
        T *ys = y + n * d.S * d.C + c;
        for (int64_t r = r0 + w * (32 / LR) + lane / LR; r < r1; r += RL) {
            const vec16<T> u = *reinterpret_cast<const vec16<T> *>(xs + r * d.C);
            vec16<T> o;
#pragma unroll
            for (int e = 0; e < V; e++)
                o.v[e] = store<T>(load<T>(u.v[e]) * gv[e]);
            *reinterpret_cast<vec16<T> *>(ys + r * d.C) = o;
        }
    } else if (d.nhwc) {
        const int64_t c = c0 + lane;
        if (c >= d.C) return;
        const float gc = g[lane];
        const T *xp = x + n * d.S * d.C + c;
        T *yp = y + n * d.S * d.C + c;
        for (int64_t r = r0 + w; r < r1; r += kSeThreads / 32)
            yp[r * d.C] = store<T>(load<T>(xp[r * d.C]) * gc);
    } else {
        for (int k = w; k < 32; k += kSeThreads / 32) {
            const int64_t c = c0 + k;
            if (c >= d.C) break;
            const float gc = g[k];
            const T *xp = x + (n * d.C + c) * d.S;
            T *yp = y + (n * d.C + c) * d.S;
            for (int64_t r = r0 + lane; r < r1; r += 32)
                yp[r] = store<T>(load<T>(xp[r]) * gc);
        }
    }
}

/* Channel blocks of a part, and parts: about two blocks an SM in all, at
 * least 256 rows a part; the split gate has one part. */
static void se_grid(const cuk_se_desc *d, int64_t *cblocks, int *parts)
{
    *cblocks = se_cblocks(*d);
    int64_t blocks = *cblocks * d->N;
    int64_t want = (264 + blocks - 1) / blocks, most = (d->S + 255) / 256;
    int64_t p = want < most ? want : most;
    *parts = d->split ? 1 : (int)(p < 1 ? 1 : (p > 1024 ? 1024 : p));
}

static size_t se_shared(const cuk_se_desc *d)
{
    if (d->split) return (size_t)d->hidden * sizeof(float);
    size_t lanes = (size_t)kSeThreads * sizeof(float);
    size_t mh = (size_t)(d->C + d->hidden) * sizeof(float);
    return mh > lanes ? mh : lanes;
}

} /* namespace */

extern "C" int cuk_se_gate_ok(const cuk_se_desc *d)
{
    return d->N >= 1 && d->N <= 65535 && d->C >= 1 && d->S >= 1 && d->hidden >= 1 &&
           (d->C + 31) / 32 <= INT32_MAX && d->N * d->S <= INT64_MAX / d->C &&
           se_shared(d) + (d->split ? (kSeThreads + 32) * sizeof(float) : 0) <= 48 * 1024;
}

extern "C" size_t cuk_se_gate_workspace(const cuk_se_desc *d)
{
    if (!cuk_se_gate_ok(d)) return 0;
    int64_t cb;
    int parts;
    se_grid(d, &cb, &parts);
    if (d->split) return (size_t)(d->N * cb * d->hidden) * sizeof(float);
    return (size_t)parts * (size_t)(d->N * d->C) * sizeof(float) + (size_t)d->N * sizeof(unsigned);
}

extern "C" cudaError_t cuk_se_gate(cuk_dtype t, const cuk_se_desc *d, const void *x, const void *w1,
                                   const void *b1, const void *w2, const void *b2, void *y,
                                   void *ws, cudaStream_t stream)
{
    if (!cuk_se_gate_ok(d) || !ws || !x || !w1 || !w2 || !y) return cudaErrorInvalidValue;
    int64_t cb;
    int parts;
    se_grid(d, &cb, &parts);
    size_t shm = se_shared(d);
    if (d->split) {
        dim3 g1((unsigned)cb, (unsigned)d->N), g2((unsigned)((d->C + 15) / 16), (unsigned)d->N);
        const float *shares = (const float *)ws;
        CUK_DISPATCH_FP(t, T,
                        cuk_launch(k_se_pool_fc1<T>, g1, kSeThreads, 0, stream, *d, (const T *)x,
                                   (const T *)w1, (float *)ws));
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return e;
        if (d->mul) {
            /* parts of S so that the launch has about two blocks an SM */
            int64_t cb32 = (d->C + 31) / 32, blocks = cb32 * d->N;
            int64_t rparts = (264 + blocks - 1) / blocks, most = (d->S + 15) / 16;
            rparts = rparts < most ? rparts : most;
            rparts = rparts < 1 ? 1 : (rparts > 65535 ? 65535 : rparts);
            int64_t chunk = (d->S + rparts - 1) / rparts;
            dim3 g3((unsigned)cb32, (unsigned)d->N, (unsigned)rparts);
            CUK_DISPATCH_FP(t, T,
                            cuk_launch(k_se_fc2_mul<T>, g3, kSeThreads, shm, stream, *d, chunk,
                                       shares, (const T *)b1, (const T *)w2, (const T *)b2,
                                       (const T *)x, (T *)y));
            return cudaGetLastError();
        }
        CUK_DISPATCH_FP(t, T,
                        cuk_launch(k_se_fc2<T>, g2, kSeThreads, shm, stream, *d, shares,
                                   (const T *)b1, (const T *)w2, (const T *)b2, (T *)y));
        return cudaGetLastError();
    }
    int64_t chunk = (d->S + parts - 1) / parts;
    dim3 grid((unsigned)cb, (unsigned)d->N, (unsigned)parts);
    CUK_DISPATCH_FP(t, T,
                    cuk_launch(k_se_gate<T>, grid, kSeThreads, shm, stream, *d, chunk, (const T *)x,
                               (const T *)w1, (const T *)b1, (const T *)w2, (const T *)b2, (T *)y,
                               (float *)ws));
    return cudaGetLastError();
}

namespace
{

/* ---- CumSum --------------------------------------------------------- */

template <typename T>
__global__ void k_cumsum_lines(int64_t outer, int64_t len, int64_t inner, int excl, int rev,
                               const T *x, T *y)
{
    cuk_kernel_enter();
    typedef typename acc_of<T>::type A;
    CUK_GRID_STRIDE(l, outer * inner)
    {
        int64_t o = l / inner, r = l - o * inner, base = o * len * inner + r;
        A acc = 0;
        for (int64_t k2 = 0; k2 < len; k2++) {
            int64_t off = base + (rev ? len - 1 - k2 : k2) * inner;
            A v = (A)load<T>(x[off]);
            if (excl) {
                y[off] = store<T>((typename tr<T>::C)acc);
                acc = acc_add<A>(acc, v);
            } else {
                acc = acc_add<A>(acc, v);
                y[off] = store<T>((typename tr<T>::C)acc);
            }
        }
    }
}

/* Contiguous lines: a warp scans 32 elements at a time. */
template <typename T>
__global__ void k_cumsum_warp(int64_t lines, int64_t len, int excl, int rev, const T *x, T *y)
{
    cuk_kernel_enter();
    typedef typename acc_of<T>::type A;
    group_pos gp = group_of(32);
    for (int64_t l = gp.first; l < lines; l += gp.count) {
        const int64_t base = l * len;
        A carry = 0;
        for (int64_t c0 = 0; c0 < len; c0 += 32) {
            int64_t k2 = c0 + gp.lane, off = base + (rev ? len - 1 - k2 : k2);
            A v = k2 < len ? (A)load<T>(x[off]) : (A)0, inc = v;
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                A t = __shfl_up_sync(0xffffffffu, inc, o);
                if (gp.lane >= o) inc = acc_add<A>(inc, t);
            }
            A ex = __shfl_up_sync(0xffffffffu, inc, 1);
            if (gp.lane == 0) ex = 0;
            if (k2 < len) y[off] = store<T>((typename tr<T>::C)acc_add<A>(carry, excl ? ex : inc));
            carry = acc_add<A>(carry, __shfl_sync(0xffffffffu, inc, 31));
        }
    }
}

/* ---- TopK ----------------------------------------------------------- */

template <typename T> __device__ __forceinline__ uint64_t topk_key(T v, int largest)
{
    uint64_t k = order_key<T>(v);
    return largest ? k : ~k;
}

/* k passes: each takes the best element strictly after the previous one in
 * (key descending, index ascending) order. */
template <typename T>
__global__ void k_topk_select(int64_t outer, int64_t len, int64_t inner, int64_t k, int largest,
                              int G, const T *x, T *vals, int64_t *idx)
{
    cuk_kernel_enter();
    typedef racc<float, RK_ARG> RA;
    __shared__ RA sh[32];
    group_pos gp = group_of(G);
    for (int64_t l = gp.first; l < outer * inner; l += gp.count) {
        int64_t o = l / inner, r = l - o * inner;
        const T *xl = x + o * len * inner + r;
        int64_t ob = o * k * inner + r;
        uint64_t pk = 0;
        int64_t pi = -1;
        for (int64_t j = 0; j < k; j++) {
            RA best;
            best.init(0);
            for (int64_t e = gp.lane; e < len; e += G) {
                uint64_t kk = topk_key<T>(xl[e * inner], largest);
                if (pi < 0 || kk < pk || (kk == pk && e > pi)) best.add2(kk, e);
            }
            best = group_merge<RA>(best, G, sh, 0);
            if (gp.lane == 0) {
                vals[ob + j * inner] = xl[best.idx * inner];
                idx[ob + j * inner] = best.idx;
            }
            pk = best.key;
            pi = best.idx;
        }
    }
}

const int kSortMax = 2048;

/* Lines of up to kSortMax elements: a block sorts (key, index) pairs in
 * shared memory and writes the first k. */
template <typename T>
__global__ void k_topk_sort(int64_t outer, int64_t len, int64_t inner, int64_t k, int largest,
                            const T *x, T *vals, int64_t *idx)
{
    cuk_kernel_enter();
    __shared__ uint64_t key[kSortMax];
    __shared__ int32_t pos[kSortMax];
    int P = 2;
    while (P < len)
        P <<= 1;
    for (int64_t l = blockIdx.x; l < outer * inner; l += gridDim.x) {
        int64_t o = l / inner, r = l - o * inner;
        const T *xl = x + o * len * inner + r;
        int64_t ob = o * k * inner + r;
        __syncthreads(); /* the previous line's readers are done */
        for (int e = threadIdx.x; e < P; e += blockDim.x) {
            key[e] = e < len ? topk_key<T>(xl[e * inner], largest) : 0;
            pos[e] = e < len ? e : INT32_MAX;
        }
        __syncthreads();
        for (int size = 2; size <= P; size <<= 1) {
            for (int stride = size >> 1; stride > 0; stride >>= 1) {
                for (int t = threadIdx.x; t < P / 2; t += blockDim.x) {
                    int i = 2 * t - (t & (stride - 1)), j = i + stride;
                    /* a before b: larger key, or the same key and a lower index */
                    bool j_first = key[j] > key[i] || (key[j] == key[i] && pos[j] < pos[i]);
                    bool i_first = key[i] > key[j] || (key[i] == key[j] && pos[i] < pos[j]);
                    if ((i & size) == 0 ? j_first : i_first) {
                        uint64_t tk = key[i];
                        key[i] = key[j];
                        key[j] = tk;
                        int32_t tp = pos[i];
                        pos[i] = pos[j];
                        pos[j] = tp;
                    }
                }
                __syncthreads();
            }
        }
        for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
            vals[ob + j * inner] = xl[(int64_t)pos[j] * inner];
            idx[ob + j * inner] = pos[j];
        }
    }
}

int is_num(cuk_dtype t)
{
    return t >= CUK_DT_F32 && t <= CUK_DT_U8;
}

} /* namespace */

/* ---- entry points --------------------------------------------------- */

extern "C" int cuk_reduce_ok(cuk_red_fn fn, cuk_dtype t)
{
    if ((int)fn < 0 || fn >= CUK_R_COUNT) return 0;
    if (fn == CUK_R_MAX || fn == CUK_R_MIN || fn == CUK_R_ARGMAX || fn == CUK_R_ARGMIN)
        return is_num(t) || t == CUK_DT_BOOL;
    return is_num(t);
}

extern "C" cudaError_t cuk_reduce(cuk_red_fn fn, cuk_dtype t, int select_last,
                                  const cuk_reduce_desc *d, const void *x, void *y,
                                  cudaStream_t stream)
{
    if (!d || !cuk_reduce_ok(fn, t) || d->n_kept < 0 || d->n_kept > CUK_MAX_DIMS ||
        d->n_red < 0 || d->n_red > CUK_MAX_DIMS)
        return cudaErrorInvalidValue;
    red_args a;
    a.d = *d;
    a.n_out = a.n_red = 1;
    for (int i = 0; i < d->n_kept; i++)
        a.n_out *= d->kept[i];
    for (int i = 0; i < d->n_red; i++)
        a.n_red *= d->red[i];
    if (a.n_out <= 0) return cudaSuccess;
    a.fn = fn;
    a.last = select_last;
    /* Strided reduced elements and contiguous outputs: a thread per output
     * (neighbouring threads read neighbouring elements); long reductions
     * into few outputs: a block each; otherwise a warp each. */
    int64_t min_red = INT64_MAX;
    for (int i = 0; i < d->n_red; i++) {
        int64_t st = d->in_red[i] < 0 ? -d->in_red[i] : d->in_red[i];
        if (d->red[i] > 1 && st < min_red) min_red = st;
    }
    int kept_contig = 0;
    for (int i = 0; i < d->n_kept; i++)
        if (d->kept[i] > 1 && (d->in_kept[i] == 1 || d->in_kept[i] == -1)) kept_contig = 1;
    if (a.n_red <= 16 || (min_red > 1 && kept_contig))
        a.group = 1;
    else if (a.n_red >= 8192 && a.n_out < 1024)
        a.group = kThreads;
    else
        a.group = 32;
    unsigned grid = grid_groups(a.n_out, a.group);
    int kind = kind_of(fn);
    CUK_DISPATCH_DT(t, T, return reduce_run<T>(kind, a, grid, x, y, stream));
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuk_axis_norm(cuk_axis_op op, cuk_dtype t, int64_t outer, int64_t len,
                                     int64_t inner, const void *x, void *y, cudaStream_t stream)
{
    if (outer < 0 || len < 0 || inner < 0) return cudaErrorInvalidValue;
    if (outer == 0 || len == 0 || inner == 0) return cudaSuccess;
    int G = line_group(outer * inner, len, inner);
    unsigned grid = grid_groups(outer * inner, G);
    switch (op) {
    case CUK_AX_SOFTMAX:
        CUK_DISPATCH_FP(t, T,
                        cuk_launch(k_axis<T, CUK_AX_SOFTMAX>, grid, kThreads, 0, stream, outer, len,
                                   inner, G, (const T *)x, (T *)y));
        break;
    case CUK_AX_LOGSOFTMAX:
        CUK_DISPATCH_FP(t, T,
                        cuk_launch(k_axis<T, CUK_AX_LOGSOFTMAX>, grid, kThreads, 0, stream, outer,
                                   len, inner, G, (const T *)x, (T *)y));
        break;
    case CUK_AX_HARDMAX:
        CUK_DISPATCH_FP(t, T,
                        cuk_launch(k_axis<T, CUK_AX_HARDMAX>, grid, kThreads, 0, stream, outer, len,
                                   inner, G, (const T *)x, (T *)y));
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

/* ---- pooling, four channels a thread -------------------------------- */

/* One thread per output pixel and four neighbouring channels of a 2-D pool
 * in NHWC (cuk_pool_nhwc4_ok): the window's taps as vector loads, every
 * index in 32 bits.  The same arithmetic as the generic k_pool (kernels.cu):
 * fmaxf for the maximum (a NaN tap is passed over), the sum over the taps
 * in the input divided by the count the node asks for. */
namespace
{

template <typename T, bool MAX>
__global__ void k_pool_nhwc4(cuk_pool_desc d, int n4, int C4, const T *__restrict__ x,
                             T *__restrict__ y)
{
    cuk_kernel_enter();
    const int H = (int)d.H, W = (int)d.W, OH = (int)d.OH, OW = (int)d.OW;
    const int kh = (int)d.kh, kw = (int)d.kw, sh = (int)d.sh, sw = (int)d.sw;
    const int dh = (int)d.dh, dw = (int)d.dw, pt = (int)d.pad_t, pl = (int)d.pad_l;
    const int pb = (int)d.pad_b, pr = (int)d.pad_r;
    const int xs0 = (int)d.xs[0], xs2 = (int)d.xs[2], xs3 = (int)d.xs[3];
    const int ys0 = (int)d.ys[0], ys2 = (int)d.ys[2], ys3 = (int)d.ys[3];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
        int t = i / C4;
        const int c = (i - t * C4) * 4;
        const int ow = t % OW;
        t /= OW;
        const int oh = t % OH, nn = t / OH;
        const int h0 = oh * sh - pt, w0 = ow * sw - pl;
        const T *xp = x + nn * xs0 + c;
        const float init = MAX ? -CUDART_INF_F : 0.0f;
        float4 acc = make_float4(init, init, init, init);
        int count = 0;
        for (int ki = 0; ki < kh; ki++) {
            const int h = h0 + ki * dh;
            const bool h_in = h >= 0 && h < H, h_pad = h >= -pt && h < H + pb;
            for (int kj = 0; kj < kw; kj++) {
                const int w = w0 + kj * dw;
                const bool w_in = w >= 0 && w < W, w_pad = w >= -pl && w < W + pr;
                if (h_in && w_in) {
                    const float4 v = f4<T>::ld(xp + h * xs2 + w * xs3);
                    if (MAX) {
                        acc.x = fmaxf(acc.x, v.x);
                        acc.y = fmaxf(acc.y, v.y);
                        acc.z = fmaxf(acc.z, v.z);
                        acc.w = fmaxf(acc.w, v.w);
                    } else {
                        acc.x += v.x;
                        acc.y += v.y;
                        acc.z += v.z;
                        acc.w += v.w;
                    }
                }
                if (d.count_include_pad ? (h_pad && w_pad) : (h_in && w_in)) count++;
            }
        }
        if (!MAX) {
            const float f = (float)count;
            acc.x = count ? acc.x / f : CUDART_NAN_F;
            acc.y = count ? acc.y / f : CUDART_NAN_F;
            acc.z = count ? acc.z / f : CUDART_NAN_F;
            acc.w = count ? acc.w / f : CUDART_NAN_F;
        }
        f4<T>::st(y + nn * ys0 + oh * ys2 + ow * ys3 + c, acc);
    }
}

} /* namespace */

extern "C" int cuk_pool_nhwc4_ok(cuk_dtype t, const cuk_pool_desc *d, const void *x, const void *y)
{
    if (!d || !d->nhwc || (t != CUK_DT_F32 && t != CUK_DT_F16 && t != CUK_DT_BF16)) return 0;
    if (d->D != 1 || d->OD != 1 || d->kd != 1) return 0;
    if (d->C < 4 || d->C % 4 || d->xs[1] != 1 || d->ys[1] != 1) return 0;
    const int64_t *st[6] = {&d->xs[0], &d->xs[2], &d->xs[3], &d->ys[0], &d->ys[2], &d->ys[3]};
    for (int k = 0; k < 6; k++)
        if (*st[k] % 4) return 0;
    size_t vec = (t == CUK_DT_F32 ? 4 : 2) * 4;
    if ((uintptr_t)x % vec || (uintptr_t)y % vec) return 0;
    /* every index and offset the kernel forms fits 32 bits */
    int64_t outs = d->N * d->OH * d->OW * d->C;
    int64_t x_end = (d->N - 1) * d->xs[0] + (d->H - 1) * d->xs[2] + (d->W - 1) * d->xs[3] + d->C;
    int64_t y_end = (d->N - 1) * d->ys[0] + (d->OH - 1) * d->ys[2] + (d->OW - 1) * d->ys[3] + d->C;
    int64_t reach = (d->OH + d->kh) * d->sh * d->dh + (d->OW + d->kw) * d->sw * d->dw;
    const int64_t lim = kMax32;
    return outs < lim && x_end < lim && y_end < lim && reach < lim && d->kh < lim &&
           d->kw < lim && d->pad_t < lim && d->pad_l < lim && d->pad_b < lim && d->pad_r < lim;
}

extern "C" cudaError_t cuk_pool_nhwc4(cuk_dtype t, const cuk_pool_desc *d, const void *x, void *y,
                                      cudaStream_t stream)
{
    if (!cuk_pool_nhwc4_ok(t, d, x, y)) return cudaErrorInvalidValue;
    int n4 = (int)(d->N * d->OH * d->OW * (d->C / 4));
    if (n4 == 0) return cudaSuccess;
    int C4 = (int)(d->C / 4);
    if (d->is_max) {
        CUK_DISPATCH_FP(t, T,
                        cuk_launch(k_pool_nhwc4<T, true>, grid_for(n4), kThreads, 0, stream, *d, n4,
                                   C4, (const T *)x, (T *)y));
    } else {
        CUK_DISPATCH_FP(t, T,
                        cuk_launch(k_pool_nhwc4<T, false>, grid_for(n4), kThreads, 0, stream, *d,
                                   n4, C4, (const T *)x, (T *)y));
    }
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_groupnorm(cuk_dtype t, const cuk_groupnorm_desc *d, const void *x,
                                     const void *scale, const void *bias, void *y,
                                     cudaStream_t stream)
{
    if (!d || d->N < 0 || d->C < 0 || d->S < 0 || d->G < 1 || d->C % d->G != 0)
        return cudaErrorInvalidValue;
    if (d->N == 0 || d->C == 0 || d->S == 0) return cudaSuccess;
    int64_t groups = d->N * d->G;
    unsigned grid = (unsigned)(groups < kMaxBlocks ? groups : kMaxBlocks);
    int channels_fast = d->cs == 1 && d->ss != 1;
    CUK_DISPATCH_FP(t, T,
                    cuk_launch(k_groupnorm<T>, grid, kThreads, 0, stream, *d, channels_fast,
                               (const T *)x, (const T *)scale, (const T *)bias, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_cumsum(cuk_dtype t, int64_t outer, int64_t len, int64_t inner,
                                  int exclusive, int reverse, const void *x, void *y,
                                  cudaStream_t stream)
{
    if (outer < 0 || len < 0 || inner < 0 || !is_num(t)) return cudaErrorInvalidValue;
    if (outer == 0 || len == 0 || inner == 0) return cudaSuccess;
    if (inner > 1 || len <= 4) {
        CUK_DISPATCH_DT(t, T,
                        cuk_launch(k_cumsum_lines<T>, grid_for(outer * inner), kThreads, 0, stream,
                                   outer, len, inner, exclusive, reverse, (const T *)x, (T *)y));
    } else {
        CUK_DISPATCH_DT(t, T,
                        cuk_launch(k_cumsum_warp<T>, grid_groups(outer, 32), kThreads, 0, stream,
                                   outer, len, exclusive, reverse, (const T *)x, (T *)y));
    }
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_topk(cuk_dtype t, int64_t outer, int64_t len, int64_t inner,
                                int64_t k, int largest, const void *x, void *values,
                                int64_t *indices, cudaStream_t stream)
{
    if (outer < 0 || len < 0 || inner < 0 || k < 0 || k > len || len > INT32_MAX ||
        !(is_num(t) || t == CUK_DT_BOOL))
        return cudaErrorInvalidValue;
    int64_t lines = outer * inner;
    if (lines == 0 || k == 0) return cudaSuccess;
    if (len <= kSortMax && k > 8) {
        unsigned grid = (unsigned)(lines < kMaxBlocks ? lines : kMaxBlocks);
        CUK_DISPATCH_DT(t, T,
                        cuk_launch(k_topk_sort<T>, grid, kThreads, 0, stream, outer, len, inner, k,
                                   largest, (const T *)x, (T *)values, indices));
    } else {
        int G = len > kSortMax ? kThreads : 32;
        CUK_DISPATCH_DT(t, T,
                        cuk_launch(k_topk_select<T>, grid_groups(lines, G), kThreads, 0, stream,
                                   outer, len, inner, k, largest, G, (const T *)x, (T *)values,
                                   indices));
    }
    return cudaGetLastError();
}
