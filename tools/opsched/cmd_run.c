/*
 * cmd_run.c - `opsched run <model>`: runs inter-operator schedules on a
 * device with the schedule executor and reports their latency.
 *
 *   --schedule FILE   one schedule (from `opsched schedule`); its batch size
 *                     is informational, so a schedule searched at batch 1
 *                     runs at --batch 16 (cross-evaluation)
 *   --compare LIST    sequential,greedy,ios searched in this process with
 *                     stage costs measured on the device, then each run
 *
 * Every schedule is timed free-running (launches enqueued back to back)
 * and as a replayed CUDA graph of the whole inference, its outputs are
 * checked against the sequential executor on the same weights and input,
 * and a table gives median, p10 and p90 latency and the speed-up over the
 * sequential schedule.
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

#define MAX_SCHEDULES 8

static const char run_help[] =
    "usage: opsched run <zoo-name|file.onnx> (--schedule FILE | --compare LIST) [options]\n"
    "\n"
    "Runs inter-operator schedules with the schedule executor (one stream per group,\n"
    "events only where data crosses streams, the inference captured as one CUDA graph,\n"
    "producers writing into concat slices, merged convolutions): latency free-running\n"
    "and as a CUDA graph (median, p10, p90), speed-up over the sequential schedule, and\n"
    "the outputs checked against the sequential executor.\n"
    "\n"
    "  --schedule FILE        run this schedule (opsched schedule -o); the batch it was\n"
    "                         searched at is informational: --batch sets the graph's\n"
    "  --compare LIST         search and run each of sequential, greedy, ios (comma list)\n"
    "                         with stage costs measured on this device\n"
    "  --db FILE              keep measured stage costs in this database's stages table\n"
    "                         (a stage measured once is not measured again)\n"
    "  --r N, --s N           IOS: operators per group (3), groups per stage (8; greedy too)\n"
    "  --max-block-ops N      IOS: operators per part of a block (default 50)\n"
    "  --no-merge             IOS: no merged convolutions\n"
    "  --verify on|off        --compare: run IOS's schedule whole against the greedy and\n"
    "                         sequential ones; the ios row runs the fastest (default on)\n"
    "  --save-schedules DIR   write each searched schedule to DIR/<model>_<searcher>.json\n"
    "  --batch N              batch size (default: the model's, 1 for the zoo)\n"
    "  --input-size H[xW]     input height and width (default: the model's)\n"
    "  --shapes SPEC          ONNX input shapes, e.g. input:1x3x224x224\n"
    "  --bn fold|keep         zoo: BatchNormalization folded (default fold)\n"
    "  --backend cuda|cpu     backend (default: cuda when a GPU is present, else cpu)\n"
    "  --device N             device index within the backend (default 0)\n"
    "  --math M               fp32, tf32 (default), fp16 or bf16\n"
    "  --layout L             nchw (default) or nhwc\n"
    "  --algo POLICY          convolution algorithm policy (default heuristic)\n"
    "  --concurrent-algo P    policy for nodes of stages with several groups (default:\n"
    "                         --algo)\n"
    "  --fuse on|off          convolution + bias + ReLU as one operation (default on)\n"
    "  --concat-elision on|off  producers write into concat slices (default on)\n"
    "  --cuda-graph on|off    also time the whole inference as a CUDA graph (default on)\n"
    "  --check on|off         compare outputs with the sequential executor (default on)\n"
    "  --warmup-ms MS         warm-up per schedule and mode (default 200)\n"
    "  --iters N              timed inferences, at least (default 100)\n"
    "  --min-ms MS            and at least this long (default 500)\n"
    "  --seed N               weights and inputs (default 1)\n"
    "  --trace FILE           Chrome trace of one traced run per schedule, a track per\n"
    "                         stream (opens in Perfetto)\n"
    "  -h, --help             this help\n";

typedef struct run_args {
    tool_model_opts mo;
    const char *schedule, *compare, *db, *save_dir, *trace;
    const char *backend, *algo, *concurrent_algo;
    int device;
    opsched_math math;
    opsched_layout layout;
    int fuse, elision, cuda_graph, check;
    int verify; /* --compare: the ios row runs the fastest of ios, greedy, sequential whole */
    opsched_search_options so;
    opsched_run_timing_options timing;
    uint64_t seed;
} run_args;

