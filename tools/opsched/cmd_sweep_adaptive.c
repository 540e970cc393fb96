/*
 * cmd_sweep_adaptive.c - `opsched sweep --adaptive`: nn-Meter's adaptive
 * sampling.  Each round trains the learned models on what the database
 * holds with a share of the configurations held out, predicts the held-out
 * ones, and where the error is above the target measures new
 * configurations near them - the same operator, spatial size, kernel,
 * stride and padding, with the channels and the batch varied - then
 * trains again.  It stops when the models' cross-validated error is under
 * the target, when the time budget is spent, or when there is nothing new
 * to measure.
 *
 * Configurations are rebuilt from their stored records with the operator
 * builder (opsched_opconfig_build) and kept only when the rebuilt
 * signature equals the stored one, so a held-out configuration is exactly
 * the one measured and its neighbours are configurations a network can
 * contain.  The measuring is an ordinary sweep (a spec of grid entries),
 * resumable and recorded as a run.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opsched/predict.h"
#include "opsched/sweep.h"
#include "args.h"

#define MAX_PARAMS 12

static const char adaptive_usage[] =
    "usage: opsched sweep --adaptive --db FILE [options] [measurement options]\n"
    "\n"
    "Adaptive sampling (nn-Meter): trains the learned cost models on the database\n"
    "with a share of the configurations held out, predicts those, and measures new\n"
    "configurations near the ones predicted worse than the target (same operator,\n"
    "spatial size, kernel, stride; channels and batch varied); repeats until the\n"
    "models' cross-validated median error is under the target or the budget is\n"
    "spent.  Prints each round's errors.  The measurement options (--math, --backend,\n"
    "--device, --iters, ...) apply to the new measurements and select the data the\n"
    "models learn from.\n";

enum { AD_DB, AD_TARGET, AD_BUDGET, AD_MAX_ROUNDS, AD_PER_ROUND, AD_HOLDOUT, AD_ROUNDS, AD_FOLDS,
       AD_ADAPTIVE };

static const tool_opt adaptive_opts[] = {
    {"adaptive", 0, NULL, "adaptive sampling (this)", AD_ADAPTIVE},
    {"db", 0, "FILE", "the database (it must hold measurements of the device)", AD_DB},
    {"target-error", 0, "PCT", "stop when the CV median |error| is below this (default 10)",
     AD_TARGET},
    {"budget-s", 0, "S", "stop starting new work after this many seconds (default\n600)",
     AD_BUDGET},
    {"max-rounds", 0, "N", "at most N rounds of training (default 10)", AD_MAX_ROUNDS},
    {"per-round", 0, "N", "new configurations measured per round, at most (default\n48)",
     AD_PER_ROUND},
    {"holdout", 0, "PCT", "share of the configurations held out each round (default\n20)",
     AD_HOLDOUT},
    {"rounds", 0, "N", "boosting rounds of the models (default 300)", AD_ROUNDS},
    {"folds", 0, "K", "cross-validation folds (default 5)", AD_FOLDS},
    {NULL, 0, NULL, NULL, 0}};

typedef struct aargs {
    const char *db;
    double target, budget_s, holdout;
    int max_rounds, per_round, rounds, folds;
    tool_measure_args ma;
} aargs;

/* ---- configurations and their parameters --------------------------------------- */

typedef struct cfg {
    char op[32];
    opsched_param p[MAX_PARAMS];
    int n;
} cfg;

static void put(cfg *c, const char *name, int64_t v)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->p[i].name, name) == 0) {
            c->p[i].value = v;
            return;
        }
    if (c->n < MAX_PARAMS) c->p[c->n++] = (opsched_param){name, v};
}

static int64_t get(const cfg *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->p[i].name, name) == 0) return c->p[i].value;
    return -1;
}

/* Operators whose configuration is its record (batch, channels, spatial
 * size, kernel, stride, padding, groups) and the builder's defaults. */
static int image_op(const char *op)
{
    static const char *const ops[] = {"relu",     "add",     "mul",       "batchnorm",
                                      "sigmoid",  "tanh",    "hardswish", "gelu",
                                      "globalavgpool"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strcmp(op, ops[i]) == 0) return 1;
    return 0;
}

