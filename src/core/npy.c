/*
 * npy.c - NumPy .npy files (opsched/npy.h).
 *
 * A file is a preamble (the magic "\x93NUMPY", the version's two bytes,
 * the header's length: 2 bytes little-endian in 1.0, 4 in 2.0 and 3.0),
 * the header (a Python dict literal, padded with spaces and ended by a
 * newline) and the raw data.  The header is read by a small parser of
 * exactly the literals NumPy writes there: strings in quotes without
 * escapes, True/False, decimal integers and tuples of them; anything else
 * is refused with what was found and where.  The data is read straight
 * into the array returned, once the shape and the file's size agree on its
 * length, then byte-swapped and transposed in memory when it has to be.
 */
#include "opsched/npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/file.h"
#include "core/util.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
/* numpy.save pads the header so that the data starts at a multiple of
 * this, and leaves room for the first dimension to grow to this many
 * digits (numpy/lib/format.py: ARRAY_ALIGN, GROWTH_AXIS_MAX_DIGITS). */
#define NPY_ALIGN 64
#define NPY_GROWTH_DIGITS 21
/* The longest preamble: magic, version, a 4-byte length. */
#define NPY_PREAMBLE_MAX 12
/* The header numpy.save writes for OPSCHED_NPY_MAX_DIMS dims of 19 digits
 * is below 1 KiB, padding and growth room included. */
#define NPY_WRITE_HEADER_MAX 2048

typedef struct dtype_info {
    opsched_npy_dtype dt;
    char kind; /* 'b', 'i', 'u', 'f' as in the descr */
    unsigned size;
    const char *name;
} dtype_info;

static const dtype_info dtypes[] = {
    {OPSCHED_NPY_BOOL, 'b', 1, "bool"},       {OPSCHED_NPY_INT8, 'i', 1, "int8"},
    {OPSCHED_NPY_INT16, 'i', 2, "int16"},     {OPSCHED_NPY_INT32, 'i', 4, "int32"},
    {OPSCHED_NPY_INT64, 'i', 8, "int64"},     {OPSCHED_NPY_UINT8, 'u', 1, "uint8"},
    {OPSCHED_NPY_UINT16, 'u', 2, "uint16"},   {OPSCHED_NPY_UINT32, 'u', 4, "uint32"},
    {OPSCHED_NPY_UINT64, 'u', 8, "uint64"},   {OPSCHED_NPY_FLOAT16, 'f', 2, "float16"},
    {OPSCHED_NPY_FLOAT32, 'f', 4, "float32"}, {OPSCHED_NPY_FLOAT64, 'f', 8, "float64"},
};

#define SUPPORTED_LIST "bool, int8 to int64, uint8 to uint64, float16, float32 and float64"

static const dtype_info *info_of(opsched_npy_dtype dt)
{
    for (size_t i = 0; i < OS_ARRAY_LEN(dtypes); i++)
        if (dtypes[i].dt == dt) return &dtypes[i];
    return NULL;
}

const char *opsched_npy_dtype_name(opsched_npy_dtype dt)
{
    const dtype_info *d = info_of(dt);
    return d ? d->name : "?";
}

size_t opsched_npy_dtype_size(opsched_npy_dtype dt)
{
    const dtype_info *d = info_of(dt);
    return d ? d->size : 0;
}

opsched_status opsched_npy_dtype_to_dtype(opsched_npy_dtype dt, opsched_dtype *out)
{
    switch (dt) {
    case OPSCHED_NPY_FLOAT32:
        *out = OPSCHED_F32;
        return OPSCHED_OK;
    case OPSCHED_NPY_FLOAT16:
        *out = OPSCHED_F16;
        return OPSCHED_OK;
    case OPSCHED_NPY_INT8:
        *out = OPSCHED_INT8;
        return OPSCHED_OK;
    case OPSCHED_NPY_INT32:
        *out = OPSCHED_INT32;
        return OPSCHED_OK;
    case OPSCHED_NPY_INT64:
        *out = OPSCHED_INT64;
        return OPSCHED_OK;
    case OPSCHED_NPY_UINT8:
        *out = OPSCHED_UINT8;
        return OPSCHED_OK;
    case OPSCHED_NPY_BOOL:
        *out = OPSCHED_BOOL;
        return OPSCHED_OK;
    default:
        return OPSCHED_ERR_UNSUPPORTED;
    }
}

