/*
 * cost.c - what a stage costs without running it: single-operator costs
 * combined by a contention model whose parameters are fitted from stages
 * that were measured; and the canonical signature a stage is stored
 * under.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "opsched/measure.h"
#include "opsched/predict.h"
#include "sched/sched_impl.h"

/* ---- the contention model -------------------------------------------------- */

void opsched_contention_defaults(opsched_contention *out)
{
    memset(out, 0, sizeof(*out));
    /* Guesses, not measurements (n_fit 0 says so): batch-1 operators of
     * CNNs fill a fraction of a large GPU, so about two groups' worth of
     * work overlaps; a cross-stream event costs a few microseconds in a
     * captured graph; a merged convolution runs somewhat faster than its
     * members one after another. */
    out->capacity = 2.0;
    out->stage_ms = 0.002;
    out->stream_ms = 0.001;
    out->merge_factor = 0.85;
    out->n_fit = 0;
    out->fit_rms_rel = NAN;
    out->n_merge_fit = 0;
}

static double group_ms(const opsched_predicted_cost *p, const opsched_group *gr)
{
    double t = 0;
    for (int i = 0; i < gr->n_nodes; i++) t += p->node_ms[gr->nodes[i]];
    return t;
}

/* Every node of the stage is in range and has a usable single-op cost. */
static opsched_status check_nodes(const opsched_graph *g, const opsched_predicted_cost *p,
                                  const opsched_stage *st)
{
    opsched_ctx *ctx = opsched_graph_ctx(g);
    if (!p || !p->node_ms || p->n_nodes != opsched_graph_num_nodes(g))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "predicted stage costs need one cost per node of '%s' (%d), got %d",
                       opsched_graph_name(g), opsched_graph_num_nodes(g), p ? p->n_nodes : 0);
    int n = st->kind == OPSCHED_STAGE_MERGE ? st->merge.n_members : st->n_groups;
    for (int j = 0; j < n; j++) {
        const int *nodes;
        int count, pair[2];
        if (st->kind == OPSCHED_STAGE_MERGE) {
            pair[0] = st->merge.members[j].node;
            pair[1] = st->merge.members[j].relu;
            nodes = pair;
            count = pair[1] >= 0 ? 2 : 1;
        } else {
            nodes = st->groups[j].nodes;
            count = st->groups[j].n_nodes;
        }
        for (int i = 0; i < count; i++) {
            if (nodes[i] < 0 || nodes[i] >= p->n_nodes)
                return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "stage node %d is out of range",
                               nodes[i]);
            double ms = p->node_ms[nodes[i]];
            if (!(ms >= 0) || isinf(ms))
                return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "no usable cost for node '%s' (%g ms)",
                               opsched_graph_node(g, nodes[i])->name, ms);
        }
    }
    return OPSCHED_OK;
}

opsched_status opsched_stage_cost_predicted(void *user, const opsched_graph *g,
                                            const opsched_stage *st, double *ms)
{
    const opsched_predicted_cost *p = user;
    OS_TRY(check_nodes(g, p, st));
    const opsched_contention *m = &p->model;
    if (st->kind == OPSCHED_STAGE_MERGE) {
        const opsched_merge *mg = &st->merge;
        double t = 0;
        for (int j = 0; j < mg->n_members; j++) {
            const opsched_merge_member *mm = &mg->members[j];
            const opsched_conv_attr *a = &opsched_graph_node(g, mm->node)->attr.conv;
            double scale = (double)(mg->kernel[0] * mg->kernel[1]) /
                           (double)(a->kernel[0] * a->kernel[1]);
            t += p->node_ms[mm->node] * scale;
            if (mm->relu >= 0) t += p->node_ms[mm->relu];
        }
        *ms = m->merge_factor * t + m->stage_ms;
        return OPSCHED_OK;
    }
    if (st->n_groups == 1) {
        *ms = group_ms(p, &st->groups[0]);
        return OPSCHED_OK;
    }
    double longest = 0, sum = 0;
    for (int j = 0; j < st->n_groups; j++) {
        double t = group_ms(p, &st->groups[j]);
        sum += t;
        if (t > longest) longest = t;
    }
    double cap = m->capacity >= 1 ? m->capacity : 1;
    *ms = fmax(longest, sum / cap) + m->stage_ms + m->stream_ms * (st->n_groups - 1);
    return OPSCHED_OK;
}

