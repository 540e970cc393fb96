/*
 * cmd_devices.c - `opsched devices`: every device of every backend in this
 * build, with versions, size, and whether power and energy can be read;
 * with --calibrate, each device's peak FLOP rate, bandwidth, launch and
 * graph-node overheads and idle power per math mode, stored with --db.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tool.h"

static const char devices_help[] =
    "usage: opsched devices [--check BACKEND]\n"
    "       opsched devices --calibrate [--db FILE] [--math LIST] [--backend B] [--device N]\n"
    "\n"
    "Lists the devices of each backend in this build (cuda, cpu): name, UUID,\n"
    "PCI bus id, driver, CUDA and library versions, SMs or cores, memory, cache,\n"
    "and whether power and the energy counter can be read.\n"
    "\n"
    "  --check BACKEND   exit 1 unless BACKEND has at least one device\n"
    "\n"
    "--calibrate measures each device (or the one --backend/--device name) under\n"
    "each math mode: peak FLOP rate (best of large GEMMs), memory bandwidth (a\n"
    "large element-wise Add), host time to enqueue one small launch, device time\n"
    "per node of a replayed CUDA graph of tiny kernels, and idle power.  Math\n"
    "modes a device cannot run are skipped.  The predictor reads these from the\n"
    "database given with --db.\n"
    "\n"
    "  --calibrate       measure instead of listing\n"
    "  --db FILE         store the calibrations in this database\n"
    "  --math LIST       math modes, comma-separated (default fp32,tf32,fp16,bf16)\n"
    "  --backend B       only this backend (cuda, cpu)\n"
    "  --device N        only device N of --backend\n";

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

/* Calibrates one device under each wanted math mode; stores into s when
 * not NULL.  Returns the number of failures (unsupported modes are not). */
static int calibrate_device(opsched_ctx *ctx, opsched_device *dev, const int *want,
                            opsched_store *s)
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
        printf("%-6s %-28.28s %-5s", di.backend, di.name, opsched_math_name((opsched_math)m));
        if (st == OPSCHED_ERR_UNSUPPORTED) {
            printf("  not supported: %s\n", opsched_ctx_last_error(ctx));
            opsched_ctx_clear_error(ctx);
            continue;
        }
        if (st != OPSCHED_OK) {
            printf("  failed\n");
            tool_fail(ctx, st, "calibrate");
            failures++;
            continue;
        }
        print_value(c.peak_flops, 1e12, "  %10.2f");
        print_value(c.bandwidth, 1e9, "  %10.0f");
        print_value(c.launch_us, 1, "  %10.2f");
        print_value(c.graph_node_us, 1, "  %10.2f");
        print_value(c.idle_power_w, 1, "  %10.1f");
        printf("\n");
        fflush(stdout);
        if (s && (st = opsched_store_calibration_put(s, device_id, &c)) != OPSCHED_OK) {
            tool_fail(ctx, st, "store calibration");
            failures++;
        }
    }
    return failures;
}

static int run_calibrate(opsched_ctx *ctx, const char *db, const char *math, const char *backend,
                         int device)
{
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
    if (db && (st = opsched_store_open(ctx, db, OPSCHED_STORE_READ_WRITE, &s)) != OPSCHED_OK) return tool_fail(ctx, st, db);
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
            failures += calibrate_device(ctx, dev, want, s);
            opsched_device_close(dev);
        }
    }
    opsched_store_close(s);
    if (devices == 0) {
        fprintf(stderr, "opsched: no device to calibrate\n");
        return TOOL_EXIT_FAIL;
    }
    if (db && failures == 0) printf("stored in %s\n", db);
    return failures ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
}

static void print_device(opsched_device *dev)
{
    opsched_device_info di;
    if (opsched_device_info_get(dev, &di) != OPSCHED_OK) return;
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

int cmd_devices(opsched_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"check", required_argument, NULL, 'c'},
                                         {"calibrate", no_argument, NULL, 'C'},
                                         {"db", required_argument, NULL, 'd'},
                                         {"math", required_argument, NULL, 'm'},
                                         {"backend", required_argument, NULL, 'b'},
                                         {"device", required_argument, NULL, 'n'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *check = NULL, *db = NULL, *math = NULL, *backend = NULL;
    int calibrate = 0, device = -1;
    int64_t iv;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': check = optarg; break;
        case 'C': calibrate = 1; break;
        case 'd': db = optarg; break;
        case 'm': math = optarg; break;
        case 'b': backend = optarg; break;
        case 'n':
            if (!tool_parse_int(optarg, 0, 1024, &iv))
                return tool_usage_error("devices", "--device wants an index, got '%s'", optarg);
            device = (int)iv;
            break;
        case 'h': fputs(devices_help, stdout); return TOOL_EXIT_OK;
        default: return tool_usage_error("devices", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc) return tool_usage_error("devices", "unexpected argument '%s'", argv[optind]);
    if (calibrate) {
        if (check) return tool_usage_error("devices", "--check and --calibrate do not combine");
        return run_calibrate(ctx, db, math, backend, device);
    }
    if (db || math || backend || device >= 0)
        return tool_usage_error("devices", "--db, --math, --backend and --device go with --calibrate");
    int check_found = 0, check_known = check == NULL;
    for (int b = 0; b < opsched_backend_count(); b++) {
        const char *name = opsched_backend_name(b);
        int n = 0;
        opsched_status st = opsched_device_count(ctx, name, &n);
        if (check && strcmp(check, name) == 0) check_known = 1;
        if (st != OPSCHED_OK) {
            printf("%s: unavailable: %s\n", name, opsched_ctx_last_error(ctx));
            continue;
        }
        if (n == 0) printf("%s: no devices\n", name);
        for (int i = 0; i < n; i++) {
            opsched_device *dev = NULL;
            if (opsched_device_open(ctx, name, i, &dev) != OPSCHED_OK) {
                printf("%s:%d  cannot open: %s\n", name, i, opsched_ctx_last_error(ctx));
                continue;
            }
            print_device(dev);
            opsched_device_close(dev);
        }
        if (check && strcmp(check, name) == 0 && n > 0) check_found = 1;
    }
    if (!check_known) return tool_usage_error("devices", "this build has no backend '%s'", check);
    if (check && !check_found) {
        fprintf(stderr, "opsched: no %s device\n", check);
        return TOOL_EXIT_FAIL;
    }
    return TOOL_EXIT_OK;
}
