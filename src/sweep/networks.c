/*
 * networks.c - `networks:` sweep entries: every distinct operator
 * configuration of the named networks (zoo names or ONNX files) at the
 * given batch sizes and input sizes, optionally only some operators.
 *
 * Nodes that only view their input (Reshape, Flatten, ...) cost nothing and
 * are left out.  Each kept node is copied into a one-node graph
 * (opsched_graph_extract_node), so it is measured exactly as a sweep's grid
 * configuration of the same signature would be.  With `fuse: true` a
 * convolution whose only reader is a Relu is taken as the executor runs
 * it, the two as one fused launch (a fused configuration), and the Relu
 * itself is left out.
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

typedef struct net_entry {
    const yaml_node_item_t *nets, *batches, *sizes, *ops;
    int n_nets, n_batches, n_sizes, n_ops;
    yaml_node_item_t one_net, one_batch, one_size, one_op;
    int fold_bn;
    int fuse;
    int64_t limit;
    int64_t added;
} net_entry;

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
        opsched_ctx_clear_error(y->spec->ctx);
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
    opsched_sweep_spec *spec = y->spec;
    const char *name = os_yaml_scalar(n);
    if (opsched_zoo_find(name)) {
        opsched_zoo_options zo = {.batch = batch, .height = h, .width = w, .fold_bn = e->fold_bn};
        return opsched_zoo_build(spec->ctx, name, &zo, out);
    }
    opsched_onnx_options oo = {.batch = batch, .height = h, .width = w};
    if (name[0] == '/' || !spec->base_dir) return opsched_onnx_load_file(spec->ctx, name, &oo, out);
    size_t len = strlen(spec->base_dir) + strlen(name) + 1;
    char *path = malloc(len);
    if (!path) return OS_NOMEM(spec->ctx);
    snprintf(path, len, "%s%s", spec->base_dir, name);
    opsched_status st = opsched_onnx_load_file(spec->ctx, path, &oo, out);
    free(path);
    return st;
}

/* Adds the wanted nodes of g; *full is set when the entry's limit is reached. */
static opsched_status add_nodes(const os_yaml *y, net_entry *e, const opsched_graph *g, int *full)
{
    opsched_sweep_spec *spec = y->spec;
    int n = opsched_graph_num_nodes(g);
    unsigned char *runs_fused = calloc((size_t)(n > 0 ? n : 1), 1);
    opsched_status st = OPSCHED_OK;
    if (!runs_fused) return OS_NOMEM(spec->ctx);
    for (int i = 0; i < n && !*full; i++) {
        const opsched_node *node = opsched_graph_node(g, i);
        char op[32];
        spec->counts.combinations++;
        user_name(node->op, op, sizeof(op));
        if (opsched_op_is_view(node->op) || runs_fused[i] || !wants_op(y, e, op)) {
            spec->counts.excluded++;
            continue;
        }
        opsched_graph *one = NULL, *fused = NULL;
        int added = 0, relu = e->fuse ? os_exec_fused_relu(g, i) : -1;
        OS_TRY_GOTO(st, opsched_graph_extract_node(g, i, &one), done);
        if (relu >= 0) {
            runs_fused[relu] = 1;
            st = os_sweep_fused_graph(spec->ctx, one, &fused);
            opsched_graph_free(one);
            OS_TRY_GOTO(st, st, done);
            one = fused;
        }
        OS_TRY_GOTO(st, os_sweep_add_config(spec, one, relu >= 0, &added), done);
        e->added += added;
        *full = e->limit && e->added >= e->limit;
    }
done:
    free(runs_fused);
    return st;
}

static opsched_status expand(const os_yaml *y, net_entry *e)
{
    opsched_sweep_spec *spec = y->spec;
    int full = 0;
    for (int ni = 0; ni < e->n_nets && !full; ni++) {
        const yaml_node_t *nn = os_yaml_node(y, e->nets[ni]);
        for (int bi = 0; bi < e->n_batches && !full; bi++) {
            int64_t batch = 1;
            if (e->batches)
                OS_TRY(os_yaml_int(y, os_yaml_node(y, e->batches[bi]), 1, 1 << 20, "batch", &batch));
            for (int si = 0; si < OS_MAX(e->n_sizes, 1) && !full; si++) {
                int64_t h = 0, w = 0;
                if (e->n_sizes) OS_TRY(parse_size(y, os_yaml_node(y, e->sizes[si]), &h, &w));
                opsched_graph *g = NULL;
                opsched_status st = load_network(y, nn, e, batch, h, w, &g);
                if (st == OPSCHED_ERR_SHAPE) {
                    /* Too small an input for this network: an impossible combination. */
                    opsched_ctx_clear_error(spec->ctx);
                    spec->counts.combinations++;
                    spec->counts.impossible++;
                    continue;
                }
                if (st != OPSCHED_OK) {
                    char why[512];
                    snprintf(why, sizeof(why), "%s", opsched_ctx_last_error(spec->ctx));
                    return OS_FAIL(spec->ctx, st, "%s:%zu: network '%s': %s", spec->origin,
                                   nn->start_mark.line + 1, os_yaml_scalar(nn), why);
                }
                st = add_nodes(y, e, g, &full);
                opsched_graph_free(g);
                OS_TRY(st);
            }
        }
    }
    return OPSCHED_OK;
}

opsched_status os_sweep_networks(const os_yaml *y, const yaml_node_t *entry, int top_level,
                                 int64_t *size)
{
    static const char *const keys[] = {"networks", "batch", "sizes", "ops",
                                       "fold_bn",  "fuse",  "limit"};
    net_entry e;
    memset(&e, 0, sizeof(e));
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
    if (!size) return expand(y, &e);
    /* Each list has fewer than OS_SWEEP_MAX_NODES items: no overflow. */
    *size = (int64_t)e.n_nets * e.n_batches * OS_MAX(e.n_sizes, 1);
    return OPSCHED_OK;
}
