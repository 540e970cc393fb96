/*
 * test_exec.c - the executor running the sequential schedule (no schedule
 * given) on the CPU backend: whole graphs against the host reference run
 * node by node on the same weights (a hand-built graph with a branch, a
 * concat, an add and a view; four zoo networks), the memory plan (views
 * alias, lifetimes counted in launches on one stream, the arena against
 * the sequential peak for every zoo network), layer-timed and host-timed
 * runs, capture where the backend has no graphs, and forced convolution
 * algorithms with and without fallback.
 *
 * Schedules on several streams are test_sched_exec.c; the CUDA side (math
 * modes, capture and replay) is test_exec_gpu.c.
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

#include "core/half.h"
#include "exec/exec_impl.h"
#include "opsched/opsched.h"
#include "support/netref.h"
#include "support/rng.h"

static struct {
    opsched_ctx *ctx;
    opsched_device *cpu; /* NULL: no CPU backend in this build, every test skips */
} env;

#define SKIP_WITHOUT_CPU()                                                                         \
    do {                                                                                           \
        if (!env.cpu) {                                                                            \
            print_message("SKIP: no cpu device\n");                                                \
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

/* ---- graphs ------------------------------------------------------------- */

/* A 3x3 convolution with bias, stride 1, padded to keep the size. */
static opsched_conv_desc conv3x3(int64_t out_channels)
{
    opsched_conv_desc d = {.out_channels = out_channels,
                           .kernel_h = 3,
                           .kernel_w = 3,
                           .stride_h = 1,
                           .stride_w = 1,
                           .pad_h = 1,
                           .pad_w = 1,
                           .bias = 1};
    return d;
}

/* x[1,3,8,8] -> conv1 -> relu1 -> {convA 1x1, convB 3x3} -> add -> concat
 * with relu1 -> maxpool -> flatten -> fc[10].  Outputs: fc, and the add
 * (alive to the end while everything after it runs). */
static opsched_graph *small_graph(void)
{
    opsched_graph *g = NULL;
    opsched_shape xs = {4, {1, 3, 8, 8}};
    int x, c1, r1, a, b, s, cat, p, f, fc;
    CHECK(opsched_graph_create(env.ctx, "small", &g));
    CHECK(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x));
    opsched_conv_desc d3 = conv3x3(4);
    opsched_conv_desc d1 = {
        .out_channels = 4, .kernel_h = 1, .kernel_w = 1, .stride_h = 1, .stride_w = 1, .bias = 1};
    CHECK(opsched_build_conv(g, "conv1", x, &d3, &c1));
    CHECK(opsched_build_unary(g, "relu1", OPSCHED_OP_RELU, NULL, c1, &r1));
    CHECK(opsched_build_conv(g, "convA", r1, &d1, &a));
    CHECK(opsched_build_conv(g, "convB", r1, &d3, &b));
    CHECK(opsched_build_binary(g, "add", OPSCHED_OP_ADD, a, b, &s));
    int parts[2] = {s, r1};
    CHECK(opsched_build_concat(g, "concat", parts, 2, 1, &cat));
    CHECK(opsched_build_pool(g, "pool", OPSCHED_OP_MAXPOOL, cat, 2, 2, 0, 0, 0, &p));
    CHECK(opsched_build_flatten(g, "flatten", p, 1, &f));
    CHECK(opsched_build_linear(g, "fc", f, 10, 1, &fc));
    CHECK(opsched_graph_mark_output(g, fc));
    CHECK(opsched_graph_mark_output(g, s));
    assert_int_equal(netref_set_weights(g, 11), 0);
    return g;
}

/* A zoo network at batch 1 with BN folded; size 0 is the model's own. */
static opsched_graph *zoo(const char *name, int64_t size)
{
    opsched_graph *g = NULL;
    opsched_zoo_options zo = {.batch = 1, .height = size, .fold_bn = 1};
    CHECK(opsched_zoo_build(env.ctx, name, &zo, &g));
    return g;
}

static float *random_input(const opsched_graph *g, int i, uint64_t seed, size_t *n)
{
    const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_input(g, i));
    *n = (size_t)opsched_shape_numel(&t->shape);
    float *v = malloc(sizeof(float) * *n);
    assert_non_null(v);
    test_rng r;
    test_rng_seed(&r, seed);
    for (size_t k = 0; k < *n; k++)
        v[k] = (float)test_rng_uniform(&r, -1, 1);
    return v;
}

/* Runs g on the CPU executor (opts) and on the reference; every output
 * must agree within tol. */
static void compare_with_reference(opsched_graph *g, const opsched_exec_options *opts, double tol)
{
    size_t n = 0;
    float *x = random_input(g, 0, 5, &n);
    const float *ins[1] = {x};
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, opts, &ex));
    CHECK(opsched_executor_set_input(ex, 0, x, n));
    CHECK(opsched_executor_run(ex));
    CHECK(opsched_device_sync(env.cpu));
    float **ref = netref_run(g, ins);
    assert_non_null(ref);
    for (int o = 0; o < opsched_graph_num_outputs(g); o++) {
        size_t m = opsched_executor_output_numel(ex, o);
        assert_true(m > 0);
        float *y = malloc(sizeof(float) * m);
        assert_non_null(y);
        CHECK(opsched_executor_get_output(ex, o, y, m));
        double err = netref_rel_l2(y, ref[o], m);
        print_message("%s output %d: %zu values, relative L2 error %.3g\n", opsched_graph_name(g),
                      o, m, err);
        assert_true(err < tol);
        free(y);
        free(ref[o]);
    }
    free(ref);
    free(x);
    opsched_executor_free(ex);
}

/* ---- whole graphs against the reference --------------------------------- */

static void test_small_graph(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = small_graph();
    compare_with_reference(g, NULL, 1e-5);
    opsched_graph_free(g);
}

/* A Relu fused into conv1 runs nothing of its own and aliases its output. */
static void test_fused_relu(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = small_graph();
    opsched_exec_options o = {.plan = {.fuse_activation = 1}};
    compare_with_reference(g, &o, 1e-5);
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, &o, &ex));
    const opsched_layer_info *relu = opsched_executor_layer(ex, 1);
    assert_non_null(relu);
    assert_string_equal(relu->algo, "fused");
    assert_int_equal(relu->role, OPSCHED_ROLE_FUSED);
    opsched_executor_free(ex);
    opsched_graph_free(g);
}

/* Every epilogue activation after a convolution: fused (the activation
 * runs nothing of its own) and equal to the reference; with fusion off,
 * the same values from two launches.  A Sigmoid read by two nodes stays
 * its own launch. */
