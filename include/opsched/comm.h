/*
 * comm.h - collectives across GPUs: measured through NCCL (opsched
 * commbench), the bandwidth arithmetic nccl-tests defines, and the
 * alpha + beta * bytes cost models fitted to what was measured.
 *
 * A message "size" is nccl-tests' size: the buffer of an all-reduce,
 * broadcast or send/recv; the whole output of an all-gather (each rank
 * sends size / ranks); the whole input of a reduce-scatter (each rank
 * receives size / ranks); what each rank sends in an all-to-all (size /
 * ranks to each peer).
 */
#ifndef OPSCHED_COMM_H
#define OPSCHED_COMM_H

#include <signal.h>
#include <stdio.h>
#include <stdint.h>

#include "opsched/backend.h"
#include "opsched/core.h"
#include "opsched/graph.h"
#include "opsched/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum opsched_collective {
    OPSCHED_ALLREDUCE = 0,
    OPSCHED_ALLGATHER,
    OPSCHED_REDUCESCATTER,
    OPSCHED_BROADCAST,
    OPSCHED_ALLTOALL,
    OPSCHED_SENDRECV,
    OPSCHED_COLLECTIVE_COUNT
} opsched_collective;

/* "allreduce", "allgather", "reducescatter", "broadcast", "alltoall",
 * "sendrecv". */
const char *opsched_collective_name(opsched_collective c);
/* Parses a name; "all_reduce", "all-reduce" and "AllReduce" are accepted
 * too.  Unknown: OPSCHED_ERR_INVALID_ARG naming the word and the choices. */
opsched_status opsched_collective_parse(opsched_ctx *ctx, const char *name,
                                        opsched_collective *out);

/* Bus bandwidth over algorithm bandwidth, as nccl-tests defines it:
 * 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
 * all-to-all, 1 for broadcast and send/recv. */
double opsched_collective_busbw_factor(opsched_collective c, int ranks);

/* The element count of a size: bytes / elem_size, rounded down to a
 * multiple of ranks where the buffer is split among ranks (all-gather,
 * reduce-scatter, all-to-all).  0 when nothing is left. */
int64_t opsched_collective_count(opsched_collective c, int64_t bytes, int elem_size, int ranks);

/* The bytes each rank's send and receive buffers hold for count elements. */
void opsched_collective_buffers(opsched_collective c, int64_t count, int elem_size, int ranks,
                                int64_t *send_bytes, int64_t *recv_bytes);

/* The check every measured result passes: element i of rank r's input
 * holds opsched_collective_input(r, i), small integers whose sums over up
 * to 64 ranks are exact in fp32, fp16 and bf16; element i of rank
 * `rank`'s output must then hold opsched_collective_expected(...).
 * (Broadcast's root is rank 0; send/recv sends to rank + 1.) */
double opsched_collective_input(int rank, int64_t i);
double opsched_collective_expected(opsched_collective c, int64_t count, int ranks, int rank,
                                   int64_t i);

/* ---- measuring: opsched commbench ------------------------------------- */

/* One measured (collective, size): per-operation time, the slowest rank's
 * per sample (a collective is done when every rank is). */
typedef struct opsched_collective_result {
    opsched_collective collective;
    opsched_dtype dtype;
    int64_t bytes; /* nccl-tests' size (count * element size) */
    int64_t count; /* elements */
    int ranks;
    int iters;           /* operations per timed sample */
    opsched_stats stats; /* milliseconds per operation */
    double algbw_gbs;    /* bytes / median time, 1 GB = 1e9 bytes */
    double busbw_gbs;    /* algbw * opsched_collective_busbw_factor */
    int64_t wrong;       /* output elements that failed the check, all ranks */
    double max_error;    /* largest absolute difference in the check */
} opsched_collective_result;

