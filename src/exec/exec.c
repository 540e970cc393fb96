/*
 * exec.c - the executor: a graph planned node by node on one device, its
 * activations in one arena laid out by the memory plan, its weights in one
 * buffer, run free, layer-timed or as a captured device graph.
 *
 * Views alias their input when the stored order of both sides is the same
 * (always in NCHW; in NHWC when neither side is a channels-last 4-D tensor
 * with more than one channel and pixel); otherwise the view is planned like
 * any node and copies.  A Relu that the backend fused into the convolution
 * before it aliases that convolution's output the same way.
 */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "core/error.h"
#include "core/util.h"
#include "exec/exec_impl.h"
#include "measure/measure_impl.h"

/* What the executor keeps of a graph tensor. */
typedef struct ex_tensor {
    opsched_tensor_kind kind;
    opsched_shape shape;
    opsched_dtype sdt; /* storage dtype */
    int nhwc;          /* stored channels-last */
    size_t numel, bytes;
    os_exec_fill fill;    /* graph inputs: how random values are drawn */
    opsched_buffer *buf;  /* borrowed from the arena or weights; NULL when unused */
    int owns_buf;         /* buf is a view this tensor created */
} ex_tensor;

typedef struct ex_node {
    opsched_plan *plan;  /* NULL: an alias, nothing runs */
    opsched_buffer **in; /* into the executor's io array */
    opsched_buffer **out;
    opsched_timer *timer; /* created by the first run_layers */
} ex_node;

struct opsched_executor {
    opsched_device *dev;
    opsched_ctx *ctx;
    opsched_math math;
    opsched_layout layout;
    int n_nodes, n_tensors, n_inputs, n_outputs;
    ex_node *nodes;
    opsched_layer_info *layers;
    ex_tensor *tensors;
    int *inputs, *outputs; /* tensor ids */
    opsched_buffer **io;   /* every node's inputs then outputs */
    opsched_buffer *arena, *weights;
    opsched_timer *total_timer;
    opsched_timer *end_timer; /* the boundary after the last layer */
    void *graph; /* captured device graph, NULL when none */
    opsched_exec_info info;
};

static size_t align_up(size_t v)
{
    return (v + OS_EXEC_ALIGN - 1) / OS_EXEC_ALIGN * OS_EXEC_ALIGN;
}

/* ---- what is copied from the graph -------------------------------------- */

static opsched_status copy_graph(opsched_executor *ex, const opsched_graph *g)
{
    ex->n_nodes = opsched_graph_num_nodes(g);
    ex->n_tensors = opsched_graph_num_tensors(g);
    ex->n_inputs = opsched_graph_num_inputs(g);
    ex->n_outputs = opsched_graph_num_outputs(g);
    size_t n_io = 0;
    for (int i = 0; i < ex->n_nodes; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        n_io += (size_t)(n->n_inputs + n->n_outputs);
    }
    ex->nodes = calloc((size_t)ex->n_nodes + 1, sizeof(*ex->nodes));
    ex->layers = calloc((size_t)ex->n_nodes + 1, sizeof(*ex->layers));
    ex->tensors = calloc((size_t)ex->n_tensors + 1, sizeof(*ex->tensors));
    ex->inputs = calloc((size_t)ex->n_inputs + 1, sizeof(int));
    ex->outputs = calloc((size_t)ex->n_outputs + 1, sizeof(int));
    ex->io = calloc(n_io + 1, sizeof(*ex->io));
    if (!ex->nodes || !ex->layers || !ex->tensors || !ex->inputs || !ex->outputs || !ex->io)
        return OS_NOMEM(ex->ctx);
    for (int t = 0; t < ex->n_tensors; t++) {
        const opsched_tensor *src = opsched_graph_tensor(g, t);
        ex_tensor *et = &ex->tensors[t];
        et->kind = src->kind;
        et->shape = src->shape;
        et->sdt = os_exec_storage_dtype(src->dtype, ex->math);
        et->nhwc = os_exec_is_nhwc(src, ex->layout);
        et->numel = (size_t)opsched_shape_numel(&src->shape);
        et->bytes = os_exec_tensor_bytes(src, ex->math);
        if (src->kind == OPSCHED_TENSOR_INPUT) et->fill = os_exec_fill_for(g, t);
    }
    size_t pos = 0;
    for (int i = 0; i < ex->n_nodes; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        ex->nodes[i].in = ex->io + pos;
        ex->nodes[i].out = ex->io + pos + n->n_inputs;
        pos += (size_t)(n->n_inputs + n->n_outputs);
        ex->layers[i].node = i;
    }
    for (int i = 0; i < ex->n_inputs; i++)
        ex->inputs[i] = opsched_graph_input(g, i);
    for (int i = 0; i < ex->n_outputs; i++)
        ex->outputs[i] = opsched_graph_output(g, i);
    return OPSCHED_OK;
}

