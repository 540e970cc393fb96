/*
 * exec_run.c - running the executor: the program that orders its streams,
 * and every mode of running it (free, host-timed, layer-timed, traced,
 * timed, captured into one device graph and replayed), inputs and
 * outputs.  Each mode is one inference enqueued by the same loop
 * (run_launches); what differs is what it reads around each launch.
 *
 * The program is found once, at create.  Every launch reads and writes
 * byte ranges of the arena; a launch must wait for the earlier launches
 * that wrote a range it reads, and for every earlier use of a range it
 * writes (memory that the layout reused).  Launches on its own stream are
 * ordered already.  For the others, a vector clock per stream (the last
 * launch of every stream it is known to run after) keeps only the waits
 * that no earlier wait implies: one event wait per other stream at most,
 * on the event recorded right after the latest launch needed there.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "core/error.h"
#include "core/util.h"
#include "exec/exec_impl.h"
#include "measure/measure_impl.h"

/* ---- the program ---------------------------------------------------------- */

typedef struct ex_access {
    int launch;
    size_t lo, hi; /* arena bytes [lo, hi) */
    int write;
} ex_access;

/* The arena range of tensor t, 0 when it is not in the arena. */
static int arena_range(const opsched_executor *ex, int t, size_t *lo, size_t *hi)
{
    if (t < 0) return 0;
    size_t rel = 0;
    int r = os_ex_root(ex, t, &rel);
    const ex_tensor *rt = &ex->tensors[r];
    if (rt->arena_off == SIZE_MAX || rt->kind == OPSCHED_TENSOR_INPUT) return 0;
    *lo = rt->arena_off + rel;
    *hi = *lo + ex->tensors[t].bytes;
    return *hi > *lo;
}

typedef struct ex_order {
    int ns;
    int *clock;    /* ns x ns: clock[q * ns + r] = launches of stream r that q runs after */
    int *snap;     /* per launch, ns: its stream's clock right after it */
    int *seq;      /* per launch: its position on its stream, from 1 */
    int *need_seq; /* per stream: the latest launch needed there (its seq) */
    int *need_at;  /* and which launch */
} ex_order;

static void need(const opsched_executor *ex, ex_order *o, int q, int d)
{
    int r = ex->launches[d].stream;
    if (r != q && o->seq[d] > o->need_seq[r]) {
        o->need_seq[r] = o->seq[d];
        o->need_at[r] = d;
    }
}

/* Adds what launch u must wait for to o->need_* from the accesses before it. */
static void dependencies(const opsched_executor *ex, ex_order *o, int u, const ex_access *acc,
                         int n_acc)
{
    const ex_launch *l = &ex->launches[u];
    for (int i = 0; i < l->n_in + l->n_out; i++) {
        int write = i >= l->n_in;
        size_t lo = 0, hi = 0;
        if (!arena_range(ex, write ? l->out[i - l->n_in] : l->in[i], &lo, &hi)) continue;
        for (int a = 0; a < n_acc; a++)
            if ((write || acc[a].write) && acc[a].lo < hi && lo < acc[a].hi)
                need(ex, o, l->stream, acc[a].launch);
    }
}

static opsched_status record_accesses(opsched_executor *ex, int u, ex_access **acc, int *n_acc,
                                      size_t *cap)
{
    const ex_launch *l = &ex->launches[u];
    for (int i = 0; i < l->n_in + l->n_out; i++) {
        int write = i >= l->n_in;
        size_t lo = 0, hi = 0;
        if (!arena_range(ex, write ? l->out[i - l->n_in] : l->in[i], &lo, &hi)) continue;
        OS_TRY(os_grow(ex->ctx, (void **)acc, cap, (size_t)*n_acc + 1, sizeof(ex_access)));
        (*acc)[(*n_acc)++] = (ex_access){u, lo, hi, write};
    }
    return OPSCHED_OK;
}

