/*
 * cuda_reduce.c - planning the reduction family (kernels_reduce.cu): any
 * reduction over any axes (OPSCHED_OP_REDUCE, and ReduceMean of data that
 * is not floating-point), ArgMax and ArgMin, LogSoftmax and Hardmax,
 * GroupNormalization, CumSum and TopK.
 *
 * Reductions are described by strides as the plan stores the tensors, so
 * channels-last tensors reduce in place (no permute); the ops along one
 * axis take the [outer, len, inner] split of that axis in memory order,
 * which is the same for input and output because both have the same rank.
 * Softmax itself stays with cuDNN (cuda_dnn.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

typedef enum red_kind {
    RED_REDUCE = 0,
    RED_COPY, /* a reduction over no axes with noop_with_empty_axes */
    RED_AXIS,
    RED_GROUPNORM,
    RED_CUMSUM,
    RED_TOPK,
    RED_COLUMNS /* a float sum, mean, max or min as cuk_colreduce */
} red_kind;

typedef struct red_plan {
    cu_plan base;
    red_kind kind;
    cuk_dtype t;
    cuk_red_fn fn;
    int select_last;
    cuk_reduce_desc d;
    cuk_axis_op axis_op;
    int64_t outer, len, inner, k;
    int exclusive, reverse, largest;
    cuk_groupnorm_desc gn;
    size_t bytes;
    cuk_col_fn col_fn;
    int64_t col_o, col_r, col_c;
} red_plan;

static opsched_status red_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                 void *const *in, void *const *out)
{
    red_plan *p = (red_plan *)base;
    (void)dev;
    switch (p->kind) {
    case RED_REDUCE:
        CUDA_CHECK(ctx, cuk_reduce(p->fn, p->t, p->select_last, &p->d, in[0], out[0], s));
        break;
    case RED_COLUMNS:
        CUDA_CHECK(ctx, cuk_colreduce(p->col_fn, (cuk_type)p->t, p->col_o, p->col_r, p->col_c,
                                      in[0], out[0], base->workspace, s));
        break;
    case RED_COPY:
        if (p->bytes && in[0] != out[0])
            CUDA_CHECK(ctx,
                       cudaMemcpyAsync(out[0], in[0], p->bytes, cudaMemcpyDeviceToDevice, s));
        break;
    case RED_AXIS:
        CUDA_CHECK(ctx, cuk_axis_norm(p->axis_op, p->t, p->outer, p->len, p->inner, in[0], out[0],
                                      s));
        break;
    case RED_GROUPNORM:
        CUDA_CHECK(ctx, cuk_groupnorm(p->t, &p->gn, in[0], in[1], in[2], out[0], s));
        break;
    case RED_CUMSUM:
        CUDA_CHECK(ctx, cuk_cumsum(p->t, p->outer, p->len, p->inner, p->exclusive, p->reverse,
                                   in[0], out[0], s));
        break;
    case RED_TOPK:
        CUDA_CHECK(ctx, cuk_topk(p->t, p->outer, p->len, p->inner, p->k, p->largest, in[0],
                                 out[0], (int64_t *)out[1], s));
        break;
    }
    return OPSCHED_OK;
}

static opsched_status red_new(const cu_plan_args *a, red_kind kind, red_plan **out)
{
    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(red_plan), red_launch, NULL, &base));
    red_plan *p = (red_plan *)base;
    p->kind = kind;
    p->t = cu_kdt(a, cu_in(a, 0));
    *out = p;
    return OPSCHED_OK;
}

static opsched_status red_done(const cu_plan_args *a, red_plan *p, cu_plan **out)
{
    snprintf(a->info->algo, sizeof(a->info->algo), "kernel");
    *out = &p->base;
    return OPSCHED_OK;
}

static opsched_status red_fail(red_plan *p, opsched_status st)
{
    cu_plan_destroy(&p->base);
    return st;
}

