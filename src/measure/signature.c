/*
 * signature.c - canonical signatures of node configurations, and copying
 * one node out of a graph into a graph of its own.
 *
 * A signature names the operator, every attribute that changes the work,
 * and each input's role, shape and dtype, never a name: the same
 * convolution in resnet50 and in a sweep gets the same signature, so a
 * measurement of one answers for the other.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "opsched/measure.h"

typedef struct sig_buf {
    char *p;
    size_t size, used;
    int overflow;
} sig_buf;

static void put(sig_buf *b, const char *fmt, ...) OS_PRINTF(2, 3);

static void put(sig_buf *b, const char *fmt, ...)
{
    if (b->used >= b->size) {
        b->overflow = 1;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->used, b->size - b->used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->size - b->used) {
        b->overflow = 1;
        b->used = b->size;
        return;
    }
    b->used += (size_t)n;
}

static void put_ints(sig_buf *b, const char *key, const int64_t *v, int n)
{
    put(b, "|%s=", key);
    for (int i = 0; i < n; i++) put(b, i ? ",%lld" : "%lld", (long long)v[i]);
}

/* The depth window of a 3-D op (nothing for 2-D ones, whose signatures
 * stay as they were). */
static void put_depth(sig_buf *b, const opsched_window_depth *d)
{
    if (d->kernel == 0) return;
    put(b, "|depth=%lld,%lld,%lld,%lld,%lld,%lld", (long long)d->kernel, (long long)d->stride,
        (long long)d->dilation, (long long)d->pad_begin, (long long)d->pad_end,
        (long long)d->output_padding);
}

