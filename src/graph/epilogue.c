/*
 * epilogue.c - which activation a convolution (or a batch normalisation)
 * runs as its epilogue.
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
    return n && n->op == OPSCHED_OP_CONV ? opsched_node_epilogue(g, node) : -1;
}

int opsched_node_epilogue(const opsched_graph *g, int node)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n ||
        (n->op != OPSCHED_OP_CONV && n->op != OPSCHED_OP_BATCHNORM && n->op != OPSCHED_OP_GEMM) ||
        n->n_outputs != 1)
        return -1;
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

/* The residual Add that reader j of the bias sum makes, into m: the Add
 * itself, or one after a Transpose that j is (the Add the Transpose's
 * only reader).  Leaves m as it is when there is none. */
static void residual_after(const opsched_graph *g, const opsched_tensor *y, int sum, int j,
                           opsched_matmul_bias *m)
{
    const opsched_node *an = j >= 0 ? opsched_graph_node(g, j) : NULL;
    int tr = -1;
    if (an && an->op == OPSCHED_OP_TRANSPOSE && an->n_inputs == 1 && an->n_outputs == 1) {
        tr = j;
        sum = an->outputs[0];
        j = os_graph_sole_reader(g, sum, j);
        an = j >= 0 ? opsched_graph_node(g, j) : NULL;
    }
    if (!an || an->op != OPSCHED_OP_ADD || an->n_inputs != 2 || an->inputs[0] == an->inputs[1])
        return;
    /* the other operand has the sum's shape and type */
    int r = an->inputs[0] == sum ? an->inputs[1] : an->inputs[0];
    const opsched_tensor *rt = opsched_graph_tensor(g, r);
    const opsched_tensor *st = opsched_graph_tensor(g, sum);
    const opsched_tensor *s = opsched_graph_tensor(g, an->outputs[0]);
    if (!rt || !st || !s || rt->dtype != y->dtype || !opsched_shape_equal(&rt->shape, &st->shape) ||
        !opsched_shape_equal(&s->shape, &st->shape))
        return;
    m->res_add = j;
    m->residual = r;
    m->tr = tr;
}

int opsched_matmul_bias_find(const opsched_graph *g, int node, opsched_matmul_bias *out)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || n->op != OPSCHED_OP_MATMUL || n->n_inputs != 2 || n->n_outputs != 1) return 0;
    const opsched_tensor *y = opsched_graph_tensor(g, n->outputs[0]);
    if (!y || y->shape.ndim < 2 ||
        (y->dtype != OPSCHED_F32 && y->dtype != OPSCHED_F16 && y->dtype != OPSCHED_BF16))
        return 0;
    int a = os_graph_sole_reader(g, n->outputs[0], node);
    const opsched_node *add = a >= 0 ? opsched_graph_node(g, a) : NULL;
    if (!add || add->op != OPSCHED_OP_ADD || add->n_inputs != 2) return 0;
    if (add->inputs[0] == add->inputs[1]) return 0;
    int b = add->inputs[0] == n->outputs[0] ? add->inputs[1] : add->inputs[0];
    const opsched_tensor *bt = opsched_graph_tensor(g, b);
    if (!bt || (bt->kind != OPSCHED_TENSOR_WEIGHT && bt->kind != OPSCHED_TENSOR_CONSTANT) ||
        bt->dtype != y->dtype)
        return 0;
    /* [N] or [1, ..., 1, N]: one value per output column, no wider than y */
    int64_t cols = y->shape.d[y->shape.ndim - 1];
    if (bt->shape.ndim < 1 || bt->shape.ndim > y->shape.ndim ||
        bt->shape.d[bt->shape.ndim - 1] != cols || opsched_shape_numel(&bt->shape) != cols)
        return 0;
    const opsched_tensor *z = opsched_graph_tensor(g, add->outputs[0]);
    if (!z || !opsched_shape_equal(&z->shape, &y->shape)) return 0;
    int act = os_graph_sole_reader(g, add->outputs[0], a);
    const opsched_node *an = act >= 0 ? opsched_graph_node(g, act) : NULL;
    opsched_matmul_bias m = {
        .add = a, .bias = b, .act = -1, .res_add = -1, .residual = -1, .tr = -1};
    if (an && opsched_op_is_epilogue(an) && an->n_inputs == 1)
        m.act = act;
    else
        residual_after(g, y, add->outputs[0], act, &m);
    if (out) *out = m;
    return 1;
}

