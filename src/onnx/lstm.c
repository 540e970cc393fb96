/*
 * lstm.c - LSTM (opsets 7 to 22), unrolled at load time over its static
 * sequence length:
 *
 *   layout 1: X, initial_h, initial_c transposed to sequence-major
 *   per direction d:
 *     XW = Gemm(X [S*B, I], W[d], transB) + Wb[d] + Rb[d]: every time step
 *       at once, so that each step only multiplies by R
 *     per step t (reverse: from the last):
 *       gates = XW[t] + Gemm(H, R[d], transB) (no product while H is the
 *         zero initial state)
 *       i, o, f = Sigmoid, g = Tanh (gate order i, o, f, c in W, R, B);
 *         peepholes add P_i*C and P_f*C to i and f, P_o*C_new to o; clip
 *         bounds every pre-activation
 *       C = f*C + i*g, H = o*Tanh(C)
 *   Y: the H of every step, Concat over time then directions;
 *   Y_h, Y_c: the last H and C of each direction, Concat over directions.
 *
 * The sequence length decides the number of nodes, so it must be known;
 * sequence_lens is accepted only when it gives every batch the full length.
 * Only the default activations (Sigmoid, Tanh, Tanh) are accepted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

#define BAD(...) os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, __VA_ARGS__)
#define UNSUP(...) os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, __VA_ARGS__)

/* The most inputs one Concat takes here; longer sequences are joined in
 * groups. */
#define JOIN_MAX 64

typedef struct lstm_dims {
    int64_t S, B, I, H;
    int dirs;
    float clip; /* 0: none */
} lstm_dims;

/* Concat of n tensors along axis; one tensor is itself.  With out_k >= 0
 * the result becomes output out_k. */
static opsched_status join(os_loader *L, int node, const char *tag, int *ids, int n, int axis,
                           int out_k, int *out)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    a.axis.axis = axis;
    while (n > JOIN_MAX) {
        /* Concat is associative: join runs of JOIN_MAX in place. */
        int m = 0;
        for (int k = 0; k < n; k += JOIN_MAX) {
            int c = OS_MIN(JOIN_MAX, n - k), t = ids[k];
            if (c > 1)
                OS_TRY(
                    os_onnx_step(L, node, tag, OS_TMP, OPSCHED_OP_CONCAT, &a, ids + k, c, 1, &t));
            ids[m++] = t;
        }
        n = m;
    }
    if (n == 1) {
        if (out_k >= 0) os_onnx_bind(L, node, out_k, ids[0]);
        if (out) *out = ids[0];
        return OPSCHED_OK;
    }
    return os_onnx_step(L, node, tag, out_k, OPSCHED_OP_CONCAT, &a, ids, n, 1, out);
}

/* Row d of a [dirs, ...] tensor as shape to. */
static opsched_status dir_slice(os_loader *L, int node, const char *tag, int x, int d,
                                const opsched_shape *to, int *out)
{
    char buf[48];
    snprintf(buf, sizeof(buf), "%s_dir", tag);
    OS_TRY(os_onnx_slice(L, node, buf, x, 0, d, d + 1, 1, OS_TMP, &x));
    return os_onnx_reshape(L, node, tag, x, to, OS_TMP, out);
}

/* act(clip(x)): fn is OPSCHED_OP_SIGMOID or OPSCHED_OP_TANH. */
static opsched_status activate(os_loader *L, int node, const char *tag, opsched_op_kind fn,
                               float clip, int x, int *out)
{
    char buf[48];
    if (clip > 0) {
        opsched_op_attr a;
        memset(&a, 0, sizeof(a));
        a.clip.min = -clip;
        a.clip.max = clip;
        snprintf(buf, sizeof(buf), "%s_clip", tag);
        OS_TRY(os_onnx_step(L, node, buf, OS_TMP, OPSCHED_OP_CLIP, &a, &x, 1, 1, &x));
    }
    return os_onnx_step(L, node, tag, OS_TMP, fn, NULL, &x, 1, 1, out);
}

/* Input k ([dirs, B, H] sequence-major, or [B, dirs, H] with layout 1)
 * as sequence-major; -1 when absent. */
