/*
 * test_training.c - the training iteration (opsched/training.h): its steps
 * and dependencies on a two-layer perceptron worked out by hand, its memory
 * step by step against the same hand computation (SGD and AdamW), and the
 * structure on zoo networks (every dependency points back, BatchNorm's
 * running statistics are buffers, every parameter gets one gradient); and
 * the training graph (opsched_training_graph) run on the CPU backend, its
 * gradients against central finite differences of its loss.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
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

/* The same perceptron under FSDP on two ranks, fc1 and fc2 each a unit:
 * shards, the units gathered with their prefetch, gradients whole until
 * their unit's backward ends, worked out step by step (steps as in
 * test_mlp_steps). */
static void test_mlp_memory_sharded(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_graph *g = mlp(ctx);
    opsched_training *t = NULL;
    opsched_training_memory one, m;
    assert_int_equal(opsched_training_build(g, NULL, &t), OPSCHED_OK);
    assert_int_equal(opsched_training_memory_get(t, &one), OPSCHED_OK);
    int nt = opsched_graph_num_tensors(g);
    int *unit_of = malloc(sizeof(int) * (size_t)nt);
    assert_non_null(unit_of);
    for (int x = 0; x < nt; x++) {
        const char *name = opsched_graph_tensor(g, x)->name;
        unit_of[x] = strncmp(name, "fc1.", 4) == 0 ? 1 : strncmp(name, "fc2.", 4) == 0 ? 2 : -1;
    }
    opsched_training_sharding sh = {1, unit_of, NULL, 3, 1.0, 1.0, 1};
    /* One rank: the one-GPU replay. */
    assert_int_equal(opsched_training_memory_sharded(t, &sh, &m), OPSCHED_OK);
    assert_int_equal(m.peak, one.peak);
    assert_int_equal(m.peak_step, one.peak_step);
    sh.ranks = 2;
    assert_int_equal(opsched_training_memory_sharded(t, &sh, &m), OPSCHED_OK);
    /* Shards: fc1.weight 65536, fc1.bias 512, fc2.weight 65536, fc2.bias
     * 256 (a 512-byte block). */
    assert_int_equal(m.weights, 65536 + 512 + 65536 + 256);
    assert_int_equal(m.optimizer_state, 65536 + 512 + 65536 + 256);
    assert_int_equal(m.gradients, 65536 + 512 + 65536 + 256);
    const int64_t shards = 65536 + 512 + 65536 + 512;
    const int64_t persistent = shards + 2048 + shards; /* parameters, x, momentum */
    const int64_t u1 = 4 * (256 * 128 + 256), u2 = 4 * (128 * 256 + 128);
    /* Step 8 (relu's backward): fc2 gathered (5..8) and fc1 prefetched
     * (5..9); fc2's gradients whole (7..8) and their shards (8..);
     * the loss scalar, r, d(r) and d(h). */
    assert_int_equal(m.peak, persistent + u2 + u1 + u2 + shards / 2 + 512 + 3 * 4096);
    assert_int_equal(m.peak_step, 8);
    /* Kept gathered after forward: fc1 from step 0 to its last backward
     * step, fc2 likewise; the peak moves to no lower. */
    sh.reshard_after_forward = 0;
    opsched_training_memory held;
    assert_int_equal(opsched_training_memory_sharded(t, &sh, &held), OPSCHED_OK);
    assert_true(held.peak >= m.peak);
    /* Bad arguments are refused. */
    sh.ranks = 0;
    assert_int_equal(opsched_training_memory_sharded(t, &sh, &m), OPSCHED_ERR_INVALID_ARG);
    free(unit_of);
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

/* Deterministic weight values of either sign. */
static void set_weights(opsched_graph *g)
{
    for (int i = 0, k = 0; i < opsched_graph_num_tensors(g); i++) {
        const opsched_tensor *w = opsched_graph_tensor(g, i);
        if (w->kind != OPSCHED_TENSOR_WEIGHT) continue;
        int64_t n = opsched_shape_numel(&w->shape);
        float *v = malloc(sizeof(float) * (size_t)n);
        assert_non_null(v);
        for (int64_t e = 0; e < n; e++)
            v[e] = 0.6f * sinf(1.7f * (float)(e + 13 * ++k));
        assert_int_equal(opsched_graph_set_data(g, i, v, sizeof(float) * (size_t)n), OPSCHED_OK);
        free(v);
    }
}

/* x [4, 6] -> Linear(5) -> Relu -> Tanh * Sigmoid -> Transpose twice ->
 * MatMul by W3 [5, 3] -> + b3 [3] -> - c (a constant [1, 3]) -> y [4, 3]:
 * every backward rule but Flatten's and Gemm's alpha. */
static opsched_graph *ad_net(opsched_ctx *ctx)
{
    opsched_graph *g = NULL;
    assert_int_equal(opsched_graph_create(ctx, "ad", &g), OPSCHED_OK);
    opsched_shape xs = {2, {4, 6}}, ws = {2, {5, 3}}, bs = {1, {3}}, cs = {2, {1, 3}};
    int x, h, r, t, sg, m, p1, p2, w3, b3, c, mm, ab, y;
    assert_int_equal(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x),
                     OPSCHED_OK);
    assert_int_equal(opsched_build_linear(g, "fc1", x, 5, 1, &h), OPSCHED_OK);
    assert_int_equal(opsched_build_unary(g, "relu", OPSCHED_OP_RELU, NULL, h, &r), OPSCHED_OK);
    assert_int_equal(opsched_build_unary(g, "tanh", OPSCHED_OP_TANH, NULL, r, &t), OPSCHED_OK);
    assert_int_equal(opsched_build_unary(g, "sig", OPSCHED_OP_SIGMOID, NULL, r, &sg), OPSCHED_OK);
    assert_int_equal(opsched_build_binary(g, "gate", OPSCHED_OP_MUL, t, sg, &m), OPSCHED_OK);
    opsched_op_attr tr;
    memset(&tr, 0, sizeof(tr));
    tr.transpose.n = 2;
    tr.transpose.perm[0] = 1;
    assert_int_equal(opsched_graph_add_node(g, "t1", OPSCHED_OP_TRANSPOSE, &tr, &m, 1, 1, NULL, &p1),
                     OPSCHED_OK);
    assert_int_equal(opsched_graph_add_node(g, "t2", OPSCHED_OP_TRANSPOSE, &tr, &p1, 1, 1, NULL,
                                            &p2),
                     OPSCHED_OK);
    assert_int_equal(opsched_graph_add_tensor(g, "w3", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &ws, &w3),
                     OPSCHED_OK);
    assert_int_equal(opsched_graph_add_tensor(g, "b3", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &bs, &b3),
                     OPSCHED_OK);
    assert_int_equal(opsched_graph_add_tensor(g, "c", OPSCHED_TENSOR_CONSTANT, OPSCHED_F32, &cs, &c),
                     OPSCHED_OK);
    const float cv[3] = {0.25f, -0.5f, 0.125f};
    assert_int_equal(opsched_graph_set_data(g, c, cv, sizeof(cv)), OPSCHED_OK);
    assert_int_equal(opsched_build_binary(g, "mm", OPSCHED_OP_MATMUL, p2, w3, &mm), OPSCHED_OK);
    assert_int_equal(opsched_build_binary(g, "bias", OPSCHED_OP_ADD, mm, b3, &ab), OPSCHED_OK);
    assert_int_equal(opsched_build_binary(g, "shift", OPSCHED_OP_SUB, ab, c, &y), OPSCHED_OK);
    assert_int_equal(opsched_graph_mark_output(g, y), OPSCHED_OK);
    set_weights(g);
    return g;
}

