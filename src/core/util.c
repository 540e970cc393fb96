/*
 * util.c - growable arrays, string copies, checked arithmetic, the random
 * stream.
 */
#include "core/util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"

opsched_status os_grow(opsched_ctx *ctx, void **items, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return OPSCHED_OK;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2) return OS_NOMEM(ctx);
        ncap *= 2;
    }
    if (elem && ncap > SIZE_MAX / elem) return OS_NOMEM(ctx);
    void *p = realloc(*items, ncap * elem);
    if (!p) return OS_NOMEM(ctx);
    memset((char *)p + *cap * elem, 0, (ncap - *cap) * elem);
    *items = p;
    *cap = ncap;
    return OPSCHED_OK;
}

opsched_status os_strdup(opsched_ctx *ctx, const char *s, char **out)
{
    *out = NULL;
    if (!s) return OPSCHED_OK;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (!p) return OS_NOMEM(ctx);
    memcpy(p, s, n);
    *out = p;
    return OPSCHED_OK;
}

int os_mul_ok(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0) return 0;
    if (a != 0 && b > INT64_MAX / a) return 0;
    *out = a * b;
    return 1;
}

int os_add_ok(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0 || a > INT64_MAX - b) return 0;
    *out = a + b;
    return 1;
}

void os_rng_seed(os_rng *r, uint64_t seed)
{
    r->state = seed * 0x2545f4914f6cdd1dull + 1;
}

uint64_t os_rng_next(os_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float os_rng_sym(os_rng *r)
{
    return (float)((double)(os_rng_next(r) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}
