/*
 * test_validate.c - `opsched validate` on a database made here: every
 * layer of two zoo networks "measured" by a known law (a fixed cost plus
 * FLOPs over a rate), and network runs whose latency is that law's sum
 * times a constant plus a per-layer gap, with a little noise.  The
 * composition fit can recover that, so validating with exact layers must
 * come out within a few percent; the CSV must hold every run with its
 * signed error computed as (predicted - measured) / measured; leaving a
 * model out must still predict every run (learned and roofline layers);
 * the shipped-data path (--data without --db) gives the same numbers as
 * --db; the plot is written; and misuse is a usage error.
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

#include "opsched/opsched.h"

static const char *const models[] = {"squeezenet1_1", "resnet50"};
static const int64_t batches[] = {1, 2};
static const int64_t sizes[] = {64, 96};
/* Small models train in seconds; the test is about validate, not them. */
#define QUICK "--rounds 20 --folds 2"

typedef struct fixture {
    char dir[64];
    char db[128];
    opsched_ctx *ctx;
} fixture;

static const char *bin(void)
{
    const char *b = getenv("OPSCHED_BIN");
    return b && *b ? b : NULL;
}

/* The law of a layer: 5 us plus its FLOPs at 2 TFLOP/s (ms). */
static double layer_ms(int64_t flops)
{
    return 0.005 + (double)flops / 2e9;
}

/* A deterministic wobble in [-1, 1]. */
static double wobble(uint64_t k)
{
    k = k * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(k >> 11) / (double)(1ull << 53) * 2 - 1;
}

static void ok_measurement(opsched_measurement *m, double ms)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->algo, sizeof(m->algo), "synthetic");
    m->math = OPSCHED_MATH_FP32;
    m->stats.n = 10;
    m->stats.min = m->stats.max = m->stats.mean = m->stats.median = ms;
    m->stats.p90 = m->stats.p95 = m->stats.p99 = m->stats.trimmed_mean = ms;
    m->launches_per_sample = 1;
}

/* Adds every layer of model at (batch, size) and returns the law's sum
 * over the layers a run executes (views cost nothing, a Relu after a
 * convolution is fused into it) and their count. */
