/*
 * movement.c - runs of data-movement nodes read as one strided gather.
 *
 * Reshape (and Flatten, Squeeze, Unsqueeze), Identity, Dropout, Transpose
 * and Slice move data without computing.  A run of them, each reading the
 * one before, picks for every element of its last output one element of
 * its first input; where that choice is affine in the output's index (as
 * it is for ShuffleNet's channel shuffle and the slices after it, a
 * window partition, a patch flattening), the run is one strided copy.
 *
 * opsched_move_compose finds the affine map.  Each logical dimension of
 * the running value is a list of factors, outermost first, each a size and
 * a stride into the source: a dimension whose index i walks the factors as
 * digits of a mixed-radix number reads sum(digit_k * stride_k).  Transpose
 * permutes the lists.  Slice takes part of a list: a single factor any
 * part (start and step), several factors a part aligned to all but the
 * outermost.  Reshape joins every factor into one row-major sequence and
 * cuts it again at the new dimensions, splitting a factor where a new
 * dimension ends inside it (a factor of size a*b and stride t is (a, t*b)
 * outside (b, t)); a cut that does not divide the factor means the map is
 * not affine, and the run is not one copy.
 *
 * A run whose source is a Concat's output can read the Concat's inputs
 * instead (opsched_move_concat): the source offset the view gives is
 * decoded into the position along the Concat's axis, which names the
 * input.  Where only such runs read the Concat, it need not be written.
 */
#include "graph/graph_impl.h"

#include <stdlib.h>
#include <string.h>

/* Factors of one dimension at most, and in all. */
#define MOVE_DIM_FACTORS 8

typedef struct mv_dim {
    int n;
    int64_t size[MOVE_DIM_FACTORS], stride[MOVE_DIM_FACTORS];
} mv_dim;

typedef struct mv_state {
    int ndim;
    mv_dim d[OPSCHED_MAX_DIMS];
    int64_t offset;
} mv_state;

int opsched_op_is_movement(const opsched_node *n)
{
    if (!n || n->n_outputs != 1 || n->n_inputs < 1 || n->inputs[0] < 0) return 0;
    return n->op == OPSCHED_OP_RESHAPE || n->op == OPSCHED_OP_FLATTEN ||
           n->op == OPSCHED_OP_IDENTITY || n->op == OPSCHED_OP_DROPOUT ||
           n->op == OPSCHED_OP_TRANSPOSE || n->op == OPSCHED_OP_SLICE;
}

/* Appends factor (size, stride) to dimension d; size-1 factors are
 * dropped (they move nothing).  0 when d is full. */
static int push(mv_dim *d, int64_t size, int64_t stride)
{
    if (size == 1) return 1;
    if (d->n == MOVE_DIM_FACTORS) return 0;
    d->size[d->n] = size;
    d->stride[d->n] = stride;
    d->n++;
    return 1;
}

static int reshape(mv_state *s, const opsched_shape *to)
{
    int64_t size[OPSCHED_MAX_DIMS * MOVE_DIM_FACTORS], stride[OPSCHED_MAX_DIMS * MOVE_DIM_FACTORS];
    int n = 0, k = 0;
    for (int i = 0; i < s->ndim; i++)
        for (int j = 0; j < s->d[i].n; j++) {
            size[n] = s->d[i].size[j];
            stride[n++] = s->d[i].stride[j];
        }
    mv_state r;
    memset(&r, 0, sizeof(r));
    r.ndim = to->ndim;
    r.offset = s->offset;
    for (int i = 0; i < to->ndim; i++) {
        int64_t want = to->d[i], have = 1;
        if (want < 1) return 0;
        while (have < want) {
            if (k == n) return 0;
            int64_t need = want / have;
            if (want % have) return 0;
            if (size[k] <= need) {
                if (need % size[k]) return 0;
                if (!push(&r.d[i], size[k], stride[k])) return 0;
                have *= size[k];
                k++;
            } else {
                /* the dimension ends inside factor k: its outer part here */
                if (size[k] % need) return 0;
                int64_t inner = size[k] / need;
                if (!push(&r.d[i], need, stride[k] * inner)) return 0;
                have *= need;
                size[k] = inner;
            }
        }
    }
    if (k != n) return 0;
    *s = r;
    return 1;
}