/* Runs the training graph of g on the CPU: out[0] the loss, then the
 * gradients (out[i] malloc'd, n[i] elements; at most 8 outputs). */
static void run_training(opsched_device *dev, opsched_graph *g, opsched_loss loss, const float *x,
                         size_t nx, const float *target, size_t nt, float **out, size_t *n)
{
    opsched_training_options o;
    memset(&o, 0, sizeof(o));
    o.loss = loss;
    opsched_graph *t = NULL;
    assert_int_equal(opsched_training_graph(g, &o, &t), OPSCHED_OK);
    opsched_exec_options eo;
    memset(&eo, 0, sizeof(eo));
    opsched_executor *ex = NULL;
    assert_int_equal(opsched_executor_create(dev, t, NULL, &eo, &ex), OPSCHED_OK);
    assert_int_equal(opsched_executor_set_input(ex, 0, x, nx), OPSCHED_OK);
    assert_int_equal(opsched_executor_set_input(ex, 1, target, nt), OPSCHED_OK);
    assert_int_equal(opsched_executor_run(ex), OPSCHED_OK);
    assert_int_equal(opsched_device_sync(dev), OPSCHED_OK);
    assert_true(opsched_graph_num_outputs(t) <= 8);
    for (int i = 0; i < opsched_graph_num_outputs(t); i++) {
        n[i] = opsched_executor_output_numel(ex, i);
        out[i] = malloc(n[i] * sizeof(float));
        assert_non_null(out[i]);
        assert_int_equal(opsched_executor_get_output(ex, i, out[i], n[i]), OPSCHED_OK);
    }
    opsched_executor_free(ex);
    opsched_graph_free(t);
}

static float loss_of(opsched_device *dev, opsched_graph *g, opsched_loss loss, const float *x,
                     size_t nx, const float *target, size_t nt)
{
    float *out[8] = {0};
    size_t n[8] = {0};
    run_training(dev, g, loss, x, nx, target, nt, out, n);
    float l = out[0][0];
    for (int i = 0; i < 8; i++)
        free(out[i]);
    return l;
}

/* Every gradient element of g's training graph against the central
 * difference of its loss, for both losses; x and target of nx and nt
 * elements; `elements` the weights' total. */
