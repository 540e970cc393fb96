/*
 * export.c - measurements as CSV (RFC 4180, through opsched/csv.h).
 *
 * The first ten columns are the classic convolution-sweep layout that
 * existing latency datasets use (Batch size ... Latency Type, latency being
 * the median in milliseconds); the rest carry what the database knows
 * beyond it.  Every operator uses the same columns; a cell that does not
 * apply (the kernel of a linear layer, the latency of an unsupported
 * configuration) is empty.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "opsched/csv.h"
#include "store/store_impl.h"

/* Header names, in the order of the query's columns. */
static const char *const columns[] = {"Batch size",
                                      "In Channels",
                                      "Out Channels",
                                      "Kernel Size",
                                      "Stride",
                                      "Width",
                                      "Height",
                                      "Flops",
                                      "Latency",
                                      "Latency Type",
                                      "op",
                                      "padding",
                                      "groups",
                                      "dtype",
                                      "algo_policy",
                                      "algo",
                                      "math",
                                      "layout",
                                      "cache",
                                      "status",
                                      "n",
                                      "min",
                                      "max",
                                      "mean",
                                      "std",
                                      "p90",
                                      "p95",
                                      "p99",
                                      "trimmed_mean",
                                      "cv",
                                      "workspace_bytes",
                                      "energy_j",
                                      "dynamic_energy_j",
                                      "power_mean_w",
                                      "energy_method",
                                      "device_name",
                                      "device_uuid",
                                      "run_uuid",
                                      "created_at",
                                      "signature",
                                      "energy_power_j",
                                      "idle_power_w",
                                      "energy_window_ms",
                                      "energy_launches",
                                      "launches_per_sample"};

static const char export_sql[] =
    "SELECT c.batch, c.in_channels, c.out_channels, c.kernel, c.stride, c.width, c.height,"
    " c.flops, m.median_ms, 'median_ms', c.op, c.padding, c.groups, c.dtype, m.algo_policy,"
    " m.algo, m.math, m.layout, m.cache, m.status, m.n, m.min_ms, m.max_ms, m.mean_ms,"
    " m.std_ms, m.p90_ms, m.p95_ms, m.p99_ms, m.trimmed_mean_ms, m.cv, m.workspace_bytes,"
    " m.energy_j, m.dynamic_energy_j, m.power_mean_w, m.energy_method, d.name, d.uuid, r.uuid,"
    " m.created_at, c.signature, m.energy_power_j, m.idle_power_w, m.energy_window_ms,"
    " m.energy_launches, m.launches_per_sample"
    " FROM measurements AS m JOIN configs AS c ON c.id = m.config_id"
    " JOIN devices AS d ON d.id = m.device_id JOIN runs AS r ON r.id = m.run_id"
    " WHERE ?1 IS NULL OR c.op = ?1 ORDER BY m.id";

static opsched_status put_cell(opsched_csv_writer *w, sqlite3_stmt *stmt, int i, int is_time)
{
    switch (sqlite3_column_type(stmt, i)) {
    case SQLITE_INTEGER:
        return opsched_csv_int(w, sqlite3_column_int64(stmt, i));
    case SQLITE_FLOAT:
        /* Times need every microsecond; measurements 9 digits. */
        return opsched_csv_double(w, sqlite3_column_double(stmt, i), is_time ? "%.6f" : "%.9g");
    case SQLITE_TEXT:
        return opsched_csv_str(w, (const char *)sqlite3_column_text(stmt, i));
    default: /* NULL: does not apply */
        return opsched_csv_empty(w);
    }
}

opsched_status opsched_store_export_csv(opsched_store *s, FILE *f, const char *op_filter)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    opsched_csv_writer *w = NULL;
    os_binder b;
    int row = 0;
    const int n = (int)(sizeof(columns) / sizeof(columns[0]));
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!f) return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_export_csv: no file");
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, export_sql, &stmt), done);
    if (sqlite3_column_count(stmt) != n) {
        st = OS_FAIL(s->ctx, OPSCHED_ERR_BACKEND, "CSV export: query and header disagree");
        goto done;
    }
    os_bind_begin(&b, stmt);
    os_bind_text(&b, op_filter && *op_filter ? op_filter : NULL);
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, opsched_csv_writer_create(s->ctx, f, &w), done);
    for (int i = 0; i < n; i++)
        OS_TRY_GOTO(st, opsched_csv_str(w, columns[i]), done);
    OS_TRY_GOTO(st, opsched_csv_end_row(w), done);
    for (;;) {
        OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "read measurements", &row), done);
        if (!row) break;
        for (int i = 0; i < n; i++)
            OS_TRY_GOTO(st, put_cell(w, stmt, i, i == 38), done);
        OS_TRY_GOTO(st, opsched_csv_end_row(w), done);
    }
    if (fflush(f) != 0 || ferror(f))
        st = OS_FAIL(s->ctx, OPSCHED_ERR_IO, "CSV export from %s: write failed: %s", s->path,
                     strerror(errno));
done:
    opsched_csv_writer_free(w);
    sqlite3_finalize(stmt);
    return st;
}