opsched_status opsched_npy_dtype_from_dtype(opsched_dtype dt, opsched_npy_dtype *out)
{
    switch (dt) {
    case OPSCHED_F32:
        *out = OPSCHED_NPY_FLOAT32;
        return OPSCHED_OK;
    case OPSCHED_F16:
        *out = OPSCHED_NPY_FLOAT16;
        return OPSCHED_OK;
    case OPSCHED_INT8:
        *out = OPSCHED_NPY_INT8;
        return OPSCHED_OK;
    case OPSCHED_INT32:
        *out = OPSCHED_NPY_INT32;
        return OPSCHED_OK;
    case OPSCHED_INT64:
        *out = OPSCHED_NPY_INT64;
        return OPSCHED_OK;
    case OPSCHED_UINT8:
        *out = OPSCHED_NPY_UINT8;
        return OPSCHED_OK;
    case OPSCHED_BOOL:
        *out = OPSCHED_NPY_BOOL;
        return OPSCHED_OK;
    default:
        return OPSCHED_ERR_UNSUPPORTED;
    }
}

static int host_little(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

void opsched_npy_array_clear(opsched_npy_array *a)
{
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof(*a));
}

/* ---- the header ------------------------------------------------------ */

/* What the preamble and the header say. */
typedef struct npy_header {
    int version;
    size_t data_offset;
    const dtype_info *dtype;
    int swap; /* the data is of the other byte order */
    int fortran;
    int ndim;
    int64_t dims[OPSCHED_NPY_MAX_DIMS];
    int64_t numel;
    size_t nbytes;
} npy_header;

typedef struct parser {
    opsched_ctx *ctx;
    const char *name;
    const unsigned char *start, *p, *end;
    int version;
    char found[48]; /* the description found() last made */
} parser;

/* Text fit for a message: printable ASCII as is, other bytes as \xNN, at
 * most about out_size - 4 characters ("..." after a cut). */
static void printable(const unsigned char *s, size_t n, char *out, size_t out_size)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char piece[8];
        unsigned char c = s[i];
        int k = (c >= 0x20 && c < 0x7f && c != '\\') ? snprintf(piece, sizeof(piece), "%c", c)
                                                     : snprintf(piece, sizeof(piece), "\\x%02x", c);
        if (o + (size_t)k + 4 > out_size) {
            snprintf(out + o, out_size - o, "...");
            return;
        }
        memcpy(out + o, piece, (size_t)k);
        o += (size_t)k;
    }
    out[o] = '\0';
}

/* What is at the parser's position, for a message. */
static const char *found(parser *ps)
{
    if (ps->p >= ps->end) return "the end of the header";
    char text[24];
    size_t n = (size_t)(ps->end - ps->p);
    printable(ps->p, n < 12 ? n : 12, text, sizeof(text));
    snprintf(ps->found, sizeof(ps->found), "\"%s\"", text);
    return ps->found;
}

static opsched_status malformed(parser *ps, const char *fmt, ...) OS_PRINTF(2, 3);

static opsched_status malformed(parser *ps, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return OS_FAIL(ps->ctx, OPSCHED_ERR_PARSE, "%s: malformed .npy header (byte %ld of it): %s",
                   ps->name, (long)(ps->p - ps->start), msg);
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\f'))
        ps->p++;
}

static int at(parser *ps, char c)
{
    return ps->p < ps->end && *ps->p == (unsigned char)c;
}

/* A string literal in single or double quotes, without escapes; *s and *n
 * point into the header. */
static opsched_status parse_string(parser *ps, const unsigned char **s, size_t *n)
{
    if (!at(ps, '\'') && !at(ps, '"'))
        return malformed(ps, "expected a string, found %s", found(ps));
    unsigned char quote = *ps->p++;
    const unsigned char *begin = ps->p;
    while (ps->p < ps->end && *ps->p != quote) {
        if (*ps->p == '\\') return malformed(ps, "escape sequences in strings are not read");
        if (*ps->p == '\n') break;
        ps->p++;
    }
    if (ps->p >= ps->end || *ps->p != quote) return malformed(ps, "a string is not closed");
    *s = begin;
    *n = (size_t)(ps->p - begin);
    ps->p++;
    return OPSCHED_OK;
}

static int is_name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c >= 0x80;
}

