/*
 * inputs.c - which graph inputs are real, and their shapes.
 *
 * torch.onnx.export(export_params=False) writes every parameter as a graph
 * input, indistinguishable in the file from the real inputs.  The rule used
 * here looks at how an input is read, following it through ops that only
 * move data (Identity, Transpose, Reshape, Expand, Slice, ...):
 *
 *   - read at a parameter position (Conv/Gemm weight and bias, MatMul's B,
 *     BatchNormalization's statistics, LayerNormalization's scale and bias)
 *     and nowhere else: a weight;
 *   - read at any other position of a compute op: a real input;
 *   - read only by element-wise ops and Concat (a LayerNorm decomposed into
 *     Mul/Add, ViT's class token and position embedding): a weight when the
 *     other operand depends on a real input, else a real input.
 *
 * An input with a symbolic dimension, or of an integer or bool type, is
 * always real; one nothing reads is
 * left out of the graph.  Real inputs then get their shapes: the file's,
 * then opts->shapes, then opts->batch/height/width on 4-D inputs.
 *
 * Values given for inputs (opts->values) are checked against the
 * declarations; then a backward pass over the nodes finds the values read
 * while loading (a Reshape's shape, ..., and every input of a node whose
 * output is such a value).  A given input among them becomes a host
 * constant, marked as known only because it was given (L->taint), and
 * stays a real input too when a run-time data path also reads it; a given
 * weight gets the value as its payload; a given real input has its shape.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/half.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

static int op_is(const char *op, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(op, list[i]) == 0) return 1;
    return 0;
}

static int weight_pos(const char *op, int pos)
{
    static const char *const w12[] = {"Conv",
                                      "ConvTranspose",
                                      "Gemm",
                                      "LayerNormalization",
                                      "InstanceNormalization",
                                      "GroupNormalization"};
    if (op_is(op, w12, OS_ARRAY_LEN(w12))) return pos == 1 || pos == 2;
    if (strcmp(op, "BatchNormalization") == 0) return pos >= 1 && pos <= 4;
    if (strcmp(op, "MatMul") == 0 || strcmp(op, "PRelu") == 0 ||
        strcmp(op, "RMSNormalization") == 0)
        return pos == 1;
    return 0;
}

static int transparent(const char *op, int pos)
{
    static const char *const ops[] = {"Identity", "Dropout",   "Transpose", "Reshape", "Flatten",
                                      "Squeeze",  "Unsqueeze", "Cast",      "Expand",  "Slice",
                                      "Split",    "Gather",    "Tile"};
    return pos == 0 && op_is(op, ops, OS_ARRAY_LEN(ops));
}

static int ambiguous(const char *op)
{
    static const char *const ops[] = {"Add",    "Sub",   "Mul", "Div", "Pow",
                                      "Concat", "Where", "Max", "Min", "Sum"};
    return op_is(op, ops, OS_ARRAY_LEN(ops));
}

enum { USE_NONE = 0, USE_WEIGHT = 1, USE_AMBIGUOUS = 2, USE_DATA = 4 };

/* How value v (through data-moving ops) is read.  With data_dep given, an
 * ambiguous use whose node has another operand in data_dep counts as a
 * weight use.  seen/stamp avoid visiting a value twice. */
