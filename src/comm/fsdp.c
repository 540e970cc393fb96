/*
 * fsdp.c - one training iteration under PyTorch's fully sharded data
 * parallelism (FSDP2, fully_shard, FULL_SHARD), on a timeline:
 *
 *  - units: the modules fully_shard() wraps (opsched_fsdp_unit_of), each
 *    parameter in its innermost one, the rest in the root;
 *  - every rank holds 1/ranks of each parameter; a unit's parameters are
 *    all-gathered before its forward and, once resharded after forward
 *    (every unit but the root), again before its backward;
 *  - forward prefetch is FSDP2's implicit one: the CPU runs ahead, and the
 *    all-gather of the next unit waits only for the copy-out of the one
 *    before it, so it starts when that unit's compute starts (two units'
 *    parameters gathered at most);
 *  - backward prefetch is FSDP2's explicit one: entering a unit's
 *    backward issues the all-gather of the next unit in backward order;
 *  - a unit's gradients are reduce-scattered when its backward ends;
 *  - all collectives run one after another in the order the CPU issues
 *    them (one communicator: NCCL runs its kernels in order), compute
 *    waits for the all-gather of the unit it enters;
 *  - the optimizer steps the rank's shard after the last reduce-scatter;
 *  - the host: eager PyTorch issues work ahead of the GPU.  Issuing a
 *    stretch of compute takes the host its share of the one-GPU step's
 *    host time (measured, host_ms, shared in proportion to the compute),
 *    and FSDP's hooks take host time each time a unit is entered (its
 *    all-gather, copy-in and copy-out, the reduce-scatter's), a fixed part
 *    and a part per parameter.  A host clock advances by both; no compute
 *    of a unit starts on the GPU before the host has entered it, and none
 *    ends before the host has issued it: a step with many small units is
 *    host-bound;
 *  - compute lost per ms of communication resident under it.
 * The three costs (per unit, per parameter, per ms resident) are fitted
 * to measured steps and are 0 by default.
 */
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "opsched/comm.h"
#include "comm_impl.h"

#define MAX_COMPONENTS 64

/* Splits s (modified) at dots; the number of components, -1 when too many. */
static int split_dots(char *s, char **comp)
{
    int n = 0;
    for (char *p = s;;) {
        if (n == MAX_COMPONENTS) return -1;
        comp[n++] = p;
        char *dot = strchr(p, '.');
        if (!dot) break;
        *dot = 0;
        p = dot + 1;
    }
    return n;
}

/* Whether the first k components of path match pattern (component-wise). */
static int pattern_matches(const char *pattern, size_t len, char *const *path, int k)
{
    char buf[1024];
    char *pc[MAX_COMPONENTS];
    if (len >= sizeof(buf)) return 0;
    memcpy(buf, pattern, len);
    buf[len] = 0;
    int n = split_dots(buf, pc);
    if (n != k) return 0;
    for (int i = 0; i < k; i++)
        if (fnmatch(pc[i], path[i], 0) != 0) return 0;
    return 1;
}

int opsched_fsdp_unit_of(const char *param, const char *patterns, char *unit, size_t size)
{
    if (size) unit[0] = 0;
    if (!param || !patterns || !*patterns) return 0;
    char path[1024];
    char *comp[MAX_COMPONENTS];
    const char *last = strrchr(param, '.');
    size_t plen = last ? (size_t)(last - param) : 0;
    if (plen == 0 || plen >= sizeof(path)) return 0;
    memcpy(path, param, plen);
    path[plen] = 0;
    int n = split_dots(path, comp);
    if (n < 0) return 0;
    for (int k = n; k >= 1; k--) {
        for (const char *p = patterns; *p;) {
            const char *end = strchr(p, ',');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            int keep = 0;
            if (len > 4 && strncmp(p + len - 4, ":f32", 4) == 0) {
                keep = 1;
                len -= 4;
            }
            if (len > 0 && pattern_matches(p, len, comp, k)) {
                size_t used = 0;
                for (int i = 0; i < k && used < size; i++)
                    used +=
                        (size_t)snprintf(unit + used, size - used, "%s%s", i ? "." : "", comp[i]);
                return keep;
            }
            p += len + (size_t)keep * 4;
            if (*p == ',') p++;
        }
    }
    return 0;
}

