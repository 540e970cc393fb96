/*
 * cmd_predict.c - `opsched predict <zoo-name|file.onnx> --db FILE`: a
 * network's latency, energy and peak memory predicted from operator
 * measurements, layer by layer with the source of each (exact, learned,
 * roofline, none), the totals composed for CUDA-graph or eager execution,
 * and the coverage: the share of the time and of the FLOPs that rests on
 * exact measurements.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "predict_args.h"

static const char predict_usage[] =
    "usage: opsched predict <zoo-name|file.onnx> (--db FILE | --data NAME) [options]\n\n"
    "Predicts a network's latency, energy per inference and peak memory on a\n"
    "measured device.  Each layer comes from, in order: an exact measurement of\n"
    "its configuration, the learned model of its operator family, a roofline\n"
    "from the device's calibration (opsched devices --calibrate), or nothing:\n"
    "an error naming those layers and the sweep that measures them.  A Conv\n"
    "whose only reader is a Relu is one fused layer (--fuse on), views cost\n"
    "nothing.  The total is composed as fitted to the database's\n"
    "profiled networks: graph mode (one CUDA graph) adds a gap per launch, eager\n"
    "mode also a host floor per launch.  Learned models are trained first when\n"
    "missing or stale.  The defaults (math tf32, layout auto, BatchNormalization\n"
    "folded) are those of opsched schedule --cost predict.\n";

enum { PR_MODE, PR_FUSE, PR_NO_TRAIN, PR_LEAVE_OUT, PR_ALLOW_PARTIAL };

static const tool_opt predict_opts[] = {
    {"mode", 0, "graph|eager", "execution to predict (default graph)", PR_MODE},
    {"fuse", 0, "on|off", "conv + its activation as one layer, exported patterns\n(x*Sigmoid(x), the GELU formula) as one operator (default on)", PR_FUSE},
    {"no-fit", 0, NULL, "use saved models only (learned source off when stale)", PR_NO_TRAIN},
    {"leave-out", 0, NULL,
     "predict as if the network had never been measured:\nits configurations (at this shape "
     "and, for a zoo\nnetwork, at every batch and size it was profiled at)\nand its network "
     "runs left out of lookups, training\nand the composition fit (what validate --loo does)",
     PR_LEAVE_OUT},
    {"allow-partial", 0, NULL,
     "when layers have no basis (no exact row, no learned\nmodel, no calibration), print the "
     "composition of the\nothers with its coverage (still exit status 1)",
     PR_ALLOW_PARTIAL},
    {NULL, 0, NULL, NULL, 0}};

/* Data-parallel training (with --train): opsched_ddp_timeline. */
enum { DP_GPUS, DP_COMM_DB, DP_COMM_DATA, DP_COMM_DEVICE, DP_BUCKET, DP_GRAD_COMM, DP_SLOWDOWN, DP_PER_PARAM, DP_ACCUM, DP_STEP, DP_VIEW,
       DP_STRATEGY, DP_WRAP, DP_PARAM_COMM, DP_PER_UNIT, DP_NODES, DP_NET_GBPS, DP_NET_US, DP_HOST,
       DP_UNIT_PARAM };

static const tool_opt ddp_opts[] = {
    {"gpus", 0, "N", "with --train: the iteration under PyTorch DDP on N GPUs\n(needs --comm-db)",
     DP_GPUS},
    {"comm-db", 0, "FILE", "collectives measured by opsched commbench on those GPUs", DP_COMM_DB},
    {"comm-data", 0, "NAME",
     "or the collectives shipped in data/NAME (h200x2, h200x4:\nH200s over NVLink)",
     DP_COMM_DATA},
    {"comm-device", 0, "NAME", "the GPU of --comm-db's rank 0 (when it holds several)",
     DP_COMM_DEVICE},
    {"bucket-mb", 0, "MB|auto",
     "DDP's bucket_cap_mb (25); auto: the cap of 1 to 200 MB\nthat predicts the shortest "
     "iteration",
     DP_BUCKET},
    {"grad-comm", 0, "f32|bf16|fp16",
     "the gradients' type on the wire: f32, or a bf16/fp16\ncompression hook (f32)",
     DP_GRAD_COMM},
    {"overlap-slowdown", 0, "S",
     "backward stretched by S ms per ms of communication\nresident during it (0)",
     DP_SLOWDOWN},
    {"per-param-us", 0, "US", "ddp: backward stretched by US per gradient (the reducer, 0)",
     DP_PER_PARAM},
    {"accumulation", 0, "N", "micro-steps per optimizer step, all but the last no_sync (1)",
     DP_ACCUM},
    {"step-ms", 0, "MS",
     "a measured one-GPU step: the predicted compute is scaled\nto it, the timeline keeps its "
     "shares",
     DP_STEP},
    {"grad-as-bucket-view", 0, NULL, "gradients live in DDP's buckets (no second copy)",
     DP_VIEW},
    {"strategy", 0, "ddp|fsdp",
     "DistributedDataParallel (ddp, default) or fully sharded\n(fsdp: FSDP2's fully_shard, "
     "FULL_SHARD)",
     DP_STRATEGY},
    {"fsdp-wrap", 0, "PATTERNS",
     "fsdp: the modules that are units, comma-separated\npatterns matched per dot component "
     "(\"layer*.*\": each\nResNet block; a \":f32\" ending gathers them in fp32);\nthe rest "
     "is the root unit (default: all of it)",
     DP_WRAP},
    {"param-comm", 0, "f32|bf16|fp16",
     "fsdp: MixedPrecisionPolicy's param_dtype: parameters\ngathered and computed in it (f32)",
     DP_PARAM_COMM},
    {"nodes", 0, "M",
     "the --gpus GPUs on M nodes (1): the collectives of one\nnode's GPUs (--comm-db) and the "
     "network between nodes",
     DP_NODES},
    {"inter-node-gbps", 0, "B", "with --nodes: the network per node, every NIC together,\nGbit/s "
                                "(e.g. 3200 for eight 400G NICs)", DP_NET_GBPS},
    {"inter-node-us", 0, "US", "with --nodes: latency per network hop (5)", DP_NET_US},
    {"host-ms", 0, "MS",
     "fsdp: the host time to issue the measured one-GPU step\n(with --step-ms; torch_ddp.py "
     "reports it)",
     DP_HOST},
    {"per-unit-us", 0, "US", "fsdp: host time per unit entered, forward and backward\n(its hooks, 0)", DP_PER_UNIT},
    {"per-unit-param-us", 0, "US", "fsdp: and per parameter of the unit entered (0)", DP_UNIT_PARAM},
    {NULL, 0, NULL, NULL, 0}};

typedef struct ddp_args {
    int gpus;
    const char *comm_db, *comm_data, *comm_device;
    opsched_ddp_options o;
    double step_ms;
    int bucket_auto;
    opsched_dtype grad_comm;
    int fsdp;                 /* --strategy fsdp */
    const char *wrap;         /* --fsdp-wrap */
    opsched_dtype param_comm; /* --param-comm */
    double per_unit_us, per_unit_param_us;
    double host_ms; /* --host-ms */
    opsched_comm_network net; /* --nodes, --inter-node-gbps, --inter-node-us */
    int net_us_set;
} ddp_args;

typedef struct predict_cmd {
    predict_args a;
    tool_model_opts m;
    opsched_predict_options o;
    tool_format fmt;
    int leave_out;      /* --leave-out: predict without the network's own measurements */
    int allow_partial;  /* --allow-partial: print a partial answer (exit status still 1) */
    tool_train_opts train; /* --train: the training graph's iteration instead */
    ddp_args ddp;          /* --gpus: the iteration under DDP */
    int plan;              /* opsched plan */
    double memory_limit;   /* plan --memory-limit, bytes */
} predict_cmd;

static const char plan_usage[] =
    "usage: opsched plan <zoo-name|file.onnx> --train --gpus N --memory-limit GB\n"
    "                    (--comm-db FILE | --comm-data NAME) (--db FILE | --data NAME) [options]\n\n"
    "Picks how to train a network on N GPUs: DDP at every bucket cap from 1 to 200 MB,\n"
    "with gradients as bucket views or not, and FSDP (full shard) with the\n"
    "model's modules as units at every depth of their names, each predicted as\n"
    "opsched predict --train --gpus N predicts it.  Prints them fastest first\n"
    "with their memory per rank, and the fastest that fits --memory-limit, with the\n"
    "predict command that shows it in full.  Exit status 1 when none fits.\n";