opsched_status opsched_predicted_node_costs(const opsched_graph *g,
                                            const opsched_network_prediction *r, double *node_ms,
                                            int n)
{
    opsched_ctx *ctx = opsched_graph_ctx(g);
    if (!r || !node_ms || n != opsched_graph_num_nodes(g) || r->n_layers != n)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_predicted_node_costs: a prediction and %d costs for '%s'",
                       opsched_graph_num_nodes(g), opsched_graph_name(g));
    for (int i = 0; i < n; i++) node_ms[i] = 0;
    for (int i = 0; i < n; i++) {
        const opsched_layer_prediction *l = &r->layers[i];
        const opsched_node *nd = opsched_graph_node(g, i);
        if (!l->launches) continue;
        if (!(l->composed_ms >= 0) || isinf(l->composed_ms))
            return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND, "nothing predicts layer '%s' (%s)",
                           nd->name, opsched_op_name(nd->op));
        int at = i;
        if (opsched_op_is_view(nd->op) && nd->n_inputs > 0 && nd->inputs[0] >= 0) {
            int producer = opsched_tensor_scheduled_producer(g, nd->inputs[0]);
            if (producer >= 0) at = producer;
        }
        node_ms[at] += l->composed_ms;
    }
    return OPSCHED_OK;
}

/* Weighted least squares of y = a + b x (weights w), a, b >= 0.  Returns
 * the weighted sum of squared residuals. */
static double fit_line(const double *y, const double *x, const double *w, int n, double *a,
                       double *b)
{
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    *a = *b = 0; /* when no candidate's error is a number */
    for (int i = 0; i < n; i++) {
        sw += w[i];
        sx += w[i] * x[i];
        sy += w[i] * y[i];
        sxx += w[i] * x[i] * x[i];
        sxy += w[i] * x[i] * y[i];
    }
    /* Candidates: the unconstrained solution, then each bound active. */
    double cand[3][2];
    int nc = 0;
    double det = sw * sxx - sx * sx;
    if (det > 1e-12 * sw * sxx) {
        cand[nc][0] = (sxx * sy - sx * sxy) / det;
        cand[nc][1] = (sw * sxy - sx * sy) / det;
        nc++;
    }
    cand[nc][0] = 0;
    cand[nc][1] = sxx > 0 ? fmax(0, sxy / sxx) : 0;
    nc++;
    cand[nc][0] = sw > 0 ? fmax(0, sy / sw) : 0;
    cand[nc][1] = 0;
    nc++;
    double best = INFINITY;
    for (int c = 0; c < nc; c++) {
        if (cand[c][0] < 0 || cand[c][1] < 0) continue;
        double sse = 0;
        for (int i = 0; i < n; i++) {
            double r = y[i] - cand[c][0] - cand[c][1] * x[i];
            sse += w[i] * r * r;
        }
        if (sse < best) {
            best = sse;
            *a = cand[c][0];
            *b = cand[c][1];
        }
    }
    return best;
}

/* merge_factor by weighted least squares through the origin:
 * measured - stage_ms = f x scaled member sum, weights 1 / measured^2. */
static void fit_merges(const opsched_stage_sample *samples, int n, opsched_contention *out)
{
    double sxy = 0, sxx = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        const opsched_stage_sample *s = &samples[i];
        if (!s->merge || !(s->measured_ms > 0) || !(s->sum_ms > 0) || isinf(s->measured_ms) ||
            isinf(s->sum_ms))
            continue;
        double w = 1 / (s->measured_ms * s->measured_ms), y = s->measured_ms - out->stage_ms;
        sxy += w * s->sum_ms * y;
        sxx += w * s->sum_ms * s->sum_ms;
        m++;
    }
    if (m < 2 || !(sxx > 0) || !(sxy > 0)) return;
    out->merge_factor = sxy / sxx;
    out->n_merge_fit = m;
}