void opsched_fsdp_compute_free(opsched_fsdp_compute *c)
{
    if (!c) return;
    free(c->units);
    free(c->segs);
    memset(c, 0, sizeof(*c));
}

void opsched_fsdp_options_init(opsched_fsdp_options *o)
{
    memset(o, 0, sizeof(*o));
    o->ranks = 1;
    o->gather_bytes_scale = 1.0;
    o->reduce_bytes_scale = 1.0;
    o->reshard_after_forward = 1;
}

/* The unit named name in c (added when new); -1 when out of memory. */
static int unit_index(opsched_fsdp_compute *c, int *cap, const char *name, int keep)
{
    for (int u = 0; u < c->n_units; u++)
        if (strcmp(c->units[u].name, name) == 0) return u;
    if (c->n_units == *cap) {
        int nc = *cap ? 2 * *cap : 16;
        opsched_fsdp_unit *nu = realloc(c->units, (size_t)nc * sizeof(*nu));
        if (!nu) return -1;
        c->units = nu;
        *cap = nc;
    }
    opsched_fsdp_unit *u = &c->units[c->n_units];
    memset(u, 0, sizeof(*u));
    snprintf(u->name, sizeof(u->name), "%s", name);
    u->keep_f32 = keep;
    return c->n_units++;
}

static int push_seg(opsched_fsdp_compute *c, int *cap, int unit, int backward, double ms)
{
    if (c->n_segs > 0) {
        opsched_fsdp_segment *s = &c->segs[c->n_segs - 1];
        if (s->unit == unit && s->backward == backward) {
            s->ms += ms;
            return 1;
        }
    }
    if (c->n_segs == *cap) {
        int nc = *cap ? 2 * *cap : 64;
        opsched_fsdp_segment *ns = realloc(c->segs, (size_t)nc * sizeof(*ns));
        if (!ns) return 0;
        c->segs = ns;
        *cap = nc;
    }
    c->segs[c->n_segs++] = (opsched_fsdp_segment){unit, backward, ms};
    return 1;
}

