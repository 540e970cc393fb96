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
#include "tool.h"

#define MAX_BATCHES 64
#define MAX_SIZES 1000
#define MAX_FLAGS 32
#define PLAIN_EVERY_S 5.0
#define FULL_SUMMARIES 4 /* more items than this: one line each */

static volatile sig_atomic_t *stop_flag;

static void profile_help(void)
{
    printf("usage: opsched profile <zoo-name|file.onnx> [options] [measurement options]\n\n"
           "Profiles a whole network on one device for each batch size and input size:\n"
           "end-to-end latency (free-running and, on GPUs, as a replayed CUDA graph),\n"
           "per-layer latency, energy per inference, numerics against the CPU backend,\n"
           "and attribution (the layers' sum against the end to end).\n\n"
           "options:\n"
           "  --batch LIST           batch sizes, e.g. 1,8,32 (default 1)\n"
           "  --sizes LIST|A:B:S     input sizes: 224,256,299 or a range 224:512:32\n"
           "  --stage S              sanity: the default size, few iterations, numerics\n"
           "                         checked; quick: 10 sizes; full: 100 sizes, spread\n"
           "                         between the model's minimum and twice its default\n"
           "  --algo POLICY          heuristic (default), find, or a convolution algorithm\n"
           "  --algo-fallback heuristic  run layers the algorithm cannot run with the\n"
           "                         library's choice (and record that)\n"
           "  --cuda-graph on|off    also time replays of a captured CUDA graph (default on)\n"
           "  --fuse on|off          run a convolution, its bias and a following ReLU as one\n"
           "                         operation where the backend can (default on)\n"
           "  --layers on|off        time every layer: layers CSV, attribution (default on)\n"
           "  --host-layers on|off   the host's time to enqueue each layer in a free run\n"
           "                         (read in the timed free-running inferences; default on)\n"
           "  --isolated             also time each distinct layer alone (CUDA-graph replays,\n"
           "                         no timestamps between layers): the sum against the end\n"
           "                         to end checks that the layers account for the network\n"
           "  --layer-energy         energy of each distinct layer in its own window\n"
           "                         (implies --energy)\n"
           "  --check on|off         compare outputs with the CPU backend (default on, off\n"
           "                         for --stage quick and full)\n"
           "  --fold-bn              zoo: BatchNormalization folded into the convolutions\n"
           "  --out-dir DIR          where <model>_<algo>_overall.csv and _layers.csv go\n"
           "                         (default .; replaced, or added to with --db)\n"
           "  --db FILE              also store every measurement; skip what it holds\n"
           "  --trace FILE           Chrome trace-event JSON of the layer-timed runs and\n"
           "                         power samples (opens in Perfetto)\n"
           "  --dry-run              print the batch sizes, input sizes and settings; run\n"
           "                         nothing\n\n%s",
           tool_measure_help);
}

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
    int fuse; /* conv + bias + ReLU as one operation where the backend can */
    const char *out_dir, *db, *trace;
    const char *flags[MAX_FLAGS][2]; /* measurement flags, applied after the stage */
    int n_flags;
} profile_args;

static int parse_on_off(const char *flag, const char *val, int *out)
{
    if (val && strcmp(val, "on") == 0)
        *out = 1;
    else if (val && strcmp(val, "off") == 0)
        *out = 0;
    else
        return tool_usage_error("profile", "%s wants on or off, got '%s'", flag, val ? val : "");
    return TOOL_EXIT_OK;
}

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

/* A value flag of profile's own: 1 when it is one (and *dst is set). */
static int own_value_flag(profile_args *a, const char *arg, const char *val, int *rc)
{
    static const char *const names[] = {"--batch",      "--sizes",  "--stage", "--algo-fallback",
                                        "--cuda-graph", "--layers", "--check", "--out-dir",
                                        "--db",         "--trace",  "--fuse",  "--host-layers"};
    int which = -1;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(arg, names[i]) == 0) which = (int)i;
    if (which < 0) return 0;
    *rc = TOOL_EXIT_OK;
    if (!val) {
        *rc = tool_usage_error("profile", "%s needs a value", arg);
        return 1;
    }
    switch (which) {
    case 0:
        *rc = parse_batches(val, a);
        break;
    case 1:
        a->sizes_text = val;
        break;
    case 2:
        if (strcmp(val, "sanity") == 0)
            a->stage = STAGE_SANITY;
        else if (strcmp(val, "quick") == 0)
            a->stage = STAGE_QUICK;
        else if (strcmp(val, "full") == 0)
            a->stage = STAGE_FULL;
        else
            *rc = tool_usage_error("profile", "--stage wants sanity, quick or full, got '%s'", val);
        break;
    case 3:
        if (strcmp(val, "heuristic") != 0)
            *rc = tool_usage_error("profile", "--algo-fallback wants heuristic, got '%s'", val);
        a->algo_fallback = val;
        break;
    case 4:
        *rc = parse_on_off(arg, val, &a->cuda_graph);
        break;
    case 10:
        *rc = parse_on_off(arg, val, &a->fuse);
        break;
    case 11:
        *rc = parse_on_off(arg, val, &a->host_layers);
        break;
    case 5:
        *rc = parse_on_off(arg, val, &a->layers);
        break;
    case 6:
        *rc = parse_on_off(arg, val, &a->check);
        break;
    case 7:
        a->out_dir = val;
        break;
    case 8:
        a->db = val;
        break;
    default:
        a->trace = val;
        break;
    }
    return 1;
}

