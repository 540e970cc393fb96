/*
 * verify.c - the end-to-end check of a searched schedule: candidate
 * schedules of one graph each run whole by a schedule executor (as one
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
#include <string.h>

#include "core/error.h"
#include "exec/sched_exec_impl.h"

opsched_status opsched_schedules_time_whole(opsched_device *dev, const opsched_graph *g,
                                            const opsched_schedule *const *cands, int n,
                                            const opsched_sched_exec_options *opts,
                                            const opsched_run_timing_options *timing,
                                            double *ms, int *best)
{
    if (!dev || !g || !cands || n < 1 || !ms || !best) return OPSCHED_ERR_INVALID_ARG;
    opsched_ctx *ctx = opsched_device_ctx(dev);
    opsched_run_timing_options t = {50.0, 30, 100.0};
    if (timing && timing->iters > 0) t = *timing;
    *best = -1;
    for (int i = 0; i < n; i++) {
        ms[i] = INFINITY;
        if (!cands[i]) continue;
        opsched_sched_executor *ex = NULL;
        opsched_run_timing r;
        opsched_status st = opsched_sched_executor_create(dev, g, cands[i], opts, &ex);
        int use_graph = 0;
        if (st == OPSCHED_OK) {
            st = opsched_sched_executor_capture(ex);
            if (st == OPSCHED_ERR_UNSUPPORTED) {
                opsched_ctx_clear_error(ctx);
                st = OPSCHED_OK;
            } else if (st == OPSCHED_OK) {
                use_graph = 1;
            }
        }
        if (st == OPSCHED_OK) st = opsched_sched_executor_time(ex, use_graph, &t, &r);
        opsched_sched_executor_free(ex);
        if (st == OPSCHED_ERR_UNSUPPORTED || st == OPSCHED_ERR_DEVICE_OOM) {
            /* This candidate cannot run here: it is simply not chosen. */
            os_log(ctx, OPSCHED_LOG_INFO, "candidate schedule %d cannot run here: %s", i,
                   opsched_ctx_last_error(ctx));
            opsched_ctx_clear_error(ctx);
            continue;
        }
        OS_TRY(st);
        ms[i] = r.stats.median;
        if (*best < 0 || ms[i] < ms[*best]) *best = i;
    }
    if (*best < 0)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "none of the %d candidate schedules runs here",
                       n);
    return OPSCHED_OK;
}
