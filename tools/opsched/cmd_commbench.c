/*
 * cmd_commbench.c - `opsched commbench`: NCCL collectives measured across
 * the GPUs of this machine the way nccl-tests measures them, one process
 * per GPU started by opsched, into the database (resumable) and as CSV;
 * `opsched commbench --fit --db FILE`: the alpha + beta * bytes cost
 * models of what a database holds, per collective, dtype and rank count.
 */
#define _DEFAULT_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>

#include "args.h"

static const char commbench_usage[] =
    "usage: opsched commbench [--gpus N] [--ops LIST] [--min-bytes N] [--max-bytes N]\n"
    "                         [--dtype f32|f16|bf16] [--db FILE] [--csv FILE] [options]\n"
    "       opsched commbench --fit --db FILE [--device NAME] [--format table|csv|json]\n"
    "       opsched commbench --fit --db FILE --nodes M --inter-node-gbps B [--inter-node-us L]\n"
    "       opsched commbench --import LOG --db FILE [--nodes M] [--device NAME] [--gpus N] [--ops C]\n\n"
    "Measures NCCL collectives across this machine's GPUs as nccl-tests does: one\n"
    "process per GPU (started here, NCCL bootstrapped through ncclGetUniqueId),\n"
    "--warmup operations, then --samples samples of --iters operations between CUDA\n"
    "events; a size's time is the slowest rank's per sample, its median printed.\n"
    "algbw = size / time and busbw = algbw x 2(n-1)/n (all-reduce), (n-1)/n\n"
    "(all-gather, reduce-scatter, all-to-all) or 1 (broadcast, send/recv), as\n"
    "nccl-tests defines them.  Every result is checked element by element.\n"
    "With --db each size is stored as it completes; a run stopped (Ctrl-C) or killed\n"
    "resumes where it was when started again.  NCCL is loaded at run time\n"
    "(OPSCHED_NCCL_LIB names the file; default libnccl.so.2).\n\n"
    "--fit fits time = alpha + bytes / bandwidth in up to three pieces (the\n"
    "latency-bound sizes, the protocol switch, the bandwidth-bound sizes) to each\n"
    "collective, dtype and rank count the database holds, and prints the pieces with\n"
    "their error on the measured sizes.  With --nodes, it prints instead what each\n"
    "collective costs over M nodes of the database's GPUs (the two-level model:\n"
    "one node's fit, and a network of B Gbit/s per node and L us per hop between\n"
    "nodes; rings, and for all-reduce the faster of a ring and a tree) at the\n"
    "measured sizes.\n"
    "--import stores an nccl-tests log (all_reduce_perf and the others; a cluster's,\n"
    "or a published run) as measured collectives of --nodes nodes (1), the GPU,\n"
    "ranks and collective read from the log unless --device, --gpus or --ops say.\n";

enum {
    CB_GPUS,
    CB_OPS,
    CB_MIN,
    CB_MAX,
    CB_STEP,
    CB_DTYPE,
    CB_WARMUP,
    CB_ITERS,
    CB_SAMPLES,
    CB_TIMEOUT,
    CB_DB,
    CB_CSV,
    CB_FORCE,
    CB_FIT,
    CB_DEVICE,
    CB_SEGMENTS,
    CB_FORMAT,
    CB_NODES,
    CB_NET_GBPS,
    CB_NET_US,
    CB_IMPORT
};

static const tool_opt commbench_opts[] = {
    {"gpus", 0, "N", "ranks, one GPU each (GPU r runs rank r); default: every GPU", CB_GPUS},
    {"ops", 0, "LIST",
     "collectives, comma list: allreduce, allgather,\nreducescatter, broadcast, alltoall, "
     "sendrecv (all)",
     CB_OPS},
    {"min-bytes", 0, "N", "smallest size, bytes; K, M, G suffixes (8)", CB_MIN},
    {"max-bytes", 0, "N", "largest size (1G)", CB_MAX},
    {"step-factor", 0, "F", "each size F times the one before (2)", CB_STEP},
    {"dtype", 0, "T", "element type: f32, f16 or bf16 (f32)", CB_DTYPE},
    {"warmup", 0, "N", "operations before the samples (5)", CB_WARMUP},
    {"iters", 0, "N", "operations per timed sample (20)", CB_ITERS},
    {"samples", 0, "N", "timed samples per size (10, at most 100)", CB_SAMPLES},
    {"timeout-s", 0, "S", "stop when no rank has reported for S seconds (300)", CB_TIMEOUT},
    {"db", 0, "FILE", "store every size here as it completes (resumable)", CB_DB},
    {"csv", 0, "FILE", "write this run's results as CSV", CB_CSV},
    {"force", 0, NULL, "measure again what --db already holds", CB_FORCE},
    {"fit", 0, NULL, "fit alpha-beta cost models to --db's collectives", CB_FIT},
    {"device", 0, "NAME", "--fit: the GPU (name or uuid) of rank 0; default all", CB_DEVICE},
    {"segments", 0, "N", "--fit: at most N pieces per model (3)", CB_SEGMENTS},
    {"format", 0, "FMT", "--fit output: table, csv or json (table)", CB_FORMAT},
    {"nodes", 0, "M", "--fit: predict over M nodes of the measured GPUs", CB_NODES},
    {"inter-node-gbps", 0, "B", "--nodes: network per node, every NIC together, Gbit/s",
     CB_NET_GBPS},
    {"inter-node-us", 0, "L", "--nodes: latency per network hop, us (5)", CB_NET_US},
    {"import", 0, "LOG", "store an nccl-tests log in --db (with --import, --nodes\nis the log's)",
     CB_IMPORT},
    {NULL, 0, NULL, NULL, 0}};

