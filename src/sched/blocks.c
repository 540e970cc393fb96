/*
 * blocks.c - what the searchers work on: units (a node, with the Relu the
 * executor fuses into a convolution; views left out), the edges between
 * units, and the cutting of a graph into blocks and parts.
 *
 * A block ends at a single-entry/single-exit unit: one that every other
 * unit is an ancestor or a descendant of, so every path through the graph
 * passes through it and no stage of an optimal schedule needs to hold
 * units on both sides of it.  Runs of blocks that are totally ordered (a
 * stem, the tail of a classifier, residual blocks without a side branch)
 * are joined, so a group can hold consecutive operators of a chain; a
 * block longer than the part limit is split, in unit order, into parts of
 * nearly equal size.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "exec/exec_impl.h"
#include "sched/sched_impl.h"

/* ---- units ---------------------------------------------------------------- */

typedef struct edge {
    int from, to;
} edge;

static int edge_cmp(const void *a, const void *b)
{
    const edge *x = a, *y = b;
    if (x->from != y->from) return x->from < y->from ? -1 : 1;
    return (x->to > y->to) - (x->to < y->to);
}

static int edge_cmp_to(const void *a, const void *b)
{
    const edge *x = a, *y = b;
    if (x->to != y->to) return x->to < y->to ? -1 : 1;
    return (x->from > y->from) - (x->from < y->from);
}

/* Compressed rows of the edges sorted by key (from or to). */
static opsched_status build_rows(opsched_ctx *ctx, const edge *e, int ne, int n, int by_to,
                                 int **at, int **list)
{
    *at = calloc((size_t)n + 1, sizeof(int));
    *list = malloc(((size_t)ne + 1) * sizeof(int));
    if (!*at || !*list) return OS_NOMEM(ctx);
    for (int k = 0; k < ne; k++) (*at)[(by_to ? e[k].to : e[k].from) + 1]++;
    for (int i = 0; i < n; i++) (*at)[i + 1] += (*at)[i];
    for (int k = 0; k < ne; k++) (*list)[k] = by_to ? e[k].from : e[k].to;
    return OPSCHED_OK;
}

opsched_status os_units_build(const opsched_graph *g, os_units *out)
{
    opsched_ctx *ctx = opsched_graph_ctx(g);
    memset(out, 0, sizeof(*out));
    int n = opsched_graph_num_nodes(g);
    opsched_status st = OPSCHED_OK;
    edge *e = NULL;
    size_t ne = 0, cap = 0;
    out->u = malloc(((size_t)n + 1) * sizeof(*out->u));
    out->unit_of_node = malloc(((size_t)n + 1) * sizeof(int));
    if (!out->u || !out->unit_of_node) {
        st = OS_NOMEM(ctx);
        goto fail;
    }
    for (int i = 0; i < n; i++) out->unit_of_node[i] = -1;
    for (int i = 0; i < n; i++) {
        const opsched_node *nd = opsched_graph_node(g, i);
        if (opsched_op_is_view(nd->op) || out->unit_of_node[i] >= 0) continue;
        os_unit *u = &out->u[out->n];
        u->node = i;
        u->relu = os_exec_fused_act(g, i);
        out->unit_of_node[i] = out->n;
        if (u->relu >= 0) out->unit_of_node[u->relu] = out->n;
        out->n++;
    }
    for (int i = 0; i < n; i++) {
        int to = out->unit_of_node[i];
        if (to < 0) continue;
        const opsched_node *nd = opsched_graph_node(g, i);
        for (int k = 0; k < nd->n_inputs; k++) {
            if (nd->inputs[k] < 0) continue;
            int p = opsched_tensor_scheduled_producer(g, nd->inputs[k]);
            if (p < 0 || out->unit_of_node[p] == to) continue;
            if (ne == cap) {
                cap = cap ? 2 * cap : 64;
                edge *grown = realloc(e, cap * sizeof(*e));
                if (!grown) {
                    st = OS_NOMEM(ctx);
                    goto fail;
                }
                e = grown;
            }
            e[ne].from = out->unit_of_node[p];
            e[ne].to = to;
            ne++;
        }
    }
    if (ne) qsort(e, ne, sizeof(*e), edge_cmp);
    size_t w = 0;
    for (size_t k = 0; k < ne; k++)
        if (w == 0 || e[k].from != e[w - 1].from || e[k].to != e[w - 1].to) e[w++] = e[k];
    ne = w;
    OS_TRY_GOTO(st, build_rows(ctx, e, (int)ne, out->n, 0, &out->succ_at, &out->succ), fail);
    if (ne) qsort(e, ne, sizeof(*e), edge_cmp_to);
    OS_TRY_GOTO(st, build_rows(ctx, e, (int)ne, out->n, 1, &out->pred_at, &out->pred), fail);
    free(e);
    return OPSCHED_OK;
fail:
    free(e);
    os_units_release(out);
    return st;
}

