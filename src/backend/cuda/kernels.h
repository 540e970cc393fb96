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

#define CUK_ND_OPS 4 /* operands of an iteration: a destination and up to 3 sources */

/* An iteration over `shape` (row-major order of its dims) with the element
 * offset of each operand: offset[k] + sum_i index_i * stride[k][i].
 * Operand 0 is the destination. */
typedef struct cuk_nd {
    int ndim;
    int64_t shape[CUK_MAX_DIMS];
    int64_t stride[CUK_ND_OPS][CUK_MAX_DIMS];
    int64_t offset[CUK_ND_OPS];
} cuk_nd;

/* The storage types of the generic kernels, in opsched_dtype's order (a
 * float tensor is stored in the math mode's type, the others as they are;
 * bool is one byte, 0 or 1). */
typedef enum cuk_dtype {
    CUK_DT_F32 = 0,
    CUK_DT_F16,
    CUK_DT_BF16,
    CUK_DT_I8,
    CUK_DT_I32,
    CUK_DT_I64,
    CUK_DT_U8,
    CUK_DT_BOOL,
    CUK_DT_COUNT
} cuk_dtype;




/* A gather over nd (operand 0 dst, operand 1 an element of a Concat's
 * output) that reads the Concat's `parts` inputs srcs (at most CUK_MAX_GATHER_PARTS), each lens[k] long
 * along the axis, whose stride in the output is inner (opsched_move_concat). */
#define CUK_MAX_GATHER_PARTS 8
cudaError_t cuk_gather_concat(size_t elem, const cuk_nd *nd, int parts, const void *const *srcs,
                              const int64_t *lens, int64_t inner, void *dst, cudaStream_t stream);

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
 * the low byte of z_i (int8 and uint8 data), I32/I64 z_i % 7, BOOL the low
 * bit of z_i. */
typedef enum cuk_fill_kind {
    CUK_FILL_F32 = 0,
    CUK_FILL_F16,
    CUK_FILL_BF16,
    CUK_FILL_U8,
    CUK_FILL_I32,
    CUK_FILL_I64,
    CUK_FILL_BOOL
} cuk_fill_kind;

cudaError_t cuk_fill_random(cuk_fill_kind k, int64_t n, uint64_t state, void *y,
                            cudaStream_t stream);

typedef enum cuk_pad_mode {
    CUK_PAD_CONSTANT = 0,
    CUK_PAD_REFLECT,
    CUK_PAD_EDGE,
    CUK_PAD_WRAP
} cuk_pad_mode;

/* y (contiguous, out_shape) = x padded: x index = y index - begin[i] per
 * dim, resolved by mode where it falls outside [0, in_shape[i]) (begin may
 * be negative: a crop).  Only bytes move: value holds the constant's bytes
 * in the element's type (its low elem bytes, little-endian), so any
 * element type of 1, 2, 4 or 8 bytes pads. */
typedef struct cuk_pad_desc {
    int ndim;
    int64_t out_shape[CUK_MAX_DIMS];
    int64_t in_shape[CUK_MAX_DIMS];
    int64_t in_stride[CUK_MAX_DIMS];
    int64_t begin[CUK_MAX_DIMS];
    cuk_pad_mode mode;
    uint64_t value;
} cuk_pad_desc;

cudaError_t cuk_pad(size_t elem, const cuk_pad_desc *d, const void *x, void *y,
                    cudaStream_t stream);

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
/* A grouped convolution with few channels a group, depthwise ones (one
 * input channel a group) first among them: x [n, c, h, w] in NCHW or
 * [n, h, w, c] in NHWC, w [m, cg, kh, kw] (in NHWC [m, kh, kw, cg]), bias
 * [m] or NULL, y [n, m, oh, ow] (or NHWC), c / cg groups of m / (c / cg)
 * output channels each; pads are the top and left ones (the output size
 * says the rest).  Depthwise: cg 1 and m c. */
typedef struct cuk_dw_desc {
    int64_t n, c, h, w, oh, ow;
    int64_t m; /* output channels */
    int cg;    /* input channels a group */
    int kh, kw, sh, sw, ph, pw, dh, dw;
    /* cuk_depthwise's kernel for a depthwise NHWC one it tiles: 0 the
     * tile width that keeps two blocks an SM, 1, 2, 4 or 8 that width,
     * -1 the generic one-output-a-thread kernel (the planner times them) */
    int tile_w;
    /* above 0: the four-channel kernel (kernels_depthwise.cu) with tiles
     * of tile_h x tile_w outputs, one of cuk_depthwise_vec_tiles' shapes */
    int tile_h;
} cuk_dw_desc;

/* y = (x - mean[c]) * scale[c] / sqrt(var[c] + eps) + bias[c] */
/* Batch norm in training form over x as [N, C, S] (channels last when
 * nhwc): y, the batch's mean and 1 / sqrt(variance + eps) per channel; and
 * its backward, dx, dscale and dbias from dy, x, scale and those two. */
cudaError_t cuk_bn_train(cuk_type t, int64_t N, int64_t C, int64_t S, int nhwc, float eps,
                         const void *x, const void *scale, const void *bias, void *y, void *mean,
                         void *inv, cudaStream_t stream);
