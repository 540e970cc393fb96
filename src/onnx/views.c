/*
 * views.c - the ops that move, reshape or index data rather than compute
 * it: Reshape, Flatten, Squeeze, Unsqueeze, Expand, Slice, Split, Gather,
 * Pad, Transpose, Identity, Dropout, Cast, CastLike, Tile, DepthToSpace,
 * SpaceToDepth (Reshape, Transpose, Reshape), GatherElements, GatherND,
 * ScatterElements, ScatterND, OneHot, Trilu, and the ones made of
 * constants too large to fold (ConstantOfShape, EyeLike; Range refused).
 *
 * The shape helpers here resolve what the ONNX op means (-1 and 0 in
 * Reshape, negative axes, clamped slice ranges, attributes that became
 * inputs in opset 10, 11, 13 or 18) into static shapes; folding uses them on
 * constants and conversion on graph tensors, so both agree.
 */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

static opsched_status bad(os_loader *L, int node, const char *what)
{
    return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "%s", what);
}

opsched_status os_onnx_broadcast(os_loader *L, int node, const opsched_shape *a,
                                 const opsched_shape *b, opsched_shape *out)
{
    int n = OS_MAX(a->ndim, b->ndim);
    opsched_shape r = {.ndim = n};
    for (int i = 0; i < n; i++) {
        int ai = a->ndim - n + i, bi = b->ndim - n + i;
        int64_t da = ai >= 0 ? a->d[ai] : 1, db = bi >= 0 ? b->d[bi] : 1;
        if (da == db || db == 1)
            r.d[i] = da;
        else if (da == 1)
            r.d[i] = db;
        else {
            char b1[128], b2[128];
            return os_onnx_node_fail(
                L, node, OPSCHED_ERR_SHAPE, "shapes %s and %s do not broadcast",
                opsched_shape_format(a, b1, sizeof(b1)), opsched_shape_format(b, b2, sizeof(b2)));
        }
    }
    *out = r;
    return OPSCHED_OK;
}

opsched_status os_onnx_check_dims(os_loader *L, int node, const opsched_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++)
        if (s->d[i] < 0 || s->d[i] > OS_ONNX_MAX_DIM || !os_mul_ok(n, s->d[i], &n) ||
            n > OS_ONNX_MAX_NUMEL)
            return bad(L, node, "the resulting shape is too large");
    return OPSCHED_OK;
}

/* Axes of Squeeze/Unsqueeze/Reduce*: an attribute before `input_from`, the
 * node's input 1 from then on.  *n = -1 when none are given. */
static opsched_status axes_of(os_loader *L, int node, int64_t input_from, int64_t *axes, int *n)
{
    *n = -1;
    if (L->opset < input_from) return os_onnx_attr_ints(L, node, "axes", axes, OPSCHED_MAX_DIMS, n);
    return os_onnx_in_ints(L, node, 1, "axes", axes, OPSCHED_MAX_DIMS, n);
}

opsched_status os_onnx_reshape_to(os_loader *L, int node, const opsched_shape *in,
                                  opsched_shape *out)
{
    int64_t want[OPSCHED_MAX_DIMS];
    int n = -1;
    int64_t allowzero = 0;
    OS_TRY(os_onnx_in_ints(L, node, 1, "shape", want, OPSCHED_MAX_DIMS, &n));
    OS_TRY(os_onnx_attr_int(L, node, "allowzero", &allowzero));
    if (n < 0) return bad(L, node, "no target shape");
    opsched_shape o = {.ndim = n};
    int infer = -1;
    int64_t known = 1, numel = opsched_shape_numel(in);
    for (int i = 0; i < n; i++) {
        int64_t d = want[i];
        if (d == 0 && !allowzero) {
            if (i >= in->ndim)
                return bad(L, node, "0 in the target shape has no input dim to copy");
            d = in->d[i];
        }
        if (d == -1) {
            if (infer >= 0) return bad(L, node, "more than one -1 in the target shape");
            infer = i;
            continue;
        }
        if (d < 0 || d > OS_ONNX_MAX_DIM) return bad(L, node, "invalid value in the target shape");
        if (!os_mul_ok(known, d, &known) || known > OS_ONNX_MAX_NUMEL)
            return bad(L, node, "the target shape is too large");
        o.d[i] = d;
    }
    if (infer >= 0) {
        if (known == 0 || numel % known != 0) {
            char b1[128];
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                     "cannot infer -1: %lld elements of %s do not divide by %lld",
                                     (long long)numel, opsched_shape_format(in, b1, sizeof(b1)),
                                     (long long)known);
        }
        o.d[infer] = numel / known;
    }
    OS_TRY(os_onnx_check_dims(L, node, &o));
    if (opsched_shape_numel(&o) != numel) {
        char b1[128], b2[128];
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "cannot reshape %s to %s",
                                 opsched_shape_format(in, b1, sizeof(b1)),
                                 opsched_shape_format(&o, b2, sizeof(b2)));
    }
    *out = o;
    return OPSCHED_OK;
}

opsched_status os_onnx_squeeze_to(os_loader *L, int node, const opsched_shape *in,
                                  opsched_shape *out)
{
    int64_t axes[OPSCHED_MAX_DIMS];
    int n;
    OS_TRY(axes_of(L, node, 13, axes, &n));
    int drop[OPSCHED_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        int64_t a;
        OS_TRY(os_onnx_axis(L, node, axes[i], in->ndim, &a));
        if (in->d[a] != 1)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                     "cannot squeeze axis %lld of size %lld", (long long)a,
                                     (long long)in->d[a]);
        drop[a] = 1;
    }
    opsched_shape o = {0};
    for (int d = 0; d < in->ndim; d++) {
        int gone = n < 0 ? in->d[d] == 1 : drop[d];
        if (!gone) o.d[o.ndim++] = in->d[d];
    }
    *out = o;
    return OPSCHED_OK;
}

