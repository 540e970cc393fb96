/*
 * run.c - running a sweep: one worker thread per device, each with its own
 * context, device and database connection (neither a context nor an SQLite
 * connection may be shared by threads), taking work items from one shared
 * queue sorted longest first, so the slow configurations start early and
 * spread over the devices instead of piling up at the end on one of them.
 *
 * The run has two phases.  Setup: every worker opens its device and
 * registers it in the database, so a missing device fails before anything
 * is recorded, and the resume check can ask about every device of the run.
 * Work, batch after batch: the main thread walks the spec on to the next
 * batch_size configurations of the shard (built then, freed once measured),
 * registers them, drops the items already measured, queues the rest
 * longest first and lets the workers go; when the queue is empty and no
 * item is in flight, the next batch follows.  Memory is that of a batch,
 * whatever the size of the spec.  Every result is committed as soon as it
 * is measured; a stop request lets each worker finish its item in flight.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "opsched/store.h"
#include "sweep/sweep_impl.h"

#define MAX_DEVICES 64
#define MAX_POLICIES 32
/* Configurations planned at once (opsched_sweep_options.batch_size): their
 * graphs are what a run holds. */
#define BATCH 1024
#define MAX_BATCH 1000000
/* A device that fails this many items in a row is broken, not unlucky. */
#define MAX_ERRORS_IN_A_ROW 10

typedef struct item {
    int config;             /* index into the batch's configurations */
    int policy;             /* index into the policy list */
    int64_t config_id;
    int64_t flops;
} item;

/* A configuration of the batch in hand, built on the main thread's
 * context; workers only read it (and copy it onto their own). */
typedef struct batch_config {
    opsched_graph *graph;   /* owned */
    char *signature;        /* owned */
    int fused;
} batch_config;

typedef struct sweep sweep;

typedef struct worker {
    sweep *sw;
    int device;             /* index within the backend */
    pthread_t thread;
    int started;
    opsched_ctx *ctx;
    opsched_device *dev;
    opsched_store *store;
    int64_t device_id;
    opsched_status st;      /* a setup failure, or the failure that stopped the worker */
    char msg[768];
    int errors_in_a_row;
} worker;

struct sweep {
    const opsched_sweep_spec *spec;
    const opsched_sweep_options *opts;
    opsched_measure_options measure;
    const char *backend;
    int64_t run_id;
    /* Policies after "all" is expanded, and their settings keys. */
    const char *policies[MAX_POLICIES];
    char keys[MAX_POLICIES][256];
    char fused_keys[MAX_POLICIES][280]; /* keys[] + ";fused=relu" */
    int conv_only[MAX_POLICIES]; /* an algorithm's name: convolutions only */
    int n_policies;
    int64_t n_general, n_conv_only; /* policies for every configuration, for convolutions */
    os_sweep_walk walk;     /* the main thread's walk over the spec */
    int walk_done;
    batch_config *batch;    /* the configurations of the batch in hand */
    size_t n_batch, batch_size;
    item *items;            /* the batch's queue */
    size_t n_items, cap_items, next;
    int busy;               /* items in flight */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int phase;              /* 0 setup, 1 work, 2 the end */
    int n_ready;
    int failed;             /* a worker hit a failure that stops the sweep */
    worker workers[MAX_DEVICES];
    int n_workers;
    opsched_sweep_result res;
    double t0;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void opsched_sweep_options_default(opsched_sweep_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof(*o));
    o->resume = 1;
    o->shard_count = 1;
}

/* ---- progress ----------------------------------------------------------- */

/* Called with sw->lock held, so calls never overlap. */
static void report(sweep *sw, int device, const char *sig)
{
    if (!sw->opts->progress) return;
    opsched_sweep_progress p;
    memset(&p, 0, sizeof(p));
    p.total = sw->res.total;
    p.done = sw->res.measured;
    p.skipped = sw->res.skipped;
    p.failed = sw->res.errors;
    p.elapsed_s = now_s() - sw->t0;
    p.rate = p.elapsed_s > 0 ? (double)p.done / p.elapsed_s : 0;
    p.eta_s = p.rate > 0 ? (double)(p.total - p.skipped - p.done) / p.rate : -1;
    p.device = device;
    p.item = sig;
    sw->opts->progress(&p, sw->opts->progress_user);
}