static int on_off(const char *flag, const char *v, int *out)
{
    if (strcmp(v, "on") == 0)
        *out = 1;
    else if (strcmp(v, "off") == 0)
        *out = 0;
    else
        return tool_usage_error("run", "%s wants on or off, got '%s'", flag, v);
    return 0;
}

static int parse_ms(const char *flag, const char *v, double *out)
{
    char *end = NULL;
    double d = strtod(v, &end);
    if (end == v || *end || !(d >= 0 && d <= 3.6e6))
        return tool_usage_error("run", "%s wants milliseconds, got '%s'", flag, v);
    *out = d;
    return 0;
}

static int parse_args(int argc, char **argv, run_args *a)
{
    static const struct option opts[] = {{"schedule", required_argument, NULL, 'S'},
                                         {"compare", required_argument, NULL, 'C'},
                                         {"verify", required_argument, NULL, 'V'},
                                         {"db", required_argument, NULL, 'd'},
                                         {"r", required_argument, NULL, 'r'},
                                         {"s", required_argument, NULL, 's'},
                                         {"max-block-ops", required_argument, NULL, 'm'},
                                         {"no-merge", no_argument, NULL, 'M'},
                                         {"save-schedules", required_argument, NULL, 'o'},
                                         {"batch", required_argument, NULL, 'b'},
                                         {"input-size", required_argument, NULL, 'i'},
                                         {"shapes", required_argument, NULL, 'H'},
                                         {"bn", required_argument, NULL, 'B'},
                                         {"backend", required_argument, NULL, 'k'},
                                         {"device", required_argument, NULL, 'v'},
                                         {"math", required_argument, NULL, 'x'},
                                         {"layout", required_argument, NULL, 'l'},
                                         {"algo", required_argument, NULL, 'a'},
                                         {"concurrent-algo", required_argument, NULL, 'A'},
                                         {"fuse", required_argument, NULL, 'F'},
                                         {"concat-elision", required_argument, NULL, 'E'},
                                         {"cuda-graph", required_argument, NULL, 'G'},
                                         {"check", required_argument, NULL, 'K'},
                                         {"warmup-ms", required_argument, NULL, 'w'},
                                         {"iters", required_argument, NULL, 'n'},
                                         {"min-ms", required_argument, NULL, 't'},
                                         {"seed", required_argument, NULL, 'z'},
                                         {"trace", required_argument, NULL, 'T'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c, rc = 0;
    int64_t v;
    optind = 1;
    opterr = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'S':
            a->schedule = optarg;
            break;
        case 'C':
            a->compare = optarg;
            break;
        case 'd':
            a->db = optarg;
            break;
        case 'r':
        case 's':
        case 'm':
            if (!tool_parse_int(optarg, 1, 64, &v))
                return tool_usage_error("run", "--%s wants 1 to 64, got '%s'",
                                        c == 'r'   ? "r"
                                        : c == 's' ? "s"
                                                   : "max-block-ops",
                                        optarg);
            if (c == 'r')
                a->so.r = (int)v;
            else if (c == 's')
                a->so.s = (int)v;
            else
                a->so.max_block_ops = (int)v;
            break;
        case 'M':
            a->so.no_merge = 1;
            break;
        case 'o':
            a->save_dir = optarg;
            break;
        case 'b':
            if (!tool_parse_int(optarg, 1, 1 << 20, &a->mo.batch))
                return tool_usage_error("run", "--batch wants a positive integer, got '%s'",
                                        optarg);
            break;
        case 'i':
            if (!tool_parse_size(optarg, &a->mo.height, &a->mo.width))
                return tool_usage_error("run", "--input-size wants H or HxW, got '%s'", optarg);
            break;
        case 'H':
            a->mo.shapes = optarg;
            break;
        case 'B':
            if (strcmp(optarg, "fold") == 0)
                a->mo.fold_bn = 1;
            else if (strcmp(optarg, "keep") == 0)
                a->mo.fold_bn = 0;
            else
                return tool_usage_error("run", "--bn wants fold or keep, got '%s'", optarg);
            break;
        case 'k':
            a->backend = optarg;
            break;
        case 'v':
            if (!tool_parse_int(optarg, 0, 1024, &v))
                return tool_usage_error("run", "--device wants an index, got '%s'", optarg);
            a->device = (int)v;
            break;
        case 'x':
            if (opsched_math_from_name(optarg, &a->math) != OPSCHED_OK)
                return tool_usage_error("run", "--math wants fp32, tf32, fp16 or bf16, got '%s'",
                                        optarg);
            break;
        case 'l':
            if (strcmp(optarg, "nchw") == 0)
                a->layout = OPSCHED_LAYOUT_NCHW;
            else if (strcmp(optarg, "nhwc") == 0)
                a->layout = OPSCHED_LAYOUT_NHWC;
            else
                return tool_usage_error("run", "--layout wants nchw or nhwc, got '%s'", optarg);
            break;
        case 'a':
            a->algo = optarg;
            break;
        case 'A':
            a->concurrent_algo = optarg;
            break;
        case 'F':
            rc = on_off("--fuse", optarg, &a->fuse);
            break;
        case 'E':
            rc = on_off("--concat-elision", optarg, &a->elision);
            break;
        case 'G':
            rc = on_off("--cuda-graph", optarg, &a->cuda_graph);
            break;
        case 'K':
            rc = on_off("--check", optarg, &a->check);
            break;
        case 'V':
            rc = on_off("--verify", optarg, &a->verify);
            break;
        case 'w':
            rc = parse_ms("--warmup-ms", optarg, &a->timing.warmup_ms);
            break;
        case 't':
            rc = parse_ms("--min-ms", optarg, &a->timing.min_ms);
            break;
        case 'n':
            if (!tool_parse_int(optarg, 1, 1000000, &v))
                return tool_usage_error("run", "--iters wants a positive count, got '%s'", optarg);
            a->timing.iters = (int)v;
            break;
        case 'z':
            if (!tool_parse_int(optarg, 0, INT64_MAX, &v))
                return tool_usage_error("run", "--seed wants a number, got '%s'", optarg);
            a->seed = (uint64_t)v;
            break;
        case 'T':
            a->trace = optarg;
            break;
        case 'h':
            fputs(run_help, stdout);
            return -1;
        default:
            return tool_usage_error("run", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (rc) return rc;
    if (optind != argc - 1)
        return tool_usage_error("run", optind >= argc
                                           ? "which model? give a zoo name or an .onnx file"
                                           : "one model at a time");
    a->mo.model = argv[optind];
    if (!a->schedule == !a->compare)
        return tool_usage_error("run", "give --schedule FILE or --compare LIST (one of them)");
    if (a->compare) {
        char list[256];
        char *save = NULL;
        int n = 0;
        opsched_searcher w;
        snprintf(list, sizeof(list), "%s", a->compare);
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save), n++)
            if (opsched_searcher_from_name(t, &w) != OPSCHED_OK)
                return tool_usage_error("run",
                                        "--compare wants sequential, greedy or ios, got '%s'", t);
        if (n < 1 || n > MAX_SCHEDULES)
            return tool_usage_error("run", "--compare wants 1 to %d searchers", MAX_SCHEDULES);
    }
    return 0;
}

/* ---- schedules ---------------------------------------------------------- */

typedef struct run_item {
    char label[32];
    opsched_schedule *s;
    double search_s; /* NaN when read from a file */
    int64_t stage_evals;
    /* results */
    opsched_sched_exec_info info;
    opsched_run_timing free_t, graph_t;
    int has_graph;
    double rel_l2; /* NaN when not checked */
} run_item;

typedef struct run_costs {
    opsched_stage_measurer *m;
    opsched_store *store;
    opsched_stage_cache cache;
} run_costs;

static const char *layout_name(opsched_layout l)
{
    return l == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw";
}

static int64_t graph_batch(const opsched_graph *g)
{
    if (opsched_graph_num_inputs(g) < 1) return 0;
    const opsched_tensor *x = opsched_graph_tensor(g, opsched_graph_input(g, 0));
    return x->shape.ndim > 0 ? x->shape.d[0] : 0;
}

static opsched_sched_exec_options exec_options(const run_args *a)
{
    opsched_sched_exec_options o;
    memset(&o, 0, sizeof(o));
    o.exec.plan.algo = a->algo;
    o.exec.plan.math = a->math;
    o.exec.plan.layout = a->layout;
    o.exec.plan.fuse_activation = a->fuse;
    o.exec.algo_fallback = "heuristic";
    o.exec.seed = a->seed;
    o.no_concat_elision = !a->elision;
    o.concurrent_algo = a->concurrent_algo;
    return o;
}

static int setup_costs(opsched_ctx *ctx, opsched_device *dev, const run_args *a,
                       const opsched_graph *g, run_costs *c)
{
    opsched_stage_measure_options mo;
    memset(&mo, 0, sizeof(mo));
    mo.exec = exec_options(a);
    opsched_status st = opsched_stage_measurer_create(dev, &mo, &c->m);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "stage measurer");
    if (!a->db) return TOOL_EXIT_OK;
    opsched_device_info info;
    int64_t device_id = 0;
    st = opsched_store_open(ctx, a->db, OPSCHED_STORE_READ_WRITE, &c->store);
    if (st == OPSCHED_OK) st = opsched_device_info_get(dev, &info);
    if (st == OPSCHED_OK) st = opsched_store_device(c->store, &info, &device_id);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, a->db);
    c->cache.store = c->store;
    c->cache.device_id = device_id;
    c->cache.batch = graph_batch(g);
    c->cache.math = opsched_math_name(a->math);
    c->cache.layout = layout_name(a->layout);
    c->cache.algo_policy = a->algo ? a->algo : "heuristic";
    c->cache.measure = opsched_stage_cost_measured;
    c->cache.measure_user = c->m;
    return TOOL_EXIT_OK;
}

