/*
 * attention.c - the transformer operators of opsets 23 to 28, decomposed:
 *
 * Attention (23, 24, 25):
 *   3-D Q/K/V [B, S, H*D] -> Reshape [B, S, H, D] -> Transpose [B, H, S, D]
 *   past_key/past_value: Concat before K and V along the sequence (the
 *     present_key/present_value outputs); the causal frontier and the
 *     windows move right by the past length
 *   nonpad_kv_seqlen (an external cache): a per-batch bias computed at run
 *     time from the key positions (valid keys, frontier, windows)
 *   Q * sqrt(scale), K * sqrt(scale) (scale 1/sqrt(D) by default)
 *   MatMul(Q, Transpose(K)); with fewer KV heads (GQA, MQA) the query heads
 *     of one KV head are stacked along the rows ([B, Hkv, r*Sq, D]), which
 *     is the KV head repeated r times without copying it
 *   softcap * Tanh(scores / softcap)
 *   + bias: the mask (a bool mask as Where(mask, 0, -inf); a short last
 *     axis padded with -inf / false), causal (Trilu of -inf above the
 *     diagonal), the sliding window of opset 25 (two more Trilu)
 *   Softmax (in softmax_precision when asked: Cast there and back); rows
 *     whose bias is -inf everywhere become 0, as ONNX defines
 *   MatMul with V; 3-D: Transpose and Reshape back
 *   qk_matmul_output is the tensor its mode names.
 * RotaryEmbedding (23): Gather of the cos/sin caches by position_ids,
 *   Slice into halves (or even/odd elements), cos*x1 - sin*x2 and
 *   sin*x1 + cos*x2, Concat (interleaved: Unsqueeze, Concat, Reshape).
 * SwiGLU (28): Swish(A, alpha) * B.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

/* A shape error naming the node (L and node in scope). */
#define BAD(...) os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, __VA_ARGS__)

static opsched_shape shape4(int64_t a, int64_t b, int64_t c, int64_t d)
{
    opsched_shape s = {.ndim = 4, .d = {a, b, c, d}};
    return s;
}

/* [B, S, H*D] -> [B, H, S, D]. */
static opsched_status split_heads(os_loader *L, int node, const char *tag, int x, int64_t heads,
                                  int64_t *head_size, int *out)
{
    const opsched_shape s = os_onnx_t(L, x)->shape;
    if (heads < 1 || s.d[2] % heads != 0)
        return BAD("a hidden size of %lld does not split into %lld heads", (long long)s.d[2],
                   (long long)heads);
    *head_size = s.d[2] / heads;
    opsched_shape t = {.ndim = 4, .d = {s.d[0], s.d[1], heads, *head_size}};
    static const int64_t perm[4] = {0, 2, 1, 3};
    char buf[48];
    snprintf(buf, sizeof(buf), "%s_heads", tag);
    OS_TRY(os_onnx_reshape(L, node, buf, x, &t, OS_TMP, &x));
    snprintf(buf, sizeof(buf), "%s_bhsd", tag);
    return os_onnx_transpose(L, node, buf, x, perm, OS_TMP, out);
}

/* A [Sq, Skv] bias: -inf where Trilu(upper, k) keeps, 0 elsewhere. */
static opsched_status band(os_loader *L, int node, const char *tag, opsched_dtype dt, int64_t sq,
                           int64_t skv, int upper, int64_t k, int *out)
{
    int c;
    OS_TRY(os_onnx_scalar(L, node, "neg_inf", dt, -INFINITY, &c));
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.shape.shape.ndim = 2;
    a.shape.shape.d[0] = sq;
    a.shape.shape.d[1] = skv;
    char buf[48];
    snprintf(buf, sizeof(buf), "%s_full", tag);
    OS_TRY(os_onnx_step(L, node, buf, OS_TMP, OPSCHED_OP_EXPAND, &a, &c, 1, 1, &c));
    memset(&a, 0, sizeof(a));
    a.trilu.upper = upper;
    a.trilu.k = OS_MAX(-OS_ONNX_MAX_DIM, OS_MIN(OS_ONNX_MAX_DIM, k));
    return os_onnx_step(L, node, tag, OS_TMP, OPSCHED_OP_TRILU, &a, &c, 1, 1, out);
}

