/*
 * nasnet.c - NASNet-A (Zoph, Vasudevan, Shlens, Le, "Learning Transferable
 * Architectures for Scalable Image Recognition", CVPR 2018) as TF-slim
 * defines it (models/research/slim/nets/nasnet/nasnet.py) and Cadene's
 * pretrainedmodels ports it to PyTorch (nasnet_mobile.py, nasnet.py), whose
 * module paths name the layers here:
 *   nasnet        NASNet-A Mobile, "4 @ 1056": 32 stem filters, 4 normal
 *                 cells per stage, 224x224; 5,289,978 parameters and 564M
 *                 multiply-adds
 *   nasnet_large  NASNet-A Large, "6 @ 4032": 96 stem filters, 6 normal cells
 *                 per stage, 331x331; 88,753,150 parameters, 23.8G
 *                 multiply-adds; the model IOS (Ding et al., MLSys 2021)
 *                 benchmarks as "NasNet"
 * (parameter counts with 1000 classes: Keras' trainable parameters, which
 * tests/zoo_nasnet_reference.py reproduces).
 *
 * conv0 (3x3/2, VALID) and its BatchNorm; two stem cells that reduce;
 * three stages of N cells, the first of each a FirstCell (its x_prev comes
 * through a factorized reduction) and the others NormalCells, with a
 * reduction cell between stages; ReLU, global average pool, dropout,
 * last_linear.  Every branch is relu-separable-bn-relu-separable-bn (a
 * separable convolution: depthwise kxk, pointwise 1x1); pooling averages
 * exclude the padding.  The large model's first cell after a reduction
 * reads the cell before the reduction's input as x_prev (TF-slim's
 * skip_reduction_layer_input), the mobile model the reduction's input.
 *
 * Padding is TensorFlow's SAME, computed from each layer's input: on an
 * even input a stride-2 window pads one less before than after.  Cadene's
 * port writes that as ZeroPad2d((1, 0, 1, 0)), the layer, then dropping the
 * first row and column (MaxPoolPad, AvgPoolPad, the "specific" and
 * "Reduction" branches); we keep the asymmetric padding in the one node,
 * which computes the same.  The factorized reduction's second path
 * (pad right and bottom, drop the first row and column, 1x1 average with
 * stride 2) is written as it is: Pad, Slice, AveragePool.
 *
 * With fold_bn every BatchNorm that follows a convolution is folded into
 * it; final_path_bn follows a Concat and stays.
 */
#include <string.h>

#include "zoo/zoo_impl.h"

#define NAS_BN_EPS 1e-3f

typedef struct nas_config {
    int64_t stem_filters;
    int64_t penultimate_filters; /* the last cell's channels: 24 x filters */
    int normal_cells;            /* per stage */
    int skip_reduction_input;
} nas_config;

/* SAME padding of a window k with stride s over n: out = ceil(n / s). */
static void same_pads(int64_t n, int64_t k, int64_t s, int64_t *begin, int64_t *end)
{
    int64_t out = (n + s - 1) / s, total = (out - 1) * s + k - n;
    if (total < 0) total = 0;
    *begin = total / 2;
    *end = total - total / 2;
}

static int64_t channels(os_zoo_net *net, int x)
{
    return opsched_graph_tensor(net->g, x)->shape.d[1];
}

/* Convolution without bias (kxk, stride s, groups), SAME padding or none,
 * then BatchNorm bn unless bn is NULL; folded as os_zoo_conv folds. */
static opsched_status conv_bn(os_zoo_net *net, int x, const char *conv, int64_t cout, int64_t k,
                              int64_t s, int64_t groups, int valid, const char *bn, int *out)
{
    const opsched_tensor *t = opsched_graph_tensor(net->g, x);
    opsched_dtype dt = t->dtype;
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.conv.kernel[0] = a.conv.kernel[1] = k;
    a.conv.stride[0] = a.conv.stride[1] = s;
    a.conv.dilation[0] = a.conv.dilation[1] = 1;
    a.conv.groups = groups;
    if (!valid) {
        same_pads(t->shape.d[2], k, s, &a.conv.pads[0], &a.conv.pads[2]);
        same_pads(t->shape.d[3], k, s, &a.conv.pads[1], &a.conv.pads[3]);
    }
    int fold = bn && net->fold_bn;
    int ins[3] = {x, -1, -1}, y;
    char name[OS_ZOO_NAME_MAX];
    opsched_shape ws = {.ndim = 4, .d = {cout, t->shape.d[1] / groups, k, k}};
    opsched_shape bs = {.ndim = 1, .d = {cout}};
    OS_TRY(os_zoo_name(net, name, "%s.weight", conv));
    OS_TRY(opsched_graph_add_tensor(net->g, name, OPSCHED_TENSOR_WEIGHT, dt, &ws, &ins[1]));
    if (fold) {
        OS_TRY(os_zoo_name(net, name, "%s.bias", conv));
        OS_TRY(opsched_graph_add_tensor(net->g, name, OPSCHED_TENSOR_WEIGHT, dt, &bs, &ins[2]));
    }
    OS_TRY(
        opsched_graph_add_node(net->g, conv, OPSCHED_OP_CONV, &a, ins, fold ? 3 : 2, 1, NULL, &y));
    if (bn && !fold) OS_TRY(opsched_build_batchnorm(net->g, bn, y, NAS_BN_EPS, &y));
    *out = y;
    return OPSCHED_OK;
}

