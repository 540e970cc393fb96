/*
 * test_shipped.c - shipped data: a database exported to SQL text by
 * scripts/export-data.py, built back into a database by
 * opsched_shipped_database, equal row for row; the export independent of
 * row ids; the build cached and redone when the text changes; and every
 * kind of bad data file refused with the file named.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "opsched/opsched.h"

typedef struct fixture {
    char dir[64];
    char data[128], cache[128], set[160]; /* data dir, cache dir, data/test */
    opsched_ctx *ctx;
} fixture;

static const char *python(void)
{
    const char *p = getenv("OPSCHED_PYTHON");
    return p && *p ? p : NULL;
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    if (!fx) return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/opsched_shipped_XXXXXX");
    if (!mkdtemp(fx->dir) || opsched_ctx_create(&fx->ctx) != OPSCHED_OK) {
        free(fx);
        return -1;
    }
    snprintf(fx->data, sizeof(fx->data), "%s/data", fx->dir);
    snprintf(fx->cache, sizeof(fx->cache), "%s/cache", fx->dir);
    snprintf(fx->set, sizeof(fx->set), "%s/test", fx->data);
    mkdir(fx->data, 0755);
    setenv("OPSCHED_DATA_DIR", fx->data, 1);
    setenv("OPSCHED_CACHE_DIR", fx->cache, 1);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", fx->dir);
    opsched_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

/* ---- a database with a bit of everything ----------------------------------- */

static void config(opsched_config_record *r, const char *sig, const char *op, int64_t batch)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->signature, sizeof(r->signature), "%s", sig);
    snprintf(r->op, sizeof(r->op), "%s", op);
    snprintf(r->dtype, sizeof(r->dtype), "f32");
    r->batch = batch;
    r->in_channels = r->out_channels = 64;
    r->kernel = 3;
    r->stride = 1;
    r->padding = 1;
    r->groups = 1;
    r->height = r->width = 56;
    r->flops = 231211008;
    r->bytes = 1806336;
    if (strcmp(op, "relu") == 0) r->kernel = r->stride = r->padding = r->groups = -1;
}

static void measurement(opsched_measurement *m, double median)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->algo, sizeof(m->algo), "implicit_precomp_gemm");
    m->math = OPSCHED_MATH_TF32;
    m->stats.n = 30;
    m->stats.min = median * 0.97;
    m->stats.max = median * 1.1;
    m->stats.mean = m->stats.trimmed_mean = median * 1.01;
    m->stats.median = median;
    m->stats.std = median * 0.01;
    m->stats.p90 = m->stats.p95 = m->stats.p99 = median * 1.05;
    m->stats.cv = 1.0 / 3.0; /* a value with no short decimal form */
    m->launches_per_sample = 17;
}

/* Writes a database with two devices, two runs, three configurations,
 * measurements (ok, with energy, unsupported with a quoted message),
 * network runs and calibrations. */
