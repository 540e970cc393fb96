/*
 * test_sweep.c - sweep specs (grids with lists, ranges and filters;
 * networks from the zoo; errors with their line), the iterator over a
 * spec's configurations (against a grid materialised here, in order, with
 * filters, duplicates and impossible shapes; counts; shards partitioning
 * the grid in the split's order, ties included), and real sweeps on the
 * CPU backend into a temporary database: a full run, a resumed run that
 * skips everything, and a run stopped after two items whose re-run
 * completes the rest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "opsched/opsched.h"
#include "opsched/sweep.h"
#include "sweep/sweep_impl.h"

static opsched_sweep_spec *parse_ok(opsched_ctx *ctx, const char *text)
{
    opsched_sweep_spec *spec = NULL;
    opsched_status st = opsched_sweep_spec_parse(ctx, text, strlen(text), "spec.yml", &spec);
    if (st != OPSCHED_OK) print_message("parse failed: %s\n", opsched_ctx_last_error(ctx));
    assert_int_equal(st, OPSCHED_OK);
    assert_non_null(spec);
    return spec;
}

/* Parsing fails with status st and a message that contains want. */
static void parse_fails(opsched_ctx *ctx, const char *text, opsched_status st, const char *want)
{
    opsched_sweep_spec *spec = NULL;
    assert_int_equal(opsched_sweep_spec_parse(ctx, text, strlen(text), "spec.yml", &spec), st);
    assert_null(spec);
    const char *msg = opsched_ctx_last_error(ctx);
    if (!strstr(msg, want)) print_message("message '%s' lacks '%s'\n", msg, want);
    assert_non_null(strstr(msg, want));
}

/* Calls fn on every configuration of shard (of shards) the iterator gives;
 * returns how many, checking the walk ends cleanly and its counts are the
 * spec's. */
typedef void (*config_fn)(const opsched_sweep_config *c, void *user);

static int for_each_config(opsched_ctx *ctx, const opsched_sweep_spec *spec, int shard, int shards,
                           config_fn fn, void *user)
{
    opsched_sweep_iter *it = NULL;
    const opsched_sweep_config *c = NULL;
    int n = 0;
    assert_int_equal(opsched_sweep_iter_create(ctx, spec, shard, shards, &it), OPSCHED_OK);
    for (;;) {
        opsched_status st = opsched_sweep_iter_next(it, &c);
        if (st != OPSCHED_OK) print_message("walk: %s\n", opsched_ctx_last_error(ctx));
        assert_int_equal(st, OPSCHED_OK);
        if (!c) break;
        if (fn) fn(c, user);
        n++;
    }
    opsched_sweep_counts walked, loaded;
    opsched_sweep_iter_counts(it, &walked);
    opsched_sweep_spec_counts(spec, &loaded);
    assert_memory_equal(&walked, &loaded, sizeof(walked));
    /* the end stays the end */
    assert_int_equal(opsched_sweep_iter_next(it, &c), OPSCHED_OK);
    assert_null(c);
    opsched_sweep_iter_free(it);
    return n;
}

/* The input tensor of node 0. */
static const opsched_tensor *input0(const opsched_graph *g)
{
    return opsched_graph_tensor(g, opsched_graph_node(g, 0)->inputs[0]);
}

static void check_lists_filters(const opsched_sweep_config *c, void *user)
{
    int *seen = user;
    const opsched_graph *g = c->graph;
    const opsched_node *n = opsched_graph_node(g, 0);
    assert_int_equal(c->index, *seen);
    assert_int_equal(n->op, OPSCHED_OP_CONV);
    if (*seen == 0) {
        /* the first parameter varies slowest: batch 1 comes first */
        const opsched_tensor *x = input0(g);
        assert_int_equal(x->shape.d[0], 1);
        assert_int_equal(x->shape.d[2], 14);
        assert_int_equal(x->shape.d[3], 14);
        assert_int_equal(x->dtype, OPSCHED_F32);
    }
    int64_t cin = input0(g)->shape.d[1];
    int64_t cout = opsched_graph_tensor(g, n->outputs[0])->shape.d[1];
    assert_true(cout >= cin && cin < 64);
    char sig[512];
    assert_int_equal(opsched_node_signature(g, 0, sig, sizeof(sig)), OPSCHED_OK);
    assert_string_equal(sig, c->signature);
    assert_false(c->fused);
    ++*seen;
}

static void test_grid_lists_filters(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_sweep_spec *spec = parse_ok(ctx,
        "measure:\n"
        "  iters: 7\n"
        "  min_ms: 0\n"
        "  math: tf32\n"
        "  cache: cold\n"
        "  algo: [heuristic, find]\n"
        "op: conv2d\n"
        "params:\n"
        "  batch: [1, 4]\n"
        "  in_channels: [16, 32, 64]\n"
        "  out_channels: [16, 32, 64]\n"
        "  height: 14\n"
        "  width: same\n"
        "  kernel: 3\n"
        "filters:\n"
        "  - out_channels >= in_channels\n"
        "  - in_channels<64\n");
    /* 2 x 3 x 3 = 18; in < 64 leaves 12; out >= in leaves 2 x (3 + 2) = 10 */
    assert_int_equal(opsched_sweep_spec_num_configs(spec), 10);
    opsched_sweep_counts c;
    opsched_sweep_spec_counts(spec, &c);
    assert_int_equal(c.combinations, 18);
    assert_int_equal(c.filtered, 8);
    assert_int_equal(c.impossible, 0);
    assert_int_equal(c.duplicates, 0);
    const opsched_measure_options *m = opsched_sweep_spec_measure(spec);
    assert_int_equal(m->iters, 7);
    assert_true(m->min_ms == 0);
    assert_true(m->ci_target == 0); /* a spec that fixes iters gets that budget */
    assert_int_equal(m->plan.math, OPSCHED_MATH_TF32);
    assert_int_equal(m->cache, OPSCHED_CACHE_COLD);
    assert_int_equal(opsched_sweep_spec_num_algos(spec), 2);
    assert_string_equal(opsched_sweep_spec_algo(spec, 1), "find");
    int seen = 0;
    assert_int_equal(for_each_config(ctx, spec, 0, 1, check_lists_filters, &seen), 10);
    opsched_sweep_spec_free(spec);
    opsched_ctx_free(ctx);
}

/* The measure: section's sampling: a fixed budget, or until stable. */
static void test_spec_sampling(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    static const char *const texts[] = {
        "op: relu\nparams:\n  channels: 8\n",
        "measure:\n  min_ms: 40\nop: relu\nparams:\n  channels: 8\n",
        "measure:\n  iters: 30\n  ci: 1\n  max_ms: 200\nop: relu\nparams:\n  channels: 8\n",
    };
    double want_ci[] = {0.005, 0, 0.01};
    for (int i = 0; i < 3; i++) {
        opsched_sweep_spec *spec = parse_ok(ctx, texts[i]);
        const opsched_measure_options *m = opsched_sweep_spec_measure(spec);
        if (m->ci_target != want_ci[i]) print_message("spec %d: ci %g\n", i, m->ci_target);
        assert_true(m->ci_target == want_ci[i]);
        if (i == 2) assert_true(m->max_ms == 200 && m->iters == 30);
        opsched_sweep_spec_free(spec);
    }
    parse_fails(ctx, "measure:\n  ci: 80\nop: relu\nparams:\n  channels: 8\n",
                OPSCHED_ERR_INVALID_ARG, "measure: ci must be in 0..50");
    opsched_ctx_free(ctx);
}

