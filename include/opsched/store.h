/*
 * opsched/store.h - the measurement database (SQLite).
 *
 * One file holds devices (with their environment), operator configurations
 * under a canonical signature, runs (what was asked, shard, start and end,
 * tool version), measurements (every statistic, energy, algorithm, math
 * mode, layout, cache state and status) and network runs (whole networks
 * profiled end to end).  Each measurement is committed as soon as it is
 * added, so a killed sweep loses at most the configuration in flight.  WAL
 * mode and a busy timeout let several processes write one file.
 *
 * A file is opsched's when its PRAGMA application_id is
 * OPSCHED_STORE_APPLICATION_ID (files of schema 1 to 4 written before the
 * id existed are recognised by their tables) and it holds no table opsched
 * does not make; any other file is refused by every open, before anything
 * is written to it.  The schema version lives in PRAGMA user_version; a
 * file from a newer opsched is refused with OPSCHED_ERR_VERSION.
 * docs/RELIABILITY.md says what the files promise.
 */
#ifndef OPSCHED_STORE_H
#define OPSCHED_STORE_H

#include <stdio.h>

#include "opsched/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opsched_store opsched_store;

/* PRAGMA application_id of an opsched database: "OPSC" in ASCII. */
#define OPSCHED_STORE_APPLICATION_ID 0x4f505343

/* How a database is opened. */
typedef enum opsched_store_mode {
    /* Reads only: never creates, initialises, upgrades or writes the file
     * (SQLITE_OPEN_READONLY, PRAGMA query_only).  Works on a read-only file
     * or directory.  A missing file is OPSCHED_ERR_NOT_FOUND; an empty one,
     * a foreign one or one of an older schema is refused.  Writes through
     * the store fail with OPSCHED_ERR_INVALID_ARG. */
    OPSCHED_STORE_READ_ONLY = 0,
    /* Reads and writes.  A missing file is created whole (built under a
     * temporary name, then linked in place, so no half-made database ever
     * has the name); a zero-length file or an SQLite file with no schema at
     * all is initialised in one transaction; an older schema is upgraded in
     * one transaction after a copy of the file is kept as PATH.bak-vN. */
    OPSCHED_STORE_READ_WRITE = 1
} opsched_store_mode;

/* Opens a database file.  Both modes wait up to 30 s for another
 * process's lock, then fail naming the file.  A refused file (not an
 * SQLite database, another application's, unknown tables, empty for
 * reading) gives OPSCHED_ERR_PARSE, a newer schema OPSCHED_ERR_VERSION, an
 * older schema opened for reading OPSCHED_ERR_UNSUPPORTED; the message
 * names the file and why.  The context must outlive the store. */
opsched_status opsched_store_open(opsched_ctx *ctx, const char *path, opsched_store_mode mode,
                                  opsched_store **out);
void opsched_store_close(opsched_store *s);
/* A batch: the writes between begin and commit are one transaction, so
 * they land together or not at all, and cost one commit rather than one
 * each.  A write that fails inside the batch is undone alone and the batch
 * stays open; rollback drops the whole batch (and does nothing when none
 * is open).  Other processes wait for the batch to end before writing. */
opsched_status opsched_store_batch_begin(opsched_store *s);
opsched_status opsched_store_batch_commit(opsched_store *s);
void opsched_store_batch_rollback(opsched_store *s);

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

/* Adds one measurement and commits it.  A full disk or an I/O error
 * gives OPSCHED_ERR_IO with the file and the space left on its file
 * system named; the measurement is not stored, everything committed
 * before is, and the file stays consistent. */
opsched_status opsched_store_add(opsched_store *s, int64_t run_id, int64_t device_id,
                                 int64_t config_id, const char *settings_key,
                                 const char *algo_policy, const opsched_measurement *m,
                                 int64_t *measurement_id);

