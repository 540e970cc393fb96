/*
 * timing.c - the clocks of a network profile: warm-up, free-running and
 * replayed inferences, the host's enqueue time, layer-timed runs and the
 * energy window.
 *
 * Each end-to-end sample is one inference between its own pair of device
 * timestamps.  Samples are enqueued in rounds, and a round is enqueued
 * before the previous one is read, so the device always has the next
 * inference queued: no sample starts on a device that went idle while the
 * host read timers (clocks would drop and the first kernel would pay for
 * waking up), which is what a server running the network back to back
 * sees.
 *
 * The free-running samples also read the host's clock between the layers'
 * launch calls (opsched_executor_run_host_timed): what enqueueing each
 * layer costs the host (a cuDNN engine's host overhead) in the very
 * inferences whose latency is reported, the bound on a small network's
 * free-running latency.  The host's speed drifts by tens of percent over
 * seconds on a shared machine (the H100 host: a separate pass summed to
 * 0.66-1.23x the free run's enqueue time at batch 1), so only times taken
 * in the same inferences add up to them.  Host-timed inferences are
 * enqueued one ahead of the one being read rather than a round ahead:
 * where the device bounds the run, 32 inferences in flight fill the launch
 * queue, a launch then waits for room, and that wait would count as the
 * layer's host time.  One ahead still keeps the device busy when it
 * bounds the run (the host needs less than an inference's device time to
 * enqueue the next), and where the host bounds it the device waits for
 * the host either way.
 *
 * Layer-timed runs put a pair of timestamps around every layer.  Where
 * enqueueing an inference takes the host longer than the device needs to
 * run it (small networks, small batches), a layer's launch reaches the
 * device after its start mark and the wait would count as the layer's
 * time; so when a CUDA graph was captured, each layer-timed run is queued
 * behind enough replays of it that the device is still busy when the host
 * has enqueued the whole run: its layers then run back to back, and the
 * per-layer times are device time alone, launch gaps excluded.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "exec/exec_impl.h"
#include "measure/measure_impl.h"
#include "profile/profile_impl.h"

#define MAX_SAMPLES 200000 /* an upper bound on any one sampling */
#define ENQUEUE_SAMPLES 20
#define MAX_BACKLOG 1000 /* graph replays queued ahead of a layer-timed run */

static opsched_status launch(os_profiler *p, int use_graph)
{
    return use_graph ? opsched_executor_replay(p->ex) : opsched_executor_run(p->ex);
}

/* Most cells (layers x inferences) of host times a free-running sampling
 * keeps; later inferences run without the host's clock. */
#define HOST_FREE_MAX_CELLS (4 << 20)

/* Whether a sampling host-times its inferences (free-running, host layers on). */
static int host_timed(const os_profiler *p, int use_graph)
{
    return !use_graph && p->o.host_layers && p->r->n_layers > 0;
}

/* Room for the host times of k more host-timed inferences after the n
 * kept; 0 when the sampling keeps none (a graph, host layers off) or the
 * cap is reached. */
static int host_room(os_profiler *p, int use_graph, int k)
{
    int nl = p->r->n_layers;
    if (!host_timed(p, use_graph)) return 0;
    if ((size_t)(p->n_free_host + k) * (size_t)nl > HOST_FREE_MAX_CELLS) return 0;
    if (os_grow(p->ctx, (void **)&p->free_host, &p->free_host_cap,
                (size_t)(p->n_free_host + k) * (size_t)nl, sizeof(double)) != OPSCHED_OK) {
        opsched_ctx_clear_error(p->ctx); /* the sampling goes on without them */
        return 0;
    }
    return 1;
}

/* A sampling of the profile: whether the round being enqueued host-times
 * its inferences. */
typedef struct sampling {
    os_profiler *p;
    int use_graph, host;
} sampling;

static void before_round(void *user, int k)
{
    sampling *s = user;
    s->host = host_room(s->p, s->use_graph, k);
}

static opsched_status run_sample(void *user)
{
    sampling *s = user;
    os_profiler *p = s->p;
    if (!s->host) return launch(p, s->use_graph);
    double *row = p->free_host + (size_t)p->n_free_host * (size_t)p->r->n_layers;
    OS_TRY(opsched_executor_run_host_timed(p->ex, row));
    p->n_free_host++;
    return OPSCHED_OK;
}