static opsched_status initial_state(os_loader *L, int node, int k, const char *tag, int64_t layout,
                                    const lstm_dims *dm, int *out)
{
    *out = -1;
    if (os_onnx_in(L, node, k) < 0) return OPSCHED_OK;
    int x;
    OS_TRY(os_onnx_in_id(L, node, k, &x));
    const opsched_shape s = os_onnx_t(L, x)->shape;
    int64_t want0 = layout ? dm->B : dm->dirs, want1 = layout ? dm->dirs : dm->B;
    if (s.ndim != 3 || s.d[0] != want0 || s.d[1] != want1 || s.d[2] != dm->H)
        return BAD("%s must be [%lld, %lld, %lld]", tag, (long long)want0, (long long)want1,
                   (long long)dm->H);
    static const int64_t swap[3] = {1, 0, 2};
    if (layout) return os_onnx_transpose(L, node, tag, x, swap, OS_TMP, out);
    *out = x;
    return OPSCHED_OK;
}

/* Refuses what the decomposition does not express. */
static opsched_status check_attrs(os_loader *L, int node, int dirs)
{
    int64_t input_forget = 0;
    OS_TRY(os_onnx_attr_int(L, node, "input_forget", &input_forget));
    if (input_forget) return UNSUP("input_forget=1 (coupled input and forget gates)");
    const Onnx__AttributeProto *a = os_onnx_attr(L->gp->node[node], "activations");
    if (!a) return OPSCHED_OK;
    static const char *const defaults[3] = {"Sigmoid", "Tanh", "Tanh"};
    if (a->n_strings != (size_t)(3 * dirs))
        return BAD("activations lists %zu functions, %d expected", a->n_strings, 3 * dirs);
    for (size_t k = 0; k < a->n_strings; k++) {
        const char *want = defaults[k % 3];
        if (a->strings[k].len != strlen(want) ||
            memcmp(a->strings[k].data, want, a->strings[k].len) != 0)
            return UNSUP("activations other than Sigmoid, Tanh, Tanh (function %zu is '%.*s')", k,
                         (int)OS_MIN(a->strings[k].len, 32), (const char *)a->strings[k].data);
    }
    return OPSCHED_OK;
}

/* sequence_lens must be absent or S for every batch, known at load time. */
static opsched_status check_lens(os_loader *L, int node, const lstm_dims *dm)
{
    if (os_onnx_in(L, node, 4) < 0) return OPSCHED_OK;
    const os_cval *cv = os_onnx_in_cval(L, node, 4);
    if (!cv) return UNSUP("sequence_lens known only at run time (only full-length sequences)");
    if (cv->n != dm->B)
        return BAD("sequence_lens has %lld values for a batch of %lld", (long long)cv->n,
                   (long long)dm->B);
    for (int64_t b = 0; b < cv->n; b++)
        if (os_onnx_cval_int(cv, b) != dm->S)
            return UNSUP("sequence_lens[%lld] = %lld, shorter than the sequence (%lld): only "
                         "full-length sequences",
                         (long long)b, (long long)os_onnx_cval_int(cv, b), (long long)dm->S);
    return OPSCHED_OK;
}

/* The bias Wb[d] + Rb[d] as [4H]; -1 without B. */
static opsched_status dir_bias(os_loader *L, int node, int d, const lstm_dims *dm, int *out)
{
    *out = -1;
    if (os_onnx_in(L, node, 3) < 0) return OPSCHED_OK;
    int b, wb, rb;
    OS_TRY(os_onnx_in_id(L, node, 3, &b));
    const opsched_shape s = os_onnx_t(L, b)->shape;
    if (s.ndim != 2 || s.d[0] != dm->dirs || s.d[1] != 8 * dm->H)
        return BAD("B must be [%d, %lld]", dm->dirs, (long long)(8 * dm->H));
    opsched_shape row = {.ndim = 1, .d = {8 * dm->H}};
    OS_TRY(dir_slice(L, node, "bias", b, d, &row, &b));
    OS_TRY(os_onnx_slice(L, node, "bias_w", b, 0, 0, 4 * dm->H, 1, OS_TMP, &wb));
    OS_TRY(os_onnx_slice(L, node, "bias_r", b, 0, 4 * dm->H, 8 * dm->H, 1, OS_TMP, &rb));
    return os_onnx_binop(L, node, "bias_sum", OPSCHED_OP_ADD, wb, rb, OS_TMP, out);
}

/* One direction: ys[t] gets H of step t as [1, 1, B, H] (when ys is not
 * NULL), *h and *c the last state as [1, B, H]. */
