/*
 * cmd_info.c - `opsched info`: a network layer by layer, and its totals.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "args.h"

static const char info_help[] =
    "usage: opsched info <zoo-name|file.onnx> [options]\n"
    "\n"
    "One row per layer: name, operator, input and output shapes, kernel, stride,\n"
    "padding, FLOPs (multiply-add = 2), parameters and bytes moved; then the totals.\n"
    "With --train: the training iteration instead (forward, loss, backward, optimizer\n"
    "steps, as PyTorch's eager training runs them) and the memory it holds, as\n"
    "PyTorch's caching allocator counts it (BatchNorm kept unless --bn fold).\n"
    "With --train --memory-limit GB: also the largest batch whose iteration fits.\n";

enum { IN_MEMORY };
static const tool_opt info_opts[] = {
    {"memory-limit", 0, "GB",
     "with --train: the largest batch whose iteration's peak\nfits GB (1e9 bytes; library "
     "workspaces not counted)",
     IN_MEMORY},
    {NULL, 0, NULL, NULL, 0}};

static int info_opt(void *dest, const char *cmd, const tool_opt *o, const char *v)
{
    double *limit = dest;
    (void)o;
    char *end = NULL;
    double x = strtod(v, &end);
    if (end == v || *end || !(x > 0) || x > 1e9)
        return tool_usage_error(cmd, "--memory-limit %s: a positive number of GB", v);
    *limit = x * 1e9;
    return TOOL_EXIT_OK;
}

/* The training iteration's peak at batch b (-1 when the model cannot be
 * built at that batch: the error is left in ctx). */
static int64_t peak_at(opsched_ctx *ctx, const tool_model_opts *mo, const tool_train_opts *ta,
                       int64_t b)
{
    tool_model_opts m = *mo;
    m.batch = b;
    opsched_graph *g = NULL;
    opsched_training *t = NULL;
    opsched_training_memory mem;
    int64_t peak = -1;
    if (tool_load_model(ctx, &m, &g) == OPSCHED_OK &&
        opsched_training_build(g, &ta->o, &t) == OPSCHED_OK &&
        opsched_training_memory_get(t, &mem) == OPSCHED_OK)
        peak = mem.peak;
    opsched_training_free(t);
    opsched_graph_free(g);
    return peak;
}

/* The largest batch whose peak fits limit: doubling, then bisection (the
 * peak grows with the batch). */
static int largest_batch(opsched_ctx *ctx, const tool_model_opts *mo, const tool_train_opts *ta,
                         double limit)
{
    char a[32], l[32];
    int64_t p1 = peak_at(ctx, mo, ta, 1);
    if (p1 < 0) return tool_fail(ctx, opsched_ctx_last_status(ctx), "--memory-limit at batch 1");
    if ((double)p1 > limit) {
        fprintf(stderr, "opsched info: batch 1 already needs %sB, above --memory-limit %sB\n",
                tool_human((double)p1, a, sizeof(a)), tool_human(limit, l, sizeof(l)));
        return TOOL_EXIT_FAIL;
    }
    int64_t lo = 1, hi = 2, cap = (int64_t)1 << 20, plo = p1;
    for (;;) {
        int64_t p = peak_at(ctx, mo, ta, hi);
        if (p < 0) return tool_fail(ctx, opsched_ctx_last_status(ctx), "--memory-limit");
        if ((double)p > limit) break;
        lo = hi;
        plo = p;
        if (hi >= cap) break;
        hi *= 2;
    }
    while (hi - lo > 1 && lo < cap) {
        int64_t mid = lo + (hi - lo) / 2, p = peak_at(ctx, mo, ta, mid);
        if (p < 0) return tool_fail(ctx, opsched_ctx_last_status(ctx), "--memory-limit");
        if ((double)p <= limit) {
            lo = mid;
            plo = p;
        } else
            hi = mid;
    }
    printf("largest batch within %sB: %lld (peak %sB)\n", tool_human(limit, l, sizeof(l)),
           (long long)lo, tool_human((double)plo, a, sizeof(a)));
    return TOOL_EXIT_OK;
}

/* ---- the training iteration ------------------------------------------------- */

