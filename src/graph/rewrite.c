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

/* Adds nodes (and their weights) to ng before old node i is rebuilt, with
 * map the old-to-new tensor ids so far; sets map for what it replaces. */
typedef struct emitter {
    opsched_status (*fn)(void *u, const opsched_graph *g, int i, opsched_graph *ng, int *map);
    void *u;
} emitter;

/* Builds the rewritten graph: the same tensors without producers (in id
 * order, so inputs keep theirs; payloads borrowed until the caller moves
 * them; weights and constants that nothing reads left out), then the nodes
 * in order, each swallowed node left out, each pattern's last node
 * replaced, and before each node what the emitter (may be NULL) adds. */
static opsched_status rebuild(const opsched_graph *g, const int *drop, const rewrite *rw,
                              const int *has_rw, const int *dup, const emitter *em, int *map,
                              opsched_graph **out)
{
    opsched_graph *ng = NULL;
    opsched_status st;
    size_t n_borrowed = g->n_tensors;
    OS_TRY(opsched_graph_create(g->ctx, g->name, &ng));
    for (size_t t = 0; t < g->n_tensors; t++) {
        const opsched_tensor *x = &g->tensors[t];
        map[t] = -1;
        if (x->producer >= 0) continue;
        /* a weight or constant that nothing reads any more goes */
        if ((x->kind == OPSCHED_TENSOR_WEIGHT || x->kind == OPSCHED_TENSOR_CONSTANT) &&
            g->n_consumers[t] == 0 && !os_graph_is_output(g, (int)t))
            continue;
        OS_TRY_GOTO(st, opsched_graph_add_tensor(ng, x->name, x->kind, x->dtype, &x->shape,
                                                 &map[t]),
                    fail);
        ng->tensors[map[t]].layout = x->layout;
        ng->tensors[map[t]].data = x->data; /* borrowed */
        ng->tensors[map[t]].data_bytes = x->data_bytes;
    }
    n_borrowed = ng->n_tensors; /* tensors added later own their payloads */
    int ins[64], outs[64];
    const char *names[64];
    for (size_t i = 0; i < g->n_nodes; i++) {
        const opsched_node *n = &g->nodes[i];
        if (em) OS_TRY_GOTO(st, em->fn(em->u, g, (int)i, ng, map), fail);
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
    for (size_t t = 0; t < n_borrowed && t < ng->n_tensors; t++)
        if (ng->tensors[t].producer < 0) ng->tensors[t].data = NULL;
    opsched_graph_free(ng);
    return st;
}

/* Replaces *gp by its rebuild (rebuild's arguments); the payloads move to
 * the new graph and the old one is freed.  *gp is unchanged on failure. */
static opsched_status replace(opsched_graph **gp, const int *drop, const rewrite *rw,
                              const int *has_rw, const int *dup, const emitter *em, int *map)
{
    opsched_graph *g = *gp, *ng = NULL;
    OS_TRY(rebuild(g, drop, rw, has_rw, dup, em, map, &ng));
    for (size_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].producer < 0 && map[t] >= 0) /* moved; the left-out ones go */
            g->tensors[t].data = NULL;
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
    OS_TRY_GOTO(st, replace(gp, NULL, NULL, NULL, dup, NULL, map), done);
    *n_removed = n;
done:
    free(dup);
    free(keys);
    free(map);
    return st;
}

/* ---- attention operands read in place ------------------------------------ */

/* An operand as a view of tensor t: rank dims d[] at offset off with
 * strides s[], in elements of t in row-major order. */
typedef struct vstate {
    int t;
    int rank;
    int64_t off, d[4], s[4];
} vstate;

static void rowmajor_strides(const opsched_shape *sh, int64_t *rs)
{
    int64_t acc = 1;
    for (int a = sh->ndim - 1; a >= 0; a--) {
        rs[a] = acc;
        acc *= sh->d[a];
    }
}

/* The view over the axes of its tensor (shape ts): the axis each view axis
 * of more than one element moves along (ax, -1 for the others), by how
 * many (c), and the offset's index (dig).  0 when a view axis does not move
 * along one axis of the tensor or wraps around one. */
static int split_view(const opsched_shape *ts, const vstate *v, int ax[4], int64_t c[4],
                      int64_t dig[OPSCHED_MAX_DIMS])
{
    int64_t rs[OPSCHED_MAX_DIMS], span[OPSCHED_MAX_DIMS] = {0}, rem = v->off;
    rowmajor_strides(ts, rs);
    for (int a = 0; a < ts->ndim; a++) {
        dig[a] = rem / rs[a];
        rem %= rs[a];
    }
    for (int k = 0; k < v->rank; k++) {
        ax[k] = -1;
        c[k] = 0;
        if (v->d[k] <= 1) continue;
        for (int a = 0; a < ts->ndim && ax[k] < 0; a++)
            if (ts->d[a] > 1 && v->s[k] > 0 && v->s[k] % rs[a] == 0 && v->s[k] / rs[a] < ts->d[a])
                ax[k] = a;
        if (ax[k] < 0) return 0;
        c[k] = v->s[k] / rs[ax[k]];
        span[ax[k]] += (v->d[k] - 1) * c[k];
    }
    for (int a = 0; a < ts->ndim; a++)
        if (dig[a] + span[a] >= ts->d[a]) return 0;
    return 1;
}

/* The one value of an integer constant, or 0 when t is not one. */
static int int_scalar(const opsched_graph *g, int t, int64_t *v)
{
    const opsched_tensor *x = &g->tensors[t];
    if (x->producer >= 0 || !x->data || opsched_shape_numel(&x->shape) != 1) return 0;
    if (x->dtype == OPSCHED_INT64 && x->data_bytes >= 8) memcpy(v, x->data, 8);
    else if (x->dtype == OPSCHED_INT32 && x->data_bytes >= 4) {
        int32_t w;
        memcpy(&w, x->data, 4);
        *v = w;
    } else {
        return 0;
    }
    return 1;
}

/* One step back from v.t through the node that makes it, when that node
 * only moves or picks elements (Reshape, Flatten, Identity, Dropout,
 * Transpose, Slice, Split, Gather of one index): v re-expressed over that
 * node's input.  0 when v.t is made otherwise. */
