/*
 * train.c - the learned models: operator families grouped until each
 * group has enough rows, one XGBoost regressor of log latency per group,
 * one of log effective power (energy per launch / latency) over every
 * family, k-fold cross-validation for the error estimates, and the
 * FLOPs-only log-log line per family as the baseline they are judged
 * against.
 *
 * Folds are assigned by a seeded shuffle of the distinct configurations
 * (one row per signature and fusion, its latest measurement), so repeated
 * measurements of one configuration never sit on both sides of a fold.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "predict/predict_impl.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of sorted v (linear interpolation). */
static double quantile(const double *v, int64_t n, double q)
{
    if (n <= 0) return NAN;
    double pos = q * (double)(n - 1);
    int64_t i = (int64_t)floor(pos);
    if (i + 1 >= n) return v[n - 1];
    double t = pos - (double)i;
    return v[i] * (1 - t) + v[i + 1] * t;
}

void os_cv_summarize(const double *ape, int64_t n, opsched_cv_error *out)
{
    memset(out, 0, sizeof(*out));
    out->median_ape = out->p90_ape = out->max_ape = out->within10 = NAN;
    double *v = n > 0 ? malloc(sizeof(double) * (size_t)n) : NULL;
    if (!v) return;
    int64_t m = 0, within = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(ape[i])) continue;
        v[m++] = ape[i];
        within += ape[i] <= 0.10;
    }
    if (m > 0) {
        qsort(v, (size_t)m, sizeof(double), cmp_double);
        out->n = m;
        out->median_ape = quantile(v, m, 0.5);
        out->p90_ape = quantile(v, m, 0.9);
        out->max_ape = v[m - 1];
        out->within10 = (double)within / (double)m;
    }
    free(v);
}

/* ---- folds ---------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* fold[i] in 0..k-1: a seeded permutation dealt round robin. */
static void assign_folds(int *fold, int64_t n, int k)
{
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!perm) { /* plain round robin: still a valid split */
        for (int64_t i = 0; i < n; i++) fold[i] = (int)(i % k);
        return;
    }
    uint64_t s = OS_CV_SEED;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(splitmix(&s) % (uint64_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int64_t i = 0; i < n; i++) fold[perm[i]] = (int)(i % k);
    free(perm);
}

/* ---- baseline: log ms = a + b log flops, per family --------------------------- */

static double log_flops(double flops)
{
    return log(flops > 1 ? flops : 1);
}

/* Least squares over rows i with use[i]; a flat line when x does not vary. */
static int fit_line(const double *x, const double *y, const unsigned char *use, int64_t n,
                    double *a, double *b)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!use[i]) continue;
        sx += x[i];
        sy += y[i];
        sxx += x[i] * x[i];
        sxy += x[i] * y[i];
        m++;
    }
    if (m == 0) return 0;
    double den = (double)m * sxx - sx * sx;
    if (m < 2 || fabs(den) < 1e-12 * (1 + sxx * (double)m)) {
        *b = 0;
        *a = sy / (double)m;
    } else {
        *b = ((double)m * sxy - sx * sy) / den;
        *a = (sy - *b * sx) / (double)m;
    }
    return 1;
}

/* ---- the base the trees start from ------------------------------------------------ */

static void base_terms(const float *f, double z[OS_BASE_TERMS])
{
    double flops = isfinite(f[OS_F_FLOPS]) && f[OS_F_FLOPS] > 0 ? f[OS_F_FLOPS] : 0;
    double bytes = isfinite(f[OS_F_BYTES]) && f[OS_F_BYTES] > 0 ? f[OS_F_BYTES] : 0;
    z[0] = 1;
    z[1] = log(flops + 1);
    z[2] = log(bytes + 1);
}

/* Ridge least squares of y on the base terms over rows with use[i] (a
 * little ridge keeps collinear terms, FLOPs proportional to bytes, from
 * blowing up).  0 when no row is used. */