/* user: two int64, the last configuration's input channels and width */
static void keep_last_shape(const opsched_sweep_config *c, void *user)
{
    int64_t *last = user;
    last[0] = input0(c->graph)->shape.d[1];
    last[1] = input0(c->graph)->shape.d[3];
}

static void test_grid_ranges_sweeps_limit_duplicates(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_sweep_spec *spec = parse_ok(ctx,
        "description: two entries that overlap\n"
        "sweeps:\n"
        "  - op: linear\n"
        "    params:\n"
        "      batch: {from: 1, to: 16, times: 2}\n"  /* 1 2 4 8 16 */
        "      in_features: {from: 64, to: 192, step: 64}\n" /* 64 128 192 */
        "  - op: linear\n"
        "    params:\n"
        "      batch: [1, 32]\n"
        "      in_features: 64\n"
        "  - op: relu\n"
        "    params: {channels: [8, 16, 32], height: 4}\n"
        "    limit: 2\n");
    opsched_sweep_counts c;
    opsched_sweep_spec_counts(spec, &c);
    /* 15 + (1 new, 1 duplicate) + 2 of 3 */
    assert_int_equal(opsched_sweep_spec_num_configs(spec), 18);
    assert_int_equal(c.duplicates, 1);
    /* with width left out (0), the input is square */
    int64_t last[2] = {0, 0};
    assert_int_equal(for_each_config(ctx, spec, 0, 1, keep_last_shape, last), 18);
    assert_int_equal(last[0], 16);
    assert_int_equal(last[1], 4);
    assert_int_equal(opsched_sweep_spec_num_algos(spec), 1);
    assert_string_equal(opsched_sweep_spec_algo(spec, 0), "heuristic");
    opsched_sweep_spec_free(spec);
    opsched_ctx_free(ctx);
}

static void test_filter_arithmetic(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_sweep_spec *spec = parse_ok(ctx,
        "op: conv2d\n"
        "params:\n"
        "  in_channels: [8, 12, 16]\n"
        "  out_channels: [16, 24, 48]\n"
        "  height: [14, 28]\n"
        "  stride: [1, 2, 4]\n"
        "  kernel: 1\n"
        "filters:\n"
        "  - in_channels % 4 == 0\n"         /* 8, 12, 16 */
        "  - 2 * in_channels <= out_channels\n"
        "  - height / stride >= 7\n"
        "  - width == height\n");              /* width is `same`: reads as height */
    /* (in, out) with 2*in <= out: (8,16) (8,24) (8,48) (12,24) (12,48) (16,48) = 6;
     * (height, stride) with height/stride >= 7: (14,1) (14,2) (28,1) (28,2) (28,4) = 5 */
    assert_int_equal(opsched_sweep_spec_num_configs(spec), 30);
    opsched_sweep_spec_free(spec);
    spec = parse_ok(ctx, "op: relu\nparams: {channels: [1, 2]}\nfilters: [channels / 0 > 0]\n");
    assert_int_equal(opsched_sweep_spec_num_configs(spec), 0); /* division by zero fails */
    opsched_sweep_spec_free(spec);
    parse_fails(ctx, "op: relu\nfilters: [channels * 2 * 2 > 0]\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:2: filter 'channels * 2 * 2 > 0': expected");
    parse_fails(ctx, "op: relu\nfilters: [2 * chanels > 0]\n", OPSCHED_ERR_INVALID_ARG,
                "relu has no parameter 'chanels'");
    opsched_ctx_free(ctx);
}

/* A one-filter relu spec over channels 1 and 3 (the filter on line 3). */
static char *filter_spec(char *buf, size_t size, const char *filter)
{
    snprintf(buf, size, "op: relu\nparams: {channels: [1, 3]}\nfilters:\n  - %s\n", filter);
    return buf;
}

/* Every operator of filters, at the edges of int64: results that fit are
 * computed, results that do not are errors naming the filter, the
 * operation with its operands, and the operator's line and column. */
static void test_filter_overflow(void **state)
{
    (void)state;
    static const struct {
        const char *filter;
        int configs;        /* -1: the error below */
        const char *error;
    } cases[] = {
        {"9223372036854775807 + 1 > 0", -1,
         "spec.yml:4:25: filter '9223372036854775807 + 1 > 0' overflows: 9223372036854775807 + 1"},
        {"1 + 9223372036854775807 > 0", -1, "overflows: 1 + 9223372036854775807"},
        {"-9223372036854775808 + -1 < 0", -1, "overflows: -9223372036854775808 + -1"},
        {"9223372036854775806 + 1 > 0", 2, NULL},
        {"-9223372036854775808 - 1 < 0", -1,
         "spec.yml:4:26: filter '-9223372036854775808 - 1 < 0' overflows: -9223372036854775808 - 1"},
        {"0 - -9223372036854775808 > 0", -1, "overflows: 0 - -9223372036854775808"},
        {"9223372036854775807 - -1 > 0", -1, "overflows: 9223372036854775807 - -1"},
        {"-1 - 9223372036854775807 < 0", 2, NULL},
        {"9223372036854775807 * 2 > 0", -1,
         "spec.yml:4:25: filter '9223372036854775807 * 2 > 0' overflows: 9223372036854775807 * 2"},
        {"-9223372036854775808 * -1 > 0", -1, "overflows: -9223372036854775808 * -1"},
        {"4294967296 * 4294967296 > 0", -1, "overflows: 4294967296 * 4294967296"},
        {"-9223372036854775808 * 1 < 0", 2, NULL},
        {"-9223372036854775808 / -1 > 0", -1,
         "spec.yml:4:26: filter '-9223372036854775808 / -1 > 0' overflows: "
         "-9223372036854775808 / -1"},
        {"-9223372036854775808 / 1 < 0", 2, NULL},
        {"-9223372036854775807 / -1 > 0", 2, NULL},
        {"-9223372036854775808 % -1 == 0", 2, NULL}, /* the remainder exists: 0 */
        {"9223372036854775807 % 2 == 1", 2, NULL},
        {"channels / 0 > 0", 0, NULL},               /* a division by zero fails */
        {"channels % 0 == 0", 0, NULL},
        /* operands from the parameters, found while combining */
        {"channels * 3074457345618258603 > 0", -1,
         "spec.yml:4:14: filter 'channels * 3074457345618258603 > 0' overflows: "
         "3 * 3074457345618258603"},
        {"channels * 3074457345618258602 > 0", 2, NULL},
        {"channels + 9223372036854775806 > 0", -1, "overflows: 3 + 9223372036854775806"},
        {"-9223372036854775807 - channels < 0", -1, "overflows: -9223372036854775807 - 3"},
        {"0 < -9223372036854775808 / channels", 0, NULL},
        {"channels > 9223372036854775807 * channels", -1, "spec.yml:4:36: filter 'channels > 9223372036854775807 * channels' overflows: 9223372036854775807 * 3"},
        {"channels > 9223372036854775807 * -1", 2, NULL},
        /* integer literals beyond int64 */
        {"channels < 9223372036854775808", -1,
         "spec.yml:4:16: filter 'channels < 9223372036854775808': the integer "
         "9223372036854775808 is out of range (-9223372036854775808..9223372036854775807)"},
        {"channels > -9223372036854775809", -1,
         "the integer -9223372036854775809 is out of range"},
        {"99999999999999999999 * channels > 0", -1,
         "the integer 99999999999999999999 is out of range"},
        {"channels >= -9223372036854775808", 2, NULL},
        {"channels <= 9223372036854775807", 2, NULL},
    };
    opsched_ctx *ctx;
    char text[256];
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        print_message("filter '%s'\n", cases[i].filter);
        filter_spec(text, sizeof(text), cases[i].filter);
        if (cases[i].configs < 0) {
            parse_fails(ctx, text, OPSCHED_ERR_INVALID_ARG, cases[i].error);
            continue;
        }
        opsched_sweep_spec *spec = parse_ok(ctx, text);
        assert_int_equal(opsched_sweep_spec_num_configs(spec), cases[i].configs);
        opsched_sweep_spec_free(spec);
    }
    /* a quoted filter: the column is past the quote */
    parse_fails(ctx, "op: relu\nparams: {channels: 3}\nfilters:\n  - \"2 * 9223372036854775807 < 0\"\n",
                OPSCHED_ERR_INVALID_ARG, "spec.yml:4:8: filter '2 * 9223372036854775807 < 0' overflows");
    opsched_ctx_free(ctx);
}

