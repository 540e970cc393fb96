/*
 * opsched/graph.h - the graph of a network: tensors, operators, a builder
 * that infers shapes as it goes, and the cost counts of every operator.
 *
 * A graph is a DAG kept in topological order: a node can only consume
 * tensors that already exist, so the order nodes were added in is an order
 * they can run in.  Shapes are logical and follow ONNX conventions (NCHW for
 * images, row-major); a tensor's layout field only says how a backend should
 * store it.
 *
 * Every opsched_graph_add_node() call checks its inputs, infers the output
 * shapes and computes the node's costs, so an impossible network fails at
 * the node that makes it impossible, with OPSCHED_ERR_SHAPE and a message
 * naming that node.
 *
 * Ownership: the graph owns every tensor, node, name and payload.  Pointers
 * returned by the accessors are borrowed and stay valid until the graph is
 * freed or the next node or tensor is added.
 */
#ifndef OPSCHED_GRAPH_H
#define OPSCHED_GRAPH_H

#include <stddef.h>

#include "opsched/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OPSCHED_MAX_DIMS 8

typedef enum opsched_dtype {
    OPSCHED_F32 = 0,
    OPSCHED_F16,
    OPSCHED_BF16,
    OPSCHED_INT8,
    OPSCHED_INT32,
    OPSCHED_INT64,
    OPSCHED_UINT8,
    OPSCHED_BOOL,             /* one byte, 0 or 1 */
    OPSCHED_DTYPE_COUNT
} opsched_dtype;

typedef enum opsched_layout {
    OPSCHED_LAYOUT_NCHW = 0,
    OPSCHED_LAYOUT_NHWC,
    OPSCHED_LAYOUT_COUNT
} opsched_layout;

typedef enum opsched_tensor_kind {
    OPSCHED_TENSOR_INPUT = 0,   /* fed by the user at run time */
    OPSCHED_TENSOR_WEIGHT,      /* a learned parameter: counted in params */
    OPSCHED_TENSOR_CONSTANT,    /* a fixed non-learned value (indices, scalars) */
    OPSCHED_TENSOR_ACTIVATION   /* produced by a node */
} opsched_tensor_kind;

typedef struct opsched_shape {
    int ndim;
    int64_t d[OPSCHED_MAX_DIMS];
} opsched_shape;

typedef enum opsched_op_kind {
    OPSCHED_OP_CONV = 0,
    OPSCHED_OP_GEMM,          /* Y = alpha*op(A)*op(B) + beta*C, A 2-D */
    OPSCHED_OP_MATMUL,        /* numpy matmul with batch broadcasting */
    OPSCHED_OP_MAXPOOL,       /* x; y and optionally the int64 Indices (opsched_pool_attr) */
    OPSCHED_OP_AVGPOOL,
    OPSCHED_OP_GLOBALAVGPOOL,
    OPSCHED_OP_GLOBALMAXPOOL,
    OPSCHED_OP_RELU,
    OPSCHED_OP_CLIP,          /* min/max; ReLU6 is Clip(0, 6) */
    OPSCHED_OP_SIGMOID,
    OPSCHED_OP_TANH,
    OPSCHED_OP_GELU,
    OPSCHED_OP_ERF,
    OPSCHED_OP_HARDSIGMOID,
    OPSCHED_OP_HARDSWISH,
    OPSCHED_OP_SQRT,
    OPSCHED_OP_ADD,
    OPSCHED_OP_SUB,
    OPSCHED_OP_MUL,
    OPSCHED_OP_DIV,
    OPSCHED_OP_POW,
    OPSCHED_OP_CONCAT,
    OPSCHED_OP_SPLIT,
    OPSCHED_OP_SLICE,
    OPSCHED_OP_GATHER,
    OPSCHED_OP_BATCHNORM,     /* inference form: running mean and variance */
    OPSCHED_OP_SOFTMAX,
    OPSCHED_OP_LRN,
    OPSCHED_OP_LAYERNORM,
    OPSCHED_OP_REDUCEMEAN,
    OPSCHED_OP_TRANSPOSE,
    OPSCHED_OP_PAD,
    OPSCHED_OP_EXPAND,
    OPSCHED_OP_FLATTEN,       /* no compute: a view of its input */
    OPSCHED_OP_RESHAPE,       /* no compute; also Squeeze/Unsqueeze */
    OPSCHED_OP_IDENTITY,      /* no compute */
    OPSCHED_OP_DROPOUT,       /* no compute at inference */
    /* The generic families: one kernel each, over every data type. */
    OPSCHED_OP_UNARY,         /* y = f(x), f in opsched_unary_attr */
    OPSCHED_OP_BINARY,        /* y = f(a, b) with broadcasting, f in opsched_binary_attr */
    OPSCHED_OP_WHERE,         /* y = cond ? a : b, broadcasting all three */
    OPSCHED_OP_CAST,          /* opsched_cast_attr */
    OPSCHED_OP_REDUCE,        /* any reduction over any axes (opsched_reduce_attr.fn) */
    OPSCHED_OP_ARGMAX,        /* int64 indices (opsched_arg_attr) */
    OPSCHED_OP_ARGMIN,
    OPSCHED_OP_LOGSOFTMAX,    /* over one axis (opsched_axis_attr) */
    OPSCHED_OP_HARDMAX,
    OPSCHED_OP_CUMSUM,        /* opsched_cumsum_attr */
    OPSCHED_OP_TOPK,          /* values and int64 indices (opsched_topk_attr) */
    OPSCHED_OP_GATHER_ELEMENTS, /* data, indices (opsched_axis_attr) */
    OPSCHED_OP_GATHER_ND,     /* data, indices (opsched_gather_nd_attr) */
    OPSCHED_OP_SCATTER_ELEMENTS, /* data, indices, updates (opsched_scatter_attr) */
    OPSCHED_OP_SCATTER_ND,    /* data, indices, updates (opsched_scatter_attr) */
    OPSCHED_OP_TILE,          /* opsched_tile_attr */
    OPSCHED_OP_TRILU,         /* opsched_trilu_attr */
    OPSCHED_OP_ONEHOT,        /* indices, values [off, on] (opsched_onehot_attr) */
    OPSCHED_OP_RESIZE,        /* opsched_resize_attr */
    OPSCHED_OP_GROUPNORM,     /* x, scale [C], bias [C] (opsched_groupnorm_attr) */
    OPSCHED_OP_CONV_TRANSPOSE, /* X, W [C, M/groups, kh, kw], optional B
                                * (opsched_conv_transpose_attr) */
    OPSCHED_OP_QUANTIZE,      /* x, scale, zero point (opsched_quant_attr) */
    OPSCHED_OP_DEQUANTIZE,
    OPSCHED_OP_ATTENTION,     /* Q, K, V, optional bias (opsched_attention_attr) */
    /* Training operators (the training graph's, not ONNX's): */
    OPSCHED_OP_BATCHNORM_TRAIN, /* x, scale [C], bias [C] -> y, the batch's mean [C] and
                                 * 1 / sqrt(variance + epsilon) [C] (population variance over
                                 * every axis but 1; opsched_bn_attr) */
    OPSCHED_OP_BATCHNORM_GRAD,  /* dy, x, scale, the saved mean and inverse deviation ->
                                 * dx, dscale [C], dbias [C] (opsched_bn_attr) */
    OPSCHED_OP_CONV_GRAD_FILTER, /* x [N, C, H, W], dy [N, M, OH, OW] -> dW [M, C/groups, kh, kw]:
                                  * a 2-D convolution's filter gradient (the forward
                                  * convolution's opsched_conv_attr) */
    OPSCHED_OP_COUNT
} opsched_op_kind;

