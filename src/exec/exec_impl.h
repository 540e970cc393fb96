/*
 * exec_impl.h - what the executor's files share: how tensors are stored
 * under a math mode and layout, host-side conversion to and from that
 * storage, and the memory plan (memplan.c).
 */
#ifndef OS_EXEC_IMPL_H
#define OS_EXEC_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "opsched/exec.h"

/* Every region of the arena and of the weight buffer starts at a multiple
 * of this (what cuDNN and cuBLAS like best; more than any vector load). */
#define OS_EXEC_ALIGN 256
/* offset of a tensor that lives outside the arena (weights, constants). */
#define OS_MEMPLAN_NONE SIZE_MAX

/* The dtype a tensor is stored in under math mode m: floating-point
 * tensors in the mode's type, integer tensors as the graph has them. */
opsched_dtype os_exec_storage_dtype(opsched_dtype dt, opsched_math m);
/* Bytes of tensor t in its storage dtype. */
size_t os_exec_tensor_bytes(const opsched_tensor *t, opsched_math m);
/* 1 when t is stored channels-last: the NHWC layout and rank 4 (the rule
 * every backend plan follows, weights included). */
int os_exec_is_nhwc(const opsched_tensor *t, opsched_layout layout);

/* Copies n elements from src (dtype sdt) to dst (dtype ddt), converting
 * the type (floats rounded to nearest, integers truncated) and, for a 4-D
 * tensor of logical shape s, the order: perm 1 reads NCHW and writes NHWC,
 * -1 reads NHWC and writes NCHW, 0 keeps it.  s may be NULL when perm is 0. */
void os_exec_convert(const void *src, opsched_dtype sdt, void *dst, opsched_dtype ddt, size_t n,
                     const opsched_shape *s, int perm);

/* How the executor draws values for a tensor without a payload: floats
 * uniform in [lo, hi), integers below index_extent (Gather indices into
 * an axis of that extent) or below 7 when 0. */
typedef struct os_exec_fill {
    float lo, hi;
    int64_t index_extent;
} os_exec_fill;

/* The draw for tensor t of g: graph inputs in [-1, 1); weights by their
 * role (fan-in scaled multipliers, positive normalisation scales and
 * variances, small biases and shifts). */
os_exec_fill os_exec_fill_for(const opsched_graph *g, int t);
/* n values drawn as f says for a tensor of dtype dt, from seed, in f32. */
void os_exec_random_values(const os_exec_fill *f, opsched_dtype dt, size_t n, uint64_t seed,
                           float *dst);
/* Weight, constant or input t of g as the executor stores it under (m,
 * layout): its payload (not for inputs), else values drawn from seed + t;
 * dst holds os_exec_tensor_bytes. */
opsched_status os_exec_tensor_values(opsched_ctx *ctx, const opsched_graph *g, int t,
                                     opsched_math m, opsched_layout layout, uint64_t seed,
                                     void *dst);

/* Planning rules the executors share (exec.c).  A view node aliases its
 * input when the stored order of both sides is the same; a Relu that is
 * the only reader of a node's output (not a graph output) can be fused
 * into it; a node is planned with the options' algorithm, falling back as
 * o->algo_fallback says (li gets the fallback and its reason). */
int os_exec_view_aliases(const opsched_graph *g, int node, opsched_math m, opsched_layout layout);
int os_exec_relu_reader(const opsched_graph *g, int node);
opsched_status os_exec_plan_node(opsched_device *dev, const opsched_graph *g, int node,
                                 const opsched_exec_options *o, opsched_layer_info *li,
                                 opsched_plan **out);

/* Where every tensor's memory is.  Activations and graph inputs live in
 * one arena: the inputs in a region of their own at its start (alive for
 * the whole run), then the activations at offsets that a greedy interval
 * allocator chose from their lifetimes (producer to last reader, in node
 * order; graph outputs to the end).  A node flagged as an alias writes
 * nothing of its own: its output uses its first input's memory (views;
 * a Relu fused into the convolution before it). */
typedef struct os_memplan {
    size_t arena_bytes; /* the input region plus the activations' peak */
    size_t input_bytes; /* the input region */
    int n_tensors;
    int *root;      /* per tensor: the tensor whose memory it uses */
    size_t *offset; /* per tensor: its root's arena offset, or OS_MEMPLAN_NONE */
    size_t *bytes;  /* per tensor: storage bytes */
} os_memplan;

/* Plans g's activations under math mode m (element sizes).  alias has one
 * flag per node (NULL: no aliases); a flagged node must have one output of
 * its first input's byte size.  out is released with os_memplan_release. */
opsched_status os_memplan_compute(opsched_ctx *ctx, const opsched_graph *g, opsched_math m,
                                  const unsigned char *alias, os_memplan *out);
void os_memplan_release(os_memplan *p);

/* A block of memory alive from step first to step last (inclusive). */
typedef struct os_memblock {
    int id;          /* the caller's */
    int first, last;
    size_t size;     /* a multiple of OS_EXEC_ALIGN */
    size_t offset;   /* set by os_memplan_place */
} os_memblock;

/* Places blocks so that blocks alive at a common step never overlap
 * (greedy by size: see memplan.c); reorders them.  *peak gets the end of
 * the highest block. */
opsched_status os_memplan_place(opsched_ctx *ctx, os_memblock *blocks, int n, size_t *peak);

#endif /* OS_EXEC_IMPL_H */
