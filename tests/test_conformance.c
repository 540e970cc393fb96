/*
 * test_conformance.c - the op conformance test: every operator of
 * opsched_op_kind, in several configurations, on device 0 of every backend
 * in this build, under every math mode, against support/reference.c.
 *
 * A configuration is a one-node graph.  Inputs are random (fixed seeds),
 * rounded to the math mode's storage type before the reference sees them;
 * outputs are filled with NaN bytes before each run so an element a backend
 * does not write fails.  Pass: relative L2 error ||out - ref|| / ||ref||
 * within the math mode's tolerance, and no NaN.
 *
 * "Unsupported" is allowed, and reported, for a named convolution algorithm
 * and for math modes other than fp32; for the fp32 default plan it is a
 * failure.  A backend without a device is skipped with a visible message.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opsched/backend.h"
#include "support/half.h"
#include "support/reference.h"
#include "support/rng.h"

#define MAX_DEVS 4
#define MAX_IO 40

typedef struct conf_dev {
    const char *backend;
    opsched_device *dev;
} conf_dev;

static struct {
    opsched_ctx *ctx;
    int n_devs;
    conf_dev devs[MAX_DEVS];
    int op_seen[OPSCHED_OP_COUNT];
    char seen_keys[256][64];
    int n_seen;
    int verbose; /* OPSCHED_TEST_VERBOSE set: one line per run */
} env;

typedef struct conf_case {
    char label[160];
    opsched_graph *g;
    int node;
    double lo[MAX_IO], hi[MAX_IO]; /* input value ranges */
    int fuse;                      /* plan with fuse_activation */
} conf_case;

typedef struct conf_tally {
    int passed, unsupported, failed;
} conf_tally;

static const double tolerance[OPSCHED_MATH_COUNT] = {1e-5, 5e-3, 1e-2, 3e-2};

/* ---- building cases ----------------------------------------------------- */

static conf_case *case_new(const char *fmt, ...)
{
    conf_case *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->label, sizeof(c->label), fmt, ap);
    va_end(ap);
    assert_int_equal(opsched_graph_create(env.ctx, c->label, &c->g), OPSCHED_OK);
    for (int i = 0; i < MAX_IO; i++) {
        c->lo[i] = -1.0;
        c->hi[i] = 1.0;
    }
    return c;
}

static void case_free(conf_case *c)
{
    if (!c) return;
    opsched_graph_free(c->g);
    free(c);
}

static int add_t(conf_case *c, const char *name, opsched_tensor_kind kind, opsched_dtype dt,
                 const char *dims)
{
    opsched_shape s;
    int id = -1;
    assert_int_equal(opsched_shape_parse(dims, &s), OPSCHED_OK);
    if (opsched_graph_add_tensor(c->g, name, kind, dt, &s, &id) != OPSCHED_OK)
        fail_msg("%s: tensor %s: %s", c->label, name, opsched_ctx_last_error(env.ctx));
    return id;
}

static int in_x(conf_case *c, const char *name, const char *dims)
{
    return add_t(c, name, OPSCHED_TENSOR_INPUT, OPSCHED_F32, dims);
}

static int in_w(conf_case *c, const char *name, const char *dims)
{
    return add_t(c, name, OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, dims);
}

/* Adds the node under test; returns its first output. */
static int case_node(conf_case *c, opsched_op_kind op, const opsched_op_attr *a, const int *ins,
                     int n_in, int n_out)
{
    int outs[MAX_IO];
    if (opsched_graph_add_node(c->g, "node", op, a, ins, n_in, n_out, NULL, outs) != OPSCHED_OK)
        fail_msg("%s: %s", c->label, opsched_ctx_last_error(env.ctx));
    c->node = opsched_graph_num_nodes(c->g) - 1;
    env.op_seen[op] = 1;
    return outs[0];
}

static opsched_op_attr attr0(void)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    return a;
}

/* ---- running cases ------------------------------------------------------ */

static uint64_t label_seed(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int is_float(opsched_dtype dt)
{
    return dt == OPSCHED_F32 || dt == OPSCHED_F16 || dt == OPSCHED_BF16;
}

/* Prints the first reason for each key (backend, math, algorithm), so a
 * reason repeated for every configuration does not flood the output; with
 * OPSCHED_TEST_VERBOSE every reason is printed. */
static void report_once(const char *key, const char *reason)
{
    for (int i = 0; i < env.n_seen && !env.verbose; i++)
        if (strcmp(env.seen_keys[i], key) == 0) return;
    if (env.n_seen < (int)(sizeof(env.seen_keys) / sizeof(env.seen_keys[0])))
        snprintf(env.seen_keys[env.n_seen++], sizeof(env.seen_keys[0]), "%s", key);
    print_message("  UNSUPPORTED %s: %s\n", key, reason);
}

/* Host data of one case: f32 values (or indices) per input. */
typedef struct case_data {
    int n_in, n_out;
    void *host[MAX_IO]; /* as generated: f32 or the index dtype */
    size_t elems[MAX_IO];
    opsched_dtype dt[MAX_IO];
    size_t out_elems[MAX_IO];
} case_data;

static void data_make(const conf_case *c, case_data *d)
{
    const opsched_node *n = opsched_graph_node(c->g, c->node);
    test_rng rng;
    test_rng_seed(&rng, label_seed(c->label));
    memset(d, 0, sizeof(*d));
    d->n_in = n->n_inputs;
    d->n_out = n->n_outputs;
    for (int i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0) continue;
        const opsched_tensor *t = opsched_graph_tensor(c->g, n->inputs[i]);
        size_t cnt = (size_t)opsched_shape_numel(&t->shape);
        size_t esz = is_float(t->dtype) ? sizeof(float) : opsched_dtype_size(t->dtype);
        d->elems[i] = cnt;
        d->dt[i] = is_float(t->dtype) ? OPSCHED_F32 : t->dtype;
        d->host[i] = calloc(cnt ? cnt : 1, esz);
        assert_non_null(d->host[i]);
        if (t->data) {
            assert_int_equal(t->data_bytes, cnt * esz);
            memcpy(d->host[i], t->data, t->data_bytes);
        } else if (is_float(t->dtype)) {
            float *f = d->host[i];
            for (size_t k = 0; k < cnt; k++)
                f[k] = (float)test_rng_uniform(&rng, c->lo[i], c->hi[i]);
        } else {
            fail_msg("%s: input %d of type %s has no data", c->label, i,
                     opsched_dtype_name(t->dtype));
        }
    }
    for (int j = 0; j < n->n_outputs; j++)
        d->out_elems[j] =
            (size_t)opsched_shape_numel(&opsched_graph_tensor(c->g, n->outputs[j])->shape);
}

static void data_free(case_data *d)
{
    for (int i = 0; i < MAX_IO; i++)
        free(d->host[i]);
}

/* Rounds f32 data to what the math mode stores (fp16, bf16); in place. */
static void round_to(opsched_math m, float *f, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (m == OPSCHED_MATH_FP16) f[k] = test_f16_to_f32(test_f32_to_f16(f[k]));
        if (m == OPSCHED_MATH_BF16) f[k] = test_bf16_to_f32(test_f32_to_bf16(f[k]));
    }
}