/* The IOS schedule run whole against the greedy and sequential ones
 * (searched again under the same costs, all answered from memory); the
 * ios row runs the fastest, so it is never slower than sequential as
 * measured here (stage costs cannot see what happens between stages). */
static int verify_ios(opsched_ctx *ctx, opsched_device *dev, const run_args *a,
                      const opsched_graph *g, run_costs *c, run_item *items, int n_items)
{
    run_item *ios = NULL;
    for (int i = 0; i < n_items; i++)
        if (strcmp(items[i].label, "ios") == 0) ios = &items[i];
    if (!ios) return TOOL_EXIT_OK;
    opsched_search_options so = a->so;
    so.searcher = OPSCHED_SEARCH_IOS;
    so.cost = c->store ? opsched_stage_cost_cached : opsched_stage_cost_measured;
    so.user = c->store ? (void *)&c->cache : (void *)c->m;
    opsched_sched_exec_options o = exec_options(a);
    opsched_whole_check w;
    opsched_status st = opsched_schedule_keep_fastest(dev, g, &so, &o, &ios->s, &w);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "run the schedules whole");
    printf("ios verified whole: ios %.4f ms, greedy %.4f ms, sequential %.4f ms; the ios row runs "
           "%s%s\n",
           w.ms[0], w.ms[1], w.ms[2], opsched_searcher_name(w.searcher[w.kept]),
           w.kept ? "'s schedule (IOS's own was slower whole)" : "");
    if (w.kept) (void)opsched_schedule_set_string(ios->s, "cost", "measure");
    return TOOL_EXIT_OK;
}

