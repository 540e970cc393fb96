/*
 * rewrite.c - operator patterns that exporters spell in several nodes,
 * rewritten as the one operator they compute.
 *
 * PyTorch writes SiLU as x * Sigmoid(x) before opset 22 has nothing better,
 * GELU as its erf or tanh formula in five to nine nodes, HardSwish as
 * x * HardSigmoid(x).  Each node is a launch and a round trip through
 * memory; the single operator is one kernel (and one a convolution can
 * take as its epilogue).  The rewrite works on the graph, so everything
 * downstream (the executor, profiles, sweeps, the predictor, schedules)
 * sees the same nodes.
 *
 * A pattern is matched at its last node, a Mul.  Its factors are collected
 * through Muls whose output nothing else reads (so x * 0.5 * a and
 * (x * a) * 0.5 are the same product), then compared with the pattern's.
 * Every node the pattern swallows must have its output read by the pattern
 * alone and not be a graph output; constants match within a relative 1e-4
 * (exporters round sqrt(2) and friends to float).  Float tensors only.
 * Nodes are visited in order, so a rewritten node is never swallowed by a
 * later pattern.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/half.h"
#include "graph/graph_impl.h"

#define MAX_FACTORS 4
#define MAX_MEMBERS 12

typedef struct matcher {
    const opsched_graph *g;
    const int *claimed;        /* per node: 1 when already part of a rewrite */
    int members[MAX_MEMBERS];  /* nodes the current match swallows */
    int n_members;
} matcher;

typedef struct rewrite {
    opsched_op_kind op;
    opsched_op_attr attr;
    int input;                 /* old tensor id */
} rewrite;

static int is_float(opsched_dtype d)
{
    return d == OPSCHED_F32 || d == OPSCHED_F16 || d == OPSCHED_BF16;
}

static const opsched_node *producer(const matcher *m, int t)
{
    if (t < 0 || (size_t)t >= m->g->n_tensors) return NULL;
    int p = m->g->tensors[t].producer;
    if (p < 0 || m->claimed[p]) return NULL;
    return &m->g->nodes[p];
}

int os_graph_is_output(const opsched_graph *g, int t)
{
    for (size_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == t) return 1;
    return 0;
}

/* The node producing t, of kind op, when the pattern may swallow it: t read
 * once (by the pattern) and not a graph output.  Records it as a member. */
static const opsched_node *inner(matcher *m, int t, opsched_op_kind op)
{
    const opsched_node *n = producer(m, t);
    if (!n || n->op != op || n->n_outputs != 1 || m->g->n_consumers[t] != 1 ||
        os_graph_is_output(m->g, t) || m->n_members >= MAX_MEMBERS)
        return NULL;
    m->members[m->n_members++] = (int)(n - m->g->nodes);
    return n;
}

/* The value of a one-element float constant (any rank). */
static int scalar(const opsched_graph *g, int t, double *v)
{
    if (t < 0 || (size_t)t >= g->n_tensors) return 0;
    const opsched_tensor *x = &g->tensors[t];
    if (!x->data || x->producer >= 0 || opsched_shape_numel(&x->shape) != 1) return 0;
    switch (x->dtype) {
    case OPSCHED_F32: {
        float f;
        memcpy(&f, x->data, sizeof(f));
        *v = f;
        return 1;
    }
    case OPSCHED_F16:
    case OPSCHED_BF16: {
        uint16_t h;
        memcpy(&h, x->data, sizeof(h));
        *v = x->dtype == OPSCHED_F16 ? os_f16_to_f32(h) : os_bf16_to_f32(h);
        return 1;
    }
    default: return 0;
    }
}

static int near(double v, double want)
{
    return fabs(v - want) <= 1e-4 * fabs(want);
}

static int is_scalar(const opsched_graph *g, int t, double want)
{
    double v;
    return scalar(g, t, &v) && near(v, want);
}

/* For a binary node with a scalar constant c on one side: the other input,
 * or -1 when neither side is the constant. */
