/*
 * layout.c - which 4-D tensors a channels-last plan keeps row-major.
 *
 * Under the NHWC layout every 4-D tensor is stored channels-last.  A
 * network that permutes a feature map to [N, H, W, C] itself (ConvNeXt's
 * LayerNorm and MLP, Swin's windows) then stores that tensor channels-last
 * too, a second permutation: the Transpose copies, and the LayerNorm, the
 * products and the element-wise ops after it walk a strided order.  Here
 * such a tensor is stored row-major instead, whose bytes are the channels-
 * last map's: the Transpose that made it is a view, and so is the one that
 * permutes back (to [N, C, H, W], stored channels-last again).  A 4-D
 * tensor that a Reshape makes from one of another rank (a transformer's
 * [B, S, H, D] heads) is no image either: row-major, its Reshape is a view;
 * nor is the output of an Attention node that reads its operands from
 * tensors of another rank.
 *
 * A region of row-major tensors starts at such a Transpose or Reshape and runs
 * forward through ops that see only their tensors' strides (element-wise,
 * LayerNorm, Softmax, MatMul, reductions, views, other Transposes); it is
 * kept only where every op that touches it agrees (all its 4-D tensors
 * row-major, or it is the Transpose in or out): an op that would read one
 * row-major and one channels-last map, or a convolution or pooling that
 * would read a row-major one, clears the tensors it touches, and that
 * spreads until every op agrees.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "graph/graph_impl.h"

/* The same bytes in both orders: not 4-D, one channel, or one pixel. */
static int invariant(const opsched_tensor *t)
{
    return !t || t->shape.ndim != 4 || t->shape.d[1] == 1 || t->shape.d[2] * t->shape.d[3] == 1;
}

static int perm_is(const opsched_node *n, int a, int b, int c, int d)
{
    const opsched_transpose_attr *p = &n->attr.transpose;
    return n->op == OPSCHED_OP_TRANSPOSE && p->n == 4 && p->perm[0] == a && p->perm[1] == b &&
           p->perm[2] == c && p->perm[3] == d;
}

/* Ops whose plans follow each tensor's strides, whatever its order: the
 * activations and arithmetic (Relu to Pow in opsched_op_kind's order), the
 * generic families from Unary to Reduce, views, and these. */
_Static_assert(OPSCHED_OP_POW - OPSCHED_OP_RELU == 13 && OPSCHED_OP_REDUCE - OPSCHED_OP_UNARY == 4,
               "the ranges agnostic() takes changed: list their ops again");

static int agnostic(const opsched_node *n)
{
    if ((n->op >= OPSCHED_OP_RELU && n->op <= OPSCHED_OP_POW) ||
        (n->op >= OPSCHED_OP_UNARY && n->op <= OPSCHED_OP_REDUCE) || opsched_op_is_view(n->op))
        return 1;
    return n->op == OPSCHED_OP_SOFTMAX || n->op == OPSCHED_OP_LOGSOFTMAX ||
           n->op == OPSCHED_OP_LAYERNORM || n->op == OPSCHED_OP_REDUCEMEAN ||
           n->op == OPSCHED_OP_TRANSPOSE || n->op == OPSCHED_OP_MATMUL ||
           n->op == OPSCHED_OP_ATTENTION;
}

static const opsched_tensor *tensor(const opsched_graph *g, int id)
{
    return id >= 0 ? opsched_graph_tensor(g, id) : NULL;
}

/* The Transpose into a region: a channels-last map permuted to [N, H, W, C]. */
static int entry(const opsched_graph *g, const opsched_node *n, const unsigned char *rm)
{
    return perm_is(n, 0, 2, 3, 1) && n->n_inputs >= 1 && n->inputs[0] >= 0 &&
           !invariant(tensor(g, n->inputs[0])) && !rm[n->inputs[0]] && rm[n->outputs[0]];
}

/* The Transpose out of one: [N, H, W, C] permuted back to a map. */
static int exit_of(const opsched_graph *g, const opsched_node *n, const unsigned char *rm)
{
    return perm_is(n, 0, 3, 1, 2) && n->n_inputs >= 1 && n->inputs[0] >= 0 &&
           !invariant(tensor(g, n->outputs[0])) && rm[n->inputs[0]] && !rm[n->outputs[0]];
}

int opsched_layout_transpose_view(const opsched_graph *g, int node, const unsigned char *rm)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || !rm || n->n_outputs != 1) return 0;
    return entry(g, n, rm) || exit_of(g, n, rm);
}

/* Clears the row-major tensors of node n when it does not agree; 1 when it
 * cleared any. */
static int settle(const opsched_graph *g, const opsched_node *n, unsigned char *rm,
                  unsigned char *pinned)
{
    if (n->n_outputs == 1 && (entry(g, n, rm) || exit_of(g, n, rm))) return 0;
    int has_rm = 0, has_cl = 0;
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int id = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        const opsched_tensor *t = tensor(g, id);
        if (invariant(t)) continue;
        if (rm[id]) has_rm = 1;
        else if (t->kind == OPSCHED_TENSOR_INPUT || t->kind == OPSCHED_TENSOR_ACTIVATION ||
                 pinned[id])
            has_cl = 1; /* a pinned constant is channels-last for good */
    }
    if (!has_rm) return 0;
    int keep = !has_cl && agnostic(n);
    int changed = 0;
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int id = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        const opsched_tensor *t = tensor(g, id);
        if (invariant(t)) continue;
        if (keep) {
            /* a constant map read inside the region is stored row-major too */
            if (!rm[id] && t->kind != OPSCHED_TENSOR_ACTIVATION &&
                t->kind != OPSCHED_TENSOR_INPUT) {
                rm[id] = 1;
                changed = 1;
            }
        } else if (rm[id]) {
            rm[id] = 0;
            /* a constant a channels-last op reads cannot be row-major
             * elsewhere: pinned, so no region marks it again */
            if (t->kind != OPSCHED_TENSOR_ACTIVATION && t->kind != OPSCHED_TENSOR_INPUT)
                pinned[id] = 1;
            changed = 1;
        }
    }
    return changed;
}

