/*
 * math.c - element-wise operators: the unary functions and activations
 * (OPSCHED_OP_UNARY), the binary ones (OPSCHED_OP_BINARY, PRelu among
 * them), the variadic Sum, Mean, Max and Min (chains of binary nodes; Mean
 * divides by a constant n of the result's type), Where, and
 * QuantizeLinear / DequantizeLinear.
 *
 * The host evaluation of every unary function lives here too, so that
 * folding (fold.c) computes what the graph would.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

/* ---- the unary functions ------------------------------------------------------ */

typedef struct unary_def {
    const char *name;
    opsched_unary_fn fn;
    float alpha, beta, gamma; /* ONNX defaults */
} unary_def;

static const unary_def unary_defs[] = {
    {"Abs", OPSCHED_UNARY_ABS, 0, 0, 0},
    {"Neg", OPSCHED_UNARY_NEG, 0, 0, 0},
    {"Exp", OPSCHED_UNARY_EXP, 0, 0, 0},
    {"Log", OPSCHED_UNARY_LOG, 0, 0, 0},
    {"Reciprocal", OPSCHED_UNARY_RECIPROCAL, 0, 0, 0},
    {"Floor", OPSCHED_UNARY_FLOOR, 0, 0, 0},
    {"Ceil", OPSCHED_UNARY_CEIL, 0, 0, 0},
    {"Round", OPSCHED_UNARY_ROUND, 0, 0, 0},
    {"Sign", OPSCHED_UNARY_SIGN, 0, 0, 0},
    {"Sin", OPSCHED_UNARY_SIN, 0, 0, 0},
    {"Cos", OPSCHED_UNARY_COS, 0, 0, 0},
    {"Tan", OPSCHED_UNARY_TAN, 0, 0, 0},
    {"Asin", OPSCHED_UNARY_ASIN, 0, 0, 0},
    {"Acos", OPSCHED_UNARY_ACOS, 0, 0, 0},
    {"Atan", OPSCHED_UNARY_ATAN, 0, 0, 0},
    {"Sinh", OPSCHED_UNARY_SINH, 0, 0, 0},
    {"Cosh", OPSCHED_UNARY_COSH, 0, 0, 0},
    {"Asinh", OPSCHED_UNARY_ASINH, 0, 0, 0},
    {"Acosh", OPSCHED_UNARY_ACOSH, 0, 0, 0},
    {"Atanh", OPSCHED_UNARY_ATANH, 0, 0, 0},
    {"IsNaN", OPSCHED_UNARY_ISNAN, 0, 0, 0},
    {"IsInf", OPSCHED_UNARY_ISINF, 1, 1, 0},
    {"Not", OPSCHED_UNARY_NOT, 0, 0, 0},
    {"BitwiseNot", OPSCHED_UNARY_BITWISE_NOT, 0, 0, 0},
    {"LeakyRelu", OPSCHED_UNARY_LEAKY_RELU, 0.01f, 0, 0},
    {"Elu", OPSCHED_UNARY_ELU, 1.0f, 0, 0},
    {"Selu", OPSCHED_UNARY_SELU, 1.67326319217681884765625f, 0, 1.05070102214813232421875f},
    {"Celu", OPSCHED_UNARY_CELU, 1.0f, 0, 0},
    {"ThresholdedRelu", OPSCHED_UNARY_THRESHOLDED_RELU, 1.0f, 0, 0},
    {"Softplus", OPSCHED_UNARY_SOFTPLUS, 0, 0, 0},
    {"Softsign", OPSCHED_UNARY_SOFTSIGN, 0, 0, 0},
    {"Mish", OPSCHED_UNARY_MISH, 0, 0, 0},
    {"Shrink", OPSCHED_UNARY_SHRINK, 0, 0.5f, 0},
    {"Swish", OPSCHED_UNARY_SWISH, 1.0f, 0, 0},
};