opsched_status os_onnx_unsqueeze_to(os_loader *L, int node, const opsched_shape *in,
                                    opsched_shape *out)
{
    int64_t axes[OPSCHED_MAX_DIMS];
    int n;
    OS_TRY(axes_of(L, node, 13, axes, &n));
    if (n < 0) return bad(L, node, "no axes given");
    int rank = in->ndim + n;
    if (rank > OPSCHED_MAX_DIMS)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, "rank %d is more than %d", rank,
                                 OPSCHED_MAX_DIMS);
    int ins[OPSCHED_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        int64_t a;
        OS_TRY(os_onnx_axis(L, node, axes[i], rank, &a));
        if (ins[a]) return bad(L, node, "an axis is given twice");
        ins[a] = 1;
    }
    opsched_shape o = {.ndim = rank};
    for (int d = 0, k = 0; d < rank; d++)
        o.d[d] = ins[d] ? 1 : in->d[k++];
    *out = o;
    return OPSCHED_OK;
}

opsched_status os_onnx_flatten_to(os_loader *L, int node, const opsched_shape *in,
                                  opsched_shape *out, int64_t *axis)
{
    int64_t a = 1;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &a));
    if (a < 0) a += in->ndim;
    if (a < 0 || a > in->ndim) return bad(L, node, "axis out of range");
    opsched_shape o = {.ndim = 2, .d = {1, 1}};
    for (int d = 0; d < in->ndim; d++)
        o.d[d < a ? 0 : 1] *= in->d[d];
    OS_TRY(os_onnx_check_dims(L, node, &o));
    *out = o;
    *axis = a;
    return OPSCHED_OK;
}

opsched_status os_onnx_expand_to(os_loader *L, int node, const opsched_shape *in,
                                 opsched_shape *out)
{
    int64_t want[OPSCHED_MAX_DIMS];
    int n;
    OS_TRY(os_onnx_in_ints(L, node, 1, "shape", want, OPSCHED_MAX_DIMS, &n));
    if (n < 0) return bad(L, node, "no target shape");
    opsched_shape t = {.ndim = n};
    for (int i = 0; i < n; i++) {
        if (want[i] < 0 || want[i] > OS_ONNX_MAX_DIM)
            return bad(L, node, "invalid value in the target shape");
        t.d[i] = want[i];
    }
    OS_TRY(os_onnx_broadcast(L, node, in, &t, out));
    return os_onnx_check_dims(L, node, out);
}

/* ONNX Slice clamping of one axis; writes the resolved start and end. */
static int64_t slice_len(int64_t dim, int64_t *start, int64_t *end, int64_t step)
{
    int64_t st = *start, en = *end;
    if (st < 0) st = st < -dim ? -dim - 1 : st + dim; /* keeps st + dim from overflowing */
    if (en < 0) en = en < -dim ? -dim - 1 : en + dim;
    int64_t len;
    if (step > 0) {
        st = st < 0 ? 0 : (st > dim ? dim : st);
        en = en < 0 ? 0 : (en > dim ? dim : en);
        len = en > st ? (en - st - 1) / step + 1 : 0;
    } else {
        st = st < 0 ? -1 : (st > dim - 1 ? dim - 1 : st);
        en = en < -1 ? -1 : (en > dim - 1 ? dim - 1 : en);
        len = st > en ? (st - en - 1) / -step + 1 : 0;
    }
    *start = st;
    *end = en;
    return len;
}

