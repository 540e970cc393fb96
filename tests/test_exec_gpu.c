/*
 * test_exec_gpu.c - the executor running the sequential schedule on CUDA
 * device 0: resnet50 and googlenet (batch 1, BN folded, the same weights
 * and input everywhere) in every math mode against the CPU executor in
 * fp32, NHWC included; capture and replay as a CUDA graph against an
 * ordinary run; layer timing.
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
#include "support/netref.h"
#include "support/rng.h"

static struct {
    opsched_ctx *ctx;
    opsched_device *gpu; /* NULL: no CUDA device, every test skips */
    opsched_device *cpu; /* NULL: no CPU backend; CUDA fp32 is the baseline then */
} env;

/* Relative L2 error allowed against fp32 on the CPU, by math mode. */
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

static opsched_graph *zoo(const char *name, uint64_t seed)
{
    opsched_graph *g = NULL;
    opsched_zoo_options zo = {.batch = 1, .fold_bn = 1};
    CHECK(opsched_zoo_build(env.ctx, name, &zo, &g));
    assert_int_equal(netref_set_weights(g, seed), 0);
    return g;
}

static float *random_values(size_t n, uint64_t seed)
{
    float *v = malloc(sizeof(float) * n);
    assert_non_null(v);
    test_rng r;
    test_rng_seed(&r, seed);
    for (size_t k = 0; k < n; k++)
        v[k] = (float)test_rng_uniform(&r, -1, 1);
    return v;
}

static size_t input_numel(const opsched_graph *g)
{
    return (size_t)opsched_shape_numel(&opsched_graph_tensor(g, opsched_graph_input(g, 0))->shape);
}

/* Output 0 of one inference of g on dev under opts, from input x; NULL
 * (with the reason printed) when the executor cannot be made and
 * may_fail is set. */
static float *infer(opsched_device *dev, const opsched_graph *g, const opsched_exec_options *o,
                    const float *x, int may_fail, size_t *n)
{
    opsched_executor *ex = NULL;
    opsched_status st = opsched_executor_create(dev, g, NULL, o, &ex);
    if (st != OPSCHED_OK && may_fail) {
        print_message("  (cannot run: %s: %s)\n", opsched_status_str(st),
                      opsched_ctx_last_error(env.ctx));
        return NULL;
    }
    CHECK(st);
    CHECK(opsched_executor_set_input(ex, 0, x, input_numel(g)));
    CHECK(opsched_executor_run(ex));
    CHECK(opsched_device_sync(dev));
    *n = opsched_executor_output_numel(ex, 0);
    float *y = malloc(sizeof(float) * *n);
    assert_non_null(y);
    CHECK(opsched_executor_get_output(ex, 0, y, *n));
    opsched_exec_info info;
    CHECK(opsched_executor_info(ex, &info));
    print_message("  arena %zu bytes, weights %zu bytes, workspaces %zu bytes, %d fallbacks\n",
                  info.arena_bytes, info.weight_bytes, info.workspace_bytes, info.n_fallbacks);
    opsched_executor_free(ex);
    return y;
}

/* Runs g on the GPU under o and compares its output with ref (n_ref fp32
 * values): 1 when the relative L2 error is over math mode m's tolerance
 * (printed either way). */
static int gpu_output_fails(const opsched_graph *g, const opsched_exec_options *o, const float *x,
                            const float *ref, size_t n_ref, opsched_math m)
{
    size_t n = 0;
    float *y = infer(env.gpu, g, o, x, 0, &n);
    assert_non_null(y);
    assert_int_equal(n, n_ref);
    double err = netref_rel_l2(y, ref, n);
    print_message("  relative L2 error against fp32 %.3g (limit %.0e)%s\n", err, tolerance[m],
                  err < tolerance[m] ? "" : "  FAILED");
    free(y);
    return !(err < tolerance[m]);
}

/* fuse: every mode with fusion on (conv epilogues and residual Adds, as
 * deployed) against the unfused fp32 reference. */
static void check_graph_modes(opsched_graph *g, const char *model, int fuse);

static void check_math_modes(const char *model, int fuse)
{
    opsched_graph *g = zoo(model, 21);
    check_graph_modes(g, model, fuse);
    opsched_graph_free(g);
}

/* The algorithm policy check_graph_modes asks for (NULL: the default), the
 * library's where a layer cannot run it. */
static const char *modes_algo;

static void check_graph_modes(opsched_graph *g, const char *model, int fuse)
{
    size_t nx = input_numel(g), n_ref = 0, n = 0;
    float *x = random_values(nx, 8);
    opsched_exec_options base = {.plan = {.math = OPSCHED_MATH_FP32}};
    print_message("%s: baseline fp32 on %s\n", model, env.cpu ? "cpu" : "cuda");
    float *ref = infer(env.cpu ? env.cpu : env.gpu, g, &base, x, 0, &n_ref);
    int failures = 0; /* every mode is tried and printed before the verdict */
    for (int layout = 0; layout < 2; layout++) {
        for (int m = 0; m < OPSCHED_MATH_COUNT; m++) {
            opsched_exec_options o = {.plan = {.algo = modes_algo,
                                               .math = (opsched_math)m,
                                               .layout = (opsched_layout)layout,
                                               .fuse_activation = fuse},
                                      .algo_fallback = modes_algo ? "heuristic" : NULL};
            print_message("%s on cuda, %s %s%s%s%s:\n", model, opsched_math_name((opsched_math)m),
                          layout ? "NHWC" : "NCHW", fuse ? ", fused" : "",
                          modes_algo ? ", algorithm " : "", modes_algo ? modes_algo : "");
            /* NHWC is checked where the backend plans the whole network. */
            float *y = infer(env.gpu, g, &o, x, layout == 1, &n);
            if (!y) continue;
            assert_int_equal(n, n_ref);
            double err = netref_rel_l2(y, ref, n);
            print_message("  relative L2 error against fp32 %.3g (limit %.0e)%s\n", err,
                          tolerance[m], err < tolerance[m] ? "" : "  FAILED");
            failures += !(err < tolerance[m]);
            free(y);
        }
    }
    assert_int_equal(failures, 0);
    free(ref);
    free(x);
}

/* Element-wise chains as one kernel: after a convolution, Add (a bias of
 * [C, 1, 1]) -> Gelu -> Mul (a [1, C, 1, 1] scale, the running value its
 * second operand) -> Add (the input, a residual) -> Sigmoid runs as one
 * launch in both layouts and every math mode, against the CPU backend in
 * fp32 (which runs the nodes one by one). */
static void test_chains(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_shape xs = {4, {2, 16, 8, 8}};
    opsched_graph *g = netref_chain_graph(env.ctx, &xs, 31);
    assert_non_null(g);
    opsched_ew_chain ch;
    assert_int_equal(opsched_ew_chain_find(g, 1, &ch), 1);
    assert_int_equal(ch.n, 5);
    check_graph_modes(g, "chains", 1);
    for (int layout = 0; layout < 2; layout++) {
        opsched_exec_options o = {.plan = {.math = OPSCHED_MATH_FP32,
                                           .layout = (opsched_layout)layout,
                                           .fuse_activation = 1}};
        opsched_executor *ex = NULL;
        CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
        opsched_exec_info info;
        CHECK(opsched_executor_info(ex, &info));
        print_message("  chains, %s: %d launches; the head: %s\n", layout ? "NHWC" : "NCHW",
                      info.n_launches, opsched_executor_layer(ex, 1)->algo);
        for (int k = 2; k <= 5; k++)
            assert_int_equal(opsched_executor_layer(ex, k)->role, OPSCHED_ROLE_FUSED);
        assert_int_equal(info.n_launches, 2); /* the convolution and the chain */
        opsched_executor_free(ex);
    }
    opsched_graph_free(g);
}

/* Runs of movement nodes as one strided copy each: ShuffleNetV2's unit in
 * both layouts and every math mode against the CPU backend in fp32 (node
 * by node).  Under NHWC the shuffle's Reshapes copy between the
 * channels-last maps and the row-major 5-D view: with the runs each Slice
 * and the output gather straight from the shuffle's input, and the output
 * from the Concat's inputs (the Concat not written). */