/* ---- the reduction description --------------------------------------- */

static void swap64(int64_t *a, int64_t *b)
{
    int64_t t = *a;
    *a = *b;
    *b = t;
}

static int64_t mag(int64_t v)
{
    return v < 0 ? -v : v;
}

/* Drops unit dims, orders the kept dims by output stride and the reduced
 * ones by input stride (outermost first), and merges neighbours that are
 * contiguous: fewer divisions per element, same result. */
static void desc_simplify(cuk_reduce_desc *d)
{
    int n = 0;
    for (int i = 0; i < d->n_kept; i++) {
        if (d->kept[i] == 1) continue;
        d->kept[n] = d->kept[i];
        d->in_kept[n] = d->in_kept[i];
        d->out_kept[n++] = d->out_kept[i];
    }
    d->n_kept = n;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && mag(d->out_kept[j - 1]) < mag(d->out_kept[j]); j--) {
            swap64(&d->kept[j - 1], &d->kept[j]);
            swap64(&d->in_kept[j - 1], &d->in_kept[j]);
            swap64(&d->out_kept[j - 1], &d->out_kept[j]);
        }
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0 && d->in_kept[m - 1] == d->in_kept[i] * d->kept[i] &&
            d->out_kept[m - 1] == d->out_kept[i] * d->kept[i]) {
            d->kept[m - 1] *= d->kept[i];
            d->in_kept[m - 1] = d->in_kept[i];
            d->out_kept[m - 1] = d->out_kept[i];
        } else {
            d->kept[m] = d->kept[i];
            d->in_kept[m] = d->in_kept[i];
            d->out_kept[m++] = d->out_kept[i];
        }
    }
    d->n_kept = m;

    n = 0;
    for (int i = 0; i < d->n_red; i++) {
        if (d->red[i] == 1) continue;
        d->red[n] = d->red[i];
        d->in_red[n++] = d->in_red[i];
    }
    d->n_red = n;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && mag(d->in_red[j - 1]) < mag(d->in_red[j]); j--) {
            swap64(&d->red[j - 1], &d->red[j]);
            swap64(&d->in_red[j - 1], &d->in_red[j]);
        }
    m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0 && d->in_red[m - 1] == d->in_red[i] * d->red[i]) {
            d->red[m - 1] *= d->red[i];
            d->in_red[m - 1] = d->in_red[i];
        } else {
            d->red[m] = d->red[i];
            d->in_red[m++] = d->in_red[i];
        }
    }
    d->n_red = m;
}

/* x's dims split into kept ones (with y's strides; y keeps reduced dims as
 * 1 when keepdims) and reduced ones. */
static void desc_build(const cu_plan_args *a, const int *reduced, int keepdims,
                       cuk_reduce_desc *d)
{
    const opsched_tensor *x = cu_in(a, 0), *y = cu_out(a, 0);
    int64_t xs[OPSCHED_MAX_DIMS], ys[OPSCHED_MAX_DIMS];
    cu_strides(a, x, xs);
    cu_strides(a, y, ys);
    memset(d, 0, sizeof(*d));
    int yi = 0;
    for (int i = 0; i < x->shape.ndim; i++) {
        if (reduced[i]) {
            d->red[d->n_red] = x->shape.d[i];
            d->in_red[d->n_red++] = xs[i];
            if (keepdims) yi++;
        } else {
            d->kept[d->n_kept] = x->shape.d[i];
            d->in_kept[d->n_kept] = xs[i];
            d->out_kept[d->n_kept++] = ys[yi++];
        }
    }
    desc_simplify(d);
}

/* 1 when the reduction d is a column reduction: the input [O, R, C] in
 * memory order with C the one contiguous kept extent, the reduced dims
 * one contiguous run of R rows of C, at most one other kept dim (O) above
 * them, and the outputs [O, C] contiguous (a mean over H and W of a
 * channels-last tensor, the squeeze of squeeze-and-excitation). */
