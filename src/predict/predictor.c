/*
 * predictor.c - the predictor: the database's distinct measured
 * configurations under one device and settings (the exact lookups and the
 * training rows), the saved or freshly trained models, and the prediction
 * of operators, source by source (exact, learned, roofline, none).  Also
 * the exclusions of leave-one-model-out validation.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/util.h"
#include "opsched/zoo.h"
#include "predict/predict_impl.h"

/* ---- exclusions -------------------------------------------------------------- */

struct opsched_exclusion {
    opsched_ctx *ctx;
    char *name;
    os_map sigs;
    uint64_t hash;          /* sum of the signatures' hashes: independent of order */
};

opsched_status opsched_exclusion_create(opsched_ctx *ctx, const char *name,
                                        opsched_exclusion **out)
{
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_exclusion_create: out is NULL");
    *out = NULL;
    opsched_exclusion *x = calloc(1, sizeof(*x));
    if (!x) return OS_NOMEM(ctx);
    x->ctx = ctx;
    opsched_status st = os_strdup(ctx, name && *name ? name : "excluded", &x->name);
    if (st != OPSCHED_OK) {
        free(x);
        return st;
    }
    *out = x;
    return OPSCHED_OK;
}

void opsched_exclusion_free(opsched_exclusion *x)
{
    if (!x) return;
    os_map_free(&x->sigs);
    free(x->name);
    free(x);
}

static opsched_status exclusion_add(opsched_exclusion *x, const char *sig)
{
    if (os_map_get(&x->sigs, sig) >= 0) return OPSCHED_OK;
    OS_TRY(os_map_put(x->ctx, &x->sigs, sig, 1));
    x->hash += os_hash64(sig);
    return OPSCHED_OK;
}

opsched_status opsched_exclusion_add_graph(opsched_exclusion *x, const opsched_graph *g)
{
    if (!x) return OPSCHED_ERR_INVALID_ARG;
    if (!g) return OS_FAIL(x->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_exclusion_add_graph: no graph");
    char sig[512];
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        OS_TRY(opsched_node_signature(g, i, sig, sizeof(sig)));
        OS_TRY(exclusion_add(x, sig));
    }
    return OPSCHED_OK;
}

opsched_status opsched_exclusion_add_zoo(opsched_exclusion *x, const char *model,
                                         const int64_t *batches, int n_batches,
                                         const int64_t *sizes, int n_sizes)
{
    if (!x) return OPSCHED_ERR_INVALID_ARG;
    if (!model || !batches || n_batches < 1)
        return OS_FAIL(x->ctx, OPSCHED_ERR_INVALID_ARG,
                       "opsched_exclusion_add_zoo: a model and batch sizes are required");
    int64_t def = 0;
    if (!sizes || n_sizes < 1) {
        sizes = &def;
        n_sizes = 1;
    }
    /* Both the torchvision form and the deployed one (BatchNormalization
     * folded): every configuration the model can show. */
    for (int b = 0; b < n_batches; b++)
        for (int s = 0; s < n_sizes; s++)
            for (int fold = 0; fold < 2; fold++) {
                opsched_zoo_options zo = {.batch = batches[b], .height = sizes[s],
                                          .fold_bn = fold};
                opsched_graph *g = NULL;
                OS_TRY(opsched_zoo_build(x->ctx, model, &zo, &g));
                opsched_status st = opsched_exclusion_add_graph(x, g);
                opsched_graph_free(g);
                OS_TRY(st);
            }
    return OPSCHED_OK;
}

int opsched_exclusion_count(const opsched_exclusion *x)
{
    return x ? (int)x->sigs.count : 0;
}

/* ---- options ------------------------------------------------------------------- */

void opsched_predictor_options_default(opsched_predictor_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof(*o));
    o->math = OPSCHED_MATH_TF32;
    o->layout = OPSCHED_LAYOUT_NCHW;
    o->algo_policy = "heuristic";
    o->cache = OPSCHED_CACHE_HOT;
    o->folds = 5;
    o->rounds = 600;
    o->max_depth = 8;
    o->eta = 0.05;
    o->train = 1;
}

static opsched_status check_options(opsched_ctx *ctx, const opsched_predictor_options *o)
{
    if (o->folds < 2 || o->folds > 100)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "predictor: folds must be 2..100, got %d",
                       o->folds);
    if (o->rounds < 1 || o->rounds > 100000)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "predictor: rounds must be 1..100000, got %d",
                       o->rounds);
    if (o->max_depth < 1 || o->max_depth > 20)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "predictor: max_depth must be 1..20, got %d",
                       o->max_depth);
    if (!(o->eta > 0 && o->eta <= 1))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "predictor: eta must be in (0, 1], got %g",
                       o->eta);
    if ((int)o->math < 0 || o->math >= OPSCHED_MATH_COUNT)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "predictor: unknown math mode %d",
                       (int)o->math);
    return OPSCHED_OK;
}

/* ---- reading the measurements ------------------------------------------------------ */

void os_entry_key(const char *signature, int fused_relu, char *buf, size_t size)
{
    snprintf(buf, size, "%s#%d", signature, fused_relu ? 1 : 0);
}

typedef struct load_state {
    opsched_predictor *p;
    const opsched_exclusion *x;
} load_state;

