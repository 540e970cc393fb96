/*
 * cmd_bench.c - `opsched bench <op> --param value...`: one operator
 * configuration measured on one device, one row per algorithm.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "args.h"

static const char bench_usage[] =
    "usage: opsched bench <op> [--PARAM VALUE]... [measurement options]\n\n"
    "Measures one operator configuration and prints one row per algorithm\n"
    "(unsupported algorithms are shown as such).  Math and layout default to the\n"
    "fastest of the backend: tf32 and nhwc on a GPU, fp32 and nchw on the CPU.\n";

static void bench_epilog(void)
{
    printf("\noperators and their parameters (defaults):\n");
    for (int i = 0; i < opsched_opconfig_count(); i++) {
        const opsched_param *p;
        int n;
        const char *op = opsched_opconfig_name(i);
        opsched_opconfig_params(op, &p, &n);
        printf("  %-14s", op);
        for (int k = 0; k < n; k++) {
            char flag[48];
            snprintf(flag, sizeof(flag), "%s", p[k].name);
            for (char *c = flag; *c; c++)
                if (*c == '_') *c = '-';
            printf(" --%s %lld", flag, (long long)p[k].value);
        }
        printf("\n");
    }
    printf("  (conv2d: --padding -1 means kernel/2; --width 0 means --height)\n");
}

#define MAX_PARAMS 32
#define MAX_PARAM_NAMES 128

/* The operator parameters as options: every operator's, "_" spelled "-". */
typedef struct bench_params {
    tool_opt opts[MAX_PARAM_NAMES + 1];
    char names[MAX_PARAM_NAMES][48];
    opsched_param params[MAX_PARAMS];
    char given[MAX_PARAMS][48];
    int n;
} bench_params;

static void param_options(bench_params *bp)
{
    int n = 0;
    for (int i = 0; i < opsched_opconfig_count(); i++) {
        const opsched_param *p;
        int np;
        opsched_opconfig_params(opsched_opconfig_name(i), &p, &np);
        for (int k = 0; k < np && n < MAX_PARAM_NAMES; k++) {
            char flag[48];
            snprintf(flag, sizeof(flag), "%s", p[k].name);
            for (char *c = flag; *c; c++)
                if (*c == '_') *c = '-';
            int seen = 0;
            for (int j = 0; j < n && !seen; j++) seen = strcmp(bp->names[j], flag) == 0;
            if (seen) continue;
            snprintf(bp->names[n], sizeof(bp->names[n]), "%s", flag);
            bp->opts[n] = (tool_opt){bp->names[n], 0, "V", NULL, n};
            n++;
        }
    }
    bp->opts[n] = (tool_opt){NULL, 0, NULL, NULL, 0};
}

static int param_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    bench_params *bp = dest;
    if (bp->n == MAX_PARAMS) return tool_usage_error(cmd, "too many parameters");
    snprintf(bp->given[bp->n], sizeof(bp->given[bp->n]), "%s", o->name);
    for (char *c = bp->given[bp->n]; *c; c++)
        if (*c == '-') *c = '_';
    if (!tool_parse_int(v, -1, INT32_MAX, &bp->params[bp->n].value))
        return tool_usage_error(cmd, "--%s wants an integer, got '%s'", o->name, v);
    bp->params[bp->n].name = bp->given[bp->n];
    bp->n++;
    return TOOL_EXIT_OK;
}

static const char *status_word(const opsched_measurement *m)
{
    return m->status == OPSCHED_OK                 ? "ok"
           : m->status == OPSCHED_ERR_UNSUPPORTED ? "unsupported"
           : m->status == OPSCHED_ERR_DEVICE_OOM  ? "out of memory"
                                                   : "error";
}

static opsched_status csv_header(opsched_csv_writer *w, int energy)
{
    return opsched_csv_header(w, energy ? "op,algorithm,algo,status,median_ms,mean_ms,min_ms,"
                                          "p99_ms,cv,samples,median_ci,converged,launches,"
                                          "workspace_bytes,tflops,gb_s,"
                                          "energy_mj,dynamic_mj,power_w,energy_method,message"
                                        : "op,algorithm,algo,status,median_ms,mean_ms,min_ms,"
                                          "p99_ms,cv,samples,median_ci,converged,launches,"
                                          "workspace_bytes,tflops,gb_s,message");
}

