/*
 * args.c - the subcommands' argument parser (getopt_long over declarative
 * option tables), its --help text, "did you mean" suggestions, and the
 * option groups several commands share.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

#define MAX_OPTS 256
#define HELP_COLUMN 26

/* ---- suggestions ---------------------------------------------------------- */

/* Levenshtein distance, capped: long words are not compared past 63. */
static int edit_distance(const char *a, const char *b)
{
    int row[64], la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63) la = 63;
    if (lb > 63) lb = 63;
    for (int j = 0; j <= lb; j++)
        row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Close enough to be a typo: two edits, or a third of the word. */
static int close_enough(const char *word, int d)
{
    int n = (int)strlen(word);
    return d <= 2 || d * 3 <= n;
}

const char *tool_nearest_word(const char *word, const char *const *words, int n)
{
    const char *best = NULL;
    int best_d = 1 << 30;
    for (int i = 0; i < n; i++) {
        int d = edit_distance(word, words[i]);
        if (d < best_d) {
            best_d = d;
            best = words[i];
        }
    }
    return best && close_enough(word, best_d) ? best : NULL;
}

const char *tool_args_suggest(const tool_optgroup *groups, int n_groups, const char *name)
{
    const char *words[MAX_OPTS + 1];
    int n = 0;
    for (int g = 0; g < n_groups; g++)
        for (const tool_opt *o = groups[g].opts; o->name && n < MAX_OPTS; o++)
            words[n++] = o->name;
    words[n++] = "help";
    return tool_nearest_word(name, words, n);
}

/* ---- help ------------------------------------------------------------------ */

static void print_opt(const tool_opt *o)
{
    char head[96];
    if (o->short_name)
        snprintf(head, sizeof(head), "  -%c, --%s%s%s", o->short_name, o->name, o->value ? " " : "",
                 o->value ? o->value : "");
    else
        snprintf(head, sizeof(head), "  --%s%s%s", o->name, o->value ? " " : "",
                 o->value ? o->value : "");
    const char *h = o->help;
    int len = (int)strlen(head);
    if (len + 1 >= HELP_COLUMN)
        printf("%s\n%*s", head, HELP_COLUMN, "");
    else
        printf("%-*s", HELP_COLUMN, head);
    for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
        printf("%.*s\n%*s", (int)(nl - h), h, HELP_COLUMN, "");
    printf("%s\n", h);
}

void tool_args_help(const tool_cli *cli)
{
    fputs(cli->usage, stdout);
    for (int g = 0; g < cli->n_groups; g++) {
        if (cli->groups[g].title) printf("\n%s:\n", cli->groups[g].title);
        for (const tool_opt *o = cli->groups[g].opts; o->name; o++)
            if (o->help) print_opt(o);
    }
    printf("  -h, --help              this help\n");
    if (cli->epilog) cli->epilog();
}

/* ---- parsing --------------------------------------------------------------- */

typedef struct flat_opt {
    const tool_opt *opt;
    const tool_optgroup *group;
} flat_opt;

/* The option's name as the user wrote it: "--x=y" -> "x", "-q" -> "q". */
static void written_name(const char *arg, char *out, size_t n)
{
    while (*arg == '-')
        arg++;
    snprintf(out, n, "%s", arg);
    char *eq = strchr(out, '=');
    if (eq) *eq = '\0';
}

/* Options renamed when the commands got one grammar: the new spelling,
 * offered where the command has the option it became. */
static const struct {
    const char *old, *now, *needs;
} renamed[] = {
    {"sizes", "--input-size", "input-size"},
    {"fold-bn", "--bn fold", "bn"},
    {"index", "--device", "device"},
    {"stages-device", "--stages-target", "stages-target"},
    {"device", "--data NAME (a shipped data set) or --target NAME|ID (the device in\nthe database)",
     "target"},
};

