/*
 * cuda_gemm.c - Gemm and MatMul through cuBLAS (cublasGemmEx and
 * cublasGemmStridedBatchedEx).
 *
 * Row-major tensors go to column-major cuBLAS by the usual swap: a
 * row-major R x C matrix is a column-major C x R one, so Y = op(A) op(B)
 * is computed as Y^T = op(B)^T op(A)^T with B passed first.  Math modes:
 * strict fp32 uses CUBLAS_COMPUTE_32F (the handle's math mode stays
 * CUBLAS_DEFAULT_MATH, so no TF32), tf32 CUBLAS_COMPUTE_32F_FAST_TF32, and
 * fp16/bf16 data CUBLAS_COMPUTE_32F (fp32 accumulation).
 *
 * MatMul batches: one GEMM when only A is batched (the batch folds into
 * M), one strided-batched call when each operand is either fully batched or
 * shared by every batch, and otherwise (a general broadcast such as
 * [2,1,M,K] x [1,3,K,N]) one GEMM per batch entry.
 *
 * Gemm's C is broadcast into Y by a copy kernel before the GEMM runs with
 * beta, except a bias ([N], beta 1), which cuBLASLt's epilogue adds, as it
 * adds a MatMul's fused bias Add.  The cuBLAS workspace is the launch stream's (cu_gemm_workspace:
 * one per stream of the device, so plans can run on different streams at
 * once, and a network of many GEMMs holds one per stream, not one per
 * GEMM), set at every launch after cublasSetStream, which resets it; a
 * plan with a smaller workspace limit uses the start of it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

typedef struct gemm_plan {
    cu_plan base;
    cudaDataType_t type;
    cublasComputeType_t compute;
    /* The column-major call: first operand B, second A. */
    cublasOperation_t op_b, op_a;
    int m, n, k, ldb, lda, ldc;
    float alpha, beta;
    int copy_c; /* broadcast input 2 into the output first */
    cuk_nd c_nd;
    size_t elem;
    int batch; /* strided-batched count, 1 for a single GEMM */
    long long stride_a, stride_b, stride_y;
    int n_loop;               /* > 0: one GEMM per entry of the offsets below */
    int64_t *loop_a, *loop_b; /* element offsets per output batch entry */
    size_t ws_limit;          /* the most of the stream's workspace this plan uses */
    int strict_attention;     /* an attention product under TF32: strict fp32 */
    /* cuBLASLt with a bias epilogue (a MatMul's fused bias Add, input 2) */
    int lt;
    int lt_res; /* adds input 3 (a residual) through C, beta 1 */
    cu_lt_gemm lt_g;
    /* The product, its bias and the activation after it as one cuDNN graph
     * (cuda_matmul_graph.c) where that measured faster than lt_g and the
     * activation's kernel: one reference, with the packs of its pointer
     * sets; the plan's workspace is the graph's. */
    cu_mm_choice *mm;
    cu_bk_packs *mm_packs;
    /* Operands a launch finds off the graph's 16-byte alignment (a view
     * into another tensor) run lt_g and this activation's kernel instead. */
    cu_act mm_act;
    int64_t mm_numel;
    cuk_type mm_kt;
} gemm_plan;

static void gemm_release(cu_plan *base)
{
    gemm_plan *p = (gemm_plan *)base;
    free(p->loop_a);
    free(p->loop_b);
    cu_lt_gemm_free(&p->lt_g);
    if (p->mm_packs) cu_bk_packs_free(p->mm_packs);
    free(p->mm_packs);
    cu_mm_choice_unref(p->mm);
}

/* ---- one cuBLASLt product with an epilogue ---------------------------- */

void cu_lt_gemm_free(cu_lt_gemm *g)
{
    if (g->desc) (void)cublasLtMatmulDescDestroy(g->desc);
    if (g->la) (void)cublasLtMatrixLayoutDestroy(g->la);
    if (g->lb) (void)cublasLtMatrixLayoutDestroy(g->lb);
    if (g->ld) (void)cublasLtMatrixLayoutDestroy(g->ld);
    memset(g, 0, sizeof(*g));
}

int cu_align16(int64_t bytes)
{
    int al = 16;
    while (al > 1 && bytes % al)
        al /= 2;
    return al;
}

/* The heuristic's preferences for g: its workspace limit, and the
 * alignments of a batch's pointers. */