static int fit_beta(const float *x, const float *y, const unsigned char *use, int64_t n,
                    double beta[OS_BASE_TERMS])
{
    double a[OS_BASE_TERMS][OS_BASE_TERMS + 1];
    memset(a, 0, sizeof(a));
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!use[i]) continue;
        double z[OS_BASE_TERMS];
        base_terms(x + (size_t)i * OPSCHED_FEATURE_COUNT, z);
        for (int r = 0; r < OS_BASE_TERMS; r++) {
            for (int c = 0; c < OS_BASE_TERMS; c++) a[r][c] += z[r] * z[c];
            a[r][OS_BASE_TERMS] += z[r] * y[i];
        }
        m++;
    }
    if (m == 0) return 0;
    double tr = 0;
    for (int r = 0; r < OS_BASE_TERMS; r++) tr += a[r][r];
    for (int r = 1; r < OS_BASE_TERMS; r++) a[r][r] += 1e-6 * tr + 1e-9; /* not the intercept */
    for (int c = 0; c < OS_BASE_TERMS; c++) { /* Gaussian elimination, partial pivoting */
        int piv = c;
        for (int r = c + 1; r < OS_BASE_TERMS; r++)
            if (fabs(a[r][c]) > fabs(a[piv][c])) piv = r;
        if (fabs(a[piv][c]) < 1e-300) return 0;
        for (int k = 0; k <= OS_BASE_TERMS; k++) {
            double t = a[c][k];
            a[c][k] = a[piv][k];
            a[piv][k] = t;
        }
        for (int r = 0; r < OS_BASE_TERMS; r++) {
            if (r == c) continue;
            double f = a[r][c] / a[c][c];
            for (int k = c; k <= OS_BASE_TERMS; k++) a[r][k] -= f * a[c][k];
        }
    }
    for (int r = 0; r < OS_BASE_TERMS; r++) beta[r] = a[r][OS_BASE_TERMS] / a[r][r];
    return 1;
}

/* The base of each family from the rows with use[i] (row i of family
 * fam[i]): its own fit with at least 2 * OS_BASE_TERMS rows, else the
 * fit over all used rows. */
/* The trees-alone variant starts every row at the mean target of the rows
 * with use[i] (XGBoost's own starting score is ignored once margins are
 * given). */
static void fit_constant(const float *y, const unsigned char *use, int64_t n,
                         double beta[OPSCHED_FAMILY_COUNT][OS_BASE_TERMS])
{
    double sum = 0;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (use[i]) {
            sum += y[i];
            m++;
        }
    memset(beta, 0, sizeof(double) * OPSCHED_FAMILY_COUNT * OS_BASE_TERMS);
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) beta[f][0] = m ? sum / (double)m : 0;
}

static void fit_bases(const float *x, const float *y, const int *fam, const unsigned char *use,
                      int64_t n, double beta[OPSCHED_FAMILY_COUNT][OS_BASE_TERMS])
{
    double all[OS_BASE_TERMS] = {0, 0, 0};
    unsigned char *u = malloc((size_t)(n > 0 ? n : 1));
    if (!fit_beta(x, y, use, n, all)) memset(all, 0, sizeof(all));
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) {
        int64_t rows = 0;
        for (int64_t i = 0; u && i < n; i++) {
            u[i] = use[i] && fam[i] == f;
            rows += u[i];
        }
        if (!u || rows < 2 * OS_BASE_TERMS || !fit_beta(x, y, u, n, beta[f]))
            memcpy(beta[f], all, sizeof(all));
    }
    free(u);
}

const char *os_variant_name(os_variant v)
{
    return v == OS_VARIANT_BASE ? "base" : v == OS_VARIANT_ROOFLINE ? "roofline" : "trees";
}

/* ln of the roofline time in ms of a feature row (FLOPs, bytes), with the
 * per-node floor; NaN without a calibration. */
static double ln_roofline_ms(const opsched_feature_device *d, const float *f)
{
    if (!(d->peak_flops > 0) || !(d->bandwidth > 0)) return NAN;
    double flops = isfinite(f[OS_F_FLOPS]) && f[OS_F_FLOPS] > 0 ? f[OS_F_FLOPS] : 0;
    double bytes = isfinite(f[OS_F_BYTES]) && f[OS_F_BYTES] > 0 ? f[OS_F_BYTES] : 0;
    double floor_us = isfinite(d->node_floor_us) && d->node_floor_us > 0 ? d->node_floor_us : 1;
    return log(fmax(flops / d->peak_flops, bytes / d->bandwidth) * 1e3 + floor_us * 1e-3);
}

/* Each row's starting point under a variant (beta: OPSCHED_FAMILY_COUNT
 * rows of OS_BASE_TERMS: the fitted lines of OS_VARIANT_BASE, the mean
 * target alone for OS_VARIANT_TREES). */
