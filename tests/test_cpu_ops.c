/*
 * test_cpu_ops.c - the CPU backend's operators on every type they take,
 * node by node through plans and buffers of the stored types: the generic
 * families (Unary, Binary, Where, Cast, Reduce, ArgMax/ArgMin, LogSoftmax,
 * Hardmax, CumSum, TopK, GatherElements/ND, ScatterElements/ND, Tile,
 * Trilu, OneHot, Resize, GroupNormalization, ConvTranspose, Quantize and
 * DequantizeLinear) and the older kinds on integer and bool tensors.
 *
 * Expected values come from ONNX's reference implementation
 * (cpu_ops_expected.h, written by cpu_ops_reference.py) or are worked out
 * by hand where this backend defines what ONNX leaves open (saturating
 * casts, division by zero, indices out of range).  An executor test runs a
 * graph mixing types end to end.  Skips visibly without a CPU backend.
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

#include "opsched/opsched.h"

#include "cpu_ops_expected.h"

static struct {
    opsched_ctx *ctx;
    opsched_device *cpu; /* NULL: no CPU backend in this build */
} env;

#define SKIP_WITHOUT_CPU()                                                                         \
    do {                                                                                           \
        if (!env.cpu) {                                                                            \
            print_message("SKIP: no cpu device\n");                                                \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK(call)                                                                                \
    do {                                                                                           \
        opsched_status st_ = (call);                                                               \
        if (st_ != OPSCHED_OK)                                                                     \
            fail_msg("%s: %s: %s", #call, opsched_status_str(st_),                                 \
                     opsched_ctx_last_error(env.ctx));                                             \
    } while (0)

/* ---- running one node ---------------------------------------------------- */

/* Bytes of one element as the CPU backend stores it: floats as f32. */
static size_t stored_size(opsched_dtype dt)
{
    switch (dt) {
    case OPSCHED_INT8:
    case OPSCHED_UINT8:
    case OPSCHED_BOOL:
        return 1;
    case OPSCHED_INT64:
        return 8;
    default:
        return 4;
    }
}

static int is_float(opsched_dtype dt)
{
    return dt == OPSCHED_F32 || dt == OPSCHED_F16 || dt == OPSCHED_BF16;
}

/* "2x3x4" (or "" for a scalar). */
static opsched_shape shape_of(const char *s)
{
    opsched_shape sh;
    memset(&sh, 0, sizeof(sh));
    while (*s) {
        char *end = NULL;
        sh.d[sh.ndim++] = strtoll(s, &end, 10);
        s = *end == 'x' ? end + 1 : end;
    }
    return sh;
}

static size_t tensor_bytes(const opsched_tensor *t)
{
    return (size_t)opsched_shape_numel(&t->shape) * stored_size(t->dtype);
}

/* Runs node `node` of g on the CPU: inputs from in_data (stored types, NULL
 * for an omitted input), outputs filled with 0xff bytes first (NaN, -1, an
 * invalid bool) and returned in out_data (malloc'd).  The status of the
 * plan or the launch, whichever fails first. */
static opsched_status run_node(opsched_graph *g, int node, const void *const *in_data,
                               void **out_data, const char *algo)
{
    const opsched_node *n = opsched_graph_node(g, node);
    opsched_plan_options o;
    opsched_plan *plan = NULL;
    opsched_buffer *in[8] = {0}, *out[4] = {0};
    memset(&o, 0, sizeof(o));
    o.algo = algo;
    opsched_status st = opsched_plan_create(env.cpu, g, node, &o, &plan);
    if (st != OPSCHED_OK) return st;
    for (int i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0) continue;
        const opsched_tensor *t = opsched_graph_tensor(g, n->inputs[i]);
        size_t b = tensor_bytes(t);
        CHECK(opsched_buffer_alloc(env.cpu, b ? b : 1, &in[i]));
        if (b) CHECK(opsched_buffer_upload(in[i], 0, in_data[i], b));
    }
    for (int k = 0; k < n->n_outputs; k++) {
        size_t b = tensor_bytes(opsched_graph_tensor(g, n->outputs[k]));
        unsigned char *junk = malloc(b + 1);
        assert_non_null(junk);
        memset(junk, 0xff, b + 1);
        CHECK(opsched_buffer_alloc(env.cpu, b ? b : 1, &out[k]));
        CHECK(opsched_buffer_upload(out[k], 0, junk, b ? b : 1));
        free(junk);
    }
    st = opsched_plan_launch(plan, NULL, in, out);
    if (st == OPSCHED_OK) CHECK(opsched_device_sync(env.cpu));
    for (int k = 0; k < n->n_outputs; k++) {
        size_t b = tensor_bytes(opsched_graph_tensor(g, n->outputs[k]));
        out_data[k] = malloc(b + 1);
        assert_non_null(out_data[k]);
        if (st == OPSCHED_OK && b) CHECK(opsched_buffer_download(out[k], 0, out_data[k], b));
        opsched_buffer_free(out[k]);
    }
    for (int i = 0; i < n->n_inputs; i++)
        opsched_buffer_free(in[i]);
    opsched_plan_free(plan);
    return st;
}

static double value_at(const void *p, opsched_dtype dt, size_t i)
{
    switch (dt) {
    case OPSCHED_INT8:
        return ((const int8_t *)p)[i];
    case OPSCHED_INT32:
        return ((const int32_t *)p)[i];
    case OPSCHED_INT64:
        return (double)((const int64_t *)p)[i];
    case OPSCHED_UINT8:
    case OPSCHED_BOOL:
        return ((const uint8_t *)p)[i];
    default:
        return ((const float *)p)[i];
    }
}

/* Compares n stored values: floats within atol + rtol * |want| (NaN must be
 * NaN, infinities equal), everything else exactly. */
static void expect_values(const char *what, const void *got, const void *want, opsched_dtype dt,
                          size_t n, double rtol, double atol)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        int ok;
        if (dt == OPSCHED_INT64) {
            ok = ((const int64_t *)got)[i] == ((const int64_t *)want)[i];
        } else if (!is_float(dt)) {
            ok = value_at(got, dt, i) == value_at(want, dt, i);
        } else {
            double g = value_at(got, dt, i), w = value_at(want, dt, i);
            if (isnan(w) || isinf(w))
                ok = isnan(w) ? isnan(g) : g == w;
            else
                ok = fabs(g - w) <= atol + rtol * fabs(w);
        }
        if (!ok && bad++ < 5) {
            if (dt == OPSCHED_INT64)
                print_error("%s[%zu]: got %lld, want %lld\n", what, i,
                            (long long)((const int64_t *)got)[i],
                            (long long)((const int64_t *)want)[i]);
            else
                print_error("%s[%zu]: got %.9g, want %.9g\n", what, i, value_at(got, dt, i),
                            value_at(want, dt, i));
        }
    }
    if (bad) fail_msg("%s: %d of %zu values differ", what, bad, n);
}

/* A graph of the case's inputs (INPUT tensors of their types) and one node. */
static opsched_graph *ref_graph(const ref_case *rc, opsched_op_kind op, const opsched_op_attr *attr)
{
    opsched_graph *g = NULL;
    int ins[8], outs[4];
    CHECK(opsched_graph_create(env.ctx, rc->name, &g));
    for (int i = 0; i < rc->n_in; i++) {
        char name[16];
        opsched_shape s = shape_of(rc->in[i].shape);
        snprintf(name, sizeof(name), "in%d", i);
        CHECK(opsched_graph_add_tensor(g, name, OPSCHED_TENSOR_INPUT, rc->in[i].dt, &s, &ins[i]));
    }
    opsched_status st =
        opsched_graph_add_node(g, "node", op, attr, ins, rc->n_in, rc->n_out, NULL, outs);
    if (st != OPSCHED_OK)
        fail_msg("%s: add_node: %s: %s", rc->name, opsched_status_str(st),
                 opsched_ctx_last_error(env.ctx));
    for (int k = 0; k < rc->n_out; k++) {
        const opsched_tensor *t = opsched_graph_tensor(g, outs[k]);
        opsched_shape want = shape_of(rc->out[k].shape);
        char b1[64], b2[64];
        if (!opsched_shape_equal(&t->shape, &want) || t->dtype != rc->out[k].dt)
            fail_msg("%s: output %d is %s %s, the reference's %s %s", rc->name, k,
                     opsched_dtype_name(t->dtype), opsched_shape_format(&t->shape, b1, sizeof(b1)),
                     opsched_dtype_name(rc->out[k].dt),
                     opsched_shape_format(&want, b2, sizeof(b2)));
    }
    return g;
}

/* Runs the case through node op with attr (algo for the plan, NULL for the
 * default) and compares every output. */
static void run_ref_algo(const ref_case *rc, opsched_op_kind op, const opsched_op_attr *attr,
                         double rtol, const char *algo)
{
    opsched_graph *g = ref_graph(rc, op, attr);
    const void *in[8];
    void *out[4] = {0};
    for (int i = 0; i < rc->n_in; i++)
        in[i] = rc->in[i].data;
    opsched_status st = run_node(g, 0, in, out, algo);
    if (st != OPSCHED_OK)
        fail_msg("%s: %s: %s", rc->name, opsched_status_str(st), opsched_ctx_last_error(env.ctx));
    for (int k = 0; k < rc->n_out; k++) {
        char what[96];
        snprintf(what, sizeof(what), "%s output %d", rc->name, k);
        opsched_shape s = shape_of(rc->out[k].shape);
        expect_values(what, out[k], rc->out[k].data, rc->out[k].dt, (size_t)opsched_shape_numel(&s),
                      rtol, rtol * 0.1);
        free(out[k]);
    }
    opsched_graph_free(g);
}

