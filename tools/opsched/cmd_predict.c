/*
 * cmd_predict.c - `opsched predict <zoo-name|file.onnx> --db FILE`: a
 * network's latency, energy and peak memory predicted from operator
 * measurements, layer by layer with the source of each (exact, learned,
 * roofline, none), the totals composed for CUDA-graph or eager execution,
 * and the coverage: the share of the time and of the FLOPs that rests on
 * exact measurements.
 */
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "predict_args.h"

static void predict_help(void)
{
    printf("usage: opsched predict <zoo-name|file.onnx> [--db FILE] [--device NAME] [options]\n\n"
           "Predicts a network's latency, energy per inference and peak memory on a\n"
           "measured device.  Each layer comes from, in order: an exact measurement of\n"
           "its configuration, the learned model of its operator family, a roofline\n"
           "from the device's calibration (opsched devices --calibrate), or nothing\n"
           "(NaN).  A Conv whose only reader is a Relu is one fused layer (--fuse on),\n"
           "views cost nothing.  The total is composed as fitted to the database's\n"
           "profiled networks: graph mode (one CUDA graph) adds a gap per launch, eager\n"
           "mode also a host floor per launch.  Learned models are trained first when\n"
           "missing or stale.\n\n"
           "network:\n"
           "  --batch N              batch size (default 1)\n"
           "  --input-size S|HxW     input size (default: the model's)\n"
           "  --shapes SPEC          ONNX: input shapes, name:1x3x224x224,...\n"
           "  --fold-bn              zoo: BatchNormalization folded into the convolutions\n"
           "  --mode graph|eager     execution to predict (default graph)\n"
           "  --fuse on|off          conv + Relu as one layer (default on)\n"
           "  --no-train             use saved models only (learned source off when stale)\n"
           "  --leave-out            predict as if the network had never been measured:\n"
           "                         its configurations (at this shape and, for a zoo\n"
           "                         network, at every batch and size it was profiled at)\n"
           "                         and its network runs left out of lookups, training\n"
           "                         and the composition fit (what validate --loo does)\n"
           "  --format table|csv|json  (default table)\n\n%s",
           predict_args_help);
}

typedef struct predict_cmd {
    predict_args a;
    tool_model_opts m;
    opsched_predict_options o;
    tool_format fmt;
    int leave_out;      /* --leave-out: predict without the network's own measurements */
} predict_cmd;

static int parse_args(predict_cmd *c, int argc, char **argv, int *help)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = TOOL_EXIT_OK;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            *help = 1;
            return TOOL_EXIT_OK;
        }
        int took = predict_args_take(&c->a, "predict", argc, argv, &i, &rc);
        if (took < 0) return rc;
        if (took) continue;
        if (strcmp(arg, "--fold-bn") == 0) {
            c->m.fold_bn = 1;
            continue;
        }
        if (strcmp(arg, "--no-train") == 0) {
            c->a.po.train = 0;
            continue;
        }
        if (strcmp(arg, "--leave-out") == 0) {
            c->leave_out = 1;
            continue;
        }
        if (arg[0] == '-' && arg[1] == '-') {
            if (!val) return tool_usage_error("predict", "%s needs a value", arg);
            i++;
            if (strcmp(arg, "--batch") == 0) {
                if (!tool_parse_int(val, 1, 1 << 20, &c->m.batch))
                    return tool_usage_error("predict", "--batch needs a positive number");
            } else if (strcmp(arg, "--input-size") == 0) {
                if (!tool_parse_size(val, &c->m.height, &c->m.width))
                    return tool_usage_error("predict", "--input-size needs S or HxW");
            } else if (strcmp(arg, "--shapes") == 0) {
                c->m.shapes = val;
            } else if (strcmp(arg, "--mode") == 0) {
                if (strcmp(val, "graph") == 0)
                    c->o.mode = OPSCHED_PREDICT_GRAPH;
                else if (strcmp(val, "eager") == 0)
                    c->o.mode = OPSCHED_PREDICT_EAGER;
                else
                    return tool_usage_error("predict", "--mode must be graph or eager");
            } else if (strcmp(arg, "--fuse") == 0) {
                if (strcmp(val, "on") != 0 && strcmp(val, "off") != 0)
                    return tool_usage_error("predict", "--fuse must be on or off");
                c->o.fuse = strcmp(val, "on") == 0;
            } else if (strcmp(arg, "--format") == 0) {
                if (!tool_parse_format(val, &c->fmt))
                    return tool_usage_error("predict", "--format must be table, csv or json");
            } else {
                return tool_usage_error("predict", "unknown option '%s'", arg);
            }
            continue;
        }
        if (c->m.model) return tool_usage_error("predict", "one network at a time ('%s')", arg);
        c->m.model = arg;
    }
    if (!c->m.model) return tool_usage_error("predict", "which network? a zoo name or an .onnx file");
    return TOOL_EXIT_OK;
}

