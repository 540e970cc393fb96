/*
 * util.h - small helpers: growable arrays, string copies, checked arithmetic.
 */
#ifndef OS_CORE_UTIL_H
#define OS_CORE_UTIL_H

#include <stddef.h>
#include <stdint.h>

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

/* Reads a whole file into a malloc'd buffer (NUL-terminated; size excludes it). */
opsched_status os_read_file(opsched_ctx *ctx, const char *path, char **out, size_t *size);

#endif /* OS_CORE_UTIL_H */