/* Numbers elsewhere in a spec: out of int64 or out of their range. */
static void test_number_ranges(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    parse_fails(ctx, "op: relu\nparams: {channels: 99999999999999999999}\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:2: params: channels must be in -1..2147483647, not 99999999999999999999");
    parse_fails(ctx, "op: relu\nparams:\n  channels: {from: 1, to: 2147483647, step: 1}\n",
                OPSCHED_ERR_INVALID_ARG,
                "spec.yml:3: params: channels: the range has 2147483647 values, more than the "
                "limit of 10000");
    parse_fails(ctx, "op: relu\nparams:\n  channels: {from: 1, to: 9, step: 0}\n",
                OPSCHED_ERR_INVALID_ARG, "params: channels: step must be in 1..2147483647, not 0");
    parse_fails(ctx, "op: relu\nparams:\n  channels: {from: 1, to: 99999999999999999999, times: 2}\n",
                OPSCHED_ERR_INVALID_ARG, "params: channels: to must be in 1..2147483647");
    parse_fails(ctx, "op: relu\nparams:\n  channels: {from: 0, to: 3, step: 1}\n",
                OPSCHED_ERR_INVALID_ARG, "spec.yml:3: relu: channels=0 is out of range");
    parse_fails(ctx, "measure: {seed: 99999999999999999999}\nop: relu\n", OPSCHED_ERR_INVALID_ARG,
                "measure: seed must be in 0..9223372036854775807, not 99999999999999999999");
    parse_fails(ctx, "op: relu\nlimit: -9223372036854775809\n", OPSCHED_ERR_INVALID_ARG,
                "limit must be in 1..2147483647");
    /* the largest values build, or are impossible shapes: never a crash */
    opsched_sweep_spec *spec = parse_ok(ctx,
        "op: conv2d\nparams:\n  batch: [1, 2147483647]\n  in_channels: [1, 2147483647]\n"
        "  out_channels: [1, 2147483647]\n  height: [1, 2147483647]\n  kernel: [1, 2147483647]\n"
        "  padding: [0, 2147483647]\n  dilation: [1, 2147483647]\n");
    opsched_sweep_counts c;
    opsched_sweep_spec_counts(spec, &c);
    assert_int_equal(c.combinations, 128);
    assert_int_equal(c.combinations, opsched_sweep_spec_num_configs(spec) + c.impossible);
    opsched_sweep_spec_free(spec);
    opsched_ctx_free(ctx);
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The bounds on a spec's work: refused at once, naming the count and the
 * limit, however the spec multiplies its work (aliases included). */
static void test_work_limits(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    char text[4096];
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    double t0 = seconds();
    /* one grid over the limit */
    parse_fails(ctx, "op: relu\nparams:\n  batch: {from: 1, to: 1000, step: 1}\n"
                     "  channels: {from: 1, to: 1001, step: 1}\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:1: relu: 1001000 combinations, more than the limit of 1000000");
    /* a grid at the limit, 40 times through an alias: refused before any is built */
    size_t len = (size_t)snprintf(text, sizeof(text),
        "sweeps:\n  - &g\n    op: relu\n    params:\n"
        "      batch: {from: 1, to: 100, step: 1}\n"
        "      channels: {from: 1, to: 100, step: 1}\n"
        "      height: {from: 1, to: 100, step: 1}\n");
    for (int i = 0; i < 39; i++) len += (size_t)snprintf(text + len, sizeof(text) - len, "  - *g\n");
    parse_fails(ctx, text, OPSCHED_ERR_INVALID_ARG,
                "spec.yml:2: the spec's grids have 40000000 combinations in all (aliases "
                "expanded), more than the limit of 1000000");
    /* grids that together pass the limit */
    parse_fails(ctx, "sweeps:\n  - {op: relu, params: {batch: {from: 1, to: 1000, step: 1}, "
                     "channels: {from: 1, to: 600, step: 1}}}\n"
                     "  - {op: gelu, params: {batch: {from: 1, to: 1000, step: 1}, "
                     "channels: {from: 1, to: 600, step: 1}}}\n",
                OPSCHED_ERR_INVALID_ARG, "grids have 1200000 combinations in all");
    /* a billion laughs: ten levels of ten aliases */
    len = (size_t)snprintf(text, sizeof(text), "x0: &b0 [a, a, a, a, a, a, a, a, a, a]\n");
    for (int i = 1; i < 10; i++)
        len += (size_t)snprintf(text + len, sizeof(text) - len,
                                "x%d: &b%d [*b%d, *b%d, *b%d, *b%d, *b%d, *b%d, *b%d, *b%d, *b%d, "
                                "*b%d]\n", i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1,
                                i - 1, i - 1, i - 1);
    snprintf(text + len, sizeof(text) - len, "op: relu\n");
    parse_fails(ctx, text, OPSCHED_ERR_INVALID_ARG,
                "spec.yml:1: the spec has 12345679023 YAML nodes once its aliases are expanded, "
                "more than the limit of 100000");
    /* an alias inside the node it names */
    parse_fails(ctx, "op: relu\nparams: &p\n  batch: *p\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:2: an alias refers to a node that contains it");
    /* nesting */
    len = (size_t)snprintf(text, sizeof(text), "op: relu\ndescription: ");
    for (int i = 0; i < 100; i++) text[len++] = '[';
    for (int i = 0; i < 100; i++) text[len++] = ']';
    snprintf(text + len, sizeof(text) - len, "\n");
    parse_fails(ctx, text, OPSCHED_ERR_INVALID_ARG, "the spec nests more than 64 levels deep");
    /* network loads: 1001 batch sizes of one network, refused before any load */
    len = (size_t)snprintf(text, sizeof(text), "networks: [alexnet]\nbatch: [");
    for (int i = 1; i <= 1001; i++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%d", i > 1 ? "," : "", i);
    snprintf(text + len, sizeof(text) - len, "]\n");
    parse_fails(ctx, text, OPSCHED_ERR_INVALID_ARG,
                "the spec's networks entries load 1001 networks (networks x batches x sizes, "
                "aliases expanded), more than the limit of 1000");
    /* algorithm policies */
    len = (size_t)snprintf(text, sizeof(text), "op: relu\nmeasure:\n  algo: [");
    for (int i = 0; i < 33; i++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%sa%d", i ? ", " : "", i);
    snprintf(text + len, sizeof(text) - len, "]\n");
    parse_fails(ctx, text, OPSCHED_ERR_INVALID_ARG,
                "measure: algo lists 33 policies, more than the limit of 32");
    /* the text itself */
    char *huge = malloc((4 << 20) + 2);
    assert_non_null(huge);
    memset(huge, '#', (4 << 20) + 1);
    huge[(4 << 20) + 1] = '\0';
    parse_fails(ctx, huge, OPSCHED_ERR_INVALID_ARG,
                "spec.yml: the spec has 4194305 bytes, more than the limit of 4194304");
    free(huge);
    double elapsed = seconds() - t0;
    print_message("refusals took %.2f s\n", elapsed);
    assert_true(elapsed < 30);
    /* distinct configurations are not limited but by the combinations:
     * none is held, only a fingerprint each */
    opsched_sweep_spec *spec = parse_ok(ctx, "op: relu\nparams:\n  batch: {from: 1, to: 101, step: 1}\n"
                                             "  channels: {from: 1, to: 1000, step: 1}\n");
    assert_int_equal(opsched_sweep_spec_num_configs(spec), 101000);
    opsched_sweep_spec_free(spec);
    opsched_ctx_free(ctx);
}

static void test_impossible_combinations_counted(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    /* a 9x9 kernel does not fit a 4x4 input without padding; 6 groups do
     * not divide 16 channels */
    opsched_sweep_spec *spec = parse_ok(ctx,
        "op: conv2d\n"
        "params:\n"
        "  in_channels: 48\n"
        "  out_channels: [16, 48]\n"
        "  groups: [1, 6]\n"
        "  height: [4, 16]\n"
        "  kernel: [3, 9]\n"
        "  padding: 0\n");
    opsched_sweep_counts c;
    opsched_sweep_spec_counts(spec, &c);
    assert_int_equal(c.combinations, 16);
    /* impossible: kernel 9 at height 4 (4 combos), and groups 6 with 16
     * outputs at the other 6 (height, kernel) ... counted once each */
    assert_int_equal(c.impossible, 4 + 3);
    assert_int_equal(opsched_sweep_spec_num_configs(spec), 16 - 7);
    assert_string_equal(opsched_ctx_last_error(ctx), "");
    opsched_sweep_spec_free(spec);
    opsched_ctx_free(ctx);
}

/* user: three counts, convolutions, max pools, batch 2 */
static void tally_zoo(const opsched_sweep_config *c, void *user)
{
    int *tally = user;
    assert_int_equal(opsched_graph_num_nodes(c->graph), 1);
    const opsched_node *node = opsched_graph_node(c->graph, 0);
    tally[0] += node->op == OPSCHED_OP_CONV;
    tally[1] += node->op == OPSCHED_OP_MAXPOOL;
    tally[2] += input0(c->graph)->shape.d[0] == 2;
}

static void test_networks_from_zoo(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_sweep_spec *spec = parse_ok(ctx,
        "sweeps:\n"
        "  - networks: [squeezenet1_1]\n"
        "    batch: [1, 2]\n"
        "    sizes: [224, 8]\n"
        "    ops: [conv2d, maxpool]\n");
    opsched_sweep_counts c;
    opsched_sweep_spec_counts(spec, &c);
    assert_int_equal(c.impossible, 2); /* 8x8 is below squeezenet's 17x17, at both batches */
    assert_true(c.duplicates > 0);     /* the fire modules repeat shapes */
    assert_true(c.excluded > 0);       /* relu, concat, pooling heads, views */
    int n = opsched_sweep_spec_num_configs(spec), tally[3] = {0, 0, 0};
    assert_true(n > 20);
    assert_int_equal(for_each_config(ctx, spec, 0, 1, tally_zoo, tally), n);
    int convs = tally[0], pools = tally[1], batch2 = tally[2];
    assert_int_equal(convs + pools, n);
    assert_true(pools >= 1);
    assert_int_equal(batch2 * 2, n); /* every configuration at both batch sizes */
    opsched_sweep_spec_free(spec);

    /* the same convolution from a grid and from the network is one signature */
    spec = parse_ok(ctx,
        "sweeps:\n"
        "  - networks: squeezenet1_1\n"
        "    ops: [conv2d]\n"
        "  - op: conv2d\n"
        "    params: {in_channels: 64, out_channels: 16, height: 55, kernel: 1, padding: 0}\n");
    opsched_sweep_spec_counts(spec, &c);
    assert_true(c.duplicates >= 1);
    opsched_sweep_spec_free(spec);
    opsched_ctx_free(ctx);
}

static void test_errors_name_file_and_line(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    parse_fails(ctx, "op: conv2d\nparams:\n  batch: [1, 2\n  kernel: 3\n", OPSCHED_ERR_PARSE,
                "spec.yml:4:");
    parse_fails(ctx, "op: conv2d\nparams:\n  batch: 1\n  kernels: 3\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:4: conv2d has no parameter 'kernels'");
    parse_fails(ctx, "op: conv3d\n", OPSCHED_ERR_INVALID_ARG, "spec.yml:1: unknown operator 'conv3d'");
    parse_fails(ctx, "op: conv2d\nparms: {}\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:2: a grid entry: unknown key 'parms'");
    parse_fails(ctx, "op: conv2d\nparams:\n  stride: [1,\n    0]\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:4: conv2d: stride=0 is out of range");
    parse_fails(ctx, "op: conv2d\nparams:\n  batch: same\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:3: params: batch: only width and kernel_w can be 'same'");
    parse_fails(ctx, "op: conv2d\nparams:\n  batch: x1\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:3: params: batch must be an integer, not 'x1'");
    parse_fails(ctx, "op: conv2d\nfilters:\n  - kernel <> 3\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:3: filter 'kernel <> 3': expected");
    parse_fails(ctx, "op: conv2d\nfilters: [\"chans > 3\"]\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:2: filter 'chans > 3': conv2d has no parameter 'chans'");
    parse_fails(ctx, "measure:\n  math: fp8\nop: relu\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:2: measure: math must be fp32, tf32, fp16 or bf16, not 'fp8'");
    parse_fails(ctx, "measure:\n  iters: 0\nop: relu\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:2: measure: iters must be in 1..");
    parse_fails(ctx, "measure: {algo: [find, find]}\nop: relu\n", OPSCHED_ERR_INVALID_ARG,
                "'find' is listed twice");
    parse_fails(ctx, "networks: [resnet5o]\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:1: networks: no built-in network 'resnet5o'");
    parse_fails(ctx, "networks: [resnet50]\nops: [conv]\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml:2: ops: unknown operator 'conv'");
    parse_fails(ctx, "networks: [missing/model.onnx]\n", OPSCHED_ERR_IO, "spec.yml:1: network");
    parse_fails(ctx, "op: relu\nnetworks: [resnet50]\n", OPSCHED_ERR_INVALID_ARG, "not both");
    parse_fails(ctx, "measure: {iters: 3}\n", OPSCHED_ERR_INVALID_ARG, "needs op:");
    parse_fails(ctx, "", OPSCHED_ERR_INVALID_ARG, "spec.yml:1: the spec is empty");
    parse_fails(ctx, "- op: relu\n", OPSCHED_ERR_INVALID_ARG, "a sweep spec must be a mapping");
    parse_fails(ctx, "op: relu\nop: add\n", OPSCHED_ERR_INVALID_ARG, "spec.yml:2: a grid entry: 'op' is given twice");
    parse_fails(ctx, "sweeps: []\n", OPSCHED_ERR_INVALID_ARG, "sweeps is an empty list");
    parse_fails(ctx, "op: relu\n---\nop: add\n", OPSCHED_ERR_INVALID_ARG, "one YAML document");
    parse_fails(ctx, "op: conv2d\nparams: {batch: 1000, in_channels: 1000, out_channels: 1000, "
                     "height: [1,2,3,4,5,6,7,8,9,10], kernel: {from: 1, to: 100001, step: 1}}\n",
                OPSCHED_ERR_INVALID_ARG, "more than");
    opsched_ctx_free(ctx);
}

static void test_load_file_and_default(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_sweep_spec *spec = NULL;
    assert_int_equal(opsched_sweep_spec_load(ctx, "/nonexistent/spec.yml", &spec), OPSCHED_ERR_IO);
    assert_null(spec);
    char path[] = "/tmp/opsched_spec_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "op: relu\n\nparams:\n  channels: [8, 8]\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(opsched_sweep_spec_load(ctx, path, &spec), OPSCHED_ERR_INVALID_ARG);
    char want[64];
    snprintf(want, sizeof(want), "%s:4:", path);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), want));
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "listed twice"));
    unlink(path);

    const char *def = opsched_sweep_default_spec();
    assert_int_equal(opsched_sweep_spec_parse(ctx, def, strlen(def), "<default>", &spec), OPSCHED_OK);
    assert_true(opsched_sweep_spec_num_configs(spec) >= 50);
    assert_string_equal(opsched_sweep_spec_text(spec), def);
    assert_string_equal(opsched_sweep_spec_origin(spec), "<default>");
    opsched_sweep_spec_free(spec);
    opsched_sweep_spec_free(NULL);
    opsched_ctx_free(ctx);
}