/* 1 when a constant marked row-major is also read where maps are
 * channels-last (then it cannot be both). */
static int constant_split(const opsched_graph *g, unsigned char *rm, unsigned char *pinned)
{
    int changed = 0;
    int nn = opsched_graph_num_nodes(g);
    for (int i = 0; i < nn; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        int region = 0;
        for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
            int id = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
            const opsched_tensor *t = tensor(g, id);
            if (!invariant(t) && rm[id] && t->kind == OPSCHED_TENSOR_ACTIVATION) region = 1;
        }
        if (region) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            const opsched_tensor *t = tensor(g, n->inputs[k]);
            if (!invariant(t) && rm[n->inputs[k]] && t->kind != OPSCHED_TENSOR_ACTIVATION &&
                t->kind != OPSCHED_TENSOR_INPUT) {
                /* read by a channels-last op: every region that reads it
                 * must go (settle clears them once the constant is) */
                rm[n->inputs[k]] = 0;
                pinned[n->inputs[k]] = 1;
                changed = 1;
            }
        }
    }
    return changed;
}

int opsched_layout_rowmajor(const opsched_graph *g, unsigned char *rm)
{
    if (!g || !rm) return 0;
    int nt = opsched_graph_num_tensors(g), nn = opsched_graph_num_nodes(g);
    memset(rm, 0, (size_t)nt);
    /* forward from every Transpose into [N, H, W, C], in node order */
    for (int i = 0; i < nn; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        if (n->n_outputs < 1) continue;
        int seed = perm_is(n, 0, 2, 3, 1) && n->n_inputs >= 1 && n->inputs[0] >= 0 &&
                   !invariant(tensor(g, n->inputs[0])) && !rm[n->inputs[0]];
        /* a 4-D tensor made by reshaping one of another rank is no image
         * (a transformer's [B, S, H, D] heads): kept in its row-major order
         * the Reshape stays a view */
        if (!seed && opsched_op_is_view(n->op) && n->n_inputs >= 1 && n->inputs[0] >= 0 &&
            tensor(g, n->inputs[0]) && tensor(g, n->inputs[0])->shape.ndim != 4)
            seed = 1;
        /* so is an attention's output [B, S, H, D] or [B, H, S, D] when it
         * reads its operands from tensors of another rank (views of a
         * packed projection) */
        if (!seed && n->op == OPSCHED_OP_ATTENTION) {
            int four = 0;
            for (int k = 0; k < n->n_inputs && k < 3; k++)
                four |= n->inputs[k] >= 0 && tensor(g, n->inputs[k]) &&
                        tensor(g, n->inputs[k])->shape.ndim == 4;
            seed = !four;
        }
        int from = 0;
        if (!seed && agnostic(n) && !perm_is(n, 0, 3, 1, 2))
            for (int k = 0; k < n->n_inputs; k++)
                if (n->inputs[k] >= 0 && rm[n->inputs[k]]) from = 1;
        if (!seed && !from) continue;
        for (int k = 0; k < n->n_outputs; k++)
            if (!invariant(tensor(g, n->outputs[k]))) rm[n->outputs[k]] = 1;
    }
    /* then clear what does not agree, until everything does (a constant
     * cleared because a channels-last op reads it stays cleared, so the
     * regions that read it go too, and the loop ends) */
    unsigned char *pinned = calloc((size_t)nt + 1, 1);
    if (!pinned) {
        memset(rm, 0, (size_t)nt); /* no memory: every tensor in the plan's layout */
        return 0;
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < nn; i++)
            changed |= settle(g, opsched_graph_node(g, i), rm, pinned);
        if (!changed) changed = constant_split(g, rm, pinned);
    }
    free(pinned);
    int count = 0;
    for (int t = 0; t < nt; t++)
        count += rm[t] != 0;
    return count;
}

opsched_status opsched_layout_rowmajor_new(const opsched_graph *g, unsigned char **out)
{
    *out = NULL;
    int nt = g ? opsched_graph_num_tensors(g) : 0;
    if (nt <= 0) return OPSCHED_OK;
    unsigned char *rm = calloc((size_t)nt, 1);
    if (!rm) return OS_NOMEM(opsched_graph_ctx(g));
    if (opsched_layout_rowmajor(g, rm) == 0) {
        free(rm);
        return OPSCHED_OK;
    }
    *out = rm;
    return OPSCHED_OK;
}

ptrdiff_t opsched_graph_tensor_index(const opsched_graph *g, const opsched_tensor *t)
{
    if (!g || !t || g->n_tensors == 0) return -1;
    uintptr_t base = (uintptr_t)g->tensors, p = (uintptr_t)t;
    if (p < base || p >= base + g->n_tensors * sizeof(*g->tensors)) return -1;
    if ((p - base) % sizeof(*g->tensors)) return -1;
    return (ptrdiff_t)((p - base) / sizeof(*g->tensors));
}
