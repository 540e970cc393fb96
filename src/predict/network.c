/*
 * network.c - a network's latency, energy and memory from its layers.
 *
 * Layers follow the executor's rules (src/exec/exec.c): views that can
 * alias their input run nothing; a Conv whose output is read only by a
 * Relu (and is not a graph output) runs that Relu fused in when fusing is
 * on.  Every other node is one launch.
 *
 * Composition, per mode:
 *   graph  T = scale * sum_i g_i            + launch_us * launches
 *   eager  T = scale * sum_i max(g_i, host) + launch_us * launches
 * (scale > 0, launch_us >= 0, host >= 0: a fit outside falls back to the
 * bound), fitted by least squares on relative residuals to the database's
 * network runs ("graph" rows for graph mode, "free" rows for eager), leaving out
 * the excluded model's runs; the eager host floor by a grid search.  Runs
 * whose layers are all exact are preferred (when there are at least two);
 * otherwise every run whose layers all have a prediction.  Without runs:
 * scale 1 and the calibration's graph_node_us (graph) or launch_us as the
 * host floor (eager); without a calibration, the plain sum.
 *
 * Energy: E = energy_scale * sum_i e_i + gap_power_w * (T - sum_i g_i),
 * fitted the same way to runs with energy (the gap power is fixed to the
 * calibration's idle power when fewer than three runs have energy).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "opsched/zoo.h"
#include "predict/predict_impl.h"

const char *opsched_predict_mode_name(opsched_predict_mode m)
{
    return m == OPSCHED_PREDICT_EAGER ? "eager" : "graph";
}

void opsched_predict_options_default(opsched_predict_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof(*o));
    o->mode = OPSCHED_PREDICT_GRAPH;
    o->fuse = 1;
}

/* ---- layers --------------------------------------------------------------------- */

static int is_graph_output(const opsched_graph *g, int t)
{
    for (int i = 0; i < opsched_graph_num_outputs(g); i++)
        if (opsched_graph_output(g, i) == t) return 1;
    return 0;
}

/* The Relu that is the only reader of node i's output, or -1 (exec.c). */
static int relu_reader(const opsched_graph *g, int i)
{
    const opsched_node *n = opsched_graph_node(g, i);
    if (n->n_outputs != 1 || opsched_graph_num_consumers(g, n->outputs[0]) != 1 ||
        is_graph_output(g, n->outputs[0]))
        return -1;
    for (int j = i + 1; j < opsched_graph_num_nodes(g); j++) {
        const opsched_node *c = opsched_graph_node(g, j);
        for (int k = 0; k < c->n_inputs; k++)
            if (c->inputs[k] == n->outputs[0])
                return c->op == OPSCHED_OP_RELU && c->n_inputs == 1 ? j : -1;
    }
    return -1;
}

static int rowmajor(const opsched_tensor *t, opsched_layout layout)
{
    int nhwc = layout == OPSCHED_LAYOUT_NHWC && t->shape.ndim == 4;
    return !nhwc || t->shape.d[1] == 1 || t->shape.d[2] * t->shape.d[3] == 1;
}

/* A view the executor aliases to its input (no copy, no launch). */
static int view_aliases(const opsched_graph *g, const opsched_node *n, opsched_layout layout)
{
    if (!opsched_op_is_view(n->op) || n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs != 1)
        return 0;
    const opsched_tensor *x = opsched_graph_tensor(g, n->inputs[0]);
    const opsched_tensor *y = opsched_graph_tensor(g, n->outputs[0]);
    if (opsched_shape_numel(&x->shape) * (int64_t)opsched_dtype_size(x->dtype) !=
        opsched_shape_numel(&y->shape) * (int64_t)opsched_dtype_size(y->dtype))
        return 0;
    return opsched_shape_equal(&x->shape, &y->shape) ||
           (rowmajor(x, layout) && rowmajor(y, layout));
}