static int scan_uses(os_loader *L, int v, const unsigned char *data_dep, int *stack, int *seen,
                     int stamp)
{
    int flags = USE_NONE, top = 0;
    stack[top++] = v;
    seen[v] = stamp;
    while (top > 0) {
        int u = stack[--top];
        for (int i = L->use_off[u]; i < L->use_off[u + 1]; i++) {
            int n = L->use_node[i], pos = L->use_pos[i];
            const char *op = L->gp->node[n]->op_type;
            if (strcmp(op, "Shape") == 0 || strcmp(op, "Size") == 0) continue;
            if (transparent(op, pos)) {
                for (int k = 0; k < os_onnx_num_out(L, n); k++) {
                    int o = os_onnx_out(L, n, k);
                    if (o >= 0 && seen[o] != stamp) {
                        seen[o] = stamp;
                        stack[top++] = o;
                    }
                }
            } else if (weight_pos(op, pos)) {
                flags |= USE_WEIGHT;
            } else if (ambiguous(op)) {
                int other = 0;
                for (int k = 0; data_dep && k < os_onnx_num_in(L, n); k++) {
                    int w = os_onnx_in(L, n, k);
                    if (k != pos && w >= 0 && data_dep[w]) other = 1;
                }
                flags |= other ? USE_WEIGHT : USE_AMBIGUOUS;
            } else {
                flags |= USE_DATA;
            }
        }
    }
    return flags;
}

static int is_output(const os_loader *L, const char *name)
{
    for (size_t i = 0; i < L->gp->n_output; i++)
        if (L->gp->output[i]->name && strcmp(L->gp->output[i]->name, name) == 0) return 1;
    return 0;
}

static int has_symbolic_dim(const Onnx__ValueInfoProto *vi)
{
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type || !vi->type->tensor_type->shape)
        return 1;
    const Onnx__TensorShapeProto *s = vi->type->tensor_type->shape;
    for (size_t d = 0; d < s->n_dim; d++)
        if (s->dim[d]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
            s->dim[d]->dim_value < 0)
            return 1;
    return 0;
}

/* 1 when every use of value v is as CastLike's second input, which only
 * lends its element type: neither its values nor its shape are needed. */
static int only_type_read(const os_loader *L, int v)
{
    if (L->use_off[v] == L->use_off[v + 1]) return 0;
    for (int u = L->use_off[v]; u < L->use_off[v + 1]; u++)
        if (L->use_pos[u] != 1 || strcmp(L->gp->node[L->use_node[u]]->op_type, "CastLike") != 0)
            return 0;
    return 1;
}

/* Parameters are floating point: an integer or bool input is data. */
static int float_input(const Onnx__ValueInfoProto *vi)
{
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type)
        return 1;
    int32_t e = vi->type->tensor_type->elem_type;
    return e == OS_ONNX_FLOAT || e == OS_ONNX_FLOAT16 || e == OS_ONNX_BFLOAT16 ||
           e == OS_ONNX_DOUBLE || e == OS_ONNX_UNDEFINED;
}

static opsched_status classify(os_loader *L)
{
    opsched_status st = OPSCHED_OK;
    size_t nv = L->n_vals;
    int *stack = malloc(sizeof(int) * (nv + 1));
    int *seen = calloc(nv + 1, sizeof(int));
    unsigned char *dep = calloc(nv + 1, 1);
    int *undecided = malloc(sizeof(int) * (L->gp->n_input + 1));
    int n_und = 0, stamp = 0, any_real = 0;
    if (!stack || !seen || !dep || !undecided) {
        st = OS_NOMEM(L->ctx);
        goto done;
    }
    for (size_t i = 0; i < L->gp->n_input; i++) {
        int v = os_onnx_find(L, L->gp->input[i]->name);
        if (v < 0 || L->vals[v].role != OS_ROLE_INPUT) continue;
        if (os_onnx_num_uses(L, v) == 0) {
            if (!is_output(L, L->vals[v].name)) L->vals[v].role = OS_ROLE_UNUSED;
            continue;
        }
        const Onnx__TypeProto *ty = L->gp->input[i]->type;
        if (only_type_read(L, v) && !is_output(L, L->vals[v].name) && ty &&
            ty->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && ty->tensor_type) {
            /* Not an input of the graph: whatever its shape, symbolic
             * dims included, nothing is fed to it. */
            L->vals[v].role = OS_ROLE_UNUSED;
            L->vals[v].elem = ty->tensor_type->elem_type;
            continue;
        }
        if (has_symbolic_dim(L->gp->input[i]) || !float_input(L->gp->input[i])) {
            any_real = dep[v] = 1;
            continue;
        }
        int f = scan_uses(L, v, NULL, stack, seen, ++stamp);
        if (f & USE_DATA || f == USE_NONE)
            any_real = dep[v] = 1;
        else if (f == USE_WEIGHT)
            L->vals[v].role = OS_ROLE_WEIGHT;
        else
            undecided[n_und++] = v;
    }
    if (n_und > 0 && any_real) {
        /* What depends on a real input: everything downstream of one. */
        for (int k = 0; k < L->n_nodes; k++) {
            int n = L->order[k], hit = 0;
            for (int j = 0; j < os_onnx_num_in(L, n); j++) {
                int w = os_onnx_in(L, n, j);
                if (w >= 0 && dep[w]) hit = 1;
            }
            for (int j = 0; hit && j < os_onnx_num_out(L, n); j++) {
                int o = os_onnx_out(L, n, j);
                if (o >= 0) dep[o] = 1;
            }
        }
        for (int k = 0; k < n_und; k++) {
            int f = scan_uses(L, undecided[k], dep, stack, seen, ++stamp);
            if (f == USE_WEIGHT) L->vals[undecided[k]].role = OS_ROLE_WEIGHT;
        }
    }
done:
    free(stack);
    free(seen);
    free(dep);
    free(undecided);
    return st;
}

