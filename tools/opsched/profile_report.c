/*
 * profile_report.c - the outputs of `opsched profile` for one profiled
 * (batch, size): the rows of the overall and layers CSV files, the
 * trtexec-style performance summary with its warnings, and the rows it
 * adds to the measurement database.
 *
 * Values that were not measured (energy on a device without a sensor, a
 * CUDA graph on the CPU) are empty CSV fields and "n/a" on the terminal.
 */
#include <math.h>
#include <string.h>

#include "profile_report.h"

/* ---- CSV ---------------------------------------------------------------- */

static int is_host_backend(const profile_item *it)
{
    return strcmp(it->dev->backend, "cpu") == 0;
}


/* A value that was not measured (NaN) is an empty field. */
static void csv_num(opsched_csv_writer *w, double v)
{
    opsched_csv_double(w, v, "%.6g");
}

static void csv_int(opsched_csv_writer *w, int64_t v)
{
    if (v >= 0)
        opsched_csv_int(w, v);
    else
        opsched_csv_empty(w);
}

static const char overall_columns[] =
    "model,algorithm,batch,input_size,mean,std,min,max,median,p90,p99,throughput,"
    "power_mean_w,energy_per_inference_j,peak_memory_bytes,e2e_graph_median_ms,"
    "layer_sum_ms,attribution_latency_pct,attribution_energy_pct,check_rel_l2,"
    "enqueue_ms,cv,math,layout,fallback_layers,attribution_graph_pct,layers_queued,"
    "layer_isolated_sum_ms,attribution_isolated_pct";

static const char layers_columns[] =
    "batch,input_size,layer,op,in_channels,out_channels,kernel_size,stride,"
    "output_shape,flops,mean_ms,median_ms,percentage,energy_j,algorithm,host_ms";

static int count_fields(const char *names)
{
    int n = 1;
    for (; *names; names++) n += *names == ',';
    return n;
}

static opsched_status begin(opsched_csv_writer *w, const char *names, int header)
{
    return header ? opsched_csv_header(w, names) : opsched_csv_set_fields(w, count_fields(names));
}

opsched_status report_overall_begin(opsched_csv_writer *w, int header)
{
    return begin(w, overall_columns, header);
}

opsched_status report_layers_begin(opsched_csv_writer *w, int header)
{
    return begin(w, layers_columns, header);
}

/* The numerics check's relative error: empty when the CPU backend ran the
 * network (it is the reference; nothing to compare against). */
static double check_value(const profile_item *it)
{
    return is_host_backend(it) ? NAN : it->r->check_rel_l2;
}