/* The bytes a device buffer holds for f32 data under math mode m. */
static void *to_device_bytes(opsched_math m, const float *f, size_t n, size_t *bytes)
{
    if (m != OPSCHED_MATH_FP16 && m != OPSCHED_MATH_BF16) {
        *bytes = n * sizeof(float);
        void *b = malloc(*bytes ? *bytes : 1);
        assert_non_null(b);
        if (n) memcpy(b, f, *bytes);
        return b;
    }
    uint16_t *h = malloc((n ? n : 1) * sizeof(uint16_t));
    assert_non_null(h);
    for (size_t k = 0; k < n; k++)
        h[k] = m == OPSCHED_MATH_FP16 ? test_f32_to_f16(f[k]) : test_f32_to_bf16(f[k]);
    *bytes = n * sizeof(uint16_t);
    return h;
}

static void from_device_bytes(opsched_math m, const void *src, size_t n, float *f)
{
    if (m != OPSCHED_MATH_FP16 && m != OPSCHED_MATH_BF16) {
        if (n) memcpy(f, src, n * sizeof(float));
        return;
    }
    const uint16_t *h = src;
    for (size_t k = 0; k < n; k++)
        f[k] = m == OPSCHED_MATH_FP16 ? test_f16_to_f32(h[k]) : test_bf16_to_f32(h[k]);
}

/* Relative L2 error; +inf when out has a NaN or ref is finite and out not. */
static double rel_l2(const float *out, const float *ref, size_t n, size_t *bad_at)
{
    double num = 0, den = 0;
    *bad_at = n;
    for (size_t k = 0; k < n; k++) {
        if (!isfinite(out[k]) && !(out[k] == ref[k])) {
            *bad_at = k;
            return INFINITY;
        }
        double e = (double)out[k] - ref[k];
        num += e * e;
        den += (double)ref[k] * ref[k];
    }
    if (den < 1e-30) return sqrt(num);
    return sqrt(num / den);
}

typedef struct run_args {
    const conf_case *c;
    const case_data *d;
    const conf_dev *dev;
    opsched_math math;
    const char *algo;       /* NULL: the default plan */
    int named_algo;         /* a backend-specific algorithm: unsupported is allowed */
    float *const *ref;      /* reference outputs (plain) */
    float *const *ref_relu; /* with a Relu applied */
    float *const *in_f;     /* the rounded f32 inputs */
} run_args;

static void run_one(const run_args *r, conf_tally *t)
{
    const conf_case *c = r->c;
    const case_data *d = r->d;
    opsched_device *dev = r->dev->dev;
    opsched_plan_options opts;
    opsched_plan *plan = NULL;
    opsched_buffer *ib[MAX_IO] = {0}, *ob[MAX_IO] = {0};
    float *got = NULL;
    const char *algo_name = r->algo ? r->algo : "default";
    memset(&opts, 0, sizeof(opts));
    opts.algo = r->algo;
    opts.math = r->math;
    opts.layout = OPSCHED_LAYOUT_NCHW;
    opts.fuse_activation = c->fuse;
    opsched_status st = opsched_plan_create(dev, c->g, c->node, &opts, &plan);
    if (st == OPSCHED_ERR_UNSUPPORTED &&
        (r->named_algo || r->math != OPSCHED_MATH_FP32 || c->fuse)) {
        char key[64];
        snprintf(key, sizeof(key), "%s %s %s", r->dev->backend, opsched_math_name(r->math),
                 algo_name);
        t->unsupported++;
        report_once(key, opsched_ctx_last_error(env.ctx));
        return;
    }
    if (st != OPSCHED_OK) {
        print_error("FAIL %s [%s %s %s]: plan: %s: %s\n", c->label, r->dev->backend,
                    opsched_math_name(r->math), algo_name, opsched_status_str(st),
                    opsched_ctx_last_error(env.ctx));
        t->failed++;
        return;
    }
    opsched_plan_info info;
    assert_int_equal(opsched_plan_info_get(plan, &info), OPSCHED_OK);

    int ok = 1;
    for (int i = 0; i < d->n_in && ok; i++) {
        if (!d->host[i]) continue;
        size_t bytes;
        void *bytesp;
        if (d->dt[i] == OPSCHED_F32) {
            bytesp = to_device_bytes(r->math, r->in_f[i], d->elems[i], &bytes);
        } else {
            bytes = d->elems[i] * opsched_dtype_size(d->dt[i]);
            bytesp = malloc(bytes ? bytes : 1);
            assert_non_null(bytesp);
            memcpy(bytesp, d->host[i], bytes);
        }
        st = opsched_buffer_alloc(dev, bytes, &ib[i]);
        if (st == OPSCHED_OK) st = opsched_buffer_upload(ib[i], 0, bytesp, bytes);
        free(bytesp);
        if (st != OPSCHED_OK) ok = 0;
    }
    size_t esz = r->math == OPSCHED_MATH_FP16 || r->math == OPSCHED_MATH_BF16 ? 2 : 4;
    for (int j = 0; j < d->n_out && ok; j++) {
        size_t bytes = d->out_elems[j] * esz;
        void *poison = malloc(bytes ? bytes : 1);
        assert_non_null(poison);
        memset(poison, 0xff, bytes); /* NaN in f32, f16 and bf16 */
        st = opsched_buffer_alloc(dev, bytes, &ob[j]);
        if (st == OPSCHED_OK) st = opsched_buffer_upload(ob[j], 0, poison, bytes);
        free(poison);
        if (st != OPSCHED_OK) ok = 0;
    }
    if (ok) st = opsched_plan_launch(plan, NULL, ib, ob);
    if (ok && st == OPSCHED_OK) st = opsched_device_sync(dev);
    if (!ok || st != OPSCHED_OK) {
        print_error("FAIL %s [%s %s %s]: run: %s: %s\n", c->label, r->dev->backend,
                    opsched_math_name(r->math), algo_name, opsched_status_str(st),
                    opsched_ctx_last_error(env.ctx));
        t->failed++;
        goto done;
    }
    for (int j = 0; j < d->n_out; j++) {
        size_t n = d->out_elems[j], bad;
        void *raw = malloc(n ? n * esz : 1);
        got = malloc((n ? n : 1) * sizeof(float));
        assert_non_null(raw);
        assert_non_null(got);
        st = opsched_buffer_download(ob[j], 0, raw, n * esz);
        assert_int_equal(st, OPSCHED_OK);
        from_device_bytes(r->math, raw, n, got);
        free(raw);
        const float *ref = info.fused_activation ? r->ref_relu[j] : r->ref[j];
        double err = rel_l2(got, ref, n, &bad);
        if (!(err <= tolerance[r->math])) {
            if (bad < n)
                print_error("FAIL %s [%s %s %s/%s] output %d: element %zu is %g (reference %g)\n",
                            c->label, r->dev->backend, opsched_math_name(r->math), algo_name,
                            info.algo, j, bad, (double)got[bad], (double)ref[bad]);
            else
                print_error("FAIL %s [%s %s %s/%s] output %d: relative L2 error %.3g > %.0e\n",
                            c->label, r->dev->backend, opsched_math_name(r->math), algo_name,
                            info.algo, j, err, tolerance[r->math]);
            t->failed++;
            free(got);
            got = NULL;
            goto done;
        }
        if (env.verbose)
            print_message("  ok %s [%s %s %s/%s%s] output %d: error %.2g\n", c->label,
                          r->dev->backend, opsched_math_name(r->math), algo_name, info.algo,
                          info.fused_activation ? "+relu" : "", j, err);
        free(got);
        got = NULL;
    }
    t->passed++;
done:
    free(got);
    for (int i = 0; i < MAX_IO; i++) {
        opsched_buffer_free(ib[i]);
        opsched_buffer_free(ob[i]);
    }
    opsched_plan_free(plan);
}

