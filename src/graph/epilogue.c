/*
 * epilogue.c - which activation a convolution runs as its epilogue.
 *
 * One rule for everyone: a backend fuses only what this says, and the
 * executor, the searchers' units, sweeps of a network's layers and the
 * predictor's composition take the same node as absorbed, so all of them
 * see the same launches.
 */
#include "graph/graph_impl.h"

int opsched_op_is_epilogue(const opsched_node *n)
{
    if (!n || n->n_inputs != 1 || n->n_outputs != 1) return 0;
    switch (n->op) {
    case OPSCHED_OP_RELU:
    case OPSCHED_OP_CLIP:
    case OPSCHED_OP_SIGMOID:
    case OPSCHED_OP_TANH:
    case OPSCHED_OP_GELU:
    case OPSCHED_OP_HARDSIGMOID:
    case OPSCHED_OP_HARDSWISH:
        return 1;
    case OPSCHED_OP_UNARY:
        switch (n->attr.unary.fn) {
        case OPSCHED_UNARY_LEAKY_RELU:
        case OPSCHED_UNARY_ELU:
        case OPSCHED_UNARY_SOFTPLUS:
        case OPSCHED_UNARY_SWISH:
        case OPSCHED_UNARY_MISH:
            return 1;
        default:
            return 0;
        }
    default:
        return 0;
    }
}

int os_graph_sole_reader(const opsched_graph *g, int t, int from)
{
    if (opsched_graph_num_consumers(g, t) != 1 || os_graph_is_output(g, t)) return -1;
    for (int j = from + 1; j < opsched_graph_num_nodes(g); j++) {
        const opsched_node *c = opsched_graph_node(g, j);
        for (int k = 0; k < c->n_inputs; k++)
            if (c->inputs[k] == t) return j;
    }
    return -1;
}

int opsched_conv_epilogue(const opsched_graph *g, int node)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || n->op != OPSCHED_OP_CONV || n->n_outputs != 1) return -1;
    int y = n->outputs[0];
    int j = os_graph_sole_reader(g, y, node);
    if (j < 0) return -1;
    const opsched_node *c = opsched_graph_node(g, j);
    if (!opsched_op_is_epilogue(c)) return -1;
    const opsched_tensor *ty = opsched_graph_tensor(g, y);
    const opsched_tensor *tz = opsched_graph_tensor(g, c->outputs[0]);
    return ty && tz && ty->dtype == tz->dtype ? j : -1;
}

int opsched_epilogue_same(const opsched_node *a, const opsched_node *b)
{
    if (!opsched_op_is_epilogue(a) || !opsched_op_is_epilogue(b) || a->op != b->op) return 0;
    switch (a->op) {
    case OPSCHED_OP_CLIP:
        return a->attr.clip.min == b->attr.clip.min && a->attr.clip.max == b->attr.clip.max;
    case OPSCHED_OP_GELU:
        return a->attr.gelu.tanh_approx == b->attr.gelu.tanh_approx;
    case OPSCHED_OP_HARDSIGMOID:
        return a->attr.hardsigmoid.alpha == b->attr.hardsigmoid.alpha &&
               a->attr.hardsigmoid.beta == b->attr.hardsigmoid.beta;
    case OPSCHED_OP_UNARY:
        return a->attr.unary.fn == b->attr.unary.fn && a->attr.unary.alpha == b->attr.unary.alpha &&
               a->attr.unary.beta == b->attr.unary.beta &&
               a->attr.unary.gamma == b->attr.unary.gamma;
    default:
        return 1;
    }
}

int opsched_conv_residual_find(const opsched_graph *g, int node, opsched_conv_residual *out)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || n->op != OPSCHED_OP_CONV || n->n_outputs != 1) return 0;
    int y = n->outputs[0];
    int a = os_graph_sole_reader(g, y, node);
    if (a < 0) return 0;
    const opsched_node *add = opsched_graph_node(g, a);
    if (add->op != OPSCHED_OP_ADD || add->n_inputs != 2 || add->n_outputs != 1) return 0;
    int r = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
    if (r < 0 || r == y) return 0;
    const opsched_tensor *ty = opsched_graph_tensor(g, y), *tr = opsched_graph_tensor(g, r),
                         *tz = opsched_graph_tensor(g, add->outputs[0]);
    if (!ty || !tr || !tz || tr->dtype != ty->dtype || tz->dtype != ty->dtype ||
        !opsched_shape_equal(&tr->shape, &ty->shape) || !opsched_shape_equal(&tz->shape, &ty->shape))
        return 0;
    int act = os_graph_sole_reader(g, add->outputs[0], a);
    if (act >= 0) {
        const opsched_node *c = opsched_graph_node(g, act);
        const opsched_tensor *tc = opsched_graph_tensor(g, c->outputs[0]);
        if (!opsched_op_is_epilogue(c) || c->inputs[0] != add->outputs[0] || !tc ||
            tc->dtype != ty->dtype)
            act = -1;
    }
    if (out) {
        out->add = a;
        out->residual = r;
        out->act = act;
    }
    return 1;
}