static int print_training(opsched_ctx *ctx, const opsched_graph *g, const tool_train_opts *ta,
                          tool_format fmt)
{
    opsched_training *t = NULL;
    opsched_status st = opsched_training_build(g, &ta->o, &t);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, "training");
    opsched_training_memory m;
    st = opsched_training_memory_get(t, &m);
    if (st != OPSCHED_OK) {
        opsched_training_free(t);
        return tool_fail(ctx, st, "training memory");
    }
    int n = opsched_training_num_steps(t), count[OPSCHED_STEP_OPTIMIZER + 1] = {0};
    int64_t flops[OPSCHED_STEP_OPTIMIZER + 1] = {0};
    for (int i = 0; i < n; i++) {
        const opsched_train_step *s = opsched_training_step(t, i);
        count[s->kind]++;
        flops[s->kind] += s->flops;
    }
    int rc = TOOL_EXIT_OK;
    if (fmt == TOOL_FMT_CSV) {
        opsched_csv_writer *w = NULL;
        st = opsched_csv_writer_create(ctx, stdout, &w);
        if (st == OPSCHED_OK) st = opsched_csv_header(w, "step,kind,layer,input,flops,bytes,deps");
        for (int i = 0; st == OPSCHED_OK && i < n; i++) {
            const opsched_train_step *s = opsched_training_step(t, i);
            opsched_csv_int(w, i);
            opsched_csv_str(w, opsched_train_step_kind_name(s->kind));
            opsched_csv_str(w, s->node >= 0 ? opsched_graph_node(g, s->node)->name : "");
            opsched_csv_int(w, s->input);
            opsched_csv_int(w, s->flops);
            opsched_csv_int(w, s->bytes);
            opsched_csv_int(w, s->n_deps);
            st = opsched_csv_end_row(w);
        }
        opsched_csv_writer_free(w);
        if (st != OPSCHED_OK) rc = tool_fail(ctx, st, "CSV");
    } else if (fmt == TOOL_FMT_JSON) {
        cJSON *root = cJSON_CreateObject(), *steps = cJSON_AddObjectToObject(root, "steps");
        for (int k = 0; k <= OPSCHED_STEP_OPTIMIZER; k++) {
            cJSON *o = cJSON_AddObjectToObject(steps, opsched_train_step_kind_name(k));
            cJSON_AddNumberToObject(o, "count", count[k]);
            cJSON_AddNumberToObject(o, "flops", (double)flops[k]);
        }
        cJSON *mem = cJSON_AddObjectToObject(root, "memory_bytes");
        cJSON_AddNumberToObject(mem, "weights", (double)m.weights);
        cJSON_AddNumberToObject(mem, "parameters", (double)m.parameters);
        cJSON_AddNumberToObject(mem, "gradients", (double)m.gradients);
        cJSON_AddNumberToObject(mem, "optimizer_state", (double)m.optimizer_state);
        cJSON_AddNumberToObject(mem, "saved_for_backward", (double)m.saved);
        cJSON_AddNumberToObject(mem, "peak", (double)m.peak);
        cJSON_AddStringToObject(root, "peak_step",
                                opsched_train_step_kind_name(opsched_training_step(t, m.peak_step)->kind));
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        if (text) puts(text);
        else rc = TOOL_EXIT_FAIL;
        cJSON_free(text);
    } else {
        char a[32];
        printf("%s: training iteration, %d steps\n", opsched_graph_name(g), n);
        for (int k = 0; k <= OPSCHED_STEP_OPTIMIZER; k++)
            printf("  %-16s %5d  %s FLOPs\n", opsched_train_step_kind_name(k), count[k],
                   tool_human((double)flops[k], a, sizeof(a)));
        printf("memory (caching allocator blocks; no library workspaces):\n");
        printf("  weights          %s\n", tool_human((double)m.weights, a, sizeof(a)));
        printf("  gradients        %s\n", tool_human((double)m.gradients, a, sizeof(a)));
        printf("  optimizer state  %s\n", tool_human((double)m.optimizer_state, a, sizeof(a)));
        printf("  saved for backward %s (when the forward pass ends)\n",
               tool_human((double)m.saved, a, sizeof(a)));
        const opsched_train_step *ps = opsched_training_step(t, m.peak_step);
        printf("  peak             %s (during %s%s%s)\n", tool_human((double)m.peak, a, sizeof(a)),
               opsched_train_step_kind_name(ps->kind), ps->node >= 0 ? " of " : "",
               ps->node >= 0 ? opsched_graph_node(g, ps->node)->name : "");
    }
    opsched_training_free(t);
    return rc;
}