opsched_status opsched_fsdp_from_training(opsched_ctx *ctx, const opsched_graph *tg,
                                          const double *node_ms, const char *patterns,
                                          opsched_fsdp_compute *out)
{
    memset(out, 0, sizeof(*out));
    int n_nodes = opsched_graph_num_nodes(tg), n_out = opsched_graph_num_outputs(tg);
    int n_tensors = opsched_graph_num_tensors(tg);
    int loss = -1, opt_start = n_nodes;
    OS_TRY(os_training_phases(ctx, tg, &loss, &opt_start));
    /* Per tensor: the unit of the parameter it is (-2 a parameter not yet
     * given a unit, -1 not a parameter); per parameter, its unit's key. */
    int *unit_of = malloc((size_t)(n_tensors ? n_tensors : 1) * sizeof(int));
    int *grad_of = malloc((size_t)(n_tensors ? n_tensors : 1) * sizeof(int)); /* grad -> param */
    char(*key)[OPSCHED_FSDP_UNIT_NAME] =
        malloc((size_t)(n_tensors ? n_tensors : 1) * OPSCHED_FSDP_UNIT_NAME);
    unsigned char *keep = calloc((size_t)(n_tensors ? n_tensors : 1), 1);
    int ucap = 0, scap = 0;
    opsched_status st = OPSCHED_OK;
    if (!unit_of || !grad_of || !key || !keep) goto nomem;
    for (int x = 0; x < n_tensors; x++)
        unit_of[x] = grad_of[x] = -1;
    for (int i = 0; i < n_out; i++) {
        int gt = opsched_graph_output(tg, i), w = -1;
        const opsched_tensor *t = opsched_graph_tensor(tg, gt);
        if (!t || !t->name || strncmp(t->name, "grad/", 5) != 0) continue;
        if (opsched_graph_find_tensor(tg, t->name + 5, &w) != OPSCHED_OK || w < 0) continue;
        keep[w] =
            (unsigned char)opsched_fsdp_unit_of(t->name + 5, patterns, key[w], sizeof(key[w]));
        unit_of[w] = -2;
        grad_of[gt] = w;
    }
    if (unit_index(out, &ucap, "", 0) < 0) goto nomem; /* the root, unit 0 */
    /* Units in the order forward first reads their parameters. */
    for (int i = 0; i <= loss && i < n_nodes; i++) {
        const opsched_node *n = opsched_graph_node(tg, i);
        for (int k = 0; k < n->n_inputs; k++) {
            int x = n->inputs[k];
            if (x < 0 || unit_of[x] != -2) continue;
            if ((unit_of[x] = unit_index(out, &ucap, key[x], keep[x])) < 0) goto nomem;
        }
    }
    for (int x = 0; x < n_tensors; x++)
        if (unit_of[x] == -2 && (unit_of[x] = unit_index(out, &ucap, key[x], keep[x])) < 0)
            goto nomem;
    for (int x = 0; x < n_tensors; x++) {
        if (grad_of[x] < 0) continue;
        const opsched_tensor *t = opsched_graph_tensor(tg, x);
        opsched_fsdp_unit *u = &out->units[unit_of[grad_of[x]]];
        u->param_bytes += opsched_shape_numel(&t->shape) * (int64_t)opsched_dtype_size(t->dtype);
        u->n_params++;
    }
    /* The compute, node by node. */
    int cur = 0;
    for (int i = 0; i < n_nodes; i++) {
        double ms = node_ms[i];
        if (!(ms >= 0)) {
            st = OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                         "node %d (%s) of %s has no time: the FSDP timeline needs every node's", i,
                         opsched_graph_node(tg, i)->name, opsched_graph_name(tg));
            goto fail;
        }
        if (i >= opt_start) {
            out->optimizer_ms += ms;
            continue;
        }
        const opsched_node *n = opsched_graph_node(tg, i);
        int u = -1;
        for (int k = 0; k < n->n_inputs && u < 0; k++)
            if (n->inputs[k] >= 0 && unit_of[n->inputs[k]] >= 0) u = unit_of[n->inputs[k]];
        for (int k = 0; k < n->n_outputs && u < 0; k++)
            if (n->outputs[k] >= 0 && grad_of[n->outputs[k]] >= 0)
                u = unit_of[grad_of[n->outputs[k]]];
        if (u >= 0) cur = u;
        if (!push_seg(out, &scap, cur, i > loss, ms)) goto nomem;
    }
    goto done;
nomem:
    st = OS_NOMEM(ctx);
fail:
    opsched_fsdp_compute_free(out);
done:
    free(unit_of);
    free(grad_of);
    free(key);
    free(keep);
    return st;
}

/* ---- the timeline ---------------------------------------------------------- */

typedef struct span {
    double a, b;
} span;

typedef struct sim {
    opsched_ctx *ctx;
    double comm_end;
    span *comm;
    int n_comm, cap_comm;
    opsched_comm_cost_fn cost[2];
    void *user[2];
    double total[2];
    int count[2];
} sim;

/* Issues a collective (0 all-gather, 1 reduce-scatter) of bytes that may
 * start at ready; its end, or NAN with the error set. */
static double issue(sim *s, int kind, double bytes, double ready)
{
    double us = s->cost[kind](bytes, s->user[kind]);
    if (!(us >= 0) || !isfinite(us)) {
        OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "FSDP timeline: no %s time for %.0f bytes",
                kind ? "reduce-scatter" : "all-gather", bytes);
        return NAN;
    }
    if (s->n_comm == s->cap_comm) {
        int nc = s->cap_comm ? 2 * s->cap_comm : 64;
        span *n = realloc(s->comm, (size_t)nc * sizeof(*n));
        if (!n) {
            OS_NOMEM(s->ctx);
            return NAN;
        }
        s->comm = n;
        s->cap_comm = nc;
    }
    double start = ready > s->comm_end ? ready : s->comm_end;
    s->comm_end = start + us * 1e-3;
    s->comm[s->n_comm++] = (span){start, s->comm_end};
    s->total[kind] += us * 1e-3;
    s->count[kind]++;
    return s->comm_end;
}

