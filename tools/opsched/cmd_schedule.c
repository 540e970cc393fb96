/*
 * cmd_schedule.c - `opsched schedule <model>`: searches an inter-operator
 * schedule (sequential, greedy, or the IOS dynamic program) under
 * predicted or measured stage costs, prints it and writes the schedule
 * file.
 *
 * Predicted costs (the default) need no GPU: each operator's cost comes
 * from the predictor over a measurement database (exact measurements,
 * learned models, roofline), and concurrent groups are combined by the
 * contention model fitted to the stages the database holds measured (its
 * defaults, said as such, when there are none).
 *
 * Measured costs run every distinct stage on the device (the schedule
 * executor's stage measurer) and keep it in the database: first every
 * operator alone (the single-op costs, which also bound the search: a
 * candidate that cannot beat the best found is not run), then the stages
 * the search asks for.  A second search on the same device runs nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "args.h"

static const char schedule_usage[] =
    "usage: opsched schedule <zoo-name|file.onnx> [options]\n"
    "\n"
    "Searches which operators run concurrently (groups on their own streams) or merged\n"
    "(convolutions sharing an input), stage after stage; prints the search time, the\n"
    "states explored, the stage evaluations, the predicted latency and the schedule.\n"
    "With --cost predict the defaults (math tf32, layout auto, BatchNormalization\n"
    "folded) are those of opsched predict; with --cost measure math and layout are\n"
    "the backend's fastest (tf32 and nhwc on a GPU, fp32 and nchw on the CPU).\n"
    "--format csv writes one row per stage; json the summary and the stages.\n";

enum {
    SC_SEARCHER, SC_COST, SC_R, SC_S, SC_MAX_BLOCK, SC_NO_MERGE, SC_BOUND, SC_STAGES_TARGET,
    SC_VERIFY, SC_STAGE_MS, SC_STAGE_SAMPLE, SC_OUTPUT, SC_QUIET, SC_DB, SC_DATA, SC_TARGET,
    SC_BACKEND, SC_DEVICE, SC_MATH, SC_LAYOUT, SC_ALGO, SC_NO_TRAIN
};

static const tool_opt search_opts[] = {
    {"searcher", 0, "S", "sequential, greedy or ios (default ios)", SC_SEARCHER},
    {"cost", 0, "C",
     "predict (default): operators predicted from the database,\ncombined by the contention "
     "model fitted to measured stages;\nmeasure: every distinct stage run on the device, kept "
     "in the\ndatabase so the next search runs nothing",
     SC_COST},
    {"r", 0, "N", "IOS: operators per group (default 3)", SC_R},
    {"s", 0, "N", "IOS and greedy: groups per stage (default 8)", SC_S},
    {"max-block-ops", 0, "N", "IOS: operators per part of a block (default 50, at most 64)",
     SC_MAX_BLOCK},
    {"no-merge", 0, NULL, "IOS: no merged convolutions", SC_NO_MERGE},
    {"output", 'o', "FILE", "write the schedule (JSON, docs/SCHEDULE.md)", SC_OUTPUT},
    {"quiet", 0, NULL, "print the summary only, not every stage", SC_QUIET},
    {NULL, 0, NULL, NULL, 0}};

static const tool_opt settings_opts[] = {
    {"math", 0, "M", "auto (default: predict tf32; measure tf32 on a GPU, fp32\non the CPU), "
                     "fp32, tf32, fp16 or bf16",
     SC_MATH},
    {"layout", 0, "L", "auto (default: predict the layout the database holds for\nthe device; "
                       "measure nhwc on cuda, nchw on cpu), nchw\nor nhwc",
     SC_LAYOUT},
    {"algo", 0, "POLICY", "convolution algorithm policy (default heuristic)", SC_ALGO},
    {NULL, 0, NULL, NULL, 0}};

static const tool_opt predict_cost_opts[] = {
    {"db", 0, "FILE", "the measurement database; predict: default the shipped\ndata set of "
                      "--data; measure: where stages are kept",
     SC_DB},
    {"data", 0, "NAME", "predict without --db: the shipped data set NAME (h100)", SC_DATA},
    {"target", 0, "NAME|ID", "predict: the device in the database, id or part of its\nname "
                             "(default: the only one measured)",
     SC_TARGET},
    {"stages-target", 0, "ID",
     "predict: fit the contention model to the stages measured\non this device (its id in the "
     "database; default: the\npredicting device), e.g. another unit of the same GPU",
     SC_STAGES_TARGET},
    {"no-fit", 0, NULL, "predict: use saved models only (as opsched predict\n--no-fit)",
     SC_NO_TRAIN},
    {NULL, 0, NULL, NULL, 0}};

static const tool_opt measure_cost_opts[] = {
    {"backend", 0, "B", "cuda or cpu (default: cuda when a GPU is present)", SC_BACKEND},
    {"device", 0, "N", "device index within the backend (default 0)", SC_DEVICE},
    {"bound", 0, "F",
     "skip a candidate stage that cannot beat the best\nfound even if it ran in F x its longest "
     "group's operators\nalone (default 0.9; off: cost every candidate)",
     SC_BOUND},
    {"verify", 0, "on|off",
     "ios and greedy: run the found schedule whole against\nthe sequential and greedy ones and "
     "keep the fastest (default\non): stage costs are measured stage by stage and cannot see\n"
     "what happens between stages",
     SC_VERIFY},
    {"stage-ms", 0, "W,M",
     "warm-up and sampling per stage in ms (default 0,0:\nthree replays of warm-up, then "
     "exactly 10 samples; M > 0:\nsampled for at least M ms)",
     SC_STAGE_MS},
    {"stage-sample-us", 0, "U",
     "a stage replayed back to back in one device graph\nuntil a sample lasts about U us "
     "(default 50)",
     SC_STAGE_SAMPLE},
    {NULL, 0, NULL, NULL, 0}};

/* Where the report goes: stdout, or stderr when stdout carries --format
 * csv or json. */
