/*
 * features.c - what a learned model sees of an operator configuration:
 * its parameters, its cost counts, where it sits against the device's
 * roofline, and how its work divides into thread blocks over the SMs
 * (output tiles, waves and the tail wave: the staircase that FLOPs alone
 * cannot explain).  The signature (signature.c's canonical text) is read
 * back for what the configuration record leaves out.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "predict/predict_impl.h"

const char *opsched_pred_source_name(opsched_pred_source s)
{
    switch (s) {
    case OPSCHED_SOURCE_VIEW: return "view";
    case OPSCHED_SOURCE_EXACT: return "exact";
    case OPSCHED_SOURCE_LEARNED: return "learned";
    case OPSCHED_SOURCE_ROOFLINE: return "roofline";
    default: return "none";
    }
}

const char *opsched_op_family_name(opsched_op_family f)
{
    switch (f) {
    case OPSCHED_FAMILY_CONV: return "conv";
    case OPSCHED_FAMILY_CONV_RELU: return "conv+relu";
    case OPSCHED_FAMILY_GEMM: return "gemm";
    case OPSCHED_FAMILY_OTHER: return "other";
    default: return "?";
    }
}

opsched_op_family opsched_op_family_of(const char *op, int fused_relu)
{
    if (op && strcmp(op, "conv2d") == 0)
        return fused_relu ? OPSCHED_FAMILY_CONV_RELU : OPSCHED_FAMILY_CONV;
    if (op && (strcmp(op, "linear") == 0 || strcmp(op, "matmul") == 0)) return OPSCHED_FAMILY_GEMM;
    return OPSCHED_FAMILY_OTHER;
}

/* ---- signatures ---------------------------------------------------------- */

static int parse_i64(const char *s, const char *end, int64_t *out)
{
    char buf[32];
    size_t n = (size_t)(end - s);
    if (n == 0 || n >= sizeof(buf)) return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *stop = NULL;
    errno = 0;
    long long v = strtoll(buf, &stop, 10);
    if (errno != 0 || *stop != '\0') return 0;
    *out = (int64_t)v;
    return 1;
}

/* "3,3" into up to max values; returns how many, -1 when malformed. */
static int parse_list(const char *s, const char *end, int64_t *v, int max)
{
    int n = 0;
    while (s < end) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *e = comma ? comma : end;
        int64_t x;
        if (!parse_i64(s, e, &x)) return -1;
        if (n < max) v[n] = x;
        n++;
        s = comma ? comma + 1 : end;
    }
    return n;
}

/* "1x64x56x56" or "scalar". */
static int parse_shape(const char *s, const char *end, opsched_shape *out)
{
    memset(out, 0, sizeof(*out));
    if ((size_t)(end - s) == 6 && strncmp(s, "scalar", 6) == 0) return 1;
    while (s < end) {
        const char *x = memchr(s, 'x', (size_t)(end - s));
        const char *e = x ? x : end;
        if (out->ndim >= OPSCHED_MAX_DIMS || !parse_i64(s, e, &out->d[out->ndim])) return 0;
        out->ndim++;
        s = x ? x + 1 : end;
    }
    return 1;
}

/* One "|"-separated token: an input ("x:1x3x8x8:f32", "-") or an
 * attribute ("k=3,3"). */
