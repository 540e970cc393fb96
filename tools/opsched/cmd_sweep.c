/*
 * cmd_sweep.c - `opsched sweep SPEC.yml --db FILE`: every configuration of
 * a sweep spec measured into the database, on one or several devices, by
 * shard, resuming what an earlier run left; a progress bar on a terminal,
 * progress lines every few seconds otherwise.  The first Ctrl-C (or
 * SIGTERM) lets the configurations in flight finish; a second one aborts.
 */
#include <math.h>
#include <signal.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opsched/sweep.h"
#include "args.h"

#define MAX_GPUS 64
#define MAX_FLAGS 32
#define PLAIN_EVERY_S 5.0

static volatile sig_atomic_t *stop_flag;

static const char sweep_usage[] =
    "usage: opsched sweep SPEC.yml --db FILE [options] [measurement options]\n"
    "       opsched sweep --default --db FILE [options]\n"
    "       opsched sweep --for-model MODEL [--batch LIST] [--input-size LIST] --db FILE ...\n"
    "       opsched sweep --adaptive --db FILE [--target-error PCT] [--budget-s S] ...\n\n"
    "Measures every configuration of a sweep spec (docs/SWEEP.md) into a database.\n"
    "Configurations already measured with the same settings are skipped, so a\n"
    "sweep that was stopped or killed completes when run again.\n\n"
    "--for-model measures what a prediction of MODEL (a zoo name or an .onnx\n"
    "file) at these batch sizes and input sizes lacks: every layer as the\n"
    "executor runs it (a convolution with its Relu fused in) that the database\n"
    "has no measurement of under these settings.  --adaptive grows the training\n"
    "data where the learned models err most ('opsched sweep --adaptive --help').\n\n"
    "Measurement options override the spec's measure: section; math and layout\n"
    "the spec does not set are the backend's fastest (tf32 and nhwc on a GPU,\n"
    "fp32 and nchw on the CPU).\n";

/* ---- progress ----------------------------------------------------------- */

typedef struct progress_state {
    int tty;
    double last_print;
    int printed;
    int started;    /* the first report (the start) is printed */
} progress_state;

static const char *duration(double s, char *buf, size_t n)
{
    if (s < 0 || !isfinite(s)) snprintf(buf, n, "?");
    else if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    return buf;
}

static void on_progress(const opsched_sweep_progress *p, void *user)
{
    progress_state *ps = user;
    int64_t reached = p->done + p->skipped;
    int last = reached == p->total;
    char eta[32];
    duration(p->eta_s, eta, sizeof(eta));
    if (ps->tty) {
        const int width = 30;
        int fill = p->total ? (int)((double)reached / (double)p->total * width) : width;
        char bar[64];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '-';
        bar[width] = '\0';
        fprintf(stderr, "\r\033[K[%s] %lld/%lld  %.1f/s  ETA %s  (%lld skipped, %lld failed)", bar,
                (long long)reached, (long long)p->total, p->rate, eta, (long long)p->skipped,
                (long long)p->failed);
        if (last) fputc('\n', stderr);
        fflush(stderr);
        ps->printed = !last;
        return;
    }
    /* The start, the end, and a line every few seconds between (a resumed
     * run reports each batch it skips: not a line each). */
    if (!last && p->elapsed_s - ps->last_print < PLAIN_EVERY_S && ps->started) return;
    ps->started = 1;
    ps->last_print = p->elapsed_s;
    fprintf(stderr, "opsched sweep: %lld/%lld (%.1f%%), %lld skipped, %lld failed, %.1f/s, ETA %s\n",
            (long long)reached, (long long)p->total,
            p->total ? 100.0 * (double)reached / (double)p->total : 100.0, (long long)p->skipped,
            (long long)p->failed, p->rate, eta);
}

/* ---- arguments ---------------------------------------------------------- */

typedef struct sweep_args {
    const char *spec_path;
    int use_default;
    const char *db;
    const char *gpus;
    int shard_index, shard_count;
    const char *shard_from;    /* where the shard came from, for the message */
    int no_resume, dry_run;
    const char *for_model;     /* --for-model: the spec is made from these */
    const char *batch, *sizes, *shapes;
    int no_fuse;
    int keep_bn, bn_set;       /* --bn keep: zoo networks with their BatchNormalization */
    tool_measure_record measure; /* applied over the spec's settings */
} sweep_args;