/* The builder's parameters for a record, with the bias on or off (the
 * record does not say).  0 when the operator is not rebuilt. */
static int from_record(const opsched_config_record *r, int bias, cfg *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->op, sizeof(c->op), "%s", r->op);
    put(c, "batch", r->batch);
    if (strcmp(r->op, "conv2d") == 0) {
        put(c, "in_channels", r->in_channels);
        put(c, "out_channels", r->out_channels);
        put(c, "height", r->height);
        put(c, "width", r->width);
        put(c, "kernel", r->kernel);
        put(c, "stride", r->stride);
        put(c, "padding", r->padding);
        put(c, "groups", r->groups);
        put(c, "bias", bias);
    } else if (strcmp(r->op, "linear") == 0) {
        put(c, "in_features", r->in_channels);
        put(c, "out_features", r->out_channels);
        put(c, "bias", bias);
    } else if (strcmp(r->op, "maxpool") == 0 || strcmp(r->op, "avgpool") == 0) {
        if (bias) return 0;
        put(c, "channels", r->in_channels);
        put(c, "height", r->height);
        put(c, "width", r->width);
        put(c, "kernel", r->kernel);
        put(c, "stride", r->stride);
        put(c, "padding", r->padding);
    } else if (image_op(r->op)) {
        if (bias) return 0;
        put(c, "channels", r->in_channels);
        put(c, "height", r->height);
        put(c, "width", r->width);
    } else {
        return 0;
    }
    for (int i = 0; i < c->n; i++)
        if (c->p[i].value < 0) return 0;
    return 1;
}

/* Builds c; its graph and signature.  OK or the builder's refusal. */
static opsched_status build(opsched_ctx *ctx, const cfg *c, opsched_graph **g, char *sig,
                            size_t size)
{
    *g = NULL;
    opsched_status st = opsched_opconfig_build(ctx, c->op, c->p, c->n, OPSCHED_F32, g);
    if (st == OPSCHED_OK) st = opsched_node_signature(*g, 0, sig, size);
    if (st != OPSCHED_OK) {
        opsched_graph_free(*g);
        *g = NULL;
        opsched_ctx_clear_error(ctx);
    }
    return st;
}

/* ---- the data of a round ------------------------------------------------------------ */

typedef struct row {
    opsched_config_record rec;
    cfg c;
    opsched_graph *g;          /* rebuilt one-node graph */
    double ms;                 /* measured */
    double pred_ms, ape;       /* held out: predicted, |error| (fraction) */
    int held_out;
} row;

typedef struct rows {
    opsched_ctx *ctx;
    row *v;
    int n, cap;
    int64_t seen, rebuilt;
} rows;

static void rows_free(rows *r)
{
    for (int i = 0; i < r->n; i++) opsched_graph_free(r->v[i].g);
    free(r->v);
    memset(r, 0, sizeof(*r));
}

/* One row per distinct configuration that rebuilds to its own signature. */
static opsched_status collect(const opsched_dataset_row *d, void *user)
{
    rows *r = user;
    if (d->fused_relu || d->network || !(d->median_ms > 0)) return OPSCHED_OK;
    r->seen++;
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->v[i].rec.signature, d->config.signature) == 0) {
            r->v[i].ms = d->median_ms; /* the latest measurement */
            return OPSCHED_OK;
        }
    for (int bias = 1; bias >= 0; bias--) {
        cfg c;
        opsched_graph *g = NULL;
        char sig[512];
        if (!from_record(&d->config, bias, &c) ||
            build(r->ctx, &c, &g, sig, sizeof(sig)) != OPSCHED_OK)
            continue;
        if (strcmp(sig, d->config.signature) != 0) {
            opsched_graph_free(g);
            continue;
        }
        if (r->n == r->cap) {
            int cap = r->cap ? 2 * r->cap : 256;
            row *grown = realloc(r->v, sizeof(*grown) * (size_t)cap);
            if (!grown) {
                opsched_graph_free(g);
                return OPSCHED_ERR_NOMEM;
            }
            r->v = grown;
            r->cap = cap;
        }
        row *x = &r->v[r->n++];
        memset(x, 0, sizeof(*x));
        x->rec = d->config;
        x->c = c;
        x->g = g;
        x->ms = d->median_ms;
        x->pred_ms = x->ape = NAN;
        r->rebuilt++;
        return OPSCHED_OK;
    }
    return OPSCHED_OK;
}