static int unknown_option(const tool_cli *cli, const char *arg, const flat_opt *flat, int n_flat)
{
    char name[128];
    written_name(arg, name, sizeof(name));
    for (size_t r = 0; r < sizeof(renamed) / sizeof(renamed[0]); r++) {
        if (strcmp(name, renamed[r].old) != 0) continue;
        for (int i = 0; i < n_flat; i++)
            if (strcmp(flat[i].opt->name, renamed[r].needs) == 0)
                return tool_usage_error(cli->cmd, "unknown option '%s'; it is now %s", arg,
                                        renamed[r].now);
    }
    if (arg[0] == '-' && arg[1] == '-') {
        for (int i = 0; i < n_flat; i++)
            if (strcmp(flat[i].opt->name, name) == 0) {
                if (!flat[i].opt->value)
                    return tool_usage_error(cli->cmd, "--%s takes no value ('%s')", name, arg);
                return tool_usage_error(cli->cmd, "--%s needs a value", name);
            }
    }
    const char *s = tool_args_suggest(cli->groups, cli->n_groups, name);
    if (s) return tool_usage_error(cli->cmd, "unknown option '%s'; did you mean '--%s'?", arg, s);
    return tool_usage_error(cli->cmd, "unknown option '%s'", arg);
}

static int parse(const tool_cli *cli, int argc, char **argv, const char **pos, int *n_pos)
{
    static struct option longs[MAX_OPTS + 2];
    static flat_opt flat[MAX_OPTS];
    char shorts[2 * MAX_OPTS + 8] = ":h";
    int n = 0;
    *n_pos = 0;
    for (int g = 0; g < cli->n_groups; g++) {
        for (const tool_opt *o = cli->groups[g].opts; o->name; o++) {
            if (n == MAX_OPTS) {
                fprintf(stderr, "opsched %s: too many options\n", cli->cmd);
                return TOOL_EXIT_USAGE;
            }
            flat[n].opt = o;
            flat[n].group = &cli->groups[g];
            longs[n] = (struct option){o->name, o->value ? required_argument : no_argument, NULL,
                                       1000 + n};
            if (o->short_name) {
                size_t l = strlen(shorts);
                shorts[l++] = (char)o->short_name;
                if (o->value) shorts[l++] = ':';
                shorts[l] = '\0';
            }
            n++;
        }
    }
    longs[n] = (struct option){"help", no_argument, NULL, 'h'};
    longs[n + 1] = (struct option){NULL, 0, NULL, 0};
    optind = 0; /* glibc: start over, scanning argv afresh */
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        int rc = TOOL_EXIT_OK;
        if (c == 'h') {
            tool_args_help(cli);
            return TOOL_ARGS_HELP;
        }
        if (c == ':') {
            char name[128];
            written_name(argv[optind - 1], name, sizeof(name));
            return tool_usage_error(cli->cmd, "%s%s needs a value",
                                    argv[optind - 1][1] == '-' ? "--" : "-", name);
        }
        if (c == '?') {
            if (optopt && optopt < 1000) {
                char s[3] = {'-', (char)optopt, '\0'};
                return unknown_option(cli, s, flat, n);
            }
            return unknown_option(cli, argv[optind - 1], flat, n);
        }
        int i = -1;
        if (c >= 1000 && c < 1000 + n) {
            i = c - 1000;
        } else {
            for (int k = 0; k < n && i < 0; k++)
                if (flat[k].opt->short_name == c) i = k;
        }
        if (i < 0) return tool_usage_error(cli->cmd, "unknown option '-%c'", c);
        rc = flat[i].group->handle(flat[i].group->dest, cli->cmd, flat[i].opt,
                                   flat[i].opt->value ? optarg : NULL);
        if (rc != TOOL_EXIT_OK) return rc;
    }
    for (int i = optind; i < argc; i++) {
        if (*n_pos >= cli->max_pos) {
            if (cli->max_pos == 0)
                return tool_usage_error(cli->cmd, "unexpected argument '%s'", argv[i]);
            if (cli->max_pos > 1)
                return tool_usage_error(cli->cmd, "too many arguments (at most %d %s)",
                                        cli->max_pos, cli->pos_what ? cli->pos_what : "");
            return tool_usage_error(cli->cmd, "one %s at a time ('%s'?)",
                                    cli->pos_what ? cli->pos_what : "argument", argv[i]);
        }
        pos[(*n_pos)++] = argv[i];
    }
    return TOOL_EXIT_OK;
}

int tool_args_parse(const tool_cli *cli, int argc, char **argv, const char **pos, int *n_pos)
{
    /* getopt_long permutes what it parses: a copy, so that the caller's
     * argv (a run's recorded command line) stays as it was typed */
    char **copy = malloc(((size_t)argc + 1) * sizeof(*copy));
    if (!copy) {
        fprintf(stderr, "opsched: out of memory\n");
        return TOOL_EXIT_FAIL;
    }
    memcpy(copy, argv, (size_t)argc * sizeof(*copy));
    copy[argc] = NULL;
    int rc = parse(cli, argc, copy, pos, n_pos);
    free(copy);
    return rc;
}

