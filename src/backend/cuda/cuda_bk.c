/*
 * cuda_bk.c - what every user of cuDNN's graph ("backend") API needs:
 * descriptors made and freed, operation graphs built from tensors,
 * matmul, pointwise and reduction operations, the engine configs a
 * heuristics mode proposes for a graph and whether the math mode allows
 * their engines, and variant packs (the tensors' ids bound to pointers)
 * kept per pointer set (cuda_conv_graph.c, cuda_sdpa.c,
 * cuda_matmul_graph.c).
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_impl.h"

void cu_bk_free(cudnnBackendDescriptor_t *d)
{
    if (*d) (void)cudnnBackendDestroyDescriptor(*d);
    *d = NULL;
}

opsched_status cu_bk_new(opsched_ctx *ctx, cudnnBackendDescriptorType_t type,
                         cudnnBackendDescriptor_t *d)
{
    *d = NULL;
    CUDNN_CHECK(ctx, cudnnBackendCreateDescriptor(type, d));
    return OPSCHED_OK;
}

void cu_bk_configs_free(cudnnBackendDescriptor_t *cfgs, int64_t n)
{
    for (int64_t i = 0; cfgs && i < n; i++)
        cu_bk_free(&cfgs[i]);
    free(cfgs);
}

opsched_status cu_bk_configs(opsched_ctx *ctx, cudnnBackendDescriptor_t graph,
                             cudnnBackendHeurMode_t mode, cudnnBackendDescriptor_t **cfgs,
                             int64_t *n)
{
    cudnnBackendDescriptor_t heur = NULL, *list = NULL;
    int64_t count = 0, got = 0;
    opsched_status st = OPSCHED_OK;
    *cfgs = NULL;
    *n = 0;
    OS_TRY(cu_bk_new(ctx, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
    CUDNN_CHECK_GOTO(ctx, st,
                     cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph),
                     done);
    CUDNN_CHECK_GOTO(
        ctx, st,
        cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode),
        done);
    cudnnStatus_t e = cudnnBackendFinalize(heur);
    if (e != CUDNN_STATUS_SUCCESS) {
        if (CUDNN_STATUS_CATEGORY(e) != CUDNN_STATUS_NOT_SUPPORTED)
            st = cu_fail_cudnn(ctx, e, "cudnnBackendFinalize(engine heuristics)", __FILE__,
                               __LINE__);
        goto done;
    }
    CUDNN_CHECK_GOTO(ctx, st,
                     cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL),
                     done);
    if (count <= 0) goto done;
    list = calloc((size_t)count, sizeof(*list));
    if (!list) {
        st = OS_NOMEM(ctx);
        goto done;
    }
    for (int64_t i = 0; i < count; i++)
        OS_TRY_GOTO(st, cu_bk_new(ctx, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &list[i]), done);
    CUDNN_CHECK_GOTO(ctx, st,
                     cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, list),
                     done);
done:
    cu_bk_free(&heur);
    if (st != OPSCHED_OK) {
        cu_bk_configs_free(list, count);
        return st;
    }
    if (got > count) got = count;
    for (int64_t i = got; i < count; i++) /* created but not filled */
        cu_bk_free(&list[i]);
    *cfgs = list;
    *n = got;
    return OPSCHED_OK;
}

opsched_status cu_bk_pack_build(opsched_ctx *ctx, void *ws, const int64_t *uids, void *const *ptrs,
                                int n, cudnnBackendDescriptor_t *out)
{
    OS_TRY(cu_bk_new(ctx, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, out));
    opsched_status st = OPSCHED_OK;
    CUDNN_CHECK_GOTO(ctx, st,
                     cudnnBackendSetAttribute(*out, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                              CUDNN_TYPE_INT64, n, uids),
                     fail);
    CUDNN_CHECK_GOTO(ctx, st,
                     cudnnBackendSetAttribute(*out, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                              CUDNN_TYPE_VOID_PTR, n, ptrs),
                     fail);
    CUDNN_CHECK_GOTO(ctx, st,
                     cudnnBackendSetAttribute(*out, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                              CUDNN_TYPE_VOID_PTR, 1, &ws),
                     fail);
    CUDNN_CHECK_GOTO(ctx, st, cudnnBackendFinalize(*out), fail);
    return OPSCHED_OK;
fail:
    cu_bk_free(out);
    return st;
}

