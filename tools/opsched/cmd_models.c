/*
 * cmd_models.c - `opsched models`: the built-in networks and their totals.
 */
#include <getopt.h>
#include <string.h>

#include "tool.h"

static const char models_help[] =
    "usage: opsched models [--batch N] [--format table|csv]\n"
    "\n"
    "Lists the built-in networks (torchvision architectures) at their default\n"
    "input size: layers, FLOPs and peak activation memory of the deployed form\n"
    "(BatchNormalization folded, as torch.onnx.export writes it), parameters of\n"
    "the trained form (torchvision's count) and of the deployed form.\n";

int cmd_models(opsched_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"batch", required_argument, NULL, 'b'},
                                         {"format", required_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int64_t batch = 1;
    tool_format fmt = TOOL_FMT_TABLE;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (!tool_parse_int(optarg, 1, 1 << 20, &batch))
                return tool_usage_error("models", "--batch wants a positive integer, got '%s'", optarg);
            break;
        case 'f':
            if (!tool_parse_format(optarg, &fmt) || fmt == TOOL_FMT_JSON)
                return tool_usage_error("models", "--format wants table or csv, got '%s'", optarg);
            break;
        case 'h': fputs(models_help, stdout); return TOOL_EXIT_OK;
        default: return tool_usage_error("models", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc) return tool_usage_error("models", "unexpected argument '%s'", argv[optind]);

    opsched_csv_writer *w = NULL;
    opsched_status st = OPSCHED_OK;
    int rc = TOOL_EXIT_OK;
    if (fmt == TOOL_FMT_CSV) {
        st = opsched_csv_writer_create(ctx, stdout, &w);
        if (st == OPSCHED_OK)
            st = opsched_csv_header(w, "model,input,layers,flops,params,params_deployed,"
                                       "peak_activation_bytes");
        if (st != OPSCHED_OK) {
            opsched_csv_writer_free(w);
            return tool_fail(ctx, st, "CSV");
        }
    } else {
        printf("%-14s %-14s %7s %10s %12s %12s %10s  %s\n", "model", "input", "layers", "GFLOPs",
               "params", "deployed", "peak act.", "description");
    }
    for (int i = 0; i < opsched_zoo_count() && rc == TOOL_EXIT_OK; i++) {
        const opsched_zoo_info *zi = opsched_zoo_at(i);
        opsched_zoo_options zo = {.batch = batch, .fold_bn = 1};
        opsched_graph *g = NULL;
        opsched_graph_totals t, tu;
        st = opsched_zoo_build(ctx, zi->name, &zo, &g);
        if (st == OPSCHED_OK) st = opsched_graph_totals_compute(g, &t);
        opsched_graph_free(g);
        g = NULL;
        /* torchvision counts parameters of the trained form (BatchNorm kept) */
        zo.fold_bn = 0;
        if (st == OPSCHED_OK) st = opsched_zoo_build(ctx, zi->name, &zo, &g);
        if (st == OPSCHED_OK) st = opsched_graph_totals_compute(g, &tu);
        opsched_graph_free(g);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, zi->name);
            break;
        }
        char in[64], pk[32];
        snprintf(in, sizeof(in), "%lldx3x%lldx%lld", (long long)batch, (long long)zi->default_size,
                 (long long)zi->default_size);
        if (fmt == TOOL_FMT_CSV) {
            opsched_csv_str(w, zi->name);
            opsched_csv_str(w, in);
            opsched_csv_int(w, t.n_nodes);
            opsched_csv_int(w, t.flops);
            opsched_csv_int(w, tu.params);
            opsched_csv_int(w, t.params);
            opsched_csv_int(w, t.peak_activation_bytes);
            if ((st = opsched_csv_end_row(w)) != OPSCHED_OK) rc = tool_fail(ctx, st, "CSV");
        } else {
            printf("%-14s %-14s %7d %10.3f %12lld %12lld %9sB  %s\n", zi->name, in, t.n_nodes,
                   (double)t.flops / 1e9, (long long)tu.params, (long long)t.params,
                   tool_human((double)t.peak_activation_bytes, pk, sizeof(pk)), zi->description);
        }
    }
    opsched_csv_writer_free(w);
    return rc;
}
