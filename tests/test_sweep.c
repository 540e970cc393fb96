/*
 * test_sweep.c - sweep specs (grids with lists, ranges and filters;
 * networks from the zoo; errors with their line), the shard split, and
 * real sweeps on the CPU backend into a temporary database: a full run, a
 * resumed run that skips everything, and a run stopped after two items
 * whose re-run completes the rest.
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
    assert_int_equal(m->plan.math, OPSCHED_MATH_TF32);
    assert_int_equal(m->cache, OPSCHED_CACHE_COLD);
    assert_int_equal(opsched_sweep_spec_num_algos(spec), 2);
    assert_string_equal(opsched_sweep_spec_algo(spec, 1), "find");
    /* the first parameter varies slowest: batch 1 comes first */
    const opsched_graph *g = opsched_sweep_spec_config(spec, 0);
    const opsched_node *n = opsched_graph_node(g, 0);
    assert_int_equal(n->op, OPSCHED_OP_CONV);
    const opsched_tensor *x = opsched_graph_tensor(g, n->inputs[0]);
    assert_int_equal(x->shape.d[0], 1);
    assert_int_equal(x->shape.d[2], 14);
    assert_int_equal(x->shape.d[3], 14);
    assert_int_equal(x->dtype, OPSCHED_F32);
    for (int i = 0; i < opsched_sweep_spec_num_configs(spec); i++) {
        g = opsched_sweep_spec_config(spec, i);
        n = opsched_graph_node(g, 0);
        int64_t cin = opsched_graph_tensor(g, n->inputs[0])->shape.d[1];
        int64_t cout = opsched_graph_tensor(g, n->outputs[0])->shape.d[1];
        assert_true(cout >= cin && cin < 64);
    }
    assert_null(opsched_sweep_spec_config(spec, 10));
    opsched_sweep_spec_free(spec);
    opsched_ctx_free(ctx);
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
    const opsched_graph *g = opsched_sweep_spec_config(spec, 17);
    const opsched_tensor *x = opsched_graph_tensor(g, opsched_graph_node(g, 0)->inputs[0]);
    assert_int_equal(x->shape.d[1], 16);
    assert_int_equal(x->shape.d[3], 4);
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
    /* distinct configurations */
    parse_fails(ctx, "op: relu\nparams:\n  batch: {from: 1, to: 101, step: 1}\n"
                     "  channels: {from: 1, to: 1000, step: 1}\n", OPSCHED_ERR_INVALID_ARG,
                "spec.yml: more than 100000 distinct configurations, the limit of a spec");
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
    int n = opsched_sweep_spec_num_configs(spec), convs = 0, pools = 0, batch2 = 0;
    assert_true(n > 20);
    for (int i = 0; i < n; i++) {
        const opsched_graph *g = opsched_sweep_spec_config(spec, i);
        assert_int_equal(opsched_graph_num_nodes(g), 1);
        const opsched_node *node = opsched_graph_node(g, 0);
        convs += node->op == OPSCHED_OP_CONV;
        pools += node->op == OPSCHED_OP_MAXPOOL;
        batch2 += opsched_graph_tensor(g, node->inputs[0])->shape.d[0] == 2;
    }
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
    int n = opsched_sweep_spec_num_configs(sa);
    assert_int_equal(n, 36);
    assert_int_equal(opsched_sweep_spec_num_configs(sb), n);
    const int counts[] = {1, 2, 3, 7, 36, 50};
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        int shards = counts[k], per[64] = {0};
        for (int i = 0; i < n; i++) {
            int s = opsched_sweep_spec_shard_of(sa, i, shards);
            assert_true(s >= 0 && s < shards);
            per[s]++;
            /* the same configuration in the other order: the same shard */
            char sig_a[512], sig_b[512];
            assert_int_equal(opsched_node_signature(opsched_sweep_spec_config(sa, i), 0, sig_a,
                                                    sizeof(sig_a)), OPSCHED_OK);
            int found = 0;
            for (int j = 0; j < n; j++) {
                assert_int_equal(opsched_node_signature(opsched_sweep_spec_config(sb, j), 0, sig_b,
                                                        sizeof(sig_b)), OPSCHED_OK);
                if (strcmp(sig_a, sig_b) != 0) continue;
                found++;
                assert_int_equal(opsched_sweep_spec_shard_of(sb, j, shards), s);
            }
            assert_int_equal(found, 1);
        }
        int total = 0;
        for (int s = 0; s < shards; s++) {
            total += per[s];
            /* round robin over the hash order: sizes differ by at most one */
            assert_true(per[s] >= n / shards && per[s] <= n / shards + 1);
        }
        assert_int_equal(total, n);
    }
    opsched_sweep_spec_free(sa);
    opsched_sweep_spec_free(sb);
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
        cmocka_unit_test(test_cpu_run_resume_and_stop),
        cmocka_unit_test(test_cpu_shards_and_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
