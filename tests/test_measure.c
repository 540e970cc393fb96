/*
 * test_measure.c - statistics, operator configurations, signatures, node
 * extraction, and (where a backend has a device) a real measurement.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "opsched/opsched.h"

static void test_stats_known_values(void **state)
{
    (void)state;
    double s[] = {5, 1, 4, 2, 3};
    opsched_stats st;
    assert_int_equal(opsched_stats_compute(s, 5, &st), OPSCHED_OK);
    assert_int_equal(st.n, 5);
    assert_float_equal(st.min, 1, 1e-12);
    assert_float_equal(st.max, 5, 1e-12);
    assert_float_equal(st.mean, 3, 1e-12);
    assert_float_equal(st.median, 3, 1e-12);
    assert_float_equal(st.std, 1.5811388300841898, 1e-12); /* sample std */
    assert_float_equal(st.p90, 4.6, 1e-12);                /* numpy linear interpolation */
    assert_float_equal(st.p99, 4.96, 1e-12);
    assert_float_equal(st.cv, 1.5811388300841898 / 3, 1e-12);
    assert_float_equal(s[0], 5, 0); /* input untouched */
    assert_int_not_equal(opsched_stats_compute(s, 0, &st), OPSCHED_OK);
}

static void test_stats_trimmed_mean_drops_outlier(void **state)
{
    (void)state;
    double s[20];
    for (int i = 0; i < 19; i++) s[i] = 1.0 + 0.001 * i;
    s[19] = 1000.0;
    opsched_stats st;
    assert_int_equal(opsched_stats_compute(s, 20, &st), OPSCHED_OK);
    assert_true(st.mean > 40);
    /* the outlier is more than 3 std away only if std is small relative; check the rule */
    assert_true(st.trimmed_mean <= st.mean);
    double one = 7;
    assert_int_equal(opsched_stats_compute(&one, 1, &st), OPSCHED_OK);
    assert_float_equal(st.std, 0, 0);
    assert_float_equal(st.p99, 7, 0);
}

/* The median's distribution-free interval: ranks n/2 -+ 0.98 sqrt(n). */
static void test_stats_median_interval(void **state)
{
    (void)state;
    double s[101];
    for (int i = 0; i < 101; i++)
        s[100 - i] = i + 1; /* 101 .. 1: the order does not matter */
    opsched_stats st;
    assert_int_equal(opsched_stats_compute(s, 101, &st), OPSCHED_OK);
    /* 50.5 -+ 9.85: the 41st and the 61st smallest */
    assert_true(st.median_lo == 41 && st.median_hi == 61 && st.median == 51);
    assert_true(fabs(opsched_stats_median_ci(&st) - 20.0 / 102.0) < 1e-12);
    /* Five samples: nothing narrower than their range can be claimed. */
    assert_int_equal(opsched_stats_compute(s, 5, &st), OPSCHED_OK);
    assert_true(st.median_lo == st.min && st.median_hi == st.max);
    /* Equal samples: an interval of width 0. */
    double same[30];
    for (int i = 0; i < 30; i++)
        same[i] = 0.25;
    assert_int_equal(opsched_stats_compute(same, 30, &st), OPSCHED_OK);
    assert_true(opsched_stats_median_ci(&st) == 0.0);
}

/* The attention configuration: Q [batch, heads, seq, head], K and V over
 * kv_seq keys, and with causal a [seq, kv_seq] bias whose last query row
 * sees every key. */
