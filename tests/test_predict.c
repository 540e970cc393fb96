/*
 * test_predict.c - prediction from the measurement database: the dataset
 * and its fingerprint, exact lookups, learned models (trained, saved,
 * reloaded, retrained when the data change, judged against the FLOPs-only
 * baseline), the roofline and "none" sources, exclusions, the composition
 * fit against network runs, and a network measured layer by layer on the
 * CPU backend whose prediction rests entirely on exact measurements.
 *
 * The learned-model tests use synthetic measurements with a known
 * staircase law (latency steps with the waves of output tiles), so they
 * are fast and deterministic; the network test measures for real.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/assert_near.h"

#include "opsched/opsched.h"

typedef struct fixture {
    char dir[64];
    char db[128];
    opsched_ctx *ctx;
} fixture;

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        remove(path);
        return;
    }
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
        remove_tree(p);
    }
    closedir(d);
    rmdir(path);
}

/* OPSCHED_TEST_VERBOSE=1 shows the library's progress messages. */
static void test_log(opsched_log_level level, const char *msg, void *user)
{
    (void)level;
    (void)user;
    fprintf(stderr, "  [log] %s\n", msg);
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    if (!fx) return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/opsched_predict_XXXXXX");
    if (!mkdtemp(fx->dir) || opsched_ctx_create(&fx->ctx) != OPSCHED_OK) {
        free(fx);
        return -1;
    }
    snprintf(fx->db, sizeof(fx->db), "%s/m.db", fx->dir);
    if (getenv("OPSCHED_TEST_VERBOSE"))
        opsched_ctx_set_log(fx->ctx, test_log, NULL, OPSCHED_LOG_INFO);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    remove_tree(fx->dir);
    opsched_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

#define OK(fx, expr)                                                                               \
    do {                                                                                           \
        opsched_status st_ = (expr);                                                               \
        if (st_ != OPSCHED_OK)                                                                     \
            fail_msg("%s: %s (%s)", #expr, opsched_status_str(st_),                                \
                     opsched_ctx_last_error((fx)->ctx));                                           \
    } while (0)


/* ---- synthetic database ------------------------------------------------------ */

typedef struct synth {
    opsched_store *s;
    int64_t run, dev;
    opsched_feature_device fdev;
} synth;

static void synth_open(fixture *fx, synth *y)
{
    memset(y, 0, sizeof(*y));
    OK(fx, opsched_store_open(fx->ctx, fx->db, OPSCHED_STORE_READ_WRITE, &y->s));
    opsched_device_info d;
    memset(&d, 0, sizeof(d));
    snprintf(d.backend, sizeof(d.backend), "cuda");
    snprintf(d.name, sizeof(d.name), "Test GPU");
    snprintf(d.uuid, sizeof(d.uuid), "GPU-test-0001");
    d.sm_count = 132;
    d.has_power = d.has_energy = 1;
    OK(fx, opsched_store_device(y->s, &d, &y->dev));
    opsched_run_info ri = {.command = "test", .shard_count = 1};
    OK(fx, opsched_store_begin_run(y->s, &ri, &y->run));
    y->fdev.sm_count = 132;
    y->fdev.peak_flops = y->fdev.bandwidth = y->fdev.node_floor_us = NAN;
}

static const char *const settings_tf32 = "algo=heuristic;math=tf32;layout=nchw;cache=hot;energy=0";

/* The law the synthetic device follows: a floor, plus per wave of
 * 128x128 output tiles a time that grows with the reduction K; other
 * operators by bytes. */
static double synth_ms(fixture *fx, const synth *y, const opsched_config_record *r, int fused)
{
    double f[OPSCHED_FEATURE_COUNT];
    OK(fx, opsched_features(fx->ctx, r, fused, &y->fdev, f));
    double waves = f[29], k = f[23]; /* waves_128x128, gemm_k */
    assert_string_equal(opsched_feature_name(29), "waves_128x128");
    assert_string_equal(opsched_feature_name(23), "gemm_k");
    if (isfinite(waves) && isfinite(k)) return 1e-3 * (4 + waves * (2 + k / 16.0)) * (fused ? 1.05 : 1);
    return 1e-3 * (3 + (double)r->bytes / 2e6);
}

static int64_t synth_add(fixture *fx, synth *y, const opsched_config_record *r, int fused,
                         double ms, double energy_j, const char *extra)
{
    int64_t cid = 0, mid = 0;
    OK(fx, opsched_store_config(y->s, r, &cid));
    opsched_measurement m;
    memset(&m, 0, sizeof(m));
    m.status = OPSCHED_OK;
    snprintf(m.algo, sizeof(m.algo), "synthetic");
    m.math = OPSCHED_MATH_TF32;
    m.stats.n = 10;
    m.stats.min = m.stats.max = m.stats.mean = m.stats.median = ms;
    m.stats.p90 = m.stats.p95 = m.stats.p99 = m.stats.trimmed_mean = ms;
    m.stats.std = ms * 0.01;
    m.stats.cv = 0.01;
    if (energy_j > 0) {
        m.energy.valid = 1;
        snprintf(m.energy.method, sizeof(m.energy.method), "counter");
        m.energy.energy_j = energy_j;
        m.energy.power_mean_w = energy_j / (ms * 1e-3);
    }
    char key[256];
    snprintf(key, sizeof(key), "%s%s%s", settings_tf32, fused ? ";fused=relu" : "",
             extra ? extra : "");
    OK(fx, opsched_store_add(y->s, y->run, y->dev, cid, key, "heuristic", &m, &mid));
    return mid;
}

static void record_of(fixture *fx, const char *op, const opsched_param *p, int n,
                      opsched_config_record *r)
{
    opsched_graph *g = NULL;
    OK(fx, opsched_opconfig_build(fx->ctx, op, p, n, OPSCHED_F32, &g));
    OK(fx, opsched_config_record_from_node(g, 0, r));
    opsched_graph_free(g);
}

static void conv_rec(fixture *fx, int64_t b, int64_t cin, int64_t cout, int64_t h, int64_t k,
                     int64_t s, opsched_config_record *r)
{
    opsched_param p[] = {{"batch", b}, {"in_channels", cin}, {"out_channels", cout},
                         {"height", h}, {"kernel", k},     {"stride", s}};
    record_of(fx, "conv2d", p, 6, r);
}

/* A conv grid (plain and fused), linear layers and element-wise ops. */
static void synth_fill(fixture *fx, synth *y, int with_energy)
{
    static const int64_t batch[] = {1, 2, 8}, cin[] = {16, 48, 128}, cout[] = {16, 64, 256},
                         hw[] = {7, 14, 28, 56}, ks[] = {1, 3};
    int i = 0;
    opsched_config_record r;
    for (size_t a = 0; a < 3; a++)
        for (size_t b = 0; b < 3; b++)
            for (size_t c = 0; c < 3; c++)
                for (size_t d = 0; d < 4; d++)
                    for (size_t e = 0; e < 2; e++, i++) {
                        conv_rec(fx, batch[a], cin[b], cout[c], hw[d], ks[e], 1, &r);
                        int fused = i % 3 == 0;
                        double ms = synth_ms(fx, y, &r, fused);
                        double ej = with_energy && i % 2 == 0 ? ms * 1e-3 * (150 + 10 * e) : 0;
                        synth_add(fx, y, &r, fused, ms, ej, NULL);
                    }
    static const int64_t lb[] = {1, 4, 16, 64}, lin[] = {256, 1024, 4096}, lout[] = {10, 1000, 4096};
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < 3; b++)
            for (size_t c = 0; c < 3; c++) {
                opsched_param p[] = {{"batch", lb[a]}, {"in_features", lin[b]},
                                     {"out_features", lout[c]}};
                record_of(fx, "linear", p, 3, &r);
                synth_add(fx, y, &r, 0, synth_ms(fx, y, &r, 0), 0, NULL);
            }
    static const char *const ew[] = {"relu", "maxpool", "add"};
    for (size_t o = 0; o < 3; o++)
        for (size_t a = 0; a < 3; a++)
            for (size_t d = 0; d < 4; d++) {
                opsched_param p[] = {{"batch", batch[a]}, {"channels", cout[a]}, {"height", hw[d]}};
                record_of(fx, ew[o], p, 3, &r);
                synth_add(fx, y, &r, 0, synth_ms(fx, y, &r, 0), 0, NULL);
            }
}

