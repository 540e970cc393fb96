/*
 * fuzz_sched_json.c - libFuzzer target for the schedule reader
 * (src/sched/json.c) against a fixed graph, googlenet (BatchNormalization
 * folded, batch 1, 224x224: the graph `opsched schedule googlenet` writes
 * for, so the seeds are real schedules, merges included).
 *
 * A schedule that reads must validate, describe, write, and read back from
 * what it wrote; anything else is a bug and stops the run.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opsched/sched.h"
#include "opsched/zoo.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static opsched_ctx *graph_ctx;
static opsched_graph *graph;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    opsched_zoo_options zo = {.batch = 1, .fold_bn = 1};
    if (opsched_ctx_create(&graph_ctx) != OPSCHED_OK ||
        opsched_zoo_build(graph_ctx, "googlenet", &zo, &graph) != OPSCHED_OK)
        __builtin_trap();
    return 0;
}

static void ignore_line(const char *line, void *user)
{
    (void)line;
    (void)user;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    opsched_ctx *ctx = NULL;
    opsched_schedule *s = NULL, *again = NULL;
    char *text = malloc(size + 1), *written = NULL;
    if (!text || opsched_ctx_create(&ctx) != OPSCHED_OK) {
        free(text);
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0';
    if (opsched_schedule_from_json(ctx, graph, text, &s) == OPSCHED_OK) {
        if (opsched_schedule_validate(graph, s) != OPSCHED_OK) __builtin_trap();
        (void)opsched_schedule_describe(s, graph, ignore_line, NULL);
        if (opsched_schedule_to_json(s, graph, &written) == OPSCHED_OK &&
            opsched_schedule_from_json(ctx, graph, written, &again) != OPSCHED_OK)
            __builtin_trap();
    }
    opsched_schedule_free(again);
    opsched_schedule_free(s);
    free(written);
    free(text);
    opsched_ctx_free(ctx);
    return 0;
}
