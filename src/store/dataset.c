/*
 * dataset.c - what prediction reads from the measurement database: devices
 * found by a part of their name, measurements with their configurations
 * (the training data and the exact lookups of src/predict), a fingerprint
 * that changes whenever those rows change, and the network runs that the
 * composition terms are fitted to.
 *
 * Optional filters are written once as "(? IS NULL OR column = ?)" with the
 * value bound twice, so the SQL stays constant text.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "store/store_impl.h"

static const char *col_text(sqlite3_stmt *stmt, int i)
{
    const unsigned char *t = sqlite3_column_text(stmt, i);
    return t ? (const char *)t : "";
}

static void copy_text(char *dst, size_t size, sqlite3_stmt *stmt, int i)
{
    snprintf(dst, size, "%s", col_text(stmt, i));
}

static int64_t col_int_or(sqlite3_stmt *stmt, int i, int64_t none)
{
    return sqlite3_column_type(stmt, i) == SQLITE_NULL ? none
                                                        : (int64_t)sqlite3_column_int64(stmt, i);
}

static double col_double_or_nan(sqlite3_stmt *stmt, int i)
{
    return sqlite3_column_type(stmt, i) == SQLITE_NULL ? NAN : sqlite3_column_double(stmt, i);
}

/* Binds an optional text filter: the value twice ("? IS NULL OR c = ?"). */
static void bind_filter(os_binder *b, const char *v)
{
    os_bind_text_opt(b, v);
    os_bind_text_opt(b, v);
}

/* ---- devices ------------------------------------------------------------- */

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] &&
               tolower((unsigned char)p[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n) return 1;
    }
    return n == 0;
}

static int parse_id(const char *s, int64_t *out)
{
    if (!s || !*s) return 0;
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p)) return 0;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno != 0 || v <= 0) return 0;
    *out = (int64_t)v;
    return 1;
}

static void read_device(sqlite3_stmt *stmt, opsched_device_row *d)
{
    memset(d, 0, sizeof(*d));
    d->id = (int64_t)sqlite3_column_int64(stmt, 0);
    copy_text(d->backend, sizeof(d->backend), stmt, 1);
    copy_text(d->name, sizeof(d->name), stmt, 2);
    copy_text(d->uuid, sizeof(d->uuid), stmt, 3);
    d->sm_count = (int)col_int_or(stmt, 4, 0);
    d->memory_bytes = col_int_or(stmt, 5, 0);
    d->l2_bytes = col_int_or(stmt, 6, 0);
    d->measurements = (int64_t)sqlite3_column_int64(stmt, 7);
}

opsched_status opsched_store_find_device(opsched_store *s, const char *name,
                                         opsched_device_row *out)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!out) return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_find_device: NULL");
    int64_t want_id = 0;
    int by_id = parse_id(name, &want_id);
    int any = !name || !*name;
    int matches = 0;
    char names[512] = "";
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT d.id, d.backend, d.name, d.uuid, d.sm_count,"
                                 " d.memory_bytes, d.l2_bytes,"
                                 " (SELECT count(*) FROM measurements AS m"
                                 "  WHERE m.device_id = d.id)"
                                 " FROM devices AS d ORDER BY d.id",
                                 &stmt),
                done);
    for (;;) {
        int row = 0;
        OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "list devices", &row), done);
        if (!row) break;
        opsched_device_row d;
        read_device(stmt, &d);
        char label[160];
        snprintf(label, sizeof(label), "%s:%s", d.backend, d.name);
        int hit = by_id ? d.id == want_id
                  : any ? d.measurements > 0
                        : contains_nocase(label, name) || contains_nocase(d.uuid, name);
        if (!hit) continue;
        if (matches++ == 0) *out = d;
        size_t used = strlen(names);
        snprintf(names + used, sizeof(names) - used, "%s%lld (%s)", used ? ", " : "",
                 (long long)d.id, label);
    }
    if (matches == 0) {
        if (any)
            st = OS_FAIL(s->ctx, OPSCHED_ERR_NOT_FOUND, "database %s has no measurements",
                         s->path);
        else
            st = OS_FAIL(s->ctx, OPSCHED_ERR_NOT_FOUND, "database %s has no device '%s'",
                         s->path, name);
    } else if (matches > 1) {
        if (any)
            st = OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                         "database %s has measurements of several devices: %s; choose one",
                         s->path, names);
        else
            st = OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                         "database %s: several devices match '%s': %s; name one (by id or a "
                         "longer part of its name)",
                         s->path, name, names);
    }
done:
    sqlite3_finalize(stmt);
    return st;
}

/* ---- measurements ---------------------------------------------------------- */

