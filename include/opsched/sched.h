/*
 * opsched/sched.h - inter-operator schedules: what runs concurrently and
 * what runs merged, how schedules are searched, and the schedule file.
 *
 * A schedule is a list of stages run one after another.  A stage is either
 *
 *   CONCURRENT: groups run at the same time, one stream each; a group is a
 *               sequence of nodes run in order on its stream, or
 *   MERGE:      one merged convolution: convolutions that read the same
 *               tensor with the same stride and give the same output size
 *               once their kernels are zero-padded to the largest (and
 *               centred by their padding), run as one convolution whose
 *               output channels are the members' outputs one after another;
 *               readers of a member's output read its channel slice.
 *
 * View nodes (Reshape, Flatten, Identity, Dropout: opsched_op_is_view)
 * are never listed in a schedule.  They compute nothing and alias their
 * input, so they are "done" as soon as the tensor they view is: a
 * dependency through a view is a dependency on the node that produced
 * the viewed tensor (followed through chains of views).  An executor that
 * must copy a view (a layout where aliasing is impossible) runs it on the
 * stream of that producer right after it, or before the first stage when
 * it views a graph input.  Listing a view is a validation error.
 *
 * A Relu that is the only reader of a convolution's output (what the
 * executor fuses into the convolution) is listed like any node, but the
 * searchers keep it in the convolution's group right after it, and count
 * the pair as one operator for the `r` limit.  A MERGE member may carry
 * such a Relu: every member has one, or none does.
 *
 * Ownership: a schedule owns its strings and arrays; the stage, group and
 * merge structures are readable in place (borrowed, valid until the
 * schedule is changed or freed) and changed only through the functions
 * below.  The graph a schedule belongs to is never kept by it: functions
 * that need it take it.
 */
#ifndef OPSCHED_SCHED_H
#define OPSCHED_SCHED_H

#include <signal.h>

#include "opsched/graph.h"
#include "opsched/predict.h"
#include "opsched/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The schedule file: "format": "opsched-schedule", "version": this. */
#define OPSCHED_SCHEDULE_FORMAT "opsched-schedule"
#define OPSCHED_SCHEDULE_VERSION 1

typedef enum opsched_stage_kind {
    OPSCHED_STAGE_CONCURRENT = 0,
    OPSCHED_STAGE_MERGE
} opsched_stage_kind;

/* Nodes run in order on one stream. */
typedef struct opsched_group {
    int n_nodes;
    int *nodes;                 /* graph node indices, in run order */
} opsched_group;

/* One convolution of a merged stage. */
typedef struct opsched_merge_member {
    int node;                   /* the Conv node */
    int relu;                   /* the Relu fused after it (its only reader), or -1 */
    int64_t channel_offset;     /* its first output channel in the merged output */
    int64_t out_channels;       /* its output channels */
    int64_t kernel_offset[2];   /* row, column of its kernel inside the merged kernel */
} opsched_merge_member;

/* The merged convolution: it reads the members' shared input (their
 * input 0) with their common stride, has the merged kernel and pads, and
 * writes sum(out_channels) channels.  Dilation is 1 and groups 1 for every
 * member; a member without bias gets zeros. */
typedef struct opsched_merge {
    int n_members;
    opsched_merge_member *members; /* in channel order */
    int64_t kernel[2];          /* kh, kw: the largest of the members' */
    int64_t pads[4];            /* top, left, bottom, right of the merged conv */
    int64_t stride[2];
    int64_t out_channels;       /* sum over members */
    int input;                  /* the shared input tensor id */
} opsched_merge;

typedef struct opsched_stage {
    opsched_stage_kind kind;
    int n_groups;               /* CONCURRENT: >= 1; MERGE: 0 */
    opsched_group *groups;
    opsched_merge merge;        /* MERGE only (zeroed otherwise) */
    double ms;                  /* the cost the search gave it; < 0 when unknown */
} opsched_stage;

typedef struct opsched_schedule {
    char *model;                /* graph name it was made for */
    int n_graph_nodes;          /* node count of that graph (a cheap identity check) */
    int64_t batch;              /* dim 0 of the first graph input; 0 unknown */
    int64_t input_h, input_w;   /* dims 2 and 3 of the first 4-D graph input; 0 unknown */
    char *device;               /* the device whose costs made it ("" unknown) */
    char *searcher;             /* "sequential", "greedy", "ios", or "" */
    char *cost;                 /* "measure", "predict", "synthetic", ... or "" */
    int r, s;                   /* the IOS limits searched under (0 for others) */
    double predicted_ms;        /* sum of stage costs; < 0 when unknown */
    int n_stages;
    opsched_stage *stages;
    opsched_ctx *ctx;           /* borrowed: where errors go */
} opsched_schedule;