static opsched_status take_row(const opsched_dataset_row *r, void *user)
{
    load_state *ls = user;
    opsched_predictor *p = ls->p;
    if (ls->x && os_map_get(&ls->x->sigs, r->config.signature) >= 0) {
        p->info.excluded_rows++;
        return OPSCHED_OK;
    }
    if (!(r->median_ms > 0) || !isfinite(r->median_ms)) return OPSCHED_OK;
    char key[600];
    os_entry_key(r->config.signature, r->fused_relu, key, sizeof(key));
    int64_t idx = os_map_get(&p->index, key);
    if (idx < 0) {
        double f[OPSCHED_FEATURE_COUNT];
        if (opsched_features(p->ctx, &r->config, r->fused_relu, &p->fdev, f) != OPSCHED_OK) {
            os_log(p->ctx, OPSCHED_LOG_DEBUG, "measurement %lld left out: %s",
                   (long long)r->measurement_id, opsched_ctx_last_error(p->ctx));
            opsched_ctx_clear_error(p->ctx);
            return OPSCHED_OK;
        }
        OS_TRY(os_grow(p->ctx, (void **)&p->entries, &p->cap_entries, p->n_entries + 1,
                       sizeof(os_entry)));
        os_entry *e = &p->entries[p->n_entries];
        memset(e, 0, sizeof(*e));
        OS_TRY(os_strdup(p->ctx, key, &e->key));
        OS_TRY(os_map_put(p->ctx, &p->index, key, (int64_t)p->n_entries));
        idx = (int64_t)p->n_entries++;
        snprintf(e->op, sizeof(e->op), "%s%s", r->config.op, r->fused_relu ? "+relu" : "");
        e->family = opsched_op_family_of(r->config.op, r->fused_relu);
        e->fused_relu = r->fused_relu;
        e->flops = r->config.flops > 0 ? (double)r->config.flops : 0;
        for (int i = 0; i < OPSCHED_FEATURE_COUNT; i++) e->f[i] = (float)f[i];
        e->energy_j = NAN;
    }
    /* Rows come oldest first: the latest measurement wins. */
    os_entry *e = &p->entries[idx];
    e->measurement_id = r->measurement_id;
    e->ms = r->median_ms;
    e->cv = r->cv;
    if (r->energy_valid && r->energy_j > 0 && isfinite(r->energy_j)) {
        e->energy_id = r->measurement_id;
        e->energy_j = r->energy_j;
    }
    return OPSCHED_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of v[0..n) (sorted in place); NaN for n = 0. */
static double quantile(double *v, size_t n, double q)
{
    if (n == 0) return NAN;
    qsort(v, n, sizeof(double), cmp_double);
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    double t = pos - (double)lo;
    return lo + 1 < n ? v[lo] * (1 - t) + v[lo + 1] * t : v[lo];
}

/* The roofline time of an entry from its features: the log2 roofline in
 * us, plus the per-node floor; NaN without a calibration. */
static double entry_roofline_ms(const opsched_predictor *p, const os_entry *e, int f_roof)
{
    if (f_roof < 0 || !isfinite(e->f[f_roof])) return NAN;
    double floor_us = isfinite(p->fdev.node_floor_us) && p->fdev.node_floor_us > 0
                          ? p->fdev.node_floor_us
                          : 0;
    return (exp2((double)e->f[f_roof]) + floor_us) * 1e-3;
}

/* Calibrates the roofline on the measured rows (opsched_predictor_info):
 * per family, the median log ratio of measured to roofline time and the
 * 80th percentile of the rows' relative error around it; over all rows,
 * the median, and the error of predicting each family's rows from the
 * median of the other families' rows. */
static opsched_status calibrate_roofline(opsched_predictor *p)
{
    opsched_predictor_info *in = &p->info;
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++)
        in->roofline_scale[f] = in->roofline_error[f] = NAN;
    in->roofline_scale_all = in->roofline_error_unseen = NAN;
    int f_roof = -1;
    for (int i = 0; i < OPSCHED_FEATURE_COUNT && f_roof < 0; i++)
        if (strcmp(opsched_feature_name(i), "log2_roofline_us") == 0) f_roof = i;
    size_t n = p->n_entries;
    double *lr = malloc(sizeof(double) * (n + 1)), *tmp = malloc(sizeof(double) * (n + 1));
    int *fam = malloc(sizeof(int) * (n + 1));
    if (!lr || !tmp || !fam) {
        free(lr);
        free(tmp);
        free(fam);
        return OS_NOMEM(p->ctx);
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const os_entry *e = &p->entries[i];
        double r = entry_roofline_ms(p, e, f_roof);
        if (!(r > 0) || !(e->ms > 0)) continue;
        lr[m] = log(e->ms / r);
        fam[m++] = (int)e->family;
    }
    double med[OPSCHED_FAMILY_COUNT];
    int rows[OPSCHED_FAMILY_COUNT] = {0};
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) {
        size_t k = 0;
        for (size_t i = 0; i < m; i++)
            if (fam[i] == f) tmp[k++] = lr[i];
        rows[f] = (int)k;
        med[f] = quantile(tmp, k, 0.5);
        if (k < OPSCHED_ROOFLINE_MIN_ROWS) continue;
        in->roofline_scale[f] = exp(med[f]);
        size_t j = 0;
        for (size_t i = 0; i < m; i++)
            if (fam[i] == f) tmp[j++] = fabs(exp(lr[i] - med[f]) - 1);
        in->roofline_error[f] = quantile(tmp, j, 0.8);
    }
    if (m >= OPSCHED_ROOFLINE_MIN_ROWS) {
        memcpy(tmp, lr, sizeof(double) * m);
        in->roofline_scale_all = exp(quantile(tmp, m, 0.5));
        /* each family's rows from the median of the others' */
        size_t j = 0;
        int families = 0;
        for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) {
            if (rows[f] < OPSCHED_ROOFLINE_MIN_ROWS || m - (size_t)rows[f] < OPSCHED_ROOFLINE_MIN_ROWS)
                continue;
            size_t k = 0;
            double *others = malloc(sizeof(double) * m);
            if (!others) break;
            for (size_t i = 0; i < m; i++)
                if (fam[i] != f) others[k++] = lr[i];
            double mo = quantile(others, k, 0.5);
            free(others);
            for (size_t i = 0; i < m; i++)
                if (fam[i] == f) tmp[j++] = fabs(exp(lr[i] - mo) - 1);
            families++;
        }
        in->roofline_error_unseen = families >= 2 ? quantile(tmp, j, 0.8) : OPSCHED_ROOFLINE_ERROR;
    }
    free(lr);
    free(tmp);
    free(fam);
    os_log(p->ctx, OPSCHED_LOG_INFO,
           "roofline calibration: conv x%.3g (+-%.0f%%), conv+relu x%.3g (+-%.0f%%), gemm x%.3g "
           "(+-%.0f%%), other x%.3g (+-%.0f%%); a family without rows x%.3g (+-%.0f%%)",
           in->roofline_scale[OPSCHED_FAMILY_CONV], 100 * in->roofline_error[OPSCHED_FAMILY_CONV],
           in->roofline_scale[OPSCHED_FAMILY_CONV_RELU],
           100 * in->roofline_error[OPSCHED_FAMILY_CONV_RELU],
           in->roofline_scale[OPSCHED_FAMILY_GEMM], 100 * in->roofline_error[OPSCHED_FAMILY_GEMM],
           in->roofline_scale[OPSCHED_FAMILY_OTHER], 100 * in->roofline_error[OPSCHED_FAMILY_OTHER],
           in->roofline_scale_all, 100 * in->roofline_error_unseen);
    return OPSCHED_OK;
}

