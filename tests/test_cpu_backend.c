/*
 * test_cpu_backend.c - the CPU backend beyond operator results (those are
 * test_conformance.c's): device information, streams, timers, the energy
 * counter, and the answers it gives to plans it cannot make or launches it
 * cannot run.  Skips visibly when the build has no CPU backend.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "opsched/backend.h"

typedef struct fixture {
    opsched_ctx *ctx;
    opsched_device *dev;
} fixture;

static int have_cpu(void)
{
    for (int i = 0; i < opsched_backend_count(); i++)
        if (strcmp(opsched_backend_name(i), "cpu") == 0) return 1;
    return 0;
}

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof(f));
    if (opsched_ctx_create(&f.ctx) != OPSCHED_OK) return -1;
    if (have_cpu() && opsched_device_open(f.ctx, "cpu", 0, &f.dev) != OPSCHED_OK) return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    opsched_device_close(f->dev);
    opsched_ctx_free(f->ctx);
    return 0;
}

#define NEED_CPU(f)                                                                                \
    do {                                                                                           \
        if (!(f)->dev) {                                                                           \
            print_message("SKIP: no cpu backend in this build\n");                                 \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* A graph of one Relu over [n]. */
static opsched_graph *relu_graph(opsched_ctx *ctx, int64_t n)
{
    opsched_graph *g = NULL;
    opsched_shape s = {.ndim = 1, .d = {n}};
    int x, y;
    assert_int_equal(opsched_graph_create(ctx, "relu", &g), OPSCHED_OK);
    assert_int_equal(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s, &x),
                     OPSCHED_OK);
    assert_int_equal(opsched_build_unary(g, "relu", OPSCHED_OP_RELU, NULL, x, &y), OPSCHED_OK);
    return g;
}

static opsched_graph *conv_graph(opsched_ctx *ctx)
{
    opsched_graph *g = NULL;
    opsched_shape s = {.ndim = 4, .d = {1, 16, 12, 12}};
    opsched_conv_desc d = {
        .out_channels = 16, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1, .bias = 1};
    int x, y;
    assert_int_equal(opsched_graph_create(ctx, "conv", &g), OPSCHED_OK);
    assert_int_equal(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s, &x),
                     OPSCHED_OK);
    assert_int_equal(opsched_build_conv(g, "conv", x, &d, &y), OPSCHED_OK);
    return g;
}

static void test_device_info(void **state)
{
    fixture *f = *state;
    NEED_CPU(f);
    opsched_device_info info;
    int n = 0;
    assert_int_equal(opsched_device_count(f->ctx, "cpu", &n), OPSCHED_OK);
    assert_int_equal(n, 1);
    assert_int_equal(opsched_device_info_get(f->dev, &info), OPSCHED_OK);
    assert_string_equal(info.backend, "cpu");
    assert_true(info.name[0] != '\0');
    assert_true(strncmp(info.uuid, "CPU-", 4) == 0);
    assert_true(strncmp(info.library_versions, "onednn ", 7) == 0);
    assert_true(info.sm_count >= 1);
    assert_true(info.memory_bytes > 0);
    assert_int_equal(info.has_power, 0);
    print_message("  %s, %d cores, LLC %lld bytes, %s, uuid %s, energy counter %s\n", info.name,
                  info.sm_count, (long long)info.l2_bytes, info.library_versions, info.uuid,
                  info.has_energy ? "yes" : "no");

    /* The uuid is stable: a second device reports the same. */
    opsched_device *again = NULL;
    opsched_device_info info2;
    assert_int_equal(opsched_device_open(f->ctx, "cpu", 0, &again), OPSCHED_OK);
    assert_int_equal(opsched_device_info_get(again, &info2), OPSCHED_OK);
    assert_string_equal(info.uuid, info2.uuid);
    opsched_device_close(again);
    assert_int_equal(opsched_device_open(f->ctx, "cpu", 1, &again), OPSCHED_ERR_NOT_FOUND);
}