/* Predicts every layer of g into r->layers (no composition). */
static opsched_status predict_layers(opsched_predictor *p, const opsched_graph *g, int fuse,
                                     opsched_network_prediction *r)
{
    opsched_status st = OPSCHED_OK;
    int n = opsched_graph_num_nodes(g);
    opsched_layout layout = p->o.layout;
    opsched_config_record *recs = malloc(sizeof(*recs) * (size_t)(n > 0 ? n : 1));
    int *fused = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    int *which = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    opsched_op_prediction *pred = malloc(sizeof(*pred) * (size_t)(n > 0 ? n : 1));
    r->layers = calloc((size_t)(n > 0 ? n : 1), sizeof(*r->layers));
    if (!recs || !fused || !which || !pred || !r->layers) {
        st = OS_NOMEM(p->ctx);
        goto done;
    }
    r->n_layers = n;
    for (int i = 0; i < n; i++) {
        opsched_layer_prediction *l = &r->layers[i];
        l->node = i;
        l->fused_into = -1;
        l->p.source = l->p.energy_source = OPSCHED_SOURCE_VIEW;
        l->p.family = OPSCHED_FAMILY_OTHER;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        const opsched_node *node = opsched_graph_node(g, i);
        opsched_layer_prediction *l = &r->layers[i];
        if (l->fused_into >= 0 || view_aliases(g, node, layout)) continue; /* runs nothing */
        l->launches = 1;
        l->flops = node->cost.flops;
        if (fuse && node->op == OPSCHED_OP_CONV) {
            int j = relu_reader(g, i);
            if (j >= 0) {
                l->fused_relu = 1;
                r->layers[j].fused_into = i;
                l->flops += opsched_graph_node(g, j)->cost.flops;
            }
        }
        OS_TRY_GOTO(st, opsched_config_record_from_node(g, i, &recs[m]), done);
        fused[m] = l->fused_relu;
        which[m++] = i;
    }
    OS_TRY_GOTO(st, os_predict_many(p, recs, fused, m, pred), done);
    for (int k = 0; k < m; k++) r->layers[which[k]].p = pred[k];
done:
    free(recs);
    free(fused);
    free(which);
    free(pred);
    return st;
}

/* Sums over launched layers: time, exact time, flops, exact flops,
 * energies; *complete is 0 when a layer has no time prediction,
 * *energy_complete when one has no energy. */
typedef struct layer_sums {
    double ms, exact_ms, flops, exact_flops, energy, var_ms, var_energy;
    int launches, complete, energy_complete, all_exact;
} layer_sums;

static void sum_layers(const opsched_network_prediction *r, layer_sums *s)
{
    memset(s, 0, sizeof(*s));
    s->complete = s->energy_complete = s->all_exact = 1;
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_prediction *l = &r->layers[i];
        s->flops += (double)l->flops;
        if (!l->launches) continue;
        s->launches++;
        const opsched_op_prediction *o = &l->p;
        if (o->source == OPSCHED_SOURCE_EXACT) {
            s->exact_ms += o->ms;
            s->exact_flops += (double)l->flops;
        } else {
            s->all_exact = 0;
        }
        if (isfinite(o->ms)) {
            s->ms += o->ms;
            double e = isfinite(o->error) ? o->error * o->ms : 0;
            s->var_ms += e * e;
        } else {
            s->complete = 0;
        }
        if (isfinite(o->energy_j)) {
            s->energy += o->energy_j;
            double e = isfinite(o->energy_error) ? o->energy_error * o->energy_j : 0;
            s->var_energy += e * e;
        } else {
            s->energy_complete = 0;
        }
    }
}

/* ---- composition fit -------------------------------------------------------------- */

typedef struct fit_run {
    int n;                  /* launched layers */
    double *g;              /* their predicted ms */
    double t_ms;            /* measured */
    double sum_energy;      /* NaN unless every layer has one */
    double e_j;             /* measured energy; NaN when none */
    int exact;
} fit_run;

typedef struct fit_state {
    opsched_predictor *p;
    fit_run *runs;
    size_t n, cap;
    int skipped;
} fit_state;

static opsched_status zoo_loader(opsched_ctx *ctx, const opsched_network_run_row *run,
                                 opsched_graph **out)
{
    if (!opsched_zoo_find(run->model))
        return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND, "no built-in network '%s'", run->model);
    opsched_zoo_options zo = {.batch = run->batch, .height = run->height, .width = run->width};
    return opsched_zoo_build(ctx, run->model, &zo, out);
}

