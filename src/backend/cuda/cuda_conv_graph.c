/*
 * cuda_conv_graph.c - 2-D convolution through cuDNN's graph ("backend")
 * API, the path PyTorch takes: an operation graph of one ConvolutionForward
 * and engine configs from cuDNN's heuristics.  "heuristic" takes mode A's
 * first config that the math mode allows and that finalizes into an
 * execution plan within the workspace limit (the fallback list's first
 * when none does); for a grouped convolution it takes the first
 * GRAPH_HEUR_A of mode A and mode B's first, times the different engines
 * once on scratch buffers and keeps the fastest.  On RegNet's grouped
 * convolutions these still miss the engine find picks (engine 52 at 16 us
 * against engine 51's 68 us): `--algo find` there.  "find" times up to
 * GRAPH_MAX_FIND plans of mode A and the fallback list (cudnn.benchmark
 * on).
 *
 * Math modes: the graph API has no math type; every mode computes in float
 * and the mode filters engines by their numerical notes.  Strict fp32 drops
 * TENSOR_CORE engines (for float data they round the inputs to TF32); every
 * mode drops DOWN_CONVERT_INPUTS, as PyTorch does.
 *
 * Tensors are given as logical NCHW dims with the plan's strides, so NHWC
 * needs nothing of its own; the filter's [M, C/g, kh, kw] against the
 * input's C gives cuDNN the group count; the node's four paddings go to the
 * pre- and post-paddings as they are, so asymmetric padding needs no pad
 * kernel.  Tensors claim 16-byte alignment, which launches check.
 *
 * Epilogue: the bias, and a Relu that is the output's only reader when the
 * options ask for fusion, join the graph as pointwise ADD and RELU_FWD ops
 * behind the convolution, through virtual float tensors, so one engine
 * (a runtime-fusion one, as a rule) writes the finished output.  When no
 * engine the math mode allows runs that graph, the plan silently takes the
 * convolution alone and does the epilogue in one kernel after it; either
 * way a requested Relu is done by the plan and reported fused.
 *
 * A plan keeps the variant packs of the pointer sets it ran with
 * (cu_bk_packs, cuda_bk.c), so a launch writes to its plan: like its
 * context, a plan is used by one thread at a time.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"
#include "backend/plan_cache.h"

#define GRAPH_MAX_FIND 16 /* execution plans "find" times */
#define GRAPH_HEUR_A 2    /* mode A's plans "heuristic" times (timed_engines) */
#define GRAPH_FIND_RUNS 3 /* timed runs of each, after one warm-up */

enum { UID_X = 1, UID_W = 2, UID_Y = 3, UID_B = 4, UID_CONV_OUT = 5, UID_ADD_OUT = 6 };

/* What planning a convolution decides: the operation graph, the chosen
 * execution plan and what it does.  Built once per configuration and
 * shared, through the device's plan cache, by every plan of that
 * configuration; never changed after it is built (launches only read the
 * execution plan), and freed with its last reference: the cache's and one
 * per graph_plan. */
typedef struct conv_choice {
    int refs;
    /* While it is planned: the in-process cache's key (NULL when none),
     * from which the plan store's keys are made (cu_bk_plan). */
    const char *graph_key;
    /* The graph the execution plan was built from, kept while it lives. */
    cudnnBackendDescriptor_t x, w, y, conv, op, graph, cfg, plan;
    /* The fused epilogue's bias, virtual tensors and pointwise ops. */
    cudnnBackendDescriptor_t b, conv_out, add_out, pw_add, pw_act, op_add, op_act;
    int fuse_bias, fuse_act; /* what the graph computes after the conv */
    cu_bk_pw act;            /* the activation's pointwise mode, when fuse_act */
    /* For a graph with the activation: 0 until measured against the graph
     * without it plus the activation's kernel, then 1 when fused was
     * faster and -1 when it was slower (the plan then takes the other). */
    int fused_wins;
    float fused_ms, apart_ms; /* what that measurement gave */
    /* For a depthwise convolution: 0 until the own kernel is measured
     * against cuDNN's plan and its epilogue, then 1 when it was faster and
     * -1 when not; dw_tile and dw_tile_h the kernel variant that
     * measured fastest (cuk_dw_desc.tile_w and tile_h), dw_vec_w and
     * dw_vec_h the fastest of the four-channel kernel's tiles (0: none),
     * which a prologue activation takes; dw_ms the time of the variant
     * kept (own or cuDNN's). */
    int dw_wins, dw_tile, dw_tile_h, dw_vec_w, dw_vec_h;
    float dw_ms;
    /* For a depthwise convolution reading an activation (a prologue): the
     * activation (cuk_ufn + 1) the verdict is for, 0 until measured; then
     * pre_wins 1 when the kernel applying it as it reads measured faster
     * than the convolution as kept plus the activation's pass, else -1. */
    int pre_fn, pre_wins;
    /* For a 1x1 convolution: 0 until the cuBLASLt product is measured
     * against cuDNN's plan and its epilogue, then 1 when it was faster and
     * -1 when not; one verdict each without a residual, with one, with
     * one and an activation after it, without one but with an
     * activation as a kernel after the product, and the same where the
     * product, its bias and the activation may run as one cuDNN graph
     * (pick_gemm's slot). */
    int gemm_wins[5];
    /* For a grouped convolution: the same verdict for its columns and
     * batched product (pick_im2col). */
    int ig_wins;
    int ig_mma;   /* 1: the implicit GEMM won that verdict, not the columns */
    int ig_slice; /* its fastest slice width (cuk_dw_desc.tile_w for it) */
    /* For a depthwise convolution with a LayerNormalization after it: 0
     * until the own kernel that runs both is measured against the
     * convolution's plan and the norm's kernel, then 1 when it was faster
     * and -1 when not; ln_tile its fastest variant (pick_norm). */
    int ln_wins, ln_tile;
    /* For a 1x1 convolution reading a gated map (fuse_gate): 0 until the
     * product with per-sample scaled weights is measured against the plan
     * as kept plus the multiply's pass, then 1 when it was faster and -1
     * when not; one verdict each without and with a residual. */
    int gate_wins[2];
    int64_t engine;   /* CUDNN_ATTR_ENGINE_GLOBAL_INDEX of the plan */
    size_t workspace; /* the execution plan's */
    /* The workspace limits under which planning again chooses the same:
     * [limit_lo, limit_hi).  limit_lo is the largest workspace of the
     * plans that were candidates, limit_hi the smallest of those passed
     * over for needing more than the limit (SIZE_MAX when none was);
     * every other reason to pass a config over does not depend on it. */
    size_t limit_lo, limit_hi;
} conv_choice;

typedef struct graph_plan {
    cu_plan base;
    conv_choice *ch; /* one reference */
    cu_bk_packs packs;
    cuk_type kt;
    cu_conv_bias bias; /* the epilogue kernel's work: none when fused */
    int use_dw;        /* 1: the own depthwise/grouped kernel runs instead of cuDNN */
    int res;           /* 1: the residual epilogue (input 3) runs after cuDNN's graph */
    int dw_nhwc;
    cuk_dw_desc dw;
    cu_act dw_act; /* the activation it applies */
    /* The activation it applies to its input as it reads it (a prologue,
     * opsched_conv_prologue_find): the four-channel kernel's. */
    cu_act dw_pre;
    int64_t dw_pre_numel; /* the input's elements */
    int use_gemm;         /* 1: a 1x1 convolution runs as the cuBLASLt product lt */
    cu_lt_gemm lt;
    /* An activation cuBLASLt's epilogue lacks (Clip, SiLU, HardSwish...),
     * run as one element-wise kernel after the product: PyTorch's compiler
     * runs these layers the same way. */
    cu_act gemm_act;
    int64_t gemm_numel; /* the output's elements, for that kernel */
    /* Or the product, its bias and that activation as one operation graph
     * of cuDNN's (cuda_matmul_graph.c) where that measured faster than lt
     * and the kernel: one reference, and the packs of its pointer sets.
     * Its engines use no workspace.  Operands a launch finds off the
     * graph's alignment run lt and gemm_act's kernel instead. */
    cu_mm_choice *mm;
    cu_bk_packs mm_packs;
    /* A grouped convolution in NHWC as its columns (cuk_im2col, into the
     * stream's scratch) and one strided-batched cuBLASLt product over the
     * groups, the bias and a Relu in its epilogue, chunk by chunk of ig_pc
     * output pixels when the columns outgrow the scratch (ig_tail for a
     * shorter last chunk); another activation as a kernel after it. */
    int use_ig;
    int ig_taps_outer; /* the filters are stored [m, kh, kw, cg] (NHWC) */
    /* Or as the implicit GEMM on the tensor cores (cuk_gconv_mma), which
     * applies ig_act itself; ig_cols: the columns are planned too (the
     * fallback for operands off its alignment). */
    int ig_mma, ig_cols, ig_tf32; /* ig_tf32: fp32 data in TF32 products */
    cu_act ig_act;
    cuk_dw_desc ig;
    cu_lt_gemm ig_full, ig_tail;
    int64_t ig_pc, ig_pixels;
    size_t ig_row_bytes; /* one output pixel's channels */
    /* A depthwise convolution in NHWC and the LayerNormalization over its
     * channels after it as one kernel (cuk_depthwise_ln), reading the
     * norm's scale and bias as inputs 3 and 4 and writing its output. */
    int use_ln;
    cuk_dw_desc ln;
    float ln_eps;
    /* A 1x1 convolution of a gated map, x * s (opsched_conv_gate_find), as
     * gate_n products, sample j's weights scaled by s[j] (cuk_gate_weights,
     * into the plan's workspace) and one strided-batched cuBLASLt product
     * over the samples; x is input 0, s input 5; the activation cuBLASLt's
     * epilogue lacks as gemm_act. */
    int use_gate;
    cu_lt_gemm gate_lt;
    int64_t gate_n, gate_m, gate_k;
} graph_plan;

/* An engine config that finalized into an execution plan. */
typedef struct candidate {
    cudnnBackendDescriptor_t cfg, plan;
    int64_t engine; /* CUDNN_ATTR_ENGINE_GLOBAL_INDEX */
    size_t workspace;
    float ms; /* "find": best time, < 0 when it did not run */
} candidate;

/* Why engine configs were passed over, for the message when none is left. */
typedef struct tally {
    int configs, filtered, unsupported, too_big;
    size_t min_too_big; /* the smallest workspace over the limit, SIZE_MAX when none */
} tally;

/* ---- descriptors ----------------------------------------------------- */

static void describe(const cu_plan_args *a, char *buf, size_t size)
{
    const opsched_conv_attr *c = &a->node->attr.conv;
    const opsched_tensor *x = cu_in(a, 0), *w = cu_in(a, 1);
    snprintf(buf, size,
             "kernel %lldx%lld, stride %lldx%lld, dilation %lldx%lld, pads %lld,%lld,%lld,%lld, "
             "groups %lld, input %lldx%lldx%lldx%lld, %lld outputs, %s, %s",
             (long long)w->shape.d[2], (long long)w->shape.d[3], (long long)c->stride[0],
             (long long)c->stride[1], (long long)c->dilation[0], (long long)c->dilation[1],
             (long long)c->pads[0], (long long)c->pads[1], (long long)c->pads[2],
             (long long)c->pads[3], (long long)(c->groups ? c->groups : 1),
             (long long)x->shape.d[0], (long long)x->shape.d[1], (long long)x->shape.d[2],
             (long long)x->shape.d[3], (long long)w->shape.d[0], opsched_math_name(a->opts->math),
             a->opts->layout == OPSCHED_LAYOUT_NHWC ? "NHWC" : "NCHW");
}

/* Finalizes a descriptor of the graph: cuDNN's "not supported" becomes
 * OPSCHED_ERR_UNSUPPORTED naming the configuration. */
static opsched_status finalize(const cu_plan_args *a, cudnnBackendDescriptor_t d, const char *what,
                               const char *file, int line)
{
    cudnnStatus_t e = cudnnBackendFinalize(d);
    if (e == CUDNN_STATUS_SUCCESS) return OPSCHED_OK;
    if (CUDNN_STATUS_CATEGORY(e) != CUDNN_STATUS_NOT_SUPPORTED)
        return cu_fail_cudnn(a->ctx, e, what, file, line);
    char why[256] = "", d_[320];
    cudnnGetLastErrorString(why, sizeof(why));
    describe(a, d_, sizeof(d_));
    return cu_unsupported(a, file, line, "cuDNN's graph API cannot build the %s: %s%s%s (%s)", what,
                          cudnnGetErrorString(e), why[0] ? ": " : "", why, d_);
}
#define FINALIZE(a, d, what) finalize((a), (d), (what), __FILE__, __LINE__)

/* ---- the operation graph --------------------------------------------- */