/* ---- shapes --------------------------------------------------------------- */

/* The shape the file declares; unknown dims are -1 and *dim_names (if given)
 * gets their dim_param.  A dim_value of 0 is a real dimension of size 0. */
static opsched_status declared_shape(os_loader *L, const Onnx__ValueInfoProto *vi, int32_t *elem,
                                     opsched_shape *s, const char **dim_names, int *has_rank)
{
    memset(s, 0, sizeof(*s));
    *has_rank = 0;
    const Onnx__TypeProto *t = vi->type;
    if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type)
        return OS_FAIL(L->ctx, OPSCHED_ERR_UNSUPPORTED, "input '%s' is not a tensor", vi->name);
    *elem = t->tensor_type->elem_type;
    const Onnx__TensorShapeProto *sp = t->tensor_type->shape;
    if (!sp) return OPSCHED_OK;
    if (sp->n_dim > OPSCHED_MAX_DIMS)
        return OS_FAIL(L->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "input '%s' has %zu dimensions (at most %d)", vi->name, sp->n_dim,
                       OPSCHED_MAX_DIMS);
    *has_rank = 1;
    s->ndim = (int)sp->n_dim;
    for (size_t d = 0; d < sp->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = sp->dim[d];
        s->d[d] = -1;
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            dim->dim_value >= 0) {
            if (dim->dim_value > OS_ONNX_MAX_DIM)
                return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "input '%s': dimension %zu is %lld",
                               vi->name, d, (long long)dim->dim_value);
            s->d[d] = dim->dim_value;
        } else if (dim_names &&
                   dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
            dim_names[d] = dim->dim_param;
        }
    }
    return OPSCHED_OK;
}

/* ---- given values --------------------------------------------------------- */

int os_onnx_load_slot(const char *op, int pos)
{
    static const struct {
        const char *op;
        unsigned mask; /* bit k: input k */
    } slots[] = {{"Reshape", 0x2}, {"Expand", 0x2},  {"Tile", 0x2},   {"ConstantOfShape", 0x1},
                 {"Range", 0x7},   {"Slice", 0x1e},  {"Squeeze", 0x2}, {"Unsqueeze", 0x2},
                 {"Split", 0x2},   {"Pad", 0xe},     {"Resize", 0xe},  {"Upsample", 0x2},
                 {"TopK", 0x2},    {"OneHot", 0x2},  {"CumSum", 0x2},  {"If", 0x1},
                 {"Dropout", 0x6}, {"LSTM", 0x10}};
    if (!op || pos < 0 || pos > 7) return 0;
    if (strncmp(op, "Reduce", 6) == 0) return pos == 1;
    for (size_t i = 0; i < OS_ARRAY_LEN(slots); i++)
        if (strcmp(op, slots[i].op) == 0) return (slots[i].mask >> pos) & 1u;
    return 0;
}