opsched_status opsched_contention_fit(opsched_ctx *ctx, const opsched_stage_sample *samples,
                                      int n, opsched_contention *out)
{
    opsched_contention defaults;
    opsched_contention_defaults(&defaults);
    double merge_factor = out->merge_factor > 0 ? out->merge_factor : defaults.merge_factor;
    double *buf = malloc(((size_t)n + 1) * 5 * sizeof(double));
    if (!buf) return OS_NOMEM(ctx);
    double *y = buf, *x = buf + n + 1, *w = buf + 2 * (n + 1), *L = buf + 3 * (n + 1),
           *W = buf + 4 * (n + 1);
    int m = 0;
    double *T = malloc(((size_t)n + 1) * sizeof(double));
    if (!T) {
        free(buf);
        return OS_NOMEM(ctx);
    }
    for (int i = 0; i < n; i++) {
        const opsched_stage_sample *s = &samples[i];
        /* A stage of one group costs its operators (no contention terms):
         * only concurrent stages say anything about the model. */
        if (s->merge || s->n_groups < 2) continue;
        if (!(s->measured_ms > 0) || !(s->longest_ms >= 0) || !(s->sum_ms >= s->longest_ms) ||
            s->n_groups < 1 || isinf(s->measured_ms) || isinf(s->sum_ms))
            continue;
        T[m] = s->measured_ms;
        L[m] = s->longest_ms;
        W[m] = s->sum_ms;
        x[m] = s->n_groups - 1;
        w[m] = 1 / (s->measured_ms * s->measured_ms);
        m++;
    }
    *out = defaults;
    out->merge_factor = merge_factor;
    if (m < 3) {
        free(buf);
        free(T);
        fit_merges(samples, n, out);
        return OPSCHED_OK;
    }
    /* Capacity enters through a max(): searched on a geometric grid, the
     * two overheads solved exactly for each value. */
    double best = INFINITY;
    for (double cap = 1.0; cap <= 64.0; cap *= 1.01) {
        for (int i = 0; i < m; i++) y[i] = T[i] - fmax(L[i], W[i] / cap);
        double a, b;
        double sse = fit_line(y, x, w, m, &a, &b);
        if (sse < best) {
            best = sse;
            out->capacity = cap;
            out->stage_ms = a;
            out->stream_ms = b;
        }
    }
    out->n_fit = m;
    out->fit_rms_rel = sqrt(best / m);
    free(buf);
    free(T);
    fit_merges(samples, n, out);
    return OPSCHED_OK;
}

/* ---- stage signatures ----------------------------------------------------- */

typedef struct text {
    char *p;
    size_t len, cap;
    int nomem;
} text;

static void text_put(text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->nomem) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        while (cap < t->len + n + 1) cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->nomem = 1;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n + 1);
    t->len += n;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

opsched_status opsched_stage_signature(const opsched_graph *g, const opsched_stage *stage,
                                       char **out)
{
    opsched_ctx *ctx = opsched_graph_ctx(g);
    *out = NULL;
    int n = stage->kind == OPSCHED_STAGE_MERGE ? stage->merge.n_members : stage->n_groups;
    char **parts = calloc((size_t)n + 1, sizeof(char *));
    if (!parts) return OS_NOMEM(ctx);
    opsched_status st = OPSCHED_OK;
    char sig[4096];
    for (int j = 0; j < n && st == OPSCHED_OK; j++) {
        text t = {0};
        if (stage->kind == OPSCHED_STAGE_MERGE) {
            const opsched_merge_member *mm = &stage->merge.members[j];
            st = opsched_node_signature(g, mm->node, sig, sizeof(sig));
            text_put(&t, sig);
            if (st == OPSCHED_OK && mm->relu >= 0) {
                st = opsched_node_signature(g, mm->relu, sig, sizeof(sig));
                text_put(&t, " > ");
                text_put(&t, sig);
            }
        } else {
            const opsched_group *gr = &stage->groups[j];
            for (int i = 0; i < gr->n_nodes && st == OPSCHED_OK; i++) {
                st = opsched_node_signature(g, gr->nodes[i], sig, sizeof(sig));
                if (i) text_put(&t, " > ");
                text_put(&t, sig);
            }
        }
        if (t.nomem && st == OPSCHED_OK) st = OS_NOMEM(ctx);
        parts[j] = t.p;
        if (!t.p && st == OPSCHED_OK) st = OS_NOMEM(ctx);
    }
    text all = {0};
    if (st == OPSCHED_OK) {
        qsort(parts, (size_t)n, sizeof(char *), str_cmp);
        if (stage->kind == OPSCHED_STAGE_MERGE) {
            char head[96];
            snprintf(head, sizeof(head), "merge k=%lldx%lld: ", (long long)stage->merge.kernel[0],
                     (long long)stage->merge.kernel[1]);
            text_put(&all, head);
        } else {
            text_put(&all, "concurrent: ");
        }
        for (int j = 0; j < n; j++) {
            text_put(&all, j ? " | [" : "[");
            text_put(&all, parts[j]);
            text_put(&all, "]");
        }
        if (all.nomem) st = OS_NOMEM(ctx);
    }
    for (int j = 0; j < n; j++) free(parts[j]);
    free(parts);
    if (st != OPSCHED_OK) {
        free(all.p);
        return st;
    }
    *out = all.p;
    return OPSCHED_OK;
}