opsched_status os_ex_build_program(opsched_executor *ex)
{
    opsched_status st = OPSCHED_OK;
    int ns = ex->n_streams, nl = ex->n_launches;
    ex_order o;
    ex_access *acc = NULL;
    size_t cap = 0;
    int n_acc = 0;
    int *count = calloc((size_t)ns, sizeof(int));
    int *event_of = malloc(sizeof(int) * (size_t)(nl + 1));
    o.ns = ns;
    o.clock = calloc((size_t)ns * (size_t)ns, sizeof(int));
    o.snap = calloc((size_t)(nl + 1) * (size_t)ns, sizeof(int));
    o.seq = calloc((size_t)nl + 1, sizeof(int));
    o.need_seq = calloc((size_t)ns, sizeof(int));
    o.need_at = calloc((size_t)ns, sizeof(int));
    if (!count || !event_of || !o.clock || !o.snap || !o.seq || !o.need_seq || !o.need_at) {
        st = OS_NOMEM(ex->ctx);
        goto done;
    }
    int n_events = ns; /* the fork and one join per other stream */
    for (int u = 0; u < nl; u++)
        event_of[u] = -1;
    for (int u = 0; u < nl; u++) {
        ex_launch *l = &ex->launches[u];
        int q = l->stream;
        for (int r = 0; r < ns; r++) {
            o.need_seq[r] = 0;
            o.need_at[r] = -1;
        }
        /* on one stream the stream orders everything: nothing to look for */
        if (ns > 1) dependencies(ex, &o, u, acc, n_acc);
        int n_w = 0;
        for (int r = 0; r < ns; r++)
            if (o.need_at[r] >= 0 && o.need_seq[r] > o.clock[q * ns + r]) n_w++;
        if (n_w) {
            l->waits = malloc(sizeof(int) * (size_t)n_w);
            if (!l->waits) {
                st = OS_NOMEM(ex->ctx);
                goto done;
            }
        }
        for (int r = 0; r < ns; r++) {
            int d = o.need_at[r];
            if (d < 0 || o.need_seq[r] <= o.clock[q * ns + r]) continue;
            if (event_of[d] < 0) event_of[d] = n_events++;
            l->waits[l->n_waits++] = event_of[d];
            for (int k = 0; k < ns; k++)
                o.clock[q * ns + k] = OS_MAX(o.clock[q * ns + k], o.snap[(size_t)d * ns + k]);
        }
        ex->info.n_waits += l->n_waits;
        o.seq[u] = ++count[q];
        o.clock[q * ns + q] = o.seq[u];
        memcpy(&o.snap[(size_t)u * ns], &o.clock[q * ns], sizeof(int) * (size_t)ns);
        if (ns > 1) OS_TRY_GOTO(st, record_accesses(ex, u, &acc, &n_acc, &cap), done);
    }
    for (int u = 0; u < nl; u++) {
        ex->launches[u].record = event_of[u];
        ex->launches[u].next_mark = -1;
    }
    /* Layer timing: a launch ends where the next one starts when that one
     * is enqueued right after it on its stream and waits for nothing (on
     * one stream: every launch but the last, one mark per boundary). */
    for (int u = 0; u + 1 < nl; u++)
        if (ex->launches[u + 1].stream == ex->launches[u].stream &&
            ex->launches[u + 1].n_waits == 0)
            ex->launches[u].next_mark = u + 1;
    ex->events = calloc((size_t)n_events, sizeof(*ex->events));
    if (!ex->events) {
        st = OS_NOMEM(ex->ctx);
        goto done;
    }
    ex->n_events = n_events;
    for (int e = 0; e < n_events; e++)
        OS_TRY_GOTO(st, opsched_event_create(ex->dev, &ex->events[e]), done);
done:
    free(count);
    free(event_of);
    free(o.clock);
    free(o.snap);
    free(o.seq);
    free(o.need_seq);
    free(o.need_at);
    free(acc);
    return st;
}

/* ---- running -------------------------------------------------------------- */

static opsched_status fork_streams(opsched_executor *ex)
{
    if (ex->n_streams < 2) return OPSCHED_OK;
    OS_TRY(opsched_event_record(ex->events[EX_EVENT_FORK], ex->streams[0]));
    for (int k = 1; k < ex->n_streams; k++)
        OS_TRY(opsched_stream_wait_event(ex->streams[k], ex->events[EX_EVENT_FORK]));
    return OPSCHED_OK;
}

static opsched_status join_streams(opsched_executor *ex)
{
    for (int k = 1; k < ex->n_streams; k++) {
        OS_TRY(opsched_event_record(ex->events[k], ex->streams[k]));
        OS_TRY(opsched_stream_wait_event(ex->streams[0], ex->events[k]));
    }
    return OPSCHED_OK;
}

/* What a run reads around each launch. */
typedef enum run_mode {
    RUN_FREE = 0,   /* nothing */
    RUN_HOST_TIMED, /* the host's clock after it */
    RUN_LAYERS,     /* a start mark before it; a stop mark after it unless next_mark ends it */
    RUN_TRACED      /* a start and a stop mark around it */
} run_mode;