opsched_status os_onnx_slice_to(os_loader *L, int node, const opsched_shape *in,
                                opsched_slice_attr *attr, opsched_shape *out)
{
    int64_t starts[OPSCHED_MAX_DIMS], ends[OPSCHED_MAX_DIMS], axes[OPSCHED_MAX_DIMS],
        steps[OPSCHED_MAX_DIMS];
    int ns = -1, ne = -1, na = -1, nst = -1;
    if (L->opset < 10) {
        OS_TRY(os_onnx_attr_ints(L, node, "starts", starts, OPSCHED_MAX_DIMS, &ns));
        OS_TRY(os_onnx_attr_ints(L, node, "ends", ends, OPSCHED_MAX_DIMS, &ne));
        OS_TRY(os_onnx_attr_ints(L, node, "axes", axes, OPSCHED_MAX_DIMS, &na));
    } else {
        OS_TRY(os_onnx_in_ints(L, node, 1, "starts", starts, OPSCHED_MAX_DIMS, &ns));
        OS_TRY(os_onnx_in_ints(L, node, 2, "ends", ends, OPSCHED_MAX_DIMS, &ne));
        OS_TRY(os_onnx_in_ints(L, node, 3, "axes", axes, OPSCHED_MAX_DIMS, &na));
        OS_TRY(os_onnx_in_ints(L, node, 4, "steps", steps, OPSCHED_MAX_DIMS, &nst));
    }
    if (ns < 0 || ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return bad(L, node, "starts, ends, axes and steps must have the same length");
    opsched_slice_attr s;
    memset(&s, 0, sizeof(s));
    for (int d = 0; d < in->ndim; d++) {
        s.ends[d] = in->d[d];
        s.steps[d] = 1;
    }
    int seen[OPSCHED_MAX_DIMS] = {0};
    for (int i = 0; i < ns; i++) {
        int64_t a = i;
        if (na >= 0)
            OS_TRY(os_onnx_axis(L, node, axes[i], in->ndim, &a));
        else if (i >= in->ndim)
            return bad(L, node, "more starts than dimensions");
        if (seen[a]) return bad(L, node, "an axis is sliced twice");
        seen[a] = 1;
        int64_t step = nst >= 0 ? steps[i] : 1;
        if (step == 0) return bad(L, node, "slice step 0");
        /* Any step longer than the largest dim means the same; keeping it
         * small keeps -step and the length arithmetic in range. */
        step = OS_MAX(-2 * OS_ONNX_MAX_DIM, OS_MIN(2 * OS_ONNX_MAX_DIM, step));
        s.starts[a] = starts[i];
        s.ends[a] = ends[i];
        s.steps[a] = step;
    }
    opsched_shape o = *in;
    for (int d = 0; d < in->ndim; d++)
        o.d[d] = slice_len(in->d[d], &s.starts[d], &s.ends[d], s.steps[d]);
    *attr = s;
    *out = o;
    return OPSCHED_OK;
}

/* ---- conversion --------------------------------------------------------- */

static int is_graph_output(const os_loader *L, int v)
{
    for (size_t i = 0; i < L->gp->n_output; i++)
        if (os_onnx_find(L, L->gp->output[i]->name) == v) return 1;
    return 0;
}

/* A value that is a weight or a constant rather than something computed. */
static int is_static(const os_loader *L, int v)
{
    const os_val *x = &L->vals[os_onnx_root(L, v)];
    return x->cv || x->role == OS_ROLE_WEIGHT || x->role == OS_ROLE_CONST;
}

static opsched_status view_reshape(os_loader *L, int node, int x, const char *op)
{
    opsched_shape in, o;
    OS_TRY(os_onnx_shape_of(L, node, x, &in));
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    if (strcmp(op, "Flatten") == 0) {
        OS_TRY(os_onnx_flatten_to(L, node, &in, &o, &a.axis.axis));
        return os_onnx_emit(L, node, OPSCHED_OP_FLATTEN, &a, &x, 1, 1);
    }
    if (strcmp(op, "Reshape") == 0)
        OS_TRY(os_onnx_reshape_to(L, node, &in, &o));
    else if (strcmp(op, "Squeeze") == 0)
        OS_TRY(os_onnx_squeeze_to(L, node, &in, &o));
    else
        OS_TRY(os_onnx_unsqueeze_to(L, node, &in, &o));
    a.shape.shape = o;
    return os_onnx_emit(L, node, OPSCHED_OP_RESHAPE, &a, &x, 1, 1);
}

opsched_status os_onnx_split_sizes(os_loader *L, int node, const opsched_shape *in,
                                   opsched_split_attr *sp)
{
    memset(sp, 0, sizeof(*sp));
    int64_t axis = 0, num = 0;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &axis));
    OS_TRY(os_onnx_axis(L, node, axis, in->ndim, &sp->axis));
    int n_out = os_onnx_num_out(L, node), max = (int)OS_ARRAY_LEN(sp->sizes), n = -1;
    if (n_out < 1 || n_out > max)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, "%d outputs (1 to %d supported)",
                                 n_out, max);
    if (L->opset < 13)
        OS_TRY(os_onnx_attr_ints(L, node, "split", sp->sizes, max, &n));
    else
        OS_TRY(os_onnx_in_ints(L, node, 1, "split", sp->sizes, max, &n));
    int64_t dim = in->d[sp->axis];
    if (n >= 0) {
        if (n != n_out) return bad(L, node, "split sizes do not match the outputs");
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            if (sp->sizes[i] < 0 || sp->sizes[i] > dim)
                return bad(L, node, "a split size does not fit the axis");
            sum += sp->sizes[i];
        }
        if (sum != dim) return bad(L, node, "the split sizes do not add up to the axis");
    } else {
        /* Equal parts; opset 18 lets the last one be smaller. */
        OS_TRY(os_onnx_attr_int(L, node, "num_outputs", &num));
        if (num != 0 && num != n_out) return bad(L, node, "num_outputs does not match the outputs");
        int64_t part = (dim + n_out - 1) / n_out;
        if (L->opset < 18 && dim % n_out != 0)
            return bad(L, node, "the axis does not split into equal parts");
        for (int i = 0; i < n_out; i++) {
            int64_t left = dim - part * i;
            sp->sizes[i] = left < 0 ? 0 : (left < part ? left : part);
        }
    }
    sp->n = n_out;
    return OPSCHED_OK;
}

static opsched_status view_split(os_loader *L, int node, int x)
{
    opsched_shape in;
    OS_TRY(os_onnx_shape_of(L, node, x, &in));
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    OS_TRY(os_onnx_split_sizes(L, node, &in, &a.split));
    return os_onnx_emit(L, node, OPSCHED_OP_SPLIT, &a, &x, 1, a.split.n);
}

