/*
 * exec_build.c - building the executor: the planning rules, what each node
 * becomes (a launch on a stream, an alias, a slice of a concat, a member
 * of a merged convolution), the launches in the order they are enqueued,
 * the weights and the memory.  Without a schedule the executor builds the
 * sequential one, so a sequential run is built, planned and launched by
 * the same code as any other schedule.
 *
 * Enqueue order: views that must copy a graph input first, then stage by
 * stage; inside a concurrent stage the groups' nodes round-robin (the
 * first node of every group, then the second...), so that a free-running
 * (not captured) inference gives every stream work early; a view that
 * must copy runs right after the node it views, on its stream.  Groups
 * keep the stream of what they read where they can (a group goes to the
 * stream of the producer of its first node's first input when that stream
 * is free in the stage), which saves events.
 *
 * Memory: lifetimes are counted in steps, from the step of a tensor's
 * first writer to that of its last reader (graph outputs to the end).
 * With several streams a step is a stage, so tensors of one stage never
 * share memory whatever stream or order their nodes run in, and where two
 * tensors of different stages do share memory, the program (exec_run.c)
 * makes the new writer wait for every use of the old tensor.  On one
 * stream (the sequential schedule) the stream orders every launch, and a
 * step is a launch: a tensor's memory is free for the next launch after
 * its last reader, as tight as lifetimes in nodes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "core/error.h"
#include "core/util.h"
#include "exec/exec_impl.h"

#define EX_NONE SIZE_MAX

static size_t align_up(size_t v)
{
    return (v + OS_EXEC_ALIGN - 1) / OS_EXEC_ALIGN * OS_EXEC_ALIGN;
}

/* ---- tensors -------------------------------------------------------------- */

int os_ex_root(const opsched_executor *ex, int t, size_t *offset)
{
    size_t off = 0;
    for (int hops = 0; hops <= ex->n_tensors && ex->tensors[t].parent != t; hops++) {
        off += ex->tensors[t].rel;
        t = ex->tensors[t].parent;
    }
    if (offset) *offset = off;
    return t;
}

static opsched_status add_tensor(opsched_executor *ex, opsched_tensor_kind kind,
                                 const opsched_shape *shape, opsched_dtype dt, int *out)
{
    if (ex->n_tensors == ex->cap_tensors) {
        int cap = ex->cap_tensors ? 2 * ex->cap_tensors : 64;
        ex_tensor *t = realloc(ex->tensors, sizeof(*t) * (size_t)cap);
        if (!t) return OS_NOMEM(ex->ctx);
        ex->tensors = t;
        ex->cap_tensors = cap;
    }
    int id = ex->n_tensors++;
    ex_tensor *t = &ex->tensors[id];
    memset(t, 0, sizeof(*t));
    opsched_tensor tmp;
    memset(&tmp, 0, sizeof(tmp));
    tmp.dtype = dt;
    tmp.shape = *shape;
    t->kind = kind;
    t->shape = *shape;
    t->sdt = os_exec_storage_dtype(dt, ex->math);
    t->nhwc = os_exec_is_nhwc(&tmp, ex->layout) &&
              !(ex->rowmajor && id < ex->n_graph_tensors && ex->rowmajor[id]);
    t->numel = (size_t)opsched_shape_numel(shape);
    t->bytes = os_exec_tensor_bytes(&tmp, ex->math);
    t->parent = id;
    t->arena_off = EX_NONE;
    *out = id;
    return OPSCHED_OK;
}

static opsched_status copy_graph(opsched_executor *ex, const opsched_graph *g)
{
    ex->n_nodes = opsched_graph_num_nodes(g);
    ex->n_graph_tensors = opsched_graph_num_tensors(g);
    ex->n_inputs = opsched_graph_num_inputs(g);
    ex->n_outputs = opsched_graph_num_outputs(g);
    ex->nodes = calloc((size_t)ex->n_nodes + 1, sizeof(*ex->nodes));
    ex->inputs = calloc((size_t)ex->n_inputs + 1, sizeof(int));
    ex->outputs = calloc((size_t)ex->n_outputs + 1, sizeof(int));
    if (!ex->nodes || !ex->inputs || !ex->outputs) return OS_NOMEM(ex->ctx);
    for (int t = 0; t < ex->n_graph_tensors; t++) {
        const opsched_tensor *src = opsched_graph_tensor(g, t);
        int id = 0;
        OS_TRY(add_tensor(ex, src->kind, &src->shape, src->dtype, &id));
        if (src->kind == OPSCHED_TENSOR_INPUT) ex->tensors[id].fill = os_exec_fill_for(g, t);
    }
    for (int i = 0; i < ex->n_nodes; i++) {
        ex->nodes[i].node = i;
        ex->nodes[i].role = OPSCHED_ROLE_LAUNCH;
        ex->nodes[i].stage = -1;
        ex->nodes[i].stream = -1;
    }
    for (int i = 0; i < ex->n_inputs; i++) {
        ex->inputs[i] = opsched_graph_input(g, i);
        ex->tensors[ex->inputs[i]].used = 1;
    }
    for (int i = 0; i < ex->n_outputs; i++) {
        ex->outputs[i] = opsched_graph_output(g, i);
        ex->tensors[ex->outputs[i]].used = 1;
    }
    return OPSCHED_OK;
}

/* outer and inner element counts around logical axis `axis` of a tensor,
 * in the order it is stored (NCHW, or N,H,W,C when channels-last). */
static void axis_split(const ex_tensor *t, int axis, int64_t *outer, int64_t *inner)
{
    static const int nhwc[4] = {0, 2, 3, 1};
    int order[OPSCHED_MAX_DIMS], pos = 0;
    for (int i = 0; i < t->shape.ndim; i++)
        order[i] = t->nhwc ? nhwc[i] : i;
    while (pos < t->shape.ndim && order[pos] != axis)
        pos++;
    *outer = *inner = 1;
    for (int i = 0; i < t->shape.ndim; i++) {
        if (i < pos) *outer *= t->shape.d[order[i]];
        if (i > pos) *inner *= t->shape.d[order[i]];
    }
}

/* ---- planning rules ------------------------------------------------------- */

/* 1 when a tensor's stored order is its logical row-major order. */
static int rowmajor(const opsched_tensor *t, opsched_layout layout, int kept)
{
    return kept || !os_exec_is_nhwc(t, layout) || t->shape.d[1] == 1 ||
           t->shape.d[2] * t->shape.d[3] == 1;
}

int os_exec_view_aliases(const opsched_graph *g, int node, opsched_math m, opsched_layout layout,
                         const unsigned char *rm)
{
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n || n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs != 1) return 0;
    if (n->op == OPSCHED_OP_TRANSPOSE) return opsched_layout_transpose_view(g, node, rm);
    if (!opsched_op_is_view(n->op)) return 0;
    const opsched_tensor *x = opsched_graph_tensor(g, n->inputs[0]);
    const opsched_tensor *y = opsched_graph_tensor(g, n->outputs[0]);
    if (os_exec_tensor_bytes(x, m) != os_exec_tensor_bytes(y, m)) return 0;
    return opsched_shape_equal(&x->shape, &y->shape) ||
           (rowmajor(x, layout, rm && rm[n->inputs[0]]) &&
            rowmajor(y, layout, rm && rm[n->outputs[0]]));
}

int os_exec_fused_act(const opsched_graph *g, int i)
{
    return opsched_node_epilogue(g, i);
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
    /* a named algorithm is a convolution's (cuDNN's names, "own"), an
     * attention's ("cudnn", "own", "tensor-cores", "products") or a product's with its
     * bias and activation ("cudnn", their graph); other ops plan as they do */
    int takes_algo = n->op == OPSCHED_OP_CONV || n->op == OPSCHED_OP_ATTENTION ||
                     ((n->op == OPSCHED_OP_MATMUL || n->op == OPSCHED_OP_GEMM) && named &&
                      strcmp(po.algo, "cudnn") == 0);
    if (!takes_algo && named) po.algo = NULL;
    /* "cudnn", "tensor-cores" and "products" name the attention's kernels;
     * a convolution plans as it does */
    if (n->op == OPSCHED_OP_CONV && named &&
        (strcmp(po.algo, "cudnn") == 0 || strcmp(po.algo, "tensor-cores") == 0 ||
         strcmp(po.algo, "products") == 0)) {
        po.algo = NULL;
        named = 0;
    }
    if (n->op != OPSCHED_OP_CONV) {
        /* a batch normalisation takes its activation too, a MatMul with its
         * bias its activation or residual, a Gemm its bias (its own input C)
         * and the activation after it */
        int bn_act = n->op == OPSCHED_OP_BATCHNORM && !(po.ablate & OPSCHED_ABLATE_NORM_ACT);
        int gemm = n->op == OPSCHED_OP_GEMM && !(po.ablate & OPSCHED_ABLATE_BIAS);
        if (gemm) po.fuse_bias = 1;
        if (!(n->op == OPSCHED_OP_MATMUL && po.fuse_bias)) {
            if (!bn_act && !gemm) po.fuse_activation = 0;
            po.fuse_residual = 0;
        }
    }
    opsched_status st = opsched_plan_create(dev, g, i, &po, out);
    if (st == OPSCHED_ERR_UNSUPPORTED && takes_algo && named) {
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
            return OS_FAIL(ctx, st, "layer '%s' (%s): %s", n->name, opsched_op_name(n->op), reason);
    }
    return st;
}

/* ---- launches ------------------------------------------------------------- */

static opsched_status add_launch(opsched_executor *ex, opsched_plan *plan, int node, int stage,
                                 int stream, const char *label, const int *in, int n_in,
                                 const int *out, int n_out)
{
    if (ex->n_launches == ex->cap_launches) {
        int cap = ex->cap_launches ? 2 * ex->cap_launches : 64;
        ex_launch *l = realloc(ex->launches, sizeof(*l) * (size_t)cap);
        if (!l) return OS_NOMEM(ex->ctx);
        ex->launches = l;
        ex->cap_launches = cap;
    }
    ex_launch *l = &ex->launches[ex->n_launches];
    memset(l, 0, sizeof(*l));
    l->record = -1;
    l->in = malloc(sizeof(int) * (size_t)(n_in + 1));
    l->out = malloc(sizeof(int) * (size_t)(n_out + 1));
    l->bin = calloc((size_t)n_in + 1, sizeof(*l->bin));
    l->bout = calloc((size_t)n_out + 1, sizeof(*l->bout));
    if (!l->in || !l->out || !l->bin || !l->bout) {
        free(l->in);
        free(l->out);
        free(l->bin);
        free(l->bout);
        return OS_NOMEM(ex->ctx);
    }
    ex->n_launches++;
    l->plan = plan;
    l->node = node;
    l->stage = stage;
    l->stream = stream;
    snprintf(l->label, sizeof(l->label), "%s", label);
    l->n_in = n_in;
    l->n_out = n_out;
    for (int i = 0; i < n_in; i++) {
        l->in[i] = in[i];
        if (in[i] >= 0) ex->tensors[in[i]].used = 1;
    }
    for (int i = 0; i < n_out; i++) {
        l->out[i] = out[i];
        ex->tensors[out[i]].used = 1;
    }
    return OPSCHED_OK;
}

/* ---- planning ------------------------------------------------------------- */

/* Where the schedule puts every node: stage, and the stage's group. */
typedef struct ex_place {
    int stage, group;
    int merge_first; /* a merge member or its Relu: the merge's first member, else -1 */
    int pos;         /* its place in its group (0 for merges) */
} ex_place;

/* Build-time state: the schedule's placement, the plans made so far and
 * the merged convolutions' own launches waiting for their stage. */
