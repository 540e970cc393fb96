/*
 * opsched/store.h - the measurement database (SQLite).
 *
 * One file holds devices (with their environment), operator configurations
 * under a canonical signature, runs (what was asked, shard, start and end,
 * tool version), measurements (every statistic, energy, algorithm, math
 * mode, layout, cache state and status) and network runs (whole networks
 * profiled end to end).  Each measurement is committed as
 * soon as it is added, so a killed sweep loses at most the configuration in
 * flight.  WAL mode and a busy timeout let several processes write one file.
 * The schema version lives in PRAGMA user_version; a file from a newer
 * opsched is refused with OPSCHED_ERR_VERSION.
 */
#ifndef OPSCHED_STORE_H
#define OPSCHED_STORE_H

#include <stdio.h>

#include "opsched/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opsched_store opsched_store;

/* Opens (creating if needed) a database file.  The context must outlive
 * the store. */
opsched_status opsched_store_open(opsched_ctx *ctx, const char *path, opsched_store **out);
void opsched_store_close(opsched_store *s);
/* The schema version this build writes. */
int opsched_store_schema_version(void);

typedef struct opsched_run_info {
    const char *command;       /* the command line, for provenance */
    const char *spec;          /* the sweep spec text, or NULL */
    int shard_index;           /* 0-based; 0 of 1 when not sharded */
    int shard_count;
} opsched_run_info;

opsched_status opsched_store_begin_run(opsched_store *s, const opsched_run_info *info,
                                       int64_t *run_id);
/* status: "done", "interrupted", "failed". */
opsched_status opsched_store_end_run(opsched_store *s, int64_t run_id, const char *status);

/* Finds or adds a device by (backend, uuid); the environment is updated. */
opsched_status opsched_store_device(opsched_store *s, const opsched_device_info *info,
                                    int64_t *device_id);

/* The user-facing description of a configuration; -1 where a field does
 * not apply.  For convolutions these fill the classic sweep columns. */
typedef struct opsched_config_record {
    char signature[512];
    char op[32];               /* "conv2d", "linear", "maxpool", ... */
    int64_t batch, in_channels, out_channels, kernel, stride, padding, groups;
    int64_t height, width;     /* input spatial size */
    int64_t flops, bytes;
    char dtype[8];
} opsched_config_record;

/* Describes node `node` of g. */
opsched_status opsched_config_record_from_node(const opsched_graph *g, int node,
                                               opsched_config_record *out);

/* Finds or adds a configuration by signature. */
opsched_status opsched_store_config(opsched_store *s, const opsched_config_record *rec,
                                    int64_t *config_id);

/* The settings that make two measurements of one configuration comparable:
 * algorithm policy, math, layout, cache state, energy on/off. */
void opsched_settings_key(const opsched_measure_options *o, char *buf, size_t size);

/* Whether a measurement of this configuration with these settings on this
 * device is already stored (any status but "error"). */
opsched_status opsched_store_has(opsched_store *s, int64_t device_id, int64_t config_id,
                                 const char *settings_key, int *found);

/* Adds one measurement and commits it. */
opsched_status opsched_store_add(opsched_store *s, int64_t run_id, int64_t device_id,
                                 int64_t config_id, const char *settings_key,
                                 const char *algo_policy, const opsched_measurement *m,
                                 int64_t *measurement_id);

typedef struct opsched_merge_stats {
    int64_t runs, devices, configs;
    int64_t measurements_added, measurements_skipped; /* skipped: already present */
    int64_t network_runs_added;
} opsched_merge_stats;

/* Copies everything from the database at src_path into s, deduplicated
 * (a measurement is the same when its run, device, configuration, settings
 * and time are); runs keep their identity, so provenance survives. */
opsched_status opsched_store_merge(opsched_store *s, const char *src_path,
                                   opsched_merge_stats *stats);

/* Writes measurements as CSV.  op_filter ("conv2d", NULL for all).  For
 * convolutions the first columns are the classic sweep layout: Batch size,
 * In Channels, Out Channels, Kernel Size, Stride, Width, Height, Flops,
 * Latency, Latency Type; then algorithm, statistics and energy. */