/* ---- planning ----------------------------------------------------------- */

/* 1 when a tensor's stored order is its logical row-major order. */
static int rowmajor(const opsched_tensor *t, opsched_layout layout)
{
    return !os_exec_is_nhwc(t, layout) || t->shape.d[1] == 1 || t->shape.d[2] * t->shape.d[3] == 1;
}

int os_exec_view_aliases(const opsched_graph *g, int node, opsched_math m, opsched_layout layout)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || !opsched_op_is_view(n->op) || n->n_inputs < 1 || n->inputs[0] < 0 ||
        n->n_outputs != 1)
        return 0;
    const opsched_tensor *x = opsched_graph_tensor(g, n->inputs[0]);
    const opsched_tensor *y = opsched_graph_tensor(g, n->outputs[0]);
    if (os_exec_tensor_bytes(x, m) != os_exec_tensor_bytes(y, m)) return 0;
    return opsched_shape_equal(&x->shape, &y->shape) ||
           (rowmajor(x, layout) && rowmajor(y, layout));
}

static int is_graph_output(const opsched_graph *g, int t)
{
    for (int i = 0; i < opsched_graph_num_outputs(g); i++)
        if (opsched_graph_output(g, i) == t) return 1;
    return 0;
}

int os_exec_relu_reader(const opsched_graph *g, int i)
{
    const opsched_node *n = opsched_graph_node(g, i);
    if (n->n_outputs != 1 || opsched_graph_num_consumers(g, n->outputs[0]) != 1 ||
        is_graph_output(g, n->outputs[0]))
        return -1;
    for (int j = i + 1; j < opsched_graph_num_nodes(g); j++) {
        const opsched_node *c = opsched_graph_node(g, j);
        for (int k = 0; k < c->n_inputs; k++)
            if (c->inputs[k] == n->outputs[0])
                return c->op == OPSCHED_OP_RELU && c->n_inputs == 1 ? j : -1;
    }
    return -1;
}

static int named_algo(const char *algo)
{
    return algo && strcmp(algo, "heuristic") != 0 && strcmp(algo, "find") != 0;
}

opsched_status os_exec_plan_node(opsched_device *dev, const opsched_graph *g, int i,
                                 const opsched_exec_options *o, opsched_layer_info *li,
                                 opsched_plan **out)
{
    const opsched_node *n = opsched_graph_node(g, i);
    opsched_ctx *ctx = opsched_device_ctx(dev);
    opsched_plan_options po = o->plan;
    char reason[512];
    int named = named_algo(po.algo);
    if (n->op != OPSCHED_OP_CONV) {
        if (named) po.algo = NULL;
        po.fuse_activation = 0;
    }
    opsched_status st = opsched_plan_create(dev, g, i, &po, out);
    if (st == OPSCHED_ERR_UNSUPPORTED && n->op == OPSCHED_OP_CONV && named) {
        snprintf(reason, sizeof(reason), "%s", opsched_ctx_last_error(ctx));
        if (!o->algo_fallback)
            return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "layer '%s': %s cannot run it: %s",
                           n->name, po.algo, reason);
        li->fallback = 1;
        snprintf(li->fallback_reason, sizeof(li->fallback_reason), "%.*s",
                 (int)sizeof(li->fallback_reason) - 1, reason);
        opsched_ctx_clear_error(ctx);
        po.algo = NULL;
        st = opsched_plan_create(dev, g, i, &po, out);
    }
    if (st == OPSCHED_ERR_UNSUPPORTED) {
        char quoted[300];
        snprintf(reason, sizeof(reason), "%s", opsched_ctx_last_error(ctx));
        snprintf(quoted, sizeof(quoted), "'%s'", n->name);
        if (!strstr(reason, quoted))
            return OS_FAIL(ctx, st, "layer '%s' (%s): %s", n->name, opsched_op_name(n->op),
                           reason);
    }
    return st;
}

