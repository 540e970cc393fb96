/*
 * cuda_attention.c - the Attention node (opsched_attention_attr) as one
 * launch of the fused kernel (cuk_attention, kernels_attention.cu).
 *
 * Each operand's canonical strides come from its tensor's storage order in
 * this plan (cu_strides: row-major, or channels-last for a 4-D tensor of an
 * NHWC plan), so whatever order the layout pass chose is read in place.
 * Scores never reach global memory, whatever the math mode: the products
 * and the softmax are in float, or for fp32 in split TF32, which keeps
 * fp32's accuracy (the TF32 mode's rule for the products of two
 * activations, precision.c, holds by construction).
 *
 * fp16 and bf16 attention may run on cuDNN's fused flash-attention engines
 * instead (cuda_sdpa.c), where they measure faster than the own kernel;
 * --algo cudnn takes them whatever they measure, --algo own never, and
 * --ablate cudnn-attention turns the choice off.
 *
 * fp32 attention under TF32 times the tensor-core kernel in split TF32
 * (fp32 accuracy, kernels_attention.cu) against the float kernel and keeps
 * the faster; --ablate tensor-cores keeps the float kernel, and --algo
 * tensor-cores takes the tensor-core kernel whatever it measures (fp16 and
 * bf16 as stored, fp32 in split TF32 in any math mode; heads of a multiple
 * of 16 up to 128, others fail).
 */
#include <string.h>

#include "backend/cuda/cuda_impl.h"

typedef struct att_plan {
    cu_plan base;
    cuk_dtype t;
    cuk_attention_desc d;
    int has_bias;
    size_t off[3]; /* bytes into Q, K and V (views) */
} att_plan;

static opsched_status att_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                 void *const *in, void *const *out)
{
    (void)dev;
    att_plan *p = (att_plan *)base;
    const char *q = in[0], *k = in[1], *v = in[2];
    CUDA_CHECK(ctx, cuk_attention(p->t, &p->d, q + p->off[0], k + p->off[1], v + p->off[2],
                                  p->has_bias ? in[3] : NULL, out[0], s));
    return OPSCHED_OK;
}

/* One launch of an attention variant on scratch operands (a verdict). */
typedef struct att_run {
    cuk_dtype t;
    const cuk_attention_desc *d;
    void *q, *k, *v, *bias, *o;
} att_run;

static opsched_status enqueue_run(const cu_plan_args *a, void *env, cudaStream_t s)
{
    const att_run *r = env;
    CUDA_CHECK(a->ctx, cuk_attention(r->t, r->d, r->q, r->k, r->v, r->bias, r->o, s));
    return OPSCHED_OK;
}

/* Elements an operand of these dims and strides spans. */
static size_t extent(int64_t d0, int64_t d1, int64_t d2, int64_t d3, const int64_t st[4])
{
    const int64_t dims[4] = {d0, d1, d2, d3};
    size_t e = 1;
    for (int i = 0; i < 4; i++)
        if (dims[i] > 1 && st[i] > 0) e += (size_t)(dims[i] - 1) * (size_t)st[i];
    return e;
}

/* The time of variants a and b of one attention on zeroed scratch operands
 * laid out as the node's (ms[0] and ms[1]). */
static opsched_status time_variants(const cu_plan_args *a, cuk_dtype t, int has_bias,
                                    const cuk_attention_desc *va, const cuk_attention_desc *vb,
                                    float ms[2])
{
    const cuk_attention_desc *d = va;
    size_t esz = cu_elem_size(a, cu_in(a, 0));
    size_t n[5] = {extent(d->B, d->H, d->Sq, d->D, d->q), extent(d->B, d->H, d->Sk, d->D, d->k),
                   extent(d->B, d->H, d->Sk, d->Dv, d->v),
                   has_bias ? extent(d->B, d->H, d->Sq, d->Sk, d->bias) : 0,
                   extent(d->B, d->H, d->Sq, d->Dv, d->o)};
    void *buf[5] = {NULL, NULL, NULL, NULL, NULL};
    opsched_status st = OPSCHED_OK;
    for (int i = 0; i < 5 && st == OPSCHED_OK; i++)
        if (n[i]) st = cu_zeroed(a, n[i] * esz, &buf[i]);
    att_run r = {t, va, buf[0], buf[1], buf[2], buf[3], buf[4]};
    if (st == OPSCHED_OK) st = cu_time_reps(a, enqueue_run, &r, &ms[0]);
    r.d = vb;
    if (st == OPSCHED_OK) st = cu_time_reps(a, enqueue_run, &r, &ms[1]);
    for (int i = 0; i < 5; i++)
        (void)cudaFree(buf[i]);
    (void)cudaGetLastError();
    return st;
}