double os_onnx_eval_unary(opsched_unary_fn fn, double x, float alpha, float beta, float gamma)
{
    opsched_unary_attr ua = {.fn = fn, .alpha = alpha, .beta = beta, .gamma = gamma};
    return opsched_unary_eval(&ua, x);
}

opsched_status os_onnx_unary_attrs(os_loader *L, int node, const char *op, int *fn,
                                   opsched_unary_attr *out)
{
    *fn = -1;
    const unary_def *d = NULL;
    for (size_t i = 0; i < OS_ARRAY_LEN(unary_defs); i++)
        if (strcmp(unary_defs[i].name, op) == 0) d = &unary_defs[i];
    if (!d) return OPSCHED_OK;
    memset(out, 0, sizeof(*out));
    out->fn = d->fn;
    out->alpha = d->alpha;
    out->beta = d->beta;
    out->gamma = d->gamma;
    if (d->fn == OPSCHED_UNARY_SHRINK) {
        OS_TRY(os_onnx_attr_float(L, node, "bias", &out->alpha));
        OS_TRY(os_onnx_attr_float(L, node, "lambd", &out->beta));
    } else if (d->fn == OPSCHED_UNARY_ISINF) {
        int64_t pos = 1, neg = 1;
        OS_TRY(os_onnx_attr_int(L, node, "detect_positive", &pos));
        OS_TRY(os_onnx_attr_int(L, node, "detect_negative", &neg));
        out->alpha = pos != 0;
        out->beta = neg != 0;
    } else {
        OS_TRY(os_onnx_attr_float(L, node, "alpha", &out->alpha));
        if (d->fn == OPSCHED_UNARY_SELU) OS_TRY(os_onnx_attr_float(L, node, "gamma", &out->gamma));
    }
    if (d->fn == OPSCHED_UNARY_CELU && out->alpha == 0)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "alpha must not be 0");
    *fn = (int)d->fn;
    return OPSCHED_OK;
}

/* ---- the binary functions ----------------------------------------------------- */

static const struct {
    const char *name;
    opsched_binary_fn fn;
} binary_defs[] = {
    {"Min", OPSCHED_BINARY_MIN},
    {"Max", OPSCHED_BINARY_MAX},
    {"Equal", OPSCHED_BINARY_EQUAL},
    {"Less", OPSCHED_BINARY_LESS},
    {"LessOrEqual", OPSCHED_BINARY_LESS_EQUAL},
    {"Greater", OPSCHED_BINARY_GREATER},
    {"GreaterOrEqual", OPSCHED_BINARY_GREATER_EQUAL},
    {"And", OPSCHED_BINARY_AND},
    {"Or", OPSCHED_BINARY_OR},
    {"Xor", OPSCHED_BINARY_XOR},
    {"BitwiseAnd", OPSCHED_BINARY_BITWISE_AND},
    {"BitwiseOr", OPSCHED_BINARY_BITWISE_OR},
    {"BitwiseXor", OPSCHED_BINARY_BITWISE_XOR},
    {"PRelu", OPSCHED_BINARY_PRELU},
    {"Mod", OPSCHED_BINARY_MOD},
    {"BitShift", OPSCHED_BINARY_SHIFT_LEFT},
};

opsched_status os_onnx_binary_fn(os_loader *L, int node, const char *op, int *fn)
{
    *fn = -1;
    for (size_t i = 0; i < OS_ARRAY_LEN(binary_defs); i++)
        if (strcmp(binary_defs[i].name, op) == 0) *fn = (int)binary_defs[i].fn;
    if (*fn == OPSCHED_BINARY_MOD) {
        int64_t fm = 0;
        OS_TRY(os_onnx_attr_int(L, node, "fmod", &fm));
        if (fm != 0 && fm != 1)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "fmod must be 0 or 1");
        if (fm) *fn = OPSCHED_BINARY_FMOD;
    } else if (*fn == OPSCHED_BINARY_SHIFT_LEFT) {
        char buf[16];
        const char *dir = "";
        OS_TRY(os_onnx_attr_string(L, node, "direction", buf, sizeof(buf), &dir));
        if (strcmp(dir, "RIGHT") == 0)
            *fn = OPSCHED_BINARY_SHIFT_RIGHT;
        else if (strcmp(dir, "LEFT") != 0)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE,
                                     "direction must be \"LEFT\" or \"RIGHT\", not \"%s\"", dir);
    }
    return OPSCHED_OK;
}