static void margins(const opsched_predictor *p, os_variant v, const float *x, const int *fam,
                    int64_t n, const double *beta, float *out)
{
    for (int64_t i = 0; i < n; i++) {
        const float *f = x + (size_t)i * OPSCHED_FEATURE_COUNT;
        double val = 0;
        if (v == OS_VARIANT_ROOFLINE) {
            val = ln_roofline_ms(&p->fdev, f);
        } else {
            double z[OS_BASE_TERMS];
            base_terms(f, z);
            int g = fam[i] >= 0 && fam[i] < OPSCHED_FAMILY_COUNT ? fam[i] : OPSCHED_FAMILY_OTHER;
            for (int k = 0; k < OS_BASE_TERMS; k++) val += beta[g * OS_BASE_TERMS + k] * z[k];
        }
        out[i] = (float)(isfinite(val) ? val : 0);
    }
}

/* ---- one model: rows, CV, final fit ---------------------------------------------- */

typedef struct train_set {
    int64_t n;
    int64_t *entry;        /* index into p->entries (p->host_cfg for the host model) */
    int *fam;              /* each row's family */
    const char **op;       /* each row's operator ("conv2d+relu"), borrowed */
    double *flops;         /* each row's FLOPs (the baseline's one variable) */
    float *x;              /* n x features */
    float *y;              /* target */
    float *margin;         /* the base, per row */
} train_set;

static void set_free(train_set *t)
{
    free(t->entry);
    free(t->fam);
    free(t->op);
    free(t->flops);
    free(t->x);
    free(t->y);
    free(t->margin);
    memset(t, 0, sizeof(*t));
}

static opsched_status set_alloc(opsched_ctx *ctx, train_set *t, int64_t n)
{
    memset(t, 0, sizeof(*t));
    size_t m = (size_t)(n > 0 ? n : 1);
    t->entry = malloc(sizeof(int64_t) * m);
    t->fam = malloc(sizeof(int) * m);
    t->op = malloc(sizeof(*t->op) * m);
    t->flops = malloc(sizeof(double) * m);
    t->x = malloc(sizeof(float) * m * OPSCHED_FEATURE_COUNT);
    t->y = malloc(sizeof(float) * m);
    t->margin = malloc(sizeof(float) * m);
    if (!t->entry || !t->fam || !t->op || !t->flops || !t->x || !t->y || !t->margin) {
        set_free(t);
        return OS_NOMEM(ctx);
    }
    return OPSCHED_OK;
}

static void set_add(train_set *t, int64_t e, int fam, const char *op, double flops,
                    const float *f, double y)
{
    t->entry[t->n] = e;
    t->fam[t->n] = fam;
    t->op[t->n] = op;
    t->flops[t->n] = flops;
    memcpy(t->x + (size_t)t->n * OPSCHED_FEATURE_COUNT, f, sizeof(float) * OPSCHED_FEATURE_COUNT);
    t->y[t->n] = (float)y;
    t->n++;
}

/* Threads: as asked; by default one below OS_XGB_PARALLEL_ROWS rows,
 * where XGBoost's threads cost more than they give (and spin for long on a
 * busy machine), all above. */
static os_xgb_params xgb_params(const opsched_predictor *p, int64_t rows)
{
    int threads = p->o.threads > 0 ? p->o.threads : rows < OS_XGB_PARALLEL_ROWS ? 1 : 0;
    os_xgb_params prm = {.rounds = p->o.rounds, .max_depth = p->o.max_depth,
                         .threads = threads, .eta = p->o.eta, .seed = OS_CV_SEED};
    return prm;
}

/* Out-of-fold predictions of the target of every row of t into oof (NaN
 * for rows whose training side was empty); each fold fits its own bases. */