static int parse_token(os_sig *g, const char *t, const char *end)
{
    size_t len = (size_t)(end - t);
    if (len == 1 && *t == '-') {
        if (g->n_inputs < OS_SIG_MAX_INPUTS) g->role[g->n_inputs] = '-';
        g->n_inputs++;
        return 1;
    }
    if (len > 2 && t[1] == ':' && (t[0] == 'x' || t[0] == 'w' || t[0] == 'c')) {
        const char *colon = memchr(t + 2, ':', len - 2);
        if (!colon) return 0;
        opsched_shape sh;
        if (!parse_shape(t + 2, colon, &sh)) return 0;
        char dt[16];
        opsched_dtype dtype = OPSCHED_F32;
        snprintf(dt, sizeof(dt), "%.*s", (int)(end - colon - 1), colon + 1);
        if (opsched_dtype_from_name(dt, &dtype) != OPSCHED_OK) return 0;
        if (g->n_inputs < OS_SIG_MAX_INPUTS) {
            g->role[g->n_inputs] = t[0];
            g->shape[g->n_inputs] = sh;
            g->elem_bytes[g->n_inputs] = (int)opsched_dtype_size(dtype);
        }
        g->n_inputs++;
        int64_t n = opsched_shape_numel(&sh);
        g->in_elems_total += n;
        if (n > g->in_elems_max) g->in_elems_max = n;
        return 1;
    }
    const char *eq = memchr(t, '=', len);
    if (!eq) return 0;
    size_t klen = (size_t)(eq - t);
    const char *v = eq + 1;
#define KEY(name) (klen == strlen(name) && strncmp(t, name, klen) == 0)
    if (KEY("k")) return (g->has_k = parse_list(v, end, g->k, 2) == 2);
    if (KEY("s")) return (g->has_s = parse_list(v, end, g->s, 2) == 2);
    if (KEY("p")) return (g->has_p = parse_list(v, end, g->p, 4) == 4);
    if (KEY("d")) return (g->has_d = parse_list(v, end, g->d, 2) == 2);
    int64_t x = 0;
    if (KEY("g")) return parse_i64(v, end, &g->g);
    if (KEY("ta")) return parse_i64(v, end, &x) ? (g->ta = (int)x, 1) : 0;
    if (KEY("tb")) return parse_i64(v, end, &x) ? (g->tb = (int)x, 1) : 0;
    if (KEY("ceil")) return parse_i64(v, end, &x) ? (g->ceil_mode = (int)x, 1) : 0;
#undef KEY
    return 1; /* attributes the features do not use */
}

opsched_status os_sig_parse(opsched_ctx *ctx, const char *sig, os_sig *out)
{
    memset(out, 0, sizeof(*out));
    out->g = 1;
    out->d[0] = out->d[1] = 1;
    const char *bar = sig ? strchr(sig, '|') : NULL;
    size_t oplen = bar ? (size_t)(bar - sig) : (sig ? strlen(sig) : 0);
    char opname[40];
    if (!sig || oplen == 0 || oplen >= sizeof(opname))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "signature '%s': no operator",
                       sig ? sig : "(null)");
    memcpy(opname, sig, oplen);
    opname[oplen] = '\0';
    if (opsched_op_from_name(opname, &out->op) != OPSCHED_OK) {
        opsched_ctx_clear_error(ctx);
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "signature '%.200s': unknown operator '%s'",
                       sig, opname);
    }
    for (const char *t = bar; t && *t;) {
        t++;
        const char *end = strchr(t, '|');
        if (!end) end = t + strlen(t);
        if (!parse_token(out, t, end))
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "signature '%.200s': cannot read '%.*s'", sig, (int)(end - t), t);
        t = *end ? end : NULL;
    }
    return OPSCHED_OK;
}

/* ---- features ------------------------------------------------------------------ */

static const char *const feature_names[OPSCHED_FEATURE_COUNT] = {
    "op", "fused_relu", "batch", "in_channels", "out_channels", "kernel_h", "kernel_w",
    "stride", "padding", "groups", "height", "width", "out_height", "out_width", "flops",
    "bytes", "log2_flops", "log2_bytes", "intensity", "log2_roofline_us", "log2_intensity_ridge",
    "gemm_m", "gemm_n", "gemm_k", "gemm_count", "tiles_64x64", "waves_64x64", "tail_64x64",
    "tiles_128x128", "waves_128x128", "tail_128x128", "tiles_128x256", "waves_128x256",
    "tail_128x256", "out_elems", "ew_blocks", "ew_waves", "in_elems", "bias", "in_bytes",
    "second_bytes", "out_bytes", "spatial_align"};