cudaError_t cuk_bn_grad(cuk_type t, int64_t N, int64_t C, int64_t S, int nhwc, const void *dy,
                        const void *x, const void *scale, const void *mean, const void *inv,
                        void *dx, void *dscale, void *dbias, cudaStream_t stream);

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

/* A column reduction: x viewed as [O, R, C] with C contiguous and row r
 * of slice o at (o * R + r) * C, reduced over R into y [O, C] (a global
 * pooling or a mean over H and W of a channels-last tensor).  Several
 * blocks share a long column; their partial results go to ws, of
 * cuk_colreduce_workspace(O, R, C) bytes (0: none needed; zeroed once
 * when allocated, and left zeroed by every launch), and are combined in a
 * fixed order, in the same launch.  cuk_colreduce_ok says whether the shape is
 * one the kernel takes (1 <= O <= 65535, R >= 1, C >= 1). */
typedef enum cuk_col_fn { CUK_COL_SUM = 0, CUK_COL_MEAN, CUK_COL_MAX, CUK_COL_MIN } cuk_col_fn;

int cuk_colreduce_ok(int64_t O, int64_t R, int64_t C);
size_t cuk_colreduce_workspace(int64_t O, int64_t R, int64_t C);
cudaError_t cuk_colreduce(cuk_col_fn fn, cuk_type t, int64_t O, int64_t R, int64_t C, const void *x,
                          void *y, void *ws, cudaStream_t stream);

/* 2-D or 3-D max or average pooling; x and y are addressed through
 * strides (n, c, h, w) and the depth strides xsd, ysd; y is written in the
 * order given by nhwc (2-D only).  A 2-D pool has D = OD = kd = sd = dd = 1
 * and no depth padding.  A window with no tap in the input gives -inf
 * (max) or NaN (exclude-pad average: 0 / 0). */
typedef struct cuk_pool_desc {
    int is_max;
    int count_include_pad;
    int nhwc;
    int64_t N, C, H, W, OH, OW;
    int64_t kh, kw, sh, sw, dh, dw;
    int64_t pad_t, pad_l, pad_b, pad_r;
    int64_t xs[4], ys[4];
    int64_t D, OD, kd, sd, dd, pad_front, pad_back, xsd, ysd;
    int storage_order; /* of the indices: 1 for the spatial axes column-major */
    int generic;       /* 1: the generic kernel even where cuk_pool_nhwc4_ok */
} cuk_pool_desc;

/* ind (may be NULL; max pooling only) gets ONNX's Indices, in y's order:
 * the flat logical input index of each maximum (the first in window order;
 * -1 for a window with no tap in the input). */
cudaError_t cuk_pool(cuk_dtype t, const cuk_pool_desc *d, const void *x, void *y, int64_t *ind,
                     cudaStream_t stream);
/* 1 when cuk_pool runs d on x and y (without indices) four channels a
 * thread (kernels_reduce.cu): a 2-D pool in NHWC whose channels are
 * innermost and a multiple of four, every stride a multiple of four, x
 * and y aligned to four elements, and every offset within 32 bits.  Such
 * a pool reads each window tap as one 16-byte (fp32) or 8-byte access. */
int cuk_pool_nhwc4_ok(cuk_dtype t, const cuk_pool_desc *d, const void *x, const void *y);
cudaError_t cuk_pool_nhwc4(cuk_dtype t, const cuk_pool_desc *d, const void *x, void *y,
                           cudaStream_t stream);

/* ---- the element-wise family (kernels_ew.cu) ------------------------- *
 *
 * One kernel family for every element-wise operator on every storage
 * type: templated on the operands' storage types, the function a
 * launch-uniform argument (a switch no thread diverges on; templating on
 * it too would multiply the instantiations by ~60 for no measured gain on
 * memory-bound work).  Three paths: every operand packed alike (a flat
 * loop, 4 elements per access when aligned), broadcasting through the
 * strides of a cuk_nd (rank up to 8) with 32-bit index arithmetic when
 * every offset fits, else 64-bit.  Values are computed in float for
 * f32/f16/bf16, int32 for int8/uint8/int32/bool and int64 for int64. */

typedef enum cuk_ufn {
    /* opsched_unary_fn's order */
    CUK_U_ABS = 0,
    CUK_U_NEG,
    CUK_U_EXP,
    CUK_U_LOG,
    CUK_U_RECIPROCAL,
    CUK_U_FLOOR,
    CUK_U_CEIL,
    CUK_U_ROUND,
    CUK_U_SIGN,
    CUK_U_SIN,
    CUK_U_COS,
    CUK_U_TAN,
    CUK_U_ASIN,
    CUK_U_ACOS,
    CUK_U_ATAN,
    CUK_U_SINH,
    CUK_U_COSH,
    CUK_U_ASINH,
    CUK_U_ACOSH,
    CUK_U_ATANH,
    CUK_U_ISNAN,
    CUK_U_ISINF,
    CUK_U_NOT,
    CUK_U_BITWISE_NOT,
    CUK_U_LEAKY_RELU,
    CUK_U_ELU,
    CUK_U_SELU,
    CUK_U_CELU,
    CUK_U_THRESHOLDED_RELU,
    CUK_U_SOFTPLUS,
    CUK_U_SOFTSIGN,
    CUK_U_MISH,
    CUK_U_SHRINK,
    CUK_U_SWISH,
    /* the activation kinds of their own */
    CUK_U_RELU,
    CUK_U_CLIP,
    CUK_U_SIGMOID,
    CUK_U_TANH,
    CUK_U_GELU_ERF,
    CUK_U_GELU_TANH,
    CUK_U_ERF,
    CUK_U_HARDSIGMOID,
    CUK_U_HARDSWISH,
    CUK_U_SQRT,
    CUK_U_COUNT
} cuk_ufn;

