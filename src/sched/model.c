/*
 * model.c - the schedule object: building it stage by stage, the geometry
 * of merged convolutions, and validation against a graph.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "exec/exec_impl.h"
#include "sched/sched_impl.h"

/* ---- creating and freeing ----------------------------------------------- */

opsched_status opsched_schedule_create(const opsched_graph *g, opsched_schedule **out)
{
    opsched_ctx *ctx = opsched_graph_ctx(g);
    *out = NULL;
    opsched_schedule *s = calloc(1, sizeof(*s));
    if (!s) return OS_NOMEM(ctx);
    s->ctx = ctx;
    s->predicted_ms = -1;
    s->n_graph_nodes = opsched_graph_num_nodes(g);
    s->model = strdup(opsched_graph_name(g));
    s->device = strdup("");
    s->searcher = strdup("");
    s->cost = strdup("");
    if (!s->model || !s->device || !s->searcher || !s->cost) {
        opsched_schedule_free(s);
        return OS_NOMEM(ctx);
    }
    if (opsched_graph_num_inputs(g) > 0) {
        const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_input(g, 0));
        if (t->shape.ndim >= 1) s->batch = t->shape.d[0];
        if (t->shape.ndim == 4) {
            s->input_h = t->shape.d[2];
            s->input_w = t->shape.d[3];
        }
    }
    *out = s;
    return OPSCHED_OK;
}

static void stage_release(opsched_stage *st)
{
    for (int j = 0; j < st->n_groups; j++) free(st->groups[j].nodes);
    free(st->groups);
    free(st->merge.members);
}

void opsched_schedule_free(opsched_schedule *s)
{
    if (!s) return;
    for (int i = 0; i < s->n_stages; i++) stage_release(&s->stages[i]);
    free(s->stages);
    free(s->model);
    free(s->device);
    free(s->searcher);
    free(s->cost);
    free(s);
}

opsched_status opsched_schedule_set_string(opsched_schedule *s, const char *which,
                                           const char *value)
{
    char **field = NULL;
    if (!which) field = NULL;
    else if (strcmp(which, "device") == 0) field = &s->device;
    else if (strcmp(which, "searcher") == 0) field = &s->searcher;
    else if (strcmp(which, "cost") == 0) field = &s->cost;
    else if (strcmp(which, "model") == 0) field = &s->model;
    if (!field)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "schedule field '%s' is not one of device, searcher, cost, model",
                       which ? which : "(null)");
    char *copy = strdup(value ? value : "");
    if (!copy) return OS_NOMEM(s->ctx);
    free(*field);
    *field = copy;
    return OPSCHED_OK;
}

static opsched_status push_stage(opsched_schedule *s, opsched_stage_kind kind, int *out)
{
    opsched_stage *grown = realloc(s->stages, (size_t)(s->n_stages + 1) * sizeof(*grown));
    if (!grown) return OS_NOMEM(s->ctx);
    s->stages = grown;
    opsched_stage *st = &s->stages[s->n_stages];
    memset(st, 0, sizeof(*st));
    st->kind = kind;
    st->ms = -1;
    if (out) *out = s->n_stages;
    s->n_stages++;
    return OPSCHED_OK;
}

opsched_status opsched_schedule_add_stage(opsched_schedule *s, int *out)
{
    return push_stage(s, OPSCHED_STAGE_CONCURRENT, out);
}

opsched_status opsched_schedule_add_group(opsched_schedule *s, int stage, const int *nodes,
                                          int n)
{
    if (stage < 0 || stage >= s->n_stages || s->stages[stage].kind != OPSCHED_STAGE_CONCURRENT)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "stage %d is not a concurrent stage of this schedule", stage);
    if (n < 1 || !nodes)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "a group needs at least one node");
    opsched_stage *st = &s->stages[stage];
    opsched_group *grown = realloc(st->groups, (size_t)(st->n_groups + 1) * sizeof(*grown));
    if (!grown) return OS_NOMEM(s->ctx);
    st->groups = grown;
    int *copy = malloc((size_t)n * sizeof(int));
    if (!copy) return OS_NOMEM(s->ctx);
    memcpy(copy, nodes, (size_t)n * sizeof(int));
    st->groups[st->n_groups].nodes = copy;
    st->groups[st->n_groups].n_nodes = n;
    st->n_groups++;
    return OPSCHED_OK;
}

/* ---- graph helpers ------------------------------------------------------- */