/* Runs one case on every device, math mode and (for Conv) algorithm. */
static void run_case(conf_case *c, conf_tally *tallies)
{
    const opsched_node *n = opsched_graph_node(c->g, c->node);
    case_data d;
    data_make(c, &d);
    float *in_f[MAX_IO] = {0}, *ref[MAX_IO] = {0}, *ref_relu[MAX_IO] = {0};
    for (int m = 0; m < OPSCHED_MATH_COUNT; m++) {
        opsched_math math = (opsched_math)m;
        for (int i = 0; i < d.n_in; i++) {
            free(in_f[i]);
            in_f[i] = NULL;
            if (!d.host[i] || d.dt[i] != OPSCHED_F32) continue;
            in_f[i] = malloc((d.elems[i] ? d.elems[i] : 1) * sizeof(float));
            assert_non_null(in_f[i]);
            memcpy(in_f[i], d.host[i], d.elems[i] * sizeof(float));
            round_to(math, in_f[i], d.elems[i]);
        }
        const void *ref_in[MAX_IO];
        for (int i = 0; i < d.n_in; i++)
            ref_in[i] = d.dt[i] == OPSCHED_F32 ? (const void *)in_f[i] : d.host[i];
        for (int j = 0; j < d.n_out; j++) {
            free(ref[j]);
            free(ref_relu[j]);
            ref[j] = malloc((d.out_elems[j] ? d.out_elems[j] : 1) * sizeof(float));
            ref_relu[j] = malloc((d.out_elems[j] ? d.out_elems[j] : 1) * sizeof(float));
            assert_non_null(ref[j]);
            assert_non_null(ref_relu[j]);
        }
        if (ref_run_node(c->g, c->node, ref_in, ref, 0) != 0 ||
            ref_run_node(c->g, c->node, ref_in, ref_relu, 1) != 0)
            fail_msg("%s: the reference cannot run it", c->label);
        for (int k = 0; k < env.n_devs; k++) {
            run_args r = {.c = c,
                          .d = &d,
                          .dev = &env.devs[k],
                          .math = math,
                          .ref = ref,
                          .ref_relu = ref_relu,
                          .in_f = in_f};
            if (n->op != OPSCHED_OP_CONV) {
                run_one(&r, &tallies[k]);
                continue;
            }
            const char *const *names = NULL;
            int n_algos = 0;
            assert_int_equal(opsched_device_conv_algos(env.devs[k].dev, &names, &n_algos),
                             OPSCHED_OK);
            r.algo = "heuristic";
            run_one(&r, &tallies[k]);
            r.algo = "find";
            run_one(&r, &tallies[k]);
            r.named_algo = 1;
            for (int a = 0; a < n_algos; a++) {
                r.algo = names[a];
                run_one(&r, &tallies[k]);
            }
        }
    }
    for (int i = 0; i < MAX_IO; i++) {
        free(in_f[i]);
        free(ref[i]);
        free(ref_relu[i]);
    }
    data_free(&d);
}

/* Runs and frees the cases of one test, then prints and checks the tally. */
static void run_all(const char *what, conf_case **cases, int n)
{
    conf_tally tallies[MAX_DEVS];
    memset(tallies, 0, sizeof(tallies));
    for (int i = 0; i < n; i++) {
        run_case(cases[i], tallies);
        case_free(cases[i]);
    }
    int failed = 0;
    for (int k = 0; k < env.n_devs; k++) {
        print_message("  %s on %s: %d configs, %d runs passed, %d unsupported, %d failed\n", what,
                      env.devs[k].backend, n, tallies[k].passed, tallies[k].unsupported,
                      tallies[k].failed);
        failed += tallies[k].failed;
        if (tallies[k].passed == 0) {
            print_error("FAIL %s on %s: nothing ran\n", what, env.devs[k].backend);
            failed++;
        }
    }
    assert_int_equal(failed, 0);
}

#define RUN_ALL(what, ...)                                                                         \
    do {                                                                                           \
        conf_case *cases_[] = {__VA_ARGS__};                                                       \
        run_all((what), cases_, (int)(sizeof(cases_) / sizeof(cases_[0])));                        \
    } while (0)

/* ---- convolution -------------------------------------------------------- */

typedef struct conv_cfg {
    const char *x, *w;
    int64_t stride[2], dil[2], pads[4], groups;
    int bias;
} conv_cfg;

static conf_case *conv_case(const conv_cfg *k)
{
    conf_case *c = case_new("Conv x=%s w=%s s=%lldx%lld d=%lldx%lld p=%lld,%lld,%lld,%lld g=%lld%s",
                            k->x, k->w, (long long)k->stride[0], (long long)k->stride[1],
                            (long long)k->dil[0], (long long)k->dil[1], (long long)k->pads[0],
                            (long long)k->pads[1], (long long)k->pads[2], (long long)k->pads[3],
                            (long long)k->groups, k->bias ? " bias" : "");
    int ins[3] = {in_x(c, "x", k->x), in_w(c, "w", k->w), -1};
    if (k->bias) {
        opsched_shape ws;
        char dims[32];
        assert_int_equal(opsched_shape_parse(k->w, &ws), OPSCHED_OK);
        snprintf(dims, sizeof(dims), "%lld", (long long)ws.d[0]);
        ins[2] = in_w(c, "b", dims);
    }
    opsched_op_attr a = attr0();
    for (int i = 0; i < 2; i++) {
        a.conv.stride[i] = k->stride[i];
        a.conv.dilation[i] = k->dil[i];
    }
    memcpy(a.conv.pads, k->pads, sizeof(a.conv.pads));
    a.conv.groups = k->groups;
    case_node(c, OPSCHED_OP_CONV, &a, ins, k->bias ? 3 : 2, 1);
    return c;
}

/* A convolution followed by a Relu, planned with fuse_activation. */
static conf_case *conv_relu_case(void)
{
    conf_case *c = case_new("Conv+Relu fused x=1x8x9x9 w=8x8x3x3 p=1");
    int ins[3] = {in_x(c, "x", "1x8x9x9"), in_w(c, "w", "8x8x3x3"), in_w(c, "b", "8")};
    opsched_op_attr a = attr0();
    for (int i = 0; i < 4; i++)
        a.conv.pads[i] = 1;
    int y = case_node(c, OPSCHED_OP_CONV, &a, ins, 3, 1);
    int conv = c->node;
    assert_int_equal(
        opsched_graph_add_node(c->g, "relu", OPSCHED_OP_RELU, NULL, &y, 1, 1, NULL, NULL),
        OPSCHED_OK);
    c->node = conv;
    c->fuse = 1;
    return c;
}