static int slice_dim(mv_dim *d, int64_t start, int64_t step, int64_t len, int64_t *offset)
{
    if (len == 0) return 0;
    if (d->n == 0) return start == 0 && len == 1;
    if (d->n == 1) {
        *offset += start * d->stride[0];
        d->size[0] = len;
        d->stride[0] *= step;
        if (len == 1) d->n = 0;
        return 1;
    }
    /* several factors: a part of the outermost, the inner ones whole */
    int64_t inner = 1;
    for (int j = 1; j < d->n; j++)
        inner *= d->size[j];
    if (step != 1 || start % inner || len % inner) return 0;
    *offset += (start / inner) * d->stride[0];
    d->size[0] = len / inner;
    if (d->size[0] == 1) {
        memmove(d->size, d->size + 1, sizeof(int64_t) * (size_t)(d->n - 1));
        memmove(d->stride, d->stride + 1, sizeof(int64_t) * (size_t)(d->n - 1));
        d->n--;
    }
    return 1;
}

static int step(const opsched_graph *g, const opsched_node *n, mv_state *s)
{
    const opsched_tensor *x = opsched_graph_tensor(g, n->inputs[0]);
    const opsched_tensor *y = opsched_graph_tensor(g, n->outputs[0]);
    if (!x || !y || x->shape.ndim != s->ndim) return 0;
    switch (n->op) {
    case OPSCHED_OP_TRANSPOSE: {
        if (y->shape.ndim != s->ndim) return 0;
        mv_state t = *s;
        for (int i = 0; i < s->ndim; i++) {
            int p = n->attr.transpose.perm[i];
            if (p < 0 || p >= s->ndim) return 0;
            t.d[i] = s->d[p];
        }
        *s = t;
        return 1;
    }
    case OPSCHED_OP_SLICE:
        if (y->shape.ndim != s->ndim) return 0;
        for (int i = 0; i < s->ndim; i++) {
            if (y->shape.d[i] == x->shape.d[i] && n->attr.slice.starts[i] == 0 &&
                n->attr.slice.steps[i] == 1)
                continue;
            if (!slice_dim(&s->d[i], n->attr.slice.starts[i], n->attr.slice.steps[i], y->shape.d[i],
                           &s->offset))
                return 0;
        }
        return 1;
    default: /* Reshape, Flatten, Identity, Dropout (inference: identity) */
        return reshape(s, &y->shape);
    }
}

int opsched_move_compose(const opsched_graph *g, const int *nodes, int n,
                         const int64_t *src_strides, opsched_move_view *out)
{
    if (!g || !nodes || n < 1 || !src_strides || !out) return 0;
    const opsched_node *first = opsched_graph_node(g, nodes[0]);
    if (!opsched_op_is_movement(first)) return 0;
    const opsched_tensor *x = opsched_graph_tensor(g, first->inputs[0]);
    if (!x || x->shape.ndim > OPSCHED_MAX_DIMS) return 0;
    mv_state s;
    memset(&s, 0, sizeof(s));
    s.ndim = x->shape.ndim;
    for (int i = 0; i < s.ndim; i++) {
        if (x->shape.d[i] < 1) return 0;
        push(&s.d[i], x->shape.d[i], src_strides[i]);
    }
    for (int k = 0; k < n; k++) {
        const opsched_node *nd = opsched_graph_node(g, nodes[k]);
        if (!opsched_op_is_movement(nd)) return 0;
        if (k > 0 && nd->inputs[0] != opsched_graph_node(g, nodes[k - 1])->outputs[0]) return 0;
        if (!step(g, nd, &s)) return 0;
    }
    const opsched_tensor *y =
        opsched_graph_tensor(g, opsched_graph_node(g, nodes[n - 1])->outputs[0]);
    if (!y || y->shape.ndim != s.ndim) return 0;
    memset(out, 0, sizeof(*out));
    out->offset = s.offset;
    for (int i = 0; i < s.ndim; i++)
        for (int j = 0; j < s.d[i].n; j++) {
            if (out->n == OPSCHED_MOVE_MAX_FACTORS) return 0;
            out->size[out->n] = s.d[i].size[j];
            out->stride[out->n] = s.d[i].stride[j];
            out->dim[out->n] = i;
            out->n++;
        }
    return 1;
}