int opsched_norm_concat(const opsched_graph *g, int node)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || n->op != OPSCHED_OP_BATCHNORM || n->n_outputs != 1 || n->n_inputs < 5) return -1;
    const opsched_tensor *x = opsched_graph_tensor(g, n->inputs[0]);
    int c = x ? x->producer : -1;
    const opsched_node *cn = c >= 0 ? opsched_graph_node(g, c) : NULL;
    if (!cn || cn->op != OPSCHED_OP_CONCAT || cn->n_outputs != 1 || cn->n_inputs < 2 ||
        cn->n_inputs > OPSCHED_NORM_MAX_CONCAT || x->shape.ndim != 4 ||
        os_graph_sole_reader(g, n->inputs[0], c) != node)
        return -1;
    int axis = (int)cn->attr.axis.axis;
    if (axis < 0) axis += 4;
    if (axis != 1) return -1;
    for (int k = 0; k < cn->n_inputs; k++) {
        const opsched_tensor *t = cn->inputs[k] >= 0 ? opsched_graph_tensor(g, cn->inputs[k]) : NULL;
        if (!t || t->dtype != x->dtype || t->shape.ndim != 4 || t->shape.d[1] < 1) return -1;
        for (int d = 0; d < 4; d++)
            if (d != 1 && t->shape.d[d] != x->shape.d[d]) return -1;
    }
    return c;
}

int opsched_conv_norm_find(const opsched_graph *g, int node, opsched_conv_norm *out)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || n->op != OPSCHED_OP_CONV || n->n_outputs != 1) return 0;
    const opsched_tensor *y = opsched_graph_tensor(g, n->outputs[0]);
    if (!y || y->shape.ndim != 4 ||
        (y->dtype != OPSCHED_F32 && y->dtype != OPSCHED_F16 && y->dtype != OPSCHED_BF16))
        return 0;
    int t = os_graph_sole_reader(g, n->outputs[0], node);
    const opsched_node *tn = t >= 0 ? opsched_graph_node(g, t) : NULL;
    static const int64_t last[4] = {0, 2, 3, 1};
    if (!tn || tn->op != OPSCHED_OP_TRANSPOSE || tn->n_inputs != 1 || tn->n_outputs != 1 ||
        tn->attr.transpose.n != 4)
        return 0;
    for (int d = 0; d < 4; d++)
        if (tn->attr.transpose.perm[d] != last[d]) return 0;
    int l = os_graph_sole_reader(g, tn->outputs[0], t);
    const opsched_node *ln = l >= 0 ? opsched_graph_node(g, l) : NULL;
    if (!ln || ln->op != OPSCHED_OP_LAYERNORM || ln->n_outputs != 1 || ln->n_inputs < 2 ||
        ln->inputs[0] != tn->outputs[0] || ln->attr.layernorm.axis != 3)
        return 0;
    const opsched_tensor *z = opsched_graph_tensor(g, ln->outputs[0]);
    int64_t c = y->shape.d[1];
    if (!z || z->dtype != y->dtype) return 0;
    for (int k = 1; k < ln->n_inputs && k < 3; k++) {
        const opsched_tensor *p = ln->inputs[k] >= 0 ? opsched_graph_tensor(g, ln->inputs[k]) : NULL;
        if (k == 1 && !p) return 0;
        if (p && (p->dtype != y->dtype || p->shape.ndim < 1 || opsched_shape_numel(&p->shape) != c ||
                  p->shape.d[p->shape.ndim - 1] != c))
            return 0;
    }
    if (out) {
        out->tr = t;
        out->norm = l;
        out->scale = ln->inputs[1];
        out->bias = ln->n_inputs > 2 ? ln->inputs[2] : -1;
    }
    return 1;
}

int opsched_conv_prologue_find(const opsched_graph *g, int node, opsched_conv_prologue *out)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || n->op != OPSCHED_OP_CONV || n->n_inputs < 2 || n->n_outputs != 1 || n->inputs[0] < 0)
        return 0;
    const opsched_tensor *x = opsched_graph_tensor(g, n->inputs[0]);
    int a = x ? x->producer : -1;
    const opsched_node *an = a >= 0 ? opsched_graph_node(g, a) : NULL;
    if (!an || !opsched_op_is_epilogue(an) || an->outputs[0] != n->inputs[0] ||
        os_graph_sole_reader(g, n->inputs[0], a) != node)
        return 0;
    const opsched_tensor *y = an->inputs[0] >= 0 ? opsched_graph_tensor(g, an->inputs[0]) : NULL;
    int p = y ? y->producer : -1;
    if (p < 0 || opsched_conv_epilogue(g, p) != a) return 0;
    if (out) {
        out->act = a;
        out->producer = p;
    }
    return 1;
}