enum { PL_MEMORY };
static const tool_opt plan_opts[] = {
    {"memory-limit", 0, "GB", "the most memory a rank may use (GB = 1e9 bytes)", PL_MEMORY},
    {NULL, 0, NULL, NULL, 0}};

static int plan_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    predict_cmd *c = dest;
    (void)o;
    char *end = NULL;
    double x = strtod(v, &end);
    if (end == v || *end || !(x > 0) || !isfinite(x))
        return tool_usage_error(cmd, "--memory-limit %s: a positive number of GB", v);
    c->memory_limit = x * 1e9;
    return TOOL_EXIT_OK;
}

static int ddp_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    ddp_args *d = dest;
    int64_t n = 0;
    char *end = NULL;
    double x = 0;
    switch (o->id) {
    case DP_GPUS:
        if (!tool_parse_int(v, 1, 1 << 20, &n))
            return tool_usage_error(cmd, "--gpus %s: a count of at least 1", v);
        d->gpus = (int)n;
        return TOOL_EXIT_OK;
    case DP_COMM_DB: d->comm_db = v; return TOOL_EXIT_OK;
    case DP_COMM_DATA: d->comm_data = v; return TOOL_EXIT_OK;
    case DP_COMM_DEVICE: d->comm_device = v; return TOOL_EXIT_OK;
    case DP_ACCUM:
        if (!tool_parse_int(v, 1, 1 << 20, &n))
            return tool_usage_error(cmd, "--accumulation %s: a count of at least 1", v);
        d->o.accumulation_steps = (int)n;
        return TOOL_EXIT_OK;
    case DP_VIEW: d->o.gradient_as_bucket_view = 1; return TOOL_EXIT_OK;
    case DP_STRATEGY:
        if (strcmp(v, "ddp") == 0) d->fsdp = 0;
        else if (strcmp(v, "fsdp") == 0) d->fsdp = 1;
        else return tool_usage_error(cmd, "--strategy %s: ddp or fsdp", v);
        return TOOL_EXIT_OK;
    case DP_WRAP:
        if (!*v) return tool_usage_error(cmd, "--fsdp-wrap: give module patterns, e.g. 'layer*.*'");
        d->wrap = v;
        return TOOL_EXIT_OK;
    case DP_NODES:
        if (!tool_parse_int(v, 1, 1 << 20, &n))
            return tool_usage_error(cmd, "--nodes %s: a count of at least 1", v);
        d->net.nodes = (int)n;
        return TOOL_EXIT_OK;
    case DP_PARAM_COMM:
        if (strcmp(v, "f32") == 0) d->param_comm = OPSCHED_F32;
        else if (strcmp(v, "bf16") == 0) d->param_comm = OPSCHED_BF16;
        else if (strcmp(v, "fp16") == 0 || strcmp(v, "f16") == 0) d->param_comm = OPSCHED_F16;
        else return tool_usage_error(cmd, "--param-comm %s: f32, bf16 or fp16", v);
        return TOOL_EXIT_OK;
    case DP_GRAD_COMM:
        if (strcmp(v, "f32") == 0) d->grad_comm = OPSCHED_F32;
        else if (strcmp(v, "bf16") == 0) d->grad_comm = OPSCHED_BF16;
        else if (strcmp(v, "fp16") == 0 || strcmp(v, "f16") == 0) d->grad_comm = OPSCHED_F16;
        else return tool_usage_error(cmd, "--grad-comm %s: f32, bf16 or fp16", v);
        d->o.comm_bytes_scale = d->grad_comm == OPSCHED_F32 ? 1.0 : 0.5;
        return TOOL_EXIT_OK;
    case DP_BUCKET:
        if (strcmp(v, "auto") == 0) {
            d->bucket_auto = 1;
            return TOOL_EXIT_OK;
        }
        break;
    default: break;
    }
    x = strtod(v, &end);
    int nonneg = o->id == DP_SLOWDOWN || o->id == DP_PER_PARAM || o->id == DP_PER_UNIT ||
                 o->id == DP_UNIT_PARAM ||
                 o->id == DP_NET_US;
    if (end == v || *end || !(x >= 0) || !isfinite(x) || (!nonneg && !(x > 0)))
        return tool_usage_error(cmd, "--%s %s: a %snumber", o->name, v,
                                nonneg ? "non-negative " : "positive ");
    if (o->id == DP_BUCKET) d->o.bucket_cap_mb = x;
    else if (o->id == DP_SLOWDOWN) d->o.overlap_slowdown = x;
    else if (o->id == DP_PER_PARAM) d->o.per_param_us = x;
    else if (o->id == DP_PER_UNIT) d->per_unit_us = x;
    else if (o->id == DP_UNIT_PARAM) d->per_unit_param_us = x;
    else if (o->id == DP_HOST) d->host_ms = x;
    else if (o->id == DP_NET_GBPS) d->net.net_gbs = x / 8.0;
    else if (o->id == DP_NET_US) {
        d->net.net_us = x;
        d->net_us_set = 1;
    }
    else d->step_ms = x;
    return TOOL_EXIT_OK;
}

static int predict_opt(void *dest, const char *cmd, const tool_opt *o, const char *val)
{
    predict_cmd *c = dest;
    switch (o->id) {
    case PR_MODE:
        if (strcmp(val, "graph") == 0) c->o.mode = OPSCHED_PREDICT_GRAPH;
        else if (strcmp(val, "eager") == 0) c->o.mode = OPSCHED_PREDICT_EAGER;
        else return tool_usage_error(cmd, "--mode wants graph or eager, got '%s'", val);
        return TOOL_EXIT_OK;
    case PR_FUSE: return tool_arg_on_off(cmd, "--fuse", val, &c->o.fuse);
    case PR_NO_TRAIN: c->a.po.train = 0; return TOOL_EXIT_OK;
    case PR_ALLOW_PARTIAL: c->allow_partial = 1; return TOOL_EXIT_OK;
    default: c->leave_out = 1; return TOOL_EXIT_OK;
    }
}

static int parse_args(predict_cmd *c, int argc, char **argv)
{
    const tool_optgroup groups[] = {
        {"model options", tool_model_optlist, tool_model_opt, &c->m},
        {"prediction options", predict_opts, predict_opt, c},
        {"prediction data options", predict_data_optlist, predict_args_opt, &c->a},
        {"model fitting options", predict_train_optlist, predict_args_opt, &c->a},
        {"training iteration", tool_train_optlist, tool_train_opt, &c->train},
        {"data-parallel training", ddp_opts, ddp_opt, &c->ddp},
        {"output options", tool_format_optlist, tool_format_opt, &c->fmt},
        {"plan options", plan_opts, plan_opt, c}};
    const char *cmd = c->plan ? "plan" : "predict";
    const tool_cli cli = {cmd, c->plan ? plan_usage : predict_usage, NULL, groups,
                          c->plan ? 8 : 7, 1, "network"};
    const char *pos[1];
    int n_pos = 0;
    int rc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (rc != TOOL_EXIT_OK) return rc;
    if (!n_pos) return tool_usage_error("predict", "which network? a zoo name or an .onnx file");
    c->m.model = pos[0];
    if (c->m.fold_bn < 0) c->m.fold_bn = !c->train.on; /* BatchNorm trains */
    if (c->plan && (!c->train.on || !c->ddp.gpus || !(c->memory_limit > 0)))
        return tool_usage_error("plan", "plan picks how to train on several GPUs: --train, "
                                        "--gpus N and --memory-limit GB");
    if (c->ddp.gpus && !c->train.on)
        return tool_usage_error("predict", "--gpus predicts data-parallel training: add --train");
    if (c->ddp.gpus && !c->ddp.comm_db == !c->ddp.comm_data)
        return tool_usage_error("predict", "--gpus needs the collectives of those GPUs: "
                                           "--comm-db FILE (opsched commbench --db FILE measures "
                                           "them) or --comm-data NAME, one of the two");
    if (c->ddp.gpus && c->fmt != TOOL_FMT_TABLE)
        return tool_usage_error("predict", "--gpus prints a table (--format table)");
    if (!c->ddp.gpus && (c->ddp.comm_db || c->ddp.comm_data || c->ddp.step_ms > 0))
        return tool_usage_error("predict", "--comm-db, --comm-data and --step-ms go with --gpus N");
    if (c->ddp.net.nodes > 1) {
        if (c->ddp.gpus % c->ddp.net.nodes)
            return tool_usage_error("predict", "--gpus %d on --nodes %d: not the same number of "
                                               "GPUs on every node",
                                    c->ddp.gpus, c->ddp.net.nodes);
        if (!(c->ddp.net.net_gbs > 0))
            return tool_usage_error("predict", "--nodes %d needs the network between them: "
                                               "--inter-node-gbps B (every NIC of a node "
                                               "together)",
                                    c->ddp.net.nodes);
        c->ddp.net.gpus_per_node = c->ddp.gpus / c->ddp.net.nodes;
    } else if (c->ddp.net.net_gbs > 0 || c->ddp.net_us_set)
        return tool_usage_error("predict", "--inter-node-gbps and --inter-node-us go with --nodes M");
    if (!c->ddp.fsdp && !c->plan &&
        (c->ddp.wrap || c->ddp.param_comm != OPSCHED_F32 || c->ddp.per_unit_us > 0 ||
         c->ddp.per_unit_param_us > 0 || c->ddp.host_ms > 0))
        return tool_usage_error("predict", "--fsdp-wrap, --param-comm, --per-unit-us, "
                                           "--per-unit-param-us and --host-ms go with "
                                           "--strategy fsdp");
    if (c->ddp.fsdp && (c->ddp.bucket_auto || c->ddp.o.accumulation_steps > 1 ||
                        c->ddp.o.gradient_as_bucket_view || c->ddp.o.per_param_us > 0))
        return tool_usage_error("predict", "--bucket-mb, --accumulation, --grad-as-bucket-view "
                                           "and --per-param-us are DDP's (--strategy ddp)");
    return tool_train_apply("predict", &c->train, &c->m);
}

