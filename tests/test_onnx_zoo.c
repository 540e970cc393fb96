/*
 * test_onnx_zoo.c - the built-in networks against what torch.onnx.export
 * writes for the same torchvision models (tests/onnx/make_models.py).
 *
 * For each zoo model, the deployed form (BatchNormalization folded into the
 * convolutions, as the exporter folds it in eval mode) and the ONNX file must
 * have the same Conv / MaxPool / AveragePool / GlobalAveragePool / Gemm
 * nodes in the same order, with the same shapes, window attributes and
 * FLOPs, and the same total FLOPs.  Names are allowed to differ.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opsched/onnx.h"
#include "opsched/zoo.h"

static int is_compared(opsched_op_kind op)
{
    return op == OPSCHED_OP_CONV || op == OPSCHED_OP_MAXPOOL || op == OPSCHED_OP_AVGPOOL ||
           op == OPSCHED_OP_GLOBALAVGPOOL || op == OPSCHED_OP_GEMM;
}

/* Indices of the compared nodes of g, in order; returns their count. */
static int compared_nodes(const opsched_graph *g, int *out, int max)
{
    int n = 0;
    for (int i = 0; i < opsched_graph_num_nodes(g); i++)
        if (is_compared(opsched_graph_node(g, i)->op) && n < max) out[n++] = i;
    return n;
}

static const opsched_shape *in_shape(const opsched_graph *g, const opsched_node *n)
{
    return &opsched_graph_tensor(g, n->inputs[0])->shape;
}

static const opsched_shape *out_shape(const opsched_graph *g, const opsched_node *n)
{
    return &opsched_graph_tensor(g, n->outputs[0])->shape;
}

