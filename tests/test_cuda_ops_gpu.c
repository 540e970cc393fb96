/*
 * test_cuda_ops_gpu.c - the CUDA backend's generic kernel families against
 * the CPU backend, on device 0: every new operator kind (unary and binary
 * functions, Where, Cast, Reduce, ArgMax/ArgMin, LogSoftmax, Hardmax,
 * CumSum, TopK, GatherElements/ND, ScatterElements/ND, Tile, Trilu,
 * OneHot, Resize, GroupNormalization, ConvTranspose, Quantize/
 * DequantizeLinear) and the element-wise and data-movement kinds of their
 * own on integer and bool data.
 *
 * A case is a one-node graph.  Its inputs are drawn once (fixed seeds),
 * floats rounded to the math mode's storage type, and given to both
 * backends: the CPU in fp32 and NCHW (its only mode), the GPU in every
 * math mode and, where a tensor is 4-D, in NHWC too.  Outputs start as
 * 0xff bytes (NaN, -1) so an element not written shows.  Pass: relative L2
 * error within the math mode's tolerance for float outputs, equality for
 * integer and bool outputs (within int_tol where a float computation
 * decides an integer, as Quantize's rounding does).  Where the CPU backend
 * cannot plan a kind, the GPU still runs it and its float outputs must be
 * finite; the run says how many outputs were compared and how many ran on
 * the GPU alone.  test_known_answers checks the semantics the comparison
 * cannot (integer Div and Mod signs, Cast truncation, TopK and ArgMax
 * ties, scatter reductions with duplicates, Resize examples of the ONNX
 * operator documentation) against fixed values, on the GPU alone.
 *
 * Without a CUDA device (CI) every test prints "SKIP: no CUDA device" and
 * passes.  OPSCHED_TEST_VERBOSE=1 prints every run.
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
#include "support/rng.h"

#define MAX_IO 8
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static struct {
    opsched_ctx *ctx;
    opsched_device *gpu; /* NULL: no CUDA device, every test skips */
    opsched_device *cpu; /* NULL: no CPU backend; outputs are then checked on the GPU alone */
    int verbose;
    int compared, gpu_only; /* outputs, per test function */
} env;

/* Relative L2 error allowed against the CPU's fp32, by math mode. */
static const double tolerance[OPSCHED_MATH_COUNT] = {1e-4, 5e-3, 1e-2, 3e-2};

#define SKIP_WITHOUT_GPU()                                                                         \
    do {                                                                                           \
        if (!env.gpu) {                                                                            \
            print_message("SKIP: no CUDA device\n");                                               \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* ---- one-node graphs ------------------------------------------------- */

typedef struct ocase {
    char label[160];
    opsched_graph *g;
    int node;
    double lo[MAX_IO], hi[MAX_IO]; /* value ranges of generated inputs */
    int steps[MAX_IO];             /* 1: integers only (ties); 2: multiples of 0.5 */
    int nonzero[MAX_IO];           /* no zero drawn (divisors) */
    int specials[MAX_IO];          /* some inf, -inf and NaN among the floats */
    int int_tol;                   /* max |difference| of integer outputs */
    int nhwc_may_fail;             /* NHWC may be unsupported (printed) */
    int half_may_fail;             /* fp16/bf16 may be unsupported (printed) */
} ocase;

static ocase *oc_new(const char *fmt, ...)
{
    ocase *c = calloc(1, sizeof(*c));
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

static void oc_free(ocase *c)
{
    if (!c) return;
    opsched_graph_free(c->g);
    free(c);
}

/* A tensor of dims "2x3x4" ("" or "1" for a scalar-like [1]). */
static int tensor(ocase *c, const char *name, opsched_tensor_kind kind, opsched_dtype dt,
                  const char *dims)
{
    opsched_shape s;
    int id = -1;
    assert_int_equal(opsched_shape_parse(dims, &s), OPSCHED_OK);
    if (opsched_graph_add_tensor(c->g, name, kind, dt, &s, &id) != OPSCHED_OK)
        fail_msg("%s: %s", c->label, opsched_ctx_last_error(env.ctx));
    return id;
}

static int input(ocase *c, const char *name, opsched_dtype dt, const char *dims)
{
    return tensor(c, name, OPSCHED_TENSOR_INPUT, dt, dims);
}

/* A constant of int64 values (converted to dt: int32 or int64). */
static int const_ints(ocase *c, const char *name, opsched_dtype dt, const char *dims,
                      const int64_t *v)
{
    int id = tensor(c, name, OPSCHED_TENSOR_CONSTANT, dt, dims);
    size_t n = (size_t)opsched_shape_numel(&opsched_graph_tensor(c->g, id)->shape);
    size_t esz = opsched_dtype_size(dt);
    unsigned char *b = malloc(n * esz + 1);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++) {
        if (dt == OPSCHED_INT32) {
            int32_t k = (int32_t)v[i];
            memcpy(b + 4 * i, &k, 4);
        } else {
            memcpy(b + 8 * i, &v[i], 8);
        }
    }
    assert_int_equal(opsched_graph_set_data(c->g, id, b, n * esz), OPSCHED_OK);
    free(b);
    return id;
}

static int node(ocase *c, opsched_op_kind op, const opsched_op_attr *a, const int *ins, int n_in,
                int n_out)
{
    int outs[MAX_IO];
    if (opsched_graph_add_node(c->g, "n", op, a, ins, n_in, n_out, NULL, outs) != OPSCHED_OK)
        fail_msg("%s: %s", c->label, opsched_ctx_last_error(env.ctx));
    c->node = opsched_graph_num_nodes(c->g) - 1;
    return outs[0];
}

static opsched_op_attr attr0(void)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    return a;
}

/* ---- host values ------------------------------------------------------ */

static int is_float(opsched_dtype dt)
{
    return opsched_dtype_is_float(dt);
}

/* The type a tensor of graph type dt is stored in under m. */
static opsched_dtype storage(opsched_dtype dt, opsched_math m)
{
    return is_float(dt) ? opsched_math_dtype(m) : dt;
}

static double round_float(opsched_math m, double v)
{
    float f = (float)v;
    if (m == OPSCHED_MATH_FP16) return test_f16_to_f32(test_f32_to_f16(f));
    if (m == OPSCHED_MATH_BF16) return test_bf16_to_f32(test_f32_to_bf16(f));
    return f;
}

static double get_typed(const void *p, opsched_dtype st, size_t i)
{
    const unsigned char *b = p;
    switch (st) {
    case OPSCHED_F32: {
        float f;
        memcpy(&f, b + 4 * i, 4);
        return f;
    }
    case OPSCHED_F16:
    case OPSCHED_BF16: {
        uint16_t h;
        memcpy(&h, b + 2 * i, 2);
        return st == OPSCHED_F16 ? test_f16_to_f32(h) : test_bf16_to_f32(h);
    }
    case OPSCHED_INT8:
        return (signed char)b[i];
    case OPSCHED_UINT8:
    case OPSCHED_BOOL:
        return b[i];
    case OPSCHED_INT32: {
        int32_t k;
        memcpy(&k, b + 4 * i, 4);
        return k;
    }
    default: {
        int64_t k;
        memcpy(&k, b + 8 * i, 8);
        return (double)k;
    }
    }
}

static void put_typed(void *p, opsched_dtype st, size_t i, double v)
{
    unsigned char *b = p;
    switch (st) {
    case OPSCHED_F32: {
        float f = (float)v;
        memcpy(b + 4 * i, &f, 4);
        break;
    }
    case OPSCHED_F16:
    case OPSCHED_BF16: {
        uint16_t h = st == OPSCHED_F16 ? test_f32_to_f16((float)v) : test_f32_to_bf16((float)v);
        memcpy(b + 2 * i, &h, 2);
        break;
    }
    case OPSCHED_INT8:
    case OPSCHED_UINT8:
        b[i] = (unsigned char)(int64_t)v;
        break;
    case OPSCHED_BOOL:
        b[i] = v != 0;
        break;
    case OPSCHED_INT32: {
        int32_t k = (int32_t)(int64_t)v;
        memcpy(b + 4 * i, &k, 4);
        break;
    }
    default: {
        int64_t k = (int64_t)v;
        memcpy(b + 8 * i, &k, 8);
        break;
    }
    }
}

/* Where logical (row-major) element i of a 4-D shape sits channels-last. */
static size_t nhwc_index(size_t i, const opsched_shape *s)
{
    size_t C = (size_t)s->d[1], H = (size_t)s->d[2], W = (size_t)s->d[3];
    size_t w = i % W, h = i / W % H, ch = i / (W * H) % C, n = i / (W * H * C);
    return ((n * H + h) * W + w) * C + ch;
}

/* Logical values -> the bytes a buffer holds under (m, layout). */
static void *encode(const double *v, const opsched_tensor *t, opsched_math m, opsched_layout l,
                    size_t *bytes)
{
    size_t n = (size_t)opsched_shape_numel(&t->shape);
    opsched_dtype st = storage(t->dtype, m);
    int perm = l == OPSCHED_LAYOUT_NHWC && t->shape.ndim == 4;
    *bytes = n * opsched_dtype_size(st);
    void *b = malloc(*bytes + 1);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        put_typed(b, st, perm ? nhwc_index(i, &t->shape) : i, v[i]);
    return b;
}

static double *decode(const void *b, const opsched_tensor *t, opsched_math m, opsched_layout l)
{
    size_t n = (size_t)opsched_shape_numel(&t->shape);
    opsched_dtype st = storage(t->dtype, m);
    int perm = l == OPSCHED_LAYOUT_NHWC && t->shape.ndim == 4;
    double *v = malloc(sizeof(double) * (n + 1));
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = get_typed(b, st, perm ? nhwc_index(i, &t->shape) : i);
    return v;
}

static uint64_t seed_of(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Input k of the case's node as logical values for math mode m: the
 * tensor's payload, or drawn from the case's range. */
static double *input_values(const ocase *c, int k, opsched_math m)
{
    const opsched_node *n = opsched_graph_node(c->g, c->node);
    const opsched_tensor *t = opsched_graph_tensor(c->g, n->inputs[k]);
    size_t cnt = (size_t)opsched_shape_numel(&t->shape);
    double *v = malloc(sizeof(double) * (cnt + 1));
    assert_non_null(v);
    test_rng rng;
    test_rng_seed(&rng, seed_of(c->label) + 7919u * (uint64_t)k);
    for (size_t i = 0; i < cnt; i++) {
        double x;
        if (t->data) {
            x = get_typed(t->data, t->dtype, i);
        } else if (t->dtype == OPSCHED_BOOL) {
            x = (double)(test_rng_next(&rng) & 1);
        } else if (!is_float(t->dtype) || c->steps[k] == 1) {
            do /* lo..hi, both included */
                x = (double)test_rng_int(&rng, (int64_t)c->lo[k], (int64_t)c->hi[k] + 1);
            while (c->nonzero[k] && x == 0);
        } else if (c->steps[k] == 2) {
            x = 0.5 * (double)test_rng_int(&rng, (int64_t)(2 * c->lo[k]),
                                           (int64_t)(2 * c->hi[k]) + 1);
        } else {
            do
                x = test_rng_uniform(&rng, c->lo[k], c->hi[k]);
            while (c->nonzero[k] && fabs(x) < 1e-3);
        }
        if (c->specials[k] && i % 5 == 2) {
            static const double sp[3] = {INFINITY, -INFINITY, NAN};
            x = sp[(i / 5) % 3];
        }
        v[i] = is_float(t->dtype) ? round_float(m, x) : x;
    }
    return v;
}

/* ---- running a case on one device -------------------------------------- */

typedef struct run_out {
    double *v[MAX_IO]; /* outputs as logical values */
    char why[320];     /* the reason when the plan is unsupported */
} run_out;

static void run_out_free(run_out *r)
{
    for (int i = 0; i < MAX_IO; i++) {
        free(r->v[i]);
        r->v[i] = NULL;
    }
}

/* Plans and runs the case's node on dev under o with the given logical
 * inputs.  OPSCHED_ERR_UNSUPPORTED comes back with the reason in r->why;
 * any other failure fails the test. */
static opsched_status run_on(opsched_device *dev, const ocase *c, const opsched_plan_options *o,
                             double *const *in, run_out *r)
{
    const opsched_node *n = opsched_graph_node(c->g, c->node);
    opsched_plan *plan = NULL;
    opsched_buffer *ib[MAX_IO] = {0}, *ob[MAX_IO] = {0};
    memset(r, 0, sizeof(*r));
    opsched_status st = opsched_plan_create(dev, c->g, c->node, o, &plan);
    if (st == OPSCHED_ERR_UNSUPPORTED) {
        snprintf(r->why, sizeof(r->why), "%s", opsched_ctx_last_error(env.ctx));
        return st;
    }
    if (st != OPSCHED_OK)
        fail_msg("%s: plan: %s: %s", c->label, opsched_status_str(st),
                 opsched_ctx_last_error(env.ctx));
    for (int i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0) continue;
        const opsched_tensor *t = opsched_graph_tensor(c->g, n->inputs[i]);
        size_t bytes;
        void *b = encode(in[i], t, o->math, o->layout, &bytes);
        assert_int_equal(opsched_buffer_alloc(dev, bytes ? bytes : 1, &ib[i]), OPSCHED_OK);
        assert_int_equal(opsched_buffer_upload(ib[i], 0, b, bytes), OPSCHED_OK);
        free(b);
    }
    for (int j = 0; j < n->n_outputs; j++) {
        const opsched_tensor *t = opsched_graph_tensor(c->g, n->outputs[j]);
        size_t bytes = (size_t)opsched_shape_numel(&t->shape) *
                       opsched_dtype_size(storage(t->dtype, o->math));
        void *poison = malloc(bytes + 1);
        assert_non_null(poison);
        memset(poison, 0xff, bytes);
        assert_int_equal(opsched_buffer_alloc(dev, bytes ? bytes : 1, &ob[j]), OPSCHED_OK);
        assert_int_equal(opsched_buffer_upload(ob[j], 0, poison, bytes), OPSCHED_OK);
        free(poison);
    }
    st = opsched_plan_launch(plan, NULL, ib, ob);
    if (st == OPSCHED_OK) st = opsched_device_sync(dev);
    if (st != OPSCHED_OK)
        fail_msg("%s: launch: %s: %s", c->label, opsched_status_str(st),
                 opsched_ctx_last_error(env.ctx));
    for (int j = 0; j < n->n_outputs; j++) {
        const opsched_tensor *t = opsched_graph_tensor(c->g, n->outputs[j]);
        size_t bytes = (size_t)opsched_shape_numel(&t->shape) *
                       opsched_dtype_size(storage(t->dtype, o->math));
        void *b = malloc(bytes + 1);
        assert_non_null(b);
        assert_int_equal(opsched_buffer_download(ob[j], 0, b, bytes), OPSCHED_OK);
        r->v[j] = decode(b, t, o->math, o->layout);
        free(b);
    }
    for (int i = 0; i < MAX_IO; i++) {
        opsched_buffer_free(ib[i]);
        opsched_buffer_free(ob[i]);
    }
    opsched_plan_free(plan);
    return OPSCHED_OK;
}

static double rel_l2(const double *out, const double *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t k = 0; k < n; k++) {
        if (isnan(out[k]) && isnan(ref[k])) continue;
        if (!isfinite(out[k]) || !isfinite(ref[k])) {
            if (out[k] == ref[k]) continue;
            return INFINITY;
        }
        double e = out[k] - ref[k];
        num += e * e;
        den += ref[k] * ref[k];
    }
    return den < 1e-30 ? sqrt(num) : sqrt(num / den);
}

