/*
 * util.h - small helpers: growable arrays, string copies, checked arithmetic,
 * the library's reproducible random stream.
 */
#ifndef OS_CORE_UTIL_H
#define OS_CORE_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "core/file.h" /* os_read_file, for the modules that read a whole file */
#include "opsched/core.h"

#define OS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define OS_MIN(a, b) ((a) < (b) ? (a) : (b))
#define OS_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Grows *items (of elem bytes each) so that it holds at least need elements;
 * *cap is updated.  On failure *items is untouched and NOMEM is recorded. */
opsched_status os_grow(opsched_ctx *ctx, void **items, size_t *cap, size_t need, size_t elem);

/* strdup that records NOMEM on ctx; NULL in gives NULL out with OK. */
opsched_status os_strdup(opsched_ctx *ctx, const char *s, char **out);

/* Checked a*b and a+b for non-negative int64; 0 on overflow. */
int os_mul_ok(int64_t a, int64_t b, int64_t *out);
int os_add_ok(int64_t a, int64_t b, int64_t *out);

/* The random stream behind opsched_buffer_fill_random and the executor's
 * weights (splitmix64): the same seed gives the same values everywhere.
 * Value i is a function of the seeded state and i alone, which the CUDA
 * backend's fill kernel (cuk_fill_random) relies on. */
typedef struct os_rng {
    uint64_t state;
} os_rng;

void os_rng_seed(os_rng *r, uint64_t seed);
uint64_t os_rng_next(os_rng *r);
/* The next value as a float, uniform in [-1, 1). */
float os_rng_sym(os_rng *r);

#endif /* OS_CORE_UTIL_H */
