/*
 * cuda_timing.c - the planner's own verdicts, timed as the executor
 * deploys them: a choice's launches captured into one CUDA graph and the
 * graph replayed between two events.  Timed from the stream instead, a
 * kernel of a few microseconds measures how fast the host enqueues it
 * (cuDNN's backend execute costs the host microseconds of its own), and a
 * verdict on such a time can pick the choice that loses in a replayed
 * inference.
 */
#include "backend/cuda/cuda_impl.h"

opsched_status cu_zeroed(const cu_plan_args *a, size_t bytes, void **out)
{
    OS_TRY(cu_malloc(a->ctx, bytes, out));
    CUDA_CHECK(a->ctx, cudaMemset(*out, 0, bytes));
    return OPSCHED_OK;
}

opsched_status cu_zeroed_set(const cu_plan_args *a, const size_t *bytes, int n, void **buf)
{
    opsched_status st = OPSCHED_OK;
    for (int i = 0; i < n; i++)
        buf[i] = NULL;
    for (int i = 0; i < n && st == OPSCHED_OK; i++)
        if (bytes[i]) st = cu_zeroed(a, bytes[i], &buf[i]);
    return st;
}

void cu_free_set(void **buf, int n)
{
    for (int i = 0; i < n; i++)
        (void)cudaFree(buf[i]);
    (void)cudaGetLastError();
}

opsched_status cu_time_reps(const cu_plan_args *a, cu_enqueue_fn fn, void *env, float *best)
{
    cudaStream_t s = a->dev->stream;
    cudaEvent_t ev[2] = {NULL, NULL};
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    opsched_status st = OPSCHED_OK;
    *best = -1.0f;
    OS_TRY(fn(a, env, s)); /* the first launch (lazy loading) outside the capture */
    CUDA_CHECK(a->ctx, cudaStreamSynchronize(s));
    int captured = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
    if (captured) {
        opsched_status cst = OPSCHED_OK;
        for (int k = 0; k < CU_TIME_REPS && cst == OPSCHED_OK; k++)
            cst = fn(a, env, s);
        cudaError_t e = cudaStreamEndCapture(s, &graph);
        captured = cst == OPSCHED_OK && e == cudaSuccess && graph &&
                   cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
        if (!captured) {
            os_log(a->ctx, OPSCHED_LOG_DEBUG,
                   "cuda: node '%s': a verdict timed on the stream: its capture failed (%s)",
                   a->node->name,
                   cst != OPSCHED_OK ? opsched_ctx_last_error(a->ctx) : cudaGetErrorString(e));
            opsched_ctx_clear_error(a->ctx);
        }
    }
    (void)cudaGetLastError();
    CUDA_CHECK_GOTO(a->ctx, st, cudaEventCreate(&ev[0]), done);
    CUDA_CHECK_GOTO(a->ctx, st, cudaEventCreate(&ev[1]), done);
    int runs = CU_TIME_RUNS;
    for (int i = -1; i < runs; i++) {
        float ms = 0.0f;
        CUDA_CHECK_GOTO(a->ctx, st, cudaEventRecord(ev[0], s), done);
        if (captured)
            CUDA_CHECK_GOTO(a->ctx, st, cudaGraphLaunch(exec, s), done);
        else
            for (int k = 0; k < CU_TIME_REPS; k++)
                OS_TRY_GOTO(st, fn(a, env, s), done);
        CUDA_CHECK_GOTO(a->ctx, st, cudaEventRecord(ev[1], s), done);
        CUDA_CHECK_GOTO(a->ctx, st, cudaEventSynchronize(ev[1]), done);
        CUDA_CHECK_GOTO(a->ctx, st, cudaEventElapsedTime(&ms, ev[0], ev[1]), done);
        ms /= CU_TIME_REPS;
        if (i < 0 && ms >= CU_TIME_LONG_MS) runs = 1; /* the warm-up: a long choice */
        if (i >= 0 && (*best < 0.0f || ms < *best)) *best = ms; /* i = -1: the warm-up */
    }
done:
    if (exec) (void)cudaGraphExecDestroy(exec);
    if (graph) (void)cudaGraphDestroy(graph);
    for (int i = 0; i < 2; i++)
        if (ev[i]) (void)cudaEventDestroy(ev[i]);
    return st;
}