static int parse_args(int argc, char **argv, profile_args *a, tool_measure_args *scratch)
{
    a->cuda_graph = a->layers = a->fuse = a->host_layers = 1;
    a->check = -1;
    a->out_dir = ".";
    a->batches[0] = 1;
    a->n_batches = 1;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = TOOL_EXIT_OK;
        if (own_value_flag(a, arg, val, &rc)) {
            if (rc != TOOL_EXIT_OK) return rc;
            i++;
        } else if (strcmp(arg, "--layer-energy") == 0) {
            a->layer_energy = 1;
        } else if (strcmp(arg, "--isolated") == 0) {
            a->isolated = 1;
        } else if (strcmp(arg, "--fold-bn") == 0) {
            a->fold_bn = 1;
        } else if (strcmp(arg, "--dry-run") == 0) {
            a->dry_run = 1;
        } else if (strncmp(arg, "--", 2) == 0) {
            const char *name = arg + 2;
            if (strcmp(name, "cache") == 0 || strcmp(name, "warmup-iters") == 0 ||
                strcmp(name, "sample-us") == 0)
                return tool_usage_error("profile",
                                        "%s applies to single operators, not to "
                                        "profile",
                                        arg);
            int takes = strcmp(name, "energy") != 0;
            int r = tool_measure_flag("profile", name, val, scratch);
            if (r < 0) return TOOL_EXIT_USAGE;
            if (r == 0) return tool_usage_error("profile", "unknown option '%s'", arg);
            if (a->n_flags == MAX_FLAGS) return tool_usage_error("profile", "too many options");
            a->flags[a->n_flags][0] = name;
            a->flags[a->n_flags][1] = takes ? val : NULL;
            a->n_flags++;
            if (takes) i++;
        } else if (a->model) {
            return tool_usage_error("profile", "one model at a time ('%s'?)", arg);
        } else {
            a->model = arg;
        }
    }
    if (!a->model) return tool_usage_error("profile", "which model? e.g. opsched profile resnet50");
    if (scratch->algo && strcmp(scratch->algo, "all") == 0)
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

static int resolve_model(opsched_ctx *ctx, const char *model, model_src *m)
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
    opsched_onnx_options oo = {0};
    opsched_status st = opsched_onnx_load_file(ctx, model, &oo, &g);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, model);
    for (int i = 0; i < opsched_graph_num_inputs(g) && !m->default_size; i++) {
        const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_input(g, i));
        if (t && t->shape.ndim == 4) m->default_size = t->shape.d[2];
    }
    opsched_graph_free(g);
    return TOOL_EXIT_OK;
}