int cu_column_view(const cuk_reduce_desc *d, int64_t *O, int64_t *R, int64_t *C)
{
    int64_t c = 0, o = 1, o_in = -1, o_out = -1;
    for (int i = 0; i < d->n_kept; i++) {
        if (d->kept[i] == 1) continue;
        if (d->in_kept[i] == 1 && d->out_kept[i] == 1 && !c) {
            c = d->kept[i];
        } else if (o_in < 0) {
            o = d->kept[i];
            o_in = d->in_kept[i];
            o_out = d->out_kept[i];
        } else {
            return 0;
        }
    }
    if (c < 8) return 0; /* few columns: a warp per output serves better */
    /* The reduced dims, innermost first, must tile [R, C] exactly. */
    int used[CUK_MAX_DIMS] = {0};
    int64_t stride = c, r = 1;
    for (;;) {
        int k = -1;
        for (int i = 0; i < d->n_red; i++)
            if (!used[i] && d->red[i] > 1 && d->in_red[i] == stride) k = i;
        if (k < 0) break;
        used[k] = 1;
        r *= d->red[k];
        stride *= d->red[k];
    }
    for (int i = 0; i < d->n_red; i++)
        if (d->red[i] > 1 && !used[i]) return 0;
    if (o_in >= 0 && (o_in != r * c || o_out != c)) return 0;
    *O = o;
    *R = r;
    *C = c;
    return cuk_colreduce_ok(o, r, c);
}

opsched_status cu_colreduce_alloc(const cu_plan_args *a, cu_plan *p, int64_t O, int64_t R,
                                  int64_t C)
{
    size_t ws = cuk_colreduce_workspace(O, R, C);
    if (!ws) return OPSCHED_OK;
    OS_TRY(cu_malloc(a->ctx, ws, &p->workspace));
    p->workspace_bytes = ws;
    /* the kernel's counters start at zero (each launch leaves them so) */
    CUDA_CHECK(a->ctx, cudaMemset(p->workspace, 0, ws));
    return OPSCHED_OK;
}

/* ---- Reduce, ReduceMean of other types --------------------------------- */

opsched_status cu_plan_reduce_fn(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0);
    const opsched_reduce_attr *r = &a->node->attr.reduce;
    opsched_reduce_fn fn = a->node->op == OPSCHED_OP_REDUCEMEAN ? OPSCHED_REDUCE_MEAN : r->fn;
    red_plan *p = NULL;
    if (a->node->op == OPSCHED_OP_REDUCE && r->n_axes == 0 && r->noop_with_empty_axes) {
        OS_TRY(red_new(a, RED_COPY, &p));
        p->bytes = (size_t)opsched_shape_numel(&x->shape) * cu_elem_size(a, x);
        return red_done(a, p, out);
    }
    OS_TRY(red_new(a, RED_REDUCE, &p));
    if ((int)fn < 0 || fn >= OPSCHED_REDUCE_FN_COUNT || !cuk_reduce_ok((cuk_red_fn)fn, p->t))
        return red_fail(p, CU_UNSUPPORTED(a, "%s of %s data has no kernel",
                                          opsched_node_op_name(a->node),
                                          opsched_dtype_name(x->dtype)));
    p->fn = (cuk_red_fn)fn;
    int reduced[OPSCHED_MAX_DIMS] = {0};
    for (int i = 0; i < x->shape.ndim; i++)
        reduced[i] = r->n_axes == 0;
    for (int i = 0; i < r->n_axes; i++)
        reduced[r->axes[i]] = 1;
    desc_build(a, reduced, r->keepdims, &p->d);
    int col_fn = fn == OPSCHED_REDUCE_MEAN  ? CUK_COL_MEAN
                 : fn == OPSCHED_REDUCE_SUM ? CUK_COL_SUM
                 : fn == OPSCHED_REDUCE_MAX ? CUK_COL_MAX
                 : fn == OPSCHED_REDUCE_MIN ? CUK_COL_MIN
                                            : -1;
    if (col_fn >= 0 && !(a->opts->ablate & OPSCHED_ABLATE_REDUCTIONS) &&
        (p->t == CUK_DT_F32 || p->t == CUK_DT_F16 || p->t == CUK_DT_BF16) &&
        cu_column_view(&p->d, &p->col_o, &p->col_r, &p->col_c)) {
        /* Channels-last over H and W: a thread per output would walk its
         * column alone; the column kernel spreads it over many blocks. */
        p->kind = RED_COLUMNS;
        p->col_fn = (cuk_col_fn)col_fn;
        opsched_status st = cu_colreduce_alloc(a, &p->base, p->col_o, p->col_r, p->col_c);
        if (st != OPSCHED_OK) return red_fail(p, st);
    }
    return red_done(a, p, out);
}