/* A seeded choice of held-out rows: the same database and round give the
 * same split. */
static int hold_out(rows *r, double share, unsigned round)
{
    uint64_t s = 0x5eed0000u + round;
    int want = (int)ceil(share * r->n), held = 0;
    if (r->n < 5 || want < 1) return 0;
    for (int i = 0; i < r->n; i++) r->v[i].held_out = 0;
    while (held < want) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int i = (int)((s >> 33) % (uint64_t)r->n);
        if (r->v[i].held_out) continue;
        r->v[i].held_out = 1;
        held++;
    }
    return held;
}

/* ---- neighbours ------------------------------------------------------------------------ */

/* v times f, a multiple of 8 from 16 up (as channel counts are). */
static int64_t scaled(int64_t v, double f)
{
    double x = (double)v * f;
    int64_t r = v >= 16 ? (int64_t)llround(x / 8.0) * 8 : (int64_t)llround(x);
    int64_t floor_v = v >= 16 ? 8 : 1;
    return r < floor_v ? floor_v : r;
}

typedef struct newcfg {
    cfg c;
    char sig[512];
} newcfg;

typedef struct news {
    newcfg *v;
    int n, cap;
} news;

static int known_sig(const news *nw, const rows *r, const char *sig)
{
    for (int i = 0; i < nw->n; i++)
        if (strcmp(nw->v[i].sig, sig) == 0) return 1;
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->v[i].rec.signature, sig) == 0) return 1;
    return 0;
}

/* Adds c when it builds, is new, and the database has no measurement of
 * it under these settings. */
static int try_add(opsched_ctx *ctx, opsched_store *s, int64_t dev, const char *key, const rows *r,
                   news *nw, const cfg *c)
{
    opsched_graph *g = NULL;
    char sig[512];
    if (build(ctx, c, &g, sig, sizeof(sig)) != OPSCHED_OK) return 0;
    int added = 0;
    if (!known_sig(nw, r, sig)) {
        opsched_config_record rec;
        int64_t id = 0;
        int found = 1;
        if (opsched_config_record_from_node(g, 0, &rec) == OPSCHED_OK &&
            opsched_store_config(s, &rec, &id) == OPSCHED_OK &&
            opsched_store_has(s, dev, id, key, &found) == OPSCHED_OK && !found) {
            if (nw->n == nw->cap) {
                int cap = nw->cap ? 2 * nw->cap : 64;
                newcfg *grown = realloc(nw->v, sizeof(*grown) * (size_t)cap);
                if (grown) {
                    nw->v = grown;
                    nw->cap = cap;
                }
            }
            if (nw->n < nw->cap) {
                nw->v[nw->n].c = *c;
                snprintf(nw->v[nw->n].sig, sizeof(nw->v[0].sig), "%s", sig);
                nw->n++;
                added = 1;
            }
        }
        opsched_ctx_clear_error(ctx);
    }
    opsched_graph_free(g);
    return added;
}

/* The neighbours of c: channels scaled by 1/2, 3/4, 3/2 and 2 (input,
 * output, or both; a depthwise convolution's together), the batch halved
 * and doubled. */