void opsched_move_dst_strides(const opsched_move_view *v, const int64_t *dst_strides, int64_t *out)
{
    /* within a dimension, a factor steps over the product of the inner ones */
    for (int f = v->n - 1; f >= 0; f--) {
        int64_t inner = 1;
        for (int j = f + 1; j < v->n && v->dim[j] == v->dim[f]; j++)
            inner *= v->size[j];
        out[f] = dst_strides[v->dim[f]] * inner;
    }
}

/* outside[t] = 1 when tensor t must exist in memory: it is a graph output,
 * or a node other than a movement node reads it, or a movement node reads
 * it other than as its data.  One pass over every node's inputs. */
static void mark_outside(const opsched_graph *g, unsigned char *outside)
{
    for (int k = 0; k < opsched_graph_num_outputs(g); k++) {
        int t = opsched_graph_output(g, k);
        if (t >= 0) outside[t] = 1;
    }
    for (int c = 0; c < opsched_graph_num_nodes(g); c++) {
        const opsched_node *m = opsched_graph_node(g, c);
        int mv = opsched_op_is_movement(m);
        for (int k = 0; k < m->n_inputs; k++)
            if (m->inputs[k] >= 0 && (k > 0 || !mv)) outside[m->inputs[k]] = 1;
    }
}

int opsched_move_runs(const opsched_graph *g, const unsigned char *no_head, int *role)
{
    int nn = opsched_graph_num_nodes(g), runs = 0;
    unsigned char *outside = calloc((size_t)opsched_graph_num_tensors(g) + 1, 1);
    if (!outside) { /* no runs: every node as it was */
        for (int i = 0; i < nn; i++)
            role[i] = opsched_op_is_movement(opsched_graph_node(g, i)) ? OPSCHED_MOVE_ALONE
                                                                       : OPSCHED_MOVE_NONE;
        return 0;
    }
    mark_outside(g, outside);
    /* internal: a movement node only movement nodes read, as their data */
    for (int i = 0; i < nn; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        role[i] = !opsched_op_is_movement(n) ? OPSCHED_MOVE_NONE
                  : outside[n->outputs[0]]   ? OPSCHED_MOVE_ALONE
                                             : OPSCHED_MOVE_INSIDE;
    }
    free(outside);
    /* An end (a movement node read outside) whose input an internal node
     * makes heads a run back through the internal ones.  Where the run is
     * not affine (or longer than OPSCHED_MOVE_MAX_RUN, or may not end
     * there) the internal node it stops at must exist after all: it becomes
     * an end, and the runs are found again until none changes (a node only
     * ever leaves INSIDE, so this ends).  Whether a run is affine depends on
     * the sizes alone, not on the strides (the layouts), so row-major ones
     * decide it. */
    for (int changed = 1; changed;) {
        changed = 0;
        runs = 0;
        for (int e = 0; e < nn; e++) {
            if (role[e] == OPSCHED_MOVE_NONE || role[e] == OPSCHED_MOVE_INSIDE) continue;
            int path[OPSCHED_MOVE_MAX_RUN];
            int len = opsched_move_run(g, role, e, path);
            role[e] = len >= 2 ? OPSCHED_MOVE_HEAD : OPSCHED_MOVE_ALONE;
            if (len < 2) continue;
            const opsched_node *first = opsched_graph_node(g, path[0]);
            const opsched_tensor *x = opsched_graph_tensor(g, first->inputs[0]);
            int64_t st[OPSCHED_MAX_DIMS], acc = 1;
            for (int d = x->shape.ndim - 1; d >= 0; d--) {
                st[d] = acc;
                acc *= x->shape.d[d];
            }
            opsched_move_view v;
            if (no_head && no_head[e]) {
                role[e] = OPSCHED_MOVE_ALONE; /* its input must exist: it aliases it */
                role[path[len - 2]] = OPSCHED_MOVE_ALONE;
                changed = 1;
            } else if (x->producer >= 0 && role[x->producer] == OPSCHED_MOVE_INSIDE) {
                role[x->producer] = OPSCHED_MOVE_ALONE; /* the run was cut at its length */
                changed = 1;
            } else if (!opsched_move_compose(g, path, len, st, &v)) {
                role[path[len - 2]] = OPSCHED_MOVE_ALONE;
                changed = 1;
            } else {
                runs++;
            }
        }
    }
    return runs;
}