static int same_window(const int64_t *a, const int64_t *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* Describes how two nodes differ into why; 0 when they match. */
static int node_diff(const opsched_graph *zg, const opsched_node *z, const opsched_graph *og,
                     const opsched_node *o, char *why, size_t size)
{
    char b1[96], b2[96];
    if (z->op != o->op) {
        snprintf(why, size, "op %s vs %s", opsched_op_name(z->op), opsched_op_name(o->op));
        return 1;
    }
    if (!opsched_shape_equal(in_shape(zg, z), in_shape(og, o))) {
        snprintf(why, size, "input %s vs %s", opsched_shape_format(in_shape(zg, z), b1, sizeof(b1)),
                 opsched_shape_format(in_shape(og, o), b2, sizeof(b2)));
        return 1;
    }
    if (!opsched_shape_equal(out_shape(zg, z), out_shape(og, o))) {
        snprintf(why, size, "output %s vs %s",
                 opsched_shape_format(out_shape(zg, z), b1, sizeof(b1)),
                 opsched_shape_format(out_shape(og, o), b2, sizeof(b2)));
        return 1;
    }
    if (z->op == OPSCHED_OP_CONV) {
        const opsched_conv_attr *a = &z->attr.conv, *b = &o->attr.conv;
        if (!same_window(a->kernel, b->kernel, 2) || !same_window(a->stride, b->stride, 2) ||
            !same_window(a->dilation, b->dilation, 2) || !same_window(a->pads, b->pads, 4) ||
            a->groups != b->groups) {
            snprintf(why, size,
                     "conv attributes differ (kernel %lldx%lld/%lldx%lld, stride "
                     "%lld/%lld, pads %lld,%lld,%lld,%lld/%lld,%lld,%lld,%lld, groups %lld/%lld)",
                     (long long)a->kernel[0], (long long)a->kernel[1], (long long)b->kernel[0],
                     (long long)b->kernel[1], (long long)a->stride[0], (long long)b->stride[0],
                     (long long)a->pads[0], (long long)a->pads[1], (long long)a->pads[2],
                     (long long)a->pads[3], (long long)b->pads[0], (long long)b->pads[1],
                     (long long)b->pads[2], (long long)b->pads[3], (long long)a->groups,
                     (long long)b->groups);
            return 1;
        }
        if ((z->n_inputs > 2 && z->inputs[2] >= 0) != (o->n_inputs > 2 && o->inputs[2] >= 0)) {
            snprintf(why, size, "one conv has a bias, the other none");
            return 1;
        }
    }
    if (z->op == OPSCHED_OP_MAXPOOL || z->op == OPSCHED_OP_AVGPOOL) {
        const opsched_pool_attr *a = &z->attr.pool, *b = &o->attr.pool;
        int same = same_window(a->kernel, b->kernel, 2) && same_window(a->stride, b->stride, 2) &&
                   same_window(a->pads, b->pads, 4) && a->ceil_mode == b->ceil_mode;
        /* count_include_pad only matters where there is padding. */
        int padded = a->pads[0] || a->pads[1] || a->pads[2] || a->pads[3];
        if (z->op == OPSCHED_OP_AVGPOOL && padded && a->count_include_pad != b->count_include_pad)
            same = 0;
        if (!same) {
            snprintf(why, size,
                     "pool attributes differ (kernel %lld/%lld, stride %lld/%lld, pads "
                     "%lld/%lld, ceil %d/%d, count_include_pad %d/%d)",
                     (long long)a->kernel[0], (long long)b->kernel[0], (long long)a->stride[0],
                     (long long)b->stride[0], (long long)a->pads[0], (long long)b->pads[0],
                     a->ceil_mode, b->ceil_mode, a->count_include_pad, b->count_include_pad);
            return 1;
        }
    }
    if (z->op == OPSCHED_OP_GEMM) {
        const opsched_gemm_attr *a = &z->attr.gemm, *b = &o->attr.gemm;
        if (a->trans_a != b->trans_a || a->trans_b != b->trans_b || a->alpha != b->alpha ||
            a->beta != b->beta) {
            snprintf(why, size, "gemm attributes differ");
            return 1;
        }
    }
    if (z->cost.flops != o->cost.flops) {
        snprintf(why, size, "FLOPs %lld vs %lld", (long long)z->cost.flops,
                 (long long)o->cost.flops);
        return 1;
    }
    return 0;
}

static void compare_model(const char *name)
{
    const char *dir = getenv("OPSCHED_TESTDATA");
    if (!dir) skip();
    char path[1024];
    snprintf(path, sizeof(path), "%s/onnx/torch/%s_op13.onnx", dir, name);
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_graph *zg = NULL, *og = NULL;
    opsched_zoo_options zo = {.fold_bn = 1};
    opsched_status st = opsched_zoo_build(ctx, name, &zo, &zg);
    if (st != OPSCHED_OK) print_error("zoo %s: %s\n", name, opsched_ctx_last_error(ctx));
    assert_int_equal(st, OPSCHED_OK);
    st = opsched_onnx_load_file(ctx, path, NULL, &og);
    if (st != OPSCHED_OK) print_error("onnx %s: %s\n", name, opsched_ctx_last_error(ctx));
    assert_int_equal(st, OPSCHED_OK);

    enum { MAXN = 1024 };
    static int zi[MAXN], oi[MAXN];
    int nz = compared_nodes(zg, zi, MAXN), no = compared_nodes(og, oi, MAXN);
    int bad = 0, renamed = 0;
    for (int k = 0; k < nz && k < no; k++) {
        const opsched_node *z = opsched_graph_node(zg, zi[k]), *o = opsched_graph_node(og, oi[k]);
        char why[512];
        if (node_diff(zg, z, og, o, why, sizeof(why))) {
            if (bad++ < 5)
                print_error("%s: compared node %d: zoo '%s' vs onnx '%s': %s\n", name, k, z->name,
                            o->name, why);
        } else if (strcmp(z->name, o->name) != 0) {
            renamed++;
        }
    }
    if (nz != no)
        print_error("%s: %d compared nodes in the zoo, %d in the ONNX file\n", name, nz, no);
    opsched_graph_totals tz, to;
    assert_int_equal(opsched_graph_totals_compute(zg, &tz), OPSCHED_OK);
    assert_int_equal(opsched_graph_totals_compute(og, &to), OPSCHED_OK);
    if (tz.flops != to.flops)
        print_error("%s: total FLOPs %lld (zoo) vs %lld (onnx)\n", name, (long long)tz.flops,
                    (long long)to.flops);
    if (renamed) print_message("%s: %d matching nodes have other names (fine)\n", name, renamed);
    opsched_graph_free(zg);
    opsched_graph_free(og);
    opsched_ctx_free(ctx);
    assert_int_equal(bad, 0);
    assert_int_equal(nz, no);
    assert_true(tz.flops == to.flops);
}

#define ZOO_TEST(name)                                                                             \
    static void test_##name(void **state)                                                          \
    {                                                                                              \
        (void)state;                                                                               \
        compare_model(#name);                                                                      \
    }
ZOO_TEST(alexnet)
ZOO_TEST(vgg16)
ZOO_TEST(resnet50)
ZOO_TEST(resnet152)
ZOO_TEST(densenet121)
ZOO_TEST(googlenet)
ZOO_TEST(inception_v3)
ZOO_TEST(squeezenet1_1)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alexnet),      cmocka_unit_test(test_vgg16),
        cmocka_unit_test(test_resnet50),     cmocka_unit_test(test_resnet152),
        cmocka_unit_test(test_densenet121),  cmocka_unit_test(test_googlenet),
        cmocka_unit_test(test_inception_v3), cmocka_unit_test(test_squeezenet1_1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