static double max_abs_diff(const double *out, const double *ref, size_t n, size_t *at)
{
    double worst = 0;
    *at = 0;
    for (size_t k = 0; k < n; k++) {
        double e = fabs(out[k] - ref[k]);
        if (!(e <= worst)) {
            worst = e;
            *at = k;
        }
    }
    return worst;
}

static int has_4d(const ocase *c)
{
    const opsched_node *n = opsched_graph_node(c->g, c->node);
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0 && opsched_graph_tensor(c->g, n->inputs[i])->shape.ndim == 4)
            return 1;
    for (int j = 0; j < n->n_outputs; j++)
        if (opsched_graph_tensor(c->g, n->outputs[j])->shape.ndim == 4) return 1;
    return 0;
}

/* Runs c on the GPU under (m, l) against the CPU's fp32 NCHW outputs (ref,
 * NULL when the CPU cannot run it).  Returns 0 when the GPU could not
 * plan it and that is allowed. */
static int check_mode(const ocase *c, opsched_math m, opsched_layout l, double *const *ref)
{
    const opsched_node *n = opsched_graph_node(c->g, c->node);
    double *in[MAX_IO] = {0};
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0) in[i] = input_values(c, i, m);
    opsched_plan_options o = {.math = m, .layout = l};
    const char *lay = l == OPSCHED_LAYOUT_NHWC ? "nhwc" : "nchw";
    run_out r;
    opsched_status st = run_on(env.gpu, c, &o, in, &r);
    for (int i = 0; i < MAX_IO; i++)
        free(in[i]);
    if (st == OPSCHED_ERR_UNSUPPORTED) {
        int allowed = (l == OPSCHED_LAYOUT_NHWC && c->nhwc_may_fail) ||
                      ((m == OPSCHED_MATH_FP16 || m == OPSCHED_MATH_BF16) && c->half_may_fail);
        if (!allowed)
            fail_msg("%s [%s %s]: unsupported on the GPU: %s", c->label, opsched_math_name(m), lay,
                     r.why);
        print_message("  unsupported %s [%s %s]: %s\n", c->label, opsched_math_name(m), lay, r.why);
        return 0;
    }
    for (int j = 0; j < n->n_outputs; j++) {
        const opsched_tensor *t = opsched_graph_tensor(c->g, n->outputs[j]);
        size_t cnt = (size_t)opsched_shape_numel(&t->shape);
        if (!ref) {
            /* no reference: float outputs written and finite where the inputs are */
            if (is_float(t->dtype) && !c->specials[0])
                for (size_t k = 0; k < cnt; k++)
                    if (!isfinite(r.v[j][k]))
                        fail_msg("%s [%s %s]: output %d element %zu is %g (GPU alone)", c->label,
                                 opsched_math_name(m), lay, j, k, r.v[j][k]);
            env.gpu_only++;
            continue;
        }
        env.compared++;
        if (is_float(t->dtype)) {
            double e = rel_l2(r.v[j], ref[j], cnt);
            if (env.verbose)
                print_message("  ok %s [%s %s] output %d: relative L2 error %.2g\n", c->label,
                              opsched_math_name(m), lay, j, e);
            if (!(e <= tolerance[m]))
                fail_msg("%s [%s %s]: output %d: relative L2 error %.3g > %.0e", c->label,
                         opsched_math_name(m), lay, j, e, tolerance[m]);
        } else {
            size_t at;
            double e = max_abs_diff(r.v[j], ref[j], cnt, &at);
            if (env.verbose)
                print_message("  ok %s [%s %s] output %d: max difference %g\n", c->label,
                              opsched_math_name(m), lay, j, e);
            if (!(e <= c->int_tol))
                fail_msg("%s [%s %s]: output %d (%s) element %zu: GPU %g, CPU %g", c->label,
                         opsched_math_name(m), lay, j, opsched_dtype_name(t->dtype), at,
                         r.v[j][at], ref[j][at]);
        }
    }
    run_out_free(&r);
    return 1;
}

/* Reference outputs of the CPU for math mode m's inputs; NULL (with the
 * reason printed once) when it cannot run the node. */
static int cpu_reference(const ocase *c, opsched_math m, run_out *ref)
{
    if (!env.cpu) return 0;
    const opsched_node *n = opsched_graph_node(c->g, c->node);
    double *in[MAX_IO] = {0};
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0) in[i] = input_values(c, i, m);
    opsched_plan_options o = {.math = OPSCHED_MATH_FP32, .layout = OPSCHED_LAYOUT_NCHW};
    opsched_status st = run_on(env.cpu, c, &o, in, ref);
    for (int i = 0; i < MAX_IO; i++)
        free(in[i]);
    if (st == OPSCHED_ERR_UNSUPPORTED) {
        if (m == OPSCHED_MATH_FP32)
            print_message("  cpu cannot run %s (GPU alone): %s\n", c->label, ref->why);
        return 0;
    }
    return 1;
}

/* Every math mode in NCHW, and fp32 and fp16 in NHWC when a tensor is 4-D. */
static void check_case(ocase *c)
{
    for (int m = 0; m < OPSCHED_MATH_COUNT; m++) {
        run_out ref;
        memset(&ref, 0, sizeof(ref));
        int have = cpu_reference(c, (opsched_math)m, &ref);
        check_mode(c, (opsched_math)m, OPSCHED_LAYOUT_NCHW, have ? ref.v : NULL);
        if (has_4d(c) && (m == OPSCHED_MATH_FP32 || m == OPSCHED_MATH_FP16))
            check_mode(c, (opsched_math)m, OPSCHED_LAYOUT_NHWC, have ? ref.v : NULL);
        run_out_free(&ref);
    }
    oc_free(c);
}

static void summary(const char *what)
{
    print_message("%s: %d outputs compared with the CPU backend, %d on the GPU alone\n", what,
                  env.compared, env.gpu_only);
    env.compared = env.gpu_only = 0;
}

/* ---- element-wise ------------------------------------------------------- */

static ocase *unary_case(opsched_unary_fn fn, opsched_dtype dt, const char *dims, double lo,
                         double hi)
{
    ocase *c = oc_new("%s %s %s", opsched_unary_fn_name(fn), opsched_dtype_name(dt), dims);
    opsched_op_attr a = attr0();
    a.unary.fn = fn;
    a.unary.alpha = fn == OPSCHED_UNARY_ISINF ? 1.0f : 0.3f;
    a.unary.beta = fn == OPSCHED_UNARY_SHRINK ? 0.5f : (fn == OPSCHED_UNARY_ISINF ? 0.0f : 0.7f);
    a.unary.gamma = 1.0507f;
    if (fn == OPSCHED_UNARY_SELU) a.unary.alpha = 1.6733f;
    if (fn == OPSCHED_UNARY_CELU) a.unary.alpha = 1.2f;
    if (fn == OPSCHED_UNARY_SWISH) a.unary.alpha = 1.5f;
    c->lo[0] = lo;
    c->hi[0] = hi;
    int x = input(c, "x", dt, dims);
    node(c, OPSCHED_OP_UNARY, &a, &x, 1, 1);
    return c;
}

static void test_unary(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    for (int f = 0; f < OPSCHED_UNARY_FN_COUNT; f++) {
        opsched_unary_fn fn = (opsched_unary_fn)f;
        double lo = -3, hi = 3;
        switch (fn) {
        case OPSCHED_UNARY_LOG:
            lo = 0.1;
            hi = 4;
            break;
        case OPSCHED_UNARY_RECIPROCAL:
            lo = 0.5;
            hi = 2;
            break;
        case OPSCHED_UNARY_ASIN:
        case OPSCHED_UNARY_ACOS:
        case OPSCHED_UNARY_ATANH:
            lo = -0.9;
            hi = 0.9;
            break;
        case OPSCHED_UNARY_ACOSH:
            lo = 1.1;
            hi = 4;
            break;
        case OPSCHED_UNARY_TAN:
            lo = -1.2;
            hi = 1.2;
            break;
        default:
            break;
        }
        if (fn == OPSCHED_UNARY_NOT) {
            check_case(unary_case(fn, OPSCHED_BOOL, "3x4x5", 0, 1));
            continue;
        }
        if (fn == OPSCHED_UNARY_BITWISE_NOT) {
            ocase *c = unary_case(fn, OPSCHED_UINT8, "3x4x5", 0, 255);
            check_case(c);
            c = unary_case(fn, OPSCHED_INT32, "2x3x2x5", -1000, 1000);
            check_case(c);
            continue;
        }
        ocase *c = unary_case(fn, OPSCHED_F32, "3x4x5", lo, hi);
        if (fn == OPSCHED_UNARY_ISNAN || fn == OPSCHED_UNARY_ISINF) c->specials[0] = 1;
        if (fn == OPSCHED_UNARY_ROUND || fn == OPSCHED_UNARY_FLOOR || fn == OPSCHED_UNARY_CEIL ||
            fn == OPSCHED_UNARY_SIGN)
            c->steps[0] = 2; /* halves: round half to even, exact zeros */
        check_case(c);
    }
    /* on integers */
    static const opsched_unary_fn int_fns[] = {OPSCHED_UNARY_ABS, OPSCHED_UNARY_NEG,
                                               OPSCHED_UNARY_SIGN};
    static const opsched_dtype int_types[] = {OPSCHED_INT8, OPSCHED_INT32, OPSCHED_INT64};
    for (size_t i = 0; i < 3; i++)
        for (size_t t = 0; t < 3; t++)
            check_case(unary_case(int_fns[i], int_types[t], "4x6", -100, 100));
    /* a 4-D one for NHWC */
    check_case(unary_case(OPSCHED_UNARY_EXP, OPSCHED_F32, "2x3x4x5", -2, 2));
    summary("unary functions");
}