static opsched_status cross_validate(opsched_predictor *p, const train_set *t, int k,
                                     const int *fold, os_variant variant, double *oof)
{
    opsched_status st = OPSCHED_OK;
    train_set tr, te;
    float *pred = NULL;
    unsigned char *use = NULL;
    void *b = NULL;
    double beta[OPSCHED_FAMILY_COUNT][OS_BASE_TERMS];
    os_xgb_params prm = xgb_params(p, t->n);
    OS_TRY(set_alloc(p->ctx, &tr, t->n));
    OS_TRY_GOTO(st, set_alloc(p->ctx, &te, t->n), done);
    pred = malloc(sizeof(float) * (size_t)(t->n > 0 ? t->n : 1));
    use = malloc((size_t)(t->n > 0 ? t->n : 1));
    if (!pred || !use) {
        st = OS_NOMEM(p->ctx);
        goto done;
    }
    for (int64_t i = 0; i < t->n; i++) oof[i] = NAN;
    for (int f = 0; f < k; f++) {
        tr.n = te.n = 0;
        for (int64_t i = 0; i < t->n; i++) {
            const float *x = t->x + (size_t)i * OPSCHED_FEATURE_COUNT;
            set_add(fold[i] == f ? &te : &tr, i, t->fam[i], t->op[i], t->flops[i], x, t->y[i]);
        }
        if (tr.n == 0 || te.n == 0) continue;
        for (int64_t i = 0; i < tr.n; i++) use[i] = 1;
        memset(beta, 0, sizeof(beta));
        if (variant == OS_VARIANT_BASE)
            fit_bases(tr.x, tr.y, tr.fam, use, tr.n, beta);
        else if (variant == OS_VARIANT_TREES)
            fit_constant(tr.y, use, tr.n, beta);
        margins(p, variant, tr.x, tr.fam, tr.n, &beta[0][0], tr.margin);
        margins(p, variant, te.x, te.fam, te.n, &beta[0][0], te.margin);
        OS_TRY_GOTO(st, os_xgb_train(p->ctx, tr.x, tr.margin, tr.y, tr.n, &prm, &b), done);
        OS_TRY_GOTO(st, os_xgb_predict(p->ctx, b, te.x, te.margin, te.n, pred), done);
        for (int64_t j = 0; j < te.n; j++) oof[te.entry[j]] = pred[j];
        os_xgb_free(b);
        b = NULL;
    }
done:
    os_xgb_free(b);
    free(pred);
    free(use);
    set_free(&tr);
    set_free(&te);
    return st;
}

/* The final fit of m on every row of t: its variant's base, then the
 * trees. */
static opsched_status fit_final(opsched_predictor *p, os_model *m, train_set *t)
{
    unsigned char *use = malloc((size_t)(t->n > 0 ? t->n : 1));
    if (!use) return OS_NOMEM(p->ctx);
    for (int64_t i = 0; i < t->n; i++) use[i] = 1;
    memset(m->beta, 0, sizeof(m->beta));
    if (m->variant == OS_VARIANT_BASE)
        fit_bases(t->x, t->y, t->fam, use, t->n, m->beta);
    else if (m->variant == OS_VARIANT_TREES)
        fit_constant(t->y, use, t->n, m->beta);
    free(use);
    margins(p, m->variant, t->x, t->fam, t->n, &m->beta[0][0], t->margin);
    os_xgb_params prm = xgb_params(p, t->n);
    OS_TRY(os_xgb_train(p->ctx, t->x, t->margin, t->y, t->n, &prm, &m->booster));
    m->info.trained = 1;
    return OPSCHED_OK;
}

opsched_status os_model_predict(opsched_predictor *p, const os_model *m, const int *fam,
                                const float *x, int64_t n, float *out)
{
    if (n < 1) return OPSCHED_OK;
    float *margin = malloc(sizeof(float) * (size_t)n);
    if (!margin) return OS_NOMEM(p->ctx);
    margins(p, m->variant, x, fam, n, &m->beta[0][0], margin);
    opsched_status st = os_xgb_predict(p->ctx, m->booster, x, margin, n, out);
    free(margin);
    return st;
}

/* The FLOPs-only line of each family, out of fold (oof of log ms), and
 * fitted on all rows into m->base_a/b. */
static opsched_status baseline(opsched_predictor *p, os_model *m, const train_set *t, int k,
                               const int *fold, double *oof)
{
    int64_t n = t->n;
    double *x = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double *y = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    unsigned char *use = malloc((size_t)(n > 0 ? n : 1));
    if (!x || !y || !use) {
        free(x);
        free(y);
        free(use);
        return OS_NOMEM(p->ctx);
    }
    for (int64_t i = 0; i < n; i++) {
        x[i] = log_flops(t->flops[i]);
        y[i] = t->y[i];
        oof[i] = NAN;
    }
    for (int fam = 0; fam < OPSCHED_FAMILY_COUNT; fam++) {
        if (!(m->families & (1u << fam))) continue;
        for (int f = 0; f < k; f++) {
            double a = 0, b = 0;
            for (int64_t i = 0; i < n; i++)
                use[i] = fold[i] != f && t->fam[i] == fam;
            int ok = fit_line(x, y, use, n, &a, &b);
            if (!ok) { /* no row of this family outside the fold: the group's line */
                for (int64_t i = 0; i < n; i++) use[i] = fold[i] != f;
                ok = fit_line(x, y, use, n, &a, &b);
            }
            if (!ok) continue;
            for (int64_t i = 0; i < n; i++)
                if (fold[i] == f && t->fam[i] == fam)
                    oof[i] = a + b * x[i];
        }
        for (int64_t i = 0; i < n; i++) use[i] = t->fam[i] == fam;
        m->base_a[fam] = m->base_b[fam] = NAN;
        fit_line(x, y, use, n, &m->base_a[fam], &m->base_b[fam]);
    }
    free(x);
    free(y);
    free(use);
    return OPSCHED_OK;
}