static FILE *rep;

typedef struct sched_args {
    tool_model_opts mo;
    opsched_search_options so;
    const char *cost;
    const char *db, *data, *target, *algo, *output, *backend;
    int index, index_set;
    double bound; /* 0: off */
    double stage_warmup_ms, stage_min_ms; /* --stage-ms */
    int stage_set;                        /* 0: the measurer's defaults */
    double stage_sample_us;               /* 0: the measurer's (100) */
    int64_t stages_target;                /* 0: the predicting device */
    opsched_math math;
    opsched_layout layout;
    int math_auto, layout_auto;           /* resolved once the cost is known */
    int quiet;
    int no_train; /* predict: saved models only */
    int verify; /* measure: time the found schedule whole against sequential, greedy */
    tool_format fmt;
} sched_args;

static int sched_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    sched_args *a = dest;
    int64_t iv;
    char *end = NULL;
    switch (o->id) {
    case SC_SEARCHER:
        if (opsched_searcher_from_name(v, &a->so.searcher) != OPSCHED_OK)
            return tool_usage_error(cmd, "--searcher wants sequential, greedy or ios, got '%s'", v);
        return TOOL_EXIT_OK;
    case SC_COST:
        if (strcmp(v, "predict") != 0 && strcmp(v, "measure") != 0)
            return tool_usage_error(cmd, "--cost wants predict or measure, got '%s'", v);
        a->cost = v;
        return TOOL_EXIT_OK;
    case SC_R:
    case SC_S:
    case SC_MAX_BLOCK:
        if (!tool_parse_int(v, 1, 64, &iv))
            return tool_usage_error(cmd, "--%s wants 1 to 64, got '%s'", o->name, v);
        if (o->id == SC_R) a->so.r = (int)iv;
        else if (o->id == SC_S) a->so.s = (int)iv;
        else a->so.max_block_ops = (int)iv;
        return TOOL_EXIT_OK;
    case SC_NO_MERGE: a->so.no_merge = 1; return TOOL_EXIT_OK;
    case SC_DB: a->db = v; return TOOL_EXIT_OK;
    case SC_DATA: a->data = v; return TOOL_EXIT_OK;
    case SC_TARGET: a->target = v; return TOOL_EXIT_OK;
    case SC_MATH: return tool_arg_math(cmd, "--math", v, &a->math, &a->math_auto);
    case SC_LAYOUT: return tool_arg_layout(cmd, "--layout", v, &a->layout, &a->layout_auto);
    case SC_ALGO: a->algo = v; return TOOL_EXIT_OK;
    case SC_OUTPUT: a->output = v; return TOOL_EXIT_OK;
    case SC_BACKEND: a->backend = v; return TOOL_EXIT_OK;
    case SC_DEVICE:
        if (!tool_parse_int(v, 0, 1024, &iv))
            return tool_usage_error(cmd, "--device wants an index within the backend, got '%s'", v);
        a->index = (int)iv;
        a->index_set = 1;
        return TOOL_EXIT_OK;
    case SC_BOUND: {
        double f = strtod(v, &end);
        if (strcmp(v, "off") == 0) a->bound = 0;
        else if (end != v && !*end && f > 0 && f <= 1) a->bound = f;
        else return tool_usage_error(cmd, "--bound wants a factor in (0, 1] or off, got '%s'", v);
        return TOOL_EXIT_OK;
    }
    case SC_STAGE_MS: {
        double w = strtod(v, &end), m = -1;
        if (end != v && *end == ',') m = strtod(end + 1, &end);
        if (!(w >= 0 && m >= 0 && !*end))
            return tool_usage_error(cmd, "--stage-ms wants WARMUP,MIN in ms, e.g. 2,3, got '%s'", v);
        a->stage_warmup_ms = w;
        a->stage_min_ms = m;
        a->stage_set = 1;
        return TOOL_EXIT_OK;
    }
    case SC_STAGES_TARGET:
        if (!tool_parse_int(v, 1, INT64_MAX, &a->stages_target))
            return tool_usage_error(cmd, "--stages-target wants a device id of the database, got "
                                         "'%s'", v);
        return TOOL_EXIT_OK;
    case SC_QUIET: a->quiet = 1; return TOOL_EXIT_OK;
    case SC_NO_TRAIN: a->no_train = 1; return TOOL_EXIT_OK;
    case SC_STAGE_SAMPLE: {
        double us = strtod(v, &end);
        if (!(end != v && !*end && us >= 10 && us <= 100000))
            return tool_usage_error(cmd, "--stage-sample-us wants 10 to 100000, got '%s'", v);
        a->stage_sample_us = us;
        return TOOL_EXIT_OK;
    }
    default: return tool_arg_on_off(cmd, "--verify", v, &a->verify);
    }
}