/* The activation kinds of their own on integers. */
static void test_activations_int(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const opsched_dtype types[] = {OPSCHED_INT8, OPSCHED_INT32, OPSCHED_INT64};
    for (size_t t = 0; t < 3; t++) {
        ocase *c = oc_new("Relu %s", opsched_dtype_name(types[t]));
        c->lo[0] = -50;
        c->hi[0] = 50;
        int x = input(c, "x", types[t], "3x7");
        node(c, OPSCHED_OP_RELU, NULL, &x, 1, 1);
        check_case(c);
        c = oc_new("Clip %s", opsched_dtype_name(types[t]));
        c->lo[0] = -50;
        c->hi[0] = 50;
        opsched_op_attr a = attr0();
        a.clip.min = -3.5f;
        a.clip.max = 20.5f;
        x = input(c, "x", types[t], "3x7");
        node(c, OPSCHED_OP_CLIP, &a, &x, 1, 1);
        check_case(c);
    }
    summary("activations on integers");
}

static ocase *binary_case(opsched_op_kind op, int fn, opsched_dtype ta, opsched_dtype tb,
                          const char *da, const char *db, double lo, double hi)
{
    ocase *c = oc_new("%s %s %s %s %s",
                      op == OPSCHED_OP_BINARY ? opsched_binary_fn_name((opsched_binary_fn)fn)
                                              : opsched_op_name(op),
                      opsched_dtype_name(ta), da, opsched_dtype_name(tb), db);
    opsched_op_attr a = attr0();
    a.binary.fn = (opsched_binary_fn)fn;
    c->lo[0] = c->lo[1] = lo;
    c->hi[0] = c->hi[1] = hi;
    int ins[2] = {input(c, "a", ta, da), input(c, "b", tb, db)};
    node(c, op, op == OPSCHED_OP_BINARY ? &a : NULL, ins, 2, 1);
    return c;
}

static void test_binary(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    /* floats, with broadcasting */
    for (int f = 0; f < OPSCHED_BINARY_FN_COUNT; f++) {
        opsched_binary_fn fn = (opsched_binary_fn)f;
        ocase *c;
        switch (fn) {
        case OPSCHED_BINARY_AND:
        case OPSCHED_BINARY_OR:
        case OPSCHED_BINARY_XOR:
            check_case(binary_case(OPSCHED_OP_BINARY, f, OPSCHED_BOOL, OPSCHED_BOOL, "2x3x4",
                                   "3x1", 0, 1));
            break;
        case OPSCHED_BINARY_SHIFT_LEFT:
        case OPSCHED_BINARY_SHIFT_RIGHT:
            c = binary_case(OPSCHED_OP_BINARY, f, OPSCHED_UINT8, OPSCHED_UINT8, "2x3x4", "4", 0,
                            255);
            c->hi[1] = 7;
            check_case(c);
            break;
        case OPSCHED_BINARY_BITWISE_AND:
        case OPSCHED_BINARY_BITWISE_OR:
        case OPSCHED_BINARY_BITWISE_XOR:
            check_case(binary_case(OPSCHED_OP_BINARY, f, OPSCHED_UINT8, OPSCHED_UINT8, "2x3x4",
                                   "3x4", 0, 255));
            check_case(binary_case(OPSCHED_OP_BINARY, f, OPSCHED_INT32, OPSCHED_INT32, "2x3x4",
                                   "2x1x4", -100000, 100000));
            check_case(binary_case(OPSCHED_OP_BINARY, f, OPSCHED_INT64, OPSCHED_INT64, "5", "1",
                                   -100000, 100000));
            break;
        default:
            c = binary_case(OPSCHED_OP_BINARY, f, OPSCHED_F32, OPSCHED_F32, "2x3x4", "3x1", -3, 3);
            c->steps[0] = c->steps[1] = fn >= OPSCHED_BINARY_EQUAL ? 2 : 0; /* equal values */
            c->nonzero[1] = fn == OPSCHED_BINARY_MOD || fn == OPSCHED_BINARY_FMOD;
            check_case(c);
            if (fn == OPSCHED_BINARY_PRELU) break;
            /* on integers: divisors never zero */
            c = binary_case(OPSCHED_OP_BINARY, f, OPSCHED_INT32, OPSCHED_INT32, "2x3x4", "2x1x4",
                            -20, 20);
            c->nonzero[1] = 1;
            check_case(c);
            c = binary_case(OPSCHED_OP_BINARY, f, OPSCHED_INT64, OPSCHED_INT64, "4x5", "5", -20,
                            20);
            c->nonzero[1] = 1;
            check_case(c);
            if (fn >= OPSCHED_BINARY_EQUAL)
                check_case(binary_case(OPSCHED_OP_BINARY, f, OPSCHED_UINT8, OPSCHED_UINT8, "3x4",
                                       "3x4", 0, 5));
            if (fn == OPSCHED_BINARY_EQUAL)
                check_case(binary_case(OPSCHED_OP_BINARY, f, OPSCHED_BOOL, OPSCHED_BOOL, "3x4",
                                       "4", 0, 1));
            break;
        }
    }
    /* a 4-D broadcast against a per-channel operand, for NHWC */
    ocase *c = binary_case(OPSCHED_OP_BINARY, OPSCHED_BINARY_PRELU, OPSCHED_F32, OPSCHED_F32,
                           "2x3x4x5", "3x1x1", -2, 2);
    check_case(c);
    c = binary_case(OPSCHED_OP_BINARY, OPSCHED_BINARY_GREATER, OPSCHED_INT64, OPSCHED_INT64,
                    "2x3x4x5", "1x3x1x5", -3, 3);
    check_case(c);
    summary("binary functions");
}

/* Add, Sub, Mul, Div and Pow on integers; Pow with an exponent of another type. */
static void test_arith_int(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const opsched_op_kind ops[] = {OPSCHED_OP_ADD, OPSCHED_OP_SUB, OPSCHED_OP_MUL,
                                          OPSCHED_OP_DIV};
    static const opsched_dtype types[] = {OPSCHED_INT8, OPSCHED_UINT8, OPSCHED_INT32,
                                          OPSCHED_INT64};
    for (size_t o = 0; o < 4; o++)
        for (size_t t = 0; t < 4; t++) {
            int u8 = types[t] == OPSCHED_UINT8;
            ocase *c = binary_case(ops[o], 0, types[t], types[t], "2x3x4", "3x1", u8 ? 0 : -60,
                                   60);
            c->nonzero[1] = 1;
            if (u8) c->lo[1] = 1;
            check_case(c);
        }
    ocase *c = binary_case(OPSCHED_OP_POW, 0, OPSCHED_INT64, OPSCHED_INT64, "3x4", "4", -3, 3);
    c->lo[1] = 0;
    c->hi[1] = 5;
    check_case(c);
    c = binary_case(OPSCHED_OP_POW, 0, OPSCHED_INT32, OPSCHED_INT32, "3x4", "1", -4, 4);
    c->lo[1] = 0;
    c->hi[1] = 3;
    check_case(c);
    c = binary_case(OPSCHED_OP_POW, 0, OPSCHED_F32, OPSCHED_INT32, "3x4", "4", 0.5, 2);
    c->lo[1] = -2;
    c->hi[1] = 3;
    check_case(c);
    c = binary_case(OPSCHED_OP_POW, 0, OPSCHED_F32, OPSCHED_INT64, "2x3x4x2", "2", -2, 2);
    c->lo[1] = 0;
    c->hi[1] = 3;
    check_case(c);
    c = binary_case(OPSCHED_OP_POW, 0, OPSCHED_INT64, OPSCHED_F32, "6", "6", 0, 5);
    c->steps[1] = 1; /* whole exponents: the result does not hang on a rounding */
    c->lo[1] = 0;
    c->hi[1] = 3;
    check_case(c);
    summary("Add..Pow on integers");
}

static void test_where(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const opsched_dtype types[] = {OPSCHED_F32, OPSCHED_INT64, OPSCHED_BOOL,
                                          OPSCHED_UINT8, OPSCHED_INT8};
    for (size_t t = 0; t < 5; t++) {
        ocase *c = oc_new("Where %s", opsched_dtype_name(types[t]));
        c->lo[1] = c->lo[2] = types[t] == OPSCHED_UINT8 ? 0 : -100;
        c->hi[1] = c->hi[2] = 100;
        int ins[3] = {input(c, "c", OPSCHED_BOOL, "2x1x4"), input(c, "x", types[t], "2x3x4"),
                      input(c, "y", types[t], "4")};
        node(c, OPSCHED_OP_WHERE, NULL, ins, 3, 1);
        check_case(c);
    }
    ocase *c = oc_new("Where f32 4-D");
    int ins[3] = {input(c, "c", OPSCHED_BOOL, "1x3x1x5"), input(c, "x", OPSCHED_F32, "2x3x4x5"),
                  input(c, "y", OPSCHED_F32, "2x3x4x5")};
    node(c, OPSCHED_OP_WHERE, NULL, ins, 3, 1);
    check_case(c);
    summary("Where");
}

static void test_cast(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const opsched_dtype types[] = {OPSCHED_F32,  OPSCHED_F16,   OPSCHED_BF16,
                                          OPSCHED_INT8, OPSCHED_UINT8, OPSCHED_INT32,
                                          OPSCHED_INT64, OPSCHED_BOOL};
    for (size_t f = 0; f < 8; f++)
        for (size_t t = 0; t < 8; t++) {
            opsched_dtype from = types[f], to = types[t];
            ocase *c = oc_new("Cast %s to %s", opsched_dtype_name(from), opsched_dtype_name(to));
            /* within the target's range, so the conversion is defined */
            c->lo[0] = to == OPSCHED_UINT8 || from == OPSCHED_UINT8 ? 0 : -100;
            c->hi[0] = 100;
            if (to == OPSCHED_BOOL) {
                c->lo[0] = -2;
                c->hi[0] = 2;
                c->steps[0] = 2; /* zeros among them */
            }
            opsched_op_attr a = attr0();
            a.cast.to = to;
            int x = input(c, "x", from, "3x4x5");
            node(c, OPSCHED_OP_CAST, &a, &x, 1, 1);
            check_case(c);
        }
    ocase *c = oc_new("Cast f32 to bool with inf and NaN");
    c->specials[0] = 1;
    opsched_op_attr a = attr0();
    a.cast.to = OPSCHED_BOOL;
    int x = input(c, "x", OPSCHED_F32, "4x5");
    node(c, OPSCHED_OP_CAST, &a, &x, 1, 1);
    check_case(c);
    summary("Cast");
}