enum {
    SW_DB, SW_GPUS, SW_SHARD, SW_NO_RESUME, SW_DRY_RUN, SW_DEFAULT, SW_FOR_MODEL, SW_BATCH,
    SW_SIZES, SW_NO_FUSE, SW_BN, SW_ADAPTIVE, SW_SHAPES
};

static const tool_opt sweep_opts[] = {
    {"db", 0, "FILE", "the database (created when missing)", SW_DB},
    {"gpus", 0, "LIST", "devices to use, one worker each: 0,1,2,3 or all\n(default: --device, "
                        "else 0)",
     SW_GPUS},
    {"shard", 0, "I/N", "measure shard I of N (0-based); default from\n"
                        "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT or\n"
                        "SLURM_PROCID/SLURM_NTASKS, else 0/1",
     SW_SHARD},
    {"no-resume", 0, NULL, "measure again what the database already has", SW_NO_RESUME},
    {"dry-run", 0, NULL, "print the configurations and counts; measure nothing", SW_DRY_RUN},
    {"default", 0, NULL, "use the built-in spec (a small conv2d grid)", SW_DEFAULT},
    {"for-model", 0, "MODEL", "the configurations of MODEL instead of a spec", SW_FOR_MODEL},
    {"batch", 0, "LIST", "with --for-model: batch sizes (default 1)", SW_BATCH},
    {"input-size", 0, "LIST", "with --for-model: input sizes, 224,299, 224x320 or a\nrange "
                              "224:320:32 (default: the model's own)",
     SW_SIZES},
    {"shapes", 0, "SPEC", "with --for-model: an ONNX model's input shapes,\n"
                          "input_ids:8x384,attention_mask:8x384 (the\nbatch too, unless --batch)",
     SW_SHAPES},
    {"no-fuse", 0, NULL, "with --for-model: convolutions without their Relu", SW_NO_FUSE},
    {"bn", 0, "fold|keep",
     "with --for-model: a zoo network's BatchNormalization\nfolded into the convolutions "
     "(default fold, as\nopsched predict takes it) or kept",
     SW_BN},
    {"adaptive", 0, NULL, "adaptive sampling ('opsched sweep --adaptive --help')", SW_ADAPTIVE},
    {NULL, 0, NULL, NULL, 0}};

static int parse_shard(const char *text, int *index, int *count)
{
    int64_t i, n;
    const char *slash = strchr(text, '/');
    char head[32];
    if (!slash || (size_t)(slash - text) >= sizeof(head)) return 0;
    memcpy(head, text, (size_t)(slash - text));
    head[slash - text] = '\0';
    if (!tool_parse_int(head, 0, 1000000, &i) || !tool_parse_int(slash + 1, 1, 1000000, &n) || i >= n)
        return 0;
    *index = (int)i;
    *count = (int)n;
    return 1;
}