static opsched_status direction(os_loader *L, int node, int d, int reverse, int x, int h0, int c0,
                                const lstm_dims *dm, int *ys, int *h_out, int *c_out)
{
    const int64_t S = dm->S, B = dm->B, H = dm->H, G = 4 * H;
    opsched_op_attr gm;
    memset(&gm, 0, sizeof(gm));
    gm.gemm.alpha = gm.gemm.beta = 1.0f;
    gm.gemm.trans_b = 1;
    int w, r, p = -1, bias, xw, ids[2];
    opsched_shape wsh = {.ndim = 2, .d = {G, dm->I}}, rsh = {.ndim = 2, .d = {G, H}};
    OS_TRY(os_onnx_in_id(L, node, 1, &w));
    OS_TRY(dir_slice(L, node, "w", w, d, &wsh, &w));
    OS_TRY(os_onnx_in_id(L, node, 2, &r));
    OS_TRY(dir_slice(L, node, "r", r, d, &rsh, &r));
    if (os_onnx_in(L, node, 7) >= 0) {
        opsched_shape psh = {.ndim = 1, .d = {3 * H}};
        OS_TRY(os_onnx_in_id(L, node, 7, &p));
        const opsched_shape s = os_onnx_t(L, p)->shape;
        if (s.ndim != 2 || s.d[0] != dm->dirs || s.d[1] != 3 * H)
            return BAD("P must be [%d, %lld]", dm->dirs, (long long)(3 * H));
        OS_TRY(dir_slice(L, node, "peep", p, d, &psh, &p));
    }
    int pi = -1, po = -1, pf = -1;
    if (p >= 0) {
        OS_TRY(os_onnx_slice(L, node, "peep_i", p, 0, 0, H, 1, OS_TMP, &pi));
        OS_TRY(os_onnx_slice(L, node, "peep_o", p, 0, H, 2 * H, 1, OS_TMP, &po));
        OS_TRY(os_onnx_slice(L, node, "peep_f", p, 0, 2 * H, 3 * H, 1, OS_TMP, &pf));
    }

    /* The input projection of every step at once. */
    ids[0] = x;
    ids[1] = w;
    OS_TRY(os_onnx_step(L, node, "xw", OS_TMP, OPSCHED_OP_GEMM, &gm, ids, 2, 1, &xw));
    OS_TRY(dir_bias(L, node, d, dm, &bias));
    if (bias >= 0) OS_TRY(os_onnx_binop(L, node, "xw_bias", OPSCHED_OP_ADD, xw, bias, OS_TMP, &xw));
    opsched_shape steps = {.ndim = 3, .d = {S, B, G}}, bg = {.ndim = 2, .d = {B, G}},
                  bh = {.ndim = 2, .d = {B, H}};
    OS_TRY(os_onnx_reshape(L, node, "xw_steps", xw, &steps, OS_TMP, &xw));

    int h = -1, c = -1;
    if (h0 >= 0) OS_TRY(dir_slice(L, node, "h0", h0, d, &bh, &h));
    if (c0 >= 0) OS_TRY(dir_slice(L, node, "c0", c0, d, &bh, &c));
    for (int64_t k = 0; k < S; k++) {
        int64_t t = reverse ? S - 1 - k : k;
        int g, i, o, f, cell, u;
        OS_TRY(os_onnx_slice(L, node, "x_t", xw, 0, t, t + 1, 1, OS_TMP, &g));
        OS_TRY(os_onnx_reshape(L, node, "x_t2", g, &bg, OS_TMP, &g));
        if (h >= 0) {
            ids[0] = h;
            ids[1] = r;
            OS_TRY(os_onnx_step(L, node, "hr", OS_TMP, OPSCHED_OP_GEMM, &gm, ids, 2, 1, &u));
            OS_TRY(os_onnx_binop(L, node, "gates", OPSCHED_OP_ADD, g, u, OS_TMP, &g));
        }
        if (p < 0) {
            /* i, o, f are contiguous: one Sigmoid for the three. */
            int iof;
            OS_TRY(os_onnx_slice(L, node, "iof_in", g, 1, 0, 3 * H, 1, OS_TMP, &iof));
            OS_TRY(activate(L, node, "iof", OPSCHED_OP_SIGMOID, dm->clip, iof, &iof));
            OS_TRY(os_onnx_slice(L, node, "i", iof, 1, 0, H, 1, OS_TMP, &i));
            OS_TRY(os_onnx_slice(L, node, "o", iof, 1, H, 2 * H, 1, OS_TMP, &o));
            OS_TRY(os_onnx_slice(L, node, "f", iof, 1, 2 * H, 3 * H, 1, OS_TMP, &f));
        } else {
            OS_TRY(os_onnx_slice(L, node, "i_in", g, 1, 0, H, 1, OS_TMP, &i));
            OS_TRY(os_onnx_slice(L, node, "o_in", g, 1, H, 2 * H, 1, OS_TMP, &o));
            OS_TRY(os_onnx_slice(L, node, "f_in", g, 1, 2 * H, 3 * H, 1, OS_TMP, &f));
            if (c >= 0) {
                OS_TRY(os_onnx_binop(L, node, "peep_ic", OPSCHED_OP_MUL, pi, c, OS_TMP, &u));
                OS_TRY(os_onnx_binop(L, node, "i_peep", OPSCHED_OP_ADD, i, u, OS_TMP, &i));
                OS_TRY(os_onnx_binop(L, node, "peep_fc", OPSCHED_OP_MUL, pf, c, OS_TMP, &u));
                OS_TRY(os_onnx_binop(L, node, "f_peep", OPSCHED_OP_ADD, f, u, OS_TMP, &f));
            }
            OS_TRY(activate(L, node, "i", OPSCHED_OP_SIGMOID, dm->clip, i, &i));
            OS_TRY(activate(L, node, "f", OPSCHED_OP_SIGMOID, dm->clip, f, &f));
        }
        OS_TRY(os_onnx_slice(L, node, "g_in", g, 1, 3 * H, G, 1, OS_TMP, &g));
        OS_TRY(activate(L, node, "g", OPSCHED_OP_TANH, dm->clip, g, &g));
        OS_TRY(os_onnx_binop(L, node, "ig", OPSCHED_OP_MUL, i, g, OS_TMP, &cell));
        if (c >= 0) {
            OS_TRY(os_onnx_binop(L, node, "fc", OPSCHED_OP_MUL, f, c, OS_TMP, &u));
            OS_TRY(os_onnx_binop(L, node, "c", OPSCHED_OP_ADD, u, cell, OS_TMP, &cell));
        }
        c = cell;
        if (p >= 0) {
            OS_TRY(os_onnx_binop(L, node, "peep_oc", OPSCHED_OP_MUL, po, c, OS_TMP, &u));
            OS_TRY(os_onnx_binop(L, node, "o_peep", OPSCHED_OP_ADD, o, u, OS_TMP, &o));
            OS_TRY(activate(L, node, "o", OPSCHED_OP_SIGMOID, dm->clip, o, &o));
        }
        OS_TRY(os_onnx_step(L, node, "c_tanh", OS_TMP, OPSCHED_OP_TANH, NULL, &c, 1, 1, &u));
        OS_TRY(os_onnx_binop(L, node, "h", OPSCHED_OP_MUL, o, u, OS_TMP, &h));
        if (ys) {
            opsched_shape y4 = {.ndim = 4, .d = {1, 1, B, H}};
            OS_TRY(os_onnx_reshape(L, node, "y_t", h, &y4, OS_TMP, &ys[t]));
        }
    }
    opsched_shape last = {.ndim = 3, .d = {1, B, H}};
    OS_TRY(os_onnx_reshape(L, node, "h_last", h, &last, OS_TMP, h_out));
    return os_onnx_reshape(L, node, "c_last", c, &last, OS_TMP, c_out);
}