static void make_db(fixture *fx, const char *path)
{
    opsched_store *s = NULL;
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    opsched_device_info gpu, cpu;
    memset(&gpu, 0, sizeof(gpu));
    snprintf(gpu.backend, sizeof(gpu.backend), "cuda");
    snprintf(gpu.name, sizeof(gpu.name), "NVIDIA H100 80GB HBM3");
    snprintf(gpu.uuid, sizeof(gpu.uuid), "GPU-aaaa");
    gpu.sm_count = 132;
    gpu.l2_bytes = 50 << 20;
    gpu.has_power = gpu.has_energy = 1;
    gpu.power_limit_w = 700;
    cpu = gpu;
    snprintf(cpu.backend, sizeof(cpu.backend), "cpu");
    snprintf(cpu.name, sizeof(cpu.name), "Some 'quoted' CPU");
    snprintf(cpu.uuid, sizeof(cpu.uuid), "CPU-1");
    int64_t dgpu = 0, dcpu = 0, run = 0, run2 = 0, c[3];
    assert_int_equal(opsched_store_device(s, &gpu, &dgpu), OPSCHED_OK);
    assert_int_equal(opsched_store_device(s, &cpu, &dcpu), OPSCHED_OK);
    opsched_run_info ri = {.command = "opsched sweep x.yml", .spec = "a: 'b'\nc: 1\n",
                           .shard_index = 0, .shard_count = 1};
    assert_int_equal(opsched_store_begin_run(s, &ri, &run), OPSCHED_OK);
    opsched_config_record rec;
    const char *sigs[3] = {"Relu|x:1x64x56x56:f32", "Conv|x:8x64x56x56:f32|k=3",
                           "Conv|x:1x64x56x56:f32|k=3"};
    const char *ops[3] = {"relu", "conv2d", "conv2d"};
    for (int i = 0; i < 3; i++) {
        config(&rec, sigs[i], ops[i], i == 1 ? 8 : 1);
        assert_int_equal(opsched_store_config(s, &rec, &c[i]), OPSCHED_OK);
    }
    opsched_measurement m;
    const char *key = "algo=heuristic;math=tf32;layout=nchw;cache=hot;energy=0";
    measurement(&m, 0.0123456789);
    assert_int_equal(opsched_store_add(s, run, dgpu, c[0], key, "heuristic", &m, NULL),
                     OPSCHED_OK);
    measurement(&m, 0.5);
    m.energy.valid = 1;
    snprintf(m.energy.method, sizeof(m.energy.method), "counter");
    m.energy.energy_j = 0.125;
    m.energy.dynamic_energy_j = 0.1;
    m.energy.energy_power_j = NAN;
    m.energy.power_mean_w = 250.5;
    m.energy.launches = 4000;
    assert_int_equal(opsched_store_add(s, run, dgpu, c[1], key, "heuristic", &m, NULL),
                     OPSCHED_OK);
    measurement(&m, 0.25);
    m.status = OPSCHED_ERR_UNSUPPORTED;
    m.stats.n = 0;
    snprintf(m.message, sizeof(m.message), "cuDNN: 'fft' cannot run this; \"really\"");
    assert_int_equal(opsched_store_add(s, run, dgpu, c[2], "algo=fft;math=tf32", "fft", &m, NULL),
                     OPSCHED_OK);
    /* A median that SQLite 3.40 reads back one unit in the last place off
     * from its shortest decimal text: the export must write more digits. */
    measurement(&m, 1.196825030653902);
    assert_int_equal(opsched_store_add(s, run, dcpu, c[2], key, "heuristic", &m, NULL),
                     OPSCHED_OK);
    assert_int_equal(opsched_store_end_run(s, run, "done"), OPSCHED_OK);

    ri.command = "opsched profile resnet50";
    ri.spec = NULL;
    assert_int_equal(opsched_store_begin_run(s, &ri, &run2), OPSCHED_OK);
    opsched_network_record n;
    memset(&n, 0, sizeof(n));
    n.model = "resnet50";
    n.batch = 1;
    n.height = n.width = 224;
    n.math = OPSCHED_MATH_TF32;
    n.mode = "graph";
    n.stats.n = 10;
    n.stats.median = 1.234;
    n.enqueue_ms = NAN;
    n.peak_memory_bytes = 123456789;
    n.layer_sum_ms = n.attribution_latency = n.layer_energy_j = n.attribution_energy = NAN;
    n.check_rel_l2 = NAN;
    n.check_passed = -1;
    assert_int_equal(opsched_store_add_network(s, run2, dgpu, &n, NULL), OPSCHED_OK);
    n.mode = "free";
    n.stats.median = 2.5;
    assert_int_equal(opsched_store_add_network(s, run2, dgpu, &n, NULL), OPSCHED_OK);

    opsched_calibration cal;
    memset(&cal, 0, sizeof(cal));
    snprintf(cal.math, sizeof(cal.math), "tf32");
    cal.peak_flops = 4.1e14;
    cal.bandwidth = 2.9e12;
    cal.launch_us = 5.25;
    cal.graph_node_us = 1.1;
    cal.idle_power_w = 72.5;
    cal.created_at = 1700000000.5;
    assert_int_equal(opsched_store_calibration_put(s, dgpu, &cal), OPSCHED_OK);
    snprintf(cal.math, sizeof(cal.math), "fp32");
    cal.idle_power_w = NAN;
    assert_int_equal(opsched_store_calibration_put(s, dgpu, &cal), OPSCHED_OK);
    opsched_store_close(s);
}

static int export_db(const char *db, const char *outdir)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' '%s/scripts/export-data.py' '%s' '%s' > /dev/null", python(),
             getenv("OPSCHED_SOURCE_DIR"), db, outdir);
    return system(cmd);
}

/* Every row of every table, ids replaced by the keys they stand for, in
 * key order: equal dumps mean equal data. */
