/*
 * memplan.c - the executor's memory plan: which activations may share
 * memory, and where each one goes in the arena.
 *
 * Lifetimes are intervals of node indices, from the node that writes a
 * tensor to the last node that reads it or any alias of it (the end of the
 * run for graph outputs).  Two tensors may overlap in memory only when
 * their intervals do not intersect; a node's output never shares memory
 * with its inputs, so every operator may assume out-of-place buffers.
 *
 * Placement is greedy by size (TensorFlow Lite's "greedy by size"
 * strategy): largest tensor first, each put in the smallest gap between the
 * tensors already placed that are alive at the same time, or above them all
 * when no gap fits.  Large tensors fix the skeleton and small ones fill the
 * holes, which lands within a few percent of the largest live set on the
 * networks of the zoo.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "exec/exec_impl.h"

typedef os_memblock block;

static size_t align_up(size_t v)
{
    return (v + OS_EXEC_ALIGN - 1) / OS_EXEC_ALIGN * OS_EXEC_ALIGN;
}

static int by_size_desc(const void *pa, const void *pb)
{
    const block *a = pa, *b = pb;
    if (a->size != b->size) return a->size > b->size ? -1 : 1;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int live_together(const block *a, const block *b)
{
    return a->first <= b->last && b->first <= a->last;
}

/* Places blocks (sorted by size) one by one; placed[] keeps indices of the
 * blocks placed so far, in increasing offset.  Returns the peak. */
static size_t place_blocks(block *blocks, int n, int *placed)
{
    size_t peak = 0;
    for (int i = 0; i < n; i++) {
        block *b = &blocks[i];
        size_t best = OS_MEMPLAN_NONE, best_gap = OS_MEMPLAN_NONE, top = 0;
        for (int k = 0; k < i; k++) {
            const block *p = &blocks[placed[k]];
            if (!live_together(b, p)) continue;
            if (p->offset > top) {
                size_t gap = p->offset - top;
                if (gap >= b->size && gap < best_gap) {
                    best = top;
                    best_gap = gap;
                }
            }
            if (p->offset + p->size > top) top = p->offset + p->size;
        }
        b->offset = best != OS_MEMPLAN_NONE ? best : top;
        if (b->offset + b->size > peak) peak = b->offset + b->size;
        int pos = i;
        while (pos > 0 && blocks[placed[pos - 1]].offset > b->offset) {
            placed[pos] = placed[pos - 1];
            pos--;
        }
        placed[pos] = i;
    }
    return peak;
}

opsched_status os_memplan_place(opsched_ctx *ctx, os_memblock *blocks, int n, size_t *peak)
{
    int *placed = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!placed) return OS_NOMEM(ctx);
    qsort(blocks, (size_t)n, sizeof(block), by_size_desc);
    *peak = place_blocks(blocks, n, placed);
    free(placed);
    return OPSCHED_OK;
}

void os_memplan_release(os_memplan *p)
{
    if (!p) return;
    free(p->root);
    free(p->offset);
    free(p->bytes);
    memset(p, 0, sizeof(*p));
}

/* Roots (aliases resolved) and last readers; checks the alias flags. */
static opsched_status lifetimes(opsched_ctx *ctx, const opsched_graph *g,
                                const unsigned char *alias, os_memplan *p, int *last)
{
    int nn = opsched_graph_num_nodes(g);
    for (int i = 0; i < nn; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        if (alias && alias[i]) {
            int x = n->n_inputs > 0 ? n->inputs[0] : -1;
            if (x < 0 || n->n_outputs != 1 || p->bytes[x] != p->bytes[n->outputs[0]])
                return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                               "memory plan: node '%s' cannot alias its input", n->name);
            p->root[n->outputs[0]] = p->root[x];
        }
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t >= 0 && last[p->root[t]] < i) last[p->root[t]] = i;
        }
    }
    for (int i = 0; i < opsched_graph_num_outputs(g); i++)
        last[p->root[opsched_graph_output(g, i)]] = nn;
    return OPSCHED_OK;
}

opsched_status os_memplan_compute(opsched_ctx *ctx, const opsched_graph *g, opsched_math m,
                                  const unsigned char *alias, os_memplan *out)
{
    if (!g || !out) return OPSCHED_ERR_INVALID_ARG;
    memset(out, 0, sizeof(*out));
    opsched_status st = OPSCHED_OK;
    int nt = opsched_graph_num_tensors(g), nn = opsched_graph_num_nodes(g);
    size_t cnt = nt > 0 ? (size_t)nt : 1;
    int *last = malloc(sizeof(int) * cnt), *placed = malloc(sizeof(int) * cnt);
    block *blocks = malloc(sizeof(block) * cnt);
    out->root = malloc(sizeof(int) * cnt);
    out->offset = malloc(sizeof(size_t) * cnt);
    out->bytes = malloc(sizeof(size_t) * cnt);
    if (!last || !placed || !blocks || !out->root || !out->offset || !out->bytes) {
        st = OS_NOMEM(ctx);
        goto done;
    }
    out->n_tensors = nt;
    for (int t = 0; t < nt; t++) {
        out->root[t] = t;
        out->offset[t] = OS_MEMPLAN_NONE;
        out->bytes[t] = os_exec_tensor_bytes(opsched_graph_tensor(g, t), m);
        last[t] = -1;
    }
    OS_TRY_GOTO(st, lifetimes(ctx, g, alias, out, last), done);

    size_t off = 0;
    for (int i = 0; i < opsched_graph_num_inputs(g); i++) {
        int t = opsched_graph_input(g, i);
        out->offset[t] = off;
        off += align_up(out->bytes[t] ? out->bytes[t] : 1);
    }
    out->input_bytes = off;

    int nb = 0;
    for (int i = 0; i < nn; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        if (alias && alias[i]) continue;
        for (int k = 0; k < n->n_outputs; k++) {
            int t = n->outputs[k];
            block *b = &blocks[nb++];
            b->id = t;
            b->first = i;
            b->last = last[t] > i ? last[t] : i; /* read by nobody: alive while written */
            b->size = align_up(out->bytes[t] ? out->bytes[t] : 1);
            b->offset = 0;
        }
    }
    qsort(blocks, (size_t)nb, sizeof(block), by_size_desc);
    size_t peak = place_blocks(blocks, nb, placed);
    for (int i = 0; i < nb; i++)
        out->offset[blocks[i].id] = out->input_bytes + blocks[i].offset;
    for (int t = 0; t < nt; t++)
        if (out->root[t] != t) out->offset[t] = out->offset[out->root[t]];
    out->arena_bytes = out->input_bytes + peak;
done:
    free(last);
    free(placed);
    free(blocks);
    if (st != OPSCHED_OK) os_memplan_release(out);
    return st;
}
