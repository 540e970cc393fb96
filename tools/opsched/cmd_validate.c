/*
 * cmd_validate.c - `opsched validate`: every profiled network run in the
 * database (model, batch, input size, mode) predicted from the operator
 * measurements and set against what was measured end to end: the error of
 * each run, then the median and worst absolute error and the share within
 * 10%, per model and overall, for latency and, where measured, energy.
 * With --loo each model is predicted by a predictor that never saw it
 * (its configurations left out of exact lookups and training, its runs
 * out of the composition fit): the honest test for networks not measured.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opsched/predict.h"
#include <cjson/cJSON.h>

#include "predict_args.h"
#include "validate.h"

#define MAX_MODELS 64
#define MAX_LIST 64

static const char validate_usage[] =
    "usage: opsched validate (--db FILE | --data NAME) [options]\n"
    "\n"
    "Predicts every network run the database holds (opsched profile: model, batch,\n"
    "input size; CUDA-graph runs in graph mode, free-running runs in eager mode)\n"
    "and compares it with the measured latency and energy: a row per run with the\n"
    "signed error, then per model and overall the median and worst absolute error\n"
    "and the share within 10%.  --format csv writes the rows of --csv to stdout,\n"
    "json the runs and the summaries.\n";

enum { VA_MODELS, VA_BATCH, VA_SIZES, VA_MODE, VA_LOO, VA_PLOT, VA_CSV, VA_SUMMARY, VA_ROUNDS,
       VA_FOLDS };

static const tool_opt validate_opts[] = {
    {"models", 0, "LIST", "models to validate, comma-separated (default: all\nprofiled)",
     VA_MODELS},
    {"batch", 0, "LIST", "only these batch sizes", VA_BATCH},
    {"input-size", 0, "LIST", "only these input sizes (224, 224x320, a list or a\nrange "
                              "224:320:32)",
     VA_SIZES},
    {"mode", 0, "LIST", "graph, free or both (default graph,free)", VA_MODE},
    {"loo", 0, NULL, "leave one model out: predict each model without its own\nmeasurements and "
                     "runs (trains a predictor per model)",
     VA_LOO},
    {"plot", 0, "FILE", "predicted against measured and error by model (.svg or\n.png)", VA_PLOT},
    {"csv", 0, "FILE", "every run with its prediction and errors", VA_CSV},
    {"summary", 0, NULL, "print only the summaries, not a row per run", VA_SUMMARY},
    {"rounds", 0, "N", "boosting rounds when models are trained (default 600)", VA_ROUNDS},
    {"folds", 0, "K", "cross-validation folds when models are trained (default 5)", VA_FOLDS},
    {NULL, 0, NULL, NULL, 0}};

typedef struct vargs {
    const char *db, *data, *device, *models, *plot, *csv, *algo;
    int64_t batches[MAX_LIST], heights[MAX_LIST], widths[MAX_LIST];
    int n_batches, n_sizes;
    int graph, free_running;
    opsched_math math;
    opsched_layout layout;
    opsched_cache_state cache;
    int layout_auto;           /* the layout the database holds for the device */
    int loo, summary_only;
    int rounds, folds;         /* 0: the predictor's defaults */
    tool_format fmt;
    predict_args data_opts;    /* --db, --data, --target, --math, --layout, --algo, --cache */
} vargs;

typedef struct vrun {
    opsched_network_run_row run;
    int predicted;             /* 0: skipped (why says why) */
    char why[96];
    double ms, energy_j;       /* predicted */
    double err, energy_err;    /* signed, percent; NaN when not comparable */
    double coverage;           /* share of the layer sum resting on exact measurements */
    double coverage_host_run;  /* free runs: share of it on rows measured with the run */
    double coverage_host;      /* free runs: share of the host time resting on host
                                * measurements (";mode=host" rows); NaN for graph runs */
    int by_source[OPSCHED_SOURCE_COUNT];
} vrun;

typedef struct vstate {
    const vargs *a;
    char models[MAX_MODELS][128];
    int n_models;
    int models_given;
    vrun *runs;
    int n, cap;
} vstate;

