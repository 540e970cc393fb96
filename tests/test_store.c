/*
 * test_store.c - the measurement database: schema and versioning, runs,
 * devices, configurations, measurements, lookups, merge, CSV export, two
 * processes writing one file, and files that are not databases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "core/util.h"
#include "opsched/store.h"
#include "store/store_impl.h"

/* ---- helpers ----------------------------------------------------------- */

typedef struct fixture {
    char dir[64];
    opsched_ctx *ctx;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    if (!fx) return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/opsched_store_XXXXXX");
    if (!mkdtemp(fx->dir) || opsched_ctx_create(&fx->ctx) != OPSCHED_OK) {
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    DIR *d = opendir(fx->dir);
    if (d) {
        struct dirent *e;
        char p[384];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            snprintf(p, sizeof(p), "%s/%s", fx->dir, e->d_name);
            remove(p);
        }
        closedir(d);
    }
    rmdir(fx->dir);
    opsched_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

static void path_in(const fixture *fx, const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", fx->dir, name);
}

static opsched_store *open_store(const fixture *fx, const char *path)
{
    opsched_store *s = NULL;
    opsched_status st = opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &s);
    if (st != OPSCHED_OK) fprintf(stderr, "open %s: %s\n", path, opsched_ctx_last_error(fx->ctx));
    assert_int_equal(st, OPSCHED_OK);
    assert_non_null(s);
    return s;
}

static void fake_device(opsched_device_info *d, const char *name)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->backend, sizeof(d->backend), "cuda");
    snprintf(d->name, sizeof(d->name), "%s", name);
    snprintf(d->uuid, sizeof(d->uuid), "GPU-0123-4567");
    snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "00000000:01:00.0");
    snprintf(d->driver_version, sizeof(d->driver_version), "550.54");
    snprintf(d->library_versions, sizeof(d->library_versions), "cudnn 9.1.0; cublas 12.4");
    d->sm_count = 132;
    d->cc_major = 9;
    d->memory_bytes = 80LL << 30;
    d->l2_bytes = 50LL << 20;
    d->has_power = d->has_energy = 1;
    d->power_limit_w = 700;
}

static void conv_record(opsched_config_record *r, const char *signature, int64_t batch)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->signature, sizeof(r->signature), "%s", signature);
    snprintf(r->op, sizeof(r->op), "conv2d");
    snprintf(r->dtype, sizeof(r->dtype), "f32");
    r->batch = batch;
    r->in_channels = 64;
    r->out_channels = 128;
    r->kernel = 3;
    r->stride = 1;
    r->padding = 1;
    r->groups = 1;
    r->height = 56;
    r->width = 28;
    r->flops = 12345;
    r->bytes = 999;
}

static void linear_record(opsched_config_record *r)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->signature, sizeof(r->signature), "Gemm|4x256|f32");
    snprintf(r->op, sizeof(r->op), "linear");
    snprintf(r->dtype, sizeof(r->dtype), "f32");
    r->batch = 4;
    r->in_channels = 256;
    r->out_channels = 10;
    r->kernel = r->stride = r->padding = r->groups = r->height = r->width = -1;
    r->flops = 20480;
    r->bytes = 100;
}

static void ok_measurement(opsched_measurement *m)
{
    memset(m, 0, sizeof(*m));
    m->status = OPSCHED_OK;
    snprintf(m->algo, sizeof(m->algo), "implicit_gemm");
    m->workspace_bytes = 1024;
    m->math = OPSCHED_MATH_TF32;
    m->layout = OPSCHED_LAYOUT_NCHW;
    m->cache = OPSCHED_CACHE_HOT;
    m->launches_per_sample = 1;
    m->stats = (opsched_stats){.n = 50,
                               .min = 0.4,
                               .max = 0.6,
                               .mean = 0.5,
                               .median = 0.5,
                               .std = 0.01,
                               .p90 = 0.55,
                               .p95 = 0.57,
                               .p99 = 0.59,
                               .trimmed_mean = 0.5,
                               .cv = 0.02};
}

static void failed_measurement(opsched_measurement *m, opsched_status status, const char *why)
{
    memset(m, 0, sizeof(*m));
    m->status = status;
    snprintf(m->message, sizeof(m->message), "%s", why);
}