/* ---- value parsers ---------------------------------------------------------- */

int tool_arg_math(const char *cmd, const char *flag, const char *v, opsched_math *out, int *is_auto)
{
    if (is_auto && strcmp(v, "auto") == 0) {
        *is_auto = 1;
        return TOOL_EXIT_OK;
    }
    if (opsched_math_from_name(v, out) != OPSCHED_OK)
        return tool_usage_error(cmd, "%s wants %sfp32, tf32, fp16 or bf16, got '%s'", flag,
                                is_auto ? "auto, " : "", v);
    if (is_auto) *is_auto = 0;
    return TOOL_EXIT_OK;
}

int tool_arg_ablate(const char *cmd, const char *flag, const char *v, unsigned *out)
{
    if (opsched_ablation_parse(NULL, v, out) != OPSCHED_OK) {
        char names[512];
        opsched_ablation_names(~0u, ", ", names, sizeof(names));
        return tool_usage_error(cmd, "%s wants a comma list of %s (or none), got '%s'", flag, names,
                                v);
    }
    return TOOL_EXIT_OK;
}

int tool_arg_layout(const char *cmd, const char *flag, const char *v, opsched_layout *out,
                    int *is_auto)
{
    if (is_auto && strcmp(v, "auto") == 0) {
        *is_auto = 1;
        return TOOL_EXIT_OK;
    }
    if (strcmp(v, "nchw") == 0 || strcmp(v, "NCHW") == 0)
        *out = OPSCHED_LAYOUT_NCHW;
    else if (strcmp(v, "nhwc") == 0 || strcmp(v, "NHWC") == 0)
        *out = OPSCHED_LAYOUT_NHWC;
    else
        return tool_usage_error(cmd, "%s wants %snchw or nhwc, got '%s'", flag,
                                is_auto ? "auto, " : "", v);
    if (is_auto) *is_auto = 0;
    return TOOL_EXIT_OK;
}

int tool_arg_bn(const char *cmd, const char *flag, const char *v, int *fold)
{
    if (strcmp(v, "fold") == 0)
        *fold = 1;
    else if (strcmp(v, "keep") == 0)
        *fold = 0;
    else
        return tool_usage_error(cmd, "%s wants fold or keep, got '%s'", flag, v);
    return TOOL_EXIT_OK;
}

int tool_arg_on_off(const char *cmd, const char *flag, const char *v, int *out)
{
    if (strcmp(v, "on") == 0)
        *out = 1;
    else if (strcmp(v, "off") == 0)
        *out = 0;
    else
        return tool_usage_error(cmd, "%s wants on or off, got '%s'", flag, v);
    return TOOL_EXIT_OK;
}

int tool_arg_size(const char *cmd, const char *flag, const char *v, int64_t *h, int64_t *w)
{
    if (strchr(v, ',') || strchr(v, ':'))
        return tool_usage_error(cmd, "%s takes one size here (H or HxW), got the list '%s'", flag,
                                v);
    if (!tool_parse_size(v, h, w))
        return tool_usage_error(cmd, "%s wants H or HxW, got '%s'", flag, v);
    return TOOL_EXIT_OK;
}

int tool_arg_sizes(const char *cmd, const char *flag, const char *v, int64_t *h, int64_t *w,
                   int max, int *n)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", v);
    *n = 0;
    char *c1 = strchr(buf, ':');
    if (c1) {
        int64_t lo, hi, step;
        char *c2 = strchr(c1 + 1, ':');
        if (c2) *c1 = *c2 = '\0';
        if (!c2 || !tool_parse_int(buf, 1, 65536, &lo) || !tool_parse_int(c1 + 1, 1, 65536, &hi) ||
            !tool_parse_int(c2 + 1, 1, 65536, &step) || lo > hi || (hi - lo) / step >= max)
            return tool_usage_error(cmd,
                                    "%s wants H, HxW, a list like 224,256,299 or a range "
                                    "FROM:TO:STEP like 224:512:32 (FROM <= TO, at most %d "
                                    "sizes), got '%s'",
                                    flag, max, v);
        for (int64_t s = lo; s <= hi; s += step) {
            h[*n] = w[*n] = s;
            (*n)++;
        }
        return TOOL_EXIT_OK;
    }
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == max || !tool_parse_size(t, &h[*n], &w[*n]))
            return tool_usage_error(cmd,
                                    "%s wants H, HxW, a list like 224,256,299 or a range "
                                    "FROM:TO:STEP like 224:512:32 (at most %d sizes), got '%s'",
                                    flag, max, v);
        (*n)++;
    }
    if (!*n) return tool_usage_error(cmd, "%s is empty", flag);
    return TOOL_EXIT_OK;
}