static int search_all(opsched_ctx *ctx, opsched_device *dev, const run_args *a,
                      const opsched_graph *g, run_item *items, int *n_items)
{
    run_costs c;
    memset(&c, 0, sizeof(c));
    int rc = setup_costs(ctx, dev, a, g, &c);
    char list[256];
    snprintf(list, sizeof(list), "%s", a->compare);
    char *save = NULL;
    volatile sig_atomic_t *stop = tool_stop_install("opsched run: stopping the search");
    for (char *t = strtok_r(list, ",", &save); rc == TOOL_EXIT_OK && t;
         t = strtok_r(NULL, ",", &save)) {
        opsched_search_options so = a->so;
        if (opsched_searcher_from_name(t, &so.searcher) != OPSCHED_OK) {
            rc = tool_usage_error("run", "--compare wants sequential, greedy or ios, got '%s'", t);
            break;
        }
        if (*n_items == MAX_SCHEDULES) {
            rc = tool_usage_error("run", "--compare: at most %d schedules", MAX_SCHEDULES);
            break;
        }
        so.cost = c.store ? opsched_stage_cost_cached : opsched_stage_cost_measured;
        so.user = c.store ? (void *)&c.cache : (void *)c.m;
        so.stop = stop;
        run_item *it = &items[*n_items];
        opsched_search_stats stats;
        fprintf(stderr, "searching %s...\n", t);
        opsched_status st = opsched_schedule_search(g, &so, &it->s, &stats);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, "search");
            break;
        }
        snprintf(it->label, sizeof(it->label), "%s", t);
        it->search_s = stats.seconds;
        it->stage_evals = stats.stage_evals;
        opsched_device_info info;
        if (opsched_device_info_get(dev, &info) == OPSCHED_OK) {
            char dn[200];
            snprintf(dn, sizeof(dn), "%s:%s", info.backend, info.name);
            (void)opsched_schedule_set_string(it->s, "device", dn);
        }
        (void)opsched_schedule_set_string(it->s, "cost", "measure");
        (*n_items)++;
    }
    tool_stop_restore();
    if (rc == TOOL_EXIT_OK && a->verify) rc = verify_ios(ctx, dev, a, g, &c, items, *n_items);
    opsched_stage_measurer_stats ms;
    opsched_stage_measurer_stats_get(c.m, &ms);
    if (rc == TOOL_EXIT_OK)
        printf("stage costs: %lld stages measured (%lld unsupported) in %.1f s, %lld answered from "
               "memory%s",
               (long long)ms.measured, (long long)ms.unsupported, ms.seconds, (long long)ms.cached,
               c.store ? "" : "\n");
    if (rc == TOOL_EXIT_OK && c.store) printf(", %lld from %s\n", (long long)c.cache.hits, a->db);
    opsched_stage_measurer_free(c.m);
    opsched_store_close(c.store);
    return rc;
}

