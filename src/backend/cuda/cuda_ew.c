/*
 * cuda_ew.c - planning the element-wise family (kernels_ew.cu): the unary
 * and binary functions (OPSCHED_OP_UNARY, OPSCHED_OP_BINARY), Where, Cast,
 * QuantizeLinear and DequantizeLinear, and the element-wise kinds of their
 * own (Relu, Clip, Add, ..., Pow) on data that is not floating-point
 * (float data of those kinds stays with cuDNN and kernels.cu).
 *
 * Operands are described by their strides as the plan stores them, so
 * broadcasting and channels-last (NHWC) tensors need nothing special: a
 * launch is one kernel, which picks its flat, vectorised or strided path
 * from the description.  Which function runs on which type is the
 * kernels' table (cuk_ew_unary_ok, cuk_ew_binary_ok); anything else is
 * OPSCHED_ERR_UNSUPPORTED naming the function and the type.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

typedef enum ew_kind { EW_UNARY = 0, EW_BINARY, EW_WHERE, EW_CAST, EW_QUANT, EW_DEQUANT } ew_kind;

typedef struct ew_plan {
    cu_plan base;
    ew_kind kind;
    cuk_ufn ufn;
    cuk_bfn bfn;
    cuk_ew_params prm;
    cuk_dtype t0, t1, ty, round_to;
    int64_t n;
    size_t elem;
    cuk_nd nd;
    cuk_quant_desc q;
    int copy; /* Cast to the same storage without rounding: a copy */
} ew_plan;

/* The graph's function enums against the kernels'. */
static const cuk_bfn binary_fns[OPSCHED_BINARY_FN_COUNT] = {
    [OPSCHED_BINARY_MOD] = CUK_B_MOD,
    [OPSCHED_BINARY_FMOD] = CUK_B_FMOD,
    [OPSCHED_BINARY_MIN] = CUK_B_MIN,
    [OPSCHED_BINARY_MAX] = CUK_B_MAX,
    [OPSCHED_BINARY_EQUAL] = CUK_B_EQUAL,
    [OPSCHED_BINARY_LESS] = CUK_B_LESS,
    [OPSCHED_BINARY_LESS_EQUAL] = CUK_B_LESS_EQUAL,
    [OPSCHED_BINARY_GREATER] = CUK_B_GREATER,
    [OPSCHED_BINARY_GREATER_EQUAL] = CUK_B_GREATER_EQUAL,
    [OPSCHED_BINARY_AND] = CUK_B_AND,
    [OPSCHED_BINARY_OR] = CUK_B_OR,
    [OPSCHED_BINARY_XOR] = CUK_B_XOR,
    [OPSCHED_BINARY_SHIFT_LEFT] = CUK_B_SHIFT_LEFT,
    [OPSCHED_BINARY_SHIFT_RIGHT] = CUK_B_SHIFT_RIGHT,
    [OPSCHED_BINARY_BITWISE_AND] = CUK_B_BITWISE_AND,
    [OPSCHED_BINARY_BITWISE_OR] = CUK_B_BITWISE_OR,
    [OPSCHED_BINARY_BITWISE_XOR] = CUK_B_BITWISE_XOR,
    [OPSCHED_BINARY_PRELU] = CUK_B_PRELU,
};

/* cuk_ufn starts with opsched_unary_fn's functions in its order. */
_Static_assert((int)CUK_U_SWISH == (int)OPSCHED_UNARY_SWISH &&
                   (int)CUK_U_ISNAN == (int)OPSCHED_UNARY_ISNAN &&
                   (int)CUK_U_RELU == (int)OPSCHED_UNARY_FN_COUNT,
               "cuk_ufn must begin with opsched_unary_fn");

