/*
 * test_training.c - the training iteration (opsched/training.h): its steps
 * and dependencies on a two-layer perceptron worked out by hand, its memory
 * step by step against the same hand computation (SGD and AdamW), and the
 * structure on zoo networks (every dependency points back, BatchNorm's
 * running statistics are buffers, every parameter gets one gradient).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opsched/opsched.h"

/* x [4, 128] -> Linear(256) -> Relu -> Linear(128) -> y [4, 128]; every
 * tensor a multiple of 512 bytes, so the arithmetic below is the model's,
 * not the allocator's rounding. */
static opsched_graph *mlp(opsched_ctx *ctx)
{
    opsched_graph *g = NULL;
    assert_int_equal(opsched_graph_create(ctx, "mlp", &g), OPSCHED_OK);
    opsched_shape s = {2, {4, 128}};
    int x, h, r, y;
    assert_int_equal(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s, &x),
                     OPSCHED_OK);
    assert_int_equal(opsched_build_linear(g, "fc1", x, 256, 1, &h), OPSCHED_OK);
    assert_int_equal(opsched_build_unary(g, "relu", OPSCHED_OP_RELU, NULL, h, &r), OPSCHED_OK);
    assert_int_equal(opsched_build_linear(g, "fc2", r, 128, 1, &y), OPSCHED_OK);
    assert_int_equal(opsched_graph_mark_output(g, y), OPSCHED_OK);
    return g;
}

static int has_dep(const opsched_train_step *s, int on)
{
    for (int i = 0; i < s->n_deps; i++)
        if (s->deps[i] == on) return 1;
    return 0;
}

