/*
 * window.c - convolution and pooling: Conv, ConvTranspose, MaxPool,
 * AveragePool, LpPool, GlobalLpPool.
 *
 * The graph's window ops are 2-D or 3-D (the depth axis of their
 * attributes).  A 1-D op runs as a 2-D one of height 1: its input [N, C, L]
 * is reshaped to [N, C, 1, L], its weight [M, C/g, k] to [M, C/g, 1, k] (a
 * weight of its own when it comes from the file), and the output
 * [N, M, 1, L'] back to [N, M, L'].  That is exact: a unit height with unit
 * kernel, stride and dilation and no padding changes nothing.
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

/* A window op's geometry per spatial axis, in the graph's order D, H, W:
 * a 2-D op has a unit D, a 1-D op a unit H as well (kernel, stride and
 * dilation 1, no padding). */
typedef struct win {
    int sp;       /* spatial axes in the file: 1, 2 or 3 */
    int64_t x[3]; /* the input's extents */
    int64_t k[3], s[3], d[3];
    int64_t pad[6];    /* begin D, H, W, then end D, H, W */
    int64_t outpad[3]; /* ConvTranspose */
} win;

/* The number of spatial axes of input x: 1, 2 or 3. */
static opsched_status spatial_rank(os_loader *L, int node, const opsched_shape *x, const char *what,
                                   int *sp)
{
    *sp = x->ndim - 2;
    if (*sp >= 1 && *sp <= 3) return OPSCHED_OK;
    return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                             "only 1-D, 2-D and 3-D %s is supported (the input has rank %d)", what,
                             x->ndim);
}

static void win_init(win *w, const opsched_shape *x, int sp)
{
    memset(w, 0, sizeof(*w));
    w->sp = sp;
    for (int i = 0; i < 3; i++) {
        w->x[i] = i < 3 - sp ? 1 : x->d[2 + i - (3 - sp)];
        w->k[i] = w->s[i] = w->d[i] = 1;
    }
}

/* The input as the graph takes it: [N, C, 1, L] for a 1-D op. */
static opsched_shape lifted(const opsched_shape *x, int sp)
{
    if (sp != 1) return *x;
    opsched_shape o = {.ndim = 4, .d = {x->d[0], x->d[1], 1, x->d[2]}};
    return o;
}

/* Reads an attribute of one value per spatial axis into the last sp
 * entries of out[3] (D, H, W).  *given says whether it was there. */
static opsched_status spatial_ints(os_loader *L, int node, const char *name, int sp, int64_t out[3],
                                   int *given)
{
    int64_t v[OPSCHED_MAX_DIMS];
    int n = -1;
    OS_TRY(os_onnx_attr_ints(L, node, name, v, OPSCHED_MAX_DIMS, &n));
    if (given) *given = n >= 0;
    if (n < 0) return OPSCHED_OK;
    if (sp >= 2 && n == 1) {
        for (int i = 3 - sp; i < 3; i++)
            out[i] = v[0]; /* one value for every axis, as some exporters write */
    } else if (n == sp) {
        for (int i = 0; i < sp; i++)
            out[3 - sp + i] = v[i];
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

/* Reads strides, dilations and explicit pads (w->k already set) and checks
 * them. */
static opsched_status strides_pads(os_loader *L, int node, win *w)
{
    int sp = w->sp;
    OS_TRY(spatial_ints(L, node, "strides", sp, w->s, NULL));
    OS_TRY(spatial_ints(L, node, "dilations", sp, w->d, NULL));
    int64_t p[OPSCHED_MAX_DIMS];
    int n = 0;
    OS_TRY(os_onnx_attr_ints(L, node, "pads", p, OPSCHED_MAX_DIMS, &n));
    if (n != 0 && n != 2 * sp)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "pads needs %d values", 2 * sp);
    for (int i = 0; i < n / 2; i++) {
        w->pad[3 - sp + i] = p[i];
        w->pad[6 - sp + i] = p[sp + i];
    }
    for (int i = 0; i < 3; i++)
        if (w->s[i] < 1 || w->d[i] < 1 || w->s[i] > OS_ONNX_MAX_DIM || w->d[i] > OS_ONNX_MAX_DIM ||
            w->k[i] < 1 || w->k[i] > OS_ONNX_MAX_DIM)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                     "kernel, strides and dilations must be positive");
    for (int i = 0; i < 6; i++)
        if (w->pad[i] < 0 || w->pad[i] > OS_ONNX_MAX_DIM)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "pads must be in 0..2^31");
    return OPSCHED_OK;
}