/* The shard from SLURM's environment, when --shard is not given. */
static int shard_from_env(sweep_args *a)
{
    static const char *const pairs[2][2] = {{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"},
                                            {"SLURM_PROCID", "SLURM_NTASKS"}};
    for (int p = 0; p < 2; p++) {
        const char *id = getenv(pairs[p][0]), *count = getenv(pairs[p][1]);
        if (!id || !count) continue;
        int64_t i, n, min = 0;
        const char *min_s = p == 0 ? getenv("SLURM_ARRAY_TASK_MIN") : NULL;
        if (min_s && !tool_parse_int(min_s, 0, 1000000, &min)) min = -1;
        if (!tool_parse_int(id, 0, 1000000, &i) || !tool_parse_int(count, 1, 1000000, &n) ||
            min < 0 || i - min < 0 || i - min >= n) {
            tool_usage_error("sweep", "%s=%s and %s=%s do not name a shard; use --shard I/N",
                             pairs[p][0], id, pairs[p][1], count);
            return -1;
        }
        a->shard_index = (int)(i - min);
        a->shard_count = (int)n;
        a->shard_from = pairs[p][0];
        return 1;
    }
    return 0;
}

static int sweep_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    sweep_args *a = dest;
    switch (o->id) {
    case SW_DB: a->db = v; break;
    case SW_GPUS: a->gpus = v; break;
    case SW_SHARD:
        if (!parse_shard(v, &a->shard_index, &a->shard_count))
            return tool_usage_error(cmd, "--shard wants I/N with 0 <= I < N, got '%s'", v);
        a->shard_from = "--shard";
        break;
    case SW_NO_RESUME: a->no_resume = 1; break;
    case SW_DRY_RUN: a->dry_run = 1; break;
    case SW_DEFAULT: a->use_default = 1; break;
    case SW_FOR_MODEL: a->for_model = v; break;
    case SW_BATCH: a->batch = v; break;
    case SW_SHAPES: a->shapes = v; break;
    case SW_SIZES: a->sizes = v; break;
    case SW_NO_FUSE: a->no_fuse = 1; break;
    case SW_BN: {
        int fold = 1;
        int rc = tool_arg_bn(cmd, "--bn", v, &fold);
        if (rc != TOOL_EXIT_OK) return rc;
        a->keep_bn = !fold;
        a->bn_set = 1;
        break;
    }
    default: break; /* --adaptive: dispatched before */
    }
    return TOOL_EXIT_OK;
}

static int parse_args(int argc, char **argv, sweep_args *a)
{
    tool_measure_args_init(&a->measure.scratch);
    const tool_optgroup groups[] = {
        {"options", sweep_opts, sweep_opt, a},
        {"measurement options", tool_measure_optlist, tool_measure_record_opt, &a->measure}};
    const tool_cli cli = {"sweep", sweep_usage, NULL, groups, 2, 1, "spec"};
    const char *pos[1];
    int n_pos = 0;
    int rc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (rc != TOOL_EXIT_OK) return rc;
    if (n_pos) a->spec_path = pos[0];
    if (a->gpus && a->measure.scratch.device_set)
        return tool_usage_error("sweep", "--device or --gpus, not both");
    if (!a->for_model && (a->batch || a->sizes || a->shapes || a->no_fuse || a->bn_set))
        return tool_usage_error("sweep", "--batch, --input-size, --shapes, --no-fuse and --bn go "
                                         "with --for-model");
    if (!!a->spec_path + a->use_default + !!a->for_model > 1)
        return tool_usage_error("sweep", "one of a spec file, --default and --for-model");
    if (!a->spec_path && !a->use_default && !a->for_model)
        return tool_usage_error("sweep", "which spec? e.g. opsched sweep spec.yml --db results.db");
    if (!a->db && !a->dry_run) return tool_usage_error("sweep", "where to? --db FILE is required");
    if (!a->shard_from && shard_from_env(a) < 0) return TOOL_EXIT_USAGE;
    if (!a->shard_count) a->shard_count = 1;
    return TOOL_EXIT_OK;
}

/* "0,1,3" or "all" into devices[]. */
static int parse_gpus(opsched_ctx *ctx, const char *text, const char *backend, int *devices, int *n)
{
    *n = 0;
    if (strcmp(text, "all") == 0) {
        int count = 0;
        if (opsched_device_count(ctx, backend, &count) != OPSCHED_OK || count == 0)
            return tool_usage_error("sweep", "--gpus all: the %s backend sees no device", backend);
        for (int i = 0; i < count && i < MAX_GPUS; i++) devices[(*n)++] = i;
        return TOOL_EXIT_OK;
    }
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int64_t v;
        if (*n == MAX_GPUS || !tool_parse_int(tok, 0, 1023, &v))
            return tool_usage_error("sweep", "--gpus wants device indices like 0,1,2,3 or all, got '%s'",
                                    text);
        devices[(*n)++] = (int)v;
    }
    if (!*n) return tool_usage_error("sweep", "--gpus wants device indices like 0,1,2,3 or all");
    return TOOL_EXIT_OK;
}

