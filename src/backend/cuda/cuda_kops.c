/*
 * cuda_kops.c - the operators run by the backend's own kernels
 * (kernels.cu): element-wise maths with numpy broadcasting on float data
 * (other types go to the generic family, cuda_ew.c), data movement on
 * every type (Concat, Split, Slice, Gather, Transpose, Pad, Expand, views:
 * only the element size matters), LayerNormalization and ReduceMean.
 *
 * Planning turns the node into the kernel's description once: strides of
 * every operand as the plan stores it (row-major, or channels-last for 4-D
 * tensors under NHWC), with unit dims dropped and contiguous dims merged,
 * so a launch is a single kernel call.  Ops whose rank changes around a
 * channels-last tensor (Gather, LayerNormalization over part of it, a
 * reshape between two different channels-last shapes) are NCHW only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

typedef struct kop_plan {
    cu_plan base;
    cuk_type kt;
    size_t elem;
    int64_t n;
    cuk_nd nd;
    int n_parts; /* Concat / Split */
    int64_t parts[CUK_MAX_SPLIT];
    int64_t outer, inner;
    cuk_pad_desc pad;
    cuk_reduce_desc red;
    int64_t rows, cols; /* LayerNormalization */
    float eps;
    int64_t g_axis, g_n_idx; /* Gather (outer, inner above) */
    void *idx;               /* owned indices, NULL: read input 1 */
    int idx32;
    int strided; /* views: strided copy instead of memcpy */
    size_t bytes;
    int col; /* ReduceMean as a column reduction of [col_o, col_r, col_c] */
    int64_t col_o, col_r, col_c;
} kop_plan;

static void kop_release(cu_plan *base)
{
    kop_plan *p = (kop_plan *)base;
    if (p->idx) (void)cudaFree(p->idx);
}

static opsched_status kop_new(const cu_plan_args *a, cu_launch_fn launch, int float_only,
                              kop_plan **out)
{
    for (int i = 0; float_only && i < a->node->n_inputs; i++) {
        const opsched_tensor *t = cu_in(a, i);
        if (t && !cu_dtype_is_float(t->dtype))
            return CU_UNSUPPORTED(a, "%s data", opsched_dtype_name(t->dtype));
    }
    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(kop_plan), launch, kop_release, &base));
    kop_plan *p = (kop_plan *)base;
    p->kt = a->kt;
    p->elem = cu_elem_size(a, cu_in(a, 0));
    *out = p;
    return OPSCHED_OK;
}

static opsched_status kop_done(const cu_plan_args *a, kop_plan *p, const char *algo, cu_plan **out)
{
    snprintf(a->info->algo, sizeof(a->info->algo), "%s", algo);
    *out = &p->base;
    return OPSCHED_OK;
}

/* ---- strided copies: Transpose, Slice, Expand ------------------------ */

static opsched_status copy_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                  void *const *in, void *const *out)
{
    kop_plan *p = (kop_plan *)base;
    (void)dev;
    if (p->n_parts > 0) /* a gather from a Concat's inputs */
        CUDA_CHECK(ctx, cuk_gather_concat(p->elem, &p->nd, p->n_parts, (const void *const *)in,
                                          p->parts, p->inner, out[0], s));
    else
        CUDA_CHECK(ctx, cuk_copy(p->elem, &p->nd, in[0], out[0], s));
    return OPSCHED_OK;
}

opsched_status cu_plan_transpose(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    const opsched_transpose_attr *t = &a->node->attr.transpose;
    kop_plan *p = NULL;
    OS_TRY(kop_new(a, copy_launch, 0, &p));
    int64_t xs[OPSCHED_MAX_DIMS];
    cu_strides(a, x, xs);
    cu_nd_over(a, y, &p->nd);
    for (int i = 0; i < y->shape.ndim; i++)
        p->nd.stride[1][i] = xs[t->perm[i]];
    cu_nd_simplify(&p->nd, 2);
    return kop_done(a, p, "kernel", out);
}

opsched_status cu_plan_slice(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    const opsched_slice_attr *sl = &a->node->attr.slice;
    kop_plan *p = NULL;
    OS_TRY(kop_new(a, copy_launch, 0, &p));
    int64_t xs[OPSCHED_MAX_DIMS];
    cu_strides(a, x, xs);
    cu_nd_over(a, y, &p->nd);
    for (int i = 0; i < y->shape.ndim; i++) {
        p->nd.stride[1][i] = xs[i] * sl->steps[i];
        if (y->shape.d[i] > 0) p->nd.offset[1] += sl->starts[i] * xs[i];
    }
    cu_nd_simplify(&p->nd, 2);
    return kop_done(a, p, "kernel", out);
}

