/*
 * test_graph.c - the graph module: builder, shape inference, costs, totals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opsched/graph.h"
#include "support/netref.h"
#include "support/rng.h"

static opsched_graph *new_graph(opsched_ctx **ctx)
{
    opsched_graph *g = NULL;
    assert_int_equal(opsched_ctx_create(ctx), OPSCHED_OK);
    assert_int_equal(opsched_graph_create(*ctx, "t", &g), OPSCHED_OK);
    return g;
}

static int add_input(opsched_graph *g, const char *name, const char *dims)
{
    opsched_shape s;
    int id = -1;
    assert_int_equal(opsched_shape_parse(dims, &s), OPSCHED_OK);
    assert_int_equal(opsched_graph_add_tensor(g, name, OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s, &id),
                     OPSCHED_OK);
    return id;
}

static void done(opsched_ctx *ctx, opsched_graph *g)
{
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

static void test_shape_parse(void **state)
{
    (void)state;
    opsched_shape s;
    char buf[64];
    assert_int_equal(opsched_shape_parse("1x3x224x224", &s), OPSCHED_OK);
    assert_int_equal(s.ndim, 4);
    assert_string_equal(opsched_shape_format(&s, buf, sizeof(buf)), "1x3x224x224");
    assert_int_equal(opsched_shape_parse("2,5", &s), OPSCHED_OK);
    assert_int_equal(s.d[1], 5);
    assert_int_not_equal(opsched_shape_parse("", &s), OPSCHED_OK);
    assert_int_not_equal(opsched_shape_parse("1x0", &s), OPSCHED_OK);
    assert_int_not_equal(opsched_shape_parse("1x-3", &s), OPSCHED_OK);
    assert_int_not_equal(opsched_shape_parse("1xx3", &s), OPSCHED_OK);
    assert_int_not_equal(opsched_shape_parse("1x2x3x4x5x6x7x8x9", &s), OPSCHED_OK);
    assert_int_not_equal(opsched_shape_parse("abc", &s), OPSCHED_OK);
}

static void test_conv_shapes_and_flops(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    int x = add_input(g, "x", "2x3x224x224"), y = -1;
    opsched_conv_desc d = {.out_channels = 64, .kernel_h = 7, .kernel_w = 7, .stride_h = 2,
                           .stride_w = 2, .pad_h = 3, .pad_w = 3, .bias = 1};
    assert_int_equal(opsched_build_conv(g, "conv1", x, &d, &y), OPSCHED_OK);
    const opsched_tensor *t = opsched_graph_tensor(g, y);
    char buf[64];
    assert_string_equal(opsched_shape_format(&t->shape, buf, sizeof(buf)), "2x64x112x112");
    const opsched_node *n = opsched_graph_node(g, 0);
    /* 2 * N*M*OH*OW*C*kh*kw */
    assert_int_equal(n->cost.flops, 2LL * 2 * 64 * 112 * 112 * 3 * 7 * 7);
    assert_int_equal(n->cost.params, 64 * 3 * 7 * 7 + 64);
    assert_int_equal(n->cost.bytes_written, 2LL * 64 * 112 * 112 * 4);
    assert_int_equal(n->cost.bytes_read, (2LL * 3 * 224 * 224 + 64 * 3 * 49 + 64) * 4);
    done(ctx, g);
}

static void test_conv_bad_groups(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    int x = add_input(g, "x", "1x6x8x8");
    opsched_shape ws = {.ndim = 4, .d = {8, 2, 3, 3}};
    int w;
    assert_int_equal(opsched_graph_add_tensor(g, "w", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &ws, &w),
                     OPSCHED_OK);
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.conv.groups = 4; /* 6 channels are not divisible by 4 */
    int ins[2] = {x, w};
    assert_int_equal(opsched_graph_add_node(g, "bad", OPSCHED_OP_CONV, &a, ins, 2, 1, NULL, NULL),
                     OPSCHED_ERR_SHAPE);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "not divisible by groups"));
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "'bad'"));
    assert_int_equal(opsched_graph_num_nodes(g), 0);
    assert_int_equal(opsched_graph_num_tensors(g), 2);
    done(ctx, g);
}

static void test_kernel_larger_than_input(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    int x = add_input(g, "x", "1x3x4x4");
    opsched_conv_desc d = {.out_channels = 8, .kernel_h = 7, .kernel_w = 7, .pad_h = 1, .pad_w = 1};
    assert_int_equal(opsched_build_conv(g, "big", x, &d, NULL), OPSCHED_ERR_SHAPE);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "larger than the padded input"));
    /* with enough padding it works */
    d.pad_h = d.pad_w = 2;
    int y;
    assert_int_equal(opsched_build_conv(g, "ok", x, &d, &y), OPSCHED_OK);
    assert_int_equal(opsched_graph_tensor(g, y)->shape.d[2], 2);
    done(ctx, g);
}

static void test_pool_ceil_mode(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    int x = add_input(g, "x", "1x64x112x112"), y, z;
    /* squeezenet: MaxPool(3, 2, ceil_mode=True) on 111 gives 55; on 112 floor gives 55, ceil 56 */
    assert_int_equal(opsched_build_pool(g, "p1", OPSCHED_OP_MAXPOOL, x, 3, 2, 0, 1, 0, &y), OPSCHED_OK);
    assert_int_equal(opsched_graph_tensor(g, y)->shape.d[2], 56);
    assert_int_equal(opsched_build_pool(g, "p2", OPSCHED_OP_MAXPOOL, x, 3, 2, 0, 0, 0, &z), OPSCHED_OK);
    assert_int_equal(opsched_graph_tensor(g, z)->shape.d[2], 55);
    /* the last window must start inside the input or left padding */
    int w = add_input(g, "w", "1x1x5x5"), v;
    assert_int_equal(opsched_build_pool(g, "p3", OPSCHED_OP_AVGPOOL, w, 2, 2, 1, 1, 1, &v), OPSCHED_OK);
    assert_int_equal(opsched_graph_tensor(g, v)->shape.d[2], 3);
    done(ctx, g);
}

