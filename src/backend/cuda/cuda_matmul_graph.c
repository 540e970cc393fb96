/*
 * cuda_matmul_graph.c - a product, its bias and an activation cuBLASLt's
 * epilogue lacks (the exact GELU of ConvNeXt's, ViT's and BERT's MLPs;
 * SiLU, Sigmoid, Tanh...) as one operation graph of cuDNN's graph API:
 *
 *     C = A B             (float, virtual)
 *     Z = C + bias        (float, virtual)
 *     Y = act(Z)          (the output's type)
 *
 * act is one pointwise mode of cuDNN's where it has one, else, for the two
 * it lacks that MobileNetV3 uses, a short chain with two scalars passed by
 * value: HardSigmoid clip(alpha Z + beta, 0, 1) as MUL, ADD and RELU_FWD
 * clipped to [0, 1]; HardSwish Z clip(Z / 6 + 1/2, 0, 1), the same and a
 * MUL by Z.
 *
 * for which cuDNN's heuristics propose engines (runtime-fusion ones, as a
 * rule) that write the finished output, so the activation's pass over the
 * product's output (the widest tensor of an MLP) goes away.  PyTorch's
 * compiler runs such layers as cuBLAS's product and one Triton kernel for
 * the bias and the activation.
 *
 * Which runs is measured, once per configuration: up to MM_HEUR_A of
 * heuristics mode A's engines and mode B's first (those the math mode
 * allows, cu_bk_engine_info), and the fastest of them against cuBLASLt's
 * product with its bias epilogue followed by the activation's kernel, the
 * way the executor deploys either (cu_time_reps, on zeroed scratch
 * operands).  The verdict lives in the device's cache.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"
#include "backend/plan_cache.h"

#define MM_HEUR_A 3   /* mode A's engines timed */
#define MM_MAX_CAND 4 /* and mode B's first */

enum {
    UID_A = 1,
    UID_B,
    UID_Y,
    UID_BIAS,
    UID_S0,
    UID_S1,
    UID_C = 100,
    UID_Z,
    UID_T0,
    UID_T1,
    UID_T2
};

/* The activation as the graph computes it: one pointwise mode (pw), or
 * (chain) scale, offset and a clip to [0, 1], times Z with times_z. */
typedef struct mm_act {
    cu_bk_pw pw;
    int chain, times_z;
    float scale, offset;
    const char *name;
} mm_act;

/* The graph's form of act; 0 when it has none. */
static int mm_act_of(const cu_act *act, mm_act *m)
{
    memset(m, 0, sizeof(*m));
    if (!act->on) return 0;
    if (cu_bk_act_mode(act, &m->pw)) {
        m->name = m->pw.name;
        return 1;
    }
    if (act->fn == CUK_U_HARDSIGMOID || act->fn == CUK_U_HARDSWISH) {
        int swish = act->fn == CUK_U_HARDSWISH;
        m->chain = 1;
        m->times_z = swish;
        m->scale = swish ? 1.0f / 6.0f : act->prm.alpha;
        m->offset = swish ? 0.5f : act->prm.beta;
        m->name = swish ? "hardswish" : "hardsigmoid";
        if (!isfinite(m->scale) || !isfinite(m->offset)) return 0;
        return 1;
    }
    return 0;
}

struct cu_mm_choice {
    int refs;
    cu_bk_graph g;
    cudnnBackendDescriptor_t plan;
    int64_t engine;
    size_t workspace;
    int wins;                 /* 1: the graph measured faster; -1: not, or no engine runs it */
    float graph_ms, apart_ms; /* what the verdict measured */
    char act_name[16];
    int n_scalars; /* a chain's: its scale and offset, passed by value */
    float scalars[2];
};

static void choice_unref(cu_mm_choice *c)
{
    if (!c || --c->refs > 0) return;
    cu_bk_free(&c->plan);
    cu_bk_graph_free(&c->g);
    free(c);
}

void cu_mm_choice_release(void *choice)
{
    choice_unref(choice);
}

void cu_mm_choice_unref(cu_mm_choice *c)
{
    choice_unref(c);
}

