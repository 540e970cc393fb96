/*
 * opsched/profile.h - profiling a whole network on a device: end-to-end
 * latency (free-running and as a replayed CUDA graph), per-layer latency,
 * energy per inference, numerics against the CPU backend, and attribution
 * (how much of the end-to-end time and energy the layers measured one by
 * one account for).
 */
#ifndef OPSCHED_PROFILE_H
#define OPSCHED_PROFILE_H

#include "opsched/exec.h"
#include "opsched/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opsched_profile_options {
    /* how the executor runs the network: the sequential schedule, with
     * every Concat copying by default (exec.no_concat_elision 1), so that
     * each node is measured as the predictor composes it */
    opsched_exec_options exec;
    double warmup_ms;              /* default 200 */
    int iters;                     /* timed inferences, at least (default 50) */
    double min_ms;                 /* and at least this long (default 500) */
    int cuda_graph;                /* 1: also time replays of a captured graph (default 1) */
    int layers;                    /* 1: time every layer (event pairs), iters runs (default 1) */
    int energy;                    /* 1: energy per inference over a >= 1 s window */
    int layer_energy;              /* 1: energy of each distinct layer, own window */
    int isolated;                  /* 1: time each distinct layer alone with the operator
                                    * harness (CUDA-graph replays, no timestamps between
                                    * layers); their sum against the end to end is the
                                    * additivity check (implied by layer_energy) */
    double energy_window_ms;       /* default 1000, never below */
    double idle_ms;                /* default 300 */
    int check;                     /* 1: compare outputs with the CPU backend (default 1) */
    /* 1 (default): the host enqueue cost per layer, the host's time in
     * each layer's launch call(s) (opsched_executor_run_host_timed) read
     * in the free-running inferences that are timed, so that the layers
     * add up to those inferences' enqueueing.  Those inferences are then
     * enqueued one ahead of the one being read (not a round of 16), so
     * that a launch never waits for room in a full queue, which would count
     * as host time where the device bounds the run. */
    int host_layers;
} opsched_profile_options;

void opsched_profile_options_default(opsched_profile_options *o);

typedef struct opsched_layer_profile {
    int node;
    int timed;                     /* 0: runs nothing of its own (a view, a fused Relu,
                                    * a Concat its producers wrote in place) */
    opsched_stats stats;           /* layer-timed runs, ms; n = 0 when not timed */
    double median_ms, mean_ms;     /* from layer-timed runs; 0 for views */
    double run_ms;                 /* in the layer-timed run whose total is the median */
    double energy_j;               /* measured in the layer's own window; NaN if not */
    double isolated_ms;            /* median alone (operator harness); NaN if not */
    opsched_measurement isolated;  /* that measurement in full (status, stats, energy,
                                    * algorithm); status OPSCHED_ERR_UNSUPPORTED when the
                                    * layer was not measured alone */
    int fused_next;                /* 1: the layer runs the Relu after it too (fused) */
    opsched_energy energy;         /* that window (shared by layers of one signature) */
    char algo[48];                 /* what ran: an algorithm, "view", "fused", "fused into
                                    * <layer>", "gathered", "in place" */
    int fallback;                  /* 1: the asked algorithm could not run it */
    size_t workspace_bytes;
    /* Host time to enqueue the layer's launch(es) in a free run, ms: its
     * share of the median timed free-running inference (the layer's median
     * scaled so that the layers add up to free_host_ms); 0 for layers that
     * run nothing, NaN when not measured; host holds the inferences' raw
     * statistics (n = 0 when not). */
    double host_ms;
    opsched_stats host;
} opsched_layer_profile;