static void test_conv(void **state)
{
    (void)state;
    static const conv_cfg cfgs[] = {
        {"2x8x10x10", "16x8x3x3", {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, 1},
        {"1x4x9x11", "8x4x3x3", {2, 2}, {1, 1}, {1, 1, 1, 1}, 1, 0},
        {"1x8x7x7", "12x4x3x3", {1, 1}, {1, 1}, {1, 1, 1, 1}, 2, 1},
        {"1x8x9x9", "8x1x3x3", {1, 1}, {1, 1}, {1, 1, 1, 1}, 8, 0},
        {"2x6x10x10", "6x1x5x5", {2, 2}, {1, 1}, {2, 2, 2, 2}, 6, 1},
        {"1x4x12x12", "6x4x3x3", {1, 1}, {2, 2}, {2, 2, 2, 2}, 1, 1},
        {"1x3x8x8", "5x3x3x3", {1, 1}, {1, 1}, {0, 1, 2, 1}, 1, 1},
        {"2x16x5x5", "32x16x1x1", {1, 1}, {1, 1}, {0, 0, 0, 0}, 1, 1},
        {"1x3x32x32", "8x3x7x7", {2, 2}, {1, 1}, {3, 3, 3, 3}, 1, 1},
        {"1x64x14x14", "64x64x3x3", {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, 1},
        {"1x4x11x9", "6x4x1x3", {1, 2}, {2, 1}, {0, 1, 0, 1}, 1, 0},
        {"1x4x9x10", "4x4x3x1", {2, 1}, {1, 1}, {1, 0, 0, 0}, 1, 1},
    };
    conf_case *cases[sizeof(cfgs) / sizeof(cfgs[0]) + 1];
    int n = 0;
    for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++)
        cases[n++] = conv_case(&cfgs[i]);
    cases[n++] = conv_relu_case();
    run_all("Conv", cases, n);
}

/* ---- Gemm, MatMul ------------------------------------------------------- */

static conf_case *gemm_case(const char *a, const char *b, const char *cdims, int ta, int tb,
                            float alpha, float beta)
{
    conf_case *c = case_new("Gemm A=%s B=%s C=%s tA=%d tB=%d alpha=%g beta=%g", a, b,
                            cdims ? cdims : "-", ta, tb, alpha, beta);
    int ins[3] = {in_x(c, "a", a), in_w(c, "b", b), cdims ? in_w(c, "c", cdims) : -1};
    opsched_op_attr at = attr0();
    at.gemm.alpha = alpha;
    at.gemm.beta = beta;
    at.gemm.trans_a = ta;
    at.gemm.trans_b = tb;
    case_node(c, OPSCHED_OP_GEMM, &at, ins, cdims ? 3 : 2, 1);
    return c;
}

static void test_gemm(void **state)
{
    (void)state;
    RUN_ALL("Gemm", gemm_case("4x16", "8x16", "8", 0, 1, 1.0f, 1.0f),
            gemm_case("4x16", "8x16", NULL, 0, 1, 1.0f, 0.0f),
            gemm_case("16x4", "16x8", "4x8", 1, 0, 0.5f, 2.0f),
            gemm_case("16x4", "8x16", "1x8", 1, 1, 1.0f, 1.0f),
            gemm_case("4x16", "16x8", NULL, 0, 0, 2.0f, 0.0f),
            gemm_case("5x7", "7x3", "5x1", 0, 0, 1.0f, -1.0f),
            gemm_case("3x9", "6x9", "6", 0, 1, 1.0f, 0.0f),
            gemm_case("3x9", "6x9", "3x6", 0, 1, -1.5f, 0.25f));
}

static conf_case *matmul_case(const char *a, const char *b)
{
    conf_case *c = case_new("MatMul %s @ %s", a, b);
    int ins[2] = {in_x(c, "a", a), in_x(c, "b", b)};
    case_node(c, OPSCHED_OP_MATMUL, NULL, ins, 2, 1);
    return c;
}

static void test_matmul(void **state)
{
    (void)state;
    RUN_ALL("MatMul", matmul_case("5x7", "7x3"), matmul_case("2x3x4x5", "5x6"),
            matmul_case("2x1x4x5", "1x3x5x6"), matmul_case("5", "5x3"), matmul_case("2x4x5", "5"),
            matmul_case("4x5", "3x5x6"), matmul_case("3x4x5", "3x5x2"));
}

/* ---- pooling ------------------------------------------------------------ */

static conf_case *pool_case(opsched_op_kind op, const char *x, int k, int s, int d,
                            const int64_t pads[4], int ceil_mode, int include_pad)
{
    conf_case *c = case_new("%s x=%s k=%d s=%d d=%d p=%lld,%lld,%lld,%lld ceil=%d incl=%d",
                            opsched_op_name(op), x, k, s, d, (long long)pads[0], (long long)pads[1],
                            (long long)pads[2], (long long)pads[3], ceil_mode, include_pad);
    int in = in_x(c, "x", x);
    opsched_op_attr a = attr0();
    a.pool.kernel[0] = a.pool.kernel[1] = k;
    a.pool.stride[0] = a.pool.stride[1] = s;
    a.pool.dilation[0] = a.pool.dilation[1] = d;
    memcpy(a.pool.pads, pads, sizeof(a.pool.pads));
    a.pool.ceil_mode = ceil_mode;
    a.pool.count_include_pad = include_pad;
    case_node(c, op, &a, &in, 1, 1);
    return c;
}

static const int64_t P0[4] = {0, 0, 0, 0}, P1[4] = {1, 1, 1, 1}, PA[4] = {0, 0, 1, 1},
                     PB[4] = {1, 0, 0, 1};

static void test_maxpool(void **state)
{
    (void)state;
    const opsched_op_kind op = OPSCHED_OP_MAXPOOL;
    RUN_ALL(
        "MaxPool", pool_case(op, "2x3x8x8", 3, 2, 1, P1, 0, 0),
        pool_case(op, "1x4x7x7", 2, 2, 1, P0, 1, 0), pool_case(op, "1x2x9x9", 3, 1, 2, P1, 0, 0),
        pool_case(op, "1x3x6x7", 2, 2, 1, PA, 0, 0), pool_case(op, "1x3x8x8", 3, 2, 1, P1, 1, 0),
        pool_case(op, "1x2x7x8", 3, 2, 1, PB, 1, 0));
}

static void test_avgpool(void **state)
{
    (void)state;
    const opsched_op_kind op = OPSCHED_OP_AVGPOOL;
    RUN_ALL(
        "AveragePool", pool_case(op, "2x3x8x8", 3, 1, 1, P1, 0, 1),
        pool_case(op, "2x3x8x8", 3, 1, 1, P1, 0, 0), pool_case(op, "1x4x8x8", 3, 2, 1, P1, 1, 1),
        pool_case(op, "1x4x8x8", 3, 2, 1, P1, 1, 0), pool_case(op, "1x2x8x8", 2, 2, 1, P0, 0, 0),
        pool_case(op, "1x2x7x7", 2, 2, 1, P0, 1, 1), pool_case(op, "1x2x9x9", 3, 1, 2, P1, 0, 0),
        pool_case(op, "1x3x6x7", 2, 2, 1, PA, 0, 1));
}

static conf_case *unary_case(opsched_op_kind op, const opsched_op_attr *a, const char *x, double lo,
                             double hi, const char *note)
{
    conf_case *c = case_new("%s x=%s %s", opsched_op_name(op), x, note ? note : "");
    int in = in_x(c, "x", x);
    c->lo[0] = lo;
    c->hi[0] = hi;
    case_node(c, op, a, &in, 1, 1);
    return c;
}

static void test_global_pools(void **state)
{
    (void)state;
    RUN_ALL("GlobalAveragePool/GlobalMaxPool",
            unary_case(OPSCHED_OP_GLOBALAVGPOOL, NULL, "2x8x7x5", -1, 1, NULL),
            unary_case(OPSCHED_OP_GLOBALAVGPOOL, NULL, "2x4x9", -1, 1, NULL),
            unary_case(OPSCHED_OP_GLOBALMAXPOOL, NULL, "2x8x7x5", -1, 1, NULL),
            unary_case(OPSCHED_OP_GLOBALMAXPOOL, NULL, "1x3x2x3x4", -1, 1, NULL));
}

/* ---- element-wise ------------------------------------------------------- */

static void test_activations(void **state)
{
    (void)state;
    opsched_op_attr clip = attr0(), gelu_t = attr0(), hs = attr0(), hs2 = attr0();
    clip.clip.min = -0.5f;
    clip.clip.max = 0.25f;
    gelu_t.gelu.tanh_approx = 1;
    hs.hardsigmoid.alpha = 0.2f;
    hs.hardsigmoid.beta = 0.5f;
    hs2.hardsigmoid.alpha = 1.0f / 6.0f;
    hs2.hardsigmoid.beta = 0.5f;
    RUN_ALL("activations", unary_case(OPSCHED_OP_RELU, NULL, "2x3x4x5", -1, 1, NULL),
            unary_case(OPSCHED_OP_RELU, NULL, "7", -1, 1, NULL),
            unary_case(OPSCHED_OP_CLIP, &clip, "2x3x4x5", -1, 1, "min=-0.5 max=0.25"),
            unary_case(OPSCHED_OP_SIGMOID, NULL, "2x3x4x5", -6, 6, NULL),
            unary_case(OPSCHED_OP_TANH, NULL, "2x3x4x5", -3, 3, NULL),
            unary_case(OPSCHED_OP_GELU, NULL, "2x3x4x5", -3, 3, "erf"),
            unary_case(OPSCHED_OP_GELU, &gelu_t, "2x3x4x5", -3, 3, "tanh"),
            unary_case(OPSCHED_OP_ERF, NULL, "2x3x4x5", -2, 2, NULL),
            unary_case(OPSCHED_OP_HARDSIGMOID, &hs, "2x3x4x5", -4, 4, "alpha=0.2"),
            unary_case(OPSCHED_OP_HARDSIGMOID, &hs2, "3x7", -4, 4, "alpha=1/6"),
            unary_case(OPSCHED_OP_HARDSWISH, NULL, "2x3x4x5", -5, 5, NULL),
            unary_case(OPSCHED_OP_SQRT, NULL, "2x3x4x5", 0.01, 4, NULL));
}

static conf_case *binary_case(opsched_op_kind op, const char *a, const char *b, double lo_b,
                              double hi_b)
{
    conf_case *c = case_new("%s %s , %s", opsched_op_name(op), a, b);
    int ins[2] = {in_x(c, "a", a), in_x(c, "b", b)};
    if (op == OPSCHED_OP_POW) {
        c->lo[0] = 0.5;
        c->hi[0] = 2.0;
    }
    c->lo[1] = lo_b;
    c->hi[1] = hi_b;
    case_node(c, op, NULL, ins, 2, 1);
    return c;
}

static void test_binary(void **state)
{
    (void)state;
    const opsched_op_kind ops[] = {OPSCHED_OP_ADD, OPSCHED_OP_SUB, OPSCHED_OP_MUL, OPSCHED_OP_DIV};
    conf_case *cases[4 * 6 + 3];
    int n = 0;
    for (int i = 0; i < 4; i++) {
        double lo = ops[i] == OPSCHED_OP_DIV ? 0.5 : -1, hi = ops[i] == OPSCHED_OP_DIV ? 2 : 1;
        cases[n++] = binary_case(ops[i], "2x3x4x5", "2x3x4x5", lo, hi);
        cases[n++] = binary_case(ops[i], "2x3x4x5", "5", lo, hi);
        cases[n++] = binary_case(ops[i], "5", "2x3x4x5", lo, hi);
        cases[n++] = binary_case(ops[i], "2x8x4x4", "8x1x1", lo, hi);
        cases[n++] = binary_case(ops[i], "1x8x1x1", "2x8x4x4", lo, hi);
        cases[n++] = binary_case(ops[i], "3x1", "1x4", lo, hi);
    }
    cases[n++] = binary_case(OPSCHED_OP_POW, "2x3x4", "2x3x4", -2, 2);
    cases[n++] = binary_case(OPSCHED_OP_POW, "2x3x4", "4", -2, 2);
    cases[n++] = binary_case(OPSCHED_OP_POW, "2x3x4", "1", -2, 2);
    run_all("Add/Sub/Mul/Div/Pow", cases, n);
}

/* ---- data movement ------------------------------------------------------ */

static conf_case *concat_case(const char *const *xs, int n, int64_t axis)
{
    conf_case *c = case_new("Concat %s,%s%s%s axis=%lld", xs[0], xs[1], n > 2 ? "," : "",
                            n > 2 ? xs[2] : "", (long long)axis);
    int ins[3];
    char name[16];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "x%d", i);
        ins[i] = in_x(c, name, xs[i]);
    }
    opsched_op_attr a = attr0();
    a.axis.axis = axis;
    case_node(c, OPSCHED_OP_CONCAT, &a, ins, n, 1);
    return c;
}