static void run_ref(const ref_case *rc, opsched_op_kind op, const opsched_op_attr *attr,
                    double rtol)
{
    run_ref_algo(rc, op, attr, rtol, NULL);
}

static opsched_op_attr no_attr(void)
{
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    return a;
}

/* ---- Unary ---------------------------------------------------------------- */

static void test_unary_functions(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const struct {
        const ref_case *rc;
        opsched_unary_fn fn;
        float alpha, beta, gamma;
    } cases[] = {
        {&unary_Abs, OPSCHED_UNARY_ABS, 0, 0, 0},
        {&unary_Neg, OPSCHED_UNARY_NEG, 0, 0, 0},
        {&unary_Exp, OPSCHED_UNARY_EXP, 0, 0, 0},
        {&unary_Log, OPSCHED_UNARY_LOG, 0, 0, 0},
        {&unary_Reciprocal, OPSCHED_UNARY_RECIPROCAL, 0, 0, 0},
        {&unary_Floor, OPSCHED_UNARY_FLOOR, 0, 0, 0},
        {&unary_Ceil, OPSCHED_UNARY_CEIL, 0, 0, 0},
        {&unary_Round, OPSCHED_UNARY_ROUND, 0, 0, 0},
        {&unary_Sign, OPSCHED_UNARY_SIGN, 0, 0, 0},
        {&unary_Sin, OPSCHED_UNARY_SIN, 0, 0, 0},
        {&unary_Cos, OPSCHED_UNARY_COS, 0, 0, 0},
        {&unary_Tan, OPSCHED_UNARY_TAN, 0, 0, 0},
        {&unary_Asin, OPSCHED_UNARY_ASIN, 0, 0, 0},
        {&unary_Acos, OPSCHED_UNARY_ACOS, 0, 0, 0},
        {&unary_Atan, OPSCHED_UNARY_ATAN, 0, 0, 0},
        {&unary_Sinh, OPSCHED_UNARY_SINH, 0, 0, 0},
        {&unary_Cosh, OPSCHED_UNARY_COSH, 0, 0, 0},
        {&unary_Asinh, OPSCHED_UNARY_ASINH, 0, 0, 0},
        {&unary_Acosh, OPSCHED_UNARY_ACOSH, 0, 0, 0},
        {&unary_Atanh, OPSCHED_UNARY_ATANH, 0, 0, 0},
        {&unary_IsNaN, OPSCHED_UNARY_ISNAN, 0, 0, 0},
        {&unary_IsInf, OPSCHED_UNARY_ISINF, 1, 1, 0},
        {&unary_IsInf_neg, OPSCHED_UNARY_ISINF, 0, 1, 0},
        {&unary_Not, OPSCHED_UNARY_NOT, 0, 0, 0},
        {&unary_LeakyRelu, OPSCHED_UNARY_LEAKY_RELU, 0.1f, 0, 0},
        {&unary_Elu, OPSCHED_UNARY_ELU, 0.7f, 0, 0},
        {&unary_Selu, OPSCHED_UNARY_SELU, 1.6732632f, 0, 1.0507010f},
        {&unary_Celu, OPSCHED_UNARY_CELU, 0.8f, 0, 0},
        {&unary_ThresholdedRelu, OPSCHED_UNARY_THRESHOLDED_RELU, 0.9f, 0, 0},
        {&unary_Softplus, OPSCHED_UNARY_SOFTPLUS, 0, 0, 0},
        {&unary_Softsign, OPSCHED_UNARY_SOFTSIGN, 0, 0, 0},
        {&unary_Mish, OPSCHED_UNARY_MISH, 0, 0, 0},
        {&unary_Shrink, OPSCHED_UNARY_SHRINK, 0.4f, 0.6f, 0},
        {&unary_Swish, OPSCHED_UNARY_SWISH, 1.3f, 0, 0},
        {&unary_Abs_i8, OPSCHED_UNARY_ABS, 0, 0, 0},
        {&unary_Neg_i8, OPSCHED_UNARY_NEG, 0, 0, 0},
        {&unary_Sign_i8, OPSCHED_UNARY_SIGN, 0, 0, 0},
        {&unary_Abs_i32, OPSCHED_UNARY_ABS, 0, 0, 0},
        {&unary_Neg_i32, OPSCHED_UNARY_NEG, 0, 0, 0},
        {&unary_Sign_i32, OPSCHED_UNARY_SIGN, 0, 0, 0},
        {&unary_Abs_i64, OPSCHED_UNARY_ABS, 0, 0, 0},
        {&unary_Neg_i64, OPSCHED_UNARY_NEG, 0, 0, 0},
        {&unary_Sign_i64, OPSCHED_UNARY_SIGN, 0, 0, 0},
        {&unary_BitwiseNot_u8, OPSCHED_UNARY_BITWISE_NOT, 0, 0, 0},
        {&unary_BitwiseNot_i32, OPSCHED_UNARY_BITWISE_NOT, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        opsched_op_attr a = no_attr();
        a.unary.fn = cases[i].fn;
        a.unary.alpha = cases[i].alpha;
        a.unary.beta = cases[i].beta;
        a.unary.gamma = cases[i].gamma;
        run_ref(cases[i].rc, OPSCHED_OP_UNARY, &a, 2e-6);
    }
}

/* Relu and Clip, kinds of their own, on integers. */
static void test_activations_on_integers(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_op_attr a = no_attr();
    run_ref(&relu_i32, OPSCHED_OP_RELU, &a, 0);
    a.clip.min = -5;
    a.clip.max = 8;
    run_ref(&clip_i64, OPSCHED_OP_CLIP, &a, 0);
}

/* ---- Binary and the arithmetic kinds ------------------------------------------ */

static void test_binary_functions(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const struct {
        const ref_case *rc;
        opsched_binary_fn fn;
    } cases[] = {
        {&mod_i32, OPSCHED_BINARY_MOD},
        {&fmod_i32, OPSCHED_BINARY_FMOD},
        {&mod_i64, OPSCHED_BINARY_MOD},
        {&fmod_i64, OPSCHED_BINARY_FMOD},
        {&mod_i8, OPSCHED_BINARY_MOD},
        {&fmod_i8, OPSCHED_BINARY_FMOD},
        {&mod_zero_i32, OPSCHED_BINARY_MOD},
        {&mod_f32, OPSCHED_BINARY_MOD},
        {&fmod_f32, OPSCHED_BINARY_FMOD},
        {&min_f32, OPSCHED_BINARY_MIN},
        {&max_f32, OPSCHED_BINARY_MAX},
        {&min_i64, OPSCHED_BINARY_MIN},
        {&max_i64, OPSCHED_BINARY_MAX},
        {&cmp_Equal_f32, OPSCHED_BINARY_EQUAL},
        {&cmp_Less_f32, OPSCHED_BINARY_LESS},
        {&cmp_LessOrEqual_f32, OPSCHED_BINARY_LESS_EQUAL},
        {&cmp_Greater_f32, OPSCHED_BINARY_GREATER},
        {&cmp_GreaterOrEqual_f32, OPSCHED_BINARY_GREATER_EQUAL},
        {&cmp_Equal_i64, OPSCHED_BINARY_EQUAL},
        {&cmp_Less_i64, OPSCHED_BINARY_LESS},
        {&cmp_LessOrEqual_i64, OPSCHED_BINARY_LESS_EQUAL},
        {&cmp_Greater_i64, OPSCHED_BINARY_GREATER},
        {&cmp_GreaterOrEqual_i64, OPSCHED_BINARY_GREATER_EQUAL},
        {&logic_And, OPSCHED_BINARY_AND},
        {&logic_Or, OPSCHED_BINARY_OR},
        {&logic_Xor, OPSCHED_BINARY_XOR},
        {&equal_bool, OPSCHED_BINARY_EQUAL},
        {&shift_left_u8, OPSCHED_BINARY_SHIFT_LEFT},
        {&shift_right_u8, OPSCHED_BINARY_SHIFT_RIGHT},
        {&bitand_i32, OPSCHED_BINARY_BITWISE_AND},
        {&bitor_u8, OPSCHED_BINARY_BITWISE_OR},
        {&bitxor_i64, OPSCHED_BINARY_BITWISE_XOR},
        {&prelu_f32, OPSCHED_BINARY_PRELU},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        opsched_op_attr a = no_attr();
        a.binary.fn = cases[i].fn;
        run_ref(cases[i].rc, OPSCHED_OP_BINARY, &a, 1e-6);
    }
}

/* Shifts on signed types and by the width or more, which ONNX leaves to
 * unsigned types: two's complement bits, arithmetic right shifts. */
static void test_shift_edges(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const int32_t a[6] = {-8, -8, 1, 5, -1, 3};
    static const int32_t b[6] = {1, 40, 31, 32, 31, -1};
    static const int32_t left[6] = {-16, 0, INT32_MIN, 0, INT32_MIN, 0};
    static const int32_t right[6] = {-4, -1, 0, 0, -1, 0};
    for (int dir = 0; dir < 2; dir++) {
        ref_case rc = {"shift_i32",
                       2,
                       {{OPSCHED_INT32, "6", a}, {OPSCHED_INT32, "6", b}},
                       1,
                       {{OPSCHED_INT32, "6", dir ? right : left}}};
        opsched_op_attr at = no_attr();
        at.binary.fn = dir ? OPSCHED_BINARY_SHIFT_RIGHT : OPSCHED_BINARY_SHIFT_LEFT;
        run_ref(&rc, OPSCHED_OP_BINARY, &at, 0);
    }
}

static void test_arithmetic_on_integers(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const struct {
        const ref_case *rc;
        opsched_op_kind op;
    } cases[] = {
        {&add_i8, OPSCHED_OP_ADD},  {&sub_i8, OPSCHED_OP_SUB},
        {&mul_i8, OPSCHED_OP_MUL},  {&div_i8, OPSCHED_OP_DIV},
        {&add_i32, OPSCHED_OP_ADD}, {&sub_i32, OPSCHED_OP_SUB},
        {&mul_i32, OPSCHED_OP_MUL}, {&div_i32, OPSCHED_OP_DIV},
        {&add_i64, OPSCHED_OP_ADD}, {&sub_i64, OPSCHED_OP_SUB},
        {&mul_i64, OPSCHED_OP_MUL}, {&div_i64, OPSCHED_OP_DIV},
        {&add_u8, OPSCHED_OP_ADD},  {&sub_u8, OPSCHED_OP_SUB},
        {&mul_u8, OPSCHED_OP_MUL},  {&div_u8, OPSCHED_OP_DIV},
        {&pow_i32, OPSCHED_OP_POW}, {&pow_i64, OPSCHED_OP_POW},
        {&pow_i8, OPSCHED_OP_POW},  {&div_bcast_first_i64, OPSCHED_OP_DIV},
    };
    opsched_op_attr a = no_attr();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_ref(cases[i].rc, cases[i].op, &a, 0);
}

/* What ONNX leaves open, defined here: integer division and modulo by
 * zero give 0 (NumPy's answer), INT_MIN / -1 wraps. */
static void test_integer_division_edges(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const int64_t a[4] = {7, -7, INT64_MIN, INT64_MIN};
    static const int64_t b[4] = {0, 0, -1, 2};
    static const int64_t q[4] = {0, 0, INT64_MIN, INT64_MIN / 2};
    static const int64_t r[4] = {0, 0, 0, 0};
    ref_case div = {"div_zero",
                    2,
                    {{OPSCHED_INT64, "4", a}, {OPSCHED_INT64, "4", b}},
                    1,
                    {{OPSCHED_INT64, "4", q}}};
    ref_case mod = {"mod_zero",
                    2,
                    {{OPSCHED_INT64, "4", a}, {OPSCHED_INT64, "4", b}},
                    1,
                    {{OPSCHED_INT64, "4", r}}};
    opsched_op_attr at = no_attr();
    run_ref(&div, OPSCHED_OP_DIV, &at, 0);
    at.binary.fn = OPSCHED_BINARY_MOD;
    run_ref(&mod, OPSCHED_OP_BINARY, &at, 0);
    at.binary.fn = OPSCHED_BINARY_FMOD;
    run_ref(&mod, OPSCHED_OP_BINARY, &at, 0);
}

/* ---- Where and Cast ---------------------------------------------------------- */

static void test_where_and_cast(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_op_attr a = no_attr();
    run_ref(&where_f32, OPSCHED_OP_WHERE, &a, 0);
    run_ref(&where_i64, OPSCHED_OP_WHERE, &a, 0);
    run_ref(&where_bool, OPSCHED_OP_WHERE, &a, 0);
    static const struct {
        const ref_case *rc;
        opsched_dtype to;
    } casts[] = {
        {&cast_f32_f16, OPSCHED_F16},    {&cast_f32_bf16, OPSCHED_BF16},
        {&cast_f32_i8, OPSCHED_INT8},    {&cast_f32_i32, OPSCHED_INT32},
        {&cast_f32_i64, OPSCHED_INT64},  {&cast_f32_bool, OPSCHED_BOOL},
        {&cast_f32_u8, OPSCHED_UINT8},   {&cast_i64_f32, OPSCHED_F32},
        {&cast_i64_f16, OPSCHED_F16},    {&cast_i32_i8, OPSCHED_INT8},
        {&cast_u8_i8, OPSCHED_INT8},     {&cast_i8_u8, OPSCHED_UINT8},
        {&cast_i64_bool, OPSCHED_BOOL},  {&cast_bool_f32, OPSCHED_F32},
        {&cast_bool_i32, OPSCHED_INT32},
    };
    for (size_t i = 0; i < sizeof(casts) / sizeof(casts[0]); i++) {
        a.cast.to = casts[i].to;
        run_ref(casts[i].rc, OPSCHED_OP_CAST, &a, 0); /* exact, roundings included */
    }
}

/* Float to integer beyond the range saturates (ONNX leaves it undefined);
 * NaN becomes 0; a value halfway between two bfloat16 rounds to even. */
static void test_cast_saturation(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const float x[6] = {300.0f, -300.0f, NAN, INFINITY, -1e30f, 126.99f};
    static const int8_t to_i8[6] = {127, -128, 0, 127, -128, 126};
    static const uint8_t to_u8[6] = {255, 0, 0, 255, 0, 126};
    static const int64_t to_i64[6] = {300, -300, 0, INT64_MAX, INT64_MIN, 126};
    static const uint8_t to_bool[6] = {1, 1, 1, 1, 1, 1};
    static const struct {
        opsched_dtype to;
        const void *want;
    } cases[] = {{OPSCHED_INT8, to_i8},
                 {OPSCHED_UINT8, to_u8},
                 {OPSCHED_INT64, to_i64},
                 {OPSCHED_BOOL, to_bool}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ref_case rc = {
            "cast_saturate", 1, {{OPSCHED_F32, "6", x}}, 1, {{cases[i].to, "6", cases[i].want}}};
        opsched_op_attr a = no_attr();
        a.cast.to = cases[i].to;
        run_ref(&rc, OPSCHED_OP_CAST, &a, 0);
    }
    /* 1 + 2^-8 is halfway between bfloat16 neighbours 1 and 1 + 2^-7: to
     * even (1); 1 + 3 * 2^-8 goes up to 1 + 2^-6; 2^24 + 1 from int64
     * rounds once, to 2^24. */
    static const float hx[3] = {1.00390625f, 1.01171875f, 65519.0f};
    static const float hbf[3] = {1.0f, 1.015625f, 65536.0f};
    static const float hf16[3] = {1.00390625f, 1.01171875f, 65504.0f};
    ref_case bf = {"cast_bf16_ties", 1, {{OPSCHED_F32, "3", hx}}, 1, {{OPSCHED_BF16, "3", hbf}}};
    ref_case f16 = {"cast_f16_ties", 1, {{OPSCHED_F32, "3", hx}}, 1, {{OPSCHED_F16, "3", hf16}}};
    opsched_op_attr a = no_attr();
    a.cast.to = OPSCHED_BF16;
    run_ref(&bf, OPSCHED_OP_CAST, &a, 0);
    a.cast.to = OPSCHED_F16;
    run_ref(&f16, OPSCHED_OP_CAST, &a, 0);
    static const int64_t big[2] = {16777217, 33554435};
    static const float big_bf[2] = {16777216.0f, 33554432.0f};
    ref_case ib = {
        "cast_i64_bf16", 1, {{OPSCHED_INT64, "2", big}}, 1, {{OPSCHED_BF16, "2", big_bf}}};
    a.cast.to = OPSCHED_BF16;
    run_ref(&ib, OPSCHED_OP_CAST, &a, 0);
}

/* A comparison's bool consumed by Where, in one executor run: Less(x, 0.5)
 * picks x or -x, and an int64 path (Cast, Mod, Reshape, Cast back) beside. */
static void test_executor_mixed_types(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = NULL;
    opsched_shape s23 = {2, {2, 3}}, s1 = {1, {1}}, s6 = {1, {6}};
    int x, half, three, lt, neg, w, xi, m, r, back;
    static const float half_v[1] = {0.5f};
    static const int64_t three_v[1] = {-3};
    opsched_op_attr a = no_attr();
    CHECK(opsched_graph_create(env.ctx, "mixed", &g));
    CHECK(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s23, &x));
    CHECK(opsched_graph_add_tensor(g, "half", OPSCHED_TENSOR_CONSTANT, OPSCHED_F32, &s1, &half));
    CHECK(opsched_graph_set_data(g, half, half_v, sizeof(half_v)));
    CHECK(
        opsched_graph_add_tensor(g, "three", OPSCHED_TENSOR_CONSTANT, OPSCHED_INT64, &s1, &three));
    CHECK(opsched_graph_set_data(g, three, three_v, sizeof(three_v)));
    a.binary.fn = OPSCHED_BINARY_LESS;
    int in_lt[2] = {x, half};
    CHECK(opsched_graph_add_node(g, "lt", OPSCHED_OP_BINARY, &a, in_lt, 2, 1, NULL, &lt));
    a = no_attr();
    a.unary.fn = OPSCHED_UNARY_NEG;
    CHECK(opsched_graph_add_node(g, "neg", OPSCHED_OP_UNARY, &a, &x, 1, 1, NULL, &neg));
    int in_w[3] = {lt, x, neg};
    CHECK(opsched_graph_add_node(g, "where", OPSCHED_OP_WHERE, NULL, in_w, 3, 1, NULL, &w));
    a = no_attr();
    a.cast.to = OPSCHED_INT64;
    CHECK(opsched_graph_add_node(g, "to_int", OPSCHED_OP_CAST, &a, &x, 1, 1, NULL, &xi));
    a = no_attr();
    a.binary.fn = OPSCHED_BINARY_MOD;
    int in_m[2] = {xi, three};
    CHECK(opsched_graph_add_node(g, "mod", OPSCHED_OP_BINARY, &a, in_m, 2, 1, NULL, &m));
    a = no_attr();
    a.shape.shape = s6;
    CHECK(opsched_graph_add_node(g, "reshape", OPSCHED_OP_RESHAPE, &a, &m, 1, 1, NULL, &r));
    a = no_attr();
    a.cast.to = OPSCHED_F32;
    CHECK(opsched_graph_add_node(g, "to_float", OPSCHED_OP_CAST, &a, &r, 1, 1, NULL, &back));
    CHECK(opsched_graph_mark_output(g, w));
    CHECK(opsched_graph_mark_output(g, back));

    static const float xv[6] = {-7.5f, 0.25f, 0.5f, 8.9f, -1.0f, 4.0f};
    static const float want_w[6] = {-7.5f, 0.25f, -0.5f, -8.9f, -1.0f, -4.0f};
    /* trunc(x) = -7, 0, 0, 8, -1, 4; Python-style mod -3 */
    static const float want_m[6] = {-1.0f, 0.0f, 0.0f, -1.0f, -1.0f, -2.0f};
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, NULL, &ex));
    CHECK(opsched_executor_set_input(ex, 0, xv, 6));
    CHECK(opsched_executor_run(ex));
    CHECK(opsched_device_sync(env.cpu));
    float y[6];
    CHECK(opsched_executor_get_output(ex, 0, y, 6));
    expect_values("where", y, want_w, OPSCHED_F32, 6, 0, 0);
    CHECK(opsched_executor_get_output(ex, 1, y, 6));
    expect_values("mod", y, want_m, OPSCHED_F32, 6, 0, 0);
    opsched_executor_free(ex);
    opsched_graph_free(g);
}