/* What a commbench run ran on, filled in by opsched_commbench_run. */
typedef struct opsched_commbench_env {
    int ranks;
    int nccl_version;          /* NCCL_VERSION_CODE, e.g. 22703 */
    char nccl_version_str[16]; /* "2.27.3" */
    char nccl_library[256];    /* the file that was loaded */
    opsched_device_info gpu0;  /* rank 0's GPU (the store's device row) */
    char gpus[512];            /* "0:H100 (uuid...), 1:..." one per rank */
    char topology[512];        /* peer access and NVLinks between the ranks' GPUs */
    char env[512];             /* NCCL_* and CUDA_VISIBLE_DEVICES as set */
} opsched_commbench_env;

typedef void (*opsched_commbench_fn)(const opsched_collective_result *r, int skipped, void *user);

typedef struct opsched_commbench_options {
    int ranks;                    /* processes, one GPU each (rank r on GPU r); 0: every GPU */
    unsigned collectives;         /* bit (1u << opsched_collective) per collective; 0: all */
    int64_t min_bytes, max_bytes; /* default 8 B .. 1 GiB */
    int step_factor;              /* default 2 */
    opsched_dtype dtype;          /* OPSCHED_F32 (default), OPSCHED_F16 or OPSCHED_BF16 */
    int warmup;                   /* operations before the samples (default 5) */
    int iters;                    /* operations per sample (default 20) */
    int samples;                  /* timed samples per size (default 10, at most 100) */
    int timeout_s;                /* no word from a rank for this long: the run is stopped (300) */
    int force;                    /* measure again what the store holds */
    volatile sig_atomic_t *stop;  /* set (a signal): stop after the size in flight */
    opsched_commbench_fn on_result; /* each size measured or skipped; may be NULL */
    void *user;
} opsched_commbench_options;

void opsched_commbench_options_init(opsched_commbench_options *o);

typedef struct opsched_commbench_summary {
    int64_t measured, skipped, wrong_results;
    opsched_commbench_env env;
} opsched_commbench_summary;

/* Measures the collectives of o over sizes min_bytes .. max_bytes with one
 * process per GPU, started here (fork; the calling process must not have
 * used CUDA yet, and never does here) and bootstrapped through
 * ncclGetUniqueId.  Each result is written to store (NULL: not stored)
 * under run_id as it comes, so an interrupted run keeps what it measured
 * and a second run skips it.  NCCL is opened with dlopen
 * (OPSCHED_NCCL_LIB names the file; default libnccl.so.2).
 * Fails with OPSCHED_ERR_UNSUPPORTED when this build has no CUDA backend
 * or NCCL cannot be loaded, OPSCHED_ERR_NOT_FOUND when the machine has
 * fewer GPUs than ranks, OPSCHED_ERR_BACKEND naming the rank and its
 * message when a rank fails, OPSCHED_ERR_INTERRUPTED when *stop was set;
 * a result that fails its check is stored (wrong > 0) and counted, and
 * the run ends with OPSCHED_ERR_BACKEND saying how many failed. */
struct opsched_store;
opsched_status opsched_commbench_run(opsched_ctx *ctx, const opsched_commbench_options *o,
                                     struct opsched_store *store, int64_t run_id,
                                     opsched_commbench_summary *out);

/* The NCCL commbench would load (OPSCHED_NCCL_LIB, else libnccl.so.2):
 * its version code (22703 for 2.27.3) and file.  OPSCHED_ERR_UNSUPPORTED
 * with the loader's message when it cannot be loaded or this build has no
 * CUDA backend. */
opsched_status opsched_nccl_library(opsched_ctx *ctx, int *version, char *path, size_t size);

/* ---- stored collectives (the `collectives` table) ---------------------- */

/* Whether the store holds a checked measurement of this collective, dtype,
 * size and rank count over `nodes` nodes on device_id (rank 0's GPU). */
opsched_status opsched_store_collective_has(struct opsched_store *s, int64_t device_id,
                                            const opsched_collective_result *r, int nodes,
                                            int *found);
/* Adds (or replaces) one measured collective and commits it; a full disk
 * fails with OPSCHED_ERR_IO and leaves what was committed before. */