typedef struct ex_build {
    const opsched_graph *g;
    const opsched_schedule *s;
    const opsched_exec_options *o;
    ex_place *place;
    opsched_plan **plans; /* per node, NULL when it launches nothing */
    int *residual;        /* per node: the residual a convolution's plan adds (input 3), or -1 */
    int *gate;            /* per node: the scale a convolution's plan applies to its input
                           * (opsched_conv_gate_find; input 5), or -1 */
    int **chain_in;       /* per node: a chain's launch inputs (its own, then the sides), or NULL */
    int *chain_n;         /* per node: their count */
    int *move_role;       /* per node: opsched_move_runs' role, NULL when no run is gathered */
    int *out_over;        /* per node: the tensor its launch writes instead of its output, or -1
                           * (a gate that runs its multiply: the multiply's output) */
    int *follow_next;     /* copying views after the same node: a list per node */
    int *follow_head;     /* per node (+1 slot for the prologue at index n_nodes) */
    /* per stage, for MERGE stages: up to three launches (conv, relu, split) */
    struct merge_launches {
        int n;
        opsched_plan *plan[3];
        int n_in[3], n_out[3];
        int *in[3], *out[3];
        char label[96];
    } * merges;
} ex_build;

static opsched_exec_options node_options(const ex_build *b, int stage)
{
    opsched_exec_options o = *b->o;
    o.plan.fuse_residual = 0; /* plan_node asks for it where the launch can read it */
    o.plan.fuse_chain = 0;    /* likewise */
    o.plan.fuse_se = 0;       /* likewise */
    o.plan.fuse_bias = 0;     /* likewise */
    if (stage >= 0 && b->s->stages[stage].kind == OPSCHED_STAGE_CONCURRENT &&
        b->s->stages[stage].n_groups > 1) {
        if (b->o->concurrent_algo) o.plan.algo = b->o->concurrent_algo;
        if (b->o->concurrent_workspace_limit)
            o.plan.workspace_limit = b->o->concurrent_workspace_limit;
    }
    return o;
}

static void note_plan(opsched_executor *ex, int node, const opsched_plan *p,
                      const opsched_layer_info *li)
{
    opsched_plan_info pi;
    opsched_layer_info *ni = &ex->nodes[node];
    if (opsched_plan_info_get(p, &pi) == OPSCHED_OK) {
        snprintf(ni->algo, sizeof(ni->algo), "%s", pi.algo);
        ni->workspace_bytes = pi.workspace_bytes;
        ex->info.workspace_bytes += pi.workspace_bytes;
    }
    ni->fallback = li->fallback;
    memcpy(ni->fallback_reason, li->fallback_reason, sizeof(ni->fallback_reason));
    ex->info.n_fallbacks += li->fallback;
}

/* Launch order (launch_all): stage, then place in the group, then group. */
static int launches_before(const ex_build *b, int p, int i)
{
    const ex_place *a = &b->place[p], *c = &b->place[i];
    if (a->stage != c->stage) return a->stage < c->stage;
    if (a->merge_first >= 0 || c->merge_first >= 0) return 0;
    if (a->pos != c->pos) return a->pos < c->pos;
    return a->group < c->group;
}

/* Makes node j's output an alias of convolution i's, which computes it. */
static void absorb(opsched_executor *ex, ex_build *b, int i, int j)
{
    ex->nodes[j].role = OPSCHED_ROLE_FUSED;
    snprintf(ex->nodes[j].algo, sizeof(ex->nodes[j].algo), "fused");
    ex->tensors[opsched_graph_node(b->g, j)->outputs[0]].parent =
        opsched_graph_node(b->g, i)->outputs[0];
}

/* 1 when node j still launches on its own: not fused into another launch
 * and no member of a merge, so a fused launch may take it. */
static int launches_alone(const opsched_executor *ex, const ex_build *b, int j)
{
    return ex->nodes[j].role == OPSCHED_ROLE_LAUNCH && b->place[j].merge_first < 0;
}

/* 1 when chain c of node i can run as i's launch: every later node still
 * launches on its own (not fused elsewhere, not in a merge) and every side
 * operand exists when i launches. */
static int chain_ok(const opsched_executor *ex, const ex_build *b, int i, const opsched_ew_chain *c)
{
    int sides[OPSCHED_CHAIN_MAX];
    for (int k = 1; k < c->n; k++)
        if (!launches_alone(ex, b, c->nodes[k])) return 0;
    int n = opsched_ew_chain_sides(b->g, c, sides);
    for (int k = 0; k < n; k++) {
        int p = opsched_tensor_scheduled_producer(b->g, sides[k]);
        if (p >= 0 && !launches_before(b, p, i)) return 0;
    }
    return 1;
}

/* Plans node i with options o into *plan and its info into *pi (the plan
 * freed and NULL on failure). */
static opsched_status plan_with_info(opsched_executor *ex, ex_build *b, int i,
                                     const opsched_exec_options *o, opsched_layer_info *li,
                                     opsched_plan **plan, opsched_plan_info *pi)
{
    memset(li, 0, sizeof(*li));
    *plan = NULL;
    OS_TRY(os_exec_plan_node(ex->dev, b->g, i, o, li, plan));
    opsched_status st = opsched_plan_info_get(*plan, pi);
    if (st != OPSCHED_OK) {
        opsched_plan_free(*plan);
        *plan = NULL;
    }
    return st;
}

/* The most inputs of a fused launch's head (an element-wise node, a mean). */
#define EX_HEAD_MAX_IN 4

/* Keeps `plan` as node i's launch of several nodes: it reads in[0..n_in)
 * (copied), and each node of absorbed[0..n_abs) becomes an alias of i's
 * output.  Frees the plan on failure. */
static opsched_status keep_fused(opsched_executor *ex, ex_build *b, int i, opsched_plan *plan,
                                 const opsched_layer_info *li, const int *in, int n_in,
                                 const int *absorbed, int n_abs)
{
    int *cp = malloc(sizeof(int) * (size_t)(n_in > 0 ? n_in : 1));
    if (!cp) {
        opsched_plan_free(plan);
        return OS_NOMEM(ex->ctx);
    }
    memcpy(cp, in, sizeof(int) * (size_t)n_in);
    b->chain_in[i] = cp;
    b->chain_n[i] = n_in;
    b->plans[i] = plan;
    for (int k = 0; k < n_abs; k++)
        absorb(ex, b, i, absorbed[k]);
    note_plan(ex, i, plan, li);
    return OPSCHED_OK;
}

/* Plans node i as the head of its element-wise chain; the later nodes
 * become aliases of its output, and the launch reads the sides after the
 * node's own inputs.  A backend that runs the node alone gives the plan
 * the node would have had anyway, which is kept.  *done is 0 when node i
 * heads no chain that can run here (nothing planned). */
static opsched_status plan_chain(opsched_executor *ex, ex_build *b, int i,
                                 const opsched_exec_options *base, int *done)
{
    opsched_ew_chain c;
    *done = 0;
    if (!base->plan.fuse_activation || (base->plan.ablate & OPSCHED_ABLATE_CHAINS) ||
        !opsched_ew_chain_find(b->g, i, &c) || !chain_ok(ex, b, i, &c))
        return OPSCHED_OK;
    opsched_exec_options o = *base;
    o.plan.fuse_chain = 1;
    opsched_layer_info li;
    opsched_plan *plan = NULL;
    opsched_plan_info pi;
    OS_TRY(plan_with_info(ex, b, i, &o, &li, &plan, &pi));
    if (!pi.fused_chain) { /* the backend ran the node alone: its plan as any other */
        b->plans[i] = plan;
        note_plan(ex, i, plan, &li);
        *done = 1;
        return OPSCHED_OK;
    }
    const opsched_node *n = opsched_graph_node(b->g, i);
    int in[EX_HEAD_MAX_IN + OPSCHED_CHAIN_MAX]; /* a chainable head has at most two inputs */
    memcpy(in, n->inputs, sizeof(int) * (size_t)n->n_inputs);
    int ns = opsched_ew_chain_sides(b->g, &c, in + n->n_inputs);
    OS_TRY(keep_fused(ex, b, i, plan, &li, in, n->n_inputs + ns, c.nodes + 1, c.n - 1));
    *done = 1;
    return OPSCHED_OK;
}

static opsched_status plan_node(opsched_executor *ex, ex_build *b, int i);

/* Gated map's Mul `mul`, which convolution c applies as its input's gate:
 * it runs nothing and its output is an alias of the map it multiplies. */
static void fold_mul(opsched_executor *ex, ex_build *b, int mul, int c)
{
    const opsched_node *m = opsched_graph_node(b->g, mul);
    opsched_conv_gate cg;
    if (!opsched_conv_gate_find(b->g, c, &cg)) return;
    ex->nodes[mul].role = OPSCHED_ROLE_FUSED;
    snprintf(ex->nodes[mul].algo, sizeof(ex->nodes[mul].algo), "fused into %.20s",
             opsched_graph_node(b->g, c)->name);
    ex->tensors[m->outputs[0]].parent = cg.x;
    ex->info.n_gates_folded++;
}

/* Convolution i reads a gated map (opsched_conv_gate_find) whose Mul was
 * planned alone, on its own (a scale that is no squeeze-and-excitation
 * gate opsched_se_gate_find knows: ECA's, a model input): asks i's plan
 * for the gate (b->gate[i]) and returns the Mul, or -1. */
static int gate_apart(opsched_executor *ex, ex_build *b, int i, const opsched_exec_options *o)
{
    opsched_conv_gate cg;
    if (!o->plan.fuse_activation || (o->plan.ablate & OPSCHED_ABLATE_GATE) ||
        b->place[i].merge_first >= 0 || !opsched_conv_gate_find(b->g, i, &cg) ||
        ex->nodes[cg.mul].role != OPSCHED_ROLE_LAUNCH || !b->plans[cg.mul] || b->chain_in[cg.mul] ||
        b->place[cg.mul].merge_first >= 0)
        return -1;
    int sp = opsched_tensor_scheduled_producer(b->g, cg.scale);
    if (sp >= 0 && !launches_before(b, sp, i)) return -1;
    b->gate[i] = cg.scale;
    return cg.mul;
}

/* The convolution that reads gate se's multiply plans it as its input's
 * gate (opsched_conv_gate_find) where its backend applies it: the Mul then
 * runs nothing and its output is an alias of the map it multiplies, which
 * the convolution reads in its place.  Planned here, before the gate, so
 * that the gate's launch does not take the multiply first. */
static opsched_status plan_gate(opsched_executor *ex, ex_build *b, const opsched_se_gate *se)
{
    opsched_conv_gate cg;
    if (se->mul < 0 || (b->o->plan.ablate & OPSCHED_ABLATE_GATE) || !launches_alone(ex, b, se->mul))
        return OPSCHED_OK;
    int y = opsched_graph_node(b->g, se->mul)->outputs[0], c = -1;
    for (int j = se->mul + 1; j < ex->n_nodes && c < 0; j++)
        if (opsched_graph_node(b->g, j)->inputs[0] == y) c = j;
    if (c < 0 || b->plans[c] || !launches_alone(ex, b, c) ||
        !opsched_conv_gate_find(b->g, c, &cg) || cg.mul != se->mul || cg.scale != se->gate)
        return OPSCHED_OK;
    b->gate[c] = cg.scale;
    OS_TRY(plan_node(ex, b, c));
    if (b->gate[c] >= 0) fold_mul(ex, b, se->mul, c);
    return OPSCHED_OK;
}

/* Plans node i, a spatial mean, as the squeeze-and-excitation gate that
 * starts at it (opsched_se_gate_find): the gate's later nodes become
 * aliases of its output and the launch reads W1, b1, W2, b2 after the
 * node's inputs.  *done is 0 when there is no gate to run here, or the
 * backend would run the mean alone (nothing kept: plan_node plans it). */
