/*
 * stage_cost.c - the measured stage cost of the schedule searchers: a
 * stage copied into a graph of its own, run by an executor and
 * timed as replays of a device graph; costs kept by stage signature in a
 * hash table.
 *
 * The copy holds the stage's nodes and the views that read their outputs
 * (so a group keeps its memory as in the network); tensors read from
 * outside the stage become its inputs, weights and constants keep their
 * payloads.  Outputs nobody inside the stage reads are the copy's
 * outputs, alive to its end, as they are in the network.
 *
 * A replay holds as many runs of the stage as make a sample last
 * sample_min_us (one calibration replay decides), so a stage of a few
 * microseconds is not measured as the device's cost of starting a graph.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "exec/exec_impl.h"
#include "measure/measure_impl.h"

typedef struct cost_entry {
    char *sig; /* NULL: empty slot */
    double ms;
    char *why; /* +inf: why the stage cannot run (owned), else NULL */
} cost_entry;

struct opsched_stage_measurer {
    opsched_device *dev;
    opsched_ctx *ctx;
    opsched_stage_measure_options o;
    cost_entry *table;
    size_t cap, n; /* cap a power of two, kept at most half full */
    const double *node_ms; /* single-op costs, or NULL (set_node_costs) */
    int n_nodes;
    opsched_stage_measurer_stats stats;
    opsched_plan_cache_stats plan_cache0; /* the device's counters at creation */
};

static uint64_t hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static cost_entry *find_slot(cost_entry *table, size_t cap, const char *sig)
{
    size_t i = (size_t)hash_text(sig) & (cap - 1);
    while (table[i].sig && strcmp(table[i].sig, sig) != 0)
        i = (i + 1) & (cap - 1);
    return &table[i];
}

