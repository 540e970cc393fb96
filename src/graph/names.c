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
};

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
