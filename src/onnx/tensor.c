/*
 * tensor.c - TensorProtos: element types, dimensions, payloads from
 * raw_data, the typed fields or external files, and conversions between
 * host constants and graph payloads.
 *
 * Every size that comes from the file is checked before it is used: dims
 * are bounded, element counts overflow-checked, and a payload must hold
 * exactly as many bytes as its dims say.  External data is read only when
 * the caller asked for weights, only from a regular file inside the model's
 * folder (after resolving symbolic links), and never from anywhere else.
 */
/* realpath() is an X/Open interface; the build asks only for POSIX 2008. */
#define _XOPEN_SOURCE 700

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/file.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

const char *os_onnx_elem_name(int32_t elem)
{
    static const char *const names[] = {
        "undefined",      "float",      "uint8",          "int8",       "uint16",    "int16",
        "int32",          "int64",      "string",         "bool",       "float16",   "double",
        "uint32",         "uint64",     "complex64",      "complex128", "bfloat16",  "float8e4m3fn",
        "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4",      "int4",      "float4e2m1",
        "float8e8m0",     "uint2",      "int2",           "float6e2m3", "float6e3m2"};
    if (elem >= 0 && (size_t)elem < OS_ARRAY_LEN(names)) return names[elem];
    return "unknown";
}

size_t os_onnx_elem_size(int32_t elem)
{
    switch (elem) {
    case OS_ONNX_UINT8:
    case OS_ONNX_INT8:
    case OS_ONNX_BOOL:
        return 1;
    case OS_ONNX_UINT16:
    case OS_ONNX_INT16:
    case OS_ONNX_FLOAT16:
    case OS_ONNX_BFLOAT16:
        return 2;
    case OS_ONNX_FLOAT:
    case OS_ONNX_INT32:
    case OS_ONNX_UINT32:
        return 4;
    case OS_ONNX_INT64:
    case OS_ONNX_UINT64:
    case OS_ONNX_DOUBLE:
        return 8;
    default:
        return 0;
    }
}

int os_onnx_elem_is_float(int32_t elem)
{
    return elem == OS_ONNX_FLOAT || elem == OS_ONNX_FLOAT16 || elem == OS_ONNX_BFLOAT16 ||
           elem == OS_ONNX_DOUBLE;
}

opsched_status os_onnx_dtype(opsched_ctx *ctx, int32_t elem, const char *what, opsched_dtype *out)
{
    switch (elem) {
    case OS_ONNX_FLOAT:
        *out = OPSCHED_F32;
        return OPSCHED_OK;
    case OS_ONNX_FLOAT16:
        *out = OPSCHED_F16;
        return OPSCHED_OK;
    case OS_ONNX_BFLOAT16:
        *out = OPSCHED_BF16;
        return OPSCHED_OK;
    case OS_ONNX_INT8:
        *out = OPSCHED_INT8;
        return OPSCHED_OK;
    case OS_ONNX_INT32:
        *out = OPSCHED_INT32;
        return OPSCHED_OK;
    case OS_ONNX_INT64:
        *out = OPSCHED_INT64;
        return OPSCHED_OK;
    case OS_ONNX_UINT8:
        *out = OPSCHED_UINT8;
        return OPSCHED_OK;
    case OS_ONNX_BOOL:
        *out = OPSCHED_BOOL;
        return OPSCHED_OK;
    default:
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                       "tensor '%s' has element type %s, which opsched graphs cannot hold", what,
                       os_onnx_elem_name(elem));
    }
}

int32_t os_onnx_elem_of(opsched_dtype dt)
{
    switch (dt) {
    case OPSCHED_F32:
        return OS_ONNX_FLOAT;
    case OPSCHED_F16:
        return OS_ONNX_FLOAT16;
    case OPSCHED_BF16:
        return OS_ONNX_BFLOAT16;
    case OPSCHED_INT8:
        return OS_ONNX_INT8;
    case OPSCHED_INT32:
        return OS_ONNX_INT32;
    case OPSCHED_INT64:
        return OS_ONNX_INT64;
    case OPSCHED_UINT8:
        return OS_ONNX_UINT8;
    case OPSCHED_BOOL:
        return OS_ONNX_BOOL;
    default:
        return OS_ONNX_UNDEFINED;
    }
}