/* ---- output ----------------------------------------------------------------- */

static const char *op_label(const opsched_graph *g, const opsched_layer_prediction *l, char *buf,
                            size_t n)
{
    const opsched_node *node = opsched_graph_node(g, l->node);
    snprintf(buf, n, "%s%s", opsched_node_op_name(node), l->fused_relu ? "+Relu" : "");
    return buf;
}

static void fmt_pct(char *buf, size_t n, double v)
{
    if (isfinite(v))
        snprintf(buf, n, "%.1f%%", 100 * v);
    else
        snprintf(buf, n, "-");
}

/* A value that is not a number (no prediction) reads "-". */
static void fmt_num(char *buf, size_t n, const char *f, double v)
{
    if (isfinite(v))
        snprintf(buf, n, f, v);
    else
        snprintf(buf, n, "-");
}

/* What the output says about a prediction with layers that have no basis:
 * the composition of the others (partial_ms), their layer sum and the
 * share of it that is exact. */
typedef struct answer {
    int partial;          /* launches without a prediction */
    double ms, layer_sum_ms, coverage_time;
    int unpredicted;
} answer;

static void answer_get(const opsched_network_prediction *r, answer *a)
{
    double sum = 0, exact = 0;
    memset(a, 0, sizeof(*a));
    a->unpredicted = r->launches_unpredicted;
    a->partial = a->unpredicted > 0;
    if (!a->partial) {
        a->ms = r->total_ms;
        a->layer_sum_ms = r->layer_sum_ms;
        a->coverage_time = r->coverage_time;
        return;
    }
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_prediction *l = &r->layers[i];
        if (!l->launches || !isfinite(l->p.ms)) continue;
        sum += l->p.ms;
        if (l->p.source == OPSCHED_SOURCE_EXACT) exact += l->p.ms;
    }
    a->ms = r->partial_ms;
    a->layer_sum_ms = sum;
    a->coverage_time = sum > 0 ? exact / sum : 0;
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

/* The settings a prediction was asked under, as the messages name them:
 * math, layout and algorithm policy, and the cache state when it is not
 * the default (hot). */
static const char *settings_text(const opsched_predictor_info *in, char *buf, size_t n)
{
    snprintf(buf, n, "%s %s %s%s%s", in->math, in->layout, in->algo_policy,
             strcmp(in->cache, "hot") != 0 ? ", cache " : "",
             strcmp(in->cache, "hot") != 0 ? in->cache : "");
    return buf;
}

/* The batch predicted: --batch, else the first input's leading dim (as
 * --shapes gave it), else 1. */
static long long batch_of(const predict_cmd *c, const opsched_graph *g)
{
    if (c->m.batch) return (long long)c->m.batch;
    if (opsched_graph_num_inputs(g) > 0) {
        const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_input(g, 0));
        if (t && t->shape.ndim > 0 && t->shape.d[0] > 0) return (long long)t->shape.d[0];
    }
    return 1;
}

static void print_table(const predict_cmd *c, const opsched_graph *g,
                        const opsched_network_prediction *r, const opsched_predictor_info *in)
{
    char settings[96];
    printf("%s, batch %lld, on %s:%s, %s, bn %s, %s mode, fuse %s\n", opsched_graph_name(g),
           batch_of(c, g), in->device.backend, in->device.name,
           settings_text(in, settings, sizeof(settings)), c->m.fold_bn ? "fold" : "keep",
           opsched_predict_mode_name(r->mode), c->o.fuse ? "on" : "off");
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
    answer ans;
    answer_get(r, &ans);
    fmt_num(buf, sizeof(buf), "%.4f ms", ans.layer_sum_ms);
    printf("  sum of layers        %s%s\n", buf,
           ans.partial ? " (the layers with a prediction)" : "");
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
    if (ans.partial) {
        printf("  predicted latency    PARTIAL: %.4f ms for %d of %d launches (%.1f%%); %d "
               "without a prediction\n",
               ans.ms, r->launches - ans.unpredicted, r->launches,
               100.0 * (r->launches - ans.unpredicted) / r->launches, ans.unpredicted);
    } else {
        fmt_num(buf, sizeof(buf), "%.4f ms", r->total_ms);
        fmt_pct(err, sizeof(err), r->total_error);
        printf("  predicted latency    %s  (+-%s)\n", buf, err);
    }
    if (isfinite(r->total_energy_j)) {
        fmt_num(buf, sizeof(buf), "%.4f mJ", r->total_energy_j * 1e3);
        fmt_pct(err, sizeof(err), r->energy_error);
        printf("  energy per %-9s %s  (+-%s; composition %s)\n",
               c->train.on ? "iteration" : "inference", buf, err, k->energy_source);
    } else {
        int no_energy = 0;
        for (int i = 0; i < r->n_layers; i++)
            no_energy += r->layers[i].launches && !isfinite(r->layers[i].p.energy_j);
        printf("  energy per inference n/a (%d launches without an energy prediction: measured "
               "without energy and no power model)\n",
               no_energy);
    }
    char act[16], w[16], tot[16];
    printf("  peak memory          %sB (activations %sB + weights %sB; workspaces not "
           "included)\n",
           tool_human((double)r->peak_memory_bytes, tot, sizeof(tot)),
           tool_human((double)r->peak_activation_bytes, act, sizeof(act)),
           tool_human((double)r->weight_bytes, w, sizeof(w)));
    char ct[16], cf[16];
    fmt_pct(ct, sizeof(ct), ans.coverage_time);
    fmt_pct(cf, sizeof(cf), r->coverage_flops);
    printf("  coverage (exact)     %s of the %stime, %s of the FLOPs", ct,
           ans.partial ? "predicted layers' " : "", cf);
    if (eager) {
        char ch[16];
        fmt_pct(ch, sizeof(ch), r->coverage_host);
        printf(", %s of the host time", ch);
    }
    printf("\n");
}

