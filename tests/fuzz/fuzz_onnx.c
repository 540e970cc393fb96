/*
 * fuzz_onnx.c - libFuzzer target for the ONNX importer.
 *
 * Each input is loaded from memory twice, for shapes only and with the
 * weights copied, with no folder (so no external file may be read); a graph
 * that loads has its totals computed.  Everything is freed, so the leak
 * checker sees any leak on an error path.
 */
#include <stddef.h>
#include <stdint.h>

#include "opsched/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    opsched_ctx *ctx = NULL;
    if (opsched_ctx_create(&ctx) != OPSCHED_OK) return 0;
    for (int weights = 0; weights <= 1; weights++) {
        opsched_onnx_options opts = {.load_weights = weights};
        opsched_graph *g = NULL;
        if (opsched_onnx_load_buffer(ctx, data, size, NULL, &opts, "fuzz", &g) == OPSCHED_OK) {
            opsched_graph_totals t;
            (void)opsched_graph_totals_compute(g, &t);
        }
        opsched_graph_free(g);
    }
    opsched_ctx_free(ctx);
    return 0;
}
