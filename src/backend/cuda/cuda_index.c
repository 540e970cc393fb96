/*
 * cuda_index.c - planning the gather/scatter family (kernels_index.cu):
 * GatherElements, GatherND, ScatterElements, ScatterND, Tile, Trilu and
 * OneHot, on every data type (only the element size matters, except for a
 * scatter's reduction).
 *
 * Every operand is described by its strides as the plan stores it, over
 * the logical coordinates of the tensor a kernel iterates, so NCHW and
 * channels-last tensors take the same path.  A scatter's output starts as
 * a copy of the data (cudaMemcpyAsync on the launch's stream, nothing when
 * the executor gave both the same memory), then the updates land.
 */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

typedef enum idx_kind {
    IX_GATHER_ELEMENTS = 0,
    IX_GATHER_ND,
    IX_SCATTER_ELEMENTS,
    IX_SCATTER_ND,
    IX_TILE,
    IX_TRILU,
    IX_ONEHOT
} idx_kind;

typedef struct idx_plan {
    cu_plan base;
    idx_kind kind;
    size_t elem;
    int idx32;
    cuk_dtype t;
    cuk_scatter_red red;
    cuk_elements_desc el;
    cuk_nd_index_desc nd;
    cuk_tile_desc tile;
    cuk_trilu_desc trilu;
    cuk_onehot_desc onehot;
    size_t copy_bytes; /* scatters: the data copied into the output first */
} idx_plan;

static opsched_status idx_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                 void *const *in, void *const *out)
{
    idx_plan *p = (idx_plan *)base;
    (void)dev;
    if ((p->kind == IX_SCATTER_ELEMENTS || p->kind == IX_SCATTER_ND) && p->copy_bytes &&
        in[0] != out[0])
        CUDA_CHECK(ctx,
                   cudaMemcpyAsync(out[0], in[0], p->copy_bytes, cudaMemcpyDeviceToDevice, s));
    switch (p->kind) {
    case IX_GATHER_ELEMENTS:
        CUDA_CHECK(ctx, cuk_gather_elements(p->elem, p->idx32, &p->el, in[0], in[1], out[0], s));
        break;
    case IX_GATHER_ND:
        CUDA_CHECK(ctx, cuk_gather_nd(p->elem, p->idx32, &p->nd, in[0], in[1], out[0], s));
        break;
    case IX_SCATTER_ELEMENTS:
        CUDA_CHECK(ctx, cuk_scatter_elements(p->t, p->idx32, p->red, &p->el, in[1], in[2], out[0],
                                             s));
        break;
    case IX_SCATTER_ND:
        CUDA_CHECK(ctx, cuk_scatter_nd(p->t, p->idx32, p->red, &p->nd, in[1], in[2], out[0], s));
        break;
    case IX_TILE:
        CUDA_CHECK(ctx, cuk_tile(p->elem, &p->tile, in[0], out[0], s));
        break;
    case IX_TRILU:
        CUDA_CHECK(ctx, cuk_trilu(p->elem, &p->trilu, in[0], out[0], s));
        break;
    case IX_ONEHOT:
        CUDA_CHECK(ctx, cuk_onehot(p->t, p->elem, &p->onehot, in[0], in[1], out[0], s));
        break;
    }
    return OPSCHED_OK;
}

static opsched_status idx_new(const cu_plan_args *a, idx_kind kind, idx_plan **out)
{
    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(idx_plan), idx_launch, NULL, &base));
    idx_plan *p = (idx_plan *)base;
    p->kind = kind;
    p->elem = cu_elem_size(a, cu_in(a, 0));
    *out = p;
    return OPSCHED_OK;
}

static opsched_status idx_done(const cu_plan_args *a, idx_plan *p, cu_plan **out)
{
    snprintf(a->info->algo, sizeof(a->info->algo), "kernel");
    *out = &p->base;
    return OPSCHED_OK;
}

static opsched_status idx_fail(idx_plan *p, opsched_status st)
{
    cu_plan_destroy(&p->base);
    return st;
}

static opsched_status index_type(const cu_plan_args *a, const opsched_tensor *it, int *idx32)
{
    if (it->dtype != OPSCHED_INT64 && it->dtype != OPSCHED_INT32)
        return CU_UNSUPPORTED(a, "indices of type %s (int32 or int64 only)",
                              opsched_dtype_name(it->dtype));
    *idx32 = it->dtype == OPSCHED_INT32;
    return OPSCHED_OK;
}

static opsched_status bad_shapes(const cu_plan_args *a, const char *what)
{
    return OS_FAIL(a->ctx, OPSCHED_ERR_INVALID_ARG, "cuda: node '%s' (%s): %s", a->node->name,
                   opsched_op_name(a->node->op), what);
}

static cuk_scatter_red scatter_red(opsched_scatter_reduction r)
{
    switch (r) {
    case OPSCHED_SCATTER_ADD:
        return CUK_SCATTER_ADD;
    case OPSCHED_SCATTER_MUL:
        return CUK_SCATTER_MUL;
    case OPSCHED_SCATTER_MAX:
        return CUK_SCATTER_MAX;
    case OPSCHED_SCATTER_MIN:
        return CUK_SCATTER_MIN;
    default:
        return CUK_SCATTER_NONE;
    }
}