typedef struct cb_args {
    opsched_commbench_options o;
    const char *db, *csv, *device, *format;
    int fit, segments;
    int measure_opts; /* options that only measuring takes */
    opsched_comm_network net; /* --nodes: nodes > 0 */
    int net_opts;
    const char *import; /* --import LOG */
} cb_args;

/* "64", "4K", "1M", "1G" (powers of 1024). */
static int parse_bytes(const char *v, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || !(x >= 0)) return 0;
    double mult = 1;
    if (*end == 'K' || *end == 'k')
        mult = 1024.0, end++;
    else if (*end == 'M' || *end == 'm')
        mult = 1024.0 * 1024, end++;
    else if (*end == 'G' || *end == 'g')
        mult = 1024.0 * 1024 * 1024, end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end) return 0;
    x *= mult;
    if (x < 1 || x > 9.0e18 || x != floor(x)) return 0;
    *out = (int64_t)x;
    return 1;
}

static int cb_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    cb_args *a = dest;
    int64_t n = 0;
    switch (o->id) {
    case CB_GPUS:
        if (strcmp(v, "all") == 0)
            a->o.ranks = 0;
        else if (!tool_parse_int(v, 1, 64, &n))
            return tool_usage_error(cmd, "--gpus %s: a count from 1 to 64, or all", v);
        else
            a->o.ranks = (int)n;
        a->measure_opts++;
        break;
    case CB_OPS: {
        a->o.collectives = 0;
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", v);
        for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
            opsched_collective c;
            opsched_ctx *scratch = NULL;
            if (opsched_ctx_create(&scratch) != OPSCHED_OK) return TOOL_EXIT_FAIL;
            opsched_status st = opsched_collective_parse(scratch, w, &c);
            if (st != OPSCHED_OK) {
                int rc = tool_usage_error(cmd, "--ops: %s", opsched_ctx_last_error(scratch));
                opsched_ctx_free(scratch);
                return rc;
            }
            opsched_ctx_free(scratch);
            a->o.collectives |= 1u << c;
        }
        if (!a->o.collectives) return tool_usage_error(cmd, "--ops: name at least one collective");
        a->measure_opts++;
        break;
    }
    case CB_MIN:
    case CB_MAX:
        if (!parse_bytes(v, &n))
            return tool_usage_error(cmd, "--%s %s: a size in bytes (64, 4K, 1M, 1G)", o->name, v);
        if (o->id == CB_MIN)
            a->o.min_bytes = n;
        else
            a->o.max_bytes = n;
        a->measure_opts++;
        break;
    case CB_STEP:
        if (!tool_parse_int(v, 2, 1 << 20, &n))
            return tool_usage_error(cmd, "--step-factor %s: a whole number of at least 2", v);
        a->o.step_factor = (int)n;
        a->measure_opts++;
        break;
    case CB_DTYPE:
        if (strcmp(v, "f32") == 0 || strcmp(v, "float32") == 0)
            a->o.dtype = OPSCHED_F32;
        else if (strcmp(v, "f16") == 0 || strcmp(v, "float16") == 0)
            a->o.dtype = OPSCHED_F16;
        else if (strcmp(v, "bf16") == 0 || strcmp(v, "bfloat16") == 0)
            a->o.dtype = OPSCHED_BF16;
        else
            return tool_usage_error(cmd, "--dtype %s: f32, f16 or bf16", v);
        a->measure_opts++;
        break;
    case CB_WARMUP:
    case CB_ITERS:
    case CB_SAMPLES:
    case CB_TIMEOUT: {
        int64_t lo = o->id == CB_WARMUP ? 0 : 1;
        int64_t hi = o->id == CB_SAMPLES ? 100 : 1000000;
        if (!tool_parse_int(v, lo, hi, &n))
            return tool_usage_error(cmd, "--%s %s: a whole number from %lld to %lld", o->name, v,
                                    (long long)lo, (long long)hi);
        if (o->id == CB_WARMUP)
            a->o.warmup = (int)n;
        else if (o->id == CB_ITERS)
            a->o.iters = (int)n;
        else if (o->id == CB_SAMPLES)
            a->o.samples = (int)n;
        else
            a->o.timeout_s = (int)n;
        a->measure_opts++;
        break;
    }
    case CB_DB:
        a->db = v;
        break;
    case CB_CSV:
        a->csv = v;
        a->measure_opts++;
        break;
    case CB_FORCE:
        a->o.force = 1;
        a->measure_opts++;
        break;
    case CB_FIT:
        a->fit = 1;
        break;
    case CB_DEVICE:
        a->device = v;
        break;
    case CB_SEGMENTS:
        if (!tool_parse_int(v, 1, OPSCHED_COMM_MAX_SEGMENTS, &n))
            return tool_usage_error(cmd, "--segments %s: 1 to %d", v, OPSCHED_COMM_MAX_SEGMENTS);
        a->segments = (int)n;
        break;
    case CB_FORMAT:
        a->format = v;
        break;
    case CB_IMPORT:
        a->import = v;
        break;
    case CB_NODES:
        if (!tool_parse_int(v, 1, 1 << 16, &n))
            return tool_usage_error(cmd, "--nodes %s: a count of at least 1", v);
        a->net.nodes = (int)n;
        break;
    case CB_NET_GBPS:
    case CB_NET_US: {
        char *end = NULL;
        double x = strtod(v, &end);
        if (end == v || *end || !isfinite(x) || !(o->id == CB_NET_US ? x >= 0 : x > 0))
            return tool_usage_error(cmd, "--%s %s: a %s number", o->name, v,
                                    o->id == CB_NET_US ? "non-negative" : "positive");
        if (o->id == CB_NET_US) a->net.net_us = x;
        else a->net.net_gbs = x / 8.0;
        a->net_opts++;
        break;
    }
    }
    return TOOL_EXIT_OK;
}