static int save_schedules(opsched_ctx *ctx, const run_args *a, const opsched_graph *g,
                          const run_item *items, int n)
{
    for (int i = 0; i < n; i++) {
        char path[4096];
        int len = snprintf(path, sizeof(path), "%s/%s_%s.json", a->save_dir,
                           opsched_graph_name(g), items[i].label);
        if (len < 0 || (size_t)len >= sizeof(path))
            return tool_usage_error("run", "--save-schedules: the path is too long");
        opsched_status st = opsched_schedule_write(items[i].s, g, path);
        if (st != OPSCHED_OK) return tool_fail(ctx, st, path);
        printf("wrote %s\n", path);
    }
    return TOOL_EXIT_OK;
}

/* ---- running ------------------------------------------------------------ */

/* Builds and checks one schedule's executor (outputs against ref). */
static int build_one(opsched_ctx *ctx, opsched_device *dev, const run_args *a,
                     const opsched_graph *g, opsched_executor *ref, run_item *it,
                     opsched_sched_executor **out)
{
    opsched_sched_exec_options o = exec_options(a);
    opsched_sched_executor *ex = NULL;
    opsched_status st = opsched_sched_executor_create(dev, g, it->s, &o, &ex);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, it->label);
    it->rel_l2 = NAN;
    st = opsched_sched_executor_info(ex, &it->info);
    if (st == OPSCHED_OK && ref) {
        st = opsched_sched_executor_run(ex);
        if (st == OPSCHED_OK) st = opsched_device_sync(dev);
        if (st == OPSCHED_OK) st = opsched_sched_executor_compare(ex, ref, &it->rel_l2);
    }
    if (st != OPSCHED_OK) {
        opsched_sched_executor_free(ex);
        return tool_fail(ctx, st, it->label);
    }
    *out = ex;
    return TOOL_EXIT_OK;
}