static int other_than(const opsched_graph *g, const opsched_node *n, double c)
{
    if (is_scalar(g, n->inputs[1], c)) return n->inputs[0];
    if (is_scalar(g, n->inputs[0], c)) return n->inputs[1];
    return -1;
}

/* The factors of the product t: through Muls the pattern may swallow.  *n
 * ends above MAX_FACTORS when there are more than a pattern has. */
static void factors(matcher *m, int t, int is_root, int *f, int *n, int depth)
{
    const opsched_node *p = NULL;
    if (is_root) {
        p = producer(m, t);
    } else if (depth < 3) {
        const opsched_node *q = producer(m, t);
        if (q && q->op == OPSCHED_OP_MUL && q->n_inputs == 2) p = inner(m, t, OPSCHED_OP_MUL);
    }
    if (p) {
        factors(m, p->inputs[0], 0, f, n, depth + 1);
        factors(m, p->inputs[1], 0, f, n, depth + 1);
        return;
    }
    if (*n <= MAX_FACTORS) f[(*n)++] = t;
}

/* 1 + g(z): the Add's tensor a, with g the unary kind op; z through *z. */
static int one_plus(matcher *m, int a, opsched_op_kind op, int *z)
{
    const opsched_node *add = inner(m, a, OPSCHED_OP_ADD);
    if (!add || add->n_inputs != 2) return 0;
    int e = other_than(m->g, add, 1.0);
    const opsched_node *u = e >= 0 ? inner(m, e, op) : NULL;
    if (!u) return 0;
    *z = u->inputs[0];
    return 1;
}

/* x / sqrt(2) or x * (1 / sqrt(2)): x. */
static int over_sqrt2(matcher *m, int z)
{
    const opsched_node *d = producer(m, z);
    if (d && d->op == OPSCHED_OP_DIV && d->n_inputs == 2 && inner(m, z, OPSCHED_OP_DIV))
        return is_scalar(m->g, d->inputs[1], sqrt(2.0)) ? d->inputs[0] : -1;
    if (d && d->op == OPSCHED_OP_MUL && d->n_inputs == 2 && inner(m, z, OPSCHED_OP_MUL))
        return other_than(m->g, d, 1.0 / sqrt(2.0));
    return -1;
}

/* x^3 as Pow(x, 3), x * (x * x) or (x * x) * x: x. */
static int cube(matcher *m, int p)
{
    const opsched_node *n = producer(m, p);
    if (!n || n->n_inputs != 2) return -1;
    if (n->op == OPSCHED_OP_POW && inner(m, p, OPSCHED_OP_POW))
        return is_scalar(m->g, n->inputs[1], 3.0) ? n->inputs[0] : -1;
    if (n->op != OPSCHED_OP_MUL || !inner(m, p, OPSCHED_OP_MUL)) return -1;
    for (int side = 0; side < 2; side++) {
        int x = n->inputs[side], sq = n->inputs[1 - side];
        const opsched_node *s = inner(m, sq, OPSCHED_OP_MUL);
        if (s && s->n_inputs == 2 && s->inputs[0] == x && s->inputs[1] == x) return x;
        if (s) m->n_members--;
    }
    return -1;
}

/* sqrt(2/pi) * (x + 0.044715 * x^3): x. */
static int tanh_arg(matcher *m, int u)
{
    const opsched_node *mul = inner(m, u, OPSCHED_OP_MUL);
    if (!mul || mul->n_inputs != 2) return -1;
    int v = other_than(m->g, mul, 0.7978845608028654 /* sqrt(2 / pi) */);
    const opsched_node *add = v >= 0 ? inner(m, v, OPSCHED_OP_ADD) : NULL;
    if (!add || add->n_inputs != 2) return -1;
    for (int side = 0; side < 2; side++) {
        int x = add->inputs[side], w = add->inputs[1 - side];
        const opsched_node *k = producer(m, w);
        if (!k || k->op != OPSCHED_OP_MUL || k->n_inputs != 2) continue;
        int saved = m->n_members;
        if (!inner(m, w, OPSCHED_OP_MUL)) continue;
        int p = other_than(m->g, k, 0.044715);
        if (p >= 0 && cube(m, p) == x) return x;
        m->n_members = saved;
    }
    return -1;
}