/* ---- arguments --------------------------------------------------------------- */

static int parse_int_list(const char *text, const char *flag, int64_t *out, int *n)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", text);
    *n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_LIST || !tool_parse_int(t, 1, 1 << 20, &out[*n]))
            return tool_usage_error("validate", "%s wants numbers like 1,8,32, got '%s'", flag, text);
        (*n)++;
    }
    return *n ? TOOL_EXIT_OK : tool_usage_error("validate", "%s is empty", flag);
}

static int parse_modes(const char *text, vargs *a)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%s", text);
    a->graph = a->free_running = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (strcmp(t, "graph") == 0) a->graph = 1;
        else if (strcmp(t, "free") == 0 || strcmp(t, "eager") == 0) a->free_running = 1;
        else return tool_usage_error("validate", "--mode wants graph, free or both, got '%s'", t);
    }
    return a->graph || a->free_running ? TOOL_EXIT_OK
                                       : tool_usage_error("validate", "--mode is empty");
}

static int validate_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    vargs *a = dest;
    int64_t iv;
    switch (o->id) {
    case VA_MODELS: a->models = v; return TOOL_EXIT_OK;
    case VA_BATCH: return parse_int_list(v, "--batch", a->batches, &a->n_batches);
    case VA_SIZES:
        return tool_arg_sizes(cmd, "--input-size", v, a->heights, a->widths, MAX_LIST, &a->n_sizes);
    case VA_MODE: return parse_modes(v, a);
    case VA_LOO: a->loo = 1; return TOOL_EXIT_OK;
    case VA_PLOT: a->plot = v; return TOOL_EXIT_OK;
    case VA_CSV: a->csv = v; return TOOL_EXIT_OK;
    case VA_SUMMARY: a->summary_only = 1; return TOOL_EXIT_OK;
    default:
        if (!tool_parse_int(v, o->id == VA_FOLDS ? 2 : 1, 100000, &iv))
            return tool_usage_error(cmd, "--%s wants a count%s, got '%s'", o->name,
                                    o->id == VA_FOLDS ? " >= 2" : "", v);
        if (o->id == VA_FOLDS) a->folds = (int)iv;
        else a->rounds = (int)iv;
        return TOOL_EXIT_OK;
    }
}

static int parse_args(int argc, char **argv, vargs *a)
{
    memset(a, 0, sizeof(*a));
    a->graph = a->free_running = 1;
    predict_args_init(&a->data_opts);
    const tool_optgroup groups[] = {
        {"options", validate_opts, validate_opt, a},
        {"prediction data options", predict_data_optlist, predict_args_opt, &a->data_opts},
        {"output options", tool_format_optlist, tool_format_opt, &a->fmt}};
    const tool_cli cli = {"validate", validate_usage, NULL, groups, 3, 0, NULL};
    const char *pos[1];
    int n_pos = 0;
    int rc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (rc != TOOL_EXIT_OK) return rc;
    const predict_args *d = &a->data_opts;
    a->db = d->db;
    a->data = d->data;
    a->device = d->target;
    a->math = d->po.math;
    a->layout = d->po.layout;
    a->layout_auto = d->layout_auto;
    a->cache = d->po.cache;
    if (strcmp(d->po.algo_policy, "heuristic") != 0) a->algo = d->po.algo_policy;
    {
        const char *in[] = {a->db};
        int crc = tool_check_output("validate", a->csv, in, 1);
        if (crc == TOOL_EXIT_OK) crc = tool_check_output("validate", a->plot, in, 1);
        if (crc != TOOL_EXIT_OK) return crc;
    }
    if (a->plot) {
        size_t n = strlen(a->plot);
        if (n < 5 || (strcmp(a->plot + n - 4, ".svg") != 0 && strcmp(a->plot + n - 4, ".png") != 0))
            return tool_usage_error("validate", "--plot writes .svg or .png, got '%s'", a->plot);
        if (!validate_plot_available())
            return tool_usage_error("validate", "--plot: this opsched was built without PLplot "
                                                "(install libplplot-dev and configure again)");
    }
    return TOOL_EXIT_OK;
}