opsched_status cu_plan_move(const cu_plan_args *a, cu_plan **out)
{
    const opsched_plan_options *o = a->opts;
    const opsched_node *first = opsched_graph_node(a->g, o->move_path[0]);
    const opsched_tensor *x = first ? opsched_graph_tensor(a->g, first->inputs[0]) : NULL;
    const opsched_tensor *y = cu_out(a, 0);
    if (!x || !y || o->move_path[o->n_move_path - 1] != cu_node_index(a) || x->dtype != y->dtype)
        return CU_UNSUPPORTED(a, "gather: the run does not end at this node or changes the type");
    int64_t xs[OPSCHED_MAX_DIMS], ys[OPSCHED_MAX_DIMS], dst[OPSCHED_MOVE_MAX_FACTORS];
    cu_strides(a, x, xs);
    cu_strides(a, y, ys);
    opsched_move_view v;
    if (!opsched_move_compose(a->g, o->move_path, o->n_move_path, xs, &v) || v.n > CUK_MAX_DIMS)
        return CU_UNSUPPORTED(a, "gather: the run is not one strided copy");
    opsched_move_dst_strides(&v, ys, dst);
    int c = o->move_concat ? opsched_move_concat(a->g, o->move_path[0]) : -1;
    if (o->move_concat &&
        (c < 0 || opsched_graph_node(a->g, c)->n_inputs > CUK_MAX_GATHER_PARTS))
        return CU_UNSUPPORTED(a, "gather: no Concat of at most %d inputs to read from",
                              CUK_MAX_GATHER_PARTS);
    for (int k = 0; c >= 0 && k < opsched_graph_node(a->g, c)->n_inputs; k++) {
        const opsched_tensor *t = opsched_graph_tensor(a->g, opsched_graph_node(a->g, c)->inputs[k]);
        if (cu_is_nhwc(a, t) != cu_is_nhwc(a, x))
            return CU_UNSUPPORTED(a, "gather: the Concat's inputs are not all in its layout");
    }
    kop_plan *p = NULL;
    OS_TRY(kop_new(a, copy_launch, 0, &p));
    p->elem = cu_elem_size(a, x);
    memset(&p->nd, 0, sizeof(p->nd));
    p->nd.ndim = v.n > 0 ? v.n : 1;
    p->nd.shape[0] = 1;
    for (int f = 0; f < v.n; f++) {
        p->nd.shape[f] = v.size[f];
        p->nd.stride[0][f] = dst[f];
        p->nd.stride[1][f] = v.stride[f];
    }
    p->nd.offset[1] = v.offset;
    cu_nd_simplify(&p->nd, 2);
    p->base.n_in = 1;
    p->base.need_in = 1;
    if (c >= 0) { /* the Concat's inputs in its place */
        const opsched_node *cc = opsched_graph_node(a->g, c);
        int axis = (int)cc->attr.axis.axis;
        if (axis < 0) axis += x->shape.ndim;
        p->n_parts = cc->n_inputs;
        p->inner = xs[axis];
        for (int k = 0; k < cc->n_inputs; k++)
            p->parts[k] = opsched_graph_tensor(a->g, cc->inputs[k])->shape.d[axis];
        p->base.n_in = cc->n_inputs;
        p->base.need_in = (1ull << cc->n_inputs) - 1;
        a->info->fused_concat = cc->n_inputs;
    }
    a->info->fused_movement = o->n_move_path;
    char algo[32];
    snprintf(algo, sizeof(algo), "gather:%d%s", o->n_move_path, c >= 0 ? "+concat" : "");
    return kop_done(a, p, algo, out);
}

opsched_status cu_plan_expand(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *y = cu_out(a, 0);
    kop_plan *p = NULL;
    OS_TRY(kop_new(a, copy_launch, 0, &p));
    cu_nd_over(a, y, &p->nd);
    cu_aligned_strides(a, cu_in(a, 0), &y->shape, p->nd.stride[1]);
    cu_nd_simplify(&p->nd, 2);
    return kop_done(a, p, "kernel", out);
}

/* ---- Concat and Split ------------------------------------------------ */

static opsched_status concat_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                    void *const *in, void *const *out)
{
    kop_plan *p = (kop_plan *)base;
    (void)dev;
    CUDA_CHECK(ctx, cuk_concat(p->elem, p->n_parts, (const void *const *)in, p->parts, p->outer,
                               p->inner, out[0], s));
    return OPSCHED_OK;
}