static int view_step(const opsched_graph *g, vstate *v)
{
    const opsched_tensor *t = &g->tensors[v->t];
    if (t->producer < 0) return 0;
    const opsched_node *p = &g->nodes[t->producer];
    if (p->n_inputs < 1 || p->inputs[0] < 0) return 0;
    int y = p->inputs[0];
    const opsched_shape *ys = &g->tensors[y].shape;
    if (g->tensors[y].dtype != t->dtype) return 0;
    switch (p->op) {
    case OPSCHED_OP_RESHAPE:
    case OPSCHED_OP_FLATTEN:
    case OPSCHED_OP_IDENTITY:
    case OPSCHED_OP_DROPOUT:
        if (p->outputs[0] != v->t || opsched_shape_numel(ys) != opsched_shape_numel(&t->shape))
            return 0;
        v->t = y; /* the same elements in the same order */
        return 1;
    default: break;
    }
    int ax[4], map[OPSCHED_MAX_DIMS];
    int64_t c[4], dig[OPSCHED_MAX_DIMS], start[OPSCHED_MAX_DIMS] = {0}, step[OPSCHED_MAX_DIMS];
    int64_t rsy[OPSCHED_MAX_DIMS], off = 0;
    if (!split_view(&t->shape, v, ax, c, dig)) return 0;
    for (int a = 0; a < t->shape.ndim; a++) {
        map[a] = a; /* axis a of t is axis map[a] of y, index start + step * i */
        step[a] = 1;
    }
    if (p->op == OPSCHED_OP_TRANSPOSE) {
        if (p->attr.transpose.n != t->shape.ndim) return 0;
        for (int a = 0; a < t->shape.ndim; a++)
            map[a] = (int)p->attr.transpose.perm[a];
    } else if (p->op == OPSCHED_OP_SLICE) {
        if (ys->ndim != t->shape.ndim) return 0;
        for (int a = 0; a < ys->ndim; a++) {
            start[a] = p->attr.slice.starts[a];
            step[a] = p->attr.slice.steps[a];
            if (step[a] < 1 || start[a] < 0 || start[a] >= ys->d[a]) return 0;
        }
    } else if (p->op == OPSCHED_OP_SPLIT) {
        int64_t axis = p->attr.split.axis;
        if (axis < 0 || axis >= ys->ndim) return 0;
        for (int k = 0; k < p->n_outputs && p->outputs[k] != v->t; k++)
            start[axis] += p->attr.split.sizes[k];
    } else if (p->op == OPSCHED_OP_GATHER && p->n_inputs == 2) {
        int64_t axis = p->attr.axis.axis, idx;
        if (axis < 0) axis += ys->ndim;
        if (axis < 0 || axis >= ys->ndim || !int_scalar(g, p->inputs[1], &idx)) return 0;
        if (idx < 0) idx += ys->d[axis];
        if (idx < 0 || idx >= ys->d[axis]) return 0;
        int kept = g->tensors[p->inputs[1]].shape.ndim; /* 0: the axis goes */
        if (t->shape.ndim != ys->ndim - (kept ? 0 : 1)) return 0;
        for (int a = 0; a < t->shape.ndim; a++)
            map[a] = kept || a < axis ? a : a + 1;
        rowmajor_strides(ys, rsy);
        if (kept) start[axis] = idx; /* the axis stays, of one element */
        else off += idx * rsy[axis];
    } else {
        return 0;
    }
    rowmajor_strides(ys, rsy);
    for (int a = 0; a < t->shape.ndim; a++)
        off += (start[a] + step[a] * dig[a]) * rsy[map[a]];
    for (int k = 0; k < v->rank; k++)
        v->s[k] = ax[k] < 0 ? 0 : c[k] * step[ax[k]] * rsy[map[ax[k]]];
    v->off = off;
    v->t = y;
    return 1;
}

/* Operand x of Attention node n read where the nodes before it found it:
 * 1 with its new view and tensor in at and *t when the walk moved. */
static int operand_view(const opsched_graph *g, const opsched_node *n, int x,
                        opsched_attention_attr *at, int *t)
{
    int t0 = n->inputs[x];
    if (t0 < 0) return 0;
    vstate v = {.t = t0};
    const opsched_shape *sh = &g->tensors[t0].shape;
    if (at->view[x].rank > 0) {
        v.rank = at->view[x].rank;
        v.off = at->view[x].offset;
        memcpy(v.d, at->view[x].d, sizeof(v.d));
        memcpy(v.s, at->view[x].stride, sizeof(v.s));
    } else {
        if (sh->ndim > 4) return 0;
        v.rank = sh->ndim;
        int64_t rs[OPSCHED_MAX_DIMS];
        rowmajor_strides(sh, rs);
        for (int a = 0; a < v.rank; a++) {
            v.d[a] = sh->d[a];
            v.s[a] = rs[a];
        }
    }
    vstate best = v;
    for (int step = 0; step < 16 && view_step(g, &v); step++)
        if (g->tensors[v.t].shape.ndim != 4) best = v; /* a 4-D tensor may be stored NHWC */
    if (best.t == t0) return 0;
    opsched_attention_view *w = &at->view[x];
    w->rank = best.rank;
    w->offset = best.off;
    memcpy(w->d, best.d, sizeof(w->d));
    memcpy(w->stride, best.s, sizeof(w->stride));
    *t = best.t;
    return 1;
}

/* Marks drop[i] for every node whose outputs nothing reads (and are not
 * graph outputs), given the inputs rewritten nodes will read (rw); 1 when
 * any. */
static int find_dead(const opsched_graph *g, const rewrite *rw, const int *has_rw, int *drop)
{
    int *reads = calloc(g->n_tensors + 1, sizeof(int));
    if (!reads) return -1;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const opsched_node *n = &g->nodes[i];
        drop[i] = 0;
        int nx = has_rw && has_rw[i] ? rw[i].n_inputs : n->n_inputs;
        for (int k = 0; k < nx; k++) {
            int t = has_rw && has_rw[i] ? rw[i].inputs[k] : n->inputs[k];
            if (t >= 0) reads[t]++;
        }
    }
    for (size_t i = 0; i < g->n_outputs; i++)
        reads[g->outputs[i]]++;
    int any = 0;
    for (size_t i = g->n_nodes; i-- > 0;) {
        const opsched_node *n = &g->nodes[i];
        int used = 0;
        for (int k = 0; k < n->n_outputs; k++)
            used += reads[n->outputs[k]];
        if (used) continue;
        drop[i] = 1;
        any = 1;
        int nx = has_rw && has_rw[i] ? rw[i].n_inputs : n->n_inputs;
        for (int k = 0; k < nx; k++) {
            int t = has_rw && has_rw[i] ? rw[i].inputs[k] : n->inputs[k];
            if (t >= 0) reads[t]--;
        }
    }
    free(reads);
    return any;
}