opsched_status cu_bk_pack_for(opsched_ctx *ctx, cu_bk_packs *c, void *ws, const int64_t *uids,
                              void *const *ptrs, int n, int n_device, const char *what,
                              cudnnBackendDescriptor_t *out)
{
    if (n > CU_BK_PACK_PTRS)
        return OS_FAIL(ctx, OPSCHED_ERR_BACKEND, "cuda: %s: %d pointers in a variant pack", what,
                       n);
    for (int i = 0; i < CU_BK_PACKS; i++) {
        const cu_bk_pack *s = &c->slot[i];
        if (s->pack && s->n == n && memcmp(s->ptrs, ptrs, sizeof(void *) * (size_t)n) == 0) {
            *out = s->pack;
            return OPSCHED_OK;
        }
    }
    for (int i = 0; i < n_device; i++)
        if ((uintptr_t)ptrs[i] % CU_BK_ALIGN)
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "cuda: %s (cuDNN graph API) given buffer %d at %p, which is not "
                           "%d-byte aligned",
                           what, i, ptrs[i], CU_BK_ALIGN);
    cu_bk_pack *s = &c->slot[c->next];
    cu_bk_free(&s->pack);
    OS_TRY(cu_bk_pack_build(ctx, ws, uids, ptrs, n, &s->pack));
    memcpy(s->ptrs, ptrs, sizeof(void *) * (size_t)n);
    s->n = n;
    c->next = (c->next + 1) % CU_BK_PACKS;
    *out = s->pack;
    return OPSCHED_OK;
}

void cu_bk_packs_free(cu_bk_packs *c)
{
    for (int i = 0; i < CU_BK_PACKS; i++)
        cu_bk_free(&c->slot[i].pack);
}

/* ---- operation graphs ------------------------------------------------ */

void cu_bk_graph_free(cu_bk_graph *g)
{
    cu_bk_free(&g->graph);
    for (int i = 0; i < g->n_ops; i++) {
        cu_bk_free(&g->ops[i]);
        cu_bk_free(&g->how[i]);
    }
    for (int i = 0; i < g->n_t; i++)
        cu_bk_free(&g->t[i]);
    g->n_ops = g->n_t = 0;
}

opsched_status cu_bk_finalize(const cu_plan_args *a, cudnnBackendDescriptor_t d, const char *graph,
                              const char *what)
{
    cudnnStatus_t e = cudnnBackendFinalize(d);
    if (e == CUDNN_STATUS_SUCCESS) return OPSCHED_OK;
    if (CUDNN_STATUS_CATEGORY(e) != CUDNN_STATUS_NOT_SUPPORTED &&
        CUDNN_STATUS_CATEGORY(e) != CUDNN_STATUS_BAD_PARAM)
        return cu_fail_cudnn(a->ctx, e, what, __FILE__, __LINE__);
    char why[256] = "";
    cudnnGetLastErrorString(why, sizeof(why));
    return CU_UNSUPPORTED(a, "cuDNN's graph API cannot build the %s's %s: %s%s%s", graph, what,
                          cudnnGetErrorString(e), why[0] ? ": " : "", why);
}