static int at_word(parser *ps, const char *w)
{
    size_t n = strlen(w);
    return (size_t)(ps->end - ps->p) >= n && memcmp(ps->p, w, n) == 0 &&
           (ps->p + n == ps->end || !is_name_char(ps->p[n]));
}

static opsched_status parse_bool(parser *ps, int *out)
{
    if (at_word(ps, "True")) {
        *out = 1;
        ps->p += 4;
    } else if (at_word(ps, "False")) {
        *out = 0;
        ps->p += 5;
    } else {
        return malformed(ps, "'fortran_order' is True or False, not %s", found(ps));
    }
    return OPSCHED_OK;
}

/* A decimal integer, as Python writes it (no leading zeros); "3L" in the
 * files of Python 2, which NumPy still reads in versions 1.0 and 2.0. */
static opsched_status parse_int(parser *ps, int dim, int64_t *out)
{
    int neg = 0;
    if (at(ps, '-')) {
        neg = 1;
        ps->p++;
    }
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
        return malformed(ps, "dimension %d of 'shape' is not an integer: %s", dim, found(ps));
    const unsigned char *digits = ps->p;
    uint64_t v = 0;
    int too_large = 0;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        unsigned d = (unsigned)(*ps->p++ - '0');
        if (v > (UINT64_MAX - d) / 10)
            too_large = 1;
        else
            v = v * 10 + d;
    }
    if (*digits == '0' && ps->p - digits > 1) {
        ps->p = digits;
        return malformed(ps, "dimension %d of 'shape' has a leading zero", dim);
    }
    if (ps->version <= 2 && at(ps, 'L')) ps->p++;
    if (ps->p < ps->end && (is_name_char(*ps->p) || *ps->p == '.'))
        return malformed(ps, "dimension %d of 'shape' is not a decimal integer: %s", dim,
                         found(ps));
    if (neg && (v != 0 || too_large))
        return OS_FAIL(ps->ctx, OPSCHED_ERR_PARSE, "%s: dimension %d of the .npy shape is negative",
                       ps->name, dim);
    if (too_large || v > (uint64_t)INT64_MAX)
        return OS_FAIL(ps->ctx, OPSCHED_ERR_PARSE,
                       "%s: dimension %d of the .npy shape is larger than 64 bits hold", ps->name,
                       dim);
    *out = (int64_t)v;
    return OPSCHED_OK;
}

static opsched_status parse_shape(parser *ps, npy_header *h)
{
    if (at(ps, '['))
        return malformed(ps, "'shape' is a list; NumPy writes a tuple, such as (2, 3)");
    if (!at(ps, '(')) return malformed(ps, "'shape' is a tuple, not %s", found(ps));
    ps->p++;
    skip_ws(ps);
    h->ndim = 0;
    if (at(ps, ')')) {
        ps->p++;
        return OPSCHED_OK;
    }
    for (;;) {
        if (h->ndim == OPSCHED_NPY_MAX_DIMS)
            return OS_FAIL(ps->ctx, OPSCHED_ERR_UNSUPPORTED,
                           "%s: the .npy shape has more than %d dimensions", ps->name,
                           OPSCHED_NPY_MAX_DIMS);
        OS_TRY(parse_int(ps, h->ndim, &h->dims[h->ndim]));
        h->ndim++;
        skip_ws(ps);
        if (at(ps, ',')) {
            ps->p++;
            skip_ws(ps);
            if (at(ps, ')')) break;
            continue;
        }
        if (at(ps, ')')) {
            if (h->ndim == 1)
                return malformed(ps, "'shape' (%lld) is an integer, not a tuple: (%lld,) is",
                                 (long long)h->dims[0], (long long)h->dims[0]);
            break;
        }
        return malformed(ps, "expected ',' or ')' in 'shape', found %s", found(ps));
    }
    ps->p++;
    return OPSCHED_OK;
}