/* Keeps sig (taken) with ms and, for +inf, why (copied; NULL: none). */
static opsched_status remember(opsched_stage_measurer *m, char *sig, double ms, const char *why)
{
    if (2 * (m->n + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 256;
        cost_entry *t = calloc(cap, sizeof(*t));
        if (!t) {
            free(sig);
            return OS_NOMEM(m->ctx);
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->table[i].sig) *find_slot(t, cap, m->table[i].sig) = m->table[i];
        free(m->table);
        m->table = t;
        m->cap = cap;
    }
    cost_entry *e = find_slot(m->table, m->cap, sig);
    if (e->sig) {
        free(sig);
    } else {
        e->sig = sig;
        m->n++;
    }
    e->ms = ms;
    free(e->why);
    e->why = NULL;
    if (why) return os_strdup(m->ctx, why, &e->why);
    return OPSCHED_OK;
}

opsched_status opsched_stage_measurer_create(opsched_device *dev,
                                             const opsched_stage_measure_options *opts,
                                             opsched_stage_measurer **out)
{
    if (!dev || !out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    opsched_stage_measurer *m = calloc(1, sizeof(*m));
    if (!m) return OS_NOMEM(opsched_device_ctx(dev));
    m->dev = dev;
    m->ctx = opsched_device_ctx(dev);
    if (opts) m->o = *opts;
    m->o.exec.timing_only = 1; /* values do not matter to a stage's time */
    if (m->o.timing.iters <= 0) {
        /* The probe before the timing has already warmed the stage up
         * (>= 1 ms and 3 replays), every sample lasts >= sample_min_us, and
         * a search measures stage after stage, so the device stays busy and
         * its clocks up: a 1 ms warm-up and >= 10 samples over >= 2 ms (20
         * samples of 100 us) give the median (docs/SCHEDULE.md). */
        m->o.timing.warmup_ms = 1.0;
        m->o.timing.iters = 10;
        m->o.timing.min_ms = 2.0;
    }
    if (m->o.sample_min_us <= 0) m->o.sample_min_us = 100.0;
    opsched_device_plan_cache_stats(dev, &m->plan_cache0);
    *out = m;
    return OPSCHED_OK;
}

void opsched_stage_measurer_free(opsched_stage_measurer *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->cap; i++) {
        free(m->table[i].sig);
        free(m->table[i].why);
    }
    free(m->table);
    free(m);
}

void opsched_stage_measurer_set_node_costs(opsched_stage_measurer *m, const double *node_ms,
                                           int n)
{
    if (!m) return;
    m->node_ms = n > 0 ? node_ms : NULL;
    m->n_nodes = node_ms ? n : 0;
}

/* The stage's cost estimated from single-op costs: its longest group's
 * sum (a merge: its longest member); 0 when a node's cost is unknown. */
static double estimate_ms(const opsched_stage_measurer *m, const opsched_stage *st)
{
    if (!m->node_ms) return 0;
    double est = 0;
    if (st->kind == OPSCHED_STAGE_MERGE) {
        for (int i = 0; i < st->merge.n_members; i++) {
            int v = st->merge.members[i].node;
            if (v < 0 || v >= m->n_nodes || !(m->node_ms[v] > 0)) return 0;
            est = fmax(est, m->node_ms[v]);
        }
        return est;
    }
    for (int j = 0; j < st->n_groups; j++) {
        double sum = 0;
        for (int p = 0; p < st->groups[j].n_nodes; p++) {
            int v = st->groups[j].nodes[p];
            if (v < 0 || v >= m->n_nodes || !(m->node_ms[v] >= 0)) return 0;
            sum += m->node_ms[v];
        }
        est = fmax(est, sum);
    }
    return est;
}

void opsched_stage_measurer_stats_get(const opsched_stage_measurer *m,
                                      opsched_stage_measurer_stats *out)
{
    if (!out) return;
    if (!m) {
        memset(out, 0, sizeof(*out));
        return;
    }
    *out = m->stats;
    opsched_plan_cache_stats pc;
    opsched_device_plan_cache_stats(m->dev, &pc);
    out->plan_cache_hits = pc.hits - m->plan_cache0.hits;
    out->plan_cache_misses = pc.misses - m->plan_cache0.misses;
}

/* ---- the stage's own graph -------------------------------------------------- */

/* g's 4-D tensors kept row-major where the stage executors plan a layout
 * per tensor (NHWC, layout planning on), as the network's executor keeps
 * them: malloc'd, or NULL when there are none. */
static opsched_status network_rowmajor(const opsched_stage_measurer *m, const opsched_graph *g,
                                       unsigned char **out)
{
    *out = NULL;
    const opsched_plan_options *p = &m->o.exec.plan;
    if (p->layout != OPSCHED_LAYOUT_NHWC || (p->ablate & OPSCHED_ABLATE_LAYOUT)) return OPSCHED_OK;
    return opsched_layout_rowmajor_new(g, out);
}

static void mark_stage(const opsched_stage *st, unsigned char *in_stage)
{
    if (st->kind == OPSCHED_STAGE_MERGE) {
        for (int i = 0; i < st->merge.n_members; i++) {
            in_stage[st->merge.members[i].node] = 1;
            if (st->merge.members[i].relu >= 0) in_stage[st->merge.members[i].relu] = 1;
        }
        return;
    }
    for (int j = 0; j < st->n_groups; j++)
        for (int p = 0; p < st->groups[j].n_nodes; p++)
            in_stage[st->groups[j].nodes[p]] = 1;
}

/* The tensor of the copy standing for tensor t of g, added on first use. */
static opsched_status copy_tensor(const opsched_graph *g, opsched_graph *c, int t, int *map,
                                  int *out)
{
    if (map[t] >= 0) {
        *out = map[t];
        return OPSCHED_OK;
    }
    const opsched_tensor *x = opsched_graph_tensor(g, t);
    opsched_tensor_kind kind =
        x->kind == OPSCHED_TENSOR_ACTIVATION ? OPSCHED_TENSOR_INPUT : x->kind;
    OS_TRY(opsched_graph_add_tensor(c, x->name, kind, x->dtype, &x->shape, &map[t]));
    if (x->data && kind != OPSCHED_TENSOR_INPUT)
        OS_TRY(opsched_graph_set_data(c, map[t], x->data, x->data_bytes));
    *out = map[t];
    return OPSCHED_OK;
}

#define MAX_IO 1024

/* Copies the stage's nodes (and views of their outputs) into *out;
 * node_map gets each node's index in the copy (-1 when not copied).  With
 * rm (g's row-major tensors under NHWC), *rm_out gets the copy's: each
 * tensor as its original is (malloc'd; NULL without rm). */
static opsched_status copy_stage(const opsched_graph *g, const opsched_stage *st, int *node_map,
                                 const unsigned char *rm, opsched_graph **out,
                                 unsigned char **rm_out)
{
    opsched_ctx *ctx = opsched_graph_ctx(g);
    int nn = opsched_graph_num_nodes(g), nt = opsched_graph_num_tensors(g);
    opsched_status st_ = OPSCHED_OK;
    opsched_graph *c = NULL;
    unsigned char *in_stage = calloc((size_t)nn + 1, 1);
    int *tmap = malloc(sizeof(int) * (size_t)(nt + 1));
    int *reads = calloc((size_t)nt + 1, sizeof(int));
    int *ins = malloc(sizeof(int) * MAX_IO), *outs = malloc(sizeof(int) * MAX_IO);
    const char **names = malloc(sizeof(char *) * MAX_IO);
    if (!in_stage || !tmap || !reads || !ins || !outs || !names) {
        st_ = OS_NOMEM(ctx);
        goto done;
    }
    for (int t = 0; t < nt; t++)
        tmap[t] = -1;
    mark_stage(st, in_stage);
    OS_TRY_GOTO(st_, opsched_graph_create(ctx, opsched_graph_name(g), &c), done);
    for (int i = 0; i < nn; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        node_map[i] = -1;
        int take = in_stage[i];
        if (!take && opsched_op_is_view(n->op) && n->n_inputs > 0 && n->inputs[0] >= 0) {
            int p = opsched_graph_tensor(g, n->inputs[0])->producer;
            take = p >= 0 && node_map[p] >= 0;
        }
        if (!take) continue;
        if (n->n_inputs > MAX_IO || n->n_outputs > MAX_IO) {
            st_ = OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "stage copy: node '%s' has too many inputs",
                          n->name);
            goto done;
        }
        for (int k = 0; k < n->n_inputs; k++) {
            ins[k] = -1;
            if (n->inputs[k] < 0) continue;
            OS_TRY_GOTO(st_, copy_tensor(g, c, n->inputs[k], tmap, &ins[k]), done);
            reads[n->inputs[k]]++;
        }
        for (int k = 0; k < n->n_outputs; k++)
            names[k] = opsched_graph_tensor(g, n->outputs[k])->name;
        OS_TRY_GOTO(st_,
                    opsched_graph_add_node(c, n->name, n->op, &n->attr, ins, n->n_inputs,
                                           n->n_outputs, names, outs),
                    done);
        for (int k = 0; k < n->n_outputs; k++)
            tmap[n->outputs[k]] = outs[k];
        node_map[i] = opsched_graph_num_nodes(c) - 1;
    }
    for (int i = 0; i < nn; i++) {
        if (node_map[i] < 0) continue;
        const opsched_node *n = opsched_graph_node(g, i);
        for (int k = 0; k < n->n_outputs; k++)
            if (!reads[n->outputs[k]])
                OS_TRY_GOTO(st_, opsched_graph_mark_output(c, tmap[n->outputs[k]]), done);
    }
    if (rm) {
        int ct = opsched_graph_num_tensors(c);
        *rm_out = calloc((size_t)ct + 1, 1);
        if (!*rm_out) {
            st_ = OS_NOMEM(ctx);
            goto done;
        }
        for (int t = 0; t < nt; t++)
            if (tmap[t] >= 0 && tmap[t] < ct) (*rm_out)[tmap[t]] = rm[t];
    }
    *out = c;
    c = NULL;
done:
    opsched_graph_free(c);
    free(in_stage);
    free(tmap);
    free(reads);
    free(ins);
    free(outs);
    free(names);
    return st_;
}