static int parse_args(int argc, char **argv, sched_args *a)
{
    const tool_optgroup groups[] = {
        {"search options", search_opts, sched_opt, a},
        {"settings options", settings_opts, sched_opt, a},
        {"model options", tool_model_optlist, tool_model_opt, &a->mo},
        {"--cost predict options", predict_cost_opts, sched_opt, a},
        {"--cost measure options", measure_cost_opts, sched_opt, a},
        {"output options", tool_format_optlist, tool_format_opt, &a->fmt}};
    const tool_cli cli = {"schedule", schedule_usage, NULL, groups, 6, 1, "model"};
    const char *pos[1];
    int n_pos = 0;
    int rc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (rc != TOOL_EXIT_OK) return rc;
    if (!n_pos) return tool_usage_error("schedule", "which model? give a zoo name or an .onnx file");
    a->mo.model = pos[0];
    return TOOL_EXIT_OK;
}

/* ---- costs -------------------------------------------------------------- */

/* What the cost function needs, and what the report says about it. */
typedef struct cost_setup {
    char db_path[1024];
    opsched_predictor *pred;
    opsched_device *dev;
    opsched_stage_measurer *measurer;
    opsched_exec_options xo; /* measure: how stages and whole schedules run */
    opsched_stage_cache cache;
    int n_singletons;
    opsched_store *store;
    int64_t device_id;
    char device[160];
    double *node_ms;
    int n_by_source[OPSCHED_SOURCE_COUNT];
    opsched_predicted_cost pc;
} cost_setup;

static const char *layout_name(opsched_layout l)
{
    return l == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw";
}

/* Every node's cost from the predictor, composed as `opsched predict`
 * composes a network in graph mode (opsched_predicted_node_costs): a
 * convolution carries the Relu fused into it, views and fused Relus cost
 * nothing, so the sequential schedule's latency is predict's. */
static int predict_nodes(opsched_ctx *ctx, const opsched_graph *g, cost_setup *c)
{
    opsched_predict_options po;
    opsched_predict_options_default(&po);
    po.mode = OPSCHED_PREDICT_GRAPH;
    po.fuse = 1;
    opsched_network_prediction *np = NULL;
    opsched_status st = opsched_predict_network(c->pred, g, &po, &np);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "predict the layers");
    int n = opsched_graph_num_nodes(g);
    for (int i = 0; i < n; i++) c->n_by_source[np->layers[i].p.source]++;
    c->node_ms = calloc((size_t)n + 1, sizeof(double));
    if (!c->node_ms) {
        opsched_network_prediction_free(np);
        fprintf(stderr, "opsched: out of memory\n");
        return TOOL_EXIT_FAIL;
    }
    st = opsched_predicted_node_costs(g, np, c->node_ms, n);
    opsched_network_prediction_free(np);
    if (st == OPSCHED_ERR_NOT_FOUND) {
        fprintf(stderr,
                "opsched schedule: %s: measure it (opsched sweep --for-model %s --db FILE), or "
                "calibrate the device (opsched devices --calibrate --db FILE)\n",
                opsched_ctx_last_error(ctx), opsched_graph_name(g));
        return TOOL_EXIT_FAIL;
    }
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "predict the layers");
    return TOOL_EXIT_OK;
}

