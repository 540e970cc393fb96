/*
 * registry.c - the public backend API over the backends' function tables:
 * which backends this build has, and the generic device, stream, buffer,
 * plan and timer objects that carry a backend's opaque handles; device
 * graphs for the executor.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "core/error.h"
#include "core/half.h"
#include "core/util.h"

struct opsched_device {
    const os_backend_iface *be;
    opsched_ctx *ctx;
    void *impl;
    int index;
    /* Device properties do not change while it is open; the query costs
     * the driver a round trip (cudaGetDeviceProperties), so ask once. */
    opsched_device_info info;
    int info_valid;
    struct opsched_stream *default_stream;
};

struct opsched_stream {
    opsched_device *dev;
    void *impl; /* NULL: the device's default stream */
};

struct opsched_buffer {
    opsched_device *dev;
    void *ptr;
    size_t size;
    int owner; /* 1: ptr was allocated for this buffer; 0: a view inside another */
};

struct opsched_plan {
    opsched_device *dev;
    void *impl;
    opsched_plan_info info;
    int n_inputs, n_outputs;
};

struct opsched_timer {
    opsched_device *dev;
    void *impl;
};

struct opsched_event {
    opsched_device *dev;
    void *impl; /* NULL on backends without events */
};

static const os_backend_iface *const backends[] = {
#ifdef OPSCHED_HAVE_CUDA
    &os_backend_cuda,
#endif
#ifdef OPSCHED_HAVE_DNNL
    &os_backend_cpu,
#endif
    NULL};

#define N_BACKENDS ((int)(sizeof(backends) / sizeof(backends[0])) - 1)

int opsched_backend_count(void) { return N_BACKENDS; }

const char *opsched_backend_name(int i)
{
    return i >= 0 && i < N_BACKENDS ? backends[i]->name : NULL;
}

static opsched_status find_backend(opsched_ctx *ctx, const char *name,
                                   const os_backend_iface **out)
{
    for (int i = 0; i < N_BACKENDS; i++) {
        if (name && strcmp(backends[i]->name, name) == 0) {
            *out = backends[i];
            return OPSCHED_OK;
        }
    }
    char have[64] = "";
    for (int i = 0; i < N_BACKENDS; i++) {
        strncat(have, i ? ", " : "", sizeof(have) - strlen(have) - 1);
        strncat(have, backends[i]->name, sizeof(have) - strlen(have) - 1);
    }
    return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND, "no backend '%s' in this build (it has: %s)",
                   name ? name : "(null)", N_BACKENDS ? have : "none");
}

static const char *const math_names[OPSCHED_MATH_COUNT] = {"fp32", "tf32", "fp16", "bf16"};

const char *opsched_math_name(opsched_math m)
{
    return (int)m >= 0 && m < OPSCHED_MATH_COUNT ? math_names[m] : "?";
}

opsched_status opsched_math_from_name(const char *name, opsched_math *out)
{
    for (int i = 0; name && i < OPSCHED_MATH_COUNT; i++) {
        if (strcmp(name, math_names[i]) == 0) {
            *out = (opsched_math)i;
            return OPSCHED_OK;
        }
    }
    return OPSCHED_ERR_NOT_FOUND;
}

opsched_dtype opsched_math_dtype(opsched_math m)
{
    return m == OPSCHED_MATH_FP16 ? OPSCHED_F16 : m == OPSCHED_MATH_BF16 ? OPSCHED_BF16 : OPSCHED_F32;
}

opsched_status opsched_device_count(opsched_ctx *ctx, const char *backend, int *out)
{
    const os_backend_iface *be = NULL;
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "device_count: out is NULL");
    *out = 0;
    OS_TRY(find_backend(ctx, backend, &be));
    return be->device_count(ctx, out);
}