static void test_movement_runs(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_shape xs = {4, {2, 16, 7, 5}};
    opsched_graph *g = netref_shuffle_graph(env.ctx, &xs, 47);
    assert_non_null(g);
    check_graph_modes(g, "shuffle", 1);
    int cat = -1;
    for (int i = 0; i < opsched_graph_num_nodes(g); i++)
        if (opsched_graph_node(g, i)->op == OPSCHED_OP_CONCAT) cat = i;
    assert_true(cat > 0);
    const unsigned ablate[3] = {0, OPSCHED_ABLATE_CONCAT_GATHER, OPSCHED_ABLATE_MOVEMENT};
    for (int layout = 0; layout < 2; layout++) {
        int launches[3];
        for (int k = 0; k < 3; k++) {
            opsched_exec_options o = {.plan = {.math = OPSCHED_MATH_FP32,
                                               .layout = (opsched_layout)layout,
                                               .fuse_activation = 1,
                                               .ablate = ablate[k]}};
            opsched_executor *ex = NULL;
            CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
            opsched_exec_info info;
            CHECK(opsched_executor_info(ex, &info));
            launches[k] = info.n_launches;
            /* the output's run reads the Concat's inputs: the Concat runs nothing */
            assert_int_equal(opsched_executor_layer(ex, cat)->role == OPSCHED_ROLE_FUSED, k == 0);
            opsched_executor_free(ex);
        }
        print_message("  shuffle, %s: %d launches with movement runs from the Concat's inputs, "
                      "%d with the Concat written, %d without runs\n",
                      layout ? "NHWC" : "NCHW", launches[0], launches[1], launches[2]);
        assert_true(launches[0] < launches[1]);
        assert_true(launches[1] < launches[2]);
    }
    opsched_graph_free(g);
}

/* The squeeze-and-excitation gate as one kernel: two SE blocks (biases,
 * Swish and Sigmoid; no biases, Relu and HardSigmoid) in both layouts and
 * every math mode against the unfused fp32 plan.  Shapes, one launch
 * each: a large map that the kernel splits into parts, a small one of many
 * channels, and one of 30 channels, which the channels-last sums read a
 * channel a lane (not in 16-byte vectors); the planner may run these as
 * two launches where that measured faster, and an eight-sample gate
 * (the batch where one launch's last blocks take most of its time) takes
 * whichever it measures faster too.  Gates whose layers are too
 * large for one block run as two launches ("se2"), the second of which
 * runs the Mul by the gate too: 100 channels and 36 hidden (fp16's 100
 * channels not in 16-byte vectors), EfficientNet's last stage (1152
 * channels, 48 hidden), MobileNetV3's (960, 240; two samples) and its
 * 672 x 168 on a 14x14 map; with `--ablate se-mul` the Mul is a launch of
 * its own. */
static void test_se_gate(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    const opsched_shape shapes[8] = {
        {4, {2, 40, 48, 48}}, {4, {3, 240, 7, 7}},  {4, {2, 30, 20, 20}}, {4, {8, 256, 12, 12}},
        {4, {2, 100, 9, 9}},  {4, {1, 1152, 7, 7}}, {4, {2, 960, 7, 7}},  {4, {1, 672, 14, 14}}};
    const int64_t hidden[8] = {10, 12, 8, 16, 36, 48, 240, 168};
    for (int i = 0; i < 8; i++) {
        opsched_graph *g = netref_se_graph(env.ctx, &shapes[i], hidden[i], 37 + i);
        assert_non_null(g);
        check_graph_modes(g, "se", 1);
        for (int layout = 0; layout < 2; layout++)
            for (int apart = 0; apart < 2; apart++) {
                const char *two = apart ? "se2:5" : "se2:6";
                opsched_exec_options o = {.plan = {.math = OPSCHED_MATH_FP32,
                                                   .layout = (opsched_layout)layout,
                                                   .fuse_activation = 1,
                                                   .ablate = apart ? OPSCHED_ABLATE_SE_MUL : 0}};
                opsched_executor *ex = NULL;
                CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
                opsched_exec_info info;
                CHECK(opsched_executor_info(ex, &info));
                const char *a0 = opsched_executor_layer(ex, 0)->algo;
                const char *a6 = opsched_executor_layer(ex, 6)->algo;
                print_message("  se %d, %s%s: %d launches; the means: %s, %s\n", i,
                              layout ? "NHWC" : "NCHW", apart ? ", se-mul ablated" : "",
                              info.n_launches, a0, a6);
                /* the first four: one launch or two, as measured */
                if (i < 4 && strcmp(a0, two) != 0)
                    assert_string_equal(a0, "se:5");
                else
                    assert_string_equal(a0, two);
                if (i < 4 && strcmp(a6, two) != 0)
                    assert_string_equal(a6, "se:5");
                else
                    assert_string_equal(a6, two);
                opsched_executor_free(ex);
            }
        opsched_graph_free(g);
    }
}

/* A MatMul's bias Add in cuBLASLt's epilogue, with Relu and tanh GELU
 * fused too, a residual Add through C, and Sigmoid left to its own kernel, in every math mode
 * against the CPU backend in fp32, node by node.  A 4-D input under NHWC goes through the NCHW
 * adapter, which runs the product without its bias. */
static void test_bias_epilogue(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_shape x4 = {4, {2, 3, 5, 12}};
    opsched_graph *g4 = netref_bias_graph(env.ctx, &x4, 59);
    assert_non_null(g4);
    check_graph_modes(g4, "bias 4-D", 1);
    opsched_graph_free(g4);
    opsched_shape xs = {3, {4, 50, 12}};
    opsched_graph *g = netref_bias_graph(env.ctx, &xs, 53);
    assert_non_null(g);
    check_graph_modes(g, "bias", 1);
    opsched_exec_options o = {.plan = {.math = OPSCHED_MATH_FP32, .fuse_activation = 1}};
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
    opsched_exec_info info;
    CHECK(opsched_executor_info(ex, &info));
    print_message("  bias: %d launches; the products: %s, %s, %s, %s, %s\n", info.n_launches,
                  opsched_executor_layer(ex, 0)->algo, opsched_executor_layer(ex, 3)->algo,
                  opsched_executor_layer(ex, 6)->algo, opsched_executor_layer(ex, 9)->algo,
                  opsched_executor_layer(ex, 11)->algo);
    assert_string_equal(opsched_executor_layer(ex, 0)->algo, "cublaslt_bias_act");
    assert_string_equal(opsched_executor_layer(ex, 3)->algo, "cublaslt_bias_act");
    assert_string_equal(opsched_executor_layer(ex, 11)->algo, "cublaslt_bias_residual");
    /* the Sigmoid: a kernel after cuBLASLt's product, or in cuDNN's graph
     * with it where that measured faster */
    int graph = strncmp(opsched_executor_layer(ex, 6)->algo, "cudnn_matmul_bias_sigmoid", 25) == 0;
    if (!graph) assert_string_equal(opsched_executor_layer(ex, 6)->algo, "cublaslt_bias");
    assert_int_equal(opsched_executor_layer(ex, 8)->role,
                     graph ? OPSCHED_ROLE_FUSED : OPSCHED_ROLE_LAUNCH);
    assert_int_equal(opsched_executor_layer(ex, 13)->role, OPSCHED_ROLE_FUSED); /* the residual */
    assert_int_equal(info.n_launches, graph ? 6 : 7);
    opsched_executor_free(ex);
    opsched_graph_free(g);
}

/* A product, its bias and the activation after it as one cuDNN graph: an
 * MLP with the exact GELU, a Sigmoid and a HardSwish after its first
 * product, in every math mode and both layouts against fp32 on the CPU
 * (the planner's choice); with --algo cudnn the graph runs the GELU and
 * the Sigmoid (TF32, fp16, bf16; strict fp32 may find no engine without
 * tensor cores), within the mode's tolerance, and the HardSwish, which has
 * no pointwise mode in cuDNN, as a chain of them (scale, offset, clip,
 * times its input); a Mish, which has no form there, fails forced and
 * stays a kernel of its own. */