static opsched_status pad_params(os_loader *L, int node, int rank, opsched_pad_attr *p)
{
    int64_t pads[2 * OPSCHED_MAX_DIMS], axes[OPSCHED_MAX_DIMS];
    int np = -1, na = -1;
    char mode[16] = "constant";
    const char *m = mode;
    memset(p, 0, sizeof(*p));
    OS_TRY(os_onnx_attr_string(L, node, "mode", mode, sizeof(mode), &m));
    if (L->opset < 11) {
        OS_TRY(os_onnx_attr_ints(L, node, "pads", pads, 2 * OPSCHED_MAX_DIMS, &np));
        if (np < 0) OS_TRY(os_onnx_attr_ints(L, node, "paddings", pads, 2 * OPSCHED_MAX_DIMS, &np));
        OS_TRY(os_onnx_attr_float(L, node, "value", &p->value));
    } else {
        OS_TRY(os_onnx_in_ints(L, node, 1, "pads", pads, 2 * OPSCHED_MAX_DIMS, &np));
        const os_cval *cv = os_onnx_in_cval(L, node, 2);
        if (os_onnx_in(L, node, 2) >= 0 && (!cv || cv->n != 1))
            return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                     "constant_value must be a scalar known at load time");
        if (cv) p->value = (float)os_onnx_cval_float(cv, 0);
        OS_TRY(os_onnx_in_ints(L, node, 3, "axes", axes, OPSCHED_MAX_DIMS, &na));
    }
    if (strcmp(m, "constant") == 0)
        p->mode = OPSCHED_PAD_CONSTANT;
    else if (strcmp(m, "reflect") == 0)
        p->mode = OPSCHED_PAD_REFLECT;
    else if (strcmp(m, "edge") == 0)
        p->mode = OPSCHED_PAD_EDGE;
    else if (strcmp(m, "wrap") == 0 && L->opset >= 19)
        p->mode = OPSCHED_PAD_WRAP;
    else
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, "pad mode '%s' is not supported",
                                 m);
    int n_axes = na >= 0 ? na : rank;
    if (np != 2 * n_axes) return bad(L, node, "pads must hold a begin and an end for each axis");
    for (int i = 0; i < n_axes; i++) {
        int64_t a = i;
        if (na >= 0) OS_TRY(os_onnx_axis(L, node, axes[i], rank, &a));
        if (pads[i] < -OS_ONNX_MAX_DIM || pads[i] > OS_ONNX_MAX_DIM ||
            pads[n_axes + i] < -OS_ONNX_MAX_DIM || pads[n_axes + i] > OS_ONNX_MAX_DIM)
            return bad(L, node, "padding out of range");
        p->pads[a] = pads[i];
        p->pads[rank + a] = pads[n_axes + i];
    }
    return OPSCHED_OK;
}

/* A zero Pad of H and W read only by an AveragePool that counts padding:
 * the pool can do the padding itself, as the network that was exported
 * did (torch writes AvgPool2d(padding=p) as Pad + AveragePool). */
static int pad_merges(os_loader *L, int y, const opsched_pad_attr *p, int rank)
{
    if (y < 0 || rank != 4 || p->mode != OPSCHED_PAD_CONSTANT || p->value != 0.0f) return 0;
    if (p->pads[0] || p->pads[1] || p->pads[4] || p->pads[5]) return 0;
    for (int i = 0; i < 8; i++)
        if (p->pads[i] < 0) return 0;
    if (os_onnx_num_uses(L, y) != 1 || is_graph_output(L, y)) return 0;
    int user = L->use_node[L->use_off[y]];
    const Onnx__NodeProto *u = L->gp->node[user];
    if (L->use_pos[L->use_off[y]] != 0 || strcmp(u->op_type, "AveragePool") != 0) return 0;
    int64_t ceil_mode = 0, include = 0, kernel[2] = {0, 0}, pads[4] = {0, 0, 0, 0};
    int nk = 0, np = 0;
    char buf[32];
    const char *auto_pad = "NOTSET";
    if (os_onnx_attr_int(L, user, "ceil_mode", &ceil_mode) != OPSCHED_OK ||
        os_onnx_attr_int(L, user, "count_include_pad", &include) != OPSCHED_OK ||
        os_onnx_attr_ints(L, user, "kernel_shape", kernel, 2, &nk) != OPSCHED_OK ||
        os_onnx_attr_ints(L, user, "pads", pads, 4, &np) != OPSCHED_OK ||
        os_onnx_attr_string(L, user, "auto_pad", buf, sizeof(buf), &auto_pad) != OPSCHED_OK) {
        opsched_ctx_clear_error(L->ctx); /* the pool reports its own errors */
        return 0;
    }
    if (ceil_mode || nk != 2 || strcmp(auto_pad, "NOTSET") != 0) return 0;
    int pool_pads = pads[0] || pads[1] || pads[2] || pads[3];
    if (pool_pads && !include) return 0;
    /* The pool's own limit: padding at most half the kernel. */
    int64_t t = p->pads[2] + pads[0], l = p->pads[3] + pads[1];
    int64_t b = p->pads[6] + pads[2], r = p->pads[7] + pads[3];
    if (2 * OS_MAX(t, b) > kernel[0] || 2 * OS_MAX(l, r) > kernel[1]) return 0;
    return 1;
}

static opsched_status view_pad(os_loader *L, int node, int x)
{
    opsched_shape in;
    OS_TRY(os_onnx_shape_of(L, node, x, &in));
    opsched_op_attr a;
    OS_TRY(pad_params(L, node, in.ndim, &a.pad));
    int zero = 1;
    for (int i = 0; i < 2 * in.ndim; i++)
        if (a.pad.pads[i]) zero = 0;
    opsched_shape o = in;
    int shrinks = 0;
    for (int d = 0; d < in.ndim; d++) {
        o.d[d] = in.d[d] + a.pad.pads[d] + a.pad.pads[in.ndim + d];
        if (o.d[d] < 0) shrinks = 1; /* the graph names that error */
    }
    if (!shrinks) OS_TRY(os_onnx_check_dims(L, node, &o));
    int y = os_onnx_out(L, node, 0);
    if (zero && y >= 0) {
        os_onnx_alias(L, node, 0, x);
        return OPSCHED_OK;
    }
    if (pad_merges(L, y, &a.pad, in.ndim)) {
        os_val *v = &L->vals[y];
        v->pad_src = os_onnx_root(L, x);
        v->pad[0] = a.pad.pads[2];
        v->pad[1] = a.pad.pads[3];
        v->pad[2] = a.pad.pads[6];
        v->pad[3] = a.pad.pads[7];
        return OPSCHED_OK;
    }
    return os_onnx_emit(L, node, OPSCHED_OP_PAD, &a, &x, 1, 1);
}