static void test_quantize(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    struct qcfg {
        const char *label;
        opsched_op_kind op;
        const char *x, *s;
        opsched_dtype q; /* the quantized type; zero point of it when zp */
        int zp;
        int64_t axis, block;
    } cfgs[] = {
        {"Quantize per tensor uint8", OPSCHED_OP_QUANTIZE, "2x3x4", "1", OPSCHED_UINT8, 0, 0, 0},
        {"Quantize per tensor int8 zp", OPSCHED_OP_QUANTIZE, "2x3x4", "1", OPSCHED_INT8, 1, 0, 0},
        {"Quantize per axis int8", OPSCHED_OP_QUANTIZE, "2x3x4", "3", OPSCHED_INT8, 1, 1, 0},
        {"Quantize per axis uint8 4-D", OPSCHED_OP_QUANTIZE, "2x3x4x5", "3", OPSCHED_UINT8, 1, 1,
         0},
        {"Quantize blocked int8", OPSCHED_OP_QUANTIZE, "2x3x5", "2x3x2", OPSCHED_INT8, 1, 2, 3},
        {"Quantize per tensor int32", OPSCHED_OP_QUANTIZE, "2x3x4", "1", OPSCHED_INT32, 1, 0, 0},
        {"Dequantize per tensor int8", OPSCHED_OP_DEQUANTIZE, "2x3x4", "1", OPSCHED_INT8, 1, 0, 0},
        {"Dequantize per axis uint8", OPSCHED_OP_DEQUANTIZE, "4x3", "4", OPSCHED_UINT8, 1, 0, 0},
        {"Dequantize per tensor int32", OPSCHED_OP_DEQUANTIZE, "2x3x4", "1", OPSCHED_INT32, 0, 0,
         0},
        {"Dequantize blocked int8 4-D", OPSCHED_OP_DEQUANTIZE, "2x4x3x2", "2x2x3x2", OPSCHED_INT8,
         1, 1, 2},
    };
    for (size_t i = 0; i < ARRAY_LEN(cfgs); i++) {
        const struct qcfg *k = &cfgs[i];
        ocase *c = oc_new("%s", k->label);
        int q = k->op == OPSCHED_OP_QUANTIZE;
        opsched_op_attr a = attr0();
        a.quant.axis = k->axis;
        a.quant.block_size = k->block;
        a.quant.saturate = 1;
        c->lo[0] = q ? -8 : (k->q == OPSCHED_UINT8 ? 0 : -120);
        c->hi[0] = q ? 8 : 120;
        c->lo[1] = 0.02;
        c->hi[1] = 0.1;
        c->lo[2] = k->q == OPSCHED_UINT8 ? 100 : -10;
        c->hi[2] = k->q == OPSCHED_UINT8 ? 140 : 10;
        c->int_tol = 1; /* a rounding tie may go either way if the CPU divides otherwise */
        int ins[3] = {input(c, "x", q ? OPSCHED_F32 : k->q, k->x), input(c, "s", OPSCHED_F32, k->s),
                      -1};
        if (k->zp) ins[2] = input(c, "zp", k->q, k->s);
        node(c, k->op, &a, ins, k->zp ? 3 : 2, 1);
        check_case(c);
    }
    summary("Quantize/DequantizeLinear");
}

/* ---- reductions --------------------------------------------------------- */

static ocase *reduce_case(opsched_reduce_fn fn, opsched_dtype dt, const char *dims,
                          const int64_t *axes, int n_axes, int keepdims)
{
    char ax[64] = "";
    for (int i = 0; i < n_axes; i++)
        snprintf(ax + strlen(ax), sizeof(ax) - strlen(ax), "%s%lld", i ? "," : "",
                 (long long)axes[i]);
    ocase *c = oc_new("%s %s %s axes [%s] keepdims %d", opsched_reduce_fn_name(fn),
                      opsched_dtype_name(dt), dims, ax, keepdims);
    opsched_op_attr a = attr0();
    a.reduce.fn = fn;
    a.reduce.n_axes = n_axes;
    a.reduce.keepdims = keepdims;
    for (int i = 0; i < n_axes; i++)
        a.reduce.axes[i] = axes[i];
    int positive = fn == OPSCHED_REDUCE_LOGSUM || fn == OPSCHED_REDUCE_PROD;
    c->lo[0] = is_float(dt) ? (positive ? 0.5 : -2) : (dt == OPSCHED_UINT8 ? 0 : -5);
    c->hi[0] = is_float(dt) ? (positive ? 1.5 : 2) : 5;
    if (!is_float(dt) && fn == OPSCHED_REDUCE_LOGSUM) c->lo[0] = 1;
    if (!is_float(dt) && fn == OPSCHED_REDUCE_PROD) {
        c->lo[0] = -2;
        c->hi[0] = 2;
    }
    int x = input(c, "x", dt, dims);
    node(c, OPSCHED_OP_REDUCE, &a, &x, 1, 1);
    return c;
}

static void test_reduce(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const int64_t a0[] = {0}, a1[] = {1}, a02[] = {0, 2}, a_last[] = {-1}, a23[] = {2, 3};
    for (int f = 0; f < OPSCHED_REDUCE_FN_COUNT; f++) {
        opsched_reduce_fn fn = (opsched_reduce_fn)f;
        check_case(reduce_case(fn, OPSCHED_F32, "3x4x5", a1, 1, 1));
        check_case(reduce_case(fn, OPSCHED_F32, "3x4x5", a02, 2, 0));
        check_case(reduce_case(fn, OPSCHED_F32, "3x4x5", NULL, 0, 0));
        check_case(reduce_case(fn, OPSCHED_F32, "2x3x4x5", a1, 1, 1));
        check_case(reduce_case(fn, OPSCHED_INT32, "3x4x5", a_last, 1, 0));
        check_case(reduce_case(fn, OPSCHED_INT64, "3x4x5", a02, 2, 1));
    }
    /* long rows (a block per output) and long strided columns */
    check_case(reduce_case(OPSCHED_REDUCE_SUM, OPSCHED_F32, "3x10000", a_last, 1, 0));
    check_case(reduce_case(OPSCHED_REDUCE_MAX, OPSCHED_F32, "3000x7", a0, 1, 0));
    check_case(reduce_case(OPSCHED_REDUCE_LOGSUMEXP, OPSCHED_F32, "2x8x30x40", a23, 2, 1));
    check_case(reduce_case(OPSCHED_REDUCE_MAX, OPSCHED_UINT8, "4x6", a1, 1, 0));
    check_case(reduce_case(OPSCHED_REDUCE_MIN, OPSCHED_INT8, "4x6", a1, 1, 1));
    /* no axes, noop_with_empty_axes: a copy */
    ocase *c = oc_new("ReduceSum noop_with_empty_axes");
    opsched_op_attr a = attr0();
    a.reduce.fn = OPSCHED_REDUCE_SUM;
    a.reduce.noop_with_empty_axes = 1;
    int x = input(c, "x", OPSCHED_F32, "3x4");
    node(c, OPSCHED_OP_REDUCE, &a, &x, 1, 1);
    check_case(c);
    /* ReduceMean's own kind on integers */
    c = oc_new("ReduceMean int32");
    a = attr0();
    a.reduce.n_axes = 1;
    a.reduce.axes[0] = 1;
    c->lo[0] = -9;
    c->hi[0] = 9;
    x = input(c, "x", OPSCHED_INT32, "3x4x5");
    node(c, OPSCHED_OP_REDUCEMEAN, &a, &x, 1, 1);
    check_case(c);
    summary("Reduce");
}

static void test_argmax(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const opsched_dtype types[] = {OPSCHED_F32, OPSCHED_INT32, OPSCHED_UINT8,
                                          OPSCHED_INT64};
    for (int op = 0; op < 2; op++)
        for (size_t t = 0; t < 4; t++)
            for (int axis = -1; axis < 3; axis++)
                for (int last = 0; last < 2; last++) {
                    opsched_op_kind k = op ? OPSCHED_OP_ARGMIN : OPSCHED_OP_ARGMAX;
                    ocase *c = oc_new("%s %s axis %d keepdims %d select_last %d",
                                      opsched_op_name(k), opsched_dtype_name(types[t]), axis,
                                      axis & 1, last);
                    opsched_op_attr a = attr0();
                    a.arg.axis = axis;
                    a.arg.keepdims = axis & 1;
                    a.arg.select_last_index = last;
                    c->lo[0] = 0;
                    c->hi[0] = 3; /* ties */
                    c->steps[0] = 1;
                    int x = input(c, "x", types[t], axis == 2 ? "2x3x4x5" : "3x4x5");
                    node(c, k, &a, &x, 1, 1);
                    check_case(c);
                }
    ocase *c = oc_new("ArgMax f32 long rows");
    opsched_op_attr a = attr0();
    a.arg.axis = 1;
    int x = input(c, "x", OPSCHED_F32, "4x20000");
    node(c, OPSCHED_OP_ARGMAX, &a, &x, 1, 1);
    check_case(c);
    summary("ArgMax/ArgMin");
}

static void test_softmax_family(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    struct {
        opsched_op_kind op;
        const char *dims;
        int64_t axis;
        int ties;
    } cfgs[] = {
        {OPSCHED_OP_LOGSOFTMAX, "2x5x3", -1, 0}, {OPSCHED_OP_LOGSOFTMAX, "2x5x3", 1, 0},
        {OPSCHED_OP_LOGSOFTMAX, "3x3000", 1, 0}, {OPSCHED_OP_LOGSOFTMAX, "2x3x4x5", 1, 0},
        {OPSCHED_OP_HARDMAX, "2x5x3", -1, 1},    {OPSCHED_OP_HARDMAX, "2x5x3", 0, 1},
        {OPSCHED_OP_HARDMAX, "4x2500", 1, 0},    {OPSCHED_OP_HARDMAX, "2x3x4x5", 1, 1},
    };
    for (size_t i = 0; i < ARRAY_LEN(cfgs); i++) {
        ocase *c = oc_new("%s %s axis %lld", opsched_op_name(cfgs[i].op), cfgs[i].dims,
                          (long long)cfgs[i].axis);
        opsched_op_attr a = attr0();
        a.axis.axis = cfgs[i].axis;
        c->lo[0] = -4;
        c->hi[0] = 4;
        c->steps[0] = cfgs[i].ties;
        int x = input(c, "x", OPSCHED_F32, cfgs[i].dims);
        node(c, cfgs[i].op, &a, &x, 1, 1);
        check_case(c);
    }
    summary("LogSoftmax, Hardmax");
}

static void test_groupnorm(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    struct {
        const char *x, *ch;
        int64_t groups;
    } cfgs[] = {{"2x6x4x5", "6", 3}, {"2x6x4x5", "6", 6}, {"2x6x4x5", "6", 1},
                {"3x4", "4", 2},     {"1x8x9", "8", 4},   {"1x32x64x64", "32", 8}};
    for (size_t i = 0; i < ARRAY_LEN(cfgs); i++) {
        ocase *c = oc_new("GroupNormalization %s groups %lld", cfgs[i].x,
                          (long long)cfgs[i].groups);
        opsched_op_attr a = attr0();
        a.groupnorm.groups = cfgs[i].groups;
        a.groupnorm.epsilon = 1e-5f;
        c->lo[1] = 0.5;
        c->hi[1] = 1.5;
        int ins[3] = {input(c, "x", OPSCHED_F32, cfgs[i].x),
                      tensor(c, "scale", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, cfgs[i].ch),
                      tensor(c, "bias", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, cfgs[i].ch)};
        node(c, OPSCHED_OP_GROUPNORM, &a, ins, 3, 1);
        check_case(c);
    }
    summary("GroupNormalization");
}

static void test_cumsum(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const opsched_dtype types[] = {OPSCHED_F32, OPSCHED_INT32, OPSCHED_INT64};
    static const char *const dims[] = {"3x40", "3x40", "2x3x4x5"};
    static const int64_t axes[] = {1, 0, 1};
    for (size_t t = 0; t < 3; t++)
        for (size_t d = 0; d < 3; d++)
            for (int excl = 0; excl < 2; excl++)
                for (int rev = 0; rev < 2; rev++) {
                    ocase *c = oc_new("CumSum %s %s axis %lld exclusive %d reverse %d",
                                      opsched_dtype_name(types[t]), dims[d], (long long)axes[d],
                                      excl, rev);
                    opsched_op_attr a = attr0();
                    a.cumsum.axis = axes[d];
                    a.cumsum.exclusive = excl;
                    a.cumsum.reverse = rev;
                    c->lo[0] = -10;
                    c->hi[0] = 10;
                    int x = input(c, "x", types[t], dims[d]);
                    node(c, OPSCHED_OP_CUMSUM, &a, &x, 1, 1);
                    check_case(c);
                }
    summary("CumSum");
}