static opsched_status build_graph(const cu_plan_args *a, const cu_mm_desc *d, const mm_act *act,
                                  cu_mm_choice *c)
{
    cudnnDataType_t dt = cu_cudnn_type(a->dt), f32 = CUDNN_DATA_FLOAT;
    const int64_t m = d->m, n = d->n, k = d->k;
    const int64_t ad[3] = {1, m, k}, as[3] = {m * k, k, 1};
    const int64_t bd[3] = {1, k, n};
    const int64_t bs[3] = {k * n, d->b_trans ? 1 : n, d->b_trans ? k : 1};
    const int64_t yd[3] = {1, m, n}, ys[3] = {m * n, n, 1};
    const int64_t vd[3] = {1, 1, n}, vs[3] = {n, n, 1};
    cudnnBackendDescriptor_t A, B, Y, bias, C, Z;
    OS_TRY(cu_bk_tensor(a, &c->g, UID_A, dt, 3, ad, as, 0, 0, &A));
    OS_TRY(cu_bk_tensor(a, &c->g, UID_B, dt, 3, bd, bs, 0, 0, &B));
    OS_TRY(cu_bk_tensor(a, &c->g, UID_Y, dt, 3, yd, ys, 0, 0, &Y));
    OS_TRY(cu_bk_tensor(a, &c->g, UID_BIAS, dt, 3, vd, vs, 0, 0, &bias));
    OS_TRY(cu_bk_tensor(a, &c->g, UID_C, f32, 3, yd, ys, 1, 0, &C));
    OS_TRY(cu_bk_tensor(a, &c->g, UID_Z, f32, 3, yd, ys, 1, 0, &Z));
    static const cu_bk_pw add = {.mode = CUDNN_POINTWISE_ADD, .name = "bias"};
    OS_TRY(cu_bk_matmul(a, &c->g, A, B, C));
    OS_TRY(cu_bk_pointwise(a, &c->g, &add, C, bias, Z));
    if (!act->chain) {
        OS_TRY(cu_bk_pointwise(a, &c->g, &act->pw, Z, NULL, Y));
        return cu_bk_graph_finish(a, &c->g);
    }
    /* scale, offset, clip to [0, 1] (and times Z) */
    static const cu_bk_pw mul = {.mode = CUDNN_POINTWISE_MUL, .name = "mul"};
    static const cu_bk_pw clip = {.mode = CUDNN_POINTWISE_RELU_FWD,
                                  .relu_family = 1,
                                  .lower = 0.0,
                                  .upper = 1.0,
                                  .name = "clip"};
    const int64_t one[3] = {1, 1, 1};
    cudnnBackendDescriptor_t s0, s1, t0, t1, t2;
    OS_TRY(cu_bk_tensor(a, &c->g, UID_S0, f32, 3, one, one, 0, 1, &s0));
    OS_TRY(cu_bk_tensor(a, &c->g, UID_S1, f32, 3, one, one, 0, 1, &s1));
    OS_TRY(cu_bk_tensor(a, &c->g, UID_T0, f32, 3, yd, ys, 1, 0, &t0));
    OS_TRY(cu_bk_tensor(a, &c->g, UID_T1, f32, 3, yd, ys, 1, 0, &t1));
    OS_TRY(cu_bk_pointwise(a, &c->g, &mul, Z, s0, t0));
    OS_TRY(cu_bk_pointwise(a, &c->g, &add, t0, s1, t1));
    if (act->times_z) {
        OS_TRY(cu_bk_tensor(a, &c->g, UID_T2, f32, 3, yd, ys, 1, 0, &t2));
        OS_TRY(cu_bk_pointwise(a, &c->g, &clip, t1, NULL, t2));
        OS_TRY(cu_bk_pointwise(a, &c->g, &mul, Z, t2, Y));
    } else {
        OS_TRY(cu_bk_pointwise(a, &c->g, &clip, t1, NULL, Y));
    }
    c->n_scalars = 2;
    c->scalars[0] = act->scale;
    c->scalars[1] = act->offset;
    return cu_bk_graph_finish(a, &c->g);
}

/* An execution plan of cfg within `limit` bytes of workspace, or none
 * (*plan NULL) when the engine turns the graph down or wants more; key
 * names the graph for the plan store (NULL: none). */
static opsched_status plan_of(const cu_plan_args *a, cudnnBackendDescriptor_t cfg, size_t limit,
                              const char *key, cudnnBackendDescriptor_t *plan, size_t *ws)
{
    int64_t w = 0, got = 0;
    OS_TRY(cu_bk_plan(a, cfg, key, plan, NULL));
    if (*plan && (cudnnBackendGetAttribute(*plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                           CUDNN_TYPE_INT64, 1, &got, &w) != CUDNN_STATUS_SUCCESS ||
                  w < 0 || (uint64_t)w > limit)) {
        (void)cudaGetLastError();
        cu_bk_free(plan);
    }
    if (*plan) *ws = (size_t)w;
    return OPSCHED_OK;
}