static opsched_run_info run_info(void)
{
    return (opsched_run_info){.command = "opsched sweep --spec s.yaml",
                              .spec = "op: conv2d\n",
                              .shard_index = 0,
                              .shard_count = 1};
}

/* Runs a one-value query on a file through SQLite directly. */
static void query_text(const char *path, const char *sql, const char *bind, char *out, size_t size)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
    if (bind) assert_int_equal(sqlite3_bind_text(stmt, 1, bind, -1, SQLITE_TRANSIENT), SQLITE_OK);
    int rc = sqlite3_step(stmt);
    assert_true(rc == SQLITE_ROW || rc == SQLITE_DONE);
    const unsigned char *v = rc == SQLITE_ROW ? sqlite3_column_text(stmt, 0) : NULL;
    snprintf(out, size, "%s", v ? (const char *)v : "");
    sqlite3_finalize(stmt);
    sqlite3_close(db);
}

static void set_user_version(const char *path, int version)
{
    sqlite3 *db = NULL;
    char sql[64];
    snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", version);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* A store with one device, one run and one configuration. */
typedef struct seeded {
    opsched_store *s;
    int64_t dev, run, cfg;
} seeded;

static seeded seed(const fixture *fx, const char *path, const char *signature)
{
    seeded r = {open_store(fx, path), 0, 0, 0};
    opsched_device_info d;
    opsched_config_record c;
    opsched_run_info info = run_info();
    fake_device(&d, "NVIDIA H100 80GB HBM3");
    conv_record(&c, signature, 1);
    assert_int_equal(opsched_store_device(r.s, &d, &r.dev), OPSCHED_OK);
    assert_int_equal(opsched_store_begin_run(r.s, &info, &r.run), OPSCHED_OK);
    assert_int_equal(opsched_store_config(r.s, &c, &r.cfg), OPSCHED_OK);
    return r;
}

static void add_ok(seeded *z, int64_t cfg, const char *key)
{
    opsched_measurement m;
    ok_measurement(&m);
    assert_int_equal(opsched_store_add(z->s, z->run, z->dev, cfg, key, "heuristic", &m, NULL),
                     OPSCHED_OK);
}

/* ---- tests -------------------------------------------------------------- */

static void test_settings_key(void **state)
{
    (void)state;
    opsched_measure_options o;
    char key[128];
    memset(&o, 0, sizeof(o));
    o.plan.math = OPSCHED_MATH_TF32;
    o.cache = OPSCHED_CACHE_HOT;
    opsched_settings_key(&o, key, sizeof(key));
    assert_string_equal(key, "algo=heuristic;math=tf32;layout=nchw;cache=hot;energy=0");
    o.plan.algo = "winograd";
    o.plan.math = OPSCHED_MATH_FP16;
    o.plan.layout = OPSCHED_LAYOUT_NHWC;
    o.cache = OPSCHED_CACHE_COLD;
    o.energy = 1;
    opsched_settings_key(&o, key, sizeof(key));
    assert_string_equal(key, "algo=winograd;math=fp16;layout=nhwc;cache=cold;energy=1");
    /* An ablated planner gets a key of its own. */
    assert_int_equal(opsched_ablation_parse(NULL, "engines,depthwise", &o.plan.ablate), OPSCHED_OK);
    opsched_settings_key(&o, key, sizeof(key));
    assert_string_equal(key,
                        "algo=winograd;math=fp16;layout=nhwc;cache=cold;energy=1;ablate=depthwise+engines");
    assert_int_equal(opsched_ablation_parse(NULL, "epilogue", &o.plan.ablate), OPSCHED_OK);
    opsched_settings_key(&o, key, sizeof(key));
    assert_string_equal(key, "algo=winograd;math=fp16;layout=nhwc;cache=cold;energy=1;ablate=epilogue");
    assert_int_equal(opsched_ablation_parse(NULL, "none", &o.plan.ablate), OPSCHED_OK);
    assert_int_equal(o.plan.ablate, 0);
    assert_int_equal(opsched_ablation_parse(NULL, "depthwise,nope", &o.plan.ablate),
                     OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_ablation_parse(NULL, "", &o.plan.ablate), OPSCHED_ERR_INVALID_ARG);
}

typedef struct counted {
    int rows;
    int64_t measurements;
    char last_status[16];
    int runs_done;
    int64_t run_rows;
} counted;

static void count_cb(const opsched_measurement_count *r, void *user)
{
    counted *c = user;
    c->rows++;
    c->measurements += r->measurements;
    assert_int_equal(r->configs, 1);
    snprintf(c->last_status, sizeof(c->last_status), "%s", r->status);
}

static void run_cb(const opsched_run_summary *r, void *user)
{
    counted *c = user;
    if (strcmp(r->status, "done") == 0) c->runs_done++;
    c->run_rows += r->measurements;
    assert_true(r->ended_at >= r->started_at);
    assert_int_equal(r->shard_count, 1);
}

typedef struct settings_seen {
    int rows;
    int64_t measurements, unstable;
    char text[256];
} settings_seen;

static void settings_cb(const opsched_settings_count *r, void *user)
{
    settings_seen *ss = user;
    size_t n = strlen(ss->text);
    snprintf(ss->text + n, sizeof(ss->text) - n, "%s %s %s %lld/%lld;", r->math, r->layout,
             r->algo_policy, (long long)r->measurements, (long long)r->unstable);
    ss->rows++;
    ss->measurements += r->measurements;
    ss->unstable += r->unstable;
}

static void test_add_has_reopen(void **state)
{
    fixture *fx = *state;
    char path[128];
    path_in(fx, "m.db", path, sizeof(path));
    assert_int_equal(opsched_store_schema_version(), 5);
    seeded z = seed(fx, path, "Conv|1x64x56x28|k3s1p1g1|f32");
    const char *key = "algo=heuristic;math=tf32;layout=nchw;cache=hot;energy=0";
    int found = -1;

    assert_int_equal(opsched_store_has(z.s, z.dev, z.cfg, key, &found), OPSCHED_OK);
    assert_int_equal(found, 0);
    int64_t mid = 0;
    opsched_measurement m;
    ok_measurement(&m);
    m.energy.valid = 1;
    snprintf(m.energy.method, sizeof(m.energy.method), "counter");
    m.energy.energy_j = 0.25;
    assert_int_equal(opsched_store_add(z.s, z.run, z.dev, z.cfg, key, "heuristic", &m, &mid),
                     OPSCHED_OK);
    assert_true(mid > 0);
    assert_int_equal(opsched_store_has(z.s, z.dev, z.cfg, key, &found), OPSCHED_OK);
    assert_int_equal(found, 1);
    assert_int_equal(opsched_store_has(z.s, z.dev, z.cfg, "algo=find;math=tf32", &found),
                     OPSCHED_OK);
    assert_int_equal(found, 0);
    assert_int_equal(opsched_store_has(z.s, z.dev + 1, z.cfg, key, &found), OPSCHED_OK);
    assert_int_equal(found, 0);

    /* An error does not count as measured; "unsupported" does. */
    failed_measurement(&m, OPSCHED_ERR_BACKEND, "launch failed");
    assert_int_equal(opsched_store_add(z.s, z.run, z.dev, z.cfg, "k-error", "find", &m, NULL),
                     OPSCHED_OK);
    assert_int_equal(opsched_store_has(z.s, z.dev, z.cfg, "k-error", &found), OPSCHED_OK);
    assert_int_equal(found, 0);
    failed_measurement(&m, OPSCHED_ERR_UNSUPPORTED, "fft: stride 2");
    assert_int_equal(opsched_store_add(z.s, z.run, z.dev, z.cfg, "k-uns", "fft", &m, NULL),
                     OPSCHED_OK);
    assert_int_equal(opsched_store_has(z.s, z.dev, z.cfg, "k-uns", &found), OPSCHED_OK);
    assert_int_equal(found, 1);
    failed_measurement(&m, OPSCHED_ERR_DEVICE_OOM, "workspace");
    assert_int_equal(opsched_store_add(z.s, z.run, z.dev, z.cfg, "k-oom", NULL, &m, NULL),
                     OPSCHED_OK);

    /* Finding the device and the configuration again gives the same ids. */
    opsched_device_info d;
    opsched_config_record c;
    int64_t id = 0;
    fake_device(&d, "renamed");
    assert_int_equal(opsched_store_device(z.s, &d, &id), OPSCHED_OK);
    assert_int_equal(id, z.dev);
    conv_record(&c, "Conv|1x64x56x28|k3s1p1g1|f32", 1);
    assert_int_equal(opsched_store_config(z.s, &c, &id), OPSCHED_OK);
    assert_int_equal(id, z.cfg);

    assert_int_equal(opsched_store_end_run(z.s, z.run, "bogus"), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_store_end_run(z.s, z.run + 100, "done"), OPSCHED_ERR_NOT_FOUND);
    assert_int_equal(opsched_store_end_run(z.s, z.run, "done"), OPSCHED_OK);
    opsched_store_close(z.s);

    opsched_store *s = open_store(fx, path);
    assert_int_equal(opsched_store_has(s, z.dev, z.cfg, key, &found), OPSCHED_OK);
    assert_int_equal(found, 1);
    opsched_store_summary sum;
    assert_int_equal(opsched_store_summary_get(s, &sum), OPSCHED_OK);
    assert_int_equal(sum.devices, 1);
    assert_int_equal(sum.runs, 1);
    assert_int_equal(sum.configs, 1);
    assert_int_equal(sum.measurements, 4);
    assert_int_equal(sum.ok, 1);
    assert_int_equal(sum.unsupported, 1);
    assert_int_equal(sum.oom, 1);
    assert_int_equal(sum.errors, 1);
    /* one row per (device, op, status); the run lists its four rows */
    counted cnt;
    memset(&cnt, 0, sizeof(cnt));
    assert_int_equal(opsched_store_measurement_counts(s, count_cb, &cnt), OPSCHED_OK);
    assert_int_equal(cnt.rows, 4);
    assert_int_equal(cnt.measurements, 4);
    assert_string_equal(cnt.last_status, "unsupported");
    assert_int_equal(opsched_store_runs(s, run_cb, &cnt), OPSCHED_OK);
    assert_int_equal(cnt.runs_done, 1);
    assert_int_equal(cnt.run_rows, 4);
    assert_int_equal(opsched_store_runs(s, NULL, &cnt), OPSCHED_ERR_INVALID_ARG);
    /* by settings: the ok rows only, an unstable one counted */
    opsched_measurement um;
    ok_measurement(&um);
    um.stats.cv = 2 * OPSCHED_CV_WARN;
    um.math = OPSCHED_MATH_FP32;
    assert_int_equal(opsched_store_add(s, z.run, z.dev, z.cfg, "k-fp32", "heuristic", &um, NULL),
                     OPSCHED_OK);
    settings_seen ss;
    memset(&ss, 0, sizeof(ss));
    assert_int_equal(opsched_store_settings_counts(s, settings_cb, &ss), OPSCHED_OK);
    assert_int_equal(ss.rows, 2);
    assert_int_equal(ss.measurements, 2);
    assert_int_equal(ss.unstable, 1);
    assert_string_equal(ss.text, "fp32 nchw heuristic 1/1;tf32 nchw heuristic 1/0;");
    assert_int_equal(opsched_store_settings_counts(s, NULL, &ss), OPSCHED_ERR_INVALID_ARG);
    opsched_store_close(s);

    char v[128];
    query_text(path, "SELECT name FROM devices", NULL, v, sizeof(v));
    assert_string_equal(v, "renamed");
    query_text(path, "SELECT status || ' ' || tool_version FROM runs", NULL, v, sizeof(v));
    assert_string_equal(v, "done 0.1.0");
    query_text(path, "SELECT length(uuid) FROM runs", NULL, v, sizeof(v));
    assert_string_equal(v, "32");
    query_text(path, "SELECT energy_method || ' ' || energy_j FROM measurements WHERE id = 1", NULL,
               v, sizeof(v));
    assert_string_equal(v, "counter 0.25");
    query_text(path, "SELECT algo_policy || ' ' || message FROM measurements WHERE status = 'oom'",
               NULL, v, sizeof(v));
    assert_string_equal(v, "heuristic workspace");
    query_text(path, "PRAGMA journal_mode", NULL, v, sizeof(v));
    assert_string_equal(v, "wal");
}

static void test_newer_schema_refused(void **state)
{
    fixture *fx = *state;
    char path[128];
    path_in(fx, "new.db", path, sizeof(path));
    opsched_store_close(open_store(fx, path));
    set_user_version(path, 999);
    opsched_store *s = NULL;
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_ERR_VERSION);
    assert_null(s);
    const char *msg = opsched_ctx_last_error(fx->ctx);
    assert_non_null(strstr(msg, path));
    assert_non_null(strstr(msg, "was written by a newer opsched (schema 999, this build reads "
                                "up to 5)"));
}

