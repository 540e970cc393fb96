/*
 * opsched/exec.h - running a whole graph on a device: the executor.
 *
 * One engine runs every schedule, so that schedules compare fairly and
 * every data type, operator and layout is written once.  An executor is a
 * graph made ready to run as an opsched_schedule (sched.h) says; without a
 * schedule it runs the sequential one (opsched_schedule_search with
 * OPSCHED_SEARCH_SEQUENTIAL: one group per stage, the nodes in graph
 * order, a convolution with the activation that is its only reader), all
 * on the
 * device's stream.
 *
 * Making it ready: every node planned (descriptors, algorithm, workspace),
 * weights uploaded (from the graph's payloads when present, random from a
 * seed otherwise), one arena of device memory for the activations laid
 * out once from lifetimes (buffers reused, the peak reported), views
 * (Reshape, Flatten, Identity, Dropout) aliased to their input without a
 * copy where the layout allows, the activation that is a convolution's
 * only reader (opsched_conv_epilogue: Relu, Clip, SiLU, GELU...) fused into
 * it (plan.fuse_activation).
 *
 * Streams: one per group index (the device's stream and as many more as
 * the widest stage has groups), each group's nodes in order on its stream.
 * Streams are ordered by events only where a node reads memory another
 * stream wrote (or writes memory another stream used before), never by
 * the host: stages are not barriers, and the device may start a node as
 * soon as what it reads is ready.  A run forks from the device's stream
 * and joins back into it, so timers and replays on that stream bracket a
 * whole inference, and the whole run can be captured as one device graph.
 * A schedule on one stream (the sequential one) runs with no event, wait
 * or sync between its launches: a free run is its launches back to back.
 *
 * Memory: one arena laid out from lifetimes.  On one stream a lifetime is
 * counted in launches (from the tensor's first writer to its last reader,
 * in enqueue order), on several in stages (every tensor a stage touches
 * is alive for the whole stage, so concurrent nodes never share memory);
 * graph inputs have a region of their own, graph outputs live to the end.
 * Where memory is reused across streams, the writer of the new tensor is
 * ordered after every reader of the old one.  Concat elision: when the
 * parts of a Concat are contiguous slices of its output (channel axis at
 * batch 1 in NCHW: every dim outside the axis in memory order is 1), their
 * producers write straight into the slices and the Concat runs nothing
 * (unless no_concat_elision; the profiler's default turns it off).
 * A MERGE stage runs one convolution with the members' kernels
 * zero-padded and stacked along the output channels (their biases
 * stacked, their activation, the same for all, fused or run once); the
 * members' outputs are its
 * channel slices where contiguous, and a Split copies them out otherwise.
 *
 * Modes of running (each an inference, forked from and joined into the
 * device's stream): free (opsched_executor_run), host-timed (the host's
 * time in each node's launch calls), layer-timed (device timestamps around
 * each node's launches, on its stream), traced (a timestamp pair around
 * every launch), timed back to back (opsched_executor_time), and captured
 * as one device graph then replayed with one launch (backends without
 * graphs answer OPSCHED_ERR_UNSUPPORTED).  Inputs and outputs cross as
 * f32 host arrays whatever the math mode.
 *
 * Weights and inputs are drawn from the seed per tensor, whatever the
 * schedule, device, math mode or layout, so executors of one graph and
 * seed compare output for output (opsched_executor_compare).  A schedule's
 * batch and input size are informational: a schedule searched at one
 * batch size runs on the graph at another, as long as the nodes are the
 * same (opsched_schedule_validate).
 *
 * Ownership: the executor borrows the device (which must outlive it) and
 * copies what it needs from the graph and the schedule; both may be freed
 * after create.
 */
#ifndef OPSCHED_EXEC_H
#define OPSCHED_EXEC_H

#include "opsched/backend.h"
#include "opsched/measure.h"
#include "opsched/sched.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opsched_executor opsched_executor;