typedef enum cuk_bfn {
    CUK_B_ADD = 0,
    CUK_B_SUB,
    CUK_B_MUL,
    CUK_B_DIV, /* integers: truncated toward zero; x / 0 is 0 */
    CUK_B_POW,
    CUK_B_MOD,  /* sign of the divisor (Python); x mod 0 is 0 for integers */
    CUK_B_FMOD, /* sign of the dividend (C) */
    CUK_B_MIN,  /* NaN propagates */
    CUK_B_MAX,
    CUK_B_EQUAL,
    CUK_B_LESS,
    CUK_B_LESS_EQUAL,
    CUK_B_GREATER,
    CUK_B_GREATER_EQUAL,
    CUK_B_AND,
    CUK_B_OR,
    CUK_B_XOR,
    CUK_B_SHIFT_LEFT, /* shifts of the type's width or more give 0 (sign fill right) */
    CUK_B_SHIFT_RIGHT,
    CUK_B_BITWISE_AND,
    CUK_B_BITWISE_OR,
    CUK_B_BITWISE_XOR,
    CUK_B_PRELU,
    CUK_B_COUNT
} cuk_bfn;

/* The constants of a unary function: alpha, beta, gamma as ONNX names
 * them (Clip: alpha = min, beta = max on floats; lo, hi on integers). */
typedef struct cuk_ew_params {
    float alpha, beta, gamma;
    int64_t lo, hi;
} cuk_ew_params;

/* 1 when the kernels compute fn from storage type tx into ty. */
int cuk_ew_unary_ok(cuk_ufn fn, cuk_dtype tx, cuk_dtype ty);
int cuk_ew_binary_ok(cuk_bfn fn, cuk_dtype ta, cuk_dtype tb, cuk_dtype ty);

/* Batch normalisation in inference form (kernels_ew.cu), then with act the
 * activation fn: y = fn((x - mean[c]) * scale[c] / sqrt(var[c] + eps) +
 * bias[c]), c = (i / cstride) % C over the n elements. */
cudaError_t cuk_batchnorm(cuk_dtype t, int64_t n, int64_t C, int64_t cstride, float eps,
                          const void *x, const void *scale, const void *bias, const void *mean,
                          const void *var, void *y, int act, cuk_ufn fn, const cuk_ew_params *prm,
                          cudaStream_t stream);

/* The same over the concatenation of parts along the channels, read in
 * place (NHWC, kernels_ew.cu): part k holds channels [off[k], off[k] +
 * ch[k]) of each of the n / C pixels, ch[k] channels a pixel, packed.  The
 * Concat a batch normalisation is the only reader of need not be written
 * (DenseNet's layers).  Four channels a thread where every part's
 * channels are a multiple of four and every pointer is aligned to four
 * elements, one otherwise. */
#define CUK_BN_MAX_PARTS 32
typedef struct cuk_cat_parts {
    int n;
    const void *ptr[CUK_BN_MAX_PARTS];
    int ch[CUK_BN_MAX_PARTS];
    int off[CUK_BN_MAX_PARTS];
} cuk_cat_parts;
/* 1 when cuk_batchnorm_cat takes n elements of C channels in parts of
 * these sizes (n and C within 32 bits, the parts' channels summing to C). */
int cuk_batchnorm_cat_ok(int64_t n, int64_t C, const cuk_cat_parts *parts);
cudaError_t cuk_batchnorm_cat(cuk_dtype t, int64_t n, int64_t C, float eps,
                              const cuk_cat_parts *parts, const void *scale, const void *bias,
                              const void *mean, const void *var, void *y, int act, cuk_ufn fn,
                              const cuk_ew_params *prm, cudaStream_t stream);

/* An element-wise chain in one pass (kernels_ew.cu): per element of y,
 * v = operand 1, then each step in order: v = ufn(v), or v = bfn(v, w)
 * (bfn(w, v) when swap) with w the step's operand; y = v.  Operand 0 is
 * y; every operand is of storage type t, described by its strides over
 * the iteration shape (0 where it broadcasts); arithmetic in float. */
