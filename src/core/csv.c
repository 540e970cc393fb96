/*
 * csv.c - the CSV writer behind every CSV opsched writes (opsched/csv.h).
 * A row is built in memory and written whole once its field count is
 * known to be right, so an error leaves no half row in the file.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "opsched/csv.h"

struct opsched_csv_writer {
    opsched_ctx *ctx;
    FILE *f;
    char *row; /* the current row, without its line end */
    size_t len, cap;
    int fields;   /* of the current row */
    int expected; /* of every row; 0: the first row decides */
    int64_t rows;
    int nomem; /* a field could not be added: the row fails */
};

opsched_status opsched_csv_writer_create(opsched_ctx *ctx, FILE *f, opsched_csv_writer **out)
{
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_csv_writer_create: no out");
    *out = NULL;
    if (!f) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_csv_writer_create: no file");
    opsched_csv_writer *w = calloc(1, sizeof(*w));
    if (!w) return OS_NOMEM(ctx);
    w->ctx = ctx;
    w->f = f;
    *out = w;
    return OPSCHED_OK;
}

void opsched_csv_writer_free(opsched_csv_writer *w)
{
    if (!w) return;
    free(w->row);
    free(w);
}

static void put(opsched_csv_writer *w, const char *s, size_t n)
{
    if (w->nomem) return;
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n + 1)
            cap *= 2;
        char *p = realloc(w->row, cap);
        if (!p) {
            w->nomem = 1;
            return;
        }
        w->row = p;
        w->cap = cap;
    }
    memcpy(w->row + w->len, s, n);
    w->len += n;
    w->row[w->len] = '\0';
}

/* The separator before every field but a row's first. */
static void begin_field(opsched_csv_writer *w)
{
    if (w->fields++) put(w, ",", 1);
}

opsched_status opsched_csv_str(opsched_csv_writer *w, const char *s)
{
    if (!w) return OPSCHED_ERR_INVALID_ARG;
    begin_field(w);
    if (!s) return OPSCHED_OK;
    if (!strpbrk(s, ",\"\r\n")) {
        put(w, s, strlen(s));
        return OPSCHED_OK;
    }
    put(w, "\"", 1);
    for (const char *q; (q = strchr(s, '"')); s = q + 1) {
        put(w, s, (size_t)(q - s) + 1);
        put(w, "\"", 1);
    }
    put(w, s, strlen(s));
    put(w, "\"", 1);
    return OPSCHED_OK;
}

opsched_status opsched_csv_int(opsched_csv_writer *w, int64_t v)
{
    char buf[32];
    if (!w) return OPSCHED_ERR_INVALID_ARG;
    int n = snprintf(buf, sizeof(buf), "%lld", (long long)v);
    begin_field(w);
    put(w, buf, (size_t)n);
    return OPSCHED_OK;
}

opsched_status opsched_csv_double(opsched_csv_writer *w, double v, const char *fmt)
{
    char buf[64];
    if (!w) return OPSCHED_ERR_INVALID_ARG;
    if (isnan(v)) return opsched_csv_empty(w);
    if (isinf(v)) return opsched_csv_str(w, v > 0 ? "inf" : "-inf");
    int n = snprintf(buf, sizeof(buf), fmt ? fmt : "%.9g", v);
    if (n < 0 || (size_t)n >= sizeof(buf) || strpbrk(buf, ",\"\r\n"))
        return opsched_csv_str(w, n < 0 ? "" : buf);
    begin_field(w);
    put(w, buf, (size_t)n);
    return OPSCHED_OK;
}

opsched_status opsched_csv_empty(opsched_csv_writer *w)
{
    if (!w) return OPSCHED_ERR_INVALID_ARG;
    begin_field(w);
    return OPSCHED_OK;
}

static void clear_row(opsched_csv_writer *w)
{
    w->len = 0;
    w->fields = 0;
    w->nomem = 0;
    if (w->row) w->row[0] = '\0';
}

opsched_status opsched_csv_end_row(opsched_csv_writer *w)
{
    if (!w) return OPSCHED_ERR_INVALID_ARG;
    opsched_status st = OPSCHED_OK;
    if (w->nomem) {
        st = OS_NOMEM(w->ctx);
    } else if (w->expected && w->fields != w->expected) {
        st = OS_FAIL(w->ctx, OPSCHED_ERR_INVALID_ARG,
                     "CSV row %lld has %d fields, the header %d (row not written)",
                     (long long)w->rows + 1, w->fields, w->expected);
    } else if (w->fields == 0) {
        st = OS_FAIL(w->ctx, OPSCHED_ERR_INVALID_ARG, "CSV row %lld has no fields",
                     (long long)w->rows + 1);
    } else {
        if (!w->expected) w->expected = w->fields;
        if ((w->len && fwrite(w->row, 1, w->len, w->f) != w->len) || fputc('\n', w->f) == EOF)
            st = OS_FAIL(w->ctx, OPSCHED_ERR_IO, "CSV write failed: %s", strerror(errno));
        else
            w->rows++;
    }
    clear_row(w);
    return st;
}

opsched_status opsched_csv_header(opsched_csv_writer *w, const char *names)
{
    if (!w) return OPSCHED_ERR_INVALID_ARG;
    if (w->rows > 0 || w->expected || !names || !*names)
        return OS_FAIL(w->ctx, OPSCHED_ERR_INVALID_ARG,
                       "a CSV header is the first row, and names something");
    clear_row(w);
    for (const char *p = names;;) {
        size_t n = strcspn(p, ",");
        begin_field(w);
        put(w, p, n);
        if (!p[n]) break;
        p += n + 1;
    }
    return opsched_csv_end_row(w);
}

opsched_status opsched_csv_set_fields(opsched_csv_writer *w, int n)
{
    if (!w) return OPSCHED_ERR_INVALID_ARG;
    if (n < 1 || (w->expected && w->expected != n))
        return OS_FAIL(w->ctx, OPSCHED_ERR_INVALID_ARG, "CSV rows of %d fields (already %d)", n,
                       w->expected);
    w->expected = n;
    return OPSCHED_OK;
}

int64_t opsched_csv_rows(const opsched_csv_writer *w)
{
    return w ? w->rows : 0;
}

int opsched_csv_fields(const opsched_csv_writer *w)
{
    return w ? w->expected : 0;
}