/* One algorithm's row; a failed one has only its status and message. */
static opsched_status csv_row(opsched_csv_writer *w, const char *op, const char *policy,
                              const opsched_measurement *m, const opsched_node *n, int energy)
{
    const opsched_stats *s = &m->stats;
    double sec = s->median / 1e3;
    int ok = m->status == OPSCHED_OK;
    opsched_csv_str(w, op);
    opsched_csv_str(w, policy);
    opsched_csv_str(w, ok ? m->algo : "");
    opsched_csv_str(w, status_word(m));
    if (ok) {
        opsched_csv_double(w, s->median, "%.6g");
        opsched_csv_double(w, s->mean, "%.6g");
        opsched_csv_double(w, s->min, "%.6g");
        opsched_csv_double(w, s->p99, "%.6g");
        opsched_csv_double(w, s->cv, "%.6g");
        opsched_csv_int(w, s->n);
        opsched_csv_double(w, opsched_stats_median_ci(s), "%.6g");
        opsched_csv_int(w, m->converged);
        opsched_csv_int(w, m->launches_per_sample);
        opsched_csv_int(w, m->workspace_bytes);
        opsched_csv_double(w, sec > 0 ? (double)n->cost.flops / sec / 1e12 : 0.0, "%.6g");
        opsched_csv_double(
            w, sec > 0 ? (double)(n->cost.bytes_read + n->cost.bytes_written) / sec / 1e9 : 0.0,
            "%.6g");
    } else {
        for (int i = 0; i < 12; i++) opsched_csv_empty(w);
    }
    if (energy) {
        if (ok && m->energy.valid) {
            opsched_csv_double(w, m->energy.energy_j * 1e3, "%.6g");
            opsched_csv_double(w, m->energy.dynamic_energy_j * 1e3, "%.6g");
            opsched_csv_double(w, m->energy.power_mean_w, "%.6g");
            opsched_csv_str(w, m->energy.method);
        } else {
            for (int i = 0; i < 4; i++) opsched_csv_empty(w);
        }
    }
    opsched_csv_str(w, ok ? "" : m->message);
    return opsched_csv_end_row(w);
}

static void json_row(cJSON *arr, const char *op, const char *policy, const opsched_measurement *m,
                     const opsched_node *n)
{
    cJSON *o = cJSON_CreateObject();
    const opsched_stats *s = &m->stats;
    double sec = s->median / 1e3;
    cJSON_AddStringToObject(o, "op", op);
    cJSON_AddStringToObject(o, "algorithm", policy);
    cJSON_AddStringToObject(o, "status", status_word(m));
    if (m->status != OPSCHED_OK) {
        cJSON_AddStringToObject(o, "message", m->message);
    } else {
        cJSON_AddStringToObject(o, "algo", m->algo);
        cJSON_AddNumberToObject(o, "median_ms", s->median);
        cJSON_AddNumberToObject(o, "mean_ms", s->mean);
        cJSON_AddNumberToObject(o, "min_ms", s->min);
        cJSON_AddNumberToObject(o, "p99_ms", s->p99);
        cJSON_AddNumberToObject(o, "cv", s->cv);
        cJSON_AddNumberToObject(o, "samples", s->n);
        cJSON_AddNumberToObject(o, "median_ci", opsched_stats_median_ci(s));
        cJSON_AddBoolToObject(o, "converged", m->converged);
        cJSON_AddNumberToObject(o, "launches", m->launches_per_sample);
        cJSON_AddNumberToObject(o, "workspace_bytes", (double)m->workspace_bytes);
        cJSON_AddNumberToObject(o, "tflops", sec > 0 ? (double)n->cost.flops / sec / 1e12 : 0.0);
        cJSON_AddNumberToObject(
            o, "gb_s",
            sec > 0 ? (double)(n->cost.bytes_read + n->cost.bytes_written) / sec / 1e9 : 0.0);
        if (m->energy.valid) {
            cJSON_AddNumberToObject(o, "energy_mj", m->energy.energy_j * 1e3);
            cJSON_AddNumberToObject(o, "dynamic_mj", m->energy.dynamic_energy_j * 1e3);
            cJSON_AddNumberToObject(o, "power_w", m->energy.power_mean_w);
        }
    }
    cJSON_AddItemToArray(arr, o);
}