static void test_not_a_database(void **state)
{
    fixture *fx = *state;
    char path[128];
    path_in(fx, "random.bin", path, sizeof(path));
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint32_t x = 12345;
    for (int i = 0; i < 4096; i++) {
        x = x * 1103515245u + 12345u;
        fputc((int)(x >> 24), f);
    }
    fclose(f);
    opsched_store *s = NULL;
    opsched_status st = opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &s);
    assert_int_equal(st, OPSCHED_ERR_PARSE);
    assert_null(s);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), path));
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "not an opsched database"));

    /* Someone else's SQLite file is refused too, and left alone. */
    path_in(fx, "other.db", path, sizeof(path));
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE t (x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_ERR_PARSE);
    assert_null(s);
}

static void test_unwritable_path(void **state)
{
    fixture *fx = *state;
    char file[128], path[160];
    path_in(fx, "plainfile", file, sizeof(file));
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    /* A path under a regular file cannot be created, even by root. */
    snprintf(path, sizeof(path), "%s/m.db", file);
    opsched_store *s = NULL;
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_ERR_IO);
    assert_null(s);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), path));
    assert_int_equal(opsched_store_open(fx->ctx, "", OPSCHED_STORE_READ_WRITE, &s), OPSCHED_ERR_INVALID_ARG);
}