/* Tries every pattern whose last node is Mul node i. */
static int match(matcher *m, int i, rewrite *r)
{
    const opsched_graph *g = m->g;
    const opsched_node *n = &g->nodes[i];
    if (n->op != OPSCHED_OP_MUL || n->n_inputs != 2 || n->n_outputs != 1) return 0;
    int y = n->outputs[0];
    if (!is_float(g->tensors[y].dtype)) return 0;
    int f[MAX_FACTORS + 1], nf = 0;
    m->n_members = 0;
    factors(m, y, 1, f, &nf, 0);
    if (nf > MAX_FACTORS) return 0;
    int base = m->n_members;
    memset(r, 0, sizeof(*r));
    if (nf == 2) {
        for (int s = 0; s < 2; s++) {
            int x = f[s], other = f[1 - s];
            m->n_members = base;
            const opsched_node *sg = producer(m, other);
            if (!sg) continue;
            if (sg->op == OPSCHED_OP_SIGMOID && sg->inputs[0] == x &&
                inner(m, other, OPSCHED_OP_SIGMOID)) {
                r->op = OPSCHED_OP_UNARY;
                r->attr.unary.fn = OPSCHED_UNARY_SWISH;
                r->attr.unary.alpha = 1.0f;
                r->input = x;
                return 1;
            }
            if (sg->op == OPSCHED_OP_HARDSIGMOID && sg->inputs[0] == x &&
                near(sg->attr.hardsigmoid.alpha, 1.0 / 6.0) &&
                near(sg->attr.hardsigmoid.beta, 0.5) &&
                inner(m, other, OPSCHED_OP_HARDSIGMOID)) {
                r->op = OPSCHED_OP_HARDSWISH;
                r->input = x;
                return 1;
            }
        }
        return 0;
    }
    if (nf != 3) return 0;
    /* 0.5 * x * (1 + Erf(x / sqrt 2)) or 0.5 * x * (1 + Tanh(...)), in any order. */
    int half = -1;
    for (int k = 0; k < 3; k++)
        if (is_scalar(g, f[k], 0.5)) half = k;
    if (half < 0) return 0;
    int a = f[(half + 1) % 3], b = f[(half + 2) % 3];
    for (int s = 0; s < 2; s++) {
        int x = s ? b : a, sum = s ? a : b, z = -1;
        m->n_members = base;
        if (one_plus(m, sum, OPSCHED_OP_ERF, &z) && over_sqrt2(m, z) == x) {
            r->op = OPSCHED_OP_GELU;
            r->input = x;
            return 1;
        }
        m->n_members = base;
        if (one_plus(m, sum, OPSCHED_OP_TANH, &z) && tanh_arg(m, z) == x) {
            r->op = OPSCHED_OP_GELU;
            r->attr.gelu.tanh_approx = 1;
            r->input = x;
            return 1;
        }
    }
    return 0;
}

/* Builds the rewritten graph: the same tensors without producers (in id
 * order, so inputs keep theirs; payloads borrowed until the caller moves
 * them), then the nodes in order, each swallowed node left out and each
 * pattern's last node replaced. */