/* Scratch operands of a verdict, zeroed. */
typedef struct mm_scratch {
    void *A, *B, *bias, *Y, *ws;
} mm_scratch;

static void scratch_free(mm_scratch *s)
{
    void *p[5] = {s->A, s->B, s->bias, s->Y, s->ws};
    for (int i = 0; i < 5; i++)
        (void)cudaFree(p[i]);
    (void)cudaGetLastError();
    memset(s, 0, sizeof(*s));
}

static opsched_status scratch_alloc(const cu_plan_args *a, const cu_mm_desc *d, size_t ws,
                                    mm_scratch *s)
{
    size_t e = opsched_dtype_size(a->dt);
    opsched_status st = OPSCHED_OK;
    memset(s, 0, sizeof(*s));
    OS_TRY_GOTO(st, cu_zeroed(a, (size_t)d->m * (size_t)d->k * e, &s->A), fail);
    OS_TRY_GOTO(st, cu_zeroed(a, (size_t)d->k * (size_t)d->n * e, &s->B), fail);
    OS_TRY_GOTO(st, cu_zeroed(a, (size_t)d->n * e, &s->bias), fail);
    OS_TRY_GOTO(st, cu_zeroed(a, (size_t)d->m * (size_t)d->n * e, &s->Y), fail);
    if (ws) OS_TRY_GOTO(st, cu_malloc(a->ctx, ws, &s->ws), fail);
    return OPSCHED_OK;
fail:
    scratch_free(s);
    return st;
}

typedef struct mm_run {
    const cu_mm_desc *d;
    cudnnBackendDescriptor_t plan, pack; /* the graph's */
    cu_lt_gemm *lt;                      /* or cuBLASLt's product and the activation's kernel */
    mm_scratch *s;
} mm_run;

static opsched_status enqueue_run(const cu_plan_args *a, void *env, cudaStream_t s)
{
    mm_run *r = env;
    if (r->plan) {
        CUDNN_CHECK(a->ctx, cudnnSetStream(a->dev->cudnn, s));
        CUDNN_CHECK(a->ctx, cudnnBackendExecute(a->dev->cudnn, r->plan, r->pack));
        return OPSCHED_OK;
    }
    OS_TRY(cu_lt_gemm_run(a->ctx, a->dev, r->lt, s, r->s->B, r->s->A, r->s->bias, NULL, r->s->Y));
    CUDA_CHECK(a->ctx,
               cuk_ew_unary(r->d->act.fn, &r->d->act.prm, (cuk_dtype)r->d->kt, (cuk_dtype)r->d->kt,
                            (int64_t)r->d->m * r->d->n, r->s->Y, r->s->Y, s));
    return OPSCHED_OK;
}

static const int64_t pack_uids[6] = {UID_A, UID_B, UID_Y, UID_BIAS, UID_S0, UID_S1};

/* Times plan (workspace ws) on zeroed operands; *ms < 0 when it does not
 * run. */
static opsched_status time_plan(const cu_plan_args *a, const cu_mm_desc *d, cu_mm_choice *c,
                                cudnnBackendDescriptor_t plan, size_t ws, float *ms)
{
    mm_scratch s;
    cudnnBackendDescriptor_t pack = NULL;
    opsched_status st = OPSCHED_OK;
    *ms = -1.0f;
    OS_TRY(scratch_alloc(a, d, ws, &s));
    void *ptrs[6] = {s.A, s.B, s.Y, s.bias, &c->scalars[0], &c->scalars[1]};
    OS_TRY_GOTO(st, cu_bk_pack_build(a->ctx, s.ws, pack_uids, ptrs, 4 + c->n_scalars, &pack), done);
    mm_run r = {.d = d, .plan = plan, .pack = pack, .s = &s};
    st = cu_time_reps(a, enqueue_run, &r, ms);
    if (st != OPSCHED_OK) { /* an engine that does not run here: not a candidate */
        os_log(a->ctx, OPSCHED_LOG_DEBUG, "cuda: node '%s': a product's graph did not run: %s",
               a->node->name, opsched_ctx_last_error(a->ctx));
        opsched_ctx_clear_error(a->ctx);
        (void)cudaGetLastError();
        *ms = -1.0f;
        st = OPSCHED_OK;
        CUDA_CHECK_GOTO(a->ctx, st, cudaStreamSynchronize(a->dev->stream), done);
    }
done:
    cu_bk_free(&pack);
    scratch_free(&s);
    return st;
}

