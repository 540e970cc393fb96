/*
 * test_calibrate.c - device calibrations: measured on the CPU backend
 * (small sizes, a few seconds), stored and read back, replaced by a newer
 * one, merged by time, and a schema-2 file upgraded in place to schema 3.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "opsched/opsched.h"

typedef struct fixture {
    char dir[64];
    char path[128];
    opsched_ctx *ctx;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    if (!fx) return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/opsched_cal_XXXXXX");
    if (!mkdtemp(fx->dir) || opsched_ctx_create(&fx->ctx) != OPSCHED_OK) {
        free(fx);
        return -1;
    }
    snprintf(fx->path, sizeof(fx->path), "%s/m.db", fx->dir);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    const char *suffix[] = {"", "-wal", "-shm"};
    const char *names[] = {"m.db", "n.db"};
    char p[256];
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) {
            snprintf(p, sizeof(p), "%s/%s%s", fx->dir, names[i], suffix[k]);
            remove(p);
        }
    rmdir(fx->dir);
    opsched_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

static void sql(const char *path, const char *text)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, text, NULL, NULL, &err);
    if (rc != SQLITE_OK) fprintf(stderr, "%s: %s\n", text, err ? err : "?");
    sqlite3_free(err);
    assert_int_equal(rc, SQLITE_OK);
    sqlite3_close(db);
}

static int64_t sql_int(const char *path, const char *query)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, query, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static int64_t add_device(opsched_store *s, const char *uuid)
{
    opsched_device_info d;
    memset(&d, 0, sizeof(d));
    snprintf(d.backend, sizeof(d.backend), "cuda");
    snprintf(d.name, sizeof(d.name), "Test GPU");
    snprintf(d.uuid, sizeof(d.uuid), "%s", uuid);
    int64_t id = 0;
    assert_int_equal(opsched_store_device(s, &d, &id), OPSCHED_OK);
    return id;
}

static opsched_calibration cal(const char *math, double flops, double at)
{
    opsched_calibration c;
    memset(&c, 0, sizeof(c));
    snprintf(c.math, sizeof(c.math), "%s", math);
    c.peak_flops = flops;
    c.bandwidth = 3.0e12;
    c.launch_us = 4.5;
    c.graph_node_us = 1.25;
    c.idle_power_w = NAN;
    c.created_at = at;
    return c;
}

static void test_put_get_replace(void **state)
{
    fixture *fx = *state;
    opsched_store *s = NULL;
    assert_int_equal(opsched_store_open(fx->ctx, fx->path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    int64_t dev = add_device(s, "GPU-1");
    opsched_calibration c = cal("tf32", 4.0e14, 1000.5), got;
    int found = -1;

    assert_int_equal(opsched_store_calibration_get(s, dev, "tf32", &got, &found), OPSCHED_OK);
    assert_int_equal(found, 0);
    assert_int_equal(opsched_store_calibration_put(s, dev, &c), OPSCHED_OK);
    assert_int_equal(opsched_store_calibration_get(s, dev, "tf32", &got, &found), OPSCHED_OK);
    assert_int_equal(found, 1);
    assert_string_equal(got.math, "tf32");
    assert_float_equal(got.peak_flops, 4.0e14, 1);
    assert_float_equal(got.bandwidth, 3.0e12, 1);
    assert_float_equal(got.launch_us, 4.5, 1e-12);
    assert_float_equal(got.graph_node_us, 1.25, 1e-12);
    assert_true(isnan(got.idle_power_w)); /* not measured stays NaN */
    assert_float_equal(got.created_at, 1000.5, 1e-9);
    /* Other math modes and devices have none. */
    assert_int_equal(opsched_store_calibration_get(s, dev, "fp32", &got, &found), OPSCHED_OK);
    assert_int_equal(found, 0);
    assert_int_equal(opsched_store_calibration_get(s, dev + 1, "tf32", &got, &found), OPSCHED_OK);
    assert_int_equal(found, 0);

    /* A later calibration replaces it: one row per (device, math). */
    c = cal("tf32", 5.0e14, 2000.0);
    c.idle_power_w = 70.0;
    assert_int_equal(opsched_store_calibration_put(s, dev, &c), OPSCHED_OK);
    c = cal("fp32", 5.0e13, 2000.0);
    assert_int_equal(opsched_store_calibration_put(s, dev, &c), OPSCHED_OK);
    assert_int_equal(opsched_store_calibration_get(s, dev, "tf32", &got, &found), OPSCHED_OK);
    assert_float_equal(got.peak_flops, 5.0e14, 1);
    assert_float_equal(got.idle_power_w, 70.0, 1e-12);

    /* Bad arguments: a math mode that is not one, a device that is not there. */
    c = cal("fp64", 1, 1);
    assert_int_equal(opsched_store_calibration_put(s, dev, &c), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "fp64"));
    assert_int_equal(opsched_store_calibration_get(s, dev, NULL, &got, &found),
                     OPSCHED_ERR_INVALID_ARG);
    c = cal("fp16", 1, 1);
    assert_int_not_equal(opsched_store_calibration_put(s, dev + 99, &c), OPSCHED_OK);
    opsched_store_close(s);
    assert_int_equal(sql_int(fx->path, "SELECT count(*) FROM calibrations"), 2);
}