static opsched_status print_csv(opsched_ctx *ctx, const opsched_graph *g,
                                const opsched_network_prediction *r)
{
    /* Eager mode adds the host's side (graph mode's columns unchanged). */
    int eager = r->mode == OPSCHED_PREDICT_EAGER;
    opsched_csv_writer *w = NULL;
    opsched_status st = opsched_csv_writer_create(ctx, stdout, &w);
    if (st == OPSCHED_OK)
        st = opsched_csv_header(w, eager ? "kind,node,name,op,source,ms,error,energy_mj,"
                                           "energy_source,energy_error,flops,measurement_id,model,"
                                           "host_ms,host_source,host_measurement_id"
                                         : "kind,node,name,op,source,ms,error,energy_mj,"
                                           "energy_source,energy_error,flops,measurement_id,model");
    for (int i = 0; st == OPSCHED_OK && i < r->n_layers; i++) {
        const opsched_layer_prediction *l = &r->layers[i];
        if (!l->launches) continue;
        char op[48];
        opsched_csv_str(w, "layer");
        opsched_csv_int(w, i);
        opsched_csv_str(w, opsched_graph_node(g, i)->name);
        opsched_csv_str(w, op_label(g, l, op, sizeof(op)));
        opsched_csv_str(w, opsched_pred_source_name(l->p.source));
        opsched_csv_double(w, l->p.ms, "%.9g");
        opsched_csv_double(w, l->p.error, "%.6g");
        opsched_csv_double(w, l->p.energy_j * 1e3, "%.9g");
        opsched_csv_str(w, opsched_pred_source_name(l->p.energy_source));
        opsched_csv_double(w, l->p.energy_error, "%.6g");
        opsched_csv_int(w, l->flops);
        opsched_csv_int(w, l->p.measurement_id);
        opsched_csv_str(w, l->p.model);
        if (eager) {
            opsched_csv_double(w, l->host_ms, "%.9g");
            opsched_csv_str(w, host_source(l));
            opsched_csv_int(w, l->host_measurement_id);
        }
        st = opsched_csv_end_row(w);
    }
    /* The total's row: kind "partial" when layers have no prediction (its
     * ms the composition of the others). */
    answer ans;
    answer_get(r, &ans);
    if (st == OPSCHED_OK) {
        opsched_csv_str(w, ans.partial ? "partial" : "total");
        opsched_csv_empty(w);
        opsched_csv_str(w, opsched_graph_name(g));
        opsched_csv_empty(w);
        opsched_csv_str(w, r->composition.source);
        opsched_csv_double(w, ans.ms, "%.9g");
        opsched_csv_double(w, r->total_error, "%.6g");
        opsched_csv_double(w, r->total_energy_j * 1e3, "%.9g");
        opsched_csv_empty(w);
        opsched_csv_double(w, r->energy_error, "%.6g");
        opsched_csv_int(w, r->flops);
        opsched_csv_empty(w);
        opsched_csv_empty(w);
        /* host_source of the total: the share of the host time measured */
        if (eager) {
            opsched_csv_double(w, r->host_ms, "%.9g");
            opsched_csv_double(w, r->coverage_host, "%.6g");
            opsched_csv_empty(w);
        }
        st = opsched_csv_end_row(w);
    }
    opsched_csv_writer_free(w);
    return st;
}

