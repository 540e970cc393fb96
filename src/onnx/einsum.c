/*
 * einsum.c - Einsum as Transpose, Reshape, Slice, ReduceSum, MatMul and Mul
 * nodes.
 *
 * The equation is parsed into one list of labels per operand (letters, and
 * the dimensions an ellipsis stands for, right-aligned across operands as
 * numpy broadcasts them) and one for the output (given after "->", or the
 * labels seen once, in ASCII order, after the ellipsis).  Then:
 *
 *   - a label repeated within an operand takes the diagonal: the two axes
 *     moved last, merged (n*n), and every (n+1)-th element sliced out;
 *   - a label no later step needs is summed out (ReduceSum);
 *   - operands are contracted left to right, two at a time: both are
 *     transposed to [batch..., kept..., summed...] and reshaped so that one
 *     batched MatMul does the work (a Mul when nothing is summed), then
 *     reshaped back to [batch..., kept of the first..., kept of the second...];
 *   - the result is transposed to the output's order.
 *
 * Labels of size 1 broadcast against any size.  Anything the parser does
 * not accept is an error that quotes the equation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

#define N_LETTERS 52 /* 'A'..'Z' are 0..25, 'a'..'z' 26..51: ASCII order */
#define N_LABELS (N_LETTERS + OPSCHED_MAX_DIMS)
#define MAX_OPERANDS 16

typedef struct term {
    int n;
    int lab[OPSCHED_MAX_DIMS];
} term;

typedef struct operand {
    int id; /* graph tensor */
    term t;
} operand;

typedef struct einsum {
    os_loader *L;
    int node;
    const char *eq;
    int n_ops;
    operand op[MAX_OPERANDS];
    term out;
    int64_t size[N_LABELS];
    int step; /* numbers the tags */
} einsum;

static opsched_status bad_eq(einsum *e, const char *why)
{
    return os_onnx_node_fail(e->L, e->node, OPSCHED_ERR_UNSUPPORTED,
                             "equation \"%s\" is not supported: %s", e->eq, why);
}

static int letter(char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
    return -1;
}

/* Parses one term (spaces already gone) into letters and an ellipsis
 * position; *ell = -1 when none. */
static opsched_status parse_term(einsum *e, const char *s, size_t len, int *labs, int *n, int *ell)
{
    *n = 0;
    *ell = -1;
    for (size_t i = 0; i < len;) {
        if (s[i] == '.') {
            if (i + 3 > len || s[i + 1] != '.' || s[i + 2] != '.' || *ell >= 0)
                return bad_eq(e, "a '.' that is not one ellipsis \"...\"");
            *ell = *n;
            i += 3;
            continue;
        }
        int l = letter(s[i]);
        if (l < 0) return bad_eq(e, "only letters, ',', '...' and '->' may appear");
        if (*n >= OPSCHED_MAX_DIMS) return bad_eq(e, "a term has more than 8 labels");
        labs[(*n)++] = l;
        i++;
    }
    return OPSCHED_OK;
}