/* APE of exp(pred) against exp(target). */
static void ape_of(const train_set *t, const double *pred_log, double *ape)
{
    for (int64_t i = 0; i < t->n; i++) {
        double actual = exp((double)t->y[i]);
        ape[i] = isfinite(pred_log[i]) ? fabs(exp(pred_log[i]) - actual) / actual : NAN;
    }
}

static void model_name(unsigned families, char *buf, size_t size)
{
    if (families == (1u << OPSCHED_FAMILY_COUNT) - 1) {
        snprintf(buf, size, "all");
        return;
    }
    buf[0] = '\0';
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) {
        if (!(families & (1u << f))) continue;
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s%s", used ? "," : "", opsched_op_family_name(f));
    }
}

/* "conv2d:120,conv2d+relu:40" over the rows of t. */
static void ops_text(const train_set *t, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int64_t i = 0; i < t->n; i++) {
        const char *op = t->op[i];
        int seen = 0;
        for (int64_t j = 0; j < i && !seen; j++) seen = strcmp(t->op[j], op) == 0;
        if (seen) continue;
        int64_t count = 0;
        for (int64_t j = i; j < t->n; j++) count += strcmp(t->op[j], op) == 0;
        size_t used = strlen(buf);
        if (used + strlen(op) + 24 >= size) break;
        snprintf(buf + used, size - used, "%s%s:%lld", used ? "," : "", op, (long long)count);
    }
}

/* Cross-validates the variants (trees alone; on the fitted base; for
 * latency with a calibration, on the roofline) and keeps the one with the
 * lowest median APE, except that a variant anchored in physics within
 * OS_VARIANT_PREFERENCE of it wins (roofline before base before trees):
 * trees alone fit staircases closely but cannot go beyond the measured
 * range, and random folds do not test that.  oof gets the chosen
 * variant's out-of-fold log predictions. */
static opsched_status choose_variant(opsched_predictor *p, os_model *m, const train_set *t, int k,
                                     const int *fold, int latency, double *oof)
{
    int64_t n = t->n;
    size_t bytes = sizeof(double) * (size_t)(n > 0 ? n : 1);
    double *cand[3] = {malloc(bytes), malloc(bytes), malloc(bytes)};
    double *ape = malloc(bytes);
    opsched_status st = cand[0] && cand[1] && cand[2] && ape ? OPSCHED_OK : OS_NOMEM(p->ctx);
    double median[3] = {NAN, NAN, NAN};
    int tried[3] = {1, 1, latency && p->fdev.peak_flops > 0 && p->fdev.bandwidth > 0};
    for (int v = 0; st == OPSCHED_OK && v < 3; v++) {
        if (!tried[v]) continue;
        st = cross_validate(p, t, k, fold, (os_variant)v, cand[v]);
        if (st != OPSCHED_OK) break;
        opsched_cv_error e;
        ape_of(t, cand[v], ape);
        os_cv_summarize(ape, n, &e);
        median[v] = e.median_ape;
    }
    if (st == OPSCHED_OK) {
        int best = 0;
        for (int v = 1; v < 3; v++)
            if (tried[v] && median[v] < median[best]) best = v;
        int pick = best;
        for (int v = 2; v >= 1; v--)
            if (tried[v] && v > pick && median[v] <= median[best] * OS_VARIANT_PREFERENCE) {
                pick = v;
                break;
            }
        m->variant = (os_variant)pick;
        memcpy(oof, cand[pick], bytes);
        os_log(p->ctx, OPSCHED_LOG_INFO,
               "%s: cv median %.1f%% trees alone, %.1f%% on the fitted base, %.1f%% on the "
               "roofline: %s",
               m->info.name, 100 * median[0], 100 * median[1], 100 * median[2],
               os_variant_name(m->variant));
    }
    for (int v = 0; v < 3; v++) free(cand[v]);
    free(ape);
    return st;
}