static void quiet_options(opsched_predictor_options *o)
{
    opsched_predictor_options_default(o);
    o->rounds = 80;
    o->folds = 4;
    o->threads = 1;
}

/* ---- tests ------------------------------------------------------------------------ */

typedef struct walk {
    int rows, fused, network, host;
    int64_t max_id;
} walk;

static opsched_status count_row(const opsched_dataset_row *r, void *user)
{
    walk *w = user;
    w->rows++;
    w->fused += r->fused_relu;
    w->network += r->network;
    w->host += r->host;
    if (r->measurement_id > w->max_id) w->max_id = r->measurement_id;
    return OPSCHED_OK;
}

static void test_dataset(void **state)
{
    fixture *fx = *state;
    synth y;
    synth_open(fx, &y);
    opsched_config_record r;
    conv_rec(fx, 1, 16, 16, 14, 3, 1, &r);
    synth_add(fx, &y, &r, 0, 0.010, 0, NULL);
    synth_add(fx, &y, &r, 1, 0.011, 0, NULL);
    synth_add(fx, &y, &r, 0, 0.050, 0, ";mode=network");
    synth_add(fx, &y, &r, 0, 0.020, 0, ";mode=host"); /* host enqueue time, not device time */
    opsched_dataset_query q = {.device_id = y.dev, .math = "tf32", .layout = "nchw"};
    walk w = {0};
    OK(fx, opsched_store_dataset(y.s, &q, count_row, &w));
    assert_int_equal(w.rows, 2);
    assert_int_equal(w.fused, 1);
    assert_int_equal(w.network, 0);
    assert_int_equal(w.host, 0);
    q.include_network = 1;
    memset(&w, 0, sizeof(w));
    OK(fx, opsched_store_dataset(y.s, &q, count_row, &w));
    assert_int_equal(w.rows, 3);
    assert_int_equal(w.network, 1);
    assert_int_equal(w.host, 0);
    q.include_network = 0;
    q.include_host = 1;
    memset(&w, 0, sizeof(w));
    OK(fx, opsched_store_dataset(y.s, &q, count_row, &w));
    assert_int_equal(w.rows, 3);
    assert_int_equal(w.host, 1);
    q.include_host = 0;
    q.math = "fp16";
    memset(&w, 0, sizeof(w));
    OK(fx, opsched_store_dataset(y.s, &q, count_row, &w));
    assert_int_equal(w.rows, 0);

    q.math = "tf32";
    opsched_dataset_fingerprint a, b;
    OK(fx, opsched_store_dataset_fingerprint(y.s, &q, &a));
    assert_int_equal(a.count, 2);
    synth_add(fx, &y, &r, 0, 0.012, 0, NULL);
    OK(fx, opsched_store_dataset_fingerprint(y.s, &q, &b));
    assert_int_equal(b.count, 3);
    assert_true(b.max_id > a.max_id);

    opsched_device_row d;
    OK(fx, opsched_store_find_device(y.s, "test gpu", &d));
    assert_int_equal(d.id, y.dev);
    assert_int_equal(d.sm_count, 132);
    OK(fx, opsched_store_find_device(y.s, NULL, &d));
    assert_int_equal(d.id, y.dev);
    assert_int_equal(opsched_store_find_device(y.s, "h200", &d), OPSCHED_ERR_NOT_FOUND);
    opsched_store_close(y.s);
}