/* The command line, for the run's provenance (malloc'd). */
static char *join_command(int argc, char **argv)
{
    size_t len = strlen("opsched") + 1;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
    char *s = malloc(len);
    if (!s) return NULL;
    strcpy(s, "opsched");
    for (int i = 0; i < argc; i++) {
        strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

/* ---- --for-model ---------------------------------------------------------- */

/* Appends s to the YAML text as a double-quoted scalar. */
static void yaml_quoted(char *buf, size_t size, const char *s)
{
    size_t n = strlen(buf);
    if (n + 1 < size) buf[n++] = '"';
    for (; *s && n + 3 < size; s++) {
        if (*s == '"' || *s == '\\') buf[n++] = '\\';
        buf[n++] = *s;
    }
    if (n + 1 < size) buf[n++] = '"';
    buf[n] = '\0';
}

/* The spec of --for-model: one networks entry with the model, its batch
 * sizes and input sizes, fused as the executor runs it and a zoo
 * network's BatchNormalization folded, as opsched predict takes them by
 * default (--no-fuse, --bn keep otherwise).  *out malloc'd. */
static int for_model_spec(const sweep_args *a, char **out)
{
    size_t size = 4096;
    char *t = calloc(size, 1);
    char buf[512];
    int64_t v;
    if (!t) return TOOL_EXIT_FAIL;
    strcat(t, "description: ");
    yaml_quoted(t, size, "what a prediction of the model lacks (opsched sweep --for-model)");
    strcat(t, "\nnetworks: [");
    yaml_quoted(t, size, a->for_model);
    strcat(t, "]\n");
    if (a->shapes) {
        if (strlen(a->shapes) > 1024) {
            free(t);
            return tool_usage_error("sweep", "--shapes: too long");
        }
        strcat(t, "shapes: ");
        yaml_quoted(t, size, a->shapes);
        strcat(t, "\n");
    }
    if (a->batch || !a->shapes) { /* with --shapes alone, they give the batch */
        strcat(t, "batch: [");
        snprintf(buf, sizeof(buf), "%s", a->batch ? a->batch : "1");
        int first = 1;
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            if (!tool_parse_int(tok, 1, 1 << 20, &v)) {
                free(t);
                return tool_usage_error("sweep", "--batch wants sizes like 1,8,32, got '%s'",
                                        a->batch);
            }
            snprintf(t + strlen(t), size - strlen(t), "%s%lld", first ? "" : ", ", (long long)v);
            first = 0;
        }
        strcat(t, "]\n");
    }
    if (a->sizes) {
        static int64_t hs[256], ws[256];
        int n = 0;
        int rc = tool_arg_sizes("sweep", "--input-size", a->sizes, hs, ws, 256, &n);
        if (rc != TOOL_EXIT_OK || strlen(t) + 24 * (size_t)n + 64 > size) {
            free(t);
            return rc != TOOL_EXIT_OK ? rc
                                      : tool_usage_error("sweep", "--input-size: too many sizes");
        }
        strcat(t, "sizes: [");
        for (int i = 0; i < n; i++)
            snprintf(t + strlen(t), size - strlen(t), "%s\"%lldx%lld\"", i ? ", " : "",
                     (long long)hs[i], (long long)ws[i]);
        strcat(t, "]\n");
    }
    snprintf(t + strlen(t), size - strlen(t), "fuse: %s\nfold_bn: %s\n",
             a->no_fuse ? "false" : "true", a->keep_bn ? "false" : "true");
    *out = t;
    return TOOL_EXIT_OK;
}

/* Whether the spec file's text names math and layout (its measure:
 * section); those it does not name take the backend's defaults. */
static void spec_settings(const char *path, int *math, int *layout)
{
    char line[1024];
    /* Not blocking on a FIFO: only a regular file is read (the library
     * refuses anything else when it loads the spec). */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0) return;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return;
    }
    while (fgets(line, sizeof(line), f)) {
        const char *p = line + strspn(line, " \t");
        if (*p == '#') continue;
        if (strncmp(p, "math:", 5) == 0) *math = 1;
        if (strncmp(p, "layout:", 7) == 0) *layout = 1;
    }
    fclose(f);
}

/* ---- dry run ------------------------------------------------------------ */

/* Lists the shard's configurations as the walk builds them, one at a time:
 * the memory of one configuration, whatever the size of the grids. */