static opsched_status filled(os_loader *L, int node, const char *tag, opsched_dtype dt, double v,
                             const opsched_shape *s, int out_k, int *out);

static opsched_status view_passthrough(os_loader *L, int node, int x, const char *op)
{
    int extra = os_onnx_out(L, node, 1);
    int mask = extra >= 0 && (os_onnx_num_uses(L, extra) > 0 || is_graph_output(L, extra));
    if (mask && L->opset < 10)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "the mask output of a Dropout before opset 10 is not supported");
    if (strcmp(op, "Dropout") == 0 && L->opset >= 12) {
        const os_cval *mode = os_onnx_in_cval(L, node, 2);
        const os_cval *ratio = os_onnx_in_cval(L, node, 1);
        /* In training mode a ratio of 0 drops nothing (some exporters write
         * training_mode true with ratio 0): that is the identity too. */
        int no_drop = ratio && ratio->n == 1 && os_onnx_cval_float(ratio, 0) == 0.0;
        if (os_onnx_in(L, node, 2) >= 0 && (!mode || os_onnx_cval_int(mode, 0) != 0) && !no_drop)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                     "training_mode must be a constant false (or the ratio a "
                                     "constant 0)");
    }
    if (mask) {
        /* At inference every element is kept: the mask is all true. */
        opsched_shape s;
        OS_TRY(os_onnx_shape_of(L, node, x, &s));
        OS_TRY(filled(L, node, "keep", OPSCHED_BOOL, 1.0, &s, 1, NULL));
    }
    if (is_static(L, x)) {
        os_onnx_alias(L, node, 0, x);
        return OPSCHED_OK;
    }
    opsched_op_kind k = strcmp(op, "Dropout") == 0 ? OPSCHED_OP_DROPOUT : OPSCHED_OP_IDENTITY;
    return os_onnx_emit(L, node, k, NULL, &x, 1, 1);
}

/* Cast and CastLike: an alias when the type does not change. */
static opsched_status view_cast(os_loader *L, int node, int x, const char *op)
{
    int64_t to = 0;
    if (strcmp(op, "CastLike") == 0) {
        int t = os_onnx_root(L, os_onnx_in(L, node, 1));
        if (t < 0) return bad(L, node, "input 1 (target_type) is missing");
        to = L->vals[t].cv ? L->vals[t].cv->elem : L->vals[t].elem;
    } else {
        OS_TRY(os_onnx_attr_int(L, node, "to", &to));
    }
    int id;
    OS_TRY(os_onnx_tensor_id(L, x, &id));
    const opsched_tensor *t = opsched_graph_tensor(L->g, id);
    if (os_onnx_elem_of(t->dtype) == to) {
        os_onnx_alias(L, node, 0, x);
        return OPSCHED_OK;
    }
    opsched_dtype dt;
    int y = os_onnx_out(L, node, 0);
    OS_TRY(os_onnx_dtype(L->ctx, (int32_t)to, y >= 0 ? L->vals[y].name : "output", &dt));
    return os_onnx_cast(L, node, "cast", id, dt, 0, NULL);
}

static opsched_status view_tile(os_loader *L, int node, int x)
{
    int id;
    OS_TRY(os_onnx_tensor_id(L, x, &id));
    const opsched_shape *in = &os_onnx_t(L, id)->shape;
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    int n;
    OS_TRY(os_onnx_in_ints(L, node, 1, "repeats", a.tile.repeats, OPSCHED_MAX_DIMS, &n));
    if (n != in->ndim) return bad(L, node, "repeats must hold one value per axis");
    opsched_shape o = *in;
    for (int d = 0; d < n; d++)
        if (a.tile.repeats[d] < 0 || !os_mul_ok(in->d[d], a.tile.repeats[d], &o.d[d]))
            return bad(L, node, "invalid repeats");
    OS_TRY(os_onnx_check_dims(L, node, &o));
    return os_onnx_step(L, node, "tile", 0, OPSCHED_OP_TILE, &a, &id, 1, 1, NULL);
}

