/*
 * test_sweep_model.c - sweeps for prediction: `fuse: true` networks
 * entries (a convolution and the Relu after it as one fused
 * configuration), `opsched sweep --for-model` measuring what a prediction
 * of a network lacks until every layer is exact (CPU backend, a small input),
 * resuming with nothing left, and `opsched sweep --adaptive` rounds on a
 * small grid.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "opsched/opsched.h"
#include "opsched/predict.h"
#include "opsched/sweep.h"

typedef struct fixture {
    char dir[64];
    char db[128];
    opsched_ctx *ctx;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    if (!fx) return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/opsched_sweepm_XXXXXX");
    if (!mkdtemp(fx->dir) || opsched_ctx_create(&fx->ctx) != OPSCHED_OK) {
        free(fx);
        return -1;
    }
    snprintf(fx->db, sizeof(fx->db), "%s/m.db", fx->dir);
    *state = fx;
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

static opsched_sweep_spec *parse(fixture *fx, const char *text)
{
    opsched_sweep_spec *s = NULL;
    opsched_status st = opsched_sweep_spec_parse(fx->ctx, text, strlen(text), "test", &s);
    if (st != OPSCHED_OK) fprintf(stderr, "%s\n", opsched_ctx_last_error(fx->ctx));
    assert_int_equal(st, OPSCHED_OK);
    return s;
}

/* Configurations of s with node 0 of op and this fusion; every fused
 * one is checked to be a convolution and its Relu as the executor runs
 * them. */
static int count_op(fixture *fx, const opsched_sweep_spec *s, opsched_op_kind op, int fused)
{
    opsched_sweep_iter *it = NULL;
    const opsched_sweep_config *c = NULL;
    int n = 0;
    assert_int_equal(opsched_sweep_iter_create(fx->ctx, s, 0, 1, &it), OPSCHED_OK);
    while (opsched_sweep_iter_next(it, &c) == OPSCHED_OK && c) {
        const opsched_graph *g = c->graph;
        if (c->fused) {
            assert_int_equal(opsched_graph_num_nodes(g), 2);
            const opsched_node *conv = opsched_graph_node(g, 0), *relu = opsched_graph_node(g, 1);
            assert_int_equal(relu->op, OPSCHED_OP_RELU);
            assert_int_equal(relu->inputs[0], conv->outputs[0]);
            /* Only the Relu's output is the graph's: what lets a backend fold it. */
            assert_int_equal(opsched_graph_num_outputs(g), 1);
            assert_int_equal(opsched_graph_output(g, 0), relu->outputs[0]);
        }
        if (opsched_graph_node(g, 0)->op == op && c->fused == fused) n++;
    }
    assert_null(c);
    opsched_sweep_iter_free(it);
    return n;
}

static void test_fuse_entries(void **state)
{
    fixture *fx = *state;
    opsched_sweep_spec *plain = parse(fx, "networks: squeezenet1_1\nsizes: 64\n");
    opsched_sweep_spec *fused = parse(fx, "networks: squeezenet1_1\nsizes: 64\nfuse: true\n");
    /* Every convolution of SqueezeNet is followed by its Relu: fused, the
     * Relus run nothing and are not configurations of their own. */
    assert_true(count_op(fx, plain, OPSCHED_OP_RELU, 0) > 0);
    assert_int_equal(count_op(fx, plain, OPSCHED_OP_CONV, 1), 0);
    assert_int_equal(count_op(fx, fused, OPSCHED_OP_RELU, 0), 0);
    assert_int_equal(count_op(fx, fused, OPSCHED_OP_CONV, 0), 0);
    assert_int_equal(count_op(fx, fused, OPSCHED_OP_CONV, 1), count_op(fx, plain, OPSCHED_OP_CONV, 0));
    /* A fused and a plain configuration of one convolution are two items. */
    opsched_sweep_spec *both = parse(fx, "sweeps:\n"
                                         "  - {networks: squeezenet1_1, sizes: 64}\n"
                                         "  - {networks: squeezenet1_1, sizes: 64, fuse: true}\n");
    assert_int_equal(opsched_sweep_spec_num_configs(both),
                     opsched_sweep_spec_num_configs(plain) + count_op(fx, fused, OPSCHED_OP_CONV, 1));
    opsched_sweep_spec_free(plain);
    opsched_sweep_spec_free(fused);
    opsched_sweep_spec_free(both);
}

static int have_cpu(fixture *fx)
{
    int n = 0;
    if (!getenv("OPSCHED_BIN")) {
        print_message("OPSCHED_BIN unset (run through ctest): skipped\n");
        return 0;
    }
    if (opsched_device_count(fx->ctx, "cpu", &n) != OPSCHED_OK || n == 0) {
        print_message("no CPU backend: skipped\n");
        return 0;
    }
    return 1;
}

