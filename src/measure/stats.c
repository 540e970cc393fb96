/*
 * stats.c - latency statistics: order statistics by linear interpolation
 * (numpy's default), sample standard deviation, the 3-sigma-trimmed mean
 * and the coefficient of variation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opsched/measure.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *sorted, int n, double q)
{
    double pos = q * (double)(n - 1);
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : lo;
    double frac = pos - (double)lo;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

opsched_status opsched_stats_compute(const double *samples, int n, opsched_stats *out)
{
    if (!samples || n < 1 || !out) return OPSCHED_ERR_INVALID_ARG;
    double *s = malloc(sizeof(double) * (size_t)n);
    if (!s) return OPSCHED_ERR_NOMEM;
    memcpy(s, samples, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    memset(out, 0, sizeof(*out));
    out->n = n;
    out->min = s[0];
    out->max = s[n - 1];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += s[i];
    out->mean = sum / n;
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (s[i] - out->mean) * (s[i] - out->mean);
    out->std = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
    out->median = quantile(s, n, 0.5);
    out->p90 = quantile(s, n, 0.90);
    out->p95 = quantile(s, n, 0.95);
    out->p99 = quantile(s, n, 0.99);
    double tsum = 0;
    int tn = 0;
    for (int i = 0; i < n; i++) {
        if (fabs(s[i] - out->mean) <= 3.0 * out->std) {
            tsum += s[i];
            tn++;
        }
    }
    out->trimmed_mean = tn ? tsum / tn : out->mean;
    out->cv = out->mean > 0 ? out->std / out->mean : 0.0;
    if (n < 6) {
        out->median_lo = s[0];
        out->median_hi = s[n - 1];
    } else {
        double half = 0.98 * sqrt((double)n);
        int lo = (int)floor((double)n / 2.0 - half), hi = (int)ceil((double)n / 2.0 + half) - 1;
        out->median_lo = s[lo < 0 ? 0 : lo];
        out->median_hi = s[hi > n - 1 ? n - 1 : hi];
    }
    free(s);
    return OPSCHED_OK;
}

double opsched_stats_median_ci(const opsched_stats *s)
{
    if (!s || !(s->median > 0)) return 0.0;
    return (s->median_hi - s->median_lo) / (2.0 * s->median);
}

const char *opsched_cache_name(opsched_cache_state c) { return c == OPSCHED_CACHE_COLD ? "cold" : "hot"; }

const char *opsched_unstable_message(int64_t n, char *buf, size_t size)
{
    if (!buf || size == 0) return buf;
    snprintf(buf, size,
             "%lld result(s) have a coefficient of variation above %.1f%%: the device may be "
             "shared or throttling",
             (long long)n, 100 * OPSCHED_CV_WARN);
    return buf;
}
