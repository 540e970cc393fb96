/*
 * test_onnx.c - the ONNX importer: every supported op, opset variants,
 * constant folding, weights given as inputs, external data, overrides,
 * files that must be refused, and real torchvision exports.
 *
 * The files come from tests/onnx/make_models.py (ctest runs it first) in
 * $OPSCHED_TESTDATA/onnx; the tests skip when that is not set.
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
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opsched/onnx.h"

static const char *data_dir(void)
{
    const char *d = getenv("OPSCHED_TESTDATA");
    if (!d) skip();
    return d;
}

static char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

typedef struct loaded {
    opsched_ctx *ctx;
    opsched_graph *g;
    opsched_status st;
} loaded;

static loaded load_opts(const char *rel, const opsched_onnx_options *opts)
{
    char path[1024];
    loaded l = {0};
    snprintf(path, sizeof(path), "%s/onnx/%s", data_dir(), rel);
    assert_int_equal(opsched_ctx_create(&l.ctx), OPSCHED_OK);
    l.st = opsched_onnx_load_file(l.ctx, path, opts, &l.g);
    if (l.st == OPSCHED_OK)
        assert_non_null(l.g);
    else
        assert_null(l.g);
    return l;
}

/* Loads a file that must load. */
static loaded load_ok(const char *rel, const opsched_onnx_options *opts)
{
    loaded l = load_opts(rel, opts);
    if (l.st != OPSCHED_OK) print_error("%s: %s\n", rel, opsched_ctx_last_error(l.ctx));
    assert_int_equal(l.st, OPSCHED_OK);
    return l;
}

/* The decomposition as the importer writes it (no rewrite into one
 * Attention node). */
static loaded load_ok_written(const char *rel, const opsched_onnx_options *opts)
{
    opsched_onnx_options o = {.no_rewrite = 1};
    if (opts) {
        o = *opts;
        o.no_rewrite = 1;
    }
    return load_ok(rel, &o);
}

static void unload(loaded *l)
{
    opsched_graph_free(l->g);
    opsched_ctx_free(l->ctx);
}

static const opsched_node *node(const loaded *l, int i)
{
    const opsched_node *n = opsched_graph_node(l->g, i);
    assert_non_null(n);
    return n;
}

static const opsched_tensor *tensor(const loaded *l, int id)
{
    const opsched_tensor *t = opsched_graph_tensor(l->g, id);
    assert_non_null(t);
    return t;
}

static void assert_shape(const opsched_shape *s, const char *want)
{
    char buf[128];
    opsched_shape_format(s, buf, sizeof(buf));
    if (strcmp(buf, want) != 0) print_error("shape %s, expected %s\n", buf, want);
    assert_string_equal(buf, want);
}

/* ---- each small model: node kinds and output shapes --------------------- */

typedef struct small_case {
    const char *file;
    const char *ops; /* ONNX-style names of the graph's nodes, space separated */
    const char *out; /* shape of the first graph output */
    int n_inputs;
} small_case;

static const small_case small_cases[] = {
    {"conv_basic", "Conv", "1x8x32x32", 1},
    {"conv_group_dil", "Conv", "1x8x16x16", 1},
    {"conv_asym", "Conv", "1x4x8x9", 1},
    {"conv_same_upper", "Conv", "1x4x8x8", 1},
    {"conv_same_lower", "Conv", "1x4x8x8", 1},
    {"conv_valid", "Conv", "1x4x8x8", 1},
    {"gemm", "Gemm", "2x8", 1},
    {"matmul", "MatMul", "2x3x4x6", 1},
    {"maxpool_ceil", "MaxPool", "1x2x5x5", 1},
    {"maxpool_dil", "MaxPool", "1x2x9x9", 1},
    {"avgpool", "AveragePool", "1x2x5x5", 1},
    {"pad_avgpool", "AveragePool", "1x2x9x9", 1},
    {"global_pools", "GlobalAveragePool GlobalMaxPool", "2x4x1x1", 1},
    {"unary_chain", "Relu Sigmoid Tanh Erf HardSigmoid HardSwish Sqrt LRN Softmax", "2x6x4x4", 1},
    {"gelu_op20", "Gelu", "2x8", 1},
    {"binary_bcast", "Add Sub Mul Div Pow", "2x3x4", 1},
    {"two_inputs_add", "Add", "2x3", 2},
    {"clip_op11", "Clip", "1x4", 1},
    {"clip_op6", "Clip", "1x4", 1},
    {"concat", "Concat", "1x5x4x4", 2},
    {"shuffle_concat", "Concat Reshape Transpose Reshape Slice Slice Add", "1x4x4x4", 2},
    {"se_gated", "GlobalAveragePool Conv Relu Conv Sigmoid Mul Conv", "1x4x4x4", 1},
    {"dense_concat_bn", "Concat BatchNormalization Relu", "1x12x4x4", 2},
    {"split_op11", "Split", "1x2x4", 1},
    {"split_op13", "Split", "1x2x4", 1},
    {"split_equal", "Split", "1x2x3", 1},
    {"split_op18", "Split", "1x2x3", 1},
    {"slice_op13", "Slice", "2x4x6", 1},
    {"slice_op9", "Slice", "4x10x4", 1},
    {"gather_act", "Gather", "2x2x3", 1},
    {"transpose", "Transpose", "1x3x4x2", 1},
    {"pad_reflect", "Pad", "1x2x9x8", 1},
    {"pad_op2", "Pad", "1x2x7x7", 1},
    {"expand", "Expand", "2x3x4", 1},
    {"flatten", "Flatten", "6x20", 1},
    {"reshape", "Reshape", "2x12x5", 1},
    {"squeeze_op11", "Reshape Reshape", "1x3x4x1", 1},
    {"squeeze_op13", "Reshape Reshape", "1x3x4x1", 1},
    {"identity_dropout", "Identity Dropout", "2x3", 1},
    {"batchnorm", "BatchNormalization", "1x4x3x3", 1},
    {"layernorm_op17", "LayerNormalization", "2x5x8", 1},
    {"reducemean_op13", "ReduceMean", "2x3", 1},
    {"reducemean_op18", "ReduceMean", "2x3x4x1", 1},
    {"softmax_op11_last", "Softmax", "2x3x4", 1},
    {"shape_chain", "Reshape", "2x192", 1},
    {"fold_arith", "Div Reshape", "4x32", 1},
    {"constant_nodes", "Reshape Mul Reshape", "3x1x4", 1},
    {"identity_weight", "Conv Conv", "1x4x8x8", 1},
    {"weights_as_inputs", "Conv Reshape Transpose Expand Concat Add ReduceMean Sub Mul Add MatMul",
     "1x5x32", 1},
    {"unsorted", "Sigmoid Relu", "2x3", 1},
    {"old_inputs_with_inits", "Conv", "1x4x6x6", 1},
};

static void test_small_models(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(small_cases) / sizeof(small_cases[0]); c++) {
        const small_case *sc = &small_cases[c];
        char rel[256], ops[512] = "";
        snprintf(rel, sizeof(rel), "small/%s.onnx", sc->file);
        loaded l = load_ok(rel, NULL);
        for (int i = 0; i < opsched_graph_num_nodes(l.g); i++) {
            if (i) strcat(ops, " ");
            strcat(ops, opsched_op_name(node(&l, i)->op));
        }
        if (strcmp(ops, sc->ops) != 0) print_error("%s: nodes '%s'\n", sc->file, ops);
        assert_string_equal(ops, sc->ops);
        assert_true(opsched_graph_num_outputs(l.g) >= 1);
        assert_shape(&tensor(&l, opsched_graph_output(l.g, 0))->shape, sc->out);
        if (opsched_graph_num_inputs(l.g) != sc->n_inputs)
            print_error("%s: %d inputs\n", sc->file, opsched_graph_num_inputs(l.g));
        assert_int_equal(opsched_graph_num_inputs(l.g), sc->n_inputs);
        unload(&l);
    }
}

/* ---- attributes ------------------------------------------------------------ */

static void test_conv_attrs(void **state)
{
    (void)state;
    loaded l = load_ok("small/conv_asym.onnx", NULL);
    const opsched_conv_attr *c = &node(&l, 0)->attr.conv;
    assert_int_equal(c->pads[0], 0);
    assert_int_equal(c->pads[1], 1);
    assert_int_equal(c->pads[2], 2);
    assert_int_equal(c->pads[3], 3);
    assert_int_equal(c->stride[0], 2);
    assert_int_equal(c->kernel[0], 3); /* no kernel_shape: taken from the weight */
    unload(&l);

    /* SAME_UPPER puts the odd pixel at the end, SAME_LOWER at the start. */
    l = load_ok("small/conv_same_upper.onnx", NULL);
    c = &node(&l, 0)->attr.conv;
    assert_int_equal(c->pads[0], 1);
    assert_int_equal(c->pads[2], 2);
    unload(&l);
    l = load_ok("small/conv_same_lower.onnx", NULL);
    c = &node(&l, 0)->attr.conv;
    assert_int_equal(c->pads[0], 2);
    assert_int_equal(c->pads[2], 1);
    unload(&l);

    l = load_ok("small/conv_group_dil.onnx", NULL);
    c = &node(&l, 0)->attr.conv;
    assert_int_equal(c->groups, 2);
    assert_int_equal(c->dilation[0], 2);
    assert_int_equal(c->dilation[1], 2);
    /* 2 FLOPs per multiply-add: N*M*OH*OW * (C/g)*kh*kw */
    assert_int_equal(node(&l, 0)->cost.flops, 2LL * 8 * 16 * 16 * 2 * 3 * 3);
    unload(&l);
}

