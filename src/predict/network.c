/*
 * network.c - a network's latency, energy and memory from its layers.
 *
 * Layers follow the executor's rules (the functions of
 * src/exec/exec_build.c themselves): views that can alias their input run
 * nothing; a Conv whose output is read only by a Relu (and is not a graph
 * output) runs that Relu fused in when fusing is on, and so do the
 * movement nodes a run gathers through (opsched_move_runs; the run's last
 * node keeps its own cost, a copy of its output).  Every other node is
 * one launch, as in the executor's sequential schedule with every Concat
 * copying (what opsched profile measures).
 *
 * Composition, per mode:
 *   graph  T = D = scale * sum_i g_i + launch_us * launches
 *                  + fused_launch_us * fused launches + w * W
 *   eager  T = max(D, H),  H = sum_i h_i,
 *          h_i = host_scale * (layer i's measured host time)   when its
 *                configuration has a ";mode=host" row (opsched profile):
 *                the rows measured with the run predicted, else profiling
 *                this network (the graph's name, a run's model), else all
 *                the configuration's rows (the median of those),
 *                host_scale * the host model's prediction   when it has none,
 *                host_us[family of i]   without a host model (no host rows)
 * where a fused launch is a Conv run with its Relu (cuDNN's runtime-fused
 * engines leave more time between kernels: in free runs on the H100 the
 * networks that fuse leave 3-5 us a launch beyond their CUDA-graph time,
 * the others ~2 us), and W is the GB of
 * weights the layers read that fit in the L2: a layer timed alone finds
 * those in the cache, inside a network they come from memory (at batch 1
 * that is most of why the layers sum to 90% of the end to end); a layer
 * whose weights are larger than the L2 (vgg16's and alexnet's first
 * classifier layers) reads them from memory either way.  scale > 0,
 * launch_us, fused_launch_us, w >= 0: a term whose fit leaves its bound is
 * dropped.  Fitted by least squares on relative residuals to the database's
 * network runs ("graph" rows for graph mode, "free" rows for eager), leaving out
 * the excluded model's runs; the host terms to the runs' enqueue times.  Runs
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
#include "exec/exec_impl.h"
#include "opsched/zoo.h"
#include "opsched/training.h"
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

/* The host model's time for each layer k < m (node which[k], feature row
 * k of x, as os_predict_many computed it) that no host row measured, in
 * one XGBoost call; a layer without features keeps its family's cost. */
static opsched_status learn_host(opsched_predictor *p, const float *x, const int *which, int m,
                                 opsched_network_prediction *r)
{
    if (p->host_model < 0 || m == 0) return OPSCHED_OK;
    opsched_status st = OPSCHED_OK;
    float *xs = malloc(sizeof(float) * OPSCHED_FEATURE_COUNT * (size_t)m);
    int *fam = malloc(sizeof(int) * (size_t)m), *at = malloc(sizeof(int) * (size_t)m);
    double *ms = malloc(sizeof(double) * (size_t)m);
    if (!xs || !fam || !at || !ms) {
        st = OS_NOMEM(p->ctx);
        goto done;
    }
    int n = 0;
    for (int k = 0; k < m; k++) {
        const opsched_layer_prediction *l = &r->layers[which[k]];
        const float *f = x + (size_t)k * OPSCHED_FEATURE_COUNT;
        if (l->host_measured || isnan(f[0])) continue; /* measured, or no features */
        memcpy(xs + (size_t)n * OPSCHED_FEATURE_COUNT, f, sizeof(float) * OPSCHED_FEATURE_COUNT);
        fam[n] = (int)l->p.family;
        at[n++] = which[k];
    }
    if (n > 0) OS_TRY_GOTO(st, os_predict_host_learned(p, fam, xs, n, ms), done);
    for (int i = 0; i < n; i++) {
        if (!(ms[i] > 0) || !isfinite(ms[i])) continue;
        r->layers[at[i]].host_learned = 1;
        r->layers[at[i]].host_ms = ms[i];
    }
done:
    free(xs);
    free(fam);
    free(at);
    free(ms);
    return st;
}

/* Predicts every layer of g into r->layers (no composition); model: the
 * network's name, whose own host rows a layer's host time prefers, and
 * of those the rows measured in run_id (> 0: a stored network run of it
 * is being predicted). */