/* ---- measuring ---------------------------------------------------------- */

typedef struct printer {
    opsched_csv_writer *csv;
    int header;
    opsched_status csv_status;
    const char *nccl_version;
} printer;

static const char *human_bytes(int64_t b, char *buf, size_t n)
{
    if (b >= ((int64_t)1 << 30) && b % ((int64_t)1 << 30) == 0)
        snprintf(buf, n, "%lldG", (long long)(b >> 30));
    else if (b >= (1 << 20) && b % (1 << 20) == 0)
        snprintf(buf, n, "%lldM", (long long)(b >> 20));
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, n, "%lldK", (long long)(b >> 10));
    else
        snprintf(buf, n, "%lld", (long long)b);
    return buf;
}

static void on_result(const opsched_collective_result *r, int skipped, void *user)
{
    printer *p = user;
    char size[32];
    if (!p->header) {
        printf("%-14s %5s %5s %10s %12s %10s %10s %10s %12s %7s\n", "# collective", "ranks", "type",
               "size", "count", "time(us)", "min(us)", "max(us)", "algbw(GB/s)", "busbw");
        p->header = 1;
    }
    human_bytes(r->bytes, size, sizeof(size));
    if (skipped) {
        printf("%-14s %5d %5s %10s %12lld %10s   (in the database; --force measures it again)\n",
               opsched_collective_name(r->collective), r->ranks, opsched_dtype_name(r->dtype), size,
               (long long)r->count, "-");
        fflush(stdout);
        return;
    }
    printf("%-14s %5d %5s %10s %12lld %10.2f %10.2f %10.2f %12.2f %7.2f%s\n",
           opsched_collective_name(r->collective), r->ranks, opsched_dtype_name(r->dtype), size,
           (long long)r->count, r->stats.median * 1e3, r->stats.min * 1e3, r->stats.max * 1e3,
           r->algbw_gbs, r->busbw_gbs, r->wrong ? "  WRONG" : "");
    fflush(stdout);
    if (!p->csv || p->csv_status != OPSCHED_OK) return;
    opsched_csv_writer *w = p->csv;
    opsched_status st = OPSCHED_OK;
    if (st == OPSCHED_OK) st = opsched_csv_str(w, opsched_collective_name(r->collective));
    if (st == OPSCHED_OK) st = opsched_csv_str(w, opsched_dtype_name(r->dtype));
    if (st == OPSCHED_OK) st = opsched_csv_int(w, r->bytes);
    if (st == OPSCHED_OK) st = opsched_csv_int(w, r->count);
    if (st == OPSCHED_OK) st = opsched_csv_int(w, r->ranks);
    if (st == OPSCHED_OK) st = opsched_csv_int(w, r->iters);
    if (st == OPSCHED_OK) st = opsched_csv_int(w, r->stats.n);
    if (st == OPSCHED_OK) st = opsched_csv_double(w, r->stats.median * 1e3, "%.3f");
    if (st == OPSCHED_OK) st = opsched_csv_double(w, r->stats.min * 1e3, "%.3f");
    if (st == OPSCHED_OK) st = opsched_csv_double(w, r->stats.max * 1e3, "%.3f");
    if (st == OPSCHED_OK) st = opsched_csv_double(w, r->algbw_gbs, "%.4f");
    if (st == OPSCHED_OK) st = opsched_csv_double(w, r->busbw_gbs, "%.4f");
    if (st == OPSCHED_OK) st = opsched_csv_int(w, r->wrong);
    if (st == OPSCHED_OK) st = opsched_csv_double(w, r->max_error, "%.6g");
    if (st == OPSCHED_OK) st = opsched_csv_str(w, p->nccl_version);
    if (st == OPSCHED_OK) st = opsched_csv_end_row(w);
    p->csv_status = st;
}

