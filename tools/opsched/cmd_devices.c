/*
 * cmd_devices.c - `opsched devices`: every device of every backend in this
 * build, with versions, size, and whether power and energy can be read;
 * with --calibrate, each device's peak FLOP rate, bandwidth, launch and
 * graph-node overheads and idle power per math mode, stored with --db.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "args.h"

static const char devices_help[] =
    "usage: opsched devices [--check BACKEND] [--format table|csv|json]\n"
    "       opsched devices --calibrate [--db FILE] [--math LIST] [--backend B] [--device N]\n"
    "\n"
    "Lists the devices of each backend in this build (cuda, cpu): name, UUID,\n"
    "PCI bus id, driver, CUDA and library versions, SMs or cores, memory, cache,\n"
    "and whether power and the energy counter can be read.\n"
    "\n"
    "--calibrate measures each device (or the one --backend/--device name) under\n"
    "each math mode: peak FLOP rate (best of large GEMMs), memory bandwidth (a\n"
    "large element-wise Add), host time to enqueue one small launch, device time\n"
    "per node of a replayed CUDA graph of tiny kernels, and idle power.  Math\n"
    "modes a device cannot run are skipped.  The predictor reads these from the\n"
    "database given with --db.\n";

enum { DV_CHECK, DV_CALIBRATE, DV_DB, DV_MATH, DV_BACKEND, DV_DEVICE };

static const tool_opt devices_opts[] = {
    {"check", 0, "BACKEND", "exit 1 unless BACKEND has at least one device", DV_CHECK},
    {"calibrate", 0, NULL, "measure instead of listing", DV_CALIBRATE},
    {"db", 0, "FILE", "--calibrate: store the calibrations in this database", DV_DB},
    {"math", 0, "LIST", "--calibrate: math modes, comma-separated (default\nfp32,tf32,fp16,bf16)",
     DV_MATH},
    {"backend", 0, "B", "--calibrate: only this backend (cuda, cpu)", DV_BACKEND},
    {"device", 0, "N", "--calibrate: only device N (index within --backend)", DV_DEVICE},
    {NULL, 0, NULL, NULL, 0}};

typedef struct devices_args {
    const char *check, *db, *math, *backend;
    int calibrate, device;
    tool_format fmt;
    cJSON *json;           /* --format json: the rows */
    opsched_csv_writer *w; /* --format csv: the writer */
    opsched_status csv_st; /* --format csv: its first error */
    int rows;              /* --format csv: rows written */
} devices_args;

static int devices_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    devices_args *a = dest;
    int64_t iv;
    switch (o->id) {
    case DV_CHECK: a->check = v; break;
    case DV_CALIBRATE: a->calibrate = 1; break;
    case DV_DB: a->db = v; break;
    case DV_MATH: a->math = v; break;
    case DV_BACKEND: a->backend = v; break;
    default:
        if (!tool_parse_int(v, 0, 1024, &iv))
            return tool_usage_error(cmd, "--device wants an index within the backend, got '%s'", v);
        a->device = (int)iv;
        break;
    }
    return TOOL_EXIT_OK;
}

/* The math modes of a comma-separated list; 0 after a usage error. */
static int parse_math_list(const char *list, int *want)
{
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", list);
    memset(want, 0, sizeof(int) * OPSCHED_MATH_COUNT);
    int any = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        opsched_math m;
        if (opsched_math_from_name(tok, &m) != OPSCHED_OK) {
            tool_usage_error("devices", "--math wants fp32, tf32, fp16 or bf16, got '%s'", tok);
            return 0;
        }
        want[m] = 1;
        any = 1;
    }
    if (!any) tool_usage_error("devices", "--math needs at least one math mode");
    return any;
}

static void print_value(double v, double scale, const char *fmt)
{
    if (isnan(v))
        printf("  %10s", "-");
    else
        printf(fmt, v / scale);
}

static const char calibration_csv_header[] =
    "backend,index,device,math,status,peak_flops,bandwidth,launch_us,graph_node_us,idle_power_w";

