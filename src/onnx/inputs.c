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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
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
            s->dim[d]->dim_value < 1)
            return 1;
    return 0;
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

/* The shape the file declares; unknown dims are 0 and *dim_names (if given)
 * gets their dim_param. */
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
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            dim->dim_value >= 1) {
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
        char sugg[160];
        if (!ranked[v]) {
            st = OS_FAIL(L->ctx, OPSCHED_ERR_INVALID_ARG,
                         "input '%s' has no declared shape; give one with --shapes %s:<dims>",
                         x->name, x->name);
            goto done;
        }
        for (int d = 0; d < s->ndim; d++) {
            if (s->d[d] >= 1) continue;
            opsched_shape ex = *s;
            for (int k = 0; k < ex.ndim; k++)
                if (ex.d[k] < 1) ex.d[k] = 1;
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
    return add_real_inputs(L);
}
