/*
 * verify.c - the end-to-end check of a searched schedule: candidate
 * schedules of one graph each run whole by an executor (as one
 * device graph where the backend has them, else free-running) and timed,
 * and the fastest kept.
 *
 * Stage costs are measured one stage at a time, so a search never sees
 * what happens between stages (a stage's inputs still in L2, the join of
 * its streams, the next stage's launch overlapping the tail of this one).
 * A schedule whose stages each win can therefore lose as a whole;
 * timing the finished schedules against each other is what makes "never
 * slower than sequential" hold by measurement rather than by model.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "exec/exec_impl.h"
#include "measure/measure_impl.h"

/* Candidate i is schedule sched[i] (NULL: the sequential one) run with
 * opts[i]; skip[i] leaves it out (ms +inf).  time_single: time a
 * candidate even when it is the only one that runs (else it is chosen
 * untimed, its ms NaN). */
static opsched_status time_whole(opsched_device *dev, const opsched_graph *g, int n,
                                 const opsched_schedule *const *sched,
                                 const opsched_exec_options *opts, const int *skip,
                                 const opsched_run_timing_options *timing, int time_single,
                                 double *ms, int *best)
{
    opsched_ctx *ctx = opsched_device_ctx(dev);
    opsched_run_timing_options t = {50.0, 32, 100.0};
    if (timing && timing->iters > 0) t = *timing;
    *best = -1;
    opsched_status st = OPSCHED_OK;
    opsched_executor **ex = calloc((size_t)n, sizeof(*ex));
    opsched_executor **run = calloc((size_t)n, sizeof(*run));
    int *which = calloc((size_t)n, sizeof(int));
    opsched_run_timing *r = calloc((size_t)n, sizeof(*r));
    if (!ex || !run || !which || !r) {
        st = OS_NOMEM(ctx);
        goto done;
    }
    int m = 0, use_graph = 1;
    for (int i = 0; i < n; i++) {
        ms[i] = INFINITY;
        if (skip[i]) continue;
        st = opsched_executor_create(dev, g, sched[i], &opts[i], &ex[i]);
        if (st == OPSCHED_OK && use_graph) {
            st = opsched_executor_capture(ex[i]);
            if (st == OPSCHED_ERR_UNSUPPORTED && m == 0) { /* no device graphs: free runs */
                opsched_ctx_clear_error(ctx);
                use_graph = 0;
                st = OPSCHED_OK;
            }
        }
        if (st == OPSCHED_ERR_UNSUPPORTED || st == OPSCHED_ERR_DEVICE_OOM) {
            /* This candidate cannot run here: it is simply not chosen. */
            os_log(ctx, OPSCHED_LOG_INFO, "candidate %d cannot run here: %s", i,
                   opsched_ctx_last_error(ctx));
            opsched_ctx_clear_error(ctx);
            opsched_executor_free(ex[i]);
            ex[i] = NULL;
            st = OPSCHED_OK;
            continue;
        }
        if (st != OPSCHED_OK) goto done;
        run[m] = ex[i];
        which[m++] = i;
    }
    if (m == 0) {
        st = OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "none of the %d candidates runs here", n);
        goto done;
    }
    if (m == 1 && !time_single) { /* the only one that runs: nothing to compare */
        *best = which[0];
        ms[which[0]] = NAN;
        goto done;
    }
    /* In turns, so that every candidate sees the same device clocks. */
    OS_TRY_GOTO(st, opsched_executors_time(run, m, use_graph, &t, r), done);
    for (int k = 0; k < m; k++) {
        ms[which[k]] = r[k].stats.median;
        if (*best < 0 || ms[which[k]] < ms[*best]) *best = which[k];
    }
done:
    for (int i = 0; ex && i < n; i++)
        opsched_executor_free(ex[i]);
    free(ex);
    free(run);
    free(which);
    free(r);
    return st;
}

