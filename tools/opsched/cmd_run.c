/*
 * cmd_run.c - `opsched run <model>`: runs inter-operator schedules on a
 * device with the executor and reports their latency.
 *
 *   --schedule FILE   one schedule (from `opsched schedule`); its batch size
 *                     is informational, so a schedule searched at batch 1
 *                     runs at --batch 16 (cross-evaluation)
 *   --compare LIST    sequential,greedy,ios searched in this process with
 *                     stage costs measured on the device, then each run
 *
 * Every schedule is timed free-running (launches enqueued back to back)
 * and as a replayed CUDA graph of the whole inference, its outputs are
 * checked against a reference run on the same weights and input (the
 * sequential schedule, every Concat copying),
 * and a table gives median, p10 and p90 latency and the speed-up over the
 * sequential schedule.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "args.h"
#include "run_io.h"

#define MAX_SCHEDULES 8

static const char run_usage[] =
    "usage: opsched run <zoo-name|file.onnx> (--schedule FILE | --compare LIST) [options]\n"
    "       opsched run <model> --input NAME=FILE.npy ... --output-dir DIR [options]\n"
    "\n"
    "Runs inter-operator schedules with the executor (one stream per group,\n"
    "events only where data crosses streams, the inference captured as one CUDA graph,\n"
    "producers writing into concat slices, merged convolutions): latency free-running\n"
    "and as a CUDA graph (median, p10, p90), speed-up over the sequential schedule, and\n"
    "the outputs checked against the sequential reference.  Math defaults to the\n"
    "backend's fastest (tf32 on a GPU, fp32 on the CPU), the layout to the faster of\n"
    "nchw and nhwc for this network (its sequential schedule timed whole in each).\n"
    "--format csv prints one row per schedule (model,batch,input,math,layout,schedule,\n"
    "stages,streams,launches,free_ms,free_p10_ms,free_p90_ms,graph_ms,graph_p10_ms,\n"
    "graph_p90_ms,speedup_free,speedup_graph,rel_err; graph columns empty without a\n"
    "CUDA graph), json the same as an array of objects; all else goes to stderr.\n"
    "--input gives a graph input its value from a NumPy file: a constant where the\n"
    "model needs it while loading (a Reshape's shape), a weight's payload, else\n"
    "run-time data whose shape binds the input's symbolic dimensions (inputs not\n"
    "given are random from --seed); --output-dir\n"
    "writes every output of the deployed schedule (the last row) as DIR/<name>.npy;\n"
    "with either and no --schedule or --compare, the sequential schedule runs;\n"
    "--iters 0 runs once and times nothing.\n";

enum {
    RU_SCHEDULE, RU_COMPARE, RU_VERIFY, RU_DB, RU_R, RU_S, RU_MAX_BLOCK, RU_NO_MERGE, RU_SAVE,
    RU_BACKEND, RU_DEVICE, RU_MATH, RU_LAYOUT, RU_ALGO, RU_CONC_ALGO, RU_FUSE, RU_ELISION,
    RU_GRAPH, RU_CHECK, RU_WARMUP, RU_ITERS, RU_MIN_MS, RU_SEED, RU_TRACE, RU_INPUT, RU_OUTPUT_DIR,
    RU_FORCE, RU_FOLLOW, RU_ABLATE
};

static const tool_opt run_opts[] = {
    {"schedule", 0, "FILE", "run this schedule (opsched schedule -o); the batch it was\nsearched "
                            "at is informational: --batch sets the graph's",
     RU_SCHEDULE},
    {"compare", 0, "LIST", "search and run each of sequential, greedy, ios (comma list)\nwith "
                           "stage costs measured on this device",
     RU_COMPARE},
    {"db", 0, "FILE", "keep measured stage costs in this database's stages table\n(a stage "
                      "measured once is not measured again)",
     RU_DB},
    {"r", 0, "N", "IOS: operators per group (default 3)", RU_R},
    {"s", 0, "N", "IOS and greedy: groups per stage (default 8)", RU_S},
    {"max-block-ops", 0, "N", "IOS: operators per part of a block (default 50)", RU_MAX_BLOCK},
    {"no-merge", 0, NULL, "IOS: no merged convolutions", RU_NO_MERGE},
    {"verify", 0, "on|off", "--compare: run IOS's schedule whole against the greedy and\n"
                            "sequential ones; the ios row runs the fastest (default on)",
     RU_VERIFY},
    {"save-schedules", 0, "DIR", "write each searched schedule to DIR/<model>_<searcher>.json",
     RU_SAVE},
    {"trace", 0, "FILE", "Chrome trace of one traced run per schedule, a track per\nstream "
                         "(opens in Perfetto)",
     RU_TRACE},
    {"input", 0, "NAME=FILE", "graph input NAME from a .npy file (repeat for each input)",
     RU_INPUT},
    {"output-dir", 0, "DIR", "write every output as DIR/<name>.npy (characters other\nthan "
                             "letters, digits, '.', '_' and '-' become '_')",
     RU_OUTPUT_DIR},
    {"force", 0, NULL, "replace existing files in --output-dir and --save-schedules", RU_FORCE},
    {"follow-symlinks", 0, NULL, "write through symbolic links in --output-dir and\n"
                                 "--save-schedules (refused otherwise)",
     RU_FOLLOW},
    {NULL, 0, NULL, NULL, 0}};

static const tool_opt run_exec_opts[] = {
    {"backend", 0, "cuda|cpu", "backend (default: cuda when a GPU is present, else cpu)",
     RU_BACKEND},
    {"device", 0, "N", "device index within the backend (default 0)", RU_DEVICE},
    {"math", 0, "M", "auto (default: tf32 on a GPU, fp32 on the CPU), fp32,\ntf32, fp16 or bf16",
     RU_MATH},
    {"layout", 0, "L", "auto (default: the faster of the two for this network, its sequential\n"
                       "schedule timed whole in each), nchw or nhwc", RU_LAYOUT},
    {"algo", 0, "POLICY", "convolution algorithm policy (default heuristic)", RU_ALGO},
    {"concurrent-algo", 0, "P", "policy for nodes of stages with several groups (default:\n"
                                "--algo)",
     RU_CONC_ALGO},
    {"fuse", 0, "on|off", "convolution + bias + its activation (Relu, Clip, SiLU,\nGELU, HardSwish...) as one operation, chains of element-wise\nnodes as one launch, and exported patterns (x*Sigmoid(x),\nthe GELU formula) as one operator (default on)", RU_FUSE},
    {"concat-elision", 0, "on|off", "producers write into concat slices (default on)",
     RU_ELISION},
    {"ablate", 0, "LIST", TOOL_ABLATE_HELP,
     RU_ABLATE},
    {"cuda-graph", 0, "on|off", "also time the whole inference as a CUDA graph (default on)",
     RU_GRAPH},
    {"check", 0, "on|off",
     "compare outputs with the sequential reference run\n(every Concat copying; default on)",
     RU_CHECK},
    {"warmup-ms", 0, "MS", "warm-up per schedule and mode (default 200)", RU_WARMUP},
    {"iters", 0, "N", "timed inferences, at least (default 100; 0: run once, time\nnothing)",
     RU_ITERS},
    {"min-ms", 0, "MS", "and at least this long (default 500)", RU_MIN_MS},
    {"seed", 0, "N", "weights and inputs (default 1)", RU_SEED},
    {NULL, 0, NULL, NULL, 0}};

typedef struct run_args {
    tool_model_opts mo;
    tool_train_opts train; /* --train: the training graph instead */
    const char *schedule, *compare, *db, *save_dir, *trace;
    const char *backend, *algo, *concurrent_algo;
    int device;
    opsched_math math;
    opsched_layout layout;
    int math_auto, layout_auto; /* chosen by backend once it is known */
    int fuse, elision, cuda_graph, check;
    unsigned ablate; /* opsched_ablation bits */
    int verify; /* --compare: the ios row runs the fastest of ios, greedy, sequential whole */
    opsched_search_options so;
    opsched_run_timing_options timing;
    int no_timing; /* --iters 0 */
    uint64_t seed;
    tool_format fmt;
    run_io io;
    opsched_onnx_value values[RUN_IO_MAX]; /* the --input files, for the loader */
} run_args;

