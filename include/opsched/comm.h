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

/* The alpha-beta fit of a collective over ranks GPUs (nodes 1) in dtype,
 * from the collectives a store holds of the device named (NULL: the only
 * one).  OPSCHED_ERR_NOT_FOUND naming what the store does hold when it
 * has too few sizes (at least 3) of that collective, dtype and rank
 * count. */
opsched_status opsched_comm_fit_from_store(opsched_ctx *ctx, struct opsched_store *s,
                                           const char *device, opsched_collective c,
                                           opsched_dtype dtype, int ranks, opsched_comm_fit *out);

#ifdef __cplusplus
}
#endif

#endif /* OPSCHED_COMM_H */