static void test_opconfig_attention(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_param p[] = {{"batch", 2}, {"heads", 4}, {"seq", 3}, {"kv_seq", 5}, {"head", 16},
                         {"causal", 1}};
    opsched_graph *g = NULL;
    assert_int_equal(opsched_opconfig_build(ctx, "attention", p, 6, OPSCHED_F32, &g), OPSCHED_OK);
    int node = opsched_graph_num_nodes(g) - 1;
    const opsched_node *n = opsched_graph_node(g, node);
    assert_int_equal(n->op, OPSCHED_OP_ATTENTION);
    assert_int_equal(n->n_inputs, 4);
    assert_true(fabsf(n->attr.attention.scale - 0.25f) < 1e-7f);
    char buf[64];
    assert_string_equal(
        opsched_shape_format(&opsched_graph_tensor(g, n->outputs[0])->shape, buf, sizeof(buf)),
        "2x4x3x16");
    const opsched_tensor *bias = opsched_graph_tensor(g, n->inputs[3]);
    assert_string_equal(opsched_shape_format(&bias->shape, buf, sizeof(buf)), "3x5");
    const float *bv = bias->data;
    assert_true(bv[0 * 5 + 2] == 0.0f && isinf(bv[0 * 5 + 3])); /* row 0 sees keys 0..2 */
    for (int j = 0; j < 5; j++)
        assert_true(bv[2 * 5 + j] == 0.0f); /* the last row sees all */
    opsched_attention_dims ad;
    assert_int_equal(opsched_attention_dims_get(g, n, &ad), 1);
    assert_int_equal(ad.Sk, 5);
    assert_int_equal(n->cost.flops, 2 * 2 * 4 * 3 * 5 * (16 + 16) + 5 * 2 * 4 * 3 * 5);
    opsched_graph_free(g);
    opsched_param bad[] = {{"heads", 0}};
    assert_int_equal(opsched_opconfig_build(ctx, "attention", bad, 1, OPSCHED_F32, &g),
                     OPSCHED_ERR_INVALID_ARG);
    opsched_ctx_free(ctx);
}

static void test_opconfig_conv(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_param p[] = {{"batch", 16}, {"in_channels", 64}, {"out_channels", 128},
                         {"kernel", 3}, {"stride", 2}, {"height", 56}};
    opsched_graph *g = NULL;
    assert_int_equal(opsched_opconfig_build(ctx, "conv2d", p, 6, OPSCHED_F32, &g), OPSCHED_OK);
    const opsched_node *n = opsched_graph_node(g, 0);
    assert_int_equal(n->op, OPSCHED_OP_CONV);
    const opsched_tensor *y = opsched_graph_tensor(g, n->outputs[0]);
    char buf[64];
    assert_string_equal(opsched_shape_format(&y->shape, buf, sizeof(buf)), "16x128x28x28");
    char sig[512];
    assert_int_equal(opsched_node_signature(g, 0, sig, sizeof(sig)), OPSCHED_OK);
    assert_string_equal(sig, "Conv|x:16x64x56x56:f32|w:128x64x3x3:f32|w:128:f32|k=3,3|s=2,2|"
                             "p=1,1,1,1|d=1,1|g=1");
    opsched_config_record rec;
    assert_int_equal(opsched_config_record_from_node(g, 0, &rec), OPSCHED_OK);
    assert_string_equal(rec.op, "conv2d");
    assert_int_equal(rec.batch, 16);
    assert_int_equal(rec.in_channels, 64);
    assert_int_equal(rec.out_channels, 128);
    assert_int_equal(rec.kernel, 3);
    assert_int_equal(rec.stride, 2);
    assert_int_equal(rec.height, 56);
    opsched_graph_free(g);

    /* bad input: unknown op, unknown parameter, out of range, impossible shape */
    assert_int_equal(opsched_opconfig_build(ctx, "conv3d", p, 1, OPSCHED_F32, &g), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "unknown operator 'conv3d'"));
    opsched_param bad[] = {{"chanels", 3}};
    assert_int_equal(opsched_opconfig_build(ctx, "conv2d", bad, 1, OPSCHED_F32, &g), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "no parameter 'chanels'"));
    opsched_param zero[] = {{"batch", 0}};
    assert_int_equal(opsched_opconfig_build(ctx, "conv2d", zero, 1, OPSCHED_F32, &g), OPSCHED_ERR_INVALID_ARG);
    opsched_param grp[] = {{"in_channels", 6}, {"groups", 4}};
    assert_int_equal(opsched_opconfig_build(ctx, "conv2d", grp, 2, OPSCHED_F32, &g), OPSCHED_ERR_SHAPE);
    opsched_param big[] = {{"kernel", 9}, {"height", 4}, {"padding", 0}};
    assert_int_equal(opsched_opconfig_build(ctx, "conv2d", big, 3, OPSCHED_F32, &g), OPSCHED_ERR_SHAPE);
    assert_null(g);
    opsched_ctx_free(ctx);
}