static void test_gemm_matmul_broadcast(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    int x = add_input(g, "x", "4x512"), y;
    assert_int_equal(opsched_build_linear(g, "fc", x, 1000, 1, &y), OPSCHED_OK);
    assert_int_equal(opsched_graph_tensor(g, y)->shape.d[1], 1000);
    assert_int_equal(opsched_graph_node(g, 0)->cost.flops, 2LL * 4 * 512 * 1000);

    int a = add_input(g, "a", "2x1x8x16"), b = add_input(g, "b", "3x16x4"), c;
    int ins[2] = {a, b};
    assert_int_equal(opsched_graph_add_node(g, "mm", OPSCHED_OP_MATMUL, NULL, ins, 2, 1, NULL, &c),
                     OPSCHED_OK);
    char buf[64];
    assert_string_equal(opsched_shape_format(&opsched_graph_tensor(g, c)->shape, buf, 64), "2x3x8x4");
    assert_int_equal(opsched_graph_node(g, 1)->cost.flops, 2LL * 6 * 8 * 4 * 16);

    int p = add_input(g, "p", "2x3"), q = add_input(g, "q", "4x3");
    int pq[2] = {p, q};
    assert_int_equal(opsched_graph_add_node(g, "add", OPSCHED_OP_ADD, NULL, pq, 2, 1, NULL, NULL),
                     OPSCHED_ERR_SHAPE);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "do not broadcast"));
    done(ctx, g);
}

static int node1(opsched_graph *g, const char *name, opsched_op_kind op, const opsched_op_attr *a,
                 int x, int w)
{
    int in[2] = {x, w}, y = -1;
    assert_int_equal(opsched_graph_add_node(g, name, op, a, in, w >= 0 ? 2 : 1, 1, NULL, &y),
                     OPSCHED_OK);
    return y;
}

/* The layout per tensor: a map permuted to [N, H, W, C], normalised,
 * multiplied, biased and activated, then permuted back, is one row-major
 * region whose Transposes are views; a region read by a pooling, or an Add
 * of a row-major and a channels-last map, is no region at all. */
static void test_layout_rowmajor(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    opsched_op_attr to_nhwc, to_nchw, ln;
    memset(&to_nhwc, 0, sizeof(to_nhwc));
    to_nhwc.transpose.n = 4;
    to_nhwc.transpose.perm[1] = 2, to_nhwc.transpose.perm[2] = 3, to_nhwc.transpose.perm[3] = 1;
    to_nchw = to_nhwc;
    to_nchw.transpose.perm[1] = 3, to_nchw.transpose.perm[2] = 1, to_nchw.transpose.perm[3] = 2;
    memset(&ln, 0, sizeof(ln));
    ln.layernorm.axis = -1;
    ln.layernorm.epsilon = 1e-6f;
    int x = add_input(g, "x", "1x8x6x6"), gamma = add_input(g, "gamma", "8");
    int w = add_input(g, "w", "8x16"), bias = add_input(g, "bias", "16");
    int w2 = add_input(g, "w2", "16x8");
    int t0 = node1(g, "in", OPSCHED_OP_TRANSPOSE, &to_nhwc, x, -1);
    int t1 = node1(g, "ln", OPSCHED_OP_LAYERNORM, &ln, t0, gamma);
    int t2 = node1(g, "fc1", OPSCHED_OP_MATMUL, NULL, t1, w);
    int t3 = node1(g, "add_bias", OPSCHED_OP_ADD, NULL, t2, bias);
    int t4 = node1(g, "gelu", OPSCHED_OP_GELU, NULL, t3, -1);
    int t5 = node1(g, "fc2", OPSCHED_OP_MATMUL, NULL, t4, w2);
    int t6 = node1(g, "out", OPSCHED_OP_TRANSPOSE, &to_nchw, t5, -1);
    int t7 = node1(g, "res", OPSCHED_OP_ADD, NULL, t6, x);
    (void)t7;
    int nt = opsched_graph_num_tensors(g);
    unsigned char *rm = calloc((size_t)nt, 1);
    assert_non_null(rm);
    assert_int_equal(opsched_layout_rowmajor(g, rm), 6);
    assert_int_equal(rm[x], 0);
    assert_int_equal(rm[t0] && rm[t1] && rm[t2] && rm[t3] && rm[t4] && rm[t5], 1);
    assert_int_equal(rm[t6], 0);
    assert_int_equal(opsched_layout_transpose_view(g, 0, rm), 1);
    assert_int_equal(opsched_layout_transpose_view(g, 6, rm), 1);
    assert_int_equal(opsched_layout_transpose_view(g, 7, rm), 0);
    assert_int_equal(opsched_graph_tensor_index(g, opsched_graph_tensor(g, t4)), t4);
    assert_int_equal(opsched_graph_tensor_index(g, NULL), -1);
    /* the region also read by a pooling: it goes, the Transposes copy */
    int p = -1;
    assert_int_equal(opsched_build_pool(g, "pool", OPSCHED_OP_MAXPOOL, t4, 3, 1, 1, 0, 0, &p),
                     OPSCHED_OK);
    free(rm); /* the graph has more tensors now */
    rm = calloc((size_t)opsched_graph_num_tensors(g), 1);
    assert_non_null(rm);
    assert_int_equal(opsched_layout_rowmajor(g, rm), 0);
    assert_int_equal(opsched_layout_transpose_view(g, 0, rm), 0);
    free(rm);
    done(ctx, g);

    /* an Add of the permuted map and a channels-last one of the same shape */
    g = new_graph(&ctx);
    x = add_input(g, "x", "1x6x6x6");
    int other = add_input(g, "other", "1x6x6x6");
    t0 = node1(g, "in", OPSCHED_OP_TRANSPOSE, &to_nhwc, x, -1);
    t1 = node1(g, "relu", OPSCHED_OP_RELU, NULL, t0, -1);
    t2 = node1(g, "mix", OPSCHED_OP_ADD, NULL, t1, other);
    rm = calloc((size_t)opsched_graph_num_tensors(g), 1);
    assert_non_null(rm);
    assert_int_equal(opsched_layout_rowmajor(g, rm), 0);
    /* without the mix, the relu's region stands (ends at a graph output) */
    free(rm);
    done(ctx, g);
    g = new_graph(&ctx);
    x = add_input(g, "x", "1x6x6x6");
    t0 = node1(g, "in", OPSCHED_OP_TRANSPOSE, &to_nhwc, x, -1);
    t1 = node1(g, "relu", OPSCHED_OP_RELU, NULL, t0, -1);
    assert_int_equal(opsched_graph_mark_output(g, t1), OPSCHED_OK);
    rm = calloc((size_t)opsched_graph_num_tensors(g), 1);
    assert_non_null(rm);
    assert_int_equal(opsched_layout_rowmajor(g, rm), 2);
    free(rm);
    done(ctx, g);
}