static void test_fused_activations(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    struct {
        opsched_op_kind op;
        opsched_unary_fn fn;
        float p0, p1;
    } acts[] = {
        {OPSCHED_OP_RELU, 0, 0, 0},
        {OPSCHED_OP_CLIP, 0, 0.0f, 6.0f},
        {OPSCHED_OP_CLIP, 0, -0.5f, 0.25f},
        {OPSCHED_OP_SIGMOID, 0, 0, 0},
        {OPSCHED_OP_TANH, 0, 0, 0},
        {OPSCHED_OP_GELU, 0, 0, 0},
        {OPSCHED_OP_GELU, 0, 1, 0},
        {OPSCHED_OP_HARDSIGMOID, 0, 0.2f, 0.5f},
        {OPSCHED_OP_HARDSWISH, 0, 0, 0},
        {OPSCHED_OP_UNARY, OPSCHED_UNARY_SWISH, 1.0f, 0},
        {OPSCHED_OP_UNARY, OPSCHED_UNARY_LEAKY_RELU, 0.1f, 0},
        {OPSCHED_OP_UNARY, OPSCHED_UNARY_ELU, 0.7f, 0},
        {OPSCHED_OP_UNARY, OPSCHED_UNARY_SOFTPLUS, 0, 0},
        {OPSCHED_OP_UNARY, OPSCHED_UNARY_MISH, 0, 0},
    };
    for (size_t k = 0; k < sizeof(acts) / sizeof(acts[0]); k++) {
        opsched_graph *g = NULL;
        opsched_shape xs = {4, {1, 3, 8, 8}};
        int x, c, y, z;
        CHECK(opsched_graph_create(env.ctx, "act", &g));
        CHECK(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x));
        opsched_conv_desc d3 = conv3x3(4);
        CHECK(opsched_build_conv(g, "conv", x, &d3, &c));
        opsched_op_attr a;
        memset(&a, 0, sizeof(a));
        if (acts[k].op == OPSCHED_OP_CLIP) {
            a.clip.min = acts[k].p0;
            a.clip.max = acts[k].p1;
        } else if (acts[k].op == OPSCHED_OP_GELU) {
            a.gelu.tanh_approx = acts[k].p0 != 0;
        } else if (acts[k].op == OPSCHED_OP_HARDSIGMOID) {
            a.hardsigmoid.alpha = acts[k].p0;
            a.hardsigmoid.beta = acts[k].p1;
        } else if (acts[k].op == OPSCHED_OP_UNARY) {
            a.unary.fn = acts[k].fn;
            a.unary.alpha = acts[k].p0;
        }
        CHECK(opsched_build_unary(g, "act", acts[k].op, &a, c, &y));
        CHECK(opsched_graph_mark_output(g, y));
        assert_int_equal(netref_set_weights(g, 40 + k), 0);
        assert_int_equal(opsched_conv_epilogue(g, 0), 1);
        opsched_exec_options on = {.plan = {.fuse_activation = 1}}, off = {0};
        compare_with_reference(g, &on, 1e-5);
        compare_with_reference(g, &off, 1e-5);
        opsched_executor *ex = NULL;
        CHECK(opsched_executor_create(env.cpu, g, NULL, &on, &ex));
        const opsched_layer_info *li = opsched_executor_layer(ex, 1);
        assert_non_null(li);
        print_message("conv + %s: %s\n", opsched_node_op_name(opsched_graph_node(g, 1)), li->algo);
        assert_int_equal(li->role, OPSCHED_ROLE_FUSED);
        opsched_executor_free(ex);
        /* A second reader of the convolution's output: nothing fuses. */
        CHECK(opsched_build_binary(g, "add", OPSCHED_OP_ADD, c, y, &z));
        CHECK(opsched_graph_mark_output(g, z));
        assert_int_equal(opsched_conv_epilogue(g, 0), -1);
        CHECK(opsched_executor_create(env.cpu, g, NULL, &on, &ex));
        assert_int_not_equal(opsched_executor_layer(ex, 1)->role, OPSCHED_ROLE_FUSED);
        opsched_executor_free(ex);
        opsched_graph_free(g);
    }
}

/* Residual epilogues: an identity block (conv -> Add(x) -> Relu) and a
 * block whose Add joins two convolutions (in the sequential schedule the
 * later one adds the earlier one's output); the Adds and the Relu run
 * inside the convolutions' launches, against the reference with fusion on
 * and off; an Add that broadcasts is no residual. */
static void test_fused_residual(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = NULL;
    opsched_shape xs = {4, {2, 4, 6, 6}};
    int x, c1, r1, c2, a1, o1, c3, c4, o2;
    CHECK(opsched_graph_create(env.ctx, "residual", &g));
    CHECK(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x));
    opsched_conv_desc d4 = conv3x3(4), d8 = conv3x3(8);
    d8.kernel_h = d8.kernel_w = 1;
    d8.pad_h = d8.pad_w = 0;
    CHECK(opsched_build_conv(g, "conv1", x, &d4, &c1));                  /* node 0 */
    CHECK(opsched_build_unary(g, "relu1", OPSCHED_OP_RELU, NULL, c1, &r1)); /* 1 */
    CHECK(opsched_build_conv(g, "conv2", r1, &d4, &c2));                 /* 2 */
    CHECK(opsched_build_binary(g, "add1", OPSCHED_OP_ADD, c2, x, &a1));  /* 3 */
    CHECK(opsched_build_unary(g, "relu2", OPSCHED_OP_RELU, NULL, a1, &o1)); /* 4 */
    CHECK(opsched_build_conv(g, "conv3", o1, &d8, &c3));                 /* 5 */
    CHECK(opsched_build_conv(g, "conv4", o1, &d8, &c4));                 /* 6 */
    CHECK(opsched_build_binary(g, "add2", OPSCHED_OP_ADD, c3, c4, &o2)); /* 7 */
    CHECK(opsched_graph_mark_output(g, o2));
    assert_int_equal(netref_set_weights(g, 77), 0);
    opsched_conv_residual res;
    assert_int_equal(opsched_conv_residual_find(g, 2, &res), 1);
    assert_int_equal(res.add, 3);
    assert_int_equal(res.residual, x);
    assert_int_equal(res.act, 4);
    assert_int_equal(opsched_conv_residual_find(g, 0, &res), 0); /* read by a Relu */
    /* add2 joins two convolutions: each has the other's output as r */
    assert_int_equal(opsched_conv_residual_find(g, 5, &res), 1);
    assert_int_equal(res.add, 7);
    assert_int_equal(res.residual, c4);
    assert_int_equal(opsched_conv_residual_find(g, 6, &res), 1);
    assert_int_equal(res.add, 7);
    assert_int_equal(res.residual, c3);
    assert_int_equal(res.act, -1);
    opsched_exec_options on = {.plan = {.fuse_activation = 1}}, off = {0};
    compare_with_reference(g, &on, 1e-5);
    compare_with_reference(g, &off, 1e-5);
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, &on, &ex));
    const int fused[] = {1, 3, 4, 7};
    for (size_t k = 0; k < sizeof(fused) / sizeof(fused[0]); k++)
        assert_int_equal(opsched_executor_layer(ex, fused[k])->role, OPSCHED_ROLE_FUSED);
    opsched_exec_info info;
    CHECK(opsched_executor_info(ex, &info));
    assert_int_equal(info.n_launches, 4); /* the four convolutions */
    opsched_executor_free(ex);
    /* Ablated, the Adds run apart: add1 and relu2 as one chain, add2 alone. */
    opsched_exec_options ablated = on;
    ablated.plan.ablate = OPSCHED_ABLATE_RESIDUAL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, &ablated, &ex));
    CHECK(opsched_executor_info(ex, &info));
    assert_int_equal(info.n_launches, 6); /* relu1 stays the first convolution's epilogue */
    opsched_executor_free(ex);
    opsched_graph_free(g);

    /* An Add of a [1, C, 1, 1] tensor broadcasts: the convolution keeps it apart. */
    opsched_shape bs = {4, {1, 4, 1, 1}};
    int b, c, z;
    CHECK(opsched_graph_create(env.ctx, "broadcast", &g));
    CHECK(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x));
    CHECK(opsched_graph_add_tensor(g, "b", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &bs, &b));
    CHECK(opsched_build_conv(g, "conv", x, &d4, &c));
    CHECK(opsched_build_binary(g, "add", OPSCHED_OP_ADD, c, b, &z));
    CHECK(opsched_graph_mark_output(g, z));
    assert_int_equal(opsched_conv_residual_find(g, 0, &res), 0);
    opsched_graph_free(g);
}

/* Element-wise chains run as one launch: after a convolution, Add (a
 * [C, 1, 1] bias) -> Gelu -> Mul (a [1, C, 1, 1] scale, the running value
 * its second operand) -> Add (the input) -> Sigmoid, against the reference
 * with fusion on and off; with it on, the convolution and the chain are
 * the only launches. */
static void test_fused_chain(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_shape xs = {4, {2, 4, 6, 6}};
    opsched_graph *g = netref_chain_graph(env.ctx, &xs, 41);
    assert_non_null(g);
    opsched_exec_options on = {.plan = {.fuse_activation = 1}}, off = {0};
    compare_with_reference(g, &on, 1e-5);
    compare_with_reference(g, &off, 1e-5);
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, &on, &ex));
    for (int k = 2; k <= 5; k++)
        assert_int_equal(opsched_executor_layer(ex, k)->role, OPSCHED_ROLE_FUSED);
    assert_string_equal(opsched_executor_layer(ex, 1)->algo, "chain:5");
    opsched_exec_info info;
    CHECK(opsched_executor_info(ex, &info));
    assert_int_equal(info.n_launches, 2);
    opsched_executor_free(ex);
    /* Without fusion, or with chains ablated, every node launches. */
    opsched_exec_options ablated = on;
    ablated.plan.ablate = OPSCHED_ABLATE_CHAINS;
    const opsched_exec_options *apart[2] = {&off, &ablated};
    for (int k = 0; k < 2; k++) {
        CHECK(opsched_executor_create(env.cpu, g, NULL, apart[k], &ex));
        CHECK(opsched_executor_info(ex, &info));
        assert_int_equal(info.n_launches, 6);
        opsched_executor_free(ex);
    }
    opsched_graph_free(g);
}

