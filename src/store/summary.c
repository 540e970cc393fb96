/*
 * summary.c - what a database holds, for `opsched status`: measurements
 * counted by device, operator and status, and every run with its state.
 */
#include <string.h>

#include "core/error.h"
#include "store/store_impl.h"

static const char *text_or_empty(sqlite3_stmt *stmt, int i)
{
    const unsigned char *t = sqlite3_column_text(stmt, i);
    return t ? (const char *)t : "";
}

opsched_status opsched_store_measurement_counts(opsched_store *s, opsched_measurement_count_fn fn,
                                                void *user)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!fn) return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "measurement counts: no callback");
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT d.backend || ':' || d.name, c.op, m.status,"
                                 " count(DISTINCT m.config_id), count(*)"
                                 " FROM measurements AS m JOIN configs AS c ON c.id = m.config_id"
                                 " JOIN devices AS d ON d.id = m.device_id"
                                 " GROUP BY m.device_id, c.op, m.status"
                                 " ORDER BY m.device_id, c.op, m.status",
                                 &stmt),
                done);
    for (;;) {
        int row = 0;
        OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "count measurements", &row), done);
        if (!row) break;
        opsched_measurement_count r = {
            .device = text_or_empty(stmt, 0),
            .op = text_or_empty(stmt, 1),
            .status = text_or_empty(stmt, 2),
            .configs = (int64_t)sqlite3_column_int64(stmt, 3),
            .measurements = (int64_t)sqlite3_column_int64(stmt, 4),
        };
        fn(&r, user);
    }
done:
    sqlite3_finalize(stmt);
    return st;
}

opsched_status opsched_store_settings_counts(opsched_store *s, opsched_settings_count_fn fn,
                                             void *user)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!fn) return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "settings counts: no callback");
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT d.id, d.backend || ':' || d.name, m.math, m.layout,"
                                 " m.algo_policy, count(DISTINCT m.config_id), count(*),"
                                 " coalesce(sum(m.cv > ?1), 0), m.cache"
                                 " FROM measurements AS m JOIN devices AS d ON d.id = m.device_id"
                                 " WHERE m.status = 'ok'"
                                 " GROUP BY m.device_id, m.math, m.layout, m.algo_policy,"
                                 " m.cache"
                                 " ORDER BY m.device_id, m.math, m.layout, m.algo_policy,"
                                 " m.cache",
                                 &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_double(&b, OPSCHED_CV_WARN);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    for (;;) {
        int row = 0;
        OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "count measurements by settings", &row), done);
        if (!row) break;
        opsched_settings_count r = {
            .device_id = (int64_t)sqlite3_column_int64(stmt, 0),
            .device = text_or_empty(stmt, 1),
            .math = text_or_empty(stmt, 2),
            .layout = text_or_empty(stmt, 3),
            .algo_policy = text_or_empty(stmt, 4),
            .configs = (int64_t)sqlite3_column_int64(stmt, 5),
            .measurements = (int64_t)sqlite3_column_int64(stmt, 6),
            .unstable = (int64_t)sqlite3_column_int64(stmt, 7),
            .cache = text_or_empty(stmt, 8),
        };
        fn(&r, user);
    }
done:
    sqlite3_finalize(stmt);
    return st;
}

opsched_status opsched_store_runs(opsched_store *s, opsched_run_summary_fn fn, void *user)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!fn) return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "runs: no callback");
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT r.id, r.uuid, r.command, r.user, r.host, r.status,"
                                 " r.shard_index, r.shard_count, r.started_at, r.ended_at,"
                                 " (SELECT count(*) FROM measurements AS m WHERE m.run_id = r.id),"
                                 " (SELECT count(*) FROM network_runs AS n WHERE n.run_id = r.id)"
                                 " FROM runs AS r ORDER BY r.started_at, r.id",
                                 &stmt),
                done);
    for (;;) {
        int row = 0;
        OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "list runs", &row), done);
        if (!row) break;
        opsched_run_summary r = {
            .id = (int64_t)sqlite3_column_int64(stmt, 0),
            .uuid = text_or_empty(stmt, 1),
            .command = text_or_empty(stmt, 2),
            .user = text_or_empty(stmt, 3),
            .host = text_or_empty(stmt, 4),
            .status = text_or_empty(stmt, 5),
            .shard_index = sqlite3_column_int(stmt, 6),
            .shard_count = sqlite3_column_int(stmt, 7),
            .started_at = sqlite3_column_double(stmt, 8),
            .ended_at = sqlite3_column_type(stmt, 9) == SQLITE_NULL ? 0.0
                                                                    : sqlite3_column_double(stmt, 9),
            .measurements = (int64_t)sqlite3_column_int64(stmt, 10),
            .network_rows = (int64_t)sqlite3_column_int64(stmt, 11),
        };
        fn(&r, user);
    }
done:
    sqlite3_finalize(stmt);
    return st;
}