static int stop_requested(const sweep *sw)
{
    return sw->opts->stop && *sw->opts->stop;
}

/* ---- one item ----------------------------------------------------------- */

/* Copies node 0 of src into a new graph on ctx, so a worker never touches
 * the spec's context (contexts are per thread). */
static opsched_status clone_one(opsched_ctx *ctx, const opsched_graph *src, opsched_graph **out)
{
    const opsched_node *n = opsched_graph_node(src, 0);
    opsched_graph *g = NULL;
    opsched_status st;
    int ins[64], outs[64];
    const char *out_names[64];
    *out = NULL;
    if (n->n_inputs > 64 || n->n_outputs > 64)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "node '%s': too many inputs", n->name);
    OS_TRY(opsched_graph_create(ctx, opsched_graph_name(src), &g));
    for (int i = 0; i < n->n_inputs; i++) {
        const opsched_tensor *t = opsched_graph_tensor(src, n->inputs[i]);
        ins[i] = -1;
        if (!t) continue;
        if (opsched_graph_find_tensor(g, t->name, &ins[i]) == OPSCHED_OK) continue;
        opsched_ctx_clear_error(ctx);
        OS_TRY_GOTO(st, opsched_graph_add_tensor(g, t->name, t->kind, t->dtype, &t->shape, &ins[i]),
                    fail);
        if (t->data) OS_TRY_GOTO(st, opsched_graph_set_data(g, ins[i], t->data, t->data_bytes), fail);
    }
    for (int i = 0; i < n->n_outputs; i++)
        out_names[i] = opsched_graph_tensor(src, n->outputs[i])->name;
    OS_TRY_GOTO(st, opsched_graph_add_node(g, n->name, n->op, &n->attr, ins, n->n_inputs,
                                           n->n_outputs, out_names, outs), fail);
    for (int i = 0; i < n->n_outputs; i++) OS_TRY_GOTO(st, opsched_graph_mark_output(g, outs[i]), fail);
    *out = g;
    return OPSCHED_OK;
fail:
    opsched_graph_free(g);
    return st;
}

/* Records what stopped a worker; the message is copied from its context. */
static opsched_status worker_fail(worker *w, opsched_status st, const char *what)
{
    w->st = st;
    snprintf(w->msg, sizeof(w->msg), "%s:%d: %s: %s", w->sw->backend, w->device, what,
             opsched_ctx_last_error(w->ctx));
    return st;
}

/* Measures one item and stores the result, whatever its status.  Only a
 * failure to store (or to copy the graph) stops the worker. */
static opsched_status run_item(worker *w, const item *it)
{
    sweep *sw = w->sw;
    const batch_config *c = &sw->batch[it->config];
    opsched_graph *g = NULL;
    opsched_measurement m;
    memset(&m, 0, sizeof(m));
    /* A fused configuration keeps its Relu (node 1) for the plan to fold in. */
    opsched_status st = c->fused ? os_sweep_copy_graph(w->ctx, c->graph, &g)
                                 : clone_one(w->ctx, c->graph, &g);
    if (st != OPSCHED_OK) return worker_fail(w, st, c->signature);
    opsched_measure_options o = sw->measure;
    o.plan.algo = sw->policies[it->policy];
    o.plan.fuse_activation = c->fused;
    st = opsched_measure_node(w->dev, g, 0, &o, &m);
    if (st != OPSCHED_OK) {
        /* The harness keeps the device usable; the failure is this item's result. */
        if (m.status == OPSCHED_OK) {
            m.status = st;
            snprintf(m.message, sizeof(m.message), "%s", opsched_ctx_last_error(w->ctx));
        }
        opsched_ctx_clear_error(w->ctx);
    }
    opsched_graph_free(g);
    /* A Relu the backend could not fold in ran apart: not a fused measurement. */
    int fused_ran = c->fused && (m.status != OPSCHED_OK || m.fused_activation);
    st = opsched_store_add(w->store, sw->run_id, w->device_id, it->config_id,
                           fused_ran ? sw->fused_keys[it->policy] : sw->keys[it->policy],
                           sw->policies[it->policy], &m, NULL);
    if (st != OPSCHED_OK) {
        char what[640];
        snprintf(what, sizeof(what), "cannot store the measurement of %s", c->signature);
        return worker_fail(w, st, what);
    }
    pthread_mutex_lock(&sw->lock);
    sw->res.measured++;
    switch (m.status) {
    case OPSCHED_OK:
        sw->res.ok++;
        sw->res.unstable += m.unstable;
        break;
    case OPSCHED_ERR_UNSUPPORTED: sw->res.unsupported++; break;
    case OPSCHED_ERR_DEVICE_OOM: sw->res.oom++; break;
    default: sw->res.errors++; break;
    }
    report(sw, w->device, c->signature);
    pthread_mutex_unlock(&sw->lock);
    int is_error = m.status != OPSCHED_OK && m.status != OPSCHED_ERR_UNSUPPORTED &&
                   m.status != OPSCHED_ERR_DEVICE_OOM;
    w->errors_in_a_row = is_error ? w->errors_in_a_row + 1 : 0;
    if (w->errors_in_a_row >= MAX_ERRORS_IN_A_ROW) {
        w->st = OPSCHED_ERR_BACKEND;
        snprintf(w->msg, sizeof(w->msg), "%s:%d failed %d configurations in a row (the last: %s)",
                 sw->backend, w->device, MAX_ERRORS_IN_A_ROW, m.message);
        return w->st;
    }
    return OPSCHED_OK;
}