enum {
    F_OP, F_FUSED, F_BATCH, F_CIN, F_COUT, F_KH, F_KW, F_STRIDE, F_PAD, F_GROUPS, F_H, F_W, F_HO,
    F_WO, F_FLOPS, F_BYTES, F_LFLOPS, F_LBYTES, F_AI, F_LROOF, F_LRIDGE, F_GM, F_GN, F_GK, F_GCOUNT,
    F_TILES0, F_EW_ELEMS = F_TILES0 + 9, F_EW_BLOCKS, F_EW_WAVES, F_IN_ELEMS, F_BIAS, F_IN_BYTES,
    F_SECOND_BYTES, F_OUT_BYTES, F_ALIGN, F_END
};

_Static_assert(F_END == OPSCHED_FEATURE_COUNT, "feature list and count disagree");
_Static_assert(F_FLOPS == OS_F_FLOPS && F_BYTES == OS_F_BYTES, "predict_impl.h disagrees");

const char *opsched_feature_name(int i)
{
    return i >= 0 && i < OPSCHED_FEATURE_COUNT ? feature_names[i] : NULL;
}

static double opt(int64_t v)
{
    return v < 0 ? NAN : (double)v;
}

static double log2_pos(double v)
{
    return v > 0 ? log2(v) : NAN;
}

/* Output spatial size of a window over n (pads a + b), like the graph's
 * shape inference. */
static int64_t window_out(int64_t n, int64_t k, int64_t s, int64_t pa, int64_t pb, int64_t d,
                          int ceil_mode)
{
    int64_t span = n + pa + pb - d * (k - 1) - 1;
    if (span < 0 || s <= 0) return -1;
    return (ceil_mode ? (span + s - 1) / s : span / s) + 1;
}

/* Tiles, waves and tail share of `count` GEMMs of m x n in tm x tn tiles. */
static void tile_features(double count, double m, double n, int tm, int tn, int sms, double *out)
{
    if (!(count > 0 && m > 0 && n > 0)) {
        out[0] = out[1] = out[2] = NAN;
        return;
    }
    double tiles = count * ceil(m / tm) * ceil(n / tn);
    out[0] = tiles;
    if (sms <= 0) {
        out[1] = out[2] = NAN;
        return;
    }
    double waves = ceil(tiles / sms);
    out[1] = waves;
    out[2] = (tiles - (waves - 1) * sms) / sms; /* the last wave's share of the SMs */
}