/* 3x3 max or average pooling "<p>.<module>", stride s, SAME padding; the
 * average counts only the input's elements. */
static opsched_status pool(os_zoo_net *net, int x, const char *p, const char *module,
                           opsched_op_kind op, int64_t s, int *out)
{
    const opsched_tensor *t = opsched_graph_tensor(net->g, x);
    char name[OS_ZOO_NAME_MAX];
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.pool.kernel[0] = a.pool.kernel[1] = 3;
    a.pool.stride[0] = a.pool.stride[1] = s;
    a.pool.dilation[0] = a.pool.dilation[1] = 1;
    same_pads(t->shape.d[2], 3, s, &a.pool.pads[0], &a.pool.pads[2]);
    same_pads(t->shape.d[3], 3, s, &a.pool.pads[1], &a.pool.pads[3]);
    OS_TRY(os_zoo_name(net, name, "%s.%s", p, module));
    return opsched_graph_add_node(net->g, name, op, &a, &x, 1, 1, NULL, out);
}

/* "<p>.<call>" (or "<p>.<call>_<i>" for i > 0) of a functional call. */
static opsched_status call_name(os_zoo_net *net, char *buf, const char *p, const char *call, int i)
{
    if (i == 0) return os_zoo_name(net, buf, "%s.%s", p, call);
    return os_zoo_name(net, buf, "%s.%s_%d", p, call, i);
}

/* A cell's five combinations: each the sum of two of its operations,
 * named add, add_1, ... in the order forward() adds them. */
static opsched_status add(os_zoo_net *net, const char *p, int *n_add, int a, int b, int *out)
{
    char name[OS_ZOO_NAME_MAX];
    OS_TRY(call_name(net, name, p, "add", (*n_add)++));
    return opsched_build_binary(net->g, name, OPSCHED_OP_ADD, a, b, out);
}

/* Module "<p>.<sub>": relu, conv 1x1 to cout, bn. */
static opsched_status relu_conv_bn(os_zoo_net *net, int x, const char *p, const char *sub,
                                   int64_t cout, int *out)
{
    char relu[OS_ZOO_NAME_MAX], conv[OS_ZOO_NAME_MAX], bn[OS_ZOO_NAME_MAX];
    OS_TRY(os_zoo_name(net, relu, "%s.%s.relu", p, sub));
    OS_TRY(os_zoo_name(net, conv, "%s.%s.conv", p, sub));
    OS_TRY(os_zoo_name(net, bn, "%s.%s.bn", p, sub));
    OS_TRY(os_zoo_relu(net, x, relu, &x));
    return conv_bn(net, x, conv, cout, 1, 1, 1, 0, bn, out);
}

/* SeparableConv2d "<b>.separable_<i>": depthwise kxk (stride s), pointwise
 * 1x1 to cout, then "<b>.bn_sep_<i>". */
static opsched_status separable(os_zoo_net *net, int x, const char *b, int i, int64_t cout,
                                int64_t k, int64_t s, int *out)
{
    char dw[OS_ZOO_NAME_MAX], pw[OS_ZOO_NAME_MAX], bn[OS_ZOO_NAME_MAX];
    OS_TRY(os_zoo_name(net, dw, "%s.separable_%d.depthwise_conv2d", b, i));
    OS_TRY(os_zoo_name(net, pw, "%s.separable_%d.pointwise_conv2d", b, i));
    OS_TRY(os_zoo_name(net, bn, "%s.bn_sep_%d", b, i));
    int64_t cin = channels(net, x);
    OS_TRY(conv_bn(net, x, dw, cin, k, s, cin, 0, NULL, &x));
    return conv_bn(net, x, pw, cout, 1, 1, 1, 0, bn, out);
}