/* Runs of movement nodes as one strided gather: ShuffleNetV2's unit
 * against the reference with the runs on and ablated; with them on, each
 * Slice and the output's Reshape gather from the shuffle's input, the
 * shuffle's Reshapes and Transposes run nothing, and three launches go. */
static void test_movement_runs(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_shape xs = {4, {2, 8, 5, 3}};
    opsched_graph *g = netref_shuffle_graph(env.ctx, &xs, 43);
    assert_non_null(g);
    opsched_exec_options on = {.plan = {.fuse_activation = 1}}, ablated = on, written = on;
    ablated.plan.ablate = OPSCHED_ABLATE_MOVEMENT;
    written.plan.ablate = OPSCHED_ABLATE_CONCAT_GATHER;
    compare_with_reference(g, &on, 1e-5);
    compare_with_reference(g, &ablated, 1e-5);
    compare_with_reference(g, &written, 1e-5);
    assert_int_equal(opsched_move_concat(g, 2), -1); /* the first shuffle reads the Relu */
    int cat = -1;
    for (int i = 0; i < opsched_graph_num_nodes(g); i++)
        if (opsched_graph_node(g, i)->op == OPSCHED_OP_CONCAT) cat = i;
    assert_true(cat > 0);
    assert_int_equal(opsched_move_concat(g, cat + 1), cat);
    int role[64];
    assert_true(opsched_graph_num_nodes(g) <= 64);
    assert_true(opsched_move_runs(g, NULL, role) > 0);
    assert_int_equal(opsched_move_concat_unread(g, role, cat), 1);
    assert_int_equal(opsched_move_concat_unread(g, role, 0), 0); /* not a Concat */
    role[cat + 1] = OPSCHED_MOVE_ALONE; /* a reader that runs: the Concat must be written */
    assert_int_equal(opsched_move_concat_unread(g, role, cat), 0);
    int launches[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        const opsched_exec_options *o = k == 0 ? &on : k == 1 ? &ablated : &written;
        opsched_executor *ex = NULL;
        CHECK(opsched_executor_create(env.cpu, g, NULL, o, &ex));
        opsched_exec_info info;
        CHECK(opsched_executor_info(ex, &info));
        launches[k] = info.n_launches;
        int gathers = 0, fused = 0, from_concat = 0;
        for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
            const opsched_layer_info *li = opsched_executor_layer(ex, i);
            gathers += strncmp(li->algo, "gather:", 7) == 0;
            from_concat += strstr(li->algo, "+concat") != NULL;
            fused += li->role == OPSCHED_ROLE_FUSED && strcmp(li->algo, "gathered") == 0;
        }
        print_message("  shuffle unit, movement runs %s: %d launches, %d gathers, %d nodes in "
                      "them; the Concat: %s\n",
                      k == 0 ? "on" : k == 1 ? "ablated" : "on, the Concat written",
                      info.n_launches, gathers, fused, opsched_executor_layer(ex, cat)->algo);
        assert_int_equal(gathers, k == 1 ? 0 : 3);
        /* the output's run gathers from the Concat's inputs: the Concat runs nothing */
        assert_int_equal(opsched_executor_layer(ex, cat)->role == OPSCHED_ROLE_FUSED, k == 0);
        assert_int_equal(from_concat, k == 0);
        opsched_executor_free(ex);
    }
    assert_true(launches[0] < launches[2]);
    assert_true(launches[2] < launches[1]);
    opsched_graph_free(g);
}

/* MobileNet's inverted residual block (Clip, HardSwish and Swish after
 * convolutions, a residual Add) against the reference with fusion on:
 * each activation and the residual taken by the convolution before it,
 * four launches for eight nodes. */
static void test_inverted_residual(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_shape xs = {4, {2, 6, 5, 4}};
    opsched_graph *g = netref_inverted_residual_graph(env.ctx, &xs, 41);
    assert_non_null(g);
    opsched_exec_options o = {.plan = {.fuse_activation = 1, .fuse_residual = 1}};
    compare_with_reference(g, &o, 1e-5);
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, &o, &ex));
    opsched_exec_info info;
    CHECK(opsched_executor_info(ex, &info));
    int fused = 0;
    for (int i = 0; i < opsched_graph_num_nodes(g); i++)
        fused += opsched_executor_layer(ex, i)->role == OPSCHED_ROLE_FUSED;
    print_message("  inverted residual: %d launches, %d nodes fused\n", info.n_launches, fused);
    assert_int_equal(fused, 4);
    assert_int_equal(info.n_launches, 4);
    opsched_executor_free(ex);
    opsched_graph_free(g);
}

/* The squeeze-and-excitation gate runs as one launch: two SE blocks (one
 * from GlobalAveragePool with biases and Swish and Sigmoid, one from
 * ReduceMean without biases, Relu and HardSigmoid) against the reference
 * with fusion on, off and ablated; with it on each gate and the Mul by it
 * are one launch, with `--ablate se-mul` each gate one launch beside its
 * Mul. */
static void test_fused_se(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_shape xs = {4, {2, 12, 5, 7}};
    opsched_graph *g = netref_se_graph(env.ctx, &xs, 3, 43);
    assert_non_null(g);
    opsched_se_gate se;
    assert_int_equal(opsched_se_gate_find(g, 0, &se), 1);
    assert_int_equal(se.n, 5);
    assert_int_equal(se.hidden, 3);
    assert_int_equal(opsched_se_gate_find(g, 6, &se), 1);
    assert_int_equal(se.sides[1], -1); /* no biases */
    assert_int_equal(se.sides[3], -1);
    assert_int_equal(opsched_se_gate_find(g, 1, &se), 0); /* not a mean */
    opsched_exec_options on = {.plan = {.fuse_activation = 1}}, off = {0};
    opsched_exec_options ablated = on;
    ablated.plan.ablate = OPSCHED_ABLATE_SE;
    compare_with_reference(g, &on, 1e-6);
    compare_with_reference(g, &off, 1e-6);
    compare_with_reference(g, &ablated, 1e-6);
    opsched_exec_options apart = on;
    apart.plan.ablate = OPSCHED_ABLATE_SE_MUL;
    compare_with_reference(g, &apart, 1e-6);
    assert_int_equal(opsched_se_gate_find(g, 0, &se), 1);
    assert_int_equal(se.mul, 5);
    assert_int_equal(opsched_se_gate_find(g, 6, &se), 1);
    assert_int_equal(se.mul, 11); /* Mul(s, x): either operand order */
    /* each gate and its multiply one launch */
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, &on, &ex));
    for (int k = 1; k <= 11; k++)
        if (k != 6) assert_int_equal(opsched_executor_layer(ex, k)->role, OPSCHED_ROLE_FUSED);
    assert_string_equal(opsched_executor_layer(ex, 0)->algo, "se:6");
    assert_string_equal(opsched_executor_layer(ex, 6)->algo, "se:6");
    opsched_exec_info info;
    CHECK(opsched_executor_info(ex, &info));
    assert_int_equal(info.n_launches, 2);
    opsched_executor_free(ex);
    /* the multiplies apart: a launch each beside the gates */
    CHECK(opsched_executor_create(env.cpu, g, NULL, &apart, &ex));
    for (int k = 1; k <= 10; k++)
        if (k != 5 && k != 6) assert_int_equal(opsched_executor_layer(ex, k)->role, OPSCHED_ROLE_FUSED);
    assert_string_equal(opsched_executor_layer(ex, 0)->algo, "se:5");
    CHECK(opsched_executor_info(ex, &info));
    assert_int_equal(info.n_launches, 4);
    opsched_executor_free(ex);
    CHECK(opsched_executor_create(env.cpu, g, NULL, &ablated, &ex));
    CHECK(opsched_executor_info(ex, &info));
    assert_int_equal(info.n_launches, 8); /* the convolutions take their activations */
    opsched_executor_free(ex);
    opsched_graph_free(g);
}

/* A MatMul's bias Add runs in its launch, with the activation or the
 * residual Add after it: products with a bias ([16], [1, 1, 8] as the
 * Add's first operand, [4]) and Relu, tanh Gelu, Sigmoid (on the CPU a
 * oneDNN post-op too) or a residual after them, and an Add of a
 * non-constant that stays apart, against the reference with fusion on,
 * off and ablated. */
