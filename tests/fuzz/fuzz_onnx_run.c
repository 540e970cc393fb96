/*
 * fuzz_onnx_run.c - libFuzzer target for the ONNX importer and the CPU
 * backend together.
 *
 * Each input is loaded from memory with its weights (no folder, so no
 * external file may be read).  A graph that loads and is small (the limits
 * below keep one input to milliseconds) is then planned and run on the CPU
 * backend with random inputs, and its outputs are read back in their own
 * data types.  The importer's fuzzer (fuzz_onnx) finds what a file can do
 * to the parser; this one finds what attributes and shapes the parser
 * accepts can do to the kernels: every operator kind, every data type and
 * every attribute combination the importer lets through reaches a kernel
 * here.  A planning or run failure is a fine answer; a crash, a sanitizer
 * report or a leak is not.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "opsched/exec.h"
#include "opsched/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What one input may cost: enough for every operator on small tensors. */
enum {
    MAX_NODES = 256,
    MAX_BYTES = 8 << 20,      /* read + written over the whole graph */
    MAX_WEIGHTS = 4 << 20,
    MAX_ACTIVATIONS = 4 << 20
};
static const int64_t MAX_FLOPS = 20 * 1000 * 1000;

static opsched_ctx *dev_ctx;
static opsched_device *dev;

/* The device is opened once: oneDNN's set-up is what would otherwise cost
 * the most per input.  It lives until the process ends. */
static opsched_device *cpu(void)
{
    static int tried;
    if (!tried) {
        tried = 1;
        if (opsched_ctx_create(&dev_ctx) == OPSCHED_OK &&
            opsched_device_open(dev_ctx, "cpu", 0, &dev) != OPSCHED_OK)
            dev = NULL;
    }
    return dev;
}

static int small_enough(const opsched_graph *g)
{
    opsched_graph_totals t;
    if (opsched_graph_totals_compute(g, &t) != OPSCHED_OK) return 0;
    return t.n_nodes <= MAX_NODES && t.flops <= MAX_FLOPS &&
           t.bytes_read + t.bytes_written <= MAX_BYTES && t.weight_bytes <= MAX_WEIGHTS &&
           t.peak_activation_bytes <= MAX_ACTIVATIONS;
}

static void run(opsched_device *d, const opsched_graph *g)
{
    opsched_exec_options o = {0};
    o.algo_fallback = "heuristic";
    o.seed = 1;
    opsched_executor *ex = NULL;
    if (opsched_executor_create(d, g, NULL, &o, &ex) != OPSCHED_OK) return;
    if (opsched_executor_randomize_inputs(ex, 7) == OPSCHED_OK &&
        opsched_executor_run(ex) == OPSCHED_OK && opsched_device_sync(d) == OPSCHED_OK) {
        for (int i = 0; i < opsched_graph_num_outputs(g); i++) {
            size_t n = opsched_executor_output_numel(ex, i);
            if (!n) continue;
            /* Read every output as float: the executor converts from the
             * tensor's own type, which is what is being tested. */
            float *buf = malloc(n * sizeof(*buf));
            if (!buf) break;
            (void)opsched_executor_get_output_data(ex, i, OPSCHED_F32, buf, n);
            free(buf);
        }
    }
    opsched_executor_free(ex);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    opsched_device *d = cpu();
    if (!d) return 0;
    opsched_ctx *ctx = NULL;
    if (opsched_ctx_create(&ctx) != OPSCHED_OK) return 0;
    opsched_onnx_options opts = {.load_weights = 1};
    opsched_graph *g = NULL;
    if (opsched_onnx_load_buffer(ctx, data, size, NULL, &opts, "fuzz", &g) == OPSCHED_OK &&
        small_enough(g))
        run(d, g);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
    opsched_ctx_clear_error(dev_ctx);
    return 0;
}
