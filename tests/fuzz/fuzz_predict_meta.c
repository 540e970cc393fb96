/*
 * fuzz_predict_meta.c - libFuzzer target for the predictor's saved
 * metadata (the .meta.json file in <db>.models, src/predict/models.c): the file is
 * opsched's own, but a damaged or hand-edited one must only ever make the
 * models stale (and retrained), never crash or read out of bounds.
 *
 * The predictor is set up as one over a database of a fixed device,
 * settings and fingerprint (those of the seeds in
 * tests/fuzz/corpus/predict_meta/, so mutations reach the model list);
 * its models directory does not exist, so a model marked trained fails to
 * load and makes the metadata stale, as a missing file would.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "predict/predict_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static opsched_predictor p; /* large: not on the stack */
    opsched_ctx *ctx = NULL;
    if (opsched_ctx_create(&ctx) != OPSCHED_OK) return 0;
    memset(&p, 0, sizeof(p));
    p.ctx = ctx;
    char algo[] = "heuristic", dir[] = "/nonexistent/opsched-fuzz.models";
    p.algo_policy = algo;
    p.models_dir = dir;
    snprintf(p.math, sizeof(p.math), "tf32");
    snprintf(p.layout, sizeof(p.layout), "nhwc");
    snprintf(p.cache, sizeof(p.cache), "hot");
    snprintf(p.info.device.uuid, sizeof(p.info.device.uuid), "GPU-fuzz");
    p.info.fingerprint.count = 100;
    p.info.fingerprint.max_id = 250;
    p.info.fingerprint.max_created_at = 1764000000.5;
    p.power_model = p.host_model = -1;
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++)
        p.family_model[f] = -1;
    int current = 0;
    char reason[128] = "";
    opsched_status st =
        os_predict_read_meta(&p, (const char *)data, size, &current, reason, sizeof(reason));
    /* What it leaves must be usable: indices within the model list. */
    if (p.n_models < 0 || p.n_models > OS_MAX_MODELS) __builtin_trap();
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++)
        if (p.family_model[f] < -1 || p.family_model[f] >= p.n_models) __builtin_trap();
    if (p.power_model < -1 || p.power_model >= p.n_models) __builtin_trap();
    if (p.host_model < -1 || p.host_model >= p.n_models) __builtin_trap();
    if (st == OPSCHED_OK && !current && !reason[0]) __builtin_trap(); /* stale says why */
    for (int i = 0; i < p.n_models; i++)
        os_xgb_free(p.models[i].booster);
    opsched_ctx_free(ctx);
    return 0;
}