static int neighbours(const cfg *c, cfg *out, int cap)
{
    static const double f[] = {0.5, 0.75, 1.5, 2.0};
    int n = 0;
    int conv = strcmp(c->op, "conv2d") == 0, linear = strcmp(c->op, "linear") == 0;
    const char *in = conv ? "in_channels" : linear ? "in_features" : "channels";
    const char *outn = conv ? "out_channels" : linear ? "out_features" : NULL;
    int64_t groups = conv ? get(c, "groups") : 1;
    int depthwise = conv && groups > 1 && groups == get(c, in);
    for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
        int64_t ci = scaled(get(c, in), f[k]);
        if (depthwise) {
            if (n < cap) {
                out[n] = *c;
                put(&out[n], in, ci);
                put(&out[n], "groups", ci);
                put(&out[n], outn, ci * (get(c, outn) / groups));
                n++;
            }
            continue;
        }
        if (groups > 1) continue; /* grouped: channels tied to the groups; batch only */
        if (n < cap) {
            out[n] = *c;
            put(&out[n], in, ci);
            n++;
        }
        if (outn) {
            int64_t co = scaled(get(c, outn), f[k]);
            if (n < cap) {
                out[n] = *c;
                put(&out[n], outn, co);
                n++;
            }
            if (n < cap) {
                out[n] = *c;
                put(&out[n], in, ci);
                put(&out[n], outn, co);
                n++;
            }
        }
    }
    int64_t b = get(c, "batch");
    if (n < cap) {
        out[n] = *c;
        put(&out[n], "batch", b * 2);
        n++;
    }
    if (b >= 2 && n < cap) {
        out[n] = *c;
        put(&out[n], "batch", b / 2);
        n++;
    }
    return n;
}

static int cmp_ape(const void *a, const void *b)
{
    const row *x = *(const row *const *)a, *y = *(const row *const *)b;
    double ex = isfinite(x->ape) ? x->ape : INFINITY, ey = isfinite(y->ape) ? y->ape : INFINITY;
    return (ex < ey) - (ex > ey); /* worst first */
}

/* New configurations near the held-out rows above target, the worst
 * first, one neighbour of each in turn, until per_round. */
static void generate(opsched_ctx *ctx, opsched_store *s, int64_t dev, const char *key,
                     const rows *r, double target, int per_round, news *nw)
{
    row **bad = malloc(sizeof(row *) * (size_t)(r->n ? r->n : 1));
    cfg (*cand)[24] = malloc(sizeof(*cand) * (size_t)(r->n ? r->n : 1));
    int *nc = calloc((size_t)(r->n ? r->n : 1), sizeof(int));
    int n_bad = 0;
    if (!bad || !cand || !nc) goto done;
    for (int i = 0; i < r->n; i++)
        if (r->v[i].held_out && !(r->v[i].ape <= target)) bad[n_bad++] = &r->v[i];
    qsort(bad, (size_t)n_bad, sizeof(*bad), cmp_ape);
    for (int i = 0; i < n_bad; i++) nc[i] = neighbours(&bad[i]->c, cand[i], 24);
    for (int k = 0; k < 24 && nw->n < per_round; k++)
        for (int i = 0; i < n_bad && nw->n < per_round; i++)
            if (k < nc[i]) try_add(ctx, s, dev, key, r, nw, &cand[i][k]);
done:
    free(bad);
    free(cand);
    free(nc);
}

/* A spec of one grid entry per configuration. */
static char *spec_text(const news *nw)
{
    size_t size = 256 + (size_t)nw->n * 320, len = 0;
    char *t = malloc(size);
    if (!t) return NULL;
    len += (size_t)snprintf(t, size, "description: \"opsched sweep --adaptive\"\nsweeps:\n");
    for (int i = 0; i < nw->n && len < size; i++) {
        const cfg *c = &nw->v[i].c;
        len += (size_t)snprintf(t + len, size - len, "  - op: %s\n    params: {", c->op);
        for (int k = 0; k < c->n && len < size; k++)
            len += (size_t)snprintf(t + len, size - len, "%s%s: %lld", k ? ", " : "",
                                    c->p[k].name, (long long)c->p[k].value);
        if (len < size) len += (size_t)snprintf(t + len, size - len, "}\n");
    }
    return t;
}

/* ---- the loop ------------------------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct budget {
    double t0, limit;
    volatile sig_atomic_t *stop;  /* the Ctrl-C flag, or NULL */
    volatile sig_atomic_t over;   /* set when the budget ran out mid-sweep */
} budget;

static volatile sig_atomic_t sweep_stop;

