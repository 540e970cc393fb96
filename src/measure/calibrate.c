/*
 * calibrate.c - what a device does at its best under one math mode: the
 * peak FLOP rate and memory bandwidth a roofline needs, and the fixed
 * costs between operators (host enqueue, device graph node), measured
 * through the same plans and timing harness as every operator.
 *
 * - Peak FLOP rate: the best median rate of a few large MatMuls (up to
 *   16384x8192x8192 on a GPU, up to 1024^3 on a CPU).
 * - Bandwidth: a large element-wise Add, each array several times the last
 *   level cache, bytes read and written over the median time.
 * - Launch: host time to enqueue one tiny launch (one element), median of
 *   many, without device graphs: what eager execution pays per operator.
 * - Graph node: the slope of device time against the number of tiny
 *   launches in a replayed device graph, (t(K2) - t(K1)) / (K2 - K1), so the
 *   graph's own launch cost drops out and what remains is what one node of
 *   almost no work costs inside a graph.  Backends without device graphs
 *   get the same slope over back-to-back direct launches.
 * - Idle power: the energy counter over a quiet window after a sync, or
 *   the mean of power samples where there is no counter; NaN without a
 *   sensor.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend_impl.h"
#include "core/error.h"
#include "core/util.h"
#include "measure/measure_impl.h"

/* Sizes and effort by device kind. */
typedef struct cal_profile {
    int64_t gemm[3][3];        /* m, k, n of the peak shapes */
    int64_t array_min, array_max; /* bytes of one Add operand */
    double warmup_ms, min_ms;
    int iters;
    int launches;              /* single launches timed for launch_us */
    int k1, k2, replays;       /* graph slope: sizes and replays of each */
    double idle_ms;
} cal_profile;

static const cal_profile gpu_profile = {
    .gemm = {{4096, 4096, 4096}, {8192, 8192, 8192}, {16384, 8192, 8192}},
    .array_min = 256LL << 20, .array_max = 1LL << 30,
    .warmup_ms = 100, .min_ms = 200, .iters = 10,
    .launches = 2000, .k1 = 16, .k2 = 272, .replays = 20, .idle_ms = 1000,
};