static void test_power(void **state)
{
    fixture *f = *state;
    NEED_CPU(f);
    opsched_device_info info;
    opsched_power_sample p;
    assert_int_equal(opsched_device_info_get(f->dev, &info), OPSCHED_OK);
    opsched_status st = opsched_device_power(f->dev, &p);
    assert_true(isnan(p.power_w));
    if (info.has_energy) {
        assert_int_equal(st, OPSCHED_OK);
        assert_true(isfinite(p.energy_mj) && p.energy_mj >= 0);
    } else {
        assert_int_equal(st, OPSCHED_ERR_UNSUPPORTED);
        assert_true(isnan(p.energy_mj) && isnan(p.temperature_c) && isnan(p.sm_clock_mhz));
    }
}

static void test_stream_timer_and_buffers(void **state)
{
    fixture *f = *state;
    NEED_CPU(f);
    enum { N = 1 << 16 };
    static float host[N], back[N];
    opsched_graph *g = relu_graph(f->ctx, N);
    opsched_stream *s = NULL;
    opsched_timer *t = NULL;
    opsched_plan *plan = NULL;
    opsched_buffer *in = NULL, *out = NULL;
    double ms = -1;
    for (int i = 0; i < N; i++)
        host[i] = (float)(i % 7) - 3.0f;
    assert_int_equal(opsched_stream_create(f->dev, &s), OPSCHED_OK);
    assert_int_equal(opsched_timer_create(f->dev, &t), OPSCHED_OK);
    assert_int_equal(opsched_plan_create(f->dev, g, 0, NULL, &plan), OPSCHED_OK);
    assert_int_equal(opsched_buffer_alloc(f->dev, sizeof(host), &in), OPSCHED_OK);
    assert_int_equal(opsched_buffer_alloc(f->dev, sizeof(host), &out), OPSCHED_OK);
    assert_int_equal(opsched_buffer_upload(in, 0, host, sizeof(host)), OPSCHED_OK);

    assert_int_equal(opsched_timer_start(t, s), OPSCHED_OK);
    assert_int_equal(opsched_timer_elapsed_ms(t, &ms), OPSCHED_ERR_INVALID_ARG); /* no stop yet */
    for (int r = 0; r < 10; r++)
        assert_int_equal(opsched_plan_launch(plan, s, &in, &out), OPSCHED_OK);
    assert_int_equal(opsched_timer_stop(t, s), OPSCHED_OK);
    assert_int_equal(opsched_timer_elapsed_ms(t, &ms), OPSCHED_OK);
    assert_true(ms > 0 && ms < 60000);
    assert_int_equal(opsched_stream_sync(s), OPSCHED_OK);
    assert_int_equal(opsched_buffer_download(out, 0, back, sizeof(back)), OPSCHED_OK);
    for (int i = 0; i < N; i++)
        assert_true(back[i] == (host[i] > 0 ? host[i] : 0.0f));

    /* A missing buffer is the caller's mistake, not a crash. */
    opsched_buffer *none[1] = {NULL};
    assert_int_equal(opsched_plan_launch(plan, NULL, none, &out), OPSCHED_ERR_INVALID_ARG);

    opsched_buffer_free(in);
    opsched_buffer_free(out);
    opsched_plan_free(plan);
    opsched_timer_free(t);
    opsched_stream_free(s);
    opsched_graph_free(g);
}

