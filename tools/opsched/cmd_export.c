/*
 * cmd_export.c - `opsched export csv --db FILE [--op OP] [-o OUT]`: the
 * measurements of a database as CSV, convolutions in the column layout
 * that existing latency datasets use.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "tool.h"

static void export_help(void)
{
    printf("usage: opsched export csv --db FILE [--op OP] [-o OUT.csv]\n\n"
           "Writes every measurement as CSV (to stdout unless -o): Batch size, In Channels,\n"
           "Out Channels, Kernel Size, Stride, Width, Height, Flops, Latency, Latency Type,\n"
           "then the operator, algorithm, settings, statistics, energy, device and run.\n"
           "--op keeps one operator (conv2d, linear, maxpool, ...).\n");
}

int cmd_export(opsched_ctx *ctx, int argc, char **argv)
{
    const char *format = NULL, *db = NULL, *op = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            export_help();
            return TOOL_EXIT_OK;
        }
        if (strcmp(arg, "--db") == 0 || strcmp(arg, "--op") == 0 || strcmp(arg, "-o") == 0 ||
            strcmp(arg, "--output") == 0) {
            if (i + 1 >= argc) return tool_usage_error("export", "%s needs a value", arg);
            const char *val = argv[++i];
            if (strcmp(arg, "--db") == 0) db = val;
            else if (strcmp(arg, "--op") == 0) op = val;
            else out = val;
        } else if (arg[0] == '-' && arg[1]) {
            return tool_usage_error("export", "unknown option '%s'", arg);
        } else if (format) {
            return tool_usage_error("export", "one format at a time ('%s'?)", arg);
        } else {
            format = arg;
        }
    }
    if (!format) return tool_usage_error("export", "which format? e.g. opsched export csv --db results.db");
    if (strcmp(format, "csv") != 0)
        return tool_usage_error("export", "the format is csv, not '%s'", format);
    if (!db) return tool_usage_error("export", "from where? --db FILE is required");
    struct stat sb;
    if (stat(db, &sb) != 0) {
        fprintf(stderr, "opsched export: %s: no such database\n", db);
        return TOOL_EXIT_FAIL;
    }
    opsched_store *store = NULL;
    FILE *f = stdout;
    int rc = TOOL_EXIT_OK;
    opsched_status st = opsched_store_open(ctx, db, OPSCHED_STORE_READ_ONLY, &store);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, db);
    if (out && !(f = fopen(out, "w"))) {
        fprintf(stderr, "opsched export: %s: %s\n", out, strerror(errno));
        opsched_store_close(store);
        return TOOL_EXIT_FAIL;
    }
    st = opsched_store_export_csv(store, f, op);
    if (st != OPSCHED_OK) rc = tool_fail(ctx, st, "export");
    if (out && fclose(f) != 0 && rc == TOOL_EXIT_OK) {
        fprintf(stderr, "opsched export: %s: %s\n", out, strerror(errno));
        rc = TOOL_EXIT_FAIL;
    }
    opsched_store_close(store);
    return rc;
}