/* The broadcast shape of two graph tensors, bounded. */
static opsched_status bcast_ok(os_loader *L, int node, int a, int b)
{
    opsched_shape o;
    OS_TRY(os_onnx_broadcast(L, node, &os_onnx_t(L, a)->shape, &os_onnx_t(L, b)->shape, &o));
    return os_onnx_check_dims(L, node, &o);
}

/* ---- conversion --------------------------------------------------------------- */

static opsched_status unary(os_loader *L, int node, const opsched_unary_attr *ua)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.unary = *ua;
    int x = os_onnx_in(L, node, 0);
    return os_onnx_emit(L, node, OPSCHED_OP_UNARY, &a, &x, 1, 1);
}

static opsched_status binary(os_loader *L, int node, opsched_binary_fn fn)
{
    int ids[2];
    OS_TRY(os_onnx_in_id(L, node, 0, &ids[0]));
    OS_TRY(os_onnx_in_id(L, node, 1, &ids[1]));
    if (os_onnx_num_file_in(L, node) != 2)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "takes two inputs, has %d",
                                 os_onnx_num_file_in(L, node));
    OS_TRY(bcast_ok(L, node, ids[0], ids[1]));
    if (fn == OPSCHED_BINARY_PRELU) {
        /* The slope broadcasts to X, never X to the slope. */
        opsched_shape o;
        const opsched_shape *xs = &os_onnx_t(L, ids[0])->shape;
        OS_TRY(os_onnx_broadcast(L, node, xs, &os_onnx_t(L, ids[1])->shape, &o));
        if (!opsched_shape_equal(&o, xs)) {
            char b1[128], b2[128];
            return os_onnx_node_fail(
                L, node, OPSCHED_ERR_SHAPE, "slope %s does not broadcast to the input %s",
                opsched_shape_format(&os_onnx_t(L, ids[1])->shape, b1, sizeof(b1)),
                opsched_shape_format(xs, b2, sizeof(b2)));
        }
    }
    return os_onnx_binfn(L, node, "op", fn, ids[0], ids[1], 0, NULL);
}

/* Sum, Mean, Max, Min: one binary node per further operand. */
static opsched_status variadic(os_loader *L, int node, const char *op)
{
    int n = os_onnx_num_file_in(L, node), acc;
    if (n < 1) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "takes one or more inputs");
    int mean = strcmp(op, "Mean") == 0;
    int sum = mean || strcmp(op, "Sum") == 0;
    opsched_binary_fn fn = strcmp(op, "Max") == 0 ? OPSCHED_BINARY_MAX : OPSCHED_BINARY_MIN;
    OS_TRY(os_onnx_in_id(L, node, 0, &acc));
    if (n == 1)
        return os_onnx_step(L, node, "copy", 0, OPSCHED_OP_IDENTITY, NULL, &acc, 1, 1, NULL);
    for (int k = 1; k < n; k++) {
        int b, last = k == n - 1 && !mean;
        char tag[32];
        snprintf(tag, sizeof(tag), "%s%d", sum ? "sum" : "acc", k);
        OS_TRY(os_onnx_in_id(L, node, k, &b));
        OS_TRY(bcast_ok(L, node, acc, b));
        if (sum)
            OS_TRY(os_onnx_binop(L, node, tag, OPSCHED_OP_ADD, acc, b, last ? 0 : OS_TMP, &acc));
        else
            OS_TRY(os_onnx_binfn(L, node, tag, fn, acc, b, last ? 0 : OS_TMP, &acc));
    }
    if (!mean) return OPSCHED_OK;
    int cnt;
    OS_TRY(os_onnx_scalar(L, node, "count", os_onnx_t(L, acc)->dtype, (double)n, &cnt));
    return os_onnx_binop(L, node, "mean", OPSCHED_OP_DIV, acc, cnt, 0, NULL);
}

