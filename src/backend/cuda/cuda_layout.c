/*
 * cuda_layout.c - a node whose planner cannot take the NHWC layout, run in
 * NCHW between two copies.
 *
 * Under the NHWC layout every 4-D tensor is stored channels-last, which
 * suits convolutions, pooling and normalisation by channel.  A transformer
 * has 4-D tensors too ([batch, heads, tokens, features]) that a matrix
 * product or a layer normalisation cannot read channels-last: cuBLAS needs
 * one unit stride per matrix.  When a planner refuses a node under NHWC,
 * cu_plan_nchw_adapter plans it again under NCHW and wraps that plan: the
 * 4-D inputs are copied into NCHW scratch first, the 4-D outputs written to
 * scratch and copied back out channels-last.  A tensor whose two layouts
 * are the same memory (one channel, or one pixel) is passed as it is, and
 * a node all of whose tensors are runs on its NCHW plan alone.
 *
 * The copies cost time, and the schedule searcher measures them with the
 * node; what it makes possible is running a network whatever its ops, in
 * the layout its convolutions want.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

/* One converted tensor: its node position, its scratch at off, the copy. */
typedef struct lx_conv {
    int index;
    size_t off, elem;
    cuk_nd nd; /* the copy: operand 0 the destination, 1 the source */
} lx_conv;

typedef struct lx_plan {
    cu_plan base;
    cu_plan *inner; /* planned under NCHW */
    int n_cin, n_cout;
    lx_conv *cin, *cout; /* n_cin inputs, then n_cout outputs (one allocation) */
} lx_plan;

static void lx_release(cu_plan *base)
{
    lx_plan *p = (lx_plan *)base;
    cu_plan_destroy(p->inner);
    free(p->cin);
}

static opsched_status lx_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                void *const *in, void *const *out)
{
    lx_plan *p = (lx_plan *)base;
    void *ins[CUK_MAX_CONCAT], *outs[CUK_MAX_CONCAT];
    unsigned char *ws = base->workspace;
    for (int i = 0; i < base->n_in; i++)
        ins[i] = in[i];
    for (int i = 0; i < base->n_out; i++)
        outs[i] = out[i];
    for (int k = 0; k < p->n_cin; k++) {
        const lx_conv *c = &p->cin[k];
        if (!in[c->index]) continue;
        CUDA_CHECK(ctx, cuk_copy(c->elem, &c->nd, in[c->index], ws + c->off, s));
        ins[c->index] = ws + c->off;
    }
    for (int k = 0; k < p->n_cout; k++)
        outs[p->cout[k].index] = ws + p->cout[k].off;
    OS_TRY(p->inner->launch(ctx, dev, p->inner, s, ins, outs));
    for (int k = 0; k < p->n_cout; k++) {
        const lx_conv *c = &p->cout[k];
        CUDA_CHECK(ctx, cuk_copy(c->elem, &c->nd, ws + c->off, out[c->index], s));
    }
    return OPSCHED_OK;
}

/* 1 when the tensor's NHWC storage differs from its NCHW storage. */
static int needs_copy(const opsched_tensor *t)
{
    return t && t->shape.ndim == 4 && t->shape.d[1] != 1 && t->shape.d[2] * t->shape.d[3] != 1 &&
           opsched_shape_numel(&t->shape) > 0;
}

/* The copy of t between its NHWC storage and contiguous NCHW scratch;
 * to_nchw: NHWC source, NCHW destination, else the reverse. */
static void conv_make(const cu_plan_args *a, const opsched_tensor *t, int to_nchw, lx_conv *c)
{
    const int64_t *d = t->shape.d;
    int64_t nchw[4] = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
    int64_t nhwc[4] = {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
    memset(&c->nd, 0, sizeof(c->nd));
    c->nd.ndim = 4;
    for (int i = 0; i < 4; i++) {
        c->nd.shape[i] = d[i];
        c->nd.stride[0][i] = to_nchw ? nchw[i] : nhwc[i];
        c->nd.stride[1][i] = to_nchw ? nhwc[i] : nchw[i];
    }
    cu_nd_simplify(&c->nd, 2);
    c->elem = cu_elem_size(a, t);
}

opsched_status cu_plan_nchw_adapter(const cu_plan_args *a, cu_plan **out)
{
    const opsched_node *n = a->node;
    int n_cin = 0, n_cout = 0;
    for (int i = 0; i < n->n_inputs; i++)
        n_cin += needs_copy(cu_in(a, i));
    for (int i = 0; i < n->n_outputs; i++)
        n_cout += needs_copy(cu_out(a, i));
    if (n->n_inputs > CUK_MAX_CONCAT || n->n_outputs > CUK_MAX_CONCAT)
        return OPSCHED_ERR_UNSUPPORTED;
    opsched_plan_options o = *a->opts;
    o.layout = OPSCHED_LAYOUT_NCHW;
    /* The wrapper passes the node's own inputs only: no fused bias (a
     * third input) inside it. */
    o.fuse_bias = 0;
    cu_plan_args b = *a;
    b.opts = &o;
    cu_plan *inner = NULL;
    OS_TRY(cu_plan_dispatch(&b, &inner));
    if (n_cin + n_cout == 0) {
        /* Every tensor is the same memory in both layouts (one channel, one
         * pixel, or not 4-D: ConvNeXt's LayerNorm after the pooling): the
         * NCHW plan reads and writes them as they are. */
        *out = inner;
        return OPSCHED_OK;
    }
    cu_plan *base = NULL;
    opsched_status st = cu_plan_alloc(a, sizeof(lx_plan), lx_launch, lx_release, &base);
    if (st != OPSCHED_OK) {
        cu_plan_destroy(inner);
        return st;
    }
    lx_plan *p = (lx_plan *)base;
    p->inner = inner;
    base->need_in = inner->need_in;
    p->cin = calloc((size_t)(n_cin + n_cout), sizeof(lx_conv));
    if (!p->cin) {
        cu_plan_destroy(base);
        return OS_NOMEM(a->ctx);
    }
    p->cout = p->cin + n_cin;
    size_t off = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const opsched_tensor *t = cu_in(a, i);
        if (!needs_copy(t)) continue;
        lx_conv *c = &p->cin[p->n_cin++];
        c->index = i;
        conv_make(a, t, 1, c);
        c->off = off;
        off += ((size_t)opsched_shape_numel(&t->shape) * c->elem + 255) / 256 * 256;
    }
    for (int i = 0; i < n->n_outputs; i++) {
        const opsched_tensor *t = cu_out(a, i);
        if (!needs_copy(t)) continue;
        lx_conv *c = &p->cout[p->n_cout++];
        c->index = i;
        conv_make(a, t, 0, c);
        c->off = off;
        off += ((size_t)opsched_shape_numel(&t->shape) * c->elem + 255) / 256 * 256;
    }
    st = cu_malloc(a->ctx, off, &base->workspace);
    if (st != OPSCHED_OK) {
        cu_plan_destroy(base);
        return st;
    }
    base->workspace_bytes = off + inner->workspace_bytes;
    size_t len = strlen(a->info->algo);
    if (len + 12 < sizeof(a->info->algo))
        snprintf(a->info->algo + len, sizeof(a->info->algo) - len, "%s(nchw)", len ? " " : "");
    *out = base;
    return OPSCHED_OK;
}