/* Adds b to the bias so far (*acc < 0: none yet). */
static opsched_status add_bias(os_loader *L, int node, const char *tag, int b, int *acc)
{
    if (*acc < 0) {
        *acc = b;
        return OPSCHED_OK;
    }
    return os_onnx_binop(L, node, tag, OPSCHED_OP_ADD, *acc, b, OS_TMP, acc);
}

/* The attention mask as an additive bias of type dt over skv keys. */
static opsched_status mask_bias(os_loader *L, int node, opsched_dtype dt, int64_t skv, int *out)
{
    int m;
    OS_TRY(os_onnx_in_id(L, node, 3, &m));
    const opsched_shape ms = os_onnx_t(L, m)->shape;
    opsched_dtype mdt = os_onnx_t(L, m)->dtype;
    int is_bool = mdt == OPSCHED_BOOL;
    if (ms.ndim < 1 || ms.ndim > 4) return BAD("the mask has rank %d (1 to 4 expected)", ms.ndim);
    int64_t last = ms.d[ms.ndim - 1];
    if (last > skv)
        return BAD("the mask covers %lld keys, there are %lld", (long long)last, (long long)skv);
    if (last < skv) {
        /* Keys past the mask's end take no part. */
        opsched_op_attr a;
        memset(&a, 0, sizeof(a));
        a.pad.mode = OPSCHED_PAD_CONSTANT;
        a.pad.value = is_bool ? 0.0f : -INFINITY;
        a.pad.pads[ms.ndim + ms.ndim - 1] = skv - last;
        OS_TRY(os_onnx_step(L, node, "mask_padded", OS_TMP, OPSCHED_OP_PAD, &a, &m, 1, 1, &m));
    }
    if (!is_bool) return os_onnx_cast(L, node, "mask_cast", m, dt, OS_TMP, out);
    int ids[3] = {m, -1, -1};
    OS_TRY(os_onnx_scalar(L, node, "zero", dt, 0.0, &ids[1]));
    OS_TRY(os_onnx_scalar(L, node, "neg_inf", dt, -INFINITY, &ids[2]));
    return os_onnx_step(L, node, "mask_bias", OS_TMP, OPSCHED_OP_WHERE, NULL, ids, 3, 1, out);
}

/* The cache so far (past_key or past_value [B, Hkv, P, d], input k)
 * before the new keys or values x [B, Hkv, S, d]: Concat along the
 * sequence.  *past gets P. */
static opsched_status with_past(os_loader *L, int node, int k, const char *tag, int x,
                                int64_t *past, int *out)
{
    int pk;
    OS_TRY(os_onnx_in_id(L, node, k, &pk));
    const opsched_shape ps = os_onnx_t(L, pk)->shape, xs = os_onnx_t(L, x)->shape;
    if (ps.ndim != 4 || ps.d[0] != xs.d[0] || ps.d[1] != xs.d[1] || ps.d[3] != xs.d[3])
        return BAD("%s must be [%lld, %lld, past, %lld] (it has rank %d)",
                   k == 4 ? "past_key" : "past_value", (long long)xs.d[0], (long long)xs.d[1],
                   (long long)xs.d[3], ps.ndim);
    if (*past >= 0 && *past != ps.d[2])
        return BAD("past_key holds %lld positions, past_value %lld", (long long)*past,
                   (long long)ps.d[2]);
    *past = ps.d[2];
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.axis.axis = 2;
    int ids[2] = {pk, x};
    return os_onnx_step(L, node, tag, OS_TMP, OPSCHED_OP_CONCAT, &a, ids, 2, 1, out);
}

/* A [rows, cols] int64 constant holding i - j at (i, j). */
static opsched_status diagonal_index(os_loader *L, int node, int64_t rows, int64_t cols, int *out)
{
    int64_t n;
    if (!os_mul_ok(rows, cols, &n) || n > ((int64_t)1 << 24))
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "nonpad_kv_seqlen with %lld x %lld scores: the table of "
                                 "positions would be too large",
                                 (long long)rows, (long long)cols);
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!v) return OS_NOMEM(L->ctx);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            v[i * cols + j] = i - j;
    opsched_shape s = {.ndim = 2, .d = {rows, cols}};
    opsched_status st = os_onnx_const(L, node, "positions", OPSCHED_INT64, &s, NULL, v, out);
    free(v);
    return st;
}

