/*
 * window.c - convolution and pooling: Conv, ConvTranspose, MaxPool,
 * AveragePool, LpPool, GlobalLpPool.
 *
 * The graph's window ops are 2-D.  A 1-D op runs as a 2-D one of height 1:
 * its input [N, C, L] is reshaped to [N, C, 1, L], its weight [M, C/g, k]
 * to [M, C/g, 1, k] (a weight of its own when it comes from the file), and
 * the output [N, M, 1, L'] back to [N, M, L'].  That is exact: a unit
 * height with unit kernel, stride and dilation and no padding changes
 * nothing.  3-D ops are refused by name.
 *
 * LpPool is Pow(|x|, p) -> AveragePool counting the padding -> Mul(kernel
 * area) -> Pow(1/p), which sums |x|^p over each window with the padding
 * contributing nothing; GlobalLpPool is ReduceL1/ReduceL2 over the spatial
 * axes (other p: Abs, Pow, ReduceSum, Pow).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

/* Refuses a node whose output would hold more than 2^40 elements, given
 * an upper bound of its element count as factors. */
static opsched_status bound_ok(os_loader *L, int node, const int64_t *f, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        if (f[i] < 0 || !os_mul_ok(p, f[i], &p) || p > OS_ONNX_MAX_NUMEL)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "the output would be too large");
    return OPSCHED_OK;
}

/* The number of spatial axes of input x (1 or 2); 3-D is refused. */
static opsched_status spatial_rank(os_loader *L, int node, const opsched_shape *x, const char *what,
                                   int *sp)
{
    *sp = x->ndim - 2;
    if (*sp == 1 || *sp == 2) return OPSCHED_OK;
    if (*sp == 3)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "3-D %s is not supported (the input has rank 5; 1-D and 2-D "
                                 "are)",
                                 what);
    return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                             "only 1-D and 2-D %s is supported (the input has rank %d)", what,
                             x->ndim);
}

/* x as 4-D: [N, C, 1, L] for a 1-D op. */
static opsched_shape lifted(const opsched_shape *x, int sp)
{
    if (sp == 2) return *x;
    opsched_shape o = {.ndim = 4, .d = {x->d[0], x->d[1], 1, x->d[2]}};
    return o;
}

/* Reads an attribute of one value per spatial axis into out[2] (H, W);
 * for a 1-D op the one value is W's.  *given says whether it was there. */
static opsched_status spatial_ints(os_loader *L, int node, const char *name, int sp, int64_t out[2],
                                   int *given)
{
    int64_t v[OPSCHED_MAX_DIMS];
    int n = -1;
    OS_TRY(os_onnx_attr_ints(L, node, name, v, OPSCHED_MAX_DIMS, &n));
    if (given) *given = n >= 0;
    if (n < 0) return OPSCHED_OK;
    if (sp == 2 && n == 1) {
        out[0] = out[1] = v[0]; /* one value for both axes, as some exporters write */
    } else if (n == sp) {
        if (sp == 2) out[0] = v[0];
        out[1] = v[sp - 1];
    } else {
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "%s needs %d values, has %d", name, sp,
                                 n);
    }
    return OPSCHED_OK;
}

static opsched_status auto_pad_of(os_loader *L, int node, const char **ap, char *buf, size_t size)
{
    *ap = "NOTSET";
    OS_TRY(os_onnx_attr_string(L, node, "auto_pad", buf, size, ap));
    if ((*ap)[0] == '\0') *ap = "NOTSET";
    if (strcmp(*ap, "NOTSET") != 0 && strcmp(*ap, "VALID") != 0 && strcmp(*ap, "SAME_UPPER") != 0 &&
        strcmp(*ap, "SAME_LOWER") != 0)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "unknown auto_pad '%s'", *ap);
    return OPSCHED_OK;
}

/* Reads strides, dilations, pads and auto_pad of a window op whose input,
 * as 4-D, is x and kernel k; writes pads as top, left, bottom, right. */
