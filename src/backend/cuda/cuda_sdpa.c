/*
 * cuda_sdpa.c - fp16 and bf16 attention through cuDNN's fused
 * flash-attention engines, the way PyTorch's cuDNN SDPA backend reaches
 * them: an operation graph of the graph API's matmul, pointwise and
 * reduction operations,
 *
 *     S = Q K^T          (float)
 *     S = S * scale      (scale by value)
 *     S = S + bias       (when the node has one; broadcast over B and H)
 *     M = max_j S        E = exp(S - M)      L = sum_j E
 *     M + log L          (the row statistics, virtual)
 *     P = E / L          (stored in the operands' type)
 *     O = P V
 *
 * for which cuDNN's heuristics propose an engine that keeps S and P on
 * chip.  K enters the first product as K^T: its dims [B, H, D, Sk] with
 * the strides of its last two dims swapped, so nothing is copied.  Every
 * operand is read through the node's strides (views of a packed QKV
 * included); cuDNN needs the head dim contiguous and 16-byte aligned
 * starts.
 *
 * Which runs is measured: once per configuration the plan times cuDNN's
 * execution plan and the own kernel (cuk_attention) on zeroed scratch
 * operands and keeps the faster; the verdict lives in the cached choice.
 * A graph cuDNN cannot run (no engine, a shape it turns down) leaves the
 * own kernel, with the reason in the debug log.
 *
 * Rows whose scores are all -inf: the flash engines give 0 there (a zero
 * sum is guarded), which is what a node with nan_rows_zero asks for.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

#define SDPA_RUNS 5 /* timed runs of each candidate, after one warm-up */

enum { UID_Q = 1, UID_K, UID_V, UID_O, UID_BIAS, UID_SCALE, UID_VIRTUAL = 100 };

/* What planning decides for one configuration: the graph, the execution
 * plan and, once measured, whether it beats the own kernel.  Shared
 * through the device's plan cache; freed with its last reference. */
typedef struct sdpa_choice {
    int refs;
    cu_bk_graph g;
    cudnnBackendDescriptor_t plan;
    int64_t engine;
    size_t workspace;
    int wins; /* 0: not measured; 1: cuDNN faster; -1: the own kernel */
    float cudnn_ms, own_ms;
} sdpa_choice;

typedef struct sdpa_plan {
    cu_plan base;
    sdpa_choice *ch; /* one reference */
    size_t off[3];   /* bytes into Q, K and V */
    int has_bias;
    float scale; /* the by-value scale the packs point at */
    cu_bk_packs packs;
} sdpa_plan;

/* ---- the graph ------------------------------------------------------- */

static void choice_unref(sdpa_choice *c)
{
    if (!c || --c->refs > 0) return;
    cu_bk_free(&c->plan);
    cu_bk_graph_free(&c->g);
    free(c);
}

void cu_sdpa_choice_release(void *choice)
{
    choice_unref(choice);
}

/* y = mode(x[, b]) in float. */
static opsched_status pointwise(const cu_plan_args *a, sdpa_choice *c, cudnnPointwiseMode_t mode,
                                cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                cudnnBackendDescriptor_t y)
{
    const cu_bk_pw m = {.mode = mode};
    return cu_bk_pointwise(a, &c->g, &m, x, b, y);
}

/* Strides cuDNN accepts for dims d with element strides s (0 where the
 * node broadcasts or the dim has size 1): such a dim gets size 1 and a
 * stride past every other dim. */
static void fix_dims(const int64_t full[4], const int64_t s[4], int64_t dims[4], int64_t strides[4])
{
    int64_t outer = 1;
    for (int c = 0; c < 4; c++) {
        dims[c] = s[c] == 0 ? 1 : full[c];
        if (dims[c] > 1 && s[c] * dims[c] > outer) outer = s[c] * dims[c];
    }
    for (int c = 0; c < 4; c++)
        strides[c] = dims[c] > 1 ? s[c] : outer;
}