int os_onnx_node_needed(const os_loader *L, int node)
{
    if (!L->need) return 0;
    for (int k = 0; k < os_onnx_num_out(L, node); k++) {
        int v = os_onnx_out(L, node, k);
        if (v >= 0 && L->need[v]) return 1;
    }
    return 0;
}

static const opsched_onnx_value *given_of(const os_loader *L, int v)
{
    return &L->opts.values[L->vals[v].given - 1];
}

static double given_float(const opsched_onnx_value *gv, int64_t k)
{
    switch (gv->dtype) {
    case OPSCHED_F32: return ((const float *)gv->data)[k];
    case OPSCHED_F16: return os_f16_to_f32(((const uint16_t *)gv->data)[k]);
    case OPSCHED_BF16: return os_bf16_to_f32(((const uint16_t *)gv->data)[k]);
    default: return 0;
    }
}

static int64_t given_int(const opsched_onnx_value *gv, int64_t k)
{
    switch (gv->dtype) {
    case OPSCHED_INT8: return ((const int8_t *)gv->data)[k];
    case OPSCHED_INT32: return ((const int32_t *)gv->data)[k];
    case OPSCHED_INT64: return ((const int64_t *)gv->data)[k];
    case OPSCHED_UINT8: return ((const uint8_t *)gv->data)[k];
    case OPSCHED_BOOL: return ((const uint8_t *)gv->data)[k] != 0;
    default: return os_onnx_float_to_int(given_float(gv, k));
    }
}

opsched_status os_onnx_given_payload(os_loader *L, int v, opsched_dtype dt, void **out,
                                     size_t *bytes)
{
    const opsched_onnx_value *gv = given_of(L, v);
    *out = NULL;
    *bytes = 0;
    int64_t n = opsched_shape_numel(&gv->shape); /* checked when it was given */
    int conv = gv->dtype == OPSCHED_F32 && dt == OPSCHED_BF16;
    if (gv->dtype != dt && !conv)
        return OS_FAIL(L->ctx, OPSCHED_ERR_SHAPE, "input %s holds %s, the model's is %s",
                       L->vals[v].name, opsched_dtype_name(gv->dtype), opsched_dtype_name(dt));
    size_t size = (size_t)n * opsched_dtype_size(dt);
    void *buf = malloc(size ? size : 1);
    if (!buf) return OS_NOMEM(L->ctx);
    if (conv) {
        for (int64_t k = 0; k < n; k++)
            ((uint16_t *)buf)[k] = os_f32_to_bf16(((const float *)gv->data)[k]);
    } else if (size) {
        memcpy(buf, gv->data, size);
    }
    *out = buf;
    *bytes = size;
    return OPSCHED_OK;
}

/* "x, w, shape": the inputs a value may be given for, into buf. */
static const char *given_input_list(const os_loader *L, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < L->gp->n_input; i++) {
        int v = os_onnx_find(L, L->gp->input[i]->name);
        if (v < 0 || L->vals[v].init) continue;
        int w = snprintf(buf + at, size - at, "%s%s", at ? ", " : "", L->vals[v].name);
        if (w < 0 || (size_t)w >= size - at) break;
        at += (size_t)w;
    }
    return buf[0] ? buf : "(none)";
}

/* A declared shape as text, "?" (or the dim's name) where it is not fixed. */
static void declared_text(const opsched_shape *s, const char *const *names, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    if (s->ndim == 0) snprintf(buf, size, "[]");
    for (int d = 0; d < s->ndim; d++) {
        int w = s->d[d] >= 0 ? snprintf(buf + at, size - at, "%s%lld", d ? "x" : "",
                                         (long long)s->d[d])
                             : snprintf(buf + at, size - at, "%s%s", d ? "x" : "",
                                        names && names[d] ? names[d] : "?");
        if (w < 0 || (size_t)w >= size - at) break;
        at += (size_t)w;
    }
}