/* A 4-D tensor; a virtual one lives only inside the fused graph. */
static opsched_status make_desc(const cu_plan_args *a, int64_t uid, cudnnDataType_t dt,
                                const int64_t *dims, const int64_t *strides, int is_virtual,
                                cudnnBackendDescriptor_t *out)
{
    int64_t align = CU_BK_ALIGN;
    bool virt = is_virtual != 0;
    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_TENSOR_DESCRIPTOR, out));
    CU_BK_SET(a->ctx, *out, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    CU_BK_SET(a->ctx, *out, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    CU_BK_SET(a->ctx, *out, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    CU_BK_SET(a->ctx, *out, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    CU_BK_SET(a->ctx, *out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    if (virt) CU_BK_SET(a->ctx, *out, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
    return FINALIZE(a, *out, "tensor descriptor");
}

static opsched_status make_tensor(const cu_plan_args *a, int64_t uid, const opsched_tensor *t,
                                  cudnnBackendDescriptor_t *out)
{
    int64_t strides[4];
    cu_strides(a, t, strides);
    return make_desc(a, uid, cu_cudnn_type(a->dt), t->shape.d, strides, 0, out);
}

/* An intermediate of the fused graph: the output's shape, in float. */
static opsched_status make_virtual(const cu_plan_args *a, int64_t uid,
                                   cudnnBackendDescriptor_t *out)
{
    const opsched_tensor *y = cu_out(a, 0);
    int64_t strides[4];
    cu_strides(a, y, strides);
    return make_desc(a, uid, CUDNN_DATA_FLOAT, y->shape.d, strides, 1, out);
}

/* The bias as a [1, M, 1, 1] tensor that broadcasts over the output. */
static opsched_status make_bias(const cu_plan_args *a, cudnnBackendDescriptor_t *out)
{
    const opsched_tensor *y = cu_out(a, 0);
    int64_t m = y->shape.d[1], dims[4] = {1, m, 1, 1};
    int64_t nchw[4] = {m, 1, 1, 1}, nhwc[4] = {m, 1, m, m};
    return make_desc(a, UID_B, cu_cudnn_type(a->dt), dims, cu_is_nhwc(a, y) ? nhwc : nchw, 0, out);
}

/* A pointwise op y = mode(x[, b]) computed in float. */
static opsched_status make_pointwise(const cu_plan_args *a, const cu_bk_pw *m,
                                     cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                     cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t *pw,
                                     cudnnBackendDescriptor_t *op)
{
    return cu_bk_pw_op(a, "convolution", m, x, b, y, pw, op);
}

/* The output the convolution's arithmetic gives must be the graph's. */
static opsched_status check_shape(const cu_plan_args *a)
{
    const opsched_conv_attr *c = &a->node->attr.conv;
    const opsched_tensor *x = cu_in(a, 0), *w = cu_in(a, 1), *y = cu_out(a, 0);
    int64_t o[2];
    for (int i = 0; i < 2; i++) {
        int64_t in = x->shape.d[2 + i] + c->pads[i] + c->pads[2 + i];
        int64_t span = c->dilation[i] * (w->shape.d[2 + i] - 1) + 1;
        if (c->stride[i] < 1 || c->dilation[i] < 1 || c->pads[i] < 0 || c->pads[2 + i] < 0)
            return CU_UNSUPPORTED(a, "stride, dilation or padding out of range");
        o[i] = in >= span ? (in - span) / c->stride[i] + 1 : 0;
    }
    if (y->shape.d[0] != x->shape.d[0] || y->shape.d[1] != w->shape.d[0] || y->shape.d[2] != o[0] ||
        y->shape.d[3] != o[1])
        return OS_FAIL(a->ctx, OPSCHED_ERR_INVALID_ARG,
                       "cuda: node '%s': the graph's output is %lldx%lldx%lldx%lld, the "
                       "convolution gives %lldx%lldx%lldx%lld",
                       a->node->name, (long long)y->shape.d[0], (long long)y->shape.d[1],
                       (long long)y->shape.d[2], (long long)y->shape.d[3], (long long)x->shape.d[0],
                       (long long)w->shape.d[0], (long long)o[0], (long long)o[1]);
    return OPSCHED_OK;
}

static opsched_status build_graph(const cu_plan_args *a, conv_choice *p)
{
    const opsched_conv_attr *c = &a->node->attr.conv;
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t dims = 2, pre[2] = {c->pads[0], c->pads[1]}, post[2] = {c->pads[2], c->pads[3]};
    float alpha = 1.0f, beta = 0.0f;
    OS_TRY(make_tensor(a, UID_X, cu_in(a, 0), &p->x));
    OS_TRY(make_tensor(a, UID_W, cu_in(a, 1), &p->w));
    OS_TRY(make_tensor(a, UID_Y, cu_out(a, 0), &p->y));
    int fused = p->fuse_bias || p->fuse_act;
    if (fused) OS_TRY(make_virtual(a, UID_CONV_OUT, &p->conv_out));

    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &p->conv));
    CU_BK_SET(a->ctx, p->conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    CU_BK_SET(a->ctx, p->conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
              &mode);
    CU_BK_SET(a->ctx, p->conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims);
    CU_BK_SET(a->ctx, p->conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pre);
    CU_BK_SET(a->ctx, p->conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, post);
    CU_BK_SET(a->ctx, p->conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, c->dilation);
    CU_BK_SET(a->ctx, p->conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2,
              c->stride);
    OS_TRY(FINALIZE(a, p->conv, "convolution descriptor"));

    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &p->op));
    CU_BK_SET(a->ctx, p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->x);
    CU_BK_SET(a->ctx, p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->w);
    CU_BK_SET(a->ctx, p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, fused ? &p->conv_out : &p->y);
    CU_BK_SET(a->ctx, p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->conv);
    CU_BK_SET(a->ctx, p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1,
              &alpha);
    CU_BK_SET(a->ctx, p->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1,
              &beta);
    OS_TRY(FINALIZE(a, p->op, "convolution operation"));

    cudnnBackendDescriptor_t ops[3] = {p->op, NULL, NULL}, last = p->conv_out;
    int64_t n_ops = 1;
    if (p->fuse_bias) {
        static const cu_bk_pw add = {.mode = CUDNN_POINTWISE_ADD, .name = "bias"};
        if (p->fuse_act) OS_TRY(make_virtual(a, UID_ADD_OUT, &p->add_out));
        OS_TRY(make_bias(a, &p->b));
        OS_TRY(make_pointwise(a, &add, last, p->b, p->fuse_act ? p->add_out : p->y, &p->pw_add,
                              &p->op_add));
        ops[n_ops++] = p->op_add;
        last = p->add_out;
    }
    if (p->fuse_act) {
        OS_TRY(make_pointwise(a, &p->act, last, NULL, p->y, &p->pw_act, &p->op_act));
        ops[n_ops++] = p->op_act;
    }

    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &p->graph));
    CU_BK_SET(a->ctx, p->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1,
              &a->dev->cudnn);
    CU_BK_SET(a->ctx, p->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n_ops,
              ops);
    return FINALIZE(a, p->graph, "operation graph");
}

/* ---- engine configs -------------------------------------------------- */

/* Makes cfg a candidate when the math mode allows its engine, cuDNN builds
 * an execution plan from it and the plan's workspace fits; c->plan stays
 * NULL otherwise and t says why.  A candidate takes cfg over. */
static opsched_status try_config(const cu_plan_args *a, cudnnBackendDescriptor_t cfg, size_t limit,
                                 const char *store_key, candidate *c, tally *t)
{
    cudnnBackendDescriptor_t plan = NULL;
    cudnnStatus_t e = CUDNN_STATUS_SUCCESS;
    int64_t ws = 0, got = 0;
    int allowed = 0;
    opsched_status st = OPSCHED_OK;
    memset(c, 0, sizeof(c[0]));
    t->configs++;
    OS_TRY(cu_bk_engine_info(a, cfg, &c->engine, &allowed));
    if (!allowed) {
        t->filtered++;
        return OPSCHED_OK;
    }
    OS_TRY(cu_bk_plan(a, cfg, store_key, &plan, &e));
    if (!plan) {
        /* An engine that turns down this configuration: try the next. */
        if (CUDNN_STATUS_CATEGORY(e) == CUDNN_STATUS_NOT_SUPPORTED ||
            CUDNN_STATUS_CATEGORY(e) == CUDNN_STATUS_BAD_PARAM)
            t->unsupported++;
        else
            st = cu_fail_cudnn(a->ctx, e, "cudnnBackendFinalize(execution plan)", __FILE__,
                               __LINE__);
        return st;
    }
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                              CUDNN_TYPE_INT64, 1, &got, &ws),
                     done);
    if (ws < 0 || (uint64_t)ws > limit) {
        t->too_big++;
        if (ws > 0 && (uint64_t)ws < t->min_too_big) t->min_too_big = (size_t)ws;
        goto done;
    }
    c->cfg = cfg;
    c->plan = plan;
    c->workspace = (size_t)ws;
    plan = NULL;
done:
    cu_bk_free(&plan);
    return st;
}

static void candidates_free(candidate *c, int n)
{
    for (int i = 0; i < n; i++) {
        cu_bk_free(&c[i].plan);
        cu_bk_free(&c[i].cfg);
    }
}

/* Whether "heuristic" times a few engines rather than taking mode A's
 * first: for grouped convolutions, where that pick measured several times
 * slower than the best.  Dense ones take mode A's first: timing three
 * engines for those of 0.5 GFLOP or more measured no faster at batch 16
 * fp16 (ResNet-18 0.358 ms timed against 0.353 first, FCN-ResNet50 10.12
 * against 10.03 on an H200; bench/results/networks/h200-2026-11-30/
 * dense-engines/) and cost planning time.  --ablate engines: never. */
static int timed_engines(const cu_plan_args *a)
{
    if (a->opts->ablate & OPSCHED_ABLATE_ENGINES) return 0;
    return a->node->attr.conv.groups > 1;
}

/* The candidates, in the heuristics' order: for find, up to GRAPH_MAX_FIND
 * of mode A, then the fallback list's; under heuristic, up to
 * GRAPH_HEUR_A of mode A and mode B's first where timed_engines, otherwise
 * mode A's first, and the fallback list's first when nothing else is
 * left.  An engine already taken is not taken twice. */
static opsched_status collect(const cu_plan_args *a, conv_choice *p, size_t limit, int find,
                              candidate *c, int *n, tally *t)
{
    static const cudnnBackendHeurMode_t modes[3] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B,
                                                    CUDNN_HEUR_MODE_FALLBACK};
    int grouped = timed_engines(a);
    const int quota[3] = {find      ? GRAPH_MAX_FIND
                          : grouped ? GRAPH_HEUR_A
                                    : 1,
                          find || !grouped ? 0 : 1, find ? GRAPH_MAX_FIND : 1};
    int max = find ? GRAPH_MAX_FIND : grouped ? GRAPH_HEUR_A + 1 : 1;
    opsched_status st = OPSCHED_OK;
    /* The graph built: the cache key's, with the epilogue it kept. */
    char gk[700];
    const char *store_key = NULL;
    if (p->graph_key) {
        int w = snprintf(gk, sizeof(gk), "%s|graph bias %d act %d", p->graph_key, p->fuse_bias,
                         p->fuse_act);
        if (w > 0 && (size_t)w < sizeof(gk)) store_key = gk;
    }
    *n = 0;
    for (int m = 0; m < 3 && *n < max && st == OPSCHED_OK; m++) {
        if (quota[m] == 0 || (modes[m] == CUDNN_HEUR_MODE_FALLBACK && !find && *n > 0)) continue;
        cudnnBackendDescriptor_t *cfgs = NULL;
        int64_t k = 0;
        int taken = 0;
        OS_TRY(cu_bk_configs(a->ctx, p->graph, modes[m], &cfgs, &k));
        for (int64_t i = 0; i < k && *n < max && taken < quota[m] && st == OPSCHED_OK; i++) {
            st = try_config(a, cfgs[i], limit, store_key, &c[*n], t);
            if (st != OPSCHED_OK || !c[*n].plan) continue;
            int dup = 0;
            for (int j = 0; j < *n; j++)
                dup |= c[j].engine == c[*n].engine;
            if (dup) {
                candidates_free(&c[*n], 1); /* its cfg is cfgs[i]: freed once, here */
                cfgs[i] = NULL;
                continue;
            }
            cfgs[i] = NULL;
            (*n)++;
            taken++;
        }
        cu_bk_configs_free(cfgs, k);
    }
    return st;
}

/* ---- variant packs and launches -------------------------------------- */

/* b is the bias when the graph adds it, and NULL otherwise. */
static opsched_status pack_build(opsched_ctx *ctx, void *ws, const void *x, const void *w,
                                 const void *b, void *y, cudnnBackendDescriptor_t *out)
{
    const int64_t uids[4] = {UID_X, UID_W, UID_Y, UID_B};
    void *ptrs[4] = {(void *)x, (void *)w, y, (void *)b};
    return cu_bk_pack_build(ctx, ws, uids, ptrs, b ? 4 : 3, out);
}

/* The plan's variant pack for these pointers, built on first sight. */
static opsched_status pack_for(opsched_ctx *ctx, graph_plan *p, const void *x, const void *w,
                               const void *b, void *y, cudnnBackendDescriptor_t *out)
{
    const int64_t uids[4] = {UID_X, UID_W, UID_Y, UID_B};
    void *ptrs[4] = {(void *)x, (void *)w, y, (void *)b};
    int n = b ? 4 : 3;
    return cu_bk_pack_for(ctx, &p->packs, p->base.workspace, uids, ptrs, n, n, "convolution", out);
}

/* Frees the operation graph and what it was built from. */
static void graph_free(conv_choice *p)
{
    cu_bk_free(&p->graph);
    cu_bk_free(&p->op_act);
    cu_bk_free(&p->pw_act);
    cu_bk_free(&p->op_add);
    cu_bk_free(&p->pw_add);
    cu_bk_free(&p->b);
    cu_bk_free(&p->add_out);
    cu_bk_free(&p->conv_out);
    cu_bk_free(&p->op);
    cu_bk_free(&p->conv);
    cu_bk_free(&p->y);
    cu_bk_free(&p->w);
    cu_bk_free(&p->x);
}

static void choice_unref(conv_choice *c)
{
    if (!c || --c->refs > 0) return;
    cu_bk_free(&c->plan);
    cu_bk_free(&c->cfg);
    graph_free(c);
    free(c);
}

