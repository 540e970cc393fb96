/*
 * cpu_plan.c - CPU plans: what every plan shares (options checked, the node
 * copied out of the graph, oneDNN primitive descriptors made with a user
 * scratchpad, memory objects bound at launch) and the launch itself.  The
 * per-operator choices live in cpu_ops.c and cpu_loops.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_impl.h"

/* ---- oneDNN helpers ----------------------------------------------------- */

opsched_status cpu_plain_md(opsched_ctx *ctx, int ndim, const int64_t *dims, dnnl_memory_desc_t *md)
{
    dnnl_dims_t d, strides;
    if (ndim > DNNL_MAX_NDIMS)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "cpu: rank %d is above oneDNN's %d", ndim,
                       DNNL_MAX_NDIMS);
    if (ndim == 0) {
        d[0] = 1;
        ndim = 1;
    } else {
        for (int i = 0; i < ndim; i++)
            d[i] = dims[i];
    }
    dnnl_dim_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= d[i] > 0 ? d[i] : 1;
    }
    CPU_DNNL(ctx, dnnl_memory_desc_init_by_strides(md, ndim, d, dnnl_f32, strides));
    return OPSCHED_OK;
}

int cpu_window_dims(int rank, const opsched_window_depth *dp, const int64_t kernel[2],
                    const int64_t stride[2], const int64_t dil[2], const int64_t pads[4],
                    dnnl_dims_t k, dnnl_dims_t s, dnnl_dims_t d, dnnl_dims_t pl, dnnl_dims_t pr)
{
    int at = 0;
    if (rank == 5) {
        k[0] = dp->kernel;
        s[0] = dp->stride;
        d[0] = dp->dilation - 1;
        pl[0] = dp->pad_begin;
        pr[0] = dp->pad_end;
        at = 1;
    }
    for (int i = 0; i < 2; i++) {
        k[at + i] = kernel[i];
        s[at + i] = stride[i];
        d[at + i] = dil[i] - 1;
        pl[at + i] = pads[i];
        pr[at + i] = pads[2 + i];
    }
    return at + 2;
}

opsched_status cpu_attr_create(opsched_ctx *ctx, float scale, const_dnnl_post_ops_t post_ops,
                               dnnl_primitive_attr_t *attr)
{
    opsched_status st = OPSCHED_OK;
    *attr = NULL;
    CPU_DNNL(ctx, dnnl_primitive_attr_create(attr));
    CPU_DNNL_GOTO(st, ctx,
                  dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user), fail);
    if (scale != 1.0f)
        CPU_DNNL_GOTO(st, ctx, dnnl_primitive_attr_set_output_scales(*attr, 1, 0, &scale), fail);
    if (post_ops) CPU_DNNL_GOTO(st, ctx, dnnl_primitive_attr_set_post_ops(*attr, post_ops), fail);
    return OPSCHED_OK;
fail:
    dnnl_primitive_attr_destroy(*attr);
    *attr = NULL;
    return st;
}

opsched_status cpu_pd_create(opsched_ctx *ctx, cpu_dev *dev, const_dnnl_op_desc_t desc, float scale,
                             const_dnnl_post_ops_t post_ops, const char *what,
                             dnnl_primitive_desc_t *pd)
{
    dnnl_primitive_attr_t attr = NULL;
    *pd = NULL;
    OS_TRY(cpu_attr_create(ctx, scale, post_ops, &attr));
    dnnl_status_t s = dnnl_primitive_desc_create(pd, desc, attr, dev->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (s == dnnl_unimplemented)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                       "%s: oneDNN has no implementation for this configuration", what);
    if (s != dnnl_success)
        return cpu_dnnl_fail(ctx, s, "dnnl_primitive_desc_create", __FILE__, __LINE__);
    return OPSCHED_OK;
}

void cpu_prim_release(cpu_prim *p)
{
    if (!p) return;
    for (int i = 0; i < p->n_binds; i++)
        if (p->binds[i].mem) dnnl_memory_destroy(p->binds[i].mem);
    if (p->prim) dnnl_primitive_destroy(p->prim);
    free(p->scratch);
    memset(p, 0, sizeof(*p));
}

