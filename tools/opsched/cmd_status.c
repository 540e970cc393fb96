/*
 * cmd_status.c - `opsched status DB`: what a measurement database
 * holds, the way a sweep's check-status script would tell it.
 */
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "args.h"

static const char status_help[] =
    "usage: opsched status DB [--format table|csv|json]\n"
    "       opsched status --db DB\n\n"
    "Counts the devices, runs, configurations and measurements of a database,\n"
    "measurements by status (ok, unsupported, out of memory, error) and by device\n"
    "and operator, every run (status, shard, rows, duration, command; a run left\n"
    "\"running\" by a killed process resumes when its command runs again), and\n"
    "the networks profiled: model, batch, settings and the input sizes done.\n"
    "--format csv writes one row per (device, operator, status) count; json all\n"
    "of it.\n";

static const tool_opt db_opt[] = {
    {"db", 0, "FILE", "the database (or give it as the argument)", 0}, {NULL, 0, NULL, NULL, 0}};

static int set_string(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    (void)cmd;
    (void)o;
    *(const char **)dest = v;
    return TOOL_EXIT_OK;
}

/* What the walks print or collect. */
typedef struct status_out {
    tool_format fmt;
    int rows;
    cJSON *array;          /* json */
    opsched_csv_writer *w; /* csv */
    opsched_status csv_st; /* csv: the first writer error */
} status_out;

static void print_count(const opsched_measurement_count *r, void *user)
{
    status_out *so = user;
    if (so->fmt == TOOL_FMT_JSON) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "device", r->device);
        cJSON_AddStringToObject(o, "op", r->op);
        cJSON_AddStringToObject(o, "status", r->status);
        cJSON_AddNumberToObject(o, "configs", (double)r->configs);
        cJSON_AddNumberToObject(o, "rows", (double)r->measurements);
        cJSON_AddItemToArray(so->array, o);
        return;
    }
    if (so->fmt == TOOL_FMT_CSV) {
        so->rows++;
        if (so->csv_st != OPSCHED_OK) return;
        opsched_csv_str(so->w, r->device);
        opsched_csv_str(so->w, r->op);
        opsched_csv_str(so->w, r->status);
        opsched_csv_int(so->w, r->configs);
        opsched_csv_int(so->w, r->measurements);
        so->csv_st = opsched_csv_end_row(so->w);
        return;
    }
    int *rows = &so->rows;
    if ((*rows)++ == 0)
        printf("  by device, operator and status:\n    %-36s %-14s %-12s %8s %8s\n", "device",
               "op", "status", "configs", "rows");
    printf("    %-36s %-14s %-12s %8lld %8lld\n", r->device, r->op, r->status,
           (long long)r->configs, (long long)r->measurements);
}

static void print_run(const opsched_run_summary *r, void *user)
{
    status_out *so = user;
    if (so->fmt == TOOL_FMT_JSON) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", (double)r->id);
        cJSON_AddStringToObject(o, "status", r->status);
        cJSON_AddNumberToObject(o, "shard_index", r->shard_index);
        cJSON_AddNumberToObject(o, "shard_count", r->shard_count);
        cJSON_AddNumberToObject(o, "rows", (double)r->measurements);
        cJSON_AddNumberToObject(o, "networks", (double)r->network_rows);
        cJSON_AddNumberToObject(o, "started_at", r->started_at);
        cJSON_AddNumberToObject(o, "ended_at", r->ended_at);
        cJSON_AddStringToObject(o, "command", r->command);
        cJSON_AddItemToArray(so->array, o);
        return;
    }
    if (so->fmt == TOOL_FMT_CSV) return;
    int *rows = &so->rows;
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
    status_out *so = user;
    if (so->fmt == TOOL_FMT_JSON) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "model", r->model);
        cJSON_AddNumberToObject(o, "batch", (double)r->batch);
        cJSON_AddStringToObject(o, "algorithm", r->algo_policy);
        cJSON_AddStringToObject(o, "math", r->math);
        cJSON_AddStringToObject(o, "layout", r->layout);
        cJSON_AddNumberToObject(o, "sizes", (double)r->sizes);
        cJSON_AddNumberToObject(o, "min_size", (double)r->min_size);
        cJSON_AddNumberToObject(o, "max_size", (double)r->max_size);
        cJSON_AddStringToObject(o, "device", r->device);
        cJSON_AddItemToArray(so->array, o);
        return;
    }
    if (so->fmt == TOOL_FMT_CSV) return;
    int *rows = &so->rows;
    if ((*rows)++ == 0)
        printf("  network runs:\n    %-20s %6s %-12s %-5s %-5s %6s %-11s %s\n", "model", "batch",
               "algorithm", "math", "layout", "sizes", "range", "device");
    char range[48];
    snprintf(range, sizeof(range), "%lld-%lld", (long long)r->min_size, (long long)r->max_size);
    printf("    %-20s %6lld %-12s %-5s %-5s %6lld %-11s %s\n", r->model, (long long)r->batch,
           r->algo_policy, r->math, r->layout, (long long)r->sizes, range, r->device);
}

typedef struct settings_seen {
    int rows;
    int64_t unstable, ok;
} settings_seen;

static void print_settings(const opsched_settings_count *r, void *user)
{
    settings_seen *seen = user;
    if (seen->rows++ == 0)
        printf("  ok measurements by settings:\n    %-36s %-5s %-6s %-12s %-5s %8s %8s %8s\n",
               "device", "math", "layout", "algo", "cache", "configs", "rows", "unstable");
    printf("    %-36s %-5s %-6s %-12s %-5s %8lld %8lld %8lld\n", r->device, r->math, r->layout,
           r->algo_policy, r->cache, (long long)r->configs, (long long)r->measurements,
           (long long)r->unstable);
    seen->unstable += r->unstable;
    seen->ok += r->measurements;
}