void os_units_release(os_units *u)
{
    free(u->u);
    free(u->unit_of_node);
    free(u->pred_at);
    free(u->pred);
    free(u->succ_at);
    free(u->succ);
    memset(u, 0, sizeof(*u));
}

/* ---- blocks and parts ----------------------------------------------------- */

/* cut[v] = 1 when every other unit is an ancestor or a descendant of v. */
static opsched_status find_cuts(opsched_ctx *ctx, const os_units *u, unsigned char *cut)
{
    int n = u->n;
    size_t words = ((size_t)n + 63) / 64;
    uint64_t *anc = calloc((size_t)n * words + 1, sizeof(uint64_t));
    int *desc = calloc((size_t)n + 1, sizeof(int));
    if (!anc || !desc) {
        free(anc);
        free(desc);
        return OS_NOMEM(ctx);
    }
    for (int i = 0; i < n; i++) {
        uint64_t *a = anc + (size_t)i * words;
        for (int k = u->pred_at[i]; k < u->pred_at[i + 1]; k++) {
            int p = u->pred[k];
            const uint64_t *ap = anc + (size_t)p * words;
            for (size_t w = 0; w < words; w++) a[w] |= ap[w];
            a[p / 64] |= (uint64_t)1 << (p % 64);
        }
    }
    for (int i = 0; i < n; i++) {
        const uint64_t *a = anc + (size_t)i * words;
        for (size_t w = 0; w < words; w++)
            for (uint64_t bits = a[w]; bits; bits &= bits - 1)
                desc[w * 64 + (size_t)__builtin_ctzll(bits)]++;
    }
    for (int i = 0; i < n; i++) {
        const uint64_t *a = anc + (size_t)i * words;
        int na = 0;
        for (size_t w = 0; w < words; w++) na += __builtin_popcountll(a[w]);
        cut[i] = na + desc[i] == n - 1;
    }
    free(anc);
    free(desc);
    return OPSCHED_OK;
}

/* 1 when units a..b (inclusive) are totally ordered: each feeds the next. */
static int totally_ordered(const os_units *u, int a, int b)
{
    for (int i = a + 1; i <= b; i++) {
        int found = 0;
        for (int k = u->pred_at[i]; k < u->pred_at[i + 1] && !found; k++)
            found = u->pred[k] == i - 1;
        if (!found) return 0;
    }
    return 1;
}

opsched_status os_parts_build(opsched_ctx *ctx, const os_units *u, int max_part, int cut,
                              os_parts *out)
{
    memset(out, 0, sizeof(*out));
    int n = u->n;
    if (max_part < 1 || max_part > OS_SCHED_MAX_PART)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "parts of %d operators (1 to %d)", max_part,
                       OS_SCHED_MAX_PART);
    unsigned char *is_cut = calloc((size_t)n + 1, 1);
    int *block_end = malloc(((size_t)n + 1) * sizeof(int)); /* inclusive ends */
    out->part_at = malloc(((size_t)n + 2) * sizeof(int));
    out->block_of_part = malloc(((size_t)n + 1) * sizeof(int));
    opsched_status st = OPSCHED_OK;
    if (!is_cut || !block_end || !out->part_at || !out->block_of_part) {
        st = OS_NOMEM(ctx);
        goto done;
    }
    if (cut && n > 0) OS_TRY_GOTO(st, find_cuts(ctx, u, is_cut), done);
    int nb = 0;
    for (int v = 0; v < n; v++)
        if (is_cut[v] || v == n - 1) block_end[nb++] = v;
    /* Join runs of totally ordered blocks (ends written behind the reads). */
    int joined = 0, start = 0, prev_end = -1;
    for (int b = 0; b < nb; b++) {
        int first = prev_end + 1, end = block_end[b];
        prev_end = end;
        if (joined > 0 && end - start + 1 <= max_part &&
            totally_ordered(u, start, block_end[joined - 1]) && totally_ordered(u, first, end)) {
            block_end[joined - 1] = end;
            continue;
        }
        start = first;
        block_end[joined++] = end;
    }
    nb = joined;
    out->n_blocks = nb;
    out->part_at[0] = 0;
    for (int b = 0, from = 0; b < nb; b++) {
        int len = block_end[b] - from + 1;
        int parts = (len + max_part - 1) / max_part;
        for (int k = 0; k < parts; k++) {
            out->block_of_part[out->n_parts] = b;
            out->part_at[out->n_parts + 1] = from + (int)((int64_t)len * (k + 1) / parts);
            out->n_parts++;
        }
        from = block_end[b] + 1;
    }
done:
    free(is_cut);
    free(block_end);
    if (st != OPSCHED_OK) os_parts_release(out);
    return st;
}

void os_parts_release(os_parts *p)
{
    free(p->part_at);
    free(p->block_of_part);
    memset(p, 0, sizeof(*p));
}