opsched_status opsched_fsdp_timeline(opsched_ctx *ctx, const opsched_fsdp_compute *c,
                                     opsched_comm_cost_fn allgather, void *ag_user,
                                     opsched_comm_cost_fn reducescatter, void *rs_user,
                                     const opsched_fsdp_options *o, opsched_fsdp_result *out)
{
    memset(out, 0, sizeof(*out));
    if (!c || !allgather || !reducescatter || !o || c->n_units < 1)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "FSDP timeline: missing arguments");
    if (o->ranks < 1 || !(o->gather_bytes_scale > 0) || !(o->reduce_bytes_scale > 0) ||
        !(o->overlap_slowdown >= 0) || !(o->per_unit_us >= 0) || !(o->per_param_us >= 0) ||
        !(o->host_ms >= 0) || !(c->optimizer_ms >= 0))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "FSDP timeline: %d ranks, byte scales %g and %g, slowdown %g, %g us per "
                       "unit, optimizer %g ms (at least 1, positive, positive, 0, 0, 0)",
                       o->ranks, o->gather_bytes_scale, o->reduce_bytes_scale, o->overlap_slowdown,
                       o->per_unit_us, c->optimizer_ms);
    int nu = c->n_units, ns = c->n_segs;
    for (int i = 0; i < ns; i++)
        if (c->segs[i].unit < 0 || c->segs[i].unit >= nu || !(c->segs[i].ms >= 0))
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "FSDP timeline: segment %d has unit %d of %d and %g ms", i,
                           c->segs[i].unit, nu, c->segs[i].ms);
    /* Per unit: its all-gather's end per pass, its first and last segment
     * per pass; the units in each pass's order of entry. */
    double *ag_end = calloc((size_t)nu * 2, sizeof(double));
    int *first = malloc((size_t)nu * 2 * sizeof(int)), *last = malloc((size_t)nu * 2 * sizeof(int));
    int *order = malloc((size_t)nu * 2 * sizeof(int)), n_order[2] = {0, 0};
    unsigned char *issued = calloc((size_t)nu * 2, 1);
    span *work = malloc((size_t)(ns ? ns : 1) * sizeof(span));
    sim s = {ctx, 0, NULL, 0, 0, {allgather, reducescatter}, {ag_user, rs_user}, {0, 0}, {0, 0}};
    opsched_status st = OPSCHED_OK;
    if (!ag_end || !first || !last || !order || !issued || !work) {
        st = OS_NOMEM(ctx);
        goto done;
    }
    for (int u = 0; u < 2 * nu; u++)
        first[u] = last[u] = -1;
    for (int i = 0; i < ns; i++) {
        int k = c->segs[i].backward ? 1 : 0, u = c->segs[i].unit;
        if (first[k * nu + u] < 0) {
            first[k * nu + u] = i;
            order[k * nu + n_order[k]++] = u;
        }
        last[k * nu + u] = i;
    }
    /* Bytes gathered and reduced per unit. */
#define GATHER_BYTES(u)                                                                            \
    ((double)c->units[u].param_bytes * (c->units[u].keep_f32 ? 1.0 : o->gather_bytes_scale))
#define REDUCE_BYTES(u) ((double)c->units[u].param_bytes * o->reduce_bytes_scale)
#define NEEDS_GATHER(u, pass)                                                                      \
    (c->units[u].param_bytes > 0 && o->ranks > 1 &&                                                \
     ((pass) == 0 || (o->reshard_after_forward && (u) != 0)))
    /* Issues pass p's all-gather of unit u once, ready at t. */
