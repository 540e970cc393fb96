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
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static const char schedule_help[] =
    "usage: opsched schedule <zoo-name|file.onnx> [options]\n"
    "\n"
    "Searches which operators run concurrently (groups on their own streams) or merged\n"
    "(convolutions sharing an input), stage after stage; prints the search time, the\n"
    "states explored, the stage evaluations, the predicted latency and the schedule.\n"
    "\n"
    "  --searcher S         sequential, greedy or ios (default ios)\n"
    "  --cost C             predict (default): operators predicted from the database,\n"
    "                       combined by the contention model fitted to measured stages;\n"
    "                       measure: every distinct stage run on the device, kept in the\n"
    "                       database so the next search runs nothing\n"
    "  --r N                IOS: operators per group (default 3)\n"
    "  --s N                IOS and greedy: groups per stage (default 8)\n"
    "  --max-block-ops N    IOS: operators per part of a block (default 50, at most 64)\n"
    "  --no-merge           IOS: no merged convolutions\n"
    "  --db FILE            the measurement database; predict: default the shipped\n"
    "                       data of --device; measure: where stages are kept\n"
    "  --device D           predict: the device in the database, id or part of its\n"
    "                       name (default: the only one measured); without --db,\n"
    "                       the shipped data set of that name (h100)\n"
    "  --backend B          measure: cuda or cpu (default: cuda when a GPU is present)\n"
    "  --index N            measure: device index within the backend (default 0)\n"
    "  --bound F            measure: skip a candidate stage that cannot beat the best\n"
    "                       found even if it ran in F x its longest group's operators\n"
    "                       alone (default 0.9; off: cost every candidate)\n"
    "  --stages-device ID   predict: fit the contention model to the stages measured\n"
    "                       on this device (its id in the database; default: the\n"
    "                       predicting device), e.g. another unit of the same GPU\n"
    "  --verify on|off      measure, ios and greedy: run the found schedule whole against\n"
    "                       the sequential and greedy ones and keep the fastest (default\n"
    "                       on): stage costs are measured stage by stage and cannot see\n"
    "                       what happens between stages\n"
    "  --stage-ms W,M       measure: warm-up and sampling per stage in ms (default 0,0:\n"
    "                       three replays of warm-up, then exactly 10 samples; M > 0:\n"
    "                       sampled for at least M ms)\n"
    "  --stage-sample-us U  measure: a stage replayed back to back in one device graph\n"
    "                       until a sample lasts about U us (default 50)\n"
    "  --math M             fp32, tf32 (default), fp16 or bf16\n"
    "  --layout L           nchw (default) or nhwc; on NVIDIA GPUs nhwc is the fast one\n"
    "  --algo POLICY        convolution algorithm policy (default heuristic)\n"
    "  --batch N            batch size (default: the model's, 1 for the zoo)\n"
    "  --input-size H[xW]   input height and width (default: the model's)\n"
    "  --shapes SPEC        ONNX input shapes, e.g. input:1x3x224x224\n"
    "  --bn fold|keep       zoo: BatchNormalization folded into the convolutions\n"
    "                       (default: fold, the deployed form)\n"
    "  -o, --output FILE    write the schedule (JSON, docs/SCHEDULE.md)\n"
    "  --quiet              print the summary only, not every stage\n"
    "  -h, --help           this help\n";

typedef struct sched_args {
    tool_model_opts mo;
    opsched_search_options so;
    const char *cost;
    const char *db, *device, *algo, *output, *backend;
    int index;
    double bound; /* 0: off */
    double stage_warmup_ms, stage_min_ms; /* --stage-ms */
    int stage_set;                        /* 0: the measurer's defaults */
    double stage_sample_us;               /* 0: the measurer's (100) */
    int64_t stages_device;                /* 0: the predicting device */
    opsched_math math;
    opsched_layout layout;
    int quiet;
    int verify; /* measure: time the found schedule whole against sequential, greedy */
} sched_args;

