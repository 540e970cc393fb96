/*
 * sweep_impl.h - what the files of the sweep module share: the spec object,
 * its configurations, and the YAML walking helpers that turn every problem
 * into "file:line: message".
 *
 * spec.c reads the file and the top level, grid.c expands `op:` entries,
 * networks.c expands `networks:` entries, run.c measures.
 */
#ifndef OS_SWEEP_IMPL_H
#define OS_SWEEP_IMPL_H

#include <yaml.h>

#include "core/error.h"
#include "opsched/sweep.h"

/* Bounds on the work a spec may ask for, so that no spec exhausts memory
 * or time (docs/SWEEP.md states them).  Combinations: of one grid, and of
 * all grids of the spec together, before filters apply, counted before any
 * is built.  Configurations: distinct ones kept (each holds a graph).
 * Nodes: of the YAML document once its aliases are expanded, and its
 * nesting depth.  Network loads: networks x batches x sizes over all
 * networks entries.  Policies: algorithm policies of measure: algo.
 * Bytes: of the spec's text, checked before libyaml reads it. */
#define OS_SWEEP_MAX_COMBINATIONS 1000000
#define OS_SWEEP_MAX_CONFIGS 100000
#define OS_SWEEP_MAX_NODES 100000
#define OS_SWEEP_MAX_DEPTH 64
#define OS_SWEEP_MAX_NETWORK_LOADS 1000
#define OS_SWEEP_MAX_POLICIES 32
#define OS_SWEEP_MAX_BYTES (4 << 20)

typedef struct os_sweep_config {
    opsched_graph *graph;   /* node 0, owned; fused: node 1 is the Relu reading it */
    char *signature;        /* owned */
    uint64_t hash;          /* of the signature: the shard split */
    int64_t flops;          /* the longest-first order of the run */
    int shard_rank;         /* position in (hash, signature) order */
    int fused;              /* 1: a convolution measured with the Relu after it fused in */
} os_sweep_config;

struct opsched_sweep_spec {
    opsched_ctx *ctx;       /* borrowed */
    char *origin;           /* file name for messages */
    char *base_dir;         /* relative ONNX paths start here; NULL: the current directory */
    char *text;             /* the spec as read, NUL-terminated */
    opsched_measure_options measure;
    char **algos;
    int n_algos;
    os_sweep_config *configs;
    size_t n_configs, cap_configs;
    size_t *table;          /* open addressing over configs by hash: index + 1, 0 empty */
    size_t table_size;
    opsched_sweep_counts counts;
};

/* The parser's view of one YAML document. */
typedef struct os_yaml {
    opsched_sweep_spec *spec;
    yaml_document_t *doc;
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

/* Adds the configuration of node 0 of g (taken: the spec owns it from here,
 * also on failure) unless its signature is already there with the same
 * fusion (then g is freed and *added is 0).  fused: g's node 1 is a Relu
 * that is the only reader of node 0, a convolution, and the two are
 * measured as one fused launch (the executor's rule). */
opsched_status os_sweep_add_config(opsched_sweep_spec *spec, opsched_graph *g, int fused,
                                   int *added);

/* A convolution and the Relu after it as a two-node graph: node 0 copied
 * from node 0 of conv (a one-node graph), its output read only by a Relu
 * (node 1), which is the graph's output; *out owned by the caller. */
opsched_status os_sweep_fused_graph(opsched_ctx *ctx, const opsched_graph *conv,
                                    opsched_graph **out);

/* Copies every node of src, in order, with its tensors (payloads copied)
 * and outputs, into a new graph on ctx. */
opsched_status os_sweep_copy_graph(opsched_ctx *ctx, const opsched_graph *src, opsched_graph **out);

/* Expands one sweep entry (a mapping with `op:` or `networks:`).  At the
 * top level (a spec without `sweeps:`) the entry's mapping also holds the
 * spec's own keys, which the entry then accepts.  With size non-NULL the
 * entry is only checked and *size set to the work it asks for, nothing
 * built: a grid's combinations, a networks entry's network loads. */
opsched_status os_sweep_grid(const os_yaml *y, const yaml_node_t *entry, int top_level,
                             int64_t *size);
opsched_status os_sweep_networks(const os_yaml *y, const yaml_node_t *entry, int top_level,
                                 int64_t *size);

/* Keys of the top level that are not an entry's. */
extern const char *const os_sweep_top_keys[];
extern const size_t os_sweep_n_top_keys;

/* FNV-1a, 64 bits: stable across machines and builds. */
uint64_t os_sweep_hash(const char *s);

#endif /* OS_SWEEP_IMPL_H */