#define CUK_CHAIN_OPS 10
#define CUK_CHAIN_STEPS 8
typedef struct cuk_chain_step {
    int binary;  /* 0: v = ufn(v); 1: v = bfn(v, operand) */
    int fn;      /* cuk_ufn or cuk_bfn */
    int operand; /* binary: the operand's index */
    int swap;    /* binary: bfn(operand, v) */
    cuk_ew_params prm;
} cuk_chain_step;
typedef struct cuk_chain_desc {
    int ndim;
    int64_t shape[CUK_MAX_DIMS];
    int n_ops;
    int64_t stride[CUK_CHAIN_OPS][CUK_MAX_DIMS];
    int n_steps;
    cuk_chain_step steps[CUK_CHAIN_STEPS];
} cuk_chain_desc;
/* The operands of a chain: ops[0] is y (written), the others read. */
typedef struct cuk_chain_ptrs {
    void *ops[CUK_CHAIN_OPS];
} cuk_chain_ptrs;
cudaError_t cuk_ew_chain(cuk_type t, const cuk_chain_desc *d, const cuk_chain_ptrs *p,
                         cudaStream_t stream);

/* y = fn(x) over n packed elements (x == y allowed). */
cudaError_t cuk_ew_unary(cuk_ufn fn, const cuk_ew_params *p, cuk_dtype tx, cuk_dtype ty, int64_t n,
                         const void *x, void *y, cudaStream_t stream);
/* The grouped (depthwise when cg is 1) convolution of d (kernels_conv.cu), then y = fn(y) when
 * act (p: fn's constants). */
cudaError_t cuk_depthwise(cuk_type t, const cuk_dw_desc *d, int nhwc, const void *x, const void *w,
                          const void *bias, int act, cuk_ufn fn, const cuk_ew_params *p, void *y,
                          cudaStream_t stream);
/* The tile shapes (th[k] x tw[k] outputs a thread, up to max of them)
 * the four-channel depthwise kernel has for d (kernels_depthwise.cu): a
 * depthwise NHWC convolution of a multiple of four channels, a square
 * window of 3, 5 or 7, stride 1 or 2 (7: 1), dilation 1; 0 for other
 * shapes.  With staged, also 8 x 8: the kernel that stages a block's
 * input patch in shared memory (stride 1, a multiple of eight channels).
 * It runs when d->tile_h is above 0 (cuk_depthwise, which falls back to
 * the one-channel kernels where the tensors are not aligned). */
int cuk_depthwise_vec_tiles(const cuk_dw_desc *d, int staged, int max, int *th, int *tw);
/* The four-channel kernel itself, with pre_fn (pre_p its constants)
 * applied to every input value as it is read when pre (a prologue
 * activation: y = conv(pre_fn(x)), the padding zero after it; one of
 * cuk_depthwise_vec_pre_ok's); cudaErrorNotSupported for a shape, tile,
 * alignment or prologue it does not have. */
cudaError_t cuk_depthwise_vec(cuk_type t, const cuk_dw_desc *d, const void *x, const void *w,
                              const void *bias, int act, cuk_ufn fn, const cuk_ew_params *p,
                              int pre, cuk_ufn pre_fn, const cuk_ew_params *pre_p, void *y,
                              cudaStream_t stream);
/* 1 when cuk_depthwise_vec applies fn as a prologue (Relu, Clip,
 * HardSigmoid, HardSwish: computed inline in their clamp form), else 0. */
int cuk_depthwise_vec_pre_ok(cuk_ufn fn);
/* A depthwise convolution d in NHWC (one filter a channel, a square window
 * of 3, 5 or 7, stride 1 or 2, dilation 1, at most 1024 channels) and the
 * LayerNormalization over each output pixel's channels after it: y [n, oh,
 * ow, c] = (v - mean) / sqrt(var + eps) * scale + nbias (nbias may be
 * NULL) with v the convolution plus bias (which may be NULL).
 * d->tile_w as for cuk_depthwise (1, 2, 4 or 8 outputs a thread, 0 the
 * width that keeps two blocks an SM).  cudaErrorInvalidValue for a shape
 * it does not run. */
cudaError_t cuk_depthwise_ln(cuk_type t, const cuk_dw_desc *d, const void *x, const void *w,
                             const void *bias, const void *scale, const void *nbias, float eps,
                             void *y, cudaStream_t stream);
/* 1 when cuk_depthwise_ln runs d's shape, else 0. */
int cuk_depthwise_ln_fits(const cuk_dw_desc *d);
/* The columns of a grouped convolution d in NHWC for output pixels
 * [p0, p0 + pc) of its n * oh * ow (kernels_conv.cu): col[g][p][k] in the
 * order of a group's filters, k = (ky * kw + kx) * cg + ci when taps_outer
 * (filters stored [m, kh, kw, cg], as NHWC plans keep them), else
 * ci * kh * kw + ky * kw + kx ([m, cg, kh, kw]), so group g's product is
 * col[g] times its filters transposed; zero where a tap falls in the
 * padding. */
cudaError_t cuk_im2col(cuk_type t, const cuk_dw_desc *d, int taps_outer, const void *x, void *col,
                       int64_t p0, int64_t pc, cudaStream_t stream);
/* A grouped convolution in NHWC as an implicit GEMM on the tensor cores
 * (kernels_gconv.cu): fp16, bf16, or fp32 when tf32 allows its products
 * in TF32; at least 8 input and output channels a group, multiples of 8
 * (of 4 for fp32); the filters [m, kh, kw, cg] when taps_outer, else [m,
 * cg, kh, kw]; y = act(conv(x, w) + bias) (bias may be NULL, act 0: none).
 * _fits says whether the shape and type run (the pointers must also be
 * 16-byte aligned, else cudaErrorNotSupported).  d->tile_w names the
 * input channels a step takes (32, or 64 for fp16 and bf16), 0 the
 * kernel's choice; _slices writes the widths worth timing for d (up to
 * 2) and returns how many. */