/* ---- output ----------------------------------------------------------------- */

static const char *op_label(const opsched_graph *g, const opsched_layer_prediction *l, char *buf,
                            size_t n)
{
    const opsched_node *node = opsched_graph_node(g, l->node);
    snprintf(buf, n, "%s%s", opsched_op_name(node->op), l->fused_relu ? "+Relu" : "");
    return buf;
}

static void fmt_pct(char *buf, size_t n, double v)
{
    if (isfinite(v))
        snprintf(buf, n, "%.1f%%", 100 * v);
    else
        snprintf(buf, n, "-");
}

static void fmt_num(char *buf, size_t n, const char *f, double v)
{
    if (isfinite(v))
        snprintf(buf, n, f, v);
    else
        snprintf(buf, n, "nan");
}


/* Where a layer's host time (eager) comes from: its configuration's
 * measured host enqueue time, the host model, or its family's cost per launch. */
static const char *host_source(const opsched_layer_prediction *l)
{
    switch (l->host_measured) {
    case OPSCHED_HOST_ROWS_RUN:
        return "run";
    case OPSCHED_HOST_ROWS_MODEL:
        return "model";
    case OPSCHED_HOST_ROWS_CONFIG:
        return "exact";
    default:
        return l->host_learned ? "learned" : "family";
    }
}

