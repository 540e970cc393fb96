/*
 * predict_args.c - options shared by `opsched train-model` and `opsched
 * predict`, and the report of the learned models both print.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "predict_args.h"

const char *predict_args_help =
    "models:\n"
    "  --db FILE              the measurement database (models go to FILE.models/);\n"
    "                         without it, the shipped data of --device (e.g. h100)\n"
    "  --device NAME|ID       the device in the database: its id or part of its name\n"
    "                         (default: the only one measured)\n"
    "  --math MODE            fp32, tf32 (default), fp16, bf16\n"
    "  --layout nchw|nhwc     (default nchw)\n"
    "  --algo POLICY          the algorithm policy measured (default heuristic)\n"
    "  --cache hot|cold       the cache state measured (default hot)\n"
    "  --folds N              cross-validation folds (default 5)\n"
    "  --rounds N             boosting rounds (default 600)\n"
    "  --depth N              tree depth (default 8)\n"
    "  --eta X                learning rate (default 0.05)\n"
    "  --threads N            XGBoost threads (default: 1 below 1000 rows, else all)\n"
    "  --quiet                no progress messages\n";

void predict_args_init(predict_args *a)
{
    memset(a, 0, sizeof(*a));
    opsched_predictor_options_default(&a->po);
}

static int need_int(const char *cmd, const char *name, const char *val, int64_t lo, int64_t hi,
                    int *out, int *rc)
{
    int64_t v;
    if (!val || !tool_parse_int(val, lo, hi, &v)) {
        *rc = tool_usage_error(cmd, "%s needs a number in %lld..%lld", name, (long long)lo,
                               (long long)hi);
        return -1;
    }
    *out = (int)v;
    return 1;
}

int predict_args_take(predict_args *a, const char *cmd, int argc, char **argv, int *i, int *rc)
{
    const char *arg = argv[*i];
    const char *val = *i + 1 < argc ? argv[*i + 1] : NULL;
    static const char *const with_value[] = {"--db",    "--device", "--math",  "--layout",
                                             "--algo",  "--cache",  "--folds", "--rounds",
                                             "--depth", "--eta",    "--threads"};
    if (strcmp(arg, "--quiet") == 0) {
        a->quiet = 1;
        return 1;
    }
    int known = 0;
    for (size_t k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++)
        known |= strcmp(arg, with_value[k]) == 0;
    if (!known) return 0;
    if (!val) {
        *rc = tool_usage_error(cmd, "%s needs a value", arg);
        return -1;
    }
    (*i)++;
    if (strcmp(arg, "--db") == 0) {
        a->db = val;
    } else if (strcmp(arg, "--device") == 0) {
        a->device = val;
        a->po.device = val;
    } else if (strcmp(arg, "--math") == 0) {
        if (opsched_math_from_name(val, &a->po.math) != OPSCHED_OK) {
            *rc = tool_usage_error(cmd, "--math must be fp32, tf32, fp16 or bf16, not '%s'", val);
            return -1;
        }
    } else if (strcmp(arg, "--layout") == 0) {
        if (strcmp(val, "nchw") == 0)
            a->po.layout = OPSCHED_LAYOUT_NCHW;
        else if (strcmp(val, "nhwc") == 0)
            a->po.layout = OPSCHED_LAYOUT_NHWC;
        else {
            *rc = tool_usage_error(cmd, "--layout must be nchw or nhwc, not '%s'", val);
            return -1;
        }
    } else if (strcmp(arg, "--algo") == 0) {
        a->po.algo_policy = val;
    } else if (strcmp(arg, "--cache") == 0) {
        if (strcmp(val, "hot") == 0)
            a->po.cache = OPSCHED_CACHE_HOT;
        else if (strcmp(val, "cold") == 0)
            a->po.cache = OPSCHED_CACHE_COLD;
        else {
            *rc = tool_usage_error(cmd, "--cache must be hot or cold, not '%s'", val);
            return -1;
        }
    } else if (strcmp(arg, "--folds") == 0) {
        return need_int(cmd, arg, val, 2, 100, &a->po.folds, rc);
    } else if (strcmp(arg, "--rounds") == 0) {
        return need_int(cmd, arg, val, 1, 100000, &a->po.rounds, rc);
    } else if (strcmp(arg, "--depth") == 0) {
        return need_int(cmd, arg, val, 1, 20, &a->po.max_depth, rc);
    } else if (strcmp(arg, "--threads") == 0) {
        return need_int(cmd, arg, val, 0, 1024, &a->po.threads, rc);
    } else { /* --eta */
        char *end = NULL;
        double v = strtod(val, &end);
        if (!end || *end || !(v > 0 && v <= 1)) {
            *rc = tool_usage_error(cmd, "--eta needs a number in (0, 1]");
            return -1;
        }
        a->po.eta = v;
    }
    return 1;
}

static void log_progress(opsched_log_level level, const char *msg, void *user)
{
    const char *cmd = user;
    if (level <= OPSCHED_LOG_WARN)
        fprintf(stderr, "opsched %s: %s: %s\n", cmd, level == OPSCHED_LOG_ERROR ? "error" : "warning",
                msg);
    else
        fprintf(stderr, "opsched %s: %s\n", cmd, msg);
}

int predict_args_finish(predict_args *a, opsched_ctx *ctx, const char *cmd)
{
    int rc = tool_db_or_shipped(ctx, cmd, a->db, a->device, a->db_path, sizeof(a->db_path));
    if (rc != TOOL_EXIT_OK) return rc;
    opsched_ctx_set_log(ctx, log_progress, (void *)cmd,
                        a->quiet ? OPSCHED_LOG_WARN : OPSCHED_LOG_INFO);
    return TOOL_EXIT_OK;
}

static void pct(char *buf, size_t n, double v)
{
    if (isfinite(v))
        snprintf(buf, n, "%.1f%%", 100 * v);
    else
        snprintf(buf, n, "-");
}

void predict_print_models(FILE *f, const opsched_predictor *p)
{
    fprintf(f, "  %-22s %6s %5s  %9s %7s %7s %8s | %9s %7s  %s\n", "model", "rows", "folds",
            "cv median", "p90", "max", "in +-10%", "FLOPs-fit", "p90", "operators (rows)");
    for (int i = 0; i < opsched_predictor_num_models(p); i++) {
        const opsched_model_info *m = opsched_predictor_model(p, i);
        char a[16], b[16], c[16], d[16], e[16], g[16];
        pct(a, sizeof(a), m->cv.median_ape);
        pct(b, sizeof(b), m->cv.p90_ape);
        pct(c, sizeof(c), m->cv.max_ape);
        pct(d, sizeof(d), m->cv.within10);
        pct(e, sizeof(e), m->baseline.median_ape);
        pct(g, sizeof(g), m->baseline.p90_ape);
        char name[40];
        snprintf(name, sizeof(name), "%s%s", m->name,
                 strcmp(m->name, "power") == 0  ? " (energy)"
                 : strcmp(m->name, "host") == 0 ? " (host time)"
                 : m->trained                   ? ""
                                                : " (too few)");
        fprintf(f, "  %-22s %6lld %5d  %9s %7s %7s %8s | %9s %7s  %s\n", name, (long long)m->rows,
                m->folds, m->trained ? a : "-", m->trained ? b : "-", m->trained ? c : "-",
                m->trained ? d : "-", m->trained ? e : "-", m->trained ? g : "-", m->ops);
    }
}