opsched_status opsched_store_collective_put(struct opsched_store *s, int64_t run_id,
                                            int64_t device_id, const opsched_collective_result *r,
                                            int nodes, const opsched_commbench_env *env);

typedef struct opsched_collective_row {
    opsched_collective_result r; /* stats: n, min, max, mean, median, std, p90 */
    int nodes;
    char nccl_version[16];
    char device_name[128];
    char device_uuid[80];
} opsched_collective_row;
typedef opsched_status (*opsched_collective_row_fn)(const opsched_collective_row *row, void *user);

/* Every stored collective (of the device named or with that uuid; NULL:
 * all), ordered by collective, dtype, ranks, nodes, device and size; a
 * failure returned by fn stops the walk and is returned. */
opsched_status opsched_store_collectives(struct opsched_store *s, const char *device_name,
                                         opsched_collective_row_fn fn, void *user);

/* The collectives table as CSV, one row per measurement, nccl-tests' time
 * (the median per operation, microseconds) last. */
opsched_status opsched_store_export_collectives_csv(struct opsched_store *s, FILE *f);

/* ---- nccl-tests output ---------------------------------------------------- */

/* What an nccl-tests log (all_reduce_perf and the others, their stdout,
 * mpirun's "[1,0]<stdout>:" prefixes allowed) says: the collective (from
 * "Collective test starting: all_reduce_perf"; -1 when it does not say),
 * the ranks (its "#  Rank" lines; 0 when it has none), rank 0's GPU, the
 * NCCL version when printed, the operations per size ("iters:"), and one
 * result per size line: the out-of-place time as its only sample, the
 * bandwidths as printed, wrong from "#wrong" (0 when "N/A").  Lines of
 * other element types than float, half and bfloat16 are counted in
 * skipped. */
typedef struct opsched_nccl_tests_log {
    int collective; /* opsched_collective, or -1 */
    int ranks;
    int iters;
    char gpu[128];
    char nccl_version[16];
    opsched_collective_result *results; /* owned: opsched_nccl_tests_log_free */
    int n_results;
    int skipped;
} opsched_nccl_tests_log;

/* Parses f.  OPSCHED_ERR_PARSE naming the line when a size line is
 * malformed or no size line is found. */
opsched_status opsched_nccl_tests_parse(opsched_ctx *ctx, FILE *f, const char *name,
                                        opsched_nccl_tests_log *out);
void opsched_nccl_tests_log_free(opsched_nccl_tests_log *l);

/* ---- cost models ------------------------------------------------------ */

#define OPSCHED_COMM_MAX_SEGMENTS 4

/* time_us = alpha_us + bytes / (bw_gbs * 1e3) over [lo_bytes, hi_bytes]. */
typedef struct opsched_comm_segment {
    double lo_bytes, hi_bytes;
    double alpha_us;
    double bw_gbs; /* 1 / beta, GB/s (1e9 bytes); inf when flat */
    int n;         /* points fitted */
    double max_rel_err, median_rel_err;
} opsched_comm_segment;

typedef struct opsched_comm_fit {
    int n_segments;
    opsched_comm_segment seg[OPSCHED_COMM_MAX_SEGMENTS];
    double max_rel_err, median_rel_err; /* over every point */
    int n;
} opsched_comm_fit;

/* Fits piecewise alpha + beta * bytes to n points (bytes ascending, time
 * in microseconds, n >= 2), at most max_segments pieces, each of at
 * least 3 points, the breakpoints at measured sizes chosen to minimise
 * the squared relative error, a piece added only where it cuts the
 * worst relative error by a fifth or more.  Alpha and beta are never negative. */
opsched_status opsched_comm_fit_points(opsched_ctx *ctx, const double *bytes, const double *time_us,
                                       int n, int max_segments, opsched_comm_fit *out);

/* The fitted time at a size (outside the points, the nearest piece). */
double opsched_comm_fit_eval(const opsched_comm_fit *f, double bytes);