static void test_concat(void **state)
{
    (void)state;
    const char *a[] = {"2x3x4x4", "2x5x4x4", "2x1x4x4"}, *b[] = {"3x4", "2x4", "1x4"},
               *d[] = {"2x3x4", "2x3x2"};
    RUN_ALL("Concat", concat_case(a, 3, 1), concat_case(b, 3, 0), concat_case(d, 2, -1));
}

static conf_case *split_case(const char *x, int64_t axis, const int64_t *sizes, int n)
{
    conf_case *c = case_new("Split x=%s axis=%lld into %d", x, (long long)axis, n);
    int in = in_x(c, "x", x);
    opsched_op_attr a = attr0();
    a.split.axis = axis;
    a.split.n = n;
    for (int i = 0; i < n; i++)
        a.split.sizes[i] = sizes[i];
    case_node(c, OPSCHED_OP_SPLIT, &a, &in, 1, n);
    return c;
}

static void test_split(void **state)
{
    (void)state;
    const int64_t s1[] = {2, 3, 1}, s2[] = {3, 3}, s3[] = {1, 1, 2, 1};
    RUN_ALL("Split", split_case("2x6x3x3", 1, s1, 3), split_case("4x6", -1, s2, 2),
            split_case("5x2", 0, s3, 4));
}

static conf_case *slice_case(const char *x, const int64_t *st, const int64_t *en, const int64_t *sp,
                             const char *note)
{
    conf_case *c = case_new("Slice x=%s %s", x, note);
    int in = in_x(c, "x", x);
    opsched_op_attr a = attr0();
    opsched_shape s;
    assert_int_equal(opsched_shape_parse(x, &s), OPSCHED_OK);
    for (int d = 0; d < s.ndim; d++) {
        a.slice.starts[d] = st[d];
        a.slice.ends[d] = en[d];
        a.slice.steps[d] = sp[d];
    }
    case_node(c, OPSCHED_OP_SLICE, &a, &in, 1, 1);
    return c;
}

static void test_slice(void **state)
{
    (void)state;
    const int64_t st1[] = {0, 1, 0, 2}, en1[] = {2, 4, 6, 6}, sp1[] = {1, 1, 2, 1};
    const int64_t st2[] = {-1, 0}, en2[] = {-100, 5}, sp2[] = {-1, 1};
    const int64_t st3[] = {0, 6, 1}, en3[] = {3, 0, 4}, sp3[] = {1, -2, 1};
    const int64_t st4[] = {1, -3}, en4[] = {100, -1}, sp4[] = {3, 1};
    RUN_ALL("Slice", slice_case("2x5x6x6", st1, en1, sp1, "steps 1,1,2,1"),
            slice_case("7x5", st2, en2, sp2, "reversed rows"),
            slice_case("3x8x5", st3, en3, sp3, "step -2"),
            slice_case("9x6", st4, en4, sp4, "negative starts and ends"));
}