static opsched_status window_attrs(os_loader *L, int node, const opsched_shape *x, int sp,
                                   const int64_t k[2], int64_t stride[2], int64_t dil[2],
                                   int64_t pads[4])
{
    stride[0] = stride[1] = dil[0] = dil[1] = 1;
    pads[0] = pads[1] = pads[2] = pads[3] = 0;
    OS_TRY(spatial_ints(L, node, "strides", sp, stride, NULL));
    OS_TRY(spatial_ints(L, node, "dilations", sp, dil, NULL));
    int64_t p[OPSCHED_MAX_DIMS];
    int n = 0;
    OS_TRY(os_onnx_attr_ints(L, node, "pads", p, OPSCHED_MAX_DIMS, &n));
    if (n != 0 && n != 2 * sp)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "pads needs %d values", 2 * sp);
    if (n == 4) memcpy(pads, p, sizeof(int64_t) * 4);
    if (n == 2) {
        pads[1] = p[0];
        pads[3] = p[1];
    }
    for (int i = 0; i < 2; i++)
        if (stride[i] < 1 || dil[i] < 1 || stride[i] > OS_ONNX_MAX_DIM ||
            dil[i] > OS_ONNX_MAX_DIM || k[i] < 1 || k[i] > OS_ONNX_MAX_DIM)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                     "kernel, strides and dilations must be positive");
    for (int i = 0; i < 4; i++)
        if (pads[i] < 0 || pads[i] > OS_ONNX_MAX_DIM)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "pads must be in 0..2^31");
    char buf[32];
    const char *ap;
    OS_TRY(auto_pad_of(L, node, &ap, buf, sizeof(buf)));
    if (strcmp(ap, "NOTSET") == 0) return OPSCHED_OK;
    if (strcmp(ap, "VALID") == 0) {
        pads[0] = pads[1] = pads[2] = pads[3] = 0;
        return OPSCHED_OK;
    }
    int upper = strcmp(ap, "SAME_UPPER") == 0;
    for (int i = 0; i < 2; i++) {
        int64_t in = x->d[2 + i];
        int64_t out = (in + stride[i] - 1) / stride[i];
        int64_t total = (out - 1) * stride[i] + (k[i] - 1) * dil[i] + 1 - in;
        if (total < 0) total = 0;
        int64_t small = total / 2, big = total - small;
        pads[i] = upper ? small : big;
        pads[2 + i] = upper ? big : small;
    }
    return OPSCHED_OK;
}

/* The graph tensor of input k (a weight [M, C, k...]) as 4-D shape s4. */
static opsched_status weight_4d(os_loader *L, int node, int k, int sp, const opsched_shape *s4,
                                int *out)
{
    int v = os_onnx_root(L, os_onnx_in(L, node, k));
    if (v < 0) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "input %d is missing", k);
    if (sp == 2) return os_onnx_tensor_id(L, v, out);
    const os_val *x = &L->vals[v];
    if (x->id < 0 && x->init && x->role == OS_ROLE_WEIGHT) {
        opsched_dtype dt;
        OS_TRY(os_onnx_dtype(L->ctx, x->elem, x->name, &dt));
        size_t len = strlen(x->name) + sizeof("/2d");
        char *name = malloc(len);
        if (!name) return OS_NOMEM(L->ctx);
        snprintf(name, len, "%s/2d", x->name);
        int fresh = opsched_graph_find_tensor(L->g, name, out) != OPSCHED_OK;
        opsched_status st = OPSCHED_OK;
        if (fresh) st = opsched_graph_add_tensor(L->g, name, OPSCHED_TENSOR_WEIGHT, dt, s4, out);
        free(name);
        OS_TRY(st);
        if (fresh && L->opts.load_weights) {
            void *buf = NULL;
            size_t bytes = 0;
            OS_TRY(os_onnx_tensor_payload(L, x->init, x->name, dt, &buf, &bytes));
            st = buf ? opsched_graph_set_data(L->g, *out, buf, bytes) : OPSCHED_OK;
            free(buf);
            OS_TRY(st);
        }
        return OPSCHED_OK;
    }
    int id;
    OS_TRY(os_onnx_tensor_id(L, v, &id));
    return os_onnx_reshape(L, node, "weight_2d", id, s4, OS_TMP, out);
}

/* Lifts input 0 to 4-D (tmp) or takes it as it is. */
static opsched_status input_4d(os_loader *L, int node, int v, int sp, int *out)
{
    int id;
    OS_TRY(os_onnx_tensor_id(L, v, &id));
    if (sp == 2) {
        *out = id;
        return OPSCHED_OK;
    }
    opsched_shape s4 = lifted(&os_onnx_t(L, id)->shape, 1);
    return os_onnx_reshape(L, node, "in_2d", id, &s4, OS_TMP, out);
}