opsched_status opsched_features(opsched_ctx *ctx, const opsched_config_record *rec, int fused_relu,
                                const opsched_feature_device *dev,
                                double out[OPSCHED_FEATURE_COUNT])
{
    if (!rec || !dev || !out)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_features: NULL argument");
    os_sig g;
    OS_TRY(os_sig_parse(ctx, rec->signature, &g));
    for (int i = 0; i < OPSCHED_FEATURE_COUNT; i++)
        out[i] = NAN;
    out[F_OP] = (double)g.op;
    out[F_FUSED] = fused_relu ? 1 : 0;
    out[F_BATCH] = opt(rec->batch);
    out[F_CIN] = opt(rec->in_channels);
    out[F_COUT] = opt(rec->out_channels);
    out[F_STRIDE] = opt(rec->stride);
    out[F_PAD] = opt(rec->padding);
    out[F_GROUPS] = opt(rec->groups);
    out[F_H] = opt(rec->height);
    out[F_W] = opt(rec->width);
    double flops = rec->flops >= 0 ? (double)rec->flops : NAN;
    double bytes = rec->bytes >= 0 ? (double)rec->bytes : NAN;
    out[F_FLOPS] = flops;
    out[F_BYTES] = bytes;
    out[F_LFLOPS] = log2_pos(flops);
    out[F_LBYTES] = log2_pos(bytes);
    out[F_AI] = bytes > 0 ? flops / bytes : NAN;
    if (dev->peak_flops > 0 && dev->bandwidth > 0 && bytes > 0) {
        double us = fmax(flops / dev->peak_flops, bytes / dev->bandwidth) * 1e6;
        out[F_LROOF] = log2_pos(us);
        double ridge = dev->peak_flops / dev->bandwidth;
        out[F_LRIDGE] = flops > 0 ? log2(flops / bytes / ridge) : NAN;
    }
    out[F_IN_ELEMS] = g.in_elems_max > 0 ? (double)g.in_elems_max : NAN;

    const opsched_shape *x = g.n_inputs > 0 && g.role[0] != '-' ? &g.shape[0] : NULL;
    const opsched_shape *w = g.n_inputs > 1 && g.role[1] != '-' ? &g.shape[1] : NULL;
    /* How the input's spatial plane (NCHW: a channel's H x W, contiguous)
     * divides: the power of two in H x W, capped at 2^6.  Libraries pick
     * other kernels for planes that do not split into vector-wide rows:
     * cuDNN's fused 1x1 16->64 convolution at batch 8 takes 14.4 us on a
     * 55x55 map and 7.2 us on a 56x56 one (H100). */
    if (x && x->ndim == 4 && x->d[2] > 0 && x->d[3] > 0) {
        int64_t hw = x->d[2] * x->d[3];
        int tz = 0;
        while (tz < 6 && hw % 2 == 0) {
            hw /= 2;
            tz++;
        }
        out[F_ALIGN] = tz;
    }
    double gm = NAN, gn = NAN, gk = NAN, gcount = NAN, out_elems = NAN;
    switch (g.op) {
    case OPSCHED_OP_CONV:
    case OPSCHED_OP_MAXPOOL:
    case OPSCHED_OP_AVGPOOL: {
        if (!x || x->ndim != 4 || !g.has_k) break;
        out[F_KH] = (double)g.k[0];
        out[F_KW] = (double)g.k[1];
        int64_t sh = g.has_s ? g.s[0] : 1, sw = g.has_s ? g.s[1] : 1;
        int64_t p[4] = {0, 0, 0, 0};
        if (g.has_p) memcpy(p, g.p, sizeof(p));
        int ceil_mode = g.op == OPSCHED_OP_CONV ? 0 : g.ceil_mode;
        int64_t ho = window_out(x->d[2], g.k[0], sh, p[0], p[2], g.d[0], ceil_mode);
        int64_t wo = window_out(x->d[3], g.k[1], sw, p[1], p[3], g.d[1], ceil_mode);
        if (ho <= 0 || wo <= 0) break;
        out[F_HO] = (double)ho;
        out[F_WO] = (double)wo;
        double n = (double)x->d[0], c = (double)x->d[1];
        if (g.op == OPSCHED_OP_CONV && w && w->ndim == 4) {
            double groups = g.g > 0 ? (double)g.g : 1;
            double cout = (double)w->d[0];
            gm = n * (double)ho * (double)wo;
            gn = cout / groups;
            gk = (double)w->d[1] * (double)g.k[0] * (double)g.k[1];
            gcount = groups;
            out_elems = n * cout * (double)ho * (double)wo;
        } else {
            out_elems = n * c * (double)ho * (double)wo;
        }
        break;
    }
    case OPSCHED_OP_GEMM:
        if (!x || !w || x->ndim != 2 || w->ndim != 2) break;
        gm = (double)(g.ta ? x->d[1] : x->d[0]);
        gk = (double)(g.ta ? x->d[0] : x->d[1]);
        gn = (double)(g.tb ? w->d[0] : w->d[1]);
        gcount = 1;
        out_elems = gm * gn;
        break;
    case OPSCHED_OP_MATMUL: {
        if (!x || !w || x->ndim < 2 || w->ndim < 2) break;
        gm = (double)x->d[x->ndim - 2];
        gk = (double)x->d[x->ndim - 1];
        gn = (double)w->d[w->ndim - 1];
        double ba = 1, bb = 1;
        for (int i = 0; i < x->ndim - 2; i++) ba *= (double)x->d[i];
        for (int i = 0; i < w->ndim - 2; i++) bb *= (double)w->d[i];
        gcount = fmax(ba, bb);
        out_elems = gcount * gm * gn;
        break;
    }
    case OPSCHED_OP_GLOBALAVGPOOL:
    case OPSCHED_OP_GLOBALMAXPOOL:
        if (x && x->ndim >= 2) out_elems = (double)x->d[0] * (double)x->d[1];
        break;
    case OPSCHED_OP_CONCAT:
        out_elems = (double)g.in_elems_total;
        break;
    default:
        out_elems = g.in_elems_max > 0 ? (double)g.in_elems_max : NAN;
        break;
    }
    out[F_GM] = gm;
    out[F_GN] = gn;
    out[F_GK] = gk;
    out[F_GCOUNT] = gcount;
    static const int tiles[3][2] = {{64, 64}, {128, 128}, {128, 256}};
    for (int i = 0; i < 3; i++)
        tile_features(gcount, gm, gn, tiles[i][0], tiles[i][1], dev->sm_count,
                      &out[F_TILES0 + 3 * i]);
    out[F_EW_ELEMS] = out_elems;
    /* A convolution's or Gemm's bias (the third input) is an epilogue or a
     * pass of its own over the output, depending on the library. */
    if (g.op == OPSCHED_OP_CONV || g.op == OPSCHED_OP_GEMM)
        out[F_BIAS] = g.n_inputs > 2 && g.role[2] != '-' ? 1 : 0;
    int eb = x ? g.elem_bytes[0] : 4;
    if (x) out[F_IN_BYTES] = (double)opsched_shape_numel(x) * eb;
    if (w) out[F_SECOND_BYTES] = (double)opsched_shape_numel(w) * g.elem_bytes[1];
    if (out_elems > 0) out[F_OUT_BYTES] = out_elems * eb;
    if (out_elems > 0) {
        double blocks = ceil(out_elems / 1024.0);
        out[F_EW_BLOCKS] = blocks;
        out[F_EW_WAVES] = dev->sm_count > 0 ? ceil(blocks / dev->sm_count) : NAN;
    }
    return OPSCHED_OK;
}