/* ---- the runs ---------------------------------------------------------------- */

static int want_model(vstate *v, const char *model)
{
    for (int i = 0; i < v->n_models; i++)
        if (strcmp(v->models[i], model) == 0) return 1;
    if (v->models_given || v->n_models == MAX_MODELS) return 0;
    snprintf(v->models[v->n_models++], sizeof(v->models[0]), "%s", model);
    return 1;
}

static opsched_status collect(const opsched_network_run_row *r, void *user)
{
    vstate *v = user;
    const vargs *a = v->a;
    int graph = strcmp(r->mode, "graph") == 0, free_running = strcmp(r->mode, "free") == 0;
    if (!(graph && a->graph) && !(free_running && a->free_running)) return OPSCHED_OK;
    if (!(r->median_ms > 0)) return OPSCHED_OK;
    int ok = a->n_batches == 0;
    for (int i = 0; i < a->n_batches && !ok; i++) ok = r->batch == a->batches[i];
    if (!ok) return OPSCHED_OK;
    ok = a->n_sizes == 0;
    for (int i = 0; i < a->n_sizes && !ok; i++)
        ok = r->height == a->heights[i] && r->width == a->widths[i];
    if (!ok || !want_model(v, r->model)) return OPSCHED_OK;
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 64;
        vrun *grown = realloc(v->runs, sizeof(*grown) * (size_t)cap);
        if (!grown) return OPSCHED_ERR_NOMEM;
        v->runs = grown;
        v->cap = cap;
    }
    vrun *x = &v->runs[v->n++];
    memset(x, 0, sizeof(*x));
    x->run = *r;
    x->ms = x->energy_j = x->err = x->energy_err = x->coverage = x->coverage_host = x->coverage_host_run = NAN;
    return OPSCHED_OK;
}

/* The runs to validate, from the database at path. */
static int load_runs(opsched_ctx *ctx, const char *path, vstate *v, opsched_device_row *dev)
{
    const vargs *a = v->a;
    opsched_store *s = NULL;
    opsched_status st = opsched_store_open(ctx, path, OPSCHED_STORE_READ_ONLY, &s);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, path);
    st = opsched_store_find_device(s, a->device, dev);
    if (st == OPSCHED_OK) {
        opsched_network_run_query q;
        memset(&q, 0, sizeof(q));
        q.device_id = dev->id;
        q.math = opsched_math_name(a->math);
        q.layout = a->layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw";
        q.algo_policy = a->algo ? a->algo : "heuristic";
        st = opsched_store_network_runs_get(s, &q, collect, v);
    }
    opsched_store_close(s);
    if (st == OPSCHED_ERR_NOMEM) return tool_fail(ctx, st, "out of memory");
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "validate");
    return TOOL_EXIT_OK;
}

/* ---- predicting --------------------------------------------------------------- */

static void predictor_options(const vargs *a, opsched_predictor_options *po)
{
    opsched_predictor_options_default(po);
    po->device = a->device;
    po->math = a->math;
    po->layout = a->layout;
    po->cache = a->cache;
    if (a->algo) po->algo_policy = a->algo;
    if (a->rounds) po->rounds = a->rounds;
    if (a->folds) po->folds = a->folds;
}

static void predict_run(opsched_ctx *ctx, opsched_predictor *p, vrun *x)
{
    opsched_network_prediction *r = NULL;
    opsched_status st = opsched_predict_network_run(p, &x->run, &r);
    if (st != OPSCHED_OK) {
        snprintf(x->why, sizeof(x->why), "%s",
                 st == OPSCHED_ERR_NOT_FOUND ? "not a built-in network"
                                              : opsched_ctx_last_error(ctx));
        opsched_ctx_clear_error(ctx);
        return;
    }
    x->predicted = 1;
    x->ms = r->total_ms;
    x->energy_j = r->total_energy_j;
    x->coverage = r->coverage_time;
    x->coverage_host = r->coverage_host;
    x->coverage_host_run = r->coverage_host_run;
    memcpy(x->by_source, r->n_by_source, sizeof(x->by_source));
    if (isfinite(x->ms)) x->err = 100.0 * (x->ms - x->run.median_ms) / x->run.median_ms;
    else snprintf(x->why, sizeof(x->why), "some layers have no prediction");
    if (x->run.energy_valid && x->run.energy_j > 0 && isfinite(x->energy_j))
        x->energy_err = 100.0 * (x->energy_j - x->run.energy_j) / x->run.energy_j;
    opsched_network_prediction_free(r);
}