static opsched_status bind(opsched_ctx *ctx, cpu_dev *dev, cpu_prim *p,
                           const dnnl_memory_desc_t *md, int arg, int io, void *handle)
{
    if (p->n_binds >= CPU_MAX_ARGS)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "cpu: more than %d primitive arguments",
                       CPU_MAX_ARGS);
    cpu_bind *b = &p->binds[p->n_binds];
    CPU_DNNL(ctx, dnnl_memory_create(&b->mem, md, dev->engine, handle));
    b->arg = arg;
    b->io = io;
    p->n_binds++;
    return OPSCHED_OK;
}

opsched_status cpu_prim_from_pd(opsched_ctx *ctx, cpu_dev *dev, cpu_prim *p,
                                dnnl_primitive_desc_t pd, const int *args, const int *io, int n)
{
    opsched_status st = OPSCHED_OK;
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t scratch = md ? dnnl_memory_desc_get_size(md) : 0;
    CPU_DNNL_GOTO(st, ctx, dnnl_primitive_create(&p->prim, pd), done);
    if (scratch) {
        p->scratch = cpu_aligned_alloc(scratch);
        if (!p->scratch) {
            st = OS_FAIL(ctx, OPSCHED_ERR_DEVICE_OOM, "cpu: a %zu-byte scratchpad does not fit",
                         scratch);
            goto done;
        }
        p->scratch_bytes = scratch;
        OS_TRY_GOTO(st, bind(ctx, dev, p, md, DNNL_ARG_SCRATCHPAD, CPU_IO_FIXED, p->scratch), done);
    }
    for (int i = 0; i < n; i++) {
        const dnnl_memory_desc_t *amd =
            dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, args[i]);
        if (!amd || amd->ndims == 0) {
            st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND, "oneDNN: the primitive has no argument %d",
                         args[i]);
            goto done;
        }
        OS_TRY_GOTO(st, bind(ctx, dev, p, amd, args[i], io[i], DNNL_MEMORY_NONE), done);
    }
done:
    dnnl_primitive_desc_destroy(pd);
    if (st != OPSCHED_OK) cpu_prim_release(p);
    return st;
}

opsched_status cpu_prim_run(opsched_ctx *ctx, cpu_prim *p, dnnl_stream_t stream, void *const *in,
                            void *const *out)
{
    dnnl_exec_arg_t args[CPU_MAX_ARGS];
    for (int i = 0; i < p->n_binds; i++) {
        cpu_bind *b = &p->binds[i];
        if (b->io != CPU_IO_FIXED) {
            void *h = b->io >= 0 ? in[b->io] : out[-b->io - 1];
            CPU_DNNL(ctx, dnnl_memory_set_data_handle(b->mem, h));
        }
        args[i].arg = b->arg;
        args[i].memory = b->mem;
    }
    CPU_DNNL(ctx, dnnl_primitive_execute(p->prim, stream, p->n_binds, args));
    return OPSCHED_OK;
}

/* ---- plans -------------------------------------------------------------- */

/* 1 when the only reader of the node's output is a Relu that a convolution
 * can absorb. */
static opsched_status copy_node(opsched_ctx *ctx, const opsched_graph *g, int node, cpu_node *out)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (n->n_inputs > CPU_MAX_IO || n->n_outputs > CPU_MAX_IO)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                       "cpu: node '%s' has too many inputs or outputs", n->name);
    out->op = n->op;
    out->attr = n->attr;
    out->n_in = n->n_inputs;
    out->n_out = n->n_outputs;
    for (int i = 0; i < n->n_inputs; i++) {
        const opsched_tensor *t = n->inputs[i] >= 0 ? opsched_graph_tensor(g, n->inputs[i]) : NULL;
        out->has_in[i] = t != NULL;
        if (t) {
            out->in[i] = t->shape;
            out->in_dt[i] = t->dtype;
        }
    }
    for (int i = 0; i < n->n_outputs; i++) {
        const opsched_tensor *t = opsched_graph_tensor(g, n->outputs[i]);
        out->out[i] = t->shape;
        out->out_dt[i] = t->dtype;
    }
    return OPSCHED_OK;
}

static opsched_status check_options(opsched_ctx *ctx, const opsched_node *n,
                                    const opsched_plan_options *opts)
{
    if (opts->math == OPSCHED_MATH_FP16 || opts->math == OPSCHED_MATH_BF16)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                       "cpu backend: %s math is not supported (fp32 only)",
                       opsched_math_name(opts->math));
    if (opts->math != OPSCHED_MATH_FP32 && opts->math != OPSCHED_MATH_TF32)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "cpu backend: bad math mode %d",
                       (int)opts->math);
    if (opts->layout != OPSCHED_LAYOUT_NCHW)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                       "cpu backend: node '%s' (%s): only the NCHW layout is supported", n->name,
                       opsched_op_name(n->op));
    return OPSCHED_OK;
}

