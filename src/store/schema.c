/*
 * schema.c - the database schema, its version (PRAGMA user_version), how an
 * opsched file is told from others, and the connection settings every
 * writer uses: WAL, foreign keys, synchronous, checkpoints.
 *
 * Schema history (for each change bump OS_STORE_SCHEMA and teach
 * os_store_schema_build to upgrade older files; never edit a released
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
 *   5  collectives: NCCL collectives measured across GPUs (opsched
 *      commbench), one row per (device of rank 0, collective, dtype, size,
 *      ranks, nodes), with the bandwidths, the check and the NCCL version,
 *      GPUs, topology and environment.  Older files gain the table in place.
 *
 * Every file is stamped with PRAGMA application_id
 * OPSCHED_STORE_APPLICATION_ID when it is created or upgraded; files of
 * schema 1 to 4 from before the stamp are recognised by their tables and
 * stamped when opened for writing.  A file with any table not listed in
 * known_tables is someone else's and is never written.
 *
 * Sizes and counts that do not apply to a configuration (the kernel of a
 * linear layer) are NULL, so queries read "kernel IS NULL" rather than
 * "kernel = -1".  Times are Unix seconds as REAL, with microseconds.
 */
#include <stdint.h>
#include <stdio.h>
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

/* Version 5: collectives measured across GPUs (opsched commbench). */
static const char schema_v5[] =
    "CREATE TABLE collectives ("
    " id INTEGER PRIMARY KEY,"
    " run_id INTEGER NOT NULL REFERENCES runs (id),"
    " device_id INTEGER NOT NULL REFERENCES devices (id),"
    " collective TEXT NOT NULL,"
    " dtype TEXT NOT NULL,"
    " bytes INTEGER NOT NULL,"
    " count INTEGER NOT NULL,"
    " ranks INTEGER NOT NULL,"
    " nodes INTEGER NOT NULL,"
    " iters INTEGER NOT NULL,"
    " n INTEGER,"
    " min_ms REAL, max_ms REAL, mean_ms REAL, median_ms REAL, std_ms REAL,"
    " p90_ms REAL, p95_ms REAL, p99_ms REAL, trimmed_mean_ms REAL, cv REAL,"
    " algbw_gbs REAL,"
    " busbw_gbs REAL,"
    " wrong INTEGER NOT NULL,"
    " max_error REAL,"
    " nccl_version TEXT,"
    " gpus TEXT,"
    " topology TEXT,"
    " env TEXT,"
    " created_at REAL NOT NULL,"
    " UNIQUE (device_id, collective, dtype, bytes, ranks, nodes));";

static const char set_version[] = "PRAGMA user_version = " OS_STR(OS_STORE_SCHEMA);

/* The tables opsched makes and the schema that introduced each.
 * shipped_data marks a database built from shipped text (shipped.c): never
 * required, always allowed. */
static const struct {
    const char *name;
    int since;
} known_tables[] = {
    {"devices", 1},      {"runs", 1},         {"configs", 1}, {"measurements", 1},
    {"network_runs", 2}, {"calibrations", 3}, {"stages", 4},  {"collectives", 5},
    {"shipped_data", 0},
};
#define N_KNOWN_TABLES ((int)(sizeof(known_tables) / sizeof(known_tables[0])))

static int known_table(const char *name)
{
    for (int i = 0; i < N_KNOWN_TABLES; i++)
        if (strcmp(known_tables[i].name, name) == 0) return i;
    return -1;
}

static opsched_status read_pragma_int(opsched_store *s, const char *sql, int *out)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    int row = 0;
    *out = 0;
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, sql, &stmt), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, sql, &row), done);
    if (row) *out = sqlite3_column_int(stmt, 0);
done:
    sqlite3_finalize(stmt);
    return st;
}

static opsched_status foreign(opsched_store *s, const char *why, const char *name)
{
    return OS_FAIL(s->ctx, OPSCHED_ERR_PARSE,
                   "database %s is not an opsched database (%s%s%s); opsched leaves it untouched",
                   s->path, why, name ? " " : "", name ? name : "");
}

