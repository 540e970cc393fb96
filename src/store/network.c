/*
 * network.c - whole networks in the measurement database: the network_runs
 * table (schema 2) that `opsched profile` writes, the lookup that lets a
 * long profile resume, the per-network summary `opsched status` prints, and
 * the part of a merge that copies these rows.
 *
 * A row is one (device, model, batch, input size, settings) profiled in one
 * mode; the free-running row is always written, so its presence is what
 * "already profiled" means.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "store/store_impl.h"

static const char *layout_text(opsched_layout l)
{
    return l == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw";
}

static const char *policy_text(const char *p)
{
    return p && *p ? p : "heuristic";
}

static int valid_mode(const char *m)
{
    return m && (strcmp(m, "free") == 0 || strcmp(m, "graph") == 0 || strcmp(m, "layered") == 0);
}

opsched_status opsched_store_add_network(opsched_store *s, int64_t run_id, int64_t device_id,
                                         const opsched_network_record *rec, int64_t *id)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!rec || !rec->model || !*rec->model || !valid_mode(rec->mode) || rec->batch < 1 ||
        rec->height < 1)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_add_network: a model, a batch, a size and a mode "
                       "(free, graph or layered) are required");
    OS_TRY(os_store_begin(s));
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "INSERT INTO network_runs (run_id, device_id, " OS_NETWORK_COLUMNS
                                 ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                                 " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                                 " ?, ?, ?, ?)",
                                 &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_int(&b, run_id);
    os_bind_int(&b, device_id);
    os_bind_text(&b, rec->model);
    os_bind_int(&b, rec->batch);
    os_bind_int(&b, rec->height);
    os_bind_int(&b, rec->width > 0 ? rec->width : rec->height);
    os_bind_text(&b, policy_text(rec->algo_policy));
    os_bind_text_opt(&b, rec->algo_fallback);
    os_bind_text(&b, opsched_math_name(rec->math));
    os_bind_text(&b, layout_text(rec->layout));
    os_bind_text(&b, rec->mode);
    os_bind_stats(&b, &rec->stats);
    os_bind_double(&b, rec->enqueue_ms);
    os_bind_energy(&b, &rec->energy);
    os_bind_int_opt(&b, rec->peak_memory_bytes);
    os_bind_double(&b, rec->layer_sum_ms);
    os_bind_double(&b, rec->attribution_latency);
    os_bind_double(&b, rec->layer_energy_j);
    os_bind_double(&b, rec->attribution_energy);
    os_bind_double(&b, rec->check_rel_l2);
    if (rec->check_passed < 0)
        os_bind_null(&b);
    else
        os_bind_int(&b, rec->check_passed != 0);
    os_bind_double(&b, os_store_now());
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "add network run", NULL), done);
    if (id) *id = (int64_t)sqlite3_last_insert_rowid(s->db);
    OS_TRY_GOTO(st, os_store_commit(s), done);
done:
    sqlite3_finalize(stmt);
    if (st != OPSCHED_OK) os_store_rollback(s);
    return st;
}

opsched_status opsched_store_has_network(opsched_store *s, int64_t device_id,
                                         const opsched_network_record *key, int *found)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    int row = 0;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!key || !key->model || !found)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_has_network: NULL argument");
    *found = 0;
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT 1 FROM network_runs WHERE device_id = ? AND model = ?"
                                 " AND batch = ? AND input_size = ? AND input_width = ?"
                                 " AND algo_policy = ? AND math = ? AND layout = ? LIMIT 1",
                                 &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_int(&b, device_id);
    os_bind_text(&b, key->model);
    os_bind_int(&b, key->batch);
    os_bind_int(&b, key->height);
    os_bind_int(&b, key->width > 0 ? key->width : key->height);
    os_bind_text(&b, policy_text(key->algo_policy));
    os_bind_text(&b, opsched_math_name(key->math));
    os_bind_text(&b, layout_text(key->layout));
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "look up network run", &row), done);
    *found = row;
done:
    sqlite3_finalize(stmt);
    return st;
}

static const char *column_text(sqlite3_stmt *stmt, int i)
{
    const unsigned char *t = sqlite3_column_text(stmt, i);
    return t ? (const char *)t : "";
}

opsched_status opsched_store_network_summaries(opsched_store *s, opsched_network_summary_fn fn,
                                               void *user)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!fn)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_store_network_summaries: no callback");
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT d.backend || ':' || d.name, r.model, r.batch,"
                                 " r.algo_policy, r.math, r.layout, count(DISTINCT r.input_size),"
                                 " min(r.input_size), max(r.input_size), count(*)"
                                 " FROM network_runs AS r JOIN devices AS d ON d.id = r.device_id"
                                 " GROUP BY r.device_id, r.model, r.batch, r.algo_policy, r.math,"
                                 " r.layout ORDER BY r.model, r.batch, r.algo_policy, r.math,"
                                 " r.layout, r.device_id",
                                 &stmt),
                done);
    for (;;) {
        int row = 0;
        OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "summarise network runs", &row), done);
        if (!row) break;
        opsched_network_summary r;
        r.device = column_text(stmt, 0);
        r.model = column_text(stmt, 1);
        r.batch = (int64_t)sqlite3_column_int64(stmt, 2);
        r.algo_policy = column_text(stmt, 3);
        r.math = column_text(stmt, 4);
        r.layout = column_text(stmt, 5);
        r.sizes = (int64_t)sqlite3_column_int64(stmt, 6);
        r.min_size = (int64_t)sqlite3_column_int64(stmt, 7);
        r.max_size = (int64_t)sqlite3_column_int64(stmt, 8);
        r.rows = (int64_t)sqlite3_column_int64(stmt, 9);
        fn(&r, user);
    }
done:
    sqlite3_finalize(stmt);
    return st;
}

/* The source's run and device ids are mapped to this file's through the
 * keys the merge copied first; rows already here (same run, device, model,
 * size, mode and time) are left out. */
static const char copy_networks[] =
    "INSERT INTO main.network_runs (run_id, device_id, " OS_NETWORK_COLUMNS ")"
    " SELECT * FROM (SELECT"
    " (SELECT mr.id FROM main.runs AS mr JOIN src.runs AS sr ON sr.uuid = mr.uuid"
    "  WHERE sr.id = x.run_id) AS new_run_id,"
    " (SELECT md.id FROM main.devices AS md JOIN src.devices AS sd"
    "  ON sd.backend = md.backend AND sd.uuid = md.uuid"
    "  WHERE sd.id = x.device_id) AS new_device_id, " OS_NETWORK_COLUMNS
    " FROM src.network_runs AS x ORDER BY x.id) AS y"
    " WHERE NOT EXISTS (SELECT 1 FROM main.network_runs AS z WHERE z.run_id = y.new_run_id"
    " AND z.device_id = y.new_device_id AND z.model = y.model AND z.batch = y.batch"
    " AND z.input_size = y.input_size AND z.mode = y.mode AND z.created_at = y.created_at)";

opsched_status os_store_merge_networks(opsched_store *s, int64_t *added)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    *added = 0;
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, copy_networks, &stmt), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "copy network runs", NULL), done);
    *added = sqlite3_changes(s->db);
done:
    sqlite3_finalize(stmt);
    return st;
}