/* Checks value #i against the declaration of the input it names. */
static opsched_status given_check(os_loader *L, int i)
{
    const opsched_onnx_value *gv = &L->opts.values[i];
    if (!gv->name)
        return OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG, "given value #%d has no name", i);
    const Onnx__ValueInfoProto *vi = NULL;
    for (size_t k = 0; k < L->gp->n_input && !vi; k++)
        if (L->gp->input[k]->name && strcmp(L->gp->input[k]->name, gv->name) == 0)
            vi = L->gp->input[k];
    int v = vi ? os_onnx_find(L, gv->name) : -1;
    if (v < 0) {
        char list[512];
        return OS_FAIL(L->ctx, OPSCHED_ERR_NOT_FOUND,
                       "a value is given for '%s', which is not an input of the model (it has: "
                       "%s)",
                       gv->name, given_input_list(L, list, sizeof(list)));
    }
    os_val *x = &L->vals[v];
    if (x->given)
        return OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG, "two values are given for input '%s'",
                       gv->name);
    if ((int)gv->dtype < 0 || gv->dtype >= OPSCHED_DTYPE_COUNT)
        return OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG, "input '%s': the given type %d is unknown",
                       gv->name, (int)gv->dtype);
    if (gv->shape.ndim < 0 || gv->shape.ndim > OPSCHED_MAX_DIMS)
        return OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG, "input '%s': the given rank %d is not 0..%d",
                       gv->name, gv->shape.ndim, OPSCHED_MAX_DIMS);
    for (int d = 0; d < gv->shape.ndim; d++)
        if (gv->shape.d[d] < 0 || gv->shape.d[d] > OS_ONNX_MAX_DIM)
            return OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG,
                           "input '%s': given dimension %d is %lld", gv->name, d,
                           (long long)gv->shape.d[d]);
    int64_t numel = opsched_shape_numel(&gv->shape);
    if (numel < 0 || numel > OS_ONNX_MAX_NUMEL)
        return OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG, "input '%s': the given value is too large",
                       gv->name);
    if (numel > 0 && !gv->data)
        return OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG, "input '%s': the given value has no data",
                       gv->name);
    int32_t elem = 0;
    opsched_shape decl;
    const char *names[OPSCHED_MAX_DIMS] = {0};
    int ranked = 0;
    if (x->init) {
        elem = x->elem;
        decl = x->shape;
        ranked = 1;
    } else {
        OS_TRY(declared_shape(L, vi, &elem, &decl, names, &ranked));
    }
    if (elem != OS_ONNX_UNDEFINED) {
        opsched_dtype dt;
        OS_TRY(os_onnx_dtype(L->ctx, elem, gv->name, &dt));
        if (dt != gv->dtype && !(dt == OPSCHED_BF16 && gv->dtype == OPSCHED_F32))
            return OS_FAIL(L->ctx, OPSCHED_ERR_SHAPE, "input %s holds %s, the model's is %s",
                           gv->name, opsched_dtype_name(gv->dtype), opsched_dtype_name(dt));
    }
    int same = !ranked || decl.ndim == gv->shape.ndim;
    for (int d = 0; same && ranked && d < decl.ndim; d++)
        if (decl.d[d] >= 0 && decl.d[d] != gv->shape.d[d]) same = 0;
    if (!same) {
        char want[160], got[160];
        declared_text(&decl, names, want, sizeof(want));
        declared_text(&gv->shape, NULL, got, sizeof(got));
        return OS_FAIL(L->ctx, OPSCHED_ERR_SHAPE, "input %s is %s, the model's is %s", gv->name,
                       got, want);
    }
    x->given = i + 1;
    x->elem = elem != OS_ONNX_UNDEFINED ? elem : os_onnx_elem_of(gv->dtype);
    return OPSCHED_OK;
}