typedef struct opsched_merge_stats {
    int64_t runs, devices, configs;
    int64_t measurements_added, measurements_skipped; /* skipped: already present */
    int64_t network_runs_added;
    int64_t calibrations;      /* added, or replaced by a newer one */
    int64_t stages;            /* measured schedule stages added or replaced */
    int64_t collectives;       /* measured collectives added or replaced */
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

/* ---- device calibrations (opsched devices --calibrate) ---------------- */

/* Stores a calibration of a device under its math mode (c->math); a newer
 * one replaces the one stored before. */
opsched_status opsched_store_calibration_put(opsched_store *s, int64_t device_id,
                                             const opsched_calibration *c);
/* The stored calibration of (device, math); *found is 0 (and *out
 * untouched) when there is none.  Values not measured come back NaN. */
opsched_status opsched_store_calibration_get(opsched_store *s, int64_t device_id, const char *math,
                                             opsched_calibration *out, int *found);

/* ---- measured schedule stages (opsched schedule --cost measure) --------- */

/* One stage of an inter-operator schedule measured as a whole.  The
 * signature is opsched_stage_signature's text; longest_ms and sum_ms are
 * the single-operator costs of its longest group and of all its groups
 * when the caller knew them (NaN otherwise; for a merge, the members'
 * costs scaled to the merged kernel): the contention model is fitted
 * from them. */
typedef struct opsched_stage_record {
    const char *signature;
    const char *kind;          /* "concurrent" or "merge" */
    int64_t batch;
    const char *math;          /* "tf32", ... */
    const char *layout;        /* "nchw" or "nhwc" */
    const char *algo_policy;   /* "heuristic", "find", ... */
    int n_groups, n_ops;
    double median_ms;
    double longest_ms, sum_ms;
    double created_at;         /* Unix seconds; 0 when putting: now */
} opsched_stage_record;

/* Stores a measured stage; a later one of the same (device, signature,
 * batch, math, layout, policy) replaces it. */
opsched_status opsched_store_stage_put(opsched_store *s, int64_t device_id,
                                       const opsched_stage_record *r);
/* Looks a stage up by key (r's signature, batch, math, layout and policy);
 * *found is 0 when absent, else *median_ms is set. */
opsched_status opsched_store_stage_get(opsched_store *s, int64_t device_id,
                                       const opsched_stage_record *key, double *median_ms,
                                       int *found);
/* Calls fn for every stored stage of a device under (math, layout,
 * policy); the record's strings are borrowed for the call. */
typedef void (*opsched_stage_record_fn)(const opsched_stage_record *r, void *user);
opsched_status opsched_store_stages(opsched_store *s, int64_t device_id, const char *math,
                                    const char *layout, const char *algo_policy,
                                    opsched_stage_record_fn fn, void *user);

/* ---- shipped data ------------------------------------------------------ */

/* Measurements that ship with opsched as SQL text, data/<name>/ (one file
 * per table: devices, runs, configs, measurements, network_runs,
 * calibrations; written by scripts/export-data.py), so that a prediction
 * for a device works without measuring it first.  The text is built into a
 * database in the cache directory on first use and rebuilt when the text
 * changes (its fingerprint, a hash of the files, is in the file's name).
 *
 * The data directory is $OPSCHED_DATA_DIR, else the source tree's data/
 * when it exists, else the installed share/opsched/data.  The cache
 * directory is $OPSCHED_CACHE_DIR, else $XDG_CACHE_HOME/opsched, else
 * ~/.cache/opsched, else a folder in the build tree. */

/* The data directory in use. */
opsched_status opsched_shipped_data_dir(opsched_ctx *ctx, char *buf, size_t size);
/* The names of the shipped data sets, comma-separated and sorted ("" when
 * there are none). */
opsched_status opsched_shipped_names(opsched_ctx *ctx, char *buf, size_t size);
/* Builds the database of data set `name` unless it is current; its path
 * into path.  OPSCHED_ERR_NOT_FOUND when there is no such data set (the
 * message lists those there are); a missing or malformed file gives
 * OPSCHED_ERR_IO or OPSCHED_ERR_PARSE with the file (and line) named. */
opsched_status opsched_shipped_database(opsched_ctx *ctx, const char *name, char *path,
                                        size_t size);
/* opsched_shipped_database, then opens it read-only. */
opsched_status opsched_store_open_shipped(opsched_ctx *ctx, const char *name,
                                          opsched_store **out);

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

/* Successful measurements counted by device and settings (math, layout,
 * algorithm policy): what a prediction can use, and how many of them are
 * unstable (coefficient of variation above OPSCHED_CV_WARN). */
typedef struct opsched_settings_count {
    int64_t device_id;
    const char *device;        /* backend:name */
    const char *math, *layout, *algo_policy;
    int64_t configs;           /* distinct configurations */
    int64_t measurements;
    int64_t unstable;
    const char *cache;         /* cache state: hot or cold */
} opsched_settings_count;
typedef void (*opsched_settings_count_fn)(const opsched_settings_count *row, void *user);
/* Calls fn once per (device, math, layout, policy, cache state) with
 * status ok, in device order; texts borrowed for the call. */
opsched_status opsched_store_settings_counts(opsched_store *s, opsched_settings_count_fn fn,
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

/* ---- datasets for prediction (src/store/dataset.c) ---------------------- */

/* A device as the database knows it. */
typedef struct opsched_device_row {
    int64_t id;
    char backend[16];
    char name[128];
    char uuid[80];
    int sm_count;              /* GPU SMs or CPU cores; 0 when unknown */
    int64_t memory_bytes, l2_bytes;
    int64_t measurements;      /* rows in measurements */
} opsched_device_row;

/* Finds a device by id ("3") or by a case-insensitive part of
 * "backend:name" or of its uuid ("h100", "cpu").  NULL or "" picks the
 * only device that has measurements.  OPSCHED_ERR_NOT_FOUND when nothing
 * matches, OPSCHED_ERR_INVALID_ARG naming the candidates when several do. */
opsched_status opsched_store_find_device(opsched_store *s, const char *name,
                                         opsched_device_row *out);

/* Which measurements a dataset holds.  NULL texts match anything.  Rows
 * layer-timed inside a network (settings key with ";mode=network") are
 * not harness measurements and are left out unless include_network; so
 * are a layer's host enqueue times (";mode=host": the host's ms to launch
 * it in a free run, not device time) unless include_host. */
typedef struct opsched_dataset_query {
    int64_t device_id;
    const char *math;          /* "tf32" ... */
    const char *layout;        /* "nchw", "nhwc" */
    const char *algo_policy;   /* "heuristic" ... */
    const char *cache;         /* "hot", "cold" */
    int include_network;       /* 1: also ";mode=network" rows */
    int include_failed;        /* 1: also unsupported, oom and error rows */
    int include_host;          /* 1: also ";mode=host" rows */
} opsched_dataset_query;

/* One measurement with its configuration.  The settings key's fields are
 * split out: fused_relu is 1 for ";fused=relu" (a convolution measured
 * with the Relu after it fused in: a kind of operator of its own),
 * network for ";mode=network", host for ";mode=host". */
typedef struct opsched_dataset_row {
    int64_t measurement_id, config_id, run_id;
    opsched_config_record config;
    char settings_key[256];
    char algo_policy[48], algo[48];
    char math[8], layout[8], cache[8], status[16];
    int fused_relu, network, host;
    double median_ms, cv;      /* NaN when not timed */
    int energy_valid;
    double energy_j;           /* per launch, total; NaN unless energy_valid */
    double power_mean_w;       /* NaN unless energy_valid */
    double created_at;
    /* A ";mode=host" row: the network profiled when it was measured (the
     * model of the first network_runs row of the same run and device
     * written at or after it: opsched profile stores a network's host rows
     * just before its network_runs rows); "" for other rows or when none. */
    char model[128];
} opsched_dataset_row;

/* Called per row (borrowed for the call); a status other than OK stops
 * the walk and is returned. */
typedef opsched_status (*opsched_dataset_fn)(const opsched_dataset_row *row, void *user);

/* Walks the measurements q selects, oldest first (created_at, id). */
opsched_status opsched_store_dataset(opsched_store *s, const opsched_dataset_query *q,
                                     opsched_dataset_fn fn, void *user);

/* What changes when measurements q selects are added or replaced: their
 * count, largest id and latest created_at (0 for none). */
typedef struct opsched_dataset_fingerprint {
    int64_t count, max_id;
    double max_created_at;
} opsched_dataset_fingerprint;
opsched_status opsched_store_dataset_fingerprint(opsched_store *s, const opsched_dataset_query *q,
                                                 opsched_dataset_fingerprint *out);

/* A network_runs row (opsched profile) as prediction reads it. */
typedef struct opsched_network_run_row {
    int64_t id, device_id;
    int64_t run_id;            /* the run (opsched profile call) that measured it */
    char model[128];
    int64_t batch, height, width;
    char algo_policy[48], math[8], layout[8];
    char mode[8];              /* "free", "graph", "layered" */
    double median_ms, cv;      /* per inference; NaN when not timed */
    double enqueue_ms;         /* NaN when not measured */
    int energy_valid;
    double energy_j;           /* per inference; NaN unless energy_valid */
    int64_t peak_memory_bytes; /* -1 when unknown */
    double created_at;
} opsched_network_run_row;

/* Which network runs to walk; NULL texts match anything. */
typedef struct opsched_network_run_query {
    int64_t device_id;
    const char *model, *algo_policy, *math, *layout, *mode;
} opsched_network_run_query;

typedef opsched_status (*opsched_network_run_fn)(const opsched_network_run_row *row, void *user);
/* Walks the timed network runs q selects, ordered by model, batch, size,
 * mode and time; a status other than OK from fn stops and is returned. */
opsched_status opsched_store_network_runs_get(opsched_store *s,
                                              const opsched_network_run_query *q,
                                              opsched_network_run_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_STORE_H */
