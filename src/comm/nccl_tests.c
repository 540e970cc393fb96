/*
 * nccl_tests.c - reads what nccl-tests (all_reduce_perf, all_gather_perf,
 * ...) prints, so that collectives measured on a cluster opsched never ran
 * on (several nodes, a published run) go into the same store as commbench's
 * and are fitted and compared the same way.
 *
 * A size line holds, after size, count and type (and the reduction and
 * root where the version prints them), the out-of-place time, algbw,
 * busbw and #wrong, then the same four in place.  They are read from the
 * end of the line, which every version agrees on.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "opsched/comm.h"

#define MAX_TOKENS 32

void opsched_nccl_tests_log_free(opsched_nccl_tests_log *l)
{
    if (!l) return;
    free(l->results);
    l->results = NULL;
    l->n_results = 0;
}

/* The line after mpirun's "[1,0]<stdout>:" or srun's "0: " label. */
static char *strip_prefix(char *line)
{
    char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '[') {
        char *e = strstr(p, "]<stdout>:");
        if (e) return e + 10;
    }
    char *d = p;
    while (isdigit((unsigned char)*d))
        d++;
    if (d > p && d[0] == ':' && (d[1] == ' ' || d[1] == '\t')) return d + 1;
    return line;
}

static int to_double(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *end || errno) return 0;
    *out = x;
    return 1;
}

static int to_int64(const char *s, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (end == s || *end || errno) return 0;
    *out = x;
    return 1;
}

static int dtype_of(const char *t, opsched_dtype *d)
{
    if (strcmp(t, "float") == 0 || strcmp(t, "f32") == 0)
        *d = OPSCHED_F32;
    else if (strcmp(t, "half") == 0 || strcmp(t, "f16") == 0)
        *d = OPSCHED_F16;
    else if (strcmp(t, "bfloat16") == 0 || strcmp(t, "bf16") == 0)
        *d = OPSCHED_BF16;
    else
        return 0;
    return 1;
}

/* "all_reduce_perf" -> allreduce; -1 when unknown. */
static int collective_of_test(const char *name)
{
    static const struct {
        const char *test;
        opsched_collective c;
    } tests[] = {{"all_reduce", OPSCHED_ALLREDUCE},
                 {"all_gather", OPSCHED_ALLGATHER},
                 {"reduce_scatter", OPSCHED_REDUCESCATTER},
                 {"broadcast", OPSCHED_BROADCAST},
                 {"alltoall", OPSCHED_ALLTOALL},
                 {"sendrecv", OPSCHED_SENDRECV}};
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
        if (strncmp(name, tests[i].test, strlen(tests[i].test)) == 0) return (int)tests[i].c;
    return -1;
}

static void header_line(const char *p, opsched_nccl_tests_log *out)
{
    const char *k;
    if ((k = strstr(p, "Collective test starting:"))) {
        k += strlen("Collective test starting:");
        while (*k == ' ')
            k++;
        out->collective = collective_of_test(k);
    }
    /* "warmup iters: 5 iters: 100 agg iters: 1": the plain one. */
    for (k = strstr(p, "iters:"); k; k = strstr(k + 6, "iters:")) {
        const char *w = k;
        while (w > p && w[-1] == ' ')
            w--;
        if ((w - p >= 6 && strncmp(w - 6, "warmup", 6) == 0) ||
            (w - p >= 3 && strncmp(w - 3, "agg", 3) == 0))
            continue;
        if (atoi(k + 6) > 0) out->iters = atoi(k + 6);
    }
    if ((k = strstr(p, "Rank")) && strstr(p, "device")) {
        int r = atoi(k + 4);
        if (r + 1 > out->ranks) out->ranks = r + 1;
        if (r == 0) { /* "device  0 [0x53] NVIDIA H100 80GB HBM3" */
            const char *d = strstr(p, "device");
            const char *b = d ? strchr(d, ']') : NULL;
            if (b) {
                b++;
                while (*b == ' ')
                    b++;
                snprintf(out->gpu, sizeof(out->gpu), "%s", b);
                size_t n = strlen(out->gpu);
                while (n && isspace((unsigned char)out->gpu[n - 1]))
                    out->gpu[--n] = 0;
            }
        }
    }
}