static void describe(opsched_predictor *p, const char *label)
{
    opsched_predictor_info in;
    if (opsched_predictor_info_get(p, &in) != OPSCHED_OK) return;
    int learned = 0;
    for (int i = 0; i < opsched_predictor_num_models(p); i++)
        learned += opsched_predictor_model(p, i)->trained;
    fprintf(stderr, "opsched validate: %s%s%lld configurations, %d learned model%s%s%s\n",
            label ? label : "", label ? ": " : "", (long long)in.rows, learned,
            learned == 1 ? "" : "s", in.has_calibration ? ", calibrated" : ", no calibration",
            in.trained ? " (trained now)" : "");
}

/* Distinct batch sizes and input sizes of model's runs (what leaving the
 * model out must leave out). */
static void model_shapes(const vstate *v, const char *model, int64_t *batches, int *nb,
                         int64_t *sizes, int *ns)
{
    *nb = *ns = 0;
    for (int i = 0; i < v->n; i++) {
        const opsched_network_run_row *r = &v->runs[i].run;
        if (strcmp(r->model, model) != 0) continue;
        int seen = 0;
        for (int k = 0; k < *nb; k++) seen |= batches[k] == r->batch;
        if (!seen && *nb < MAX_LIST) batches[(*nb)++] = r->batch;
        seen = 0;
        for (int k = 0; k < *ns; k++) seen |= sizes[k] == r->height;
        if (!seen && *ns < MAX_LIST) sizes[(*ns)++] = r->height;
    }
}

static int predict_all(opsched_ctx *ctx, const char *path, vstate *v)
{
    opsched_predictor_options po;
    opsched_predictor *p = NULL;
    opsched_status st;
    predictor_options(v->a, &po);
    if (!v->a->loo) {
        if ((st = opsched_predictor_open(ctx, path, &po, &p)) != OPSCHED_OK)
            return tool_fail(ctx, st, "predictor");
        describe(p, NULL);
        for (int i = 0; i < v->n; i++) predict_run(ctx, p, &v->runs[i]);
        opsched_predictor_free(p);
        return TOOL_EXIT_OK;
    }
    for (int m = 0; m < v->n_models; m++) {
        const char *model = v->models[m];
        int64_t batches[MAX_LIST], sizes[MAX_LIST];
        int nb, ns;
        model_shapes(v, model, batches, &nb, sizes, &ns);
        if (nb == 0) continue;
        opsched_exclusion *x = NULL;
        if ((st = opsched_exclusion_create(ctx, model, &x)) != OPSCHED_OK)
            return tool_fail(ctx, st, "exclusion");
        st = opsched_exclusion_add_zoo(x, model, batches, nb, sizes, ns);
        if (st != OPSCHED_OK) {
            /* Not a built-in network: its runs cannot be rebuilt either. */
            for (int i = 0; i < v->n; i++)
                if (strcmp(v->runs[i].run.model, model) == 0)
                    snprintf(v->runs[i].why, sizeof(v->runs[i].why), "%s",
                             opsched_ctx_last_error(ctx));
            opsched_ctx_clear_error(ctx);
            opsched_exclusion_free(x);
            continue;
        }
        po.exclude = x;
        po.exclude_model_runs = model;
        st = opsched_predictor_open(ctx, path, &po, &p);
        if (st != OPSCHED_OK) {
            opsched_exclusion_free(x);
            return tool_fail(ctx, st, "predictor");
        }
        char label[192];
        snprintf(label, sizeof(label), "without %s (%d signatures left out)", model,
                 opsched_exclusion_count(x));
        describe(p, label);
        for (int i = 0; i < v->n; i++)
            if (strcmp(v->runs[i].run.model, model) == 0) predict_run(ctx, p, &v->runs[i]);
        opsched_predictor_free(p);
        opsched_exclusion_free(x);
        p = NULL;
    }
    return TOOL_EXIT_OK;
}