static opsched_status predict_layers(opsched_predictor *p, const opsched_graph *g,
                                     const char *model, int64_t run_id, int fuse,
                                     opsched_network_prediction *r)
{
    opsched_status st = OPSCHED_OK;
    int n = opsched_graph_num_nodes(g);
    opsched_layout layout = p->o.layout;
    /* The graph counts its logical f32 tensors; the executor stores them in
     * the math mode's type. */
    double dtype_scale = (double)opsched_dtype_size(opsched_math_dtype(p->o.math)) /
                         (double)opsched_dtype_size(OPSCHED_F32);
    opsched_config_record *recs = malloc(sizeof(*recs) * (size_t)(n > 0 ? n : 1));
    int *fused = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    int *which = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    opsched_op_prediction *pred = malloc(sizeof(*pred) * (size_t)(n > 0 ? n : 1));
    float *feat = malloc(sizeof(float) * OPSCHED_FEATURE_COUNT * (size_t)(n > 0 ? n : 1));
    r->layers = calloc((size_t)(n > 0 ? n : 1), sizeof(*r->layers));
    if (!recs || !fused || !which || !pred || !feat || !r->layers) {
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
    /* With fusing on, the movement nodes a run gathers through run
     * nothing; the run's last node copies its output from the run's source,
     * as many bytes as the node alone moves (opsched_move_runs, as the
     * executor plans them). */
    int *move = calloc((size_t)n + 1, sizeof(int));
    unsigned char *alias = calloc((size_t)n + 1, 1);
    if (!move || !alias) {
        free(move);
        free(alias);
        st = OS_NOMEM(p->ctx);
        goto done;
    }
    for (int i = 0; i < n; i++)
        alias[i] = (unsigned char)os_exec_view_aliases(g, i, p->o.math, layout, NULL);
    if (fuse) opsched_move_runs(g, alias, move);
    /* and a Concat only such runs read is not written: they read its
     * inputs (opsched_move_concat_unread, as the executor plans them) */
    for (int i = 0; fuse && i < n; i++)
        if (opsched_graph_node(g, i)->op == OPSCHED_OP_CONCAT &&
            opsched_move_concat_unread(g, move, i))
            alias[i] = 1;
    /* nor, channels-last, one a batch normalisation alone reads: it reads
     * the Concat's inputs in place (opsched_norm_concat, as the executor
     * plans it) */
    for (int i = 0; fuse && layout == OPSCHED_LAYOUT_NHWC && i < n; i++) {
        int c = opsched_graph_node(g, i)->op == OPSCHED_OP_BATCHNORM ? opsched_norm_concat(g, i)
                                                                     : -1;
        if (c >= 0) alias[c] = 1;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        const opsched_node *node = opsched_graph_node(g, i);
        opsched_layer_prediction *l = &r->layers[i];
        if (l->fused_into >= 0 || alias[i] || move[i] == OPSCHED_MOVE_INSIDE)
            continue; /* runs nothing */
        l->launches = 1;
        l->flops = node->cost.flops;
        for (int k = 0; k < node->n_inputs; k++) {
            const opsched_tensor *t = node->inputs[k] >= 0 ? opsched_graph_tensor(g, node->inputs[k])
                                                            : NULL;
            if (t && t->kind == OPSCHED_TENSOR_WEIGHT)
                l->weight_bytes += (int64_t)((double)opsched_shape_numel(&t->shape) *
                                             (double)opsched_dtype_size(t->dtype) * dtype_scale);
        }
        if (fuse && node->op == OPSCHED_OP_CONV) {
            int j = os_exec_fused_act(g, i);
            if (j >= 0) {
                l->fused_relu = 1;
                r->layers[j].fused_into = i;
                l->flops += opsched_graph_node(g, j)->cost.flops;
            }
        }
        if (opsched_config_record_from_node(g, i, &recs[m]) != OPSCHED_OK) {
            /* e.g. a signature too long to describe: nothing to look up */
            os_log(p->ctx, OPSCHED_LOG_DEBUG, "layer '%s' not predicted: %s", node->name,
                   opsched_ctx_last_error(p->ctx));
            opsched_ctx_clear_error(p->ctx);
            l->p.source = l->p.energy_source = OPSCHED_SOURCE_NONE;
            l->p.ms = l->p.error = l->p.energy_j = l->p.energy_error = NAN;
            continue;
        }
        fused[m] = l->fused_relu;
        which[m++] = i;
    }
    free(move);
    free(alias);
    OS_TRY_GOTO(st, os_predict_many(p, recs, fused, m, pred, feat), done);
    for (int k = 0; k < m; k++) {
        opsched_layer_prediction *l = &r->layers[which[k]];
        l->p = pred[k];
        /* The measured host time as it is; opsched_predict_network scales
         * it by the composition's host_scale. */
        double h = 0;
        int64_t id = 0;
        int level = os_predict_host_lookup(p, model, run_id, recs[k].signature, fused[k], &h, &id);
        if (level) {
            l->host_measured = level;
            l->host_measurement_id = id;
            l->host_ms = h;
        }
    }
    OS_TRY_GOTO(st, learn_host(p, feat, which, m, r), done);
done:
    free(recs);
    free(fused);
    free(which);
    free(pred);
    free(feat);
    return st;
}

/* Sums over launched layers: time, exact time, flops, exact flops,
 * energies; *complete is 0 when a layer has no time prediction,
 * *energy_complete when one has no energy. */
typedef struct layer_sums {
    double ms, exact_ms, flops, exact_flops, energy, var_ms, var_energy;
    /* Roofline errors summed per family: one calibration's bias is shared
     * by every layer it prices, so they do not average out */
    double roof_ms_err[OPSCHED_FAMILY_COUNT];
    double weight_gb;                /* weights read by the launched layers */
    int launches, fused_launches, complete, energy_complete, all_exact;
    /* The host side of eager mode: the host times of the launched layers
     * that have one, measured or learned (as measured or predicted), the
     * learned ones' share of that, and the launches without one by family. */
    double host_meas_ms, host_learned_ms;
    int host_unmeas[OPSCHED_FAMILY_COUNT];
    double host_meas_fam_ms[OPSCHED_FAMILY_COUNT];
    int host_meas_fam[OPSCHED_FAMILY_COUNT];
    int host_all_run; /* every launch's host time from rows measured with the run */
} layer_sums;

/* cached_bytes: the device's L2; a layer whose weights are larger does
 * not find them in the cache when timed alone either, so they are no
 * extra cost inside the network (0: every layer's weights count). */
static void sum_layers(const opsched_network_prediction *r, int64_t cached_bytes, layer_sums *s)
{
    memset(s, 0, sizeof(*s));
    s->complete = s->energy_complete = s->all_exact = s->host_all_run = 1;
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_prediction *l = &r->layers[i];
        s->flops += (double)l->flops;
        if (!l->launches) continue;
        s->launches++;
        s->fused_launches += l->fused_relu;
        if (cached_bytes <= 0 || l->weight_bytes <= cached_bytes)
            s->weight_gb += (double)l->weight_bytes * 1e-9;
        const opsched_op_prediction *o = &l->p;
        s->host_all_run &= l->host_measured == OPSCHED_HOST_ROWS_RUN;
        if (l->host_measured || l->host_learned) {
            s->host_meas_ms += l->host_ms;
            if (l->host_learned) s->host_learned_ms += l->host_ms;
            s->host_meas_fam_ms[o->family] += l->host_ms;
            s->host_meas_fam[o->family]++;
        } else {
            s->host_unmeas[o->family]++;
        }
        if (o->source == OPSCHED_SOURCE_EXACT) {
            s->exact_ms += o->ms;
            s->exact_flops += (double)l->flops;
        } else {
            s->all_exact = 0;
        }
        if (isfinite(o->ms)) {
            s->ms += o->ms;
            double e = isfinite(o->error) ? o->error * o->ms : 0;
            if (o->source == OPSCHED_SOURCE_ROOFLINE)
                s->roof_ms_err[o->family] += e;
            else
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
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++)
        s->var_ms += s->roof_ms_err[f] * s->roof_ms_err[f];
}

/* ---- composition fit -------------------------------------------------------------- */

/* What the fit needs of one network run. */
typedef struct fit_run {
    double s_ms;            /* sum of the predicted layers */
    int n;                  /* launches */
    int n_fused;            /* of the launches, convolutions with their Relu fused */
    double weight_gb;       /* weights the layers read */
    double t_ms;            /* measured */
    double enqueue_ms;      /* measured host time per inference; NaN when none */
    double host_meas_ms;    /* measured host times of its layers that have one */
    int host_unmeas[OPSCHED_FAMILY_COUNT]; /* launches without one, by family */
    double host_meas_fam_ms[OPSCHED_FAMILY_COUNT]; /* measured host times by family */
    int host_meas_fam[OPSCHED_FAMILY_COUNT];       /* and their launches */
    int host_all_run;       /* its host rows were all measured with it */
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
    char base[256];
    opsched_training_options to;
    int train = opsched_training_parse_run_name(run->model, base, sizeof(base), &to);
    const char *model = train ? base : run->model;
    if (!opsched_zoo_find(model))
        return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND, "no built-in network '%s'", model);
    opsched_zoo_options zo = {.batch = run->batch, .height = run->height, .width = run->width};
    if (!train) return opsched_zoo_build(ctx, model, &zo, out);
    /* a training graph's run (opsched profile --train): BatchNorm kept, as
     * profile keeps it */
    opsched_graph *f = NULL;
    OS_TRY(opsched_zoo_build(ctx, model, &zo, &f));
    opsched_status st = opsched_training_graph(f, &to, out);
    opsched_graph_free(f);
    return st;
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
    st = predict_layers(p, g, run->model, run->run_id, 1, &r);
    opsched_graph_free(g);
    layer_sums s;
    if (st == OPSCHED_OK) sum_layers(&r, p->info.device.l2_bytes, &s);
    if (st == OPSCHED_OK && !s.complete) {
        fs->skipped++;
    } else if (st == OPSCHED_OK &&
               (st = os_grow(p->ctx, (void **)&fs->runs, &fs->cap, fs->n + 1, sizeof(fit_run))) ==
                   OPSCHED_OK) {
        fit_run *fr = &fs->runs[fs->n++];
        memset(fr, 0, sizeof(*fr));
        fr->s_ms = s.ms;
        fr->n = s.launches;
        fr->n_fused = s.fused_launches;
        fr->host_meas_ms = s.host_meas_ms;
        fr->host_all_run = s.host_all_run && s.launches > 0;
        memcpy(fr->host_unmeas, s.host_unmeas, sizeof(fr->host_unmeas));
        memcpy(fr->host_meas_fam_ms, s.host_meas_fam_ms, sizeof(fr->host_meas_fam_ms));
        memcpy(fr->host_meas_fam, s.host_meas_fam, sizeof(fr->host_meas_fam));
        fr->weight_gb = s.weight_gb;
        fr->t_ms = run->median_ms;
        fr->enqueue_ms = run->enqueue_ms > 0 ? run->enqueue_ms : NAN;
        fr->sum_energy = s.energy_complete ? s.energy : NAN;
        fr->e_j = run->energy_valid ? run->energy_j : NAN;
        fr->exact = s.all_exact;
    }
    free(r.layers);
    return st;
}