_Static_assert((int)CUK_DT_F32 == (int)CUK_F32 && (int)CUK_DT_F16 == (int)CUK_F16 &&
                   (int)CUK_DT_BF16 == (int)CUK_BF16,
               "the float cuk_dtype values must be cuk_type's");

/* cuk_red_fn starts with opsched_reduce_fn's functions in its order. */
_Static_assert((int)CUK_R_SUMSQUARE == (int)OPSCHED_REDUCE_SUMSQUARE &&
                   (int)CUK_R_ARGMAX == (int)OPSCHED_REDUCE_FN_COUNT,
               "cuk_red_fn must begin with opsched_reduce_fn");

opsched_status cu_plan_arg(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0);
    const opsched_arg_attr *r = &a->node->attr.arg;
    red_plan *p = NULL;
    OS_TRY(red_new(a, RED_REDUCE, &p));
    p->fn = a->node->op == OPSCHED_OP_ARGMAX ? CUK_R_ARGMAX : CUK_R_ARGMIN;
    p->select_last = r->select_last_index != 0;
    if (!cuk_reduce_ok(p->fn, p->t))
        return red_fail(p, CU_UNSUPPORTED(a, "%s data", opsched_dtype_name(x->dtype)));
    int reduced[OPSCHED_MAX_DIMS] = {0};
    reduced[r->axis] = 1;
    desc_build(a, reduced, r->keepdims, &p->d);
    return red_done(a, p, out);
}

/* ---- LogSoftmax, Hardmax ------------------------------------------------ */

opsched_status cu_plan_axis_norm(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0);
    red_plan *p = NULL;
    if (!cu_dtype_is_float(x->dtype))
        return CU_UNSUPPORTED(a, "%s data (floating-point only)", opsched_dtype_name(x->dtype));
    OS_TRY(red_new(a, RED_AXIS, &p));
    p->axis_op = a->node->op == OPSCHED_OP_LOGSOFTMAX ? CUK_AX_LOGSOFTMAX
                 : a->node->op == OPSCHED_OP_HARDMAX  ? CUK_AX_HARDMAX
                                                      : CUK_AX_SOFTMAX;
    cu_axis_split(a, x, (int)a->node->attr.axis.axis, &p->outer, &p->len, &p->inner);
    return red_done(a, p, out);
}

/* ---- GroupNormalization ------------------------------------------------- */

opsched_status cu_plan_groupnorm(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0);
    for (int i = 0; i < 3; i++) {
        const opsched_tensor *t = cu_in(a, i);
        if (!t || !cu_dtype_is_float(t->dtype))
            return CU_UNSUPPORTED(a, "%s data (floating-point only)",
                                  t ? opsched_dtype_name(t->dtype) : "missing");
    }
    red_plan *p = NULL;
    OS_TRY(red_new(a, RED_GROUPNORM, &p));
    cuk_groupnorm_desc *d = &p->gn;
    d->N = x->shape.d[0];
    d->C = x->shape.d[1];
    d->G = a->node->attr.groupnorm.groups;
    d->S = 1;
    for (int i = 2; i < x->shape.ndim; i++)
        d->S *= x->shape.d[i];
    d->eps = a->node->attr.groupnorm.epsilon;
    if (cu_is_nhwc(a, x)) {
        d->ns = d->S * d->C;
        d->cs = 1;
        d->ss = d->C;
    } else {
        d->ns = d->C * d->S;
        d->cs = d->S;
        d->ss = 1;
    }
    return red_done(a, p, out);
}