opsched_status cu_plan_concat(const cu_plan_args *a, cu_plan **out)
{
    int axis = (int)a->node->attr.axis.axis, n = a->node->n_inputs;
    if (n > CUK_MAX_CONCAT) return CU_UNSUPPORTED(a, "%d inputs (%d at most)", n, CUK_MAX_CONCAT);
    kop_plan *p = NULL;
    OS_TRY(kop_new(a, concat_launch, 0, &p));
    int64_t len;
    cu_axis_split(a, cu_out(a, 0), axis, &p->outer, &len, &p->inner);
    p->n_parts = n;
    for (int k = 0; k < n; k++)
        p->parts[k] = cu_in(a, k)->shape.d[axis];
    return kop_done(a, p, "kernel", out);
}

static opsched_status split_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                   void *const *in, void *const *out)
{
    kop_plan *p = (kop_plan *)base;
    (void)dev;
    CUDA_CHECK(ctx, cuk_split(p->elem, p->n_parts, in[0], p->parts, p->outer, p->inner, out, s));
    return OPSCHED_OK;
}

opsched_status cu_plan_split(const cu_plan_args *a, cu_plan **out)
{
    const opsched_split_attr *sp = &a->node->attr.split;
    if (sp->n > CUK_MAX_SPLIT)
        return CU_UNSUPPORTED(a, "%d outputs (%d at most)", sp->n, CUK_MAX_SPLIT);
    kop_plan *p = NULL;
    OS_TRY(kop_new(a, split_launch, 0, &p));
    int64_t len;
    cu_axis_split(a, cu_in(a, 0), (int)sp->axis, &p->outer, &len, &p->inner);
    p->n_parts = sp->n;
    for (int k = 0; k < sp->n; k++)
        p->parts[k] = sp->sizes[k];
    return kop_done(a, p, "kernel", out);
}

/* ---- Pad ------------------------------------------------------------- */

static opsched_status pad_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                 void *const *in, void *const *out)
{
    kop_plan *p = (kop_plan *)base;
    (void)dev;
    CUDA_CHECK(ctx, cuk_pad(p->elem, &p->pad, in[0], out[0], s));
    return OPSCHED_OK;
}

opsched_status cu_plan_pad(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    const opsched_pad_attr *pa = &a->node->attr.pad;
    kop_plan *p = NULL;
    OS_TRY(kop_new(a, pad_launch, 0, &p));
    int order[OPSCHED_MAX_DIMS];
    int64_t xs[OPSCHED_MAX_DIMS];
    int r = x->shape.ndim;
    cu_mem_order(a, x, order);
    cu_strides(a, x, xs);
    cuk_pad_desc *d = &p->pad;
    d->ndim = r;
    for (int i = 0; i < r; i++) {
        d->out_shape[i] = y->shape.d[order[i]];
        d->in_shape[i] = x->shape.d[order[i]];
        d->in_stride[i] = xs[order[i]];
        d->begin[i] = pa->pads[order[i]];
    }
    d->mode = pa->mode == OPSCHED_PAD_REFLECT ? CUK_PAD_REFLECT
              : pa->mode == OPSCHED_PAD_EDGE  ? CUK_PAD_EDGE
              : pa->mode == OPSCHED_PAD_WRAP  ? CUK_PAD_WRAP
                                              : CUK_PAD_CONSTANT;
    d->value = cu_value_bits(cu_storage(a, x->dtype), pa->value);
    return kop_done(a, p, "kernel", out);
}

/* ---- Gather ---------------------------------------------------------- */

static opsched_status gather_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                    void *const *in, void *const *out)
{
    kop_plan *p = (kop_plan *)base;
    (void)dev;
    const void *idx = p->idx ? p->idx : in[1];
    CUDA_CHECK(ctx, cuk_gather(p->elem, p->outer, p->g_axis, p->g_n_idx, p->inner, idx, p->idx32,
                               in[0], out[0], s));
    return OPSCHED_OK;
}

/* Constant indices, resolved (negative ones counted from the end) and
 * checked on the host, then copied to a buffer the plan owns. */