/* Most terms a composition fit has: the host's, a cost per launch of each
 * family plus the scale of the measured host times. */
#define FIT_MAX (OPSCHED_FAMILY_COUNT + 1)

/* Solves the k x k system a x = b (Gaussian elimination, partial
 * pivoting); 0 when singular. */
static int solve(int k, double a[FIT_MAX][FIT_MAX], double b[FIT_MAX], double x[FIT_MAX])
{
    double scale = 0;
    for (int r = 0; r < k; r++) scale = fmax(scale, fabs(a[r][r]));
    for (int c = 0; c < k; c++) {
        int piv = c;
        for (int r = c + 1; r < k; r++)
            if (fabs(a[r][c]) > fabs(a[piv][c])) piv = r;
        if (!(fabs(a[piv][c]) > 1e-12 * scale)) return 0;
        for (int j = 0; j < k; j++) {
            double t = a[c][j];
            a[c][j] = a[piv][j];
            a[piv][j] = t;
        }
        double t = b[c];
        b[c] = b[piv];
        b[piv] = t;
        for (int r = 0; r < k; r++) {
            if (r == c) continue;
            double f = a[r][c] / a[c][c];
            for (int j = c; j < k; j++) a[r][j] -= f * a[c][j];
            b[r] -= f * b[c];
        }
    }
    for (int c = 0; c < k; c++) x[c] = b[c] / a[c][c];
    return 1;
}

