/*
 * training.c - the training iteration of a forward graph (opsched/training.h):
 * which tensors need gradients, what each operator keeps for backward, the
 * ordered steps of one iteration with their dependencies, and the memory
 * it holds step by step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "opsched/training.h"

typedef struct item {
    int64_t bytes;   /* rounded to the allocator's blocks */
    int alloc, free; /* steps, inclusive */
    int saved;       /* held for backward */
} item;

struct opsched_training {
    const opsched_graph *g;
    opsched_ctx *ctx;
    opsched_training_options o;
    opsched_train_step *steps;
    int **deps;                 /* owned per step */
    int n_steps, cap_steps;
    int n_tensors, n_nodes;
    unsigned char *param;       /* per tensor: a trained parameter */
    unsigned char *grad;        /* per tensor: requires a gradient */
    int *root;                  /* per tensor: the tensor whose memory it is (views) */
    unsigned char *reached;     /* per node: the loss depends on it */
    int *fwd;                   /* per node: its forward step */
    int *bwd_first, *bwd_last;  /* per node: its backward steps (-1: none) */
    int loss_in;                /* the tensor the loss reads */
    int zero_step, loss_step, loss_bwd_step, opt_step;
};

const char *opsched_train_step_kind_name(opsched_train_step_kind k)
{
    static const char *const names[] = {"zero_grad",     "forward",         "loss",
                                        "loss_backward", "backward_data",   "backward_weight",
                                        "optimizer"};
    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

int64_t opsched_training_block_bytes(int64_t n)
{
    if (n <= 512) return 512;
    return (n + 511) / 512 * 512;
}

static int is_float(opsched_dtype d)
{
    return d == OPSCHED_F32 || d == OPSCHED_F16 || d == OPSCHED_BF16;
}

static int64_t tensor_bytes(const opsched_graph *g, int t)
{
    const opsched_tensor *x = opsched_graph_tensor(g, t);
    return x ? opsched_shape_numel(&x->shape) * (int64_t)opsched_dtype_size(x->dtype) : 0;
}

/* ---- what needs a gradient ---------------------------------------------- */

/* Input k of n is a running statistic (BatchNormalization's mean and
 * variance): a buffer, not trained. */
static int is_buffer_use(const opsched_node *n, int k)
{
    return n->op == OPSCHED_OP_BATCHNORM && k >= 3;
}

static void find_params(opsched_training *t)
{
    const opsched_graph *g = t->g;
    for (int i = 0; i < t->n_nodes; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        for (int k = 0; k < n->n_inputs; k++) {
            int x = n->inputs[k];
            if (x < 0) continue;
            const opsched_tensor *ti = opsched_graph_tensor(g, x);
            if (ti->kind == OPSCHED_TENSOR_WEIGHT && is_float(ti->dtype) && !is_buffer_use(n, k))
                t->param[x] = 1;
        }
    }
}

/* Outputs of an operator that have no derivative whatever their type. */
static int differentiable(const opsched_node *n)
{
    switch (n->op) {
    case OPSCHED_OP_ARGMAX:
    case OPSCHED_OP_ARGMIN:
    case OPSCHED_OP_HARDMAX:
    case OPSCHED_OP_ONEHOT:
        return 0;
    default:
        return 1;
    }
}

static void propagate_grad(opsched_training *t)
{
    const opsched_graph *g = t->g;
    for (int x = 0; x < t->n_tensors; x++) {
        t->grad[x] = t->param[x];
        t->root[x] = x;
    }
    for (int i = 0; i < t->n_nodes; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        int any = 0;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0 && t->grad[n->inputs[k]]) any = 1;
        for (int k = 0; k < n->n_outputs; k++) {
            int y = n->outputs[k];
            t->grad[y] = any && differentiable(n) && is_float(opsched_graph_tensor(g, y)->dtype);
            if (opsched_op_is_view(n->op) && n->n_inputs > 0 && n->inputs[0] >= 0)
                t->root[y] = t->root[n->inputs[0]];
        }
    }
}

/* The nodes the loss depends on. */
static void mark_reached(opsched_training *t)
{
    const opsched_graph *g = t->g;
    unsigned char *need = calloc((size_t)t->n_tensors + 1, 1);
    if (!need) return;
    need[t->loss_in] = 1;
    for (int i = t->n_nodes - 1; i >= 0; i--) {
        const opsched_node *n = opsched_graph_node(g, i);
        for (int k = 0; k < n->n_outputs; k++)
            if (need[n->outputs[k]]) t->reached[i] = 1;
        if (!t->reached[i]) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) need[n->inputs[k]] = 1;
    }
    free(need);
}

/* ---- what an operator keeps for backward -------------------------------- */

