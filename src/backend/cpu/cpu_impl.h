/*
 * cpu_impl.h - what the CPU backend's files share: the device, the plan,
 * the oneDNN check macros and the plain C operators.
 *
 * The CPU backend runs every operator on f32 row-major host buffers.  A plan
 * is at most one "pre" loop, one oneDNN primitive and one loop, run in that
 * order by cpu_plan_launch.  The primitive's memory objects are created at
 * plan time without data and get the caller's buffers at launch.
 *
 * oneDNN is built here with the OpenMP runtime: a primitive has finished when
 * dnnl_primitive_execute returns, so the plain C loops may run right after.
 */
#ifndef OS_BACKEND_CPU_IMPL_H
#define OS_BACKEND_CPU_IMPL_H

#include <stddef.h>
#include <stdint.h>

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
    opsched_dtype in_dt[CPU_MAX_IO];
    opsched_shape out[CPU_MAX_IO];
    int fused_relu; /* the loop applies a following Relu */
} cpu_node;

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

/* Builds the oneDNN part of a plan (or picks a loop) for each operator
 * family.  UNSUPPORTED means this backend cannot run the node at all. */
opsched_status cpu_ops_conv(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p,
                            const opsched_plan_options *opts, opsched_plan_info *info);
opsched_status cpu_ops_build(opsched_ctx *ctx, cpu_dev *dev, cpu_plan *p, opsched_plan_info *info);

/* ---- plain C operators (cpu_loops.c) ---------------------------------- */

opsched_status cpu_loop_copy(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                             void *const *out);
opsched_status cpu_loop_unary(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                              void *const *out);
opsched_status cpu_loop_binary(opsched_ctx *ctx, const cpu_node *n, void *const *in,
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
opsched_status cpu_loop_pool(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                             void *const *out);
opsched_status cpu_loop_lrn(opsched_ctx *ctx, const cpu_node *n, void *const *in, void *const *out);
opsched_status cpu_loop_matmul(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out);
opsched_status cpu_loop_reduce_mean(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                    void *const *out);
/* Gemm's pre-step: Y = C broadcast to [M, N] (the sum post-op adds beta*Y). */
opsched_status cpu_loop_gemm_c(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out);

#endif /* OS_BACKEND_CPU_IMPL_H */