/* ---- workers ------------------------------------------------------------ */

static opsched_status worker_setup(worker *w)
{
    sweep *sw = w->sw;
    opsched_device_info info;
    if (opsched_ctx_create(&w->ctx) != OPSCHED_OK) {
        w->st = OPSCHED_ERR_NOMEM;
        snprintf(w->msg, sizeof(w->msg), "out of host memory");
        return w->st;
    }
    opsched_status st = opsched_device_open(w->ctx, sw->backend, w->device, &w->dev);
    if (st != OPSCHED_OK) return worker_fail(w, st, "cannot open the device");
    if ((st = opsched_device_info_get(w->dev, &info)) != OPSCHED_OK)
        return worker_fail(w, st, "device info");
    if ((st = opsched_store_open(w->ctx, sw->opts->db_path, OPSCHED_STORE_READ_WRITE,
                                 &w->store)) != OPSCHED_OK)
        return worker_fail(w, st, "database");
    if ((st = opsched_store_device(w->store, &info, &w->device_id)) != OPSCHED_OK)
        return worker_fail(w, st, "database");
    return OPSCHED_OK;
}

/* Takes items from the queue until the run ends; waits while the queue is
 * empty (the main thread plans the next batch). */
static void work(worker *w)
{
    sweep *sw = w->sw;
    pthread_mutex_lock(&sw->lock);
    while (sw->phase == 1 && !sw->failed && !stop_requested(sw)) {
        if (sw->next == sw->n_items) {
            pthread_cond_wait(&sw->cond, &sw->lock);
            continue;
        }
        item it = sw->items[sw->next++];
        sw->busy++;
        pthread_mutex_unlock(&sw->lock);
        opsched_status st = run_item(w, &it);
        pthread_mutex_lock(&sw->lock);
        sw->busy--;
        if (st != OPSCHED_OK) sw->failed = 1;
        pthread_cond_broadcast(&sw->cond);
    }
    pthread_mutex_unlock(&sw->lock);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    sweep *sw = w->sw;
    worker_setup(w);
    pthread_mutex_lock(&sw->lock);
    sw->n_ready++;
    pthread_cond_broadcast(&sw->cond);
    while (sw->phase == 0) pthread_cond_wait(&sw->cond, &sw->lock);
    int go = sw->phase == 1 && w->st == OPSCHED_OK;
    pthread_mutex_unlock(&sw->lock);
    if (go) work(w);
    return NULL;
}

static void set_phase(sweep *sw, int phase)
{
    pthread_mutex_lock(&sw->lock);
    sw->phase = phase;
    pthread_cond_broadcast(&sw->cond);
    pthread_mutex_unlock(&sw->lock);
}

static void stop_workers(sweep *sw)
{
    for (int i = 0; i < sw->n_workers; i++) {
        worker *w = &sw->workers[i];
        if (w->started) pthread_join(w->thread, NULL);
        opsched_store_close(w->store);
        opsched_device_close(w->dev);
        opsched_ctx_free(w->ctx);
    }
}