/* A number, or null when it is not one (no prediction). */
static void json_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static void print_json(const predict_cmd *c, const opsched_graph *g,
                       const opsched_network_prediction *r, const opsched_predictor_info *in)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return;
    cJSON_AddStringToObject(root, "model", opsched_graph_name(g));
    cJSON_AddNumberToObject(root, "batch", (double)batch_of(c, g));
    cJSON_AddStringToObject(root, "device", in->device.name);
    cJSON_AddStringToObject(root, "backend", in->device.backend);
    cJSON_AddStringToObject(root, "math", in->math);
    cJSON_AddStringToObject(root, "layout", in->layout);
    cJSON_AddStringToObject(root, "algo_policy", in->algo_policy);
    cJSON_AddStringToObject(root, "cache", in->cache);
    cJSON_AddStringToObject(root, "bn", c->m.fold_bn ? "fold" : "keep");
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
        json_num(o, "ms", l->p.ms);
        json_num(o, "error", l->p.error);
        json_num(o, "energy_j", l->p.energy_j);
        cJSON_AddStringToObject(o, "energy_source", opsched_pred_source_name(l->p.energy_source));
        json_num(o, "energy_error", l->p.energy_error);
        cJSON_AddNumberToObject(o, "flops", (double)l->flops);
        if (l->p.measurement_id > 0)
            cJSON_AddNumberToObject(o, "measurement_id", (double)l->p.measurement_id);
        if (l->p.model[0]) cJSON_AddStringToObject(o, "learned_model", l->p.model);
        if (r->mode == OPSCHED_PREDICT_EAGER) {
            json_num(o, "host_ms", l->host_ms);
            cJSON_AddStringToObject(o, "host_source", host_source(l));
            if (l->host_measurement_id > 0)
                cJSON_AddNumberToObject(o, "host_measurement_id", (double)l->host_measurement_id);
        }
        cJSON_AddItemToArray(layers, o);
    }
    answer ans;
    answer_get(r, &ans);
    cJSON *t = cJSON_AddObjectToObject(root, "totals");
    if (t) {
        cJSON_AddNumberToObject(t, "launches", r->launches);
        /* partial: latency_ms composes the launches with a prediction */
        cJSON_AddBoolToObject(t, "partial", ans.partial);
        cJSON_AddNumberToObject(t, "launches_unpredicted", ans.unpredicted);
        cJSON_AddNumberToObject(t, "layer_sum_ms", ans.layer_sum_ms);
        cJSON_AddNumberToObject(t, "latency_ms", ans.ms);
        if (isfinite(r->total_error)) cJSON_AddNumberToObject(t, "latency_error", r->total_error);
        /* energy: null when a launch has no energy prediction */
        json_num(t, "layer_energy_j", r->layer_energy_j);
        json_num(t, "energy_j", r->total_energy_j);
        json_num(t, "energy_error", r->energy_error);
        cJSON_AddNumberToObject(t, "peak_memory_bytes", (double)r->peak_memory_bytes);
        cJSON_AddNumberToObject(t, "peak_activation_bytes", (double)r->peak_activation_bytes);
        cJSON_AddNumberToObject(t, "weight_bytes", (double)r->weight_bytes);
        cJSON_AddNumberToObject(t, "flops", (double)r->flops);
        cJSON_AddNumberToObject(t, "coverage_time", ans.coverage_time);
        json_num(t, "coverage_flops", r->coverage_flops);
        if (r->mode == OPSCHED_PREDICT_EAGER) {
            json_num(t, "host_ms", r->host_ms);
            json_num(t, "coverage_host", r->coverage_host);
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
    if (c->train.on) {
        /* the training graph's runs are stored under their own name */
        char base[512];
        snprintf(base, sizeof(base), "%s", name);
        if (opsched_training_run_name(base, &c->train.o, name, n) < 0)
            memcpy(name, base, n); /* cannot happen: names are short */
        name[n - 1] = 0;
    }
    opsched_exclusion *x = NULL;
    opsched_status st = opsched_exclusion_create(ctx, name, &x);
    if (st == OPSCHED_OK) st = opsched_exclusion_add_graph(x, g);
    if (st == OPSCHED_OK && z) {
        shapes_seen seen = {.model = z->name};
        opsched_store *s = NULL;
        st = opsched_store_open(ctx, c->a.db_path, OPSCHED_STORE_READ_ONLY, &s);
        opsched_device_row dev;
        if (st == OPSCHED_OK) {
            st = opsched_store_find_device(s, c->a.target, &dev);
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

/* ---- what is missing, what the database holds, what would fill it ---------------- */

/* The sweep that measures every layer of the network under the settings
 * predicted (docs/SWEEP.md, --for-model): each setting that selects the
 * rows a prediction reads (math, layout, algorithm policy, cache state,
 * fused or not, BatchNormalization folded or kept, batch and input size),
 * so that the rows it writes are the ones missing. */
static void print_fill_command(const predict_cmd *c, const opsched_graph *g, const char *backend,
                               const char *math, const char *layout, const char *algo,
                               const char *cache)
{
    char sizes[64] = "";
    long long batch = (long long)c->m.batch;
    if (opsched_graph_num_inputs(g) > 0) {
        const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_input(g, 0));
        if (t->shape.ndim == 4) {
            snprintf(sizes, sizeof(sizes), " --input-size %lldx%lld", (long long)t->shape.d[2],
                     (long long)t->shape.d[3]);
            if (!batch) batch = (long long)t->shape.d[0];
        }
    }
    int algo_set = strcmp(algo, "heuristic") != 0, cold = strcmp(cache, "hot") != 0;
    char batch_arg[32] = "";
    if (!c->m.shapes || c->m.batch)
        snprintf(batch_arg, sizeof(batch_arg), " --batch %lld", batch > 0 ? batch : 1);
    fprintf(stderr,
            "opsched predict: to measure them: opsched sweep --for-model %s --db %s%s%s%s%s "
            "--math %s --layout %s%s%s%s%s%s%s%s%s\n",
            c->m.model, c->a.db ? c->a.db : "FILE", c->m.shapes ? " --shapes " : "",
            c->m.shapes ? c->m.shapes : "", batch_arg, sizes, math, layout,
            algo_set ? " --algo " : "", algo_set ? algo : "", cold ? " --cache " : "",
            cold ? cache : "", backend ? " --backend " : "", backend ? backend : "",
            c->o.fuse ? "" : " --no-fuse", c->m.fold_bn ? "" : " --bn keep");
    if (!c->a.db)
        fprintf(stderr, "opsched predict: (the shipped data is read-only: measure into a "
                        "database of your own, then predict with --db FILE)\n");
}

/* Launches without a basis: the first few named, the count, what the
 * database holds and the sweep that would measure them. */
static void explain_missing(opsched_ctx *ctx, const predict_cmd *c, const opsched_graph *g,
                            const opsched_network_prediction *r, const opsched_predictor_info *in)
{
    enum { SHOWN = 5 };
    char settings[96];
    fprintf(stderr,
            "opsched predict: %d of %d launches of %s have no basis (no exact measurement, no "
            "learned model, no calibration under %s:%s %s):",
            r->launches_unpredicted, r->launches, opsched_graph_name(g), in->device.backend,
            in->device.name, settings_text(in, settings, sizeof(settings)));
    int shown = 0;
    for (int i = 0; i < r->n_layers && shown < SHOWN; i++) {
        const opsched_layer_prediction *l = &r->layers[i];
        if (!l->launches || isfinite(l->p.ms)) continue;
        char op[48];
        fprintf(stderr, "%s %s (%s)", shown ? "," : "", opsched_graph_node(g, i)->name,
                op_label(g, l, op, sizeof(op)));
        shown++;
    }
    if (r->launches_unpredicted > shown)
        fprintf(stderr, " and %d more", r->launches_unpredicted - shown);
    fprintf(stderr, "\n");
    tool_print_holdings(ctx, "predict", c->a.db_path);
    print_fill_command(c, g, in->device.backend, in->math, in->layout, in->algo_policy, in->cache);
}

/* No measurement at all under the settings: every layer would rest on the
 * calibration's roofline. */
static void explain_nothing(opsched_ctx *ctx, const predict_cmd *c, const opsched_graph *g,
                            const opsched_predictor_info *in)
{
    char settings[96];
    fprintf(stderr,
            "opsched predict: the database has no measurement of %s:%s under %s: every "
            "layer of %s would rest on the calibration's roofline (--allow-partial prints it)\n",
            in->device.backend, in->device.name, settings_text(in, settings, sizeof(settings)),
            opsched_graph_name(g));
    tool_print_holdings(ctx, "predict", c->a.db_path);
    print_fill_command(c, g, in->device.backend, in->math, in->layout, in->algo_policy, in->cache);
}

/* The roofline share of the predicted time above which predict warns. */
#define ROOFLINE_WARN_SHARE 0.25

/* A prediction that rests mostly on the roofline: how much, and the sweep
 * that would measure it (stderr, so the answer on stdout stays clean). */
static void warn_roofline(const predict_cmd *c, const opsched_graph *g,
                          const opsched_network_prediction *r, const opsched_predictor_info *in)
{
    double roof = 0, all = 0;
    int n_roof = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_prediction *l = &r->layers[i];
        if (!l->launches || !isfinite(l->p.ms)) continue;
        all += l->p.ms;
        if (l->p.source == OPSCHED_SOURCE_ROOFLINE) {
            roof += l->p.ms;
            n_roof++;
        }
    }
    if (!(all > 0) || roof / all < ROOFLINE_WARN_SHARE) return;
    fprintf(stderr,
            "opsched predict: warning: %.0f%% of the predicted layer time (%d launches) rests on "
            "the calibrated roofline, not on measurements of these operators; the +-%.1f%% "
            "says so\n",
            100.0 * roof / all, n_roof, 100.0 * r->total_error);
    if (c->train.on) /* sweep --for-model takes the forward graph only */
        fprintf(stderr,
                "opsched predict: to measure the training graph's layers: opsched profile %s "
                "--train --isolated --db FILE%s%s --math %s --layout %s\n",
                c->m.model, c->m.shapes ? " --shapes " : "", c->m.shapes ? c->m.shapes : "",
                in->math, in->layout);
    else
        print_fill_command(c, g, in->device.backend, in->math, in->layout, in->algo_policy,
                           in->cache);
}

/* Prints the prediction; the exit status: 1 when layers have no basis or
 * the database measured nothing under these settings (the answer printed
 * only with --allow-partial). */
static int report(opsched_ctx *ctx, const predict_cmd *c, const opsched_graph *g,
                  const opsched_network_prediction *r, const opsched_predictor *p)
{
    opsched_predictor_info in;
    opsched_status st = opsched_predictor_info_get(p, &in);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "predictor");
    int missing = r->launches_unpredicted > 0;
    int nothing = !missing && in.rows == 0 && r->n_by_source[OPSCHED_SOURCE_EXACT] == 0 &&
                  r->n_by_source[OPSCHED_SOURCE_LEARNED] == 0;
    if (!(missing || nothing) || c->allow_partial) {
        if (c->fmt == TOOL_FMT_JSON)
            print_json(c, g, r, &in);
        else if (c->fmt == TOOL_FMT_CSV && (st = print_csv(ctx, g, r)) != OPSCHED_OK)
            return tool_fail(ctx, st, "CSV");
        else if (c->fmt == TOOL_FMT_TABLE)
            print_table(c, g, r, &in);
        fflush(stdout);
    }
    if (missing) explain_missing(ctx, c, g, r, &in);
    else if (nothing) explain_nothing(ctx, c, g, &in);
    else warn_roofline(c, g, r, &in);
    return missing || nothing ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
}

static opsched_status first_device(const opsched_collective_row *row, void *user)
{
    char *name = user;
    if (!name[0]) snprintf(name, 128, "%s", row->device_name);
    return OPSCHED_OK;
}

/* " (M nodes of G GPUs, B Gbit/s and L us between nodes)" or "". */
static const char *nodes_desc(const ddp_args *d, char *buf, size_t n)
{
    if (d->net.nodes <= 1) return "";
    snprintf(buf, n, " (%d nodes of %d, %.0f Gbit/s and %g us between nodes)", d->net.nodes,
             d->net.gpus_per_node, d->net.net_gbs * 8, d->net.net_us);
    return buf;
}

/* A collective's cost over nodes: one node's fit and the network, or,
 * where the database holds the collective measured over all the nodes,
 * that fit (measured > 0). */
typedef struct node_cost {
    opsched_collective c;
    const opsched_comm_fit *fit; /* over the GPUs of one node, or of all (measured) */
    const opsched_comm_network *net;
    int measured;
} node_cost;

static double nodes_cost(double bytes, void *user)
{
    const node_cost *k = user;
    if (k->net->nodes <= 1 || k->measured) return opsched_comm_fit_eval(k->fit, bytes);
    return opsched_comm_multinode_us(k->c, bytes, k->fit, k->net, NULL);
}

/* The fits of n collectives over --gpus ranks from --comm-db or
 * --comm-data; comm_gpu gets the GPU they were measured on. */
static int comm_fits(opsched_ctx *ctx, const predict_cmd *c, const opsched_predictor *p,
                     const opsched_collective *which, const opsched_dtype *dt, int n,
                     opsched_comm_fit *fits, int *measured)
{
    const ddp_args *d = &c->ddp;
    char path[4096], comm_gpu[128] = "";
    opsched_store *store = NULL;
    int rc = tool_db_or_shipped(ctx, "predict", d->comm_db, d->comm_data, path, sizeof(path));
    if (rc != TOOL_EXIT_OK) return rc;
    opsched_status st = opsched_store_open(ctx, path, OPSCHED_STORE_READ_ONLY, &store);
    for (int i = 0; i < n && st == OPSCHED_OK; i++) {
        measured[i] = 0;
        if (d->net.nodes > 1 &&
            opsched_comm_fit_from_store_nodes(ctx, store, d->comm_device, which[i], dt[i],
                                              d->gpus, d->net.nodes, &fits[i]) == OPSCHED_OK) {
            measured[i] = 1; /* measured over those nodes: no model needed */
            continue;
        }
        opsched_ctx_clear_error(ctx);
        st = d->net.nodes > 1 && d->net.gpus_per_node == 1
                 ? OPSCHED_OK /* one GPU per node: no NVLink part */
                 : opsched_comm_fit_from_store(ctx, store, d->comm_device, which[i], dt[i],
                                               d->net.nodes > 1 ? d->net.gpus_per_node : d->gpus,
                                               &fits[i]);
    }
    if (st == OPSCHED_OK)
        (void)opsched_store_collectives(store, d->comm_device, first_device, comm_gpu);
    opsched_store_close(store);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, d->comm_db ? d->comm_db : d->comm_data);
    for (int i = 0; i < n && d->net.nodes > 1 && !c->plan; i++)
        fprintf(stderr, "opsched predict: %s over %d nodes: %s\n",
                opsched_collective_name(which[i]), d->net.nodes,
                measured[i] ? "measured there (the database's fit; --inter-node-gbps unused)"
                            : "one node's fit and the network (the two-level model)");
    opsched_predictor_info in;
    static int noted; /* once per process: plan asks many times */
    if (d->step_ms <= 0 && !noted && opsched_predictor_info_get(p, &in) == OPSCHED_OK &&
        comm_gpu[0] && strcmp(in.device.name, comm_gpu) != 0 && (noted = 1))
        fprintf(stderr,
                "opsched predict: note: the compute is predicted for %s, the collectives were "
                "measured on %s (--step-ms takes a one-GPU step measured on those GPUs)\n",
                in.device.name, comm_gpu);
    return TOOL_EXIT_OK;
}