static void print_row(const char *policy, const opsched_measurement *m, const opsched_node *n,
                      int energy)
{
    /* "heuristic=graph:eng38": the policy asked for and what it chose */
    char label[96];
    if (strcmp(policy, m->algo) == 0 || m->status != OPSCHED_OK)
        snprintf(label, sizeof(label), "%s", policy);
    else
        snprintf(label, sizeof(label), "%s=%s", policy, m->algo);
    if (m->status != OPSCHED_OK) {
        const char *what = m->status == OPSCHED_ERR_UNSUPPORTED ? "unsupported"
                           : m->status == OPSCHED_ERR_DEVICE_OOM ? "out of memory"
                                                                 : "error";
        printf("%-34s %-13s %s\n", label, what, m->message);
        return;
    }
    const opsched_stats *s = &m->stats;
    double sec = s->median / 1e3;
    char ws[32];
    printf("%-34s %-13s %10.4f %10.4f %10.4f %10.4f %6.2f%% %6d %8sB %8.2f %8.1f", label, "ok",
           s->median, s->mean, s->min, s->p99, 100.0 * s->cv, m->launches_per_sample,
           tool_human((double)m->workspace_bytes, ws, sizeof(ws)),
           sec > 0 ? (double)n->cost.flops / sec / 1e12 : 0.0,
           sec > 0 ? (double)(n->cost.bytes_read + n->cost.bytes_written) / sec / 1e9 : 0.0);
    if (energy) {
        if (m->energy.valid)
            printf(" %10.4f %10.4f %8.1f %s", m->energy.energy_j * 1e3,
                   m->energy.dynamic_energy_j * 1e3, m->energy.power_mean_w, m->energy.method);
        else
            printf(" %10s", "n/a");
    }
    printf("\n");
}