static opsched_status ew_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                void *const *in, void *const *out)
{
    ew_plan *p = (ew_plan *)base;
    (void)dev;
    switch (p->kind) {
    case EW_UNARY:
        CUDA_CHECK(ctx, cuk_ew_unary(p->ufn, &p->prm, p->t0, p->ty, p->n, in[0], out[0], s));
        break;
    case EW_BINARY:
        CUDA_CHECK(ctx, cuk_ew_binary(p->bfn, p->t0, p->t1, p->ty, &p->nd, in[0], in[1], out[0],
                                      s));
        break;
    case EW_WHERE:
        CUDA_CHECK(ctx, cuk_ew_where(p->elem, &p->nd, in[0], in[1], in[2], out[0], s));
        break;
    case EW_CAST:
        if (p->copy) {
            if (p->n && in[0] != out[0])
                CUDA_CHECK(ctx, cudaMemcpyAsync(out[0], in[0], (size_t)p->n * p->elem,
                                                cudaMemcpyDeviceToDevice, s));
        } else {
            CUDA_CHECK(ctx, cuk_ew_cast(p->t0, p->ty, p->round_to, p->n, in[0], out[0], s));
        }
        break;
    case EW_QUANT:
        CUDA_CHECK(ctx, cuk_quantize(p->t0, p->ty, &p->q, in[0], in[1],
                                     p->base.n_in > 2 ? in[2] : NULL, out[0], s));
        break;
    case EW_DEQUANT:
        CUDA_CHECK(ctx, cuk_dequantize(p->t0, p->ty, &p->q, in[0], in[1],
                                       p->base.n_in > 2 ? in[2] : NULL, out[0], s));
        break;
    }
    return OPSCHED_OK;
}

static opsched_status ew_new(const cu_plan_args *a, ew_kind kind, ew_plan **out)
{
    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(ew_plan), ew_launch, NULL, &base));
    ew_plan *p = (ew_plan *)base;
    p->kind = kind;
    p->round_to = CUK_DT_COUNT;
    *out = p;
    return OPSCHED_OK;
}

static opsched_status ew_done(const cu_plan_args *a, ew_plan *p, cu_plan **out)
{
    snprintf(a->info->algo, sizeof(a->info->algo), "kernel");
    *out = &p->base;
    return OPSCHED_OK;
}

static const char *dt_name(const opsched_tensor *t)
{
    return opsched_dtype_name(t->dtype);
}

/* ---- unary ----------------------------------------------------------- */

/* Clip's bounds on integers: the integers inside [min, max]. */
static int64_t int_bound(float v, int upper)
{
    double d = upper ? floor((double)v) : ceil((double)v);
    if (isnan(d)) return upper ? INT64_MAX : INT64_MIN;
    if (d >= 9223372036854775807.0) return INT64_MAX;
    if (d <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)d;
}

void cu_unary_fn_of(const opsched_node *n, cuk_ufn *fn, cuk_ew_params *prm)
{
    memset(prm, 0, sizeof(*prm));
    switch (n->op) {
    case OPSCHED_OP_UNARY:
        *fn = (cuk_ufn)n->attr.unary.fn;
        prm->alpha = n->attr.unary.alpha;
        prm->beta = n->attr.unary.beta;
        prm->gamma = n->attr.unary.gamma;
        break;
    case OPSCHED_OP_RELU:
        *fn = CUK_U_RELU;
        break;
    case OPSCHED_OP_CLIP:
        *fn = CUK_U_CLIP;
        prm->alpha = n->attr.clip.min;
        prm->beta = n->attr.clip.max;
        prm->lo = int_bound(n->attr.clip.min, 0);
        prm->hi = int_bound(n->attr.clip.max, 1);
        break;
    case OPSCHED_OP_SIGMOID:
        *fn = CUK_U_SIGMOID;
        break;
    case OPSCHED_OP_TANH:
        *fn = CUK_U_TANH;
        break;
    case OPSCHED_OP_GELU:
        *fn = n->attr.gelu.tanh_approx ? CUK_U_GELU_TANH : CUK_U_GELU_ERF;
        break;
    case OPSCHED_OP_ERF:
        *fn = CUK_U_ERF;
        break;
    case OPSCHED_OP_HARDSIGMOID:
        *fn = CUK_U_HARDSIGMOID;
        prm->alpha = n->attr.hardsigmoid.alpha;
        prm->beta = n->attr.hardsigmoid.beta;
        break;
    case OPSCHED_OP_HARDSWISH:
        *fn = CUK_U_HARDSWISH;
        break;
    default: /* Sqrt */
        *fn = CUK_U_SQRT;
        break;
    }
}

static opsched_status plan_unary(const cu_plan_args *a, ew_plan *p)
{
    const opsched_node *n = a->node;
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    const char *what = opsched_node_op_name(n);
    cu_unary_fn_of(n, &p->ufn, &p->prm);
    p->t0 = cu_kdt(a, x);
    p->ty = cu_kdt(a, y);
    p->n = opsched_shape_numel(&x->shape);
    if (!cuk_ew_unary_ok(p->ufn, p->t0, p->ty))
        return CU_UNSUPPORTED(a, "%s of %s data (to %s) has no kernel", what, dt_name(x),
                              dt_name(y));
    return OPSCHED_OK;
}