/* Element-wise chains: Add (broadcast bias) -> Gelu -> Mul (scale, the
 * running value second) -> Add (residual) is one chain of four with three
 * side operands; a Sub reading the running value second stops a chain; a
 * tensor read twice ends one; a graph output may end a chain but not sit
 * inside it. */
static void test_ew_chain(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    int x = add_input(g, "x", "2x8x16"), bias = add_input(g, "bias", "16");
    int scale = add_input(g, "scale", "16"), res = add_input(g, "res", "2x8x16");
    int t[8];
    int a0[2] = {x, bias};
    assert_int_equal(opsched_graph_add_node(g, "add_bias", OPSCHED_OP_ADD, NULL, a0, 2, 1, NULL,
                                            &t[0]),
                     OPSCHED_OK);
    assert_int_equal(opsched_graph_add_node(g, "gelu", OPSCHED_OP_GELU, NULL, &t[0], 1, 1, NULL,
                                            &t[1]),
                     OPSCHED_OK);
    int a2[2] = {scale, t[1]};
    assert_int_equal(opsched_graph_add_node(g, "mul_scale", OPSCHED_OP_MUL, NULL, a2, 2, 1, NULL,
                                            &t[2]),
                     OPSCHED_OK);
    int a3[2] = {t[2], res};
    assert_int_equal(opsched_graph_add_node(g, "add_res", OPSCHED_OP_ADD, NULL, a3, 2, 1, NULL,
                                            &t[3]),
                     OPSCHED_OK);
    /* t[3] is read twice: the chain ends at add_res. */
    assert_int_equal(opsched_graph_add_node(g, "relu", OPSCHED_OP_RELU, NULL, &t[3], 1, 1, NULL,
                                            &t[4]),
                     OPSCHED_OK);
    int a5[2] = {res, t[3]};
    assert_int_equal(opsched_graph_add_node(g, "sub", OPSCHED_OP_SUB, NULL, a5, 2, 1, NULL, &t[5]),
                     OPSCHED_OK);
    /* res - relu(...): Sub with the running value second stops the chain. */
    int a6[2] = {res, t[4]};
    assert_int_equal(opsched_graph_add_node(g, "sub2", OPSCHED_OP_SUB, NULL, a6, 2, 1, NULL, &t[6]),
                     OPSCHED_OK);
    opsched_ew_chain c;
    assert_int_equal(opsched_ew_chain_find(g, 0, &c), 1);
    assert_int_equal(c.n, 4);
    assert_int_equal(c.nodes[3], 3);
    assert_int_equal(c.running_second[2], 1);
    int sides[OPSCHED_CHAIN_MAX];
    assert_int_equal(opsched_ew_chain_sides(g, &c, sides), 2);
    assert_int_equal(sides[0], scale);
    assert_int_equal(sides[1], res);
    assert_int_equal(opsched_ew_chain_find(g, 4, &c), 0); /* relu -> sub2 (running second) */
    assert_int_equal(opsched_ew_chain_find(g, 5, &c), 0); /* nothing after */
    assert_int_equal(opsched_ew_chain_find(g, 2, &c), 1); /* from the middle */
    assert_int_equal(c.n, 2);
    /* A graph output inside: the chain stops before the node that reads it. */
    assert_int_equal(opsched_graph_mark_output(g, t[1]), OPSCHED_OK);
    assert_int_equal(opsched_ew_chain_find(g, 0, &c), 1);
    assert_int_equal(c.n, 2);
    assert_int_equal(opsched_ew_chain_find(g, 1, &c), 0);
    done(ctx, g);
}