void cpu_plan_free(void *dev, void *plan)
{
    (void)dev;
    cpu_plan *p = plan;
    if (!p) return;
    cpu_prim_release(&p->main);
    free(p->node.chain);
    free(p->gate_buf);
    free(p->cat_buf);
    free(p);
}

/* The element-wise chain from `node` as one loop (cpu_loop_chain): its
 * steps, and the sides as inputs after the node's own; 0 when there is
 * none (the node is planned alone). */
static opsched_status plan_chain(opsched_ctx *ctx, const opsched_graph *g, int node, cpu_plan *p,
                                 opsched_plan_info *info, int *done)
{
    opsched_ew_chain c;
    int sides[OPSCHED_CHAIN_MAX];
    cpu_node *cn = &p->node;
    *done = 0;
    if (!opsched_ew_chain_find(g, node, &c)) return OPSCHED_OK;
    int ns = opsched_ew_chain_sides(g, &c, sides);
    if (cn->n_in + ns + 1 > CPU_WALK_OPS || cn->n_in + ns > CPU_MAX_IO) return OPSCHED_OK;
    for (int k = 0; k < cn->n_in; k++)
        if (!cn->has_in[k] || cn->in_dt[k] != OPSCHED_F32) return OPSCHED_OK;
    if (cn->out_dt[0] != OPSCHED_F32) return OPSCHED_OK;
    cn->chain = calloc((size_t)c.n, sizeof(*cn->chain));
    if (!cn->chain) return OS_NOMEM(ctx);
    int side = cn->n_in;
    for (int m = 0; m < c.n; m++) {
        const opsched_node *n = opsched_graph_node(g, c.nodes[m]);
        cpu_chain_step *s = &cn->chain[m];
        s->op = n->op;
        s->attr = n->attr;
        s->binary = n->n_inputs == 2;
        if (s->binary) {
            s->operand = m == 0 ? 1 : side++;
            s->swap = m > 0 && c.running_second[m];
        }
    }
    for (int k = 0; k < ns; k++) {
        const opsched_tensor *t = opsched_graph_tensor(g, sides[k]);
        cn->has_in[cn->n_in] = 1;
        cn->in[cn->n_in] = t->shape;
        cn->in_dt[cn->n_in] = t->dtype;
        cn->n_in++;
    }
    cn->n_chain = c.n;
    p->loop = cpu_loop_chain;
    snprintf(info->algo, sizeof(info->algo), "chain:%d", c.n);
    info->fused_chain = c.n;
    *done = 1;
    return OPSCHED_OK;
}

/* Row-major strides of shape sh, in elements. */
static void rowmajor_strides(const opsched_shape *sh, int64_t *st)
{
    int64_t acc = 1;
    for (int d = sh->ndim - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= sh->d[d];
    }
}

/* Every element of the output, read from the source through the run's
 * factors (an odometer over them, the last fastest). */
static opsched_status loop_move(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                void *const *out)
{
    (void)ctx;
    const opsched_move_view *v = &n->move_view;
    size_t es = cpu_esize(n->out_dt[0]);
    int64_t idx[OPSCHED_MOVE_MAX_FACTORS] = {0}, total = 1;
    for (int f = 0; f < v->n; f++)
        total *= v->size[f];
    const char *src = in[0];
    char *dst = out[0];
    int64_t s = v->offset, d = 0;
    for (int64_t e = 0; e < total; e++) {
        if (n->move_parts > 0) { /* element s of the Concat's output, from its input */
            int64_t i = s % n->move_inner, q = s / n->move_inner;
            int64_t a = q % n->move_extent, o = q / n->move_extent;
            int k = 0;
            while (k + 1 < n->move_parts && a >= n->move_start[k + 1])
                k++;
            int64_t at = (o * n->move_len[k] + a - n->move_start[k]) * n->move_inner + i;
            memcpy(dst + (size_t)d * es, (const char *)in[k] + (size_t)at * es, es);
        } else {
            memcpy(dst + (size_t)d * es, src + (size_t)s * es, es);
        }
        for (int f = v->n - 1; f >= 0; f--) {
            s += v->stride[f];
            d += n->move_dst[f];
            if (++idx[f] < v->size[f]) break;
            s -= v->stride[f] * v->size[f];
            d -= n->move_dst[f] * v->size[f];
            idx[f] = 0;
        }
    }
    return OPSCHED_OK;
}