static void test_schema2_upgraded(void **state)
{
    fixture *fx = *state;
    opsched_store *s = NULL;
    assert_int_equal(opsched_store_open(fx->ctx, fx->path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    int64_t dev = add_device(s, "GPU-1");
    opsched_store_close(s);
    /* What a schema-2 build left: no calibrations table, version 2. */
    sql(fx->path, "DROP TABLE collectives; DROP TABLE stages; DROP TABLE calibrations;"
                  " PRAGMA user_version = 2;");
    assert_int_equal(sql_int(fx->path, "SELECT count(*) FROM sqlite_master WHERE name = "
                                       "'calibrations'"),
                     0);

    assert_int_equal(opsched_store_open(fx->ctx, fx->path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    opsched_calibration c = cal("fp16", 9.0e14, 10), got;
    int found = 0;
    assert_int_equal(opsched_store_calibration_put(s, dev, &c), OPSCHED_OK);
    assert_int_equal(opsched_store_calibration_get(s, dev, "fp16", &got, &found), OPSCHED_OK);
    assert_int_equal(found, 1);
    opsched_store_close(s);
    assert_int_equal(sql_int(fx->path, "PRAGMA user_version"), opsched_store_schema_version());
    assert_int_equal(sql_int(fx->path, "SELECT count(*) FROM devices"), 1); /* kept */
}

static void test_merge_newer_wins(void **state)
{
    fixture *fx = *state;
    char other[160];
    snprintf(other, sizeof(other), "%s/n.db", fx->dir);
    opsched_store *a = NULL, *b = NULL;
    assert_int_equal(opsched_store_open(fx->ctx, fx->path, OPSCHED_STORE_READ_WRITE, &a), OPSCHED_OK);
    assert_int_equal(opsched_store_open(fx->ctx, other, OPSCHED_STORE_READ_WRITE, &b), OPSCHED_OK);
    /* Different ids for the same device in the two files. */
    add_device(b, "GPU-0");
    int64_t da = add_device(a, "GPU-1"), db = add_device(b, "GPU-1");
    assert_int_not_equal(da, db);
    opsched_calibration c = cal("tf32", 1.0e14, 100);
    assert_int_equal(opsched_store_calibration_put(a, da, &c), OPSCHED_OK);
    c = cal("tf32", 2.0e14, 200); /* newer */
    assert_int_equal(opsched_store_calibration_put(b, db, &c), OPSCHED_OK);
    c = cal("fp32", 3.0e13, 50);
    assert_int_equal(opsched_store_calibration_put(b, db, &c), OPSCHED_OK);
    opsched_store_close(b);

    opsched_merge_stats ms;
    assert_int_equal(opsched_store_merge(a, other, &ms), OPSCHED_OK);
    assert_int_equal(ms.calibrations, 2);
    opsched_calibration got;
    int found = 0;
    assert_int_equal(opsched_store_calibration_get(a, da, "tf32", &got, &found), OPSCHED_OK);
    assert_int_equal(found, 1);
    assert_float_equal(got.peak_flops, 2.0e14, 1);
    assert_int_equal(opsched_store_calibration_get(a, da, "fp32", &got, &found), OPSCHED_OK);
    assert_int_equal(found, 1);

    /* Merging an older one back changes nothing. */
    assert_int_equal(opsched_store_open(fx->ctx, other, OPSCHED_STORE_READ_WRITE, &b), OPSCHED_OK);
    c = cal("tf32", 7.0e14, 150);
    assert_int_equal(opsched_store_calibration_put(b, db, &c), OPSCHED_OK);
    opsched_store_close(b);
    assert_int_equal(opsched_store_merge(a, other, &ms), OPSCHED_OK);
    assert_int_equal(ms.calibrations, 0);
    assert_int_equal(opsched_store_calibration_get(a, da, "tf32", &got, &found), OPSCHED_OK);
    assert_float_equal(got.peak_flops, 2.0e14, 1);
    opsched_store_close(a);
}

static void test_calibrate_cpu(void **state)
{
    fixture *fx = *state;
    int n = 0;
    if (opsched_device_count(fx->ctx, "cpu", &n) != OPSCHED_OK || n == 0) {
        print_message("no CPU backend in this build: skipped\n");
        skip();
    }
    opsched_device *dev = NULL;
    assert_int_equal(opsched_device_open(fx->ctx, "cpu", 0, &dev), OPSCHED_OK);
    opsched_calibration c;
    opsched_status st = opsched_device_calibrate(dev, OPSCHED_MATH_FP32, &c);
    if (st != OPSCHED_OK) fprintf(stderr, "%s\n", opsched_ctx_last_error(fx->ctx));
    assert_int_equal(st, OPSCHED_OK);
    print_message("cpu fp32: %.3g FLOP/s, %.3g B/s, launch %.2f us, node %.2f us, idle %.1f W\n",
                  c.peak_flops, c.bandwidth, c.launch_us, c.graph_node_us, c.idle_power_w);
    assert_string_equal(c.math, "fp32");
    /* Bounds no CPU of this decade falls outside of. */
    assert_true(c.peak_flops > 1e8 && c.peak_flops < 1e14);
    assert_true(c.bandwidth > 1e8 && c.bandwidth < 1e13);
    /* A launch's cost is a measured time, not a target: a loaded 2-core
     * machine measured 16 ms once; a second bounds a value gone wrong. */
    assert_true(c.launch_us > 0 && c.launch_us < 1e6);
    assert_true(c.graph_node_us >= 0 && c.graph_node_us < 1e6);
    assert_true(isnan(c.idle_power_w) || (c.idle_power_w > 0 && c.idle_power_w < 2000));
    assert_true(c.created_at > 1.6e9);

    /* Half precision is not something the CPU backend runs. */
    opsched_calibration h;
    assert_int_equal(opsched_device_calibrate(dev, OPSCHED_MATH_FP16, &h), OPSCHED_ERR_UNSUPPORTED);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "fp16"));

    /* Stored under the device, read back as measured. */
    opsched_store *s = NULL;
    opsched_device_info info;
    int64_t id = 0;
    int found = 0;
    opsched_calibration got;
    assert_int_equal(opsched_device_info_get(dev, &info), OPSCHED_OK);
    assert_int_equal(opsched_store_open(fx->ctx, fx->path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    assert_int_equal(opsched_store_device(s, &info, &id), OPSCHED_OK);
    assert_int_equal(opsched_store_calibration_put(s, id, &c), OPSCHED_OK);
    assert_int_equal(opsched_store_calibration_get(s, id, "fp32", &got, &found), OPSCHED_OK);
    assert_int_equal(found, 1);
    assert_float_equal(got.peak_flops, c.peak_flops, c.peak_flops * 1e-12);
    assert_float_equal(got.launch_us, c.launch_us, 1e-9);
    opsched_store_close(s);
    opsched_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_get_replace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema2_upgraded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_newer_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_calibrate_cpu, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