static void check_gradients(opsched_device *dev, opsched_graph *g, const float *x, size_t nx,
                            const float *target, size_t nt, int elements)
{
    for (int li = 0; li < 2; li++) {
        opsched_loss loss = li ? OPSCHED_LOSS_MSE : OPSCHED_LOSS_CROSS_ENTROPY;
        float *out[8] = {0};
        size_t n[8] = {0};
        run_training(dev, g, loss, x, nx, target, nt, out, n);
        assert_true(isfinite(out[0][0]) && out[0][0] > 0);
        int k = 1, checked = 0;
        double worst = 0;
        for (int i = 0; i < opsched_graph_num_tensors(g); i++) {
            const opsched_tensor *w = opsched_graph_tensor(g, i);
            if (w->kind != OPSCHED_TENSOR_WEIGHT) continue;
            int64_t numel = opsched_shape_numel(&w->shape);
            assert_int_equal(n[k], (size_t)numel);
            float *v = malloc(sizeof(float) * (size_t)numel);
            assert_non_null(v);
            memcpy(v, w->data, sizeof(float) * (size_t)numel);
            for (int64_t e = 0; e < numel; e++) {
                const float eps = 1e-3f, keep = v[e];
                v[e] = keep + eps;
                assert_int_equal(opsched_graph_set_data(g, i, v, sizeof(float) * (size_t)numel),
                                 OPSCHED_OK);
                float up = loss_of(dev, g, loss, x, nx, target, nt);
                v[e] = keep - eps;
                assert_int_equal(opsched_graph_set_data(g, i, v, sizeof(float) * (size_t)numel),
                                 OPSCHED_OK);
                float down = loss_of(dev, g, loss, x, nx, target, nt);
                v[e] = keep;
                assert_int_equal(opsched_graph_set_data(g, i, v, sizeof(float) * (size_t)numel),
                                 OPSCHED_OK);
                double fd = ((double)up - down) / (2.0 * eps), got = out[k][e];
                double diff = fabs(got - fd);
                if (diff > worst) worst = diff;
                if (!(diff <= 1e-3 + 1e-2 * fabs(fd)))
                    print_error("%s, %s loss: grad/%s[%lld] = %.6g, finite difference %.6g\n",
                                opsched_graph_name(g), li ? "mse" : "cross-entropy", w->name,
                                (long long)e, got, fd);
                assert_true(diff <= 1e-3 + 1e-2 * fabs(fd));
                checked++;
            }
            free(v);
            k++;
        }
        print_message("%s, %s: loss %.5f, %d gradient elements within 1e-3 + 1%% of the "
                      "central difference (worst %.2g)\n",
                      opsched_graph_name(g), li ? "mse" : "cross-entropy", (double)out[0][0],
                      checked, worst);
        assert_int_equal(checked, elements);
        for (int i = 0; i < 8; i++)
            free(out[i]);
    }
}


static int weight(opsched_graph *g, const char *name, int ndim, int64_t d0, int64_t d1)
{
    opsched_shape s = {ndim, {d0, d1}};
    int id = -1;
    assert_int_equal(opsched_graph_add_tensor(g, name, OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &s, &id),
                     OPSCHED_OK);
    return id;
}

/* A graph edit's status: OK, or the context's message and a failure. */
static void built(opsched_graph *g, opsched_status st)
{
    if (st != OPSCHED_OK) print_error("%s\n", opsched_ctx_last_error(opsched_graph_ctx(g)));
    assert_int_equal(st, OPSCHED_OK);
}

static int op1(opsched_graph *g, const char *name, opsched_op_kind op, const opsched_op_attr *at,
               int x)
{
    int y = -1;
    opsched_status st = opsched_graph_add_node(g, name, op, at, &x, 1, 1, NULL, &y);
    built(g, st);
    return y;
}

static int op2(opsched_graph *g, const char *name, opsched_op_kind op, int x, int w)
{
    int y = -1;
    opsched_status st = opsched_build_binary(g, name, op, x, w, &y);
    built(g, st);
    return y;
}

/* x [2, 3, 4] -> MatMul W1 [4, 6] + b1 -> LayerNorm(g1, be1) -> Gelu and
 * tanh Gelu, concatenated [2, 3, 12] -> Clip / sqrt(Sigmoid + 1) ->
 * Softmax -> ReduceMean over axis 1 -> MatMul W2 [12, 6] -> Expand to
 * [2, 2, 6] and ReduceSum back, plus GlobalAveragePool of the [2, 3, 3, 4]
 * map through W3 [3, 6] -> LogSoftmax -> y [2, 6]. */
