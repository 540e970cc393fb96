/*
 * ddp.c - one data-parallel training iteration as PyTorch's DDP reducer
 * runs it, on a timeline:
 *
 *  - buckets: parameters in reverse registration order, a bucket closed
 *    once it holds at least its cap (the first 1 MB, the others 25 MB by
 *    default), as torch.distributed's _compute_bucket_assignment_by_size
 *    assigns them;
 *  - a bucket is ready when the last of its gradients is produced; its
 *    all-reduce starts at the later of that and the end of the bucket
 *    before it (DDP launches buckets in order on one communication
 *    stream, and NCCL runs them one after another);
 *  - while communication kernels are resident during backward, compute
 *    runs slower: backward is stretched by overlap_slowdown times that
 *    overlap (NCCL's kernels hold SMs, waiting for peers included);
 *  - the reducer's work per gradient (its autograd hook, the copy into
 *    the bucket) stretches backward by per_param_us each, where it is on
 *    the critical path (a host-bound eager step);
 *  - the optimizer starts after the last all-reduce and the end of
 *    backward;
 *  - with gradient accumulation (no_sync), only the last micro-step
 *    communicates.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "opsched/comm.h"
#include "comm_impl.h"

void opsched_ddp_options_init(opsched_ddp_options *o)
{
    memset(o, 0, sizeof(*o));
    o->bucket_cap_mb = 25.0;
    o->first_bucket_mb = 1.0;
    o->overlap_slowdown = 0.0;
    o->accumulation_steps = 1;
    o->comm_bytes_scale = 1.0;
}

void opsched_ddp_result_free(opsched_ddp_result *r)
{
    if (!r) return;
    free(r->buckets);
    r->buckets = NULL;
    r->n_buckets = 0;
}

opsched_status opsched_ddp_buckets(opsched_ctx *ctx, const opsched_ddp_param *params, int n,
                                   const opsched_ddp_options *o, int **bucket_of, int *n_buckets)
{
    *bucket_of = NULL;
    *n_buckets = 0;
    if (n < 0 || (n > 0 && !params))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "DDP buckets: no parameters");
    if (!(o->bucket_cap_mb > 0) || !(o->first_bucket_mb > 0))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "DDP buckets: caps of %g MB and %g MB (first) must be positive",
                       o->bucket_cap_mb, o->first_bucket_mb);
    int *of = malloc((size_t)(n ? n : 1) * sizeof(int));
    if (!of) return OS_NOMEM(ctx);
    const double mb = 1024.0 * 1024.0;
    int b = 0;
    double held = 0;
    for (int i = n - 1; i >= 0; i--) {
        if (params[i].bytes < 0) {
            free(of);
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "DDP buckets: parameter %d has %lld bytes",
                           i, (long long)params[i].bytes);
        }
        of[i] = b;
        held += (double)params[i].bytes;
        double cap = (b == 0 ? o->first_bucket_mb : o->bucket_cap_mb) * mb;
        if (held >= cap && i > 0) {
            b++;
            held = 0;
        }
    }
    *bucket_of = of;
    *n_buckets = n ? b + 1 : 0;
    return OPSCHED_OK;
}

/* Time within [0, until) covered by [a, b). */
static double overlap(double a, double b, double until)
{
    double hi = b < until ? b : until;
    return hi > a ? hi - a : 0.0;
}