/* Plans every node; alias[] gets the nodes that run nothing. */
static opsched_status plan_all(opsched_executor *ex, const opsched_graph *g,
                               const opsched_exec_options *o, unsigned char *alias)
{
    for (int i = 0; i < ex->n_nodes; i++) {
        opsched_layer_info *li = &ex->layers[i];
        if (alias[i]) continue; /* a Relu fused into the node before */
        if (os_exec_view_aliases(g, i, ex->math, ex->layout)) {
            alias[i] = 1;
            snprintf(li->algo, sizeof(li->algo), "view");
            continue;
        }
        ex_node *en = &ex->nodes[i];
        OS_TRY(os_exec_plan_node(ex->dev, g, i, o, li, &en->plan));
        opsched_plan_info pi;
        OS_TRY(opsched_plan_info_get(en->plan, &pi));
        if (pi.fused_activation) {
            int j = os_exec_relu_reader(g, i);
            if (j < 0) {
                /* The Relu's input is also wanted unrectified: plan without fusing. */
                opsched_exec_options plain = *o;
                plain.plan.fuse_activation = 0;
                opsched_plan_free(en->plan);
                en->plan = NULL;
                OS_TRY(os_exec_plan_node(ex->dev, g, i, &plain, li, &en->plan));
                OS_TRY(opsched_plan_info_get(en->plan, &pi));
            } else {
                alias[j] = 1;
                snprintf(ex->layers[j].algo, sizeof(ex->layers[j].algo), "fused");
            }
        }
        snprintf(li->algo, sizeof(li->algo), "%s", pi.algo);
        li->workspace_bytes = pi.workspace_bytes;
        ex->info.workspace_bytes += pi.workspace_bytes;
        ex->info.n_fallbacks += li->fallback;
    }
    return OPSCHED_OK;
}

/* ---- memory ------------------------------------------------------------- */

/* Packs every weight and constant into one buffer and uploads it: payloads
 * converted to the storage type and order, random values where a tensor
 * has none. */
static opsched_status load_weights(opsched_executor *ex, const opsched_graph *g, uint64_t seed)
{
    opsched_status st = OPSCHED_OK;
    size_t total = 0;
    for (int t = 0; t < ex->n_tensors; t++) {
        const ex_tensor *et = &ex->tensors[t];
        if (et->kind == OPSCHED_TENSOR_WEIGHT || et->kind == OPSCHED_TENSOR_CONSTANT)
            total += align_up(et->bytes ? et->bytes : 1);
    }
    ex->info.weight_bytes = total;
    OS_TRY(opsched_buffer_alloc(ex->dev, total, &ex->weights));
    unsigned char *host = calloc(total ? total : 1, 1);
    if (!host) return OS_NOMEM(ex->ctx);
    size_t off = 0;
    for (int t = 0; t < ex->n_tensors; t++) {
        ex_tensor *et = &ex->tensors[t];
        if (et->kind != OPSCHED_TENSOR_WEIGHT && et->kind != OPSCHED_TENSOR_CONSTANT) continue;
        OS_TRY_GOTO(
            st, os_exec_tensor_values(ex->ctx, g, t, ex->math, ex->layout, seed, host + off), done);
        OS_TRY_GOTO(st, opsched_buffer_view(ex->weights, off, et->bytes, &et->buf), done);
        et->owns_buf = 1;
        off += align_up(et->bytes ? et->bytes : 1);
    }
    OS_TRY_GOTO(st, opsched_buffer_upload(ex->weights, 0, host, total), done);
done:
    free(host);
    return st;
}

/* The arena and a view of it for every tensor that lives there; aliases
 * share their root's view (weights must have theirs already). */