typedef struct keep {
    int tensors[8];
    int n;
    int64_t extra; /* bytes of its own: indices, statistics */
} keep;

static void keep_tensor(keep *k, int x)
{
    if (x >= 0 && k->n < 8) k->tensors[k->n++] = x;
}

static void kept_for_backward(const opsched_graph *g, const opsched_node *n, keep *k)
{
    memset(k, 0, sizeof(*k));
    const opsched_tensor *x = n->n_inputs > 0 && n->inputs[0] >= 0
                                  ? opsched_graph_tensor(g, n->inputs[0])
                                  : NULL;
    const opsched_tensor *y = n->n_outputs > 0 ? opsched_graph_tensor(g, n->outputs[0]) : NULL;
    int64_t y_elems = y ? opsched_shape_numel(&y->shape) : 0;
    switch (n->op) {
    case OPSCHED_OP_CONV:
    case OPSCHED_OP_CONV_TRANSPOSE:
        keep_tensor(k, n->inputs[0]);
        break;
    case OPSCHED_OP_GEMM:
    case OPSCHED_OP_MATMUL:
    case OPSCHED_OP_MUL:
    case OPSCHED_OP_DIV:
        keep_tensor(k, n->inputs[0]);
        keep_tensor(k, n->inputs[1]);
        break;
    case OPSCHED_OP_POW:
        keep_tensor(k, n->inputs[0]);
        keep_tensor(k, n->inputs[1]);
        keep_tensor(k, n->outputs[0]);
        break;
    case OPSCHED_OP_RELU:
    case OPSCHED_OP_SIGMOID:
    case OPSCHED_OP_TANH:
    case OPSCHED_OP_SQRT:
    case OPSCHED_OP_SOFTMAX:
    case OPSCHED_OP_LOGSOFTMAX:
        keep_tensor(k, n->outputs[0]);
        break;
    case OPSCHED_OP_MAXPOOL:
    case OPSCHED_OP_GLOBALMAXPOOL:
        keep_tensor(k, n->inputs[0]);
        k->extra = y_elems * 8; /* int64 indices */
        break;
    case OPSCHED_OP_AVGPOOL:
    case OPSCHED_OP_GLOBALAVGPOOL:
    case OPSCHED_OP_ADD:
    case OPSCHED_OP_SUB:
    case OPSCHED_OP_REDUCEMEAN:
    case OPSCHED_OP_CONCAT:
    case OPSCHED_OP_SPLIT:
    case OPSCHED_OP_SLICE:
    case OPSCHED_OP_PAD:
    case OPSCHED_OP_TRANSPOSE:
    case OPSCHED_OP_EXPAND:
    case OPSCHED_OP_TILE:
    case OPSCHED_OP_RESIZE:
    case OPSCHED_OP_CAST:
    case OPSCHED_OP_FLATTEN:
    case OPSCHED_OP_RESHAPE:
    case OPSCHED_OP_IDENTITY:
    case OPSCHED_OP_DROPOUT:
        break;
    case OPSCHED_OP_BATCHNORM:
        keep_tensor(k, n->inputs[0]);
        k->extra = x && x->shape.ndim > 1 ? 2 * x->shape.d[1] * 4 : 0; /* mean, inverse std */
        break;
    case OPSCHED_OP_LAYERNORM: {
        keep_tensor(k, n->inputs[0]);
        int64_t rows = 1;
        int64_t axis = n->attr.layernorm.axis;
        for (int d = 0; x && d < axis && d < x->shape.ndim; d++)
            rows *= x->shape.d[d];
        k->extra = 2 * rows * 4;
        break;
    }
    case OPSCHED_OP_GROUPNORM:
        keep_tensor(k, n->inputs[0]);
        k->extra = x ? 2 * x->shape.d[0] * n->attr.groupnorm.groups * 4 : 0;
        break;
    case OPSCHED_OP_REDUCE:
        if (n->attr.reduce.fn == OPSCHED_REDUCE_SUM || n->attr.reduce.fn == OPSCHED_REDUCE_MEAN)
            break;
        keep_tensor(k, n->inputs[0]);
        keep_tensor(k, n->outputs[0]);
        break;
    case OPSCHED_OP_GATHER:
    case OPSCHED_OP_GATHER_ELEMENTS:
    case OPSCHED_OP_GATHER_ND:
        keep_tensor(k, n->inputs[1]);
        break;
    case OPSCHED_OP_WHERE:
        keep_tensor(k, n->inputs[0]);
        break;
    case OPSCHED_OP_LRN:
        keep_tensor(k, n->inputs[0]);
        keep_tensor(k, n->outputs[0]);
        break;
    case OPSCHED_OP_ATTENTION: {
        /* the memory-efficient backward: Q, K, V, the output and each
         * row's log-sum-exp (the probabilities are recomputed) */
        for (int i = 0; i < n->n_inputs; i++) keep_tensor(k, n->inputs[i]);
        keep_tensor(k, n->outputs[0]);
        opsched_attention_dims ad;
        k->extra = opsched_attention_dims_get(g, n, &ad) ? ad.B * ad.H * ad.Sq * 4 : 0;
        break;
    }
    default: /* the other element-wise ops: their inputs */
        for (int i = 0; i < n->n_inputs; i++) keep_tensor(k, n->inputs[i]);
        break;
    }
}