static opsched_status plan_se(opsched_executor *ex, ex_build *b, int i,
                              const opsched_exec_options *base, int *done)
{
    opsched_se_gate se;
    *done = 0;
    const opsched_node *n = opsched_graph_node(b->g, i);
    if (!base->plan.fuse_activation || (base->plan.ablate & OPSCHED_ABLATE_SE) ||
        n->n_inputs > EX_HEAD_MAX_IN || !opsched_se_gate_find(b->g, i, &se))
        return OPSCHED_OK;
    for (int k = 1; k < se.n; k++)
        if (!launches_alone(ex, b, se.nodes[k])) return OPSCHED_OK;
    OS_TRY(plan_gate(ex, b, &se));
    opsched_exec_options o = *base;
    int mul = se.mul >= 0 && !(base->plan.ablate & OPSCHED_ABLATE_SE_MUL) &&
              launches_alone(ex, b, se.mul);
    o.plan.fuse_se = mul ? 2 : 1;
    opsched_layer_info li;
    opsched_plan *plan = NULL;
    opsched_plan_info pi;
    OS_TRY(plan_with_info(ex, b, i, &o, &li, &plan, &pi));
    if (!pi.fused_se) {
        opsched_plan_free(plan);
        return OPSCHED_OK;
    }
    int in[EX_HEAD_MAX_IN + 4];
    memcpy(in, n->inputs, sizeof(int) * (size_t)n->n_inputs);
    memcpy(in + n->n_inputs, se.sides, sizeof(int) * 4);
    if (mul && pi.fused_se == se.n + 1) {
        /* The launch writes the multiply's output: the mean's output and
         * the gate's later nodes become aliases of it (they are read by
         * nothing else), and the multiply runs in the launch. */
        int y = opsched_graph_node(b->g, se.mul)->outputs[0];
        OS_TRY(keep_fused(ex, b, i, plan, &li, in, n->n_inputs + 4, NULL, 0));
        for (int k = 1; k < se.n; k++)
            absorb(ex, b, i, se.nodes[k]);
        /* the Mul's output keeps whatever it is a view of (a concat's slice) */
        ex->nodes[se.mul].role = OPSCHED_ROLE_FUSED;
        snprintf(ex->nodes[se.mul].algo, sizeof(ex->nodes[se.mul].algo), "fused");
        for (int k = 0; k < se.n; k++)
            ex->tensors[opsched_graph_node(b->g, se.nodes[k])->outputs[0]].parent = y;
        b->out_over[i] = y;
        *done = 1;
        return OPSCHED_OK;
    }
    OS_TRY(keep_fused(ex, b, i, plan, &li, in, n->n_inputs + 4, se.nodes + 1, se.n - 1));
    *done = 1;
    return OPSCHED_OK;
}

/* Plans MatMul i with the bias Add after it (opsched_matmul_bias_find),
 * and the activation or residual Add after that where the backend applies
 * it too: they become aliases of its output, and the launch reads the bias
 * as its third input and the residual as its fourth.  *done is 0 when there is nothing to fuse or
 * the backend would run the product alone (nothing kept: plan_node plans it). */
static opsched_status plan_bias(opsched_executor *ex, ex_build *b, int i,
                                const opsched_exec_options *base, int *done)
{
    opsched_matmul_bias mb;
    *done = 0;
    if (!base->plan.fuse_activation || (base->plan.ablate & OPSCHED_ABLATE_BIAS) ||
        !opsched_matmul_bias_find(b->g, i, &mb) || !launches_alone(ex, b, mb.add))
        return OPSCHED_OK;
    int p = opsched_tensor_scheduled_producer(b->g, mb.bias);
    if (p >= 0 && !launches_before(b, p, i)) return OPSCHED_OK;
    opsched_exec_options o = *base;
    o.plan.fuse_bias = 1;
    o.plan.fuse_activation = mb.act >= 0 && launches_alone(ex, b, mb.act);
    o.plan.fuse_residual = 0;
    /* a residual after a Transpose only where that Transpose is a view */
    if (mb.res_add >= 0 && !(base->plan.ablate & OPSCHED_ABLATE_RESIDUAL) &&
        launches_alone(ex, b, mb.res_add) &&
        (mb.tr < 0 || ex->nodes[mb.tr].role == OPSCHED_ROLE_VIEW)) {
        int rp = opsched_tensor_scheduled_producer(b->g, mb.residual);
        o.plan.fuse_residual = rp < 0 || launches_before(b, rp, i);
    }
    opsched_layer_info li;
    opsched_plan *plan = NULL;
    opsched_plan_info pi;
    OS_TRY(plan_with_info(ex, b, i, &o, &li, &plan, &pi));
    if (!pi.fused_bias) {
        opsched_plan_free(plan);
        return OPSCHED_OK;
    }
    const opsched_node *n = opsched_graph_node(b->g, i);
    int in[4] = {n->inputs[0], n->inputs[1], mb.bias, mb.residual}, absorbed[2] = {mb.add, -1};
    int n_abs = 1;
    if (pi.fused_residual && o.plan.fuse_residual)
        absorbed[n_abs++] = mb.res_add;
    else if (pi.fused_activation && o.plan.fuse_activation)
        absorbed[n_abs++] = mb.act;
    OS_TRY(keep_fused(ex, b, i, plan, &li, in, pi.fused_residual ? 4 : 3, absorbed, n_abs));
    *done = 1;
    return OPSCHED_OK;
}

/* Plans convolution i with the Transpose and LayerNormalization after it
 * (opsched_conv_norm_find) where the Transpose is a view of the plan's
 * layouts and the backend runs the norm in the convolution's launch: the
 * launch reads x, w, the bias, the norm's scale and bias, and writes the
 * norm's output, of which the convolution's output (and through it the
 * Transpose's view) becomes an alias.  *done is 0 when there is nothing to
 * fuse or the backend would run the convolution alone (nothing kept). */
static opsched_status plan_norm(opsched_executor *ex, ex_build *b, int i,
                                const opsched_exec_options *base, int *done)
{
    opsched_conv_norm cn;
    *done = 0;
    if (!base->plan.fuse_activation || (base->plan.ablate & OPSCHED_ABLATE_CONV_NORM) ||
        b->place[i].merge_first >= 0 || !opsched_conv_norm_find(b->g, i, &cn) ||
        ex->nodes[cn.tr].role != OPSCHED_ROLE_VIEW || !launches_alone(ex, b, cn.norm))
        return OPSCHED_OK;
    int sides[2] = {cn.scale, cn.bias};
    for (int k = 0; k < 2; k++) {
        int p = sides[k] >= 0 ? opsched_tensor_scheduled_producer(b->g, sides[k]) : -1;
        if (p >= 0 && !launches_before(b, p, i)) return OPSCHED_OK;
    }
    opsched_exec_options o = *base;
    o.plan.fuse_norm = 1;
    o.plan.fuse_residual = 0;
    opsched_layer_info li;
    opsched_plan *plan = NULL;
    opsched_plan_info pi;
    OS_TRY(plan_with_info(ex, b, i, &o, &li, &plan, &pi));
    if (!pi.fused_norm) {
        opsched_plan_free(plan);
        return OPSCHED_OK;
    }
    const opsched_node *n = opsched_graph_node(b->g, i);
    int in[5] = {n->inputs[0], n->inputs[1], n->n_inputs > 2 ? n->inputs[2] : -1, cn.scale,
                 cn.bias};
    int z = opsched_graph_node(b->g, cn.norm)->outputs[0];
    OS_TRY(keep_fused(ex, b, i, plan, &li, in, 5, NULL, 0));
    ex->nodes[cn.norm].role = OPSCHED_ROLE_FUSED;
    snprintf(ex->nodes[cn.norm].algo, sizeof(ex->nodes[cn.norm].algo), "fused");
    ex->tensors[n->outputs[0]].parent = z;
    b->out_over[i] = z;
    *done = 1;
    return OPSCHED_OK;
}

/* 1 when convolution i may apply its input's activation as it reads it
 * (opsched_conv_prologue_find): the activation is its producer's fused
 * epilogue, which that producer's plan runs as a pass of its own. */
static int prologue_ok(const opsched_executor *ex, const ex_build *b, int i,
                       const opsched_exec_options *o, opsched_conv_prologue *cp)
{
    if (!o->plan.fuse_activation || (o->plan.ablate & OPSCHED_ABLATE_PROLOGUE) ||
        b->place[i].merge_first >= 0 || !opsched_conv_prologue_find(b->g, i, cp))
        return 0;
    int pr = cp->producer;
    opsched_plan_info pi;
    if (!b->plans[pr] || b->chain_in[pr] || b->residual[pr] >= 0 || b->place[pr].merge_first >= 0 ||
        ex->nodes[cp->act].role != OPSCHED_ROLE_FUSED ||
        opsched_plan_info_get(b->plans[pr], &pi) != OPSCHED_OK)
        return 0;
    return pi.fused_activation && pi.activation_apart && !pi.fused_residual;
}

/* Plans the producer of convolution i's prologue activation again without
 * the activation, which i's plan applies: the activation stays an alias of
 * the producer's output, which now holds the values before it. */
static opsched_status drop_producer_act(opsched_executor *ex, ex_build *b, int i,
                                        const opsched_conv_prologue *cp)
{
    int pr = cp->producer;
    opsched_exec_options o = node_options(b, b->place[pr].stage);
    o.plan.fuse_activation = 0;
    o.plan.fuse_residual = 0;
    opsched_layer_info li;
    memset(&li, 0, sizeof(li));
    opsched_plan *plan = NULL;
    OS_TRY(os_exec_plan_node(ex->dev, b->g, pr, &o, &li, &plan));
    opsched_layer_info *ni = &ex->nodes[pr];
    ex->info.workspace_bytes -= ni->workspace_bytes;
    ex->info.n_fallbacks -= ni->fallback;
    opsched_plan_free(b->plans[pr]);
    b->plans[pr] = plan;
    note_plan(ex, pr, plan, &li);
    snprintf(ex->nodes[cp->act].algo, sizeof(ex->nodes[cp->act].algo), "fused into %.20s",
             opsched_graph_node(b->g, i)->name);
    return OPSCHED_OK;
}

/* Plans node i; a convolution that fused the Relu after it makes that
 * Relu an alias of its output.  One that fused its residual Add (when the
 * residual's producer launches before it, so the launch can read it, and
 * the Add's other convolution has not taken it) makes the Add and the
 * activation after it aliases too, and reads the residual as its input 3. */
/* Plans batch normalisation i to read the inputs of the Concat it
 * normalises in the Concat's place (opsched_norm_concat; DenseNet's
 * layers), where the backend does: the Concat runs nothing and its output,
 * which no launch reads, takes no memory.  The launch reads the first
 * input as input 0, the norm's parameters as 1-4 and the rest after them.
 * Planned before any Concat (plan_all plans Concats last), so the Concat
 * has no plan yet.  *done is 0 when there is nothing to gather or the
 * backend reads the Concat (nothing kept: plan_node goes on). */
static opsched_status plan_norm_concat(opsched_executor *ex, ex_build *b, int i,
                                       const opsched_exec_options *base, int *done)
{
    *done = 0;
    int c = opsched_norm_concat(b->g, i);
    if (!base->plan.fuse_activation || (base->plan.ablate & OPSCHED_ABLATE_NORM_CONCAT) || c < 0 ||
        b->place[i].merge_first >= 0 || !launches_alone(ex, b, c) || b->plans[c])
        return OPSCHED_OK;
    const opsched_node *n = opsched_graph_node(b->g, i), *cn = opsched_graph_node(b->g, c);
    for (int k = 0; k < cn->n_inputs; k++) {
        int p = opsched_tensor_scheduled_producer(b->g, cn->inputs[k]);
        if (p >= 0 && !launches_before(b, p, i)) return OPSCHED_OK;
    }
    opsched_exec_options o = *base;
    o.plan.norm_concat = 1;
    opsched_layer_info li;
    opsched_plan *plan = NULL;
    opsched_plan_info pi;
    OS_TRY(plan_with_info(ex, b, i, &o, &li, &plan, &pi));
    int act = pi.fused_activation ? os_exec_fused_act(b->g, i) : -1;
    if (pi.fused_norm_concat != cn->n_inputs ||
        (pi.fused_activation && (act < 0 || b->place[act].merge_first >= 0))) {
        opsched_plan_free(plan);
        return OPSCHED_OK;
    }
    int in[4 + OPSCHED_NORM_MAX_CONCAT];
    in[0] = cn->inputs[0];
    for (int k = 1; k < 5; k++)
        in[k] = n->inputs[k];
    for (int k = 1; k < cn->n_inputs; k++)
        in[4 + k] = cn->inputs[k];
    OS_TRY(keep_fused(ex, b, i, plan, &li, in, 4 + cn->n_inputs, &act, act >= 0 ? 1 : 0));
    ex->nodes[c].role = OPSCHED_ROLE_FUSED;
    snprintf(ex->nodes[c].algo, sizeof(ex->nodes[c].algo), "gathered");
    *done = 1;
    return OPSCHED_OK;
}