/* The descr: [byte order] kind size, e.g. '<f4', '|b1', '>i8'. */
static opsched_status parse_descr(parser *ps, npy_header *h)
{
    if (at(ps, '['))
        return OS_FAIL(ps->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "%s: the .npy dtype is structured (a list of fields), which opsched does "
                       "not read; it reads %s",
                       ps->name, SUPPORTED_LIST);
    const unsigned char *s;
    size_t n;
    OS_TRY(parse_string(ps, &s, &n));
    char shown[48];
    printable(s, n, shown, sizeof(shown));
    const unsigned char *t = s;
    size_t tn = n;
    char order = '=';
    if (tn > 0 && (*t == '<' || *t == '>' || *t == '|' || *t == '=')) {
        order = (char)*t++;
        tn--;
    }
    const dtype_info *d = NULL;
    if (tn == 1 && *t == '?') { /* NumPy's one-character code of bool */
        t = (const unsigned char *)"b1";
        tn = 2;
    }
    for (size_t i = 0; tn >= 2 && i < OS_ARRAY_LEN(dtypes); i++) {
        char code[4];
        snprintf(code, sizeof(code), "%c%u", dtypes[i].kind, dtypes[i].size);
        if (tn == strlen(code) && memcmp(t, code, tn) == 0) d = &dtypes[i];
    }
    if (!d) {
        const char *what = "not a dtype opsched reads";
        if (tn >= 1) switch (*t) {
            case 'O':
                what = "an object array (pickled Python objects), which opsched never reads";
                break;
            case 'c':
                what = "complex, which opsched does not read";
                break;
            case 'U':
            case 'S':
            case 'a':
                what = "a string dtype, which opsched does not read";
                break;
            case 'M':
            case 'm':
                what = "a datetime dtype, which opsched does not read";
                break;
            case 'V':
                what = "raw bytes (void), which opsched does not read";
                break;
            case 'f':
                what = "a float of a size opsched does not read";
                break;
            default:
                break;
            }
        return OS_FAIL(ps->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "%s: the .npy dtype '%s' is %s; it reads %s", ps->name, shown, what,
                       SUPPORTED_LIST);
    }
    h->dtype = d;
    int little = order == '<' || ((order == '=' || order == '|') && host_little());
    h->swap = d->size > 1 && little != host_little();
    return OPSCHED_OK;
}

static opsched_status parse_dict(parser *ps, npy_header *h)
{
    int seen_descr = 0, seen_fortran = 0, seen_shape = 0;
    skip_ws(ps);
    if (!at(ps, '{'))
        return malformed(ps, "the header is a Python dict, starting with '{', not %s", found(ps));
    ps->p++;
    skip_ws(ps);
    if (at(ps, '}')) {
        ps->p++;
    } else {
        for (;;) {
            const unsigned char *key;
            size_t kn;
            const unsigned char *key_at = ps->p;
            OS_TRY(parse_string(ps, &key, &kn));
            skip_ws(ps);
            if (!at(ps, ':')) return malformed(ps, "expected ':' after a key, found %s", found(ps));
            ps->p++;
            skip_ws(ps);
            int *seen;
            if (kn == 5 && memcmp(key, "descr", 5) == 0)
                seen = &seen_descr;
            else if (kn == 13 && memcmp(key, "fortran_order", 13) == 0)
                seen = &seen_fortran;
            else if (kn == 5 && memcmp(key, "shape", 5) == 0)
                seen = &seen_shape;
            else {
                char shown[48];
                printable(key, kn, shown, sizeof(shown));
                ps->p = key_at;
                return malformed(ps,
                                 "unknown key '%s' (the keys are 'descr', 'fortran_order' "
                                 "and 'shape')",
                                 shown);
            }
            if (*seen) {
                ps->p = key_at;
                return malformed(ps, "the key '%.*s' appears twice", (int)kn, (const char *)key);
            }
            *seen = 1;
            if (seen == &seen_descr)
                OS_TRY(parse_descr(ps, h));
            else if (seen == &seen_fortran)
                OS_TRY(parse_bool(ps, &h->fortran));
            else
                OS_TRY(parse_shape(ps, h));
            skip_ws(ps);
            if (at(ps, ',')) {
                ps->p++;
                skip_ws(ps);
                if (at(ps, '}')) {
                    ps->p++;
                    break;
                }
                continue;
            }
            if (at(ps, '}')) {
                ps->p++;
                break;
            }
            return malformed(ps, "expected ',' or '}' after the value of '%.*s', found %s", (int)kn,
                             (const char *)key, found(ps));
        }
    }
    skip_ws(ps);
    if (ps->p < ps->end) return malformed(ps, "%s after the dict", found(ps));
    const char *missing = NULL;
    if (!seen_shape) missing = "shape";
    if (!seen_fortran) missing = "fortran_order";
    if (!seen_descr) missing = "descr";
    if (missing)
        return OS_FAIL(ps->ctx, OPSCHED_ERR_PARSE, "%s: the .npy header has no '%s' key", ps->name,
                       missing);
    return OPSCHED_OK;
}

