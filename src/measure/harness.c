/*
 * harness.c - timing one node: plan, buffers, warm-up, batched samples,
 * statistics, and the optional energy window.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "core/error.h"
#include "core/util.h"
#include "measure/measure_impl.h"

#define MAX_IO 128
#define MAX_SETS 64
#define ROUND 64 /* samples enqueued before the first is read */
#define WARMUP_QUEUE_MS 1.0

void opsched_measure_options_default(opsched_measure_options *o)
{
    memset(o, 0, sizeof(*o));
    o->warmup_ms = 10;
    o->warmup_iters = 10;
    o->iters = 20;
    o->min_ms = 5;
    o->ci_target = 0.005;
    o->max_ms = 1000;
    o->max_iters = 10000;
    o->sample_min_us = 200;
    o->cache = OPSCHED_CACHE_HOT;
    o->energy_window_ms = 1000;
    o->idle_ms = 300;
    o->seed = 1;
    o->plan.math = OPSCHED_MATH_FP32;
}

typedef struct bench {
    opsched_device *dev;
    opsched_plan *plan;
    int n_in, n_out;
    int n_sets;                        /* input copies rotated through (cold cache) */
    int next_set;
    opsched_buffer *in[MAX_SETS][MAX_IO];
    opsched_buffer *out[MAX_IO];
    int per_sample;                    /* launches per timed sample */
    void *graph;                       /* per_sample launches captured, or NULL */
} bench;

static opsched_status launch_once(bench *b)
{
    opsched_status st = opsched_plan_launch(b->plan, NULL, b->in[b->next_set], b->out);
    b->next_set = (b->next_set + 1) % b->n_sets;
    return st;
}

/* One timed sample's work: a replay of the captured launches, or the
 * launches themselves where the backend has no device graphs. */
static opsched_status launch_sample(void *user, int *launches)
{
    bench *b = user;
    if (b->graph) {
        OS_TRY(os_stream_graph_launch(opsched_device_stream(b->dev), b->graph));
    } else {
        for (int i = 0; i < b->per_sample; i++) OS_TRY(launch_once(b));
    }
    *launches = b->per_sample;
    return OPSCHED_OK;
}

/* Records per_sample launches as a device graph.  Replaying it costs the
 * host one call, so operators of a few microseconds are timed as the GPU
 * runs them rather than as fast as the host can enqueue them.  Backends
 * without graphs leave b->graph NULL. */
static opsched_status capture_sample(bench *b)
{
    opsched_ctx *ctx = opsched_device_ctx(b->dev);
    opsched_stream *s = opsched_device_stream(b->dev);
    if (b->graph) os_device_graph_free(b->dev, b->graph);
    b->graph = NULL;
    opsched_status st = os_stream_graph_begin(s);
    if (st == OPSCHED_ERR_UNSUPPORTED) {
        opsched_ctx_clear_error(ctx);
        return OPSCHED_OK;
    }
    OS_TRY(st);
    for (int i = 0; i < b->per_sample; i++) {
        st = launch_once(b);
        if (st != OPSCHED_OK) {
            (void)os_stream_graph_end(s, NULL);
            return st;
        }
    }
    return os_stream_graph_end(s, &b->graph);
}

static opsched_status time_one_sample(bench *b, opsched_timer *timer, double *ms)
{
    int k = 0;
    OS_TRY(opsched_timer_start(timer, NULL));
    OS_TRY(launch_sample(b, &k));
    OS_TRY(opsched_timer_stop(timer, NULL));
    return opsched_timer_elapsed_ms(timer, ms);
}

/* The dtype a tensor is stored in under the plan's math mode. */
static opsched_dtype storage_dtype(const opsched_tensor *t, opsched_math m)
{
    if (t->dtype == OPSCHED_F32 || t->dtype == OPSCHED_F16 || t->dtype == OPSCHED_BF16)
        return opsched_math_dtype(m);
    return t->dtype;
}

static size_t tensor_bytes(const opsched_tensor *t, opsched_math m)
{
    return (size_t)opsched_shape_numel(&t->shape) * opsched_dtype_size(storage_dtype(t, m));
}