/* The canonical strides of operand x, stored as tensor t; through a view
 * (opsched_attention_view) the element offset goes to *off, and the
 * tensor must be stored row-major. */
static int canonical_strides(const cu_plan_args *a, const opsched_tensor *t,
                             const opsched_attention_attr *at, int x, int64_t out[4], int64_t *off)
{
    if (x <= OPSCHED_ATT_V && at->view[x].rank > 0) {
        int64_t st[OPSCHED_MAX_DIMS], acc = 1;
        cu_strides(a, t, st);
        for (int ax = t->shape.ndim - 1; ax >= 0; ax--) {
            if (t->shape.d[ax] > 1 && st[ax] != acc) return 0;
            acc *= t->shape.d[ax];
        }
        *off = opsched_attention_strides(at, x, &t->shape, out, NULL);
        return 1;
    }
    int64_t st[OPSCHED_MAX_DIMS], size[4];
    cu_strides(a, t, st);
    opsched_attention_strides(at, x, &t->shape, out, size);
    for (int c = 0; c < 4; c++)
        out[c] = at->axes[x][c] >= 0 && size[c] > 1 ? st[at->axes[x][c]] : 0;
    *off = 0;
    return 1;
}

opsched_status cu_plan_attention(const cu_plan_args *a, cu_plan **out)
{
    opsched_attention_dims ad;
    if (!opsched_attention_dims_get(a->g, a->node, &ad))
        return CU_UNSUPPORTED(a, "not an attention node");
    const opsched_attention_attr *at = &a->node->attr.attention;
    cuk_dtype t = (cuk_dtype)a->kt;
    int has_bias = a->node->n_inputs > 3 && a->node->inputs[3] >= 0;
    for (int x = 0; x < 3 + has_bias; x++)
        if (cu_kdt(a, cu_in(a, x)) != t)
            return CU_UNSUPPORTED(a, "attention operands of different types");
    if (cu_kdt(a, cu_out(a, 0)) != t) return CU_UNSUPPORTED(a, "an output of another type");
    cuk_attention_desc d;
    memset(&d, 0, sizeof(d));
    d.B = ad.B;
    d.H = ad.H;
    d.Sq = ad.Sq;
    d.Sk = ad.Sk;
    d.D = ad.D;
    d.Dv = ad.Dv;
    d.scale = at->scale;
    d.nan_rows_zero = at->nan_rows_zero;
    int64_t off[OPSCHED_ATT_OPERANDS] = {0};
    int64_t *dst[OPSCHED_ATT_OPERANDS] = {d.q, d.k, d.v, d.bias, d.o};
    for (int x = 0; x < OPSCHED_ATT_OPERANDS; x++) {
        if (x == OPSCHED_ATT_BIAS && !has_bias) continue;
        const opsched_tensor *ot = x == OPSCHED_ATT_O ? cu_out(a, 0) : cu_in(a, x);
        if (!canonical_strides(a, ot, at, x, dst[x], &off[x]))
            return CU_UNSUPPORTED(a, "an attention operand read through a view of a tensor "
                                     "stored channels-last");
    }
    /* Heads of a multiple of 16 up to 128 fit the tensor-core kernel: fp16
     * and bf16 take it; fp32 under TF32 times it in split TF32 against the
     * float kernel (--ablate tensor-cores: the float kernel always) */
    const char *algo = a->opts->algo ? a->opts->algo : "heuristic";
    int want_tc = strcmp(algo, "tensor-cores") == 0;
    int tc_heads = d.D % 16 == 0 && d.Dv % 16 == 0 && d.D <= 128 && d.Dv <= 128;
    if (want_tc && (!tc_heads || (t != CUK_DT_F16 && t != CUK_DT_BF16 && t != CUK_DT_F32)))
        return CU_UNSUPPORTED(a,
                              "tensor-cores: the tensor-core kernel takes fp32, fp16 and bf16 "
                              "heads of a multiple of 16 up to 128, not %lld (values %lld)",
                              (long long)d.D, (long long)d.Dv);
    tc_heads = tc_heads && !(a->opts->ablate & OPSCHED_ABLATE_TENSOR_CORES);
    d.tc = (t == CUK_DT_F16 || t == CUK_DT_BF16) && (tc_heads || want_tc);
    if (want_tc && t == CUK_DT_F32) d.tc = 2;
    int split = !want_tc && t == CUK_DT_F32 && a->opts->math == OPSCHED_MATH_TF32 && tc_heads;
    int sms = 0, shared = 0;
    CUDA_CHECK(a->ctx, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, a->dev->index));
    CUDA_CHECK(a->ctx, cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                              a->dev->index));
    if (split) {
        cuk_attention_desc s2 = d;
        s2.tc = 2;
        cuk_attention_shape(&s2, sms, (size_t)shared);
        cuk_attention_shape(&d, sms, (size_t)shared);
        float ms[2] = {-1.0f, -1.0f};
        if (cuk_attention_ok(&s2) && cuk_attention_shared_bytes(&s2) <= (size_t)shared &&
            cuk_attention_ok(&d) && cuk_attention_shared_bytes(&d) <= (size_t)shared) {
            CUDA_CHECK(a->ctx, cuk_attention_prepare(t, &s2));
            CUDA_CHECK(a->ctx, cuk_attention_prepare(t, &d));
            OS_TRY(time_variants(a, t, has_bias, &d, &s2, ms));
            os_log(a->ctx, OPSCHED_LOG_DEBUG,
                   "cuda: node '%s': attention: float kernel %.4f ms, tensor cores in split "
                   "TF32 %.4f ms",
                   a->node->name, (double)ms[0], (double)ms[1]);
        }
        if (ms[1] >= 0.0f && (ms[0] < 0.0f || ms[1] < ms[0])) d = s2;
    }
    cuk_attention_shape(&d, sms, (size_t)shared);
    if (!cuk_attention_ok(&d) || cuk_attention_shared_bytes(&d) > (size_t)shared)
        return CU_UNSUPPORTED(a,
                              "attention with a head of %lld (values %lld): the fused kernel "
                              "takes heads up to 256 within %d bytes of shared memory",
                              (long long)d.D, (long long)d.Dv, shared);
    CUDA_CHECK(a->ctx, cuk_attention_prepare(t, &d));
    size_t off_bytes[3];
    for (int x = 0; x < 3; x++)
        off_bytes[x] = (size_t)off[x] * cu_elem_size(a, cu_in(a, x));
    cu_plan *base = NULL;
    /* fp16 and bf16: cuDNN's fused engines where they measure faster;
     * --algo cudnn takes them whatever they measure, --algo own and
     * tensor-cores never */
    int force = strcmp(algo, "cudnn") == 0, own = strcmp(algo, "own") == 0 || want_tc;
    if (force && t != CUK_DT_F16 && t != CUK_DT_BF16)
        return CU_UNSUPPORTED(a, "cudnn: cuDNN's fused attention takes fp16 and bf16 only");
    if (force || ((t == CUK_DT_F16 || t == CUK_DT_BF16) && !own &&
                  !(a->opts->ablate & OPSCHED_ABLATE_CUDNN_ATTENTION))) {
        const char *why = NULL;
        OS_TRY(cu_sdpa_plan(a, &d, t, off_bytes, has_bias, force, &base, &why));
        if (base) {
            *out = base;
            return OPSCHED_OK;
        }
        os_log(a->ctx, OPSCHED_LOG_DEBUG, "cuda: node '%s': attention: own kernel: %s",
               a->node->name, why ? why : "");
    }
    OS_TRY(cu_plan_alloc(a, sizeof(att_plan), att_launch, NULL, &base));
    att_plan *p = (att_plan *)base;
    p->t = t;
    p->d = d;
    p->has_bias = has_bias;
    for (int x = 0; x < 3; x++)
        p->off[x] = off_bytes[x];
    if (d.tc)
        snprintf(a->info->algo, sizeof(a->info->algo), "fused_attention_tc%s_w%d",
                 d.tc == 2 ? "32" : "", d.qpw);
    else
        snprintf(a->info->algo, sizeof(a->info->algo), "fused_attention_q%d", d.qpw * 4);
    *out = base;
    return OPSCHED_OK;
}