typedef struct opsched_exec_options {
    opsched_plan_options plan;     /* math, layout, convolution algorithm policy, fusion */
    /* When plan.algo names an algorithm a layer cannot run: NULL fails with
     * the layer and the reason; "heuristic" runs that layer with the
     * library's choice and records that it did. */
    const char *algo_fallback;
    uint64_t seed;                 /* random weights and inputs (default 1 when 0) */
    int no_concat_elision;         /* 1: every Concat copies */
    /* Nodes of stages with more than one group share the device while
     * they run: an algorithm policy for them (NULL: plan.algo), and a
     * workspace limit per node (0: plan.workspace_limit).  "find" times
     * candidates alone, on an idle device, where the widest grid wins;
     * under concurrency the library's heuristic choice (or a smaller
     * workspace) is often the better one. */
    const char *concurrent_algo;
    size_t concurrent_workspace_limit;
    /* 1: for timing only: weights and inputs (those the graph gives no
     * values) filled with uniform values on the device, not drawn on the
     * host and uploaded; outputs are then not comparable with another
     * executor's.  The stage measurer builds its executors so. */
    int timing_only;
    /* Under NHWC, the 4-D tensors kept row-major: NULL computes them from
     * the graph (opsched_layout_rowmajor); else one byte per tensor of the
     * graph.  A stage's copy carries its network's, so that a tensor
     * row-major in the network (ConvNeXt's [N, H, W, C] after its
     * Transpose) is not taken for an image where the copy starts. */
    const unsigned char *rowmajor;
} opsched_exec_options;

/* Plans everything and lays out memory for g run as s (NULL: the
 * sequential schedule).  OPSCHED_ERR_UNSUPPORTED names the first layer the
 * backend cannot run and why; OPSCHED_ERR_DEVICE_OOM when the arena,
 * weights or a workspace do not fit; the reason of opsched_schedule_validate
 * for a schedule that does not fit g. */
opsched_status opsched_executor_create(opsched_device *dev, const opsched_graph *g,
                                       const opsched_schedule *s,
                                       const opsched_exec_options *opts, opsched_executor **out);
void opsched_executor_free(opsched_executor *ex);

/* What happens to one graph node. */
typedef enum opsched_node_role {
    OPSCHED_ROLE_LAUNCH = 0,       /* planned and launched on its stream */
    OPSCHED_ROLE_VIEW,             /* aliases its input: runs nothing */
    OPSCHED_ROLE_VIEW_COPY,        /* a view that must copy, on its producer's stream */
    OPSCHED_ROLE_FUSED,            /* an activation run inside the convolution before it */
    OPSCHED_ROLE_CONCAT_ELIDED,    /* its inputs were written into its slices */
    OPSCHED_ROLE_MERGED            /* a member (or member's activation) of a merged conv */
} opsched_node_role;

typedef struct opsched_layer_info {
    int node;                      /* index in the graph */
    opsched_node_role role;
    int stage;                     /* 0-based; -1 for views */
    int stream;                    /* its group's stream (where its work, if any, runs);
                                    * -1 for views that alias */
    /* what the backend runs: an algorithm, "view" for aliases, "fused",
     * "merged" or "in place" */
    char algo[48];
    int fallback;                  /* 1: the asked algorithm could not run it */
    char fallback_reason[160];
    size_t workspace_bytes;
} opsched_layer_info;

typedef struct opsched_exec_info {
    int n_layers;                  /* = nodes of the graph */
    int n_stages;
    int n_streams;
    int n_launches;                /* plans launched per inference */
    int n_waits;                   /* cross-stream event waits per inference, fork and join
                                    * not counted */
    int n_concats_elided;
    int n_gates_folded;            /* multiplies by a per-sample channel scale run by the
                                    * 1x1 product that reads their map
                                    * (opsched_conv_gate_find) */
    int n_rowmajor;                /* 4-D tensors kept row-major under NHWC
                                    * (opsched_layout_rowmajor) */
    int n_merges;                  /* MERGE stages */
    int n_merge_splits;            /* of them, with a Split copying members' outputs out */
    size_t arena_bytes;            /* activations, after reuse: the planned peak */
    size_t weight_bytes;           /* the weights launches read, the merged convolutions' too */
    size_t workspace_bytes;        /* all plans together */
    int n_fallbacks;
    /* Programmatic launches (own kernels on sm_90 on, unless --ablate
     * pdl): at capture the graph is captured and timed both ways and the
     * faster kept for it and every run after.  pdl 1 with them, 0
     * plainly, -1 not chosen (no capture yet, or nothing to choose);
     * pdl_ms[1] and pdl_ms[0] the two graphs' replays (ms, the best of
     * three rounds). */
    int pdl;
    double pdl_ms[2];
} opsched_exec_info;