static opsched_status gather_constant(const cu_plan_args *a, kop_plan *p, const opsched_tensor *it)
{
    size_t n = (size_t)p->g_n_idx;
    int64_t *host = malloc(sizeof(int64_t) * (n ? n : 1));
    opsched_status st = OPSCHED_OK;
    if (!host) return OS_NOMEM(a->ctx);
    for (size_t i = 0; i < n; i++) {
        int64_t k;
        if (it->dtype == OPSCHED_INT32) {
            int32_t v;
            memcpy(&v, (const char *)it->data + 4 * i, 4);
            k = v;
        } else {
            memcpy(&k, (const char *)it->data + 8 * i, 8);
        }
        if (k < 0) k += p->g_axis;
        if (k < 0 || k >= p->g_axis) {
            st = OS_FAIL(a->ctx, OPSCHED_ERR_INVALID_ARG,
                         "cuda: node '%s' (Gather): index %zu is out of range for an axis of %lld",
                         a->node->name, i, (long long)p->g_axis);
            goto done;
        }
        host[i] = k;
    }
    OS_TRY_GOTO(st, cu_malloc(a->ctx, sizeof(int64_t) * (n ? n : 1), &p->idx), done);
    CUDA_CHECK_GOTO(a->ctx, st,
                    cudaMemcpy(p->idx, host, sizeof(int64_t) * n, cudaMemcpyHostToDevice), done);
    /* pageable: finished only once the device is synchronised */
    CUDA_CHECK_GOTO(a->ctx, st, cudaDeviceSynchronize(), done);
    p->idx32 = 0;
    p->base.need_in &= ~(1ull << 1); /* the launch does not read input 1 */
done:
    free(host);
    return st;
}

opsched_status cu_plan_gather(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0), *it = cu_in(a, 1), *y = cu_out(a, 0);
    int axis = (int)a->node->attr.axis.axis;
    if (cu_is_nhwc(a, x) || cu_is_nhwc(a, y))
        return CU_UNSUPPORTED(a, "Gather on 4-D tensors is NCHW only");
    if (it->dtype != OPSCHED_INT64 && it->dtype != OPSCHED_INT32)
        return CU_UNSUPPORTED(a, "indices of type %s (int32 or int64 only)",
                              opsched_dtype_name(it->dtype));
    kop_plan *p = NULL;
    opsched_status st = OPSCHED_OK;
    OS_TRY(kop_new(a, gather_launch, 0, &p));
    p->outer = p->inner = 1;
    for (int i = 0; i < axis; i++)
        p->outer *= x->shape.d[i];
    for (int i = axis + 1; i < x->shape.ndim; i++)
        p->inner *= x->shape.d[i];
    p->g_axis = x->shape.d[axis];
    p->g_n_idx = opsched_shape_numel(&it->shape);
    p->idx32 = it->dtype == OPSCHED_INT32;
    if (p->g_axis < 1 && p->g_n_idx > 0) {
        st = CU_UNSUPPORTED(a, "gathering from an empty axis");
        goto fail;
    }
    size_t need = (size_t)p->g_n_idx * opsched_dtype_size(it->dtype);
    if (it->data && it->data_bytes >= need) OS_TRY_GOTO(st, gather_constant(a, p, it), fail);
    return kop_done(a, p, "kernel", out);
fail:
    cu_plan_destroy(&p->base);
    return st;
}

/* ---- LayerNormalization and ReduceMean ------------------------------- */

static opsched_status layernorm_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base,
                                       cudaStream_t s, void *const *in, void *const *out)
{
    kop_plan *p = (kop_plan *)base;
    (void)dev;
    const void *bias = p->base.n_in > 2 ? in[2] : NULL;
    CUDA_CHECK(ctx, cuk_layernorm(p->kt, p->rows, p->cols, p->eps, in[0], in[1], bias, out[0], s));
    return OPSCHED_OK;
}

opsched_status cu_plan_layernorm(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0);
    const opsched_layernorm_attr *l = &a->node->attr.layernorm;
    if (cu_is_nhwc(a, x))
        return CU_UNSUPPORTED(a, "LayerNormalization of a 4-D tensor is NCHW only");
    kop_plan *p = NULL;
    OS_TRY(kop_new(a, layernorm_launch, 1, &p));
    p->rows = p->cols = 1;
    for (int i = 0; i < x->shape.ndim; i++)
        *(i < l->axis ? &p->rows : &p->cols) *= x->shape.d[i];
    p->eps = l->epsilon;
    return kop_done(a, p, "kernel", out);
}

static opsched_status reduce_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                    void *const *in, void *const *out)
{
    kop_plan *p = (kop_plan *)base;
    (void)dev;
    if (p->col)
        CUDA_CHECK(ctx, cuk_colreduce(CUK_COL_MEAN, p->kt, p->col_o, p->col_r, p->col_c, in[0],
                                      out[0], base->workspace, s));
    else
        CUDA_CHECK(ctx, cuk_reduce_mean(p->kt, &p->red, in[0], out[0], s));
    return OPSCHED_OK;
}