/* Starts the workers and waits until each has opened its device and
 * database; the first failure is reported on ctx. */
static opsched_status start_workers(opsched_ctx *ctx, sweep *sw)
{
    for (int i = 0; i < sw->n_workers; i++) {
        worker *w = &sw->workers[i];
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
            return OS_FAIL(ctx, OPSCHED_ERR_NOMEM, "sweep: cannot start a worker thread");
        w->started = 1;
    }
    pthread_mutex_lock(&sw->lock);
    while (sw->n_ready < sw->n_workers) pthread_cond_wait(&sw->cond, &sw->lock);
    pthread_mutex_unlock(&sw->lock);
    for (int i = 0; i < sw->n_workers; i++)
        if (sw->workers[i].st != OPSCHED_OK)
            return OS_FAIL(ctx, sw->workers[i].st, "%s", sw->workers[i].msg);
    return OPSCHED_OK;
}

/* ---- planning ----------------------------------------------------------- */

static int is_policy(const char *a)
{
    return strcmp(a, "heuristic") == 0 || strcmp(a, "find") == 0 ||
           strcmp(a, "heuristic_v7") == 0 || strcmp(a, "find_v7") == 0;
}

static opsched_status add_policy(opsched_ctx *ctx, sweep *sw, const char *name, int conv_only)
{
    for (int i = 0; i < sw->n_policies; i++)
        if (strcmp(sw->policies[i], name) == 0) return OPSCHED_OK;
    if (sw->n_policies == MAX_POLICIES)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: more than %d algorithms", MAX_POLICIES);
    int i = sw->n_policies++;
    sw->policies[i] = name;
    sw->conv_only[i] = conv_only;
    if (conv_only) sw->n_conv_only++;
    else sw->n_general++;
    opsched_measure_options o = sw->measure;
    o.plan.algo = name;
    opsched_settings_key(&o, sw->keys[i], sizeof(sw->keys[i]));
    size_t k = strlen(sw->keys[i]); /* keys[] fits 256 bytes, fused_keys[] 24 more */
    memcpy(sw->fused_keys[i], sw->keys[i], k);
    memcpy(sw->fused_keys[i] + k, ";fused=relu", sizeof(";fused=relu"));
    return OPSCHED_OK;
}

/* Expands "all" with the device's convolution algorithms and checks that
 * every named algorithm is one of them. */
static opsched_status resolve_policies(opsched_ctx *ctx, sweep *sw)
{
    const opsched_sweep_options *o = sw->opts;
    const char *const *names = NULL;
    int n_names = 0;
    OS_TRY(opsched_device_conv_algos(sw->workers[0].dev, &names, &n_names));
    int n = o->algos ? o->n_algos : opsched_sweep_spec_num_algos(sw->spec);
    for (int i = 0; i < n; i++) {
        const char *a = o->algos ? o->algos[i] : opsched_sweep_spec_algo(sw->spec, i);
        if (!a || !*a) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: an empty algorithm name");
        if (is_policy(a)) {
            OS_TRY(add_policy(ctx, sw, a, 0));
            continue;
        }
        /* The CUDA backend's own kernel of depthwise and grouped
         * convolutions, its 1x1 convolutions as cuBLASLt products or as
         * cuDNN product graphs, and its grouped ones as columns and a
         * batched product or an implicit GEMM. */
        if ((strncmp(a, "own", 3) == 0 || strcmp(a, "cublaslt") == 0 || strcmp(a, "im2col") == 0 ||
             strcmp(a, "igemm") == 0 || strcmp(a, "cudnn_matmul") == 0) &&
            strcmp(sw->backend, "cuda") == 0) {
            OS_TRY(add_policy(ctx, sw, a, 1));
            continue;
        }
        if (strcmp(a, "all") == 0) {
            OS_TRY(add_policy(ctx, sw, "heuristic", 0));
            OS_TRY(add_policy(ctx, sw, "find", 0));
            for (int k = 0; k < n_names; k++) OS_TRY(add_policy(ctx, sw, names[k], 1));
            continue;
        }
        int known = 0;
        char list[512] = "";
        for (int k = 0; k < n_names; k++) {
            known |= strcmp(names[k], a) == 0;
            strncat(list, k ? ", " : "", sizeof(list) - strlen(list) - 1);
            strncat(list, names[k], sizeof(list) - strlen(list) - 1);
        }
        if (!known)
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "sweep: '%s' is not a policy (heuristic, find, all) nor a convolution "
                           "algorithm of the %s backend (%s)", a, sw->backend,
                           n_names ? list : "it has none");
        OS_TRY(add_policy(ctx, sw, a, 1));
    }
    if (!sw->n_policies) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: no algorithm policy");
    return OPSCHED_OK;
}