static void test_fused_bias(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_shape xs = {3, {2, 5, 12}};
    opsched_graph *g = netref_bias_graph(env.ctx, &xs, 47);
    assert_non_null(g);
    opsched_matmul_bias mb;
    assert_int_equal(opsched_matmul_bias_find(g, 0, &mb), 1);
    assert_int_equal(mb.add, 1);
    assert_int_equal(mb.act, 2);
    assert_int_equal(opsched_matmul_bias_find(g, 3, &mb), 1);
    assert_int_equal(opsched_matmul_bias_find(g, 9, &mb), 0); /* not a constant */
    assert_int_equal(opsched_matmul_bias_find(g, 11, &mb), 1);
    assert_int_equal(mb.res_add, 13);
    assert_int_equal(mb.act, -1);
    opsched_exec_options on = {.plan = {.fuse_activation = 1}}, off = {0};
    opsched_exec_options ablated = on;
    ablated.plan.ablate = OPSCHED_ABLATE_BIAS;
    compare_with_reference(g, &on, 1e-5);
    compare_with_reference(g, &off, 1e-5);
    compare_with_reference(g, &ablated, 1e-5);
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, &on, &ex));
    const int fused[] = {1, 2, 4, 5, 7, 8, 12, 13}; /* oneDNN applies the Sigmoid too */
    for (size_t k = 0; k < sizeof(fused) / sizeof(fused[0]); k++)
        assert_int_equal(opsched_executor_layer(ex, fused[k])->role, OPSCHED_ROLE_FUSED);
    assert_int_equal(opsched_executor_layer(ex, 10)->role, OPSCHED_ROLE_LAUNCH);
    opsched_exec_info info;
    CHECK(opsched_executor_info(ex, &info));
    assert_int_equal(info.n_launches, 6); /* five products and the Add of node 10 */
    opsched_executor_free(ex);
    CHECK(opsched_executor_create(env.cpu, g, NULL, &ablated, &ex));
    CHECK(opsched_executor_info(ex, &info));
    assert_int_equal(info.n_launches, 10); /* each Add and what follows it a chain */
    opsched_executor_free(ex);
    opsched_graph_free(g);
}

/* The decisions for batch normalisations and for a residual Add behind a
 * Transpose, on the CPU backend: the activation after each normalisation
 * is its epilogue, the product finds the residual through the Transpose;
 * oneDNN runs neither inside (the activations and the Add launch), and
 * the values are the reference's either way. */
static void test_norm_act_and_transposed_residual(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_shape xs = {4, {2, 6, 5, 7}};
    opsched_graph *g = netref_norm_act_graph(env.ctx, &xs, 61);
    assert_non_null(g);
    assert_int_equal(opsched_node_epilogue(g, 0), 1);
    assert_int_equal(opsched_node_epilogue(g, 2), 3);
    assert_int_equal(opsched_conv_epilogue(g, 0), -1); /* not a convolution */
    assert_int_equal(opsched_node_epilogue(g, 1), -1);
    opsched_exec_options on = {.plan = {.fuse_activation = 1}}, off = {0};
    compare_with_reference(g, &on, 1e-5);
    compare_with_reference(g, &off, 1e-5);
    opsched_graph_free(g);

    g = netref_transposed_residual_graph(env.ctx, &xs, 67);
    assert_non_null(g);
    opsched_matmul_bias mb;
    assert_int_equal(opsched_matmul_bias_find(g, 1, &mb), 1);
    assert_int_equal(mb.add, 2);
    assert_int_equal(mb.tr, 3);
    assert_int_equal(mb.res_add, 4);
    assert_int_equal(mb.residual, opsched_graph_input(g, 0));
    compare_with_reference(g, &on, 1e-5);
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, &on, &ex));
    assert_int_equal(opsched_executor_layer(ex, 2)->role, OPSCHED_ROLE_FUSED); /* the bias */
    assert_int_equal(opsched_executor_layer(ex, 4)->role, OPSCHED_ROLE_LAUNCH);
    opsched_executor_free(ex);
    opsched_graph_free(g);
}

/* The roles the CPU backend's executor of g under o gives nodes[0..n). */
static void check_roles(const opsched_graph *g, const opsched_exec_options *o, const int *nodes,
                        int n, opsched_node_role role)
{
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, o, &ex));
    for (int k = 0; k < n; k++)
        assert_int_equal(opsched_executor_layer(ex, nodes[k])->role, role);
    opsched_executor_free(ex);
}

/* A Gemm's activation is its epilogue (opsched_node_epilogue) where the
 * Gemm's output has no other reader; the executor asks the backend for the
 * bias and the activation in the Gemm's launch, and the CPU backend, which
 * runs them apart (the activations launch), gives the reference's values
 * with fusion on and off. */
static void test_gemm_epilogue(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_shape xs = {2, {3, 96}};
    for (int shared = 0; shared < 2; shared++) {
        opsched_graph *g = netref_gemm_head_graph(env.ctx, &xs, shared, 29);
        assert_non_null(g);
        assert_int_equal(opsched_node_epilogue(g, 0), 1);
        assert_int_equal(opsched_node_epilogue(g, 2), shared ? -1 : 3);
        assert_int_equal(opsched_node_epilogue(g, 4), -1); /* a graph output */
        assert_int_equal(opsched_conv_epilogue(g, 0), -1); /* not a convolution */
        opsched_exec_options on = {.plan = {.fuse_activation = 1}}, off = {0};
        compare_with_reference(g, &on, 1e-5);
        compare_with_reference(g, &off, 1e-5);
        check_roles(g, &on, (const int[]){1, 3}, 2, OPSCHED_ROLE_LAUNCH);
        opsched_graph_free(g);
    }
}

/* The normalisation after a depthwise convolution: the pattern is found
 * through the Transpose to channels-last, with or without the norm's
 * bias, and not for a norm over more than the channels; the CPU backend
 * runs the norm on its own (its LayerNormalization launches), and the
 * values are the reference's with fusion on and off. */
static void test_conv_norm(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_shape xs = {4, {2, 12, 9, 11}};
    opsched_graph *g = netref_conv_norm_graph(env.ctx, &xs, 83);
    assert_non_null(g);
    opsched_conv_norm cn;
    assert_int_equal(opsched_conv_norm_find(g, 0, &cn), 1);
    assert_int_equal(cn.tr, 1);
    assert_int_equal(cn.norm, 2);
    assert_int_equal(cn.scale, opsched_graph_node(g, 2)->inputs[1]);
    assert_int_equal(cn.bias, opsched_graph_node(g, 2)->inputs[2]);
    assert_int_equal(opsched_conv_norm_find(g, 6, &cn), 1);
    assert_int_equal(cn.norm, 8);
    assert_int_equal(cn.bias, -1);
    assert_int_equal(opsched_conv_norm_find(g, 10, NULL), 0); /* over W and C */
    assert_int_equal(opsched_conv_norm_find(g, 3, NULL), 0);  /* not a convolution */
    assert_int_equal(opsched_conv_norm_find(g, 1, NULL), 0);
    opsched_exec_options on = {.plan = {.fuse_activation = 1}}, off = {0};
    compare_with_reference(g, &on, 1e-5);
    compare_with_reference(g, &off, 1e-5);
    check_roles(g, &on, (const int[]){2, 8}, 2, OPSCHED_ROLE_LAUNCH);
    opsched_graph_free(g);
}

/* A convolution's prologue activation: in MobileNet's inverted residual
 * the depthwise convolution reads the expansion's Relu6 (Clip), and the
 * projection reads the depthwise one's HardSwish; the widening reads the
 * residual Add (no activation), the expansion the graph's input.  An
 * activation with a second reader, or one after a batch normalisation
 * rather than a convolution, is none.  The CPU backend applies no
 * prologue: the activations stay their producers'. */