static opsched_status plan_node(opsched_executor *ex, ex_build *b, int i)
{
    opsched_exec_options o = node_options(b, b->place[i].stage);
    if (opsched_graph_node(b->g, i)->op == OPSCHED_OP_BATCHNORM &&
        ex->nodes[i].role == OPSCHED_ROLE_LAUNCH) {
        int done = 0;
        OS_TRY(plan_norm_concat(ex, b, i, &o, &done));
        if (done) return OPSCHED_OK;
    }
    if (opsched_graph_node(b->g, i)->op != OPSCHED_OP_CONV &&
        ex->nodes[i].role == OPSCHED_ROLE_LAUNCH) {
        int done = 0;
        if (opsched_graph_node(b->g, i)->op == OPSCHED_OP_MATMUL) {
            OS_TRY(plan_bias(ex, b, i, &o, &done));
            if (done) return OPSCHED_OK;
        }
        OS_TRY(plan_se(ex, b, i, &o, &done));
        if (done) return OPSCHED_OK;
        OS_TRY(plan_chain(ex, b, i, &o, &done));
        if (done) return OPSCHED_OK;
    }
    if (opsched_graph_node(b->g, i)->op == OPSCHED_OP_CONV) {
        int done = 0;
        OS_TRY(plan_norm(ex, b, i, &o, &done));
        if (done) return OPSCHED_OK;
    }
    opsched_layer_info li;
    memset(&li, 0, sizeof(li));
    opsched_conv_residual res;
    int has_res = o.plan.fuse_activation && !(o.plan.ablate & OPSCHED_ABLATE_RESIDUAL) &&
                  opsched_conv_residual_find(b->g, i, &res) &&
                  ex->nodes[res.add].role == OPSCHED_ROLE_LAUNCH; /* not the other's already */
    if (has_res) {
        int p = opsched_tensor_scheduled_producer(b->g, res.residual);
        has_res = p < 0 || launches_before(b, p, i);
    }
    o.plan.fuse_residual = has_res;
    opsched_conv_prologue cp;
    o.plan.fuse_prologue =
        opsched_graph_node(b->g, i)->op == OPSCHED_OP_CONV && prologue_ok(ex, b, i, &o, &cp);
    int late_mul = b->gate[i] < 0 ? gate_apart(ex, b, i, &o) : -1;
    o.plan.fuse_gate = b->gate[i] >= 0; /* asked by plan_se, or late_mul's */
    OS_TRY(os_exec_plan_node(ex->dev, b->g, i, &o, &li, &b->plans[i]));
    opsched_plan_info pi;
    OS_TRY(opsched_plan_info_get(b->plans[i], &pi));
    if (pi.fused_residual) {
        b->residual[i] = res.residual;
        absorb(ex, b, i, res.add);
        if (pi.fused_activation && res.act >= 0) absorb(ex, b, i, res.act);
    } else if (pi.fused_activation) {
        int j = os_exec_fused_act(b->g, i);
        if (j < 0 || b->place[j].merge_first >= 0) {
            /* The Relu's input is also wanted unrectified: plan without fusing. */
            opsched_plan_free(b->plans[i]);
            b->plans[i] = NULL;
            o.plan.fuse_activation = 0;
            memset(&li, 0, sizeof(li));
            OS_TRY(os_exec_plan_node(ex->dev, b->g, i, &o, &li, &b->plans[i]));
        } else {
            absorb(ex, b, i, j);
        }
    }
    /* the plan kept (the fallback above plans again): its prologue and gate */
    OS_TRY(opsched_plan_info_get(b->plans[i], &pi));
    if (pi.fused_prologue) OS_TRY(drop_producer_act(ex, b, i, &cp));
    if (!pi.fused_gate) b->gate[i] = -1;
    if (pi.fused_gate && late_mul >= 0) { /* the multiply planned alone runs nothing now */
        opsched_layer_info *mi = &ex->nodes[late_mul];
        ex->info.workspace_bytes -= mi->workspace_bytes;
        ex->info.n_fallbacks -= mi->fallback;
        mi->workspace_bytes = 0;
        mi->fallback = 0;
        opsched_plan_free(b->plans[late_mul]);
        b->plans[late_mul] = NULL;
        fold_mul(ex, b, late_mul, i);
    }
    note_plan(ex, i, b->plans[i], &li);
    return OPSCHED_OK;
}

/* The f32 values, in logical order, that weight t of g holds (its payload
 * or the seeded draw, as os_exec_tensor_values stores it). */
static opsched_status weight_f32(opsched_executor *ex, const opsched_graph *g, int t, uint64_t seed,
                                 float **out)
{
    const opsched_tensor *x = opsched_graph_tensor(g, t);
    size_t n = (size_t)opsched_shape_numel(&x->shape);
    float *v = malloc(sizeof(float) * (n ? n : 1));
    if (!v) return OS_NOMEM(ex->ctx);
    if (x->data && x->data_bytes == n * opsched_dtype_size(x->dtype)) {
        os_exec_convert(x->data, x->dtype, v, OPSCHED_F32, n, NULL, 0);
    } else {
        os_exec_fill f = os_exec_fill_for(g, t);
        os_exec_random_values(&f, x->dtype, n, seed + (uint64_t)t, v);
    }
    *out = v;
    return OPSCHED_OK;
}

/* The merged weights and biases in f32: each member's kernel at its
 * offset inside the merged kernel, rows at its channel offset; zeros
 * elsewhere (and for a member without bias). */
static opsched_status merged_weights(opsched_executor *ex, const opsched_graph *g,
                                     const opsched_merge *m, int64_t C, uint64_t seed, float *w,
                                     float *bias)
{
    int64_t KH = m->kernel[0], KW = m->kernel[1];
    for (int i = 0; i < m->n_members; i++) {
        const opsched_merge_member *mm = &m->members[i];
        const opsched_node *n = opsched_graph_node(g, mm->node);
        const opsched_tensor *wt = opsched_graph_tensor(g, n->inputs[1]);
        int64_t M = wt->shape.d[0], kh = wt->shape.d[2], kw = wt->shape.d[3];
        if (wt->shape.d[1] != C || M != mm->out_channels || mm->kernel_offset[0] + kh > KH ||
            mm->kernel_offset[1] + kw > KW)
            return OS_FAIL(ex->ctx, OPSCHED_ERR_SHAPE,
                           "merge: the weights of '%s' do not fit the merged kernel", n->name);
        float *v = NULL;
        OS_TRY(weight_f32(ex, g, n->inputs[1], seed, &v));
        for (int64_t o = 0; o < M; o++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t y = 0; y < kh; y++)
                    for (int64_t x = 0; x < kw; x++)
                        w[(((mm->channel_offset + o) * C + c) * KH + mm->kernel_offset[0] + y) *
                              KW +
                          mm->kernel_offset[1] + x] = v[((o * C + c) * kh + y) * kw + x];
        free(v);
        if (n->n_inputs > 2 && n->inputs[2] >= 0) {
            OS_TRY(weight_f32(ex, g, n->inputs[2], seed, &v));
            memcpy(bias + mm->channel_offset, v, sizeof(float) * (size_t)M);
            free(v);
        }
    }
    return OPSCHED_OK;
}

/* An executor weight tensor holding what tensor t of graph p stores. */
static opsched_status merge_weight_tensor(opsched_executor *ex, const opsched_graph *p, int t,
                                          uint64_t seed, int *out)
{
    const opsched_tensor *x = opsched_graph_tensor(p, t);
    OS_TRY(add_tensor(ex, OPSCHED_TENSOR_WEIGHT, &x->shape, x->dtype, out));
    ex_tensor *et = &ex->tensors[*out];
    et->host = malloc(et->bytes ? et->bytes : 1);
    if (!et->host) return OS_NOMEM(ex->ctx);
    return os_exec_tensor_values(ex->ctx, p, t, ex->math, ex->layout, seed, et->host);
}

/* The private one-stage graph of merge stage k: the merged convolution
 * (weights as payloads), its Relu, and a Split when the members' outputs
 * are not contiguous slices of its output. */
static opsched_status merge_graph(opsched_executor *ex, ex_build *b, int k, opsched_graph **out,
                                  int *split)
{
    const opsched_merge *m = &b->s->stages[k].merge;
    const opsched_graph *g = b->g;
    const opsched_tensor *x = opsched_graph_tensor(g, m->input);
    const opsched_node *first = opsched_graph_node(g, m->members[0].node);
    const opsched_tensor *y0 = opsched_graph_tensor(g, first->outputs[0]);
    opsched_status st = OPSCHED_OK;
    opsched_graph *p = NULL;
    float *w = NULL, *bias = NULL;
    int64_t C = x->shape.ndim == 4 ? x->shape.d[1] : 0;
    if (C <= 0 || m->out_channels <= 0)
        return OS_FAIL(ex->ctx, OPSCHED_ERR_SHAPE, "stage %d: a merge over a %d-D input", k + 1,
                       x->shape.ndim);
    opsched_shape ws = {4, {m->out_channels, C, m->kernel[0], m->kernel[1]}};
    opsched_shape bs = {1, {m->out_channels}};
    size_t nw = (size_t)opsched_shape_numel(&ws);
    w = calloc(nw ? nw : 1, sizeof(float));
    bias = calloc((size_t)m->out_channels, sizeof(float));
    if (!w || !bias) {
        st = OS_NOMEM(ex->ctx);
        goto done;
    }
    OS_TRY_GOTO(st, merged_weights(ex, g, m, C, b->o->seed, w, bias), done);
    char name[64];
    snprintf(name, sizeof(name), "merge%d", k + 1);
    OS_TRY_GOTO(st, opsched_graph_create(ex->ctx, name, &p), done);
    int ids[3], conv_out = 0, final = 0;
    OS_TRY_GOTO(
        st, opsched_graph_add_tensor(p, "x", OPSCHED_TENSOR_INPUT, x->dtype, &x->shape, &ids[0]),
        done);
    OS_TRY_GOTO(st,
                opsched_graph_add_tensor(p, "w", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &ws, &ids[1]),
                done);
    OS_TRY_GOTO(st,
                opsched_graph_add_tensor(p, "b", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, &bs, &ids[2]),
                done);
    OS_TRY_GOTO(st, opsched_graph_set_data(p, ids[1], w, nw * sizeof(float)), done);
    OS_TRY_GOTO(
        st, opsched_graph_set_data(p, ids[2], bias, (size_t)m->out_channels * sizeof(float)), done);
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.conv.kernel[0] = m->kernel[0];
    a.conv.kernel[1] = m->kernel[1];
    a.conv.stride[0] = m->stride[0];
    a.conv.stride[1] = m->stride[1];
    a.conv.dilation[0] = a.conv.dilation[1] = 1;
    memcpy(a.conv.pads, m->pads, sizeof(a.conv.pads));
    a.conv.groups = 1;
    OS_TRY_GOTO(
        st, opsched_graph_add_node(p, name, OPSCHED_OP_CONV, &a, ids, 3, 1, NULL, &conv_out), done);
    const opsched_tensor *yt = opsched_graph_tensor(p, conv_out);
    if (yt->shape.d[0] != y0->shape.d[0] || yt->shape.d[2] != y0->shape.d[2] ||
        yt->shape.d[3] != y0->shape.d[3]) {
        st = OS_FAIL(ex->ctx, OPSCHED_ERR_SHAPE,
                     "stage %d: the merged convolution's output is not the members' size", k + 1);
        goto done;
    }
    final = conv_out;
    if (m->members[0].relu >= 0) {
        /* The members' activation (the same for all: merges require it). */
        const opsched_node *act = opsched_graph_node(b->g, m->members[0].relu);
        snprintf(name, sizeof(name), "merge%d.act", k + 1);
        OS_TRY_GOTO(
            st, opsched_graph_add_node(p, name, act->op, &act->attr, &conv_out, 1, 1, NULL, &final),
            done);
    }
    ex_tensor probe;
    memset(&probe, 0, sizeof(probe));
    probe.shape = opsched_graph_tensor(p, final)->shape;
    probe.nhwc = ex->layout == OPSCHED_LAYOUT_NHWC;
    int64_t outer = 0, inner = 0;
    axis_split(&probe, 1, &outer, &inner);
    *split = outer != 1;
    if (*split) {
        if (m->n_members > (int)OS_ARRAY_LEN(a.split.sizes)) {
            st = OS_FAIL(ex->ctx, OPSCHED_ERR_UNSUPPORTED,
                         "stage %d: %d merged convolutions cannot be split apart (at most %d)",
                         k + 1, m->n_members, (int)OS_ARRAY_LEN(a.split.sizes));
            goto done;
        }
        memset(&a, 0, sizeof(a));
        a.split.axis = 1;
        a.split.n = m->n_members;
        for (int i = 0; i < m->n_members; i++)
            a.split.sizes[i] = m->members[i].out_channels;
        snprintf(name, sizeof(name), "merge%d.split", k + 1);
        OS_TRY_GOTO(st,
                    opsched_graph_add_node(p, name, OPSCHED_OP_SPLIT, &a, &final, 1, m->n_members,
                                           NULL, NULL),
                    done);
    }
    *out = p;
    p = NULL;
done:
    opsched_graph_free(p);
    free(w);
    free(bias);
    return st;
}