static opsched_status load_run_graph(opsched_predictor *p, const opsched_network_run_row *run,
                                     opsched_graph **g)
{
    if (p->o.loader) return p->o.loader(p->ctx, run, p->o.loader_user, g);
    return zoo_loader(p->ctx, run, g);
}

static opsched_status take_run(const opsched_network_run_row *run, void *user)
{
    fit_state *fs = user;
    opsched_predictor *p = fs->p;
    if (p->exclude_model_runs && strcmp(run->model, p->exclude_model_runs) == 0)
        return OPSCHED_OK;
    if (!(run->median_ms > 0)) return OPSCHED_OK;
    opsched_graph *g = NULL;
    opsched_status st = load_run_graph(p, run, &g);
    if (st == OPSCHED_ERR_NOT_FOUND || st == OPSCHED_ERR_SHAPE || st == OPSCHED_ERR_INVALID_ARG ||
        st == OPSCHED_ERR_PARSE || st == OPSCHED_ERR_IO) {
        os_log(p->ctx, OPSCHED_LOG_DEBUG, "network run %lld (%s) left out of the fit: %s",
               (long long)run->id, run->model, opsched_ctx_last_error(p->ctx));
        opsched_ctx_clear_error(p->ctx);
        fs->skipped++;
        return OPSCHED_OK;
    }
    OS_TRY(st);
    opsched_network_prediction r;
    memset(&r, 0, sizeof(r));
    st = predict_layers(p, g, 1, &r);
    opsched_graph_free(g);
    if (st != OPSCHED_OK) {
        free(r.layers);
        return st;
    }
    layer_sums s;
    sum_layers(&r, &s);
    if (!s.complete) {
        free(r.layers);
        fs->skipped++;
        return OPSCHED_OK;
    }
    st = os_grow(p->ctx, (void **)&fs->runs, &fs->cap, fs->n + 1, sizeof(fit_run));
    double *gv = st == OPSCHED_OK ? malloc(sizeof(double) * (size_t)(s.launches ? s.launches : 1))
                                  : NULL;
    if (st == OPSCHED_OK && !gv) st = OS_NOMEM(p->ctx);
    if (st != OPSCHED_OK) {
        free(r.layers);
        return st;
    }
    fit_run *fr = &fs->runs[fs->n++];
    fr->n = 0;
    fr->g = gv;
    for (int i = 0; i < r.n_layers; i++)
        if (r.layers[i].launches) gv[fr->n++] = r.layers[i].p.ms;
    fr->t_ms = run->median_ms;
    fr->sum_energy = s.energy_complete ? s.energy : NAN;
    fr->e_j = run->energy_valid ? run->energy_j : NAN;
    fr->exact = s.all_exact;
    free(r.layers);
    return OPSCHED_OK;
}

/* Sum of max(g, host) over a run's layers. */
static double floor_sum(const fit_run *r, double host_ms)
{
    double s = 0;
    for (int i = 0; i < r->n; i++) s += fmax(r->g[i], host_ms);
    return s;
}

/* Least squares of relative residuals for T = a*S + c*L over the runs
 * with use[i]; returns the rms relative residual. */
static double fit_linear(const fit_run *runs, const unsigned char *use, size_t n, double host_ms,
                         double *a, double *c)
{
    double suu = 0, suv = 0, svv = 0, su = 0, sv = 0;
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!use[i]) continue;
        double u = floor_sum(&runs[i], host_ms) / runs[i].t_ms, v = runs[i].n / runs[i].t_ms;
        suu += u * u;
        suv += u * v;
        svv += v * v;
        su += u;
        sv += v;
        m++;
    }
    double det = suu * svv - suv * suv;
    int solved = m >= 2 && fabs(det) > 1e-12 * suu * svv;
    *a = solved ? (su * svv - sv * suv) / det : NAN;
    *c = solved ? (sv * suu - su * suv) / det : NAN;
    /* Only what can happen: a positive scale, no negative time per launch. */
    if (solved && *a > 0 && *c < 0) {
        *c = 0;
        *a = su / suu;
    }
    if (!(*a > 0) || !(*c >= 0)) {
        /* one run, or a degenerate or unphysical fit: the sum as it is
         * plus a gap */
        *a = 1;
        *c = svv > 0 ? fmax(0, (sv - suv) / svv) : 0;
    }
    double rss = 0;
    for (size_t i = 0; i < n; i++) {
        if (!use[i]) continue;
        double pred = *a * floor_sum(&runs[i], host_ms) + *c * runs[i].n;
        double e = pred / runs[i].t_ms - 1;
        rss += e * e;
    }
    return m > 0 ? sqrt(rss / m) : NAN;
}

