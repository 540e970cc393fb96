/*
 * cmd_devices.c - `opsched devices`: every device of every backend in this
 * build, with versions, size, and whether power and energy can be read.
 */
#include <getopt.h>
#include <math.h>
#include <string.h>

#include "tool.h"

static const char devices_help[] =
    "usage: opsched devices [--check BACKEND]\n"
    "\n"
    "Lists the devices of each backend in this build (cuda, cpu): name, UUID,\n"
    "PCI bus id, driver, CUDA and library versions, SMs or cores, memory, cache,\n"
    "and whether power and the energy counter can be read.\n"
    "\n"
    "  --check BACKEND   exit 1 unless BACKEND has at least one device\n";

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
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *check = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': check = optarg; break;
        case 'h': fputs(devices_help, stdout); return TOOL_EXIT_OK;
        default: return tool_usage_error("devices", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc) return tool_usage_error("devices", "unexpected argument '%s'", argv[optind]);
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
