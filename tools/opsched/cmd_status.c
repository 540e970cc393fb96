/*
 * cmd_status.c - `opsched status --db FILE`: what a measurement database
 * holds, the way a sweep's check-status script would tell it.
 */
#include <string.h>
#include <sys/stat.h>

#include "tool.h"

static void status_help(void)
{
    printf("usage: opsched status --db FILE\n\n"
           "Counts the devices, runs, configurations and measurements of a database,\n"
           "measurements by status (ok, unsupported, out of memory, error), and lists\n"
           "the networks profiled: model, batch, settings and the input sizes done.\n");
}

static void print_network(const opsched_network_summary *r, void *user)
{
    int *rows = user;
    if ((*rows)++ == 0)
        printf("  network runs:\n    %-20s %6s %-12s %-5s %-5s %6s %-11s %s\n", "model", "batch",
               "algorithm", "math", "layout", "sizes", "range", "device");
    char range[48];
    snprintf(range, sizeof(range), "%lld-%lld", (long long)r->min_size, (long long)r->max_size);
    printf("    %-20s %6lld %-12s %-5s %-5s %6lld %-11s %s\n", r->model, (long long)r->batch,
           r->algo_policy, r->math, r->layout, (long long)r->sizes, range, r->device);
}

int cmd_status(opsched_ctx *ctx, int argc, char **argv)
{
    const char *db = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            status_help();
            return TOOL_EXIT_OK;
        }
        if (strcmp(argv[i], "--db") == 0) {
            if (i + 1 >= argc) return tool_usage_error("status", "--db needs a file");
            db = argv[++i];
        } else {
            return tool_usage_error("status", "unknown argument '%s'", argv[i]);
        }
    }
    if (!db) return tool_usage_error("status", "which database? --db FILE is required");
    struct stat sb;
    if (stat(db, &sb) != 0) {
        fprintf(stderr, "opsched status: %s: no such database\n", db);
        return TOOL_EXIT_FAIL;
    }
    opsched_store *store = NULL;
    opsched_store_summary s;
    opsched_status st = opsched_store_open(ctx, db, &store);
    if (st == OPSCHED_OK) st = opsched_store_summary_get(store, &s);
    if (st != OPSCHED_OK) {
        opsched_store_close(store);
        return tool_fail(ctx, st, db);
    }
    printf("%s (schema %d)\n", db, opsched_store_schema_version());
    printf("  devices         %lld\n", (long long)s.devices);
    printf("  runs            %lld\n", (long long)s.runs);
    printf("  configurations  %lld\n", (long long)s.configs);
    printf("  measurements    %lld\n", (long long)s.measurements);
    printf("    ok            %lld\n", (long long)s.ok);
    printf("    unsupported   %lld\n", (long long)s.unsupported);
    printf("    out of memory %lld\n", (long long)s.oom);
    printf("    error         %lld\n", (long long)s.errors);
    int rows = 0;
    st = opsched_store_network_summaries(store, print_network, &rows);
    opsched_store_close(store);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, db);
    if (!rows) printf("  network runs    0\n");
    return TOOL_EXIT_OK;
}