void cu_conv_choice_release(void *choice)
{
    choice_unref(choice);
}

static void graph_release(cu_plan *base)
{
    graph_plan *p = (graph_plan *)base;
    cu_bk_packs_free(&p->packs);
    cu_bk_packs_free(&p->mm_packs);
    cu_mm_choice_unref(p->mm);
    p->mm = NULL;
    cu_lt_gemm_free(&p->lt);
    cu_lt_gemm_free(&p->ig_full);
    cu_lt_gemm_free(&p->ig_tail);
    cu_lt_gemm_free(&p->gate_lt);
    choice_unref(p->ch);
    p->ch = NULL;
}

/* The product and, when cuBLASLt's epilogue lacks the activation, the
 * activation's kernel after it. */
static opsched_status gemm_enqueue(opsched_ctx *ctx, cu_device *dev, graph_plan *p, cudaStream_t s,
                                   const void *w, const void *x, const void *b, const void *r,
                                   void *y)
{
    if (p->mm && !r && (uintptr_t)x % CU_BK_ALIGN == 0 && (uintptr_t)w % CU_BK_ALIGN == 0 &&
        (uintptr_t)b % CU_BK_ALIGN == 0 && (uintptr_t)y % CU_BK_ALIGN == 0)
        return cu_mm_graph_run(ctx, dev, p->mm, &p->mm_packs, NULL, s, x, w, b, y);
    OS_TRY(cu_lt_gemm_run(ctx, dev, &p->lt, s, w, x, b, r, y));
    if (p->gemm_act.on)
        CUDA_CHECK(ctx, cuk_ew_unary(p->gemm_act.fn, &p->gemm_act.prm, (cuk_dtype)p->kt,
                                     (cuk_dtype)p->kt, p->gemm_numel, y, y, s));
    return OPSCHED_OK;
}

/* The grouped convolution's columns and products, chunk by chunk, then
 * the activation the epilogue lacks. */
static opsched_status ig_enqueue(opsched_ctx *ctx, cu_device *dev, graph_plan *p, cudaStream_t s,
                                 const void *x, const void *w, const void *b, void *y)
{
    if (p->ig_mma) {
        cudaError_t e = cuk_gconv_mma(p->kt, p->ig_tf32, &p->ig, p->ig_taps_outer, x, w, b,
                                      p->ig_act.on, p->ig_act.fn, &p->ig_act.prm, y, s);
        /* operands off the kernel's 16-byte alignment: the columns, where
         * they were planned */
        if (e != cudaErrorNotSupported || !p->ig_cols) {
            CUDA_CHECK(ctx, e);
            return OPSCHED_OK;
        }
    }
    void *col = cu_stream_scratch(dev, s);
    if (!col)
        return OS_FAIL(ctx, OPSCHED_ERR_BACKEND,
                       "cuda: a grouped convolution's columns have no scratch on this stream");
    for (int64_t p0 = 0; p0 < p->ig_pixels; p0 += p->ig_pc) {
        int64_t pc = p->ig_pixels - p0 < p->ig_pc ? p->ig_pixels - p0 : p->ig_pc;
        CUDA_CHECK(ctx, cuk_im2col(p->kt, &p->ig, p->ig_taps_outer, x, col, p0, pc, s));
        OS_TRY(cu_lt_gemm_run(ctx, dev, pc == p->ig_pc ? &p->ig_full : &p->ig_tail, s, w, col, b,
                              NULL, (char *)y + (size_t)p0 * p->ig_row_bytes));
    }
    if (p->gemm_act.on)
        CUDA_CHECK(ctx, cuk_ew_unary(p->gemm_act.fn, &p->gemm_act.prm, (cuk_dtype)p->kt,
                                     (cuk_dtype)p->kt, p->gemm_numel, y, y, s));
    return OPSCHED_OK;
}

/* The weights scaled per sample, the batched product, then the activation
 * the epilogue lacks. */
static opsched_status gate_enqueue(opsched_ctx *ctx, cu_device *dev, graph_plan *p, cudaStream_t s,
                                   const void *x, const void *w, const void *b, const void *r,
                                   const void *scale, void *y)
{
    CUDA_CHECK(ctx, cuk_gate_weights(p->kt, p->gate_n, p->gate_m, p->gate_k, w, scale,
                                     p->base.workspace, s));
    OS_TRY(cu_lt_gemm_run(ctx, dev, &p->gate_lt, s, p->base.workspace, x, b, r, y));
    if (p->gemm_act.on)
        CUDA_CHECK(ctx, cuk_ew_unary(p->gemm_act.fn, &p->gemm_act.prm, (cuk_dtype)p->kt,
                                     (cuk_dtype)p->kt, p->gemm_numel, y, y, s));
    return OPSCHED_OK;
}

static opsched_status graph_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                   void *const *in, void *const *out)
{
    graph_plan *p = (graph_plan *)base;
    cudnnBackendDescriptor_t pack = NULL;
    if (p->use_gate)
        return gate_enqueue(ctx, dev, p, s, in[0], in[1], in[2], p->res ? in[3] : NULL, in[5],
                            out[0]);
    if (p->use_ln) {
        CUDA_CHECK(ctx, cuk_depthwise_ln(p->kt, &p->ln, in[0], in[1], in[2], in[3], in[4],
                                         p->ln_eps, out[0], s));
        return OPSCHED_OK;
    }
    if (p->use_ig)
        return ig_enqueue(ctx, dev, p, s, in[0], in[1], base->n_in > 2 ? in[2] : NULL, out[0]);
    if (p->use_gemm)
        return gemm_enqueue(ctx, dev, p, s, in[1], in[0], base->n_in > 2 ? in[2] : NULL,
                            p->res ? in[3] : NULL, out[0]);
    if (p->use_dw && p->dw_pre.on) {
        const void *b = base->n_in > 2 ? in[2] : NULL;
        cudaError_t e =
            cuk_depthwise_vec(p->kt, &p->dw, in[0], in[1], b, p->dw_act.on, p->dw_act.fn,
                              &p->dw_act.prm, 1, p->dw_pre.fn, &p->dw_pre.prm, out[0], s);
        if (e == cudaErrorNotSupported) {
            /* tensors the kernel cannot read four values at a time: the
             * activation in place (its input has no other reader), then
             * the convolution */
            CUDA_CHECK(ctx,
                       cuk_ew_unary(p->dw_pre.fn, &p->dw_pre.prm, (cuk_dtype)p->kt,
                                    (cuk_dtype)p->kt, p->dw_pre_numel, in[0], (void *)in[0], s));
            e = cuk_depthwise(p->kt, &p->dw, p->dw_nhwc, in[0], in[1], b, p->dw_act.on,
                              p->dw_act.fn, &p->dw_act.prm, out[0], s);
        }
        CUDA_CHECK(ctx, e);
        return OPSCHED_OK;
    }
    if (p->use_dw) {
        CUDA_CHECK(ctx, cuk_depthwise(p->kt, &p->dw, p->dw_nhwc, in[0], in[1],
                                      base->n_in > 2 ? in[2] : NULL, p->dw_act.on, p->dw_act.fn,
                                      &p->dw_act.prm, out[0], s));
        return OPSCHED_OK;
    }
    OS_TRY(pack_for(ctx, p, in[0], in[1], p->ch->fuse_bias ? in[2] : NULL, out[0], &pack));
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    CUDNN_CHECK(ctx, cudnnBackendExecute(dev->cudnn, p->ch->plan, pack));
    if (p->res) {
        const cu_conv_bias *b = &p->bias;
        CUDA_CHECK(ctx, cuk_conv_residual(p->kt, b->numel, b->channels, b->channel_stride,
                                          b->on ? in[2] : NULL, in[3], b->act.on, b->act.fn,
                                          &b->act.prm, out[0], s));
        return OPSCHED_OK;
    }
    return cu_conv_bias_add(ctx, &p->bias, p->kt, base->n_in > 2 ? in[2] : NULL, out[0], s);
}

/* ---- find ------------------------------------------------------------ */

static size_t tensor_bytes(const cu_plan_args *a, const opsched_tensor *t)
{
    return (size_t)opsched_shape_numel(&t->shape) * opsched_dtype_size(a->dt);
}

/* One warm-up run, then the best of GRAPH_FIND_RUNS into c->ms; a plan
 * cuDNN refuses to run is left at -1. */
static opsched_status time_one(const cu_plan_args *a, candidate *c, cudnnBackendDescriptor_t pack,
                               cudaEvent_t *ev, cudaStream_t s)
{
    cudnnHandle_t h = a->dev->cudnn;
    cudnnStatus_t e = cudnnBackendExecute(h, c->plan, pack);
    if (e != CUDNN_STATUS_SUCCESS) {
        char why[256] = "";
        cudnnGetLastErrorString(why, sizeof(why));
        (void)cudaGetLastError();
        os_log(a->ctx, OPSCHED_LOG_DEBUG, "cuda: node '%s': find: engine %lld did not run: %s%s%s",
               a->node->name, (long long)c->engine, cudnnGetErrorString(e), why[0] ? ": " : "",
               why);
        return OPSCHED_OK;
    }
    CUDA_CHECK(a->ctx, cudaStreamSynchronize(s));
    for (int r = 0; r < GRAPH_FIND_RUNS; r++) {
        float ms = 0.0f;
        CUDA_CHECK(a->ctx, cudaEventRecord(ev[0], s));
        CUDNN_CHECK(a->ctx, cudnnBackendExecute(h, c->plan, pack));
        CUDA_CHECK(a->ctx, cudaEventRecord(ev[1], s));
        CUDA_CHECK(a->ctx, cudaEventSynchronize(ev[1]));
        CUDA_CHECK(a->ctx, cudaEventElapsedTime(&ms, ev[0], ev[1]));
        if (c->ms < 0.0f || ms < c->ms) c->ms = ms;
    }
    return OPSCHED_OK;
}

/* Times every candidate on zeroed scratch tensors and a workspace as large
 * as the hungriest one wants (shrunk while it does not fit; candidates it
 * cannot serve are not timed). */
static opsched_status time_candidates(const cu_plan_args *a, const conv_choice *p, candidate *c,
                                      int n)
{
    void *x = NULL, *w = NULL, *b = NULL, *y = NULL, *ws = NULL;
    cudaEvent_t ev[2] = {NULL, NULL};
    cudnnBackendDescriptor_t pack = NULL;
    size_t xb = tensor_bytes(a, cu_in(a, 0)), wb = tensor_bytes(a, cu_in(a, 1));
    size_t yb = tensor_bytes(a, cu_out(a, 0)), ws_bytes = 0;
    cudaStream_t s = a->dev->stream;
    opsched_status st = OPSCHED_OK;
    for (int i = 0; i < n; i++) {
        c[i].ms = -1.0f;
        if (c[i].workspace > ws_bytes) ws_bytes = c[i].workspace;
    }
    OS_TRY_GOTO(st, cu_malloc(a->ctx, xb, &x), done);
    OS_TRY_GOTO(st, cu_malloc(a->ctx, wb, &w), done);
    OS_TRY_GOTO(st, cu_malloc(a->ctx, yb, &y), done);
    CUDA_CHECK_GOTO(a->ctx, st, cudaMemset(x, 0, xb), done);
    CUDA_CHECK_GOTO(a->ctx, st, cudaMemset(w, 0, wb), done);
    if (p->fuse_bias) {
        size_t bb = tensor_bytes(a, cu_in(a, 2));
        OS_TRY_GOTO(st, cu_malloc(a->ctx, bb, &b), done);
        CUDA_CHECK_GOTO(a->ctx, st, cudaMemset(b, 0, bb), done);
    }
    while (ws_bytes && cudaMalloc(&ws, ws_bytes) != cudaSuccess) {
        size_t next = 0;
        (void)cudaGetLastError();
        ws = NULL;
        for (int i = 0; i < n; i++)
            if (c[i].workspace < ws_bytes && c[i].workspace > next) next = c[i].workspace;
        ws_bytes = next;
    }
    OS_TRY_GOTO(st, pack_build(a->ctx, ws, x, w, b, y, &pack), done);
    CUDA_CHECK_GOTO(a->ctx, st, cudaEventCreate(&ev[0]), done);
    CUDA_CHECK_GOTO(a->ctx, st, cudaEventCreate(&ev[1]), done);
    CUDNN_CHECK_GOTO(a->ctx, st, cudnnSetStream(a->dev->cudnn, s), done);
    for (int i = 0; i < n; i++) {
        if (c[i].workspace > ws_bytes) continue;
        OS_TRY_GOTO(st, time_one(a, &c[i], pack, ev, s), done);
        os_log(a->ctx, OPSCHED_LOG_DEBUG, "cuda: node '%s': find: engine %lld, %zu B: %.4f ms",
               a->node->name, (long long)c[i].engine, c[i].workspace, (double)c[i].ms);
    }
done:
    cu_bk_free(&pack);
    for (int i = 0; i < 2; i++)
        if (ev[i]) (void)cudaEventDestroy(ev[i]);
    (void)cudaFree(ws);
    (void)cudaFree(x);
    (void)cudaFree(w);
    (void)cudaFree(b);
    (void)cudaFree(y);
    (void)cudaGetLastError();
    return st;
}

static int fastest(const candidate *c, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (c[i].ms >= 0.0f && (best < 0 || c[i].ms < c[best].ms)) best = i;
    return best;
}

/* ---- the planner ----------------------------------------------------- */

/* Builds p's graph (with the epilogue p->fuse_* asks for) and keeps the
 * chosen execution plan in p->plan, its engine and workspace in p; on
 * failure p keeps no execution plan.  Either way p's limit range narrows
 * to the limits under which the same configs would be passed over. */