/* The depth axis of a 3-D window op (Conv, ConvTranspose, MaxPool,
 * AveragePool), whose tensors are [N, C, D, H, W]: the op's 2-D fields then
 * describe H and W, and this D.  A 2-D op leaves it all zero; a 5-D input
 * makes the op 3-D (a zero kernel then means the weight's, as for H and W;
 * zero stride and dilation mean 1). */
typedef struct opsched_window_depth {
    int64_t kernel, stride, dilation;
    int64_t pad_begin, pad_end;
    int64_t output_padding; /* ConvTranspose only */
} opsched_window_depth;

/* 2-D or 3-D convolution.  Inputs: X [N,C,H,W], W [M,C/groups,kh,kw],
 * optional B [M]; 3-D: X [N,C,D,H,W], W [M,C/groups,kd,kh,kw] and depth. */
typedef struct opsched_conv_attr {
    int64_t kernel[2];    /* kh, kw */
    int64_t stride[2];
    int64_t dilation[2];
    int64_t pads[4];      /* top, left, bottom, right (ONNX begin..., end...) */
    int64_t groups;
    opsched_window_depth depth;
} opsched_conv_attr;

/* Max and average pooling, 2-D or 3-D (depth).  Padding may be as large
 * as the kernel or larger: a window wholly in the padding gives -inf (max)
 * or NaN (the exclude-pad average's 0 / 0; with count_include_pad 0). */
typedef struct opsched_pool_attr {
    int64_t kernel[2];
    int64_t stride[2];
    int64_t dilation[2];
    int64_t pads[4];
    int ceil_mode;
    int count_include_pad; /* average pooling only */
    opsched_window_depth depth;
    /* MaxPool's optional second output, ONNX's Indices: where each maximum
     * is, as an index into the flattened input (the first of equal maxima
     * in window order; -1 for a window with no tap in the input), the
     * spatial axes row-major, or with storage_order 1 column-major. */
    int storage_order;
} opsched_pool_attr;

typedef struct opsched_gemm_attr {
    float alpha, beta;
    int trans_a, trans_b;
} opsched_gemm_attr;

typedef struct opsched_clip_attr { float min, max; } opsched_clip_attr;
typedef struct opsched_gelu_attr { int tanh_approx; } opsched_gelu_attr;
typedef struct opsched_hardsigmoid_attr { float alpha, beta; } opsched_hardsigmoid_attr;
typedef struct opsched_axis_attr { int64_t axis; } opsched_axis_attr; /* Concat, Softmax, Flatten, Gather */
typedef struct opsched_bn_attr { float epsilon; } opsched_bn_attr;
typedef struct opsched_lrn_attr { int64_t size; float alpha, beta, bias; } opsched_lrn_attr;
typedef struct opsched_layernorm_attr { int64_t axis; float epsilon; } opsched_layernorm_attr;

/* Split along axis into n parts of the given sizes (sum = the axis extent). */
typedef struct opsched_split_attr {
    int64_t axis;
    int n;
    int64_t sizes[OPSCHED_MAX_DIMS * 4];
} opsched_split_attr;

/* Slice with one resolved range per dimension (full range where unsliced). */
typedef struct opsched_slice_attr {
    int64_t starts[OPSCHED_MAX_DIMS];
    int64_t ends[OPSCHED_MAX_DIMS];
    int64_t steps[OPSCHED_MAX_DIMS];
} opsched_slice_attr;

/* What OPSCHED_OP_REDUCE computes (ReduceMean is also its own kind). */
typedef enum opsched_reduce_fn {
    OPSCHED_REDUCE_MEAN = 0,
    OPSCHED_REDUCE_SUM,
    OPSCHED_REDUCE_MAX,
    OPSCHED_REDUCE_MIN,
    OPSCHED_REDUCE_PROD,
    OPSCHED_REDUCE_L1,
    OPSCHED_REDUCE_L2,
    OPSCHED_REDUCE_LOGSUM,
    OPSCHED_REDUCE_LOGSUMEXP,
    OPSCHED_REDUCE_SUMSQUARE,
    OPSCHED_REDUCE_FN_COUNT
} opsched_reduce_fn;

/* n_axes 0: every axis, unless noop_with_empty_axes (then a copy). */
typedef struct opsched_reduce_attr {
    int n_axes;
    int64_t axes[OPSCHED_MAX_DIMS];
    int keepdims;
    opsched_reduce_fn fn;
    int noop_with_empty_axes;
} opsched_reduce_attr;

typedef struct opsched_transpose_attr {
    int n;
    int64_t perm[OPSCHED_MAX_DIMS];
} opsched_transpose_attr;

typedef enum opsched_pad_mode {
    OPSCHED_PAD_CONSTANT = 0,
    OPSCHED_PAD_REFLECT,
    OPSCHED_PAD_EDGE,
    OPSCHED_PAD_WRAP          /* circular: index i reads (i mod extent) */
} opsched_pad_mode;

typedef struct opsched_pad_attr {
    int64_t pads[2 * OPSCHED_MAX_DIMS]; /* begins for each dim, then ends */
    opsched_pad_mode mode;
    float value;
} opsched_pad_attr;

/* The functions of OPSCHED_OP_UNARY; alpha, beta and gamma as ONNX names
 * them for each (LeakyRelu alpha, Selu alpha and gamma, Shrink bias = alpha
 * and lambd = beta, IsInf detect_positive = alpha and detect_negative =
 * beta, Swish alpha). */