opsched_status opsched_device_open(opsched_ctx *ctx, const char *backend, int index,
                                   opsched_device **out)
{
    const os_backend_iface *be = NULL;
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "device_open: out is NULL");
    *out = NULL;
    OS_TRY(find_backend(ctx, backend, &be));
    int n = 0;
    OS_TRY(be->device_count(ctx, &n));
    if (index < 0 || index >= n)
        return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND, "%s device %d does not exist (%d visible)",
                       be->name, index, n);
    opsched_device *d = calloc(1, sizeof(*d));
    opsched_stream *s = calloc(1, sizeof(*s));
    if (!d || !s) {
        free(d);
        free(s);
        return OS_NOMEM(ctx);
    }
    opsched_status st = be->device_open(ctx, index, &d->impl);
    if (st != OPSCHED_OK) {
        free(d);
        free(s);
        return st;
    }
    d->be = be;
    d->ctx = ctx;
    d->index = index;
    s->dev = d;
    d->default_stream = s;
    *out = d;
    return OPSCHED_OK;
}

void opsched_device_close(opsched_device *dev)
{
    if (!dev) return;
    dev->be->device_close(dev->impl);
    free(dev->default_stream);
    free(dev);
}

opsched_ctx *opsched_device_ctx(const opsched_device *dev) { return dev ? dev->ctx : NULL; }

void opsched_device_plan_cache_stats(const opsched_device *dev, opsched_plan_cache_stats *out)
{
    if (!out) return;
    memset(out, 0, sizeof(*out));
    if (dev && dev->be->plan_cache_stats) dev->be->plan_cache_stats(dev->impl, out);
}

opsched_status opsched_device_info_get(opsched_device *dev, opsched_device_info *out)
{
    if (!dev || !out) return OPSCHED_ERR_INVALID_ARG;
    if (!dev->info_valid) {
        memset(&dev->info, 0, sizeof(dev->info));
        OS_TRY(dev->be->device_info(dev->ctx, dev->impl, &dev->info));
        snprintf(dev->info.backend, sizeof(dev->info.backend), "%s", dev->be->name);
        dev->info.index = dev->index;
        dev->info_valid = 1;
    }
    *out = dev->info;
    return OPSCHED_OK;
}

opsched_status opsched_device_sync(opsched_device *dev)
{
    if (!dev) return OPSCHED_ERR_INVALID_ARG;
    return dev->be->device_sync(dev->ctx, dev->impl);
}

opsched_status opsched_device_conv_algos(opsched_device *dev, const char *const **names, int *n)
{
    if (!dev || !names || !n) return OPSCHED_ERR_INVALID_ARG;
    *names = dev->be->conv_algos;
    *n = dev->be->conv_algos ? dev->be->n_conv_algos : 0;
    return OPSCHED_OK;
}

opsched_status os_device_power_with(opsched_device *dev, opsched_ctx *ctx,
                                    opsched_power_sample *out)
{
    if (!dev || !out) return OPSCHED_ERR_INVALID_ARG;
    out->power_w = out->energy_mj = out->temperature_c = out->sm_clock_mhz = NAN;
    if (!dev->be->power)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "%s device has no power sensor",
                       dev->be->name);
    return dev->be->power(ctx, dev->impl, out);
}

opsched_status opsched_device_power(opsched_device *dev, opsched_power_sample *out)
{
    return os_device_power_with(dev, dev ? dev->ctx : NULL, out);
}

/* ---- streams -------------------------------------------------------- */

opsched_status opsched_stream_create(opsched_device *dev, opsched_stream **out)
{
    if (!dev || !out) return OPSCHED_ERR_INVALID_ARG;
    opsched_stream *s = calloc(1, sizeof(*s));
    if (!s) return OS_NOMEM(dev->ctx);
    opsched_status st = dev->be->stream_create(dev->ctx, dev->impl, &s->impl);
    if (st != OPSCHED_OK) {
        free(s);
        return st;
    }
    s->dev = dev;
    *out = s;
    return OPSCHED_OK;
}

void opsched_stream_free(opsched_stream *s)
{
    if (!s || s == s->dev->default_stream) return;
    s->dev->be->stream_free(s->dev->impl, s->impl);
    free(s);
}

opsched_stream *opsched_device_stream(opsched_device *dev)
{
    return dev ? dev->default_stream : NULL;
}

opsched_status opsched_stream_sync(opsched_stream *s)
{
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    return s->dev->be->stream_sync(s->dev->ctx, s->dev->impl, s->impl);
}

/* ---- events --------------------------------------------------------- */

static int has_events(const opsched_device *dev)
{
    return dev->be->event_create && dev->be->event_free && dev->be->event_record &&
           dev->be->stream_wait;
}