/* ---- GatherElements, ScatterElements ---------------------------------- */

/* The iteration over `it` (the indices' shape) with the indices' strides
 * and those of `other` (data or output) outside the axis. */
static opsched_status elements_desc(const cu_plan_args *a, const opsched_tensor *it,
                                    const opsched_tensor *ix, const opsched_tensor *other,
                                    int axis, cuk_elements_desc *d)
{
    int64_t so[OPSCHED_MAX_DIMS];
    if (ix->shape.ndim != other->shape.ndim || !opsched_shape_equal(&it->shape, &ix->shape))
        return bad_shapes(a, "indices, updates and data do not line up");
    for (int j = 0; j < ix->shape.ndim; j++)
        if (j != axis && ix->shape.d[j] > other->shape.d[j])
            return bad_shapes(a, "the indices are larger than the data outside the axis");
    memset(d, 0, sizeof(*d));
    d->ndim = it->shape.ndim;
    for (int j = 0; j < d->ndim; j++)
        d->shape[j] = it->shape.d[j];
    cu_strides(a, it, d->s_it);
    cu_strides(a, ix, d->s_idx);
    cu_strides(a, other, so);
    for (int j = 0; j < d->ndim; j++)
        d->s_other[j] = j == axis ? 0 : so[j];
    d->axis_len = other->shape.d[axis];
    d->axis_stride = so[axis];
    return OPSCHED_OK;
}

static opsched_status plan_gather_elements(const cu_plan_args *a, idx_plan *p)
{
    const opsched_tensor *x = cu_in(a, 0), *ix = cu_in(a, 1), *y = cu_out(a, 0);
    int axis = (int)a->node->attr.axis.axis;
    OS_TRY(index_type(a, ix, &p->idx32));
    OS_TRY(elements_desc(a, y, ix, x, axis, &p->el));
    if (p->el.axis_len < 1 && opsched_shape_numel(&y->shape) > 0)
        return CU_UNSUPPORTED(a, "gathering from an empty axis");
    return OPSCHED_OK;
}

static opsched_status plan_scatter_elements(const cu_plan_args *a, idx_plan *p)
{
    const opsched_tensor *ix = cu_in(a, 1), *u = cu_in(a, 2), *y = cu_out(a, 0);
    int axis = (int)a->node->attr.scatter.axis;
    OS_TRY(index_type(a, ix, &p->idx32));
    return elements_desc(a, u, ix, y, axis, &p->el);
}

/* ---- GatherND, ScatterND ------------------------------------------------ */

/* GatherND: iterates the output, b batch dims shared by data and indices.
 * ScatterND (scatter = 1, b = 0): iterates the updates, whose dims are the
 * indices' leading dims and the output's slice dims. */
static opsched_status nd_desc(const cu_plan_args *a, const opsched_tensor *it,
                              const opsched_tensor *ix, const opsched_tensor *other, int b,
                              int scatter, cuk_nd_index_desc *d)
{
    int64_t si[OPSCHED_MAX_DIMS], so[OPSCHED_MAX_DIMS];
    int q = ix->shape.ndim, r = other->shape.ndim;
    int64_t k = q >= 1 ? ix->shape.d[q - 1] : 0;
    if (q < 1 || k < 1 || b + k > r || it->shape.ndim != (q - 1) + (r - b - (int)k))
        return bad_shapes(a, "indices, updates and data do not line up");
    memset(d, 0, sizeof(*d));
    d->ndim = it->shape.ndim;
    d->k = (int)k;
    for (int j = 0; j < d->ndim; j++)
        d->shape[j] = it->shape.d[j];
    cu_strides(a, it, d->s_it);
    cu_strides(a, ix, si);
    cu_strides(a, other, so);
    for (int j = 0; j < q - 1; j++) {
        d->s_idx[j] = si[j];
        d->s_other[j] = j < b ? so[j] : 0;
    }
    for (int j = q - 1; j < d->ndim; j++) {
        int od = b + (int)k + (j - (q - 1)); /* the slice dim in data / output */
        if (it->shape.d[j] != other->shape.d[od])
            return bad_shapes(a, scatter ? "updates do not match the output's slices"
                                         : "the output does not match the data's slices");
        d->s_other[j] = so[od];
    }
    d->idx_last = si[q - 1];
    for (int t = 0; t < k; t++) {
        d->tup_len[t] = other->shape.d[b + t];
        d->tup_stride[t] = so[b + t];
    }
    return OPSCHED_OK;
}