/* "(2, 3)" for messages. */
static void shape_text(const npy_header *h, char *out, size_t size)
{
    size_t o = 0;
    o += (size_t)snprintf(out, size, "(");
    for (int i = 0; i < h->ndim && o < size; i++)
        o += (size_t)snprintf(out + o, size - o, "%s%lld", i ? ", " : "", (long long)h->dims[i]);
    if (o < size) o += (size_t)snprintf(out + o, size - o, h->ndim == 1 ? ",)" : ")");
    if (o >= size && size > 4) snprintf(out + size - 5, 5, "...)");
}

static uint32_t le_u32(const unsigned char *p, int n)
{
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Reads the preamble and the header from buf (avail bytes of a file of
 * total bytes; avail covers at least the preamble and the longest header
 * read, or all of the file) and checks the data's length against total. */
static opsched_status parse_header(opsched_ctx *ctx, const char *name, const unsigned char *buf,
                                   size_t avail, uint64_t total, npy_header *h)
{
    memset(h, 0, sizeof(*h));
    size_t have = avail < total ? avail : (size_t)total;
    if (memcmp(buf, NPY_MAGIC, have < NPY_MAGIC_LEN ? have : NPY_MAGIC_LEN) != 0 || have == 0)
        return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                       "%s: not a NumPy .npy file (it does not start with \\x93NUMPY)", name);
    if (have < NPY_MAGIC_LEN + 2)
        return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                       "%s: truncated .npy file: %zu bytes, shorter than its preamble", name, have);
    unsigned major = buf[6], minor = buf[7];
    if (minor != 0 || major < 1 || major > 3)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                       "%s: .npy format version %u.%u is not supported (opsched reads 1.0, 2.0 "
                       "and 3.0)",
                       name, major, minor);
    h->version = (int)major;
    int len_size = major == 1 ? 2 : 4;
    size_t start = NPY_MAGIC_LEN + 2 + (size_t)len_size;
    if (have < start)
        return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                       "%s: truncated .npy file: %zu bytes, shorter than its preamble", name, have);
    uint32_t hlen = le_u32(buf + 8, len_size);
    if ((uint64_t)hlen > total - start)
        return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                       "%s: the .npy header length %lu goes beyond the end of the file (%llu "
                       "bytes after the preamble)",
                       name, (unsigned long)hlen, (unsigned long long)(total - start));
    if (hlen > OPSCHED_NPY_MAX_HEADER)
        return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                       "%s: the .npy header is %lu bytes long, more than the %d opsched reads",
                       name, (unsigned long)hlen, OPSCHED_NPY_MAX_HEADER);
    if (start + hlen > have)
        return OS_FAIL(ctx, OPSCHED_ERR_PARSE, "%s: the .npy file ended inside its header", name);
    parser ps = {.ctx = ctx,
                 .name = name,
                 .start = buf + start,
                 .p = buf + start,
                 .end = buf + start + hlen,
                 .version = (int)major};
    OS_TRY(parse_dict(&ps, h));
    h->data_offset = start + hlen;

    /* Element count and bytes: overflow is checked on the non-zero dims
     * too when another dim is 0, as NumPy does. */
    int64_t prod = 1;
    int zero = 0;
    char shape[128];
    for (int i = 0; i < h->ndim; i++) {
        if (h->dims[i] == 0) {
            zero = 1;
        } else if (!os_mul_ok(prod, h->dims[i], &prod)) {
            shape_text(h, shape, sizeof(shape));
            return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                           "%s: the .npy shape %s has more elements than 64 bits count", name,
                           shape);
        }
    }
    int64_t bytes;
    if (!os_mul_ok(prod, (int64_t)h->dtype->size, &bytes) || (uint64_t)bytes > SIZE_MAX) {
        shape_text(h, shape, sizeof(shape));
        return OS_FAIL(ctx, OPSCHED_ERR_PARSE, "%s: the .npy shape %s of %s is too large", name,
                       shape, h->dtype->name);
    }
    h->numel = zero ? 0 : prod;
    h->nbytes = zero ? 0 : (size_t)bytes;
    uint64_t data = total - h->data_offset;
    if (data != h->nbytes) {
        shape_text(h, shape, sizeof(shape));
        if (data < h->nbytes)
            return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                           "%s: truncated .npy data: shape %s of %s needs %zu bytes, the file "
                           "has %llu after its header",
                           name, shape, h->dtype->name, h->nbytes, (unsigned long long)data);
        return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                       "%s: %llu bytes after the .npy data (shape %s of %s is %zu bytes)", name,
                       (unsigned long long)(data - h->nbytes), shape, h->dtype->name, h->nbytes);
    }
    return OPSCHED_OK;
}