/* Each node's composed time (0 for those that launch nothing); NULL when
 * out of memory. */
static double *node_times(const opsched_network_prediction *r)
{
    double *ms = malloc((size_t)(r->n_layers ? r->n_layers : 1) * sizeof(double));
    for (int i = 0; ms && i < r->n_layers; i++)
        ms[i] = r->layers[i].launches ? r->layers[i].composed_ms : 0.0;
    return ms;
}

/* One rank's training memory: the forward graph loaded again (BatchNorm
 * kept), its training iteration replayed, sharded as sh says (NULL: as on
 * one GPU). */
static opsched_status rank_memory(opsched_ctx *ctx, const predict_cmd *c,
                                  const char *const *unit_names, const unsigned char *keep,
                                  int n_units, const opsched_training_sharding *sh,
                                  opsched_training_memory *single, opsched_training_memory *rank)
{
    tool_model_opts mo = c->m;
    mo.train = NULL;
    mo.fold_bn = 0;
    opsched_graph *fg = NULL;
    opsched_training *t = NULL;
    int *unit_of = NULL;
    opsched_status st = tool_load_model(ctx, &mo, &fg);
    if (st == OPSCHED_OK) st = opsched_training_build(fg, &c->train.o, &t);
    if (st == OPSCHED_OK) st = opsched_training_memory_get(t, single);
    if (st == OPSCHED_OK && sh) {
        int nt = opsched_graph_num_tensors(fg);
        unit_of = malloc((size_t)(nt ? nt : 1) * sizeof(int));
        if (!unit_of) st = OPSCHED_ERR_NOMEM;
        for (int x = 0; unit_of && x < nt; x++) {
            const opsched_tensor *ti = opsched_graph_tensor(fg, x);
            char u[OPSCHED_FSDP_UNIT_NAME];
            unit_of[x] = -1;
            if (ti->kind != OPSCHED_TENSOR_WEIGHT || !ti->name) continue;
            (void)opsched_fsdp_unit_of(ti->name, c->ddp.wrap, u, sizeof(u));
            for (int k = 0; k < n_units && unit_of[x] < 0; k++)
                if (strcmp(unit_names[k], u) == 0) unit_of[x] = k;
        }
        opsched_training_sharding s = *sh;
        s.unit_of = unit_of;
        s.keep_f32 = keep;
        s.n_units = n_units;
        if (st == OPSCHED_OK) st = opsched_training_memory_sharded(t, &s, rank);
    } else if (st == OPSCHED_OK)
        *rank = *single;
    free(unit_of);
    opsched_training_free(t);
    opsched_graph_free(fg);
    return st;
}

static void print_memory(const char *label, const opsched_training_memory *m,
                         const opsched_training_memory *single, int64_t extra)
{
    char a[32], b[32], w[32], gr[32], os[32], sv[32];
    printf("  %-18s %sB peak (parameters %sB, gradients %sB, optimizer state %sB, saved for "
           "backward %sB%s); one GPU: %sB\n",
           label, tool_human((double)(m->peak + extra), a, sizeof(a)),
           tool_human((double)m->weights, w, sizeof(w)),
           tool_human((double)m->gradients, gr, sizeof(gr)),
           tool_human((double)m->optimizer_state, os, sizeof(os)),
           tool_human((double)m->saved, sv, sizeof(sv)), extra ? ", plus the buckets" : "",
           tool_human((double)single->peak, b, sizeof(b)));
}

/* The training iteration under FSDP on --gpus GPUs: units from
 * --fsdp-wrap, parameters all-gathered and gradients reduce-scattered at
 * the cost --comm-db's fits give, memory per rank from the sharded replay. */
static int fsdp_report(opsched_ctx *ctx, const predict_cmd *c, const opsched_graph *g,
                       const opsched_network_prediction *r, const opsched_predictor *p, int print,
                       double *iteration, double *single_ms, int64_t *memory, int *n_units)
{
    const ddp_args *d = &c->ddp;
    double *ms = node_times(r);
    if (!ms) return tool_fail(ctx, OPSCHED_ERR_NOMEM, "predict");
    opsched_fsdp_compute comp;
    opsched_status st = opsched_fsdp_from_training(ctx, g, ms, d->wrap, &comp);
    free(ms);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "predict --strategy fsdp");
    double total = comp.optimizer_ms;
    for (int i = 0; i < comp.n_segs; i++) total += comp.segs[i].ms;
    if (d->step_ms > 0 && total > 0) {
        double scale = d->step_ms / total;
        for (int i = 0; i < comp.n_segs; i++) comp.segs[i].ms *= scale;
        comp.optimizer_ms *= scale;
    }
    const opsched_collective which[2] = {OPSCHED_ALLGATHER, OPSCHED_REDUCESCATTER};
    const opsched_dtype dt[2] = {d->param_comm, d->grad_comm};
    opsched_comm_fit fits[2];
    int measured[2] = {0, 0};
    memset(fits, 0, sizeof(fits));
    int rc = comm_fits(ctx, c, p, which, dt, 2, fits, measured);
    if (rc != TOOL_EXIT_OK) {
        opsched_fsdp_compute_free(&comp);
        return rc;
    }
    opsched_fsdp_options o;
    opsched_fsdp_options_init(&o);
    o.ranks = d->gpus;
    o.gather_bytes_scale = d->param_comm == OPSCHED_F32 ? 1.0 : 0.5;
    o.reduce_bytes_scale = d->grad_comm == OPSCHED_F32 ? 1.0 : 0.5;
    o.overlap_slowdown = d->o.overlap_slowdown;
    o.per_unit_us = d->per_unit_us;
    o.per_param_us = d->per_unit_param_us;
    o.host_ms = d->host_ms;
    opsched_fsdp_result res;
    node_cost ag = {OPSCHED_ALLGATHER, &fits[0], &d->net, measured[0]},
              rs = {OPSCHED_REDUCESCATTER, &fits[1], &d->net, measured[1]};
    st = opsched_fsdp_timeline(ctx, &comp, nodes_cost, &ag, nodes_cost, &rs, &o, &res);
    /* Memory per rank. */
    const char **names = malloc((size_t)comp.n_units * sizeof(char *));
    unsigned char *keep = malloc((size_t)comp.n_units);
    int64_t unit_max = 0, gathered = 0;
    opsched_training_memory single, rank;
    if (st == OPSCHED_OK && (!names || !keep)) st = OPSCHED_ERR_NOMEM;
    for (int u = 0; st == OPSCHED_OK && u < comp.n_units; u++) {
        names[u] = comp.units[u].name;
        keep[u] = (unsigned char)comp.units[u].keep_f32;
        gathered += comp.units[u].param_bytes;
        if (u > 0 && comp.units[u].param_bytes > unit_max) unit_max = comp.units[u].param_bytes;
    }
    opsched_training_sharding sh = {d->gpus, NULL, NULL, 0, o.gather_bytes_scale,
                                    d->param_comm == OPSCHED_F32 ? 1.0 : 0.5, 1};
    if (st == OPSCHED_OK)
        st = rank_memory(ctx, c, names, keep, comp.n_units, &sh, &single, &rank);
    free(names);
    free(keep);
    if (st != OPSCHED_OK) {
        opsched_fsdp_compute_free(&comp);
        return tool_fail(ctx, st, "predict --strategy fsdp");
    }
    *iteration = res.iteration_ms;
    *single_ms = res.single_ms;
    *memory = rank.peak;
    *n_units = comp.n_units;
    if (!print) {
        opsched_fsdp_compute_free(&comp);
        return TOOL_EXIT_OK;
    }
    char a[32], b[32];
    char nd[160];
    printf("\nfully sharded data-parallel training (FSDP2 fully_shard, FULL_SHARD) on %d GPUs%s, "
           "%d units (%s), parameters gathered in %s, gradients reduced in %s%s:\n",
           d->gpus, nodes_desc(d, nd, sizeof(nd)), comp.n_units, d->wrap ? d->wrap : "the whole model one unit",
           opsched_dtype_name(d->param_comm), opsched_dtype_name(d->grad_comm),
           d->step_ms > 0 ? ", compute scaled to the measured one-GPU step" : "");
    printf("  iteration          %9.3f ms   (one GPU: %.3f ms; scaling efficiency %.1f%%)\n",
           res.iteration_ms, res.single_ms, 100 * res.scaling_efficiency);
    printf("  forward + loss     %9.3f ms   of compute, ending at %.3f ms\n", res.forward_ms,
           res.forward_end_ms);
    printf("  backward           %9.3f ms   of compute (stretched %.3f ms: overlap %g x)\n",
           res.backward_ms, o.overlap_slowdown * res.hidden_ms, o.overlap_slowdown);
    int n_params = 0;
    for (int u = 0; u < comp.n_units; u++)
        n_params += comp.units[u].n_params;
    printf("  all-gather         %9.3f ms   in %d collectives (%d parameters, %sB, the largest "
           "unit %sB)\n",
           res.allgather_ms, res.n_allgathers, n_params, tool_human((double)gathered, a, sizeof(a)),
           tool_human((double)unit_max, b, sizeof(b)));
    printf("  reduce-scatter     %9.3f ms   in %d collectives\n", res.reducescatter_ms,
           res.n_reducescatters);
    printf("  communication      %9.3f ms   hidden under compute; %.3f ms of the iteration "
           "waits for it or for the host (hooks: %g us per unit, %g per parameter)\n",
           res.hidden_ms, res.exposed_ms, d->per_unit_us, d->per_unit_param_us);
    if (c->train.o.step)
        printf("  optimizer          %9.3f ms   on the rank's shard\n", res.optimizer_ms);
    else
        printf("  optimizer          not counted (--optimizer sgd|adamw adds its step)\n");
    print_memory("memory per rank", &rank, &single, 0);
    opsched_fsdp_compute_free(&comp);
    return TOOL_EXIT_OK;
}