/* Replaces *gp by a graph whose Attention nodes read Q, K and V through
 * views of the tensors that the reshapes, transposes, slices, splits and
 * gathers before them read, without the nodes nothing reads any more. */
static opsched_status attention_views(opsched_graph **gp, int *n_changed)
{
    opsched_graph *g = *gp;
    *n_changed = 0;
    size_t nn = g->n_nodes;
    rewrite *rw = calloc(nn + 1, sizeof(*rw));
    int *has_rw = calloc(nn + 1, sizeof(int));
    int *drop = calloc(nn + 1, sizeof(int));
    int *map = malloc((g->n_tensors + 1) * sizeof(int));
    opsched_status st = OPSCHED_OK;
    if (!rw || !has_rw || !drop || !map) {
        st = OS_NOMEM(g->ctx);
        goto done;
    }
    int count = 0;
    for (size_t i = 0; i < nn; i++) {
        const opsched_node *n = &g->nodes[i];
        if (n->op != OPSCHED_OP_ATTENTION || n->n_inputs < 3 || n->n_inputs > 4) continue;
        rewrite r;
        memset(&r, 0, sizeof(r));
        r.op = OPSCHED_OP_ATTENTION;
        r.attr = n->attr;
        r.n_inputs = n->n_inputs;
        for (int k = 0; k < n->n_inputs; k++)
            r.inputs[k] = n->inputs[k];
        int moved = 0;
        for (int x = 0; x < 3; x++) {
            opsched_attention_attr at = r.attr.attention;
            int t;
            if (!operand_view(g, n, x, &at, &t)) continue;
            /* the node must still infer to the same output */
            int ins[4];
            memcpy(ins, r.inputs, sizeof(ins));
            ins[x] = t;
            opsched_op_attr chk;
            chk.attention = at;
            opsched_shape out;
            opsched_dtype odt;
            opsched_cost cost;
            memset(&cost, 0, sizeof(cost));
            if (os_infer(g, n->name, OPSCHED_OP_ATTENTION, &chk, ins, r.n_inputs, 1, &out, &odt,
                         &cost) != OPSCHED_OK ||
                !opsched_shape_equal(&out, &g->tensors[n->outputs[0]].shape)) {
                opsched_ctx_clear_error(g->ctx);
                continue;
            }
            r.attr.attention = at;
            r.inputs[x] = t;
            moved = 1;
        }
        if (!moved) continue;
        rw[i] = r;
        has_rw[i] = 1;
        count++;
    }
    if (count == 0) goto done;
    if (find_dead(g, rw, has_rw, drop) < 0) {
        st = OS_NOMEM(g->ctx);
        goto done;
    }
    OS_TRY_GOTO(st, replace(gp, drop, rw, has_rw, NULL, NULL, map), done);
    *n_changed = count;
done:
    free(rw);
    free(has_rw);
    free(drop);
    free(map);
    return st;
}

/* ---- sibling projections as one product ---------------------------------- */

/* Products of one activation by constant [K, N] weights, each with or
 * without its [N] bias Add, whose results only attention reads: one
 * product by the weights side by side ([K, sum N]) and one bias, the
 * members' results as slices of it (which the attention then reads in
 * place).  Q, K and V projections written as three Linear layers become
 * one GEMM with three times the columns. */
#define MAX_SIBLINGS 8

typedef struct sibling_group {
    int n;
    int mm[MAX_SIBLINGS], add[MAX_SIBLINGS]; /* node ids; add -1 without bias */
    int first;                               /* the first member's product */
} sibling_group;

typedef struct sibling_set {
    sibling_group *groups;
    int n_groups;
    int *group_of_first; /* per node: the group whose merged product goes here, or -1 */
} sibling_set;

static int is_const_tensor(const opsched_graph *g, int t)
{
    return t >= 0 && g->tensors[t].producer < 0 &&
           (g->tensors[t].kind == OPSCHED_TENSOR_WEIGHT ||
            g->tensors[t].kind == OPSCHED_TENSOR_CONSTANT);
}

/* The bias Add of product node i (reading its output alone), or -1 when
 * none; -2 when the product's output goes elsewhere too. */
static int bias_add(const opsched_graph *g, int i, int *final)
{
    const opsched_node *mm = &g->nodes[i];
    int y = mm->outputs[0];
    int64_t N = g->tensors[y].shape.d[g->tensors[y].shape.ndim - 1];
    *final = y;
    int r = os_graph_sole_reader(g, y, i);
    if (r < 0) return g->n_consumers[y] == 0 ? -2 : -1;
    const opsched_node *a = &g->nodes[r];
    if (a->op != OPSCHED_OP_ADD || a->n_inputs != 2 || a->n_outputs != 1) return -1;
    int b = a->inputs[0] == y ? a->inputs[1] : a->inputs[0];
    if (!is_const_tensor(g, b) || g->tensors[b].shape.ndim != 1 || g->tensors[b].shape.d[0] != N ||
        g->tensors[b].dtype != g->tensors[y].dtype)
        return -1;
    *final = a->outputs[0];
    return r;
}

/* 1 when only Attention nodes read t, as Q, K or V, each through a view
 * that a slice of t's last axis keeps a view (every view axis moves along
 * one axis of t). */
static int attention_only(const opsched_graph *g, int t)
{
    if (g->n_consumers[t] == 0 || os_graph_is_output(g, t)) return 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const opsched_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] != t) continue;
            if (n->op != OPSCHED_OP_ATTENTION || k > 2) return 0;
            const opsched_attention_view *w = &n->attr.attention.view[k];
            if (w->rank <= 0) continue;
            vstate v = {.t = t, .rank = w->rank, .off = w->offset};
            memcpy(v.d, w->d, sizeof(v.d));
            memcpy(v.s, w->stride, sizeof(v.s));
            int ax[4];
            int64_t c[4], dig[OPSCHED_MAX_DIMS];
            if (!split_view(&g->tensors[t].shape, &v, ax, c, dig)) return 0;
        }
    }
    return 1;
}

