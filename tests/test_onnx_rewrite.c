/*
 * test_onnx_rewrite.c - operator patterns the importer rewrites
 * (opsched_graph_rewrite_patterns) on small/patterns.onnx, made by
 * tests/onnx/make_models.py: SiLU in both operand orders, HardSwish, GELU
 * as torch's legacy exporter, Hugging Face and GPT-2 write it, and three
 * near misses that must stay as written.  The rewritten graph must have the
 * fused operators and compute what the graph as written computes (both run
 * on the CPU backend, where the written form runs node by node).  Also
 * small/layer_scale.onnx: layer scales folded into the products.
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

#include "opsched/backend.h"
#include "opsched/exec.h"
#include "opsched/onnx.h"

static opsched_graph *load_file(opsched_ctx *ctx, const char *file, int no_rewrite,
                                int keep_attention)
{
    const char *dir = getenv("OPSCHED_TESTDATA");
    if (!dir) skip();
    char path[1024];
    snprintf(path, sizeof(path), "%s/onnx/small/%s", dir, file);
    opsched_onnx_options o = {.load_weights = 1, .no_rewrite = no_rewrite,
                              .keep_attention = keep_attention};
    opsched_graph *g = NULL;
    opsched_status st = opsched_onnx_load_file(ctx, path, &o, &g);
    if (st != OPSCHED_OK) print_error("%s: %s\n", path, opsched_ctx_last_error(ctx));
    assert_int_equal(st, OPSCHED_OK);
    return g;
}

static opsched_graph *load(opsched_ctx *ctx, int no_rewrite)
{
    return load_file(ctx, "patterns.onnx", no_rewrite, 0);
}

/* The node whose output is the tensor named name. */
static const opsched_node *made(const opsched_graph *g, const char *name)
{
    int id = -1;
    assert_int_equal(opsched_graph_find_tensor(g, name, &id), OPSCHED_OK);
    int p = opsched_graph_tensor(g, id)->producer;
    assert_true(p >= 0);
    return opsched_graph_node(g, p);
}

static int count_op(const opsched_graph *g, opsched_op_kind op)
{
    int n = 0;
    for (int i = 0; i < opsched_graph_num_nodes(g); i++)
        n += opsched_graph_node(g, i)->op == op;
    return n;
}