/* Every schedule's executor built and checked, then timed in turns (free
 * runs, then CUDA-graph replays), so the rows see the same device clocks;
 * then each one's traced run. */
static int run_all(opsched_ctx *ctx, opsched_device *dev, const run_args *a,
                   const opsched_graph *g, opsched_executor *ref, opsched_trace *tr,
                   run_item *items, int n)
{
    opsched_sched_executor *ex[MAX_SCHEDULES] = {NULL};
    opsched_run_timing t[MAX_SCHEDULES];
    int rc = TOOL_EXIT_OK;
    opsched_status st = OPSCHED_OK;
    for (int i = 0; i < n && rc == TOOL_EXIT_OK; i++) {
        fprintf(stderr, "building %s...\n", items[i].label);
        rc = build_one(ctx, dev, a, g, ref, &items[i], &ex[i]);
    }
    if (rc != TOOL_EXIT_OK) goto done;
    fprintf(stderr, "timing free runs...\n");
    st = opsched_sched_executors_time(ex, n, 0, &a->timing, t);
    if (st != OPSCHED_OK) goto fail;
    for (int i = 0; i < n; i++) items[i].free_t = t[i];
    if (a->cuda_graph) {
        int graphs = 1;
        for (int i = 0; i < n && graphs; i++) {
            st = opsched_sched_executor_capture(ex[i]);
            if (st == OPSCHED_ERR_UNSUPPORTED) {
                opsched_ctx_clear_error(ctx);
                graphs = 0;
                st = OPSCHED_OK;
            } else if (st != OPSCHED_OK) {
                goto fail;
            }
        }
        if (graphs) {
            fprintf(stderr, "timing CUDA-graph replays...\n");
            st = opsched_sched_executors_time(ex, n, 1, &a->timing, t);
            if (st != OPSCHED_OK) goto fail;
            for (int i = 0; i < n; i++) {
                items[i].graph_t = t[i];
                items[i].has_graph = 1;
            }
        }
    }
    for (int i = 0; i < n && tr; i++) {
        opsched_sched_span *spans = NULL;
        int ns = 0;
        double total = 0;
        opsched_device_info info;
        char label[160];
        snprintf(label, sizeof(label), "%.100s %.31s", opsched_graph_name(g), items[i].label);
        st = opsched_sched_executor_trace(ex[i], &spans, &ns, &total);
        if (st == OPSCHED_OK) st = opsched_device_info_get(dev, &info);
        if (st == OPSCHED_OK) st = opsched_trace_add_schedule(tr, &info, spans, ns, total, label);
        free(spans);
        if (st != OPSCHED_OK) goto fail;
    }
    goto done;
fail:
    rc = tool_fail(ctx, st, "run the schedules");
done:
    for (int i = 0; i < n; i++)
        opsched_sched_executor_free(ex[i]);
    return rc;
}