/* ---- the data ------------------------------------------------------- */

static void swap_bytes(unsigned char *p, size_t size, int64_t n)
{
    for (int64_t i = 0; i < n; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

static void copy_elem(unsigned char *dst, const unsigned char *src, size_t size)
{
    switch (size) {
    case 1:
        *dst = *src;
        break;
    case 2:
        memcpy(dst, src, 2);
        break;
    case 4:
        memcpy(dst, src, 4);
        break;
    default:
        memcpy(dst, src, 8);
        break;
    }
}

/* dst (C order) from src (Fortran order) of the same shape: dst walks
 * its index like an odometer, last dim fastest, and follows the source
 * offset (first dim of stride 1) along. */
static void fortran_to_c(unsigned char *dst, const unsigned char *src, const npy_header *h)
{
    int64_t stride[OPSCHED_NPY_MAX_DIMS], idx[OPSCHED_NPY_MAX_DIMS] = {0};
    size_t size = h->dtype->size;
    int64_t s = 1;
    for (int k = 0; k < h->ndim; k++) {
        stride[k] = s;
        s *= h->dims[k]; /* no overflow: the product is numel */
    }
    int64_t off = 0;
    for (int64_t n = 0; n < h->numel; n++) {
        copy_elem(dst + (size_t)n * size, src + (size_t)off * size, size);
        for (int k = h->ndim - 1; k >= 0; k--) {
            if (++idx[k] < h->dims[k]) {
                off += stride[k];
                break;
            }
            off -= stride[k] * (h->dims[k] - 1);
            idx[k] = 0;
        }
    }
}

/* Turns the raw data (buf, malloc'd, taken over) into *out. */
static opsched_status finish(opsched_ctx *ctx, const char *name, const npy_header *h,
                             unsigned char *buf, opsched_npy_array *out)
{
    if (h->swap) swap_bytes(buf, h->dtype->size, h->numel);
    if (h->dtype->dt == OPSCHED_NPY_BOOL) {
        for (size_t i = 0; i < h->nbytes; i++)
            if (buf[i] > 1) {
                unsigned v = buf[i];
                free(buf);
                return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                               "%s: element %zu of the .npy bool array is %u, not 0 or 1", name, i,
                               v);
            }
    }
    int long_dims = 0;
    for (int k = 0; k < h->ndim; k++)
        long_dims += h->dims[k] > 1;
    if (h->fortran && long_dims > 1 && h->numel > 0) {
        /* With at most one dim above 1 both orders are the same bytes. */
        unsigned char *c = malloc(h->nbytes);
        if (!c) {
            free(buf);
            return OS_NOMEM(ctx);
        }
        fortran_to_c(c, buf, h);
        free(buf);
        buf = c;
    }
    memset(out, 0, sizeof(*out));
    out->dtype = h->dtype->dt;
    out->ndim = h->ndim;
    memcpy(out->dims, h->dims, sizeof(int64_t) * (size_t)h->ndim);
    out->numel = h->numel;
    out->nbytes = h->nbytes;
    out->data = buf;
    out->version = h->version;
    out->swapped = h->swap;
    out->fortran = h->fortran;
    return OPSCHED_OK;
}

opsched_status opsched_npy_read_buffer(opsched_ctx *ctx, const void *data, size_t size,
                                       const char *name, opsched_npy_array *out)
{
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_npy_read_buffer: no out");
    memset(out, 0, sizeof(*out));
    if (!name) name = "npy buffer";
    if (!data && size) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "%s: no data", name);
    const unsigned char *bytes = data ? data : (const unsigned char *)"";
    npy_header h;
    OS_TRY(parse_header(ctx, name, bytes, size, size, &h));
    unsigned char *buf = malloc(h.nbytes ? h.nbytes : 1);
    if (!buf) return OS_NOMEM(ctx);
    if (h.nbytes) memcpy(buf, bytes + h.data_offset, h.nbytes);
    return finish(ctx, name, &h, buf, out);
}