typedef enum opsched_unary_fn {
    OPSCHED_UNARY_ABS = 0,
    OPSCHED_UNARY_NEG,
    OPSCHED_UNARY_EXP,
    OPSCHED_UNARY_LOG,
    OPSCHED_UNARY_RECIPROCAL,
    OPSCHED_UNARY_FLOOR,
    OPSCHED_UNARY_CEIL,
    OPSCHED_UNARY_ROUND,      /* half to even */
    OPSCHED_UNARY_SIGN,
    OPSCHED_UNARY_SIN,
    OPSCHED_UNARY_COS,
    OPSCHED_UNARY_TAN,
    OPSCHED_UNARY_ASIN,
    OPSCHED_UNARY_ACOS,
    OPSCHED_UNARY_ATAN,
    OPSCHED_UNARY_SINH,
    OPSCHED_UNARY_COSH,
    OPSCHED_UNARY_ASINH,
    OPSCHED_UNARY_ACOSH,
    OPSCHED_UNARY_ATANH,
    OPSCHED_UNARY_ISNAN,      /* bool output */
    OPSCHED_UNARY_ISINF,      /* bool output */
    OPSCHED_UNARY_NOT,        /* bool */
    OPSCHED_UNARY_BITWISE_NOT,
    OPSCHED_UNARY_LEAKY_RELU,
    OPSCHED_UNARY_ELU,
    OPSCHED_UNARY_SELU,
    OPSCHED_UNARY_CELU,
    OPSCHED_UNARY_THRESHOLDED_RELU,
    OPSCHED_UNARY_SOFTPLUS,
    OPSCHED_UNARY_SOFTSIGN,
    OPSCHED_UNARY_MISH,
    OPSCHED_UNARY_SHRINK,
    OPSCHED_UNARY_SWISH,
    OPSCHED_UNARY_FN_COUNT
} opsched_unary_fn;

typedef struct opsched_unary_attr {
    opsched_unary_fn fn;
    float alpha, beta, gamma;
} opsched_unary_attr;

/* The functions of OPSCHED_OP_BINARY (Add, Sub, Mul, Div and Pow keep their
 * own kinds).  Comparisons and the logical ones give bool. */
typedef enum opsched_binary_fn {
    OPSCHED_BINARY_MOD = 0,   /* integer: sign of the divisor (Python); fmod: sign of the dividend */
    OPSCHED_BINARY_FMOD,
    OPSCHED_BINARY_MIN,
    OPSCHED_BINARY_MAX,
    OPSCHED_BINARY_EQUAL,
    OPSCHED_BINARY_LESS,
    OPSCHED_BINARY_LESS_EQUAL,
    OPSCHED_BINARY_GREATER,
    OPSCHED_BINARY_GREATER_EQUAL,
    OPSCHED_BINARY_AND,
    OPSCHED_BINARY_OR,
    OPSCHED_BINARY_XOR,
    OPSCHED_BINARY_SHIFT_LEFT,
    OPSCHED_BINARY_SHIFT_RIGHT,
    OPSCHED_BINARY_BITWISE_AND,
    OPSCHED_BINARY_BITWISE_OR,
    OPSCHED_BINARY_BITWISE_XOR,
    OPSCHED_BINARY_PRELU,     /* a < 0 ? a * b : a */
    OPSCHED_BINARY_FN_COUNT
} opsched_binary_fn;

typedef struct opsched_binary_attr { opsched_binary_fn fn; } opsched_binary_attr;

/* ArgMax, ArgMin. */
typedef struct opsched_arg_attr {
    int64_t axis;
    int keepdims;
    int select_last_index;
} opsched_arg_attr;

typedef struct opsched_cumsum_attr {
    int64_t axis;
    int exclusive, reverse;
} opsched_cumsum_attr;

typedef struct opsched_topk_attr {
    int64_t axis, k;
    int largest, sorted;
} opsched_topk_attr;

typedef struct opsched_gather_nd_attr { int64_t batch_dims; } opsched_gather_nd_attr;

typedef enum opsched_scatter_reduction {
    OPSCHED_SCATTER_NONE = 0,
    OPSCHED_SCATTER_ADD,
    OPSCHED_SCATTER_MUL,
    OPSCHED_SCATTER_MAX,
    OPSCHED_SCATTER_MIN
} opsched_scatter_reduction;

/* ScatterElements (axis) and ScatterND. */
typedef struct opsched_scatter_attr {
    int64_t axis;
    opsched_scatter_reduction reduction;
} opsched_scatter_attr;

typedef struct opsched_tile_attr { int64_t repeats[OPSCHED_MAX_DIMS]; } opsched_tile_attr;

typedef struct opsched_trilu_attr {
    int upper;
    int64_t k;
} opsched_trilu_attr;

/* OneHot's depth is known at load time; its axis is resolved (0..rank). */
typedef struct opsched_onehot_attr {
    int64_t axis, depth;
} opsched_onehot_attr;

typedef enum opsched_resize_mode {
    OPSCHED_RESIZE_NEAREST = 0,
    OPSCHED_RESIZE_LINEAR,
    OPSCHED_RESIZE_CUBIC
} opsched_resize_mode;

typedef enum opsched_resize_coord {
    OPSCHED_COORD_HALF_PIXEL = 0,
    OPSCHED_COORD_HALF_PIXEL_SYMMETRIC,
    OPSCHED_COORD_PYTORCH_HALF_PIXEL,
    OPSCHED_COORD_ALIGN_CORNERS,
    OPSCHED_COORD_ASYMMETRIC,
    OPSCHED_COORD_TF_CROP_AND_RESIZE
} opsched_resize_coord;

typedef enum opsched_resize_nearest {
    OPSCHED_NEAREST_ROUND_PREFER_FLOOR = 0,
    OPSCHED_NEAREST_ROUND_PREFER_CEIL,
    OPSCHED_NEAREST_FLOOR,
    OPSCHED_NEAREST_CEIL
} opsched_resize_nearest;

/* Resize with everything resolved per dimension: sizes[d] the output
 * extent, scales[d] the ratio the coordinate transform uses (given, or
 * out / in when sizes were given, as ONNX defines it), roi for
 * tf_crop_and_resize (starts then ends, normalised). */
