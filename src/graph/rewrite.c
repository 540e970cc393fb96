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
#define MAX_MEMBERS 24

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
    int inputs[4];             /* old tensor ids (-1: omitted) when n_inputs > 0 */
    int n_inputs;              /* 0: the one input is `input` */
    char name[256];            /* "" keeps the last node's name */
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

/* ---- attention -------------------------------------------------------- */

/* For t made by a Mul or Div by a scalar constant that the pattern may
 * swallow: multiplies *scale by its factor and returns the other operand;
 * -1 otherwise (nothing recorded). */
static int scalar_step(matcher *m, int t, double *scale)
{
    const opsched_graph *g = m->g;
    const opsched_node *p = producer(m, t);
    if (!p || p->n_outputs != 1 || p->n_inputs != 2 ||
        (p->op != OPSCHED_OP_MUL && p->op != OPSCHED_OP_DIV))
        return -1;
    double v;
    int other = -1;
    if (scalar(g, p->inputs[1], &v)) other = p->inputs[0];
    else if (p->op == OPSCHED_OP_MUL && scalar(g, p->inputs[0], &v)) other = p->inputs[1];
    if (other < 0 || !opsched_shape_equal(&g->tensors[other].shape, &g->tensors[t].shape) ||
        (p->op == OPSCHED_OP_DIV && v == 0.0) || !inner(m, t, p->op))
        return -1;
    *scale *= p->op == OPSCHED_OP_DIV ? 1.0 / v : v;
    return other;
}

/* Through the Dropouts and Identities (inference views) that make t and
 * that the pattern may swallow: the tensor they view. */
static int skip_views(matcher *m, int t)
{
    for (int step = 0; step < 4; step++) {
        const opsched_node *p = producer(m, t);
        if (!p || p->n_inputs < 1 || p->n_outputs != 1 ||
            (p->op != OPSCHED_OP_DROPOUT && p->op != OPSCHED_OP_IDENTITY) ||
            !inner(m, t, p->op))
            break;
        t = p->inputs[0];
    }
    return t;
}

/* Follows operand t of a product back through the Transposes (and, when
 * scale is not NULL, the Muls and Divs by a scalar constant) that the
 * pattern may swallow, moving axes (canonical dim -> axis of t) to the
 * axes of the tensor reached, which it returns. */
static int operand(matcher *m, int t, int8_t axes[4], double *scale)
{
    const opsched_graph *g = m->g;
    for (int step = 0; step < 6; step++) {
        t = skip_views(m, t);
        const opsched_node *p = producer(m, t);
        if (!p || p->n_outputs != 1) break;
        if (p->op == OPSCHED_OP_TRANSPOSE && p->n_inputs == 1 &&
            p->attr.transpose.n == g->tensors[t].shape.ndim) {
            if (!inner(m, t, OPSCHED_OP_TRANSPOSE)) break;
            for (int c = 0; c < 4; c++)
                if (axes[c] >= 0) axes[c] = (int8_t)p->attr.transpose.perm[axes[c]];
            t = p->inputs[0];
            continue;
        }
        int next = scale ? scalar_step(m, t, scale) : -1;
        if (next < 0) break;
        t = next;
    }
    return t;
}

/* Canonical axes of a product operand of rank r: [.., rows, cols] with
 * rank 4 as [B, H, rows, cols] and rank 3 as [H, rows, cols]; `swap` when
 * the tensor holds the canonical dims 2 and 3 the other way round. */
static void product_axes(int r, int swap, int8_t axes[4])
{
    axes[0] = (int8_t)(r == 4 ? 0 : -1);
    axes[1] = (int8_t)(r - 3);
    axes[2] = (int8_t)(swap ? r - 1 : r - 2);
    axes[3] = (int8_t)(swap ? r - 2 : r - 1);
}

/* Scaled dot-product attention ending at MatMul i (scores times V), or at
 * the Transpose that is its output's only reader. */