static conf_case *gather_case(const char *x, int64_t axis, const char *idx, opsched_dtype dt,
                              const int64_t *values)
{
    conf_case *c = case_new("Gather x=%s axis=%lld idx=%s (%s)", x, (long long)axis, idx,
                            opsched_dtype_name(dt));
    int ins[2] = {in_x(c, "x", x), add_t(c, "idx", OPSCHED_TENSOR_CONSTANT, dt, idx)};
    opsched_shape s;
    assert_int_equal(opsched_shape_parse(idx, &s), OPSCHED_OK);
    int64_t n = opsched_shape_numel(&s);
    if (dt == OPSCHED_INT32) {
        int32_t v32[16];
        for (int64_t i = 0; i < n; i++)
            v32[i] = (int32_t)values[i];
        assert_int_equal(opsched_graph_set_data(c->g, ins[1], v32, (size_t)n * 4), OPSCHED_OK);
    } else {
        assert_int_equal(opsched_graph_set_data(c->g, ins[1], values, (size_t)n * 8), OPSCHED_OK);
    }
    opsched_op_attr a = attr0();
    a.axis.axis = axis;
    case_node(c, OPSCHED_OP_GATHER, &a, ins, 2, 1);
    return c;
}

static void test_gather(void **state)
{
    (void)state;
    const int64_t v1[] = {4, 0, 2}, v2[] = {5, -1, 0, 2}, v3[] = {1, 1, 0};
    RUN_ALL("Gather", gather_case("5x4", 0, "3", OPSCHED_INT64, v1),
            gather_case("2x6x3", 1, "2x2", OPSCHED_INT64, v2),
            gather_case("2x6x3", -1, "3", OPSCHED_INT32, v3));
}

static conf_case *pad_case(const char *x, const int64_t *pads, opsched_pad_mode mode, float value,
                           const char *note)
{
    conf_case *c = case_new("Pad x=%s %s", x, note);
    int in = in_x(c, "x", x);
    opsched_op_attr a = attr0();
    opsched_shape s;
    assert_int_equal(opsched_shape_parse(x, &s), OPSCHED_OK);
    for (int i = 0; i < 2 * s.ndim; i++)
        a.pad.pads[i] = pads[i];
    a.pad.mode = mode;
    a.pad.value = value;
    case_node(c, OPSCHED_OP_PAD, &a, &in, 1, 1);
    return c;
}

static void test_pad(void **state)
{
    (void)state;
    const int64_t p1[] = {0, 0, 1, 2, 0, 0, 3, 1}, p2[] = {0, 2, 1, 0, 1, 2};
    const int64_t p3[] = {1, 0, 2, 3}, p4[] = {0, -1, 1, 0, 1, -1, 0, 2};
    RUN_ALL("Pad", pad_case("2x3x4x5", p1, OPSCHED_PAD_CONSTANT, 0.5f, "constant 0.5"),
            pad_case("2x4x5", p2, OPSCHED_PAD_REFLECT, 0, "reflect"),
            pad_case("4x5", p3, OPSCHED_PAD_EDGE, 0, "edge"),
            pad_case("2x3x4x5", p4, OPSCHED_PAD_CONSTANT, -1.0f, "negative (crop)"));
}

static conf_case *shape_case(opsched_op_kind op, const char *x, const char *target, int64_t axis)
{
    conf_case *c = case_new("%s x=%s -> %s", opsched_op_name(op), x, target ? target : "-");
    int in = in_x(c, "x", x);
    opsched_op_attr a = attr0();
    if (target) assert_int_equal(opsched_shape_parse(target, &a.shape.shape), OPSCHED_OK);
    if (op == OPSCHED_OP_FLATTEN) a.axis.axis = axis;
    case_node(c, op, &a, &in, 1, 1);
    return c;
}

static void test_expand(void **state)
{
    (void)state;
    RUN_ALL("Expand", shape_case(OPSCHED_OP_EXPAND, "3x1", "2x3x4", 0),
            shape_case(OPSCHED_OP_EXPAND, "4", "3x4", 0),
            shape_case(OPSCHED_OP_EXPAND, "2x1x3", "2x5x3", 0));
}

static void test_views(void **state)
{
    (void)state;
    RUN_ALL("Flatten/Reshape/Identity/Dropout", shape_case(OPSCHED_OP_FLATTEN, "2x3x4", NULL, 1),
            shape_case(OPSCHED_OP_FLATTEN, "2x3x4x5", NULL, 0),
            shape_case(OPSCHED_OP_RESHAPE, "2x12", "4x6", 0),
            shape_case(OPSCHED_OP_RESHAPE, "2x3x4", "24", 0),
            shape_case(OPSCHED_OP_IDENTITY, "3x5", NULL, 0),
            shape_case(OPSCHED_OP_DROPOUT, "3x5", NULL, 0));
}

static conf_case *transpose_case(const char *x, const int64_t *perm, int n)
{
    conf_case *c = case_new("Transpose x=%s perm=%d", x, n);
    int in = in_x(c, "x", x);
    opsched_op_attr a = attr0();
    a.transpose.n = n;
    for (int i = 0; i < n; i++)
        a.transpose.perm[i] = perm[i];
    case_node(c, OPSCHED_OP_TRANSPOSE, &a, &in, 1, 1);
    return c;
}

static void test_transpose(void **state)
{
    (void)state;
    const int64_t p1[] = {2, 0, 1}, p2[] = {0, 2, 3, 1}, p3[] = {1, 0};
    RUN_ALL("Transpose", transpose_case("2x3x4", p1, 3), transpose_case("2x3x4x5", p2, 4),
            transpose_case("3x7", p3, 2), transpose_case("2x3x4", NULL, 0));
}

/* ---- normalisation and reduction ---------------------------------------- */

static conf_case *bn_case(const char *x, const char *ch)
{
    conf_case *c = case_new("BatchNormalization x=%s", x);
    int ins[5] = {in_x(c, "x", x), in_w(c, "scale", ch), in_w(c, "bias", ch), in_w(c, "mean", ch),
                  in_w(c, "var", ch)};
    c->lo[4] = 0.25;
    c->hi[4] = 2.0;
    opsched_op_attr a = attr0();
    a.bn.epsilon = 1e-5f;
    case_node(c, OPSCHED_OP_BATCHNORM, &a, ins, 5, 1);
    return c;
}

static void test_batchnorm(void **state)
{
    (void)state;
    RUN_ALL("BatchNormalization", bn_case("2x8x5x5", "8"), bn_case("4x6", "6"),
            bn_case("2x3x4x5x2", "3"));
}

/* The training form: the batch's statistics, and its gradients from
 * saved statistics. */
static conf_case *bn_train_case(const char *x, const char *ch)
{
    conf_case *c = case_new("BatchNormTraining x=%s", x);
    int ins[3] = {in_x(c, "x", x), in_w(c, "scale", ch), in_w(c, "bias", ch)};
    c->lo[0] = -1.0; /* an offset, so the mean is not near zero */
    c->hi[0] = 3.0;
    opsched_op_attr a = attr0();
    a.bn.epsilon = 1e-5f;
    case_node(c, OPSCHED_OP_BATCHNORM_TRAIN, &a, ins, 3, 3);
    return c;
}

static conf_case *bn_grad_case(const char *x, const char *ch)
{
    conf_case *c = case_new("BatchNormBackward x=%s", x);
    int ins[5] = {in_x(c, "dy", x), in_x(c, "x", x), in_w(c, "scale", ch), in_x(c, "mean", ch),
                  in_x(c, "invstd", ch)};
    c->lo[3] = -0.5;
    c->hi[3] = 0.5;
    c->lo[4] = 0.5;
    c->hi[4] = 2.0;
    opsched_op_attr a = attr0();
    a.bn.epsilon = 1e-5f;
    case_node(c, OPSCHED_OP_BATCHNORM_GRAD, &a, ins, 5, 3);
    return c;
}