/* 1 when value v is read as run-time data: by a node that is not evaluated
 * while loading, at an input that is not a load-time one, or as an output. */
static int data_use(const os_loader *L, int v)
{
    if (is_output(L, L->vals[v].name)) return 1;
    for (int u = L->use_off[v]; u < L->use_off[v + 1]; u++) {
        int n = L->use_node[u], pos = L->use_pos[u];
        const char *op = L->gp->node[n]->op_type;
        if (strcmp(op, "Shape") == 0 || strcmp(op, "Size") == 0) continue;
        if (os_onnx_load_slot(op, pos) || os_onnx_node_needed(L, n)) continue;
        return 1;
    }
    return 0;
}

/* The given value of v as a host constant; *out stays NULL when it is too
 * large to hold (it is then known at run time only). */
static opsched_status given_cval(os_loader *L, int v, os_cval **out)
{
    const opsched_onnx_value *gv = given_of(L, v);
    *out = NULL;
    int64_t numel = opsched_shape_numel(&gv->shape);
    if (numel > OS_ONNX_FOLD_MAX_ELEMS || L->fold_used + numel > OS_ONNX_FOLD_BUDGET)
        return OPSCHED_OK;
    os_cval *cv;
    OS_TRY(os_onnx_cval_new(L, L->vals[v].elem, &gv->shape, &cv));
    for (int64_t k = 0; k < numel; k++) {
        if (cv->is_float)
            cv->f[k] = os_onnx_round_to(cv->elem, given_float(gv, k));
        else
            cv->i[k] = os_onnx_wrap_int(cv->elem, given_int(gv, k));
    }
    *out = cv;
    return OPSCHED_OK;
}

static opsched_status given_values(os_loader *L)
{
    if (L->opts.n_values <= 0) return OPSCHED_OK;
    if (!L->opts.values)
        return OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG, "n_values is %d but values is NULL",
                       L->opts.n_values);
    for (int i = 0; i < L->opts.n_values; i++)
        OS_TRY(given_check(L, i));
    size_t nv = L->n_vals;
    L->need = calloc(nv + 1, 1);
    L->taint = calloc(nv + 1, 1);
    if (!L->need || !L->taint) return OS_NOMEM(L->ctx);
    /* Backward from the inputs read while loading: a node whose output is
     * needed needs all its inputs (but Shape and Size, which read none).
     * Consumers come later in the order, so one pass from the end is enough. */
    for (int n = 0; n < L->n_nodes; n++)
        for (int k = 0; k < os_onnx_num_in(L, n); k++) {
            int w = os_onnx_in(L, n, k);
            if (w >= 0 && os_onnx_load_slot(L->gp->node[n]->op_type, k)) L->need[w] = 1;
        }
    for (int k = L->n_nodes - 1; k >= 0; k--) {
        int n = L->order[k];
        const char *op = L->gp->node[n]->op_type;
        if (strcmp(op, "Shape") == 0 || strcmp(op, "Size") == 0 || !os_onnx_node_needed(L, n))
            continue;
        for (int j = 0; j < os_onnx_num_in(L, n); j++) {
            int w = os_onnx_in(L, n, j);
            if (w >= 0) L->need[w] = 1;
        }
    }
    for (size_t v = 0; v < nv; v++) {
        os_val *x = &L->vals[v];
        if (!x->given || x->role == OS_ROLE_UNUSED) continue;
        if (x->init) {
            /* The value replaces the file's default. */
            x->cv = NULL;
            if (L->need[v] || x->role == OS_ROLE_CONST) OS_TRY(given_cval(L, (int)v, &x->cv));
            continue;
        }
        if (!L->need[v]) continue;
        os_cval *cv;
        OS_TRY(given_cval(L, (int)v, &cv));
        if (!cv) continue;
        x->cv = cv;
        L->taint[v] = 1;
        if (x->role == OS_ROLE_INPUT && !data_use(L, (int)v)) {
            x->role = OS_ROLE_CONST;
            x->shape = cv->shape;
            x->has_shape = 1;
        }
    }
    return OPSCHED_OK;
}