/* One calibration row in CSV or JSON; st says whether c holds numbers. */
static void calibration_row(devices_args *a, const opsched_device_info *di, opsched_math m,
                            const char *status, const opsched_calibration *c)
{
    if (a->fmt == TOOL_FMT_CSV) {
        if (a->rows++ == 0 && a->csv_st == OPSCHED_OK)
            a->csv_st = opsched_csv_header(a->w, calibration_csv_header);
        if (a->csv_st != OPSCHED_OK) return;
        opsched_csv_str(a->w, di->backend);
        opsched_csv_int(a->w, di->index);
        opsched_csv_str(a->w, di->name);
        opsched_csv_str(a->w, opsched_math_name(m));
        opsched_csv_str(a->w, status);
        if (c) {
            const double v[] = {c->peak_flops, c->bandwidth, c->launch_us, c->graph_node_us,
                                c->idle_power_w};
            for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
                opsched_csv_double(a->w, v[i], "%.6g");
        } else {
            for (int i = 0; i < 5; i++) opsched_csv_empty(a->w);
        }
        a->csv_st = opsched_csv_end_row(a->w);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "backend", di->backend);
    cJSON_AddNumberToObject(o, "index", di->index);
    cJSON_AddStringToObject(o, "device", di->name);
    cJSON_AddStringToObject(o, "math", opsched_math_name(m));
    cJSON_AddStringToObject(o, "status", status);
    if (c) {
        cJSON_AddNumberToObject(o, "peak_flops", c->peak_flops);
        cJSON_AddNumberToObject(o, "bandwidth", c->bandwidth);
        cJSON_AddNumberToObject(o, "launch_us", c->launch_us);
        cJSON_AddNumberToObject(o, "graph_node_us", c->graph_node_us);
        cJSON_AddNumberToObject(o, "idle_power_w", c->idle_power_w);
    }
    cJSON_AddItemToArray(a->json, o);
}

/* Calibrates one device under each wanted math mode; stores into s when
 * not NULL.  Returns the number of failures (unsupported modes are not). */
static int calibrate_device(opsched_ctx *ctx, devices_args *a, opsched_device *dev,
                            const int *want, opsched_store *s)
{
    opsched_device_info di;
    int failures = 0;
    int64_t device_id = 0;
    opsched_status st = opsched_device_info_get(dev, &di);
    if (st == OPSCHED_OK && s) st = opsched_store_device(s, &di, &device_id);
    if (st != OPSCHED_OK) {
        tool_fail(ctx, st, "device");
        return 1;
    }
    for (int m = 0; m < OPSCHED_MATH_COUNT; m++) {
        if (!want[m]) continue;
        opsched_calibration c;
        st = opsched_device_calibrate(dev, (opsched_math)m, &c);
        const char *status = st == OPSCHED_OK                 ? "ok"
                             : st == OPSCHED_ERR_UNSUPPORTED ? "unsupported"
                                                              : "failed";
        if (a->fmt != TOOL_FMT_TABLE)
            calibration_row(a, &di, (opsched_math)m, status, st == OPSCHED_OK ? &c : NULL);
        else
            printf("%-6s %-28.28s %-5s", di.backend, di.name, opsched_math_name((opsched_math)m));
        if (st == OPSCHED_ERR_UNSUPPORTED) {
            if (a->fmt == TOOL_FMT_TABLE) printf("  not supported: %s\n", opsched_ctx_last_error(ctx));
            opsched_ctx_clear_error(ctx);
            continue;
        }
        if (st != OPSCHED_OK) {
            if (a->fmt == TOOL_FMT_TABLE) printf("  failed\n");
            tool_fail(ctx, st, "calibrate");
            failures++;
            continue;
        }
        if (a->fmt == TOOL_FMT_TABLE) {
            print_value(c.peak_flops, 1e12, "  %10.2f");
            print_value(c.bandwidth, 1e9, "  %10.0f");
            print_value(c.launch_us, 1, "  %10.2f");
            print_value(c.graph_node_us, 1, "  %10.2f");
            print_value(c.idle_power_w, 1, "  %10.1f");
            printf("\n");
        }
        fflush(stdout);
        if (s && (st = opsched_store_calibration_put(s, device_id, &c)) != OPSCHED_OK) {
            tool_fail(ctx, st, "store calibration");
            failures++;
        }
    }
    return failures;
}