static void on_progress(const opsched_sweep_progress *p, void *user)
{
    budget *b = user;
    (void)p;
    if (now_s() - b->t0 > b->limit) {
        b->over = 1;
        sweep_stop = 1;
    }
    if (b->stop && *b->stop) sweep_stop = 1;
}

/* The models' cross-validated median |error|, weighted by their rows. */
static double cv_error(const opsched_predictor *p, char *detail, size_t size)
{
    double sum = 0, rows_total = 0;
    detail[0] = '\0';
    for (int i = 0; i < opsched_predictor_num_models(p); i++) {
        const opsched_model_info *m = opsched_predictor_model(p, i);
        if (!m->trained || strcmp(m->name, "power") == 0 || !isfinite(m->cv.median_ape)) continue;
        sum += m->cv.median_ape * (double)m->cv.n;
        rows_total += (double)m->cv.n;
        size_t len = strlen(detail);
        snprintf(detail + len, size - len, "%s%s %.1f%%", len ? ", " : "", m->name,
                 100 * m->cv.median_ape);
    }
    return rows_total > 0 ? sum / rows_total : NAN;
}

static int adaptive_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    aargs *a = dest;
    int64_t iv;
    double dv;
    char *end = NULL;
    switch (o->id) {
    case AD_ADAPTIVE: return TOOL_EXIT_OK;
    case AD_DB: a->db = v; return TOOL_EXIT_OK;
    case AD_TARGET:
    case AD_BUDGET:
    case AD_HOLDOUT:
        dv = strtod(v, &end);
        if (end == v || *end || !(dv > 0) || (o->id == AD_HOLDOUT && dv >= 100))
            return tool_usage_error(cmd, "--%s wants a positive number%s, got '%s'", o->name,
                                    o->id == AD_HOLDOUT ? " below 100" : "", v);
        if (o->id == AD_TARGET) a->target = dv;
        else if (o->id == AD_BUDGET) a->budget_s = dv;
        else a->holdout = dv;
        return TOOL_EXIT_OK;
    default:
        if (!tool_parse_int(v, o->id == AD_FOLDS ? 2 : 1, 1000000, &iv))
            return tool_usage_error(cmd, "--%s wants a count, got '%s'", o->name, v);
        if (o->id == AD_MAX_ROUNDS) a->max_rounds = (int)iv;
        else if (o->id == AD_PER_ROUND) a->per_round = (int)iv;
        else if (o->id == AD_ROUNDS) a->rounds = (int)iv;
        else a->folds = (int)iv;
        return TOOL_EXIT_OK;
    }
}

static int parse_args(int argc, char **argv, aargs *a)
{
    memset(a, 0, sizeof(*a));
    a->target = 10;
    a->budget_s = 600;
    a->holdout = 20;
    a->max_rounds = 10;
    a->per_round = 48;
    tool_measure_args_init(&a->ma);
    const tool_optgroup groups[] = {
        {"options", adaptive_opts, adaptive_opt, a},
        {"measurement options", tool_measure_optlist, tool_measure_opt, &a->ma}};
    const tool_cli cli = {"sweep", adaptive_usage, NULL, groups, 2, 0, NULL};
    const char *pos[1];
    int n_pos = 0;
    int rc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (rc != TOOL_EXIT_OK) return rc;
    if (!a->db) return tool_usage_error("sweep", "--adaptive needs --db FILE");
    return TOOL_EXIT_OK;
}