static void put_attrs(sig_buf *b, const opsched_node *n, int rank)
{
    const opsched_op_attr *a = &n->attr;
    switch (n->op) {
    case OPSCHED_OP_CONV:
    case OPSCHED_OP_CONV_GRAD_FILTER:
        put_ints(b, "k", a->conv.kernel, 2);
        put_ints(b, "s", a->conv.stride, 2);
        put_ints(b, "p", a->conv.pads, 4);
        put_ints(b, "d", a->conv.dilation, 2);
        put(b, "|g=%lld", (long long)a->conv.groups);
        put_depth(b, &a->conv.depth);
        break;
    case OPSCHED_OP_MAXPOOL:
    case OPSCHED_OP_AVGPOOL:
        put_ints(b, "k", a->pool.kernel, 2);
        put_ints(b, "s", a->pool.stride, 2);
        put_ints(b, "p", a->pool.pads, 4);
        put_ints(b, "d", a->pool.dilation, 2);
        put(b, "|ceil=%d|cip=%d", a->pool.ceil_mode,
            n->op == OPSCHED_OP_AVGPOOL ? a->pool.count_include_pad : 0);
        put_depth(b, &a->pool.depth);
        break;
    case OPSCHED_OP_GEMM:
        put(b, "|ta=%d|tb=%d|alpha=%g|beta=%g", a->gemm.trans_a, a->gemm.trans_b,
            (double)a->gemm.alpha, (double)a->gemm.beta);
        break;
    case OPSCHED_OP_CLIP: put(b, "|min=%g|max=%g", (double)a->clip.min, (double)a->clip.max); break;
    case OPSCHED_OP_GELU: put(b, "|tanh=%d", a->gelu.tanh_approx); break;
    case OPSCHED_OP_HARDSIGMOID:
        put(b, "|a=%g|b=%g", (double)a->hardsigmoid.alpha, (double)a->hardsigmoid.beta);
        break;
    case OPSCHED_OP_CONCAT:
    case OPSCHED_OP_SOFTMAX:
    case OPSCHED_OP_FLATTEN:
    case OPSCHED_OP_GATHER: put(b, "|axis=%lld", (long long)a->axis.axis); break;
    case OPSCHED_OP_BATCHNORM:
    case OPSCHED_OP_BATCHNORM_TRAIN:
    case OPSCHED_OP_BATCHNORM_GRAD: break; /* epsilon does not change the work */
    case OPSCHED_OP_LRN:
        put(b, "|size=%lld|a=%g|b=%g|bias=%g", (long long)a->lrn.size, (double)a->lrn.alpha,
            (double)a->lrn.beta, (double)a->lrn.bias);
        break;
    case OPSCHED_OP_LAYERNORM: put(b, "|axis=%lld", (long long)a->layernorm.axis); break;
    case OPSCHED_OP_SPLIT:
        put(b, "|axis=%lld", (long long)a->split.axis);
        put_ints(b, "sizes", a->split.sizes, a->split.n);
        break;
    case OPSCHED_OP_SLICE:
        put_ints(b, "starts", a->slice.starts, rank);
        put_ints(b, "ends", a->slice.ends, rank);
        put_ints(b, "steps", a->slice.steps, rank);
        break;
    case OPSCHED_OP_REDUCEMEAN:
        put_ints(b, "axes", a->reduce.axes, a->reduce.n_axes);
        put(b, "|keep=%d", a->reduce.keepdims);
        break;
    case OPSCHED_OP_TRANSPOSE: put_ints(b, "perm", a->transpose.perm, a->transpose.n); break;
    case OPSCHED_OP_PAD:
        put_ints(b, "pads", a->pad.pads, 2 * rank);
        put(b, "|mode=%d", (int)a->pad.mode);
        break;
    case OPSCHED_OP_EXPAND:
    case OPSCHED_OP_RESHAPE: put_ints(b, "shape", a->shape.shape.d, a->shape.shape.ndim); break;
    case OPSCHED_OP_UNARY:
        put(b, "|a=%g|b=%g|c=%g", (double)a->unary.alpha, (double)a->unary.beta,
            (double)a->unary.gamma);
        break;
    case OPSCHED_OP_BINARY: break; /* the function is in the name */
    case OPSCHED_OP_CAST: put(b, "|to=%s", opsched_dtype_name(a->cast.to)); break;
    case OPSCHED_OP_REDUCE:
        put_ints(b, "axes", a->reduce.axes, a->reduce.n_axes);
        put(b, "|keep=%d|noop=%d", a->reduce.keepdims, a->reduce.noop_with_empty_axes);
        break;
    case OPSCHED_OP_ARGMAX:
    case OPSCHED_OP_ARGMIN:
        put(b, "|axis=%lld|keep=%d|last=%d", (long long)a->arg.axis, a->arg.keepdims,
            a->arg.select_last_index);
        break;
    case OPSCHED_OP_LOGSOFTMAX:
    case OPSCHED_OP_HARDMAX:
    case OPSCHED_OP_GATHER_ELEMENTS: put(b, "|axis=%lld", (long long)a->axis.axis); break;
    case OPSCHED_OP_CUMSUM:
        put(b, "|axis=%lld|excl=%d|rev=%d", (long long)a->cumsum.axis, a->cumsum.exclusive,
            a->cumsum.reverse);
        break;
    case OPSCHED_OP_TOPK:
        put(b, "|axis=%lld|k=%lld|largest=%d|sorted=%d", (long long)a->topk.axis,
            (long long)a->topk.k, a->topk.largest, a->topk.sorted);
        break;
    case OPSCHED_OP_GATHER_ND: put(b, "|b=%lld", (long long)a->gather_nd.batch_dims); break;
    case OPSCHED_OP_SCATTER_ELEMENTS:
    case OPSCHED_OP_SCATTER_ND:
        put(b, "|axis=%lld|red=%d", (long long)a->scatter.axis, (int)a->scatter.reduction);
        break;
    case OPSCHED_OP_TILE: put_ints(b, "repeats", a->tile.repeats, rank); break;
    case OPSCHED_OP_TRILU: put(b, "|upper=%d|k=%lld", a->trilu.upper, (long long)a->trilu.k); break;
    case OPSCHED_OP_ONEHOT:
        put(b, "|axis=%lld|depth=%lld", (long long)a->onehot.axis, (long long)a->onehot.depth);
        break;
    case OPSCHED_OP_RESIZE:
        put(b, "|mode=%d|coord=%d|nearest=%d|a=%g|excl=%d|aa=%d", (int)a->resize.mode,
            (int)a->resize.coord, (int)a->resize.nearest, (double)a->resize.cubic_coeff_a,
            a->resize.exclude_outside, a->resize.antialias);
        put_ints(b, "sizes", a->resize.sizes, rank);
        break;
    case OPSCHED_OP_GROUPNORM: put(b, "|groups=%lld", (long long)a->groupnorm.groups); break;
    case OPSCHED_OP_CONV_TRANSPOSE:
        put_ints(b, "k", a->conv_transpose.kernel, 2);
        put_ints(b, "s", a->conv_transpose.stride, 2);
        put_ints(b, "p", a->conv_transpose.pads, 4);
        put_ints(b, "d", a->conv_transpose.dilation, 2);
        put_ints(b, "op", a->conv_transpose.output_padding, 2);
        put(b, "|g=%lld", (long long)a->conv_transpose.groups);
        put_depth(b, &a->conv_transpose.depth);
        break;
    case OPSCHED_OP_QUANTIZE:
    case OPSCHED_OP_DEQUANTIZE:
        put(b, "|axis=%lld|block=%lld", (long long)a->quant.axis, (long long)a->quant.block_size);
        break;
    case OPSCHED_OP_ATTENTION:
        put(b, "|scale=%.9g|nanzero=%d|axes=", (double)a->attention.scale,
            a->attention.nan_rows_zero);
        for (int x = 0; x < OPSCHED_ATT_OPERANDS; x++)
            for (int c = 0; c < 4; c++)
                put(b, "%d%s", a->attention.axes[x][c], x == OPSCHED_ATT_OPERANDS - 1 && c == 3 ? "" : ",");
        for (int x = 0; x < 3; x++) {
            const opsched_attention_view *v = &a->attention.view[x];
            if (v->rank <= 0) continue;
            put(b, "|view%d=", x); /* the offset does not change the work */
            for (int d = 0; d < v->rank && d < 4; d++)
                put(b, "%lldx%lld%s", (long long)v->d[d], (long long)v->stride[d],
                    d == v->rank - 1 ? "" : ",");
        }
        break;
    default: break;
    }
}

