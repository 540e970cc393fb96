/*
 * merge.c - copies another measurement database into this one, as shards
 * of a sweep come home.
 *
 * Rows are matched by what identifies them across files, never by their
 * ids: runs by uuid, devices by (backend, uuid), configurations by
 * signature, measurements by (run, device, configuration, settings key,
 * created_at), network runs by (run, device, model, batch, size, mode,
 * created_at), calibrations by (device, math mode) and measured schedule
 * stages by (device, signature, batch, math, layout, policy) and measured
 * collectives by (device, collective, dtype, size, ranks, nodes), the newer
 * winning.
 * So merging a file twice, or merging files that share runs,
 * adds each row once, and every measurement keeps the run it came from.
 * The whole copy is one transaction: a failure leaves this file as it was.
 */
#include <string.h>

#include "store/store_impl.h"

/* Refuses a source that is not an opsched database or whose schema this
 * build cannot read, before it is attached (ATTACH would create a missing
 * file). */
static opsched_status check_source(opsched_store *s, const char *src_path)
{
    opsched_status st;
    opsched_store *src = NULL;
    int version = 0, stamped = 0;
    OS_TRY_GOTO(st, os_store_connect(s->ctx, src_path, OS_CONNECT_READONLY, &src), done);
    OS_TRY_GOTO(st, os_store_identify(src, &version, &stamped), done);
    if (version == 0)
        st = OS_FAIL(s->ctx, OPSCHED_ERR_PARSE, "database %s is not an opsched database", src_path);
    else if (version != OS_STORE_SCHEMA)
        st = OS_FAIL(s->ctx, OPSCHED_ERR_UNSUPPORTED,
                     "database %s has schema %d; open it with this opsched to upgrade it to %d "
                     "before merging",
                     src_path, version, OS_STORE_SCHEMA);
done:
    opsched_store_close(src);
    return st;
}

/* Runs one statement of the copy; *changed (may be NULL) gets the rows it
 * wrote. */
static opsched_status copy_step(opsched_store *s, const char *sql, const char *what,
                                int64_t *changed)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, sql, &stmt), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, what, NULL), done);
    if (changed) *changed = sqlite3_changes(s->db);
done:
    sqlite3_finalize(stmt);
    return st;
}

static opsched_status count_source(opsched_store *s, int64_t *out)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    int row = 0;
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, "SELECT count(*) FROM src.measurements", &stmt), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "count source measurements", &row), done);
    *out = row ? (int64_t)sqlite3_column_int64(stmt, 0) : 0;
done:
    sqlite3_finalize(stmt);
    return st;
}

static const char copy_runs[] =
    "INSERT INTO main.runs (" OS_RUN_COLUMNS ") SELECT " OS_RUN_COLUMNS " FROM src.runs"
    " WHERE uuid NOT IN (SELECT uuid FROM main.runs) ORDER BY id";

/* A shard merged while it ran and again once it finished: take its end. */
static const char finish_runs[] =
    "UPDATE main.runs AS m SET ended_at = r.ended_at, status = r.status FROM src.runs AS r"
    " WHERE r.uuid = m.uuid AND m.ended_at IS NULL AND r.ended_at IS NOT NULL";

static const char copy_devices[] =
    "INSERT INTO main.devices (" OS_DEVICE_COLUMNS ") SELECT " OS_DEVICE_COLUMNS
    " FROM src.devices AS d WHERE NOT EXISTS (SELECT 1 FROM main.devices AS m"
    " WHERE m.backend = d.backend AND m.uuid = d.uuid) ORDER BY id";

static const char copy_configs[] =
    "INSERT INTO main.configs (" OS_CONFIG_COLUMNS ") SELECT " OS_CONFIG_COLUMNS
    " FROM src.configs WHERE signature NOT IN (SELECT signature FROM main.configs) ORDER BY id";

/* The inner query maps the source's ids to this file's through the keys
 * copied above; the outer one drops what is already here. */
static const char copy_measurements[] =
    "INSERT INTO main.measurements (run_id, device_id, config_id, " OS_MEASUREMENT_COLUMNS ")"
    " SELECT * FROM (SELECT"
    " (SELECT mr.id FROM main.runs AS mr JOIN src.runs AS sr ON sr.uuid = mr.uuid"
    "  WHERE sr.id = x.run_id) AS new_run_id,"
    " (SELECT md.id FROM main.devices AS md JOIN src.devices AS sd"
    "  ON sd.backend = md.backend AND sd.uuid = md.uuid"
    "  WHERE sd.id = x.device_id) AS new_device_id,"
    " (SELECT mc.id FROM main.configs AS mc JOIN src.configs AS sc ON sc.signature = mc.signature"
    "  WHERE sc.id = x.config_id) AS new_config_id, " OS_MEASUREMENT_COLUMNS
    " FROM src.measurements AS x ORDER BY x.id) AS y"
    " WHERE NOT EXISTS (SELECT 1 FROM main.measurements AS z WHERE z.device_id = y.new_device_id"
    " AND z.config_id = y.new_config_id AND z.settings_key = y.settings_key"
    " AND z.run_id = y.new_run_id AND z.created_at = y.created_at)";

opsched_status opsched_store_merge(opsched_store *s, const char *src_path,
                                   opsched_merge_stats *stats)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    int attached = 0;
    int64_t total = 0;
    opsched_merge_stats r;
    memset(&r, 0, sizeof(r));
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (stats) memset(stats, 0, sizeof(*stats));
    if (!src_path || !*src_path)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_merge: no source path");
    OS_TRY(check_source(s, src_path));

    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, "ATTACH DATABASE ? AS src", &stmt), done);
    os_bind_begin(&b, stmt);
    os_bind_text(&b, src_path);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "attach the source", NULL), done);
    attached = 1;
    sqlite3_finalize(stmt);
    stmt = NULL;

    OS_TRY_GOTO(st, os_store_begin(s), done);
    OS_TRY_GOTO(st, count_source(s, &total), done);
    OS_TRY_GOTO(st, copy_step(s, copy_runs, "copy runs", &r.runs), done);
    OS_TRY_GOTO(st, copy_step(s, finish_runs, "update finished runs", NULL), done);
    OS_TRY_GOTO(st, copy_step(s, copy_devices, "copy devices", &r.devices), done);
    OS_TRY_GOTO(st, copy_step(s, copy_configs, "copy configurations", &r.configs), done);
    OS_TRY_GOTO(st, copy_step(s, copy_measurements, "copy measurements", &r.measurements_added),
                done);
    r.measurements_skipped = total - r.measurements_added;
    OS_TRY_GOTO(st, os_store_merge_networks(s, &r.network_runs_added), done);
    OS_TRY_GOTO(st, os_store_merge_calibrations(s, &r.calibrations), done);
    OS_TRY_GOTO(st, os_store_merge_stages(s, &r.stages), done);
    OS_TRY_GOTO(st, os_store_merge_collectives(s, &r.collectives), done);
    OS_TRY_GOTO(st, os_store_commit(s), done);
    if (stats) *stats = r;
done:
    sqlite3_finalize(stmt);
    if (st != OPSCHED_OK) os_store_rollback(s);
    if (attached) {
        int rc = sqlite3_exec(s->db, "DETACH DATABASE src", NULL, NULL, NULL);
        /* An earlier failure is the one to report. */
        if (rc != SQLITE_OK && st == OPSCHED_OK) st = OS_STORE_FAIL(s, rc, "detach the source");
    }
    return st;
}