/* ---- reporting ---------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct vsummary {
    int n;
    double median, worst, within10, mean_signed;
} vsummary;

/* Over the runs of model (NULL: all); energy picks the energy errors. */
static vsummary summarize(const vstate *v, const char *model, int energy)
{
    vsummary s = {0, NAN, NAN, NAN, NAN};
    double *abs_err = malloc(sizeof(double) * (size_t)(v->n ? v->n : 1));
    if (!abs_err) return s;
    double sum = 0;
    int within = 0;
    for (int i = 0; i < v->n; i++) {
        const vrun *x = &v->runs[i];
        double e = energy ? x->energy_err : x->err;
        if (!isfinite(e) || (model && strcmp(x->run.model, model) != 0)) continue;
        abs_err[s.n++] = fabs(e);
        sum += e;
        within += fabs(e) <= 10.0;
    }
    if (s.n) {
        qsort(abs_err, (size_t)s.n, sizeof(double), cmp_double);
        s.median = s.n % 2 ? abs_err[s.n / 2] : 0.5 * (abs_err[s.n / 2 - 1] + abs_err[s.n / 2]);
        s.worst = abs_err[s.n - 1];
        s.within10 = 100.0 * within / s.n;
        s.mean_signed = sum / s.n;
    }
    free(abs_err);
    return s;
}

static void print_summary(const vstate *v, int energy)
{
    printf("\n%s, absolute error per model:\n", energy ? "Energy" : "Latency");
    printf("%-16s %5s %10s %10s %11s %12s\n", "model", "runs", "median %", "worst %",
           "within 10%", "mean signed");
    for (int m = 0; m <= v->n_models; m++) {
        const char *model = m < v->n_models ? v->models[m] : NULL;
        vsummary s = summarize(v, model, energy);
        if (model && s.n == 0) continue;
        if (!model) printf("%-16s %5s %10s %10s %11s %12s\n", "", "", "", "", "", "");
        if (s.n == 0) {
            printf("%-16s %5d %10s %10s %11s %12s\n", model ? model : "all", 0, "-", "-", "-", "-");
            continue;
        }
        printf("%-16s %5d %10.1f %10.1f %10.0f%% %+11.1f%%\n", model ? model : "all", s.n,
               s.median, s.worst, s.within10, s.mean_signed);
    }
}

static void print_runs(const vstate *v)
{
    printf("%-16s %5s %9s %5s %12s %12s %8s %11s %11s %8s %8s\n", "model", "batch", "size",
           "mode", "measured ms", "predicted ms", "error %", "measured J", "predicted J",
           "error %", "exact");
    for (int i = 0; i < v->n; i++) {
        const vrun *x = &v->runs[i];
        char size[32];
        if (x->run.width == x->run.height)
            snprintf(size, sizeof(size), "%lld", (long long)x->run.height);
        else
            snprintf(size, sizeof(size), "%lldx%lld", (long long)x->run.height,
                     (long long)x->run.width);
        printf("%-16.16s %5lld %9s %5s %12.4f", x->run.model, (long long)x->run.batch, size,
               x->run.mode, x->run.median_ms);
        if (!x->predicted || !isfinite(x->ms)) {
            printf("  not predicted: %s\n", x->why);
            continue;
        }
        printf(" %12.4f %+8.1f", x->ms, x->err);
        if (x->run.energy_valid) printf(" %11.4f", x->run.energy_j);
        else printf(" %11s", "-");
        if (isfinite(x->energy_j)) printf(" %11.4f", x->energy_j);
        else printf(" %11s", "-");
        if (isfinite(x->energy_err)) printf(" %+8.1f", x->energy_err);
        else printf(" %8s", "-");
        printf(" %7.0f%%", 100.0 * x->coverage);
        /* free runs whose host time rests partly on host measurements */
        if (x->coverage_host > 0) printf("  host %.0f%% measured", 100.0 * x->coverage_host);
        if (x->coverage_host_run > 0) printf(" (%.0f%% with this run)", 100.0 * x->coverage_host_run);
        printf("\n");
    }
}

