/*
 * cmd_bench.c - `opsched bench <op> --param value...`: one operator
 * configuration measured on one device, one row per algorithm.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static void bench_help(void)
{
    printf("usage: opsched bench <op> [--PARAM VALUE]... [measurement options]\n\n"
           "Measures one operator configuration and prints one row per algorithm\n"
           "(unsupported algorithms are shown as such).\n\noperators and their parameters "
           "(defaults):\n");
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
    printf("  (conv2d: --padding -1 means kernel/2; --width 0 means --height)\n\n%s",
           tool_measure_help);
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
    opsched_param params[32];
    char names[32][48];
    int n_params = 0;
    const char *op = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            bench_help();
            return TOOL_EXIT_OK;
        }
        if (strncmp(arg, "--", 2) != 0) {
            if (op) return tool_usage_error("bench", "one operator at a time ('%s'?)", arg);
            op = arg;
            continue;
        }
        const char *name = arg + 2;
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = strcmp(name, "energy") != 0;
        int r = tool_measure_flag("bench", name, val, &ma);
        if (r < 0) return TOOL_EXIT_USAGE;
        if (r > 0) {
            if (takes) i++;
            continue;
        }
        /* an operator parameter: --in-channels 64 */
        if (!val) return tool_usage_error("bench", "--%s needs a value", name);
        if (n_params == 32) return tool_usage_error("bench", "too many parameters");
        snprintf(names[n_params], sizeof(names[n_params]), "%s", name);
        for (char *c = names[n_params]; *c; c++)
            if (*c == '-') *c = '_';
        if (!tool_parse_int(val, -1, INT32_MAX, &params[n_params].value))
            return tool_usage_error("bench", "--%s wants an integer, got '%s'", name, val);
        params[n_params].name = names[n_params];
        n_params++;
        i++;
    }
    if (!op) return tool_usage_error("bench", "which operator? e.g. opsched bench conv2d");

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
    printf("%s on %s:%d (%s), math %s, layout %s, cache %s\n", op, di.backend, di.index, di.name,
           opsched_math_name(ma.opts.plan.math),
           ma.opts.plan.layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw",
           opsched_cache_name(ma.opts.cache));
    printf("config %s\nFLOPs %lld, bytes %lld\n\n", sig, (long long)node->cost.flops,
           (long long)(node->cost.bytes_read + node->cost.bytes_written));
    printf("%-34s %-13s %10s %10s %10s %10s %7s %6s %9s %8s %8s", "algorithm", "status",
           "median_ms", "mean_ms", "min_ms", "p99_ms", "cv", "batch", "workspace", "TFLOP/s", "GB/s");
    if (ma.opts.energy) printf(" %10s %10s %8s", "energy_mJ", "dynamic_mJ", "power_W");
    printf("\n");
    int ok = 0, unstable = 0;
    for (int a = 0; a < n_algos; a++) {
        opsched_measure_options o = ma.opts;
        o.plan.algo = list[a];
        opsched_measurement m;
        st = opsched_measure_node(dev, g, 0, &o, &m);
        if (st != OPSCHED_OK && m.status == OPSCHED_OK) {
            rc = tool_fail(ctx, st, list[a]);
            goto done;
        }
        if (st != OPSCHED_OK) opsched_ctx_clear_error(ctx);
        print_row(list[a], &m, node, ma.opts.energy);
        if (m.status == OPSCHED_OK) ok++;
        if (m.status == OPSCHED_OK && m.unstable) unstable++;
    }
    if (unstable) {
        char msg[200];
        fprintf(stderr, "opsched: warning: %s\n",
                opsched_unstable_message(unstable, msg, sizeof(msg)));
    }
    if (!ok) {
        fprintf(stderr, "opsched: no algorithm could run this configuration\n");
        rc = TOOL_EXIT_FAIL;
    }
done:
    opsched_device_close(dev);
    opsched_graph_free(g);
    return rc;
}