/* The attributes worth a column: kernel, stride and padding of windows. */
static void window_attrs(const opsched_node *n, char *k, char *s, char *p, size_t sz)
{
    k[0] = s[0] = p[0] = '\0';
    const int64_t *kk = NULL, *ss = NULL, *pp = NULL;
    if (n->op == OPSCHED_OP_CONV) {
        kk = n->attr.conv.kernel;
        ss = n->attr.conv.stride;
        pp = n->attr.conv.pads;
    } else if (n->op == OPSCHED_OP_MAXPOOL || n->op == OPSCHED_OP_AVGPOOL) {
        kk = n->attr.pool.kernel;
        ss = n->attr.pool.stride;
        pp = n->attr.pool.pads;
    }
    if (!kk) return;
    snprintf(k, sz, "%lldx%lld", (long long)kk[0], (long long)kk[1]);
    snprintf(s, sz, "%lldx%lld", (long long)ss[0], (long long)ss[1]);
    if (pp[0] == pp[2] && pp[1] == pp[3])
        snprintf(p, sz, "%lldx%lld", (long long)pp[0], (long long)pp[1]);
    else
        snprintf(p, sz, "%lld,%lld,%lld,%lld", (long long)pp[0], (long long)pp[1],
                 (long long)pp[2], (long long)pp[3]);
}

/* Shapes of the non-weight inputs joined by '+'. */
static void input_shapes(const opsched_graph *g, const opsched_node *n, char *buf, size_t sz)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n->n_inputs && used + 1 < sz; i++) {
        const opsched_tensor *t = opsched_graph_tensor(g, n->inputs[i]);
        if (!t || t->kind == OPSCHED_TENSOR_WEIGHT || t->kind == OPSCHED_TENSOR_CONSTANT) continue;
        char s[128];
        opsched_shape_format(&t->shape, s, sizeof(s));
        int w = snprintf(buf + used, sz - used, "%s%s", used ? "+" : "", s);
        if (w < 0) break;
        used += (size_t)w;
    }
}

static void print_table(const opsched_graph *g, const opsched_graph_totals *tot)
{
    char h[32], a[32], b[32];
    printf("%-4s %-36s %-18s %-16s %-16s %-6s %-6s %-8s %9s %9s %9s\n", "#", "layer", "op",
           "input", "output", "kernel", "stride", "pad", "FLOPs", "params", "bytes");
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        char in[256], out[128], k[32], s[32], p[64];
        input_shapes(g, n, in, sizeof(in));
        opsched_shape_format(&opsched_graph_tensor(g, n->outputs[0])->shape, out, sizeof(out));
        window_attrs(n, k, s, p, sizeof(k));
        printf("%-4d %-36s %-18s %-16s %-16s %-6s %-6s %-8s %9s %9s %9s\n", i, n->name,
               opsched_node_op_name(n), in, out, k, s, p, tool_human((double)n->cost.flops, h, 32),
               tool_human((double)n->cost.params, a, 32),
               tool_human((double)(n->cost.bytes_read + n->cost.bytes_written), b, 32));
    }
    printf("\n%s: %d layers (%d compute)\n", opsched_graph_name(g), tot->n_nodes,
           tot->n_compute_nodes);
    printf("  FLOPs            %lld (%.3f GFLOPs, %.3f GMACs)\n", (long long)tot->flops,
           (double)tot->flops / 1e9, (double)tot->flops / 2e9);
    printf("  parameters       %lld (%.2f M)\n", (long long)tot->params, (double)tot->params / 1e6);
    printf("  weight memory    %sB\n", tool_human((double)tot->weight_bytes, h, 32));
    printf("  peak activations %sB (sequential, node order)\n",
           tool_human((double)tot->peak_activation_bytes, h, 32));
    printf("  bytes moved      %sB\n",
           tool_human((double)(tot->bytes_read + tot->bytes_written), h, 32));
}