static opsched_status choose(const cu_plan_args *a, conv_choice *p, int find, size_t limit)
{
    candidate c[GRAPH_MAX_FIND];
    tally t = {0, 0, 0, 0, SIZE_MAX};
    int n = 0, keep = 0;
    char d[320];
    opsched_status st = OPSCHED_OK;
    memset(c, 0, sizeof(c));
    OS_TRY(build_graph(a, p));
    st = collect(a, p, limit, find, c, &n, &t);
    if (t.min_too_big < p->limit_hi) p->limit_hi = t.min_too_big;
    if (st != OPSCHED_OK) goto done;
    if (n == 0) {
        describe(a, d, sizeof(d));
        st = CU_UNSUPPORTED(a,
                            "%s: none of the %d engine configs cuDNN's graph API proposes runs "
                            "this convolution%s (%d excluded by the math mode's numerical notes, "
                            "%d not supported, %d need more than %zu bytes of workspace; %s); "
                            "heuristic_v7 tries the legacy API",
                            find ? "find" : "heuristic", t.configs,
                            p->fuse_bias || p->fuse_act ? " with its epilogue" : "", t.filtered,
                            t.unsupported, t.too_big, limit, d);
        goto done;
    }
    if (n > 1) {
        OS_TRY_GOTO(st, time_candidates(a, p, c, n), done);
        keep = fastest(c, n);
        if (keep < 0) {
            describe(a, d, sizeof(d));
            st = CU_UNSUPPORTED(a, "%s: none of the %d execution plans ran (%s)",
                                find ? "find" : "heuristic", n, d);
            goto done;
        }
    }
    for (int i = 0; i < n; i++)
        if (c[i].workspace > p->limit_lo) p->limit_lo = c[i].workspace;
    p->cfg = c[keep].cfg;
    p->plan = c[keep].plan;
    c[keep].cfg = c[keep].plan = NULL;
    p->workspace = c[keep].workspace;
    p->engine = c[keep].engine;
done:
    candidates_free(c, n);
    return st;
}

/* Plans the convolution from scratch: the graph with the epilogue asked
 * for (bias when the node has one, the activation when act is not NULL),
 * or without it when no engine runs that.  *cacheable 0: the epilogue was
 * given up for a reason that may pass (memory, a cuDNN error), so the
 * choice is not kept. */
static opsched_status plan_choice(const cu_plan_args *a, int find, int bias, const cu_bk_pw *act,
                                  size_t limit, const char *key, conv_choice **out, int *cacheable)
{
    int relu = act != NULL;
    opsched_status st = OPSCHED_OK;
    conv_choice *c = calloc(1, sizeof(*c));
    if (!c) return OS_NOMEM(a->ctx);
    c->refs = 1;
    c->limit_hi = SIZE_MAX;
    c->fuse_bias = bias;
    c->fuse_act = relu;
    if (act) c->act = *act;
    c->graph_key = key;
    *cacheable = 1;
    if (bias || relu) {
        st = choose(a, c, find, limit);
        if (st != OPSCHED_OK) {
            /* No engine fuses the epilogue here: the convolution alone and a
             * kernel after it do the same work. */
            os_log(a->ctx, OPSCHED_LOG_DEBUG,
                   "cuda: node '%s': the epilogue runs as a kernel: %s (%s)", a->node->name,
                   opsched_ctx_last_error(a->ctx), opsched_status_str(st));
            if (st != OPSCHED_ERR_UNSUPPORTED) *cacheable = 0;
            opsched_ctx_clear_error(a->ctx);
            graph_free(c);
            c->fuse_bias = c->fuse_act = 0;
            st = OPSCHED_OK;
        }
    }
    if (!c->plan) st = choose(a, c, find, limit);
    c->graph_key = NULL;
    if (st != OPSCHED_OK) {
        choice_unref(c);
        return st;
    }
    *out = c;
    return OPSCHED_OK;
}

/* The cache key: everything planning depends on besides the device (the
 * cache is the device's) and the workspace limit (the choice's limit
 * range).  0 when it does not fit buf (the plan is then not cached). */
static int choice_key(const cu_plan_args *a, int find, int bias, const cu_bk_pw *act, char *buf,
                      size_t size)
{
    const opsched_conv_attr *c = &a->node->attr.conv;
    const opsched_tensor *t[3] = {cu_in(a, 0), cu_in(a, 1), cu_out(a, 0)};
    static const char *const names[3] = {"x", "w", "y"};
    int w = snprintf(buf, size,
                     "conv2d %s math %s layout %s dtype %s align %d stride %lld,%lld dilation "
                     "%lld,%lld pads %lld,%lld,%lld,%lld groups %lld bias %d act %s %.9g %.9g "
                     "%.9g %.9g engines %d",
                     find ? "find" : "heuristic", opsched_math_name(a->opts->math),
                     a->opts->layout == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw",
                     opsched_dtype_name(a->dt), CU_BK_ALIGN, (long long)c->stride[0],
                     (long long)c->stride[1], (long long)c->dilation[0], (long long)c->dilation[1],
                     (long long)c->pads[0], (long long)c->pads[1], (long long)c->pads[2],
                     (long long)c->pads[3], (long long)(c->groups ? c->groups : 1), bias,
                     act ? act->name : "none", act ? act->lower : 0.0, act ? act->upper : 0.0,
                     act ? act->slope : 0.0, act ? act->param : 0.0,
                     !(a->opts->ablate & OPSCHED_ABLATE_ENGINES));
    if (w < 0 || (size_t)w >= size) return 0;
    size_t n = (size_t)w;
    for (int i = 0; i < 3; i++) {
        int64_t st[OPSCHED_MAX_DIMS];
        cu_strides(a, t[i], st);
        w = snprintf(buf + n, size - n, " %s", names[i]);
        if (w < 0 || (size_t)w >= size - n) return 0;
        n += (size_t)w;
        for (int d = 0; d < t[i]->shape.ndim; d++) {
            w = snprintf(buf + n, size - n, "%s%lld/%lld", d ? "x" : " ",
                         (long long)t[i]->shape.d[d], (long long)st[d]);
            if (w < 0 || (size_t)w >= size - n) return 0;
            n += (size_t)w;
        }
    }
    return 1;
}

/* The choice for (find, bias, act), from the device's cache or planned
 * (and cached); one reference for the caller. */
static opsched_status get_choice(const cu_plan_args *a, int find, int bias, const cu_bk_pw *act,
                                 size_t limit, conv_choice **out)
{
    char key[512];
    conv_choice *ch = NULL;
    os_plan_cache *cache = a->dev->conv_plans;
    int keyed = cache && choice_key(a, find, bias, act, key, sizeof(key));
    if (keyed) {
        conv_choice *c = os_plan_cache_get(cache, key);
        if (c && c->limit_lo <= limit && limit < c->limit_hi) {
            ch = c;
            ch->refs++;
        }
        os_plan_cache_count(cache, ch != NULL);
    }
    if (!ch) {
        int cacheable = 0;
        OS_TRY(plan_choice(a, find, bias, act, limit, keyed ? key : NULL, &ch, &cacheable));
        if (keyed && cacheable) {
            ch->refs++; /* the cache's */
            if (os_plan_cache_put(cache, key, ch) != 0) ch->refs--;
        }
    }
    *out = ch;
    return OPSCHED_OK;
}

/* Zeroed scratch tensors a timed verdict runs on: the input, the filter,
 * the bias where the node has one, the output, and with `res` a residual
 * of the output's size. */
typedef struct conv_scratch {
    void *x, *w, *b, *y, *r;
} conv_scratch;

static void scratch_free(conv_scratch *sc)
{
    (void)cudaFree(sc->x);
    (void)cudaFree(sc->w);
    (void)cudaFree(sc->b);
    (void)cudaFree(sc->y);
    (void)cudaFree(sc->r);
    (void)cudaGetLastError();
    memset(sc, 0, sizeof(*sc));
}

static opsched_status scratch_alloc(const cu_plan_args *a, int res, conv_scratch *sc)
{
    size_t yb = tensor_bytes(a, cu_out(a, 0));
    opsched_status st = OPSCHED_OK;
    memset(sc, 0, sizeof(*sc));
    OS_TRY_GOTO(st, cu_zeroed(a, tensor_bytes(a, cu_in(a, 0)), &sc->x), fail);
    OS_TRY_GOTO(st, cu_zeroed(a, tensor_bytes(a, cu_in(a, 1)), &sc->w), fail);
    OS_TRY_GOTO(st, cu_zeroed(a, yb, &sc->y), fail);
    if (cu_in(a, 2)) OS_TRY_GOTO(st, cu_zeroed(a, tensor_bytes(a, cu_in(a, 2)), &sc->b), fail);
    if (res) OS_TRY_GOTO(st, cu_zeroed(a, yb, &sc->r), fail);
    return OPSCHED_OK;
fail:
    scratch_free(sc);
    return st;
}

/* A choice and its kernel epilogue on scratch tensors (time_choice). */
typedef struct choice_run {
    const conv_choice *ch;
    const cu_conv_bias *epi;
    cudnnBackendDescriptor_t pack;
    int res;
    void *b, *r, *y;
} choice_run;

static opsched_status enqueue_choice(const cu_plan_args *a, void *env, cudaStream_t s)
{
    choice_run *c = env;
    const cu_conv_bias *epi = c->epi;
    CUDNN_CHECK(a->ctx, cudnnBackendExecute(a->dev->cudnn, c->ch->plan, c->pack));
    if (c->res) {
        CUDA_CHECK(a->ctx, cuk_conv_residual(a->kt, epi->numel, epi->channels, epi->channel_stride,
                                             epi->on ? c->b : NULL, c->r, epi->act.on, epi->act.fn,
                                             &epi->act.prm, c->y, s));
        return OPSCHED_OK;
    }
    return cu_conv_bias_add(a->ctx, epi, a->kt, c->b, c->y, s);
}

/* The best of GRAPH_FIND_RUNS (after a warm-up), per launch of
 * CU_TIME_REPS, of choice ch run as a plan runs it, followed by the
 * kernel epilogue epi does (bias and activation cuDNN's graph left out, or
 * with res the residual's kernel), on zeroed scratch tensors. */
static opsched_status time_choice(const cu_plan_args *a, const conv_choice *ch,
                                  const cu_conv_bias *epi, int res, float *best)
{
    conv_scratch sc;
    void *ws = NULL;
    cudnnBackendDescriptor_t pack = NULL;
    opsched_status st = OPSCHED_OK;
    *best = -1.0f;
    OS_TRY(scratch_alloc(a, res, &sc));
    if (ch->workspace) OS_TRY_GOTO(st, cu_malloc(a->ctx, ch->workspace, &ws), done);
    OS_TRY_GOTO(st, pack_build(a->ctx, ws, sc.x, sc.w, ch->fuse_bias ? sc.b : NULL, sc.y, &pack),
                done);
    CUDNN_CHECK_GOTO(a->ctx, st, cudnnSetStream(a->dev->cudnn, a->dev->stream), done);
    choice_run run = {ch, epi, pack, res, sc.b, sc.r, sc.y};
    OS_TRY_GOTO(st, cu_time_reps(a, enqueue_choice, &run, best), done);
done:
    cu_bk_free(&pack);
    (void)cudaFree(ws);
    scratch_free(&sc);
    return st;
}

/* The kernel epilogue a plan of choice ch runs after it for act. */
static void epilogue_of(const cu_plan_args *a, const conv_choice *ch, const cu_act *act,
                        cu_conv_bias *epi)
{
    memset(epi, 0, sizeof(*epi));
    if (!ch->fuse_bias || (act->on && !ch->fuse_act)) {
        cu_conv_bias_init(a, epi);
        if (ch->fuse_bias) epi->on = 0;
        if (!ch->fuse_act) epi->act = *act;
    }
}

/* A graph that takes the activation is not always the faster: cuDNN may
 * only run it on a slower engine than the one it picks for the
 * convolution alone.  Both ways are timed once per configuration (the
 * verdict lives in the cached choice) and the faster kept; *ch may be
 * replaced by the choice without the activation. */
static opsched_status pick_epilogue(const cu_plan_args *a, int find, int bias, const cu_act *act,
                                    size_t limit, conv_choice **ch)
{
    conv_choice *fused = *ch, *apart = NULL;
    if (!fused->fuse_act || (a->opts->ablate & OPSCHED_ABLATE_EPILOGUE)) return OPSCHED_OK;
    if (fused->fused_wins == 0) {
        cu_conv_bias epi;
        OS_TRY(get_choice(a, find, bias, NULL, limit, &apart));
        opsched_status st = OPSCHED_OK;
        epilogue_of(a, fused, act, &epi);
        st = time_choice(a, fused, &epi, 0, &fused->fused_ms);
        if (st == OPSCHED_OK) {
            epilogue_of(a, apart, act, &epi);
            st = time_choice(a, apart, &epi, 0, &fused->apart_ms);
        }
        if (st != OPSCHED_OK) {
            choice_unref(apart);
            return st;
        }
        fused->fused_wins = fused->fused_ms <= fused->apart_ms || fused->apart_ms < 0.0f ? 1 : -1;
        os_log(a->ctx, OPSCHED_LOG_DEBUG,
               "cuda: node '%s': the activation in cuDNN's graph: %.4f ms, after it as a kernel: "
               "%.4f ms",
               a->node->name, (double)fused->fused_ms, (double)fused->apart_ms);
    }
    if (fused->fused_wins > 0) {
        choice_unref(apart);
        return OPSCHED_OK;
    }
    if (!apart) OS_TRY(get_choice(a, find, bias, NULL, limit, &apart));
    choice_unref(fused);
    *ch = apart;
    return OPSCHED_OK;
}

