/*
 * cmd_profile.c - `opsched profile <zoo-name|file.onnx>`: a whole network
 * profiled on one device over batch sizes and input sizes: end-to-end
 * latency (free-running and as a replayed CUDA graph), every layer's
 * latency, energy per inference, numerics against the CPU backend, and
 * attribution; CSV files, a Chrome trace, rows in the database.
 *
 * With --db a (model, batch, size, algorithm, math, layout) the database
 * already holds is skipped, so a long run (--stage full: 100 sizes)
 * resumes where it was stopped.  The first Ctrl-C (or SIGTERM) finishes
 * the size in flight and stops; a second one aborts.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profile_report.h"
#include <cjson/cJSON.h>

#include "args.h"

#define MAX_BATCHES 64
#define MAX_SIZES 1000
#define MAX_FLAGS 32
#define PLAIN_EVERY_S 5.0
#define FULL_SUMMARIES 4 /* more items than this: one line each */

static volatile sig_atomic_t *stop_flag;

static const char profile_usage[] =
    "usage: opsched profile <zoo-name|file.onnx> [options] [measurement options]\n\n"
    "Profiles a whole network on one device for each batch size and input size:\n"
    "end-to-end latency (free-running and, on GPUs, as a replayed CUDA graph),\n"
    "per-layer latency, energy per inference, numerics against the CPU backend,\n"
    "and attribution (the layers' sum against the end to end).  Math and layout\n"
    "default to the backend's fastest (tf32 and nhwc on a GPU, fp32 and nchw on\n"
    "the CPU), BatchNormalization is folded (the deployed form).  --format csv\n"
    "prints the overall rows (as in the _overall.csv file), json the same as\n"
    "objects; the summaries then go to stderr.\n";

/* ---- arguments ---------------------------------------------------------- */

typedef enum stage_kind { STAGE_NONE, STAGE_SANITY, STAGE_QUICK, STAGE_FULL } stage_kind;

typedef struct profile_args {
    const char *model;
    int64_t batches[MAX_BATCHES];
    int n_batches;
    const char *sizes_text;
    stage_kind stage;
    const char *algo_fallback;
    int cuda_graph, layers, host_layers, check, layer_energy, isolated, fold_bn, dry_run;
    int bn_set; /* --bn given: else BatchNorm is folded, or kept with --train */
    int fuse; /* conv + bias + ReLU as one operation where the backend can */
    int force, follow_symlinks; /* what --out-dir's files may replace or write through */
    const char *out_dir, *db, *trace;
    const char *shapes; /* ONNX: input shapes, as for the other commands */
    tool_train_opts train; /* --train: the training graph instead */
    tool_format fmt;
    tool_measure_record measure; /* applied after the stage's settings */
} profile_args;

enum {
    PF_BATCH, PF_SIZES, PF_STAGE, PF_FALLBACK, PF_CUDA_GRAPH, PF_FUSE, PF_LAYERS, PF_HOST_LAYERS,
    PF_ISOLATED, PF_LAYER_ENERGY, PF_CHECK, PF_BN, PF_OUT_DIR, PF_FORCE, PF_FOLLOW, PF_DB,
    PF_TRACE, PF_DRY_RUN, PF_SHAPES
};

static const tool_opt profile_opts[] = {
    {"batch", 0, "LIST", "batch sizes, e.g. 1,8,32 (default 1)", PF_BATCH},
    {"shapes", 0, "SPEC", "ONNX input shapes, e.g. input_ids:1x384 (4-D inputs\nstill take "
                          "--batch and --input-size)",
     PF_SHAPES},
    {"input-size", 0, "S", "input sizes: 224, a list 224,256,299 or a range\n224:512:32 "
                           "(default: the model's)",
     PF_SIZES},
    {"stage", 0, "S", "sanity: the default size, few iterations, numerics\nchecked; quick: 10 "
                      "sizes; full: 100 sizes, spread\nbetween the model's minimum and twice its "
                      "default",
     PF_STAGE},
    {"algo-fallback", 0, "heuristic", "run layers the algorithm cannot run with the\nlibrary's "
                                      "choice (and record that)",
     PF_FALLBACK},
    {"cuda-graph", 0, "on|off", "also time replays of a captured CUDA graph (default on)",
     PF_CUDA_GRAPH},
    {"fuse", 0, "on|off", "run a convolution, its bias and the activation after\nit "
                          "(Relu, Clip, SiLU, GELU, HardSwish...) as one\noperation, chains of "
                          "element-wise nodes as one launch,\nand exported patterns "
                          "(x*Sigmoid(x), the GELU formula)\nas one operator (default on)",
     PF_FUSE},
    {"layers", 0, "on|off", "time every layer: layers CSV, attribution (default on)", PF_LAYERS},
    {"host-layers", 0, "on|off", "the host's time to enqueue each layer in a free run\n(read in "
                                 "the timed free-running inferences; default on)",
     PF_HOST_LAYERS},
    {"isolated", 0, NULL, "also time each distinct layer alone (CUDA-graph replays,\nno "
                          "timestamps between layers): the sum against the end\nto end checks "
                          "that the layers account for the network",
     PF_ISOLATED},
    {"layer-energy", 0, NULL, "energy of each distinct layer in its own window\n(implies "
                              "--energy)",
     PF_LAYER_ENERGY},
    {"check", 0, "on|off", "compare outputs with the CPU backend (default on, off\nfor --stage "
                           "quick and full)",
     PF_CHECK},
    {"bn", 0, "fold|keep", "zoo: fold BatchNormalization into the convolutions\n(default fold) "
                           "or keep it",
     PF_BN},
    {"out-dir", 0, "DIR", "where <model>_<algo>_overall.csv and _layers.csv go\n(default .; "
                          "added to with --db; an existing file\nis replaced only with --force)",
     PF_OUT_DIR},
    {"force", 0, NULL, "replace existing CSV files in --out-dir", PF_FORCE},
    {"follow-symlinks", 0, NULL, "write through symbolic links in --out-dir (refused\notherwise)",
     PF_FOLLOW},
    {"db", 0, "FILE", "also store every measurement; skip what it holds", PF_DB},
    {"trace", 0, "FILE", "Chrome trace-event JSON of the layer-timed runs and\npower samples "
                         "(opens in Perfetto)",
     PF_TRACE},
    {"dry-run", 0, NULL, "print the batch sizes, input sizes and settings; run\nnothing",
     PF_DRY_RUN},
    {NULL, 0, NULL, NULL, 0}};

