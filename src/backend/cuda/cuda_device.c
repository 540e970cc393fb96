/*
 * cuda_device.c - the CUDA backend's function table: devices, memory,
 * streams, timers and power, plus the vendor error mapping every file of
 * the backend uses.
 *
 * A machine without a GPU or without a driver has zero devices; that is
 * not an error, so builds with CUDA run (and their tests skip) anywhere.
 */
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

/* ---- errors ---------------------------------------------------------- */

opsched_status cu_fail_cuda(opsched_ctx *ctx, cudaError_t err, const char *call, const char *file,
                            int line)
{
    (void)cudaGetLastError();
    opsched_status st =
        err == cudaErrorMemoryAllocation ? OPSCHED_ERR_DEVICE_OOM : OPSCHED_ERR_BACKEND;
    return os_fail(ctx, st, file, line, "%s failed: %s (%s)", call, cudaGetErrorName(err),
                   cudaGetErrorString(err));
}

opsched_status cu_fail_cudnn(opsched_ctx *ctx, cudnnStatus_t err, const char *call,
                             const char *file, int line)
{
    char detail[256] = "";
    cudnnGetLastErrorString(detail, sizeof(detail));
    (void)cudaGetLastError();
    opsched_status st = OPSCHED_ERR_BACKEND;
    if (CUDNN_STATUS_CATEGORY(err) == CUDNN_STATUS_NOT_SUPPORTED)
        st = OPSCHED_ERR_UNSUPPORTED;
    else if (err == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
             err == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
        st = OPSCHED_ERR_DEVICE_OOM; /* cuDNN 9's CUDNN_STATUS_ALLOC_FAILED is the latter */
    return os_fail(ctx, st, file, line, "%s failed: %s%s%s", call, cudnnGetErrorString(err),
                   detail[0] ? ": " : "", detail);
}

opsched_status cu_fail_cublas(opsched_ctx *ctx, cublasStatus_t err, const char *call,
                              const char *file, int line)
{
    (void)cudaGetLastError();
    opsched_status st = OPSCHED_ERR_BACKEND;
    if (err == CUBLAS_STATUS_ALLOC_FAILED)
        st = OPSCHED_ERR_DEVICE_OOM;
    else if (err == CUBLAS_STATUS_NOT_SUPPORTED)
        st = OPSCHED_ERR_UNSUPPORTED;
    return os_fail(ctx, st, file, line, "%s failed: %s (%s)", call, cublasGetStatusName(err),
                   cublasGetStatusString(err));
}

/* ---- devices --------------------------------------------------------- */

/* Runtime errors that mean "no usable GPU here" rather than a failure. */
static int no_gpu_error(cudaError_t e)
{
    return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
           e == cudaErrorStubLibrary || e == cudaErrorSystemDriverMismatch ||
           e == cudaErrorCompatNotSupportedOnDevice || e == cudaErrorDevicesUnavailable ||
           e == cudaErrorSystemNotReady || e == cudaErrorNotSupported;
}

static opsched_status cu_device_count(opsched_ctx *ctx, int *out)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    *out = 0;
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (no_gpu_error(e)) {
            os_log(ctx, OPSCHED_LOG_DEBUG, "cuda: no devices (%s: %s)", cudaGetErrorName(e),
                   cudaGetErrorString(e));
            return OPSCHED_OK;
        }
        return cu_fail_cuda(ctx, e, "cudaGetDeviceCount(&n)", __FILE__, __LINE__);
    }
    *out = n;
    return OPSCHED_OK;
}

opsched_status cu_device_use(opsched_ctx *ctx, const cu_device *dev)
{
    int cur = -1;
    CUDA_CHECK(ctx, cudaGetDevice(&cur));
    if (cur != dev->index) CUDA_CHECK(ctx, cudaSetDevice(dev->index));
    return OPSCHED_OK;
}

/* ---- the streams' GEMM workspaces ------------------------------------ */