static opsched_status parse(einsum *e)
{
    char eq[512];
    size_t n = 0;
    for (const char *p = e->eq; *p; p++) {
        if (*p == ' ') continue;
        if (n + 1 >= sizeof(eq)) return bad_eq(e, "it is too long");
        eq[n++] = *p;
    }
    eq[n] = '\0';
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : n;
    if (arrow && strstr(arrow + 2, "->")) return bad_eq(e, "more than one \"->\"");
    int letters[MAX_OPERANDS][OPSCHED_MAX_DIMS], nl[MAX_OPERANDS], ell[MAX_OPERANDS];
    int k = 0, max_e = 0;
    for (size_t start = 0; k <= e->n_ops;) {
        size_t end = start;
        while (end < lhs_len && eq[end] != ',')
            end++;
        if (k >= e->n_ops) return bad_eq(e, "it has more terms than the node has inputs");
        OS_TRY(parse_term(e, eq + start, end - start, letters[k], &nl[k], &ell[k]));
        int rank = os_onnx_t(e->L, e->op[k].id)->shape.ndim;
        int ne = rank - nl[k];
        if (ne < 0 || (ell[k] < 0 && ne != 0)) {
            char m[128];
            snprintf(m, sizeof(m), "term %d has %d labels for an input of rank %d", k, nl[k], rank);
            return bad_eq(e, m);
        }
        max_e = OS_MAX(max_e, ne);
        k++;
        if (end >= lhs_len) break;
        start = end + 1;
    }
    if (k != e->n_ops) return bad_eq(e, "it has fewer terms than the node has inputs");
    int count[N_LABELS] = {0};
    for (int i = 0; i < N_LABELS; i++)
        e->size[i] = -1;
    for (k = 0; k < e->n_ops; k++) {
        const opsched_shape *s = &os_onnx_t(e->L, e->op[k].id)->shape;
        int ne = s->ndim - nl[k];
        term *t = &e->op[k].t;
        t->n = 0;
        for (int i = 0; i <= nl[k]; i++) {
            if (i == ell[k])
                for (int j = 0; j < ne; j++)
                    t->lab[t->n++] = N_LETTERS + (max_e - ne) + j;
            if (i < nl[k]) t->lab[t->n++] = letters[k][i];
        }
        for (int d = 0; d < t->n; d++) {
            int l = t->lab[d];
            int64_t sz = s->d[d];
            if (e->size[l] < 0 || e->size[l] == 1)
                e->size[l] = sz;
            else if (sz != 1 && sz != e->size[l]) {
                char m[128];
                snprintf(m, sizeof(m), "a label stands for sizes %lld and %lld",
                         (long long)e->size[l], (long long)sz);
                return bad_eq(e, m);
            }
            count[l]++;
        }
    }
    e->out.n = 0;
    if (arrow) {
        int ol[OPSCHED_MAX_DIMS], on, oe;
        OS_TRY(parse_term(e, arrow + 2, strlen(arrow + 2), ol, &on, &oe));
        if (on + (oe >= 0 ? max_e : 0) > OPSCHED_MAX_DIMS)
            return bad_eq(e, "the output has more than 8 dimensions");
        for (int i = 0; i <= on; i++) {
            if (i == oe)
                for (int j = 0; j < max_e; j++)
                    e->out.lab[e->out.n++] = N_LETTERS + j;
            if (i < on) {
                if (!count[ol[i]]) return bad_eq(e, "an output label is in no input");
                for (int j = 0; j < e->out.n; j++)
                    if (e->out.lab[j] == ol[i]) return bad_eq(e, "an output label repeats");
                e->out.lab[e->out.n++] = ol[i];
            }
        }
    } else {
        for (int j = 0; j < max_e; j++)
            e->out.lab[e->out.n++] = N_LETTERS + j;
        for (int l = 0; l < N_LETTERS; l++)
            if (count[l] == 1) {
                if (e->out.n >= OPSCHED_MAX_DIMS)
                    return bad_eq(e, "the output has more than 8 dimensions");
                e->out.lab[e->out.n++] = l;
            }
    }
    return OPSCHED_OK;
}

static int has(const term *t, int l)
{
    for (int i = 0; i < t->n; i++)
        if (t->lab[i] == l) return 1;
    return 0;
}

static char *tag(einsum *e, const char *what, char *buf, size_t size)
{
    snprintf(buf, size, "%s%d", what, ++e->step);
    return buf;
}