int opsched_move_run(const opsched_graph *g, const int *role, int end, int *path)
{
    int rev[OPSCHED_MOVE_MAX_RUN], n = 0;
    rev[n++] = end;
    const opsched_node *cur = opsched_graph_node(g, end);
    while (n < OPSCHED_MOVE_MAX_RUN) {
        const opsched_tensor *x = opsched_graph_tensor(g, cur->inputs[0]);
        int p = x ? x->producer : -1;
        if (p < 0 || role[p] != OPSCHED_MOVE_INSIDE) break;
        rev[n++] = p;
        cur = opsched_graph_node(g, p);
    }
    for (int k = 0; k < n; k++)
        path[k] = rev[n - 1 - k];
    return n;
}

int opsched_move_concat(const opsched_graph *g, int first)
{
    const opsched_node *n = opsched_graph_node(g, first);
    if (!opsched_op_is_movement(n)) return -1;
    const opsched_tensor *x = opsched_graph_tensor(g, n->inputs[0]);
    int c = x ? x->producer : -1;
    const opsched_node *cn = c >= 0 ? opsched_graph_node(g, c) : NULL;
    if (!cn || cn->op != OPSCHED_OP_CONCAT || cn->n_outputs != 1 || cn->n_inputs < 1 ||
        cn->n_inputs > OPSCHED_MOVE_MAX_CONCAT || os_graph_is_output(g, n->inputs[0]))
        return -1;
    int axis = (int)cn->attr.axis.axis;
    if (axis < 0) axis += x->shape.ndim;
    if (axis < 0 || axis >= x->shape.ndim) return -1;
    for (int k = 0; k < cn->n_inputs; k++) {
        const opsched_tensor *t = opsched_graph_tensor(g, cn->inputs[k]);
        if (!t || t->dtype != x->dtype || t->shape.ndim != x->shape.ndim || t->shape.d[axis] < 1)
            return -1;
    }
    return c;
}

int opsched_move_concat_unread(const opsched_graph *g, const int *role, int c)
{
    const opsched_node *cn = opsched_graph_node(g, c);
    if (!cn || cn->op != OPSCHED_OP_CONCAT || cn->n_outputs != 1) return 0;
    int t = cn->outputs[0], readers = 0;
    for (int j = c + 1; j < opsched_graph_num_nodes(g); j++) {
        const opsched_node *r = opsched_graph_node(g, j);
        for (int k = 0; k < r->n_inputs; k++) {
            if (r->inputs[k] != t) continue;
            if (k != 0 || role[j] != OPSCHED_MOVE_INSIDE || opsched_move_concat(g, j) != c)
                return 0;
            readers++;
        }
    }
    return readers > 0;
}