/* ---- CumSum, TopK ------------------------------------------------------- */

opsched_status cu_plan_cumsum(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0);
    const opsched_cumsum_attr *c = &a->node->attr.cumsum;
    red_plan *p = NULL;
    if (x->dtype == OPSCHED_BOOL)
        return CU_UNSUPPORTED(a, "bool data");
    OS_TRY(red_new(a, RED_CUMSUM, &p));
    cu_axis_split(a, x, (int)c->axis, &p->outer, &p->len, &p->inner);
    p->exclusive = c->exclusive != 0;
    p->reverse = c->reverse != 0;
    return red_done(a, p, out);
}

opsched_status cu_plan_topk(const cu_plan_args *a, cu_plan **out)
{
    const opsched_tensor *x = cu_in(a, 0);
    const opsched_topk_attr *t = &a->node->attr.topk;
    int64_t outer, inner, ylen;
    red_plan *p = NULL;
    OS_TRY(red_new(a, RED_TOPK, &p));
    cu_axis_split(a, x, (int)t->axis, &p->outer, &p->len, &p->inner);
    cu_axis_split(a, cu_out(a, 0), (int)t->axis, &outer, &ylen, &inner);
    if (outer != p->outer || inner != p->inner || ylen != t->k)
        return red_fail(p, CU_UNSUPPORTED(a, "values stored in another order than the input"));
    if (p->len > 0x7fffffff)
        return red_fail(p, CU_UNSUPPORTED(a, "an axis of more than 2^31 - 1 elements"));
    p->k = t->k;
    p->largest = t->largest != 0;
    return red_done(a, p, out);
}

/* ---- the squeeze-and-excitation gate ------------------------------------ */

/* The largest gate run as one launch (cu_plan_se); larger ones run as
 * two, when their map has at most SE_SPLIT_MAX_S positions, and so do
 * smaller ones where two measure faster. */
#define SE_MAX_HIDDEN 32
#define SE_MAX_WEIGHT_BYTES (64 * 1024)
#define SE_SPLIT_MAX_S 4096

typedef struct se_plan {
    cu_plan base;
    cuk_dtype t;
    cuk_se_desc d;
    int side; /* the launch input of W1 (then b1, W2, b2) */
} se_plan;

static opsched_status se_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                void *const *in, void *const *out)
{
    (void)dev;
    se_plan *p = (se_plan *)base;
    int k = p->side;
    CUDA_CHECK(ctx, cuk_se_gate(p->t, &p->d, in[0], in[k], in[k + 1], in[k + 2], in[k + 3], out[0],
                                base->workspace, s));
    return OPSCHED_OK;
}

/* A timed gate's scratch operands and variant. */
typedef struct se_run {
    cuk_dtype t;
    const cuk_se_desc *d;
    void *x, *w1, *b1, *w2, *b2, *y, *ws;
} se_run;

static opsched_status enqueue_se(const cu_plan_args *a, void *env, cudaStream_t s)
{
    const se_run *r = env;
    CUDA_CHECK(a->ctx, cuk_se_gate(r->t, r->d, r->x, r->w1, r->b1, r->w2, r->b2, r->y, r->ws, s));
    return OPSCHED_OK;
}

/* The time of gates one (one launch) and two (two, without the multiply)
 * on zeroed scratch operands (ms[0] and ms[1]); a bias is timed where the
 * node has one. */
