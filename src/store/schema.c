/*
 * schema.c - the database schema, its version (PRAGMA user_version) and the
 * connection settings every store uses: WAL, foreign keys, synchronous.
 *
 * Schema history (for each change bump OS_STORE_SCHEMA and teach
 * os_store_schema_ensure to upgrade older files; never edit a released
 * version's tables in place):
 *   1  devices, runs, configs, measurements.
 *   2  network_runs: whole networks profiled end to end (opsched profile).
 *      A version-1 file gains the table when a build of version 2 opens it.
 *   3  calibrations: a device's peak FLOP rate, bandwidth, launch and graph
 *      node overheads and idle power per math mode (opsched devices
 *      --calibrate), one row per (device, math).  Older files gain the
 *      table in place.
 *   4  stages: stages of inter-operator schedules measured as a whole
 *      (opsched schedule --cost measure), by stage signature, with the
 *      single-operator costs of their groups for the contention fit.
 *      Older files gain the table in place.
 *
 * Sizes and counts that do not apply to a configuration (the kernel of a
 * linear layer) are NULL, so queries read "kernel IS NULL" rather than
 * "kernel = -1".  Times are Unix seconds as REAL, with microseconds.
 */
#include <string.h>

#include "store/store_impl.h"

#define OS_STR_(x) #x
#define OS_STR(x) OS_STR_(x)

static const char schema_v1[] =
    "CREATE TABLE devices ("
    " id INTEGER PRIMARY KEY,"
    " backend TEXT NOT NULL,"
    " uuid TEXT NOT NULL,"
    " name TEXT NOT NULL,"
    " pci_bus_id TEXT,"
    " driver_version TEXT,"
    " runtime_version TEXT,"
    " library_versions TEXT,"
    " sm_count INTEGER,"
    " cc_major INTEGER,"
    " cc_minor INTEGER,"
    " memory_bytes INTEGER,"
    " l2_bytes INTEGER,"
    " power_limit_w REAL,"
    " has_power INTEGER NOT NULL,"
    " has_energy INTEGER NOT NULL,"
    " first_seen REAL NOT NULL,"
    " last_seen REAL NOT NULL,"
    " UNIQUE (backend, uuid));"
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY,"
    " uuid TEXT NOT NULL UNIQUE,"
    " command TEXT,"
    " spec TEXT,"
    " user TEXT,"
    " host TEXT,"
    " shard_index INTEGER NOT NULL,"
    " shard_count INTEGER NOT NULL,"
    " started_at REAL NOT NULL,"
    " ended_at REAL,"
    " status TEXT NOT NULL," /* running, done, interrupted, failed */
    " tool_version TEXT NOT NULL);"
    "CREATE TABLE configs ("
    " id INTEGER PRIMARY KEY,"
    " signature TEXT NOT NULL UNIQUE,"
    " op TEXT NOT NULL,"
    " batch INTEGER,"
    " in_channels INTEGER,"
    " out_channels INTEGER,"
    " kernel INTEGER,"
    " stride INTEGER,"
    " padding INTEGER,"
    " groups INTEGER,"
    " height INTEGER,"
    " width INTEGER,"
    " flops INTEGER,"
    " bytes INTEGER,"
    " dtype TEXT NOT NULL);"
    "CREATE INDEX configs_op ON configs (op);"
    "CREATE TABLE measurements ("
    " id INTEGER PRIMARY KEY,"
    " run_id INTEGER NOT NULL REFERENCES runs (id),"
    " device_id INTEGER NOT NULL REFERENCES devices (id),"
    " config_id INTEGER NOT NULL REFERENCES configs (id),"
    " settings_key TEXT NOT NULL,"
    " algo_policy TEXT NOT NULL,"
    " algo TEXT,"
    " math TEXT,"
    " layout TEXT,"
    " cache TEXT,"
    " status TEXT NOT NULL CHECK (status IN ('ok', 'unsupported', 'oom', 'error')),"
    " message TEXT,"
    " n INTEGER,"
    " min_ms REAL, max_ms REAL, mean_ms REAL, median_ms REAL, std_ms REAL,"
    " p90_ms REAL, p95_ms REAL, p99_ms REAL, trimmed_mean_ms REAL, cv REAL,"
    " unstable INTEGER,"
    " launches_per_sample INTEGER,"
    " workspace_bytes INTEGER,"
    " energy_valid INTEGER NOT NULL,"
    " energy_method TEXT,"
    " energy_launches INTEGER,"
    " energy_window_ms REAL,"
    " energy_j REAL,"
    " dynamic_energy_j REAL,"
    " energy_power_j REAL,"
    " power_mean_w REAL,"
    " idle_power_w REAL,"
    " temperature_c REAL,"
    " sm_clock_mhz REAL,"
    " power_limit_w REAL,"
    " created_at REAL NOT NULL);"
    "CREATE INDEX measurements_lookup ON measurements (device_id, config_id, settings_key);"
    "CREATE INDEX measurements_run ON measurements (run_id);";