/* ---- the iterator ------------------------------------------------------- */

/* A walk's configurations, kept for comparison. */
typedef struct walked_config {
    char sig[512];
    int fused, index, rank;
} walked_config;

typedef struct walk_list {
    walked_config *v;
    int n, cap;
} walk_list;

static void collect(const opsched_sweep_config *c, void *user)
{
    walk_list *l = user;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = realloc(l->v, (size_t)l->cap * sizeof(*l->v));
        assert_non_null(l->v);
    }
    walked_config *w = &l->v[l->n++];
    snprintf(w->sig, sizeof(w->sig), "%s", c->signature);
    w->fused = c->fused;
    w->index = c->index;
    w->rank = c->shard_rank;
}

static walk_list walk_all(opsched_ctx *ctx, const opsched_sweep_spec *spec, int shard, int shards)
{
    walk_list l = {NULL, 0, 0};
    int n = for_each_config(ctx, spec, shard, shards, collect, &l);
    assert_int_equal(n, l.n);
    return l;
}

/* The split's order, written out here: the FNV-1a hash of the key (under
 * mask), then the signature, then unfused first. */
static uint64_t mask_for_order;

static uint64_t key_hash(const walked_config *w)
{
    char key[560];
    snprintf(key, sizeof(key), "%s%s", w->sig, w->fused ? ";fused=relu" : "");
    return os_sweep_hash(key) & mask_for_order;
}