static opsched_graph *ad_net2(opsched_ctx *ctx)
{
    opsched_graph *g = NULL;
    assert_int_equal(opsched_graph_create(ctx, "ad2", &g), OPSCHED_OK);
    opsched_shape xs = {3, {2, 3, 4}};
    int x;
    assert_int_equal(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x),
                     OPSCHED_OK);
    opsched_op_attr at;
    int h = op2(g, "mm1", OPSCHED_OP_MATMUL, x, weight(g, "w1", 2, 4, 6));
    h = op2(g, "bias1", OPSCHED_OP_ADD, h, weight(g, "b1", 1, 6, 0));
    int ln_in[3] = {h, weight(g, "g1", 1, 6, 0), weight(g, "be1", 1, 6, 0)}, a = -1;
    memset(&at, 0, sizeof(at));
    at.layernorm.axis = -1;
    at.layernorm.epsilon = 1e-5f;
    assert_int_equal(opsched_graph_add_node(g, "ln", OPSCHED_OP_LAYERNORM, &at, ln_in, 3, 1, NULL, &a),
                     OPSCHED_OK);
    memset(&at, 0, sizeof(at));
    int u = op1(g, "gelu", OPSCHED_OP_GELU, &at, a);
    at.gelu.tanh_approx = 1;
    int v = op1(g, "gelu_tanh", OPSCHED_OP_GELU, &at, a);
    int cat_in[2] = {u, v}, c = -1;
    memset(&at, 0, sizeof(at));
    at.axis.axis = -1;
    assert_int_equal(opsched_graph_add_node(g, "cat", OPSCHED_OP_CONCAT, &at, cat_in, 2, 1, NULL, &c),
                     OPSCHED_OK);
    memset(&at, 0, sizeof(at));
    at.clip.min = -0.5f;
    at.clip.max = 0.8f;
    int cl = op1(g, "clip", OPSCHED_OP_CLIP, &at, c);
    int sg = op1(g, "sig", OPSCHED_OP_SIGMOID, NULL, c);
    opsched_shape one = {1, {1}};
    int k1;
    const float onev = 1.0f;
    assert_int_equal(opsched_graph_add_tensor(g, "one", OPSCHED_TENSOR_CONSTANT, OPSCHED_F32, &one, &k1),
                     OPSCHED_OK);
    assert_int_equal(opsched_graph_set_data(g, k1, &onev, sizeof(onev)), OPSCHED_OK);
    int sq = op1(g, "sqrt", OPSCHED_OP_SQRT, NULL, op2(g, "sig1", OPSCHED_OP_ADD, sg, k1));
    int d = op2(g, "div", OPSCHED_OP_DIV, cl, sq);
    memset(&at, 0, sizeof(at));
    at.axis.axis = -1;
    int sm = op1(g, "softmax", OPSCHED_OP_SOFTMAX, &at, d);
    memset(&at, 0, sizeof(at));
    at.reduce.n_axes = 1;
    at.reduce.axes[0] = 1;
    at.reduce.fn = OPSCHED_REDUCE_MEAN;
    int m = op1(g, "mean", OPSCHED_OP_REDUCEMEAN, &at, sm);
    int z = op2(g, "mm2", OPSCHED_OP_MATMUL, m, weight(g, "w2", 2, 12, 6));
    memset(&at, 0, sizeof(at));
    at.shape.shape = (opsched_shape){3, {2, 1, 6}};
    z = op1(g, "unsq", OPSCHED_OP_RESHAPE, &at, z);
    at.shape.shape = (opsched_shape){3, {2, 2, 6}};
    z = op1(g, "expand", OPSCHED_OP_EXPAND, &at, z);
    memset(&at, 0, sizeof(at));
    at.reduce.n_axes = 1;
    at.reduce.axes[0] = 1;
    at.reduce.fn = OPSCHED_REDUCE_SUM;
    z = op1(g, "sum", OPSCHED_OP_REDUCE, &at, z);
    memset(&at, 0, sizeof(at));
    at.shape.shape = (opsched_shape){4, {2, 3, 3, 4}};
    int map = op1(g, "map", OPSCHED_OP_RESHAPE, &at, d);
    int gp = op1(g, "gap", OPSCHED_OP_GLOBALAVGPOOL, NULL, map);
    at.shape.shape = (opsched_shape){2, {2, 3}};
    gp = op1(g, "gap2", OPSCHED_OP_RESHAPE, &at, gp);
    gp = op2(g, "mm3", OPSCHED_OP_MATMUL, gp, weight(g, "w3", 2, 3, 6));
    z = op2(g, "join", OPSCHED_OP_ADD, z, gp);
    memset(&at, 0, sizeof(at));
    at.axis.axis = -1;
    int y = op1(g, "logsoftmax", OPSCHED_OP_LOGSOFTMAX, &at, z);
    assert_int_equal(opsched_graph_mark_output(g, y), OPSCHED_OK);
    set_weights(g);
    return g;
}

static int constant(opsched_graph *g, const char *name, opsched_dtype dt, const opsched_shape *s,
                    const void *data, size_t bytes)
{
    int id = -1;
    assert_int_equal(opsched_graph_add_tensor(g, name, OPSCHED_TENSOR_CONSTANT, dt, s, &id),
                     OPSCHED_OK);
    assert_int_equal(opsched_graph_set_data(g, id, data, bytes), OPSCHED_OK);
    return id;
}

static int transpose4(opsched_graph *g, const char *name, int x, int a, int b, int c, int d)
{
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    at.transpose.n = 4;
    at.transpose.perm[0] = a;
    at.transpose.perm[1] = b;
    at.transpose.perm[2] = c;
    at.transpose.perm[3] = d;
    return op1(g, name, OPSCHED_OP_TRANSPOSE, &at, x);
}

/* A transformer layer as exporters write it, attention unfused: token
 * embeddings (Gather of E [6, 8] by constant ids [2, 5]) plus the input
 * x [2, 5, 8]; Q, K, V products split into 2 heads of 4 (Reshape,
 * Transpose); scores / 2 with a causal Where; Softmax; the product with V
 * merged back; the halves of the hidden axis swapped (Slice, Concat);
 * Cast; LayerNorm; the output product Wo [8, 3] -> y [2, 5, 3]. */