static opsched_status streams_add(opsched_ctx *ctx, cu_device *dev, cudaStream_t s)
{
    if (dev->n_streams == dev->cap_streams) {
        int cap = dev->cap_streams ? 2 * dev->cap_streams : 8;
        cu_stream_ws *t = realloc(dev->streams, (size_t)cap * sizeof(*t));
        if (!t) return OS_NOMEM(ctx);
        dev->streams = t;
        dev->cap_streams = cap;
    }
    cu_stream_ws *e = &dev->streams[dev->n_streams];
    e->s = s;
    e->ws = e->scratch = NULL;
    if (dev->gemm_ws_bytes) OS_TRY(cu_malloc(ctx, dev->gemm_ws_bytes, &e->ws));
    if (dev->scratch_bytes) {
        opsched_status st = cu_malloc(ctx, dev->scratch_bytes, &e->scratch);
        if (st != OPSCHED_OK) {
            if (e->ws) (void)cudaFree(e->ws);
            e->ws = NULL;
            return st;
        }
    }
    dev->n_streams++;
    return OPSCHED_OK;
}

static void streams_remove(cu_device *dev, cudaStream_t s)
{
    for (int i = 0; i < dev->n_streams; i++) {
        if (dev->streams[i].s != s) continue;
        if (dev->streams[i].ws) (void)cudaFree(dev->streams[i].ws);
        if (dev->streams[i].scratch) (void)cudaFree(dev->streams[i].scratch);
        dev->streams[i] = dev->streams[--dev->n_streams];
        return;
    }
}

/* Gives every stream a buffer of `bytes` in its field at offset `field`
 * (cu_stream_ws.ws or .scratch); none on failure. */
static opsched_status streams_alloc(opsched_ctx *ctx, cu_device *dev, size_t field, size_t bytes)
{
    for (int i = 0; i < dev->n_streams; i++) {
        opsched_status st = cu_malloc(ctx, bytes, (void **)((char *)&dev->streams[i] + field));
        if (st != OPSCHED_OK) {
            for (int j = 0; j < i; j++) {
                void **b = (void **)((char *)&dev->streams[j] + field);
                (void)cudaFree(*b);
                *b = NULL;
            }
            return st;
        }
    }
    return OPSCHED_OK;
}

opsched_status cu_gemm_workspace_reserve(opsched_ctx *ctx, cu_device *dev, size_t bytes)
{
    if (dev->gemm_ws_bytes || !bytes) return OPSCHED_OK;
    OS_TRY(streams_alloc(ctx, dev, offsetof(cu_stream_ws, ws), bytes));
    dev->gemm_ws_bytes = bytes;
    return OPSCHED_OK;
}

opsched_status cu_stream_scratch_reserve(opsched_ctx *ctx, cu_device *dev)
{
    if (dev->scratch_bytes) return OPSCHED_OK;
    OS_TRY(streams_alloc(ctx, dev, offsetof(cu_stream_ws, scratch), CU_STREAM_SCRATCH_BYTES));
    dev->scratch_bytes = CU_STREAM_SCRATCH_BYTES;
    return OPSCHED_OK;
}

void *cu_stream_scratch(const cu_device *dev, cudaStream_t s)
{
    for (int i = 0; i < dev->n_streams; i++)
        if (dev->streams[i].s == s) return dev->streams[i].scratch;
    return NULL;
}

void *cu_gemm_workspace(const cu_device *dev, cudaStream_t s, size_t *bytes)
{
    for (int i = 0; i < dev->n_streams; i++)
        if (dev->streams[i].s == s && dev->streams[i].ws) {
            *bytes = dev->gemm_ws_bytes;
            return dev->streams[i].ws;
        }
    *bytes = 0;
    return NULL;
}