static void test_topk(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    struct {
        opsched_dtype dt;
        const char *dims;
        int64_t axis, k;
        int ties;
    } cfgs[] = {
        {OPSCHED_F32, "4x10", -1, 3, 1},      /* a warp selecting */
        {OPSCHED_F32, "3x100", 1, 20, 1},     /* bitonic sort */
        {OPSCHED_F32, "2x3000", 1, 5, 0},     /* a block selecting */
        {OPSCHED_F32, "2x3000", 1, 40, 1},    /* a block selecting, many passes */
        {OPSCHED_F32, "10x6", 0, 4, 1},       /* strided lines */
        {OPSCHED_F32, "2x3x12x5", 2, 12, 1},  /* the whole axis, 4-D */
        {OPSCHED_INT64, "5x17", 1, 9, 1},     /* bitonic on int64 */
        {OPSCHED_INT32, "5x17", 1, 0, 1},     /* k = 0 */
        {OPSCHED_UINT8, "6x33", -1, 2, 1},
    };
    for (size_t i = 0; i < ARRAY_LEN(cfgs); i++)
        for (int largest = 0; largest < 2; largest++) {
            ocase *c = oc_new("TopK %s %s axis %lld k %lld largest %d",
                              opsched_dtype_name(cfgs[i].dt), cfgs[i].dims,
                              (long long)cfgs[i].axis, (long long)cfgs[i].k, largest);
            opsched_op_attr a = attr0();
            a.topk.axis = cfgs[i].axis;
            a.topk.k = cfgs[i].k;
            a.topk.largest = largest;
            a.topk.sorted = 1;
            c->lo[0] = cfgs[i].dt == OPSCHED_UINT8 ? 0 : -20;
            c->hi[0] = 20;
            c->steps[0] = cfgs[i].ties;
            int x = input(c, "x", cfgs[i].dt, cfgs[i].dims);
            node(c, OPSCHED_OP_TOPK, &a, &x, 1, 2);
            check_case(c);
        }
    summary("TopK");
}

/* ---- gathers and scatters ---------------------------------------------- */

static void test_gather_elements(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const opsched_dtype types[] = {OPSCHED_F32, OPSCHED_INT64, OPSCHED_BOOL,
                                          OPSCHED_UINT8};
    /* outside the axis the indices do not exceed the data (4x5x3) */
    static const char *const idx_dims[] = {"6x5x2", "4x7x2", "2x3x4x2"};
    for (size_t t = 0; t < 4; t++)
        for (int axis = 0; axis < 3; axis++)
            for (int i32 = 0; i32 < 2; i32++) {
                ocase *c = oc_new("GatherElements %s axis %d %s indices",
                                  opsched_dtype_name(types[t]), axis, i32 ? "int32" : "int64");
                opsched_op_attr a = attr0();
                a.axis.axis = axis;
                int len = axis == 0 ? 4 : (axis == 1 ? 5 : 3);
                c->lo[0] = 0;
                c->hi[0] = 100;
                c->lo[1] = -len; /* negative ones count from the end */
                c->hi[1] = len - 1;
                int ins[2] = {input(c, "data", types[t], axis == 2 ? "2x4x5x3" : "4x5x3"),
                              input(c, "idx", i32 ? OPSCHED_INT32 : OPSCHED_INT64,
                                    axis == 2 ? "2x3x4x2" : idx_dims[axis])};
                if (axis == 2) a.axis.axis = 3;
                node(c, OPSCHED_OP_GATHER_ELEMENTS, &a, ins, 2, 1);
                check_case(c);
            }
    summary("GatherElements");
}

static void test_gather_nd(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    struct {
        opsched_dtype dt;
        const char *data, *idx;
        int64_t b;
        int i32;
    } cfgs[] = {
        {OPSCHED_F32, "2x3x4", "5x2", 0, 0},     /* slices of 4 */
        {OPSCHED_F32, "2x3x4", "2x2x3", 0, 1},   /* single elements */
        {OPSCHED_F32, "2x3x4", "2x1", 1, 0},     /* batch_dims 1 */
        {OPSCHED_UINT8, "2x3x4x2", "2x3x1", 1, 1},
        {OPSCHED_INT64, "4x5", "3x1", 0, 0},
    };
    for (size_t i = 0; i < ARRAY_LEN(cfgs); i++) {
        ocase *c = oc_new("GatherND %s data %s indices %s batch_dims %lld",
                          opsched_dtype_name(cfgs[i].dt), cfgs[i].data, cfgs[i].idx,
                          (long long)cfgs[i].b);
        opsched_op_attr a = attr0();
        a.gather_nd.batch_dims = cfgs[i].b;
        c->lo[0] = 0;
        c->hi[0] = 100;
        c->lo[1] = -2; /* negative ones count from the end; every extent here is 2 or more */
        c->hi[1] = 1;
        int ins[2] = {input(c, "data", cfgs[i].dt, cfgs[i].data),
                      input(c, "idx", cfgs[i].i32 ? OPSCHED_INT32 : OPSCHED_INT64, cfgs[i].idx)};
        node(c, OPSCHED_OP_GATHER_ND, &a, ins, 2, 1);
        check_case(c);
    }
    summary("GatherND");
}

static void test_scatter(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const opsched_scatter_reduction reds[] = {OPSCHED_SCATTER_NONE, OPSCHED_SCATTER_ADD,
                                                     OPSCHED_SCATTER_MUL, OPSCHED_SCATTER_MAX,
                                                     OPSCHED_SCATTER_MIN};
    static const char *const red_names[] = {"none", "add", "mul", "max", "min"};
    static const opsched_dtype types[] = {OPSCHED_F32, OPSCHED_INT32, OPSCHED_INT64,
                                          OPSCHED_UINT8, OPSCHED_INT8};
    /* ScatterElements on axis 1 of [3, 6]: unique indices per row for "none" */
    static const int64_t uniq[] = {5, 0, -3, 1, 4, -2, 2, 0, 3, 1};
    static const int64_t dup[] = {1, 1, -5, 4, 1, 0, 0, 0, 5, -1};
    for (size_t r = 0; r < 5; r++)
        for (size_t t = 0; t < 5; t++) {
            ocase *c = oc_new("ScatterElements %s %s", red_names[r], opsched_dtype_name(types[t]));
            opsched_op_attr a = attr0();
            a.scatter.axis = 1;
            a.scatter.reduction = reds[r];
            int small = reds[r] == OPSCHED_SCATTER_MUL || !is_float(types[t]);
            c->lo[0] = c->lo[2] = types[t] == OPSCHED_UINT8 ? 0 : (small ? -3 : -5);
            c->hi[0] = c->hi[2] = small ? 3 : 5;
            int64_t idx[10];
            for (int k = 0; k < 10; k++)
                idx[k] = r == 0 ? uniq[k] : dup[k];
            /* rows of 5 updates: row 0 and row 1 of the data */
            int ins[3] = {input(c, "data", types[t], "2x6"),
                          const_ints(c, "idx", OPSCHED_INT64, "2x5", idx),
                          input(c, "upd", types[t], "2x5")};
            node(c, OPSCHED_OP_SCATTER_ELEMENTS, &a, ins, 3, 1);
            check_case(c);
        }
    /* axis 0 of a 4-D tensor, int32 indices */
    {
        ocase *c = oc_new("ScatterElements add 4-D axis 0");
        opsched_op_attr a = attr0();
        a.scatter.axis = 0;
        a.scatter.reduction = OPSCHED_SCATTER_ADD;
        c->lo[1] = -3;
        c->hi[1] = 2;
        int ins[3] = {input(c, "data", OPSCHED_F32, "3x2x4x5"),
                      input(c, "idx", OPSCHED_INT32, "4x2x4x5"),
                      input(c, "upd", OPSCHED_F32, "4x2x4x5")};
        node(c, OPSCHED_OP_SCATTER_ELEMENTS, &a, ins, 3, 1);
        check_case(c);
    }
    /* ScatterND: rows (k = 1) and elements (k = 2) */
    static const int64_t rows_uniq[] = {3, 0, -3}, rows_dup[] = {1, 1, -1};
    static const int64_t el_uniq[] = {0, 1, 3, 4, -1, 0}, el_dup[] = {0, 1, 0, 1, 3, 3};
    for (size_t r = 0; r < 5; r++)
        for (size_t t = 0; t < 3; t++) {
            ocase *c = oc_new("ScatterND rows %s %s", red_names[r], opsched_dtype_name(types[t]));
            opsched_op_attr a = attr0();
            a.scatter.reduction = reds[r];
            c->lo[0] = c->lo[2] = -3;
            c->hi[0] = c->hi[2] = 3;
            int ins[3] = {input(c, "data", types[t], "4x5"),
                          const_ints(c, "idx", OPSCHED_INT64, "3x1", r ? rows_dup : rows_uniq),
                          input(c, "upd", types[t], "3x5")};
            node(c, OPSCHED_OP_SCATTER_ND, &a, ins, 3, 1);
            check_case(c);
            c = oc_new("ScatterND elements %s %s", red_names[r], opsched_dtype_name(types[t]));
            c->lo[0] = c->lo[2] = -3;
            c->hi[0] = c->hi[2] = 3;
            ins[0] = input(c, "data", types[t], "4x5");
            ins[1] = const_ints(c, "idx", OPSCHED_INT32, "3x2", r ? el_dup : el_uniq);
            ins[2] = input(c, "upd", types[t], "3");
            node(c, OPSCHED_OP_SCATTER_ND, &a, ins, 3, 1);
            check_case(c);
        }
    summary("ScatterElements/ND");
}

static void test_tile_trilu_onehot(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    struct {
        opsched_dtype dt;
        const char *dims;
        int64_t rep[4];
    } tiles[] = {{OPSCHED_F32, "2x3", {2, 3}},
                 {OPSCHED_BOOL, "1x2x2", {3, 1, 2}},
                 {OPSCHED_INT64, "2x3x2x2", {1, 2, 2, 3}},
                 {OPSCHED_F32, "2x3", {0, 2}}};
    for (size_t i = 0; i < ARRAY_LEN(tiles); i++) {
        ocase *c = oc_new("Tile %s %s", opsched_dtype_name(tiles[i].dt), tiles[i].dims);
        opsched_op_attr a = attr0();
        memcpy(a.tile.repeats, tiles[i].rep, sizeof(tiles[i].rep));
        int x = input(c, "x", tiles[i].dt, tiles[i].dims);
        node(c, OPSCHED_OP_TILE, &a, &x, 1, 1);
        check_case(c);
    }
    static const int64_t ks[] = {-1, 0, 2, 7};
    for (int upper = 0; upper < 2; upper++)
        for (size_t k = 0; k < 4; k++)
            for (int t = 0; t < 2; t++) {
                ocase *c = oc_new("Trilu %s k %lld %s", upper ? "upper" : "lower", (long long)ks[k],
                                  t ? "int64 4-D" : "f32");
                opsched_op_attr a = attr0();
                a.trilu.upper = upper;
                a.trilu.k = ks[k];
                c->lo[0] = 1; /* no zeros of its own */
                c->hi[0] = 9;
                int x = input(c, "x", t ? OPSCHED_INT64 : OPSCHED_F32, t ? "2x3x4x5" : "2x4x6");
                node(c, OPSCHED_OP_TRILU, &a, &x, 1, 1);
                check_case(c);
            }
    struct {
        opsched_dtype it, vt;
        const char *dims;
        int64_t axis, depth;
    } hots[] = {{OPSCHED_INT64, OPSCHED_F32, "2x3", -1, 4},
                {OPSCHED_INT64, OPSCHED_F32, "2x3", 0, 4},
                {OPSCHED_INT32, OPSCHED_INT64, "2x3x2", 1, 5},
                {OPSCHED_F32, OPSCHED_F32, "3x2x2", 1, 3},
                {OPSCHED_UINT8, OPSCHED_INT32, "7", 0, 6}};
    for (size_t i = 0; i < ARRAY_LEN(hots); i++) {
        ocase *c = oc_new("OneHot %s indices %s values %s axis %lld", opsched_dtype_name(hots[i].it),
                          opsched_dtype_name(hots[i].vt), hots[i].dims, (long long)hots[i].axis);
        opsched_op_attr a = attr0();
        a.onehot.axis = hots[i].axis;
        a.onehot.depth = hots[i].depth;
        /* negative indices and some out of range (a row of "off") */
        c->lo[0] = hots[i].it == OPSCHED_UINT8 ? 0 : -hots[i].depth - 1;
        c->hi[0] = hots[i].depth;
        c->steps[0] = 1;
        c->lo[1] = -5;
        c->hi[1] = 5;
        int ins[2] = {input(c, "idx", hots[i].it, hots[i].dims), input(c, "values", hots[i].vt, "2")};
        node(c, OPSCHED_OP_ONEHOT, &a, ins, 2, 1);
        check_case(c);
    }
    summary("Tile, Trilu, OneHot");
}