static int dry_run(opsched_ctx *ctx, const opsched_sweep_spec *spec, const sweep_args *a,
                   const tool_measure_args *ma, const char *const *algos, int n_algos)
{
    int n = opsched_sweep_spec_num_configs(spec), in_shard = 0;
    opsched_sweep_iter *it = NULL;
    const opsched_sweep_config *cfg = NULL;
    opsched_status st = opsched_sweep_iter_create(ctx, spec, a->shard_index, a->shard_count, &it);
    while (st == OPSCHED_OK && (st = opsched_sweep_iter_next(it, &cfg)) == OPSCHED_OK && cfg) {
        opsched_config_record rec;
        if ((st = opsched_config_record_from_node(cfg->graph, 0, &rec)) != OPSCHED_OK) break;
        char flops[32], op[48];
        snprintf(op, sizeof(op), "%s%s", rec.op, cfg->fused ? "+relu" : "");
        printf("%-14s %8s  %s\n", op, tool_human((double)rec.flops, flops, sizeof(flops)),
               rec.signature);
        in_shard++;
    }
    opsched_sweep_iter_free(it);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "configuration");
    opsched_sweep_counts c;
    opsched_sweep_spec_counts(spec, &c);
    printf("%d configuration%s", in_shard, in_shard == 1 ? "" : "s");
    if (a->shard_count > 1) printf(" in shard %d/%d (of %d)", a->shard_index, a->shard_count, n);
    printf("; algorithm policies:");
    for (int i = 0; i < n_algos; i++) printf(" %s", algos[i]);
    printf("; %s, math %s, layout %s", ma->backend, opsched_math_name(ma->opts.plan.math),
           ma->opts.plan.layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw");
    if (ma->opts.cache != OPSCHED_CACHE_HOT) printf(", cache %s", opsched_cache_name(ma->opts.cache));
    printf("\n%lld combinations looked at: %lld filtered, %lld impossible, %lld duplicates",
           (long long)c.combinations, (long long)c.filtered, (long long)c.impossible,
           (long long)c.duplicates);
    if (c.excluded) printf(", %lld views or other operators", (long long)c.excluded);
    printf("\n");
    return TOOL_EXIT_OK;
}

/* ---- the command -------------------------------------------------------- */

static int report_result(opsched_ctx *ctx, opsched_status st, const opsched_sweep_result *r,
                         const char *db)
{
    printf("%lld measured (%lld ok, %lld unsupported, %lld out of memory, %lld failed), "
           "%lld already in %s, %lld left; %.1f s",
           (long long)r->measured, (long long)r->ok, (long long)r->unsupported, (long long)r->oom,
           (long long)r->errors, (long long)r->skipped, db, (long long)r->remaining, r->elapsed_s);
    if (r->measured && r->elapsed_s > 0) printf(" (%.1f/s)", (double)r->measured / r->elapsed_s);
    printf("\n");
    if (r->unstable > 0) {
        char msg[200];
        fprintf(stderr, "opsched: warning: %s\n",
                opsched_unstable_message(r->unstable, msg, sizeof(msg)));
    }
    if (st == OPSCHED_ERR_INTERRUPTED) {
        fprintf(stderr, "opsched sweep: %s\n", opsched_ctx_last_error(ctx));
        return 130;
    }
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "sweep");
    if (r->errors) {
        fprintf(stderr, "opsched sweep: %lld measurement(s) failed (status error); run the sweep "
                        "again to retry them\n", (long long)r->errors);
        return TOOL_EXIT_FAIL;
    }
    return TOOL_EXIT_OK;
}

