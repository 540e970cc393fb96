/*
 * graph.c - graph storage: tensors, nodes, names, inputs and outputs.
 *
 * Nodes are appended only after os_infer() accepted them, so a graph is
 * always consistent: every tensor has a shape and every node its costs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "graph/graph_impl.h"

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;  /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static int hash_lookup(const opsched_graph *g, const char *name)
{
    if (!g->hash_cap) return -1;
    size_t mask = g->hash_cap - 1;
    for (size_t i = hash_name(name) & mask;; i = (i + 1) & mask) {
        int id = g->hash[i];
        if (id < 0) return -1;
        if (strcmp(g->tensors[id].name, name) == 0) return id;
    }
}

static opsched_status hash_insert(opsched_graph *g, int id)
{
    if ((g->n_tensors + 1) * 2 > g->hash_cap) {
        size_t ncap = g->hash_cap ? g->hash_cap * 2 : 64;
        int *nh = malloc(ncap * sizeof(*nh));
        if (!nh) return OS_NOMEM(g->ctx);
        for (size_t i = 0; i < ncap; i++) nh[i] = -1;
        for (size_t t = 0; t < g->n_tensors; t++) {
            if ((int)t == id) continue;
            for (size_t i = hash_name(g->tensors[t].name) & (ncap - 1);; i = (i + 1) & (ncap - 1)) {
                if (nh[i] < 0) {
                    nh[i] = (int)t;
                    break;
                }
            }
        }
        free(g->hash);
        g->hash = nh;
        g->hash_cap = ncap;
    }
    size_t mask = g->hash_cap - 1;
    for (size_t i = hash_name(g->tensors[id].name) & mask;; i = (i + 1) & mask) {
        if (g->hash[i] < 0) {
            g->hash[i] = id;
            return OPSCHED_OK;
        }
    }
}

/* Rebuilds the name table in place after tensors were removed. */
static void rehash(opsched_graph *g)
{
    size_t mask = g->hash_cap - 1;
    for (size_t i = 0; i < g->hash_cap; i++) g->hash[i] = -1;
    for (size_t t = 0; t < g->n_tensors; t++) {
        for (size_t i = hash_name(g->tensors[t].name) & mask;; i = (i + 1) & mask) {
            if (g->hash[i] < 0) {
                g->hash[i] = (int)t;
                break;
            }
        }
    }
}

opsched_status opsched_graph_create(opsched_ctx *ctx, const char *name, opsched_graph **out)
{
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "graph_create: out is NULL");
    *out = NULL;
    opsched_graph *g = calloc(1, sizeof(*g));
    if (!g) return OS_NOMEM(ctx);
    g->ctx = ctx;
    if (os_strdup(ctx, name ? name : "graph", &g->name) != OPSCHED_OK) {
        free(g);
        return OPSCHED_ERR_NOMEM;
    }
    *out = g;
    return OPSCHED_OK;
}

void opsched_graph_free(opsched_graph *g)
{
    if (!g) return;
    for (size_t i = 0; i < g->n_tensors; i++) {
        free((char *)g->tensors[i].name);
        free((void *)g->tensors[i].data);
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        free((char *)g->nodes[i].name);
        free((int *)g->nodes[i].inputs);
        free((int *)g->nodes[i].outputs);
    }
    free(g->tensors);
    free(g->n_consumers);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->hash);
    free(g->name);
    free(g);
}

static opsched_status check_shape(opsched_graph *g, const char *name, const opsched_shape *s)
{
    if (s->ndim < 0 || s->ndim > OPSCHED_MAX_DIMS)
        return OS_FAIL(g->ctx, OPSCHED_ERR_SHAPE, "tensor '%s': rank %d is not in 0..%d", name,
                       s->ndim, OPSCHED_MAX_DIMS);
    for (int i = 0; i < s->ndim; i++) {
        if (s->d[i] < 0 || s->d[i] > ((int64_t)1 << 40))
            return OS_FAIL(g->ctx, OPSCHED_ERR_SHAPE, "tensor '%s': dimension %d is %lld", name,
                           i, (long long)s->d[i]);
    }
    /* 2^40 elements (4 TiB of f32) is beyond any device; the cap keeps every
     * byte and FLOP count below it far from int64 overflow. */
    int64_t n = opsched_shape_numel(s);
    if (n < 0 || n > OS_MAX_ELEMS)
        return OS_FAIL(g->ctx, OPSCHED_ERR_SHAPE, "tensor '%s': %s elements are more than 2^40",
                       name, n < 0 ? "overflowing" : "so many");
    return OPSCHED_OK;
}