opsched_status cu_bk_tensor(const cu_plan_args *a, cu_bk_graph *g, int64_t uid, cudnnDataType_t dt,
                            int nd, const int64_t *dims, const int64_t *strides, int is_virtual,
                            int by_value, cudnnBackendDescriptor_t *out)
{
    int64_t align = CU_BK_ALIGN;
    bool virt = is_virtual != 0, val = by_value != 0;
    if (g->n_t >= CU_BK_GRAPH_T)
        return OS_FAIL(a->ctx, OPSCHED_ERR_BACKEND, "cuda: %s graph: too many tensors", g->what);
    cudnnBackendDescriptor_t *d = &g->t[g->n_t++];
    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_TENSOR_DESCRIPTOR, d));
    CU_BK_SET(a->ctx, *d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    CU_BK_SET(a->ctx, *d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nd, dims);
    CU_BK_SET(a->ctx, *d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nd, strides);
    CU_BK_SET(a->ctx, *d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    CU_BK_SET(a->ctx, *d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    if (virt) CU_BK_SET(a->ctx, *d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
    if (val) CU_BK_SET(a->ctx, *d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &val);
    OS_TRY(cu_bk_finalize(a, *d, g->what, "tensor descriptor"));
    *out = *d;
    return OPSCHED_OK;
}

/* The next free operation slot of g. */
static opsched_status op_slot(const cu_plan_args *a, cu_bk_graph *g, int *i)
{
    if (g->n_ops >= CU_BK_GRAPH_OPS)
        return OS_FAIL(a->ctx, OPSCHED_ERR_BACKEND, "cuda: %s graph: too many operations", g->what);
    *i = g->n_ops++;
    return OPSCHED_OK;
}

opsched_status cu_bk_matmul(const cu_plan_args *a, cu_bk_graph *g, cudnnBackendDescriptor_t x,
                            cudnnBackendDescriptor_t w, cudnnBackendDescriptor_t y)
{
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    int i = 0;
    OS_TRY(op_slot(a, g, &i));
    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_MATMUL_DESCRIPTOR, &g->how[i]));
    CU_BK_SET(a->ctx, g->how[i], CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    OS_TRY(cu_bk_finalize(a, g->how[i], g->what, "matmul descriptor"));
    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, &g->ops[i]));
    CU_BK_SET(a->ctx, g->ops[i], CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
              1, &x);
    CU_BK_SET(a->ctx, g->ops[i], CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
              1, &w);
    CU_BK_SET(a->ctx, g->ops[i], CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
              1, &y);
    CU_BK_SET(a->ctx, g->ops[i], CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
              &g->how[i]);
    return cu_bk_finalize(a, g->ops[i], g->what, "matmul operation");
}

int cu_bk_act_mode(const cu_act *act, cu_bk_pw *m)
{
    /* the modes without constants */
    static const struct {
        cuk_ufn fn;
        cudnnPointwiseMode_t mode;
        const char *name;
    } plain[] = {{CUK_U_SIGMOID, CUDNN_POINTWISE_SIGMOID_FWD, "sigmoid"},
                 {CUK_U_TANH, CUDNN_POINTWISE_TANH_FWD, "tanh"},
                 {CUK_U_GELU_ERF, CUDNN_POINTWISE_GELU_FWD, "gelu"},
                 {CUK_U_GELU_TANH, CUDNN_POINTWISE_GELU_APPROX_TANH_FWD, "gelu_tanh"}};
    /* and those with one: the activation's alpha, or softplus's beta of 1 */
    static const struct {
        cuk_ufn fn;
        cudnnPointwiseMode_t mode;
        cudnnBackendAttributeName_t param;
        int alpha;
        const char *name;
    } one[] = {
        {CUK_U_SWISH, CUDNN_POINTWISE_SWISH_FWD, CUDNN_ATTR_POINTWISE_SWISH_BETA, 1, "swish"},
        {CUK_U_ELU, CUDNN_POINTWISE_ELU_FWD, CUDNN_ATTR_POINTWISE_ELU_ALPHA, 1, "elu"},
        {CUK_U_SOFTPLUS, CUDNN_POINTWISE_SOFTPLUS_FWD, CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA, 0,
         "softplus"}};
    memset(m, 0, sizeof(*m));
    m->upper = FLT_MAX;
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
        if (plain[i].fn == act->fn) {
            m->mode = plain[i].mode;
            m->name = plain[i].name;
            return 1;
        }
    for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++)
        if (one[i].fn == act->fn) {
            m->mode = one[i].mode;
            m->param_name = one[i].param;
            m->param = one[i].alpha ? act->prm.alpha : 1.0;
            m->name = one[i].name;
            return 1;
        }
    switch (act->fn) {
    case CUK_U_RELU:
        m->mode = CUDNN_POINTWISE_RELU_FWD;
        m->relu_family = 1;
        m->name = "relu";
        return 1;
    case CUK_U_CLIP:
        if (!isfinite(act->prm.alpha) || !isfinite(act->prm.beta) ||
            !(act->prm.alpha < act->prm.beta))
            return 0;
        m->mode = CUDNN_POINTWISE_RELU_FWD;
        m->relu_family = 1;
        m->lower = act->prm.alpha;
        m->upper = act->prm.beta;
        m->name = "clip";
        return 1;
    case CUK_U_LEAKY_RELU:
        m->mode = CUDNN_POINTWISE_RELU_FWD;
        m->relu_family = 1;
        m->slope = act->prm.alpha;
        m->name = "leakyrelu";
        return 1;
    default:
        return 0;
    }
}