/* The file a path names once written: its directory resolved, so that
 * "a.db" and "./a.db" agree before either exists. */
static void target_of(const char *path, char *out, size_t size)
{
    char dir[4096], real[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (slash == path) snprintf(dir, sizeof(dir), "/");
    if (!realpath(dir, real)) snprintf(real, sizeof(real), "%s", dir);
    snprintf(out, size, "%s/%s", real, slash ? slash + 1 : path);
}

static int measure(opsched_ctx *ctx, cb_args *a, int argc, char **argv)
{
    int rc = TOOL_EXIT_OK;
    opsched_status st;
    opsched_store *store = NULL;
    int64_t run_id = 0;
    opsched_out out = {0};
    printer p = {0};
    if (a->csv && a->db) {
        const char *in[] = {a->db};
        int crc = tool_check_output("commbench", a->csv, in, 1);
        if (crc != TOOL_EXIT_OK) return crc;
        char t1[8192], t2[8192];
        target_of(a->csv, t1, sizeof(t1));
        target_of(a->db, t2, sizeof(t2));
        if (strcmp(t1, t2) == 0)
            return tool_usage_error("commbench",
                                    "--csv %s names the database --db %s: the CSV would replace "
                                    "it; choose another name",
                                    a->csv, a->db);
    }
    if (a->db) {
        if ((st = opsched_store_open(ctx, a->db, OPSCHED_STORE_READ_WRITE, &store)) != OPSCHED_OK)
            return tool_fail(ctx, st, a->db);
        char command[1024] = "opsched";
        for (int i = 0; i < argc; i++) {
            size_t used = strlen(command);
            snprintf(command + used, sizeof(command) - used, " %s", argv[i]);
        }
        opsched_run_info info = {command, NULL, 0, 1};
        if ((st = opsched_store_begin_run(store, &info, &run_id)) != OPSCHED_OK) {
            rc = tool_fail(ctx, st, a->db);
            goto done;
        }
    }
    if (a->csv) {
        if ((st = opsched_out_open(ctx, a->csv, "commbench CSV", 0, &out)) != OPSCHED_OK ||
            (st = opsched_csv_writer_create(ctx, out.f, &p.csv)) != OPSCHED_OK ||
            (st = opsched_csv_header(p.csv, "collective,dtype,bytes,count,ranks,iters,samples,"
                                            "time_us,time_us_min,time_us_max,algbw_gbs,busbw_gbs,"
                                            "wrong,max_error,nccl_version")) != OPSCHED_OK) {
            rc = tool_fail(ctx, st, a->csv);
            goto done;
        }
    }
    /* NCCL first: a missing library is said before anything starts, and
     * the CSV's rows name its version. */
    char version[16] = "", lib[256];
    int code = 0;
    if ((st = opsched_nccl_library(ctx, &code, lib, sizeof(lib))) != OPSCHED_OK) {
        rc = tool_fail(ctx, st, "commbench");
        goto done;
    }
    snprintf(version, sizeof(version), "%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
    p.nccl_version = version;
    a->o.on_result = on_result;
    a->o.user = &p;
    a->o.stop = tool_stop_install(
        "\nopsched commbench: stopping after the size in flight; Ctrl-C again to abort\n");
    opsched_commbench_summary sum;
    st = opsched_commbench_run(ctx, &a->o, store, run_id, &sum);
    tool_stop_restore();
    if (sum.env.ranks)
        fprintf(stderr,
                "opsched commbench: %d ranks on %s; NCCL %s (%s); %lld sizes measured, %lld "
                "already in the database\nopsched commbench: topology: %s\n",
                sum.env.ranks, sum.env.gpus[0] ? sum.env.gpus : sum.env.gpu0.name,
                sum.env.nccl_version_str, sum.env.nccl_library, (long long)sum.measured,
                (long long)sum.skipped, sum.env.topology[0] ? sum.env.topology : "unknown");
    if (st != OPSCHED_OK) rc = tool_fail(ctx, st, "commbench");
    if (p.csv_status != OPSCHED_OK && rc == TOOL_EXIT_OK) rc = tool_fail(ctx, p.csv_status, a->csv);
done:
    if (store && run_id)
        (void)opsched_store_end_run(store, run_id,
                                    rc == TOOL_EXIT_OK ? "done"
                                    : opsched_ctx_last_status(ctx) == OPSCHED_ERR_INTERRUPTED
                                        ? "interrupted"
                                        : "failed");
    opsched_csv_writer_free(p.csv);
    if (a->csv && out.f) {
        /* A CSV of what was measured is kept even when the run stopped
         * early: every row in it is whole and checked. */
        if ((st = opsched_out_commit(ctx, &out)) != OPSCHED_OK && rc == TOOL_EXIT_OK)
            rc = tool_fail(ctx, st, a->csv);
    }
    opsched_store_close(store);
    return rc;
}

/* ---- fitting -------------------------------------------------------------- */

#define MAX_POINTS 256

typedef struct fit_group {
    opsched_collective c;
    opsched_dtype dtype;
    int ranks, nodes;
    char device[128], uuid[80];
    int n;
    double bytes[MAX_POINTS], us[MAX_POINTS];
} fit_group;

typedef struct fit_state {
    opsched_ctx *ctx;
    tool_format fmt;
    int segments;
    fit_group g;
    int groups;
    cJSON *json;
    opsched_status st;
    const opsched_comm_network *net; /* --nodes: the two-level table instead */
} fit_state;

/* The two-level model over --nodes nodes of this group's GPUs, at its
 * measured sizes. */
static void emit_nodes(fit_state *f, const opsched_comm_fit *fit)
{
    const fit_group *g = &f->g;
    opsched_comm_network net = *f->net;
    net.gpus_per_node = g->ranks;
    int n = net.nodes * g->ranks;
    for (int i = 0; i < g->n; i++) {
        opsched_comm_algo algo;
        double us = opsched_comm_multinode_us(g->c, g->bytes[i], fit, &net, &algo);
        if (!isfinite(us)) return; /* all-to-all, send/recv: not modelled */
        double algbw = us > 0 ? g->bytes[i] / (us * 1e3) : 0;
        double busbw = algbw * opsched_collective_busbw_factor(g->c, n);
        const char *an = net.nodes > 1 ? (algo == OPSCHED_COMM_TREE ? "tree" : "ring") : "fit";
        if (f->fmt == TOOL_FMT_CSV)
            printf("%s,%s,%d,%d,%d,%.0f,%.4f,%.4f,%.4f,%s,%.4f\n", opsched_collective_name(g->c),
                   opsched_dtype_name(g->dtype), n, net.nodes, g->ranks, g->bytes[i], us, algbw,
                   busbw, an, g->us[i]);
        else {
            char sz[32];
            printf("%-14s %5s %5d %5d  %10s %12.2f %10.2f %10.2f  %-5s %12.2f\n",
                   i == 0 ? opsched_collective_name(g->c) : "",
                   i == 0 ? opsched_dtype_name(g->dtype) : "", n, net.nodes,
                   human_bytes((int64_t)g->bytes[i], sz, sizeof(sz)), us, algbw, busbw, an,
                   g->us[i]);
        }
    }
}

static void emit(fit_state *f)
{
    fit_group *g = &f->g;
    if (g->n == 0) return;
    opsched_comm_fit fit;
    if (g->n < 2 ||
        opsched_comm_fit_points(f->ctx, g->bytes, g->us, g->n, f->segments, &fit) != OPSCHED_OK) {
        fprintf(stderr, "opsched commbench: %s %s over %d ranks: %d sizes, too few to fit\n",
                opsched_collective_name(g->c), opsched_dtype_name(g->dtype), g->ranks, g->n);
        g->n = 0;
        return;
    }
    f->groups++;
    if (f->net) {
        emit_nodes(f, &fit);
        g->n = 0;
        return;
    }
    for (int i = 0; i < fit.n_segments; i++) {
        const opsched_comm_segment *s = &fit.seg[i];
        const char *regime = opsched_comm_segment_regime(&fit, i);
        if (f->fmt == TOOL_FMT_TABLE) {
            char lo[32], hi[32];
            char bw[32];
            if (isfinite(s->bw_gbs)) snprintf(bw, sizeof(bw), "%.2f", s->bw_gbs);
            else snprintf(bw, sizeof(bw), "flat");
            printf("%-14s %5s %5d %5d  %10s %10s %10.2f %12s  %-16s %7.1f%% %7.1f%%\n",
                   i == 0 ? opsched_collective_name(g->c) : "",
                   i == 0 ? opsched_dtype_name(g->dtype) : "", g->ranks, g->nodes,
                   human_bytes((int64_t)s->lo_bytes, lo, sizeof(lo)),
                   human_bytes((int64_t)s->hi_bytes, hi, sizeof(hi)), s->alpha_us, bw, regime,
                   100 * s->median_rel_err,
                   100 * s->max_rel_err);
        } else if (f->fmt == TOOL_FMT_CSV) {
            printf("%s,%s,%d,%d,%s,%d,%.0f,%.0f,%.6g,%.6g,%s,%.4f,%.4f,%d\n",
                   opsched_collective_name(g->c), opsched_dtype_name(g->dtype), g->ranks, g->nodes,
                   g->uuid, i, s->lo_bytes, s->hi_bytes, s->alpha_us,
                   isfinite(s->bw_gbs) ? s->bw_gbs : 0.0, regime, s->median_rel_err, s->max_rel_err,
                   s->n);
        } else {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "collective", opsched_collective_name(g->c));
            cJSON_AddStringToObject(o, "dtype", opsched_dtype_name(g->dtype));
            cJSON_AddNumberToObject(o, "ranks", g->ranks);
            cJSON_AddNumberToObject(o, "nodes", g->nodes);
            cJSON_AddStringToObject(o, "device", g->device);
            cJSON_AddStringToObject(o, "device_uuid", g->uuid);
            cJSON_AddNumberToObject(o, "piece", i);
            cJSON_AddNumberToObject(o, "lo_bytes", s->lo_bytes);
            cJSON_AddNumberToObject(o, "hi_bytes", s->hi_bytes);
            cJSON_AddNumberToObject(o, "alpha_us", s->alpha_us);
            cJSON_AddNumberToObject(o, "bandwidth_gbs", isfinite(s->bw_gbs) ? s->bw_gbs : 0.0);
            cJSON_AddStringToObject(o, "regime", regime);
            cJSON_AddNumberToObject(o, "median_rel_err", s->median_rel_err);
            cJSON_AddNumberToObject(o, "max_rel_err", s->max_rel_err);
            cJSON_AddNumberToObject(o, "points", s->n);
            cJSON_AddItemToArray(f->json, o);
        }
    }
    g->n = 0;
}

static opsched_status fit_row(const opsched_collective_row *row, void *user)
{
    fit_state *f = user;
    fit_group *g = &f->g;
    if (row->r.wrong || !(row->r.stats.median > 0)) return OPSCHED_OK;
    if (g->n &&
        (g->c != row->r.collective || g->dtype != row->r.dtype || g->ranks != row->r.ranks ||
         g->nodes != row->nodes || strcmp(g->uuid, row->device_uuid) != 0))
        emit(f);
    if (g->n == 0) {
        g->c = row->r.collective;
        g->dtype = row->r.dtype;
        g->ranks = row->r.ranks;
        g->nodes = row->nodes;
        snprintf(g->device, sizeof(g->device), "%s", row->device_name);
        snprintf(g->uuid, sizeof(g->uuid), "%s", row->device_uuid);
    }
    if (g->n < MAX_POINTS) {
        g->bytes[g->n] = (double)row->r.bytes;
        g->us[g->n] = row->r.stats.median * 1e3;
        g->n++;
    }
    return OPSCHED_OK;
}

static int fit(opsched_ctx *ctx, cb_args *a)
{
    tool_format fmt = TOOL_FMT_TABLE;
    if (a->format && !tool_parse_format(a->format, &fmt))
        return tool_usage_error("commbench", "--format %s: table, csv or json", a->format);
    struct stat sb;
    if (stat(a->db, &sb) != 0) {
        fprintf(stderr, "opsched commbench: %s: no such database\n", a->db);
        return TOOL_EXIT_FAIL;
    }
    opsched_store *store = NULL;
    opsched_status st = opsched_store_open(ctx, a->db, OPSCHED_STORE_READ_ONLY, &store);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, a->db);
    fit_state *f = calloc(1, sizeof(*f));
    if (!f) {
        opsched_store_close(store);
        return tool_fail(ctx, OPSCHED_ERR_NOMEM, "commbench");
    }
    f->ctx = ctx;
    f->fmt = fmt;
    f->segments = a->segments ? a->segments : 3;
    if (a->net.nodes > 0) {
        if (fmt == TOOL_FMT_JSON)
            return free(f), opsched_store_close(store),
                   tool_usage_error("commbench", "--nodes prints a table or CSV");
        f->net = &a->net;
        if (fmt == TOOL_FMT_TABLE)
            printf("# %d nodes, %.0f Gbit/s and %g us between nodes; the last column is one "
                   "node's measured time\n"
                   "%-14s %5s %5s %5s  %10s %12s %10s %10s  %-5s %12s\n",
                   a->net.nodes, a->net.net_gbs * 8, a->net.net_us, "# collective", "type",
                   "ranks", "nodes", "size", "time(us)", "algbw", "busbw", "algo", "1 node(us)");
        else
            printf("collective,dtype,ranks,nodes,gpus_per_node,bytes,time_us,algbw_gbs,"
                   "busbw_gbs,algorithm,one_node_us\n");
    }
    if (fmt == TOOL_FMT_JSON) f->json = cJSON_CreateArray();
    if (f->net)
        ;
    else if (fmt == TOOL_FMT_TABLE)
        printf("%-14s %5s %5s %5s  %10s %10s %10s %12s  %-16s %8s %8s\n", "# collective", "type",
               "ranks", "nodes", "from", "to", "alpha(us)", "bw(GB/s)", "regime", "median",
               "worst");
    else if (fmt == TOOL_FMT_CSV)
        printf("collective,dtype,ranks,nodes,device_uuid,piece,lo_bytes,hi_bytes,alpha_us,"
               "bandwidth_gbs,regime,median_rel_err,max_rel_err,points\n");
    st = opsched_store_collectives(store, a->device, fit_row, f);
    if (st == OPSCHED_OK) emit(f);
    int rc = TOOL_EXIT_OK;
    if (st != OPSCHED_OK)
        rc = tool_fail(ctx, st, a->db);
    else if (!f->groups) {
        fprintf(stderr,
                "opsched commbench: %s holds no measured collectives%s%s (opsched "
                "commbench --db %s measures them)\n",
                a->db, a->device ? " of " : "", a->device ? a->device : "", a->db);
        rc = TOOL_EXIT_FAIL;
    }
    if (f->json) {
        if (rc == TOOL_EXIT_OK)
            rc = tool_print_json(f->json);
        else
            cJSON_Delete(f->json);
    }
    free(f);
    opsched_store_close(store);
    return rc;
}