/* Strides, dilations, pads and auto_pad of a Conv or pool. */
static opsched_status window_attrs(os_loader *L, int node, win *w)
{
    OS_TRY(strides_pads(L, node, w));
    char buf[32];
    const char *ap;
    OS_TRY(auto_pad_of(L, node, &ap, buf, sizeof(buf)));
    if (strcmp(ap, "NOTSET") == 0) return OPSCHED_OK;
    memset(w->pad, 0, sizeof(w->pad));
    if (strcmp(ap, "VALID") == 0) return OPSCHED_OK;
    int upper = strcmp(ap, "SAME_UPPER") == 0;
    for (int i = 3 - w->sp; i < 3; i++) {
        int64_t in = w->x[i];
        int64_t out = (in + w->s[i] - 1) / w->s[i];
        int64_t total = (out - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1 - in;
        if (total < 0) total = 0;
        int64_t small = total / 2, big = total - small;
        w->pad[i] = upper ? small : big;
        w->pad[3 + i] = upper ? big : small;
    }
    return OPSCHED_OK;
}

/* Copies w's H and W into a graph attribute's 2-D fields and D into depth
 * (for a 3-D op). */
static void win_to(const win *w, int64_t kernel[2], int64_t stride[2], int64_t dil[2],
                   int64_t pads[4], opsched_window_depth *depth)
{
    for (int i = 0; i < 2; i++) {
        kernel[i] = w->k[1 + i];
        stride[i] = w->s[1 + i];
        dil[i] = w->d[1 + i];
        pads[i] = w->pad[1 + i];
        pads[2 + i] = w->pad[4 + i];
    }
    if (w->sp == 3) {
        depth->kernel = w->k[0];
        depth->stride = w->s[0];
        depth->dilation = w->d[0];
        depth->pad_begin = w->pad[0];
        depth->pad_end = w->pad[3];
        depth->output_padding = w->outpad[0];
    }
}

/* The graph tensor of input k (a weight [M, C, k...]) as the graph takes
 * it: 4-D s4 for a 1-D op. */
static opsched_status weight_of(os_loader *L, int node, int k, int sp, const opsched_shape *s4,
                                int *out)
{
    int v = os_onnx_root(L, os_onnx_in(L, node, k));
    if (v < 0) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "input %d is missing", k);
    if (sp != 1) return os_onnx_tensor_id(L, v, out);
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

/* Lifts input 0 of a 1-D op to 4-D (tmp) or takes it as it is. */
static opsched_status input_of(os_loader *L, int node, int v, int sp, int *out)
{
    int id;
    OS_TRY(os_onnx_tensor_id(L, v, &id));
    if (sp != 1) {
        *out = id;
        return OPSCHED_OK;
    }
    opsched_shape s4 = lifted(&os_onnx_t(L, id)->shape, 1);
    return os_onnx_reshape(L, node, "in_2d", id, &s4, OS_TMP, out);
}

/* Adds the graph op; a 1-D op's result is reshaped back to 3-D as output 0. */
static opsched_status finish(os_loader *L, int node, const char *tag, int sp, opsched_op_kind op,
                             const opsched_op_attr *a, const int *ids, int n_in)
{
    int y;
    OS_TRY(os_onnx_step(L, node, tag, sp != 1 ? 0 : OS_TMP, op, a, ids, n_in, 1, &y));
    if (sp != 1) return OPSCHED_OK;
    const opsched_shape *s = &os_onnx_t(L, y)->shape;
    opsched_shape o = {.ndim = 3, .d = {s->d[0], s->d[1], s->d[3]}};
    return os_onnx_reshape(L, node, "out_1d", y, &o, 0, NULL);
}

/* Bounds the output of a window op by its padded input's extents. */
static opsched_status padded_bound(os_loader *L, int node, const opsched_shape *x, int64_t ch,
                                   const win *w, const int64_t grow[3])
{
    int64_t f[5] = {x->d[0], ch, 0, 0, 0};
    for (int i = 0; i < 3; i++)
        f[2 + i] = grow ? grow[i] : w->x[i] + w->pad[i] + w->pad[3 + i];
    return bound_ok(L, node, f, 5);
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
    opsched_shape w4 = lifted(&w, sp);
    win g;
    win_init(&g, &x, sp);
    for (int i = 0; i < sp; i++)
        g.k[3 - sp + i] = w.d[2 + i];
    OS_TRY(spatial_ints(L, node, "kernel_shape", sp, g.k, NULL));
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    opsched_conv_attr *c = &a.conv;
    c->groups = 1;
    OS_TRY(os_onnx_attr_int(L, node, "group", &c->groups));
    if (c->groups < 1 || c->groups > OS_ONNX_MAX_DIM)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "group must be positive");
    OS_TRY(window_attrs(L, node, &g));
    win_to(&g, c->kernel, c->stride, c->dilation, c->pads, &c->depth);
    OS_TRY(padded_bound(L, node, &x, w.d[0], &g, NULL));
    int ids[3];
    OS_TRY(input_of(L, node, xv, sp, &ids[0]));
    OS_TRY(weight_of(L, node, 1, sp, &w4, &ids[1]));
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
    opsched_shape w4 = lifted(&w, sp);
    win g;
    win_init(&g, &x, sp);
    for (int i = 0; i < sp; i++)
        g.k[3 - sp + i] = w.d[2 + i];
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    opsched_conv_transpose_attr *c = &a.conv_transpose;
    c->groups = 1;
    OS_TRY(spatial_ints(L, node, "kernel_shape", sp, g.k, NULL));
    OS_TRY(os_onnx_attr_int(L, node, "group", &c->groups));
    if (c->groups < 1 || c->groups > OS_ONNX_MAX_DIM)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "group must be positive");
    OS_TRY(spatial_ints(L, node, "output_padding", sp, g.outpad, NULL));
    for (int i = 0; i < 3; i++)
        if (g.outpad[i] < 0 || g.outpad[i] > OS_ONNX_MAX_DIM)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "invalid output_padding");
    /* Strides, dilations and explicit pads as for Conv; auto_pad and
     * output_shape are worked out here (they mean something else). */
    char buf[32];
    const char *ap;
    OS_TRY(auto_pad_of(L, node, &ap, buf, sizeof(buf)));
    OS_TRY(strides_pads(L, node, &g));
    int64_t want[OPSCHED_MAX_DIMS];
    int nw = -1;
    OS_TRY(os_onnx_attr_ints(L, node, "output_shape", want, OPSCHED_MAX_DIMS, &nw));
    if (nw >= 0 && nw != sp && nw != sp + 2)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "output_shape needs %d values", sp);
    /* The output extent's terms, each bounded so that no sum of them (here
     * or in the graph's shape inference) can overflow. */
    for (int i = 0; i < 3; i++) {
        int64_t t1, t2;
        if (!os_mul_ok(g.s[i], g.x[i], &t1) || t1 > OS_ONNX_MAX_NUMEL ||
            !os_mul_ok(g.k[i], g.d[i], &t2) || t2 > OS_ONNX_MAX_NUMEL)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "the output would be too large");
    }
    int same = strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0;
    if (strcmp(ap, "VALID") == 0) memset(g.pad, 0, sizeof(g.pad));
    if (nw >= 0 || same) {
        for (int i = 3 - sp; i < 3; i++) {
            int64_t in = g.x[i];
            int64_t target = nw >= 0 ? want[nw - 3 + i] : in * g.s[i];
            if (target < 1 || target > OS_ONNX_MAX_DIM)
                return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "invalid output_shape");
            int64_t natural = g.s[i] * (in - 1) + g.outpad[i] + (g.k[i] - 1) * g.d[i] +
                              1; /* < 2^63: checked above */
            int64_t total = natural - target;
            if (total < 0) {
                /* A larger output than the natural one: the extra rows are
                 * output padding at the end. */
                g.outpad[i] -= total;
                total = 0;
            }
            int upper = strcmp(ap, "SAME_UPPER") == 0;
            g.pad[i] = upper ? total / 2 : total - total / 2;
            g.pad[3 + i] = upper ? total - total / 2 : total / 2;
        }
    }
    win_to(&g, c->kernel, c->stride, c->dilation, c->pads, &c->depth);
    c->output_padding[0] = g.outpad[1];
    c->output_padding[1] = g.outpad[2];
    int64_t grow[3];
    for (int i = 0; i < 3; i++)
        grow[i] = g.x[i] * g.s[i] + g.k[i] * g.d[i] + g.outpad[i];
    OS_TRY(padded_bound(L, node, &x, w.d[1] * c->groups, &g, grow));
    int ids[3];
    OS_TRY(input_of(L, node, xv, sp, &ids[0]));
    OS_TRY(weight_of(L, node, 1, sp, &w4, &ids[1]));
    if (bv >= 0) OS_TRY(os_onnx_tensor_id(L, bv, &ids[2]));
    return finish(L, node, "conv_transpose", sp, OPSCHED_OP_CONV_TRANSPOSE, &a, ids,
                  bv >= 0 ? 3 : 2);
}