static void test_features(void **state)
{
    fixture *fx = *state;
    opsched_config_record r;
    /* 8x64x56x56, 3x3 -> 128 channels, stride 2: Ho = 28. */
    opsched_param p[] = {{"batch", 8}, {"in_channels", 64}, {"out_channels", 128},
                         {"height", 56}, {"kernel", 3}, {"stride", 2}};
    record_of(fx, "conv2d", p, 6, &r);
    opsched_feature_device dev = {.sm_count = 132, .peak_flops = 1e14, .bandwidth = 2e12,
                                  .node_floor_us = 1};
    double f[OPSCHED_FEATURE_COUNT];
    OK(fx, opsched_features(fx->ctx, &r, 1, &dev, f));
    const char *names[] = {"out_height", "gemm_m", "gemm_n", "gemm_k", "tiles_128x128",
                           "waves_128x128", "fused_relu"};
    double want[] = {28, 8 * 28 * 28, 128, 64 * 9, 49 * 1, 1, 1};
    for (int i = 0; i < 7; i++) {
        int at = -1;
        for (int k = 0; k < OPSCHED_FEATURE_COUNT; k++)
            if (strcmp(opsched_feature_name(k), names[i]) == 0) at = k;
        assert_true(at >= 0);
        assert_double_equal(f[at], want[i], 1e-9);
    }
    assert_null(opsched_feature_name(OPSCHED_FEATURE_COUNT));
    snprintf(r.signature, sizeof(r.signature), "NotAnOp|x:1:f32");
    assert_int_equal(opsched_features(fx->ctx, &r, 0, &dev, f), OPSCHED_ERR_INVALID_ARG);
}

static void test_exact_learned_saved(void **state)
{
    fixture *fx = *state;
    synth y;
    synth_open(fx, &y);
    synth_fill(fx, &y, 1);
    opsched_config_record measured, held;
    conv_rec(fx, 2, 48, 64, 28, 3, 1, &measured);
    int64_t mid = synth_add(fx, &y, &measured, 0, 0.123456, 0, NULL); /* the latest wins */
    conv_rec(fx, 4, 96, 128, 20, 3, 1, &held);                      /* never measured */
    double held_ms = synth_ms(fx, &y, &held, 0);

    opsched_predictor_options o;
    quiet_options(&o);
    opsched_predictor *p = NULL;
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &p));
    opsched_predictor_info in;
    OK(fx, opsched_predictor_info_get(p, &in));
    assert_int_equal(in.trained, 1);
    assert_string_equal(in.train_reason, "no saved models");
    assert_int_equal(in.has_calibration, 0);
    assert_true(in.rows > 250);
    assert_true(in.energy_rows > 50);

    opsched_op_prediction a;
    OK(fx, opsched_predict_config(p, &measured, 0, &a));
    assert_int_equal(a.source, OPSCHED_SOURCE_EXACT);
    assert_true(a.ms == 0.123456);
    assert_int_equal(a.measurement_id, mid);
    assert_double_equal(a.error, 0.01, 1e-12);

    opsched_op_prediction l;
    OK(fx, opsched_predict_config(p, &held, 0, &l));
    assert_int_equal(l.source, OPSCHED_SOURCE_LEARNED);
    assert_true(isfinite(l.ms) && l.ms > 0);
    print_message("held-out conv: learned %.4f ms, law %.4f ms\n", l.ms, held_ms);
    assert_true(fabs(l.ms / held_ms - 1) < 0.5);
    assert_true(isfinite(l.error) && l.error > 0);
    assert_int_equal(l.energy_source, OPSCHED_SOURCE_LEARNED);
    assert_true(isfinite(l.energy_j) && l.energy_j > 0);

    /* Each latency model against its FLOPs-only baseline, out of fold. */
    int conv_models = 0;
    for (int i = 0; i < opsched_predictor_num_models(p); i++) {
        const opsched_model_info *m = opsched_predictor_model(p, i);
        print_message("model %-16s rows %4lld cv median %5.1f%% p90 %5.1f%% within10 %3.0f%% | "
                      "baseline median %5.1f%% | %s\n",
                      m->name, (long long)m->rows, 100 * m->cv.median_ape, 100 * m->cv.p90_ape,
                      100 * m->cv.within10, 100 * m->baseline.median_ape, m->ops);
        assert_true(m->trained);
        if (strcmp(m->name, "power") != 0 && strstr(m->ops, "conv2d")) {
            conv_models++;
            assert_true(m->cv.median_ape < m->baseline.median_ape);
            assert_true(m->cv.median_ape < 0.10);
        }
    }
    assert_true(conv_models >= 1);

    /* Files next to the database; a second predictor loads them. */
    struct stat sb;
    assert_int_equal(stat(in.metadata_file, &sb), 0);
    opsched_predictor *q = NULL;
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &q));
    opsched_predictor_info qi;
    OK(fx, opsched_predictor_info_get(q, &qi));
    assert_int_equal(qi.trained, 0);
    opsched_op_prediction l2;
    OK(fx, opsched_predict_config(q, &held, 0, &l2));
    assert_int_equal(l2.source, OPSCHED_SOURCE_LEARNED);
    assert_true(l2.ms == l.ms);
    assert_true(l2.energy_j == l.energy_j);
    assert_true(l2.error == l.error);
    opsched_predictor_free(q);

    /* New data: the fingerprint changes and the models are retrained. */
    conv_rec(fx, 16, 16, 16, 7, 1, 1, &measured);
    synth_add(fx, &y, &measured, 0, 0.004, 0, NULL);
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &q));
    OK(fx, opsched_predictor_info_get(q, &qi));
    assert_int_equal(qi.trained, 1);
    assert_non_null(strstr(qi.train_reason, "measurements changed"));
    opsched_predictor_free(q);

    /* train = 0 with nothing current: learned predictions are off. */
    synth_add(fx, &y, &measured, 0, 0.005, 0, NULL);
    o.train = 0;
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &q));
    OK(fx, opsched_predict_config(q, &held, 0, &l2));
    assert_int_equal(l2.source, OPSCHED_SOURCE_NONE);
    assert_true(isnan(l2.ms));
    opsched_predictor_free(q);
    opsched_predictor_free(p);
    opsched_store_close(y.s);
}