/* Whether any device of the run has this item (resume). */
static opsched_status already_measured(sweep *sw, opsched_store *store, int64_t config_id,
                                       int policy, int fused, int *found)
{
    const char *key = fused ? sw->fused_keys[policy] : sw->keys[policy];
    *found = 0;
    for (int i = 0; i < sw->n_workers && !*found; i++)
        OS_TRY(opsched_store_has(store, sw->workers[i].device_id, config_id, key, found));
    return OPSCHED_OK;
}

static opsched_status copy_graph_error(opsched_ctx *ctx, const opsched_graph *g, opsched_status st)
{
    char msg[768];
    snprintf(msg, sizeof(msg), "%s", opsched_ctx_last_error(opsched_graph_ctx(g)));
    return OS_FAIL(ctx, st, "%s", msg);
}

static int cmp_items(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->flops != y->flops) return x->flops > y->flops ? -1 : 1;
    if (x->config != y->config) return x->config < y->config ? -1 : 1;
    return x->policy - y->policy;
}

/* Frees the batch in hand; no item of it may be in flight. */
static void free_batch(sweep *sw)
{
    pthread_mutex_lock(&sw->lock);
    sw->n_items = 0;
    sw->next = 0;
    pthread_mutex_unlock(&sw->lock);
    for (size_t i = 0; i < sw->n_batch; i++) {
        opsched_graph_free(sw->batch[i].graph);
        free(sw->batch[i].signature);
    }
    sw->n_batch = 0;
}

/* Walks on to the next configurations of the shard (batch_size at most),
 * registers them in one transaction, and queues their items not measured
 * yet, longest first.  No item is in flight and the queue is empty (the
 * workers wait) until the batch is published at the end. */
static opsched_status plan_batch(opsched_ctx *ctx, sweep *sw, opsched_store *store,
                                 int64_t *skipped)
{
    const opsched_sweep_options *o = sw->opts;
    int shards = o->shard_count > 1 ? o->shard_count : 1;
    size_t n_items = 0;
    opsched_status st = OPSCHED_OK;
    *skipped = 0;
    free_batch(sw);
    OS_TRY(opsched_store_batch_begin(store));
    while (sw->n_batch < sw->batch_size) {
        OS_TRY_GOTO(st, os_sweep_walk_next(&sw->walk), done);
        if (!sw->walk.graph) {
            sw->walk_done = 1;
            break;
        }
        if (sw->walk.rank % shards != o->shard_index) continue;
        batch_config *c = &sw->batch[sw->n_batch];
        OS_TRY_GOTO(st, os_strdup(ctx, sw->walk.signature, &c->signature), done);
        c->graph = sw->walk.graph; /* taken from the walk */
        sw->walk.graph = NULL;
        c->fused = sw->walk.fused;
        int config = (int)sw->n_batch++;
        const opsched_node *n = opsched_graph_node(c->graph, 0);
        opsched_config_record rec;
        int64_t config_id = 0;
        st = opsched_config_record_from_node(c->graph, 0, &rec);
        if (st != OPSCHED_OK) {
            st = copy_graph_error(ctx, c->graph, st);
            goto done;
        }
        OS_TRY_GOTO(st, opsched_store_config(store, &rec, &config_id), done);
        for (int p = 0; p < sw->n_policies; p++) {
            if (sw->conv_only[p] && n->op != OPSCHED_OP_CONV) continue;
            int found = 0;
            if (o->resume)
                OS_TRY_GOTO(st, already_measured(sw, store, config_id, p, c->fused, &found), done);
            if (found) {
                ++*skipped;
                continue;
            }
            OS_TRY_GOTO(st, os_grow(ctx, (void **)&sw->items, &sw->cap_items, n_items + 1,
                                    sizeof(*sw->items)), done);
            sw->items[n_items++] = (item){.config = config, .policy = p, .config_id = config_id,
                                          .flops = n->cost.flops};
        }
    }
    if (n_items) qsort(sw->items, n_items, sizeof(*sw->items), cmp_items);
    st = opsched_store_batch_commit(store);
done:
    opsched_store_batch_rollback(store);
    pthread_mutex_lock(&sw->lock);
    sw->res.skipped += *skipped;
    if (st == OPSCHED_OK) sw->n_items = n_items;
    pthread_mutex_unlock(&sw->lock);
    return st;
}