/* The training iteration under DDP on --gpus GPUs: the predicted (or, with
 * --step-ms, measured) compute of one GPU, gradients ready as backward
 * makes them, buckets all-reduced at the cost --comm-db's fit gives. */
static int ddp_report(opsched_ctx *ctx, const predict_cmd *c, const opsched_graph *g,
                      const opsched_network_prediction *r, const opsched_predictor *p, int print,
                      double *iteration, double *single_ms, int64_t *memory, double *cap)
{
    const ddp_args *d = &c->ddp;
    double *ms = node_times(r);
    if (!ms) return tool_fail(ctx, OPSCHED_ERR_NOMEM, "predict");
    opsched_ddp_param *params = NULL;
    int n = 0;
    opsched_ddp_compute comp;
    opsched_status st = opsched_ddp_from_training(ctx, g, ms, &params, &n, &comp);
    free(ms);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "predict --gpus");
    double scale = 1.0;
    if (d->step_ms > 0 && comp.forward_ms + comp.backward_ms + comp.optimizer_ms > 0) {
        scale = d->step_ms / (comp.forward_ms + comp.backward_ms + comp.optimizer_ms);
        comp.forward_ms *= scale;
        comp.backward_ms *= scale;
        comp.optimizer_ms *= scale;
        for (int i = 0; i < n; i++) params[i].ready_ms *= scale;
    }
    const opsched_collective which = OPSCHED_ALLREDUCE;
    opsched_comm_fit fit;
    int measured = 0;
    memset(&fit, 0, sizeof(fit));
    int rc = comm_fits(ctx, c, p, &which, &d->grad_comm, 1, &fit, &measured);
    if (rc != TOOL_EXIT_OK) {
        free(params);
        return rc;
    }
    opsched_ddp_result res;
    opsched_ddp_options o = d->o;
    node_cost ar = {OPSCHED_ALLREDUCE, &fit, &d->net, measured};
    if (d->bucket_auto) { /* the cap that predicts the shortest iteration */
        static const double caps[] = {1, 2, 5, 10, 15, 25, 50, 100, 200};
        double best = INFINITY;
        for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
            opsched_ddp_options t = d->o;
            t.bucket_cap_mb = caps[k];
            st = opsched_ddp_timeline(ctx, params, n, &comp, nodes_cost, &ar, &t, &res);
            if (st != OPSCHED_OK) break;
            if (res.iteration_ms < best - 1e-9) {
                best = res.iteration_ms;
                o.bucket_cap_mb = caps[k];
            }
            opsched_ddp_result_free(&res);
        }
    }
    if (st == OPSCHED_OK) st = opsched_ddp_timeline(ctx, params, n, &comp, nodes_cost, &ar, &o, &res);
    int64_t grad_bytes = 0;
    for (int i = 0; i < n; i++) grad_bytes += params[i].bytes;
    int n_params = n;
    free(params);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "predict --gpus");
    opsched_training_memory single, rank;
    st = rank_memory(ctx, c, NULL, NULL, 0, NULL, &single, &rank);
    if (st != OPSCHED_OK) {
        opsched_ddp_result_free(&res);
        return tool_fail(ctx, st, "predict --gpus");
    }
    *iteration = res.iteration_ms;
    *single_ms = res.single_ms;
    *memory = rank.peak + res.bucket_buffer_bytes;
    *cap = o.bucket_cap_mb;
    if (!print) {
        opsched_ddp_result_free(&res);
        return rc;
    }
    char nd[160];
    printf("\ndata-parallel training (DDP) on %d GPUs%s, buckets of %g MB%s (the first %g MB), %s "
           "gradients on the wire%s:\n",
           d->gpus, nodes_desc(d, nd, sizeof(nd)), o.bucket_cap_mb, d->bucket_auto ? " (the best of 1 to 200)" : "",
           o.first_bucket_mb, opsched_dtype_name(d->grad_comm),
           d->step_ms > 0 ? ", compute scaled to the measured one-GPU step" : "");
    printf("  iteration          %9.3f ms   (one GPU: %.3f ms; scaling efficiency %.1f%%)\n",
           res.iteration_ms, res.single_ms, 100 * res.scaling_efficiency);
    printf("  forward + loss     %9.3f ms\n  backward           %9.3f ms   (stretched %.3f ms: "
           "overlap %g x, %g us per gradient)\n",
           res.forward_ms, res.backward_ms, res.slowdown_ms, d->o.overlap_slowdown,
           d->o.per_param_us);
    printf("  all-reduce         %9.3f ms   in %d buckets of %.1f MB of gradients (%d "
           "parameters): %.3f ms hidden under backward, %.3f ms exposed\n",
           res.comm_ms, res.n_buckets, (double)grad_bytes * o.comm_bytes_scale / 1e6, n_params,
           res.hidden_ms, res.exposed_ms);
    if (c->train.o.step)
        printf("  optimizer          %9.3f ms   after the last all-reduce\n", res.optimizer_ms);
    else
        printf("  optimizer          not counted (--optimizer sgd|adamw adds its step)\n");
    print_memory("memory per rank", &rank, &single, res.bucket_buffer_bytes);
    printf("  %-18s +%.1f MB of bucket buffers beside the gradients%s\n", "",
           (double)res.bucket_buffer_bytes / 1e6,
           d->o.gradient_as_bucket_view ? " (gradients are bucket views)" : "");
    opsched_ddp_result_free(&res);
    return rc;
}

/* One candidate of opsched plan. */
typedef struct plan_row {
    int fsdp;
    double cap;       /* DDP: bucket cap */
    int view;         /* DDP: gradients as bucket views */
    char wrap[64];    /* FSDP: the units' pattern ("" the whole model) */
    int units;
    double iteration, single;
    int64_t memory;
} plan_row;

static int cmp_plan(const void *a, const void *b)
{
    const plan_row *x = a, *y = b;
    double tol = 1e-6 * (x->iteration + y->iteration);
    if (x->iteration < y->iteration - tol) return -1;
    if (x->iteration > y->iteration + tol) return 1;
    return (x->memory > y->memory) - (x->memory < y->memory); /* then the least memory */
}