/* BranchSeparables "<p>.<which>": relu, separable (stride s) keeping the
 * input's channels, relu1, separable to cout.  BranchSeparablesStem (stem
 * set) goes to cout in its first separable. */
static opsched_status branch(os_zoo_net *net, int x, const char *p, const char *which, int64_t cout,
                             int64_t k, int64_t s, int stem, int *out)
{
    char b[OS_ZOO_NAME_MAX], relu[OS_ZOO_NAME_MAX];
    OS_TRY(os_zoo_name(net, b, "%s.%s", p, which));
    int64_t mid = stem ? cout : channels(net, x);
    OS_TRY(os_zoo_name(net, relu, "%s.relu", b));
    OS_TRY(os_zoo_relu(net, x, relu, &x));
    OS_TRY(separable(net, x, b, 1, mid, k, s, &x));
    OS_TRY(os_zoo_name(net, relu, "%s.relu1", b));
    OS_TRY(os_zoo_relu(net, x, relu, &x));
    return separable(net, x, b, 2, cout, k, 1, out);
}

/* The factorized reduction of x (at twice the cell's resolution) to cout
 * channels: relu; path_1: 1x1 average with stride 2, conv to cout / 2;
 * path_2: the same one pixel down and right; cat; final_path_bn. */
static opsched_status factorized(os_zoo_net *net, int x, const char *p, int64_t cout, int *out)
{
    char name[OS_ZOO_NAME_MAX];
    int paths[2];
    OS_TRY(os_zoo_name(net, name, "%s.relu", p));
    OS_TRY(os_zoo_relu(net, x, name, &x));
    opsched_shape xs = opsched_graph_tensor(net->g, x)->shape;

    OS_TRY(os_zoo_name(net, name, "%s.path_1.avgpool", p));
    OS_TRY(opsched_build_pool(net->g, name, OPSCHED_OP_AVGPOOL, x, 1, 2, 0, 0, 0, &paths[0]));
    OS_TRY(os_zoo_name(net, name, "%s.path_1.conv", p));
    OS_TRY(conv_bn(net, paths[0], name, cout / 2, 1, 1, 1, 0, NULL, &paths[0]));

    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.pad.mode = OPSCHED_PAD_CONSTANT;
    a.pad.pads[4 + 2] = a.pad.pads[4 + 3] = 1; /* ends of H and W */
    OS_TRY(os_zoo_name(net, name, "%s.path_2.pad", p));
    OS_TRY(opsched_graph_add_node(net->g, name, OPSCHED_OP_PAD, &a, &x, 1, 1, NULL, &paths[1]));
    memset(&a, 0, sizeof(a));
    for (int d = 0; d < 4; d++) {
        a.slice.starts[d] = d >= 2;
        a.slice.ends[d] = xs.d[d] + (d >= 2);
        a.slice.steps[d] = 1;
    }
    OS_TRY(os_zoo_name(net, name, "%s.slice", p));
    OS_TRY(opsched_graph_add_node(net->g, name, OPSCHED_OP_SLICE, &a, &paths[1], 1, 1, NULL,
                                  &paths[1]));
    OS_TRY(os_zoo_name(net, name, "%s.path_2.avgpool", p));
    OS_TRY(
        opsched_build_pool(net->g, name, OPSCHED_OP_AVGPOOL, paths[1], 1, 2, 0, 0, 0, &paths[1]));
    OS_TRY(os_zoo_name(net, name, "%s.path_2.conv", p));
    OS_TRY(conv_bn(net, paths[1], name, cout / 2, 1, 1, 1, 0, NULL, &paths[1]));

    int y;
    OS_TRY(os_zoo_name(net, name, "%s.cat", p));
    OS_TRY(opsched_build_concat(net->g, name, paths, 2, 1, &y));
    /* Follows the Concat, not a convolution: stays in the folded form. */
    OS_TRY(os_zoo_name(net, name, "%s.final_path_bn", p));
    return opsched_build_batchnorm(net->g, name, y, NAS_BN_EPS, out);
}