/* DepthToSpace and SpaceToDepth: Reshape to 6-D, Transpose, Reshape. */
static opsched_status view_depth_space(os_loader *L, int node, int x, const char *op)
{
    int id;
    OS_TRY(os_onnx_tensor_id(L, x, &id));
    const opsched_shape in = os_onnx_t(L, id)->shape;
    int64_t bs = 0;
    OS_TRY(os_onnx_attr_int(L, node, "blocksize", &bs));
    char buf[8];
    const char *mode = "DCR";
    int to_space = strcmp(op, "DepthToSpace") == 0;
    if (to_space || L->opset >= 28)
        OS_TRY(os_onnx_attr_string(L, node, "mode", buf, sizeof(buf), &mode));
    int crd = strcmp(mode, "CRD") == 0;
    if (!crd && strcmp(mode, "DCR") != 0) return bad(L, node, "mode must be DCR or CRD");
    if (in.ndim != 4) return bad(L, node, "the input must be 4-D (N, C, H, W)");
    if (bs < 1 || bs > 65536) return bad(L, node, "blocksize must be positive");
    int64_t N = in.d[0], C = in.d[1], H = in.d[2], W = in.d[3], b2 = bs * bs;
    opsched_shape s6 = {.ndim = 6}, o = {.ndim = 4};
    int64_t perm[6];
    if (to_space) {
        if (C % b2 != 0) return bad(L, node, "the channels do not divide by blocksize squared");
        int64_t c = C / b2;
        int64_t d6[6] = {N, bs, bs, c, H, W}, c6[6] = {N, c, bs, bs, H, W};
        int64_t p6[6] = {0, 3, 4, 1, 5, 2}, q6[6] = {0, 1, 4, 2, 5, 3};
        memcpy(s6.d, crd ? c6 : d6, sizeof(d6));
        memcpy(perm, crd ? q6 : p6, sizeof(p6));
        int64_t od[4] = {N, c, H * bs, W * bs};
        memcpy(o.d, od, sizeof(od));
    } else {
        if (H % bs != 0 || W % bs != 0)
            return bad(L, node, "height and width do not divide by blocksize");
        int64_t d6[6] = {N, C, H / bs, bs, W / bs, bs};
        int64_t p6[6] = {0, 3, 5, 1, 2, 4}, q6[6] = {0, 1, 3, 5, 2, 4};
        memcpy(s6.d, d6, sizeof(d6));
        memcpy(perm, crd ? q6 : p6, sizeof(p6));
        int64_t od[4] = {N, C * b2, H / bs, W / bs};
        memcpy(o.d, od, sizeof(od));
    }
    OS_TRY(os_onnx_check_dims(L, node, &o));
    int t;
    OS_TRY(os_onnx_reshape(L, node, "blocks", id, &s6, OS_TMP, &t));
    OS_TRY(os_onnx_transpose(L, node, "moved", t, perm, OS_TMP, &t));
    return os_onnx_reshape(L, node, "out", t, &o, 0, NULL);
}

/* GatherElements, GatherND, ScatterElements, ScatterND. */
static opsched_status view_indexed(os_loader *L, int node, int x, const char *op)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    int ids[3], n = strncmp(op, "Scatter", 7) == 0 ? 3 : 2;
    OS_TRY(os_onnx_tensor_id(L, x, &ids[0]));
    for (int k = 1; k < n; k++)
        OS_TRY(os_onnx_in_id(L, node, k, &ids[k]));
    opsched_op_kind kind;
    if (strcmp(op, "GatherElements") == 0) {
        kind = OPSCHED_OP_GATHER_ELEMENTS;
        OS_TRY(os_onnx_attr_int(L, node, "axis", &a.axis.axis));
    } else if (strcmp(op, "GatherND") == 0) {
        kind = OPSCHED_OP_GATHER_ND;
        OS_TRY(os_onnx_attr_int(L, node, "batch_dims", &a.gather_nd.batch_dims));
        const opsched_shape *xs = &os_onnx_t(L, ids[0])->shape, *is = &os_onnx_t(L, ids[1])->shape;
        int64_t f = is->ndim ? opsched_shape_numel(is) / OS_MAX(1, is->d[is->ndim - 1]) : 1;
        for (int d = 0; d < xs->ndim; d++)
            if (!os_mul_ok(f, xs->d[d], &f) || f > OS_ONNX_MAX_NUMEL)
                return bad(L, node, "the result is too large");
    } else {
        kind = strcmp(op, "ScatterND") == 0 ? OPSCHED_OP_SCATTER_ND : OPSCHED_OP_SCATTER_ELEMENTS;
        if (kind == OPSCHED_OP_SCATTER_ELEMENTS)
            OS_TRY(os_onnx_attr_int(L, node, "axis", &a.scatter.axis));
        char buf[16];
        const char *red = "none";
        if (L->opset >= 16)
            OS_TRY(os_onnx_attr_string(L, node, "reduction", buf, sizeof(buf), &red));
        static const char *const names[] = {"none", "add", "mul", "max", "min"};
        int found = 0;
        for (int i = 0; i < 5; i++)
            if (strcmp(red, names[i]) == 0) {
                a.scatter.reduction = (opsched_scatter_reduction)i;
                found = 1;
            }
        if (!found)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "unknown reduction '%s'", red);
    }
    return os_onnx_step(L, node, "index", 0, kind, &a, ids, n, 1, NULL);
}

static opsched_status view_onehot(os_loader *L, int node, int x)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.onehot.axis = -1;
    OS_TRY(os_onnx_attr_int(L, node, "axis", &a.onehot.axis));
    const os_cval *d = os_onnx_in_cval(L, node, 1);
    int dv = os_onnx_in(L, node, 1);
    if (dv < 0) return bad(L, node, "depth is missing");
    if (!d)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "depth ('%s') must be known when the model is loaded, but it is "
                                 "computed at run time",
                                 L->vals[dv].name);
    if (d->n != 1) return bad(L, node, "depth must hold one value");
    a.onehot.depth = os_onnx_cval_int(d, 0);
    if (a.onehot.depth < 1 || a.onehot.depth > OS_ONNX_MAX_DIM)
        return bad(L, node, "depth must be in 1..2^31");
    int ids[2];
    OS_TRY(os_onnx_tensor_id(L, x, &ids[0]));
    OS_TRY(os_onnx_in_id(L, node, 2, &ids[1]));
    const opsched_shape *is = &os_onnx_t(L, ids[0])->shape;
    int64_t f[2] = {opsched_shape_numel(is), a.onehot.depth}, p;
    if (!os_mul_ok(f[0], f[1], &p) || p > OS_ONNX_MAX_NUMEL)
        return bad(L, node, "the result is too large");
    return os_onnx_step(L, node, "onehot", 0, OPSCHED_OP_ONEHOT, &a, ids, 2, 1, NULL);
}