/* The WHERE clause shared by the dataset and its fingerprint; parameters:
 * device, math x2, layout x2, policy x2, cache x2, include_network,
 * include_host, include_failed. */
#define DATASET_WHERE                                                                              \
    " WHERE m.device_id = ?"                                                                       \
    " AND (? IS NULL OR m.math = ?) AND (? IS NULL OR m.layout = ?)"                               \
    " AND (? IS NULL OR m.algo_policy = ?) AND (? IS NULL OR m.cache = ?)"                         \
    " AND (? OR instr(m.settings_key, ';mode=network') = 0)"                                       \
    " AND (? OR instr(m.settings_key, ';mode=host') = 0)"                                          \
    " AND (? OR m.status = 'ok')"

static opsched_status bind_query(opsched_store *s, sqlite3_stmt *stmt,
                                 const opsched_dataset_query *q)
{
    os_binder b;
    os_bind_begin(&b, stmt);
    os_bind_int(&b, q->device_id);
    bind_filter(&b, q->math);
    bind_filter(&b, q->layout);
    bind_filter(&b, q->algo_policy);
    bind_filter(&b, q->cache);
    os_bind_int(&b, q->include_network != 0);
    os_bind_int(&b, q->include_host != 0);
    os_bind_int(&b, q->include_failed != 0);
    return OS_BIND_END(s, &b);
}

/* 1 when the ';'-separated key has the field exactly (e.g. "fused=relu"). */
static int key_has(const char *key, const char *field)
{
    size_t n = strlen(field);
    for (const char *p = key; p && *p;) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, field, n) == 0) return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

static void read_row(sqlite3_stmt *stmt, opsched_dataset_row *r)
{
    memset(r, 0, sizeof(*r));
    r->measurement_id = (int64_t)sqlite3_column_int64(stmt, 0);
    r->config_id = (int64_t)sqlite3_column_int64(stmt, 1);
    r->run_id = (int64_t)sqlite3_column_int64(stmt, 2);
    copy_text(r->settings_key, sizeof(r->settings_key), stmt, 3);
    copy_text(r->algo_policy, sizeof(r->algo_policy), stmt, 4);
    copy_text(r->algo, sizeof(r->algo), stmt, 5);
    copy_text(r->math, sizeof(r->math), stmt, 6);
    copy_text(r->layout, sizeof(r->layout), stmt, 7);
    copy_text(r->cache, sizeof(r->cache), stmt, 8);
    copy_text(r->status, sizeof(r->status), stmt, 9);
    r->median_ms = col_double_or_nan(stmt, 10);
    r->cv = col_double_or_nan(stmt, 11);
    r->energy_valid = sqlite3_column_int(stmt, 12) != 0;
    r->energy_j = r->energy_valid ? col_double_or_nan(stmt, 13) : NAN;
    r->power_mean_w = r->energy_valid ? col_double_or_nan(stmt, 14) : NAN;
    r->created_at = sqlite3_column_double(stmt, 15);
    opsched_config_record *c = &r->config;
    copy_text(c->signature, sizeof(c->signature), stmt, 16);
    copy_text(c->op, sizeof(c->op), stmt, 17);
    int64_t *ints[] = {&c->batch,  &c->in_channels, &c->out_channels, &c->kernel,
                       &c->stride, &c->padding,     &c->groups,       &c->height,
                       &c->width,  &c->flops,       &c->bytes};
    for (int i = 0; i < 11; i++)
        *ints[i] = col_int_or(stmt, 18 + i, -1);
    copy_text(c->dtype, sizeof(c->dtype), stmt, 29);
    copy_text(r->model, sizeof(r->model), stmt, 30);
    r->fused_relu = key_has(r->settings_key, "fused=relu");
    r->network = key_has(r->settings_key, "mode=network");
    r->host = key_has(r->settings_key, "mode=host");
}

opsched_status opsched_store_dataset(opsched_store *s, const opsched_dataset_query *q,
                                     opsched_dataset_fn fn, void *user)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!q || !fn)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_dataset: NULL argument");
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT m.id, m.config_id, m.run_id, m.settings_key,"
                                 " m.algo_policy, m.algo, m.math, m.layout, m.cache, m.status,"
                                 " m.median_ms, m.cv, m.energy_valid, m.energy_j, m.power_mean_w,"
                                 " m.created_at, c.signature, c.op, c.batch, c.in_channels,"
                                 " c.out_channels, c.kernel, c.stride, c.padding, c.groups,"
                                 " c.height, c.width, c.flops, c.bytes, c.dtype,"
                                 " CASE WHEN instr(m.settings_key, ';mode=host') > 0 THEN"
                                 " (SELECT n.model FROM network_runs AS n WHERE n.run_id = m.run_id"
                                 " AND n.device_id = m.device_id AND n.created_at >= m.created_at"
                                 " ORDER BY n.created_at, n.id LIMIT 1) END"
                                 " FROM measurements AS m JOIN configs AS c ON c.id = m.config_id"
                                 DATASET_WHERE " ORDER BY m.created_at, m.id",
                                 &stmt),
                done);
    OS_TRY_GOTO(st, bind_query(s, stmt, q), done);
    for (;;) {
        int row = 0;
        OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "read measurements", &row), done);
        if (!row) break;
        opsched_dataset_row r;
        read_row(stmt, &r);
        OS_TRY_GOTO(st, fn(&r, user), done);
    }