/* Adds the 4-D op; a 1-D op's result is reshaped back to 3-D as output 0. */
static opsched_status finish(os_loader *L, int node, const char *tag, int sp, opsched_op_kind op,
                             const opsched_op_attr *a, const int *ids, int n_in)
{
    int y;
    OS_TRY(os_onnx_step(L, node, tag, sp == 2 ? 0 : OS_TMP, op, a, ids, n_in, 1, &y));
    if (sp == 2) return OPSCHED_OK;
    const opsched_shape *s = &os_onnx_t(L, y)->shape;
    opsched_shape o = {.ndim = 3, .d = {s->d[0], s->d[1], s->d[3]}};
    return os_onnx_reshape(L, node, "out_1d", y, &o, 0, NULL);
}

/* ---- convolution ------------------------------------------------------------ */

static opsched_status conv(os_loader *L, int node)
{
    int xv = os_onnx_in(L, node, 0), bv = os_onnx_in(L, node, 2);
    opsched_shape x, w;
    int sp;
    OS_TRY(os_onnx_shape_of(L, node, xv, &x));
    OS_TRY(spatial_rank(L, node, &x, "convolution", &sp));
    OS_TRY(os_onnx_shape_of(L, node, os_onnx_in(L, node, 1), &w));
    if (w.ndim != x.ndim)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "the weight has rank %d, not %d",
                                 w.ndim, x.ndim);
    opsched_shape x4 = lifted(&x, sp), w4 = lifted(&w, sp);
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    opsched_conv_attr *c = &a.conv;
    c->kernel[0] = w4.d[2];
    c->kernel[1] = w4.d[3];
    OS_TRY(spatial_ints(L, node, "kernel_shape", sp, c->kernel, NULL));
    c->groups = 1;
    OS_TRY(os_onnx_attr_int(L, node, "group", &c->groups));
    if (c->groups < 1 || c->groups > OS_ONNX_MAX_DIM)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "group must be positive");
    OS_TRY(window_attrs(L, node, &x4, sp, c->kernel, c->stride, c->dilation, c->pads));
    int64_t f[4] = {x4.d[0], w4.d[0], x4.d[2] + c->pads[0] + c->pads[2],
                    x4.d[3] + c->pads[1] + c->pads[3]};
    OS_TRY(bound_ok(L, node, f, 4));
    int ids[3];
    OS_TRY(input_4d(L, node, xv, sp, &ids[0]));
    OS_TRY(weight_4d(L, node, 1, sp, &w4, &ids[1]));
    if (bv >= 0) OS_TRY(os_onnx_tensor_id(L, bv, &ids[2]));
    return finish(L, node, "conv", sp, OPSCHED_OP_CONV, &a, ids, bv >= 0 ? 3 : 2);
}