static opsched_status load_entries(opsched_predictor *p, const opsched_exclusion *x)
{
    opsched_dataset_query q = {.device_id = p->info.device.id, .math = p->math,
                               .layout = p->layout, .algo_policy = p->algo_policy,
                               .cache = p->cache};
    /* The fingerprint covers the host rows too: the host model learns them. */
    opsched_dataset_query fq = q;
    fq.include_host = 1;
    OS_TRY(opsched_store_dataset_fingerprint(p->store, &fq, &p->info.fingerprint));
    load_state ls = {p, x};
    OS_TRY(opsched_store_dataset(p->store, &q, take_row, &ls));
    p->info.rows = (int64_t)p->n_entries;
    for (size_t i = 0; i < p->n_entries; i++) {
        const os_entry *e = &p->entries[i];
        p->info.energy_rows += e->energy_id > 0;
        int64_t c = os_map_get(&p->op_rows, e->op);
        OS_TRY(os_map_put(p->ctx, &p->op_rows, e->op, (c < 0 ? 0 : c) + 1));
    }
    return OPSCHED_OK;
}

/* Host enqueue times (";mode=host" rows, opsched profile), left out of the
 * device models' training (they are not device time) and learned by the
 * host model of their own (train.c).  A row is
 * measured per layer instance of a profiled network, and a configuration
 * shared by several networks (resnet50's layers all occur in resnet152) or
 * repeated in one has several rows that differ (median max/min 1.2 on the
 * H100); the host's speed itself drifts between runs and machines.  Kept
 * per configuration (signature and fusion): the median of all its rows;
 * per network that measured it (the row's model) the median of that
 * network's rows; and per network and run the median of the rows measured
 * with that run's network runs.  The lookup prefers the narrowest. */
enum { HOST_CFG, HOST_OWN, HOST_RUN, HOST_LEVELS };

typedef struct host_row {
    int64_t group[HOST_LEVELS]; /* index at each level, -1 when none */
    double ms;
    int64_t id;
    int family;
} host_row;

typedef struct host_load {
    opsched_predictor *p;
    const opsched_exclusion *x;
    host_row *rows;
    size_t n, cap;
} host_load;

/* The index of key in map (added, counting *n, when new). */
static opsched_status host_group(opsched_ctx *ctx, os_map *map, const char *key, size_t *n,
                                 int64_t *out)
{
    *out = os_map_get(map, key);
    if (*out >= 0) return OPSCHED_OK;
    OS_TRY(os_map_put(ctx, map, key, (int64_t)*n));
    *out = (int64_t)(*n)++;
    return OPSCHED_OK;
}

static void host_keys(const char *model, int64_t run_id, const char *key, char *own, size_t n_own,
                      char *run, size_t n_run)
{
    snprintf(own, n_own, "%s\x1f%s", model, key);
    snprintf(run, n_run, "%s\x1f%lld\x1f%s", model, (long long)run_id, key);
}