static void test_pool_and_gemm_attrs(void **state)
{
    (void)state;
    loaded l = load_ok("small/maxpool_ceil.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.pool.ceil_mode, 1);
    assert_int_equal(node(&l, 0)->attr.pool.stride[1], 2);
    unload(&l);

    l = load_ok("small/avgpool.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.pool.count_include_pad, 1);
    assert_int_equal(node(&l, 0)->attr.pool.pads[3], 1);
    unload(&l);

    /* A zero Pad feeding an AveragePool becomes the pool's own padding. */
    l = load_ok("small/pad_avgpool.onnx", NULL);
    const opsched_pool_attr *p = &node(&l, 0)->attr.pool;
    assert_int_equal(p->pads[0], 1);
    assert_int_equal(p->pads[1], 1);
    assert_int_equal(p->pads[2], 1);
    assert_int_equal(p->pads[3], 1);
    assert_int_equal(p->count_include_pad, 1);
    assert_shape(&tensor(&l, node(&l, 0)->inputs[0])->shape, "1x2x9x9");
    unload(&l);

    l = load_ok("small/gemm.onnx", NULL);
    const opsched_gemm_attr *g = &node(&l, 0)->attr.gemm;
    assert_true(g->alpha == 0.5f && g->beta == 2.0f);
    assert_int_equal(g->trans_a, 0);
    assert_int_equal(g->trans_b, 1);
    assert_int_equal(node(&l, 0)->n_inputs, 3);
    unload(&l);
}

static void test_activation_attrs(void **state)
{
    (void)state;
    loaded l = load_ok("small/clip_op11.onnx", NULL);
    assert_true(node(&l, 0)->attr.clip.min == 0.0f && node(&l, 0)->attr.clip.max == 6.0f);
    unload(&l);
    l = load_ok("small/clip_op6.onnx", NULL);
    assert_true(node(&l, 0)->attr.clip.min == 0.0f && node(&l, 0)->attr.clip.max == 6.0f);
    unload(&l);
    l = load_ok("small/gelu_op20.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.gelu.tanh_approx, 1);
    unload(&l);
    l = load_ok("small/unary_chain.onnx", NULL);
    assert_true(node(&l, 4)->attr.hardsigmoid.alpha == 0.25f);
    assert_true(node(&l, 4)->attr.hardsigmoid.beta == 0.5f);
    assert_int_equal(node(&l, 7)->attr.lrn.size, 5);
    assert_int_equal(node(&l, 8)->attr.axis.axis, 1);
    unload(&l);
    l = load_ok("small/batchnorm.onnx", NULL);
    assert_true(node(&l, 0)->attr.bn.epsilon == 1e-3f);
    assert_int_equal(node(&l, 0)->n_inputs, 5);
    unload(&l);
    l = load_ok("small/layernorm_op17.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.layernorm.axis, 2);
    assert_true(node(&l, 0)->attr.layernorm.epsilon == 1e-6f);
    unload(&l);
}

static void test_data_movement_attrs(void **state)
{
    (void)state;
    loaded l = load_ok("small/slice_op13.onnx", NULL);
    const opsched_slice_attr *s = &node(&l, 0)->attr.slice;
    assert_int_equal(s->starts[0], 1);
    assert_int_equal(s->steps[0], 2);
    assert_int_equal(s->starts[1], 9);
    assert_int_equal(s->steps[1], -3);
    assert_int_equal(s->starts[2], 0);
    assert_int_equal(s->ends[2], 6);
    assert_int_equal(s->steps[2], 1);
    unload(&l);

    const char *splits[] = {"small/split_op11.onnx", "small/split_op13.onnx"};
    for (int k = 0; k < 2; k++) {
        l = load_ok(splits[k], NULL);
        const opsched_split_attr *sp = &node(&l, 0)->attr.split;
        assert_int_equal(sp->axis, 1);
        assert_int_equal(sp->n, 2);
        assert_int_equal(sp->sizes[0], 2);
        assert_int_equal(sp->sizes[1], 4);
        assert_shape(&tensor(&l, node(&l, 0)->outputs[1])->shape, "1x4x4");
        unload(&l);
    }
    l = load_ok("small/split_op18.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.split.sizes[2], 2);
    unload(&l);

    /* Gather of an activation: the indices become a constant with data. */
    l = load_ok("small/gather_act.onnx", NULL);
    const opsched_tensor *idx = tensor(&l, node(&l, 0)->inputs[1]);
    assert_int_equal(idx->kind, OPSCHED_TENSOR_CONSTANT);
    assert_int_equal(idx->dtype, OPSCHED_INT64);
    assert_int_equal(idx->data_bytes, 2 * sizeof(int64_t));
    const int64_t *iv = idx->data;
    assert_int_equal(iv[0], 4);
    assert_int_equal(iv[1], 0);
    assert_int_equal(node(&l, 0)->attr.axis.axis, 1);
    unload(&l);

    l = load_ok("small/pad_reflect.onnx", NULL);
    const opsched_pad_attr *pa = &node(&l, 0)->attr.pad;
    assert_int_equal(pa->mode, OPSCHED_PAD_REFLECT);
    assert_int_equal(pa->pads[2], 1);
    assert_int_equal(pa->pads[3], 2);
    assert_int_equal(pa->pads[6], 3);
    assert_int_equal(pa->pads[7], 1);
    unload(&l);
    l = load_ok("small/pad_op2.onnx", NULL);
    assert_true(node(&l, 0)->attr.pad.value == 0.5f);
    unload(&l);

    l = load_ok("small/transpose.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.transpose.n, 4);
    assert_int_equal(node(&l, 0)->attr.transpose.perm[1], 2);
    unload(&l);
    l = load_ok("small/reshape.onnx", NULL);
    assert_shape(&node(&l, 0)->attr.shape.shape, "2x12x5");
    unload(&l);
    l = load_ok("small/expand.onnx", NULL);
    assert_shape(&node(&l, 0)->attr.shape.shape, "2x3x4");
    unload(&l);
    l = load_ok("small/flatten.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.axis.axis, 2);
    unload(&l);
    l = load_ok("small/concat.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.axis.axis, 1);
    unload(&l);
    l = load_ok("small/reducemean_op13.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.reduce.n_axes, 2);
    assert_int_equal(node(&l, 0)->attr.reduce.keepdims, 0);
    unload(&l);
    l = load_ok("small/reducemean_op18.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.reduce.n_axes, 1);
    assert_int_equal(node(&l, 0)->attr.reduce.axes[0], 3);
    unload(&l);
}

/* ---- weights, constants, folding ------------------------------------------- */

static int count_kind(const loaded *l, opsched_tensor_kind kind)
{
    int n = 0;
    for (int i = 0; i < opsched_graph_num_tensors(l->g); i++)
        if (tensor(l, i)->kind == kind) n++;
    return n;
}

static void test_weights(void **state)
{
    (void)state;
    /* An Identity of a weight is another name for it, not a node. */
    loaded l = load_ok("small/identity_weight.onnx", NULL);
    assert_int_equal(count_kind(&l, OPSCHED_TENSOR_WEIGHT), 1);
    assert_int_equal(node(&l, 0)->inputs[1], node(&l, 1)->inputs[1]);
    unload(&l);

    /* export_params=False: parameters are graph inputs, real input is x. */
    l = load_ok("small/weights_as_inputs.onnx", NULL);
    assert_int_equal(opsched_graph_num_inputs(l.g), 1);
    assert_string_equal(tensor(&l, opsched_graph_input(l.g, 0))->name, "x");
    assert_int_equal(count_kind(&l, OPSCHED_TENSOR_WEIGHT), 7);
    const char *weights[] = {"cw", "cb", "cls", "pos", "gamma", "beta", "wq"};
    for (int k = 0; k < 7; k++) {
        int id;
        assert_int_equal(opsched_graph_find_tensor(l.g, weights[k], &id), OPSCHED_OK);
        assert_int_equal(tensor(&l, id)->kind, OPSCHED_TENSOR_WEIGHT);
    }
    unload(&l);

    /* Two real inputs added together stay inputs. */
    l = load_ok("small/two_inputs_add.onnx", NULL);
    assert_int_equal(count_kind(&l, OPSCHED_TENSOR_WEIGHT), 0);
    unload(&l);

    /* Initializers listed as inputs too (old exporters) are weights. */
    l = load_ok("small/old_inputs_with_inits.onnx", NULL);
    assert_int_equal(opsched_graph_num_inputs(l.g), 1);
    assert_int_equal(count_kind(&l, OPSCHED_TENSOR_WEIGHT), 1);
    unload(&l);
}

static void test_weight_payloads(void **state)
{
    (void)state;
    loaded l = load_ok("small/conv_basic.onnx", NULL);
    const opsched_tensor *w = tensor(&l, node(&l, 0)->inputs[1]);
    assert_int_equal(w->kind, OPSCHED_TENSOR_WEIGHT);
    assert_null(w->data);
    unload(&l);

    opsched_onnx_options o = {.load_weights = 1};
    l = load_ok("small/conv_basic.onnx", &o);
    w = tensor(&l, node(&l, 0)->inputs[1]);
    assert_non_null(w->data);
    assert_int_equal(w->data_bytes, 8 * 3 * 3 * 3 * sizeof(float));
    assert_int_equal(tensor(&l, node(&l, 0)->inputs[2])->data_bytes, 8 * sizeof(float));
    unload(&l);
}

static void test_typed_fields(void **state)
{
    (void)state;
    opsched_onnx_options o = {.load_weights = 1};
    loaded l = load_ok_written("small/typed_fields.onnx", &o);
    const opsched_tensor *w = tensor(&l, node(&l, 0)->inputs[1]);
    const float want[6] = {1, 2, 3, 4, 5, 6};
    assert_int_equal(w->data_bytes, sizeof(want));
    assert_memory_equal(w->data, want, sizeof(want));
    const opsched_tensor *idx = tensor(&l, node(&l, 1)->inputs[1]);
    assert_int_equal(idx->dtype, OPSCHED_INT32);
    assert_int_equal(*(const int32_t *)idx->data, 1);
    assert_shape(&tensor(&l, opsched_graph_output(l.g, 0))->shape, "2x1");
    unload(&l);
}

static void test_constants(void **state)
{
    (void)state;
    loaded l = load_ok("small/constant_nodes.onnx", NULL);
    const opsched_tensor *half = tensor(&l, node(&l, 1)->inputs[1]);
    assert_int_equal(half->kind, OPSCHED_TENSOR_CONSTANT);
    assert_int_equal(half->shape.ndim, 0);
    assert_non_null(half->data);
    assert_true(*(const float *)half->data == 0.5f);
    assert_shape(&tensor(&l, node(&l, 0)->outputs[0])->shape, "3x4");
    unload(&l);

    /* Shape -> Slice -> Cast -> Sqrt gives the divisor 2; the rest folds
     * into the target shape (4, -1). */
    l = load_ok("small/fold_arith.onnx", NULL);
    const opsched_tensor *r = tensor(&l, node(&l, 0)->inputs[1]);
    assert_int_equal(r->kind, OPSCHED_TENSOR_CONSTANT);
    assert_int_equal(r->dtype, OPSCHED_F32);
    assert_true(*(const float *)r->data == 2.0f);
    assert_shape(&node(&l, 1)->attr.shape.shape, "4x32");
    assert_int_equal(count_kind(&l, OPSCHED_TENSOR_CONSTANT), 1);
    unload(&l);

    l = load_ok("small/shape_chain.onnx", NULL);
    assert_int_equal(opsched_graph_num_tensors(l.g), 2);
    unload(&l);
}

/* ---- the operator families of the generic graph kinds ---------------------- */

typedef struct op_case {
    const char *file;
    const char *ops;   /* opsched_node_op_name of every node, space separated */
    const char *out;   /* shape of the first graph output */
    opsched_dtype dt;  /* its type */
    int n_inputs;
} op_case;

static const op_case op_cases[] = {
    {"unary_math",
     "Abs Neg Exp Log Reciprocal Floor Ceil Round Sign Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh "
     "Acosh Atanh",
     "2x3", OPSCHED_F32, 1},
    {"activations_op22",
     "LeakyRelu Elu Selu Celu ThresholdedRelu Softplus Softsign Mish Shrink HardSigmoid "
     "HardSwish Gelu PRelu",
     "2x3x4", OPSCHED_F32, 1},
    {"swish_op24", "Swish", "2x8", OPSCHED_F32, 1},
    {"swiglu_op28", "Swish Mul", "2x8", OPSCHED_F32, 2},
    {"logic",
     "Equal Less LessOrEqual Greater GreaterOrEqual And Or Xor Not IsNaN IsInf Or Or And Where",
     "2x3", OPSCHED_F32, 2},
    {"bitwise_op18", "BitwiseAnd BitwiseOr BitwiseXor BitwiseNot BitShift(right)", "4",
     OPSCHED_INT32, 4},
    {"variadic", "Add Add Add Add Div Max Min Min Identity Add Add Add", "2x3", OPSCHED_F32, 3},
    {"mod", "Mod Mod(fmod)", "4", OPSCHED_INT64, 4},
    /* CastLike reads only the type of "like", which is then no input */
    {"cast_op19", "Cast Cast Cast Cast", "2x3", OPSCHED_BOOL, 1},
    {"bool_uint8_inputs", "Not Cast Where", "2x3", OPSCHED_BOOL, 2},
    {"instancenorm", "GroupNormalization", "1x4x5x5", OPSCHED_F32, 1},
    {"groupnorm_op18", "GroupNormalization", "1x6x4x4", OPSCHED_F32, 1},
    {"groupnorm_op21", "GroupNormalization", "1x6x4x4", OPSCHED_F32, 1},
    {"groupnorm_op18_inputs", "Reshape Expand Reshape Reshape Expand Reshape GroupNormalization",
     "1x6x4x4", OPSCHED_F32, 1},
    {"lpnorm", "ReduceL1 Div Equal Where ReduceL2 Div Equal Where", "2x3x4", OPSCHED_F32, 1},
    {"layernorm_stats_op17",
     "LayerNormalization ReduceMean Sub Mul ReduceMean Add Sqrt Reciprocal", "2x5x8", OPSCHED_F32,
     1},
    {"clip_runtime", "Max Min", "2x3", OPSCHED_F32, 3},
    {"dropout_mask", "Expand Dropout", "2x3", OPSCHED_F32, 1},
    {"trilu_runtime_k", "GreaterOrEqual Where", "2x4x5", OPSCHED_F32, 2},
    {"mvn", "ReduceMean Mul Mul ReduceMean Sub Sqrt Sub Add Div", "2x3x4x4", OPSCHED_F32, 1},
    {"rmsnorm_op23", "Mul ReduceMean Add Sqrt Reciprocal Mul Mul", "2x5x8", OPSCHED_F32, 1},
    {"rmsnorm_f16_op23", "Cast Mul ReduceMean Add Sqrt Reciprocal Mul Cast Mul", "2x5x8",
     OPSCHED_F16, 1},
    {"reduce_op13",
     "ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum "
     "ReduceLogSumExp ReduceSumSquare",
     "2x4", OPSCHED_F32, 1},
    {"reduce_op18",
     "ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum "
     "ReduceLogSumExp ReduceSumSquare Mul ReduceMax",
     "1x3x1", OPSCHED_F32, 1},
    {"axis_ops", "ArgMax ArgMin TopK CumSum LogSoftmax Hardmax", "2x4", OPSCHED_INT64, 1},
    {"conv1d", "Reshape Conv Reshape", "1x8x16", OPSCHED_F32, 1},
    {"convtranspose", "ConvTranspose", "1x4x10x10", OPSCHED_F32, 1},
    {"convtranspose_outshape", "ConvTranspose", "1x3x10x10", OPSCHED_F32, 1},
    {"convtranspose_same", "ConvTranspose", "1x3x10x10", OPSCHED_F32, 1},
    {"convtranspose1d", "Reshape ConvTranspose Reshape", "1x3x16", OPSCHED_F32, 1},
    {"pool1d", "Reshape MaxPool Reshape Reshape AveragePool Reshape", "1x2x7", OPSCHED_F32, 1},
    {"lppool_op18", "Abs Pow AveragePool Mul Pow", "1x2x8x8", OPSCHED_F32, 1},
    {"lppool1d", "Reshape Abs Pow AveragePool Mul Pow Reshape", "1x2x4", OPSCHED_F32, 1},
    {"globallppool", "ReduceL2 Abs Pow ReduceSum Pow", "1x2x1x1", OPSCHED_F32, 1},
    {"global_pool_3d", "GlobalAveragePool GlobalMaxPool", "1x2x1x1x1", OPSCHED_F32, 1},
    {"resize_scales", "Resize", "1x3x8x9", OPSCHED_F32, 1},
    {"resize_sizes_op18", "Resize", "1x3x3x5", OPSCHED_F32, 1},
    {"resize_tf_crop", "Resize", "1x3x5x5", OPSCHED_F32, 1},
    {"resize_op10", "Resize", "1x3x8x3", OPSCHED_F32, 1},
    {"upsample_op7", "Resize", "1x3x8x18", OPSCHED_F32, 1},
    {"upsample_op9", "Resize", "1x3x8x12", OPSCHED_F32, 1},
    {"pad_wrap_op19", "Pad", "1x2x9x8", OPSCHED_F32, 1},
    {"tile", "Tile", "4x9", OPSCHED_F32, 1},
    {"depth_space",
     "Reshape Transpose Reshape Reshape Transpose Reshape Reshape Transpose Reshape", "1x8x3x4",
     OPSCHED_F32, 1},
    {"space_to_depth_op28", "Reshape Transpose Reshape", "1x8x2x3", OPSCHED_F32, 1},
    {"gather_scatter_op18", "GatherElements GatherND ScatterElements ScatterND", "2x3x4",
     OPSCHED_F32, 3},
    {"onehot", "OneHot", "2x3x5", OPSCHED_F32, 1},
    {"trilu", "Trilu", "2x4x5", OPSCHED_F32, 1},
    {"eyelike", "Add Expand Trilu Trilu", "3x4", OPSCHED_F32, 2},
    {"constant_of_shape_big", "Expand", "1x1x300x300", OPSCHED_F32, 0},
    {"fold_more", "Reshape", "4x32", OPSCHED_F32, 1},
    {"fold_unary_consts", "Add", "2x4", OPSCHED_F32, 1},
    {"fold_clip", "Add", "3", OPSCHED_F32, 1},
    {"einsum_bmm", "MatMul", "2x3x5", OPSCHED_F32, 2},
    {"einsum_trace", "Reshape Slice ReduceSum", "scalar", OPSCHED_F32, 1},
    {"einsum_diag", "Reshape Slice", "2x3", OPSCHED_F32, 1},
    {"einsum_ellipsis", "Reshape Reshape MatMul Reshape Transpose", "2x5x3x6", OPSCHED_F32, 2},
    {"einsum_outer", "Reshape Reshape Mul", "3x4", OPSCHED_F32, 2},
    {"einsum_implicit", "MatMul", "3x5", OPSCHED_F32, 2},
    {"einsum_transpose", "Transpose", "4x3", OPSCHED_F32, 1},
    {"einsum_three", "MatMul MatMul", "2x5", OPSCHED_F32, 3},
    {"einsum_attention", "Transpose MatMul", "1x2x5x6", OPSCHED_F32, 2},
    {"attention_op23",
     "Mul Mul Transpose Reshape MatMul Reshape Expand Trilu Add Softmax Reshape MatMul Reshape",
     "2x4x5x3", OPSCHED_F32, 3},
    {"attention_3d_mask_op23",
     "Reshape Transpose Reshape Transpose Reshape Transpose Mul Mul Transpose Reshape MatMul "
     "Reshape Pad Where Add Softmax ReduceMax IsInf Where Reshape MatMul Reshape Transpose "
     "Reshape",
     "2x5x32", OPSCHED_F32, 4},
    {"attention_softcap_op24",
     "Mul Mul Transpose MatMul Div Tanh Mul Add Cast Softmax ReduceMax IsInf Where Cast MatMul",
     "1x2x3x4", OPSCHED_F16, 4},
    {"attention_window_op25",
     "Mul Mul Transpose MatMul Expand Trilu Expand Trilu Add Add Softmax ReduceMax IsInf Where "
     "MatMul",
     "1x2x6x4", OPSCHED_F32, 3},
    {"rotary_op23", "Gather Reshape Gather Reshape Slice Slice Mul Mul Sub Mul Mul Add Concat",
     "1x2x3x8", OPSCHED_F32, 2},
    {"rotary_3d_op23",
     "Reshape Reshape Reshape Slice Slice Slice Slice Mul Mul Sub Mul Mul Add Reshape Reshape "
     "Concat Reshape Concat Reshape",
     "1x3x16", OPSCHED_F32, 1},
    {"qdq_op21", "QuantizeLinear DequantizeLinear", "1x4x3x3", OPSCHED_F32, 1},
    {"quant_blocked_op21", "QuantizeLinear", "4x8", OPSCHED_INT8, 1},
    {"dequant_weight_op23", "DequantizeLinear MatMul", "2x4", OPSCHED_F16, 1},
    {"if_const", "Relu", "2x3", OPSCHED_F32, 1},
    {"if_nested", "Mul", "2x3", OPSCHED_F32, 1},
    {"if_passthrough", "Add", "2x3", OPSCHED_F32, 1},
    {"reduce_noop_fold", "Add", "3", OPSCHED_F32, 1},
    /* LSTM over 2 steps: the input projection once (Gemm), then per step
     * one recurrent Gemm; the zero initial state needs none. */
    {"lstm_forward_op14",
     "Reshape Reshape Reshape Gemm Reshape Slice Slice Add Add Reshape Slice Reshape Slice "
     "Sigmoid Slice Slice Slice Slice Tanh Mul Tanh Mul Reshape Slice Reshape Gemm Add "
     "Slice Sigmoid Slice Slice Slice Slice Tanh Mul Mul Add Tanh Mul Reshape Reshape "
     "Reshape Concat",
     "2x1x1x4", OPSCHED_F32, 1},
    {"lstm_reverse_op7",
     "Reshape Reshape Reshape Gemm Reshape Slice Reshape Slice Sigmoid Slice Slice Slice "
     "Slice Tanh Mul Tanh Mul Slice Reshape Gemm Add Slice Sigmoid Slice Slice Slice Slice "
     "Tanh Mul Mul Add Tanh Mul Reshape Reshape",
     "1x1x4", OPSCHED_F32, 1},
    {"lstm_bidirectional_op22",
     "Reshape Slice Reshape Slice Reshape Gemm Slice Reshape Slice Slice Add Add Reshape "
     "Slice Reshape Slice Reshape Slice Reshape Gemm Add Slice Sigmoid Slice Slice Slice "
     "Slice Tanh Mul Mul Add Tanh Mul Reshape Slice Reshape Gemm Add Slice Sigmoid Slice "
     "Slice Slice Slice Tanh Mul Mul Add Tanh Mul Reshape Reshape Reshape Concat Slice "
     "Reshape Slice Reshape Gemm Slice Reshape Slice Slice Add Add Reshape Slice Reshape "
     "Slice Reshape Slice Reshape Gemm Add Slice Sigmoid Slice Slice Slice Slice Tanh Mul "
     "Mul Add Tanh Mul Reshape Slice Reshape Gemm Add Slice Sigmoid Slice Slice Slice "
     "Slice Tanh Mul Mul Add Tanh Mul Reshape Reshape Reshape Concat Concat Concat Concat",
     "2x2x1x4", OPSCHED_F32, 1},
    {"lstm_layout1_op14",
     "Reshape Reshape Reshape Reshape Gemm Reshape Reshape Slice Reshape Gemm Add Slice "
     "Sigmoid Slice Slice Slice Slice Tanh Mul Tanh Mul Reshape Slice Reshape Gemm Add "
     "Slice Sigmoid Slice Slice Slice Slice Tanh Mul Mul Add Tanh Mul Reshape Reshape "
     "Reshape Concat Reshape",
     "1x2x1x4", OPSCHED_F32, 2},
};

static void test_op_models(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(op_cases) / sizeof(op_cases[0]); c++) {
        const op_case *oc = &op_cases[c];
        char rel[256], ops[1024] = "";
        snprintf(rel, sizeof(rel), "small/%s.onnx", oc->file);
        /* the nodes as the importer writes them, before rewrites merge any */
        const opsched_onnx_options as_written = {.no_rewrite = 1};
        loaded l = load_ok(rel, &as_written);
        for (int i = 0; i < opsched_graph_num_nodes(l.g); i++) {
            if (i) strcat(ops, " ");
            strcat(ops, opsched_node_op_name(node(&l, i)));
        }
        if (strcmp(ops, oc->ops) != 0) print_error("%s: nodes '%s'\n", oc->file, ops);
        assert_string_equal(ops, oc->ops);
        const opsched_tensor *y = tensor(&l, opsched_graph_output(l.g, 0));
        assert_shape(&y->shape, oc->out);
        if (y->dtype != oc->dt) print_error("%s: output is %s\n", oc->file, opsched_dtype_name(y->dtype));
        assert_int_equal(y->dtype, oc->dt);
        if (opsched_graph_num_inputs(l.g) != oc->n_inputs)
            print_error("%s: %d inputs\n", oc->file, opsched_graph_num_inputs(l.g));
        assert_int_equal(opsched_graph_num_inputs(l.g), oc->n_inputs);
        opsched_graph_totals t;
        assert_int_equal(opsched_graph_totals_compute(l.g, &t), OPSCHED_OK);
        unload(&l);
    }
}

/* The tensor named name, which must exist. */
static const opsched_tensor *named(const loaded *l, const char *name)
{
    int id;
    if (opsched_graph_find_tensor(l->g, name, &id) != OPSCHED_OK)
        print_error("no tensor '%s'\n", name);
    assert_int_equal(opsched_graph_find_tensor(l->g, name, &id), OPSCHED_OK);
    return tensor(l, id);
}

static void test_elementwise_attrs(void **state)
{
    (void)state;
    loaded l = load_ok("small/activations_op22.onnx", NULL);
    const opsched_unary_attr *u = &node(&l, 0)->attr.unary;
    assert_int_equal(u->fn, OPSCHED_UNARY_LEAKY_RELU);
    assert_true(u->alpha == 0.2f);
    assert_true(node(&l, 2)->attr.unary.alpha == 1.67326319217681884765625f);
    assert_true(node(&l, 2)->attr.unary.gamma == 1.05070102214813232421875f);
    assert_true(node(&l, 3)->attr.unary.alpha == 1.0f); /* Celu's default */
    u = &node(&l, 8)->attr.unary;
    assert_int_equal(u->fn, OPSCHED_UNARY_SHRINK);
    assert_true(u->alpha == 0.25f && u->beta == 0.75f); /* bias, lambd */
    assert_int_equal(node(&l, 11)->attr.gelu.tanh_approx, 1);
    assert_int_equal(node(&l, 12)->attr.binary.fn, OPSCHED_BINARY_PRELU);
    unload(&l);

    l = load_ok("small/swish_op24.onnx", NULL);
    assert_true(node(&l, 0)->attr.unary.alpha == 1.5f);
    unload(&l);
    l = load_ok("small/swiglu_op28.onnx", NULL);
    assert_true(node(&l, 0)->attr.unary.alpha == 1.702f);
    unload(&l);

    /* Comparisons give bool; IsInf's detect flags are alpha and beta. */
    l = load_ok("small/logic.onnx", NULL);
    assert_int_equal(named(&l, "eq")->dtype, OPSCHED_BOOL);
    assert_int_equal(named(&l, "cond")->dtype, OPSCHED_BOOL);
    u = &node(&l, 10)->attr.unary;
    assert_int_equal(u->fn, OPSCHED_UNARY_ISINF);
    assert_true(u->alpha == 0.0f && u->beta == 1.0f);
    unload(&l);

    l = load_ok("small/bitwise_op18.onnx", NULL);
    assert_int_equal(node(&l, 4)->attr.binary.fn, OPSCHED_BINARY_SHIFT_RIGHT);
    assert_int_equal(named(&l, "z")->dtype, OPSCHED_UINT8);
    assert_int_equal(tensor(&l, opsched_graph_input(l.g, 2))->dtype, OPSCHED_UINT8);
    unload(&l);

    /* Mean divides by a constant n of its type. */
    const opsched_onnx_options as_written = {.no_rewrite = 1};
    l = load_ok("small/variadic.onnx", &as_written);
    const opsched_tensor *n = tensor(&l, node(&l, 4)->inputs[1]);
    assert_int_equal(n->kind, OPSCHED_TENSOR_CONSTANT);
    assert_int_equal(n->dtype, OPSCHED_F32);
    assert_true(*(const float *)n->data == 3.0f);
    unload(&l);

    l = load_ok("small/cast_op19.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.cast.to, OPSCHED_F16);
    assert_int_equal(node(&l, 1)->attr.cast.to, OPSCHED_INT32);
    assert_int_equal(node(&l, 2)->attr.cast.to, OPSCHED_INT64); /* CastLike */
    assert_int_equal(node(&l, 3)->attr.cast.to, OPSCHED_BOOL);
    unload(&l);

    l = load_ok("small/bool_uint8_inputs.onnx", NULL);
    assert_int_equal(tensor(&l, opsched_graph_input(l.g, 0))->dtype, OPSCHED_BOOL);
    assert_int_equal(tensor(&l, opsched_graph_input(l.g, 1))->dtype, OPSCHED_UINT8);
    unload(&l);

    /* Quantisation: the zero point's type is the output's; a block-wise
     * QuantizeLinear to int8 without one gets a zero constant of int8. */
    l = load_ok("small/qdq_op21.onnx", NULL);
    assert_int_equal(named(&l, "q")->dtype, OPSCHED_UINT8);
    assert_int_equal(node(&l, 0)->attr.quant.axis, 1);
    unload(&l);
    l = load_ok("small/quant_blocked_op21.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.quant.block_size, 4);
    const opsched_tensor *zp = tensor(&l, node(&l, 0)->inputs[2]);
    assert_int_equal(zp->dtype, OPSCHED_INT8);
    assert_shape(&zp->shape, "4x2");
    unload(&l);
    /* int8 weights read by DequantizeLinear are weights; output_dtype makes
     * the scale float16. */
    l = load_ok("small/dequant_weight_op23.onnx", NULL);
    assert_int_equal(tensor(&l, node(&l, 0)->inputs[0])->kind, OPSCHED_TENSOR_WEIGHT);
    assert_int_equal(tensor(&l, node(&l, 0)->inputs[1])->dtype, OPSCHED_F16);
    unload(&l);
}

static void test_norm_attrs(void **state)
{
    (void)state;
    /* LayerNormalization's statistics: [2, 1, 1], in float. */
    loaded l = load_ok("small/layernorm_stats_op17.onnx", NULL);
    assert_shape(&named(&l, "mean")->shape, "2x1x1");
    assert_shape(&named(&l, "inv")->shape, "2x1x1");
    assert_int_equal(node(&l, 1)->attr.reduce.n_axes, 2);
    unload(&l);
    l = load_ok("small/dropout_mask.onnx", NULL);
    assert_int_equal(named(&l, "mask")->dtype, OPSCHED_BOOL);
    assert_shape(&named(&l, "mask")->shape, "2x3");
    unload(&l);

    l = load_ok("small/instancenorm.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.groupnorm.groups, 4);
    assert_true(node(&l, 0)->attr.groupnorm.epsilon == 1e-3f);
    unload(&l);

    /* Opset 18's scale and bias per group become per-channel weights. */
    opsched_onnx_options o = {.load_weights = 1};
    l = load_ok("small/groupnorm_op18.onnx", &o);
    assert_int_equal(node(&l, 0)->attr.groupnorm.groups, 3);
    const opsched_tensor *s = tensor(&l, node(&l, 0)->inputs[1]);
    assert_string_equal(s->name, "s/per_channel");
    assert_int_equal(s->kind, OPSCHED_TENSOR_WEIGHT);
    assert_shape(&s->shape, "6");
    const float want[6] = {1, 1, 2, 2, 3, 3};
    assert_int_equal(s->data_bytes, sizeof(want));
    assert_memory_equal(s->data, want, sizeof(want));
    unload(&l);
    l = load_ok("small/groupnorm_op21.onnx", NULL);
    assert_string_equal(tensor(&l, node(&l, 0)->inputs[1])->name, "s");
    unload(&l);

    l = load_ok("small/reduce_op13.onnx", NULL);
    for (int i = 0; i < 10; i++) {
        const opsched_reduce_attr *r = &node(&l, i)->attr.reduce;
        assert_int_equal(r->n_axes, 1);
        assert_int_equal(r->axes[0], 1);
        assert_int_equal(r->keepdims, 0);
    }
    assert_int_equal(node(&l, 0)->op, OPSCHED_OP_REDUCE);
    assert_int_equal(node(&l, 1)->op, OPSCHED_OP_REDUCEMEAN);
    assert_int_equal(node(&l, 6)->attr.reduce.fn, OPSCHED_REDUCE_L2);
    unload(&l);
    l = load_ok("small/reduce_op18.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.reduce.n_axes, 2);
    assert_int_equal(node(&l, 0)->attr.reduce.keepdims, 1);
    assert_int_equal(node(&l, 11)->attr.reduce.n_axes, 0); /* empty axes: all */
    unload(&l);

    l = load_ok("small/axis_ops.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.arg.axis, 1);
    assert_int_equal(node(&l, 0)->attr.arg.keepdims, 0);
    assert_int_equal(node(&l, 1)->attr.arg.select_last_index, 1);
    const opsched_topk_attr *tk = &node(&l, 2)->attr.topk;
    assert_int_equal(tk->k, 2);
    assert_int_equal(tk->axis, 2);
    assert_int_equal(tk->largest, 0);
    assert_int_equal(named(&l, "ti")->dtype, OPSCHED_INT64);
    assert_shape(&named(&l, "tv")->shape, "2x3x2");
    const opsched_cumsum_attr *cs = &node(&l, 3)->attr.cumsum;
    assert_int_equal(cs->axis, 1);
    assert_true(cs->exclusive && cs->reverse);
    assert_int_equal(node(&l, 5)->attr.axis.axis, 1);
    unload(&l);
}

static void test_window_attrs(void **state)
{
    (void)state;
    /* 1-D: a 2-D op of height 1 between two reshapes; the weight becomes
     * a 4-D weight of its own. */
    opsched_onnx_options o = {.load_weights = 1};
    loaded l = load_ok("small/conv1d.onnx", &o);
    const opsched_conv_attr *c = &node(&l, 1)->attr.conv;
    assert_int_equal(c->kernel[0], 1);
    assert_int_equal(c->kernel[1], 3);
    assert_int_equal(c->stride[0], 1);
    assert_int_equal(c->stride[1], 2);
    assert_int_equal(c->pads[0], 0);
    assert_int_equal(c->pads[1], 1);
    assert_int_equal(c->pads[2], 0);
    assert_int_equal(c->pads[3], 1);
    const opsched_tensor *w = tensor(&l, node(&l, 1)->inputs[1]);
    assert_string_equal(w->name, "w/2d");
    assert_int_equal(w->kind, OPSCHED_TENSOR_WEIGHT);
    assert_shape(&w->shape, "8x3x1x3");
    assert_int_equal(w->data_bytes, 8 * 3 * 3 * sizeof(float));
    unload(&l);

    l = load_ok("small/convtranspose.onnx", NULL);
    const opsched_conv_transpose_attr *t = &node(&l, 0)->attr.conv_transpose;
    assert_int_equal(t->groups, 2);
    assert_int_equal(t->output_padding[0], 1);
    assert_int_equal(t->pads[0], 1);
    unload(&l);
    /* output_shape 10 of a natural 11: one row of padding, at the start. */
    l = load_ok("small/convtranspose_outshape.onnx", NULL);
    t = &node(&l, 0)->attr.conv_transpose;
    assert_int_equal(t->pads[0], 1);
    assert_int_equal(t->pads[2], 0);
    unload(&l);
    l = load_ok("small/convtranspose_same.onnx", NULL);
    t = &node(&l, 0)->attr.conv_transpose;
    assert_int_equal(t->pads[0], 0);
    assert_int_equal(t->pads[2], 1);
    unload(&l);

    /* LpPool: AveragePool counting the padding, times the kernel area. */
    l = load_ok("small/lppool_op18.onnx", NULL);
    assert_int_equal(node(&l, 2)->attr.pool.count_include_pad, 1);
    assert_int_equal(node(&l, 2)->attr.pool.pads[0], 1);
    assert_true(*(const float *)tensor(&l, node(&l, 1)->inputs[1])->data == 3.0f);
    assert_true(*(const float *)tensor(&l, node(&l, 3)->inputs[1])->data == 9.0f);
    assert_true(*(const float *)tensor(&l, node(&l, 4)->inputs[1])->data == 1.0f / 3.0f);
    unload(&l);
    l = load_ok("small/pool1d.onnx", NULL);
    assert_int_equal(node(&l, 1)->attr.pool.kernel[0], 1);
    assert_int_equal(node(&l, 1)->attr.pool.kernel[1], 3);
    assert_int_equal(node(&l, 1)->attr.pool.pads[3], 1);
    assert_int_equal(node(&l, 4)->attr.pool.count_include_pad, 1);
    unload(&l);
    l = load_ok("small/globallppool.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.reduce.n_axes, 2);
    assert_int_equal(node(&l, 0)->attr.reduce.keepdims, 1);
    unload(&l);

    /* 3-D: one node on 5-D tensors, the depth axis in its own fields. */
    l = load_ok("small/conv3d.onnx", NULL);
    c = &node(&l, 0)->attr.conv;
    assert_int_equal(c->depth.kernel, 3);
    assert_int_equal(c->depth.stride, 2);
    assert_int_equal(c->depth.pad_begin, 1);
    assert_int_equal(c->depth.pad_end, 1);
    assert_int_equal(c->pads[0], 0);
    assert_int_equal(c->pads[1], 1);
    assert_int_equal(c->pads[2], 0);
    assert_int_equal(c->pads[3], 2);
    assert_shape(&tensor(&l, node(&l, 0)->outputs[0])->shape, "1x2x2x2x5");
    unload(&l);
    /* pooling padding wider than half the kernel */
    l = load_ok("small/pool3d.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.pool.depth.kernel, 2);
    assert_int_equal(node(&l, 0)->attr.pool.depth.pad_end, 1);
    assert_int_equal(node(&l, 0)->attr.pool.pads[0], 2);
    assert_shape(&tensor(&l, node(&l, 0)->outputs[0])->shape, "1x2x4x7x7");
    unload(&l);
    /* MaxPool's Indices: the node's second output, int64 */
    l = load_ok("small/maxpool_indices.onnx", NULL);
    assert_int_equal(node(&l, 0)->n_outputs, 2);
    assert_int_equal(node(&l, 0)->attr.pool.storage_order, 1);
    const opsched_tensor *idx = tensor(&l, node(&l, 0)->outputs[1]);
    assert_string_equal(idx->name, "idx");
    assert_int_equal(idx->dtype, OPSCHED_INT64);
    assert_shape(&idx->shape, "1x2x7x7");
    unload(&l);
    /* CastLike reads only the type of its second input: an input of
     * symbolic shape read that way is no input of the graph. */
    l = load_ok("small/castlike_symbolic.onnx", NULL);
    assert_int_equal(opsched_graph_num_inputs(l.g), 1);
    assert_int_equal(named(&l, "y")->dtype, OPSCHED_F16);
    unload(&l);
    /* A declared dim_value of 0 is a dimension of size 0. */
    l = load_ok("small/empty_dims.onnx", NULL);
    assert_shape(&tensor(&l, opsched_graph_input(l.g, 0))->shape, "2x0x4");
    assert_shape(&tensor(&l, node(&l, 0)->outputs[0])->shape, "2x1x4");
    unload(&l);
}

static void test_resize_attrs(void **state)
{
    (void)state;
    loaded l = load_ok("small/resize_scales.onnx", NULL);
    const opsched_resize_attr *r = &node(&l, 0)->attr.resize;
    assert_int_equal(r->mode, OPSCHED_RESIZE_LINEAR);
    assert_int_equal(r->coord, OPSCHED_COORD_ALIGN_CORNERS);
    assert_true(r->scales[2] == 2.0f && r->scales[3] == 1.5f && r->scales[0] == 1.0f);
    assert_int_equal(r->sizes[3], 9);
    unload(&l);

    /* not_larger: the smaller of 7/4 and 5/6 for both axes, rounded. */
    l = load_ok("small/resize_sizes_op18.onnx", NULL);
    r = &node(&l, 0)->attr.resize;
    assert_int_equal(r->mode, OPSCHED_RESIZE_CUBIC);
    assert_true(r->scales[2] == (float)(5.0 / 6.0) && r->scales[3] == (float)(5.0 / 6.0));
    assert_true(r->cubic_coeff_a == -0.5f);
    assert_int_equal(r->exclude_outside, 1);
    assert_int_equal(r->coord, OPSCHED_COORD_HALF_PIXEL);
    assert_int_equal(r->nearest, OPSCHED_NEAREST_ROUND_PREFER_FLOOR);
    unload(&l);

    /* Sizes: scale = out / in; the roi kept as starts then ends. */
    l = load_ok("small/resize_tf_crop.onnx", NULL);
    r = &node(&l, 0)->attr.resize;
    assert_int_equal(r->coord, OPSCHED_COORD_TF_CROP_AND_RESIZE);
    assert_int_equal(r->nearest, OPSCHED_NEAREST_CEIL);
    assert_true(r->extrapolation_value == 0.5f);
    assert_true(r->scales[2] == 1.25f && r->scales[3] == (float)(5.0 / 6.0));
    assert_true(r->roi[2] == 0.1f && r->roi[3] == 0.2f && r->roi[6] == 0.9f && r->roi[7] == 0.8f);
    unload(&l);

    /* Opset 10 and Upsample: asymmetric coordinates, nearest floor. */
    const char *old[] = {"small/resize_op10.onnx", "small/upsample_op7.onnx"};
    for (int k = 0; k < 2; k++) {
        l = load_ok(old[k], NULL);
        r = &node(&l, 0)->attr.resize;
        assert_int_equal(r->coord, OPSCHED_COORD_ASYMMETRIC);
        assert_int_equal(r->nearest, OPSCHED_NEAREST_FLOOR);
        assert_int_equal(r->mode, OPSCHED_RESIZE_NEAREST);
        unload(&l);
    }
    l = load_ok("small/upsample_op9.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.resize.mode, OPSCHED_RESIZE_LINEAR);
    unload(&l);
}

static void test_indexing_attrs(void **state)
{
    (void)state;
    loaded l = load_ok("small/pad_wrap_op19.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.pad.mode, OPSCHED_PAD_WRAP);
    unload(&l);
    l = load_ok("small/tile.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.tile.repeats[0], 2);
    assert_int_equal(node(&l, 0)->attr.tile.repeats[1], 3);
    unload(&l);
    /* DCR and CRD order the block differently. */
    l = load_ok("small/depth_space.onnx", &(const opsched_onnx_options){.no_rewrite = 1});
    assert_shape(&tensor(&l, node(&l, 0)->outputs[0])->shape, "1x2x2x2x3x4");
    assert_int_equal(node(&l, 1)->attr.transpose.perm[1], 3);
    assert_int_equal(node(&l, 4)->attr.transpose.perm[1], 1);
    assert_shape(&named(&l, "b")->shape, "1x2x6x8");
    unload(&l);
    l = load_ok("small/gather_scatter_op18.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.axis.axis, 1);
    assert_int_equal(node(&l, 1)->attr.gather_nd.batch_dims, 1);
    assert_shape(&named(&l, "gn")->shape, "2x4");
    assert_int_equal(node(&l, 2)->attr.scatter.reduction, OPSCHED_SCATTER_ADD);
    assert_int_equal(node(&l, 3)->attr.scatter.reduction, OPSCHED_SCATTER_MUL);
    unload(&l);
    l = load_ok("small/onehot.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.onehot.depth, 5);
    assert_int_equal(node(&l, 0)->attr.onehot.axis, 2);
    unload(&l);
    l = load_ok("small/trilu.onnx", NULL);
    assert_int_equal(node(&l, 0)->attr.trilu.upper, 0);
    assert_int_equal(node(&l, 0)->attr.trilu.k, -1);
    unload(&l);
    /* A big EyeLike: ones, cut to the diagonal by two Trilu. */
    l = load_ok("small/eyelike.onnx", NULL);
    assert_int_equal(node(&l, 2)->attr.trilu.upper, 1);
    assert_int_equal(node(&l, 3)->attr.trilu.upper, 0);
    const opsched_tensor *e = tensor(&l, node(&l, 0)->inputs[1]);
    assert_int_equal(e->kind, OPSCHED_TENSOR_CONSTANT);
    const float *ev = e->data; /* k = 1: the diagonal above the main one */
    assert_true(ev[1] == 1.0f && ev[0] == 0.0f && ev[4 + 2] == 1.0f && ev[11] == 1.0f);
    unload(&l);
    l = load_ok("small/constant_of_shape_big.onnx", NULL);
    const opsched_tensor *v = tensor(&l, node(&l, 0)->inputs[0]);
    assert_int_equal(v->shape.ndim, 0);
    assert_true(*(const float *)v->data == -1.5f);
    unload(&l);
}

static void test_fold_values(void **state)
{
    (void)state;
    /* Every op of the shape arithmetic folds; the values are the onnx
     * reference implementation's (onnx 1.23). */
    loaded l = load_ok("small/fold_more.onnx", NULL);
    const opsched_tensor *all = named(&l, "all");
    const int64_t want[] = {4, 4, 4, 1, 128, 0, 0, 1, 2, 0, 6, 0, 7, 2, 2, 2, 3, 1, 1, 0, 1, 0};
    assert_int_equal(all->kind, OPSCHED_TENSOR_CONSTANT);
    assert_int_equal(all->dtype, OPSCHED_INT64);
    assert_int_equal(all->data_bytes, sizeof(want));
    assert_memory_equal(all->data, want, sizeof(want));
    unload(&l);
    /* Exp, Relu, Sigmoid, LeakyRelu, Round (half to even), IsNaN, Where. */
    l = load_ok("small/fold_unary_consts.onnx", NULL);
    const opsched_tensor *w = tensor(&l, node(&l, 0)->inputs[1]);
    const float wv[4] = {1, 0, 1, 1};
    assert_memory_equal(w->data, wv, sizeof(wv));
    unload(&l);
    /* Clip of constants with one bound each: min 0, then max 2.5. */
    l = load_ok("small/fold_clip.onnx", NULL);
    const float cv[3] = {0, 0.5f, 2.5f};
    assert_memory_equal(tensor(&l, node(&l, 0)->inputs[1])->data, cv, sizeof(cv));
    unload(&l);
    /* Reductions over no axes keep their element-wise part: x^2 + |x|. */
    l = load_ok("small/reduce_noop_fold.onnx", NULL);
    const float nv[3] = {2, 6, 12};
    assert_memory_equal(tensor(&l, node(&l, 0)->inputs[1])->data, nv, sizeof(nv));
    unload(&l);
    /* An If branch may pass an outer weight through unchanged. */
    l = load_ok("small/if_passthrough.onnx", NULL);
    assert_string_equal(tensor(&l, node(&l, 0)->inputs[1])->name, "w");
    assert_int_equal(tensor(&l, node(&l, 0)->inputs[1])->kind, OPSCHED_TENSOR_WEIGHT);
    unload(&l);
}

/* Attention's KV cache: past and new keys concatenated (the present
 * outputs); BatchNormalization in training mode gives its running
 * statistics. */
static void test_cache_and_training(void **state)
{
    (void)state;
    loaded l = load_ok("small/attention_cache_op23.onnx", NULL);
    const opsched_tensor *pk = named(&l, "present_k"), *pv = named(&l, "present_v");
    assert_shape(&pk->shape, "1x2x5x4");
    assert_shape(&pv->shape, "1x2x5x4");
    assert_int_equal(opsched_graph_node(l.g, pk->producer)->op, OPSCHED_OP_CONCAT);
    assert_int_equal(opsched_graph_num_outputs(l.g), 3);
    unload(&l);
    l = load_ok("small/batchnorm_training.onnx", NULL);
    assert_shape(&named(&l, "rm")->shape, "4");
    assert_shape(&named(&l, "rv")->shape, "4");
    assert_shape(&named(&l, "y")->shape, "1x4x3x3");
    assert_int_equal(opsched_graph_num_outputs(l.g), 3);
    unload(&l);
}

static void test_transformer_attrs(void **state)
{
    (void)state;
    /* GQA: four query heads over two KV heads, stacked per KV head. */
    loaded l = load_ok_written("small/attention_op23.onnx", NULL);
    const float sq = *(const float *)tensor(&l, node(&l, 0)->inputs[1])->data;
    assert_true(sq == (float)sqrt(1.0 / sqrt(8.0)));
    assert_shape(&tensor(&l, node(&l, 4)->outputs[0])->shape, "2x2x10x6");
    assert_int_equal(node(&l, 7)->attr.trilu.upper, 1);
    assert_int_equal(node(&l, 7)->attr.trilu.k, 1);
    assert_int_equal(node(&l, 9)->attr.axis.axis, 3);
    unload(&l);
    l = load_ok_written("small/attention_3d_mask_op23.onnx", NULL);
    assert_true(*(const float *)tensor(&l, node(&l, 6)->inputs[1])->data == 0.5f);
    const opsched_pad_attr *pa = &node(&l, 12)->attr.pad;
    assert_int_equal(pa->pads[3], 2); /* the mask's last axis, to 6 keys */
    assert_true(pa->value == 0.0f);
    assert_int_equal(node(&l, 17)->attr.unary.fn, OPSCHED_UNARY_ISINF);
    unload(&l);
    /* qk_matmul_output mode 3: the probabilities, back in float16. */
    l = load_ok_written("small/attention_softcap_op24.onnx", NULL);
    assert_int_equal(node(&l, 8)->attr.cast.to, OPSCHED_F32);
    /* the decomposition's last tensor carries the model's output name */
    const opsched_tensor *qk = named(&l, "qk");
    assert_int_equal(qk->dtype, OPSCHED_F16);
    assert_int_equal(opsched_graph_output(l.g, 1), node(&l, 13)->outputs[0]);
    unload(&l);
    l = load_ok_written("small/attention_window_op25.onnx", NULL);
    assert_int_equal(node(&l, 5)->attr.trilu.upper, 0);
    assert_int_equal(node(&l, 5)->attr.trilu.k, -3);
    assert_int_equal(node(&l, 7)->attr.trilu.upper, 1);
    assert_int_equal(node(&l, 7)->attr.trilu.k, 1);
    unload(&l);
    l = load_ok("small/rotary_3d_op23.onnx", NULL);
    assert_int_equal(node(&l, 5)->attr.slice.steps[3], 2);
    assert_int_equal(node(&l, 6)->attr.slice.starts[3], 1);
    unload(&l);
}

/* ---- input shapes ------------------------------------------------------------ */

static void test_missing_shape(void **state)
{
    (void)state;
    loaded l = load_opts("small/dim_param.onnx", NULL);
    assert_int_equal(l.st, OPSCHED_ERR_INVALID_ARG);
    const char *msg = opsched_ctx_last_error(l.ctx);
    assert_non_null(strstr(msg, "'x'"));
    assert_non_null(strstr(msg, "dimension 0"));
    assert_non_null(strstr(msg, "batch"));
    assert_non_null(strstr(msg, "--shapes"));
    unload(&l);
}

static void test_overrides(void **state)
{
    (void)state;
    opsched_onnx_options o = {.batch = 2, .height = 16, .width = 12};
    loaded l = load_ok("small/dim_param.onnx", &o);
    assert_shape(&tensor(&l, opsched_graph_input(l.g, 0))->shape, "2x3x16x12");
    unload(&l);

    opsched_onnx_options s = {.shapes = "x:1x3x8x8"};
    l = load_ok("small/dim_param.onnx", &s);
    assert_shape(&tensor(&l, opsched_graph_output(l.g, 0))->shape, "1x3x8x8");
    unload(&l);

    /* Comma-separated dims and a batch override applied after --shapes. */
    opsched_onnx_options sb = {.shapes = "x:1,3,8,8", .batch = 4};
    l = load_ok("small/dim_param.onnx", &sb);
    assert_shape(&tensor(&l, opsched_graph_input(l.g, 0))->shape, "4x3x8x8");
    unload(&l);

    opsched_onnx_options m = {.shapes = "tokens:2x5x8,mask:1x5x1"};
    l = load_ok("small/multi_input.onnx", &m);
    assert_int_equal(opsched_graph_num_inputs(l.g), 2);
    assert_shape(&tensor(&l, opsched_graph_output(l.g, 0))->shape, "2x5x8");
    unload(&l);

    /* A static model still takes batch and spatial overrides. */
    opsched_onnx_options b = {.batch = 4, .height = 20, .width = 20};
    l = load_ok("small/conv_basic.onnx", &b);
    assert_shape(&tensor(&l, opsched_graph_output(l.g, 0))->shape, "4x8x20x20");
    unload(&l);

    opsched_onnx_options bad = {.shapes = "nope:1x3x8x8"};
    l = load_opts("small/dim_param.onnx", &bad);
    assert_int_equal(l.st, OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(l.ctx), "'nope'"));
    assert_non_null(strstr(opsched_ctx_last_error(l.ctx), "its inputs: x"));
    unload(&l);

    opsched_onnx_options rank = {.shapes = "x:1x3x8"};
    l = load_opts("small/dim_param.onnx", &rank);
    assert_int_equal(l.st, OPSCHED_ERR_INVALID_ARG);
    unload(&l);

    opsched_onnx_options junk = {.shapes = "x:1xQx8x8"};
    l = load_opts("small/dim_param.onnx", &junk);
    assert_int_equal(l.st, OPSCHED_ERR_INVALID_ARG);
    unload(&l);
}

/* ---- values given for inputs ----------------------------------------------- */

static opsched_onnx_value given(const char *name, opsched_dtype dt, const char *shape,
                                const void *data)
{
    opsched_onnx_value v = {.name = name, .dtype = dt, .data = data};
    if (shape[0]) assert_int_equal(opsched_shape_parse(shape, &v.shape), OPSCHED_OK);
    return v;
}

static int count_op(const loaded *l, opsched_op_kind op)
{
    int n = 0;
    for (int i = 0; i < opsched_graph_num_nodes(l->g); i++)
        n += node(l, i)->op == op;
    return n;
}

static void test_given_values(void **state)
{
    (void)state;
    /* A Reshape's shape: a load-time constant, no longer an input. */
    int64_t shape[2] = {6, 4};
    opsched_onnx_value v1[] = {given("shape", OPSCHED_INT64, "2", shape)};
    opsched_onnx_options o = {.values = v1, .n_values = 1};
    loaded l = load_ok("small/given_reshape.onnx", &o);
    assert_int_equal(opsched_graph_num_inputs(l.g), 1);
    assert_string_equal(tensor(&l, opsched_graph_input(l.g, 0))->name, "x");
    assert_shape(&tensor(&l, opsched_graph_output(l.g, 0))->shape, "6x4");
    unload(&l);

    /* Through shape arithmetic (Unsqueeze, Concat) to the Reshape. */
    int64_t n = 12;
    opsched_onnx_value v2[] = {given("n", OPSCHED_INT64, "", &n)};
    opsched_onnx_options o2 = {.values = v2, .n_values = 1};
    l = load_ok("small/given_chain.onnx", &o2);
    assert_int_equal(opsched_graph_num_inputs(l.g), 1);
    assert_shape(&tensor(&l, opsched_graph_output(l.g, 0))->shape, "2x12");
    unload(&l);

    /* Weights: the given payloads (without load_weights); x stays an input. */
    float w[4 * 3 * 3 * 3], b[4], x[3 * 6 * 6];
    for (int i = 0; i < 108; i++) w[i] = (float)i * 0.5f;
    for (int i = 0; i < 4; i++) b[i] = (float)-i;
    memset(x, 0, sizeof(x));
    opsched_onnx_value v3[] = {given("w", OPSCHED_F32, "4x3x3x3", w),
                               given("b", OPSCHED_F32, "4", b),
                               given("x", OPSCHED_F32, "1x3x6x6", x)};
    opsched_onnx_options o3 = {.values = v3, .n_values = 3};
    l = load_ok("small/given_conv.onnx", &o3);
    assert_int_equal(opsched_graph_num_inputs(l.g), 1);
    assert_int_equal(count_op(&l, OPSCHED_OP_CONV), 1);
    const opsched_tensor *wt = tensor(&l, node(&l, 0)->inputs[1]);
    assert_int_equal(wt->kind, OPSCHED_TENSOR_WEIGHT);
    assert_int_equal(wt->data_bytes, sizeof(w));
    assert_memory_equal(wt->data, w, sizeof(w));
    assert_memory_equal(tensor(&l, node(&l, 0)->inputs[2])->data, b, sizeof(b));
    unload(&l);

    /* Run-time data stays run-time data: both inputs given, the Add is a node. */
    float a[6] = {1, 2, 3, 4, 5, 6};
    opsched_onnx_value v4[] = {given("a", OPSCHED_F32, "2x3", a), given("b", OPSCHED_F32, "2x3", a)};
    opsched_onnx_options o4 = {.values = v4, .n_values = 2};
    l = load_ok("small/two_inputs_add.onnx", &o4);
    assert_int_equal(opsched_graph_num_inputs(l.g), 2);
    assert_int_equal(count_op(&l, OPSCHED_OP_ADD), 1);
    unload(&l);

    /* Both: the Reshape's shape is constant, and the Add reads the input
     * (its symbolic dim bound by the given shape). */
    int64_t s2[2] = {4, 6};
    opsched_onnx_value v5[] = {given("shape", OPSCHED_INT64, "2", s2)};
    opsched_onnx_options o5 = {.values = v5, .n_values = 1};
    l = load_ok("small/given_both.onnx", &o5);
    assert_int_equal(opsched_graph_num_inputs(l.g), 2);
    assert_shape(&tensor(&l, opsched_graph_input(l.g, 1))->shape, "2");
    assert_shape(&tensor(&l, opsched_graph_output(l.g, 0))->shape, "4x6");
    assert_int_equal(count_op(&l, OPSCHED_OP_ADD), 1);
    unload(&l);
}

static void test_given_value_errors(void **state)
{
    (void)state;
    float a[6] = {0};
    int64_t shape[2] = {6, 4};
    opsched_onnx_value nope[] = {given("nope", OPSCHED_F32, "2x3", a)};
    opsched_onnx_options o = {.values = nope, .n_values = 1};
    loaded l = load_opts("small/given_reshape.onnx", &o);
    assert_int_equal(l.st, OPSCHED_ERR_NOT_FOUND);
    assert_non_null(strstr(opsched_ctx_last_error(l.ctx), "'nope'"));
    assert_non_null(strstr(opsched_ctx_last_error(l.ctx), "it has: x, shape"));
    unload(&l);

    opsched_onnx_value type[] = {given("shape", OPSCHED_F32, "2", a)};
    opsched_onnx_options ot = {.values = type, .n_values = 1};
    l = load_opts("small/given_reshape.onnx", &ot);
    assert_int_equal(l.st, OPSCHED_ERR_SHAPE);
    assert_non_null(strstr(opsched_ctx_last_error(l.ctx), "input shape holds f32, the model's is int64"));
    unload(&l);

    opsched_onnx_value dims[] = {given("a", OPSCHED_F32, "3x2", a)};
    opsched_onnx_options od = {.values = dims, .n_values = 1};
    l = load_opts("small/two_inputs_add.onnx", &od);
    assert_int_equal(l.st, OPSCHED_ERR_SHAPE);
    assert_non_null(strstr(opsched_ctx_last_error(l.ctx), "input a is 3x2, the model's is 2x3"));
    unload(&l);

    opsched_onnx_value rank[] = {given("shape", OPSCHED_INT64, "2x1", shape)};
    opsched_onnx_options orank = {.values = rank, .n_values = 1};
    l = load_opts("small/given_both.onnx", &orank);
    assert_int_equal(l.st, OPSCHED_ERR_SHAPE);
    assert_non_null(strstr(opsched_ctx_last_error(l.ctx), "the model's is rank"));
    unload(&l);

    opsched_onnx_value twice[] = {given("shape", OPSCHED_INT64, "2", shape),
                                  given("shape", OPSCHED_INT64, "2", shape)};
    opsched_onnx_options o2 = {.values = twice, .n_values = 2};
    l = load_opts("small/given_reshape.onnx", &o2);
    assert_int_equal(l.st, OPSCHED_ERR_INVALID_ARG);
    unload(&l);
}

/* ---- external data ---------------------------------------------------------- */

static void test_external_data(void **state)
{
    (void)state;
    loaded l = load_ok("ext/model.onnx", NULL);
    assert_null(tensor(&l, node(&l, 0)->inputs[1])->data);
    unload(&l);

    opsched_onnx_options o = {.load_weights = 1};
    l = load_ok("ext/model.onnx", &o);
    const opsched_tensor *w = tensor(&l, node(&l, 0)->inputs[1]);
    char path[1024];
    snprintf(path, sizeof(path), "%s/onnx/ext/weights.bin", data_dir());
    size_t n;
    char *want = read_all(path, &n);
    assert_int_equal(w->data_bytes, n);
    assert_memory_equal(w->data, want, n);
    free(want);
    unload(&l);

    /* From memory there is no folder: shapes load, weights cannot. */
    snprintf(path, sizeof(path), "%s/onnx/ext/model.onnx", data_dir());
    char *buf = read_all(path, &n);
    opsched_ctx *ctx;
    opsched_graph *g = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    assert_int_equal(opsched_onnx_load_buffer(ctx, buf, n, NULL, NULL, "mem", &g), OPSCHED_OK);
    assert_string_equal(opsched_graph_name(g), "mem");
    opsched_graph_free(g);
    g = NULL;
    assert_int_equal(opsched_onnx_load_buffer(ctx, buf, n, NULL, &o, "mem", &g), OPSCHED_ERR_IO);
    assert_null(g);
    free(buf);
    opsched_ctx_free(ctx);
}

static void test_external_escape(void **state)
{
    (void)state;
    const char *files[] = {"ext_escape/model.onnx", "ext_link/model.onnx"};
    for (int k = 0; k < 2; k++) {
        /* Shapes only: nothing is read, so the model loads. */
        loaded l = load_ok(files[k], NULL);
        unload(&l);
        opsched_onnx_options o = {.load_weights = 1};
        l = load_opts(files[k], &o);
        assert_int_equal(l.st, OPSCHED_ERR_IO);
        const char *msg = opsched_ctx_last_error(l.ctx);
        if (!strstr(msg, "outside")) print_error("%s: %s\n", files[k], msg);
        assert_non_null(strstr(msg, "outside the model's folder"));
        unload(&l);
    }
}

/* An offset near INT64_MAX overflows offset + length: the file is too
 * short, said with the values the file gave (nothing uninitialised). */
static void test_external_offset_overflow(void **state)
{
    (void)state;
    const struct {
        const char *file, *offset;
    } cases[] = {{"ext_offset/near_max.onnx", "9223372036854775707"},
                 {"ext_offset/max.onnx", "9223372036854775807"}};
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        opsched_onnx_options o = {.load_weights = 1};
        loaded l = load_opts(cases[k].file, &o);
        assert_int_equal(l.st, OPSCHED_ERR_PARSE);
        const char *msg = opsched_ctx_last_error(l.ctx);
        char want[128];
        snprintf(want, sizeof(want), "it holds 864 bytes, the tensor needs 864 at offset %s",
                 cases[k].offset);
        if (!strstr(msg, want)) print_error("%s: %s\n", cases[k].file, msg);
        assert_non_null(strstr(msg, want));
        unload(&l);
    }
}

/* External data that is a FIFO is refused at once, not waited on. */
static void test_external_fifo(void **state)
{
    (void)state;
    char fifo[1024];
    snprintf(fifo, sizeof(fifo), "%s/onnx/ext_fifo/weights.bin", data_dir());
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    opsched_onnx_options o = {.load_weights = 1};
    loaded l = load_opts("ext_fifo/model.onnx", &o);
    unlink(fifo);
    assert_int_equal(l.st, OPSCHED_ERR_IO);
    const char *msg = opsched_ctx_last_error(l.ctx);
    if (!strstr(msg, "is a FIFO, not a regular file")) print_error("%s\n", msg);
    assert_non_null(strstr(msg, "weights.bin: the external data is a FIFO, not a regular file"));
    unload(&l);
}

/* A directory or a FIFO given as the model. */
static void test_model_not_regular(void **state)
{
    (void)state;
    char path[1024];
    opsched_onnx_options o = {0};
    loaded l = load_opts("ext", &o);
    assert_int_equal(l.st, OPSCHED_ERR_IO);
    assert_non_null(strstr(opsched_ctx_last_error(l.ctx), "ext: the model is a directory"));
    unload(&l);

    snprintf(path, sizeof(path), "%s/onnx/ext_fifo/fifo.onnx", data_dir());
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    l = load_opts("ext_fifo/fifo.onnx", &o);
    unlink(path);
    assert_int_equal(l.st, OPSCHED_ERR_IO);
    assert_non_null(strstr(opsched_ctx_last_error(l.ctx), "fifo.onnx: the model is a FIFO"));
    unload(&l);
}

/* ---- files that must be refused ------------------------------------------------ */

typedef struct bad_case {
    const char *file;
    int load_weights;
    opsched_status st;
    const char *says; /* a piece of the message */
} bad_case;

static const bad_case bad_cases[] = {
    {"bad/empty.onnx", 0, OPSCHED_ERR_PARSE, "empty"},
    {"bad/truncated.onnx", 0, OPSCHED_ERR_PARSE, "truncated"},
    {"bad/random.onnx", 0, OPSCHED_ERR_PARSE, "not an ONNX model"},
    {"bad/text.onnx", 0, OPSCHED_ERR_PARSE, "not an ONNX model"},
    {"bad/no_ir_version.onnx", 0, OPSCHED_ERR_PARSE, "ir_version"},
    {"bad/cycle.onnx", 0, OPSCHED_ERR_PARSE, "cycle"},
    {"bad/undefined_input.onnx", 0, OPSCHED_ERR_PARSE, "'nowhere'"},
    {"bad/unsupported_op.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "unsupported operator 'NonMaxSuppression' (node 'nms_1', opset 17)"},
    {"bad/opset_too_new.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "opset 29 is not supported (opsched reads opsets 7 to 28)"},
    {"bad/conv_groups.onnx", 0, OPSCHED_ERR_SHAPE, "bad_conv"},
    {"bad/kernel_too_big.onnx", 0, OPSCHED_ERR_SHAPE, "big_kernel"},
    {"bad/conv4d.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "node 'conv4d' (Conv): only 1-D, 2-D and 3-D convolution is supported (the input has rank "
     "6)"},
    {"bad/double_input.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "tensor 'x' has element type double, which opsched graphs cannot hold"},
    {"bad/cast_double.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "tensor 'xd' has element type double, which opsched graphs cannot hold"},
    {"bad/cumsum_runtime_axis.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "node 'cumsum' (CumSum): 'axis' ('ax') must be known when the model is loaded"},
    {"bad/range_runtime.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "node 'range' (Range): its output length depends on 'a'"},
    {"bad/if_runtime.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "node 'if_rt' (If): the condition 'c' is computed at run time"},
    {"bad/loop.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "unsupported operator 'Loop' (node 'loop', opset 13): control flow"},
    {"bad/random_normal.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "unsupported operator 'RandomNormal' (node 'rnd', opset 13): random generators"},
    {"bad/nonzero.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "unsupported operator 'NonZero' (node 'nz', opset 13): its output shape depends on the data"},
    {"bad/sequence.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "unsupported operator 'SequenceEmpty' (node 'seq', opset 13): sequence values"},
    {"bad/attention_cache.onnx", 0, OPSCHED_ERR_SHAPE,
     "node 'attn' (Attention): nonpad_kv_seqlen cannot be combined with past_key/past_value"},
    {"bad/lstm_relu.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "node 'lstm' (LSTM): activations other than Sigmoid, Tanh, Tanh (function 0 is 'Relu')"},
    {"bad/lstm_seq_lens.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "node 'lstm' (LSTM): sequence_lens known only at run time"},
    {"bad/einsum_bad.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "node 'es' (Einsum): equation \"ij,jk->iq\" is not supported"},
    {"bad/resize_tf_half_pixel.onnx", 0, OPSCHED_ERR_UNSUPPORTED,
     "coordinate_transformation_mode 'tf_half_pixel_for_nn' is not supported"},
    {"bad/string_constant.onnx", 0, OPSCHED_ERR_UNSUPPORTED, "a string constant"},
    {"bad/short_raw_data.onnx", 0, OPSCHED_ERR_PARSE, "raw_data"},
    {"bad/huge_dims.onnx", 0, OPSCHED_ERR_PARSE, "dimension"},
    {"bad/deep_nesting.onnx", 0, OPSCHED_ERR_UNSUPPORTED, "nested more than"},
    {"small/softmax_op11_bad_axis.onnx", 0, OPSCHED_ERR_UNSUPPORTED, "opset 11"},
};

static void test_bad_files(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(bad_cases) / sizeof(bad_cases[0]); c++) {
        const bad_case *bc = &bad_cases[c];
        opsched_onnx_options o = {.load_weights = bc->load_weights};
        loaded l = load_opts(bc->file, &o);
        const char *msg = opsched_ctx_last_error(l.ctx);
        if (l.st != bc->st || !strstr(msg, bc->says))
            print_error("%s: %s: %s\n", bc->file, opsched_status_str(l.st), msg);
        assert_int_equal(l.st, bc->st);
        assert_non_null(strstr(msg, bc->says));
        /* The message says which file. */
        assert_non_null(strstr(msg, bc->file));
        unload(&l);
    }
}

/* Every prefix of a valid model is refused cleanly or loads; none crash. */
static void test_prefixes(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/onnx/small/weights_as_inputs.onnx", data_dir());
    size_t n;
    char *buf = read_all(path, &n);
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    for (size_t k = 0; k < n; k++) {
        opsched_graph *g = NULL;
        opsched_status st = opsched_onnx_load_buffer(ctx, buf, k, NULL, NULL, NULL, &g);
        if (st != OPSCHED_OK) assert_true(opsched_ctx_last_error(ctx)[0] != '\0');
        opsched_graph_free(g);
    }
    free(buf);
    opsched_ctx_free(ctx);
}

/* Inputs that once crashed the fuzzer load cleanly (or fail cleanly). */
static void test_fuzz_regressions(void **state)
{
    (void)state;
    const char *src = getenv("OPSCHED_SOURCE_DIR");
    if (!src) skip();
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/tests/fuzz/regressions", src);
    DIR *d = opendir(dir);
    if (!d) skip();
    opsched_ctx *ctx;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char path[2048];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        /* Sub-folders hold the other fuzzers' regressions. */
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        size_t n;
        char *buf = read_all(path, &n);
        for (int weights = 0; weights <= 1; weights++) {
            opsched_onnx_options o = {.load_weights = weights};
            opsched_graph *g = NULL;
            opsched_status st = opsched_onnx_load_buffer(ctx, buf, n, NULL, &o, NULL, &g);
            if (st != OPSCHED_OK) assert_true(opsched_ctx_last_error(ctx)[0] != '\0');
            opsched_graph_free(g);
        }
        free(buf);
    }
    closedir(d);
    opsched_ctx_free(ctx);
}

static void test_api_errors(void **state)
{
    (void)state;
    opsched_ctx *ctx;
    opsched_graph *g = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    assert_int_equal(opsched_onnx_load_buffer(ctx, NULL, 4, NULL, NULL, NULL, &g),
                     OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_onnx_load_file(ctx, "/nonexistent/model.onnx", NULL, &g),
                     OPSCHED_ERR_IO);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "/nonexistent/model.onnx"));
    assert_int_equal(opsched_onnx_load_file(ctx, NULL, NULL, &g), OPSCHED_ERR_INVALID_ARG);
    assert_null(g);
    opsched_ctx_free(ctx);
}

/* ---- torchvision exports ---------------------------------------------------------- */

typedef struct torch_case {
    const char *file;
    const char *input;  /* shape of the one real input */
    const char *has;    /* ops that must appear, space separated */
    int64_t min_params; /* parameters the graph must at least hold */
} torch_case;

static const torch_case torch_cases[] = {
    {"alexnet_op13", "1x3x224x224", "Conv MaxPool AveragePool Flatten Gemm", 61000000},
    {"alexnet_op11", "1x3x224x224", "Conv MaxPool Gemm", 61000000},
    {"vgg16_op13", "1x3x224x224", "Conv MaxPool Gemm", 138000000},
    {"resnet50_op13", "1x3x224x224", "Conv Add GlobalAveragePool Gemm", 25000000},
    {"resnet152_op13", "1x3x224x224", "Conv Add Gemm", 59000000},
    {"densenet121_op13", "1x3x224x224", "Conv BatchNormalization Concat AveragePool", 7900000},
    {"googlenet_op13", "1x3x224x224", "Conv MaxPool Concat", 6500000},
    {"googlenet_op17", "1x3x224x224", "Conv MaxPool Concat", 6500000},
    {"inception_v3_op13", "1x3x299x299", "Conv AveragePool Concat", 23000000},
    {"squeezenet1_1_op13", "1x3x224x224", "Conv Concat GlobalAveragePool", 1200000},
    {"squeezenet1_1_op11", "1x3x224x224", "Conv Concat", 1200000},
    {"squeezenet1_1_params_op13", "1x3x224x224", "Conv Concat", 1200000},
    {"mobilenet_v2_op13", "1x3x224x224", "Conv Clip Add Gemm", 3400000},
    {"mobilenet_v3_small_op13", "1x3x224x224", "Conv HardSigmoid Mul", 2500000},
    {"mobilenet_v3_small_op17", "1x3x224x224", "Conv HardSwish HardSigmoid", 2500000},
    {"shufflenet_v2_x0_5_op13", "1x3x224x224", "Conv Reshape Transpose Slice Concat", 1300000},
    /* SiLU and GELU as exported (Sigmoid and Mul; the Erf formula) become
     * the one operator (the squeeze-excitation's Sigmoid and Mul stay). */
    {"efficientnet_b0_op13", "1x3x224x224", "Conv Swish Sigmoid Mul GlobalAveragePool", 5200000},
    {"vit_b_16_op13", "1x3x224x224", "Conv MatMul Attention ReduceMean Gelu Gather", 86000000},
    {"vit_b_16_op17", "1x3x224x224", "Conv MatMul Attention LayerNormalization Gelu", 86000000},
};

static int has_op(const loaded *l, const char *name)
{
    for (int i = 0; i < opsched_graph_num_nodes(l->g); i++)
        if (strcmp(opsched_node_op_name(node(l, i)), name) == 0) return 1;
    return 0;
}

static void test_torch_exports(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(torch_cases) / sizeof(torch_cases[0]); c++) {
        const torch_case *tc = &torch_cases[c];
        char rel[256];
        snprintf(rel, sizeof(rel), "torch/%s.onnx", tc->file);
        loaded l = load_ok(rel, NULL);
        assert_int_equal(opsched_graph_num_inputs(l.g), 1);
        assert_int_equal(opsched_graph_num_outputs(l.g), 1);
        assert_shape(&tensor(&l, opsched_graph_input(l.g, 0))->shape, tc->input);
        assert_shape(&tensor(&l, opsched_graph_output(l.g, 0))->shape, "1x1000");
        char ops[256];
        snprintf(ops, sizeof(ops), "%s", tc->has);
        for (char *op = strtok(ops, " "); op; op = strtok(NULL, " ")) {
            if (!has_op(&l, op)) print_error("%s: no %s node\n", tc->file, op);
            assert_true(has_op(&l, op));
        }
        /* In eval mode the exporter folds every BatchNormalization that
         * follows a convolution; only DenseNet's pre-activation ones stay. */
        if (!strstr(tc->file, "densenet")) assert_false(has_op(&l, "BatchNormalization"));
        opsched_graph_totals t;
        assert_int_equal(opsched_graph_totals_compute(l.g, &t), OPSCHED_OK);
        assert_true(t.flops > 0);
        if (t.params < tc->min_params)
            print_error("%s: %lld parameters\n", tc->file, (long long)t.params);
        assert_true(t.params >= tc->min_params);
        unload(&l);
    }
}

/* Batch and size overrides go through a whole network.  (Not every export
 * allows it: without dynamic_axes torch bakes the sizes into Reshape
 * targets, as in shufflenet's channel shuffle.) */
static void test_torch_resized(void **state)
{
    (void)state;
    opsched_onnx_options o = {.batch = 2, .height = 160, .width = 160};
    loaded l = load_ok("torch/resnet50_op13.onnx", &o);
    assert_shape(&tensor(&l, opsched_graph_output(l.g, 0))->shape, "2x1000");
    unload(&l);
    l = load_ok("torch/googlenet_op13.onnx", &o);
    assert_shape(&tensor(&l, opsched_graph_output(l.g, 0))->shape, "2x1000");
    unload(&l);
    opsched_onnx_options w = {.load_weights = 1};
    l = load_ok("torch/squeezenet1_1_params_op13.onnx", &w);
    int with_data = 0;
    for (int i = 0; i < opsched_graph_num_tensors(l.g); i++)
        if (tensor(&l, i)->kind == OPSCHED_TENSOR_WEIGHT && tensor(&l, i)->data) with_data++;
    assert_int_equal(with_data, count_kind(&l, OPSCHED_TENSOR_WEIGHT));
    assert_true(with_data > 30); /* identical zero biases are shared */
    unload(&l);
}

/* LSTM outputs keep their names and shapes with and without payloads;
 * the bidirectional projection reads one direction of W each. */
static void test_lstm(void **state)
{
    (void)state;
    for (int w = 0; w < 2; w++) {
        opsched_onnx_options o = {.load_weights = w};
        loaded l = load_ok("small/lstm_bidirectional_op22.onnx", &o);
        assert_shape(&named(&l, "y")->shape, "2x2x1x4");
        assert_shape(&named(&l, "y_h")->shape, "2x1x4");
        assert_shape(&named(&l, "y_c")->shape, "2x1x4");
        int yc;
        assert_int_equal(opsched_graph_find_tensor(l.g, "y_c", &yc), OPSCHED_OK);
        assert_int_equal(opsched_graph_output(l.g, 2), yc);
        const opsched_node *g = node(&l, 5);
        assert_int_equal(g->op, OPSCHED_OP_GEMM);
        assert_int_equal(g->attr.gemm.trans_b, 1);
        assert_shape(&tensor(&l, g->inputs[1])->shape, "16x3");
        assert_shape(&tensor(&l, g->outputs[0])->shape, "2x16");
        unload(&l);
    }
    loaded l = load_ok("small/lstm_layout1_op14.onnx", NULL);
    assert_shape(&named(&l, "y")->shape, "1x2x1x4");
    assert_shape(&named(&l, "y_h")->shape, "1x1x4");
    unload(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_models),        cmocka_unit_test(test_conv_attrs),
        cmocka_unit_test(test_op_models),           cmocka_unit_test(test_elementwise_attrs),
        cmocka_unit_test(test_norm_attrs),          cmocka_unit_test(test_window_attrs),
        cmocka_unit_test(test_resize_attrs),        cmocka_unit_test(test_indexing_attrs),
        cmocka_unit_test(test_fold_values),         cmocka_unit_test(test_transformer_attrs),
        cmocka_unit_test(test_cache_and_training), cmocka_unit_test(test_lstm),
        cmocka_unit_test(test_pool_and_gemm_attrs), cmocka_unit_test(test_activation_attrs),
        cmocka_unit_test(test_data_movement_attrs), cmocka_unit_test(test_weights),
        cmocka_unit_test(test_weight_payloads),     cmocka_unit_test(test_typed_fields),
        cmocka_unit_test(test_constants),           cmocka_unit_test(test_missing_shape),
        cmocka_unit_test(test_overrides),           cmocka_unit_test(test_external_data),
        cmocka_unit_test(test_external_escape),     cmocka_unit_test(test_external_offset_overflow),
        cmocka_unit_test(test_given_values),        cmocka_unit_test(test_given_value_errors),
        cmocka_unit_test(test_external_fifo),       cmocka_unit_test(test_model_not_regular),
        cmocka_unit_test(test_bad_files),           cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_fuzz_regressions),    cmocka_unit_test(test_api_errors),
        cmocka_unit_test(test_torch_exports),       cmocka_unit_test(test_torch_resized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