static cublasLtMatmulPreference_t lt_pref(const cu_lt_gemm *g)
{
    cublasLtMatmulPreference_t pref = NULL;
    if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS) return NULL;
    uint32_t al[3] = {(uint32_t)g->bt.align_a, (uint32_t)g->bt.align_b, (uint32_t)g->bt.align_d};
    if (cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &g->ws_limit, sizeof(g->ws_limit)) ||
        (g->bt.count > 0 &&
         (cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                               &al[0], sizeof(al[0])) ||
          cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                               &al[1], sizeof(al[1])) ||
          cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                               &al[2], sizeof(al[2])) ||
          cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                               &al[2], sizeof(al[2]))))) {
        (void)cublasLtMatmulPreferenceDestroy(pref);
        return NULL;
    }
    return pref;
}

/* The batch's count and strides on one matrix layout. */
static int lt_layout_batch(cublasLtMatrixLayout_t l, int count, int64_t stride)
{
    return cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                            sizeof(count)) == CUBLAS_STATUS_SUCCESS &&
           cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                            &stride, sizeof(stride)) == CUBLAS_STATUS_SUCCESS;
}

int cu_lt_gemm_init_batched(cu_device *dev, cudaDataType_t type, cublasComputeType_t compute,
                            cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            int lda, int ldb, int ldd, cublasLtEpilogue_t epi, float beta,
                            size_t ws_limit, const cu_lt_batch *bt, cu_lt_gemm *g)
{
    int tra = ta == CUBLAS_OP_T, trb = tb == CUBLAS_OP_T, found = 0;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    memset(g, 0, sizeof(*g));
    g->alpha = 1.0f;
    g->beta = beta;
    g->ws_limit = ws_limit;
    if (bt && bt->count > 0) g->bt = *bt;
    if (cublasLtMatmulDescCreate(&g->desc, compute, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)) ||
        cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)) ||
        cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)) ||
        cublasLtMatrixLayoutCreate(&g->la, type, (uint64_t)(tra ? k : m), (uint64_t)(tra ? m : k),
                                   lda) ||
        cublasLtMatrixLayoutCreate(&g->lb, type, (uint64_t)(trb ? n : k), (uint64_t)(trb ? k : n),
                                   ldb) ||
        cublasLtMatrixLayoutCreate(&g->ld, type, (uint64_t)m, (uint64_t)n, ldd))
        goto fail;
    if (g->bt.count > 0 &&
        (!lt_layout_batch(g->la, g->bt.count, g->bt.stride_a) ||
         !lt_layout_batch(g->lb, g->bt.count, g->bt.stride_b) ||
         !lt_layout_batch(g->ld, g->bt.count, g->bt.stride_d) ||
         cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                        &g->bt.stride_bias, sizeof(g->bt.stride_bias))))
        goto fail;
    if (!(pref = lt_pref(g)) ||
        cublasLtMatmulAlgoGetHeuristic(dev->cublaslt, g->desc, g->la, g->lb, g->ld, g->ld, pref, 1,
                                       &res, &found) ||
        found < 1)
        goto fail;
    (void)cublasLtMatmulPreferenceDestroy(pref);
    g->algo = res.algo;
    g->type = type;
    g->compute = compute;
    g->epi = epi;
    g->tra = tra;
    g->trb = trb;
    g->m = m;
    g->n = n;
    g->k = k;
    g->lda = lda;
    g->ldb = ldb;
    g->ldd = ldd;
    return 1;
fail:
    if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
    cu_lt_gemm_free(g);
    return 0;
}

int cu_lt_gemm_init(cu_device *dev, cudaDataType_t type, cublasComputeType_t compute,
                    cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda,
                    int ldb, int ldd, cublasLtEpilogue_t epi, float beta, size_t ws_limit,
                    cu_lt_gemm *g)
{
    return cu_lt_gemm_init_batched(dev, type, compute, ta, tb, m, n, k, lda, ldb, ldd, epi, beta,
                                   ws_limit, NULL, g);
}