static void test_conv_prologue(void **state)
{
    (void)state;
    opsched_shape xs = {4, {2, 6, 5, 4}};
    opsched_graph *g = netref_inverted_residual_graph(env.ctx, &xs, 41);
    assert_non_null(g);
    opsched_conv_prologue cp;
    assert_int_equal(opsched_conv_prologue_find(g, 2, &cp), 1);
    assert_int_equal(cp.act, 1);
    assert_int_equal(cp.producer, 0);
    assert_int_equal(opsched_conv_prologue_find(g, 4, &cp), 1);
    assert_int_equal(cp.act, 3);
    assert_int_equal(cp.producer, 2);
    assert_int_equal(opsched_conv_prologue_find(g, 6, NULL), 0); /* reads the Add */
    assert_int_equal(opsched_conv_prologue_find(g, 0, NULL), 0); /* reads the input */
    assert_int_equal(opsched_conv_prologue_find(g, 1, NULL), 0); /* not a convolution */
    if (env.cpu) {
        opsched_exec_options o = {.plan = {.fuse_activation = 1, .fuse_residual = 1}};
        opsched_executor *ex = NULL;
        CHECK(opsched_executor_create(env.cpu, g, NULL, &o, &ex));
        assert_string_equal(opsched_executor_layer(ex, 1)->algo, "fused");
        opsched_executor_free(ex);
    }
    opsched_graph_free(g);

    /* the Relu has two readers (a convolution and the output) */
    opsched_graph *h = NULL;
    int x, t[4];
    opsched_conv_desc c1 = {.out_channels = 4, .kernel_h = 1, .kernel_w = 1, .stride_h = 1,
                            .stride_w = 1};
    opsched_conv_desc dw = {.out_channels = 4, .kernel_h = 3, .kernel_w = 3, .stride_h = 1,
                            .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 4};
    CHECK(opsched_graph_create(env.ctx, "two_readers", &h));
    CHECK(opsched_graph_add_tensor(h, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x));
    CHECK(opsched_build_conv(h, "c1", x, &c1, &t[0]));
    CHECK(opsched_build_unary(h, "relu", OPSCHED_OP_RELU, NULL, t[0], &t[1]));
    CHECK(opsched_build_conv(h, "dw", t[1], &dw, &t[2]));
    CHECK(opsched_graph_mark_output(h, t[1]));
    CHECK(opsched_graph_mark_output(h, t[2]));
    assert_int_equal(opsched_conv_prologue_find(h, 2, NULL), 0);
    /* after a batch normalisation */
    CHECK(opsched_build_batchnorm(h, "bn", t[2], 1e-5f, &t[3]));
    CHECK(opsched_build_unary(h, "relu2", OPSCHED_OP_RELU, NULL, t[3], &t[0]));
    CHECK(opsched_build_conv(h, "dw2", t[0], &dw, &t[1]));
    CHECK(opsched_graph_mark_output(h, t[1]));
    assert_int_equal(opsched_conv_prologue_find(h, 5, NULL), 0);
    opsched_graph_free(h);
}

/* A gated map's product (opsched_conv_gate_find): the 1x1 convolution
 * after each gate's multiply applies the gate itself, the Mul runs nothing
 * and its map is read in its place; against the reference with it, with
 * it ablated and with fusion off, and the pattern's edges. */
/* Sets ex's inputs (ins[k] of ns[k] values), runs it once and returns
 * output 0 (*m values, malloc'd); frees ex. */
static float *run_output(opsched_executor *ex, const float *const *ins, const size_t *ns,
                         int n_in, size_t *m)
{
    for (int k = 0; k < n_in; k++)
        CHECK(opsched_executor_set_input(ex, k, ins[k], ns[k]));
    CHECK(opsched_executor_run(ex));
    CHECK(opsched_device_sync(env.cpu));
    *m = opsched_executor_output_numel(ex, 0);
    float *y = malloc(sizeof(float) * *m);
    assert_non_null(y);
    CHECK(opsched_executor_get_output(ex, 0, y, *m));
    opsched_executor_free(ex);
    return y;
}

/* A batch normalisation that is its Concat's only reader reads the
 * Concat's inputs in place (opsched_norm_concat; DenseNet's layers): the
 * Concats run nothing, the output matches the reference and is the same,
 * byte for byte, with --ablate norm-concat; a Concat read twice, or along
 * another axis, is no such Concat. */
static void test_norm_concat(void **state)
{
    (void)state;
    opsched_shape xs = {4, {2, 8, 5, 6}};
    opsched_graph *g = netref_dense_graph(env.ctx, &xs, 4, 29);
    assert_non_null(g);
    assert_int_equal(opsched_norm_concat(g, 2), 1);
    assert_int_equal(opsched_norm_concat(g, 6), 5);
    assert_int_equal(opsched_norm_concat(g, 3), -1); /* a Relu */
    assert_int_equal(opsched_norm_concat(g, 1), -1); /* the Concat itself */
    if (env.cpu) {
        opsched_exec_options on = {.plan = {.fuse_activation = 1}}, off = {0};
        opsched_exec_options ablated = on;
        ablated.plan.ablate = OPSCHED_ABLATE_NORM_CONCAT;
        compare_with_reference(g, &on, 1e-5);
        compare_with_reference(g, &ablated, 1e-5);
        compare_with_reference(g, &off, 1e-5);
        size_t nx = 0;
        float *x = random_input(g, 0, 7, &nx), *y[2] = {NULL, NULL};
        size_t m = 0;
        for (int ab = 0; ab < 2; ab++) {
            opsched_executor *ex = NULL;
            CHECK(opsched_executor_create(env.cpu, g, NULL, ab ? &ablated : &on, &ex));
            for (int c = 1; c <= 5; c += 4) {
                const opsched_layer_info *l = opsched_executor_layer(ex, c);
                print_message("  %s: Concat '%s': %s\n", ab ? "ablated" : "deployed",
                              opsched_graph_node(g, c)->name, l->algo);
                assert_int_equal(l->role, ab ? OPSCHED_ROLE_LAUNCH : OPSCHED_ROLE_FUSED);
                if (!ab) assert_string_equal(l->algo, "gathered");
            }
            const float *ins[1] = {x};
            y[ab] = run_output(ex, ins, &nx, 1, &m);
        }
        assert_memory_equal(y[0], y[1], sizeof(float) * m);
        free(y[0]);
        free(y[1]);
        free(x);
    }
    opsched_graph_free(g);

    /* a Concat also a graph output, and one along the height */
    opsched_graph *h = NULL;
    int x, t[4];
    CHECK(opsched_graph_create(env.ctx, "cats", &h));
    CHECK(opsched_graph_add_tensor(h, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x));
    int two[2] = {x, x};
    CHECK(opsched_build_concat(h, "c", two, 2, 1, &t[0]));
    CHECK(opsched_build_batchnorm(h, "bn", t[0], 1e-5f, &t[1]));
    CHECK(opsched_graph_mark_output(h, t[0]));
    CHECK(opsched_graph_mark_output(h, t[1]));
    assert_int_equal(opsched_norm_concat(h, 1), -1);
    CHECK(opsched_build_concat(h, "ch", two, 2, 2, &t[2]));
    CHECK(opsched_build_batchnorm(h, "bnh", t[2], 1e-5f, &t[3]));
    CHECK(opsched_graph_mark_output(h, t[3]));
    assert_int_equal(opsched_norm_concat(h, 3), -1);
    opsched_graph_free(h);
}