int opsched_tensor_scheduled_producer(const opsched_graph *g, int t)
{
    /* A view chain is at most as long as the graph has nodes. */
    for (int hops = 0; hops <= opsched_graph_num_nodes(g); hops++) {
        const opsched_tensor *x = opsched_graph_tensor(g, t);
        if (!x || x->producer < 0) return -1;
        const opsched_node *p = opsched_graph_node(g, x->producer);
        if (!opsched_op_is_view(p->op)) return x->producer;
        if (p->n_inputs < 1 || p->inputs[0] < 0) return -1;
        t = p->inputs[0];
    }
    return -1;
}

/* ---- merged convolutions ------------------------------------------------- */

/* One spatial dimension: the common begin/end padding of the merged conv
 * and each member's kernel offset, or 0 when the members cannot agree. */
static int merge_dim(const opsched_graph *g, const int *convs, int n, int d, int64_t *kmax,
                     int64_t *pb, int64_t *pe, int64_t *offsets)
{
    int64_t K = 0;
    for (int i = 0; i < n; i++) {
        const opsched_conv_attr *a = &opsched_graph_node(g, convs[i])->attr.conv;
        if (a->kernel[d] > K) K = a->kernel[d];
    }
    int have = 0;
    int64_t B = 0, E = 0;
    for (int i = 0; i < n; i++) {
        const opsched_conv_attr *a = &opsched_graph_node(g, convs[i])->attr.conv;
        if (a->kernel[d] != K) continue;
        if (have && (a->pads[d] != B || a->pads[d + 2] != E)) return 0;
        B = a->pads[d];
        E = a->pads[d + 2];
        have = 1;
    }
    for (int i = 0; i < n; i++) {
        const opsched_conv_attr *a = &opsched_graph_node(g, convs[i])->attr.conv;
        int64_t k = a->kernel[d], o = B - a->pads[d];
        if (o < 0 || o > K - k || E - a->pads[d + 2] != K - k - o) return 0;
        offsets[i] = o;
    }
    *kmax = K;
    *pb = B;
    *pe = E;
    return 1;
}

static opsched_status merge_fail(opsched_ctx *ctx, const char *fmt, ...) OS_PRINTF(2, 3);

/* OPSCHED_ERR_SHAPE, with the reason on ctx when there is one (the
 * searchers ask without a context, many times). */
static opsched_status merge_fail(opsched_ctx *ctx, const char *fmt, ...)
{
    if (!ctx) return OPSCHED_ERR_SHAPE;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return OS_FAIL(ctx, OPSCHED_ERR_SHAPE, "%s", msg);
}

