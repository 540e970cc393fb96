/*
 * profile.c - profiling a whole network: options, the order of the steps,
 * what the layers add up to (attribution), and the result's lifetime.
 *
 * The steps run in an order that keeps each one honest: the numerics check
 * first (a wrong answer fast is worth nothing, and the CPU reference run
 * leaves the device idle, which the warm-up then repairs), then the
 * free-running timing the other numbers are compared against, the host's
 * enqueue time, graph replays, layer-timed runs, and the energy windows
 * last, on a device that is warm.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "exec/exec_impl.h"
#include "profile/profile_impl.h"

void opsched_profile_options_default(opsched_profile_options *o)
{
    memset(o, 0, sizeof(*o));
    o->exec.plan.math = OPSCHED_MATH_FP32;
    o->exec.plan.layout = OPSCHED_LAYOUT_NCHW;
    o->exec.seed = 1;
    /* Every Concat copies, so that each layer of the network is measured
     * as the predictor composes it (one launch per node that is not a view
     * or a fused Relu) and profiles stay comparable with earlier ones. */
    o->exec.no_concat_elision = 1;
    o->warmup_ms = 200;
    o->iters = 50;
    o->min_ms = 500;
    o->cuda_graph = 1;
    o->layers = 1;
    o->energy_window_ms = 1000;
    o->idle_ms = 300;
    o->check = 1;
    o->host_layers = 1;
}

double opsched_profile_tolerance(opsched_math m)
{
    switch (m) {
    case OPSCHED_MATH_FP32:
        return 1e-5;
    case OPSCHED_MATH_TF32:
        return 5e-3;
    case OPSCHED_MATH_FP16:
        return 2e-2;
    case OPSCHED_MATH_BF16:
        return 5e-2;
    default:
        return 1e-5;
    }
}

void opsched_profile_result_free(opsched_profile_result *r)
{
    if (!r) return;
    free(r->layers);
    free(r->power_t_ms);
    free(r->power_w);
    free(r);
}

static void energy_unknown(opsched_energy *e)
{
    memset(e, 0, sizeof(*e));
    e->energy_j = e->dynamic_energy_j = e->energy_power_j = NAN;
    e->power_mean_w = e->idle_power_w = e->temperature_c = e->sm_clock_mhz = NAN;
    e->power_limit_w = NAN;
}

static opsched_status result_new(opsched_ctx *ctx, int n_layers, opsched_profile_result **out)
{
    opsched_profile_result *r = calloc(1, sizeof(*r));
    if (!r) return OS_NOMEM(ctx);
    r->layers = calloc((size_t)(n_layers > 0 ? n_layers : 1), sizeof(*r->layers));
    if (!r->layers) {
        free(r);
        return OS_NOMEM(ctx);
    }
    r->n_layers = n_layers;
    r->pdl = -1;
    r->enqueue_ms = NAN;
    energy_unknown(&r->energy);
    r->layer_sum_ms = r->attribution_latency = r->attribution_graph = NAN;
    r->layer_energy_sum_j = r->attribution_energy = NAN;
    r->layer_isolated_sum_ms = r->attribution_isolated = NAN;
    r->layer_host_sum_ms = NAN;
    r->free_host_ms = NAN;
    r->check_rel_l2 = NAN;
    r->check_sensitivity = NAN;
    for (int i = 0; i < n_layers; i++) {
        opsched_layer_profile *l = &r->layers[i];
        l->node = i;
        l->energy_j = NAN;
        l->isolated_ms = NAN;
        l->host_ms = NAN;
        l->isolated.status = OPSCHED_ERR_UNSUPPORTED;
        energy_unknown(&l->energy);
    }
    *out = r;
    return OPSCHED_OK;
}

/* What the executor made of each layer: algorithm, fallback, workspace. */
static void copy_layer_info(os_profiler *p)
{
    opsched_exec_info info;
    if (opsched_executor_info(p->ex, &info) == OPSCHED_OK) {
        p->r->peak_memory_bytes = info.arena_bytes + info.weight_bytes + info.workspace_bytes;
        p->r->n_fallbacks = info.n_fallbacks;
        p->r->n_launches = info.n_launches;
        p->r->n_rowmajor = info.n_rowmajor;
    }
    for (int i = 0; i < p->r->n_layers; i++) {
        opsched_layer_profile *l = &p->r->layers[i];
        const opsched_layer_info *li = opsched_executor_layer(p->ex, i);
        if (!li) continue;
        memcpy(l->algo, li->algo, sizeof(l->algo));
        l->algo[sizeof(l->algo) - 1] = '\0';
        l->fallback = li->fallback;
        l->workspace_bytes = li->workspace_bytes;
        l->timed = li->role == OPSCHED_ROLE_LAUNCH || li->role == OPSCHED_ROLE_VIEW_COPY;
    }
    /* A fused Relu ran inside the layer that produced its input. */
    for (int i = 0; i < p->r->n_layers; i++) {
        const opsched_layer_info *li = opsched_executor_layer(p->ex, i);
        if (!li || li->role != OPSCHED_ROLE_FUSED) continue;
        const opsched_node *n = opsched_graph_node(p->g, i);
        const opsched_tensor *t = n && n->n_inputs > 0 ? opsched_graph_tensor(p->g, n->inputs[0]) : NULL;
        if (t && t->producer >= 0 && t->producer < p->r->n_layers)
            p->r->layers[t->producer].fused_next = 1;
    }
}

