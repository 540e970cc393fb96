/*
 * cmd_export.c - `opsched export [csv] --db FILE [--op OP] [-o OUT]`: the
 * measurements of a database as CSV, convolutions in the column layout
 * that existing latency datasets use; --collectives: the collectives
 * opsched commbench measured.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"

static const char export_help[] =
    "usage: opsched export [csv] --db FILE [--op OP] [-o OUT.csv] [--format csv]\n\n"
    "Writes every measurement as CSV (to stdout unless -o): Batch size, In Channels,\n"
    "Out Channels, Kernel Size, Stride, Width, Height, Flops, Latency, Latency Type,\n"
    "then the operator, algorithm, settings, statistics, energy, device and run.\n"
    "The format may be given as the argument or with --format; csv is the only one.\n"
    "--collectives writes the NCCL collectives of opsched commbench instead: one row\n"
    "per collective, dtype, size and rank count, with the times, algorithm and bus\n"
    "bandwidths, the check, the NCCL version, GPUs, topology and environment.\n";

enum { EX_DB, EX_OP, EX_OUT, EX_FORMAT, EX_COLL };

static const tool_opt export_opts[] = {
    {"db", 0, "FILE", "the database", EX_DB},
    {"op", 0, "OP", "keep one operator (conv2d, linear, maxpool, ...)", EX_OP},
    {"output", 'o', "FILE", "write here instead of stdout", EX_OUT},
    {"format", 0, "csv", "the format (csv, the only one)", EX_FORMAT},
    {"collectives", 0, NULL, "the measured collectives (opsched commbench)", EX_COLL},
    {NULL, 0, NULL, NULL, 0}};

typedef struct export_args {
    const char *db, *op, *out, *format;
    int collectives;
} export_args;

static int export_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    export_args *a = dest;
    (void)cmd;
    if (o->id == EX_DB) a->db = v;
    else if (o->id == EX_OP) a->op = v;
    else if (o->id == EX_OUT) a->out = v;
    else if (o->id == EX_COLL) a->collectives = 1;
    else a->format = v;
    return TOOL_EXIT_OK;
}

int cmd_export(opsched_ctx *ctx, int argc, char **argv)
{
    export_args a = {0};
    const tool_optgroup groups[] = {{"options", export_opts, export_opt, &a}};
    const tool_cli cli = {"export", export_help, NULL, groups, 1, 1, "format"};
    const char *pos[1];
    int n_pos = 0;
    int rc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (rc != TOOL_EXIT_OK) return rc == TOOL_ARGS_HELP ? TOOL_EXIT_OK : rc;
    const char *format = a.format, *db = a.db, *op = a.op, *out = a.out;
    if (n_pos && format && strcmp(format, pos[0]) != 0)
        return tool_usage_error("export", "one format at a time ('%s' or '%s'?)", format, pos[0]);
    if (n_pos) format = pos[0];
    if (!format) format = "csv";
    if (strcmp(format, "csv") != 0)
        return tool_usage_error("export", "the format is csv (the only one export writes), not '%s'",
                                format);
    if (!db) return tool_usage_error("export", "from where? --db FILE is required");
    if (a.collectives && op)
        return tool_usage_error("export", "--op names an operator; --collectives has none");
    {
        const char *in[] = {db};
        int crc = tool_check_output("export", out, in, 1);
        if (crc != TOOL_EXIT_OK) return crc;
    }
    struct stat sb;
    if (stat(db, &sb) != 0) {
        fprintf(stderr, "opsched export: %s: no such database\n", db);
        return TOOL_EXIT_FAIL;
    }
    opsched_store *store = NULL;
    FILE *f = stdout;
    opsched_status st = opsched_store_open(ctx, db, OPSCHED_STORE_READ_ONLY, &store);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, db);
    opsched_out o = {0};
    if (out) {
        if ((st = opsched_out_open(ctx, out, "export", 0, &o)) != OPSCHED_OK) {
            opsched_store_close(store);
            return tool_fail(ctx, st, "export");
        }
        f = o.f;
    }
    st = a.collectives ? opsched_store_export_collectives_csv(store, f)
                       : opsched_store_export_csv(store, f, op);
    if (st != OPSCHED_OK) rc = tool_fail(ctx, st, "export");
    /* An export cut short leaves no file that looks complete. */
    if (out) {
        if (rc != TOOL_EXIT_OK)
            opsched_out_abort(&o);
        else if ((st = opsched_out_commit(ctx, &o)) != OPSCHED_OK)
            rc = tool_fail(ctx, st, "export");
    }
    opsched_store_close(store);
    return rc;
}
