/*
 * cpu_data.c - what the CPU loops share about stored tensors: element
 * sizes, integer ranges, the conversions between doubles and integer types
 * (truncating and saturating, never undefined), rounding to half and
 * bfloat16 precision, and walking shapes with broadcast strides.
 */
#include <stdlib.h>

#include "backend/cpu/cpu_impl.h"

size_t cpu_esize(opsched_dtype dt)
{
    switch (dt) {
    case OPSCHED_INT8:
    case OPSCHED_UINT8:
    case OPSCHED_BOOL:
        return 1;
    case OPSCHED_INT64:
        return 8;
    default: /* int32, and every float type stored as f32 */
        return 4;
    }
}

int64_t cpu_int_min(opsched_dtype dt)
{
    switch (dt) {
    case OPSCHED_INT8:
        return INT8_MIN;
    case OPSCHED_INT32:
        return INT32_MIN;
    case OPSCHED_UINT8:
    case OPSCHED_BOOL:
        return 0;
    default:
        return INT64_MIN;
    }
}

int64_t cpu_int_max(opsched_dtype dt)
{
    switch (dt) {
    case OPSCHED_INT8:
        return INT8_MAX;
    case OPSCHED_INT32:
        return INT32_MAX;
    case OPSCHED_UINT8:
        return UINT8_MAX;
    case OPSCHED_BOOL:
        return 1;
    default:
        return INT64_MAX;
    }
}

int64_t cpu_double_to_int(double v, opsched_dtype dt)
{
    if (dt == OPSCHED_BOOL) return v != 0; /* NaN != 0 */
    if (isnan(v)) return 0;
    int64_t lo = cpu_int_min(dt), hi = cpu_int_max(dt);
    double t = trunc(v);
    /* (double)INT64_MAX is 2^63, so >= catches everything above. */
    if (t <= (double)lo) return lo;
    if (t >= (double)hi) return hi;
    return (int64_t)t;
}

double cpu_round_half_even(double v)
{
    double f = floor(v), d = v - f; /* exact */
    double r;
    if (d > 0.5)
        r = f + 1.0;
    else if (d < 0.5)
        r = f;
    else
        r = fmod(f, 2.0) == 0.0 ? f : f + 1.0;
    return r == 0.0 ? copysign(0.0, v) : r; /* -0.4 and -0.5 round to -0 */
}

double cpu_round_to(double v, opsched_dtype dt)
{
    if (dt != OPSCHED_F16 && dt != OPSCHED_BF16) return (double)(float)v;
    if (!isfinite(v) || v == 0.0) return v;
    int digits = dt == OPSCHED_F16 ? 11 : 8;   /* significant bits */
    int emin = dt == OPSCHED_F16 ? -14 : -126; /* exponent of the least normal */
    double max = dt == OPSCHED_F16 ? 65504.0 : 0x1.fep127;
    int e = ilogb(v);
    if (e < emin) e = emin; /* subnormals share the least normal's spacing */
    double ulp = ldexp(1.0, e - (digits - 1));
    double r = cpu_round_half_even(v / ulp) * ulp; /* both steps exact but the rounding */
    return fabs(r) > max ? copysign(INFINITY, v) : r;
}

/* ---- walking shapes ------------------------------------------------------ */

void cpu_walk_init(cpu_walk *w, const opsched_shape *dims)
{
    memset(w, 0, sizeof(*w));
    w->nd = dims->ndim;
    for (int i = 0; i < dims->ndim; i++)
        w->dims[i] = dims->d[i];
}

void cpu_walk_coalesce(cpu_walk *w, int n_ops)
{
    for (int i = w->nd - 2; i >= 0; i--) {
        int ok = 1;
        for (int k = 0; k < n_ops && ok; k++)
            ok = w->st[k][i] == w->st[k][i + 1] * w->dims[i + 1];
        if (!ok) continue;
        w->dims[i] *= w->dims[i + 1];
        for (int k = 0; k < n_ops; k++)
            w->st[k][i] = w->st[k][i + 1];
        for (int j = i + 1; j + 1 < w->nd; j++) {
            w->dims[j] = w->dims[j + 1];
            for (int k = 0; k < n_ops; k++)
                w->st[k][j] = w->st[k][j + 1];
        }
        w->nd--;
    }
}

void cpu_bcast_strides(const opsched_shape *in, const opsched_shape *out, int64_t *st)
{
    int64_t s = 1;
    for (int i = out->ndim - 1; i >= 0; i--) {
        int ii = in->ndim - out->ndim + i;
        int64_t d = ii >= 0 ? in->d[ii] : 1;
        st[i] = d == 1 ? 0 : s;
        s *= d;
    }
}

void cpu_row_strides(const opsched_shape *s, int64_t *st)
{
    int64_t m = 1;
    for (int i = s->ndim - 1; i >= 0; i--) {
        st[i] = m;
        m *= s->d[i];
    }
}

int64_t cpu_span(const opsched_shape *s, int from, int to)
{
    int64_t n = 1;
    for (int i = from; i < to; i++)
        n *= s->d[i];
    return n;
}

void cpu_rows(const opsched_shape *s, int64_t *len, int64_t *rows)
{
    *len = s->ndim > 0 ? s->d[s->ndim - 1] : 1;
    *rows = s->ndim > 0 ? cpu_span(s, 0, s->ndim - 1) : 1;
    if (*len == 0) *rows = 0;
}

void cpu_broadcast_copy(const void *x, const opsched_shape *from, const opsched_shape *to, void *y,
                        size_t esz)
{
    cpu_walk w;
    int64_t len, rows, i = 0;
    cpu_walk_init(&w, to);
    cpu_bcast_strides(from, to, w.st[0]);
    cpu_rows(to, &len, &rows);
    int64_t s = to->ndim > 0 ? w.st[0][to->ndim - 1] : 0;
    for (int64_t r = 0; r < rows; r++, cpu_walk_step(&w, to->ndim - 1))
        for (int64_t j = 0; j < len; j++)
            cpu_copy_elem(y, i++, x, w.off[0] + j * s, esz);
}