/* ---- the steps ------------------------------------------------------------ */

static opsched_status add_step(opsched_training *t, opsched_train_step_kind kind, int node,
                               int input, const opsched_node *n, int *out)
{
    if (t->n_steps == t->cap_steps) {
        int cap = t->cap_steps ? 2 * t->cap_steps : 64;
        opsched_train_step *s = realloc(t->steps, sizeof(*s) * (size_t)cap);
        if (!s) return OS_NOMEM(t->ctx);
        t->steps = s;
        int **d = realloc(t->deps, sizeof(*d) * (size_t)cap);
        if (!d) return OS_NOMEM(t->ctx);
        t->deps = d;
        t->cap_steps = cap;
    }
    opsched_train_step *s = &t->steps[t->n_steps];
    memset(s, 0, sizeof(*s));
    t->deps[t->n_steps] = NULL;
    s->kind = kind;
    s->node = node;
    s->input = input;
    if (n) {
        s->flops = n->cost.flops;
        s->bytes = n->cost.bytes_read + n->cost.bytes_written;
    }
    *out = t->n_steps++;
    return OPSCHED_OK;
}

static opsched_status add_dep(opsched_training *t, int step, int on)
{
    if (on < 0 || on == step) return OPSCHED_OK;
    opsched_train_step *s = &t->steps[step];
    for (int i = 0; i < s->n_deps; i++)
        if (t->deps[step][i] == on) return OPSCHED_OK;
    int *d = realloc(t->deps[step], sizeof(int) * (size_t)(s->n_deps + 1));
    if (!d) return OS_NOMEM(t->ctx);
    d[s->n_deps++] = on;
    t->deps[step] = d;
    return OPSCHED_OK;
}

static int has_param_input(const opsched_training *t, const opsched_node *n)
{
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] >= 0 && t->param[n->inputs[k]]) return 1;
    return 0;
}

/* The steps that make the gradient of tensor x (any alias of its root):
 * backward-data steps of its readers, or the loss's backward. */
static opsched_status deps_on_grad_of(opsched_training *t, int step, int x)
{
    int r = t->root[x];
    if (r == t->root[t->loss_in]) OS_TRY(add_dep(t, step, t->loss_bwd_step));
    for (int s = t->loss_bwd_step + 1; s < step; s++) {
        const opsched_train_step *b = &t->steps[s];
        if (b->kind != OPSCHED_STEP_BACKWARD_DATA) continue;
        int in = opsched_graph_node(t->g, b->node)->inputs[b->input];
        if (t->root[in] == r) OS_TRY(add_dep(t, step, s));
    }
    return OPSCHED_OK;
}