done:
    sqlite3_finalize(stmt);
    return st;
}

opsched_status opsched_store_dataset_fingerprint(opsched_store *s, const opsched_dataset_query *q,
                                                 opsched_dataset_fingerprint *out)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    int row = 0;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!q || !out)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_dataset_fingerprint: NULL argument");
    memset(out, 0, sizeof(*out));
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT count(*), coalesce(max(m.id), 0),"
                                 " coalesce(max(m.created_at), 0) FROM measurements AS m"
                                 DATASET_WHERE,
                                 &stmt),
                done);
    OS_TRY_GOTO(st, bind_query(s, stmt, q), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "fingerprint measurements", &row), done);
    if (row) {
        out->count = (int64_t)sqlite3_column_int64(stmt, 0);
        out->max_id = (int64_t)sqlite3_column_int64(stmt, 1);
        out->max_created_at = sqlite3_column_double(stmt, 2);
    }
done:
    sqlite3_finalize(stmt);
    return st;
}

/* ---- network runs ------------------------------------------------------------ */

opsched_status opsched_store_network_runs_get(opsched_store *s,
                                              const opsched_network_run_query *q,
                                              opsched_network_run_fn fn, void *user)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!q || !fn)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_network_runs_get: NULL argument");
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT id, device_id, model, batch, input_size, input_width,"
                                 " algo_policy, math, layout, mode, median_ms, cv, enqueue_ms,"
                                 " energy_valid, energy_j, peak_memory_bytes, created_at, run_id"
                                 " FROM network_runs WHERE device_id = ?"
                                 " AND (? IS NULL OR model = ?)"
                                 " AND (? IS NULL OR algo_policy = ?)"
                                 " AND (? IS NULL OR math = ?) AND (? IS NULL OR layout = ?)"
                                 " AND (? IS NULL OR mode = ?) AND median_ms IS NOT NULL"
                                 " ORDER BY model, batch, input_size, input_width, mode,"
                                 " created_at, id",
                                 &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_int(&b, q->device_id);
    bind_filter(&b, q->model);
    bind_filter(&b, q->algo_policy);
    bind_filter(&b, q->math);
    bind_filter(&b, q->layout);
    bind_filter(&b, q->mode);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    for (;;) {
        int row = 0;
        OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "read network runs", &row), done);
        if (!row) break;
        opsched_network_run_row r;
        memset(&r, 0, sizeof(r));
        r.id = (int64_t)sqlite3_column_int64(stmt, 0);
        r.device_id = (int64_t)sqlite3_column_int64(stmt, 1);
        copy_text(r.model, sizeof(r.model), stmt, 2);
        r.batch = (int64_t)sqlite3_column_int64(stmt, 3);
        r.height = (int64_t)sqlite3_column_int64(stmt, 4);
        r.width = col_int_or(stmt, 5, r.height);
        copy_text(r.algo_policy, sizeof(r.algo_policy), stmt, 6);
        copy_text(r.math, sizeof(r.math), stmt, 7);
        copy_text(r.layout, sizeof(r.layout), stmt, 8);
        copy_text(r.mode, sizeof(r.mode), stmt, 9);
        r.median_ms = col_double_or_nan(stmt, 10);
        r.cv = col_double_or_nan(stmt, 11);
        r.enqueue_ms = col_double_or_nan(stmt, 12);
        r.energy_valid = sqlite3_column_int(stmt, 13) != 0;
        r.energy_j = r.energy_valid ? col_double_or_nan(stmt, 14) : NAN;
        r.peak_memory_bytes = col_int_or(stmt, 15, -1);
        r.created_at = sqlite3_column_double(stmt, 16);
        r.run_id = (int64_t)sqlite3_column_int64(stmt, 17);
        OS_TRY_GOTO(st, fn(&r, user), done);
    }
done:
    sqlite3_finalize(stmt);
    return st;
}