/* Where the report goes: stdout, or stderr when stdout carries --format
 * csv or json. */
static FILE *rep;

static int parse_ms(const char *flag, const char *v, double *out)
{
    char *end = NULL;
    double d = strtod(v, &end);
    if (end == v || *end || !(d >= 0 && d <= 3.6e6))
        return tool_usage_error("run", "%s wants milliseconds, got '%s'", flag, v);
    *out = d;
    return 0;
}

static int run_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    run_args *a = dest;
    int64_t iv;
    switch (o->id) {
    case RU_SCHEDULE: a->schedule = v; return TOOL_EXIT_OK;
    case RU_COMPARE: a->compare = v; return TOOL_EXIT_OK;
    case RU_DB: a->db = v; return TOOL_EXIT_OK;
    case RU_R:
    case RU_S:
    case RU_MAX_BLOCK:
        if (!tool_parse_int(v, 1, 64, &iv))
            return tool_usage_error(cmd, "--%s wants 1 to 64, got '%s'", o->name, v);
        if (o->id == RU_R) a->so.r = (int)iv;
        else if (o->id == RU_S) a->so.s = (int)iv;
        else a->so.max_block_ops = (int)iv;
        return TOOL_EXIT_OK;
    case RU_NO_MERGE: a->so.no_merge = 1; return TOOL_EXIT_OK;
    case RU_SAVE: a->save_dir = v; return TOOL_EXIT_OK;
    case RU_TRACE: a->trace = v; return TOOL_EXIT_OK;
    case RU_INPUT: return run_io_add(&a->io, v);
    case RU_OUTPUT_DIR: a->io.out_dir = v; return TOOL_EXIT_OK;
    case RU_FORCE: a->io.out_flags &= ~OPSCHED_OUT_NO_CLOBBER; return TOOL_EXIT_OK;
    case RU_FOLLOW: a->io.out_flags &= ~OPSCHED_OUT_NO_SYMLINK; return TOOL_EXIT_OK;
    case RU_BACKEND: a->backend = v; return TOOL_EXIT_OK;
    case RU_DEVICE:
        if (!tool_parse_int(v, 0, 1024, &iv))
            return tool_usage_error(cmd, "--device wants an index within the backend, got '%s'", v);
        a->device = (int)iv;
        return TOOL_EXIT_OK;
    case RU_MATH: return tool_arg_math(cmd, "--math", v, &a->math, &a->math_auto);
    case RU_LAYOUT: return tool_arg_layout(cmd, "--layout", v, &a->layout, &a->layout_auto);
    case RU_ALGO: a->algo = v; return TOOL_EXIT_OK;
    case RU_CONC_ALGO: a->concurrent_algo = v; return TOOL_EXIT_OK;
    case RU_FUSE: return tool_arg_on_off(cmd, "--fuse", v, &a->fuse);
    case RU_ABLATE: return tool_arg_ablate(cmd, "--ablate", v, &a->ablate);
    case RU_ELISION: return tool_arg_on_off(cmd, "--concat-elision", v, &a->elision);
    case RU_GRAPH: return tool_arg_on_off(cmd, "--cuda-graph", v, &a->cuda_graph);
    case RU_CHECK: return tool_arg_on_off(cmd, "--check", v, &a->check);
    case RU_VERIFY: return tool_arg_on_off(cmd, "--verify", v, &a->verify);
    case RU_WARMUP: return parse_ms("--warmup-ms", v, &a->timing.warmup_ms) ? TOOL_EXIT_USAGE : 0;
    case RU_MIN_MS: return parse_ms("--min-ms", v, &a->timing.min_ms) ? TOOL_EXIT_USAGE : 0;
    case RU_ITERS:
        if (!tool_parse_int(v, 0, 1000000, &iv))
            return tool_usage_error(cmd, "--iters wants a count, got '%s'", v);
        a->no_timing = iv == 0;
        if (iv > 0) a->timing.iters = (int)iv;
        return TOOL_EXIT_OK;
    default:
        if (!tool_parse_int(v, 0, INT64_MAX, &iv))
            return tool_usage_error(cmd, "--seed wants a number, got '%s'", v);
        a->seed = (uint64_t)iv;
        return TOOL_EXIT_OK;
    }
}