static void test_gated_product(void **state)
{
    (void)state;
    opsched_shape xs = {4, {2, 12, 5, 7}};
    opsched_graph *g = netref_gated_product_graph(env.ctx, &xs, 3, 47);
    assert_non_null(g);
    opsched_conv_gate cg;
    assert_int_equal(opsched_conv_gate_find(g, 6, &cg), 1);
    assert_int_equal(cg.mul, 5);
    assert_int_equal(cg.x, opsched_graph_input(g, 0));
    assert_int_equal(cg.scale, opsched_graph_node(g, 4)->outputs[0]);
    assert_int_equal(opsched_conv_gate_find(g, 14, &cg), 1); /* Mul(s, y) */
    assert_int_equal(cg.mul, 13);
    assert_int_equal(cg.x, opsched_graph_node(g, 7)->outputs[0]);
    assert_int_equal(opsched_conv_gate_find(g, 1, NULL), 0); /* reads a mean */
    assert_int_equal(opsched_conv_gate_find(g, 7, NULL), 0); /* not a convolution */
    if (env.cpu) {
        opsched_exec_options on = {.plan = {.fuse_activation = 1}}, off = {0};
        opsched_exec_options ablated = on;
        ablated.plan.ablate = OPSCHED_ABLATE_GATE;
        compare_with_reference(g, &on, 1e-5);
        compare_with_reference(g, &ablated, 1e-5);
        compare_with_reference(g, &off, 1e-5);
        for (int ab = 0; ab < 2; ab++) {
            opsched_executor *ex = NULL;
            CHECK(opsched_executor_create(env.cpu, g, NULL, ab ? &ablated : &on, &ex));
            opsched_exec_info info;
            CHECK(opsched_executor_info(ex, &info));
            assert_int_equal(info.n_gates_folded, ab ? 0 : 2);
            if (!ab) {
                assert_string_equal(opsched_executor_layer(ex, 5)->algo, "fused into proj");
                assert_string_equal(opsched_executor_layer(ex, 13)->algo, "fused into narrow");
                assert_int_equal(opsched_executor_layer(ex, 5)->role, OPSCHED_ROLE_FUSED);
                assert_int_equal(opsched_executor_layer(ex, 7)->role, OPSCHED_ROLE_FUSED);
            } else {
                assert_null(strstr(opsched_executor_layer(ex, 5)->algo, "fused into"));
            }
            opsched_executor_free(ex);
        }
    }
    opsched_graph_free(g);

    /* the multiply's output read twice, and a scale of another shape */
    opsched_graph *h = NULL;
    int x, s, t[4];
    opsched_shape ss = {4, {2, 12, 1, 1}}, bs = {4, {1, 12, 1, 1}};
    opsched_conv_desc c1 = {.out_channels = 4, .kernel_h = 1, .kernel_w = 1, .stride_h = 1,
                            .stride_w = 1};
    opsched_conv_desc c3 = c1;
    c3.kernel_h = c3.kernel_w = 3;
    CHECK(opsched_graph_create(env.ctx, "gates", &h));
    CHECK(opsched_graph_add_tensor(h, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x));
    CHECK(opsched_graph_add_tensor(h, "s", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &ss, &s));
    CHECK(opsched_build_binary(h, "m", OPSCHED_OP_MUL, x, s, &t[0]));
    CHECK(opsched_build_conv(h, "c", t[0], &c1, &t[1]));
    CHECK(opsched_graph_mark_output(h, t[0]));
    CHECK(opsched_graph_mark_output(h, t[1]));
    assert_int_equal(opsched_conv_gate_find(h, 1, NULL), 0);
    CHECK(opsched_build_binary(h, "m2", OPSCHED_OP_MUL, x, s, &t[2]));
    CHECK(opsched_build_conv(h, "c3", t[2], &c3, &t[3])); /* 3x3 */
    CHECK(opsched_graph_mark_output(h, t[3]));
    assert_int_equal(opsched_conv_gate_find(h, 3, NULL), 0);
    CHECK(opsched_graph_add_tensor(h, "b", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &bs, &s));
    CHECK(opsched_build_binary(h, "m3", OPSCHED_OP_MUL, x, s, &t[0]));
    CHECK(opsched_build_conv(h, "c4", t[0], &c1, &t[1])); /* one scale for every sample */
    CHECK(opsched_graph_mark_output(h, t[1]));
    assert_int_equal(opsched_conv_gate_find(h, 5, NULL), 0);
    opsched_graph_free(h);
}

/* A gated map whose scale is no gate the planner knows (here a model
 * input): its Mul is planned alone first, then the 1x1 convolution after it
 * takes the scale and the Mul runs nothing; the same values as with the
 * fold ablated. */
static void test_gated_product_apart(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_shape xs = {4, {2, 12, 5, 7}}, ss = {4, {2, 12, 1, 1}};
    opsched_conv_desc cd = {.out_channels = 6, .kernel_h = 1, .kernel_w = 1, .stride_h = 1,
                            .stride_w = 1, .bias = 1};
    opsched_graph *g = NULL;
    int x, s, t[3];
    CHECK(opsched_graph_create(env.ctx, "scaled", &g));
    CHECK(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x));
    CHECK(opsched_graph_add_tensor(g, "s", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &ss, &s));
    CHECK(opsched_build_binary(g, "m", OPSCHED_OP_MUL, s, x, &t[0]));
    CHECK(opsched_build_conv(g, "c", t[0], &cd, &t[1]));
    CHECK(opsched_build_unary(g, "relu", OPSCHED_OP_RELU, NULL, t[1], &t[2]));
    CHECK(opsched_graph_mark_output(g, t[2]));
    assert_int_equal(netref_set_weights(g, 17), 0);
    size_t nx = 0, ns = 0;
    float *xv = random_input(g, 0, 3, &nx), *sv = random_input(g, 1, 4, &ns);
    float *y[2] = {NULL, NULL};
    size_t m = 0;
    for (int ab = 0; ab < 2; ab++) {
        opsched_exec_options o = {.plan = {.fuse_activation = 1,
                                           .ablate = ab ? OPSCHED_ABLATE_GATE : 0}};
        opsched_executor *ex = NULL;
        CHECK(opsched_executor_create(env.cpu, g, NULL, &o, &ex));
        opsched_exec_info info;
        CHECK(opsched_executor_info(ex, &info));
        assert_int_equal(info.n_gates_folded, ab ? 0 : 1);
        assert_int_equal(opsched_executor_layer(ex, 0)->role == OPSCHED_ROLE_FUSED, !ab);
        if (!ab) assert_string_equal(opsched_executor_layer(ex, 0)->algo, "fused into c");
        const float *ins[2] = {xv, sv};
        const size_t counts[2] = {nx, ns};
        y[ab] = run_output(ex, ins, counts, 2, &m);
    }
    double err = netref_rel_l2(y[0], y[1], m);
    print_message("scaled: the Mul folded into the product against apart: relative L2 %.3g\n", err);
    assert_true(err < 1e-6);
    free(y[0]);
    free(y[1]);
    free(xv);
    free(sv);
    opsched_graph_free(g);
}

/* Merged convolutions run one activation: two 1x1 convolutions of the
 * same input, one with a Relu and one with a Sigmoid, are no epilogue
 * pair; two Sigmoids are. */
static void test_epilogue_same(void **state)
{
    (void)state;
    opsched_node a = {.op = OPSCHED_OP_SIGMOID, .n_inputs = 1, .n_outputs = 1};
    opsched_node b = a, c = a, d = a;
    c.op = OPSCHED_OP_RELU;
    d.op = OPSCHED_OP_CLIP;
    d.attr.clip.max = 6.0f;
    opsched_node e = d;
    e.attr.clip.max = 4.0f;
    assert_true(opsched_epilogue_same(&a, &b));
    assert_false(opsched_epilogue_same(&a, &c));
    assert_true(opsched_epilogue_same(&d, &d));
    assert_false(opsched_epilogue_same(&d, &e));
    opsched_node f = {.op = OPSCHED_OP_UNARY, .n_inputs = 1, .n_outputs = 1};
    f.attr.unary.fn = OPSCHED_UNARY_ABS;
    assert_false(opsched_op_is_epilogue(&f)); /* not an activation a convolution applies */
    f.attr.unary.fn = OPSCHED_UNARY_SWISH;
    assert_true(opsched_op_is_epilogue(&f));
}

/* squeezenet1_1 at 224x224; resnet50 at 112x112, every layer of it but a
 * quarter of the reference's work (the reference is slow on purpose);
 * randwire (Adds of many inputs, a constant Mul) and nasnet (asymmetric
 * SAME padding, exclude-pad averages, Pad and Slice, a BatchNorm after a
 * Concat) at 64x64. */
static void test_zoo_models(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    const char *names[] = {"squeezenet1_1", "resnet50", "randwire", "nasnet"};
    const int64_t sizes[] = {224, 112, 64, 64};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        opsched_graph *g = zoo(names[i], sizes[i]);
        assert_int_equal(netref_set_weights(g, 100 + i), 0);
        compare_with_reference(g, NULL, 1e-4);
        opsched_graph_free(g);
    }
}

/* ---- memory ------------------------------------------------------------- */

/* x -> relu -> identity -> add(relu, identity): aliased, the identity's
 * output costs nothing, so two tensors of 8 KB are live at the add
 * instead of three, beside the input's own region. */
static opsched_graph *view_graph(void)
{
    opsched_graph *g = NULL;
    opsched_shape xs = {4, {1, 8, 16, 16}};
    int x, r, id, s;
    CHECK(opsched_graph_create(env.ctx, "views", &g));
    CHECK(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x));
    CHECK(opsched_build_unary(g, "relu", OPSCHED_OP_RELU, NULL, x, &r));
    CHECK(opsched_graph_add_node(g, "identity", OPSCHED_OP_IDENTITY, NULL, &r, 1, 1, NULL, &id));
    CHECK(opsched_build_binary(g, "add", OPSCHED_OP_ADD, r, id, &s));
    CHECK(opsched_graph_mark_output(g, s));
    return g;
}

/* Where tensor t's memory starts in the arena (SIZE_MAX: not there). */
static size_t arena_offset(const opsched_executor *ex, int t)
{
    size_t rel = 0;
    int r = os_ex_root(ex, t, &rel);
    size_t off = ex->tensors[r].arena_off;
    return off == SIZE_MAX ? SIZE_MAX : off + rel;
}

