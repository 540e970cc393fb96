/*
 * build.c - convenience builders: one call per layer, weights created
 * alongside.  They are thin wrappers over opsched_graph_add_node.
 */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "graph/graph_impl.h"

static opsched_status add_param(opsched_graph *g, const char *layer, const char *suffix,
                                opsched_tensor_kind kind, opsched_dtype dt, int ndim,
                                const int64_t *dims, int *id)
{
    char name[512];
    snprintf(name, sizeof(name), "%s.%s", layer, suffix);
    opsched_shape s = {.ndim = ndim};
    memcpy(s.d, dims, sizeof(int64_t) * (size_t)ndim);
    return opsched_graph_add_tensor(g, name, kind, dt, &s, id);
}

static opsched_status check_x(opsched_graph *g, const char *name, int x, int rank)
{
    if (!g) return OPSCHED_ERR_INVALID_ARG;
    if (!name || !*name) return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG, "a layer needs a name");
    const opsched_tensor *t = opsched_graph_tensor(g, x);
    if (!t) return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG, "layer '%s': input refers to no tensor", name);
    if (rank && t->shape.ndim != rank)
        return OS_FAIL(g->ctx, OPSCHED_ERR_SHAPE, "layer '%s': input '%s' has rank %d, needs %d",
                       name, t->name, t->shape.ndim, rank);
    return OPSCHED_OK;
}

opsched_status opsched_build_conv(opsched_graph *g, const char *name, int x,
                                  const opsched_conv_desc *d, int *out)
{
    OS_TRY(check_x(g, name, x, 4));
    if (!d) return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG, "layer '%s': no description", name);
    const opsched_tensor *t = opsched_graph_tensor(g, x);
    opsched_dtype dt = t->dtype;
    int64_t groups = d->groups ? d->groups : 1, dil = d->dilation ? d->dilation : 1;
    if (d->out_channels <= 0 || d->kernel_h <= 0 || d->kernel_w <= 0 || groups <= 0 ||
        t->shape.d[1] % groups != 0)
        return OS_FAIL(g->ctx, OPSCHED_ERR_SHAPE,
                       "layer '%s': %lld input channels, %lld output channels, kernel %lldx%lld "
                       "and groups %lld do not fit",
                       name, (long long)t->shape.d[1], (long long)d->out_channels,
                       (long long)d->kernel_h, (long long)d->kernel_w, (long long)groups);
    int64_t wd[4] = {d->out_channels, t->shape.d[1] / groups, d->kernel_h, d->kernel_w};
    int ins[3] = {x, -1, -1};
    OS_TRY(add_param(g, name, "weight", OPSCHED_TENSOR_WEIGHT, dt, 4, wd, &ins[1]));
    if (d->bias) OS_TRY(add_param(g, name, "bias", OPSCHED_TENSOR_WEIGHT, dt, 1, wd, &ins[2]));
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.conv.kernel[0] = d->kernel_h;
    a.conv.kernel[1] = d->kernel_w;
    a.conv.stride[0] = d->stride_h ? d->stride_h : 1;
    a.conv.stride[1] = d->stride_w ? d->stride_w : 1;
    a.conv.dilation[0] = a.conv.dilation[1] = dil;
    a.conv.pads[0] = a.conv.pads[2] = d->pad_h;
    a.conv.pads[1] = a.conv.pads[3] = d->pad_w;
    a.conv.groups = groups;
    return opsched_graph_add_node(g, name, OPSCHED_OP_CONV, &a, ins, d->bias ? 3 : 2, 1, NULL, out);
}

opsched_status opsched_build_linear(opsched_graph *g, const char *name, int x,
                                    int64_t out_features, int bias, int *out)
{
    OS_TRY(check_x(g, name, x, 2));
    const opsched_tensor *t = opsched_graph_tensor(g, x);
    if (out_features <= 0)
        return OS_FAIL(g->ctx, OPSCHED_ERR_SHAPE, "layer '%s': %lld output features", name,
                       (long long)out_features);
    int64_t wd[2] = {out_features, t->shape.d[1]};
    opsched_dtype dt = t->dtype;
    int ins[3] = {x, -1, -1};
    OS_TRY(add_param(g, name, "weight", OPSCHED_TENSOR_WEIGHT, dt, 2, wd, &ins[1]));
    if (bias) OS_TRY(add_param(g, name, "bias", OPSCHED_TENSOR_WEIGHT, dt, 1, wd, &ins[2]));
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.gemm.alpha = 1.0f;
    a.gemm.beta = 1.0f;
    a.gemm.trans_b = 1;
    return opsched_graph_add_node(g, name, OPSCHED_OP_GEMM, &a, ins, bias ? 3 : 2, 1, NULL, out);
}