static void test_product_graph(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const struct {
        opsched_op_kind op;
        const char *name, *algo;
    } acts[] = {{OPSCHED_OP_GELU, "gelu", "cudnn_matmul_bias_gelu:"},
                {OPSCHED_OP_SIGMOID, "sigmoid", "cudnn_matmul_bias_sigmoid:"},
                {OPSCHED_OP_HARDSWISH, "hardswish", "cudnn_matmul_bias_hardswish:"},
                {OPSCHED_OP_UNARY, "mish", NULL}};
    opsched_op_attr mish;
    memset(&mish, 0, sizeof(mish));
    mish.unary.fn = OPSCHED_UNARY_MISH;
    opsched_shape xs = {3, {2, 40, 32}};
    for (size_t c = 0; c < sizeof(acts) / sizeof(acts[0]); c++) {
        opsched_graph *g = netref_mlp_graph(env.ctx, &xs, acts[c].op,
                                            acts[c].op == OPSCHED_OP_UNARY ? &mish : NULL, 91 + c);
        assert_non_null(g);
        char name[64];
        snprintf(name, sizeof name, "mlp %s", acts[c].name);
        check_graph_modes(g, name, 1);
        size_t nx = input_numel(g), n_ref = 0;
        float *x = random_values(nx, 13 + c);
        opsched_exec_options base = {.plan = {.math = OPSCHED_MATH_FP32}};
        float *ref = infer(env.cpu ? env.cpu : env.gpu, g, &base, x, 0, &n_ref);
        int failures = 0;
        for (int m = 0; m < OPSCHED_MATH_COUNT; m++) {
            opsched_exec_options o = {
                .plan = {.math = (opsched_math)m, .fuse_activation = 1, .algo = "cudnn"}};
            opsched_executor *ex = NULL;
            opsched_status st = opsched_executor_create(env.gpu, g, NULL, &o, &ex);
            if (!acts[c].algo || (m == OPSCHED_MATH_FP32 && st == OPSCHED_ERR_UNSUPPORTED)) {
                /* no pointwise mode (a forced graph fails, naming why), or no
                 * engine without tensor cores */
                assert_int_equal(st, OPSCHED_ERR_UNSUPPORTED);
                print_message("  %s, %s, --algo cudnn: %s\n", name,
                              opsched_math_name((opsched_math)m), opsched_ctx_last_error(env.ctx));
                opsched_ctx_clear_error(env.ctx);
                continue;
            }
            CHECK(st);
            const char *algo = opsched_executor_layer(ex, 0)->algo;
            print_message("  %s, %s, --algo cudnn: %s\n", name, opsched_math_name((opsched_math)m),
                          algo);
            assert_true(strncmp(algo, acts[c].algo, strlen(acts[c].algo)) == 0);
            assert_int_equal(opsched_executor_layer(ex, 2)->role, OPSCHED_ROLE_FUSED);
            opsched_executor_free(ex);
            failures += gpu_output_fails(g, &o, x, ref, n_ref, (opsched_math)m);
        }
        /* the planner's own choice for the Mish: the product, then a kernel */
        if (!acts[c].algo) {
            opsched_exec_options o = {.plan = {.math = OPSCHED_MATH_TF32, .fuse_activation = 1}};
            opsched_executor *ex = NULL;
            CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
            assert_string_equal(opsched_executor_layer(ex, 0)->algo, "cublaslt_bias");
            assert_int_equal(opsched_executor_layer(ex, 2)->role, OPSCHED_ROLE_LAUNCH);
            opsched_executor_free(ex);
        }
        assert_int_equal(failures, 0);
        free(ref);
        free(x);
        opsched_graph_free(g);
    }
}

/* A classifier head of Gemms with their bias C (torchvision's Linear
 * layers as ONNX exports them): Gemm -> HardSwish -> Gemm -> Relu -> Gemm.
 * Each Gemm takes C in cuBLASLt's bias epilogue (no copy of C first), the
 * Relu in that epilogue too, and the HardSwish in one cuDNN graph with the
 * product where that measured faster (forced with --algo cudnn where an
 * engine runs it), else as a kernel of its own; every math mode against
 * fp32 on the CPU. */
static void test_gemm_epilogue(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_shape xs = {2, {3, 96}};
    opsched_graph *g = netref_gemm_head_graph(env.ctx, &xs, 0, 29);
    assert_non_null(g);
    check_graph_modes(g, "gemm head", 1);
    size_t nx = input_numel(g), n_ref = 0;
    float *xv = random_values(nx, 23);
    opsched_exec_options base = {.plan = {.math = OPSCHED_MATH_FP32}};
    float *ref = infer(env.cpu ? env.cpu : env.gpu, g, &base, xv, 0, &n_ref);
    int failures = 0;
    for (int forced = 0; forced < 2; forced++)
        for (int m = 0; m < OPSCHED_MATH_COUNT; m++) {
            opsched_exec_options o = {.plan = {.math = (opsched_math)m,
                                               .fuse_activation = 1,
                                               .algo = forced ? "cudnn" : NULL},
                                      .algo_fallback = forced ? "heuristic" : NULL};
            opsched_executor *ex = NULL;
            CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
            const char *a1 = opsched_executor_layer(ex, 0)->algo;
            const char *a2 = opsched_executor_layer(ex, 2)->algo;
            const char *a3 = opsched_executor_layer(ex, 4)->algo;
            print_message("  gemm head %s%s: %s, %s, %s\n", opsched_math_name((opsched_math)m),
                          forced ? ", --algo cudnn" : "", a1, a2, a3);
            /* the bias in the product's epilogue everywhere, the Relu in it */
            assert_string_equal(a2, "cublaslt_bias_act");
            assert_int_equal(opsched_executor_layer(ex, 3)->role, OPSCHED_ROLE_FUSED);
            assert_string_equal(a3, "cublaslt_bias");
            /* the HardSwish: in the graph (fused) or a kernel after the product */
            if (strncmp(a1, "cudnn_matmul_bias_hardswish:", 28) == 0)
                assert_int_equal(opsched_executor_layer(ex, 1)->role, OPSCHED_ROLE_FUSED);
            else {
                assert_string_equal(a1, "cublaslt_bias");
                assert_int_equal(opsched_executor_layer(ex, 1)->role, OPSCHED_ROLE_LAUNCH);
            }
            opsched_executor_free(ex);
            failures += gpu_output_fails(g, &o, xv, ref, n_ref, (opsched_math)m);
        }
    assert_int_equal(failures, 0);
    free(ref);
    free(xv);
    opsched_graph_free(g);
}

/* A layout per tensor handed in (exec option rowmajor, what the stage
 * measurer gives a stage's copy: its network's): under NHWC a 4-D input
 * with no Transpose before it is an image unless the option says it is
 * row-major; either way the values are the CPU's. */
static void test_rowmajor_option(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_graph *g = NULL;
    opsched_shape xs = {4, {2, 6, 6, 8}};
    int x, y;
    CHECK(opsched_graph_create(env.ctx, "rows", &g));
    CHECK(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x));
    CHECK(opsched_build_unary(g, "relu", OPSCHED_OP_RELU, NULL, x, &y));
    CHECK(opsched_graph_mark_output(g, y));
    size_t nx = input_numel(g), n_ref = 0;
    float *xv = random_values(nx, 5);
    opsched_exec_options base = {.plan = {.math = OPSCHED_MATH_FP32}};
    float *ref = infer(env.cpu ? env.cpu : env.gpu, g, &base, xv, 0, &n_ref);
    unsigned char all[2] = {1, 1};
    for (int told = 0; told < 2; told++) {
        opsched_exec_options o = {
            .plan = {.math = OPSCHED_MATH_FP32, .layout = OPSCHED_LAYOUT_NHWC},
            .rowmajor = told ? all : NULL};
        opsched_executor *ex = NULL;
        CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
        opsched_exec_info info;
        CHECK(opsched_executor_info(ex, &info));
        print_message("  NHWC, rowmajor %s: %d tensors row-major\n", told ? "given" : "not given",
                      info.n_rowmajor);
        assert_int_equal(info.n_rowmajor, told ? 2 : 0);
        opsched_executor_free(ex);
        assert_int_equal(gpu_output_fails(g, &o, xv, ref, n_ref, OPSCHED_MATH_FP32), 0);
    }
    free(ref);
    free(xv);
    opsched_graph_free(g);
}