/* The stage's own schedule over the copy: one stage, the same groups or
 * the same merge. */
static opsched_status copy_schedule(const opsched_graph *c, const opsched_stage *st,
                                    const int *node_map, opsched_schedule **out)
{
    opsched_ctx *ctx = opsched_graph_ctx(c);
    opsched_schedule *s = NULL;
    opsched_status r = OPSCHED_OK;
    int n = st->kind == OPSCHED_STAGE_MERGE ? st->merge.n_members : 0;
    for (int j = 0; st->kind != OPSCHED_STAGE_MERGE && j < st->n_groups; j++)
        n = OS_MAX(n, st->groups[j].n_nodes);
    int *a = malloc(sizeof(int) * (size_t)(n + 1)), *b = malloc(sizeof(int) * (size_t)(n + 1));
    if (!a || !b) {
        r = OS_NOMEM(ctx);
        goto done;
    }
    OS_TRY_GOTO(r, opsched_schedule_create(c, &s), done);
    if (st->kind == OPSCHED_STAGE_MERGE) {
        int relus = st->merge.members[0].relu >= 0;
        for (int i = 0; i < st->merge.n_members; i++) {
            a[i] = node_map[st->merge.members[i].node];
            b[i] = relus ? node_map[st->merge.members[i].relu] : -1;
        }
        OS_TRY_GOTO(
            r, opsched_schedule_add_merge(s, c, a, relus ? b : NULL, st->merge.n_members, NULL),
            done);
    } else {
        int k = -1;
        OS_TRY_GOTO(r, opsched_schedule_add_stage(s, &k), done);
        for (int j = 0; j < st->n_groups; j++) {
            for (int p = 0; p < st->groups[j].n_nodes; p++)
                a[p] = node_map[st->groups[j].nodes[p]];
            OS_TRY_GOTO(r, opsched_schedule_add_group(s, k, a, st->groups[j].n_nodes), done);
        }
    }
    *out = s;
    s = NULL;
done:
    opsched_schedule_free(s);
    free(a);
    free(b);
    return r;
}