/* Adds tensor t's shape to list (n so far, at most max) when it is 4-D,
 * row-major under rm and not there yet (seen marks it). */
static int rowmajor_shape(const opsched_graph *g, int t, const unsigned char *rm,
                          unsigned char *seen, char (*list)[64], int n, int max)
{
    const opsched_tensor *x = t >= 0 ? opsched_graph_tensor(g, t) : NULL;
    if (!x || !rm[t] || seen[t] || x->shape.ndim != 4 || n >= max) return n;
    seen[t] = 1;
    snprintf(list[n], 64, "%lldx%lldx%lldx%lld", (long long)x->shape.d[0], (long long)x->shape.d[1],
             (long long)x->shape.d[2], (long long)x->shape.d[3]);
    return n + 1;
}

static int shape_cmp(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

#define SIG_MAX_ROWMAJOR 256

opsched_status opsched_stage_signature_layout(const opsched_graph *g, const opsched_stage *stage,
                                              const unsigned char *rm, char **out)
{
    OS_TRY(opsched_stage_signature(g, stage, out));
    if (!rm) return OPSCHED_OK;
    opsched_ctx *ctx = opsched_graph_ctx(g);
    int nt = opsched_graph_num_tensors(g);
    unsigned char *seen = calloc((size_t)nt + 1, 1);
    char(*list)[64] = malloc(sizeof(*list) * SIG_MAX_ROWMAJOR);
    if (!seen || !list) {
        free(seen);
        free(list);
        free(*out);
        *out = NULL;
        return OS_NOMEM(ctx);
    }
    int n = 0, nodes[2];
    int parts = stage->kind == OPSCHED_STAGE_MERGE ? stage->merge.n_members : stage->n_groups;
    for (int j = 0; j < parts; j++) {
        int count = stage->kind == OPSCHED_STAGE_MERGE ? 2 : stage->groups[j].n_nodes;
        for (int i = 0; i < count; i++) {
            int node;
            if (stage->kind == OPSCHED_STAGE_MERGE) {
                nodes[0] = stage->merge.members[j].node;
                nodes[1] = stage->merge.members[j].relu;
                node = nodes[i];
            } else {
                node = stage->groups[j].nodes[i];
            }
            const opsched_node *nd = node >= 0 ? opsched_graph_node(g, node) : NULL;
            for (int k = 0; nd && k < nd->n_inputs; k++)
                n = rowmajor_shape(g, nd->inputs[k], rm, seen, list, n, SIG_MAX_ROWMAJOR);
            for (int k = 0; nd && k < nd->n_outputs; k++)
                n = rowmajor_shape(g, nd->outputs[k], rm, seen, list, n, SIG_MAX_ROWMAJOR);
        }
    }
    opsched_status st = OPSCHED_OK;
    if (n > 0) {
        qsort(list, (size_t)n, sizeof(*list), shape_cmp);
        text t = {0};
        text_put(&t, *out);
        text_put(&t, " rowmajor=");
        for (int i = 0; i < n; i++) {
            if (i) text_put(&t, ",");
            text_put(&t, list[i]);
        }
        if (t.nomem) {
            free(t.p);
            st = OS_NOMEM(ctx);
        } else {
            free(*out);
            *out = t.p;
        }
    }
    if (st != OPSCHED_OK) {
        free(*out);
        *out = NULL;
    }
    free(seen);
    free(list);
    return st;
}