static opsched_status lay_out(opsched_executor *ex, const opsched_graph *g,
                              const unsigned char *alias)
{
    os_memplan mp;
    opsched_status st = OPSCHED_OK;
    OS_TRY(os_memplan_compute(ex->ctx, g, ex->math, alias, &mp));
    ex->info.arena_bytes = mp.arena_bytes;
    OS_TRY_GOTO(st, opsched_buffer_alloc(ex->dev, mp.arena_bytes, &ex->arena), done);
    for (int t = 0; t < ex->n_tensors; t++) {
        ex_tensor *et = &ex->tensors[t];
        if (mp.root[t] != t || mp.offset[t] == OS_MEMPLAN_NONE) continue;
        OS_TRY_GOTO(st, opsched_buffer_view(ex->arena, mp.offset[t], et->bytes, &et->buf), done);
        et->owns_buf = 1;
    }
    for (int t = 0; t < ex->n_tensors; t++)
        if (mp.root[t] != t) ex->tensors[t].buf = ex->tensors[mp.root[t]].buf;
    for (int i = 0; i < ex->n_nodes; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        for (int k = 0; k < n->n_inputs; k++)
            ex->nodes[i].in[k] = n->inputs[k] >= 0 ? ex->tensors[n->inputs[k]].buf : NULL;
        for (int k = 0; k < n->n_outputs; k++)
            ex->nodes[i].out[k] = ex->tensors[n->outputs[k]].buf;
    }
done:
    os_memplan_release(&mp);
    return st;
}

/* ---- create and free ---------------------------------------------------- */

void opsched_executor_free(opsched_executor *ex)
{
    if (!ex) return;
    os_device_graph_free(ex->dev, ex->graph);
    opsched_timer_free(ex->total_timer);
    opsched_timer_free(ex->end_timer);
    for (int i = 0; ex->nodes && i < ex->n_nodes; i++) {
        opsched_plan_free(ex->nodes[i].plan);
        opsched_timer_free(ex->nodes[i].timer);
    }
    for (int t = 0; ex->tensors && t < ex->n_tensors; t++)
        if (ex->tensors[t].owns_buf) opsched_buffer_free(ex->tensors[t].buf);
    opsched_buffer_free(ex->arena);
    opsched_buffer_free(ex->weights);
    free(ex->nodes);
    free(ex->layers);
    free(ex->tensors);
    free(ex->inputs);
    free(ex->outputs);
    free(ex->io);
    free(ex);
}

opsched_status opsched_executor_create(opsched_device *dev, const opsched_graph *g,
                                       const opsched_exec_options *opts, opsched_executor **out)
{
    if (!dev || !g || !out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    opsched_ctx *ctx = opsched_device_ctx(dev);
    opsched_exec_options o;
    memset(&o, 0, sizeof(o));
    if (opts) o = *opts;
    if (!o.seed) o.seed = 1;
    if (o.algo_fallback && strcmp(o.algo_fallback, "heuristic") != 0)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "executor: algorithm fallback '%s' (valid: none, heuristic)",
                       o.algo_fallback);
    if ((int)o.plan.math < 0 || o.plan.math >= OPSCHED_MATH_COUNT)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "executor: bad math mode %d",
                       (int)o.plan.math);

    opsched_status st = OPSCHED_OK;
    unsigned char *alias = NULL;
    opsched_executor *ex = calloc(1, sizeof(*ex));
    if (!ex) return OS_NOMEM(ctx);
    ex->dev = dev;
    ex->ctx = ctx;
    ex->math = o.plan.math;
    ex->layout = o.plan.layout;
    OS_TRY_GOTO(st, copy_graph(ex, g), fail);
    ex->info.n_layers = ex->n_nodes;
    alias = calloc((size_t)ex->n_nodes + 1, 1);
    if (!alias) {
        st = OS_NOMEM(ctx);
        goto fail;
    }
    OS_TRY_GOTO(st, plan_all(ex, g, &o, alias), fail);
    OS_TRY_GOTO(st, load_weights(ex, g, o.seed), fail);
    OS_TRY_GOTO(st, lay_out(ex, g, alias), fail);
    OS_TRY_GOTO(st, opsched_executor_randomize_inputs(ex, o.seed), fail);
    free(alias);
    *out = ex;
    return OPSCHED_OK;
