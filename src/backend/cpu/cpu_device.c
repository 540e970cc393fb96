/*
 * cpu_device.c - the CPU backend's device: one oneDNN CPU engine, host
 * memory, oneDNN streams, host-clock timers and the RAPL energy counter;
 * and the backend's function table.
 *
 * "Device memory" is 64-byte aligned host memory, so upload and download are
 * copies.  Work on a CPU stream has finished when it returns (oneDNN's
 * OpenMP runtime executes synchronously), so a timer mark waits on its
 * stream and reads CLOCK_MONOTONIC.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/cpu_impl.h"
#include "core/util.h"

#define RAPL_ENERGY "/sys/class/powercap/intel-rapl:0/energy_uj"
#define RAPL_LIMIT "/sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw"
#define CPU_FREQ "/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq"
#define L3_SIZE "/sys/devices/system/cpu/cpu0/cache/index3/size"

typedef struct cpu_timer {
    struct timespec t[2];
    int marked[2];
} cpu_timer;

const char *cpu_dnnl_status_name(dnnl_status_t s)
{
    switch (s) {
    case dnnl_success:
        return "dnnl_success";
    case dnnl_out_of_memory:
        return "dnnl_out_of_memory";
    case dnnl_invalid_arguments:
        return "dnnl_invalid_arguments";
    case dnnl_unimplemented:
        return "dnnl_unimplemented";
    case dnnl_iterator_ends:
        return "dnnl_iterator_ends";
    case dnnl_runtime_error:
        return "dnnl_runtime_error";
    case dnnl_not_required:
        return "dnnl_not_required";
    }
    return "unknown dnnl status";
}

opsched_status cpu_dnnl_fail(opsched_ctx *ctx, dnnl_status_t s, const char *call, const char *file,
                             int line)
{
    opsched_status st = s == dnnl_out_of_memory   ? OPSCHED_ERR_NOMEM
                        : s == dnnl_unimplemented ? OPSCHED_ERR_UNSUPPORTED
                                                  : OPSCHED_ERR_BACKEND;
    return os_fail(ctx, st, file, line, "oneDNN: %s failed: %s", call, cpu_dnnl_status_name(s));
}

void *cpu_aligned_alloc(size_t bytes)
{
    size_t n = bytes ? bytes : 1;
    if (n > SIZE_MAX - CPU_ALIGN) return NULL;
    n = (n + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN; /* C11 wants a multiple */
    return aligned_alloc(CPU_ALIGN, n);
}

/* Reads the first line of a small text file; 0 when it cannot. */
static int read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    if (ok) buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

static int read_double(const char *path, double *out)
{
    char line[64], *end;
    if (!read_line(path, line, sizeof(line))) return 0;
    *out = strtod(line, &end);
    return end != line;
}

/* ---- devices ------------------------------------------------------------ */

static opsched_status cpu_device_count(opsched_ctx *ctx, int *out)
{
    (void)ctx;
    *out = dnnl_engine_get_count(dnnl_cpu) > 0 ? 1 : 0;
    return OPSCHED_OK;
}

static void cpu_device_close(void *d)
{
    cpu_dev *dev = d;
    if (!dev) return;
    if (dev->stream) dnnl_stream_destroy(dev->stream);
    if (dev->engine) dnnl_engine_destroy(dev->engine);
    free(dev);
}

static opsched_status cpu_device_open(opsched_ctx *ctx, int index, void **out)
{
    opsched_status st = OPSCHED_OK;
    if (index != 0)
        return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND, "cpu device %d does not exist (only 0)", index);
    cpu_dev *dev = calloc(1, sizeof(*dev));
    if (!dev) return OS_NOMEM(ctx);
    CPU_DNNL_GOTO(st, ctx, dnnl_engine_create(&dev->engine, dnnl_cpu, 0), fail);
    CPU_DNNL_GOTO(st, ctx, dnnl_stream_create(&dev->stream, dev->engine, dnnl_stream_default_flags),
                  fail);
    double uj;
    if (read_double(RAPL_ENERGY, &uj))
        snprintf(dev->energy_path, sizeof(dev->energy_path), "%s", RAPL_ENERGY);
    *out = dev;
    return OPSCHED_OK;