/* An attention's products (the score product, which the softmax reads
 * through scaling, a mask and a reshape, and the product of the softmax's
 * output with V) are found; a product behind a Relu is not, nor a
 * non-product. */
static void test_product_is_attention(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    int q = add_input(g, "q", "1x4x8x16"), kt = add_input(g, "kt", "1x4x16x8");
    int v = add_input(g, "v", "1x4x8x16"), scale = add_input(g, "scale", "1");
    int mask = add_input(g, "mask", "1x1x8x8");
    int t[9];
    int ins[2] = {q, kt};
    assert_int_equal(
        opsched_graph_add_node(g, "qk", OPSCHED_OP_MATMUL, NULL, ins, 2, 1, NULL, &t[0]),
        OPSCHED_OK);
    int m1[2] = {t[0], scale};
    assert_int_equal(
        opsched_graph_add_node(g, "mul_scale", OPSCHED_OP_MUL, NULL, m1, 2, 1, NULL, &t[1]),
        OPSCHED_OK);
    int m2[2] = {t[1], mask};
    assert_int_equal(
        opsched_graph_add_node(g, "add_mask", OPSCHED_OP_ADD, NULL, m2, 2, 1, NULL, &t[2]),
        OPSCHED_OK);
    opsched_op_attr sm;
    memset(&sm, 0, sizeof(sm));
    sm.axis.axis = -1;
    assert_int_equal(
        opsched_graph_add_node(g, "softmax", OPSCHED_OP_SOFTMAX, &sm, &t[2], 1, 1, NULL, &t[3]),
        OPSCHED_OK);
    assert_int_equal(
        opsched_graph_add_node(g, "drop", OPSCHED_OP_IDENTITY, NULL, &t[3], 1, 1, NULL, &t[8]),
        OPSCHED_OK);
    int pv[2] = {t[8], v};
    assert_int_equal(
        opsched_graph_add_node(g, "pv", OPSCHED_OP_MATMUL, NULL, pv, 2, 1, NULL, &t[4]),
        OPSCHED_OK);
    assert_int_equal(
        opsched_graph_add_node(g, "other", OPSCHED_OP_MATMUL, NULL, ins, 2, 1, NULL, &t[5]),
        OPSCHED_OK);
    assert_int_equal(
        opsched_graph_add_node(g, "relu", OPSCHED_OP_RELU, NULL, &t[5], 1, 1, NULL, &t[6]),
        OPSCHED_OK);
    assert_int_equal(
        opsched_graph_add_node(g, "softmax2", OPSCHED_OP_SOFTMAX, &sm, &t[6], 1, 1, NULL, &t[7]),
        OPSCHED_OK);
    assert_int_equal(opsched_product_is_attention(g, 0), 1); /* the scores */
    assert_int_equal(opsched_product_is_attention(g, 5), 1); /* after the softmax */
    assert_int_equal(opsched_product_is_attention(g, 6), 0); /* behind a Relu */
    assert_int_equal(opsched_product_is_attention(g, 1), 0); /* not a product */
    done(ctx, g);
}

static void test_concat_split_views(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    int a = add_input(g, "a", "1x16x8x8"), b = add_input(g, "b", "1x32x8x8"), c;
    int ab[2] = {a, b};
    assert_int_equal(opsched_build_concat(g, "cat", ab, 2, 1, &c), OPSCHED_OK);
    assert_int_equal(opsched_graph_tensor(g, c)->shape.d[1], 48);
    int bad = add_input(g, "bad", "1x16x4x4");
    int abad[2] = {a, bad};
    assert_int_equal(opsched_build_concat(g, "cat2", abad, 2, 1, NULL), OPSCHED_ERR_SHAPE);

    opsched_op_attr sp;
    memset(&sp, 0, sizeof(sp));
    sp.split.axis = 1;
    sp.split.n = 2;
    sp.split.sizes[0] = 24;
    sp.split.sizes[1] = 24;
    int outs[2];
    assert_int_equal(opsched_graph_add_node(g, "split", OPSCHED_OP_SPLIT, &sp, &c, 1, 2, NULL, outs),
                     OPSCHED_OK);
    assert_string_equal(opsched_graph_tensor(g, outs[1])->name, "split:1");

    int f;
    assert_int_equal(opsched_build_flatten(g, "flat", outs[0], 1, &f), OPSCHED_OK);
    assert_int_equal(opsched_graph_tensor(g, f)->shape.d[1], 24 * 64);
    const opsched_node *fn = opsched_graph_node(g, 2);
    assert_true(opsched_op_is_view(fn->op));
    assert_int_equal(fn->cost.bytes_read + fn->cost.bytes_written + fn->cost.flops, 0);

    opsched_op_attr r;
    memset(&r, 0, sizeof(r));
    r.shape.shape.ndim = 2;
    r.shape.shape.d[0] = 7;
    r.shape.shape.d[1] = 100;
    assert_int_equal(opsched_build_unary(g, "rs", OPSCHED_OP_RESHAPE, &r, f, NULL), OPSCHED_ERR_SHAPE);
    done(ctx, g);
}