static opsched_status conv_transpose(os_loader *L, int node)
{
    int xv = os_onnx_in(L, node, 0), bv = os_onnx_in(L, node, 2);
    opsched_shape x, w;
    int sp;
    OS_TRY(os_onnx_shape_of(L, node, xv, &x));
    OS_TRY(spatial_rank(L, node, &x, "transposed convolution", &sp));
    OS_TRY(os_onnx_shape_of(L, node, os_onnx_in(L, node, 1), &w));
    if (w.ndim != x.ndim)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "the weight has rank %d, not %d",
                                 w.ndim, x.ndim);
    opsched_shape x4 = lifted(&x, sp), w4 = lifted(&w, sp);
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    opsched_conv_transpose_attr *c = &a.conv_transpose;
    c->kernel[0] = w4.d[2];
    c->kernel[1] = w4.d[3];
    c->groups = 1;
    OS_TRY(spatial_ints(L, node, "kernel_shape", sp, c->kernel, NULL));
    OS_TRY(os_onnx_attr_int(L, node, "group", &c->groups));
    if (c->groups < 1 || c->groups > OS_ONNX_MAX_DIM)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "group must be positive");
    OS_TRY(spatial_ints(L, node, "output_padding", sp, c->output_padding, NULL));
    for (int i = 0; i < 2; i++)
        if (c->output_padding[i] < 0 || c->output_padding[i] > OS_ONNX_MAX_DIM)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "invalid output_padding");
    /* Strides, dilations and explicit pads as for Conv; auto_pad and
     * output_shape are worked out here (they mean something else). */
    char buf[32];
    const char *ap;
    OS_TRY(auto_pad_of(L, node, &ap, buf, sizeof(buf)));
    c->stride[0] = c->stride[1] = c->dilation[0] = c->dilation[1] = 1;
    OS_TRY(spatial_ints(L, node, "strides", sp, c->stride, NULL));
    OS_TRY(spatial_ints(L, node, "dilations", sp, c->dilation, NULL));
    int64_t p[OPSCHED_MAX_DIMS];
    int np = 0;
    OS_TRY(os_onnx_attr_ints(L, node, "pads", p, OPSCHED_MAX_DIMS, &np));
    if (np != 0 && np != 2 * sp)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "pads needs %d values", 2 * sp);
    if (np == 4) memcpy(c->pads, p, sizeof(c->pads));
    if (np == 2) {
        c->pads[1] = p[0];
        c->pads[3] = p[1];
    }
    for (int i = 0; i < 2; i++)
        if (c->stride[i] < 1 || c->dilation[i] < 1 || c->stride[i] > OS_ONNX_MAX_DIM ||
            c->dilation[i] > OS_ONNX_MAX_DIM || c->kernel[i] < 1 || c->kernel[i] > OS_ONNX_MAX_DIM)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                     "kernel, strides and dilations must be positive");
    for (int i = 0; i < 4; i++)
        if (c->pads[i] < 0 || c->pads[i] > OS_ONNX_MAX_DIM)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "pads must be in 0..2^31");
    int64_t want[OPSCHED_MAX_DIMS];
    int nw = -1;
    OS_TRY(os_onnx_attr_ints(L, node, "output_shape", want, OPSCHED_MAX_DIMS, &nw));
    if (nw >= 0 && nw != sp && nw != sp + 2)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "output_shape needs %d values", sp);
    /* The output extent's terms, each bounded so that no sum of them (here
     * or in the graph's shape inference) can overflow. */
    for (int i = 0; i < 2; i++) {
        int64_t t1, t2;
        if (!os_mul_ok(c->stride[i], x4.d[2 + i], &t1) || t1 > OS_ONNX_MAX_NUMEL ||
            !os_mul_ok(c->kernel[i], c->dilation[i], &t2) || t2 > OS_ONNX_MAX_NUMEL ||
            c->output_padding[i] > OS_ONNX_MAX_DIM)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "the output would be too large");
    }
    int same = strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0;
    if (strcmp(ap, "VALID") == 0) memset(c->pads, 0, sizeof(c->pads));
    if (nw >= 0 || same) {
        for (int i = 0; i < 2; i++) {
            int64_t in = x4.d[2 + i], target;
            if (nw >= 0)
                target = i == 0 && sp == 1 ? 1 : want[nw - sp + i - (sp == 1 ? 1 : 0)];
            else
                target = in * c->stride[i];
            if (target < 1 || target > OS_ONNX_MAX_DIM)
                return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "invalid output_shape");
            int64_t natural = c->stride[i] * (in - 1) + c->output_padding[i] +
                              (c->kernel[i] - 1) * c->dilation[i] + 1; /* < 2^63: checked above */
            int64_t total = natural - target;
            if (total < 0) {
                /* A larger output than the natural one: the extra rows are
                 * output padding at the end. */
                c->output_padding[i] -= total;
                total = 0;
            }
            int upper = strcmp(ap, "SAME_UPPER") == 0;
            c->pads[i] = upper ? total / 2 : total - total / 2;
            c->pads[2 + i] = upper ? total - total / 2 : total / 2;
        }
    }
    int64_t f[4] = {x4.d[0], w4.d[1] * c->groups, 0, 0};
    for (int i = 0; i < 2; i++)
        f[2 + i] =
            x4.d[2 + i] * c->stride[i] + c->kernel[i] * c->dilation[i] + c->output_padding[i];
    OS_TRY(bound_ok(L, node, f, 4));
    int ids[3];
    OS_TRY(input_4d(L, node, xv, sp, &ids[0]));
    OS_TRY(weight_4d(L, node, 1, sp, &w4, &ids[1]));
    if (bv >= 0) OS_TRY(os_onnx_tensor_id(L, bv, &ids[2]));
    return finish(L, node, "conv_transpose", sp, OPSCHED_OP_CONV_TRANSPOSE, &a, ids,
                  bv >= 0 ? 3 : 2);
}