static opsched_status graph_replays(os_profiler *p)
{
    opsched_status st = opsched_executor_capture(p->ex);
    if (st == OPSCHED_ERR_UNSUPPORTED) {
        /* A backend without graphs: nothing to time, not a failure. */
        opsched_ctx_clear_error(p->ctx);
        return OPSCHED_OK;
    }
    OS_TRY(st);
    p->graph_ready = 1;
    opsched_exec_info info;
    if (opsched_executor_info(p->ex, &info) == OPSCHED_OK) {
        p->r->pdl = info.pdl;
        p->r->pdl_ms[0] = info.pdl_ms[0];
        p->r->pdl_ms[1] = info.pdl_ms[1];
    }
    OS_TRY(os_ex_warmup(p->ex, 1, p->o.warmup_ms / 4, 3));
    return os_profile_sample(p, 1, &p->r->e2e_graph);
}

static void attribute(opsched_profile_result *r, int layers_timed)
{
    if (layers_timed) {
        double sum = 0;
        for (int i = 0; i < r->n_layers; i++)
            sum += r->layers[i].median_ms;
        r->layer_sum_ms = sum;
        if (r->e2e.median > 0) r->attribution_latency = sum / r->e2e.median;
        if (r->e2e_graph.n > 0 && r->e2e_graph.median > 0)
            r->attribution_graph = sum / r->e2e_graph.median;
    }
    if (!isnan(r->layer_energy_sum_j) && r->energy.valid && r->energy.energy_j > 0)
        r->attribution_energy = r->layer_energy_sum_j / r->energy.energy_j;
    /* Alone, a layer runs without launch gaps: the CUDA graph is the fair whole. */
    double whole = r->e2e_graph.n > 0 ? r->e2e_graph.median : r->e2e.median;
    if (!isnan(r->layer_isolated_sum_ms) && whole > 0)
        r->attribution_isolated = r->layer_isolated_sum_ms / whole;
}

static opsched_status apply_defaults(opsched_ctx *ctx, const opsched_profile_options *in,
                                     opsched_profile_options *o)
{
    if (in)
        *o = *in;
    else
        opsched_profile_options_default(o);
    if (o->iters < 1 || o->warmup_ms < 0 || o->min_ms < 0 || o->idle_ms < 0)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "profile: iters must be at least 1, times not negative");
    if (o->energy_window_ms < 1000) o->energy_window_ms = 1000;
    if (!o->exec.seed) o->exec.seed = 1;
    return OPSCHED_OK;
}

opsched_status opsched_profile_graph(opsched_device *dev, const opsched_graph *g,
                                     const opsched_profile_options *opts,
                                     opsched_profile_result **out)
{
    if (!dev || !g || !out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    os_profiler p;
    memset(&p, 0, sizeof(p));
    p.dev = dev;
    p.ctx = opsched_device_ctx(dev);
    p.g = g;
    OS_TRY(apply_defaults(p.ctx, opts, &p.o));
    opsched_status st = OPSCHED_OK;
    OS_TRY(result_new(p.ctx, opsched_graph_num_nodes(g), &p.r));
    OS_TRY_GOTO(st, opsched_executor_create(dev, g, NULL, &p.o.exec, &p.ex), fail);
    copy_layer_info(&p);
    OS_TRY_GOTO(st, opsched_executor_randomize_inputs(p.ex, p.o.exec.seed), fail);
    if (p.o.check) OS_TRY_GOTO(st, os_profile_check(&p), fail);

    OS_TRY_GOTO(st, os_ex_warmup(p.ex, 0, p.o.warmup_ms, 2), fail);
    OS_TRY_GOTO(st, os_profile_sample(&p, 0, &p.r->e2e), fail);
    OS_TRY_GOTO(st, os_profile_enqueue(&p, &p.r->enqueue_ms), fail);
    if (p.o.host_layers) OS_TRY_GOTO(st, os_profile_host_layers(&p), fail);
    if (p.o.cuda_graph) OS_TRY_GOTO(st, graph_replays(&p), fail);
    if (p.o.layers) OS_TRY_GOTO(st, os_profile_layers(&p), fail);
    if (p.o.energy) OS_TRY_GOTO(st, os_profile_energy(&p), fail);
    if (p.o.layer_energy || p.o.isolated)
        OS_TRY_GOTO(st, os_profile_layers_alone(&p, p.o.layer_energy), fail);
    attribute(p.r, p.o.layers);
    opsched_executor_free(p.ex);
    free(p.free_host);
    *out = p.r;
    return OPSCHED_OK;
fail:
    opsched_executor_free(p.ex);
    free(p.free_host);
    opsched_profile_result_free(p.r);
    return st;
}
