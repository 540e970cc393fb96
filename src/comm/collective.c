/*
 * collective.c - what a collective moves, as nccl-tests counts it (sizes,
 * element counts, bus bandwidth), the values every measured result is
 * checked against, and the piecewise alpha + beta * bytes fits of the
 * measured times.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "opsched/comm.h"

static const char *const coll_names[OPSCHED_COLLECTIVE_COUNT] = {
    "allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "sendrecv",
};

const char *opsched_collective_name(opsched_collective c)
{
    return c >= 0 && c < OPSCHED_COLLECTIVE_COUNT ? coll_names[c] : "?";
}

opsched_status opsched_collective_parse(opsched_ctx *ctx, const char *name, opsched_collective *out)
{
    char word[32];
    size_t n = 0;
    for (const char *p = name ? name : ""; *p && n + 1 < sizeof(word); p++)
        if (*p != '_' && *p != '-') word[n++] = (char)tolower((unsigned char)*p);
    word[n] = '\0';
    for (int c = 0; c < OPSCHED_COLLECTIVE_COUNT; c++)
        if (strcmp(word, coll_names[c]) == 0) {
            *out = (opsched_collective)c;
            return OPSCHED_OK;
        }
    return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                   "unknown collective '%s' (allreduce, allgather, reducescatter, broadcast, "
                   "alltoall, sendrecv)",
                   name ? name : "");
}

double opsched_collective_busbw_factor(opsched_collective c, int ranks)
{
    double n = ranks > 0 ? ranks : 1;
    switch (c) {
    case OPSCHED_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case OPSCHED_ALLGATHER:
    case OPSCHED_REDUCESCATTER:
    case OPSCHED_ALLTOALL:
        return (n - 1) / n;
    case OPSCHED_BROADCAST:
    case OPSCHED_SENDRECV:
        return 1.0;
    default:
        return 0.0;
    }
}

/* Collectives whose buffer is split among the ranks. */
static int split(opsched_collective c)
{
    return c == OPSCHED_ALLGATHER || c == OPSCHED_REDUCESCATTER || c == OPSCHED_ALLTOALL;
}

int64_t opsched_collective_count(opsched_collective c, int64_t bytes, int elem_size, int ranks)
{
    if (bytes <= 0 || elem_size <= 0 || ranks <= 0) return 0;
    int64_t count = bytes / elem_size;
    if (split(c)) count = count / ranks * ranks;
    return count;
}

void opsched_collective_buffers(opsched_collective c, int64_t count, int elem_size, int ranks,
                                int64_t *send_bytes, int64_t *recv_bytes)
{
    int64_t all = count * elem_size, part = ranks > 0 ? all / ranks : all;
    *send_bytes = c == OPSCHED_ALLGATHER ? part : all;
    *recv_bytes = c == OPSCHED_REDUCESCATTER ? part : all;
}

double opsched_collective_input(int rank, int64_t i)
{
    return (double)(((int64_t)(rank + 1) * 3 + i) % 17) - 8.0;
}

double opsched_collective_expected(opsched_collective c, int64_t count, int ranks, int rank,
                                   int64_t i)
{
    int64_t part = ranks > 0 ? count / ranks : count;
    double sum = 0;
    switch (c) {
    case OPSCHED_ALLREDUCE:
        for (int r = 0; r < ranks; r++)
            sum += opsched_collective_input(r, i);
        return sum;
    case OPSCHED_ALLGATHER:
        return opsched_collective_input((int)(i / part), i % part);
    case OPSCHED_REDUCESCATTER:
        for (int r = 0; r < ranks; r++)
            sum += opsched_collective_input(r, rank * part + i);
        return sum;
    case OPSCHED_BROADCAST:
        return opsched_collective_input(0, i);
    case OPSCHED_ALLTOALL:
        return opsched_collective_input((int)(i / part), rank * part + i % part);
    case OPSCHED_SENDRECV:
        return opsched_collective_input((rank - 1 + ranks) % ranks, i);
    default:
        return NAN;
    }
}

/* ---- alpha-beta fits -------------------------------------------------- */

/* Least squares of the relative error over points [a, b): minimises
 * sum ((alpha + beta x - y) / y)^2 with alpha, beta >= 0. */
static void fit_piece(const double *x, const double *y, int a, int b, double *alpha, double *beta)
{
    double sw = 0, sx = 0, sxx = 0, sy = 0, sxy = 0;
    for (int i = a; i < b; i++) {
        double w = 1.0 / (y[i] * y[i]);
        sw += w;
        sx += w * x[i];
        sxx += w * x[i] * x[i];
        sy += w * y[i];
        sxy += w * x[i] * y[i];
    }
    double det = sw * sxx - sx * sx;
    double al = 0, be = 0;
    if (det > 0) {
        al = (sy * sxx - sx * sxy) / det;
        be = (sw * sxy - sx * sy) / det;
    }
    if (det <= 0 || be < 0) { /* flat: a constant */
        be = 0;
        al = sy / sw;
    } else if (al < 0) { /* through the origin */
        al = 0;
        be = sxx > 0 ? sxy / sxx : 0;
    }
    *alpha = al;
    *beta = be;
}

static double piece_sse(const double *x, const double *y, int a, int b)
{
    double al, be, sse = 0;
    fit_piece(x, y, a, b, &al, &be);
    for (int i = a; i < b; i++) {
        double r = (al + be * x[i] - y[i]) / y[i];
        sse += r * r;
    }
    return sse;
}

/* The best split of [0, n) into k pieces of at least min_n points, by
 * dynamic programming over the piece ends; ends[j] is piece j's end. */
