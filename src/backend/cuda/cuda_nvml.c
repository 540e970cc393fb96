/*
 * cuda_nvml.c - power, energy, temperature and clocks through NVML.
 *
 * NVML is opened with dlopen (as nvtop does), never linked, so a binary
 * built with CUDA still runs where libnvidia-ml is missing; it then simply
 * has no power readings.  The functions live in a table, the versioned _v2
 * symbols preferred.  The NVML device is found by the PCI bus id of the CUDA
 * device, never by index: the two enumerations need not agree (and
 * CUDA_VISIBLE_DEVICES renumbers only CUDA's).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

/* The few NVML types used here; values from nvml.h. */
typedef int nvml_return;
typedef struct nvml_device_st *nvml_device;
#define NVML_OK 0
#define NVML_TEMPERATURE_GPU 0
#define NVML_CLOCK_SM 1
/* nvmlDeviceGetPowerUsage is averaged over about a second on Ampere and
 * later, which smears a 1 s window; this field is the instantaneous power. */
#define NVML_FI_DEV_POWER_INSTANT 186

typedef struct nvml_field_value {
    unsigned int field_id;
    unsigned int scope_id;
    long long timestamp;
    long long latency_usec;
    int value_type;
    nvml_return ret;
    union {
        double d;
        unsigned int ui;
        unsigned long ul;
        unsigned long long ull;
        long long sll;
        int si;
        unsigned short us;
    } value;
} nvml_field_value;

typedef struct nvml_fns {
    nvml_return (*init)(void);
    nvml_return (*shutdown)(void);
    const char *(*error_string)(nvml_return);
    nvml_return (*by_pci_bus_id)(const char *, nvml_device *);
    nvml_return (*power_usage)(nvml_device, unsigned int *);
    nvml_return (*total_energy)(nvml_device, unsigned long long *);
    nvml_return (*temperature)(nvml_device, int, unsigned int *);
    nvml_return (*clock_info)(nvml_device, int, unsigned int *);
    nvml_return (*power_limit)(nvml_device, unsigned int *);
    nvml_return (*driver_version)(char *, unsigned int);
    nvml_return (*field_values)(nvml_device, int, nvml_field_value *);
    nvml_return (*nvlink_state)(nvml_device, unsigned int, int *);
} nvml_fns;

struct cu_nvml {
    void *lib;
    nvml_fns fn;
    nvml_device dev;
    int has_power, has_energy;
    int has_instant;           /* NVML_FI_DEV_POWER_INSTANT answers */
};

/* dlsym into a function pointer without the object-to-function cast ISO C
 * does not allow; the first name found wins. */
static void load_sym(void *lib, void *fn_ptr, size_t fn_size, const char *name,
                     const char *fallback)
{
    void *sym = dlsym(lib, name);
    if (!sym && fallback) sym = dlsym(lib, fallback);
    memcpy(fn_ptr, &sym, fn_size);
}

#define LOAD(lib, field, name, fallback)                                                           \
    load_sym((lib), (void *)&(field), sizeof(field), (name), (fallback))

void cu_nvml_close(cu_nvml *n)
{
    if (!n) return;
    if (n->fn.shutdown) (void)n->fn.shutdown();
    dlclose(n->lib);
    free(n);
}

static const char *nvml_error(const cu_nvml *n, nvml_return r)
{
    return n->fn.error_string ? n->fn.error_string(r) : "unknown NVML error";
}