opsched_status cu_lt_gemm_run(opsched_ctx *ctx, cu_device *dev, cu_lt_gemm *g, cudaStream_t s,
                              const void *A, const void *B, const void *bias, const void *C,
                              void *D)
{
    size_t ws_bytes = 0;
    void *ws = cu_gemm_workspace(dev, s, &ws_bytes);
    if (ws_bytes > g->ws_limit) ws_bytes = g->ws_limit;
    if (bias)
        CUBLAS_CHECK(ctx, cublasLtMatmulDescSetAttribute(
                              g->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    CUBLAS_CHECK(ctx, cublasLtMatmul(dev->cublaslt, g->desc, &g->alpha, A, g->la, B, g->lb,
                                     &g->beta, C ? C : D, g->ld, D, g->ld, &g->algo,
                                     ws_bytes ? ws : NULL, ws_bytes, s));
    return OPSCHED_OK;
}

/* ---- the timed choice among cuBLASLt's algorithms --------------------- */

typedef struct lt_tuned {
    cublasLtMatmulAlgo_t algo;
} lt_tuned;

typedef struct lt_run {
    cu_lt_gemm *g;
    void *A, *B, *bias, *C, *D;
} lt_run;

static opsched_status enqueue_lt(const cu_plan_args *a, void *env, cudaStream_t s)
{
    lt_run *r = env;
    return cu_lt_gemm_run(a->ctx, a->dev, r->g, s, r->A, r->B, r->bias, r->C, r->D);
}

static int lt_has_bias(cublasLtEpilogue_t e)
{
    return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS ||
           e == CUBLASLT_EPILOGUE_GELU_BIAS;
}

static void lt_scratch_free(lt_run *r)
{
    void *p[5] = {r->A, r->B, r->bias, r->C, r->D};
    for (int i = 0; i < 5; i++)
        if (p[i]) (void)cudaFree(p[i]);
}

opsched_status cu_lt_gemm_tune(const cu_plan_args *a, cu_lt_gemm *g)
{
    if (a->opts->ablate & OPSCHED_ABLATE_GEMM_TUNING) return OPSCHED_OK;
    char key[256];
    os_plan_cache *cache = a->dev->lt_algos;
    int w = snprintf(key, sizeof key,
                     "%d %d %d %d %d %d %d %d %d %d %d %a %zu %d %lld %lld %lld %d %d %d",
                     (int)g->type, (int)g->compute, (int)g->epi, g->tra, g->trb, g->m, g->n,
                     g->k, g->lda, g->ldb, g->ldd, (double)g->beta, g->ws_limit, g->bt.count,
                     (long long)g->bt.stride_a, (long long)g->bt.stride_b,
                     (long long)g->bt.stride_d, g->bt.align_a, g->bt.align_b, g->bt.align_d);
    int keyed = cache && w > 0 && (size_t)w < sizeof key;
    if (keyed) {
        lt_tuned *t = os_plan_cache_get(cache, key);
        os_plan_cache_count(cache, t != NULL);
        if (t) {
            g->algo = t->algo;
            return OPSCHED_OK;
        }
    }
    cublasLtMatmulHeuristicResult_t res[CU_LT_TUNE_ALGOS];
    int found = 0;
    cublasLtMatmulPreference_t pref = lt_pref(g);
    if (!pref) return OPSCHED_OK;
    if (cublasLtMatmulAlgoGetHeuristic(a->dev->cublaslt, g->desc, g->la, g->lb, g->ld, g->ld, pref,
                                       CU_LT_TUNE_ALGOS, res, &found))
        found = 0;
    (void)cublasLtMatmulPreferenceDestroy(pref);
    if (found < 2) return OPSCHED_OK;
    size_t elem = g->type == CUDA_R_32F ? 4 : 2;
    size_t a_cols = (size_t)(g->tra ? g->m : g->k), b_cols = (size_t)(g->trb ? g->k : g->n);
    /* a batch's last product reaches (count - 1) strides further */
    size_t more = g->bt.count > 1 ? (size_t)(g->bt.count - 1) : 0;
    size_t a_el = (size_t)g->lda * a_cols + more * (size_t)g->bt.stride_a;
    size_t b_el = (size_t)g->ldb * b_cols + more * (size_t)g->bt.stride_b;
    size_t d_el = (size_t)g->ldd * (size_t)g->n + more * (size_t)g->bt.stride_d;
    size_t bias_el = (size_t)g->m + more * (size_t)g->bt.stride_bias;
    lt_run run = {.g = g};
    opsched_status st = OPSCHED_OK;
    OS_TRY_GOTO(st, cu_zeroed(a, a_el * elem, &run.A), done);
    OS_TRY_GOTO(st, cu_zeroed(a, b_el * elem, &run.B), done);
    OS_TRY_GOTO(st, cu_zeroed(a, d_el * elem, &run.D), done);
    if (lt_has_bias(g->epi)) OS_TRY_GOTO(st, cu_zeroed(a, bias_el * elem, &run.bias), done);
    if (g->beta != 0.0f) OS_TRY_GOTO(st, cu_zeroed(a, d_el * elem, &run.C), done);
    float first = -1.0f, best = -1.0f;
    int pick = 0;
    for (int i = 0; i < found; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
        float ms = -1.0f;
        g->algo = res[i].algo;
        if (cu_time_reps(a, enqueue_lt, &run, &ms) != OPSCHED_OK) {
            /* an algorithm that does not run here is passed over */
            opsched_ctx_clear_error(a->ctx);
            (void)cudaGetLastError();
            CUDA_CHECK_GOTO(a->ctx, st, cudaStreamSynchronize(a->dev->stream), done);
            continue;
        }
        if (i == 0) first = ms;
        if (ms >= 0.0f && (best < 0.0f || ms < best)) {
            best = ms;
            pick = i;
        }
    }
    g->algo = res[pick].algo;
    os_log(a->ctx, OPSCHED_LOG_DEBUG,
           "cuda: node '%s': cuBLASLt %dx%dx%d: %d algorithms timed, the heuristic's first "
           "%.4f ms, #%d %.4f ms",
           a->node->name, g->m, g->n, g->k, found, (double)first, pick, (double)best);
    if (keyed) {
        lt_tuned *t = malloc(sizeof(*t));
        if (t) {
            t->algo = g->algo;
            if (os_plan_cache_put(cache, key, t) != 0) free(t);
        }
    }
done:
    lt_scratch_free(&run);
    return st;
}

opsched_status cu_gemm_default_workspace(const cu_plan_args *a, size_t *limit)
{
    /* cuBLAS's recommended workspace: 32 MiB on Hopper and later, 4 MiB before. */
    int major = 0;
    CUDA_CHECK(a->ctx, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                              a->dev->index));
    size_t ws = major >= 9 ? (size_t)32 << 20 : (size_t)4 << 20;
    OS_TRY(cu_gemm_workspace_reserve(a->ctx, a->dev, ws));
    *limit = ws;
    if (a->opts->workspace_limit && a->opts->workspace_limit < ws)
        *limit = a->opts->workspace_limit;
    return OPSCHED_OK;
}

/* The product through cuBLASLt with the bias (in[2]) in its epilogue. */
static opsched_status gemm_launch_lt(opsched_ctx *ctx, cu_device *dev, gemm_plan *p,
                                     cudaStream_t s, void *const *in, void *const *out)
{
    return cu_lt_gemm_run(ctx, dev, &p->lt_g, s, in[1], in[0], in[2], p->lt_res ? in[3] : NULL,
                          out[0]);
}

/* 1 when residual rt of mb is stored in the product's row-major order:
 * row-major itself, or, after a Transpose that the plan's layouts make a
 * view (its output stored in its input's order), stored as that output. */
static int residual_in_order(const cu_plan_args *a, const opsched_matmul_bias *mb,
                             const opsched_tensor *rt)
{
    if (mb->tr < 0) return !cu_is_nhwc(a, rt);
    if (!a->opts->rowmajor || a->opts->rowmajor_graph != a->g ||
        !opsched_layout_transpose_view(a->g, mb->tr, a->opts->rowmajor))
        return 0;
    const opsched_tensor *tt =
        opsched_graph_tensor(a->g, opsched_graph_node(a->g, mb->tr)->outputs[0]);
    return tt && cu_is_nhwc(a, tt) == cu_is_nhwc(a, rt);
}

/* Sets up plan p (a single product, m = N, n = rows of A, k = K, the
 * operands as p->op_b and p->op_a say) for cuBLASLt with a bias epilogue,
 * and the activation act (-1: none) where cuBLASLt has it: Relu, and the
 * tanh approximation of GELU, with the heuristic's first algorithm.  0
 * when cuBLASLt offers no algorithm (the plan then stays a plain
 * product). */
static int gemm_setup_lt(const cu_plan_args *a, gemm_plan *p, int act, int *fused_act)
{
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    *fused_act = 0;
    const opsched_node *an = act >= 0 && a->opts->fuse_activation ? opsched_graph_node(a->g, act)
                                                                   : NULL;
    if (an && an->op == OPSCHED_OP_RELU) {
        epi = CUBLASLT_EPILOGUE_RELU_BIAS;
        *fused_act = 1;
    } else if (an && an->op == OPSCHED_OP_GELU && an->attr.gelu.tanh_approx) {
        epi = CUBLASLT_EPILOGUE_GELU_BIAS;
        *fused_act = 1;
    }
    if (!cu_lt_gemm_init(a->dev, p->type, p->compute, p->op_b, p->op_a, p->m, p->n, p->k, p->ldb,
                         p->lda, p->ldc, epi, p->beta, p->ws_limit, &p->lt_g)) {
        *fused_act = 0;
        return 0;
    }
    p->lt_g.alpha = p->alpha;
    p->lt = 1;
    return 1;
}

static opsched_status gemm_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                  void *const *in, void *const *out)
{
    gemm_plan *p = (gemm_plan *)base;
    if (p->mm) {
        int aligned = 1;
        const void *ptrs[4] = {in[0], in[1], in[2], out[0]};
        for (int i = 0; i < 4; i++)
            aligned &= (uintptr_t)ptrs[i] % CU_BK_ALIGN == 0;
        if (aligned)
            return cu_mm_graph_run(ctx, dev, p->mm, p->mm_packs, base->workspace, s, in[0],
                                   in[1], in[2], out[0]);
        OS_TRY(gemm_launch_lt(ctx, dev, p, s, in, out));
        CUDA_CHECK(ctx, cuk_ew_unary(p->mm_act.fn, &p->mm_act.prm, (cuk_dtype)p->mm_kt,
                                     (cuk_dtype)p->mm_kt, p->mm_numel, out[0], out[0], s));
        return OPSCHED_OK;
    }
    if (p->lt) return gemm_launch_lt(ctx, dev, p, s, in, out);
    const char *A = in[0], *B = in[1];
    char *Y = out[0];
    size_t ws_bytes = 0;
    void *ws = cu_gemm_workspace(dev, s, &ws_bytes);
    if (ws_bytes > p->ws_limit) ws_bytes = p->ws_limit;
    CUBLAS_CHECK(ctx, cublasSetStream(dev->cublas, s));
    CUBLAS_CHECK(ctx, cublasSetWorkspace(dev->cublas, ws_bytes ? ws : NULL, ws_bytes));
    if (p->copy_c) CUDA_CHECK(ctx, cuk_copy(p->elem, &p->c_nd, in[2], Y, s));
    if (p->n_loop) {
        size_t ystep = (size_t)p->m * (size_t)p->n * p->elem;
        for (int i = 0; i < p->n_loop; i++)
            CUBLAS_CHECK(ctx, cublasGemmEx(dev->cublas, p->op_b, p->op_a, p->m, p->n, p->k,
                                           &p->alpha, B + p->loop_b[i] * (int64_t)p->elem, p->type,
                                           p->ldb, A + p->loop_a[i] * (int64_t)p->elem, p->type,
                                           p->lda, &p->beta, Y + (size_t)i * ystep, p->type, p->ldc,
                                           p->compute, CUBLAS_GEMM_DEFAULT));
    } else if (p->batch > 1) {
        CUBLAS_CHECK(ctx, cublasGemmStridedBatchedEx(dev->cublas, p->op_b, p->op_a, p->m, p->n,
                                                     p->k, &p->alpha, B, p->type, p->ldb,
                                                     p->stride_b, A, p->type, p->lda, p->stride_a,
                                                     &p->beta, Y, p->type, p->ldc, p->stride_y,
                                                     p->batch, p->compute, CUBLAS_GEMM_DEFAULT));
    } else {
        CUBLAS_CHECK(ctx, cublasGemmEx(dev->cublas, p->op_b, p->op_a, p->m, p->n, p->k, &p->alpha,
                                       B, p->type, p->ldb, A, p->type, p->lda, &p->beta, Y, p->type,
                                       p->ldc, p->compute, CUBLAS_GEMM_DEFAULT));
    }
    return OPSCHED_OK;
}