/* The features of host configuration i (new), what the host model learns
 * from; a configuration whose features cannot be had is kept for lookups
 * with family -1 (the host model leaves it out). */
static opsched_status host_features(opsched_predictor *p, const opsched_dataset_row *r,
                                    int family, int64_t i)
{
    OS_TRY(os_grow(p->ctx, (void **)&p->host_cfg, &p->cap_host_cfg, (size_t)i + 1,
                   sizeof(os_host_cfg)));
    os_host_cfg *c = &p->host_cfg[i];
    double f[OPSCHED_FEATURE_COUNT];
    if (opsched_features(p->ctx, &r->config, r->fused_relu, &p->fdev, f) != OPSCHED_OK) {
        os_log(p->ctx, OPSCHED_LOG_DEBUG, "host row %lld not learned from: %s",
               (long long)r->measurement_id, opsched_ctx_last_error(p->ctx));
        opsched_ctx_clear_error(p->ctx);
        c->family = -1;
        return OPSCHED_OK;
    }
    c->family = family;
    snprintf(c->op, sizeof(c->op), "%s%s", r->config.op, r->fused_relu ? "+relu" : "");
    c->flops = r->config.flops > 0 ? (double)r->config.flops : 0;
    for (int k = 0; k < OPSCHED_FEATURE_COUNT; k++) c->f[k] = (float)f[k];
    return OPSCHED_OK;
}

static opsched_status take_host_row(const opsched_dataset_row *r, void *user)
{
    host_load *hl = user;
    opsched_predictor *p = hl->p;
    if (!r->host || r->network) return OPSCHED_OK;
    if (hl->x && os_map_get(&hl->x->sigs, r->config.signature) >= 0) return OPSCHED_OK;
    /* Leave one model out: the model's own rows go too. */
    if (p->exclude_model_runs && r->model[0] && strcmp(r->model, p->exclude_model_runs) == 0)
        return OPSCHED_OK;
    if (!(r->median_ms > 0) || !isfinite(r->median_ms)) return OPSCHED_OK;
    char key[600], own_key[760], run_key[800];
    os_entry_key(r->config.signature, r->fused_relu, key, sizeof(key));
    host_row h = {{-1, -1, -1}, r->median_ms, r->measurement_id,
                  (int)opsched_op_family_of(r->config.op, r->fused_relu)};
    size_t known = p->n_host;
    OS_TRY(host_group(p->ctx, &p->host_index, key, &p->n_host, &h.group[HOST_CFG]));
    if (p->n_host > known) OS_TRY(host_features(p, r, h.family, h.group[HOST_CFG]));
    if (r->model[0]) {
        host_keys(r->model, r->run_id, key, own_key, sizeof(own_key), run_key, sizeof(run_key));
        OS_TRY(host_group(p->ctx, &p->host_own_index, own_key, &p->n_host_own, &h.group[HOST_OWN]));
        OS_TRY(host_group(p->ctx, &p->host_run_index, run_key, &p->n_host_run, &h.group[HOST_RUN]));
    }
    OS_TRY(os_grow(p->ctx, (void **)&hl->rows, &hl->cap, hl->n + 1, sizeof(host_row)));
    hl->rows[hl->n++] = h;
    return OPSCHED_OK;
}

static int host_level; /* the level cmp_host sorts by (qsort has no user pointer) */

static int cmp_host(const void *a, const void *b)
{
    const host_row *x = a, *y = b;
    int64_t gx = x->group[host_level], gy = y->group[host_level];
    if (gx != gy) return gx < gy ? -1 : 1;
    if (x->ms != y->ms) return x->ms < y->ms ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The median of each group of rows at a level (sorted by group, then ms)
 * into ms[group] and id[group]: the middle row's id, the lower middle's
 * for an even count (whose ms is the mean of the two middle rows). */
static void group_medians(host_row *rows, size_t n, int level, double *ms, int64_t *id)
{
    host_level = level;
    qsort(rows, n, sizeof(host_row), cmp_host);
    for (size_t i = 0; i < n;) {
        int64_t g = rows[i].group[level];
        size_t j = i;
        while (j < n && rows[j].group[level] == g) j++;
        if (g >= 0) {
            size_t k = j - i, mid = i + (k - 1) / 2;
            ms[g] = k % 2 ? rows[mid].ms : 0.5 * (rows[mid].ms + rows[mid + 1].ms);
            id[g] = rows[mid].id;
        }
        i = j;
    }
}

/* host_family_ms: per family, the median of its configurations' host
 * times (each configuration once, its median over its rows).  Robust
 * where a pooled mean over launches is not: vgg16's convolutions cost the
 * H100 host ~25 us each, resnet's ~7 us, and a network never measured is
 * better served by the typical configuration than by the launch-weighted
 * mean of the networks that were. */
static opsched_status host_family_medians(opsched_predictor *p, const host_row *rows, size_t n)
{
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) p->host_family_ms[f] = NAN;
    if (p->n_host == 0) return OPSCHED_OK;
    int *fam = malloc(sizeof(int) * p->n_host);
    double *v = malloc(sizeof(double) * p->n_host);
    if (!fam || !v) {
        free(fam);
        free(v);
        return OS_NOMEM(p->ctx);
    }
    for (size_t i = 0; i < n; i++) fam[rows[i].group[HOST_CFG]] = rows[i].family;
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) {
        size_t k = 0;
        for (size_t c = 0; c < p->n_host; c++)
            if (fam[c] == f) v[k++] = p->host_ms[c];
        if (k == 0) continue;
        opsched_stats st;
        opsched_status rc = opsched_stats_compute(v, (int)k, &st);
        if (rc != OPSCHED_OK) {
            free(fam);
            free(v);
            return rc;
        }
        p->host_family_ms[f] = st.median;
    }
    free(fam);
    free(v);
    return OPSCHED_OK;
}