static void test_roofline_and_none(void **state)
{
    fixture *fx = *state;
    synth y;
    synth_open(fx, &y);
    synth_fill(fx, &y, 0);
    opsched_config_record soft;
    opsched_param sp[] = {{"batch", 8}, {"features", 1000}};
    record_of(fx, "softmax", sp, 2, &soft); /* no softmax was measured */

    opsched_predictor_options o;
    quiet_options(&o);
    opsched_predictor *p = NULL;
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &p));
    opsched_op_prediction r;
    OK(fx, opsched_predict_config(p, &soft, 0, &r));
    assert_int_equal(r.source, OPSCHED_SOURCE_NONE); /* no calibration: never invented */
    assert_true(isnan(r.ms) && isnan(r.energy_j));
    opsched_predictor_free(p);

    opsched_calibration c = {.peak_flops = 1e14, .bandwidth = 1e12, .launch_us = 5,
                             .graph_node_us = 1.5, .idle_power_w = 70};
    snprintf(c.math, sizeof(c.math), "tf32");
    OK(fx, opsched_store_calibration_put(y.s, y.dev, &c));
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &p));
    opsched_predictor_info in;
    OK(fx, opsched_predictor_info_get(p, &in));
    assert_int_equal(in.has_calibration, 1);
    assert_int_equal(in.trained, 1); /* the calibration feeds the features */
    assert_non_null(strstr(in.train_reason, "calibration"));
    /* The roofline is calibrated on the family's rows: the median of
     * measured over roofline time of the relu, maxpool and add rows
     * (synth_fill), computed here from their records. */
    static const char *const ew[] = {"relu", "maxpool", "add"};
    static const int64_t eb[] = {1, 2, 8}, ec[] = {16, 64, 256}, ehw[] = {7, 14, 28, 56};
    double ratio[36];
    int nr = 0;
    for (int o2 = 0; o2 < 3; o2++)
        for (int a = 0; a < 3; a++)
            for (int d = 0; d < 4; d++) {
                opsched_config_record er;
                opsched_param ep[] = {{"batch", eb[a]}, {"channels", ec[a]}, {"height", ehw[d]}};
                record_of(fx, ew[o2], ep, 3, &er);
                double roof = fmax((double)er.flops / 1e14, (double)er.bytes / 1e12) * 1e3 + 1.5e-3;
                ratio[nr++] = synth_ms(fx, &y, &er, 0) / roof;
            }
    for (int i = 1; i < nr; i++) /* insertion sort */
        for (int j = i; j > 0 && ratio[j - 1] > ratio[j]; j--) {
            double t = ratio[j];
            ratio[j] = ratio[j - 1];
            ratio[j - 1] = t;
        }
    double median = 0.5 * (ratio[nr / 2 - 1] + ratio[nr / 2]);
    double scale = in.roofline_scale[OPSCHED_FAMILY_OTHER];
    print_message("roofline scale of the other family: %.6g (rows' median %.6g), error %.3g; "
                  "all rows %.6g, unseen family %.3g\n",
                  scale, median, in.roofline_error[OPSCHED_FAMILY_OTHER], in.roofline_scale_all,
                  in.roofline_error_unseen);
    assert_true(fabs(scale / median - 1) < 1e-4);
    assert_true(in.roofline_error[OPSCHED_FAMILY_OTHER] > 0 &&
                in.roofline_error[OPSCHED_FAMILY_OTHER] < OPSCHED_ROOFLINE_ERROR);
    assert_true(isfinite(in.roofline_error_unseen) && in.roofline_error_unseen > 0);
    OK(fx, opsched_predict_config(p, &soft, 0, &r));
    assert_int_equal(r.source, OPSCHED_SOURCE_ROOFLINE);
    double want = fmax((double)soft.flops / 1e14, (double)soft.bytes / 1e12) * 1e3 + 1.5e-3;
    assert_true(fabs(r.ms / (want * median) - 1) < 1e-4);
    assert_double_equal(r.error, in.roofline_error[OPSCHED_FAMILY_OTHER], 0);
    opsched_predictor_free(p);
    opsched_store_close(y.s);
}

/* A small network: conv-relu, pool, conv-relu (read twice: not fused),
 * add, flatten, linear. */