/* Least squares of relative residuals, (sum_j coef_j t_ij - y_i) / rel_i
 * over rows with use[i] (rel_i is y_i unless a term is known, e.g. the
 * host's least cost per launch, and moved to y's side).  Terms in
 * `required` are always fitted and must come out positive; the others are
 * tried in every subset and must come out >= 0 (a term that would go
 * negative is dropped).  Terms 0..k-1 (k <= FIT_MAX); terms(row, t) writes a
 * row's terms.  coef gets the best physical fit (0 for dropped terms);
 * returns its rms relative residual, NaN when nothing fits. */
typedef void (*terms_fn)(const fit_run *r, const void *extra, double *t, double *y, double *rel);

static double fit_subsets(const fit_run *runs, const unsigned char *use, size_t n, int k,
                          unsigned required, terms_fn terms, const void *extra, double coef[FIT_MAX])
{
    int m = 0;
    for (size_t i = 0; i < n; i++) m += use[i];
    double best = NAN;
    for (int j = 0; j < k; j++) coef[j] = 0;
    if (m == 0) return NAN;
    for (unsigned subset = 1; subset < (1u << k); subset++) {
        if ((subset & required) != required) continue;
        int cols[FIT_MAX], q = 0;
        for (int j = 0; j < k; j++)
            if (subset & (1u << j)) cols[q++] = j;
        if (q > m) continue;
        double a[FIT_MAX][FIT_MAX] = {{0}}, b[FIT_MAX] = {0}, x[FIT_MAX] = {0};
        for (size_t i = 0; i < n; i++) {
            if (!use[i]) continue;
            double t[FIT_MAX], y, rel;
            terms(&runs[i], extra, t, &y, &rel);
            for (int r = 0; r < q; r++) {
                for (int c = 0; c < q; c++) a[r][c] += t[cols[r]] * t[cols[c]] / (rel * rel);
                b[r] += t[cols[r]] * y / (rel * rel);
            }
        }
        if (!solve(q, a, b, x)) continue;
        int ok = 1;
        for (int j = 0; j < q; j++)
            ok &= (required & (1u << cols[j])) ? x[j] > 0 : x[j] >= 0;
        if (!ok) continue;
        double full[FIT_MAX] = {0}, rss = 0;
        for (int j = 0; j < q; j++) full[cols[j]] = x[j];
        for (size_t i = 0; i < n; i++) {
            if (!use[i]) continue;
            double t[FIT_MAX], y, rel, pred = 0;
            terms(&runs[i], extra, t, &y, &rel);
            for (int j = 0; j < k; j++) pred += full[j] * t[j];
            rss += (pred - y) * (pred - y) / (rel * rel);
        }
        double rms = sqrt(rss / m);
        if (isnan(best) || rms < best) {
            best = rms;
            memcpy(coef, full, sizeof(double) * (size_t)k);
        }
    }
    return best;
}

/* Device time: scale * layers + launch gap * launches + per GB of weights
 * + a gap more per fused convolution. */
static void device_terms(const fit_run *r, const void *extra, double *t, double *y, double *rel)
{
    (void)extra;
    t[0] = r->s_ms;
    t[1] = r->n;
    t[2] = r->weight_gb;
    t[3] = r->n_fused;
    *y = *rel = r->t_ms;
}

/* Host time to enqueue an inference beyond the smallest launch cost
 * (*extra, ms) of the launches without a host measurement: a cost per
 * launch of each family for those, and a scale of the measured host times
 * of the others (a term of its own, all zero when nothing is measured). */