/* ---- binary ---------------------------------------------------------- */

static opsched_status plan_binary(const cu_plan_args *a, ew_plan *p)
{
    const opsched_node *n = a->node;
    const opsched_tensor *x0 = cu_in(a, 0), *x1 = cu_in(a, 1), *y = cu_out(a, 0);
    static const cuk_bfn own[] = {CUK_B_ADD, CUK_B_SUB, CUK_B_MUL, CUK_B_DIV, CUK_B_POW};
    if (n->op == OPSCHED_OP_BINARY) {
        if ((int)n->attr.binary.fn < 0 || n->attr.binary.fn >= OPSCHED_BINARY_FN_COUNT)
            return CU_UNSUPPORTED(a, "binary function %d", (int)n->attr.binary.fn);
        p->bfn = binary_fns[n->attr.binary.fn];
    } else {
        p->bfn = own[n->op - OPSCHED_OP_ADD];
    }
    p->t0 = cu_kdt(a, x0);
    p->t1 = cu_kdt(a, x1);
    p->ty = cu_kdt(a, y);
    if (!cuk_ew_binary_ok(p->bfn, p->t0, p->t1, p->ty))
        return CU_UNSUPPORTED(a, "%s of %s and %s data (to %s) has no kernel",
                              opsched_node_op_name(n), dt_name(x0), dt_name(x1), dt_name(y));
    cu_nd_over(a, y, &p->nd);
    cu_aligned_strides(a, x0, &y->shape, p->nd.stride[1]);
    cu_aligned_strides(a, x1, &y->shape, p->nd.stride[2]);
    cu_nd_simplify(&p->nd, 3);
    return OPSCHED_OK;
}

/* ---- Where ----------------------------------------------------------- */

static opsched_status plan_where(const cu_plan_args *a, ew_plan *p)
{
    const opsched_tensor *c = cu_in(a, 0), *x = cu_in(a, 1), *z = cu_in(a, 2), *y = cu_out(a, 0);
    if (c->dtype != OPSCHED_BOOL)
        return CU_UNSUPPORTED(a, "a condition of %s data", dt_name(c));
    if (cu_kdt(a, x) != cu_kdt(a, z))
        return CU_UNSUPPORTED(a, "choices of %s and %s data", dt_name(x), dt_name(z));
    p->elem = cu_elem_size(a, x);
    cu_nd_over(a, y, &p->nd);
    cu_aligned_strides(a, c, &y->shape, p->nd.stride[1]);
    cu_aligned_strides(a, x, &y->shape, p->nd.stride[2]);
    cu_aligned_strides(a, z, &y->shape, p->nd.stride[3]);
    cu_nd_simplify(&p->nd, 4);
    return OPSCHED_OK;
}

/* ---- Cast ------------------------------------------------------------ */

static opsched_status plan_cast(const cu_plan_args *a, ew_plan *p)
{
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    p->t0 = cu_kdt(a, x);
    p->ty = cu_kdt(a, y);
    if (p->t0 == CUK_DT_COUNT || p->ty == CUK_DT_COUNT)
        return CU_UNSUPPORTED(a, "a cast from %s to %s", dt_name(x), dt_name(y));
    p->n = opsched_shape_numel(&x->shape);
    p->elem = cu_elem_size(a, y);
    /* A declared type narrower than the storage rounds to it (a cast to
     * f16 in an fp32 plan keeps only f16's values). */
    opsched_dtype st = cu_storage(a, y->dtype);
    if (y->dtype == OPSCHED_F16 && st != OPSCHED_F16) p->round_to = CUK_DT_F16;
    if (y->dtype == OPSCHED_BF16 && st != OPSCHED_BF16) p->round_to = CUK_DT_BF16;
    p->copy = p->t0 == p->ty && p->round_to == CUK_DT_COUNT;
    return OPSCHED_OK;
}

/* ---- QuantizeLinear, DequantizeLinear -------------------------------- */

static int quant_type_ok(opsched_dtype t)
{
    return t == OPSCHED_INT8 || t == OPSCHED_UINT8 || t == OPSCHED_INT32;
}