opsched_status report_overall_row(opsched_csv_writer *f, const profile_item *it)
{
    const opsched_profile_result *r = it->r;
    const opsched_stats *s = &r->e2e;
    opsched_csv_str(f, it->model);
    opsched_csv_str(f, it->algo_policy);
    opsched_csv_int(f, it->batch);
    opsched_csv_int(f, it->size);
    csv_num(f, s->mean);
    csv_num(f, s->std);
    csv_num(f, s->min);
    csv_num(f, s->max);
    csv_num(f, s->median);
    csv_num(f, s->p90);
    csv_num(f, s->p99);
    csv_num(f, s->median > 0 ? (double)it->batch * 1000.0 / s->median : NAN);
    csv_num(f, r->energy.valid ? r->energy.power_mean_w : NAN);
    csv_num(f, r->energy.valid ? r->energy.energy_j : NAN);
    csv_int(f, (int64_t)r->peak_memory_bytes);
    csv_num(f, r->e2e_graph.n > 0 ? r->e2e_graph.median : NAN);
    csv_num(f, r->layer_sum_ms);
    csv_num(f, 100.0 * r->attribution_latency);
    csv_num(f, 100.0 * r->attribution_energy);
    csv_num(f, check_value(it));
    csv_num(f, r->enqueue_ms);
    csv_num(f, s->cv);
    opsched_csv_str(f, opsched_math_name(it->math));
    opsched_csv_str(f, it->layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw");
    opsched_csv_int(f, r->n_fallbacks);
    csv_num(f, 100.0 * r->attribution_graph);
    opsched_csv_int(f, r->layers_queued);
    csv_num(f, r->layer_isolated_sum_ms);
    csv_num(f, 100.0 * r->attribution_isolated);
    return opsched_csv_end_row(f);
}

/* "3" for a square kernel or stride, "7x1" otherwise; "" when none. */
static void pair_text(const int64_t v[2], char *buf, size_t n)
{
    if (v[0] == v[1])
        snprintf(buf, n, "%lld", (long long)v[0]);
    else
        snprintf(buf, n, "%lldx%lld", (long long)v[0], (long long)v[1]);
}

static void kernel_stride(const opsched_node *n, char *k, char *s, size_t size)
{
    k[0] = s[0] = '\0';
    if (n->op == OPSCHED_OP_CONV) {
        pair_text(n->attr.conv.kernel, k, size);
        pair_text(n->attr.conv.stride, s, size);
    } else if (n->op == OPSCHED_OP_MAXPOOL || n->op == OPSCHED_OP_AVGPOOL) {
        pair_text(n->attr.pool.kernel, k, size);
        pair_text(n->attr.pool.stride, s, size);
    }
}

opsched_status report_layers_rows(opsched_csv_writer *f, const profile_item *it)
{
    const opsched_profile_result *r = it->r;
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_profile *l = &r->layers[i];
        const opsched_node *n = opsched_graph_node(it->g, i);
        opsched_config_record rec;
        char k[48], s[48], shape[160] = "", algo[80];
        if (opsched_config_record_from_node(it->g, i, &rec) != OPSCHED_OK)
            rec.in_channels = rec.out_channels = -1;
        kernel_stride(n, k, s, sizeof(k));
        const opsched_tensor *y = n->n_outputs ? opsched_graph_tensor(it->g, n->outputs[0]) : NULL;
        if (y) opsched_shape_format(&y->shape, shape, sizeof(shape));
        snprintf(algo, sizeof(algo), "%s%s", l->algo, l->fallback ? " (fallback)" : "");
        opsched_csv_int(f, it->batch);
        opsched_csv_int(f, it->size);
        opsched_csv_str(f, n->name);
        opsched_csv_str(f, opsched_node_op_name(n));
        csv_int(f, rec.in_channels);
        csv_int(f, rec.out_channels);
        opsched_csv_str(f, k);
        opsched_csv_str(f, s);
        opsched_csv_str(f, shape);
        opsched_csv_int(f, n->cost.flops);
        csv_num(f, l->stats.n > 0 ? l->mean_ms : (l->timed ? NAN : 0.0));
        csv_num(f, l->stats.n > 0 ? l->median_ms : (l->timed ? NAN : 0.0));
        csv_num(f, r->layer_sum_ms > 0 ? 100.0 * l->median_ms / r->layer_sum_ms : NAN);
        csv_num(f, l->energy_j);
        opsched_csv_str(f, algo);
        csv_num(f, l->host_ms);
        opsched_status st = opsched_csv_end_row(f);
        if (st != OPSCHED_OK) return st;
    }
    return OPSCHED_OK;
}

/* ---- terminal ----------------------------------------------------------- */

static void stats_line(FILE *f, const char *what, const opsched_stats *s)
{
    fprintf(f,
            "%-22s min = %.4f ms, max = %.4f ms, mean = %.4f ms, median = %.4f ms, "
            "p90 = %.4f ms, p99 = %.4f ms (%d samples, CV %.2f%%)\n",
            what, s->min, s->max, s->mean, s->median, s->p90, s->p99, s->n, 100.0 * s->cv);
}