static void print_table(const predict_cmd *c, const opsched_graph *g,
                        const opsched_network_prediction *r, const opsched_predictor_info *in)
{
    printf("%s, batch %lld, on %s:%s, %s %s %s, %s mode, fuse %s\n", opsched_graph_name(g),
           (long long)(c->m.batch ? c->m.batch : 1), in->device.backend, in->device.name,
           in->math, in->layout, in->algo_policy, opsched_predict_mode_name(r->mode),
           c->o.fuse ? "on" : "off");
    int eager = r->mode == OPSCHED_PREDICT_EAGER;
    printf("  %4s %-32s %-17s %-9s %10s %8s %11s %-9s", "#", "layer", "op", "source", "ms",
           "+-err", "energy mJ", "energy");
    if (eager) printf(" %9s %-6s", "host ms", "host");
    printf("\n");
    int row = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_prediction *l = &r->layers[i];
        if (!l->launches) continue;
        char op[48], ms[24], err[16], mj[24];
        fmt_num(ms, sizeof(ms), "%.4f", l->p.ms);
        fmt_pct(err, sizeof(err), l->p.error);
        fmt_num(mj, sizeof(mj), "%.4f", l->p.energy_j * 1e3);
        printf("  %4d %-32.32s %-17s %-9s %10s %8s %11s %-9s", row++,
               opsched_graph_node(g, i)->name, op_label(g, l, op, sizeof(op)),
               opsched_pred_source_name(l->p.source), ms, err, mj,
               opsched_pred_source_name(l->p.energy_source));
        if (eager) printf(" %9.4f %-6s", l->host_ms, host_source(l));
        printf("\n");
    }
    const opsched_composition *k = &r->composition;
    char buf[64], err[16];
    printf("\n  layers               %d launches (%d exact, %d learned, %d roofline, %d none); "
           "%d views or fused Relus\n",
           r->launches, r->n_by_source[OPSCHED_SOURCE_EXACT],
           r->n_by_source[OPSCHED_SOURCE_LEARNED], r->n_by_source[OPSCHED_SOURCE_ROOFLINE],
           r->n_by_source[OPSCHED_SOURCE_NONE], r->n_by_source[OPSCHED_SOURCE_VIEW]);
    fmt_num(buf, sizeof(buf), "%.4f ms", r->layer_sum_ms);
    printf("  sum of layers        %s\n", buf);
    printf("  composition          %s: %.4f x sum + %.2f us x launches + %.2f us x %d fused + "
           "%.3f ms/GB x %.3f GB of weights in L2",
           k->source, k->scale, k->launch_us, k->fused_launch_us, r->fused_launches,
           k->weight_ms_per_gb, r->composed_weight_gb);
    if (strcmp(k->source, "fit") == 0)
        printf(" (%d network runs, %d all exact; rms %.1f%%)\n", k->runs, k->runs_exact,
               100 * k->rms_rel);
    else
        printf("\n");
    if (eager) {
        int measured = 0;
        for (int i = 0; i < r->n_layers; i++) measured += r->layers[i].launches && r->layers[i].host_measured;
        if (measured > 0)
            printf("  host (eager)         %d launches measured x %.4f, the others %.1f us per conv, "
                   "%.1f per conv+relu, %.1f per gemm, %.1f per other launch: %.4f ms\n",
                   measured, k->host_scale, k->host_us[OPSCHED_FAMILY_CONV],
                   k->host_us[OPSCHED_FAMILY_CONV_RELU], k->host_us[OPSCHED_FAMILY_GEMM],
                   k->host_us[OPSCHED_FAMILY_OTHER], r->host_ms);
        else
            printf("  host (eager)         %.1f us per conv, %.1f per conv+relu, %.1f per gemm, "
                   "%.1f per other launch: %.4f ms\n",
                   k->host_us[OPSCHED_FAMILY_CONV], k->host_us[OPSCHED_FAMILY_CONV_RELU],
                   k->host_us[OPSCHED_FAMILY_GEMM], k->host_us[OPSCHED_FAMILY_OTHER], r->host_ms);
    }
    fmt_num(buf, sizeof(buf), "%.4f ms", r->total_ms);
    fmt_pct(err, sizeof(err), r->total_error);
    printf("  predicted latency    %s  (+-%s)\n", buf, err);
    fmt_num(buf, sizeof(buf), "%.4f mJ", r->total_energy_j * 1e3);
    fmt_pct(err, sizeof(err), r->energy_error);
    printf("  energy per inference %s  (+-%s; composition %s)\n", buf, err, k->energy_source);
    char act[16], w[16], tot[16];
    printf("  peak memory          %sB (activations %sB + weights %sB; workspaces not "
           "included)\n",
           tool_human((double)r->peak_memory_bytes, tot, sizeof(tot)),
           tool_human((double)r->peak_activation_bytes, act, sizeof(act)),
           tool_human((double)r->weight_bytes, w, sizeof(w)));
    char ct[16], cf[16];
    fmt_pct(ct, sizeof(ct), r->coverage_time);
    fmt_pct(cf, sizeof(cf), r->coverage_flops);
    printf("  coverage (exact)     %s of the time, %s of the FLOPs", ct, cf);
    if (eager) {
        char ch[16];
        fmt_pct(ch, sizeof(ch), r->coverage_host);
        printf(", %s of the host time", ch);
    }
    printf("\n");
}