typedef struct opsched_resize_attr {
    opsched_resize_mode mode;
    opsched_resize_coord coord;
    opsched_resize_nearest nearest;
    float cubic_coeff_a;
    int exclude_outside;
    int antialias;
    float extrapolation_value;
    int64_t sizes[OPSCHED_MAX_DIMS];
    float scales[OPSCHED_MAX_DIMS];
    float roi[2 * OPSCHED_MAX_DIMS];
} opsched_resize_attr;

/* GroupNormalization (InstanceNormalization: groups = channels): scale and
 * bias per channel. */
typedef struct opsched_groupnorm_attr {
    int64_t groups;
    float epsilon;
} opsched_groupnorm_attr;

typedef struct opsched_cast_attr { opsched_dtype to; } opsched_cast_attr;

/* ConvTranspose (2-D, or 3-D with depth): output = (in - 1) * stride -
 * pads + dilation * (kernel - 1) + output_padding + 1 per spatial axis. */
typedef struct opsched_conv_transpose_attr {
    int64_t kernel[2];
    int64_t stride[2];
    int64_t dilation[2];
    int64_t pads[4];      /* top, left, bottom, right */
    int64_t output_padding[2];
    int64_t groups;
    opsched_window_depth depth;
} opsched_conv_transpose_attr;

/* QuantizeLinear and DequantizeLinear: per tensor (scale of one element),
 * per axis (scale [C] along axis) or blocked (block_size along axis). */
typedef struct opsched_quant_attr {
    int64_t axis;
    int64_t block_size;
    int saturate;
} opsched_quant_attr;

/* Reshape, Flatten's target and Expand's target: the resolved output shape
 * (no -1 or 0 left).  For Expand it is broadcast against the input. */
typedef struct opsched_shape_attr { opsched_shape shape; } opsched_shape_attr;

/* Scaled dot-product attention, one node for what exporters write as
 * MatMul(Q, K^T), a scale, an additive bias, Softmax over the last axis and
 * MatMul with V (opsched_graph_rewrite_patterns).  Over canonical shapes
 * Q [B, H, Sq, D], K [B, H, Sk, D], V [B, H, Sk, Dv] and bias [B, H, Sq, Sk]:
 *     O[b, h] = softmax(scale * Q[b, h] K[b, h]^T + bias[b, h]) V[b, h]
 * with O [B, H, Sq, Dv].  Each operand's tensor holds its canonical dims in
 * its own order: axes[x][c] is the tensor axis of canonical dim c (B, H,
 * then the rows, then the columns), or -1 where the tensor has no such axis
 * (size 1).  So a [B, S, H, D] projection before its Transpose, K stored as
 * [B, H, D, Sk], or torch's [S, B*H, D] are read where they are.  A K or V
 * of size 1 in B or H, and a bias of size 1 in any dim, broadcast.  The
 * bias (input 3) is optional; out_rank is O's rank. */
enum { OPSCHED_ATT_Q, OPSCHED_ATT_K, OPSCHED_ATT_V, OPSCHED_ATT_BIAS, OPSCHED_ATT_O,
       OPSCHED_ATT_OPERANDS };
/* Q, K or V read where a bigger tensor holds it: the operand is the
 * virtual tensor of `rank` dims d[] whose element (i0, ..) sits at
 * offset + sum(i_a * stride[a]) of the input tensor in row-major order,
 * and the operand's axes name the virtual tensor's axes.  This is how a
 * packed QKV projection's slices, splits and head-splitting reshapes and
 * transposes are read in place.  rank 0: the input tensor itself. */
typedef struct opsched_attention_view {
    int rank;
    int64_t offset;
    int64_t d[4];
    int64_t stride[4];
} opsched_attention_view;
typedef struct opsched_attention_attr {
    float scale;
    int nan_rows_zero; /* a row whose scores are all -inf gives 0, not NaN */
    int out_rank;
    int8_t axes[OPSCHED_ATT_OPERANDS][4];
    opsched_attention_view view[3]; /* Q, K, V */
} opsched_attention_attr;

typedef union opsched_op_attr {
    opsched_conv_attr conv;
    opsched_pool_attr pool;
    opsched_gemm_attr gemm;
    opsched_clip_attr clip;
    opsched_gelu_attr gelu;
    opsched_hardsigmoid_attr hardsigmoid;
    opsched_axis_attr axis;
    opsched_bn_attr bn;
    opsched_lrn_attr lrn;
    opsched_layernorm_attr layernorm;
    opsched_split_attr split;
    opsched_slice_attr slice;
    opsched_reduce_attr reduce;
    opsched_transpose_attr transpose;
    opsched_pad_attr pad;
    opsched_shape_attr shape;
    opsched_unary_attr unary;
    opsched_binary_attr binary;
    opsched_arg_attr arg;
    opsched_cumsum_attr cumsum;
    opsched_topk_attr topk;
    opsched_gather_nd_attr gather_nd;
    opsched_scatter_attr scatter;
    opsched_tile_attr tile;
    opsched_trilu_attr trilu;
    opsched_onehot_attr onehot;
    opsched_resize_attr resize;
    opsched_groupnorm_attr groupnorm;
    opsched_quant_attr quant;
    opsched_cast_attr cast;
    opsched_conv_transpose_attr conv_transpose;
    opsched_attention_attr attention;
} opsched_op_attr;

/* What one node costs, by counting: multiply-add = 2 FLOPs; bytes are the
 * fewest an implementation must move (each input, weight and output once). */
typedef struct opsched_cost {
    int64_t flops;
    int64_t bytes_read;
    int64_t bytes_written;
    int64_t params;      /* elements of WEIGHT inputs */
    int64_t out_elems;   /* elements of all outputs */
} opsched_cost;

typedef struct opsched_tensor {
    const char *name;
    opsched_tensor_kind kind;
    opsched_dtype dtype;
    opsched_layout layout;
    opsched_shape shape;
    int producer;          /* node index, or -1 */
    const void *data;      /* payload (weights, constants) or NULL */
    size_t data_bytes;
} opsched_tensor;

typedef struct opsched_node {
    const char *name;
    opsched_op_kind op;
    opsched_op_attr attr;
    int n_inputs;
    const int *inputs;     /* tensor ids; -1 marks an omitted optional input */
    int n_outputs;
    const int *outputs;
    opsched_cost cost;
} opsched_node;

typedef struct opsched_graph_totals {
    int64_t flops;
    int64_t params;
    int64_t bytes_read;
    int64_t bytes_written;
    int64_t weight_bytes;
    int64_t peak_activation_bytes; /* sequential run in node order, views aliased */
    int n_nodes;
    int n_compute_nodes;           /* nodes that are not views */
} opsched_graph_totals;

typedef struct opsched_graph opsched_graph;