static void energy_lines(FILE *f, const opsched_profile_result *r)
{
    const opsched_energy *e = &r->energy;
    if (!e->valid) {
        fprintf(f, "%-22s n/a (not measured, or no power sensor)\n", "Energy:");
    } else {
        fprintf(f,
                "%-22s %.6f J/inference (dynamic %.6f J), power %.1f W (idle %.1f W), "
                "%ld inferences in %.2f s, %s%s\n",
                "Energy:", e->energy_j, e->dynamic_energy_j, e->power_mean_w, e->idle_power_w,
                e->launches, e->window_ms / 1000.0, e->method,
                r->energy_from_graph ? ", CUDA graph replays" : "");
    }
    if (!isnan(r->layer_energy_sum_j))
        fprintf(f, "%-22s sum %.6f J = %.1f%% of the network's\n",
                "Layer energy:", r->layer_energy_sum_j, 100.0 * r->attribution_energy);
    if (!isnan(r->layer_isolated_sum_ms))
        fprintf(f, "%-22s sum %.4f ms = %.1f%% of the %s (each distinct layer timed alone)\n",
                "Layers alone:", r->layer_isolated_sum_ms, 100.0 * r->attribution_isolated,
                r->e2e_graph.n > 0 ? "CUDA graph's latency" : "median latency");
}