/* Appends a tensor record; the caller has checked the name is new. */
static opsched_status push_tensor(opsched_graph *g, const char *name, opsched_tensor_kind kind,
                                  opsched_dtype dtype, const opsched_shape *shape, int producer,
                                  int *out_id)
{
    OS_TRY(check_shape(g, name, shape));
    OS_TRY(os_grow(g->ctx, (void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1,
                   sizeof(*g->tensors)));
    OS_TRY(os_grow(g->ctx, (void **)&g->n_consumers, &g->cap_consumers, g->n_tensors + 1,
                   sizeof(*g->n_consumers)));
    char *copy = NULL;
    OS_TRY(os_strdup(g->ctx, name, &copy));
    int id = (int)g->n_tensors;
    opsched_tensor *t = &g->tensors[id];
    memset(t, 0, sizeof(*t));
    t->name = copy;
    t->kind = kind;
    t->dtype = dtype;
    t->layout = OPSCHED_LAYOUT_NCHW;
    t->shape = *shape;
    t->producer = producer;
    g->n_consumers[id] = 0;
    opsched_status st = hash_insert(g, id);
    if (st != OPSCHED_OK) {
        free(copy);
        return st;
    }
    g->n_tensors++;
    if (out_id) *out_id = id;
    return OPSCHED_OK;
}

opsched_status opsched_graph_add_tensor(opsched_graph *g, const char *name,
                                        opsched_tensor_kind kind, opsched_dtype dtype,
                                        const opsched_shape *shape, int *out_id)
{
    if (!g || !name || !shape || !*name)
        return OS_FAIL(g ? g->ctx : NULL, OPSCHED_ERR_INVALID_ARG,
                       "add_tensor: name and shape are required");
    if (kind == OPSCHED_TENSOR_ACTIVATION)
        return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG,
                       "tensor '%s': activations are created by nodes", name);
    if ((int)dtype < 0 || dtype >= OPSCHED_DTYPE_COUNT)
        return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG, "tensor '%s': bad dtype", name);
    if (hash_lookup(g, name) >= 0)
        return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG, "tensor name '%s' is used twice", name);
    int id = -1;
    OS_TRY(push_tensor(g, name, kind, dtype, shape, -1, &id));
    if (kind == OPSCHED_TENSOR_INPUT) {
        OS_TRY(os_grow(g->ctx, (void **)&g->inputs, &g->cap_inputs, g->n_inputs + 1,
                       sizeof(*g->inputs)));
        g->inputs[g->n_inputs++] = id;
    }
    if (out_id) *out_id = id;
    return OPSCHED_OK;
}

opsched_status opsched_graph_set_data(opsched_graph *g, int tensor, const void *data,
                                      size_t bytes)
{
    if (!g || tensor < 0 || (size_t)tensor >= g->n_tensors || (!data && bytes))
        return OS_FAIL(g ? g->ctx : NULL, OPSCHED_ERR_INVALID_ARG, "set_data: bad tensor");
    opsched_tensor *t = &g->tensors[tensor];
    if (t->kind != OPSCHED_TENSOR_WEIGHT && t->kind != OPSCHED_TENSOR_CONSTANT)
        return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG,
                       "tensor '%s': only weights and constants carry data", t->name);
    int64_t want = opsched_shape_numel(&t->shape) * (int64_t)opsched_dtype_size(t->dtype);
    if ((int64_t)bytes != want)
        return OS_FAIL(g->ctx, OPSCHED_ERR_SHAPE, "tensor '%s': %zu bytes of data for %lld",
                       t->name, bytes, (long long)want);
    void *copy = malloc(bytes ? bytes : 1);
    if (!copy) return OS_NOMEM(g->ctx);
    if (bytes) memcpy(copy, data, bytes);
    free((void *)t->data);
    t->data = copy;
    t->data_bytes = bytes;
    return OPSCHED_OK;
}