static int cmp_split(const void *a, const void *b)
{
    const walked_config *x = a, *y = b;
    uint64_t hx = key_hash(x), hy = key_hash(y);
    if (hx != hy) return hx < hy ? -1 : 1;
    int c = strcmp(x->sig, y->sig);
    return c ? c : x->fused - y->fused;
}

/* Every configuration's rank is its place in the split's order, every
 * shard holds exactly the configurations of its ranks, and the shards
 * partition the walk, sizes differing by at most one. */
static void check_split(opsched_ctx *ctx, const opsched_sweep_spec *spec, uint64_t mask)
{
    walk_list all = walk_all(ctx, spec, 0, 1);
    int n = all.n;
    assert_int_equal(n, opsched_sweep_spec_num_configs(spec));
    walked_config *sorted = malloc((size_t)(n ? n : 1) * sizeof(*sorted));
    assert_non_null(sorted);
    memcpy(sorted, all.v, (size_t)n * sizeof(*sorted));
    mask_for_order = mask;
    qsort(sorted, (size_t)n, sizeof(*sorted), cmp_split);
    for (int r = 0; r < n; r++) {
        const walked_config *w = &all.v[sorted[r].index];
        assert_int_equal(w->index, sorted[r].index);
        assert_int_equal(w->rank, r);
    }
    const int counts[] = {1, 2, 3, 7, 36, 50};
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        int shards = counts[k];
        int *seen = calloc((size_t)(n ? n : 1), sizeof(int));
        assert_non_null(seen);
        for (int sh = 0; sh < shards; sh++) {
            walk_list part = walk_all(ctx, spec, sh, shards);
            assert_true(part.n >= n / shards && part.n <= n / shards + 1);
            int last = -1;
            for (int i = 0; i < part.n; i++) {
                const walked_config *w = &part.v[i];
                assert_int_equal(w->rank % shards, sh);
                assert_true(w->index > last); /* the spec's order within a shard */
                last = w->index;
                assert_string_equal(w->sig, all.v[w->index].sig);
                assert_int_equal(w->fused, all.v[w->index].fused);
                seen[w->index]++;
            }
            free(part.v);
        }
        for (int i = 0; i < n; i++) assert_int_equal(seen[i], 1);
        free(seen);
    }
    free(sorted);
    free(all.v);
}

static void test_shards_cover_each_config_once(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    const char *a = "op: conv2d\nparams:\n  batch: [1, 2, 4]\n  in_channels: [8, 16, 24, 32]\n"
                    "  kernel: [1, 3, 5]\n  height: 16\n";
    const char *b = "op: conv2d\nparams:\n  kernel: [5, 3, 1]\n  height: 16\n"
                    "  in_channels: [32, 24, 16, 8]\n  batch: [4, 2, 1]\n";
    opsched_sweep_spec *sa = parse_ok(ctx, a), *sb = parse_ok(ctx, b);
    walk_list la = walk_all(ctx, sa, 0, 1), lb = walk_all(ctx, sb, 0, 1);
    assert_int_equal(la.n, 36);
    assert_int_equal(lb.n, 36);
    /* the same configuration in the other order: the same rank, so the
     * same shard for any count */
    for (int i = 0; i < la.n; i++) {
        int found = 0;
        for (int j = 0; j < lb.n; j++) {
            if (strcmp(la.v[i].sig, lb.v[j].sig) != 0) continue;
            found++;
            assert_int_equal(la.v[i].rank, lb.v[j].rank);
        }
        assert_int_equal(found, 1);
    }
    check_split(ctx, sa, UINT64_MAX);
    check_split(ctx, sb, UINT64_MAX);
    free(la.v);
    free(lb.v);
    opsched_sweep_spec_free(sa);
    opsched_sweep_spec_free(sb);
    opsched_ctx_free(ctx);
}

/* Configurations whose hashes tie are ordered by signature, then fusion:
 * hashes narrowed to two bits make ties of nearly everything, a fused and
 * an unfused convolution of one signature among them. */
static void test_shard_ties_ordered_by_signature(void **state)
{
    (void)state;
    static const char text[] =
        "sweeps:\n"
        "  - op: conv2d\n"
        "    params: {in_channels: [8, 16], out_channels: [8, 16, 24], height: 8, kernel: [1, 3]}\n"
        "  - op: conv2d\n"
        "    params: {in_channels: [8, 16], out_channels: [8, 16, 24], height: 8, kernel: [1, 3]}\n"
        "    fuse: true\n"
        "  - op: relu\n"
        "    params: {channels: [1, 2, 3, 4, 5, 6, 7, 8]}\n";
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_sweep_spec *wide = parse_ok(ctx, text), *narrow = NULL;
    os_sweep_tuning t;
    os_sweep_tuning_default(&t);
    t.hash_mask = 3;
    assert_int_equal(os_sweep_spec_parse_tuned(ctx, text, strlen(text), "spec.yml", &t, &narrow),
                     OPSCHED_OK);
    /* telling configurations apart does not rest on the first hash */
    assert_int_equal(opsched_sweep_spec_num_configs(wide), 12 + 12 + 8);
    assert_int_equal(opsched_sweep_spec_num_configs(narrow), 12 + 12 + 8);
    opsched_sweep_counts cw, cn;
    opsched_sweep_spec_counts(wide, &cw);
    opsched_sweep_spec_counts(narrow, &cn);
    assert_memory_equal(&cw, &cn, sizeof(cw));
    check_split(ctx, wide, UINT64_MAX);
    check_split(ctx, narrow, 3);
    opsched_sweep_spec_free(wide);
    opsched_sweep_spec_free(narrow);
    opsched_ctx_free(ctx);
}