/* ---- importing nccl-tests logs ----------------------------------------------- */

static int import_log(opsched_ctx *ctx, cb_args *a, int argc, char **argv)
{
    FILE *f = fopen(a->import, "r");
    if (!f) {
        fprintf(stderr, "opsched commbench: %s: %s\n", a->import, strerror(errno));
        return TOOL_EXIT_FAIL;
    }
    opsched_nccl_tests_log log;
    opsched_status st = opsched_nccl_tests_parse(ctx, f, a->import, &log);
    fclose(f);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, a->import);
    int ranks = a->o.ranks > 0 ? a->o.ranks : log.ranks;
    int coll = log.collective;
    if (a->o.collectives) {
        unsigned m = a->o.collectives;
        if (m & (m - 1)) {
            opsched_nccl_tests_log_free(&log);
            return tool_usage_error("commbench", "--import: --ops names the one collective of "
                                                 "the log");
        }
        for (coll = 0; !(m & (1u << coll)); coll++)
            ;
    }
    int rc = TOOL_EXIT_OK;
    if (ranks < 1 || coll < 0) {
        fprintf(stderr,
                "opsched commbench: %s does not say %s: give %s\n", a->import,
                ranks < 1 ? "how many ranks ran (no '#  Rank' lines)" : "which collective it is",
                ranks < 1 ? "--gpus N" : "--ops NAME");
        opsched_nccl_tests_log_free(&log);
        return TOOL_EXIT_USAGE;
    }
    int nodes = a->net.nodes > 0 ? a->net.nodes : 1;
    opsched_commbench_env env;
    memset(&env, 0, sizeof(env));
    env.ranks = ranks;
    snprintf(env.nccl_version_str, sizeof(env.nccl_version_str), "%s", log.nccl_version);
    snprintf(env.gpus, sizeof(env.gpus), "nccl-tests log %s", a->import);
    opsched_device_info *d = &env.gpu0;
    snprintf(d->backend, sizeof(d->backend), "cuda");
    snprintf(d->name, sizeof(d->name), "%s",
             a->device ? a->device : log.gpu[0] ? log.gpu : "unknown GPU");
    snprintf(d->uuid, sizeof(d->uuid), "nccl-tests:%.68s", d->name);
    opsched_store *store = NULL;
    int64_t run_id = 0, device_id = 0;
    char command[1024] = "opsched";
    for (int i = 0; i < argc; i++) {
        size_t used = strlen(command);
        snprintf(command + used, sizeof(command) - used, " %s", argv[i]);
    }
    opsched_run_info info = {command, NULL, 0, 1};
    st = opsched_store_open(ctx, a->db, OPSCHED_STORE_READ_WRITE, &store);
    if (st == OPSCHED_OK) st = opsched_store_device(store, d, &device_id);
    if (st == OPSCHED_OK) st = opsched_store_begin_run(store, &info, &run_id);
    int stored = 0;
    for (int i = 0; st == OPSCHED_OK && i < log.n_results; i++) {
        opsched_collective_result *r = &log.results[i];
        r->collective = (opsched_collective)coll;
        r->ranks = ranks;
        if (r->iters < 1) r->iters = 1;
        r->max_error = 0;
        st = opsched_store_collective_put(store, run_id, device_id, r, nodes, &env);
        stored += st == OPSCHED_OK;
    }
    if (run_id) (void)opsched_store_end_run(store, run_id, st == OPSCHED_OK ? "done" : "failed");
    if (st != OPSCHED_OK)
        rc = tool_fail(ctx, st, a->db);
    else
        fprintf(stderr,
               "opsched commbench: %s: %d sizes of %s over %d ranks on %d node%s (%s) stored in "
               "%s%s\n",
               a->import, stored, opsched_collective_name((opsched_collective)coll), ranks, nodes,
               nodes == 1 ? "" : "s", d->name, a->db,
               log.skipped ? " (lines of other element types skipped)" : "");
    opsched_store_close(store);
    opsched_nccl_tests_log_free(&log);
    return rc;
}