/* ---- measuring ------------------------------------------------------------- */

/* Median ms of one run of the stage on ex.  est_ms > 0: the stage's cost
 * estimated from single-op costs (its longest group's sum), which sets the
 * repeat count of a sample without a probe: concurrency cannot make a
 * stage much shorter than its longest group alone, nor longer than all
 * its groups in a row, so a sample lands near sample_min_us either way. */
static opsched_status time_stage(opsched_stage_measurer *m, opsched_executor *ex, double est_ms,
                                 double *ms)
{
    int use_graph = !m->o.no_graph, repeat = 1;
    opsched_run_timing t;
    double want_ms = m->o.sample_min_us / 1000.0;
    if (use_graph && est_ms > 0)
        repeat = (int)OS_MIN(OS_MAX(ceil(want_ms / est_ms), 1.0), 1000.0);
    double t0 = os_now_ms();
    if (use_graph) {
        opsched_status st = os_ex_capture(ex, repeat);
        m->stats.capture_seconds += (os_now_ms() - t0) / 1000.0;
        if (st == OPSCHED_ERR_UNSUPPORTED) {
            opsched_ctx_clear_error(m->ctx);
            use_graph = 0;
            repeat = 1;
        } else {
            OS_TRY(st);
        }
    }
    if (use_graph && !(est_ms > 0)) {
        /* no estimate: a few replays choose the repeat count */
        opsched_run_timing_options probe = {0.2, 2, 0.0};
        t0 = os_now_ms();
        opsched_status st = opsched_executor_time(ex, 1, &probe, &t);
        m->stats.timing_seconds += (os_now_ms() - t0) / 1000.0;
        OS_TRY(st);
        if (t.stats.median > 0 && t.stats.median < want_ms) {
            repeat = (int)OS_MIN(ceil(want_ms / t.stats.median), 1000.0);
            t0 = os_now_ms();
            st = os_ex_capture(ex, repeat);
            m->stats.capture_seconds += (os_now_ms() - t0) / 1000.0;
            OS_TRY(st);
        }
    }
    t0 = os_now_ms();
    opsched_status st = opsched_executor_time(ex, use_graph, &m->o.timing, &t);
    m->stats.timing_seconds += (os_now_ms() - t0) / 1000.0;
    OS_TRY(st);
    *ms = t.stats.median / repeat;
    return OPSCHED_OK;
}