opsched_status opsched_schedules_time_whole(opsched_device *dev, const opsched_graph *g,
                                            const opsched_schedule *const *cands, int n,
                                            const opsched_exec_options *opts,
                                            const opsched_run_timing_options *timing, double *ms,
                                            int *best)
{
    if (!dev || !g || !cands || n < 1 || !ms || !best) return OPSCHED_ERR_INVALID_ARG;
    opsched_exec_options *o = calloc((size_t)n, sizeof(*o)); /* zeroed: the executor's defaults */
    int *skip = malloc((size_t)n * sizeof(*skip));
    opsched_status st;
    if (o && skip) {
        for (int i = 0; i < n; i++) {
            if (opts) o[i] = *opts;
            skip[i] = !cands[i];
        }
        st = time_whole(dev, g, n, cands, o, skip, timing, 1, ms, best);
    } else {
        st = OS_NOMEM(opsched_device_ctx(dev));
    }
    free(o);
    free(skip);
    return st;
}

opsched_status opsched_layouts_time_whole(opsched_device *dev, const opsched_graph *g,
                                          const opsched_schedule *s, const opsched_layout *layouts,
                                          int n, const opsched_exec_options *opts,
                                          const opsched_run_timing_options *timing, double *ms,
                                          int *best)
{
    if (!dev || !g || !layouts || n < 1 || n > OPSCHED_LAYOUT_COUNT || !ms || !best)
        return OPSCHED_ERR_INVALID_ARG;
    opsched_exec_options o[OPSCHED_LAYOUT_COUNT];
    memset(o, 0, sizeof(o)); /* opts NULL: the executor's defaults */
    const opsched_schedule *sched[OPSCHED_LAYOUT_COUNT];
    int skip[OPSCHED_LAYOUT_COUNT] = {0};
    for (int i = 0; i < n; i++) {
        if ((int)layouts[i] < 0 || layouts[i] >= OPSCHED_LAYOUT_COUNT)
            return OPSCHED_ERR_INVALID_ARG;
        if (opts) o[i] = *opts;
        o[i].plan.layout = layouts[i];
        sched[i] = s;
    }
    return time_whole(dev, g, n, sched, o, skip, timing, 0, ms, best);
}

opsched_status opsched_schedule_keep_fastest(opsched_device *dev, const opsched_graph *g,
                                             const opsched_search_options *so,
                                             const opsched_exec_options *opts, opsched_schedule **s,
                                             opsched_whole_check *out)
{
    if (!dev || !g || !so || !s || !*s) return OPSCHED_ERR_INVALID_ARG;
    opsched_whole_check w;
    memset(&w, 0, sizeof(w));
    opsched_schedule *alt[3] = {*s, NULL, NULL};
    const opsched_searcher others[2] = {OPSCHED_SEARCH_GREEDY, OPSCHED_SEARCH_SEQUENTIAL};
    w.searcher[w.n++] = so->searcher;
    opsched_status st = OPSCHED_OK;
    double t0 = os_now_ms();
    for (int i = 0; i < 2; i++) {
        if (others[i] == so->searcher) continue;
        opsched_search_options o = *so;
        o.searcher = others[i];
        OS_TRY_GOTO(st, opsched_schedule_search(g, &o, &alt[w.n], NULL), done);
        w.searcher[w.n++] = others[i];
    }
    OS_TRY_GOTO(st,
                opsched_schedules_time_whole(dev, g, (const opsched_schedule *const *)alt, w.n,
                                             opts, NULL, w.ms, &w.kept),
                done);
    if (w.kept != 0) {
        opsched_schedule *t = alt[0];
        alt[0] = alt[w.kept];
        alt[w.kept] = t;
        *s = alt[0];
    }
    w.seconds = (os_now_ms() - t0) / 1000.0;
    if (out) *out = w;
done:
    for (int i = 1; i < 3; i++) opsched_schedule_free(alt[i]);
    return st;
}