int cuk_gconv_mma_fits(cuk_type t, int tf32, const cuk_dw_desc *d);
int cuk_gconv_mma_slices(cuk_type t, const cuk_dw_desc *d, int *widths);
cudaError_t cuk_gconv_mma(cuk_type t, int tf32, const cuk_dw_desc *d, int taps_outer,
                          const void *x, const void *w, const void *bias, int act, cuk_ufn fn,
                          const cuk_ew_params *p, void *y, cudaStream_t stream);
/* A gated map's product (opsched_conv_gate_find) as n products, sample j's
 * weights scaled per input channel: out[j][o][c] = w[o][c] * s[j][c] for
 * the [m, k] weights w and the [n, k] scales s (n * m * k < 2^31). */
cudaError_t cuk_gate_weights(cuk_type t, int64_t n, int64_t m, int64_t k, const void *w,
                             const void *s, void *out, cudaStream_t stream);
/* A convolution's residual epilogue over its n outputs:
 * y = act(y + bias[c] + r), c = (i / cstride) % C, bias NULL when the
 * convolution added it; act 0: no activation. */
cudaError_t cuk_conv_residual(cuk_type t, int64_t n, int64_t C, int64_t cstride, const void *bias,
                              const void *r, int act, cuk_ufn fn, const cuk_ew_params *p, void *y,
                              cudaStream_t stream);
/* y = fn(a, b) over nd: operand 0 is y, 1 is a, 2 is b. */
cudaError_t cuk_ew_binary(cuk_bfn fn, cuk_dtype ta, cuk_dtype tb, cuk_dtype ty, const cuk_nd *nd,
                          const void *a, const void *b, void *y, cudaStream_t stream);
/* out = cond ? x : y over nd: operand 0 is out, 1 cond (bool), 2 x, 3 y;
 * elements of elem bytes. */
cudaError_t cuk_ew_where(size_t elem, const cuk_nd *nd, const void *cond, const void *x,
                         const void *y, void *out, cudaStream_t stream);
/* y = x converted from tx to ty over n packed elements: floats to integers
 * truncate toward zero (saturating at int64, NaN to 0) then wrap to the
 * width; anything to bool is "not zero"; integers narrow by wrapping.
 * round_to CUK_DT_F16 or CUK_DT_BF16 rounds a float result to that type
 * first (a tensor declared narrower than the math mode stores it); any
 * other value: no extra rounding. */
cudaError_t cuk_ew_cast(cuk_dtype tx, cuk_dtype ty, cuk_dtype round_to, int64_t n, const void *x,
                        void *y, cudaStream_t stream);

/* QuantizeLinear / DequantizeLinear over n packed elements.  Element i
 * sits at axis coordinate c = (i / inner) % len, outer index o = i /
 * (inner * len), inner index r = i % inner; its scale and zero point at
 * o * s_outer + (c / block) * s_axis + r * s_inner (all 0 per tensor;
 * block 1 per axis). */
typedef struct cuk_quant_desc {
    int64_t n, len, inner, block;
    int64_t s_outer, s_axis, s_inner;
} cuk_quant_desc;

/* y = saturate(round_half_even(x / scale) + zero_point); x and scale of
 * float type tf, zero point (may be NULL: 0) and y of ty (int8, uint8 or
 * int32). */
cudaError_t cuk_quantize(cuk_dtype tf, cuk_dtype ty, const cuk_quant_desc *d, const void *x,
                         const void *scale, const void *zero_point, void *y, cudaStream_t stream);
/* y = (x - zero_point) * scale; x and zero point of tq (int8, uint8 or
 * int32), scale and y of float type tf. */
cudaError_t cuk_dequantize(cuk_dtype tq, cuk_dtype tf, const cuk_quant_desc *d, const void *x,
                           const void *scale, const void *zero_point, void *y, cudaStream_t stream);

/* ---- the reduction family (kernels_reduce.cu) ------------------------ *
 *
 * Reductions over any axes without a permute: each output element (the
 * kept dims of a cuk_reduce_desc) reduces the sub-space of the reduced
 * dims, by a group of threads chosen at launch: one thread per output when
 * the reduced elements are strided and the outputs contiguous (coalesced
 * across threads), a warp per output otherwise, a block per output for
 * long reductions into few outputs.  Floats accumulate in float (f16 and
 * bf16 too), integers in int64 (wrapping), integer LogSum, LogSumExp, L2
 * and Mean finish in double and truncate toward zero. */

typedef enum cuk_red_fn {
    /* opsched_reduce_fn's order */
    CUK_R_MEAN = 0,
    CUK_R_SUM,
    CUK_R_MAX, /* NaN propagates */
    CUK_R_MIN,
    CUK_R_PROD,
    CUK_R_L1,
    CUK_R_L2,
    CUK_R_LOGSUM,
    CUK_R_LOGSUMEXP,
    CUK_R_SUMSQUARE,
    /* int64 indices of one reduced axis; ties: the first (or the last
     * with select_last); NaN counts as the extreme (the first NaN wins) */
    CUK_R_ARGMAX,
    CUK_R_ARGMIN,
    CUK_R_COUNT
} cuk_red_fn;