static opsched_graph *tiny_net(fixture *fx, int64_t batch, int64_t size)
{
    opsched_graph *g = NULL;
    OK(fx, opsched_graph_create(fx->ctx, "tiny", &g));
    opsched_shape s = {.ndim = 4, .d = {batch, 16, size, size}};
    int x, t, u, v, w;
    OK(fx, opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s, &x));
    opsched_conv_desc cd = {.out_channels = 48, .kernel_h = 3, .kernel_w = 3, .stride_h = 1,
                            .stride_w = 1, .pad_h = 1, .pad_w = 1, .bias = 1};
    OK(fx, opsched_build_conv(g, "c1", x, &cd, &t));
    OK(fx, opsched_build_unary(g, "r1", OPSCHED_OP_RELU, NULL, t, &t));
    OK(fx, opsched_build_pool(g, "p1", OPSCHED_OP_MAXPOOL, t, 2, 2, 0, 0, 0, &t));
    cd.out_channels = 64;
    OK(fx, opsched_build_conv(g, "c2", t, &cd, &u));
    OK(fx, opsched_build_unary(g, "r2", OPSCHED_OP_RELU, NULL, u, &v));
    OK(fx, opsched_build_binary(g, "add", OPSCHED_OP_ADD, u, v, &w));
    OK(fx, opsched_build_flatten(g, "flat", w, 1, &w));
    OK(fx, opsched_build_linear(g, "fc", w, 10, 1, &w));
    OK(fx, opsched_graph_mark_output(g, w));
    return g;
}

static opsched_status tiny_loader(opsched_ctx *ctx, const opsched_network_run_row *run,
                                  void *user, opsched_graph **out)
{
    fixture *fx = user;
    (void)ctx;
    *out = tiny_net(fx, run->batch, run->height);
    return OPSCHED_OK;
}

/* Stores every launched layer of the tiny net at batch b with ms from the
 * law; returns the layer sum and the number of launches. */
static double store_tiny_layers(fixture *fx, synth *y, int64_t b, int64_t size, int *launches)
{
    opsched_graph *g = tiny_net(fx, b, size);
    double sum = 0;
    *launches = 0;
    int fused_next[16] = {0};
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        if (opsched_op_is_view(n->op)) continue;
        if (i > 0 && fused_next[i]) continue;
        int fused = 0;
        if (n->op == OPSCHED_OP_CONV && opsched_graph_num_consumers(g, n->outputs[0]) == 1 &&
            opsched_graph_node(g, i + 1)->op == OPSCHED_OP_RELU) {
            fused = 1;
            fused_next[i + 1] = 1;
        }
        opsched_config_record r;
        OK(fx, opsched_config_record_from_node(g, i, &r));
        double ms = synth_ms(fx, y, &r, fused);
        synth_add(fx, y, &r, fused, ms, ms * 1e-3 * 200, NULL);
        sum += ms;
        (*launches)++;
    }
    opsched_graph_free(g);
    return sum;
}

static void add_run(fixture *fx, synth *y, const char *model, int64_t batch, int64_t size,
                    const char *mode, double ms, double energy_j, double enqueue_ms)
{
    opsched_network_record n;
    memset(&n, 0, sizeof(n));
    n.model = model;
    n.batch = batch;
    n.height = n.width = size;
    n.math = OPSCHED_MATH_TF32;
    n.mode = mode;
    n.stats.n = 10;
    n.stats.median = n.stats.mean = n.stats.min = n.stats.max = ms;
    n.enqueue_ms = enqueue_ms;
    n.peak_memory_bytes = -1;
    n.layer_sum_ms = n.attribution_latency = n.layer_energy_j = n.attribution_energy = NAN;
    n.check_rel_l2 = NAN;
    n.check_passed = -1;
    if (energy_j > 0) {
        n.energy.valid = 1;
        snprintf(n.energy.method, sizeof(n.energy.method), "counter");
        n.energy.energy_j = energy_j;
    }
    OK(fx, opsched_store_add_network(y->s, y->run, y->dev, &n, NULL));
}

