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
 *
 * fp32 attention may also run in product form: S = scale Q K^T and O = P V
 * as strided batches of cuBLASLt products in fp32 (no TF32, as precision.c
 * keeps these two products), the bias and the softmax between them one
 * kernel over the scores (cuk_attention_softmax), which live in the plan's
 * workspace.  The planner times it against the fused kernel and keeps the
 * faster; it is the only form for heads over 256.  The fused kernels give
 * each (b, h) of a short sequence a few warps; BERT-base at sequence 384
 * spent 59 us a layer in the float kernel on an H200, where two products of
 * 0.23 GFLOP and a softmax over 7 MB of scores should take a third of that.
 * --algo products takes it whatever it measures, --algo own never.
 */
#include <string.h>

#include "backend/cuda/cuda_impl.h"

/* The product form: S^T = scale K Q^T and O^T = V^T P^T on cuBLASLt in
 * fp32 (column-major terms), the softmax between them a kernel over the
 * scores.  The samples go in passes of `chunk` whose scores fit the
 * stream's scratch (cu_stream_scratch), so a plan holds no memory of its
 * own; a sample whose scores alone exceed it takes a pass each, its scores
 * in the plan's workspace. */
typedef struct att_products {
    cu_lt_gemm qk, pv;
    int flat;            /* a pass's (b, h) pairs as one batch of each product, else one a b */
    int chunk;           /* samples a pass (a divisor of B) */
    int own;             /* the scores in the plan's workspace, not the stream's scratch */
    int pv_scores_first; /* the second product reads the scores as A (O's columns contiguous) */
    int64_t bstep[4];    /* elements of Q, K, V and O from one sample to the next */
    int64_t s_sample;    /* score elements a sample: H Sq Sk */
    size_t s_bytes;      /* a pass's scores in bytes */
} att_products;

typedef struct att_plan {
    cu_plan base;
    cuk_dtype t;
    cuk_attention_desc d;
    int has_bias;
    size_t off[3]; /* bytes into Q, K and V (views) */
    int products;  /* 1: the product form runs (prod), 0: the fused kernel */
    att_products prod;
} att_plan;

static void products_free(att_products *r)
{
    cu_lt_gemm_free(&r->qk);
    cu_lt_gemm_free(&r->pv);
}

static void att_release(cu_plan *base)
{
    att_plan *p = (att_plan *)base;
    if (p->products) products_free(&p->prod);
}

/* The product form on operands q, k, v, bias and o (offsets applied), the
 * scores of each pass in sc. */
static opsched_status products_run(opsched_ctx *ctx, cu_device *dev, cudaStream_t s, cuk_dtype t,
                                   const cuk_attention_desc *d, att_products *r, const char *q,
                                   const char *k, const char *v, const char *bias, char *o,
                                   float *sc)
{
    const size_t e = sizeof(float);
    const int calls = r->flat ? 1 : r->chunk;
    cuk_attention_desc pass = *d;
    pass.B = r->chunk;
    for (int64_t b0 = 0; b0 < d->B; b0 += r->chunk) {
        for (int c = 0; c < calls; c++) {
            const int64_t b = b0 + c;
            OS_TRY(cu_lt_gemm_run(ctx, dev, &r->qk, s, k + (size_t)(b * r->bstep[1]) * e,
                                  q + (size_t)(b * r->bstep[0]) * e, NULL, NULL,
                                  sc + c * r->s_sample));
        }
        CUDA_CHECK(ctx, cuk_attention_softmax(
                            t, &pass, sc, bias ? bias + (size_t)(b0 * d->bias[0]) * e : NULL, s));
        for (int c = 0; c < calls; c++) {
            const int64_t b = b0 + c;
            const void *vb = v + (size_t)(b * r->bstep[2]) * e, *pb = sc + c * r->s_sample;
            OS_TRY(cu_lt_gemm_run(ctx, dev, &r->pv, s, r->pv_scores_first ? pb : vb,
                                  r->pv_scores_first ? vb : pb, NULL, NULL,
                                  o + (size_t)(b * r->bstep[3]) * e));
        }
    }
    return OPSCHED_OK;
}

