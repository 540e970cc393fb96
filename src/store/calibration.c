/*
 * calibration.c - device calibrations in the measurement database (the
 * calibrations table, schema 3): what `opsched devices --calibrate`
 * writes and what the predictor reads as its roofline and overheads.
 *
 * One row per (device, math mode).  A calibration stored later replaces
 * the one before it; among two calibrations of one device and math mode
 * (a merge), the one measured later wins, by created_at.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "store/store_impl.h"

static int valid_math(const char *m)
{
    opsched_math x;
    return m && opsched_math_from_name(m, &x) == OPSCHED_OK;
}

opsched_status opsched_store_calibration_put(opsched_store *s, int64_t device_id,
                                             const opsched_calibration *c)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!c)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_calibration_put: no calibration");
    char math[sizeof(c->math) + 1];
    memcpy(math, c->math, sizeof(c->math));
    math[sizeof(c->math)] = '\0';
    if (!valid_math(math))
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_calibration_put: math mode '%s' is not fp32, tf32, fp16 "
                       "or bf16",
                       math);
    double created = c->created_at > 0 && isfinite(c->created_at) ? c->created_at : os_store_now();
    OS_TRY(os_store_begin(s));
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "INSERT INTO calibrations (device_id, " OS_CALIBRATION_COLUMNS
                                 ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                                 " ON CONFLICT (device_id, math) DO UPDATE SET"
                                 " peak_flops = excluded.peak_flops,"
                                 " bandwidth = excluded.bandwidth,"
                                 " launch_us = excluded.launch_us,"
                                 " graph_node_us = excluded.graph_node_us,"
                                 " idle_power_w = excluded.idle_power_w,"
                                 " created_at = excluded.created_at",
                                 &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_int(&b, device_id);
    os_bind_text(&b, math);
    os_bind_double(&b, c->peak_flops);
    os_bind_double(&b, c->bandwidth);
    os_bind_double(&b, c->launch_us);
    os_bind_double(&b, c->graph_node_us);
    os_bind_double(&b, c->idle_power_w);
    os_bind_double(&b, created);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    /* A device id that is not in the file fails the foreign key here. */
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "add calibration", NULL), done);
    OS_TRY_GOTO(st, os_store_commit(s), done);
done:
    sqlite3_finalize(stmt);
    if (st != OPSCHED_OK) os_store_rollback(s);
    return st;
}

static double column_or_nan(sqlite3_stmt *stmt, int i)
{
    return sqlite3_column_type(stmt, i) == SQLITE_NULL ? NAN : sqlite3_column_double(stmt, i);
}

opsched_status opsched_store_calibration_get(opsched_store *s, int64_t device_id, const char *math,
                                             opsched_calibration *out, int *found)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    int row = 0;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!out || !found)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_calibration_get: NULL argument");
    *found = 0;
    if (!valid_math(math))
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_calibration_get: math mode '%s' is not fp32, tf32, fp16 "
                       "or bf16",
                       math ? math : "(null)");
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT " OS_CALIBRATION_COLUMNS " FROM calibrations"
                                 " WHERE device_id = ? AND math = ?",
                                 &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_int(&b, device_id);
    os_bind_text(&b, math);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "look up calibration", &row), done);
    if (!row) goto done;
    memset(out, 0, sizeof(*out));
    snprintf(out->math, sizeof(out->math), "%s", math);
    out->peak_flops = column_or_nan(stmt, 1);
    out->bandwidth = column_or_nan(stmt, 2);
    out->launch_us = column_or_nan(stmt, 3);
    out->graph_node_us = column_or_nan(stmt, 4);
    out->idle_power_w = column_or_nan(stmt, 5);
    out->created_at = sqlite3_column_double(stmt, 6);
    *found = 1;
done:
    sqlite3_finalize(stmt);
    return st;
}

/* Source rows are mapped to this file's device ids through (backend,
 * uuid), which the merge copied before; a row replaces this file's only
 * when it was measured later. */
static const char copy_calibrations[] =
    "INSERT INTO main.calibrations (device_id, " OS_CALIBRATION_COLUMNS ")"
    " SELECT * FROM (SELECT"
    " (SELECT md.id FROM main.devices AS md JOIN src.devices AS sd"
    "  ON sd.backend = md.backend AND sd.uuid = md.uuid"
    "  WHERE sd.id = x.device_id) AS new_device_id, " OS_CALIBRATION_COLUMNS
    " FROM src.calibrations AS x ORDER BY x.id) AS y WHERE true"
    " ON CONFLICT (device_id, math) DO UPDATE SET"
    " peak_flops = excluded.peak_flops, bandwidth = excluded.bandwidth,"
    " launch_us = excluded.launch_us, graph_node_us = excluded.graph_node_us,"
    " idle_power_w = excluded.idle_power_w, created_at = excluded.created_at"
    " WHERE excluded.created_at > calibrations.created_at";

opsched_status os_store_merge_calibrations(opsched_store *s, int64_t *added)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    *added = 0;
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, copy_calibrations, &stmt), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "copy calibrations", NULL), done);
    *added = sqlite3_changes(s->db);
done:
    sqlite3_finalize(stmt);
    return st;
}