static opsched_graph *ad_net3(opsched_ctx *ctx)
{
    opsched_graph *g = NULL;
    assert_int_equal(opsched_graph_create(ctx, "ad3", &g), OPSCHED_OK);
    opsched_shape xs = {3, {2, 5, 8}}, is = {2, {2, 5}}, cs = {4, {1, 1, 5, 5}}, one = {1, {1}};
    int x;
    assert_int_equal(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x),
                     OPSCHED_OK);
    const int64_t ids[10] = {3, 0, 5, 3, 1, 2, 2, 4, 0, 5};
    int idx = constant(g, "ids", OPSCHED_INT64, &is, ids, sizeof(ids));
    int emb_in[2] = {weight(g, "E", 2, 6, 8), idx}, e = -1;
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    assert_int_equal(opsched_graph_add_node(g, "embed", OPSCHED_OP_GATHER, &at, emb_in, 2, 1, NULL, &e),
                     OPSCHED_OK);
    int h = op2(g, "embed_add", OPSCHED_OP_ADD, e, x);
    int q = op2(g, "q", OPSCHED_OP_MATMUL, h, weight(g, "wq", 2, 8, 8));
    int k = op2(g, "k", OPSCHED_OP_MATMUL, h, weight(g, "wk", 2, 8, 8));
    int v = op2(g, "v", OPSCHED_OP_MATMUL, h, weight(g, "wv", 2, 8, 8));
    memset(&at, 0, sizeof(at));
    at.shape.shape = (opsched_shape){4, {2, 5, 2, 4}};
    q = transpose4(g, "qt", op1(g, "qr", OPSCHED_OP_RESHAPE, &at, q), 0, 2, 1, 3);
    k = transpose4(g, "kt", op1(g, "kr", OPSCHED_OP_RESHAPE, &at, k), 0, 2, 3, 1);
    v = transpose4(g, "vt", op1(g, "vr", OPSCHED_OP_RESHAPE, &at, v), 0, 2, 1, 3);
    int sc = op2(g, "scores", OPSCHED_OP_MATMUL, q, k);
    const float two = 2.0f, neg = -1e4f;
    sc = op2(g, "scale", OPSCHED_OP_DIV, sc, constant(g, "two", OPSCHED_F32, &one, &two, 4));
    unsigned char causal[25];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            causal[i * 5 + j] = j <= i;
    int w_in[3] = {constant(g, "causal", OPSCHED_BOOL, &cs, causal, sizeof(causal)), sc,
                   constant(g, "neg", OPSCHED_F32, &one, &neg, 4)},
        msk = -1;
    assert_int_equal(opsched_graph_add_node(g, "mask", OPSCHED_OP_WHERE, NULL, w_in, 3, 1, NULL, &msk),
                     OPSCHED_OK);
    memset(&at, 0, sizeof(at));
    at.axis.axis = -1;
    int p = op1(g, "softmax", OPSCHED_OP_SOFTMAX, &at, msk);
    int o = transpose4(g, "ot", op2(g, "pv", OPSCHED_OP_MATMUL, p, v), 0, 2, 1, 3);
    memset(&at, 0, sizeof(at));
    at.shape.shape = xs;
    o = op1(g, "merge", OPSCHED_OP_RESHAPE, &at, o);
    int halves[2];
    for (int i = 0; i < 2; i++) {
        memset(&at, 0, sizeof(at));
        for (int d = 0; d < 3; d++) {
            at.slice.starts[d] = d == 2 ? 4 * i : 0;
            at.slice.ends[d] = d == 2 ? 4 * i + 4 : xs.d[d];
            at.slice.steps[d] = 1;
        }
        halves[1 - i] = op1(g, i ? "hi" : "lo", OPSCHED_OP_SLICE, &at, o);
    }
    memset(&at, 0, sizeof(at));
    at.axis.axis = 2;
    int sw = -1;
    assert_int_equal(opsched_graph_add_node(g, "swap", OPSCHED_OP_CONCAT, &at, halves, 2, 1, NULL, &sw),
                     OPSCHED_OK);
    memset(&at, 0, sizeof(at));
    at.cast.to = OPSCHED_F32;
    sw = op1(g, "cast", OPSCHED_OP_CAST, &at, sw);
    int res = op2(g, "residual", OPSCHED_OP_ADD, sw, h);
    int ln_in[3] = {res, weight(g, "ln_g", 1, 8, 0), weight(g, "ln_b", 1, 8, 0)}, ln = -1;
    memset(&at, 0, sizeof(at));
    at.layernorm.axis = -1;
    at.layernorm.epsilon = 1e-5f;
    assert_int_equal(opsched_graph_add_node(g, "ln", OPSCHED_OP_LAYERNORM, &at, ln_in, 3, 1, NULL, &ln),
                     OPSCHED_OK);
    int y = op2(g, "out", OPSCHED_OP_MATMUL, ln, weight(g, "wo", 2, 8, 3));
    assert_int_equal(opsched_graph_mark_output(g, y), OPSCHED_OK);
    set_weights(g);
    return g;
}

static int conv_node(opsched_graph *g, const char *name, int x, int w, int b, int64_t stride,
                     int64_t dilation, const int64_t pads[4], int64_t k)
{
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    at.conv.kernel[0] = at.conv.kernel[1] = k;
    at.conv.stride[0] = at.conv.stride[1] = stride;
    at.conv.dilation[0] = at.conv.dilation[1] = dilation;
    memcpy(at.conv.pads, pads, sizeof(at.conv.pads));
    at.conv.groups = 1;
    int in[3] = {x, w, b}, y = -1;
    opsched_status st = opsched_graph_add_node(g, name, OPSCHED_OP_CONV, &at, in, b >= 0 ? 3 : 2,
                                               1, NULL, &y);
    built(g, st);
    return y;
}

/* x [2, 3, 7, 7] -> Conv 3x3 stride 2 pad 1 (W1 [4, 3, 3, 3], b1) -> Relu
 * -> Conv 2x2 dilation 2, pads 0,1,1,0 (W2 [5, 4, 2, 2]) -> Conv 1x1 stride
 * 2 (W4 [2, 5, 1, 1], b4: the stride leaves rows out) -> GlobalAveragePool
 * -> Flatten -> Linear(3) -> y [2, 3]. */