static void cu_device_close(void *impl)
{
    cu_device *dev = impl;
    if (!dev) return;
    if (cudaSetDevice(dev->index) == cudaSuccess && dev->stream)
        (void)cudaStreamSynchronize(dev->stream);
    for (int i = 0; i < dev->n_streams; i++) {
        if (dev->streams[i].ws) (void)cudaFree(dev->streams[i].ws);
        if (dev->streams[i].scratch) (void)cudaFree(dev->streams[i].scratch);
    }
    free(dev->streams);
    /* Choices still referenced by live plans stay until those are freed. */
    os_plan_cache_free(dev->conv_plans);
    os_plan_cache_free(dev->sdpa_plans);
    os_plan_cache_free(dev->lt_algos);
    os_plan_cache_free(dev->mm_plans);
    os_plan_store_close(dev->plan_store);
    if (dev->cublaslt) (void)cublasLtDestroy(dev->cublaslt);
    if (dev->cublas) (void)cublasDestroy(dev->cublas);
    if (dev->cudnn) (void)cudnnDestroy(dev->cudnn);
    if (dev->stream) (void)cudaStreamDestroy(dev->stream);
    cu_nvml_close(dev->nvml);
    (void)cudaGetLastError();
    free(dev);
}

static opsched_status cu_device_open(opsched_ctx *ctx, int index, void **out)
{
    opsched_status st = OPSCHED_OK;
    cu_device *dev = calloc(1, sizeof(*dev));
    if (!dev) return OS_NOMEM(ctx);
    dev->index = index;
    CUDA_CHECK_GOTO(ctx, st, cudaSetDevice(index), fail);
    CUDA_CHECK_GOTO(ctx, st, cudaStreamCreateWithFlags(&dev->stream, cudaStreamNonBlocking), fail);
    OS_TRY_GOTO(st, streams_add(ctx, dev, dev->stream), fail);
    CUDNN_CHECK_GOTO(ctx, st, cudnnCreate(&dev->cudnn), fail);
    CUBLAS_CHECK_GOTO(ctx, st, cublasCreate(&dev->cublas), fail);
    /* Tensor-core use is chosen per call by the compute type. */
    CUBLAS_CHECK_GOTO(ctx, st, cublasSetMathMode(dev->cublas, CUBLAS_DEFAULT_MATH), fail);
    CUBLAS_CHECK_GOTO(ctx, st, cublasLtCreate(&dev->cublaslt), fail);
    CUDA_CHECK_GOTO(
        ctx, st, cudaDeviceGetPCIBusId(dev->pci_bus_id, (int)sizeof(dev->pci_bus_id), index), fail);
    int cc = 0;
    CUDA_CHECK_GOTO(ctx, st, cudaDeviceGetAttribute(&cc, cudaDevAttrComputeCapabilityMajor, index),
                    fail);
    dev->pdl_ok = cc >= 9;
    dev->conv_plans = os_plan_cache_create(OS_PLAN_CACHE_DEFAULT_MAX, cu_conv_choice_release);
    dev->sdpa_plans = os_plan_cache_create(OS_PLAN_CACHE_DEFAULT_MAX, cu_sdpa_choice_release);
    dev->lt_algos = os_plan_cache_create(OS_PLAN_CACHE_DEFAULT_MAX, free);
    dev->mm_plans = os_plan_cache_create(OS_PLAN_CACHE_DEFAULT_MAX, cu_mm_choice_release);
    if (!dev->conv_plans || !dev->sdpa_plans || !dev->lt_algos || !dev->mm_plans) {
        st = OS_NOMEM(ctx);
        goto fail;
    }
    dev->nvml = cu_nvml_open(ctx, dev->pci_bus_id);
    *out = dev;
    return OPSCHED_OK;
fail:
    cu_device_close(dev);
    return st;
}

static void fmt_version(char *buf, size_t size, int v)
{
    snprintf(buf, size, "%d.%d", v / 1000, (v % 1000) / 10);
}