/* A batch normalisation that is its Concat's only reader reads the
 * Concat's inputs in place (DenseNet's layers), in NHWC: every math mode
 * and both layouts against fp32 on the CPU, with channels a multiple of
 * four (four a thread) and not (one); in NHWC the Concats run nothing. */
static void test_norm_concat(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const int64_t growth[2] = {8, 6};
    for (int k = 0; k < 2; k++) {
        opsched_shape xs = {4, {2, 16, 7, 9}};
        opsched_graph *g = netref_dense_graph(env.ctx, &xs, growth[k], 61 + k);
        assert_non_null(g);
        char name[32];
        snprintf(name, sizeof name, "dense growth %lld", (long long)growth[k]);
        check_graph_modes(g, name, 1);
        opsched_exec_options o = {.plan = {.math = OPSCHED_MATH_TF32,
                                           .layout = OPSCHED_LAYOUT_NHWC,
                                           .fuse_activation = 1}};
        opsched_executor *ex = NULL;
        CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
        print_message("  %s, NHWC: Concats %s, %s; norms %s, %s\n", name,
                      opsched_executor_layer(ex, 1)->algo, opsched_executor_layer(ex, 5)->algo,
                      opsched_executor_layer(ex, 2)->algo, opsched_executor_layer(ex, 6)->algo);
        assert_int_equal(opsched_executor_layer(ex, 1)->role, OPSCHED_ROLE_FUSED);
        assert_int_equal(opsched_executor_layer(ex, 5)->role, OPSCHED_ROLE_FUSED);
        assert_string_equal(opsched_executor_layer(ex, 6)->algo, "kernel+concat+Relu");
        opsched_executor_free(ex);
        opsched_graph_free(g);
    }
}

/* A batch normalisation's activation in its launch (the own kernel, in
 * both layouts and every math mode against fp32 on the CPU), and a
 * product's residual Add behind a Transpose: in NHWC both Transposes are
 * views, and the Add runs in cuBLASLt's epilogue through C. */
static void test_norm_act_and_transposed_residual(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_shape xs = {4, {2, 24, 9, 7}};
    opsched_graph *g = netref_norm_act_graph(env.ctx, &xs, 71);
    assert_non_null(g);
    check_graph_modes(g, "norm+act", 1);
    for (int layout = 0; layout < 2; layout++) {
        opsched_exec_options o = {.plan = {.math = OPSCHED_MATH_FP32,
                                           .layout = (opsched_layout)layout,
                                           .fuse_activation = 1}};
        opsched_executor *ex = NULL;
        CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
        print_message("  norm+act %s: %s, %s\n", layout ? "NHWC" : "NCHW",
                      opsched_executor_layer(ex, 0)->algo, opsched_executor_layer(ex, 2)->algo);
        assert_string_equal(opsched_executor_layer(ex, 0)->algo, "kernel+HardSwish");
        assert_string_equal(opsched_executor_layer(ex, 2)->algo, "kernel+Relu");
        assert_int_equal(opsched_executor_layer(ex, 1)->role, OPSCHED_ROLE_FUSED);
        assert_int_equal(opsched_executor_layer(ex, 3)->role, OPSCHED_ROLE_FUSED);
        opsched_executor_free(ex);
    }
    opsched_graph_free(g);

    g = netref_transposed_residual_graph(env.ctx, &xs, 73);
    assert_non_null(g);
    check_graph_modes(g, "transposed residual", 1);
    opsched_exec_options o = {
        .plan = {.math = OPSCHED_MATH_FP32, .layout = OPSCHED_LAYOUT_NHWC, .fuse_activation = 1}};
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
    opsched_exec_info info;
    CHECK(opsched_executor_info(ex, &info));
    print_message("  transposed residual NHWC: %s, %d launches\n",
                  opsched_executor_layer(ex, 1)->algo, info.n_launches);
    assert_string_equal(opsched_executor_layer(ex, 1)->algo, "cublaslt_bias_residual");
    assert_int_equal(opsched_executor_layer(ex, 4)->role, OPSCHED_ROLE_FUSED);
    assert_int_equal(info.n_launches, 1);
    opsched_executor_free(ex);
    opsched_graph_free(g);
}

/* A depthwise convolution and the channels-last LayerNormalization after
 * it as one kernel (ConvNeXt): 7x7 with both biases, 3x3 without either;
 * a norm over more than the channels stays a launch of its own.  Under
 * --algo own the fused kernel runs wherever it can: every math mode and
 * both layouts against fp32 on the CPU, and under NHWC, where the
 * Transpose is a view, the norms run inside the convolutions' launches
 * (--ablate conv-norm keeps them apart).  The default policy times the
 * fused kernel against the two launches: whichever it keeps, the roles
 * follow the plan's algorithm. */
static void test_conv_norm(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    /* 40 channels: a warp of them half idle; 96: ConvNeXt-T's first stage */
    static const opsched_shape shapes[] = {{4, {2, 40, 15, 13}}, {4, {1, 96, 14, 14}}};
    for (int s = 0; s < 2; s++) {
        opsched_graph *g = netref_conv_norm_graph(env.ctx, &shapes[s], 79 + (uint64_t)s);
        assert_non_null(g);
        modes_algo = "own";
        check_graph_modes(g, "conv+norm", 1);
        modes_algo = NULL;
        int launches[2];
        for (int k = 0; k < 3; k++) {
            opsched_exec_options o = {.plan = {.algo = k < 2 ? "own" : NULL,
                                               .math = OPSCHED_MATH_FP32,
                                               .layout = OPSCHED_LAYOUT_NHWC,
                                               .fuse_activation = 1,
                                               .ablate = k == 1 ? OPSCHED_ABLATE_CONV_NORM : 0},
                                      .algo_fallback = "heuristic"};
            opsched_executor *ex = NULL;
            CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
            opsched_exec_info info;
            CHECK(opsched_executor_info(ex, &info));
            print_message("  conv+norm C=%lld NHWC, %s%s: %d launches; %s, %s, %s\n",
                          (long long)shapes[s].d[1], k < 2 ? "own" : "timed",
                          k == 1 ? ", conv-norm ablated" : "", info.n_launches,
                          opsched_executor_layer(ex, 0)->algo, opsched_executor_layer(ex, 6)->algo,
                          opsched_executor_layer(ex, 10)->algo);
            static const char fused_algo[] = "depthwise+LayerNormalization";
            for (int c = 0; c < 2; c++) {
                int conv = c ? 6 : 0, norm = c ? 8 : 2;
                int fused = strcmp(opsched_executor_layer(ex, conv)->algo, fused_algo) == 0;
                if (k == 0) assert_true(fused);
                if (k == 1) assert_false(fused);
                assert_int_equal(opsched_executor_layer(ex, norm)->role,
                                 fused ? OPSCHED_ROLE_FUSED : OPSCHED_ROLE_LAUNCH);
            }
            assert_string_not_equal(opsched_executor_layer(ex, 10)->algo, fused_algo);
            assert_int_equal(opsched_executor_layer(ex, 12)->role, OPSCHED_ROLE_LAUNCH);
            if (k < 2) launches[k] = info.n_launches;
            opsched_executor_free(ex);
        }
        assert_int_equal(launches[1], launches[0] + 2);
        opsched_graph_free(g);
    }
}