/* The deepest module path among the graph's parameters ("a.b.weight": 2). */
static int param_depth(const opsched_graph *g)
{
    int depth = 0, n = opsched_graph_num_outputs(g);
    for (int i = 0; i < n; i++) {
        const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_output(g, i));
        if (!t || !t->name || strncmp(t->name, "grad/", 5) != 0) continue;
        int d = 0;
        for (const char *q = t->name + 5; *q; q++)
            d += *q == '.';
        if (d > depth) depth = d;
    }
    return depth;
}

static int plan_run(opsched_ctx *ctx, predict_cmd *c, const opsched_graph *g,
                    const opsched_network_prediction *r, const opsched_predictor *p)
{
    static const double caps[] = {1, 2, 5, 10, 15, 25, 50, 100, 200};
    plan_row rows[64];
    int n = 0, rc = TOOL_EXIT_OK;
    predict_cmd t = *c;
    for (int view = 0; view < 2 && rc == TOOL_EXIT_OK; view++)
        for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]) && rc == TOOL_EXIT_OK; k++) {
            plan_row *w = &rows[n];
            memset(w, 0, sizeof(*w));
            t.ddp = c->ddp;
            t.ddp.fsdp = 0;
            t.ddp.wrap = NULL;
            t.ddp.bucket_auto = 0;
            t.ddp.o.bucket_cap_mb = caps[k];
            t.ddp.o.gradient_as_bucket_view = view;
            w->cap = caps[k];
            w->view = view;
            rc = ddp_report(ctx, &t, g, r, p, 0, &w->iteration, &w->single, &w->memory, &w->cap);
            n += rc == TOOL_EXIT_OK;
        }
    /* FSDP: the whole model, then every depth of module names ("*", "*.*", ...). */
    int depth = param_depth(g), last_units = -1;
    for (int d = 0; d <= depth && d < 8 && rc == TOOL_EXIT_OK; d++) {
        plan_row *w = &rows[n];
        memset(w, 0, sizeof(*w));
        w->fsdp = 1;
        for (int k = 0; k < d; k++)
            strcat(w->wrap, k ? ".*" : "*");
        t.ddp = c->ddp;
        t.ddp.fsdp = 1;
        t.ddp.wrap = d ? w->wrap : NULL;
        rc = fsdp_report(ctx, &t, g, r, p, 0, &w->iteration, &w->single, &w->memory, &w->units);
        if (rc == TOOL_EXIT_OK && w->units != last_units) {
            last_units = w->units;
            n++;
        }
    }
    if (rc != TOOL_EXIT_OK) return rc;
    qsort(rows, (size_t)n, sizeof(rows[0]), cmp_plan);
    const plan_row *best = NULL;
    int64_t least = INT64_MAX;
    char m[32], lim[32];
    printf("\ntraining %s on %d GPUs%s, at most %sB per rank: %d ways, fastest first\n",
           c->m.model, c->ddp.gpus, c->ddp.step_ms > 0 ? " (compute scaled to --step-ms)" : "", tool_human(c->memory_limit, lim, sizeof(lim)), n);
    printf("  %-6s %-34s %12s %10s %12s  %s\n", "", "setting", "iteration", "scaling",
           "memory/rank", "fits");
    for (int i = 0; i < n; i++) {
        const plan_row *w = &rows[i];
        char set[96];
        if (w->fsdp)
            snprintf(set, sizeof(set), "%d unit%s (%s)", w->units, w->units == 1 ? "" : "s",
                     w->wrap[0] ? w->wrap : "the whole model");
        else
            snprintf(set, sizeof(set), "buckets of %g MB%s", w->cap,
                     w->view ? ", grads as views" : "");
        int fits = (double)w->memory <= c->memory_limit;
        if (fits && !best) best = w;
        if (w->memory < least) least = w->memory;
        printf("  %-6s %-34s %9.3f ms %9.1f%% %11sB  %s\n", w->fsdp ? "fsdp" : "ddp", set,
               w->iteration, 100 * w->single / w->iteration,
               tool_human((double)w->memory, m, sizeof(m)), fits ? "yes" : "no");
    }
    if (!best) {
        fprintf(stderr,
                "opsched plan: no way fits %sB per rank: the least memory is %sB (more GPUs, a "
                "smaller --batch, or a higher --memory-limit)\n",
                lim, tool_human((double)least, m, sizeof(m)));
        return TOOL_EXIT_FAIL;
    }
    printf("\nplan: %s, %.3f ms per iteration, %sB per rank\n",
           best->fsdp ? "FSDP (full shard)" : "DDP", best->iteration,
           tool_human((double)best->memory, m, sizeof(m)));
    if (best->fsdp)
        printf("  in full: opsched predict %s --train --gpus %d --strategy fsdp%s%s%s ...\n",
               c->m.model, c->ddp.gpus, best->wrap[0] ? " --fsdp-wrap '" : "", best->wrap,
               best->wrap[0] ? "'" : "");
    else
        printf("  in full: opsched predict %s --train --gpus %d --bucket-mb %g%s ...\n",
               c->m.model, c->ddp.gpus, best->cap, best->view ? " --grad-as-bucket-view" : "");
    return TOOL_EXIT_OK;
}

static int run_predict(opsched_ctx *ctx, int argc, char **argv, int plan);

int cmd_predict(opsched_ctx *ctx, int argc, char **argv)
{
    return run_predict(ctx, argc, argv, 0);
}

int cmd_plan(opsched_ctx *ctx, int argc, char **argv)
{
    return run_predict(ctx, argc, argv, 1);
}

static int run_predict(opsched_ctx *ctx, int argc, char **argv, int plan)
{
    predict_cmd c;
    memset(&c, 0, sizeof(c));
    c.plan = plan;
    predict_args_init(&c.a);
    opsched_predict_options_default(&c.o);
    c.fmt = TOOL_FMT_TABLE;
    c.m.fold_bn = -1; /* folded, as deployed; kept with --train */
    opsched_ddp_options_init(&c.ddp.o);
    c.ddp.net.nodes = 1;
    c.ddp.net.gpus_per_node = 1;
    c.ddp.net.net_us = 5.0;
    int rc = parse_args(&c, argc, argv);
    if (rc != TOOL_EXIT_OK) return rc == TOOL_ARGS_HELP ? TOOL_EXIT_OK : rc;
    rc = predict_args_finish(&c.a, ctx, "predict");
    if (rc != TOOL_EXIT_OK) return rc;
    opsched_graph *g = NULL;
    c.m.no_rewrite = !c.o.fuse;
    opsched_status st = tool_load_model(ctx, &c.m, &g);
    if (st != OPSCHED_OK) return tool_model_fail(ctx, st, c.m.model);
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
        rc = tool_fail(ctx, st, c.a.db_path);
        if (st == OPSCHED_ERR_NOT_FOUND) { /* no such device in the database */
            tool_print_holdings(ctx, "predict", c.a.db_path);
            print_fill_command(&c, g, NULL, opsched_math_name(c.a.po.math),
                               c.a.po.layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw",
                               c.a.po.algo_policy ? c.a.po.algo_policy : "heuristic",
                               opsched_cache_name(c.a.po.cache));
        }
        opsched_exclusion_free(x);
        opsched_graph_free(g);
        return rc;
    }
    st = opsched_predict_network(p, g, &c.o, &r);
    if (st != OPSCHED_OK)
        rc = tool_fail(ctx, st, c.m.model);
    else if (c.plan && r->launches_unpredicted > 0) {
        fprintf(stderr, "opsched plan: %d launches of %s have no prediction: opsched predict "
                        "with the same options names them and the sweep that measures them\n",
                r->launches_unpredicted, c.m.model);
        rc = TOOL_EXIT_FAIL;
    } else if (c.plan)
        rc = plan_run(ctx, &c, g, r, p);
    else
        rc = report(ctx, &c, g, r, p);
    if (c.plan) c.ddp.gpus = 0; /* printed by plan_run */
    if (rc == TOOL_EXIT_OK && c.ddp.gpus) {
        double it = 0, one = 0, cap = 0;
        int64_t mem = 0;
        int units = 0;
        rc = c.ddp.fsdp ? fsdp_report(ctx, &c, g, r, p, 1, &it, &one, &mem, &units)
                        : ddp_report(ctx, &c, g, r, p, 1, &it, &one, &mem, &cap);
    }
    opsched_network_prediction_free(r);
    opsched_predictor_free(p);
    opsched_exclusion_free(x);
    opsched_graph_free(g);
    return rc;
}