static opsched_status load_host(opsched_predictor *p, const opsched_exclusion *x)
{
    opsched_status st = OPSCHED_OK;
    opsched_dataset_query q = {.device_id = p->info.device.id, .math = p->math,
                               .layout = p->layout, .algo_policy = p->algo_policy,
                               .cache = p->cache, .include_host = 1};
    host_load hl = {.p = p, .x = x};
    OS_TRY_GOTO(st, opsched_store_dataset(p->store, &q, take_host_row, &hl), done);
    double **ms[HOST_LEVELS] = {&p->host_ms, &p->host_own_ms, &p->host_run_ms};
    int64_t **id[HOST_LEVELS] = {&p->host_id, &p->host_own_id, &p->host_run_id};
    size_t n[HOST_LEVELS] = {p->n_host, p->n_host_own, p->n_host_run};
    for (int k = 0; k < HOST_LEVELS; k++) {
        *ms[k] = malloc(sizeof(double) * (n[k] ? n[k] : 1));
        *id[k] = malloc(sizeof(int64_t) * (n[k] ? n[k] : 1));
        if (!*ms[k] || !*id[k]) {
            st = OS_NOMEM(p->ctx);
            goto done;
        }
        if (hl.n) group_medians(hl.rows, hl.n, k, *ms[k], *id[k]);
    }
    p->info.host_rows = (int64_t)p->n_host;
    OS_TRY_GOTO(st, host_family_medians(p, hl.rows, hl.n), done);
done:
    free(hl.rows);
    return st;
}

int os_predict_host_lookup(const opsched_predictor *p, const char *model, int64_t run_id,
                           const char *signature, int fused_relu, double *ms,
                           int64_t *measurement_id)
{
    if (p->n_host == 0) return 0;
    char key[600], own_key[760], run_key[800];
    os_entry_key(signature, fused_relu, key, sizeof(key));
    if (model && *model) {
        host_keys(model, run_id, key, own_key, sizeof(own_key), run_key, sizeof(run_key));
        int64_t i = run_id > 0 ? os_map_get(&p->host_run_index, run_key) : -1;
        if (i >= 0) {
            *ms = p->host_run_ms[i];
            *measurement_id = p->host_run_id[i];
            return OPSCHED_HOST_ROWS_RUN;
        }
        i = os_map_get(&p->host_own_index, own_key);
        if (i >= 0) {
            *ms = p->host_own_ms[i];
            *measurement_id = p->host_own_id[i];
            return OPSCHED_HOST_ROWS_MODEL;
        }
    }
    int64_t idx = os_map_get(&p->host_index, key);
    if (idx < 0) return 0;
    *ms = p->host_ms[idx];
    *measurement_id = p->host_id[idx];
    return OPSCHED_HOST_ROWS_CONFIG;
}

/* ---- open ------------------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The file-name part of models trained with something left out: the
 * exclusion's configurations, and the host rows of exclude_model_runs's
 * runs (the host model learns without them). */
static void make_tag(opsched_predictor *p, const opsched_exclusion *x)
{
    p->tag[0] = '\0';
    const char *runs = p->exclude_model_runs;
    if (!x && !runs) return;
    const char *label = x ? x->name : runs;
    uint64_t hash = x ? x->hash : 0;
    if (runs) hash = hash * 1099511628211ull ^ os_hash64(runs);
    char name[48];
    size_t n = 0;
    for (const char *c = label; *c && n + 1 < sizeof(name) && n < 40; c++)
        name[n++] = (isalnum((unsigned char)*c) || *c == '_' || *c == '-' || *c == '.') ? *c : '_';
    name[n] = '\0';
    snprintf(p->tag, sizeof(p->tag), "%s-%016llx", name, (unsigned long long)hash);
    p->excl_hash = hash;
    p->excl_count = x ? (int64_t)x->sigs.count : 0;
}

static opsched_status train_and_save(opsched_predictor *p, const char *reason)
{
    os_log(p->ctx, OPSCHED_LOG_INFO, "training the models of %s:%s (%s %s %s %s): %s",
           p->info.device.backend, p->info.device.name, p->math, p->layout, p->algo_policy,
           p->cache, reason);
    double t0 = now_s();
    OS_TRY(os_predict_train(p));
    p->info.train_seconds = now_s() - t0;
    p->info.trained = 1;
    snprintf(p->info.train_reason, sizeof(p->info.train_reason), "%s", reason);
    if (os_predict_save(p) != OPSCHED_OK) {
        os_log(p->ctx, OPSCHED_LOG_WARN, "models kept in memory only: %s",
               opsched_ctx_last_error(p->ctx));
        opsched_ctx_clear_error(p->ctx);
    }
    return OPSCHED_OK;
}

