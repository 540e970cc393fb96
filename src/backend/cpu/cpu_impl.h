/*
 * cpu_impl.h - what the CPU backend's files share: the device, the plan,
 * the oneDNN check macros and the plain C operators.
 *
 * The CPU backend runs every operator on row-major host buffers.  Float
 * tensors (f32, f16, bf16 declared) are stored as f32, since the CPU runs
 * fp32 math only; int64, int32, int8, uint8 and bool tensors are stored as
 * themselves (bool: one byte, 0 or 1).  A plan is at most one "pre" loop,
 * one oneDNN primitive and one loop, run in that order by cpu_plan_launch.
 * The primitive's memory objects are created at plan time without data and
 * get the caller's buffers at launch.  oneDNN sees f32 tensors only: a node
 * with any other tensor runs as a plain loop.
 *
 * oneDNN is built here with the OpenMP runtime: a primitive has finished when
 * dnnl_primitive_execute returns, so the plain C loops may run right after.
 */
#ifndef OS_BACKEND_CPU_IMPL_H
#define OS_BACKEND_CPU_IMPL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "backend/backend_impl.h"
#include "core/error.h"

/* The most inputs or outputs a node may have here (Split's 32 outputs). */
#define CPU_MAX_IO 40
/* The most execution arguments of one primitive (Concat's 16 sources). */
#define CPU_MAX_ARGS 136 /* a Concat of 128 inputs, its output and scratchpad */
/* Host buffers are aligned like this (a cache line, and AVX-512 friendly). */
#define CPU_ALIGN 64

typedef struct cpu_dev {
    dnnl_engine_t engine;
    dnnl_stream_t stream; /* the default stream (the NULL stream handle) */
    char energy_path[96]; /* RAPL package counter, "" when unreadable */
} cpu_dev;

/* What a plan keeps of its node: enough for the loops to run without the
 * graph, which a plan must not borrow. */
typedef struct cpu_node {
    opsched_op_kind op;
    opsched_op_attr attr;
    int n_in, n_out;
    int has_in[CPU_MAX_IO];
    opsched_shape in[CPU_MAX_IO];
    opsched_dtype in_dt[CPU_MAX_IO]; /* declared types (float ones stored as f32) */
    opsched_shape out[CPU_MAX_IO];
    opsched_dtype out_dt[CPU_MAX_IO];
    int fused_res;               /* the convolution adds its residual, input 3 (first post-op) */
    int fused_act;               /* the convolution applies its epilogue activation: */
    opsched_op_kind act_op;      /* the activation node's kind and attributes */
    opsched_op_attr act_attr;
    int n_chain;                 /* an element-wise chain from this node: its steps, */
    struct cpu_chain_step *chain; /* owned by the plan; the inputs then end with the sides */
    int se;                      /* a squeeze-and-excitation gate from this mean: */
    int se_side;                 /* the input of W1 (then b1, W2, b2) */
    int64_t se_hidden;           /* fc1's output channels */
    int se_mul;                  /* 1: writes x * s (the gate's multiply), x's shape */
    int se_act[2];               /* 1 when act1 / act2 is present: */
    opsched_op_kind se_op[2];    /* its kind and attributes */
    opsched_op_attr se_attr[2];
    int move;                    /* a movement run's gather from input 0 (opsched_move_run): */
    opsched_move_view move_view; /* the source's factors, and */
    int64_t move_dst[OPSCHED_MOVE_MAX_FACTORS]; /* each factor's stride in the output */
    int move_parts;              /* > 0: the source is a Concat's output, read from its
                                  * inputs (opsched_move_concat), these many: */
    int64_t move_inner, move_extent;            /* its stride and extent along the axis */
    int64_t move_start[OPSCHED_MOVE_MAX_CONCAT]; /* each input's first index there */
    int64_t move_len[OPSCHED_MOVE_MAX_CONCAT];   /* and its extent */
} cpu_node;

/* One node of an element-wise chain: v = f(v), or v = f(v, w) (f(w, v)
 * when swap) with w the plan's input `operand`. */
typedef struct cpu_chain_step {
    opsched_op_kind op;
    opsched_op_attr attr;
    int binary, operand, swap;
} cpu_chain_step;

/* A plain C operator: in/out follow the node, as at launch. */
typedef opsched_status (*cpu_loop_fn)(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                      void *const *out);

