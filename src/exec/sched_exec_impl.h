/*
 * sched_exec_impl.h - what the schedule executor's files share: its
 * tensors (the graph's, plus the merged convolutions' own), its launches
 * in the order they are enqueued, and the program that orders streams
 * (sched_exec.c builds everything; sched_run.c orders, runs, captures,
 * traces and times it).
 */
#ifndef OS_SCHED_EXEC_IMPL_H
#define OS_SCHED_EXEC_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "exec/exec_impl.h"

/* A tensor of the executor: ids below the graph's tensor count are the
 * graph's; the rest belong to merged convolutions (their weights, the
 * merged output).  Memory is nested: a tensor lives at byte `rel` inside
 * its parent's memory (itself when it is a root), so views and fused
 * Relus (rel 0) and concat and merge slices (rel > 0) resolve to a root
 * and an offset. */
typedef struct sx_tensor {
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
} sx_tensor;

typedef struct sx_launch {
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
    opsched_timer *timer; /* traced runs; created on the first */
} sx_launch;

/* events[0] forks the streams from stream 0; events[1 .. n_streams) join
 * stream k back; the rest are recorded after launches. */
#define SX_EVENT_FORK 0

struct opsched_sched_executor {
    opsched_device *dev;
    opsched_ctx *ctx;
    opsched_math math;
    opsched_layout layout;
    int timing_only; /* opsched_sched_exec_options.timing_only */
    int n_nodes, n_graph_tensors, n_stages;
    int n_inputs, n_outputs;
    int *inputs, *outputs; /* tensor ids */
    sx_tensor *tensors;
    int n_tensors, cap_tensors;
    opsched_sched_node_info *nodes;
    sx_launch *launches;
    int n_launches, cap_launches;
    int n_streams;
    opsched_stream **streams; /* [0] is the device's (borrowed) */
    opsched_event **events;
    int n_events;
    opsched_buffer *arena, *weights;
    void *graph; /* captured device graph, NULL when none */
    opsched_timer *ref_timer, *end_timer;
    opsched_sched_exec_info info;
};

/* Resolves t to its root tensor and its byte offset inside the root. */
int os_sx_root(const opsched_sched_executor *ex, int t, size_t *offset);

/* Orders the launches (sched_run.c): finds, for every launch, the launches
 * on other streams it must wait for (it reads memory they wrote, or writes
 * memory they used), keeps only the waits that earlier waits do not imply,
 * and creates the events. */
opsched_status os_sx_build_program(opsched_sched_executor *ex);

/* Captures `repeat` inferences back to back as the executor's device
 * graph (a replay then runs them all). */
opsched_status os_sx_capture(opsched_sched_executor *ex, int repeat);

#endif /* OS_SCHED_EXEC_IMPL_H */
