/*
 * unary.c - the value of every OPSCHED_OP_UNARY function at one point, in
 * double: the one definition the CPU backend computes with and the ONNX
 * importer folds constants with.
 */
#include <math.h>
#include <stdint.h>

#include "opsched/graph.h"

static double sigmoid(double x)
{
    return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

static double softplus(double x) /* log(1 + e^x) without overflow */
{
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static double sign(double x)
{
    return x > 0 ? 1.0 : x < 0 ? -1.0 : x; /* 0, -0 and NaN stay */
}

double opsched_unary_eval(const opsched_unary_attr *a, double x)
{
    switch (a->fn) {
    case OPSCHED_UNARY_ABS:
        return fabs(x);
    case OPSCHED_UNARY_NEG:
        return -x;
    case OPSCHED_UNARY_EXP:
        return exp(x);
    case OPSCHED_UNARY_LOG:
        return log(x);
    case OPSCHED_UNARY_RECIPROCAL:
        return 1.0 / x;
    case OPSCHED_UNARY_FLOOR:
        return floor(x);
    case OPSCHED_UNARY_CEIL:
        return ceil(x);
    case OPSCHED_UNARY_ROUND:
        return nearbyint(x); /* half to even in the default rounding mode */
    case OPSCHED_UNARY_SIGN:
        return sign(x);
    case OPSCHED_UNARY_SIN:
        return sin(x);
    case OPSCHED_UNARY_COS:
        return cos(x);
    case OPSCHED_UNARY_TAN:
        return tan(x);
    case OPSCHED_UNARY_ASIN:
        return asin(x);
    case OPSCHED_UNARY_ACOS:
        return acos(x);
    case OPSCHED_UNARY_ATAN:
        return atan(x);
    case OPSCHED_UNARY_SINH:
        return sinh(x);
    case OPSCHED_UNARY_COSH:
        return cosh(x);
    case OPSCHED_UNARY_ASINH:
        return asinh(x);
    case OPSCHED_UNARY_ACOSH:
        return acosh(x);
    case OPSCHED_UNARY_ATANH:
        return atanh(x);
    case OPSCHED_UNARY_ISNAN:
        return isnan(x) ? 1.0 : 0.0;
    case OPSCHED_UNARY_ISINF: /* detect_positive = alpha, detect_negative = beta */
        return (x == INFINITY && a->alpha != 0) || (x == -INFINITY && a->beta != 0) ? 1.0 : 0.0;
    case OPSCHED_UNARY_NOT:
        return x == 0 ? 1.0 : 0.0;
    case OPSCHED_UNARY_BITWISE_NOT: /* integers only in ONNX */
    {
        /* Saturate into int64 first: converting an out-of-range double is
         * undefined. */
        int64_t v = x >= 9.2233720368547748e18 ? INT64_MAX
                    : x < -9.2233720368547758e18 ? INT64_MIN
                    : x == x ? (int64_t)x : 0;
        return (double)~v;
    }
    case OPSCHED_UNARY_LEAKY_RELU:
        return x < 0 ? a->alpha * x : x;
    case OPSCHED_UNARY_ELU:
        return x < 0 ? a->alpha * expm1(x) : x;
    case OPSCHED_UNARY_SELU:
        return a->gamma * (x > 0 ? x : a->alpha * expm1(x));
    case OPSCHED_UNARY_CELU:
        return fmax(x, 0.0) + fmin(0.0, a->alpha * expm1(x / a->alpha));
    case OPSCHED_UNARY_THRESHOLDED_RELU:
        return x > a->alpha ? x : 0.0;
    case OPSCHED_UNARY_SOFTPLUS:
        return softplus(x);
    case OPSCHED_UNARY_SOFTSIGN:
        return x / (1.0 + fabs(x));
    case OPSCHED_UNARY_MISH:
        return x * tanh(softplus(x));
    case OPSCHED_UNARY_SHRINK: /* bias = alpha, lambd = beta */
        return x < -a->beta ? x + a->alpha : x > a->beta ? x - a->alpha : 0.0;
    case OPSCHED_UNARY_SWISH:
        return x * sigmoid(a->alpha * x);
    default:
        return x;
    }
}