/* ---- the run ------------------------------------------------------------ */

static opsched_status check_options(opsched_ctx *ctx, const opsched_sweep_spec *spec,
                                    const opsched_sweep_options *o)
{
    if (!spec || !o) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: no spec or options");
    if (!o->db_path || !*o->db_path)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: no database file");
    int shards = o->shard_count > 1 ? o->shard_count : 1;
    if (o->shard_count < 0 || o->shard_index < 0 || o->shard_index >= shards)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: shard %d of %d does not exist "
                       "(shards are 0 .. count-1)", o->shard_index, o->shard_count);
    if (o->n_devices < 0 || o->n_devices > MAX_DEVICES || (o->n_devices > 0 && !o->devices))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: 1 to %d devices", MAX_DEVICES);
    if (o->algos && o->n_algos <= 0)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: an empty list of algorithms");
    if (o->batch_size < 0 || o->batch_size > MAX_BATCH)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: a batch of %d configurations (1 to "
                       "%d; 0 for %d)", o->batch_size, MAX_BATCH, BATCH);
    for (int i = 0; i < o->n_devices; i++) {
        if (o->devices[i] < 0)
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: device %d does not exist",
                           o->devices[i]);
        for (int k = 0; k < i; k++)
            if (o->devices[k] == o->devices[i])
                return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                               "sweep: device %d is listed twice (one worker per device)",
                               o->devices[i]);
    }
    return OPSCHED_OK;
}

/* The first backend that sees a device, as the tool's default. */
static const char *default_backend(opsched_ctx *ctx)
{
    for (int b = 0; b < opsched_backend_count(); b++) {
        int n = 0;
        if (opsched_device_count(ctx, opsched_backend_name(b), &n) == OPSCHED_OK && n > 0)
            return opsched_backend_name(b);
        opsched_ctx_clear_error(ctx);
    }
    return opsched_backend_count() ? opsched_backend_name(0) : "none";
}

/* Lets the workers take the batch in hand and waits until its queue is
 * empty with no item in flight, or a failure or a stop request ended it
 * (then once the items in flight are done).  The stop flag is set by a
 * signal handler, which wakes nobody: hence the timed wait. */
static void run_batch(sweep *sw)
{
    pthread_mutex_lock(&sw->lock);
    pthread_cond_broadcast(&sw->cond);
    while (sw->busy > 0 || (sw->next < sw->n_items && !sw->failed && !stop_requested(sw))) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&sw->cond, &sw->lock, &ts);
    }
    pthread_mutex_unlock(&sw->lock);
}

/* Plans and runs batch after batch, then records how the run ended. */
static opsched_status execute(opsched_ctx *ctx, sweep *sw, opsched_store *store)
{
    opsched_status st = OPSCHED_OK;
    int first = 1;
    set_phase(sw, 1);
    while (!sw->walk_done && !sw->failed && !stop_requested(sw)) {
        int64_t skipped = 0;
        if ((st = plan_batch(ctx, sw, store, &skipped)) != OPSCHED_OK) break;
        if (first || skipped) {
            pthread_mutex_lock(&sw->lock);
            report(sw, -1, NULL);
            pthread_mutex_unlock(&sw->lock);
        }
        first = 0;
        run_batch(sw);
    }
    set_phase(sw, 2);
    for (int i = 0; i < sw->n_workers; i++) {
        worker *w = &sw->workers[i];
        if (w->started) pthread_join(w->thread, NULL);
        w->started = 0;
    }
    sw->res.remaining = sw->res.total - sw->res.skipped - sw->res.measured;
    const char *how = "done";
    for (int i = 0; i < sw->n_workers && st == OPSCHED_OK; i++)
        if (sw->workers[i].st != OPSCHED_OK)
            st = OS_FAIL(ctx, sw->workers[i].st, "%s", sw->workers[i].msg);
    if (st != OPSCHED_OK)
        how = "failed";
    else if (sw->res.remaining > 0)
        how = "interrupted";
    opsched_status end = opsched_store_end_run(store, sw->run_id, how);
    if (st == OPSCHED_OK && end != OPSCHED_OK) st = end;
    if (st == OPSCHED_OK && sw->res.remaining > 0)
        st = OS_FAIL(ctx, OPSCHED_ERR_INTERRUPTED,
                     "sweep interrupted with %lld of %lld items left; run it again to measure them",
                     (long long)sw->res.remaining, (long long)sw->res.total);
    return st;
}