static int setup_predict(opsched_ctx *ctx, const sched_args *a, const opsched_graph *g,
                         cost_setup *c)
{
    opsched_predictor_options o;
    opsched_predictor_options_default(&o);
    o.device = a->target;
    o.train = !a->no_train;
    o.math = a->math;
    o.layout = a->layout;
    if (a->algo) o.algo_policy = a->algo;
    opsched_status st = opsched_predictor_open(ctx, c->db_path, &o, &c->pred);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, c->db_path);
    opsched_predictor_info info;
    st = opsched_predictor_info_get(c->pred, &info);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "predictor");
    c->device_id = info.device.id;
    snprintf(c->device, sizeof(c->device), "%s:%s", info.device.backend, info.device.name);
    int rc = predict_nodes(ctx, g, c);
    if (rc != TOOL_EXIT_OK) return rc;
    c->pc.node_ms = c->node_ms;
    c->pc.n_nodes = opsched_graph_num_nodes(g);
    opsched_contention_defaults(&c->pc.model);
    st = opsched_store_open(ctx, c->db_path, OPSCHED_STORE_READ_ONLY, &c->store);
    if (st == OPSCHED_OK)
        st = opsched_contention_fit_store(c->store, ctx,
                                          a->stages_target > 0 ? a->stages_target : c->device_id,
                                          opsched_math_name(a->math),
                                          layout_name(a->layout), o.algo_policy, &c->pc.model);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "fit the contention model");
    return TOOL_EXIT_OK;
}

static int64_t graph_batch(const opsched_graph *g)
{
    if (opsched_graph_num_inputs(g) < 1) return 0;
    const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_input(g, 0));
    return t->shape.ndim >= 1 ? t->shape.d[0] : 0;
}

/* Opens the device, the measurer and (with --db) the database; measures
 * every operator alone, as a stage of its own: the single-op costs stored
 * with every stage and the search's bound. */
static int setup_measure(opsched_ctx *ctx, const sched_args *a, const opsched_graph *g,
                         cost_setup *c)
{
    tool_measure_args ma;
    tool_measure_args_init(&ma);
    ma.backend = a->backend;
    ma.device = a->index;
    opsched_status st = tool_open_device(ctx, &ma, &c->dev);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "open the device");
    opsched_device_info info;
    st = opsched_device_info_get(c->dev, &info);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "device");
    snprintf(c->device, sizeof(c->device), "%s:%s", info.backend, info.name);
    opsched_stage_measure_options mo;
    memset(&mo, 0, sizeof(mo));
    mo.exec.plan.math = a->math;
    mo.exec.plan.layout = a->layout;
    mo.exec.plan.algo = a->algo;
    mo.exec.plan.fuse_activation = 1;
    if (a->stage_set) { /* else the measurer's defaults */
        mo.timing.warmup_ms = a->stage_warmup_ms;
        mo.timing.min_ms = a->stage_min_ms;
        mo.timing.iters = 10;
    }
    mo.sample_min_us = a->stage_sample_us;
    c->xo = mo.exec;
    st = opsched_stage_measurer_create(c->dev, &mo, &c->measurer);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "stage measurer");
    if (a->db) {
        snprintf(c->db_path, sizeof(c->db_path), "%s", a->db);
        st = opsched_store_open(ctx, a->db, OPSCHED_STORE_READ_WRITE, &c->store);
        if (st == OPSCHED_OK) st = opsched_store_device(c->store, &info, &c->device_id);
        if (st != OPSCHED_OK) return tool_fail(ctx, st, a->db);
    }
    opsched_stage_cache *k = &c->cache;
    k->store = c->store;
    k->device_id = c->device_id;
    k->batch = graph_batch(g);
    k->math = opsched_math_name(a->math);
    k->layout = layout_name(a->layout);
    k->algo_policy = a->algo ? a->algo : "heuristic";
    k->measure = opsched_stage_cost_measured;
    k->measure_user = c->measurer;

    int n = opsched_graph_num_nodes(g);
    c->node_ms = calloc((size_t)n + 1, sizeof(double));
    if (!c->node_ms) {
        fprintf(stderr, "opsched: out of memory\n");
        return TOOL_EXIT_FAIL;
    }
    /* The sequential schedule is one operator (with its fused Relu) per
     * stage: measuring it measures every operator alone. */
    opsched_search_options so = {.searcher = OPSCHED_SEARCH_SEQUENTIAL,
                                 .cost = opsched_stage_cost_cached, .user = k};
    opsched_schedule *seq = NULL;
    st = opsched_schedule_search(g, &so, &seq, NULL);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "measure the operators alone");
    for (int i = 0; i < seq->n_stages; i++)
        c->node_ms[seq->stages[i].groups[0].nodes[0]] = seq->stages[i].ms;
    c->n_singletons = seq->n_stages;
    opsched_schedule_free(seq);
    k->node_ms = c->node_ms;
    k->n_nodes = n;
    /* each later stage's sample length is set from these, without a probe */
    opsched_stage_measurer_set_node_costs(c->measurer, c->node_ms, n);
    return TOOL_EXIT_OK;
}