opsched_status os_onnx_tensor_shape(opsched_ctx *ctx, const Onnx__TensorProto *t, const char *what,
                                    opsched_shape *out)
{
    memset(out, 0, sizeof(*out));
    if (t->n_dims > OPSCHED_MAX_DIMS)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "tensor '%s' has %zu dimensions (at most %d)",
                       what, t->n_dims, OPSCHED_MAX_DIMS);
    int64_t numel = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        int64_t d = t->dims[i];
        if (d < 0 || d > OS_ONNX_MAX_DIM || !os_mul_ok(numel, d, &numel) ||
            numel > OS_ONNX_MAX_NUMEL)
            return OS_FAIL(ctx, OPSCHED_ERR_PARSE, "tensor '%s' has an invalid dimension %lld",
                           what, (long long)d);
        out->d[i] = d;
    }
    out->ndim = (int)t->n_dims;
    return OPSCHED_OK;
}

/* ---- half-precision ----------------------------------------------------- */

static float half_to_float(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)man, -24);
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexpf((float)(man | 0x400), exp - 25);
    return sign ? -v : v;
}

static uint16_t float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    if (isnan(f)) return sign | 0x7e00;
    float a = fabsf(f);
    if (a >= 65520.0f) return sign | 0x7c00;
    if (a < ldexpf(1.0f, -25)) return sign;
    int e;
    float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    if (e < -13) {           /* subnormal: units of 2^-24 */
        return sign | (uint16_t)lrintf(ldexpf(a, 24));
    }
    /* normal: 11 significant bits, rounding may carry into the exponent */
    uint32_t bits = (uint32_t)lrintf(ldexpf(m, 11)); /* in [1024, 2048] */
    int he = e + 14;
    if (bits == 2048) {
        bits = 1024;
        he++;
    }
    if (he >= 31) return sign | 0x7c00;
    return sign | (uint16_t)(he << 10) | (uint16_t)(bits & 0x3ff);
}