static int run_tool(const char *args, char *out, size_t size)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", getenv("OPSCHED_BIN"), args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    char sink[4096];
    while (fread(sink, 1, sizeof(sink), p) > 0) {
    }
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

#define QUICK "--backend cpu --math fp32 --iters 2 --warmup-ms 1 --warmup-iters 1 --sample-us 20"

static void test_for_model(void **state)
{
    fixture *fx = *state;
    if (!have_cpu(fx)) skip();
    char args[512], out[8192];
    snprintf(args, sizeof(args), "sweep --for-model squeezenet1_1 --input-size 32 --db '%s' " QUICK,
             fx->db);
    int rc = run_tool(args, out, sizeof(out));
    if (rc != 0) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "0 already in"));
    /* Again: nothing is missing. */
    rc = run_tool(args, out, sizeof(out));
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "0 measured"));

    /* Every layer of the network at that size is now an exact prediction,
     * the fused convolutions included. */
    opsched_predictor_options po;
    opsched_predictor_options_default(&po);
    po.math = OPSCHED_MATH_FP32;
    po.train = 0;
    opsched_predictor *p = NULL;
    opsched_ctx_set_log(fx->ctx, NULL, NULL, OPSCHED_LOG_ERROR);
    assert_int_equal(opsched_predictor_open(fx->ctx, fx->db, &po, &p), OPSCHED_OK);
    opsched_zoo_options zo = {.batch = 1, .height = 32};
    opsched_graph *g = NULL;
    assert_int_equal(opsched_zoo_build(fx->ctx, "squeezenet1_1", &zo, &g), OPSCHED_OK);
    opsched_predict_options o;
    opsched_predict_options_default(&o);
    opsched_network_prediction *r = NULL;
    assert_int_equal(opsched_predict_network(p, g, &o, &r), OPSCHED_OK);
    assert_true(r->launches > 0);
    assert_int_equal(r->n_by_source[OPSCHED_SOURCE_EXACT], r->launches);
    int fused = 0;
    for (int i = 0; i < r->n_layers; i++) fused += r->layers[i].fused_relu;
    assert_true(fused > 0);
    assert_float_equal(r->coverage_time, 1.0, 1e-9);
    opsched_network_prediction_free(r);
    opsched_graph_free(g);
    opsched_predictor_free(p);

    /* Usage errors. */
    assert_int_equal(run_tool("sweep --for-model squeezenet1_1 --input-size abc --db x.db", out,
                              sizeof(out)),
                     2);
    assert_non_null(strstr(out, "--input-size wants H, HxW"));
    assert_int_equal(run_tool("sweep --default --batch 2 --db x.db", out, sizeof(out)), 2);
    assert_int_equal(run_tool("sweep --for-model squeezenet1_1 --default --db x.db", out,
                              sizeof(out)),
                     2);
}

static void test_adaptive(void **state)
{
    fixture *fx = *state;
    if (!have_cpu(fx)) skip();
    char spec[160], args[768], out[16384];
    snprintf(spec, sizeof(spec), "%s/grid.yml", fx->dir);
    FILE *f = fopen(spec, "w");
    assert_non_null(f);
    fputs("op: conv2d\nparams:\n  batch: [1, 2]\n  in_channels: [8, 16, 32]\n"
          "  out_channels: [16, 32]\n  height: [8, 16]\n  kernel: 3\n",
          f);
    fclose(f);
    snprintf(args, sizeof(args), "sweep '%s' --db '%s' " QUICK, spec, fx->db);
    assert_int_equal(run_tool(args, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "24 measured"));

    /* Two rounds: train, measure what is near the worst held-out ones,
     * train again.  A target no model reaches keeps it going. */
    snprintf(args, sizeof(args),
             "sweep --adaptive --db '%s' --target-error 0.001 --max-rounds 2 --per-round 6 "
             "--rounds 10 --folds 2 " QUICK,
             fx->db);
    int rc = run_tool(args, out, sizeof(out));
    if (rc != 0) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "round 1: 24 configurations (5 held out)"));
    assert_non_null(strstr(out, "6 new configurations near"));
    assert_non_null(strstr(out, "measured 6 (6 ok"));
    assert_non_null(strstr(out, "round 2: 30 configurations"));
    assert_non_null(strstr(out, "stopped: the last round (--max-rounds)"));

    /* A target every model meets ends it at once. */
    snprintf(args, sizeof(args),
             "sweep --adaptive --db '%s' --target-error 1000 --rounds 10 --folds 2 " QUICK,
             fx->db);
    rc = run_tool(args, out, sizeof(out));
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "stopped: the CV error is under the target"));
    assert_null(strstr(out, "new configurations"));

    assert_int_equal(run_tool("sweep --adaptive --target-error 5", out, sizeof(out)), 2);
    assert_non_null(strstr(out, "--adaptive needs --db"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fuse_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_for_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adaptive, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
