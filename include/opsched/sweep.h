/*
 * opsched/sweep.h - sweeps: many operator configurations measured into the
 * measurement database, on one or several devices, resumable and shardable.
 *
 * A sweep spec (YAML, described in docs/SWEEP.md) either combines parameter
 * values of one operator ("conv2d" with these batch sizes, channels, kernel
 * sizes, ...) or names networks, batch sizes and input sizes, meaning every
 * distinct operator configuration in those networks.  Loading a spec builds
 * every configuration as a one-node graph, so an invalid spec fails before
 * anything runs: unknown keys, operators or parameters give
 * OPSCHED_ERR_INVALID_ARG with a "file:line: what is wrong" message, and a
 * file that is not YAML gives OPSCHED_ERR_PARSE, also with its line.
 * Combinations that cannot work (a kernel larger than the padded input) are
 * left out and counted, as are duplicates: configurations are distinct by
 * their signature (opsched_node_signature).
 *
 * A spec cannot ask for unbounded work: the combinations of its grids, the
 * networks it loads, the configurations it keeps and the size of its YAML
 * document once aliases are expanded are limited (docs/SWEEP.md, "Limits"),
 * and a spec over a limit is refused before anything is built, with
 * OPSCHED_ERR_INVALID_ARG and a message naming the count and the limit.
 * Filter arithmetic is checked: a result beyond 64 bits is the same error,
 * naming the filter, the operation and its "file:line:column".
 *
 * Configurations are built in f32, the logical data type of the zoo's and
 * ONNX's graphs, so a sweep's signatures match the nodes of the networks
 * they describe; the math mode (fp16, bf16, tf32) is a measurement setting,
 * stored with every measurement.
 *
 * A work item is one configuration measured under one algorithm policy.
 * opsched_sweep_run() spreads the items of a shard over one worker thread
 * per device, longest first (by FLOPs), so slow configurations do not pile
 * up on one device; items already in the database with the same settings
 * are skipped (resume); each measurement is committed as soon as it is
 * taken, so a killed sweep loses at most the items in flight.
 *
 * Thread safety: a spec is read-only once loaded and may be shared by
 * threads; opsched_sweep_run() creates its own context, device and database
 * connection per worker.
 */
#ifndef OPSCHED_SWEEP_H
#define OPSCHED_SWEEP_H

#include <signal.h>

#include "opsched/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opsched_sweep_spec opsched_sweep_spec;

/* Reads and parses a spec file.  Relative ONNX paths in it are resolved
 * against the file's folder.  The context must outlive the spec.  *out is
 * owned by the caller. */
opsched_status opsched_sweep_spec_load(opsched_ctx *ctx, const char *path,
                                       opsched_sweep_spec **out);

/* Parses a spec from memory (text is borrowed for the call; len bytes, no
 * NUL needed).  origin names it in messages ("spec.yml", "<default>");
 * relative ONNX paths are resolved against the current directory. */
opsched_status opsched_sweep_spec_parse(opsched_ctx *ctx, const char *text, size_t len,
                                        const char *origin, opsched_sweep_spec **out);

void opsched_sweep_spec_free(opsched_sweep_spec *spec);

/* The built-in spec of `opsched sweep --default`: a small conv2d grid.
 * Static. */
const char *opsched_sweep_default_spec(void);

/* The spec's text and the name it was loaded under (borrowed). */
const char *opsched_sweep_spec_text(const opsched_sweep_spec *spec);
const char *opsched_sweep_spec_origin(const opsched_sweep_spec *spec);

/* The spec's measure: section, defaults where absent (borrowed; plan.algo
 * is NULL: the policies are listed separately). */
const opsched_measure_options *opsched_sweep_spec_measure(const opsched_sweep_spec *spec);

/* Algorithm policies of the measure: section, in order: "heuristic" (the
 * default), "find", "all" (heuristic, find and, for convolutions, every
 * algorithm of the device), or an algorithm's name (convolutions only).
 * Borrowed. */
int opsched_sweep_spec_num_algos(const opsched_sweep_spec *spec);
const char *opsched_sweep_spec_algo(const opsched_sweep_spec *spec, int i);

/* Distinct configurations, in the order the spec lists them. */
int opsched_sweep_spec_num_configs(const opsched_sweep_spec *spec);
/* The graph of configuration i: its node 0 is what is measured; borrowed,
 * owned by the spec.  NULL when i is out of range. */