static int parse_args(int argc, char **argv, run_args *a)
{
    const tool_optgroup groups[] = {
        {"schedule options", run_opts, run_opt, a},
        {"model options", tool_model_optlist, tool_model_opt, &a->mo},
        {"execution options", run_exec_opts, run_opt, a},
        {"training iteration", tool_train_optlist, tool_train_opt, &a->train},
        {"output options", tool_format_optlist, tool_format_opt, &a->fmt}};
    const tool_cli cli = {"run", run_usage, NULL, groups, 5, 1, "model"};
    const char *pos[1];
    int n_pos = 0;
    int rc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (rc != TOOL_EXIT_OK) return rc;
    rc = tool_train_apply("run", &a->train, &a->mo);
    if (rc != TOOL_EXIT_OK) return rc;
    if (!n_pos) return tool_usage_error("run", "which model? give a zoo name or an .onnx file");
    a->mo.model = pos[0];
    if (!a->schedule && !a->compare && (a->io.n || a->io.out_dir)) a->compare = "sequential";
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
    opsched_exec_info info;
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

static opsched_exec_options exec_options(const run_args *a)
{
    opsched_exec_options o;
    memset(&o, 0, sizeof(o));
    o.plan.algo = a->algo;
    o.plan.math = a->math;
    o.plan.layout = a->layout;
    o.plan.fuse_activation = a->fuse;
    o.plan.ablate = a->ablate;
    o.algo_fallback = "heuristic";
    o.seed = a->seed;
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
    opsched_exec_options o = exec_options(a);
    opsched_whole_check w;
    opsched_status st = opsched_schedule_keep_fastest(dev, g, &so, &o, &ios->s, &w);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "run the schedules whole");
    fprintf(rep, "ios verified whole: ios %.4f ms, greedy %.4f ms, sequential %.4f ms; the ios row runs "
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
        fprintf(rep,
                "stage costs: %lld stages measured (%lld unsupported) in %.1f s (building %.1f, "
                "capturing %.1f, timing %.1f), %lld answered from memory%s",
                (long long)ms.measured, (long long)ms.unsupported, ms.seconds, ms.build_seconds,
                ms.capture_seconds, ms.timing_seconds, (long long)ms.cached, c.store ? "" : "\n");
    if (rc == TOOL_EXIT_OK && c.store) fprintf(rep, ", %lld from %s\n", (long long)c.cache.hits, a->db);
    opsched_stage_measurer_free(c.m);
    opsched_store_close(c.store);
    return rc;
}

/* Every file the command reads (the model, --db, --schedule, the --input
 * files; NULL entries for those not given), for the checks that no output
 * is one of them.  Returns the count; in holds RUN_INPUTS_MAX. */
#define RUN_INPUTS_MAX (RUN_IO_MAX + 3)
static int run_inputs(const run_args *a, const char **in)
{
    int n = 0;
    in[n++] = a->db;
    in[n++] = a->mo.model;
    in[n++] = a->schedule;
    for (int k = 0; k < a->io.n; k++)
        in[n++] = a->io.in[k].path;
    return n;
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
        const char *in[RUN_INPUTS_MAX];
        int rc = tool_check_output("run", path, in, run_inputs(a, in));
        if (rc != TOOL_EXIT_OK) return rc;
        opsched_status st = opsched_schedule_write_flags(items[i].s, g, path, a->io.out_flags);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, path);
            run_io_refusal_hint(ctx);
            return rc;
        }
        fprintf(rep, "wrote %s\n", path);
    }
    return TOOL_EXIT_OK;
}