/* The iterator against the grid materialised here as the sweep used to
 * hold it: every combination in the spec's order (the first parameter
 * slowest), the filter, impossible shapes, duplicates within an entry
 * (`same`, padding -1 at kernel 1) and across entries, a fused entry and a
 * limit, with the counts. */
typedef struct reference {
    walked_config v[512];
    int n;
    opsched_sweep_counts counts;
} reference;

static void ref_add(opsched_ctx *ctx, reference *r, const char *op, const opsched_param *p, int np,
                    int fused, int *added)
{
    opsched_graph *g = NULL;
    char sig[512];
    *added = 0;
    opsched_status st = opsched_opconfig_build(ctx, op, p, np, OPSCHED_F32, &g);
    if (st == OPSCHED_ERR_SHAPE) {
        opsched_ctx_clear_error(ctx);
        r->counts.impossible++;
        return;
    }
    assert_int_equal(st, OPSCHED_OK);
    assert_int_equal(opsched_node_signature(g, 0, sig, sizeof(sig)), OPSCHED_OK);
    opsched_graph_free(g);
    for (int i = 0; i < r->n; i++) {
        if (strcmp(r->v[i].sig, sig) == 0 && r->v[i].fused == fused) {
            r->counts.duplicates++;
            return;
        }
    }
    assert_true(r->n < (int)(sizeof(r->v) / sizeof(r->v[0])));
    snprintf(r->v[r->n].sig, sizeof(r->v[r->n].sig), "%s", sig);
    r->v[r->n].fused = fused;
    r->v[r->n].index = r->n;
    r->n++;
    *added = 1;
}

static void test_iter_matches_materialised(void **state)
{
    (void)state;
    static const char text[] =
        "sweeps:\n"
        "  - op: conv2d\n"
        "    params:\n"
        "      batch: [1, 2]\n"
        "      in_channels: [8, 16]\n"
        "      out_channels: [8, 16, 24]\n"
        "      height: [4, 9]\n"
        "      width: [same, 9]\n"
        "      kernel: [1, 3, 5]\n"
        "      padding: [0, -1]\n"
        "    filters: [out_channels >= in_channels]\n"
        "  - op: conv2d\n"
        "    params: {in_channels: 16, out_channels: [16, 32], height: 9, kernel: [3, 5], padding: 0}\n"
        "  - op: conv2d\n"
        "    params: {in_channels: 16, out_channels: 16, height: 9, kernel: 3, padding: 0}\n"
        "    fuse: true\n"
        "  - op: relu\n"
        "    params: {channels: [1, 2, 3, 4], height: [2, 3]}\n"
        "    limit: 5\n";
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    static reference r;
    memset(&r, 0, sizeof(r));
    int added = 0;
    static const int64_t batch[] = {1, 2}, cin[] = {8, 16}, cout[] = {8, 16, 24}, hs[] = {4, 9},
                         ws[] = {0, 9}, ks[] = {1, 3, 5}, pads[] = {0, -1};
    for (int i0 = 0; i0 < 2; i0++)
    for (int i1 = 0; i1 < 2; i1++)
    for (int i2 = 0; i2 < 3; i2++)
    for (int i3 = 0; i3 < 2; i3++)
    for (int i4 = 0; i4 < 2; i4++)
    for (int i5 = 0; i5 < 3; i5++)
    for (int i6 = 0; i6 < 2; i6++) {
        r.counts.combinations++;
        if (!(cout[i2] >= cin[i1])) {
            r.counts.filtered++;
            continue;
        }
        opsched_param p[] = {{"batch", batch[i0]}, {"in_channels", cin[i1]},
                             {"out_channels", cout[i2]}, {"height", hs[i3]}, {"width", ws[i4]},
                             {"kernel", ks[i5]}, {"padding", pads[i6]}};
        ref_add(ctx, &r, "conv2d", p, 7, 0, &added);
    }
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++) {
            opsched_param p[] = {{"in_channels", 16}, {"out_channels", i ? 32 : 16},
                                 {"height", 9}, {"kernel", k ? 5 : 3}, {"padding", 0}};
            r.counts.combinations++;
            ref_add(ctx, &r, "conv2d", p, 5, 0, &added);
        }
    {
        opsched_param p[] = {{"in_channels", 16}, {"out_channels", 16}, {"height", 9},
                             {"kernel", 3}, {"padding", 0}};
        r.counts.combinations++;
        ref_add(ctx, &r, "conv2d", p, 5, 1, &added); /* the signature of node 0, fused */
    }
    int kept = 0;
    for (int c = 1; c <= 4 && kept < 5; c++)
        for (int h = 2; h <= 3 && kept < 5; h++) {
            opsched_param p[] = {{"channels", c}, {"height", h}};
            r.counts.combinations++;
            ref_add(ctx, &r, "relu", p, 2, 0, &added);
            kept += added;
        }
    assert_true(r.counts.duplicates >= 3); /* same, padding -1, the second entry */
    assert_true(r.counts.impossible > 0);

    opsched_sweep_spec *spec = parse_ok(ctx, text);
    assert_int_equal(opsched_sweep_spec_num_configs(spec), r.n);
    opsched_sweep_counts c;
    opsched_sweep_spec_counts(spec, &c);
    assert_memory_equal(&c, &r.counts, sizeof(c));
    walk_list l = walk_all(ctx, spec, 0, 1);
    assert_int_equal(l.n, r.n);
    for (int i = 0; i < r.n; i++) {
        assert_string_equal(l.v[i].sig, r.v[i].sig);
        assert_int_equal(l.v[i].fused, r.v[i].fused);
        assert_int_equal(l.v[i].index, i);
    }
    /* walking again gives the same */
    walk_list again = walk_all(ctx, spec, 0, 1);
    assert_int_equal(again.n, l.n);
    for (int i = 0; i < l.n; i++) {
        assert_string_equal(again.v[i].sig, l.v[i].sig);
        assert_int_equal(again.v[i].fused, l.v[i].fused);
        assert_int_equal(again.v[i].rank, l.v[i].rank);
    }
    check_split(ctx, spec, UINT64_MAX);
    free(l.v);
    free(again.v);
    opsched_sweep_spec_free(spec);
    opsched_ctx_free(ctx);
}

/* Bad arguments, and a network file that changes or goes away between
 * loading and a walk: an error, never a wrong walk. */