/* Attention as one launch: the fused node (the rewrite of the SDPA
 * decomposition, its Q, K and V read in place from one merged product)
 * against the graph as written on the CPU in fp32, node by node, in every
 * math mode and both layouts, fully masked rows included;
 * heads of 20 (not a multiple of 8), 64 over three key tiles with a
 * remainder, and 128; and a causal mask whose last row sees no key, which
 * cuDNN's fused engines must also run (--algo cudnn) in fp16 and bf16. */
static void test_attention(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    /* B, S, H, D, causal */
    static const int64_t cfg[][5] = {
        {2, 77, 3, 20, 0}, {2, 130, 2, 64, 0}, {3, 9, 2, 128, 0}, {2, 200, 4, 64, 1},
        /* 19 MB of scores a sample: the product form takes the samples in two passes */
        {2, 1100, 4, 32, 0}};
    for (size_t c = 0; c < sizeof(cfg) / sizeof(cfg[0]); c++) {
        const int64_t *k = cfg[c];
        opsched_graph *w =
            netref_attention_graph(env.ctx, k[0], k[1], k[2], k[3], (int)k[4], 71 + c);
        opsched_graph *g =
            netref_attention_graph(env.ctx, k[0], k[1], k[2], k[3], (int)k[4], 71 + c);
        assert_non_null(w);
        assert_non_null(g);
        int n_rw = 0;
        CHECK(opsched_graph_rewrite_patterns(&g, 0, &n_rw));
        assert_int_equal(n_rw, 3); /* the pattern, its operands in place, Q/K/V as one product */
        int att = -1, products = 0;
        for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
            if (opsched_graph_node(g, i)->op == OPSCHED_OP_ATTENTION) att = i;
            products += opsched_graph_node(g, i)->op == OPSCHED_OP_MATMUL;
        }
        assert_true(att >= 0);
        assert_int_equal(products, 1); /* Q, K and V read from it through views */
        assert_int_equal(opsched_graph_node(g, att)->attr.attention.view[OPSCHED_ATT_V].offset,
                         2 * k[2] * k[3]);
        size_t nx = input_numel(w), n_ref = 0, n = 0;
        float *x = random_values(nx, 5 + c);
        opsched_exec_options base = {.plan = {.math = OPSCHED_MATH_FP32}};
        float *ref = infer(env.cpu ? env.cpu : env.gpu, w, &base, x, 0, &n_ref);
        int failures = 0;
        /* policy 0: the planner's choice; 1: cuDNN's engines (fp16 and bf16
         * only), which must take the causal mask [1, 1, S, S] and may turn
         * down the padding mask [B, 1, 1, S]; 2: the tensor-core kernel
         * (fp32 in split TF32 in every math mode), which heads of a
         * multiple of 16 must take and others must fail; 3: the product
         * form on cuBLASLt (fp32 and TF32), which Q, K and V read through
         * views of one projection take */
        static const char *const policies[] = {NULL, "cudnn", "tensor-cores", "products"};
        for (int layout = 0; layout < 2; layout++)
            for (int m = 0; m < OPSCHED_MATH_COUNT; m++)
                for (int policy = 0; policy < 4; policy++) {
                    int low = m == OPSCHED_MATH_FP16 || m == OPSCHED_MATH_BF16;
                    if (policy == 1 && !low) continue;
                    opsched_exec_options o = {.plan = {.math = (opsched_math)m,
                                                       .layout = (opsched_layout)layout,
                                                       .fuse_activation = 1,
                                                       .algo = policies[policy]}};
                    opsched_executor *ex = NULL;
                    opsched_status cst = opsched_executor_create(env.gpu, g, NULL, &o, &ex);
                    if ((policy == 2 && k[3] % 16 != 0) || (policy == 3 && low)) {
                        assert_int_equal(cst, OPSCHED_ERR_UNSUPPORTED);
                        opsched_ctx_clear_error(env.ctx);
                        continue;
                    }
                    if (policy == 1 && cst == OPSCHED_ERR_UNSUPPORTED && !k[4]) {
                        print_message(
                            "  attention %lldx%lldx%lldx%lld, %s %s: cuDNN declines: %s\n",
                            (long long)k[0], (long long)k[1], (long long)k[2], (long long)k[3],
                            opsched_math_name((opsched_math)m), layout ? "NHWC" : "NCHW",
                            opsched_ctx_last_error(env.ctx));
                        opsched_ctx_clear_error(env.ctx);
                        continue;
                    }
                    CHECK(cst);
                    char algo[64];
                    snprintf(algo, sizeof(algo), "%s", opsched_executor_layer(ex, att)->algo);
                    if (policy == 1)
                        assert_true(strncmp(algo, "cudnn_sdpa", 10) == 0);
                    else if (policy == 2)
                        assert_true(strncmp(algo, "fused_attention_tc", 18) == 0);
                    else if (policy == 3)
                        assert_string_equal(algo, "cublaslt_products");
                    else
                        assert_true(strncmp(algo, "fused_attention", 15) == 0 ||
                                    (!low && strcmp(algo, "cublaslt_products") == 0) ||
                                    (low && strncmp(algo, "cudnn_sdpa", 10) == 0));
                    opsched_executor_free(ex);
                    float *y = infer(env.gpu, g, &o, x, 0, &n);
                    assert_int_equal(n, n_ref);
                    double err = netref_rel_l2(y, ref, n);
                    print_message("  attention %lldx%lldx%lldx%lld, %s %s (%s): relative L2 %.3g "
                                  "(limit %.0e)%s\n",
                                  (long long)k[0], (long long)k[1], (long long)k[2],
                                  (long long)k[3], opsched_math_name((opsched_math)m),
                                  layout ? "NHWC" : "NCHW", algo, err, tolerance[m],
                                  err < tolerance[m] ? "" : "  FAILED");
                    failures += !(err < tolerance[m]);
                    free(y);
                }
        assert_int_equal(failures, 0);
        free(ref);
        free(x);
        opsched_graph_free(w);
        opsched_graph_free(g);
    }
}

static void test_resnet50_math(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    check_math_modes("resnet50", 0);
    check_math_modes("resnet50", 1);
}

static void test_googlenet_math(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    check_math_modes("googlenet", 0);
}

/* Milliseconds per inference over reps, eager or replayed. */
static double time_runs(opsched_executor *ex, int reps, int replay)
{
    opsched_timer *t = NULL;
    double ms = 0;
    CHECK(opsched_timer_create(env.gpu, &t));
    CHECK(opsched_timer_start(t, NULL));
    for (int i = 0; i < reps; i++)
        CHECK(replay ? opsched_executor_replay(ex) : opsched_executor_run(ex));
    CHECK(opsched_timer_stop(t, NULL));
    CHECK(opsched_timer_elapsed_ms(t, &ms));
    opsched_timer_free(t);
    return ms / reps;
}