/* ---- running ------------------------------------------------------------ */

/* Feeds the --input files to ex's graph inputs. */
static opsched_status bind_inputs(const run_args *a, opsched_executor *ex)
{
    for (int k = 0; k < a->io.n; k++) {
        const run_io_input *in = &a->io.in[k];
        if (in->graph_input < 0) continue; /* consumed by the loader */
        opsched_status st = opsched_executor_set_input_data(ex, in->graph_input, in->dtype,
                                                            in->a.data, (size_t)in->a.numel);
        if (st != OPSCHED_OK) return st;
    }
    return OPSCHED_OK;
}

static opsched_status get_output(void *user, int i, opsched_dtype dt, void *buf, size_t n)
{
    return opsched_executor_get_output_data(user, i, dt, buf, n);
}

/* Builds and checks one schedule's executor (outputs against ref); the
 * deployed one (write_outputs) writes every output to --output-dir. */
static int build_one(opsched_ctx *ctx, opsched_device *dev, const run_args *a,
                     const opsched_graph *g, opsched_executor *ref, run_item *it,
                     int write_outputs, opsched_executor **out)
{
    opsched_exec_options o = exec_options(a);
    opsched_executor *ex = NULL;
    opsched_status st = opsched_executor_create(dev, g, it->s, &o, &ex);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, it->label);
    it->rel_l2 = NAN;
    st = opsched_executor_info(ex, &it->info);
    if (st == OPSCHED_OK) st = bind_inputs(a, ex);
    if (st == OPSCHED_OK && (ref || write_outputs)) {
        st = opsched_executor_run(ex);
        if (st == OPSCHED_OK) st = opsched_device_sync(dev);
        if (st == OPSCHED_OK && ref) st = opsched_executor_compare(ex, ref, &it->rel_l2);
    }
    if (st != OPSCHED_OK) {
        opsched_executor_free(ex);
        return tool_fail(ctx, st, it->label);
    }
    if (write_outputs) {
        int rc = run_io_write(ctx, &a->io, g, get_output, ex);
        if (rc != TOOL_EXIT_OK) {
            opsched_executor_free(ex);
            return rc;
        }
        fprintf(stderr, "wrote the %d output(s) of %s to %s\n", opsched_graph_num_outputs(g),
                it->label, a->io.out_dir);
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
    opsched_executor *ex[MAX_SCHEDULES] = {NULL};
    opsched_run_timing t[MAX_SCHEDULES];
    int rc = TOOL_EXIT_OK;
    opsched_status st = OPSCHED_OK;
    for (int i = 0; i < n && rc == TOOL_EXIT_OK; i++) {
        fprintf(stderr, "building %s...\n", items[i].label);
        rc = build_one(ctx, dev, a, g, ref, &items[i], a->io.out_dir && i == n - 1, &ex[i]);
    }
    if (rc != TOOL_EXIT_OK) goto done;
    for (int i = 0; i < n; i++) {
        items[i].free_t.stats.median = items[i].free_t.p10 = items[i].free_t.stats.p90 = NAN;
    }
    if (a->no_timing) goto traces;
    fprintf(stderr, "timing free runs...\n");
    st = opsched_executors_time(ex, n, 0, &a->timing, t);
    if (st != OPSCHED_OK) goto fail;
    for (int i = 0; i < n; i++) items[i].free_t = t[i];
    if (a->cuda_graph) {
        int graphs = 1;
        for (int i = 0; i < n && graphs; i++) {
            st = opsched_executor_capture(ex[i]);
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
            st = opsched_executors_time(ex, n, 1, &a->timing, t);
            if (st != OPSCHED_OK) goto fail;
            for (int i = 0; i < n; i++) {
                items[i].graph_t = t[i];
                items[i].has_graph = 1;
            }
        }
    }
traces:
    for (int i = 0; i < n && tr; i++) {
        opsched_exec_span *spans = NULL;
        int ns = 0;
        double total = 0;
        opsched_device_info info;
        char label[160];
        snprintf(label, sizeof(label), "%.100s %.31s", opsched_graph_name(g), items[i].label);
        st = opsched_executor_trace(ex[i], &spans, &ns, &total);
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
        opsched_executor_free(ex[i]);
    return rc;
}

static void print_table(const run_args *a, const run_item *items, int n, double tol)
{
    const run_item *base = NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(items[i].label, "sequential") == 0) base = &items[i];
    fprintf(rep, "\n%-16s %6s %7s %8s %5s %6s %6s | %8s | %9s %8s %8s | %9s %8s %8s | %7s %7s | %9s\n",
           "schedule", "stages", "streams", "launches", "waits", "merges", "elided", "cost sum",
           "free p50", "p10", "p90", "graph p50", "p10", "p90", "x free", "x graph", "rel.err");
    for (int i = 0; i < n; i++) {
        const run_item *it = &items[i];
        fprintf(rep, "%-16s %6d %7d %8d %5d %6d %6d |", it->label, it->info.n_stages, it->info.n_streams,
               it->info.n_launches, it->info.n_waits, it->info.n_merges, it->info.n_concats_elided);
        if (it->s->predicted_ms >= 0)
            fprintf(rep, " %8.4f |", it->s->predicted_ms);
        else
            fprintf(rep, " %8s |", "-");
        if (isfinite(it->free_t.stats.median))
            fprintf(rep, " %9.4f %8.4f %8.4f |", it->free_t.stats.median, it->free_t.p10,
                    it->free_t.stats.p90);
        else
            fprintf(rep, " %9s %8s %8s |", "-", "-", "-");
        if (it->has_graph)
            fprintf(rep, " %9.4f %8.4f %8.4f |", it->graph_t.stats.median, it->graph_t.p10,
                   it->graph_t.stats.p90);
        else
            fprintf(rep, " %9s %8s %8s |", "-", "-", "-");
        if (base && isfinite(base->free_t.stats.median / it->free_t.stats.median))
            fprintf(rep, " %7.3f", base->free_t.stats.median / it->free_t.stats.median);
        else
            fprintf(rep, " %7s", "-");
        if (base && base->has_graph && it->has_graph)
            fprintf(rep, " %7.3f |", base->graph_t.stats.median / it->graph_t.stats.median);
        else
            fprintf(rep, " %7s |", "-");
        if (isnan(it->rel_l2))
            fprintf(rep, " %9s\n", "-");
        else
            fprintf(rep, " %9.2e%s\n", it->rel_l2, it->rel_l2 <= tol ? "" : " FAIL");
    }
    int graphs = 0;
    for (int i = 0; i < n; i++)
        graphs |= items[i].has_graph;
    fprintf(rep, "latency in ms per %s (%s); x: speed-up over the sequential schedule; rel.err: "
           "relative L2 against the sequential reference (tolerance %.0e for %s); cost sum: the "
           "stage costs the schedule was searched with, added up\n",
           !a->train.on      ? "inference"
           : a->train.o.step ? "training iteration (forward, loss, backward and the optimizer step)"
                             : "training iteration (forward, loss and backward; --optimizer adds "
                               "the optimizer step)",
           graphs ? "free-running launches, and replays of the whole graph captured as one "
                    "CUDA graph"
                  : "free-running launches; no CUDA graph",
           tol, opsched_math_name(a->math));
    for (int i = 0; i < n; i++)
        if (!isnan(items[i].search_s))
            fprintf(rep, "  %s: searched in %.2f s, %lld stage evaluations\n", items[i].label,
                   items[i].search_s, (long long)items[i].stage_evals);
}