opsched_status opsched_stage_cost_measured(void *user, const opsched_graph *g,
                                           const opsched_stage *stage, double *ms)
{
    opsched_stage_measurer *m = user;
    if (!m || !g || !stage || !ms) return OPSCHED_ERR_INVALID_ARG;
    char *sig = NULL;
    unsigned char *rm = NULL, *rm_copy = NULL;
    OS_TRY(network_rowmajor(m, g, &rm));
    opsched_status sst = opsched_stage_signature_layout(g, stage, rm, &sig);
    if (sst != OPSCHED_OK) {
        free(rm);
        return sst;
    }
    if (m->cap) {
        const cost_entry *e = find_slot(m->table, m->cap, sig);
        if (e->sig) {
            *ms = e->ms;
            m->stats.cached++;
            free(sig);
            free(rm);
            /* +inf: the reason stays on the context for the caller */
            if (e->why) OS_FAIL(m->ctx, OPSCHED_ERR_UNSUPPORTED, "%s", e->why);
            return OPSCHED_OK;
        }
    }
    double t0 = os_now_ms(), tb = t0;
    opsched_status st = OPSCHED_OK;
    opsched_graph *c = NULL;
    opsched_schedule *s = NULL;
    opsched_executor *ex = NULL;
    int *node_map = malloc(sizeof(int) * (size_t)(opsched_graph_num_nodes(g) + 1));
    if (!node_map) {
        st = OS_NOMEM(m->ctx);
        goto done;
    }
    tb = os_now_ms();
    OS_TRY_GOTO(st, copy_stage(g, stage, node_map, rm, &c, &rm_copy), done);
    OS_TRY_GOTO(st, copy_schedule(c, stage, node_map, &s), done);
    opsched_exec_options eo = m->o.exec;
    eo.rowmajor = rm_copy; /* the network's layout per tensor, not the copy's own */
    st = opsched_executor_create(m->dev, c, s, &eo, &ex);
    m->stats.build_seconds += (os_now_ms() - tb) / 1000.0;
    if (st == OPSCHED_OK) st = time_stage(m, ex, estimate_ms(m, stage), ms);
    char *why = NULL;
    if (st == OPSCHED_ERR_UNSUPPORTED || st == OPSCHED_ERR_DEVICE_OOM) {
        /* The reason stays on the context (a caller that finds no stage
         * that runs names it) and with the cost, for answers from the
         * table. */
        os_log(m->ctx, OPSCHED_LOG_INFO, "stage starting with '%s' cannot run here (+inf): %s",
               opsched_graph_node(c, 0)->name, opsched_ctx_last_error(m->ctx));
        st = os_strdup(m->ctx, opsched_ctx_last_error(m->ctx), &why);
        *ms = INFINITY;
        m->stats.unsupported++;
    }
    if (st == OPSCHED_OK) {
        m->stats.measured++;
        st = remember(m, sig, *ms, why);
        sig = NULL;
    }
    free(why);
done:
    tb = os_now_ms();
    opsched_executor_free(ex);
    opsched_schedule_free(s);
    opsched_graph_free(c);
    m->stats.build_seconds += (os_now_ms() - tb) / 1000.0;
    free(node_map);
    free(sig);
    free(rm);
    free(rm_copy);
    m->stats.seconds += (os_now_ms() - t0) / 1000.0;
    return st;
}