static void print_table(const run_args *a, const run_item *items, int n, double tol)
{
    const run_item *base = NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(items[i].label, "sequential") == 0) base = &items[i];
    printf("\n%-16s %6s %7s %8s %5s %6s %6s | %8s | %9s %8s %8s | %9s %8s %8s | %7s %7s | %9s\n",
           "schedule", "stages", "streams", "launches", "waits", "merges", "elided", "cost sum",
           "free p50", "p10", "p90", "graph p50", "p10", "p90", "x free", "x graph", "rel.err");
    for (int i = 0; i < n; i++) {
        const run_item *it = &items[i];
        printf("%-16s %6d %7d %8d %5d %6d %6d |", it->label, it->info.n_stages, it->info.n_streams,
               it->info.n_launches, it->info.n_waits, it->info.n_merges, it->info.n_concats_elided);
        if (it->s->predicted_ms >= 0)
            printf(" %8.4f |", it->s->predicted_ms);
        else
            printf(" %8s |", "-");
        printf(" %9.4f %8.4f %8.4f |", it->free_t.stats.median, it->free_t.p10,
               it->free_t.stats.p90);
        if (it->has_graph)
            printf(" %9.4f %8.4f %8.4f |", it->graph_t.stats.median, it->graph_t.p10,
                   it->graph_t.stats.p90);
        else
            printf(" %9s %8s %8s |", "-", "-", "-");
        if (base)
            printf(" %7.3f", base->free_t.stats.median / it->free_t.stats.median);
        else
            printf(" %7s", "-");
        if (base && base->has_graph && it->has_graph)
            printf(" %7.3f |", base->graph_t.stats.median / it->graph_t.stats.median);
        else
            printf(" %7s |", "-");
        if (isnan(it->rel_l2))
            printf(" %9s\n", "-");
        else
            printf(" %9.2e%s\n", it->rel_l2, it->rel_l2 <= tol ? "" : " FAIL");
    }
    int graphs = 0;
    for (int i = 0; i < n; i++)
        graphs |= items[i].has_graph;
    printf("latency in ms per inference (%s); x: speed-up over the sequential schedule; rel.err: "
           "relative L2 against the sequential executor (tolerance %.0e for %s); cost sum: the "
           "stage costs the schedule was searched with, added up\n",
           graphs ? "free-running launches, and replays of the whole inference captured as one "
                    "CUDA graph"
                  : "free-running launches; no CUDA graph",
           tol, opsched_math_name(a->math));
    for (int i = 0; i < n; i++)
        if (!isnan(items[i].search_s))
            printf("  %s: searched in %.2f s, %lld stage evaluations\n", items[i].label,
                   items[i].search_s, (long long)items[i].stage_evals);
}

static void describe_setup(const run_args *a, opsched_device *dev, const opsched_graph *g)
{
    opsched_device_info info;
    if (opsched_device_info_get(dev, &info) != OPSCHED_OK) memset(&info, 0, sizeof(info));
    printf("%s: batch %lld, %d nodes; %s:%d %s; %s %s, algo %s%s%s, fuse %s, concat elision "
           "%s\n",
           opsched_graph_name(g), (long long)graph_batch(g), opsched_graph_num_nodes(g),
           info.backend, info.index, info.name, opsched_math_name(a->math), layout_name(a->layout),
           a->algo ? a->algo : "heuristic", a->concurrent_algo ? ", concurrent " : "",
           a->concurrent_algo ? a->concurrent_algo : "", a->fuse ? "on" : "off",
           a->elision ? "on" : "off");
}