/* CellStem0 of x (stem_filters channels) with f filters per operation. */
static opsched_status cell_stem_0(os_zoo_net *net, int x, int64_t f, int *out)
{
    const char *p = "cell_stem_0";
    int n_add = 0, x1, l, r, c[5], y;
    char name[OS_ZOO_NAME_MAX];
    OS_TRY(relu_conv_bn(net, x, p, "conv_1x1", f, &x1));
    OS_TRY(branch(net, x1, p, "comb_iter_0_left", f, 5, 2, 0, &l));
    OS_TRY(branch(net, x, p, "comb_iter_0_right", f, 7, 2, 1, &r));
    OS_TRY(add(net, p, &n_add, l, r, &c[0]));
    OS_TRY(pool(net, x1, p, "comb_iter_1_left", OPSCHED_OP_MAXPOOL, 2, &l));
    OS_TRY(branch(net, x, p, "comb_iter_1_right", f, 7, 2, 1, &r));
    OS_TRY(add(net, p, &n_add, l, r, &c[1]));
    OS_TRY(pool(net, x1, p, "comb_iter_2_left", OPSCHED_OP_AVGPOOL, 2, &l));
    OS_TRY(branch(net, x, p, "comb_iter_2_right", f, 5, 2, 1, &r));
    OS_TRY(add(net, p, &n_add, l, r, &c[2]));
    OS_TRY(pool(net, c[0], p, "comb_iter_3_right", OPSCHED_OP_AVGPOOL, 1, &r));
    OS_TRY(add(net, p, &n_add, r, c[1], &c[3]));
    OS_TRY(branch(net, c[0], p, "comb_iter_4_left", f, 3, 1, 0, &l));
    OS_TRY(pool(net, x1, p, "comb_iter_4_right", OPSCHED_OP_MAXPOOL, 2, &r));
    OS_TRY(add(net, p, &n_add, l, r, &c[4]));
    OS_TRY(os_zoo_name(net, name, "%s.cat", p));
    OS_TRY(opsched_build_concat(net->g, name, &c[1], 4, 1, &y));
    *out = y;
    return OPSCHED_OK;
}

/*
 * A reducing cell: CellStem1 (stem1 set; x is conv0's output, x_prev
 * cell_stem_0's) or ReductionCell0/1.  Both have one input "a" that feeds
 * the pools and the 5x5 separable of the first combination, and one "b"
 * that feeds the other separables.  CellStem1 makes a with conv_1x1 from
 * x_prev and b with a factorized reduction of x; a reduction cell makes a
 * with conv_1x1 from x and b with conv_prev_1x1 from x_prev (first, as its
 * forward() does).
 */
static opsched_status reduction_cell(os_zoo_net *net, int x, int x_prev, const char *p, int64_t f,
                                     int stem1, int *out)
{
    int n_add = 0, a, b, l, r, c[5], y;
    char name[OS_ZOO_NAME_MAX];
    if (stem1) {
        OS_TRY(relu_conv_bn(net, x_prev, p, "conv_1x1", f, &a));
        OS_TRY(factorized(net, x, p, f, &b));
    } else {
        OS_TRY(relu_conv_bn(net, x_prev, p, "conv_prev_1x1", f, &b));
        OS_TRY(relu_conv_bn(net, x, p, "conv_1x1", f, &a));
    }
    OS_TRY(branch(net, a, p, "comb_iter_0_left", f, 5, 2, 0, &l));
    OS_TRY(branch(net, b, p, "comb_iter_0_right", f, 7, 2, 0, &r));
    OS_TRY(add(net, p, &n_add, l, r, &c[0]));
    OS_TRY(pool(net, a, p, "comb_iter_1_left", OPSCHED_OP_MAXPOOL, 2, &l));
    OS_TRY(branch(net, b, p, "comb_iter_1_right", f, 7, 2, 0, &r));
    OS_TRY(add(net, p, &n_add, l, r, &c[1]));
    OS_TRY(pool(net, a, p, "comb_iter_2_left", OPSCHED_OP_AVGPOOL, 2, &l));
    OS_TRY(branch(net, b, p, "comb_iter_2_right", f, 5, 2, 0, &r));
    OS_TRY(add(net, p, &n_add, l, r, &c[2]));
    OS_TRY(pool(net, c[0], p, "comb_iter_3_right", OPSCHED_OP_AVGPOOL, 1, &r));
    OS_TRY(add(net, p, &n_add, r, c[1], &c[3]));
    OS_TRY(branch(net, c[0], p, "comb_iter_4_left", f, 3, 1, 0, &l));
    OS_TRY(pool(net, a, p, "comb_iter_4_right", OPSCHED_OP_MAXPOOL, 2, &r));
    OS_TRY(add(net, p, &n_add, l, r, &c[4]));
    /* CellStem1 concatenated once already, in its factorized reduction. */
    OS_TRY(call_name(net, name, p, "cat", stem1));
    OS_TRY(opsched_build_concat(net->g, name, &c[1], 4, 1, &y));
    *out = y;
    return OPSCHED_OK;
}

/*
 * NormalCell, or FirstCell (first set): x_prev through conv_prev_1x1 to
 * out_left channels, or through a factorized reduction to 2 x out_left (it
 * is at twice x's resolution); x through conv_1x1 to out_right.  Output:
 * the left input and the five combinations, concatenated.
 */