static void test_views_alias(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = view_graph();
    opsched_executor *ex = NULL;
    opsched_exec_info info;
    CHECK(opsched_executor_create(env.cpu, g, NULL, NULL, &ex));
    CHECK(opsched_executor_info(ex, &info));
    int r = -1, id = -1;
    CHECK(opsched_graph_find_tensor(g, "relu", &r));
    CHECK(opsched_graph_find_tensor(g, "identity", &id));
    print_message("view graph arena: %zu bytes, %d launches\n", info.arena_bytes, info.n_launches);
    assert_int_equal(info.arena_bytes, 3 * 8192);
    assert_int_equal(info.n_launches, 2);
    assert_int_equal(opsched_executor_layer(ex, opsched_graph_tensor(g, id)->producer)->role,
                     OPSCHED_ROLE_VIEW);
    assert_int_equal(os_ex_root(ex, id, NULL), os_ex_root(ex, r, NULL));
    assert_true(arena_offset(ex, id) == arena_offset(ex, r));
    opsched_executor_free(ex);
    compare_with_reference(g, NULL, 1e-6);
    opsched_graph_free(g);

    /* The small graph's Flatten: aliased, reported as a view. */
    g = small_graph();
    int flat = -1;
    CHECK(opsched_graph_find_tensor(g, "flatten", &flat));
    int fnode = opsched_graph_tensor(g, flat)->producer;
    CHECK(opsched_executor_create(env.cpu, g, NULL, NULL, &ex));
    CHECK(opsched_executor_info(ex, &info));
    assert_true(arena_offset(ex, flat) ==
                arena_offset(ex, opsched_graph_node(g, fnode)->inputs[0]));
    assert_int_equal(info.n_layers, opsched_graph_num_nodes(g));
    /* a stage a node, but conv1 and its Relu share one and the view has none */
    assert_int_equal(info.n_stages, opsched_graph_num_nodes(g) - 2);
    assert_int_equal(info.n_streams, 1);
    assert_int_equal(info.n_waits, 0);
    assert_true(info.weight_bytes > 0);
    const opsched_layer_info *li = opsched_executor_layer(ex, fnode);
    assert_non_null(li);
    assert_string_equal(li->algo, "view");
    assert_int_equal(li->role, OPSCHED_ROLE_VIEW);
    assert_int_equal(li->node, fnode);
    assert_null(opsched_executor_layer(ex, -1));
    assert_null(opsched_executor_layer(ex, info.n_layers));
    opsched_executor_free(ex);
    opsched_graph_free(g);
}

/* x -> conv1 -> relu1 -> conv2 -> relu2, nothing fused: the sequential
 * schedule puts each convolution and its Relu in one stage, yet on one
 * stream lifetimes are counted in launches, so two activations are live
 * at a time (a launch's input and output), not three. */
static void test_lifetimes_in_launches(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = NULL;
    opsched_shape xs = {4, {1, 3, 8, 8}};
    opsched_conv_desc d = conv3x3(8);
    int x, c1, r1, c2, r2;
    CHECK(opsched_graph_create(env.ctx, "chain", &g));
    CHECK(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x));
    CHECK(opsched_build_conv(g, "conv1", x, &d, &c1));
    CHECK(opsched_build_unary(g, "relu1", OPSCHED_OP_RELU, NULL, c1, &r1));
    CHECK(opsched_build_conv(g, "conv2", r1, &d, &c2));
    CHECK(opsched_build_unary(g, "relu2", OPSCHED_OP_RELU, NULL, c2, &r2));
    CHECK(opsched_graph_mark_output(g, r2));
    assert_int_equal(netref_set_weights(g, 12), 0);
    opsched_executor *ex = NULL;
    opsched_exec_info info;
    CHECK(opsched_executor_create(env.cpu, g, NULL, NULL, &ex));
    CHECK(opsched_executor_info(ex, &info));
    print_message("chain: %d stages, %d launches, arena %zu bytes\n", info.n_stages,
                  info.n_launches, info.arena_bytes);
    assert_int_equal(info.n_stages, 2);
    assert_int_equal(info.n_launches, 4);
    assert_int_equal(info.arena_bytes, 768 + 2 * 2048); /* the input's region, two activations */
    opsched_executor_free(ex);
    compare_with_reference(g, NULL, 1e-6);
    opsched_graph_free(g);
}

/* The arena of every zoo network (batch 1, fp32) is at least the largest
 * live set of a sequential run and not far above it: on one stream the
 * lifetimes are counted in launches, so the plan is as tight as the graph
 * allows.  The sequential count frees the graph input after its last
 * reader while the arena keeps it for the whole run (callers set it once
 * and run many times), so the bound on the allocator's waste leaves the
 * input region out.  Concats copy here, as the graph totals count them
 * (an output of its own); weights are drawn on the device (timing only),
 * which is quicker. */
static void test_arena_vs_peak(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    for (int i = 0; i < opsched_zoo_count(); i++) {
        const char *name = opsched_zoo_at(i)->name;
        opsched_graph *g = zoo(name, 0);
        opsched_graph_totals tot;
        CHECK(opsched_graph_totals_compute(g, &tot));
        opsched_exec_options o = {.timing_only = 1, .no_concat_elision = 1};
        opsched_executor *ex = NULL;
        opsched_exec_info info;
        CHECK(opsched_executor_create(env.cpu, g, NULL, &o, &ex));
        CHECK(opsched_executor_info(ex, &info));
        size_t input_bytes = 0; /* the inputs' region ends with the last of them */
        for (int k = 0; k < ex->n_inputs; k++) {
            const ex_tensor *t = &ex->tensors[ex->inputs[k]];
            if (t->arena_off + t->bytes > input_bytes) input_bytes = t->arena_off + t->bytes;
        }
        opsched_executor_free(ex);
        double peak = (double)tot.peak_activation_bytes;
        double ratio = (double)info.arena_bytes / peak;
        double act_ratio = (double)(info.arena_bytes - input_bytes) / peak;
        print_message("%-16s arena %10zu bytes (inputs %8zu), sequential peak %10lld bytes, "
                      "ratio %.3f (%.3f without the input region)\n",
                      name, info.arena_bytes, input_bytes, (long long)tot.peak_activation_bytes,
                      ratio, act_ratio);
        assert_true((int64_t)info.arena_bytes >= tot.peak_activation_bytes);
        assert_true(act_ratio <= 1.3);
        opsched_graph_free(g);
    }
}

/* ---- running ------------------------------------------------------------ */

static void test_run_layers(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = zoo("squeezenet1_1", 0);
    int nn = opsched_graph_num_nodes(g);
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, NULL, &ex));
    double *ms = malloc(sizeof(double) * (size_t)nn), total = 0, sum = 0;
    assert_non_null(ms);
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < nn; i++)
            ms[i] = -1;
        CHECK(opsched_executor_run_layers(ex, ms, &total));
        sum = 0;
        for (int i = 0; i < nn; i++) {
            assert_true(ms[i] >= 0);
            sum += ms[i];
        }
        assert_true(total > 0);
        /* one mark per boundary on one stream: the layers lie inside the run */
        assert_true(sum <= total * (1 + 1e-9));
    }
    print_message("squeezenet1_1 on cpu: %.3f ms whole run, %.3f ms summed over %d layers\n", total,
                  sum, nn);
    /* Views and elided Concats run nothing and take no time. */
    for (int i = 0; i < nn; i++) {
        const opsched_layer_info *li = opsched_executor_layer(ex, i);
        if (li->role != OPSCHED_ROLE_LAUNCH && li->role != OPSCHED_ROLE_VIEW_COPY)
            assert_true(ms[i] == 0);
        if (opsched_op_is_view(opsched_graph_node(g, i)->op)) assert_true(ms[i] == 0);
    }
    CHECK(opsched_executor_run_layers(ex, NULL, NULL));
    free(ms);
    opsched_executor_free(ex);
    opsched_graph_free(g);
}

static void test_capture_unsupported(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = small_graph();
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, NULL, &ex));
    assert_int_equal(opsched_executor_capture(ex), OPSCHED_ERR_UNSUPPORTED);
    assert_non_null(strstr(opsched_ctx_last_error(env.ctx), "cpu"));
    assert_int_equal(opsched_executor_replay(ex), OPSCHED_ERR_INVALID_ARG);
    /* The executor still runs. */
    CHECK(opsched_executor_run(ex));
    opsched_executor_free(ex);
    opsched_graph_free(g);
}