static double composed_ms(const opsched_composition *c, const double *g, int n)
{
    double s = 0;
    double host = c->mode == OPSCHED_PREDICT_EAGER ? c->host_us * 1e-3 : 0;
    for (int i = 0; i < n; i++) s += fmax(g[i], host);
    return c->scale * s + c->launch_us * 1e-3 * n;
}

static double plain_sum(const double *g, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += g[i];
    return s;
}

/* E = alpha * sumE + beta * (T - S) / 1000, relative least squares. */
static void fit_energy(opsched_predictor *p, opsched_composition *c, const fit_run *runs,
                       size_t n)
{
    const opsched_predictor_info *in = &p->info;
    double idle = in->has_calibration && isfinite(in->calibration.idle_power_w)
                      ? in->calibration.idle_power_w
                      : NAN;
    c->energy_scale = 1;
    c->gap_power_w = isfinite(idle) ? idle : 0;
    snprintf(c->energy_source, sizeof(c->energy_source), "%s",
             isfinite(idle) ? "calibration" : "none");
    c->energy_rms_rel = NAN;
    double s11 = 0, s12 = 0, s22 = 0, s1 = 0, s2 = 0;
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        const fit_run *r = &runs[i];
        if (!(r->e_j > 0) || !isfinite(r->sum_energy)) continue;
        double gap_s = (composed_ms(c, r->g, r->n) - plain_sum(r->g, r->n)) * 1e-3;
        double x1 = r->sum_energy / r->e_j, x2 = gap_s / r->e_j;
        s11 += x1 * x1;
        s12 += x1 * x2;
        s22 += x2 * x2;
        s1 += x1;
        s2 += x2;
        m++;
    }
    if (m == 0) return;
    double det = s11 * s22 - s12 * s12;
    if (m >= 3 && fabs(det) > 1e-12 * s11 * s22) {
        c->energy_scale = (s1 * s22 - s2 * s12) / det;
        c->gap_power_w = (s2 * s11 - s1 * s12) / det;
    } else if (s11 > 0) {
        c->energy_scale = (s1 - c->gap_power_w * s12) / s11;
    }
    c->energy_runs = m;
    snprintf(c->energy_source, sizeof(c->energy_source), "fit");
    double rss = 0;
    for (size_t i = 0; i < n; i++) {
        const fit_run *r = &runs[i];
        if (!(r->e_j > 0) || !isfinite(r->sum_energy)) continue;
        double gap_s = (composed_ms(c, r->g, r->n) - plain_sum(r->g, r->n)) * 1e-3;
        double e = (c->energy_scale * r->sum_energy + c->gap_power_w * gap_s) / r->e_j - 1;
        rss += e * e;
    }
    c->energy_rms_rel = sqrt(rss / m);
}

static void fallback_composition(const opsched_predictor *p, opsched_composition *c)
{
    const opsched_predictor_info *in = &p->info;
    c->scale = 1;
    c->launch_us = 0;
    c->host_us = 0;
    c->rms_rel = NAN;
    snprintf(c->source, sizeof(c->source), "none");
    if (!in->has_calibration) return;
    double node = in->calibration.graph_node_us, launch = in->calibration.launch_us;
    if (isfinite(node) && node > 0) c->launch_us = node;
    if (c->mode == OPSCHED_PREDICT_EAGER && isfinite(launch) && launch > 0) c->host_us = launch;
    if (c->launch_us > 0 || c->host_us > 0) snprintf(c->source, sizeof(c->source), "calibration");
}

