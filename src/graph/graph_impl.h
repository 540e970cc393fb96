/*
 * graph_impl.h - what the graph module's files share: the graph's storage
 * and the shape-inference entry point.
 */
#ifndef OS_GRAPH_IMPL_H
#define OS_GRAPH_IMPL_H

#include "opsched/graph.h"

/* The most elements one tensor may have. */
#define OS_MAX_ELEMS ((int64_t)1 << 40)

struct opsched_graph {
    opsched_ctx *ctx;
    char *name;
    opsched_tensor *tensors;   /* names and payloads owned through these */
    size_t n_tensors, cap_tensors;
    int *n_consumers;          /* parallel to tensors */
    size_t cap_consumers;
    opsched_node *nodes;       /* inputs/outputs arrays owned per node */
    size_t n_nodes, cap_nodes;
    int *inputs;
    size_t n_inputs, cap_inputs;
    int *outputs;
    size_t n_outputs, cap_outputs;
    int *hash;                 /* open addressing on names; -1 empty */
    size_t hash_cap;
};

/* Checks the inputs of a node about to be added, fills the output shapes
 * and dtypes (n_out entries) and the node's cost.  May normalise attr
 * (defaults, negative axes).  Errors name the node. */
opsched_status os_infer(opsched_graph *g, const char *name, opsched_op_kind op,
                        opsched_op_attr *attr, const int *inputs, int n_in, int n_out,
                        opsched_shape *out_shapes, opsched_dtype *out_dtypes,
                        opsched_cost *cost);

/* Broadcasts a and b numpy-style; 0 if they cannot be. */
int os_broadcast(const opsched_shape *a, const opsched_shape *b, opsched_shape *out);
/* 1 when tensor t is one of the graph's outputs. */
int os_graph_is_output(const opsched_graph *g, int t);
/* The only reader of tensor t among the nodes after `from`, or -1 (none,
 * or t is read more than once or is a graph output). */
int os_graph_sole_reader(const opsched_graph *g, int t, int from);

#endif /* OS_GRAPH_IMPL_H */
