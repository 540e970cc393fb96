/*
 * stage.c - schedule stages measured as a whole (the stages table, schema
 * 4): what `opsched schedule --cost measure` caches, so a second search
 * on the same device runs nothing, and what the contention model of
 * predicted stage costs is fitted from.
 *
 * One row per (device, stage signature, batch, math, layout, policy); a
 * later measurement replaces the earlier, and among two rows of one key
 * (a merge) the one measured later wins, by created_at.
 */
#include <math.h>
#include <string.h>

#include "store/store_impl.h"

static opsched_status check_key(opsched_store *s, const char *fn, const opsched_stage_record *r)
{
    if (!r || !r->signature || !r->signature[0] || !r->math || !r->layout || !r->algo_policy)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "%s: a stage needs a signature, math mode, layout and policy", fn);
    return OPSCHED_OK;
}

opsched_status opsched_store_stage_put(opsched_store *s, int64_t device_id,
                                       const opsched_stage_record *r)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    OS_TRY(check_key(s, "opsched_store_stage_put", r));
    if (!r->kind || (strcmp(r->kind, "concurrent") != 0 && strcmp(r->kind, "merge") != 0))
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_stage_put: kind '%s' is not concurrent or merge",
                       r->kind ? r->kind : "(null)");
    if (!(r->median_ms >= 0) || isinf(r->median_ms) || r->n_groups < 0 || r->n_ops < 1)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_stage_put: %g ms for %d groups of %d operators",
                       r->median_ms, r->n_groups, r->n_ops);
    double created = r->created_at > 0 && isfinite(r->created_at) ? r->created_at : os_store_now();
    OS_TRY(os_store_begin(s));
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "INSERT INTO stages (device_id, " OS_STAGE_COLUMNS
                                 ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                                 " ON CONFLICT (device_id, signature, batch, math, layout,"
                                 " algo_policy) DO UPDATE SET"
                                 " kind = excluded.kind, n_groups = excluded.n_groups,"
                                 " n_ops = excluded.n_ops, median_ms = excluded.median_ms,"
                                 " longest_ms = excluded.longest_ms, sum_ms = excluded.sum_ms,"
                                 " created_at = excluded.created_at",
                                 &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_int(&b, device_id);
    os_bind_text(&b, r->signature);
    os_bind_text(&b, r->kind);
    os_bind_int(&b, r->batch);
    os_bind_text(&b, r->math);
    os_bind_text(&b, r->layout);
    os_bind_text(&b, r->algo_policy);
    os_bind_int(&b, r->n_groups);
    os_bind_int(&b, r->n_ops);
    os_bind_double(&b, r->median_ms);
    os_bind_double(&b, r->longest_ms);
    os_bind_double(&b, r->sum_ms);
    os_bind_double(&b, created);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    /* A device id that is not in the file fails the foreign key here. */
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "add stage", NULL), done);
    OS_TRY_GOTO(st, os_store_commit(s), done);
done:
    sqlite3_finalize(stmt);
    if (st != OPSCHED_OK) os_store_rollback(s);
    return st;
}

opsched_status opsched_store_stage_get(opsched_store *s, int64_t device_id,
                                       const opsched_stage_record *key, double *median_ms,
                                       int *found)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    int row = 0;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!median_ms || !found)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_stage_get: NULL argument");
    *found = 0;
    OS_TRY(check_key(s, "opsched_store_stage_get", key));
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT median_ms FROM stages WHERE device_id = ? AND"
                                 " signature = ? AND batch = ? AND math = ? AND layout = ? AND"
                                 " algo_policy = ?",
                                 &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_int(&b, device_id);
    os_bind_text(&b, key->signature);
    os_bind_int(&b, key->batch);
    os_bind_text(&b, key->math);
    os_bind_text(&b, key->layout);
    os_bind_text(&b, key->algo_policy);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "look up stage", &row), done);
    if (row) {
        *median_ms = sqlite3_column_double(stmt, 0);
        *found = 1;
    }
done:
    sqlite3_finalize(stmt);
    return st;
}

static double column_or_nan(sqlite3_stmt *stmt, int i)
{
    return sqlite3_column_type(stmt, i) == SQLITE_NULL ? NAN : sqlite3_column_double(stmt, i);
}

opsched_status opsched_store_stages(opsched_store *s, int64_t device_id, const char *math,
                                    const char *layout, const char *algo_policy,
                                    opsched_stage_record_fn fn, void *user)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    int row = 0;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!math || !layout || !algo_policy || !fn)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_stages: NULL argument");
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT " OS_STAGE_COLUMNS " FROM stages WHERE device_id = ?"
                                 " AND math = ? AND layout = ? AND algo_policy = ? ORDER BY id",
                                 &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_int(&b, device_id);
    os_bind_text(&b, math);
    os_bind_text(&b, layout);
    os_bind_text(&b, algo_policy);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    for (;;) {
        OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "list stages", &row), done);
        if (!row) break;
        opsched_stage_record r;
        r.signature = (const char *)sqlite3_column_text(stmt, 0);
        r.kind = (const char *)sqlite3_column_text(stmt, 1);
        r.batch = sqlite3_column_int64(stmt, 2);
        r.math = (const char *)sqlite3_column_text(stmt, 3);
        r.layout = (const char *)sqlite3_column_text(stmt, 4);
        r.algo_policy = (const char *)sqlite3_column_text(stmt, 5);
        r.n_groups = sqlite3_column_int(stmt, 6);
        r.n_ops = sqlite3_column_int(stmt, 7);
        r.median_ms = sqlite3_column_double(stmt, 8);
        r.longest_ms = column_or_nan(stmt, 9);
        r.sum_ms = column_or_nan(stmt, 10);
        r.created_at = sqlite3_column_double(stmt, 11);
        fn(&r, user);
    }
done:
    sqlite3_finalize(stmt);
    return st;
}

/* Source rows are mapped to this file's device ids through (backend,
 * uuid), which the merge copied before; a row replaces this file's only
 * when it was measured later. */
static const char copy_stages[] =
    "INSERT INTO main.stages (device_id, " OS_STAGE_COLUMNS ")"
    " SELECT * FROM (SELECT"
    " (SELECT md.id FROM main.devices AS md JOIN src.devices AS sd"
    "  ON sd.backend = md.backend AND sd.uuid = md.uuid"
    "  WHERE sd.id = x.device_id) AS new_device_id, " OS_STAGE_COLUMNS
    " FROM src.stages AS x ORDER BY x.id) AS y WHERE true"
    " ON CONFLICT (device_id, signature, batch, math, layout, algo_policy) DO UPDATE SET"
    " kind = excluded.kind, n_groups = excluded.n_groups, n_ops = excluded.n_ops,"
    " median_ms = excluded.median_ms, longest_ms = excluded.longest_ms,"
    " sum_ms = excluded.sum_ms, created_at = excluded.created_at"
    " WHERE excluded.created_at > stages.created_at";

opsched_status os_store_merge_stages(opsched_store *s, int64_t *added)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    *added = 0;
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, copy_stages, &stmt), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "copy stages", NULL), done);
    *added = sqlite3_changes(s->db);
done:
    sqlite3_finalize(stmt);
    return st;
}