opsched_status opsched_executor_info(const opsched_executor *ex, opsched_exec_info *out);
/* Borrowed; valid while the executor lives.  NULL when out of range. */
const opsched_layer_info *opsched_executor_layer(const opsched_executor *ex, int node);

/* Fills every graph input with random values from seed (f32 in [-1, 1)). */
opsched_status opsched_executor_randomize_inputs(opsched_executor *ex, uint64_t seed);
/* The same values, each float one then multiplied by (1 + rel * u), u drawn
 * uniformly from [-1, 1] per element from seed: how far outputs move under
 * a change of the inputs of the order of rounding (the numerics check's
 * measure of a graph's conditioning).  Integer and bool inputs unchanged. */
opsched_status opsched_executor_randomize_inputs_jittered(opsched_executor *ex, uint64_t seed,
                                                          double rel);
/* Sets graph input i (in opsched_graph_input order) from n f32 values. */
opsched_status opsched_executor_set_input(opsched_executor *ex, int i, const float *data,
                                          size_t n);
/* Reads graph output i (opsched_graph_output order) as f32 after a run. */
opsched_status opsched_executor_get_output(opsched_executor *ex, int i, float *data, size_t n);
/* Element count of graph output i (0 when out of range). */
size_t opsched_executor_output_numel(const opsched_executor *ex, int i);
/* The same with the host data of type dt (n elements, C order whatever the
 * layout): converted to and from the tensor's storage type (floats in the
 * math mode's type; integers and bool as themselves).  Same-type integer
 * data crosses exactly; a conversion goes through double (exact for every
 * int32 and for int64 up to 2^53), saturating into an integer type's range. */
opsched_status opsched_executor_set_input_data(opsched_executor *ex, int i, opsched_dtype dt,
                                               const void *data, size_t n);
opsched_status opsched_executor_get_output_data(opsched_executor *ex, int i, opsched_dtype dt,
                                                void *data, size_t n);

/* Enqueues one inference (forked from and joined into the device's
 * stream); does not wait. */
opsched_status opsched_executor_run(opsched_executor *ex);

/* Enqueues one inference like opsched_executor_run (no device syncs, no
 * timestamps) and writes the host's time spent in each node's launch
 * call(s) to layer_host_ms[node] (one entry per graph node), in ms:
 * CLOCK_MONOTONIC read once before the run and after each launch (with
 * the event calls around it), so the nodes add up to the whole run (the
 * fork counts towards the first launch, the join towards the last; a
 * merged convolution's launches towards its first member); 0 for nodes
 * that launch nothing: views, fused activations, elided Concats.  On a device
 * whose queue is full a launch blocks, and the wait counts: sync before
 * the run to measure the enqueue cost alone.  On the CPU backend a launch
 * computes, so the time is the layer's. */
opsched_status opsched_executor_run_host_timed(opsched_executor *ex, double *layer_host_ms);

/* One inference with device timestamps around every node's launches, on
 * the node's stream; waits, then writes each node's milliseconds to
 * layer_ms[node] (0 for nodes that launch nothing; NULL allowed) and the
 * whole run's to *total_ms (NULL allowed).  A launch enqueued right
 * before one on the same stream that waits for nothing ends at that one's
 * start mark (one mark per boundary), others at a mark of their own after
 * them: on one stream (the sequential schedule) the layers add up to the
 * layer-timed run.  A merged convolution's launches count towards its
 * first member.  Nothing is synced before the run (work queued ahead
 * keeps the device busy). */
opsched_status opsched_executor_run_layers(opsched_executor *ex, double *layer_ms,
                                           double *total_ms);

/* One launch of a traced run: a pair of device timestamps around it on
 * its stream, times from the start of the run (stream 0's mark). */
typedef struct opsched_exec_span {
    int node;                      /* the graph node; for a merged conv its first member */
    int stage, stream;
    char label[96];                /* the node's name, or "merge(a+b+...)" */
    double start_ms, dur_ms;
} opsched_exec_span;