static void cost_release(cost_setup *c)
{
    opsched_stage_measurer_free(c->measurer);
    opsched_device_close(c->dev);
    opsched_predictor_free(c->pred);
    opsched_store_close(c->store);
    free(c->node_ms);
}

/* ---- the report ------------------------------------------------------------ */

static void print_line(const char *line, void *user)
{
    (void)user;
    fprintf(rep, "%s\n", line);
}

static void print_measured(const sched_args *a, const opsched_graph *g, const cost_setup *c)
{
    opsched_stage_measurer_stats ms;
    opsched_stage_measurer_stats_get(c->measurer, &ms);
    fprintf(rep, "%s: %d nodes; cost measure on %s, %s %s, algo %s, bn %s\n",
            opsched_graph_name(g), opsched_graph_num_nodes(g), c->device,
            opsched_math_name(a->math), layout_name(a->layout), a->algo ? a->algo : "heuristic",
            a->mo.fold_bn ? "fold" : "keep");
    fprintf(rep, "  %d operators alone; stages: %lld measured now (%lld cannot run), %lld from %s; "
           "%.1f s measuring\n",
           c->n_singletons, (long long)c->cache.measured, (long long)c->cache.unsupported,
           (long long)c->cache.hits, c->store ? c->db_path : "nowhere (no --db)", ms.seconds);
    if (ms.measured > 0) {
        fprintf(rep, "  measuring: %.1f s copying stages and building executors, %.1f s capturing, "
               "%.1f s timing (%.1f ms per stage)",
               ms.build_seconds, ms.capture_seconds, ms.timing_seconds,
               1e3 * ms.seconds / (double)ms.measured);
        if (ms.plan_cache_hits + ms.plan_cache_misses > 0) /* backends with a plan cache */
            fprintf(rep, "; convolution plans: %lld reused, %lld built", (long long)ms.plan_cache_hits,
                   (long long)ms.plan_cache_misses);
        fprintf(rep, "\n");
    }
}

static void print_setup(const sched_args *a, const opsched_graph *g, const cost_setup *c)
{
    fprintf(rep, "%s: %d nodes; cost %s from %s, device %s, %s %s, algo %s, bn %s\n",
            opsched_graph_name(g), opsched_graph_num_nodes(g), a->cost, c->db_path, c->device,
            opsched_math_name(a->math), layout_name(a->layout), a->algo ? a->algo : "heuristic",
            a->mo.fold_bn ? "fold" : "keep");
    fprintf(rep, "  operators predicted: %d exact, %d learned, %d roofline (%d views or fused)\n",
           c->n_by_source[OPSCHED_SOURCE_EXACT], c->n_by_source[OPSCHED_SOURCE_LEARNED],
           c->n_by_source[OPSCHED_SOURCE_ROOFLINE], c->n_by_source[OPSCHED_SOURCE_VIEW]);
    const opsched_contention *m = &c->pc.model;
    fprintf(rep, "  contention: capacity %.2f groups, %.1f us per stage, %.1f us per extra stream ",
           m->capacity, 1e3 * m->stage_ms, 1e3 * m->stream_ms);
    if (m->n_fit > 0)
        fprintf(rep, "(fitted to %d measured stages, rms %.1f%%)\n", m->n_fit, 100 * m->fit_rms_rel);
    else
        fprintf(rep, "(DEFAULTS: no measured stages in the database; run a measured search to fit)\n");
    fprintf(rep, "  merged convolutions: x%.2f of their members ", m->merge_factor);
    if (m->n_merge_fit > 0) fprintf(rep, "(fitted to %d measured merges)\n", m->n_merge_fit);
    else fprintf(rep, "(DEFAULT: fewer than two measured merges)\n");
}