static void test_names_unique(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    int x = add_input(g, "x", "1x4"), y;
    opsched_shape s = {.ndim = 1, .d = {4}};
    assert_int_equal(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s, NULL),
                     OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_build_unary(g, "relu", OPSCHED_OP_RELU, NULL, x, &y), OPSCHED_OK);
    assert_int_equal(opsched_build_unary(g, "relu", OPSCHED_OP_RELU, NULL, y, NULL),
                     OPSCHED_ERR_INVALID_ARG);
    int found = -1;
    assert_int_equal(opsched_graph_find_tensor(g, "relu", &found), OPSCHED_OK);
    assert_int_equal(found, y);
    assert_int_equal(opsched_graph_find_tensor(g, "nope", &found), OPSCHED_ERR_NOT_FOUND);
    /* many tensors: the name table grows */
    char name[32];
    int prev = y;
    for (int i = 0; i < 500; i++) {
        snprintf(name, sizeof(name), "r%d", i);
        assert_int_equal(opsched_build_unary(g, name, OPSCHED_OP_RELU, NULL, prev, &prev), OPSCHED_OK);
    }
    assert_int_equal(opsched_graph_find_tensor(g, "r321", &found), OPSCHED_OK);
    assert_string_equal(opsched_graph_tensor(g, found)->name, "r321");
    done(ctx, g);
}

static void test_peak_memory(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    /* x(400B) -> a = relu(x) -> b = relu(a) -> flatten(b) -> c = add(b, a) */
    int x = add_input(g, "x", "1x100"), a, b, f, c;
    assert_int_equal(opsched_build_unary(g, "a", OPSCHED_OP_RELU, NULL, x, &a), OPSCHED_OK);
    assert_int_equal(opsched_build_unary(g, "b", OPSCHED_OP_RELU, NULL, a, &b), OPSCHED_OK);
    assert_int_equal(opsched_build_flatten(g, "f", b, 1, &f), OPSCHED_OK);
    assert_int_equal(opsched_build_binary(g, "c", OPSCHED_OP_ADD, f, a, &c), OPSCHED_OK);
    assert_int_equal(opsched_graph_mark_output(g, c), OPSCHED_OK);
    opsched_graph_totals t;
    assert_int_equal(opsched_graph_totals_compute(g, &t), OPSCHED_OK);
    /* node a: x+a = 800; x freed.  node b: a+b = 800.  node c: a+b+c = 1200 */
    assert_int_equal(t.peak_activation_bytes, 1200);
    assert_int_equal(t.n_nodes, 4);
    assert_int_equal(t.n_compute_nodes, 3);
    assert_int_equal(t.flops, 300);
    done(ctx, g);
}

static void test_batchnorm_params(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    int x = add_input(g, "x", "1x8x4x4");
    assert_int_equal(opsched_build_batchnorm(g, "bn", x, 1e-5f, NULL), OPSCHED_OK);
    opsched_graph_totals t;
    assert_int_equal(opsched_graph_totals_compute(g, &t), OPSCHED_OK);
    assert_int_equal(t.params, 16); /* scale and shift; running stats are not parameters */
    done(ctx, g);
}

static void test_set_data(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    opsched_shape s = {.ndim = 1, .d = {3}};
    int w;
    float v[3] = {1, 2, 3};
    assert_int_equal(opsched_graph_add_tensor(g, "w", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &s, &w),
                     OPSCHED_OK);
    assert_int_equal(opsched_graph_set_data(g, w, v, 8), OPSCHED_ERR_SHAPE);
    assert_int_equal(opsched_graph_set_data(g, w, v, sizeof(v)), OPSCHED_OK);
    assert_memory_equal(opsched_graph_tensor(g, w)->data, v, sizeof(v));
    done(ctx, g);
}

static void test_free_null(void **state)
{
    (void)state;
    opsched_graph_free(NULL);
    opsched_ctx_free(NULL);
    assert_string_equal(opsched_status_str(OPSCHED_ERR_SHAPE), "impossible shape");
}

/* Nodes that compute the same (the same op, attributes and inputs, small
 * constants compared by value) become one; a twin whose output is a graph
 * output, or whose constant differs, stays. */
static void test_common_subexpressions(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    int x = add_input(g, "x", "2x5");
    opsched_shape one = {0, {0}};
    int c[3];
    const float v[3] = {2.0f, 2.0f, 3.0f};
    const char *cn[3] = {"two_a", "two_b", "three"};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(opsched_graph_add_tensor(g, cn[k], OPSCHED_TENSOR_CONSTANT, OPSCHED_F32,
                                                  &one, &c[k]),
                         OPSCHED_OK);
        assert_int_equal(opsched_graph_set_data(g, c[k], &v[k], sizeof(float)), OPSCHED_OK);
    }
    int r1 = node1(g, "relu1", OPSCHED_OP_RELU, NULL, x, -1);
    int r2 = node1(g, "relu2", OPSCHED_OP_RELU, NULL, x, -1);
    int m1 = node1(g, "mul_a", OPSCHED_OP_MUL, NULL, r1, c[0]);
    int m2 = node1(g, "mul_b", OPSCHED_OP_MUL, NULL, r2, c[1]); /* r2 is r1: the same product */
    int m3 = node1(g, "mul_c", OPSCHED_OP_MUL, NULL, r1, c[2]);
    int s1 = node1(g, "sum1", OPSCHED_OP_ADD, NULL, m1, m2);
    int s2 = node1(g, "sum2", OPSCHED_OP_ADD, NULL, s1, m3);
    int r3 = node1(g, "relu3", OPSCHED_OP_RELU, NULL, x, -1); /* an output: kept */
    assert_int_equal(opsched_graph_mark_output(g, s2), OPSCHED_OK);
    assert_int_equal(opsched_graph_mark_output(g, r3), OPSCHED_OK);
    int n = 0;
    assert_int_equal(opsched_graph_rewrite_patterns(&g, 0, &n), OPSCHED_OK);
    assert_int_equal(n, 2);
    assert_int_equal(opsched_graph_num_nodes(g), 8 - 2);
    int id = -1;
    assert_int_equal(opsched_graph_find_tensor(g, "sum1", &id), OPSCHED_OK);
    const opsched_node *sum = opsched_graph_node(g, opsched_graph_tensor(g, id)->producer);
    assert_int_equal(sum->inputs[0], sum->inputs[1]);
    assert_int_equal(opsched_graph_find_tensor(g, "relu3", &id), OPSCHED_OK);
    assert_int_equal(opsched_graph_find_tensor(g, "mul_c", &id), OPSCHED_OK);
    assert_int_equal(opsched_graph_find_tensor(g, "mul_b", &id), OPSCHED_ERR_NOT_FOUND);
    done(ctx, g);
}