static void test_capture_replay(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    const char *models[] = {"resnet50", "googlenet"};
    for (size_t mi = 0; mi < 2; mi++) {
        opsched_graph *g = zoo(models[mi], 22);
        size_t nx = input_numel(g);
        float *a = random_values(nx, 1), *b = random_values(nx, 2);
        opsched_executor *ex = NULL;
        CHECK(opsched_executor_create(env.gpu, g, NULL, NULL, &ex));
        assert_int_equal(opsched_executor_replay(ex), OPSCHED_ERR_INVALID_ARG);
        size_t n = opsched_executor_output_numel(ex, 0);
        float *y_run = malloc(sizeof(float) * n), *y_a = malloc(sizeof(float) * n),
              *y_b = malloc(sizeof(float) * n);
        assert_true(y_run && y_a && y_b);

        CHECK(opsched_executor_set_input(ex, 0, a, nx));
        CHECK(opsched_executor_run(ex));
        CHECK(opsched_executor_get_output(ex, 0, y_run, n));

        CHECK(opsched_executor_capture(ex));
        CHECK(opsched_executor_capture(ex)); /* again: the first graph is replaced */
        /* on sm_90 on, the capture chose programmatic launches by timing both graphs */
        opsched_exec_info info;
        CHECK(opsched_executor_info(ex, &info));
        print_message("%s: programmatic launches %d (graph %.4f ms with them, %.4f without)\n",
                      models[mi], info.pdl, info.pdl_ms[1], info.pdl_ms[0]);
        if (info.pdl >= 0) {
            assert_true(info.pdl_ms[0] > 0 && info.pdl_ms[1] > 0);
            assert_int_equal(info.pdl, !(info.pdl_ms[0] < info.pdl_ms[1]));
        }
        CHECK(opsched_executor_set_input(ex, 0, b, nx));
        CHECK(opsched_executor_replay(ex));
        CHECK(opsched_device_sync(env.gpu));
        CHECK(opsched_executor_get_output(ex, 0, y_b, n));
        CHECK(opsched_executor_set_input(ex, 0, a, nx));
        CHECK(opsched_executor_replay(ex));
        CHECK(opsched_device_sync(env.gpu));
        CHECK(opsched_executor_get_output(ex, 0, y_a, n));
        double same = netref_rel_l2(y_a, y_run, n), other = netref_rel_l2(y_b, y_run, n);
        print_message("%s: replay vs run, same input %.3g, other input %.3g\n", models[mi], same,
                      other);
        assert_true(same < 1e-6);
        assert_true(other > 1e-3);

        /* Eager launches still work after a capture. */
        CHECK(opsched_executor_run(ex));
        CHECK(opsched_device_sync(env.gpu));

        int nn = opsched_graph_num_nodes(g);
        double *ms = malloc(sizeof(double) * (size_t)nn), total = 0, sum = 0;
        assert_non_null(ms);
        for (int rep = 0; rep < 3; rep++)
            CHECK(opsched_executor_run_layers(ex, ms, &total));
        for (int i = 0; i < nn; i++) {
            assert_true(ms[i] >= 0);
            sum += ms[i];
        }
        assert_true(total > 0);
        for (int i = 0; i < 10; i++)
            CHECK(opsched_executor_replay(ex));
        double eager = time_runs(ex, 50, 0), graph = time_runs(ex, 50, 1);
        print_message("%s fp32: %.3f ms eager, %.3f ms replayed; layer-timed run %.3f ms "
                      "(layers sum %.3f ms)\n",
                      models[mi], eager, graph, total, sum);
        free(ms);
        free(y_run);
        free(y_a);
        free(y_b);
        free(a);
        free(b);
        opsched_executor_free(ex);
        opsched_graph_free(g);
    }
}

/* A forced algorithm that cannot run some layer: named in the error, or
 * replaced by the heuristic's choice with the reason kept. */
static void test_forced_algorithm(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_graph *g = zoo("googlenet", 23);
    opsched_executor *ex = NULL;
    opsched_exec_options o = {.plan = {.algo = "winograd"}};
    opsched_status st = opsched_executor_create(env.gpu, g, NULL, &o, &ex);
    if (st == OPSCHED_OK) {
        print_message("winograd runs every googlenet convolution here\n");
        opsched_executor_free(ex);
    } else {
        assert_int_equal(st, OPSCHED_ERR_UNSUPPORTED);
        print_message("without fallback: %s\n", opsched_ctx_last_error(env.ctx));
        assert_non_null(strstr(opsched_ctx_last_error(env.ctx), "winograd cannot run it"));
        o.algo_fallback = "heuristic";
        CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
        opsched_exec_info info;
        CHECK(opsched_executor_info(ex, &info));
        print_message("with fallback: %d of %d layers fell back\n", info.n_fallbacks,
                      info.n_layers);
        assert_true(info.n_fallbacks > 0);
        CHECK(opsched_executor_run(ex));
        CHECK(opsched_device_sync(env.gpu));
        opsched_executor_free(ex);
    }
    opsched_graph_free(g);
}

/* NHWC with fusion on, 1x1 convolutions forced onto cuBLASLt ("cublaslt",
 * the rest falling back to the heuristic), in math mode m. */
static opsched_exec_options lt_forced(opsched_math m)
{
    opsched_exec_options o = {.plan = {.math = m,
                                       .layout = OPSCHED_LAYOUT_NHWC,
                                       .fuse_activation = 1,
                                       .algo = "cublaslt"},
                              .algo_fallback = "heuristic"};
    return o;
}

/* 1x1 convolutions as cuBLASLt products ("cublaslt", the rest falling back
 * to the heuristic): ResNet-50's bottlenecks in NHWC with fusion on, where
 * the 1x1 layers take their bias, a Relu, and the residual Add with the
 * Relu after it into cuBLASLt's epilogue, in every math mode against the
 * unforced fp32 plan. */
static void test_conv_cublaslt(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_graph *g = zoo("resnet50", 29);
    size_t nx = input_numel(g), n_ref = 0, n = 0;
    float *x = random_values(nx, 9);
    opsched_exec_options base = {.plan = {.math = OPSCHED_MATH_FP32}};
    float *ref = infer(env.gpu, g, &base, x, 0, &n_ref);
    int failures = 0;
    for (int m = 0; m < OPSCHED_MATH_COUNT; m++) {
        opsched_exec_options o = lt_forced((opsched_math)m);
        opsched_executor *ex = NULL;
        CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
        int lt = 0, relu = 0, res = 0;
        for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
            const opsched_layer_info *li = opsched_executor_layer(ex, i);
            /* the convolutions (the head's Gemm is cuBLASLt's too) */
            if (opsched_graph_node(g, i)->op != OPSCHED_OP_CONV ||
                strncmp(li->algo, "cublaslt", 8) != 0)
                continue;
            lt++;
            relu += strstr(li->algo, "+Relu") != NULL;
            res += strstr(li->algo, "+residual") != NULL;
        }
        CHECK(opsched_executor_set_input(ex, 0, x, nx));
        CHECK(opsched_executor_run(ex));
        CHECK(opsched_device_sync(env.gpu));
        n = opsched_executor_output_numel(ex, 0);
        assert_int_equal(n, n_ref);
        float *y = malloc(sizeof(float) * n);
        assert_non_null(y);
        CHECK(opsched_executor_get_output(ex, 0, y, n));
        double err = netref_rel_l2(y, ref, n);
        print_message("  resnet50 %s NHWC: %d convolutions on cuBLASLt (%d with a Relu, %d with "
                      "the residual), relative L2 %.3g (limit %.0e)%s\n",
                      opsched_math_name((opsched_math)m), lt, relu, res, err, tolerance[m],
                      err < tolerance[m] ? "" : "  FAILED");
        failures += !(err < tolerance[m]);
        /* every 1x1 convolution of stride 1: two a block and the first
         * stage's projection; the residual in at least the 12 blocks
         * without a projection, a Relu after 16 reductions and those */
        assert_int_equal(lt, 33);
        assert_true(res >= 12);
        assert_true(relu >= 28);
        free(y);
        opsched_executor_free(ex);
    }
    assert_int_equal(failures, 0);
    free(ref);
    free(x);
    opsched_graph_free(g);
}

/* Activations cuBLASLt's epilogue lacks (Clip, Swish): MobileNet's
 * inverted residual block in NHWC, its 1x1 layers forced onto cuBLASLt, in
 * every math mode against the unforced fp32 plan.  The expansion's Relu6
 * is applied by the depthwise kernel as it reads the product (a
 * prologue) where that measures faster than its own pass, else (and with
 * `--ablate act-prologue`) a kernel after the product;
 * the widening's Swish, read by no convolution, is a kernel after it. */