static void test_network_composition(void **state)
{
    fixture *fx = *state;
    synth y;
    synth_open(fx, &y);
    synth_fill(fx, &y, 0);
    /* Runs of model "a" and "b" at batch and input sizes that move some
     * layers across the eager host floor and others not. */
    const int64_t batches[] = {1, 8, 32, 64}, sizes[] = {28, 56, 28, 56};
    double sums[4];
    int launches[4];
    for (int i = 0; i < 4; i++)
        sums[i] = store_tiny_layers(fx, &y, batches[i], sizes[i], &launches[i]);
    assert_int_equal(launches[0], 6); /* c1+r1, p1, c2, r2, add, fc; flatten is a view */
    /* Graph runs: T = 1.1 S + 2 us per launch; energy 200 W in layers,
     * 80 W in the gaps. */
    for (int i = 0; i < 4; i++) {
        double t = 1.1 * sums[i] + 2e-3 * launches[i];
        double e = 1.0 * sums[i] * 1e-3 * 200 + 80 * (t - sums[i]) * 1e-3;
        add_run(fx, &y, i < 2 ? "a" : "b", batches[i], sizes[i], "graph", t, e, NAN);
    }
    /* Eager runs: the host enqueues a conv in 600 us, a Gemm in 400, the
     * rest in 300 (2.5 ms an inference); the device takes 1.1 S + 3 us per
     * launch; an inference takes the longer of the two. */
    double eager[4];
    for (int i = 0; i < 4; i++) {
        double host = 2 * 0.6 + 0.4 + 3 * 0.3;
        eager[i] = fmax(host, 1.1 * sums[i] + 3e-3 * launches[i]);
        add_run(fx, &y, i < 2 ? "a" : "b", batches[i], sizes[i], "free", eager[i], 0, host);
    }
    assert_true(eager[0] == 2.5 && eager[1] > 2.5); /* one host-bound, one not */

    opsched_predictor_options o;
    quiet_options(&o);
    o.loader = tiny_loader;
    o.loader_user = fx;
    opsched_predictor *p = NULL;
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &p));
    opsched_composition c;
    OK(fx, opsched_predictor_composition(p, OPSCHED_PREDICT_GRAPH, &c));
    assert_string_equal(c.source, "fit");
    assert_int_equal(c.runs, 4);
    assert_int_equal(c.runs_exact, 4);
    assert_double_equal(c.scale, 1.1, 1e-6);
    assert_double_equal(c.launch_us, 2.0, 1e-4);
    assert_true(c.rms_rel < 1e-6 && c.weight_ms_per_gb < 1e-6);
    assert_string_equal(c.energy_source, "fit");
    assert_double_equal(c.energy_scale, 1.0, 1e-6);
    assert_double_equal(c.gap_power_w, 80, 1e-3);
    OK(fx, opsched_predictor_composition(p, OPSCHED_PREDICT_EAGER, &c));
    assert_string_equal(c.source, "fit");
    assert_int_equal(c.host_runs, 4);
    assert_true(c.host_rms_rel < 1e-9);
    assert_int_equal(c.runs, 2); /* the device-bound runs */
    print_message("eager: scale %g launch %g us weights %g ms/GB, rms %g; host %g %g %g %g us\n",
                  c.scale, c.launch_us, c.weight_ms_per_gb, c.rms_rel, c.host_us[0], c.host_us[1],
                  c.host_us[2], c.host_us[3]);
    assert_true(c.rms_rel < 1e-6);
    opsched_predict_options eo;
    opsched_predict_options_default(&eo);
    eo.mode = OPSCHED_PREDICT_EAGER;
    for (int i = 0; i < 4; i++) {
        opsched_graph *ge = tiny_net(fx, batches[i], sizes[i]);
        opsched_network_prediction *re = NULL;
        OK(fx, opsched_predict_network(p, ge, &eo, &re));
        assert_double_equal(re->total_ms, eager[i], 1e-6 * eager[i]);
        opsched_network_prediction_free(re);
        opsched_graph_free(ge);
    }

    /* The network itself: every layer exact, composed as fitted. */
    opsched_graph *g = tiny_net(fx, 8, 56);
    opsched_predict_options po;
    opsched_predict_options_default(&po);
    opsched_network_prediction *r = NULL;
    OK(fx, opsched_predict_network(p, g, &po, &r));
    assert_int_equal(r->n_layers, opsched_graph_num_nodes(g));
    assert_int_equal(r->launches, 6);
    assert_int_equal(r->n_by_source[OPSCHED_SOURCE_EXACT], 6);
    assert_int_equal(r->n_by_source[OPSCHED_SOURCE_VIEW], 2); /* the fused r1, flatten */
    assert_double_equal(r->layer_sum_ms, sums[1], 1e-12);
    assert_double_equal(r->total_ms, 1.1 * sums[1] + 2e-3 * 6, 1e-9);
    assert_double_equal(r->coverage_time, 1.0, 1e-12);
    assert_double_equal(r->coverage_flops, 1.0, 1e-12);
    assert_true(r->layers[0].fused_relu && r->layers[1].fused_into == 0);
    assert_false(r->layers[3].fused_relu); /* c2's output is read twice */
    opsched_graph_totals t;
    OK(fx, opsched_graph_totals_compute(g, &t));
    assert_int_equal(r->peak_memory_bytes, t.peak_activation_bytes + t.weight_bytes);
    assert_true(isfinite(r->total_energy_j) && r->total_energy_j > 0);
    /* The total is the layers' composed shares; a sequential schedule
     * costed with them predicts the same. */
    assert_int_equal(r->launches_unpredicted, 0);
    assert_double_equal(r->partial_ms, r->total_ms, 0.0);
    double shares = 0;
    for (int i = 0; i < r->n_layers; i++) shares += r->layers[i].composed_ms;
    assert_double_equal(shares, r->total_ms, 1e-12);
    int nn = opsched_graph_num_nodes(g);
    double *node_ms = calloc((size_t)nn, sizeof(double));
    assert_non_null(node_ms);
    OK(fx, opsched_predicted_node_costs(g, r, node_ms, nn));
    opsched_predicted_cost pc = {.node_ms = node_ms, .n_nodes = nn};
    opsched_contention_defaults(&pc.model);
    opsched_search_options so = {.searcher = OPSCHED_SEARCH_SEQUENTIAL,
                                 .cost = opsched_stage_cost_predicted, .user = &pc};
    opsched_schedule *seq = NULL;
    OK(fx, opsched_schedule_search(g, &so, &seq, NULL));
    assert_double_equal(seq->predicted_ms, r->total_ms, 1e-12);
    opsched_schedule_free(seq);
    free(node_ms);
    opsched_network_prediction_free(r);

    /* Fusing off: the Relu is a layer of its own, the conv not fused (no
     * fused measurement of it -> learned). */
    po.fuse = 0;
    OK(fx, opsched_predict_network(p, g, &po, &r));
    assert_int_equal(r->launches, 7);
    assert_true(r->coverage_time < 1.0);
    opsched_network_prediction_free(r);
    opsched_predictor_free(p);

    /* Leave model "b" out: its configurations and its runs. */
    opsched_exclusion *x = NULL;
    OK(fx, opsched_exclusion_create(fx->ctx, "b", &x));
    opsched_graph *gb = tiny_net(fx, 32, 28);
    OK(fx, opsched_exclusion_add_graph(x, gb));
    opsched_graph_free(gb);
    gb = tiny_net(fx, 64, 56);
    OK(fx, opsched_exclusion_add_graph(x, gb));
    opsched_graph_free(gb);
    assert_true(opsched_exclusion_count(x) >= 14);
    o.exclude = x;
    o.exclude_model_runs = "b";
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &p));
    opsched_predictor_info in;
    OK(fx, opsched_predictor_info_get(p, &in));
    assert_int_equal(in.trained, 1); /* its own models, cached apart */
    assert_non_null(strstr(in.metadata_file, "-x-b-"));
    assert_true(in.excluded_rows > 0);
    OK(fx, opsched_predictor_composition(p, OPSCHED_PREDICT_GRAPH, &c));
    assert_int_equal(c.runs, 2);
    gb = tiny_net(fx, 32, 28);
    po.fuse = 1;
    OK(fx, opsched_predict_network(p, gb, &po, &r));
    assert_true(r->coverage_time < 1.0);
    assert_int_equal(r->n_by_source[OPSCHED_SOURCE_EXACT], 0);
    assert_true(isfinite(r->total_ms));
    opsched_network_prediction_free(r);
    opsched_graph_free(gb);
    opsched_predictor_free(p);
    opsched_exclusion_free(x);
    opsched_graph_free(g);

    /* The network-run API predicts what was measured. */
    o.exclude = NULL;
    o.exclude_model_runs = NULL;
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &p));
    opsched_network_run_row run;
    memset(&run, 0, sizeof(run));
    snprintf(run.model, sizeof(run.model), "a");
    snprintf(run.mode, sizeof(run.mode), "graph");
    run.batch = 1;
    run.height = run.width = 28;
    OK(fx, opsched_predict_network_run(p, &run, &r));
    assert_double_equal(r->total_ms, 1.1 * sums[0] + 2e-3 * 6, 1e-9);
    opsched_network_prediction_free(r);
    snprintf(run.mode, sizeof(run.mode), "layered");
    assert_int_equal(opsched_predict_network_run(p, &run, &r), OPSCHED_ERR_INVALID_ARG);
    opsched_predictor_free(p);
    opsched_store_close(y.s);
}