/* -inf where the bool `masked` holds, 0 elsewhere, as dt. */
static opsched_status bias_where(os_loader *L, int node, const char *tag, opsched_dtype dt,
                                 int masked, int *out)
{
    int ids[3] = {masked, -1, -1};
    OS_TRY(os_onnx_scalar(L, node, "neg_inf", dt, -INFINITY, &ids[1]));
    OS_TRY(os_onnx_scalar(L, node, "zero", dt, 0.0, &ids[2]));
    return os_onnx_step(L, node, tag, OS_TMP, OPSCHED_OP_WHERE, NULL, ids, 3, 1, out);
}

/* The bias of an external cache (nonpad_kv_seqlen [B], known at run time):
 * keys from nonpad[b] on are masked, and the causal frontier and the
 * windows are aligned to the end of each batch's valid keys, offset[b] =
 * nonpad[b] - Sq (as ONNX's reference: j <= i + offset[b]).  Adds
 * [B, 1, Sq, Skv] terms to *bias. */
static opsched_status nonpad_bias(os_loader *L, int node, opsched_dtype dt, int64_t B, int64_t Sq,
                                  int64_t Skv, int causal, int64_t left, int64_t right, int *bias)
{
    int n, c, t;
    OS_TRY(os_onnx_in_id(L, node, 6, &n));
    const opsched_tensor *nt = os_onnx_t(L, n);
    if (opsched_shape_numel(&nt->shape) != B ||
        (nt->dtype != OPSCHED_INT64 && nt->dtype != OPSCHED_INT32))
        return BAD("nonpad_kv_seqlen must hold %lld integers, one per batch", (long long)B);
    OS_TRY(os_onnx_cast(L, node, "nonpad_i64", n, OPSCHED_INT64, OS_TMP, &n));
    opsched_shape b111 = shape4(B, 1, 1, 1);
    OS_TRY(os_onnx_reshape(L, node, "nonpad_b", n, &b111, OS_TMP, &n));
    /* keys past the valid ones: j >= nonpad[b], i.e. (0 - j) <= -nonpad[b] */
    int pos, masked;
    OS_TRY(diagonal_index(L, node, 1, Skv, &pos));
    OS_TRY(os_onnx_scalar(L, node, "zero_i", OPSCHED_INT64, 0.0, &c));
    int neg_n;
    OS_TRY(os_onnx_binop(L, node, "nonpad_neg", OPSCHED_OP_SUB, c, n, OS_TMP, &neg_n));
    OS_TRY(os_onnx_binfn(L, node, "pad_masked", OPSCHED_BINARY_LESS_EQUAL, pos, neg_n, OS_TMP,
                         &masked));
    OS_TRY(bias_where(L, node, "pad_bias", dt, masked, &t));
    OS_TRY(add_bias(L, node, "bias_pad", t, bias));
    if (!causal && left < 0 && right < 0) return OPSCHED_OK;
    /* diff[b, i, j] = i + offset[b] - j */
    int diff, off;
    OS_TRY(os_onnx_scalar(L, node, "q_len", OPSCHED_INT64, (double)Sq, &c));
    OS_TRY(os_onnx_binop(L, node, "offset", OPSCHED_OP_SUB, n, c, OS_TMP, &off));
    OS_TRY(diagonal_index(L, node, Sq, Skv, &pos));
    OS_TRY(os_onnx_binop(L, node, "diff", OPSCHED_OP_ADD, pos, off, OS_TMP, &diff));
    static const struct {
        const char *tag;
        opsched_binary_fn fn;
    } sides[3] = {{"causal_ext", OPSCHED_BINARY_LESS},
                  {"left_ext", OPSCHED_BINARY_GREATER},
                  {"right_ext", OPSCHED_BINARY_LESS}};
    /* causal: diff < 0; left: diff > left; right: diff < -right */
    int64_t bound[3] = {0, left, -right};
    int on[3] = {causal, left >= 0, right >= 0};
    for (int k = 0; k < 3; k++) {
        if (!on[k]) continue;
        char tag[32];
        OS_TRY(os_onnx_scalar(L, node, "bound", OPSCHED_INT64, (double)bound[k], &c));
        snprintf(tag, sizeof(tag), "%s_masked", sides[k].tag);
        OS_TRY(os_onnx_binfn(L, node, tag, sides[k].fn, diff, c, OS_TMP, &masked));
        snprintf(tag, sizeof(tag), "%s_bias", sides[k].tag);
        OS_TRY(bias_where(L, node, tag, dt, masked, &t));
        snprintf(tag, sizeof(tag), "bias_%s", sides[k].tag);
        OS_TRY(add_bias(L, node, tag, t, bias));
    }
    return OPSCHED_OK;
}