/* The movement run opts->move_path as one gather of its source, the
 * node's only input; *done 0 when it is not affine (planned alone). */
static opsched_status plan_move(const opsched_graph *g, int node, const opsched_plan_options *opts,
                                cpu_plan *p, opsched_plan_info *info, int *done)
{
    cpu_node *cn = &p->node;
    *done = 0;
    const opsched_node *first = opsched_graph_node(g, opts->move_path[0]);
    if (opts->move_path[opts->n_move_path - 1] != node || !first) return OPSCHED_OK;
    const opsched_tensor *x = opsched_graph_tensor(g, first->inputs[0]);
    if (!x || x->dtype != cn->out_dt[0]) return OPSCHED_OK;
    int64_t xs[OPSCHED_MAX_DIMS], ys[OPSCHED_MAX_DIMS];
    rowmajor_strides(&x->shape, xs);
    rowmajor_strides(&cn->out[0], ys);
    if (!opsched_move_compose(g, opts->move_path, opts->n_move_path, xs, &cn->move_view))
        return OPSCHED_OK;
    opsched_move_dst_strides(&cn->move_view, ys, cn->move_dst);
    int c = opts->move_concat ? opsched_move_concat(g, opts->move_path[0]) : -1;
    if (opts->move_concat && c < 0) return OPSCHED_OK;
    cn->move = 1;
    cn->n_in = 1;
    cn->has_in[0] = 1;
    cn->in[0] = x->shape;
    cn->in_dt[0] = x->dtype;
    if (c >= 0) { /* the Concat's inputs in its place */
        const opsched_node *cc = opsched_graph_node(g, c);
        int axis = (int)cc->attr.axis.axis;
        if (axis < 0) axis += x->shape.ndim;
        cn->move_parts = cc->n_inputs;
        cn->move_inner = xs[axis];
        cn->move_extent = x->shape.d[axis];
        cn->n_in = cc->n_inputs;
        int64_t at = 0;
        for (int k = 0; k < cc->n_inputs; k++) {
            const opsched_tensor *t = opsched_graph_tensor(g, cc->inputs[k]);
            cn->move_start[k] = at;
            cn->move_len[k] = t->shape.d[axis];
            at += t->shape.d[axis];
            cn->has_in[k] = 1;
            cn->in[k] = t->shape;
            cn->in_dt[k] = t->dtype;
        }
        info->fused_concat = cc->n_inputs;
    }
    p->loop = loop_move;
    snprintf(info->algo, sizeof(info->algo), "gather:%d%s", opts->n_move_path,
             c >= 0 ? "+concat" : "");
    info->fused_movement = opts->n_move_path;
    *done = 1;
    return OPSCHED_OK;
}

/* The squeeze-and-excitation gate from mean `node` as one loop
 * (cpu_loop_se), W1, b1, W2, b2 as inputs after the node's own; *done 0
 * when there is none (the node is planned alone). */
static opsched_status plan_se(const opsched_graph *g, int node, const opsched_plan_options *opts,
                              cpu_plan *p, opsched_plan_info *info, int *done)
{
    opsched_se_gate se;
    cpu_node *cn = &p->node;
    *done = 0;
    if (!opsched_se_gate_find(g, node, &se) || cn->n_in + 4 > CPU_MAX_IO) return OPSCHED_OK;
    if (cn->in_dt[0] != OPSCHED_F32 || cn->out_dt[0] != OPSCHED_F32) return OPSCHED_OK;
    cn->se_side = cn->n_in;
    for (int k = 0; k < 4; k++) {
        const opsched_tensor *t = se.sides[k] >= 0 ? opsched_graph_tensor(g, se.sides[k]) : NULL;
        int i = cn->n_in++;
        cn->has_in[i] = t != NULL;
        if (t) {
            cn->in[i] = t->shape;
            cn->in_dt[i] = t->dtype;
        }
    }
    int acts[2] = {se.act1, se.act2};
    for (int k = 0; k < 2; k++) {
        const opsched_node *a = acts[k] >= 0 ? opsched_graph_node(g, acts[k]) : NULL;
        cn->se_act[k] = a != NULL;
        if (a) {
            cn->se_op[k] = a->op;
            cn->se_attr[k] = a->attr;
        }
    }
    cn->se_hidden = se.hidden;
    cn->se = 1;
    cn->se_mul = opts->fuse_se == 2 && se.mul >= 0;
    if (cn->se_mul) cn->out[0] = cn->in[0];
    p->loop = cpu_loop_se;
    snprintf(info->algo, sizeof(info->algo), "se:%d", se.n + cn->se_mul);
    info->fused_se = se.n + cn->se_mul;
    *done = 1;
    return OPSCHED_OK;
}