static opsched_graph *ad_cnn(opsched_ctx *ctx)
{
    opsched_graph *g = NULL;
    assert_int_equal(opsched_graph_create(ctx, "ad_cnn", &g), OPSCHED_OK);
    opsched_shape xs = {4, {2, 3, 7, 7}};
    int x;
    assert_int_equal(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x),
                     OPSCHED_OK);
    opsched_shape w1 = {4, {4, 3, 3, 3}}, w2 = {4, {5, 4, 2, 2}}, w4 = {4, {2, 5, 1, 1}};
    int iw1, iw2, iw4;
    assert_int_equal(opsched_graph_add_tensor(g, "w1", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &w1, &iw1),
                     OPSCHED_OK);
    assert_int_equal(opsched_graph_add_tensor(g, "w2", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &w2, &iw2),
                     OPSCHED_OK);
    assert_int_equal(opsched_graph_add_tensor(g, "w4", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &w4, &iw4),
                     OPSCHED_OK);
    const int64_t p1[4] = {1, 1, 1, 1}, p2[4] = {0, 1, 1, 0}, p0[4] = {0, 0, 0, 0};
    int h = conv_node(g, "conv1", x, iw1, weight(g, "b1", 1, 4, 0), 2, 1, p1, 3);
    h = op1(g, "relu", OPSCHED_OP_RELU, NULL, h);
    h = conv_node(g, "conv2", h, iw2, -1, 1, 2, p2, 2);
    h = conv_node(g, "conv3", h, iw4, weight(g, "b4", 1, 2, 0), 2, 1, p0, 1);
    h = op1(g, "gap", OPSCHED_OP_GLOBALAVGPOOL, NULL, h);
    int f = -1, y = -1;
    assert_int_equal(opsched_build_flatten(g, "flat", h, 1, &f), OPSCHED_OK);
    assert_int_equal(opsched_build_linear(g, "fc", f, 3, 1, &y), OPSCHED_OK);
    assert_int_equal(opsched_graph_mark_output(g, y), OPSCHED_OK);
    set_weights(g);
    return g;
}

static int grouped_conv(opsched_graph *g, const char *name, int x, int64_t m, int64_t cg,
                        int64_t groups, int bias)
{
    char wn[64];
    snprintf(wn, sizeof(wn), "%s.w", name);
    opsched_shape ws = {4, {m, cg, 3, 3}};
    int w = -1, b = -1;
    assert_int_equal(opsched_graph_add_tensor(g, wn, OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &ws, &w),
                     OPSCHED_OK);
    if (bias) {
        snprintf(wn, sizeof(wn), "%s.b", name);
        b = weight(g, wn, 1, m, 0);
    }
    opsched_op_attr at;
    memset(&at, 0, sizeof(at));
    at.conv.kernel[0] = at.conv.kernel[1] = 3;
    at.conv.stride[0] = at.conv.stride[1] = 1;
    at.conv.dilation[0] = at.conv.dilation[1] = 1;
    for (int i = 0; i < 4; i++)
        at.conv.pads[i] = 1;
    at.conv.groups = groups;
    int in[3] = {x, w, b}, y = -1;
    assert_int_equal(opsched_graph_add_node(g, name, OPSCHED_OP_CONV, &at, in, bias ? 3 : 2, 1, NULL,
                                            &y),
                     OPSCHED_OK);
    return y;
}

/* x [2, 4, 8, 8] -> Conv 3x3 in 2 groups (6 outputs) -> BatchNorm (in
 * training form: its running statistics are buffers) -> Relu -> MaxPool
 * 2x2 -> depthwise Conv 3x3 -> AveragePool 2x2 -> GlobalAveragePool ->
 * Flatten -> Linear(3) -> y [2, 3]. */
static opsched_graph *ad_cnn2(opsched_ctx *ctx)
{
    opsched_graph *g = NULL;
    assert_int_equal(opsched_graph_create(ctx, "ad_cnn2", &g), OPSCHED_OK);
    opsched_shape xs = {4, {2, 4, 8, 8}};
    int x, h, f, y;
    assert_int_equal(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x),
                     OPSCHED_OK);
    h = grouped_conv(g, "conv1", x, 6, 2, 2, 1);
    assert_int_equal(opsched_build_batchnorm(g, "bn", h, 1e-5f, &h), OPSCHED_OK);
    h = op1(g, "relu", OPSCHED_OP_RELU, NULL, h);
    assert_int_equal(opsched_build_pool(g, "maxpool", OPSCHED_OP_MAXPOOL, h, 2, 2, 0, 0, 0, &h),
                     OPSCHED_OK);
    h = grouped_conv(g, "dw", h, 6, 1, 6, 0);
    assert_int_equal(opsched_build_pool(g, "avgpool", OPSCHED_OP_AVGPOOL, h, 2, 2, 0, 0, 0, &h),
                     OPSCHED_OK);
    h = op1(g, "gap", OPSCHED_OP_GLOBALAVGPOOL, NULL, h);
    assert_int_equal(opsched_build_flatten(g, "flat", h, 1, &f), OPSCHED_OK);
    assert_int_equal(opsched_build_linear(g, "fc", f, 3, 1, &y), OPSCHED_OK);
    assert_int_equal(opsched_graph_mark_output(g, y), OPSCHED_OK);
    set_weights(g);
    return g;
}

/* The training graphs of ad_net, ad_net2, ad_net3, ad_cnn and ad_cnn2 on the CPU backend: every
 * gradient element against the central difference of the loss. */