/* 1 when the kernels reduce storage type t with fn. */
int cuk_reduce_ok(cuk_red_fn fn, cuk_dtype t);
/* y (of type t, int64 for ArgMax/ArgMin) = fn over d's reduced dims of x.
 * An empty reduction gives fn's identity (0, 1, the type's lowest or
 * highest, -inf for LogSumExp). */
cudaError_t cuk_reduce(cuk_red_fn fn, cuk_dtype t, int select_last, const cuk_reduce_desc *d,
                       const void *x, void *y, cudaStream_t stream);

/* Normalisations along one axis of x and y [outer, len, inner] (packed
 * alike): a thread per line when inner > 1 (neighbouring threads read
 * neighbouring elements), a warp or a block per line otherwise. */
typedef enum cuk_axis_op {
    CUK_AX_SOFTMAX = 0,
    CUK_AX_LOGSOFTMAX,
    CUK_AX_HARDMAX /* 1 at the first maximum, 0 elsewhere */
} cuk_axis_op;

cudaError_t cuk_axis_norm(cuk_axis_op op, cuk_dtype t, int64_t outer, int64_t len, int64_t inner,
                          const void *x, void *y, cudaStream_t stream);

/* GroupNormalization: x and y [N, C, S] addressed as n * ns + c * cs +
 * s * ss; mean and variance per (n, group of C / G channels) over the
 * group's channels and S, then y = (x - mean) / sqrt(var + eps) * scale[c]
 * + bias[c] (scale and bias [C] of the same type).  A block per group. */
typedef struct cuk_groupnorm_desc {
    int64_t N, C, G, S;
    int64_t ns, cs, ss;
    float eps;
} cuk_groupnorm_desc;

cudaError_t cuk_groupnorm(cuk_dtype t, const cuk_groupnorm_desc *d, const void *x,
                          const void *scale, const void *bias, void *y, cudaStream_t stream);

/* The squeeze-and-excitation gate: for each sample n of x [N, C, S]
 * (nhwc 0) or [N, S, C] (nhwc 1), m = the mean over S, then
 * h = act1(W1 m + b1) (W1 [hidden, C]) and y[n, :] = act2(W2 h + b2)
 * (W2 [C, hidden]); y [N, C]; a bias may be NULL, an activation absent
 * (has 0).  All in float, every sum in a fixed order.  ws holds
 * cuk_se_gate_workspace bytes, zeroed once when allocated and left zeroed
 * by every launch.  cuk_se_gate_ok says whether the shape is one it takes.
 *   split 0: one launch.  Blocks reduce parts of S into ws; the last block
 *            of a sample sums the parts and runs both layers.
 *   split 1: two launches, for layers too large for one block and for
 *            large batches.  Each block of the first owns a range of
 *            channels and all of S, takes their means and their share of
 *            W1 m.  Each block of the second sums its sample's shares into
 *            h, then one warp an output computes W2 h; with mul, blocks of
 *            32 channels and a part of S each compute their channels' s
 *            and write y = x * s over their part. */
typedef struct cuk_se_act {
    int has;
    cuk_ufn fn;
    cuk_ew_params prm;
} cuk_se_act;
typedef struct cuk_se_desc {
    int64_t N, C, S, hidden;
    int nhwc;
    int split;
    int mul; /* split only: y = x * s, x's shape and layout (the gate's multiply) */
    cuk_se_act act1, act2;
} cuk_se_desc;
int cuk_se_gate_ok(const cuk_se_desc *d);
size_t cuk_se_gate_workspace(const cuk_se_desc *d);
cudaError_t cuk_se_gate(cuk_dtype t, const cuk_se_desc *d, const void *x, const void *w1,
                        const void *b1, const void *w2, const void *b2, void *y, void *ws,
                        cudaStream_t stream);

/* Scaled dot-product attention in one launch (opsched_attention_attr):
 * O[b,h] = softmax(scale * Q[b,h] K[b,h]^T + bias[b,h]) V[b,h] over
 * Q [B,H,Sq,D], K [B,H,Sk,D], V [B,H,Sk,Dv], bias [B,H,Sq,Sk] and O
 * [B,H,Sq,Dv], each read and written through element strides of those
 * canonical dims (0 for a broadcast dim), so transposed and interleaved
 * operands need no copy.  A block takes 4 * qpw query rows of one (b, h)
 * and walks the keys in tiles of 64 held in shared memory, with the
 * running max and sum of the softmax (no scores in global memory); the
 * products and the softmax are in float.  bias may be NULL.  A row whose
 * scores are all -inf gives NaN, or 0 with nan_rows_zero.  cuk_attention_ok
 * says whether the shape is one it takes (D and Dv up to 256);
 * cuk_attention_shape picks qpw for sm_count SMs and max_shared bytes of
 * shared memory per block. */