static double add_model(fixture *fx, opsched_store *s, int64_t run, int64_t dev, const char *model,
                        int64_t batch, int64_t size, int *launches)
{
    opsched_zoo_options zo = {.batch = batch, .height = size};
    opsched_graph *g = NULL;
    assert_int_equal(opsched_zoo_build(fx->ctx, model, &zo, &g), OPSCHED_OK);
    opsched_measure_options mo;
    opsched_measure_options_default(&mo);
    char key[256], fused_key[280];
    opsched_settings_key(&mo, key, sizeof(key));
    snprintf(fused_key, sizeof(fused_key), "%s;fused=relu", key);
    double sum = 0;
    *launches = 0;
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        if (opsched_op_is_view(n->op)) continue;
        opsched_config_record rec;
        int64_t cid = 0;
        assert_int_equal(opsched_config_record_from_node(g, i, &rec), OPSCHED_OK);
        assert_int_equal(opsched_store_config(s, &rec, &cid), OPSCHED_OK);
        opsched_measurement m;
        ok_measurement(&m, layer_ms(n->cost.flops));
        int found = 0;
        assert_int_equal(opsched_store_has(s, dev, cid, key, &found), OPSCHED_OK);
        if (!found) assert_int_equal(opsched_store_add(s, run, dev, cid, key, "heuristic", &m, NULL),
                                     OPSCHED_OK);
        if (n->op == OPSCHED_OP_CONV) {
            /* Fused with its Relu: the same law, the Relu's FLOPs added. */
            ok_measurement(&m, layer_ms(n->cost.flops + n->cost.out_elems));
            assert_int_equal(opsched_store_has(s, dev, cid, fused_key, &found), OPSCHED_OK);
            if (!found)
                assert_int_equal(opsched_store_add(s, run, dev, cid, fused_key, "heuristic", &m,
                                                   NULL),
                                 OPSCHED_OK);
        }
        /* The run's sum: a Relu right after a convolution costs nothing. */
        if (n->op == OPSCHED_OP_RELU && i > 0 && opsched_graph_node(g, i - 1)->op == OPSCHED_OP_CONV)
            continue;
        int fused = n->op == OPSCHED_OP_CONV && i + 1 < opsched_graph_num_nodes(g) &&
                    opsched_graph_node(g, i + 1)->op == OPSCHED_OP_RELU;
        sum += layer_ms(n->cost.flops + (fused ? n->cost.out_elems : 0));
        (*launches)++;
    }
    opsched_graph_free(g);
    return sum;
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    if (!fx) return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/opsched_validate_XXXXXX");
    if (!mkdtemp(fx->dir) || opsched_ctx_create(&fx->ctx) != OPSCHED_OK) {
        free(fx);
        return -1;
    }
    snprintf(fx->db, sizeof(fx->db), "%s/synthetic.db", fx->dir);
    opsched_store *s = NULL;
    if (opsched_store_open(fx->ctx, fx->db, OPSCHED_STORE_READ_WRITE, &s) != OPSCHED_OK) return -1;
    opsched_device_info d;
    memset(&d, 0, sizeof(d));
    snprintf(d.backend, sizeof(d.backend), "cuda");
    snprintf(d.name, sizeof(d.name), "Synthetic GPU");
    snprintf(d.uuid, sizeof(d.uuid), "GPU-synthetic");
    d.sm_count = 100;
    int64_t dev = 0, run = 0;
    opsched_run_info ri = {.command = "test_validate", .shard_count = 1};
    if (opsched_store_device(s, &d, &dev) != OPSCHED_OK ||
        opsched_store_begin_run(s, &ri, &run) != OPSCHED_OK)
        return -1;
    *state = fx;
    uint64_t k = 1;
    for (size_t m = 0; m < 2; m++)
        for (size_t b = 0; b < 2; b++)
            for (size_t z = 0; z < 2; z++) {
                int launches = 0;
                double sum = add_model(fx, s, run, dev, models[m], batches[b], sizes[z], &launches);
                opsched_network_record n;
                memset(&n, 0, sizeof(n));
                n.model = models[m];
                n.batch = batches[b];
                n.height = n.width = sizes[z];
                n.math = OPSCHED_MATH_FP32;
                n.enqueue_ms = NAN;
                n.peak_memory_bytes = -1;
                n.layer_sum_ms = n.attribution_latency = n.layer_energy_j = NAN;
                n.attribution_energy = n.check_rel_l2 = NAN;
                n.check_passed = -1;
                n.stats.n = 10;
                /* graph: 0.95 x the sum + 2 us per launch; free: + 6 us. */
                n.mode = "graph";
                n.stats.median = (0.95 * sum + 0.002 * launches) * (1 + 0.01 * wobble(k++));
                if (opsched_store_add_network(s, run, dev, &n, NULL) != OPSCHED_OK) return -1;
                n.mode = "free";
                n.stats.median = (0.95 * sum + 0.006 * launches) * (1 + 0.01 * wobble(k++));
                if (opsched_store_add_network(s, run, dev, &n, NULL) != OPSCHED_OK) return -1;
            }
    opsched_calibration c;
    memset(&c, 0, sizeof(c));
    snprintf(c.math, sizeof(c.math), "fp32");
    c.peak_flops = 2e12;
    c.bandwidth = 1e12;
    c.launch_us = 6;
    c.graph_node_us = 2;
    c.idle_power_w = NAN;
    if (opsched_store_calibration_put(s, dev, &c) != OPSCHED_OK) return -1;
    opsched_store_end_run(s, run, "done");
    opsched_store_close(s);
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", fx->dir);
    opsched_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

/* Runs opsched with args (a shell string); returns the exit code, stdout
 * into out (may be NULL). */
static int run_tool(const char *args, char *out, size_t size)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", bin(), args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = out ? fread(out, 1, size - 1, p) : 0;
    if (out) out[n] = '\0';
    char sink[4096];
    while (fread(sink, 1, sizeof(sink), p) > 0) {
    }
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