/* Measures the new configurations; *measured gets how many were stored. */
static int measure_new(opsched_ctx *ctx, const aargs *a, const news *nw, budget *b,
                       int64_t *measured)
{
    char *text = spec_text(nw);
    opsched_sweep_spec *spec = NULL;
    int rc = TOOL_EXIT_OK;
    *measured = 0;
    if (!text) return tool_fail(ctx, OPSCHED_ERR_NOMEM, "sweep");
    opsched_status st = opsched_sweep_spec_parse(ctx, text, strlen(text), "<adaptive>", &spec);
    free(text);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "adaptive spec");
    const char *algo = a->ma.algo ? a->ma.algo : "heuristic";
    int device = a->ma.device;
    opsched_sweep_options so;
    opsched_sweep_options_default(&so);
    so.backend = a->ma.backend;
    so.devices = &device;
    so.n_devices = 1;
    so.db_path = a->db;
    so.measure = &a->ma.opts;
    so.algos = &algo;
    so.n_algos = 1;
    so.command = "opsched sweep --adaptive";
    so.progress = on_progress;
    so.progress_user = b;
    sweep_stop = 0;
    so.stop = &sweep_stop;
    opsched_sweep_result res;
    st = opsched_sweep_run(ctx, spec, &so, &res);
    *measured = res.measured;
    printf("  measured %lld (%lld ok, %lld unsupported, %lld failed) in %.1f s\n",
           (long long)res.measured, (long long)res.ok, (long long)res.unsupported,
           (long long)(res.errors + res.oom), res.elapsed_s);
    if (res.unstable > 0) {
        char msg[200];
        fprintf(stderr, "opsched: warning: %s\n",
                opsched_unstable_message(res.unstable, msg, sizeof(msg)));
    }
    if (st == OPSCHED_ERR_INTERRUPTED) opsched_ctx_clear_error(ctx);
    else if (st != OPSCHED_OK) rc = tool_fail(ctx, st, "sweep");
    opsched_sweep_spec_free(spec);
    return rc;
}