static void test_merge(void **state)
{
    fixture *fx = *state;
    char pa[128], pb[128], pe[128], pn[128], v[128], uuid_b[64];
    path_in(fx, "a.db", pa, sizeof(pa));
    path_in(fx, "b.db", pb, sizeof(pb));
    path_in(fx, "e.db", pe, sizeof(pe));
    path_in(fx, "newer.db", pn, sizeof(pn));

    seeded a = seed(fx, pa, "Conv|one");
    for (int i = 0; i < 3; i++) {
        char key[32];
        snprintf(key, sizeof(key), "a%d", i);
        add_ok(&a, a.cfg, key);
    }
    seeded b = seed(fx, pb, "Conv|one");
    opsched_config_record c2;
    int64_t cfg2 = 0;
    conv_record(&c2, "Conv|two", 8);
    assert_int_equal(opsched_store_config(b.s, &c2, &cfg2), OPSCHED_OK);
    add_ok(&b, b.cfg, "b0");
    add_ok(&b, cfg2, "b1");
    assert_int_equal(opsched_store_end_run(b.s, b.run, "done"), OPSCHED_OK);
    opsched_store_close(b.s);
    query_text(pb, "SELECT uuid FROM runs", NULL, uuid_b, sizeof(uuid_b));

    opsched_merge_stats ms;
    assert_int_equal(opsched_store_merge(a.s, pb, &ms), OPSCHED_OK);
    assert_int_equal(ms.runs, 1);
    assert_int_equal(ms.devices, 0);
    assert_int_equal(ms.configs, 1);
    assert_int_equal(ms.measurements_added, 2);
    assert_int_equal(ms.measurements_skipped, 0);
    assert_int_equal(opsched_store_merge(a.s, pb, &ms), OPSCHED_OK);
    assert_int_equal(ms.runs + ms.devices + ms.configs + ms.measurements_added, 0);
    assert_int_equal(ms.measurements_skipped, 2);

    opsched_store_summary sum;
    assert_int_equal(opsched_store_summary_get(a.s, &sum), OPSCHED_OK);
    assert_int_equal(sum.runs, 2);
    assert_int_equal(sum.devices, 1);
    assert_int_equal(sum.configs, 2);
    assert_int_equal(sum.measurements, 5);

    /* A newer file, a missing file: refused, nothing changes or appears. */
    opsched_store_close(open_store(fx, pn));
    set_user_version(pn, 999);
    assert_int_equal(opsched_store_merge(a.s, pn, &ms), OPSCHED_ERR_VERSION);
    char missing[160];
    path_in(fx, "missing.db", missing, sizeof(missing));
    assert_int_equal(opsched_store_merge(a.s, missing, &ms), OPSCHED_ERR_IO);
    assert_int_equal(access(missing, F_OK), -1);
    opsched_store_close(a.s);

    /* B's measurements kept B's run, and the run its end. */
    query_text(pa,
               "SELECT count(*) || ' ' || r.status FROM measurements AS m JOIN runs AS r"
               " ON r.id = m.run_id WHERE r.uuid = ?",
               uuid_b, v, sizeof(v));
    assert_string_equal(v, "2 done");
    query_text(pa,
               "SELECT c.batch FROM measurements AS m JOIN configs AS c ON c.id = m.config_id"
               " WHERE m.settings_key = 'b1'",
               NULL, v, sizeof(v));
    assert_string_equal(v, "8");

    /* Into an empty file: everything once; B again: nothing. */
    opsched_store *e = open_store(fx, pe);
    assert_int_equal(opsched_store_merge(e, pa, &ms), OPSCHED_OK);
    assert_int_equal(ms.runs, 2);
    assert_int_equal(ms.devices, 1);
    assert_int_equal(ms.configs, 2);
    assert_int_equal(ms.measurements_added, 5);
    assert_int_equal(opsched_store_merge(e, pb, &ms), OPSCHED_OK);
    assert_int_equal(ms.measurements_added, 0);
    assert_int_equal(ms.measurements_skipped, 2);
    opsched_store_close(e);
}