static opsched_status build_steps(opsched_training *t)
{
    const opsched_graph *g = t->g;
    int s;
    OS_TRY(add_step(t, OPSCHED_STEP_ZERO_GRAD, -1, -1, NULL, &t->zero_step));
    for (int i = 0; i < t->n_nodes; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        OS_TRY(add_step(t, OPSCHED_STEP_FORWARD, i, -1, n, &t->fwd[i]));
        for (int k = 0; k < n->n_inputs; k++) {
            int x = n->inputs[k];
            int p = x >= 0 ? opsched_graph_tensor(g, x)->producer : -1;
            OS_TRY(add_dep(t, t->fwd[i], p >= 0 ? t->fwd[p] : -1));
        }
    }
    int64_t logits = opsched_shape_numel(&opsched_graph_tensor(g, t->loss_in)->shape);
    OS_TRY(add_step(t, OPSCHED_STEP_LOSS, -1, -1, NULL, &t->loss_step));
    t->steps[t->loss_step].flops = 4 * logits;
    t->steps[t->loss_step].bytes = 8 * logits;
    int p = opsched_graph_tensor(g, t->loss_in)->producer;
    OS_TRY(add_dep(t, t->loss_step, p >= 0 ? t->fwd[p] : -1));
    OS_TRY(add_step(t, OPSCHED_STEP_LOSS_BACKWARD, -1, -1, NULL, &t->loss_bwd_step));
    t->steps[t->loss_bwd_step].flops = 2 * logits;
    t->steps[t->loss_bwd_step].bytes = 8 * logits;
    OS_TRY(add_dep(t, t->loss_bwd_step, t->loss_step));
    for (int i = t->n_nodes - 1; i >= 0; i--) {
        const opsched_node *n = opsched_graph_node(g, i);
        t->bwd_first[i] = t->bwd_last[i] = -1;
        if (!t->reached[i] || opsched_op_is_view(n->op)) continue;
        int out_grad = 0;
        for (int k = 0; k < n->n_outputs; k++) out_grad |= t->grad[n->outputs[k]];
        if (!out_grad) continue;
        int first = t->n_steps;
        for (int k = 0; k < n->n_inputs; k++) {
            int x = n->inputs[k];
            if (x < 0 || !t->grad[x] || t->param[x]) continue;
            OS_TRY(add_step(t, OPSCHED_STEP_BACKWARD_DATA, i, k, n, &s));
        }
        if (has_param_input(t, n)) OS_TRY(add_step(t, OPSCHED_STEP_BACKWARD_WEIGHT, i, -1, n, &s));
        if (t->n_steps == first) continue;
        t->bwd_first[i] = first;
        t->bwd_last[i] = t->n_steps - 1;
        for (s = first; s < t->n_steps; s++) {
            OS_TRY(add_dep(t, s, t->fwd[i]));
            for (int k = 0; k < n->n_outputs; k++) OS_TRY(deps_on_grad_of(t, s, n->outputs[k]));
        }
    }
    OS_TRY(add_step(t, OPSCHED_STEP_OPTIMIZER, -1, -1, NULL, &t->opt_step));
    int64_t params = 0;
    for (int x = 0; x < t->n_tensors; x++)
        if (t->param[x]) params += opsched_shape_numel(&opsched_graph_tensor(g, x)->shape);
    int adamw = t->o.optimizer == OPSCHED_OPTIMIZER_ADAMW;
    t->steps[t->opt_step].flops = (adamw ? 12 : 4) * params;
    t->steps[t->opt_step].bytes = (adamw ? 7 : 4) * 4 * params;
    for (s = t->loss_bwd_step + 1; s < t->opt_step; s++)
        if (t->steps[s].kind == OPSCHED_STEP_BACKWARD_WEIGHT) OS_TRY(add_dep(t, t->opt_step, s));
    for (s = 0; s < t->n_steps; s++) t->steps[s].deps = t->deps[s];
    return OPSCHED_OK;
}

/* ---- building ---------------------------------------------------------- */

void opsched_training_free(opsched_training *t)
{
    if (!t) return;
    for (int i = 0; i < t->n_steps; i++) free(t->deps[i]);
    free(t->deps);
    free(t->steps);
    free(t->param);
    free(t->grad);
    free(t->root);
    free(t->reached);
    free(t->fwd);
    free(t->bwd_first);
    free(t->bwd_last);
    free(t);
}

opsched_status opsched_training_build(const opsched_graph *g, const opsched_training_options *opts,
                                      opsched_training **out)
{
    if (!out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    if (!g) return OPSCHED_ERR_INVALID_ARG;
    opsched_ctx *ctx = opsched_graph_ctx(g);
    opsched_training_options o = {0};
    if (opts) o = *opts;
    if ((unsigned)o.optimizer > OPSCHED_OPTIMIZER_ADAMW || (unsigned)o.impl > OPSCHED_OPTIMIZER_FUSED ||
        (unsigned)o.loss > OPSCHED_LOSS_MSE || !(o.weight_decay >= 0))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "training: bad options");
    int loss_in = -1;
    for (int i = 0; i < opsched_graph_num_outputs(g) && loss_in < 0; i++) {
        int y = opsched_graph_output(g, i);
        if (is_float(opsched_graph_tensor(g, y)->dtype)) loss_in = y;
    }
    if (loss_in < 0)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                       "training %s: no floating-point output to take a loss of",
                       opsched_graph_name(g));
    opsched_training *t = calloc(1, sizeof(*t));
    if (!t) return OS_NOMEM(ctx);
    t->g = g;
    t->ctx = ctx;
    t->o = o;
    t->loss_in = loss_in;
    t->n_tensors = opsched_graph_num_tensors(g);
    t->n_nodes = opsched_graph_num_nodes(g);
    size_t nt = (size_t)t->n_tensors + 1, nn = (size_t)t->n_nodes + 1;
    t->param = calloc(nt, 1);
    t->grad = calloc(nt, 1);
    t->root = calloc(nt, sizeof(int));
    t->reached = calloc(nn, 1);
    t->fwd = calloc(nn, sizeof(int));
    t->bwd_first = calloc(nn, sizeof(int));
    t->bwd_last = calloc(nn, sizeof(int));
    opsched_status st = OPSCHED_OK;
    if (!t->param || !t->grad || !t->root || !t->reached || !t->fwd || !t->bwd_first ||
        !t->bwd_last) {
        st = OS_NOMEM(ctx);
        goto fail;
    }
    find_params(t);
    propagate_grad(t);
    mark_reached(t);
    if (!t->grad[loss_in]) {
        st = OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                     "training %s: output '%s' does not depend on any parameter",
                     opsched_graph_name(g), opsched_graph_tensor(g, loss_in)->name);
        goto fail;
    }
    OS_TRY_GOTO(st, build_steps(t), fail);
    *out = t;
    return OPSCHED_OK;