/* ---- string map ----------------------------------------------------------------- */

uint64_t os_hash64(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static size_t slot_of(const os_map *m, const char *key)
{
    size_t mask = m->cap - 1, i = (size_t)os_hash64(key) & mask;
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & mask;
    return i;
}

int64_t os_map_get(const os_map *m, const char *key)
{
    if (!m->cap) return -1;
    size_t i = slot_of(m, key);
    return m->keys[i] ? m->values[i] : -1;
}

static opsched_status map_grow(opsched_ctx *ctx, os_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    os_map n = {calloc(cap, sizeof(char *)), calloc(cap, sizeof(int64_t)), cap, m->count};
    if (!n.keys || !n.values) {
        free(n.keys);
        free(n.values);
        return OS_NOMEM(ctx);
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t j = slot_of(&n, m->keys[i]);
        n.keys[j] = m->keys[i];
        n.values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    *m = n;
    return OPSCHED_OK;
}

opsched_status os_map_put(opsched_ctx *ctx, os_map *m, const char *key, int64_t value)
{
    if ((m->count + 1) * 2 > m->cap) OS_TRY(map_grow(ctx, m));
    size_t i = slot_of(m, key);
    if (!m->keys[i]) {
        OS_TRY(os_strdup(ctx, key, &m->keys[i]));
        m->count++;
    }
    m->values[i] = value;
    return OPSCHED_OK;
}

void os_map_free(os_map *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof(*m));
}