static opsched_status build_graph(const cu_plan_args *a, const cuk_attention_desc *d,
                                  cudnnDataType_t dt, int has_bias, sdpa_choice *c)
{
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    const int64_t qf[4] = {d->B, d->H, d->Sq, d->D}, kf[4] = {d->B, d->H, d->D, d->Sk};
    const int64_t vf[4] = {d->B, d->H, d->Sk, d->Dv}, of[4] = {d->B, d->H, d->Sq, d->Dv};
    const int64_t sf[4] = {d->B, d->H, d->Sq, d->Sk};
    const int64_t ks[4] = {d->k[0], d->k[1], d->k[3], d->k[2]}; /* K^T */
    int64_t dims[4], st[4];
    cudnnBackendDescriptor_t q, kt, v, o, scale, bias = NULL;
    cudnnBackendDescriptor_t s, ss, sb = NULL, m, sub, e, l, logl, stats, p;
    fix_dims(qf, d->q, dims, st);
    OS_TRY(cu_bk_tensor(a, &c->g, UID_Q, dt, 4, dims, st, 0, 0, &q));
    fix_dims(kf, ks, dims, st);
    OS_TRY(cu_bk_tensor(a, &c->g, UID_K, dt, 4, dims, st, 0, 0, &kt));
    fix_dims(vf, d->v, dims, st);
    OS_TRY(cu_bk_tensor(a, &c->g, UID_V, dt, 4, dims, st, 0, 0, &v));
    fix_dims(of, d->o, dims, st);
    OS_TRY(cu_bk_tensor(a, &c->g, UID_O, dt, 4, dims, st, 0, 0, &o));
    const int64_t one[4] = {1, 1, 1, 1};
    OS_TRY(cu_bk_tensor(a, &c->g, UID_SCALE, f32, 4, one, one, 0, 1, &scale));
    if (has_bias) {
        fix_dims(sf, d->bias, dims, st);
        OS_TRY(cu_bk_tensor(a, &c->g, UID_BIAS, dt, 4, dims, st, 0, 0, &bias));
    }
    /* the scores and the row statistics, on chip */
    const int64_t sst[4] = {d->H * d->Sq * d->Sk, d->Sq * d->Sk, d->Sk, 1};
    const int64_t rf[4] = {d->B, d->H, d->Sq, 1}, rst[4] = {d->H * d->Sq, d->Sq, 1, 1};
    int64_t uid = UID_VIRTUAL;
    OS_TRY(cu_bk_tensor(a, &c->g, uid++, f32, 4, sf, sst, 1, 0, &s));
    OS_TRY(cu_bk_tensor(a, &c->g, uid++, f32, 4, sf, sst, 1, 0, &ss));
    if (has_bias) OS_TRY(cu_bk_tensor(a, &c->g, uid++, f32, 4, sf, sst, 1, 0, &sb));
    OS_TRY(cu_bk_tensor(a, &c->g, uid++, f32, 4, rf, rst, 1, 0, &m));
    OS_TRY(cu_bk_tensor(a, &c->g, uid++, f32, 4, sf, sst, 1, 0, &sub));
    OS_TRY(cu_bk_tensor(a, &c->g, uid++, f32, 4, sf, sst, 1, 0, &e));
    OS_TRY(cu_bk_tensor(a, &c->g, uid++, f32, 4, rf, rst, 1, 0, &l));
    OS_TRY(cu_bk_tensor(a, &c->g, uid++, f32, 4, rf, rst, 1, 0, &logl));
    OS_TRY(cu_bk_tensor(a, &c->g, uid++, f32, 4, rf, rst, 1, 0, &stats));
    OS_TRY(cu_bk_tensor(a, &c->g, uid++, dt, 4, sf, sst, 1, 0, &p));

    OS_TRY(cu_bk_matmul(a, &c->g, q, kt, s));
    OS_TRY(pointwise(a, c, CUDNN_POINTWISE_MUL, s, scale, ss));
    cudnnBackendDescriptor_t last = ss;
    if (has_bias) {
        OS_TRY(pointwise(a, c, CUDNN_POINTWISE_ADD, ss, bias, sb));
        last = sb;
    }
    OS_TRY(cu_bk_reduction(a, &c->g, CUDNN_REDUCE_TENSOR_MAX, last, m));
    OS_TRY(pointwise(a, c, CUDNN_POINTWISE_SUB, last, m, sub));
    OS_TRY(pointwise(a, c, CUDNN_POINTWISE_EXP, sub, NULL, e));
    OS_TRY(cu_bk_reduction(a, &c->g, CUDNN_REDUCE_TENSOR_ADD, e, l));
    /* the row statistics M + log L, virtual: inference needs none, but
     * the fused engines match the graph with them (as cuDNN's frontend
     * builds it) */
    OS_TRY(pointwise(a, c, CUDNN_POINTWISE_LOG, l, NULL, logl));
    OS_TRY(pointwise(a, c, CUDNN_POINTWISE_ADD, m, logl, stats));
    OS_TRY(pointwise(a, c, CUDNN_POINTWISE_DIV, e, l, p));
    OS_TRY(cu_bk_matmul(a, &c->g, p, v, o));

    return cu_bk_graph_finish(a, &c->g);
}