fail:
    opsched_training_free(t);
    return st;
}

int opsched_training_num_steps(const opsched_training *t)
{
    return t ? t->n_steps : 0;
}

const opsched_train_step *opsched_training_step(const opsched_training *t, int i)
{
    return t && i >= 0 && i < t->n_steps ? &t->steps[i] : NULL;
}

/* ---- memory ------------------------------------------------------------------ */

typedef struct items {
    item *v;
    int n, cap;
} items;

static int push(items *it, int64_t bytes, int alloc, int free_at, int saved)
{
    if (bytes <= 0) return 1;
    if (it->n == it->cap) {
        int cap = it->cap ? 2 * it->cap : 256;
        item *v = realloc(it->v, sizeof(*v) * (size_t)cap);
        if (!v) return 0;
        it->v = v;
        it->cap = cap;
    }
    it->v[it->n++] = (item){opsched_training_block_bytes(bytes), alloc,
                            free_at < alloc ? alloc : free_at, saved};
    return 1;
}

/* Per step, the FSDP unit whose parameters it uses (that of the first
 * parameter its node reads, else the unit of the step before); per unit,
 * its first and last step in forward and in backward; the units in the
 * order each pass enters them. */
typedef struct unit_span {
    int *first, *last; /* [2 * n_units]: pass 0 forward, 1 backward; -1 none */
    int *order;        /* [2 * n_units] */
    int n_order[2];
} unit_span;

static int unit_spans(const opsched_training *t, const opsched_training_sharding *sh, unit_span *u)
{
    int nu = sh->n_units;
    u->first = malloc(sizeof(int) * 2 * (size_t)nu);
    u->last = malloc(sizeof(int) * 2 * (size_t)nu);
    u->order = malloc(sizeof(int) * 2 * (size_t)nu);
    u->n_order[0] = u->n_order[1] = 0;
    if (!u->first || !u->last || !u->order) return 0;
    for (int i = 0; i < 2 * nu; i++)
        u->first[i] = u->last[i] = -1;
    int cur = 0;
    for (int s = 0; s < t->n_steps; s++) {
        const opsched_train_step *st = &t->steps[s];
        int pass = st->kind == OPSCHED_STEP_FORWARD || st->kind == OPSCHED_STEP_LOSS ? 0
                   : st->kind == OPSCHED_STEP_BACKWARD_DATA ||
                           st->kind == OPSCHED_STEP_BACKWARD_WEIGHT ||
                           st->kind == OPSCHED_STEP_LOSS_BACKWARD
                       ? 1
                       : -1;
        if (pass < 0) continue;
        if (st->node >= 0) {
            const opsched_node *n = opsched_graph_node(t->g, st->node);
            for (int k = 0; k < n->n_inputs; k++) {
                int x = n->inputs[k];
                if (x >= 0 && t->param[x] && sh->unit_of[x] >= 0 && sh->unit_of[x] < nu) {
                    cur = sh->unit_of[x];
                    break;
                }
            }
        }
        if (u->first[pass * nu + cur] < 0) {
            u->first[pass * nu + cur] = s;
            u->order[pass * nu + u->n_order[pass]++] = cur;
        }
        u->last[pass * nu + cur] = s;
    }
    return 1;
}

static opsched_status memory_replay(const opsched_training *t, const opsched_training_sharding *sh,
                                    opsched_training_memory *out);

opsched_status opsched_training_memory_get(const opsched_training *t,
                                           opsched_training_memory *out)
{
    return memory_replay(t, NULL, out);
}