/* A plan that reads the bias as input 2 (after A and B). */
static void base_fuse_bias(cu_plan *base)
{
    base->n_in = 3;
    base->need_in |= 1ull << 2;
}

/* Common set-up: types, compute type, workspace. */
static opsched_status gemm_new(const cu_plan_args *a, gemm_plan **out)
{
    for (int i = 0; i < a->node->n_inputs; i++) {
        const opsched_tensor *t = cu_in(a, i);
        if (t && !cu_dtype_is_float(t->dtype))
            return CU_UNSUPPORTED(a, "matrix products of %s data", opsched_dtype_name(t->dtype));
        if (t && cu_is_nhwc(a, t))
            return CU_UNSUPPORTED(a, "a 4-D operand in the NHWC layout (only NCHW supported)");
    }
    cu_plan *base = NULL;
    OS_TRY(cu_plan_alloc(a, sizeof(gemm_plan), gemm_launch, gemm_release, &base));
    gemm_plan *p = (gemm_plan *)base;
    p->elem = opsched_dtype_size(a->dt);
    p->type = a->dt == OPSCHED_F16 ? CUDA_R_16F : a->dt == OPSCHED_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    /* An attention's two products stay strict fp32 under TF32
     * (opsched_product_is_attention), as PyTorch's fused attention keeps them. */
    int node = cu_node_index(a);
    p->strict_attention = a->opts->math == OPSCHED_MATH_TF32 && node >= 0 &&
                          opsched_product_is_attention(a->g, node);
    p->compute = a->opts->math == OPSCHED_MATH_TF32 && !p->strict_attention
                     ? CUBLAS_COMPUTE_32F_FAST_TF32
                     : CUBLAS_COMPUTE_32F;
    p->alpha = 1.0f;
    p->beta = 0.0f;
    p->batch = 1;
    opsched_status st = OPSCHED_OK;
    OS_TRY_GOTO(st, cu_gemm_default_workspace(a, &p->ws_limit), fail);
    *out = p;
    return OPSCHED_OK;
fail:
    cu_plan_destroy(base);
    return st;
}