int cmd_commbench(opsched_ctx *ctx, int argc, char **argv)
{
    cb_args a;
    memset(&a, 0, sizeof(a));
    opsched_commbench_options_init(&a.o);
    a.net.net_us = 5.0;
    const tool_optgroup groups[] = {{"options", commbench_opts, cb_opt, &a}};
    const tool_cli cli = {"commbench", commbench_usage, NULL, groups, 1, 0, NULL};
    const char *pos[1];
    int n_pos = 0;
    int rc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (rc != TOOL_EXIT_OK) return rc == TOOL_ARGS_HELP ? TOOL_EXIT_OK : rc;
    if (a.import) {
        if (!a.db) return tool_usage_error("commbench", "--import stores the log: --db FILE");
        if (a.fit || a.net_opts || a.segments || a.format || a.o.force || a.csv)
            return tool_usage_error("commbench", "--import takes --db, --nodes, --device, --gpus "
                                                 "and --ops");
        return import_log(ctx, &a, argc, argv);
    }
    if (a.fit) {
        if (!a.db) return tool_usage_error("commbench", "--fit reads a database: --db FILE");
        if (a.measure_opts)
            return tool_usage_error("commbench", "--fit reads what --db holds; the measuring "
                                                 "options (--gpus, --ops, sizes, --csv, ...) do "
                                                 "not apply");
        if (a.net.nodes > 0 && !(a.net.net_gbs > 0))
            return tool_usage_error("commbench", "--nodes needs the network between nodes: "
                                                 "--inter-node-gbps B");
        if (a.net.nodes == 0 && a.net_opts)
            return tool_usage_error("commbench",
                                    "--inter-node-gbps and --inter-node-us go with --nodes M");
        return fit(ctx, &a);
    }
    if (a.net.nodes > 0 || a.net_opts)
        return tool_usage_error("commbench", "--nodes, --inter-node-gbps and --inter-node-us go "
                                             "with --fit");
    if (a.device || a.segments || a.format)
        return tool_usage_error("commbench", "--device, --segments and --format go with --fit");
    if (a.o.min_bytes > a.o.max_bytes)
        return tool_usage_error("commbench", "--min-bytes %lld is above --max-bytes %lld",
                                (long long)a.o.min_bytes, (long long)a.o.max_bytes);
    return measure(ctx, &a, argc, argv);
}