static char *dump(const char *path)
{
    static const char *const queries[] = {
        "SELECT backend, uuid, name, sm_count, l2_bytes, power_limit_w, has_power, first_seen"
        " FROM devices ORDER BY backend, uuid",
        "SELECT uuid, command, spec, user, host, started_at, ended_at, status, tool_version"
        " FROM runs ORDER BY uuid",
        "SELECT signature, op, batch, in_channels, kernel, stride, padding, groups, height, flops,"
        " bytes, dtype FROM configs ORDER BY signature",
        "SELECT r.uuid, d.uuid, c.signature, m.settings_key, m.algo, m.status, m.message, m.n,"
        " m.median_ms, m.cv, m.energy_valid, m.energy_method, m.energy_j, m.energy_power_j,"
        " m.power_mean_w, m.created_at FROM measurements m JOIN runs r ON r.id = m.run_id"
        " JOIN devices d ON d.id = m.device_id JOIN configs c ON c.id = m.config_id"
        " ORDER BY d.uuid, c.signature, m.settings_key",
        "SELECT r.uuid, d.uuid, n.model, n.mode, n.median_ms, n.enqueue_ms, n.peak_memory_bytes,"
        " n.check_passed, n.created_at FROM network_runs n JOIN runs r ON r.id = n.run_id"
        " JOIN devices d ON d.id = n.device_id ORDER BY n.mode",
        "SELECT d.uuid, c.math, c.peak_flops, c.bandwidth, c.launch_us, c.graph_node_us,"
        " c.idle_power_w, c.created_at FROM calibrations c JOIN devices d ON d.id = c.device_id"
        " ORDER BY c.math"};
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(cap, 1);
    assert_non_null(out);
    for (size_t q = 0; q < sizeof(queries) / sizeof(queries[0]); q++) {
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, queries[q], -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int i = 0; i < sqlite3_column_count(st); i++) {
                char cell[600];
                switch (sqlite3_column_type(st, i)) {
                case SQLITE_NULL: snprintf(cell, sizeof(cell), "NULL|"); break;
                case SQLITE_INTEGER:
                    snprintf(cell, sizeof(cell), "%lld|", (long long)sqlite3_column_int64(st, i));
                    break;
                case SQLITE_FLOAT:
                    snprintf(cell, sizeof(cell), "%.17g|", sqlite3_column_double(st, i));
                    break;
                default:
                    snprintf(cell, sizeof(cell), "'%s'|", (const char *)sqlite3_column_text(st, i));
                }
                size_t n = strlen(cell);
                assert_true(len + n + 2 < cap);
                memcpy(out + len, cell, n + 1);
                len += n;
            }
            out[len++] = '\n';
        }
        sqlite3_finalize(st);
        out[len++] = '#';
    }
    sqlite3_close(db);
    return out;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = calloc((size_t)n + 1, 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return buf;
}