/* Trains the latency model of group m over the rows in t (log ms; the
 * roofline variant is tried when roofline is 1: device time, not host
 * time).  oof_ms gets the out-of-fold latency of each row's entry. */
static opsched_status train_latency(opsched_predictor *p, os_model *m, train_set *t, int roofline,
                                    double *oof_ms)
{
    opsched_status st = OPSCHED_OK;
    int64_t n = t->n;
    int k = (int)OS_MIN((int64_t)p->o.folds, n);
    int *fold = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    double *oof = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double *ape = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!fold || !oof || !ape) {
        st = OS_NOMEM(p->ctx);
        goto done;
    }
    m->info.rows = n;
    m->info.folds = k;
    ops_text(t, m->info.ops, sizeof(m->info.ops));
    if (n < OS_MODEL_MIN_ROWS || k < 2) goto done; /* too few: its families fall back */
    assign_folds(fold, n, k);
    OS_TRY_GOTO(st, choose_variant(p, m, t, k, fold, roofline, oof), done);
    for (int64_t i = 0; i < n; i++) oof_ms[t->entry[i]] = isfinite(oof[i]) ? exp(oof[i]) : NAN;
    ape_of(t, oof, ape);
    os_cv_summarize(ape, n, &m->info.cv);
    OS_TRY_GOTO(st, baseline(p, m, t, k, fold, oof), done);
    ape_of(t, oof, ape);
    os_cv_summarize(ape, n, &m->info.baseline);
    OS_TRY_GOTO(st, fit_final(p, m, t), done);
done:
    free(fold);
    free(oof);
    free(ape);
    return st;
}

/* The power model: log(energy / latency) over every family.  Its info.cv
 * is the error of energy predicted from out-of-fold latency and power (an
 * unmeasured configuration); info.baseline the same with the fold's median
 * power instead of the model; power_only_ape the error with the measured
 * latency. */
static opsched_status train_power(opsched_predictor *p, os_model *m, const double *oof_ms)
{
    opsched_status st = OPSCHED_OK;
    train_set t;
    int64_t n = 0;
    for (size_t i = 0; i < p->n_entries; i++) {
        const os_entry *e = &p->entries[i];
        n += e->energy_id > 0 && e->energy_j > 0 && e->ms > 0;
    }
    OS_TRY(set_alloc(p->ctx, &t, n));
    int *fold = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    double *oof = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double *ape = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double *ape_base = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double *pw = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!fold || !oof || !ape || !ape_base || !pw) {
        st = OS_NOMEM(p->ctx);
        goto done;
    }
    for (size_t i = 0; i < p->n_entries; i++) {
        const os_entry *e = &p->entries[i];
        if (e->energy_id > 0 && e->energy_j > 0 && e->ms > 0)
            set_add(&t, (int64_t)i, (int)e->family, e->op, e->flops, e->f,
                    log(e->energy_j / (e->ms * 1e-3)));
    }
    snprintf(m->info.name, sizeof(m->info.name), "power");
    m->families = 0;
    m->info.rows = n;
    ops_text(&t, m->info.ops, sizeof(m->info.ops));
    int k = (int)OS_MIN((int64_t)p->o.folds, n);
    m->info.folds = k;
    if (n < OS_MODEL_MIN_ROWS || k < 2) goto done;
    assign_folds(fold, n, k);
    OS_TRY_GOTO(st, choose_variant(p, m, &t, k, fold, 0, oof), done);
    /* The baseline's power: the median of the training side of each fold. */
    for (int f = 0; f < k; f++) {
        int64_t c = 0;
        for (int64_t i = 0; i < n; i++)
            if (fold[i] != f) pw[c++] = t.y[i];
        qsort(pw, (size_t)c, sizeof(double), cmp_double);
        double med = quantile(pw, c, 0.5);
        for (int64_t i = 0; i < n; i++)
            if (fold[i] == f) ape_base[i] = med; /* log power, turned into an APE below */
    }
    int64_t only_n = 0;
    for (int64_t i = 0; i < n; i++) {
        const os_entry *e = &p->entries[t.entry[i]];
        double lat = oof_ms[t.entry[i]];
        double e_only = e->ms * 1e-3 * exp(oof[i]);
        pw[only_n++] = fabs(e_only - e->energy_j) / e->energy_j;
        ape[i] = isfinite(lat) && isfinite(oof[i])
                     ? fabs(lat * 1e-3 * exp(oof[i]) - e->energy_j) / e->energy_j
                     : NAN;
        ape_base[i] = isfinite(lat) ? fabs(lat * 1e-3 * exp(ape_base[i]) - e->energy_j) / e->energy_j
                                    : NAN;
    }
    os_cv_summarize(ape, n, &m->info.cv);
    os_cv_summarize(ape_base, n, &m->info.baseline);
    opsched_cv_error only;
    os_cv_summarize(pw, only_n, &only);
    p->power_only_ape = only.median_ape;
    p->power_energy_ape = m->info.cv.median_ape;
    OS_TRY_GOTO(st, fit_final(p, m, &t), done);