/* The member's output as the rest of the graph reads it: its Relu's
 * output when it carries one, else the convolution's. */
static int member_final(const opsched_graph *g, const opsched_merge_member *mm)
{
    int n = mm->relu >= 0 ? mm->relu : mm->node;
    return opsched_graph_node(g, n)->outputs[0];
}

/* Plans merge stage k: its launches wait in b->merges[k] for the stage;
 * the members' outputs become slices of the merged output, or the
 * Split's outputs. */
static opsched_status plan_merge(opsched_executor *ex, ex_build *b, int k)
{
    const opsched_merge *m = &b->s->stages[k].merge;
    struct merge_launches *ml = &b->merges[k];
    opsched_graph *p = NULL;
    int split = 0;
    opsched_status st = OPSCHED_OK;
    OS_TRY(merge_graph(ex, b, k, &p, &split));
    /* executor tensors for p's: x, w, b, conv out, relu out */
    int map[8] = {m->input, -1, -1, -1, -1, -1, -1, -1};
    OS_TRY_GOTO(st, merge_weight_tensor(ex, p, 1, b->o->seed, &map[1]), done);
    OS_TRY_GOTO(st, merge_weight_tensor(ex, p, 2, b->o->seed, &map[2]), done);
    const opsched_tensor *yt = opsched_graph_tensor(p, 3);
    OS_TRY_GOTO(st, add_tensor(ex, OPSCHED_TENSOR_ACTIVATION, &yt->shape, yt->dtype, &map[3]),
                done);
    int has_relu = m->members[0].relu >= 0, fused = 0, final = map[3];
    opsched_exec_options o = node_options(b, k);
    opsched_layer_info li;
    memset(&li, 0, sizeof(li));
    snprintf(ml->label, sizeof(ml->label), "merge(");
    for (int i = 0; i < m->n_members; i++) {
        const char *nm = opsched_graph_node(b->g, m->members[i].node)->name;
        size_t len = strlen(ml->label);
        snprintf(ml->label + len, sizeof(ml->label) - len, "%s%s", i ? "+" : "", nm);
    }
    size_t len = strlen(ml->label);
    snprintf(ml->label + len, sizeof(ml->label) - len, ")");

    OS_TRY_GOTO(st, os_exec_plan_node(ex->dev, p, 0, &o, &li, &ml->plan[0]), done);
    opsched_plan_info pi;
    OS_TRY_GOTO(st, opsched_plan_info_get(ml->plan[0], &pi), done);
    fused = has_relu && pi.fused_activation;
    for (int i = 0; i < m->n_members; i++) {
        opsched_layer_info *ni = &ex->nodes[m->members[i].node];
        snprintf(ni->algo, sizeof(ni->algo), "%s", pi.algo);
        ni->workspace_bytes = pi.workspace_bytes;
        ni->fallback = li.fallback;
        memcpy(ni->fallback_reason, li.fallback_reason, sizeof(ni->fallback_reason));
        if (m->members[i].relu >= 0)
            snprintf(ex->nodes[m->members[i].relu].algo, sizeof(ni->algo), "%s",
                     fused ? "fused" : "merged");
    }
    ex->info.workspace_bytes += pi.workspace_bytes;
    ex->info.n_fallbacks += li.fallback;
    ml->n = 1;
    ml->n_in[0] = 3;
    ml->n_out[0] = 1;
    ml->in[0] = malloc(sizeof(int) * 3);
    ml->out[0] = malloc(sizeof(int));
    if (!ml->in[0] || !ml->out[0]) {
        st = OS_NOMEM(ex->ctx);
        goto done;
    }
    memcpy(ml->in[0], map, sizeof(int) * 3);
    ml->out[0][0] = map[3];
    if (has_relu && !fused) {
        const opsched_tensor *zt = opsched_graph_tensor(p, 4);
        OS_TRY_GOTO(st, add_tensor(ex, OPSCHED_TENSOR_ACTIVATION, &zt->shape, zt->dtype, &map[4]),
                    done);
        memset(&li, 0, sizeof(li));
        OS_TRY_GOTO(st, os_exec_plan_node(ex->dev, p, 1, &o, &li, &ml->plan[1]), done);
        OS_TRY_GOTO(st, opsched_plan_info_get(ml->plan[1], &pi), done);
        ex->info.workspace_bytes += pi.workspace_bytes;
        ml->in[1] = malloc(sizeof(int));
        ml->out[1] = malloc(sizeof(int));
        if (!ml->in[1] || !ml->out[1]) {
            st = OS_NOMEM(ex->ctx);
            goto done;
        }
        ml->n_in[1] = ml->n_out[1] = 1;
        ml->in[1][0] = map[3];
        ml->out[1][0] = map[4];
        ml->n = 2;
        final = map[4];
    }
    if (split) {
        int node = has_relu ? 2 : 1, j = ml->n;
        memset(&li, 0, sizeof(li));
        OS_TRY_GOTO(st, os_exec_plan_node(ex->dev, p, node, &o, &li, &ml->plan[j]), done);
        OS_TRY_GOTO(st, opsched_plan_info_get(ml->plan[j], &pi), done);
        ex->info.workspace_bytes += pi.workspace_bytes;
        ml->in[j] = malloc(sizeof(int));
        ml->out[j] = malloc(sizeof(int) * (size_t)m->n_members);
        if (!ml->in[j] || !ml->out[j]) {
            st = OS_NOMEM(ex->ctx);
            goto done;
        }
        ml->n_in[j] = 1;
        ml->n_out[j] = m->n_members;
        ml->in[j][0] = final;
        for (int i = 0; i < m->n_members; i++)
            ml->out[j][i] = member_final(b->g, &m->members[i]);
        ml->n++;
        ex->info.n_merge_splits++;
    } else {
        /* Members' outputs are channel slices: contiguous (checked above). */
        const ex_tensor *ft = &ex->tensors[final];
        int64_t outer = 0, inner = 0;
        axis_split(ft, 1, &outer, &inner);
        size_t esz = opsched_dtype_size(ft->sdt);
        for (int i = 0; i < m->n_members; i++) {
            const opsched_merge_member *mm = &m->members[i];
            size_t off = (size_t)(mm->channel_offset * inner) * esz;
            int c = opsched_graph_node(b->g, mm->node)->outputs[0];
            ex->tensors[c].parent = map[3];
            ex->tensors[c].rel = off;
            if (mm->relu >= 0) {
                int r = opsched_graph_node(b->g, mm->relu)->outputs[0];
                ex->tensors[r].parent = final;
                ex->tensors[r].rel = off;
            }
        }
    }
    ex->info.n_merges++;
done:
    opsched_graph_free(p);
    return st;
}

/* Concat elision: the parts of Concat node c become slices of its output
 * when slices along the axis are contiguous there and each part's memory
 * can move: an activation root of its own, or consecutive parts that
 * together fill one root exactly, in order (the members of a merged
 * convolution whose output is a run of the concat's parts). */
static void elide_concat(opsched_executor *ex, const ex_build *b, int c)
{
    const opsched_node *n = opsched_graph_node(b->g, c);
    if (n->n_outputs != 1 || n->n_inputs < 1 || n->n_inputs > 1024) return;
    const ex_tensor *y = &ex->tensors[n->outputs[0]];
    int axis = (int)n->attr.axis.axis;
    if (axis < 0) axis += y->shape.ndim;
    if (axis < 0 || axis >= y->shape.ndim) return;
    int64_t outer = 0, inner = 0;
    axis_split(y, axis, &outer, &inner);
    if (outer != 1) return;
    int roots[1024];
    size_t offs[1024];
    int self = os_ex_root(ex, n->outputs[0], NULL);
    for (int i = 0; i < n->n_inputs; i++) {
        int t = n->inputs[i];
        if (t < 0) return;
        roots[i] = os_ex_root(ex, t, &offs[i]);
        const ex_tensor *r = &ex->tensors[roots[i]];
        if (r->kind != OPSCHED_TENSOR_ACTIVATION || roots[i] == self) return;
        if (roots[i] < ex->n_graph_tensors && opsched_graph_tensor(b->g, roots[i])->producer < 0)
            return;
    }
    for (int i = 0, j = 0; i < n->n_inputs; i = j) {
        size_t expect = 0;
        for (j = i; j < n->n_inputs && roots[j] == roots[i]; j++) {
            if (offs[j] != expect) return;
            expect += ex->tensors[n->inputs[j]].bytes;
        }
        if (expect != ex->tensors[roots[i]].bytes) return;
        for (int k = j; k < n->n_inputs; k++)
            if (roots[k] == roots[i]) return;
    }
    size_t esz = opsched_dtype_size(y->sdt), off = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        if (i == 0 || roots[i] != roots[i - 1]) {
            ex->tensors[roots[i]].parent = n->outputs[0];
            ex->tensors[roots[i]].rel = off;
        }
        off += (size_t)(ex->tensors[n->inputs[i]].shape.d[axis] * inner) * esz;
    }
    ex->nodes[c].role = OPSCHED_ROLE_CONCAT_ELIDED;
    snprintf(ex->nodes[c].algo, sizeof(ex->nodes[c].algo), "in place");
    ex->info.n_concats_elided++;
}

/* Plans HEAD e of a movement run as one gather of the run's source; 1 in
 * *done when the backend took it (the run's INSIDE nodes then run
 * nothing), 0 when it plans the node alone (nothing kept). */