/* Trilu whose k is computed at run time: the offsets j - i of the last two
 * axes (a constant) compared with k select x or 0. */
static opsched_status trilu_runtime_k(os_loader *L, int node, int x, int upper)
{
    int id, k, d, m, zero;
    OS_TRY(os_onnx_tensor_id(L, x, &id));
    OS_TRY(os_onnx_in_id(L, node, 1, &k));
    const opsched_shape xs = os_onnx_t(L, id)->shape;
    if (xs.ndim < 2) return bad(L, node, "the input must have rank 2 or more");
    if (opsched_shape_numel(&os_onnx_t(L, k)->shape) != 1)
        return bad(L, node, "k must be a scalar");
    int64_t rows = xs.d[xs.ndim - 2], cols = xs.d[xs.ndim - 1], n;
    if (!os_mul_ok(rows, cols, &n) || n > OS_ONNX_FOLD_MAX_ELEMS)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "a k computed at run time needs the %lldx%lld offsets as a "
                                 "constant, which is too large",
                                 (long long)rows, (long long)cols);
    opsched_shape ds = {.ndim = 2, .d = {rows, cols}};
    os_cval *off;
    OS_TRY(os_onnx_cval_new(L, OS_ONNX_INT64, &ds, &off));
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            off->i[i * cols + j] = j - i;
    OS_TRY(os_onnx_const(L, node, "offsets", OPSCHED_INT64, &ds, NULL, off->i, &d));
    OS_TRY(os_onnx_cast(L, node, "k", k, OPSCHED_INT64, OS_TMP, &k));
    OS_TRY(os_onnx_binfn(L, node, "kept",
                         upper ? OPSCHED_BINARY_GREATER_EQUAL : OPSCHED_BINARY_LESS_EQUAL, d, k,
                         OS_TMP, &m));
    OS_TRY(os_onnx_scalar(L, node, "zero", os_onnx_t(L, id)->dtype, 0.0, &zero));
    int ids[3] = {m, id, zero};
    return os_onnx_step(L, node, "trilu", 0, OPSCHED_OP_WHERE, NULL, ids, 3, 1, NULL);
}

static opsched_status view_trilu(os_loader *L, int node, int x)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    int64_t upper = 1;
    OS_TRY(os_onnx_attr_int(L, node, "upper", &upper));
    a.trilu.upper = upper != 0;
    int kv = os_onnx_in(L, node, 1);
    if (kv >= 0) {
        const os_cval *k = os_onnx_in_cval(L, node, 1);
        if (!k) return trilu_runtime_k(L, node, x, a.trilu.upper);
        if (k->n != 1 || k->is_float) return bad(L, node, "k must be one integer");
        a.trilu.k = OS_MAX(-OS_ONNX_MAX_DIM, OS_MIN(OS_ONNX_MAX_DIM, k->i[0]));
    }
    int id;
    OS_TRY(os_onnx_tensor_id(L, x, &id));
    return os_onnx_step(L, node, "trilu", 0, OPSCHED_OP_TRILU, &a, &id, 1, 1, NULL);
}

/* A one-element constant broadcast to shape s (ConstantOfShape and
 * EyeLike too large to keep on the host). */
static opsched_status filled(os_loader *L, int node, const char *tag, opsched_dtype dt, double v,
                             const opsched_shape *s, int out_k, int *out)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.shape.shape = *s;
    int c;
    OS_TRY(os_onnx_scalar(L, node, tag, dt, v, &c));
    return os_onnx_step(L, node, "fill", out_k, OPSCHED_OP_EXPAND, &a, &c, 1, 1, out);
}

static opsched_status view_constant_of_shape(os_loader *L, int node)
{
    int64_t dims[OPSCHED_MAX_DIMS];
    int n;
    OS_TRY(os_onnx_in_ints(L, node, 0, "shape", dims, OPSCHED_MAX_DIMS, &n));
    opsched_shape o = {.ndim = n < 0 ? 0 : n};
    for (int i = 0; i < o.ndim; i++)
        o.d[i] = dims[i];
    OS_TRY(os_onnx_check_dims(L, node, &o));
    const Onnx__AttributeProto *va = os_onnx_attr(L->gp->node[node], "value");
    os_cval *value = NULL;
    if (va && va->t) OS_TRY(os_onnx_tensor_cval(L, va->t, "value", 1, &value));
    if (va && (!value || value->n != 1))
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE,
                                 "'value' must be a one-element tensor");
    opsched_dtype dt;
    int y = os_onnx_out(L, node, 0);
    OS_TRY(os_onnx_dtype(L->ctx, value ? value->elem : OS_ONNX_FLOAT,
                         y >= 0 ? L->vals[y].name : "output", &dt));
    return filled(L, node, "value", dt, value ? os_onnx_cval_float(value, 0) : 0.0, &o, 0, NULL);
}