opsched_status opsched_event_create(opsched_device *dev, opsched_event **out)
{
    if (!dev || !out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    opsched_event *e = calloc(1, sizeof(*e));
    if (!e) return OS_NOMEM(dev->ctx);
    e->dev = dev;
    if (has_events(dev)) {
        opsched_status st = dev->be->event_create(dev->ctx, dev->impl, &e->impl);
        if (st != OPSCHED_OK) {
            free(e);
            return st;
        }
    }
    *out = e;
    return OPSCHED_OK;
}

void opsched_event_free(opsched_event *e)
{
    if (!e) return;
    if (e->impl) e->dev->be->event_free(e->dev->impl, e->impl);
    free(e);
}

opsched_status opsched_event_record(opsched_event *e, opsched_stream *s)
{
    if (!e) return OPSCHED_ERR_INVALID_ARG;
    if (!s) s = e->dev->default_stream;
    if (s->dev != e->dev)
        return OS_FAIL(e->dev->ctx, OPSCHED_ERR_INVALID_ARG, "event: stream of another device");
    if (!e->impl) return OPSCHED_OK;
    return e->dev->be->event_record(e->dev->ctx, e->dev->impl, e->impl, s->impl);
}

opsched_status opsched_stream_wait_event(opsched_stream *s, opsched_event *e)
{
    if (!s || !e) return OPSCHED_ERR_INVALID_ARG;
    if (s->dev != e->dev)
        return OS_FAIL(e->dev->ctx, OPSCHED_ERR_INVALID_ARG, "event: stream of another device");
    if (!e->impl) return OPSCHED_OK;
    return e->dev->be->stream_wait(e->dev->ctx, e->dev->impl, s->impl, e->impl);
}

/* ---- buffers -------------------------------------------------------- */

static opsched_status check_range(const opsched_buffer *b, size_t offset, size_t bytes)
{
    if (offset > b->size || bytes > b->size - offset)
        return OS_FAIL(b->dev->ctx, OPSCHED_ERR_INVALID_ARG,
                       "buffer access [%zu, +%zu) outside its %zu bytes", offset, bytes, b->size);
    return OPSCHED_OK;
}

opsched_status opsched_buffer_alloc(opsched_device *dev, size_t bytes, opsched_buffer **out)
{
    if (!dev || !out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    opsched_buffer *b = calloc(1, sizeof(*b));
    if (!b) return OS_NOMEM(dev->ctx);
    opsched_status st = dev->be->mem_alloc(dev->ctx, dev->impl, bytes ? bytes : 1, &b->ptr);
    if (st != OPSCHED_OK) {
        free(b);
        return st;
    }
    b->dev = dev;
    b->size = bytes;
    b->owner = 1;
    *out = b;
    return OPSCHED_OK;
}

opsched_status opsched_buffer_view(opsched_buffer *parent, size_t offset, size_t bytes,
                                   opsched_buffer **out)
{
    if (!parent || !out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    OS_TRY(check_range(parent, offset, bytes));
    opsched_buffer *b = calloc(1, sizeof(*b));
    if (!b) return OS_NOMEM(parent->dev->ctx);
    b->dev = parent->dev;
    b->ptr = (char *)parent->ptr + offset;
    b->size = bytes;
    b->owner = 0;
    *out = b;
    return OPSCHED_OK;
}

void opsched_buffer_free(opsched_buffer *b)
{
    if (!b) return;
    if (b->owner) b->dev->be->mem_free(b->dev->impl, b->ptr);
    free(b);
}

size_t opsched_buffer_size(const opsched_buffer *b) { return b ? b->size : 0; }

opsched_status opsched_buffer_upload(opsched_buffer *b, size_t offset, const void *src,
                                     size_t bytes)
{
    if (!b || (!src && bytes)) return OPSCHED_ERR_INVALID_ARG;
    OS_TRY(check_range(b, offset, bytes));
    return b->dev->be->mem_upload(b->dev->ctx, b->dev->impl, (char *)b->ptr + offset, src, bytes);
}

opsched_status opsched_buffer_download(const opsched_buffer *b, size_t offset, void *dst,
                                       size_t bytes)
{
    if (!b || (!dst && bytes)) return OPSCHED_ERR_INVALID_ARG;
    OS_TRY(check_range(b, offset, bytes));
    return b->dev->be->mem_download(b->dev->ctx, b->dev->impl, dst, (char *)b->ptr + offset,
                                    bytes);
}

opsched_status opsched_buffer_fill_random(opsched_buffer *b, opsched_dtype dt, uint64_t seed)
{
    if (!b) return OPSCHED_ERR_INVALID_ARG;
    size_t esz = opsched_dtype_size(dt);
    if (!esz) return OS_FAIL(b->dev->ctx, OPSCHED_ERR_INVALID_ARG, "fill_random: bad dtype");
    if (b->dev->be->mem_fill_random)
        return b->dev->be->mem_fill_random(b->dev->ctx, b->dev->impl, b->ptr, b->size, dt, seed);
    size_t n = b->size / esz;
    unsigned char *host = malloc(b->size ? b->size : 1);
    if (!host) return OS_NOMEM(b->dev->ctx);
    os_rng rng;
    os_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) {
        switch (dt) {
        case OPSCHED_F32: {
            float v = os_rng_sym(&rng);
            memcpy(host + 4 * i, &v, 4);
            break;
        }
        case OPSCHED_F16: {
            uint16_t h = os_f32_to_f16(os_rng_sym(&rng));
            memcpy(host + 2 * i, &h, 2);
            break;
        }
        case OPSCHED_BF16: {
            uint16_t h = os_f32_to_bf16(os_rng_sym(&rng));
            memcpy(host + 2 * i, &h, 2);
            break;
        }
        case OPSCHED_INT8:
        case OPSCHED_UINT8: host[i] = (unsigned char)(os_rng_next(&rng) & 0xff); break;
        case OPSCHED_BOOL: host[i] = (unsigned char)(os_rng_next(&rng) & 1); break;
        case OPSCHED_INT32: {
            int32_t k = (int32_t)(os_rng_next(&rng) % 7);
            memcpy(host + 4 * i, &k, 4);
            break;
        }
        case OPSCHED_INT64: {
            int64_t k = (int64_t)(os_rng_next(&rng) % 7);
            memcpy(host + 8 * i, &k, 8);
            break;
        }
        default: break; /* every type is above */
        }
    }
    memset(host + n * esz, 0, b->size - n * esz);
    opsched_status st = opsched_buffer_upload(b, 0, host, b->size);
    free(host);
    return st;
}

/* ---- plans ---------------------------------------------------------- */

static const struct {
    const char *name;
    unsigned bit;
} ablations[] = {{"depthwise", OPSCHED_ABLATE_DEPTHWISE},
                 {"epilogue", OPSCHED_ABLATE_EPILOGUE},
                 {"engines", OPSCHED_ABLATE_ENGINES},
                 {"reductions", OPSCHED_ABLATE_REDUCTIONS},
                 {"chains", OPSCHED_ABLATE_CHAINS},
                 {"residual", OPSCHED_ABLATE_RESIDUAL},
                 {"layout", OPSCHED_ABLATE_LAYOUT},
                 {"se", OPSCHED_ABLATE_SE},
                 {"bias", OPSCHED_ABLATE_BIAS},
                 {"attention", OPSCHED_ABLATE_ATTENTION},
                 {"projections", OPSCHED_ABLATE_PROJECTIONS},
                 {"tensor-cores", OPSCHED_ABLATE_TENSOR_CORES},
                 {"cudnn-attention", OPSCHED_ABLATE_CUDNN_ATTENTION},
                 {"conv-gemm", OPSCHED_ABLATE_CONV_GEMM},
                 {"movement", OPSCHED_ABLATE_MOVEMENT},
                 {"se-split", OPSCHED_ABLATE_SE_SPLIT},
                 {"gemm-tuning", OPSCHED_ABLATE_GEMM_TUNING},
                 {"se-mul", OPSCHED_ABLATE_SE_MUL},
                 {"im2col", OPSCHED_ABLATE_IM2COL},
                 {"norm-act", OPSCHED_ABLATE_NORM_ACT},
                 {"layer-scale", OPSCHED_ABLATE_LAYER_SCALE},
                 {"conv-norm", OPSCHED_ABLATE_CONV_NORM},
                 {"act-prologue", OPSCHED_ABLATE_PROLOGUE},
                 {"gate-product", OPSCHED_ABLATE_GATE},
                 {"concat-gather", OPSCHED_ABLATE_CONCAT_GATHER},
                 {"matmul-graph", OPSCHED_ABLATE_MATMUL_GRAPH},
                 {"pool-vec", OPSCHED_ABLATE_POOL_VEC},
                 {"norm-concat", OPSCHED_ABLATE_NORM_CONCAT},
                 {"pdl", OPSCHED_ABLATE_PDL},
                 {"igemm", OPSCHED_ABLATE_IGEMM},
                 {"none", 0}};

void opsched_ablation_names(unsigned bits, const char *sep, char *buf, size_t size)
{
    size_t n = 0;
    if (!buf || size == 0) return;
    buf[0] = '\0';
    for (size_t k = 0; k < OS_ARRAY_LEN(ablations); k++) {
        if (!(bits & ablations[k].bit)) continue;
        int w = snprintf(buf + n, size - n, "%s%s", n ? sep : "", ablations[k].name);
        if (w < 0 || (size_t)w >= size - n) return;
        n += (size_t)w;
    }
}

opsched_status opsched_ablation_parse(opsched_ctx *ctx, const char *list, unsigned *out)
{
    unsigned bits = 0;
    const char *p = list ? list : "";
    if (!*p) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "an empty list of ablations");
    while (*p) {
        size_t n = strcspn(p, ",");
        size_t k = 0;
        while (k < OS_ARRAY_LEN(ablations) && (strlen(ablations[k].name) != n ||
                                               strncmp(ablations[k].name, p, n) != 0))
            k++;
        if (k == OS_ARRAY_LEN(ablations)) {
            char names[512];
            opsched_ablation_names(~0u, ", ", names, sizeof(names));
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "unknown ablation '%.*s' (%s or none)",
                           (int)n, p, names);
        }
        bits |= ablations[k].bit;
        p += n;
        if (*p == ',') p++;
    }
    *out = bits;
    return OPSCHED_OK;
}