fail:
    cpu_device_close(dev);
    return st;
}

/* The "model name" line of /proc/cpuinfo, or "unknown CPU". */
static void cpu_model_name(char *buf, size_t size)
{
    snprintf(buf, size, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *v = strchr(line, ':');
        if (!v) continue;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        snprintf(buf, size, "%s", v);
        buf[strcspn(buf, "\n")] = '\0';
        break;
    }
    fclose(f);
}

/* Last-level cache: sysfs ("32768K"), else sysconf, else 0. */
static int64_t cpu_l3_bytes(void)
{
    char line[64], *end;
    if (read_line(L3_SIZE, line, sizeof(line))) {
        long long v = strtoll(line, &end, 10);
        if (end != line && v > 0) {
            if (*end == 'K')
                v *= 1024;
            else if (*end == 'M')
                v *= 1024 * 1024;
            return (int64_t)v;
        }
    }
    long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return v > 0 ? (int64_t)v : 0;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static opsched_status cpu_device_info(opsched_ctx *ctx, void *d, opsched_device_info *out)
{
    (void)ctx;
    cpu_dev *dev = d;
    cpu_model_name(out->name, sizeof(out->name));
    char host[256] = "";
    if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
    uint64_t h = fnv1a(fnv1a(14695981039346656037ull, out->name), host);
    snprintf(out->uuid, sizeof(out->uuid), "CPU-%016llx", (unsigned long long)h);
    const dnnl_version_t *v = dnnl_version();
    snprintf(out->library_versions, sizeof(out->library_versions), "onednn %d.%d.%d", v->major,
             v->minor, v->patch);
    snprintf(out->runtime_version, sizeof(out->runtime_version), "%s",
             v->cpu_runtime == DNNL_RUNTIME_OMP ? "openmp" : "");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    out->sm_count = cores > 0 ? (int)cores : 1;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    out->memory_bytes = pages > 0 && page > 0 ? (int64_t)pages * page : 0;
    out->l2_bytes = cpu_l3_bytes();
    out->has_power = 0;
    out->has_energy = dev->energy_path[0] != '\0';
    double uw;
    out->power_limit_w = dev->energy_path[0] && read_double(RAPL_LIMIT, &uw) ? uw / 1e6 : 0.0;
    return OPSCHED_OK;
}

static opsched_status cpu_device_sync(opsched_ctx *ctx, void *d)
{
    /* Work on other streams finished when it was enqueued (see the top). */
    cpu_dev *dev = d;
    CPU_DNNL(ctx, dnnl_stream_wait(dev->stream));
    return OPSCHED_OK;
}

static opsched_status cpu_power(opsched_ctx *ctx, void *d, opsched_power_sample *out)
{
    cpu_dev *dev = d;
    double uj, khz;
    out->power_w = out->energy_mj = out->temperature_c = out->sm_clock_mhz = NAN;
    if (!dev->energy_path[0] || !read_double(dev->energy_path, &uj))
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "cpu: no readable RAPL energy counter (%s)",
                       RAPL_ENERGY);
    out->energy_mj = uj / 1000.0;
    if (read_double(CPU_FREQ, &khz)) out->sm_clock_mhz = khz / 1000.0;
    return OPSCHED_OK;
}

/* ---- streams ------------------------------------------------------------ */

static opsched_status cpu_stream_create(opsched_ctx *ctx, void *d, void **out)
{
    cpu_dev *dev = d;
    dnnl_stream_t s = NULL;
    CPU_DNNL(ctx, dnnl_stream_create(&s, dev->engine, dnnl_stream_default_flags));
    *out = s;
    return OPSCHED_OK;
}

static void cpu_stream_free(void *d, void *s)
{
    (void)d;
    if (s) dnnl_stream_destroy(s);
}

static opsched_status cpu_stream_sync(opsched_ctx *ctx, void *d, void *s)
{
    cpu_dev *dev = d;
    CPU_DNNL(ctx, dnnl_stream_wait(s ? (dnnl_stream_t)s : dev->stream));
    return OPSCHED_OK;
}