/* The runs as CSV on f, through the one CSV writer: a value that is not a
 * number (not measured, not predicted) is an empty field. */
static opsched_status csv_rows(opsched_ctx *ctx, const vstate *v, FILE *f)
{
    opsched_csv_writer *w = NULL;
    opsched_status st = opsched_csv_writer_create(ctx, f, &w);
    if (st == OPSCHED_OK)
        st = opsched_csv_header(w, "model,batch,height,width,mode,measured_ms,predicted_ms,"
                                   "error_pct,measured_energy_j,predicted_energy_j,"
                                   "energy_error_pct,coverage_time,exact_layers,learned_layers,"
                                   "roofline_layers,leave_one_out,coverage_host,"
                                   "coverage_host_run,note");
    for (int i = 0; st == OPSCHED_OK && i < v->n; i++) {
        const vrun *x = &v->runs[i];
        opsched_csv_str(w, x->run.model);
        opsched_csv_int(w, x->run.batch);
        opsched_csv_int(w, x->run.height);
        opsched_csv_int(w, x->run.width);
        opsched_csv_str(w, x->run.mode);
        opsched_csv_double(w, x->run.median_ms, "%.6g");
        opsched_csv_double(w, isfinite(x->ms) ? x->ms : NAN, "%.6g");
        opsched_csv_double(w, isfinite(x->err) ? x->err : NAN, "%.3f");
        opsched_csv_double(w, x->run.energy_valid ? x->run.energy_j : NAN, "%.6g");
        opsched_csv_double(w, isfinite(x->energy_j) ? x->energy_j : NAN, "%.6g");
        opsched_csv_double(w, isfinite(x->energy_err) ? x->energy_err : NAN, "%.3f");
        opsched_csv_double(w, isfinite(x->coverage) ? x->coverage : NAN, "%.4f");
        opsched_csv_int(w, x->by_source[OPSCHED_SOURCE_EXACT]);
        opsched_csv_int(w, x->by_source[OPSCHED_SOURCE_LEARNED]);
        opsched_csv_int(w, x->by_source[OPSCHED_SOURCE_ROOFLINE]);
        opsched_csv_int(w, v->a->loo);
        opsched_csv_double(w, isfinite(x->coverage_host) ? x->coverage_host : NAN, "%.4f");
        opsched_csv_double(w, isfinite(x->coverage_host_run) ? x->coverage_host_run : NAN,
                           "%.4f");
        opsched_csv_str(w, x->predicted && isfinite(x->ms) ? "" : x->why);
        st = opsched_csv_end_row(w);
    }
    opsched_csv_writer_free(w);
    return st;
}

static void json_num(cJSON *o, const char *name, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, name, v);
    else cJSON_AddNullToObject(o, name);
}

static void json_summary(cJSON *root, const char *name, const vstate *v, int energy)
{
    cJSON *arr = cJSON_AddArrayToObject(root, name);
    for (int m = 0; arr && m <= v->n_models; m++) {
        const char *model = m < v->n_models ? v->models[m] : NULL;
        vsummary s = summarize(v, model, energy);
        if (model && s.n == 0) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "model", model ? model : "all");
        cJSON_AddNumberToObject(o, "runs", s.n);
        if (s.n) {
            json_num(o, "median_abs_error_pct", s.median);
            json_num(o, "worst_abs_error_pct", s.worst);
            json_num(o, "within10_pct", s.within10);
            json_num(o, "mean_signed_error_pct", s.mean_signed);
        }
        cJSON_AddItemToArray(arr, o);
    }
}