opsched_status opsched_node_signature(const opsched_graph *g, int node, char *buf, size_t size)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || !buf || size == 0) return OPSCHED_ERR_INVALID_ARG;
    sig_buf b = {.p = buf, .size = size};
    buf[0] = '\0';
    put(&b, "%s", opsched_node_op_name(n));
    int rank = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const opsched_tensor *t = opsched_graph_tensor(g, n->inputs[i]);
        if (!t) {
            put(&b, "|-");
            continue;
        }
        if (i == 0) rank = t->shape.ndim;
        char role = t->kind == OPSCHED_TENSOR_WEIGHT     ? 'w'
                    : t->kind == OPSCHED_TENSOR_CONSTANT ? 'c'
                                                         : 'x';
        char shape[128];
        opsched_shape_format(&t->shape, shape, sizeof(shape));
        put(&b, "|%c:%s:%s", role, shape, opsched_dtype_name(t->dtype));
    }
    put_attrs(&b, n, rank);
    if (b.overflow)
        return OS_FAIL(opsched_graph_ctx(g), OPSCHED_ERR_INVALID_ARG,
                       "node '%s': signature longer than %zu bytes", n->name, size);
    return OPSCHED_OK;
}

opsched_status opsched_graph_extract_node(const opsched_graph *g, int node, opsched_graph **out)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || !out) return OPSCHED_ERR_INVALID_ARG;
    opsched_ctx *ctx = opsched_graph_ctx(g);
    *out = NULL;
    opsched_graph *x = NULL;
    opsched_status st;
    int ins[128];
    const char *out_names[128];
    if (n->n_inputs > 128 || n->n_outputs > 128)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "node '%s': too many inputs", n->name);
    char name[512];
    snprintf(name, sizeof(name), "%s:%s", opsched_graph_name(g), n->name);
    OS_TRY(opsched_graph_create(ctx, name, &x));
    for (int i = 0; i < n->n_inputs; i++) {
        ins[i] = -1;
        const opsched_tensor *t = opsched_graph_tensor(g, n->inputs[i]);
        if (!t) continue;
        int id = -1;
        if (opsched_graph_find_tensor(x, t->name, &id) == OPSCHED_OK) {
            ins[i] = id; /* the same tensor read twice (x * x) */
            continue;
        }
        opsched_tensor_kind kind = t->kind == OPSCHED_TENSOR_ACTIVATION ? OPSCHED_TENSOR_INPUT : t->kind;
        OS_TRY_GOTO(st, opsched_graph_add_tensor(x, t->name, kind, t->dtype, &t->shape, &id), fail);
        if (t->data) OS_TRY_GOTO(st, opsched_graph_set_data(x, id, t->data, t->data_bytes), fail);
        ins[i] = id;
    }
    for (int i = 0; i < n->n_outputs; i++) out_names[i] = opsched_graph_tensor(g, n->outputs[i])->name;
    int outs[128];
    OS_TRY_GOTO(st, opsched_graph_add_node(x, n->name, n->op, &n->attr, ins, n->n_inputs,
                                           n->n_outputs, out_names, outs), fail);
    for (int i = 0; i < n->n_outputs; i++) OS_TRY_GOTO(st, opsched_graph_mark_output(x, outs[i]), fail);
    *out = x;
    return OPSCHED_OK;
fail:
    opsched_graph_free(x);
    return st;
}