static opsched_status cu_device_info(opsched_ctx *ctx, void *impl, opsched_device_info *out)
{
    cu_device *dev = impl;
    struct cudaDeviceProp prop;
    int drv = 0, rt = 0, cb[3] = {0, 0, 0};
    OS_TRY(cu_device_use(ctx, dev));
    CUDA_CHECK(ctx, cudaGetDeviceProperties(&prop, dev->index));
    CUDA_CHECK(ctx, cudaDriverGetVersion(&drv));
    CUDA_CHECK(ctx, cudaRuntimeGetVersion(&rt));
    CUBLAS_CHECK(ctx, cublasGetProperty(MAJOR_VERSION, &cb[0]));
    CUBLAS_CHECK(ctx, cublasGetProperty(MINOR_VERSION, &cb[1]));
    CUBLAS_CHECK(ctx, cublasGetProperty(PATCH_LEVEL, &cb[2]));
    size_t dnn = cudnnGetVersion(); /* major * 10000 + minor * 100 + patch since cuDNN 9 */

    snprintf(out->name, sizeof(out->name), "%.127s", prop.name);
    const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
    snprintf(out->uuid, sizeof(out->uuid),
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
             u[15]);
    snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "%s", dev->pci_bus_id);
    if (!cu_nvml_driver_version(dev->nvml, out->driver_version, sizeof(out->driver_version)))
        fmt_version(out->driver_version, sizeof(out->driver_version), drv);
    fmt_version(out->runtime_version, sizeof(out->runtime_version), rt);
    snprintf(out->library_versions, sizeof(out->library_versions),
             "cudnn %zu.%zu.%zu; cublas %d.%d.%d", dnn / 10000, (dnn % 10000) / 100, dnn % 100,
             cb[0], cb[1], cb[2]);
    out->sm_count = prop.multiProcessorCount;
    out->cc_major = prop.major;
    out->cc_minor = prop.minor;
    out->memory_bytes = (int64_t)prop.totalGlobalMem;
    out->l2_bytes = prop.l2CacheSize;
    out->has_power = cu_nvml_has_power(dev->nvml);
    out->has_energy = cu_nvml_has_energy(dev->nvml);
    out->power_limit_w = cu_nvml_power_limit(dev->nvml);
    return OPSCHED_OK;
}

static opsched_status cu_device_sync(opsched_ctx *ctx, void *impl)
{
    OS_TRY(cu_device_use(ctx, impl));
    CUDA_CHECK(ctx, cudaDeviceSynchronize());
    return OPSCHED_OK;
}

static opsched_status cu_power(opsched_ctx *ctx, void *impl, opsched_power_sample *out)
{
    cu_device *dev = impl;
    if (!cu_nvml_sample(dev->nvml, out))
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                       "cuda device %d (%s): no power, energy, temperature or clock readings "
                       "(NVML unavailable or not supported)",
                       dev->index, dev->pci_bus_id);
    return OPSCHED_OK;
}

/* ---- streams --------------------------------------------------------- */

static cudaStream_t pick_stream(const cu_device *dev, void *stream)
{
    return stream ? (cudaStream_t)stream : dev->stream;
}

static opsched_status cu_stream_create(opsched_ctx *ctx, void *impl, void **out)
{
    cudaStream_t s = NULL;
    OS_TRY(cu_device_use(ctx, impl));
    CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    opsched_status st = streams_add(ctx, impl, s);
    if (st != OPSCHED_OK) {
        (void)cudaStreamDestroy(s);
        return st;
    }
    *out = s;
    return OPSCHED_OK;
}

static void cu_stream_free(void *impl, void *stream)
{
    cu_device *dev = impl;
    if (!stream) return;
    if (cudaSetDevice(dev->index) == cudaSuccess) {
        (void)cudaStreamSynchronize((cudaStream_t)stream);
        streams_remove(dev, (cudaStream_t)stream);
        (void)cudaStreamDestroy((cudaStream_t)stream);
    }
    (void)cudaGetLastError();
}

static opsched_status cu_stream_sync(opsched_ctx *ctx, void *impl, void *stream)
{
    OS_TRY(cu_device_use(ctx, impl));
    CUDA_CHECK(ctx, cudaStreamSynchronize(pick_stream(impl, stream)));
    return OPSCHED_OK;
}

/* ---- memory ---------------------------------------------------------- */

size_t cu_free_memory(void)
{
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return free_b;
}

opsched_status cu_malloc(opsched_ctx *ctx, size_t bytes, void **out)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        return OS_FAIL(ctx, OPSCHED_ERR_DEVICE_OOM,
                       "cudaMalloc of %zu bytes: out of device memory (%zu bytes free)", bytes,
                       cu_free_memory());
    }
    if (e != cudaSuccess) return cu_fail_cuda(ctx, e, "cudaMalloc(&p, bytes)", __FILE__, __LINE__);
    *out = p;
    return OPSCHED_OK;
}