static void input_text(const opsched_graph *g, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int i = 0; i < opsched_graph_num_inputs(g); i++) {
        const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_input(g, i));
        if (t && t->shape.ndim == 4) {
            snprintf(buf, n, "%lldx%lld", (long long)t->shape.d[2], (long long)t->shape.d[3]);
            return;
        }
    }
}

/* A time or ratio; one not measured (not finite) is empty. */
static void csv_ms(opsched_csv_writer *w, double v)
{
    if (isfinite(v)) opsched_csv_double(w, v, "%.6g");
    else opsched_csv_empty(w);
}

static void json_ms(cJSON *o, const char *name, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, name, v);
    else cJSON_AddNullToObject(o, name);
}

/* --format csv or json: one row (object) per schedule; stdout has nothing else. */
static int print_rows(opsched_ctx *ctx, const run_args *a, const opsched_graph *g,
                      const run_item *items, int n)
{
    static const char *const cols[] = {
        "model",      "batch",        "input",       "math",        "layout",        "schedule",
        "stages",     "streams",      "launches",    "free_ms",     "free_p10_ms",   "free_p90_ms",
        "graph_ms",   "graph_p10_ms", "graph_p90_ms", "speedup_free", "speedup_graph", "rel_err"};
    const int n_cols = (int)(sizeof(cols) / sizeof(cols[0]));
    const run_item *base = NULL;
    char input[64];
    input_text(g, input, sizeof(input));
    for (int i = 0; i < n; i++)
        if (strcmp(items[i].label, "sequential") == 0) base = &items[i];
    cJSON *arr = a->fmt == TOOL_FMT_JSON ? cJSON_CreateArray() : NULL;
    opsched_csv_writer *w = NULL;
    opsched_status st = OPSCHED_OK;
    if (a->fmt == TOOL_FMT_CSV) {
        char header[256] = "";
        for (int c = 0; c < n_cols; c++) {
            if (c) strcat(header, ",");
            strcat(header, cols[c]);
        }
        st = opsched_csv_writer_create(ctx, stdout, &w);
        if (st == OPSCHED_OK) st = opsched_csv_header(w, header);
    }
    for (int i = 0; st == OPSCHED_OK && i < n; i++) {
        const run_item *it = &items[i];
        double v[9] = {it->free_t.stats.median, it->free_t.p10, it->free_t.stats.p90, NAN, NAN, NAN,
                       base ? base->free_t.stats.median / it->free_t.stats.median : NAN, NAN,
                       it->rel_l2};
        if (it->has_graph) {
            v[3] = it->graph_t.stats.median;
            v[4] = it->graph_t.p10;
            v[5] = it->graph_t.stats.p90;
            if (base && base->has_graph) v[7] = base->graph_t.stats.median / it->graph_t.stats.median;
        }
        if (a->fmt == TOOL_FMT_CSV) {
            opsched_csv_str(w, opsched_graph_name(g));
            opsched_csv_int(w, graph_batch(g));
            opsched_csv_str(w, input);
            opsched_csv_str(w, opsched_math_name(a->math));
            opsched_csv_str(w, layout_name(a->layout));
            opsched_csv_str(w, it->label);
            opsched_csv_int(w, it->info.n_stages);
            opsched_csv_int(w, it->info.n_streams);
            opsched_csv_int(w, it->info.n_launches);
            for (int k = 0; k < 9; k++) csv_ms(w, v[k]);
            st = opsched_csv_end_row(w);
            continue;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, cols[0], opsched_graph_name(g));
        cJSON_AddNumberToObject(o, cols[1], (double)graph_batch(g));
        cJSON_AddStringToObject(o, cols[2], input);
        cJSON_AddStringToObject(o, cols[3], opsched_math_name(a->math));
        cJSON_AddStringToObject(o, cols[4], layout_name(a->layout));
        cJSON_AddStringToObject(o, cols[5], it->label);
        cJSON_AddNumberToObject(o, cols[6], it->info.n_stages);
        cJSON_AddNumberToObject(o, cols[7], it->info.n_streams);
        cJSON_AddNumberToObject(o, cols[8], it->info.n_launches);
        for (int k = 0; k < 9; k++) json_ms(o, cols[9 + k], v[k]);
        cJSON_AddItemToArray(arr, o);
    }
    opsched_csv_writer_free(w);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "CSV");
    return tool_print_json(arr);
}