opsched_status os_merge_geometry(opsched_ctx *ctx, const opsched_graph *g, const int *convs,
                                 int n, opsched_merge *m, opsched_merge_member *members)
{
    if (n < 2) return merge_fail(ctx, "a merge needs at least two convolutions");
    const opsched_node *first = NULL;
    int64_t off_h[OS_SCHED_MAX_PART], off_w[OS_SCHED_MAX_PART];
    if (n > OS_SCHED_MAX_PART)
        return merge_fail(ctx, "a merge of %d convolutions (at most %d)", n, OS_SCHED_MAX_PART);
    for (int i = 0; i < n; i++) {
        const opsched_node *c = opsched_graph_node(g, convs[i]);
        if (!c) return merge_fail(ctx, "merge member %d is not a node", convs[i]);
        const opsched_conv_attr *a = &c->attr.conv;
        if (c->op != OPSCHED_OP_CONV)
            return merge_fail(ctx, "'%s' is a %s, only convolutions merge", c->name,
                              opsched_op_name(c->op));
        if (a->groups != 1 || a->dilation[0] != 1 || a->dilation[1] != 1)
            return merge_fail(ctx, "'%s' cannot merge: grouped or dilated", c->name);
        if (c->n_inputs < 2 || c->inputs[0] < 0 || c->inputs[1] < 0 || c->n_outputs != 1)
            return merge_fail(ctx, "'%s' cannot merge: missing input or weight", c->name);
        if (!first) {
            first = c;
            continue;
        }
        if (c->inputs[0] != first->inputs[0])
            return merge_fail(ctx, "'%s' and '%s' read different tensors", first->name, c->name);
        if (a->stride[0] != first->attr.conv.stride[0] || a->stride[1] != first->attr.conv.stride[1])
            return merge_fail(ctx, "'%s' and '%s' have different strides", first->name, c->name);
        const opsched_tensor *y0 = opsched_graph_tensor(g, first->outputs[0]);
        const opsched_tensor *y = opsched_graph_tensor(g, c->outputs[0]);
        const opsched_tensor *w0 = opsched_graph_tensor(g, first->inputs[1]);
        const opsched_tensor *w = opsched_graph_tensor(g, c->inputs[1]);
        if (y->shape.ndim != 4 || y0->shape.ndim != 4 || y->shape.d[0] != y0->shape.d[0] ||
            y->shape.d[2] != y0->shape.d[2] || y->shape.d[3] != y0->shape.d[3])
            return merge_fail(ctx, "'%s' and '%s' give different output sizes", first->name,
                              c->name);
        if (y->dtype != y0->dtype || w->dtype != w0->dtype)
            return merge_fail(ctx, "'%s' and '%s' have different data types", first->name, c->name);
    }
    memset(m, 0, sizeof(*m));
    if (!merge_dim(g, convs, n, 0, &m->kernel[0], &m->pads[0], &m->pads[2], off_h) ||
        !merge_dim(g, convs, n, 1, &m->kernel[1], &m->pads[1], &m->pads[3], off_w))
        return merge_fail(ctx, "'%s' and the others: the padding does not line up once the "
                               "kernels are padded to the largest",
                          first->name);
    m->stride[0] = first->attr.conv.stride[0];
    m->stride[1] = first->attr.conv.stride[1];
    m->input = first->inputs[0];
    m->n_members = n;
    m->members = members;
    int64_t ch = 0;
    for (int i = 0; i < n; i++) {
        const opsched_node *c = opsched_graph_node(g, convs[i]);
        int64_t oc = opsched_graph_tensor(g, c->outputs[0])->shape.d[1];
        members[i].node = convs[i];
        members[i].relu = -1;
        members[i].channel_offset = ch;
        members[i].out_channels = oc;
        members[i].kernel_offset[0] = off_h[i];
        members[i].kernel_offset[1] = off_w[i];
        ch += oc;
    }
    m->out_channels = ch;
    return OPSCHED_OK;
}

int opsched_conv_mergeable(const opsched_graph *g, int a, int b)
{
    int convs[2] = {a, b};
    opsched_merge m;
    opsched_merge_member mm[2];
    if (a == b) return 0;
    return os_merge_geometry(NULL, g, convs, 2, &m, mm) == OPSCHED_OK;
}

opsched_status opsched_schedule_add_merge(opsched_schedule *s, const opsched_graph *g,
                                          const int *convs, const int *relus, int n, int *out)
{
    if (!convs || n < 2)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "a merge needs at least two convolutions");
    for (int i = 0; i < n; i++)
        if (convs[i] < 0 || convs[i] >= opsched_graph_num_nodes(g))
            return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "merge member %d: node %d out of range",
                           i, convs[i]);
    opsched_merge_member *members = calloc((size_t)n, sizeof(*members));
    if (!members) return OS_NOMEM(s->ctx);
    opsched_merge m;
    opsched_status st = os_merge_geometry(s->ctx, g, convs, n, &m, members);
    if (st != OPSCHED_OK) {
        free(members);
        return st;
    }
    int with_relu = relus && relus[0] >= 0;
    for (int i = 0; i < n; i++) {
        int r = relus ? relus[i] : -1;
        if ((r >= 0) != with_relu) {
            free(members);
            return OS_FAIL(s->ctx, OPSCHED_ERR_SHAPE,
                           "merge of '%s'...: either every member carries its Relu or none does",
                           opsched_graph_node(g, convs[0])->name);
        }
        if (r >= 0 && r != os_exec_fused_act(g, convs[i])) {
            free(members);
            return OS_FAIL(s->ctx, OPSCHED_ERR_SHAPE,
                           "merge member '%s': node %d is not an activation that only it feeds",
                           opsched_graph_node(g, convs[i])->name, r);
        }
        if (r >= 0 && !opsched_epilogue_same(opsched_graph_node(g, r),
                                             opsched_graph_node(g, relus[0]))) {
            free(members);
            return OS_FAIL(s->ctx, OPSCHED_ERR_SHAPE,
                           "merge member '%s': its activation differs from the first member's "
                           "(one merged convolution runs one activation)",
                           opsched_graph_node(g, convs[i])->name);
        }
        members[i].relu = r;
    }
    int idx = -1;
    st = push_stage(s, OPSCHED_STAGE_MERGE, &idx);
    if (st != OPSCHED_OK) {
        free(members);
        return st;
    }
    s->stages[idx].merge = m;
    if (out) *out = idx;
    return OPSCHED_OK;
}