static void host_terms(const fit_run *r, const void *extra, double *t, double *y, double *rel)
{
    const double *floor_ms = extra;
    int unmeas = 0;
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) {
        t[f] = r->host_unmeas[f];
        unmeas += r->host_unmeas[f];
    }
    t[OPSCHED_FAMILY_COUNT] = r->host_meas_ms;
    *y = r->enqueue_ms - *floor_ms * unmeas;
    *rel = r->enqueue_ms;
}

static double device_ms(const opsched_composition *c, double s_ms, int n, int n_fused,
                        double weight_gb)
{
    return c->scale * s_ms + c->launch_us * 1e-3 * n + c->fused_launch_us * 1e-3 * n_fused +
           c->weight_ms_per_gb * weight_gb;
}

/* The host's time for an inference: the measured host times (scaled) and
 * the family costs of the launches without one (unmeas, by family).
 * Without host rows the first term is 0 and every launch is unmeasured. */
static double host_ms(const opsched_composition *c, double meas_ms, const int *unmeas)
{
    double h = c->host_scale * meas_ms;
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) h += c->host_us[f] * 1e-3 * unmeas[f];
    return h;
}

static double run_host_ms(const opsched_composition *c, const fit_run *r)
{
    return host_ms(c, r->host_meas_ms, r->host_unmeas);
}

/* Graph mode: the device's time.  Eager: the device's or the host's
 * (host_ms), whichever is longer (launches are enqueued ahead of the
 * device). */
static double composed_ms(const opsched_composition *c, double s_ms, int n, int n_fused,
                          double weight_gb, double host)
{
    double d = device_ms(c, s_ms, n, n_fused, weight_gb);
    return c->mode == OPSCHED_PREDICT_EAGER ? fmax(d, host) : d;
}

/* E = alpha * sumE + beta * (T - S) / 1000, relative least squares. */
static void energy_terms(const fit_run *r, const void *extra, double *t, double *y, double *rel)
{
    const opsched_composition *c = extra;
    t[0] = r->sum_energy;
    double t_ms = composed_ms(c, r->s_ms, r->n, r->n_fused, r->weight_gb, run_host_ms(c, r));
    t[1] = (t_ms - r->s_ms) * 1e-3;
    *y = *rel = r->e_j;
}

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
    unsigned char *use = malloc(n ? n : 1);
    if (!use) return; /* the fallback stands */
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        use[i] = runs[i].e_j > 0 && isfinite(runs[i].sum_energy) && runs[i].sum_energy > 0;
        m += use[i];
    }
    double coef[FIT_MAX];
    /* With few runs the gap power is not fitted but taken as stated. */
    double rms = m >= 3 ? fit_subsets(runs, use, n, 2, 1u, energy_terms, c, coef)
                        : NAN;
    if (m > 0 && isnan(rms)) {
        double sxx = 0, sxy = 0;
        for (size_t i = 0; i < n; i++) {
            if (!use[i]) continue;
            double t[FIT_MAX], y, rel;
            energy_terms(&runs[i], c, t, &y, &rel);
            sxx += t[0] * t[0] / (y * y);
            sxy += t[0] / y * (1 - c->gap_power_w * t[1] / y);
        }
        coef[0] = sxx > 0 ? sxy / sxx : 1;
        coef[1] = c->gap_power_w;
    }
    if (m > 0 && coef[0] > 0) {
        c->energy_scale = coef[0];
        c->gap_power_w = coef[1];
        c->energy_runs = m;
        snprintf(c->energy_source, sizeof(c->energy_source), "fit");
        double rss = 0;
        for (size_t i = 0; i < n; i++) {
            if (!use[i]) continue;
            double t[FIT_MAX], y, rel;
            energy_terms(&runs[i], c, t, &y, &rel);
            double e = (coef[0] * t[0] + coef[1] * t[1]) / y - 1;
            rss += e * e;
        }
        c->energy_rms_rel = sqrt(rss / m);
    }
    free(use);
}

static void fallback_composition(const opsched_predictor *p, opsched_composition *c)
{
    const opsched_predictor_info *in = &p->info;
    c->scale = 1;
    c->launch_us = 0;
    c->weight_ms_per_gb = 0;
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) c->host_us[f] = 0;
    /* Measured host times count as measured until a fit says otherwise. */
    c->host_scale = c->mode == OPSCHED_PREDICT_EAGER && p->n_host > 0 ? 1 : 0;
    c->rms_rel = c->host_rms_rel = NAN;
    snprintf(c->source, sizeof(c->source), "none");
    if (!in->has_calibration) return;
    double node = in->calibration.graph_node_us, launch = in->calibration.launch_us;
    if (isfinite(node) && node > 0) c->launch_us = node;
    if (c->mode == OPSCHED_PREDICT_EAGER && isfinite(launch) && launch > 0)
        for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) c->host_us[f] = launch;
    if (c->launch_us > 0 || c->host_us[0] > 0)
        snprintf(c->source, sizeof(c->source), "calibration");
}

