/*
 * se.c - the squeeze-and-excitation gate as one launch.
 *
 * SE blocks (MobileNetV3, EfficientNet, RegNetY, and the channel attention
 * of many later networks) compute a gate per channel from the global mean
 * of a feature map: s = act2(W2 act1(W1 mean_hw(x) + b1) + b2), then
 * multiply x by s.  Run node by node, the gate is a pooling launch and two
 * convolutions on 1 x 1 maps, each a launch of almost no work; together
 * they are one reduction followed by two matrix-vector products, which one
 * launch does.  The multiply by x after it (`mul`) reads the whole map; a
 * backend may run it in the gate's launch too, where it runs the gate's
 * last layer on many blocks (CUDA's split gates).
 */
#include "graph/graph_impl.h"

static int is_const(const opsched_graph *g, int t)
{
    const opsched_tensor *x = t >= 0 ? opsched_graph_tensor(g, t) : NULL;
    return x && (x->kind == OPSCHED_TENSOR_WEIGHT || x->kind == OPSCHED_TENSOR_CONSTANT);
}

/* A convolution that is a dense layer on [N, C, 1, 1]: 1 x 1 kernel, unit
 * stride and dilation, no padding, one group, constant weights and bias,
 * every tensor of one float type. */
static int is_dense(const opsched_graph *g, const opsched_node *n, int64_t cin, int64_t *cout)
{
    if (!n || n->op != OPSCHED_OP_CONV || n->n_outputs != 1 || n->n_inputs < 2 || n->n_inputs > 3)
        return 0;
    const opsched_conv_attr *c = &n->attr.conv;
    if (c->kernel[0] != 1 || c->kernel[1] != 1 || c->stride[0] != 1 || c->stride[1] != 1 ||
        c->dilation[0] != 1 || c->dilation[1] != 1 || c->groups != 1 || c->depth.kernel != 0)
        return 0;
    for (int k = 0; k < 4; k++)
        if (c->pads[k] != 0) return 0;
    const opsched_tensor *x = opsched_graph_tensor(g, n->inputs[0]);
    const opsched_tensor *w = opsched_graph_tensor(g, n->inputs[1]);
    const opsched_tensor *y = opsched_graph_tensor(g, n->outputs[0]);
    if (!x || !w || !y || x->shape.ndim != 4 || w->shape.ndim != 4 || !is_const(g, n->inputs[1]))
        return 0;
    if (x->shape.d[1] != cin || x->shape.d[2] != 1 || x->shape.d[3] != 1 || w->shape.d[1] != cin)
        return 0;
    if (w->dtype != x->dtype || y->dtype != x->dtype) return 0;
    if (n->n_inputs == 3 && n->inputs[2] >= 0) {
        const opsched_tensor *b = opsched_graph_tensor(g, n->inputs[2]);
        if (!b || !is_const(g, n->inputs[2]) || b->dtype != x->dtype ||
            opsched_shape_numel(&b->shape) != w->shape.d[0])
            return 0;
    }
    *cout = w->shape.d[0];
    return 1;
}

/* The epilogue activation that is t's only reader (after node `from`), or -1. */
static int activation_after(const opsched_graph *g, int t, int from)
{
    int j = os_graph_sole_reader(g, t, from);
    const opsched_node *a = j >= 0 ? opsched_graph_node(g, j) : NULL;
    return a && opsched_op_is_epilogue(a) && a->n_inputs == 1 && a->n_outputs == 1 ? j : -1;
}

static int is_spatial_mean(const opsched_node *n, const opsched_tensor *x)
{
    if (n->op == OPSCHED_OP_GLOBALAVGPOOL) return 1;
    if (n->op != OPSCHED_OP_REDUCEMEAN || !n->attr.reduce.keepdims || n->attr.reduce.n_axes != 2)
        return 0;
    int64_t a0 = n->attr.reduce.axes[0], a1 = n->attr.reduce.axes[1];
    (void)x;
    return (a0 == 2 && a1 == 3) || (a0 == 3 && a1 == 2);
}

