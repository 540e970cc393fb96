/*
 * util.c - growable arrays, string copies, checked arithmetic, file reading,
 * the random stream.
 */
#include "core/util.h"

#include <errno.h>
#include <stdio.h>
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

opsched_status os_read_file(opsched_ctx *ctx, const char *path, char **out, size_t *size)
{
    opsched_status st = OPSCHED_OK;
    char *buf = NULL;
    *out = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    /* fopen opens a directory for reading; its size is not a length */
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        st = OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: is a directory, not a file", path);
        goto done;
    }
    if (fseek(f, 0, SEEK_END) != 0) {
        st = OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot seek: %s", path, strerror(errno));
        goto done;
    }
    long len = ftell(f);
    if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: not a regular file", path);
        goto done;
    }
    buf = malloc((size_t)len + 1);
    if (!buf) {
        st = OS_NOMEM(ctx);
        goto done;
    }
    if (len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        st = OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: read failed", path);
        goto done;
    }
    buf[len] = '\0';
    *out = buf;
    *size = (size_t)len;
    buf = NULL;
done:
    free(buf);
    fclose(f);
    return st;
}