/* Builds c's graph and keeps the fastest execution plan of its candidates
 * in c (none: c->plan stays NULL). */
static opsched_status choose(const cu_plan_args *a, const cu_mm_desc *d, const mm_act *act,
                             size_t limit, const char *key, cu_mm_choice *c)
{
    static const cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B};
    static const int quota[2] = {MM_HEUR_A, 1};
    int64_t seen[MM_MAX_CAND];
    int n_seen = 0;
    OS_TRY(build_graph(a, d, act, c));
    for (int m = 0; m < 2; m++) {
        cudnnBackendDescriptor_t *cfgs = NULL;
        int64_t n = 0;
        int taken = 0;
        OS_TRY(cu_bk_configs(a->ctx, c->g.graph, modes[m], &cfgs, &n));
        opsched_status st = OPSCHED_OK;
        for (int64_t i = 0; i < n && taken < quota[m] && n_seen < MM_MAX_CAND && st == OPSCHED_OK;
             i++) {
            int64_t engine = -1;
            int allowed = 0, dup = 0;
            st = cu_bk_engine_info(a, cfgs[i], &engine, &allowed);
            for (int j = 0; j < n_seen; j++)
                dup |= seen[j] == engine;
            if (st != OPSCHED_OK || !allowed || dup) continue;
            cudnnBackendDescriptor_t plan = NULL;
            size_t ws = 0;
            float ms = -1.0f;
            st = plan_of(a, cfgs[i], limit, key, &plan, &ws);
            if (st != OPSCHED_OK || !plan) continue;
            seen[n_seen++] = engine;
            taken++;
            st = time_plan(a, d, c, plan, ws, &ms);
            os_log(a->ctx, OPSCHED_LOG_DEBUG,
                   "cuda: node '%s': product %dx%dx%d with bias and %s as cuDNN's graph, "
                   "engine %lld: %.4f ms",
                   a->node->name, d->m, d->n, d->k, act->name, (long long)engine, (double)ms);
            if (st == OPSCHED_OK && ms >= 0.0f && (!c->plan || ms < c->graph_ms)) {
                cu_bk_free(&c->plan);
                c->plan = plan;
                plan = NULL;
                c->engine = engine;
                c->workspace = ws;
                c->graph_ms = ms;
            }
            cu_bk_free(&plan);
        }
        cu_bk_configs_free(cfgs, n);
        OS_TRY(st);
    }
    return OPSCHED_OK;
}

/* The time of cuBLASLt's product (lt) and the activation's kernel. */
static opsched_status time_apart(const cu_plan_args *a, const cu_mm_desc *d, cu_lt_gemm *lt,
                                 float *ms)
{
    mm_scratch s;
    OS_TRY(scratch_alloc(a, d, 0, &s));
    mm_run r = {.d = d, .lt = lt, .s = &s};
    opsched_status st = cu_time_reps(a, enqueue_run, &r, ms);
    scratch_free(&s);
    return st;
}

static int choice_key(const cu_plan_args *a, const cu_mm_desc *d, const mm_act *act, size_t limit,
                      char *buf, size_t size)
{
    int w = snprintf(buf, size,
                     "mm-graph kt %d dtype %s math %s m %d n %d k %d bt %d act %s %.9g %.9g "
                     "%.9g %.9g %.9g %.9g limit %zu",
                     (int)d->kt, opsched_dtype_name(a->dt), opsched_math_name(a->opts->math), d->m,
                     d->n, d->k, d->b_trans, act->name, act->pw.lower, act->pw.upper, act->pw.slope,
                     act->pw.param, (double)act->scale, (double)act->offset, limit);
    return w > 0 && (size_t)w < size;
}