/* Eager: the host's time per inference, fitted to the runs' measured
 * enqueue times with the treatment predictions get: a launch whose
 * configuration has a host measurement costs host_scale x that
 * measurement, any other launch the calibration's launch cost (the least a
 * launch costs the host) plus a non-negative extra of its family.  Without
 * host rows in the database this is the family fit alone (host_scale 0).
 * A family never launched without a measurement costs host_scale x its
 * measured launches' mean, else the average per launch. */
/* With host rows: a launch without a measurement of its own costs its
 * family's median configuration (host_family_ms; a family without host
 * rows, its mean measured launch in the runs, else the mean of all), so
 * both kinds of launch
 * rest on measurements, and one scale is fitted (relative least squares)
 * to the measured latency of the runs the host bounds: those whose
 * predicted device time (the device terms, fitted first) is under
 * HOST_BOUND of it.  That is the time the host side predicts, and it was
 * measured in the same inferences as the host rows profile reads there;
 * the enqueue time on a drained queue is a separate measurement, seconds
 * apart, of a host whose speed drifts (0.66-1.23x the layers' sum at
 * batch 1 on the H100 host).  Of those, the runs whose every host row was
 * measured with them when there are two or more: rows of another run
 * carry another moment's (or machine's) host speed.  With fewer than two
 * host-bound runs (the device bounds them all, or a CPU backend, whose
 * launches compute), to the enqueue times of the runs instead.  Fitting a
 * cost per family to what the measured launches leave over put the
 * residuals of many runs on the few unmeasured launches (322 us per linear
 * launch against a measured 25 us with inception_v3 left out). */
#define HOST_BOUND 0.9

static int host_bound(const opsched_composition *c, const fit_run *r)
{
    return device_ms(c, r->s_ms, r->n, r->n_fused, r->weight_gb) < HOST_BOUND * r->t_ms;
}

/* What the host side of run r is fitted to (ms), or NaN when r is not
 * used: its latency when by_latency (and the host bounds it), else its
 * enqueue time. */
static double host_target(const opsched_composition *c, const fit_run *r, int by_latency)
{
    if (by_latency) return host_bound(c, r) ? r->t_ms : NAN;
    return r->enqueue_ms > 0 ? r->enqueue_ms : NAN;
}

static void fit_host_measured(opsched_composition *c, const fit_run *runs,
                              const unsigned char *use, size_t n, const double *family_ms,
                              const double *meas_ms, const int *meas_n, int m_meas)
{
    double all_ms = 0, all_n = 0, mean_ms[OPSCHED_FAMILY_COUNT];
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) {
        all_ms += meas_ms[f];
        all_n += meas_n[f];
    }
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++)
        mean_ms[f] = isfinite(family_ms[f]) ? family_ms[f]
                     : meas_n[f] > 0       ? meas_ms[f] / meas_n[f]
                     : all_n > 0           ? all_ms / all_n
                                           : 0;
    int bound = 0, bound_run = 0;
    for (size_t i = 0; i < n; i++) {
        int b = use[i] && host_bound(c, &runs[i]);
        bound += b;
        bound_run += b && runs[i].host_all_run;
    }
    int by_latency = bound >= 2, own_only = bound_run >= 2;
    double sxx = 0, sxy = 0;
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        int take = use[i] && (!own_only || runs[i].host_all_run);
        double y = take ? host_target(c, &runs[i], by_latency) : NAN;
        if (isnan(y)) continue;
        double t = runs[i].host_meas_ms;
        for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) t += mean_ms[f] * runs[i].host_unmeas[f];
        sxx += t * t / (y * y);
        sxy += t / y;
        m++;
    }
    c->host_scale = sxx > 0 && sxy > 0 ? sxy / sxx : 1;
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++)
        c->host_us[f] = c->host_scale * mean_ms[f] * 1e3;
    double rss = 0; /* of what the host side was fitted to */
    for (size_t i = 0; i < n; i++) {
        int take = use[i] && (!own_only || runs[i].host_all_run);
        double y = take ? host_target(c, &runs[i], by_latency) : NAN;
        if (isnan(y)) continue;
        double e = run_host_ms(c, &runs[i]) / y - 1;
        rss += e * e;
    }
    c->host_rms_rel = m > 0 ? sqrt(rss / m) : NAN;
    c->host_runs = m;
    c->host_runs_measured = m_meas;
}