void report_summary(FILE *f, const profile_item *it)
{
    const opsched_profile_result *r = it->r;
    char mem[32];
    fprintf(f, "=== Performance summary: %s, batch %lld, %lldx%lld, %s:%d (%s), %s%s, %s, %s ===\n",
            it->model, (long long)it->batch, (long long)it->size, (long long)it->size,
            it->dev->backend, it->dev->index, it->dev->name, it->algo_policy,
            r->n_fallbacks ? " (+ fallback)" : "", opsched_math_name(it->math),
            it->layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw");
    fprintf(f, "%-22s %.2f %s/s (batch %lld / median latency)\n", "Throughput:",
            r->e2e.median > 0 ? (double)it->batch * 1000.0 / r->e2e.median : 0.0,
            it->training ? "training samples" : "inferences", (long long)it->batch);
    stats_line(f, "Latency:", &r->e2e);
    fprintf(f, "%-22s median = %.4f ms%s\n", "Enqueue Time:", r->enqueue_ms,
            is_host_backend(it) ? " (the CPU backend computes while it enqueues)" : "");
    if (r->host_waited)
        fprintf(f,
                "%-22s %.4f ms per timed free-running inference, %.1fx the enqueue time: "
                "launches waited for a full queue, the layers' host times not kept\n",
                "Host enqueue:", r->free_host_ms, r->free_host_ms / r->enqueue_ms);
    else if (!isnan(r->layer_host_sum_ms))
        fprintf(f,
                "%-22s sum of layers %.4f ms, %.4f ms per timed free-running inference "
                "(on a drained queue %.4f ms)\n",
                "Host enqueue:", r->layer_host_sum_ms, r->free_host_ms, r->enqueue_ms);
    if (r->e2e_layered.n > 0) {
        stats_line(f, "Compute (layered):", &r->e2e_layered);
        fprintf(f, "%-22s layer sum %.4f ms = %.1f%% of the median latency",
                "Attribution:", r->layer_sum_ms, 100.0 * r->attribution_latency);
        if (!isnan(r->attribution_graph))
            fprintf(f, ", %.1f%% of the CUDA graph's", 100.0 * r->attribution_graph);
        fprintf(f, " (per-layer medians; %s)\n",
                r->layers_queued ? "layers queued behind graph replays: device time, launch "
                                   "gaps excluded"
                                 : "a launch that reaches the device late counts in its layer");
    }
    if (r->e2e_graph.n > 0)
        stats_line(f, "CUDA Graph Latency:", &r->e2e_graph);
    else
        fprintf(f, "%-22s n/a (off, or the backend has no graphs)\n", "CUDA Graph Latency:");
    energy_lines(f, r);
    fprintf(f, "%-22s %sB (activations after reuse + weights + workspaces)\n",
            "Peak memory:", tool_human((double)r->peak_memory_bytes, mem, sizeof(mem)));
    if (r->n_launches > 0) {
        int fused = 0, views = 0;
        for (int i = 0; i < r->n_layers; i++) {
            const char *a = r->layers[i].algo;
            /* "fused", "fused into <layer>" (a prologue, a gate), "gathered" (a movement
             * run's inside, a Concat its runs read past) */
            fused += strcmp(a, "fused") == 0 || strncmp(a, "fused into ", 11) == 0 ||
                     strcmp(a, "gathered") == 0;
            views += strcmp(a, "view") == 0;
        }
        fprintf(f, "%-22s %d for %d layers (%d run inside another layer's launch, %d views)\n",
                "Launches:", r->n_launches, r->n_layers, fused, views);
        if (r->n_rowmajor > 0)
            fprintf(f, "%-22s %d 4-D tensors kept row-major (permuted to [N, H, W, C] by the "
                       "network; their Transposes in and out are views)\n",
                    "Layout per tensor:", r->n_rowmajor);
        if (r->pdl >= 0)
            fprintf(f, "%-22s %s (graph replays %.4f ms with them, %.4f ms without)\n",
                    "Programmatic launch:", r->pdl ? "on" : "off", r->pdl_ms[1], r->pdl_ms[0]);
    }
    if (is_host_backend(it))
        fprintf(f, "%-22s n/a (the CPU backend is the reference)\n", "Numerics:");
    else if (r->check_note[0])
        fprintf(f, "%-22s not checked: %s\n", "Numerics:", r->check_note);
    else if (isnan(r->check_rel_l2))
        fprintf(f, "%-22s not checked\n", "Numerics:");
    else if (!isnan(r->check_sensitivity))
        fprintf(f,
                "%-22s relative L2 %.3g against the CPU backend in fp32 (tolerance %.0e); the "
                "reference itself moves %.3g when its inputs change by 1e-6, so the bar is 3 "
                "times that: %s\n",
                "Numerics:", r->check_rel_l2, r->check_tolerance, r->check_sensitivity,
                r->check_passed ? "passed (conditioned)" : "FAILED");
    else
        fprintf(f, "%-22s relative L2 %.3g against the CPU backend in fp32 (tolerance %.0e): %s\n",
                "Numerics:", r->check_rel_l2, r->check_tolerance,
                r->check_passed ? "passed" : "FAILED");
}

void report_line(FILE *f, const profile_item *it)
{
    const opsched_profile_result *r = it->r;
    fprintf(f, "%s b%lld %lld: median %.4f ms, p99 %.4f ms, %.1f %s/s", it->model,
            (long long)it->batch, (long long)it->size, r->e2e.median, r->e2e.p99,
            r->e2e.median > 0 ? (double)it->batch * 1000.0 / r->e2e.median : 0.0,
            it->training ? "samples" : "inf");
    if (r->e2e_graph.n > 0) fprintf(f, ", graph %.4f ms", r->e2e_graph.median);
    if (!isnan(r->attribution_latency))
        fprintf(f, ", layers %.1f%%", 100.0 * r->attribution_latency);
    if (r->energy.valid) fprintf(f, ", %.4f J/inf", r->energy.energy_j);
    if (!isnan(check_value(it))) fprintf(f, ", check %s", r->check_passed ? "passed" : "FAILED");
    fputc('\n', f);
}

int report_warnings(const profile_item *it)
{
    const opsched_profile_result *r = it->r;
    const char *where = it->model;
    if (!is_host_backend(it) && r->enqueue_ms >= 0.9 * r->e2e.median)
        fprintf(stderr,
                "opsched: warning: %s b%lld %lld is enqueue-bound: enqueueing one "
                "inference takes %.4f ms, >= 90%% of its latency %.4f ms; the host limits "
                "throughput (a CUDA graph removes most of that)\n",
                where, (long long)it->batch, (long long)it->size, r->enqueue_ms, r->e2e.median);
    if (r->e2e.cv > OPSCHED_CV_WARN)
        fprintf(stderr,
                "opsched: warning: %s b%lld %lld is unstable: the coefficient of "
                "variation of its latency is %.1f%% (> %.1f%%); the device may be shared "
                "or throttling\n",
                where, (long long)it->batch, (long long)it->size, 100.0 * r->e2e.cv,
                100.0 * OPSCHED_CV_WARN);
    if (r->check_note[0] && !is_host_backend(it))
        fprintf(stderr, "opsched: warning: %s b%lld %lld: numerics not checked: %s\n", where,
                (long long)it->batch, (long long)it->size, r->check_note);
    if (!isnan(check_value(it)) && !r->check_passed) {
        fprintf(stderr,
                "opsched: error: %s b%lld %lld: numerics check failed: relative L2 "
                "error %.3g against the CPU backend exceeds %.0e%s\n",
                where, (long long)it->batch, (long long)it->size, r->check_rel_l2,
                r->check_tolerance,
                isnan(r->check_sensitivity) ? ""
                                            : " and 3 times the reference's own sensitivity");
        return 1;
    }
    return 0;
}

/* ---- database ----------------------------------------------------------- */

/* One layer's row: its configuration (by node signature) and a measurement
 * under the given settings key. */
static opsched_status store_layer_row(opsched_store *s, int64_t run_id, int64_t device_id,
                                      const profile_item *it, int node, const char *key,
                                      const opsched_measurement *m)
{
    opsched_config_record rec;
    int64_t config_id = 0;
    opsched_status st = opsched_config_record_from_node(it->g, node, &rec);
    if (st == OPSCHED_OK) st = opsched_store_config(s, &rec, &config_id);
    if (st == OPSCHED_OK)
        st = opsched_store_add(s, run_id, device_id, config_id, key, it->algo_policy, m, NULL);
    return st;
}

/* A measurement of what the executor ran for layer l, with these stats. */
static void layer_measurement(const profile_item *it, const opsched_layer_profile *l,
                              const opsched_stats *stats, opsched_measurement *m)
{
    memset(m, 0, sizeof(*m));
    m->status = OPSCHED_OK;
    snprintf(m->algo, sizeof(m->algo), "%s", l->algo);
    m->workspace_bytes = l->workspace_bytes;
    m->math = it->math;
    m->layout = it->layout;
    m->cache = OPSCHED_CACHE_HOT;
    m->launches_per_sample = 1;
    m->stats = *stats;
    m->unstable = stats->cv > OPSCHED_CV_WARN;
    if (l->fallback)
        snprintf(m->message, sizeof(m->message), "%s could not run it: fallback %s",
                 it->algo_policy, it->algo_fallback ? it->algo_fallback : "heuristic");
}

/* The harness's settings key for this item's settings, then suffix. */
static void layer_key(const profile_item *it, int energy, const char *suffix, int fused,
                      char *key, size_t size)
{
    opsched_measure_options mo;
    opsched_measure_options_default(&mo);
    mo.plan.algo = it->algo_policy;
    mo.plan.math = it->math;
    mo.plan.layout = it->layout;
    mo.energy = energy;
    opsched_settings_key(&mo, key, size);
    strncat(key, suffix, size - strlen(key) - 1);
    if (fused) strncat(key, ";fused=relu", size - strlen(key) - 1);
}

/* Layer-timed runs (inside the network): ";mode=network". */
static opsched_status store_layers(opsched_store *s, int64_t run_id, int64_t device_id,
                                   const profile_item *it)
{
    const opsched_profile_result *r = it->r;
    char key[256];
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_profile *l = &r->layers[i];
        if (!l->timed || l->stats.n == 0) continue;
        opsched_measurement m;
        layer_measurement(it, l, &l->stats, &m);
        m.energy = l->energy;
        layer_key(it, l->energy.valid, ";mode=network", 0, key, sizeof(key));
        opsched_status st = store_layer_row(s, run_id, device_id, it, i, key, &m);
        if (st != OPSCHED_OK) return st;
    }
    return OPSCHED_OK;
}