static const cal_profile cpu_profile = {
    .gemm = {{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}},
    .array_min = 16LL << 20, .array_max = 128LL << 20,
    .warmup_ms = 20, .min_ms = 50, .iters = 5,
    .launches = 500, .k1 = 8, .k2 = 136, .replays = 5, .idle_ms = 300,
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Builds op with params and times it with the harness.  *ms is the median
 * per launch, or NaN when the device cannot run it (unsupported, out of
 * memory: *why gets the reason); a failure of the device is returned. */
static opsched_status time_config(opsched_device *dev, const cal_profile *p, opsched_math math,
                                  const char *op, const opsched_param *params, int n_params,
                                  int64_t *bytes, int64_t *flops, double *ms, opsched_status *why)
{
    opsched_ctx *ctx = opsched_device_ctx(dev);
    opsched_graph *g = NULL;
    opsched_status st;
    *ms = NAN;
    *why = OPSCHED_OK;
    OS_TRY(opsched_opconfig_build(ctx, op, params, n_params, opsched_math_dtype(math), &g));
    const opsched_node *n = opsched_graph_node(g, 0);
    if (bytes) *bytes = n->cost.bytes_read + n->cost.bytes_written;
    if (flops) *flops = n->cost.flops;
    opsched_measure_options o;
    opsched_measure_options_default(&o);
    o.warmup_ms = p->warmup_ms;
    o.warmup_iters = 2;
    o.iters = p->iters;
    o.min_ms = p->min_ms;
    o.plan.math = math;
    opsched_measurement m;
    st = opsched_measure_node(dev, g, 0, &o, &m);
    if (st == OPSCHED_OK) {
        if (m.status == OPSCHED_OK && m.stats.n > 0 && m.stats.median > 0)
            *ms = m.stats.median;
        else {
            *why = m.status != OPSCHED_OK ? m.status : OPSCHED_ERR_BACKEND;
            os_log(ctx, OPSCHED_LOG_INFO, "calibrate: %s under %s: %s", op,
                   opsched_math_name(math), m.message);
        }
    }
    opsched_graph_free(g);
    return st;
}

static opsched_status peak_flops(opsched_device *dev, const cal_profile *p, opsched_math math,
                                 int64_t memory, double *out, opsched_status *why)
{
    *out = NAN;
    *why = OPSCHED_ERR_UNSUPPORTED;
    for (int i = 0; i < 3; i++) {
        const int64_t *s = p->gemm[i];
        int64_t bytes = (s[0] * s[1] + s[1] * s[2] + s[0] * s[2]) *
                        (int64_t)opsched_dtype_size(opsched_math_dtype(math));
        if (memory > 0 && bytes > memory / 4) continue;
        opsched_param params[] = {{"batch", 1}, {"m", s[0]}, {"k", s[1]}, {"n", s[2]}};
        int64_t flops = 0;
        double ms;
        opsched_status w;
        OS_TRY(time_config(dev, p, math, "matmul", params, 4, NULL, &flops, &ms, &w));
        if (isnan(ms)) {
            /* Out of memory on one shape leaves the others; unsupported is the answer. */
            if (w != OPSCHED_ERR_DEVICE_OOM) *why = w;
            continue;
        }
        double rate = (double)flops / (ms * 1e-3);
        if (isnan(*out) || rate > *out) *out = rate;
        *why = OPSCHED_OK;
    }
    return OPSCHED_OK;
}

static opsched_status bandwidth(opsched_device *dev, const cal_profile *p, opsched_math math,
                                int64_t cache, int64_t memory, double *out)
{
    int64_t want = OS_MIN(OS_MAX(4 * cache, p->array_min), p->array_max);
    if (memory > 0) want = OS_MIN(want, memory / 16);
    int64_t plane = 1024 * 1024; /* 1024x1024 elements per channel */
    int64_t esz = (int64_t)opsched_dtype_size(opsched_math_dtype(math));
    int64_t channels = OS_MAX(want / (plane * esz), 1);
    opsched_param params[] = {{"batch", 1}, {"channels", channels}, {"height", 1024}};
    int64_t bytes = 0;
    double ms;
    opsched_status why;
    *out = NAN;
    OS_TRY(time_config(dev, p, math, "add", params, 3, &bytes, NULL, &ms, &why));
    if (!isnan(ms)) *out = (double)bytes / (ms * 1e-3);
    return OPSCHED_OK;
}

/* A one-element Relu, planned with its buffers: the smallest launch. */
typedef struct tiny {
    opsched_graph *g;
    opsched_plan *plan;
    opsched_buffer *in, *out;
} tiny;

static void tiny_free(tiny *t)
{
    opsched_plan_free(t->plan);
    opsched_buffer_free(t->in);
    opsched_buffer_free(t->out);
    opsched_graph_free(t->g);
    memset(t, 0, sizeof(*t));
}

static opsched_status tiny_make(opsched_device *dev, opsched_math math, tiny *t)
{
    opsched_ctx *ctx = opsched_device_ctx(dev);
    opsched_dtype dt = opsched_math_dtype(math);
    opsched_param params[] = {{"batch", 1}, {"channels", 1}, {"height", 1}};
    memset(t, 0, sizeof(*t));
    OS_TRY(opsched_opconfig_build(ctx, "relu", params, 3, dt, &t->g));
    opsched_plan_options po = {.math = math};
    OS_TRY(opsched_plan_create(dev, t->g, 0, &po, &t->plan));
    OS_TRY(opsched_buffer_alloc(dev, opsched_dtype_size(dt), &t->in));
    OS_TRY(opsched_buffer_alloc(dev, opsched_dtype_size(dt), &t->out));
    return opsched_buffer_fill_random(t->in, dt, 1);
}

static opsched_status tiny_launch(tiny *t)
{
    return opsched_plan_launch(t->plan, NULL, &t->in, &t->out);
}

static opsched_status launch_time(opsched_device *dev, const cal_profile *p, tiny *t, double *out)
{
    opsched_ctx *ctx = opsched_device_ctx(dev);
    double *v = malloc(sizeof(double) * (size_t)p->launches);
    opsched_status st = OPSCHED_OK;
    if (!v) return OS_NOMEM(ctx);
    for (int i = 0; i < 32; i++) OS_TRY_GOTO(st, tiny_launch(t), done); /* warm-up */
    OS_TRY_GOTO(st, opsched_device_sync(dev), done);
    for (int i = 0; i < p->launches; i++) {
        double t0 = os_now_ms();
        OS_TRY_GOTO(st, tiny_launch(t), done);
        v[i] = (os_now_ms() - t0) * 1e3;
        /* Keep the device's queue short: a full queue makes enqueues wait. */
        if (i % 128 == 127) OS_TRY_GOTO(st, opsched_device_sync(dev), done);
    }
    OS_TRY_GOTO(st, opsched_device_sync(dev), done);
    *out = median_of(v, p->launches);
done:
    free(v);
    return st;
}

/* k tiny launches: a captured device graph when the backend has them. */
typedef struct batch {
    tiny *t;
    int k;
    void *graph;
} batch;

static opsched_status batch_make(opsched_device *dev, tiny *t, int k, batch *b)
{
    opsched_stream *s = opsched_device_stream(dev);
    b->t = t;
    b->k = k;
    b->graph = NULL;
    opsched_status st = os_stream_graph_begin(s);
    if (st == OPSCHED_ERR_UNSUPPORTED) {
        opsched_ctx_clear_error(opsched_device_ctx(dev));
        return OPSCHED_OK;
    }
    OS_TRY(st);
    for (int i = 0; i < k; i++) {
        st = tiny_launch(t);
        if (st != OPSCHED_OK) {
            (void)os_stream_graph_end(s, NULL);
            return st;
        }
    }
    return os_stream_graph_end(s, &b->graph);
}

static opsched_status batch_run(opsched_device *dev, batch *b)
{
    if (b->graph) return os_stream_graph_launch(opsched_device_stream(dev), b->graph);
    for (int i = 0; i < b->k; i++) OS_TRY(tiny_launch(b->t));
    return OPSCHED_OK;
}

/* Device milliseconds per run of b: `replays` runs between two marks. */
static opsched_status batch_time(opsched_device *dev, batch *b, int replays, opsched_timer *tm,
                                 double *ms)
{
    OS_TRY(batch_run(dev, b)); /* the first replay uploads the graph */
    OS_TRY(opsched_device_sync(dev));
    OS_TRY(opsched_timer_start(tm, NULL));
    for (int i = 0; i < replays; i++) OS_TRY(batch_run(dev, b));
    OS_TRY(opsched_timer_stop(tm, NULL));
    OS_TRY(opsched_timer_elapsed_ms(tm, ms));
    *ms /= replays;
    return OPSCHED_OK;
}

static opsched_status graph_node_time(opsched_device *dev, const cal_profile *p, tiny *t,
                                      double *out)
{
    batch b1 = {0}, b2 = {0};
    opsched_timer *tm = NULL;
    opsched_status st;
    double best1 = INFINITY, best2 = INFINITY;
    OS_TRY_GOTO(st, batch_make(dev, t, p->k1, &b1), done);
    OS_TRY_GOTO(st, batch_make(dev, t, p->k2, &b2), done);
    OS_TRY_GOTO(st, opsched_timer_create(dev, &tm), done);
    /* The fastest of a few rounds of each: what the device can do, without
     * the moments another process held the CPU or the GPU's clocks. */
    for (int r = 0; r < 7; r++) {
        double t1 = 0, t2 = 0;
        OS_TRY_GOTO(st, batch_time(dev, &b1, p->replays, tm, &t1), done);
        OS_TRY_GOTO(st, batch_time(dev, &b2, p->replays, tm, &t2), done);
        best1 = OS_MIN(best1, t1);
        best2 = OS_MIN(best2, t2);
    }
    *out = OS_MAX((best2 - best1) * 1e3 / (p->k2 - p->k1), 0.0);
done:
    opsched_timer_free(tm);
    os_device_graph_free(dev, b1.graph);
    os_device_graph_free(dev, b2.graph);
    return st;
}

/* Idle power after a sync: the energy counter across the window where
 * there is one, else the mean of power samples; NaN without a sensor. */
static opsched_status idle_power(opsched_device *dev, const cal_profile *p, double *out)
{
    opsched_ctx *ctx = opsched_device_ctx(dev);
    opsched_power_sample a, b;
    *out = NAN;
    OS_TRY(opsched_device_sync(dev));
    os_sleep_ms(100);
    if (opsched_device_power(dev, &a) != OPSCHED_OK) {
        opsched_ctx_clear_error(ctx);
        return OPSCHED_OK;
    }
    double t0 = os_now_ms(), sum = isnan(a.power_w) ? 0 : a.power_w;
    int n = isnan(a.power_w) ? 0 : 1;
    while (os_now_ms() - t0 < p->idle_ms) {
        os_sleep_ms(10);
        if (opsched_device_power(dev, &b) != OPSCHED_OK) {
            opsched_ctx_clear_error(ctx);
            return OPSCHED_OK;
        }
        if (!isnan(b.power_w)) {
            sum += b.power_w;
            n++;
        }
    }
    double dt = (os_now_ms() - t0) * 1e-3;
    if (!isnan(a.energy_mj) && !isnan(b.energy_mj) && b.energy_mj > a.energy_mj && dt > 0)
        *out = (b.energy_mj - a.energy_mj) * 1e-3 / dt;
    else if (n > 0)
        *out = sum / n;
    return OPSCHED_OK;
}

opsched_status opsched_device_calibrate(opsched_device *dev, opsched_math math,
                                        opsched_calibration *out)
{
    if (!dev || !out) return OPSCHED_ERR_INVALID_ARG;
    opsched_ctx *ctx = opsched_device_ctx(dev);
    if ((int)math < 0 || math >= OPSCHED_MATH_COUNT)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "calibrate: bad math mode %d", (int)math);
    opsched_device_info info;
    OS_TRY(opsched_device_info_get(dev, &info));
    const cal_profile *p = strcmp(info.backend, "cpu") == 0 ? &cpu_profile : &gpu_profile;

    opsched_calibration c;
    memset(&c, 0, sizeof(c));
    snprintf(c.math, sizeof(c.math), "%s", opsched_math_name(math));
    c.peak_flops = c.bandwidth = c.launch_us = c.graph_node_us = c.idle_power_w = NAN;

    /* Idle first, before the GEMMs warm the device up. */
    OS_TRY(idle_power(dev, p, &c.idle_power_w));
    opsched_status why;
    OS_TRY(peak_flops(dev, p, math, info.memory_bytes, &c.peak_flops, &why));
    if (isnan(c.peak_flops)) {
        if (why == OPSCHED_ERR_UNSUPPORTED)
            return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                           "calibrate: %s:%d (%s) cannot run %s math", info.backend, info.index,
                           info.name, opsched_math_name(math));
        return OS_FAIL(ctx, why == OPSCHED_ERR_DEVICE_OOM ? why : OPSCHED_ERR_BACKEND,
                       "calibrate: %s:%d (%s): no GEMM of the calibration could run under %s",
                       info.backend, info.index, info.name, opsched_math_name(math));
    }
    OS_TRY(bandwidth(dev, p, math, info.l2_bytes, info.memory_bytes, &c.bandwidth));

    tiny t;
    opsched_status st;
    OS_TRY_GOTO(st, tiny_make(dev, math, &t), done);
    OS_TRY_GOTO(st, launch_time(dev, p, &t, &c.launch_us), done);
    OS_TRY_GOTO(st, graph_node_time(dev, p, &t, &c.graph_node_us), done);
    struct timespec now;
    c.created_at = clock_gettime(CLOCK_REALTIME, &now) == 0
                       ? (double)now.tv_sec + (double)(now.tv_nsec / 1000) / 1e6
                       : (double)time(NULL);
    *out = c;
done:
    tiny_free(&t);
    return st;
}