static opsched_status normal_cell(os_zoo_net *net, int x, int x_prev, const char *p,
                                  int64_t out_left, int64_t out_right, int first, int *out)
{
    int n_add = 0, left, right, l, r, c[6], y;
    char name[OS_ZOO_NAME_MAX];
    if (first)
        OS_TRY(factorized(net, x_prev, p, 2 * out_left, &left));
    else
        OS_TRY(relu_conv_bn(net, x_prev, p, "conv_prev_1x1", out_left, &left));
    OS_TRY(relu_conv_bn(net, x, p, "conv_1x1", out_right, &right));
    int64_t lc = channels(net, left);
    c[0] = left;
    OS_TRY(branch(net, right, p, "comb_iter_0_left", out_right, 5, 1, 0, &l));
    OS_TRY(branch(net, left, p, "comb_iter_0_right", lc, 3, 1, 0, &r));
    OS_TRY(add(net, p, &n_add, l, r, &c[1]));
    OS_TRY(branch(net, left, p, "comb_iter_1_left", lc, 5, 1, 0, &l));
    OS_TRY(branch(net, left, p, "comb_iter_1_right", lc, 3, 1, 0, &r));
    OS_TRY(add(net, p, &n_add, l, r, &c[2]));
    OS_TRY(pool(net, right, p, "comb_iter_2_left", OPSCHED_OP_AVGPOOL, 1, &l));
    OS_TRY(add(net, p, &n_add, l, left, &c[3]));
    OS_TRY(pool(net, left, p, "comb_iter_3_left", OPSCHED_OP_AVGPOOL, 1, &l));
    OS_TRY(pool(net, left, p, "comb_iter_3_right", OPSCHED_OP_AVGPOOL, 1, &r));
    OS_TRY(add(net, p, &n_add, l, r, &c[4]));
    OS_TRY(branch(net, right, p, "comb_iter_4_left", out_right, 3, 1, 0, &l));
    OS_TRY(add(net, p, &n_add, l, right, &c[5]));
    OS_TRY(call_name(net, name, p, "cat", first));
    OS_TRY(opsched_build_concat(net->g, name, c, 6, 1, &y));
    *out = y;
    return OPSCHED_OK;
}

static opsched_status nasnet(os_zoo_net *net, int x, const nas_config *cfg, int *out)
{
    int64_t f = cfg->penultimate_filters / 24;
    char name[OS_ZOO_NAME_MAX];
    int x0, s0, prev, cur, y;
    OS_TRY(conv_bn(net, x, "conv0.conv", cfg->stem_filters, 3, 2, 1, 1, "conv0.bn", &x0));
    OS_TRY(cell_stem_0(net, x0, f / 4, &s0));
    OS_TRY(reduction_cell(net, x0, s0, "cell_stem_1", f / 2, 1, &cur));
    prev = s0;
    for (int stage = 0; stage < 3; stage++) {
        int64_t filters = f << stage;
        if (stage > 0) {
            int red;
            OS_TRY(os_zoo_name(net, name, "reduction_cell_%d", stage - 1));
            OS_TRY(reduction_cell(net, cur, prev, name, filters, 0, &red));
            if (!cfg->skip_reduction_input) prev = cur;
            cur = red;
        }
        for (int i = 0; i < cfg->normal_cells; i++) {
            /* Cadene's names: cell_0.., cell_6.., cell_12.. */
            OS_TRY(os_zoo_name(net, name, "cell_%d", 6 * stage + i));
            OS_TRY(normal_cell(net, cur, prev, name, i == 0 ? filters / 2 : filters, filters,
                               i == 0, &y));
            prev = cur;
            cur = y;
        }
    }
    OS_TRY(os_zoo_relu(net, cur, "relu", &y));
    OS_TRY(os_zoo_adaptive_avgpool(net, y, "avg_pool", 1, 1, &y));
    OS_TRY(opsched_build_flatten(net->g, "flatten", y, 1, &y));
    OS_TRY(os_zoo_dropout(net, y, "dropout", &y));
    return opsched_build_linear(net->g, "last_linear", y, 1000, 1, out);
}

opsched_status os_zoo_build_nasnet(os_zoo_net *net, int x, int *out)
{
    static const nas_config mobile = {32, 1056, 4, 0};
    return nasnet(net, x, &mobile, out);
}

opsched_status os_zoo_build_nasnet_large(os_zoo_net *net, int x, int *out)
{
    static const nas_config large = {96, 4032, 6, 1};
    return nasnet(net, x, &large, out);
}