static opsched_status node_name_ok(opsched_graph *g, const char *name, const char *const *out_names,
                                   int n_outputs, char (*auto_names)[256])
{
    for (int i = 0; i < n_outputs; i++) {
        const char *nm = out_names ? out_names[i] : NULL;
        if (!nm) {
            if (n_outputs == 1)
                snprintf(auto_names[i], 256, "%s", name);
            else
                snprintf(auto_names[i], 256, "%s:%d", name, i);
            nm = auto_names[i];
        }
        if (!*nm)
            return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG, "node '%s': output %d has no name",
                           name, i);
        if (hash_lookup(g, nm) >= 0)
            return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG,
                           "node '%s': output name '%s' is used twice", name, nm);
        for (int j = 0; j < i; j++) {
            const char *other = out_names && out_names[j] ? out_names[j] : auto_names[j];
            if (strcmp(other, nm) == 0)
                return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG,
                               "node '%s': output name '%s' is used twice", name, nm);
        }
    }
    return OPSCHED_OK;
}

#define OS_MAX_NODE_OUTPUTS (OPSCHED_MAX_DIMS * 4)

opsched_status opsched_graph_add_node(opsched_graph *g, const char *name, opsched_op_kind op,
                                      const opsched_op_attr *attr, const int *inputs,
                                      int n_inputs, int n_outputs,
                                      const char *const *out_names, int *out_ids)
{
    if (!g) return OPSCHED_ERR_INVALID_ARG;
    opsched_status st = OPSCHED_OK;
    if (!name || !*name)
        return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG, "add_node: a node needs a name");
    if ((int)op < 0 || op >= OPSCHED_OP_COUNT)
        return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG, "node '%s': bad operator", name);
    if (n_inputs < 0 || (n_inputs > 0 && !inputs) || n_outputs < 1 ||
        n_outputs > OS_MAX_NODE_OUTPUTS)
        return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG,
                       "node '%s': %d inputs and %d outputs are not possible", name, n_inputs,
                       n_outputs);
    for (int i = 0; i < n_inputs; i++) {
        if (inputs[i] < -1 || inputs[i] >= (int)g->n_tensors)
            return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG,
                           "node '%s': input %d refers to no tensor", name, i);
    }
    char auto_names[OS_MAX_NODE_OUTPUTS][256];
    OS_TRY(node_name_ok(g, name, out_names, n_outputs, auto_names));

    opsched_op_attr a;
    if (attr)
        a = *attr;
    else
        memset(&a, 0, sizeof(a));
    opsched_shape shapes[OS_MAX_NODE_OUTPUTS];
    opsched_dtype dts[OS_MAX_NODE_OUTPUTS];
    opsched_cost cost;
    memset(&cost, 0, sizeof(cost));
    OS_TRY(os_infer(g, name, op, &a, inputs, n_inputs, n_outputs, shapes, dts, &cost));

    OS_TRY(os_grow(g->ctx, (void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(*g->nodes)));
    int *in_copy = malloc(sizeof(int) * (size_t)(n_inputs ? n_inputs : 1));
    int *out_copy = malloc(sizeof(int) * (size_t)n_outputs);
    char *name_copy = NULL;
    size_t first_new = g->n_tensors;
    if (!in_copy || !out_copy) {
        st = OS_NOMEM(g->ctx);
        goto fail;
    }
    OS_TRY_GOTO(st, os_strdup(g->ctx, name, &name_copy), fail);
    if (n_inputs) memcpy(in_copy, inputs, sizeof(int) * (size_t)n_inputs);
    for (int i = 0; i < n_outputs; i++) {
        const char *nm = out_names && out_names[i] ? out_names[i] : auto_names[i];
        OS_TRY_GOTO(st, push_tensor(g, nm, OPSCHED_TENSOR_ACTIVATION, dts[i], &shapes[i],
                                    (int)g->n_nodes, &out_copy[i]),
                    fail);
    }
    opsched_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof(*n));
    n->name = name_copy;
    n->op = op;
    n->attr = a;
    n->n_inputs = n_inputs;
    n->inputs = in_copy;
    n->n_outputs = n_outputs;
    n->outputs = out_copy;
    n->cost = cost;
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i] >= 0) g->n_consumers[inputs[i]]++;
    g->n_nodes++;
    if (out_ids) memcpy(out_ids, out_copy, sizeof(int) * (size_t)n_outputs);
    return OPSCHED_OK;