#define GATHER(p, u, t)                                                                            \
    do {                                                                                           \
        if (NEEDS_GATHER(u, p) && !issued[(p)*nu + (u)]) {                                         \
            issued[(p)*nu + (u)] = 1;                                                              \
            ag_end[(p)*nu + (u)] = issue(&s, 0, GATHER_BYTES(u), t);                               \
            if (isnan(ag_end[(p)*nu + (u)])) {                                                     \
                st = opsched_ctx_last_status(ctx);                                                 \
                goto done;                                                                         \
            }                                                                                      \
        }                                                                                          \
    } while (0)
    double clock = 0, fwd = 0, bwd = 0, host = 0, compute = 0;
    for (int i = 0; i < ns; i++)
        compute += c->segs[i].ms;
    double host_per_ms = o->host_ms > 0 && compute > 0 ? o->host_ms / compute : 0.0;
    GATHER(0, 0, 0.0); /* the root's pre-forward comes first */
    if (n_order[0] > 0) GATHER(0, order[0], 0.0);
    for (int pass = 0; pass < 2; pass++) {
        int *ord = order + pass * nu, j = 0;
        if (pass == 1 && n_order[1] > 0) GATHER(1, ord[0], clock);
        for (int i = 0; i < ns; i++) {
            const opsched_fsdp_segment *g = &c->segs[i];
            if ((g->backward ? 1 : 0) != pass) continue;
            int u = g->unit;
            double start = clock;
            if (first[pass * nu + u] == i) {
                host += (o->per_unit_us + o->per_param_us * c->units[u].n_params) * 1e-3;
                if (NEEDS_GATHER(u, pass) && ag_end[pass * nu + u] > start)
                    start = ag_end[pass * nu + u];
                if (host > start) start = host;
                while (j < n_order[pass] && ord[j] != u)
                    j++;
                if (j + 1 < n_order[pass]) GATHER(pass, ord[j + 1], start); /* prefetch */
            } else if (host > start)
                start = host;
            host += g->ms * host_per_ms;
            double end = start + g->ms > host ? start + g->ms : host;
            work[i] = (span){start, end};
            clock = end;
            if (pass)
                bwd += g->ms;
            else
                fwd += g->ms;
            if (pass == 1 && last[nu + u] == i && c->units[u].param_bytes > 0 && o->ranks > 1 &&
                isnan(issue(&s, 1, REDUCE_BYTES(u), clock))) {
                st = opsched_ctx_last_status(ctx);
                goto done;
            }
        }
        if (pass == 0) out->forward_end_ms = clock;
    }
    /* Units with parameters but no backward: reduced at the end. */
    for (int u = 0; u < nu; u++)
        if (last[nu + u] < 0 && c->units[u].param_bytes > 0 && o->ranks > 1 &&
            isnan(issue(&s, 1, REDUCE_BYTES(u), clock))) {
            st = opsched_ctx_last_status(ctx);
            goto done;
        }
    /* Communication under compute. */
    double hidden = 0;
    for (int k = 0, i = 0; k < s.n_comm; k++)
        for (i = 0; i < ns; i++) {
            double a = s.comm[k].a > work[i].a ? s.comm[k].a : work[i].a;
            double b = s.comm[k].b < work[i].b ? s.comm[k].b : work[i].b;
            if (b > a) hidden += b - a;
        }
    double stretch = o->overlap_slowdown * hidden;
    double end = clock > s.comm_end ? clock : s.comm_end;
    double opt = c->optimizer_ms / o->ranks;
    out->iteration_ms = end + stretch + opt;
    out->single_ms = fwd + bwd + c->optimizer_ms;
    out->scaling_efficiency = out->iteration_ms > 0 ? out->single_ms / out->iteration_ms : NAN;
    out->forward_ms = fwd;
    out->backward_ms = bwd + stretch;
    out->optimizer_ms = opt;
    out->allgather_ms = s.total[0];
    out->reducescatter_ms = s.total[1];
    out->n_allgathers = s.count[0];
    out->n_reducescatters = s.count[1];
    out->hidden_ms = hidden;
    out->exposed_ms = out->iteration_ms - (fwd + bwd + stretch + opt);
#undef GATHER
#undef NEEDS_GATHER
#undef GATHER_BYTES
#undef REDUCE_BYTES
done:
    free(ag_end);
    free(first);
    free(last);
    free(order);
    free(issued);
    free(work);
    free(s.comm);
    return st;
}