opsched_status cu_bk_pw_op(const cu_plan_args *a, const char *graph, const cu_bk_pw *m,
                           cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                           cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t *pw,
                           cudnnBackendDescriptor_t *op)
{
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, pw));
    CU_BK_SET(a->ctx, *pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &m->mode);
    CU_BK_SET(a->ctx, *pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (m->relu_family) {
        CU_BK_SET(a->ctx, *pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_DOUBLE, 1,
                  &m->lower);
        CU_BK_SET(a->ctx, *pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE, 1,
                  &m->upper);
        CU_BK_SET(a->ctx, *pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, CUDNN_TYPE_DOUBLE, 1,
                  &m->slope);
    }
    if (m->param_name) CU_BK_SET(a->ctx, *pw, m->param_name, CUDNN_TYPE_DOUBLE, 1, &m->param);
    OS_TRY(cu_bk_finalize(a, *pw, graph, "pointwise descriptor"));
    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op));
    CU_BK_SET(a->ctx, *op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, pw);
    CU_BK_SET(a->ctx, *op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
              &x);
    if (b)
        CU_BK_SET(a->ctx, *op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                  1, &b);
    CU_BK_SET(a->ctx, *op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
              &y);
    return cu_bk_finalize(a, *op, graph, "pointwise operation");
}

opsched_status cu_bk_pointwise(const cu_plan_args *a, cu_bk_graph *g, const cu_bk_pw *m,
                               cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                               cudnnBackendDescriptor_t y)
{
    int i = 0;
    OS_TRY(op_slot(a, g, &i));
    return cu_bk_pw_op(a, g->what, m, x, b, y, &g->how[i], &g->ops[i]);
}

opsched_status cu_bk_reduction(const cu_plan_args *a, cu_bk_graph *g, cudnnReduceTensorOp_t mode,
                               cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y)
{
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    int i = 0;
    OS_TRY(op_slot(a, g, &i));
    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, &g->how[i]));
    CU_BK_SET(a->ctx, g->how[i], CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE,
              1, &mode);
    CU_BK_SET(a->ctx, g->how[i], CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    OS_TRY(cu_bk_finalize(a, g->how[i], g->what, "reduction descriptor"));
    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, &g->ops[i]));
    CU_BK_SET(a->ctx, g->ops[i], CUDNN_ATTR_OPERATION_REDUCTION_XDESC,
              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    CU_BK_SET(a->ctx, g->ops[i], CUDNN_ATTR_OPERATION_REDUCTION_YDESC,
              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    CU_BK_SET(a->ctx, g->ops[i], CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
              1, &g->how[i]);
    return cu_bk_finalize(a, g->ops[i], g->what, "reduction operation");
}

opsched_status cu_bk_graph_finish(const cu_plan_args *a, cu_bk_graph *g)
{
    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph));
    CU_BK_SET(a->ctx, g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1,
              &a->dev->cudnn);
    CU_BK_SET(a->ctx, g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
              g->n_ops, g->ops);
    return cu_bk_finalize(a, g->graph, g->what, "operation graph");
}