/* Input channels a group up to which the own kernel is tried. */
#define OWN_MAX_GROUP_CHANNELS 64

/* 1 when the node is a convolution the own kernel runs (cuk_depthwise): a
 * grouped one of at most OWN_MAX_GROUP_CHANNELS input channels a group,
 * depthwise ones (one a group) among them, with its description in d. */
static int group_desc(const cu_plan_args *a, int64_t max_cg, cuk_dw_desc *d, int *nhwc)
{
    const opsched_conv_attr *c = &a->node->attr.conv;
    const opsched_tensor *x = cu_in(a, 0), *w = cu_in(a, 1), *y = cu_out(a, 0);
    if (x->shape.ndim != 4 || w->shape.ndim != 4 || y->shape.ndim != 4) return 0;
    int64_t ch = x->shape.d[1], m = y->shape.d[1], groups = c->groups;
    if (groups < 2 || ch % groups || m % groups || w->shape.d[0] != m ||
        w->shape.d[1] != ch / groups || ch / groups > max_cg)
        return 0;
    if (w->shape.d[2] > 64 || w->shape.d[3] > 64 || c->stride[0] > 64 || c->stride[1] > 64 ||
        c->dilation[0] > 64 || c->dilation[1] > 64 || c->pads[0] > 64 || c->pads[1] > 64)
        return 0;
    *nhwc = cu_is_nhwc(a, x);
    if (cu_is_nhwc(a, y) != *nhwc) return 0;
    memset(d, 0, sizeof(*d));
    d->n = x->shape.d[0];
    d->c = ch;
    d->m = m;
    d->cg = (int)(ch / groups);
    d->h = x->shape.d[2];
    d->w = x->shape.d[3];
    d->oh = y->shape.d[2];
    d->ow = y->shape.d[3];
    d->kh = (int)w->shape.d[2];
    d->kw = (int)w->shape.d[3];
    d->sh = (int)c->stride[0];
    d->sw = (int)c->stride[1];
    d->dh = (int)c->dilation[0];
    d->dw = (int)c->dilation[1];
    d->ph = (int)c->pads[0];
    d->pw = (int)c->pads[1];
    return 1;
}

static int depthwise_desc(const cu_plan_args *a, cuk_dw_desc *d, int *nhwc)
{
    return group_desc(a, OWN_MAX_GROUP_CHANNELS, d, nhwc);
}

/* One of the plan's own paths (the own kernel, a 1x1 product, a grouped
 * convolution's columns and product) on zeroed scratch tensors, timed as
 * cu_time_reps times: fn enqueues it once. */
typedef struct plan_run {
    graph_plan *p;
    void *x, *w, *b, *r, *y;
} plan_run;

static opsched_status time_plan(const cu_plan_args *a, graph_plan *p, int res, cu_enqueue_fn fn,
                                float *best)
{
    conv_scratch sc;
    *best = -1.0f;
    OS_TRY(scratch_alloc(a, res, &sc));
    plan_run run = {p, sc.x, sc.w, sc.b, sc.r, sc.y};
    opsched_status st = cu_time_reps(a, fn, &run, best);
    scratch_free(&sc);
    return st;
}

static opsched_status enqueue_depthwise(const cu_plan_args *a, void *env, cudaStream_t s)
{
    plan_run *d = env;
    const graph_plan *p = d->p;
    CUDA_CHECK(a->ctx, cuk_depthwise(a->kt, &p->dw, p->dw_nhwc, d->x, d->w, d->b, p->dw_act.on,
                                     p->dw_act.fn, &p->dw_act.prm, d->y, s));
    return OPSCHED_OK;
}

/* A depthwise or grouped convolution runs the own kernel when it measured
 * faster than cuDNN's plan with its epilogue (once per configuration: the
 * verdict lives in the choice keyed by the configuration), or always when
 * `own` asks for it (the "own" policy; unsupported where it cannot). */
static opsched_status pick_depthwise(const cu_plan_args *a, graph_plan *p, conv_choice *keyed,
                                     const cu_act *act, int own)
{
    int fits = depthwise_desc(a, &p->dw, &p->dw_nhwc);
    if (own && !fits)
        return CU_UNSUPPORTED(a,
                              "own: the own kernel runs grouped convolutions of at most %d "
                              "input channels a group (depthwise ones among them)",
                              OWN_MAX_GROUP_CHANNELS);
    if (!own && ((a->opts->ablate & OPSCHED_ABLATE_DEPTHWISE) || !fits)) return OPSCHED_OK;
    p->dw_act = *act;
    if (own) {
        p->use_dw = 1;
        int th = 0, v = cu_own_variant(a->opts->algo, &th); /* the variant the name asks for */
        p->dw.tile_w = v == -2 ? 0 : v;
        p->dw.tile_h = th;
        if (th > 0) { /* NCHW, or a tile this layer's window lacks: the planner's variant */
            int vh[16], vw[16], has = 0;
            int nv = p->dw_nhwc ? cuk_depthwise_vec_tiles(&p->dw, 1, 16, vh, vw) : 0;
            for (int k = 0; k < nv && k < 16; k++)
                has = has || (vh[k] == th && vw[k] == v);
            if (!has) p->dw.tile_w = p->dw.tile_h = 0;
        }
        return OPSCHED_OK;
    }
    if (keyed->dw_wins == 0) {
        /* the own kernels' variants (the generic kernel and, where they
         * run, the one-channel kernel's tile widths and the four-channel
         * kernel's tiles), the fastest against cuDNN */
        enum { MAX_VAR = 16 };
        int tw[MAX_VAR] = {-1, 1, 2, 4, 8}, th[MAX_VAR] = {0};
        float t[MAX_VAR];
        int depthwise = p->dw.cg == 1 && p->dw.m == p->dw.c;
        int n_var = depthwise && p->dw_nhwc ? 5 : 1, n_one = n_var;
        if (depthwise && p->dw_nhwc) {
            int vh[MAX_VAR], vw[MAX_VAR];
            /* the staged kernel's 8 x 8 tile among them where it runs */
            int nv = cuk_depthwise_vec_tiles(&p->dw, 1, MAX_VAR, vh, vw);
            for (int k = 0; k < nv && n_var < MAX_VAR; k++, n_var++) {
                th[n_var] = vh[k];
                tw[n_var] = vw[k];
            }
        }
        float mine = -1.0f, cudnn = -1.0f, vec_best = -1.0f;
        char vec_ms[160] = "";
        size_t used = 0;
        for (int v = 0; v < n_var; v++) {
            p->dw.tile_w = n_var > 1 ? tw[v] : 0;
            p->dw.tile_h = th[v];
            OS_TRY(time_plan(a, p, 0, enqueue_depthwise, &t[v]));
            if (t[v] >= 0.0f && (mine < 0.0f || t[v] < mine)) {
                mine = t[v];
                keyed->dw_tile = p->dw.tile_w;
                keyed->dw_tile_h = p->dw.tile_h;
            }
            if (v >= n_one && t[v] >= 0.0f && (vec_best < 0.0f || t[v] < vec_best)) {
                vec_best = t[v];
                keyed->dw_vec_w = tw[v];
                keyed->dw_vec_h = th[v];
            }
            if (v >= n_one && used < sizeof(vec_ms))
                used += (size_t)snprintf(vec_ms + used, sizeof(vec_ms) - used, "%s%dx%d %.4f",
                                         v > n_one ? ", " : "; four channels a thread, tiles ",
                                         th[v], tw[v], (double)t[v]);
        }
        OS_TRY(time_choice(a, p->ch, &p->bias, 0, &cudnn));
        keyed->dw_wins = mine >= 0.0f && (cudnn < 0.0f || mine < cudnn) ? 1 : -1;
        keyed->dw_ms = keyed->dw_wins > 0 ? mine : cudnn;
        if (n_var > 1)
            os_log(a->ctx, OPSCHED_LOG_DEBUG,
                   "cuda: node '%s': depthwise: own kernel %.4f ms (generic %.4f, tile widths "
                   "1/2/4/8 %.4f/%.4f/%.4f/%.4f%s), cuDNN (engine %lld) %.4f ms",
                   a->node->name, (double)mine, (double)t[0], (double)t[1], (double)t[2],
                   (double)t[3], (double)t[4], vec_ms, (long long)p->ch->engine, (double)cudnn);
        else
            os_log(a->ctx, OPSCHED_LOG_DEBUG,
                   "cuda: node '%s': %s: own kernel %.4f ms, cuDNN (engine %lld) %.4f ms",
                   a->node->name, depthwise ? "depthwise" : "grouped", (double)mine,
                   (long long)p->ch->engine, (double)cudnn);
    }
    p->dw.tile_w = keyed->dw_tile;
    p->dw.tile_h = keyed->dw_tile_h;
    p->use_dw = keyed->dw_wins > 0;
    return OPSCHED_OK;
}

/* ---- 1x1 convolutions as cuBLASLt products ----------------------------- */

/* A 1x1 convolution of stride 1, without padding or groups, whose input,
 * output and residual keep channels innermost (NHWC, or maps of one pixel)
 * is the product Y[P, M] = X[P, C] W[M, C]^T over its P = N*H*W pixels: in
 * cuBLASLt's column-major terms D (M x P) = W^T (W read as C x M) times X
 * (C x P), with the bias per row of D, the residual as C (beta 1) and a
 * Relu or tanh-GELU in the epilogue, after both.  0 when the node is not
 * such a convolution or its epilogue is not one of these; else the sizes
 * and the epilogue. */
/* cuBLASLt's epilogue for the product's bias (when the node has one) and
 * act: a Relu or tanh-GELU in it, any other activation as one element-wise
 * kernel after the product (*post 1).  0 when no kernel runs that one. */
static int lt_epilogue(const cu_plan_args *a, const cu_act *act, cublasLtEpilogue_t *epi, int *post)
{
    int relu = 0, gelu = 0;
    *post = 0;
    if (act->on) {
        relu = act->node->op == OPSCHED_OP_RELU;
        gelu = act->node->op == OPSCHED_OP_GELU && act->node->attr.gelu.tanh_approx;
        if (!relu && !gelu) {
            if (!cuk_ew_unary_ok(act->fn, (cuk_dtype)a->kt, (cuk_dtype)a->kt)) return 0;
            *post = 1;
        }
    }
    if (cu_in(a, 2))
        *epi = relu   ? CUBLASLT_EPILOGUE_RELU_BIAS
               : gelu ? CUBLASLT_EPILOGUE_GELU_BIAS
                      : CUBLASLT_EPILOGUE_BIAS;
    else
        *epi = relu   ? CUBLASLT_EPILOGUE_RELU
               : gelu ? CUBLASLT_EPILOGUE_GELU
                      : CUBLASLT_EPILOGUE_DEFAULT;
    return 1;
}

static int gemm_desc(const cu_plan_args *a, const cu_act *act, int res, int *m, int *n, int *k,
                     cublasLtEpilogue_t *epi, int *post)
{
    *post = 0;
    const opsched_conv_attr *c = &a->node->attr.conv;
    const opsched_tensor *x = cu_in(a, 0), *w = cu_in(a, 1), *y = cu_out(a, 0);
    const opsched_tensor *r = NULL;
    opsched_conv_residual rf;
    if (res) {
        if (!opsched_conv_residual_find(a->g, cu_node_index(a), &rf)) return 0;
        r = opsched_graph_tensor(a->g, rf.residual);
        if (!r || r->shape.ndim != 4) return 0;
    }
    if (x->shape.ndim != 4 || w->shape.ndim != 4 || y->shape.ndim != 4) return 0;
    if (c->groups > 1 || w->shape.d[2] != 1 || w->shape.d[3] != 1 || c->stride[0] != 1 ||
        c->stride[1] != 1 || c->pads[0] || c->pads[1] || c->pads[2] || c->pads[3])
        return 0;
    const opsched_tensor *t[3] = {x, y, r};
    for (int i = 0; i < 3; i++)
        if (t[i] && !cu_is_nhwc(a, t[i]) && t[i]->shape.d[2] * t[i]->shape.d[3] != 1) return 0;
    if (r && !opsched_shape_equal(&r->shape, &y->shape)) return 0;
    int64_t pixels = y->shape.d[0] * y->shape.d[2] * y->shape.d[3];
    if (x->shape.d[0] * x->shape.d[2] * x->shape.d[3] != pixels || !cu_fits_int(pixels) ||
        !cu_fits_int(y->shape.d[1]) || !cu_fits_int(x->shape.d[1]))
        return 0;
    if (!lt_epilogue(a, act, epi, post)) return 0;
    *m = (int)y->shape.d[1];
    *n = (int)pixels;
    *k = (int)x->shape.d[1];
    return 1;
}