/* "latency-bound" (alpha dominates the piece's largest size),
 * "bandwidth-bound" (the last piece, beta dominating) or "transition". */
const char *opsched_comm_segment_regime(const opsched_comm_fit *f, int i);

/* ---- across nodes: the two-level model --------------------------------- */

/* Nodes of gpus_per_node GPUs each; between nodes, a network of net_gbs
 * GB/s (1e9 bytes/s) per node and direction (every NIC of the node
 * together) and net_us of latency per hop. */
typedef struct opsched_comm_network {
    int nodes;
    int gpus_per_node;
    double net_gbs;
    double net_us;
} opsched_comm_network;

typedef enum opsched_comm_algo {
    OPSCHED_COMM_RING = 0,
    OPSCHED_COMM_TREE
} opsched_comm_algo;

/* The time in microseconds of collective c of nccl-tests' size bytes over
 * every GPU of net (src/comm/multinode.c says how), from intra, the fit of
 * c over gpus_per_node ranks on one node (NULL when gpus_per_node is 1).
 * All-reduce takes the faster of a ring and NCCL's tree (a double binary
 * tree between nodes, a chain inside each); *algo says which (may be
 * NULL).  NAN for a collective the model does not cover (all-to-all,
 * send/recv) or bad arguments. */
double opsched_comm_multinode_us(opsched_collective c, double bytes, const opsched_comm_fit *intra,
                                 const opsched_comm_network *net, opsched_comm_algo *algo);

/* ---- data-parallel training: PyTorch DDP ------------------------------- */

/* One parameter in registration order (model.parameters()). */
typedef struct opsched_ddp_param {
    int64_t bytes;   /* its gradient as all-reduced */
    double ready_ms; /* when backward has produced it, from backward's start */
} opsched_ddp_param;

/* One rank's compute, without communication (one micro-step). */
typedef struct opsched_ddp_compute {
    double forward_ms; /* forward and loss */
    double backward_ms;
    double optimizer_ms;
} opsched_ddp_compute;

typedef struct opsched_ddp_options {
    double bucket_cap_mb;   /* DDP's bucket_cap_mb (25; MB = 2^20 bytes) */
    double first_bucket_mb; /* the first bucket's cap (1) */
    /* Backward is stretched by this many ms per ms that communication
     * kernels are resident during it (fitted to measured steps; 0 none). */
    double overlap_slowdown;
    /* The reducer's work per gradient (autograd hook, copy into its
     * bucket) that backward waits for, microseconds (fitted; 0 none). */
    double per_param_us;
    int accumulation_steps;      /* micro-steps per optimizer step, all but the last no_sync (1) */
    int gradient_as_bucket_view; /* 1: gradients live in the buckets (no second copy) */
    /* Bytes sent per gradient byte: 1, or 0.5 under a bf16/fp16
     * compression hook (buckets are still cut by the fp32 sizes). */
    double comm_bytes_scale;
} opsched_ddp_options;

void opsched_ddp_options_init(opsched_ddp_options *o);

typedef struct opsched_ddp_bucket {
    int first_param, last_param; /* registration indices: first_param is the highest */
    int n_params;
    int64_t bytes;
    double ready_ms, start_ms, end_ms; /* from backward's start */
    double comm_ms;
} opsched_ddp_bucket;

typedef struct opsched_ddp_result {
    int n_buckets;
    opsched_ddp_bucket *buckets;    /* owned: opsched_ddp_result_free */
    double forward_ms, backward_ms; /* backward stretched by overlap */
    double optimizer_ms;
    double comm_ms;              /* all-reduce time, all buckets */
    double exposed_ms;           /* of it, after backward ends */
    double hidden_ms;            /* of it, under backward */
    double slowdown_ms;          /* backward's stretch from overlap */
    double iteration_ms;         /* one optimizer step, all micro-steps */
    double single_ms;            /* the same work on one GPU without DDP */
    double scaling_efficiency;   /* single_ms / iteration_ms: per-GPU throughput kept */
    int64_t bucket_buffer_bytes; /* the buckets' flat buffers beside the gradients */
} opsched_ddp_result;

