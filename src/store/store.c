/*
 * store.c - the measurement database's writers and lookups: runs, devices,
 * configurations, measurements, settings keys and the summary (opening is
 * open.c).
 *
 * Each write is its own immediate transaction, committed before the call
 * returns, so a sweep killed at any point keeps everything it reported.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/store_impl.h"

/* ---- runs ------------------------------------------------------------ */

/* 128 random bits as 32 hex digits.  /dev/urandom rather than SQLite's
 * generator: that one is seeded once per process and forked shard workers
 * would share its state. */
static void make_run_uuid(char out[33])
{
    unsigned char b[16];
    size_t got = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        got = fread(b, 1, sizeof(b), f);
        fclose(f);
    }
    if (got != sizeof(b)) {
        struct timespec ts;
        uint64_t mix = (uint64_t)getpid();
        if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
            mix ^= (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec << 20;
        sqlite3_randomness((int)sizeof(b), b);
        for (size_t i = 0; i < 8; i++)
            b[i] ^= (unsigned char)(mix >> (8 * i));
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof(b); i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[32] = '\0';
}

opsched_status opsched_store_begin_run(opsched_store *s, const opsched_run_info *info,
                                       int64_t *run_id)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    char uuid[33], host[256];
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!info || !run_id)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_begin_run: NULL argument");
    if (info->shard_count < 1 || info->shard_index < 0 || info->shard_index >= info->shard_count)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_begin_run: shard %d of %d is not valid", info->shard_index,
                       info->shard_count);
    make_run_uuid(uuid);
    if (gethostname(host, sizeof(host)) != 0) host[0] = '\0';
    host[sizeof(host) - 1] = '\0';

    OS_TRY(os_store_begin(s));
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "INSERT INTO runs (uuid, command, spec, user, host, shard_index,"
                                 " shard_count, started_at, status, tool_version)"
                                 " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)",
                                 &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_text(&b, uuid);
    os_bind_text(&b, info->command);
    os_bind_text(&b, info->spec);
    os_bind_text_opt(&b, getenv("USER"));
    os_bind_text_opt(&b, host);
    os_bind_int(&b, info->shard_index);
    os_bind_int(&b, info->shard_count);
    os_bind_double(&b, os_store_now());
    os_bind_text(&b, opsched_version());
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "add run", NULL), done);
    *run_id = (int64_t)sqlite3_last_insert_rowid(s->db);
    OS_TRY_GOTO(st, os_store_commit(s), done);
done:
    sqlite3_finalize(stmt);
    if (st != OPSCHED_OK) os_store_rollback(s);
    return st;
}

opsched_status opsched_store_end_run(opsched_store *s, int64_t run_id, const char *status)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!status || (strcmp(status, "done") != 0 && strcmp(status, "interrupted") != 0 &&
                    strcmp(status, "failed") != 0))
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_end_run: status must be done, interrupted or failed");
    OS_TRY(os_store_begin(s));
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s, "UPDATE runs SET ended_at = ?, status = ? WHERE id = ?", &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_double(&b, os_store_now());
    os_bind_text(&b, status);
    os_bind_int(&b, run_id);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "end run", NULL), done);
    if (sqlite3_changes(s->db) == 0) {
        st = OS_FAIL(s->ctx, OPSCHED_ERR_NOT_FOUND, "database %s has no run %lld", s->path,
                     (long long)run_id);
        goto done;
    }
    OS_TRY_GOTO(st, os_store_commit(s), done);
done:
    sqlite3_finalize(stmt);
    if (st != OPSCHED_OK) os_store_rollback(s);
    return st;
}

/* ---- devices and configurations --------------------------------------- */

/* Reads the id a find-or-add just made sure exists; key values are bound
 * in order from texts. */
static opsched_status lookup_id(opsched_store *s, const char *sql, const char *const *keys,
                                int n_keys, int64_t *id)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    int row = 0;
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, sql, &stmt), done);
    os_bind_begin(&b, stmt);
    for (int i = 0; i < n_keys; i++)
        os_bind_text(&b, keys[i]);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "look up id", &row), done);
    if (!row) {
        st = OS_FAIL(s->ctx, OPSCHED_ERR_BACKEND, "database %s: a row just written is missing",
                     s->path);
        goto done;
    }
    *id = (int64_t)sqlite3_column_int64(stmt, 0);
done:
    sqlite3_finalize(stmt);
    return st;
}

