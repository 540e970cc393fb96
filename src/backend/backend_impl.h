/*
 * backend_impl.h - the function table a backend fills in, and the
 * generic objects the registry wraps around it (ggml-backend's shape).
 *
 * Every slot takes the context first and reports failures on it.  Slots
 * marked optional may be NULL; the registry (registry.c) handles that case
 * once, so callers of the public API never see it.  Device, stream, memory,
 * plan and timer handles are opaque to the registry ("void *impl").  The
 * default stream of a device is the NULL stream handle.
 */
#ifndef OS_BACKEND_IMPL_H
#define OS_BACKEND_IMPL_H

#include "opsched/backend.h"

typedef struct os_backend_iface {
    const char *name;

    /* Devices visible now; 0 (and OK) when the driver or hardware is absent. */
    opsched_status (*device_count)(opsched_ctx *ctx, int *out);
    opsched_status (*device_open)(opsched_ctx *ctx, int index, void **dev);
    void (*device_close)(void *dev);
    opsched_status (*device_info)(opsched_ctx *ctx, void *dev, opsched_device_info *out);
    opsched_status (*device_sync)(opsched_ctx *ctx, void *dev);

    opsched_status (*stream_create)(opsched_ctx *ctx, void *dev, void **stream);
    void (*stream_free)(void *dev, void *stream);
    opsched_status (*stream_sync)(opsched_ctx *ctx, void *dev, void *stream);

    /* Device memory.  alloc returns OPSCHED_ERR_DEVICE_OOM when it does not fit. */
    opsched_status (*mem_alloc)(opsched_ctx *ctx, void *dev, size_t bytes, void **ptr);
    void (*mem_free)(void *dev, void *ptr);
    opsched_status (*mem_upload)(opsched_ctx *ctx, void *dev, void *dst, const void *src,
                                 size_t bytes);
    opsched_status (*mem_download)(opsched_ctx *ctx, void *dev, void *dst, const void *src,
                                   size_t bytes);
    /* Optional: opsched_buffer_fill_random on the device (the same values,
     * without a host buffer and a copy), finished when it returns.  NULL:
     * the registry fills a host buffer and uploads it. */
    opsched_status (*mem_fill_random)(opsched_ctx *ctx, void *dev, void *ptr, size_t bytes,
                                      opsched_dtype dt, uint64_t seed);

    /* Plans node `node`; fills *info (algorithm used, workspace).  The plan
     * owns its workspace. */
    opsched_status (*plan_create)(opsched_ctx *ctx, void *dev, const opsched_graph *g, int node,
                                  const opsched_plan_options *opts, void **plan,
                                  opsched_plan_info *info);
    void (*plan_free)(void *dev, void *plan);
    /* in/out are device pointers in node order (NULL for omitted inputs). */
    opsched_status (*plan_launch)(opsched_ctx *ctx, void *dev, void *plan, void *stream,
                                  void *const *in, void *const *out);

    /* Timers: mark(which=0) start, mark(which=1) stop, elapsed waits. */
    opsched_status (*timer_create)(opsched_ctx *ctx, void *dev, void **timer);
    void (*timer_free)(void *dev, void *timer);
    opsched_status (*timer_mark)(opsched_ctx *ctx, void *dev, void *timer, void *stream,
                                 int which);
    opsched_status (*timer_elapsed)(opsched_ctx *ctx, void *dev, void *timer, double *ms);
    /* Waits for b's start mark; milliseconds from a's start mark to b's. */
    opsched_status (*timer_between)(opsched_ctx *ctx, void *dev, void *a, void *b, double *ms);

    /* Optional: forward convolution algorithm names (static). */
    const char *const *conv_algos;
    int n_conv_algos;
    /* Optional: power, energy counter, temperature, clock. */
    opsched_status (*power)(opsched_ctx *ctx, void *dev, opsched_power_sample *out);

    /* Optional, all four or none: device graphs (CUDA graphs).  graph_begin
     * starts recording the work enqueued on stream; graph_end stops and
     * makes it replayable in *graph, or with graph NULL abandons the
     * recording silently (after a failed launch).  On any failure nothing
     * stays recorded and the stream stays usable.  graph_launch enqueues
     * one replay on stream. */
    opsched_status (*graph_begin)(opsched_ctx *ctx, void *dev, void *stream);
    opsched_status (*graph_end)(opsched_ctx *ctx, void *dev, void *stream, void **graph);
    opsched_status (*graph_launch)(opsched_ctx *ctx, void *dev, void *graph, void *stream);
    void (*graph_free)(void *dev, void *graph);

    /* Optional, all four or none: events that order work across streams
     * (no timing).  event_record marks the point the work enqueued on
     * stream so far has reached; stream_wait makes later work on stream
     * wait for the latest record of event.  Both may be called while
     * streams are being captured (they become the graph's edges).  A
     * backend without them must finish every launch before it returns
     * (the CPU), so that program order already orders its streams. */
    opsched_status (*event_create)(opsched_ctx *ctx, void *dev, void **event);
    void (*event_free)(void *dev, void *event);
    opsched_status (*event_record)(opsched_ctx *ctx, void *dev, void *event, void *stream);
    opsched_status (*stream_wait)(opsched_ctx *ctx, void *dev, void *stream, void *event);

    /* Optional: the device's plan cache counters (zeros when NULL). */
    void (*plan_cache_stats)(void *dev, opsched_plan_cache_stats *out);

    /* Optional: whether plans made with programmatic launches (CUDA's
     * programmatic dependent launch, sm_90 on) launch with them: 1 as made,
     * 0 plainly, -1 only asks.  Returns the setting before, -1 where the
     * device has no such launches (the setting then means nothing). */
    int (*launch_pdl)(void *dev, int on);
} os_backend_iface;

/* opsched_device_power reporting failures on ctx instead of the device's
 * context, for a sampling thread that must not share the caller's context. */
opsched_status os_device_power_with(opsched_device *dev, opsched_ctx *ctx,
                                    opsched_power_sample *out);

/* Device graphs over the optional slots, for the executor (internal until
 * a public graph object is worth having).  OPSCHED_ERR_UNSUPPORTED, with the
 * backend named, where the backend has none.  os_stream_graph_end with
 * graph NULL abandons a recording and reports nothing.  A graph is freed
 * with the device it was recorded on; NULL is harmless. */
opsched_status os_stream_graph_begin(opsched_stream *s);
opsched_status os_stream_graph_end(opsched_stream *s, void **graph);
opsched_status os_stream_graph_launch(opsched_stream *s, void *graph);
void os_device_graph_free(opsched_device *dev, void *graph);

/* The launch_pdl slot (on -1 asks): the setting before, -1 where there is
 * none. */
int os_device_launch_pdl(opsched_device *dev, int on);

#ifdef OPSCHED_HAVE_CUDA
extern const os_backend_iface os_backend_cuda;
#endif
#ifdef OPSCHED_HAVE_DNNL
extern const os_backend_iface os_backend_cpu;
#endif

#endif /* OS_BACKEND_IMPL_H */