void opsched_ddp_result_free(opsched_ddp_result *r);

/* The all-reduce time of a message, in microseconds (e.g. a fit's). */
typedef double (*opsched_comm_cost_fn)(double bytes, void *user);

/* The bucket of each parameter (*bucket_of[i], caller frees), DDP's
 * assignment: reverse registration order, a bucket closed once it holds
 * its cap. */
opsched_status opsched_ddp_buckets(opsched_ctx *ctx, const opsched_ddp_param *params, int n,
                                   const opsched_ddp_options *o, int **bucket_of, int *n_buckets);

/* One DDP iteration on a timeline (src/comm/ddp.c says how).  Fails with
 * OPSCHED_ERR_INVALID_ARG naming what is wrong (a gradient ready outside
 * backward, a negative time, no cost for a bucket). */
opsched_status opsched_ddp_timeline(opsched_ctx *ctx, const opsched_ddp_param *params, int n,
                                    const opsched_ddp_compute *c, opsched_comm_cost_fn cost,
                                    void *user, const opsched_ddp_options *o,
                                    opsched_ddp_result *out);

/* DDP's inputs from a training graph (opsched_training_graph) and the
 * time of each of its nodes (node_ms[i], e.g. a prediction's
 * composed_ms): forward (to the loss), backward and, when the graph has
 * the optimizer step, optimizer times, and for each
 * "grad/<w>" output in registration order its bytes and when backward
 * has made it.  *params is the caller's (free). */
opsched_status opsched_ddp_from_training(opsched_ctx *ctx, const opsched_graph *tg,
                                         const double *node_ms, opsched_ddp_param **params,
                                         int *n_params, opsched_ddp_compute *c);

/* ---- data-parallel training: PyTorch FSDP (full shard) ------------------ */

/* Which FSDP unit a parameter belongs to, as fully_shard() wraps modules:
 * the innermost module on the parameter's path (its name minus the last
 * dot component, "layer1.0.conv1" of "layer1.0.conv1.weight") that one of
 * the patterns matches, component by component with fnmatch(3) wildcards
 * ("layer*.*" matches "layer1.0", not "layer1" nor "layer1.0.conv1").
 * patterns is a comma-separated list, NULL or "" none; a pattern may end
 * in ":f32" (its units are all-gathered in fp32 whatever the parameter
 * dtype, as BatchNorm units are).  Writes the unit's module path to unit
 * ("" for the root: no pattern matched) and returns 1 when the unit's
 * pattern ends in ":f32", else 0. */
int opsched_fsdp_unit_of(const char *param, const char *patterns, char *unit, size_t size);

#define OPSCHED_FSDP_UNIT_NAME 128

typedef struct opsched_fsdp_unit {
    char name[OPSCHED_FSDP_UNIT_NAME]; /* its module path; "" the root */
    int64_t param_bytes;               /* its parameters, unsharded, as stored (fp32) */
    int n_params;
    int keep_f32;                      /* all-gathered in fp32 (a ":f32" pattern) */
} opsched_fsdp_unit;

/* A stretch of one rank's compute that uses one unit's parameters. */
typedef struct opsched_fsdp_segment {
    int unit;
    int backward; /* 0: forward and loss; 1: backward */
    double ms;
} opsched_fsdp_segment;

typedef struct opsched_fsdp_compute {
    opsched_fsdp_unit *units; /* units[0] is the root (it may hold nothing) */
    int n_units;
    opsched_fsdp_segment *segs; /* in execution order */
    int n_segs;
    double optimizer_ms; /* the step over every parameter on one GPU (0: none) */
} opsched_fsdp_compute;

void opsched_fsdp_compute_free(opsched_fsdp_compute *c);