done:
    free(fold);
    free(oof);
    free(ape);
    free(ape_base);
    free(pw);
    set_free(&t);
    return st;
}

/* The host model: the log of a configuration's host enqueue time (the
 * median of its ";mode=host" rows) from its features, one model over
 * every family (the operator and fused_relu features tell them apart).
 * What a launch costs the host is the library's path to the kernel, not
 * the kernel: for a convolution it is the engine cuDNN's heuristic picks
 * (about 10 us for the H100's 1x1 engines, 25-45 us for engines that split
 * the reduction or transform the input), which follows from the shape, so
 * it carries over to networks whose configurations were never profiled,
 * where one median per family cannot (vgg16's convolutions cost 37 us,
 * squeezenet1_1's 13 us). */
static opsched_status train_host(opsched_predictor *p, os_model *m)
{
    opsched_status st = OPSCHED_OK;
    train_set t;
    int64_t n = 0;
    for (size_t i = 0; i < p->n_host; i++)
        n += p->host_cfg[i].family >= 0 && p->host_ms[i] > 0;
    snprintf(m->info.name, sizeof(m->info.name), "host");
    m->info.rows = n;
    if (n == 0) return OPSCHED_OK;
    OS_TRY(set_alloc(p->ctx, &t, n));
    double *oof_ms = malloc(sizeof(double) * p->n_host);
    if (!oof_ms) {
        set_free(&t);
        return OS_NOMEM(p->ctx);
    }
    for (size_t i = 0; i < p->n_host; i++) {
        const os_host_cfg *c = &p->host_cfg[i];
        if (c->family < 0 || !(p->host_ms[i] > 0)) continue;
        m->families |= 1u << c->family;
        set_add(&t, (int64_t)i, c->family, c->op, c->flops, c->f, log(p->host_ms[i]));
    }
    os_log(p->ctx, OPSCHED_LOG_INFO, "training host: %lld rows, %d-fold cross-validation",
           (long long)n, p->o.folds);
    st = train_latency(p, m, &t, 0, oof_ms);
    free(oof_ms);
    set_free(&t);
    return st;
}

static void free_models(opsched_predictor *p)
{
    for (int i = 0; i < p->n_models; i++) {
        os_xgb_free(p->models[i].booster);
        p->models[i].booster = NULL;
    }
    p->n_models = 0;
    p->power_model = p->host_model = -1;
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) p->family_model[f] = -1;
}

/* Groups families.  Convolutions with and without a fused Relu always
 * share a model (the fused_relu feature tells them apart): fusing changes
 * the epilogue, not the main loop, and a network's fused layers are
 * learned from every convolution measured, fused or not.  Then the
 * smallest group short of OS_FAMILY_MIN_ROWS joins the largest other one,
 * until none is short or one is left. */
static void group_families(const int64_t *rows, int *group)
{
    int64_t size[OPSCHED_FAMILY_COUNT];
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) {
        group[f] = f;
        size[f] = rows[f];
    }
    group[OPSCHED_FAMILY_CONV_RELU] = OPSCHED_FAMILY_CONV;
    size[OPSCHED_FAMILY_CONV] += size[OPSCHED_FAMILY_CONV_RELU];
    size[OPSCHED_FAMILY_CONV_RELU] = 0;
    for (;;) {
        int small = -1, big = -1, groups = 0;
        for (int g = 0; g < OPSCHED_FAMILY_COUNT; g++) {
            if (size[g] == 0) continue;
            groups++;
            if (size[g] < OS_FAMILY_MIN_ROWS && (small < 0 || size[g] < size[small])) small = g;
        }
        if (small < 0 || groups < 2) break;
        for (int g = 0; g < OPSCHED_FAMILY_COUNT; g++)
            if (g != small && size[g] > 0 && (big < 0 || size[g] > size[big])) big = g;
        for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++)
            if (group[f] == small) group[f] = big;
        size[big] += size[small];
        size[small] = 0;
    }
}