/* "input, mask" into buf. */
static const char *real_input_list(const os_loader *L, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < L->gp->n_input; i++) {
        int v = os_onnx_find(L, L->gp->input[i]->name);
        if (v < 0 || L->vals[v].role != OS_ROLE_INPUT || L->vals[v].init) continue;
        int w = snprintf(buf + at, size - at, "%s%s", at ? ", " : "", L->vals[v].name);
        if (w < 0 || (size_t)w >= size - at) break;
        at += (size_t)w;
    }
    return buf[0] ? buf : "(none)";
}

/* One "name:dims" entry; the last ':' separates the name, which may itself
 * contain ':' ("onnx::input_0:1x3"). */
static opsched_status override_one(os_loader *L, char *entry, opsched_shape *shapes, int *ranked)
{
    char *colon = strrchr(entry, ':');
    if (!colon || colon == entry)
        return OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG,
                       "shape override '%s' should be name:dims, e.g. input:1x3x224x224", entry);
    *colon = '\0';
    int v = os_onnx_find(L, entry);
    if (v < 0 || L->vals[v].role != OS_ROLE_INPUT || !L->vals[v].is_graph_input) {
        char list[512];
        return OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG,
                       "shape override names '%s', which is not an input of the model (its "
                       "inputs: %s)",
                       entry, real_input_list(L, list, sizeof(list)));
    }
    opsched_shape s;
    if (opsched_shape_parse(colon + 1, &s) != OPSCHED_OK)
        return OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG, "shape override for '%s': bad dims '%s'",
                       entry, colon + 1);
    if (ranked[v] && s.ndim != shapes[v].ndim)
        return OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG,
                       "shape override for '%s' has %d dimensions, the input has %d", entry, s.ndim,
                       shapes[v].ndim);
    shapes[v] = s;
    ranked[v] = 1;
    return OPSCHED_OK;
}

static int piece_has_colon(const char *p)
{
    for (; *p && *p != ','; p++)
        if (*p == ':') return 1;
    return 0;
}

static opsched_status apply_shape_overrides(os_loader *L, opsched_shape *shapes, int *ranked)
{
    opsched_status st = OPSCHED_OK;
    const char *text = L->opts.shapes;
    if (!text || !*text) return OPSCHED_OK;
    char *copy = NULL;
    OS_TRY(os_strdup(L->ctx, text, &copy));
    /* Entries are separated by ','; a piece without ':' continues the dims
     * of the entry before it, so "x:1,3,224,224" works too. */
    char *entry = copy, *q = copy;
    for (;;) {
        char *e = q;
        while (*e && *e != ',')
            e++;
        if (*e == '\0') {
            st = override_one(L, entry, shapes, ranked);
            break;
        }
        if (piece_has_colon(e + 1)) {
            *e = '\0';
            OS_TRY_GOTO(st, override_one(L, entry, shapes, ranked), done);
            entry = e + 1;
        }
        q = e + 1;
    }
done:
    free(copy);
    return st;
}