/* ---- Resize ------------------------------------------------------------- */

static ocase *resize_case(opsched_dtype dt, opsched_resize_mode mode, opsched_resize_coord coord,
                          opsched_resize_nearest nm, const char *in, const int64_t *out, int aa,
                          int exclude, float A)
{
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {"half_pixel",    "half_pixel_symmetric",
                                         "pytorch_half_pixel", "align_corners",
                                         "asymmetric",    "tf_crop_and_resize"};
    ocase *c = oc_new("Resize %s %s %s nearest_mode %d %s to %lldx%lld antialias %d exclude %d "
                      "A %g",
                      opsched_dtype_name(dt), modes[mode], coords[coord], (int)nm, in,
                      (long long)out[2], (long long)out[3], aa, exclude, A);
    int x = input(c, "x", dt, in);
    const opsched_tensor *t = opsched_graph_tensor(c->g, x);
    opsched_op_attr a = attr0();
    opsched_resize_attr *r = &a.resize;
    r->mode = mode;
    r->coord = coord;
    r->nearest = nm;
    r->cubic_coeff_a = A;
    r->exclude_outside = exclude;
    r->antialias = aa;
    r->extrapolation_value = 7.0f;
    for (int d = 0; d < t->shape.ndim; d++) {
        r->sizes[d] = out[d];
        r->scales[d] = (float)out[d] / (float)t->shape.d[d];
        r->roi[d] = d < 2 ? 0.0f : 0.1f * (float)d;
        r->roi[t->shape.ndim + d] = d < 2 ? 1.0f : 0.6f + 0.25f * (float)d;
    }
    c->lo[0] = dt == OPSCHED_UINT8 ? 0 : -5;
    c->hi[0] = dt == OPSCHED_UINT8 ? 255 : 5;
    node(c, OPSCHED_OP_RESIZE, &a, &x, 1, 1);
    return c;
}

static void test_resize(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const int64_t up[] = {1, 2, 9, 11}, down[] = {1, 2, 3, 4}, mixed[] = {2, 2, 2, 13};
    const int64_t *outs[] = {up, down, mixed};
    for (int s = 0; s < 3; s++) {
        for (int coord = 0; coord < 6; coord++) {
            for (int nm = 0; nm < 4; nm++)
                check_case(resize_case(OPSCHED_F32, OPSCHED_RESIZE_NEAREST,
                                       (opsched_resize_coord)coord, (opsched_resize_nearest)nm,
                                       "2x2x5x6", outs[s], 0, 0, -0.75f));
            check_case(resize_case(OPSCHED_F32, OPSCHED_RESIZE_LINEAR, (opsched_resize_coord)coord,
                                   OPSCHED_NEAREST_ROUND_PREFER_FLOOR, "2x2x5x6", outs[s], 0, 0,
                                   -0.75f));
            check_case(resize_case(OPSCHED_F32, OPSCHED_RESIZE_CUBIC, (opsched_resize_coord)coord,
                                   OPSCHED_NEAREST_ROUND_PREFER_FLOOR, "2x2x5x6", outs[s], 0, 0,
                                   -0.75f));
            check_case(resize_case(OPSCHED_F32, OPSCHED_RESIZE_CUBIC, (opsched_resize_coord)coord,
                                   OPSCHED_NEAREST_ROUND_PREFER_FLOOR, "2x2x5x6", outs[s], 0, 1,
                                   -0.5f));
        }
        for (int mode = 1; mode < 3; mode++)
            check_case(resize_case(OPSCHED_F32, (opsched_resize_mode)mode, OPSCHED_COORD_HALF_PIXEL,
                                   OPSCHED_NEAREST_ROUND_PREFER_FLOOR, "2x2x5x6", outs[s], 1, 0,
                                   -0.75f));
        check_case(resize_case(OPSCHED_UINT8, OPSCHED_RESIZE_NEAREST, OPSCHED_COORD_ASYMMETRIC,
                               OPSCHED_NEAREST_FLOOR, "2x2x5x6", outs[s], 0, 0, -0.75f));
    }
    /* one axis resized, and a segmentation head's upscale (the 32-bit
     * kernels, one and two resized axes, every tap weight in play) */
    static const int64_t one_axis[] = {2, 2, 5, 13}, seg[] = {1, 21, 520, 520};
    for (int mode = 1; mode < 3; mode++) {
        check_case(resize_case(OPSCHED_F32, (opsched_resize_mode)mode, OPSCHED_COORD_HALF_PIXEL,
                               OPSCHED_NEAREST_ROUND_PREFER_FLOOR, "2x2x5x6", one_axis, 0, 0,
                               -0.75f));
        check_case(resize_case(OPSCHED_F32, (opsched_resize_mode)mode, OPSCHED_COORD_HALF_PIXEL,
                               OPSCHED_NEAREST_ROUND_PREFER_FLOOR, "1x21x65x65", seg, 0, 0,
                               -0.75f));
    }
    /* a strong antialiased downscale */
    static const int64_t tiny[] = {1, 3, 4, 5};
    check_case(resize_case(OPSCHED_F32, OPSCHED_RESIZE_CUBIC, OPSCHED_COORD_HALF_PIXEL,
                           OPSCHED_NEAREST_ROUND_PREFER_FLOOR, "1x3x40x50", tiny, 1, 0, -0.75f));
    summary("Resize");
}

/* ---- ConvTranspose ------------------------------------------------------ */

static void test_conv_transpose(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    struct {
        const char *x, *w;
        int64_t stride, dil, groups;
        int64_t pads[4], op[2];
        int bias;
    } cfgs[] = {
        {"1x4x5x5", "4x3x3x3", 2, 1, 1, {1, 1, 1, 1}, {1, 1}, 1},
        {"2x4x6x6", "4x2x3x3", 1, 1, 2, {1, 1, 1, 1}, {0, 0}, 1},
        {"1x3x5x4", "3x2x3x3", 1, 2, 1, {0, 0, 0, 0}, {0, 0}, 0},
        {"1x2x4x4", "2x3x3x3", 2, 1, 1, {0, 1, 2, 0}, {1, 0}, 1},
        {"2x8x7x7", "8x4x2x2", 2, 1, 1, {0, 0, 0, 0}, {0, 0}, 1},
        {"1x6x5x5", "6x1x3x3", 1, 1, 6, {1, 1, 1, 1}, {0, 0}, 1}, /* depthwise */
    };
    for (size_t i = 0; i < ARRAY_LEN(cfgs); i++) {
        ocase *c = oc_new("ConvTranspose x %s w %s stride %lld dilation %lld groups %lld",
                          cfgs[i].x, cfgs[i].w, (long long)cfgs[i].stride, (long long)cfgs[i].dil,
                          (long long)cfgs[i].groups);
        c->half_may_fail = 1;
        c->nhwc_may_fail = 1;
        opsched_op_attr a = attr0();
        opsched_conv_transpose_attr *t = &a.conv_transpose;
        t->stride[0] = t->stride[1] = cfgs[i].stride;
        t->dilation[0] = t->dilation[1] = cfgs[i].dil;
        t->groups = cfgs[i].groups;
        memcpy(t->pads, cfgs[i].pads, sizeof(t->pads));
        memcpy(t->output_padding, cfgs[i].op, sizeof(t->output_padding));
        int ins[3] = {input(c, "x", OPSCHED_F32, cfgs[i].x),
                      tensor(c, "w", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, cfgs[i].w), -1};
        const opsched_tensor *w = opsched_graph_tensor(c->g, ins[1]);
        char m[32];
        snprintf(m, sizeof(m), "%lld", (long long)(w->shape.d[1] * cfgs[i].groups));
        if (cfgs[i].bias) ins[2] = tensor(c, "b", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, m);
        node(c, OPSCHED_OP_CONV_TRANSPOSE, &a, ins, cfgs[i].bias ? 3 : 2, 1);
        check_case(c);
    }
    summary("ConvTranspose");
}

/* ---- 3-D windows, wide pooling padding, empty tensors -------------------- */

/* 3-D Conv and ConvTranspose (cuDNN's Nd descriptors; asymmetric padding
 * through the pad kernel), 3-D pools and 2-D pools with padding wider than
 * half the kernel (the pooling kernel), and 2-D pools of channels a
 * multiple of four (in NHWC the four-channel kernel), against the CPU
 * backend. */
