/*
 * networks.c - `networks:` sweep entries: every distinct operator
 * configuration of the named networks (zoo names or ONNX files) at the
 * given batch sizes and input sizes, optionally only some operators.
 *
 * Nodes that only view their input (Reshape, Flatten, ...) cost nothing and
 * are left out.  Each kept node is copied into a one-node graph
 * (opsched_graph_extract_node), so it is measured exactly as a sweep's grid
 * configuration of the same signature would be.  With `fuse: true` a
 * convolution whose only reader is an epilogue activation
 * (opsched_conv_epilogue) is taken as the executor runs it, the two as one
 * fused launch (a fused configuration), and the activation itself is left
 * out.  The fused configuration is measured with a Relu as its epilogue
 * whatever the network's activation (Clip, SiLU, GELU...): one key
 * (";fused=relu") for every activation: the predictor's fused rows stand
 * in for a convolution with any epilogue (not measured apart).  A walk loads one network at a time and goes through
 * its nodes (os_sweep_cursor); a network is loaded again by every walk.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "exec/exec_impl.h"
#include "opsched/onnx.h"
#include "opsched/zoo.h"
#include "sweep/sweep_impl.h"

/* The operator names of opsched_config_record_from_node where they differ
 * from the lower-case ONNX name (kept in step with store/config.c). */
static const struct {
    opsched_op_kind op;
    const char *name;
} user_names[] = {
    {OPSCHED_OP_CONV, "conv2d"},           {OPSCHED_OP_GEMM, "linear"},
    {OPSCHED_OP_MATMUL, "matmul"},         {OPSCHED_OP_MAXPOOL, "maxpool"},
    {OPSCHED_OP_AVGPOOL, "avgpool"},       {OPSCHED_OP_GLOBALAVGPOOL, "globalavgpool"},
    {OPSCHED_OP_GLOBALMAXPOOL, "globalmaxpool"}, {OPSCHED_OP_BATCHNORM, "batchnorm"},
    {OPSCHED_OP_LAYERNORM, "layernorm"},
};

static void user_name(opsched_op_kind op, char *buf, size_t size)
{
    for (size_t i = 0; i < OS_ARRAY_LEN(user_names); i++) {
        if (user_names[i].op == op) {
            snprintf(buf, size, "%s", user_names[i].name);
            return;
        }
    }
    const char *onnx = opsched_op_name(op);
    size_t i = 0;
    for (; onnx[i] && i + 1 < size; i++) buf[i] = (char)tolower((unsigned char)onnx[i]);
    buf[i] = '\0';
}

typedef struct os_sweep_nets {
    const yaml_node_item_t *nets, *batches, *sizes, *ops; /* in the document, or at one_* */
    int n_nets, n_batches, n_sizes, n_ops;
    yaml_node_item_t one_net, one_batch, one_size, one_op;
    int fold_bn;
    int fuse;
    int64_t limit;
    int shapes; /* node id of the ONNX input shapes ("input_ids:8x384,..."), 0: none */
} net_entry;

void os_sweep_nets_free(net_entry *e) { free(e); }

static opsched_status check_ops(const os_yaml *y, const net_entry *e)
{
    for (int i = 0; i < e->n_ops; i++) {
        const yaml_node_t *n = os_yaml_node(y, e->ops[i]);
        const char *want = os_yaml_scalar(n);
        char names[768] = "", name[32];
        int known = 0;
        for (int k = 0; k < OPSCHED_OP_COUNT && !known; k++) {
            if (opsched_op_is_view((opsched_op_kind)k)) continue;
            user_name((opsched_op_kind)k, name, sizeof(name));
            known = strcmp(name, want) == 0;
            strncat(names, names[0] ? ", " : "", sizeof(names) - strlen(names) - 1);
            strncat(names, name, sizeof(names) - strlen(names) - 1);
        }
        if (!known) return os_sweep_fail(y, n, "ops: unknown operator '%s' (known: %s)", want, names);
    }
    return OPSCHED_OK;
}

static opsched_status check_network(const os_yaml *y, const yaml_node_t *n)
{
    const char *name = os_yaml_scalar(n);
    size_t len = strlen(name);
    if (opsched_zoo_find(name) || strchr(name, '/') || (len > 5 && strcmp(name + len - 5, ".onnx") == 0))
        return OPSCHED_OK;
    char names[512] = "";
    for (int i = 0; i < opsched_zoo_count(); i++) {
        strncat(names, i ? ", " : "", sizeof(names) - strlen(names) - 1);
        strncat(names, opsched_zoo_at(i)->name, sizeof(names) - strlen(names) - 1);
    }
    return os_sweep_fail(y, n, "networks: no built-in network '%s' (there are: %s; or give the "
                               "path of an .onnx file)", name, names);
}