static opsched_status cu_mem_alloc(opsched_ctx *ctx, void *impl, size_t bytes, void **out)
{
    OS_TRY(cu_device_use(ctx, impl));
    return cu_malloc(ctx, bytes, out);
}

static void cu_mem_free(void *impl, void *ptr)
{
    cu_device *dev = impl;
    if (!ptr) return;
    if (cudaSetDevice(dev->index) == cudaSuccess) (void)cudaFree(ptr);
    (void)cudaGetLastError();
}

/* Copies wait for all work on the device first: buffers are shared between
 * streams, and cudaMemcpy only orders itself after the legacy NULL stream,
 * which our non-blocking streams do not synchronise with. */
static opsched_status cu_mem_upload(opsched_ctx *ctx, void *impl, void *dst, const void *src,
                                    size_t bytes)
{
    OS_TRY(cu_device_use(ctx, impl));
    if (!bytes) return OPSCHED_OK;
    CUDA_CHECK(ctx, cudaDeviceSynchronize());
    CUDA_CHECK(ctx, cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    /* From pageable memory cudaMemcpy returns once the data is staged, before
     * its DMA ends; work on the non-blocking streams would not wait for it. */
    CUDA_CHECK(ctx, cudaDeviceSynchronize());
    return OPSCHED_OK;
}

static opsched_status cu_mem_download(opsched_ctx *ctx, void *impl, void *dst, const void *src,
                                      size_t bytes)
{
    OS_TRY(cu_device_use(ctx, impl));
    if (!bytes) return OPSCHED_OK;
    CUDA_CHECK(ctx, cudaDeviceSynchronize());
    CUDA_CHECK(ctx, cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    return OPSCHED_OK;
}

/* Ordered like an upload (after all work on the device) and finished on
 * return; only the generation moved to the GPU, so the values are the
 * registry's host fill's, bit for bit. */
static opsched_status cu_mem_fill_random(opsched_ctx *ctx, void *impl, void *ptr, size_t bytes,
                                         opsched_dtype dt, uint64_t seed)
{
    cu_device *dev = impl;
    static const cuk_fill_kind kinds[OPSCHED_DTYPE_COUNT] = {
        [OPSCHED_F32] = CUK_FILL_F32,   [OPSCHED_F16] = CUK_FILL_F16,
        [OPSCHED_BF16] = CUK_FILL_BF16, [OPSCHED_INT8] = CUK_FILL_U8,
        [OPSCHED_INT32] = CUK_FILL_I32, [OPSCHED_INT64] = CUK_FILL_I64,
        [OPSCHED_UINT8] = CUK_FILL_U8,  [OPSCHED_BOOL] = CUK_FILL_BOOL};
    if ((int)dt < 0 || dt >= OPSCHED_DTYPE_COUNT)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "fill_random: bad dtype");
    cuk_fill_kind k = kinds[dt];
    size_t esz = opsched_dtype_size(dt), n = bytes / esz;
    os_rng rng;
    os_rng_seed(&rng, seed);
    OS_TRY(cu_device_use(ctx, dev));
    if (!bytes) return OPSCHED_OK;
    CUDA_CHECK(ctx, cudaDeviceSynchronize());
    CUDA_CHECK(ctx, cuk_fill_random(k, (int64_t)n, rng.state, ptr, dev->stream));
    if (bytes > n * esz)
        CUDA_CHECK(ctx, cudaMemsetAsync((char *)ptr + n * esz, 0, bytes - n * esz, dev->stream));
    CUDA_CHECK(ctx, cudaStreamSynchronize(dev->stream));
    return OPSCHED_OK;
}

/* ---- timers ---------------------------------------------------------- */

typedef struct cu_timer {
    cudaEvent_t ev[2]; /* start, stop */
} cu_timer;

static void cu_timer_free(void *impl, void *timer)
{
    cu_device *dev = impl;
    cu_timer *t = timer;
    if (!t) return;
    if (cudaSetDevice(dev->index) == cudaSuccess) {
        for (int i = 0; i < 2; i++)
            if (t->ev[i]) (void)cudaEventDestroy(t->ev[i]);
    }
    (void)cudaGetLastError();
    free(t);
}

static opsched_status cu_timer_create(opsched_ctx *ctx, void *impl, void **out)
{
    opsched_status st = OPSCHED_OK;
    OS_TRY(cu_device_use(ctx, impl));
    cu_timer *t = calloc(1, sizeof(*t));
    if (!t) return OS_NOMEM(ctx);
    for (int i = 0; i < 2; i++)
        CUDA_CHECK_GOTO(ctx, st, cudaEventCreateWithFlags(&t->ev[i], cudaEventDefault), fail);
    *out = t;
    return OPSCHED_OK;
fail:
    cu_timer_free(impl, t);
    return st;
}

static opsched_status cu_timer_mark(opsched_ctx *ctx, void *impl, void *timer, void *stream,
                                    int which)
{
    cu_timer *t = timer;
    OS_TRY(cu_device_use(ctx, impl));
    CUDA_CHECK(ctx, cudaEventRecord(t->ev[which ? 1 : 0], pick_stream(impl, stream)));
    return OPSCHED_OK;
}

static opsched_status cu_timer_elapsed(opsched_ctx *ctx, void *impl, void *timer, double *ms)
{
    cu_timer *t = timer;
    float f = 0.0f;
    OS_TRY(cu_device_use(ctx, impl));
    CUDA_CHECK(ctx, cudaEventSynchronize(t->ev[1]));
    CUDA_CHECK(ctx, cudaEventElapsedTime(&f, t->ev[0], t->ev[1]));
    *ms = f;
    return OPSCHED_OK;
}

static opsched_status cu_timer_between(opsched_ctx *ctx, void *impl, void *a, void *b, double *ms)
{
    float f = 0.0f;
    OS_TRY(cu_device_use(ctx, impl));
    CUDA_CHECK(ctx, cudaEventSynchronize(((cu_timer *)b)->ev[0]));
    CUDA_CHECK(ctx, cudaEventElapsedTime(&f, ((cu_timer *)a)->ev[0], ((cu_timer *)b)->ev[0]));
    *ms = f;
    return OPSCHED_OK;
}

/* ---- the table ------------------------------------------------------- */

static void cu_plan_cache_stats(void *impl, opsched_plan_cache_stats *out)
{
    const cu_device *dev = impl;
    long loads = 0, misses = 0, writes = 0;
    os_plan_cache_stats(dev ? dev->conv_plans : NULL, out);
    os_plan_store_counts(dev ? dev->plan_store : NULL, &loads, &misses, &writes);
    out->store_loads = loads;
    out->store_writes = writes;
}

const os_backend_iface os_backend_cuda = {
    .name = "cuda",
    .device_count = cu_device_count,
    .device_open = cu_device_open,
    .device_close = cu_device_close,
    .device_info = cu_device_info,
    .device_sync = cu_device_sync,
    .stream_create = cu_stream_create,
    .stream_free = cu_stream_free,
    .stream_sync = cu_stream_sync,
    .mem_alloc = cu_mem_alloc,
    .mem_free = cu_mem_free,
    .mem_upload = cu_mem_upload,
    .mem_download = cu_mem_download,
    .mem_fill_random = cu_mem_fill_random,
    .plan_create = cu_plan_create,
    .plan_free = cu_plan_free,
    .plan_launch = cu_plan_launch,
    .timer_create = cu_timer_create,
    .timer_free = cu_timer_free,
    .timer_mark = cu_timer_mark,
    .timer_elapsed = cu_timer_elapsed,
    .timer_between = cu_timer_between,
    .conv_algos = cu_conv_algo_names,
    .n_conv_algos = CU_N_CONV_ALGOS,
    .power = cu_power,
    .graph_begin = cu_graph_begin,
    .graph_end = cu_graph_end,
    .graph_launch = cu_graph_launch,
    .graph_free = cu_graph_free,
    .event_create = cu_event_create,
    .event_free = cu_event_free,
    .event_record = cu_event_record,
    .stream_wait = cu_stream_wait,
    .plan_cache_stats = cu_plan_cache_stats,
    .launch_pdl = cu_launch_pdl,
};