static opsched_status fit_composition(opsched_predictor *p, opsched_predict_mode mode,
                                      opsched_composition *c)
{
    opsched_status st = OPSCHED_OK;
    memset(c, 0, sizeof(*c));
    c->mode = mode;
    fallback_composition(p, c);
    fit_state fs = {.p = p};
    opsched_network_run_query q = {.device_id = p->info.device.id, .algo_policy = p->algo_policy,
                                   .math = p->math, .layout = p->layout,
                                   .mode = mode == OPSCHED_PREDICT_GRAPH ? "graph" : "free"};
    unsigned char *use = NULL;
    OS_TRY_GOTO(st, opsched_store_network_runs_get(p->store, &q, take_run, &fs), done);
    int exact = 0;
    for (size_t i = 0; i < fs.n; i++) exact += fs.runs[i].exact;
    use = malloc(fs.n ? fs.n : 1);
    if (!use) {
        st = OS_NOMEM(p->ctx);
        goto done;
    }
    for (size_t i = 0; i < fs.n; i++) use[i] = exact >= 2 ? (unsigned char)fs.runs[i].exact : 1;
    c->runs = exact >= 2 ? exact : (int)fs.n;
    c->runs_exact = exact;
    if (fs.n > 0) {
        double best = INFINITY, a = 1, lc = 0, h = 0;
        int steps = mode == OPSCHED_PREDICT_EAGER ? 200 : 0;
        for (int k = 0; k <= steps; k++) {
            double host_ms = k * 0.5e-3; /* 0 .. 100 us */
            double ta, tc;
            double rms = fit_linear(fs.runs, use, fs.n, host_ms, &ta, &tc);
            if (rms < best) {
                best = rms;
                a = ta;
                lc = tc;
                h = host_ms;
            }
        }
        c->scale = a;
        c->launch_us = lc * 1e3;
        c->host_us = h * 1e3;
        c->rms_rel = best;
        snprintf(c->source, sizeof(c->source), "fit");
    }
    fit_energy(p, c, fs.runs, fs.n);
    if (fs.skipped)
        os_log(p->ctx, OPSCHED_LOG_INFO,
               "composition (%s): %d network runs left out (not buildable or not fully predicted)",
               opsched_predict_mode_name(mode), fs.skipped);
done:
    for (size_t i = 0; i < fs.n; i++) free(fs.runs[i].g);
    free(fs.runs);
    free(use);
    return st;
}