static opsched_status where(os_loader *L, int node)
{
    int ids[3];
    for (int k = 0; k < 3; k++)
        OS_TRY(os_onnx_in_id(L, node, k, &ids[k]));
    opsched_shape t, o;
    OS_TRY(
        os_onnx_broadcast(L, node, &os_onnx_t(L, ids[0])->shape, &os_onnx_t(L, ids[1])->shape, &t));
    OS_TRY(os_onnx_broadcast(L, node, &t, &os_onnx_t(L, ids[2])->shape, &o));
    OS_TRY(os_onnx_check_dims(L, node, &o));
    return os_onnx_step(L, node, "where", 0, OPSCHED_OP_WHERE, NULL, ids, 3, 1, NULL);
}

/* ---- quantisation ------------------------------------------------------------- */

static opsched_status quant_common(os_loader *L, int node, opsched_op_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->quant.axis = 1;
    a->quant.saturate = 1;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &a->quant.axis));
    OS_TRY(os_onnx_attr_int(L, node, "block_size", &a->quant.block_size));
    if (a->quant.block_size < 0 || a->quant.block_size > OS_ONNX_MAX_DIM)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "block_size %lld is invalid",
                                 (long long)a->quant.block_size);
    return OPSCHED_OK;
}

static const char *out_name(const os_loader *L, int node)
{
    int y = os_onnx_out(L, node, 0);
    return y >= 0 ? L->vals[y].name : "output";
}

static opsched_status dequantize(os_loader *L, int node)
{
    opsched_op_attr a;
    OS_TRY(quant_common(L, node, &a));
    int64_t out_dt = 0;
    if (L->opset >= 23) OS_TRY(os_onnx_attr_int(L, node, "output_dtype", &out_dt));
    int ids[3] = {-1, -1, -1}, n = os_onnx_in(L, node, 2) >= 0 ? 3 : 2;
    for (int k = 0; k < n; k++)
        if (k != 1 || !out_dt) OS_TRY(os_onnx_in_id(L, node, k, &ids[k]));
    if (out_dt) {
        /* The output type is also the precision of the multiplication. */
        opsched_dtype dt;
        OS_TRY(os_onnx_dtype(L->ctx, (int32_t)out_dt, out_name(L, node), &dt));
        OS_TRY(os_onnx_in_id_as(L, node, 1, "scale", dt, &ids[1]));
    }
    if (n == 3 && os_onnx_t(L, ids[2])->dtype != os_onnx_t(L, ids[0])->dtype)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "the zero point is %s, the input %s",
                                 opsched_dtype_name(os_onnx_t(L, ids[2])->dtype),
                                 opsched_dtype_name(os_onnx_t(L, ids[0])->dtype));
    return os_onnx_step(L, node, "dequantize", 0, OPSCHED_OP_DEQUANTIZE, &a, ids, n, 1, NULL);
}