/* Where the buffer of an execution argument comes from at launch. */
#define CPU_IO_FIXED (-1000)   /* owned by the plan (the scratchpad) */
#define CPU_IO_OUT(j) (-(j)-1) /* node output j; inputs are 0, 1, ... */

typedef struct cpu_bind {
    int arg; /* DNNL_ARG_* */
    int io;
    dnnl_memory_t mem;
} cpu_bind;

typedef struct cpu_prim {
    dnnl_primitive_t prim;
    int n_binds;
    cpu_bind binds[CPU_MAX_ARGS];
    void *scratch; /* user-mode scratchpad, owned */
    size_t scratch_bytes;
} cpu_prim;

typedef struct cpu_plan {
    cpu_node node;
    cpu_loop_fn pre;  /* before the primitive (Gemm: C into Y) */
    cpu_prim main;    /* main.prim NULL: no primitive */
    cpu_loop_fn loop; /* the operator when there is no primitive */
    /* A convolution applying its input's gate (fuse_gate): x * s, s input
     * 5 of [N, C] values, into this buffer, which the primitive reads as
     * input 0.  The reference form of the folded product (NCHW). */
    float *gate_buf;
    int64_t gate_n, gate_c, gate_hw;
    /* A batch normalisation reading its Concat's inputs (norm_concat):
     * input 0 and inputs 5 on, concatenated along the channels into this
     * buffer, which the primitive reads as input 0.  The reference form of
     * the gathering normalisation (NCHW). */
    float *cat_buf;
    int cat_parts;
    int64_t cat_n, cat_hw, cat_c[OPSCHED_NORM_MAX_CONCAT];
} cpu_plan;

/* ---- oneDNN error handling ------------------------------------------- */

const char *cpu_dnnl_status_name(dnnl_status_t s);
/* Records a failed oneDNN call on ctx: out of memory -> NOMEM, unimplemented
 * -> UNSUPPORTED, anything else -> BACKEND, with the call's text. */
opsched_status cpu_dnnl_fail(opsched_ctx *ctx, dnnl_status_t s, const char *call, const char *file,
                             int line);

