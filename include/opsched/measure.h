/*
 * opsched/measure.h - measuring what one operator costs: latency
 * statistics and energy, on any backend.
 *
 * Method (what trtexec, nn-Meter and Zeus users expect): plan the node,
 * fill its inputs with random data, warm up by time and by count, then time
 * repetitions with device timestamps.  A sample is a batch of back-to-back
 * launches, enough to last sample_min_us, recorded once as a device graph
 * (CUDA graph) and replayed between two timestamps, then divided: the
 * device runs the launches as fast as it can, so operators of a few
 * microseconds are timed as the GPU runs them, not as fast as the host can
 * enqueue them.  Samples are enqueued in rounds and read afterwards, so the
 * device never idles between them.  In
 * `cold` cache state the inputs rotate through copies that together exceed
 * the last-level cache; `hot` reuses one set, as a network's producer feeds
 * its consumer.
 *
 * Energy: a window of at least energy_window_ms of back-to-back launches;
 * the device's cumulative energy counter is read after a device sync at both
 * ends and divided by the launch count; idle power is measured just before;
 * a sampling thread integrates power by the trapezoid rule as a cross-check,
 * and is the result where no counter exists.
 */
#ifndef OPSCHED_MEASURE_H
#define OPSCHED_MEASURE_H

#include "opsched/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum opsched_cache_state {
    OPSCHED_CACHE_HOT = 0,
    OPSCHED_CACHE_COLD
} opsched_cache_state;

const char *opsched_cache_name(opsched_cache_state c); /* "hot", "cold" */

typedef struct opsched_stats {
    int n;
    double min, max, mean, median, std;
    double p90, p95, p99;
    double trimmed_mean;       /* mean of the samples within 3 std of the mean */
    double cv;                 /* std / mean */
    /* A distribution-free 95% confidence interval of the median: the order
     * statistics of ranks n/2 -+ 0.98 sqrt(n) (the binomial's normal
     * approximation); min and max for fewer than 6 samples. */
    double median_lo, median_hi;
} opsched_stats;

/* Half the width of the median's confidence interval, relative to the
 * median (0 when the median is not positive). */
double opsched_stats_median_ci(const opsched_stats *s);

/* Statistics of n samples (n >= 1; the array is not modified). */
opsched_status opsched_stats_compute(const double *samples, int n, opsched_stats *out);

/* trtexec warns above this coefficient of variation. */
#define OPSCHED_CV_WARN 0.025

/* The warning every command gives about n results (n > 0) whose
 * coefficient of variation is above OPSCHED_CV_WARN, without a prefix or
 * line end: "3 result(s) have a coefficient of variation above 2.5%: the
 * device may be shared or throttling".  Returns buf. */
const char *opsched_unstable_message(int64_t n, char *buf, size_t size);

/* Sampling stops when the estimate is stable, not after a fixed time: once
 * `iters` samples and `min_ms` of them are in, after every round of
 * samples the median's confidence interval (opsched_stats.median_lo/hi) is
 * compared with ci_target, and the medians of the first and second half of
 * the samples with each other.  Sampling stops when the interval is within
 * +-ci_target of the median and the halves agree within 2 ci_target; when
 * the halves disagree (clocks still settling) the first half is dropped as
 * warm-up.  It stops anyway at max_ms of sampling or max_iters samples (the
 * result says it did not converge).  ci_target 0 gives a fixed budget:
 * exactly `iters` samples and `min_ms` of sampling, as before. */
typedef struct opsched_measure_options {
    double warmup_ms;          /* warm up at least this long (default 10) */
    int warmup_iters;          /* and at least this many launches (default 10) */
    int iters;                 /* timed samples, at least (default 20) */
    double min_ms;             /* and sample at least this long (default 5) */
    double ci_target;          /* stop at this relative half-width of the median's
                                * 95% interval (default 0.005; 0: fixed budget) */
    double max_ms;             /* sample at most this long when not stable (default
                                * 1000; never below min_ms) */
    int max_iters;             /* upper bound on samples (default 10000) */
    double sample_min_us;      /* batch launches until a sample lasts this long (default 200) */
    opsched_cache_state cache;
    int energy;                /* 1: also measure energy */
    double energy_window_ms;   /* default 1000, never below 1000 */
    double idle_ms;            /* idle-power window before (default 300) */
    double cooldown_ms;        /* sleep before each measurement (default 0) */
    opsched_plan_options plan;
    uint64_t seed;             /* input data seed (default 1) */
    int direct_launches;       /* 1: never replay captured device graphs (default 0) */
} opsched_measure_options;