opsched_status opsched_predictor_composition(opsched_predictor *p, opsched_predict_mode mode,
                                             opsched_composition *out)
{
    if (!p) return OPSCHED_ERR_INVALID_ARG;
    if (!out || (mode != OPSCHED_PREDICT_GRAPH && mode != OPSCHED_PREDICT_EAGER))
        return OS_FAIL(p->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_predictor_composition: bad argument");
    if (!p->comp_done[mode]) {
        OS_TRY(fit_composition(p, mode, &p->comp[mode]));
        p->comp_done[mode] = 1;
    }
    *out = p->comp[mode];
    return OPSCHED_OK;
}

/* ---- networks ------------------------------------------------------------------------ */

void opsched_network_prediction_free(opsched_network_prediction *r)
{
    if (!r) return;
    free(r->layers);
    free(r);
}

opsched_status opsched_predict_network(opsched_predictor *p, const opsched_graph *g,
                                       const opsched_predict_options *opts,
                                       opsched_network_prediction **out)
{
    opsched_status st = OPSCHED_OK;
    opsched_predict_options def;
    if (!p) return OPSCHED_ERR_INVALID_ARG;
    if (!g || !out)
        return OS_FAIL(p->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_predict_network: NULL argument");
    *out = NULL;
    if (!opts) {
        opsched_predict_options_default(&def);
        opts = &def;
    }
    opsched_network_prediction *r = calloc(1, sizeof(*r));
    if (!r) return OS_NOMEM(p->ctx);
    r->mode = opts->mode;
    OS_TRY_GOTO(st, opsched_predictor_composition(p, opts->mode, &r->composition), fail);
    OS_TRY_GOTO(st, predict_layers(p, g, opts->fuse, r), fail);
    layer_sums s;
    sum_layers(r, &s);
    for (int i = 0; i < r->n_layers; i++) r->n_by_source[r->layers[i].p.source]++;
    r->launches = s.launches;
    r->flops = (int64_t)s.flops;
    r->coverage_flops = s.flops > 0 ? s.exact_flops / s.flops : NAN;
    const opsched_composition *c = &r->composition;
    if (s.complete) {
        double *gv = malloc(sizeof(double) * (size_t)(s.launches ? s.launches : 1));
        if (!gv) {
            st = OS_NOMEM(p->ctx);
            goto fail;
        }
        int k = 0;
        for (int i = 0; i < r->n_layers; i++)
            if (r->layers[i].launches) gv[k++] = r->layers[i].p.ms;
        r->layer_sum_ms = s.ms;
        r->total_ms = composed_ms(c, gv, k);
        free(gv);
        r->coverage_time = s.ms > 0 ? s.exact_ms / s.ms : NAN;
        double layers_rel = s.ms > 0 ? c->scale * sqrt(s.var_ms) / r->total_ms : 0;
        double fit = isfinite(c->rms_rel) ? c->rms_rel : 0;
        r->total_error = sqrt(layers_rel * layers_rel + fit * fit);
    } else {
        r->layer_sum_ms = r->total_ms = r->total_error = r->coverage_time = NAN;
    }
    if (s.complete && s.energy_complete) {
        r->layer_energy_j = s.energy;
        double gap_s = (r->total_ms - s.ms) * 1e-3;
        r->total_energy_j = c->energy_scale * s.energy + c->gap_power_w * gap_s;
        double layers_rel = r->total_energy_j > 0
                                ? c->energy_scale * sqrt(s.var_energy) / r->total_energy_j
                                : 0;
        double fit = isfinite(c->energy_rms_rel) ? c->energy_rms_rel : 0;
        r->energy_error = sqrt(layers_rel * layers_rel + fit * fit);
    } else {
        r->layer_energy_j = r->total_energy_j = r->energy_error = NAN;
    }
    opsched_graph_totals t;
    OS_TRY_GOTO(st, opsched_graph_totals_compute(g, &t), fail);
    /* The graph counts its logical f32 tensors; the executor stores them in
     * the math mode's type. */
    double scale = (double)opsched_dtype_size(opsched_math_dtype(p->o.math)) /
                   (double)opsched_dtype_size(OPSCHED_F32);
    r->peak_activation_bytes = (int64_t)((double)t.peak_activation_bytes * scale);
    r->weight_bytes = (int64_t)((double)t.weight_bytes * scale);
    r->peak_memory_bytes = r->peak_activation_bytes + r->weight_bytes;
    *out = r;
    return OPSCHED_OK;
fail:
    opsched_network_prediction_free(r);
    return st;
}

opsched_status opsched_predict_network_run(opsched_predictor *p,
                                           const opsched_network_run_row *run,
                                           opsched_network_prediction **out)
{
    if (!p) return OPSCHED_ERR_INVALID_ARG;
    if (!run || !out)
        return OS_FAIL(p->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_predict_network_run: NULL argument");
    *out = NULL;
    opsched_predict_options o;
    opsched_predict_options_default(&o);
    if (strcmp(run->mode, "graph") == 0)
        o.mode = OPSCHED_PREDICT_GRAPH;
    else if (strcmp(run->mode, "free") == 0)
        o.mode = OPSCHED_PREDICT_EAGER;
    else
        return OS_FAIL(p->ctx, OPSCHED_ERR_INVALID_ARG,
                       "network run %lld: mode '%s' is not predicted (graph or free)",
                       (long long)run->id, run->mode);
    opsched_graph *g = NULL;
    OS_TRY(load_run_graph(p, run, &g));
    opsched_status st = opsched_predict_network(p, g, &o, out);
    opsched_graph_free(g);
    return st;
}