static void fit_host(opsched_predictor *p, opsched_composition *c, const fit_run *runs, size_t n)
{
    const opsched_predictor_info *in = &p->info;
    double floor_ms = in->has_calibration && in->calibration.launch_us > 0
                          ? in->calibration.launch_us * 1e-3
                          : 0;
    unsigned char *use = malloc(n ? n : 1);
    if (!use) return;
    int m = 0, m_meas = 0, seen[OPSCHED_FAMILY_COUNT] = {0}, meas_n[OPSCHED_FAMILY_COUNT] = {0};
    double launches = 0, host = 0, meas_ms[OPSCHED_FAMILY_COUNT] = {0};
    for (size_t i = 0; i < n; i++) {
        int unmeas = 0;
        for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) unmeas += runs[i].host_unmeas[f];
        use[i] = runs[i].enqueue_ms > floor_ms * unmeas;
        m += use[i];
        if (!use[i]) continue;
        launches += runs[i].n;
        host += runs[i].enqueue_ms;
        m_meas += runs[i].host_meas_ms > 0;
        for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) {
            seen[f] |= runs[i].host_unmeas[f] > 0;
            meas_ms[f] += runs[i].host_meas_fam_ms[f];
            meas_n[f] += runs[i].host_meas_fam[f];
        }
    }
    if (p->n_host > 0 && m_meas > 0) {
        fit_host_measured(c, runs, use, n, p->host_family_ms, meas_ms, meas_n, m_meas);
        free(use);
        return;
    }
    /* The scale of the measured host times is a term only when there are
     * any, and then it must come out positive. */
    int k = p->n_host > 0 ? OPSCHED_FAMILY_COUNT + 1 : OPSCHED_FAMILY_COUNT;
    unsigned required = m_meas > 0 ? 1u << OPSCHED_FAMILY_COUNT : 0;
    double coef[FIT_MAX];
    double rms = m > 0 ? fit_subsets(runs, use, n, k, required, host_terms, &floor_ms, coef) : NAN;
    if (!isnan(rms)) {
        c->host_scale = p->n_host == 0 ? 0 : m_meas > 0 ? coef[OPSCHED_FAMILY_COUNT] : 1;
        double mean_us = launches > 0 ? host / launches * 1e3 : 0;
        for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++)
            c->host_us[f] = seen[f]       ? (floor_ms + coef[f]) * 1e3
                            : meas_n[f] > 0 ? c->host_scale * meas_ms[f] / meas_n[f] * 1e3
                                            : mean_us;
        double rss = 0; /* of the whole enqueue time */
        for (size_t i = 0; i < n; i++) {
            if (!use[i]) continue;
            double e = run_host_ms(c, &runs[i]) / runs[i].enqueue_ms - 1;
            rss += e * e;
        }
        c->host_rms_rel = sqrt(rss / m);
        c->host_runs = m;
        c->host_runs_measured = m_meas;
    }
    free(use);
}

/* Whether the device bounded a free run, so that its latency is the
 * device's time: the host took less than 90% of it, by the host rows
 * measured in the run itself when it has them (its layers' host times add
 * up to what the host spent on its inferences), else by the enqueue time
 * on a drained queue (a separate measurement, seconds apart, of a host
 * whose speed drifts: at batch 1 on the H100 host it called runs that the
 * host bounds device-bound, and their host time went into launch_us). */
/* How far above a run's latency its predicted device time may be before
 * the eager fit takes the run in as a bound. */
#define DEVICE_SLACK 0.02