static int run_calibrate(opsched_ctx *ctx, devices_args *a)
{
    const char *db = a->db, *math = a->math, *backend = a->backend;
    int device = a->device;
    int want[OPSCHED_MATH_COUNT];
    if (!parse_math_list(math ? math : "fp32,tf32,fp16,bf16", want)) return TOOL_EXIT_USAGE;
    if (device >= 0 && !backend)
        return tool_usage_error("devices", "--device needs --backend");
    int known = backend == NULL;
    for (int b = 0; b < opsched_backend_count(); b++)
        if (backend && strcmp(backend, opsched_backend_name(b)) == 0) known = 1;
    if (!known) return tool_usage_error("devices", "this build has no backend '%s'", backend);
    opsched_store *s = NULL;
    opsched_status st;
    if (db && (st = opsched_store_open(ctx, db, OPSCHED_STORE_READ_WRITE, &s)) != OPSCHED_OK)
        return tool_fail(ctx, st, db);
    if (a->fmt == TOOL_FMT_TABLE)
        printf("%-6s %-28s %-5s  %10s  %10s  %10s  %10s  %10s\n", "", "device", "math", "TFLOP/s",
               "GB/s", "launch us", "node us", "idle W");
    int failures = 0, devices = 0;
    for (int b = 0; b < opsched_backend_count(); b++) {
        const char *name = opsched_backend_name(b);
        if (backend && strcmp(backend, name) != 0) continue;
        int n = 0;
        if (opsched_device_count(ctx, name, &n) != OPSCHED_OK) {
            opsched_ctx_clear_error(ctx);
            continue;
        }
        for (int i = 0; i < n; i++) {
            if (device >= 0 && i != device) continue;
            opsched_device *dev = NULL;
            if ((st = opsched_device_open(ctx, name, i, &dev)) != OPSCHED_OK) {
                tool_fail(ctx, st, "open device");
                failures++;
                continue;
            }
            devices++;
            failures += calibrate_device(ctx, a, dev, want, s);
            opsched_device_close(dev);
        }
    }
    opsched_store_close(s);
    if (devices == 0) {
        fprintf(stderr, "opsched: no device to calibrate\n");
        return TOOL_EXIT_FAIL;
    }
    if (db && failures == 0) {
        if (a->fmt == TOOL_FMT_TABLE) printf("stored in %s\n", db);
        else fprintf(stderr, "opsched devices: stored in %s\n", db);
    }
    return failures ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
}

static const char device_csv_header[] =
    "backend,index,name,uuid,pci_bus_id,driver,runtime,libraries,compute_capability,cores,"
    "memory_bytes,l2_bytes,power,energy,power_limit_w";