static void print_csv(const opsched_graph *g, const opsched_network_prediction *r)
{
    /* Eager mode adds the host's side (graph mode's columns unchanged). */
    int eager = r->mode == OPSCHED_PREDICT_EAGER;
    printf("kind,node,name,op,source,ms,error,energy_mj,energy_source,energy_error,flops,"
           "measurement_id,model%s\n",
           eager ? ",host_ms,host_source,host_measurement_id" : "");
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_prediction *l = &r->layers[i];
        if (!l->launches) continue;
        char op[48];
        printf("layer,%d,", i);
        tool_csv_field(stdout, opsched_graph_node(g, i)->name);
        printf(",%s,%s,%.9g,%.6g,%.9g,%s,%.6g,%lld,%lld,%s", op_label(g, l, op, sizeof(op)),
               opsched_pred_source_name(l->p.source), l->p.ms, l->p.error, l->p.energy_j * 1e3,
               opsched_pred_source_name(l->p.energy_source), l->p.energy_error,
               (long long)l->flops, (long long)l->p.measurement_id, l->p.model);
        if (eager)
            printf(",%.9g,%s,%lld", l->host_ms, host_source(l), (long long)l->host_measurement_id);
        printf("\n");
    }
    printf("total,,%s,,%s,%.9g,%.6g,%.9g,,%.6g,%lld,,", opsched_graph_name(g),
           r->composition.source, r->total_ms, r->total_error, r->total_energy_j * 1e3,
           r->energy_error, (long long)r->flops);
    /* host_source of the total: the share of the host time measured */
    if (eager) printf(",%.9g,%.6g,", r->host_ms, r->coverage_host);
    printf("\n");
}