opsched_status opsched_store_device(opsched_store *s, const opsched_device_info *info,
                                    int64_t *device_id)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!info || !device_id)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_device: NULL argument");
    if (!info->backend[0] || !info->uuid[0])
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_device: a device needs a backend and a uuid");
    double now = os_store_now();
    OS_TRY(os_store_begin(s));
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(
                    s,
                    "INSERT INTO devices (" OS_DEVICE_COLUMNS ")"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (backend, uuid) DO UPDATE SET name = excluded.name,"
                    " pci_bus_id = excluded.pci_bus_id, driver_version = excluded.driver_version,"
                    " runtime_version = excluded.runtime_version,"
                    " library_versions = excluded.library_versions, sm_count = excluded.sm_count,"
                    " cc_major = excluded.cc_major, cc_minor = excluded.cc_minor,"
                    " memory_bytes = excluded.memory_bytes, l2_bytes = excluded.l2_bytes,"
                    " power_limit_w = excluded.power_limit_w, has_power = excluded.has_power,"
                    " has_energy = excluded.has_energy, last_seen = excluded.last_seen",
                    &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_text(&b, info->backend);
    os_bind_text(&b, info->uuid);
    os_bind_text(&b, info->name);
    os_bind_text_opt(&b, info->pci_bus_id);
    os_bind_text_opt(&b, info->driver_version);
    os_bind_text_opt(&b, info->runtime_version);
    os_bind_text_opt(&b, info->library_versions);
    os_bind_int(&b, info->sm_count);
    os_bind_int(&b, info->cc_major);
    os_bind_int(&b, info->cc_minor);
    os_bind_int(&b, info->memory_bytes);
    os_bind_int(&b, info->l2_bytes);
    if (info->power_limit_w > 0)
        os_bind_double(&b, info->power_limit_w);
    else
        os_bind_null(&b);
    os_bind_int(&b, info->has_power != 0);
    os_bind_int(&b, info->has_energy != 0);
    os_bind_double(&b, now);
    os_bind_double(&b, now);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "add device", NULL), done);
    const char *keys[2] = {info->backend, info->uuid};
    OS_TRY_GOTO(
        st,
        lookup_id(s, "SELECT id FROM devices WHERE backend = ? AND uuid = ?", keys, 2, device_id),
        done);
    OS_TRY_GOTO(st, os_store_commit(s), done);
done:
    sqlite3_finalize(stmt);
    if (st != OPSCHED_OK) os_store_rollback(s);
    return st;
}

opsched_status opsched_store_config(opsched_store *s, const opsched_config_record *rec,
                                    int64_t *config_id)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!rec || !config_id)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_config: NULL argument");
    if (!memchr(rec->signature, '\0', sizeof(rec->signature)) || !rec->signature[0] ||
        !memchr(rec->op, '\0', sizeof(rec->op)) || !rec->op[0] ||
        !memchr(rec->dtype, '\0', sizeof(rec->dtype)))
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_config: a configuration needs a signature and an op");
    OS_TRY(os_store_begin(s));
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "INSERT INTO configs (" OS_CONFIG_COLUMNS ")"
                                 " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                                 " ON CONFLICT (signature) DO NOTHING",
                                 &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_text(&b, rec->signature);
    os_bind_text(&b, rec->op);
    os_bind_int_opt(&b, rec->batch);
    os_bind_int_opt(&b, rec->in_channels);
    os_bind_int_opt(&b, rec->out_channels);
    os_bind_int_opt(&b, rec->kernel);
    os_bind_int_opt(&b, rec->stride);
    os_bind_int_opt(&b, rec->padding);
    os_bind_int_opt(&b, rec->groups);
    os_bind_int_opt(&b, rec->height);
    os_bind_int_opt(&b, rec->width);
    os_bind_int_opt(&b, rec->flops);
    os_bind_int_opt(&b, rec->bytes);
    os_bind_text(&b, rec->dtype);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "add configuration", NULL), done);
    const char *key = rec->signature;
    OS_TRY_GOTO(st, lookup_id(s, "SELECT id FROM configs WHERE signature = ?", &key, 1, config_id),
                done);
    OS_TRY_GOTO(st, os_store_commit(s), done);
done:
    sqlite3_finalize(stmt);
    if (st != OPSCHED_OK) os_store_rollback(s);
    return st;
}

/* ---- measurements ------------------------------------------------------ */

static const char *layout_name(opsched_layout l)
{
    return l == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw";
}

void opsched_settings_key(const opsched_measure_options *o, char *buf, size_t size)
{
    if (!buf || size == 0) return;
    if (!o) {
        buf[0] = '\0';
        return;
    }
    int n = snprintf(buf, size, "algo=%s;math=%s;layout=%s;cache=%s;energy=%d",
                     o->plan.algo && *o->plan.algo ? o->plan.algo : "heuristic",
                     opsched_math_name(o->plan.math), layout_name(o->plan.layout),
                     opsched_cache_name(o->cache), o->energy ? 1 : 0);
    /* An ablated planner measures something else: a key of its own (none
     * for the planner as it is, so older keys stay what they were). */
    if (o->plan.ablate && n > 0 && (size_t)n < size) {
        char names[512];
        opsched_ablation_names(o->plan.ablate, "+", names, sizeof(names));
        snprintf(buf + n, size - (size_t)n, ";ablate=%s", names);
    }
}