/* --layout auto: the network's sequential schedule run whole in each
 * layout, timed in turns, and the faster kept; a layout the network cannot
 * run in here is not chosen (the CPU backend's convolutions are NCHW only).
 * When neither runs, the backend's usual layout stays and the search says
 * what fails. */
static void choose_layout(opsched_ctx *ctx, opsched_device *dev, run_args *a,
                          const opsched_graph *g)
{
    static const opsched_layout cand[] = {OPSCHED_LAYOUT_NCHW, OPSCHED_LAYOUT_NHWC};
    double ms[2];
    int best = -1;
    opsched_exec_options o = exec_options(a);
    opsched_status st = opsched_layouts_time_whole(dev, g, NULL, cand, 2, &o, NULL, ms, &best);
    if (st != OPSCHED_OK || best < 0) {
        fprintf(rep, "layout auto: %s (neither layout ran whole: %s)\n", layout_name(a->layout),
                opsched_ctx_last_error(ctx));
        opsched_ctx_clear_error(ctx);
        return;
    }
    a->layout = cand[best];
    if (isnan(ms[best]))
        fprintf(rep, "layout auto: %s (the only layout the network runs in here)\n",
                layout_name(a->layout));
    else
        fprintf(rep, "layout auto: %s (the sequential schedule whole: nchw %.4f ms, nhwc %.4f ms)\n",
                layout_name(a->layout), ms[0], ms[1]);
}