opsched_status opsched_store_export_csv(opsched_store *s, FILE *f, const char *op_filter);

typedef struct opsched_store_summary {
    int64_t devices, runs, configs, measurements;
    int64_t ok, unsupported, oom, errors;
} opsched_store_summary;
opsched_status opsched_store_summary_get(opsched_store *s, opsched_store_summary *out);

/* ---- whole networks (opsched profile) --------------------------------- */

/* One profiled network under one setting and one mode.  Texts are
 * borrowed for the call.  NaN marks a value that was not measured; the
 * statistics are stored as NULL when stats.n is 0. */
typedef struct opsched_network_record {
    const char *model;         /* zoo name or ONNX file stem */
    int64_t batch, height, width;
    const char *algo_policy;   /* "heuristic", "find" or an algorithm; NULL: heuristic */
    const char *algo_fallback; /* policy for layers the algorithm cannot run; NULL: none */
    opsched_math math;
    opsched_layout layout;
    const char *mode;          /* "free", "graph" (replayed CUDA graph) or "layered" */
    opsched_stats stats;       /* per inference, ms */
    double enqueue_ms;         /* host time to enqueue one inference */
    opsched_energy energy;     /* per inference */
    int64_t peak_memory_bytes; /* -1: unknown */
    double layer_sum_ms, attribution_latency;
    double layer_energy_j, attribution_energy;
    double check_rel_l2;
    int check_passed;          /* -1: not checked */
} opsched_network_record;

/* Adds one row to network_runs and commits it. */
opsched_status opsched_store_add_network(opsched_store *s, int64_t run_id, int64_t device_id,
                                         const opsched_network_record *rec, int64_t *id);

/* Whether this device already has a profile of (model, batch, height,
 * width, algo_policy, math, layout) in any mode: what a resumed profile
 * skips. */
opsched_status opsched_store_has_network(opsched_store *s, int64_t device_id,
                                         const opsched_network_record *key, int *found);

/* What network_runs holds, one row per (device, model, batch, settings). */
typedef struct opsched_network_summary {
    const char *device;        /* backend:name */
    const char *model;
    int64_t batch;
    const char *algo_policy;
    const char *math, *layout;
    int64_t sizes;             /* distinct input sizes profiled */
    int64_t min_size, max_size;
    int64_t rows;              /* all modes */
} opsched_network_summary;

/* Calls fn once per summary row, ordered by model, batch and settings;
 * the row's texts are borrowed for the call. */
typedef void (*opsched_network_summary_fn)(const opsched_network_summary *row, void *user);
opsched_status opsched_store_network_summaries(opsched_store *s, opsched_network_summary_fn fn,
                                               void *user);

/* Measurements counted by device, operator and status. */
typedef struct opsched_measurement_count {
    const char *device;        /* backend:name */
    const char *op;            /* "conv2d", ... */
    const char *status;        /* ok, unsupported, oom, error */
    int64_t configs;           /* distinct configurations */
    int64_t measurements;
} opsched_measurement_count;
typedef void (*opsched_measurement_count_fn)(const opsched_measurement_count *row, void *user);
/* Calls fn once per (device, op, status); texts borrowed for the call. */
opsched_status opsched_store_measurement_counts(opsched_store *s, opsched_measurement_count_fn fn,
                                                void *user);

/* One run: what was asked and how it ended.  A run still "running" whose
 * process is gone was killed (kill -9, a lost node); re-running the same
 * command resumes it. */
typedef struct opsched_run_summary {
    int64_t id;
    const char *uuid, *command, *user, *host, *status;
    int shard_index, shard_count;
    double started_at, ended_at;   /* unix seconds; ended_at 0 while running */
    int64_t measurements, network_rows;
} opsched_run_summary;
typedef void (*opsched_run_summary_fn)(const opsched_run_summary *row, void *user);
/* Calls fn once per run, oldest first; texts borrowed for the call. */
opsched_status opsched_store_runs(opsched_store *s, opsched_run_summary_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_STORE_H */