static int parse_batches(const char *text, profile_args *a)
{
    char buf[512];
    char *save = NULL;
    snprintf(buf, sizeof(buf), "%s", text);
    a->n_batches = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (a->n_batches == MAX_BATCHES || !tool_parse_int(t, 1, 65536, &a->batches[a->n_batches]))
            return tool_usage_error("profile", "--batch wants sizes like 1,8,32, got '%s'", text);
        a->n_batches++;
    }
    if (!a->n_batches) return tool_usage_error("profile", "--batch wants sizes like 1,8,32");
    return TOOL_EXIT_OK;
}

static int profile_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    profile_args *a = dest;
    switch (o->id) {
    case PF_BATCH: return parse_batches(v, a);
    case PF_SIZES: a->sizes_text = v; return TOOL_EXIT_OK;
    case PF_STAGE:
        if (strcmp(v, "sanity") == 0) a->stage = STAGE_SANITY;
        else if (strcmp(v, "quick") == 0) a->stage = STAGE_QUICK;
        else if (strcmp(v, "full") == 0) a->stage = STAGE_FULL;
        else return tool_usage_error(cmd, "--stage wants sanity, quick or full, got '%s'", v);
        return TOOL_EXIT_OK;
    case PF_FALLBACK:
        if (strcmp(v, "heuristic") != 0)
            return tool_usage_error(cmd, "--algo-fallback wants heuristic, got '%s'", v);
        a->algo_fallback = v;
        return TOOL_EXIT_OK;
    case PF_CUDA_GRAPH: return tool_arg_on_off(cmd, "--cuda-graph", v, &a->cuda_graph);
    case PF_FUSE: return tool_arg_on_off(cmd, "--fuse", v, &a->fuse);
    case PF_LAYERS: return tool_arg_on_off(cmd, "--layers", v, &a->layers);
    case PF_HOST_LAYERS: return tool_arg_on_off(cmd, "--host-layers", v, &a->host_layers);
    case PF_CHECK: return tool_arg_on_off(cmd, "--check", v, &a->check);
    case PF_ISOLATED: a->isolated = 1; return TOOL_EXIT_OK;
    case PF_LAYER_ENERGY: a->layer_energy = 1; return TOOL_EXIT_OK;
    case PF_BN: a->bn_set = 1; return tool_arg_bn(cmd, "--bn", v, &a->fold_bn);
    case PF_OUT_DIR: a->out_dir = v; return TOOL_EXIT_OK;
    case PF_SHAPES: a->shapes = v; return TOOL_EXIT_OK;
    case PF_FORCE: a->force = 1; return TOOL_EXIT_OK;
    case PF_FOLLOW: a->follow_symlinks = 1; return TOOL_EXIT_OK;
    case PF_DB: a->db = v; return TOOL_EXIT_OK;
    case PF_TRACE: a->trace = v; return TOOL_EXIT_OK;
    default: a->dry_run = 1; return TOOL_EXIT_OK;
    }
}

static int parse_args(int argc, char **argv, profile_args *a)
{
    static const char *const refused[] = {"cache", "warmup-iters", "sample-us", NULL};
    a->cuda_graph = a->layers = a->fuse = a->host_layers = a->fold_bn = 1;
    a->check = -1;
    a->out_dir = ".";
    a->batches[0] = 1;
    a->n_batches = 1;
    tool_measure_args_init(&a->measure.scratch);
    a->measure.refused = refused;
    const tool_optgroup groups[] = {
        {"options", profile_opts, profile_opt, a},
        {"measurement options", tool_measure_optlist, tool_measure_record_opt, &a->measure},
        {"training iteration", tool_train_optlist, tool_train_opt, &a->train},
        {"output options", tool_format_optlist, tool_format_opt, &a->fmt}};
    const tool_cli cli = {"profile", profile_usage, NULL, groups, 4, 1, "model"};
    const char *pos[1];
    int n_pos = 0;
    int rc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (rc != TOOL_EXIT_OK) return rc;
    if (!n_pos) return tool_usage_error("profile", "which model? e.g. opsched profile resnet50");
    a->model = pos[0];
    if (a->train.on && !a->bn_set) a->fold_bn = 0; /* BatchNorm trains */
    {
        tool_model_opts probe;
        memset(&probe, 0, sizeof(probe));
        rc = tool_train_apply("profile", &a->train, &probe);
        if (rc != TOOL_EXIT_OK) return rc;
    }
    {
        const char *in[] = {a->db, a->model};
        int crc = tool_check_output("profile", a->trace, in, 2);
        if (crc != TOOL_EXIT_OK) return crc;
    }
    const char *algo = a->measure.scratch.algo;
    if (algo && strcmp(algo, "all") == 0)
        return tool_usage_error("profile", "--algo all is for bench and sweep; profile runs one "
                                           "policy: heuristic, find or an algorithm");
    if (a->check < 0) a->check = a->stage != STAGE_QUICK && a->stage != STAGE_FULL;
    return TOOL_EXIT_OK;
}

