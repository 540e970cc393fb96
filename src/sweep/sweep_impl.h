/*
 * sweep_impl.h - what the files of the sweep module share: the spec object,
 * its entries, the walk over its configurations, and the YAML walking
 * helpers that turn every problem into "file:line: message".
 *
 * spec.c reads the file and the top level, grid.c parses and walks `op:`
 * entries, networks.c `networks:` entries, walk.c turns their candidates
 * into the spec's distinct configurations (the iterator), run.c measures.
 */
#ifndef OS_SWEEP_IMPL_H
#define OS_SWEEP_IMPL_H

#include <yaml.h>

#include "core/error.h"
#include "opsched/sweep.h"

/* Bounds on the work a spec may ask for, so that no spec exhausts memory
 * or time (docs/SWEEP.md states them).  Combinations: of one grid, and of
 * all grids of the spec together, before filters apply, counted before any
 * is built.  Nodes: of the YAML document once its aliases are expanded,
 * and its nesting depth.  Network loads: networks x batches x sizes over
 * all networks entries.  Policies: algorithm policies of measure: algo.
 * Bytes: of the spec's text, checked before libyaml reads it.  Candidates:
 * configurations a walk builds (duplicates included), a bound the others
 * keep far away from but which keeps a walk's counters in 31 bits. */
#define OS_SWEEP_MAX_COMBINATIONS 1000000
#define OS_SWEEP_MAX_NODES 100000
#define OS_SWEEP_MAX_DEPTH 64
#define OS_SWEEP_MAX_NETWORK_LOADS 1000
#define OS_SWEEP_MAX_POLICIES 32
#define OS_SWEEP_MAX_BYTES (4 << 20)
#define OS_SWEEP_MAX_CANDIDATES 0x7fffffffu

/* Parameters of one grid (an operator has fewer). */
#define OS_SWEEP_MAX_PARAMS 24

/* What opsched_sweep_spec_parse fixes and the tests and the fuzzer change
 * (os_sweep_spec_parse_tuned): hash_mask narrows the fingerprints' first
 * hash (all ones), so that tests can make configurations share one; the
 * limits are OS_SWEEP_MAX_COMBINATIONS and OS_SWEEP_MAX_NETWORK_LOADS,
 * which the fuzzer lowers (walking a million combinations takes seconds
 * under its instrumentation, time better spent on other inputs). */
typedef struct os_sweep_tuning {
    uint64_t hash_mask;
    int64_t max_combinations;
    int64_t max_network_loads;
} os_sweep_tuning;

void os_sweep_tuning_default(os_sweep_tuning *t);

typedef struct os_sweep_grid os_sweep_grid;  /* grid.c */
typedef struct os_sweep_nets os_sweep_nets;  /* networks.c */

/* One entry of the spec, parsed once; exactly one of the two is set.
 * Both point into the spec's YAML document, which the spec keeps. */
typedef struct os_sweep_entry {
    os_sweep_grid *grid;
    os_sweep_nets *nets;
} os_sweep_entry;

/* A distinct configuration, as the spec remembers it: 16 bytes, all the
 * memory a configuration costs between walks.  The spec's index holds one
 * per distinct configuration, in the shard split's order. */
typedef struct os_sweep_fp {
    uint64_t hash;          /* os_sweep_hash of its key: the shard order */
    uint32_t check;         /* a second hash of the key, never 0: tells keys of one hash apart */
    unsigned first : 31;    /* the walk's candidate number of its first occurrence */
    unsigned conv : 1;      /* node 0 is a convolution (algorithm policies apply) */
} os_sweep_fp;

struct opsched_sweep_spec {
    opsched_ctx *ctx;       /* borrowed */
    char *origin;           /* file name for messages */
    char *base_dir;         /* relative ONNX paths start here; NULL: the current directory */
    char *text;             /* the spec as read, NUL-terminated */
    yaml_document_t *doc;   /* the parsed document: the entries point into it */
    opsched_measure_options measure;
    char **algos;
    int n_algos;
    os_sweep_entry *entries;
    size_t n_entries, cap_entries;
    os_sweep_tuning tuning; /* the defaults, but in tests and the fuzzer */
    /* The distinct configurations, sorted by (hash, signature, fused): the
     * position of one is its shard rank. */
    os_sweep_fp *index;
    size_t n_configs;
    uint32_t n_candidates;  /* what a walk builds, duplicates included */
    opsched_sweep_counts counts;
};

