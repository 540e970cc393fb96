/*
 * precision.c - which matrix products keep strict fp32 when TF32 is
 * allowed: the two products of an attention.
 *
 * TF32 rounds a product's inputs to 10 mantissa bits, a relative error of
 * about 5e-4 per product that later layers pass on roughly linearly.  The
 * products around an attention softmax are the exception.  The softmax
 * exponentiates the scores, so an absolute error in a score becomes a
 * relative error in the weights, and in networks whose attention is sharp
 * (measured on transformer exports with bench/exports/layer_errors.py) the
 * softmax multiplied its input's error by up to 30; the product after it
 * weighs V by those weights.  PyTorch's scaled_dot_product_attention keeps
 * both products in fp32 for fp32 inputs, whatever TF32 allows, so an
 * exported MatMul-Softmax-MatMul does the same here.  Both products are
 * activation by activation and a small share of a network's arithmetic.
 */
#include "graph/graph_impl.h"

/* Element-wise or data-movement nodes a score or a weight passes through
 * between a product and the softmax: scaling, masks and biases, reshapes. */
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

static int is_softmax(const opsched_node *n)
{
    return n->op == OPSCHED_OP_SOFTMAX || n->op == OPSCHED_OP_LOGSOFTMAX;
}

/* 1 when tensor t (produced by node `from`) reaches a softmax through at
 * most `depth` passing nodes. */
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
        if (is_softmax(c)) return 1;
        if (depth > 0 && passes_score(c))
            for (int o = 0; o < c->n_outputs; o++)
                if (c->outputs[o] >= 0 && reaches_softmax(g, c->outputs[o], j, depth - 1)) return 1;
    }
    return 0;
}

/* 1 when tensor t comes from a softmax through at most `depth` passing
 * nodes, along their first operand. */
static int from_softmax(const opsched_graph *g, int t, int depth)
{
    const opsched_tensor *x = t >= 0 ? opsched_graph_tensor(g, t) : NULL;
    const opsched_node *p = x && x->producer >= 0 ? opsched_graph_node(g, x->producer) : NULL;
    if (!p) return 0;
    if (is_softmax(p)) return 1;
    return depth > 0 && passes_score(p) && p->n_inputs > 0 && from_softmax(g, p->inputs[0], depth - 1);
}

int opsched_product_is_attention(const opsched_graph *g, int node)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || n->op != OPSCHED_OP_MATMUL || n->n_inputs != 2 || n->n_outputs != 1) return 0;
    if (reaches_softmax(g, n->outputs[0], node, 6)) return 1;
    return from_softmax(g, n->inputs[0], 6) || from_softmax(g, n->inputs[1], 6);
}