static void test_every_opconfig_builds(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    assert_true(opsched_opconfig_count() >= 15);
    for (int i = 0; i < opsched_opconfig_count(); i++) {
        opsched_graph *g = NULL;
        const char *op = opsched_opconfig_name(i);
        opsched_status st = opsched_opconfig_build(ctx, op, NULL, 0, OPSCHED_F32, &g);
        if (st != OPSCHED_OK) fail_msg("%s: %s", op, opsched_ctx_last_error(ctx));
        assert_int_equal(opsched_graph_num_nodes(g), 1);
        opsched_graph_free(g);
    }
    opsched_ctx_free(ctx);
}

static void test_extract_and_signature_ignore_names(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *a = NULL, *b = NULL, *x = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    assert_int_equal(opsched_graph_create(ctx, "a", &a), OPSCHED_OK);
    assert_int_equal(opsched_graph_create(ctx, "b", &b), OPSCHED_OK);
    opsched_shape s = {.ndim = 4, .d = {1, 8, 16, 16}};
    int xa, xb, ya, yb;
    assert_int_equal(opsched_graph_add_tensor(a, "in", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s, &xa), OPSCHED_OK);
    assert_int_equal(opsched_graph_add_tensor(b, "data", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s, &xb), OPSCHED_OK);
    opsched_conv_desc d = {.out_channels = 8, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1};
    assert_int_equal(opsched_build_conv(a, "c1", xa, &d, &ya), OPSCHED_OK);
    assert_int_equal(opsched_build_unary(a, "r1", OPSCHED_OP_RELU, NULL, ya, NULL), OPSCHED_OK);
    assert_int_equal(opsched_build_conv(b, "other", xb, &d, &yb), OPSCHED_OK);
    char sa[512], sb[512];
    assert_int_equal(opsched_node_signature(a, 0, sa, sizeof(sa)), OPSCHED_OK);
    assert_int_equal(opsched_node_signature(b, 0, sb, sizeof(sb)), OPSCHED_OK);
    assert_string_equal(sa, sb);
    d.stride_h = d.stride_w = 2;
    assert_int_equal(opsched_build_conv(b, "strided", yb, &d, NULL), OPSCHED_OK);
    assert_int_equal(opsched_node_signature(b, 1, sb, sizeof(sb)), OPSCHED_OK);
    assert_string_not_equal(sa, sb);
    /* extracting the relu makes its activation input a graph input */
    assert_int_equal(opsched_graph_extract_node(a, 1, &x), OPSCHED_OK);
    assert_int_equal(opsched_graph_num_nodes(x), 1);
    assert_int_equal(opsched_graph_num_inputs(x), 1);
    assert_int_equal(opsched_graph_tensor(x, opsched_graph_input(x, 0))->kind, OPSCHED_TENSOR_INPUT);
    char sx[512];
    assert_int_equal(opsched_node_signature(x, 0, sx, sizeof(sx)), OPSCHED_OK);
    assert_int_equal(opsched_node_signature(a, 1, sa, sizeof(sa)), OPSCHED_OK);
    assert_string_equal(sa, sx);
    char tiny[8];
    assert_int_not_equal(opsched_node_signature(a, 0, tiny, sizeof(tiny)), OPSCHED_OK);
    opsched_graph_free(x);
    opsched_graph_free(a);
    opsched_graph_free(b);
    opsched_ctx_free(ctx);
}