/* Layers measured alone (--isolated, --layer-energy) are what the operator
 * harness measures, so they go in under the harness's own settings key
 * (a sweep of the same configuration finds them), with ";fused=relu" when
 * the layer ran the Relu after it too. */
static opsched_status store_isolated(opsched_store *s, int64_t run_id, int64_t device_id,
                                     const profile_item *it)
{
    const opsched_profile_result *r = it->r;
    char key[256];
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_profile *l = &r->layers[i];
        if (!l->timed || l->isolated.status != OPSCHED_OK || l->isolated.stats.n == 0) continue;
        layer_key(it, l->isolated.energy.valid, "", l->fused_next, key, sizeof(key));
        opsched_status st = store_layer_row(s, run_id, device_id, it, i, key, &l->isolated);
        if (st != OPSCHED_OK) return st;
    }
    return OPSCHED_OK;
}

/* Each layer's host enqueue time in a free run (its share of the median
 * timed free-running inference as the median, the inferences' other
 * statistics as they are) under the harness's settings key with ";mode=host"
 * (and ";fused=relu" when the layer ran the Relu after it): the host cost
 * of launching that configuration with that engine (the algorithm column),
 * what a free-running (eager) prediction adds up against device time. */
static opsched_status store_host(opsched_store *s, int64_t run_id, int64_t device_id,
                                 const profile_item *it)
{
    const opsched_profile_result *r = it->r;
    char key[256];
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_profile *l = &r->layers[i];
        if (!l->timed || l->host.n == 0 || isnan(l->host_ms)) continue;
        opsched_measurement m;
        layer_measurement(it, l, &l->host, &m);
        m.stats.median = l->host_ms; /* its share of the median inference */
        layer_key(it, 0, ";mode=host", l->fused_next, key, sizeof(key));
        opsched_status st = store_layer_row(s, run_id, device_id, it, i, key, &m);
        if (st != OPSCHED_OK) return st;
    }
    return OPSCHED_OK;
}