opsched_status os_predict_train(opsched_predictor *p)
{
    opsched_status st = OPSCHED_OK;
    double *oof_ms = NULL;
    train_set t = {0};
    free_models(p);
    int64_t rows[OPSCHED_FAMILY_COUNT] = {0};
    for (size_t i = 0; i < p->n_entries; i++)
        if (p->entries[i].ms > 0) rows[p->entries[i].family]++;
    int group[OPSCHED_FAMILY_COUNT];
    group_families(rows, group);
    oof_ms = malloc(sizeof(double) * (p->n_entries ? p->n_entries : 1));
    if (!oof_ms) return OS_NOMEM(p->ctx);
    for (size_t i = 0; i < p->n_entries; i++) oof_ms[i] = NAN;
    for (int g = 0; g < OPSCHED_FAMILY_COUNT; g++) {
        unsigned fams = 0;
        int64_t n = 0;
        for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++)
            if (group[f] == g && rows[f] > 0) {
                fams |= 1u << f;
                n += rows[f];
            }
        if (!fams) continue;
        os_model *m = &p->models[p->n_models];
        memset(m, 0, sizeof(*m));
        m->families = fams;
        model_name(fams, m->info.name, sizeof(m->info.name));
        OS_TRY_GOTO(st, set_alloc(p->ctx, &t, n), done);
        for (size_t i = 0; i < p->n_entries; i++) {
            const os_entry *e = &p->entries[i];
            if (e->ms > 0 && (fams & (1u << e->family)))
                set_add(&t, (int64_t)i, (int)e->family, e->op, e->flops, e->f, log(e->ms));
        }
        os_log(p->ctx, OPSCHED_LOG_INFO, "training %s: %lld rows, %d-fold cross-validation",
               m->info.name, (long long)n, p->o.folds);
        OS_TRY_GOTO(st, train_latency(p, m, &t, 1, oof_ms), done);
        set_free(&t);
        for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++)
            if (fams & (1u << f)) p->family_model[f] = p->n_models;
        p->n_models++;
    }
    os_model *pm = &p->models[p->n_models];
    memset(pm, 0, sizeof(*pm));
    p->power_only_ape = p->power_energy_ape = NAN;
    OS_TRY_GOTO(st, train_power(p, pm, oof_ms), done);
    if (pm->info.rows > 0) p->power_model = p->n_models++;
    os_model *hm = &p->models[p->n_models];
    memset(hm, 0, sizeof(*hm));
    OS_TRY_GOTO(st, train_host(p, hm), done);
    if (hm->info.rows > 0) p->host_model = p->n_models++;
done:
    set_free(&t);
    free(oof_ms);
    if (st != OPSCHED_OK) free_models(p);
    return st;
}

opsched_status os_predict_learned(opsched_predictor *p, opsched_op_family family, const float *x,
                                  int64_t n, double *out_ms)
{
    for (int64_t i = 0; i < n; i++) out_ms[i] = NAN;
    int mi = family >= 0 && family < OPSCHED_FAMILY_COUNT ? p->family_model[family] : -1;
    if (n < 1 || mi < 0 || !p->models[mi].booster) return OPSCHED_OK;
    float *y = malloc(sizeof(float) * (size_t)n);
    int *fam = malloc(sizeof(int) * (size_t)n);
    opsched_status st = y && fam ? OPSCHED_OK : OS_NOMEM(p->ctx);
    for (int64_t i = 0; st == OPSCHED_OK && i < n; i++) fam[i] = (int)family;
    if (st == OPSCHED_OK) st = os_model_predict(p, &p->models[mi], fam, x, n, y);
    if (st == OPSCHED_OK)
        for (int64_t i = 0; i < n; i++) out_ms[i] = exp((double)y[i]);
    free(y);
    free(fam);
    return st;
}

opsched_status os_predict_host_learned(opsched_predictor *p, const int *fam, const float *x,
                                       int64_t n, double *out_ms)
{
    for (int64_t i = 0; i < n; i++) out_ms[i] = NAN;
    int mi = p->host_model;
    if (n < 1 || mi < 0 || !p->models[mi].booster) return OPSCHED_OK;
    float *y = malloc(sizeof(float) * (size_t)n);
    if (!y) return OS_NOMEM(p->ctx);
    opsched_status st = os_model_predict(p, &p->models[mi], fam, x, n, y);
    if (st == OPSCHED_OK)
        for (int64_t i = 0; i < n; i++) out_ms[i] = exp((double)y[i]);
    free(y);
    return st;
}