/* ---- building ------------------------------------------------------- */

/* An empty schedule for graph g: model, n_graph_nodes, batch and input
 * size are taken from g; the other strings are "" and predicted_ms -1. */
opsched_status opsched_schedule_create(const opsched_graph *g, opsched_schedule **out);
void opsched_schedule_free(opsched_schedule *s);
/* Sets one of the strings (copied); which: "device", "searcher", "cost". */
opsched_status opsched_schedule_set_string(opsched_schedule *s, const char *which,
                                           const char *value);

/* Appends an empty CONCURRENT stage; its index goes to *out (may be NULL). */
opsched_status opsched_schedule_add_stage(opsched_schedule *s, int *out);
/* Appends a group of n nodes (copied, in run order) to CONCURRENT stage `stage`. */
opsched_status opsched_schedule_add_group(opsched_schedule *s, int stage, const int *nodes,
                                          int n);
/* Appends a MERGE stage of the n convolutions convs[] (channel order),
 * each with its Relu or -1 in relus[] (NULL: none); the geometry (merged
 * kernel, pads, offsets) is computed from g.  OPSCHED_ERR_INVALID_ARG
 * with the reason when they cannot be merged. */
opsched_status opsched_schedule_add_merge(opsched_schedule *s, const opsched_graph *g,
                                          const int *convs, const int *relus, int n, int *out);

/* ---- checking ------------------------------------------------------- */

/* Checks s against g: the same model (name and node count); every node
 * index in range; every non-view node exactly once, no view listed; a
 * node's producers (through views) in an earlier stage or earlier in the
 * same group; MERGE stages legal (same input, stride 1-for-1, groups and
 * dilation 1, the recorded geometry equal to the computed one, a member's
 * Relu the only reader of its conv).  The first problem is reported by
 * node name.  OPSCHED_ERR_INVALID_ARG for a schedule of another model,
 * OPSCHED_ERR_SHAPE for an illegal merge, OPSCHED_ERR_INVALID_ARG for
 * the rest. */
opsched_status opsched_schedule_validate(const opsched_graph *g, const opsched_schedule *s);

/* 1 when convolutions a and b (node indices) could share a MERGE stage:
 * same input tensor, stride, dilation 1, groups 1, and compatible padding
 * once padded to the larger kernel. */
int opsched_conv_mergeable(const opsched_graph *g, int a, int b);

/* The node that a dependency on tensor t waits for: its producer, looked
 * through views; -1 for graph inputs, weights and constants (also behind
 * views). */
int opsched_tensor_scheduled_producer(const opsched_graph *g, int t);

/* ---- files ---------------------------------------------------------- */

/* Writes s as JSON (format and version above; nodes named by name and
 * index; see docs/SCHEDULE.md). */
opsched_status opsched_schedule_write(const opsched_schedule *s, const opsched_graph *g,
                                      const char *path);
/* The same with opsched_out_open's flags (for names the user did not give). */
opsched_status opsched_schedule_write_flags(const opsched_schedule *s, const opsched_graph *g,
                                            const char *path, int flags);
opsched_status opsched_schedule_to_json(const opsched_schedule *s, const opsched_graph *g,
                                        char **out); /* free() the text */
/* Reads a schedule file for g and validates it.  OPSCHED_ERR_PARSE for a
 * file that is not a schedule (with the field), OPSCHED_ERR_VERSION for a
 * newer version, OPSCHED_ERR_INVALID_ARG for a schedule of another model
 * or one whose node names and indices disagree with g. */
opsched_status opsched_schedule_read(opsched_ctx *ctx, const opsched_graph *g, const char *path,
                                     opsched_schedule **out);
opsched_status opsched_schedule_from_json(opsched_ctx *ctx, const opsched_graph *g,
                                          const char *text, opsched_schedule **out);

/* Formats a readable description of s, a line at a time: each line
 * (without newline) is passed to fn.  The library never prints. */
typedef void (*opsched_line_fn)(const char *line, void *user);
opsched_status opsched_schedule_describe(const opsched_schedule *s, const opsched_graph *g,
                                         opsched_line_fn fn, void *user);

/* A canonical text that identifies what a stage runs, independent of the
 * model and node names: groups as lists of node signatures (sorted, since
 * group order does not matter), or the merge.  Equal text, equal cost.
 * The text can be long; *out is malloc'd (free()). */
opsched_status opsched_stage_signature(const opsched_graph *g, const opsched_stage *stage,
                                       char **out);