int cmd_run(opsched_ctx *ctx, int argc, char **argv)
{
    run_args a;
    memset(&a, 0, sizeof(a));
    a.mo.fold_bn = 1;
    a.math = OPSCHED_MATH_TF32;
    a.fuse = a.elision = a.cuda_graph = a.check = a.verify = 1;
    a.timing = (opsched_run_timing_options){200.0, 100, 500.0};
    a.seed = 1;
    int rc = parse_args(argc, argv, &a);
    if (rc < 0) return TOOL_EXIT_OK;
    if (rc) return rc;

    run_item items[MAX_SCHEDULES];
    memset(items, 0, sizeof(items));
    int n_items = 0;
    opsched_graph *g = NULL;
    opsched_device *dev = NULL;
    opsched_executor *ref = NULL;
    opsched_trace *tr = NULL;
    opsched_status st = tool_load_model(ctx, &a.mo, &g);
    if (st != OPSCHED_OK) {
        rc = tool_fail(ctx, st, a.mo.model);
        goto done;
    }
    tool_measure_args ma;
    tool_measure_args_init(&ma);
    ma.backend = a.backend;
    ma.device = a.device;
    st = tool_open_device(ctx, &ma, &dev);
    if (st != OPSCHED_OK) {
        rc = tool_fail(ctx, st, "open the device");
        goto done;
    }
    describe_setup(&a, dev, g);
    if (a.schedule) {
        /* the sequential schedule first: the speed-up's baseline */
        opsched_search_options so;
        memset(&so, 0, sizeof(so));
        so.searcher = OPSCHED_SEARCH_SEQUENTIAL;
        run_item *seq = &items[n_items++];
        snprintf(seq->label, sizeof(seq->label), "sequential");
        seq->search_s = NAN;
        st = opsched_schedule_search(g, &so, &seq->s, NULL);
        run_item *it = &items[n_items++];
        if (st == OPSCHED_OK) st = opsched_schedule_read(ctx, g, a.schedule, &it->s);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, a.schedule);
            goto done;
        }
        snprintf(it->label, sizeof(it->label), "file:%.20s",
                 it->s->searcher && it->s->searcher[0] ? it->s->searcher : "schedule");
        it->search_s = NAN;
    } else {
        rc = search_all(ctx, dev, &a, g, items, &n_items);
        if (rc != TOOL_EXIT_OK) goto done;
        if (a.save_dir && (rc = save_schedules(ctx, &a, g, items, n_items)) != TOOL_EXIT_OK)
            goto done;
    }
    if (a.check) {
        opsched_sched_exec_options o = exec_options(&a);
        st = opsched_executor_create(dev, g, &o.exec, &ref);
        if (st == OPSCHED_OK) st = opsched_executor_run(ref, NULL);
        if (st == OPSCHED_OK) st = opsched_device_sync(dev);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, "the sequential executor (reference)");
            goto done;
        }
    }
    if (a.trace && (st = opsched_trace_create(ctx, &tr)) != OPSCHED_OK) {
        rc = tool_fail(ctx, st, "trace");
        goto done;
    }
    rc = run_all(ctx, dev, &a, g, ref, tr, items, n_items);
    if (rc != TOOL_EXIT_OK) goto done;
    double tol = opsched_profile_tolerance(a.math);
    print_table(&a, items, n_items, tol);
    if (tr) {
        st = opsched_trace_write(tr, a.trace);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, a.trace);
            goto done;
        }
        printf("wrote %s\n", a.trace);
    }
    for (int i = 0; i < n_items; i++)
        if (!isnan(items[i].rel_l2) && !(items[i].rel_l2 <= tol)) {
            fprintf(stderr,
                    "opsched run: %s: outputs differ from the sequential executor (%.2e > "
                    "%.0e)\n",
                    items[i].label, items[i].rel_l2, tol);
            rc = TOOL_EXIT_FAIL;
        }
done:
    for (int i = 0; i < n_items; i++)
        opsched_schedule_free(items[i].s);
    opsched_trace_free(tr);
    opsched_executor_free(ref);
    opsched_device_close(dev);
    opsched_graph_free(g);
    return rc;
}