static opsched_status plan_gather_nd(const cu_plan_args *a, idx_plan *p)
{
    const opsched_tensor *x = cu_in(a, 0), *ix = cu_in(a, 1), *y = cu_out(a, 0);
    OS_TRY(index_type(a, ix, &p->idx32));
    OS_TRY(nd_desc(a, y, ix, x, (int)a->node->attr.gather_nd.batch_dims, 0, &p->nd));
    for (int t = 0; t < p->nd.k; t++)
        if (p->nd.tup_len[t] < 1 && opsched_shape_numel(&y->shape) > 0)
            return CU_UNSUPPORTED(a, "gathering from an empty axis");
    return OPSCHED_OK;
}

static opsched_status plan_scatter_nd(const cu_plan_args *a, idx_plan *p)
{
    const opsched_tensor *ix = cu_in(a, 1), *u = cu_in(a, 2), *y = cu_out(a, 0);
    OS_TRY(index_type(a, ix, &p->idx32));
    return nd_desc(a, u, ix, y, 0, 1, &p->nd);
}

/* ---- Tile, Trilu, OneHot ----------------------------------------------- */

static opsched_status plan_tile(const cu_plan_args *a, idx_plan *p)
{
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    cuk_tile_desc *d = &p->tile;
    d->ndim = y->shape.ndim;
    for (int j = 0; j < d->ndim; j++) {
        d->y_shape[j] = y->shape.d[j];
        d->x_shape[j] = x->shape.d[j];
    }
    cu_strides(a, y, d->ys);
    cu_strides(a, x, d->xs);
    return OPSCHED_OK;
}

static opsched_status plan_trilu(const cu_plan_args *a, idx_plan *p)
{
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    cuk_trilu_desc *d = &p->trilu;
    d->ndim = x->shape.ndim;
    d->upper = a->node->attr.trilu.upper != 0;
    d->k = a->node->attr.trilu.k;
    for (int j = 0; j < d->ndim; j++)
        d->shape[j] = x->shape.d[j];
    cu_strides(a, x, d->xs);
    cu_strides(a, y, d->ys);
    return OPSCHED_OK;
}

static opsched_status plan_onehot(const cu_plan_args *a, idx_plan *p)
{
    const opsched_tensor *ix = cu_in(a, 0), *v = cu_in(a, 1), *y = cu_out(a, 0);
    const opsched_onehot_attr *h = &a->node->attr.onehot;
    int64_t si[OPSCHED_MAX_DIMS];
    cuk_onehot_desc *d = &p->onehot;
    p->t = cu_kdt(a, ix);
    p->elem = cu_elem_size(a, v);
    if (cu_kdt(a, v) != cu_kdt(a, y)) return bad_shapes(a, "values and output types differ");
    d->ndim = y->shape.ndim;
    d->axis = (int)h->axis;
    d->depth = h->depth;
    for (int j = 0; j < d->ndim; j++)
        d->shape[j] = y->shape.d[j];
    cu_strides(a, y, d->ys);
    cu_strides(a, ix, si);
    for (int j = 0; j < d->ndim; j++)
        d->s_idx[j] = j < d->axis ? si[j] : (j == d->axis ? 0 : si[j - 1]);
    return OPSCHED_OK;
}

/* ---- the planner -------------------------------------------------------- */

opsched_status cu_plan_index(const cu_plan_args *a, cu_plan **out)
{
    idx_kind kind;
    switch (a->node->op) {
    case OPSCHED_OP_GATHER_ELEMENTS:
        kind = IX_GATHER_ELEMENTS;
        break;
    case OPSCHED_OP_GATHER_ND:
        kind = IX_GATHER_ND;
        break;
    case OPSCHED_OP_SCATTER_ELEMENTS:
        kind = IX_SCATTER_ELEMENTS;
        break;
    case OPSCHED_OP_SCATTER_ND:
        kind = IX_SCATTER_ND;
        break;
    case OPSCHED_OP_TILE:
        kind = IX_TILE;
        break;
    case OPSCHED_OP_TRILU:
        kind = IX_TRILU;
        break;
    default:
        kind = IX_ONEHOT;
        break;
    }
    idx_plan *p = NULL;
    opsched_status st = OPSCHED_OK;
    OS_TRY(idx_new(a, kind, &p));
    switch (kind) {
    case IX_GATHER_ELEMENTS:
        st = plan_gather_elements(a, p);
        break;
    case IX_GATHER_ND:
        st = plan_gather_nd(a, p);
        break;
    case IX_SCATTER_ELEMENTS:
    case IX_SCATTER_ND: {
        const opsched_tensor *x = cu_in(a, 0);
        p->t = cu_kdt(a, x);
        p->red = scatter_red(a->node->attr.scatter.reduction);
        p->copy_bytes = (size_t)opsched_shape_numel(&x->shape) * cu_elem_size(a, x);
        st = kind == IX_SCATTER_ND ? plan_scatter_nd(a, p) : plan_scatter_elements(a, p);
        break;
    }
    case IX_TILE:
        st = plan_tile(a, p);
        break;
    case IX_TRILU:
        st = plan_trilu(a, p);
        break;
    case IX_ONEHOT:
        st = plan_onehot(a, p);
        break;
    }
    if (st != OPSCHED_OK) return idx_fail(p, st);
    return idx_done(a, p, out);
}