static int match_attention(matcher *m, int i, rewrite *r, int *anchor)
{
    const opsched_graph *g = m->g;
    const opsched_node *pv = &g->nodes[i];
    if (pv->op != OPSCHED_OP_MATMUL || pv->n_inputs != 2 || pv->n_outputs != 1) return 0;
    int o = pv->outputs[0];
    opsched_dtype dt = g->tensors[o].dtype;
    int rank = g->tensors[o].shape.ndim;
    if (!is_float(dt) || (rank != 3 && rank != 4)) return 0;
    m->n_members = 0;
    memset(r, 0, sizeof(*r));
    opsched_attention_attr *at = &r->attr.attention;
    /* the probabilities: Softmax, or Where(IsNaN(p), 0, p) of it */
    int p = skip_views(m, pv->inputs[0]);
    const opsched_node *wn = producer(m, p);
    if (wn && wn->op == OPSCHED_OP_WHERE && wn->n_inputs == 3 && is_scalar(g, wn->inputs[1], 0.0)) {
        const opsched_node *isn = producer(m, wn->inputs[0]);
        int sm = wn->inputs[2];
        /* p is read by exactly the IsNaN and the Where */
        if (!isn || isn->op != OPSCHED_OP_UNARY || isn->attr.unary.fn != OPSCHED_UNARY_ISNAN ||
            isn->inputs[0] != sm || g->n_consumers[sm] != 2 || os_graph_is_output(g, sm) ||
            !inner(m, p, OPSCHED_OP_WHERE) ||
            !inner(m, wn->inputs[0], OPSCHED_OP_UNARY))
            return 0;
        const opsched_node *sn = producer(m, sm);
        if (!sn || sn->op != OPSCHED_OP_SOFTMAX || m->n_members >= MAX_MEMBERS) return 0;
        m->members[m->n_members++] = (int)(sn - g->nodes);
        at->nan_rows_zero = 1;
        p = sm;
    } else if (!inner(m, p, OPSCHED_OP_SOFTMAX)) {
        return 0;
    }
    const opsched_node *smn = &g->nodes[g->tensors[p].producer];
    if (smn->op != OPSCHED_OP_SOFTMAX) return 0;
    int64_t ax = smn->attr.axis.axis;
    if (ax != -1 && ax != g->tensors[p].shape.ndim - 1) return 0;
    if (g->tensors[p].shape.ndim != rank) return 0;
    /* back from the scores: scalar Muls and Divs and at most one Add */
    int s = smn->inputs[0], bias = -1;
    double scale = 1.0;
    for (int step = 0; step < 6; step++) {
        const opsched_node *q = producer(m, s);
        if (!q || q->n_outputs != 1 || q->n_inputs != 2) return 0;
        if (q->op == OPSCHED_OP_MATMUL) break;
        if (q->op == OPSCHED_OP_ADD && bias < 0) {
            int side = -1;
            for (int k = 0; k < 2 && side < 0; k++) {
                const opsched_node *c = producer(m, q->inputs[k]);
                if (c && (c->op == OPSCHED_OP_MATMUL || c->op == OPSCHED_OP_MUL ||
                          c->op == OPSCHED_OP_DIV) &&
                    opsched_shape_equal(&g->tensors[q->inputs[k]].shape, &g->tensors[s].shape))
                    side = k;
            }
            if (side < 0 || q->inputs[0] == q->inputs[1] || !inner(m, s, OPSCHED_OP_ADD)) return 0;
            bias = q->inputs[1 - side];
            s = q->inputs[side];
            continue;
        }
        s = scalar_step(m, s, &scale);
        if (s < 0) return 0;
    }
    const opsched_node *qk = producer(m, s);
    if (!qk || qk->op != OPSCHED_OP_MATMUL || !inner(m, s, OPSCHED_OP_MATMUL)) return 0;
    if (g->tensors[qk->inputs[0]].shape.ndim != rank ||
        g->tensors[qk->inputs[1]].shape.ndim != rank || g->tensors[pv->inputs[1]].shape.ndim != rank)
        return 0;
    int8_t axq[4], axk[4], axv[4], axo[4];
    product_axes(rank, 0, axq);
    product_axes(rank, 1, axk); /* the product reads K^T */
    product_axes(rank, 0, axv);
    product_axes(rank, 0, axo);
    int q = operand(m, qk->inputs[0], axq, &scale);
    int k = operand(m, qk->inputs[1], axk, &scale);
    int v = operand(m, pv->inputs[1], axv, NULL);
    /* the output: the product, or the Transpose that only reads it */
    *anchor = i;
    int y = o;
    int tr = os_graph_sole_reader(g, o, i);
    if (tr >= 0 && !m->claimed[tr] && g->nodes[tr].op == OPSCHED_OP_TRANSPOSE &&
        g->nodes[tr].n_outputs == 1 && g->nodes[tr].attr.transpose.n == rank &&
        m->n_members < MAX_MEMBERS) {
        const opsched_transpose_attr *tp = &g->nodes[tr].attr.transpose;
        int8_t moved[4];
        for (int c = 0; c < 4; c++) {
            moved[c] = -1;
            for (int a = 0; a < rank && axo[c] >= 0; a++)
                if (tp->perm[a] == axo[c]) moved[c] = (int8_t)a;
        }
        memcpy(axo, moved, sizeof(axo));
        m->members[m->n_members++] = i;
        *anchor = tr;
        y = g->nodes[tr].outputs[0];
    }
    /* the bias: right-aligned against the scores */
    int8_t axb[4] = {-1, -1, -1, -1};
    if (bias >= 0) {
        int rb = g->tensors[bias].shape.ndim;
        if (rb > rank) return 0;
        int8_t axs[4];
        product_axes(rank, 0, axs);
        for (int c = 0; c < 4; c++)
            axb[c] = (int8_t)(axs[c] >= 0 && axs[c] - (rank - rb) >= 0 ? axs[c] - (rank - rb) : -1);
    }
    int xs[4] = {q, k, v, bias};
    for (int x = 0; x < 4; x++)
        if (xs[x] >= 0 && g->tensors[xs[x]].dtype != dt) return 0;
    if (!isfinite(scale) || scale == 0.0) return 0;
    r->op = OPSCHED_OP_ATTENTION;
    at->scale = (float)scale;
    at->out_rank = g->tensors[y].shape.ndim;
    memcpy(at->axes[OPSCHED_ATT_Q], axq, 4);
    memcpy(at->axes[OPSCHED_ATT_K], axk, 4);
    memcpy(at->axes[OPSCHED_ATT_V], axv, 4);
    memcpy(at->axes[OPSCHED_ATT_BIAS], axb, 4);
    memcpy(at->axes[OPSCHED_ATT_O], axo, 4);
    r->n_inputs = bias >= 0 ? 4 : 3;
    memcpy(r->inputs, xs, sizeof(xs));
    /* The node must infer to what the pattern computed (a shape the walk
     * got wrong, or a broadcast the kernel does not take, leaves it). */
    opsched_shape out;
    opsched_dtype odt;
    opsched_cost cost;
    memset(&cost, 0, sizeof(cost));
    opsched_op_attr chk = r->attr;
    if (os_infer((opsched_graph *)g, "attention", OPSCHED_OP_ATTENTION, &chk, r->inputs,
                 r->n_inputs, 1, &out, &odt, &cost) != OPSCHED_OK ||
        !opsched_shape_equal(&out, &g->tensors[y].shape) || odt != g->tensors[y].dtype)
        return 0;
    /* named after its Softmax: ".../Softmax" -> ".../Attention" */
    const char *sn = smn->name ? smn->name : "";
    size_t len = strlen(sn);
    if (len >= 7 && strcmp(sn + len - 7, "Softmax") == 0)
        snprintf(r->name, sizeof(r->name), "%.*sAttention", (int)(len - 7), sn);
    else
        snprintf(r->name, sizeof(r->name), "%s/Attention", sn);
    return 1;
}