typedef struct cuk_attention_desc {
    int64_t B, H, Sq, Sk, D, Dv;
    int64_t q[4], k[4], v[4], bias[4], o[4];
    float scale;
    int nan_rows_zero;
    int tc;  /* the tensor-core kernel, heads of 16..128 in steps of 16: 1 fp16 or bf16,
              * 2 fp32 in split TF32 (fp32 accuracy); 0 the float kernel */
    int qpw; /* query rows per warp: 2, 4 or 8; with tc, warps per block: 1, 2 or 4 */
} cuk_attention_desc;
int cuk_attention_ok(const cuk_attention_desc *d);
void cuk_attention_shape(cuk_attention_desc *d, int sm_count, size_t max_shared);
size_t cuk_attention_shared_bytes(const cuk_attention_desc *d);
/* Lets the chosen kernel take its shared memory (call once per plan, before
 * any launch or capture). */
cudaError_t cuk_attention_prepare(cuk_dtype t, const cuk_attention_desc *d);
cudaError_t cuk_attention(cuk_dtype t, const cuk_attention_desc *d, const void *q, const void *k,
                          const void *v, const void *bias, void *o, cudaStream_t stream);
/* The product form's softmax (cuda_attention.c runs the two products on
 * cuBLASLt): s [B, H, Sq, Sk] row-major holds scale * Q K^T in float; adds
 * the bias (type t, NULL: none) through d->bias's strides and replaces each
 * row by its softmax, a row of -inf by NaN or, with nan_rows_zero, 0. */
cudaError_t cuk_attention_softmax(cuk_dtype t, const cuk_attention_desc *d, float *s,
                                  const void *bias, cudaStream_t stream);

/* CumSum along the middle axis of x and y [outer, len, inner]: a thread
 * per line (sequential) when inner > 1, a warp scanning 32 elements at a
 * time otherwise.  Floats sum in float, integers in int64 (wrapping). */
cudaError_t cuk_cumsum(cuk_dtype t, int64_t outer, int64_t len, int64_t inner, int exclusive,
                       int reverse, const void *x, void *y, cudaStream_t stream);

/* TopK along the middle axis of x [outer, len, inner] into values and
 * int64 indices [outer, k, inner]: the k largest (or smallest), sorted,
 * equal values by lower index first; NaN counts as larger than every
 * number.  Lines of up to 2048 elements with k > 8 are sorted in shared
 * memory (bitonic); otherwise k passes of selection (a warp per line, a
 * block for lines longer than 2048), each taking the best element after
 * the previous one in (value, index) order. */
cudaError_t cuk_topk(cuk_dtype t, int64_t outer, int64_t len, int64_t inner, int64_t k, int largest,
                     const void *x, void *values, int64_t *indices, cudaStream_t stream);

/* ---- the gather/scatter family (kernels_index.cu) -------------------- *
 *
 * One thread per element of the tensor iterated (the output of a gather,
 * the updates of a scatter), its logical coordinates turned into each
 * operand's offset through that operand's strides (so channels-last
 * tensors need nothing special).  Indices are int32 or int64 (idx32);
 * negative ones count from the end.  Out of range after that: gathers
 * clamp to the nearest valid index (as cuk_gather does), scatters drop the
 * update, OneHot writes "off" for the whole row (as ONNX defines); nothing
 * reads or writes out of bounds and no error is recorded. */

/* GatherElements (iterating the output = the indices' shape) and
 * ScatterElements (iterating the updates = the indices' shape): it is the
 * iterated tensor, idx the indices, other the data (gather) or the output
 * (scatter) with 0 on the indexed axis, whose extent and stride in that
 * tensor are axis_len and axis_stride. */
typedef struct cuk_elements_desc {
    int ndim;
    int64_t shape[CUK_MAX_DIMS];
    int64_t s_it[CUK_MAX_DIMS], s_idx[CUK_MAX_DIMS], s_other[CUK_MAX_DIMS];
    int64_t axis_len, axis_stride;
} cuk_elements_desc;

/* GatherND (iterating the output) and ScatterND (iterating the updates):
 * the iteration's dims are the indices' leading dims (those before the
 * tuple axis) then the slice dims.  s_idx: the indices' strides on the
 * leading dims (0 on slice dims), idx_last the stride of the tuple axis;
 * s_other: the data's (gather) or output's (scatter) strides for batch and
 * slice dims (0 on the other leading dims); the k tuple components index
 * dims of extents tup_len and strides tup_stride there. */
typedef struct cuk_nd_index_desc {
    int ndim, k;
    int64_t shape[CUK_MAX_DIMS];
    int64_t s_it[CUK_MAX_DIMS], s_idx[CUK_MAX_DIMS], s_other[CUK_MAX_DIMS];
    int64_t idx_last;
    int64_t tup_len[CUK_MAX_DIMS], tup_stride[CUK_MAX_DIMS];
} cuk_nd_index_desc;

typedef enum cuk_scatter_red {
    CUK_SCATTER_NONE = 0,
    CUK_SCATTER_ADD,
    CUK_SCATTER_MUL,
    CUK_SCATTER_MAX,
    CUK_SCATTER_MIN
} cuk_scatter_red;