/* A real measurement on every backend that has a device. */
static void test_measure_on_devices(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_param p[] = {{"in_channels", 16}, {"out_channels", 16}, {"height", 16}};
    opsched_graph *g = NULL;
    assert_int_equal(opsched_opconfig_build(ctx, "conv2d", p, 3, OPSCHED_F32, &g), OPSCHED_OK);
    int measured = 0;
    for (int b = 0; b < opsched_backend_count(); b++) {
        const char *name = opsched_backend_name(b);
        int n = 0;
        if (opsched_device_count(ctx, name, &n) != OPSCHED_OK || n == 0) {
            print_message("SKIP: no %s device\n", name);
            continue;
        }
        opsched_device *dev = NULL;
        assert_int_equal(opsched_device_open(ctx, name, 0, &dev), OPSCHED_OK);
        opsched_measure_options o;
        opsched_measure_options_default(&o);
        o.warmup_ms = 5;
        o.min_ms = 20;
        o.iters = 10;
        o.cache = OPSCHED_CACHE_COLD;
        opsched_measurement m;
        assert_int_equal(opsched_measure_node(dev, g, 0, &o, &m), OPSCHED_OK);
        assert_int_equal(m.status, OPSCHED_OK);
        assert_true(m.stats.n >= 10);
        assert_true(m.stats.min > 0);
        assert_true(m.stats.min <= m.stats.median && m.stats.median <= m.stats.max);
        assert_true(m.stats.median_lo <= m.stats.median && m.stats.median <= m.stats.median_hi);
        assert_true(m.launches_per_sample >= 1);
        /* A fixed budget: exactly that many samples, no verdict. */
        o.ci_target = 0;
        o.min_ms = 0;
        assert_int_equal(opsched_measure_node(dev, g, 0, &o, &m), OPSCHED_OK);
        assert_int_equal(m.stats.n, 10);
        assert_int_equal(m.converged, 0);
        /* A target any device meets (+-50%) stops on a stable estimate ... */
        o.ci_target = 0.5;
        assert_int_equal(opsched_measure_node(dev, g, 0, &o, &m), OPSCHED_OK);
        assert_int_equal(m.converged, 1);
        assert_true(opsched_stats_median_ci(&m.stats) <= 0.5);
            /* ... and one almost none meets stops at max_ms, saying it did not
         * converge; a device whose samples are all equal (a GPU's event
         * timer ticks in 0.5 us) has an interval of 0, which meets it. */
        o.ci_target = 1e-9;
        o.max_ms = 15;
        assert_int_equal(opsched_measure_node(dev, g, 0, &o, &m), OPSCHED_OK);
        if (m.converged)
            assert_true(m.stats.median_lo == m.stats.median_hi);
        assert_true(m.stats.n >= 10);
        opsched_measure_options_default(&o);
        o.warmup_ms = 5;
        o.iters = 10;
        /* a misspelt algorithm is the caller's mistake, named in the message */
        o.plan.algo = "no_such_algorithm";
        assert_int_equal(opsched_measure_node(dev, g, 0, &o, &m), OPSCHED_ERR_INVALID_ARG);
        assert_non_null(strstr(opsched_ctx_last_error(ctx), "no_such_algorithm"));
        opsched_ctx_clear_error(ctx);
        opsched_device_close(dev);
        measured++;
    }
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
    if (!measured) print_message("SKIP: no backend with a device in this build\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_known_values),
        cmocka_unit_test(test_stats_trimmed_mean_drops_outlier),
        cmocka_unit_test(test_stats_median_interval),
        cmocka_unit_test(test_opconfig_conv),
        cmocka_unit_test(test_opconfig_attention),
        cmocka_unit_test(test_every_opconfig_builds),
        cmocka_unit_test(test_extract_and_signature_ignore_names),
        cmocka_unit_test(test_measure_on_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