/* ---- common subexpressions ------------------------------------------------ */

typedef struct node_key {
    uint64_t hash;
    int node;
} node_key;

static int key_cmp(const void *a, const void *b)
{
    const node_key *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* A small constant (exporters write the same 0 or -inf once per layer):
 * compared by value, not by tensor. */
#define SMALL_CONST_BYTES 256

static const opsched_tensor *small_const(const opsched_graph *g, int t)
{
    if (t < 0) return NULL;
    const opsched_tensor *x = &g->tensors[t];
    return x->producer < 0 && x->data && x->data_bytes <= SMALL_CONST_BYTES &&
                   x->kind == OPSCHED_TENSOR_CONSTANT
               ? x
               : NULL;
}

static int same_input(const opsched_graph *g, int a, int b)
{
    if (a == b) return 1;
    const opsched_tensor *x = small_const(g, a), *y = small_const(g, b);
    return x && y && x->dtype == y->dtype && opsched_shape_equal(&x->shape, &y->shape) &&
           x->data_bytes == y->data_bytes && memcmp(x->data, y->data, x->data_bytes) == 0;
}

static uint64_t node_hash(const opsched_graph *g, const opsched_node *n)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)n->op;
    for (int k = 0; k < n->n_inputs; k++) {
        const opsched_tensor *c = small_const(g, n->inputs[k]);
        uint64_t v = (uint64_t)(uint32_t)n->inputs[k];
        if (c) {
            const unsigned char *p = c->data;
            v = 0x9e3779b97f4a7c15ull ^ (uint64_t)c->dtype;
            for (size_t i = 0; i < c->data_bytes; i++)
                v = (v ^ p[i]) * 1099511628211ull;
        }
        h = (h ^ v) * 1099511628211ull;
    }
    return (h ^ (uint64_t)n->n_outputs) * 1099511628211ull;
}