static int print_json(const vstate *v)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) {
        fprintf(stderr, "opsched: out of memory writing JSON\n");
        return TOOL_EXIT_FAIL;
    }
    cJSON_AddStringToObject(root, "math", opsched_math_name(v->a->math));
    cJSON_AddStringToObject(root, "layout", v->a->layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw");
    cJSON_AddStringToObject(root, "algo_policy", v->a->algo ? v->a->algo : "heuristic");
    cJSON_AddBoolToObject(root, "leave_one_out", v->a->loo);
    cJSON *runs = cJSON_AddArrayToObject(root, "runs");
    for (int i = 0; runs && i < v->n; i++) {
        const vrun *x = &v->runs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "model", x->run.model);
        cJSON_AddNumberToObject(o, "batch", (double)x->run.batch);
        cJSON_AddNumberToObject(o, "height", (double)x->run.height);
        cJSON_AddNumberToObject(o, "width", (double)x->run.width);
        cJSON_AddStringToObject(o, "mode", x->run.mode);
        json_num(o, "measured_ms", x->run.median_ms);
        json_num(o, "predicted_ms", x->ms);
        json_num(o, "error_pct", x->err);
        json_num(o, "measured_energy_j", x->run.energy_valid ? x->run.energy_j : NAN);
        json_num(o, "predicted_energy_j", x->energy_j);
        json_num(o, "energy_error_pct", x->energy_err);
        json_num(o, "coverage_time", x->coverage);
        if (!x->predicted || !isfinite(x->ms)) cJSON_AddStringToObject(o, "note", x->why);
        cJSON_AddItemToArray(runs, o);
    }
    json_summary(root, "latency", v, 0);
    json_summary(root, "energy", v, 1);
    return tool_print_json(root);
}

static int write_csv(opsched_ctx *ctx, const vstate *v, const char *path)
{
    opsched_out o;
    opsched_status st = opsched_out_open(ctx, path, "CSV", 0, &o);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "validate");
    if ((st = csv_rows(ctx, v, o.f)) != OPSCHED_OK) {
        opsched_out_abort(&o);
        return tool_fail(ctx, st, path);
    }
    if ((st = opsched_out_commit(ctx, &o)) != OPSCHED_OK) return tool_fail(ctx, st, "validate");
    return TOOL_EXIT_OK;
}

static int plot(opsched_ctx *ctx, const vstate *v, const opsched_device_row *dev,
                const char *path)
{
    validate_point *pts = calloc((size_t)(v->n ? v->n : 1), sizeof(*pts));
    const char *models[MAX_MODELS];
    int n = 0, n_models = 0;
    char err[256], title[320];
    if (!pts) return TOOL_EXIT_FAIL;
    for (int m = 0; m < v->n_models; m++) {
        vsummary s = summarize(v, v->models[m], 0);
        if (s.n) models[n_models++] = v->models[m];
    }
    for (int i = 0; i < v->n; i++) {
        const vrun *x = &v->runs[i];
        if (!isfinite(x->err)) continue;
        pts[n].model = x->run.model;
        pts[n].graph = strcmp(x->run.mode, "graph") == 0;
        pts[n].measured_ms = x->run.median_ms;
        pts[n].predicted_ms = x->ms;
        pts[n].error_pct = x->err;
        n++;
    }
    vsummary all = summarize(v, NULL, 0);
    snprintf(title, sizeof(title), "%s:%s, %s%s: median |error| %.1f%%, %.0f%% within 10%%",
             dev->backend, dev->name, opsched_math_name(v->a->math),
             v->a->loo ? ", leave one model out" : "", all.median, all.within10);
    /* PLplot writes the temporary by name; it is then synced and renamed. */
    opsched_out o;
    opsched_status st = opsched_out_open(ctx, path, "plot", 0, &o);
    if (st != OPSCHED_OK) {
        free(pts);
        return tool_fail(ctx, st, "validate");
    }
    int rc = validate_plot(path, o.tmp, title, pts, n, models, n_models, err, sizeof(err));
    free(pts);
    struct stat sb;
    if (rc == 0 && (stat(o.tmp, &sb) != 0 || sb.st_size == 0)) {
        snprintf(err, sizeof(err), "%s: PLplot wrote nothing (disk full?)", path);
        rc = -1;
    }
    if (rc != 0) {
        opsched_out_abort(&o);
        fprintf(stderr, "opsched validate: %s\n", err);
        return TOOL_EXIT_FAIL;
    }
    /* Reopened for the flush and sync of commit: PLplot closed it. */
    fclose(o.f);
    if (!(o.f = fopen(o.tmp, "ab"))) {
        opsched_out_abort(&o);
        fprintf(stderr, "opsched validate: %s: %s\n", path, strerror(errno));
        return TOOL_EXIT_FAIL;
    }
    if ((st = opsched_out_commit(ctx, &o)) != OPSCHED_OK) return tool_fail(ctx, st, "validate");
    return TOOL_EXIT_OK;
}