/* ---- names and small helpers ---------------------------------------- */

/* ONNX-style operator name ("Conv", "Gemm", ...).  Never NULL. */
const char *opsched_op_name(opsched_op_kind op);
/* Looks an operator up by its ONNX name (a generic kind's function names
 * its kind: "Swish" gives OPSCHED_OP_UNARY); OPSCHED_ERR_NOT_FOUND if
 * unknown. */
opsched_status opsched_op_from_name(const char *name, opsched_op_kind *out);
/* 1 for ops that only view their input (Reshape, Flatten, Identity, Dropout). */
int opsched_op_is_view(opsched_op_kind op);
/* The ONNX name of what a node computes: opsched_op_name for most kinds,
 * the function for the generic families ("Abs", "Equal", "ReduceL2"). */
const char *opsched_node_op_name(const opsched_node *n);
const char *opsched_unary_fn_name(opsched_unary_fn fn);
/* f(x) of a unary function with its alpha, beta and gamma, in double (an
 * integer function on a double that holds an integer). */
double opsched_unary_eval(const opsched_unary_attr *a, double x);
const char *opsched_binary_fn_name(opsched_binary_fn fn);
const char *opsched_reduce_fn_name(opsched_reduce_fn fn);
/* 1 for f32, f16 and bf16. */
int opsched_dtype_is_float(opsched_dtype dt);

const char *opsched_dtype_name(opsched_dtype dt); /* "f32", "f16", ... */
opsched_status opsched_dtype_from_name(const char *name, opsched_dtype *out);
size_t opsched_dtype_size(opsched_dtype dt);

int64_t opsched_shape_numel(const opsched_shape *s);
int opsched_shape_equal(const opsched_shape *a, const opsched_shape *b);
/* Parses "1x3x224x224" (also accepts ',' between dims).  Dims must be > 0. */
opsched_status opsched_shape_parse(const char *text, opsched_shape *out);
/* Writes "1x3x224x224" into buf (always NUL-terminated); returns buf. */
char *opsched_shape_format(const opsched_shape *s, char *buf, size_t size);

/* ---- building ------------------------------------------------------- */

/* Creates an empty graph.  name is copied.  ctx is borrowed and must
 * outlive the graph; errors of later calls are reported on it. */
opsched_status opsched_graph_create(opsched_ctx *ctx, const char *name, opsched_graph **out);
void opsched_graph_free(opsched_graph *g);

/* Adds a tensor that no node produces (input, weight or constant).  name is
 * copied and must be unique in the graph.  Writes its id to *out_id. */
opsched_status opsched_graph_add_tensor(opsched_graph *g, const char *name,
                                        opsched_tensor_kind kind, opsched_dtype dtype,
                                        const opsched_shape *shape, int *out_id);

/* Copies a payload into a WEIGHT or CONSTANT tensor; bytes must equal its
 * element count times the dtype size. */
opsched_status opsched_graph_set_data(opsched_graph *g, int tensor, const void *data,
                                      size_t bytes);

/* Adds a node.  inputs[] are tensor ids (-1 for an omitted optional input);
 * n_outputs outputs are created as activations, named out_names[i] when
 * out_names is not NULL, else "<name>" (one output) or "<name>:<i>".  attr
 * may be NULL for ops without attributes.  Shapes are inferred and checked;
 * output ids are written to out_ids (n_outputs entries; may be NULL). */
opsched_status opsched_graph_add_node(opsched_graph *g, const char *name, opsched_op_kind op,
                                      const opsched_op_attr *attr, const int *inputs,
                                      int n_inputs, int n_outputs,
                                      const char *const *out_names, int *out_ids);

/* Marks a tensor as a graph output. */
opsched_status opsched_graph_mark_output(opsched_graph *g, int tensor);
/* Gives a tensor another name (copied); OPSCHED_ERR_INVALID_ARG when
 * another tensor has it. */
opsched_status opsched_graph_rename_tensor(opsched_graph *g, int tensor, const char *name);

/* Rewrites operator patterns that exporters spell in several nodes as the
 * one operator each computes (float tensors; in the operand orders and
 * groupings exporters write):
 *   x * Sigmoid(x)                                     -> Unary Swish (SiLU)
 *   x * HardSigmoid(x) (alpha 1/6, beta 1/2)           -> HardSwish
 *   0.5 * x * (1 + Erf(x / sqrt(2)))                   -> Gelu
 *   0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 x^3))) -> Gelu (tanh)
 *   MatMul(Q, K^T), then Mul/Div by constants and at most one Add, then
 *   Softmax over the last axis (optionally Where(IsNaN(p), 0, p)), then
 *   MatMul with V                                      -> Attention
 *     (Transposes into Q, K, V and out of the product are read in place;
 *     scalar Muls on Q and K^T join the scale; flags OPSCHED_REWRITE_*
 *     leave a kind of pattern as written)
 *   (x W + b), a Transpose, then * gamma with gamma constant along the
 *   product's columns (layer scale)                    -> x (W gamma) + b gamma
 *     (scaled copies of the weights; unless OPSCHED_REWRITE_KEEP_SCALES)
 * A node the pattern swallows must have its output read by the pattern
 * alone and not be a graph output.  The replacing node keeps the last
 * node's name and output tensor.  When something is rewritten *g becomes a
 * new graph (the old one is freed, its payloads moved); on failure *g is
 * unchanged.  *n_rewritten (may be NULL) gets the number of patterns. */
/* The canonical sizes of an Attention node (opsched_attention_attr):
 * B, H, Sq, Sk, D, Dv, and per operand and canonical dim the size its
 * tensor has there (1 where it has no such axis, or broadcasts).  0 when
 * n is not an Attention node of g. */
typedef struct opsched_attention_dims {
    int64_t B, H, Sq, Sk, D, Dv;
    int64_t size[OPSCHED_ATT_OPERANDS][4];
} opsched_attention_dims;
int opsched_attention_dims_get(const opsched_graph *g, const opsched_node *n,
                               opsched_attention_dims *out);
/* Operand x (OPSCHED_ATT_*) of an Attention node with attributes at, its
 * tensor of shape s stored row-major: the element strides of its canonical
 * dims (0 where it has none, or broadcasts) into strides, their sizes into
 * sizes (may be NULL), and the element offset of its first element, which
 * it returns (non-zero only through a view). */
int64_t opsched_attention_strides(const opsched_attention_attr *at, int x, const opsched_shape *s,
                                  int64_t strides[4], int64_t sizes[4]);