static void test_conv_cublaslt_act_after(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_shape xs = {4, {2, 24, 14, 14}};
    opsched_graph *g = netref_inverted_residual_graph(env.ctx, &xs, 53);
    assert_non_null(g);
    size_t nx = input_numel(g), n_ref = 0, n = 0;
    float *x = random_values(nx, 11);
    opsched_exec_options base = {.plan = {.math = OPSCHED_MATH_FP32}};
    float *ref = infer(env.gpu, g, &base, x, 0, &n_ref);
    int failures = 0, prologues = 0;
    for (int ab = 0; ab < 2; ab++)
        for (int m = 0; m < OPSCHED_MATH_COUNT; m++) {
            opsched_exec_options o = lt_forced((opsched_math)m);
            if (ab) o.plan.ablate = OPSCHED_ABLATE_PROLOGUE;
            float *y = infer(env.gpu, g, &o, x, 0, &n);
            opsched_executor *ex = NULL;
            CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
            const char *expand = opsched_executor_layer(ex, 0)->algo;
            const char *relu6 = opsched_executor_layer(ex, 1)->algo;
            const char *dw = opsched_executor_layer(ex, 2)->algo;
            const char *project = opsched_executor_layer(ex, 4)->algo;
            const char *widen = opsched_executor_layer(ex, 6)->algo;
            assert_int_equal(n, n_ref);
            double err = netref_rel_l2(y, ref, n);
            print_message("  inverted residual %s NHWC%s: %s, %s, %s, %s, %s; relative L2 %.3g "
                          "(limit %.0e)%s\n",
                          opsched_math_name((opsched_math)m), ab ? ", act-prologue ablated" : "",
                          expand, relu6, dw, project, widen, err, tolerance[m],
                          err < tolerance[m] ? "" : "  FAILED");
            failures += !(err < tolerance[m]);
            /* the Relu6 (Clip) cuBLASLt lacks: applied by the depthwise
             * kernel as it reads where that measured faster (never when
             * ablated), else a kernel after the product */
            if (!ab && strstr(dw, ", input Clip")) {
                prologues++;
                assert_string_equal(expand, "cublaslt+bias");
                assert_string_equal(relu6, "fused into dw");
                /* the four-channel kernels, which apply it as they read */
                assert_true(strncmp(dw, "depthwise/vec", 13) == 0 ||
                            strncmp(dw, "depthwise/staged", 16) == 0);
            } else {
                assert_string_equal(expand, "cublaslt+bias+Clip");
                assert_string_equal(relu6, "fused");
                assert_null(strstr(dw, ", input"));
            }
            assert_int_equal(opsched_executor_layer(ex, 1)->role, OPSCHED_ROLE_FUSED);
            assert_string_equal(project, "cublaslt+bias+residual");
            assert_true(strncmp(widen, "cublaslt+bias+", 14) == 0);
            opsched_executor_free(ex);
            free(y);
        }
    print_message("  the depthwise kernel applied the Relu6 in %d of %d math modes\n", prologues,
                  OPSCHED_MATH_COUNT);
    assert_int_equal(failures, 0);
    free(ref);
    free(x);
    opsched_graph_free(g);
}

/* A 1x1 convolution, its bias and an activation cuBLASLt's epilogue lacks
 * as one cuDNN product graph ("cudnn_matmul", the rest falling back to the
 * heuristic): the inverted residual block's expansion (Clip) and widening
 * (Swish) in NHWC, every math mode against fp32 on the CPU.  Where an
 * engine runs the graph both take it and their activation runs nothing;
 * where none does (strict fp32 may have none without tensor cores) they
 * fall back, naming why.  The projection (a residual) and the depthwise
 * convolution fall back always.  Planned without forcing, the widening is
 * the graph or cuBLASLt and a kernel, whichever measured faster. */
static void test_conv_product_graph(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_shape xs = {4, {2, 24, 14, 14}};
    opsched_graph *g = netref_inverted_residual_graph(env.ctx, &xs, 71);
    assert_non_null(g);
    size_t nx = input_numel(g), n_ref = 0;
    float *x = random_values(nx, 17);
    opsched_exec_options base = {.plan = {.math = OPSCHED_MATH_FP32}};
    float *ref = infer(env.cpu ? env.cpu : env.gpu, g, &base, x, 0, &n_ref);
    int failures = 0, graphs = 0;
    for (int m = 0; m < OPSCHED_MATH_COUNT; m++) {
        opsched_exec_options o = lt_forced((opsched_math)m);
        o.plan.algo = "cudnn_matmul";
        opsched_executor *ex = NULL;
        CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
        const opsched_layer_info *expand = opsched_executor_layer(ex, 0);
        const opsched_layer_info *project = opsched_executor_layer(ex, 4);
        const opsched_layer_info *widen = opsched_executor_layer(ex, 6);
        print_message("  inverted residual %s NHWC, --algo cudnn_matmul: %s (%s), %s, %s (%s)\n",
                      opsched_math_name((opsched_math)m), expand->algo,
                      expand->fallback ? expand->fallback_reason : "taken", project->algo,
                      widen->algo, widen->fallback ? widen->fallback_reason : "taken");
        assert_true(project->fallback);
        const opsched_layer_info *l[2] = {expand, widen};
        for (int i = 0; i < 2; i++) {
            if (l[i]->fallback) {
                assert_non_null(strstr(l[i]->fallback_reason, "cudnn"));
                continue;
            }
            graphs++;
            assert_true(strncmp(l[i]->algo, "cudnn_matmul_bias_", 18) == 0);
            /* its activation (nodes 1 and 7) runs nothing */
            assert_int_equal(opsched_executor_layer(ex, i == 0 ? 1 : 7)->role, OPSCHED_ROLE_FUSED);
        }
        opsched_executor_free(ex);
        failures += gpu_output_fails(g, &o, x, ref, n_ref, (opsched_math)m);
        /* the planner's own choice, and the same numerics */
        o.plan.algo = NULL;
        o.algo_fallback = NULL;
        CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
        print_message("  planned: %s, %s\n", opsched_executor_layer(ex, 0)->algo,
                      opsched_executor_layer(ex, 6)->algo);
        opsched_executor_free(ex);
        failures += gpu_output_fails(g, &o, x, ref, n_ref, (opsched_math)m);
    }
    /* with tensor cores an engine runs them: the graph was taken somewhere */
    print_message("  the product graph ran %d of %d forced layers\n", graphs,
                  2 * OPSCHED_MATH_COUNT);
    assert_true(graphs > 0);
    assert_int_equal(failures, 0);
    free(ref);
    free(x);
    opsched_graph_free(g);
}

/* Gated products (opsched_conv_gate_find): the 1x1 convolution after a
 * gate's multiply as one product per sample with the weights scaled by
 * the gate, with a bias and a residual, and to fewer channels without a
 * bias before a Relu.
 * Every math mode and layout with the planner's verdicts, and forced
 * (cuBLASLt asked for: the gated product whatever it measures) in NHWC,
 * against the CPU backend in fp32; forced, the multiplies run nothing. */
static void test_gated_product(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    const opsched_shape shapes[2] = {{4, {2, 40, 12, 12}}, {4, {3, 24, 7, 7}}};
    const int64_t hidden[2] = {10, 6};
    for (int i = 0; i < 2; i++) {
        opsched_graph *g = netref_gated_product_graph(env.ctx, &shapes[i], hidden[i], 59 + i);
        assert_non_null(g);
        check_graph_modes(g, "gated product", 1);
        size_t nx = input_numel(g), n_ref = 0, n = 0;
        float *x = random_values(nx, 13);
        opsched_exec_options base = {.plan = {.math = OPSCHED_MATH_FP32}};
        float *ref = infer(env.cpu ? env.cpu : env.gpu, g, &base, x, 0, &n_ref);
        int failures = 0;
        for (int m = 0; m < OPSCHED_MATH_COUNT; m++) {
            opsched_exec_options o = lt_forced((opsched_math)m);
            float *y = infer(env.gpu, g, &o, x, 0, &n);
            assert_non_null(y);
            opsched_executor *ex = NULL;
            CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
            opsched_exec_info info;
            CHECK(opsched_executor_info(ex, &info));
            const char *proj = opsched_executor_layer(ex, 6)->algo;
            const char *narrow = opsched_executor_layer(ex, 14)->algo;
            assert_int_equal(n, n_ref);
            double err = netref_rel_l2(y, ref, n);
            print_message("  gated %d %s NHWC, cuBLASLt asked: %s; %s; %d folded, %d launches; "
                          "relative L2 %.3g (limit %.0e)%s\n",
                          i, opsched_math_name((opsched_math)m), proj, narrow, info.n_gates_folded,
                          info.n_launches, err, tolerance[m], err < tolerance[m] ? "" : "  FAILED");
            failures += !(err < tolerance[m]);
            assert_int_equal(info.n_gates_folded, 2);
            assert_non_null(strstr(proj, "+residual, gated x"));
            assert_non_null(strstr(narrow, ", gated x"));
            assert_string_equal(opsched_executor_layer(ex, 5)->algo, "fused into proj");
            assert_string_equal(opsched_executor_layer(ex, 13)->algo, "fused into narrow");
            opsched_executor_free(ex);
            free(y);
        }
        assert_int_equal(failures, 0);
        free(ref);
        free(x);
        opsched_graph_free(g);
    }
}

