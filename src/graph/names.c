/*
 * names.c - operator and dtype names, shape helpers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "graph/graph_impl.h"

static const char *const op_names[OPSCHED_OP_COUNT] = {
    [OPSCHED_OP_CONV] = "Conv",
    [OPSCHED_OP_GEMM] = "Gemm",
    [OPSCHED_OP_MATMUL] = "MatMul",
    [OPSCHED_OP_MAXPOOL] = "MaxPool",
    [OPSCHED_OP_AVGPOOL] = "AveragePool",
    [OPSCHED_OP_GLOBALAVGPOOL] = "GlobalAveragePool",
    [OPSCHED_OP_GLOBALMAXPOOL] = "GlobalMaxPool",
    [OPSCHED_OP_RELU] = "Relu",
    [OPSCHED_OP_CLIP] = "Clip",
    [OPSCHED_OP_SIGMOID] = "Sigmoid",
    [OPSCHED_OP_TANH] = "Tanh",
    [OPSCHED_OP_GELU] = "Gelu",
    [OPSCHED_OP_ERF] = "Erf",
    [OPSCHED_OP_HARDSIGMOID] = "HardSigmoid",
    [OPSCHED_OP_HARDSWISH] = "HardSwish",
    [OPSCHED_OP_SQRT] = "Sqrt",
    [OPSCHED_OP_ADD] = "Add",
    [OPSCHED_OP_SUB] = "Sub",
    [OPSCHED_OP_MUL] = "Mul",
    [OPSCHED_OP_DIV] = "Div",
    [OPSCHED_OP_POW] = "Pow",
    [OPSCHED_OP_CONCAT] = "Concat",
    [OPSCHED_OP_SPLIT] = "Split",
    [OPSCHED_OP_SLICE] = "Slice",
    [OPSCHED_OP_GATHER] = "Gather",
    [OPSCHED_OP_BATCHNORM] = "BatchNormalization",
    [OPSCHED_OP_SOFTMAX] = "Softmax",
    [OPSCHED_OP_LRN] = "LRN",
    [OPSCHED_OP_LAYERNORM] = "LayerNormalization",
    [OPSCHED_OP_REDUCEMEAN] = "ReduceMean",
    [OPSCHED_OP_TRANSPOSE] = "Transpose",
    [OPSCHED_OP_PAD] = "Pad",
    [OPSCHED_OP_EXPAND] = "Expand",
    [OPSCHED_OP_FLATTEN] = "Flatten",
    [OPSCHED_OP_RESHAPE] = "Reshape",
    [OPSCHED_OP_IDENTITY] = "Identity",
    [OPSCHED_OP_DROPOUT] = "Dropout",
    [OPSCHED_OP_UNARY] = "Unary",
    [OPSCHED_OP_BINARY] = "Binary",
    [OPSCHED_OP_WHERE] = "Where",
    [OPSCHED_OP_CAST] = "Cast",
    [OPSCHED_OP_REDUCE] = "Reduce",
    [OPSCHED_OP_ARGMAX] = "ArgMax",
    [OPSCHED_OP_ARGMIN] = "ArgMin",
    [OPSCHED_OP_LOGSOFTMAX] = "LogSoftmax",
    [OPSCHED_OP_HARDMAX] = "Hardmax",
    [OPSCHED_OP_CUMSUM] = "CumSum",
    [OPSCHED_OP_TOPK] = "TopK",
    [OPSCHED_OP_GATHER_ELEMENTS] = "GatherElements",
    [OPSCHED_OP_GATHER_ND] = "GatherND",
    [OPSCHED_OP_SCATTER_ELEMENTS] = "ScatterElements",
    [OPSCHED_OP_SCATTER_ND] = "ScatterND",
    [OPSCHED_OP_TILE] = "Tile",
    [OPSCHED_OP_TRILU] = "Trilu",
    [OPSCHED_OP_ONEHOT] = "OneHot",
    [OPSCHED_OP_RESIZE] = "Resize",
    [OPSCHED_OP_GROUPNORM] = "GroupNormalization",
    [OPSCHED_OP_CONV_TRANSPOSE] = "ConvTranspose",
    [OPSCHED_OP_QUANTIZE] = "QuantizeLinear",
    [OPSCHED_OP_DEQUANTIZE] = "DequantizeLinear",
    [OPSCHED_OP_ATTENTION] = "Attention",
    [OPSCHED_OP_BATCHNORM_TRAIN] = "BatchNormTraining",
    [OPSCHED_OP_BATCHNORM_GRAD] = "BatchNormBackward",
    [OPSCHED_OP_CONV_GRAD_FILTER] = "ConvBackwardFilter",
};

static const char *const unary_names[OPSCHED_UNARY_FN_COUNT] = {
    [OPSCHED_UNARY_ABS] = "Abs",
    [OPSCHED_UNARY_NEG] = "Neg",
    [OPSCHED_UNARY_EXP] = "Exp",
    [OPSCHED_UNARY_LOG] = "Log",
    [OPSCHED_UNARY_RECIPROCAL] = "Reciprocal",
    [OPSCHED_UNARY_FLOOR] = "Floor",
    [OPSCHED_UNARY_CEIL] = "Ceil",
    [OPSCHED_UNARY_ROUND] = "Round",
    [OPSCHED_UNARY_SIGN] = "Sign",
    [OPSCHED_UNARY_SIN] = "Sin",
    [OPSCHED_UNARY_COS] = "Cos",
    [OPSCHED_UNARY_TAN] = "Tan",
    [OPSCHED_UNARY_ASIN] = "Asin",
    [OPSCHED_UNARY_ACOS] = "Acos",
    [OPSCHED_UNARY_ATAN] = "Atan",
    [OPSCHED_UNARY_SINH] = "Sinh",
    [OPSCHED_UNARY_COSH] = "Cosh",
    [OPSCHED_UNARY_ASINH] = "Asinh",
    [OPSCHED_UNARY_ACOSH] = "Acosh",
    [OPSCHED_UNARY_ATANH] = "Atanh",
    [OPSCHED_UNARY_ISNAN] = "IsNaN",
    [OPSCHED_UNARY_ISINF] = "IsInf",
    [OPSCHED_UNARY_NOT] = "Not",
    [OPSCHED_UNARY_BITWISE_NOT] = "BitwiseNot",
    [OPSCHED_UNARY_LEAKY_RELU] = "LeakyRelu",
    [OPSCHED_UNARY_ELU] = "Elu",
    [OPSCHED_UNARY_SELU] = "Selu",
    [OPSCHED_UNARY_CELU] = "Celu",
    [OPSCHED_UNARY_THRESHOLDED_RELU] = "ThresholdedRelu",
    [OPSCHED_UNARY_SOFTPLUS] = "Softplus",
    [OPSCHED_UNARY_SOFTSIGN] = "Softsign",
    [OPSCHED_UNARY_MISH] = "Mish",
    [OPSCHED_UNARY_SHRINK] = "Shrink",
    [OPSCHED_UNARY_SWISH] = "Swish",
};

static const char *const binary_names[OPSCHED_BINARY_FN_COUNT] = {
    [OPSCHED_BINARY_MOD] = "Mod",
    [OPSCHED_BINARY_FMOD] = "Mod(fmod)",
    [OPSCHED_BINARY_MIN] = "Min",
    [OPSCHED_BINARY_MAX] = "Max",
    [OPSCHED_BINARY_EQUAL] = "Equal",
    [OPSCHED_BINARY_LESS] = "Less",
    [OPSCHED_BINARY_LESS_EQUAL] = "LessOrEqual",
    [OPSCHED_BINARY_GREATER] = "Greater",
    [OPSCHED_BINARY_GREATER_EQUAL] = "GreaterOrEqual",
    [OPSCHED_BINARY_AND] = "And",
    [OPSCHED_BINARY_OR] = "Or",
    [OPSCHED_BINARY_XOR] = "Xor",
    [OPSCHED_BINARY_SHIFT_LEFT] = "BitShift(left)",
    [OPSCHED_BINARY_SHIFT_RIGHT] = "BitShift(right)",
    [OPSCHED_BINARY_BITWISE_AND] = "BitwiseAnd",
    [OPSCHED_BINARY_BITWISE_OR] = "BitwiseOr",
    [OPSCHED_BINARY_BITWISE_XOR] = "BitwiseXor",
    [OPSCHED_BINARY_PRELU] = "PRelu",
};

static const char *const reduce_names[OPSCHED_REDUCE_FN_COUNT] = {
    [OPSCHED_REDUCE_MEAN] = "ReduceMean",
    [OPSCHED_REDUCE_SUM] = "ReduceSum",
    [OPSCHED_REDUCE_MAX] = "ReduceMax",
    [OPSCHED_REDUCE_MIN] = "ReduceMin",
    [OPSCHED_REDUCE_PROD] = "ReduceProd",
    [OPSCHED_REDUCE_L1] = "ReduceL1",
    [OPSCHED_REDUCE_L2] = "ReduceL2",
    [OPSCHED_REDUCE_LOGSUM] = "ReduceLogSum",
    [OPSCHED_REDUCE_LOGSUMEXP] = "ReduceLogSumExp",
    [OPSCHED_REDUCE_SUMSQUARE] = "ReduceSumSquare",
};

const char *opsched_unary_fn_name(opsched_unary_fn fn)
{
    return (int)fn >= 0 && fn < OPSCHED_UNARY_FN_COUNT ? unary_names[fn] : "?";
}

const char *opsched_binary_fn_name(opsched_binary_fn fn)
{
    return (int)fn >= 0 && fn < OPSCHED_BINARY_FN_COUNT ? binary_names[fn] : "?";
}

const char *opsched_reduce_fn_name(opsched_reduce_fn fn)
{
    return (int)fn >= 0 && fn < OPSCHED_REDUCE_FN_COUNT ? reduce_names[fn] : "?";
}

const char *opsched_node_op_name(const opsched_node *n)
{
    if (!n) return "?";
    switch (n->op) {
    case OPSCHED_OP_UNARY: return opsched_unary_fn_name(n->attr.unary.fn);
    case OPSCHED_OP_BINARY: return opsched_binary_fn_name(n->attr.binary.fn);
    case OPSCHED_OP_REDUCE: return opsched_reduce_fn_name(n->attr.reduce.fn);
    default: return opsched_op_name(n->op);
    }
}

int opsched_dtype_is_float(opsched_dtype dt)
{
    return dt == OPSCHED_F32 || dt == OPSCHED_F16 || dt == OPSCHED_BF16;
}

const char *opsched_op_name(opsched_op_kind op)
{
    if ((int)op < 0 || op >= OPSCHED_OP_COUNT) return "?";
    return op_names[op];
}

opsched_status opsched_op_from_name(const char *name, opsched_op_kind *out)
{
    if (!name || !out) return OPSCHED_ERR_INVALID_ARG;
    for (int i = 0; i < OPSCHED_OP_COUNT; i++) {
        if (strcmp(op_names[i], name) == 0) {
            *out = (opsched_op_kind)i;
            return OPSCHED_OK;
        }
    }
    /* The functions of the generic kinds name their kind (what
     * opsched_node_op_name writes, e.g. in signatures). */
    for (int i = 0; i < OPSCHED_UNARY_FN_COUNT; i++)
        if (strcmp(opsched_unary_fn_name((opsched_unary_fn)i), name) == 0) {
            *out = OPSCHED_OP_UNARY;
            return OPSCHED_OK;
        }
    for (int i = 0; i < OPSCHED_BINARY_FN_COUNT; i++)
        if (strcmp(opsched_binary_fn_name((opsched_binary_fn)i), name) == 0) {
            *out = OPSCHED_OP_BINARY;
            return OPSCHED_OK;
        }
    for (int i = 0; i < OPSCHED_REDUCE_FN_COUNT; i++)
        if (strcmp(opsched_reduce_fn_name((opsched_reduce_fn)i), name) == 0) {
            *out = OPSCHED_OP_REDUCE;
            return OPSCHED_OK;
        }
    return OPSCHED_ERR_NOT_FOUND;
}