typedef struct opsched_profile_result {
    opsched_stats e2e;             /* free-running inference, ms */
    opsched_stats e2e_graph;       /* replayed CUDA graph, ms (n = 0 when not run) */
    opsched_stats e2e_layered;     /* layer-timed inference, whole run, ms */
    double enqueue_ms;             /* host time to enqueue one inference (median) */
    /* Per inference, over a window of back-to-back inferences: replays of
     * the captured graph when one was timed, free-running runs otherwise. */
    opsched_energy energy;
    int energy_from_graph;         /* 1: the window replayed the CUDA graph */
    size_t peak_memory_bytes;      /* arena + weights + workspaces */
    int n_fallbacks;               /* layers run with the fallback algorithm */
    int n_launches;                /* launches of one inference (the executor's plan) */
    int n_rowmajor;                /* 4-D tensors the layout per tensor kept row-major */
    int pdl;                       /* the graph's programmatic launches (opsched_exec_info):
                                    * 1 kept, 0 off, -1 not chosen */
    double pdl_ms[2];              /* its replays without [0] and with [1] them */
    int n_layers;
    opsched_layer_profile *layers; /* n_layers entries, owned by the result */
    double layer_sum_ms;           /* sum of per-layer medians */
    double attribution_latency;    /* layer_sum_ms / e2e.median */
    double attribution_graph;      /* layer_sum_ms / e2e_graph.median; NaN without a graph */
    /* 1: each layer-timed run was queued behind graph replays long enough
     * to cover its enqueueing, so the device ran its layers back to back
     * and the per-layer times exclude host launch gaps; 0: a layer whose
     * launch reached the device late counts the wait in its time (when
     * enqueueing is slower than the device: e2e.median ~ enqueue_ms). */
    int layers_queued;
    double layer_energy_sum_j;     /* NaN unless every timed layer has an energy */
    double attribution_energy;     /* layer_energy_sum_j / energy.energy_j */
    double layer_isolated_sum_ms;  /* NaN unless isolated */
    double layer_host_sum_ms;      /* sum of the layers' host_ms; NaN when not measured */
    double free_host_ms;           /* host time per timed free-running inference
                                    * (median of the layers' totals); NaN when not read */
    /* 1: free_host_ms came to more than 1.6x enqueue_ms: launches waited for
     * room in the launch queue (the device bounds the run), so the layers'
     * host times are not kept (NaN). */
    int host_waited;
    double attribution_isolated;   /* layer_isolated_sum_ms / e2e_graph (else e2e) median */
    double check_rel_l2;           /* vs CPU backend; NaN when not checked, inf when an
                                    * output is not finite */
    int check_passed;
    double check_tolerance;
    /* Measured only when check_rel_l2 exceeds check_tolerance (NaN
     * otherwise): how far the reference's own outputs move when its inputs
     * change by 1e-6 relative (CHECK_JITTER).  Gradients through Relu
     * masks, argmaxes and the like are discontinuous, so a device's
     * rounding may move them that far too; the check passes when
     * check_rel_l2 is within 3 times this ("conditioned"). */
    double check_sensitivity;
    /* Why the check could not run, e.g. the CPU backend is not in this
     * build or cannot run an operator of g ("" when it ran or was not
     * asked for; check_rel_l2 is then NaN). */
    char check_note[256];
    /* Power samples of the energy window (n_power = 0 when none): ms from
     * the start of its busy part (negative: the idle window before it) and
     * watts.  Owned by the result. */
    int n_power;
    double *power_t_ms, *power_w;
} opsched_profile_result;

/* Profiles g on dev: the numerics check first (when asked), then warm-up,
 * free-running inferences (timed in rounds enqueued ahead, so the device
 * never waits for the host between samples), the host's enqueue time (of
 * the whole inference, and of each layer when host_layers),
 * replays of a captured graph, layer-timed runs, and the energy windows.
 * A backend without graphs leaves e2e_graph.n at 0; a device without a
 * power sensor leaves the energies invalid (NaN): neither is a failure.
 * An algorithm that a layer cannot run fails with OPSCHED_ERR_UNSUPPORTED
 * naming the layer, unless opts->exec.algo_fallback is set.  The check
 * runs g on the CPU backend and compares every graph output under the same
 * seed (weights from the graph's payloads, or random from the seed, are
 * the same on both executors); where the CPU backend is missing or cannot
 * run g, check_note says why and the profile goes on.
 * *out is owned by the caller (free with opsched_profile_result_free). */
opsched_status opsched_profile_graph(opsched_device *dev, const opsched_graph *g,
                                     const opsched_profile_options *opts,
                                     opsched_profile_result **out);
void opsched_profile_result_free(opsched_profile_result *r);

/* The tolerance of the numerics check for a math mode (relative L2):
 * fp32 1e-5, tf32 5e-3, fp16 2e-2, bf16 5e-2. */
double opsched_profile_tolerance(opsched_math m);

/* ---- timelines ---------------------------------------------------------- */

/* A Chrome trace-event file (JSON, opens in Perfetto and chrome://tracing)
 * built from profiles: per device a process, per stream a thread track
 * with one complete event per layer that ran, and a counter track of the
 * power samples.  Layer events come from one layer-timed run (the one
 * whose total is the median), laid end to end in node order: the gaps
 * between layers are not measured and not shown.  Each profile added goes
 * after the previous one on the time axis, under an event naming it. */
typedef struct opsched_trace opsched_trace;

opsched_status opsched_trace_create(opsched_ctx *ctx, opsched_trace **out);
void opsched_trace_free(opsched_trace *t);
/* Adds r (profiled from g on the device described by dev) under label
 * (e.g. "resnet50 b1 224").  Everything is copied. */
opsched_status opsched_trace_add_profile(opsched_trace *t, const opsched_device_info *dev,
                                         const opsched_graph *g,
                                         const opsched_profile_result *r, const char *label);
/* Adds one traced run of a schedule (opsched_executor_trace) under
 * label: a thread track per stream with one complete event per launch,
 * at the times the device recorded (so overlap between streams shows),
 * and the run's event on the profiles track.  Everything is copied. */
opsched_status opsched_trace_add_schedule(opsched_trace *t, const opsched_device_info *dev,
                                          const opsched_exec_span *spans, int n_spans,
                                          double total_ms, const char *label);
/* Writes the file (replacing it). */
opsched_status opsched_trace_write(const opsched_trace *t, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_PROFILE_H */