static void test_windows_3d(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    struct {
        const char *x, *w;
        int transpose;
        int64_t groups, stride;
        int64_t pads[4], op[2];
        opsched_window_depth dp;
    } convs[] = {
        {"1x4x5x6x6", "8x4x3x3x3", 0, 1, 1, {1, 1, 1, 1}, {0, 0}, {.pad_begin = 1, .pad_end = 1}},
        {"2x4x6x5x5", "6x2x2x3x3", 0, 2, 2, {1, 0, 0, 1}, {0, 0}, {.stride = 2, .pad_begin = 1}},
        {"1x3x6x6x6", "3x1x3x2x2", 0, 3, 1, {0, 0, 0, 0}, {0, 0},
         {.dilation = 2, .pad_begin = 2, .pad_end = 2}},
        {"1x4x3x4x4", "4x2x2x3x3", 1, 2, 2, {1, 1, 0, 0}, {1, 0},
         {.stride = 2, .pad_begin = 1, .output_padding = 1}},
        {"2x2x2x3x3", "2x3x3x3x3", 1, 1, 1, {1, 1, 1, 1}, {0, 0}, {.pad_begin = 1, .pad_end = 1}},
    };
    for (size_t i = 0; i < ARRAY_LEN(convs); i++) {
        ocase *c = oc_new("%s 3-D x %s w %s groups %lld", convs[i].transpose ? "ConvTranspose" : "Conv",
                          convs[i].x, convs[i].w, (long long)convs[i].groups);
        c->half_may_fail = 1;
        opsched_op_attr a = attr0();
        int ins[3] = {input(c, "x", OPSCHED_F32, convs[i].x),
                      tensor(c, "w", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, convs[i].w), -1};
        const opsched_tensor *w = opsched_graph_tensor(c->g, ins[1]);
        int64_t m = convs[i].transpose ? w->shape.d[1] * convs[i].groups : w->shape.d[0];
        char ms[32];
        snprintf(ms, sizeof(ms), "%lld", (long long)m);
        ins[2] = tensor(c, "b", OPSCHED_TENSOR_WEIGHT, OPSCHED_F32, ms);
        if (convs[i].transpose) {
            opsched_conv_transpose_attr *t = &a.conv_transpose;
            t->groups = convs[i].groups;
            t->stride[0] = t->stride[1] = convs[i].stride;
            memcpy(t->pads, convs[i].pads, sizeof(t->pads));
            memcpy(t->output_padding, convs[i].op, sizeof(t->output_padding));
            t->depth = convs[i].dp;
            node(c, OPSCHED_OP_CONV_TRANSPOSE, &a, ins, 3, 1);
        } else {
            opsched_conv_attr *k = &a.conv;
            k->groups = convs[i].groups;
            k->stride[0] = k->stride[1] = convs[i].stride;
            memcpy(k->pads, convs[i].pads, sizeof(k->pads));
            k->depth = convs[i].dp;
            node(c, OPSCHED_OP_CONV, &a, ins, 3, 1);
        }
        check_case(c);
    }
    struct {
        const char *x;
        opsched_op_kind op;
        int64_t k[2], s[2], d[2], pads[4];
        int ceil, incl;
        opsched_window_depth dp;
    } pools[] = {
        {"1x3x5x6x6", OPSCHED_OP_MAXPOOL, {3, 3}, {1, 2}, {2, 1}, {1, 0, 1, 1}, 1, 0,
         {.kernel = 2, .stride = 2, .dilation = 1, .pad_begin = 1}},
        {"2x2x4x5x5", OPSCHED_OP_AVGPOOL, {2, 2}, {2, 2}, {1, 1}, {1, 0, 0, 1}, 0, 1,
         {.kernel = 3, .stride = 1, .dilation = 1, .pad_begin = 1, .pad_end = 1}},
        {"2x2x4x5x5", OPSCHED_OP_AVGPOOL, {2, 3}, {2, 1}, {1, 1}, {0, 1, 1, 1}, 1, 0,
         {.kernel = 2, .stride = 2, .dilation = 1, .pad_end = 1}},
        {"1x2x5x5", OPSCHED_OP_MAXPOOL, {3, 3}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 0, 0, {0}},
        {"1x2x5x5", OPSCHED_OP_AVGPOOL, {3, 3}, {1, 1}, {1, 1}, {2, 1, 2, 2}, 0, 1, {0}},
        {"1x2x5x5", OPSCHED_OP_AVGPOOL, {3, 3}, {2, 2}, {1, 1}, {2, 2, 2, 2}, 0, 0, {0}},
        /* channels a multiple of four: in NHWC the kernel that reads four
         * channels a thread (ceil mode, asymmetric padding, dilation: always;
         * the symmetric average where it measures faster than cuDNN) */
        {"2x8x9x9", OPSCHED_OP_MAXPOOL, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, 1, 0, {0}},
        {"2x8x9x9", OPSCHED_OP_AVGPOOL, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 0, 1, {0}},
        {"2x8x7x7", OPSCHED_OP_AVGPOOL, {3, 3}, {2, 2}, {1, 1}, {0, 1, 1, 0}, 1, 0, {0}},
        {"1x12x6x6", OPSCHED_OP_MAXPOOL, {2, 3}, {1, 2}, {2, 1}, {1, 1, 1, 1}, 0, 0, {0}},
    };
    for (size_t i = 0; i < ARRAY_LEN(pools); i++) {
        ocase *c = oc_new("%s x %s kernel %lldx%lld pads %lld,%lld,%lld,%lld",
                          opsched_op_name(pools[i].op), pools[i].x, (long long)pools[i].k[0],
                          (long long)pools[i].k[1], (long long)pools[i].pads[0],
                          (long long)pools[i].pads[1], (long long)pools[i].pads[2],
                          (long long)pools[i].pads[3]);
        opsched_op_attr a = attr0();
        opsched_pool_attr *p = &a.pool;
        memcpy(p->kernel, pools[i].k, sizeof(p->kernel));
        memcpy(p->stride, pools[i].s, sizeof(p->stride));
        memcpy(p->dilation, pools[i].d, sizeof(p->dilation));
        memcpy(p->pads, pools[i].pads, sizeof(p->pads));
        p->ceil_mode = pools[i].ceil;
        p->count_include_pad = pools[i].incl;
        p->depth = pools[i].dp;
        int x = input(c, "x", OPSCHED_F32, pools[i].x);
        node(c, pools[i].op, &a, &x, 1, 1);
        check_case(c);
    }
    /* MaxPool's Indices on integers (exact in every math mode, so ties
     * break alike: the first in window order), both storage orders */
    for (int order = 0; order < 2; order++) {
        ocase *c = oc_new("MaxPool with Indices, storage_order %d", order);
        c->steps[0] = 1;
        c->lo[0] = -20;
        c->hi[0] = 20;
        opsched_op_attr a = attr0();
        a.pool.kernel[0] = 3;
        a.pool.kernel[1] = 2;
        a.pool.stride[0] = 2;
        a.pool.pads[0] = a.pool.pads[3] = 1;
        a.pool.storage_order = order;
        int x = input(c, "x", OPSCHED_F32, "2x3x7x6");
        node(c, OPSCHED_OP_MAXPOOL, &a, &x, 1, 2);
        check_case(c);
    }
    summary("3-D windows, wide pooling padding, MaxPool's Indices");
}

/* Nodes whose outputs have no elements plan and launch as nothing. */
static void test_empty_tensors(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    /* "0" is no dimension to opsched_shape_parse: the shapes are built here. */
    opsched_shape s3 = {3, {3, 0, 5}}, s4 = {4, {0, 2, 3, 4}};
    ocase *c = oc_new("Relu of a 3x0x5 tensor");
    int x = -1;
    assert_int_equal(opsched_graph_add_tensor(c->g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s3, &x),
                     OPSCHED_OK);
    opsched_op_attr a = attr0();
    node(c, OPSCHED_OP_RELU, &a, &x, 1, 1);
    check_case(c);
    c = oc_new("MaxPool of a 0x2x3x4 tensor");
    assert_int_equal(opsched_graph_add_tensor(c->g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s4, &x),
                     OPSCHED_OK);
    a.pool.kernel[0] = 1;
    a.pool.kernel[1] = 2;
    node(c, OPSCHED_OP_MAXPOOL, &a, &x, 1, 1);
    check_case(c);
    summary("empty tensors");
}

/* ---- data movement on every type ---------------------------------------- */

static void test_data_movement_types(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static const opsched_dtype types[] = {OPSCHED_INT8, OPSCHED_UINT8, OPSCHED_INT32,
                                          OPSCHED_INT64, OPSCHED_BOOL};
    for (size_t t = 0; t < 5; t++) {
        opsched_dtype dt = types[t];
        const char *name = opsched_dtype_name(dt);
        double lo = dt == OPSCHED_UINT8 ? 0 : -100;
        /* Gather */
        ocase *c = oc_new("Gather %s", name);
        opsched_op_attr a = attr0();
        a.axis.axis = 1;
        c->lo[0] = lo;
        c->hi[0] = 100;
        int ins[3] = {input(c, "x", dt, "2x3x4"), input(c, "i", OPSCHED_INT64, "4"), -1};
        node(c, OPSCHED_OP_GATHER, &a, ins, 2, 1);
        c->lo[1] = -3;
        c->hi[1] = 2;
        check_case(c);
        /* Slice with a negative step */
        c = oc_new("Slice %s", name);
        a = attr0();
        c->lo[0] = lo;
        c->hi[0] = 100;
        int64_t st[3] = {0, 2, 1}, en[3] = {2, -1, 4}, sp[3] = {1, -1, 2};
        for (int d = 0; d < 3; d++) {
            a.slice.starts[d] = st[d];
            a.slice.ends[d] = en[d];
            a.slice.steps[d] = sp[d];
        }
        ins[0] = input(c, "x", dt, "2x3x4");
        node(c, OPSCHED_OP_SLICE, &a, ins, 1, 1);
        check_case(c);
        /* Pad: constant (4-D), reflect, edge */
        for (int mode = 0; mode < 3; mode++) {
            c = oc_new("Pad %s mode %d", name, mode);
            a = attr0();
            a.pad.mode = (opsched_pad_mode)mode;
            a.pad.value = dt == OPSCHED_BOOL ? 1.0f : 7.0f;
            c->lo[0] = lo;
            c->hi[0] = 100;
            if (mode == 0) {
                int64_t pads[8] = {0, 1, 2, 0, 1, 0, 1, 3};
                memcpy(a.pad.pads, pads, sizeof(pads));
                ins[0] = input(c, "x", dt, "2x3x4x5");
            } else {
                int64_t pads[6] = {1, 0, 2, 0, 2, 1};
                memcpy(a.pad.pads, pads, sizeof(pads));
                ins[0] = input(c, "x", dt, "2x3x4");
            }
            node(c, OPSCHED_OP_PAD, &a, ins, 1, 1);
            check_case(c);
        }
        /* Concat, Transpose, Expand, Reshape */
        c = oc_new("Concat %s", name);
        a = attr0();
        a.axis.axis = 1;
        c->lo[0] = c->lo[1] = lo;
        c->hi[0] = c->hi[1] = 100;
        ins[0] = input(c, "a", dt, "2x3x4");
        ins[1] = input(c, "b", dt, "2x2x4");
        node(c, OPSCHED_OP_CONCAT, &a, ins, 2, 1);
        check_case(c);
        c = oc_new("Transpose %s", name);
        a = attr0();
        a.transpose.n = 4;
        int64_t perm[4] = {0, 2, 3, 1};
        memcpy(a.transpose.perm, perm, sizeof(perm));
        c->lo[0] = lo;
        c->hi[0] = 100;
        ins[0] = input(c, "x", dt, "2x3x4x5");
        node(c, OPSCHED_OP_TRANSPOSE, &a, ins, 1, 1);
        check_case(c);
        c = oc_new("Expand %s", name);
        a = attr0();
        assert_int_equal(opsched_shape_parse("2x3x4", &a.shape.shape), OPSCHED_OK);
        c->lo[0] = lo;
        c->hi[0] = 100;
        ins[0] = input(c, "x", dt, "3x1");
        node(c, OPSCHED_OP_EXPAND, &a, ins, 1, 1);
        check_case(c);
        c = oc_new("Reshape %s", name);
        a = attr0();
        assert_int_equal(opsched_shape_parse("4x6", &a.shape.shape), OPSCHED_OK);
        c->lo[0] = lo;
        c->hi[0] = 100;
        ins[0] = input(c, "x", dt, "2x3x4");
        node(c, OPSCHED_OP_RESHAPE, &a, ins, 1, 1);
        check_case(c);
    }
    summary("data movement on integer and bool data");
}

/* ---- known answers ------------------------------------------------------- */

/* Runs c on the GPU (fp32, NCHW) with the given inputs and checks output
 * j against want. */
static void known(ocase *c, double *const *in, int j, const double *want, size_t n, double tol)
{
    opsched_plan_options o = {.math = OPSCHED_MATH_FP32, .layout = OPSCHED_LAYOUT_NCHW};
    run_out r;
    opsched_status st = run_on(env.gpu, c, &o, in, &r);
    if (st != OPSCHED_OK) fail_msg("%s: %s", c->label, r.why);
    const opsched_node *nd = opsched_graph_node(c->g, c->node);
    size_t cnt = (size_t)opsched_shape_numel(
        &opsched_graph_tensor(c->g, nd->outputs[j])->shape);
    assert_int_equal(cnt, n);
    for (size_t k = 0; k < n; k++)
        if (!(fabs(r.v[j][k] - want[k]) <= tol))
            fail_msg("%s: output %d element %zu is %.9g, want %.9g", c->label, j, k, r.v[j][k],
                     want[k]);
    if (env.verbose) print_message("  ok %s\n", c->label);
    run_out_free(&r);
}