static void test_autodiff_gradients(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    opsched_device *dev = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    if (opsched_device_open(ctx, "cpu", 0, &dev) != OPSCHED_OK) {
        print_message("no cpu backend in this build: skipped\n");
        opsched_ctx_free(ctx);
        skip();
    }
    opsched_graph *g = ad_net(ctx);
    float x[24], target[12];
    for (int i = 0; i < 24; i++)
        x[i] = 0.9f * cosf(0.37f * (float)i + 0.2f);
    for (int r = 0; r < 4; r++) /* probabilities a row (cross-entropy), any values for MSE */
        for (int k = 0; k < 3; k++)
            target[r * 3 + k] = k == r % 3 ? 0.7f : 0.15f;
    check_gradients(dev, g, x, 24, target, 12, 30 + 5 + 15 + 3);
    opsched_graph *g2 = ad_net2(ctx);
    float t2[12];
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 6; k++)
            t2[r * 6 + k] = k == 2 * r + 1 ? 0.5f : 0.1f;
    check_gradients(dev, g2, x, 24, t2, 12, 24 + 6 + 6 + 6 + 72 + 18);
    opsched_graph_free(g2);
    opsched_graph *g3 = ad_net3(ctx);
    float x3[80], t3[30];
    for (int i = 0; i < 80; i++)
        x3[i] = 0.5f * sinf(0.61f * (float)i + 0.4f);
    for (int r = 0; r < 10; r++)
        for (int k = 0; k < 3; k++)
            t3[r * 3 + k] = k == r % 3 ? 0.6f : 0.2f;
    check_gradients(dev, g3, x3, 80, t3, 30, 48 + 3 * 64 + 8 + 8 + 24);
    opsched_graph_free(g3);
    opsched_graph *g4 = ad_cnn(ctx);
    float x4[294], t4[6] = {0.2f, 0.5f, 0.3f, 0.6f, 0.1f, 0.3f};
    for (int i = 0; i < 294; i++)
        x4[i] = 0.8f * sinf(0.53f * (float)i + 0.1f);
    check_gradients(dev, g4, x4, 294, t4, 6, 108 + 4 + 80 + 10 + 2 + 6 + 3);
    opsched_graph_free(g4);
    opsched_graph *g5 = ad_cnn2(ctx);
    float x5[512];
    for (int i = 0; i < 512; i++)
        x5[i] = 0.8f * sinf(0.71f * (float)i + 0.3f) + 0.1f * cosf(0.05f * (float)i);
    check_gradients(dev, g5, x5, 512, t4, 6, 108 + 6 + 6 + 6 + 54 + 18 + 3);
    opsched_graph_free(g5);
    /* an operator without a backward rule on the way to a parameter */
    opsched_graph *h = NULL;
    assert_int_equal(opsched_graph_create(ctx, "no_rule", &h), OPSCHED_OK);
    opsched_shape xs = {2, {2, 4}};
    int xi, f, q;
    assert_int_equal(opsched_graph_add_tensor(h, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &xi),
                     OPSCHED_OK);
    assert_int_equal(opsched_build_linear(h, "fc", xi, 4, 1, &f), OPSCHED_OK);
    assert_int_equal(opsched_build_unary(h, "erf", OPSCHED_OP_ERF, NULL, f, &q), OPSCHED_OK);
    assert_int_equal(opsched_graph_mark_output(h, q), OPSCHED_OK);
    opsched_training_options o;
    memset(&o, 0, sizeof(o));
    opsched_graph *t = NULL;
    assert_int_equal(opsched_training_graph(h, &o, &t), OPSCHED_ERR_UNSUPPORTED);
    assert_null(t);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "'erf'"));
    opsched_graph_free(h);
    opsched_graph_free(g);
    opsched_device_close(dev);
    opsched_ctx_free(ctx);
}

/* The optimizer step after backward: SGD (zero momentum buffer) gives
 * w - 0.01 (g + wd w); AdamW (zero moments, step 1) gives
 * w (1 - 1e-3 wd) - 1e-3 g / (|g| + 1e-8), each against the gradient the
 * same graph outputs. */