fail:
    free(alias);
    opsched_executor_free(ex);
    return st;
}

opsched_status opsched_executor_info(const opsched_executor *ex, opsched_exec_info *out)
{
    if (!ex || !out) return OPSCHED_ERR_INVALID_ARG;
    *out = ex->info;
    return OPSCHED_OK;
}

const opsched_layer_info *opsched_executor_layer(const opsched_executor *ex, int node)
{
    if (!ex || node < 0 || node >= ex->n_nodes) return NULL;
    return &ex->layers[node];
}

/* ---- inputs and outputs ------------------------------------------------- */

/* The tensor behind graph input or output i (ids[i] of n_io), checked
 * against a caller's array of n values. */
static opsched_status check_io(const opsched_executor *ex, const int *ids, int n_io, int i,
                               const char *what, const float *data, size_t n, const ex_tensor **out)
{
    if (i < 0 || i >= n_io)
        return OS_FAIL(ex->ctx, OPSCHED_ERR_INVALID_ARG,
                       "executor: graph %s %d does not exist (the graph has %d)", what, i, n_io);
    const ex_tensor *t = &ex->tensors[ids[i]];
    if (!data || n != t->numel)
        return OS_FAIL(ex->ctx, OPSCHED_ERR_INVALID_ARG,
                       "executor: graph %s %d holds %zu values, not %zu", what, i, t->numel, n);
    if (!t->buf)
        return OS_FAIL(ex->ctx, OPSCHED_ERR_INVALID_ARG, "executor: graph %s %d has no memory",
                       what, i);
    *out = t;
    return OPSCHED_OK;
}

opsched_status opsched_executor_set_input(opsched_executor *ex, int i, const float *data, size_t n)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    const ex_tensor *t = NULL;
    OS_TRY(check_io(ex, ex->inputs, ex->n_inputs, i, "input", data, n, &t));
    void *host = malloc(t->bytes ? t->bytes : 1);
    if (!host) return OS_NOMEM(ex->ctx);
    os_exec_convert(data, OPSCHED_F32, host, t->sdt, n, &t->shape, t->nhwc);
    opsched_status st = opsched_buffer_upload(t->buf, 0, host, t->bytes);
    free(host);
    return st;
}

opsched_status opsched_executor_get_output(opsched_executor *ex, int i, float *data, size_t n)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    const ex_tensor *t = NULL;
    OS_TRY(check_io(ex, ex->outputs, ex->n_outputs, i, "output", data, n, &t));
    void *host = malloc(t->bytes ? t->bytes : 1);
    if (!host) return OS_NOMEM(ex->ctx);
    opsched_status st = opsched_buffer_download(t->buf, 0, host, t->bytes);
    if (st == OPSCHED_OK) os_exec_convert(host, t->sdt, data, OPSCHED_F32, n, &t->shape, -t->nhwc);
    free(host);
    return st;
}

size_t opsched_executor_output_numel(const opsched_executor *ex, int i)
{
    if (!ex || i < 0 || i >= ex->n_outputs) return 0;
    return ex->tensors[ex->outputs[i]].numel;
}

opsched_status opsched_executor_randomize_inputs(opsched_executor *ex, uint64_t seed)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    for (int i = 0; i < ex->n_inputs; i++) {
        int id = ex->inputs[i];
        const ex_tensor *t = &ex->tensors[id];
        if (!t->buf) continue;
        void *host = malloc(t->bytes ? t->bytes : 1);
        float *v = malloc(sizeof(float) * (t->numel ? t->numel : 1));
        opsched_status st = OPSCHED_OK;
        if (!host || !v) {
            st = OS_NOMEM(ex->ctx);
        } else {
            os_exec_random_values(&t->fill, t->sdt, t->numel, seed + (uint64_t)id, v);
            os_exec_convert(v, OPSCHED_F32, host, t->sdt, t->numel, &t->shape, t->nhwc);
            st = opsched_buffer_upload(t->buf, 0, host, t->bytes);
        }
        free(host);
        free(v);
        OS_TRY(st);
    }
    return OPSCHED_OK;
}

/* ---- running ------------------------------------------------------------ */

