/*
 * collective.c - NCCL collectives measured across GPUs (opsched
 * commbench): one row per (device of rank 0, collective, dtype, size,
 * ranks, nodes) in the `collectives` table (schema 5), read back for the
 * alpha-beta fits, exported as CSV and merged with the other tables.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "opsched/comm.h"
#include "opsched/csv.h"
#include "store/store_impl.h"

static opsched_status dtype_of(opsched_store *s, const char *name, opsched_dtype *out)
{
    for (int d = 0; d < OPSCHED_DTYPE_COUNT; d++)
        if (name && strcmp(name, opsched_dtype_name((opsched_dtype)d)) == 0) {
            *out = (opsched_dtype)d;
            return OPSCHED_OK;
        }
    return OS_FAIL(s->ctx, OPSCHED_ERR_PARSE, "database %s: collective of unknown dtype '%s'",
                   s->path, name ? name : "(null)");
}

opsched_status opsched_store_collective_has(opsched_store *s, int64_t device_id,
                                            const opsched_collective_result *r, int nodes,
                                            int *found)
{
    static const char sql[] =
        "SELECT 1 FROM collectives WHERE device_id = ? AND collective = ? AND dtype = ?"
        " AND bytes = ? AND ranks = ? AND nodes = ? AND wrong = 0";
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    *found = 0;
    if (!s || !r) return OPSCHED_ERR_INVALID_ARG;
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, sql, &stmt), done);
    os_bind_begin(&b, stmt);
    os_bind_int(&b, device_id);
    os_bind_text(&b, opsched_collective_name(r->collective));
    os_bind_text(&b, opsched_dtype_name(r->dtype));
    os_bind_int(&b, r->bytes);
    os_bind_int(&b, r->ranks);
    os_bind_int(&b, nodes);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "look up a collective", found), done);
done:
    sqlite3_finalize(stmt);
    return st;
}

opsched_status opsched_store_collective_put(opsched_store *s, int64_t run_id, int64_t device_id,
                                            const opsched_collective_result *r, int nodes,
                                            const opsched_commbench_env *env)
{
    static const char sql[] =
        "INSERT OR REPLACE INTO collectives (run_id, device_id, " OS_COLLECTIVE_COLUMNS
        ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
        " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    if (!s || !r) return OPSCHED_ERR_INVALID_ARG;
    OS_TRY(os_store_begin(s));
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, sql, &stmt), done);
    os_bind_begin(&b, stmt);
    os_bind_int(&b, run_id);
    os_bind_int(&b, device_id);
    os_bind_text(&b, opsched_collective_name(r->collective));
    os_bind_text(&b, opsched_dtype_name(r->dtype));
    os_bind_int(&b, r->bytes);
    os_bind_int(&b, r->count);
    os_bind_int(&b, r->ranks);
    os_bind_int(&b, nodes);
    os_bind_int(&b, r->iters);
    os_bind_stats(&b, &r->stats);
    os_bind_double(&b, r->algbw_gbs);
    os_bind_double(&b, r->busbw_gbs);
    os_bind_int(&b, r->wrong);
    os_bind_double(&b, r->max_error);
    os_bind_text_opt(&b, env ? env->nccl_version_str : NULL);
    os_bind_text_opt(&b, env ? env->gpus : NULL);
    os_bind_text_opt(&b, env ? env->topology : NULL);
    os_bind_text_opt(&b, env ? env->env : NULL);
    os_bind_double(&b, os_store_now());
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "add a collective", NULL), done);
    OS_TRY_GOTO(st, os_store_commit(s), done);
done:
    sqlite3_finalize(stmt);
    if (st != OPSCHED_OK) os_store_rollback(s);
    return st;
}

/* The row's columns, in this order, for the reader and the export. */
#define ROW_SELECT                                                                                 \
    "SELECT c.collective, c.dtype, c.bytes, c.count, c.ranks, c.nodes, c.iters, c.n,"              \
    " c.min_ms, c.max_ms, c.mean_ms, c.median_ms, c.std_ms, c.p90_ms, c.algbw_gbs, c.busbw_gbs,"   \
    " c.wrong, c.max_error, c.nccl_version, d.name, d.uuid, c.gpus, c.topology, c.env,"            \
    " r.uuid, c.created_at FROM collectives AS c JOIN devices AS d ON d.id = c.device_id"          \
    " JOIN runs AS r ON r.id = c.run_id"

static double col_double(sqlite3_stmt *stmt, int i)
{
    return sqlite3_column_type(stmt, i) == SQLITE_NULL ? NAN : sqlite3_column_double(stmt, i);
}

static void col_text(sqlite3_stmt *stmt, int i, char *buf, size_t size)
{
    const unsigned char *t = sqlite3_column_text(stmt, i);
    snprintf(buf, size, "%s", t ? (const char *)t : "");
}