/* Enqueues the launches.  RUN_HOST_TIMED adds the host's time since *t0
 * to host[node] after each launch (and moves *t0 on). */
static opsched_status run_launches(opsched_executor *ex, run_mode mode, double *host, double *t0)
{
    for (int u = 0; u < ex->n_launches; u++) {
        ex_launch *l = &ex->launches[u];
        opsched_stream *s = ex->streams[l->stream];
        for (int w = 0; w < l->n_waits; w++)
            OS_TRY(opsched_stream_wait_event(s, ex->events[l->waits[w]]));
        if (mode >= RUN_LAYERS) OS_TRY(opsched_timer_start(l->timer, s));
        OS_TRY(opsched_plan_launch(l->plan, s, l->bin, l->bout));
        if (mode == RUN_TRACED || (mode == RUN_LAYERS && l->next_mark < 0))
            OS_TRY(opsched_timer_stop(l->timer, s));
        if (l->record >= 0) OS_TRY(opsched_event_record(ex->events[l->record], s));
        if (mode == RUN_HOST_TIMED) {
            double t = os_now_ms();
            host[l->node] += t - *t0;
            *t0 = t;
        }
    }
    return OPSCHED_OK;
}

/* One inference: fork, launches, join.  After a failure the streams are
 * still joined (best effort), so a capture in progress can be ended.
 * host: RUN_HOST_TIMED's per-node times, zeroed here. */
static opsched_status run_once(opsched_executor *ex, run_mode mode, double *host)
{
    double t0 = 0;
    if (mode == RUN_HOST_TIMED) {
        for (int i = 0; i < ex->n_nodes; i++)
            host[i] = 0;
        t0 = os_now_ms();
    }
    /* the device's setting is this executor's for its launches only */
    const int pdl_was = os_device_launch_pdl(ex->dev, ex->pdl_on);
    opsched_status st = fork_streams(ex);
    if (st == OPSCHED_OK) st = run_launches(ex, mode, host, &t0);
    if (pdl_was >= 0) (void)os_device_launch_pdl(ex->dev, pdl_was);
    if (st != OPSCHED_OK) {
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s", opsched_ctx_last_error(ex->ctx));
        (void)join_streams(ex);
        os_fail(ex->ctx, st, __FILE__, __LINE__, "%s", msg);
        return st;
    }
    OS_TRY(join_streams(ex));
    /* the join counts towards the last launch (on one stream there is none) */
    if (mode == RUN_HOST_TIMED && ex->n_streams > 1 && ex->n_launches > 0)
        host[ex->launches[ex->n_launches - 1].node] += os_now_ms() - t0;
    return OPSCHED_OK;
}

opsched_status opsched_executor_run(opsched_executor *ex)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    return run_once(ex, RUN_FREE, NULL);
}

opsched_status opsched_executor_run_host_timed(opsched_executor *ex, double *layer_host_ms)
{
    if (!ex || !layer_host_ms) return OPSCHED_ERR_INVALID_ARG;
    return run_once(ex, RUN_HOST_TIMED, layer_host_ms);
}

opsched_status os_ex_capture(opsched_executor *ex, int repeat)
{
    opsched_stream *s = ex->streams[0];
    os_device_graph_free(ex->dev, ex->graph);
    ex->graph = NULL;
    OS_TRY(os_stream_graph_begin(s));
    opsched_status st = OPSCHED_OK;
    for (int i = 0; i < repeat && st == OPSCHED_OK; i++)
        st = run_once(ex, RUN_FREE, NULL);
    if (st != OPSCHED_OK) {
        (void)os_stream_graph_end(s, NULL);
        return st;
    }
    return os_stream_graph_end(s, &ex->graph);
}

/* The captured graph's replay time: the best of three rounds of ten
 * replays, after three to warm. */
static opsched_status graph_round_ms(opsched_executor *ex, double *best)
{
    opsched_stream *s = ex->streams[0];
    opsched_timer *t[2] = {NULL, NULL};
    opsched_status st = opsched_timer_create(ex->dev, &t[0]);
    if (st == OPSCHED_OK) st = opsched_timer_create(ex->dev, &t[1]);
    for (int i = 0; i < 3 && st == OPSCHED_OK; i++)
        st = os_stream_graph_launch(s, ex->graph);
    *best = -1.0;
    for (int r = 0; r < 3 && st == OPSCHED_OK; r++) {
        double ms = 0;
        st = opsched_timer_start(t[0], s);
        for (int i = 0; i < 10 && st == OPSCHED_OK; i++)
            st = os_stream_graph_launch(s, ex->graph);
        if (st == OPSCHED_OK) st = opsched_timer_start(t[1], s);
        if (st == OPSCHED_OK) st = opsched_timer_between_ms(t[0], t[1], &ms);
        if (st == OPSCHED_OK && (*best < 0 || ms / 10 < *best)) *best = ms / 10;
    }
    opsched_timer_free(t[0]);
    opsched_timer_free(t[1]);
    return st;
}