static int find_siblings(const opsched_graph *g, sibling_set *ss)
{
    int *used = calloc(g->n_nodes + 1, sizeof(int));
    if (!used) return -1;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const opsched_node *n = &g->nodes[i];
        if (used[i] || n->op != OPSCHED_OP_MATMUL || n->n_inputs != 2 || n->n_outputs != 1)
            continue;
        sibling_group grp = {.n = 0, .first = (int)i};
        int a = n->inputs[0], w0 = n->inputs[1];
        if (a < 0 || !is_const_tensor(g, w0) || g->tensors[w0].shape.ndim != 2 ||
            g->tensors[a].shape.ndim < 2)
            continue;
        for (size_t j = i; j < g->n_nodes && grp.n < MAX_SIBLINGS; j++) {
            const opsched_node *m = &g->nodes[j];
            if (used[j] || m->op != OPSCHED_OP_MATMUL || m->n_inputs != 2 || m->n_outputs != 1 ||
                m->inputs[0] != a)
                continue;
            int w = m->inputs[1];
            if (!is_const_tensor(g, w) || g->tensors[w].shape.ndim != 2 ||
                g->tensors[w].shape.d[0] != g->tensors[w0].shape.d[0] ||
                g->tensors[w].dtype != g->tensors[w0].dtype ||
                (g->tensors[w].data == NULL) != (g->tensors[w0].data == NULL))
                continue;
            int final, add = bias_add(g, (int)j, &final);
            if (add == -2 || !attention_only(g, final)) continue;
            if (grp.n > 0 && (add >= 0) != (grp.add[0] >= 0)) continue;
            if (add >= 0) {
                const opsched_node *an = &g->nodes[add];
                int b = an->inputs[0] == m->outputs[0] ? an->inputs[1] : an->inputs[0];
                int b0 = -1;
                if (grp.n > 0) {
                    const opsched_node *a0 = &g->nodes[grp.add[0]];
                    b0 = a0->inputs[0] == g->nodes[grp.mm[0]].outputs[0] ? a0->inputs[1]
                                                                        : a0->inputs[0];
                    if ((g->tensors[b].data == NULL) != (g->tensors[b0].data == NULL)) continue;
                }
            }
            grp.mm[grp.n] = (int)j;
            grp.add[grp.n] = add;
            grp.n++;
        }
        if (grp.n < 2) continue;
        grp.first = grp.mm[0];
        for (int k = 0; k < grp.n; k++)
            used[grp.mm[k]] = 1;
        sibling_group *ng = realloc(ss->groups, (size_t)(ss->n_groups + 1) * sizeof(*ng));
        if (!ng) {
            free(used);
            return -1;
        }
        ss->groups = ng;
        ss->groups[ss->n_groups] = grp;
        ss->group_of_first[grp.first] = ss->n_groups;
        ss->n_groups++;
    }
    free(used);
    return ss->n_groups;
}

/* The members' payloads side by side: rows of [K, N_i] into [K, sum N]
 * (cols > 0), or [N_i] one after another; NULL with *ok when none has a
 * payload. */
static void *concat_payload(const opsched_graph *g, const int *ts, int n, int64_t rows, int *ok)
{
    *ok = 1;
    if (!g->tensors[ts[0]].data) return NULL;
    size_t esz = opsched_dtype_size(g->tensors[ts[0]].dtype), total = 0;
    for (int k = 0; k < n; k++)
        total += (size_t)opsched_shape_numel(&g->tensors[ts[k]].shape) * esz;
    char *out = malloc(total ? total : 1);
    if (!out) {
        *ok = 0;
        return NULL;
    }
    size_t at = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int k = 0; k < n; k++) {
            const opsched_tensor *x = &g->tensors[ts[k]];
            size_t row = (size_t)(opsched_shape_numel(&x->shape) / rows) * esz;
            memcpy(out + at, (const char *)x->data + (size_t)r * row, row);
            at += row;
        }
    return out;
}

/* The name the members share up to their last '/', into buf. */
static void common_prefix(const opsched_graph *g, const sibling_group *grp, char *buf, size_t size)
{
    const char *a = g->nodes[grp->mm[0]].name ? g->nodes[grp->mm[0]].name : "";
    size_t len = strlen(a);
    for (int k = 1; k < grp->n; k++) {
        const char *b = g->nodes[grp->mm[k]].name ? g->nodes[grp->mm[k]].name : "";
        size_t j = 0;
        while (j < len && a[j] == b[j]) j++;
        len = j;
    }
    while (len > 0 && a[len - 1] != '/') len--;
    snprintf(buf, size, "%.*s", (int)len, a);
}

static opsched_status add_merged_tensor(const opsched_graph *g, opsched_graph *ng, const char *name,
                                        const int *ts, int n, int64_t rows,
                                        const opsched_shape *shape, int *id)
{
    int ok;
    void *data = concat_payload(g, ts, n, rows, &ok);
    if (!ok) return OS_NOMEM(g->ctx);
    opsched_status st = opsched_graph_add_tensor(ng, name, g->tensors[ts[0]].kind,
                                                 g->tensors[ts[0]].dtype, shape, id);
    if (st == OPSCHED_OK && data) {
        ng->tensors[*id].data = data; /* owned by ng from here */
        ng->tensors[*id].data_bytes = (size_t)opsched_shape_numel(shape) *
                                      opsched_dtype_size(g->tensors[ts[0]].dtype);
        data = NULL;
    }
    free(data);
    return st;
}

/* The emitter: before a group's first product, the merged product, its
 * bias and the members' slices (named as their results). */