/* The parser's view of one YAML document; ctx takes the messages (and
 * owns the graphs a walk builds). */
typedef struct os_yaml {
    const opsched_sweep_spec *spec;
    yaml_document_t *doc;
    opsched_ctx *ctx;
} os_yaml;

/* OPSCHED_ERR_INVALID_ARG with "origin:line: message" at node n. */
opsched_status os_sweep_fail(const os_yaml *y, const yaml_node_t *n, const char *fmt, ...)
    OS_PRINTF(3, 4);
/* The same with "origin:line:column: message", column 1-based. */
opsched_status os_sweep_fail_at(const os_yaml *y, const yaml_node_t *n, size_t column,
                                const char *fmt, ...) OS_PRINTF(4, 5);

yaml_node_t *os_yaml_node(const os_yaml *y, int id);
/* The scalar's text, or NULL when n is not a scalar. */
const char *os_yaml_scalar(const yaml_node_t *n);
/* Checks the node is a mapping / sequence / scalar, naming `what` otherwise. */
opsched_status os_yaml_want(const os_yaml *y, const yaml_node_t *n, yaml_node_type_t type,
                            const char *what);
/* An integer scalar in [lo, hi]. */
opsched_status os_yaml_int(const os_yaml *y, const yaml_node_t *n, int64_t lo, int64_t hi,
                           const char *what, int64_t *out);
/* true/false (also yes/no, on/off, 1/0). */
opsched_status os_yaml_bool(const os_yaml *y, const yaml_node_t *n, const char *what, int *out);
/* Node id's value as a list of scalar node ids (no copies): a sequence of
 * scalars (not empty), or one scalar; *ids points into the document or at
 * *one. */
opsched_status os_yaml_list(const os_yaml *y, int id, const char *what, yaml_node_item_t *one,
                            const yaml_node_item_t **ids, int *count);
/* Rejects keys of mapping m not in allowed[] (nor, when top_level, in
 * os_sweep_top_keys) and keys given twice; where names m in messages. */
opsched_status os_yaml_check_keys(const os_yaml *y, const yaml_node_t *m,
                                  const char *const *allowed, size_t n_allowed, int top_level,
                                  const char *where);
/* The node id of key's value in mapping m, or 0 when the key is absent. */
int os_yaml_get(const os_yaml *y, const yaml_node_t *m, const char *key);

/* A convolution and the Relu after it as a two-node graph: node 0 copied
 * from node 0 of conv (a one-node graph), its output read only by a Relu
 * (node 1), which is the graph's output; *out owned by the caller. */
opsched_status os_sweep_fused_graph(opsched_ctx *ctx, const opsched_graph *conv,
                                    opsched_graph **out);

/* Copies every node of src, in order, with its tensors (payloads copied)
 * and outputs, into a new graph on ctx. */
opsched_status os_sweep_copy_graph(opsched_ctx *ctx, const opsched_graph *src, opsched_graph **out);

/* ---- entries ------------------------------------------------------------ */

/* Parses and checks one sweep entry (a mapping with `op:` or `networks:`)
 * without building anything.  At the top level (a spec without `sweeps:`)
 * the entry's mapping also holds the spec's own keys, which the entry then
 * accepts.  *size: the work it asks for (a grid's combinations, a networks
 * entry's network loads).  With out NULL the entry is only checked; else
 * *out is owned by the caller and points into y's document. */
opsched_status os_sweep_grid_parse(const os_yaml *y, const yaml_node_t *entry, int top_level,
                                   os_sweep_grid **out, int64_t *size);