static opsched_status print_csv(opsched_ctx *ctx, const opsched_graph *g)
{
    opsched_csv_writer *w = NULL;
    opsched_status st = opsched_csv_writer_create(ctx, stdout, &w);
    if (st == OPSCHED_OK)
        st = opsched_csv_header(w, "index,layer,op,input_shape,output_shape,kernel,stride,pads,"
                                   "flops,params,bytes_read,bytes_written");
    for (int i = 0; st == OPSCHED_OK && i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        char in[256], out[128], k[32], s[32], p[64];
        input_shapes(g, n, in, sizeof(in));
        opsched_shape_format(&opsched_graph_tensor(g, n->outputs[0])->shape, out, sizeof(out));
        window_attrs(n, k, s, p, sizeof(k));
        opsched_csv_int(w, i);
        opsched_csv_str(w, n->name);
        opsched_csv_str(w, opsched_node_op_name(n));
        opsched_csv_str(w, in);
        opsched_csv_str(w, out);
        opsched_csv_str(w, k);
        opsched_csv_str(w, s);
        opsched_csv_str(w, p);
        opsched_csv_int(w, n->cost.flops);
        opsched_csv_int(w, n->cost.params);
        opsched_csv_int(w, n->cost.bytes_read);
        opsched_csv_int(w, n->cost.bytes_written);
        st = opsched_csv_end_row(w);
    }
    opsched_csv_writer_free(w);
    return st;
}

static cJSON *shape_json(const opsched_shape *s)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < s->ndim; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)s->d[i]));
    return a;
}

static cJSON *ints_json(const int64_t *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
    return a;
}

static const char *kind_name(opsched_tensor_kind k)
{
    switch (k) {
    case OPSCHED_TENSOR_INPUT: return "input";
    case OPSCHED_TENSOR_WEIGHT: return "weight";
    case OPSCHED_TENSOR_CONSTANT: return "constant";
    default: return "activation";
    }
}

/* The graph's wiring and every attribute the node's computation depends
 * on, so that another framework can rebuild the same network from this
 * file (bench/peers/opsched_torch.py does). */
