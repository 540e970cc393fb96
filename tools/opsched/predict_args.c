/*
 * predict_args.c - options shared by `opsched train-model` and `opsched
 * predict`, and the report of the learned models both print.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "predict_args.h"

enum {
    PA_DB,
    PA_DATA,
    PA_TARGET,
    PA_MATH,
    PA_LAYOUT,
    PA_ALGO,
    PA_CACHE,
    PA_FOLDS,
    PA_ROUNDS,
    PA_DEPTH,
    PA_ETA,
    PA_THREADS,
    PA_QUIET
};

const tool_opt predict_data_optlist[] = {
    {"db", 0, "FILE", "the measurement database (models go to FILE.models/)", PA_DB},
    {"data", 0, "NAME", "without --db: the shipped data set NAME (h100)", PA_DATA},
    {"target", 0, "NAME|ID",
     "the device in the database: its id or part of its\nname "
     "(default: the only one measured)",
     PA_TARGET},
    {"math", 0, "M", "fp32, tf32 (default: predictions are of GPUs), fp16,\nbf16", PA_MATH},
    {"layout", 0, "L",
     "auto (default: the layout the database holds for the\ndevice), nchw "
     "or nhwc",
     PA_LAYOUT},
    {"algo", 0, "POLICY", "the algorithm policy measured (default heuristic)", PA_ALGO},
    {"cache", 0, "hot|cold", "the cache state measured (default hot)", PA_CACHE},
    {NULL, 0, NULL, NULL, 0}};

const tool_opt predict_train_optlist[] = {
    {"folds", 0, "N", "cross-validation folds (default 5)", PA_FOLDS},
    {"rounds", 0, "N", "boosting rounds (default 600)", PA_ROUNDS},
    {"depth", 0, "N", "tree depth (default 8)", PA_DEPTH},
    {"eta", 0, "X", "learning rate (default 0.05)", PA_ETA},
    {"threads", 0, "N", "XGBoost threads (default: 1 below 1000 rows, else all)", PA_THREADS},
    {"quiet", 0, NULL, "no progress messages", PA_QUIET},
    {NULL, 0, NULL, NULL, 0}};

void predict_args_init(predict_args *a)
{
    memset(a, 0, sizeof(*a));
    opsched_predictor_options_default(&a->po);
    a->po.math = OPSCHED_MATH_TF32;
    a->layout_auto = 1;
}

static int need_int(const char *cmd, const char *name, const char *val, int64_t lo, int64_t hi,
                    int *out)
{
    int64_t v;
    if (!tool_parse_int(val, lo, hi, &v))
        return tool_usage_error(cmd, "--%s needs a number in %lld..%lld, got '%s'", name,
                                (long long)lo, (long long)hi, val);
    *out = (int)v;
    return TOOL_EXIT_OK;
}

int predict_args_opt(void *dest, const char *cmd, const tool_opt *o, const char *val)
{
    predict_args *a = dest;
    switch (o->id) {
    case PA_DB:
        a->db = val;
        return TOOL_EXIT_OK;
    case PA_DATA:
        a->data = val;
        return TOOL_EXIT_OK;
    case PA_TARGET:
        a->target = val;
        a->po.device = val;
        return TOOL_EXIT_OK;
    case PA_MATH:
        return tool_arg_math(cmd, "--math", val, &a->po.math, NULL);
    case PA_LAYOUT:
        return tool_arg_layout(cmd, "--layout", val, &a->po.layout, &a->layout_auto);
    case PA_ALGO:
        a->po.algo_policy = val;
        return TOOL_EXIT_OK;
    case PA_CACHE:
        if (strcmp(val, "hot") == 0)
            a->po.cache = OPSCHED_CACHE_HOT;
        else if (strcmp(val, "cold") == 0)
            a->po.cache = OPSCHED_CACHE_COLD;
        else
            return tool_usage_error(cmd, "--cache wants hot or cold, got '%s'", val);
        return TOOL_EXIT_OK;
    case PA_FOLDS:
        return need_int(cmd, o->name, val, 2, 100, &a->po.folds);
    case PA_ROUNDS:
        return need_int(cmd, o->name, val, 1, 100000, &a->po.rounds);
    case PA_DEPTH:
        return need_int(cmd, o->name, val, 1, 20, &a->po.max_depth);
    case PA_THREADS:
        return need_int(cmd, o->name, val, 0, 1024, &a->po.threads);
    case PA_QUIET:
        a->quiet = 1;
        return TOOL_EXIT_OK;
    default: {
        char *end = NULL;
        double v = strtod(val, &end);
        if (end == val || *end || !(v > 0 && v <= 1))
            return tool_usage_error(cmd, "--eta needs a number in (0, 1], got '%s'", val);
        a->po.eta = v;
        return TOOL_EXIT_OK;
    }
    }
}

static void log_progress(opsched_log_level level, const char *msg, void *user)
{
    const char *cmd = user;
    if (level <= OPSCHED_LOG_WARN)
        fprintf(stderr, "opsched %s: %s: %s\n", cmd,
                level == OPSCHED_LOG_ERROR ? "error" : "warning", msg);
    else
        fprintf(stderr, "opsched %s: %s\n", cmd, msg);
}

int predict_args_finish(predict_args *a, opsched_ctx *ctx, const char *cmd)
{
    int rc = tool_db_or_shipped(ctx, cmd, a->db, a->data, a->db_path, sizeof(a->db_path));
    if (rc != TOOL_EXIT_OK) return rc;
    if (a->layout_auto) {
        a->po.layout = tool_data_layout(ctx, a->db_path, a->target, a->po.math, a->po.algo_policy);
        a->layout_auto = 0;
    }
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
