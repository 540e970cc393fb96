/*
 * opsched/sweep.h - sweeps: many operator configurations measured into the
 * measurement database, on one or several devices, resumable and shardable.
 *
 * A sweep spec (YAML, described in docs/SWEEP.md) either combines parameter
 * values of one operator ("conv2d" with these batch sizes, channels, kernel
 * sizes, ...) or names networks, batch sizes and input sizes, meaning every
 * distinct operator configuration in those networks.  Loading a spec walks
 * every configuration once, building each as a one-node graph and dropping
 * it, so an invalid spec fails before anything runs: unknown keys,
 * operators or parameters give OPSCHED_ERR_INVALID_ARG with a
 * "file:line: what is wrong" message, and a file that is not YAML gives
 * OPSCHED_ERR_PARSE, also with its line.  Combinations that cannot work (a
 * kernel larger than the padded input) are left out and counted, as are
 * duplicates: configurations are distinct by their signature
 * (opsched_node_signature).
 *
 * A spec holds no configuration: its grids are expanded lazily.  An
 * iterator (opsched_sweep_iter) builds the configurations again one at a
 * time, in the spec's order, and opsched_sweep_run() measures them in
 * batches, so memory follows a batch, not the grid.  Between walks a spec
 * keeps its YAML document (with the entries parsed from it) and 16 bytes
 * per distinct configuration (what tells a duplicate from a first
 * occurrence, and the shard split).
 *
 * A spec cannot ask for unbounded work: the combinations of its grids, the
 * networks it loads and the size of its YAML document once aliases are
 * expanded are limited (docs/SWEEP.md, "Limits"), and a spec over a limit
 * is refused before anything is built, with OPSCHED_ERR_INVALID_ARG and a
 * message naming the count and the limit.  Filter arithmetic is checked: a
 * result beyond 64 bits is the same error, naming the filter, the
 * operation and its "file:line:column".
 *
 * Configurations are built in f32, the logical data type of the zoo's and
 * ONNX's graphs, so a sweep's signatures match the nodes of the networks
 * they describe; the math mode (fp16, bf16, tf32) is a measurement setting,
 * stored with every measurement.
 *
 * A work item is one configuration measured under one algorithm policy.
 * opsched_sweep_run() takes the configurations of a shard in batches and
 * spreads the items of each batch over one worker thread per device,
 * longest first (by FLOPs), so slow configurations do not pile up on one
 * device; items already in the database with the same settings are skipped
 * (resume); each measurement is committed as soon as it is taken, so a
 * killed sweep loses at most the items in flight.
 *
 * Thread safety: a spec is read-only once loaded and may be shared by
 * threads, each walking it with its own iterator and context;
 * opsched_sweep_run() creates its own context, device and database
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

/* ---- configurations --------------------------------------------------- */

/* The number of distinct configurations (counted when the spec was loaded). */
int opsched_sweep_spec_num_configs(const opsched_sweep_spec *spec);

typedef struct opsched_sweep_counts {
    int64_t combinations;   /* grid combinations and network nodes looked at */
    int64_t filtered;       /* left out by a filter: line */
    int64_t impossible;     /* left out: shapes that cannot work together */
    int64_t duplicates;     /* the same signature as an earlier configuration */
    int64_t excluded;       /* network nodes left out: views, or ops not listed in ops: */
} opsched_sweep_counts;
/* The whole spec's counts, taken when it was loaded. */
void opsched_sweep_spec_counts(const opsched_sweep_spec *spec, opsched_sweep_counts *out);

/* One configuration, as an iterator gives it (borrowed from the iterator,
 * valid until its next call). */
typedef struct opsched_sweep_config {
    /* Node 0 is what is measured; when fused, node 1 is the Relu after it,
     * its only reader and the graph's output.  Built on the iterator's
     * context. */
    const opsched_graph *graph;
    const char *signature;  /* opsched_node_signature of node 0 */
    /* 1: a convolution measured with the Relu after it fused in (a networks
     * entry or a grid with fuse: true).  Its measurements are stored under
     * the settings key with ";fused=relu", as opsched profile stores such
     * layers, so a prediction finds them. */
    int fused;
    int index;              /* 0-based, among the spec's distinct configurations, in its order */
    /* Its place in the shard split: the distinct configurations sorted by
     * the FNV-1a hash (64 bits) of their signature (";fused=relu" appended
     * when fused), then by signature, then unfused first.  Shard
     * shard_rank % n of n takes it, so the split depends only on the
     * signatures, never on the order of the spec or the machine: n
     * processes given the same spec and shards 0..n-1 cover every
     * configuration exactly once, and shard sizes differ by at most one. */
    int shard_rank;
} opsched_sweep_config;

typedef struct opsched_sweep_iter opsched_sweep_iter;

/* An iterator over the distinct configurations of spec, in the order the
 * spec lists them (a grid's first parameter varying slowest), only those
 * of shard shard_index of shard_count (0 or 1: all).  Each configuration
 * is built when it is reached and freed at the next call (a shard's walk
 * builds the other shards' too, to know their signatures); networks are
 * loaded again, one at a time.  Graphs and messages go to ctx, which must
 * outlive the iterator; one iterator belongs to one thread at a time.
 * OPSCHED_ERR_INVALID_ARG for a shard that does not exist.  *out is owned
 * by the caller (opsched_sweep_iter_free). */
opsched_status opsched_sweep_iter_create(opsched_ctx *ctx, const opsched_sweep_spec *spec,
                                         int shard_index, int shard_count,
                                         opsched_sweep_iter **out);
/* The next configuration into *out, or *out NULL at the end.  A walk
 * builds what loading built, so it fails only when memory runs out or a
 * network file changed or went away since the spec was loaded
 * (OPSCHED_ERR_INVALID_ARG, OPSCHED_ERR_IO, ...; the message on the
 * iterator's context).  After a failure the iterator can only be freed. */
opsched_status opsched_sweep_iter_next(opsched_sweep_iter *it, const opsched_sweep_config **out);
/* What the walk has looked at so far, in every shard; at the end, the
 * spec's counts. */
void opsched_sweep_iter_counts(const opsched_sweep_iter *it, opsched_sweep_counts *out);
void opsched_sweep_iter_free(opsched_sweep_iter *it);

/* ---- running -------------------------------------------------------- */

typedef struct opsched_sweep_progress {
    int64_t total;          /* work items of this shard */
    int64_t done;           /* measured and stored by this run, any status */
    int64_t skipped;        /* found already in the database so far (resume) */
    int64_t failed;         /* of done: stored with status "error" */
    double elapsed_s;
    double rate;            /* items measured per second so far */
    double eta_s;           /* seconds left at that rate; -1 while unknown */
    int device;             /* device index of the item just finished; -1 at the start */
    const char *item;       /* its signature (borrowed for the call); NULL at the start */
} opsched_sweep_progress;

/* Called before the first item, after every item (from the thread that
 * finished it), and, with device -1 and item NULL, when a later batch finds
 * items already in the database; calls never overlap. */
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
    /* Configurations planned at once (0: 1024, at most 1,000,000): built,
     * registered in one transaction, checked against the database and
     * queued longest first; the next batch follows when the last item of
     * this one is done.  A run's memory follows it. */
    int batch_size;
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
    /* Not reached: interrupted, or stopped by a failure (total - skipped -
     * measured: items of batches not planned yet count here, even those a
     * re-run will find in the database). */
    int64_t remaining;
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