cu_nvml *cu_nvml_open(opsched_ctx *ctx, const char *pci_bus_id)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        os_log(ctx, OPSCHED_LOG_INFO, "cuda: no NVML, so no power readings (%s)",
               why ? why : "libnvidia-ml.so.1 not found");
        return NULL;
    }
    cu_nvml *n = calloc(1, sizeof(*n));
    if (!n) {
        dlclose(lib);
        return NULL;
    }
    n->lib = lib;
    nvml_fns *f = &n->fn;
    LOAD(lib, f->init, "nvmlInit_v2", "nvmlInit");
    LOAD(lib, f->error_string, "nvmlErrorString", NULL);
    LOAD(lib, f->by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2",
         "nvmlDeviceGetHandleByPciBusId");
    LOAD(lib, f->power_usage, "nvmlDeviceGetPowerUsage", NULL);
    LOAD(lib, f->total_energy, "nvmlDeviceGetTotalEnergyConsumption", NULL);
    LOAD(lib, f->temperature, "nvmlDeviceGetTemperature", NULL);
    LOAD(lib, f->clock_info, "nvmlDeviceGetClockInfo", NULL);
    LOAD(lib, f->power_limit, "nvmlDeviceGetEnforcedPowerLimit", NULL);
    LOAD(lib, f->driver_version, "nvmlSystemGetDriverVersion", NULL);
    LOAD(lib, f->field_values, "nvmlDeviceGetFieldValues", NULL);
    LOAD(lib, f->nvlink_state, "nvmlDeviceGetNvLinkState", NULL);
    nvml_return r = f->init && f->by_pci_bus_id ? f->init() : -1;
    if (r != NVML_OK) {
        os_log(ctx, OPSCHED_LOG_INFO, "cuda: NVML unusable, so no power readings (%s)",
               r == -1 ? "symbols missing" : nvml_error(n, r));
        dlclose(lib);
        free(n);
        return NULL;
    }
    /* Only now that init succeeded does close owe NVML a shutdown. */
    LOAD(lib, f->shutdown, "nvmlShutdown", NULL);
    r = f->by_pci_bus_id(pci_bus_id, &n->dev);
    if (r != NVML_OK) {
        os_log(ctx, OPSCHED_LOG_INFO, "cuda: NVML has no GPU at PCI bus id %s (%s)", pci_bus_id,
               nvml_error(n, r));
        cu_nvml_close(n);
        return NULL;
    }
    unsigned int mw = 0;
    unsigned long long mj = 0;
    n->has_power = f->power_usage && f->power_usage(n->dev, &mw) == NVML_OK;
    n->has_energy = f->total_energy && f->total_energy(n->dev, &mj) == NVML_OK;
    if (f->field_values) {
        nvml_field_value fv;
        memset(&fv, 0, sizeof(fv));
        fv.field_id = NVML_FI_DEV_POWER_INSTANT;
        n->has_instant = f->field_values(n->dev, 1, &fv) == NVML_OK && fv.ret == NVML_OK;
    }
    return n;
}

/* NVML_NVLINK_MAX_LINKS of nvml.h (18 on Hopper). */
#define NVML_NVLINK_MAX_LINKS 18

int cu_nvml_nvlinks(const cu_nvml *n)
{
    if (!n || !n->fn.nvlink_state) return -1;
    int active = 0;
    for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
        int on = 0;
        if (n->fn.nvlink_state(n->dev, link, &on) == NVML_OK && on) active++;
    }
    return active;
}

int cu_nvml_has_power(const cu_nvml *n)
{
    return n ? n->has_power : 0;
}

int cu_nvml_has_energy(const cu_nvml *n)
{
    return n ? n->has_energy : 0;
}

double cu_nvml_power_limit(const cu_nvml *n)
{
    unsigned int mw = 0;
    if (!n || !n->fn.power_limit || n->fn.power_limit(n->dev, &mw) != NVML_OK) return 0.0;
    return mw / 1000.0;
}

int cu_nvml_driver_version(const cu_nvml *n, char *buf, size_t size)
{
    char v[96];
    if (!n || !n->fn.driver_version || size == 0) return 0;
    if (n->fn.driver_version(v, (unsigned int)sizeof(v)) != NVML_OK) return 0;
    v[sizeof(v) - 1] = '\0';
    size_t len = strlen(v);
    if (len >= size) len = size - 1;
    memcpy(buf, v, len);
    buf[len] = '\0';
    return 1;
}

int cu_nvml_sample(const cu_nvml *n, opsched_power_sample *out)
{
    out->power_w = out->energy_mj = out->temperature_c = out->sm_clock_mhz = NAN;
    if (!n) return 0;
    int got = 0;
    unsigned int v = 0;
    unsigned long long mj = 0;
    nvml_field_value fv;
    memset(&fv, 0, sizeof(fv));
    fv.field_id = NVML_FI_DEV_POWER_INSTANT;
    if (n->has_instant && n->fn.field_values(n->dev, 1, &fv) == NVML_OK && fv.ret == NVML_OK) {
        out->power_w = fv.value.ui / 1000.0;
        got = 1;
    } else if (n->has_power && n->fn.power_usage(n->dev, &v) == NVML_OK) {
        out->power_w = v / 1000.0;
        got = 1;
    }
    if (n->has_energy && n->fn.total_energy(n->dev, &mj) == NVML_OK) {
        out->energy_mj = (double)mj;
        got = 1;
    }
    if (n->fn.temperature && n->fn.temperature(n->dev, NVML_TEMPERATURE_GPU, &v) == NVML_OK) {
        out->temperature_c = v;
        got = 1;
    }
    if (n->fn.clock_info && n->fn.clock_info(n->dev, NVML_CLOCK_SM, &v) == NVML_OK) {
        out->sm_clock_mhz = v;
        got = 1;
    }
    return got;
}
