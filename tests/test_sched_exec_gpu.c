/*
 * test_sched_exec_gpu.c - the executor running schedules on CUDA device 0: a
 * two-stream schedule of googlenet's first inception block (hand-made:
 * branches on two streams, a merged convolution, concat elision) and the
 * greedy schedule of the whole of googlenet, against the sequential
 * schedule on the same weights and input, free-running and replayed as
 * one CUDA graph (several replays queued back to back, so that a missing
 * dependency between streams would show as a race); the same at batch 4,
 * where merges need a Split and concats copy; a traced run with launches
 * on both streams; the measured stage cost; the whole network timed in
 * each layout (what --layout auto chooses by).
 *
 * Without a CUDA device (CI) every test prints "SKIP: no CUDA device" and
 * passes.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opsched/opsched.h"

static struct {
    opsched_ctx *ctx;
    opsched_device *gpu; /* NULL: no CUDA device, every test skips */
} env;

/* Relative L2 error allowed against the sequential schedule, by math mode
 * (merged convolutions may pick other algorithms than their members). */
static const double tolerance[OPSCHED_MATH_COUNT] = {1e-5, 5e-3, 2e-2, 5e-2};

#define SKIP_WITHOUT_GPU()                                                                         \
    do {                                                                                           \
        if (!env.gpu) {                                                                            \
            print_message("SKIP: no CUDA device\n");                                               \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK(call)                                                                                \
    do {                                                                                           \
        opsched_status st_ = (call);                                                               \
        if (st_ != OPSCHED_OK)                                                                     \
            fail_msg("%s: %s: %s", #call, opsched_status_str(st_),                                 \
                     opsched_ctx_last_error(env.ctx));                                             \
    } while (0)

static opsched_graph *googlenet(int64_t batch)
{
    opsched_graph *g = NULL;
    opsched_zoo_options zo = {.batch = batch, .fold_bn = 1};
    CHECK(opsched_zoo_build(env.ctx, "googlenet", &zo, &g));
    return g;
}

/* The convolutions reading the same tensor as node `conv` (1x1 ones of an
 * inception block), with their fused Relus. */
static int mergeable_with(const opsched_graph *g, int conv, int *convs, int *relus)
{
    int n = 0;
    for (int i = 0; i < opsched_graph_num_nodes(g) && n < 8; i++)
        if (i == conv || opsched_conv_mergeable(g, conv, i)) convs[n++] = i;
    for (int k = 0; k < n; k++) {
        const opsched_node *c = opsched_graph_node(g, convs[k]);
        relus[k] = -1;
        for (int j = convs[k] + 1; j < opsched_graph_num_nodes(g); j++) {
            const opsched_node *r = opsched_graph_node(g, j);
            if (r->op == OPSCHED_OP_RELU && r->inputs[0] == c->outputs[0]) relus[k] = j;
        }
    }
    return n;
}

/* Sequential up to the first inception block; the block's 1x1
 * convolutions that share its input (with their Relus) as one MERGE
 * stage; then stages of the nodes that are ready, two groups at most, so
 * everything after the merge runs on two streams. */
static opsched_schedule *two_stream_schedule(const opsched_graph *g)
{
    opsched_schedule *s = NULL;
    CHECK(opsched_schedule_create(g, &s));
    int n = opsched_graph_num_nodes(g);
    int first = -1;
    for (int i = 0; i < n && first < 0; i++) {
        const opsched_node *nd = opsched_graph_node(g, i);
        if (nd->op == OPSCHED_OP_CONV && strstr(nd->name, "inception3a")) first = i;
    }
    assert_true(first > 0);
    int convs[8], relus[8];
    int m = mergeable_with(g, first, convs, relus);
    assert_true(m >= 2);
    unsigned char *done = calloc((size_t)n, 1);
    assert_non_null(done);
    for (int i = 0; i < first; i++) {
        if (opsched_op_is_view(opsched_graph_node(g, i)->op)) continue;
        int k = -1;
        CHECK(opsched_schedule_add_stage(s, &k));
        CHECK(opsched_schedule_add_group(s, k, &i, 1));
        done[i] = 1;
    }
    CHECK(opsched_schedule_add_merge(s, g, convs, relus, m, NULL));
    for (int k = 0; k < m; k++) {
        done[convs[k]] = 1;
        if (relus[k] >= 0) done[relus[k]] = 1;
    }
    /* the rest: stages of the ready nodes, at most two groups each */
    for (;;) {
        int ready[2], nr = 0, left = 0;
        for (int i = 0; i < n; i++) {
            const opsched_node *nd = opsched_graph_node(g, i);
            if (done[i] || opsched_op_is_view(nd->op)) continue;
            left++;
            int ok = 1;
            for (int k = 0; k < nd->n_inputs && ok; k++) {
                if (nd->inputs[k] < 0) continue;
                int p = opsched_tensor_scheduled_producer(g, nd->inputs[k]);
                ok = p < 0 || done[p];
            }
            if (ok && nr < 2) ready[nr++] = i;
        }
        if (!left) break;
        assert_true(nr > 0);
        int k = -1;
        CHECK(opsched_schedule_add_stage(s, &k));
        for (int j = 0; j < nr; j++) {
            CHECK(opsched_schedule_add_group(s, k, &ready[j], 1));
            done[ready[j]] = 1;
        }
    }
    free(done);
    CHECK(opsched_schedule_validate(g, s));
    return s;
}

/* Runs s on g and the sequential schedule on the GPU; checks free runs and
 * queued graph replays against the reference. */
static void check_schedule(const opsched_graph *g, const opsched_schedule *s, opsched_math math,
                           int want_streams)
{
    opsched_exec_options o;
    memset(&o, 0, sizeof(o));
    o.plan.math = math;
    o.plan.fuse_activation = 1;
    o.seed = 3;
    opsched_exec_options ro = o; /* the reference: sequential, every Concat copying */
    ro.no_concat_elision = 1;
    opsched_executor *ref = NULL;
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.gpu, g, NULL, &ro, &ref));
    CHECK(opsched_executor_create(env.gpu, g, s, &o, &ex));
    opsched_exec_info info;
    CHECK(opsched_executor_info(ex, &info));
    assert_true(info.n_streams >= want_streams);
    CHECK(opsched_executor_run(ref));
    for (int r = 0; r < 5; r++)
        CHECK(opsched_executor_run(ex));
    CHECK(opsched_device_sync(env.gpu));
    double err = -1;
    CHECK(opsched_executor_compare(ex, ref, &err));
    print_message("%s batch %lld %s: %d streams, %d launches, %d waits, %d merges (%d split), "
                  "%d concats elided; free runs rel L2 %.3g\n",
                  opsched_graph_name(g),
                  (long long)opsched_graph_tensor(g, opsched_graph_input(g, 0))->shape.d[0],
                  opsched_math_name(math), info.n_streams, info.n_launches, info.n_waits,
                  info.n_merges, info.n_merge_splits, info.n_concats_elided, err);
    assert_true(err <= tolerance[math]);
    double free_err = err;
    /* replays on another input, so stale outputs cannot pass */
    CHECK(opsched_executor_capture(ex));
    CHECK(opsched_executor_randomize_inputs(ref, 11));
    CHECK(opsched_executor_randomize_inputs(ex, 11));
    CHECK(opsched_executor_run(ref));
    for (int r = 0; r < 20; r++)
        CHECK(opsched_executor_replay(ex));
    CHECK(opsched_device_sync(env.gpu));
    CHECK(opsched_executor_compare(ex, ref, &err));
    print_message("  replays: rel L2 %.3g (free runs %.3g)\n", err, free_err);
    assert_true(err <= tolerance[math]);
    opsched_run_timing_options to = {.warmup_ms = 20, .iters = 20, .min_ms = 0};
    opsched_run_timing tf, tg;
    CHECK(opsched_executor_time(ex, 0, &to, &tf));
    CHECK(opsched_executor_time(ex, 1, &to, &tg));
    print_message("  median %.4f ms free, %.4f ms graph\n", tf.stats.median, tg.stats.median);
    opsched_executor_free(ex);
    opsched_executor_free(ref);
}