/* The first engine config of heuristics mode A (then the fallback list)
 * that builds an execution plan. */
static opsched_status build_plan(const cu_plan_args *a, const char *key, sdpa_choice *c)
{
    static const cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
    int tried = 0;
    for (int m = 0; m < 2 && !c->plan; m++) {
        cudnnBackendDescriptor_t *cfgs = NULL;
        int64_t n = 0;
        OS_TRY(cu_bk_configs(a->ctx, c->g.graph, modes[m], &cfgs, &n));
        opsched_status st = OPSCHED_OK;
        for (int64_t i = 0; i < n && !c->plan && st == OPSCHED_OK; i++) {
            cudnnBackendDescriptor_t plan = NULL;
            tried++;
            st = cu_bk_plan(a, cfgs[i], key, &plan, NULL);
            if (st == OPSCHED_OK && plan) {
                int64_t ws = 0, got = 0;
                cudnnBackendDescriptor_t eng = NULL;
                if (cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                             CUDNN_TYPE_INT64, 1, &got,
                                             &ws) == CUDNN_STATUS_SUCCESS &&
                    ws >= 0) {
                    c->plan = plan;
                    plan = NULL;
                    c->workspace = (size_t)ws;
                    c->engine = -1;
                    if (cu_bk_new(a->ctx, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) == OPSCHED_OK &&
                        cudnnBackendGetAttribute(cfgs[i], CUDNN_ATTR_ENGINECFG_ENGINE,
                                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                                                 &eng) == CUDNN_STATUS_SUCCESS)
                        (void)cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                                       CUDNN_TYPE_INT64, 1, &got, &c->engine);
                    cu_bk_free(&eng);
                }
            }
            cu_bk_free(&plan);
        }
        cu_bk_configs_free(cfgs, n);
        OS_TRY(st);
    }
    (void)cudaGetLastError();
    if (!c->plan)
        return CU_UNSUPPORTED(a, "cuDNN has no engine for this attention (%d configs tried)",
                              tried);
    return OPSCHED_OK;
}

/* ---- launches -------------------------------------------------------- */

/* The variant packs' ids: the scale (by value, a host pointer) last. */
static const int64_t pack_uids[6] = {UID_Q, UID_K, UID_V, UID_O, UID_BIAS, UID_SCALE};
static const int64_t no_bias[5] = {UID_Q, UID_K, UID_V, UID_O, UID_SCALE};

static opsched_status sdpa_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                  void *const *in, void *const *out)
{
    sdpa_plan *p = (sdpa_plan *)base;
    char *q = (char *)in[0] + p->off[0], *k = (char *)in[1] + p->off[1];
    char *v = (char *)in[2] + p->off[2];
    cudnnBackendDescriptor_t pack = NULL;
    /* the scale, by value, last: the bias (when there is one) before it */
    void *ptrs[6] = {q, k, v, out[0], p->has_bias ? in[3] : &p->scale, &p->scale};
    int n = p->has_bias ? 6 : 5;
    OS_TRY(cu_bk_pack_for(ctx, &p->packs, base->workspace, p->has_bias ? pack_uids : no_bias, ptrs,
                          n, n - 1, "attention", &pack));
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    CUDNN_CHECK(ctx, cudnnBackendExecute(dev->cudnn, p->ch->plan, pack));
    return OPSCHED_OK;
}

static void sdpa_release(cu_plan *base)
{
    sdpa_plan *p = (sdpa_plan *)base;
    cu_bk_packs_free(&p->packs);
    choice_unref(p->ch);
}

/* ---- the measured choice --------------------------------------------- */

static size_t tensor_bytes(const cu_plan_args *a, const opsched_tensor *t)
{
    return (size_t)opsched_shape_numel(&t->shape) * cu_elem_size(a, t);
}

/* The best of SDPA_RUNS runs (after a warm-up) of cuDNN's plan and of the
 * own kernel, on zeroed scratch operands of the node's tensors. */