/* Version 2: one row per profiled (network, batch, input size, settings)
 * and mode: free-running, replayed graph or layer-timed. */
static const char schema_v2[] =
    "CREATE TABLE network_runs ("
    " id INTEGER PRIMARY KEY,"
    " run_id INTEGER NOT NULL REFERENCES runs (id),"
    " device_id INTEGER NOT NULL REFERENCES devices (id),"
    " model TEXT NOT NULL,"
    " batch INTEGER NOT NULL,"
    " input_size INTEGER NOT NULL,"
    " input_width INTEGER,"
    " algo_policy TEXT NOT NULL,"
    " algo_fallback TEXT,"
    " math TEXT NOT NULL,"
    " layout TEXT NOT NULL,"
    " mode TEXT NOT NULL CHECK (mode IN ('free', 'graph', 'layered')),"
    " n INTEGER,"
    " min_ms REAL, max_ms REAL, mean_ms REAL, median_ms REAL, std_ms REAL,"
    " p90_ms REAL, p95_ms REAL, p99_ms REAL, trimmed_mean_ms REAL, cv REAL,"
    " enqueue_ms REAL,"
    " energy_valid INTEGER NOT NULL,"
    " energy_method TEXT,"
    " energy_launches INTEGER,"
    " energy_window_ms REAL,"
    " energy_j REAL,"
    " dynamic_energy_j REAL,"
    " energy_power_j REAL,"
    " power_mean_w REAL,"
    " idle_power_w REAL,"
    " temperature_c REAL,"
    " sm_clock_mhz REAL,"
    " power_limit_w REAL,"
    " peak_memory_bytes INTEGER,"
    " layer_sum_ms REAL,"
    " attribution_latency REAL,"
    " layer_energy_j REAL,"
    " attribution_energy REAL,"
    " check_rel_l2 REAL,"
    " check_passed INTEGER,"
    " created_at REAL NOT NULL);"
    "CREATE INDEX network_runs_lookup ON network_runs"
    " (device_id, model, batch, input_size, algo_policy, math, layout);";

/* Version 3: the latest calibration of each (device, math mode). */
static const char schema_v3[] =
    "CREATE TABLE calibrations ("
    " id INTEGER PRIMARY KEY,"
    " device_id INTEGER NOT NULL REFERENCES devices (id),"
    " math TEXT NOT NULL,"
    " peak_flops REAL,"
    " bandwidth REAL,"
    " launch_us REAL,"
    " graph_node_us REAL,"
    " idle_power_w REAL,"
    " created_at REAL NOT NULL,"
    " UNIQUE (device_id, math));";

/* Version 4: one row per (device, stage signature, batch, math, layout,
 * algorithm policy); a later measurement replaces the earlier. */
static const char schema_v4[] =
    "CREATE TABLE stages ("
    " id INTEGER PRIMARY KEY,"
    " device_id INTEGER NOT NULL REFERENCES devices (id),"
    " signature TEXT NOT NULL,"
    " kind TEXT NOT NULL CHECK (kind IN ('concurrent', 'merge')),"
    " batch INTEGER NOT NULL,"
    " math TEXT NOT NULL,"
    " layout TEXT NOT NULL,"
    " algo_policy TEXT NOT NULL,"
    " n_groups INTEGER NOT NULL,"
    " n_ops INTEGER NOT NULL,"
    " median_ms REAL NOT NULL,"
    " longest_ms REAL,"
    " sum_ms REAL,"
    " created_at REAL NOT NULL,"
    " UNIQUE (device_id, signature, batch, math, layout, algo_policy));";