opsched_status cu_mm_graph_plan(const cu_plan_args *a, const cu_mm_desc *d, cu_lt_gemm *lt,
                                size_t limit, int force, cu_mm_choice **out)
{
    mm_act act;
    *out = NULL;
    if (!mm_act_of(&d->act, &act)) {
        if (force)
            return CU_UNSUPPORTED(a, "cudnn: the product's activation has no form in cuDNN's "
                                     "graph API (a pointwise mode, or HardSigmoid and HardSwish "
                                     "as a chain of them)");
        return OPSCHED_OK;
    }
    char key[256];
    os_plan_cache *cache = a->dev->mm_plans;
    int keyed = cache && choice_key(a, d, &act, limit, key, sizeof(key));
    cu_mm_choice *c = keyed ? os_plan_cache_get(cache, key) : NULL;
    if (keyed) os_plan_cache_count(cache, c != NULL);
    if (c) {
        c->refs++;
    } else {
        c = calloc(1, sizeof(*c));
        if (!c) return OS_NOMEM(a->ctx);
        c->refs = 1;
        c->g.what = "product";
        c->graph_ms = c->apart_ms = -1.0f;
        snprintf(c->act_name, sizeof(c->act_name), "%s", act.name);
        opsched_status st = choose(a, d, &act, limit, keyed ? key : NULL, c);
        /* The graph is an option of the plan, not the plan: where cuDNN's
         * descriptors turn it down with an error of their own (not a
         * failed launch: the device has no error pending) and nothing
         * forces it, the product stays cuBLASLt's. */
        if (st == OPSCHED_ERR_BACKEND && !force && cudaPeekAtLastError() == cudaSuccess)
            st = OPSCHED_ERR_UNSUPPORTED;
        if (st == OPSCHED_OK && c->plan && lt) st = time_apart(a, d, lt, &c->apart_ms);
        if (st == OPSCHED_ERR_UNSUPPORTED) {
            os_log(a->ctx, OPSCHED_LOG_DEBUG, "cuda: node '%s': a product's graph: %s",
                   a->node->name, opsched_ctx_last_error(a->ctx));
            opsched_ctx_clear_error(a->ctx);
            cu_bk_free(&c->plan);
            st = OPSCHED_OK;
        }
        if (st != OPSCHED_OK) {
            choice_unref(c);
            return st;
        }
        c->wins =
            c->plan && c->graph_ms >= 0.0f && (c->apart_ms < 0.0f || c->graph_ms < c->apart_ms)
                ? 1
                : -1;
        os_log(a->ctx, OPSCHED_LOG_DEBUG,
               "cuda: node '%s': product %dx%dx%d with bias and %s: cuDNN's graph (engine %lld) "
               "%.4f ms, cuBLASLt and the activation's kernel %.4f ms",
               a->node->name, d->m, d->n, d->k, act.name, (long long)c->engine, (double)c->graph_ms,
               (double)c->apart_ms);
        if (keyed) {
            c->refs++; /* the cache's */
            if (os_plan_cache_put(cache, key, c) != 0) c->refs--;
        }
    }
    if (!c->plan || (c->wins < 0 && !force)) {
        int none = !c->plan;
        choice_unref(c);
        if (force && none)
            return CU_UNSUPPORTED(a, "cudnn: no engine of cuDNN's runs this product with its "
                                     "bias and activation (OPSCHED_LOG=debug says why)");
        return OPSCHED_OK;
    }
    *out = c;
    return OPSCHED_OK;
}

int cu_mm_graph_act_ok(const cu_act *act)
{
    mm_act m;
    return mm_act_of(act, &m);
}

size_t cu_mm_graph_workspace(const cu_mm_choice *c)
{
    return c->workspace;
}

void cu_mm_graph_describe(const cu_mm_choice *c, char *buf, size_t size)
{
    snprintf(buf, size, "cudnn_matmul_bias_%s:eng%lld", c->act_name, (long long)c->engine);
}

opsched_status cu_mm_graph_run(opsched_ctx *ctx, cu_device *dev, const cu_mm_choice *c,
                               cu_bk_packs *packs, void *ws, cudaStream_t s, const void *A,
                               const void *B, const void *bias, void *Y)
{
    cudnnBackendDescriptor_t pack = NULL;
    void *ptrs[6] = {
        (void *)A, (void *)B, Y, (void *)bias, (void *)&c->scalars[0], (void *)&c->scalars[1]};
    OS_TRY(cu_bk_pack_for(ctx, packs, ws, pack_uids, ptrs, 4 + c->n_scalars, 4, "product", &pack));
    CUDNN_CHECK(ctx, cudnnSetStream(dev->cudnn, s));
    CUDNN_CHECK(ctx, cudnnBackendExecute(dev->cudnn, c->plan, pack));
    return OPSCHED_OK;
}