/* Records a result that is not a failure of the harness (unsupported, OOM). */
static opsched_status record(opsched_measurement *out, opsched_ctx *ctx, opsched_status st)
{
    if (st != OPSCHED_ERR_UNSUPPORTED && st != OPSCHED_ERR_DEVICE_OOM) return st;
    out->status = st;
    snprintf(out->message, sizeof(out->message), "%s", opsched_ctx_last_error(ctx));
    opsched_ctx_clear_error(ctx);
    return OPSCHED_OK;
}

/* Gather's indices must address the gathered axis: random values in range. */
static opsched_status fill_indices(opsched_buffer *b, const opsched_tensor *t, int64_t extent,
                                   uint64_t seed, opsched_ctx *ctx)
{
    int64_t n = opsched_shape_numel(&t->shape);
    size_t esz = opsched_dtype_size(t->dtype);
    unsigned char *host = malloc((size_t)n * esz + 1);
    if (!host) return OS_NOMEM(ctx);
    uint64_t x = seed;
    for (int64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int64_t v = extent > 0 ? (int64_t)((x >> 33) % (uint64_t)extent) : 0;
        if (esz == 8) {
            memcpy(host + i * 8, &v, 8);
        } else {
            int32_t w = (int32_t)v;
            memcpy(host + i * 4, &w, 4);
        }
    }
    opsched_status st = opsched_buffer_upload(b, 0, host, (size_t)n * esz);
    free(host);
    return st;
}

static opsched_status alloc_buffers(bench *b, const opsched_graph *g, const opsched_node *n,
                                    const opsched_measure_options *o, int64_t l2_bytes)
{
    size_t in_bytes = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const opsched_tensor *t = opsched_graph_tensor(g, n->inputs[i]);
        if (t) in_bytes += tensor_bytes(t, o->plan.math);
    }
    b->n_sets = 1;
    if (o->cache == OPSCHED_CACHE_COLD && in_bytes > 0) {
        /* Rotate through copies that together exceed twice the cache. */
        int64_t need = (2 * (l2_bytes > 0 ? l2_bytes : (64 << 20))) / (int64_t)in_bytes + 1;
        b->n_sets = (int)OS_MIN(need, MAX_SETS);
        if (b->n_sets < 2) b->n_sets = 2;
    }
    for (int s = 0; s < b->n_sets; s++) {
        for (int i = 0; i < n->n_inputs; i++) {
            const opsched_tensor *t = opsched_graph_tensor(g, n->inputs[i]);
            if (!t) continue;
            OS_TRY(opsched_buffer_alloc(b->dev, tensor_bytes(t, o->plan.math), &b->in[s][i]));
            if (t->data && storage_dtype(t, o->plan.math) == t->dtype)
                OS_TRY(opsched_buffer_upload(b->in[s][i], 0, t->data, t->data_bytes));
            else if (n->op == OPSCHED_OP_GATHER && i == 1) {
                const opsched_tensor *d = opsched_graph_tensor(g, n->inputs[0]);
                OS_TRY(fill_indices(b->in[s][i], t, d->shape.d[n->attr.axis.axis],
                                    o->seed + (uint64_t)s, opsched_device_ctx(b->dev)));
            } else
                OS_TRY(opsched_buffer_fill_random(b->in[s][i], storage_dtype(t, o->plan.math),
                                                  o->seed + (uint64_t)(s * MAX_IO + i)));
        }
    }
    for (int i = 0; i < n->n_outputs; i++) {
        const opsched_tensor *t = opsched_graph_tensor(g, n->outputs[i]);
        OS_TRY(opsched_buffer_alloc(b->dev, tensor_bytes(t, o->plan.math), &b->out[i]));
    }
    return OPSCHED_OK;
}

static void free_buffers(bench *b)
{
    for (int s = 0; s < MAX_SETS; s++)
        for (int i = 0; i < MAX_IO; i++) opsched_buffer_free(b->in[s][i]);
    for (int i = 0; i < MAX_IO; i++) opsched_buffer_free(b->out[i]);
}

/* *verdict: 1 when the m samples (in the order taken) give a stable
 * median: its confidence interval within +-target and the medians of the
 * two halves within 2 target of each other; -1 when the halves disagree;
 * 0 when the interval is still too wide. */