opsched_status os_store_identify(opsched_store *s, int *version, int *stamped)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    int app_id = 0, v = 0, row = 0, n_objects = 0;
    int present[N_KNOWN_TABLES] = {0};
    char unknown[128] = "";
    *version = 0;
    *stamped = 0;
    OS_TRY(read_pragma_int(s, "PRAGMA application_id", &app_id));
    OS_TRY(read_pragma_int(s, "PRAGMA user_version", &v));
    if (app_id != 0 && (uint32_t)app_id != (uint32_t)OPSCHED_STORE_APPLICATION_ID) {
        char id[32];
        snprintf(id, sizeof(id), "0x%08x", (unsigned)app_id);
        return foreign(s, "it belongs to another application: application_id", id);
    }
    if (app_id != 0 && v > OS_STORE_SCHEMA) return os_store_check_version(s, v);
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s,
                                 "SELECT type, name FROM sqlite_master WHERE type IN ('table',"
                                 " 'view', 'trigger') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
                                 &stmt),
                done);
    for (;;) {
        OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "list tables", &row), done);
        if (!row) break;
        const char *type = (const char *)sqlite3_column_text(stmt, 0);
        const char *name = (const char *)sqlite3_column_text(stmt, 1);
        int k = type && name && strcmp(type, "table") == 0 ? known_table(name) : -1;
        n_objects++;
        if (k >= 0)
            present[k] = 1;
        else if (!unknown[0])
            snprintf(unknown, sizeof(unknown), "'%s'", name ? name : "?");
    }
    if (unknown[0]) {
        st = foreign(s, "it has a table opsched does not make:", unknown);
        goto done;
    }
    if (v > OS_STORE_SCHEMA) { /* opsched's tables, but no id: an opsched to come */
        st = os_store_check_version(s, v);
        goto done;
    }
    if (v == 0) {
        if (n_objects > 0)
            st = foreign(s,
                         "it has opsched's tables but no schema version: a half-made or "
                         "damaged file",
                         NULL);
        goto done;
    }
    for (int k = 0; k < N_KNOWN_TABLES; k++) {
        if (known_tables[k].since > v && present[k]) {
            st = foreign(s, "it has a table its schema version lacks:", known_tables[k].name);
            goto done;
        }
        if (known_tables[k].since >= 1 && known_tables[k].since <= v && !present[k]) {
            st = foreign(s, "it lacks the table", known_tables[k].name);
            goto done;
        }
    }
    *version = v;
    *stamped = app_id != 0;
done:
    sqlite3_finalize(stmt);
    return st;
}

opsched_status os_store_schema_build(opsched_store *s, int from)
{
    if (from == 0) OS_TRY(OS_STORE_EXEC(s, schema_v1, "create the schema"));
    if (from < 2) OS_TRY(OS_STORE_EXEC(s, schema_v2, "add the network_runs table"));
    if (from < 3) OS_TRY(OS_STORE_EXEC(s, schema_v3, "add the calibrations table"));
    if (from < 4) OS_TRY(OS_STORE_EXEC(s, schema_v4, "add the stages table"));
    if (from < 5) OS_TRY(OS_STORE_EXEC(s, schema_v5, "add the collectives table"));
    OS_TRY(OS_STORE_EXEC(s, OS_STORE_SET_APP_ID, "set the application id"));
    return OS_STORE_EXEC(s, set_version, "set the schema version");
}

/* WAL lets readers and one writer of several processes share the file.
 * Some file systems (network mounts) cannot do WAL; the rollback journal
 * SQLite keeps then is still safe, only slower under contention.
 * Switching needs the file to itself for a moment and SQLite does not wait
 * for that under the busy timeout (two processes opening a new file at once
 * collide here), so the wait is done here. */
opsched_status os_store_set_wal(opsched_store *s)
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
    /* synchronous=NORMAL in WAL mode loses nothing when the process dies
     * (a killed sweep); only a power cut can lose the last commits.  A
     * checkpoint every 100 pages and a WAL cut back to 1 MiB after one keep
     * the space the WAL needs beside the database small, which is what a
     * nearly full disk has left. */
    OS_TRY_GOTO(st,
                OS_STORE_EXEC(s,
                              "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;"
                              " PRAGMA wal_autocheckpoint = 100;"
                              " PRAGMA journal_size_limit = 1048576",
                              "configure the connection"),
                done);
done:
    sqlite3_finalize(stmt);
    return st;
}

int opsched_store_schema_version(void)
{
    return OS_STORE_SCHEMA;
}