/* Takes the diagonal of every label repeated within operand o. */
static opsched_status diagonals(einsum *e, operand *o)
{
    char tb[32];
    for (;;) {
        int a = -1, b = -1;
        for (int i = 0; i < o->t.n && a < 0; i++)
            for (int j = i + 1; j < o->t.n; j++)
                if (o->t.lab[i] == o->t.lab[j]) {
                    a = i;
                    b = j;
                    break;
                }
        if (a < 0) return OPSCHED_OK;
        const opsched_shape s = os_onnx_t(e->L, o->id)->shape;
        if (s.d[a] != s.d[b]) return bad_eq(e, "a repeated label has two sizes in one input");
        int64_t perm[OPSCHED_MAX_DIMS], n = s.d[a];
        term t = {0};
        opsched_shape m = {0};
        for (int d = 0; d < o->t.n; d++)
            if (d != a && d != b) {
                perm[t.n] = d;
                m.d[m.ndim++] = s.d[d];
                t.lab[t.n++] = o->t.lab[d];
            }
        perm[t.n] = a;
        perm[t.n + 1] = b;
        if (n > OS_ONNX_MAX_DIM / 2 || n * n > OS_ONNX_MAX_NUMEL) return bad_eq(e, "too large");
        m.d[m.ndim++] = n * n;
        t.lab[t.n++] = o->t.lab[a];
        int x;
        OS_TRY(os_onnx_transpose(e->L, e->node, tag(e, "diag_t", tb, sizeof(tb)), o->id, perm,
                                 OS_TMP, &x));
        OS_TRY(os_onnx_reshape(e->L, e->node, tag(e, "diag_r", tb, sizeof(tb)), x, &m, OS_TMP, &x));
        OS_TRY(os_onnx_slice(e->L, e->node, tag(e, "diag", tb, sizeof(tb)), x, m.ndim - 1, 0, n * n,
                             n + 1, OS_TMP, &o->id));
        o->t = t;
    }
}

/* Sums the axes of o whose labels are not in keep (a mark per label). */
static opsched_status sum_out(einsum *e, operand *o, const int *keep)
{
    int64_t axes[OPSCHED_MAX_DIMS];
    int n = 0;
    term t = {0};
    for (int d = 0; d < o->t.n; d++) {
        if (keep[o->t.lab[d]])
            t.lab[t.n++] = o->t.lab[d];
        else
            axes[n++] = d;
    }
    if (n == 0) return OPSCHED_OK;
    char tb[32];
    OS_TRY(os_onnx_reduce(e->L, e->node, tag(e, "sum", tb, sizeof(tb)), OPSCHED_REDUCE_SUM, o->id,
                          axes, n, 0, OS_TMP, &o->id));
    o->t = t;
    return OPSCHED_OK;
}

/* Transposes o to the label order `order` (a permutation of its labels),
 * then reshapes it to `shape`. */
static opsched_status arrange(einsum *e, operand *o, const term *order, const opsched_shape *shape,
                              int *out)
{
    int64_t perm[OPSCHED_MAX_DIMS];
    for (int i = 0; i < order->n; i++)
        for (int d = 0; d < o->t.n; d++)
            if (o->t.lab[d] == order->lab[i]) perm[i] = d;
    char tb[32];
    int x;
    OS_TRY(os_onnx_transpose(e->L, e->node, tag(e, "arrange", tb, sizeof(tb)), o->id, perm, OS_TMP,
                             &x));
    return os_onnx_reshape(e->L, e->node, tag(e, "shape", tb, sizeof(tb)), x, shape, OS_TMP, out);
}