/* MatMul `node` with its bias Add (opsched_matmul_bias_find) as input 2,
 * and the activation after it with fuse_activation; 0 when there is none
 * or the operands are not f32. */
static int matmul_bias(const opsched_graph *g, int node, const opsched_plan_options *opts,
                       cpu_plan *p)
{
    opsched_matmul_bias mb;
    cpu_node *cn = &p->node;
    if (!opsched_matmul_bias_find(g, node, &mb) || cn->n_in != 2) return 0;
    const opsched_tensor *b = opsched_graph_tensor(g, mb.bias);
    if (cn->in_dt[0] != OPSCHED_F32 || cn->in_dt[1] != OPSCHED_F32 || b->dtype != OPSCHED_F32)
        return 0;
    cn->n_in = 3;
    cn->has_in[2] = 1;
    cn->in[2] = b->shape;
    cn->in_dt[2] = b->dtype;
    if (opts->fuse_activation && mb.act >= 0) {
        const opsched_node *an = opsched_graph_node(g, mb.act);
        cn->fused_act = 1;
        cn->act_op = an->op;
        cn->act_attr = an->attr;
    } else if (opts->fuse_residual && mb.residual >= 0 && mb.tr < 0) {
        /* r as input 3, copied into the output before the product adds to it */
        const opsched_tensor *r = opsched_graph_tensor(g, mb.residual);
        if (r->dtype != OPSCHED_F32) return 1;
        cn->n_in = 4;
        cn->has_in[3] = 1;
        cn->in[3] = r->shape;
        cn->in_dt[3] = r->dtype;
        cn->fused_res = 1;
    }
    return 1;
}

/* A node whose outputs all have no elements has nothing to compute (and
 * its inputs may have none either, which some primitives refuse). */
/* A convolution asked to apply its input's gate (fuse_gate) takes it as
 * input 5 and multiplies as it runs (cpu_plan.gate_buf). */
static opsched_status plan_gate(opsched_ctx *ctx, const opsched_graph *g, int node,
                                const opsched_plan_options *opts, cpu_plan *p,
                                opsched_plan_info *info)
{
    opsched_conv_gate cg;
    cpu_node *cn = &p->node;
    if (!opts->fuse_gate || (opts->ablate & OPSCHED_ABLATE_GATE) ||
        !opsched_conv_gate_find(g, node, &cg) || cn->in[0].ndim != 4)
        return OPSCHED_OK;
    const opsched_tensor *s = opsched_graph_tensor(g, cg.scale);
    size_t numel = (size_t)opsched_shape_numel(&cn->in[0]);
    p->gate_buf = malloc(sizeof(float) * (numel ? numel : 1));
    if (!p->gate_buf) return OS_NOMEM(ctx);
    p->gate_n = cn->in[0].d[0];
    p->gate_c = cn->in[0].d[1];
    p->gate_hw = cn->in[0].d[2] * cn->in[0].d[3];
    for (int k = cn->n_in; k < 6; k++)
        cn->has_in[k] = 0;
    cn->n_in = 6;
    cn->has_in[5] = 1;
    cn->in[5] = s->shape;
    cn->in_dt[5] = s->dtype;
    info->fused_gate = 1;
    return OPSCHED_OK;
}

/* A batch normalisation asked to read its Concat's inputs (norm_concat)
 * takes the first as input 0 and the rest as inputs 5 on, and
 * concatenates them as it runs (cpu_plan.cat_buf): a copy as the Concat's,
 * so only where the Concat would copy, for more than one sample (of one,
 * in NCHW, the executor has its producers write into it instead). */