/* Programmatic launches let a kernel's blocks be scheduled while the one
 * before it drains, which buys the small launches of a mobile network a
 * few percent (MobileNetV2 at batch 1 1.07x on an H200) and costs others
 * as much or more (ConvNeXt-T at batch 1 in TF32 1.22x, its waiting blocks
 * beside the products' own): a graph-wide choice, measured. */
opsched_status opsched_executor_capture(opsched_executor *ex)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    if (!ex->pdl_choose || os_device_launch_pdl(ex->dev, -1) < 0) return os_ex_capture(ex, 1);
    double ms[2] = {-1.0, -1.0};
    for (int on = 0; on < 2; on++) {
        ex->pdl_on = on;
        opsched_status st = os_ex_capture(ex, 1);
        if (st == OPSCHED_OK) st = graph_round_ms(ex, &ms[on]);
        if (st != OPSCHED_OK) {
            ex->pdl_on = 1;
            return st;
        }
    }
    /* the last capture has them on: kept unless plain measured faster */
    ex->pdl_on = !(ms[0] >= 0 && ms[0] < ms[1]);
    ex->info.pdl = ex->pdl_on;
    ex->info.pdl_ms[0] = ms[0];
    ex->info.pdl_ms[1] = ms[1];
    os_log(ex->ctx, OPSCHED_LOG_DEBUG,
           "executor: programmatic launches %s: the graph %.4f ms with them, %.4f ms without",
           ex->pdl_on ? "kept" : "off", ms[1], ms[0]);
    return ex->pdl_on ? OPSCHED_OK : os_ex_capture(ex, 1);
}

opsched_status opsched_executor_replay(opsched_executor *ex)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    if (!ex->graph)
        return OS_FAIL(ex->ctx, OPSCHED_ERR_INVALID_ARG,
                       "executor: replay before a successful capture");
    return os_stream_graph_launch(ex->streams[0], ex->graph);
}

/* ---- timestamped runs ----------------------------------------------------- */

/* One inference between the run's marks on stream 0 (the first before the
 * fork, the second after the join), with the launches marked as mode says
 * (RUN_LAYERS or RUN_TRACED); timers are made on the first. */
static opsched_status run_marked(opsched_executor *ex, run_mode mode)
{
    if (!ex->ref_timer) OS_TRY(opsched_timer_create(ex->dev, &ex->ref_timer));
    if (!ex->end_timer) OS_TRY(opsched_timer_create(ex->dev, &ex->end_timer));
    for (int u = 0; u < ex->n_launches; u++)
        if (!ex->launches[u].timer) OS_TRY(opsched_timer_create(ex->dev, &ex->launches[u].timer));
    OS_TRY(opsched_timer_start(ex->ref_timer, ex->streams[0]));
    OS_TRY(run_once(ex, mode, NULL));
    return opsched_timer_start(ex->end_timer, ex->streams[0]);
}

/* Launch u's device time in a run marked as mode says (waits for it). */
static opsched_status launch_ms(const opsched_executor *ex, int u, run_mode mode, double *ms)
{
    const ex_launch *l = &ex->launches[u];
    if (mode == RUN_LAYERS && l->next_mark >= 0)
        return opsched_timer_between_ms(l->timer, ex->launches[l->next_mark].timer, ms);
    return opsched_timer_elapsed_ms(l->timer, ms);
}

opsched_status opsched_executor_run_layers(opsched_executor *ex, double *layer_ms, double *total_ms)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    OS_TRY(run_marked(ex, RUN_LAYERS));
    if (layer_ms) {
        for (int i = 0; i < ex->n_nodes; i++)
            layer_ms[i] = 0;
        for (int u = 0; u < ex->n_launches; u++) {
            double ms = 0;
            OS_TRY(launch_ms(ex, u, RUN_LAYERS, &ms));
            layer_ms[ex->launches[u].node] += ms;
        }
    }
    double total = 0;
    OS_TRY(opsched_timer_between_ms(ex->ref_timer, ex->end_timer, &total));
    if (total_ms) *total_ms = total;
    return OPSCHED_OK;
}