static void describe_setup(const run_args *a, opsched_device *dev, const opsched_graph *g)
{
    char ablated[256];
    opsched_ablation_names(a->ablate, " ", ablated, sizeof(ablated));
    opsched_device_info info;
    if (opsched_device_info_get(dev, &info) != OPSCHED_OK) memset(&info, 0, sizeof(info));
    fprintf(rep, "%s: batch %lld, %d nodes; %s:%d %s; %s %s, algo %s%s%s, fuse %s, concat elision "
           "%s%s%s\n",
           opsched_graph_name(g), (long long)graph_batch(g), opsched_graph_num_nodes(g),
           info.backend, info.index, info.name, opsched_math_name(a->math), layout_name(a->layout),
           a->algo ? a->algo : "heuristic", a->concurrent_algo ? ", concurrent " : "",
           a->concurrent_algo ? a->concurrent_algo : "", a->fuse ? "on" : "off",
           a->elision ? "on" : "off", a->ablate ? "; ablated: " : "", ablated);
}

int cmd_run(opsched_ctx *ctx, int argc, char **argv)
{
    run_args a;
    memset(&a, 0, sizeof(a));
    a.mo.fold_bn = -1; /* folded, as deployed; kept with --train, where it trains */
    a.math_auto = a.layout_auto = 1;
    a.fuse = a.elision = a.cuda_graph = a.check = a.verify = 1;
    a.timing = (opsched_run_timing_options){200.0, 100, 500.0};
    a.seed = 1;
    /* --output-dir and --save-schedules name no file: what is there stays */
    a.io.out_flags = OPSCHED_OUT_NO_CLOBBER | OPSCHED_OUT_NO_SYMLINK;
    int rc = parse_args(argc, argv, &a);
    if (rc != TOOL_EXIT_OK) return rc == TOOL_ARGS_HELP ? TOOL_EXIT_OK : rc;
    if (a.mo.fold_bn < 0) a.mo.fold_bn = !a.train.on;
    rep = a.fmt == TOOL_FMT_TABLE ? stdout : stderr;
    {
        const char *in[RUN_INPUTS_MAX];
        int crc = tool_check_output("run", a.trace, in, run_inputs(&a, in));
        if (crc != TOOL_EXIT_OK) return crc;
    }

    run_item items[MAX_SCHEDULES];
    memset(items, 0, sizeof(items));
    int n_items = 0;
    opsched_graph *g = NULL;
    opsched_device *dev = NULL;
    opsched_executor *ref = NULL;
    opsched_trace *tr = NULL;
    opsched_status st = OPSCHED_OK;
    /* A file that carries its weights runs with them. */
    a.mo.load_weights = 1;
    a.mo.no_rewrite = !a.fuse;
    a.mo.keep_attention = (a.ablate & OPSCHED_ABLATE_ATTENTION) != 0;
    a.mo.keep_projections = (a.ablate & OPSCHED_ABLATE_PROJECTIONS) != 0;
    a.mo.keep_scales = (a.ablate & OPSCHED_ABLATE_LAYER_SCALE) != 0;
    if (a.io.n && (rc = run_io_read(ctx, &a.io)) != TOOL_EXIT_OK) goto done;
    /* The loader takes every --input value: constants and weights where the
     * model needs them, shapes that bind symbolic dimensions. */
    a.mo.values = a.values;
    a.mo.n_values = run_io_values(&a.io, a.values);
    if (!tool_is_onnx_path(a.mo.model)) { /* a zoo model: every input is fed at run time */
        a.mo.n_values = 0;
        for (int i = 0; i < a.io.n; i++) a.io.in[i].given = 0;
    }
    st = tool_load_model(ctx, &a.mo, &g);
    if (st != OPSCHED_OK) {
        rc = a.io.n ? run_io_load_fail(ctx, &a.io, st) : -1;
        if (rc < 0) rc = tool_fail(ctx, st, a.mo.model);
        goto done;
    }
    if (a.io.n && (rc = run_io_match(ctx, &a.io, g)) != TOOL_EXIT_OK) goto done;
    if (a.io.out_dir) {
        const char *in[RUN_INPUTS_MAX];
        rc = run_io_check(ctx, &a.io, g, in, run_inputs(&a, in));
        if (rc != TOOL_EXIT_OK) goto done;
    }
    tool_measure_args ma;
    tool_measure_args_init(&ma);
    ma.backend = a.backend;
    ma.device = a.device;
    st = tool_open_device(ctx, &ma, &dev);
    if (a.math_auto) a.math = ma.opts.plan.math;
    if (a.layout_auto) a.layout = ma.opts.plan.layout;
    if (st != OPSCHED_OK) {
        rc = tool_fail(ctx, st, "open the device");
        goto done;
    }
    if (a.layout_auto) choose_layout(ctx, dev, &a, g);
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
        /* the sequential schedule with every Concat copying: the plainest run */
        opsched_exec_options o = exec_options(&a);
        o.no_concat_elision = 1;
        st = opsched_executor_create(dev, g, NULL, &o, &ref);
        if (st == OPSCHED_OK) st = bind_inputs(&a, ref);
        if (st == OPSCHED_OK) st = opsched_executor_run(ref);
        if (st == OPSCHED_OK) st = opsched_device_sync(dev);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, "the sequential reference");
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
    if (a.fmt == TOOL_FMT_TABLE) print_table(&a, items, n_items, tol);
    else if ((rc = print_rows(ctx, &a, g, items, n_items)) != TOOL_EXIT_OK) goto done;
    if (tr) {
        st = opsched_trace_write(tr, a.trace);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, a.trace);
            goto done;
        }
        fprintf(rep, "wrote %s\n", a.trace);
    }
    opsched_plan_cache_stats pc;
    opsched_device_plan_cache_stats(dev, &pc);
    if (pc.store_loads + pc.store_writes > 0)
        fprintf(rep, "cuDNN plans: %lld loaded from the plan store, %lld compiled and stored\n",
                (long long)pc.store_loads, (long long)pc.store_writes);
    for (int i = 0; i < n_items; i++)
        if (!isnan(items[i].rel_l2) && !(items[i].rel_l2 <= tol)) {
            fprintf(stderr,
                    "opsched run: %s: outputs differ from the sequential reference (%.2e > "
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
    run_io_clear(&a.io);
    return rc;
}