static void test_two_streams(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_graph *g = googlenet(1);
    opsched_schedule *s = two_stream_schedule(g);
    check_schedule(g, s, OPSCHED_MATH_FP32, 2);
    check_schedule(g, s, OPSCHED_MATH_FP16, 2);
    /* the same schedule at batch 4 */
    opsched_graph *g4 = googlenet(4);
    check_schedule(g4, s, OPSCHED_MATH_FP32, 2);
    opsched_graph_free(g4);
    opsched_schedule_free(s);
    opsched_graph_free(g);
}

static void test_greedy(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_graph *g = googlenet(1);
    opsched_search_options so;
    memset(&so, 0, sizeof(so));
    so.searcher = OPSCHED_SEARCH_GREEDY;
    opsched_schedule *s = NULL;
    CHECK(opsched_schedule_search(g, &so, &s, NULL));
    check_schedule(g, s, OPSCHED_MATH_TF32, 3);
    opsched_schedule_free(s);
    opsched_graph_free(g);
}

/* --layout auto's measurement: googlenet runs whole in both layouts on a
 * GPU, each timed, and the index of the faster comes back. */
static void test_layouts(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_graph *g = googlenet(1);
    const opsched_layout lay[2] = {OPSCHED_LAYOUT_NCHW, OPSCHED_LAYOUT_NHWC};
    opsched_exec_options o;
    memset(&o, 0, sizeof(o));
    o.plan.math = OPSCHED_MATH_TF32;
    o.plan.fuse_activation = 1;
    double ms[2] = {0, 0};
    int best = -1;
    CHECK(opsched_layouts_time_whole(env.gpu, g, NULL, lay, 2, &o, NULL, ms, &best));
    print_message("googlenet whole: nchw %.4f ms, nhwc %.4f ms\n", ms[0], ms[1]);
    assert_true(isfinite(ms[0]) && ms[0] > 0 && isfinite(ms[1]) && ms[1] > 0);
    assert_true(best == 0 || best == 1);
    assert_true(ms[best] <= ms[1 - best]);
    opsched_graph_free(g);
}

