/*
 * store_impl.h - what the files of the measurement database share: the
 * store object, the schema version, the column lists that the writer and
 * the merge must agree on, and small SQLite helpers that turn every failed
 * call into a status with the file, the call and SQLite's message.
 *
 * Every value reaches SQLite through sqlite3_bind_*; the only SQL text is
 * constant.  Every write runs in a BEGIN IMMEDIATE transaction: in WAL mode
 * a transaction that starts as a reader and later writes can fail with
 * SQLITE_BUSY without waiting when another process committed in between,
 * while an immediate one waits for the write lock under the busy timeout.
 */
#ifndef OS_STORE_IMPL_H
#define OS_STORE_IMPL_H

#include <sqlite3.h>

#include "core/error.h"
#include "opsched/store.h"

/* The schema this build writes and the newest it can read. */
#define OS_STORE_SCHEMA 5
/* OPSCHED_STORE_APPLICATION_ID in decimal, as PRAGMA takes it. */
#define OS_STORE_SET_APP_ID "PRAGMA application_id = 1330664259"
_Static_assert(OPSCHED_STORE_APPLICATION_ID == 1330664259, "OS_STORE_SET_APP_ID is stale");
/* How long any connection (reader or writer) waits for another process's lock. */
#define OS_STORE_BUSY_MS 30000

struct opsched_store {
    opsched_ctx *ctx; /* borrowed */
    sqlite3 *db;
    char *path;   /* owned copy, for messages */
    int readonly; /* opened OPSCHED_STORE_READ_ONLY: os_store_begin refuses */
    int batch;    /* inside opsched_store_batch_begin: writes nest as savepoints */
    int nested;   /* a write's savepoint is open inside the batch */
};

/* Columns of `runs` without the id, in the order merge copies them. */
#define OS_RUN_COLUMNS                                                                             \
    "uuid, command, spec, user, host, shard_index, shard_count, started_at, ended_at, "            \
    "status, tool_version"

/* Columns of `devices` without the id. */
#define OS_DEVICE_COLUMNS                                                                          \
    "backend, uuid, name, pci_bus_id, driver_version, runtime_version, library_versions, "         \
    "sm_count, cc_major, cc_minor, memory_bytes, l2_bytes, power_limit_w, has_power, "             \
    "has_energy, first_seen, last_seen"

/* Columns of `configs` without the id. */
#define OS_CONFIG_COLUMNS                                                                          \
    "signature, op, batch, in_channels, out_channels, kernel, stride, padding, groups, "           \
    "height, width, flops, bytes, dtype"

/* Columns of `measurements` after id, run_id, device_id and config_id. */
#define OS_MEASUREMENT_COLUMNS                                                                     \
    "settings_key, algo_policy, algo, math, layout, cache, status, message, n, min_ms, "           \
    "max_ms, mean_ms, median_ms, std_ms, p90_ms, p95_ms, p99_ms, trimmed_mean_ms, cv, "            \
    "unstable, launches_per_sample, workspace_bytes, energy_valid, energy_method, "                \
    "energy_launches, energy_window_ms, energy_j, dynamic_energy_j, energy_power_j, "              \
    "power_mean_w, idle_power_w, temperature_c, sm_clock_mhz, power_limit_w, created_at"

/* Columns of `network_runs` after id, run_id and device_id. */
#define OS_NETWORK_COLUMNS                                                                         \
    "model, batch, input_size, input_width, algo_policy, algo_fallback, math, layout, mode, n, "   \
    "min_ms, max_ms, mean_ms, median_ms, std_ms, p90_ms, p95_ms, p99_ms, trimmed_mean_ms, cv, "    \
    "enqueue_ms, energy_valid, energy_method, energy_launches, energy_window_ms, energy_j, "       \
    "dynamic_energy_j, energy_power_j, power_mean_w, idle_power_w, temperature_c, sm_clock_mhz, "  \
    "power_limit_w, peak_memory_bytes, layer_sum_ms, attribution_latency, layer_energy_j, "        \
    "attribution_energy, check_rel_l2, check_passed, created_at"