static void test_plan_answers(void **state)
{
    fixture *f = *state;
    NEED_CPU(f);
    opsched_graph *g = conv_graph(f->ctx);
    opsched_plan *p = NULL;
    opsched_plan_info info;
    opsched_plan_options o;
    memset(&o, 0, sizeof(o));

    o.algo = "no_such_algorithm";
    assert_int_equal(opsched_plan_create(f->dev, g, 0, &o, &p), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(f->ctx), "direct, winograd"));

    o.algo = "find";
    assert_int_equal(opsched_plan_create(f->dev, g, 0, &o, &p), OPSCHED_OK);
    assert_int_equal(opsched_plan_info_get(p, &info), OPSCHED_OK);
    assert_true(strcmp(info.algo, "direct") == 0 || strcmp(info.algo, "winograd") == 0);
    opsched_plan_free(p);
    p = NULL;

    o.algo = "winograd"; /* either it runs or it says why not */
    opsched_status st = opsched_plan_create(f->dev, g, 0, &o, &p);
    if (st == OPSCHED_ERR_UNSUPPORTED)
        assert_non_null(strstr(opsched_ctx_last_error(f->ctx), "winograd"));
    else
        assert_int_equal(st, OPSCHED_OK);
    opsched_plan_free(p);
    p = NULL;

    o.algo = NULL;
    o.layout = OPSCHED_LAYOUT_NHWC;
    assert_int_equal(opsched_plan_create(f->dev, g, 0, &o, &p), OPSCHED_ERR_UNSUPPORTED);
    assert_non_null(strstr(opsched_ctx_last_error(f->ctx), "NCHW"));
    o.layout = OPSCHED_LAYOUT_NCHW;
    o.math = OPSCHED_MATH_BF16;
    assert_int_equal(opsched_plan_create(f->dev, g, 0, &o, &p), OPSCHED_ERR_UNSUPPORTED);
    o.math = OPSCHED_MATH_TF32; /* fp32 on a CPU */
    assert_int_equal(opsched_plan_create(f->dev, g, 0, &o, &p), OPSCHED_OK);
    assert_int_equal(opsched_plan_info_get(p, &info), OPSCHED_OK);
    opsched_plan_free(p);
    p = NULL;
    if (info.workspace_bytes > 1) {
        o.workspace_limit = 1;
        assert_int_equal(opsched_plan_create(f->dev, g, 0, &o, &p), OPSCHED_ERR_UNSUPPORTED);
    }
    assert_null(p);
    opsched_graph_free(g);
}

static void test_gather_index_out_of_range(void **state)
{
    fixture *f = *state;
    NEED_CPU(f);
    opsched_graph *g = NULL;
    opsched_shape xs = {.ndim = 2, .d = {4, 3}}, is = {.ndim = 1, .d = {2}};
    int ins[2], y;
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    assert_int_equal(opsched_graph_create(f->ctx, "gather", &g), OPSCHED_OK);
    assert_int_equal(
        opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &ins[0]),
        OPSCHED_OK);
    assert_int_equal(
        opsched_graph_add_tensor(g, "i", OPSCHED_TENSOR_CONSTANT, OPSCHED_INT64, &is, &ins[1]),
        OPSCHED_OK);
    assert_int_equal(
        opsched_graph_add_node(g, "gather", OPSCHED_OP_GATHER, &a, ins, 2, 1, NULL, &y),
        OPSCHED_OK);
    opsched_plan *p = NULL;
    opsched_buffer *bx = NULL, *bi = NULL, *by = NULL;
    const int64_t idx[2] = {1, 4};
    assert_int_equal(opsched_plan_create(f->dev, g, 0, NULL, &p), OPSCHED_OK);
    assert_int_equal(opsched_buffer_alloc(f->dev, 12 * sizeof(float), &bx), OPSCHED_OK);
    assert_int_equal(opsched_buffer_alloc(f->dev, sizeof(idx), &bi), OPSCHED_OK);
    assert_int_equal(opsched_buffer_alloc(f->dev, 6 * sizeof(float), &by), OPSCHED_OK);
    assert_int_equal(opsched_buffer_fill_random(bx, OPSCHED_F32, 1), OPSCHED_OK);
    assert_int_equal(opsched_buffer_upload(bi, 0, idx, sizeof(idx)), OPSCHED_OK);
    opsched_buffer *in[2] = {bx, bi};
    assert_int_equal(opsched_plan_launch(p, NULL, in, &by), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(f->ctx), "index 4"));
    opsched_buffer_free(bx);
    opsched_buffer_free(bi);
    opsched_buffer_free(by);
    opsched_plan_free(p);
    opsched_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_info),
        cmocka_unit_test(test_power),
        cmocka_unit_test(test_stream_timer_and_buffers),
        cmocka_unit_test(test_plan_answers),
        cmocka_unit_test(test_gather_index_out_of_range),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