/* ---- pooling --------------------------------------------------------------------- */

/* Reads the attributes of a MaxPool, AveragePool or LpPool on x. */
static opsched_status pool_attrs(os_loader *L, int node, win *w, opsched_pool_attr *p)
{
    int given = 0;
    OS_TRY(spatial_ints(L, node, "kernel_shape", w->sp, w->k, &given));
    if (!given) return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "kernel_shape is required");
    int64_t ceil_mode = 0;
    OS_TRY(os_onnx_attr_int(L, node, "ceil_mode", &ceil_mode));
    p->ceil_mode = ceil_mode != 0;
    OS_TRY(window_attrs(L, node, w));
    win_to(w, p->kernel, p->stride, p->dilation, p->pads, &p->depth);
    return OPSCHED_OK;
}

static opsched_status pool(os_loader *L, int node, opsched_op_kind op)
{
    int xv = os_onnx_in(L, node, 0);
    int indices = op == OPSCHED_OP_MAXPOOL && os_onnx_out(L, node, 1) >= 0;
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    opsched_pool_attr *p = &a.pool;
    if (indices) {
        int64_t order = 0;
        OS_TRY(os_onnx_attr_int(L, node, "storage_order", &order));
        p->storage_order = order != 0;
    }
    const os_val *in = xv >= 0 ? &L->vals[xv] : NULL;
    int merged = in && in->pad_src >= 0;
    if (merged) xv = in->pad_src;
    opsched_shape x;
    int sp;
    OS_TRY(os_onnx_shape_of(L, node, xv, &x));
    OS_TRY(spatial_rank(L, node, &x, "pooling", &sp));
    win g;
    win_init(&g, &x, sp);
    OS_TRY(pool_attrs(L, node, &g, p));
    int64_t include = 0;
    OS_TRY(os_onnx_attr_int(L, node, "count_include_pad", &include));
    p->count_include_pad = op == OPSCHED_OP_AVGPOOL && include != 0;
    if (merged) {
        for (int i = 0; i < 4; i++)
            p->pads[i] += in->pad[i];
        p->count_include_pad = 1;
    }
    OS_TRY(padded_bound(L, node, &x, x.d[1], &g, NULL));
    int n_out = indices ? 2 : 1;
    if (sp != 1) return os_onnx_emit(L, node, op, &a, &xv, 1, n_out);
    int id, y[2];
    OS_TRY(input_of(L, node, xv, sp, &id));
    if (!indices) return finish(L, node, "pool", sp, op, &a, &id, 1);
    /* 1-D with Indices: both outputs back to 3-D (a unit height leaves the
     * flat indices as they are) */
    OS_TRY(os_onnx_step(L, node, "pool", OS_TMP, op, &a, &id, 1, 2, y));
    const opsched_shape *s = &os_onnx_t(L, y[0])->shape;
    opsched_shape o = {.ndim = 3, .d = {s->d[0], s->d[1], s->d[3]}};
    OS_TRY(os_onnx_reshape(L, node, "out_1d", y[0], &o, 0, NULL));
    return os_onnx_reshape(L, node, "indices_1d", y[1], &o, 1, NULL);
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
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    opsched_pool_attr *p = &a.pool;
    win g;
    win_init(&g, &x, sp);
    OS_TRY(pool_attrs(L, node, &g, p));
    float pw = 2.0f;
    OS_TRY(os_onnx_attr_float(L, node, "p", &pw));
    if (!(pw > 0) || pw > 1e6f)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "p must be positive");
    for (int i = 0; i < 3 && p->ceil_mode; i++) {
        int64_t args[5] = {g.x[i], g.pad[i], g.pad[3 + i], g.k[i], g.s[i]};
        if (ceil_out(args[0], args[1], args[2], args[3], args[4], g.d[i]) !=
            floor_out(args[0], args[1], args[2], args[3], args[4], g.d[i]))
            return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                     "ceil_mode with a last window past the padded input is "
                                     "not supported");
    }
    p->count_include_pad = 1;
    OS_TRY(padded_bound(L, node, &x, x.d[1], &g, NULL));
    int t, area;
    OS_TRY(input_of(L, node, xv, sp, &t));
    OS_TRY(os_onnx_unfn(L, node, "abs", OPSCHED_UNARY_ABS, 0, 0, t, OS_TMP, &t));
    if (pw != 1.0f) OS_TRY(power(L, node, "pow", t, pw, OS_TMP, &t));
    OS_TRY(os_onnx_step(L, node, "avg", OS_TMP, OPSCHED_OP_AVGPOOL, &a, &t, 1, 1, &t));
    OS_TRY(os_onnx_scalar(L, node, "area", os_onnx_t(L, t)->dtype,
                          (double)(g.k[0] * g.k[1] * g.k[2]), &area));
    int last = pw == 1.0f && sp != 1;
    OS_TRY(os_onnx_binop(L, node, "sum", OPSCHED_OP_MUL, t, area, last ? 0 : OS_TMP, &t));
    if (pw != 1.0f) OS_TRY(power(L, node, "root", t, 1.0 / (double)pw, sp != 1 ? 0 : OS_TMP, &t));
    if (sp != 1) return OPSCHED_OK;
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
