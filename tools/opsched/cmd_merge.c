/*
 * cmd_merge.c - `opsched merge A.db B.db... -o ALL.db`: the databases of a
 * sweep's shards (or of several machines) into one, deduplicated, every
 * measurement keeping the run it came from.
 */
#include <string.h>
#include <sys/stat.h>

#include "args.h"

static const char merge_help[] =
    "usage: opsched merge A.db B.db... -o ALL.db\n\n"
    "Copies every run, device, configuration and measurement of the sources into\n"
    "ALL.db (created when missing).  Rows already there are not copied again, so\n"
    "merging a file twice, or merging into a file that has some of it, is safe.\n"
    "Each source is copied in one transaction.\n";

static const tool_opt merge_opts[] = {
    {"output", 'o', "FILE", "the database to merge into (required)", 0},
    {NULL, 0, NULL, NULL, 0}};

static int set_out(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    (void)cmd;
    (void)o;
    *(const char **)dest = v;
    return TOOL_EXIT_OK;
}

/* Whether a and b are the same file (both must exist). */
int cmd_merge(opsched_ctx *ctx, int argc, char **argv)
{
    const char *out = NULL;
    const char *srcs[64];
    int n = 0;
    const tool_optgroup groups[] = {{"options", merge_opts, set_out, &out}};
    const tool_cli cli = {"merge", merge_help, NULL, groups, 1, 64, "list of databases"};
    int prc = tool_args_parse(&cli, argc, argv, srcs, &n);
    if (prc != TOOL_EXIT_OK) return prc == TOOL_ARGS_HELP ? TOOL_EXIT_OK : prc;
    if (!out) return tool_usage_error("merge", "where to? -o ALL.db is required");
    if (!n) return tool_usage_error("merge", "which databases? e.g. opsched merge a.db b.db -o all.db");
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (stat(srcs[i], &st) != 0) {
            fprintf(stderr, "opsched merge: %s: no such database\n", srcs[i]);
            return TOOL_EXIT_FAIL;
        }
        if (strcmp(srcs[i], out) == 0)
            return tool_usage_error("merge", "%s is both a source and the output", srcs[i]);
    }
    int crc = tool_check_output("merge", out, srcs, n);
    if (crc != TOOL_EXIT_OK) return crc;
    opsched_store *store = NULL;
    opsched_status s = opsched_store_open(ctx, out, OPSCHED_STORE_READ_WRITE, &store);
    if (s != OPSCHED_OK) return tool_fail(ctx, s, out);
    int rc = TOOL_EXIT_OK;
    opsched_merge_stats total;
    memset(&total, 0, sizeof(total));
    for (int i = 0; i < n; i++) {
        opsched_merge_stats ms;
        s = opsched_store_merge(store, srcs[i], &ms);
        if (s != OPSCHED_OK) {
            rc = tool_fail(ctx, s, srcs[i]);
            break;
        }
        printf("%s: %lld runs, %lld devices, %lld configurations, %lld measurements added "
               "(%lld already there)\n",
               srcs[i], (long long)ms.runs, (long long)ms.devices, (long long)ms.configs,
               (long long)ms.measurements_added, (long long)ms.measurements_skipped);
        if (ms.collectives)
            printf("%s: %lld measured collectives added or replaced\n", srcs[i],
                   (long long)ms.collectives);
        total.measurements_added += ms.measurements_added;
        total.measurements_skipped += ms.measurements_skipped;
    }
    opsched_store_summary sum;
    if (rc == TOOL_EXIT_OK && (s = opsched_store_summary_get(store, &sum)) != OPSCHED_OK)
        rc = tool_fail(ctx, s, out);
    if (rc == TOOL_EXIT_OK)
        printf("%s: %lld measurements added, %lld already there; it now holds %lld runs, "
               "%lld devices, %lld configurations, %lld measurements\n",
               out, (long long)total.measurements_added, (long long)total.measurements_skipped,
               (long long)sum.runs, (long long)sum.devices, (long long)sum.configs,
               (long long)sum.measurements);
    opsched_store_close(store);
    return rc;
}