static float bf16_to_float(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if (isnan(f)) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

static float to_f32(double x)
{
    if (isnan(x)) return NAN;
    if (x > FLT_MAX) return INFINITY;
    if (x < -FLT_MAX) return -INFINITY;
    return (float)x;
}

static int64_t to_i64(double x)
{
    if (isnan(x)) return 0;
    if (x >= 9.2e18) return INT64_MAX;
    if (x <= -9.2e18) return INT64_MIN;
    return (int64_t)x;
}

/* ---- raw element access --------------------------------------------------- */

static int64_t raw_int(const uint8_t *p, int32_t elem)
{
    switch (elem) {
    case OS_ONNX_UINT8:
    case OS_ONNX_BOOL:
        return p[0];
    case OS_ONNX_INT8:
        return (int8_t)p[0];
    case OS_ONNX_UINT16: {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case OS_ONNX_INT16: {
        int16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case OS_ONNX_INT32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case OS_ONNX_UINT32: {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    default: {
        int64_t v; /* INT64, and UINT64 wrapped the way Cast wraps it */
        memcpy(&v, p, 8);
        return v;
    }
    }
}

static double raw_float(const uint8_t *p, int32_t elem)
{
    uint16_t h;
    switch (elem) {
    case OS_ONNX_FLOAT: {
        float v;
        memcpy(&v, p, 4);
        return v;
    }
    case OS_ONNX_FLOAT16:
        memcpy(&h, p, 2);
        return half_to_float(h);
    case OS_ONNX_BFLOAT16:
        memcpy(&h, p, 2);
        return bf16_to_float(h);
    default: {
        double v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

/* ---- external data -------------------------------------------------------- */

static int parse_count(const char *s, int64_t *out)
{
    if (!s || !*s) return 0;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return 0;
        if (!os_mul_ok(v, 10, &v) || !os_add_ok(v, *s - '0', &v)) return 0;
    }
    *out = v;
    return 1;
}

/* A relative path with no ".." component and no backslash. */
static int location_ok(const char *loc)
{
    if (!loc || !loc[0] || loc[0] == '/' || strchr(loc, '\\')) return 0;
    for (const char *p = loc; *p;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') return 0;
        p += n;
        if (*p == '/') p++;
    }
    return 1;
}

static opsched_status read_at(opsched_ctx *ctx, int fd, const char *loc, int64_t offset,
                              uint8_t *buf, size_t want)
{
    size_t got = 0;
    while (got < want) {
        ssize_t r = pread(fd, buf + got, want - got, (off_t)(offset + (int64_t)got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return OS_FAIL(ctx, OPSCHED_ERR_IO, "external data '%s': read failed: %s", loc,
                           r < 0 ? strerror(errno) : "unexpected end of file");
        got += (size_t)r;
    }
    return OPSCHED_OK;
}

/* Reads want bytes of t's external data into a new buffer. */
static opsched_status ext_read(os_loader *L, const Onnx__TensorProto *t, const char *what,
                               size_t want, uint8_t **out)
{
    opsched_status st = OPSCHED_OK;
    const char *loc = NULL;
    int64_t offset = 0, length = -1;
    char *path = NULL, *real_base = NULL, *real = NULL;
    uint8_t *buf = NULL;
    int fd = -1;
    *out = NULL;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (!e->key || !e->value) continue;
        if (strcmp(e->key, "location") == 0)
            loc = e->value;
        else if (strcmp(e->key, "offset") == 0 && !parse_count(e->value, &offset))
            return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "tensor '%s': bad external data offset '%s'",
                           what, e->value);
        else if (strcmp(e->key, "length") == 0 && !parse_count(e->value, &length))
            return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "tensor '%s': bad external data length '%s'",
                           what, e->value);
    }
    if (!loc)
        return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "tensor '%s': external data without a location",
                       what);
    if (length >= 0 && (uint64_t)length != (uint64_t)want)
        return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE,
                       "tensor '%s': external data length %lld does not match its %zu bytes", what,
                       (long long)length, want);
    if (!L->base_dir)
        return OS_FAIL(L->ctx, OPSCHED_ERR_IO,
                       "tensor '%s' keeps its data in '%s', but the model was not loaded from a "
                       "file, so there is no folder to read it from",
                       what, loc);
    if (!location_ok(loc))
        return OS_FAIL(L->ctx, OPSCHED_ERR_IO,
                       "tensor '%s': refusing to read external data '%s' outside the model's "
                       "folder",
                       what, loc);
    size_t plen = strlen(L->base_dir) + strlen(loc) + 2;
    path = malloc(plen);
    if (!path) {
        st = OS_NOMEM(L->ctx);
        goto done;
    }
    snprintf(path, plen, "%s/%s", L->base_dir, loc);
    real_base = realpath(L->base_dir, NULL);
    real = realpath(path, NULL);
    if (real_base && !real && errno == ENOENT) {
        /* Exported without its weights (the external file never written):
         * the executor draws them from its seed, scaled by fan-in. */
        if (!L->missing_external)
            os_log(L->ctx, OPSCHED_LOG_WARN,
                   "external data '%s' does not exist: weights kept there are random "
                   "(deterministic from the seed)",
                   path);
        L->missing_external = 1;
        goto done;
    }
    if (!real_base || !real) {
        st = OS_FAIL(L->ctx, OPSCHED_ERR_IO, "tensor '%s': cannot open external data '%s': %s",
                     what, path, strerror(errno));
        goto done;
    }
    size_t blen = strlen(real_base);
    if (strcmp(real_base, "/") != 0 && (strncmp(real, real_base, blen) != 0 || real[blen] != '/')) {
        st = OS_FAIL(L->ctx, OPSCHED_ERR_IO,
                     "tensor '%s': refusing to read external data '%s': it resolves to '%s', "
                     "outside the model's folder",
                     what, loc, real);
        goto done;
    }
    int64_t fsize = 0;
    if (os_file_open_regular(L->ctx, real, "external data", &fd, &fsize) != OPSCHED_OK) {
        char why[512];
        snprintf(why, sizeof(why), "%s", opsched_ctx_last_error(L->ctx));
        st = OS_FAIL(L->ctx, OPSCHED_ERR_IO, "tensor '%s': %s", what, why);
        goto done;
    }
    /* offset + want is never computed: offset may be anything up to
     * INT64_MAX, and fsize - offset cannot overflow once offset <= fsize. */
    if (offset > fsize || (uint64_t)(fsize - offset) < (uint64_t)want) {
        st = OS_FAIL(L->ctx, OPSCHED_ERR_PARSE,
                     "tensor '%s': external data '%s' is too short: it holds %lld bytes, the "
                     "tensor needs %zu at offset %lld",
                     what, loc, (long long)fsize, want, (long long)offset);
        goto done;
    }
    buf = malloc(want ? want : 1);
    if (!buf) {
        st = OS_NOMEM(L->ctx);
        goto done;
    }
    OS_TRY_GOTO(st, read_at(L->ctx, fd, loc, offset, buf, want), done);
    *out = buf;
    buf = NULL;
done:
    if (fd >= 0) close(fd);
    free(buf);
    free(path);
    free(real_base);
    free(real);
    return st;
}

/* ---- payload bytes -------------------------------------------------------- */

static int is_external(const Onnx__TensorProto *t)
{
    return t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

/* The payload of t as little-endian elements of its own type, in a new
 * buffer; *out stays NULL (status OK) when the file holds no data for it or
 * it is external and weights were not asked for. */
static opsched_status tensor_bytes(os_loader *L, const Onnx__TensorProto *t, const char *what,
                                   int64_t numel, uint8_t **out)
{
    *out = NULL;
    size_t es = os_onnx_elem_size(t->data_type);
    if (es == 0)
        return OS_FAIL(L->ctx, OPSCHED_ERR_UNSUPPORTED, "tensor '%s' has element type %s", what,
                       os_onnx_elem_name(t->data_type));
    int64_t bytes64;
    if (!os_mul_ok(numel, (int64_t)es, &bytes64) || (uint64_t)bytes64 > SIZE_MAX / 2)
        return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "tensor '%s' is too large", what);
    size_t want = (size_t)bytes64;
    if (is_external(t)) {
        if (!L->opts.load_weights) return OPSCHED_OK;
        return ext_read(L, t, what, want, out);
    }
    if (t->has_raw_data) {
        if (t->raw_data.len != want)
            return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE,
                           "tensor '%s': raw_data holds %zu bytes, its dims need %zu", what,
                           t->raw_data.len, want);
        uint8_t *buf = malloc(want ? want : 1);
        if (!buf) return OS_NOMEM(L->ctx);
        if (want) memcpy(buf, t->raw_data.data, want);
        *out = buf;
        return OPSCHED_OK;
    }
    size_t have;
    switch (t->data_type) {
    case OS_ONNX_FLOAT:
        have = t->n_float_data;
        break;
    case OS_ONNX_INT64:
        have = t->n_int64_data;
        break;
    case OS_ONNX_DOUBLE:
        have = t->n_double_data;
        break;
    case OS_ONNX_UINT32:
    case OS_ONNX_UINT64:
        have = t->n_uint64_data;
        break;
    default:
        have = t->n_int32_data;
        break;
    }
    if (have == 0 && numel > 0) return OPSCHED_OK;
    if (have != (size_t)numel)
        return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE,
                       "tensor '%s' holds %zu values, its dims need %lld", what, have,
                       (long long)numel);
    uint8_t *buf = malloc(want ? want : 1);
    if (!buf) return OS_NOMEM(L->ctx);
    for (size_t k = 0; k < have; k++) {
        uint8_t *p = buf + k * es;
        switch (t->data_type) {
        case OS_ONNX_FLOAT:
            memcpy(p, &t->float_data[k], 4);
            break;
        case OS_ONNX_INT64:
            memcpy(p, &t->int64_data[k], 8);
            break;
        case OS_ONNX_DOUBLE:
            memcpy(p, &t->double_data[k], 8);
            break;
        case OS_ONNX_UINT32: {
            uint32_t v = (uint32_t)t->uint64_data[k];
            memcpy(p, &v, 4);
            break;
        }
        case OS_ONNX_UINT64:
            memcpy(p, &t->uint64_data[k], 8);
            break;
        default: {
            /* int32_data holds the low bits of narrower types (and the
             * 16-bit patterns of float16 and bfloat16). */
            uint32_t v = (uint32_t)t->int32_data[k];
            uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
            memcpy(p, b, es);
            break;
        }
        }
    }
    *out = buf;
    return OPSCHED_OK;
}

opsched_status os_onnx_tensor_check(os_loader *L, const Onnx__TensorProto *t, const char *what)
{
    opsched_shape shape;
    OS_TRY(os_onnx_tensor_shape(L->ctx, t, what, &shape));
    if (is_external(t) || !t->has_raw_data) return OPSCHED_OK;
    size_t es = os_onnx_elem_size(t->data_type);
    int64_t want;
    if (!os_mul_ok(opsched_shape_numel(&shape), (int64_t)es, &want) ||
        (uint64_t)want != (uint64_t)t->raw_data.len)
        return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE,
                       "tensor '%s': raw_data holds %zu bytes, its dims and type need %lld", what,
                       t->raw_data.len, (long long)want);
    return OPSCHED_OK;
}