static double best_split(const double *x, const double *y, int n, int k, int min_n, int *ends)
{
    enum { MAXN = 256 };
    static const double inf = INFINITY;
    double cost[OPSCHED_COMM_MAX_SEGMENTS + 1][MAXN + 1];
    int from[OPSCHED_COMM_MAX_SEGMENTS + 1][MAXN + 1];
    if (n > MAXN) return inf;
    for (int j = 0; j <= k; j++)
        for (int e = 0; e <= n; e++)
            cost[j][e] = inf;
    cost[0][0] = 0;
    for (int j = 1; j <= k; j++)
        for (int e = j * min_n; e <= n; e++)
            for (int s = (j - 1) * min_n; s + min_n <= e; s++) {
                if (!isfinite(cost[j - 1][s])) continue;
                double c = cost[j - 1][s] + piece_sse(x, y, s, e);
                if (c < cost[j][e]) {
                    cost[j][e] = c;
                    from[j][e] = s;
                }
            }
    if (!isfinite(cost[k][n])) return inf;
    for (int j = k, e = n; j >= 1; j--) {
        ends[j - 1] = e;
        e = from[j][e];
    }
    return cost[k][n];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void fill_fit(const double *x, const double *y, int n, int k, const int *ends,
                     opsched_comm_fit *f)
{
    double *all = malloc((size_t)n * sizeof(*all));
    memset(f, 0, sizeof(*f));
    f->n_segments = k;
    f->n = n;
    for (int j = 0, s = 0; j < k; s = ends[j], j++) {
        opsched_comm_segment *g = &f->seg[j];
        double al, be, rel[256];
        fit_piece(x, y, s, ends[j], &al, &be);
        g->lo_bytes = x[s];
        g->hi_bytes = x[ends[j] - 1];
        g->alpha_us = al;
        g->bw_gbs = be > 0 ? 1.0 / (be * 1e3) : INFINITY;
        g->n = ends[j] - s;
        for (int i = s; i < ends[j]; i++) {
            rel[i - s] = fabs(al + be * x[i] - y[i]) / y[i];
            if (all) all[i] = rel[i - s];
            if (rel[i - s] > g->max_rel_err) g->max_rel_err = rel[i - s];
        }
        qsort(rel, (size_t)g->n, sizeof(double), cmp_double);
        g->median_rel_err = g->n % 2 ? rel[g->n / 2] : 0.5 * (rel[g->n / 2 - 1] + rel[g->n / 2]);
        if (g->max_rel_err > f->max_rel_err) f->max_rel_err = g->max_rel_err;
    }
    if (all) {
        qsort(all, (size_t)n, sizeof(double), cmp_double);
        f->median_rel_err = n % 2 ? all[n / 2] : 0.5 * (all[n / 2 - 1] + all[n / 2]);
        free(all);
    }
}

opsched_status opsched_comm_fit_points(opsched_ctx *ctx, const double *bytes, const double *time_us,
                                       int n, int max_segments, opsched_comm_fit *out)
{
    const int min_n = 3;
    if (!bytes || !time_us || !out || n < 2 || n > 256)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "an alpha-beta fit needs 2 to 256 points (got %d)", n);
    for (int i = 0; i < n; i++) {
        if (!(time_us[i] > 0) || !isfinite(time_us[i]) || !(bytes[i] >= 0))
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "alpha-beta fit: point %d (%g bytes, %g us) is not a positive time", i,
                           bytes[i], time_us[i]);
        if (i > 0 && !(bytes[i] > bytes[i - 1]))
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "alpha-beta fit: sizes must ascend (point %d: %g after %g)", i, bytes[i],
                           bytes[i - 1]);
    }
    if (max_segments < 1) max_segments = 1;
    if (max_segments > OPSCHED_COMM_MAX_SEGMENTS) max_segments = OPSCHED_COMM_MAX_SEGMENTS;
    int ends[OPSCHED_COMM_MAX_SEGMENTS] = {n};
    fill_fit(bytes, time_us, n, 1, ends, out);
    for (int k = 2; k <= max_segments && k * min_n <= n; k++) {
        int e[OPSCHED_COMM_MAX_SEGMENTS];
        if (!isfinite(best_split(bytes, time_us, n, k, min_n, e))) break;
        opsched_comm_fit f;
        fill_fit(bytes, time_us, n, k, e, &f);
        /* A piece more only where it buys a real cut of the worst error. */
        if (!(f.max_rel_err < 0.8 * out->max_rel_err)) break;
        *out = f;
    }
    return OPSCHED_OK;
}

double opsched_comm_fit_eval(const opsched_comm_fit *f, double bytes)
{
    if (!f || f->n_segments < 1) return NAN;
    int j = 0;
    while (j + 1 < f->n_segments && bytes >= f->seg[j + 1].lo_bytes)
        j++;
    const opsched_comm_segment *g = &f->seg[j];
    return g->alpha_us + (isfinite(g->bw_gbs) ? bytes / (g->bw_gbs * 1e3) : 0.0);
}

const char *opsched_comm_segment_regime(const opsched_comm_fit *f, int i)
{
    if (!f || i < 0 || i >= f->n_segments) return "?";
    const opsched_comm_segment *g = &f->seg[i];
    double transfer = isfinite(g->bw_gbs) ? g->hi_bytes / (g->bw_gbs * 1e3) : 0.0;
    if (g->alpha_us >= transfer) return "latency-bound";
    return i == f->n_segments - 1 ? "bandwidth-bound" : "transition";
}

void opsched_commbench_options_init(opsched_commbench_options *o)
{
    memset(o, 0, sizeof(*o));
    o->min_bytes = 8;
    o->max_bytes = (int64_t)1 << 30;
    o->step_factor = 2;
    o->dtype = OPSCHED_F32;
    o->warmup = 5;
    o->iters = 20;
    o->samples = 10;
    o->timeout_s = 300;
}