cudaError_t cuk_gather_elements(size_t elem, int idx32, const cuk_elements_desc *d,
                                const void *data, const void *idx, void *y, cudaStream_t stream);
cudaError_t cuk_gather_nd(size_t elem, int idx32, const cuk_nd_index_desc *d, const void *data,
                          const void *idx, void *y, cudaStream_t stream);
/* y must already hold the data.  NONE stores (duplicate indices: one of
 * the updates wins, which one is not defined); the reductions apply
 * atomically: float adds and multiplies land in an order that varies from
 * run to run (so do their roundings), max, min and integers are exact.
 * Native atomics where the type has them (add: f32, f16, bf16, int32,
 * int64; max/min: int32, int64), a compare-and-swap loop otherwise. */
cudaError_t cuk_scatter_elements(cuk_dtype t, int idx32, cuk_scatter_red red,
                                 const cuk_elements_desc *d, const void *idx, const void *updates,
                                 void *y, cudaStream_t stream);
cudaError_t cuk_scatter_nd(cuk_dtype t, int idx32, cuk_scatter_red red, const cuk_nd_index_desc *d,
                           const void *idx, const void *updates, void *y, cudaStream_t stream);

/* Tile: y[c] = x[c mod x_shape] over y's logical coordinates. */
typedef struct cuk_tile_desc {
    int ndim;
    int64_t y_shape[CUK_MAX_DIMS], x_shape[CUK_MAX_DIMS];
    int64_t ys[CUK_MAX_DIMS], xs[CUK_MAX_DIMS];
} cuk_tile_desc;

cudaError_t cuk_tile(size_t elem, const cuk_tile_desc *d, const void *x, void *y,
                     cudaStream_t stream);

/* Trilu: over the logical shape (rank >= 2, the last two dims the
 * matrix), y = x where col - row >= k (upper) or <= k (lower), 0 (every
 * byte zero) elsewhere; xs and ys the strides. */
typedef struct cuk_trilu_desc {
    int ndim, upper;
    int64_t shape[CUK_MAX_DIMS];
    int64_t xs[CUK_MAX_DIMS], ys[CUK_MAX_DIMS];
    int64_t k;
} cuk_trilu_desc;

cudaError_t cuk_trilu(size_t elem, const cuk_trilu_desc *d, const void *x, void *y,
                      cudaStream_t stream);

/* OneHot over the output's logical coordinates: the index at the
 * coordinates without the axis (strides s_idx, 0 on the axis), of type ti
 * (any storage type; floats truncate), counted from the end when negative;
 * y = values[1] where it equals the axis coordinate, values[0] elsewhere
 * (values: [off, on] of elem bytes each). */
typedef struct cuk_onehot_desc {
    int ndim, axis;
    int64_t shape[CUK_MAX_DIMS];
    int64_t ys[CUK_MAX_DIMS], s_idx[CUK_MAX_DIMS];
    int64_t depth;
} cuk_onehot_desc;

cudaError_t cuk_onehot(cuk_dtype ti, size_t elem, const cuk_onehot_desc *d, const void *idx,
                       const void *values, void *y, cudaStream_t stream);

/* Resize over any axes: separable taps per axis, tabulated at plan time.
 * meta (int32) holds, for each resized axis j, first[shape[j]] then
 * count[shape[j]] at offset d->meta[j] (-1: the axis maps each coordinate
 * to itself); tap t of an output coordinate adds tap_off[first + t] (the
 * input index times its stride, clamped to the edge) with weight
 * tap_w[first + t].  A count of 0 marks a coordinate outside the crop
 * (tf_crop_and_resize): the output element is the extrapolation value.
 * Interpolating modes (weights, computed in float) take float storage
 * types; nearest moves elements of any size. */
typedef struct cuk_resize_desc {
    int ndim, nearest;
    int64_t shape[CUK_MAX_DIMS], ys[CUK_MAX_DIMS], xs[CUK_MAX_DIMS];
    int64_t meta[CUK_MAX_DIMS];
    uint64_t extrapolation; /* nearest: the value's bytes in the storage type */
    float extrapolation_f;  /* interpolating modes */
    int64_t x_numel;        /* elements of x: every offset into it is below */
} cuk_resize_desc;

cudaError_t cuk_resize(cuk_dtype t, size_t elem, const cuk_resize_desc *d, const int32_t *meta,
                       const int64_t *tap_off, const float *tap_w, const void *x, void *y,
                       cudaStream_t stream);

/* ONNX LRN across channels: x and y [N, C, S] addressed as
 * n * C * S + c * cstride + s * sstride. */
typedef struct cuk_lrn_desc {
    int64_t N, C, S, cstride, sstride;
    int64_t size;
    float alpha, beta, bias;
} cuk_lrn_desc;

cudaError_t cuk_lrn(cuk_type t, const cuk_lrn_desc *d, const void *x, void *y, cudaStream_t stream);

/* Programmatic dependent launch of the own kernels (kernels_launch.cuh):
 * whether this thread's launches carry the attribute.  cuk_set_pdl
 * returns the setting it replaces; off (0) by default. */
int cuk_set_pdl(int on);
int cuk_pdl_now(void);

#ifdef __cplusplus
}
#endif
#endif /* OS_CUDA_KERNELS_H */