static opsched_status lstm(os_loader *L, int node)
{
    int64_t hidden = 0, layout = 0;
    float clip = 0.0f;
    char dbuf[32];
    const char *dir = "forward";
    OS_TRY(os_onnx_attr_int(L, node, "hidden_size", &hidden));
    OS_TRY(os_onnx_attr_int(L, node, "layout", &layout));
    OS_TRY(os_onnx_attr_float(L, node, "clip", &clip));
    OS_TRY(os_onnx_attr_string(L, node, "direction", dbuf, sizeof(dbuf), &dir));
    int dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    if (dirs == 1 && strcmp(dir, "forward") != 0 && strcmp(dir, "reverse") != 0)
        return BAD("direction '%s' is not forward, reverse or bidirectional", dir);
    if (layout != 0 && layout != 1) return BAD("layout %lld is not 0 or 1", (long long)layout);
    if (clip < 0) return BAD("clip %g is negative", (double)clip);
    OS_TRY(check_attrs(L, node, dirs));

    int x, w, r;
    OS_TRY(os_onnx_in_id(L, node, 0, &x));
    OS_TRY(os_onnx_in_id(L, node, 1, &w));
    OS_TRY(os_onnx_in_id(L, node, 2, &r));
    const opsched_shape xs = os_onnx_t(L, x)->shape, ws = os_onnx_t(L, w)->shape,
                        rs = os_onnx_t(L, r)->shape;
    if (xs.ndim != 3) return BAD("X must be 3-D (it has rank %d)", xs.ndim);
    lstm_dims dm = {.S = xs.d[layout ? 1 : 0],
                    .B = xs.d[layout ? 0 : 1],
                    .I = xs.d[2],
                    .dirs = dirs,
                    .clip = clip};
    if (ws.ndim != 3 || ws.d[0] != dirs || ws.d[2] != dm.I || ws.d[1] % 4 != 0)
        return BAD("W must be [%d, 4*hidden, %lld]", dirs, (long long)dm.I);
    dm.H = ws.d[1] / 4;
    if (hidden > 0 && hidden != dm.H)
        return BAD("hidden_size %lld does not match W (%lld)", (long long)hidden, (long long)dm.H);
    if (dm.H < 1) return BAD("the hidden state is empty");
    if (rs.ndim != 3 || rs.d[0] != dirs || rs.d[1] != 4 * dm.H || rs.d[2] != dm.H)
        return BAD("R must be [%d, %lld, %lld]", dirs, (long long)(4 * dm.H), (long long)dm.H);
    if (dm.S < 1)
        return UNSUP("the sequence length must be known at load time and at least 1 (it is %lld)",
                     (long long)dm.S);
    if (dm.S > 4096)
        return UNSUP("a sequence of %lld steps is too long to unroll", (long long)dm.S);
    OS_TRY(check_lens(L, node, &dm));

    /* Sequence-major X as [S*B, I]. */
    static const int64_t swap[3] = {1, 0, 2};
    if (layout) OS_TRY(os_onnx_transpose(L, node, "x_seq", x, swap, OS_TMP, &x));
    opsched_shape x2 = {.ndim = 2, .d = {dm.S * dm.B, dm.I}};
    OS_TRY(os_onnx_reshape(L, node, "x_rows", x, &x2, OS_TMP, &x));
    int h0, c0;
    OS_TRY(initial_state(L, node, 5, "initial_h", layout, &dm, &h0));
    OS_TRY(initial_state(L, node, 6, "initial_c", layout, &dm, &c0));

    int want_y = os_onnx_out(L, node, 0) >= 0;
    int *ys = want_y ? calloc((size_t)(dm.S * dirs), sizeof(int)) : NULL;
    if (want_y && !ys) return OS_NOMEM(L->ctx);
    int hs[2], cs[2], ydir[2];
    opsched_status st = OPSCHED_OK;
    for (int d = 0; d < dirs; d++) {
        int reverse = d == 1 || strcmp(dir, "reverse") == 0;
        /* One forward or reverse pass in layout 0 is Y itself. */
        int y_k = dirs == 1 && !layout ? 0 : OS_TMP;
        OS_TRY_GOTO(st,
                    direction(L, node, d, reverse, x, h0, c0, &dm, ys ? ys + d * dm.S : NULL,
                              &hs[d], &cs[d]),
                    done);
        if (ys)
            OS_TRY_GOTO(st, join(L, node, "y_dir", ys + d * dm.S, (int)dm.S, 0, y_k, &ydir[d]),
                        done);
    }
    if (want_y) {
        static const int64_t batch_first4[4] = {2, 0, 1, 3};
        int y;
        OS_TRY_GOTO(st, join(L, node, "y", ydir, dirs, 1, layout ? OS_TMP : 0, &y), done);
        if (layout)
            OS_TRY_GOTO(st, os_onnx_transpose(L, node, "y_batch", y, batch_first4, 0, NULL), done);
    }
    int *last[2] = {hs, cs};
    for (int k = 0; k < 2; k++) {
        if (os_onnx_out(L, node, 1 + k) < 0) continue;
        int v;
        const char *tag = k ? "y_c" : "y_h";
        OS_TRY_GOTO(st, join(L, node, tag, last[k], dirs, 0, layout ? OS_TMP : 1 + k, &v), done);
        if (layout) OS_TRY_GOTO(st, os_onnx_transpose(L, node, tag, v, swap, 1 + k, NULL), done);
    }
done:
    free(ys);
    return st;
}

opsched_status os_onnx_convert_lstm(os_loader *L, int node, const char *op, int *done)
{
    *done = strcmp(op, "LSTM") == 0;
    return *done ? lstm(L, node) : OPSCHED_OK;
}