static opsched_status emit_merged(void *u, const opsched_graph *g, int i, opsched_graph *ng,
                                  int *map)
{
    sibling_set *ss = u;
    int gi = ss->group_of_first[i];
    if (gi < 0) return OPSCHED_OK;
    const sibling_group *grp = &ss->groups[gi];
    const opsched_node *m0 = &g->nodes[grp->mm[0]];
    int a = m0->inputs[0];
    int64_t K = g->tensors[m0->inputs[1]].shape.d[0], Ntot = 0;
    int ws[MAX_SIBLINGS], bs[MAX_SIBLINGS], finals[MAX_SIBLINGS];
    int64_t ns[MAX_SIBLINGS];
    for (int k = 0; k < grp->n; k++) {
        const opsched_node *m = &g->nodes[grp->mm[k]];
        ws[k] = m->inputs[1];
        ns[k] = g->tensors[ws[k]].shape.d[1];
        Ntot += ns[k];
        finals[k] = m->outputs[0];
        if (grp->add[k] >= 0) {
            const opsched_node *an = &g->nodes[grp->add[k]];
            bs[k] = an->inputs[0] == m->outputs[0] ? an->inputs[1] : an->inputs[0];
            finals[k] = an->outputs[0];
        }
    }
    char prefix[200], name[300];
    common_prefix(g, grp, prefix, sizeof(prefix));
    opsched_shape wsh = {.ndim = 2, .d = {K, Ntot}}, bsh = {.ndim = 1, .d = {Ntot}};
    int w, b = -1, y, z;
    snprintf(name, sizeof(name), "%smerged_%d.weight", prefix, gi);
    OS_TRY(add_merged_tensor(g, ng, name, ws, grp->n, K, &wsh, &w));
    int in[2] = {map[a], w};
    snprintf(name, sizeof(name), "%smerged_%d/MatMul", prefix, gi);
    opsched_op_attr none;
    memset(&none, 0, sizeof(none));
    OS_TRY(opsched_graph_add_node(ng, name, OPSCHED_OP_MATMUL, &none, in, 2, 1, NULL, &y));
    z = y;
    if (grp->add[0] >= 0) {
        snprintf(name, sizeof(name), "%smerged_%d.bias", prefix, gi);
        OS_TRY(add_merged_tensor(g, ng, name, bs, grp->n, 1, &bsh, &b));
        int in2[2] = {y, b};
        snprintf(name, sizeof(name), "%smerged_%d/Add", prefix, gi);
        OS_TRY(opsched_graph_add_node(ng, name, OPSCHED_OP_ADD, &none, in2, 2, 1, NULL, &z));
    }
    const opsched_shape zsh = ng->tensors[z].shape; /* a copy: adding nodes moves ng's tensors */
    const opsched_shape *zs = &zsh;
    int64_t at = 0;
    for (int k = 0; k < grp->n; k++) {
        opsched_op_attr sl;
        memset(&sl, 0, sizeof(sl));
        for (int d = 0; d < zs->ndim; d++) {
            sl.slice.starts[d] = 0;
            sl.slice.ends[d] = zs->d[d];
            sl.slice.steps[d] = 1;
        }
        sl.slice.starts[zs->ndim - 1] = at;
        sl.slice.ends[zs->ndim - 1] = at + ns[k];
        at += ns[k];
        const char *nm = g->tensors[finals[k]].name;
        snprintf(name, sizeof(name), "%s/Slice", g->nodes[grp->add[k] >= 0 ? grp->add[k]
                                                                           : grp->mm[k]].name);
        int out;
        OS_TRY(opsched_graph_add_node(ng, name, OPSCHED_OP_SLICE, &sl, &z, 1, 1, &nm, &out));
        map[finals[k]] = out;
    }
    return OPSCHED_OK;
}

/* Replaces *gp by a graph whose sibling projections are merged. */
static opsched_status merge_siblings(opsched_graph **gp, int *n_merged)
{
    opsched_graph *g = *gp;
    *n_merged = 0;
    sibling_set ss = {0};
    int *drop = calloc(g->n_nodes + 1, sizeof(int));
    int *map = malloc((g->n_tensors + 1) * sizeof(int));
    ss.group_of_first = malloc((g->n_nodes + 1) * sizeof(int));
    opsched_status st = OPSCHED_OK;
    if (!drop || !map || !ss.group_of_first) {
        st = OS_NOMEM(g->ctx);
        goto done;
    }
    for (size_t i = 0; i < g->n_nodes; i++)
        ss.group_of_first[i] = -1;
    int n = find_siblings(g, &ss);
    if (n < 0) {
        st = OS_NOMEM(g->ctx);
        goto done;
    }
    if (n == 0) goto done;
    for (int k = 0; k < ss.n_groups; k++)
        for (int j = 0; j < ss.groups[k].n; j++) {
            drop[ss.groups[k].mm[j]] = 1;
            if (ss.groups[k].add[j] >= 0) drop[ss.groups[k].add[j]] = 1;
        }
    emitter em = {emit_merged, &ss};
    OS_TRY_GOTO(st, replace(gp, drop, NULL, NULL, NULL, &em, map), done);
    *n_merged = n;
done:
    free(drop);
    free(map);
    free(ss.group_of_first);
    free(ss.groups);
    return st;
}

/* ---- rewrites of sites of several nodes ------------------------------------ */

#define SITE_MAX_NODES 8

/* A rewrite whose sites are a few nodes each, replaced by what emit adds
 * at the site's anchor node. */
typedef struct site_pass {
    size_t size; /* bytes of a site's description */
    /* The site node i starts or ends: its description into site and the
     * nodes it replaces into nodes (*n of them, at most SITE_MAX_NODES);
     * returns the anchor node, or -1 when there is none. */
    int (*find)(const opsched_graph *g, int i, void *site, int *nodes, int *n);
    /* Adds to ng what replaces the site anchored at node i. */
    opsched_status (*emit)(const opsched_graph *g, int i, const void *site, opsched_graph *ng,
                           int *map);
    unsigned char *sites; /* per node: the site anchored there */
    int *is_site;
} site_pass;

static opsched_status site_emit(void *u, const opsched_graph *g, int i, opsched_graph *ng,
                                int *map)
{
    const site_pass *sp = u;
    return sp->is_site[i] ? sp->emit(g, i, sp->sites + (size_t)i * sp->size, ng, map) : OPSCHED_OK;
}

/* Replaces *gp by a graph whose sites (sp) are rewritten, each node in
 * one site at most; *n_changed the number of sites. */
static opsched_status run_sites(opsched_graph **gp, site_pass *sp, int *n_changed)
{
    opsched_graph *g = *gp;
    *n_changed = 0;
    int *drop = calloc(g->n_nodes + 1, sizeof(int));
    int *map = malloc((g->n_tensors + 1) * sizeof(int));
    unsigned char *one = malloc(sp->size);
    sp->sites = calloc(g->n_nodes + 1, sp->size);
    sp->is_site = calloc(g->n_nodes + 1, sizeof(int));
    opsched_status st = OPSCHED_OK;
    if (!drop || !map || !one || !sp->sites || !sp->is_site) {
        st = OS_NOMEM(g->ctx);
        goto done;
    }
    int count = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        int nodes[SITE_MAX_NODES], n = 0, taken = 0;
        int at = sp->find(g, (int)i, one, nodes, &n);
        if (at < 0) continue;
        for (int k = 0; k < n; k++)
            taken |= drop[nodes[k]];
        if (taken) continue;
        memcpy(sp->sites + (size_t)at * sp->size, one, sp->size);
        sp->is_site[at] = 1;
        for (int k = 0; k < n; k++)
            drop[nodes[k]] = 1;
        count++;
    }
    if (count == 0) goto done;
    emitter em = {site_emit, sp};
    OS_TRY_GOTO(st, replace(gp, drop, NULL, NULL, NULL, &em, map), done);
    *n_changed = count;
done:
    free(drop);
    free(map);
    free(one);
    free(sp->sites);
    free(sp->is_site);
    sp->sites = NULL;
    sp->is_site = NULL;
    return st;
}

/* ---- transposes that only move axes of one element ----------------------- */