opsched_status opsched_executor_trace(opsched_executor *ex, opsched_exec_span **spans, int *n_spans,
                                      double *total_ms)
{
    if (!ex || !spans || !n_spans) return OPSCHED_ERR_INVALID_ARG;
    *spans = NULL;
    *n_spans = 0;
    OS_TRY(opsched_device_sync(ex->dev));
    OS_TRY(run_marked(ex, RUN_TRACED));
    opsched_exec_span *out = calloc((size_t)ex->n_launches + 1, sizeof(*out));
    if (!out) return OS_NOMEM(ex->ctx);
    opsched_status st = OPSCHED_OK;
    for (int u = 0; u < ex->n_launches; u++) {
        const ex_launch *l = &ex->launches[u];
        opsched_exec_span *sp = &out[u];
        sp->node = l->node;
        sp->stage = l->stage;
        sp->stream = l->stream;
        snprintf(sp->label, sizeof(sp->label), "%s", l->label);
        OS_TRY_GOTO(st, opsched_timer_between_ms(ex->ref_timer, l->timer, &sp->start_ms), fail);
        OS_TRY_GOTO(st, launch_ms(ex, u, RUN_TRACED, &sp->dur_ms), fail);
    }
    if (total_ms)
        OS_TRY_GOTO(st, opsched_timer_between_ms(ex->ref_timer, ex->end_timer, total_ms), fail);
    *spans = out;
    *n_spans = ex->n_launches;
    return OPSCHED_OK;
fail:
    free(out);
    return st;
}

/* ---- timing --------------------------------------------------------------- */

#define MAX_SAMPLES 100000
#define MAX_WARMUP 100000 /* runs: a bound for a clock that does not move */

static opsched_status launch(opsched_executor *ex, int use_graph)
{
    return use_graph ? opsched_executor_replay(ex) : opsched_executor_run(ex);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The 10th percentile of n samples (sorts them). */
static double p10_of(double *samples, int n)
{
    qsort(samples, (size_t)n, sizeof(double), cmp_double);
    double pos = 0.1 * (double)(n - 1);
    int lo = (int)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
    return samples[lo] + (samples[hi] - samples[lo]) * (pos - (double)lo);
}

opsched_status os_ex_warmup(opsched_executor *ex, int use_graph, double ms, int min_runs)
{
    /* the queue bounded so the host's clock follows the device's */
    double t0 = os_now_ms();
    for (int i = 0; i < min_runs || os_now_ms() - t0 < ms; i++) {
        OS_TRY(launch(ex, use_graph));
        if (i % 8 == 7) OS_TRY(opsched_device_sync(ex->dev));
        if (i >= MAX_WARMUP) break;
    }
    return opsched_device_sync(ex->dev);
}

/* How many samples the next round holds, given n read (total ms together)
 * and pending enqueued. */
static int next_round(const os_ex_sampling *s, int n, int pending, double total)
{
    int want = s->iters - (n + pending);
    if (s->min_ms > 0) {
        double per = n > 0 ? total / n : 0;
        if (per <= 0)
            want = OS_MAX(want, OS_EX_ROUND);
        else if (total + per * pending < s->min_ms)
            want = OS_MAX(want, (int)((s->min_ms - total - per * pending) / per) + 1);
    }
    want = OS_MIN(want, OS_MIN(s->round, OS_EX_ROUND));
    want = OS_MIN(want, s->max_samples - n - pending);
    return OS_MAX(want, 0);
}

static opsched_status enqueue_round(opsched_executor *ex, int use_graph, const os_ex_sampling *s,
                                    opsched_timer **timers, int k)
{
    if (s->before_round) s->before_round(s->user, k);
    for (int j = 0; j < k; j++) {
        OS_TRY(opsched_timer_start(timers[j], ex->streams[0]));
        OS_TRY(s->run ? s->run(s->user) : launch(ex, use_graph));
        OS_TRY(opsched_timer_stop(timers[j], ex->streams[0]));
    }
    return OPSCHED_OK;
}

opsched_status os_ex_sample(opsched_executor *ex, int use_graph, const os_ex_sampling *s,
                            double **samples, int *n_samples)
{
    opsched_status st = OPSCHED_OK;
    opsched_timer *timers[2][OS_EX_ROUND];
    double *got = NULL, total = 0;
    size_t cap = 0;
    int n = 0, k[2] = {0, 0}, cur = 0;
    *samples = NULL;
    *n_samples = 0;
    memset(timers, 0, sizeof(timers));
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < OS_EX_ROUND; j++)
            OS_TRY_GOTO(st, opsched_timer_create(ex->dev, &timers[r][j]), done);
    k[cur] = next_round(s, 0, 0, 0);
    OS_TRY_GOTO(st, enqueue_round(ex, use_graph, s, timers[cur], k[cur]), done);
    while (k[cur] > 0) {
        int nxt = 1 - cur;
        k[nxt] = next_round(s, n, k[cur], total);
        OS_TRY_GOTO(st, enqueue_round(ex, use_graph, s, timers[nxt], k[nxt]), done);
        OS_TRY_GOTO(st, os_grow(ex->ctx, (void **)&got, &cap, (size_t)(n + k[cur]), sizeof(double)),
                    done);
        for (int j = 0; j < k[cur]; j++) {
            double ms = 0;
            OS_TRY_GOTO(st, opsched_timer_elapsed_ms(timers[cur][j], &ms), done);
            got[n++] = ms;
            total += ms;
        }
        cur = nxt;
    }
    OS_TRY_GOTO(st, opsched_device_sync(ex->dev), done);
    *samples = got;
    *n_samples = n;
    got = NULL;
done:
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < OS_EX_ROUND; j++)
            opsched_timer_free(timers[r][j]);
    free(got);
    return st;
}