/* ---- the model and its sizes -------------------------------------------- */

typedef struct model_src {
    int is_file;
    char name[128];       /* zoo name or file stem: file names and the database */
    int64_t default_size; /* 0: no 4-D input to resize */
    int64_t min_size;
} model_src;

static int looks_like_file(const char *m)
{
    size_t n = strlen(m);
    struct stat st;
    return (n > 5 && strcmp(m + n - 5, ".onnx") == 0) || strchr(m, '/') || stat(m, &st) == 0;
}

static int resolve_model(opsched_ctx *ctx, const char *model, const char *shapes, model_src *m)
{
    memset(m, 0, sizeof(*m));
    m->min_size = 32;
    if (!looks_like_file(model)) {
        const opsched_zoo_info *z = opsched_zoo_find(model);
        if (!z) {
            fprintf(stderr,
                    "opsched profile: unknown model '%s': not a zoo network ('opsched "
                    "models' lists them) nor a file\n",
                    model);
            tool_suggest_model(model);
            return TOOL_EXIT_FAIL;
        }
        snprintf(m->name, sizeof(m->name), "%s", z->name);
        m->default_size = z->default_size;
        if (z->min_size > m->min_size) m->min_size = z->min_size;
        return TOOL_EXIT_OK;
    }
    m->is_file = 1;
    tool_model_run_name(model, m->name, sizeof(m->name));
    opsched_graph *g = NULL;
    /* Probed for its default size only: a symbolic batch (how exports
     * usually come) is bound to 1 here, to each --batch when it runs. */
    opsched_onnx_options oo = {.batch = 1, .shapes = shapes};
    opsched_status st = opsched_onnx_load_file(ctx, model, &oo, &g);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, model);
    for (int i = 0; i < opsched_graph_num_inputs(g) && !m->default_size; i++) {
        const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_input(g, i));
        if (t && t->shape.ndim == 4) m->default_size = t->shape.d[2];
    }
    opsched_graph_free(g);
    return TOOL_EXIT_OK;
}

/* --input-size: H, a list or a range; profile's inputs are square. */
static int parse_sizes(const char *text, int64_t *sizes, int *n)
{
    static int64_t h[MAX_SIZES], w[MAX_SIZES];
    int rc = tool_arg_sizes("profile", "--input-size", text, h, w, MAX_SIZES, n);
    if (rc != TOOL_EXIT_OK) return rc;
    for (int i = 0; i < *n; i++) {
        if (h[i] != w[i])
            return tool_usage_error("profile", "--input-size: profile runs square inputs, not "
                                               "%lldx%lld",
                                    (long long)h[i], (long long)w[i]);
        sizes[i] = h[i];
    }
    return TOOL_EXIT_OK;
}

/* count sizes spread evenly from the model's minimum to twice its default,
 * rounded to multiples of 8, or of 4, 2 or 1 where the spacing is finer
 * than 8 (100 sizes below 448 do not fit on multiples of 8). */
static void spread_sizes(const model_src *m, int count, int64_t *sizes, int *n)
{
    int64_t lo = m->min_size, hi = 2 * m->default_size;
    if (hi < lo) hi = lo;
    double spacing = count > 1 ? (double)(hi - lo) / (count - 1) : 0;
    int64_t grain = 8;
    while (grain > 1 && spacing < (double)grain)
        grain /= 2;
    int64_t first = (lo + grain - 1) / grain * grain;
    *n = 0;
    for (int i = 0; i < count; i++) {
        double x = count > 1 ? (double)lo + spacing * i : (double)m->default_size;
        int64_t s = (int64_t)llround(x / (double)grain) * grain;
        if (s > hi) s = hi / grain * grain;
        if (s < first) s = first;
        if (*n > 0 && sizes[*n - 1] == s) continue;
        sizes[(*n)++] = s;
    }
}

static int choose_sizes(const profile_args *a, const model_src *m, int64_t *sizes, int *n)
{
    if (a->sizes_text) {
        int rc = parse_sizes(a->sizes_text, sizes, n);
        if (rc != TOOL_EXIT_OK) return rc;
        if (!m->default_size)
            return tool_usage_error("profile", "%s has no 4-D input: --input-size does not apply",
                                    m->name);
        for (int i = 0; i < *n; i++)
            if (sizes[i] < m->min_size)
                return tool_usage_error("profile", "size %lld is below %s's minimum %lld",
                                        (long long)sizes[i], m->name, (long long)m->min_size);
        return TOOL_EXIT_OK;
    }
    if (a->stage == STAGE_QUICK || a->stage == STAGE_FULL) {
        if (!m->default_size)
            return tool_usage_error("profile",
                                    "%s has no 4-D input: only its own size can be "
                                    "profiled (no --stage quick or full)",
                                    m->name);
        spread_sizes(m, a->stage == STAGE_QUICK ? 10 : 100, sizes, n);
        return TOOL_EXIT_OK;
    }
    sizes[0] = m->default_size;
    *n = 1;
    return TOOL_EXIT_OK;
}

/* The stage's defaults, then the command line's measurement flags, then
 * "auto" math and layout by backend. */