/* ---- reductions --------------------------------------------------------------- */

static void test_reductions(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const ref_case *const cases[10][4][2] = {
#define REDUCE_ROW(fn)                                                                             \
    {                                                                                              \
        {&reduce_##fn##_0_0, &reduce_##fn##_0_1}, {&reduce_##fn##_1_0, &reduce_##fn##_1_1},        \
            {&reduce_##fn##_2_0, &reduce_##fn##_2_1},                                              \
        {                                                                                          \
            &reduce_##fn##_3_0, &reduce_##fn##_3_1                                                 \
        }                                                                                          \
    }
        REDUCE_ROW(Mean),      REDUCE_ROW(Sum),       REDUCE_ROW(Max), REDUCE_ROW(Min),
        REDUCE_ROW(Prod),      REDUCE_ROW(L1),        REDUCE_ROW(L2),  REDUCE_ROW(LogSum),
        REDUCE_ROW(LogSumExp), REDUCE_ROW(SumSquare),
#undef REDUCE_ROW
    };
    static const opsched_reduce_fn fns[10] = {OPSCHED_REDUCE_MEAN,      OPSCHED_REDUCE_SUM,
                                              OPSCHED_REDUCE_MAX,       OPSCHED_REDUCE_MIN,
                                              OPSCHED_REDUCE_PROD,      OPSCHED_REDUCE_L1,
                                              OPSCHED_REDUCE_L2,        OPSCHED_REDUCE_LOGSUM,
                                              OPSCHED_REDUCE_LOGSUMEXP, OPSCHED_REDUCE_SUMSQUARE};
    static const int n_axes[4] = {0, 1, 2, 1};
    static const int64_t axes[4][2] = {{0, 0}, {1, 0}, {0, 2}, {-1, 0}};
    for (int f = 0; f < 10; f++) {
        for (int s = 0; s < 4; s++) {
            for (int keep = 0; keep < 2; keep++) {
                opsched_op_attr a = no_attr();
                a.reduce.fn = fns[f];
                a.reduce.keepdims = keep;
                a.reduce.n_axes = n_axes[s];
                for (int k = 0; k < n_axes[s]; k++)
                    a.reduce.axes[k] = axes[s][k];
                run_ref(cases[f][s][keep], OPSCHED_OP_REDUCE, &a, 1e-5);
                if (fns[f] == OPSCHED_REDUCE_MEAN) /* its own kind, through the same loop */
                    run_ref(cases[f][s][keep], OPSCHED_OP_REDUCEMEAN, &a, 1e-5);
            }
        }
    }
    opsched_op_attr a = no_attr();
    a.reduce.fn = OPSCHED_REDUCE_SUM;
    a.reduce.noop_with_empty_axes = 1;
    run_ref(&reduce_Sum_noop, OPSCHED_OP_REDUCE, &a, 0);
}

static void test_reductions_on_integers(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const struct {
        const ref_case *rc;
        opsched_reduce_fn fn;
    } cases[] = {
        {&reduce_Sum_i64, OPSCHED_REDUCE_SUM},
        {&reduce_Prod_i64, OPSCHED_REDUCE_PROD},
        {&reduce_Max_i64, OPSCHED_REDUCE_MAX},
        {&reduce_Min_i64, OPSCHED_REDUCE_MIN},
        {&reduce_Mean_i64, OPSCHED_REDUCE_MEAN},
        {&reduce_L1_i64, OPSCHED_REDUCE_L1},
        {&reduce_SumSquare_i64, OPSCHED_REDUCE_SUMSQUARE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        opsched_op_attr a = no_attr();
        a.reduce.fn = cases[i].fn;
        a.reduce.n_axes = 1;
        a.reduce.axes[0] = 1;
        run_ref(cases[i].rc, OPSCHED_OP_REDUCE, &a, 0);
    }
    opsched_op_attr a = no_attr();
    a.reduce.fn = OPSCHED_REDUCE_MAX;
    a.reduce.n_axes = 1;
    a.reduce.keepdims = 1;
    run_ref(&reduce_Max_i8, OPSCHED_OP_REDUCE, &a, 0);
    a.reduce.axes[0] = 1;
    run_ref(&reducemean_i32, OPSCHED_OP_REDUCEMEAN, &a, 0);
}

/* Reducing an empty axis: what ONNX says the empty set gives. */
static void test_empty_reductions(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const float x[1] = {0};
    static const struct {
        opsched_reduce_fn fn;
        float want;
    } cases[] = {
        {OPSCHED_REDUCE_SUM, 0.0f},
        {OPSCHED_REDUCE_PROD, 1.0f},
        {OPSCHED_REDUCE_MAX, -INFINITY},
        {OPSCHED_REDUCE_MIN, INFINITY},
        {OPSCHED_REDUCE_MEAN, NAN},
        {OPSCHED_REDUCE_LOGSUM, -INFINITY},
        {OPSCHED_REDUCE_LOGSUMEXP, -INFINITY},
        {OPSCHED_REDUCE_L2, 0.0f},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        float want[2] = {cases[i].want, cases[i].want};
        ref_case rc = {"reduce_empty", 1, {{OPSCHED_F32, "2x0", x}}, 1, {{OPSCHED_F32, "2", want}}};
        opsched_op_attr a = no_attr();
        a.reduce.fn = cases[i].fn;
        a.reduce.n_axes = 1;
        a.reduce.axes[0] = 1;
        run_ref(&rc, OPSCHED_OP_REDUCE, &a, 0);
    }
    static const int64_t xi[1] = {0};
    static const int64_t want_i[2] = {INT64_MIN, INT64_MIN};
    ref_case rc = {
        "reduce_empty_i64", 1, {{OPSCHED_INT64, "2x0", xi}}, 1, {{OPSCHED_INT64, "2", want_i}}};
    opsched_op_attr a = no_attr();
    a.reduce.fn = OPSCHED_REDUCE_MAX;
    a.reduce.n_axes = 1;
    a.reduce.axes[0] = 1;
    run_ref(&rc, OPSCHED_OP_REDUCE, &a, 0);
}

/* Nodes whose outputs have no elements plan as nothing and run. */
static void test_empty_outputs(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const float x[1] = {0};
    ref_case relu = {"relu_empty", 1, {{OPSCHED_F32, "3x0x5", x}}, 1, {{OPSCHED_F32, "3x0x5", x}}};
    opsched_op_attr a = no_attr();
    run_ref(&relu, OPSCHED_OP_RELU, &a, 0);
    ref_case pool = {
        "maxpool_empty", 1, {{OPSCHED_F32, "0x2x3x4", x}}, 1, {{OPSCHED_F32, "0x2x2x3", x}}};
    a.pool.kernel[0] = a.pool.kernel[1] = 2;
    run_ref(&pool, OPSCHED_OP_MAXPOOL, &a, 0);
    opsched_graph *g = ref_graph(&pool, OPSCHED_OP_MAXPOOL, &a);
    opsched_plan_options o;
    memset(&o, 0, sizeof(o));
    opsched_plan *p = NULL;
    opsched_plan_info info;
    CHECK(opsched_plan_create(env.cpu, g, 0, &o, &p));
    CHECK(opsched_plan_info_get(p, &info));
    assert_string_equal(info.algo, "empty");
    opsched_plan_free(p);
    opsched_graph_free(g);
}

/* ---- along one axis ---------------------------------------------------------- */

static void test_arg_cumsum_topk(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const ref_case *const args[2][2][2][2] = {
        {{{&argmax_0_0_0, &argmax_0_0_1}, {&argmax_0_1_0, &argmax_0_1_1}},
         {{&argmax_1_0_0, &argmax_1_0_1}, {&argmax_1_1_0, &argmax_1_1_1}}},
        {{{&argmin_0_0_0, &argmin_0_0_1}, {&argmin_0_1_0, &argmin_0_1_1}},
         {{&argmin_1_0_0, &argmin_1_0_1}, {&argmin_1_1_0, &argmin_1_1_1}}},
    };
    for (int op = 0; op < 2; op++)
        for (int axis = 0; axis < 2; axis++)
            for (int keep = 0; keep < 2; keep++)
                for (int last = 0; last < 2; last++) {
                    opsched_op_attr a = no_attr();
                    a.arg.axis = axis;
                    a.arg.keepdims = keep;
                    a.arg.select_last_index = last;
                    run_ref(args[op][axis][keep][last], op ? OPSCHED_OP_ARGMIN : OPSCHED_OP_ARGMAX,
                            &a, 0);
                }
    opsched_op_attr a = no_attr();
    a.arg.axis = 1;
    a.arg.select_last_index = 1;
    run_ref(&argmax_i32, OPSCHED_OP_ARGMAX, &a, 0);
    a.arg.select_last_index = 0;
    a.arg.keepdims = 1;
    run_ref(&argmax_nan, OPSCHED_OP_ARGMAX, &a, 0);
    run_ref(&argmin_nan, OPSCHED_OP_ARGMIN, &a, 0);

    static const ref_case *const sums[2][2][2] = {
        {{&cumsum_0_0_0, &cumsum_0_0_1}, {&cumsum_0_1_0, &cumsum_0_1_1}},
        {{&cumsum_1_0_0, &cumsum_1_0_1}, {&cumsum_1_1_0, &cumsum_1_1_1}},
    };
    for (int axis = 0; axis < 2; axis++)
        for (int exc = 0; exc < 2; exc++)
            for (int rev = 0; rev < 2; rev++) {
                a = no_attr();
                a.cumsum.axis = axis;
                a.cumsum.exclusive = exc;
                a.cumsum.reverse = rev;
                run_ref(sums[axis][exc][rev], OPSCHED_OP_CUMSUM, &a, 1e-6);
            }
    a = no_attr();
    a.cumsum.axis = 1;
    run_ref(&cumsum_i64, OPSCHED_OP_CUMSUM, &a, 0);

    a = no_attr();
    a.topk.axis = 1;
    a.topk.k = 3;
    a.topk.sorted = 1;
    a.topk.largest = 1;
    run_ref(&topk_1, OPSCHED_OP_TOPK, &a, 0);
    a.topk.largest = 0;
    run_ref(&topk_0, OPSCHED_OP_TOPK, &a, 0);
    a.topk.axis = 0;
    a.topk.k = 1;
    a.topk.largest = 1;
    run_ref(&topk_axis0, OPSCHED_OP_TOPK, &a, 0);
    a.topk.axis = -1;
    a.topk.k = 4;
    a.topk.largest = 0;
    run_ref(&topk_i64, OPSCHED_OP_TOPK, &a, 0);
}

static void test_softmax_family(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_op_attr a = no_attr();
    a.axis.axis = 1;
    run_ref(&logsoftmax_2, OPSCHED_OP_LOGSOFTMAX, &a, 1e-6);
    a.axis.axis = -1;
    run_ref(&logsoftmax_0, OPSCHED_OP_LOGSOFTMAX, &a, 1e-6);
    a.axis.axis = 1;
    run_ref(&hardmax, OPSCHED_OP_HARDMAX, &a, 0);
    a.axis.axis = 0;
    run_ref(&hardmax_axis0, OPSCHED_OP_HARDMAX, &a, 0);
}

/* ---- indexing ----------------------------------------------------------------- */

static void test_gather_scatter(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_op_attr a = no_attr();
    run_ref(&gather_elements_0, OPSCHED_OP_GATHER_ELEMENTS, &a, 0);
    a.axis.axis = 1;
    run_ref(&gather_elements_1, OPSCHED_OP_GATHER_ELEMENTS, &a, 0);
    run_ref(&gather_elements_bool, OPSCHED_OP_GATHER_ELEMENTS, &a, 0);
    a = no_attr();
    run_ref(&gather_nd_0, OPSCHED_OP_GATHER_ND, &a, 0);
    run_ref(&gather_nd_full, OPSCHED_OP_GATHER_ND, &a, 0);
    a.gather_nd.batch_dims = 1;
    run_ref(&gather_nd_batch1, OPSCHED_OP_GATHER_ND, &a, 0);
    run_ref(&gather_nd_batch1b, OPSCHED_OP_GATHER_ND, &a, 0);

    static const ref_case *const se[5] = {&scatter_elements_none, &scatter_elements_add,
                                          &scatter_elements_mul, &scatter_elements_max,
                                          &scatter_elements_min};
    static const ref_case *const snd[5] = {&scatter_nd_none, &scatter_nd_add, &scatter_nd_mul,
                                           &scatter_nd_max, &scatter_nd_min};
    for (int r = 0; r < 5; r++) {
        a = no_attr();
        a.scatter.axis = 1;
        a.scatter.reduction = (opsched_scatter_reduction)r;
        run_ref(se[r], OPSCHED_OP_SCATTER_ELEMENTS, &a, 0);
        a.scatter.axis = 0;
        run_ref(snd[r], OPSCHED_OP_SCATTER_ND, &a, 0);
    }
    a = no_attr();
    run_ref(&scatter_elements_axis0_i64, OPSCHED_OP_SCATTER_ELEMENTS, &a, 0);
    run_ref(&scatter_nd_elems_u8, OPSCHED_OP_SCATTER_ND, &a, 0);
}

/* Indices outside their axis fail the launch with a message naming them. */
static void test_index_out_of_range(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const float d[6] = {1, 2, 3, 4, 5, 6};
    static const int64_t bad_e[4] = {0, 1, 3, 0};
    static const int64_t bad_nd[2] = {0, -4};
    static const float u[4] = {0};
    static const float y[6] = {0};
    static const struct {
        opsched_op_kind op;
        ref_case rc;
        const char *msg;
    } cases[] = {
        {OPSCHED_OP_GATHER_ELEMENTS,
         {"ge",
          2,
          {{OPSCHED_F32, "2x3", d}, {OPSCHED_INT64, "2x2", bad_e}},
          1,
          {{OPSCHED_F32, "2x2", y}}},
         "index 3"},
        {OPSCHED_OP_SCATTER_ELEMENTS,
         {"se",
          3,
          {{OPSCHED_F32, "2x3", d}, {OPSCHED_INT64, "2x2", bad_e}, {OPSCHED_F32, "2x2", u}},
          1,
          {{OPSCHED_F32, "2x3", y}}},
         "index 3"},
        {OPSCHED_OP_GATHER_ND,
         {"gnd",
          2,
          {{OPSCHED_F32, "2x3", d}, {OPSCHED_INT64, "1x2", bad_nd}},
          1,
          {{OPSCHED_F32, "1", y}}},
         "index -4"},
        {OPSCHED_OP_SCATTER_ND,
         {"snd",
          3,
          {{OPSCHED_F32, "2x3", d}, {OPSCHED_INT64, "1x2", bad_nd}, {OPSCHED_F32, "1", u}},
          1,
          {{OPSCHED_F32, "2x3", y}}},
         "index -4"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        opsched_op_attr a = no_attr();
        if (cases[i].op == OPSCHED_OP_GATHER_ELEMENTS) a.axis.axis = 1;
        if (cases[i].op == OPSCHED_OP_SCATTER_ELEMENTS) a.scatter.axis = 1;
        opsched_graph *g = ref_graph(&cases[i].rc, cases[i].op, &a);
        const void *in[3] = {cases[i].rc.in[0].data, cases[i].rc.in[1].data,
                             cases[i].rc.in[2].data};
        void *out[1] = {NULL};
        assert_int_equal(run_node(g, 0, in, out, NULL), OPSCHED_ERR_INVALID_ARG);
        if (!strstr(opsched_ctx_last_error(env.ctx), cases[i].msg))
            fail_msg("%s: '%s' does not name %s", cases[i].rc.name, opsched_ctx_last_error(env.ctx),
                     cases[i].msg);
        free(out[0]);
        opsched_graph_free(g);
    }
    /* GatherElements indices wider than the data off the axis: refused. */
    static const int64_t wide[6] = {0};
    ref_case rc = {"ge_wide",
                   2,
                   {{OPSCHED_F32, "2x3", d}, {OPSCHED_INT64, "3x2", wide}},
                   1,
                   {{OPSCHED_F32, "3x2", y}}};
    opsched_op_attr a = no_attr();
    a.axis.axis = 1;
    opsched_graph *g = ref_graph(&rc, OPSCHED_OP_GATHER_ELEMENTS, &a);
    opsched_plan *p = NULL;
    assert_int_equal(opsched_plan_create(env.cpu, g, 0, NULL, &p), OPSCHED_ERR_INVALID_ARG);
    assert_null(p);
    opsched_graph_free(g);
}

static void test_tile_trilu_onehot(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_op_attr a = no_attr();
    a.tile.repeats[0] = 2;
    a.tile.repeats[1] = 2;
    run_ref(&tile_f32, OPSCHED_OP_TILE, &a, 0);
    a.tile.repeats[0] = 3;
    run_ref(&tile_i64, OPSCHED_OP_TILE, &a, 0);
    a.tile.repeats[0] = 1;
    a.tile.repeats[1] = 3;
    a.tile.repeats[2] = 2;
    run_ref(&tile_bool, OPSCHED_OP_TILE, &a, 0);

    static const ref_case *const tri[2][4] = {{&trilu_0_1, &trilu_0_2, &trilu_0_0, &trilu_0_3},
                                              {&trilu_1_1, &trilu_1_2, &trilu_1_0, &trilu_1_3}};
    static const int64_t ks[4] = {0, 1, -1, 2};
    for (int upper = 0; upper < 2; upper++)
        for (int k = 0; k < 4; k++) {
            a = no_attr();
            a.trilu.upper = upper;
            a.trilu.k = ks[k];
            run_ref(tri[upper][k], OPSCHED_OP_TRILU, &a, 0);
        }
    a = no_attr();
    a.trilu.upper = 1;
    a.trilu.k = -1;
    run_ref(&trilu_batch_i64, OPSCHED_OP_TRILU, &a, 0);

    static const ref_case *const oh[3] = {&onehot_0, &onehot_1, &onehot_2};
    for (int axis = -1; axis <= 1; axis++) {
        a = no_attr();
        a.onehot.axis = axis;
        a.onehot.depth = 4;
        run_ref(oh[axis + 1], OPSCHED_OP_ONEHOT, &a, 0);
    }
    a = no_attr();
    a.onehot.axis = -1;
    a.onehot.depth = 3;
    run_ref(&onehot_i64_vals, OPSCHED_OP_ONEHOT, &a, 0);
    run_ref(&onehot_float_idx, OPSCHED_OP_ONEHOT, &a, 0);
}

/* ---- the older kinds on other types -------------------------------------------- */

static void test_data_movement_types(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_op_attr a = no_attr();
    run_ref(&gather_u8, OPSCHED_OP_GATHER, &a, 0);
    a.axis.axis = 1;
    run_ref(&gather_bool_axis1, OPSCHED_OP_GATHER, &a, 0);
    run_ref(&gather_i64, OPSCHED_OP_GATHER, &a, 0);
    run_ref(&concat_bool, OPSCHED_OP_CONCAT, &a, 0);
    a.axis.axis = 0;
    run_ref(&concat_i64, OPSCHED_OP_CONCAT, &a, 0);

    a = no_attr();
    a.split.axis = 1;
    a.split.n = 2;
    a.split.sizes[0] = 2;
    a.split.sizes[1] = 3;
    run_ref(&split_i64, OPSCHED_OP_SPLIT, &a, 0);

    a = no_attr();
    int64_t starts[3] = {0, 2, -1}, ends[3] = {INT64_MAX, -100, 0}, steps[3] = {1, -1, -2};
    for (int d = 0; d < 3; d++) {
        a.slice.starts[d] = starts[d];
        a.slice.ends[d] = ends[d];
        a.slice.steps[d] = steps[d];
    }
    run_ref(&slice_u8, OPSCHED_OP_SLICE, &a, 0);

    a = no_attr();
    a.transpose.n = 3;
    a.transpose.perm[0] = 2;
    a.transpose.perm[1] = 0;
    a.transpose.perm[2] = 1;
    run_ref(&transpose_i64, OPSCHED_OP_TRANSPOSE, &a, 0);
    a = no_attr(); /* no perm: reversed */
    run_ref(&transpose_bool, OPSCHED_OP_TRANSPOSE, &a, 0);

    static const ref_case *const pads[3] = {&pad_i32_constant, &pad_i32_reflect, &pad_i32_edge};
    static const opsched_pad_mode modes[3] = {OPSCHED_PAD_CONSTANT, OPSCHED_PAD_REFLECT,
                                              OPSCHED_PAD_EDGE};
    for (int m = 0; m < 3; m++) {
        a = no_attr();
        a.pad.pads[0] = 1;
        a.pad.pads[1] = 2;
        a.pad.pads[2] = 0;
        a.pad.pads[3] = 1;
        a.pad.mode = modes[m];
        a.pad.value = -9;
        run_ref(pads[m], OPSCHED_OP_PAD, &a, 0);
    }
    a = no_attr();
    a.shape.shape = shape_of("2x2x3");
    run_ref(&expand_bool, OPSCHED_OP_EXPAND, &a, 0);

    /* Views copied when planned (an executor aliases them): every type. */
    static const uint8_t bits[6] = {1, 0, 0, 1, 1, 0};
    static const int64_t longs[6] = {INT64_MIN, -1, 0, 1, 2, INT64_MAX};
    ref_case rb = {
        "reshape_bool", 1, {{OPSCHED_BOOL, "2x3", bits}}, 1, {{OPSCHED_BOOL, "3x2", bits}}};
    ref_case rl = {
        "flatten_i64", 1, {{OPSCHED_INT64, "1x2x3", longs}}, 1, {{OPSCHED_INT64, "1x6", longs}}};
    a = no_attr();
    a.shape.shape = shape_of("3x2");
    run_ref(&rb, OPSCHED_OP_RESHAPE, &a, 0);
    a = no_attr();
    a.axis.axis = 1;
    run_ref(&rl, OPSCHED_OP_FLATTEN, &a, 0);
    a = no_attr();
    ref_case ri = {
        "identity_i64", 1, {{OPSCHED_INT64, "6", longs}}, 1, {{OPSCHED_INT64, "6", longs}}};
    run_ref(&ri, OPSCHED_OP_IDENTITY, &a, 0);
}

static void test_matmul_gemm_pool_on_integers(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_op_attr a = no_attr();
    run_ref(&matmul_i32, OPSCHED_OP_MATMUL, &a, 0);
    run_ref(&matmul_i64_big, OPSCHED_OP_MATMUL, &a, 0);
    a.gemm.alpha = 1;
    a.gemm.beta = 1;
    a.gemm.trans_a = 1;
    a.gemm.trans_b = 1;
    run_ref(&gemm_i64, OPSCHED_OP_GEMM, &a, 0);
    a = no_attr();
    a.pool.kernel[0] = a.pool.kernel[1] = 2;
    a.pool.stride[0] = 2;
    a.pool.stride[1] = 1;
    run_ref(&maxpool_u8, OPSCHED_OP_MAXPOOL, &a, 0);
    a = no_attr();
    a.pool.kernel[0] = a.pool.kernel[1] = 2;
    a.pool.pads[0] = a.pool.pads[1] = a.pool.pads[2] = a.pool.pads[3] = 1;
    run_ref(&maxpool_i8, OPSCHED_OP_MAXPOOL, &a, 0);
}

/* A pool's attributes: kernel, strides, dilations and pads per spatial
 * axis in ONNX's order (D, H, W for 3-D; H, W for 2-D), as the reference
 * script wrote them (zero stride and dilation mean 1). */
static opsched_op_attr pool_attr(int ns, const int64_t *k, const int64_t *s, const int64_t *d,
                                 const int64_t *pads, int ceil_mode, int include)
{
    opsched_op_attr a = no_attr();
    opsched_pool_attr *p = &a.pool;
    int at = ns - 2; /* where H is */
    for (int i = 0; i < 2; i++) {
        p->kernel[i] = k[at + i];
        p->stride[i] = s ? s[at + i] : 1;
        p->dilation[i] = d ? d[at + i] : 1;
        p->pads[i] = pads[at + i];
        p->pads[2 + i] = pads[ns + at + i];
    }
    if (ns == 3) {
        p->depth.kernel = k[0];
        p->depth.stride = s ? s[0] : 1;
        p->depth.dilation = d ? d[0] : 1;
        p->depth.pad_begin = pads[0];
        p->depth.pad_end = pads[3];
    }
    p->ceil_mode = ceil_mode;
    p->count_include_pad = include;
    return a;
}

/* 3-D pooling (dilations, ceil_mode, both average divisors), 3-D Conv
 * with groups and asymmetric padding, 3-D ConvTranspose with output
 * padding: oneDNN and the loops. */
static void test_windows_3d(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_op_attr a = pool_attr(3, (int64_t[]){2, 3, 2}, (int64_t[]){2, 1, 2},
                                  (int64_t[]){1, 2, 1}, (int64_t[]){1, 0, 1, 0, 1, 1}, 1, 0);
    run_ref(&maxpool_3d, OPSCHED_OP_MAXPOOL, &a, 1e-6);
    a = pool_attr(3, (int64_t[]){3, 2, 2}, (int64_t[]){1, 2, 2}, NULL,
                  (int64_t[]){1, 1, 0, 1, 0, 1}, 0, 1);
    run_ref(&avgpool_3d_incl, OPSCHED_OP_AVGPOOL, &a, 1e-5);
    a = pool_attr(3, (int64_t[]){2, 2, 3}, (int64_t[]){2, 2, 1}, NULL,
                  (int64_t[]){0, 1, 1, 1, 0, 1}, 1, 0);
    run_ref(&avgpool_3d_excl, OPSCHED_OP_AVGPOOL, &a, 1e-5);
    static const char *const algos[2] = {NULL, "loop"};
    for (int k = 0; k < 2; k++) {
        a = no_attr();
        opsched_conv_transpose_attr *t = &a.conv_transpose;
        t->depth = (opsched_window_depth){.kernel = 2,
                                          .stride = 2,
                                          .dilation = 1,
                                          .pad_begin = 1,
                                          .pad_end = 0,
                                          .output_padding = 1};
        t->stride[0] = 1;
        t->stride[1] = 2;
        t->pads[2] = t->pads[3] = 1; /* H and W padded at the end */
        t->output_padding[1] = 1;
        run_ref_algo(&convt_3d, OPSCHED_OP_CONV_TRANSPOSE, &a, 1e-5, algos[k]);
    }
    a = no_attr();
    opsched_conv_attr *c = &a.conv;
    c->groups = 2;
    c->depth = (opsched_window_depth){.stride = 1, .dilation = 2, .pad_begin = 1, .pad_end = 0};
    c->stride[0] = 2;
    c->pads[0] = 1; /* top, left, bottom, right */
    c->pads[2] = 1;
    c->pads[3] = 1;
    run_ref(&conv_3d, OPSCHED_OP_CONV, &a, 1e-5);
}

/* Pooling padding wider than half the kernel (ONNX allows any). */
static void test_pool_wide_padding(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_op_attr a = pool_attr(2, (int64_t[]){3, 3}, NULL, NULL, (int64_t[]){2, 2, 2, 2}, 0, 0);
    run_ref(&maxpool_widepad, OPSCHED_OP_MAXPOOL, &a, 1e-6);
    a = pool_attr(2, (int64_t[]){3, 3}, NULL, NULL, (int64_t[]){2, 1, 2, 2}, 0, 1);
    run_ref(&avgpool_widepad_incl, OPSCHED_OP_AVGPOOL, &a, 1e-5);
    a = pool_attr(2, (int64_t[]){3, 2}, NULL, NULL, (int64_t[]){2, 2, 2, 2}, 0, 0);
    run_ref(&avgpool_widepad_excl, OPSCHED_OP_AVGPOOL, &a, 1e-5);
}

/* MaxPool's second output, ONNX's Indices: row-major and column-major
 * (storage_order), 2-D and 3-D, ties to the first in window order. */
static void test_maxpool_indices(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_op_attr a =
        pool_attr(2, (int64_t[]){3, 2}, (int64_t[]){2, 1}, NULL, (int64_t[]){1, 0, 1, 1}, 0, 0);
    run_ref(&maxpool_indices, OPSCHED_OP_MAXPOOL, &a, 0);
    a = pool_attr(2, (int64_t[]){2, 2}, (int64_t[]){1, 2}, NULL, (int64_t[]){0, 0, 0, 0}, 0, 0);
    a.pool.storage_order = 1;
    run_ref(&maxpool_indices_col, OPSCHED_OP_MAXPOOL, &a, 0);
    a = pool_attr(3, (int64_t[]){2, 2, 3}, (int64_t[]){2, 2, 1}, NULL,
                  (int64_t[]){0, 0, 0, 0, 0, 0}, 0, 0);
    a.pool.storage_order = 1;
    run_ref(&maxpool_indices_3d, OPSCHED_OP_MAXPOOL, &a, 0);
}

/* Operators that take floats only say so instead of misreading bytes. */
static void test_float_only_refused(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const int32_t x[4] = {0};
    static const struct {
        opsched_op_kind op;
        const char *what;
    } cases[] = {{OPSCHED_OP_SOFTMAX, "Softmax"},
                 {OPSCHED_OP_LOGSOFTMAX, "LogSoftmax"},
                 {OPSCHED_OP_GLOBALAVGPOOL, "GlobalAveragePool"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ref_case rc = {
            "float_only", 1, {{OPSCHED_INT32, "1x1x2x2", x}}, 1, {{OPSCHED_INT32, "1x1x2x2", x}}};
        if (cases[i].op == OPSCHED_OP_GLOBALAVGPOOL) rc.out[0].shape = "1x1x1x1";
        opsched_op_attr a = no_attr();
        a.axis.axis = 1;
        opsched_graph *g = ref_graph(&rc, cases[i].op, &a);
        opsched_plan *p = NULL;
        assert_int_equal(opsched_plan_create(env.cpu, g, 0, NULL, &p), OPSCHED_ERR_UNSUPPORTED);
        const char *msg = opsched_ctx_last_error(env.ctx);
        if (!strstr(msg, cases[i].what) || !strstr(msg, "int32"))
            fail_msg("message '%s' does not name %s on int32", msg, cases[i].what);
        opsched_graph_free(g);
    }
}

/* Concat copies bytes: inputs stored unlike its output are refused. */
static void test_concat_mixed_refused(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const float f[2] = {1, 2};
    static const uint8_t b[2] = {1, 0};
    ref_case rc = {"concat_mixed",
                   2,
                   {{OPSCHED_F32, "2", f}, {OPSCHED_BOOL, "2", b}},
                   1,
                   {{OPSCHED_F32, "4", f}}};
    opsched_op_attr a = no_attr();
    opsched_graph *g = ref_graph(&rc, OPSCHED_OP_CONCAT, &a);
    opsched_plan *p = NULL;
    assert_int_equal(opsched_plan_create(env.cpu, g, 0, NULL, &p), OPSCHED_ERR_UNSUPPORTED);
    assert_non_null(strstr(opsched_ctx_last_error(env.ctx), "Concat of bool"));
    opsched_graph_free(g);
}

/* ---- Resize --------------------------------------------------------------------- */

typedef struct resize_case {
    const ref_case *rc;
    int mode, coord, nearest; /* opsched_resize_mode, _coord, _nearest */
    float cubic_a;
    int exclude_outside, antialias;
    float extrapolation;
    int by_scales;              /* 1: scales given (sizes = floor(in * scale)); 0: sizes */
    double v[OPSCHED_MAX_DIMS]; /* the scales or the sizes */
    const float *roi;           /* starts then ends, or NULL */
} resize_case;

/* The attribute as an importer resolves it: sizes from scales as ONNX
 * computes them, or scales from sizes as out / in rounded to float. */
static opsched_op_attr resize_attr(const resize_case *c)
{
    opsched_op_attr a = no_attr();
    opsched_resize_attr *r = &a.resize;
    opsched_shape x = shape_of(c->rc->in[0].shape);
    r->mode = (opsched_resize_mode)c->mode;
    r->coord = (opsched_resize_coord)c->coord;
    r->nearest = (opsched_resize_nearest)c->nearest;
    r->cubic_coeff_a = c->cubic_a;
    r->exclude_outside = c->exclude_outside;
    r->antialias = c->antialias;
    r->extrapolation_value = c->extrapolation;
    for (int d = 0; d < x.ndim; d++) {
        if (c->by_scales) {
            r->scales[d] = (float)c->v[d];
            r->sizes[d] = (int64_t)((double)r->scales[d] * (double)x.d[d]);
        } else {
            r->sizes[d] = (int64_t)c->v[d];
            r->scales[d] = (float)((double)r->sizes[d] / (double)x.d[d]);
        }
        r->roi[d] = c->roi ? c->roi[d] : 0.0f;
        r->roi[x.ndim + d] = c->roi ? c->roi[x.ndim + d] : 1.0f;
    }
    return a;
}

static void test_resize(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const float roi[8] = {0, 0, 0.2f, -0.3f, 1, 1, 0.8f, 1.25f};
    enum {
        N = OPSCHED_RESIZE_NEAREST,
        L = OPSCHED_RESIZE_LINEAR,
        C = OPSCHED_RESIZE_CUBIC,
        HP = OPSCHED_COORD_HALF_PIXEL,
        HPS = OPSCHED_COORD_HALF_PIXEL_SYMMETRIC,
        PT = OPSCHED_COORD_PYTORCH_HALF_PIXEL,
        AC = OPSCHED_COORD_ALIGN_CORNERS,
        AS = OPSCHED_COORD_ASYMMETRIC,
        TF = OPSCHED_COORD_TF_CROP_AND_RESIZE,
        RPF = OPSCHED_NEAREST_ROUND_PREFER_FLOOR,
        RPC = OPSCHED_NEAREST_ROUND_PREFER_CEIL,
        FL = OPSCHED_NEAREST_FLOOR,
        CE = OPSCHED_NEAREST_CEIL,
    };
#define UP_N                                                                                       \
    {                                                                                              \
        1, 1, 1.75, 0.75                                                                           \
    }
#define DOWN                                                                                       \
    {                                                                                              \
        1, 2, 2, 3                                                                                 \
    }
#define UP_L                                                                                       \
    {                                                                                              \
        1, 1, 2.0, 1.5                                                                             \
    }
    static const resize_case cases[] = {
        {&resize_nearest_round_prefer_floor_asymmetric, N, AS, RPF, -0.75f, 0, 0, 0, 1, UP_N, NULL},
        {&resize_nearest_round_prefer_floor_half_pixel, N, HP, RPF, -0.75f, 0, 0, 0, 1, UP_N, NULL},
        {&resize_nearest_round_prefer_floor_down, N, HP, RPF, -0.75f, 0, 0, 0, 0, DOWN, NULL},
        {&resize_nearest_round_prefer_ceil_asymmetric, N, AS, RPC, -0.75f, 0, 0, 0, 1, UP_N, NULL},
        {&resize_nearest_round_prefer_ceil_half_pixel, N, HP, RPC, -0.75f, 0, 0, 0, 1, UP_N, NULL},
        {&resize_nearest_round_prefer_ceil_down, N, HP, RPC, -0.75f, 0, 0, 0, 0, DOWN, NULL},
        {&resize_nearest_floor_asymmetric, N, AS, FL, -0.75f, 0, 0, 0, 1, UP_N, NULL},
        {&resize_nearest_floor_half_pixel, N, HP, FL, -0.75f, 0, 0, 0, 1, UP_N, NULL},
        {&resize_nearest_floor_down, N, HP, FL, -0.75f, 0, 0, 0, 0, DOWN, NULL},
        {&resize_nearest_ceil_asymmetric, N, AS, CE, -0.75f, 0, 0, 0, 1, UP_N, NULL},
        {&resize_nearest_ceil_half_pixel, N, HP, CE, -0.75f, 0, 0, 0, 1, UP_N, NULL},
        {&resize_nearest_ceil_down, N, HP, CE, -0.75f, 0, 0, 0, 0, DOWN, NULL},
        {&resize_nearest_align, N, AC, RPF, -0.75f, 0, 0, 0, 0, {1, 1, 3, 7}, NULL},
        {&resize_linear_align_corners_up, L, AC, RPF, -0.75f, 0, 0, 0, 1, UP_L, NULL},
        {&resize_linear_align_corners_down, L, AC, RPF, -0.75f, 0, 0, 0, 0, DOWN, NULL},
        {&resize_linear_half_pixel_up, L, HP, RPF, -0.75f, 0, 0, 0, 1, UP_L, NULL},
        {&resize_linear_half_pixel_down, L, HP, RPF, -0.75f, 0, 0, 0, 0, DOWN, NULL},
        {&resize_linear_pytorch_half_pixel_up, L, PT, RPF, -0.75f, 0, 0, 0, 1, UP_L, NULL},
        {&resize_linear_pytorch_half_pixel_down, L, PT, RPF, -0.75f, 0, 0, 0, 0, DOWN, NULL},
        {&resize_linear_asymmetric_up, L, AS, RPF, -0.75f, 0, 0, 0, 1, UP_L, NULL},
        {&resize_linear_asymmetric_down, L, AS, RPF, -0.75f, 0, 0, 0, 0, DOWN, NULL},
        {&resize_linear_half_pixel_symmetric_up, L, HPS, RPF, -0.75f, 0, 0, 0, 1, UP_L, NULL},
        {&resize_linear_half_pixel_symmetric_down, L, HPS, RPF, -0.75f, 0, 0, 0, 0, DOWN, NULL},
        {&resize_linear_pytorch_one, L, PT, RPF, -0.75f, 0, 0, 0, 0, {1, 2, 1, 3}, NULL},
        {&resize_cubic_0_up, C, HP, RPF, -0.75f, 0, 0, 0, 1, {1, 1, 1.6, 2.3}, NULL},
        {&resize_cubic_0_down, C, HP, RPF, -0.75f, 0, 0, 0, 0, DOWN, NULL},
        {&resize_cubic_1_up, C, HP, RPF, -0.75f, 1, 0, 0, 1, {1, 1, 1.6, 2.3}, NULL},
        {&resize_cubic_1_down, C, HP, RPF, -0.75f, 1, 0, 0, 0, DOWN, NULL},
        {&resize_cubic_a05_asym, C, AS, RPF, -0.5f, 0, 0, 0, 1, {1, 1, 0.5, 1.5}, NULL},
        {&resize_tf_crop_linear, L, TF, RPF, -0.75f, 0, 0, 10.0f, 0, {1, 1, 3, 5}, roi},
        {&resize_tf_crop_nearest, N, TF, RPF, -0.75f, 0, 0, -1.0f, 1, {1, 1, 0.8, 1.5}, roi},
        {&resize_linear_antialias, L, HP, RPF, -0.75f, 0, 1, 0, 1, {1, 1, 0.5, 0.6}, NULL},
        {&resize_cubic_antialias, C, HP, RPF, -0.75f, 0, 1, 0, 0, {1, 1, 3, 4}, NULL},
        {&resize_cubic_antialias_up, C, HP, RPF, -0.5f, 1, 1, 0, 0, {1, 1, 2, 6}, NULL},
        {&resize_linear_u8, L, HP, RPF, -0.75f, 0, 0, 0, 0, {1, 1, 3, 5}, NULL},
        {&resize_nearest_3d, N, HP, RPF, -0.75f, 0, 0, 0, 1, {1.5, 1.0, 0.5}, NULL},
    };
#undef UP_N
#undef DOWN
#undef UP_L
    /* The reference computes cubic weights in float32 (cubic_coeff_a is a
     * float32 there), this backend in double: 1e-5 covers that. */
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        opsched_op_attr a = resize_attr(&cases[i]);
        run_ref(cases[i].rc, OPSCHED_OP_RESIZE, &a, 1e-5);
    }
}

/* ---- GroupNormalization, ConvTranspose, quantization -------------------------------- */

static void test_groupnorm(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_op_attr a = no_attr();
    a.groupnorm.groups = 2;
    a.groupnorm.epsilon = 1e-5f;
    run_ref(&groupnorm_2, OPSCHED_OP_GROUPNORM, &a, 1e-5);
    a.groupnorm.groups = 1;
    a.groupnorm.epsilon = 0.01f;
    run_ref(&groupnorm_1, OPSCHED_OP_GROUPNORM, &a, 1e-5);
    a.groupnorm.groups = 4;
    a.groupnorm.epsilon = 1e-5f;
    run_ref(&instancenorm, OPSCHED_OP_GROUPNORM, &a, 1e-5);
}

/* The attributes of convt_groups: stride 2x3, groups 2, output padding
 * 1x2, pads top 0, left 1, bottom 1, right 0. */
static opsched_op_attr convt_groups_attr(void)
{
    opsched_op_attr a = no_attr();
    opsched_conv_transpose_attr *c = &a.conv_transpose;
    c->stride[0] = 2;
    c->stride[1] = 3;
    c->groups = 2;
    c->output_padding[0] = 1;
    c->output_padding[1] = 2;
    c->pads[1] = 1;
    c->pads[2] = 1;
    return a;
}

static void test_conv_transpose(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    static const char *const algos[2] = {NULL, "loop"};
    for (int k = 0; k < 2; k++) {
        opsched_op_attr a = no_attr();
        opsched_conv_transpose_attr *c = &a.conv_transpose;
        c->stride[0] = c->stride[1] = 2;
        c->pads[0] = c->pads[1] = c->pads[2] = c->pads[3] = 1;
        c->output_padding[0] = c->output_padding[1] = 1;
        run_ref_algo(&convt_outpad, OPSCHED_OP_CONV_TRANSPOSE, &a, 1e-5, algos[k]);
        a = convt_groups_attr();
        run_ref_algo(&convt_groups, OPSCHED_OP_CONV_TRANSPOSE, &a, 1e-5, algos[k]);
        a = no_attr();
        c->dilation[0] = 2;
        c->dilation[1] = 1;
        c->pads[0] = 1; /* top, left, bottom, right */
        c->pads[3] = 1;
        run_ref_algo(&convt_dilated, OPSCHED_OP_CONV_TRANSPOSE, &a, 1e-5, algos[k]);
    }
    /* What ran: oneDNN by default (or the loop when it has nothing), the
     * loop when asked; an algorithm it does not know is refused. */
    opsched_op_attr a = convt_groups_attr();
    opsched_graph *g = ref_graph(&convt_groups, OPSCHED_OP_CONV_TRANSPOSE, &a);
    opsched_plan_options o;
    memset(&o, 0, sizeof(o));
    opsched_plan *p = NULL;
    opsched_plan_info info;
    o.algo = "loop";
    CHECK(opsched_plan_create(env.cpu, g, 0, &o, &p));
    CHECK(opsched_plan_info_get(p, &info));
    assert_string_equal(info.algo, "loop");
    opsched_plan_free(p);
    p = NULL;
    o.algo = NULL;
    CHECK(opsched_plan_create(env.cpu, g, 0, &o, &p));
    CHECK(opsched_plan_info_get(p, &info));
    print_message("ConvTranspose with groups runs on '%s'\n", info.algo);
    opsched_plan_free(p);
    p = NULL;
    o.algo = "winograd";
    assert_int_equal(opsched_plan_create(env.cpu, g, 0, &o, &p), OPSCHED_ERR_INVALID_ARG);
    opsched_graph_free(g);
}

static void test_quantization(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_op_attr a = no_attr();
    a.quant.axis = 1;
    a.quant.saturate = 1;
    run_ref(&quant_axis_u8, OPSCHED_OP_QUANTIZE, &a, 0);
    run_ref(&quant_tensor_i8, OPSCHED_OP_QUANTIZE, &a, 0);
    run_ref(&quant_default_u8, OPSCHED_OP_QUANTIZE, &a, 0);
    a.quant.block_size = 2;
    run_ref(&quant_blocked_i8, OPSCHED_OP_QUANTIZE, &a, 0);
    a = no_attr();
    a.quant.axis = -1;
    run_ref(&dequant_axis_i8, OPSCHED_OP_DEQUANTIZE, &a, 0);
    a.quant.axis = 1;
    a.quant.block_size = 2;
    run_ref(&dequant_blocked_u8, OPSCHED_OP_DEQUANTIZE, &a, 0);
    a = no_attr();
    a.quant.axis = 1;
    run_ref(&dequant_tensor_i32, OPSCHED_OP_DEQUANTIZE, &a, 0);
}

/* ---- setup ----------------------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    if (opsched_ctx_create(&env.ctx) != OPSCHED_OK) return -1;
    int count = 0;
    if (opsched_device_count(env.ctx, "cpu", &count) != OPSCHED_OK || count == 0) return 0;
    if (opsched_device_open(env.ctx, "cpu", 0, &env.cpu) != OPSCHED_OK) return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    opsched_device_close(env.cpu);
    opsched_ctx_free(env.ctx);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_functions),
        cmocka_unit_test(test_activations_on_integers),
        cmocka_unit_test(test_binary_functions),
        cmocka_unit_test(test_shift_edges),
        cmocka_unit_test(test_arithmetic_on_integers),
        cmocka_unit_test(test_integer_division_edges),
        cmocka_unit_test(test_where_and_cast),
        cmocka_unit_test(test_cast_saturation),
        cmocka_unit_test(test_executor_mixed_types),
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_reductions_on_integers),
        cmocka_unit_test(test_empty_reductions),
        cmocka_unit_test(test_arg_cumsum_topk),
        cmocka_unit_test(test_softmax_family),
        cmocka_unit_test(test_gather_scatter),
        cmocka_unit_test(test_index_out_of_range),
        cmocka_unit_test(test_tile_trilu_onehot),
        cmocka_unit_test(test_data_movement_types),
        cmocka_unit_test(test_matmul_gemm_pool_on_integers),
        cmocka_unit_test(test_float_only_refused),
        cmocka_unit_test(test_concat_mixed_refused),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_groupnorm),
        cmocka_unit_test(test_conv_transpose),
        cmocka_unit_test(test_windows_3d),
        cmocka_unit_test(test_empty_outputs),
        cmocka_unit_test(test_pool_wide_padding),
        cmocka_unit_test(test_maxpool_indices),
        cmocka_unit_test(test_quantization),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