opsched_status opsched_store_collectives(opsched_store *s, const char *device_name,
                                         opsched_collective_row_fn fn, void *user)
{
    static const char sql[] = ROW_SELECT " WHERE ?1 IS NULL OR d.name = ?1 OR d.uuid = ?1"
                                         " ORDER BY c.collective, c.dtype, c.ranks, c.nodes,"
                                         " d.uuid, c.bytes";
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    os_binder b;
    int row = 0;
    if (!s || !fn) return OPSCHED_ERR_INVALID_ARG;
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, sql, &stmt), done);
    os_bind_begin(&b, stmt);
    os_bind_text(&b, device_name && *device_name ? device_name : NULL);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    for (;;) {
        OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "read collectives", &row), done);
        if (!row) break;
        opsched_collective_row x;
        memset(&x, 0, sizeof(x));
        const char *name = (const char *)sqlite3_column_text(stmt, 0);
        if (opsched_collective_parse(s->ctx, name, &x.r.collective) != OPSCHED_OK) {
            st = OS_FAIL(s->ctx, OPSCHED_ERR_PARSE, "database %s: unknown collective '%s'", s->path,
                         name ? name : "(null)");
            goto done;
        }
        OS_TRY_GOTO(st, dtype_of(s, (const char *)sqlite3_column_text(stmt, 1), &x.r.dtype), done);
        x.r.bytes = sqlite3_column_int64(stmt, 2);
        x.r.count = sqlite3_column_int64(stmt, 3);
        x.r.ranks = sqlite3_column_int(stmt, 4);
        x.nodes = sqlite3_column_int(stmt, 5);
        x.r.iters = sqlite3_column_int(stmt, 6);
        x.r.stats.n = sqlite3_column_int(stmt, 7);
        x.r.stats.min = col_double(stmt, 8);
        x.r.stats.max = col_double(stmt, 9);
        x.r.stats.mean = col_double(stmt, 10);
        x.r.stats.median = col_double(stmt, 11);
        x.r.stats.std = col_double(stmt, 12);
        x.r.stats.p90 = col_double(stmt, 13);
        x.r.algbw_gbs = col_double(stmt, 14);
        x.r.busbw_gbs = col_double(stmt, 15);
        x.r.wrong = sqlite3_column_int64(stmt, 16);
        x.r.max_error = col_double(stmt, 17);
        col_text(stmt, 18, x.nccl_version, sizeof(x.nccl_version));
        col_text(stmt, 19, x.device_name, sizeof(x.device_name));
        col_text(stmt, 20, x.device_uuid, sizeof(x.device_uuid));
        OS_TRY_GOTO(st, fn(&x, user), done);
    }
done:
    sqlite3_finalize(stmt);
    return st;
}

static const char *const csv_columns =
    "collective,dtype,bytes,count,ranks,nodes,iters,n,min_ms,max_ms,mean_ms,median_ms,std_ms,"
    "p90_ms,algbw_gbs,busbw_gbs,wrong,max_error,nccl_version,device_name,device_uuid,gpus,"
    "topology,env,run_uuid,created_at,time_us";

opsched_status opsched_store_export_collectives_csv(opsched_store *s, FILE *f)
{
    static const char sql[] = ROW_SELECT " ORDER BY c.collective, c.dtype, c.ranks, c.nodes,"
                                         " d.uuid, c.bytes";
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    opsched_csv_writer *w = NULL;
    int row = 0;
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!f) return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "collectives export: no file");
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, sql, &stmt), done);
    OS_TRY_GOTO(st, opsched_csv_writer_create(s->ctx, f, &w), done);
    OS_TRY_GOTO(st, opsched_csv_header(w, csv_columns), done);
    const int n = sqlite3_column_count(stmt);
    for (;;) {
        OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "read collectives", &row), done);
        if (!row) break;
        for (int i = 0; i < n; i++) {
            switch (sqlite3_column_type(stmt, i)) {
            case SQLITE_INTEGER:
                OS_TRY_GOTO(st, opsched_csv_int(w, sqlite3_column_int64(stmt, i)), done);
                break;
            case SQLITE_FLOAT:
                OS_TRY_GOTO(st,
                            opsched_csv_double(w, sqlite3_column_double(stmt, i),
                                               i == n - 1 ? "%.6f" : "%.9g"),
                            done);
                break;
            case SQLITE_TEXT:
                OS_TRY_GOTO(st, opsched_csv_str(w, (const char *)sqlite3_column_text(stmt, i)),
                            done);
                break;
            default:
                OS_TRY_GOTO(st, opsched_csv_empty(w), done);
            }
        }
        /* time_us: the median per operation, as nccl-tests prints it. */
        OS_TRY_GOTO(st, opsched_csv_double(w, col_double(stmt, 11) * 1e3, "%.3f"), done);
        OS_TRY_GOTO(st, opsched_csv_end_row(w), done);
    }
    if (fflush(f) != 0 || ferror(f))
        st = OS_FAIL(s->ctx, OPSCHED_ERR_IO, "collectives export from %s: write failed: %s",
                     s->path, strerror(errno));
done:
    opsched_csv_writer_free(w);
    sqlite3_finalize(stmt);
    return st;
}

/* Runs and devices map by their keys; a row of the same (device,
 * collective, dtype, size, ranks, nodes) is replaced by the newer. */
static const char copy_collectives[] =
    "INSERT OR REPLACE INTO main.collectives (run_id, device_id, " OS_COLLECTIVE_COLUMNS ")"
    " SELECT * FROM (SELECT"
    " (SELECT mr.id FROM main.runs AS mr JOIN src.runs AS sr ON sr.uuid = mr.uuid"
    "  WHERE sr.id = x.run_id) AS new_run_id,"
    " (SELECT md.id FROM main.devices AS md JOIN src.devices AS sd"
    "  ON sd.backend = md.backend AND sd.uuid = md.uuid WHERE sd.id = x.device_id) AS "
    "new_device_id,"
    " " OS_COLLECTIVE_COLUMNS " FROM src.collectives AS x ORDER BY x.id) AS y"
    " WHERE NOT EXISTS (SELECT 1 FROM main.collectives AS z WHERE z.device_id = y.new_device_id"
    " AND z.collective = y.collective AND z.dtype = y.dtype AND z.bytes = y.bytes"
    " AND z.ranks = y.ranks AND z.nodes = y.nodes AND z.created_at >= y.created_at)";

opsched_status os_store_merge_collectives(opsched_store *s, int64_t *added)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    *added = 0;
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, copy_collectives, &stmt), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "copy collectives", NULL), done);
    *added = sqlite3_changes(s->db);
done:
    sqlite3_finalize(stmt);
    return st;
}