/* A traced run puts launches on both streams, and some of them overlap in
 * time or at least all lie within the run. */
static void test_trace(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_graph *g = googlenet(1);
    opsched_schedule *s = two_stream_schedule(g);
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.gpu, g, s, NULL, &ex));
    opsched_exec_span *spans = NULL;
    int n = 0, seen = 0;
    double total = 0;
    CHECK(opsched_executor_trace(ex, &spans, &n, &total));
    for (int i = 0; i < n; i++) {
        assert_true(spans[i].start_ms >= 0 && spans[i].dur_ms >= 0);
        assert_true(spans[i].start_ms + spans[i].dur_ms <= total + 1e-3);
        seen |= 1 << spans[i].stream;
    }
    assert_int_equal(seen, 3);
    print_message("traced run: %d launches in %.3f ms\n", n, total);
    free(spans);
    opsched_executor_free(ex);
    opsched_schedule_free(s);
    opsched_graph_free(g);
}

/* The measured cost of the merge stage and of a two-group stage. */
static void test_stage_cost(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_graph *g = googlenet(1);
    opsched_schedule *s = two_stream_schedule(g);
    opsched_stage_measurer *m = NULL;
    CHECK(opsched_stage_measurer_create(env.gpu, NULL, &m));
    int checked = 0;
    for (int k = 0; k < s->n_stages && checked < 4; k++) {
        const opsched_stage *st = &s->stages[k];
        if (st->kind != OPSCHED_STAGE_MERGE && st->n_groups < 2) continue;
        double ms = 0;
        CHECK(opsched_stage_cost_measured(m, g, st, &ms));
        print_message("stage %d (%s): %.4f ms\n", k + 1,
                      st->kind == OPSCHED_STAGE_MERGE ? "merge" : "two groups", ms);
        assert_true(isfinite(ms) && ms > 0 && ms < 10);
        checked++;
    }
    assert_true(checked > 0);
    opsched_stage_measurer_free(m);
    opsched_schedule_free(s);
    opsched_graph_free(g);
}

static int setup(void **state)
{
    (void)state;
    if (opsched_ctx_create(&env.ctx) != OPSCHED_OK) return -1;
    int count = 0;
    if (opsched_device_count(env.ctx, "cuda", &count) != OPSCHED_OK || count == 0) {
        print_message("SKIP: no CUDA device\n");
        return 0;
    }
    if (opsched_device_open(env.ctx, "cuda", 0, &env.gpu) != OPSCHED_OK) {
        print_error("cannot open cuda device 0: %s\n", opsched_ctx_last_error(env.ctx));
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    opsched_device_close(env.gpu);
    opsched_ctx_free(env.ctx);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_streams),
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_layouts),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_stage_cost),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