/* Replaces *gp by a graph whose Transposes that keep every axis of more
 * than one element in its order (torch's [1, S, C] -> [S, 1, C] around
 * nn.MultiheadAttention) are Reshapes: the same elements in the same
 * order, so a view, not a copy. */
static opsched_status unit_transposes(opsched_graph **gp, int *n_changed)
{
    opsched_graph *g = *gp;
    *n_changed = 0;
    size_t nn = g->n_nodes;
    rewrite *rw = calloc(nn + 1, sizeof(*rw));
    int *has_rw = calloc(nn + 1, sizeof(int));
    int *map = malloc((g->n_tensors + 1) * sizeof(int));
    opsched_status st = OPSCHED_OK;
    if (!rw || !has_rw || !map) {
        st = OS_NOMEM(g->ctx);
        goto done;
    }
    int count = 0;
    for (size_t i = 0; i < nn; i++) {
        const opsched_node *n = &g->nodes[i];
        if (n->op != OPSCHED_OP_TRANSPOSE || n->n_inputs != 1 || n->n_outputs != 1) continue;
        const opsched_shape *xs = &g->tensors[n->inputs[0]].shape;
        if (n->attr.transpose.n != xs->ndim) continue;
        int64_t last = -1;
        int inorder = 1;
        for (int a = 0; a < xs->ndim && inorder; a++) {
            int64_t from = n->attr.transpose.perm[a];
            if (xs->d[from] == 1) continue;
            inorder = from > last;
            last = from;
        }
        if (!inorder) continue;
        rewrite *r = &rw[i];
        r->op = OPSCHED_OP_RESHAPE;
        r->attr.shape.shape = g->tensors[n->outputs[0]].shape;
        r->input = n->inputs[0];
        has_rw[i] = 1;
        count++;
    }
    if (count == 0) goto done;
    OS_TRY_GOTO(st, replace(gp, NULL, rw, has_rw, NULL, NULL, map), done);
    *n_changed = count;
done:
    free(rw);
    free(has_rw);
    free(map);
    return st;
}

/* ---- Gemm layers as products with a bias ----------------------------------- */

/* A Gemm with B a constant, A not transposed, alpha 1 and a [N] bias at
 * beta 1 (or none), whose result only Reshapes read on their way to a
 * tensor Z of [L..., N]: a MatMul of A (reshaped to [L..., K] when L is
 * not A's rows) by B ([K, N]; transposed when the Gemm transposes it) and
 * an Add of the bias, which writes Z.  Exporters write Linear layers on
 * sequences so (HF GPT-2's Conv1D, nn.MultiheadAttention's out_proj); as a
 * product with a bias Add, the layer takes its bias, its activation and the
 * residual Add after it into its launch like any other. */
typedef struct gemm_site {
    int z;    /* the tensor the Reshapes end at (the Gemm's output without them) */
    int wt;   /* 1: B is stored [N, K] and goes in transposed */
} gemm_site;

static int gemm_site_find(const opsched_graph *g, int i, gemm_site *out, int *chain, int *n_chain)
{
    const opsched_node *n = &g->nodes[i];
    if (n->op != OPSCHED_OP_GEMM || n->n_outputs != 1 || n->n_inputs < 2 || n->n_inputs > 3)
        return 0;
    const opsched_gemm_attr *ga = &n->attr.gemm;
    int a = n->inputs[0], b = n->inputs[1], c = n->n_inputs > 2 ? n->inputs[2] : -1;
    if (ga->trans_a || ga->alpha != 1.0f || a < 0 || !is_const_tensor(g, b) ||
        g->tensors[b].shape.ndim != 2 || !is_float(g->tensors[b].dtype))
        return 0;
    int y = n->outputs[0];
    int64_t N = g->tensors[y].shape.d[1];
    if (c >= 0 && (ga->beta != 1.0f || !is_const_tensor(g, c) ||
                   opsched_shape_numel(&g->tensors[c].shape) != N ||
                   g->tensors[c].shape.d[g->tensors[c].shape.ndim - 1] != N ||
                   g->tensors[c].dtype != g->tensors[y].dtype))
        return 0;
    /* the Reshapes that read the result alone, in a chain */
    int z = y, from = i;
    *n_chain = 0;
    for (int step = 0; step < 4; step++) {
        int r = os_graph_sole_reader(g, z, from);
        if (r < 0 || g->nodes[r].op != OPSCHED_OP_RESHAPE || g->nodes[r].n_outputs != 1 ||
            g->nodes[r].inputs[0] != z)
            break;
        int nz = g->nodes[r].outputs[0];
        const opsched_shape *zs = &g->tensors[nz].shape;
        if (zs->ndim < 2 || zs->d[zs->ndim - 1] != N) break;
        chain[(*n_chain)++] = r;
        z = nz;
        from = r;
    }
    if (*n_chain == 0) return 0; /* a plain 2-D layer gains nothing */
    out->z = z;
    out->wt = ga->trans_b;
    return 1;
}

static opsched_status emit_gemm(const opsched_graph *g, int i, const void *site, opsched_graph *ng,
                                int *map)
{
    const gemm_site *st = site;
    const opsched_node *n = &g->nodes[i];
    int a = n->inputs[0], b = n->inputs[1], c = n->n_inputs > 2 ? n->inputs[2] : -1;
    const opsched_shape *zs = &g->tensors[st->z].shape;
    int64_t K = g->tensors[a].shape.d[1];
    char name[300];
    opsched_op_attr none;
    memset(&none, 0, sizeof(none));
    /* A as [L..., K] */
    int xa = map[a];
    if (zs->ndim != 2) {
        opsched_op_attr rs;
        memset(&rs, 0, sizeof(rs));
        rs.shape.shape = *zs;
        rs.shape.shape.d[zs->ndim - 1] = K;
        snprintf(name, sizeof(name), "%s/rows", n->name);
        OS_TRY(opsched_graph_add_node(ng, name, OPSCHED_OP_RESHAPE, &rs, &xa, 1, 1, NULL, &xa));
    }
    /* B as [K, N] */
    int w = map[b];
    if (st->wt) {
        const opsched_tensor *bt = &g->tensors[b];
        int64_t N = bt->shape.d[0];
        opsched_shape wsh = {.ndim = 2, .d = {K, N}};
        snprintf(name, sizeof(name), "%s.weight_kn", n->name);
        OS_TRY(opsched_graph_add_tensor(ng, name, bt->kind, bt->dtype, &wsh, &w));
        if (bt->data) {
            size_t esz = opsched_dtype_size(bt->dtype);
            char *d = malloc((size_t)(K * N) * esz + 1);
            if (!d) return OS_NOMEM(g->ctx);
            for (int64_t r = 0; r < N; r++)
                for (int64_t k = 0; k < K; k++)
                    memcpy(d + (size_t)(k * N + r) * esz,
                           (const char *)bt->data + (size_t)(r * K + k) * esz, esz);
            ng->tensors[w].data = d; /* owned by ng */
            ng->tensors[w].data_bytes = (size_t)(K * N) * esz;
        }
    }
    int in[2] = {xa, w}, y;
    const char *zname = g->tensors[st->z].name;
    OS_TRY(opsched_graph_add_node(ng, n->name, OPSCHED_OP_MATMUL, &none, in, 2, 1,
                                  c >= 0 ? NULL : &zname, &y));
    if (c >= 0) {
        int in2[2] = {y, map[c]};
        snprintf(name, sizeof(name), "%s/bias", n->name);
        OS_TRY(opsched_graph_add_node(ng, name, OPSCHED_OP_ADD, &none, in2, 2, 1, &zname, &y));
    }
    map[st->z] = y;
    return OPSCHED_OK;
}