static void test_batchnorm_training(void **state)
{
    (void)state;
    RUN_ALL("BatchNormTraining", bn_train_case("2x8x5x5", "8"), bn_train_case("4x6", "6"),
            bn_train_case("3x16x7x9", "16"), bn_train_case("2x3x4x5x2", "3"));
    RUN_ALL("BatchNormBackward", bn_grad_case("2x8x5x5", "8"), bn_grad_case("4x6", "6"),
            bn_grad_case("3x16x7x9", "16"), bn_grad_case("2x3x4x5x2", "3"));
}

/* A convolution's filter gradient: x and dy in, dW out. */
static conf_case *conv_grad_filter_case(const conv_cfg *k)
{
    opsched_shape xs, ws;
    assert_int_equal(opsched_shape_parse(k->x, &xs), OPSCHED_OK);
    assert_int_equal(opsched_shape_parse(k->w, &ws), OPSCHED_OK);
    int64_t o[2];
    for (int i = 0; i < 2; i++)
        o[i] = (xs.d[2 + i] + k->pads[i] + k->pads[2 + i] - k->dil[i] * (ws.d[2 + i] - 1) - 1) /
                   k->stride[i] +
               1;
    char dy[64];
    snprintf(dy, sizeof(dy), "%lldx%lldx%lldx%lld", (long long)xs.d[0], (long long)ws.d[0],
             (long long)o[0], (long long)o[1]);
    conf_case *c =
        case_new("ConvBackwardFilter x=%s w=%s s=%lldx%lld d=%lldx%lld p=%lld,%lld,%lld,%lld g=%lld",
                 k->x, k->w, (long long)k->stride[0], (long long)k->stride[1], (long long)k->dil[0],
                 (long long)k->dil[1], (long long)k->pads[0], (long long)k->pads[1],
                 (long long)k->pads[2], (long long)k->pads[3], (long long)k->groups);
    int ins[2] = {in_x(c, "x", k->x), in_x(c, "dy", dy)};
    opsched_op_attr a = attr0();
    for (int i = 0; i < 2; i++) {
        a.conv.kernel[i] = ws.d[2 + i];
        a.conv.stride[i] = k->stride[i];
        a.conv.dilation[i] = k->dil[i];
    }
    memcpy(a.conv.pads, k->pads, sizeof(a.conv.pads));
    a.conv.groups = k->groups;
    case_node(c, OPSCHED_OP_CONV_GRAD_FILTER, &a, ins, 2, 1);
    return c;
}

static void test_conv_grad_filter(void **state)
{
    (void)state;
    static const conv_cfg cfgs[] = {
        {"2x8x10x10", "16x8x3x3", {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, 0},
        {"1x4x9x11", "8x4x3x3", {2, 2}, {1, 1}, {1, 1, 1, 1}, 1, 0},
        {"1x8x7x7", "12x4x3x3", {1, 1}, {1, 1}, {1, 1, 1, 1}, 2, 0},
        {"2x8x9x9", "8x1x3x3", {1, 1}, {1, 1}, {1, 1, 1, 1}, 8, 0},
        {"1x4x12x12", "6x4x3x3", {1, 1}, {2, 2}, {2, 2, 2, 2}, 1, 0},
        {"1x3x8x8", "5x3x3x3", {1, 1}, {1, 1}, {0, 1, 2, 1}, 1, 0},
        {"4x16x5x5", "32x16x1x1", {1, 1}, {1, 1}, {0, 0, 0, 0}, 1, 0},
        {"2x3x32x32", "8x3x7x7", {2, 2}, {1, 1}, {3, 3, 3, 3}, 1, 0},
        {"1x4x11x9", "6x4x1x3", {1, 2}, {2, 1}, {0, 1, 0, 1}, 1, 0},
    };
    conf_case *cases[sizeof(cfgs) / sizeof(cfgs[0])];
    int n = 0;
    for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++)
        cases[n++] = conv_grad_filter_case(&cfgs[i]);
    run_all("ConvBackwardFilter", cases, n);
}

static conf_case *axis_case(opsched_op_kind op, const char *x, int64_t axis)
{
    conf_case *c = case_new("%s x=%s axis=%lld", opsched_op_name(op), x, (long long)axis);
    int in = in_x(c, "x", x);
    c->lo[0] = -4;
    c->hi[0] = 4;
    opsched_op_attr a = attr0();
    a.axis.axis = axis;
    case_node(c, op, &a, &in, 1, 1);
    return c;
}

static void test_softmax(void **state)
{
    (void)state;
    RUN_ALL("Softmax", axis_case(OPSCHED_OP_SOFTMAX, "4x10", 1),
            axis_case(OPSCHED_OP_SOFTMAX, "2x3x5", 1), axis_case(OPSCHED_OP_SOFTMAX, "2x3x5", 0),
            axis_case(OPSCHED_OP_SOFTMAX, "2x3x4x6", -1));
}

static conf_case *lrn_case(const char *x, int64_t size, float alpha, float beta, float bias)
{
    conf_case *c = case_new("LRN x=%s size=%lld alpha=%g beta=%g bias=%g", x, (long long)size,
                            alpha, beta, bias);
    int in = in_x(c, "x", x);
    c->lo[0] = -3;
    c->hi[0] = 3;
    opsched_op_attr a = attr0();
    a.lrn.size = size;
    a.lrn.alpha = alpha;
    a.lrn.beta = beta;
    a.lrn.bias = bias;
    case_node(c, OPSCHED_OP_LRN, &a, &in, 1, 1);
    return c;
}

static void test_lrn(void **state)
{
    (void)state;
    RUN_ALL("LRN", lrn_case("2x8x6x6", 5, 1e-2f, 0.75f, 1.0f),
            lrn_case("2x8x6x6", 4, 0.5f, 0.75f, 2.0f), lrn_case("1x6x7", 3, 0.3f, 0.5f, 1.0f),
            lrn_case("1x5x3x3", 1, 1.0f, 1.0f, 1.5f));
}

static conf_case *layernorm_case(const char *x, int64_t axis, const char *w, int bias)
{
    conf_case *c =
        case_new("LayerNormalization x=%s axis=%lld%s", x, (long long)axis, bias ? " bias" : "");
    int ins[3] = {in_x(c, "x", x), in_w(c, "scale", w), bias ? in_w(c, "bias", w) : -1};
    opsched_op_attr a = attr0();
    a.layernorm.axis = axis;
    a.layernorm.epsilon = 1e-5f;
    case_node(c, OPSCHED_OP_LAYERNORM, &a, ins, bias ? 3 : 2, 1);
    return c;
}

static void test_layernorm(void **state)
{
    (void)state;
    RUN_ALL("LayerNormalization", layernorm_case("4x16", -1, "16", 1),
            layernorm_case("2x3x8", 1, "3x8", 0), layernorm_case("2x5x32", 2, "32", 1),
            /* rows of 16-byte chunks a lane segment at a time on the GPU
             * (96: segments of 4 or 8 lanes; 40: of 2, 7 rows ending
             * mid-warp), a warp a row (768), four chunks a lane (1000) */
            layernorm_case("3x5x96", -1, "96", 1), layernorm_case("7x40", -1, "40", 0),
            layernorm_case("5x768", -1, "768", 1), layernorm_case("3x1000", -1, "1000", 1));
}