opsched_status opsched_executor_run(opsched_executor *ex, opsched_stream *s)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    for (int i = 0; i < ex->n_nodes; i++) {
        ex_node *n = &ex->nodes[i];
        if (n->plan) OS_TRY(opsched_plan_launch(n->plan, s, n->in, n->out));
    }
    return OPSCHED_OK;
}

opsched_status opsched_executor_run_host_timed(opsched_executor *ex, opsched_stream *s,
                                               double *layer_host_ms)
{
    if (!ex || !layer_host_ms) return OPSCHED_ERR_INVALID_ARG;
    /* One clock read per boundary: the layers add up to the whole run. */
    double t0 = os_now_ms();
    for (int i = 0; i < ex->n_nodes; i++) {
        ex_node *n = &ex->nodes[i];
        layer_host_ms[i] = 0;
        if (!n->plan) continue;
        OS_TRY(opsched_plan_launch(n->plan, s, n->in, n->out));
        double t = os_now_ms();
        layer_host_ms[i] = t - t0;
        t0 = t;
    }
    return OPSCHED_OK;
}

/* Layers are timed by marks at the boundaries between them (one device
 * timestamp per boundary, the next layer's start being the previous one's
 * end), so the layers add up exactly to the layer-timed run. */
opsched_status opsched_executor_run_layers(opsched_executor *ex, double *layer_ms, double *total_ms)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    if (!ex->total_timer) OS_TRY(opsched_timer_create(ex->dev, &ex->total_timer));
    for (int i = 0; i < ex->n_nodes; i++)
        if (ex->nodes[i].plan && !ex->nodes[i].timer)
            OS_TRY(opsched_timer_create(ex->dev, &ex->nodes[i].timer));
    OS_TRY(opsched_timer_start(ex->total_timer, NULL));
    for (int i = 0; i < ex->n_nodes; i++) {
        ex_node *n = &ex->nodes[i];
        if (!n->plan) continue;
        OS_TRY(opsched_timer_start(n->timer, NULL));
        OS_TRY(opsched_plan_launch(n->plan, NULL, n->in, n->out));
    }
    /* the end mark: the total timer's stop, reached through a second start mark */
    if (!ex->end_timer) OS_TRY(opsched_timer_create(ex->dev, &ex->end_timer));
    OS_TRY(opsched_timer_start(ex->end_timer, NULL));
    OS_TRY(opsched_timer_stop(ex->total_timer, NULL));
    opsched_timer *prev = NULL;
    int prev_node = -1;
    for (int i = 0; i < ex->n_nodes; i++) {
        if (layer_ms) layer_ms[i] = 0;
        if (!ex->nodes[i].plan) continue;
        if (prev) {
            double ms = 0;
            OS_TRY(opsched_timer_between_ms(prev, ex->nodes[i].timer, &ms));
            if (layer_ms) layer_ms[prev_node] = ms;
        }
        prev = ex->nodes[i].timer;
        prev_node = i;
    }
    if (prev) {
        double ms = 0;
        OS_TRY(opsched_timer_between_ms(prev, ex->end_timer, &ms));
        if (layer_ms) layer_ms[prev_node] = ms;
    }
    double total = 0;
    OS_TRY(opsched_timer_elapsed_ms(ex->total_timer, &total));
    if (total_ms) *total_ms = total;
    return OPSCHED_OK;
}

opsched_status opsched_executor_capture(opsched_executor *ex)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    opsched_stream *s = opsched_device_stream(ex->dev);
    os_device_graph_free(ex->dev, ex->graph);
    ex->graph = NULL;
    OS_TRY(os_stream_graph_begin(s));
    opsched_status st = opsched_executor_run(ex, s);
    if (st != OPSCHED_OK) {
        (void)os_stream_graph_end(s, NULL);
        return st;
    }
    return os_stream_graph_end(s, &ex->graph);
}

opsched_status opsched_executor_replay(opsched_executor *ex)
{
    if (!ex) return OPSCHED_ERR_INVALID_ARG;
    if (!ex->graph)
        return OS_FAIL(ex->ctx, OPSCHED_ERR_INVALID_ARG,
                       "executor: replay before a successful capture");
    return os_stream_graph_launch(opsched_device_stream(ex->dev), ex->graph);
}
