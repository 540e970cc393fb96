/*
 * exec_impl.h - what the executor's files share: how tensors are stored
 * under a math mode and layout, host-side conversion to and from that
 * storage (exec_data.c), the planning rules (exec_build.c), the placement
 * of memory blocks (memplan.c), and the executor itself: its tensors (the
 * graph's, plus the merged convolutions' own), its launches in the order
 * they are enqueued, and the program that orders its streams
 * (exec_build.c builds everything; exec_run.c orders, runs, captures and
 * times it).
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
 * uniform in [lo, hi), integers below index_extent (indices of Gather,
 * GatherElements/ND, ScatterElements/ND and OneHot, into the smallest
 * extent they address), bool 0 or 1, other integers below 7. */
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

/* Planning rules (exec_build.c), the ones the predictor's composition,
 * the sweep's network entries and the searchers' units follow too.  A
 * view node aliases its input when the stored order of both sides is the
 * same (always in NCHW; in NHWC when neither side is a channels-last 4-D
 * tensor with more than one channel and pixel); an activation that is the
 * only reader of a convolution's output (not a graph output) can be fused
 * into it as its epilogue (opsched_conv_epilogue's rule):
 * os_exec_fused_act gives that activation or -1; a node is planned with
 * the options' algorithm, falling back as o->algo_fallback says (li gets
 * the fallback and its reason). */
int os_exec_view_aliases(const opsched_graph *g, int node, opsched_math m, opsched_layout layout,
                         const unsigned char *rowmajor);
int os_exec_fused_act(const opsched_graph *g, int node);
opsched_status os_exec_plan_node(opsched_device *dev, const opsched_graph *g, int node,
                                 const opsched_exec_options *o, opsched_layer_info *li,
                                 opsched_plan **out);

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

/* ---- the executor ---------------------------------------------------------- */

/* A tensor of the executor: ids below the graph's tensor count are the
 * graph's; the rest belong to merged convolutions (their weights, the
 * merged output).  Memory is nested: a tensor lives at byte `rel` inside
 * its parent's memory (itself when it is a root), so views and fused
 * Relus (rel 0) and concat and merge slices (rel > 0) resolve to a root
 * and an offset. */
typedef struct ex_tensor {
    opsched_tensor_kind kind;
    opsched_shape shape;
    opsched_dtype sdt; /* storage dtype */
    int nhwc;
    size_t numel, bytes;
    int parent;
    size_t rel;
    int used;            /* read or written by a launch, or a graph input or output */
    void *host;          /* merged weights: stored values until uploaded (owned) */
    size_t arena_off;    /* where it is in the arena; SIZE_MAX for weights */
    opsched_buffer *buf; /* a view this tensor owns; NULL when unused */
    os_exec_fill fill;   /* graph inputs */
} ex_tensor;

typedef struct ex_launch {
    opsched_plan *plan; /* owned */
    int node;           /* the graph node; a merge's first member */
    int stage, stream;
    char label[96];
    int n_in, n_out;
    int *in, *out;                /* executor tensor ids, -1 for omitted inputs (owned) */
    opsched_buffer **bin, **bout; /* the tensors' buffers (owned arrays) */
    int n_waits;
    int *waits;           /* events waited on before the launch (owned) */
    int record;           /* event recorded after it, -1 for none */
    /* Layer-timed runs: the next launch when it is on the same stream and
     * waits for nothing (its start mark ends this one), else -1 (a stop
     * mark of its own). */
    int next_mark;
    opsched_timer *timer; /* timed runs; created on the first */
} ex_launch;

/* events[0] forks the streams from stream 0; events[1 .. n_streams) join
 * stream k back; the rest are recorded after launches. */
#define EX_EVENT_FORK 0

struct opsched_executor {
    opsched_device *dev;
    opsched_ctx *ctx;
    opsched_math math;
    opsched_layout layout;
    unsigned char *rowmajor; /* NULL, or per graph tensor: kept row-major under NHWC
                              * (opsched_layout_rowmajor) */
    int timing_only; /* opsched_exec_options.timing_only */
    int pdl_choose;  /* the plans launch programmatically: capture chooses (not ablated) */
    int pdl_on;      /* launch them so (1) or plainly (0): every run sets it */
    int n_nodes, n_graph_tensors, n_stages;
    int n_inputs, n_outputs;
    int *inputs, *outputs; /* tensor ids */
    ex_tensor *tensors;
    int n_tensors, cap_tensors;
    opsched_layer_info *nodes;
    ex_launch *launches;
    int n_launches, cap_launches;
    int n_streams;
    opsched_stream **streams; /* [0] is the device's (borrowed) */
    opsched_event **events;
    int n_events;
    opsched_buffer *arena, *weights;
    void *graph; /* captured device graph, NULL when none */
    opsched_timer *ref_timer, *end_timer;
    opsched_exec_info info;
};

/* Resolves t to its root tensor and its byte offset inside the root. */
int os_ex_root(const opsched_executor *ex, int t, size_t *offset);

/* Orders the launches (exec_run.c): finds, for every launch, the launches
 * on other streams it must wait for (it reads memory they wrote, or writes
 * memory they used), keeps only the waits that earlier waits do not imply,
 * creates the events, and chains the layer-timing marks. */
opsched_status os_ex_build_program(opsched_executor *ex);

/* Captures `repeat` inferences back to back as the executor's device
 * graph (a replay then runs them all). */
opsched_status os_ex_capture(opsched_executor *ex, int repeat);

/* Runs inferences (replays when use_graph) back to back for at least ms
 * and min_runs, the queue bounded (a sync every 8 runs, so the host's
 * clock follows the device's), then waits for the device. */
opsched_status os_ex_warmup(opsched_executor *ex, int use_graph, double ms, int min_runs);

/* Samples per round of a sampling, at most. */
#define OS_EX_ROUND 16

/* How os_ex_sample samples. */
typedef struct os_ex_sampling {
    int iters;       /* samples, at least */
    double min_ms;   /* and at least this long in all */
    int round;       /* samples per round, 1 to OS_EX_ROUND */
    int max_samples; /* a bound on any one sampling */
    /* One sample's inference: a free run (a replay when use_graph) when
     * run is NULL, else run(user); before_round(user, k), when set, is
     * called before each round of k samples is enqueued. */
    opsched_status (*run)(void *user);
    void (*before_round)(void *user, int k);
    void *user;
} os_ex_sampling;

/* Times inferences, each between its own pair of timestamps on the
 * device's stream, in rounds enqueued one round ahead of the round being
 * read (so the device never waits for the host), until s->iters samples
 * and s->min_ms of them; then waits for the device.  *samples: ms per
 * inference in the order run (malloc'd, free()). */
opsched_status os_ex_sample(opsched_executor *ex, int use_graph, const os_ex_sampling *s,
                            double **samples, int *n);

#endif /* OS_EXEC_IMPL_H */