static int dims_fit(int64_t m, int64_t n, int64_t k)
{
    return m > 0 && n > 0 && k > 0 && cu_fits_int(m) && cu_fits_int(n) && cu_fits_int(k);
}

static opsched_status try_graph(const cu_plan_args *a, gemm_plan *p, int act, int *fused);

opsched_status cu_plan_gemm(const cu_plan_args *a, cu_plan **out)
{
    const opsched_gemm_attr *g = &a->node->attr.gemm;
    const opsched_tensor *A = cu_in(a, 0), *C = cu_in(a, 2), *Y = cu_out(a, 0);
    int64_t M = Y->shape.d[0], N = Y->shape.d[1];
    int64_t K = g->trans_a ? A->shape.d[0] : A->shape.d[1];
    if (!dims_fit(M, N, K))
        return CU_UNSUPPORTED(a, "GEMM of %lldx%lldx%lld (each must be in 1..2^31-1)", (long long)M,
                              (long long)N, (long long)K);
    gemm_plan *p = NULL;
    OS_TRY(gemm_new(a, &p));
    p->op_b = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    p->op_a = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    p->m = (int)N;
    p->n = (int)M;
    p->k = (int)K;
    p->ldb = (int)(g->trans_b ? K : N);
    p->lda = (int)(g->trans_a ? M : K);
    p->ldc = (int)N;
    p->alpha = g->alpha;
    /* C a bias ([N] or [1, N]) added once: cuBLASLt's bias epilogue, no
     * copy; the activation after the Gemm (opsched_node_epilogue) in it
     * where cuBLASLt has it, else the three as one cuDNN graph where that
     * measures faster (try_graph: A not transposed, alpha 1) */
    int fused_act = 0, node = cu_node_index(a);
    int act = a->opts->fuse_activation && node >= 0 ? opsched_node_epilogue(a->g, node) : -1;
    if (C && g->beta == 1.0f && a->opts->fuse_bias && opsched_shape_numel(&C->shape) == N &&
        C->shape.d[C->shape.ndim - 1] == N && cu_kdt(a, C) == (cuk_dtype)a->kt &&
        gemm_setup_lt(a, p, act, &fused_act)) {
        opsched_status tst = cu_lt_gemm_tune(a, &p->lt_g);
        int graph = 0;
        if (tst == OPSCHED_OK && !fused_act && act >= 0 && !g->trans_a && g->alpha == 1.0f)
            tst = try_graph(a, p, act, &graph);
        if (tst != OPSCHED_OK) {
            cu_plan_destroy(&p->base);
            return tst;
        }
        /* C is the Gemm's own input: no bias Add absorbed (fused_bias
         * names a MatMul's), only the activation after it */
        a->info->fused_activation = fused_act || graph;
        if (graph)
            cu_mm_graph_describe(p->mm, a->info->algo, sizeof(a->info->algo));
        else
            snprintf(a->info->algo, sizeof(a->info->algo), "%s",
                     fused_act ? "cublaslt_bias_act" : "cublaslt_bias");
        *out = &p->base;
        return OPSCHED_OK;
    }
    if (C && g->beta != 0.0f) {
        /* C broadcast to [M, N]: right-aligned, stride 0 where it has extent 1. */
        cuk_nd *nd = &p->c_nd;
        const opsched_shape *cs = &C->shape;
        memset(nd, 0, sizeof(*nd));
        nd->ndim = 2;
        nd->shape[0] = M;
        nd->shape[1] = N;
        nd->stride[0][0] = N;
        nd->stride[0][1] = 1;
        int64_t cst = 1;
        for (int i = 1; i >= 0; i--) {
            int ci = cs->ndim - 2 + i;
            int64_t d = ci >= 0 ? cs->d[ci] : 1;
            nd->stride[1][i] = d == 1 ? 0 : cst;
            cst *= d;
        }
        cu_nd_simplify(nd, 2);
        p->copy_c = 1;
        p->beta = g->beta;
    }
    snprintf(a->info->algo, sizeof(a->info->algo), "cublas_gemm");
    *out = &p->base;
    return OPSCHED_OK;
}