/* 1 when the math mode forbids an engine with these numerical notes. */
static int notes_forbid(opsched_math m, const cudnnBackendNumericalNote_t *notes, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return 1;
        if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && m == OPSCHED_MATH_FP32) return 1;
    }
    return 0;
}

opsched_status cu_bk_engine_info(const cu_plan_args *a, cudnnBackendDescriptor_t cfg,
                                 int64_t *index, int *allowed)
{
    cudnnBackendDescriptor_t eng = NULL;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t got = 0, n = 0;
    opsched_status st = OPSCHED_OK;
    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng));
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &eng),
                     done);
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64,
                                              1, &got, index),
                     done);
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                              CUDNN_TYPE_NUMERICAL_NOTE,
                                              CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes),
                     done);
    *allowed = !notes_forbid(a->opts->math, notes, OS_MIN(n, CUDNN_NUMERICAL_NOTE_TYPE_COUNT));
done:
    cu_bk_free(&eng);
    return st;
}

/* ---- the plan store: serialized plans across runs ---------------------- */

/* The device's plan store, opened at the first call (NULL when off or it
 * cannot be opened; the debug log says which).  Its scope is what a
 * serialized plan depends on beyond its graph and engine config: cuDNN,
 * the CUDA runtime and driver, and the device. */
static os_plan_store *plan_store(const cu_plan_args *a)
{
    cu_device *dev = a->dev;
    if (dev->plan_store_tried) return dev->plan_store;
    dev->plan_store_tried = 1;
    char path[1024], scope[400], why[700];
    if (os_plan_store_default_path(path, sizeof(path)) != 0) {
        os_log(a->ctx, OPSCHED_LOG_DEBUG,
               "cuda: no plan store (OPSCHED_PLAN_STORE=off, or no cache directory)");
        return NULL;
    }
    struct cudaDeviceProp prop;
    int rt = 0, drv = 0;
    if (cudaGetDeviceProperties(&prop, dev->index) != cudaSuccess ||
        cudaRuntimeGetVersion(&rt) != cudaSuccess || cudaDriverGetVersion(&drv) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    snprintf(scope, sizeof(scope), "cudnn %zu; cuda %d; driver %d; sm_%d%d; %.200s; %d SMs",
             cudnnGetVersion(), rt, drv, prop.major, prop.minor, prop.name,
             prop.multiProcessorCount);
    dev->plan_store = os_plan_store_open(path, scope, why, sizeof(why));
    if (dev->plan_store)
        os_log(a->ctx, OPSCHED_LOG_DEBUG, "cuda: cuDNN plans stored in %s", path);
    else
        os_log(a->ctx, OPSCHED_LOG_DEBUG, "cuda: no plan store: %s", why);
    return dev->plan_store;
}

/* "<graph_key>|e<engine>|<knob type>=<value>,...": the plan store's key of
 * engine config cfg for that graph; 0 when cuDNN does not say (no store). */
static int store_key(cudnnBackendDescriptor_t cfg, const char *graph_key, char *buf, size_t size)
{
    cudnnBackendDescriptor_t eng = NULL, knobs[CUDNN_KNOB_TYPE_COUNTS];
    int64_t got = 0, index = -1, n = 0;
    int ok = 0;
    memset(knobs, 0, sizeof(knobs));
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS)
        return 0;
    if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &got, &eng) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got,
                                 &index) != CUDNN_STATUS_SUCCESS)
        goto done;
    for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; i++)
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[i]) !=
            CUDNN_STATUS_SUCCESS)
            goto done;
    if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS, &n,
                                 knobs) != CUDNN_STATUS_SUCCESS ||
        n < 0 || n > CUDNN_KNOB_TYPE_COUNTS)
        goto done;
    int w = snprintf(buf, size, "%s|e%lld|", graph_key, (long long)index);
    if (w < 0 || (size_t)w >= size) goto done;
    size_t len = (size_t)w;
    for (int64_t i = 0; i < n; i++) {
        cudnnBackendKnobType_t type;
        int64_t value = 0;
        if (cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                     CUDNN_TYPE_KNOB_TYPE, 1, &got,
                                     &type) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64,
                                     1, &got, &value) != CUDNN_STATUS_SUCCESS)
            goto done;
        w = snprintf(buf + len, size - len, "%s%d=%lld", i ? "," : "", (int)type, (long long)value);
        if (w < 0 || (size_t)w >= size - len) goto done;
        len += (size_t)w;
    }
    ok = 1;