static opsched_status plan_quant(const cu_plan_args *a, ew_plan *p)
{
    const opsched_tensor *x = cu_in(a, 0), *s = cu_in(a, 1), *zp = cu_in(a, 2), *y = cu_out(a, 0);
    const opsched_quant_attr *q = &a->node->attr.quant;
    const opsched_tensor *fl = p->kind == EW_QUANT ? x : y, *qt = p->kind == EW_QUANT ? y : x;
    if (!cu_dtype_is_float(fl->dtype) || !cu_dtype_is_float(s->dtype))
        return CU_UNSUPPORTED(a, "%s data with %s scales", dt_name(fl), dt_name(s));
    if (!quant_type_ok(qt->dtype) || (zp && zp->dtype != qt->dtype))
        return CU_UNSUPPORTED(a, "quantized %s data%s%s", dt_name(qt), zp ? ", zero point " : "",
                              zp ? dt_name(zp) : "");
    p->t0 = cu_kdt(a, x);
    p->ty = cu_kdt(a, y);
    cuk_quant_desc *d = &p->q;
    d->n = opsched_shape_numel(&x->shape);
    d->len = d->inner = d->block = 1;
    int64_t ns = opsched_shape_numel(&s->shape), outer = 1;
    if (ns != 1) {
        int axis = (int)q->axis;
        cu_axis_split(a, x, axis, &outer, &d->len, &d->inner);
        if (q->block_size > 0) {
            /* the scale has x's rank, ceil(len / block) along the axis,
             * and is stored in the same order */
            int64_t nb = (d->len + q->block_size - 1) / q->block_size;
            if (s->shape.ndim != x->shape.ndim)
                return CU_UNSUPPORTED(a, "blocked scales of another rank than the data");
            d->block = q->block_size;
            d->s_inner = 1;
            d->s_axis = d->inner;
            d->s_outer = nb * d->inner;
        } else {
            d->s_axis = 1;
        }
    }
    return OPSCHED_OK;
}

/* ---- the planner ------------------------------------------------------ */

opsched_status cu_plan_elementwise(const cu_plan_args *a, cu_plan **out)
{
    ew_kind kind;
    switch (a->node->op) {
    case OPSCHED_OP_ADD:
    case OPSCHED_OP_SUB:
    case OPSCHED_OP_MUL:
    case OPSCHED_OP_DIV:
    case OPSCHED_OP_POW:
    case OPSCHED_OP_BINARY:
        kind = EW_BINARY;
        break;
    case OPSCHED_OP_WHERE:
        kind = EW_WHERE;
        break;
    case OPSCHED_OP_CAST:
        kind = EW_CAST;
        break;
    case OPSCHED_OP_QUANTIZE:
        kind = EW_QUANT;
        break;
    case OPSCHED_OP_DEQUANTIZE:
        kind = EW_DEQUANT;
        break;
    default:
        kind = EW_UNARY;
        break;
    }
    ew_plan *p = NULL;
    opsched_status st = OPSCHED_OK;
    OS_TRY(ew_new(a, kind, &p));
    switch (kind) {
    case EW_UNARY:
        st = plan_unary(a, p);
        break;
    case EW_BINARY:
        st = plan_binary(a, p);
        break;
    case EW_WHERE:
        st = plan_where(a, p);
        break;
    case EW_CAST:
        st = plan_cast(a, p);
        break;
    default:
        st = plan_quant(a, p);
        break;
    }
    if (st != OPSCHED_OK) {
        cu_plan_destroy(&p->base);
        return st;
    }
    return ew_done(a, p, out);
}

/* ---- element-wise chains ------------------------------------------------ */

typedef struct chain_plan {
    cu_plan base;
    cuk_type kt;
    cuk_chain_desc d;
} chain_plan;

static opsched_status chain_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                   void *const *in, void *const *out)
{
    (void)dev;
    chain_plan *p = (chain_plan *)base;
    cuk_chain_ptrs ptrs;
    memset(&ptrs, 0, sizeof(ptrs));
    ptrs.ops[0] = out[0];
    for (int k = 1; k < p->d.n_ops; k++)
        ptrs.ops[k] = in[k - 1];
    CUDA_CHECK(ctx, cuk_ew_chain(p->kt, &p->d, &ptrs, s));
    return OPSCHED_OK;
}