opsched_status opsched_training_memory_sharded(const opsched_training *t,
                                               const opsched_training_sharding *sh,
                                               opsched_training_memory *out)
{
    if (!t || !out || !sh) return OPSCHED_ERR_INVALID_ARG;
    if (sh->ranks < 1 || sh->n_units < 1 || !sh->unit_of || !(sh->gather_scale > 0) ||
        !(sh->activation_scale > 0))
        return OS_FAIL(t->ctx, OPSCHED_ERR_INVALID_ARG,
                       "sharded training memory: %d ranks, %d units, scales %g and %g (at least "
                       "1, 1, positive)",
                       sh->ranks, sh->n_units, sh->gather_scale, sh->activation_scale);
    return memory_replay(t, sh, out);
}

static opsched_status memory_replay(const opsched_training *t, const opsched_training_sharding *sh,
                                    opsched_training_memory *out)
{
    if (!t || !out) return OPSCHED_ERR_INVALID_ARG;
    memset(out, 0, sizeof(*out));
    const int ranks = sh ? sh->ranks : 1;
    const double act = sh ? sh->activation_scale : 1.0;
    unit_span us = {0};
    if (sh && !unit_spans(t, sh, &us)) {
        free(us.first);
        free(us.last);
        free(us.order);
        return OS_NOMEM(t->ctx);
    }
    const opsched_graph *g = t->g;
    const int last = t->n_steps - 1;
    items it = {0};
    int *fwd_last = malloc(sizeof(int) * ((size_t)t->n_tensors + 1)); /* per root */
    int *bwd_keep = malloc(sizeof(int) * ((size_t)t->n_tensors + 1)); /* per root: -1 none */
    int *grad_first = malloc(sizeof(int) * ((size_t)t->n_tensors + 1));
    int64_t *diff = calloc((size_t)t->n_steps + 2, sizeof(int64_t));
    int64_t *saved_diff = calloc((size_t)t->n_steps + 2, sizeof(int64_t));
    opsched_status st = OPSCHED_OK;
    if (!fwd_last || !bwd_keep || !grad_first || !diff || !saved_diff) {
        st = OS_NOMEM(t->ctx);
        goto done;
    }
    for (int x = 0; x < t->n_tensors; x++) {
        const opsched_tensor *ti = opsched_graph_tensor(g, x);
        fwd_last[x] = ti->producer >= 0 ? t->fwd[ti->producer] : 0;
        bwd_keep[x] = -1;
        grad_first[x] = -1;
    }
    /* Last forward reader and last backward keeper of every root. */
    for (int i = 0; i < t->n_nodes; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        for (int k = 0; k < n->n_inputs; k++) {
            int x = n->inputs[k];
            if (x >= 0 && t->fwd[i] > fwd_last[t->root[x]]) fwd_last[t->root[x]] = t->fwd[i];
        }
        if (t->bwd_last[i] < 0) continue;
        keep k;
        kept_for_backward(g, n, &k);
        for (int j = 0; j < k.n; j++) {
            int r = t->root[k.tensors[j]];
            if (t->bwd_last[i] > bwd_keep[r]) bwd_keep[r] = t->bwd_last[i];
        }
        if (!push(&it, (int64_t)((double)k.extra * act), t->fwd[i], t->bwd_last[i], 1))
            goto nomem;
    }
    /* Weights, parameters' gradients and optimizer state; the data. */
    int64_t param_bytes = 0;
    for (int x = 0; x < t->n_tensors; x++) {
        const opsched_tensor *ti = opsched_graph_tensor(g, x);
        int64_t b = tensor_bytes(g, x);
        /* Parameters and buffers (float constants such as running
         * statistics live on the device too; integer ones are shapes). */
        if (ti->kind == OPSCHED_TENSOR_WEIGHT ||
            (ti->kind == OPSCHED_TENSOR_CONSTANT && is_float(ti->dtype))) {
            out->weights += b;
            if (!push(&it, b, 0, last, 0)) goto nomem;
        }
        if (ti->kind == OPSCHED_TENSOR_INPUT && !push(&it, b, 0, last, 0)) goto nomem;
        if (!t->param[x]) continue;
        out->parameters += b;
        param_bytes += opsched_training_block_bytes(b);
        int n_state = t->o.optimizer == OPSCHED_OPTIMIZER_ADAMW ? 2 : 1;
        int64_t shard = (b + ranks - 1) / ranks;
        if (sh) { /* the parameter itself: its shard (pushed above whole) */
            out->weights -= b - shard;
            it.v[it.n - 1].bytes = opsched_training_block_bytes(shard);
        }
        out->optimizer_state += n_state * shard;
        for (int s = 0; s < n_state; s++)
            if (!push(&it, shard, 0, last, 0)) goto nomem;
    }
    /* FSDP: each unit's parameters gathered whole, from the prefetch before
     * it (the entry of the unit before it in that pass) to its last step in
     * the pass (the root, never resharded, to its last backward step). */
    if (sh && ranks > 1) {
        int nu = sh->n_units;
        int64_t *ub = calloc((size_t)nu, sizeof(int64_t));
        if (!ub) goto nomem;
        for (int x = 0; x < t->n_tensors; x++)
            if (t->param[x] && sh->unit_of[x] >= 0 && sh->unit_of[x] < nu)
                ub[sh->unit_of[x]] += tensor_bytes(g, x);
        int ok = 1;
        for (int pass = 0; pass < 2 && ok; pass++)
            for (int j = 0; j < us.n_order[pass] && ok; j++) {
                int u = us.order[pass * nu + j];
                double scale = sh->keep_f32 && sh->keep_f32[u] ? 1.0 : sh->gather_scale;
                int64_t bytes = (int64_t)((double)ub[u] * scale);
                if (pass == 1 && (u == 0 || !sh->reshard_after_forward)) continue;
                int from = j ? us.first[pass * nu + us.order[pass * nu + j - 1]]
                             : (pass ? t->loss_bwd_step : 0);
                int to = us.last[pass * nu + u];
                if (pass == 0 && (u == 0 || !sh->reshard_after_forward) && us.last[nu + u] > to)
                    to = us.last[nu + u];
                ok = push(&it, bytes, from, to, 0);
            }
        free(ub);
        if (!ok) goto nomem;
    }
    /* A parameter's gradient: from the first backward-weight step of a node
     * reading it, held to the optimizer (set to None at zero-grad). */
    for (int s = t->loss_bwd_step + 1; s < t->opt_step; s++) {
        const opsched_train_step *b = &t->steps[s];
        if (b->kind != OPSCHED_STEP_BACKWARD_WEIGHT) continue;
        const opsched_node *n = opsched_graph_node(g, b->node);
        for (int k = 0; k < n->n_inputs; k++) {
            int x = n->inputs[k];
            if (x < 0 || !t->param[x] || grad_first[x] >= 0) continue;
            grad_first[x] = s;
            int64_t gb = tensor_bytes(g, x);
            if (sh && ranks > 1) {
                /* Made whole in the compute's type, reduce-scattered when
                 * its unit's backward ends, then its fp32 shard. */
                int u = sh->unit_of[x] >= 0 && sh->unit_of[x] < sh->n_units ? sh->unit_of[x] : 0;
                int end = us.last[sh->n_units + u] >= s ? us.last[sh->n_units + u] : s;
                int64_t shard = (gb + ranks - 1) / ranks;
                double scale = sh->keep_f32 && sh->keep_f32[u] ? 1.0 : sh->gather_scale;
                out->gradients += shard;
                if (!push(&it, (int64_t)((double)gb * scale), s, end, 0) ||
                    !push(&it, shard, end, last, 0))
                    goto nomem;
                /* Computed in a lower type, reduced in fp32: the upcast
                 * copy the reduce-scatter reads. */
                if (scale < 1.0 && !push(&it, gb, end, end, 0)) goto nomem;
                continue;
            }
            out->gradients += gb;
            if (!push(&it, gb, s, last, 0)) goto nomem;
        }
    }
    /* Forward activations: to the last forward reader, or to the last
     * backward step that keeps them. */
    for (int i = 0; i < t->n_nodes; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        if (opsched_op_is_view(n->op)) continue;
        for (int k = 0; k < n->n_outputs; k++) {
            int y = n->outputs[k];
            int end = fwd_last[y], kept = bwd_keep[y] >= 0;
            if (y == t->root[t->loss_in] && t->loss_step > end) end = t->loss_step;
            if (kept && bwd_keep[y] > end) end = bwd_keep[y];
            if (!push(&it, (int64_t)((double)tensor_bytes(g, y) * act), t->fwd[i], end, kept))
                goto nomem;
        }
    }
    /* The loss: cross-entropy keeps its log-softmax to the backward, MSE the
     * difference; the scalar is kept to the end. */
    int64_t lb = (int64_t)((double)tensor_bytes(g, t->loss_in) * act);
    if (!push(&it, lb, t->loss_step, t->loss_bwd_step, 1) || !push(&it, 4, t->loss_step, last, 0))
        goto nomem;
    /* Gradients of activations: from the first step that makes them to the
     * last backward step of their producer. */
    for (int x = 0; x < t->n_tensors; x++) {
        if (t->root[x] != x || !t->grad[x] || t->param[x]) continue;
        const opsched_tensor *ti = opsched_graph_tensor(g, x);
        int made = -1;
        if (x == t->root[t->loss_in]) made = t->loss_bwd_step;
        for (int s = t->loss_bwd_step + 1; s < t->opt_step && made < 0; s++) {
            const opsched_train_step *b = &t->steps[s];
            if (b->kind == OPSCHED_STEP_BACKWARD_DATA &&
                t->root[opsched_graph_node(g, b->node)->inputs[b->input]] == x)
                made = s;
        }
        if (made < 0) continue;
        int end = ti->producer >= 0 && t->bwd_last[ti->producer] >= 0 ? t->bwd_last[ti->producer]
                                                                       : made;
        if (!push(&it, (int64_t)((double)tensor_bytes(g, x) * act), made, end, 0)) goto nomem;
    }
    /* The foreach optimizers' temporaries. */
    if (t->o.impl == OPSCHED_OPTIMIZER_FOREACH &&
        (t->o.optimizer == OPSCHED_OPTIMIZER_ADAMW || t->o.weight_decay > 0)) {
        int64_t tmp = 0;
        for (int x = 0; x < t->n_tensors; x++)
            if (t->param[x]) tmp += (tensor_bytes(g, x) + ranks - 1) / ranks;
        if (!push(&it, tmp, t->opt_step, t->opt_step, 0)) goto nomem;
    }
    (void)param_bytes;
    for (int i = 0; i < it.n; i++) {
        diff[it.v[i].alloc] += it.v[i].bytes;
        diff[it.v[i].free + 1] -= it.v[i].bytes;
        if (it.v[i].saved) {
            saved_diff[it.v[i].alloc] += it.v[i].bytes;
            saved_diff[it.v[i].free + 1] -= it.v[i].bytes;
        }
    }
    int64_t live = 0, live_saved = 0;
    for (int s = 0; s <= last; s++) {
        live += diff[s];
        live_saved += saved_diff[s];
        if (live > out->peak) {
            out->peak = live;
            out->peak_step = s;
        }
        if (s == t->loss_step - 1) out->saved = live_saved;
    }
    goto done;
nomem:
    st = OS_NOMEM(t->ctx);
done:
    free(us.first);
    free(us.last);
    free(us.order);
    free(it.v);
    free(fwd_last);
    free(bwd_keep);
    free(grad_first);
    free(diff);
    free(saved_diff);
    return st;
}

