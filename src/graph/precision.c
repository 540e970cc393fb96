/*
 * precision.c - which matrix products keep strict fp32 when TF32 is
 * allowed.
 *
 * TF32 rounds a product's inputs to 10 mantissa bits, a relative error of
 * about 5e-4 per product that later layers pass on roughly linearly.  An
 * attention score product is the exception: the softmax that reads it
 * exponentiates the scores, so an absolute error in a score becomes a
 * relative error in the weights, and in networks whose attention is sharp
 * it grows tens of times per block (measured on transformer exports with
 * bench/exports/layer_errors.py: the softmax multiplied its input's error
 * by up to 30).  Such products run in strict fp32; the scores are a small
 * share of a network's arithmetic.
 */
#include "graph/graph_impl.h"

/* Element-wise or data-movement nodes a score passes through on its way
 * to the softmax: scaling, masks and biases, reshapes. */
static int passes_score(const opsched_node *n)
{
    switch (n->op) {
    case OPSCHED_OP_ADD:
    case OPSCHED_OP_SUB:
    case OPSCHED_OP_MUL:
    case OPSCHED_OP_DIV:
    case OPSCHED_OP_BINARY:
    case OPSCHED_OP_WHERE:
    case OPSCHED_OP_CLIP:
    case OPSCHED_OP_CAST:
    case OPSCHED_OP_RESHAPE:
    case OPSCHED_OP_FLATTEN:
    case OPSCHED_OP_TRANSPOSE:
    case OPSCHED_OP_EXPAND:
    case OPSCHED_OP_IDENTITY:
    case OPSCHED_OP_DROPOUT:
    case OPSCHED_OP_SLICE:
        return 1;
    default:
        return 0;
    }
}

static int reaches_softmax(const opsched_graph *g, int t, int from, int depth)
{
    int left = opsched_graph_num_consumers(g, t);
    for (int j = from + 1; j < opsched_graph_num_nodes(g) && left > 0; j++) {
        const opsched_node *c = opsched_graph_node(g, j);
        int reads = 0;
        for (int k = 0; k < c->n_inputs; k++)
            if (c->inputs[k] == t) reads = 1;
        if (!reads) continue;
        left--;
        if (c->op == OPSCHED_OP_SOFTMAX || c->op == OPSCHED_OP_LOGSOFTMAX) return 1;
        if (depth > 0 && passes_score(c))
            for (int o = 0; o < c->n_outputs; o++)
                if (c->outputs[o] >= 0 && reaches_softmax(g, c->outputs[o], j, depth - 1)) return 1;
    }
    return 0;
}

int opsched_product_feeds_softmax(const opsched_graph *g, int node)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || (n->op != OPSCHED_OP_MATMUL && n->op != OPSCHED_OP_GEMM) || n->n_outputs != 1)
        return 0;
    return reaches_softmax(g, n->outputs[0], node, 6);
}