static int shuffle_reshape(opsched_graph *g, const char *name, int x, const char *dims)
{
    opsched_op_attr rs;
    memset(&rs, 0, sizeof(rs));
    assert_int_equal(opsched_shape_parse(dims, &rs.shape.shape), OPSCHED_OK);
    return node1(g, name, OPSCHED_OP_RESHAPE, &rs, x, -1);
}

static int channel_slice(opsched_graph *g, const char *name, int x, int64_t c0, int64_t c1)
{
    int y = -1;
    assert_int_equal(netref_channel_slice(g, name, x, c0, c1, &y), 0);
    return y;
}

/* Runs of movement nodes: ShuffleNet's channel shuffle (Reshape to
 * [N, 2, C/2, H, W], Transpose, Reshape back) and the two channel Slices
 * after it are two runs whose Reshapes and Transpose need no memory; each
 * Slice reads the shuffle's input through one strided view, checked here
 * element by element against the shuffle's formula.  A Slice across
 * merged dimensions that does not align with them is no run; a run never
 * ends at a node that may not head one. */
static void test_movement_runs(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    int x = add_input(g, "x", "1x8x2x3");
    int r1 = shuffle_reshape(g, "split", x, "1x2x4x2x3");
    opsched_op_attr tr;
    memset(&tr, 0, sizeof(tr));
    tr.transpose.n = 5;
    int perm[5] = {0, 2, 1, 3, 4};
    for (int d = 0; d < 5; d++)
        tr.transpose.perm[d] = perm[d];
    int t = node1(g, "swap", OPSCHED_OP_TRANSPOSE, &tr, r1, -1);
    int r2 = shuffle_reshape(g, "join", t, "1x8x2x3");
    int sa = channel_slice(g, "first", r2, 0, 4), sb = channel_slice(g, "second", r2, 4, 8);
    int ya = node1(g, "relu_a", OPSCHED_OP_RELU, NULL, sa, -1);
    int yb = node1(g, "relu_b", OPSCHED_OP_RELU, NULL, sb, -1);
    assert_int_equal(opsched_graph_mark_output(g, ya), OPSCHED_OK);
    assert_int_equal(opsched_graph_mark_output(g, yb), OPSCHED_OK);
    int role[8];
    assert_int_equal(opsched_move_runs(g, NULL, role), 2);
    int want[7] = {OPSCHED_MOVE_INSIDE, OPSCHED_MOVE_INSIDE, OPSCHED_MOVE_INSIDE,
                   OPSCHED_MOVE_HEAD,   OPSCHED_MOVE_HEAD,   OPSCHED_MOVE_NONE,
                   OPSCHED_MOVE_NONE};
    for (int i = 0; i < 7; i++)
        assert_int_equal(role[i], want[i]);
    const int64_t xs[4] = {48, 6, 3, 1}, ys[4] = {24, 6, 3, 1};
    for (int half = 0; half < 2; half++) {
        int path[OPSCHED_MOVE_MAX_RUN];
        assert_int_equal(opsched_move_run(g, role, 3 + half, path), 4);
        assert_int_equal(path[0], 0);
        assert_int_equal(path[3], 3 + half);
        opsched_move_view v;
        int64_t dst[OPSCHED_MOVE_MAX_FACTORS], idx[OPSCHED_MOVE_MAX_FACTORS] = {0};
        assert_int_equal(opsched_move_compose(g, path, 4, xs, &v), 1);
        opsched_move_dst_strides(&v, ys, dst);
        int64_t total = 1, seen = 0;
        for (int f = 0; f < v.n; f++)
            total *= v.size[f];
        assert_int_equal(total, 24);
        for (int64_t e = 0; e < total; e++) {
            int64_t s = v.offset, d = 0;
            for (int f = 0; f < v.n; f++) {
                s += idx[f] * v.stride[f];
                d += idx[f] * dst[f];
            }
            /* out channel c (of the shuffled 8) = 2i + k reads input channel 4k + i */
            int64_t c = d / 6 + 4 * half, h = (d / 3) % 2, w = d % 3;
            assert_int_equal(s, ((c % 2) * 4 + c / 2) * 6 + h * 3 + w);
            seen |= 1ll << d;
            for (int f = v.n - 1; f >= 0 && ++idx[f] == v.size[f]; f--)
                idx[f] = 0;
        }
        assert_int_equal(seen, (1ll << 24) - 1); /* every output element once */
    }
    /* the first Slice may not head a run: the shuffle's end is kept, and
     * heads a run of three; the Slices run alone from it */
    unsigned char no_head[8] = {0, 0, 0, 1, 0, 0, 0, 0};
    assert_int_equal(opsched_move_runs(g, no_head, role), 1);
    assert_int_equal(role[2], OPSCHED_MOVE_HEAD);
    assert_int_equal(role[3], OPSCHED_MOVE_ALONE);
    assert_int_equal(role[4], OPSCHED_MOVE_ALONE);
    done(ctx, g);

    /* [2, 3] flattened, then elements 1 to 3: not one strided view */
    g = new_graph(&ctx);
    x = add_input(g, "x", "2x3");
    int f = shuffle_reshape(g, "flat", x, "6");
    opsched_op_attr sl;
    memset(&sl, 0, sizeof(sl));
    sl.slice.starts[0] = 1;
    sl.slice.ends[0] = 4;
    sl.slice.steps[0] = 1;
    int s = node1(g, "part", OPSCHED_OP_SLICE, &sl, f, -1);
    assert_int_equal(opsched_graph_mark_output(g, node1(g, "relu", OPSCHED_OP_RELU, NULL, s, -1)),
                     OPSCHED_OK);
    assert_int_equal(opsched_move_runs(g, NULL, role), 0);
    assert_int_equal(role[0], OPSCHED_MOVE_ALONE);
    assert_int_equal(role[1], OPSCHED_MOVE_ALONE);
    done(ctx, g);
}