/* Attention with operand axes ax (Q, K, V, bias, O; "" for none), the
 * shapes as written; bias "" for none. */
static conf_case *attention_case(const char *q, const char *k, const char *v, const char *bias,
                                 const int8_t ax[5][4], int out_rank, float scale)
{
    conf_case *c = case_new("Attention q=%s k=%s v=%s bias=%s", q, k, v, bias[0] ? bias : "-");
    int ins[4] = {in_x(c, "q", q), in_x(c, "k", k), in_x(c, "v", v),
                  bias[0] ? in_x(c, "bias", bias) : -1};
    opsched_op_attr a = attr0();
    a.attention.scale = scale;
    a.attention.out_rank = out_rank;
    memcpy(a.attention.axes, ax, sizeof(a.attention.axes));
    case_node(c, OPSCHED_OP_ATTENTION, &a, ins, bias[0] ? 4 : 3, 1);
    return c;
}

static void test_attention(void **state)
{
    (void)state;
    static const int8_t bhsd[5][4] = {{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3},
                                      {0, 1, 2, 3}};
    /* Q and O [B, S, H, D], K stored transposed [B, H, D, S], a key mask */
    static const int8_t mixed[5][4] = {{0, 2, 1, 3}, {0, 1, 3, 2}, {0, 1, 2, 3}, {0, 1, 2, 3},
                                       {0, 2, 1, 3}};
    /* torch's [S, N, D] queries, [N, S, D] keys and values of another head
     * size, a 2-D bias, a longer key sequence than the queries */
    static const int8_t three[5][4] = {{-1, 1, 0, 2}, {-1, 0, 1, 2}, {-1, 0, 1, 2}, {-1, -1, 0, 1},
                                       {-1, 0, 1, 2}};
    RUN_ALL("Attention",
            attention_case("2x3x17x16", "2x3x17x16", "2x3x17x16", "", bhsd, 4, 0.25f),
            attention_case("2x9x2x8", "2x2x8x70", "2x2x70x8", "2x1x1x70", mixed, 4, 0.35f),
            attention_case("5x4x8", "4x11x8", "4x11x6", "5x11", three, 3, 0.5f));
}

static conf_case *reduce_case(const char *x, const int64_t *axes, int n, int keepdims)
{
    conf_case *c = case_new("ReduceMean x=%s axes=%d keepdims=%d", x, n, keepdims);
    int in = in_x(c, "x", x);
    opsched_op_attr a = attr0();
    a.reduce.n_axes = n;
    for (int i = 0; i < n; i++)
        a.reduce.axes[i] = axes[i];
    a.reduce.keepdims = keepdims;
    case_node(c, OPSCHED_OP_REDUCEMEAN, &a, &in, 1, 1);
    return c;
}

static void test_reducemean(void **state)
{
    (void)state;
    const int64_t hw[] = {2, 3}, one[] = {1}, neg[] = {-1, 0}, unit[] = {1};
    RUN_ALL("ReduceMean", reduce_case("2x4x5x6", hw, 2, 1), reduce_case("3x7x2", one, 1, 0),
            reduce_case("3x4x5", NULL, 0, 1), reduce_case("3x4x5", neg, 2, 0),
            reduce_case("3x1x5", unit, 1, 1));
}

/* ---- every operator is covered ------------------------------------------ */

/* The generic families are checked elsewhere, against values ONNX's own
 * reference implementation computed rather than against a second host
 * implementation here: tests/test_cpu_ops.c (the CPU backend, every kind
 * and type), tests/test_cuda_ops_gpu.c (the CUDA backend against the CPU
 * one) and the ONNX backend node tests (bench/conformance, tests/
 * conformance.sh). */
static const opsched_op_kind covered_elsewhere[] = {
    OPSCHED_OP_UNARY,           OPSCHED_OP_BINARY,          OPSCHED_OP_WHERE,
    OPSCHED_OP_CAST,            OPSCHED_OP_REDUCE,          OPSCHED_OP_ARGMAX,
    OPSCHED_OP_ARGMIN,          OPSCHED_OP_LOGSOFTMAX,      OPSCHED_OP_HARDMAX,
    OPSCHED_OP_CUMSUM,          OPSCHED_OP_TOPK,            OPSCHED_OP_GATHER_ELEMENTS,
    OPSCHED_OP_GATHER_ND,       OPSCHED_OP_SCATTER_ELEMENTS, OPSCHED_OP_SCATTER_ND,
    OPSCHED_OP_TILE,            OPSCHED_OP_TRILU,           OPSCHED_OP_ONEHOT,
    OPSCHED_OP_RESIZE,          OPSCHED_OP_GROUPNORM,       OPSCHED_OP_CONV_TRANSPOSE,
    OPSCHED_OP_QUANTIZE,        OPSCHED_OP_DEQUANTIZE};

static void test_every_op_covered(void **state)
{
    (void)state;
    int missing = 0;
    for (int op = 0; op < OPSCHED_OP_COUNT; op++) {
        int elsewhere = 0;
        for (size_t i = 0; i < sizeof(covered_elsewhere) / sizeof(covered_elsewhere[0]); i++)
            elsewhere |= covered_elsewhere[i] == (opsched_op_kind)op;
        if (env.op_seen[op] || elsewhere) continue;
        print_error("no conformance case for %s\n", opsched_op_name((opsched_op_kind)op));
        missing++;
    }
    assert_int_equal(missing, 0);
}

/* ---- devices ------------------------------------------------------------ */

static int setup(void **state)
{
    (void)state;
    if (opsched_ctx_create(&env.ctx) != OPSCHED_OK) return -1;
    env.verbose = getenv("OPSCHED_TEST_VERBOSE") != NULL;
    for (int b = 0; b < opsched_backend_count() && env.n_devs < MAX_DEVS; b++) {
        const char *name = opsched_backend_name(b);
        int count = 0;
        if (opsched_device_count(env.ctx, name, &count) != OPSCHED_OK || count == 0) {
            print_message("SKIP: no %s device\n", name);
            continue;
        }
        conf_dev *d = &env.devs[env.n_devs];
        if (opsched_device_open(env.ctx, name, 0, &d->dev) != OPSCHED_OK) {
            print_error("cannot open %s device 0: %s\n", name, opsched_ctx_last_error(env.ctx));
            return -1;
        }
        d->backend = name;
        opsched_device_info info;
        if (opsched_device_info_get(d->dev, &info) == OPSCHED_OK)
            print_message("device: %s %d: %s (%s)\n", name, 0, info.name, info.library_versions);
        env.n_devs++;
    }
    if (opsched_backend_count() == 0) print_message("SKIP: no backend in this build\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < env.n_devs; i++)
        opsched_device_close(env.devs[i].dev);
    opsched_ctx_free(env.ctx);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv),        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_matmul),      cmocka_unit_test(test_maxpool),
        cmocka_unit_test(test_avgpool),     cmocka_unit_test(test_global_pools),
        cmocka_unit_test(test_activations), cmocka_unit_test(test_binary),
        cmocka_unit_test(test_concat),      cmocka_unit_test(test_split),
        cmocka_unit_test(test_slice),       cmocka_unit_test(test_gather),
        cmocka_unit_test(test_batchnorm),   cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_batchnorm_training), cmocka_unit_test(test_conv_grad_filter),
        cmocka_unit_test(test_lrn),         cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_reducemean),  cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_pad),         cmocka_unit_test(test_expand),
        cmocka_unit_test(test_views),       cmocka_unit_test(test_every_op_covered),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