/* The kernels' binary function of a chainable binary node. */
static int chain_bfn(const opsched_node *n, cuk_bfn *fn)
{
    static const cuk_bfn own[] = {CUK_B_ADD, CUK_B_SUB, CUK_B_MUL, CUK_B_DIV, CUK_B_POW};
    if (n->op == OPSCHED_OP_BINARY) {
        if ((int)n->attr.binary.fn < 0 || n->attr.binary.fn >= OPSCHED_BINARY_FN_COUNT) return 0;
        *fn = binary_fns[n->attr.binary.fn];
        return 1;
    }
    if (n->op < OPSCHED_OP_ADD || n->op > OPSCHED_OP_POW) return 0;
    *fn = own[n->op - OPSCHED_OP_ADD];
    return 1;
}

opsched_status cu_plan_chain(const cu_plan_args *a, cu_plan **out)
{
    opsched_ew_chain c;
    int node = cu_node_index(a);
    if (node < 0 || !opsched_ew_chain_find(a->g, node, &c))
        return CU_UNSUPPORTED(a, "no element-wise chain starts here");
    int sides[OPSCHED_CHAIN_MAX];
    int ns = opsched_ew_chain_sides(a->g, &c, sides);
    const opsched_node *h = a->node;
    const opsched_tensor *y = cu_out(a, 0);
    int n_ops = 1 + h->n_inputs + ns;
    if (n_ops > CUK_CHAIN_OPS || c.n > CUK_CHAIN_STEPS || y->shape.ndim > CUK_MAX_DIMS)
        return CU_UNSUPPORTED(a, "a chain of %d nodes and %d operands", c.n, n_ops);
    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(chain_plan), chain_launch, NULL, &base));
    chain_plan *p = (chain_plan *)base;
    opsched_status st = OPSCHED_OK;
    p->kt = a->kt;
    cuk_chain_desc *d = &p->d;
    cuk_dtype t = (cuk_dtype)a->kt;
    /* The operands: y, the head's inputs, the sides; strides over y's dims. */
    d->n_ops = n_ops;
    d->ndim = y->shape.ndim > 0 ? y->shape.ndim : 1;
    for (int i = 0; i < d->ndim; i++)
        d->shape[i] = y->shape.ndim > 0 ? y->shape.d[i] : 1;
    if (y->shape.ndim > 0) cu_strides(a, y, d->stride[0]);
    for (int k = 1; k < n_ops; k++) {
        int id = k <= h->n_inputs ? h->inputs[k - 1] : sides[k - 1 - h->n_inputs];
        const opsched_tensor *x = opsched_graph_tensor(a->g, id);
        if (!x || cu_kdt(a, x) != t) {
            st = CU_UNSUPPORTED(a, "a chain operand of another type");
            goto fail;
        }
        if (y->shape.ndim > 0) cu_aligned_strides(a, x, &y->shape, d->stride[k]);
    }
    /* The steps: the head's function, then each later node's. */
    int side = 1 + h->n_inputs;
    for (int m = 0; m < c.n; m++) {
        const opsched_node *n = opsched_graph_node(a->g, c.nodes[m]);
        cuk_chain_step *s = &d->steps[d->n_steps++];
        memset(s, 0, sizeof(*s));
        if (n->n_inputs == 1) {
            cuk_ufn fn;
            cu_unary_fn_of(n, &fn, &s->prm);
            s->fn = (int)fn;
            if (!cuk_ew_unary_ok(fn, t, t)) {
                st = CU_UNSUPPORTED(a, "%s in a chain has no kernel", opsched_node_op_name(n));
                goto fail;
            }
        } else {
            cuk_bfn fn;
            if (!chain_bfn(n, &fn) || !cuk_ew_binary_ok(fn, t, t, t)) {
                st = CU_UNSUPPORTED(a, "%s in a chain has no kernel", opsched_node_op_name(n));
                goto fail;
            }
            s->binary = 1;
            s->fn = (int)fn;
            s->operand = m == 0 ? 2 : side++;
            s->swap = m > 0 && c.running_second[m];
        }
    }
    cu_dims_simplify(&d->ndim, d->shape, d->stride, d->n_ops);
    base->n_in = h->n_inputs + ns;
    base->need_in = 0;
    for (int k = 0; k < base->n_in && k < 64; k++)
        base->need_in |= 1ull << k;
    snprintf(a->info->algo, sizeof(a->info->algo), "chain:%d", c.n);
    a->info->fused_chain = c.n;
    *out = base;
    return OPSCHED_OK;
fail:
    cu_plan_destroy(base);
    return st;
}