opsched_status opsched_nccl_tests_parse(opsched_ctx *ctx, FILE *f, const char *name,
                                        opsched_nccl_tests_log *out)
{
    memset(out, 0, sizeof(*out));
    out->collective = -1;
    char line[4096];
    int lineno = 0, cap = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        char *p = strip_prefix(line);
        const char *v = strstr(p, "NCCL version ");
        if (v && !out->nccl_version[0]) {
            v += strlen("NCCL version ");
            size_t n = strcspn(v, "+ \t\r\n");
            snprintf(out->nccl_version, sizeof(out->nccl_version), "%.*s", (int)(n < 15 ? n : 15),
                     v);
        }
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#') {
            header_line(p, out);
            continue;
        }
        char *tok[MAX_TOKENS];
        int nt = 0;
        for (char *t = strtok(p, " \t\r\n"); t && nt < MAX_TOKENS; t = strtok(NULL, " \t\r\n"))
            tok[nt++] = t;
        int64_t size = 0, count = 0;
        if (nt < 11 || !to_int64(tok[0], &size) || !to_int64(tok[1], &count)) continue;
        opsched_dtype dt;
        if (!dtype_of(tok[2], &dt)) {
            out->skipped++;
            continue;
        }
        double t_us, algbw, busbw, wrong = 0;
        const char *w = tok[nt - 5];
        if (!to_double(tok[nt - 8], &t_us) || !to_double(tok[nt - 7], &algbw) ||
            !to_double(tok[nt - 6], &busbw) || (strcmp(w, "N/A") != 0 && !to_double(w, &wrong)) ||
            !(t_us > 0) || size < 0 || count < 0) {
            opsched_nccl_tests_log_free(out);
            return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                           "%s:%d: a size line without out-of-place time, algbw, busbw and "
                           "#wrong",
                           name, lineno);
        }
        if (out->n_results == cap) {
            int nc = cap ? 2 * cap : 64;
            opsched_collective_result *nr = realloc(out->results, (size_t)nc * sizeof(*nr));
            if (!nr) {
                opsched_nccl_tests_log_free(out);
                return OS_NOMEM(ctx);
            }
            out->results = nr;
            cap = nc;
        }
        opsched_collective_result *r = &out->results[out->n_results++];
        memset(r, 0, sizeof(*r));
        r->collective =
            out->collective >= 0 ? (opsched_collective)out->collective : OPSCHED_ALLREDUCE;
        r->dtype = dt;
        r->bytes = size;
        r->count = count;
        double ms = t_us * 1e-3;
        r->stats.n = 1;
        r->stats.min = r->stats.max = r->stats.mean = r->stats.median = ms;
        r->stats.p90 = r->stats.p95 = r->stats.p99 = r->stats.trimmed_mean = ms;
        r->stats.median_lo = r->stats.median_hi = ms;
        r->algbw_gbs = algbw;
        r->busbw_gbs = busbw;
        r->wrong = (int64_t)wrong;
    }
    if (ferror(f)) {
        opsched_nccl_tests_log_free(out);
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: read error", name);
    }
    if (out->n_results == 0)
        return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                       "%s: no size lines (size, count, type, ..., time, algbw, busbw, #wrong) "
                       "of float, half or bfloat16: not nccl-tests output?",
                       name);
    for (int i = 0; i < out->n_results; i++) {
        out->results[i].ranks = out->ranks;
        out->results[i].iters = out->iters;
        if (out->collective >= 0) out->results[i].collective = (opsched_collective)out->collective;
    }
    return OPSCHED_OK;
}