/* FSDP's inputs from a training graph (opsched_training_graph) and the
 * time of each node: the units of patterns (opsched_fsdp_unit_of) with
 * their parameters (the "grad/<w>" outputs), in the order forward first
 * uses them, and the compute as segments: a node belongs to the unit of
 * the parameter it reads or whose gradient it makes, else to the unit of
 * the node before it. */
opsched_status opsched_fsdp_from_training(opsched_ctx *ctx, const opsched_graph *tg,
                                          const double *node_ms, const char *patterns,
                                          opsched_fsdp_compute *out);

typedef struct opsched_fsdp_options {
    int ranks;
    /* Bytes all-gathered per stored parameter byte: 1 (fp32), 0.5 for a
     * bf16/fp16 param_dtype (units kept in fp32 excepted). */
    double gather_bytes_scale;
    /* Bytes reduce-scattered per fp32 gradient byte: 1 (reduce_dtype fp32)
     * or 0.5. */
    double reduce_bytes_scale;
    int reshard_after_forward; /* non-root units gathered again for backward (1) */
    /* As DDP's: ms of compute lost per ms of communication resident
     * under it.  Host time of FSDP's hooks each time a unit is entered
     * (forward and backward), in microseconds: a fixed part and a part per
     * parameter of the unit.  All three fitted to measured steps, 0 by
     * default. */
    double overlap_slowdown;
    double per_unit_us;
    double per_param_us;
    /* The host time to issue the one-GPU step's forward and backward
     * (measured; 0: the host is never the limit but for the hooks). */
    double host_ms;
} opsched_fsdp_options;

void opsched_fsdp_options_init(opsched_fsdp_options *o);

typedef struct opsched_fsdp_result {
    double iteration_ms;
    double single_ms;          /* the same compute on one GPU, whole optimizer step */
    double scaling_efficiency; /* single_ms / iteration_ms */
    double forward_ms, backward_ms; /* compute only, stretched by the fitted terms */
    double forward_end_ms;          /* when forward (with its waits) ends */
    double optimizer_ms;            /* on the rank's shard */
    double allgather_ms, reducescatter_ms; /* all of them */
    int n_allgathers, n_reducescatters;
    double exposed_ms; /* the iteration beyond its compute: waits for communication and the host */
    double hidden_ms;  /* communication under compute */
} opsched_fsdp_result;

/* One FSDP2 (fully_shard, FULL_SHARD) iteration on a timeline
 * (src/comm/fsdp.c says how); allgather and reducescatter give a
 * collective's time in microseconds for nccl-tests' size (the whole
 * output, the whole input). */
opsched_status opsched_fsdp_timeline(opsched_ctx *ctx, const opsched_fsdp_compute *c,
                                     opsched_comm_cost_fn allgather, void *ag_user,
                                     opsched_comm_cost_fn reducescatter, void *rs_user,
                                     const opsched_fsdp_options *o, opsched_fsdp_result *out);

/* The alpha-beta fit of a collective over ranks GPUs (nodes 1) in dtype,
 * from the collectives a store holds of the device named (NULL: the only
 * one).  OPSCHED_ERR_NOT_FOUND naming what the store does hold when it
 * has too few sizes (at least 3) of that collective, dtype and rank
 * count. */
opsched_status opsched_comm_fit_from_store(opsched_ctx *ctx, struct opsched_store *s,
                                           const char *device, opsched_collective c,
                                           opsched_dtype dtype, int ranks, opsched_comm_fit *out);
/* The same over `ranks` GPUs on `nodes` nodes (measured there, or an
 * nccl-tests log of that cluster imported). */
opsched_status opsched_comm_fit_from_store_nodes(opsched_ctx *ctx, struct opsched_store *s,
                                                 const char *device, opsched_collective c,
                                                 opsched_dtype dtype, int ranks, int nodes,
                                                 opsched_comm_fit *out);

#ifdef __cplusplus
}
#endif

#endif /* OPSCHED_COMM_H */