/* "224,256,299" or "224:512:32" (from 224 to at most 512 by 32). */
static int parse_sizes(const char *text, int64_t *sizes, int *n)
{
    char buf[4096];
    int64_t lo, hi, step;
    snprintf(buf, sizeof(buf), "%s", text);
    *n = 0;
    char *c1 = strchr(buf, ':');
    if (c1) {
        char *c2 = strchr(c1 + 1, ':');
        if (!c2) return 0;
        *c1 = *c2 = '\0';
        if (!tool_parse_int(buf, 1, 65536, &lo) || !tool_parse_int(c1 + 1, 1, 65536, &hi) ||
            !tool_parse_int(c2 + 1, 1, 65536, &step) || lo > hi || (hi - lo) / step >= MAX_SIZES)
            return 0;
        for (int64_t s = lo; s <= hi; s += step)
            sizes[(*n)++] = s;
        return 1;
    }
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (*n == MAX_SIZES || !tool_parse_int(t, 1, 65536, &sizes[(*n)++])) return 0;
    return *n > 0;
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
        if (!parse_sizes(a->sizes_text, sizes, n))
            return tool_usage_error("profile",
                                    "--sizes wants a list like 224,256,299 or a range "
                                    "FROM:TO:STEP like 224:512:32 (FROM <= TO, at "
                                    "most %d sizes), got '%s'",
                                    MAX_SIZES, a->sizes_text);
        if (!m->default_size)
            return tool_usage_error("profile", "%s has no 4-D input: --sizes does not apply",
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

/* The stage's defaults, then the command line's measurement flags. */
static void measurement_settings(const profile_args *a, tool_measure_args *ma)
{
    tool_measure_args_init(ma);
    if (a->stage == STAGE_SANITY) {
        ma->opts.warmup_ms = 50;
        ma->opts.iters = 10;
        ma->opts.min_ms = 0;
    } else if (a->stage == STAGE_QUICK) {
        ma->opts.warmup_ms = 100;
        ma->opts.iters = 20;
        ma->opts.min_ms = 200;
    }
    for (int i = 0; i < a->n_flags; i++)
        tool_measure_flag("profile", a->flags[i][0], a->flags[i][1], ma);
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
    printf("\nalgorithm %s%s%s, math %s, layout %s\n", ma->algo ? ma->algo : "heuristic",
           a->algo_fallback ? ", fallback " : "", a->algo_fallback ? a->algo_fallback : "",
           opsched_math_name(o->plan.math),
           o->plan.layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw");
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
    FILE *overall, *layers;
    const char *algo;
    int many; /* one line per item rather than a summary */
    int numerics_failed;
} run_state;

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
    po->check = rs->a->check;
}

static opsched_status load_graph(const run_state *rs, int64_t batch, int64_t size,
                                 opsched_graph **g)
{
    tool_model_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.model = rs->a->model;
    mo.batch = batch;
    mo.height = mo.width = size;
    mo.fold_bn = rs->a->fold_bn;
    mo.load_weights = 1;
    return tool_load_model(rs->ctx, &mo, g);
}

/* Profiles one (batch, size).  Returns OK, a per-item failure worth
 * reporting and going on from (*item_failed set: out of device memory, a
 * size the network cannot take), or a failure that stops the run. */
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
                       .algo_policy = rs->algo,
                       .algo_fallback = rs->a->algo_fallback,
                       .math = po.exec.plan.math,
                       .layout = po.exec.plan.layout,
                       .batch = batch,
                       .size = size,
                       .g = g,
                       .r = r,
                       .dev = &rs->di};
    report_overall_row(rs->overall, &it);
    report_layers_rows(rs->layers, &it);
    fflush(rs->overall);
    fflush(rs->layers);
    if (rs->store && (st = report_store(rs->store, rs->run_id, rs->device_id, &it)) != OPSCHED_OK)
        goto done;
    if (rs->trace &&
        (st = opsched_trace_add_profile(rs->trace, &rs->di, g, r, label)) != OPSCHED_OK)
        goto done;
    progress_clear(pg);
    if (rs->many)
        report_line(stdout, &it);
    else
        report_summary(stdout, &it);
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

/* Opens <dir>/<model>_<algo>_<kind>.csv, appending when keep is set (with
 * a database, which the files mirror) and the file has rows; *fresh says
 * whether it needs its header. */
static FILE *open_csv(const run_state *rs, const char *kind, int keep, int *fresh, char *path,
                      size_t n)
{
    struct stat sb;
    snprintf(path, n, "%s/%s_%s_%s.csv", rs->a->out_dir, rs->m->name, rs->algo, kind);
    *fresh = !(keep && stat(path, &sb) == 0 && sb.st_size > 0);
    return fopen(path, *fresh ? "w" : "a");
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
    rs->overall = open_csv(rs, "overall", keep, &fresh[0], paths[0], sizeof(paths[0]));
    rs->layers = open_csv(rs, "layers", keep, &fresh[1], paths[1], sizeof(paths[1]));
    if (!rs->overall || !rs->layers) {
        fprintf(stderr, "opsched profile: cannot write %s: %s\n", rs->overall ? paths[1] : paths[0],
                strerror(errno));
        return TOOL_EXIT_FAIL;
    }
    if (fresh[0]) report_overall_header(rs->overall);
    if (fresh[1]) report_layers_header(rs->layers);
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
    if (rs->trace) {
        opsched_status ts = opsched_trace_write(rs->trace, rs->a->trace);
        if (ts != OPSCHED_OK) rc = tool_fail(rs->ctx, ts, "trace");
    }
    if (st != OPSCHED_OK && st != OPSCHED_ERR_INTERRUPTED) return rc;
    printf("%d profiled, %d already in the database, %d failed; wrote %s, %s", pg->done,
           pg->skipped, pg->failed, paths[0], paths[1]);
    if (rs->trace) printf(", %s", rs->a->trace);
    printf("\n");
    return rc;
}

int cmd_profile(opsched_ctx *ctx, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            profile_help();
            return TOOL_EXIT_OK;
        }
    }
    profile_args a;
    tool_measure_args scratch, ma;
    model_src m;
    static int64_t sizes[MAX_SIZES];
    int n_sizes = 0;
    memset(&a, 0, sizeof(a));
    tool_measure_args_init(&scratch);
    int rc = parse_args(argc, argv, &a, &scratch);
    if (rc == TOOL_EXIT_OK) rc = resolve_model(ctx, a.model, &m);
    if (rc == TOOL_EXIT_OK) rc = choose_sizes(&a, &m, sizes, &n_sizes);
    if (rc != TOOL_EXIT_OK) return rc;
    measurement_settings(&a, &ma);
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
    opsched_trace_free(rs.trace);
    if (rs.overall) fclose(rs.overall);
    if (rs.layers) fclose(rs.layers);
    opsched_store_close(rs.store);
    opsched_device_close(rs.dev);
    return rc;
}