static void test_known_answers(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    opsched_op_attr a;
    /* integer Div truncates toward zero; Mod takes the divisor's sign, Fmod the dividend's */
    {
        double x[] = {-7, 7, -7, 7, 0}, y[] = {3, -3, -3, 3, 5};
        double *in[] = {x, y};
        static const struct {
            opsched_op_kind op;
            opsched_binary_fn fn;
            double want[5];
        } k[] = {{OPSCHED_OP_DIV, 0, {-2, -2, 2, 2, 0}},
                 {OPSCHED_OP_BINARY, OPSCHED_BINARY_MOD, {2, -2, -1, 1, 0}},
                 {OPSCHED_OP_BINARY, OPSCHED_BINARY_FMOD, {-1, 1, -1, 1, 0}}};
        for (size_t i = 0; i < 3; i++)
            for (int t = 0; t < 2; t++) {
                ocase *c = binary_case(k[i].op, k[i].fn, t ? OPSCHED_INT64 : OPSCHED_INT32,
                                       t ? OPSCHED_INT64 : OPSCHED_INT32, "5", "5", 0, 1);
                known(c, in, 0, k[i].want, 5, 0);
                oc_free(c);
            }
        ocase *c = binary_case(OPSCHED_OP_BINARY, OPSCHED_BINARY_MOD, OPSCHED_F32, OPSCHED_F32, "5",
                               "5", 0, 1);
        static const double fmodw[] = {2, -2, -1, 1, 0};
        known(c, in, 0, fmodw, 5, 1e-6);
        oc_free(c);
    }
    /* Cast: floats truncate toward zero; to bool, "not zero"; to f16 in fp32, f16's value */
    {
        double x[] = {-2.7, 2.7, 0.5, -0.0, 0.1};
        double *in[] = {x};
        static const struct {
            opsched_dtype to;
            double want[5];
        } k[] = {{OPSCHED_INT32, {-2, 2, 0, 0, 0}},
                 {OPSCHED_INT8, {-2, 2, 0, 0, 0}},
                 {OPSCHED_BOOL, {1, 1, 1, 0, 1}},
                 {OPSCHED_F16, {-2.69921875, 2.69921875, 0.5, 0, 0.0999755859375}}};
        for (size_t i = 0; i < ARRAY_LEN(k); i++) {
            ocase *c = oc_new("known Cast f32 to %s", opsched_dtype_name(k[i].to));
            a = attr0();
            a.cast.to = k[i].to;
            int xi = input(c, "x", OPSCHED_F32, "5");
            node(c, OPSCHED_OP_CAST, &a, &xi, 1, 1);
            known(c, in, 0, k[i].want, 5, 0);
            oc_free(c);
        }
    }
    /* TopK: sorted, equal values by lower index */
    {
        double x[] = {3, 1, 3, 2, 1};
        double *in[] = {x};
        static const double v_big[] = {3, 3, 2}, i_big[] = {0, 2, 3}, v_small[] = {1, 1},
                            i_small[] = {1, 4};
        for (int largest = 0; largest < 2; largest++) {
            ocase *c = oc_new("known TopK largest %d", largest);
            a = attr0();
            a.topk.axis = 0;
            a.topk.k = largest ? 3 : 2;
            a.topk.largest = largest;
            a.topk.sorted = 1;
            int xi = input(c, "x", OPSCHED_F32, "5");
            node(c, OPSCHED_OP_TOPK, &a, &xi, 1, 2);
            known(c, in, 0, largest ? v_big : v_small, largest ? 3 : 2, 0);
            known(c, in, 1, largest ? i_big : i_small, largest ? 3 : 2, 0);
            oc_free(c);
        }
    }
    /* ArgMax / ArgMin with select_last_index */
    {
        double x[] = {1, 5, 5, 2, 0, 0};
        double *in[] = {x};
        for (int op = 0; op < 2; op++)
            for (int last = 0; last < 2; last++) {
                ocase *c = oc_new("known %s select_last %d", op ? "ArgMin" : "ArgMax", last);
                a = attr0();
                a.arg.axis = 0;
                a.arg.select_last_index = last;
                int xi = input(c, "x", OPSCHED_F32, "6");
                node(c, op ? OPSCHED_OP_ARGMIN : OPSCHED_OP_ARGMAX, &a, &xi, 1, 1);
                double want = op ? (last ? 5 : 4) : (last ? 2 : 1);
                known(c, in, 0, &want, 1, 0);
                oc_free(c);
            }
    }
    /* CumSum exclusive and reverse */
    {
        double x[] = {1, 2, 3, 4};
        double *in[] = {x};
        static const double want[4][4] = {
            {1, 3, 6, 10}, {0, 1, 3, 6}, {10, 9, 7, 4}, {9, 7, 4, 0}};
        for (int k = 0; k < 4; k++) {
            ocase *c = oc_new("known CumSum exclusive %d reverse %d", k & 1, k >> 1);
            a = attr0();
            a.cumsum.exclusive = k & 1;
            a.cumsum.reverse = k >> 1;
            int xi = input(c, "x", OPSCHED_INT64, "4");
            node(c, OPSCHED_OP_CUMSUM, &a, &xi, 1, 1);
            known(c, in, 0, want[k], 4, 0);
            oc_free(c);
        }
    }
    /* ScatterND add with duplicates; ScatterElements max; out-of-range updates dropped */
    {
        double data[] = {1, 2, 3, 4}, upd[] = {10, 20, 30};
        static const int64_t idx[] = {1, 1, -1};
        double idxv[] = {1, 1, -1};
        double *in[] = {data, idxv, upd};
        ocase *c = oc_new("known ScatterND add");
        a = attr0();
        a.scatter.reduction = OPSCHED_SCATTER_ADD;
        int ins[3] = {input(c, "d", OPSCHED_F32, "4"),
                      const_ints(c, "i", OPSCHED_INT64, "3x1", idx),
                      input(c, "u", OPSCHED_F32, "3")};
        node(c, OPSCHED_OP_SCATTER_ND, &a, ins, 3, 1);
        static const double want[] = {1, 32, 3, 34};
        known(c, in, 0, want, 4, 0);
        oc_free(c);

        double d2[] = {1, 5, 2}, u2[] = {7, 3, 9, 4}, i2[] = {1, 1, 7, -3};
        double *in2[] = {d2, i2, u2};
        c = oc_new("known ScatterElements max");
        a = attr0();
        a.scatter.axis = 1;
        a.scatter.reduction = OPSCHED_SCATTER_MAX;
        ins[0] = input(c, "d", OPSCHED_INT32, "1x3");
        ins[1] = input(c, "i", OPSCHED_INT64, "1x4");
        ins[2] = input(c, "u", OPSCHED_INT32, "1x4");
        node(c, OPSCHED_OP_SCATTER_ELEMENTS, &a, ins, 3, 1);
        static const double want2[] = {4, 7, 2};
        known(c, in2, 0, want2, 3, 0);
        oc_free(c);
    }
    /* GatherElements with negative indices */
    {
        double data[] = {1, 2, 3, 4}, idx[] = {-1, 0, 0, -1};
        double *in[] = {data, idx};
        ocase *c = oc_new("known GatherElements");
        a = attr0();
        a.axis.axis = 1;
        int ins[2] = {input(c, "d", OPSCHED_F32, "2x2"), input(c, "i", OPSCHED_INT64, "2x2")};
        node(c, OPSCHED_OP_GATHER_ELEMENTS, &a, ins, 2, 1);
        static const double want[] = {2, 1, 3, 4};
        known(c, in, 0, want, 4, 0);
        oc_free(c);
    }
    /* Resize: examples of the ONNX operator tests (resize_upsample_scales_nearest,
     * resize_downsample_scales_linear, ..._linear_antialias,
     * resize_tf_crop_and_resize_extrapolation_value) */
    {
        double x22[] = {1, 2, 3, 4};
        double *in[] = {x22};
        ocase *c = oc_new("known Resize nearest upsample");
        a = attr0();
        int xi = input(c, "x", OPSCHED_F32, "1x1x2x2");
        float sc[4] = {1, 1, 2, 3};
        int64_t sz[4] = {1, 1, 4, 6};
        for (int d = 0; d < 4; d++) {
            a.resize.scales[d] = sc[d];
            a.resize.sizes[d] = sz[d];
        }
        a.resize.mode = OPSCHED_RESIZE_NEAREST; /* half_pixel, round_prefer_floor */
        node(c, OPSCHED_OP_RESIZE, &a, &xi, 1, 1);
        static const double w1[] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                    3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
        known(c, in, 0, w1, 24, 0);
        oc_free(c);

        double x24[] = {1, 2, 3, 4, 5, 6, 7, 8};
        double *in2[] = {x24};
        c = oc_new("known Resize linear downsample");
        a = attr0();
        xi = input(c, "x", OPSCHED_F32, "1x1x2x4");
        float sc2[4] = {1, 1, 0.6f, 0.6f};
        int64_t sz2[4] = {1, 1, 1, 2};
        for (int d = 0; d < 4; d++) {
            a.resize.scales[d] = sc2[d];
            a.resize.sizes[d] = sz2[d];
        }
        a.resize.mode = OPSCHED_RESIZE_LINEAR;
        node(c, OPSCHED_OP_RESIZE, &a, &xi, 1, 1);
        static const double w2[] = {2.6666665, 4.3333331};
        known(c, in2, 0, w2, 2, 1e-5);
        oc_free(c);

        double x44[16];
        for (int i = 0; i < 16; i++)
            x44[i] = i + 1;
        double *in3[] = {x44};
        c = oc_new("known Resize linear antialias downsample");
        a = attr0();
        xi = input(c, "x", OPSCHED_F32, "1x1x4x4");
        float sc3[4] = {1, 1, 0.6f, 0.6f};
        int64_t sz3[4] = {1, 1, 2, 2};
        for (int d = 0; d < 4; d++) {
            a.resize.scales[d] = sc3[d];
            a.resize.sizes[d] = sz3[d];
        }
        a.resize.mode = OPSCHED_RESIZE_LINEAR;
        a.resize.antialias = 1;
        node(c, OPSCHED_OP_RESIZE, &a, &xi, 1, 1);
        static const double w3[] = {2.875, 4.5, 9.375, 11.0};
        known(c, in3, 0, w3, 4, 1e-5);
        oc_free(c);

        c = oc_new("known Resize tf_crop_and_resize extrapolation");
        a = attr0();
        xi = input(c, "x", OPSCHED_F32, "1x1x4x4");
        float roi[8] = {0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f};
        for (int d = 0; d < 4; d++) {
            a.resize.sizes[d] = d < 2 ? 1 : 3;
            a.resize.scales[d] = d < 2 ? 1.0f : 0.75f;
        }
        memcpy(a.resize.roi, roi, sizeof(roi));
        a.resize.mode = OPSCHED_RESIZE_LINEAR;
        a.resize.coord = OPSCHED_COORD_TF_CROP_AND_RESIZE;
        a.resize.extrapolation_value = 10.0f;
        node(c, OPSCHED_OP_RESIZE, &a, &xi, 1, 1);
        static const double w4[] = {7.6000004, 10, 10, 12.400001, 10, 10, 10, 10, 10};
        known(c, in3, 0, w4, 9, 1e-5);
        oc_free(c);
    }
    /* Quantize: round half to even, saturate */
    {
        double x[] = {0.5, 1.5, 2.5, -0.5, 300, -300}, s[] = {1};
        double *in[] = {x, s};
        ocase *c = oc_new("known QuantizeLinear int8");
        a = attr0();
        int zpi = -1;
        int ins[3] = {input(c, "x", OPSCHED_F32, "6"), input(c, "s", OPSCHED_F32, "1"), zpi};
        ins[2] = input(c, "zp", OPSCHED_INT8, "1");
        double zp[] = {0};
        double *in3[] = {x, s, zp};
        node(c, OPSCHED_OP_QUANTIZE, &a, ins, 3, 1);
        static const double want[] = {0, 2, 2, 0, 127, -128};
        known(c, in3, 0, want, 6, 0);
        (void)in;
        oc_free(c);
    }
    summary("known answers");
}

/* ---- setup ---------------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    int n = 0;
    if (opsched_ctx_create(&env.ctx) != OPSCHED_OK) return -1;
    env.verbose = getenv("OPSCHED_TEST_VERBOSE") != NULL;
    opsched_status st = opsched_device_count(env.ctx, "cuda", &n);
    if (st == OPSCHED_ERR_NOT_FOUND || (st == OPSCHED_OK && n == 0)) {
        print_message("SKIP: no CUDA device\n");
        return 0;
    }
    if (st != OPSCHED_OK) {
        print_error("device_count: %s\n", opsched_ctx_last_error(env.ctx));
        return -1;
    }
    if (opsched_device_open(env.ctx, "cuda", 0, &env.gpu) != OPSCHED_OK) {
        print_error("cuda device 0: %s\n", opsched_ctx_last_error(env.ctx));
        return -1;
    }
    if (opsched_device_count(env.ctx, "cpu", &n) == OPSCHED_OK && n > 0 &&
        opsched_device_open(env.ctx, "cpu", 0, &env.cpu) != OPSCHED_OK)
        env.cpu = NULL;
    if (!env.cpu) print_message("no CPU backend: outputs are checked on the GPU alone\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    opsched_device_close(env.gpu);
    opsched_device_close(env.cpu);
    opsched_ctx_free(env.ctx);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_activations_int),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_arith_int),
        cmocka_unit_test(test_where),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_quantize),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_argmax),
        cmocka_unit_test(test_softmax_family),
        cmocka_unit_test(test_groupnorm),
        cmocka_unit_test(test_cumsum),
        cmocka_unit_test(test_topk),
        cmocka_unit_test(test_gather_elements),
        cmocka_unit_test(test_gather_nd),
        cmocka_unit_test(test_scatter),
        cmocka_unit_test(test_tile_trilu_onehot),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_conv_transpose),
        cmocka_unit_test(test_windows_3d),
        cmocka_unit_test(test_empty_tensors),
        cmocka_unit_test(test_data_movement_types),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