static void test_export_csv(void **state)
{
    fixture *fx = *state;
    char path[128], csv[128];
    path_in(fx, "x.db", path, sizeof(path));
    path_in(fx, "x.csv", csv, sizeof(csv));
    seeded z = seed(fx, path, "Conv|1x64x56x28");
    opsched_device_info d;
    fake_device(&d, "Fake \"GPU\", 80GB");
    assert_int_equal(opsched_store_device(z.s, &d, &z.dev), OPSCHED_OK);
    add_ok(&z, z.cfg, "k");
    opsched_config_record lin;
    int64_t lin_id = 0;
    linear_record(&lin);
    assert_int_equal(opsched_store_config(z.s, &lin, &lin_id), OPSCHED_OK);
    opsched_measurement m;
    failed_measurement(&m, OPSCHED_ERR_UNSUPPORTED, "no");
    assert_int_equal(opsched_store_add(z.s, z.run, z.dev, lin_id, "k", "gemm", &m, NULL),
                     OPSCHED_OK);

    const char *header =
        "Batch size,In Channels,Out Channels,Kernel Size,Stride,Width,Height,Flops,Latency,"
        "Latency Type,op,padding,groups,dtype,algo_policy,algo,math,layout,cache,status,n,min,"
        "max,mean,std,p90,p95,p99,trimmed_mean,cv,workspace_bytes,energy_j,dynamic_energy_j,"
        "power_mean_w,energy_method,device_name,device_uuid,run_uuid,created_at,signature,energy_power_j,idle_power_w,energy_window_ms,energy_launches,launches_per_sample\n";
    const char *conv_row =
        "1,64,128,3,1,28,56,12345,0.5,median_ms,conv2d,1,1,f32,heuristic,implicit_gemm,tf32,"
        "nchw,hot,ok,50,0.4,0.6,0.5,0.01,0.55,0.57,0.59,0.5,0.02,1024,,,,,"
        "\"Fake \"\"GPU\"\", 80GB\",GPU-0123-4567,";
    const char *linear_row = "4,256,10,,,,,20480,,median_ms,linear,,,f32,gemm,,fp32,nchw,hot,"
                             "unsupported,,,,,,,,,,,0,";

    const char *filters[] = {"conv2d", "linear", NULL};
    for (int k = 0; k < 3; k++) {
        FILE *f = fopen(csv, "w");
        assert_non_null(f);
        assert_int_equal(opsched_store_export_csv(z.s, f, filters[k]), OPSCHED_OK);
        fclose(f);
        char *text = NULL;
        size_t size = 0;
        assert_int_equal(os_read_file(fx->ctx, csv, &text, &size), OPSCHED_OK);
        assert_memory_equal(text, header, strlen(header));
        const char *row = text + strlen(header);
        const char *expect = k == 1 ? linear_row : conv_row;
        assert_memory_equal(row, expect, strlen(expect));
        int lines = 0;
        for (size_t i = 0; i < size; i++)
            lines += text[i] == '\n';
        assert_int_equal(lines, k == 2 ? 3 : 2);
        if (k == 2) assert_non_null(strstr(row, linear_row));
        free(text);
    }
    opsched_store_close(z.s);
}