typedef struct csv_row {
    char model[32], mode[8];
    long batch, height;
    double measured, predicted, error;
} csv_row;

/* Reads the CSV's rows (the first columns); returns their count. */
static int read_csv(const char *path, csv_row *rows, int cap)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    assert_non_null(fgets(line, sizeof(line), f));
    assert_non_null(strstr(line, "model,batch,height,width,mode,measured_ms,predicted_ms,error_pct"));
    int n = 0;
    while (n < cap && fgets(line, sizeof(line), f)) {
        csv_row *r = &rows[n];
        long width;
        r->predicted = r->error = NAN;
        int got = sscanf(line, "%31[^,],%ld,%ld,%ld,%7[^,],%lf,%lf,%lf", r->model, &r->batch,
                         &r->height, &width, r->mode, &r->measured, &r->predicted, &r->error);
        assert_true(got >= 6);
        n++;
    }
    fclose(f);
    return n;
}

static void check_errors(const csv_row *rows, int n, double max_median)
{
    double abs_err[64];
    for (int i = 0; i < n; i++) {
        assert_true(isfinite(rows[i].predicted) && rows[i].predicted > 0);
        double want = 100 * (rows[i].predicted - rows[i].measured) / rows[i].measured;
        assert_float_equal(rows[i].error, want, 0.01 + 1e-3 * fabs(want));
        abs_err[i] = fabs(rows[i].error);
    }
    for (int i = 1; i < n; i++) /* insertion sort */
        for (int j = i; j > 0 && abs_err[j] < abs_err[j - 1]; j--) {
            double t = abs_err[j];
            abs_err[j] = abs_err[j - 1];
            abs_err[j - 1] = t;
        }
    print_message("median |error| %.2f%%, worst %.2f%%\n", abs_err[n / 2], abs_err[n - 1]);
    assert_true(abs_err[n / 2] < max_median);
}

static int have_tool(void)
{
    if (bin()) return 1;
    print_message("OPSCHED_BIN unset (run through ctest): skipped\n");
    return 0;
}

static void test_validate_exact(void **state)
{
    fixture *fx = *state;
    if (!have_tool()) skip();
    char args[1024], out[16384], csv[160], svg[160];
    snprintf(csv, sizeof(csv), "%s/v.csv", fx->dir);
    snprintf(svg, sizeof(svg), "%s/v.svg", fx->dir);
    snprintf(args, sizeof(args), "validate --db '%s' --math fp32 " QUICK " --csv '%s' --plot '%s'", fx->db,
             csv, svg);
    int rc = run_tool(args, out, sizeof(out));
    if (rc != 0) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "16 network runs of 2 models on cuda:Synthetic GPU"));
    assert_non_null(strstr(out, "Latency, absolute error per model:"));
    csv_row rows[64];
    int n = read_csv(csv, rows, 64);
    assert_int_equal(n, 16);
    /* Every layer exact and the composition fitted to runs made by the
     * same law: the error is the 1% noise, not more. */
    check_errors(rows, n, 3.0);
    struct stat st;
    if (strstr(out, "built without PLplot") == NULL) {
        assert_int_equal(stat(svg, &st), 0);
        assert_true(st.st_size > 1000);
    }

    /* Filters: one model, one batch, graph runs only. */
    snprintf(args, sizeof(args),
             "validate --db '%s' --math fp32 " QUICK " --models resnet50 --batch 2 --mode graph "
             "--csv '%s'",
             fx->db, csv);
    assert_int_equal(run_tool(args, out, sizeof(out)), 0);
    n = read_csv(csv, rows, 64);
    assert_int_equal(n, 2);
    for (int i = 0; i < n; i++) {
        assert_string_equal(rows[i].model, "resnet50");
        assert_int_equal(rows[i].batch, 2);
        assert_string_equal(rows[i].mode, "graph");
    }
}