/* A device as a CSV row or a JSON object. */
static void device_row(devices_args *a, opsched_device *dev, const opsched_device_info *di)
{
    opsched_power_sample ps;
    if (opsched_device_power(dev, &ps) != OPSCHED_OK) ps.power_w = NAN;
    if (a->fmt == TOOL_FMT_CSV) {
        const char *texts[] = {di->name, di->uuid, di->pci_bus_id, di->driver_version,
                               di->runtime_version, di->library_versions};
        if (a->rows++ == 0 && a->csv_st == OPSCHED_OK)
            a->csv_st = opsched_csv_header(a->w, device_csv_header);
        if (a->csv_st != OPSCHED_OK) return;
        opsched_csv_str(a->w, di->backend);
        opsched_csv_int(a->w, di->index);
        for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
            opsched_csv_str(a->w, texts[i]);
        if (di->cc_major) {
            char cc[32];
            snprintf(cc, sizeof(cc), "%d.%d", di->cc_major, di->cc_minor);
            opsched_csv_str(a->w, cc);
        } else {
            opsched_csv_empty(a->w);
        }
        opsched_csv_int(a->w, di->sm_count);
        opsched_csv_int(a->w, di->memory_bytes);
        opsched_csv_int(a->w, di->l2_bytes);
        opsched_csv_int(a->w, di->has_power);
        opsched_csv_int(a->w, di->has_energy);
        opsched_csv_double(a->w, di->power_limit_w, "%.6g");
        a->csv_st = opsched_csv_end_row(a->w);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "backend", di->backend);
    cJSON_AddNumberToObject(o, "index", di->index);
    cJSON_AddStringToObject(o, "name", di->name);
    cJSON_AddStringToObject(o, "uuid", di->uuid);
    cJSON_AddStringToObject(o, "pci_bus_id", di->pci_bus_id);
    cJSON_AddStringToObject(o, "driver", di->driver_version);
    cJSON_AddStringToObject(o, "runtime", di->runtime_version);
    cJSON_AddStringToObject(o, "libraries", di->library_versions);
    if (di->cc_major) {
        char cc[16];
        snprintf(cc, sizeof(cc), "%d.%d", di->cc_major, di->cc_minor);
        cJSON_AddStringToObject(o, "compute_capability", cc);
    }
    cJSON_AddNumberToObject(o, "cores", di->sm_count);
    cJSON_AddNumberToObject(o, "memory_bytes", (double)di->memory_bytes);
    cJSON_AddNumberToObject(o, "l2_bytes", (double)di->l2_bytes);
    cJSON_AddBoolToObject(o, "power", di->has_power);
    cJSON_AddBoolToObject(o, "energy", di->has_energy);
    if (di->power_limit_w > 0) cJSON_AddNumberToObject(o, "power_limit_w", di->power_limit_w);
    if (!isnan(ps.power_w)) cJSON_AddNumberToObject(o, "power_now_w", ps.power_w);
    cJSON_AddItemToArray(a->json, o);
}

static void print_device(devices_args *a, opsched_device *dev)
{
    opsched_device_info di;
    if (opsched_device_info_get(dev, &di) != OPSCHED_OK) return;
    if (a->fmt != TOOL_FMT_TABLE) {
        device_row(a, dev, &di);
        return;
    }
    char mem[32], l2[32];
    printf("%s:%d  %s\n", di.backend, di.index, di.name);
    if (di.uuid[0]) printf("    uuid          %s\n", di.uuid);
    if (di.pci_bus_id[0]) printf("    pci bus id    %s\n", di.pci_bus_id);
    if (di.cc_major) printf("    compute cap.  %d.%d\n", di.cc_major, di.cc_minor);
    printf("    %-13s %d\n", strcmp(di.backend, "cpu") == 0 ? "cores" : "SMs", di.sm_count);
    printf("    memory        %sB\n", tool_human((double)di.memory_bytes, mem, sizeof(mem)));
    printf("    cache (L2/LL) %sB\n", tool_human((double)di.l2_bytes, l2, sizeof(l2)));
    if (di.driver_version[0]) printf("    driver        %s\n", di.driver_version);
    if (di.runtime_version[0]) printf("    runtime       %s\n", di.runtime_version);
    if (di.library_versions[0]) printf("    libraries     %s\n", di.library_versions);
    printf("    power         %s\n", di.has_power ? "readable" : "not available");
    printf("    energy        %s\n", di.has_energy ? "counter readable" : "not available");
    if (di.power_limit_w > 0) printf("    power limit   %.0f W\n", di.power_limit_w);
    opsched_power_sample ps;
    if (opsched_device_power(dev, &ps) == OPSCHED_OK) {
        if (!isnan(ps.power_w)) printf("    power now     %.1f W\n", ps.power_w);
        if (!isnan(ps.temperature_c)) printf("    temperature   %.0f C\n", ps.temperature_c);
        if (!isnan(ps.sm_clock_mhz)) printf("    SM clock      %.0f MHz\n", ps.sm_clock_mhz);
    }
}