static void write_all(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int need_python(void)
{
    if (python() && getenv("OPSCHED_SOURCE_DIR")) return 1;
    print_message("OPSCHED_PYTHON or OPSCHED_SOURCE_DIR unset (run through ctest): skipped\n");
    return 0;
}

/* ---- tests ------------------------------------------------------------------ */

static void test_round_trip(void **state)
{
    fixture *fx = *state;
    if (!need_python()) skip();
    char src[192], path[1200], path2[1200];
    snprintf(src, sizeof(src), "%s/src.db", fx->dir);
    make_db(fx, src);
    assert_int_equal(export_db(src, fx->set), 0);

    char names[256];
    assert_int_equal(opsched_shipped_names(fx->ctx, names, sizeof(names)), OPSCHED_OK);
    assert_string_equal(names, "test");
    opsched_status st = opsched_shipped_database(fx->ctx, "test", path, sizeof(path));
    if (st != OPSCHED_OK) fprintf(stderr, "%s\n", opsched_ctx_last_error(fx->ctx));
    assert_int_equal(st, OPSCHED_OK);
    assert_true(strncmp(path, fx->cache, strlen(fx->cache)) == 0);
    char *a = dump(src), *b = dump(path);
    assert_string_equal(a, b);
    free(a);
    free(b);

    /* Opened through the store: its calibration reads back as stored. */
    opsched_store *s = NULL;
    assert_int_equal(opsched_store_open_shipped(fx->ctx, "test", &s), OPSCHED_OK);
    opsched_store_summary sum;
    assert_int_equal(opsched_store_summary_get(s, &sum), OPSCHED_OK);
    assert_int_equal(sum.devices, 2);
    assert_int_equal(sum.measurements, 4);
    assert_int_equal(sum.unsupported, 1);
    opsched_store_close(s);

    /* Current: the same file, not rebuilt. */
    struct stat st1, st2;
    assert_int_equal(stat(path, &st1), 0);
    assert_int_equal(opsched_shipped_database(fx->ctx, "test", path2, sizeof(path2)), OPSCHED_OK);
    assert_string_equal(path, path2);
    assert_int_equal(stat(path2, &st2), 0);
    assert_int_equal(st1.st_ino, st2.st_ino);

    /* The text changes: a new database, the old one removed. */
    char cal[256];
    snprintf(cal, sizeof(cal), "%s/calibrations.sql", fx->set);
    char *text = read_all(cal);
    char *at = strstr(text, "5.25");
    assert_non_null(at);
    at[2] = '5'; /* the first row (fp32): launch_us 5.55 */
    write_all(cal, text);
    free(text);
    assert_int_equal(opsched_shipped_database(fx->ctx, "test", path2, sizeof(path2)), OPSCHED_OK);
    assert_string_not_equal(path, path2);
    assert_int_not_equal(access(path, F_OK), 0);
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_open(path2, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT launch_us FROM calibrations WHERE math ="
                                            " 'fp32'", -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_float_equal(sqlite3_column_double(q, 0), 5.55, 1e-12);
    sqlite3_finalize(q);
    sqlite3_close(db);
}

static void test_export_ignores_ids(void **state)
{
    fixture *fx = *state;
    if (!need_python()) skip();
    /* The same rows under other ids export to the same text. */
    char a[192], b[192], da[192], db[192];
    snprintf(a, sizeof(a), "%s/a.db", fx->dir);
    snprintf(b, sizeof(b), "%s/b.db", fx->dir);
    snprintf(da, sizeof(da), "%s/a", fx->dir);
    snprintf(db, sizeof(db), "%s/b", fx->dir);
    make_db(fx, a);
    assert_int_equal(export_db(a, da), 0);
    /* b holds a's rows merged into a file that had a device and a
     * configuration of its own first: every id differs. */
    opsched_store *s = NULL;
    assert_int_equal(opsched_store_open(fx->ctx, b, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    opsched_device_info other;
    memset(&other, 0, sizeof(other));
    snprintf(other.backend, sizeof(other.backend), "cuda");
    snprintf(other.name, sizeof(other.name), "Another GPU");
    snprintf(other.uuid, sizeof(other.uuid), "GPU-zzzz");
    int64_t id = 0;
    assert_int_equal(opsched_store_device(s, &other, &id), OPSCHED_OK);
    opsched_config_record rec;
    config(&rec, "Add|x:1x1x1x1:f32", "add", 1);
    assert_int_equal(opsched_store_config(s, &rec, &id), OPSCHED_OK);
    opsched_merge_stats ms;
    assert_int_equal(opsched_store_merge(s, a, &ms), OPSCHED_OK);
    opsched_store_close(s);
    assert_int_equal(export_db(b, db), 0);
    const char *files[] = {"runs", "measurements", "network_runs", "calibrations"};
    for (int i = 0; i < 4; i++) {
        char pa[256], pb[256];
        snprintf(pa, sizeof(pa), "%s/%s.sql", da, files[i]);
        snprintf(pb, sizeof(pb), "%s/%s.sql", db, files[i]);
        char *ta = read_all(pa), *tb = read_all(pb);
        assert_string_equal(ta, tb);
        free(ta);
        free(tb);
    }
    /* Exporting again writes the same text. */
    char again[192], pa[256], pb[256];
    snprintf(again, sizeof(again), "%s/again", fx->dir);
    assert_int_equal(export_db(a, again), 0);
    snprintf(pa, sizeof(pa), "%s/measurements.sql", da);
    snprintf(pb, sizeof(pb), "%s/measurements.sql", again);
    char *ta = read_all(pa), *tb = read_all(pb);
    assert_string_equal(ta, tb);
    assert_non_null(strstr(ta, "(SELECT id FROM configs WHERE signature = "));
    /* A header, then INSERT lines and one line per row. */
    int lines = 0, rows = 0, inserts = 0;
    for (const char *c = ta; *c; c++) {
        if (c != ta && c[-1] != '\n') continue;
        lines++;
        rows += *c == '(';
        inserts += strncmp(c, "INSERT INTO measurements (", 26) == 0;
    }
    assert_int_equal(rows, 4);
    assert_true(inserts >= 1);
    assert_int_equal(lines, 1 + inserts + rows);
    /* The run's spec has line breaks and quotes: still one line, exact. */
    snprintf(pa, sizeof(pa), "%s/runs.sql", da);
    char *runs = read_all(pa);
    assert_non_null(strstr(runs, "('a: ''b''' || char(10) || 'c: 1' || char(10) || '')"));
    free(runs);
    free(ta);
    free(tb);
}

/* Replaces the first occurrence of `from` in file with `to`. */
static void edit(const fixture *fx, const char *table, const char *from, const char *to)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s.sql", fx->set, table);
    char *text = read_all(p);
    char *at = strstr(text, from);
    assert_non_null(at);
    size_t n = strlen(text) + strlen(to) + 1;
    char *out = malloc(n);
    assert_non_null(out);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    write_all(p, out);
    free(out);
    free(text);
}

/* The line number of the first line of table's file that holds needle. */
static int line_with(const fixture *fx, const char *table, const char *needle)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s.sql", fx->set, table);
    char *text = read_all(p);
    char *at = strstr(text, needle);
    assert_non_null(at);
    int line = 1;
    for (char *c = text; c < at; c++) line += *c == '\n';
    free(text);
    return line;
}

static void expect_fail(fixture *fx, opsched_status want, const char *needle)
{
    char path[1200];
    opsched_status st = opsched_shipped_database(fx->ctx, "test", path, sizeof(path));
    const char *msg = opsched_ctx_last_error(fx->ctx);
    if (st != want || !strstr(msg, needle))
        fprintf(stderr, "status %d, message: %s (wanted %d, '%s')\n", st, msg, want, needle);
    assert_int_equal(st, want);
    assert_non_null(strstr(msg, needle));
}

static void test_bad_files(void **state)
{
    fixture *fx = *state;
    if (!need_python()) skip();
    char src[192], p[256], saved[256], cmd[640];
    snprintf(src, sizeof(src), "%s/src.db", fx->dir);
    make_db(fx, src);
    snprintf(saved, sizeof(saved), "%s/saved", fx->dir);
    assert_int_equal(export_db(src, saved), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -r '%s' '%s'", fx->set, saved, fx->set);
#define RESET() assert_int_equal(system(cmd), 0)

    /* No such data set: the message lists what there is. */
    RESET();
    char path[1200];
    assert_int_equal(opsched_shipped_database(fx->ctx, "a100", path, sizeof(path)),
                     OPSCHED_ERR_NOT_FOUND);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "there is: test"));
    assert_int_equal(opsched_shipped_database(fx->ctx, "../x", path, sizeof(path)),
                     OPSCHED_ERR_INVALID_ARG);

    /* A missing file. */
    snprintf(p, sizeof(p), "%s/network_runs.sql", fx->set);
    remove(p);
    expect_fail(fx, OPSCHED_ERR_IO, "network_runs.sql is missing");

    /* A header that is not one, or names another table. */
    RESET();
    edit(fx, "configs", "-- opsched data: table=configs", "-- opsched data table=configs");
    expect_fail(fx, OPSCHED_ERR_PARSE, "configs.sql:1: the first line must be");
    RESET();
    edit(fx, "configs", "table=configs", "table=runs");
    expect_fail(fx, OPSCHED_ERR_PARSE, "holds table 'runs', expected 'configs'");
    RESET();
    char schema[32];
    snprintf(schema, sizeof(schema), "schema=%d", opsched_store_schema_version());
    edit(fx, "runs", schema, "schema=99");
    expect_fail(fx, OPSCHED_ERR_VERSION, "written from schema 99");

    /* A truncated file: fewer rows than its header says. */
    RESET();
    edit(fx, "measurements", "rows=4", "rows=5");
    expect_fail(fx, OPSCHED_ERR_PARSE, "4 rows inserted, but its header says 5");

    /* SQL that is not an INSERT into the file's table, with its line. */
    RESET();
    edit(fx, "configs", "INSERT INTO configs", "DROP TABLE runs;\nINSERT INTO configs");
    expect_fail(fx, OPSCHED_ERR_PARSE, "configs.sql:2: only INSERT INTO configs is allowed");
    RESET();
    edit(fx, "runs", "INSERT INTO runs", "INSERT INTO configs");
    expect_fail(fx, OPSCHED_ERR_PARSE, "only INSERT INTO runs");
    RESET();
    edit(fx, "calibrations", "VALUES\n(", "VALUES\n(,");
    expect_fail(fx, OPSCHED_ERR_PARSE, "calibrations.sql:2: near \",\"");

    /* A row whose key names nothing: its foreign key is NULL; the line of
     * that row is named (line 3 is the first row: the header, the INSERT). */
    RESET();
    char want[128];
    edit(fx, "measurements", "WHERE uuid = '", "WHERE uuid = 'x");
    expect_fail(fx, OPSCHED_ERR_PARSE, "measurements.sql:3: NOT NULL constraint failed");
    RESET();
    edit(fx, "measurements", "'unsupported'", "'fine'"); /* a row in the middle */
    snprintf(want, sizeof(want), "measurements.sql:%d: CHECK constraint failed",
             line_with(fx, "measurements", "'fine'"));
    assert_true(line_with(fx, "measurements", "'fine'") > 3);
    expect_fail(fx, OPSCHED_ERR_PARSE, want);
    /* Only char() among the functions. */
    RESET();
    edit(fx, "runs", "'done'", "lower('DONE')");
    expect_fail(fx, OPSCHED_ERR_PARSE, "runs.sql:2: not authorized to use function: lower");

    /* Nothing half-built is left behind, and good data builds again. */
    RESET();
    assert_int_equal(opsched_shipped_database(fx->ctx, "test", path, sizeof(path)), OPSCHED_OK);
    snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c tmp", fx->cache);
    FILE *ls = popen(cmd, "r");
    assert_non_null(ls);
    int n = -1;
    assert_int_equal(fscanf(ls, "%d", &n), 1);
    pclose(ls);
    assert_int_equal(n, 0);
#undef RESET
}

static int header_rows(const char *dir, const char *table)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s.sql", dir, table);
    char *text = read_all(p);
    const char *at = strstr(text, "rows=");
    assert_non_null(at);
    int n = atoi(at + 5);
    free(text);
    return n;
}