/* Contracts a and b into a, keeping the labels marked in keep. */
static opsched_status contract(einsum *e, operand *a, operand *b, const int *keep)
{
    term batch = {0}, m = {0}, n = {0}, sum = {0};
    for (int d = 0; d < a->t.n; d++) {
        int l = a->t.lab[d];
        if (!has(&b->t, l))
            m.lab[m.n++] = l;
        else if (keep[l])
            batch.lab[batch.n++] = l;
        else
            sum.lab[sum.n++] = l;
    }
    for (int d = 0; d < b->t.n; d++)
        if (!has(&a->t, b->t.lab[d])) n.lab[n.n++] = b->t.lab[d];
    /* A summed label of size 1 on one side: sum the other side first. */
    for (int i = 0; i < sum.n; i++) {
        int l = sum.lab[i];
        for (int side = 0; side < 2; side++) {
            operand *o = side ? b : a, *other = side ? a : b;
            const opsched_shape *s = &os_onnx_t(e->L, o->id)->shape;
            const opsched_shape *so = &os_onnx_t(e->L, other->id)->shape;
            int64_t mine = 1, theirs = 1;
            for (int d = 0; d < o->t.n; d++)
                if (o->t.lab[d] == l) mine = s->d[d];
            for (int d = 0; d < other->t.n; d++)
                if (other->t.lab[d] == l) theirs = so->d[d];
            if (mine > 1 && theirs == 1) {
                int64_t ax = 0;
                for (int d = 0; d < o->t.n; d++)
                    if (o->t.lab[d] == l) ax = d;
                char tb[32];
                OS_TRY(os_onnx_reduce(e->L, e->node, tag(e, "presum", tb, sizeof(tb)),
                                      OPSCHED_REDUCE_SUM, o->id, &ax, 1, 1, OS_TMP, &o->id));
            }
        }
    }
    const opsched_shape sa = os_onnx_t(e->L, a->id)->shape, sb = os_onnx_t(e->L, b->id)->shape;
    int64_t za[N_LABELS], zb[N_LABELS];
    for (int i = 0; i < N_LABELS; i++)
        za[i] = zb[i] = 1;
    for (int d = 0; d < a->t.n; d++)
        za[a->t.lab[d]] = sa.d[d];
    for (int d = 0; d < b->t.n; d++)
        zb[b->t.lab[d]] = sb.d[d];
    term ta = batch, tb_ = batch, res = batch;
    opsched_shape shape_a = {0}, shape_b = {0};
    for (int i = 0; i < batch.n; i++) {
        shape_a.d[shape_a.ndim++] = za[batch.lab[i]];
        shape_b.d[shape_b.ndim++] = zb[batch.lab[i]];
    }
    for (int i = 0; i < m.n; i++)
        res.lab[res.n++] = m.lab[i];
    for (int i = 0; i < n.n; i++)
        res.lab[res.n++] = n.lab[i];
    if (res.n > OPSCHED_MAX_DIMS || batch.n + 2 > OPSCHED_MAX_DIMS)
        return bad_eq(e, "an intermediate result has more than 8 dimensions");
    int x, y, r;
    char tb[32];
    opsched_shape rs = {0};
    for (int i = 0; i < res.n; i++) {
        int l = res.lab[i];
        rs.d[rs.ndim++] = OS_MAX(za[l], zb[l]);
    }
    OS_TRY(os_onnx_check_dims(e->L, e->node, &rs));
    if (sum.n == 0) {
        /* Nothing summed: a broadcasting product. */
        for (int i = 0; i < m.n; i++) {
            ta.lab[ta.n++] = m.lab[i];
            shape_a.d[shape_a.ndim++] = za[m.lab[i]];
            shape_b.d[shape_b.ndim++] = 1;
        }
        for (int i = 0; i < n.n; i++) {
            tb_.lab[tb_.n++] = n.lab[i];
            shape_a.d[shape_a.ndim++] = 1;
            shape_b.d[shape_b.ndim++] = zb[n.lab[i]];
        }
        OS_TRY(arrange(e, a, &ta, &shape_a, &x));
        OS_TRY(arrange(e, b, &tb_, &shape_b, &y));
        OS_TRY(os_onnx_binop(e->L, e->node, tag(e, "mul", tb, sizeof(tb)), OPSCHED_OP_MUL, x, y,
                             OS_TMP, &r));
        a->id = r;
        a->t = res;
        return OPSCHED_OK;
    }
    int64_t M = 1, N = 1, K = 1;
    for (int i = 0; i < m.n; i++) {
        ta.lab[ta.n++] = m.lab[i];
        M *= za[m.lab[i]];
    }
    for (int i = 0; i < sum.n; i++) {
        ta.lab[ta.n++] = sum.lab[i];
        tb_.lab[tb_.n++] = sum.lab[i];
        K *= za[sum.lab[i]];
    }
    for (int i = 0; i < n.n; i++) {
        tb_.lab[tb_.n++] = n.lab[i];
        N *= zb[n.lab[i]];
    }
    shape_a.d[shape_a.ndim++] = M;
    shape_a.d[shape_a.ndim++] = K;
    shape_b.d[shape_b.ndim++] = K;
    shape_b.d[shape_b.ndim++] = N;
    OS_TRY(arrange(e, a, &ta, &shape_a, &x));
    OS_TRY(arrange(e, b, &tb_, &shape_b, &y));
    OS_TRY(os_onnx_binop(e->L, e->node, tag(e, "matmul", tb, sizeof(tb)), OPSCHED_OP_MATMUL, x, y,
                         OS_TMP, &r));
    OS_TRY(os_onnx_reshape(e->L, e->node, tag(e, "unfold", tb, sizeof(tb)), r, &rs, OS_TMP, &r));
    a->id = r;
    a->t = res;
    return OPSCHED_OK;
}