opsched_status opsched_predictor_open(opsched_ctx *ctx, const char *db_path,
                                      const opsched_predictor_options *opts,
                                      opsched_predictor **out)
{
    opsched_status st = OPSCHED_OK;
    opsched_predictor_options def;
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_predictor_open: out is NULL");
    *out = NULL;
    if (!opts) {
        opsched_predictor_options_default(&def);
        opts = &def;
    }
    OS_TRY(check_options(ctx, opts));
    struct stat sb;
    if (!db_path || stat(db_path, &sb) != 0)
        return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND, "database %s does not exist",
                       db_path ? db_path : "(null)");
    opsched_predictor *p = calloc(1, sizeof(*p));
    if (!p) return OS_NOMEM(ctx);
    p->ctx = ctx;
    p->o = *opts;
    p->power_model = p->host_model = -1;
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) p->family_model[f] = -1;
    const char *policy = opts->algo_policy && *opts->algo_policy ? opts->algo_policy : "heuristic";
    OS_TRY_GOTO(st, os_strdup(ctx, db_path, &p->db_path), fail);
    OS_TRY_GOTO(st, os_strdup(ctx, policy, &p->algo_policy), fail);
    OS_TRY_GOTO(st, os_strdup(ctx, opts->device, &p->device_name), fail);
    OS_TRY_GOTO(st, os_strdup(ctx, opts->exclude_model_runs, &p->exclude_model_runs), fail);
    p->o.device = p->device_name;
    p->o.algo_policy = p->algo_policy;
    p->o.exclude_model_runs = p->exclude_model_runs;
    p->o.exclude = NULL; /* borrowed for this call only */
    p->o.models_dir = NULL;
    if (opts->models_dir && *opts->models_dir) {
        OS_TRY_GOTO(st, os_strdup(ctx, opts->models_dir, &p->models_dir), fail);
    } else {
        size_t n = strlen(db_path) + 8;
        p->models_dir = malloc(n);
        if (!p->models_dir) {
            st = OS_NOMEM(ctx);
            goto fail;
        }
        snprintf(p->models_dir, n, "%s.models", db_path);
    }
    snprintf(p->math, sizeof(p->math), "%s", opsched_math_name(opts->math));
    snprintf(p->layout, sizeof(p->layout), "%s",
             opts->layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw");
    snprintf(p->cache, sizeof(p->cache), "%s", opsched_cache_name(opts->cache));
    opsched_predictor_info *in = &p->info;
    snprintf(in->math, sizeof(in->math), "%s", p->math);
    snprintf(in->layout, sizeof(in->layout), "%s", p->layout);
    snprintf(in->algo_policy, sizeof(in->algo_policy), "%s", p->algo_policy);
    snprintf(in->cache, sizeof(in->cache), "%s", p->cache);
    snprintf(in->models_dir, sizeof(in->models_dir), "%s", p->models_dir);

    OS_TRY_GOTO(st, opsched_store_open(ctx, db_path, OPSCHED_STORE_READ_ONLY, &p->store), fail);
    OS_TRY_GOTO(st, opsched_store_find_device(p->store, opts->device, &in->device), fail);
    int found = 0;
    OS_TRY_GOTO(st,
                opsched_store_calibration_get(p->store, in->device.id, p->math, &in->calibration,
                                              &found),
                fail);
    in->has_calibration = found;
    p->fdev.sm_count = in->device.sm_count;
    p->fdev.peak_flops = found ? in->calibration.peak_flops : NAN;
    p->fdev.bandwidth = found ? in->calibration.bandwidth : NAN;
    p->fdev.node_floor_us = found ? in->calibration.graph_node_us : NAN;
    make_tag(p, opts->exclude);
    os_predict_paths(p, in->metadata_file, sizeof(in->metadata_file), NULL, 0);
    OS_TRY_GOTO(st, load_entries(p, opts->exclude), fail);
    OS_TRY_GOTO(st, calibrate_roofline(p), fail);
    OS_TRY_GOTO(st, load_host(p, opts->exclude), fail);

    char reason[96] = "asked to retrain";
    int current = 0;
    if (!opts->retrain) OS_TRY_GOTO(st, os_predict_load(p, &current, reason, sizeof(reason)), fail);
    if (!current) {
        if (opts->train || opts->retrain) {
            OS_TRY_GOTO(st, train_and_save(p, reason), fail);
        } else {
            os_log(ctx, OPSCHED_LOG_WARN, "no current learned models (%s): learned predictions off",
                   reason);
        }
    }
    *out = p;
    return OPSCHED_OK;
fail:
    opsched_predictor_free(p);
    return st;
}

void opsched_predictor_free(opsched_predictor *p)
{
    if (!p) return;
    for (int i = 0; i < p->n_models; i++) os_xgb_free(p->models[i].booster);
    for (size_t i = 0; i < p->n_entries; i++) free(p->entries[i].key);
    free(p->entries);
    os_map_free(&p->index);
    os_map_free(&p->op_rows);
    os_map_free(&p->host_index);
    os_map_free(&p->host_own_index);
    os_map_free(&p->host_run_index);
    free(p->host_ms);
    free(p->host_id);
    free(p->host_cfg);
    free(p->host_own_ms);
    free(p->host_own_id);
    free(p->host_run_ms);
    free(p->host_run_id);
    opsched_store_close(p->store);
    free(p->db_path);
    free(p->device_name);
    free(p->algo_policy);
    free(p->models_dir);
    free(p->exclude_model_runs);
    free(p);
}