/* ---- model options ------------------------------------------------------------ */

enum { MO_BATCH, MO_SIZE, MO_SHAPES, MO_BN };

const tool_opt tool_model_optlist[] = {
    {"batch", 0, "N", "batch size (default: the model's, 1 for the zoo)", MO_BATCH},
    {"input-size", 0, "H[xW]", "input height and width (default: the model's)", MO_SIZE},
    {"shapes", 0, "SPEC", "ONNX input shapes, e.g. input:1x3x224x224,mask:1x77", MO_SHAPES},
    {"bn", 0, "fold|keep",
     "zoo: fold BatchNormalization into the convolutions\n(default fold, the deployed form "
     "torch.onnx.export\nwrites) or keep it",
     MO_BN},
    {NULL, 0, NULL, NULL, 0}};

int tool_model_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    tool_model_opts *m = dest;
    switch (o->id) {
    case MO_BATCH:
        if (!tool_parse_int(v, 1, 1 << 20, &m->batch))
            return tool_usage_error(cmd, "--batch wants a positive integer, got '%s'", v);
        return TOOL_EXIT_OK;
    case MO_SIZE:
        return tool_arg_size(cmd, "--input-size", v, &m->height, &m->width);
    case MO_SHAPES:
        m->shapes = v;
        return TOOL_EXIT_OK;
    default:
        return tool_arg_bn(cmd, "--bn", v, &m->fold_bn);
    }
}

/* ---- output options ------------------------------------------------------------ */

const tool_opt tool_format_optlist[] = {{"format", 0, "F", "table (default), csv or json", 0},
                                        {NULL, 0, NULL, NULL, 0}};

int tool_format_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    (void)o;
    if (!tool_parse_format(v, dest))
        return tool_usage_error(cmd, "--format wants table, csv or json, got '%s'", v);
    return TOOL_EXIT_OK;
}

/* ---- measurement options --------------------------------------------------------- */

enum {
    ME_BACKEND,
    ME_DEVICE,
    ME_ALGO,
    ME_MATH,
    ME_DTYPE,
    ME_LAYOUT,
    ME_ABLATE,
    ME_CACHE,
    ME_WARMUP_MS,
    ME_WARMUP_ITERS,
    ME_ITERS,
    ME_MIN_MS,
    ME_SAMPLE_US,
    ME_SEED,
    ME_ENERGY,
    ME_ENERGY_WINDOW,
    ME_IDLE,
    ME_COOLDOWN,
    ME_CI,
    ME_MAX_MS
};

const tool_opt tool_measure_optlist[] = {
    {"backend", 0, "cuda|cpu", "backend (default: cuda when a GPU is present, else cpu)",
     ME_BACKEND},
    {"device", 0, "N", "device index within the backend (default 0)", ME_DEVICE},
    {"algo", 0, "POLICY", "heuristic (default), find, all, or an algorithm name", ME_ALGO},
    {"math", 0, "M",
     "auto (default: tf32 on a GPU, fp32 on the CPU), fp32\n(strict), tf32, fp16 "
     "or bf16",
     ME_MATH},
    {"dtype", 0, "T", "f32, f16 or bf16 (sets --math accordingly)", ME_DTYPE},
    {"layout", 0, "L", "auto (default: nhwc on cuda, nchw on cpu), nchw or\nnhwc", ME_LAYOUT},
    {"ablate", 0, "LIST", TOOL_ABLATE_HELP,
     ME_ABLATE},
    {"cache", 0, "hot|cold", "reuse one input (hot) or rotate inputs larger than L2", ME_CACHE},
    {"warmup-ms", 0, "MS", "warm up at least this long (default 10)", ME_WARMUP_MS},
    {"warmup-iters", 0, "N", "and at least N launches", ME_WARMUP_ITERS},
    {"ci", 0, "PCT", "sample until the median's 95% confidence interval is\nwithin +-PCT% "
                     "(default 0.5; 0: a fixed budget of\n--iters and --min-ms)", ME_CI},
    {"max-ms", 0, "MS", "stop sampling after this long even when not stable\n(default 1000)",
     ME_MAX_MS},
    {"iters", 0, "N", "exactly N timed samples (a fixed budget; default: >= 20,\nthen until "
                      "stable)", ME_ITERS},
    {"min-ms", 0, "MS", "sample for this long (a fixed budget, unless --ci is\ngiven too)",
     ME_MIN_MS},
    {"sample-us", 0, "US", "batch launches until a sample lasts this long (default\n200)",
     ME_SAMPLE_US},
    {"seed", 0, "N", "weights and inputs (default 1)", ME_SEED},
    {"energy", 0, NULL, "also measure energy (window >= 1 s, NVML counter)", ME_ENERGY},
    {"energy-window-ms", 0, "MS", "energy window (default 1000, never less)", ME_ENERGY_WINDOW},
    {"idle-ms", 0, "MS", "idle-power window before it (default 300)", ME_IDLE},
    {"cooldown-ms", 0, "MS", "sleep before each configuration (default 0)", ME_COOLDOWN},
    {NULL, 0, NULL, NULL, 0}};

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= lo && v <= hi)) return 0;
    *out = v;
    return 1;
}