/* squeezenet1_1 measured layer by layer on the CPU backend (what
 * `profile --isolated` stores), then predicted: every layer exact. */
static void test_cpu_network_exact(void **state)
{
    fixture *fx = *state;
    opsched_device *dev = NULL;
    if (opsched_device_open(fx->ctx, "cpu", 0, &dev) != OPSCHED_OK) {
        print_message("skipped: no CPU backend in this build\n");
        skip();
    }
    opsched_zoo_options zo = {.batch = 1, .height = 32};
    opsched_graph *g = NULL;
    OK(fx, opsched_zoo_build(fx->ctx, "squeezenet1_1", &zo, &g));
    opsched_store *s = NULL;
    OK(fx, opsched_store_open(fx->ctx, fx->db, OPSCHED_STORE_READ_WRITE, &s));
    opsched_device_info di;
    OK(fx, opsched_device_info_get(dev, &di));
    int64_t dev_id = 0, run = 0;
    OK(fx, opsched_store_device(s, &di, &dev_id));
    opsched_run_info ri = {.command = "test", .shard_count = 1};
    OK(fx, opsched_store_begin_run(s, &ri, &run));
    opsched_measure_options mo;
    opsched_measure_options_default(&mo);
    mo.warmup_ms = 1;
    mo.warmup_iters = 1;
    mo.iters = 3;
    mo.min_ms = 0;
    mo.sample_min_us = 50;
    mo.plan.math = OPSCHED_MATH_FP32;
    mo.plan.fuse_activation = 1;
    int n = opsched_graph_num_nodes(g);
    unsigned char *fused_away = calloc((size_t)n, 1);
    assert_non_null(fused_away);
    int launched = 0;
    char key[256];
    char (*sigs)[600] = calloc((size_t)n, sizeof(*sigs));
    double *ms = calloc((size_t)n, sizeof(double));
    assert_true(sigs && ms);
    for (int i = 0; i < n; i++) {
        const opsched_node *node = opsched_graph_node(g, i);
        if (opsched_op_is_view(node->op) || fused_away[i]) continue;
        int fused = 0;
        if (node->op == OPSCHED_OP_CONV && opsched_graph_num_consumers(g, node->outputs[0]) == 1)
            for (int j = i + 1; j < n && !fused; j++) {
                const opsched_node *c = opsched_graph_node(g, j);
                if (c->n_inputs >= 1 && c->inputs[0] == node->outputs[0]) {
                    fused = c->op == OPSCHED_OP_RELU;
                    if (fused) fused_away[j] = 1;
                    break;
                }
            }
        opsched_measurement m;
        OK(fx, opsched_measure_node(dev, g, i, &mo, &m));
        assert_int_equal(m.status, OPSCHED_OK);
        opsched_config_record rec;
        int64_t cid = 0;
        OK(fx, opsched_config_record_from_node(g, i, &rec));
        OK(fx, opsched_store_config(s, &rec, &cid));
        opsched_settings_key(&mo, key, sizeof(key));
        if (fused) strncat(key, ";fused=relu", sizeof(key) - strlen(key) - 1);
        OK(fx, opsched_store_add(s, run, dev_id, cid, key, "heuristic", &m, NULL));
        snprintf(sigs[launched], sizeof(sigs[launched]), "%s#%d", rec.signature, fused);
        ms[launched++] = m.stats.median;
    }
    /* Layers of one configuration share its latest measurement. */
    double sum = 0;
    for (int i = 0; i < launched; i++) {
        double latest = ms[i];
        for (int j = i + 1; j < launched; j++)
            if (strcmp(sigs[i], sigs[j]) == 0) latest = ms[j];
        sum += latest;
    }
    free(sigs);
    free(ms);
    free(fused_away);
    opsched_store_close(s);
    opsched_device_close(dev);

    opsched_predictor_options o;
    quiet_options(&o);
    o.math = OPSCHED_MATH_FP32;
    opsched_predictor *p = NULL;
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &p));
    opsched_predict_options po;
    opsched_predict_options_default(&po);
    opsched_network_prediction *r = NULL;
    OK(fx, opsched_predict_network(p, g, &po, &r));
    print_message("squeezenet1_1 b1 32 on cpu: %d launches, layer sum %.3f ms, coverage %.0f%%\n",
                  r->launches, r->layer_sum_ms, 100 * r->coverage_time);
    assert_int_equal(r->launches, launched);
    assert_int_equal(r->n_by_source[OPSCHED_SOURCE_EXACT], launched);
    assert_double_equal(r->coverage_time, 1.0, 1e-12);
    assert_double_equal(r->coverage_flops, 1.0, 1e-12);
    assert_double_equal(r->layer_sum_ms, sum, 1e-9 * sum);
    /* No network runs and no calibration: the plain sum. */
    assert_string_equal(r->composition.source, "none");
    assert_double_equal(r->total_ms, sum, 1e-9 * sum);
    opsched_network_prediction_free(r);
    opsched_predictor_free(p);

    /* Excluding the model's own configurations: nothing exact is left. */
    opsched_exclusion *x = NULL;
    OK(fx, opsched_exclusion_create(fx->ctx, "squeezenet1_1", &x));
    int64_t b1 = 1, s32 = 32;
    OK(fx, opsched_exclusion_add_zoo(x, "squeezenet1_1", &b1, 1, &s32, 1));
    o.exclude = x;
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &p));
    OK(fx, opsched_predict_network(p, g, &po, &r));
    assert_true(r->coverage_flops < 1.0);
    assert_int_equal(r->n_by_source[OPSCHED_SOURCE_EXACT], 0);
    opsched_network_prediction_free(r);
    opsched_predictor_free(p);
    opsched_exclusion_free(x);
    opsched_graph_free(g);
}