opsched_status opsched_predictor_info_get(const opsched_predictor *p, opsched_predictor_info *out)
{
    if (!p || !out) return OPSCHED_ERR_INVALID_ARG;
    *out = p->info;
    return OPSCHED_OK;
}

int opsched_predictor_num_models(const opsched_predictor *p)
{
    return p ? p->n_models : 0;
}

const opsched_model_info *opsched_predictor_model(const opsched_predictor *p, int i)
{
    return p && i >= 0 && i < p->n_models ? &p->models[i].info : NULL;
}

/* ---- operators ------------------------------------------------------------------------ */

static void pred_none(opsched_op_prediction *o, opsched_op_family family)
{
    memset(o, 0, sizeof(*o));
    o->source = o->energy_source = OPSCHED_SOURCE_NONE;
    o->ms = o->error = o->energy_j = o->energy_error = NAN;
    o->family = family;
}

static double roofline_ms(const opsched_predictor *p, const opsched_config_record *rec)
{
    const opsched_feature_device *d = &p->fdev;
    if (!(d->peak_flops > 0) || !(d->bandwidth > 0) || rec->bytes < 0) return NAN;
    double flops = rec->flops > 0 ? (double)rec->flops : 0;
    double s = fmax(flops / d->peak_flops, (double)rec->bytes / d->bandwidth);
    double floor_us = isfinite(d->node_floor_us) && d->node_floor_us > 0 ? d->node_floor_us : 0;
    return s * 1e3 + floor_us * 1e-3;
}

/* Whether the learned models may answer for this operator kind (op as
 * "conv2d" or "conv2d+relu"): its model must have seen enough rows of it,
 * fused or not when both share the model. */
static int learned_covers(const opsched_predictor *p, const char *op, opsched_op_family family)
{
    int mi = p->family_model[family];
    if (mi < 0 || !p->models[mi].booster) return 0;
    char base[48], fused[48];
    size_t n = strlen(op);
    if (n > 5 && strcmp(op + n - 5, "+relu") == 0) n -= 5;
    snprintf(base, sizeof(base), "%.*s", (int)n, op);
    snprintf(fused, sizeof(fused), "%.*s+relu", (int)n, op);
    int64_t a = os_map_get(&p->op_rows, base), b = os_map_get(&p->op_rows, fused);
    int64_t rows = (a > 0 ? a : 0);
    if (p->models[mi].families & (1u << OPSCHED_FAMILY_CONV_RELU) &&
        p->models[mi].families & (1u << OPSCHED_FAMILY_CONV))
        rows += b > 0 ? b : 0;
    else if (strcmp(op, base) != 0)
        rows = b > 0 ? b : 0;
    return rows >= OS_OP_MIN_ROWS;
}