opsched_status cu_plan_reduce(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    const opsched_reduce_attr *r = &a->node->attr.reduce;
    kop_plan *p = NULL;
    OS_TRY(kop_new(a, reduce_launch, 1, &p));
    int reduced[OPSCHED_MAX_DIMS] = {0};
    for (int i = 0; i < r->n_axes; i++)
        reduced[r->axes[i]] = 1;
    int64_t xs[OPSCHED_MAX_DIMS], ys[OPSCHED_MAX_DIMS];
    cu_strides(a, x, xs);
    cu_strides(a, y, ys);
    cuk_reduce_desc *d = &p->red;
    int yi = 0;
    for (int i = 0; i < x->shape.ndim; i++) {
        int red = r->n_axes == 0 || reduced[i];
        if (red) {
            d->red[d->n_red] = x->shape.d[i];
            d->in_red[d->n_red++] = xs[i];
            if (r->keepdims) yi++;
        } else {
            d->kept[d->n_kept] = x->shape.d[i];
            d->in_kept[d->n_kept] = xs[i];
            d->out_kept[d->n_kept++] = ys[yi++];
        }
    }
    if (cu_column_view(d, &p->col_o, &p->col_r, &p->col_c)) {
        p->col = 1;
        opsched_status st = cu_colreduce_alloc(a, &p->base, p->col_o, p->col_r, p->col_c);
        if (st != OPSCHED_OK) {
            cu_plan_destroy(&p->base);
            return st;
        }
        return kop_done(a, p, "kernel columns", out);
    }
    return kop_done(a, p, "kernel", out);
}

/* ---- views: Flatten, Reshape, Identity, Dropout ---------------------- */

static opsched_status view_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                  void *const *in, void *const *out)
{
    kop_plan *p = (kop_plan *)base;
    (void)dev;
    if (p->strided)
        CUDA_CHECK(ctx, cuk_copy(p->elem, &p->nd, in[0], out[0], s));
    else if (in[0] != out[0] && p->bytes)
        CUDA_CHECK(ctx, cudaMemcpyAsync(out[0], in[0], p->bytes, cudaMemcpyDeviceToDevice, s));
    return OPSCHED_OK;
}

/* 1 when t's storage order is its row-major order (channels-last of a
 * 4-D tensor with one channel or a 1x1 image is). */
static int rowmajor_order(const cu_plan_args *a, const opsched_tensor *t)
{
    return !cu_is_nhwc(a, t) || t->shape.d[1] == 1 || t->shape.d[2] * t->shape.d[3] == 1;
}

/* Row-major strides of a shape. */
static void rowmajor_strides(const opsched_shape *s, int64_t *st)
{
    int64_t v = 1;
    for (int i = s->ndim - 1; i >= 0; i--) {
        st[i] = v;
        v *= s->d[i];
    }
}

opsched_status cu_plan_view(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    kop_plan *p = NULL;
    opsched_status st = OPSCHED_OK;
    OS_TRY(kop_new(a, view_launch, 0, &p));
    p->bytes = (size_t)opsched_shape_numel(&x->shape) * p->elem;
    int same = opsched_shape_equal(&x->shape, &y->shape);
    if (same || (rowmajor_order(a, x) && rowmajor_order(a, y))) return kop_done(a, p, "view", out);
    if (!rowmajor_order(a, x) && !rowmajor_order(a, y)) {
        st = CU_UNSUPPORTED(a, "reshaping between two channels-last 4-D shapes (NHWC)");
        goto fail;
    }
    /* One side is channels-last: copy in the logical order of that side,
     * whose row-major linear index is the other side's storage order. */
    const opsched_tensor *t = rowmajor_order(a, x) ? y : x;
    int64_t nhwc[OPSCHED_MAX_DIMS], flat[OPSCHED_MAX_DIMS];
    cu_strides(a, t, nhwc);
    rowmajor_strides(&t->shape, flat);
    memset(&p->nd, 0, sizeof(p->nd));
    p->nd.ndim = 4;
    for (int i = 0; i < 4; i++) {
        p->nd.shape[i] = t->shape.d[i];
        p->nd.stride[0][i] = t == y ? nhwc[i] : flat[i];
        p->nd.stride[1][i] = t == y ? flat[i] : nhwc[i];
    }
    cu_nd_simplify(&p->nd, 2);
    p->strided = 1;
    return kop_done(a, p, "kernel", out);
fail:
    cu_plan_destroy(&p->base);
    return st;
}