static void measurement_settings(opsched_ctx *ctx, const profile_args *a, tool_measure_args *ma)
{
    tool_measure_args_init(ma);
    /* Whole networks are timed for a fixed budget (opsched_profile_options'
     * defaults), not until a single operator's estimate is stable. */
    opsched_profile_options po;
    opsched_profile_options_default(&po);
    ma->opts.warmup_ms = po.warmup_ms;
    ma->opts.iters = po.iters;
    ma->opts.min_ms = po.min_ms;
    ma->opts.ci_target = 0;
    if (a->stage == STAGE_SANITY) {
        ma->opts.warmup_ms = 50;
        ma->opts.iters = 10;
        ma->opts.min_ms = 0;
    } else if (a->stage == STAGE_QUICK) {
        ma->opts.warmup_ms = 100;
        ma->opts.iters = 20;
        ma->opts.min_ms = 200;
    }
    tool_measure_replay(&a->measure, "profile", ma);
    tool_measure_resolve(ctx, ma);
}

static void dry_run(const profile_args *a, const model_src *m, const tool_measure_args *ma,
                    const int64_t *sizes, int n_sizes)
{
    const opsched_measure_options *o = &ma->opts;
    printf("%s: %d batch size%s:", m->name, a->n_batches, a->n_batches == 1 ? "" : "s");
    for (int i = 0; i < a->n_batches; i++)
        printf(" %lld", (long long)a->batches[i]);
    printf("\n%d input size%s:", n_sizes, n_sizes == 1 ? "" : "s");
    for (int i = 0; i < n_sizes; i++)
        printf(" %lld", (long long)sizes[i]);
    char ablated[256];
    opsched_ablation_names(o->plan.ablate, " ", ablated, sizeof(ablated));
    printf("\nalgorithm %s%s%s, backend %s, math %s, layout %s, bn %s%s%s\n",
           ma->algo ? ma->algo : "heuristic", a->algo_fallback ? ", fallback " : "",
           a->algo_fallback ? a->algo_fallback : "", ma->backend, opsched_math_name(o->plan.math),
           o->plan.layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw", a->fold_bn ? "fold" : "keep",
           o->plan.ablate ? "; ablated: " : "", ablated);
    printf("warm-up %.0f ms, >= %d inferences and >= %.0f ms; cuda graph %s, layers %s, "
           "energy %s, layer energy %s, check %s\n",
           o->warmup_ms, o->iters, o->min_ms, a->cuda_graph ? "on" : "off",
           a->layers ? "on" : "off", o->energy || a->layer_energy ? "on" : "off",
           a->layer_energy ? "on" : "off", a->check ? "on" : "off");
}

/* A named algorithm must be one the device knows. */
static int check_algo(opsched_device *dev, const char *algo)
{
    if (strcmp(algo, "heuristic") == 0 || strcmp(algo, "find") == 0) return TOOL_EXIT_OK;
    const char *const *names = NULL;
    int n = 0;
    char list[512] = "heuristic, find";
    opsched_device_info di;
    /* The CUDA backend's own kernel of depthwise and grouped convolutions. */
    int cuda = opsched_device_info_get(dev, &di) == OPSCHED_OK && strcmp(di.backend, "cuda") == 0;
    if (cuda && strcmp(algo, "own") == 0) return TOOL_EXIT_OK;
    if (cuda) strncat(list, ", own", sizeof(list) - strlen(list) - 1);
    opsched_device_conv_algos(dev, &names, &n);
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i], algo) == 0) return TOOL_EXIT_OK;
        strncat(list, ", ", sizeof(list) - strlen(list) - 1);
        strncat(list, names[i], sizeof(list) - strlen(list) - 1);
    }
    return tool_usage_error("profile", "unknown algorithm '%s' for this device (valid: %s)", algo,
                            list);
}

/* ---- progress ----------------------------------------------------------- */

typedef struct progress {
    int tty, shown;
    int total, done, skipped, failed;
    double t0, last_print;
} progress;