static void print_json(const predict_cmd *c, const opsched_graph *g,
                       const opsched_network_prediction *r, const opsched_predictor_info *in)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return;
    cJSON_AddStringToObject(root, "model", opsched_graph_name(g));
    cJSON_AddNumberToObject(root, "batch", (double)(c->m.batch ? c->m.batch : 1));
    cJSON_AddStringToObject(root, "device", in->device.name);
    cJSON_AddStringToObject(root, "backend", in->device.backend);
    cJSON_AddStringToObject(root, "math", in->math);
    cJSON_AddStringToObject(root, "layout", in->layout);
    cJSON_AddStringToObject(root, "algo_policy", in->algo_policy);
    cJSON_AddStringToObject(root, "mode", opsched_predict_mode_name(r->mode));
    cJSON_AddBoolToObject(root, "fuse", c->o.fuse);
    cJSON *layers = cJSON_AddArrayToObject(root, "layers");
    for (int i = 0; layers && i < r->n_layers; i++) {
        const opsched_layer_prediction *l = &r->layers[i];
        if (!l->launches) continue;
        char op[48];
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddNumberToObject(o, "node", i);
        cJSON_AddStringToObject(o, "name", opsched_graph_node(g, i)->name);
        cJSON_AddStringToObject(o, "op", op_label(g, l, op, sizeof(op)));
        cJSON_AddStringToObject(o, "source", opsched_pred_source_name(l->p.source));
        cJSON_AddNumberToObject(o, "ms", l->p.ms);
        cJSON_AddNumberToObject(o, "error", l->p.error);
        cJSON_AddNumberToObject(o, "energy_j", l->p.energy_j);
        cJSON_AddStringToObject(o, "energy_source", opsched_pred_source_name(l->p.energy_source));
        cJSON_AddNumberToObject(o, "energy_error", l->p.energy_error);
        cJSON_AddNumberToObject(o, "flops", (double)l->flops);
        if (l->p.measurement_id > 0)
            cJSON_AddNumberToObject(o, "measurement_id", (double)l->p.measurement_id);
        if (l->p.model[0]) cJSON_AddStringToObject(o, "learned_model", l->p.model);
        if (r->mode == OPSCHED_PREDICT_EAGER) {
            cJSON_AddNumberToObject(o, "host_ms", l->host_ms);
            cJSON_AddStringToObject(o, "host_source", host_source(l));
            if (l->host_measurement_id > 0)
                cJSON_AddNumberToObject(o, "host_measurement_id", (double)l->host_measurement_id);
        }
        cJSON_AddItemToArray(layers, o);
    }
    cJSON *t = cJSON_AddObjectToObject(root, "totals");
    if (t) {
        cJSON_AddNumberToObject(t, "launches", r->launches);
        cJSON_AddNumberToObject(t, "layer_sum_ms", r->layer_sum_ms);
        cJSON_AddNumberToObject(t, "latency_ms", r->total_ms);
        cJSON_AddNumberToObject(t, "latency_error", r->total_error);
        cJSON_AddNumberToObject(t, "layer_energy_j", r->layer_energy_j);
        cJSON_AddNumberToObject(t, "energy_j", r->total_energy_j);
        cJSON_AddNumberToObject(t, "energy_error", r->energy_error);
        cJSON_AddNumberToObject(t, "peak_memory_bytes", (double)r->peak_memory_bytes);
        cJSON_AddNumberToObject(t, "peak_activation_bytes", (double)r->peak_activation_bytes);
        cJSON_AddNumberToObject(t, "weight_bytes", (double)r->weight_bytes);
        cJSON_AddNumberToObject(t, "flops", (double)r->flops);
        cJSON_AddNumberToObject(t, "coverage_time", r->coverage_time);
        cJSON_AddNumberToObject(t, "coverage_flops", r->coverage_flops);
        if (r->mode == OPSCHED_PREDICT_EAGER) {
            cJSON_AddNumberToObject(t, "host_ms", r->host_ms);
            cJSON_AddNumberToObject(t, "coverage_host", r->coverage_host);
        }
        cJSON *s = cJSON_AddObjectToObject(t, "sources");
        for (int k = 0; s && k < OPSCHED_SOURCE_COUNT; k++)
            cJSON_AddNumberToObject(s, opsched_pred_source_name((opsched_pred_source)k),
                                    r->n_by_source[k]);
    }
    const opsched_composition *k = &r->composition;
    cJSON *co = cJSON_AddObjectToObject(root, "composition");
    if (co) {
        cJSON_AddStringToObject(co, "source", k->source);
        cJSON_AddNumberToObject(co, "runs", k->runs);
        cJSON_AddNumberToObject(co, "runs_exact", k->runs_exact);
        cJSON_AddNumberToObject(co, "scale", k->scale);
        cJSON_AddNumberToObject(co, "launch_us", k->launch_us);
        cJSON_AddNumberToObject(co, "fused_launch_us", k->fused_launch_us);
        cJSON_AddNumberToObject(co, "weight_ms_per_gb", k->weight_ms_per_gb);
        cJSON *h = cJSON_AddObjectToObject(co, "host_us");
        for (int f = 0; h && f < OPSCHED_FAMILY_COUNT; f++)
            cJSON_AddNumberToObject(h, opsched_op_family_name((opsched_op_family)f), k->host_us[f]);
        if (r->mode == OPSCHED_PREDICT_EAGER) {
            cJSON_AddNumberToObject(co, "host_scale", k->host_scale);
            cJSON_AddNumberToObject(co, "host_runs", k->host_runs);
            cJSON_AddNumberToObject(co, "host_runs_measured", k->host_runs_measured);
        }
        cJSON_AddNumberToObject(co, "host_rms_rel", k->host_rms_rel);
        cJSON_AddNumberToObject(co, "rms_rel", k->rms_rel);
        cJSON_AddStringToObject(co, "energy_source", k->energy_source);
        cJSON_AddNumberToObject(co, "energy_scale", k->energy_scale);
        cJSON_AddNumberToObject(co, "gap_power_w", k->gap_power_w);
    }
    char *text = cJSON_Print(root);
    if (text) printf("%s\n", text);
    cJSON_free(text);
    cJSON_Delete(root);
}

/* ---- --leave-out ----------------------------------------------------------- */

typedef struct shapes_seen {
    const char *model;
    int64_t batches[64], sizes[64];
    int nb, ns;
} shapes_seen;

static void add_unique(int64_t *v, int *n, int cap, int64_t x)
{
    for (int i = 0; i < *n; i++)
        if (v[i] == x) return;
    if (*n < cap) v[(*n)++] = x;
}

static opsched_status collect_shape(const opsched_network_run_row *r, void *user)
{
    shapes_seen *s = user;
    if (strcmp(r->model, s->model) != 0 || r->height != r->width) return OPSCHED_OK;
    add_unique(s->batches, &s->nb, 64, r->batch);
    add_unique(s->sizes, &s->ns, 64, r->height);
    return OPSCHED_OK;
}

/* Leaves the network out: the signatures of g, and of a zoo network at
 * every batch and input size the database profiled it at; name gets the
 * model name its runs are stored under. */