static void test_iter_errors(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_sweep_iter *it = (opsched_sweep_iter *)&it;
    const opsched_sweep_config *c = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_sweep_spec *spec = parse_ok(ctx, "op: relu\nparams: {channels: [1, 2]}\n");
    assert_int_equal(opsched_sweep_iter_create(ctx, spec, 3, 3, &it), OPSCHED_ERR_INVALID_ARG);
    assert_null(it);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "shard 3 of 3 does not exist"));
    assert_int_equal(opsched_sweep_iter_create(ctx, spec, 0, -1, &it), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_sweep_iter_create(ctx, spec, -1, 2, &it), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_sweep_iter_create(ctx, NULL, 0, 1, &it), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_sweep_iter_create(ctx, spec, 0, 1, NULL), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_sweep_iter_next(NULL, &c), OPSCHED_ERR_INVALID_ARG);
    assert_null(c);
    opsched_sweep_iter_free(NULL);
    /* shard 1 of 5 of two configurations may be empty: a clean end */
    int n = 0;
    for (int sh = 0; sh < 5; sh++) n += for_each_config(ctx, spec, sh, 5, NULL, NULL);
    assert_int_equal(n, 2);
    opsched_sweep_spec_free(spec);

    const char *src = getenv("OPSCHED_SOURCE_DIR");
    if (!src) {
        print_message("OPSCHED_SOURCE_DIR unset (run through ctest): network files skipped\n");
        opsched_ctx_free(ctx);
        return;
    }
    char dir[] = "/tmp/opsched_sweep_net_XXXXXX", path[128], text[256], cmd[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/m.onnx", dir);
    snprintf(cmd, sizeof(cmd), "cp '%s/tests/fuzz/corpus/conv_basic.onnx' '%s'", src, path);
    assert_int_equal(system(cmd), 0);
    snprintf(text, sizeof(text), "networks: ['%s']\n", path);
    spec = parse_ok(ctx, text);
    assert_int_equal(opsched_sweep_spec_num_configs(spec), 1);
    assert_int_equal(for_each_config(ctx, spec, 0, 1, NULL, NULL), 1);
    /* another model under the same name */
    snprintf(cmd, sizeof(cmd), "cp '%s/tests/fuzz/corpus/batchnorm.onnx' '%s'", src, path);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(opsched_sweep_iter_create(ctx, spec, 0, 1, &it), OPSCHED_OK);
    assert_int_equal(opsched_sweep_iter_next(it, &c), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "differ from those found when the spec was loaded"));
    opsched_sweep_iter_free(it);
    /* gone */
    unlink(path);
    assert_int_equal(opsched_sweep_iter_create(ctx, spec, 0, 1, &it), OPSCHED_OK);
    assert_int_not_equal(opsched_sweep_iter_next(it, &c), OPSCHED_OK);
    assert_null(c);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "network"));
    opsched_sweep_iter_free(it);
    opsched_sweep_spec_free(spec);
    rmdir(dir);
    opsched_ctx_free(ctx);
}

/* ---- real sweeps on the CPU --------------------------------------------- */

typedef struct tmpdb {
    char dir[64];
    char path[96];
} tmpdb;

static void tmpdb_make(tmpdb *t)
{
    snprintf(t->dir, sizeof(t->dir), "/tmp/opsched_sweep_XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    snprintf(t->path, sizeof(t->path), "%s/results.db", t->dir);
}

static void tmpdb_remove(tmpdb *t)
{
    const char *suffix[] = {"", "-wal", "-shm", "-journal"};
    char p[128];
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof(p), "%s%s", t->path, suffix[i]);
        unlink(p);
    }
    rmdir(t->dir);
}

static int have_cpu(opsched_ctx *ctx)
{
    int n = 0;
    if (opsched_device_count(ctx, "cpu", &n) != OPSCHED_OK || n == 0) {
        opsched_ctx_clear_error(ctx);
        print_message("SKIP: no cpu device in this build\n");
        return 0;
    }
    return 1;
}

static const char tiny_spec[] =
    "measure:\n"
    "  warmup_ms: 1\n"
    "  warmup_iters: 1\n"
    "  iters: 3\n"
    "  min_ms: 0\n"
    "  sample_us: 0\n"
    "sweeps:\n"
    "  - op: conv2d\n"
    "    params: {in_channels: [4, 8], out_channels: [4, 8], height: 8, kernel: [1, 3]}\n"
    "  - op: relu\n"
    "    params: {channels: [4, 8], height: 8}\n"
    "  - op: linear\n"
    "    params: {in_features: 16, out_features: [8, 16]}\n";

typedef struct stopper {
    volatile sig_atomic_t flag;
    int after;          /* set the flag once this many items are done */
    int calls;
    int64_t last_done;
    int consistent;     /* cleared on a bad report; checked on the test's thread */
} stopper;

static void on_progress(const opsched_sweep_progress *p, void *user)
{
    stopper *s = user;
    s->calls++;
    if (p->done < s->last_done || p->done + p->skipped > p->total) s->consistent = 0;
    s->last_done = p->done;
    if (s->after > 0 && p->done >= s->after) s->flag = 1;
}

static opsched_store_summary summary_of(opsched_ctx *ctx, const char *path)
{
    opsched_store *store = NULL;
    opsched_store_summary s;
    assert_int_equal(opsched_store_open(ctx, path, OPSCHED_STORE_READ_WRITE, &store), OPSCHED_OK);
    assert_int_equal(opsched_store_summary_get(store, &s), OPSCHED_OK);
    opsched_store_close(store);
    return s;
}

static void test_cpu_run_resume_and_stop(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    if (!have_cpu(ctx)) {
        opsched_ctx_free(ctx);
        return;
    }
    opsched_sweep_spec *spec = parse_ok(ctx, tiny_spec);
    int n = opsched_sweep_spec_num_configs(spec);
    assert_int_equal(n, 8 + 2 + 2);
    tmpdb t;
    tmpdb_make(&t);
    stopper sp = {.consistent = 1};
    opsched_sweep_options o;
    opsched_sweep_options_default(&o);
    o.backend = "cpu";
    o.db_path = t.path;
    o.command = "test_sweep";
    o.progress = on_progress;
    o.progress_user = &sp;
    o.stop = &sp.flag;
    opsched_sweep_result r;

    /* a full run */
    opsched_status st = opsched_sweep_run(ctx, spec, &o, &r);
    if (st != OPSCHED_OK) print_message("run: %s\n", opsched_ctx_last_error(ctx));
    assert_int_equal(st, OPSCHED_OK);
    assert_int_equal(r.total, n);
    assert_int_equal(r.measured, n);
    assert_int_equal(r.skipped, 0);
    assert_int_equal(r.remaining, 0);
    assert_int_equal(r.ok + r.unsupported + r.oom + r.errors, n);
    assert_int_equal(r.errors, 0);
    assert_true(r.run_id > 0);
    assert_int_equal(sp.calls, n + 1);
    assert_true(sp.consistent);
    opsched_store_summary s = summary_of(ctx, t.path);
    assert_int_equal(s.measurements, n);
    assert_int_equal(s.configs, n);
    assert_int_equal(s.runs, 1);

    /* resumed: everything is there */
    sp.last_done = 0;
    st = opsched_sweep_run(ctx, spec, &o, &r);
    assert_int_equal(st, OPSCHED_OK);
    assert_int_equal(r.skipped, n);
    assert_int_equal(r.measured, 0);
    s = summary_of(ctx, t.path);
    assert_int_equal(s.measurements, n);
    assert_int_equal(s.runs, 2);

    /* a second policy: the 8 convolutions only ("direct" is a conv algorithm) */
    const char *algos[] = {"heuristic", "direct"};
    o.algos = algos;
    o.n_algos = 2;
    sp.after = 2;
    sp.last_done = 0;
    st = opsched_sweep_run(ctx, spec, &o, &r);
    assert_int_equal(st, OPSCHED_ERR_INTERRUPTED);
    assert_int_equal(r.total, n + 8);
    assert_int_equal(r.skipped, n);
    assert_int_equal(r.measured, 2);
    assert_int_equal(r.remaining, 6);
    s = summary_of(ctx, t.path);
    assert_int_equal(s.measurements, n + 2);

    /* the re-run completes the rest */
    sp.after = 0;
    sp.flag = 0;
    sp.last_done = 0;
    st = opsched_sweep_run(ctx, spec, &o, &r);
    assert_int_equal(st, OPSCHED_OK);
    assert_int_equal(r.skipped, n + 2);
    assert_int_equal(r.measured, 6);
    s = summary_of(ctx, t.path);
    assert_int_equal(s.measurements, n + 8);
    assert_int_equal(s.configs, n);
    assert_true(sp.consistent);

    /* without resume, everything again */
    o.resume = 0;
    o.algos = NULL;
    o.n_algos = 0;
    sp.last_done = 0;
    st = opsched_sweep_run(ctx, spec, &o, &r);
    assert_int_equal(st, OPSCHED_OK);
    assert_int_equal(r.measured, n);
    opsched_sweep_spec_free(spec);
    tmpdb_remove(&t);
    opsched_ctx_free(ctx);
}