static void test_export_one_device(void **state)
{
    fixture *fx = *state;
    if (!need_python()) skip();
    char src[192], cmd[1024], path[1200];
    snprintf(src, sizeof(src), "%s/src.db", fx->dir);
    make_db(fx, src);
    /* Only the CPU: its device, its one measurement with its run and
     * configuration, nothing of the GPU. */
    snprintf(cmd, sizeof(cmd),
             "'%s' '%s/scripts/export-data.py' '%s' '%s' --device cpu-1 > /dev/null", python(),
             getenv("OPSCHED_SOURCE_DIR"), src, fx->set);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(header_rows(fx->set, "devices"), 1);
    assert_int_equal(header_rows(fx->set, "runs"), 1);
    assert_int_equal(header_rows(fx->set, "configs"), 1);
    assert_int_equal(header_rows(fx->set, "measurements"), 1);
    assert_int_equal(header_rows(fx->set, "network_runs"), 0);
    assert_int_equal(header_rows(fx->set, "calibrations"), 0);
    assert_int_equal(opsched_shipped_database(fx->ctx, "test", path, sizeof(path)), OPSCHED_OK);
    /* A device no row matches is an error of the script. */
    snprintf(cmd, sizeof(cmd),
             "'%s' '%s/scripts/export-data.py' '%s' '%s/x' --device a100 2> /dev/null", python(),
             getenv("OPSCHED_SOURCE_DIR"), src, fx->dir);
    assert_int_not_equal(system(cmd), 0);
}

static void test_no_data_dir(void **state)
{
    fixture *fx = *state;
    char missing[192], buf[64];
    snprintf(missing, sizeof(missing), "%s/nothing", fx->dir);
    setenv("OPSCHED_DATA_DIR", missing, 1);
    assert_int_equal(opsched_shipped_names(fx->ctx, buf, sizeof(buf)), OPSCHED_ERR_NOT_FOUND);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "OPSCHED_DATA_DIR"));
    opsched_store *s = NULL;
    assert_int_equal(opsched_store_open_shipped(fx->ctx, "h100", &s), OPSCHED_ERR_NOT_FOUND);
    assert_null(s);
    /* An empty data directory has no data sets. */
    setenv("OPSCHED_DATA_DIR", fx->data, 1);
    assert_int_equal(opsched_shipped_names(fx->ctx, buf, sizeof(buf)), OPSCHED_OK);
    assert_string_equal(buf, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_ignores_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_one_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_data_dir, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