static opsched_status attention(os_loader *L, int node)
{
    int has_past = os_onnx_in(L, node, 4) >= 0, nonpad = os_onnx_in(L, node, 6) >= 0;
    if (has_past != (os_onnx_in(L, node, 5) >= 0))
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                 "past_key and past_value must be given together");
    if (has_past && nonpad)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                 "nonpad_kv_seqlen cannot be combined with past_key/past_value");
    int64_t causal = 0, qh = 0, kvh = 0, mode = 0, prec = 0, left = -1, right = -1;
    float softcap = 0.0f, scale_attr = 0.0f;
    OS_TRY(os_onnx_attr_int(L, node, "is_causal", &causal));
    OS_TRY(os_onnx_attr_int(L, node, "q_num_heads", &qh));
    OS_TRY(os_onnx_attr_int(L, node, "kv_num_heads", &kvh));
    OS_TRY(os_onnx_attr_int(L, node, "qk_matmul_output_mode", &mode));
    OS_TRY(os_onnx_attr_int(L, node, "softmax_precision", &prec));
    OS_TRY(os_onnx_attr_float(L, node, "softcap", &softcap));
    int has_scale = os_onnx_attr(L->gp->node[node], "scale") != NULL;
    OS_TRY(os_onnx_attr_float(L, node, "scale", &scale_attr));
    if (L->opset >= 25) {
        OS_TRY(os_onnx_attr_int(L, node, "left_window_size", &left));
        OS_TRY(os_onnx_attr_int(L, node, "right_window_size", &right));
        if (left < -1 || right < -1)
            return BAD("window sizes must be -1 or more (%lld, %lld)", (long long)left,
                       (long long)right);
    }
    if (mode < 0 || mode > 3)
        return BAD("qk_matmul_output_mode %lld is not 0 to 3", (long long)mode);
    int q, k, v;
    OS_TRY(os_onnx_in_id(L, node, 0, &q));
    OS_TRY(os_onnx_in_id(L, node, 1, &k));
    OS_TRY(os_onnx_in_id(L, node, 2, &v));
    const opsched_shape qs = os_onnx_t(L, q)->shape, ks = os_onnx_t(L, k)->shape,
                        vs = os_onnx_t(L, v)->shape;
    opsched_dtype dt = os_onnx_t(L, q)->dtype;
    int rank3 = qs.ndim == 3;
    if (qs.ndim != ks.ndim || qs.ndim != vs.ndim || (qs.ndim != 3 && qs.ndim != 4))
        return BAD("Q, K and V must all be 3-D or all 4-D (Q has rank %d, K %d)", qs.ndim, ks.ndim);
    int64_t B = qs.d[0], D, Dk, Dv, Hq, Hkv, Sq, Skv;
    if (rank3) {
        if (qh < 1 || kvh < 1)
            return BAD("3-D inputs need q_num_heads and kv_num_heads (%lld, %lld)", (long long)qh,
                       (long long)kvh);
        Hq = qh;
        Hkv = kvh;
        Sq = qs.d[1];
        Skv = ks.d[1];
        OS_TRY(split_heads(L, node, "q", q, Hq, &D, &q));
        OS_TRY(split_heads(L, node, "k", k, Hkv, &Dk, &k));
        OS_TRY(split_heads(L, node, "v", v, Hkv, &Dv, &v));
    } else {
        Hq = qs.d[1];
        Hkv = ks.d[1];
        Sq = qs.d[2];
        Skv = ks.d[2];
        D = qs.d[3];
        Dk = ks.d[3];
        Dv = vs.d[3];
        if (vs.d[1] != Hkv || vs.d[2] != Skv)
            return BAD("V has %lld heads of %lld keys, not those of K", (long long)vs.d[1],
                       (long long)vs.d[2]);
    }
    int64_t past = -1;
    if (has_past) {
        OS_TRY(with_past(L, node, 4, "present_key", k, &past, &k));
        OS_TRY(with_past(L, node, 5, "present_value", v, &past, &v));
        Skv += past;
    }
    if (os_onnx_out(L, node, 1) >= 0) os_onnx_bind(L, node, 1, k);
    if (os_onnx_out(L, node, 2) >= 0) os_onnx_bind(L, node, 2, v);
    int64_t offset = has_past ? past : 0; /* the causal frontier: j <= i + offset */
    if (Dk != D)
        return BAD("Q's head size %lld differs from K's %lld", (long long)D, (long long)Dk);
    if (ks.d[0] != B || vs.d[0] != B)
        return BAD("Q has a batch of %lld, K of %lld", (long long)B, (long long)ks.d[0]);
    if (Hkv < 1 || Hq % Hkv != 0)
        return BAD("%lld query heads do not share %lld KV heads evenly", (long long)Hq,
                   (long long)Hkv);
    if (D < 1) return BAD("the heads are empty");
    int64_t r = Hq / Hkv, f;
    if (!os_mul_ok(B * Hq, Sq, &f) || !os_mul_ok(f, Skv, &f) || f > OS_ONNX_MAX_NUMEL)
        return BAD("the scores would be too large (%lld x %lld)", (long long)Sq, (long long)Skv);

    /* Scaled Q and K^T. */
    double scale = has_scale ? (double)scale_attr : 1.0 / sqrt((double)D);
    int s, kt, scores, t;
    OS_TRY(os_onnx_scalar(L, node, "sqrt_scale", dt, sqrt(scale), &s));
    OS_TRY(os_onnx_binop(L, node, "q_scaled", OPSCHED_OP_MUL, q, s, OS_TMP, &q));
    OS_TRY(os_onnx_binop(L, node, "k_scaled", OPSCHED_OP_MUL, k, s, OS_TMP, &k));
    static const int64_t swap[4] = {0, 1, 3, 2};
    OS_TRY(os_onnx_transpose(L, node, "k_t", k, swap, OS_TMP, &kt));
    opsched_shape grouped = shape4(B, Hkv, r * Sq, D), full = shape4(B, Hq, Sq, Skv);
    OS_TRY(os_onnx_reshape(L, node, "q_grouped", q, &grouped, OS_TMP, &q));
    OS_TRY(os_onnx_binop(L, node, "qk", OPSCHED_OP_MATMUL, q, kt, OS_TMP, &scores));
    OS_TRY(os_onnx_reshape(L, node, "qk_heads", scores, &full, OS_TMP, &scores));
    int qk[4] = {scores, scores, scores, scores};
    if (softcap > 0) {
        int cap;
        OS_TRY(os_onnx_scalar(L, node, "softcap", dt, softcap, &cap));
        OS_TRY(os_onnx_binop(L, node, "capped_in", OPSCHED_OP_DIV, scores, cap, OS_TMP, &t));
        OS_TRY(os_onnx_step(L, node, "capped_tanh", OS_TMP, OPSCHED_OP_TANH, NULL, &t, 1, 1, &t));
        OS_TRY(os_onnx_binop(L, node, "capped", OPSCHED_OP_MUL, t, cap, OS_TMP, &scores));
        qk[1] = qk[2] = scores;
    }

    /* The bias: mask, causal, window. */
    int bias = -1, guard = 0;
    if (os_onnx_in(L, node, 3) >= 0) {
        OS_TRY(mask_bias(L, node, dt, Skv, &t));
        OS_TRY(add_bias(L, node, "bias", t, &bias));
        guard = 1;
    }
    if (nonpad) {
        OS_TRY(nonpad_bias(L, node, dt, B, Sq, Skv, causal != 0, left, right, &bias));
        guard = 1;
    }
    if (causal && !nonpad) {
        OS_TRY(band(L, node, "causal", dt, Sq, Skv, 1, 1 + offset, &t));
        OS_TRY(add_bias(L, node, "bias_causal", t, &bias));
    }
    if (left >= 0 && !nonpad) {
        OS_TRY(band(L, node, "window_left", dt, Sq, Skv, 0, offset - left - 1, &t));
        OS_TRY(add_bias(L, node, "bias_left", t, &bias));
        guard = 1;
    }
    if (right >= 0 && !nonpad) {
        OS_TRY(band(L, node, "window_right", dt, Sq, Skv, 1, offset + right + 1, &t));
        OS_TRY(add_bias(L, node, "bias_right", t, &bias));
        guard = 1;
    }
    if (bias >= 0) {
        OS_TRY(os_onnx_binop(L, node, "qk_bias", OPSCHED_OP_ADD, scores, bias, OS_TMP, &scores));
        qk[2] = scores;
    }

    /* Softmax over the keys, in its own precision when asked. */
    opsched_dtype sdt = dt;
    if (prec && os_onnx_dtype(L->ctx, (int32_t)prec, "softmax", &sdt) != OPSCHED_OK) {
        opsched_ctx_clear_error(L->ctx);
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "softmax_precision %s is not supported",
                                 os_onnx_elem_name((int32_t)prec));
    }
    int p;
    OS_TRY(os_onnx_cast(L, node, "qk_precise", scores, sdt, OS_TMP, &p));
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.axis.axis = 3;
    OS_TRY(os_onnx_step(L, node, "probs", OS_TMP, OPSCHED_OP_SOFTMAX, &a, &p, 1, 1, &p));
    if (guard) {
        /* A row with no key to attend is 0, not NaN. */
        int64_t last = -1;
        int ids[3], m;
        OS_TRY(
            os_onnx_reduce(L, node, "bias_max", OPSCHED_REDUCE_MAX, bias, &last, 1, 1, OS_TMP, &m));
        OS_TRY(os_onnx_unfn(L, node, "row_masked", OPSCHED_UNARY_ISINF, 0, 1, m, OS_TMP, &ids[0]));
        OS_TRY(os_onnx_scalar(L, node, "zero_prob", sdt, 0.0, &ids[1]));
        ids[2] = p;
        OS_TRY(
            os_onnx_step(L, node, "probs_guarded", OS_TMP, OPSCHED_OP_WHERE, NULL, ids, 3, 1, &p));
    }
    OS_TRY(os_onnx_cast(L, node, "probs_cast", p, dt, OS_TMP, &p));
    qk[3] = p;

    /* Probabilities times V. */
    opsched_shape pg = shape4(B, Hkv, r * Sq, Skv), og = shape4(B, Hq, Sq, Dv);
    OS_TRY(os_onnx_reshape(L, node, "probs_grouped", p, &pg, OS_TMP, &p));
    OS_TRY(os_onnx_binop(L, node, "pv", OPSCHED_OP_MATMUL, p, v, OS_TMP, &t));
    if (os_onnx_out(L, node, 3) >= 0) os_onnx_bind(L, node, 3, qk[mode]);
    if (!rank3) return os_onnx_reshape(L, node, "out_heads", t, &og, 0, NULL);
    static const int64_t perm[4] = {0, 2, 1, 3};
    opsched_shape o3 = {.ndim = 3, .d = {B, Sq, Hq * Dv}};
    OS_TRY(os_onnx_reshape(L, node, "out_heads", t, &og, OS_TMP, &t));
    OS_TRY(os_onnx_transpose(L, node, "out_bshd", t, perm, OS_TMP, &t));
    return os_onnx_reshape(L, node, "out", t, &o3, 0, NULL);
}