opsched_status opsched_ddp_timeline(opsched_ctx *ctx, const opsched_ddp_param *params, int n,
                                    const opsched_ddp_compute *c, opsched_comm_cost_fn cost,
                                    void *user, const opsched_ddp_options *o,
                                    opsched_ddp_result *out)
{
    memset(out, 0, sizeof(*out));
    if (!c || !cost || !o)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "DDP timeline: missing arguments");
    if (!(c->forward_ms >= 0) || !(c->backward_ms >= 0) || !(c->optimizer_ms >= 0))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "DDP timeline: forward %g ms, backward %g ms, optimizer %g ms (none may "
                       "be negative)",
                       c->forward_ms, c->backward_ms, c->optimizer_ms);
    if (o->accumulation_steps < 1 || !(o->overlap_slowdown >= 0) || !(o->per_param_us >= 0) ||
        !(o->comm_bytes_scale > 0))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "DDP timeline: %d accumulation steps, slowdown %g, %g us per gradient (at "
                       "least 1, 0 and 0)",
                       o->accumulation_steps, o->overlap_slowdown, o->per_param_us);
    for (int i = 0; i < n; i++)
        if (!(params[i].ready_ms >= 0) || params[i].ready_ms > c->backward_ms * (1 + 1e-9) + 1e-9)
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "DDP timeline: parameter %d's gradient is ready at %g ms, outside "
                           "backward (0 to %g ms)",
                           i, params[i].ready_ms, c->backward_ms);
    int *of = NULL, nb = 0;
    OS_TRY(opsched_ddp_buckets(ctx, params, n, o, &of, &nb));
    opsched_ddp_bucket *bk = calloc((size_t)(nb ? nb : 1), sizeof(*bk));
    if (!bk) {
        free(of);
        return OS_NOMEM(ctx);
    }
    for (int k = 0; k < nb; k++)
        bk[k].first_param = -1;
    for (int i = n - 1; i >= 0; i--) {
        opsched_ddp_bucket *b = &bk[of[i]];
        if (b->first_param < 0) b->first_param = i;
        b->last_param = i;
        b->n_params++;
        b->bytes += params[i].bytes;
        if (params[i].ready_ms > b->ready_ms) b->ready_ms = params[i].ready_ms;
    }
    free(of);
    /* Times from the start of the (last micro-step's) backward. */
    double comm_end = 0, comm_total = 0, resident = 0;
    for (int k = 0; k < nb; k++) {
        bk[k].comm_ms = cost((double)bk[k].bytes * o->comm_bytes_scale, user) * 1e-3;
        if (!(bk[k].comm_ms >= 0)) {
            long long bytes = (long long)bk[k].bytes;
            free(bk);
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "DDP timeline: no all-reduce time for %lld bytes", bytes);
        }
        bk[k].start_ms = bk[k].ready_ms > comm_end ? bk[k].ready_ms : comm_end;
        bk[k].end_ms = bk[k].start_ms + bk[k].comm_ms;
        comm_end = bk[k].end_ms;
        comm_total += bk[k].comm_ms;
        resident += overlap(bk[k].start_ms, bk[k].end_ms, c->backward_ms);
    }
    double backward = c->backward_ms + o->overlap_slowdown * resident + n * o->per_param_us * 1e-3;
    /* Stretching backward delays what waits on it: the last bucket can
     * start no earlier than the last gradient, now later. */
    double shift = backward - c->backward_ms;
    if (nb > 0 && shift > 0) {
        double end = 0;
        for (int k = 0; k < nb; k++) {
            double ready = bk[k].ready_ms * (backward / (c->backward_ms > 0 ? c->backward_ms : 1));
            bk[k].ready_ms = ready;
            bk[k].start_ms = ready > end ? ready : end;
            bk[k].end_ms = bk[k].start_ms + bk[k].comm_ms;
            end = bk[k].end_ms;
        }
        comm_end = end;
    }
    double sync_end = comm_end > backward ? comm_end : backward;
    int acc = o->accumulation_steps;
    out->buckets = bk;
    out->n_buckets = nb;
    out->forward_ms = c->forward_ms;
    out->backward_ms = backward;
    out->optimizer_ms = c->optimizer_ms;
    out->comm_ms = comm_total;
    out->exposed_ms = sync_end - backward;
    out->hidden_ms = comm_total - out->exposed_ms > 0 ? comm_total - out->exposed_ms : 0;
    out->slowdown_ms = shift;
    /* Earlier micro-steps (no_sync) run forward and backward alone. */
    out->iteration_ms =
        (acc - 1) * (c->forward_ms + c->backward_ms) + c->forward_ms + sync_end + c->optimizer_ms;
    out->single_ms = acc * (c->forward_ms + c->backward_ms) + c->optimizer_ms;
    out->scaling_efficiency = out->iteration_ms > 0 ? out->single_ms / out->iteration_ms : NAN;
    int64_t total = 0;
    for (int i = 0; i < n; i++)
        total += params[i].bytes;
    out->bucket_buffer_bytes = o->gradient_as_bucket_view ? 0 : total;
    return OPSCHED_OK;
}