/* ---- validation ---------------------------------------------------------- */

typedef struct place {
    int stage, group, pos; /* stage -1: not placed */
} place;

static const char *node_name(const opsched_graph *g, int i)
{
    return opsched_graph_node(g, i)->name;
}

/* Records node i at (k, j, p); fails on range, views and repeats. */
static opsched_status place_node(const opsched_graph *g, const opsched_schedule *s, place *where,
                                 int i, int k, int j, int p)
{
    int n = opsched_graph_num_nodes(g);
    if (i < 0 || i >= n)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "stage %d: node index %d is out of range (the graph has %d nodes)", k + 1, i,
                       n);
    const opsched_node *nd = opsched_graph_node(g, i);
    if (opsched_op_is_view(nd->op))
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "stage %d: node '%s' is a view (%s); views are not scheduled", k + 1,
                       nd->name, opsched_op_name(nd->op));
    if (where[i].stage >= 0)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "node '%s' is scheduled twice (stages %d and %d)", nd->name,
                       where[i].stage + 1, k + 1);
    where[i].stage = k;
    where[i].group = j;
    where[i].pos = p;
    return OPSCHED_OK;
}

/* Every producer of node i is placed before it. */
static opsched_status check_deps(const opsched_graph *g, const opsched_schedule *s,
                                 const place *where, int i)
{
    const opsched_node *nd = opsched_graph_node(g, i);
    const place *me = &where[i];
    for (int k = 0; k < nd->n_inputs; k++) {
        if (nd->inputs[k] < 0) continue;
        int p = opsched_tensor_scheduled_producer(g, nd->inputs[k]);
        if (p < 0) continue;
        const place *w = &where[p];
        int ok = w->stage >= 0 &&
                 (w->stage < me->stage ||
                  (w->stage == me->stage && w->group == me->group && w->pos < me->pos));
        if (!ok) {
            if (w->stage < 0)
                return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                               "node '%s' (stage %d) reads '%s', which is not scheduled before it",
                               nd->name, me->stage + 1, node_name(g, p));
            return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                           "node '%s' (stage %d) reads '%s', scheduled %s (stage %d)", nd->name,
                           me->stage + 1, node_name(g, p),
                           w->stage == me->stage ? "concurrently or after it in the same stage"
                                                 : "after it",
                           w->stage + 1);
        }
    }
    return OPSCHED_OK;
}