static opsched_status stable_estimate(const double *x, int m, double target, int *verdict)
{
    opsched_stats all, a, b;
    *verdict = 0;
    if (m < 12) return OPSCHED_OK;
    OS_TRY(opsched_stats_compute(x, m, &all));
    OS_TRY(opsched_stats_compute(x, m / 2, &a));
    OS_TRY(opsched_stats_compute(x + m / 2, m - m / 2, &b));
    if (!(all.median > 0)) return OPSCHED_OK;
    if (fabs(a.median - b.median) > 2.0 * target * all.median) {
        *verdict = -1;
        return OPSCHED_OK;
    }
    *verdict = opsched_stats_median_ci(&all) <= target;
    return OPSCHED_OK;
}

static opsched_status time_samples(bench *b, opsched_timer *timer, const opsched_measure_options *o,
                                   opsched_measurement *out)
{
    opsched_ctx *ctx = opsched_device_ctx(b->dev);
    /* Warm-up by time and by count.  The host waits for the device often
     * enough that about WARMUP_QUEUE_MS of launches is queued when the time
     * is up (at most 32 launches for fast operators): a fixed batch of 32
     * launches of a 5 ms operator would warm up 60% longer than asked. */
    double t0 = os_now_ms();
    int warm = 0, next_sync = 1;
    while (warm < o->warmup_iters || os_now_ms() - t0 < o->warmup_ms) {
        OS_TRY(launch_once(b));
        if (++warm == next_sync) {
            OS_TRY(opsched_device_sync(b->dev));
            double per = (os_now_ms() - t0) / warm;
            int step = per > 0 ? (int)ceil(WARMUP_QUEUE_MS / per) : 32;
            next_sync = warm + OS_MIN(OS_MAX(step, 1), 32);
        }
        if (warm > 1000000) break;
    }
    OS_TRY(opsched_device_sync(b->dev));
    double warm_ms = os_now_ms() - t0;

    /* Launches per sample: enough that one sample lasts sample_min_us,
     * checked again once the launches are captured as a graph.  The
     * warm-up's pace bounds the time of one launch from above. */
    double per_warm = warm > 0 ? warm_ms / warm : 0;
    b->per_sample = per_warm > 0 ? (int)ceil(o->sample_min_us / 1000.0 / per_warm) : 1;
    b->per_sample = OS_MIN(OS_MAX(b->per_sample, 1), 4096);
    for (int round = 0; round < 10; round++) {
        double ms = 0;
        if (!o->direct_launches) OS_TRY(capture_sample(b));
        OS_TRY(time_one_sample(b, timer, &ms));
        OS_TRY(time_one_sample(b, timer, &ms)); /* the first replay uploads the graph */
        if (ms * 1000.0 >= o->sample_min_us || b->per_sample >= 4096) break;
        double per = ms / b->per_sample;
        int want = per > 0 ? (int)ceil(o->sample_min_us / 1000.0 / per * 1.2) : b->per_sample * 8;
        b->per_sample = OS_MIN(OS_MAX(want, b->per_sample * 2), 4096);
    }
    out->graph_replay = b->graph != NULL;

    /* Samples are enqueued in rounds, each between its own pair of
     * timestamps, and read after the round: the device never idles between
     * samples, so clocks and queues stay as they are in steady state. */
    int cap = o->max_iters > 0 ? o->max_iters : 10000;
    double *samples = malloc(sizeof(double) * (size_t)cap);
    opsched_timer *round_timers[ROUND];
    int n_timers = 0;
    opsched_status st = OPSCHED_OK;
    if (!samples) return OS_NOMEM(ctx);
    round_timers[n_timers++] = timer;
    /* samples[first..n) are the estimate; total is all sampled time. */
    int n = 0, first = 0;
    double total = 0;
    int adaptive = o->ci_target > 0;
    double max_ms = adaptive ? OS_MAX(o->max_ms, o->min_ms) : o->min_ms;
    out->converged = 0;
    while (n < cap) {
        int m = n - first;
        if (m >= o->iters && total >= o->min_ms) {
            if (!adaptive) break;
            int verdict = 0;
            OS_TRY_GOTO(st, stable_estimate(samples + first, m, o->ci_target, &verdict), done);
            if (verdict > 0) {
                out->converged = 1;
                break;
            }
            if (total >= max_ms) break;
            /* The halves disagree: the first was still settling. */
            if (verdict < 0 && m >= 2 * o->iters) first += m / 2;
        }
        int want = o->iters > m ? o->iters - m : OS_MAX(m / 2, 8);
        if (total < o->min_ms && n > 0) {
            double per = total / n;
            int more = per > 0 ? (int)((o->min_ms - total) / per) + 1 : ROUND;
            if (more > want) want = more;
        }
        int k = OS_MIN(OS_MIN(want, ROUND), cap - n);
        while (n_timers < k) OS_TRY_GOTO(st, opsched_timer_create(b->dev, &round_timers[n_timers++]), done);
        for (int j = 0; j < k; j++) {
            int launched = 0;
            OS_TRY_GOTO(st, opsched_timer_start(round_timers[j], NULL), done);
            OS_TRY_GOTO(st, launch_sample(b, &launched), done);
            OS_TRY_GOTO(st, opsched_timer_stop(round_timers[j], NULL), done);
        }
        for (int j = 0; j < k; j++) {
            double ms = 0;
            OS_TRY_GOTO(st, opsched_timer_elapsed_ms(round_timers[j], &ms), done);
            samples[n++] = ms / b->per_sample;
            total += ms;
        }
    }
    out->launches_per_sample = b->per_sample;
    OS_TRY_GOTO(st, opsched_stats_compute(samples + first, n - first, &out->stats), done);
    out->unstable = out->stats.cv > OPSCHED_CV_WARN;
done:
    for (int j = 1; j < n_timers; j++) opsched_timer_free(round_timers[j]);
    free(samples);
    return st;
}