/* 1 when nodes a and b compute the same: the same operator, attributes
 * (byte for byte) and inputs (small constants by value), and b's outputs
 * are no graph outputs. */
static int same_node(const opsched_graph *g, const opsched_node *a, const opsched_node *b)
{
    if (a->op != b->op || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs ||
        a->n_inputs == 0 || memcmp(&a->attr, &b->attr, sizeof(a->attr)) != 0)
        return 0;
    for (int k = 0; k < a->n_inputs; k++)
        if (!same_input(g, a->inputs[k], b->inputs[k])) return 0;
    for (int k = 0; k < b->n_outputs; k++) {
        if (os_graph_is_output(g, b->outputs[k])) return 0;
        const opsched_tensor *x = &g->tensors[a->outputs[k]], *y = &g->tensors[b->outputs[k]];
        if (x->dtype != y->dtype || !opsched_shape_equal(&x->shape, &y->shape)) return 0;
    }
    return 1;
}

/* dup[i]: the earlier node that computes what node i computes, or -1;
 * the number of such nodes. */
static int find_duplicates(const opsched_graph *g, int *dup, node_key *keys)
{
    size_t nn = g->n_nodes;
    for (size_t i = 0; i < nn; i++) {
        dup[i] = -1;
        keys[i].hash = node_hash(g, &g->nodes[i]);
        keys[i].node = (int)i;
    }
    qsort(keys, nn, sizeof(*keys), key_cmp);
    int count = 0;
    for (size_t a = 0; a < nn;) {
        size_t b = a;
        while (b < nn && keys[b].hash == keys[a].hash)
            b++;
        for (size_t i = a + 1; i < b; i++) /* in node order within a hash */
            for (size_t j = a; j < i; j++) {
                int s = keys[j].node;
                if (dup[s] >= 0) continue;
                if (same_node(g, &g->nodes[s], &g->nodes[keys[i].node])) {
                    dup[keys[i].node] = s;
                    count++;
                    break;
                }
            }
        a = b;
    }
    return count;
}

/* Builds the rewritten graph: the same tensors without producers (in id
 * order, so inputs keep theirs; payloads borrowed until the caller moves
 * them), then the nodes in order, each swallowed node left out and each
 * pattern's last node replaced. */