static opsched_status add_real_inputs(os_loader *L)
{
    opsched_status st = OPSCHED_OK;
    size_t nv = L->n_vals;
    opsched_shape *shapes = calloc(nv + 1, sizeof(opsched_shape));
    int *ranked = calloc(nv + 1, sizeof(int));
    const char *(*names)[OPSCHED_MAX_DIMS] = calloc(nv + 1, sizeof(*names));
    int32_t *elems = calloc(nv + 1, sizeof(int32_t));
    if (!shapes || !ranked || !names || !elems) {
        st = OS_NOMEM(L->ctx);
        goto done;
    }
    for (size_t i = 0; i < L->gp->n_input; i++) {
        int v = os_onnx_find(L, L->gp->input[i]->name);
        os_val *x = v >= 0 ? &L->vals[v] : NULL;
        if (!x || x->init || !x->is_graph_input || x->role == OS_ROLE_UNUSED) continue;
        OS_TRY_GOTO(st,
                    declared_shape(L, L->gp->input[i], &elems[v], &shapes[v], names[v], &ranked[v]),
                    done);
        x->elem = elems[v];
        if (x->role == OS_ROLE_WEIGHT) {
            /* A weight must have a static shape; its tensor is made on use. */
            x->shape = shapes[v];
            int64_t numel = opsched_shape_numel(&shapes[v]);
            x->has_shape = ranked[v] && numel > 0 && numel <= OS_ONNX_MAX_NUMEL;
            if (!x->has_shape) x->role = OS_ROLE_INPUT;
        }
    }
    OS_TRY_GOTO(st, apply_shape_overrides(L, shapes, ranked), done);
    for (size_t i = 0; i < L->gp->n_input; i++) {
        int v = os_onnx_find(L, L->gp->input[i]->name);
        os_val *x = v >= 0 ? &L->vals[v] : NULL;
        if (!x || x->init || !x->is_graph_input || x->role != OS_ROLE_INPUT) continue;
        opsched_shape *s = &shapes[v];
        int64_t over[3] = {L->opts.batch, L->opts.height, L->opts.width};
        int at[3] = {0, 2, 3};
        for (int k = 0; k < 3; k++) {
            if (over[k] < 0 || over[k] > OS_ONNX_MAX_DIM) {
                st = OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG,
                             "batch, height and width must be in 1..2^31");
                goto done;
            }
            if (over[k] > 0 && ranked[v] && s->ndim == 4) s->d[at[k]] = over[k];
        }
        /* The batch also binds a symbolic first dimension of any other rank
         * (a transformer's [batch, tokens]). */
        if (over[0] > 0 && ranked[v] && s->ndim >= 1 && s->ndim != 4 && s->d[0] < 0)
            s->d[0] = over[0];
        if (x->given) {
            /* Checked against the declaration: it binds the symbolic dims. */
            *s = given_of(L, v)->shape;
            ranked[v] = 1;
        }
        char sugg[160];
        if (!ranked[v]) {
            st = OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG,
                         "input '%s' has no declared shape; give one with --shapes %s:<dims>",
                         x->name, x->name);
            goto done;
        }
        for (int d = 0; d < s->ndim; d++) {
            if (s->d[d] >= 0) continue;
            opsched_shape ex = *s;
            for (int k = 0; k < ex.ndim; k++)
                if (ex.d[k] < 0) ex.d[k] = 1;
            opsched_shape_format(&ex, sugg, sizeof(sugg));
            const char *dn = names[v][d];
            st = OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG,
                         "input '%s' has no fixed size for dimension %d%s%s%s; give its shape "
                         "with --shapes %s:%s",
                         x->name, d, dn ? " ('" : "", dn ? dn : "", dn ? "')" : "", x->name, sugg);
            goto done;
        }
        int64_t numel = opsched_shape_numel(s);
        if (numel < 0 || numel > OS_ONNX_MAX_NUMEL) {
            st = OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG, "input '%s' is too large", x->name);
            goto done;
        }
        opsched_dtype dt;
        OS_TRY_GOTO(st, os_onnx_dtype(L->ctx, elems[v], x->name, &dt), done);
        OS_TRY_GOTO(
            st, opsched_graph_add_tensor(L->g, x->name, OPSCHED_TENSOR_INPUT, dt, s, &x->id), done);
        x->shape = *s;
        x->has_shape = 1;
    }
done:
    free(shapes);
    free(ranked);
    free(names);
    free(elems);
    return st;
}

opsched_status os_onnx_inputs(os_loader *L)
{
    OS_TRY(classify(L));
    OS_TRY(given_values(L));
    return add_real_inputs(L);
}
