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
           "measurements by status (ok, unsupported, out of memory, error) and by device\n"
           "and operator, every run (status, shard, rows, duration, command; a run left\n"
           "\"running\" by a killed process resumes when its command runs again), and\n"
           "the networks profiled: model, batch, settings and the input sizes done.\n");
}

static void print_count(const opsched_measurement_count *r, void *user)
{
    int *rows = user;
    if ((*rows)++ == 0)
        printf("  by device, operator and status:\n    %-36s %-14s %-12s %8s %8s\n", "device",
               "op", "status", "configs", "rows");
    printf("    %-36s %-14s %-12s %8lld %8lld\n", r->device, r->op, r->status,
           (long long)r->configs, (long long)r->measurements);
}

static void print_run(const opsched_run_summary *r, void *user)
{
    int *rows = user;
    if ((*rows)++ == 0)
        printf("  runs:\n    %4s %-12s %-7s %8s %8s %9s  %s\n", "id", "status", "shard", "rows",
               "networks", "minutes", "command");
    char shard[24];
    snprintf(shard, sizeof(shard), "%d/%d", r->shard_index, r->shard_count);
    double minutes = r->ended_at > 0 ? (r->ended_at - r->started_at) / 60.0 : -1;
    char dur[24];
    if (minutes >= 0)
        snprintf(dur, sizeof(dur), "%.1f", minutes);
    else
        snprintf(dur, sizeof(dur), "-");
    /* A run still "running" when nothing runs was killed; its rows are kept. */
    printf("    %4lld %-12s %-7s %8lld %8lld %9s  %.70s\n", (long long)r->id, r->status, shard,
           (long long)r->measurements, (long long)r->network_rows, dur, r->command);
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
    opsched_status st = opsched_store_open(ctx, db, OPSCHED_STORE_READ_ONLY, &store);
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
    int counts = 0, runs = 0, rows = 0;
    st = opsched_store_measurement_counts(store, print_count, &counts);
    if (st == OPSCHED_OK) st = opsched_store_runs(store, print_run, &runs);
    if (st == OPSCHED_OK) st = opsched_store_network_summaries(store, print_network, &rows);
    opsched_store_close(store);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, db);
    if (!rows) printf("  network runs    0\n");
    return TOOL_EXIT_OK;
}