#define CPU_DNNL(ctx, call)                                                                        \
    do {                                                                                           \
        dnnl_status_t cpu_s_ = (call);                                                             \
        if (cpu_s_ != dnnl_success)                                                                \
            return cpu_dnnl_fail((ctx), cpu_s_, #call, __FILE__, __LINE__);                        \
    } while (0)

#define CPU_DNNL_GOTO(st, ctx, call, label)                                                        \
    do {                                                                                           \
        dnnl_status_t cpu_s_ = (call);                                                             \
        if (cpu_s_ != dnnl_success) {                                                              \
            (st) = cpu_dnnl_fail((ctx), cpu_s_, #call, __FILE__, __LINE__);                        \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

/* ---- host memory ------------------------------------------------------ */

/* CPU_ALIGN-aligned allocation of at least bytes (>= 1); NULL when out of
 * memory.  Free with free(). */
void *cpu_aligned_alloc(size_t bytes);

/* ---- plans (cpu_plan.c, cpu_ops.c) ------------------------------------ */

opsched_status cpu_plan_create(opsched_ctx *ctx, void *dev, const opsched_graph *g, int node,
                               const opsched_plan_options *opts, void **plan,
                               opsched_plan_info *info);
void cpu_plan_free(void *dev, void *plan);
opsched_status cpu_plan_launch(opsched_ctx *ctx, void *dev, void *plan, void *stream,
                               void *const *in, void *const *out);

/* Creates the primitive of pd (consumed: destroyed on every path) into p
 * with its scratchpad, and binds each args[i] (a DNNL_ARG_*) to io[i]. */
opsched_status cpu_prim_from_pd(opsched_ctx *ctx, cpu_dev *dev, cpu_prim *p,
                                dnnl_primitive_desc_t pd, const int *args, const int *io, int n);
/* Creates a primitive descriptor for an operation descriptor with a user
 * scratchpad, an output scale (1: none) and post-ops (may be NULL).  what
 * names the operation in the "no implementation" message. */
opsched_status cpu_pd_create(opsched_ctx *ctx, cpu_dev *dev, const_dnnl_op_desc_t desc, float scale,
                             const_dnnl_post_ops_t post_ops, const char *what,
                             dnnl_primitive_desc_t *pd);
/* A primitive attribute with a user scratchpad, an output scale (1: none)
 * and post-ops (may be NULL). */
opsched_status cpu_attr_create(opsched_ctx *ctx, float scale, const_dnnl_post_ops_t post_ops,
                               dnnl_primitive_attr_t *attr);
void cpu_prim_release(cpu_prim *p);
/* Binds buffers and executes p on stream. */
opsched_status cpu_prim_run(opsched_ctx *ctx, cpu_prim *p, dnnl_stream_t stream, void *const *in,
                            void *const *out);
/* A row-major f32 memory descriptor; rank 0 becomes [1]. */
opsched_status cpu_plain_md(opsched_ctx *ctx, int ndim, const int64_t *dims,
                            dnnl_memory_desc_t *md);
/* A window op's geometry in oneDNN's order (D, H, W for a 3-D op of rank
 * 5; H, W otherwise): kernel, strides, dilations (oneDNN's: minus one),
 * pads at the beginning and at the end.  Returns the number of axes. */
int cpu_window_dims(int rank, const opsched_window_depth *dp, const int64_t kernel[2],
                    const int64_t stride[2], const int64_t dil[2], const int64_t pads[4],
                    dnnl_dims_t k, dnnl_dims_t s, dnnl_dims_t d, dnnl_dims_t pl, dnnl_dims_t pr);

/* Builds the oneDNN part of a plan (or picks a loop) for each operator
 * family.  UNSUPPORTED means this backend cannot run the node at all. */
opsched_status cpu_ops_conv(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                            const opsched_plan_options *opts, opsched_plan_info *info);
opsched_status cpu_ops_build(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p, opsched_plan_info *info);

/* ---- typed storage (cpu_data.c) ---------------------------------------- */

/* 1 for the float types, which this backend stores as f32. */
static inline int cpu_is_float(opsched_dtype dt)
{
    return dt == OPSCHED_F32 || dt == OPSCHED_F16 || dt == OPSCHED_BF16;
}

/* Bytes of one stored element: 4 for every float type. */
size_t cpu_esize(opsched_dtype dt);

/* The smallest and largest value of an integer type (bool: 0 and 1). */
int64_t cpu_int_min(opsched_dtype dt);
int64_t cpu_int_max(opsched_dtype dt);

/* A double as an integer of type dt: truncated toward zero and saturated
 * to dt's range, NaN as 0; bool: v != 0 (NaN is true, as in NumPy). */
int64_t cpu_double_to_int(double v, opsched_dtype dt);

/* Rounds half to even, independent of the floating-point environment. */
double cpu_round_half_even(double v);

/* v rounded to the precision of float type dt (f32, f16 or bf16), to
 * nearest with ties to even, overflowing to infinity. */
double cpu_round_to(double v, opsched_dtype dt);

/* Element i of a stored tensor of declared type dt. */
static inline double cpu_load_f(const void *p, opsched_dtype dt, int64_t i)
{
    switch (dt) {
    case OPSCHED_INT8:
        return ((const int8_t *)p)[i];
    case OPSCHED_INT32:
        return ((const int32_t *)p)[i];
    case OPSCHED_INT64:
        return (double)((const int64_t *)p)[i];
    case OPSCHED_UINT8:
    case OPSCHED_BOOL:
        return ((const uint8_t *)p)[i];
    default:
        return ((const float *)p)[i];
    }
}

/* Element i as an integer; a float is converted as cpu_double_to_int does
 * for int64. */
static inline int64_t cpu_load_i(const void *p, opsched_dtype dt, int64_t i)
{
    switch (dt) {
    case OPSCHED_INT8:
        return ((const int8_t *)p)[i];
    case OPSCHED_INT32:
        return ((const int32_t *)p)[i];
    case OPSCHED_INT64:
        return ((const int64_t *)p)[i];
    case OPSCHED_UINT8:
    case OPSCHED_BOOL:
        return ((const uint8_t *)p)[i];
    default:
        return cpu_double_to_int(((const float *)p)[i], OPSCHED_INT64);
    }
}

/* Stores v as element i: floats rounded to f32, integers as
 * cpu_double_to_int converts. */
static inline void cpu_store_f(void *p, opsched_dtype dt, int64_t i, double v)
{
    if (cpu_is_float(dt)) {
        ((float *)p)[i] = (float)v;
        return;
    }
    int64_t k = cpu_double_to_int(v, dt);
    switch (dt) {
    case OPSCHED_INT8:
        ((int8_t *)p)[i] = (int8_t)k;
        break;
    case OPSCHED_INT32:
        ((int32_t *)p)[i] = (int32_t)k;
        break;
    case OPSCHED_INT64:
        ((int64_t *)p)[i] = k;
        break;
    default: /* uint8, bool */
        ((uint8_t *)p)[i] = (uint8_t)k;
        break;
    }
}

/* Stores v as element i: integers wrap to their width (two's complement,
 * as NumPy's astype does), bool is v != 0, floats are rounded to f32. */
static inline void cpu_store_i(void *p, opsched_dtype dt, int64_t i, int64_t v)
{
    uint64_t u = (uint64_t)v;
    switch (dt) {
    case OPSCHED_INT8: {
        uint8_t b = (uint8_t)u;
        memcpy((int8_t *)p + i, &b, 1);
        break;
    }
    case OPSCHED_INT32: {
        uint32_t w = (uint32_t)u;
        memcpy((int32_t *)p + i, &w, 4);
        break;
    }
    case OPSCHED_INT64:
        ((int64_t *)p)[i] = v;
        break;
    case OPSCHED_UINT8:
        ((uint8_t *)p)[i] = (uint8_t)u;
        break;
    case OPSCHED_BOOL:
        ((uint8_t *)p)[i] = v != 0;
        break;
    default:
        ((float *)p)[i] = (float)v;
        break;
    }
}

/* Copies element si of src to element di of dst, both of esz bytes. */
static inline void cpu_copy_elem(void *dst, int64_t di, const void *src, int64_t si, size_t esz)
{
    switch (esz) {
    case 1:
        ((uint8_t *)dst)[di] = ((const uint8_t *)src)[si];
        break;
    case 4:
        ((uint32_t *)dst)[di] = ((const uint32_t *)src)[si];
        break;
    default:
        ((uint64_t *)dst)[di] = ((const uint64_t *)src)[si];
        break;
    }
}

/* ---- walking shapes ------------------------------------------------------ */

#define CPU_WALK_OPS 10

/* Walks the elements of `dims` in row-major order (an odometer), keeping
 * the offset of up to CPU_WALK_OPS operands whose per-dimension strides
 * are st[k].  A stride of 0 repeats an operand along that dimension, which
 * is how broadcasting reads. */
typedef struct cpu_walk {
    int nd;
    int64_t dims[OPSCHED_MAX_DIMS];
    int64_t idx[OPSCHED_MAX_DIMS];
    int64_t st[CPU_WALK_OPS][OPSCHED_MAX_DIMS];
    int64_t off[CPU_WALK_OPS];
} cpu_walk;

/* Starts at the first element of dims with every stride 0. */
void cpu_walk_init(cpu_walk *w, const opsched_shape *dims);
/* Merges each pair of neighbouring dimensions that every one of the first
 * n_ops operands walks as one (its outer stride its inner stride times the
 * inner extent, broadcast ones included), so that the last dimension, the
 * row a loop runs, is as long as it can be: a per-channel operand over
 * [N, C, H, W] walks [N, C, H * W].  The order of the elements stays. */
void cpu_walk_coalesce(cpu_walk *w, int n_ops);

/* Steps to the next element of the first `upto` dimensions (w->nd for the
 * next element; w->nd - 1 for the next row, the caller walking the last
 * dimension itself). */
static inline void cpu_walk_step(cpu_walk *w, int upto)
{
    for (int i = upto - 1; i >= 0; i--) {
        w->idx[i]++;
        for (int k = 0; k < CPU_WALK_OPS; k++)
            w->off[k] += w->st[k][i];
        if (w->idx[i] < w->dims[i]) return;
        for (int k = 0; k < CPU_WALK_OPS; k++)
            w->off[k] -= w->st[k][i] * w->dims[i];
        w->idx[i] = 0;
    }
}

/* Strides that read `in` broadcast to `out` (0 on repeated dimensions). */
void cpu_bcast_strides(const opsched_shape *in, const opsched_shape *out, int64_t *st);
/* Row-major strides of s. */
void cpu_row_strides(const opsched_shape *s, int64_t *st);
/* Product of the extents from..to-1. */
int64_t cpu_span(const opsched_shape *s, int from, int to);
/* The length of the last dimension (1 for a scalar) and the number of such
 * rows in s. */
void cpu_rows(const opsched_shape *s, int64_t *len, int64_t *rows);

/* Copies x (shape from, elements of esz bytes) broadcast to shape to. */
void cpu_broadcast_copy(const void *x, const opsched_shape *from, const opsched_shape *to, void *y,
                        size_t esz);

/* ---- plain C operators --------------------------------------------------- */

/* Data movement, pooling, LRN, MatMul and Gemm (cpu_loops.c).  The data
 * movement loops take every type. */
opsched_status cpu_loop_copy(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                             void *const *out);
opsched_status cpu_loop_split(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out);
opsched_status cpu_loop_slice(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out);
opsched_status cpu_loop_gather(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out);
opsched_status cpu_loop_pad(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out);
opsched_status cpu_loop_expand(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out);
opsched_status cpu_loop_concat(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out);
opsched_status cpu_loop_transpose(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                  void *const *out);
/* Max pooling on any numeric type; average pooling on floats. */
opsched_status cpu_loop_pool(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                             void *const *out);
opsched_status cpu_loop_lrn(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out);
/* MatMul and Gemm on any numeric type (integers accumulate in int64). */
opsched_status cpu_loop_attention(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                  void *const *out);
opsched_status cpu_loop_matmul(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out);
opsched_status cpu_loop_gemm(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                             void *const *out);
/* Gemm's pre-step: Y = C broadcast to [M, N] (the sum post-op adds beta*Y). */
/* A convolution's residual (input 3) into its output, for its sum post-op. */
opsched_status cpu_loop_conv_residual(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                      void *const *out);
opsched_status cpu_loop_gemm_c(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out);

/* Element-wise (cpu_elementwise.c): the activation kinds and Unary, the
 * arithmetic kinds and Binary, Where and Cast, over every type. */
opsched_status cpu_loop_unary(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out);
/* An element-wise chain of float nodes (n->chain) in one pass, in double,
 * rounded once when stored. */
opsched_status cpu_loop_chain(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out);
/* The squeeze-and-excitation gate (opsched_se_gate_find) of an NCHW map,
 * in double: in[0] x, in[se_side..] W1, b1, W2, b2; out[0] s [N, C]. */
opsched_status cpu_loop_se(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out);
opsched_status cpu_loop_binary(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out);
opsched_status cpu_loop_where(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out);
opsched_status cpu_loop_cast(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                             void *const *out);

/* Reductions and what works along one axis (cpu_reduce.c). */
opsched_status cpu_loop_reduce(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out);
opsched_status cpu_loop_arg(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out);
opsched_status cpu_loop_logsoftmax(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                   void *const *out);
opsched_status cpu_loop_hardmax(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                void *const *out);
opsched_status cpu_loop_cumsum(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out);
opsched_status cpu_loop_topk(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                             void *const *out);
opsched_status cpu_loop_groupnorm(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                  void *const *out);

/* Indexing (cpu_index.c).  Indices outside their axis fail the launch with
 * OPSCHED_ERR_INVALID_ARG (the output is then unspecified). */
opsched_status cpu_loop_gather_elements(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                        void *const *out);
opsched_status cpu_loop_gather_nd(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                  void *const *out);
opsched_status cpu_loop_scatter_elements(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                         void *const *out);
opsched_status cpu_loop_scatter_nd(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                   void *const *out);
opsched_status cpu_loop_tile(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                             void *const *out);
opsched_status cpu_loop_trilu(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out);
opsched_status cpu_loop_onehot(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out);

/* Resize (cpu_resize.c), QuantizeLinear and DequantizeLinear (cpu_quant.c). */
opsched_status cpu_loop_resize(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out);
opsched_status cpu_loop_quantize(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                 void *const *out);
opsched_status cpu_loop_dequantize(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                   void *const *out);

/* ConvTranspose (cpu_deconv.c): oneDNN's deconvolution, or the loop when
 * opts->algo is "loop" or oneDNN has no implementation. */
opsched_status cpu_ops_conv_transpose(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                                      const opsched_plan_options *opts, opsched_plan_info *info);
opsched_status cpu_loop_conv_transpose(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                       void *const *out);

/* The training operators (cpu_train.c): BatchNormTraining and
 * BatchNormBackward as loops, ConvBackwardFilter through oneDNN's backward
 * weights or a loop. */
opsched_status cpu_ops_train(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                             const opsched_plan_options *opts, opsched_plan_info *info);

#endif /* OS_BACKEND_CPU_IMPL_H */