/* ---- pooling --------------------------------------------------------------------- */

/* Reads the attributes of a MaxPool, AveragePool or LpPool on x. */
static opsched_status pool_attrs(os_loader *L, int node, const opsched_shape *x4, int sp,
                                 opsched_pool_attr *p)
{
    int given = 0;
    OS_TRY(spatial_ints(L, node, "kernel_shape", sp, p->kernel, &given));
    if (!given) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "kernel_shape is required");
    if (sp == 1) p->kernel[0] = 1;
    int64_t ceil_mode = 0;
    OS_TRY(os_onnx_attr_int(L, node, "ceil_mode", &ceil_mode));
    p->ceil_mode = ceil_mode != 0;
    return window_attrs(L, node, x4, sp, p->kernel, p->stride, p->dilation, p->pads);
}

static opsched_status pool(os_loader *L, int node, opsched_op_kind op)
{
    int xv = os_onnx_in(L, node, 0);
    if (os_onnx_out(L, node, 1) >= 0)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "the Indices output is not supported");
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    opsched_pool_attr *p = &a.pool;
    const os_val *in = xv >= 0 ? &L->vals[xv] : NULL;
    int merged = in && in->pad_src >= 0;
    if (merged) xv = in->pad_src;
    opsched_shape x;
    int sp;
    OS_TRY(os_onnx_shape_of(L, node, xv, &x));
    OS_TRY(spatial_rank(L, node, &x, "pooling", &sp));
    opsched_shape x4 = lifted(&x, sp);
    OS_TRY(pool_attrs(L, node, &x4, sp, p));
    int64_t include = 0;
    OS_TRY(os_onnx_attr_int(L, node, "count_include_pad", &include));
    p->count_include_pad = op == OPSCHED_OP_AVGPOOL && include != 0;
    if (merged) {
        for (int i = 0; i < 4; i++)
            p->pads[i] += in->pad[i];
        p->count_include_pad = 1;
    }
    int64_t f[4] = {x4.d[0], x4.d[1], x4.d[2] + p->pads[0] + p->pads[2],
                    x4.d[3] + p->pads[1] + p->pads[3]};
    OS_TRY(bound_ok(L, node, f, 4));
    if (sp == 2) return os_onnx_emit(L, node, op, &a, &xv, 1, 1);
    int id;
    OS_TRY(input_4d(L, node, xv, sp, &id));
    return finish(L, node, "pool", sp, op, &a, &id, 1);
}

/* Output extent of a window in floor mode, as the graph counts it. */
static int64_t floor_out(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t s, int64_t d)
{
    int64_t span = in + p0 + p1 - ((k - 1) * d + 1);
    return span < 0 ? 0 : span / s + 1;
}

static int64_t ceil_out(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t s, int64_t d)
{
    int64_t span = in + p0 + p1 - ((k - 1) * d + 1);
    if (span < 0) return 0;
    int64_t o = (span + s - 1) / s + 1;
    if ((o - 1) * s >= in + p0) o--;
    return o;
}

/* A power with a constant exponent of x's type. */
static opsched_status power(os_loader *L, int node, const char *tag, int x, double e, int out_k,
                            int *out)
{
    int c;
    OS_TRY(os_onnx_scalar(L, node, tag, os_onnx_t(L, x)->dtype, e, &c));
    return os_onnx_binop(L, node, tag, OPSCHED_OP_POW, x, c, out_k, out);
}

