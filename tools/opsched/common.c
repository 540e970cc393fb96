/*
 * common.c - helpers shared by the subcommands: errors, parsing, loading.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "args.h"

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

int tool_is_onnx_path(const char *m)
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

static opsched_status load_forward(opsched_ctx *ctx, const tool_model_opts *o,
                                   opsched_graph **out)
{
    if (tool_is_onnx_path(o->model)) {
        opsched_onnx_options oo = {.shapes = o->shapes, .batch = o->batch, .height = o->height,
                                   .width = o->width, .load_weights = o->load_weights,
                                   .values = o->values, .n_values = o->n_values,
                                   .no_rewrite = o->no_rewrite,
                                   .keep_attention = o->keep_attention || o->train,
                                   .keep_projections = o->keep_projections,
                                   .keep_scales = o->keep_scales};
        return opsched_onnx_load_file(ctx, o->model, &oo, out);
    }
    opsched_zoo_options zo = {.batch = o->batch, .height = o->height, .width = o->width,
                              .fold_bn = o->fold_bn};
    return opsched_zoo_build(ctx, o->model, &zo, out);
}

opsched_status tool_load_model(opsched_ctx *ctx, const tool_model_opts *o, opsched_graph **out)
{
    opsched_status fs = load_forward(ctx, o, out);
    if (fs != OPSCHED_OK || !o->train) return fs;
    opsched_graph *t = NULL;
    opsched_status st = opsched_training_graph(*out, o->train, &t);
    opsched_graph_free(*out);
    *out = t;
    return st;
}

int tool_db_or_shipped(opsched_ctx *ctx, const char *cmd, const char *db, const char *data,
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
    if (!data)
        return tool_usage_error(cmd, "which measurements? --db FILE, or --data NAME for "
                                     "shipped data (%s)",
                                names[0] ? names : "none in this installation");
    size_t i = 0;
    for (; data[i] && i + 1 < sizeof(lower); i++)
        lower[i] = (char)tolower((unsigned char)data[i]);
    lower[i] = '\0';
    /* Only a name of the list is built: a typo is a usage error. */
    int known = 0;
    for (const char *p = names; *p && !known;) {
        size_t n = strcspn(p, ",");
        known = n == strlen(lower) && strncmp(p, lower, n) == 0;
        p += n + (p[n] == ',');
    }
    if (!known)
        return tool_usage_error(cmd, "no --db, and no shipped data set '%s' (shipped: %s)",
                                data, names[0] ? names : "none");
    opsched_status st = opsched_shipped_database(ctx, lower, path, size);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "shipped data");
    return TOOL_EXIT_OK;
}

opsched_layout tool_data_layout(opsched_ctx *ctx, const char *db_path, const char *target,
                                opsched_math math, const char *algo)
{
    opsched_store *s = NULL;
    opsched_device_row dev;
    opsched_layout best = OPSCHED_LAYOUT_NCHW;
    int64_t most = 0;
    struct stat sb;
    if (stat(db_path, &sb) != 0) return best; /* opening would create it */
    if (opsched_store_open(ctx, db_path, OPSCHED_STORE_READ_ONLY, &s) != OPSCHED_OK ||
        opsched_store_find_device(s, target, &dev) != OPSCHED_OK) {
        /* the predictor says what is wrong with the database or device */
        opsched_ctx_clear_error(ctx);
        opsched_store_close(s);
        return best;
    }
    static const opsched_layout layouts[] = {OPSCHED_LAYOUT_NCHW, OPSCHED_LAYOUT_NHWC};
    for (int i = 0; i < 2; i++) {
        opsched_dataset_query q;
        opsched_dataset_fingerprint fp;
        memset(&q, 0, sizeof(q));
        q.device_id = dev.id;
        q.math = opsched_math_name(math);
        q.layout = layouts[i] == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw";
        q.algo_policy = algo ? algo : "heuristic";
        q.cache = "hot";
        if (opsched_store_dataset_fingerprint(s, &q, &fp) != OPSCHED_OK) {
            opsched_ctx_clear_error(ctx);
            continue;
        }
        if (fp.count > most) {
            most = fp.count;
            best = layouts[i];
        }
    }
    opsched_store_close(s);
    return best;
}

int tool_model_fail(opsched_ctx *ctx, opsched_status st, const char *model)
{
    int rc = tool_fail(ctx, st, model);
    if (st == OPSCHED_ERR_NOT_FOUND && !tool_is_onnx_path(model)) tool_suggest_model(model);
    return rc;
}

void tool_suggest_model(const char *name)
{
    const char *names[512];
    int n = 0;
    for (int i = 0; i < opsched_zoo_count() && n < 512; i++) names[n++] = opsched_zoo_at(i)->name;
    const char *near = tool_nearest_word(name, names, n);
    if (near) fprintf(stderr, "opsched: did you mean '%s'? ('opsched models' lists them)\n", near);
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

typedef struct holdings {
    int rows;
} holdings;

static void print_holding(const opsched_settings_count *r, void *user)
{
    holdings *h = user;
    h->rows++;
    fprintf(stderr, "    %s (device %lld): %s %s %s, cache %s, %lld configurations (%lld rows)\n",
            r->device, (long long)r->device_id, r->math, r->layout, r->algo_policy,
            r->cache[0] ? r->cache : "?", (long long)r->configs, (long long)r->measurements);
}

void tool_print_holdings(opsched_ctx *ctx, const char *cmd, const char *path)
{
    opsched_store *s = NULL;
    holdings h = {0};
    fprintf(stderr, "opsched %s: %s holds (measurements by device, math, layout, algorithm "
                    "policy, cache state):\n",
            cmd, path);
    opsched_status st = opsched_store_open(ctx, path, OPSCHED_STORE_READ_ONLY, &s);
    if (st == OPSCHED_OK) st = opsched_store_settings_counts(s, print_holding, &h);
    opsched_store_close(s);
    if (st != OPSCHED_OK) {
        fprintf(stderr, "    (cannot list them: %s)\n", opsched_ctx_last_error(ctx));
        opsched_ctx_clear_error(ctx);
    } else if (h.rows == 0) {
        fprintf(stderr, "    nothing\n");
    }
}

int tool_print_json(cJSON *root)
{
    if (!root) return TOOL_EXIT_OK;
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) {
        fprintf(stderr, "opsched: out of memory writing JSON\n");
        return TOOL_EXIT_FAIL;
    }
    puts(text);
    cJSON_free(text);
    return TOOL_EXIT_OK;
}

int tool_check_output(const char *cmd, const char *out, const char *const *inputs, int n)
{
    struct stat so, si;
    if (!out || stat(out, &so) != 0) return TOOL_EXIT_OK;
    for (int i = 0; i < n; i++) {
        if (!inputs[i] || stat(inputs[i], &si) != 0) continue;
        if (so.st_dev == si.st_dev && so.st_ino == si.st_ino)
            return tool_usage_error(cmd, "the output '%s' is the input '%s' (the same file): "
                                         "writing it would destroy what is read; choose another "
                                         "name", out, inputs[i]);
    }
    return TOOL_EXIT_OK;
}