/* --format csv: the counts by device, operator and status; json: all. */
static int print_other(opsched_ctx *ctx, opsched_store *store, const char *db,
                       const opsched_store_summary *s, tool_format fmt)
{
    status_out counts = {.fmt = fmt}, runs = {.fmt = fmt}, nets = {.fmt = fmt};
    cJSON *root = NULL;
    if (fmt == TOOL_FMT_JSON) {
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "database", db);
        cJSON_AddNumberToObject(root, "schema", opsched_store_schema_version());
        cJSON_AddNumberToObject(root, "devices", (double)s->devices);
        cJSON_AddNumberToObject(root, "runs", (double)s->runs);
        cJSON_AddNumberToObject(root, "configurations", (double)s->configs);
        cJSON *m = cJSON_AddObjectToObject(root, "measurements");
        cJSON_AddNumberToObject(m, "total", (double)s->measurements);
        cJSON_AddNumberToObject(m, "ok", (double)s->ok);
        cJSON_AddNumberToObject(m, "unsupported", (double)s->unsupported);
        cJSON_AddNumberToObject(m, "oom", (double)s->oom);
        cJSON_AddNumberToObject(m, "error", (double)s->errors);
        counts.array = cJSON_AddArrayToObject(root, "counts");
        runs.array = cJSON_AddArrayToObject(root, "run_list");
        nets.array = cJSON_AddArrayToObject(root, "network_runs");
    }
    if (fmt == TOOL_FMT_CSV) {
        counts.csv_st = opsched_csv_writer_create(ctx, stdout, &counts.w);
        if (counts.csv_st == OPSCHED_OK)
            counts.csv_st = opsched_csv_header(counts.w, "device,op,status,configs,rows");
        if (counts.csv_st != OPSCHED_OK) {
            opsched_csv_writer_free(counts.w);
            opsched_store_close(store);
            return tool_fail(ctx, counts.csv_st, "CSV");
        }
    }
    opsched_status st = opsched_store_measurement_counts(store, print_count, &counts);
    if (st == OPSCHED_OK && root) st = opsched_store_runs(store, print_run, &runs);
    if (st == OPSCHED_OK && root) st = opsched_store_network_summaries(store, print_network, &nets);
    opsched_csv_writer_free(counts.w);
    if (st != OPSCHED_OK) {
        cJSON_Delete(root);
        int rc = tool_fail(ctx, st, db);
        opsched_store_close(store);
        return rc;
    }
    opsched_store_close(store);
    if (counts.csv_st != OPSCHED_OK) return tool_fail(ctx, counts.csv_st, "CSV");
    return tool_print_json(root);
}

int cmd_status(opsched_ctx *ctx, int argc, char **argv)
{
    const char *db = NULL;
    tool_format fmt = TOOL_FMT_TABLE;
    const tool_optgroup groups[] = {{"options", db_opt, set_string, &db},
                                    {NULL, tool_format_optlist, tool_format_opt, &fmt}};
    const tool_cli cli = {"status", status_help, NULL, groups, 2, 1, "database"};
    const char *pos[1];
    int n_pos = 0;
    int rc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (rc != TOOL_EXIT_OK) return rc == TOOL_ARGS_HELP ? TOOL_EXIT_OK : rc;
    if (n_pos && db && strcmp(db, pos[0]) != 0)
        return tool_usage_error("status", "one database at a time ('%s' or '%s'?)", db, pos[0]);
    if (n_pos) db = pos[0];
    if (!db) return tool_usage_error("status", "which database? opsched status DB (or --db DB)");
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
    if (fmt != TOOL_FMT_TABLE) return print_other(ctx, store, db, &s, fmt);
    printf("%s (schema %d)\n", db, opsched_store_schema_version());
    printf("  devices         %lld\n", (long long)s.devices);
    printf("  runs            %lld\n", (long long)s.runs);
    printf("  configurations  %lld\n", (long long)s.configs);
    printf("  measurements    %lld\n", (long long)s.measurements);
    printf("    ok            %lld\n", (long long)s.ok);
    printf("    unsupported   %lld\n", (long long)s.unsupported);
    printf("    out of memory %lld\n", (long long)s.oom);
    printf("    error         %lld\n", (long long)s.errors);
    status_out counts = {.fmt = fmt}, runs = {.fmt = fmt}, nets = {.fmt = fmt};
    settings_seen seen = {0};
    st = opsched_store_measurement_counts(store, print_count, &counts);
    if (st == OPSCHED_OK) st = opsched_store_settings_counts(store, print_settings, &seen);
    if (st == OPSCHED_OK) st = opsched_store_runs(store, print_run, &runs);
    if (st == OPSCHED_OK) st = opsched_store_network_summaries(store, print_network, &nets);
    opsched_store_close(store);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, db);
    if (!nets.rows) printf("  network runs    0\n");
    if (seen.unstable > 0) {
        char msg[200];
        fprintf(stderr, "opsched: warning: %s (%lld of the %lld ok measurements in %s)\n",
                opsched_unstable_message(seen.unstable, msg, sizeof(msg)),
                (long long)seen.unstable, (long long)seen.ok, db);
    }
    return TOOL_EXIT_OK;
}