const opsched_graph *opsched_sweep_spec_config(const opsched_sweep_spec *spec, int i);
/* 1 when configuration i is a convolution measured with the Relu after it
 * fused in (node 1 of its graph; a networks entry with fuse: true).  Its
 * measurements are stored under the settings key with ";fused=relu", as
 * opsched profile stores such layers, so a prediction finds them. */
int opsched_sweep_spec_config_fused(const opsched_sweep_spec *spec, int i);

typedef struct opsched_sweep_counts {
    int64_t combinations;   /* grid combinations and network nodes looked at */
    int64_t filtered;       /* left out by a filter: line */
    int64_t impossible;     /* left out: shapes that cannot work together */
    int64_t duplicates;     /* the same signature as an earlier configuration */
    int64_t excluded;       /* network nodes left out: views, or ops not listed in ops: */
} opsched_sweep_counts;
void opsched_sweep_spec_counts(const opsched_sweep_spec *spec, opsched_sweep_counts *out);

/* The shard (0 .. shard_count-1) configuration i belongs to.  The split
 * depends only on the signatures, never on the order of the spec or the
 * machine, so n processes given the same spec and shards 0..n-1 cover every
 * configuration exactly once. */
int opsched_sweep_spec_shard_of(const opsched_sweep_spec *spec, int i, int shard_count);

/* ---- running -------------------------------------------------------- */

typedef struct opsched_sweep_progress {
    int64_t total;          /* work items of this shard */
    int64_t done;           /* measured and stored by this run, any status */
    int64_t skipped;        /* already in the database (resume) */
    int64_t failed;         /* of done: stored with status "error" */
    double elapsed_s;
    double rate;            /* items measured per second so far */
    double eta_s;           /* seconds left at that rate; -1 while unknown */
    int device;             /* device index of the item just finished; -1 at the start */
    const char *item;       /* its signature (borrowed for the call); NULL at the start */
} opsched_sweep_progress;

/* Called once before the first item and after every item, from the thread
 * that finished it; calls never overlap. */
typedef void (*opsched_sweep_progress_fn)(const opsched_sweep_progress *p, void *user);

typedef struct opsched_sweep_options {
    const char *backend;            /* "cuda" or "cpu"; NULL: the first with a device */
    const int *devices;             /* device indices, one worker each (borrowed) */
    int n_devices;                  /* 0: device 0 alone */
    const char *db_path;            /* the database (created when missing) */
    int shard_index;                /* 0 .. shard_count-1 */
    int shard_count;                /* 0 or 1: no sharding */
    int resume;                     /* 1: skip items the database has (default) */
    const opsched_measure_options *measure; /* NULL: the spec's; plan.algo is ignored */
    const char *const *algos;       /* NULL: the spec's policies (borrowed) */
    int n_algos;
    const char *command;            /* recorded with the run (provenance); may be NULL */
    opsched_sweep_progress_fn progress; /* may be NULL */
    void *progress_user;
    /* When it becomes nonzero (a signal handler may set it), workers finish
     * the items in flight and the run ends "interrupted".  May be NULL. */
    volatile sig_atomic_t *stop;
} opsched_sweep_options;

/* The defaults above (resume on, device 0, no shard). */
void opsched_sweep_options_default(opsched_sweep_options *o);

typedef struct opsched_sweep_result {
    int64_t run_id;         /* the run recorded in the database */
    int64_t total;          /* work items of this shard */
    int64_t skipped;        /* already in the database */
    int64_t measured;       /* measured and stored by this run */
    int64_t ok, unsupported, oom, errors; /* of measured, by status */
    int64_t unstable;       /* of ok, cv above OPSCHED_CV_WARN (opsched_unstable_message) */
    int64_t remaining;      /* not reached: interrupted, or stopped by a failure */
    double elapsed_s;
} opsched_sweep_result;

/* Runs the sweep.  Returns OPSCHED_OK when every item of the shard is in
 * the database (with any status: "unsupported", "oom" and "error" results
 * are stored and the sweep goes on); OPSCHED_ERR_INTERRUPTED when *stop was
 * set (the run is recorded "interrupted", the database is consistent and a
 * re-run completes the rest); OPSCHED_ERR_INVALID_ARG for bad options
 * (before anything runs); OPSCHED_ERR_NOT_FOUND for a device that does not
 * exist; OPSCHED_ERR_IO (or the store's status) when a measurement cannot
 * be stored, e.g. a full disk: the sweep stops there.  *result is filled in
 * every case but bad arguments. */
opsched_status opsched_sweep_run(opsched_ctx *ctx, const opsched_sweep_spec *spec,
                                 const opsched_sweep_options *opts,
                                 opsched_sweep_result *result);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_SWEEP_H */
