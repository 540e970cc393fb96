/*
 * common.c - helpers shared by the subcommands: errors, parsing, loading.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tool.h"

int tool_fail(opsched_ctx *ctx, opsched_status st, const char *what)
{
    const char *msg = opsched_ctx_last_error(ctx);
    if (!msg || !*msg) msg = opsched_status_str(st);
    /* The library's message often starts with the path already. */
    size_t n = strlen(what);
    if (strncmp(msg, what, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
        fprintf(stderr, "opsched: %s\n", msg);
    else
        fprintf(stderr, "opsched: %s: %s\n", what, msg);
    return TOOL_EXIT_FAIL;
}

int tool_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "opsched %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'opsched %s --help'.\n", cmd);
    return TOOL_EXIT_USAGE;
}

int tool_parse_format(const char *s, tool_format *out)
{
    if (strcmp(s, "table") == 0) *out = TOOL_FMT_TABLE;
    else if (strcmp(s, "csv") == 0) *out = TOOL_FMT_CSV;
    else if (strcmp(s, "json") == 0) *out = TOOL_FMT_JSON;
    else return 0;
    return 1;
}

int tool_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int tool_parse_size(const char *s, int64_t *h, int64_t *w)
{
    opsched_shape sh;
    if (opsched_shape_parse(s, &sh) != OPSCHED_OK || sh.ndim < 1 || sh.ndim > 2) return 0;
    if (sh.d[0] > 65536 || sh.d[sh.ndim - 1] > 65536) return 0;
    *h = sh.d[0];
    *w = sh.ndim == 2 ? sh.d[1] : sh.d[0];
    return 1;
}

static int is_onnx_path(const char *m)
{
    size_t n = strlen(m);
    struct stat st;
    if (n > 5 && strcmp(m + n - 5, ".onnx") == 0) return 1;
    return strchr(m, '/') != NULL || stat(m, &st) == 0;
}

void tool_model_run_name(const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, n, "%s", base);
    size_t len = strlen(out);
    if (len > 5 && strcmp(out + len - 5, ".onnx") == 0) out[len - 5] = '\0';
    for (char *c = out; *c; c++)
        if (!(*c >= 'a' && *c <= 'z') && !(*c >= 'A' && *c <= 'Z') && !(*c >= '0' && *c <= '9') &&
            *c != '-' && *c != '_' && *c != '.')
            *c = '_';
}

opsched_status tool_load_model(opsched_ctx *ctx, const tool_model_opts *o, opsched_graph **out)
{
    if (is_onnx_path(o->model)) {
        opsched_onnx_options oo = {.shapes = o->shapes, .batch = o->batch, .height = o->height,
                                   .width = o->width, .load_weights = o->load_weights};
        return opsched_onnx_load_file(ctx, o->model, &oo, out);
    }
    opsched_zoo_options zo = {.batch = o->batch, .height = o->height, .width = o->width,
                              .fold_bn = o->fold_bn};
    return opsched_zoo_build(ctx, o->model, &zo, out);
}

int tool_db_or_shipped(opsched_ctx *ctx, const char *cmd, const char *db, const char *device,
                       char *path, size_t size)
{
    char names[256] = "", lower[80];
    if (db) {
        snprintf(path, size, "%s", db);
        return TOOL_EXIT_OK;
    }
    if (opsched_shipped_names(ctx, names, sizeof(names)) != OPSCHED_OK) {
        opsched_ctx_clear_error(ctx);
        names[0] = '\0';
    }
    if (!device)
        return tool_usage_error(cmd, "which measurements? --db FILE, or --device NAME for "
                                     "shipped data (%s)",
                                names[0] ? names : "none in this installation");
    size_t i = 0;
    for (; device[i] && i + 1 < sizeof(lower); i++)
        lower[i] = (char)tolower((unsigned char)device[i]);
    lower[i] = '\0';
    /* Only a name of the list is built: a typo is a usage error. */
    int known = 0;
    for (const char *p = names; *p && !known;) {
        size_t n = strcspn(p, ",");
        known = n == strlen(lower) && strncmp(p, lower, n) == 0;
        p += n + (p[n] == ',');
    }
    if (!known)
        return tool_usage_error(cmd, "no --db, and no shipped data for device '%s' (shipped: %s)",
                                device, names[0] ? names : "none");
    opsched_status st = opsched_shipped_database(ctx, lower, path, size);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "shipped data");
    return TOOL_EXIT_OK;
}

const char *tool_human(double v, char *buf, size_t n)
{
    static const char *const units[] = {"", "K", "M", "G", "T", "P"};
    int u = 0;
    while ((v >= 1000.0 || v <= -1000.0) && u < 5) {
        v /= 1000.0;
        u++;
    }
    if (u == 0) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, v >= 100 ? "%.0f%s" : v >= 10 ? "%.1f%s" : "%.2f%s", v, units[u]);
    return buf;
}

void tool_csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}
