/*
 * config.c - the user-facing description of an operator configuration
 * (opsched_config_record) read off a graph node: the names and columns a
 * sweep's CSV and a predictor's queries use.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "store/store_impl.h"

/* User-facing operator names; the ones that differ from the lower-case
 * ONNX name follow the operator-configuration names of measure.h. */
static void op_user_name(opsched_op_kind op, char *buf, size_t size)
{
    const char *name = NULL;
    switch (op) {
    case OPSCHED_OP_CONV:
        name = "conv2d";
        break;
    case OPSCHED_OP_GEMM:
        name = "linear";
        break;
    case OPSCHED_OP_MATMUL:
        name = "matmul";
        break;
    case OPSCHED_OP_MAXPOOL:
        name = "maxpool";
        break;
    case OPSCHED_OP_AVGPOOL:
        name = "avgpool";
        break;
    case OPSCHED_OP_GLOBALAVGPOOL:
        name = "globalavgpool";
        break;
    case OPSCHED_OP_GLOBALMAXPOOL:
        name = "globalmaxpool";
        break;
    case OPSCHED_OP_BATCHNORM:
        name = "batchnorm";
        break;
    case OPSCHED_OP_LAYERNORM:
        name = "layernorm";
        break;
    default:
        break;
    }
    if (name) {
        snprintf(buf, size, "%s", name);
        return;
    }
    const char *onnx = opsched_op_name(op);
    size_t i = 0;
    for (; onnx[i] && i + 1 < size; i++)
        buf[i] = (char)tolower((unsigned char)onnx[i]);
    buf[i] = '\0';
}

/* Tensor i of a node's inputs or outputs (ids, n of them), or NULL. */
static const opsched_tensor *node_tensor(const opsched_graph *g, const int *ids, int n, int i)
{
    if (i >= n || ids[i] < 0) return NULL;
    return opsched_graph_tensor(g, ids[i]);
}

/* Channels and spatial size of an NCHW activation. */
static void fill_nchw(opsched_config_record *r, const opsched_shape *x)
{
    if (!x || x->ndim != 4) return;
    r->in_channels = x->d[1];
    r->height = x->d[2];
    r->width = x->d[3];
}

static void fill_pool(opsched_config_record *r, const opsched_pool_attr *a, const opsched_shape *x)
{
    fill_nchw(r, x);
    r->out_channels = r->in_channels;
    r->kernel = a->kernel[0];
    r->stride = a->stride[0];
    r->padding = a->pads[0];
}

opsched_status opsched_config_record_from_node(const opsched_graph *g, int node,
                                               opsched_config_record *out)
{
    if (!g || !out) return OPSCHED_ERR_INVALID_ARG;
    opsched_ctx *ctx = opsched_graph_ctx(g);
    if (node < 0 || node >= opsched_graph_num_nodes(g))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_config_record_from_node: graph %s has no node %d",
                       opsched_graph_name(g), node);
    const opsched_node *n = opsched_graph_node(g, node);
    opsched_config_record r;
    memset(&r, 0, sizeof(r));
    r.batch = r.in_channels = r.out_channels = r.kernel = r.stride = r.padding = r.groups = -1;
    r.height = r.width = -1;
    OS_TRY(opsched_node_signature(g, node, r.signature, sizeof(r.signature)));
    op_user_name(n->op, r.op, sizeof(r.op));

    const opsched_tensor *xt = node_tensor(g, n->inputs, n->n_inputs, 0);
    const opsched_tensor *yt = node_tensor(g, n->outputs, n->n_outputs, 0);
    const opsched_shape *x = xt ? &xt->shape : NULL;
    const opsched_shape *y = yt ? &yt->shape : NULL;
    if (x && x->ndim >= 1) r.batch = x->d[0];
    snprintf(r.dtype, sizeof(r.dtype), "%s", opsched_dtype_name(xt ? xt->dtype : OPSCHED_F32));

    switch (n->op) {
    case OPSCHED_OP_CONV: {
        const opsched_conv_attr *a = &n->attr.conv;
        fill_nchw(&r, x);
        if (y && y->ndim == 4) r.out_channels = y->d[1];
        r.kernel = a->kernel[0];
        r.stride = a->stride[0];
        r.padding = a->pads[0];
        r.groups = a->groups;
        break;
    }
    case OPSCHED_OP_GEMM:
        /* A is [batch, in] or, transposed, [in, batch]; Y is [batch, out]. */
        if (x && x->ndim == 2) r.in_channels = n->attr.gemm.trans_a ? x->d[0] : x->d[1];
        if (y && y->ndim == 2) {
            r.batch = y->d[0];
            r.out_channels = y->d[1];
        }
        break;
    case OPSCHED_OP_MATMUL:
        if (x && x->ndim >= 1) r.in_channels = x->d[x->ndim - 1];
        if (y && y->ndim >= 1) r.out_channels = y->d[y->ndim - 1];
        break;
    case OPSCHED_OP_MAXPOOL:
    case OPSCHED_OP_AVGPOOL:
        fill_pool(&r, &n->attr.pool, x);
        break;
    default:
        /* Element-wise, normalisation and global pooling: channels and
         * spatial size where the input is an image. */
        fill_nchw(&r, x);
        if (y && y->ndim == 4) r.out_channels = y->d[1];
        break;
    }
    r.flops = n->cost.flops;
    if (!os_add_ok(n->cost.bytes_read, n->cost.bytes_written, &r.bytes)) r.bytes = -1;
    *out = r;
    return OPSCHED_OK;
}