opsched_status opsched_executor_time(opsched_executor *ex, int use_graph,
                                     const opsched_run_timing_options *opts,
                                     opsched_run_timing *out)
{
    if (!ex || !out) return OPSCHED_ERR_INVALID_ARG;
    opsched_run_timing_options o = {100.0, 50, 200.0};
    if (opts) o = *opts;
    if (o.iters < 1) o.iters = 1;
    memset(out, 0, sizeof(*out));
    OS_TRY(os_ex_warmup(ex, use_graph, o.warmup_ms, 3));
    os_ex_sampling s = {
        .iters = o.iters, .min_ms = o.min_ms, .round = OS_EX_ROUND, .max_samples = MAX_SAMPLES};
    double *samples = NULL;
    int n = 0;
    OS_TRY(os_ex_sample(ex, use_graph, &s, &samples, &n));
    opsched_status st = opsched_stats_compute(samples, n, &out->stats);
    if (st == OPSCHED_OK) out->p10 = p10_of(samples, n);
    free(samples);
    return st;
}

/* Several executors timed in turns: each round gives every executor a
 * short warm-up and a round of samples, so a drift of the device's clocks
 * over the seconds the timing takes weighs on all of them alike (timed one
 * after the other, the first one measured looked a few percent faster). */
opsched_status opsched_executors_time(opsched_executor *const *ex, int n, int use_graph,
                                      const opsched_run_timing_options *opts,
                                      opsched_run_timing *out)
{
    if (!ex || n < 1 || !out) return OPSCHED_ERR_INVALID_ARG;
    for (int i = 0; i < n; i++)
        if (!ex[i]) return OPSCHED_ERR_INVALID_ARG;
    opsched_ctx *ctx = ex[0]->ctx;
    opsched_run_timing_options o = {100.0, 50, 200.0};
    if (opts) o = *opts;
    if (o.iters < 1) o.iters = 1;
    opsched_status st = OPSCHED_OK;
    opsched_timer *timers[OS_EX_ROUND];
    double **samples = calloc((size_t)n, sizeof(double *));
    double *total = calloc((size_t)n, sizeof(double));
    size_t *cap = calloc((size_t)n, sizeof(size_t));
    int *count = calloc((size_t)n, sizeof(int));
    memset(timers, 0, sizeof(timers));
    if (!samples || !total || !cap || !count) {
        st = OS_NOMEM(ctx);
        goto done;
    }
    for (int j = 0; j < OS_EX_ROUND; j++)
        OS_TRY_GOTO(st, opsched_timer_create(ex[0]->dev, &timers[j]), done);
    /* warm-up in turns */
    double t0 = os_now_ms();
    for (int i = 0; i < 3 * n || os_now_ms() - t0 < o.warmup_ms; i++) {
        OS_TRY_GOTO(st, launch(ex[i % n], use_graph), done);
        if (i % 8 == 7) OS_TRY_GOTO(st, opsched_device_sync(ex[i % n]->dev), done);
        if (i >= 100000) break;
    }
    for (int i = 0; i < n; i++)
        OS_TRY_GOTO(st, opsched_device_sync(ex[i]->dev), done);
    for (int more = 1; more;) {
        more = 0;
        for (int i = 0; i < n; i++) {
            if (count[i] >= o.iters && total[i] >= o.min_ms) continue;
            if (count[i] + OS_EX_ROUND > MAX_SAMPLES) continue;
            opsched_stream *s0 = ex[i]->streams[0];
            /* two untimed runs: the previous executor's work is out of the way */
            for (int w = 0; w < 2; w++)
                OS_TRY_GOTO(st, launch(ex[i], use_graph), done);
            for (int j = 0; j < OS_EX_ROUND; j++) {
                OS_TRY_GOTO(st, opsched_timer_start(timers[j], s0), done);
                OS_TRY_GOTO(st, launch(ex[i], use_graph), done);
                OS_TRY_GOTO(st, opsched_timer_stop(timers[j], s0), done);
            }
            OS_TRY_GOTO(st,
                        os_grow(ctx, (void **)&samples[i], &cap[i],
                                (size_t)(count[i] + OS_EX_ROUND), sizeof(double)),
                        done);
            for (int j = 0; j < OS_EX_ROUND; j++) {
                double ms = 0;
                OS_TRY_GOTO(st, opsched_timer_elapsed_ms(timers[j], &ms), done);
                samples[i][count[i]++] = ms;
                total[i] += ms;
            }
            more = 1;
        }
    }
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        OS_TRY_GOTO(st, opsched_stats_compute(samples[i], count[i], &out[i].stats), done);
        out[i].p10 = p10_of(samples[i], count[i]);
    }