static int find_gemm(const opsched_graph *g, int i, void *site, int *nodes, int *n)
{
    int chain[4], nc = 0;
    if (!gemm_site_find(g, i, site, chain, &nc)) return -1;
    nodes[0] = i;
    memcpy(nodes + 1, chain, sizeof(int) * (size_t)nc);
    *n = 1 + nc;
    return i;
}

/* Replaces *gp by a graph whose Gemm layers are products with a bias Add. */
static opsched_status gemm_layers(opsched_graph **gp, int *n_changed)
{
    site_pass sp = {sizeof(gemm_site), find_gemm, emit_gemm, NULL, NULL};
    return run_sites(gp, &sp, n_changed);
}

/* ---- layer scales folded into the product before them --------------------- */

/* ConvNeXt, CaiT and DeiT-III scale a block's last product per output
 * column by a learnt constant (layer scale, x * gamma), ConvNeXt after the
 * Transpose that brings the channels back to axis 1.  (x W + b) * gamma is
 * x (W gamma) + b gamma, so the scale goes into a scaled copy of the
 * weights and the bias, and the Mul, a launch and a round trip through
 * memory, goes; the residual Add after it can then join the product's
 * launch.  A scaled copy holds values where its tensor and the scale have
 * them; the copy of a tensor without a payload (a structure-only export,
 * external data left behind: drawn when it runs) has none either, and a
 * scale without values folds only into tensors without. */
typedef struct scale_site {
    int mm, add, tr, mul; /* the nodes; add and tr -1 when absent */
    int x, w, b, gamma;   /* b -1 without a bias */
} scale_site;

/* Element k of float payload t. */
static float payload_at(const opsched_tensor *t, int64_t k)
{
    if (t->dtype == OPSCHED_F32) {
        float f;
        memcpy(&f, (const char *)t->data + (size_t)k * sizeof(float), sizeof(f));
        return f;
    }
    uint16_t h;
    memcpy(&h, (const char *)t->data + (size_t)k * sizeof(h), sizeof(h));
    return t->dtype == OPSCHED_F16 ? os_f16_to_f32(h) : os_bf16_to_f32(h);
}

static void payload_put(const opsched_tensor *t, char *d, int64_t k, float v)
{
    if (t->dtype == OPSCHED_F32) {
        memcpy(d + (size_t)k * sizeof(float), &v, sizeof(v));
        return;
    }
    uint16_t h = t->dtype == OPSCHED_F16 ? os_f32_to_f16(v) : os_f32_to_bf16(v);
    memcpy(d + (size_t)k * sizeof(h), &h, sizeof(h));
}

/* The site whose Mul is node i: the product, its bias Add, a Transpose,
 * each read by the next alone, and a constant that varies along the
 * product's columns only. */
static int scale_site_find(const opsched_graph *g, int i, scale_site *s)
{
    const opsched_node *m = &g->nodes[i];
    if (m->op != OPSCHED_OP_MUL || m->n_inputs != 2 || m->n_outputs != 1) return 0;
    int k = is_const_tensor(g, m->inputs[1]) ? 1 : is_const_tensor(g, m->inputs[0]) ? 0 : -1;
    if (k < 0) return 0;
    int t = m->inputs[1 - k];
    if (t < 0 || is_const_tensor(g, t)) return 0;
    const opsched_tensor *tt = &g->tensors[t], *tg = &g->tensors[m->inputs[k]];
    if (!is_float(tt->dtype) || tg->dtype != tt->dtype ||
        !opsched_shape_equal(&g->tensors[m->outputs[0]].shape, &tt->shape))
        return 0;
    const int R = tt->shape.ndim;
    int axis = R - 1; /* the axis of t that the product's columns are */
    *s = (scale_site){.mm = -1, .add = -1, .tr = -1, .mul = i, .b = -1, .gamma = m->inputs[k]};
    int p = tt->producer;
    if (p < 0 || os_graph_sole_reader(g, t, p) != i) return 0;
    if (g->nodes[p].op == OPSCHED_OP_TRANSPOSE) {
        const opsched_node *tn = &g->nodes[p];
        if (tn->n_inputs != 1 || tn->n_outputs != 1 || tn->attr.transpose.n != R) return 0;
        axis = -1;
        for (int q = 0; q < R; q++)
            if (tn->attr.transpose.perm[q] == R - 1) axis = q;
        if (axis < 0) return 0;
        s->tr = p;
        t = tn->inputs[0];
        p = t >= 0 ? g->tensors[t].producer : -1;
        if (p < 0 || os_graph_sole_reader(g, t, p) != s->tr) return 0;
    }
    if (g->nodes[p].op == OPSCHED_OP_ADD) {
        const opsched_node *an = &g->nodes[p];
        for (int q = 0; q < an->n_inputs && s->mm < 0; q++) {
            int y = an->inputs[q], pm = y >= 0 ? g->tensors[y].producer : -1, fin;
            if (pm >= 0 && g->nodes[pm].op == OPSCHED_OP_MATMUL && g->nodes[pm].n_inputs == 2 &&
                g->nodes[pm].n_outputs == 1 && bias_add(g, pm, &fin) == p) {
                s->mm = pm;
                s->add = p;
                s->b = an->inputs[1 - q];
            }
        }
    } else if (g->nodes[p].op == OPSCHED_OP_MATMUL && g->nodes[p].n_inputs == 2) {
        s->mm = p;
    }
    if (s->mm < 0) return 0;
    const opsched_node *mm = &g->nodes[s->mm];
    s->x = mm->inputs[0];
    s->w = mm->inputs[1];
    if (s->x < 0 || is_const_tensor(g, s->x) || !is_const_tensor(g, s->w)) return 0;
    const opsched_tensor *tw = &g->tensors[s->w];
    if (tw->shape.ndim != 2 || tw->dtype != tt->dtype) return 0;
    const int64_t N = tw->shape.d[1];
    /* gamma: 1 on every axis but the columns' */
    if (tg->shape.ndim > R) return 0;
    for (int j = 0; j < tg->shape.ndim; j++) {
        int q = R - tg->shape.ndim + j;
        int64_t d = tg->shape.d[j];
        if (d != 1 && !(q == axis && d == N)) return 0;
    }
    /* a scaled copy of a tensor with values needs gamma's; one of a tensor
     * without (drawn when it runs: a structure-only export, external data
     * left behind) is drawn too */
    return tg->data || (!tw->data && (s->b < 0 || !g->tensors[s->b].data));
}