/* Sequential and greedy under the same cost, for comparison. */
static void print_baselines(opsched_ctx *ctx, const opsched_graph *g, const sched_args *a,
                            const opsched_search_options *o)
{
    double ms[2] = {NAN, NAN};
    for (int i = 0; i < 2; i++) {
        opsched_search_options b = *o;
        b.searcher = i == 0 ? OPSCHED_SEARCH_SEQUENTIAL : OPSCHED_SEARCH_GREEDY;
        if (b.searcher == a->so.searcher) continue;
        opsched_schedule *s = NULL;
        if (opsched_schedule_search(g, &b, &s, NULL) == OPSCHED_OK) ms[i] = s->predicted_ms;
        else opsched_ctx_clear_error(ctx);
        opsched_schedule_free(s);
    }
    if (!isnan(ms[0])) fprintf(rep, "  sequential under the same cost: %.4f ms\n", ms[0]);
    if (!isnan(ms[1])) fprintf(rep, "  greedy under the same cost: %.4f ms\n", ms[1]);
}

/* --verify: the found schedule run whole against the greedy and the
 * sequential one; *s becomes the fastest (its own searcher named in the
 * file), so what is written is never slower than sequential as measured
 * here. */
static int verify_whole(opsched_ctx *ctx, const sched_args *a, const opsched_graph *g,
                        cost_setup *c, opsched_schedule **s)
{
    opsched_whole_check w;
    opsched_status st = opsched_schedule_keep_fastest(c->dev, g, &a->so, &c->xo, s, &w);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "run the schedules whole");
    fprintf(rep, "verify: run whole (%.1f s):", w.seconds);
    for (int i = 0; i < w.n; i++)
        fprintf(rep, " %s %.4f ms%s", opsched_searcher_name(w.searcher[i]), w.ms[i],
               i + 1 < w.n ? "," : "");
    fprintf(rep, "; kept %s%s\n", opsched_searcher_name(w.searcher[w.kept]),
           w.kept == 0 ? "" : " (the searched schedule was slower as a whole)");
    return TOOL_EXIT_OK;
}

static void append(char *buf, size_t n, const char *sep, const char *name)
{
    size_t used = strlen(buf);
    if (used + 1 < n) snprintf(buf + used, n - used, "%s%s", sep, name);
}

/* A stage's nodes: groups joined by '|', a group's nodes by '+'. */
static void stage_nodes(const opsched_stage *st, const opsched_graph *g, char *buf, size_t n)
{
    buf[0] = '\0';
    if (st->kind == OPSCHED_STAGE_MERGE) {
        for (int m = 0; m < st->merge.n_members; m++)
            append(buf, n, m ? "+" : "", opsched_graph_node(g, st->merge.members[m].node)->name);
        return;
    }
    for (int k = 0; k < st->n_groups; k++)
        for (int j = 0; j < st->groups[k].n_nodes; j++)
            append(buf, n, j ? "+" : k ? "|" : "",
                   opsched_graph_node(g, st->groups[k].nodes[j])->name);
}

/* One row per stage; a stage not timed (ms < 0) has an empty ms field. */
static opsched_status print_csv(opsched_ctx *ctx, const opsched_schedule *s, const opsched_graph *g)
{
    static char nodes[65536];
    opsched_csv_writer *w = NULL;
    opsched_status st = opsched_csv_writer_create(ctx, stdout, &w);
    if (st == OPSCHED_OK) st = opsched_csv_header(w, "stage,kind,groups,ms,nodes");
    for (int i = 0; st == OPSCHED_OK && i < s->n_stages; i++) {
        const opsched_stage *sg = &s->stages[i];
        int merge = sg->kind == OPSCHED_STAGE_MERGE;
        stage_nodes(sg, g, nodes, sizeof(nodes));
        opsched_csv_int(w, i);
        opsched_csv_str(w, merge ? "merge" : "concurrent");
        opsched_csv_int(w, merge ? 1 : sg->n_groups);
        if (sg->ms >= 0) opsched_csv_double(w, sg->ms, "%.6g");
        else opsched_csv_empty(w);
        opsched_csv_str(w, nodes);
        st = opsched_csv_end_row(w);
    }
    opsched_csv_writer_free(w);
    return st;
}

