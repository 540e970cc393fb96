/*
 * profile_impl.h - what the files of the network profiler share: the state
 * of one profile and its steps (timing.c, check.c, layer_energy.c), called
 * in order by opsched_profile_graph (profile.c).
 */
#ifndef OS_PROFILE_IMPL_H
#define OS_PROFILE_IMPL_H

#include "opsched/profile.h"

typedef struct os_profiler {
    opsched_device *dev;
    opsched_ctx *ctx; /* the device's */
    const opsched_graph *g;
    opsched_profile_options o; /* defaults applied */
    opsched_executor *ex;
    int graph_ready; /* a CUDA graph was captured */
    opsched_profile_result *r;
    /* Host times of the layers in the host-timed free-running inferences
     * (n_free_host rows of r->n_layers), owned. */
    double *free_host;
    size_t free_host_cap;
    int n_free_host;
} os_profiler;

/* Times inferences (replays when use_graph) with the executor's sampler
 * (os_ex_sample: each between its own pair of timestamps, rounds enqueued
 * one ahead of the round being read), until o.iters samples and o.min_ms
 * of them.  Free-running (not use_graph) with o.host_layers, the host's
 * time in each layer's launches is kept for each inference
 * (p->free_host), and inferences are enqueued one ahead (a full launch
 * queue would make launches wait).  Warm-ups are os_ex_warmup's. */
opsched_status os_profile_sample(os_profiler *p, int use_graph, opsched_stats *out);

/* Host time to enqueue one inference onto an idle device (median). */
opsched_status os_profile_enqueue(os_profiler *p, double *out_ms);

/* The host's time in every layer's launches in the host-timed
 * free-running inferences of os_profile_sample: per-layer medians and
 * statistics, their sum, and the median time per inference; the layers'
 * are left NaN (host_waited) when that median is far above enqueue_ms.
 * Needs enqueue_ms. */
opsched_status os_profile_host_layers(os_profiler *p);

/* o.iters layer-timed runs (at most OS_PROFILE_MAX_LAYERED): per-layer
 * statistics, the whole run's, and the representative run's layer times. */
#define OS_PROFILE_MAX_LAYERED 1000
opsched_status os_profile_layers(os_profiler *p);

/* Energy per inference over a window of back-to-back inferences (graph
 * replays when one was captured), with its power samples. */
opsched_status os_profile_energy(os_profiler *p);

/* Runs the graph once on the device and once on the CPU backend in strict
 * fp32 with the same seed, and compares every output (relative L2). */
opsched_status os_profile_check(os_profiler *p);

/* Energy of each distinct layer configuration (by signature) in its own
 * window, given to every layer of that configuration; the sum. */
/* Measures every distinct layer alone (latency; energy too when energy). */
opsched_status os_profile_layers_alone(os_profiler *p, int energy);

#endif /* OS_PROFILE_IMPL_H */