/* One writer process: its own connection, run and 200 commits. */
static int child_writes(const char *path, int which)
{
    opsched_ctx *ctx = NULL;
    opsched_store *s = NULL;
    int rc = 1;
    opsched_device_info d;
    opsched_config_record c;
    opsched_run_info info = run_info();
    int64_t dev, cfg, run;
    if (opsched_ctx_create(&ctx) != OPSCHED_OK) return 1;
    fake_device(&d, "H100");
    conv_record(&c, "Conv|shared", 1);
    info.shard_index = which;
    info.shard_count = 2;
    if (opsched_store_open(ctx, path, OPSCHED_STORE_READ_WRITE, &s) != OPSCHED_OK ||
        opsched_store_device(s, &d, &dev) != OPSCHED_OK ||
        opsched_store_config(s, &c, &cfg) != OPSCHED_OK ||
        opsched_store_begin_run(s, &info, &run) != OPSCHED_OK)
        goto done;
    for (int i = 0; i < 200; i++) {
        opsched_measurement m;
        char key[32];
        ok_measurement(&m);
        snprintf(key, sizeof(key), "w%d-%d", which, i);
        if (opsched_store_add(s, run, dev, cfg, key, "heuristic", &m, NULL) != OPSCHED_OK)
            goto done;
    }
    if (opsched_store_end_run(s, run, "done") != OPSCHED_OK) goto done;
    rc = 0;
done:
    if (rc) fprintf(stderr, "writer %d: %s\n", which, opsched_ctx_last_error(ctx));
    opsched_store_close(s);
    opsched_ctx_free(ctx);
    return rc;
}