/* Waits for the device, runs one inference with a timestamp pair around
 * every launch and waits; *spans (n_launches entries, malloc'd: free()) in
 * enqueue order and the whole run's ms.  The marks cost the device a
 * little: the spans show where work ran and overlapped, the timed runs
 * give the latency. */
opsched_status opsched_executor_trace(opsched_executor *ex, opsched_exec_span **spans,
                                      int *n_spans, double *total_ms);

/* Captures one inference, every stream, as one device graph (replacing
 * an earlier capture).  Where the plans launch programmatically, captures
 * and times the graph with and without (a few replays of each) and keeps
 * the faster (opsched_exec_info.pdl).  OPSCHED_ERR_UNSUPPORTED on backends
 * without graphs. */
opsched_status opsched_executor_capture(opsched_executor *ex);
/* Enqueues one replay of the captured graph on the device's stream. */
opsched_status opsched_executor_replay(opsched_executor *ex);

typedef struct opsched_run_timing_options {
    double warmup_ms;              /* default 100 */
    int iters;                     /* samples, at least (default 50) */
    double min_ms;                 /* and at least this long in all (default 200) */
} opsched_run_timing_options;

typedef struct opsched_run_timing {
    opsched_stats stats;           /* ms per inference */
    double p10;                    /* 10th percentile, ms */
} opsched_run_timing;

/* Times inferences back to back, each between its own pair of timestamps
 * on the device's stream (rounds of samples enqueued ahead of the round
 * being read, so the device never waits for the host): free-running runs,
 * or replays of the captured graph when use_graph (capture first).
 * opts NULL: the defaults. */
opsched_status opsched_executor_time(opsched_executor *ex, int use_graph,
                                     const opsched_run_timing_options *opts,
                                     opsched_run_timing *out);

/* Several executors (of one device) timed in turns, out[i] for ex[i]:
 * rounds in which each executor gets two untimed runs and 16 timed ones,
 * until each has opts->iters samples and opts->min_ms in all (warm-up
 * opts->warmup_ms, in turns too).  Schedules compared this way see the
 * same device clocks; timed one after the other for seconds each, the
 * first looked a few percent faster than it was.  use_graph: replays
 * (capture each first). */
opsched_status opsched_executors_time(opsched_executor *const *ex, int n, int use_graph,
                                      const opsched_run_timing_options *opts,
                                      opsched_run_timing *out);

/* Relative L2 error of ex's outputs against ref's (both already run on
 * the same inputs; they may be on different devices): sqrt(sum (a - b)^2 /
 * sum b^2) over the finite values of all outputs; a NaN or infinity
 * where the other has the same one agrees (and is left out of the sums),
 * anything else that is not finite makes it inf.  The graphs must have
 * the same outputs. */
opsched_status opsched_executor_compare(opsched_executor *ex, opsched_executor *ref,
                                        double *rel_l2);

/* ---- measured stage costs ---------------------------------------------- */

/* A stage measured alone on a device, for the schedule searchers: the
 * stage's nodes are copied into a graph of their own (what they read from
 * outside the stage becomes its inputs, random), run by an executor
 * with the stage's groups on their streams (or the merged
 * convolution), warmed up, and timed as replays of a device graph that
 * holds enough back-to-back runs of the stage for a sample of
 * sample_min_us (free runs on backends without graphs); the cost is the
 * median per run.  Costs are kept by stage signature
 * (opsched_stage_signature: the nodes' signatures, batch included, and the
 * group structure), so a stage seen again costs nothing; math, layout and
 * algorithm are the measurer's.  A stage the device cannot run (an
 * algorithm or a merged convolution it does not support, memory) costs
 * +inf, so a search avoids it. */
typedef struct opsched_stage_measurer opsched_stage_measurer;

typedef struct opsched_stage_measure_options {
    opsched_exec_options exec;     /* timing_only is set whatever it says */
    opsched_run_timing_options timing; /* zeros: 1 ms warm-up, 10 samples, 2 ms */
    double sample_min_us;              /* 0: 100 */
    int no_graph;                      /* 1: time free runs even where graphs exist */
} opsched_stage_measure_options;

opsched_status opsched_stage_measurer_create(opsched_device *dev,
                                             const opsched_stage_measure_options *opts,
                                             opsched_stage_measurer **out);
