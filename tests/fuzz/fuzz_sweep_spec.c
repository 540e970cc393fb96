/*
 * fuzz_sweep_spec.c - libFuzzer target for the sweep spec parser: any
 * bytes must give a spec or a clean error, never a crash, a leak or an
 * unbounded allocation.  A spec that loads is walked again by an
 * iterator (shard 1 of 3), which must meet what loading counted.
 *
 * Specs are loaded with lower work limits than the library's (the limits'
 * code is the same, the numbers smaller): loading walks every combination,
 * and a million of them take seconds under the fuzzer's instrumentation,
 * which libFuzzer would report as slow units.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opsched/sweep.h"
#include "sweep/sweep_impl.h"

#define FUZZ_MAX_COMBINATIONS 20000
#define FUZZ_MAX_NETWORK_LOADS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    opsched_ctx *ctx = NULL;
    opsched_sweep_spec *spec = NULL;
    if (opsched_ctx_create(&ctx) != OPSCHED_OK) return 0;
    os_sweep_tuning t;
    os_sweep_tuning_default(&t);
    t.max_combinations = FUZZ_MAX_COMBINATIONS;
    t.max_network_loads = FUZZ_MAX_NETWORK_LOADS;
    if (os_sweep_spec_parse_tuned(ctx, (const char *)data, size, "fuzz.yml", &t, &spec) ==
        OPSCHED_OK) {
        opsched_sweep_counts loaded, walked;
        opsched_sweep_iter *it = NULL;
        const opsched_sweep_config *c = NULL;
        opsched_sweep_spec_counts(spec, &loaded);
        int n = 0, whole = 1;
        opsched_status st = opsched_sweep_iter_create(ctx, spec, 1, 3, &it);
        if (st == OPSCHED_OK) {
            /* A large grid is walked in part: the fuzzer's time is better
             * spent on other inputs. */
            while ((st = opsched_sweep_iter_next(it, &c)) == OPSCHED_OK && c) {
                if (c->shard_rank % 3 != 1 || c->index < 0 ||
                    c->index >= opsched_sweep_spec_num_configs(spec))
                    abort();
                if (++n == 2000) {
                    whole = 0;
                    break;
                }
            }
            if (st != OPSCHED_OK) whole = 0; /* out of memory; a file that changed */
            opsched_sweep_iter_counts(it, &walked);
            /* A whole walk counts what loading counted. */
            if (whole && memcmp(&loaded, &walked, sizeof(loaded)) != 0) abort();
            opsched_sweep_iter_free(it);
        }
    }
    opsched_sweep_spec_free(spec);
    opsched_ctx_free(ctx);
    return 0;
}