done:
    for (int j = 0; j < OS_EX_ROUND; j++)
        opsched_timer_free(timers[j]);
    for (int i = 0; samples && i < n; i++)
        free(samples[i]);
    free(samples);
    free(total);
    free(cap);
    free(count);
    return st;
}

/* ---- inputs and outputs --------------------------------------------------- */

static opsched_status check_io(const opsched_executor *ex, const int *ids, int n_io, int i,
                               const char *what, const void *data, size_t n, const ex_tensor **out)
{
    if (i < 0 || i >= n_io)
        return OS_FAIL(ex->ctx, OPSCHED_ERR_INVALID_ARG,
                       "executor: graph %s %d does not exist (the graph has %d)", what, i, n_io);
    const ex_tensor *t = &ex->tensors[ids[i]];
    if (!data || n != t->numel)
        return OS_FAIL(ex->ctx, OPSCHED_ERR_INVALID_ARG,
                       "executor: graph %s %d holds %zu values, not %zu", what, i, t->numel, n);
    if (!t->buf)
        return OS_FAIL(ex->ctx, OPSCHED_ERR_INVALID_ARG, "executor: graph %s %d has no memory",
                       what, i);
    *out = t;
    return OPSCHED_OK;
}

static opsched_status upload_f32(opsched_executor *ex, const ex_tensor *t, const float *v)
{
    void *host = malloc(t->bytes ? t->bytes : 1);
    if (!host) return OS_NOMEM(ex->ctx);
    os_exec_convert(v, OPSCHED_F32, host, t->sdt, t->numel, &t->shape, t->nhwc);
    opsched_status st = opsched_buffer_upload(t->buf, 0, host, t->bytes);
    free(host);
    return st;
}

opsched_status opsched_executor_set_input(opsched_executor *ex, int i, const float *data, size_t n)
{
    return opsched_executor_set_input_data(ex, i, OPSCHED_F32, data, n);
}

opsched_status opsched_executor_get_output(opsched_executor *ex, int i, float *data, size_t n)
{
    return opsched_executor_get_output_data(ex, i, OPSCHED_F32, data, n);
}

opsched_status opsched_executor_set_input_data(opsched_executor *ex, int i, opsched_dtype dt,
                                               const void *data, size_t n)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    const ex_tensor *t = NULL;
    OS_TRY(check_io(ex, ex->inputs, ex->n_inputs, i, "input", data, n, &t));
    if (!opsched_dtype_size(dt))
        return OS_FAIL(ex->ctx, OPSCHED_ERR_INVALID_ARG, "executor: input %d: bad data type", i);
    void *host = malloc(t->bytes ? t->bytes : 1);
    if (!host) return OS_NOMEM(ex->ctx);
    os_exec_convert(data, dt, host, t->sdt, t->numel, &t->shape, t->nhwc);
    opsched_status st = opsched_buffer_upload(t->buf, 0, host, t->bytes);
    free(host);
    return st;
}