/* ---- RotaryEmbedding ---------------------------------------------------------- */

static opsched_status rotary(os_loader *L, int node)
{
    int64_t interleaved = 0, rdim = 0, heads = 0;
    OS_TRY(os_onnx_attr_int(L, node, "interleaved", &interleaved));
    OS_TRY(os_onnx_attr_int(L, node, "rotary_embedding_dim", &rdim));
    OS_TRY(os_onnx_attr_int(L, node, "num_heads", &heads));
    int x, cosv, sinv;
    OS_TRY(os_onnx_in_id(L, node, 0, &x));
    OS_TRY(os_onnx_in_id(L, node, 1, &cosv));
    OS_TRY(os_onnx_in_id(L, node, 2, &sinv));
    const opsched_shape xs = os_onnx_t(L, x)->shape;
    int rank3 = xs.ndim == 3;
    if (xs.ndim != 3 && xs.ndim != 4)
        return BAD("the input must be 3-D or 4-D (it has rank %d)", xs.ndim);
    int64_t B = xs.d[0], S, H, D;
    if (rank3) {
        if (heads < 1 || xs.d[2] % heads != 0)
            return BAD("a hidden size of %lld does not split into num_heads %lld",
                       (long long)xs.d[2], (long long)heads);
        S = xs.d[1];
        H = heads;
        D = xs.d[2] / heads;
    } else {
        H = xs.d[1];
        S = xs.d[2];
        D = xs.d[3];
    }
    int64_t R = rdim > 0 ? rdim : D;
    if (R > D || R % 2 != 0)
        return BAD("rotary_embedding_dim %lld does not fit a head size of %lld", (long long)R,
                   (long long)D);
    /* Work on [B, S, H, D] (3-D) or [B, H, S, D] (4-D) with the caches
     * shaped to broadcast over the heads. */
    opsched_shape work = rank3 ? shape4(B, S, H, D) : xs;
    opsched_shape cshape = rank3 ? shape4(B, S, 1, R / 2) : shape4(B, 1, S, R / 2);
    OS_TRY(os_onnx_reshape(L, node, "x_heads", x, &work, OS_TMP, &x));
    int cs[2] = {cosv, sinv};
    for (int c = 0; c < 2; c++) {
        const char *nm = c ? "sin" : "cos";
        char tag[32];
        if (os_onnx_in(L, node, 3) >= 0) {
            int ids[2] = {cs[c], -1};
            OS_TRY(os_onnx_in_id(L, node, 3, &ids[1]));
            opsched_op_attr a;
            memset(&a, 0, sizeof(a));
            snprintf(tag, sizeof(tag), "%s_at", nm);
            OS_TRY(os_onnx_step(L, node, tag, OS_TMP, OPSCHED_OP_GATHER, &a, ids, 2, 1, &cs[c]));
        }
        const opsched_shape g = os_onnx_t(L, cs[c])->shape;
        if (g.ndim != 3 || g.d[0] != B || g.d[1] != S || g.d[2] != R / 2)
            return BAD("the %s cache does not give [batch, sequence, %lld] values", nm,
                       (long long)(R / 2));
        snprintf(tag, sizeof(tag), "%s_b", nm);
        OS_TRY(os_onnx_reshape(L, node, tag, cs[c], &cshape, OS_TMP, &cs[c]));
    }
    int rot = x, pass = -1, x1, x2;
    if (R < D) {
        OS_TRY(os_onnx_slice(L, node, "x_rot", x, 3, 0, R, 1, OS_TMP, &rot));
        OS_TRY(os_onnx_slice(L, node, "x_pass", x, 3, R, D, 1, OS_TMP, &pass));
    }
    if (interleaved) {
        OS_TRY(os_onnx_slice(L, node, "x1", rot, 3, 0, R, 2, OS_TMP, &x1));
        OS_TRY(os_onnx_slice(L, node, "x2", rot, 3, 1, R, 2, OS_TMP, &x2));
    } else {
        OS_TRY(os_onnx_slice(L, node, "x1", rot, 3, 0, R / 2, 1, OS_TMP, &x1));
        OS_TRY(os_onnx_slice(L, node, "x2", rot, 3, R / 2, R, 1, OS_TMP, &x2));
    }
    int a1, a2, real, imag;
    OS_TRY(os_onnx_binop(L, node, "cos_x1", OPSCHED_OP_MUL, cs[0], x1, OS_TMP, &a1));
    OS_TRY(os_onnx_binop(L, node, "sin_x2", OPSCHED_OP_MUL, cs[1], x2, OS_TMP, &a2));
    OS_TRY(os_onnx_binop(L, node, "real", OPSCHED_OP_SUB, a1, a2, OS_TMP, &real));
    OS_TRY(os_onnx_binop(L, node, "sin_x1", OPSCHED_OP_MUL, cs[1], x1, OS_TMP, &a1));
    OS_TRY(os_onnx_binop(L, node, "cos_x2", OPSCHED_OP_MUL, cs[0], x2, OS_TMP, &a2));
    OS_TRY(os_onnx_binop(L, node, "imag", OPSCHED_OP_ADD, a1, a2, OS_TMP, &imag));
    int done_last = R == D && !rank3;
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    int ids[2];
    if (interleaved) {
        /* [.., R/2] pairs -> [.., R/2, 2] -> [.., R]. */
        const opsched_shape hs = os_onnx_t(L, real)->shape;
        opsched_shape s5 = hs, sr = hs;
        s5.ndim = 5;
        s5.d[4] = 1;
        sr.d[3] = R;
        OS_TRY(os_onnx_reshape(L, node, "real_1", real, &s5, OS_TMP, &ids[0]));
        OS_TRY(os_onnx_reshape(L, node, "imag_1", imag, &s5, OS_TMP, &ids[1]));
        a.axis.axis = 4;
        OS_TRY(os_onnx_step(L, node, "pairs", OS_TMP, OPSCHED_OP_CONCAT, &a, ids, 2, 1, &rot));
        OS_TRY(os_onnx_reshape(L, node, "rotated", rot, &sr, done_last ? 0 : OS_TMP, &rot));
    } else {
        ids[0] = real;
        ids[1] = imag;
        a.axis.axis = 3;
        OS_TRY(os_onnx_step(L, node, "rotated", done_last ? 0 : OS_TMP, OPSCHED_OP_CONCAT, &a, ids,
                            2, 1, &rot));
    }
    if (done_last) return OPSCHED_OK;
    if (pass >= 0) {
        ids[0] = rot;
        ids[1] = pass;
        a.axis.axis = 3;
        OS_TRY(os_onnx_step(L, node, "joined", rank3 ? OS_TMP : 0, OPSCHED_OP_CONCAT, &a, ids, 2, 1,
                            &rot));
        if (!rank3) return OPSCHED_OK;
    }
    return os_onnx_reshape(L, node, "out", rot, &xs, 0, NULL);
}