int opsched_op_is_view(opsched_op_kind op)
{
    return op == OPSCHED_OP_FLATTEN || op == OPSCHED_OP_RESHAPE || op == OPSCHED_OP_IDENTITY ||
           op == OPSCHED_OP_DROPOUT;
}

static const struct {
    const char *name;
    size_t size;
} dtypes[OPSCHED_DTYPE_COUNT] = {
    [OPSCHED_F32] = {"f32", 4},   [OPSCHED_F16] = {"f16", 2},     [OPSCHED_BF16] = {"bf16", 2},
    [OPSCHED_INT8] = {"int8", 1}, [OPSCHED_INT32] = {"int32", 4}, [OPSCHED_INT64] = {"int64", 8},
    [OPSCHED_UINT8] = {"uint8", 1}, [OPSCHED_BOOL] = {"bool", 1},
};

const char *opsched_dtype_name(opsched_dtype dt)
{
    if ((int)dt < 0 || dt >= OPSCHED_DTYPE_COUNT) return "?";
    return dtypes[dt].name;
}

opsched_status opsched_dtype_from_name(const char *name, opsched_dtype *out)
{
    if (!name || !out) return OPSCHED_ERR_INVALID_ARG;
    for (int i = 0; i < OPSCHED_DTYPE_COUNT; i++) {
        if (strcmp(dtypes[i].name, name) == 0) {
            *out = (opsched_dtype)i;
            return OPSCHED_OK;
        }
    }
    if (strcmp(name, "fp32") == 0 || strcmp(name, "float32") == 0) {
        *out = OPSCHED_F32;
        return OPSCHED_OK;
    }
    if (strcmp(name, "fp16") == 0 || strcmp(name, "float16") == 0) {
        *out = OPSCHED_F16;
        return OPSCHED_OK;
    }
    return OPSCHED_ERR_NOT_FOUND;
}