static opsched_status quantize(os_loader *L, int node)
{
    opsched_op_attr a;
    OS_TRY(quant_common(L, node, &a));
    int64_t out_dt = 0, sat = 1, precision = 0;
    if (L->opset >= 21) OS_TRY(os_onnx_attr_int(L, node, "output_dtype", &out_dt));
    if (L->opset >= 19) OS_TRY(os_onnx_attr_int(L, node, "saturate", &sat));
    if (L->opset >= 23) OS_TRY(os_onnx_attr_int(L, node, "precision", &precision));
    a.quant.saturate = sat != 0;
    int ids[3] = {-1, -1, -1};
    OS_TRY(os_onnx_in_id(L, node, 0, &ids[0]));
    OS_TRY(os_onnx_in_id(L, node, 1, &ids[1]));
    if (os_onnx_in(L, node, 2) >= 0) OS_TRY(os_onnx_in_id(L, node, 2, &ids[2]));
    opsched_dtype to = OPSCHED_UINT8;
    if (ids[2] >= 0) {
        to = os_onnx_t(L, ids[2])->dtype;
        if (out_dt && os_onnx_elem_of(to) != out_dt)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE,
                                     "output_dtype %s differs from the zero point's type %s",
                                     os_onnx_elem_name((int32_t)out_dt), opsched_dtype_name(to));
    } else if (out_dt) {
        OS_TRY(os_onnx_dtype(L->ctx, (int32_t)out_dt, out_name(L, node), &to));
    }
    if (to != OPSCHED_INT8 && to != OPSCHED_UINT8)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "quantizing to %s is not supported (int8 and uint8 are)",
                                 opsched_dtype_name(to));
    if (ids[2] < 0 && to != OPSCHED_UINT8) {
        /* The graph takes the output type from the zero point. */
        const opsched_shape *ss = &os_onnx_t(L, ids[1])->shape;
        int64_t zeros[1] = {0};
        if (opsched_shape_numel(ss) != 1) {
            int64_t n = opsched_shape_numel(ss);
            if (n > OS_ONNX_FOLD_MAX_ELEMS)
                return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, "too many scales");
            os_cval *z;
            OS_TRY(os_onnx_cval_new(L, OS_ONNX_INT64, ss, &z));
            OS_TRY(os_onnx_const(L, node, "zero_point", to, ss, NULL, z->i, &ids[2]));
        } else {
            OS_TRY(os_onnx_const(L, node, "zero_point", to, ss, NULL, zeros, &ids[2]));
        }
    }
    if (precision) {
        /* The division happens in this type. */
        opsched_dtype pd;
        if (os_onnx_dtype(L->ctx, (int32_t)precision, "precision", &pd) != OPSCHED_OK) {
            opsched_ctx_clear_error(L->ctx);
            return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                     "precision %s is not supported",
                                     os_onnx_elem_name((int32_t)precision));
        }
        if (pd != os_onnx_t(L, ids[0])->dtype)
            OS_TRY(os_onnx_in_id_as(L, node, 0, "x", pd, &ids[0]));
        if (pd != os_onnx_t(L, ids[1])->dtype)
            OS_TRY(os_onnx_in_id_as(L, node, 1, "scale", pd, &ids[1]));
    }
    return os_onnx_step(L, node, "quantize", 0, OPSCHED_OP_QUANTIZE, &a, ids, ids[2] >= 0 ? 3 : 2,
                        1, NULL);
}

opsched_status os_onnx_convert_math(os_loader *L, int node, const char *op, int *done)
{
    *done = 1;
    if (strcmp(op, "Sum") == 0 || strcmp(op, "Mean") == 0 || strcmp(op, "Max") == 0 ||
        strcmp(op, "Min") == 0)
        return variadic(L, node, op);
    if (strcmp(op, "Where") == 0) return where(L, node);
    if (strcmp(op, "QuantizeLinear") == 0) return quantize(L, node);
    if (strcmp(op, "DequantizeLinear") == 0) return dequantize(L, node);
    int fn;
    opsched_unary_attr ua;
    OS_TRY(os_onnx_unary_attrs(L, node, op, &fn, &ua));
    if (fn >= 0) {
        if (os_onnx_in(L, node, 0) < 0)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "the input is missing");
        return unary(L, node, &ua);
    }
    OS_TRY(os_onnx_binary_fn(L, node, op, &fn));
    if (fn >= 0) return binary(L, node, (opsched_binary_fn)fn);
    *done = 0;
    return OPSCHED_OK;
}