static void check_step(opsched_device *dev, opsched_graph *g, opsched_optimizer opt, double wd)
{
    opsched_training_options o;
    memset(&o, 0, sizeof(o));
    o.optimizer = opt;
    o.weight_decay = wd;
    o.step = 1;
    opsched_graph *t = NULL;
    assert_int_equal(opsched_training_graph(g, &o, &t), OPSCHED_OK);
    opsched_exec_options eo;
    memset(&eo, 0, sizeof(eo));
    opsched_executor *ex = NULL;
    assert_int_equal(opsched_executor_create(dev, t, NULL, &eo, &ex), OPSCHED_OK);
    float x[24], target[12];
    for (int i = 0; i < 24; i++) x[i] = 0.3f * cosf(0.7f * (float)i);
    for (int i = 0; i < 12; i++) target[i] = i % 3 == 0 ? 1.0f : 0.0f;
    int n_states = 0;
    for (int i = 0; i < opsched_graph_num_inputs(t); i++) {
        const opsched_tensor *in = opsched_graph_tensor(t, opsched_graph_input(t, i));
        size_t n = (size_t)opsched_shape_numel(&in->shape);
        float *v = calloc(n, sizeof(float));
        assert_non_null(v);
        if (i == 0) memcpy(v, x, sizeof(x));
        if (i == 1) memcpy(v, target, sizeof(target));
        if (i >= 2) {
            assert_true(strncmp(in->name, "state/", 6) == 0);
            n_states++;
        }
        assert_int_equal(opsched_executor_set_input(ex, i, v, n), OPSCHED_OK);
        free(v);
    }
    int n_weights = 0;
    for (int i = 0; i < opsched_graph_num_tensors(g); i++)
        n_weights += opsched_graph_tensor(g, i)->kind == OPSCHED_TENSOR_WEIGHT;
    assert_int_equal(n_states, n_weights * (opt == OPSCHED_OPTIMIZER_SGD ? 1 : 2));
    assert_int_equal(opsched_executor_run(ex), OPSCHED_OK);
    assert_int_equal(opsched_device_sync(dev), OPSCHED_OK);
    int checked = 0;
    for (int i = 0; i < opsched_graph_num_tensors(g); i++) {
        const opsched_tensor *w = opsched_graph_tensor(g, i);
        if (w->kind != OPSCHED_TENSOR_WEIGHT) continue;
        char gname[300], sname[300];
        snprintf(gname, sizeof(gname), "grad/%s", w->name);
        snprintf(sname, sizeof(sname), "step/%s", w->name);
        int gk = -1, sk = -1;
        for (int k = 0; k < opsched_graph_num_outputs(t); k++) {
            const char *name = opsched_graph_tensor(t, opsched_graph_output(t, k))->name;
            if (strcmp(name, gname) == 0) gk = k;
            if (strcmp(name, sname) == 0) sk = k;
        }
        assert_true(gk >= 0 && sk >= 0);
        size_t n = opsched_executor_output_numel(ex, gk);
        float *gv = malloc(n * sizeof(float)), *sv = malloc(n * sizeof(float));
        assert_non_null(gv);
        assert_non_null(sv);
        assert_int_equal(opsched_executor_get_output(ex, gk, gv, n), OPSCHED_OK);
        assert_int_equal(opsched_executor_get_output(ex, sk, sv, n), OPSCHED_OK);
        const float *wv = w->data;
        for (size_t e = 0; e < n; e++) {
            double want = opt == OPSCHED_OPTIMIZER_SGD
                              ? wv[e] - 0.01 * (gv[e] + wd * wv[e])
                              : wv[e] * (1 - 1e-3 * (wd > 0 ? wd : 0.01)) -
                                    1e-3 * gv[e] / (fabs(gv[e]) + 1e-8);
            assert_true(fabs(sv[e] - want) <= 1e-5 * (1 + fabs(want)));
        }
        free(gv);
        free(sv);
        checked++;
    }
    assert_int_equal(checked, n_weights);
    opsched_executor_free(ex);
    opsched_graph_free(t);
}

static void test_optimizer_step(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_device *dev = NULL;
    assert_int_equal(opsched_device_open(ctx, "cpu", 0, &dev), OPSCHED_OK);
    opsched_graph *g = ad_net(ctx);
    check_step(dev, g, OPSCHED_OPTIMIZER_SGD, 0.0);
    check_step(dev, g, OPSCHED_OPTIMIZER_SGD, 0.05);
    check_step(dev, g, OPSCHED_OPTIMIZER_ADAMW, 0.0);
    opsched_graph_free(g);
    opsched_device_close(dev);
    opsched_ctx_free(ctx);
}

/* The names training runs are stored under, and back. */
static void test_run_names(void **state)
{
    (void)state;
    static const struct {
        opsched_training_options o;
        const char *name;
    } cases[] = {
        {{.loss = OPSCHED_LOSS_CROSS_ENTROPY}, "resnet50-train-ce"},
        {{.loss = OPSCHED_LOSS_MSE}, "resnet50-train-mse"},
        {{.step = 1}, "resnet50-train-ce-sgd"},
        {{.step = 1, .weight_decay = 0.0001}, "resnet50-train-ce-sgd-wd0.0001"},
        {{.step = 1, .optimizer = OPSCHED_OPTIMIZER_ADAMW, .weight_decay = 0.01},
         "resnet50-train-ce-adamw"},
        {{.step = 1, .optimizer = OPSCHED_OPTIMIZER_ADAMW, .impl = OPSCHED_OPTIMIZER_FUSED,
          .weight_decay = 0.05},
         "resnet50-train-ce-adamw-fused-wd0.05"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[128], model[64];
        opsched_training_options back;
        assert_true(opsched_training_run_name("resnet50", &cases[i].o, buf, sizeof(buf)) > 0);
        assert_string_equal(buf, cases[i].name);
        assert_int_equal(opsched_training_parse_run_name(buf, model, sizeof(model), &back), 1);
        assert_string_equal(model, "resnet50");
        assert_int_equal(back.loss, cases[i].o.loss);
        assert_int_equal(back.step, cases[i].o.step);
        assert_int_equal(back.optimizer, cases[i].o.optimizer);
        assert_int_equal(back.impl, cases[i].o.impl);
        if (cases[i].o.optimizer == OPSCHED_OPTIMIZER_SGD)
            assert_true(back.weight_decay == cases[i].o.weight_decay);
    }
    char buf[16], model[64];
    opsched_training_options o = {.step = 1};
    assert_int_equal(opsched_training_run_name("resnet50", &o, buf, sizeof(buf)), -1);
    /* not training names */
    assert_int_equal(opsched_training_parse_run_name("resnet50", model, sizeof(model), &o), 0);
    assert_int_equal(opsched_training_parse_run_name("resnet50-train-xx", model, sizeof(model), &o),
                     0);
    assert_int_equal(
        opsched_training_parse_run_name("resnet50-train-ce-sgd-extra", model, sizeof(model), &o), 0);
    assert_int_equal(opsched_training_parse_run_name("-train-ce", model, sizeof(model), &o), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp_steps),   cmocka_unit_test(test_mlp_memory),
        cmocka_unit_test(test_mlp_memory_sharded),
        cmocka_unit_test(test_block_rounding), cmocka_unit_test(test_zoo_structure),
        cmocka_unit_test(test_no_loss), cmocka_unit_test(test_autodiff_gradients),
        cmocka_unit_test(test_optimizer_step), cmocka_unit_test(test_run_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