size_t opsched_dtype_size(opsched_dtype dt)
{
    if ((int)dt < 0 || dt >= OPSCHED_DTYPE_COUNT) return 0;
    return dtypes[dt].size;
}

int64_t opsched_shape_numel(const opsched_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) {
        if (!os_mul_ok(n, s->d[i], &n)) return -1;
    }
    return n;
}

int opsched_shape_equal(const opsched_shape *a, const opsched_shape *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->d[i] != b->d[i]) return 0;
    return 1;
}

opsched_status opsched_shape_parse(const char *text, opsched_shape *out)
{
    if (!text || !out) return OPSCHED_ERR_INVALID_ARG;
    opsched_shape s = {0};
    const char *p = text;
    if (*p == '\0') return OPSCHED_ERR_INVALID_ARG;
    for (;;) {
        if (s.ndim == OPSCHED_MAX_DIMS) return OPSCHED_ERR_INVALID_ARG;
        char *end = NULL;
        errno = 0;
        if (*p < '0' || *p > '9') return OPSCHED_ERR_INVALID_ARG;
        long long v = strtoll(p, &end, 10);
        if (errno || end == p || v <= 0 || v > ((int64_t)1 << 40)) return OPSCHED_ERR_INVALID_ARG;
        s.d[s.ndim++] = v;
        p = end;
        if (*p == '\0') break;
        if (*p != 'x' && *p != 'X' && *p != ',') return OPSCHED_ERR_INVALID_ARG;
        p++;
    }
    *out = s;
    return OPSCHED_OK;
}

char *opsched_shape_format(const opsched_shape *s, char *buf, size_t size)
{
    if (!buf || size == 0) return buf;
    buf[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < s->ndim && used < size; i++) {
        int n = snprintf(buf + used, size - used, i ? "x%lld" : "%lld", (long long)s->d[i]);
        if (n < 0) break;
        used += (size_t)n;
    }
    if (s->ndim == 0) snprintf(buf, size, "scalar");
    return buf;
}