static opsched_status plan_move(opsched_executor *ex, ex_build *b, int e, int *done)
{
    int path[OPSCHED_MOVE_MAX_RUN];
    int len = opsched_move_run(b->g, b->move_role, e, path);
    *done = 0;
    if (len < 2) return OPSCHED_OK;
    opsched_exec_options o = node_options(b, b->place[e].stage);
    o.plan.move_path = path;
    o.plan.n_move_path = len;
    opsched_layer_info li;
    opsched_plan *plan = NULL;
    opsched_plan_info pi;
    OS_TRY(plan_with_info(ex, b, e, &o, &li, &plan, &pi));
    if (pi.fused_movement != len) {
        opsched_plan_free(plan);
        return OPSCHED_OK;
    }
    int src = opsched_graph_node(b->g, path[0])->inputs[0];
    int *cp = malloc(sizeof(int));
    if (!cp) {
        opsched_plan_free(plan);
        return OS_NOMEM(ex->ctx);
    }
    cp[0] = src;
    b->chain_in[e] = cp;
    b->chain_n[e] = 1;
    b->plans[e] = plan;
    note_plan(ex, e, plan, &li);
    *done = 1;
    return OPSCHED_OK;
}

/* A Concat whose output only taken runs read (every reader an INSIDE node
 * of runs that were all taken: `covered`) need not be written: each run that gathers from it
 * is planned again to gather from the Concat's inputs
 * (opsched_move_concat; ShuffleNet's concatenation, shuffle and split as
 * two gathers instead of three copies).  Where a backend turns one of
 * them down, all keep their plans and the Concat runs. */
static opsched_status plan_move_concats(opsched_executor *ex, ex_build *b,
                                        const unsigned char *covered)
{
    int n = ex->n_nodes;
    for (int c = 0; c < n; c++) {
        const opsched_node *cn = opsched_graph_node(b->g, c);
        if (cn->op != OPSCHED_OP_CONCAT || ex->nodes[c].role != OPSCHED_ROLE_LAUNCH ||
            b->place[c].merge_first >= 0 || cn->n_inputs > OPSCHED_MOVE_MAX_CONCAT)
            continue;
        int t = cn->outputs[0], ok = opsched_move_concat_unread(b->g, b->move_role, c);
        for (int j = c + 1; j < n && ok; j++) { /* and every run through its readers taken */
            const opsched_node *r = opsched_graph_node(b->g, j);
            if (r->n_inputs > 0 && r->inputs[0] == t) ok = covered[j];
        }
        if (!ok) continue;
        int heads[OPSCHED_MOVE_MAX_CONCAT * 8], nh = 0;
        for (int e = 0; e < n && ok; e++) {
            if (b->move_role[e] != OPSCHED_MOVE_HEAD || !b->plans[e] || !b->chain_in[e] ||
                b->chain_in[e][0] != t)
                continue;
            if (nh == (int)OS_ARRAY_LEN(heads))
                ok = 0;
            else
                heads[nh++] = e;
        }
        if (!ok || nh == 0) continue;
        opsched_plan *plans[OS_ARRAY_LEN(heads)];
        opsched_layer_info lis[OS_ARRAY_LEN(heads)];
        int planned = 0;
        opsched_status st = OPSCHED_OK;
        for (int k = 0; k < nh && ok; k++) {
            int e = heads[k], path[OPSCHED_MOVE_MAX_RUN];
            int len = opsched_move_run(b->g, b->move_role, e, path);
            opsched_exec_options o = node_options(b, b->place[e].stage);
            o.plan.move_path = path;
            o.plan.n_move_path = len;
            o.plan.move_concat = 1;
            opsched_plan_info pi;
            st = plan_with_info(ex, b, e, &o, &lis[k], &plans[k], &pi);
            if (st != OPSCHED_OK) break;
            planned++;
            ok = pi.fused_movement == len && pi.fused_concat == cn->n_inputs;
        }
        if (st != OPSCHED_OK || !ok) {
            for (int k = 0; k < planned; k++)
                opsched_plan_free(plans[k]);
            OS_TRY(st);
            continue;
        }
        for (int k = 0; k < nh; k++) {
            int e = heads[k];
            int *in = malloc(sizeof(int) * (size_t)cn->n_inputs);
            if (!in) {
                for (int j = k; j < nh; j++)
                    opsched_plan_free(plans[j]);
                return OS_NOMEM(ex->ctx);
            }
            memcpy(in, cn->inputs, sizeof(int) * (size_t)cn->n_inputs);
            free(b->chain_in[e]);
            b->chain_in[e] = in;
            b->chain_n[e] = cn->n_inputs;
            opsched_layer_info *ni = &ex->nodes[e];
            ex->info.workspace_bytes -= ni->workspace_bytes;
            ex->info.n_fallbacks -= ni->fallback;
            opsched_plan_free(b->plans[e]);
            b->plans[e] = plans[k];
            note_plan(ex, e, plans[k], &lis[k]);
        }
        ex->nodes[c].role = OPSCHED_ROLE_FUSED;
        snprintf(ex->nodes[c].algo, sizeof(ex->nodes[c].algo), "gathered");
    }
    return OPSCHED_OK;
}

/* Runs of movement nodes (opsched_move_runs) as one strided gather each:
 * every HEAD is planned first, reading its run's source; the INSIDE nodes
 * of the runs the backend took run nothing, and their outputs, which no
 * launch reads, take no memory.  A run the backend turns down is planned
 * node by node as before. */
static opsched_status plan_moves(opsched_executor *ex, ex_build *b)
{
    int n = ex->n_nodes;
    unsigned char *alias = calloc((size_t)n + 1, 1);
    b->move_role = calloc((size_t)n + 1, sizeof(int));
    int *taken = calloc((size_t)n + 1, sizeof(int));
    unsigned char *covered = calloc((size_t)n + 1, 1);
    opsched_status st = OPSCHED_OK;
    if (!alias || !b->move_role || !taken || !covered) {
        st = OS_NOMEM(ex->ctx);
        goto done;
    }
    for (int i = 0; i < n; i++)
        alias[i] =
            ex->nodes[i].role == OPSCHED_ROLE_VIEW || (ex->nodes[i].role != OPSCHED_ROLE_LAUNCH &&
                                                       ex->nodes[i].role != OPSCHED_ROLE_VIEW_COPY);
    if (opsched_move_runs(b->g, alias, b->move_role) == 0) goto done;
    for (int e = 0; e < n; e++) {
        if (b->move_role[e] != OPSCHED_MOVE_HEAD) continue;
        int ok = 0;
        OS_TRY_GOTO(st, plan_move(ex, b, e, &ok), done);
        if (!ok) continue;
        int path[OPSCHED_MOVE_MAX_RUN];
        int len = opsched_move_run(b->g, b->move_role, e, path);
        for (int k = 0; k < len - 1; k++)
            taken[path[k]] = 1;
    }
    for (int i = 0; i < n; i++) {
        if (b->move_role[i] != OPSCHED_MOVE_INSIDE || !taken[i]) continue;
        /* a run turned down keeps its nodes: another may share them */
        int all = 1;
        for (int c = 0; c < n && all; c++) {
            if (b->move_role[c] != OPSCHED_MOVE_HEAD || b->plans[c]) continue;
            int path[OPSCHED_MOVE_MAX_RUN];
            int len = opsched_move_run(b->g, b->move_role, c, path);
            for (int k = 0; k < len - 1; k++)
                all &= path[k] != i;
        }
        covered[i] = (unsigned char)all;
        if (!all || ex->nodes[i].role == OPSCHED_ROLE_VIEW) continue;
        ex->nodes[i].role = OPSCHED_ROLE_FUSED;
        snprintf(ex->nodes[i].algo, sizeof(ex->nodes[i].algo), "gathered");
    }
    if (!(b->o->plan.ablate & OPSCHED_ABLATE_CONCAT_GATHER))
        OS_TRY_GOTO(st, plan_move_concats(ex, b, covered), done);
done:
    free(alias);
    free(taken);
    free(covered);
    return st;
}

/* Roles and plans of every node. */
static opsched_status plan_all(opsched_executor *ex, ex_build *b)
{
    const opsched_graph *g = b->g;
    for (int i = 0; i < ex->n_nodes; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        if (!opsched_op_is_view(n->op) &&
            !(n->op == OPSCHED_OP_TRANSPOSE && opsched_layout_transpose_view(g, i, ex->rowmajor)))
            continue;
        if (os_exec_view_aliases(g, i, ex->math, ex->layout, ex->rowmajor)) {
            ex->nodes[i].role = OPSCHED_ROLE_VIEW;
            snprintf(ex->nodes[i].algo, sizeof(ex->nodes[i].algo), "view");
            ex->tensors[n->outputs[0]].parent = n->inputs[0];
        } else {
            ex->nodes[i].role = OPSCHED_ROLE_VIEW_COPY;
        }
    }
    if (b->o->plan.fuse_activation && !(b->o->plan.ablate & OPSCHED_ABLATE_MOVEMENT))
        OS_TRY(plan_moves(ex, b));
    for (int k = 0; k < b->s->n_stages; k++) {
        const opsched_stage *sg = &b->s->stages[k];
        if (sg->kind != OPSCHED_STAGE_MERGE) continue;
        for (int i = 0; i < sg->merge.n_members; i++) {
            ex->nodes[sg->merge.members[i].node].role = OPSCHED_ROLE_MERGED;
            if (sg->merge.members[i].relu >= 0)
                ex->nodes[sg->merge.members[i].relu].role = OPSCHED_ROLE_MERGED;
        }
        OS_TRY(plan_merge(ex, b, k));
    }
    for (int i = 0; i < ex->n_nodes; i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        if (ex->nodes[i].role != OPSCHED_ROLE_LAUNCH && ex->nodes[i].role != OPSCHED_ROLE_VIEW_COPY)
            continue;
        if (b->plans[i]) continue; /* a movement run's gather (plan_moves) */
        if (n->op == OPSCHED_OP_CONCAT && !b->o->no_concat_elision) continue;
        OS_TRY(plan_node(ex, b, i));
    }
    if (!b->o->no_concat_elision) {
        for (int i = ex->n_nodes - 1; i >= 0; i--)
            if (opsched_graph_node(g, i)->op == OPSCHED_OP_CONCAT &&
                ex->nodes[i].role == OPSCHED_ROLE_LAUNCH)
                elide_concat(ex, b, i);
        for (int i = 0; i < ex->n_nodes; i++)
            if (opsched_graph_node(g, i)->op == OPSCHED_OP_CONCAT &&
                ex->nodes[i].role == OPSCHED_ROLE_LAUNCH)
                OS_TRY(plan_node(ex, b, i));
    }
    return OPSCHED_OK;
}

/* ---- the schedule --------------------------------------------------------- */

static opsched_status place_nodes(opsched_executor *ex, ex_build *b)
{
    const opsched_schedule *s = b->s;
    for (int i = 0; i < ex->n_nodes; i++) {
        b->place[i].stage = b->place[i].group = -1;
        b->place[i].merge_first = -1;
        b->place[i].pos = 0;
    }
    for (int k = 0; k < s->n_stages; k++) {
        const opsched_stage *sg = &s->stages[k];
        if (sg->kind == OPSCHED_STAGE_MERGE) {
            for (int i = 0; i < sg->merge.n_members; i++) {
                const opsched_merge_member *mm = &sg->merge.members[i];
                b->place[mm->node] = (ex_place){k, 0, sg->merge.members[0].node, 0};
                if (mm->relu >= 0)
                    b->place[mm->relu] = (ex_place){k, 0, sg->merge.members[0].node, 0};
            }
            continue;
        }
        for (int j = 0; j < sg->n_groups; j++)
            for (int p = 0; p < sg->groups[j].n_nodes; p++)
                b->place[sg->groups[j].nodes[p]] = (ex_place){k, j, -1, p};
    }
    for (int i = 0; i < ex->n_nodes; i++)
        ex->nodes[i].stage = b->place[i].stage;
    return OPSCHED_OK;
}