static void test_mlp_steps(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_graph *g = mlp(ctx);
    opsched_training *t = NULL;
    assert_int_equal(opsched_training_build(g, NULL, &t), OPSCHED_OK);
    /* zero-grad; 3 forward; loss; its backward; fc2 data and weight; relu
     * data; fc1 weight only (x is data); the optimizer */
    static const opsched_train_step_kind want[] = {
        OPSCHED_STEP_ZERO_GRAD,       OPSCHED_STEP_FORWARD,         OPSCHED_STEP_FORWARD,
        OPSCHED_STEP_FORWARD,         OPSCHED_STEP_LOSS,            OPSCHED_STEP_LOSS_BACKWARD,
        OPSCHED_STEP_BACKWARD_DATA,   OPSCHED_STEP_BACKWARD_WEIGHT, OPSCHED_STEP_BACKWARD_DATA,
        OPSCHED_STEP_BACKWARD_WEIGHT, OPSCHED_STEP_OPTIMIZER};
    assert_int_equal(opsched_training_num_steps(t), 11);
    for (int i = 0; i < 11; i++) {
        if (opsched_training_step(t, i)->kind != want[i])
            print_error("step %d is %s\n", i,
                        opsched_train_step_kind_name(opsched_training_step(t, i)->kind));
        assert_int_equal(opsched_training_step(t, i)->kind, want[i]);
    }
    assert_int_equal(opsched_training_step(t, 6)->node, 2);
    assert_int_equal(opsched_training_step(t, 6)->input, 0);
    assert_int_equal(opsched_training_step(t, 9)->node, 0);
    /* relu's backward waits for fc2's data gradient and its own forward */
    assert_true(has_dep(opsched_training_step(t, 8), 6));
    assert_true(has_dep(opsched_training_step(t, 8), 2));
    assert_true(has_dep(opsched_training_step(t, 6), 5));
    assert_true(has_dep(opsched_training_step(t, 9), 8));
    assert_true(has_dep(opsched_training_step(t, 10), 7) && has_dep(opsched_training_step(t, 10), 9));
    /* a backward GEMM costs what the forward one does */
    assert_int_equal(opsched_training_step(t, 7)->flops, opsched_training_step(t, 3)->flops);
    opsched_training_free(t);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

static void test_mlp_memory(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_graph *g = mlp(ctx);
    opsched_training *t = NULL;
    opsched_training_memory m;
    assert_int_equal(opsched_training_build(g, NULL, &t), OPSCHED_OK);
    assert_int_equal(opsched_training_memory_get(t, &m), OPSCHED_OK);
    /* weights: 256x128 + 256 + 128x256 + 128 floats */
    const int64_t w = 4 * (256 * 128 + 256 + 128 * 256 + 128);
    assert_int_equal(m.weights, w);
    assert_int_equal(m.parameters, w);
    assert_int_equal(m.gradients, w);
    assert_int_equal(m.optimizer_state, w); /* SGD's momentum */
    /* At fc1's weight gradient (step 9): weights, x, momentum, the loss
     * scalar (one 512-byte block), fc2's gradients, d(h) and fc1's
     * gradients; r and d(r) were freed after relu's backward. */
    const int64_t persistent = w + 2048 + w;
    const int64_t g2 = 4 * (128 * 256 + 128), g1 = 4 * (256 * 128 + 256);
    assert_int_equal(m.peak, persistent + 512 + g2 + 4096 + g1);
    assert_int_equal(m.peak_step, 9);
    assert_int_equal(m.saved, 4096); /* relu's output, kept for relu and fc2 */
    opsched_training_free(t);

    /* AdamW, foreach: two moments, and the square root of the second as a
     * temporary in the optimizer step, which is now the peak. */
    opsched_training_options o = {.optimizer = OPSCHED_OPTIMIZER_ADAMW};
    assert_int_equal(opsched_training_build(g, &o, &t), OPSCHED_OK);
    assert_int_equal(opsched_training_memory_get(t, &m), OPSCHED_OK);
    assert_int_equal(m.optimizer_state, 2 * w);
    assert_int_equal(m.peak, w + 2048 + 2 * w + 512 + g2 + g1 + w);
    assert_int_equal(m.peak_step, 10);
    opsched_training_free(t);
    /* Fused: no temporary; the peak goes back to fc1's weight gradient. */
    o.impl = OPSCHED_OPTIMIZER_FUSED;
    assert_int_equal(opsched_training_build(g, &o, &t), OPSCHED_OK);
    assert_int_equal(opsched_training_memory_get(t, &m), OPSCHED_OK);
    assert_int_equal(m.peak, w + 2048 + 2 * w + 512 + g2 + 4096 + g1);
    assert_int_equal(m.peak_step, 9);
    opsched_training_free(t);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

static void test_block_rounding(void **state)
{
    (void)state;
    assert_int_equal(opsched_training_block_bytes(1), 512);
    assert_int_equal(opsched_training_block_bytes(512), 512);
    assert_int_equal(opsched_training_block_bytes(513), 1024);
    assert_int_equal(opsched_training_block_bytes(4 * 1000), 4096);
}

static void test_zoo_structure(void **state)
{
    (void)state;
    static const char *const models[] = {"resnet50", "googlenet", "squeezenet1_1"};
    for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++) {
        opsched_ctx *ctx = NULL;
        assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
        opsched_zoo_options zo = {.batch = 2, .fold_bn = 0};
        opsched_graph *g = NULL;
        assert_int_equal(opsched_zoo_build(ctx, models[m], &zo, &g), OPSCHED_OK);
        opsched_training *t = NULL;
        assert_int_equal(opsched_training_build(g, NULL, &t), OPSCHED_OK);
        int n = opsched_training_num_steps(t), fwd = 0, weight = 0;
        for (int i = 0; i < n; i++) {
            const opsched_train_step *s = opsched_training_step(t, i);
            for (int d = 0; d < s->n_deps; d++) assert_true(s->deps[d] >= 0 && s->deps[d] < i);
            fwd += s->kind == OPSCHED_STEP_FORWARD;
            weight += s->kind == OPSCHED_STEP_BACKWARD_WEIGHT;
            if (s->kind == OPSCHED_STEP_BACKWARD_DATA || s->kind == OPSCHED_STEP_BACKWARD_WEIGHT)
                assert_true(s->n_deps >= 2); /* its forward and its output's gradient */
        }
        assert_int_equal(fwd, opsched_graph_num_nodes(g));
        assert_true(weight > 0);
        opsched_training_memory mem;
        assert_int_equal(opsched_training_memory_get(t, &mem), OPSCHED_OK);
        assert_int_equal(mem.gradients, mem.parameters);
        /* BatchNorm's running mean and variance are weights, not parameters */
        if (strcmp(models[m], "squeezenet1_1") == 0)
            assert_int_equal(mem.parameters, mem.weights);
        else
            assert_true(mem.parameters < mem.weights);
        assert_true(mem.peak > mem.weights + mem.gradients + mem.optimizer_state);
        assert_true(mem.saved > 0);
        opsched_training_free(t);
        opsched_graph_free(g);
        opsched_ctx_free(ctx);
    }
}

static void test_no_loss(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_graph *g = NULL;
    assert_int_equal(opsched_graph_create(ctx, "argmax", &g), OPSCHED_OK);
    opsched_shape s = {2, {4, 8}};
    int x, y;
    assert_int_equal(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s, &x),
                     OPSCHED_OK);
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.arg.axis = 1;
    assert_int_equal(opsched_graph_add_node(g, "am", OPSCHED_OP_ARGMAX, &a, &x, 1, 1, NULL, &y),
                     OPSCHED_OK);
    assert_int_equal(opsched_graph_mark_output(g, y), OPSCHED_OK);
    opsched_training *t = NULL;
    assert_int_equal(opsched_training_build(g, NULL, &t), OPSCHED_ERR_UNSUPPORTED);
    assert_null(t);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "no floating-point output"));
    opsched_graph_free(g);
    /* a float output that depends on no parameter has nothing to train */
    assert_int_equal(opsched_graph_create(ctx, "relu", &g), OPSCHED_OK);
    assert_int_equal(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s, &x),
                     OPSCHED_OK);
    assert_int_equal(opsched_build_unary(g, "r", OPSCHED_OP_RELU, NULL, x, &y), OPSCHED_OK);
    assert_int_equal(opsched_graph_mark_output(g, y), OPSCHED_OK);
    assert_int_equal(opsched_training_build(g, NULL, &t), OPSCHED_ERR_UNSUPPORTED);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "does not depend on any parameter"));
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp_steps),   cmocka_unit_test(test_mlp_memory),
        cmocka_unit_test(test_block_rounding), cmocka_unit_test(test_zoo_structure),
        cmocka_unit_test(test_no_loss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