/* The calibration or the listing; a's JSON array or CSV writer is open. */
static int devices_main(opsched_ctx *ctx, devices_args *a)
{
    const char *check = a->check;
    int rc;
    if (a->calibrate) {
        if (check) {
            cJSON_Delete(a->json);
            return tool_usage_error("devices", "--check and --calibrate do not combine");
        }
        rc = run_calibrate(ctx, a);
        if (a->csv_st != OPSCHED_OK) return tool_fail(ctx, a->csv_st, "CSV");
        int jrc = tool_print_json(a->json);
        return rc != TOOL_EXIT_OK ? rc : jrc;
    }
    if (a->db || a->math || a->backend || a->device >= 0) {
        cJSON_Delete(a->json);
        return tool_usage_error("devices", "--db, --math, --backend and --device go with --calibrate");
    }
    int check_found = 0, check_known = check == NULL;
    for (int b = 0; b < opsched_backend_count(); b++) {
        const char *name = opsched_backend_name(b);
        int n = 0;
        opsched_status st = opsched_device_count(ctx, name, &n);
        if (check && strcmp(check, name) == 0) check_known = 1;
        FILE *note = a->fmt == TOOL_FMT_TABLE ? stdout : stderr;
        if (st != OPSCHED_OK) {
            fprintf(note, "%s: unavailable: %s\n", name, opsched_ctx_last_error(ctx));
            continue;
        }
        if (n == 0) fprintf(note, "%s: no devices\n", name);
        for (int i = 0; i < n; i++) {
            opsched_device *dev = NULL;
            if (opsched_device_open(ctx, name, i, &dev) != OPSCHED_OK) {
                fprintf(note, "%s:%d  cannot open: %s\n", name, i, opsched_ctx_last_error(ctx));
                continue;
            }
            print_device(a, dev);
            opsched_device_close(dev);
        }
        if (check && strcmp(check, name) == 0 && n > 0) check_found = 1;
    }
    if (a->fmt == TOOL_FMT_CSV && a->rows == 0 && a->csv_st == OPSCHED_OK)
        a->csv_st = opsched_csv_header(a->w, device_csv_header);
    if (a->csv_st != OPSCHED_OK) return tool_fail(ctx, a->csv_st, "CSV");
    if ((rc = tool_print_json(a->json)) != TOOL_EXIT_OK) return rc;
    if (!check_known) return tool_usage_error("devices", "this build has no backend '%s'", check);
    if (check && !check_found) {
        fprintf(stderr, "opsched: no %s device\n", check);
        return TOOL_EXIT_FAIL;
    }
    return TOOL_EXIT_OK;
}

int cmd_devices(opsched_ctx *ctx, int argc, char **argv)
{
    devices_args a = {.device = -1, .fmt = TOOL_FMT_TABLE};
    const tool_optgroup groups[] = {{"options", devices_opts, devices_opt, &a},
                                    {NULL, tool_format_optlist, tool_format_opt, &a.fmt}};
    const tool_cli cli = {"devices", devices_help, NULL, groups, 2, 0, NULL};
    const char *pos[1];
    int n_pos = 0;
    int rc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (rc != TOOL_EXIT_OK) return rc == TOOL_ARGS_HELP ? TOOL_EXIT_OK : rc;
    if (a.fmt == TOOL_FMT_JSON && !(a.json = cJSON_CreateArray()))
        return tool_fail(ctx, OPSCHED_ERR_NOMEM, "devices");
    if (a.fmt == TOOL_FMT_CSV) {
        opsched_status st = opsched_csv_writer_create(ctx, stdout, &a.w);
        if (st != OPSCHED_OK) return tool_fail(ctx, st, "CSV");
    }
    rc = devices_main(ctx, &a);
    opsched_csv_writer_free(a.w);
    return rc;
}