/* "224" or "224x320" into height and width. */
static opsched_status parse_size(const os_yaml *y, const yaml_node_t *n, int64_t *h, int64_t *w)
{
    opsched_shape s;
    const char *text = os_yaml_scalar(n);
    if (opsched_shape_parse(text, &s) != OPSCHED_OK || s.ndim < 1 || s.ndim > 2 ||
        s.d[0] > 65536 || s.d[s.ndim - 1] > 65536) {
        opsched_ctx_clear_error(y->ctx);
        return os_sweep_fail(y, n, "sizes: '%s' is not an input size (224, or 224x320)", text);
    }
    *h = s.d[0];
    *w = s.d[s.ndim - 1];
    return OPSCHED_OK;
}

static int wants_op(const os_yaml *y, const net_entry *e, const char *op)
{
    if (!e->n_ops) return 1;
    for (int i = 0; i < e->n_ops; i++)
        if (strcmp(os_yaml_scalar(os_yaml_node(y, e->ops[i])), op) == 0) return 1;
    return 0;
}

static opsched_status load_network(const os_yaml *y, const yaml_node_t *n, const net_entry *e,
                                   int64_t batch, int64_t h, int64_t w, opsched_graph **out)
{
    const opsched_sweep_spec *spec = y->spec;
    const char *name = os_yaml_scalar(n);
    if (opsched_zoo_find(name)) {
        opsched_zoo_options zo = {.batch = batch, .height = h, .width = w, .fold_bn = e->fold_bn};
        return opsched_zoo_build(y->ctx, name, &zo, out);
    }
    opsched_onnx_options oo = {.batch = batch, .height = h, .width = w};
    if (e->shapes) oo.shapes = os_yaml_scalar(os_yaml_node(y, e->shapes));
    if (name[0] == '/' || !spec->base_dir) return opsched_onnx_load_file(y->ctx, name, &oo, out);
    size_t len = strlen(spec->base_dir) + strlen(name) + 1;
    char *path = malloc(len);
    if (!path) return OS_NOMEM(y->ctx);
    snprintf(path, len, "%s%s", spec->base_dir, name);
    opsched_status st = opsched_onnx_load_file(y->ctx, path, &oo, out);
    free(path);
    return st;
}

/* Loads the cursor's next network (net x batch x size, the last turning
 * fastest); c->graph stays NULL when it is too small an input for the
 * network (an impossible combination) or when there are no more. */
static opsched_status next_load(const os_yaml *y, const net_entry *e, os_sweep_cursor *c,
                                opsched_sweep_counts *counts)
{
    opsched_ctx *ctx = y->ctx;
    opsched_graph_free(c->graph);
    free(c->runs_fused);
    c->graph = NULL;
    c->runs_fused = NULL;
    c->node = 0;
    if (c->started && c->net >= e->n_nets) return OPSCHED_OK;
    if (!c->started) {
        c->started = 1;
    } else if (++c->size >= OS_MAX(e->n_sizes, 1)) {
        c->size = 0;
        if (++c->batch >= e->n_batches) {
            c->batch = 0;
            c->net++;
        }
    }
    if (c->net >= e->n_nets) return OPSCHED_OK;
    const yaml_node_t *nn = os_yaml_node(y, e->nets[c->net]);
    /* with shapes: and no batch:, the shapes decide the batch too */
    int64_t batch = e->shapes && !e->batches ? 0 : 1, h = 0, w = 0;
    if (e->batches)
        OS_TRY(os_yaml_int(y, os_yaml_node(y, e->batches[c->batch]), 1, 1 << 20, "batch", &batch));
    if (e->n_sizes) OS_TRY(parse_size(y, os_yaml_node(y, e->sizes[c->size]), &h, &w));
    opsched_graph *g = NULL;
    opsched_status st = load_network(y, nn, e, batch, h, w, &g);
    if (st == OPSCHED_ERR_SHAPE) {
        /* Too small an input for this network: an impossible combination. */
        opsched_ctx_clear_error(ctx);
        counts->combinations++;
        counts->impossible++;
        return OPSCHED_OK;
    }
    if (st != OPSCHED_OK) {
        char why[512];
        snprintf(why, sizeof(why), "%s", opsched_ctx_last_error(ctx));
        return OS_FAIL(ctx, st, "%s:%zu: network '%s': %s", y->spec->origin,
                       nn->start_mark.line + 1, os_yaml_scalar(nn), why);
    }
    int n = opsched_graph_num_nodes(g);
    c->runs_fused = calloc((size_t)(n > 0 ? n : 1), 1);
    if (!c->runs_fused) {
        opsched_graph_free(g);
        return OS_NOMEM(ctx);
    }
    c->graph = g;
    return OPSCHED_OK;
}