int cmd_validate(opsched_ctx *ctx, int argc, char **argv)
{
    vargs a;
    int rc = parse_args(argc, argv, &a);
    if (rc == TOOL_ARGS_HELP) return TOOL_EXIT_OK;
    if (rc != TOOL_EXIT_OK) return rc;
    char path[1280];
    if ((rc = tool_db_or_shipped(ctx, "validate", a.db, a.data, path, sizeof(path))))
        return rc;
    if (a.layout_auto) a.layout = tool_data_layout(ctx, path, a.device, a.math, a.algo);

    vstate v;
    memset(&v, 0, sizeof(v));
    v.a = &a;
    if (a.models) {
        char buf[1024];
        snprintf(buf, sizeof(buf), "%s", a.models);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (v.n_models == MAX_MODELS) return tool_usage_error("validate", "too many models");
            snprintf(v.models[v.n_models++], sizeof(v.models[0]), "%s", t);
        }
        v.models_given = 1;
    }
    opsched_device_row dev;
    if ((rc = load_runs(ctx, path, &v, &dev))) goto done;
    if (v.n == 0) {
        fprintf(stderr, "opsched validate: %s has no %s network runs (%s, %s, %s) of %s to "
                        "validate; opsched profile --db stores them\n",
                path, a.graph && a.free_running ? "graph or free" : a.graph ? "graph" : "free",
                opsched_math_name(a.math), a.layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw",
                a.algo ? a.algo : "heuristic",
                a.models ? a.models : "any model");
        rc = TOOL_EXIT_FAIL;
        goto done;
    }
    fprintf(stderr, "opsched validate: %d network run%s of %d model%s on %s:%s (%s %s)%s\n", v.n,
            v.n == 1 ? "" : "s", v.n_models, v.n_models == 1 ? "" : "s", dev.backend, dev.name,
            opsched_math_name(a.math), a.layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw",
            a.loo ? ", leaving each model out" : "");
    if ((rc = predict_all(ctx, path, &v))) goto done;
    if (a.fmt == TOOL_FMT_CSV) {
        opsched_status cst = csv_rows(ctx, &v, stdout);
        if (cst != OPSCHED_OK) {
            rc = tool_fail(ctx, cst, "CSV");
            goto done;
        }
    } else if (a.fmt == TOOL_FMT_JSON) {
        if ((rc = print_json(&v))) goto done;
    } else {
        if (!a.summary_only) print_runs(&v);
        print_summary(&v, 0);
        for (int i = 0; i < v.n; i++)
            if (isfinite(v.runs[i].energy_err)) {
                print_summary(&v, 1);
                break;
            }
    }
    if (a.csv && (rc = write_csv(ctx, &v, a.csv))) goto done;
    /* The tables are out before PLplot's drivers load (cairo, fonts). */
    fflush(stdout);
    if (a.plot && (rc = plot(ctx, &v, &dev, a.plot))) goto done;
    FILE *note = a.fmt == TOOL_FMT_TABLE ? stdout : stderr;
    if (a.csv) fprintf(note, "wrote %s\n", a.csv);
    if (a.plot) fprintf(note, "wrote %s\n", a.plot);
done:
    free(v.runs);
    return rc;
}
