/*
 * graphs.c - the small graphs a sweep measures: copies made on a worker's
 * own context (contexts are per thread), and a convolution with the Relu
 * after it, measured as the one fused launch a network runs.
 */
#include <stdio.h>
#include <string.h>

#include "sweep/sweep_impl.h"

#define MAX_IO 64

/* The id of src tensor t in g, adding it (with its payload) when no node
 * of g produces it yet. */
static opsched_status map_tensor(opsched_graph *g, const opsched_graph *src, int t, int *out)
{
    const opsched_tensor *x = opsched_graph_tensor(src, t);
    *out = -1;
    if (!x) return OPSCHED_OK;
    if (opsched_graph_find_tensor(g, x->name, out) == OPSCHED_OK) return OPSCHED_OK;
    opsched_ctx_clear_error(opsched_graph_ctx(g));
    OS_TRY(opsched_graph_add_tensor(g, x->name, x->kind, x->dtype, &x->shape, out));
    if (x->data) OS_TRY(opsched_graph_set_data(g, *out, x->data, x->data_bytes));
    return OPSCHED_OK;
}

/* Appends node i of src to g; its output ids into outs. */
static opsched_status copy_node(opsched_graph *g, const opsched_graph *src, int i, int *outs)
{
    const opsched_node *n = opsched_graph_node(src, i);
    int ins[MAX_IO];
    const char *out_names[MAX_IO];
    if (n->n_inputs > MAX_IO || n->n_outputs > MAX_IO)
        return OS_FAIL(opsched_graph_ctx(g), OPSCHED_ERR_UNSUPPORTED,
                       "node '%s': too many inputs or outputs", n->name);
    for (int k = 0; k < n->n_inputs; k++) OS_TRY(map_tensor(g, src, n->inputs[k], &ins[k]));
    for (int k = 0; k < n->n_outputs; k++)
        out_names[k] = opsched_graph_tensor(src, n->outputs[k])->name;
    return opsched_graph_add_node(g, n->name, n->op, &n->attr, ins, n->n_inputs, n->n_outputs,
                                  out_names, outs);
}

opsched_status os_sweep_copy_graph(opsched_ctx *ctx, const opsched_graph *src, opsched_graph **out)
{
    opsched_graph *g = NULL;
    opsched_status st;
    int outs[MAX_IO];
    *out = NULL;
    OS_TRY(opsched_graph_create(ctx, opsched_graph_name(src), &g));
    for (int i = 0; i < opsched_graph_num_nodes(src); i++)
        OS_TRY_GOTO(st, copy_node(g, src, i, outs), fail);
    for (int i = 0; i < opsched_graph_num_outputs(src); i++) {
        const opsched_tensor *t = opsched_graph_tensor(src, opsched_graph_output(src, i));
        int id = -1;
        OS_TRY_GOTO(st, opsched_graph_find_tensor(g, t->name, &id), fail);
        OS_TRY_GOTO(st, opsched_graph_mark_output(g, id), fail);
    }
    *out = g;
    return OPSCHED_OK;
fail:
    opsched_graph_free(g);
    return st;
}

opsched_status os_sweep_fused_graph(opsched_ctx *ctx, const opsched_graph *conv,
                                    opsched_graph **out)
{
    opsched_graph *g = NULL;
    opsched_status st;
    int y = -1, r = -1;
    *out = NULL;
    const opsched_node *n = opsched_graph_node(conv, 0);
    if (!n || n->op != OPSCHED_OP_CONV || n->n_outputs != 1)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "a fused configuration needs a convolution");
    OS_TRY(opsched_graph_create(ctx, opsched_graph_name(conv), &g));
    /* The convolution's output is not a graph output: only then does a
     * backend fold the Relu into it. */
    OS_TRY_GOTO(st, copy_node(g, conv, 0, &y), fail);
    OS_TRY_GOTO(st, opsched_build_unary(g, "fused_relu", OPSCHED_OP_RELU, NULL, y, &r), fail);
    OS_TRY_GOTO(st, opsched_graph_mark_output(g, r), fail);
    *out = g;
    return OPSCHED_OK;
fail:
    opsched_graph_free(g);
    return st;
}