static void test_validate_loo_and_shipped(void **state)
{
    fixture *fx = *state;
    if (!have_tool()) skip();
    const char *py = getenv("OPSCHED_PYTHON"), *src = getenv("OPSCHED_SOURCE_DIR");
    if (!py || !src) skip();
    char args[1400], out[16384], csv[160], csv2[160];
    snprintf(csv, sizeof(csv), "%s/loo.csv", fx->dir);
    snprintf(csv2, sizeof(csv2), "%s/shipped.csv", fx->dir);
    /* Leave one model out: its configurations are unknown to exact
     * lookups, yet every run gets a prediction. */
    snprintf(args, sizeof(args), "validate --db '%s' --math fp32 " QUICK " --loo --batch 1 --csv '%s'",
             fx->db, csv);
    int rc = run_tool(args, out, sizeof(out));
    if (rc != 0) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "without squeezenet1_1"));
    assert_non_null(strstr(out, "without resnet50"));
    csv_row rows[64];
    int n = read_csv(csv, rows, 64);
    assert_int_equal(n, 8);
    for (int i = 0; i < n; i++) assert_true(isfinite(rows[i].predicted) && rows[i].predicted > 0);

    /* The same database as shipped data: --data alone finds it. */
    char cmd[1400], data[160], cache[160];
    snprintf(data, sizeof(data), "%s/data", fx->dir);
    snprintf(cache, sizeof(cache), "%s/cache", fx->dir);
    snprintf(cmd, sizeof(cmd), "'%s' '%s/scripts/export-data.py' '%s' '%s/synthetic' >/dev/null",
             py, src, fx->db, data);
    assert_int_equal(system(cmd), 0);
    setenv("OPSCHED_DATA_DIR", data, 1);
    setenv("OPSCHED_CACHE_DIR", cache, 1);
    snprintf(args, sizeof(args), "validate --data Synthetic --math fp32 " QUICK " --batch 1 --csv '%s'",
             csv2);
    rc = run_tool(args, out, sizeof(out));
    unsetenv("OPSCHED_DATA_DIR");
    unsetenv("OPSCHED_CACHE_DIR");
    if (rc != 0) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    csv_row a[64], b[64];
    snprintf(args, sizeof(args), "validate --db '%s' --math fp32 " QUICK " --batch 1 --csv '%s'", fx->db,
             csv);
    assert_int_equal(run_tool(args, NULL, 0), 0);
    int na = read_csv(csv, a, 64), nb = read_csv(csv2, b, 64);
    assert_int_equal(na, 8);
    assert_int_equal(nb, 8);
    for (int i = 0; i < na; i++) {
        assert_string_equal(a[i].model, b[i].model);
        assert_float_equal(a[i].predicted, b[i].predicted, 1e-6 * a[i].predicted);
    }
}

static void test_validate_usage(void **state)
{
    fixture *fx = *state;
    if (!have_tool()) skip();
    char args[512], out[4096];
    assert_int_equal(run_tool("validate --math fp32", out, sizeof(out)), 2);
    assert_non_null(strstr(out, "--db FILE, or --data NAME"));
    /* --data without --db names shipped data; there is none here. */
    setenv("OPSCHED_DATA_DIR", fx->dir, 1);
    assert_int_equal(run_tool("validate --data a100", out, sizeof(out)), 2);
    unsetenv("OPSCHED_DATA_DIR");
    assert_non_null(strstr(out, "no shipped data set 'a100'"));
    snprintf(args, sizeof(args), "validate --db '%s' --plot out.pdf", fx->db);
    assert_int_equal(run_tool(args, out, sizeof(out)), 2);
    assert_non_null(strstr(out, ".svg or .png"));
    snprintf(args, sizeof(args), "validate --db '%s' --mode layered", fx->db);
    assert_int_equal(run_tool(args, out, sizeof(out)), 2);
    /* No runs under these settings: said, and a failure. */
    snprintf(args, sizeof(args), "validate --db '%s' --math bf16", fx->db);
    assert_int_equal(run_tool(args, out, sizeof(out)), 1);
    assert_non_null(strstr(out, "no graph or free network runs"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_validate_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validate_loo_and_shipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validate_usage, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