/* Reads up to size bytes; *got < size only at the end of the file. */
static opsched_status read_full(opsched_ctx *ctx, const char *path, int fd, unsigned char *p,
                                size_t size, size_t *got)
{
    *got = 0;
    while (*got < size) {
        size_t chunk = size - *got > ((size_t)1 << 30) ? (size_t)1 << 30 : size - *got;
        ssize_t r = read(fd, p + *got, chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot read the npy file: %s", path,
                           strerror(errno));
        if (r == 0) break;
        *got += (size_t)r;
    }
    return OPSCHED_OK;
}

opsched_status opsched_npy_read_file(opsched_ctx *ctx, const char *path, opsched_npy_array *out)
{
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_npy_read_file: no out");
    memset(out, 0, sizeof(*out));
    opsched_status st = OPSCHED_OK;
    unsigned char *head = NULL, *buf = NULL;
    int fd = -1;
    int64_t fsize = 0;
    OS_TRY(os_file_open_regular(ctx, path, "npy file", &fd, &fsize));
    size_t want = NPY_PREAMBLE_MAX + OPSCHED_NPY_MAX_HEADER, got = 0;
    if ((uint64_t)fsize < want) want = (size_t)fsize;
    head = malloc(want ? want : 1);
    if (!head) {
        st = OS_NOMEM(ctx);
        goto done;
    }
    OS_TRY_GOTO(st, read_full(ctx, path, fd, head, want, &got), done);
    /* A file cut while it is read is judged by what was there. */
    uint64_t total = got < want ? got : (uint64_t)fsize;
    npy_header h;
    OS_TRY_GOTO(st, parse_header(ctx, path, head, got, total, &h), done);
    buf = malloc(h.nbytes ? h.nbytes : 1);
    if (!buf) {
        st = OS_NOMEM(ctx);
        goto done;
    }
    size_t in_head = got - h.data_offset;
    if (in_head > h.nbytes) in_head = h.nbytes; /* cannot be: the lengths agree */
    memcpy(buf, head + h.data_offset, in_head);
    size_t rest = 0;
    OS_TRY_GOTO(st, read_full(ctx, path, fd, buf + in_head, h.nbytes - in_head, &rest), done);
    unsigned char extra;
    size_t more = 0;
    if (in_head + rest == h.nbytes)
        OS_TRY_GOTO(st, read_full(ctx, path, fd, &extra, 1, &more), done);
    if (in_head + rest != h.nbytes || more) {
        st = OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: the npy file changed while it was read", path);
        goto done;
    }
    st = finish(ctx, path, &h, buf, out);
    buf = NULL;
done:
    free(buf);
    free(head);
    if (fd >= 0) close(fd);
    return st;
}

/* ---- writing -------------------------------------------------------- */

/* numpy.save's preamble and header for the array (dtype, dims) into hdr
 * (NPY_WRITE_HEADER_MAX bytes); *len its length, a multiple of NPY_ALIGN. */