static void test_two_processes(void **state)
{
    fixture *fx = *state;
    char path[128], v[64];
    path_in(fx, "shared.db", path, sizeof(path));
    /* Both children create the file: the schema must appear once. */
    pid_t pids[2];
    for (int i = 0; i < 2; i++) {
        fflush(NULL);
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) _exit(child_writes(path, i));
    }
    for (int i = 0; i < 2; i++) {
        int status = 0;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    opsched_store *s = open_store(fx, path);
    opsched_store_summary sum;
    assert_int_equal(opsched_store_summary_get(s, &sum), OPSCHED_OK);
    assert_int_equal(sum.measurements, 400);
    assert_int_equal(sum.runs, 2);
    assert_int_equal(sum.devices, 1);
    assert_int_equal(sum.configs, 1);
    opsched_store_close(s);
    query_text(path, "PRAGMA integrity_check", NULL, v, sizeof(v));
    assert_string_equal(v, "ok");
    query_text(path, "SELECT count(DISTINCT uuid) FROM runs WHERE status = 'done'", NULL, v,
               sizeof(v));
    assert_string_equal(v, "2");
}

/* SQLite's page limit stands in for a full disk (white box: the store's
 * connection is reached through store_impl.h). */
static void test_disk_full(void **state)
{
    fixture *fx = *state;
    char path[128];
    path_in(fx, "full.db", path, sizeof(path));
    seeded z = seed(fx, path, "Conv|full");
    assert_int_equal(sqlite3_exec(z.s->db, "PRAGMA max_page_count = 1", NULL, NULL, NULL),
                     SQLITE_OK);
    opsched_measurement m;
    ok_measurement(&m);
    opsched_status st = OPSCHED_OK;
    char key[32];
    for (int i = 0; i < 1000 && st == OPSCHED_OK; i++) {
        snprintf(key, sizeof(key), "full-%d", i);
        st = opsched_store_add(z.s, z.run, z.dev, z.cfg, key, "heuristic", &m, NULL);
    }
    assert_int_equal(st, OPSCHED_ERR_IO);
    const char *msg = opsched_ctx_last_error(fx->ctx);
    assert_non_null(strstr(msg, path));
    assert_non_null(strstr(msg, "disk full"));
    /* The failed write was rolled back; the store still answers. */
    int found = 1;
    assert_int_equal(opsched_store_has(z.s, z.dev, z.cfg, key, &found), OPSCHED_OK);
    assert_int_equal(found, 0);
    opsched_store_close(z.s);
}