static void network_record(const profile_item *it, const char *mode, opsched_network_record *n)
{
    const opsched_profile_result *r = it->r;
    memset(n, 0, sizeof(*n));
    n->model = it->model;
    n->batch = it->batch;
    n->height = n->width = it->size;
    n->algo_policy = it->algo_policy;
    n->algo_fallback = it->algo_fallback;
    n->math = it->math;
    n->layout = it->layout;
    n->mode = mode;
    n->enqueue_ms = NAN;
    n->peak_memory_bytes = (int64_t)r->peak_memory_bytes;
    n->layer_sum_ms = n->attribution_latency = NAN;
    n->layer_energy_j = n->attribution_energy = NAN;
    n->check_rel_l2 = check_value(it);
    n->check_passed = isnan(n->check_rel_l2) ? -1 : r->check_passed;
    int graph = strcmp(mode, "graph") == 0;
    if (r->energy_from_graph == graph && r->energy.valid) {
        n->energy = r->energy;
        n->layer_energy_j = r->layer_energy_sum_j;
        n->attribution_energy = r->attribution_energy;
    }
    if (strcmp(mode, "free") == 0) {
        n->stats = r->e2e;
        n->enqueue_ms = r->enqueue_ms;
        n->layer_sum_ms = r->layer_sum_ms;
        n->attribution_latency = r->attribution_latency;
    } else if (graph) {
        n->stats = r->e2e_graph;
    } else {
        n->stats = r->e2e_layered;
        n->layer_sum_ms = r->layer_sum_ms;
    }
}

opsched_status report_store(opsched_store *s, int64_t run_id, int64_t device_id,
                            const profile_item *it)
{
    opsched_network_record n;
    opsched_status st = store_layers(s, run_id, device_id, it);
    if (st == OPSCHED_OK) st = store_isolated(s, run_id, device_id, it);
    if (st == OPSCHED_OK) st = store_host(s, run_id, device_id, it);
    if (st != OPSCHED_OK) return st;
    if (it->r->e2e_layered.n > 0) {
        network_record(it, "layered", &n);
        if ((st = opsched_store_add_network(s, run_id, device_id, &n, NULL)) != OPSCHED_OK)
            return st;
    }
    if (it->r->e2e_graph.n > 0) {
        network_record(it, "graph", &n);
        if ((st = opsched_store_add_network(s, run_id, device_id, &n, NULL)) != OPSCHED_OK)
            return st;
    }
    network_record(it, "free", &n);
    return opsched_store_add_network(s, run_id, device_id, &n, NULL);
}