static int device_bound_run(const fit_run *r)
{
    if (r->host_all_run) return r->host_meas_ms < HOST_BOUND * r->t_ms;
    return !(r->enqueue_ms >= HOST_BOUND * r->t_ms);
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
    use = malloc(fs.n ? fs.n : 1);
    if (!use) {
        st = OS_NOMEM(p->ctx);
        goto done;
    }
    /* The device terms from runs whose layers are all exact (when there
     * are two), and in eager mode from runs the device bounds (the host
     * took less than 90% of the time to enqueue them). */
    int exact = 0, device_bound = 0;
    for (size_t i = 0; i < fs.n; i++) {
        const fit_run *r = &fs.runs[i];
        int bound = mode == OPSCHED_PREDICT_GRAPH || device_bound_run(r);
        exact += r->exact && bound;
        device_bound += bound;
    }
    for (size_t i = 0; i < fs.n; i++) {
        const fit_run *r = &fs.runs[i];
        int bound = mode == OPSCHED_PREDICT_GRAPH || device_bound_run(r);
        use[i] = (unsigned char)((device_bound >= 2 ? bound : 1) && (exact >= 2 ? r->exact : 1));
        c->runs += use[i];
    }
    c->runs_exact = exact;
    double coef[FIT_MAX];
    double rms = fit_subsets(fs.runs, use, fs.n, 4, 1u, device_terms, NULL, coef);
    /* Eager: a run's latency bounds its device time from above, host-bound
     * or not (T = max(D, H)).  The device-bound runs are mostly batch 8
     * and 32, whose gap per launch (~2.2 us on the H100) is more than the
     * batch-1 runs allow: a host-bound run whose device time the fit puts
     * above its latency (by more than DEVICE_SLACK) joins the fit with its
     * latency as the device time (an active constraint), until none is. */
    for (int round = 0; mode == OPSCHED_PREDICT_EAGER && !isnan(rms) && round < 8; round++) {
        opsched_composition t = *c;
        t.scale = coef[0];
        t.launch_us = coef[1] * 1e3;
        t.weight_ms_per_gb = coef[2];
        t.fused_launch_us = coef[3] * 1e3;
        int added = 0;
        for (size_t i = 0; i < fs.n; i++) {
            const fit_run *r = &fs.runs[i];
            if (use[i] || (exact >= 2 && !r->exact)) continue;
            if (device_ms(&t, r->s_ms, r->n, r->n_fused, r->weight_gb) >
                (1 + DEVICE_SLACK) * r->t_ms) {
                use[i] = 1;
                added++;
            }
        }
        if (!added) break;
        c->runs += added;
        rms = fit_subsets(fs.runs, use, fs.n, 4, 1u, device_terms, NULL, coef);
    }
    if (!isnan(rms)) {
        c->scale = coef[0];
        c->launch_us = coef[1] * 1e3;
        c->weight_ms_per_gb = coef[2];
        c->fused_launch_us = coef[3] * 1e3;
        snprintf(c->source, sizeof(c->source), "fit");
    } else {
        c->runs = 0;
    }
    /* The host terms after the device's: with host rows they are fitted to
     * the runs the host bounds, which the device terms tell. */
    if (mode == OPSCHED_PREDICT_EAGER) fit_host(p, c, fs.runs, fs.n);
    if (!isnan(rms)) {
        /* The error of the whole: every run, composed as predicted. */
        double rss = 0;
        for (size_t i = 0; i < fs.n; i++) {
            const fit_run *r = &fs.runs[i];
            double t_ms =
                composed_ms(c, r->s_ms, r->n, r->n_fused, r->weight_gb, run_host_ms(c, r));
            double e = t_ms / r->t_ms - 1;
            rss += e * e;
        }
        c->rms_rel = fs.n ? sqrt(rss / (double)fs.n) : NAN;
    }
    fit_energy(p, c, fs.runs, fs.n);
    if (fs.skipped)
        os_log(p->ctx, OPSCHED_LOG_INFO,
               "composition (%s): %d network runs left out (not buildable or not fully predicted)",
               opsched_predict_mode_name(mode), fs.skipped);
done:
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

static opsched_status predict_network(opsched_predictor *p, const opsched_graph *g,
                                      const char *model, int64_t run_id,
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
    OS_TRY_GOTO(st, predict_layers(p, g, model, run_id, opts->fuse, r), fail);
    layer_sums s;
    sum_layers(r, p->info.device.l2_bytes, &s);
    for (int i = 0; i < r->n_layers; i++) r->n_by_source[r->layers[i].p.source]++;
    r->launches = s.launches;
    r->fused_launches = s.fused_launches;
    r->composed_weight_gb = s.weight_gb;
    r->flops = (int64_t)s.flops;
    r->coverage_flops = s.flops > 0 ? s.exact_flops / s.flops : NAN;
    const opsched_composition *c = &r->composition;
    /* The host side: each launched layer's host time (eager), the total
     * and the share of it resting on host measurements. */
    r->host_ms = r->coverage_host = r->coverage_host_run = NAN;
    double host = 0, host_run = 0;
    for (int i = 0; i < r->n_layers; i++) {
        opsched_layer_prediction *l = &r->layers[i];
        if (opts->mode != OPSCHED_PREDICT_EAGER || !l->launches) {
            l->host_ms = 0;
            l->host_measured = l->host_learned = 0;
            l->host_measurement_id = 0;
        } else {
            l->host_ms = l->host_measured || l->host_learned ? c->host_scale * l->host_ms
                                                              : c->host_us[l->p.family] * 1e-3;
            if (l->host_measured == OPSCHED_HOST_ROWS_RUN) host_run += l->host_ms;
        }
    }
    if (opts->mode == OPSCHED_PREDICT_EAGER) {
        host = host_ms(c, s.host_meas_ms, s.host_unmeas);
        r->host_ms = host;
        r->coverage_host =
            host > 0 ? c->host_scale * (s.host_meas_ms - s.host_learned_ms) / host : NAN;
        r->coverage_host_run = host > 0 ? host_run / host : NAN;
    }
    /* Each launch's share of the device time: graph mode's total is
     * their sum (device_ms term by term), the composition a sequential
     * schedule's predicted cost adds up stage by stage. */
    double device = 0;
    int64_t l2 = p->info.device.l2_bytes;
    for (int i = 0; i < r->n_layers; i++) {
        opsched_layer_prediction *l = &r->layers[i];
        if (!l->launches) {
            l->composed_ms = 0;
            continue;
        }
        if (!isfinite(l->p.ms)) {
            l->composed_ms = NAN;
            r->launches_unpredicted++;
            continue;
        }
        double w = l2 <= 0 || l->weight_bytes <= l2 ? (double)l->weight_bytes * 1e-9 : 0;
        l->composed_ms = device_ms(c, l->p.ms, 1, l->fused_relu, w);
        device += l->composed_ms;
    }
    r->partial_ms = opts->mode == OPSCHED_PREDICT_EAGER ? fmax(device, host) : device;
    if (s.complete) {
        r->layer_sum_ms = s.ms;
        r->total_ms = r->partial_ms;
        r->coverage_time = s.ms > 0 ? s.exact_ms / s.ms : NAN;
        /* Layer errors as independent, plus the composition's residual. */
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

opsched_status opsched_predict_network(opsched_predictor *p, const opsched_graph *g,
                                       const opsched_predict_options *opts,
                                       opsched_network_prediction **out)
{
    return predict_network(p, g, g ? opsched_graph_name(g) : NULL, 0, opts, out);
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
    opsched_status st = predict_network(p, g, run->model, run->run_id, &o, out);
    opsched_graph_free(g);
    return st;
}
