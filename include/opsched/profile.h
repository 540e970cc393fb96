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
    opsched_exec_options exec;
    double warmup_ms;              /* default 200 */
    int iters;                     /* timed inferences, at least (default 50) */
    double min_ms;                 /* and at least this long (default 500) */
    int cuda_graph;                /* 1: also time replays of a captured graph */
    int layers;                    /* 1: time every layer (event pairs), iters runs */
    int energy;                    /* 1: energy per inference over a >= 1 s window */
    int layer_energy;              /* 1: energy of each distinct layer, own window */
    double energy_window_ms;       /* default 1000, never below */
    double idle_ms;                /* default 300 */
    int check;                     /* 1: compare outputs with the CPU backend */
} opsched_profile_options;

void opsched_profile_options_default(opsched_profile_options *o);

typedef struct opsched_layer_profile {
    int node;
    double median_ms, mean_ms;     /* from layer-timed runs; 0 for views */
    double energy_j;               /* measured in the layer's own window; NaN if not */
    char algo[48];
    int fallback;
} opsched_layer_profile;

typedef struct opsched_profile_result {
    opsched_stats e2e;             /* free-running inference, ms */
    opsched_stats e2e_graph;       /* replayed CUDA graph, ms (n = 0 when not run) */
    opsched_stats e2e_layered;     /* layer-timed inference, whole run, ms */
    double enqueue_ms;             /* host time to enqueue one inference */
    opsched_energy energy;         /* per inference (free-running) */
    size_t peak_memory_bytes;      /* arena + weights + workspaces */
    int n_layers;
    opsched_layer_profile *layers; /* n_layers entries, owned by the result */
    double layer_sum_ms;           /* sum of per-layer medians */
    double attribution_latency;    /* layer_sum_ms / e2e.median */
    double layer_energy_sum_j;     /* NaN unless layer_energy */
    double attribution_energy;     /* layer_energy_sum_j / energy.energy_j */
    double check_rel_l2;           /* vs CPU backend; NaN when not checked */
    int check_passed;
    double check_tolerance;
} opsched_profile_result;

/* Profiles g on dev.  *out is owned by the caller (free with
 * opsched_profile_result_free). */
opsched_status opsched_profile_graph(opsched_device *dev, const opsched_graph *g,
                                     const opsched_profile_options *opts,
                                     opsched_profile_result **out);
void opsched_profile_result_free(opsched_profile_result *r);

/* The tolerance of the numerics check for a math mode (relative L2). */
double opsched_profile_tolerance(opsched_math m);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_PROFILE_H */