static opsched_status att_launch(opsched_ctx *ctx, cu_device *dev, cu_plan *base, cudaStream_t s,
                                 void *const *in, void *const *out)
{
    att_plan *p = (att_plan *)base;
    const char *q = in[0], *k = in[1], *v = in[2];
    if (p->products) {
        float *sc = p->prod.own ? base->workspace : cu_stream_scratch(dev, s);
        if (!sc)
            return OS_FAIL(ctx, OPSCHED_ERR_BACKEND,
                           "cuda: an attention's scores have no scratch on this stream");
        return products_run(ctx, dev, s, p->t, &p->d, &p->prod, q + p->off[0], k + p->off[1],
                            v + p->off[2], p->has_bias ? in[3] : NULL, out[0], sc);
    }
    CUDA_CHECK(ctx, cuk_attention(p->t, &p->d, q + p->off[0], k + p->off[1], v + p->off[2],
                                  p->has_bias ? in[3] : NULL, out[0], s));
    return OPSCHED_OK;
}

/* The most scores of one sample (H Sq Sk floats) the product form takes. */
#define ATT_PRODUCTS_MAX_BYTES ((size_t)256 << 20)

/* The alignment every one of n byte offsets keeps (cu_align16 of each, the
 * least). */
static int align_of(const int64_t *bytes, int n)
{
    int al = 16;
    for (int i = 0; i < n; i++) {
        int b = cu_align16(bytes[i]);
        if (b < al) al = b;
    }
    return al;
}

/* One operand as cuBLASLt reads it: the matrix M [n0][n1], element (i, j)
 * at i s0 + j s1, as op(A) of a column-major layout: transposed (T) where
 * its rows are contiguous, as stored (N) where its columns are; 0 when
 * neither (or the leading dimension would not fit an int). */
static int lt_operand(int64_t n0, int64_t s0, int64_t n1, int64_t s1, cublasOperation_t *op,
                      int *ld)
{
    int64_t l;
    if (n1 == 1 || s1 == 1) {
        *op = CUBLAS_OP_T; /* column-major M^T [n1 x n0] */
        l = n0 == 1 ? n1 : s0;
        if (l < n1) return 0;
    } else if (n0 == 1 || s0 == 1) {
        *op = CUBLAS_OP_N; /* column-major M [n0 x n1] */
        l = n1 == 1 ? n0 : s1;
        if (l < n0) return 0;
    } else {
        return 0;
    }
    if (l > INT32_MAX) return 0;
    *ld = (int)l;
    return 1;
}

/* The stride of operand strides x (b, h) over the (b, h) pairs as one
 * batch of B H, or -1 when they make none. */
static int64_t flat_stride(int64_t B, int64_t H, const int64_t *x)
{
    if (H == 1) return x[0];
    if (B == 1 || x[0] == H * x[1]) return x[1];
    return -1;
}

/* Sets up the product form of fp32 attention d; 1 when cuBLASLt takes it,
 * a sample's scores fit ATT_PRODUCTS_MAX_BYTES and every operand has
 * contiguous rows or columns. */