int cmd_sweep(opsched_ctx *ctx, int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--adaptive") == 0) return tool_sweep_adaptive(ctx, argc, argv);
    static sweep_args a;
    tool_measure_args ma;
    memset(&a, 0, sizeof(a));
    int rc = parse_args(argc, argv, &a);
    if (rc != TOOL_EXIT_OK) return rc == TOOL_ARGS_HELP ? TOOL_EXIT_OK : rc;

    opsched_sweep_spec *spec = NULL;
    char *command = NULL;
    opsched_status st;
    char *made = NULL;
    int sets_math = 0, sets_layout = 0; /* the spec's measure: section names them */
    if (a.for_model) {
        if ((rc = for_model_spec(&a, &made)) != TOOL_EXIT_OK) return rc;
        char origin[300];
        snprintf(origin, sizeof(origin), "<for-model %s>", a.for_model);
        st = opsched_sweep_spec_parse(ctx, made, strlen(made), origin, &spec);
        free(made);
    } else if (a.use_default) {
        const char *text = opsched_sweep_default_spec();
        sets_math = strstr(text, "math:") != NULL;
        sets_layout = strstr(text, "layout:") != NULL;
        st = opsched_sweep_spec_parse(ctx, text, strlen(text), "<default spec>", &spec);
    } else {
        st = opsched_sweep_spec_load(ctx, a.spec_path, &spec);
        spec_settings(a.spec_path, &sets_math, &sets_layout);
    }
    if (st == OPSCHED_ERR_INVALID_ARG || st == OPSCHED_ERR_PARSE) {
        fprintf(stderr, "opsched sweep: %s\n", opsched_ctx_last_error(ctx));
        if (a.for_model && !opsched_zoo_find(a.for_model)) tool_suggest_model(a.for_model);
        return TOOL_EXIT_USAGE;
    }
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "sweep");

    /* The spec's measure: section, then the command line's flags over it. */
    tool_measure_args_init(&ma);
    ma.opts = *opsched_sweep_spec_measure(spec);
    ma.math_auto = !sets_math;
    ma.layout_auto = !sets_layout;
    tool_measure_replay(&a.measure, "sweep", &ma);
    tool_measure_resolve(ctx, &ma);
    const char *algo_list[32];
    int n_algos = 0;
    char algo_buf[256];
    if (ma.algo) {
        snprintf(algo_buf, sizeof(algo_buf), "%s", ma.algo);
        char *save = NULL;
        for (char *t = strtok_r(algo_buf, ",", &save); t && n_algos < 32; t = strtok_r(NULL, ",", &save))
            algo_list[n_algos++] = t;
    } else {
        for (int i = 0; i < opsched_sweep_spec_num_algos(spec) && n_algos < 32; i++)
            algo_list[n_algos++] = opsched_sweep_spec_algo(spec, i);
    }
    if (a.dry_run) {
        rc = dry_run(ctx, spec, &a, &ma, algo_list, n_algos);
        goto done;
    }

    int devices[MAX_GPUS], n_devices = 1;
    devices[0] = ma.device;
    if (a.gpus && (rc = parse_gpus(ctx, a.gpus, ma.backend, devices, &n_devices)) != TOOL_EXIT_OK)
        goto done;
    command = join_command(argc, argv);
    progress_state ps = {.tty = isatty(STDERR_FILENO)};
    opsched_sweep_options so;
    opsched_sweep_options_default(&so);
    so.backend = ma.backend;
    so.devices = devices;
    so.n_devices = n_devices;
    so.db_path = a.db;
    so.shard_index = a.shard_index;
    so.shard_count = a.shard_count;
    so.resume = !a.no_resume;
    so.measure = &ma.opts;
    so.algos = algo_list;
    so.n_algos = n_algos;
    so.command = command;
    so.progress = on_progress;
    so.progress_user = &ps;
    if (a.shard_count > 1)
        fprintf(stderr, "opsched sweep: shard %d/%d (from %s)\n", a.shard_index, a.shard_count,
                a.shard_from);

    stop_flag = tool_stop_install("\nopsched sweep: stopping after the configurations in flight; Ctrl-C again to abort\n");
    so.stop = stop_flag;
    opsched_sweep_result res;
    st = opsched_sweep_run(ctx, spec, &so, &res);
    tool_stop_restore();
    if (ps.printed) fputc('\n', stderr);
    if (st != OPSCHED_OK && res.run_id == 0) {
        /* Nothing ran: bad options, a missing device, a database that cannot be opened. */
        if (st == OPSCHED_ERR_INVALID_ARG) {
            fprintf(stderr, "opsched sweep: %s\n", opsched_ctx_last_error(ctx));
            rc = TOOL_EXIT_USAGE;
        } else {
            rc = tool_fail(ctx, st, "sweep");
        }
        goto done;
    }
    rc = report_result(ctx, st, &res, a.db);
done:
    free(command);
    opsched_sweep_spec_free(spec);
    return rc;
}