fail:
    /* Roll back the outputs already pushed so the graph stays as it was. */
    while (g->n_tensors > first_new) {
        g->n_tensors--;
        free((char *)g->tensors[g->n_tensors].name);
    }
    rehash(g);
    free(in_copy);
    free(out_copy);
    free(name_copy);
    return st;
}

opsched_status opsched_graph_mark_output(opsched_graph *g, int tensor)
{
    if (!g || tensor < 0 || (size_t)tensor >= g->n_tensors)
        return OS_FAIL(g ? g->ctx : NULL, OPSCHED_ERR_INVALID_ARG, "mark_output: bad tensor");
    for (size_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == tensor) return OPSCHED_OK;
    OS_TRY(os_grow(g->ctx, (void **)&g->outputs, &g->cap_outputs, g->n_outputs + 1,
                   sizeof(*g->outputs)));
    g->outputs[g->n_outputs++] = tensor;
    return OPSCHED_OK;
}

opsched_status opsched_graph_rename_tensor(opsched_graph *g, int tensor, const char *name)
{
    if (!g || tensor < 0 || (size_t)tensor >= g->n_tensors || !name || !*name)
        return OS_FAIL(g ? g->ctx : NULL, OPSCHED_ERR_INVALID_ARG, "rename_tensor: bad argument");
    int other = hash_lookup(g, name);
    if (other == tensor) return OPSCHED_OK;
    if (other >= 0)
        return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG, "tensor name '%s' is already taken",
                       name);
    char *copy = strdup(name);
    if (!copy) return OS_NOMEM(g->ctx);
    free((char *)g->tensors[tensor].name);
    g->tensors[tensor].name = copy;
    rehash(g);
    return OPSCHED_OK;
}

const char *opsched_graph_name(const opsched_graph *g) { return g ? g->name : ""; }
opsched_ctx *opsched_graph_ctx(const opsched_graph *g) { return g ? g->ctx : NULL; }
int opsched_graph_num_tensors(const opsched_graph *g) { return g ? (int)g->n_tensors : 0; }

const opsched_tensor *opsched_graph_tensor(const opsched_graph *g, int id)
{
    if (!g || id < 0 || (size_t)id >= g->n_tensors) return NULL;
    return &g->tensors[id];
}

int opsched_graph_num_nodes(const opsched_graph *g) { return g ? (int)g->n_nodes : 0; }

const opsched_node *opsched_graph_node(const opsched_graph *g, int index)
{
    if (!g || index < 0 || (size_t)index >= g->n_nodes) return NULL;
    return &g->nodes[index];
}

int opsched_graph_num_inputs(const opsched_graph *g) { return g ? (int)g->n_inputs : 0; }

int opsched_graph_input(const opsched_graph *g, int i)
{
    if (!g || i < 0 || (size_t)i >= g->n_inputs) return -1;
    return g->inputs[i];
}

int opsched_graph_num_outputs(const opsched_graph *g) { return g ? (int)g->n_outputs : 0; }

int opsched_graph_output(const opsched_graph *g, int i)
{
    if (!g || i < 0 || (size_t)i >= g->n_outputs) return -1;
    return g->outputs[i];
}

opsched_status opsched_graph_find_tensor(const opsched_graph *g, const char *name, int *out_id)
{
    if (!g || !name || !out_id) return OPSCHED_ERR_INVALID_ARG;
    int id = hash_lookup(g, name);
    if (id < 0) return OPSCHED_ERR_NOT_FOUND;
    *out_id = id;
    return OPSCHED_OK;
}

int opsched_graph_num_consumers(const opsched_graph *g, int tensor)
{
    if (!g || tensor < 0 || (size_t)tensor >= g->n_tensors) return 0;
    return g->n_consumers[tensor];
}