static void add_topology(const opsched_graph *g, const opsched_node *n, cJSON *o)
{
    cJSON *ts = cJSON_AddArrayToObject(o, "input_tensors");
    for (int k = 0; k < n->n_inputs; k++) {
        const opsched_tensor *t = n->inputs[k] >= 0 ? opsched_graph_tensor(g, n->inputs[k]) : NULL;
        if (!t) {
            cJSON_AddItemToArray(ts, cJSON_CreateNull());
            continue;
        }
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", t->name);
        cJSON_AddStringToObject(e, "kind", kind_name(t->kind));
        cJSON_AddItemToObject(e, "shape", shape_json(&t->shape));
        cJSON_AddItemToArray(ts, e);
    }
    cJSON *os = cJSON_AddArrayToObject(o, "output_tensors");
    for (int k = 0; k < n->n_outputs; k++)
        cJSON_AddItemToArray(os, cJSON_CreateString(opsched_graph_tensor(g, n->outputs[k])->name));
    cJSON *a = cJSON_AddObjectToObject(o, "attrs");
    const opsched_op_attr *at = &n->attr;
    switch (n->op) {
    case OPSCHED_OP_CONV:
        cJSON_AddItemToObject(a, "kernel", ints_json(at->conv.kernel, 2));
        cJSON_AddItemToObject(a, "stride", ints_json(at->conv.stride, 2));
        cJSON_AddItemToObject(a, "dilation", ints_json(at->conv.dilation, 2));
        cJSON_AddItemToObject(a, "pads", ints_json(at->conv.pads, 4));
        cJSON_AddNumberToObject(a, "groups", (double)at->conv.groups);
        break;
    case OPSCHED_OP_MAXPOOL:
    case OPSCHED_OP_AVGPOOL:
        cJSON_AddItemToObject(a, "kernel", ints_json(at->pool.kernel, 2));
        cJSON_AddItemToObject(a, "stride", ints_json(at->pool.stride, 2));
        cJSON_AddItemToObject(a, "dilation", ints_json(at->pool.dilation, 2));
        cJSON_AddItemToObject(a, "pads", ints_json(at->pool.pads, 4));
        cJSON_AddNumberToObject(a, "ceil_mode", at->pool.ceil_mode);
        cJSON_AddNumberToObject(a, "count_include_pad", at->pool.count_include_pad);
        break;
    case OPSCHED_OP_GEMM:
        cJSON_AddNumberToObject(a, "alpha", at->gemm.alpha);
        cJSON_AddNumberToObject(a, "beta", at->gemm.beta);
        cJSON_AddNumberToObject(a, "trans_a", at->gemm.trans_a);
        cJSON_AddNumberToObject(a, "trans_b", at->gemm.trans_b);
        break;
    case OPSCHED_OP_CONCAT:
    case OPSCHED_OP_SOFTMAX:
    case OPSCHED_OP_FLATTEN:
        cJSON_AddNumberToObject(a, "axis", (double)at->axis.axis);
        break;
    case OPSCHED_OP_BATCHNORM:
        cJSON_AddNumberToObject(a, "epsilon", at->bn.epsilon);
        break;
    case OPSCHED_OP_LRN:
        cJSON_AddNumberToObject(a, "size", (double)at->lrn.size);
        cJSON_AddNumberToObject(a, "alpha", at->lrn.alpha);
        cJSON_AddNumberToObject(a, "beta", at->lrn.beta);
        cJSON_AddNumberToObject(a, "bias", at->lrn.bias);
        break;
    case OPSCHED_OP_RESHAPE:
        cJSON_AddItemToObject(a, "shape", shape_json(&at->shape.shape));
        break;
    case OPSCHED_OP_PAD: {
        const opsched_tensor *x = opsched_graph_tensor(g, n->inputs[0]);
        int nd = x ? x->shape.ndim : 0;
        cJSON_AddItemToObject(a, "pads", ints_json(at->pad.pads, 2 * nd));
        cJSON_AddStringToObject(a, "mode", at->pad.mode == OPSCHED_PAD_REFLECT ? "reflect"
                                           : at->pad.mode == OPSCHED_PAD_EDGE  ? "edge"
                                           : at->pad.mode == OPSCHED_PAD_WRAP  ? "wrap"
                                                                               : "constant");
        cJSON_AddNumberToObject(a, "value", at->pad.value);
        break;
    }
    case OPSCHED_OP_SLICE: {
        const opsched_tensor *x = opsched_graph_tensor(g, n->inputs[0]);
        int nd = x ? x->shape.ndim : 0;
        cJSON_AddItemToObject(a, "starts", ints_json(at->slice.starts, nd));
        cJSON_AddItemToObject(a, "ends", ints_json(at->slice.ends, nd));
        cJSON_AddItemToObject(a, "steps", ints_json(at->slice.steps, nd));
        break;
    }
    case OPSCHED_OP_CLIP:
        cJSON_AddNumberToObject(a, "min", at->clip.min);
        cJSON_AddNumberToObject(a, "max", at->clip.max);
        break;
    default:
        break;
    }
}