static void test_forced_algorithm(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = small_graph();
    opsched_executor *ex = NULL;
    opsched_exec_options o = {.plan = {.algo = "winograd"}};
    assert_int_equal(opsched_executor_create(env.cpu, g, NULL, &o, &ex), OPSCHED_ERR_UNSUPPORTED);
    assert_null(ex);
    const char *msg = opsched_ctx_last_error(env.ctx);
    print_message("without fallback: %s\n", msg);
    assert_non_null(strstr(msg, "layer 'conv1': winograd cannot run it: "));

    o.algo_fallback = "heuristic";
    CHECK(opsched_executor_create(env.cpu, g, NULL, &o, &ex));
    opsched_exec_info info;
    CHECK(opsched_executor_info(ex, &info));
    int convs = 0;
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        const opsched_layer_info *li = opsched_executor_layer(ex, i);
        int is_conv = opsched_graph_node(g, i)->op == OPSCHED_OP_CONV;
        convs += is_conv;
        assert_int_equal(li->fallback, is_conv);
        if (is_conv) {
            assert_true(li->fallback_reason[0] != '\0');
            assert_string_not_equal(li->algo, "winograd");
        }
    }
    print_message("with fallback: %d layers fell back (%s)\n", info.n_fallbacks,
                  opsched_executor_layer(ex, 0)->fallback_reason);
    assert_int_equal(info.n_fallbacks, convs);
    opsched_executor_free(ex);

    o.algo_fallback = "fastest";
    assert_int_equal(opsched_executor_create(env.cpu, g, NULL, &o, &ex), OPSCHED_ERR_INVALID_ARG);
    opsched_graph_free(g);
}

static void test_io_errors(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = small_graph();
    opsched_executor *ex = NULL;
    float v[192];
    CHECK(opsched_executor_create(env.cpu, g, NULL, NULL, &ex));
    assert_int_equal(opsched_executor_set_input(ex, 0, v, 10), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_executor_set_input(ex, 1, v, 192), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_executor_get_output(ex, 2, v, 10), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_executor_output_numel(ex, 0), 10);
    assert_int_equal(opsched_executor_output_numel(ex, 1), 4 * 8 * 8);
    assert_int_equal(opsched_executor_output_numel(ex, 2), 0);
    /* Same seed, same inputs, same outputs. */
    float y1[10], y2[10];
    CHECK(opsched_executor_randomize_inputs(ex, 3));
    CHECK(opsched_executor_run(ex));
    CHECK(opsched_executor_get_output(ex, 0, y1, 10));
    CHECK(opsched_executor_randomize_inputs(ex, 4));
    CHECK(opsched_executor_run(ex));
    CHECK(opsched_executor_get_output(ex, 0, y2, 10));
    assert_memory_not_equal(y1, y2, sizeof(y1));
    CHECK(opsched_executor_randomize_inputs(ex, 3));
    CHECK(opsched_executor_run(ex));
    CHECK(opsched_executor_get_output(ex, 0, y2, 10));
    assert_memory_equal(y1, y2, sizeof(y1));
    /* Jittered: no jitter gives the same inputs; 1e-3 relative moves the
     * outputs, by about that much and not more. */
    CHECK(opsched_executor_randomize_inputs_jittered(ex, 3, 0.0));
    CHECK(opsched_executor_run(ex));
    CHECK(opsched_executor_get_output(ex, 0, y2, 10));
    assert_memory_equal(y1, y2, sizeof(y1));
    CHECK(opsched_executor_randomize_inputs_jittered(ex, 3, 1e-3));
    CHECK(opsched_executor_run(ex));
    CHECK(opsched_executor_get_output(ex, 0, y2, 10));
    double num = 0, den = 0;
    for (int k = 0; k < 10; k++) {
        num += ((double)y2[k] - y1[k]) * ((double)y2[k] - y1[k]);
        den += (double)y1[k] * y1[k];
    }
    print_message("outputs moved %.3g by a 1e-3 jitter of the inputs\n", sqrt(num / den));
    assert_true(num > 0);
    assert_true(sqrt(num / den) < 1e-2);
    opsched_executor_free(ex);
    opsched_executor_free(NULL);
    assert_int_equal(opsched_executor_create(NULL, g, NULL, NULL, &ex), OPSCHED_ERR_INVALID_ARG);
    opsched_graph_free(g);
}

/* ---- conversions -------------------------------------------------------- */

static void test_conversions(void **state)
{
    (void)state;
    const float vals[] = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 1e-7f, 6.1035156e-05f, 3.14159f};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        float h = os_f16_to_f32(os_f32_to_f16(vals[i]));
        float b = os_bf16_to_f32(os_f32_to_bf16(vals[i]));
        assert_true(fabsf(h - vals[i]) <= fabsf(vals[i]) * 1e-3f + 6e-8f);
        assert_true(fabsf(b - vals[i]) <= fabsf(vals[i]) * 8e-3f);
    }
    assert_true(isinf(os_f16_to_f32(os_f32_to_f16(1e6f))));
    assert_true(isnan(os_f16_to_f32(os_f32_to_f16(NAN))));
    assert_true(isnan(os_bf16_to_f32(os_f32_to_bf16(NAN))));
    assert_int_equal(os_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(os_f32_to_bf16(1.0f), 0x3f80);

    /* NCHW -> NHWC in f16 and back. */
    opsched_shape s = {4, {2, 3, 2, 2}};
    float src[24], back[24];
    uint16_t mid[24];
    for (int i = 0; i < 24; i++)
        src[i] = (float)i;
    os_exec_convert(src, OPSCHED_F32, mid, OPSCHED_F16, 24, &s, 1);
    /* element (n=0, c=1, h=0, w=1) sits at ((0*2+0)*2+1)*3+1 = 4 */
    assert_true(os_f16_to_f32(mid[4]) == src[(0 * 3 + 1) * 4 + 0 * 2 + 1]);
    os_exec_convert(mid, OPSCHED_F16, back, OPSCHED_F32, 24, &s, -1);
    assert_memory_equal(src, back, sizeof(src));
    /* storage: floats in the math mode's type, integers as they are */
    opsched_tensor t32 = {.dtype = OPSCHED_F32, .shape = s};
    opsched_tensor ti = {.dtype = OPSCHED_INT64, .shape = s};
    assert_int_equal(os_exec_tensor_bytes(&t32, OPSCHED_MATH_FP32), 24 * 4);
    assert_int_equal(os_exec_tensor_bytes(&t32, OPSCHED_MATH_FP16), 24 * 2);
    assert_int_equal(os_exec_tensor_bytes(&ti, OPSCHED_MATH_FP16), 24 * 8);
    int64_t idx[3] = {5, 0, 1 << 30}, idx2[3];
    os_exec_convert(idx, OPSCHED_INT64, idx2, OPSCHED_INT64, 3, NULL, 0);
    assert_memory_equal(idx, idx2, sizeof(idx));
}

/* ---- set-up ------------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    if (opsched_ctx_create(&env.ctx) != OPSCHED_OK) return -1;
    int count = 0;
    if (opsched_device_count(env.ctx, "cpu", &count) != OPSCHED_OK || count == 0) {
        print_message("SKIP: no cpu device\n");
        return 0;
    }
    if (opsched_device_open(env.ctx, "cpu", 0, &env.cpu) != OPSCHED_OK) {
        print_error("cannot open the cpu device: %s\n", opsched_ctx_last_error(env.ctx));
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    opsched_device_close(env.cpu);
    opsched_ctx_free(env.ctx);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conversions),
        cmocka_unit_test(test_small_graph),
        cmocka_unit_test(test_fused_relu),
        cmocka_unit_test(test_views_alias),
        cmocka_unit_test(test_fused_activations),
        cmocka_unit_test(test_fused_residual),
        cmocka_unit_test(test_epilogue_same),
        cmocka_unit_test(test_fused_chain),
        cmocka_unit_test(test_movement_runs),
        cmocka_unit_test(test_inverted_residual),
        cmocka_unit_test(test_conv_prologue),
        cmocka_unit_test(test_gated_product),
        cmocka_unit_test(test_gated_product_apart),
        cmocka_unit_test(test_norm_concat),
        cmocka_unit_test(test_fused_se),
        cmocka_unit_test(test_fused_bias),
        cmocka_unit_test(test_norm_act_and_transposed_residual),
        cmocka_unit_test(test_gemm_epilogue),
        cmocka_unit_test(test_conv_norm),
        cmocka_unit_test(test_arena_vs_peak),
        cmocka_unit_test(test_run_layers),
        cmocka_unit_test(test_capture_unsupported),
        cmocka_unit_test(test_forced_algorithm),
        cmocka_unit_test(test_io_errors),
        cmocka_unit_test(test_lifetimes_in_launches),
        cmocka_unit_test(test_zoo_models),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