enum {
    OPSCHED_REWRITE_KEEP_ATTENTION = 1u << 0,
    OPSCHED_REWRITE_KEEP_PROJECTIONS = 1u << 1,
    OPSCHED_REWRITE_KEEP_SCALES = 1u << 2
};
opsched_status opsched_graph_rewrite_patterns(opsched_graph **g, unsigned flags, int *n_rewritten);

/* Convenience builders used by the model zoo and by hand-written graphs.
 * They create the weights as "<name>.weight" and "<name>.bias". */
typedef struct opsched_conv_desc {
    int64_t out_channels;
    int64_t kernel_h, kernel_w;
    int64_t stride_h, stride_w;
    int64_t pad_h, pad_w;       /* symmetric padding */
    int64_t dilation;           /* 0 means 1 */
    int64_t groups;             /* 0 means 1 */
    int bias;
} opsched_conv_desc;

opsched_status opsched_build_conv(opsched_graph *g, const char *name, int x,
                                  const opsched_conv_desc *desc, int *out);
/* Fully connected layer: Gemm with transB=1, weight [out, in], bias [out]. */
opsched_status opsched_build_linear(opsched_graph *g, const char *name, int x,
                                    int64_t out_features, int bias, int *out);
/* BatchNormalization with scale, bias, mean, var weights of [C]. */
opsched_status opsched_build_batchnorm(opsched_graph *g, const char *name, int x,
                                       float epsilon, int *out);
/* Max or average pooling, square kernel, symmetric padding. */
opsched_status opsched_build_pool(opsched_graph *g, const char *name, opsched_op_kind op,
                                  int x, int64_t kernel, int64_t stride, int64_t pad,
                                  int ceil_mode, int count_include_pad, int *out);
/* Any node with one input and one output (activations, GlobalAveragePool...). */
opsched_status opsched_build_unary(opsched_graph *g, const char *name, opsched_op_kind op,
                                   const opsched_op_attr *attr, int x, int *out);
opsched_status opsched_build_binary(opsched_graph *g, const char *name, opsched_op_kind op,
                                    int a, int b, int *out);
opsched_status opsched_build_concat(opsched_graph *g, const char *name, const int *xs, int n,
                                    int64_t axis, int *out);
opsched_status opsched_build_flatten(opsched_graph *g, const char *name, int x, int64_t axis,
                                     int *out);

/* ---- reading -------------------------------------------------------- */

const char *opsched_graph_name(const opsched_graph *g);
opsched_ctx *opsched_graph_ctx(const opsched_graph *g);
int opsched_graph_num_tensors(const opsched_graph *g);
const opsched_tensor *opsched_graph_tensor(const opsched_graph *g, int id);
int opsched_graph_num_nodes(const opsched_graph *g);
const opsched_node *opsched_graph_node(const opsched_graph *g, int index);
int opsched_graph_num_inputs(const opsched_graph *g);
int opsched_graph_input(const opsched_graph *g, int i);   /* INPUT tensors, in order added */
int opsched_graph_num_outputs(const opsched_graph *g);
int opsched_graph_output(const opsched_graph *g, int i);
/* Finds a tensor by name; OPSCHED_ERR_NOT_FOUND if none. */
opsched_status opsched_graph_find_tensor(const opsched_graph *g, const char *name, int *out_id);
/* Number of nodes that read tensor id. */
int opsched_graph_num_consumers(const opsched_graph *g, int tensor);

/* Convolution epilogues (epilogue.c): the rule every backend, the
 * executor, the searchers, sweeps and the predictor share.  An epilogue
 * activation is a one-input pointwise activation a convolution can apply
 * to its output before storing it: Relu, Clip, Sigmoid, Tanh, Gelu,
 * HardSigmoid, HardSwish, and the unary LeakyRelu, Elu, Softplus, Swish
 * (SiLU) and Mish.  opsched_conv_epilogue gives the node of such an
 * activation that is the only reader of convolution `node`'s output (not
 * a graph output), or -1; opsched_node_epilogue the same for a
 * convolution, a batch normalisation (inference form) or a Gemm, the
 * nodes whose launch may take it; opsched_epilogue_same says whether two such nodes
 * compute the same function (for convolutions merged into one). */
int opsched_op_is_epilogue(const opsched_node *n);
int opsched_conv_epilogue(const opsched_graph *g, int node);
int opsched_node_epilogue(const opsched_graph *g, int node);
int opsched_epilogue_same(const opsched_node *a, const opsched_node *b);

/* A convolution's residual epilogue, y = act(conv(x) + b + r): the
 * convolution's output is read only by an Add (and is no graph output)
 * whose other operand r has the output's shape and type, and act is the
 * Add's only reader when it is an epilogue activation
 * (opsched_op_is_epilogue), else -1.  r never depends on the convolution
 * (the Add is its output's only reader), but it must exist when the
 * convolution runs: the executor fuses only where r's producer launches
 * first, so of a residual block's two convolutions (ResNet's third and its
 * downsampling one, each the other's r) the one that launches later takes
 * the Add.  Fills *out and returns 1, else returns 0.  A backend that runs
 * it reports fused_residual (opsched_plan_info); the executor then runs
 * the Add and its activation inside the convolution's launch, whose fourth
 * input is r. */
typedef struct opsched_conv_residual {
    int add;      /* the Add node */
    int residual; /* r, the tensor it adds */
    int act;      /* the activation after the Add, or -1 */
} opsched_conv_residual;
int opsched_conv_residual_find(const opsched_graph *g, int node, opsched_conv_residual *out);

/* A MatMul's bias epilogue, z = act(A B + bias) or z = A B + bias + r: the
 * MatMul's float output is read only by an Add (and is no graph output)
 * whose other operand is a constant of one value per output column ([N]
 * or [1, ..., 1, N]); act is the Add's only reader when it is an epilogue
 * activation (opsched_op_is_epilogue), else -1; when the only reader is
 * instead another Add of a tensor r of the product's shape and type (a
 * residual), res_add and residual name them (else -1).  The residual
 * Add may also read the bias Add's output through a Transpose, the Add's
 * only reader (tr names it, else -1): r then has the Transpose's output
 * shape, and a backend adds it in the product's order only where that
 * Transpose is a view of the plan's layouts (opsched_layout_transpose_view
 * with the options' row-major tensors).  Fills *out and
 * returns 1, else 0.  A backend that runs it (opsched_plan_options.
 * fuse_bias) reports fused_bias, fused_activation when it applies act as
 * well, and fused_residual when it adds r (asked with fuse_residual); the
 * executor then runs those nodes inside the MatMul's launch, whose third
 * input is the bias and fourth r.  r must exist when the product runs:
 * the executor fuses the residual only where r's producer launches first. */