opsched_status opsched_measure_node(opsched_device *dev, const opsched_graph *g, int node,
                                    const opsched_measure_options *opts, opsched_measurement *out)
{
    if (!dev || !g || !out) return OPSCHED_ERR_INVALID_ARG;
    opsched_ctx *ctx = opsched_device_ctx(dev);
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "measure: node %d does not exist", node);
    if (n->n_inputs > MAX_IO || n->n_outputs > MAX_IO)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "measure: node '%s' has too many inputs", n->name);
    opsched_measure_options o;
    if (opts)
        o = *opts;
    else
        opsched_measure_options_default(&o);
    if (o.energy && o.energy_window_ms < 1000) o.energy_window_ms = 1000;
    memset(out, 0, sizeof(*out));
    out->math = o.plan.math;
    out->layout = o.plan.layout;
    out->cache = o.cache;
    snprintf(out->algo, sizeof(out->algo), "%s", o.plan.algo ? o.plan.algo : "heuristic");

    opsched_device_info info;
    OS_TRY(opsched_device_info_get(dev, &info));
    os_sleep_ms(o.cooldown_ms);

    bench *b = calloc(1, sizeof(*b));
    opsched_timer *timer = NULL;
    opsched_status st = OPSCHED_OK;
    if (!b) return OS_NOMEM(ctx);
    b->dev = dev;
    b->n_in = n->n_inputs;
    b->n_out = n->n_outputs;

    st = opsched_plan_create(dev, g, node, &o.plan, &b->plan);
    if (st != OPSCHED_OK) {
        st = record(out, ctx, st);
        goto done;
    }
    opsched_plan_info pi;
    OS_TRY_GOTO(st, opsched_plan_info_get(b->plan, &pi), done);
    snprintf(out->algo, sizeof(out->algo), "%s", pi.algo);
    out->workspace_bytes = pi.workspace_bytes;
    out->fused_activation = pi.fused_activation;

    st = alloc_buffers(b, g, n, &o, info.l2_bytes);
    if (st != OPSCHED_OK) {
        st = record(out, ctx, st);
        goto done;
    }
    OS_TRY_GOTO(st, opsched_timer_create(dev, &timer), done);
    st = time_samples(b, timer, &o, out);
    if (st != OPSCHED_OK) {
        st = record(out, ctx, st);
        goto done;
    }
    if (o.energy) OS_TRY_GOTO(st, os_measure_energy(dev, launch_sample, b, o.energy_window_ms,
                                                    o.idle_ms, &out->energy), done);
done:
    opsched_timer_free(timer);
    if (b->graph) os_device_graph_free(dev, b->graph);
    free_buffers(b);
    opsched_plan_free(b->plan);
    free(b);
    if (st != OPSCHED_OK && out->status == OPSCHED_OK) {
        /* A failure of this configuration; keep the device usable for the next one. */
        out->status = st;
        snprintf(out->message, sizeof(out->message), "%s", opsched_ctx_last_error(ctx));
    }
    return st;
}
