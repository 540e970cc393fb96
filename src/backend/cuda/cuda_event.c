/*
 * cuda_event.c - events that order work across streams: CUDA events
 * created with timing disabled (recording one then costs the GPU nothing
 * but the dependency), recorded on one stream and waited on by another.
 *
 * While streams are captured into a CUDA graph the same two calls become
 * the graph's edges: a stream that waits on an event recorded on a
 * capturing stream joins that capture.
 */
#include <stdlib.h>

#include "backend/cuda/cuda_impl.h"

static cudaStream_t event_stream(const cu_device *dev, void *stream)
{
    return stream ? (cudaStream_t)stream : dev->stream;
}

opsched_status cu_event_create(opsched_ctx *ctx, void *impl, void **out)
{
    cudaEvent_t e = NULL;
    OS_TRY(cu_device_use(ctx, impl));
    CUDA_CHECK(ctx, cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    *out = e;
    return OPSCHED_OK;
}

void cu_event_free(void *impl, void *event)
{
    cu_device *dev = impl;
    if (!event) return;
    if (cudaSetDevice(dev->index) == cudaSuccess) (void)cudaEventDestroy((cudaEvent_t)event);
    (void)cudaGetLastError();
}

opsched_status cu_event_record(opsched_ctx *ctx, void *impl, void *event, void *stream)
{
    OS_TRY(cu_device_use(ctx, impl));
    CUDA_CHECK(ctx, cudaEventRecord((cudaEvent_t)event, event_stream(impl, stream)));
    return OPSCHED_OK;
}

opsched_status cu_stream_wait(opsched_ctx *ctx, void *impl, void *stream, void *event)
{
    OS_TRY(cu_device_use(ctx, impl));
    CUDA_CHECK(ctx, cudaStreamWaitEvent(event_stream(impl, stream), (cudaEvent_t)event, 0));
    return OPSCHED_OK;
}