opsched_status os_onnx_tensor_cval(os_loader *L, const Onnx__TensorProto *t, const char *what,
                                   int64_t max_elems, os_cval **out)
{
    opsched_status st = OPSCHED_OK;
    uint8_t *bytes = NULL;
    opsched_shape shape;
    *out = NULL;
    OS_TRY(os_onnx_tensor_shape(L->ctx, t, what, &shape));
    int64_t numel = opsched_shape_numel(&shape);
    if (numel > max_elems || numel > OS_ONNX_FOLD_MAX_ELEMS || os_onnx_elem_size(t->data_type) == 0)
        return OPSCHED_OK;
    OS_TRY(tensor_bytes(L, t, what, numel, &bytes));
    if (!bytes) return OPSCHED_OK;
    os_cval *cv;
    OS_TRY_GOTO(st, os_onnx_cval_new(L, t->data_type, &shape, &cv), done);
    size_t es = os_onnx_elem_size(t->data_type);
    for (int64_t k = 0; k < numel; k++) {
        if (cv->is_float)
            cv->f[k] = raw_float(bytes + (size_t)k * es, t->data_type);
        else
            cv->i[k] = raw_int(bytes + (size_t)k * es, t->data_type);
    }
    *out = cv;
done:
    free(bytes);
    return st;
}