/* Predicts n configurations; learned ones in one call per family. */
opsched_status os_predict_many(opsched_predictor *p, const opsched_config_record *recs,
                               const int *fused, int n, opsched_op_prediction *out,
                               float *features)
{
    opsched_status st = OPSCHED_OK;
    float *x = malloc(sizeof(float) * OPSCHED_FEATURE_COUNT * (size_t)(n > 0 ? n : 1));
    double *y = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    int *idx = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    unsigned char *want_power = calloc((size_t)(n > 0 ? n : 1), 1);
    if (!x || !y || !idx || !want_power) {
        st = OS_NOMEM(p->ctx);
        goto done;
    }
    float *owned = NULL, *feat = features;
    if (!feat)
        feat = owned = malloc(sizeof(float) * OPSCHED_FEATURE_COUNT * (size_t)(n > 0 ? n : 1));
    if (!feat) {
        st = OS_NOMEM(p->ctx);
        goto done;
    }
    char key[600], op[48];
    for (int i = 0; i < n; i++) {
        const opsched_config_record *r = &recs[i];
        opsched_op_family fam = opsched_op_family_of(r->op, fused[i]);
        pred_none(&out[i], fam);
        double f[OPSCHED_FEATURE_COUNT];
        /* A signature the features cannot read leaves the exact lookup and
         * the roofline; it is not a failure of the whole prediction. */
        int feat_ok = opsched_features(p->ctx, r, fused[i], &p->fdev, f) == OPSCHED_OK;
        if (!feat_ok) {
            os_log(p->ctx, OPSCHED_LOG_DEBUG, "no features: %s", opsched_ctx_last_error(p->ctx));
            opsched_ctx_clear_error(p->ctx);
            for (int k = 0; k < OPSCHED_FEATURE_COUNT; k++) f[k] = NAN;
        }
        for (int k = 0; k < OPSCHED_FEATURE_COUNT; k++)
            feat[(size_t)i * OPSCHED_FEATURE_COUNT + k] = (float)f[k];
        os_entry_key(r->signature, fused[i], key, sizeof(key));
        int64_t e = os_map_get(&p->index, key);
        snprintf(op, sizeof(op), "%s%s", r->op, fused[i] ? "+relu" : "");
        if (e >= 0) {
            const os_entry *en = &p->entries[e];
            out[i].source = OPSCHED_SOURCE_EXACT;
            out[i].ms = en->ms;
            out[i].error = isfinite(en->cv) ? en->cv : 0;
            out[i].measurement_id = en->measurement_id;
            if (en->energy_id > 0) {
                out[i].energy_source = OPSCHED_SOURCE_EXACT;
                out[i].energy_j = en->energy_j;
                out[i].energy_error = out[i].error;
            }
        } else if (feat_ok && learned_covers(p, op, fam)) {
            out[i].source = OPSCHED_SOURCE_LEARNED;
            const os_model *m = &p->models[p->family_model[fam]];
            out[i].error = m->info.cv.median_ape;
            snprintf(out[i].model, sizeof(out[i].model), "%s", m->info.name);
        } else {
            double ms = roofline_ms(p, r);
            if (isfinite(ms)) {
                /* calibrated by the family's rows, else by all rows */
                const opsched_predictor_info *in = &p->info;
                double scale = in->roofline_scale[fam], err = in->roofline_error[fam];
                if (!isfinite(scale)) {
                    scale = in->roofline_scale_all;
                    err = in->roofline_error_unseen;
                }
                if (!isfinite(scale) || !isfinite(err)) {
                    scale = 1;
                    err = OPSCHED_ROOFLINE_ERROR;
                }
                out[i].source = OPSCHED_SOURCE_ROOFLINE;
                out[i].ms = ms * scale;
                out[i].error = err;
            }
        }
        want_power[i] = feat_ok && out[i].source != OPSCHED_SOURCE_NONE &&
                        out[i].energy_source == OPSCHED_SOURCE_NONE;
    }
    for (int fam = 0; fam < OPSCHED_FAMILY_COUNT; fam++) {
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (out[i].source != OPSCHED_SOURCE_LEARNED || (int)out[i].family != fam) continue;
            memcpy(x + (size_t)m * OPSCHED_FEATURE_COUNT, feat + (size_t)i * OPSCHED_FEATURE_COUNT,
                   sizeof(float) * OPSCHED_FEATURE_COUNT);
            idx[m++] = i;
        }
        if (m == 0) continue;
        st = os_predict_learned(p, (opsched_op_family)fam, x, m, y);
        if (st != OPSCHED_OK) {
            free(owned);
            goto done;
        }
        for (int j = 0; j < m; j++) out[idx[j]].ms = y[j];
    }
    const os_model *pm = p->power_model >= 0 ? &p->models[p->power_model] : NULL;
    if (pm && pm->booster) {
        int m = 0;
        int *fams = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
        for (int i = 0; fams && i < n; i++) {
            if (!want_power[i] || !isfinite(out[i].ms)) continue;
            memcpy(x + (size_t)m * OPSCHED_FEATURE_COUNT, feat + (size_t)i * OPSCHED_FEATURE_COUNT,
                   sizeof(float) * OPSCHED_FEATURE_COUNT);
            fams[m] = (int)out[i].family;
            idx[m++] = i;
        }
        float *pw = malloc(sizeof(float) * (size_t)(m > 0 ? m : 1));
        if (!pw || !fams) st = OS_NOMEM(p->ctx);
        if (st == OPSCHED_OK && m > 0) st = os_model_predict(p, pm, fams, x, m, pw);
        free(fams);
        for (int j = 0; st == OPSCHED_OK && j < m; j++) {
            opsched_op_prediction *o = &out[idx[j]];
            o->energy_j = o->ms * 1e-3 * exp((double)pw[j]);
            switch (o->source) {
            case OPSCHED_SOURCE_EXACT:
                o->energy_source = OPSCHED_SOURCE_LEARNED;
                o->energy_error = p->power_only_ape;
                break;
            case OPSCHED_SOURCE_LEARNED:
                o->energy_source = OPSCHED_SOURCE_LEARNED;
                o->energy_error = p->power_energy_ape;
                break;
            default:
                o->energy_source = OPSCHED_SOURCE_ROOFLINE;
                o->energy_error = OPSCHED_ROOFLINE_ERROR;
                break;
            }
        }
        free(pw);
    }
    free(owned);
done:
    free(x);
    free(y);
    free(idx);
    free(want_power);
    return st;
}

opsched_status opsched_predict_config(opsched_predictor *p, const opsched_config_record *rec,
                                      int fused_relu, opsched_op_prediction *out)
{
    if (!p) return OPSCHED_ERR_INVALID_ARG;
    if (!rec || !out)
        return OS_FAIL(p->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_predict_config: NULL argument");
    int fused = fused_relu != 0;
    return os_predict_many(p, rec, &fused, 1, out, NULL);
}

opsched_status opsched_predict_node(opsched_predictor *p, const opsched_graph *g, int node,
                                    int fused_relu, opsched_op_prediction *out)
{
    if (!p) return OPSCHED_ERR_INVALID_ARG;
    if (!g || !out)
        return OS_FAIL(p->ctx, OPSCHED_ERR_INVALID_ARG, "opsched_predict_node: NULL argument");
    opsched_config_record rec;
    OS_TRY(opsched_config_record_from_node(g, node, &rec));
    return opsched_predict_config(p, &rec, fused_relu, out);
}