/* A scaled copy of weight (or bias) tensor t: element k times gamma's
 * value for column k % N. */
static opsched_status add_scaled(const opsched_graph *g, opsched_graph *ng, int t, int gamma,
                                 int64_t N, const char *name, int *id)
{
    const opsched_tensor *x = &g->tensors[t], *gm = &g->tensors[gamma];
    OS_TRY(opsched_graph_add_tensor(ng, name, x->kind, x->dtype, &x->shape, id));
    if (!x->data) return OPSCHED_OK;
    int64_t n = opsched_shape_numel(&x->shape), ng_n = opsched_shape_numel(&gm->shape);
    size_t bytes = (size_t)n * opsched_dtype_size(x->dtype);
    char *d = malloc(bytes ? bytes : 1);
    if (!d) return OS_NOMEM(g->ctx);
    for (int64_t k = 0; k < n; k++)
        payload_put(x, d, k, payload_at(x, k) * payload_at(gm, ng_n == 1 ? 0 : k % N));
    ng->tensors[*id].data = d; /* owned by ng */
    ng->tensors[*id].data_bytes = bytes;
    return OPSCHED_OK;
}

static opsched_status emit_scaled(const opsched_graph *g, int i, const void *site,
                                  opsched_graph *ng, int *map)
{
    (void)i;
    const scale_site *st = site;
    const int64_t N = g->tensors[st->w].shape.d[1];
    const char *mname = g->nodes[st->mul].name;
    char name[300];
    opsched_op_attr none;
    memset(&none, 0, sizeof(none));
    int w, y;
    snprintf(name, sizeof(name), "%s/scaled.weight", mname);
    OS_TRY(add_scaled(g, ng, st->w, st->gamma, N, name, &w));
    /* the last node takes the Mul's output name */
    const char *final = g->tensors[g->nodes[st->mul].outputs[0]].name;
    const char *nm = st->add < 0 && st->tr < 0 ? final : g->tensors[g->nodes[st->mm].outputs[0]].name;
    int in[2] = {map[st->x], w};
    OS_TRY(opsched_graph_add_node(ng, g->nodes[st->mm].name, OPSCHED_OP_MATMUL, &none, in, 2, 1,
                                  &nm, &y));
    if (st->add >= 0) {
        int b;
        snprintf(name, sizeof(name), "%s/scaled.bias", mname);
        OS_TRY(add_scaled(g, ng, st->b, st->gamma, N, name, &b));
        nm = st->tr < 0 ? final : g->tensors[g->nodes[st->add].outputs[0]].name;
        int in2[2] = {y, b};
        OS_TRY(opsched_graph_add_node(ng, g->nodes[st->add].name, OPSCHED_OP_ADD, &none, in2, 2,
                                      1, &nm, &y));
    }
    if (st->tr >= 0)
        OS_TRY(opsched_graph_add_node(ng, g->nodes[st->tr].name, OPSCHED_OP_TRANSPOSE,
                                      &g->nodes[st->tr].attr, &y, 1, 1, &final, &y));
    map[g->nodes[st->mul].outputs[0]] = y;
    return OPSCHED_OK;
}

static int find_scale(const opsched_graph *g, int i, void *site, int *nodes, int *n)
{
    scale_site *s = site;
    if (!scale_site_find(g, i, s)) return -1;
    *n = 0;
    nodes[(*n)++] = s->mm;
    nodes[(*n)++] = s->mul;
    if (s->add >= 0) nodes[(*n)++] = s->add;
    if (s->tr >= 0) nodes[(*n)++] = s->tr;
    return s->mm;
}

/* Replaces *gp by a graph whose layer scales are folded into the products. */
static opsched_status fold_scales(opsched_graph **gp, int *n_changed)
{
    site_pass sp = {sizeof(scale_site), find_scale, emit_scaled, NULL, NULL};
    return run_sites(gp, &sp, n_changed);
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
    OS_TRY_GOTO(st, replace(gp, claimed, rw, has_rw, NULL, NULL, map), done);
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
    /* then attention's operands read in place, the projections that feed
     * them merged, and their slices read in place too */
    int n_views = 0, n_merged = 0, more = 0, n_unit = 0, n_gemm = 0, n_scaled = 0;
    if (st == OPSCHED_OK) st = unit_transposes(gp, &n_unit);
    if (st == OPSCHED_OK) st = gemm_layers(gp, &n_gemm);
    if (st == OPSCHED_OK && !(flags & OPSCHED_REWRITE_KEEP_SCALES)) st = fold_scales(gp, &n_scaled);
    if (st == OPSCHED_OK && !(flags & OPSCHED_REWRITE_KEEP_ATTENTION))
        st = attention_views(gp, &n_views);
    if (st == OPSCHED_OK && n_views > 0 && !(flags & OPSCHED_REWRITE_KEEP_PROJECTIONS))
        st = merge_siblings(gp, &n_merged);
    if (st == OPSCHED_OK && n_merged > 0) st = attention_views(gp, &more);
    if (st == OPSCHED_OK && (n_gemm > 0 || n_merged > 0 || n_scaled > 0)) {
        /* the weights the products no longer read (rebuild leaves them out) */
        int *map2 = malloc(((*gp)->n_tensors + 1) * sizeof(int));
        st = map2 ? replace(gp, NULL, NULL, NULL, NULL, NULL, map2) : OS_NOMEM((*gp)->ctx);
        free(map2);
    }
    if (st == OPSCHED_OK && n_rewritten) *n_rewritten =
        count + n_dup + n_unit + n_gemm + n_scaled + n_views + n_merged;
    return st;
}