int tool_measure_opt(void *dest, const char *cmd, const tool_opt *opt, const char *v)
{
    tool_measure_args *a = dest;
    opsched_measure_options *o = &a->opts;
    int64_t iv;
    double dv;
    switch (opt->id) {
    case ME_BACKEND:
        a->backend = v;
        return TOOL_EXIT_OK;
    case ME_DEVICE:
        if (!tool_parse_int(v, 0, 1024, &iv))
            return tool_usage_error(cmd, "--device wants an index within the backend, got '%s'", v);
        a->device = (int)iv;
        a->device_set = 1;
        return TOOL_EXIT_OK;
    case ME_ALGO:
        a->algo = v;
        return TOOL_EXIT_OK;
    case ME_MATH:
        a->math_set = 1;
        return tool_arg_math(cmd, "--math", v, &o->plan.math, &a->math_auto);
    case ME_DTYPE: {
        opsched_dtype dt;
        if (opsched_dtype_from_name(v, &dt) != OPSCHED_OK ||
            (dt != OPSCHED_F32 && dt != OPSCHED_F16 && dt != OPSCHED_BF16))
            return tool_usage_error(cmd, "--dtype wants f32, f16 or bf16, got '%s'", v);
        a->math_set = 1;
        if (dt == OPSCHED_F16)
            o->plan.math = OPSCHED_MATH_FP16;
        else if (dt == OPSCHED_BF16)
            o->plan.math = OPSCHED_MATH_BF16;
        else if (a->math_auto || o->plan.math != OPSCHED_MATH_TF32)
            o->plan.math = OPSCHED_MATH_FP32;
        a->math_auto = 0;
        return TOOL_EXIT_OK;
    }
    case ME_LAYOUT:
        a->layout_set = 1;
        return tool_arg_layout(cmd, "--layout", v, &o->plan.layout, &a->layout_auto);
    case ME_ABLATE:
        return tool_arg_ablate(cmd, "--ablate", v, &o->plan.ablate);
    case ME_CACHE:
        if (strcmp(v, "hot") == 0)
            o->cache = OPSCHED_CACHE_HOT;
        else if (strcmp(v, "cold") == 0)
            o->cache = OPSCHED_CACHE_COLD;
        else
            return tool_usage_error(cmd, "--cache wants hot or cold, got '%s'", v);
        return TOOL_EXIT_OK;
    case ME_ITERS:
    case ME_WARMUP_ITERS:
        if (!tool_parse_int(v, 1, 10000000, &iv))
            return tool_usage_error(cmd, "--%s wants a positive count, got '%s'", opt->name, v);
        if (opt->id == ME_ITERS) {
            o->iters = (int)iv;
            o->min_ms = 0;
            if (!a->ci_set) o->ci_target = 0;
            if (o->max_iters < o->iters) o->max_iters = o->iters;
        } else {
            o->warmup_iters = (int)iv;
        }
        return TOOL_EXIT_OK;
    case ME_SEED:
        if (!tool_parse_int(v, 0, INT64_MAX, &iv))
            return tool_usage_error(cmd, "--seed wants a number, got '%s'", v);
        o->seed = (uint64_t)iv;
        return TOOL_EXIT_OK;
    case ME_ENERGY:
        o->energy = 1;
        return TOOL_EXIT_OK;
    case ME_CI:
        if (!parse_double(v, 0, 50, &dv))
            return tool_usage_error(cmd, "--ci wants a percentage from 0 to 50, got '%s'", v);
        o->ci_target = dv / 100.0;
        a->ci_set = 1;
        return TOOL_EXIT_OK;
    default:
        if (!parse_double(v, 0, 3.6e6, &dv))
            return tool_usage_error(cmd, "--%s wants milliseconds (or microseconds), got '%s'",
                                    opt->name, v);
        if (opt->id == ME_WARMUP_MS)
            o->warmup_ms = dv;
        else if (opt->id == ME_MIN_MS) {
            o->min_ms = dv;
            if (!a->ci_set) o->ci_target = 0;
        } else if (opt->id == ME_MAX_MS)
            o->max_ms = dv;
        else if (opt->id == ME_ENERGY_WINDOW)
            o->energy_window_ms = dv;
        else if (opt->id == ME_IDLE)
            o->idle_ms = dv;
        else if (opt->id == ME_COOLDOWN)
            o->cooldown_ms = dv;
        else
            o->sample_min_us = dv;
        return TOOL_EXIT_OK;
    }
}