/* EyeLike too large to fold: ones, then both triangles cut away. */
static opsched_status view_eyelike(os_loader *L, int node, int x)
{
    opsched_shape s;
    OS_TRY(os_onnx_shape_of(L, node, x, &s));
    int64_t k = 0, dtv = 0;
    OS_TRY(os_onnx_attr_int(L, node, "k", &k));
    OS_TRY(os_onnx_attr_int(L, node, "dtype", &dtv));
    int r = os_onnx_root(L, x);
    int32_t elem = dtv ? (int32_t)dtv : L->vals[r].cv ? L->vals[r].cv->elem : L->vals[r].elem;
    opsched_dtype dt;
    int y = os_onnx_out(L, node, 0);
    OS_TRY(os_onnx_dtype(L->ctx, elem, y >= 0 ? L->vals[y].name : "output", &dt));
    int t;
    OS_TRY(filled(L, node, "one", dt, 1.0, &s, OS_TMP, &t));
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.trilu.upper = 1;
    a.trilu.k = OS_MAX(-OS_ONNX_MAX_DIM, OS_MIN(OS_ONNX_MAX_DIM, k));
    OS_TRY(os_onnx_step(L, node, "upper", OS_TMP, OPSCHED_OP_TRILU, &a, &t, 1, 1, &t));
    a.trilu.upper = 0;
    return os_onnx_step(L, node, "eye", 0, OPSCHED_OP_TRILU, &a, &t, 1, 1, NULL);
}

opsched_status os_onnx_convert_view(os_loader *L, int node, const char *op, int *done)
{
    int x = os_onnx_in(L, node, 0);
    *done = 1;
    if (strcmp(op, "ConstantOfShape") == 0) return view_constant_of_shape(L, node);
    if (strcmp(op, "Range") == 0) {
        for (int k = 0; k < 3; k++) {
            int v = os_onnx_in(L, node, k);
            if (v >= 0 && !os_onnx_in_cval(L, node, k))
                return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                         "its output length depends on '%s' (input %d), which "
                                         "is computed at run time",
                                         L->vals[v].name, k);
        }
        return bad(L, node, "start, limit and delta are required");
    }
    if (x < 0 && strcmp(op, "Transpose") != 0) {
        *done = 0;
        return OPSCHED_OK;
    }
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    if (strcmp(op, "Reshape") == 0 || strcmp(op, "Flatten") == 0 || strcmp(op, "Squeeze") == 0 ||
        strcmp(op, "Unsqueeze") == 0)
        return view_reshape(L, node, x, op);
    if (strcmp(op, "Expand") == 0) {
        opsched_shape in;
        OS_TRY(os_onnx_shape_of(L, node, x, &in));
        OS_TRY(os_onnx_expand_to(L, node, &in, &a.shape.shape));
        return os_onnx_emit(L, node, OPSCHED_OP_EXPAND, &a, &x, 1, 1);
    }
    if (strcmp(op, "Slice") == 0) {
        opsched_shape in, o;
        OS_TRY(os_onnx_shape_of(L, node, x, &in));
        OS_TRY(os_onnx_slice_to(L, node, &in, &a.slice, &o));
        /* Resolved ranges use -1 for "before index 0" (negative steps); the
         * graph reads negative values the ONNX way, so say it as -dim-1. */
        for (int d = 0; d < in.ndim; d++) {
            if (a.slice.starts[d] == -1) a.slice.starts[d] = -in.d[d] - 1;
            if (a.slice.ends[d] == -1) a.slice.ends[d] = -in.d[d] - 1;
        }
        return os_onnx_emit(L, node, OPSCHED_OP_SLICE, &a, &x, 1, 1);
    }
    if (strcmp(op, "Split") == 0) return view_split(L, node, x);
    if (strcmp(op, "Gather") == 0) {
        int ins[2] = {x, os_onnx_in(L, node, 1)};
        if (ins[1] < 0) return bad(L, node, "no indices");
        OS_TRY(os_onnx_attr_int(L, node, "axis", &a.axis.axis));
        opsched_shape data, idx;
        OS_TRY(os_onnx_shape_of(L, node, x, &data));
        OS_TRY(os_onnx_shape_of(L, node, ins[1], &idx));
        int64_t n = opsched_shape_numel(&idx), axis;
        OS_TRY(os_onnx_axis(L, node, a.axis.axis, data.ndim, &axis));
        for (int d = 0; d < data.ndim; d++)
            if (d != axis && !os_mul_ok(n, data.d[d], &n)) n = -1;
        if (n < 0 || n > OS_ONNX_MAX_NUMEL) return bad(L, node, "the result is too large");
        return os_onnx_emit(L, node, OPSCHED_OP_GATHER, &a, ins, 2, 1);
    }
    if (strcmp(op, "Pad") == 0) return view_pad(L, node, x);
    if (strcmp(op, "Transpose") == 0) {
        if (x < 0) return bad(L, node, "no input");
        int n = 0;
        OS_TRY(os_onnx_attr_ints(L, node, "perm", a.transpose.perm, OPSCHED_MAX_DIMS, &n));
        a.transpose.n = n;
        return os_onnx_emit(L, node, OPSCHED_OP_TRANSPOSE, &a, &x, 1, 1);
    }
    if (strcmp(op, "Identity") == 0 || strcmp(op, "Dropout") == 0)
        return view_passthrough(L, node, x, op);
    if (strcmp(op, "Cast") == 0 || strcmp(op, "CastLike") == 0) return view_cast(L, node, x, op);
    if (strcmp(op, "Tile") == 0) return view_tile(L, node, x);
    if (strcmp(op, "DepthToSpace") == 0 || strcmp(op, "SpaceToDepth") == 0)
        return view_depth_space(L, node, x, op);
    if (strcmp(op, "GatherElements") == 0 || strcmp(op, "GatherND") == 0 ||
        strcmp(op, "ScatterElements") == 0 || strcmp(op, "ScatterND") == 0)
        return view_indexed(L, node, x, op);
    if (strcmp(op, "OneHot") == 0) return view_onehot(L, node, x);
    if (strcmp(op, "Trilu") == 0) return view_trilu(L, node, x);
    if (strcmp(op, "EyeLike") == 0) return view_eyelike(L, node, x);
    *done = 0;
    return OPSCHED_OK;
}