/* The defaults above. */
void opsched_measure_options_default(opsched_measure_options *o);

typedef struct opsched_energy {
    int valid;
    char method[16];           /* "counter" or "power" (integrated samples) */
    long launches;             /* in the window */
    double window_ms;
    double energy_j;           /* per launch, total */
    double dynamic_energy_j;   /* per launch, idle power subtracted */
    double energy_power_j;     /* per launch, from the integrated power samples */
    double power_mean_w;
    double idle_power_w;
    double temperature_c;
    double sm_clock_mhz;
    double power_limit_w;
} opsched_energy;

typedef struct opsched_measurement {
    opsched_status status;     /* OK, UNSUPPORTED, DEVICE_OOM or the failure */
    char message[256];         /* why, when status is not OK */
    char algo[48];
    size_t workspace_bytes;
    opsched_math math;
    opsched_layout layout;
    opsched_cache_state cache;
    int launches_per_sample;
    int graph_replay;          /* 1: each sample replayed the launches as a CUDA graph */
    opsched_stats stats;       /* per launch, milliseconds */
    int unstable;              /* cv above OPSCHED_CV_WARN */
    int converged;             /* 1: sampling stopped on a stable estimate (ci_target) */
    opsched_energy energy;
    int fused_activation;      /* 1: the plan folded the Relu after the node into it */
} opsched_measurement;

/* Measures node `node` of g on dev.  Returns OPSCHED_OK whenever *out holds
 * a result, including "unsupported" and "out of device memory" results
 * (out->status says which); other statuses are failures of the harness or
 * the device, with the message on the context. */
opsched_status opsched_measure_node(opsched_device *dev, const opsched_graph *g, int node,
                                    const opsched_measure_options *opts,
                                    opsched_measurement *out);

/* ---- device calibration --------------------------------------------- */

/* What a device does at its best under one math mode, measured through
 * the backend API: the anchors of a roofline and the fixed costs that sit
 * between operators.  NaN marks what could not be measured. */
typedef struct opsched_calibration {
    char math[8];              /* "fp32", "tf32", "fp16", "bf16" */
    double peak_flops;         /* FLOP/s: the best of a few large GEMMs */
    double bandwidth;          /* bytes/s: a large element-wise Add, arrays far beyond the cache */
    double launch_us;          /* host time to enqueue one small launch (median, eager) */
    double graph_node_us;      /* device time per node of a replayed graph of tiny launches,
                                  minus their work; on backends without device graphs, the
                                  per-launch overhead of back-to-back tiny launches */
    double idle_power_w;       /* NaN without a power sensor */
    double created_at;         /* Unix seconds */
} opsched_calibration;

/* Measures dev under math mode `math` (sizes fit the device: 8192^3
 * GEMMs on a GPU, smaller on a CPU).  OPSCHED_ERR_UNSUPPORTED when the
 * device cannot run that math mode at all. */
opsched_status opsched_device_calibrate(opsched_device *dev, opsched_math math,
                                        opsched_calibration *out);

/* ---- operator configurations ---------------------------------------- */

/* A named parameter of an operator configuration, as a user writes it:
 * {"in_channels", 64}. */
typedef struct opsched_param {
    const char *name;
    int64_t value;
} opsched_param;

/* Operators that can be configured by parameters, e.g. "conv2d", "linear",
 * "matmul", "maxpool", "avgpool", "relu", "add", "concat", "batchnorm",
 * "softmax", "layernorm"... (static list). */
int opsched_opconfig_count(void);
const char *opsched_opconfig_name(int i);
/* The parameter names an operator takes, with their defaults (static). */
opsched_status opsched_opconfig_params(const char *op, const opsched_param **params, int *n);

/* Builds a one-node graph for an operator configuration.  Unknown
 * operators or parameters give OPSCHED_ERR_INVALID_ARG; impossible
 * combinations OPSCHED_ERR_SHAPE.  The node is node 0. */
opsched_status opsched_opconfig_build(opsched_ctx *ctx, const char *op, const opsched_param *params,
                                      int n_params, opsched_dtype dtype, opsched_graph **out);

/* Copies node `node` of g, with its inputs (activations become INPUT
 * tensors, weights stay weights), into a new one-node graph. */
opsched_status opsched_graph_extract_node(const opsched_graph *g, int node, opsched_graph **out);

/* A canonical text that identifies a node's configuration: operator,
 * attributes, input shapes and dtype, but no names.  Two nodes with the
 * same signature cost the same to run. */
opsched_status opsched_node_signature(const opsched_graph *g, int node, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_MEASURE_H */