done:
    for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; i++)
        if (knobs[i]) (void)cudnnBackendDestroyDescriptor(knobs[i]);
    (void)cudnnBackendDestroyDescriptor(eng);
    return ok;
}

/* The plan stored under key, finalized (its serialized form set first,
 * then the handle, as cuDNN's frontend loads one); NULL when none or it
 * does not load (then it is built again and stored anew). */
static cudnnBackendDescriptor_t load_plan(const cu_plan_args *a, os_plan_store *store,
                                          const char *key)
{
    size_t n = 0;
    char *json = os_plan_store_get(store, key, &n);
    if (!json) return NULL;
    cudnnBackendDescriptor_t p = NULL;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &p) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                                 (int64_t)n, json) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                 &a->dev->cudnn) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(p) != CUDNN_STATUS_SUCCESS) {
        os_log(a->ctx, OPSCHED_LOG_DEBUG, "cuda: a stored cuDNN plan did not load; built again");
        if (p) (void)cudnnBackendDestroyDescriptor(p);
        p = NULL;
        (void)cudaGetLastError();
    }
    free(json);
    return p;
}

/* Stores plan p's serialized form under key; engines that cannot be
 * serialized are simply not stored. */
static void keep_plan(os_plan_store *store, const char *key, cudnnBackendDescriptor_t p)
{
    int64_t n = 0;
    if (cudnnBackendGetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                                 0, &n, NULL) != CUDNN_STATUS_SUCCESS ||
        n <= 0 || n > OS_PLAN_STORE_MAX_BYTES) {
        (void)cudaGetLastError();
        return;
    }
    char *json = malloc((size_t)n);
    int64_t got = 0;
    if (json &&
        cudnnBackendGetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                                 n, &got, json) == CUDNN_STATUS_SUCCESS &&
        got > 0 && got <= n)
        (void)os_plan_store_put(store, key, json, (size_t)got);
    free(json);
}

opsched_status cu_bk_plan(const cu_plan_args *a, cudnnBackendDescriptor_t cfg,
                          const char *graph_key, cudnnBackendDescriptor_t *plan, cudnnStatus_t *why)
{
    char key[OS_PLAN_STORE_MAX_KEY];
    os_plan_store *store = graph_key ? plan_store(a) : NULL;
    int keyed = store && store_key(cfg, graph_key, key, sizeof(key));
    opsched_status st = OPSCHED_OK;
    cudnnBackendDescriptor_t p = NULL;
    *plan = NULL;
    if (why) *why = CUDNN_STATUS_SUCCESS;
    if (keyed && (*plan = load_plan(a, store, key)) != NULL) return OPSCHED_OK;
    OS_TRY(cu_bk_new(a->ctx, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &p));
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                              CUDNN_TYPE_HANDLE, 1, &a->dev->cudnn),
                     fail);
    CUDNN_CHECK_GOTO(a->ctx, st,
                     cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg),
                     fail);
    cudnnStatus_t e = cudnnBackendFinalize(p);
    if (e != CUDNN_STATUS_SUCCESS) {
        if (why) *why = e;
        (void)cudaGetLastError();
        goto fail;
    }
    if (keyed) keep_plan(store, key, p);
    *plan = p;
    return OPSCHED_OK;
fail:
    cu_bk_free(&p);
    return st;
}
