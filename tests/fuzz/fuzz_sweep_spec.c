/*
 * fuzz_sweep_spec.c - libFuzzer target for the sweep spec parser: any
 * bytes must give a spec or a clean error, never a crash, a leak or an
 * unbounded allocation.
 */
#include <stddef.h>
#include <stdint.h>

#include "opsched/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    opsched_ctx *ctx = NULL;
    opsched_sweep_spec *spec = NULL;
    if (opsched_ctx_create(&ctx) != OPSCHED_OK) return 0;
    if (opsched_sweep_spec_parse(ctx, (const char *)data, size, "fuzz.yml", &spec) == OPSCHED_OK) {
        opsched_sweep_counts c;
        opsched_sweep_spec_counts(spec, &c);
        for (int i = 0; i < opsched_sweep_spec_num_configs(spec); i++)
            (void)opsched_sweep_spec_shard_of(spec, i, 3);
    }
    opsched_sweep_spec_free(spec);
    opsched_ctx_free(ctx);
    return 0;
}