/* A layer whose configuration cannot be described (a Concat of so many
 * inputs that its signature overflows) is "none", not a failure. */
static void test_undescribable_layer(void **state)
{
    fixture *fx = *state;
    synth y;
    synth_open(fx, &y);
    opsched_config_record r;
    conv_rec(fx, 1, 8, 8, 7, 3, 1, &r);
    synth_add(fx, &y, &r, 0, 0.01, 0, NULL);
    opsched_store_close(y.s);
    opsched_graph *g = NULL;
    OK(fx, opsched_graph_create(fx->ctx, "wide", &g));
    int xs[64], out;
    for (int i = 0; i < 64; i++) {
        char name[16];
        snprintf(name, sizeof(name), "in%d", i);
        opsched_shape sh = {.ndim = 4, .d = {1, 8, 7, 7}};
        OK(fx, opsched_graph_add_tensor(g, name, OPSCHED_TENSOR_INPUT, OPSCHED_F32, &sh, &xs[i]));
    }
    OK(fx, opsched_build_concat(g, "cat", xs, 64, 1, &out));
    OK(fx, opsched_graph_mark_output(g, out));
    opsched_predictor_options o;
    quiet_options(&o);
    opsched_predictor *p = NULL;
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &p));
    opsched_network_prediction *np = NULL;
    OK(fx, opsched_predict_network(p, g, NULL, &np));
    assert_int_equal(np->n_by_source[OPSCHED_SOURCE_NONE], 1);
    assert_true(isnan(np->total_ms) && isnan(np->layers[0].p.ms));
    /* no basis: counted, the partial answer composes the others (none) */
    assert_int_equal(np->launches_unpredicted, 1);
    assert_true(isnan(np->layers[0].composed_ms));
    assert_double_equal(np->partial_ms, 0.0, 0.0);
    int n = opsched_graph_num_nodes(g);
    double *ms = calloc((size_t)n, sizeof(double));
    assert_non_null(ms);
    assert_int_equal(opsched_predicted_node_costs(g, np, ms, n), OPSCHED_ERR_NOT_FOUND);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "'cat'"));
    free(ms);
    opsched_network_prediction_free(np);
    opsched_predictor_free(p);
    opsched_graph_free(g);
}

static void test_bad_arguments(void **state)
{
    fixture *fx = *state;
    opsched_predictor *p = NULL;
    char missing[160];
    snprintf(missing, sizeof(missing), "%s/none.db", fx->dir);
    assert_int_equal(opsched_predictor_open(fx->ctx, missing, NULL, &p), OPSCHED_ERR_NOT_FOUND);
    assert_null(p);
    opsched_predictor_options o;
    opsched_predictor_options_default(&o);
    o.folds = 1;
    synth y;
    synth_open(fx, &y);
    opsched_store_close(y.s);
    assert_int_equal(opsched_predictor_open(fx->ctx, fx->db, &o, &p), OPSCHED_ERR_INVALID_ARG);
    opsched_predictor_options_default(&o);
    o.device = "nothing-like-this";
    assert_int_equal(opsched_predictor_open(fx->ctx, fx->db, &o, &p), OPSCHED_ERR_NOT_FOUND);
    assert_string_equal(opsched_pred_source_name(OPSCHED_SOURCE_LEARNED), "learned");
    assert_string_equal(opsched_op_family_name(opsched_op_family_of("conv2d", 1)), "conv+relu");
    assert_string_equal(opsched_op_family_name(opsched_op_family_of("matmul", 0)), "gemm");
    opsched_predictor_free(NULL);
    opsched_network_prediction_free(NULL);
    opsched_exclusion_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dataset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_features, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact_learned_saved, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roofline_and_none, setup, teardown),
        cmocka_unit_test_setup_teardown(test_network_composition, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cpu_network_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_undescribable_layer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