static opsched_status plan_norm_concat(opsched_ctx *ctx, const opsched_graph *g, int node,
                                       const opsched_plan_options *opts, cpu_plan *p,
                                       opsched_plan_info *info)
{
    cpu_node *cn = &p->node;
    int c = opts->norm_concat && !(opts->ablate & OPSCHED_ABLATE_NORM_CONCAT)
                ? opsched_norm_concat(g, node)
                : -1;
    if (c < 0 || cn->n_in != 5 || cn->in_dt[0] != OPSCHED_F32 || cn->in[0].d[0] < 2)
        return OPSCHED_OK;
    const opsched_node *cc = opsched_graph_node(g, c);
    size_t numel = (size_t)opsched_shape_numel(&cn->in[0]);
    p->cat_buf = malloc(sizeof(float) * (numel ? numel : 1));
    if (!p->cat_buf) return OS_NOMEM(ctx);
    p->cat_parts = cc->n_inputs;
    p->cat_n = cn->in[0].d[0];
    p->cat_hw = cn->in[0].d[2] * cn->in[0].d[3];
    for (int k = 0; k < cc->n_inputs; k++) {
        const opsched_tensor *t = opsched_graph_tensor(g, cc->inputs[k]);
        p->cat_c[k] = t->shape.d[1];
        if (k == 0) continue;
        cn->has_in[4 + k] = 1;
        cn->in[4 + k] = t->shape;
        cn->in_dt[4 + k] = t->dtype;
    }
    cn->n_in = 4 + cc->n_inputs;
    info->fused_norm_concat = cc->n_inputs;
    return OPSCHED_OK;
}

static int outputs_empty(const cpu_node *n)
{
    for (int i = 0; i < n->n_out; i++)
        if (opsched_shape_numel(&n->out[i]) != 0) return 0;
    return n->n_out > 0;
}

static opsched_status loop_nothing(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                                   void *const *out)
{
    (void)ctx;
    (void)n;
    (void)in;
    (void)out;
    return OPSCHED_OK;
}

opsched_status cpu_plan_create(opsched_ctx *ctx, void *d, const opsched_graph *g, int node,
                               const opsched_plan_options *opts, void **plan,
                               opsched_plan_info *info)
{
    cpu_dev *dev = d;
    opsched_status st = OPSCHED_OK;
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "cpu: node %d does not exist", node);
    OS_TRY(check_options(ctx, n, opts));
    cpu_plan *p = calloc(1, sizeof(*p));
    if (!p) return OS_NOMEM(ctx);
    memset(info, 0, sizeof(*info));
    OS_TRY_GOTO(st, copy_node(ctx, g, node, &p->node), fail);
    int chained = 0;
    if (opts->fuse_se && !outputs_empty(&p->node))
        OS_TRY_GOTO(st, plan_se(g, node, opts, p, info, &chained), fail);
    if (!chained && opts->fuse_chain && !outputs_empty(&p->node))
        OS_TRY_GOTO(st, plan_chain(ctx, g, node, p, info, &chained), fail);
    if (!chained && opts->move_path && opts->n_move_path >= 2 && !outputs_empty(&p->node))
        OS_TRY_GOTO(st, plan_move(g, node, opts, p, info, &chained), fail);
    if (chained) {
        /* planned: one loop over the chain */
    } else if (outputs_empty(&p->node)) {
        p->loop = loop_nothing;
        snprintf(info->algo, sizeof(info->algo), "empty");
    } else if (n->op == OPSCHED_OP_CONV) {
        opsched_conv_residual res;
        int act = -1;
        if (opts->fuse_residual && n->n_inputs <= 3 && opsched_conv_residual_find(g, node, &res)) {
            /* r as input 3, after the bias slot (empty when there is none) */
            cpu_node *cn = &p->node;
            for (int k = cn->n_in; k < 3; k++)
                cn->has_in[k] = 0;
            cn->n_in = 4;
            cn->has_in[3] = 1;
            cn->in[3] = cn->out[0];
            cn->in_dt[3] = cn->out_dt[0];
            cn->fused_res = 1;
            act = opts->fuse_activation ? res.act : -1;
        } else if (opts->fuse_activation) {
            act = opsched_conv_epilogue(g, node);
        }
        if (act >= 0) {
            const opsched_node *an = opsched_graph_node(g, act);
            p->node.fused_act = 1;
            p->node.act_op = an->op;
            p->node.act_attr = an->attr;
        }
        OS_TRY_GOTO(st, cpu_ops_conv(ctx, dev, p, opts, info), fail);
        info->fused_activation = p->node.fused_act;
        info->fused_residual = p->node.fused_res;
        OS_TRY_GOTO(st, plan_gate(ctx, g, node, opts, p, info), fail);
    } else if (n->op == OPSCHED_OP_CONV_TRANSPOSE) {
        OS_TRY_GOTO(st, cpu_ops_conv_transpose(ctx, dev, p, opts, info), fail);
    } else if (n->op == OPSCHED_OP_BATCHNORM_TRAIN || n->op == OPSCHED_OP_BATCHNORM_GRAD ||
               n->op == OPSCHED_OP_CONV_GRAD_FILTER) {
        OS_TRY_GOTO(st, cpu_ops_train(ctx, dev, p, opts, info), fail);
    } else if (n->op == OPSCHED_OP_MATMUL && opts->fuse_bias && matmul_bias(g, node, opts, p)) {
        /* oneDNN's matmul with its bias and the activation as a post-op */
        OS_TRY_GOTO(st, cpu_ops_build(ctx, dev, p, info), fail);
        info->fused_bias = 1;
        info->fused_activation = p->node.fused_act;
        info->fused_residual = p->node.fused_res;
    } else {
        OS_TRY_GOTO(st, cpu_ops_build(ctx, dev, p, info), fail);
        if (n->op == OPSCHED_OP_BATCHNORM)
            OS_TRY_GOTO(st, plan_norm_concat(ctx, g, node, opts, p, info), fail);
    }
    if (!p->main.prim && !p->loop) {
        st = OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                     "cpu backend: node '%s' (%s) has no implementation", n->name,
                     opsched_op_name(n->op));
        goto fail;
    }
    info->workspace_bytes = p->main.scratch_bytes;
    if (opts->workspace_limit && info->workspace_bytes > opts->workspace_limit) {
        st = OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                     "cpu backend: node '%s' needs a %zu-byte scratchpad, above the limit of %zu",
                     n->name, info->workspace_bytes, opts->workspace_limit);
        goto fail;
    }
    *plan = p;
    return OPSCHED_OK;