/* ---- the training iteration ---------------------------------------------- */

enum { TR_TRAIN = 1, TR_OPTIMIZER, TR_IMPL, TR_LOSS, TR_WD };

const tool_opt tool_train_optlist[] = {
    {"train", 0, NULL,
     "the training iteration instead of inference: info shows its\n"
     "steps and memory; profile, run and predict take its forward,\n"
     "loss and backward as one graph (attention unfused)",
     TR_TRAIN},
    {"optimizer", 0, "sgd|adamw", "SGD with momentum (default) or AdamW", TR_OPTIMIZER},
    {"optimizer-impl", 0, "foreach|fused", "torch.optim's implementation (default foreach)",
     TR_IMPL},
    {"loss", 0, "ce|mse", "cross-entropy (default) or mean squared error", TR_LOSS},
    {"weight-decay", 0, "W", "SGD's weight decay (default 0)", TR_WD},
    {NULL, 0, NULL, NULL, 0}};

int tool_train_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    tool_train_opts *t = dest;
    switch (o->id) {
    case TR_TRAIN:
        t->on = 1;
        return TOOL_EXIT_OK;
    case TR_OPTIMIZER:
        t->optimizer_set = 1;
        t->o.step = 1;
        if (strcmp(v, "sgd") == 0) t->o.optimizer = OPSCHED_OPTIMIZER_SGD;
        else if (strcmp(v, "adamw") == 0) t->o.optimizer = OPSCHED_OPTIMIZER_ADAMW;
        else return tool_usage_error(cmd, "--optimizer wants sgd or adamw, got '%s'", v);
        break;
    case TR_IMPL:
        t->optimizer_set = 1;
        t->o.step = 1;
        if (strcmp(v, "foreach") == 0) t->o.impl = OPSCHED_OPTIMIZER_FOREACH;
        else if (strcmp(v, "fused") == 0) t->o.impl = OPSCHED_OPTIMIZER_FUSED;
        else return tool_usage_error(cmd, "--optimizer-impl wants foreach or fused, got '%s'", v);
        break;
    case TR_LOSS:
        if (strcmp(v, "ce") == 0) t->o.loss = OPSCHED_LOSS_CROSS_ENTROPY;
        else if (strcmp(v, "mse") == 0) t->o.loss = OPSCHED_LOSS_MSE;
        else return tool_usage_error(cmd, "--loss wants ce or mse, got '%s'", v);
        break;
    default: {
        char *end = NULL;
        double d = strtod(v, &end);
        t->optimizer_set = 1;
        t->o.step = 1;
        if (end == v || *end || !(d >= 0 && d < 1))
            return tool_usage_error(cmd, "--weight-decay wants a number in [0, 1), got '%s'", v);
        t->o.weight_decay = d;
        break;
    }
    }
    return TOOL_EXIT_OK;
}

int tool_train_apply(const char *cmd, const tool_train_opts *t, tool_model_opts *mo)
{
    if (!t->on) {
        if (t->optimizer_set || t->o.loss != OPSCHED_LOSS_CROSS_ENTROPY)
            return tool_usage_error(cmd, "--loss, --optimizer, --optimizer-impl and "
                                         "--weight-decay go with --train");
        return TOOL_EXIT_OK;
    }
    mo->train = &t->o; /* --optimizer and friends set its step */
    return TOOL_EXIT_OK;
}