opsched_status opsched_build_batchnorm(opsched_graph *g, const char *name, int x, float epsilon,
                                       int *out)
{
    OS_TRY(check_x(g, name, x, 0));
    const opsched_tensor *t = opsched_graph_tensor(g, x);
    if (t->shape.ndim < 2)
        return OS_FAIL(g->ctx, OPSCHED_ERR_SHAPE, "layer '%s': input has no channel axis", name);
    int64_t c = t->shape.d[1];
    opsched_dtype dt = t->dtype;
    int ins[5] = {x, -1, -1, -1, -1};
    /* scale and shift are learned; the running statistics are not parameters. */
    OS_TRY(add_param(g, name, "weight", OPSCHED_TENSOR_WEIGHT, dt, 1, &c, &ins[1]));
    OS_TRY(add_param(g, name, "bias", OPSCHED_TENSOR_WEIGHT, dt, 1, &c, &ins[2]));
    OS_TRY(add_param(g, name, "running_mean", OPSCHED_TENSOR_CONSTANT, dt, 1, &c, &ins[3]));
    OS_TRY(add_param(g, name, "running_var", OPSCHED_TENSOR_CONSTANT, dt, 1, &c, &ins[4]));
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.bn.epsilon = epsilon;
    return opsched_graph_add_node(g, name, OPSCHED_OP_BATCHNORM, &a, ins, 5, 1, NULL, out);
}

opsched_status opsched_build_pool(opsched_graph *g, const char *name, opsched_op_kind op, int x,
                                  int64_t kernel, int64_t stride, int64_t pad, int ceil_mode,
                                  int count_include_pad, int *out)
{
    OS_TRY(check_x(g, name, x, 4));
    if (op != OPSCHED_OP_MAXPOOL && op != OPSCHED_OP_AVGPOOL)
        return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG, "layer '%s': not a pooling operator", name);
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.pool.kernel[0] = a.pool.kernel[1] = kernel;
    a.pool.stride[0] = a.pool.stride[1] = stride ? stride : kernel;
    a.pool.pads[0] = a.pool.pads[1] = a.pool.pads[2] = a.pool.pads[3] = pad;
    a.pool.dilation[0] = a.pool.dilation[1] = 1;
    a.pool.ceil_mode = ceil_mode;
    a.pool.count_include_pad = count_include_pad;
    return opsched_graph_add_node(g, name, op, &a, &x, 1, 1, NULL, out);
}

opsched_status opsched_build_unary(opsched_graph *g, const char *name, opsched_op_kind op,
                                   const opsched_op_attr *attr, int x, int *out)
{
    OS_TRY(check_x(g, name, x, 0));
    return opsched_graph_add_node(g, name, op, attr, &x, 1, 1, NULL, out);
}

opsched_status opsched_build_binary(opsched_graph *g, const char *name, opsched_op_kind op, int a,
                                    int b, int *out)
{
    OS_TRY(check_x(g, name, a, 0));
    OS_TRY(check_x(g, name, b, 0));
    int ins[2] = {a, b};
    return opsched_graph_add_node(g, name, op, NULL, ins, 2, 1, NULL, out);
}

opsched_status opsched_build_concat(opsched_graph *g, const char *name, const int *xs, int n,
                                    int64_t axis, int *out)
{
    if (!g) return OPSCHED_ERR_INVALID_ARG;
    if (!xs || n < 1) return OS_FAIL(g->ctx, OPSCHED_ERR_INVALID_ARG, "concat '%s': no inputs", name);
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.axis.axis = axis;
    return opsched_graph_add_node(g, name, OPSCHED_OP_CONCAT, &a, xs, n, 1, NULL, out);
}

opsched_status opsched_build_flatten(opsched_graph *g, const char *name, int x, int64_t axis,
                                     int *out)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.axis.axis = axis;
    return opsched_build_unary(g, name, OPSCHED_OP_FLATTEN, &a, x, out);
}
