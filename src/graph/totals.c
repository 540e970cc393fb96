/*
 * totals.c - graph-wide sums and the peak activation memory of a
 * sequential run.
 *
 * The memory model: nodes run in graph order; a node's outputs are
 * allocated before it runs and its inputs are released after it, once no
 * later node (and no graph output) needs them.  View nodes (Reshape,
 * Flatten, Identity, Dropout) alias their input and allocate nothing.
 * Graph inputs are live from the start; weights and constants are counted
 * separately (weight_bytes), not as activations.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "graph/graph_impl.h"

static int64_t bytes_of(const opsched_tensor *t)
{
    return opsched_shape_numel(&t->shape) * (int64_t)opsched_dtype_size(t->dtype);
}

/* Sums that saturate instead of overflowing (graphs of huge FLOP counts). */
static void add_sat(int64_t *acc, int64_t v)
{
    if (v > 0 && *acc > INT64_MAX - v)
        *acc = INT64_MAX;
    else
        *acc += v;
}

opsched_status opsched_graph_totals_compute(const opsched_graph *g, opsched_graph_totals *out)
{
    if (!g || !out) return OPSCHED_ERR_INVALID_ARG;
    memset(out, 0, sizeof(*out));
    size_t nt = g->n_tensors;
    int *root = malloc(sizeof(int) * (nt ? nt : 1));
    int *last = malloc(sizeof(int) * (nt ? nt : 1));
    if (!root || !last) {
        free(root);
        free(last);
        return OS_NOMEM(g->ctx);
    }
    for (size_t t = 0; t < nt; t++) {
        root[t] = (int)t;
        last[t] = -1;
        const opsched_tensor *ts = &g->tensors[t];
        if (ts->kind == OPSCHED_TENSOR_WEIGHT) {
            add_sat(&out->params, opsched_shape_numel(&ts->shape));
            add_sat(&out->weight_bytes, bytes_of(ts));
        } else if (ts->kind == OPSCHED_TENSOR_CONSTANT) {
            add_sat(&out->weight_bytes, bytes_of(ts));
        }
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        const opsched_node *n = &g->nodes[i];
        add_sat(&out->flops, n->cost.flops);
        add_sat(&out->bytes_read, n->cost.bytes_read);
        add_sat(&out->bytes_written, n->cost.bytes_written);
        out->n_nodes++;
        if (!opsched_op_is_view(n->op)) out->n_compute_nodes++;
        if (opsched_op_is_view(n->op) && n->inputs[0] >= 0) root[n->outputs[0]] = root[n->inputs[0]];
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t >= 0 && last[root[t]] < (int)i) last[root[t]] = (int)i;
        }
    }
    for (size_t i = 0; i < g->n_outputs; i++) last[root[g->outputs[i]]] = (int)g->n_nodes;

    int64_t live = 0, peak = 0;
    for (size_t i = 0; i < g->n_inputs; i++) live += bytes_of(&g->tensors[g->inputs[i]]);
    peak = live;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const opsched_node *n = &g->nodes[i];
        if (!opsched_op_is_view(n->op)) {
            for (int k = 0; k < n->n_outputs; k++) live += bytes_of(&g->tensors[n->outputs[k]]);
        }
        if (live > peak) peak = live;
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t < 0) continue;
            const opsched_tensor *ts = &g->tensors[root[t]];
            if (ts->kind != OPSCHED_TENSOR_INPUT && ts->kind != OPSCHED_TENSOR_ACTIVATION)
                continue;
            if (last[root[t]] == (int)i) {
                live -= bytes_of(ts);
                last[root[t]] = -2; /* released; a second read in this node must not free again */
            }
        }
        /* Outputs nobody reads are released at once. */
        for (int k = 0; k < n->n_outputs; k++) {
            int t = n->outputs[k];
            if (root[t] == t && last[t] == -1 && !opsched_op_is_view(n->op))
                live -= bytes_of(&g->tensors[t]);
        }
    }
    out->peak_activation_bytes = peak;
    free(root);
    free(last);
    return OPSCHED_OK;
}