int opsched_training_run_name(const char *model, const opsched_training_options *o, char *buf,
                              size_t n)
{
    if (!model || !o || !buf || n == 0) return -1;
    char wd[48] = "";
    if (o->step && o->weight_decay > 0 &&
        !(o->optimizer == OPSCHED_OPTIMIZER_ADAMW && o->weight_decay == 0.01))
        snprintf(wd, sizeof(wd), "-wd%g", o->weight_decay);
    int len = snprintf(buf, n, "%s-train-%s%s%s%s", model,
                       o->loss == OPSCHED_LOSS_MSE ? "mse" : "ce",
                       !o->step                                   ? ""
                       : o->optimizer == OPSCHED_OPTIMIZER_ADAMW ? "-adamw"
                                                                  : "-sgd",
                       o->step && o->impl == OPSCHED_OPTIMIZER_FUSED ? "-fused" : "", wd);
    return len < 0 || (size_t)len >= n ? -1 : len;
}

int opsched_training_parse_run_name(const char *name, char *model, size_t n,
                                    opsched_training_options *o)
{
    if (!name || !model || !o || n == 0) return 0;
    const char *t = strstr(name, "-train-");
    if (!t || t == name) return 0;
    opsched_training_options r;
    memset(&r, 0, sizeof(r));
    const char *q = t + 7;
    if (strncmp(q, "ce", 2) == 0) {
        q += 2;
    } else if (strncmp(q, "mse", 3) == 0) {
        r.loss = OPSCHED_LOSS_MSE;
        q += 3;
    } else {
        return 0;
    }
    if (strncmp(q, "-sgd", 4) == 0) {
        r.step = 1;
        q += 4;
    } else if (strncmp(q, "-adamw", 6) == 0) {
        r.step = 1;
        r.optimizer = OPSCHED_OPTIMIZER_ADAMW;
        q += 6;
    }
    if (r.step && strncmp(q, "-fused", 6) == 0) {
        r.impl = OPSCHED_OPTIMIZER_FUSED;
        q += 6;
    }
    if (r.step && strncmp(q, "-wd", 3) == 0) {
        char *end = NULL;
        r.weight_decay = strtod(q + 3, &end);
        if (end == q + 3 || !(r.weight_decay > 0)) return 0;
        q = end;
    }
    if (*q) return 0;
    size_t len = (size_t)(t - name);
    if (len >= n) return 0;
    memcpy(model, name, len);
    model[len] = '\0';
    *o = r;
    return 1;
}
