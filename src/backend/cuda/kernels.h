/*
 * kernels.h - the CUDA backend's own kernels, callable from C.
 *
 * Every function enqueues work on `stream` and returns the launch status
 * (cudaGetLastError()); none waits.  Tensors are described by the caller in
 * elements: shapes, strides (which may be 0 for a broadcast dimension, or
 * negative for a reversed one) and offsets.  Floating-point kernels come in
 * f32, f16 and bf16 and compute in f32; data-movement kernels only care
 * about the element size (1, 2, 4 or 8 bytes).
 */
#ifndef OS_CUDA_KERNELS_H
#define OS_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUK_MAX_DIMS 8
#define CUK_MAX_CONCAT 128 /* a plan's inputs; DenseNet-121 concatenates up to 25 */
#define CUK_MAX_SPLIT 128

typedef enum cuk_type { CUK_F32 = 0, CUK_F16, CUK_BF16 } cuk_type;

/* An iteration over `shape` (row-major order of its dims) with the element
 * offset of each operand: offset[k] + sum_i index_i * stride[k][i].
 * Operand 0 is the destination. */
typedef struct cuk_nd {
    int ndim;
    int64_t shape[CUK_MAX_DIMS];
    int64_t stride[3][CUK_MAX_DIMS];
    int64_t offset[3];
} cuk_nd;

typedef enum cuk_unary_op {
    CUK_RELU = 0,
    CUK_SIGMOID,
    CUK_TANH,
    CUK_CLIP, /* p0 = min, p1 = max */
    CUK_GELU_ERF,
    CUK_GELU_TANH,
    CUK_ERF,
    CUK_HARDSIGMOID, /* max(0, min(1, p0 * x + p1)) */
    CUK_HARDSWISH,   /* x * max(0, min(1, x / 6 + 1/2)) */
    CUK_SQRT
} cuk_unary_op;

typedef enum cuk_binary_op { CUK_ADD = 0, CUK_SUB, CUK_MUL, CUK_DIV, CUK_POW } cuk_binary_op;

/* y[i] = op(x[i]) for n contiguous elements (x == y allowed). */
cudaError_t cuk_unary(cuk_type t, cuk_unary_op op, float p0, float p1, int64_t n, const void *x,
                      void *y, cudaStream_t stream);

/* y = op(a, b) over nd: operand 0 is y, 1 is a, 2 is b. */
cudaError_t cuk_binary(cuk_type t, cuk_binary_op op, const cuk_nd *nd, const void *a, const void *b,
                       void *y, cudaStream_t stream);

/* dst = src over nd: operand 0 is dst, 1 is src (elements of elem bytes). */
cudaError_t cuk_copy(size_t elem, const cuk_nd *nd, const void *src, void *dst,
                     cudaStream_t stream);

/* Concatenation of n contiguous sources along a middle axis: source k is
 * [outer, axis[k], inner], dst is [outer, sum(axis), inner].  Any n: one
 * launch per 64 sources.  Only bytes move, so elem is any element size. */
cudaError_t cuk_concat(size_t elem, int n, const void *const *src, const int64_t *axis,
                       int64_t outer, int64_t inner, void *dst, cudaStream_t stream);

/* The inverse: src [outer, sum(axis), inner] into n contiguous outputs. */
cudaError_t cuk_split(size_t elem, int n, const void *src, const int64_t *axis, int64_t outer,
                      int64_t inner, void *const *dst, cudaStream_t stream);

/* What cuk_fill_random writes per element; the values of
 * opsched_buffer_fill_random: with z_i splitmix64's output i from `state`
 * (os_rng seeded), floats (z_i >> 11) * 2^-52 - 1 rounded to the type, U8
 * the low byte of z_i, I32/I64 z_i % 7. */
typedef enum cuk_fill_kind {
    CUK_FILL_F32 = 0,
    CUK_FILL_F16,
    CUK_FILL_BF16,
    CUK_FILL_U8,
    CUK_FILL_I32,
    CUK_FILL_I64
} cuk_fill_kind;

cudaError_t cuk_fill_random(cuk_fill_kind k, int64_t n, uint64_t state, void *y,
                            cudaStream_t stream);

typedef enum cuk_pad_mode { CUK_PAD_CONSTANT = 0, CUK_PAD_REFLECT, CUK_PAD_EDGE } cuk_pad_mode;