int cmd_bench(opsched_ctx *ctx, int argc, char **argv)
{
    tool_measure_args ma;
    tool_measure_args_init(&ma);
    tool_format fmt = TOOL_FMT_TABLE;
    static bench_params bp;
    memset(&bp, 0, sizeof(bp));
    param_options(&bp);
    const tool_optgroup groups[] = {
        {NULL, bp.opts, param_opt, &bp},
        {"measurement options", tool_measure_optlist, tool_measure_opt, &ma},
        {"output options", tool_format_optlist, tool_format_opt, &fmt}};
    const tool_cli cli = {"bench", bench_usage, bench_epilog, groups, 3, 1, "operator"};
    const char *pos[1];
    int n_pos = 0;
    int prc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (prc != TOOL_EXIT_OK) return prc == TOOL_ARGS_HELP ? TOOL_EXIT_OK : prc;
    if (!n_pos) return tool_usage_error("bench", "which operator? e.g. opsched bench conv2d");
    const char *op = pos[0];
    opsched_param *params = bp.params;
    int n_params = bp.n;
    /* the graph's data type follows the math mode: resolve "auto" first */
    tool_measure_resolve(ctx, &ma);
    opsched_graph *g = NULL;
    opsched_device *dev = NULL;
    opsched_status st = opsched_opconfig_build(ctx, op, params, n_params,
                                               opsched_math_dtype(ma.opts.plan.math), &g);
    if (st == OPSCHED_ERR_INVALID_ARG) {
        fprintf(stderr, "opsched bench: %s\n", opsched_ctx_last_error(ctx));
        return TOOL_EXIT_USAGE;
    }
    if (st != OPSCHED_OK) return tool_fail(ctx, st, op);
    int rc = TOOL_EXIT_OK;
    opsched_csv_writer *w = NULL;
    st = tool_open_device(ctx, &ma, &dev);
    if (st != OPSCHED_OK) {
        rc = tool_fail(ctx, st, "device");
        goto done;
    }
    const char *single[1] = {ma.algo ? ma.algo : "heuristic"};
    const char *list[16];
    int n_algos = 1;
    list[0] = single[0];
    const opsched_node *node = opsched_graph_node(g, 0);
    if (ma.algo && strcmp(ma.algo, "all") == 0) {
        const char *const *names_c;
        int nc = 0;
        opsched_device_conv_algos(dev, &names_c, &nc);
        list[0] = "heuristic";
        list[1] = "find";
        n_algos = 2;
        if (node->op == OPSCHED_OP_CONV)
            for (int i = 0; i < nc && n_algos < 16; i++) list[n_algos++] = names_c[i];
    }
    opsched_device_info di;
    opsched_device_info_get(dev, &di);
    char sig[512];
    opsched_node_signature(g, 0, sig, sizeof(sig));
    FILE *head = fmt == TOOL_FMT_TABLE ? stdout : stderr;
    fprintf(head, "%s on %s:%d (%s), math %s, layout %s, cache %s\n", op, di.backend, di.index,
            di.name, opsched_math_name(ma.opts.plan.math),
            ma.opts.plan.layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw",
            opsched_cache_name(ma.opts.cache));
    fprintf(head, "config %s\nFLOPs %lld, bytes %lld\n", sig, (long long)node->cost.flops,
            (long long)(node->cost.bytes_read + node->cost.bytes_written));
    cJSON *json = NULL, *rows = NULL;
    if (fmt == TOOL_FMT_CSV) {
        st = opsched_csv_writer_create(ctx, stdout, &w);
        if (st == OPSCHED_OK) st = csv_header(w, ma.opts.energy);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, "CSV");
            goto done;
        }
    } else if (fmt == TOOL_FMT_JSON) {
        json = cJSON_CreateObject();
        cJSON_AddStringToObject(json, "op", op);
        cJSON_AddStringToObject(json, "config", sig);
        cJSON_AddStringToObject(json, "backend", di.backend);
        cJSON_AddNumberToObject(json, "device_index", di.index);
        cJSON_AddStringToObject(json, "device", di.name);
        cJSON_AddStringToObject(json, "math", opsched_math_name(ma.opts.plan.math));
        cJSON_AddStringToObject(json, "layout",
                                ma.opts.plan.layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw");
        cJSON_AddStringToObject(json, "cache", opsched_cache_name(ma.opts.cache));
        cJSON_AddNumberToObject(json, "flops", (double)node->cost.flops);
        cJSON_AddNumberToObject(json, "bytes",
                                (double)(node->cost.bytes_read + node->cost.bytes_written));
        rows = cJSON_AddArrayToObject(json, "results");
    } else {
        printf("\n%-34s %-13s %10s %10s %10s %10s %7s %6s %9s %8s %8s", "algorithm", "status",
               "median_ms", "mean_ms", "min_ms", "p99_ms", "cv", "batch", "workspace", "TFLOP/s",
               "GB/s");
        if (ma.opts.energy) printf(" %10s %10s %8s", "energy_mJ", "dynamic_mJ", "power_W");
        printf("\n");
    }
    int ok = 0, unstable = 0;
    for (int a = 0; a < n_algos; a++) {
        opsched_measure_options o = ma.opts;
        o.plan.algo = list[a];
        opsched_measurement m;
        st = opsched_measure_node(dev, g, 0, &o, &m);
        if (st != OPSCHED_OK && m.status == OPSCHED_OK) {
            cJSON_Delete(json);
            rc = tool_fail(ctx, st, list[a]);
            goto done;
        }
        if (st != OPSCHED_OK) opsched_ctx_clear_error(ctx);
        if (fmt == TOOL_FMT_CSV) {
            st = csv_row(w, op, list[a], &m, node, ma.opts.energy);
            if (st != OPSCHED_OK) {
                rc = tool_fail(ctx, st, "CSV");
                goto done;
            }
        } else if (fmt == TOOL_FMT_JSON) json_row(rows, op, list[a], &m, node);
        else print_row(list[a], &m, node, ma.opts.energy);
        if (m.status == OPSCHED_OK) ok++;
        if (m.status == OPSCHED_OK && m.unstable) unstable++;
    }
    if (unstable) {
        char msg[200];
        fprintf(stderr, "opsched: warning: %s\n",
                opsched_unstable_message(unstable, msg, sizeof(msg)));
    }
    if (json && tool_print_json(json) != TOOL_EXIT_OK) rc = TOOL_EXIT_FAIL;
    if (!ok) {
        fprintf(stderr, "opsched: no algorithm could run this configuration\n");
        rc = TOOL_EXIT_FAIL;
    }
done:
    opsched_csv_writer_free(w);
    opsched_device_close(dev);
    opsched_graph_free(g);
    return rc;
}