/* The product p (cuBLASLt with its bias epilogue, tuned), its bias and
 * the activation `act` after it as one cuDNN graph where that measures
 * faster than p and the activation's kernel (with --algo cudnn wherever an
 * engine runs it): then p runs the graph and the activation is fused. */
static opsched_status try_graph(const cu_plan_args *a, gemm_plan *p, int act, int *fused)
{
    const char *algo = a->opts->algo;
    int force = algo && strcmp(algo, "cudnn") == 0;
    *fused = 0;
    if (!force && (a->opts->ablate & OPSCHED_ABLATE_MATMUL_GRAPH)) return OPSCHED_OK;
    cu_mm_desc d = {.m = p->n, .n = p->m, .k = p->k, .b_trans = p->op_b == CUBLAS_OP_T,
                    .kt = a->kt};
    cu_act_of(a, act, &d.act);
    if (!d.act.on || !cuk_ew_unary_ok(d.act.fn, (cuk_dtype)a->kt, (cuk_dtype)a->kt))
        return OPSCHED_OK;
    cu_mm_choice *mm = NULL;
    OS_TRY(cu_mm_graph_plan(a, &d, &p->lt_g, p->ws_limit, force, &mm));
    if (!mm) return OPSCHED_OK;
    p->mm = mm;
    p->mm_act = d.act;
    p->mm_numel = (int64_t)d.m * d.n;
    p->mm_kt = a->kt;
    p->mm_packs = calloc(1, sizeof(*p->mm_packs));
    if (!p->mm_packs) return OS_NOMEM(a->ctx);
    size_t ws = cu_mm_graph_workspace(mm);
    if (ws) {
        OS_TRY(cu_malloc(a->ctx, ws, &p->base.workspace));
        p->base.workspace_bytes = ws;
    }
    *fused = 1;
    return OPSCHED_OK;
}