/* A row-major array of int64 source indices, shaped. */
typedef struct idx_array {
    opsched_shape shape;
    int64_t *v;
} idx_array;

static int64_t unravel_at(const opsched_shape *s, int64_t lin, int d)
{
    for (int k = s->ndim - 1; k > d; k--)
        lin /= s->d[k];
    return lin % s->d[d];
}

/* y = x transposed by perm, or sliced (starts, steps, y's shape), naively. */
static void naive_step(const opsched_node *n, const idx_array *x, const opsched_shape *ys,
                       idx_array *y)
{
    int64_t numel = opsched_shape_numel(ys);
    y->shape = *ys;
    y->v = malloc(sizeof(int64_t) * (size_t)(numel > 0 ? numel : 1));
    assert_non_null(y->v);
    for (int64_t e = 0; e < numel; e++) {
        int64_t xi[OPSCHED_MAX_DIMS], lin = 0;
        for (int d = 0; d < ys->ndim; d++) {
            int64_t i = unravel_at(ys, e, d);
            if (n->op == OPSCHED_OP_TRANSPOSE)
                xi[n->attr.transpose.perm[d]] = i;
            else if (n->op == OPSCHED_OP_SLICE)
                xi[d] = n->attr.slice.starts[d] + i * n->attr.slice.steps[d];
        }
        if (n->op == OPSCHED_OP_RESHAPE) {
            lin = e;
        } else {
            for (int d = 0; d < x->shape.ndim; d++)
                lin = lin * x->shape.d[d] + xi[d];
        }
        y->v[e] = x->v[lin];
    }
}

/* Random runs of Reshapes, Transposes and Slices on small shapes: wherever
 * opsched_move_compose finds a view, the view reads, for every output
 * element, the source element the nodes one by one would have moved there;
 * and most runs compose. */