static opsched_status time_gates(const cu_plan_args *a, cuk_dtype t, const cuk_se_desc *one,
                                 const cuk_se_desc *two, int b1, int b2, float ms[2])
{
    size_t esz = cu_elem_size(a, cu_in(a, 0));
    size_t w1 = cuk_se_gate_workspace(one), w2 = cuk_se_gate_workspace(two);
    const size_t bytes[7] = {(size_t)(one->N * one->C * one->S) * esz,
                             (size_t)(one->C * one->hidden) * esz,
                             b1 ? (size_t)one->hidden * esz : 0,
                             (size_t)(one->C * one->hidden) * esz,
                             b2 ? (size_t)one->C * esz : 0,
                             (size_t)(one->N * one->C) * esz,
                             w1 > w2 ? w1 : w2};
    void *buf[7];
    opsched_status st = cu_zeroed_set(a, bytes, 7, buf);
    se_run r = {t, one, buf[0], buf[1], buf[2], buf[3], buf[4], buf[5], buf[6]};
    if (st == OPSCHED_OK) st = cu_time_reps(a, enqueue_se, &r, &ms[0]);
    r.d = two;
    if (st == OPSCHED_OK) st = cu_time_reps(a, enqueue_se, &r, &ms[1]);
    cu_free_set(buf, 7);
    return st;
}

static opsched_status se_act_of(const cu_plan_args *a, int node, cuk_se_act *act)
{
    memset(act, 0, sizeof(*act));
    if (node < 0) return OPSCHED_OK;
    const opsched_node *n = opsched_graph_node(a->g, node);
    cu_unary_fn_of(n, &act->fn, &act->prm);
    if (!cuk_ew_unary_ok(act->fn, (cuk_dtype)a->kt, (cuk_dtype)a->kt))
        return CU_UNSUPPORTED(a, "%s in a squeeze-and-excitation gate has no kernel",
                              opsched_node_op_name(n));
    act->has = 1;
    return OPSCHED_OK;
}