int opsched_se_gate_find(const opsched_graph *g, int node, opsched_se_gate *out)
{
    const opsched_node *h = opsched_graph_node(g, node);
    if (!h || h->n_outputs != 1 || h->n_inputs < 1) return 0;
    const opsched_tensor *x = opsched_graph_tensor(g, h->inputs[0]);
    const opsched_tensor *p = opsched_graph_tensor(g, h->outputs[0]);
    if (!x || !p || x->shape.ndim != 4 || p->dtype != x->dtype || !is_spatial_mean(h, x)) return 0;
    if (x->dtype != OPSCHED_F32 && x->dtype != OPSCHED_F16 && x->dtype != OPSCHED_BF16) return 0;
    int64_t c = x->shape.d[1], hidden = 0, c2 = 0;
    opsched_se_gate s;
    s.pool = node;
    s.fc1 = os_graph_sole_reader(g, h->outputs[0], node);
    if (s.fc1 < 0 || !is_dense(g, opsched_graph_node(g, s.fc1), c, &hidden)) return 0;
    int t = opsched_graph_node(g, s.fc1)->outputs[0];
    s.act1 = activation_after(g, t, s.fc1);
    int after = s.act1 >= 0 ? s.act1 : s.fc1;
    if (s.act1 >= 0) t = opsched_graph_node(g, s.act1)->outputs[0];
    s.fc2 = os_graph_sole_reader(g, t, after);
    if (s.fc2 < 0 || !is_dense(g, opsched_graph_node(g, s.fc2), hidden, &c2) || c2 != c) return 0;
    t = opsched_graph_node(g, s.fc2)->outputs[0];
    s.act2 = activation_after(g, t, s.fc2);
    s.gate = s.act2 >= 0 ? opsched_graph_node(g, s.act2)->outputs[0] : t;
    s.hidden = hidden;
    const opsched_node *f1 = opsched_graph_node(g, s.fc1), *f2 = opsched_graph_node(g, s.fc2);
    s.sides[0] = f1->inputs[1];
    s.sides[1] = f1->n_inputs == 3 ? f1->inputs[2] : -1;
    s.sides[2] = f2->inputs[1];
    s.sides[3] = f2->n_inputs == 3 ? f2->inputs[2] : -1;
    s.mul = os_graph_sole_reader(g, s.gate, s.act2 >= 0 ? s.act2 : s.fc2);
    const opsched_node *mn = s.mul >= 0 ? opsched_graph_node(g, s.mul) : NULL;
    const opsched_tensor *mt = mn && mn->n_outputs == 1 ? opsched_graph_tensor(g, mn->outputs[0])
                                                        : NULL;
    if (!mn || mn->op != OPSCHED_OP_MUL || mn->n_inputs != 2 ||
        !((mn->inputs[0] == h->inputs[0] && mn->inputs[1] == s.gate) ||
          (mn->inputs[1] == h->inputs[0] && mn->inputs[0] == s.gate)) ||
        !mt || mt->dtype != x->dtype || !opsched_shape_equal(&mt->shape, &x->shape))
        s.mul = -1;
    s.n = 0;
    s.nodes[s.n++] = s.pool;
    s.nodes[s.n++] = s.fc1;
    if (s.act1 >= 0) s.nodes[s.n++] = s.act1;
    s.nodes[s.n++] = s.fc2;
    if (s.act2 >= 0) s.nodes[s.n++] = s.act2;
    if (out) *out = s;
    return 1;
}

int opsched_conv_gate_find(const opsched_graph *g, int node, opsched_conv_gate *out)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || n->op != OPSCHED_OP_CONV || n->n_inputs < 2 || n->n_inputs > 3 ||
        n->n_outputs != 1 || n->inputs[0] < 0)
        return 0;
    const opsched_conv_attr *c = &n->attr.conv;
    if (c->kernel[0] != 1 || c->kernel[1] != 1 || c->stride[0] != 1 || c->stride[1] != 1 ||
        c->dilation[0] != 1 || c->dilation[1] != 1 || c->groups != 1 || c->depth.kernel != 0 ||
        !is_const(g, n->inputs[1]))
        return 0;
    for (int k = 0; k < 4; k++)
        if (c->pads[k] != 0) return 0;
    const opsched_tensor *y = opsched_graph_tensor(g, n->inputs[0]);
    if (!y || y->shape.ndim != 4 || y->producer < 0) return 0;
    int m = y->producer;
    const opsched_node *mn = opsched_graph_node(g, m);
    if (!mn || mn->op != OPSCHED_OP_MUL || mn->n_inputs != 2 || mn->n_outputs != 1 ||
        os_graph_sole_reader(g, n->inputs[0], m) != node)
        return 0;
    for (int k = 0; k < 2; k++) {
        const opsched_tensor *x = opsched_graph_tensor(g, mn->inputs[k]);
        const opsched_tensor *s = opsched_graph_tensor(g, mn->inputs[1 - k]);
        if (!x || !s || !opsched_shape_equal(&x->shape, &y->shape) || s->shape.ndim != 4 ||
            s->shape.d[0] != y->shape.d[0] || s->shape.d[1] != y->shape.d[1] ||
            s->shape.d[2] != 1 || s->shape.d[3] != 1 || x->dtype != y->dtype ||
            s->dtype != y->dtype || is_const(g, mn->inputs[1 - k]))
            continue;
        if (y->dtype != OPSCHED_F32 && y->dtype != OPSCHED_F16 && y->dtype != OPSCHED_BF16)
            return 0;
        if (out) {
            out->mul = m;
            out->x = mn->inputs[k];
            out->scale = mn->inputs[1 - k];
        }
        return 1;
    }
    return 0;
}