static int parse_args(int argc, char **argv, sched_args *a)
{
    static const struct option opts[] = {
        {"searcher", required_argument, NULL, 'S'}, {"cost", required_argument, NULL, 'c'},
        {"r", required_argument, NULL, 'r'}, {"s", required_argument, NULL, 's'},
        {"max-block-ops", required_argument, NULL, 'm'}, {"no-merge", no_argument, NULL, 'M'},
        {"db", required_argument, NULL, 'd'},
        {"device", required_argument, NULL, 'v'}, {"math", required_argument, NULL, 'x'},
        {"layout", required_argument, NULL, 'l'}, {"algo", required_argument, NULL, 'a'},
        {"batch", required_argument, NULL, 'b'}, {"input-size", required_argument, NULL, 'i'},
        {"shapes", required_argument, NULL, 'H'}, {"bn", required_argument, NULL, 'B'},
        {"output", required_argument, NULL, 'o'}, {"quiet", no_argument, NULL, 'q'},
        {"backend", required_argument, NULL, 'K'}, {"index", required_argument, NULL, 'I'},
        {"bound", required_argument, NULL, 'F'}, {"stage-ms", required_argument, NULL, 'T'},
        {"stages-device", required_argument, NULL, 'D'}, {"verify", required_argument, NULL, 'V'},
        {"stage-sample-us", required_argument, NULL, 'U'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    int64_t v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'S':
            if (opsched_searcher_from_name(optarg, &a->so.searcher) != OPSCHED_OK)
                return tool_usage_error("schedule", "--searcher wants sequential, greedy or ios, "
                                                    "got '%s'", optarg);
            break;
        case 'c':
            if (strcmp(optarg, "predict") != 0 && strcmp(optarg, "measure") != 0)
                return tool_usage_error("schedule", "--cost wants predict or measure, got '%s'",
                                        optarg);
            a->cost = optarg;
            break;
        case 'r':
        case 's':
        case 'm':
            if (!tool_parse_int(optarg, 1, 64, &v))
                return tool_usage_error("schedule", "--%s wants 1 to 64, got '%s'",
                                        c == 'r' ? "r" : c == 's' ? "s" : "max-block-ops", optarg);
            if (c == 'r') a->so.r = (int)v;
            else if (c == 's') a->so.s = (int)v;
            else a->so.max_block_ops = (int)v;
            break;
        case 'M': a->so.no_merge = 1; break;
        case 'd': a->db = optarg; break;
        case 'v': a->device = optarg; break;
        case 'x':
            if (opsched_math_from_name(optarg, &a->math) != OPSCHED_OK)
                return tool_usage_error("schedule", "--math wants fp32, tf32, fp16 or bf16, got '%s'",
                                        optarg);
            break;
        case 'l':
            if (strcmp(optarg, "nchw") == 0) a->layout = OPSCHED_LAYOUT_NCHW;
            else if (strcmp(optarg, "nhwc") == 0) a->layout = OPSCHED_LAYOUT_NHWC;
            else return tool_usage_error("schedule", "--layout wants nchw or nhwc, got '%s'", optarg);
            break;
        case 'a': a->algo = optarg; break;
        case 'b':
            if (!tool_parse_int(optarg, 1, 1 << 20, &a->mo.batch))
                return tool_usage_error("schedule", "--batch wants a positive integer, got '%s'",
                                        optarg);
            break;
        case 'i':
            if (!tool_parse_size(optarg, &a->mo.height, &a->mo.width))
                return tool_usage_error("schedule", "--input-size wants H or HxW, got '%s'", optarg);
            break;
        case 'H': a->mo.shapes = optarg; break;
        case 'B':
            if (strcmp(optarg, "fold") == 0) a->mo.fold_bn = 1;
            else if (strcmp(optarg, "keep") == 0) a->mo.fold_bn = 0;
            else return tool_usage_error("schedule", "--bn wants fold or keep, got '%s'", optarg);
            break;
        case 'o': a->output = optarg; break;
        case 'K': a->backend = optarg; break;
        case 'I':
            if (!tool_parse_int(optarg, 0, 1 << 16, &v))
                return tool_usage_error("schedule", "--index wants a device index, got '%s'",
                                        optarg);
            a->index = (int)v;
            break;
        case 'F': {
            char *end = NULL;
            double f = strtod(optarg, &end);
            if (strcmp(optarg, "off") == 0) a->bound = 0;
            else if (end != optarg && !*end && f > 0 && f <= 1) a->bound = f;
            else return tool_usage_error("schedule", "--bound wants a factor in (0, 1] or off, "
                                                     "got '%s'", optarg);
            break;
        }
        case 'T': {
            char *end = NULL;
            double w = strtod(optarg, &end), m = -1;
            if (end != optarg && *end == ',') m = strtod(end + 1, &end);
            if (!(w >= 0 && m >= 0 && !*end))
                return tool_usage_error("schedule", "--stage-ms wants WARMUP,MIN in ms, e.g. 2,3, "
                                                    "got '%s'", optarg);
            a->stage_warmup_ms = w;
            a->stage_min_ms = m;
            a->stage_set = 1;
            break;
        }
        case 'D':
            if (!tool_parse_int(optarg, 1, INT64_MAX, &a->stages_device))
                return tool_usage_error("schedule", "--stages-device wants a device id of the "
                                                    "database, got '%s'", optarg);
            break;
        case 'q': a->quiet = 1; break;
        case 'U': {
            char *end = NULL;
            double us = strtod(optarg, &end);
            if (!(end != optarg && !*end && us >= 10 && us <= 100000))
                return tool_usage_error("schedule", "--stage-sample-us wants 10 to 100000, got '%s'",
                                        optarg);
            a->stage_sample_us = us;
            break;
        }
        case 'V':
            if (strcmp(optarg, "on") == 0) a->verify = 1;
            else if (strcmp(optarg, "off") == 0) a->verify = 0;
            else return tool_usage_error("schedule", "--verify wants on or off, got '%s'", optarg);
            break;
        case 'h': fputs(schedule_help, stdout); return -1;
        default:
            return tool_usage_error("schedule", "unknown or incomplete option '%s'",
                                    argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return tool_usage_error("schedule", optind >= argc
                                                ? "which model? give a zoo name or an .onnx file"
                                                : "one model at a time");
    a->mo.model = argv[optind];
    return 0;
}

/* ---- costs -------------------------------------------------------------- */

/* What the cost function needs, and what the report says about it. */
typedef struct cost_setup {
    char db_path[1024];
    opsched_predictor *pred;
    opsched_device *dev;
    opsched_stage_measurer *measurer;
    opsched_sched_exec_options xo; /* measure: how stages and whole schedules run */
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

/* Every node's single-op cost from the predictor: a convolution carries
 * the Relu fused into it, views and fused Relus cost nothing. */
static int predict_nodes(opsched_ctx *ctx, const opsched_graph *g, cost_setup *c)
{
    opsched_predict_options po;
    opsched_predict_options_default(&po);
    po.fuse = 1;
    opsched_network_prediction *np = NULL;
    opsched_status st = opsched_predict_network(c->pred, g, &po, &np);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "predict the layers");
    int n = opsched_graph_num_nodes(g);
    c->node_ms = calloc((size_t)n + 1, sizeof(double));
    if (!c->node_ms) {
        opsched_network_prediction_free(np);
        fprintf(stderr, "opsched: out of memory\n");
        return TOOL_EXIT_FAIL;
    }
    for (int i = 0; i < n; i++) {
        const opsched_layer_prediction *l = &np->layers[i];
        c->n_by_source[l->p.source]++;
        if (l->launches == 0) continue;
        if (!(l->p.ms >= 0)) {
            fprintf(stderr,
                    "opsched schedule: nothing predicts layer '%s' (%s): measure it (opsched "
                    "sweep), or calibrate the device (opsched devices --calibrate --db)\n",
                    opsched_graph_node(g, i)->name, opsched_op_name(opsched_graph_node(g, i)->op));
            opsched_network_prediction_free(np);
            return TOOL_EXIT_FAIL;
        }
        c->node_ms[i] = l->p.ms;
    }
    opsched_network_prediction_free(np);
    return TOOL_EXIT_OK;
}

static int setup_predict(opsched_ctx *ctx, const sched_args *a, const opsched_graph *g,
                         cost_setup *c)
{
    opsched_predictor_options o;
    opsched_predictor_options_default(&o);
    o.device = a->device;
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
                                          a->stages_device > 0 ? a->stages_device : c->device_id,
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
    mo.exec.exec.plan.math = a->math;
    mo.exec.exec.plan.layout = a->layout;
    mo.exec.exec.plan.algo = a->algo;
    mo.exec.exec.plan.fuse_activation = 1;
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
    puts(line);
}

static void print_measured(const sched_args *a, const opsched_graph *g, const cost_setup *c)
{
    opsched_stage_measurer_stats ms;
    opsched_stage_measurer_stats_get(c->measurer, &ms);
    printf("%s: %d nodes; cost measure on %s, %s %s, algo %s\n", opsched_graph_name(g),
           opsched_graph_num_nodes(g), c->device, opsched_math_name(a->math),
           layout_name(a->layout), a->algo ? a->algo : "heuristic");
    printf("  %d operators alone; stages: %lld measured now (%lld cannot run), %lld from %s; "
           "%.1f s measuring\n",
           c->n_singletons, (long long)c->cache.measured, (long long)c->cache.unsupported,
           (long long)c->cache.hits, c->store ? c->db_path : "nowhere (no --db)", ms.seconds);
    if (ms.measured > 0) {
        printf("  measuring: %.1f s copying stages and building executors, %.1f s capturing, "
               "%.1f s timing (%.1f ms per stage)",
               ms.build_seconds, ms.capture_seconds, ms.timing_seconds,
               1e3 * ms.seconds / (double)ms.measured);
        if (ms.plan_cache_hits + ms.plan_cache_misses > 0) /* backends with a plan cache */
            printf("; convolution plans: %lld reused, %lld built", (long long)ms.plan_cache_hits,
                   (long long)ms.plan_cache_misses);
        printf("\n");
    }
}

static void print_setup(const sched_args *a, const opsched_graph *g, const cost_setup *c)
{
    printf("%s: %d nodes; cost %s from %s, device %s, %s %s, algo %s\n", opsched_graph_name(g),
           opsched_graph_num_nodes(g), a->cost, c->db_path, c->device, opsched_math_name(a->math),
           layout_name(a->layout), a->algo ? a->algo : "heuristic");
    printf("  operators predicted: %d exact, %d learned, %d roofline (%d views or fused)\n",
           c->n_by_source[OPSCHED_SOURCE_EXACT], c->n_by_source[OPSCHED_SOURCE_LEARNED],
           c->n_by_source[OPSCHED_SOURCE_ROOFLINE], c->n_by_source[OPSCHED_SOURCE_VIEW]);
    const opsched_contention *m = &c->pc.model;
    printf("  contention: capacity %.2f groups, %.1f us per stage, %.1f us per extra stream ",
           m->capacity, 1e3 * m->stage_ms, 1e3 * m->stream_ms);
    if (m->n_fit > 0)
        printf("(fitted to %d measured stages, rms %.1f%%)\n", m->n_fit, 100 * m->fit_rms_rel);
    else
        printf("(DEFAULTS: no measured stages in the database; run a measured search to fit)\n");
    printf("  merged convolutions: x%.2f of their members ", m->merge_factor);
    if (m->n_merge_fit > 0) printf("(fitted to %d measured merges)\n", m->n_merge_fit);
    else printf("(DEFAULT: fewer than two measured merges)\n");
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
    if (!isnan(ms[0])) printf("  sequential under the same cost: %.4f ms\n", ms[0]);
    if (!isnan(ms[1])) printf("  greedy under the same cost: %.4f ms\n", ms[1]);
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
    printf("verify: run whole (%.1f s):", w.seconds);
    for (int i = 0; i < w.n; i++)
        printf(" %s %.4f ms%s", opsched_searcher_name(w.searcher[i]), w.ms[i],
               i + 1 < w.n ? "," : "");
    printf("; kept %s%s\n", opsched_searcher_name(w.searcher[w.kept]),
           w.kept == 0 ? "" : " (the searched schedule was slower as a whole)");
    return TOOL_EXIT_OK;
}

int cmd_schedule(opsched_ctx *ctx, int argc, char **argv)
{
    sched_args a;
    memset(&a, 0, sizeof(a));
    a.mo.fold_bn = 1;
    a.so.searcher = OPSCHED_SEARCH_IOS;
    a.cost = "predict";
    a.math = OPSCHED_MATH_TF32;
    a.layout = OPSCHED_LAYOUT_NCHW;
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
    if (rc < 0) return TOOL_EXIT_OK;
    if (rc) return rc;

    int measure = strcmp(a.cost, "measure") == 0;
    cost_setup c;
    memset(&c, 0, sizeof(c));
    opsched_status st;
    if (!measure) {
        rc = tool_db_or_shipped(ctx, "schedule", a.db, a.device, c.db_path, sizeof(c.db_path));
        if (rc != TOOL_EXIT_OK) return rc;
    }
    opsched_graph *g = NULL;
    opsched_schedule *s = NULL;
    st = tool_load_model(ctx, &a.mo, &g);
    if (st != OPSCHED_OK) {
        rc = tool_fail(ctx, st, a.mo.model);
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
    printf("search: %s", opsched_searcher_name(a.so.searcher));
    if (a.so.searcher == OPSCHED_SEARCH_IOS)
        printf(" (r=%d, s=%d, merges %s), %d blocks in %d parts (largest %d operators)", s->r,
               s->s, a.so.no_merge ? "off" : "on", stats.n_blocks, stats.n_parts,
               stats.largest_part);
    printf("\n  %.3f s, %lld states, %lld endings, %lld stage evaluations, %lld answered from "
           "the memo",
           stats.seconds, (long long)stats.states, (long long)stats.endings,
           (long long)stats.stage_evals, (long long)stats.cost_cache_hits);
    if (a.so.node_bound_ms) printf(", %lld pruned by the bound", (long long)stats.pruned);
    if (stats.splits) printf(", %d parts split for the endings budget", stats.splits);
    printf("\n  %s latency: %.4f ms in %d stages\n", measure ? "measured (sum of stages)"
                                                           : "predicted",
           s->predicted_ms, s->n_stages);
    if (!measure) print_baselines(ctx, g, &a, &a.so);
    if (!a.quiet) {
        printf("\n");
        opsched_schedule_describe(s, g, print_line, NULL);
    }
    if (a.output) {
        st = opsched_schedule_write(s, g, a.output);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, a.output);
            goto done;
        }
        printf("\nwrote %s\n", a.output);
    }
done:
    opsched_schedule_free(s);
    opsched_graph_free(g);
    cost_release(&c);
    return rc;
}