opsched_status opsched_executor_get_output_data(opsched_executor *ex, int i, opsched_dtype dt,
                                                void *data, size_t n)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    const ex_tensor *t = NULL;
    OS_TRY(check_io(ex, ex->outputs, ex->n_outputs, i, "output", data, n, &t));
    if (!opsched_dtype_size(dt))
        return OS_FAIL(ex->ctx, OPSCHED_ERR_INVALID_ARG, "executor: output %d: bad data type", i);
    void *host = malloc(t->bytes ? t->bytes : 1);
    if (!host) return OS_NOMEM(ex->ctx);
    opsched_status st = opsched_buffer_download(t->buf, 0, host, t->bytes);
    if (st == OPSCHED_OK) os_exec_convert(host, t->sdt, data, dt, n, &t->shape, -t->nhwc);
    free(host);
    return st;
}

size_t opsched_executor_output_numel(const opsched_executor *ex, int i)
{
    if (!ex || i < 0 || i >= ex->n_outputs) return 0;
    return ex->tensors[ex->outputs[i]].numel;
}

/* splitmix64: the jitter's own stream, apart from the values' */
static uint64_t jitter_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

opsched_status opsched_executor_randomize_inputs(opsched_executor *ex, uint64_t seed)
{
    return opsched_executor_randomize_inputs_jittered(ex, seed, 0.0);
}

opsched_status opsched_executor_randomize_inputs_jittered(opsched_executor *ex, uint64_t seed,
                                                          double rel)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    for (int i = 0; i < ex->n_inputs; i++) {
        int id = ex->inputs[i];
        const ex_tensor *t = &ex->tensors[id];
        if (!t->buf) continue;
        if (ex->timing_only &&
            (t->sdt == OPSCHED_F32 || t->sdt == OPSCHED_F16 || t->sdt == OPSCHED_BF16)) {
            OS_TRY(opsched_buffer_fill_random(t->buf, t->sdt, seed + (uint64_t)id));
            continue;
        }
        float *v = malloc(sizeof(float) * (t->numel ? t->numel : 1));
        if (!v) return OS_NOMEM(ex->ctx);
        os_exec_random_values(&t->fill, t->sdt, t->numel, seed + (uint64_t)id, v);
        int is_float = t->sdt == OPSCHED_F32 || t->sdt == OPSCHED_F16 || t->sdt == OPSCHED_BF16;
        uint64_t js = seed ^ ((uint64_t)id << 32) ^ 0x6a09e667f3bcc909ull;
        for (size_t k = 0; rel != 0.0 && is_float && k < t->numel; k++) {
            double u = (double)(jitter_next(&js) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
            v[k] = (float)((double)v[k] * (1.0 + rel * u));
        }
        opsched_status st = upload_f32(ex, t, v);
        free(v);
        OS_TRY(st);
    }
    return OPSCHED_OK;
}

opsched_status opsched_executor_compare(opsched_executor *ex, opsched_executor *ref, double *rel_l2)
{
    if (!ex || !ref || !rel_l2) return OPSCHED_ERR_INVALID_ARG;
    double num = 0, den = 0;
    int finite = 1;
    opsched_status st = OPSCHED_OK;
    for (int i = 0; i < ex->n_outputs && st == OPSCHED_OK; i++) {
        size_t n = opsched_executor_output_numel(ex, i);
        if (n != opsched_executor_output_numel(ref, i))
            return OS_FAIL(ex->ctx, OPSCHED_ERR_SHAPE,
                           "compare: output %d has %zu values here and %zu in the reference", i, n,
                           opsched_executor_output_numel(ref, i));
        float *a = malloc(sizeof(float) * (n ? n : 1)), *b = malloc(sizeof(float) * (n ? n : 1));
        if (!a || !b) st = OS_NOMEM(ex->ctx);
        if (st == OPSCHED_OK) st = opsched_executor_get_output(ex, i, a, n);
        if (st == OPSCHED_OK) st = opsched_executor_get_output(ref, i, b, n);
        for (size_t k = 0; st == OPSCHED_OK && k < n; k++) {
            if (!isfinite(a[k]) || !isfinite(b[k])) {
                /* the same NaN or infinity in both agrees (a mask of -inf,
                 * an IsNaN test); anything else is a mismatch */
                int same = (isnan(a[k]) && isnan(b[k])) || (isinf(a[k]) && a[k] == b[k]);
                if (!same) finite = 0;
                continue;
            }
            double d = (double)a[k] - (double)b[k];
            num += d * d;
            den += (double)b[k] * (double)b[k];
        }
        free(a);
        free(b);
    }
    OS_TRY(st);
    if (!finite)
        *rel_l2 = INFINITY;
    else
        *rel_l2 = den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
    return OPSCHED_OK;
}
