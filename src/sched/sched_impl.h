/*
 * sched_impl.h - what the scheduler's files share: the operator units the
 * searchers work on (a node with the Relu fused after it, views left out),
 * the dependency edges between units, and the blocks and parts a graph is
 * cut into before the dynamic program.
 */
#ifndef OS_SCHED_IMPL_H
#define OS_SCHED_IMPL_H

#include <stdint.h>

#include "opsched/sched.h"

/* Parts are searched with one 64-bit set per state. */
#define OS_SCHED_MAX_PART 64

/* A unit: one non-view node, with the Relu that is the only reader of its
 * output when the node is a convolution (the executor fuses the pair). */
typedef struct os_unit {
    int node;
    int relu;              /* node index or -1 */
} os_unit;

typedef struct os_units {
    int n;
    os_unit *u;            /* in graph order, which is topological */
    int *unit_of_node;     /* per node: its unit, or -1 for views */
    /* predecessors and successors, compressed rows: unit i's predecessors
     * are pred[pred_at[i] .. pred_at[i + 1]) (distinct, ascending). */
    int *pred_at, *pred;
    int *succ_at, *succ;
} os_units;

opsched_status os_units_build(const opsched_graph *g, os_units *out);
void os_units_release(os_units *u);

/* Consecutive ranges of units (in unit order) searched one at a time.
 * part_at[k] .. part_at[k + 1] are the units of part k; block_of_part[k]
 * the block it belongs to. */
typedef struct os_parts {
    int n_parts, n_blocks;
    int *part_at;          /* n_parts + 1 entries */
    int *block_of_part;
} os_parts;

/* Cuts the units into blocks at single-entry/single-exit units (every
 * other unit is an ancestor or a descendant of the cut, which closes the
 * block before it), joins runs of blocks that are chains, and splits
 * blocks longer than max_part into parts of nearly equal size.  cut 0
 * keeps the whole graph as one block (split into parts only). */
opsched_status os_parts_build(opsched_ctx *ctx, const os_units *u, int max_part, int cut,
                              os_parts *out);
void os_parts_release(os_parts *p);

/* The searcher behind opsched_schedule_search, with block cutting
 * switchable (the optimality test compares against brute force over the
 * whole graph). */
opsched_status os_schedule_search(const opsched_graph *g, const opsched_search_options *o,
                                  int cut_blocks, opsched_schedule **out,
                                  opsched_search_stats *stats);

/* Merge geometry of conv nodes convs[0..n) in this order; OPSCHED_ERR_SHAPE
 * with the reason (on ctx, when not NULL) when they cannot merge.  Fills
 * everything but the members' relu. */
opsched_status os_merge_geometry(opsched_ctx *ctx, const opsched_graph *g, const int *convs,
                                 int n, opsched_merge *m, opsched_merge_member *members);

#endif /* OS_SCHED_IMPL_H */