/* Copying views run after the node they view (through views), or first. */
static void list_followers(opsched_executor *ex, ex_build *b)
{
    for (int i = 0; i <= ex->n_nodes; i++)
        b->follow_head[i] = -1;
    int *next = b->follow_next; /* lists built back to front keep node order */
    for (int i = ex->n_nodes - 1; i >= 0; i--) {
        next[i] = -1;
        if (ex->nodes[i].role != OPSCHED_ROLE_VIEW_COPY) continue;
        const opsched_node *n = opsched_graph_node(b->g, i);
        int p = opsched_tensor_scheduled_producer(b->g, n->inputs[0]);
        int slot = p < 0 ? ex->n_nodes : p;
        next[i] = b->follow_head[slot];
        b->follow_head[slot] = i;
        ex->nodes[i].stage = p < 0 ? 0 : b->place[p].stage;
    }
}

static opsched_status launch_node(opsched_executor *ex, ex_build *b, int i, int stage, int stream)
{
    const opsched_node *n = opsched_graph_node(b->g, i);
    ex->nodes[i].stream = stream;
    if (b->plans[i] && (b->residual[i] >= 0 || b->gate[i] >= 0)) {
        /* x, w, the bias or none, r or none, (none, the gate) */
        int in[6] = {n->inputs[0],   n->inputs[1], n->n_inputs > 2 ? n->inputs[2] : -1,
                     b->residual[i], -1,           b->gate[i]};
        OS_TRY(add_launch(ex, b->plans[i], i, stage, stream, n->name, in, b->gate[i] >= 0 ? 6 : 4,
                          n->outputs, n->n_outputs));
        b->plans[i] = NULL;
    } else if (b->plans[i] && b->chain_in[i]) { /* the head's inputs, then the sides */
        int over = b->out_over[i] >= 0;
        OS_TRY(add_launch(ex, b->plans[i], i, stage, stream, n->name, b->chain_in[i], b->chain_n[i],
                          over ? &b->out_over[i] : n->outputs, over ? 1 : n->n_outputs));
        b->plans[i] = NULL;
    } else if (b->plans[i]) {
        OS_TRY(add_launch(ex, b->plans[i], i, stage, stream, n->name, n->inputs, n->n_inputs,
                          n->outputs, n->n_outputs));
        b->plans[i] = NULL; /* the launch owns it */
    }
    for (int v = b->follow_head[i]; v >= 0; v = b->follow_next[v])
        OS_TRY(launch_node(ex, b, v, stage, stream));
    return OPSCHED_OK;
}

/* The stream of the node that produced what node i reads first. */
static int preferred_stream(const opsched_executor *ex, const ex_build *b, int i)
{
    const opsched_node *n = opsched_graph_node(b->g, i);
    for (int k = 0; k < n->n_inputs; k++) {
        if (n->inputs[k] < 0) continue;
        int p = opsched_tensor_scheduled_producer(b->g, n->inputs[k]);
        if (p < 0) continue;
        if (ex->nodes[p].stream >= 0) return ex->nodes[p].stream;
        if (b->place[p].merge_first >= 0) return ex->nodes[b->place[p].merge_first].stream;
    }
    return -1;
}

static opsched_status launch_merge(opsched_executor *ex, ex_build *b, int k, int stream)
{
    const opsched_merge *m = &b->s->stages[k].merge;
    struct merge_launches *ml = &b->merges[k];
    int first = m->members[0].node;
    for (int j = 0; j < ml->n; j++) {
        OS_TRY(add_launch(ex, ml->plan[j], first, k, stream, ml->label, ml->in[j], ml->n_in[j],
                          ml->out[j], ml->n_out[j]));
        ml->plan[j] = NULL;
    }
    for (int i = 0; i < m->n_members; i++) {
        ex->nodes[m->members[i].node].stream = stream;
        if (m->members[i].relu >= 0) ex->nodes[m->members[i].relu].stream = stream;
    }
    for (int i = 0; i < m->n_members; i++) {
        for (int v = b->follow_head[m->members[i].node]; v >= 0; v = b->follow_next[v])
            OS_TRY(launch_node(ex, b, v, k, stream));
        if (m->members[i].relu >= 0)
            for (int v = b->follow_head[m->members[i].relu]; v >= 0; v = b->follow_next[v])
                OS_TRY(launch_node(ex, b, v, k, stream));
    }
    return OPSCHED_OK;
}

static opsched_status launch_all(opsched_executor *ex, ex_build *b)
{
    const opsched_schedule *s = b->s;
    int width = 1;
    for (int k = 0; k < s->n_stages; k++)
        if (s->stages[k].kind == OPSCHED_STAGE_CONCURRENT && s->stages[k].n_groups > width)
            width = s->stages[k].n_groups;
    ex->n_streams = width;
    int *stream_of = malloc(sizeof(int) * (size_t)width);
    unsigned char *taken = malloc((size_t)width);
    if (!stream_of || !taken) {
        free(stream_of);
        free(taken);
        return OS_NOMEM(ex->ctx);
    }
    opsched_status st = OPSCHED_OK;
    for (int v = b->follow_head[ex->n_nodes]; v >= 0; v = b->follow_next[v])
        OS_TRY_GOTO(st, launch_node(ex, b, v, 0, 0), done);
    for (int k = 0; k < s->n_stages; k++) {
        const opsched_stage *sg = &s->stages[k];
        if (sg->kind == OPSCHED_STAGE_MERGE) {
            int pref = preferred_stream(ex, b, sg->merge.members[0].node);
            OS_TRY_GOTO(st, launch_merge(ex, b, k, pref >= 0 ? pref : 0), done);
            continue;
        }
        memset(taken, 0, (size_t)width);
        for (int j = 0; j < sg->n_groups; j++) {
            int pref = preferred_stream(ex, b, sg->groups[j].nodes[0]);
            stream_of[j] = pref >= 0 && !taken[pref] ? pref : -1;
            if (stream_of[j] >= 0) taken[stream_of[j]] = 1;
        }
        for (int j = 0, free_s = 0; j < sg->n_groups; j++) {
            if (stream_of[j] >= 0) continue;
            while (taken[free_s])
                free_s++;
            stream_of[j] = free_s;
            taken[free_s] = 1;
        }
        int longest = 0;
        for (int j = 0; j < sg->n_groups; j++)
            longest = OS_MAX(longest, sg->groups[j].n_nodes);
        for (int p = 0; p < longest; p++)
            for (int j = 0; j < sg->n_groups; j++)
                if (p < sg->groups[j].n_nodes)
                    OS_TRY_GOTO(st, launch_node(ex, b, sg->groups[j].nodes[p], k, stream_of[j]),
                                done);
    }
done:
    free(stream_of);
    free(taken);
    return st;
}

/* ---- memory --------------------------------------------------------------- */

static int in_weights(const ex_tensor *t)
{
    return t->kind == OPSCHED_TENSOR_WEIGHT || t->kind == OPSCHED_TENSOR_CONSTANT;
}

/* Packs the weights that launches read into one buffer. */
/* Timing only: a float weight the graph gives no values is drawn on the
 * device (constants, integer tensors and merged weights keep the host's
 * values: indices and shapes must stay meaningful). */
static int device_drawn(const opsched_executor *ex, const opsched_graph *g, int t)
{
    const ex_tensor *et = &ex->tensors[t];
    if (!ex->timing_only || et->host || t >= ex->n_graph_tensors) return 0;
    const opsched_tensor *gt = opsched_graph_tensor(g, t);
    return gt && gt->kind == OPSCHED_TENSOR_WEIGHT && !gt->data &&
           (et->sdt == OPSCHED_F32 || et->sdt == OPSCHED_F16 || et->sdt == OPSCHED_BF16);
}

/* A tensor something reads keeps every tensor it is a view of alive too: a
 * weight reached only through a Reshape still needs its memory. */
static void mark_roots_used(opsched_executor *ex)
{
    for (int t = 0; t < ex->n_tensors; t++) {
        if (!ex->tensors[t].used) continue;
        for (int u = t, hops = 0; hops <= ex->n_tensors && ex->tensors[u].parent != u; hops++) {
            u = ex->tensors[u].parent;
            ex->tensors[u].used = 1;
        }
    }
}

static opsched_status load_weights(opsched_executor *ex, const opsched_graph *g, uint64_t seed)
{
    mark_roots_used(ex);
    opsched_status st = OPSCHED_OK;
    size_t total = 0, host_total = 0;
    for (int t = 0; t < ex->n_tensors; t++) {
        const ex_tensor *et = &ex->tensors[t];
        if (!in_weights(et) || !et->used || et->parent != t) continue;
        total += align_up(et->bytes ? et->bytes : 1);
        if (!device_drawn(ex, g, t)) host_total = total; /* the upload ends here */
    }
    ex->info.weight_bytes = total;
    OS_TRY(opsched_buffer_alloc(ex->dev, total, &ex->weights));
    /* Host values for what is not drawn on the device, uploaded in one go
     * up to the last such tensor (nothing at all when timing only and every
     * weight is drawn on the device: a stage of large convolutions then
     * costs no host memory and no copy). */
    unsigned char *host = host_total ? calloc(host_total, 1) : NULL;
    if (host_total && !host) return OS_NOMEM(ex->ctx);
    /* Every weight drawn on the device and of one storage type: one fill
     * of the whole buffer (one launch and two syncs, not two per tensor). */
    int one_fill = !host_total && total > 0;
    opsched_dtype fill_dt = OPSCHED_F32;
    for (int t = 0, first = 1; one_fill && t < ex->n_tensors; t++) {
        const ex_tensor *et = &ex->tensors[t];
        if (!in_weights(et) || !et->used || et->parent != t) continue;
        if (first)
            fill_dt = et->sdt;
        else if (et->sdt != fill_dt)
            one_fill = 0;
        first = 0;
    }
    if (one_fill) OS_TRY_GOTO(st, opsched_buffer_fill_random(ex->weights, fill_dt, seed), done);
    size_t off = 0;
    for (int t = 0; t < ex->n_tensors; t++) {
        ex_tensor *et = &ex->tensors[t];
        if (!in_weights(et) || !et->used || et->parent != t) continue;
        OS_TRY_GOTO(st, opsched_buffer_view(ex->weights, off, et->bytes, &et->buf), done);
        if (device_drawn(ex, g, t)) {
            if (!one_fill)
                OS_TRY_GOTO(st, opsched_buffer_fill_random(et->buf, et->sdt, seed + (uint64_t)t),
                            done);
        } else if (et->host)
            memcpy(host + off, et->host, et->bytes);
        else
            OS_TRY_GOTO(st,
                        os_exec_tensor_values(ex->ctx, g, t, ex->math,
                                              ex->rowmajor && ex->rowmajor[t] ? OPSCHED_LAYOUT_NCHW
                                                                              : ex->layout,
                                              seed, host + off),
                        done);
        off += align_up(et->bytes ? et->bytes : 1);
    }
    if (host_total) OS_TRY_GOTO(st, opsched_buffer_upload(ex->weights, 0, host, host_total), done);
done:
    free(host);
    return st;
}

/* Lifetimes in steps (stages on several streams, launches on one),
 * placement, and a buffer for every tensor used. */