int tool_sweep_adaptive(opsched_ctx *ctx, int argc, char **argv)
{
    aargs a;
    int rc = parse_args(argc, argv, &a);
    if (rc == TOOL_ARGS_HELP) return TOOL_EXIT_OK;
    if (rc != TOOL_EXIT_OK) return rc;
    opsched_device *dev = NULL;
    opsched_device_info info;
    opsched_status st = tool_open_device(ctx, &a.ma, &dev);
    if (st == OPSCHED_OK) st = opsched_device_info_get(dev, &info);
    opsched_device_close(dev);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "device");

    budget b = {.t0 = now_s(), .limit = a.budget_s};
    b.stop = tool_stop_install("\nopsched sweep: stopping after this round's measurements\n");
    opsched_measure_options key_opts = a.ma.opts;
    key_opts.plan.algo = a.ma.algo ? a.ma.algo : "heuristic";
    char key[256];
    opsched_settings_key(&key_opts, key, sizeof(key));
    const char *why = "the last round";
    printf("adaptive sampling on %s:%d (%s), %s, target %.1f%%, budget %.0f s\n", info.backend,
           info.index, info.name, opsched_math_name(a.ma.opts.plan.math), a.target, a.budget_s);

    for (int round = 1; round <= a.max_rounds; round++) {
        rows r = {.ctx = ctx};
        news nw = {0};
        opsched_store *s = NULL;
        opsched_exclusion *x = NULL;
        opsched_predictor *p = NULL;
        opsched_device_row drow;
        int stop = 0;
        if ((st = opsched_store_open(ctx, a.db, OPSCHED_STORE_READ_WRITE, &s)) != OPSCHED_OK) {
            rc = tool_fail(ctx, st, a.db);
            break;
        }
        st = opsched_store_find_device(s, info.uuid, &drow);
        if (st == OPSCHED_OK) {
            opsched_dataset_query q = {.device_id = drow.id,
                                       .math = opsched_math_name(a.ma.opts.plan.math),
                                       .layout = a.ma.opts.plan.layout == OPSCHED_LAYOUT_NHWC
                                                     ? "nhwc" : "nchw",
                                       .algo_policy = key_opts.plan.algo,
                                       .cache = opsched_cache_name(a.ma.opts.cache)};
            st = opsched_store_dataset(s, &q, collect, &r);
        }
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, "the measurements");
            goto round_done;
        }
        int held = hold_out(&r, a.holdout / 100.0, (unsigned)round);
        if (held == 0) {
            fprintf(stderr, "opsched sweep: %s has %d configurations the builder can make again "
                            "(of %lld measured); adaptive sampling needs at least 5 (measure a "
                            "grid first)\n", a.db, r.n, (long long)r.seen);
            rc = TOOL_EXIT_FAIL;
            goto round_done;
        }
        char name[32];
        snprintf(name, sizeof(name), "adaptive%d", round);
        if ((st = opsched_exclusion_create(ctx, name, &x)) != OPSCHED_OK) {
            rc = tool_fail(ctx, st, "exclusion");
            goto round_done;
        }
        for (int i = 0; i < r.n && st == OPSCHED_OK; i++)
            if (r.v[i].held_out) st = opsched_exclusion_add_graph(x, r.v[i].g);
        opsched_predictor_options po;
        opsched_predictor_options_default(&po);
        po.device = info.uuid;
        po.math = a.ma.opts.plan.math;
        po.layout = a.ma.opts.plan.layout;
        po.algo_policy = key_opts.plan.algo;
        po.cache = a.ma.opts.cache;
        po.exclude = x;
        if (a.rounds) po.rounds = a.rounds;
        if (a.folds) po.folds = a.folds;
        if (st == OPSCHED_OK) st = opsched_predictor_open(ctx, a.db, &po, &p);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, "training");
            goto round_done;
        }
        int above = 0, predicted = 0;
        double *apes = malloc(sizeof(double) * (size_t)held);
        for (int i = 0; i < r.n; i++) {
            row *v = &r.v[i];
            if (!v->held_out) continue;
            opsched_op_prediction op;
            if (opsched_predict_config(p, &v->rec, 0, &op) == OPSCHED_OK && op.ms > 0) {
                v->pred_ms = op.ms;
                v->ape = fabs(op.ms - v->ms) / v->ms;
                if (apes) apes[predicted] = v->ape;
                predicted++;
            } else {
                opsched_ctx_clear_error(ctx);
            }
            above += !(v->ape <= a.target / 100.0);
        }
        double held_median = NAN;
        if (apes && predicted) {
            for (int i = 1; i < predicted; i++)
                for (int j = i; j > 0 && apes[j] < apes[j - 1]; j--) {
                    double t = apes[j];
                    apes[j] = apes[j - 1];
                    apes[j - 1] = t;
                }
            held_median = predicted % 2 ? apes[predicted / 2]
                                        : 0.5 * (apes[predicted / 2 - 1] + apes[predicted / 2]);
        }
        free(apes);
        char detail[256];
        double cv = cv_error(p, detail, sizeof(detail));
        printf("round %d: %d configurations (%d held out); CV median |error| %.1f%% (%s); "
               "held out: median %.1f%%, %d above %.0f%%  [%.0f s]\n",
               round, r.n, held, 100 * cv, detail[0] ? detail : "no trained model",
               100 * held_median, above, a.target, now_s() - b.t0);
        fflush(stdout);
        if (cv < a.target / 100.0) {
            why = "the CV error is under the target";
            stop = 1;
        } else if (round == a.max_rounds) {
            why = "the last round (--max-rounds)";
            stop = 1;
        } else if (now_s() - b.t0 > a.budget_s) {
            why = "the time budget is spent";
            stop = 1;
        } else if (b.stop && *b.stop) {
            why = "interrupted";
            stop = 1;
        }
        if (!stop) {
            generate(ctx, s, drow.id, key, &r, a.target / 100.0, a.per_round, &nw);
            if (nw.n == 0) {
                why = "no new configuration near the poorly predicted ones";
                stop = 1;
            }
        }
        opsched_predictor_free(p);
        p = NULL;
        opsched_store_close(s);
        s = NULL;
        if (!stop) {
            int64_t measured = 0;
            printf("  %d new configurations near the %d above target\n", nw.n, above);
            rc = measure_new(ctx, &a, &nw, &b, &measured);
            if (rc != TOOL_EXIT_OK) stop = 1;
            else if (b.over) {
                why = "the time budget is spent";
                stop = 1;
            } else if (b.stop && *b.stop) {
                why = "interrupted";
                stop = 1;
            }
        }
    round_done:
        opsched_predictor_free(p);
        opsched_exclusion_free(x);
        opsched_store_close(s);
        free(nw.v);
        rows_free(&r);
        if (rc != TOOL_EXIT_OK || stop) break;
    }
    tool_stop_restore();
    if (rc == TOOL_EXIT_OK) printf("stopped: %s\n", why);
    return rc;
}