opsched_status cu_plan_se(const cu_plan_args *a, cu_plan **out)
{
    opsched_se_gate se;
    int node = cu_node_index(a);
    if (node < 0 || !opsched_se_gate_find(a->g, node, &se))
        return CU_UNSUPPORTED(a, "no squeeze-and-excitation gate starts here");
    const opsched_tensor *x = cu_in(a, 0);
    cuk_dtype t = (cuk_dtype)a->kt;
    if (cu_kdt(a, x) != t) return CU_UNSUPPORTED(a, "a gate over data of another type");
    for (int k = 0; k < 4; k++) {
        const opsched_tensor *w = se.sides[k] >= 0 ? opsched_graph_tensor(a->g, se.sides[k]) : NULL;
        if (w && cu_kdt(a, w) != t) return CU_UNSUPPORTED(a, "a gate's weights of another type");
    }
    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(se_plan), se_launch, NULL, &base));
    se_plan *p = (se_plan *)base;
    opsched_status st = OPSCHED_OK;
    p->t = t;
    p->side = a->node->n_inputs;
    p->d.N = x->shape.d[0];
    p->d.C = x->shape.d[1];
    p->d.S = x->shape.d[2] * x->shape.d[3];
    p->d.hidden = se.hidden;
    p->d.nhwc = cu_is_nhwc(a, x);
    OS_TRY_GOTO(st, se_act_of(a, se.act1, &p->d.act1), fail);
    OS_TRY_GOTO(st, se_act_of(a, se.act2, &p->d.act2), fail);
    /* One block runs both layers, its loads in chains of `hidden`: measured
     * on the H100, gates with larger layers (MobileNetV3's 960 x 240,
     * RegNetY's 888 x 222) ran slower as one launch than as three.  Those
     * run split: the first layer shared out among the pooling blocks, the
     * second one warp an output. */
    size_t layer_bytes = (size_t)(p->d.C * p->d.hidden) * cu_elem_size(a, x);
    p->d.split = p->d.hidden > SE_MAX_HIDDEN || 2 * layer_bytes > SE_MAX_WEIGHT_BYTES;
    if (p->d.split && (p->d.S > SE_SPLIT_MAX_S || (a->opts->ablate & OPSCHED_ABLATE_SE_SPLIT))) {
        st = CU_UNSUPPORTED(a, "a gate of %lld channels and %lld hidden over %lld positions (at "
                               "most %d hidden and %d KiB of weights run as one launch, larger "
                               "layers over at most %d positions as two)",
                            (long long)p->d.C, (long long)p->d.hidden, (long long)p->d.S,
                            SE_MAX_HIDDEN, SE_MAX_WEIGHT_BYTES / 1024, SE_SPLIT_MAX_S);
        goto fail;
    }
    if (!cuk_se_gate_ok(&p->d)) {
        st = CU_UNSUPPORTED(a, "a gate of %lld channels and %lld hidden", (long long)p->d.C,
                            (long long)p->d.hidden);
        goto fail;
    }
    /* A gate small enough for one launch runs as two where that measures
     * faster: one block a sample runs both layers at the end of the one
     * launch, which at batch 16 took most of the gate's time (EfficientNetV2-S's
     * 16x512x24x24 gates: 26 us against a few for the pooling's reads). */
    if (!p->d.split && p->d.S <= SE_SPLIT_MAX_S && !(a->opts->ablate & OPSCHED_ABLATE_SE_SPLIT)) {
        cuk_se_desc two = p->d;
        two.split = 1;
        float ms[2] = {-1.0f, -1.0f};
        if (cuk_se_gate_ok(&two)) {
            OS_TRY_GOTO(st, time_gates(a, t, &p->d, &two, se.sides[1] >= 0, se.sides[3] >= 0, ms),
                        fail);
            os_log(a->ctx, OPSCHED_LOG_DEBUG,
                   "cuda: node '%s': squeeze-and-excitation gate: one launch %.4f ms, two "
                   "%.4f ms",
                   a->node->name, (double)ms[0], (double)ms[1]);
            if (ms[1] >= 0.0f && ms[0] >= 0.0f && ms[1] < ms[0]) p->d.split = 1;
        }
    }
    /* The multiply by x (asked with fuse_se 2) in the second launch, where
     * the gate runs split and the product keeps x's layout. */
    if (a->opts->fuse_se == 2 && se.mul >= 0 && p->d.split) {
        const opsched_tensor *yt =
            opsched_graph_tensor(a->g, opsched_graph_node(a->g, se.mul)->outputs[0]);
        p->d.mul = yt && cu_kdt(a, yt) == t && cu_is_nhwc(a, yt) == p->d.nhwc;
    }
    size_t ws = cuk_se_gate_workspace(&p->d);
    OS_TRY_GOTO(st, cu_malloc(a->ctx, ws, &base->workspace), fail);
    base->workspace_bytes = ws;
    /* the kernel's counters start at zero (each launch leaves them so) */
    CUDA_CHECK_GOTO(a->ctx, st, cudaMemset(base->workspace, 0, ws), fail);
    base->n_in = a->node->n_inputs + 4;
    base->need_in = 0;
    for (int k = 0; k < a->node->n_inputs && k < 64; k++)
        if (a->node->inputs[k] >= 0) base->need_in |= 1ull << k;
    base->need_in |= 1ull << p->side | 1ull << (p->side + 2); /* W1, W2 */
    snprintf(a->info->algo, sizeof(a->info->algo), "se%s:%d", p->d.split ? "2" : "",
             se.n + p->d.mul);
    a->info->fused_se = se.n + p->d.mul;
    *out = base;
    return OPSCHED_OK;
fail:
    cu_plan_destroy(base);
    return st;
}