/* cuBLASLt's storage and compute types for the plan's data and math mode. */
static void lt_types(const cu_plan_args *a, cudaDataType_t *type, cublasComputeType_t *compute)
{
    *type = a->dt == OPSCHED_F16 ? CUDA_R_16F : a->dt == OPSCHED_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    *compute =
        a->opts->math == OPSCHED_MATH_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

static opsched_status enqueue_gemm(const cu_plan_args *a, void *env, cudaStream_t s)
{
    plan_run *g = env;
    return gemm_enqueue(a->ctx, a->dev, g->p, s, g->w, g->x, g->b, g->r, g->y);
}

/* The product of a 1x1 convolution (cuBLASLt's m x n x k, m its output
 * channels and n its pixels), its bias and an activation cuBLASLt's
 * epilogue lacks as one cuDNN graph, where that measures faster than the
 * product and the activation's kernel (with `force`, wherever an engine
 * runs it): then p->mm holds it.  Only without a residual, with a bias, in
 * the layout of a product (gemm_desc), and with engines that need no
 * workspace. */
static opsched_status pick_gemm_graph(const cu_plan_args *a, graph_plan *p, const cu_act *act,
                                      int m, int n, int k, int force)
{
    if (p->res || !cu_in(a, 2) || !act->on) {
        if (force)
            return CU_UNSUPPORTED(a, "cudnn_matmul: a 1x1 convolution's product graph wants a "
                                     "bias, an activation after it and no residual");
        return OPSCHED_OK;
    }
    cu_mm_desc d = {.m = n, .n = m, .k = k, .b_trans = 1, .kt = a->kt, .act = *act};
    return cu_mm_graph_plan(a, &d, &p->lt, 0, force, &p->mm);
}

/* Whether the product graph is one of pick_gemm's choices for act. */
static int gemm_graph_ok(const cu_plan_args *a, const graph_plan *p, const cu_act *act, int post)
{
    return post && !p->res && cu_in(a, 2) && act->on && cu_mm_graph_act_ok(act) &&
           !(a->opts->ablate & OPSCHED_ABLATE_MATMUL_GRAPH);
}

/* A 1x1 convolution runs as a cuBLASLt product (gemm_desc) when that
 * measured faster than cuDNN's plan with its epilogue kernels (once per
 * configuration and residual form: the verdict lives in the choice keyed
 * by the configuration).  PyTorch's compiler runs such convolutions as
 * matrix products too; cuDNN's fused engines are slower on some shapes.
 * An activation cuBLASLt's epilogue lacks runs as a kernel after the
 * product, or the three as one cuDNN graph where that measured faster
 * (pick_gemm_graph).  force: CU_CONV_CUBLASLT takes the product,
 * CU_CONV_MM_GRAPH the graph, anything else measures. */
static opsched_status pick_gemm(const cu_plan_args *a, graph_plan *p, conv_choice *keyed,
                                const cu_act *act, cu_conv_force force_as)
{
    int force = force_as == CU_CONV_CUBLASLT || force_as == CU_CONV_MM_GRAPH;
    int m = 0, n = 0, k = 0;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    int post = 0;
    int fits = gemm_desc(a, act, p->res, &m, &n, &k, &epi, &post);
    if (force && !fits)
        return CU_UNSUPPORTED(a,
                              "%s: only 1x1 convolutions of stride 1 without padding or "
                              "groups, channels innermost, with at most a bias, a residual and "
                              "an element-wise activation after them, run as products",
                              force_as == CU_CONV_MM_GRAPH ? "cudnn_matmul" : "cublaslt");
    if (!fits || (!force && (a->opts->ablate & OPSCHED_ABLATE_CONV_GEMM))) return OPSCHED_OK;
    int graph = force_as == CU_CONV_MM_GRAPH || (!force && gemm_graph_ok(a, p, act, post));
    int slot = p->res ? (act->on ? 2 : 1) : post ? (graph ? 4 : 3) : 0;
    if (!force && keyed->gemm_wins[slot] < 0) return OPSCHED_OK;
    size_t limit = 0;
    OS_TRY(cu_gemm_default_workspace(a, &limit));
    cudaDataType_t type;
    cublasComputeType_t compute;
    lt_types(a, &type, &compute);
    if (!cu_lt_gemm_init(a->dev, type, compute, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, k, k, m, epi,
                         p->res ? 1.0f : 0.0f, limit, &p->lt)) {
        if (force)
            return CU_UNSUPPORTED(a, "cublaslt: cuBLASLt's heuristic offers no algorithm for "
                                     "this product");
        keyed->gemm_wins[slot] = -1;
        return OPSCHED_OK;
    }
    if (!force) OS_TRY(cu_lt_gemm_tune(a, &p->lt));
    if (post) {
        p->gemm_act = *act;
        p->gemm_numel = opsched_shape_numel(&cu_out(a, 0)->shape);
    }
    if (graph) OS_TRY(pick_gemm_graph(a, p, act, m, n, k, force_as == CU_CONV_MM_GRAPH));
    if (force) {
        p->use_gemm = 1;
        return OPSCHED_OK;
    }
    if (keyed->gemm_wins[slot] == 0) {
        float mine = -1.0f, cudnn = -1.0f;
        OS_TRY(time_plan(a, p, p->res, enqueue_gemm, &mine));
        OS_TRY(time_choice(a, p->ch, &p->bias, p->res, &cudnn));
        keyed->gemm_wins[slot] = mine >= 0.0f && (cudnn < 0.0f || mine < cudnn) ? 1 : -1;
        os_log(a->ctx, OPSCHED_LOG_DEBUG,
               "cuda: node '%s': 1x1 as a %s %.4f ms, cuDNN (engine %lld) %.4f ms", a->node->name,
               p->mm ? "product graph of cuDNN's" : "cuBLASLt product", (double)mine,
               (long long)p->ch->engine, (double)cudnn);
    }
    if (keyed->gemm_wins[slot] > 0) {
        p->use_gemm = 1;
    } else {
        cu_lt_gemm_free(&p->lt);
        memset(&p->gemm_act, 0, sizeof(p->gemm_act));
        cu_mm_choice_unref(p->mm);
        p->mm = NULL;
    }
    return OPSCHED_OK;
}

/* ---- grouped convolutions as columns and a batched product ------------ */

/* Input channels a group below which the columns are not tried: depthwise
 * layers and groups of two make products too thin for the tensor cores. */
#define IG_MIN_GROUP_CHANNELS 4

/* One product of the batch for chunks of pc pixels: group g's D (mg x pc,
 * leading dimension M, at column offset g * mg of the NHWC output) = its
 * filters [mg, K] transposed times its columns [pc, K]. */
static int ig_product(const cu_plan_args *a, const graph_plan *p, cublasLtEpilogue_t epi,
                      int64_t pc, size_t limit, cu_lt_gemm *g)
{
    const cuk_dw_desc *d = &p->ig;
    int64_t groups = d->c / d->cg, mg = d->m / groups, K = (int64_t)d->cg * d->kh * d->kw;
    size_t esz = opsched_dtype_size(a->dt);
    if (!cu_fits_int(mg) || !cu_fits_int(pc) || !cu_fits_int(K) || !cu_fits_int(d->m) ||
        !cu_fits_int(groups))
        return 0;
    int ad = cu_align16(mg * (int64_t)esz), ap = cu_align16(pc * d->m * (int64_t)esz);
    cu_lt_batch bt = {.count = (int)groups,
                      .stride_a = mg * K,
                      .stride_b = pc * K,
                      .stride_d = mg,
                      .stride_bias = mg,
                      .align_a = cu_align16(mg * K * (int64_t)esz),
                      .align_b = cu_align16(pc * K * (int64_t)esz),
                      .align_d = ad < ap ? ad : ap};
    cudaDataType_t type;
    cublasComputeType_t compute;
    lt_types(a, &type, &compute);
    return cu_lt_gemm_init_batched(a->dev, type, compute, CUBLAS_OP_T, CUBLAS_OP_N, (int)mg,
                                   (int)pc, (int)K, (int)K, (int)K, (int)d->m, epi, 0.0f, limit,
                                   &bt, g);
}

static opsched_status enqueue_ig(const cu_plan_args *a, void *env, cudaStream_t s)
{
    plan_run *r = env;
    return ig_enqueue(a->ctx, a->dev, r->p, s, r->x, r->w, r->b, r->y);
}

/* A grouped convolution in NHWC (at least IG_MIN_GROUP_CHANNELS input
 * channels a group, no residual) runs as its columns and one batched
 * cuBLASLt product, or (fp16, bf16, multiples of 8 channels a group) as
 * the implicit GEMM on the tensor cores (cuk_gconv_mma), when the faster
 * of the two measured faster than what the plan has chosen so far:
 * cuDNN's plan with its epilogue kernels, or the own kernel (once per
 * configuration: the verdict lives in the choice keyed by it).  cuDNN's
 * engines take 45-100 us on RegNetY-8GF's groups of 56 channels at batch 1
 * on an H200, a product of the same size a few.  force: 0 timed, 1 the
 * columns ("im2col"), 2 the implicit GEMM ("igemm"). */
static opsched_status pick_im2col(const cu_plan_args *a, graph_plan *p, conv_choice *keyed,
                                  const cu_act *act, int force)
{
    int nhwc = 0;
    cuk_dw_desc d;
    int fits = !p->res && group_desc(a, INT64_MAX, &d, &nhwc) && nhwc &&
               d.cg >= IG_MIN_GROUP_CHANNELS && d.kh <= 64 && d.kw <= 64;
    int post = 0;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    int cols = fits && lt_epilogue(a, act, &epi, &post) && force != 2 &&
               (force || !(a->opts->ablate & OPSCHED_ABLATE_IM2COL));
    int tf32 = a->opts->math == OPSCHED_MATH_TF32;
    int mma = fits && force != 1 && cuk_gconv_mma_fits(p->kt, tf32, &d) &&
              (force || !(a->opts->ablate & OPSCHED_ABLATE_IGEMM));
    if (force == 1 && !cols)
        return CU_UNSUPPORTED(a,
                              "im2col: only grouped convolutions in NHWC of at least %d input "
                              "channels a group, with at most a bias and an element-wise "
                              "activation after them, run as columns and a batched product",
                              IG_MIN_GROUP_CHANNELS);
    if (force == 2 && !mma)
        return CU_UNSUPPORTED(a, "igemm: only grouped convolutions in NHWC, in TF32, fp16 or "
                                 "bf16, of multiples of 8 (TF32: 4) and at least 8 input and "
                                 "output channels a group, with at most a bias and an "
                                 "element-wise activation after them, run as an implicit GEMM");
    if ((!cols && !mma) || (!force && keyed->ig_wins < 0)) return OPSCHED_OK;
    size_t esz = opsched_dtype_size(a->dt), limit = 0;
    int64_t groups = d.c / d.cg, K = (int64_t)d.cg * d.kh * d.kw;
    int64_t pixels = d.n * d.oh * d.ow;
    p->ig = d;
    p->ig_taps_outer = cu_is_nhwc(a, cu_in(a, 1));
    p->ig_act = *act;
    p->ig_tf32 = tf32;
    p->ig_mma = 0;
    p->ig_cols = 0;
    cu_act before = p->gemm_act;
    int64_t numel_before = p->gemm_numel;
    int64_t chunks = 0;
    if (cols) {
        size_t scratch = CU_STREAM_SCRATCH_BYTES;
        if (a->opts->workspace_limit && a->opts->workspace_limit < scratch)
            scratch = a->opts->workspace_limit;
        int64_t pc = (int64_t)(scratch / ((size_t)(groups * K) * esz));
        if (pc < 1 && force)
            return CU_UNSUPPORTED(a,
                                  "im2col: one output pixel's columns (%lld B) exceed the "
                                  "%zu B of scratch",
                                  (long long)((size_t)(groups * K) * esz), scratch);
        cols = pc >= 1;
        if (cols) {
            if (pc > pixels) pc = pixels;
            chunks = (pixels + pc - 1) / pc;
            pc = (pixels + chunks - 1) / chunks; /* chunks of even size */
            int64_t tail = pixels - (chunks - 1) * pc;
            OS_TRY(cu_gemm_default_workspace(a, &limit));
            OS_TRY(cu_stream_scratch_reserve(a->ctx, a->dev));
            if (!ig_product(a, p, epi, pc, limit, &p->ig_full) ||
                (tail != pc && !ig_product(a, p, epi, tail, limit, &p->ig_tail))) {
                cu_lt_gemm_free(&p->ig_full);
                if (force)
                    return CU_UNSUPPORTED(a, "im2col: cuBLASLt's heuristic offers no algorithm "
                                             "for this batch of products");
                cols = 0;
            }
        }
        if (cols) {
            p->ig_pc = pc;
            p->ig_pixels = pixels;
            p->ig_row_bytes = (size_t)d.m * esz;
            if (!force) {
                OS_TRY(cu_lt_gemm_tune(a, &p->ig_full));
                if (p->ig_pixels % pc) OS_TRY(cu_lt_gemm_tune(a, &p->ig_tail));
            }
            if (post) {
                p->gemm_act = *act;
                p->gemm_numel = opsched_shape_numel(&cu_out(a, 0)->shape);
            } else {
                memset(&p->gemm_act, 0, sizeof(p->gemm_act));
            }
            p->ig_cols = 1;
        }
    }
    if (!cols && !mma) {
        keyed->ig_wins = -1;
        return OPSCHED_OK;
    }
    if (force) {
        p->use_ig = 1;
        p->use_dw = 0;
        p->ig_mma = force == 2;
        return OPSCHED_OK;
    }
    if (keyed->ig_wins == 0) {
        float mine = -1.0f, implicit = -1.0f, cudnn = -1.0f, own = -1.0f;
        if (cols) OS_TRY(time_plan(a, p, 0, enqueue_ig, &mine));
        if (mma) { /* each slice width worth timing, the fastest kept */
            int widths[2], nw = cuk_gconv_mma_slices(p->kt, &p->ig, widths);
            p->ig_mma = 1;
            for (int k = 0; k < nw && k < 2; k++) {
                float t = -1.0f;
                p->ig.tile_w = widths[k];
                opsched_status st = time_plan(a, p, 0, enqueue_ig, &t);
                if (st != OPSCHED_OK) {
                    p->ig_mma = 0;
                    return st;
                }
                if (t >= 0.0f && (implicit < 0.0f || t < implicit)) {
                    implicit = t;
                    keyed->ig_slice = widths[k];
                }
            }
            p->ig_mma = 0;
        }
        OS_TRY(time_choice(a, p->ch, &p->bias, 0, &cudnn));
        if (p->use_dw) OS_TRY(time_plan(a, p, 0, enqueue_depthwise, &own));
        float rival = p->use_dw && own >= 0.0f ? own : cudnn;
        int take_mma = implicit >= 0.0f && (mine < 0.0f || implicit < mine);
        float best = take_mma ? implicit : mine;
        keyed->ig_wins = best >= 0.0f && (rival < 0.0f || best < rival) ? 1 : -1;
        keyed->ig_mma = take_mma;
        if (take_mma)
            os_log(a->ctx, OPSCHED_LOG_DEBUG,
                   "cuda: node '%s': the implicit GEMM's fastest slice: %d input channels",
                   a->node->name, keyed->ig_slice);
        os_log(a->ctx, OPSCHED_LOG_DEBUG,
               "cuda: node '%s': grouped as columns and a batched product %.4f ms (%lld "
               "chunk(s)), as an implicit GEMM on the tensor cores %.4f ms, cuDNN (engine %lld) "
               "%.4f ms, own kernel %.4f ms",
               a->node->name, (double)mine, (long long)chunks, (double)implicit,
               (long long)p->ch->engine, (double)cudnn, (double)own);
    }
    int take = keyed->ig_wins > 0 && (keyed->ig_mma ? mma : cols);
    if (take) {
        p->use_ig = 1;
        p->use_dw = 0;
        p->ig_mma = keyed->ig_mma;
        p->ig.tile_w = keyed->ig_mma ? keyed->ig_slice : 0;
    } else {
        cu_lt_gemm_free(&p->ig_full);
        cu_lt_gemm_free(&p->ig_tail);
        p->ig_cols = 0;
        p->gemm_act = before;
        p->gemm_numel = numel_before;
    }
    return OPSCHED_OK;
}

/* ---- a depthwise convolution and its LayerNormalization ------------- */

/* Scratch for timing the norm: its scale and bias, and its output. */
typedef struct norm_run {
    graph_plan *p;
    conv_scratch sc;
    void *g, *be, *z;
    int64_t rows, cols;
} norm_run;

static opsched_status enqueue_conv_norm(const cu_plan_args *a, void *env, cudaStream_t s)
{
    norm_run *r = env;
    CUDA_CHECK(a->ctx, cuk_depthwise_ln(a->kt, &r->p->ln, r->sc.x, r->sc.w, r->sc.b, r->g, r->be,
                                        r->p->ln_eps, r->z, s));
    return OPSCHED_OK;
}

static opsched_status enqueue_norm(const cu_plan_args *a, void *env, cudaStream_t s)
{
    norm_run *r = env;
    CUDA_CHECK(a->ctx,
               cuk_layernorm(a->kt, r->rows, r->cols, r->p->ln_eps, r->sc.y, r->g, r->be, r->z, s));
    return OPSCHED_OK;
}

/* The convolution's plan as chosen so far (the own kernel or cuDNN's with
 * its epilogue), then the norm's kernel, against the kernel that runs both
 * (each of its variants), on scratch operands: the verdict and the fastest
 * variant go into keyed. */
static opsched_status time_norm(const cu_plan_args *a, graph_plan *p, conv_choice *keyed, int bias)
{
    static const int tiles[] = {1, 2, 4, 8};
    norm_run r = {.p = p, .rows = p->ln.n * p->ln.oh * p->ln.ow, .cols = p->ln.c};
    size_t cb = (size_t)p->ln.c * opsched_dtype_size(a->dt);
    size_t zb = (size_t)opsched_shape_numel(&cu_out(a, 0)->shape) * opsched_dtype_size(a->dt);
    float fused = -1.0f, conv = -1.0f, norm = -1.0f, t[4] = {-1.0f, -1.0f, -1.0f, -1.0f};
    opsched_status st = scratch_alloc(a, 0, &r.sc);
    if (st != OPSCHED_OK) return st;
    OS_TRY_GOTO(st, cu_zeroed(a, cb, &r.g), done);
    OS_TRY_GOTO(st, cu_zeroed(a, cb, &r.be), done);
    OS_TRY_GOTO(st, cu_zeroed(a, zb, &r.z), done);
    if (!bias) r.sc.b = NULL;
    for (int v = 0; v < 4; v++) {
        p->ln.tile_w = tiles[v];
        OS_TRY_GOTO(st, cu_time_reps(a, enqueue_conv_norm, &r, &t[v]), done);
        if (t[v] >= 0.0f && (fused < 0.0f || t[v] < fused)) {
            fused = t[v];
            keyed->ln_tile = tiles[v];
        }
    }
    if (p->use_dw)
        OS_TRY_GOTO(st, time_plan(a, p, 0, enqueue_depthwise, &conv), done);
    else
        OS_TRY_GOTO(st, time_choice(a, p->ch, &p->bias, 0, &conv), done);
    OS_TRY_GOTO(st, cu_time_reps(a, enqueue_norm, &r, &norm), done);
    keyed->ln_wins = fused >= 0.0f && (conv < 0.0f || norm < 0.0f || fused < conv + norm) ? 1 : -1;
    os_log(a->ctx, OPSCHED_LOG_DEBUG,
           "cuda: node '%s': with its LayerNormalization in one kernel %.4f ms (tile widths "
           "1/2/4/8 %.4f/%.4f/%.4f/%.4f), apart %.4f + %.4f ms (%s)",
           a->node->name, (double)fused, (double)t[0], (double)t[1], (double)t[2], (double)t[3],
           (double)conv, (double)norm, p->use_dw ? "own kernel" : "cuDNN");
done:
    (void)cudaFree(r.g);
    (void)cudaFree(r.be);
    (void)cudaFree(r.z);
    (void)cudaGetLastError();
    scratch_free(&r.sc);
    return st;
}

/* A depthwise convolution in NHWC whose output a LayerNormalization over
 * the channels reads (opsched_conv_norm_find, asked with fuse_norm) runs
 * both in one kernel when that measured faster than the convolution as
 * planned and the norm's own kernel (once per configuration), or always
 * under `own` (the own kernel asked for: the one that runs both, in the
 * variant the name asks for; the generic one has none).  The plan then
 * reads the norm's scale and bias as inputs 3 and 4 and writes the norm's
 * output. */
static opsched_status pick_norm(const cu_plan_args *a, graph_plan *p, conv_choice *keyed,
                                const cu_act *act, int own)
{
    opsched_conv_norm cn;
    int node = cu_node_index(a), nhwc = 0;
    if (!a->opts->fuse_norm || (a->opts->ablate & OPSCHED_ABLATE_CONV_NORM) || p->res || act->on ||
        node < 0 || !opsched_conv_norm_find(a->g, node, &cn) || !depthwise_desc(a, &p->ln, &nhwc) ||
        !nhwc || !cuk_depthwise_ln_fits(&p->ln))
        return OPSCHED_OK;
    const opsched_node *ln = opsched_graph_node(a->g, cn.norm);
    const opsched_tensor *z = opsched_graph_tensor(a->g, ln->outputs[0]);
    const opsched_tensor *g = opsched_graph_tensor(a->g, cn.scale);
    const opsched_tensor *be = cn.bias >= 0 ? opsched_graph_tensor(a->g, cn.bias) : NULL;
    if (!z || cu_is_nhwc(a, z) || cu_kdt(a, g) != (cuk_dtype)a->kt ||
        (be && cu_kdt(a, be) != (cuk_dtype)a->kt) || cu_kdt(a, z) != (cuk_dtype)a->kt)
        return OPSCHED_OK;
    p->ln_eps = ln->attr.layernorm.epsilon;
    if (own) {
        int v = cu_own_variant(a->opts->algo, NULL);
        if (v == -1) return OPSCHED_OK;
        p->ln.tile_w = v == -2 ? 0 : v;
    } else {
        if (keyed->ln_wins == 0) OS_TRY(time_norm(a, p, keyed, cu_in(a, 2) != NULL));
        if (keyed->ln_wins < 0) return OPSCHED_OK;
        p->ln.tile_w = keyed->ln_tile;
    }
    p->use_ln = 1;
    p->use_dw = p->use_gemm = p->use_ig = 0;
    p->base.n_in = 5;
    p->base.need_in |= 1ull << 3;
    a->info->fused_norm = 1;
    return OPSCHED_OK;
}

static opsched_status enqueue_depthwise_pre(const cu_plan_args *a, void *env, cudaStream_t s)
{
    plan_run *d = env;
    const graph_plan *p = d->p;
    CUDA_CHECK(a->ctx,
               cuk_depthwise_vec(a->kt, &p->dw, d->x, d->w, d->b, p->dw_act.on, p->dw_act.fn,
                                 &p->dw_act.prm, 1, p->dw_pre.fn, &p->dw_pre.prm, d->y, s));
    return OPSCHED_OK;
}

/* The activation's own pass over the input, as its producer runs it. */
static opsched_status enqueue_pre_pass(const cu_plan_args *a, void *env, cudaStream_t s)
{
    plan_run *d = env;
    const graph_plan *p = d->p;
    CUDA_CHECK(a->ctx, cuk_ew_unary(p->dw_pre.fn, &p->dw_pre.prm, (cuk_dtype)a->kt,
                                    (cuk_dtype)a->kt, p->dw_pre_numel, d->x, d->x, s));
    return OPSCHED_OK;
}

/* A prologue activation (opsched_plan_options.fuse_prologue): a depthwise
 * convolution in NHWC applies the activation that produced its input as
 * it reads it, in the four-channel kernel's fastest tile, where that
 * measured faster than the convolution as kept plus the activation's own
 * pass over the input (once per configuration and activation: the
 * verdict lives in the keyed choice), or always under `own` with one of
 * that kernel's tiles named. */
static opsched_status pick_prologue(const cu_plan_args *a, graph_plan *p, conv_choice *keyed,
                                    int own)
{
    opsched_conv_prologue cp;
    int node = cu_node_index(a);
    if (!a->opts->fuse_prologue ||
        (a->opts->ablate & (OPSCHED_ABLATE_PROLOGUE | OPSCHED_ABLATE_DEPTHWISE)) || node < 0 ||
        p->res || !p->dw_nhwc || !opsched_conv_prologue_find(a->g, node, &cp))
        return OPSCHED_OK;
    const opsched_tensor *x = cu_in(a, 0);
    const opsched_tensor *px =
        opsched_graph_tensor(a->g, opsched_graph_node(a->g, cp.act)->inputs[0]);
    cu_act pre;
    cu_act_of(a, cp.act, &pre);
    if (!px || px->dtype != x->dtype || !cuk_depthwise_vec_pre_ok(pre.fn)) return OPSCHED_OK;
    graph_plan trial = *p;
    trial.dw_pre = pre;
    trial.dw_pre_numel = opsched_shape_numel(&x->shape);
    if (own) {
        if (!p->use_dw || p->dw.tile_h <= 0) return OPSCHED_OK;
    } else {
        if (keyed->dw_vec_h <= 0 || keyed->dw_ms <= 0.0f) return OPSCHED_OK;
        trial.dw.tile_w = keyed->dw_vec_w;
        trial.dw.tile_h = keyed->dw_vec_h;
        if (keyed->pre_fn != (int)pre.fn + 1) {
            float with = -1.0f, pass = -1.0f;
            OS_TRY(time_plan(a, &trial, 0, enqueue_depthwise_pre, &with));
            OS_TRY(time_plan(a, &trial, 0, enqueue_pre_pass, &pass));
            keyed->pre_fn = (int)pre.fn + 1;
            keyed->pre_wins = with >= 0.0f && pass >= 0.0f && with < keyed->dw_ms + pass ? 1 : -1;
            os_log(a->ctx, OPSCHED_LOG_DEBUG,
                   "cuda: node '%s': with its input's %s applied as it reads (tile %dx%d) "
                   "%.4f ms, as kept %.4f ms and the %s's pass %.4f ms",
                   a->node->name, opsched_node_op_name(pre.node), trial.dw.tile_h, trial.dw.tile_w,
                   (double)with, (double)keyed->dw_ms, opsched_node_op_name(pre.node),
                   (double)pass);
        }
        if (keyed->pre_wins < 0) return OPSCHED_OK;
        trial.use_dw = 1;
        trial.use_gemm = trial.use_ig = 0;
    }
    *p = trial;
    return OPSCHED_OK;
}

/* ---- a gated map's product ------------------------------------------ */

typedef struct gate_run {
    graph_plan *p;
    void *x, *w, *b, *r, *y, *s;
} gate_run;

static opsched_status enqueue_gate(const cu_plan_args *a, void *env, cudaStream_t s)
{
    gate_run *g = env;
    return gate_enqueue(a->ctx, a->dev, g->p, s, g->x, g->w, g->b, g->r, g->s, g->y);
}

/* The multiply's own pass, x * s with s broadcast over the pixels, in
 * place over the scratch x (the output scratch holds y's channels, not
 * x's): the traffic of the Mul it stands for. */
static opsched_status enqueue_gate_pass(const cu_plan_args *a, void *env, cudaStream_t s)
{
    gate_run *g = env;
    const graph_plan *p = g->p;
    int64_t pix = p->gate_lt.n;
    cuk_nd nd;
    memset(&nd, 0, sizeof(nd));
    nd.ndim = 3;
    nd.shape[0] = p->gate_n;
    nd.shape[1] = pix;
    nd.shape[2] = p->gate_k;
    for (int o = 0; o < 2; o++) {
        nd.stride[o][0] = pix * p->gate_k;
        nd.stride[o][1] = p->gate_k;
        nd.stride[o][2] = 1;
    }
    nd.stride[2][0] = p->gate_k;
    nd.stride[2][2] = 1;
    CUDA_CHECK(a->ctx, cuk_ew_binary(CUK_B_MUL, (cuk_dtype)a->kt, (cuk_dtype)a->kt,
                                     (cuk_dtype)a->kt, &nd, g->x, g->s, g->x, s));
    return OPSCHED_OK;
}

/* A gated map's product (opsched_plan_options.fuse_gate): a 1x1
 * convolution whose input is x * s runs as the product of x with each
 * sample's weights scaled by s, where that measured faster than the plan
 * as kept plus the multiply's own pass over the map (once per
 * configuration and residual form: the verdict lives in the keyed
 * choice), or always when cuBLASLt is forced.  The multiply reads and
 * writes the whole map; the scaled weights are N * M * C values. */
static opsched_status pick_gate(const cu_plan_args *a, graph_plan *p, conv_choice *keyed,
                                const cu_act *act, int force)
{
    int node = cu_node_index(a), m = 0, n = 0, k = 0, post = 0;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    if (!a->opts->fuse_gate || (a->opts->ablate & OPSCHED_ABLATE_GATE) || node < 0 ||
        !opsched_conv_gate_find(a->g, node, NULL) ||
        !gemm_desc(a, act, p->res, &m, &n, &k, &epi, &post))
        return OPSCHED_OK;
    int slot = p->res ? 1 : 0;
    if (!force && keyed->gate_wins[slot] < 0) return OPSCHED_OK;
    const opsched_tensor *y = cu_out(a, 0);
    int64_t N = y->shape.d[0], pix = (int64_t)n / (N > 0 ? N : 1);
    size_t esz = opsched_dtype_size(a->dt);
    if (N < 1 || pix * N != n || N * m * (int64_t)k >= ((int64_t)1 << 31)) return OPSCHED_OK;
    graph_plan trial = *p;
    memset(&trial.gate_lt, 0, sizeof(trial.gate_lt));
    memset(&trial.gemm_act, 0, sizeof(trial.gemm_act));
    trial.gate_n = N;
    trial.gate_m = m;
    trial.gate_k = k;
    int ad = cu_align16((int64_t)m * (int64_t)esz), ap = cu_align16(pix * m * (int64_t)esz);
    cu_lt_batch bt = {.count = (int)N,
                      .stride_a = (int64_t)m * k,
                      .stride_b = pix * k,
                      .stride_d = pix * m,
                      .stride_bias = 0,
                      .align_a = cu_align16((int64_t)m * k * (int64_t)esz),
                      .align_b = cu_align16(pix * k * (int64_t)esz),
                      .align_d = ad < ap ? ad : ap};
    size_t limit = 0;
    OS_TRY(cu_gemm_default_workspace(a, &limit));
    cudaDataType_t type;
    cublasComputeType_t compute;
    lt_types(a, &type, &compute);
    if (!cu_lt_gemm_init_batched(a->dev, type, compute, CUBLAS_OP_T, CUBLAS_OP_N, m, (int)pix, k, k,
                                 k, m, epi, p->res ? 1.0f : 0.0f, limit, &bt, &trial.gate_lt)) {
        if (!force) keyed->gate_wins[slot] = -1;
        return OPSCHED_OK;
    }
    if (post) {
        trial.gemm_act = *act;
        trial.gemm_numel = opsched_shape_numel(&y->shape);
    }
    size_t wbytes = (size_t)(N * m * (int64_t)k) * esz;
    opsched_status st = OPSCHED_OK;
    void *ws = NULL;
    OS_TRY_GOTO(st, cu_malloc(a->ctx, wbytes, &ws), fail);
    trial.base.workspace = ws;
    if (!force) OS_TRY_GOTO(st, cu_lt_gemm_tune(a, &trial.gate_lt), fail);
    if (!force && keyed->gate_wins[slot] == 0) {
        conv_scratch sc;
        void *sv = NULL;
        float with = -1.0f, kept = -1.0f, pass = -1.0f;
        OS_TRY_GOTO(st, scratch_alloc(a, p->res, &sc), fail);
        st = cu_zeroed(a, (size_t)(N * k) * esz, &sv);
        if (st == OPSCHED_OK) {
            gate_run run = {&trial, sc.x, sc.w, sc.b, sc.r, sc.y, sv};
            st = cu_time_reps(a, enqueue_gate, &run, &with);
            if (st == OPSCHED_OK) st = cu_time_reps(a, enqueue_gate_pass, &run, &pass);
        }
        (void)cudaFree(sv);
        scratch_free(&sc);
        if (st == OPSCHED_OK)
            st = p->use_gemm ? time_plan(a, p, p->res, enqueue_gemm, &kept)
                             : time_choice(a, p->ch, &p->bias, p->res, &kept);
        if (st != OPSCHED_OK) goto fail;
        keyed->gate_wins[slot] =
            with >= 0.0f && (kept < 0.0f || pass < 0.0f || with < kept + pass) ? 1 : -1;
        os_log(a->ctx, OPSCHED_LOG_DEBUG,
               "cuda: node '%s': with its input's gate in the weights (%lld products) %.4f ms, "
               "as kept (%s) %.4f ms and the multiply's pass %.4f ms",
               a->node->name, (long long)N, (double)with, p->use_gemm ? "cuBLASLt" : "cuDNN",
               (double)kept, (double)pass);
    }
    if (!force && keyed->gate_wins[slot] < 0) goto fail;
    cu_lt_gemm_free(&p->lt);
    trial.lt = p->lt;
    cu_mm_choice_unref(trial.mm); /* the gated product applies the activation apart */
    trial.mm = NULL;
    trial.use_gate = 1;
    trial.use_gemm = trial.use_dw = trial.use_ig = trial.use_ln = 0;
    trial.base.workspace_bytes = wbytes;
    *p = trial;
    return OPSCHED_OK;
fail:
    cu_lt_gemm_free(&trial.gate_lt);
    (void)cudaFree(ws);
    return st;
}

opsched_status cu_plan_conv_graph(const cu_plan_args *a, int find, cu_conv_force force,
                                  cu_plan **out)
{
    int own = force == CU_CONV_OWN;
    int grouped_forced = force == CU_CONV_IM2COL || force == CU_CONV_IGEMM;
    cu_plan *base = NULL;
    conv_choice *ch = NULL;
    OS_TRY(check_shape(a));
    OS_TRY(cu_plan_alloc(a, sizeof(graph_plan), graph_launch, graph_release, &base));
    graph_plan *p = (graph_plan *)base;
    opsched_status st = OPSCHED_OK;
    cu_act act;
    cu_bk_pw mode;
    cu_act_for(a, &act);
    /* A residual epilogue, act(conv + b + r): cuDNN's graph takes the
     * convolution and its bias, one kernel after it the residual and the
     * activation (cuk_conv_residual). */
    opsched_conv_residual res;
    int node = cu_node_index(a);
    p->res = !own && a->opts->fuse_residual && node >= 0 &&
             opsched_conv_residual_find(a->g, node, &res) && cu_out(a, 0)->shape.ndim >= 2;
    if (p->res) cu_act_of(a, a->opts->fuse_activation ? res.act : -1, &act);
    /* The activation joins cuDNN's graph when cuDNN has its mode. */
    const cu_bk_pw *fusable = !p->res && act.on && cu_bk_act_mode(&act, &mode) ? &mode : NULL;
    int bias = cu_in(a, 2) != NULL;
    size_t limit = a->opts->workspace_limit ? a->opts->workspace_limit : cu_free_memory();
    OS_TRY_GOTO(st, get_choice(a, find, bias, fusable, limit, &ch), fail);
    p->ch = ch;              /* freed with the plan from here on */
    conv_choice *keyed = ch; /* the configuration's own, for the depthwise verdict */
    keyed->refs++;
    st = pick_epilogue(a, find, bias, &act, limit, &p->ch);
    ch = p->ch;
    p->kt = a->kt;
    /* What cuDNN's graph does not do, a kernel after it does. */
    if (st == OPSCHED_OK && p->res) {
        cu_conv_bias_init(a, &p->bias);
        p->bias.on = p->bias.on && !ch->fuse_bias;
        p->bias.act = act;
    } else if (st == OPSCHED_OK) {
        epilogue_of(a, ch, &act, &p->bias);
        if (force != CU_CONV_CUBLASLT && force != CU_CONV_MM_GRAPH && !grouped_forced)
            st = pick_depthwise(a, p, keyed, &act, own);
    }
    if (st == OPSCHED_OK && !own && !p->use_dw && !grouped_forced)
        st = pick_gemm(a, p, keyed, &act, force);
    if (st == OPSCHED_OK && !own && !p->use_gemm && force != CU_CONV_CUBLASLT &&
        force != CU_CONV_MM_GRAPH)
        st = pick_im2col(a, p, keyed, &act,
                         force == CU_CONV_IM2COL  ? 1
                         : force == CU_CONV_IGEMM ? 2
                                                  : 0);
    if (st == OPSCHED_OK && (force == CU_CONV_TIMED || own)) st = pick_norm(a, p, keyed, &act, own);
    if (st == OPSCHED_OK && !p->use_ln && force != CU_CONV_CUBLASLT && force != CU_CONV_MM_GRAPH &&
        !grouped_forced)
        st = pick_prologue(a, p, keyed, own);
    if (st == OPSCHED_OK && !own && !p->use_ln && !p->dw_pre.on && !grouped_forced)
        st = pick_gate(a, p, keyed, &act, force == CU_CONV_CUBLASLT);
    choice_unref(keyed);
    if (st != OPSCHED_OK) goto fail;
    if (!p->use_gate) {
        base->workspace_bytes =
            p->use_dw || p->use_gemm || p->use_ig || p->use_ln ? 0 : ch->workspace;
        if (base->workspace_bytes)
            OS_TRY_GOTO(st, cu_malloc(a->ctx, base->workspace_bytes, &base->workspace), fail);
    }
    if (p->use_gate) {
        snprintf(a->info->algo, sizeof(a->info->algo), "cublaslt%s%s%s%s, gated x%lld",
                 cu_in(a, 2) ? "+bias" : "", act.on ? "+" : "",
                 act.on ? opsched_node_op_name(act.node) : "", p->res ? "+residual" : "",
                 (long long)p->gate_n);
        base->n_in = 6;
        base->need_in |= 1ull << 5;
    } else if (p->use_ln)
        snprintf(a->info->algo, sizeof(a->info->algo), "depthwise+LayerNormalization");
    else if (p->use_ig)
        snprintf(a->info->algo, sizeof(a->info->algo), "%s%s%s%s", p->ig_mma ? "igemm" : "im2col",
                 cu_in(a, 2) ? "+bias" : "", act.on ? "+" : "",
                 act.on ? opsched_node_op_name(act.node) : "");
    else if (p->use_gemm && p->mm)
        cu_mm_graph_describe(p->mm, a->info->algo, sizeof(a->info->algo));
    else if (p->use_gemm)
        snprintf(a->info->algo, sizeof(a->info->algo), "cublaslt%s%s%s%s",
                 cu_in(a, 2) ? "+bias" : "", act.on ? "+" : "",
                 act.on ? opsched_node_op_name(act.node) : "", p->res ? "+residual" : "");
    else if (p->use_dw) {
        /* the variant, where the depthwise kernels have several
         * (cuk_dw_desc.tile_w and tile_h) */
        char var[24] = "";
        if (p->dw.cg == 1 && p->dw.m == p->dw.c && p->dw_nhwc) {
            if (p->dw.tile_h == 8 && p->dw.tile_w == 8)
                snprintf(var, sizeof(var), "/staged");
            else if (p->dw.tile_h > 0)
                snprintf(var, sizeof(var), "/vec%dx%d", p->dw.tile_h, p->dw.tile_w);
            else if (p->dw.tile_w > 0)
                snprintf(var, sizeof(var), "/tile%d", p->dw.tile_w);
            else if (p->dw.tile_w < 0)
                snprintf(var, sizeof(var), "/generic");
        }
        snprintf(a->info->algo, sizeof(a->info->algo), "%s%s%s%s%s%s",
                 p->dw.cg == 1 && p->dw.m == p->dw.c ? "depthwise" : "grouped", var,
                 act.on ? "+" : "", act.on ? opsched_node_op_name(act.node) : "",
                 p->dw_pre.on ? ", input " : "",
                 p->dw_pre.on ? opsched_node_op_name(p->dw_pre.node) : "");
    } else
        snprintf(a->info->algo, sizeof(a->info->algo), "graph:eng%lld%s%s%s%s",
                 (long long)ch->engine, ch->fuse_bias ? "+bias" : "", ch->fuse_act ? "+" : "",
                 ch->fuse_act ? ch->act.name : "", p->res ? "+residual" : "");
    a->info->fused_activation = act.on;
    a->info->fused_residual = p->res;
    a->info->fused_prologue = p->dw_pre.on;
    a->info->fused_gate = p->use_gate;
    /* a pass over the output for the activation alone: the kernel after
     * the product, or after cuDNN's graph where it did not take the
     * activation (a Relu there rides with an unfused bias's pass) */
    if (act.on && !p->res && !p->use_dw && !p->use_ln && !(p->use_ig && p->ig_mma))
        a->info->activation_apart =
            p->use_gemm || p->use_ig || p->use_gate
                ? p->gemm_act.on && !(p->use_gemm && p->mm)
                : p->bias.act.on && (p->bias.act.fn != CUK_U_RELU || !p->bias.on);
    *out = base;
    return OPSCHED_OK;
fail:
    cu_plan_destroy(base);
    return st;
}