static int print_json(const opsched_graph *g, const opsched_graph_totals *tot)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", opsched_graph_name(g));
    cJSON *inputs = cJSON_AddArrayToObject(root, "inputs");
    for (int i = 0; i < opsched_graph_num_inputs(g); i++) {
        const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_input(g, i));
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddItemToObject(o, "shape", shape_json(&t->shape));
        cJSON_AddStringToObject(o, "dtype", opsched_dtype_name(t->dtype));
        cJSON_AddItemToArray(inputs, o);
    }
    cJSON *layers = cJSON_AddArrayToObject(root, "layers");
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        const opsched_node *n = opsched_graph_node(g, i);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", n->name);
        cJSON_AddStringToObject(o, "op", opsched_node_op_name(n));
        cJSON *ins = cJSON_AddArrayToObject(o, "inputs");
        for (int k = 0; k < n->n_inputs; k++) {
            const opsched_tensor *t = opsched_graph_tensor(g, n->inputs[k]);
            if (!t || t->kind == OPSCHED_TENSOR_WEIGHT || t->kind == OPSCHED_TENSOR_CONSTANT) continue;
            cJSON_AddItemToArray(ins, shape_json(&t->shape));
        }
        cJSON *outs = cJSON_AddArrayToObject(o, "outputs");
        for (int k = 0; k < n->n_outputs; k++)
            cJSON_AddItemToArray(outs, shape_json(&opsched_graph_tensor(g, n->outputs[k])->shape));
        char kb[32], sb[32], pb[64];
        window_attrs(n, kb, sb, pb, sizeof(kb));
        if (kb[0]) {
            cJSON_AddStringToObject(o, "kernel", kb);
            cJSON_AddStringToObject(o, "stride", sb);
            cJSON_AddStringToObject(o, "pads", pb);
        }
        if (n->op == OPSCHED_OP_CONV) cJSON_AddNumberToObject(o, "groups", (double)n->attr.conv.groups);
        add_topology(g, n, o);
        cJSON_AddNumberToObject(o, "flops", (double)n->cost.flops);
        cJSON_AddNumberToObject(o, "params", (double)n->cost.params);
        cJSON_AddNumberToObject(o, "bytes_read", (double)n->cost.bytes_read);
        cJSON_AddNumberToObject(o, "bytes_written", (double)n->cost.bytes_written);
        cJSON_AddItemToArray(layers, o);
    }
    cJSON *t = cJSON_AddObjectToObject(root, "totals");
    cJSON_AddNumberToObject(t, "layers", tot->n_nodes);
    cJSON_AddNumberToObject(t, "compute_layers", tot->n_compute_nodes);
    cJSON_AddNumberToObject(t, "flops", (double)tot->flops);
    cJSON_AddNumberToObject(t, "params", (double)tot->params);
    cJSON_AddNumberToObject(t, "weight_bytes", (double)tot->weight_bytes);
    cJSON_AddNumberToObject(t, "peak_activation_bytes", (double)tot->peak_activation_bytes);
    cJSON_AddNumberToObject(t, "bytes_read", (double)tot->bytes_read);
    cJSON_AddNumberToObject(t, "bytes_written", (double)tot->bytes_written);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return 0;
    puts(text);
    cJSON_free(text);
    return 1;
}

int cmd_info(opsched_ctx *ctx, int argc, char **argv)
{
    tool_model_opts mo = {.fold_bn = -1};
    tool_format fmt = TOOL_FMT_TABLE;
    tool_train_opts ta;
    double limit = 0;
    memset(&ta, 0, sizeof(ta));
    const tool_optgroup groups[] = {{"model options", tool_model_optlist, tool_model_opt, &mo},
                                    {"training iteration", tool_train_optlist, tool_train_opt, &ta},
                                    {"memory", info_opts, info_opt, &limit},
                                    {"output options", tool_format_optlist, tool_format_opt, &fmt}};
    const tool_cli cli = {"info", info_help, NULL, groups, 4, 1, "model"};
    const char *pos[1];
    int n_pos = 0;
    int rc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (rc != TOOL_EXIT_OK) return rc == TOOL_ARGS_HELP ? TOOL_EXIT_OK : rc;
    if (n_pos == 0) return tool_usage_error("info", "which model? give a zoo name or an .onnx file");
    mo.model = pos[0];
    /* BatchNorm folded, as deployed; kept for training, where it trains. */
    if (mo.fold_bn < 0) mo.fold_bn = !ta.on;
    if (limit > 0 && (!ta.on || fmt != TOOL_FMT_TABLE))
        return tool_usage_error("info", "--memory-limit finds the largest training batch: with "
                                        "--train and a table");
    opsched_graph *g = NULL;
    opsched_status st = tool_load_model(ctx, &mo, &g);
    if (st != OPSCHED_OK) return tool_model_fail(ctx, st, mo.model);
    if (ta.on) {
        rc = print_training(ctx, g, &ta, fmt);
        opsched_graph_free(g);
        if (rc == TOOL_EXIT_OK && limit > 0) rc = largest_batch(ctx, &mo, &ta, limit);
        return rc;
    }
    opsched_graph_totals tot;
    st = opsched_graph_totals_compute(g, &tot);
    if (st != OPSCHED_OK) {
        rc = tool_fail(ctx, st, mo.model);
    } else if (fmt == TOOL_FMT_TABLE) {
        print_table(g, &tot);
    } else if (fmt == TOOL_FMT_CSV) {
        if ((st = print_csv(ctx, g)) != OPSCHED_OK) rc = tool_fail(ctx, st, "CSV");
    } else if (!print_json(g, &tot)) {
        fprintf(stderr, "opsched: out of memory writing JSON\n");
        rc = TOOL_EXIT_FAIL;
    }
    opsched_graph_free(g);
    return rc;
}