/* The four-channel depthwise kernel (kernels_depthwise.cu) inside a
 * network: the inverted residual's 3x3 depthwise convolution with its
 * HardSwish in the launch, forced onto each of its tile shapes, in every
 * math mode and both layouts against fp32 on the CPU (in NCHW, and where a
 * layer cannot run the kernel, it runs as the policy falls back); 48
 * channels on odd maps (partial tiles, 12 vectors a pixel) and 160 at
 * batch 1.  Under NHWC the plan names the tile it runs. */
static void test_depthwise_vec(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const opsched_shape shapes[] = {{4, {2, 12, 15, 13}}, {4, {1, 40, 28, 28}}};
    static const char *const tiles[] = {"own-vec1x4", "own-vec2x2", "own-vec2x4", "own-staged"};
    for (int s = 0; s < 2; s++) {
        opsched_graph *g = netref_inverted_residual_graph(env.ctx, &shapes[s], 89 + (uint64_t)s);
        assert_non_null(g);
        for (size_t t = 0; t < sizeof(tiles) / sizeof(tiles[0]); t++) {
            modes_algo = tiles[t];
            check_graph_modes(g, "inverted residual", 1);
            modes_algo = NULL;
            opsched_exec_options o = {.plan = {.algo = tiles[t],
                                               .math = OPSCHED_MATH_FP32,
                                               .layout = OPSCHED_LAYOUT_NHWC,
                                               .fuse_activation = 1},
                                      .algo_fallback = "heuristic"};
            opsched_executor *ex = NULL;
            CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
            char want[48];
            if (strcmp(tiles[t], "own-staged") == 0) /* the input patch in shared memory */
                snprintf(want, sizeof(want), "depthwise/staged+HardSwish");
            else
                snprintf(want, sizeof(want), "depthwise/vec%.3s+HardSwish", tiles[t] + 7);
            print_message("  %s C=%lld: %s\n", tiles[t], (long long)shapes[s].d[1] * 4,
                          opsched_executor_layer(ex, 2)->algo);
            /* (", input Clip" after it where the expansion ran its Relu6 apart) */
            assert_true(strncmp(opsched_executor_layer(ex, 2)->algo, want, strlen(want)) == 0);
            assert_int_equal(opsched_executor_layer(ex, 3)->role, OPSCHED_ROLE_FUSED);
            opsched_executor_free(ex);
        }
        opsched_graph_free(g);
    }
}

/* The four-channel kernel's 7x7 tiles (its filters in shared memory) and
 * the kernel that stages a block's input patch in shared memory
 * (own-staged, the 7x7 and the 3x3 layer): ConvNeXt's depthwise
 * convolution with its bias, its LayerNormalization kept apart (--ablate
 * conv-norm), forced onto each in NHWC in every math mode against fp32 on
 * the CPU; 40 channels on odd maps (partial tiles and channel blocks, ten
 * vectors a pixel) and ConvNeXt-T's 96 at 14x14. */
static void test_depthwise_vec7(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const opsched_shape shapes[] = {{4, {2, 40, 15, 13}}, {4, {1, 96, 14, 14}}};
    static const char *const tiles[] = {"own-vec1x4", "own-vec2x4", "own-vec2x8", "own-vec4x4",
                                        "own-staged"};
    int failures = 0;
    for (int s = 0; s < 2; s++) {
        opsched_graph *g = netref_conv_norm_graph(env.ctx, &shapes[s], 97 + (uint64_t)s);
        assert_non_null(g);
        size_t nx = input_numel(g), n_ref = 0;
        float *xv = random_values(nx, 41);
        opsched_exec_options base = {.plan = {.math = OPSCHED_MATH_FP32}};
        float *ref = infer(env.cpu ? env.cpu : env.gpu, g, &base, xv, 0, &n_ref);
        for (size_t t = 0; t < sizeof(tiles) / sizeof(tiles[0]); t++)
            for (int m = 0; m < OPSCHED_MATH_COUNT; m++) {
                opsched_exec_options o = {.plan = {.algo = tiles[t],
                                                   .math = (opsched_math)m,
                                                   .layout = OPSCHED_LAYOUT_NHWC,
                                                   .fuse_activation = 1,
                                                   .ablate = OPSCHED_ABLATE_CONV_NORM},
                                          .algo_fallback = "heuristic"};
                opsched_executor *ex = NULL;
                CHECK(opsched_executor_create(env.gpu, g, NULL, &o, &ex));
                char want[32];
                int staged = strcmp(tiles[t], "own-staged") == 0;
                if (staged)
                    snprintf(want, sizeof(want), "depthwise/staged");
                else
                    snprintf(want, sizeof(want), "depthwise/vec%.3s", tiles[t] + 7);
                const char *got = opsched_executor_layer(ex, 0)->algo;
                print_message("  %s C=%lld %s: %s, %s\n", tiles[t], (long long)shapes[s].d[1],
                              opsched_math_name((opsched_math)m), got,
                              opsched_executor_layer(ex, 6)->algo);
                assert_true(strncmp(got, want, strlen(want)) == 0);
                if (staged) /* the 3x3 one too (stride 1) */
                    assert_true(strncmp(opsched_executor_layer(ex, 6)->algo, want, strlen(want)) ==
                                0);
                opsched_executor_free(ex);
                failures += gpu_output_fails(g, &o, xv, ref, n_ref, (opsched_math)m);
            }
        free(ref);
        free(xv);
        opsched_graph_free(g);
    }
    assert_int_equal(failures, 0);
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
    opsched_device_info info;
    if (opsched_device_info_get(env.gpu, &info) == OPSCHED_OK)
        print_message("device: %s (%s)\n", info.name, info.library_versions);
    if (opsched_device_count(env.ctx, "cpu", &count) == OPSCHED_OK && count > 0 &&
        opsched_device_open(env.ctx, "cpu", 0, &env.cpu) != OPSCHED_OK)
        env.cpu = NULL;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    opsched_device_close(env.gpu);
    opsched_device_close(env.cpu);
    opsched_ctx_free(env.ctx);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resnet50_math),
        cmocka_unit_test(test_googlenet_math),
        cmocka_unit_test(test_capture_replay),
        cmocka_unit_test(test_forced_algorithm),
        cmocka_unit_test(test_conv_cublaslt),
        cmocka_unit_test(test_conv_cublaslt_act_after),
        cmocka_unit_test(test_chains),
        cmocka_unit_test(test_movement_runs),
        cmocka_unit_test(test_se_gate),
        cmocka_unit_test(test_gated_product),
        cmocka_unit_test(test_bias_epilogue),
        cmocka_unit_test(test_product_graph),
        cmocka_unit_test(test_conv_product_graph),
        cmocka_unit_test(test_gemm_epilogue),
        cmocka_unit_test(test_rowmajor_option),
        cmocka_unit_test(test_norm_concat),
        cmocka_unit_test(test_norm_act_and_transposed_residual),
        cmocka_unit_test(test_conv_norm),
        cmocka_unit_test(test_depthwise_vec),
        cmocka_unit_test(test_depthwise_vec7),
        cmocka_unit_test(test_attention),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