/* The same in batches of five configurations (three batches): the items
 * of each batch are planned when the last one is done, a stop request ends
 * the run within a batch, and what was not reached (later batches
 * included) is left; every item is measured once in all. */
static void test_cpu_batches(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    if (!have_cpu(ctx)) {
        opsched_ctx_free(ctx);
        return;
    }
    opsched_sweep_spec *spec = parse_ok(ctx, tiny_spec);
    int n = opsched_sweep_spec_num_configs(spec);
    tmpdb t;
    tmpdb_make(&t);
    stopper sp = {.consistent = 1};
    opsched_sweep_options o;
    opsched_sweep_options_default(&o);
    o.backend = "cpu";
    o.db_path = t.path;
    o.batch_size = 5;
    o.progress = on_progress;
    o.progress_user = &sp;
    o.stop = &sp.flag;
    opsched_sweep_result r;
    assert_int_equal(opsched_sweep_run(ctx, spec, &o, &r), OPSCHED_OK);
    assert_int_equal(r.total, n);
    assert_int_equal(r.measured, n);
    assert_int_equal(r.remaining, 0);
    assert_int_equal(sp.calls, n + 1);
    assert_int_equal(summary_of(ctx, t.path).measurements, n);

    /* resumed: each batch that skips says so (device -1) */
    sp.calls = 0;
    sp.last_done = 0;
    assert_int_equal(opsched_sweep_run(ctx, spec, &o, &r), OPSCHED_OK);
    assert_int_equal(r.skipped, n);
    assert_int_equal(r.measured, 0);
    assert_int_equal(sp.calls, 3);

    /* "direct" for the 8 convolutions: the first batch (five of them) has
     * five items to measure; stopped after two, the other batches are not
     * reached */
    const char *algos[] = {"heuristic", "direct"};
    o.algos = algos;
    o.n_algos = 2;
    sp.after = 2;
    sp.last_done = 0;
    assert_int_equal(opsched_sweep_run(ctx, spec, &o, &r), OPSCHED_ERR_INTERRUPTED);
    assert_int_equal(r.total, n + 8);
    assert_int_equal(r.skipped, 5);
    assert_int_equal(r.measured, 2);
    assert_int_equal(r.remaining, n + 8 - 5 - 2);
    assert_int_equal(summary_of(ctx, t.path).measurements, n + 2);
    sp.after = 0;
    sp.flag = 0;
    sp.last_done = 0;
    assert_int_equal(opsched_sweep_run(ctx, spec, &o, &r), OPSCHED_OK);
    assert_int_equal(r.skipped, n + 2);
    assert_int_equal(r.measured, 6);
    assert_int_equal(r.remaining, 0);
    assert_int_equal(summary_of(ctx, t.path).measurements, n + 8);
    assert_true(sp.consistent);

    o.batch_size = -1;
    assert_int_equal(opsched_sweep_run(ctx, spec, &o, &r), OPSCHED_ERR_INVALID_ARG);
    o.batch_size = 1000001;
    assert_int_equal(opsched_sweep_run(ctx, spec, &o, &r), OPSCHED_ERR_INVALID_ARG);
    opsched_sweep_spec_free(spec);
    tmpdb_remove(&t);
    opsched_ctx_free(ctx);
}

static void test_cpu_shards_and_bad_options(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    if (!have_cpu(ctx)) {
        opsched_ctx_free(ctx);
        return;
    }
    opsched_sweep_spec *spec = parse_ok(ctx, tiny_spec);
    int n = opsched_sweep_spec_num_configs(spec);
    tmpdb t;
    tmpdb_make(&t);
    opsched_sweep_options o;
    opsched_sweep_options_default(&o);
    o.backend = "cpu";
    o.db_path = t.path;
    opsched_sweep_result r;
    int64_t sum = 0;
    for (int k = 0; k < 3; k++) {
        o.shard_index = k;
        o.shard_count = 3;
        assert_int_equal(opsched_sweep_run(ctx, spec, &o, &r), OPSCHED_OK);
        assert_int_equal(r.skipped, 0); /* no shard measured another's item */
        sum += r.measured;
    }
    assert_int_equal(sum, n);
    assert_int_equal(summary_of(ctx, t.path).measurements, n);

    /* bad options fail before anything runs */
    o.shard_index = 3;
    assert_int_equal(opsched_sweep_run(ctx, spec, &o, &r), OPSCHED_ERR_INVALID_ARG);
    o.shard_index = 0;
    o.shard_count = 1;
    const int twice[] = {0, 0};
    o.devices = twice;
    o.n_devices = 2;
    assert_int_equal(opsched_sweep_run(ctx, spec, &o, &r), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "listed twice"));
    const int missing[] = {7};
    o.devices = missing;
    o.n_devices = 1;
    assert_int_equal(opsched_sweep_run(ctx, spec, &o, &r), OPSCHED_ERR_NOT_FOUND);
    o.devices = NULL;
    o.n_devices = 0;
    const char *bad[] = {"no_such_algo"};
    o.algos = bad;
    o.n_algos = 1;
    assert_int_equal(opsched_sweep_run(ctx, spec, &o, &r), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "no_such_algo"));
    o.algos = NULL;
    o.n_algos = 0;
    o.backend = "no_such_backend";
    assert_int_not_equal(opsched_sweep_run(ctx, spec, &o, &r), OPSCHED_OK);
    assert_int_equal(summary_of(ctx, t.path).runs, 3); /* none of these recorded a run */
    o.db_path = NULL;
    assert_int_equal(opsched_sweep_run(ctx, spec, &o, &r), OPSCHED_ERR_INVALID_ARG);
    opsched_sweep_spec_free(spec);
    tmpdb_remove(&t);
    opsched_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_sampling),
        cmocka_unit_test(test_grid_lists_filters),
        cmocka_unit_test(test_grid_ranges_sweeps_limit_duplicates),
        cmocka_unit_test(test_filter_arithmetic),
        cmocka_unit_test(test_filter_overflow),
        cmocka_unit_test(test_number_ranges),
        cmocka_unit_test(test_work_limits),
        cmocka_unit_test(test_impossible_combinations_counted),
        cmocka_unit_test(test_networks_from_zoo),
        cmocka_unit_test(test_errors_name_file_and_line),
        cmocka_unit_test(test_load_file_and_default),
        cmocka_unit_test(test_shards_cover_each_config_once),
        cmocka_unit_test(test_shard_ties_ordered_by_signature),
        cmocka_unit_test(test_iter_matches_materialised),
        cmocka_unit_test(test_iter_errors),
        cmocka_unit_test(test_cpu_run_resume_and_stop),
        cmocka_unit_test(test_cpu_batches),
        cmocka_unit_test(test_cpu_shards_and_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