static const char set_version[] = "PRAGMA user_version = " OS_STR(OS_STORE_SCHEMA);

/* WAL lets readers and one writer of several processes share the file.
 * Some file systems (network mounts) cannot do WAL; the rollback journal
 * SQLite keeps then is still safe, only slower under contention.
 * Switching needs the file to itself for a moment and SQLite does not wait
 * for that under the busy timeout (two processes opening a new file at once
 * collide here), so the wait is done here. */
static opsched_status set_wal(opsched_store *s)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    const int nap_ms = 10;
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, "PRAGMA journal_mode = WAL", &stmt), done);
    int rc = sqlite3_step(stmt);
    for (int waited = 0; (rc & 0xff) == SQLITE_BUSY && waited < OS_STORE_BUSY_MS;
         waited += nap_ms) {
        sqlite3_reset(stmt);
        sqlite3_sleep(nap_ms);
        rc = sqlite3_step(stmt);
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        st = OS_STORE_FAIL(s, rc, "sqlite3_step (switch to WAL mode)");
        goto done;
    }
    const unsigned char *mode = rc == SQLITE_ROW ? sqlite3_column_text(stmt, 0) : NULL;
    if (!mode || strcmp((const char *)mode, "wal") != 0)
        os_log(s->ctx, OPSCHED_LOG_WARN, "database %s: WAL mode unavailable (journal mode %s)",
               s->path, mode ? (const char *)mode : "unknown");
done:
    sqlite3_finalize(stmt);
    return st;
}

/* A database with user_version 0 is either new (empty) or someone else's. */
static opsched_status check_empty(opsched_store *s)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    int row = 0;
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, "SELECT count(*) FROM sqlite_master", &stmt), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "list tables", &row), done);
    if (row && sqlite3_column_int64(stmt, 0) > 0)
        st = OS_FAIL(s->ctx, OPSCHED_ERR_PARSE,
                     "database %s is an SQLite database but not an opsched one", s->path);
done:
    sqlite3_finalize(stmt);
    return st;
}

opsched_status os_store_schema_ensure(opsched_store *s)
{
    opsched_status st;
    int version = 0;
    /* Check before anything writes to the file: a newer or foreign file is
     * left exactly as it was. */
    OS_TRY(os_store_user_version(s, &version));
    OS_TRY(os_store_check_version(s, version));
    OS_TRY(set_wal(s));
    /* synchronous=NORMAL in WAL mode loses nothing when the process dies
     * (a killed sweep); only a power cut can lose the last commits. */
    OS_TRY(OS_STORE_EXEC(s, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL",
                         "configure the connection"));
    OS_TRY(os_store_begin(s));
    /* Again inside the write lock: another process may have created the
     * schema since the first look. */
    OS_TRY_GOTO(st, os_store_user_version(s, &version), done);
    OS_TRY_GOTO(st, os_store_check_version(s, version), done);
    if (version == 0) {
        OS_TRY_GOTO(st, check_empty(s), done);
        OS_TRY_GOTO(st, OS_STORE_EXEC(s, schema_v1, "create the schema"), done);
    }
    if (version < 2)
        OS_TRY_GOTO(st, OS_STORE_EXEC(s, schema_v2, "add the network_runs table"), done);
    if (version < 3)
        OS_TRY_GOTO(st, OS_STORE_EXEC(s, schema_v3, "add the calibrations table"), done);
    if (version < 4)
        OS_TRY_GOTO(st, OS_STORE_EXEC(s, schema_v4, "add the stages table"), done);
    if (version < OS_STORE_SCHEMA)
        OS_TRY_GOTO(st, OS_STORE_EXEC(s, set_version, "set the schema version"), done);
    OS_TRY_GOTO(st, os_store_commit(s), done);
done:
    if (st != OPSCHED_OK) os_store_rollback(s);
    return st;
}

int opsched_store_schema_version(void)
{
    return OS_STORE_SCHEMA;
}