static const char *duration(double s, char *buf, size_t n)
{
    if (s < 0 || !isfinite(s))
        snprintf(buf, n, "?");
    else if (s < 60)
        snprintf(buf, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    return buf;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Clears the bar before other output goes to the terminal. */
static void progress_clear(progress *p)
{
    if (p->tty && p->shown) fputs("\r\033[K", stderr);
    p->shown = 0;
}

static void progress_show(progress *p, const char *next)
{
    int reached = p->done + p->skipped + p->failed, left = p->total - reached;
    double el = now_s() - p->t0;
    int measured = p->done + p->failed;
    double eta = measured ? el / measured * left : -1;
    char e[32];
    duration(eta, e, sizeof(e));
    if (p->tty) {
        const int width = 24;
        char bar[32];
        int fill = p->total ? reached * width / p->total : width;
        for (int i = 0; i < width; i++)
            bar[i] = i < fill ? '#' : '-';
        bar[width] = '\0';
        fprintf(stderr, "\r\033[K[%s] %d/%d  ETA %s  %s", bar, reached, p->total, e,
                next ? next : "");
        fflush(stderr);
        p->shown = 1;
        return;
    }
    if (next && reached > 0 && el - p->last_print < PLAIN_EVERY_S) return;
    p->last_print = el;
    fprintf(stderr, "opsched profile: %d/%d done (%d skipped, %d failed), ETA %s%s%s\n", reached,
            p->total, p->skipped, p->failed, e, next ? "; next " : "", next ? next : "");
}

/* ---- the run ------------------------------------------------------------ */

typedef struct run_state {
    opsched_ctx *ctx;
    const profile_args *a;
    const model_src *m;
    tool_measure_args *ma;
    opsched_device *dev;
    opsched_device_info di;
    opsched_store *store;
    int64_t run_id, device_id;
    opsched_trace *trace;
    opsched_out overall, layers;   /* the two CSV files, published at the end */
    opsched_csv_writer *overall_csv, *layers_csv;
    opsched_csv_writer *stdout_csv; /* --format csv: the overall rows on stdout */
    const char *algo;
    int many; /* one line per item rather than a summary */
    int numerics_failed;
    int printed;  /* --format csv: rows printed */
    cJSON *json;  /* --format json: the items */
} run_state;

static void json_num(cJSON *o, const char *name, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, name, v);
    else cJSON_AddNullToObject(o, name);
}

/* One item of --format json: what its overall CSV row says. */
static void json_item(cJSON *arr, const profile_item *it, int fold_bn)
{
    const opsched_profile_result *r = it->r;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", it->model);
    cJSON_AddStringToObject(o, "algorithm", it->algo_policy);
    cJSON_AddNumberToObject(o, "batch", (double)it->batch);
    cJSON_AddNumberToObject(o, "input_size", (double)it->size);
    cJSON_AddStringToObject(o, "math", opsched_math_name(it->math));
    cJSON_AddStringToObject(o, "layout", it->layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw");
    cJSON_AddStringToObject(o, "bn", fold_bn ? "fold" : "keep");
    json_num(o, "median_ms", r->e2e.median);
    json_num(o, "mean_ms", r->e2e.mean);
    json_num(o, "p90_ms", r->e2e.p90);
    json_num(o, "p99_ms", r->e2e.p99);
    json_num(o, "cv", r->e2e.cv);
    json_num(o, "graph_median_ms", r->e2e_graph.n > 0 ? r->e2e_graph.median : NAN);
    json_num(o, "enqueue_ms", r->enqueue_ms);
    json_num(o, "layer_sum_ms", r->layer_sum_ms);
    json_num(o, "energy_per_inference_j", r->energy.valid ? r->energy.energy_j : NAN);
    json_num(o, "power_mean_w", r->energy.valid ? r->energy.power_mean_w : NAN);
    cJSON_AddNumberToObject(o, "peak_memory_bytes", (double)r->peak_memory_bytes);
    json_num(o, "check_rel_l2", r->check_rel_l2);
    json_num(o, "check_sensitivity", r->check_sensitivity);
    cJSON_AddNumberToObject(o, "fallback_layers", r->n_fallbacks);
    cJSON_AddItemToArray(arr, o);
}

static void profile_options(const run_state *rs, opsched_profile_options *po)
{
    const opsched_measure_options *mo = &rs->ma->opts;
    opsched_profile_options_default(po);
    po->exec.plan = mo->plan;
    po->exec.plan.algo = rs->algo;
    po->exec.plan.fuse_activation = rs->a->fuse;
    po->exec.algo_fallback = rs->a->algo_fallback;
    po->exec.seed = mo->seed;
    po->warmup_ms = mo->warmup_ms;
    po->iters = mo->iters;
    po->min_ms = mo->min_ms;
    po->energy = mo->energy || rs->a->layer_energy;
    po->layer_energy = rs->a->layer_energy;
    po->isolated = rs->a->isolated;
    po->energy_window_ms = mo->energy_window_ms;
    po->idle_ms = mo->idle_ms;
    po->cuda_graph = rs->a->cuda_graph;
    po->layers = rs->a->layers;
    po->host_layers = rs->a->host_layers;
    /* The CPU backend is the reference: nothing to check it against. */
    po->check = rs->a->check && strcmp(rs->di.backend, "cpu") != 0;
}

static opsched_status load_graph(const run_state *rs, int64_t batch, int64_t size,
                                 opsched_graph **g)
{
    tool_model_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.model = rs->a->model;
    mo.shapes = rs->a->shapes;
    mo.batch = batch;
    mo.height = mo.width = size;
    mo.fold_bn = rs->a->fold_bn;
    mo.load_weights = 1;
    mo.no_rewrite = !rs->a->fuse;
    mo.keep_attention = (rs->ma->opts.plan.ablate & OPSCHED_ABLATE_ATTENTION) != 0;
    mo.keep_projections = (rs->ma->opts.plan.ablate & OPSCHED_ABLATE_PROJECTIONS) != 0;
    mo.keep_scales = (rs->ma->opts.plan.ablate & OPSCHED_ABLATE_LAYER_SCALE) != 0;
    if (rs->a->train.on) mo.train = &rs->a->train.o;
    return tool_load_model(rs->ctx, &mo, g);
}

/* Profiles one (batch, size).  Returns OK, a per-item failure worth
 * reporting and going on from (*item_failed set: out of device memory, a
 * size the network cannot take), or a failure that stops the run. */

/* The writer of --format csv on standard output, made (and its header
 * written) on first use. */
static opsched_status stdout_csv(run_state *rs)
{
    if (rs->stdout_csv) return OPSCHED_OK;
    opsched_status st = opsched_csv_writer_create(rs->ctx, stdout, &rs->stdout_csv);
    if (st == OPSCHED_OK) st = report_overall_begin(rs->stdout_csv, 1);
    return st;
}

static opsched_status profile_one(run_state *rs, progress *pg, int64_t batch, int64_t size,
                                  int *item_failed)
{
    opsched_graph *g = NULL;
    opsched_profile_result *r = NULL;
    opsched_profile_options po;
    char label[200];
    *item_failed = 0;
    snprintf(label, sizeof(label), "%s b%lld %lld", rs->m->name, (long long)batch, (long long)size);
    opsched_status st = load_graph(rs, batch, size, &g);
    if (st == OPSCHED_OK) {
        profile_options(rs, &po);
        if (rs->ma->opts.cooldown_ms > 0) {
            struct timespec ts = {(time_t)(rs->ma->opts.cooldown_ms / 1000),
                                  (long)fmod(rs->ma->opts.cooldown_ms, 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        st = opsched_profile_graph(rs->dev, g, &po, &r);
    }
    if (st == OPSCHED_ERR_SHAPE || st == OPSCHED_ERR_DEVICE_OOM) {
        progress_clear(pg);
        fprintf(stderr, "opsched: %s: %s\n", label, opsched_ctx_last_error(rs->ctx));
        opsched_ctx_clear_error(rs->ctx);
        *item_failed = 1;
        st = OPSCHED_OK;
        goto done;
    }
    if (st != OPSCHED_OK) goto done;
    profile_item it = {.model = rs->m->name,
                       .training = rs->a->train.on,
                       .algo_policy = rs->algo,
                       .algo_fallback = rs->a->algo_fallback,
                       .math = po.exec.plan.math,
                       .layout = po.exec.plan.layout,
                       .batch = batch,
                       .size = size,
                       .g = g,
                       .r = r,
                       .dev = &rs->di};
    if ((st = report_overall_row(rs->overall_csv, &it)) != OPSCHED_OK ||
        (st = report_layers_rows(rs->layers_csv, &it)) != OPSCHED_OK)
        goto done;
    fflush(rs->overall.f);
    fflush(rs->layers.f);
    if (rs->store && (st = report_store(rs->store, rs->run_id, rs->device_id, &it)) != OPSCHED_OK)
        goto done;
    if (rs->trace &&
        (st = opsched_trace_add_profile(rs->trace, &rs->di, g, r, label)) != OPSCHED_OK)
        goto done;
    progress_clear(pg);
    if (rs->a->fmt == TOOL_FMT_CSV) {
        if ((st = stdout_csv(rs)) != OPSCHED_OK ||
            (st = report_overall_row(rs->stdout_csv, &it)) != OPSCHED_OK)
            goto done;
        rs->printed++;
    } else if (rs->a->fmt == TOOL_FMT_JSON) {
        json_item(rs->json, &it, rs->a->fold_bn);
    }
    FILE *text = rs->a->fmt == TOOL_FMT_TABLE ? stdout : stderr;
    if (rs->many)
        report_line(text, &it);
    else
        report_summary(text, &it);
    fflush(stdout);
    rs->numerics_failed |= report_warnings(&it);
done:
    opsched_profile_result_free(r);
    opsched_graph_free(g);
    return st;
}

/* ---- files -------------------------------------------------------------- */

/* mkdir -p; 0 on success. */
static int make_dirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *c = buf + 1; *c; c++) {
        if (*c != '/') continue;
        *c = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        *c = '/';
    }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

/* Opens <dir>/<model>_<algo>_<kind>.csv as a temporary that replaces it at
 * the end, starting from its rows when keep is set (with a database, which
 * the files mirror) and it has rows; *fresh says whether it needs its
 * header.  An existing file is replaced only with --force, and a symbolic
 * link is written through only with --follow-symlinks. */
static opsched_status open_csv(run_state *rs, const char *kind, int keep, opsched_out *o,
                               int *fresh, char *path, size_t n)
{
    struct stat sb;
    snprintf(path, n, "%s/%s_%s_%s.csv", rs->a->out_dir, rs->m->name, rs->algo, kind);
    *fresh = !(keep && stat(path, &sb) == 0 && sb.st_size > 0);
    int flags = *fresh ? 0 : OPSCHED_OUT_APPEND;
    if (!rs->a->follow_symlinks) flags |= OPSCHED_OUT_NO_SYMLINK;
    if (*fresh && !rs->a->force) flags |= OPSCHED_OUT_NO_CLOBBER;
    return opsched_out_open(rs->ctx, path, "CSV", flags, o);
}

/* The command line, for the run's provenance (malloc'd). */
static char *join_command(int argc, char **argv)
{
    size_t len = strlen("opsched") + 1;
    for (int i = 0; i < argc; i++)
        len += strlen(argv[i]) + 1;
    char *s = malloc(len);
    if (!s) return NULL;
    strcpy(s, "opsched");
    for (int i = 0; i < argc; i++) {
        strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

/* With a database: which items it already has (resume); their count. */
static opsched_status mark_done(run_state *rs, const int64_t *sizes, int n_sizes,
                                unsigned char *skip, int *n_skip)
{
    *n_skip = 0;
    for (int b = 0; b < rs->a->n_batches; b++) {
        for (int s = 0; s < n_sizes; s++) {
            opsched_network_record key;
            int found = 0;
            memset(&key, 0, sizeof(key));
            key.model = rs->m->name;
            key.batch = rs->a->batches[b];
            key.height = key.width = sizes[s];
            key.algo_policy = rs->algo;
            key.math = rs->ma->opts.plan.math;
            key.layout = rs->ma->opts.plan.layout;
            opsched_status st = opsched_store_has_network(rs->store, rs->device_id, &key, &found);
            if (st != OPSCHED_OK) return st;
            skip[b * n_sizes + s] = (unsigned char)found;
            *n_skip += found;
        }
    }
    return OPSCHED_OK;
}

static opsched_status open_store(run_state *rs, int argc, char **argv)
{
    opsched_status st = opsched_store_open(rs->ctx, rs->a->db, OPSCHED_STORE_READ_WRITE, &rs->store);
    if (st != OPSCHED_OK) return st;
    if ((st = opsched_store_device(rs->store, &rs->di, &rs->device_id)) != OPSCHED_OK) return st;
    char *command = join_command(argc, argv);
    opsched_run_info ri = {.command = command, .spec = NULL, .shard_index = 0, .shard_count = 1};
    st = opsched_store_begin_run(rs->store, &ri, &rs->run_id);
    free(command);
    return st;
}

/* ---- the command -------------------------------------------------------- */

/* Every (batch, size) in order; stops on a failure or a signal. */
static opsched_status run_items(run_state *rs, const int64_t *sizes, int n_sizes,
                                const unsigned char *skip, progress *pg)
{
    for (int b = 0; b < rs->a->n_batches; b++) {
        for (int s = 0; s < n_sizes; s++) {
            if (*stop_flag) return OPSCHED_ERR_INTERRUPTED;
            if (skip && skip[b * n_sizes + s]) continue;
            char next[96];
            int failed = 0;
            snprintf(next, sizeof(next), "b%lld %lld", (long long)rs->a->batches[b],
                     (long long)sizes[s]);
            progress_show(pg, next);
            opsched_status st = profile_one(rs, pg, rs->a->batches[b], sizes[s], &failed);
            if (st != OPSCHED_OK) return st;
            if (failed)
                pg->failed++;
            else
                pg->done++;
        }
    }
    return OPSCHED_OK;
}

/* Opens what the run writes to: device, database, CSV files, trace. */
static int open_outputs(run_state *rs, int argc, char **argv, const int64_t *sizes, int n_sizes,
                        unsigned char *skip, int *n_skip, char paths[2][4096])
{
    opsched_status st = tool_open_device(rs->ctx, rs->ma, &rs->dev);
    if (st != OPSCHED_OK) return tool_fail(rs->ctx, st, "device");
    if ((st = opsched_device_info_get(rs->dev, &rs->di)) != OPSCHED_OK)
        return tool_fail(rs->ctx, st, "device");
    int rc = check_algo(rs->dev, rs->algo);
    if (rc != TOOL_EXIT_OK) return rc;
    if (make_dirs(rs->a->out_dir) != 0) {
        fprintf(stderr, "opsched profile: cannot create %s: %s\n", rs->a->out_dir, strerror(errno));
        return TOOL_EXIT_FAIL;
    }
    *n_skip = 0;
    if (rs->a->db) {
        if ((st = open_store(rs, argc, argv)) != OPSCHED_OK)
            return tool_fail(rs->ctx, st, rs->a->db);
        if ((st = mark_done(rs, sizes, n_sizes, skip, n_skip)) != OPSCHED_OK)
            return tool_fail(rs->ctx, st, rs->a->db);
    }
    int fresh[2];
    int keep = rs->a->db != NULL;
    if ((st = open_csv(rs, "overall", keep, &rs->overall, &fresh[0], paths[0],
                       sizeof(paths[0]))) != OPSCHED_OK ||
        (st = open_csv(rs, "layers", keep, &rs->layers, &fresh[1], paths[1], sizeof(paths[1]))) !=
            OPSCHED_OK) {
        tool_fail(rs->ctx, st, "profile");
        if (strstr(opsched_ctx_last_error(rs->ctx), "unless forced"))
            fprintf(stderr, "opsched profile: --force replaces the files, --db adds to them, "
                            "or choose another --out-dir\n");
        else if (strstr(opsched_ctx_last_error(rs->ctx), "symbolic link"))
            fprintf(stderr, "opsched profile: --follow-symlinks writes through the links\n");
        return TOOL_EXIT_FAIL;
    }
    if ((st = opsched_csv_writer_create(rs->ctx, rs->overall.f, &rs->overall_csv)) != OPSCHED_OK ||
        (st = opsched_csv_writer_create(rs->ctx, rs->layers.f, &rs->layers_csv)) != OPSCHED_OK ||
        (st = report_overall_begin(rs->overall_csv, fresh[0])) != OPSCHED_OK ||
        (st = report_layers_begin(rs->layers_csv, fresh[1])) != OPSCHED_OK)
        return tool_fail(rs->ctx, st, "CSV");
    if (rs->a->trace && (st = opsched_trace_create(rs->ctx, &rs->trace)) != OPSCHED_OK)
        return tool_fail(rs->ctx, st, "trace");
    return TOOL_EXIT_OK;
}

/* Ends the run in the database and writes the trace; the exit code. */
static int finish(run_state *rs, opsched_status st, const progress *pg, char paths[2][4096])
{
    int rc = TOOL_EXIT_OK;
    if (st == OPSCHED_ERR_INTERRUPTED) {
        fprintf(stderr, "opsched profile: interrupted; run the same command again (with --db) "
                        "to profile the rest\n");
        rc = 130;
    } else if (st != OPSCHED_OK) {
        rc = tool_fail(rs->ctx, st, "profile");
    } else if (pg->failed || rs->numerics_failed) {
        rc = TOOL_EXIT_FAIL;
    }
    if (rs->store) {
        const char *status = rc == 130 ? "interrupted" : rc ? "failed" : "done";
        opsched_status es = opsched_store_end_run(rs->store, rs->run_id, status);
        if (es != OPSCHED_OK && rc == TOOL_EXIT_OK) rc = tool_fail(rs->ctx, es, rs->a->db);
    }
    /* The CSVs hold whole rows of every item that finished: published even
     * when a later item failed or the run was stopped.  A write that failed
     * (a full disk) fails the commit, and the old files stay. */
    opsched_csv_writer_free(rs->overall_csv);
    opsched_csv_writer_free(rs->layers_csv);
    rs->overall_csv = rs->layers_csv = NULL;
    opsched_out *outs[2] = {&rs->overall, &rs->layers};
    for (int i = 0; i < 2; i++) {
        opsched_status cs = opsched_out_commit(rs->ctx, outs[i]);
        if (cs != OPSCHED_OK) {
            rc = tool_fail(rs->ctx, cs, "profile");
            opsched_out_abort(outs[1]);
            return rc;
        }
    }
    if (rs->trace) {
        opsched_status ts = opsched_trace_write(rs->trace, rs->a->trace);
        if (ts != OPSCHED_OK) rc = tool_fail(rs->ctx, ts, "trace");
    }
    if (st != OPSCHED_OK && st != OPSCHED_ERR_INTERRUPTED) return rc;
    FILE *text = rs->a->fmt == TOOL_FMT_TABLE ? stdout : stderr;
    if (rs->a->fmt == TOOL_FMT_CSV && !rs->printed && stdout_csv(rs) != OPSCHED_OK)
        rc = tool_fail(rs->ctx, OPSCHED_ERR_IO, "standard output");
    int jrc = tool_print_json(rs->json);
    rs->json = NULL;
    if (jrc != TOOL_EXIT_OK && rc == TOOL_EXIT_OK) rc = jrc;
    fprintf(text, "%d profiled, %d already in the database, %d failed; wrote %s, %s", pg->done,
            pg->skipped, pg->failed, paths[0], paths[1]);
    if (rs->trace) fprintf(text, ", %s", rs->a->trace);
    fprintf(text, "\n");
    return rc;
}

int cmd_profile(opsched_ctx *ctx, int argc, char **argv)
{
    static profile_args a;
    tool_measure_args ma;
    model_src m;
    static int64_t sizes[MAX_SIZES];
    int n_sizes = 0;
    memset(&a, 0, sizeof(a));
    int rc = parse_args(argc, argv, &a);
    if (rc == TOOL_ARGS_HELP) return TOOL_EXIT_OK;
    if (rc == TOOL_EXIT_OK) rc = resolve_model(ctx, a.model, a.shapes, &m);
    if (rc == TOOL_EXIT_OK && a.train.on) {
        /* the training graph is another network: its rows, files and
         * runs must never pass for the model's inference */
        char base[sizeof(m.name)];
        snprintf(base, sizeof(base), "%s", m.name);
        if (opsched_training_run_name(base, &a.train.o, m.name, sizeof(m.name)) < 0)
            rc = tool_usage_error("profile", "the model name '%s' is too long", base);
    }
    if (rc == TOOL_EXIT_OK) rc = choose_sizes(&a, &m, sizes, &n_sizes);
    if (rc != TOOL_EXIT_OK) return rc;
    measurement_settings(ctx, &a, &ma);
    if (a.dry_run) {
        dry_run(&a, &m, &ma, sizes, n_sizes);
        return TOOL_EXIT_OK;
    }

    run_state rs;
    memset(&rs, 0, sizeof(rs));
    rs.ctx = ctx;
    rs.a = &a;
    rs.m = &m;
    rs.ma = &ma;
    rs.algo = ma.algo ? ma.algo : "heuristic";
    rs.many = a.n_batches * n_sizes > FULL_SUMMARIES;
    /* Before the database is opened: even with --force, the CSVs never
     * replace the database or the model. */
    for (int k = 0; k < 2; k++) {
        char path[4400];
        const char *in[] = {a.db, a.model};
        snprintf(path, sizeof(path), "%s/%s_%s_%s.csv", a.out_dir, m.name, rs.algo,
                 k ? "layers" : "overall");
        if ((rc = tool_check_output("profile", path, in, 2)) != TOOL_EXIT_OK) return rc;
    }
    if (a.fmt == TOOL_FMT_JSON && !(rs.json = cJSON_CreateArray()))
        return tool_fail(ctx, OPSCHED_ERR_NOMEM, "profile");
    char paths[2][4096] = {"", ""};
    progress pg;
    memset(&pg, 0, sizeof(pg));
    unsigned char *skip = calloc((size_t)(a.n_batches * n_sizes), 1);
    if (!skip) {
        fprintf(stderr, "opsched: out of memory\n");
        return TOOL_EXIT_FAIL;
    }
    rc = open_outputs(&rs, argc, argv, sizes, n_sizes, skip, &pg.skipped, paths);
    if (rc != TOOL_EXIT_OK) goto done;

    pg.tty = isatty(STDERR_FILENO);
    pg.total = a.n_batches * n_sizes;
    pg.t0 = now_s();
    if (pg.skipped)
        fprintf(stderr, "opsched profile: %d of %d (batch, size) already in %s: skipped\n",
                pg.skipped, pg.total, a.db);
    stop_flag = tool_stop_install("\nopsched profile: stopping after the size in flight; Ctrl-C again to abort\n");
    opsched_status st = run_items(&rs, sizes, n_sizes, skip, &pg);
    tool_stop_restore();
    progress_clear(&pg);
    if (!pg.tty && st == OPSCHED_OK) progress_show(&pg, NULL);
    rc = finish(&rs, st, &pg, paths);
done:
    free(skip);
    cJSON_Delete(rs.json);
    opsched_trace_free(rs.trace);
    opsched_csv_writer_free(rs.overall_csv);
    opsched_csv_writer_free(rs.layers_csv);
    opsched_csv_writer_free(rs.stdout_csv);
    opsched_out_abort(&rs.overall); /* nothing when published */
    opsched_out_abort(&rs.layers);
    opsched_store_close(rs.store);
    opsched_device_close(rs.dev);
    return rc;
}
