/*
 * memplan.c - where each block of the executor's memory goes in the arena.
 *
 * The executor (exec_build.c) gives every tensor that owns memory a lifetime, an
 * interval of steps (launches on one stream, stages on several) from its
 * first writer to its last reader or any alias's (the end of the run for
 * graph outputs).  Two blocks may overlap in memory only when their
 * intervals do not intersect; a launch's output never shares memory with
 * its inputs, so every operator may assume out-of-place buffers.
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