typedef struct opsched_matmul_bias {
    int add;      /* the Add node */
    int bias;     /* the tensor it adds */
    int act;      /* the activation after the Add, or -1 */
    int res_add;  /* the residual Add after the bias Add, or -1 */
    int residual; /* the tensor it adds, or -1 */
    int tr;       /* the Transpose between the two Adds, or -1 */
} opsched_matmul_bias;
int opsched_matmul_bias_find(const opsched_graph *g, int node, opsched_matmul_bias *out);

/* A convolution's normalisation epilogue, z = LayerNormalization(
 * Transpose(conv(x) + b)) over the channels: the convolution's 4-D float
 * output is read only by a Transpose with perm [0, 2, 3, 1] (no graph
 * output), whose output is read only by a LayerNormalization over its
 * last axis with one output, a scale and optionally a bias of one value a
 * channel, all of the output's type (ConvNeXt's depthwise convolution and
 * its channels-last LayerNorm).  Fills *out and returns 1, else 0.  A
 * backend that runs it (opsched_plan_options.fuse_norm) reports
 * fused_norm; its launch reads x, w, the convolution's bias (or none),
 * the norm's scale and its bias (or none), and writes z, [N, H, W, C]
 * row-major: the executor runs the Transpose and the norm inside the
 * convolution's launch. */
typedef struct opsched_conv_norm {
    int tr;    /* the Transpose node */
    int norm;  /* the LayerNormalization node */
    int scale; /* its scale tensor */
    int bias;  /* its bias tensor, or -1 */
} opsched_conv_norm;
int opsched_conv_norm_find(const opsched_graph *g, int node, opsched_conv_norm *out);

/* A convolution's prologue activation, conv(act(p)): the convolution's
 * input 0 is the output of an activation (opsched_op_is_epilogue) that is
 * read by nothing else (no graph output), and that activation is the
 * epilogue (opsched_conv_epilogue) of convolution `producer`.  A backend
 * that can apply the activation to the input as it reads it
 * (opsched_plan_options.fuse_prologue) reports fused_prologue; the
 * executor then plans the producer without its activation, so that the
 * pass over its output the activation would take is saved where the
 * producer's plan ran the activation apart (MobileNets' Relu6 and
 * HardSwish after a 1x1 product, which cuBLASLt's epilogues lack).  Fills
 * *out and returns 1, else 0. */
typedef struct opsched_conv_prologue {
    int act;      /* the activation node */
    int producer; /* the convolution whose epilogue it is */
} opsched_conv_prologue;
int opsched_conv_prologue_find(const opsched_graph *g, int node, opsched_conv_prologue *out);

/* A convolution that reads a gated map, conv(x * s) (se.c): its input 0 is
 * the output of a Mul, read by nothing else (no graph output), of a 4-D
 * float map x and a per-sample channel scale s of shape [N, C, 1, 1] that
 * is not a constant (a squeeze-and-excitation gate, or any such scale),
 * and the convolution is a dense 1x1 layer (unit stride and dilation, no
 * padding, one group, constant weights).  Per sample n it is then the
 * product with the weights scaled per input channel, W diag(s_n): a
 * backend that runs it so (opsched_plan_options.fuse_gate) reads x as
 * input 0 and s as input 5, and the multiply's pass over the map is saved.
 * Fills *out and returns 1, else 0. */
typedef struct opsched_conv_gate {
    int mul;   /* the Mul node */
    int x;     /* the map it multiplies */
    int scale; /* s, [N, C, 1, 1] */
} opsched_conv_gate;
int opsched_conv_gate_find(const opsched_graph *g, int node, opsched_conv_gate *out);

/* A batch normalisation that can read the inputs of the Concat it
 * normalises in place of the Concat's output (DenseNet's layers, each of
 * which concatenates every feature map before it and normalises the
 * result): node is an inference BatchNormalization with one output whose
 * input is the output of a Concat of 2 to OPSCHED_NORM_MAX_CONCAT 4-D
 * inputs of its type along axis 1, an output that this node alone reads
 * (no graph output).  The Concat's node, or -1. */
#define OPSCHED_NORM_MAX_CONCAT 32
int opsched_norm_concat(const opsched_graph *g, int node);

/* Element-wise chains (chain.c): nodes run as one launch.  A chainable
 * node is an element-wise function of float data (the activations, Erf,
 * Sqrt, the float unary functions; Add, Sub, Mul, Div, Pow, Min, Max,
 * PRelu) whose operands have its output's type.  opsched_ew_chain_find
 * gives the chain that starts at `node`: each later node the only reader
 * of the previous output (not a graph output), chainable, of the head's
 * output shape and type, reading the running value as its first operand
 * or as either operand of Add, Mul, Min or Max; at least two nodes, at
 * most OPSCHED_CHAIN_MAX, returning 1 and filling *out (else 0).
 * opsched_ew_chain_sides writes the later nodes' other operands in chain
 * order (at most OPSCHED_CHAIN_MAX - 2) and returns their count: a plan
 * that runs the chain (opsched_plan_options.fuse_chain) takes them as
 * inputs after the head's own. */
#define OPSCHED_CHAIN_MAX 8
typedef struct opsched_ew_chain {
    int n;                                /* nodes, the head first */
    int nodes[OPSCHED_CHAIN_MAX];
    int running_second[OPSCHED_CHAIN_MAX]; /* 1: the running value is the node's operand 1 */
} opsched_ew_chain;
int opsched_op_is_chainable(const opsched_graph *g, const opsched_node *n);
int opsched_ew_chain_find(const opsched_graph *g, int node, opsched_ew_chain *out);
int opsched_ew_chain_sides(const opsched_graph *g, const opsched_ew_chain *c, int *sides);