static opsched_status rebuild(const opsched_graph *g, const int *drop, const rewrite *rw,
                              const int *has_rw, const int *dup, int *map, opsched_graph **out)
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
        if (dup && dup[i] >= 0) { /* its outputs are the earlier node's */
            for (int k = 0; k < n->n_outputs; k++)
                map[n->outputs[k]] = map[g->nodes[dup[i]].outputs[k]];
            continue;
        }
        if (drop && drop[i]) continue;
        if (n->n_inputs > 64 || n->n_outputs > 64) {
            st = OS_FAIL(g->ctx, OPSCHED_ERR_UNSUPPORTED, "node '%s': too many inputs or outputs",
                         n->name);
            goto fail;
        }
        for (int k = 0; k < n->n_outputs; k++)
            names[k] = g->tensors[n->outputs[k]].name;
        if (has_rw && has_rw[i]) {
            const rewrite *r = &rw[i]; /* has_rw set: rw too */
            int xs[4] = {map[r->input], -1, -1, -1}, nx = 1;
            if (r->n_inputs > 0) {
                nx = r->n_inputs;
                for (int k = 0; k < nx; k++)
                    xs[k] = r->inputs[k] < 0 ? -1 : map[r->inputs[k]];
            }
            OS_TRY_GOTO(st, opsched_graph_add_node(ng, r->name[0] ? r->name : n->name, r->op,
                                                   &r->attr, xs, nx, 1, names, outs),
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

/* Replaces *gp by its rebuild (rebuild's arguments); the payloads move to
 * the new graph and the old one is freed.  *gp is unchanged on failure. */
static opsched_status replace(opsched_graph **gp, const int *drop, const rewrite *rw,
                              const int *has_rw, const int *dup, int *map)
{
    opsched_graph *g = *gp, *ng = NULL;
    OS_TRY(rebuild(g, drop, rw, has_rw, dup, map, &ng));
    for (size_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].producer < 0) g->tensors[t].data = NULL;
    opsched_graph_free(g);
    *gp = ng;
    return OPSCHED_OK;
}

/* Replaces *gp by a graph without the nodes that compute what an earlier
 * node computes (their readers read the earlier node's outputs). */
static opsched_status dedupe(opsched_graph **gp, int *n_removed)
{
    opsched_graph *g = *gp;
    *n_removed = 0;
    int *dup = malloc((g->n_nodes + 1) * sizeof(int));
    node_key *keys = malloc((g->n_nodes + 1) * sizeof(*keys));
    int *map = malloc((g->n_tensors + 1) * sizeof(int));
    opsched_status st = OPSCHED_OK;
    if (!dup || !keys || !map) {
        st = OS_NOMEM(g->ctx);
        goto done;
    }
    int n = find_duplicates(g, dup, keys);
    if (n == 0) goto done;
    OS_TRY_GOTO(st, replace(gp, NULL, NULL, NULL, dup, map), done);
    *n_removed = n;
done:
    free(dup);
    free(keys);
    free(map);
    return st;
}

opsched_status opsched_graph_rewrite_patterns(opsched_graph **gp, unsigned flags, int *n_rewritten)
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
        if (claimed[i]) continue;
        int at = (int)i;
        rewrite r;
        if (!match(&m, (int)i, &r) &&
            ((flags & OPSCHED_REWRITE_KEEP_ATTENTION) || !match_attention(&m, (int)i, &r, &at)))
            continue;
        rw[at] = r;
        has_rw[at] = 1;
        claimed[at] = 1;
        for (int k = 0; k < m.n_members; k++)
            claimed[m.members[k]] = 2; /* swallowed */
        count++;
    }
    if (count == 0) goto done;
    for (size_t i = 0; i < nn; i++)
        claimed[i] = claimed[i] == 2;
    OS_TRY_GOTO(st, replace(gp, claimed, rw, has_rw, NULL, map), done);
done:
    free(claimed);
    free(has_rw);
    free(map);
    free(rw);
    /* then what the graph computes twice, once (the patterns first: a
     * pattern may own a node that has a twin) */
    /* a pass finds the twins of twins' readers: again until none is left */
    int n_dup = 0;
    for (int pass = 0, more = 1; st == OPSCHED_OK && more && pass < 16; pass++) {
        st = dedupe(gp, &more);
        n_dup += more;
    }
    if (st == OPSCHED_OK && n_rewritten) *n_rewritten = count + n_dup;
    return st;
}
