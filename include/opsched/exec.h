/*
 * opsched/exec.h - running a whole graph on a device.
 *
 * An executor is a graph made ready to run: every compute node planned
 * (descriptors, algorithm, workspace), one arena of device memory for the
 * activations laid out once from tensor lifetimes (buffers reused, the peak
 * reported), weights uploaded (from the graph's payloads when present,
 * random from a seed otherwise), views (Reshape, Flatten, Identity,
 * Dropout) aliased to their input without a copy where the layout allows.
 *
 * It runs in three ways: free (all nodes enqueued back to back), layer-timed
 * (a pair of device timestamps around each node), and as a captured CUDA
 * graph replayed with one launch (backends without graphs answer
 * OPSCHED_ERR_UNSUPPORTED).  Inputs and outputs cross as f32 host arrays
 * whatever the math mode.
 *
 * Ownership: the executor borrows the device (which must outlive it) and
 * copies what it needs from the graph; the graph may be freed after create.
 */
#ifndef OPSCHED_EXEC_H
#define OPSCHED_EXEC_H

#include "opsched/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opsched_executor opsched_executor;

typedef struct opsched_exec_options {
    opsched_plan_options plan;     /* math, layout, convolution algorithm policy */
    /* When plan.algo names an algorithm a layer cannot run: NULL fails with
     * the layer and the reason; "heuristic" runs that layer with the
     * library's choice and records that it did. */
    const char *algo_fallback;
    uint64_t seed;                 /* random weights and inputs (default 1 when 0) */
} opsched_exec_options;

/* Plans every node and lays out memory.  OPSCHED_ERR_UNSUPPORTED names the
 * first layer the backend cannot run and why; OPSCHED_ERR_DEVICE_OOM when
 * the arena, weights or a workspace do not fit. */
opsched_status opsched_executor_create(opsched_device *dev, const opsched_graph *g,
                                       const opsched_exec_options *opts,
                                       opsched_executor **out);
void opsched_executor_free(opsched_executor *ex);

typedef struct opsched_layer_info {
    int node;                      /* index in the graph */
    char algo[48];                 /* what the backend runs ("view" for aliases) */
    int fallback;                  /* 1: the asked algorithm could not run it */
    char fallback_reason[160];
    size_t workspace_bytes;
} opsched_layer_info;

typedef struct opsched_exec_info {
    int n_layers;                  /* = nodes of the graph */
    size_t arena_bytes;            /* activations, after reuse: the planned peak */
    size_t weight_bytes;
    size_t workspace_bytes;        /* all plans together */
    int n_fallbacks;
} opsched_exec_info;

opsched_status opsched_executor_info(const opsched_executor *ex, opsched_exec_info *out);
/* Borrowed; valid while the executor lives.  NULL when out of range. */
const opsched_layer_info *opsched_executor_layer(const opsched_executor *ex, int node);

/* Fills every graph input with random values from seed (f32 in [-1, 1)). */
opsched_status opsched_executor_randomize_inputs(opsched_executor *ex, uint64_t seed);
/* Sets graph input i (in opsched_graph_input order) from n f32 values. */
opsched_status opsched_executor_set_input(opsched_executor *ex, int i, const float *data,
                                          size_t n);
/* Reads graph output i (opsched_graph_output order) as f32 after a run. */
opsched_status opsched_executor_get_output(opsched_executor *ex, int i, float *data, size_t n);
/* Element count of graph output i (0 when out of range). */
size_t opsched_executor_output_numel(const opsched_executor *ex, int i);

/* Enqueues one inference on stream s (NULL: the device's stream); does not wait. */
opsched_status opsched_executor_run(opsched_executor *ex, opsched_stream *s);

/* One inference with a timestamp pair around every node; waits, then
 * writes each node's milliseconds to layer_ms[node] (0 for views) and the
 * whole run's to *total_ms (NULL allowed). */
opsched_status opsched_executor_run_layers(opsched_executor *ex, double *layer_ms,
                                           double *total_ms);

/* Captures one inference as a device graph (CUDA graph) for replay.
 * OPSCHED_ERR_UNSUPPORTED on backends without graphs. */
opsched_status opsched_executor_capture(opsched_executor *ex);
/* Enqueues one replay of the captured graph on the device's stream. */
opsched_status opsched_executor_replay(opsched_executor *ex);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_EXEC_H */