opsched_status os_profile_sample(os_profiler *p, int use_graph, opsched_stats *out)
{
    sampling sm = {p, use_graph, 0};
    os_ex_sampling s = {.iters = p->o.iters,
                        .min_ms = p->o.min_ms,
                        .round = host_timed(p, use_graph) ? 1 : OS_EX_ROUND,
                        .max_samples = MAX_SAMPLES,
                        .run = run_sample,
                        .before_round = before_round,
                        .user = &sm};
    double *samples = NULL;
    int n = 0;
    OS_TRY(os_ex_sample(p->ex, use_graph, &s, &samples, &n));
    opsched_status st = opsched_stats_compute(samples, n, out);
    free(samples);
    return st;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

opsched_status os_profile_enqueue(os_profiler *p, double *out_ms)
{
    double t[ENQUEUE_SAMPLES];
    int n = OS_MIN(OS_MAX(p->o.iters, 5), ENQUEUE_SAMPLES);
    for (int i = 0; i < n; i++) {
        OS_TRY(opsched_device_sync(p->dev));
        double t0 = os_now_ms();
        OS_TRY(opsched_executor_run(p->ex));
        t[i] = os_now_ms() - t0;
    }
    OS_TRY(opsched_device_sync(p->dev));
    qsort(t, (size_t)n, sizeof(double), cmp_double);
    *out_ms = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    return OPSCHED_OK;
}

/* Per-layer statistics of the host times in rows (runs x nl) into the
 * layers, and each layer's share of the median inference (total_ms): its
 * median scaled so that the layers add up to total_ms.  The host's speed
 * changes between the inferences of one sampling too (a CV of 10-17% at
 * batch 1 on the H100 host), and the medians of the layers then add up to
 * up to 8% more or less than the median inference; their proportions
 * stand. */
static opsched_status host_stats(os_profiler *p, const double *rows, int runs, double total_ms,
                                 double *col)
{
    opsched_profile_result *res = p->r;
    int nl = res->n_layers;
    double sum = 0;
    for (int i = 0; i < nl; i++) {
        opsched_layer_profile *l = &res->layers[i];
        for (int r = 0; r < runs; r++)
            col[r] = rows[(size_t)r * (size_t)nl + (size_t)i];
        OS_TRY(opsched_stats_compute(col, runs, &l->host));
        if (!l->timed) l->host.n = 0; /* ran nothing: 0 ms, no statistics */
        sum += l->host.median;
    }
    double k = sum > 0 ? total_ms / sum : 1;
    for (int i = 0; i < nl; i++) res->layers[i].host_ms = k * res->layers[i].host.median;
    res->layer_host_sum_ms = sum > 0 ? total_ms : 0;
    return OPSCHED_OK;
}

/* The host times of the free-running inferences are not kept when they
 * come to more than this many times the enqueue time on a drained queue:
 * launches waited for room in the launch queue (one inference ahead of
 * several hundred launches fills it where the device bounds the run: 2.5-4x
 * for densenet121 and resnet152 at batch 32 on the H100), and that wait is
 * not a cost of the layers.  Unwaited, the two differ by the host's drift,
 * up to ~1.4x. */
#define HOST_WAITED 1.6

/* Whether the device queues launches (a GPU) rather than running them in
 * the launch call (the CPU backend, where no launch waits for a queue and
 * the two times are both compute). */
static int launches_queue(os_profiler *p)
{
    opsched_device_info in;
    if (opsched_device_info_get(p->dev, &in) != OPSCHED_OK) {
        opsched_ctx_clear_error(p->ctx);
        return 1;
    }
    return strcmp(in.backend, "cpu") != 0;
}

opsched_status os_profile_host_layers(os_profiler *p)
{
    int nl = p->r->n_layers, runs = p->n_free_host;
    if (runs < 1) return OPSCHED_OK; /* nothing was host-timed: NaN stays */
    double *col = malloc(sizeof(double) * (size_t)runs);
    if (!col) return OS_NOMEM(p->ctx);
    for (int r = 0; r < runs; r++) {
        double t = 0;
        for (int i = 0; i < nl; i++) t += p->free_host[(size_t)r * (size_t)nl + (size_t)i];
        col[r] = t;
    }
    opsched_stats s;
    opsched_status st = opsched_stats_compute(col, runs, &s);
    if (st == OPSCHED_OK) {
        p->r->free_host_ms = s.median;
        p->r->host_waited = p->r->enqueue_ms > 0 && s.median > HOST_WAITED * p->r->enqueue_ms &&
                            launches_queue(p);
        if (!p->r->host_waited) st = host_stats(p, p->free_host, runs, s.median, col);
    }
    free(col);
    return st;
}

/* Graph replays to enqueue before a layer-timed run so that the device is
 * still busy with them when the host has enqueued the whole run: twice the
 * host's enqueue time (events add to it) and half a millisecond, in
 * replays.  0 without a graph. */
static int backlog_replays(const os_profiler *p)
{
    const opsched_profile_result *r = p->r;
    if (!p->graph_ready || r->e2e_graph.n == 0 || !(r->e2e_graph.median > 0)) return 0;
    double need_ms = 2.0 * (isnan(r->enqueue_ms) ? r->e2e.median : r->enqueue_ms) + 0.5;
    double k = ceil(need_ms / r->e2e_graph.median);
    return (int)OS_MIN(OS_MAX(k, 1.0), (double)MAX_BACKLOG);
}

/* The run whose total is nearest the median total. */
static int representative_run(const double *totals, int runs, double median)
{
    int best = 0;
    for (int r = 1; r < runs; r++)
        if (fabs(totals[r] - median) < fabs(totals[best] - median)) best = r;
    return best;
}

opsched_status os_profile_layers(os_profiler *p)
{
    opsched_status st = OPSCHED_OK;
    opsched_profile_result *res = p->r;
    int nl = res->n_layers, runs = OS_MIN(p->o.iters, OS_PROFILE_MAX_LAYERED);
    double *all = malloc(sizeof(double) * (size_t)(nl > 0 ? nl : 1) * (size_t)runs);
    double *totals = malloc(sizeof(double) * (size_t)runs);
    double *col = malloc(sizeof(double) * (size_t)runs);
    if (!all || !totals || !col) {
        st = OS_NOMEM(p->ctx);
        goto done;
    }
    int backlog = backlog_replays(p);
    res->layers_queued = backlog > 0;
    /* One untimed run: the timers are created on the first. */
    OS_TRY_GOTO(st, opsched_executor_run_layers(p->ex, all, NULL), done);
    for (int r = 0; r < runs; r++) {
        for (int k = 0; k < backlog; k++)
            OS_TRY_GOTO(st, opsched_executor_replay(p->ex), done);
        OS_TRY_GOTO(
            st, opsched_executor_run_layers(p->ex, all + (size_t)r * (size_t)nl, &totals[r]), done);
    }
    OS_TRY_GOTO(st, opsched_stats_compute(totals, runs, &res->e2e_layered), done);
    int rep = representative_run(totals, runs, res->e2e_layered.median);
    for (int i = 0; i < nl; i++) {
        opsched_layer_profile *l = &res->layers[i];
        if (!l->timed) continue;
        for (int r = 0; r < runs; r++)
            col[r] = all[(size_t)r * (size_t)nl + (size_t)i];
        OS_TRY_GOTO(st, opsched_stats_compute(col, runs, &l->stats), done);
        l->median_ms = l->stats.median;
        l->mean_ms = l->stats.mean;
        l->run_ms = all[(size_t)rep * (size_t)nl + (size_t)i];
    }
done:
    free(all);
    free(totals);
    free(col);
    return st;
}

static opsched_status energy_launch(void *user, int *launches)
{
    os_profiler *p = user;
    OS_TRY(launch(p, p->graph_ready));
    *launches = 1;
    return OPSCHED_OK;
}

opsched_status os_profile_energy(os_profiler *p)
{
    os_power_trace trace;
    opsched_profile_result *r = p->r;
    OS_TRY(os_measure_energy_trace(p->dev, energy_launch, p, p->o.energy_window_ms, p->o.idle_ms,
                                   &r->energy, &trace));
    r->energy_from_graph = r->energy.valid && p->graph_ready;
    r->n_power = trace.n;
    r->power_t_ms = trace.t_ms;
    r->power_w = trace.w;
    return OPSCHED_OK;
}