static opsched_status convert(os_loader *L, int node)
{
    char buf[256];
    const char *eq = NULL;
    OS_TRY(os_onnx_attr_string(L, node, "equation", buf, sizeof(buf), &eq));
    if (!eq)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "attribute 'equation' is required");
    einsum *e = calloc(1, sizeof(*e));
    if (!e) return OS_NOMEM(L->ctx);
    opsched_status st = OPSCHED_OK;
    e->L = L;
    e->node = node;
    e->eq = eq;
    e->n_ops = os_onnx_num_file_in(L, node);
    if (e->n_ops < 1 || e->n_ops > MAX_OPERANDS) {
        st = bad_eq(e, "it needs 1 to 16 inputs");
        goto done;
    }
    for (int k = 0; k < e->n_ops; k++)
        OS_TRY_GOTO(st, os_onnx_in_id(L, node, k, &e->op[k].id), done);
    OS_TRY_GOTO(st, parse(e), done);
    for (int k = 0; k < e->n_ops; k++)
        OS_TRY_GOTO(st, diagonals(e, &e->op[k]), done);
    /* Left to right; the labels kept at each step are those of the output
     * and of the operands still to come. */
    for (int k = 0; k < e->n_ops; k++) {
        int keep[N_LABELS] = {0};
        for (int i = 0; i < e->out.n; i++)
            keep[e->out.lab[i]] = 1;
        for (int j = k + 1; j < e->n_ops; j++)
            for (int i = 0; i < e->op[j].t.n; i++)
                keep[e->op[j].t.lab[i]] = 1;
        int keep_self[N_LABELS];
        memcpy(keep_self, keep, sizeof(keep));
        if (k > 0)
            for (int i = 0; i < e->op[0].t.n; i++)
                keep_self[e->op[0].t.lab[i]] = 1;
        OS_TRY_GOTO(st, sum_out(e, &e->op[k], keep_self), done);
        if (k == 0) continue;
        OS_TRY_GOTO(st, contract(e, &e->op[0], &e->op[k], keep), done);
        OS_TRY_GOTO(st, sum_out(e, &e->op[0], keep), done);
    }
    {
        /* The output's order. */
        operand *r = &e->op[0];
        int64_t perm[OPSCHED_MAX_DIMS];
        if (r->t.n != e->out.n) {
            st = bad_eq(e, "the labels left do not match the output");
            goto done;
        }
        for (int i = 0; i < e->out.n; i++) {
            perm[i] = -1;
            for (int d = 0; d < r->t.n; d++)
                if (r->t.lab[d] == e->out.lab[i]) perm[i] = d;
            if (perm[i] < 0) {
                st = bad_eq(e, "an output label was lost");
                goto done;
            }
        }
        st = os_onnx_transpose(L, node, "out", r->id, perm, 0, NULL);
    }
done:
    free(e);
    return st;
}

opsched_status os_onnx_convert_einsum(os_loader *L, int node, const char *op, int *done)
{
    *done = strcmp(op, "Einsum") == 0;
    return *done ? convert(L, node) : OPSCHED_OK;
}