static opsched_status leave_out(opsched_ctx *ctx, const predict_cmd *c, const opsched_graph *g,
                                char *name, size_t n, opsched_exclusion **out)
{
    const opsched_zoo_info *z = opsched_zoo_find(c->m.model);
    if (z)
        snprintf(name, n, "%s", z->name);
    else
        tool_model_run_name(c->m.model, name, n);
    opsched_exclusion *x = NULL;
    opsched_status st = opsched_exclusion_create(ctx, name, &x);
    if (st == OPSCHED_OK) st = opsched_exclusion_add_graph(x, g);
    if (st == OPSCHED_OK && z) {
        shapes_seen seen = {.model = z->name};
        opsched_store *s = NULL;
        st = opsched_store_open(ctx, c->a.db_path, OPSCHED_STORE_READ_ONLY, &s);
        opsched_device_row dev;
        if (st == OPSCHED_OK) {
            st = opsched_store_find_device(s, c->a.device, &dev);
            if (st != OPSCHED_OK) opsched_store_close(s);
        }
        if (st == OPSCHED_OK) {
            opsched_network_run_query q;
            memset(&q, 0, sizeof(q));
            q.device_id = dev.id;
            q.model = z->name;
            st = opsched_store_network_runs_get(s, &q, collect_shape, &seen);
            opsched_store_close(s);
        }
        if (st == OPSCHED_OK && seen.nb > 0 && seen.ns > 0)
            st = opsched_exclusion_add_zoo(x, z->name, seen.batches, seen.nb, seen.sizes, seen.ns);
    }
    if (st != OPSCHED_OK) {
        opsched_exclusion_free(x);
        return st;
    }
    *out = x;
    return OPSCHED_OK;
}

int cmd_predict(opsched_ctx *ctx, int argc, char **argv)
{
    predict_cmd c;
    memset(&c, 0, sizeof(c));
    predict_args_init(&c.a);
    opsched_predict_options_default(&c.o);
    c.fmt = TOOL_FMT_TABLE;
    int help = 0;
    int rc = parse_args(&c, argc, argv, &help);
    if (help) {
        predict_help();
        return TOOL_EXIT_OK;
    }
    if (rc != TOOL_EXIT_OK) return rc;
    rc = predict_args_finish(&c.a, ctx, "predict");
    if (rc != TOOL_EXIT_OK) return rc;
    opsched_graph *g = NULL;
    opsched_status st = tool_load_model(ctx, &c.m, &g);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, c.m.model);
    opsched_predictor *p = NULL;
    opsched_network_prediction *r = NULL;
    opsched_exclusion *x = NULL;
    char name[256];
    if (c.leave_out) {
        st = leave_out(ctx, &c, g, name, sizeof(name), &x);
        if (st != OPSCHED_OK) {
            opsched_graph_free(g);
            return tool_fail(ctx, st, "--leave-out");
        }
        c.a.po.exclude = x;
        c.a.po.exclude_model_runs = name;
        if (!c.a.quiet)
            fprintf(stderr, "opsched predict: leaving %s out (%d signatures)\n", name,
                    opsched_exclusion_count(x));
    }
    st = opsched_predictor_open(ctx, c.a.db_path, &c.a.po, &p);
    if (st != OPSCHED_OK) {
        opsched_exclusion_free(x);
        opsched_graph_free(g);
        return tool_fail(ctx, st, c.a.db_path);
    }
    st = opsched_predict_network(p, g, &c.o, &r);
    if (st != OPSCHED_OK) {
        rc = tool_fail(ctx, st, c.m.model);
    } else {
        opsched_predictor_info in;
        opsched_predictor_info_get(p, &in);
        if (c.fmt == TOOL_FMT_JSON)
            print_json(&c, g, r, &in);
        else if (c.fmt == TOOL_FMT_CSV)
            print_csv(g, r);
        else
            print_table(&c, g, r, &in);
    }
    opsched_network_prediction_free(r);
    opsched_predictor_free(p);
    opsched_exclusion_free(x);
    opsched_graph_free(g);
    return rc;
}