opsched_status opsched_sweep_run(opsched_ctx *ctx, const opsched_sweep_spec *spec,
                                 const opsched_sweep_options *opts, opsched_sweep_result *result)
{
    if (!result) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: no place for the result");
    memset(result, 0, sizeof(*result));
    OS_TRY(check_options(ctx, spec, opts));
    sweep *sw = calloc(1, sizeof(*sw));
    if (!sw) return OS_NOMEM(ctx);
    sw->batch_size = opts->batch_size > 0 ? (size_t)opts->batch_size : BATCH;
    sw->batch = calloc(sw->batch_size, sizeof(*sw->batch));
    if (!sw->batch) {
        free(sw);
        return OS_NOMEM(ctx);
    }
    opsched_store *store = NULL;
    opsched_status st = OPSCHED_OK;
    int run_open = 0;
    sw->spec = spec;
    sw->opts = opts;
    sw->measure = opts->measure ? *opts->measure : *opsched_sweep_spec_measure(spec);
    sw->measure.plan.algo = NULL;
    sw->backend = opts->backend ? opts->backend : default_backend(ctx);
    sw->n_workers = opts->n_devices > 0 ? opts->n_devices : 1;
    for (int i = 0; i < sw->n_workers; i++) {
        sw->workers[i].sw = sw;
        sw->workers[i].device = opts->n_devices > 0 ? opts->devices[i] : 0;
    }
    os_sweep_walk_init(&sw->walk, spec, ctx, 0);
    pthread_mutex_init(&sw->lock, NULL);
    pthread_cond_init(&sw->cond, NULL);

    OS_TRY_GOTO(st, opsched_store_open(ctx, opts->db_path, OPSCHED_STORE_READ_WRITE, &store), done);
    OS_TRY_GOTO(st, start_workers(ctx, sw), done);
    OS_TRY_GOTO(st, resolve_policies(ctx, sw), done);
    opsched_run_info info = {.command = opts->command, .spec = opsched_sweep_spec_text(spec),
                             .shard_index = opts->shard_index,
                             .shard_count = opts->shard_count > 1 ? opts->shard_count : 1};
    OS_TRY_GOTO(st, opsched_store_begin_run(store, &info, &sw->run_id), done);
    run_open = 1;
    sw->t0 = now_s();
    /* The shard's size from the spec's index: no walk needed. */
    int64_t configs = 0, convs = 0;
    os_sweep_shard_census(spec, opts->shard_index, info.shard_count, &configs, &convs);
    sw->res.total = configs * sw->n_general + convs * sw->n_conv_only;
    st = execute(ctx, sw, store);
    run_open = 0;
done:
    if (run_open) opsched_store_end_run(store, sw->run_id, "failed");
    set_phase(sw, 2);
    stop_workers(sw);
    free_batch(sw);
    os_sweep_walk_free(&sw->walk);
    sw->res.run_id = sw->run_id;
    sw->res.elapsed_s = sw->t0 > 0 ? now_s() - sw->t0 : 0;
    if (sw->run_id) sw->res.remaining = sw->res.total - sw->res.skipped - sw->res.measured;
    *result = sw->res;
    opsched_store_close(store);
    pthread_cond_destroy(&sw->cond);
    pthread_mutex_destroy(&sw->lock);
    free(sw->batch);
    free(sw->items);
    free(sw);
    return st;
}