static void test_movement_compose_random(void **state)
{
    (void)state;
    test_rng r;
    test_rng_seed(&r, 1234);
    int composed = 0, tried = 0;
    for (int trial = 0; trial < 600; trial++) {
        opsched_ctx *ctx;
        opsched_graph *g = new_graph(&ctx);
        opsched_shape xs = {(int)test_rng_int(&r, 1, 5), {0}};
        for (int d = 0; d < xs.ndim; d++)
            xs.d[d] = test_rng_int(&r, 1, 5);
        char dims[64];
        int w = 0;
        for (int d = 0; d < xs.ndim; d++)
            w += snprintf(dims + w, sizeof(dims) - (size_t)w, "%s%lld", d ? "x" : "",
                          (long long)xs.d[d]);
        int cur = add_input(g, "x", dims), nodes[6], n = (int)test_rng_int(&r, 2, 6);
        for (int k = 0; k < n; k++) {
            const opsched_shape *cs = &opsched_graph_tensor(g, cur)->shape;
            opsched_op_attr a;
            memset(&a, 0, sizeof(a));
            int kind = (int)test_rng_int(&r, 0, 3);
            char name[16];
            snprintf(name, sizeof(name), "n%d", k);
            if (kind == 0) { /* a random factorisation of the elements */
                int64_t left = opsched_shape_numel(cs);
                opsched_shape to = {0, {0}};
                while (left > 1 && to.ndim < 5) {
                    int64_t f = test_rng_int(&r, 1, left + 1);
                    while (left % f) f--;
                    to.d[to.ndim++] = f;
                    left /= f;
                }
                if (left > 1 || to.ndim == 0) to.d[to.ndim++] = left;
                a.shape.shape = to;
                cur = node1(g, name, OPSCHED_OP_RESHAPE, &a, cur, -1);
            } else if (kind == 1) {
                a.transpose.n = cs->ndim;
                for (int d = 0; d < cs->ndim; d++)
                    a.transpose.perm[d] = d;
                for (int d = cs->ndim - 1; d > 0; d--) {
                    int j = (int)test_rng_int(&r, 0, d + 1), t = a.transpose.perm[d];
                    a.transpose.perm[d] = a.transpose.perm[j];
                    a.transpose.perm[j] = t;
                }
                cur = node1(g, name, OPSCHED_OP_TRANSPOSE, &a, cur, -1);
            } else {
                for (int d = 0; d < cs->ndim; d++) {
                    a.slice.ends[d] = cs->d[d];
                    a.slice.steps[d] = 1;
                }
                int d = (int)test_rng_int(&r, 0, cs->ndim);
                int64_t step = test_rng_int(&r, 1, 3), start = test_rng_int(&r, 0, cs->d[d]);
                a.slice.starts[d] = start;
                a.slice.steps[d] = step;
                a.slice.ends[d] = test_rng_int(&r, start + 1, cs->d[d] + 1);
                cur = node1(g, name, OPSCHED_OP_SLICE, &a, cur, -1);
            }
            nodes[k] = opsched_graph_num_nodes(g) - 1;
        }
        /* the nodes one by one, on the source's row-major indices */
        idx_array v;
        v.shape = xs;
        int64_t xn = opsched_shape_numel(&xs);
        v.v = malloc(sizeof(int64_t) * (size_t)xn);
        assert_non_null(v.v);
        for (int64_t e = 0; e < xn; e++)
            v.v[e] = e;
        for (int k = 0; k < n; k++) {
            const opsched_node *nd = opsched_graph_node(g, nodes[k]);
            idx_array y;
            naive_step(nd, &v, &opsched_graph_tensor(g, nd->outputs[0])->shape, &y);
            free(v.v);
            v = y;
        }
        int64_t st[OPSCHED_MAX_DIMS], ys[OPSCHED_MAX_DIMS], acc = 1;
        for (int d = xs.ndim - 1; d >= 0; d--) {
            st[d] = acc;
            acc *= xs.d[d];
        }
        acc = 1;
        for (int d = v.shape.ndim - 1; d >= 0; d--) {
            ys[d] = acc;
            acc *= v.shape.d[d];
        }
        opsched_move_view mv;
        tried++;
        if (opsched_move_compose(g, nodes, n, st, &mv)) {
            composed++;
            int64_t dst[OPSCHED_MOVE_MAX_FACTORS], idx[OPSCHED_MOVE_MAX_FACTORS] = {0}, total = 1;
            opsched_move_dst_strides(&mv, ys, dst);
            for (int f = 0; f < mv.n; f++)
                total *= mv.size[f];
            assert_int_equal(total, opsched_shape_numel(&v.shape));
            for (int64_t e = 0; e < total; e++) {
                int64_t so = mv.offset, d = 0;
                for (int f = 0; f < mv.n; f++) {
                    so += idx[f] * mv.stride[f];
                    d += idx[f] * dst[f];
                }
                if (v.v[d] != so)
                    fail_msg("trial %d: output %lld reads %lld, the nodes move %lld there", trial,
                             (long long)d, (long long)so, (long long)v.v[d]);
                for (int f = mv.n - 1; f >= 0 && ++idx[f] == mv.size[f]; f--)
                    idx[f] = 0;
            }
        }
        free(v.v);
        done(ctx, g);
    }
    print_message("  %d of %d random runs composed into one view, each checked\n", composed,
                  tried);
    assert_true(composed * 2 > tried);
}

/* A 4-D tensor reshaped from a 3-D one (a transformer's heads) is kept
 * row-major, and so is what element-wise ops make of it; a convolution
 * reading such a tensor takes it back (it reads images). */
static void test_layout_heads(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = new_graph(&ctx);
    int x = add_input(g, "x", "2x6x8");
    opsched_op_attr rs;
    memset(&rs, 0, sizeof(rs));
    assert_int_equal(opsched_shape_parse("2x6x2x4", &rs.shape.shape), OPSCHED_OK);
    int h = node1(g, "heads", OPSCHED_OP_RESHAPE, &rs, x, -1);
    int s = node1(g, "act", OPSCHED_OP_SIGMOID, NULL, h, -1);
    unsigned char *rm = calloc((size_t)opsched_graph_num_tensors(g), 1);
    assert_non_null(rm);
    assert_int_equal(opsched_layout_rowmajor(g, rm), 2);
    assert_true(rm[h] && rm[s] && !rm[x]);
    free(rm);
    int w = add_input(g, "w", "3x6x1x1"), y = -1;
    int in[2] = {s, w};
    opsched_op_attr cv;
    memset(&cv, 0, sizeof(cv));
    cv.conv.kernel[0] = cv.conv.kernel[1] = 1;
    cv.conv.stride[0] = cv.conv.stride[1] = 1;
    cv.conv.dilation[0] = cv.conv.dilation[1] = 1;
    cv.conv.groups = 1;
    assert_int_equal(opsched_graph_add_node(g, "conv", OPSCHED_OP_CONV, &cv, in, 2, 1, NULL, &y),
                     OPSCHED_OK);
    rm = calloc((size_t)opsched_graph_num_tensors(g), 1);
    assert_non_null(rm);
    assert_int_equal(opsched_layout_rowmajor(g, rm), 0);
    free(rm);
    done(ctx, g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape_parse),        cmocka_unit_test(test_conv_shapes_and_flops),
        cmocka_unit_test(test_conv_bad_groups),    cmocka_unit_test(test_kernel_larger_than_input),
        cmocka_unit_test(test_pool_ceil_mode),     cmocka_unit_test(test_gemm_matmul_broadcast),
        cmocka_unit_test(test_product_is_attention),
        cmocka_unit_test(test_concat_split_views), cmocka_unit_test(test_names_unique),
        cmocka_unit_test(test_peak_memory),        cmocka_unit_test(test_batchnorm_params),
        cmocka_unit_test(test_set_data),           cmocka_unit_test(test_free_null),
        cmocka_unit_test(test_ew_chain),          cmocka_unit_test(test_layout_rowmajor),
        cmocka_unit_test(test_common_subexpressions),
        cmocka_unit_test(test_layout_heads),
        cmocka_unit_test(test_movement_runs),
        cmocka_unit_test(test_movement_compose_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