static opsched_status lay_out(opsched_executor *ex)
{
    int by_launch = ex->n_streams < 2;
    opsched_status st = OPSCHED_OK;
    int nt = ex->n_tensors;
    int *first = malloc(sizeof(int) * (size_t)(nt + 1)),
        *last = malloc(sizeof(int) * (size_t)(nt + 1));
    os_memblock *blocks = malloc(sizeof(os_memblock) * (size_t)(nt + 1));
    if (!first || !last || !blocks) {
        st = OS_NOMEM(ex->ctx);
        goto done;
    }
    for (int t = 0; t < nt; t++) {
        first[t] = INT32_MAX;
        last[t] = -1;
    }
    for (int u = 0; u < ex->n_launches; u++) {
        const ex_launch *l = &ex->launches[u];
        for (int i = 0; i < l->n_in + l->n_out; i++) {
            int t = i < l->n_in ? l->in[i] : l->out[i - l->n_in];
            if (t < 0) continue;
            int r = os_ex_root(ex, t, NULL), step = by_launch ? u : l->stage;
            first[r] = OS_MIN(first[r], step);
            last[r] = OS_MAX(last[r], step);
        }
    }
    for (int i = 0; i < ex->n_outputs; i++) {
        int r = os_ex_root(ex, ex->outputs[i], NULL);
        last[r] = by_launch ? ex->n_launches : ex->n_stages;
        if (first[r] == INT32_MAX) first[r] = 0;
    }
    /* graph inputs: their own region, alive throughout */
    size_t off = 0;
    for (int i = 0; i < ex->n_inputs; i++) {
        ex_tensor *t = &ex->tensors[ex->inputs[i]];
        t->arena_off = off;
        off += align_up(t->bytes ? t->bytes : 1);
    }
    size_t input_bytes = off, peak = 0;
    int nb = 0;
    for (int t = 0; t < nt; t++) {
        const ex_tensor *et = &ex->tensors[t];
        if (et->parent != t || in_weights(et) || et->kind == OPSCHED_TENSOR_INPUT || last[t] < 0)
            continue;
        blocks[nb].id = t;
        blocks[nb].first = first[t];
        blocks[nb].last = last[t];
        blocks[nb].size = align_up(et->bytes ? et->bytes : 1);
        blocks[nb].offset = 0;
        nb++;
    }
    OS_TRY_GOTO(st, os_memplan_place(ex->ctx, blocks, nb, &peak), done);
    for (int i = 0; i < nb; i++)
        ex->tensors[blocks[i].id].arena_off = input_bytes + blocks[i].offset;
    ex->info.arena_bytes = input_bytes + peak;
    OS_TRY_GOTO(st, opsched_buffer_alloc(ex->dev, ex->info.arena_bytes, &ex->arena), done);
    for (int t = 0; t < nt; t++) {
        ex_tensor *et = &ex->tensors[t];
        if (!et->used || et->buf) continue;
        size_t rel = 0;
        int r = os_ex_root(ex, t, &rel);
        const ex_tensor *rt = &ex->tensors[r];
        if (in_weights(rt)) {
            if (!rt->buf) continue;
            OS_TRY_GOTO(st, opsched_buffer_view(rt->buf, rel, et->bytes, &et->buf), done);
        } else if (rt->arena_off != EX_NONE) {
            OS_TRY_GOTO(
                st, opsched_buffer_view(ex->arena, rt->arena_off + rel, et->bytes, &et->buf), done);
        }
    }
    for (int u = 0; u < ex->n_launches; u++) {
        ex_launch *l = &ex->launches[u];
        for (int i = 0; i < l->n_in; i++)
            l->bin[i] = l->in[i] >= 0 ? ex->tensors[l->in[i]].buf : NULL;
        for (int i = 0; i < l->n_out; i++) {
            l->bout[i] = ex->tensors[l->out[i]].buf;
            if (!l->bout[i]) {
                st = OS_FAIL(ex->ctx, OPSCHED_ERR_INVALID_ARG,
                             "executor: '%s' writes a tensor without memory", l->label);
                goto done;
            }
        }
    }
done:
    free(first);
    free(last);
    free(blocks);
    return st;
}

/* ---- create and free ------------------------------------------------------ */

static void build_release(ex_build *b, int n_nodes)
{
    for (int i = 0; b->plans && i < n_nodes; i++)
        opsched_plan_free(b->plans[i]);
    for (int k = 0; b->merges && k < b->s->n_stages; k++) {
        for (int j = 0; j < 3; j++) {
            opsched_plan_free(b->merges[k].plan[j]);
            free(b->merges[k].in[j]);
            free(b->merges[k].out[j]);
        }
    }
    for (int i = 0; b->chain_in && i < n_nodes; i++)
        free(b->chain_in[i]);
    free(b->chain_in);
    free(b->chain_n);
    free(b->move_role);
    free(b->plans);
    free(b->residual);
    free(b->gate);
    free(b->out_over);
    free(b->merges);
    free(b->place);
    free(b->follow_head);
    free(b->follow_next);
}

void opsched_executor_free(opsched_executor *ex)
{
    if (!ex) return;
    os_device_graph_free(ex->dev, ex->graph);
    opsched_timer_free(ex->ref_timer);
    opsched_timer_free(ex->end_timer);
    for (int u = 0; ex->launches && u < ex->n_launches; u++) {
        ex_launch *l = &ex->launches[u];
        opsched_plan_free(l->plan);
        opsched_timer_free(l->timer);
        free(l->in);
        free(l->out);
        free(l->bin);
        free(l->bout);
        free(l->waits);
    }
    for (int t = 0; ex->tensors && t < ex->n_tensors; t++) {
        opsched_buffer_free(ex->tensors[t].buf);
        free(ex->tensors[t].host);
    }
    for (int e = 0; ex->events && e < ex->n_events; e++)
        opsched_event_free(ex->events[e]);
    for (int k = 1; ex->streams && k < ex->n_streams; k++)
        opsched_stream_free(ex->streams[k]);
    opsched_buffer_free(ex->arena);
    opsched_buffer_free(ex->weights);
    free(ex->launches);
    free(ex->rowmajor);
    free(ex->tensors);
    free(ex->nodes);
    free(ex->inputs);
    free(ex->outputs);
    free(ex->events);
    free(ex->streams);
    free(ex);
}

static opsched_status make_streams(opsched_executor *ex)
{
    ex->streams = calloc((size_t)ex->n_streams, sizeof(*ex->streams));
    if (!ex->streams) return OS_NOMEM(ex->ctx);
    ex->streams[0] = opsched_device_stream(ex->dev);
    for (int k = 1; k < ex->n_streams; k++)
        OS_TRY(opsched_stream_create(ex->dev, &ex->streams[k]));
    return OPSCHED_OK;
}

/* The options with their defaults, checked. */
static opsched_status check_options(opsched_ctx *ctx, const opsched_exec_options *opts,
                                    opsched_exec_options *o)
{
    memset(o, 0, sizeof(*o));
    if (opts) *o = *opts;
    if (!o->seed) o->seed = 1;
    if (o->algo_fallback && strcmp(o->algo_fallback, "heuristic") != 0)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "executor: algorithm fallback '%s' (valid: none, heuristic)",
                       o->algo_fallback);
    if ((int)o->plan.math < 0 || o->plan.math >= OPSCHED_MATH_COUNT)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "executor: bad math mode %d",
                       (int)o->plan.math);
    return OPSCHED_OK;
}

static opsched_status build(opsched_executor *ex, const opsched_graph *g, const opsched_schedule *s,
                            const opsched_exec_options *o)
{
    opsched_status st = OPSCHED_OK;
    ex_build b;
    memset(&b, 0, sizeof(b));
    ex->math = o->plan.math;
    ex->layout = o->plan.layout;
    ex->timing_only = o->timing_only;
    ex->pdl_choose = !(o->plan.ablate & OPSCHED_ABLATE_PDL);
    ex->pdl_on = 1;
    ex->info.pdl = -1;
    ex->n_stages = s->n_stages;
    /* the layout per tensor: the plans see it through their options */
    opsched_exec_options oo = *o;
    oo.plan.rowmajor = NULL;
    oo.plan.rowmajor_graph = NULL;
    if (ex->layout == OPSCHED_LAYOUT_NHWC && !(o->plan.ablate & OPSCHED_ABLATE_LAYOUT) &&
        opsched_graph_num_tensors(g) > 0) {
        int nt = opsched_graph_num_tensors(g);
        ex->rowmajor = calloc((size_t)nt, 1);
        if (!ex->rowmajor) return OS_NOMEM(ex->ctx);
        if (o->rowmajor) {
            for (int t = 0; t < nt; t++) {
                ex->rowmajor[t] = o->rowmajor[t] != 0;
                ex->info.n_rowmajor += ex->rowmajor[t];
            }
        } else {
            ex->info.n_rowmajor = opsched_layout_rowmajor(g, ex->rowmajor);
        }
        oo.plan.rowmajor = ex->rowmajor;
        oo.plan.rowmajor_graph = g;
    }
    OS_TRY(copy_graph(ex, g));
    b.g = g;
    b.s = s;
    b.o = &oo;
    b.place = calloc((size_t)ex->n_nodes + 1, sizeof(*b.place));
    b.plans = calloc((size_t)ex->n_nodes + 1, sizeof(*b.plans));
    b.residual = malloc(((size_t)ex->n_nodes + 1) * sizeof(int));
    b.chain_in = calloc((size_t)ex->n_nodes + 1, sizeof(*b.chain_in));
    b.chain_n = calloc((size_t)ex->n_nodes + 1, sizeof(int));
    b.follow_head = calloc((size_t)ex->n_nodes + 1, sizeof(int));
    b.follow_next = calloc((size_t)ex->n_nodes + 1, sizeof(int));
    b.merges = calloc((size_t)s->n_stages + 1, sizeof(*b.merges));
    b.out_over = malloc(((size_t)ex->n_nodes + 1) * sizeof(int));
    b.gate = malloc(((size_t)ex->n_nodes + 1) * sizeof(int));
    if (!b.place || !b.plans || !b.residual || !b.chain_in || !b.chain_n || !b.follow_head ||
        !b.follow_next || !b.merges || !b.out_over || !b.gate) {
        st = OS_NOMEM(ex->ctx);
        goto done;
    }
    for (int i = 0; i <= ex->n_nodes; i++)
        b.residual[i] = b.out_over[i] = b.gate[i] = -1;
    OS_TRY_GOTO(st, place_nodes(ex, &b), done);
    OS_TRY_GOTO(st, plan_all(ex, &b), done);
    list_followers(ex, &b);
    OS_TRY_GOTO(st, launch_all(ex, &b), done);
    ex->info.n_layers = ex->n_nodes;
    ex->info.n_stages = s->n_stages;
    ex->info.n_streams = ex->n_streams;
    ex->info.n_launches = ex->n_launches;
    OS_TRY_GOTO(st, load_weights(ex, g, o->seed), done);
    OS_TRY_GOTO(st, lay_out(ex), done);
    OS_TRY_GOTO(st, make_streams(ex), done);
    OS_TRY_GOTO(st, os_ex_build_program(ex), done);
    OS_TRY_GOTO(st, opsched_executor_randomize_inputs(ex, o->seed), done);
done:
    build_release(&b, ex->n_nodes);
    return st;
}

opsched_status opsched_executor_create(opsched_device *dev, const opsched_graph *g,
                                       const opsched_schedule *s, const opsched_exec_options *opts,
                                       opsched_executor **out)
{
    if (!dev || !g || !out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    opsched_ctx *ctx = opsched_device_ctx(dev);
    opsched_exec_options o;
    OS_TRY(check_options(ctx, opts, &o));
    opsched_schedule *seq = NULL;
    if (s) {
        OS_TRY(opsched_schedule_validate(g, s));
    } else {
        opsched_search_options so;
        memset(&so, 0, sizeof(so));
        so.searcher = OPSCHED_SEARCH_SEQUENTIAL;
        OS_TRY(opsched_schedule_search(g, &so, &seq, NULL));
        s = seq;
    }
    opsched_status st = OPSCHED_OK;
    opsched_executor *ex = calloc(1, sizeof(*ex));
    if (!ex) {
        st = OS_NOMEM(ctx);
    } else {
        ex->dev = dev;
        ex->ctx = ctx;
        st = build(ex, g, s, &o);
    }
    opsched_schedule_free(seq);
    if (st != OPSCHED_OK) {
        opsched_executor_free(ex);
        return st;
    }
    *out = ex;
    return OPSCHED_OK;
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
    return &ex->nodes[node];
}
