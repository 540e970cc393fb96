/*
 * stagedb.c - measured stage costs through the database: a stage
 * measured once on a device is answered from the stages table afterwards
 * (a second search runs nothing), and the contention model of predicted
 * stage costs is fitted from what was measured.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sched/sched_impl.h"

/* The single-op costs of the stage's longest group and of all groups (a
 * merge: its members, each scaled to the merged kernel's area, as the
 * predicted cost counts them); NaN when the caller gave none. */
static void single_op_sums(const opsched_stage_cache *c, const opsched_graph *g,
                           const opsched_stage *st, double *longest, double *sum, int *n_ops)
{
    *longest = *sum = 0;
    *n_ops = 0;
    int have = c->node_ms != NULL;
    int n = st->kind == OPSCHED_STAGE_MERGE ? st->merge.n_members : st->n_groups;
    for (int j = 0; j < n; j++) {
        int pair[2], count;
        const int *nodes;
        if (st->kind == OPSCHED_STAGE_MERGE) {
            pair[0] = st->merge.members[j].node;
            pair[1] = st->merge.members[j].relu;
            nodes = pair;
            count = pair[1] >= 0 ? 2 : 1;
        } else {
            nodes = st->groups[j].nodes;
            count = st->groups[j].n_nodes;
        }
        double t = 0;
        for (int i = 0; i < count; i++) {
            (*n_ops)++;
            if (!have || nodes[i] < 0 || nodes[i] >= c->n_nodes || !(c->node_ms[nodes[i]] >= 0)) {
                have = 0;
                continue;
            }
            double scale = 1;
            if (st->kind == OPSCHED_STAGE_MERGE && i == 0) {
                /* the member as the merged kernel makes it work */
                const opsched_conv_attr *a = &opsched_graph_node(g, nodes[0])->attr.conv;
                scale = (double)(st->merge.kernel[0] * st->merge.kernel[1]) /
                        (double)(a->kernel[0] * a->kernel[1]);
            }
            t += c->node_ms[nodes[i]] * scale;
        }
        *sum += t;
        if (t > *longest) *longest = t;
    }
    if (!have) *longest = *sum = NAN;
}

opsched_status opsched_stage_cost_cached(void *user, const opsched_graph *g,
                                         const opsched_stage *stage, double *ms)
{
    opsched_stage_cache *c = user;
    opsched_ctx *ctx = opsched_graph_ctx(g);
    char *sig = NULL;
    /* under NHWC the signature names the row-major 4-D tensors, as the
     * measurer's does (opsched_stage_signature_layout) */
    unsigned char *rm = NULL;
    if (c->layout && strcmp(c->layout, "nhwc") == 0) OS_TRY(opsched_layout_rowmajor_new(g, &rm));
    opsched_status sst = opsched_stage_signature_layout(g, stage, rm, &sig);
    free(rm);
    OS_TRY(sst);
    opsched_stage_record r;
    memset(&r, 0, sizeof(r));
    r.signature = sig;
    r.kind = stage->kind == OPSCHED_STAGE_MERGE ? "merge" : "concurrent";
    r.batch = c->batch;
    r.math = c->math;
    r.layout = c->layout;
    r.algo_policy = c->algo_policy;
    r.n_groups = stage->kind == OPSCHED_STAGE_MERGE ? 0 : stage->n_groups;
    single_op_sums(c, g, stage, &r.longest_ms, &r.sum_ms, &r.n_ops);
    opsched_status st = OPSCHED_OK;
    int found = 0;
    if (c->store) {
        st = opsched_store_stage_get(c->store, c->device_id, &r, ms, &found);
        if (st != OPSCHED_OK) goto done;
    }
    if (found) {
        c->hits++;
        goto done;
    }
    if (!c->measure) {
        st = OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND,
                     "a stage of %d operators starting with '%s' was never measured", r.n_ops,
                     opsched_graph_node(g, stage->kind == OPSCHED_STAGE_MERGE
                                               ? stage->merge.members[0].node
                                               : stage->groups[0].nodes[0])
                         ->name);
        goto done;
    }
    st = c->measure(c->measure_user, g, stage, ms);
    if (st != OPSCHED_OK) goto done;
    c->measured++;
    /* A stage the device cannot run (+inf) is not stored: the table holds
     * times, and a later build may run it. */
    if (isinf(*ms)) {
        c->unsupported++;
        goto done;
    }
    r.median_ms = *ms;
    if (c->store) st = opsched_store_stage_put(c->store, c->device_id, &r);
done:
    free(sig);
    return st;
}

typedef struct fit_rows {
    opsched_stage_sample *s;
    int n, cap;
    int nomem;
} fit_rows;

static void collect(const opsched_stage_record *r, void *user)
{
    fit_rows *f = user;
    if (f->nomem || isnan(r->longest_ms) || isnan(r->sum_ms)) return;
    if (f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 64;
        opsched_stage_sample *grown = realloc(f->s, (size_t)cap * sizeof(*grown));
        if (!grown) {
            f->nomem = 1;
            return;
        }
        f->s = grown;
        f->cap = cap;
    }
    opsched_stage_sample *x = &f->s[f->n++];
    x->n_groups = r->n_groups;
    x->longest_ms = r->longest_ms;
    x->sum_ms = r->sum_ms;
    x->measured_ms = r->median_ms;
    x->merge = strcmp(r->kind, "merge") == 0;
}

opsched_status opsched_contention_fit_store(opsched_store *s, opsched_ctx *ctx, int64_t device_id,
                                            const char *math, const char *layout,
                                            const char *algo_policy, opsched_contention *inout)
{
    fit_rows f = {0};
    opsched_status st =
        opsched_store_stages(s, device_id, math, layout, algo_policy, collect, &f);
    if (st == OPSCHED_OK && f.nomem) st = OS_NOMEM(ctx);
    if (st == OPSCHED_OK) st = opsched_contention_fit(ctx, f.s, f.n, inout);
    free(f.s);
    return st;
}