static void test_config_record_from_node(void **state)
{
    fixture *fx = *state;
    opsched_graph *g = NULL;
    opsched_shape shape;
    int x = -1, y = -1, p = -1, f = -1, l = -1;
    assert_int_equal(opsched_graph_create(fx->ctx, "t", &g), OPSCHED_OK);
    assert_int_equal(opsched_shape_parse("2x32x20x24", &shape), OPSCHED_OK);
    assert_int_equal(
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &shape, &x),
        OPSCHED_OK);
    opsched_conv_desc cd = {.out_channels = 64,
                            .kernel_h = 5,
                            .kernel_w = 3,
                            .stride_h = 2,
                            .stride_w = 2,
                            .pad_h = 2,
                            .pad_w = 1,
                            .groups = 2,
                            .bias = 1};
    assert_int_equal(opsched_build_conv(g, "conv", x, &cd, &y), OPSCHED_OK);
    assert_int_equal(opsched_build_pool(g, "pool", OPSCHED_OP_MAXPOOL, y, 3, 2, 1, 0, 0, &p),
                     OPSCHED_OK);
    assert_int_equal(opsched_build_flatten(g, "flat", p, 1, &f), OPSCHED_OK);
    assert_int_equal(opsched_build_linear(g, "fc", f, 10, 1, &l), OPSCHED_OK);

    opsched_config_record r;
    assert_int_equal(opsched_config_record_from_node(g, 0, &r), OPSCHED_OK);
    const opsched_node *n = opsched_graph_node(g, 0);
    assert_true(strlen(r.signature) > 0);
    assert_string_equal(r.op, "conv2d");
    assert_string_equal(r.dtype, "f32");
    assert_int_equal(r.batch, 2);
    assert_int_equal(r.in_channels, 32);
    assert_int_equal(r.out_channels, 64);
    assert_int_equal(r.kernel, 5);
    assert_int_equal(r.stride, 2);
    assert_int_equal(r.padding, 2);
    assert_int_equal(r.groups, 2);
    assert_int_equal(r.height, 20);
    assert_int_equal(r.width, 24);
    assert_int_equal(r.flops, n->cost.flops);
    assert_int_equal(r.bytes, n->cost.bytes_read + n->cost.bytes_written);

    assert_int_equal(opsched_config_record_from_node(g, 1, &r), OPSCHED_OK);
    assert_string_equal(r.op, "maxpool");
    assert_int_equal(r.in_channels, 64);
    assert_int_equal(r.out_channels, 64);
    assert_int_equal(r.kernel, 3);
    assert_int_equal(r.stride, 2);
    assert_int_equal(r.padding, 1);
    assert_int_equal(r.groups, -1);
    assert_int_equal(r.height, 10);
    assert_int_equal(r.width, 12);

    assert_int_equal(opsched_config_record_from_node(g, 3, &r), OPSCHED_OK);
    assert_string_equal(r.op, "linear");
    assert_int_equal(r.batch, 2);
    assert_int_equal(r.in_channels, 64 * 5 * 6);
    assert_int_equal(r.out_channels, 10);
    assert_int_equal(r.kernel, -1);
    assert_int_equal(r.height, -1);

    assert_int_equal(opsched_config_record_from_node(g, 4, &r), OPSCHED_ERR_INVALID_ARG);
    opsched_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_settings_key),
        cmocka_unit_test_setup_teardown(test_add_has_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_database, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unwritable_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_csv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_record_from_node, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