static int print_json(const sched_args *a, const cost_setup *c, const opsched_schedule *s,
                      const opsched_graph *g, const opsched_search_stats *stats)
{
    static char nodes[65536];
    cJSON *root = cJSON_CreateObject();
    if (!root) {
        fprintf(stderr, "opsched: out of memory writing JSON\n");
        return TOOL_EXIT_FAIL;
    }
    cJSON_AddStringToObject(root, "model", opsched_graph_name(g));
    cJSON_AddStringToObject(root, "cost", a->cost);
    if (c->db_path[0]) cJSON_AddStringToObject(root, "db", c->db_path);
    cJSON_AddStringToObject(root, "device", c->device);
    cJSON_AddStringToObject(root, "math", opsched_math_name(a->math));
    cJSON_AddStringToObject(root, "layout", layout_name(a->layout));
    cJSON_AddStringToObject(root, "algo_policy", a->algo ? a->algo : "heuristic");
    cJSON_AddStringToObject(root, "bn", a->mo.fold_bn ? "fold" : "keep");
    cJSON_AddStringToObject(root, "searcher", opsched_searcher_name(a->so.searcher));
    cJSON_AddNumberToObject(root, "latency_ms", s->predicted_ms);
    cJSON_AddNumberToObject(root, "search_seconds", stats->seconds);
    cJSON_AddNumberToObject(root, "states", (double)stats->states);
    cJSON_AddNumberToObject(root, "stage_evals", (double)stats->stage_evals);
    cJSON *stages = cJSON_AddArrayToObject(root, "stages");
    for (int i = 0; stages && i < s->n_stages; i++) {
        const opsched_stage *st = &s->stages[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kind", st->kind == OPSCHED_STAGE_MERGE ? "merge" : "concurrent");
        if (st->ms >= 0) cJSON_AddNumberToObject(o, "ms", st->ms);
        stage_nodes(st, g, nodes, sizeof(nodes));
        cJSON_AddStringToObject(o, "nodes", nodes);
        cJSON_AddItemToArray(stages, o);
    }
    return tool_print_json(root);
}

int cmd_schedule(opsched_ctx *ctx, int argc, char **argv)
{
    sched_args a;
    memset(&a, 0, sizeof(a));
    a.mo.fold_bn = 1;
    a.so.searcher = OPSCHED_SEARCH_IOS;
    a.cost = "predict";
    a.math_auto = a.layout_auto = 1;
    a.bound = 0.9;
    a.verify = 1;
    /* Measured on the H100
     * (bench/results/schedules/h100-2026-11-24/search): three replays of
     * warm-up, exactly 10 samples of about 50 us each found inception_v3's
     * schedule in 8.6 s, as fast as the one found with 100 us samples
     * (11.9 s) and 1 ms / 2 ms per stage (22 s). */
    a.stage_set = 1;
    a.stage_warmup_ms = 0;
    a.stage_min_ms = 0;
    a.stage_sample_us = 50;
    int rc = parse_args(argc, argv, &a);
    if (rc != TOOL_EXIT_OK) return rc == TOOL_ARGS_HELP ? TOOL_EXIT_OK : rc;
    rep = a.fmt == TOOL_FMT_TABLE ? stdout : stderr;
    {
        const char *in[] = {a.db, a.mo.model};
        int crc = tool_check_output("schedule", a.output, in, 2);
        if (crc != TOOL_EXIT_OK) return crc;
    }

    int measure = strcmp(a.cost, "measure") == 0;
    if (measure && (a.data || a.target || a.stages_target || a.no_train))
        return tool_usage_error("schedule", "--data, --target, --stages-target and --no-fit go "
                                            "with --cost predict");
    if (!measure && (a.backend || a.index_set))
        return tool_usage_error("schedule", "--backend and --device go with --cost measure (the "
                                            "device in the database is --target)");
    cost_setup c;
    memset(&c, 0, sizeof(c));
    opsched_status st;
    if (!measure) {
        rc = tool_db_or_shipped(ctx, "schedule", a.db, a.data, c.db_path, sizeof(c.db_path));
        if (rc != TOOL_EXIT_OK) return rc;
        /* the same defaults as opsched predict */
        if (a.math_auto) a.math = OPSCHED_MATH_TF32;
        if (a.layout_auto)
            a.layout = tool_data_layout(ctx, c.db_path, a.target, a.math, a.algo);
    } else {
        tool_measure_args ma;
        tool_measure_args_init(&ma);
        ma.backend = a.backend;
        tool_measure_resolve(ctx, &ma);
        a.backend = ma.backend;
        if (a.math_auto) a.math = ma.opts.plan.math;
        if (a.layout_auto) a.layout = ma.opts.plan.layout;
    }
    a.math_auto = a.layout_auto = 0;
    opsched_graph *g = NULL;
    opsched_schedule *s = NULL;
    st = tool_load_model(ctx, &a.mo, &g);
    if (st != OPSCHED_OK) {
        rc = tool_model_fail(ctx, st, a.mo.model);
        goto done;
    }
    a.so.stop = tool_stop_install("opsched schedule: stopping the search");
    rc = measure ? setup_measure(ctx, &a, g, &c) : setup_predict(ctx, &a, g, &c);
    if (rc != TOOL_EXIT_OK) {
        tool_stop_restore();
        goto done;
    }
    if (measure) {
        a.so.cost = opsched_stage_cost_cached;
        a.so.user = &c.cache;
        if (a.bound > 0) {
            a.so.node_bound_ms = c.node_ms;
            a.so.bound_factor = a.bound;
        }
    } else {
        a.so.cost = opsched_stage_cost_predicted;
        a.so.user = &c.pc;
    }
    opsched_search_stats stats;
    st = opsched_schedule_search(g, &a.so, &s, &stats);
    tool_stop_restore();
    if (st != OPSCHED_OK) {
        rc = tool_fail(ctx, st, "search");
        goto done;
    }
    if ((st = opsched_schedule_set_string(s, "device", c.device)) != OPSCHED_OK ||
        (st = opsched_schedule_set_string(s, "cost", a.cost)) != OPSCHED_OK) {
        rc = tool_fail(ctx, st, "schedule");
        goto done;
    }
    if (measure) print_measured(&a, g, &c);
    else print_setup(&a, g, &c);
    if (measure && a.verify && a.so.searcher != OPSCHED_SEARCH_SEQUENTIAL) {
        rc = verify_whole(ctx, &a, g, &c, &s);
        if (rc != TOOL_EXIT_OK) goto done;
    }
    fprintf(rep, "search: %s", opsched_searcher_name(a.so.searcher));
    if (a.so.searcher == OPSCHED_SEARCH_IOS)
        fprintf(rep, " (r=%d, s=%d, merges %s), %d blocks in %d parts (largest %d operators)", s->r,
               s->s, a.so.no_merge ? "off" : "on", stats.n_blocks, stats.n_parts,
               stats.largest_part);
    fprintf(rep, "\n  %.3f s, %lld states, %lld endings, %lld stage evaluations, %lld answered from "
           "the memo",
           stats.seconds, (long long)stats.states, (long long)stats.endings,
           (long long)stats.stage_evals, (long long)stats.cost_cache_hits);
    if (a.so.node_bound_ms) fprintf(rep, ", %lld pruned by the bound", (long long)stats.pruned);
    if (stats.splits) fprintf(rep, ", %d parts split for the endings budget", stats.splits);
    fprintf(rep, "\n  %s latency: %.4f ms in %d stages\n", measure ? "measured (sum of stages)"
                                                           : "predicted",
           s->predicted_ms, s->n_stages);
    if (!measure) print_baselines(ctx, g, &a, &a.so);
    if (!a.quiet && a.fmt == TOOL_FMT_TABLE) {
        fprintf(rep, "\n");
        opsched_schedule_describe(s, g, print_line, NULL);
    }
    if (a.output) {
        st = opsched_schedule_write(s, g, a.output);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, a.output);
            goto done;
        }
        fprintf(rep, "\nwrote %s\n", a.output);
    }
    if (a.fmt == TOOL_FMT_CSV) {
        st = print_csv(ctx, s, g);
        if (st != OPSCHED_OK) rc = tool_fail(ctx, st, "CSV");
    } else if (a.fmt == TOOL_FMT_JSON) rc = print_json(&a, &c, s, g, &stats);
done:
    opsched_schedule_free(s);
    opsched_graph_free(g);
    cost_release(&c);
    return rc;
}