static opsched_status measure(const cu_plan_args *a, const cuk_attention_desc *d, cuk_dtype t,
                              const size_t off[3], int has_bias, sdpa_choice *c)
{
    void *buf[5] = {NULL, NULL, NULL, NULL, NULL}, *ws = NULL;
    cudaEvent_t ev[2] = {NULL, NULL};
    cudnnBackendDescriptor_t pack = NULL;
    cudaStream_t s = a->dev->stream;
    float scale = d->scale;
    opsched_status st = OPSCHED_OK;
    c->cudnn_ms = c->own_ms = -1.0f;
    for (int x = 0; x < 4 + 1; x++) {
        const opsched_tensor *ot = x == 4 ? cu_out(a, 0) : x == 3 && !has_bias ? NULL : cu_in(a, x);
        if (!ot) continue;
        size_t n = tensor_bytes(a, ot);
        OS_TRY_GOTO(st, cu_malloc(a->ctx, n, &buf[x]), done);
        CUDA_CHECK_GOTO(a->ctx, st, cudaMemset(buf[x], 0, n), done);
    }
    char *q = (char *)buf[0] + off[0], *k = (char *)buf[1] + off[1];
    char *v = (char *)buf[2] + off[2];
    if (c->workspace) OS_TRY_GOTO(st, cu_malloc(a->ctx, c->workspace, &ws), done);
    void *ptrs[6] = {q, k, v, buf[4], has_bias ? buf[3] : &scale, &scale};
    OS_TRY_GOTO(
        st,
        cu_bk_pack_build(a->ctx, ws, has_bias ? pack_uids : no_bias, ptrs, has_bias ? 6 : 5, &pack),
        done);
    CUDA_CHECK_GOTO(a->ctx, st, cudaEventCreate(&ev[0]), done);
    CUDA_CHECK_GOTO(a->ctx, st, cudaEventCreate(&ev[1]), done);
    CUDNN_CHECK_GOTO(a->ctx, st, cudnnSetStream(a->dev->cudnn, s), done);
    for (int who = 0; who < 2; who++) {
        float *best = who == 0 ? &c->cudnn_ms : &c->own_ms;
        for (int r = -1; r < SDPA_RUNS; r++) {
            float ms = 0.0f;
            CUDA_CHECK_GOTO(a->ctx, st, cudaEventRecord(ev[0], s), done);
            if (who == 0) {
                cudnnStatus_t e = cudnnBackendExecute(a->dev->cudnn, c->plan, pack);
                if (e !=
                    CUDNN_STATUS_SUCCESS) { /* an engine that refuses to run: not a candidate */
                    *best = -1.0f;
                    (void)cudaGetLastError();
                    break;
                }
            } else {
                CUDA_CHECK_GOTO(a->ctx, st, cuk_attention(t, d, q, k, v, buf[3], buf[4], s), done);
            }
            CUDA_CHECK_GOTO(a->ctx, st, cudaEventRecord(ev[1], s), done);
            CUDA_CHECK_GOTO(a->ctx, st, cudaEventSynchronize(ev[1]), done);
            CUDA_CHECK_GOTO(a->ctx, st, cudaEventElapsedTime(&ms, ev[0], ev[1]), done);
            if (r >= 0 && (*best < 0.0f || ms < *best)) *best = ms;
        }
    }
done:
    cu_bk_free(&pack);
    for (int i = 0; i < 2; i++)
        if (ev[i]) (void)cudaEventDestroy(ev[i]);
    (void)cudaFree(ws);
    for (int i = 0; i < 5; i++)
        (void)cudaFree(buf[i]);
    (void)cudaGetLastError();
    return st;
}

/* The cache key: everything the graph, the plan and the verdict depend on. */
static int choice_key(const cuk_attention_desc *d, cuk_dtype t, const size_t off[3], int has_bias,
                      char *buf, size_t size)
{
    int w = snprintf(
        buf, size,
        "sdpa dt %d B %lld H %lld Sq %lld Sk %lld D %lld Dv %lld bias %d own tc %d qpw %d "
        "q %lld,%lld,%lld,%lld k %lld,%lld,%lld,%lld v %lld,%lld,%lld,%lld o %lld,%lld,%lld,%lld "
        "b %lld,%lld,%lld,%lld off %zu,%zu,%zu",
        (int)t, (long long)d->B, (long long)d->H, (long long)d->Sq, (long long)d->Sk,
        (long long)d->D, (long long)d->Dv, has_bias, d->tc, d->qpw, (long long)d->q[0],
        (long long)d->q[1], (long long)d->q[2], (long long)d->q[3], (long long)d->k[0],
        (long long)d->k[1], (long long)d->k[2], (long long)d->k[3], (long long)d->v[0],
        (long long)d->v[1], (long long)d->v[2], (long long)d->v[3], (long long)d->o[0],
        (long long)d->o[1], (long long)d->o[2], (long long)d->o[3], (long long)d->bias[0],
        (long long)d->bias[1], (long long)d->bias[2], (long long)d->bias[3], off[0], off[1],
        off[2]);
    return w > 0 && (size_t)w < size;
}