static opsched_status check_merge(const opsched_graph *g, const opsched_schedule *s, int k)
{
    const opsched_merge *m = &s->stages[k].merge;
    if (m->n_members < 2 || !m->members)
        return OS_FAIL(s->ctx, OPSCHED_ERR_SHAPE, "stage %d: a merge of %d convolutions", k + 1,
                       m->n_members);
    int convs[OS_SCHED_MAX_PART];
    opsched_merge_member mm[OS_SCHED_MAX_PART];
    if (m->n_members > OS_SCHED_MAX_PART)
        return OS_FAIL(s->ctx, OPSCHED_ERR_SHAPE, "stage %d: a merge of %d convolutions (at most %d)",
                       k + 1, m->n_members, OS_SCHED_MAX_PART);
    for (int i = 0; i < m->n_members; i++) convs[i] = m->members[i].node;
    opsched_merge want;
    opsched_status st = os_merge_geometry(s->ctx, g, convs, m->n_members, &want, mm);
    if (st != OPSCHED_OK) {
        char why[512];
        snprintf(why, sizeof(why), "%s", opsched_ctx_last_error(s->ctx));
        return OS_FAIL(s->ctx, st, "stage %d: %s", k + 1, why);
    }
    int same = want.kernel[0] == m->kernel[0] && want.kernel[1] == m->kernel[1] &&
               want.stride[0] == m->stride[0] && want.stride[1] == m->stride[1] &&
               want.out_channels == m->out_channels && want.input == m->input;
    for (int d = 0; d < 4; d++) same = same && want.pads[d] == m->pads[d];
    for (int i = 0; same && i < m->n_members; i++)
        same = mm[i].channel_offset == m->members[i].channel_offset &&
               mm[i].out_channels == m->members[i].out_channels &&
               mm[i].kernel_offset[0] == m->members[i].kernel_offset[0] &&
               mm[i].kernel_offset[1] == m->members[i].kernel_offset[1];
    if (!same)
        return OS_FAIL(s->ctx, OPSCHED_ERR_SHAPE,
                       "stage %d: the merge geometry recorded for '%s'... differs from what the "
                       "graph gives (kernel %lldx%lld, pads %lld,%lld,%lld,%lld, %lld channels)",
                       k + 1, node_name(g, convs[0]), (long long)want.kernel[0],
                       (long long)want.kernel[1], (long long)want.pads[0], (long long)want.pads[1],
                       (long long)want.pads[2], (long long)want.pads[3],
                       (long long)want.out_channels);
    int with_relu = m->members[0].relu >= 0;
    for (int i = 0; i < m->n_members; i++) {
        int r = m->members[i].relu;
        if ((r >= 0) != with_relu)
            return OS_FAIL(s->ctx, OPSCHED_ERR_SHAPE,
                           "stage %d: either every merged convolution carries its Relu or none "
                           "does ('%s' differs)",
                           k + 1, node_name(g, convs[i]));
        if (r >= 0 && r != os_exec_fused_act(g, convs[i]))
            return OS_FAIL(s->ctx, OPSCHED_ERR_SHAPE,
                           "stage %d: the activation carried by '%s' (node %d) is not the only "
                           "reader of its output",
                           k + 1, node_name(g, convs[i]), r);
        if (r >= 0 && !opsched_epilogue_same(opsched_graph_node(g, r),
                                             opsched_graph_node(g, m->members[0].relu)))
            return OS_FAIL(s->ctx, OPSCHED_ERR_SHAPE,
                           "stage %d: the activation of '%s' differs from the first member's",
                           k + 1, node_name(g, convs[i]));
    }
    return OPSCHED_OK;
}

opsched_status opsched_schedule_validate(const opsched_graph *g, const opsched_schedule *s)
{
    int n = opsched_graph_num_nodes(g);
    if (!s->model || strcmp(s->model, opsched_graph_name(g)) != 0 || s->n_graph_nodes != n)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "the schedule is for model '%s' (%d nodes), not '%s' (%d nodes)",
                       s->model ? s->model : "?", s->n_graph_nodes, opsched_graph_name(g), n);
    place *where = malloc((size_t)(n + 1) * sizeof(*where));
    if (!where) return OS_NOMEM(s->ctx);
    for (int i = 0; i < n; i++) where[i].stage = -1;
    opsched_status st = OPSCHED_OK;
    /* Place everything first, then check every dependency. */
    for (int k = 0; k < s->n_stages && st == OPSCHED_OK; k++) {
        const opsched_stage *sg = &s->stages[k];
        if (sg->kind == OPSCHED_STAGE_MERGE) {
            st = check_merge(g, s, k);
            for (int i = 0; st == OPSCHED_OK && i < sg->merge.n_members; i++) {
                st = place_node(g, s, where, sg->merge.members[i].node, k, i, 0);
                if (st == OPSCHED_OK && sg->merge.members[i].relu >= 0)
                    st = place_node(g, s, where, sg->merge.members[i].relu, k, i, 1);
            }
            continue;
        }
        if (sg->kind != OPSCHED_STAGE_CONCURRENT) {
            st = OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "stage %d: unknown kind %d", k + 1,
                         (int)sg->kind);
            break;
        }
        if (sg->n_groups < 1)
            st = OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "stage %d has no groups", k + 1);
        for (int j = 0; st == OPSCHED_OK && j < sg->n_groups; j++) {
            if (sg->groups[j].n_nodes < 1)
                st = OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "stage %d: group %d is empty", k + 1,
                             j + 1);
            for (int p = 0; st == OPSCHED_OK && p < sg->groups[j].n_nodes; p++)
                st = place_node(g, s, where, sg->groups[j].nodes[p], k, j, p);
        }
    }
    for (int i = 0; st == OPSCHED_OK && i < n; i++) {
        if (opsched_op_is_view(opsched_graph_node(g, i)->op)) continue;
        if (where[i].stage < 0)
            st = OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "node '%s' (%d) is not scheduled",
                         node_name(g, i), i);
        else
            st = check_deps(g, s, where, i);
    }
    free(where);
    return st;
}