opsched_status opsched_plan_create(opsched_device *dev, const opsched_graph *g, int node,
                                   const opsched_plan_options *opts, opsched_plan **out)
{
    if (!dev || !g || !out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    const opsched_node *n = opsched_graph_node(g, node);
    if (!n) return OS_FAIL(dev->ctx, OPSCHED_ERR_INVALID_ARG, "plan: node %d does not exist", node);
    opsched_plan_options def;
    memset(&def, 0, sizeof(def));
    if (!opts) opts = &def;
    if ((int)opts->math < 0 || opts->math >= OPSCHED_MATH_COUNT)
        return OS_FAIL(dev->ctx, OPSCHED_ERR_INVALID_ARG, "plan: bad math mode");
    opsched_plan *p = calloc(1, sizeof(*p));
    if (!p) return OS_NOMEM(dev->ctx);
    opsched_status st = dev->be->plan_create(dev->ctx, dev->impl, g, node, opts, &p->impl, &p->info);
    if (st != OPSCHED_OK) {
        free(p);
        return st;
    }
    p->dev = dev;
    p->n_inputs = p->info.fused_residual ? 4 : n->n_inputs; /* r is input 3 */
    /* A fused form the backend ran without being asked: a plan whose
     * inputs the caller would not give as it reads them, refused. */
    const char *unasked = NULL;
    if (p->info.fused_chain) { /* the chain's side operands after the node's inputs */
        opsched_ew_chain c;
        int sides[OPSCHED_CHAIN_MAX];
        if (!opts->fuse_chain || !opsched_ew_chain_find(g, node, &c) ||
            c.n != p->info.fused_chain)
            unasked = "ran a chain";
        else
            p->n_inputs = n->n_inputs + opsched_ew_chain_sides(g, &c, sides);
    }
    if (!unasked && p->info.fused_bias) { /* the bias after A and B */
        opsched_matmul_bias mb;
        if (!opts->fuse_bias || !opsched_matmul_bias_find(g, node, &mb))
            unasked = "fused a bias";
        else
            p->n_inputs = p->info.fused_residual ? 4 : 3; /* r after the bias */
    }
    if (!unasked && p->info.fused_norm_concat) { /* the norm's parameters, then the rest */
        int c = opts->norm_concat ? opsched_norm_concat(g, node) : -1;
        if (c < 0 || opsched_graph_node(g, c)->n_inputs != p->info.fused_norm_concat ||
            p->info.fused_chain || p->info.fused_se || p->info.fused_bias)
            unasked = "read a Concat's inputs";
        else
            p->n_inputs = 4 + p->info.fused_norm_concat;
    }
    if (!unasked && p->info.fused_se) { /* W1, b1, W2, b2 after the mean's inputs */
        opsched_se_gate se;
        if (!opts->fuse_se || p->info.fused_chain || !opsched_se_gate_find(g, node, &se) ||
            (se.n != p->info.fused_se &&
             !(opts->fuse_se == 2 && se.mul >= 0 && p->info.fused_se == se.n + 1)))
            unasked = "ran a gate";
        else
            p->n_inputs = n->n_inputs + 4;
    }
    if (!unasked && p->info.fused_movement) { /* the run's source, its only input */
        int c = p->info.fused_concat && opts->move_path && opts->n_move_path > 0
                    ? opsched_move_concat(g, opts->move_path[0])
                    : -1;
        if (!opts->move_path || opts->n_move_path != p->info.fused_movement ||
            opts->move_path[opts->n_move_path - 1] != node || p->info.fused_chain ||
            p->info.fused_se || p->info.fused_bias)
            unasked = "gathered a run";
        else if (p->info.fused_concat && (!opts->move_concat || c < 0 ||
                                          opsched_graph_node(g, c)->n_inputs !=
                                              p->info.fused_concat))
            unasked = "gathered from a Concat's inputs";
        else /* or the Concat's inputs */
            p->n_inputs = p->info.fused_concat ? p->info.fused_concat : 1;
    }
    if (!unasked && p->info.fused_norm) { /* the norm's scale and bias after x, w and the bias */
        if (!opts->fuse_norm || p->info.fused_residual || p->info.fused_activation ||
            !opsched_conv_norm_find(g, node, NULL))
            unasked = "fused a LayerNormalization";
        else
            p->n_inputs = 5;
    }
    if (!unasked && p->info.fused_prologue &&
        (!opts->fuse_prologue || !opsched_conv_prologue_find(g, node, NULL)))
        unasked = "applied an input activation";
    if (!unasked && p->info.fused_gate) { /* the scale as input 5 */
        if (!opts->fuse_gate || p->info.fused_norm || !opsched_conv_gate_find(g, node, NULL))
            unasked = "applied an input gate";
        else
            p->n_inputs = 6;
    }
    if (unasked) {
        dev->be->plan_free(dev->impl, p->impl);
        free(p);
        return OS_FAIL(dev->ctx, OPSCHED_ERR_BACKEND,
                       "plan: node '%s': the backend %s it was not asked for", n->name, unasked);
    }
    p->n_outputs = n->n_outputs;
    *out = p;
    return OPSCHED_OK;
}

void opsched_plan_free(opsched_plan *p)
{
    if (!p) return;
    p->dev->be->plan_free(p->dev->impl, p->impl);
    free(p);
}

opsched_status opsched_plan_info_get(const opsched_plan *p, opsched_plan_info *out)
{
    if (!p || !out) return OPSCHED_ERR_INVALID_ARG;
    *out = p->info;
    return OPSCHED_OK;
}

#define OS_PLAN_MAX_IO 128

opsched_status opsched_plan_launch(opsched_plan *p, opsched_stream *s,
                                   opsched_buffer *const *inputs, opsched_buffer *const *outputs)
{
    if (!p || (!inputs && p->n_inputs) || !outputs) return OPSCHED_ERR_INVALID_ARG;
    if (p->n_inputs > OS_PLAN_MAX_IO || p->n_outputs > OS_PLAN_MAX_IO)
        return OS_FAIL(p->dev->ctx, OPSCHED_ERR_UNSUPPORTED, "plan: too many inputs or outputs");
    if (!s) s = p->dev->default_stream;
    if (s->dev != p->dev)
        return OS_FAIL(p->dev->ctx, OPSCHED_ERR_INVALID_ARG, "plan: stream of another device");
    void *in[OS_PLAN_MAX_IO], *out[OS_PLAN_MAX_IO];
    for (int i = 0; i < p->n_inputs; i++) in[i] = inputs[i] ? inputs[i]->ptr : NULL;
    for (int i = 0; i < p->n_outputs; i++) {
        if (!outputs[i]) return OS_FAIL(p->dev->ctx, OPSCHED_ERR_INVALID_ARG, "plan: output %d missing", i);
        out[i] = outputs[i]->ptr;
    }
    return p->dev->be->plan_launch(p->dev->ctx, p->dev->impl, p->impl, s->impl, in, out);
}

/* ---- timers --------------------------------------------------------- */

opsched_status opsched_timer_create(opsched_device *dev, opsched_timer **out)
{
    if (!dev || !out) return OPSCHED_ERR_INVALID_ARG;
    opsched_timer *t = calloc(1, sizeof(*t));
    if (!t) return OS_NOMEM(dev->ctx);
    opsched_status st = dev->be->timer_create(dev->ctx, dev->impl, &t->impl);
    if (st != OPSCHED_OK) {
        free(t);
        return st;
    }
    t->dev = dev;
    *out = t;
    return OPSCHED_OK;
}

void opsched_timer_free(opsched_timer *t)
{
    if (!t) return;
    t->dev->be->timer_free(t->dev->impl, t->impl);
    free(t);
}

opsched_status opsched_timer_start(opsched_timer *t, opsched_stream *s)
{
    if (!t) return OPSCHED_ERR_INVALID_ARG;
    if (!s) s = t->dev->default_stream;
    return t->dev->be->timer_mark(t->dev->ctx, t->dev->impl, t->impl, s->impl, 0);
}

opsched_status opsched_timer_stop(opsched_timer *t, opsched_stream *s)
{
    if (!t) return OPSCHED_ERR_INVALID_ARG;
    if (!s) s = t->dev->default_stream;
    return t->dev->be->timer_mark(t->dev->ctx, t->dev->impl, t->impl, s->impl, 1);
}

opsched_status opsched_timer_between_ms(opsched_timer *a, opsched_timer *b, double *ms)
{
    if (!a || !b || !ms || a->dev != b->dev) return OPSCHED_ERR_INVALID_ARG;
    return a->dev->be->timer_between(a->dev->ctx, a->dev->impl, a->impl, b->impl, ms);
}

opsched_status opsched_timer_elapsed_ms(opsched_timer *t, double *ms)
{
    if (!t || !ms) return OPSCHED_ERR_INVALID_ARG;
    return t->dev->be->timer_elapsed(t->dev->ctx, t->dev->impl, t->impl, ms);
}

/* ---- device graphs ---------------------------------------------------- */

static opsched_status graphs_supported(const opsched_device *dev)
{
    if (!dev->be->graph_begin || !dev->be->graph_end || !dev->be->graph_launch ||
        !dev->be->graph_free)
        return OS_FAIL(dev->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "the %s backend cannot capture work into a device graph", dev->be->name);
    return OPSCHED_OK;
}

opsched_status os_stream_graph_begin(opsched_stream *s)
{
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    OS_TRY(graphs_supported(s->dev));
    return s->dev->be->graph_begin(s->dev->ctx, s->dev->impl, s->impl);
}

opsched_status os_stream_graph_end(opsched_stream *s, void **graph)
{
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (graph) *graph = NULL;
    OS_TRY(graphs_supported(s->dev));
    return s->dev->be->graph_end(s->dev->ctx, s->dev->impl, s->impl, graph);
}

opsched_status os_stream_graph_launch(opsched_stream *s, void *graph)
{
    if (!s || !graph) return OPSCHED_ERR_INVALID_ARG;
    OS_TRY(graphs_supported(s->dev));
    return s->dev->be->graph_launch(s->dev->ctx, s->dev->impl, graph, s->impl);
}

void os_device_graph_free(opsched_device *dev, void *graph)
{
    if (!dev || !graph || !dev->be->graph_free) return;
    dev->be->graph_free(dev->impl, graph);
}

int os_device_launch_pdl(opsched_device *dev, int on)
{
    if (!dev || !dev->be->launch_pdl) return -1;
    return dev->be->launch_pdl(dev->impl, on);
}