static void test_structure(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_graph *as_written = load(ctx, 1);
    opsched_graph *g = load(ctx, 0);
    const opsched_node *n = made(g, "silu");
    assert_int_equal(n->op, OPSCHED_OP_UNARY);
    assert_int_equal(n->attr.unary.fn, OPSCHED_UNARY_SWISH);
    assert_true(fabsf(n->attr.unary.alpha - 1.0f) < 1e-6f);
    assert_string_equal(n->name, "silu"); /* the last node's name */
    assert_int_equal(made(g, "silu_r")->op, OPSCHED_OP_UNARY);
    assert_int_equal(made(g, "hswish")->op, OPSCHED_OP_HARDSWISH);
    n = made(g, "gelu");
    assert_int_equal(n->op, OPSCHED_OP_GELU);
    assert_int_equal(n->attr.gelu.tanh_approx, 0);
    assert_int_equal(made(g, "gelu_hf")->op, OPSCHED_OP_GELU);
    n = made(g, "gelu_tanh");
    assert_int_equal(n->op, OPSCHED_OP_GELU);
    assert_int_equal(n->attr.gelu.tanh_approx, 1);
    /* Each rewritten operator reads x itself. */
    int x = opsched_graph_input(g, 0);
    assert_int_equal(made(g, "gelu_tanh")->inputs[0], x);
    assert_int_equal(made(g, "gelu_hf")->inputs[0], x);
    /* The near misses stay as written. */
    assert_int_equal(made(g, "silu_shared")->op, OPSCHED_OP_MUL);
    assert_int_equal(made(g, "not_hswish")->op, OPSCHED_OP_MUL);
    assert_int_equal(made(g, "not_gelu")->op, OPSCHED_OP_MUL);
    /* Nothing else is left behind: of the written graph's 8 Erf/Tanh/
     * Sigmoid/HardSigmoid nodes, those of the near misses remain. */
    assert_int_equal(count_op(g, OPSCHED_OP_SIGMOID), 1);
    assert_int_equal(count_op(g, OPSCHED_OP_HARDSIGMOID), 1);
    assert_int_equal(count_op(g, OPSCHED_OP_ERF), 1);
    assert_int_equal(count_op(g, OPSCHED_OP_TANH), 0);
    assert_int_equal(count_op(as_written, OPSCHED_OP_SIGMOID), 3);
    assert_int_equal(opsched_graph_num_nodes(as_written) - opsched_graph_num_nodes(g),
                     (2 - 1) * 3 + (5 - 1) * 2 + (8 - 1));
    /* Outputs keep their names and order. */
    assert_int_equal(opsched_graph_num_outputs(g), opsched_graph_num_outputs(as_written));
    for (int i = 0; i < opsched_graph_num_outputs(g); i++)
        assert_string_equal(opsched_graph_tensor(g, opsched_graph_output(g, i))->name,
                            opsched_graph_tensor(as_written, opsched_graph_output(as_written, i))->name);
    opsched_graph_free(as_written);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

/* Runs g on the CPU with the input x = xs; outputs into out[i] (n each). */
static void run_cpu(opsched_device *dev, const opsched_graph *g, const float *xs, size_t n_x,
                    float **out, size_t *n_out)
{
    opsched_exec_options o;
    memset(&o, 0, sizeof(o));
    opsched_executor *ex = NULL;
    assert_int_equal(opsched_executor_create(dev, g, NULL, &o, &ex), OPSCHED_OK);
    assert_int_equal(opsched_executor_set_input(ex, 0, xs, n_x), OPSCHED_OK);
    assert_int_equal(opsched_executor_run(ex), OPSCHED_OK);
    assert_int_equal(opsched_device_sync(dev), OPSCHED_OK);
    for (int i = 0; i < opsched_graph_num_outputs(g); i++) {
        n_out[i] = opsched_executor_output_numel(ex, i);
        out[i] = malloc(n_out[i] * sizeof(float));
        assert_non_null(out[i]);
        assert_int_equal(opsched_executor_get_output(ex, i, out[i], n_out[i]), OPSCHED_OK);
    }
    opsched_executor_free(ex);
}

/* Output i of g as written (a) and rewritten (b): the same count, within
 * a relative L2 of 1e-6 (NaN fails); returns the reference's squared norm. */
static double same_output(const opsched_graph *g, int i, const float *a, size_t na, const float *b,
                          size_t nb)
{
    assert_int_equal(na, nb);
    double num = 0, den = 0;
    for (size_t k = 0; k < na; k++) {
        num += ((double)a[k] - b[k]) * ((double)a[k] - b[k]);
        den += (double)a[k] * a[k];
    }
    double rel = sqrt(num / (den > 0 ? den : 1));
    if (!(rel <= 1e-6))
        print_error("output %s: relative L2 %g\n",
                    opsched_graph_tensor(g, opsched_graph_output(g, i))->name, rel);
    assert_true(rel <= 1e-6);
    return den;
}

/* Runs the graph as written and rewritten on the CPU from xs and checks
 * that every output agrees (same_output) and is not all zero. */
static void same_outputs(opsched_device *dev, const opsched_graph *as_written,
                         const opsched_graph *g, const float *xs, size_t n_x)
{
    enum { MAX_OUT = 16 };
    int n_out = opsched_graph_num_outputs(g);
    assert_true(n_out <= MAX_OUT);
    assert_int_equal(opsched_graph_num_outputs(as_written), n_out);
    float *a[MAX_OUT], *b[MAX_OUT];
    size_t na[MAX_OUT], nb[MAX_OUT];
    run_cpu(dev, as_written, xs, n_x, a, na);
    run_cpu(dev, g, xs, n_x, b, nb);
    for (int i = 0; i < n_out; i++) {
        assert_true(same_output(g, i, a[i], na[i], b[i], nb[i]) > 0);
        free(a[i]);
        free(b[i]);
    }
}

static void test_same_values(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    opsched_device *dev = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    if (opsched_device_open(ctx, "cpu", 0, &dev) != OPSCHED_OK) {
        opsched_ctx_free(ctx);
        print_message("SKIP: no cpu backend in this build\n");
        skip();
    }
    opsched_graph *as_written = load(ctx, 1);
    opsched_graph *g = load(ctx, 0);
    float xs[48];
    for (int i = 0; i < 48; i++) /* -6 .. 6: both tails and the middle */
        xs[i] = -6.0f + 12.0f * (float)i / 47.0f;
    enum { N_OUT = 10 };
    assert_int_equal(opsched_graph_num_outputs(g), N_OUT);
    float *a[N_OUT], *b[N_OUT];
    size_t na[N_OUT], nb[N_OUT];
    run_cpu(dev, as_written, xs, 48, a, na);
    run_cpu(dev, g, xs, 48, b, nb);
    for (int i = 0; i < N_OUT; i++) {
        same_output(g, i, a[i], na[i], b[i], nb[i]);
        free(a[i]);
        free(b[i]);
    }
    /* And the values are the functions' own: silu(-6) and gelu(6). */
    double x0 = xs[0], x47 = xs[47];
    float *c[N_OUT];
    size_t nc[N_OUT];
    run_cpu(dev, g, xs, 48, c, nc);
    assert_true(fabs(c[0][0] - x0 / (1 + exp(-x0))) < 1e-5);
    assert_true(fabs(c[3][47] - 0.5 * x47 * (1 + erf(x47 / sqrt(2.0)))) < 1e-4);
    for (int i = 0; i < N_OUT; i++)
        free(c[i]);
    opsched_graph_free(as_written);
    opsched_graph_free(g);
    opsched_device_close(dev);
    opsched_ctx_free(ctx);
}

/* The layer-scale model (tests/onnx/make_models.py): the two scales that
 * vary along the product's columns go into scaled weights and biases, the
 * one along the rows stays a Mul; the product before the Transpose then
 * finds its residual Add through it; and the values are the written
 * graph's.  With keep_scales all three stay. */
static void test_layer_scale(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    const char *dir = getenv("OPSCHED_TESTDATA");
    if (!dir) skip();
    char path[1024];
    snprintf(path, sizeof(path), "%s/onnx/small/layer_scale.onnx", dir);
    opsched_onnx_options kept = {.load_weights = 1, .keep_scales = 1};
    opsched_graph *k = NULL;
    assert_int_equal(opsched_onnx_load_file(ctx, path, &kept, &k), OPSCHED_OK);
    assert_int_equal(count_op(k, OPSCHED_OP_MUL), 3);
    opsched_graph_free(k);

    opsched_graph *as_written = load_file(ctx, "layer_scale.onnx", 1, 0);
    opsched_graph *g = load_file(ctx, "layer_scale.onnx", 0, 0);
    assert_int_equal(count_op(g, OPSCHED_OP_MUL), 1);
    assert_int_equal(made(g, "rows")->op, OPSCHED_OP_MUL);
    assert_int_equal(made(g, "head")->op, OPSCHED_OP_ADD);
    assert_int_equal(made(g, "block")->op, OPSCHED_OP_ADD);
    /* the first product: bias, Transpose, then the residual */
    int mm1 = -1, res = -1;
    for (int i = 0; i < opsched_graph_num_nodes(g); i++)
        if (strcmp(opsched_graph_node(g, i)->name, "mm1") == 0) mm1 = i;
    assert_true(mm1 >= 0);
    assert_int_equal(opsched_graph_find_tensor(g, "res", &res), OPSCHED_OK);
    opsched_matmul_bias mb;
    assert_int_equal(opsched_matmul_bias_find(g, mm1, &mb), 1);
    assert_true(mb.tr >= 0);
    assert_int_equal(opsched_graph_node(g, mb.tr)->op, OPSCHED_OP_TRANSPOSE);
    assert_int_equal(mb.residual, res);
    assert_int_equal(mb.act, -1);
    assert_string_equal(opsched_graph_tensor(g, opsched_graph_node(g, mb.res_add)->outputs[0])->name,
                        "block");

    opsched_device *dev = NULL;
    if (opsched_device_open(ctx, "cpu", 0, &dev) != OPSCHED_OK) {
        opsched_graph_free(as_written);
        opsched_graph_free(g);
        opsched_ctx_free(ctx);
        print_message("SKIP: no cpu backend in this build\n");
        skip();
    }
    float xs[256];
    for (int i = 0; i < 256; i++)
        xs[i] = sinf(0.37f * (float)i) * 2.0f;
    same_outputs(dev, as_written, g, xs, 256);
    opsched_graph_free(as_written);
    opsched_graph_free(g);
    opsched_device_close(dev);
    opsched_ctx_free(ctx);
}

/* The attention model (tests/onnx/make_models.py): three attentions become
 * one node each, with their scale, mask and operand axes; the near miss
 * stays as written. */
static void test_attention_structure(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_graph *g = load_file(ctx, "attention.onnx", 0, 0);
    opsched_graph *kept = load_file(ctx, "attention.onnx", 0, 1);
    assert_int_equal(count_op(g, OPSCHED_OP_ATTENTION), 3);
    assert_int_equal(count_op(kept, OPSCHED_OP_ATTENTION), 0);
    assert_int_equal(count_op(kept, OPSCHED_OP_SOFTMAX), 4);
    assert_int_equal(count_op(g, OPSCHED_OP_SOFTMAX), 1); /* the near miss */
    /* SDPA: reads the [B, S, H, D] projections and writes [B, S, H, D]
     * (the Transposes in and out are gone), scale sqrt(.5)^2, the mask,
     * fully masked rows give 0 */
    const opsched_node *n = made(g, "o4t");
    assert_int_equal(n->op, OPSCHED_OP_ATTENTION);
    assert_string_equal(n->name, "sdpa/Attention");
    assert_int_equal(n->n_inputs, 4);
    const opsched_attention_attr *at = &n->attr.attention;
    assert_true(fabsf(at->scale - 0.5f) < 1e-6f);
    assert_int_equal(at->nan_rows_zero, 1);
    static const int8_t bshd[4] = {0, 2, 1, 3};
    assert_memory_equal(at->axes[OPSCHED_ATT_Q], bshd, 4);
    assert_memory_equal(at->axes[OPSCHED_ATT_K], bshd, 4);
    assert_memory_equal(at->axes[OPSCHED_ATT_V], bshd, 4);
    assert_memory_equal(at->axes[OPSCHED_ATT_O], bshd, 4);
    /* Q, V and the legacy K are products of x that only attention reads:
     * one product of x by [wq wv wk2] ([2, 6, 24]), each read in place
     * through its Reshape to heads; K (its product also read by the near
     * miss) stays its own product, read through its Reshape too */
    static const int64_t heads[4] = {2, 6, 2, 4}, merged[4] = {144, 24, 4, 1},
                         own[4] = {48, 8, 4, 1};
    const int64_t offs[3] = {0, 0, 8};
    const char *from[3] = {"merged_0/MatMul", "k_p", "merged_0/MatMul"};
    for (int x = 0; x < 3; x++) {
        const opsched_attention_view *v = &at->view[x];
        assert_string_equal(opsched_graph_tensor(g, n->inputs[x])->name, from[x]);
        assert_int_equal(v->rank, 4);
        assert_int_equal(v->offset, offs[x]);
        assert_memory_equal(v->d, heads, sizeof(heads));
        assert_memory_equal(v->stride, x == 1 ? own : merged, sizeof(merged));
    }
    assert_int_equal(count_op(g, OPSCHED_OP_SLICE), 0); /* read in place, then dropped */
    assert_string_equal(opsched_graph_tensor(g, n->inputs[3])->name, "mask4");
    /* nn.MultiheadAttention: [S, N, D] in and out, Q divided by 2 */
    n = made(g, "mot");
    assert_int_equal(n->op, OPSCHED_OP_ATTENTION);
    assert_int_equal(n->n_inputs, 3);
    assert_true(fabsf(n->attr.attention.scale - 0.5f) < 1e-6f);
    static const int8_t snd[4] = {-1, 1, 0, 2};
    assert_memory_equal(n->attr.attention.axes[OPSCHED_ATT_Q], snd, 4);
    assert_memory_equal(n->attr.attention.axes[OPSCHED_ATT_K], snd, 4);
    assert_memory_equal(n->attr.attention.axes[OPSCHED_ATT_O], snd, 4);
    assert_int_equal(n->attr.attention.nan_rows_zero, 0);
    /* legacy: K through two Transposes is read as [B, S, H, D]; the 2-D
     * causal bias right-aligned; the output [B, H, S, D] as the product */
    n = made(g, "y_legacy");
    assert_int_equal(n->op, OPSCHED_OP_ATTENTION);
    assert_int_equal(n->n_inputs, 4);
    static const int8_t rows_cols[4] = {-1, -1, 0, 1}, bhsd[4] = {0, 1, 2, 3};
    assert_memory_equal(n->attr.attention.axes[OPSCHED_ATT_BIAS], rows_cols, 4);
    assert_memory_equal(n->attr.attention.axes[OPSCHED_ATT_K], bshd, 4);
    assert_memory_equal(n->attr.attention.axes[OPSCHED_ATT_O], bhsd, 4);
    assert_string_equal(opsched_graph_tensor(g, n->inputs[1])->name, "merged_0/MatMul");
    assert_int_equal(n->attr.attention.view[1].offset, 16);
    assert_int_equal(made(g, "y_near")->op, OPSCHED_OP_MATMUL);
    opsched_graph_free(kept);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

/* The fused nodes compute what the graph as written computes, on the CPU,
 * fully masked rows included. */
static void test_attention_values(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    opsched_device *dev = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    if (opsched_device_open(ctx, "cpu", 0, &dev) != OPSCHED_OK) {
        opsched_ctx_free(ctx);
        print_message("SKIP: no cpu backend in this build\n");
        skip();
    }
    opsched_graph *as_written = load_file(ctx, "attention.onnx", 1, 0);
    opsched_graph *g = load_file(ctx, "attention.onnx", 0, 0);
    float xs[96];
    for (int i = 0; i < 96; i++)
        xs[i] = sinf(0.37f * (float)i) * 1.5f;
    enum { N_OUT = 5 };
    assert_int_equal(opsched_graph_num_outputs(g), N_OUT);
    float *a[N_OUT], *b[N_OUT];
    size_t na[N_OUT], nb[N_OUT];
    run_cpu(dev, as_written, xs, 96, a, na);
    run_cpu(dev, g, xs, 96, b, nb);
    for (int i = 0; i < N_OUT; i++) {
        for (size_t k = 0; k < na[i]; k++)
            assert_false(isnan(a[i][k]));
        assert_true(same_output(g, i, a[i], na[i], b[i], nb[i]) > 0);
    }
    /* batch 1 of the SDPA output is all masked: zeros, as Where(IsNaN) makes them */
    for (size_t k = na[0] / 2; k < na[0]; k++)
        assert_true(b[0][k] == 0.0f);
    for (int i = 0; i < N_OUT; i++) {
        free(a[i]);
        free(b[i]);
    }
    opsched_graph_free(as_written);
    opsched_graph_free(g);
    opsched_device_close(dev);
    opsched_ctx_free(ctx);
}

/* Packed projections (tests/onnx/make_models.py): GPT-2's split QKV and
 * timm's gathered one are read in place through views, the Gemm layers on
 * sequences become products with a bias Add, the unit-axis Transpose a
 * Reshape; the values are those of the graph as written. */
static void test_packed_attention(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    opsched_device *dev = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_graph *g = load_file(ctx, "packed_attention.onnx", 0, 0);
    opsched_graph *as_written = load_file(ctx, "packed_attention.onnx", 1, 0);
    assert_int_equal(count_op(g, OPSCHED_OP_ATTENTION), 2);
    assert_int_equal(count_op(g, OPSCHED_OP_SPLIT), 0);
    assert_int_equal(count_op(g, OPSCHED_OP_GATHER), 0);
    assert_int_equal(count_op(g, OPSCHED_OP_GEMM), 0);
    assert_int_equal(count_op(g, OPSCHED_OP_TRANSPOSE), 0);
    assert_int_equal(count_op(as_written, OPSCHED_OP_GEMM), 2);
    /* GPT-2: Q, K and V are views of the Gemm's result, now a bias Add
     * ([2, 6, 24]); V starts 16 elements in */
    const opsched_node *n = made(g, "g_ot");
    assert_int_equal(n->op, OPSCHED_OP_ATTENTION);
    const opsched_node *src = made(g, opsched_graph_tensor(g, n->inputs[0])->name);
    assert_int_equal(src->op, OPSCHED_OP_ADD);
    assert_int_equal(made(g, opsched_graph_tensor(g, src->inputs[0])->name)->op,
                     OPSCHED_OP_MATMUL);
    for (int x = 0; x < 3; x++) {
        assert_int_equal(n->inputs[x], n->inputs[0]);
        assert_int_equal(n->attr.attention.view[x].rank, 4);
        assert_int_equal(n->attr.attention.view[x].offset, 8 * x);
    }
    /* timm: the [2, 6, 24] product read at 3 heads' offsets through the 5-D
     * permute and the Gathers */
    n = made(g, "t_ot");
    assert_int_equal(n->op, OPSCHED_OP_ATTENTION);
    for (int x = 0; x < 3; x++) {
        assert_string_equal(opsched_graph_tensor(g, n->inputs[x])->name, "t_qkv");
        assert_int_equal(n->attr.attention.view[x].offset, 8 * x);
    }
    /* Both attentions read 3-D tensors: their 4-D outputs are no images,
     * so a channels-last plan keeps them row-major (head dim contiguous) */
    unsigned char *rm = calloc((size_t)opsched_graph_num_tensors(g), 1);
    assert_non_null(rm);
    opsched_layout_rowmajor(g, rm);
    assert_int_equal(opsched_graph_tensor(g, made(g, "g_ot")->outputs[0])->shape.ndim, 4);
    assert_true(rm[made(g, "g_ot")->outputs[0]]);
    assert_true(rm[n->outputs[0]]);
    free(rm);
    /* the out projection: a product and its bias, the residual after it */
    assert_int_equal(made(g, "g_y")->op, OPSCHED_OP_ADD);
    assert_int_equal(made(g, "y_unit")->op, OPSCHED_OP_RESHAPE);
    if (opsched_device_open(ctx, "cpu", 0, &dev) == OPSCHED_OK) {
        float xs[96];
        for (int i = 0; i < 96; i++)
            xs[i] = cosf(0.29f * (float)i) * 1.3f;
        same_outputs(dev, as_written, g, xs, 96);
        opsched_device_close(dev);
    } else {
        print_message("no cpu backend in this build: structure only\n");
    }
    opsched_graph_free(as_written);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_structure),
        cmocka_unit_test(test_same_values),
        cmocka_unit_test(test_layer_scale),
        cmocka_unit_test(test_attention_structure),
        cmocka_unit_test(test_attention_values),
        cmocka_unit_test(test_packed_attention),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
