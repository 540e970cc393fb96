/*
 * cuda_bk.c - what every user of cuDNN's graph ("backend") API needs:
 * descriptors made and freed, the engine configs a heuristics mode
 * proposes for an operation graph, and variant packs (the tensors' ids
 * bound to pointers) kept per pointer set (cuda_conv_graph.c, cuda_sdpa.c).
 */
#include <stdint.h>
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