opsched_status os_sweep_nets_parse(const os_yaml *y, const yaml_node_t *entry, int top_level,
                                   os_sweep_nets **out, int64_t *size);
void os_sweep_grid_free(os_sweep_grid *g);
void os_sweep_nets_free(os_sweep_nets *e);

/* Where a walk is within one entry; zeroed at its start. */
typedef struct os_sweep_cursor {
    int idx[OS_SWEEP_MAX_PARAMS];   /* grid: the odometer, the last axis turning fastest */
    int64_t combination;            /* grid: combinations looked at */
    int net, batch, size;           /* networks: the load in hand ... */
    int started;                    /* ... once the first is loaded */
    opsched_graph *graph;           /* networks: the network loaded, owned */
    int node;                       /* networks: the next node of graph */
    unsigned char *runs_fused;      /* networks: graph's Relus folded into a convolution */
    int64_t added;                  /* new configurations of the entry so far (limit:) */
} os_sweep_cursor;

void os_sweep_cursor_clear(os_sweep_cursor *c);

/* The next candidate of an entry: a graph (owned by the caller, on y->ctx)
 * that passed the filters and can be built, or *out NULL when the entry
 * has no more (or its limit: is reached).  What it passes over is added to
 * *counts. */
opsched_status os_sweep_grid_next(const os_yaml *y, const os_sweep_grid *g, os_sweep_cursor *c,
                                  opsched_sweep_counts *counts, opsched_graph **out, int *fused);
opsched_status os_sweep_nets_next(const os_yaml *y, const os_sweep_nets *e, os_sweep_cursor *c,
                                  opsched_sweep_counts *counts, opsched_graph **out, int *fused);

/* ---- the walk ----------------------------------------------------------- */

/* A walk over the spec's configurations, in the spec's order.  The walk of
 * loading (record) builds the spec's index; every other walk looks its
 * candidates up in the index: a duplicate is a candidate whose first
 * occurrence is another, the shard rank is the position in the index. */
typedef struct os_sweep_walk {
    os_yaml y;
    int record;             /* the walk of loading: fills the table */
    size_t entry;
    os_sweep_cursor cur;
    uint32_t candidates;    /* candidates met so far */
    int64_t distinct;       /* distinct configurations met so far */
    opsched_sweep_counts counts;
    /* record: open addressing over the fingerprints met so far */
    os_sweep_fp *table;
    size_t table_size;
    /* The configuration in hand: graph owned until taken. */
    opsched_graph *graph;
    char signature[512];
    int fused;
    int64_t rank;           /* position in the index (not set by record) */
} os_sweep_walk;

/* Starts a walk of spec on ctx (graphs and messages). */
void os_sweep_walk_init(os_sweep_walk *w, const opsched_sweep_spec *spec, opsched_ctx *ctx,
                        int record);
/* The next distinct configuration into w->graph (and its fields), or
 * w->graph NULL at the end.  The previous graph, unless taken, is freed. */
opsched_status os_sweep_walk_next(os_sweep_walk *w);
void os_sweep_walk_free(os_sweep_walk *w);

/* The walk of loading: counts, the index (sorted, ties ordered by
 * signature) into spec.  Run once, when the entries are parsed. */
opsched_status os_sweep_index_build(opsched_sweep_spec *spec);

/* The configurations of shard (of shards) and how many are convolutions,
 * from the index alone. */
void os_sweep_shard_census(const opsched_sweep_spec *spec, int shard, int shards,
                           int64_t *configs, int64_t *convs);

/* Keys of the top level that are not an entry's. */
extern const char *const os_sweep_top_keys[];
extern const size_t os_sweep_n_top_keys;

/* FNV-1a, 64 bits: stable across machines and builds. */
uint64_t os_sweep_hash(const char *s);

/* opsched_sweep_spec_parse with tuning t (copied). */
opsched_status os_sweep_spec_parse_tuned(opsched_ctx *ctx, const char *text, size_t len,
                                         const char *origin, const os_sweep_tuning *t,
                                         opsched_sweep_spec **out);

#endif /* OS_SWEEP_IMPL_H */