static opsched_status swiglu(os_loader *L, int node)
{
    float alpha = 1.0f;
    OS_TRY(os_onnx_attr_float(L, node, "alpha", &alpha));
    int g, b, t;
    OS_TRY(os_onnx_in_id(L, node, 0, &g));
    OS_TRY(os_onnx_in_id(L, node, 1, &b));
    if (!opsched_shape_equal(&os_onnx_t(L, g)->shape, &os_onnx_t(L, b)->shape)) {
        char b1[128], b2[128];
        return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                 "the gate %s and the value %s must have one shape",
                                 opsched_shape_format(&os_onnx_t(L, g)->shape, b1, sizeof(b1)),
                                 opsched_shape_format(&os_onnx_t(L, b)->shape, b2, sizeof(b2)));
    }
    OS_TRY(os_onnx_unfn(L, node, "swish", OPSCHED_UNARY_SWISH, alpha, 0, g, OS_TMP, &t));
    return os_onnx_binop(L, node, "gated", OPSCHED_OP_MUL, t, b, 0, NULL);
}

opsched_status os_onnx_convert_attention(os_loader *L, int node, const char *op, int *done)
{
    *done = 1;
    if (strcmp(op, "Attention") == 0) return attention(L, node);
    if (strcmp(op, "RotaryEmbedding") == 0) return rotary(L, node);
    if (strcmp(op, "SwiGLU") == 0) return swiglu(L, node);
    *done = 0;
    return OPSCHED_OK;
}