/* Why cuDNN's engines cannot take this attention, or NULL. */
static const char *outside(const cuk_attention_desc *d, cuk_dtype t, const size_t off[3])
{
    if (t != CUK_DT_F16 && t != CUK_DT_BF16) return "not fp16 or bf16";
    if (d->D % 8 || d->Dv % 8 || d->D > 128 || d->Dv > 128)
        return "a head that is not a multiple of 8 up to 128";
    if (d->q[3] != 1 || d->k[3] != 1 || d->v[3] != 1 || d->o[3] != 1)
        return "a head dim that is not contiguous";
    const int64_t *kv[2] = {d->k, d->v};
    for (int i = 0; i < 2; i++)
        if ((d->B > 1 && kv[i][0] == 0) || (d->H > 1 && kv[i][1] == 0))
            return "keys or values shared across batches or heads";
    for (int x = 0; x < 3; x++)
        if (off[x] % CU_BK_ALIGN) return "an operand view that is not 16-byte aligned";
    return NULL;
}

opsched_status cu_sdpa_plan(const cu_plan_args *a, const cuk_attention_desc *d, cuk_dtype t,
                            const size_t off[3], int has_bias, int force, cu_plan **out,
                            const char **why)
{
    *out = NULL;
    *why = outside(d, t, off);
    if (*why && force) return CU_UNSUPPORTED(a, "cudnn: cuDNN's attention takes %s", *why);
    if (*why) return OPSCHED_OK;
    char key[640];
    os_plan_cache *cache = a->dev->sdpa_plans;
    int keyed = cache && choice_key(d, t, off, has_bias, key, sizeof(key));
    sdpa_choice *c = keyed ? os_plan_cache_get(cache, key) : NULL;
    if (keyed) os_plan_cache_count(cache, c != NULL);
    if (c) {
        c->refs++;
    } else {
        c = calloc(1, sizeof(*c));
        if (!c) return OS_NOMEM(a->ctx);
        c->refs = 1;
        c->g.what = "attention";
        cudnnDataType_t dt = t == CUK_DT_F16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
        opsched_status st = build_graph(a, d, dt, has_bias, c);
        if (st == OPSCHED_OK) st = build_plan(a, keyed ? key : NULL, c);
        if (st == OPSCHED_OK) st = measure(a, d, t, off, has_bias, c);
        if (st == OPSCHED_ERR_UNSUPPORTED) {
            /* no engine: remembered as a loss, so it is not built again */
            os_log(a->ctx, OPSCHED_LOG_DEBUG, "cuda: node '%s': cuDNN attention: %s", a->node->name,
                   opsched_ctx_last_error(a->ctx));
            opsched_ctx_clear_error(a->ctx);
            c->wins = -1;
            st = OPSCHED_OK;
        } else if (st != OPSCHED_OK) {
            choice_unref(c);
            return st;
        } else {
            c->wins =
                c->cudnn_ms >= 0.0f && (c->own_ms < 0.0f || c->cudnn_ms <= c->own_ms) ? 1 : -1;
            os_log(a->ctx, OPSCHED_LOG_DEBUG,
                   "cuda: node '%s': attention: cuDNN (engine %lld) %.4f ms, own kernel %.4f ms",
                   a->node->name, (long long)c->engine, (double)c->cudnn_ms, (double)c->own_ms);
        }
        if (keyed) {
            c->refs++; /* the cache's */
            if (os_plan_cache_put(cache, key, c) != 0) c->refs--;
        }
    }
    if (force && !c->plan) {
        choice_unref(c);
        return CU_UNSUPPORTED(a, "cudnn: cuDNN has no engine for this attention "
                                 "(OPSCHED_LOG=debug says why)");
    }
    if (c->wins < 0 && !force) {
        *why = c->plan ? "cuDNN's engine measured slower than the own kernel"
                       : "cuDNN has no engine for it";
        choice_unref(c);
        return OPSCHED_OK;
    }
    cu_plan *base = NULL;
    opsched_status st = cu_plan_alloc(a, sizeof(sdpa_plan), sdpa_launch, sdpa_release, &base);
    if (st != OPSCHED_OK) {
        choice_unref(c);
        return st;
    }
    sdpa_plan *p = (sdpa_plan *)base;
    p->ch = c;
    memcpy(p->off, off, sizeof(p->off));
    p->has_bias = has_bias;
    p->scale = d->scale;
    base->workspace_bytes = c->workspace;
    if (c->workspace) {
        st = cu_malloc(a->ctx, c->workspace, &base->workspace);
        if (st != OPSCHED_OK) {
            cu_plan_destroy(base);
            return st;
        }
    }
    snprintf(a->info->algo, sizeof(a->info->algo), "cudnn_sdpa:eng%lld", (long long)c->engine);
    *out = base;
    return OPSCHED_OK;
}