static opsched_status rebuild(const opsched_graph *g, const int *drop, const rewrite *rw,
                              const int *has_rw, int *map, opsched_graph **out)
{
    opsched_graph *ng = NULL;
    opsched_status st;
    OS_TRY(opsched_graph_create(g->ctx, g->name, &ng));
    for (size_t t = 0; t < g->n_tensors; t++) {
        const opsched_tensor *x = &g->tensors[t];
        map[t] = -1;
        if (x->producer >= 0) continue;
        OS_TRY_GOTO(st, opsched_graph_add_tensor(ng, x->name, x->kind, x->dtype, &x->shape,
                                                 &map[t]),
                    fail);
        ng->tensors[map[t]].layout = x->layout;
        ng->tensors[map[t]].data = x->data; /* borrowed */
        ng->tensors[map[t]].data_bytes = x->data_bytes;
    }
    int ins[64], outs[64];
    const char *names[64];
    for (size_t i = 0; i < g->n_nodes; i++) {
        const opsched_node *n = &g->nodes[i];
        if (drop[i]) continue;
        if (n->n_inputs > 64 || n->n_outputs > 64) {
            st = OS_FAIL(g->ctx, OPSCHED_ERR_UNSUPPORTED, "node '%s': too many inputs or outputs",
                         n->name);
            goto fail;
        }
        for (int k = 0; k < n->n_outputs; k++)
            names[k] = g->tensors[n->outputs[k]].name;
        if (has_rw[i]) {
            int x = map[rw[i].input];
            OS_TRY_GOTO(st, opsched_graph_add_node(ng, n->name, rw[i].op, &rw[i].attr, &x, 1, 1,
                                                   names, outs),
                        fail);
        } else {
            for (int k = 0; k < n->n_inputs; k++)
                ins[k] = n->inputs[k] < 0 ? -1 : map[n->inputs[k]];
            OS_TRY_GOTO(st, opsched_graph_add_node(ng, n->name, n->op, &n->attr, ins,
                                                   n->n_inputs, n->n_outputs, names, outs),
                        fail);
        }
        for (int k = 0; k < n->n_outputs; k++) {
            map[n->outputs[k]] = outs[k];
            ng->tensors[outs[k]].layout = g->tensors[n->outputs[k]].layout;
        }
    }
    for (size_t i = 0; i < g->n_outputs; i++)
        OS_TRY_GOTO(st, opsched_graph_mark_output(ng, map[g->outputs[i]]), fail);
    *out = ng;
    return OPSCHED_OK;
fail:
    for (size_t t = 0; t < ng->n_tensors; t++)
        if (ng->tensors[t].producer < 0) ng->tensors[t].data = NULL;
    opsched_graph_free(ng);
    return st;
}

opsched_status opsched_graph_rewrite_patterns(opsched_graph **gp, int *n_rewritten)
{
    if (n_rewritten) *n_rewritten = 0;
    if (!gp || !*gp) return OPSCHED_ERR_INVALID_ARG;
    opsched_graph *g = *gp;
    size_t nn = g->n_nodes;
    int *claimed = calloc(nn + 1, sizeof(int));
    int *has_rw = calloc(nn + 1, sizeof(int));
    int *map = malloc((g->n_tensors + 1) * sizeof(int));
    rewrite *rw = calloc(nn + 1, sizeof(*rw));
    opsched_status st = OPSCHED_OK;
    int count = 0;
    if (!claimed || !has_rw || !map || !rw) {
        st = OS_NOMEM(g->ctx);
        goto done;
    }
    matcher m = {.g = g, .claimed = claimed};
    for (size_t i = 0; i < nn; i++) {
        if (claimed[i] || !match(&m, (int)i, &rw[i])) continue;
        has_rw[i] = 1;
        claimed[i] = 1;
        for (int k = 0; k < m.n_members; k++)
            claimed[m.members[k]] = 2; /* swallowed */
        count++;
    }
    if (count == 0) goto done;
    for (size_t i = 0; i < nn; i++)
        claimed[i] = claimed[i] == 2;
    opsched_graph *ng = NULL;
    OS_TRY_GOTO(st, rebuild(g, claimed, rw, has_rw, map, &ng), done);
    /* The payloads move to the new graph. */
    for (size_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].producer < 0) g->tensors[t].data = NULL;
    opsched_graph_free(g);
    *gp = ng;
    if (n_rewritten) *n_rewritten = count;
done:
    free(claimed);
    free(has_rw);
    free(map);
    free(rw);
    return st;
}