/* Columns of `calibrations` after id and device_id. */
#define OS_CALIBRATION_COLUMNS                                                                     \
    "math, peak_flops, bandwidth, launch_us, graph_node_us, idle_power_w, created_at"

/* Columns of `stages` after id and device_id. */
#define OS_STAGE_COLUMNS                                                                           \
    "signature, kind, batch, math, layout, algo_policy, n_groups, n_ops, median_ms, longest_ms, "  \
    "sum_ms, created_at"

/* Columns of `collectives` after id, run_id and device_id. */
#define OS_COLLECTIVE_COLUMNS                                                                      \
    "collective, dtype, bytes, count, ranks, nodes, iters, n, min_ms, max_ms, mean_ms, "           \
    "median_ms, std_ms, p90_ms, p95_ms, p99_ms, trimmed_mean_ms, cv, algbw_gbs, busbw_gbs, "       \
    "wrong, max_error, nccl_version, gpus, topology, env, created_at"
/* Copies the attached database `src`'s collectives into main inside the
 * merge's transaction (runs and devices mapped by their keys; the newer of
 * two measurements of one collective, size and rank count wins); *added
 * gets the rows written or replaced.  (collective.c) */
opsched_status os_store_merge_collectives(opsched_store *s, int64_t *added);
/* Copies the attached database `src`'s measured stages into main inside
 * the merge's transaction (devices mapped by their keys; the newer of two
 * measurements of one stage and setting wins); *added gets the rows
 * written or replaced.  (stage.c) */
opsched_status os_store_merge_stages(opsched_store *s, int64_t *added);

/* Copies the attached database `src`'s calibrations into main inside the
 * merge's transaction (devices mapped by their keys; the newer of two
 * calibrations of one device and math mode wins); *added gets the rows
 * written or replaced.  (calibration.c) */
opsched_status os_store_merge_calibrations(opsched_store *s, int64_t *added);

/* Copies the attached database `src`'s network_runs into main inside the
 * merge's transaction, mapping runs and devices by their keys; *added gets
 * the rows written.  (network.c) */
opsched_status os_store_merge_networks(opsched_store *s, int64_t *added);

/* How os_store_connect opens a file: read-only (else read-write),
 * created when missing, or immutable (read-only, no locks, no -wal or -shm
 * files: for a WAL file in a directory this process cannot write). */
enum { OS_CONNECT_READONLY = 1, OS_CONNECT_CREATE = 2, OS_CONNECT_IMMUTABLE = 4 };

/* Opens a connection to path with the OS_CONNECT_* flags, extended result
 * codes and the busy timeout; no schema work.  *out is freed with
 * opsched_store_close. */
opsched_status os_store_connect(opsched_ctx *ctx, const char *path, int flags, opsched_store **out);

/* Tells what the connection's main database is, reading only: *version is
 * its schema (1 .. OS_STORE_SCHEMA) or 0 for an SQLite file with no schema
 * at all (new, or a zero-length file); *stamped is whether it carries
 * opsched's application_id.  A foreign file (another application's id,
 * tables opsched does not make, opsched's tables missing) is
 * OPSCHED_ERR_PARSE; a newer schema OPSCHED_ERR_VERSION.  (schema.c) */
opsched_status os_store_identify(opsched_store *s, int *version, int *stamped);

/* Inside the caller's transaction: creates the whole schema (version 0),
 * or upgrades `from` to OS_STORE_SCHEMA; either way stamps the
 * application_id and the version.  (schema.c) */
opsched_status os_store_schema_build(opsched_store *s, int from);

/* Switches the file to WAL mode (waiting up to the busy timeout for the
 * file to itself) and sets the connection's pragmas: foreign keys,
 * synchronous, checkpoint size.  (schema.c) */