void opsched_stage_measurer_free(opsched_stage_measurer *m);

/* An opsched_stage_cost_fn; user is an opsched_stage_measurer. */
opsched_status opsched_stage_cost_measured(void *user, const opsched_graph *g,
                                           const opsched_stage *stage, double *ms);

typedef struct opsched_stage_measurer_stats {
    int64_t measured;              /* stages built and timed */
    int64_t cached;                /* answered from an earlier measurement */
    int64_t unsupported;           /* of the measured, those that cost +inf */
    double seconds;                /* spent measuring, all of it */
    /* Where the seconds went (the rest: signatures, the cost table): */
    double build_seconds;          /* copying stages, creating executors (plans, memory,
                                    * weights) and freeing them */
    double capture_seconds;        /* capturing device graphs (and recapturing with repeats) */
    double timing_seconds;         /* the probe, warm-ups and timed samples */
    /* The device's plan cache (opsched_device_plan_cache_stats) while measuring. */
    int64_t plan_cache_hits, plan_cache_misses;
} opsched_stage_measurer_stats;

void opsched_stage_measurer_stats_get(const opsched_stage_measurer *m,
                                      opsched_stage_measurer_stats *out);

/* The single-op cost of every node of the graphs it will measure stages
 * of (node_ms[i] for node i, n entries; borrowed, must outlive the
 * measurer's use; NULL: none).  With them the repeat count of a stage's
 * sample comes from its longest group's single-op sum, so the stage is
 * captured and timed once instead of probed first. */
void opsched_stage_measurer_set_node_costs(opsched_stage_measurer *m, const double *node_ms,
                                           int n);

/* ---- end-to-end check of searched schedules ---------------------------- */

/* Runs each of the n candidate schedules of g whole (NULL entries are
 * skipped) and times it: replays of one device graph where the backend has
 * them, else free runs), all in turns (opsched_executors_time);
 * timing NULL: 50 ms warm-up, 32 samples and 100 ms each.
 * ms[i] gets candidate i's median (+inf when it cannot run here: an
 * algorithm, a merge or memory the device lacks), *best the fastest's
 * index.  Stage costs are measured stage by stage, so a searched schedule
 * can lose as a whole to one whose stages looked slower; the searchers'
 * callers keep the fastest of IOS, greedy and sequential this way.  Fails
 * when no candidate runs. */
opsched_status opsched_schedules_time_whole(opsched_device *dev, const opsched_graph *g,
                                            const opsched_schedule *const *cands, int n,
                                            const opsched_exec_options *opts,
                                            const opsched_run_timing_options *timing,
                                            double *ms, int *best);

/* Runs schedule s of g (NULL: the sequential one) whole in each of the n
 * layouts, with opts otherwise, timed in turns as
 * opsched_schedules_time_whole times schedules: ms[i] gets layout i's
 * median (+inf where the network cannot run in it), *best the fastest's
 * index; when only one layout runs it is chosen untimed (its ms NaN).
 * What "--layout auto" measures on a device that has both. */
opsched_status opsched_layouts_time_whole(opsched_device *dev, const opsched_graph *g,
                                          const opsched_schedule *s, const opsched_layout *layouts,
                                          int n, const opsched_exec_options *opts,
                                          const opsched_run_timing_options *timing, double *ms,
                                          int *best);

/* What opsched_schedule_keep_fastest timed: the searched schedule first,
 * then the greedy and the sequential one (those that are not it). */
typedef struct opsched_whole_check {
    int n;
    opsched_searcher searcher[3];
    double ms[3];  /* median whole; +inf: cannot run here */
    int kept;      /* the index now in *s (0: the searched one stayed) */
    double seconds;
} opsched_whole_check;

/* The check of a searched schedule *s (searched with so): the greedy and
 * sequential schedules are searched under the same options and costs
 * (answered from memory when the costs are cached), all are run whole
 * (opsched_schedules_time_whole, default timing), and *s becomes the
 * fastest (the others are freed).  out (may be NULL) says what was timed. */
opsched_status opsched_schedule_keep_fastest(opsched_device *dev, const opsched_graph *g,
                                             const opsched_search_options *so,
                                             const opsched_exec_options *opts,
                                             opsched_schedule **s, opsched_whole_check *out);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_EXEC_H */
