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
    OPSCHED_DTYPE_COUNT
} opsched_dtype;

typedef enum opsched_layout {
    OPSCHED_LAYOUT_NCHW = 0,
    OPSCHED_LAYOUT_NHWC
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
    OPSCHED_OP_MAXPOOL,
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
    OPSCHED_OP_COUNT
} opsched_op_kind;

/* 2-D convolution.  Inputs: X [N,C,H,W], W [M,C/groups,kh,kw], optional B [M]. */
typedef struct opsched_conv_attr {
    int64_t kernel[2];    /* kh, kw */
    int64_t stride[2];
    int64_t dilation[2];
    int64_t pads[4];      /* top, left, bottom, right (ONNX begin..., end...) */
    int64_t groups;
} opsched_conv_attr;

/* Max and average pooling (2-D). */
typedef struct opsched_pool_attr {
    int64_t kernel[2];
    int64_t stride[2];
    int64_t dilation[2];
    int64_t pads[4];
    int ceil_mode;
    int count_include_pad; /* average pooling only */
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

typedef struct opsched_reduce_attr {
    int n_axes;
    int64_t axes[OPSCHED_MAX_DIMS];
    int keepdims;
} opsched_reduce_attr;

typedef struct opsched_transpose_attr {
    int n;
    int64_t perm[OPSCHED_MAX_DIMS];
} opsched_transpose_attr;

typedef enum opsched_pad_mode {
    OPSCHED_PAD_CONSTANT = 0,
    OPSCHED_PAD_REFLECT,
    OPSCHED_PAD_EDGE
} opsched_pad_mode;

typedef struct opsched_pad_attr {
    int64_t pads[2 * OPSCHED_MAX_DIMS]; /* begins for each dim, then ends */
    opsched_pad_mode mode;
    float value;
} opsched_pad_attr;

/* Reshape, Flatten's target and Expand's target: the resolved output shape
 * (no -1 or 0 left).  For Expand it is broadcast against the input. */
typedef struct opsched_shape_attr { opsched_shape shape; } opsched_shape_attr;

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
/* Looks an operator up by its ONNX name; OPSCHED_ERR_NOT_FOUND if unknown. */
opsched_status opsched_op_from_name(const char *name, opsched_op_kind *out);
/* 1 for ops that only view their input (Reshape, Flatten, Identity, Dropout). */
int opsched_op_is_view(opsched_op_kind op);

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

/* Sums the costs and simulates a sequential run for the peak memory. */
opsched_status opsched_graph_totals_compute(const opsched_graph *g, opsched_graph_totals *out);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_GRAPH_H */
