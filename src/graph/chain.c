/*
 * chain.c - chains of element-wise nodes that run as one launch.
 *
 * A chain starts at an element-wise node and goes on through each node
 * that is the only reader of the previous one's output, as long as that
 * node is element-wise too, keeps the head's output shape (a side operand
 * may broadcast into it, the running value never grows) and reads the
 * running value as its first operand, or as either operand of a
 * commutative function.  Every intermediate value lives only in registers:
 * a backend that runs the chain reads the head's operands and each later
 * node's other operand and writes the last node's output once.  The
 * executor asks for it (opsched_plan_options.fuse_chain) and passes the
 * side operands after the head's own inputs, in chain order.
 */
#include "graph/graph_impl.h"

static int is_float(opsched_dtype t)
{
    return t == OPSCHED_F32 || t == OPSCHED_F16 || t == OPSCHED_BF16;
}

int opsched_op_is_chainable(const opsched_graph *g, const opsched_node *n)
{
    if (!n || n->n_outputs != 1 || n->n_inputs < 1 || n->n_inputs > 2) return 0;
    int unary = opsched_op_is_epilogue(n) || n->op == OPSCHED_OP_ERF || n->op == OPSCHED_OP_SQRT;
    /* the float Unary functions (not IsNaN, IsInf, Not, BitwiseNot) */
    if (n->op == OPSCHED_OP_UNARY)
        unary = n->attr.unary.fn != OPSCHED_UNARY_ISNAN && n->attr.unary.fn != OPSCHED_UNARY_ISINF &&
                n->attr.unary.fn != OPSCHED_UNARY_NOT && n->attr.unary.fn != OPSCHED_UNARY_BITWISE_NOT;
    int binary = (n->op >= OPSCHED_OP_ADD && n->op <= OPSCHED_OP_POW) ||
                 (n->op == OPSCHED_OP_BINARY &&
                  (n->attr.binary.fn == OPSCHED_BINARY_MIN || n->attr.binary.fn == OPSCHED_BINARY_MAX ||
                   n->attr.binary.fn == OPSCHED_BINARY_PRELU));
    if (!(unary && n->n_inputs == 1) && !(binary && n->n_inputs == 2)) return 0;
    const opsched_tensor *y = opsched_graph_tensor(g, n->outputs[0]);
    if (!y || !is_float(y->dtype)) return 0;
    for (int k = 0; k < n->n_inputs; k++) {
        const opsched_tensor *x = n->inputs[k] >= 0 ? opsched_graph_tensor(g, n->inputs[k]) : NULL;
        if (!x || x->dtype != y->dtype) return 0;
    }
    return 1;
}

static int commutative(const opsched_node *n)
{
    return n->op == OPSCHED_OP_ADD || n->op == OPSCHED_OP_MUL ||
           (n->op == OPSCHED_OP_BINARY &&
            (n->attr.binary.fn == OPSCHED_BINARY_MIN || n->attr.binary.fn == OPSCHED_BINARY_MAX));
}

int opsched_ew_chain_find(const opsched_graph *g, int node, opsched_ew_chain *out)
{
    const opsched_node *h = opsched_graph_node(g, node);
    if (!opsched_op_is_chainable(g, h)) return 0;
    const opsched_tensor *hy = opsched_graph_tensor(g, h->outputs[0]);
    opsched_ew_chain c;
    c.n = 1;
    c.nodes[0] = node;
    c.running_second[0] = 0;
    int last = node, sides = 0;
    while (c.n < OPSCHED_CHAIN_MAX) {
        int t = opsched_graph_node(g, last)->outputs[0];
        int j = os_graph_sole_reader(g, t, last);
        if (j < 0) break;
        const opsched_node *n = opsched_graph_node(g, j);
        if (!opsched_op_is_chainable(g, n)) break;
        const opsched_tensor *y = opsched_graph_tensor(g, n->outputs[0]);
        if (!opsched_shape_equal(&y->shape, &hy->shape) || y->dtype != hy->dtype) break;
        int second = 0;
        if (n->n_inputs == 2) {
            if (n->inputs[0] == t && n->inputs[1] == t) break; /* x op x: no side operand */
            second = n->inputs[1] == t;
            if (second && !commutative(n)) break;
            if (sides == OPSCHED_CHAIN_MAX - 2) break;
            sides++;
        }
        c.running_second[c.n] = second;
        c.nodes[c.n++] = j;
        last = j;
    }
    if (c.n < 2) return 0;
    if (out) *out = c;
    return 1;
}

int opsched_ew_chain_sides(const opsched_graph *g, const opsched_ew_chain *c, int *sides)
{
    int k = 0;
    for (int i = 1; i < c->n; i++) {
        const opsched_node *n = opsched_graph_node(g, c->nodes[i]);
        if (n->n_inputs == 2) sides[k++] = n->inputs[c->running_second[i] ? 0 : 1];
    }
    return k;
}