/* Element offsets of each batch entry of an operand whose batch dims
 * (rank nb, right-aligned against the output's) broadcast to bo. */
static void batch_offsets(const opsched_shape *bo, const int64_t *dims, int nb, int64_t mat,
                          int64_t *offs)
{
    int64_t st[OPSCHED_MAX_DIMS] = {0}, s = mat;
    for (int i = bo->ndim - 1; i >= 0; i--) {
        int di = nb - bo->ndim + i;
        int64_t d = di >= 0 ? dims[di] : 1;
        st[i] = d == 1 ? 0 : s;
        s *= d;
    }
    int64_t total = opsched_shape_numel(bo);
    for (int64_t b = 0; b < total; b++) {
        int64_t rest = b, off = 0;
        for (int i = bo->ndim - 1; i >= 0; i--) {
            off += (rest % bo->d[i]) * st[i];
            rest /= bo->d[i];
        }
        offs[b] = off;
    }
}

/* The single stride that reproduces offs (0 when shared), or -1. */
static int64_t uniform_stride(const int64_t *offs, int64_t n)
{
    int64_t s = n > 1 ? offs[1] - offs[0] : 0;
    for (int64_t i = 0; i < n; i++)
        if (offs[i] != i * s) return -1;
    return s;
}

opsched_status cu_plan_matmul(const cu_plan_args *a, cu_plan **out)
{
    opsched_shape As = cu_in(a, 0)->shape, Bs = cu_in(a, 1)->shape;
    if (As.ndim == 1) {
        As.ndim = 2;
        As.d[1] = As.d[0];
        As.d[0] = 1;
    }
    if (Bs.ndim == 1) {
        Bs.ndim = 2;
        Bs.d[1] = 1;
    }
    int64_t M = As.d[As.ndim - 2], K = As.d[As.ndim - 1], N = Bs.d[Bs.ndim - 1];
    opsched_shape bo = {.ndim = 0};
    int nba = As.ndim - 2, nbb = Bs.ndim - 2;
    bo.ndim = OS_MAX(nba, nbb);
    for (int i = 0; i < bo.ndim; i++) {
        int ia = nba - bo.ndim + i, ib = nbb - bo.ndim + i;
        int64_t da = ia >= 0 ? As.d[ia] : 1, db = ib >= 0 ? Bs.d[ib] : 1;
        bo.d[i] = da == 1 ? db : da;
    }
    int64_t batch = opsched_shape_numel(&bo);
    if (!dims_fit(M, N, K) || batch < 1 || !cu_fits_int(batch))
        return CU_UNSUPPORTED(a,
                              "batched GEMM of %lld x %lldx%lldx%lld (each must be in "
                              "1..2^31-1)",
                              (long long)batch, (long long)M, (long long)N, (long long)K);
    int64_t *oa = malloc(sizeof(int64_t) * (size_t)batch);
    int64_t *ob = malloc(sizeof(int64_t) * (size_t)batch);
    gemm_plan *p = NULL;
    opsched_status st = OPSCHED_OK;
    if (!oa || !ob) {
        st = OS_NOMEM(a->ctx);
        goto done;
    }
    batch_offsets(&bo, As.d, nba, M * K, oa);
    batch_offsets(&bo, Bs.d, nbb, K * N, ob);
    OS_TRY_GOTO(st, gemm_new(a, &p), done);
    p->op_b = CUBLAS_OP_N;
    p->op_a = CUBLAS_OP_N;
    p->m = (int)N;
    p->n = (int)M;
    p->k = (int)K;
    p->ldb = (int)N;
    p->lda = (int)K;
    p->ldc = (int)N;
    int64_t sa = uniform_stride(oa, batch), sb = uniform_stride(ob, batch);
    const char *algo = "cublas_gemm";
    if (batch > 1 && sb == 0 && sa == M * K && cu_fits_int(batch * M)) {
        p->n = (int)(batch * M); /* B shared: the batch is just more rows of A */
    } else if (batch > 1 && sa >= 0 && sb >= 0) {
        p->batch = (int)batch;
        p->stride_a = sa;
        p->stride_b = sb;
        p->stride_y = M * N;
        algo = "cublas_strided_batched";
    } else if (batch > 1) {
        p->n_loop = (int)batch;
        p->loop_a = oa;
        p->loop_b = ob;
        oa = ob = NULL;
        algo = "cublas_gemm_loop";
    }
    /* A bias Add after a single product (or one whose batch folds into its
     * rows) runs in cuBLASLt's epilogue. */
    opsched_matmul_bias mb;
    if (a->opts->fuse_bias && !p->n_loop && p->batch == 1 && !p->strict_attention &&
        opsched_matmul_bias_find(a->g, cu_node_index(a), &mb)) {
        const opsched_tensor *bt = opsched_graph_tensor(a->g, mb.bias);
        const opsched_tensor *rt =
            mb.residual >= 0 ? opsched_graph_tensor(a->g, mb.residual) : NULL;
        /* a residual through C (beta 1), in the product's layout */
        int res = a->opts->fuse_residual && rt && cu_kdt(a, rt) == (cuk_dtype)a->kt &&
                  residual_in_order(a, &mb, rt);
        int fused_act = 0;
        if (cu_kdt(a, bt) == (cuk_dtype)a->kt &&
            gemm_setup_lt(a, p, res ? -1 : mb.act, &fused_act)) {
            base_fuse_bias(&p->base);
            a->info->fused_bias = 1;
            a->info->fused_activation = fused_act;
            algo = fused_act ? "cublaslt_bias_act" : "cublaslt_bias";
            if (res) {
                p->lt_res = 1;
                p->beta = p->lt_g.beta = 1.0f;
                p->base.n_in = 4;
                p->base.need_in |= 1ull << 3;
                a->info->fused_residual = 1;
                algo = "cublaslt_bias_residual";
            }
            opsched_status tst = cu_lt_gemm_tune(a, &p->lt_g);
            int graph = 0;
            if (tst == OPSCHED_OK && !res && !fused_act && mb.act >= 0 &&
                a->opts->fuse_activation)
                tst = try_graph(a, p, mb.act, &graph);
            if (tst != OPSCHED_OK) {
                cu_plan_destroy(&p->base);
                return tst;
            }
            if (graph) {
                a->info->fused_activation = 1;
                cu_mm_graph_describe(p->mm, a->info->algo, sizeof(a->info->algo));
                *out = &p->base;
                goto done;
            }
        }
    }
    snprintf(a->info->algo, sizeof(a->info->algo), "%s%s", algo,
             p->strict_attention ? "_fp32" : "");
    *out = &p->base;
done:
    free(oa);
    free(ob);
    return st;
}