/* y (contiguous, out_shape) = x padded: x index = y index - begin[i] per
 * dim, resolved by mode where it falls outside [0, in_shape[i]). */
typedef struct cuk_pad_desc {
    int ndim;
    int64_t out_shape[CUK_MAX_DIMS];
    int64_t in_shape[CUK_MAX_DIMS];
    int64_t in_stride[CUK_MAX_DIMS];
    int64_t begin[CUK_MAX_DIMS];
    cuk_pad_mode mode;
    float value;
} cuk_pad_desc;

cudaError_t cuk_pad(cuk_type t, const cuk_pad_desc *d, const void *x, void *y, cudaStream_t stream);

/* y[o, j, i] = x[o, idx[j], i]: x is [outer, axis, inner], y is
 * [outer, n_idx, inner].  Indices (int32 when idx_is_32, else int64) may be
 * negative (counted from the end); out-of-range ones are clamped. */
cudaError_t cuk_gather(size_t elem, int64_t outer, int64_t axis, int64_t n_idx, int64_t inner,
                       const void *idx, int idx_is_32, const void *x, void *y, cudaStream_t stream);

/* Per-channel operations on a contiguous tensor of n elements whose channel
 * index is (i / cstride) % C. */
/* y[i] += bias[c], then y[i] = max(y[i], 0) when relu; bias may be NULL
 * (then only the Relu, or nothing). */
cudaError_t cuk_bias_add(cuk_type t, int64_t n, int64_t C, int64_t cstride, const void *bias,
                         int relu, void *y, cudaStream_t stream);
/* y = (x - mean[c]) * scale[c] / sqrt(var[c] + eps) + bias[c] */
cudaError_t cuk_batchnorm(cuk_type t, int64_t n, int64_t C, int64_t cstride, float eps,
                          const void *x, const void *scale, const void *bias, const void *mean,
                          const void *var, void *y, cudaStream_t stream);

/* Rows of `cols` contiguous elements normalised: y = (x - mean) / sqrt(var +
 * eps) * scale + bias; scale [cols], bias [cols] or NULL. */
cudaError_t cuk_layernorm(cuk_type t, int64_t rows, int64_t cols, float eps, const void *x,
                          const void *scale, const void *bias, void *y, cudaStream_t stream);

/* Softmax of x [outer, axis, inner] over the middle axis. */
cudaError_t cuk_softmax(cuk_type t, int64_t outer, int64_t axis, int64_t inner, const void *x,
                        void *y, cudaStream_t stream);

/* Mean over the reduced dims.  Each output element (kept dims, with input
 * strides in_kept and output strides out_kept) averages the input elements
 * spanned by the reduced dims (with input strides in_red). */
typedef struct cuk_reduce_desc {
    int n_kept, n_red;
    int64_t kept[CUK_MAX_DIMS], in_kept[CUK_MAX_DIMS], out_kept[CUK_MAX_DIMS];
    int64_t red[CUK_MAX_DIMS], in_red[CUK_MAX_DIMS];
} cuk_reduce_desc;

cudaError_t cuk_reduce_mean(cuk_type t, const cuk_reduce_desc *d, const void *x, void *y,
                            cudaStream_t stream);

/* 2-D max or average pooling; x and y are addressed through strides
 * (n, c, h, w), and y is written in the order given by nhwc. */
typedef struct cuk_pool_desc {
    int is_max;
    int count_include_pad;
    int nhwc;
    int64_t N, C, H, W, OH, OW;
    int64_t kh, kw, sh, sw, dh, dw;
    int64_t pad_t, pad_l, pad_b, pad_r;
    int64_t xs[4], ys[4];
} cuk_pool_desc;

cudaError_t cuk_pool2d(cuk_type t, const cuk_pool_desc *d, const void *x, void *y,
                       cudaStream_t stream);

/* ONNX LRN across channels: x and y [N, C, S] addressed as
 * n * C * S + c * cstride + s * sstride. */
typedef struct cuk_lrn_desc {
    int64_t N, C, S, cstride, sstride;
    int64_t size;
    float alpha, beta, bias;
} cuk_lrn_desc;

cudaError_t cuk_lrn(cuk_type t, const cuk_lrn_desc *d, const void *x, void *y, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* OS_CUDA_KERNELS_H */