opsched_status os_onnx_tensor_payload(os_loader *L, const Onnx__TensorProto *t, const char *what,
                                      opsched_dtype dt, void **out, size_t *bytes)
{
    opsched_shape shape;
    uint8_t *buf = NULL;
    *out = NULL;
    *bytes = 0;
    OS_TRY(os_onnx_tensor_shape(L->ctx, t, what, &shape));
    if (os_onnx_elem_of(dt) != t->data_type)
        return OS_FAIL(L->ctx, OPSCHED_ERR_UNSUPPORTED, "tensor '%s': cannot store %s as %s", what,
                       os_onnx_elem_name(t->data_type), opsched_dtype_name(dt));
    int64_t numel = opsched_shape_numel(&shape);
    OS_TRY(tensor_bytes(L, t, what, numel, &buf));
    if (!buf) {
        if (is_external(t)) return OPSCHED_OK;
        return numel == 0 ? OPSCHED_OK
                          : OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "tensor '%s' has no data", what);
    }
    *out = buf;
    *bytes = (size_t)numel * os_onnx_elem_size(t->data_type);
    return OPSCHED_OK;
}

opsched_status os_onnx_cval_payload(opsched_ctx *ctx, const os_cval *cv, opsched_dtype dt,
                                    void **out, size_t *bytes)
{
    size_t es = opsched_dtype_size(dt);
    uint8_t *buf = malloc(cv->n > 0 ? (size_t)cv->n * es : 1);
    if (!buf) return OS_NOMEM(ctx);
    for (int64_t k = 0; k < cv->n; k++) {
        uint8_t *p = buf + (size_t)k * es;
        double f = os_onnx_cval_float(cv, k);
        int64_t i = cv->is_float ? to_i64(f) : cv->i[k];
        switch (dt) {
        case OPSCHED_F32: {
            float v = to_f32(f);
            memcpy(p, &v, 4);
            break;
        }
        case OPSCHED_F16: {
            uint16_t v = float_to_half(to_f32(f));
            memcpy(p, &v, 2);
            break;
        }
        case OPSCHED_BF16: {
            uint16_t v = float_to_bf16(to_f32(f));
            memcpy(p, &v, 2);
            break;
        }
        case OPSCHED_INT8: {
            int8_t v = (int8_t)(uint8_t)(uint64_t)i;
            memcpy(p, &v, 1);
            break;
        }
        case OPSCHED_UINT8:
            *p = (uint8_t)(uint64_t)i;
            break;
        case OPSCHED_BOOL:
            /* Any non-zero value (a NaN included) is true, as Cast says. */
            *p = cv->is_float ? f != 0.0 : i != 0;
            break;
        case OPSCHED_INT32: {
            int32_t v = (int32_t)(uint32_t)(uint64_t)i;
            memcpy(p, &v, 4);
            break;
        }
        case OPSCHED_INT64:
            memcpy(p, &i, 8);
            break;
        default:
            free(buf);
            return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "cannot store a constant as %s",
                           opsched_dtype_name(dt));
        }
    }
    *out = buf;
    *bytes = (size_t)cv->n * es;
    return OPSCHED_OK;
}

double os_onnx_round_to(int32_t elem, double x)
{
    switch (elem) {
    case OS_ONNX_FLOAT:
        return to_f32(x);
    case OS_ONNX_FLOAT16:
        return half_to_float(float_to_half(to_f32(x)));
    case OS_ONNX_BFLOAT16:
        return bf16_to_float(float_to_bf16(to_f32(x)));
    default:
        return x;
    }
}

int64_t os_onnx_wrap_int(int32_t elem, int64_t x)
{
    uint64_t u = (uint64_t)x;
    switch (elem) {
    case OS_ONNX_BOOL:
        return x != 0;
    case OS_ONNX_UINT8:
        return (uint8_t)u;
    case OS_ONNX_INT8:
        return (int8_t)(uint8_t)u;
    case OS_ONNX_UINT16:
        return (uint16_t)u;
    case OS_ONNX_INT16:
        return (int16_t)(uint16_t)u;
    case OS_ONNX_INT32:
        return (int32_t)(uint32_t)u;
    case OS_ONNX_UINT32:
        return (uint32_t)u;
    default:
        return x;
    }
}

int64_t os_onnx_float_to_int(double x)
{
    return to_i64(x);
}