static const char *status_text(opsched_status st)
{
    switch (st) {
    case OPSCHED_OK:
        return "ok";
    case OPSCHED_ERR_UNSUPPORTED:
        return "unsupported";
    case OPSCHED_ERR_DEVICE_OOM:
        return "oom";
    default:
        return "error";
    }
}

opsched_status opsched_store_add(opsched_store *s, int64_t run_id, int64_t device_id,
                                 int64_t config_id, const char *settings_key,
                                 const char *algo_policy, const opsched_measurement *m,
                                 int64_t *measurement_id)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!m || !settings_key || !*settings_key)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_add: a measurement and a settings key are required");
    /* The fixed-size texts of a measurement may be filled to the brim. */
    char algo[sizeof(m->algo) + 1], message[sizeof(m->message) + 1];
    memcpy(algo, m->algo, sizeof(m->algo));
    algo[sizeof(m->algo)] = '\0';
    memcpy(message, m->message, sizeof(m->message));
    message[sizeof(m->message)] = '\0';

    OS_TRY(os_store_begin(s));
    OS_TRY_GOTO(
        st,
        OS_STORE_PREPARE(
            s,
            "INSERT INTO measurements (run_id, device_id, config_id, " OS_MEASUREMENT_COLUMNS
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
            " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
            " ?, ?, ?, ?, ?, ?, ?, ?)",
            &stmt),
        done);
    os_bind_begin(&b, stmt);
    os_bind_int(&b, run_id);
    os_bind_int(&b, device_id);
    os_bind_int(&b, config_id);
    os_bind_text(&b, settings_key);
    os_bind_text(&b, algo_policy && *algo_policy ? algo_policy : "heuristic");
    os_bind_text_opt(&b, algo);
    os_bind_text(&b, opsched_math_name(m->math));
    os_bind_text(&b, layout_name(m->layout));
    os_bind_text(&b, opsched_cache_name(m->cache));
    os_bind_text(&b, status_text(m->status));
    os_bind_text_opt(&b, message);
    os_bind_stats(&b, &m->stats);
    os_bind_int(&b, m->unstable != 0);
    os_bind_int(&b, m->launches_per_sample);
    os_bind_int(&b, (int64_t)m->workspace_bytes);
    os_bind_energy(&b, &m->energy);
    os_bind_double(&b, os_store_now());
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "add measurement", NULL), done);
    if (measurement_id) *measurement_id = (int64_t)sqlite3_last_insert_rowid(s->db);
    OS_TRY_GOTO(st, os_store_commit(s), done);
done:
    sqlite3_finalize(stmt);
    if (st != OPSCHED_OK) os_store_rollback(s);
    return st;
}

opsched_status opsched_store_has(opsched_store *s, int64_t device_id, int64_t config_id,
                                 const char *settings_key, int *found)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    int row = 0;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!settings_key || !found)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_has: NULL argument");
    *found = 0;
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT 1 FROM measurements WHERE device_id = ? AND config_id = ?"
                                 " AND settings_key = ? AND status <> 'error' LIMIT 1",
                                 &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_int(&b, device_id);
    os_bind_int(&b, config_id);
    os_bind_text(&b, settings_key);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "look up measurement", &row), done);
    *found = row;
done:
    sqlite3_finalize(stmt);
    return st;
}

opsched_status opsched_store_summary_get(opsched_store *s, opsched_store_summary *out)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    int row = 0;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!out) return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_summary_get: NULL");
    memset(out, 0, sizeof(*out));
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(
                    s,
                    "SELECT (SELECT count(*) FROM devices), (SELECT count(*) FROM runs),"
                    " (SELECT count(*) FROM configs), count(*),"
                    " coalesce(sum(status = 'ok'), 0), coalesce(sum(status = 'unsupported'), 0),"
                    " coalesce(sum(status = 'oom'), 0), coalesce(sum(status = 'error'), 0)"
                    " FROM measurements",
                    &stmt),
                done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "summary", &row), done);
    if (row) {
        int64_t *fields[] = {&out->devices, &out->runs,        &out->configs, &out->measurements,
                             &out->ok,      &out->unsupported, &out->oom,     &out->errors};
        for (int i = 0; i < 8; i++)
            *fields[i] = (int64_t)sqlite3_column_int64(stmt, i);
    }
done:
    sqlite3_finalize(stmt);
    return st;
}