/* The same under a layout per tensor: rm (g's 4-D tensors kept row-major
 * under NHWC, opsched_layout_rowmajor; NULL for none) adds the shapes of
 * the row-major 4-D tensors the stage reads or writes, sorted, as
 * " rowmajor=AxBxCxD,...", so that a stage measured with them row-major
 * is not taken for the same nodes over images.  Without such tensors the
 * text is opsched_stage_signature's. */
opsched_status opsched_stage_signature_layout(const opsched_graph *g, const opsched_stage *stage,
                                              const unsigned char *rm, char **out);

/* ---- searching ------------------------------------------------------ */

/* The cost of running one stage alone, in milliseconds; +inf when the
 * device cannot run it (the searchers then never choose it).  The stage
 * is borrowed for the call only. */
typedef opsched_status (*opsched_stage_cost_fn)(void *user, const opsched_graph *g,
                                                const opsched_stage *stage, double *ms);

typedef enum opsched_searcher {
    OPSCHED_SEARCH_SEQUENTIAL = 0,  /* one node per stage, graph order */
    OPSCHED_SEARCH_GREEDY,          /* every ready operator in parallel, stage by stage */
    OPSCHED_SEARCH_IOS              /* the IOS dynamic program */
} opsched_searcher;

const char *opsched_searcher_name(opsched_searcher s);
opsched_status opsched_searcher_from_name(const char *name, opsched_searcher *out);

typedef struct opsched_search_options {
    opsched_searcher searcher;
    int r;                          /* operators per group (0: 3) */
    int s;                          /* groups per stage (0: 8); also caps greedy */
    int max_block_ops;              /* operators per part of a block (0: 50) */
    int no_merge;                   /* 1: IOS without MERGE stages */
    /* IOS: a part whose search enumerates more endings than this is split
     * in two (unit order) and the halves searched one after the other,
     * again and again while needed (0: 100,000).  Wide random-wired
     * parts need it; the result is optimal within the parts searched. */
    int64_t max_part_endings;
    /* IOS branch and bound, for costs that are expensive to evaluate
     * (measured): one cost per graph node such that no stage runs faster
     * than bound_factor (0: 1.0) x the sum of these over its longest group
     * (a merged convolution: than its largest member).  A candidate stage
     * that cannot beat the best found so far is then not costed.  With
     * predicted costs and the single-op costs as the bound, factor 1 is
     * exact; with measured costs and the single-op times, a factor below 1
     * allows for noise.  NULL: every candidate is costed. */
    const double *node_bound_ms;
    double bound_factor;
    opsched_stage_cost_fn cost;     /* NULL allowed for sequential and greedy */
    void *user;
    /* Polled between stage evaluations; when it becomes non-zero the search
     * stops with OPSCHED_ERR_INTERRUPTED.  NULL: never. */
    volatile sig_atomic_t *stop;
} opsched_search_options;

typedef struct opsched_search_stats {
    int64_t states;                 /* DP states memoised */
    int64_t endings;                /* candidate last stages considered */
    int64_t stage_evals;            /* calls to the cost function */
    int64_t cost_cache_hits;        /* stages costed before, answered from the memo */
    int64_t pruned;                 /* candidate endings never costed (branch and bound) */
    int n_blocks, n_parts;          /* how the graph was cut (parts as searched) */
    int largest_part;               /* operators in the largest part searched */
    int splits;                     /* parts split for the endings budget */
    double seconds;                 /* wall time of the search */
} opsched_search_stats;

/* Searches a schedule for g.  stats may be NULL.  The schedule's
 * predicted_ms is the sum of its stages' costs (when a cost function was
 * given); every stage's ms is set. */
opsched_status opsched_schedule_search(const opsched_graph *g, const opsched_search_options *o,
                                       opsched_schedule **out, opsched_search_stats *stats);

/* Costs every stage of s with fn (sets stage ms and predicted_ms). */
opsched_status opsched_schedule_cost(opsched_schedule *s, const opsched_graph *g,
                                     opsched_stage_cost_fn fn, void *user);

/* ---- predicted stage costs ------------------------------------------ */

/* How concurrent groups share a device:
 *   T = max(longest group, total work / capacity)
 *       + stage_ms + stream_ms * (groups - 1)
 * where a group's time is the sum of its operators' single-run costs and
 * total work the sum over groups.  A merged convolution costs
 * merge_factor * (sum of its members' costs scaled by padded FLOPs) +
 * stage_ms. */