fail:
    cpu_plan_free(dev, p);
    return st;
}

opsched_status cpu_plan_launch(opsched_ctx *ctx, void *d, void *plan, void *stream, void *const *in,
                               void *const *out)
{
    cpu_dev *dev = d;
    cpu_plan *p = plan;
    const cpu_node *n = &p->node;
    for (int i = 0; i < n->n_in; i++)
        if (n->has_in[i] && !in[i])
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "cpu: %s input %d has no buffer",
                           opsched_op_name(n->op), i);
    for (int i = 0; i < n->n_out; i++)
        if (!out[i])
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "cpu: %s output %d has no buffer",
                           opsched_op_name(n->op), i);
    if (p->pre) OS_TRY(p->pre(ctx, n, in, out));
    void *gated[CPU_MAX_IO];
    if (p->gate_buf) {
        const float *x = in[0], *s = in[5];
        for (int64_t i = 0; i < p->gate_n * p->gate_c; i++)
            for (int64_t k = 0; k < p->gate_hw; k++)
                p->gate_buf[i * p->gate_hw + k] = x[i * p->gate_hw + k] * s[i];
        memcpy(gated, in, sizeof(void *) * (size_t)n->n_in);
        gated[0] = p->gate_buf;
        in = gated;
    }
    if (p->cat_buf) {
        int64_t total = 0, off = 0;
        for (int k = 0; k < p->cat_parts; k++)
            total += p->cat_c[k];
        for (int k = 0; k < p->cat_parts; k++) {
            const float *src = in[k == 0 ? 0 : 4 + k];
            size_t block = (size_t)(p->cat_c[k] * p->cat_hw);
            for (int64_t i = 0; i < p->cat_n; i++)
                memcpy(p->cat_buf + (size_t)(i * total + off) * (size_t)p->cat_hw,
                       src + (size_t)i * block, sizeof(float) * block);
            off += p->cat_c[k];
        }
        memcpy(gated, in, sizeof(void *) * (size_t)n->n_in);
        gated[0] = p->cat_buf;
        in = gated;
    }
    if (p->main.prim)
        OS_TRY(cpu_prim_run(ctx, &p->main, stream ? (dnnl_stream_t)stream : dev->stream, in, out));
    if (p->loop) OS_TRY(p->loop(ctx, n, in, out));
    return OPSCHED_OK;
}