static int products_init(const cu_plan_args *a, const cuk_attention_desc *d,
                         const size_t off_bytes[3], size_t limit, att_products *r)
{
    memset(r, 0, sizeof(*r));
    const int64_t B = d->B, H = d->H, Sq = d->Sq, Sk = d->Sk;
    if (Sq > INT32_MAX || Sk > INT32_MAX || d->D > INT32_MAX || d->Dv > INT32_MAX ||
        (double)H * (double)Sq * (double)Sk * sizeof(float) > (double)ATT_PRODUCTS_MAX_BYTES)
        return 0;
    r->s_sample = H * Sq * Sk;
    /* samples a pass: the most that divide B and whose scores fit the
     * stream's scratch; one, in the plan's workspace, where one does not */
    const int64_t fit = (int64_t)(CU_STREAM_SCRATCH_BYTES / ((size_t)r->s_sample * sizeof(float)));
    int64_t chunk = 1;
    for (int64_t c = fit < B ? fit : B; c > 1 && chunk == 1; c--)
        if (B % c == 0) chunk = c;
    r->own = fit < 1;
    r->chunk = (int)chunk;
    r->s_bytes = (size_t)(chunk * r->s_sample) * sizeof(float);
    const int64_t *xs[4] = {d->q, d->k, d->v, d->o};
    int64_t bs[4];
    int flat = 1;
    for (int x = 0; x < 4; x++)
        flat &= (bs[x] = flat_stride(chunk, H, xs[x])) >= 0;
    r->flat = flat;
    for (int x = 0; x < 4; x++) {
        if (!flat) bs[x] = xs[x][1];
        r->bstep[x] = xs[x][0];
    }
    const int count = (int)(flat ? chunk * H : H);
    const int64_t e = (int64_t)sizeof(float), sb = Sq * Sk * e;
    /* alignments: every pointer a pass, a call and a batch reach */
    const int64_t qa[3] = {(int64_t)off_bytes[0], bs[0] * e, r->bstep[0] * e},
                  ka[3] = {(int64_t)off_bytes[1], bs[1] * e, r->bstep[1] * e},
                  va[3] = {(int64_t)off_bytes[2], bs[2] * e, r->bstep[2] * e},
                  oa[2] = {bs[3] * e, r->bstep[3] * e}, sa[2] = {sb, r->s_sample * e};
    cublasOperation_t ta, tb;
    int lda, ldb;
    /* S^T [Sk x Sq] = scale K Q^T: K [Sk][D] as op(A), Q^T [D][Sq] as op(B) */
    if (!lt_operand(Sk, d->k[2], d->D, d->k[3], &ta, &lda) ||
        !lt_operand(d->D, d->q[3], Sq, d->q[2], &tb, &ldb))
        return 0;
    int al_s = align_of(sa, 2);
    cu_lt_batch b1 = {.count = count,
                      .stride_a = bs[1],
                      .stride_b = bs[0],
                      .stride_d = Sq * Sk,
                      .align_a = align_of(ka, 3),
                      .align_b = align_of(qa, 3),
                      .align_d = al_s};
    if (!cu_lt_gemm_init_batched(a->dev, CUDA_R_32F, CUBLAS_COMPUTE_32F, ta, tb, (int)Sk, (int)Sq,
                                 (int)d->D, lda, ldb, (int)Sk, CUBLASLT_EPILOGUE_DEFAULT, 0.0f,
                                 limit, &b1, &r->qk))
        return 0;
    r->qk.alpha = d->scale;
    /* O with contiguous rows: O^T [Dv x Sq] = V^T P^T, V^T [Dv][Sk] as op(A)
     * and P^T [Sk][Sq] as op(B); with contiguous columns: O [Sq x Dv] =
     * P V, P [Sq][Sk] as op(A) (the scores transposed) and V as op(B) */
    int rows = d->Dv == 1 || d->o[3] == 1, cols = !rows && (Sq == 1 || d->o[2] == 1);
    int64_t ldo = rows ? (Sq == 1 ? d->Dv : d->o[2]) : (d->Dv == 1 ? Sq : d->o[3]);
    int ok = (rows || cols) && ldo <= INT32_MAX && ldo >= (rows ? d->Dv : Sq);
    if (ok && rows) ok = lt_operand(d->Dv, d->v[3], Sk, d->v[2], &ta, &lda);
    if (ok && cols) ok = lt_operand(Sk, d->v[2], d->Dv, d->v[3], &tb, &ldb);
    cu_lt_batch b2 = {.count = count,
                      .stride_a = rows ? bs[2] : Sq * Sk,
                      .stride_b = rows ? Sq * Sk : bs[2],
                      .stride_d = bs[3],
                      .align_a = rows ? align_of(va, 3) : al_s,
                      .align_b = rows ? al_s : align_of(va, 3),
                      .align_d = align_of(oa, 2)};
    if (!ok ||
        !(rows ? cu_lt_gemm_init_batched(a->dev, CUDA_R_32F, CUBLAS_COMPUTE_32F, ta, CUBLAS_OP_N,
                                         (int)d->Dv, (int)Sq, (int)Sk, lda, (int)Sk, (int)ldo,
                                         CUBLASLT_EPILOGUE_DEFAULT, 0.0f, limit, &b2, &r->pv)
               : cu_lt_gemm_init_batched(a->dev, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_OP_T, tb,
                                         (int)Sq, (int)d->Dv, (int)Sk, (int)Sk, ldb, (int)ldo,
                                         CUBLASLT_EPILOGUE_DEFAULT, 0.0f, limit, &b2, &r->pv))) {
        cu_lt_gemm_free(&r->qk);
        return 0;
    }
    r->pv_scores_first = cols;
    return 1;
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

/* Zeroed scratch operands laid out as attention d's: Q, K, V, the bias
 * (where has_bias) and O; freed with cu_free_set. */
static opsched_status att_scratch(const cu_plan_args *a, const cuk_attention_desc *d, int has_bias,
                                  void *buf[5])
{
    size_t esz = cu_elem_size(a, cu_in(a, 0));
    size_t n[5] = {extent(d->B, d->H, d->Sq, d->D, d->q), extent(d->B, d->H, d->Sk, d->D, d->k),
                   extent(d->B, d->H, d->Sk, d->Dv, d->v),
                   has_bias ? extent(d->B, d->H, d->Sq, d->Sk, d->bias) : 0,
                   extent(d->B, d->H, d->Sq, d->Dv, d->o)};
    for (int i = 0; i < 5; i++)
        n[i] *= esz;
    return cu_zeroed_set(a, n, 5, buf);
}

/* The time of variants a and b of one attention on zeroed scratch operands
 * laid out as the node's (ms[0] and ms[1]). */
static opsched_status time_variants(const cu_plan_args *a, cuk_dtype t, int has_bias,
                                    const cuk_attention_desc *va, const cuk_attention_desc *vb,
                                    float ms[2])
{
    void *buf[5];
    opsched_status st = att_scratch(a, va, has_bias, buf);
    att_run r = {t, va, buf[0], buf[1], buf[2], buf[3], buf[4]};
    if (st == OPSCHED_OK) st = cu_time_reps(a, enqueue_run, &r, &ms[0]);
    r.d = vb;
    if (st == OPSCHED_OK) st = cu_time_reps(a, enqueue_run, &r, &ms[1]);
    cu_free_set(buf, 5);
    return st;
}

/* One run of the product form on scratch operands (a verdict). */
typedef struct prod_run {
    cuk_dtype t;
    const cuk_attention_desc *d;
    att_products *r;
    void *buf[5];
    float *sc;
} prod_run;

static opsched_status enqueue_products(const cu_plan_args *a, void *env, cudaStream_t s)
{
    prod_run *r = env;
    return products_run(a->ctx, a->dev, s, r->t, r->d, r->r, r->buf[0], r->buf[1], r->buf[2],
                        r->buf[3], r->buf[4], r->sc);
}

/* The time of the fused kernel d (ms[0]; -1 where kernel_ok is 0) and of
 * the product form r (ms[1]) on zeroed scratch operands. */
static opsched_status time_products(const cu_plan_args *a, cuk_dtype t, int has_bias,
                                    const cuk_attention_desc *d, int kernel_ok, att_products *r,
                                    float ms[2])
{
    prod_run pr = {t, d, r, {NULL}, NULL};
    opsched_status st = att_scratch(a, d, has_bias, pr.buf);
    if (st == OPSCHED_OK) st = cu_zeroed(a, r->s_bytes, (void **)&pr.sc);
    att_run k = {t, d, pr.buf[0], pr.buf[1], pr.buf[2], pr.buf[3], pr.buf[4]};
    if (st == OPSCHED_OK && kernel_ok) st = cu_time_reps(a, enqueue_run, &k, &ms[0]);
    if (st == OPSCHED_OK) st = cu_time_reps(a, enqueue_products, &pr, &ms[1]);
    cu_free_set(pr.buf, 5);
    cu_free_set((void **)&pr.sc, 1);
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
    int kernel_ok = cuk_attention_ok(&d) && cuk_attention_shared_bytes(&d) <= (size_t)shared;
    size_t off_bytes[3];
    for (int x = 0; x < 3; x++)
        off_bytes[x] = (size_t)off[x] * cu_elem_size(a, cu_in(a, x));
    /* fp32: the product form where it measures faster than the fused
     * kernel, or where that kernel cannot take the heads; --algo products
     * takes it whatever it measures, --algo own and tensor-cores never */
    int want_prod = strcmp(algo, "products") == 0, use_prod = 0;
    att_products prod;
    if (want_prod && t != CUK_DT_F32)
        return CU_UNSUPPORTED(a, "products: the product form takes fp32 attention only");
    if (t == CUK_DT_F32 && !want_tc && strcmp(algo, "own") != 0 && strcmp(algo, "cudnn") != 0) {
        size_t limit = 0;
        OS_TRY(cu_gemm_default_workspace(a, &limit));
        if (products_init(a, &d, off_bytes, limit, &prod)) {
            use_prod = want_prod || !kernel_ok;
            if (!use_prod) {
                float ms[2] = {-1.0f, -1.0f};
                opsched_status st = OPSCHED_OK;
                if (cuk_attention_prepare(t, &d) != cudaSuccess) kernel_ok = 0;
                (void)cudaGetLastError();
                st = time_products(a, t, has_bias, &d, kernel_ok, &prod, ms);
                if (st != OPSCHED_OK) {
                    products_free(&prod);
                    return st;
                }
                os_log(a->ctx, OPSCHED_LOG_DEBUG,
                       "cuda: node '%s': attention: fused kernel %.4f ms, products on cuBLASLt "
                       "%.4f ms",
                       a->node->name, (double)ms[0], (double)ms[1]);
                use_prod = ms[1] >= 0.0f && (ms[0] < 0.0f || ms[1] < ms[0]);
            }
            if (!use_prod) products_free(&prod);
        }
    }
    if (want_prod && !use_prod)
        return CU_UNSUPPORTED(a,
                              "products: cuBLASLt cannot take this attention's operands (a "
                              "view with neither rows nor columns contiguous, or one sample's "
                              "scores over %zu MiB)",
                              ATT_PRODUCTS_MAX_BYTES >> 20);
    cu_plan *base = NULL;
    if (use_prod) {
        opsched_status st = cu_plan_alloc(a, sizeof(att_plan), att_launch, att_release, &base);
        if (st != OPSCHED_OK) {
            products_free(&prod);
            return st;
        }
        att_plan *p = (att_plan *)base;
        p->t = t;
        p->d = d;
        p->has_bias = has_bias;
        p->products = 1;
        p->prod = prod;
        for (int x = 0; x < 3; x++)
            p->off[x] = off_bytes[x];
        if (prod.own) {
            st = cu_malloc(a->ctx, prod.s_bytes, &base->workspace);
            base->workspace_bytes = st == OPSCHED_OK ? prod.s_bytes : 0;
        } else {
            st = cu_stream_scratch_reserve(a->ctx, a->dev);
        }
        if (st != OPSCHED_OK) {
            cu_plan_destroy(base);
            return st;
        }
        snprintf(a->info->algo, sizeof(a->info->algo), "cublaslt_products");
        *out = base;
        return OPSCHED_OK;
    }
    if (!kernel_ok)
        return CU_UNSUPPORTED(a,
                              "attention with a head of %lld (values %lld): the fused kernel "
                              "takes heads up to 256 within %d bytes of shared memory",
                              (long long)d.D, (long long)d.Dv, shared);
    CUDA_CHECK(a->ctx, cuk_attention_prepare(t, &d));
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
    OS_TRY(cu_plan_alloc(a, sizeof(att_plan), att_launch, att_release, &base));
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