typedef struct opsched_contention {
    double capacity;                /* groups' worth of work the device overlaps (>= 1) */
    double stage_ms;                /* per stage: synchronisation between stages */
    double stream_ms;               /* per additional stream */
    double merge_factor;            /* merged conv time vs the member sum */
    int n_fit;                      /* measured stages fitted from; 0: the defaults */
    double fit_rms_rel;             /* relative RMS error of the fit (NaN when n_fit 0) */
    int n_merge_fit;                /* merged stages merge_factor was fitted from (0: kept) */
} opsched_contention;

/* The defaults used when nothing was measured (documented in SCHEDULE.md). */
void opsched_contention_defaults(opsched_contention *out);

/* One measured stage, as used for fitting. */
typedef struct opsched_stage_sample {
    int n_groups;
    double longest_ms;              /* the longest group's sum of single-op costs */
    double sum_ms;                  /* all groups' single-op costs; a merge: its members'
                                     * costs scaled to the merged kernel, plus their Relus */
    double measured_ms;             /* the stage measured as a whole */
    int merge;                      /* 1: a merged convolution */
} opsched_stage_sample;

/* Least-squares fit (relative residuals) of capacity, stage_ms and
 * stream_ms to the concurrent samples of two or more groups (a one-group
 * stage costs its operators' sum, opsched_stage_cost_predicted), then of
 * merge_factor to the merged ones (given the fitted stage_ms).  Fewer than
 * 3 usable samples of two or more groups give the defaults with n_fit 0;
 * fewer than 2 merged samples keep out->merge_factor when it is > 0 (else
 * the default). */
opsched_status opsched_contention_fit(opsched_ctx *ctx, const opsched_stage_sample *samples,
                                      int n, opsched_contention *out);

/* The user data of opsched_stage_cost_predicted: single-op costs per
 * graph node (views 0) and the contention model.  Borrowed. */
typedef struct opsched_predicted_cost {
    const double *node_ms;
    int n_nodes;                    /* = opsched_graph_num_nodes */
    opsched_contention model;
} opsched_predicted_cost;

/* Each node's cost for opsched_stage_cost_predicted from a network
 * prediction r of g (graph mode): its layer's composed_ms, the share of
 * predict's composed latency, so that the sequential schedule's predicted
 * latency is predict's total.  Views and fused Relus cost 0; a view that
 * does launch (a copy) adds its cost to the operator producing its input
 * (schedules leave views out).  node_ms: n = opsched_graph_num_nodes(g)
 * entries, the caller's.  OPSCHED_ERR_NOT_FOUND, naming the first,
 * when a launch has no prediction. */
opsched_status opsched_predicted_node_costs(const opsched_graph *g,
                                            const opsched_network_prediction *r, double *node_ms,
                                            int n);

/* An opsched_stage_cost_fn; user is an opsched_predicted_cost.  A stage of
 * one group costs its nodes' sum (one stream, launches one after another:
 * what predict composes); the contention model's terms (capacity,
 * stage_ms, stream_ms) apply to stages of two or more groups, and a merge
 * costs merge_factor x its members (kernels scaled) + stage_ms. */
opsched_status opsched_stage_cost_predicted(void *user, const opsched_graph *g,
                                            const opsched_stage *stage, double *ms);

/* ---- measured stage costs, kept in the database ----------------------- */

/* The user data of opsched_stage_cost_cached.  A stage is looked up in
 * the stages table by its signature and the settings below; when absent
 * it is measured with `measure` (the executor's stage timing)
 * and stored, with the single-op sums of its groups when node_ms is
 * given (what the contention fit needs).  store NULL: measure every time.
 * measure NULL: lookups only (a stage never measured is
 * OPSCHED_ERR_NOT_FOUND).  Everything borrowed. */
typedef struct opsched_stage_cache {
    opsched_store *store;
    int64_t device_id;
    int64_t batch;
    const char *math, *layout, *algo_policy;
    opsched_stage_cost_fn measure;
    void *measure_user;
    const double *node_ms;          /* single-op costs per node, or NULL */
    int n_nodes;
    int64_t hits, measured;         /* answered from the database; measured now */
    int64_t unsupported;            /* of the measured, those that cost +inf (not stored) */
} opsched_stage_cache;

/* An opsched_stage_cost_fn; user is an opsched_stage_cache. */
opsched_status opsched_stage_cost_cached(void *user, const opsched_graph *g,
                                         const opsched_stage *stage, double *ms);

/* Fits *inout (start from opsched_contention_defaults) to the stages
 * stored for (device, math, layout, policy) that carry single-op sums;
 * n_fit and n_merge_fit say how many. */
opsched_status opsched_contention_fit_store(opsched_store *s, opsched_ctx *ctx, int64_t device_id,
                                            const char *math, const char *layout,
                                            const char *algo_policy, opsched_contention *inout);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_SCHED_H */