static opsched_status encode_header(opsched_ctx *ctx, opsched_npy_dtype dtype, int ndim,
                                    const int64_t *dims, const void *data, char *hdr, size_t *len,
                                    size_t *nbytes)
{
    const dtype_info *d = info_of(dtype);
    if (!d)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "npy: element type %d is none of .npy's",
                       (int)dtype);
    if (ndim < 0 || ndim > OPSCHED_NPY_MAX_DIMS)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "npy: %d dimensions (0 to %d are written)",
                       ndim, OPSCHED_NPY_MAX_DIMS);
    if (ndim > 0 && !dims) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "npy: no dims");
    int64_t numel = 1, bytes = 0;
    for (int i = 0; i < ndim; i++)
        if (dims[i] < 0 || !os_mul_ok(numel, dims[i], &numel))
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "npy: dimension %d (%lld) is negative or the shape too large", i,
                           (long long)dims[i]);
    if (!os_mul_ok(numel, (int64_t)d->size, &bytes) || (uint64_t)bytes > SIZE_MAX)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "npy: the array is too large");
    if (numel > 0 && !data) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "npy: no data");
    if (dtype == OPSCHED_NPY_BOOL) {
        const unsigned char *b = data;
        for (int64_t i = 0; i < numel; i++)
            if (b[i] > 1)
                return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                               "npy: element %lld of the bool array is %u, not 0 or 1",
                               (long long)i, b[i]);
    }
    *nbytes = (size_t)bytes;

    /* The dict as numpy.save writes it: keys sorted, repr() of the values,
     * "', '" after each, then room for dims[0] to grow to 21 digits. */
    char text[NPY_WRITE_HEADER_MAX];
    char order = d->size == 1 ? '|' : host_little() ? '<' : '>';
    size_t n = (size_t)snprintf(text, sizeof(text),
                                "{'descr': '%c%c%u', 'fortran_order': False, 'shape': (", order,
                                d->kind, d->size);
    for (int i = 0; i < ndim; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%lld", i ? ", " : "",
                              (long long)dims[i]);
    n += (size_t)snprintf(text + n, sizeof(text) - n, "%s), }", ndim == 1 ? "," : "");
    if (ndim > 0) {
        char first[24];
        int digits = snprintf(first, sizeof(first), "%lld", (long long)dims[0]);
        for (int i = digits; i < NPY_GROWTH_DIGITS; i++)
            text[n++] = ' ';
    }
    /* Version 1.0 when the header's length fits its 2 bytes, else 2.0
     * (unreachable with OPSCHED_NPY_MAX_DIMS, kept as NumPy decides). */
    size_t hlen = n + 1, pre = NPY_MAGIC_LEN + 2 + 2;
    size_t pad = NPY_ALIGN - (pre + hlen) % NPY_ALIGN;
    int version = 1;
    if (hlen + pad > 0xffff) {
        version = 2;
        pre = NPY_MAGIC_LEN + 2 + 4;
        pad = NPY_ALIGN - (pre + hlen) % NPY_ALIGN;
    }
    size_t field = hlen + pad;
    memcpy(hdr, NPY_MAGIC, NPY_MAGIC_LEN);
    hdr[6] = (char)version;
    hdr[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        hdr[8 + i] = (char)((field >> (8 * i)) & 0xff);
    memcpy(hdr + pre, text, n);
    memset(hdr + pre + n, ' ', pad);
    hdr[pre + n + pad] = '\n';
    *len = pre + field;
    return OPSCHED_OK;
}

opsched_status opsched_npy_write_buffer(opsched_ctx *ctx, opsched_npy_dtype dtype, int ndim,
                                        const int64_t *dims, const void *data, void **out,
                                        size_t *size)
{
    if (!out || !size)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_npy_write_buffer: no out");
    *out = NULL;
    *size = 0;
    char hdr[NPY_WRITE_HEADER_MAX + NPY_ALIGN + NPY_PREAMBLE_MAX];
    size_t hlen, nbytes;
    OS_TRY(encode_header(ctx, dtype, ndim, dims, data, hdr, &hlen, &nbytes));
    if (nbytes > SIZE_MAX - hlen) return OS_NOMEM(ctx);
    unsigned char *buf = malloc(hlen + nbytes);
    if (!buf) return OS_NOMEM(ctx);
    memcpy(buf, hdr, hlen);
    if (nbytes) memcpy(buf + hlen, data, nbytes);
    *out = buf;
    *size = hlen + nbytes;
    return OPSCHED_OK;
}

opsched_status opsched_npy_write_file(opsched_ctx *ctx, const char *path, opsched_npy_dtype dtype,
                                      int ndim, const int64_t *dims, const void *data)
{
    return opsched_npy_write_file_flags(ctx, path, 0, dtype, ndim, dims, data);
}

opsched_status opsched_npy_write_file_flags(opsched_ctx *ctx, const char *path, int flags,
                                            opsched_npy_dtype dtype, int ndim, const int64_t *dims,
                                            const void *data)
{
    char hdr[NPY_WRITE_HEADER_MAX + NPY_ALIGN + NPY_PREAMBLE_MAX];
    size_t hlen, nbytes;
    if (!path || !*path) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "no npy file path given");
    OS_TRY(encode_header(ctx, dtype, ndim, dims, data, hdr, &hlen, &nbytes));
    opsched_out o;
    OS_TRY(opsched_out_open(ctx, path, "npy file", flags, &o));
    if (fwrite(hdr, 1, hlen, o.f) != hlen || (nbytes && fwrite(data, 1, nbytes, o.f) != nbytes)) {
        opsched_out_abort(&o);
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: writing the npy file failed: %s", path,
                       strerror(errno));
    }
    return opsched_out_commit(ctx, &o);
}