opsched_status opsched_ddp_from_training(opsched_ctx *ctx, const opsched_graph *tg,
                                         const double *node_ms, opsched_ddp_param **params,
                                         int *n_params, opsched_ddp_compute *c)
{
    *params = NULL;
    *n_params = 0;
    memset(c, 0, sizeof(*c));
    int loss = -1, opt_start = 0, n_nodes = opsched_graph_num_nodes(tg);
    int n_out = opsched_graph_num_outputs(tg);
    OS_TRY(os_training_phases(ctx, tg, &loss, &opt_start));
    /* Backward's clock: the time each backward node has finished. */
    double *done = malloc((size_t)(n_nodes ? n_nodes : 1) * sizeof(double));
    opsched_ddp_param *p = malloc((size_t)(n_out ? n_out : 1) * sizeof(*p));
    if (!done || !p) {
        free(done);
        free(p);
        return OS_NOMEM(ctx);
    }
    double fwd = 0, bwd = 0, opt = 0;
    for (int i = 0; i < n_nodes; i++) {
        double ms = node_ms[i];
        if (!(ms >= 0)) {
            free(done);
            free(p);
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "node %d (%s) of %s has no time: the DDP timeline needs every node's", i,
                           opsched_graph_node(tg, i)->name, opsched_graph_name(tg));
        }
        if (i <= loss)
            fwd += ms;
        else if (i < opt_start)
            bwd += ms;
        else
            opt += ms;
        done[i] = i <= loss ? 0 : bwd;
    }
    int n = 0;
    for (int i = 0; i < n_out; i++) {
        const opsched_tensor *t = opsched_graph_tensor(tg, opsched_graph_output(tg, i));
        if (!t || !t->name || strncmp(t->name, "grad/", 5) != 0) continue;
        /* A gradient made by a view or passed through: ready when its
         * producer's input was; one before the loss (none) at the start. */
        p[n].bytes = opsched_shape_numel(&t->shape) * (int64_t)opsched_dtype_size(t->dtype);
        p[n].ready_ms = t->producer > loss ? done[t->producer] : 0;
        n++;
    }
    free(done);
    c->forward_ms = fwd;
    c->backward_ms = bwd;
    c->optimizer_ms = opt;
    *params = p;
    *n_params = n;
    return OPSCHED_OK;
}

opsched_status os_training_phases(opsched_ctx *ctx, const opsched_graph *tg, int *loss,
                                  int *opt_start)
{
    int n_out = opsched_graph_num_outputs(tg), last_grad = -1, has_step = 0;
    *loss = -1;
    *opt_start = opsched_graph_num_nodes(tg);
    for (int i = 0; i < n_out; i++) {
        const opsched_tensor *t = opsched_graph_tensor(tg, opsched_graph_output(tg, i));
        if (!t || !t->name) continue;
        if (strcmp(t->name, "loss") == 0 && *loss < 0) *loss = t->producer;
        if (strncmp(t->name, "grad/", 5) == 0 && t->producer > last_grad) last_grad = t->producer;
        if (strncmp(t->name, "step/", 5) == 0) has_step = 1;
    }
    if (*loss < 0)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "graph %s is not a training graph (no output 'loss')",
                       opsched_graph_name(tg));
    /* The optimizer step, when the graph has one, follows every gradient. */
    if (has_step) *opt_start = (last_grad > *loss ? last_grad : *loss) + 1;
    return OPSCHED_OK;
}