opsched_status os_sweep_nets_next(const os_yaml *y, const net_entry *e, os_sweep_cursor *c,
                                  opsched_sweep_counts *counts, opsched_graph **out, int *fused)
{
    *out = NULL;
    *fused = 0;
    while (!(e->limit && c->added >= e->limit)) {
        if (!c->graph || c->node >= opsched_graph_num_nodes(c->graph)) {
            OS_TRY(next_load(y, e, c, counts));
            if (c->net >= e->n_nets) return OPSCHED_OK;
            continue;
        }
        const opsched_graph *g = c->graph;
        int i = c->node++;
        const opsched_node *node = opsched_graph_node(g, i);
        char op[32];
        counts->combinations++;
        user_name(node->op, op, sizeof(op));
        if (opsched_op_is_view(node->op) || c->runs_fused[i] || !wants_op(y, e, op)) {
            counts->excluded++;
            continue;
        }
        opsched_graph *one = NULL, *with_relu = NULL;
        /* a sweep's fused configurations are convolutions' */
        int relu = e->fuse && node->op == OPSCHED_OP_CONV ? os_exec_fused_act(g, i) : -1;
        OS_TRY(opsched_graph_extract_node(g, i, &one));
        if (relu >= 0) {
            c->runs_fused[relu] = 1;
            opsched_status st = os_sweep_fused_graph(y->ctx, one, &with_relu);
            opsched_graph_free(one);
            OS_TRY(st);
            one = with_relu;
        }
        *out = one;
        *fused = relu >= 0;
        return OPSCHED_OK;
    }
    return OPSCHED_OK;
}

opsched_status os_sweep_nets_parse(const os_yaml *y, const yaml_node_t *entry, int top_level,
                                   net_entry **out, int64_t *size)
{
    static const char *const keys[] = {"networks", "batch", "sizes", "ops",
                                       "fold_bn",  "fuse",  "limit", "shapes"};
    net_entry e;
    memset(&e, 0, sizeof(e));
    if (out) *out = NULL;
    OS_TRY(os_yaml_check_keys(y, entry, keys, OS_ARRAY_LEN(keys), top_level, "a networks entry"));
    OS_TRY(os_yaml_list(y, os_yaml_get(y, entry, "networks"), "networks", &e.one_net, &e.nets,
                        &e.n_nets));
    for (int i = 0; i < e.n_nets; i++) OS_TRY(check_network(y, os_yaml_node(y, e.nets[i])));
    int id = os_yaml_get(y, entry, "batch");
    if (id) {
        OS_TRY(os_yaml_list(y, id, "batch", &e.one_batch, &e.batches, &e.n_batches));
        for (int i = 0; i < e.n_batches; i++) {
            int64_t b;
            OS_TRY(os_yaml_int(y, os_yaml_node(y, e.batches[i]), 1, 1 << 20, "batch", &b));
        }
    } else {
        e.n_batches = 1; /* batch 1, with no node to read it from */
    }
    if ((id = os_yaml_get(y, entry, "sizes")) != 0) {
        OS_TRY(os_yaml_list(y, id, "sizes", &e.one_size, &e.sizes, &e.n_sizes));
        for (int i = 0; i < e.n_sizes; i++) {
            int64_t h, w;
            OS_TRY(parse_size(y, os_yaml_node(y, e.sizes[i]), &h, &w));
        }
    }
    if ((id = os_yaml_get(y, entry, "ops")) != 0) {
        OS_TRY(os_yaml_list(y, id, "ops", &e.one_op, &e.ops, &e.n_ops));
        OS_TRY(check_ops(y, &e));
    }
    const yaml_node_t *n = os_yaml_node(y, os_yaml_get(y, entry, "fold_bn"));
    if (n) OS_TRY(os_yaml_bool(y, n, "fold_bn", &e.fold_bn));
    n = os_yaml_node(y, os_yaml_get(y, entry, "fuse"));
    if (n) OS_TRY(os_yaml_bool(y, n, "fuse", &e.fuse));
    n = os_yaml_node(y, os_yaml_get(y, entry, "limit"));
    if (n) OS_TRY(os_yaml_int(y, n, 1, INT32_MAX, "limit", &e.limit));
    if ((id = os_yaml_get(y, entry, "shapes")) != 0) {
        n = os_yaml_node(y, id);
        if (!n || n->type != YAML_SCALAR_NODE || !os_yaml_scalar(n)[0])
            return os_sweep_fail(y, n ? n : entry,
                                 "shapes: wants the ONNX inputs' shapes as one string, "
                                 "\"input_ids:8x384,attention_mask:8x384\"");
        e.shapes = id;
        for (int i = 0; i < e.n_nets; i++) {
            const yaml_node_t *nn = os_yaml_node(y, e.nets[i]);
            if (opsched_zoo_find(os_yaml_scalar(nn)))
                return os_sweep_fail(y, nn,
                                     "shapes: is for ONNX files; '%s' is a built-in network "
                                     "(batch: and sizes: set its input)",
                                     os_yaml_scalar(nn));
        }
    }
    /* Each list has fewer than OS_SWEEP_MAX_NODES items: no overflow. */
    *size = (int64_t)e.n_nets * e.n_batches * OS_MAX(e.n_sizes, 1);
    if (!out) return OPSCHED_OK;
    net_entry *copy = malloc(sizeof(*copy));
    if (!copy) return OS_NOMEM(y->ctx);
    *copy = e;
    /* A single value's id lives in the entry itself: point at the copy's. */
    if (e.nets == &e.one_net) copy->nets = &copy->one_net;
    if (e.batches == &e.one_batch) copy->batches = &copy->one_batch;
    if (e.sizes == &e.one_size) copy->sizes = &copy->one_size;
    if (e.ops == &e.one_op) copy->ops = &copy->one_op;
    *out = copy;
    return OPSCHED_OK;
}