/* ---- memory ------------------------------------------------------------- */

static opsched_status cpu_mem_alloc(opsched_ctx *ctx, void *d, size_t bytes, void **ptr)
{
    (void)d;
    *ptr = cpu_aligned_alloc(bytes);
    if (!*ptr)
        return OS_FAIL(ctx, OPSCHED_ERR_DEVICE_OOM, "cpu: %zu bytes of host memory do not fit",
                       bytes);
    return OPSCHED_OK;
}

static void cpu_mem_free(void *d, void *ptr)
{
    (void)d;
    free(ptr);
}

static opsched_status cpu_mem_copy(opsched_ctx *ctx, void *d, void *dst, const void *src,
                                   size_t bytes)
{
    (void)ctx;
    (void)d;
    if (bytes) memmove(dst, src, bytes);
    return OPSCHED_OK;
}

/* ---- timers ------------------------------------------------------------- */

static opsched_status cpu_timer_create(opsched_ctx *ctx, void *d, void **out)
{
    (void)d;
    cpu_timer *t = calloc(1, sizeof(*t));
    if (!t) return OS_NOMEM(ctx);
    *out = t;
    return OPSCHED_OK;
}

static void cpu_timer_free(void *d, void *t)
{
    (void)d;
    free(t);
}

static opsched_status cpu_timer_mark(opsched_ctx *ctx, void *d, void *timer, void *s, int which)
{
    cpu_timer *t = timer;
    if (which != 0 && which != 1)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "cpu timer: mark %d is neither start nor stop",
                       which);
    OS_TRY(cpu_stream_sync(ctx, d, s));
    clock_gettime(CLOCK_MONOTONIC, &t->t[which]);
    t->marked[which] = 1;
    if (which == 0) t->marked[1] = 0;
    return OPSCHED_OK;
}

static opsched_status cpu_timer_between(opsched_ctx *ctx, void *d, void *a, void *b, double *ms)
{
    (void)d;
    cpu_timer *ta = a, *tb = b;
    if (!ta->marked[0] || !tb->marked[0])
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "cpu timer: a start was never marked");
    *ms = (double)(tb->t[0].tv_sec - ta->t[0].tv_sec) * 1e3 +
          (double)(tb->t[0].tv_nsec - ta->t[0].tv_nsec) / 1e6;
    return OPSCHED_OK;
}

static opsched_status cpu_timer_elapsed(opsched_ctx *ctx, void *d, void *timer, double *ms)
{
    (void)d;
    cpu_timer *t = timer;
    if (!t->marked[0] || !t->marked[1])
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "cpu timer: %s was never marked",
                       t->marked[0] ? "stop" : "start");
    *ms = (double)(t->t[1].tv_sec - t->t[0].tv_sec) * 1e3 +
          (double)(t->t[1].tv_nsec - t->t[0].tv_nsec) / 1e6;
    return OPSCHED_OK;
}

/* ---- the table ---------------------------------------------------------- */

static const char *const cpu_conv_algos[] = {"direct", "winograd"};

const os_backend_iface os_backend_cpu = {
    .name = "cpu",
    .device_count = cpu_device_count,
    .device_open = cpu_device_open,
    .device_close = cpu_device_close,
    .device_info = cpu_device_info,
    .device_sync = cpu_device_sync,
    .stream_create = cpu_stream_create,
    .stream_free = cpu_stream_free,
    .stream_sync = cpu_stream_sync,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .mem_upload = cpu_mem_copy,
    .mem_download = cpu_mem_copy,
    .plan_create = cpu_plan_create,
    .plan_free = cpu_plan_free,
    .plan_launch = cpu_plan_launch,
    .timer_create = cpu_timer_create,
    .timer_free = cpu_timer_free,
    .timer_mark = cpu_timer_mark,
    .timer_elapsed = cpu_timer_elapsed,
    .timer_between = cpu_timer_between,
    .conv_algos = cpu_conv_algos,
    .n_conv_algos = (int)OS_ARRAY_LEN(cpu_conv_algos),
    .power = cpu_power,
};