/* Runs of data-movement nodes as one strided gather (movement.c).  A
 * movement node is a Reshape, Flatten, Identity, Dropout, Transpose or
 * Slice.  opsched_move_runs gives every node a role: NONE (not a movement
 * node), INSIDE (a movement node that only movement nodes read, as their
 * data, and no graph output: it need not exist in memory), HEAD (a
 * movement node read elsewhere whose input an INSIDE node makes: it
 * computes its output straight from the run's source, the input of the
 * first node of opsched_move_run's path), ALONE (a movement node that
 * runs as it would); it returns the number of HEADs.  A run is kept only
 * where opsched_move_compose finds it affine, and never ends at a node
 * no_head marks (may be NULL): an executor's views that alias their input.  opsched_move_run writes the
 * path of HEAD `end`, first node first (at most OPSCHED_MOVE_MAX_RUN),
 * and returns its length.  opsched_move_compose writes the strided view
 * that reads the path's output from its source, given the source's
 * strides in elements per logical dimension: factors in the output's
 * dimension order, outermost first within one (at most
 * OPSCHED_MOVE_MAX_FACTORS; 0 when it is not affine or has more).
 * opsched_move_dst_strides gives each factor's stride in the output from
 * the output's strides per logical dimension.  A plan that runs a path
 * (opsched_plan_options.move_path) reads the source as its only input. */
#define OPSCHED_MOVE_MAX_RUN 16
#define OPSCHED_MOVE_MAX_FACTORS 8
enum { OPSCHED_MOVE_NONE = 0, OPSCHED_MOVE_ALONE, OPSCHED_MOVE_INSIDE, OPSCHED_MOVE_HEAD };
typedef struct opsched_move_view {
    int n;
    int64_t size[OPSCHED_MOVE_MAX_FACTORS], stride[OPSCHED_MOVE_MAX_FACTORS];
    int dim[OPSCHED_MOVE_MAX_FACTORS]; /* the output dimension of each factor */
    int64_t offset;                     /* elements into the source */
} opsched_move_view;
int opsched_op_is_movement(const opsched_node *n);
int opsched_move_runs(const opsched_graph *g, const unsigned char *no_head, int *role);
int opsched_move_run(const opsched_graph *g, const int *role, int end, int *path);
int opsched_move_compose(const opsched_graph *g, const int *nodes, int n,
                         const int64_t *src_strides, opsched_move_view *out);
void opsched_move_dst_strides(const opsched_move_view *v, const int64_t *dst_strides,
                              int64_t *out);
/* A run whose source is a Concat's output may gather from the Concat's
 * inputs instead (ShuffleNet's concatenation, shuffle and split): element
 * f of the source, in its layout, is element ((o * C_k) + a - start_k) *
 * inner + i of input k, where f = (o * C + a) * inner + i, C the
 * concatenated extent, start_k input k's first index along the axis, and
 * inner the source's stride along it.  opsched_move_concat gives the
 * Concat node whose output is the source of a run starting at node
 * `first`, or -1 when there is none or it cannot be read so: more than
 * OPSCHED_MOVE_MAX_CONCAT inputs, an input missing, empty along the axis,
 * of another type or rank, or the output a graph output. */
#define OPSCHED_MOVE_MAX_CONCAT 8
int opsched_move_concat(const opsched_graph *g, int first);
/* 1 when Concat node c's output is read only by the first nodes of runs
 * (role from opsched_move_runs: INSIDE nodes, as their data) that can read
 * c's inputs instead (opsched_move_concat): then c need not be written. */
int opsched_move_concat_unread(const opsched_graph *g, const int *role, int c);

/* The squeeze-and-excitation gate (se.c): s = act2(fc2(act1(fc1(m)))),
 * m the mean of a 4-D float map x over H and W (GlobalAveragePool, or
 * ReduceMean over axes 2 and 3 keeping them), fc1 and fc2 convolutions that
 * are dense layers on 1 x 1 maps (1 x 1 kernel, unit stride and dilation,
 * no padding, one group, constant weight and bias; fc2 back to x's
 * channels), act1 and act2 optional epilogue activations
 * (opsched_op_is_epilogue), each node the only reader of the one before
 * (and no graph output).  opsched_se_gate_find gives the gate whose mean is
 * `node`, returning 1 and filling *out (else 0).  A plan that runs it
 * (opsched_plan_options.fuse_se) takes the mean's inputs, then the sides
 * W1, b1, W2, b2 (-1 where a bias is absent), and writes s, [N, C, 1, 1],
 * as the mean's output; the later nodes become aliases of it.  `mul` is
 * the Mul that is s's only reader and multiplies x (the mean's input) by
 * it into x's shape and type, or -1; a plan asked for it too (fuse_se 2)
 * may write x * s instead. */
typedef struct opsched_se_gate {
    int pool, fc1, act1, fc2, act2; /* nodes; act1, act2 -1 when absent */
    int mul;                        /* the multiply by s, or -1 (not in nodes) */
    int n, nodes[5];                /* the same in order, the mean first */
    int sides[4];                   /* W1, b1, W2, b2 (a bias -1 when absent) */
    int gate;                       /* the tensor s */
    int64_t hidden;                 /* fc1's output channels */
} opsched_se_gate;
int opsched_se_gate_find(const opsched_graph *g, int node, opsched_se_gate *out);

/* Layout per tensor (layout.c): under the channels-last layout, the 4-D
 * tensors that stay row-major.  A Transpose that permutes a channels-last
 * map to [N, H, W, C] makes a row-major tensor of the same bytes, and the
 * ops after it that follow strides only (element-wise, LayerNorm,
 * Softmax, MatMul, reductions, views) keep it row-major up to the Transpose
 * back to [N, C, H, W]; a region is kept only where every op that touches
 * it agrees.  Fills rm[t] (one byte per tensor of g: 1 row-major) and
 * returns the count of row-major tensors. */
int opsched_layout_rowmajor(const opsched_graph *g, unsigned char *rm);
/* The same into a new array: *out malloc'd (free()), or NULL when no
 * tensor of g is row-major; OPSCHED_ERR_NOMEM when memory runs out. */
opsched_status opsched_layout_rowmajor_new(const opsched_graph *g, unsigned char **out);
/* 1 when Transpose `node` is a view under rm: into or out of a region. */
int opsched_layout_transpose_view(const opsched_graph *g, int node, const unsigned char *rm);
/* The index of t among g's tensors when t is one of them, else -1. */
ptrdiff_t opsched_graph_tensor_index(const opsched_graph *g, const opsched_tensor *t);

/* 1 when MatMul `node` is one of an attention's two products: its output
 * reaches a Softmax or LogSoftmax, or an operand comes from one, within
 * six element-wise or reshaping nodes (scale, mask, bias, reshape).  Under
 * TF32 a backend runs such a product in strict fp32, as PyTorch's fused
 * attention does (precision.c says why); 0 for any other node. */
int opsched_product_is_attention(const opsched_graph *g, int node);

/* Sums the costs and simulates a sequential run for the peak memory. */
opsched_status opsched_graph_totals_compute(const opsched_graph *g, opsched_graph_totals *out);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_GRAPH_H */