opsched_status os_store_set_wal(opsched_store *s);

/* PRAGMA user_version of the connection's main database. */
opsched_status os_store_user_version(opsched_store *s, int *out);

/* OPSCHED_ERR_VERSION with the standard message when version is newer than
 * this build reads; OK otherwise. */
opsched_status os_store_check_version(opsched_store *s, int version);

/* Records a failed SQLite call (rc) and returns its status: disk full and
 * other I/O failures, including a file that cannot be opened or written,
 * give OPSCHED_ERR_IO (the message of a failed write gives the space left
 * and any file size limit); a lock held past the busy timeout
 * OPSCHED_ERR_IO naming the wait; a file that is not a database or is
 * corrupt OPSCHED_ERR_PARSE; SQLite out of memory OPSCHED_ERR_NOMEM;
 * anything else OPSCHED_ERR_BACKEND.  call names what failed. */
opsched_status os_store_fail(opsched_store *s, int rc, const char *call, const char *file,
                             int line);
#define OS_STORE_FAIL(s, rc, call) os_store_fail((s), (rc), (call), __FILE__, __LINE__)

opsched_status os_store_prepare_at(opsched_store *s, const char *sql, sqlite3_stmt **out,
                                   const char *file, int line);
/* Steps once; *row (may be NULL) is 1 for a row, 0 when done.  what names
 * the statement in the message. */
opsched_status os_store_step_at(opsched_store *s, sqlite3_stmt *stmt, const char *what, int *row,
                                const char *file, int line);
/* Runs constant SQL (one or more statements, no values). */
opsched_status os_store_exec_at(opsched_store *s, const char *sql, const char *what,
                                const char *file, int line);
#define OS_STORE_PREPARE(s, sql, out) os_store_prepare_at((s), (sql), (out), __FILE__, __LINE__)
#define OS_STORE_STEP(s, stmt, what, row)                                                          \
    os_store_step_at((s), (stmt), (what), (row), __FILE__, __LINE__)
#define OS_STORE_EXEC(s, sql, what) os_store_exec_at((s), (sql), (what), __FILE__, __LINE__)

/* BEGIN IMMEDIATE (OPSCHED_ERR_INVALID_ARG on a read-only store) / COMMIT,
 * or inside a batch a savepoint and its release; rollback does nothing outside a transaction and
 * cannot fail (its result would hide the error that led to it). */
opsched_status os_store_begin(opsched_store *s);
opsched_status os_store_commit(opsched_store *s);
void os_store_rollback(opsched_store *s);

/* Binds parameters 1, 2, ... in order; the first failure is kept in rc and
 * later calls do nothing, so a statement's binds are checked once. */
typedef struct os_binder {
    sqlite3_stmt *stmt;
    int idx;
    int rc;
} os_binder;

void os_bind_begin(os_binder *b, sqlite3_stmt *stmt);
void os_bind_text(os_binder *b, const char *v);     /* NULL binds NULL */
void os_bind_text_opt(os_binder *b, const char *v); /* NULL or "" binds NULL */
void os_bind_int(os_binder *b, int64_t v);
void os_bind_int_opt(os_binder *b, int64_t v); /* negative (not applicable) binds NULL */
void os_bind_double(os_binder *b, double v);   /* NaN binds NULL */
void os_bind_null(os_binder *b);
/* OK, or the failure of the first bind recorded on the store. */
opsched_status os_bind_end_at(opsched_store *s, const os_binder *b, const char *file, int line);
#define OS_BIND_END(s, b) os_bind_end_at((s), (b), __FILE__, __LINE__)

/* Unix time in seconds, with microseconds. */
double os_store_now(void);

/* Binds a measurement's statistics (11 columns) and energy (12 columns). */
void os_bind_stats(os_binder *b, const opsched_stats *t);
void os_bind_energy(os_binder *b, const opsched_energy *e);

#endif /* OS_STORE_IMPL_H */
