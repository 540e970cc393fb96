/*
 * main.c - the opsched command-line tool: dispatch to one subcommand.
 */
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static const tool_cmd commands[] = {
    {"models", "list the built-in networks with their totals", cmd_models},
    {"info", "show a network layer by layer: shapes, FLOPs, parameters, bytes", cmd_info},
    {"devices", "list GPUs and the CPU with versions, memory, power and energy", cmd_devices},
    {"bench", "measure one operator configuration, one row per algorithm", cmd_bench},
    {"sweep", "measure every configuration of a sweep spec into a database", cmd_sweep},
    {"profile", "profile a whole network: latency, layers, energy, numerics", cmd_profile},
    {"merge", "merge measurement databases (shards) into one", cmd_merge},
    {"export", "write a database's measurements as CSV", cmd_export},
    {"status", "count what a measurement database holds", cmd_status},
    {"train-model", "train the learned cost models of a device from its measurements",
     cmd_train_model},
    {"predict", "predict a network's latency, energy and memory from measurements", cmd_predict},
    {"plan", "pick how to train on several GPUs (DDP or FSDP) under a memory limit", cmd_plan},
    {"validate", "predict profiled networks and compare with what was measured", cmd_validate},
    {"schedule", "search an inter-operator schedule (sequential, greedy, IOS)", cmd_schedule},
    {"run", "run schedules on a device: latency, CUDA graph, speed-up, numerics", cmd_run},
    {"commbench", "measure NCCL collectives across GPUs; fit their alpha-beta cost models",
     cmd_commbench},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: opsched [--version] [--help] <command> [<args>]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'opsched <command> --help' describes a command.\n");
}

static void log_to_stderr(opsched_log_level level, const char *msg, void *user)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    (void)user;
    fprintf(stderr, "opsched: %s: %s\n", names[level], msg);
}

/* The level of messages on standard error: OPSCHED_LOG (error, warning,
 * info or debug) when set to one of those, warning otherwise. */
static opsched_log_level log_level(void)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    const char *v = getenv("OPSCHED_LOG");
    for (int i = 0; v && i < 4; i++)
        if (strcmp(v, names[i]) == 0) return (opsched_log_level)i;
    return OPSCHED_LOG_WARN;
}

/* Whatever a command printed must have reached standard output: a full
 * disk or a closed pipe is an error, not a success with lost output.
 * Returns rc, or TOOL_EXIT_FAIL (with one message) when a write failed. */
static int finish_stdout(int rc)
{
    int failed = ferror(stdout) != 0;
    int err = failed ? EIO : 0;
    errno = 0;
    if (fflush(stdout) != 0) {
        failed = 1;
        err = errno ? errno : EIO;
    }
    errno = 0;
    /* EBADF from a stdout that was closed before the start, with nothing
     * written to it, loses nothing. */
    if (fclose(stdout) != 0 && !(errno == EBADF && !failed)) {
        if (!failed) err = errno ? errno : EIO;
        failed = 1;
    }
    if (!failed) return rc;
    fprintf(stderr, "opsched: writing standard output: %s\n", strerror(err));
    return rc == TOOL_EXIT_OK ? TOOL_EXIT_FAIL : rc;
}

static int run_main(int argc, char **argv)
{
    /* A file size limit (ulimit -f) then fails the write, which the store
     * reports and survives, instead of killing the process mid-commit. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return TOOL_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return TOOL_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("opsched %s\n", opsched_version());
        return TOOL_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(argv[1], commands[i].name) != 0) continue;
        opsched_ctx *ctx = NULL;
        if (opsched_ctx_create(&ctx) != OPSCHED_OK) {
            fprintf(stderr, "opsched: out of memory\n");
            return TOOL_EXIT_FAIL;
        }
        opsched_ctx_set_log(ctx, log_to_stderr, NULL, log_level());
        int rc = commands[i].run(ctx, argc - 1, argv + 1);
        opsched_ctx_free(ctx);
        return rc;
    }
    fprintf(stderr, "opsched: '%s' is not a command\n\n", argv[1]);
    usage(stderr);
    return TOOL_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    return finish_stdout(run_main(argc, argv));
}