static opsched_status lp_pool(os_loader *L, int node)
{
    int xv = os_onnx_in(L, node, 0);
    opsched_shape x;
    int sp;
    OS_TRY(os_onnx_shape_of(L, node, xv, &x));
    OS_TRY(spatial_rank(L, node, &x, "pooling", &sp));
    opsched_shape x4 = lifted(&x, sp);
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    opsched_pool_attr *p = &a.pool;
    OS_TRY(pool_attrs(L, node, &x4, sp, p));
    float pw = 2.0f;
    OS_TRY(os_onnx_attr_float(L, node, "p", &pw));
    if (!(pw > 0) || pw > 1e6f)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "p must be positive");
    for (int i = 0; i < 2 && p->ceil_mode; i++) {
        int64_t args[5] = {x4.d[2 + i], p->pads[i], p->pads[2 + i], p->kernel[i], p->stride[i]};
        if (ceil_out(args[0], args[1], args[2], args[3], args[4], p->dilation[i]) !=
            floor_out(args[0], args[1], args[2], args[3], args[4], p->dilation[i]))
            return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                     "ceil_mode with a last window past the padded input is "
                                     "not supported");
    }
    p->count_include_pad = 1;
    int64_t f[4] = {x4.d[0], x4.d[1], x4.d[2] + p->pads[0] + p->pads[2],
                    x4.d[3] + p->pads[1] + p->pads[3]};
    OS_TRY(bound_ok(L, node, f, 4));
    int t, area;
    OS_TRY(input_4d(L, node, xv, sp, &t));
    OS_TRY(os_onnx_unfn(L, node, "abs", OPSCHED_UNARY_ABS, 0, 0, t, OS_TMP, &t));
    if (pw != 1.0f) OS_TRY(power(L, node, "pow", t, pw, OS_TMP, &t));
    OS_TRY(os_onnx_step(L, node, "avg", OS_TMP, OPSCHED_OP_AVGPOOL, &a, &t, 1, 1, &t));
    OS_TRY(os_onnx_scalar(L, node, "area", os_onnx_t(L, t)->dtype,
                          (double)(p->kernel[0] * p->kernel[1]), &area));
    int last = pw == 1.0f && sp == 2;
    OS_TRY(os_onnx_binop(L, node, "sum", OPSCHED_OP_MUL, t, area, last ? 0 : OS_TMP, &t));
    if (pw != 1.0f) OS_TRY(power(L, node, "root", t, 1.0 / (double)pw, sp == 2 ? 0 : OS_TMP, &t));
    if (sp == 2) return OPSCHED_OK;
    const opsched_shape *s = &os_onnx_t(L, t)->shape;
    opsched_shape o = {.ndim = 3, .d = {s->d[0], s->d[1], s->d[3]}};
    return os_onnx_reshape(L, node, "out_1d", t, &o, 0, NULL);
}

static opsched_status global_lp_pool(os_loader *L, int node)
{
    int x;
    OS_TRY(os_onnx_in_id(L, node, 0, &x));
    int rank = os_onnx_t(L, x)->shape.ndim;
    if (rank < 3)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                 "the input must be N, C, spatial... (rank %d)", rank);
    float pw = 2.0f;
    OS_TRY(os_onnx_attr_float(L, node, "p", &pw));
    if (!(pw > 0) || pw > 1e6f)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "p must be positive");
    int64_t axes[OPSCHED_MAX_DIMS];
    int n = 0;
    for (int d = 2; d < rank; d++)
        axes[n++] = d;
    if (pw == 1.0f || pw == 2.0f)
        return os_onnx_reduce(L, node, "norm", pw == 1.0f ? OPSCHED_REDUCE_L1 : OPSCHED_REDUCE_L2,
                              x, axes, n, 1, 0, NULL);
    int t;
    OS_TRY(os_onnx_unfn(L, node, "abs", OPSCHED_UNARY_ABS, 0, 0, x, OS_TMP, &t));
    OS_TRY(power(L, node, "pow", t, pw, OS_TMP, &t));
    OS_TRY(os_onnx_reduce(L, node, "sum", OPSCHED_REDUCE_SUM, t, axes, n, 1, OS_TMP, &t));
    return power(L, node, "root", t, 1.0 / (double)pw, 0, NULL);
}

opsched_status os_onnx_convert_window(os_loader *L, int node, const char *op, int *done)
{
    *done = 1;
    if (strcmp(op, "Conv") == 0) return conv(L, node);
    if (strcmp(op, "ConvTranspose") == 0) return conv_transpose(L, node);
    if (strcmp(op, "MaxPool") == 0) return pool(L, node, OPSCHED_OP_MAXPOOL);
    if (strcmp(op, "AveragePool") == 0) return pool(L, node, OPSCHED_OP_AVGPOOL);
    if (strcmp(op, "LpPool") == 0) return lp_pool(L, node);
    if (strcmp(op, "GlobalLpPool") == 0) return global_lp_pool(L, node);
    *done = 0;
    return OPSCHED_OK;
}
