/*
 * cmd_models.c - `opsched models`: the built-in networks and their totals.
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "args.h"

static const char models_help[] =
    "usage: opsched models [--batch N] [--format table|csv|json]\n"
    "\n"
    "Lists the built-in networks (torchvision architectures) at their default\n"
    "input size: layers, FLOPs and peak activation memory of the deployed form\n"
    "(BatchNormalization folded, as torch.onnx.export writes it), parameters of\n"
    "the trained form (torchvision's count) and of the deployed form.\n";

static const tool_opt batch_opt[] = {
    {"batch", 0, "N", "batch size (default 1)", 0}, {NULL, 0, NULL, NULL, 0}};

static int set_batch(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    (void)o;
    if (!tool_parse_int(v, 1, 1 << 20, dest))
        return tool_usage_error(cmd, "--batch wants a positive integer, got '%s'", v);
    return TOOL_EXIT_OK;
}

int cmd_models(opsched_ctx *ctx, int argc, char **argv)
{
    int64_t batch = 1;
    tool_format fmt = TOOL_FMT_TABLE;
    const tool_optgroup groups[] = {{"options", batch_opt, set_batch, &batch},
                                    {NULL, tool_format_optlist, tool_format_opt, &fmt}};
    const tool_cli cli = {"models", models_help, NULL, groups, 2, 0, NULL};
    const char *pos[1];
    int n_pos = 0;
    int rc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (rc != TOOL_EXIT_OK) return rc == TOOL_ARGS_HELP ? TOOL_EXIT_OK : rc;

    opsched_csv_writer *w = NULL;
    opsched_status st = OPSCHED_OK;
    cJSON *root = fmt == TOOL_FMT_JSON ? cJSON_CreateArray() : NULL;
    if (fmt == TOOL_FMT_CSV) {
        st = opsched_csv_writer_create(ctx, stdout, &w);
        if (st == OPSCHED_OK)
            st = opsched_csv_header(w, "model,input,layers,flops,params,params_deployed,"
                                       "peak_activation_bytes");
        if (st != OPSCHED_OK) {
            opsched_csv_writer_free(w);
            return tool_fail(ctx, st, "CSV");
        }
    } else if (fmt == TOOL_FMT_TABLE) {
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
        } else if (fmt == TOOL_FMT_JSON) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "model", zi->name);
            cJSON_AddStringToObject(o, "input", in);
            cJSON_AddNumberToObject(o, "layers", t.n_nodes);
            cJSON_AddNumberToObject(o, "flops", (double)t.flops);
            cJSON_AddNumberToObject(o, "params", (double)tu.params);
            cJSON_AddNumberToObject(o, "params_deployed", (double)t.params);
            cJSON_AddNumberToObject(o, "peak_activation_bytes", (double)t.peak_activation_bytes);
            cJSON_AddStringToObject(o, "description", zi->description);
            cJSON_AddItemToArray(root, o);
        } else {
            printf("%-14s %-14s %7d %10.3f %12lld %12lld %9sB  %s\n", zi->name, in, t.n_nodes,
                   (double)t.flops / 1e9, (long long)tu.params, (long long)t.params,
                   tool_human((double)t.peak_activation_bytes, pk, sizeof(pk)), zi->description);
        }
    }
    opsched_csv_writer_free(w);
    if (root) {
        if (rc != TOOL_EXIT_OK) {
            cJSON_Delete(root);
            return rc;
        }
        return tool_print_json(root);
    }
    return rc;
}
