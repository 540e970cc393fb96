/*
 * test_npy.c - NumPy .npy files (opsched/npy.h): round trips of every
 * dtype at ranks 0 to 6, numpy.save's exact header bytes, big-endian and
 * Fortran-ordered files, the three format versions, every malformed or
 * unsupported header refused with the file named, files opened only when
 * regular, and writes that are whole or nothing.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "opsched/opsched.h"

static const opsched_npy_dtype all_dtypes[] = {
    OPSCHED_NPY_BOOL,   OPSCHED_NPY_INT8,    OPSCHED_NPY_INT16,   OPSCHED_NPY_INT32,
    OPSCHED_NPY_INT64,  OPSCHED_NPY_UINT8,   OPSCHED_NPY_UINT16,  OPSCHED_NPY_UINT32,
    OPSCHED_NPY_UINT64, OPSCHED_NPY_FLOAT16, OPSCHED_NPY_FLOAT32, OPSCHED_NPY_FLOAT64,
};
#define N_DTYPES (sizeof(all_dtypes) / sizeof(all_dtypes[0]))

typedef struct fixture {
    opsched_ctx *ctx;
    char dir[64];
    char path[160];
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    if (!fx || opsched_ctx_create(&fx->ctx) != OPSCHED_OK) return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/opsched_npy_XXXXXX");
    if (!mkdtemp(fx->dir)) return -1;
    *state = fx;
    return 0;
}

/* Removes everything in the test folder (files and empty folders). */
static int teardown(void **state)
{
    fixture *fx = *state;
    DIR *d = opendir(fx->dir);
    struct dirent *e;
    char p[400];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof(p), "%s/%s", fx->dir, e->d_name);
        if (remove(p) != 0) rmdir(p);
    }
    if (d) closedir(d);
    rmdir(fx->dir);
    opsched_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

static const char *at_dir(fixture *fx, const char *name)
{
    snprintf(fx->path, sizeof(fx->path), "%s/%s", fx->dir, name);
    return fx->path;
}

static int host_little(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Bytes of a test pattern: a fixed pseudo-random stream (bool: 0 or 1). */
static void *pattern(opsched_npy_dtype dt, int64_t numel, uint64_t seed)
{
    size_t n = (size_t)numel * opsched_npy_dtype_size(dt);
    unsigned char *p = malloc(n ? n : 1);
    assert_non_null(p);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)(dt == OPSCHED_NPY_BOOL ? x & 1 : x >> 24);
    }
    return p;
}

/* A .npy file of format version major with the header text dict (no
 * padding: NumPy does not need it either) and n data bytes. */
static unsigned char *make_npy(int major, int minor, const char *dict, const void *data, size_t n,
                               size_t *len)
{
    size_t hl = strlen(dict), pre = major == 1 ? 10 : 12;
    unsigned char *b = malloc(pre + hl + n + 1);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = (unsigned char)minor;
    for (size_t i = 0; i < pre - 8; i++)
        b[8 + i] = (unsigned char)(hl >> (8 * i));
    memcpy(b + pre, dict, hl);
    if (n) memcpy(b + pre + hl, data, n);
    *len = pre + hl + n;
    return b;
}

static void assert_same(const opsched_npy_array *a, opsched_npy_dtype dt, int ndim,
                        const int64_t *dims, const void *data)
{
    assert_int_equal(a->dtype, dt);
    assert_int_equal(a->ndim, ndim);
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        assert_int_equal(a->dims[i], dims[i]);
        numel *= dims[i];
    }
    assert_int_equal(a->numel, numel);
    assert_int_equal(a->nbytes, (size_t)numel * opsched_npy_dtype_size(dt));
    assert_non_null(a->data);
    if (a->nbytes) assert_memory_equal(a->data, data, a->nbytes);
}

static void test_roundtrip(void **state)
{
    fixture *fx = *state;
    static const int64_t dims[] = {2, 3, 1, 4, 2, 3};
    static const int64_t empty[] = {2, 0, 3};
    for (size_t t = 0; t < N_DTYPES; t++) {
        opsched_npy_dtype dt = all_dtypes[t];
        for (int r = 0; r <= 7; r++) {
            /* Ranks 0 to 6, then an empty array. */
            const int64_t *d = r < 7 ? dims : empty;
            int ndim = r < 7 ? r : 3;
            int64_t numel = 1;
            for (int i = 0; i < ndim; i++)
                numel *= d[i];
            void *data = pattern(dt, numel, (uint64_t)(t * 10 + (size_t)r));
            void *file = NULL;
            size_t size = 0;
            assert_int_equal(opsched_npy_write_buffer(fx->ctx, dt, ndim, d, data, &file, &size),
                             OPSCHED_OK);
            size_t nbytes = (size_t)numel * opsched_npy_dtype_size(dt);
            size_t off = size - nbytes;
            assert_int_equal(off % 64, 0);
            assert_int_equal(((unsigned char *)file)[off - 1], '\n');
            assert_int_equal(((unsigned char *)file)[6], 1); /* version 1.0 */
            opsched_npy_array a;
            assert_int_equal(opsched_npy_read_buffer(fx->ctx, file, size, "rt", &a), OPSCHED_OK);
            assert_same(&a, dt, ndim, d, data);
            assert_int_equal(a.version, 1);
            assert_int_equal(a.swapped, 0);
            assert_int_equal(a.fortran, 0);
            opsched_npy_array_clear(&a);
            assert_null(a.data);
            if (r == 3 || r == 0 || r == 7) {
                /* Through a file: the same bytes as the buffer. */
                const char *p = at_dir(fx, "rt.npy");
                assert_int_equal(opsched_npy_write_file(fx->ctx, p, dt, ndim, d, data), OPSCHED_OK);
                char *back = NULL;
                FILE *f = fopen(p, "rb");
                assert_non_null(f);
                back = malloc(size + 1);
                assert_int_equal(fread(back, 1, size + 1, f), size);
                fclose(f);
                assert_memory_equal(back, file, size);
                free(back);
                assert_int_equal(opsched_npy_read_file(fx->ctx, p, &a), OPSCHED_OK);
                assert_same(&a, dt, ndim, d, data);
                opsched_npy_array_clear(&a);
            }
            free(file);
            free(data);
        }
    }
}

/* What numpy.save (1.24) writes for these arrays, byte for byte. */
static void test_numpy_header_bytes(void **state)
{
    fixture *fx = *state;
    if (!host_little()) skip();
    static const struct {
        opsched_npy_dtype dt;
        int ndim;
        int64_t dims[2];
        const char *head;
    } cases[] = {
        {OPSCHED_NPY_FLOAT32,
         2,
         {2, 3},
         "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
        {OPSCHED_NPY_INT64,
         0,
         {0, 0},
         "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (), }"},
        {OPSCHED_NPY_BOOL,
         1,
         {5, 0},
         "\x93NUMPY\x01\x00v\x00{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unsigned char zeros[40] = {0};
        void *file;
        size_t size;
        assert_int_equal(opsched_npy_write_buffer(fx->ctx, cases[i].dt, cases[i].ndim,
                                                  cases[i].dims, zeros, &file, &size),
                         OPSCHED_OK);
        const char *h = cases[i].head;
        size_t hn = 10 + strlen(h + 10); /* the preamble holds NULs */
        assert_memory_equal(file, h, hn);
        for (size_t k = hn; k < 127; k++)
            assert_int_equal(((char *)file)[k], ' ');
        assert_int_equal(((char *)file)[127], '\n');
        free(file);
    }
}

static void put_be(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

static void test_big_endian(void **state)
{
    fixture *fx = *state;
    opsched_npy_array a;
    unsigned char raw[64];
    size_t len;
    unsigned char *f;

    const int32_t i4[] = {1, 2, 3, -4};
    for (int i = 0; i < 4; i++)
        put_be(raw + 4 * i, (uint32_t)i4[i], 4);
    f = make_npy(1, 0, "{'descr': '>i4', 'fortran_order': False, 'shape': (2, 2), }\n", raw, 16,
                 &len);
    assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "be", &a), OPSCHED_OK);
    assert_same(&a, OPSCHED_NPY_INT32, 2, (const int64_t[]){2, 2}, i4);
    assert_int_equal(a.swapped, host_little());
    opsched_npy_array_clear(&a);
    free(f);

    const double f8[] = {1.5, -2.25, INFINITY};
    for (int i = 0; i < 3; i++) {
        uint64_t u;
        memcpy(&u, &f8[i], 8);
        put_be(raw + 8 * i, u, 8);
    }
    f = make_npy(1, 0, "{'descr': '>f8', 'fortran_order': False, 'shape': (3,)}", raw, 24, &len);
    assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "be", &a), OPSCHED_OK);
    assert_same(&a, OPSCHED_NPY_FLOAT64, 1, (const int64_t[]){3}, f8);
    opsched_npy_array_clear(&a);
    free(f);

    /* float16 1.0 and -2.0; uint16 0x1234; uint64 */
    const uint16_t f2[] = {0x3c00, 0xc000};
    put_be(raw, f2[0], 2);
    put_be(raw + 2, f2[1], 2);
    f = make_npy(1, 0, "{'descr':'>f2','fortran_order':False,'shape':(2,)}", raw, 4, &len);
    assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "be", &a), OPSCHED_OK);
    assert_same(&a, OPSCHED_NPY_FLOAT16, 1, (const int64_t[]){2}, f2);
    opsched_npy_array_clear(&a);
    free(f);

    const uint64_t u8[] = {0x0102030405060708ull};
    put_be(raw, u8[0], 8);
    f = make_npy(1, 0, "{\"descr\": \">u8\", \"fortran_order\": False, \"shape\": ()}", raw, 8,
                 &len);
    assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "be", &a), OPSCHED_OK);
    assert_same(&a, OPSCHED_NPY_UINT64, 0, NULL, u8);
    opsched_npy_array_clear(&a);
    free(f);

    /* Explicit little-endian, native '=' and none, and '|' on one byte. */
    const int16_t i2[] = {-2, 300};
    raw[0] = 0xfe, raw[1] = 0xff, raw[2] = 0x2c, raw[3] = 0x01;
    f = make_npy(1, 0, "{'descr': '<i2', 'fortran_order': False, 'shape': (2,)}", raw, 4, &len);
    assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "le", &a), OPSCHED_OK);
    assert_same(&a, OPSCHED_NPY_INT16, 1, (const int64_t[]){2}, i2);
    opsched_npy_array_clear(&a);
    free(f);
    const uint8_t b1[] = {1, 0, 1};
    f = make_npy(1, 0, "{'descr': '?', 'fortran_order': False, 'shape': (3,)}", b1, 3, &len);
    assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "b", &a), OPSCHED_OK);
    assert_same(&a, OPSCHED_NPY_BOOL, 1, (const int64_t[]){3}, b1);
    opsched_npy_array_clear(&a);
    free(f);
    f = make_npy(1, 0, "{'descr': '>i1', 'fortran_order': False, 'shape': (3,)}", b1, 3, &len);
    assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "b", &a), OPSCHED_OK);
    assert_same(&a, OPSCHED_NPY_INT8, 1, (const int64_t[]){3}, b1);
    assert_int_equal(a.swapped, 0);
    opsched_npy_array_clear(&a);
    free(f);
}

static void test_fortran(void **state)
{
    fixture *fx = *state;
    opsched_npy_array a;
    size_t len;
    /* (2, 3, 4) int32, element (i, j, k) = 100i + 10j + k at i + 2j + 6k. */
    int32_t fdata[24], cdata[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                fdata[i + 2 * j + 6 * k] = 100 * i + 10 * j + k;
                cdata[(i * 3 + j) * 4 + k] = 100 * i + 10 * j + k;
            }
    unsigned char *f = make_npy(
        1, 0, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }", fdata, 96, &len);
    if (host_little()) {
        assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "f", &a), OPSCHED_OK);
        assert_same(&a, OPSCHED_NPY_INT32, 3, (const int64_t[]){2, 3, 4}, cdata);
        assert_int_equal(a.fortran, 1);
        opsched_npy_array_clear(&a);
    }
    free(f);

    /* Big-endian and Fortran: (3, 2) uint16, (i, j) = 16i + j at i + 3j. */
    unsigned char raw[12];
    uint16_t c16[6];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) {
            put_be(raw + 2 * (i + 3 * j), (uint16_t)(16 * i + j), 2);
            c16[i * 2 + j] = (uint16_t)(16 * i + j);
        }
    f = make_npy(2, 0, "{'descr': '>u2', 'fortran_order': True, 'shape': (3, 2)}", raw, 12, &len);
    assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "f", &a), OPSCHED_OK);
    assert_same(&a, OPSCHED_NPY_UINT16, 2, (const int64_t[]){3, 2}, c16);
    assert_int_equal(a.version, 2);
    opsched_npy_array_clear(&a);
    free(f);

    /* One long dim: both orders are the same bytes; an empty array. */
    const uint8_t u1[] = {1, 2, 3, 4, 5};
    f = make_npy(1, 0, "{'descr': '|u1', 'fortran_order': True, 'shape': (1, 5, 1)}", u1, 5, &len);
    assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "f", &a), OPSCHED_OK);
    assert_same(&a, OPSCHED_NPY_UINT8, 3, (const int64_t[]){1, 5, 1}, u1);
    opsched_npy_array_clear(&a);
    free(f);
    f = make_npy(1, 0, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 0, 3)}", NULL, 0,
                 &len);
    assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "f", &a), OPSCHED_OK);
    assert_same(&a, OPSCHED_NPY_FLOAT64, 3, (const int64_t[]){2, 0, 3}, NULL);
    opsched_npy_array_clear(&a);
    free(f);
}

static void test_versions(void **state)
{
    fixture *fx = *state;
    const char *dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }      \n";
    const uint8_t data[] = {7, 9};
    opsched_npy_array a;
    size_t len;
    for (int major = 1; major <= 3; major++) {
        unsigned char *f = make_npy(major, 0, dict, data, 2, &len);
        assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "v", &a), OPSCHED_OK);
        assert_same(&a, OPSCHED_NPY_UINT8, 1, (const int64_t[]){2}, data);
        assert_int_equal(a.version, major);
        opsched_npy_array_clear(&a);
        free(f);
    }
    /* Python 2's "2L" in versions 1.0 and 2.0 only, as NumPy reads it. */
    const char *py2 = "{'descr': '|u1', 'fortran_order': False, 'shape': (2L,), }";
    unsigned char *f = make_npy(1, 0, py2, data, 2, &len);
    assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "v", &a), OPSCHED_OK);
    opsched_npy_array_clear(&a);
    free(f);
    f = make_npy(3, 0, py2, data, 2, &len);
    assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "v", &a), OPSCHED_ERR_PARSE);
    free(f);
    static const int bad[][2] = {{4, 0}, {1, 1}, {0, 0}, {2, 1}, {255, 255}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        f = make_npy(bad[i][0] == 1 ? 1 : 2, 0, dict, data, 2, &len);
        f[6] = (unsigned char)bad[i][0];
        f[7] = (unsigned char)bad[i][1];
        assert_int_equal(opsched_npy_read_buffer(fx->ctx, f, len, "ver.npy", &a),
                         OPSCHED_ERR_UNSUPPORTED);
        assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "ver.npy"));
        assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "version"));
        assert_null(a.data);
        free(f);
    }
}

/* A header of hlen bytes in version 2.0: the dict, then spaces. */
static void test_header_limit(void **state)
{
    fixture *fx = *state;
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }";
    opsched_npy_array a;
    size_t sizes[] = {OPSCHED_NPY_MAX_HEADER, OPSCHED_NPY_MAX_HEADER + 1};
    for (int i = 0; i < 2; i++) {
        char *text = malloc(sizes[i] + 1);
        assert_non_null(text);
        memset(text, ' ', sizes[i]);
        memcpy(text, dict, strlen(dict));
        text[sizes[i] - 1] = '\n';
        text[sizes[i]] = '\0';
        size_t len;
        unsigned char *f = make_npy(2, 0, text, NULL, 0, &len);
        opsched_status st = opsched_npy_read_buffer(fx->ctx, f, len, "big", &a);
        assert_int_equal(st, i == 0 ? OPSCHED_OK : OPSCHED_ERR_UNSUPPORTED);
        if (i == 1) assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "header is 65537"));
        opsched_npy_array_clear(&a);
        /* The same through a file. */
        FILE *out = fopen(at_dir(fx, "big.npy"), "wb");
        assert_non_null(out);
        assert_int_equal(fwrite(f, 1, len, out), len);
        fclose(out);
        assert_int_equal(opsched_npy_read_file(fx->ctx, fx->path, &a), st);
        opsched_npy_array_clear(&a);
        free(f);
        free(text);
    }
}

typedef struct bad_case {
    const char *dict;
    size_t data; /* bytes of data after the header */
    opsched_status status;
    const char *says;
} bad_case;

#define D(descr, fortran, shape)                                                                   \
    "{'descr': '" descr "', 'fortran_order': " fortran ", 'shape': " shape ", }"

static void test_malformed_header(void **state)
{
    fixture *fx = *state;
    static const bad_case cases[] = {
        {"", 0, OPSCHED_ERR_PARSE, "starting with '{'"},
        {"   \n", 0, OPSCHED_ERR_PARSE, "starting with '{'"},
        {"[1, 2]", 0, OPSCHED_ERR_PARSE, "a Python dict"},
        {"{}", 0, OPSCHED_ERR_PARSE, "no 'descr' key"},
        {"{'descr': '<f4', 'fortran_order': False}", 0, OPSCHED_ERR_PARSE, "no 'shape' key"},
        {"{'descr': '<f4', 'shape': ()}", 4, OPSCHED_ERR_PARSE, "no 'fortran_order' key"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (), 'extra': 1}", 4, OPSCHED_ERR_PARSE,
         "unknown key 'extra'"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", 4,
         OPSCHED_ERR_PARSE, "'descr' appears twice"},
        {D("<f4", "0", "()"), 4, OPSCHED_ERR_PARSE, "True or False"},
        {D("<f4", "Falsey", "()"), 4, OPSCHED_ERR_PARSE, "True or False"},
        {D("<f4", "'False'", "()"), 4, OPSCHED_ERR_PARSE, "True or False"},
        {D("<f4", "False", "(3)"), 12, OPSCHED_ERR_PARSE, "not a tuple"},
        {D("<f4", "False", "[3]"), 12, OPSCHED_ERR_PARSE, "is a list"},
        {D("<f4", "False", "3"), 12, OPSCHED_ERR_PARSE, "is a tuple, not"},
        {D("<f4", "False", "(2, -3)"), 0, OPSCHED_ERR_PARSE,
         "dimension 1 of the .npy shape is "
         "negative"},
        {D("<f4", "False", "(99999999999999999999,)"), 0, OPSCHED_ERR_PARSE, "larger than 64 bits"},
        {D("<f4", "False", "(9223372036854775808,)"), 0, OPSCHED_ERR_PARSE, "larger than 64 bits"},
        {D("<f4", "False", "(4294967296, 4294967296)"), 0, OPSCHED_ERR_PARSE,
         "more elements than 64 bits"},
        {D("<f4", "False", "(0, 4294967296, 4294967296)"), 0, OPSCHED_ERR_PARSE,
         "more elements than 64 bits"},
        {D("<f8", "False", "(4611686018427387904,)"), 0, OPSCHED_ERR_PARSE, "too large"},
        {D("<f4", "False", "(2.5,)"), 0, OPSCHED_ERR_PARSE, "not a decimal integer"},
        {D("<f4", "False", "(0x10,)"), 0, OPSCHED_ERR_PARSE, "not a decimal integer"},
        {D("<f4", "False", "(03,)"), 12, OPSCHED_ERR_PARSE, "leading zero"},
        {D("<f4", "False", "(a,)"), 0, OPSCHED_ERR_PARSE, "is not an integer"},
        {D("<f4", "False", "(2 3)"), 0, OPSCHED_ERR_PARSE, "expected ',' or ')'"},
        {D("<f4", "False",
           "(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
           "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)"),
         4, OPSCHED_ERR_UNSUPPORTED, "more than 32 dimensions"},
        {D("<c8", "False", "(1,)"), 8, OPSCHED_ERR_UNSUPPORTED, "'<c8' is complex"},
        {D("|O", "False", "(1,)"), 8, OPSCHED_ERR_UNSUPPORTED, "'|O' is an object array"},
        {D("<U3", "False", "(1,)"), 12, OPSCHED_ERR_UNSUPPORTED, "string dtype"},
        {D("<M8[s]", "False", "(1,)"), 8, OPSCHED_ERR_UNSUPPORTED, "datetime"},
        {D("|V4", "False", "(1,)"), 4, OPSCHED_ERR_UNSUPPORTED, "void"},
        {D("<f16", "False", "(1,)"), 16, OPSCHED_ERR_UNSUPPORTED, "float of a size"},
        {D("bfloat16", "False", "(1,)"), 2, OPSCHED_ERR_UNSUPPORTED, "'bfloat16' is not a dtype"},
        {D("<i4\\x01", "False", "(1,)"), 2, OPSCHED_ERR_PARSE, "escape sequences"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", 4,
         OPSCHED_ERR_UNSUPPORTED, "structured"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': ()}", 4, OPSCHED_ERR_UNSUPPORTED,
         "dtype '<f4, ' is a float of a size"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': ()): 1}", 4, OPSCHED_ERR_PARSE,
         "expected ',' or '}' after the value of 'shape'"},
        {"{'descr': '<f4", 0, OPSCHED_ERR_PARSE, "not closed"},
        {"{'descr': '<f4\n', 'fortran_order': False, 'shape': ()}", 4, OPSCHED_ERR_PARSE,
         "not closed"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (), } x", 4, OPSCHED_ERR_PARSE,
         "\"x\" after the dict"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (), }}", 4, OPSCHED_ERR_PARSE,
         "after the dict"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': ()}", 4, OPSCHED_ERR_PARSE,
         "expected ',' or '}' after the value of 'descr'"},
        {"{descr: '<f4'}", 0, OPSCHED_ERR_PARSE, "expected a string"},
        {"{'descr' '<f4'}", 0, OPSCHED_ERR_PARSE, "expected ':'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': ()", 4, OPSCHED_ERR_PARSE,
         "expected ',' or '}'"},
        {"{'descr': '<f4',, 'fortran_order': False, 'shape': ()}", 4, OPSCHED_ERR_PARSE,
         "expected a string"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': ()}\0", 4, OPSCHED_ERR_PARSE,
         "\"\\x00\" after the dict"},
        /* the data against the shape */
        {D("<f4", "False", "(2, 3)"), 20, OPSCHED_ERR_PARSE,
         "truncated .npy data: shape (2, 3) of float32 needs 24 bytes, the file has 20"},
        {D("<f4", "False", "(2, 3)"), 28, OPSCHED_ERR_PARSE,
         "4 bytes after the .npy data (shape (2, 3) of float32 is 24 bytes)"},
        {D("<i8", "False", "()"), 0, OPSCHED_ERR_PARSE, "shape () of int64 needs 8 bytes"},
        {D("<i8", "False", "(5,)"), 0, OPSCHED_ERR_PARSE, "shape (5,) of int64 needs 40"},
        {D("<i8", "False", "(0,)"), 1, OPSCHED_ERR_PARSE, "1 bytes after the .npy data"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unsigned char data[32] = {0};
        size_t len;
        /* The NUL case's dict has a NUL of its own, one more byte. */
        const bad_case *c = &cases[i];
        unsigned char *f = make_npy(1, 0, c->dict, data, c->data, &len);
        if (strstr(c->says, "\\x00")) {
            free(f);
            size_t hl = strlen(c->dict) + 1;
            f = malloc(10 + hl + c->data);
            assert_non_null(f);
            memcpy(f, "\x93NUMPY\x01\x00", 8);
            f[8] = (unsigned char)hl;
            f[9] = 0;
            memcpy(f + 10, c->dict, hl);
            memset(f + 10 + hl, 0, c->data);
            len = 10 + hl + c->data;
        }
        opsched_npy_array a;
        opsched_status st = opsched_npy_read_buffer(fx->ctx, f, len, "case.npy", &a);
        const char *msg = opsched_ctx_last_error(fx->ctx);
        if (st != c->status || !strstr(msg, c->says) || strncmp(msg, "case.npy: ", 10) != 0)
            fail_msg("case %zu (%s): status %d, message \"%s\"; expected %d and \"%s\"", i, c->dict,
                     st, msg, c->status, c->says);
        assert_null(a.data);
        assert_int_equal(a.ndim, 0);
        free(f);
        opsched_ctx_clear_error(fx->ctx);
    }
}

/* The preamble, and data that is not what its dtype allows. */
static void test_malformed_preamble(void **state)
{
    fixture *fx = *state;
    opsched_npy_array a;
    const char *msg;
#define READ(bytes, n) opsched_npy_read_buffer(fx->ctx, (bytes), (n), "p.npy", &a)
    assert_int_equal(READ("", 0), OPSCHED_ERR_PARSE);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "p.npy: not a NumPy .npy file"));
    assert_int_equal(opsched_npy_read_buffer(fx->ctx, NULL, 0, NULL, &a), OPSCHED_ERR_PARSE);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "npy buffer: not a NumPy"));
    assert_int_equal(READ("\x93NUMPX\x01\x00\x00\x00", 10), OPSCHED_ERR_PARSE);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "does not start with \\x93NUMPY"));
    assert_int_equal(READ("PK\x03\x04", 4), OPSCHED_ERR_PARSE); /* an .npz */
    assert_int_equal(READ("\x93NUM", 4), OPSCHED_ERR_PARSE);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "truncated .npy file: 4 bytes"));
    assert_int_equal(READ("\x93NUMPY\x01", 7), OPSCHED_ERR_PARSE);
    assert_int_equal(READ("\x93NUMPY\x01\x00\x05", 9), OPSCHED_ERR_PARSE);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "shorter than its preamble"));
    assert_int_equal(READ("\x93NUMPY\x02\x00\x05\x00\x00", 11), OPSCHED_ERR_PARSE);
    assert_int_equal(READ("\x93NUMPY\x01\x00\x05\x00{}", 12), OPSCHED_ERR_PARSE);
    msg = opsched_ctx_last_error(fx->ctx);
    assert_non_null(strstr(msg, "header length 5 goes beyond the end of the file (2 bytes"));
    assert_int_equal(READ("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14), OPSCHED_ERR_PARSE);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "header length 4294967295"));

    /* A bool byte other than 0 or 1. */
    size_t len;
    const uint8_t b[] = {1, 0, 2};
    unsigned char *f =
        make_npy(1, 0, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}", b, 3, &len);
    assert_int_equal(READ(f, len), OPSCHED_ERR_PARSE);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "element 2 of the .npy bool array "
                                                            "is 2"));
    assert_null(a.data);
    free(f);
#undef READ
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void test_read_file_refused(void **state)
{
    fixture *fx = *state;
    opsched_npy_array a;
    const char *msg;
    assert_int_equal(mkdir(at_dir(fx, "sub"), 0700), 0);
    assert_int_equal(opsched_npy_read_file(fx->ctx, fx->path, &a), OPSCHED_ERR_IO);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "is a directory, not a regular file"));
    assert_int_equal(mkfifo(at_dir(fx, "fifo"), 0600), 0);
    assert_int_equal(opsched_npy_read_file(fx->ctx, fx->path, &a), OPSCHED_ERR_IO);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "a FIFO"));
    assert_int_equal(opsched_npy_read_file(fx->ctx, at_dir(fx, "missing.npy"), &a), OPSCHED_ERR_IO);
    msg = opsched_ctx_last_error(fx->ctx);
    assert_non_null(strstr(msg, "missing.npy"));
    assert_int_equal(opsched_npy_read_file(fx->ctx, "", &a), OPSCHED_ERR_INVALID_ARG);

    /* Malformed files name the path. */
    write_bytes(at_dir(fx, "text.npy"), "hello\n", 6);
    assert_int_equal(opsched_npy_read_file(fx->ctx, fx->path, &a), OPSCHED_ERR_PARSE);
    msg = opsched_ctx_last_error(fx->ctx);
    assert_non_null(strstr(msg, fx->path));
    assert_non_null(strstr(msg, "not a NumPy .npy file"));
    write_bytes(at_dir(fx, "empty.npy"), "", 0);
    assert_int_equal(opsched_npy_read_file(fx->ctx, fx->path, &a), OPSCHED_ERR_PARSE);
    size_t len;
    const float v[6] = {1, 2, 3, 4, 5, 6};
    unsigned char *f = make_npy(1, 0, D("<f4", "False", "(2, 3)"), v, 24, &len);
    write_bytes(at_dir(fx, "short.npy"), f, len - 1);
    assert_int_equal(opsched_npy_read_file(fx->ctx, fx->path, &a), OPSCHED_ERR_PARSE);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "needs 24 bytes, the file has 23"));
    write_bytes(at_dir(fx, "long.npy"), f, len);
    FILE *app = fopen(fx->path, "ab");
    fputs("xx", app);
    fclose(app);
    assert_int_equal(opsched_npy_read_file(fx->ctx, fx->path, &a), OPSCHED_ERR_PARSE);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "2 bytes after the .npy data"));
    write_bytes(at_dir(fx, "ok.npy"), f, len);
    if (host_little()) {
        assert_int_equal(opsched_npy_read_file(fx->ctx, fx->path, &a), OPSCHED_OK);
        assert_same(&a, OPSCHED_NPY_FLOAT32, 2, (const int64_t[]){2, 3}, v);
        opsched_npy_array_clear(&a);
    }
    free(f);
}

/* No "*.tmp.*" file is left in the folder. */
static void assert_no_temporary(fixture *fx)
{
    DIR *d = opendir(fx->dir);
    struct dirent *e;
    assert_non_null(d);
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) fail_msg("temporary file left: %s", e->d_name);
    closedir(d);
}

static void test_write_file(void **state)
{
    fixture *fx = *state;
    opsched_npy_array a;
    const int64_t dims[] = {3};
    const int32_t one[] = {1, 2, 3}, two[] = {4, 5, 6};
    const char *p = at_dir(fx, "out.npy");
    char path[200];
    snprintf(path, sizeof(path), "%s", p);
    assert_int_equal(opsched_npy_write_file(fx->ctx, path, OPSCHED_NPY_INT32, 1, dims, one),
                     OPSCHED_OK);
    assert_int_equal(opsched_npy_write_file(fx->ctx, path, OPSCHED_NPY_INT32, 1, dims, two),
                     OPSCHED_OK);
    assert_int_equal(opsched_npy_read_file(fx->ctx, path, &a), OPSCHED_OK);
    assert_same(&a, OPSCHED_NPY_INT32, 1, dims, two);
    opsched_npy_array_clear(&a);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    mode_t mask = umask(022);
    umask(mask);
    assert_int_equal(sb.st_mode & 0777, 0666 & ~mask);

    /* A folder that does not exist, a folder in the way: nothing written. */
    assert_int_equal(
        opsched_npy_write_file(fx->ctx, at_dir(fx, "nodir/x.npy"), OPSCHED_NPY_INT32, 1, dims, one),
        OPSCHED_ERR_IO);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "nodir/x.npy: cannot write"));
    assert_int_equal(mkdir(at_dir(fx, "dir.npy"), 0700), 0);
    assert_int_equal(opsched_npy_write_file(fx->ctx, fx->path, OPSCHED_NPY_INT32, 1, dims, one),
                     OPSCHED_ERR_IO);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "is a directory"));
    assert_no_temporary(fx);

    /* Arguments. */
    const int64_t neg[] = {-1}, big[] = {INT64_MAX, 2};
    const uint8_t bools[] = {0, 1, 2};
    const int64_t three[] = {3};
    assert_int_equal(opsched_npy_write_file(fx->ctx, path, (opsched_npy_dtype)99, 1, dims, one),
                     OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_npy_write_file(fx->ctx, path, OPSCHED_NPY_INT32, 33, dims, one),
                     OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_npy_write_file(fx->ctx, path, OPSCHED_NPY_INT32, 1, neg, one),
                     OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_npy_write_file(fx->ctx, path, OPSCHED_NPY_INT32, 2, big, one),
                     OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_npy_write_file(fx->ctx, path, OPSCHED_NPY_INT32, 1, dims, NULL),
                     OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_npy_write_file(fx->ctx, path, OPSCHED_NPY_BOOL, 1, three, bools),
                     OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "element 2 of the bool array is 2"));
    assert_int_equal(opsched_npy_write_file(fx->ctx, NULL, OPSCHED_NPY_INT32, 1, dims, one),
                     OPSCHED_ERR_INVALID_ARG);
    /* Still the second file. */
    assert_int_equal(opsched_npy_read_file(fx->ctx, path, &a), OPSCHED_OK);
    assert_same(&a, OPSCHED_NPY_INT32, 1, dims, two);
    opsched_npy_array_clear(&a);
    /* An empty array needs no data. */
    const int64_t zero[] = {0, 4};
    assert_int_equal(opsched_npy_write_file(fx->ctx, path, OPSCHED_NPY_FLOAT64, 2, zero, NULL),
                     OPSCHED_OK);
    assert_int_equal(opsched_npy_read_file(fx->ctx, path, &a), OPSCHED_OK);
    assert_same(&a, OPSCHED_NPY_FLOAT64, 2, zero, NULL);
    opsched_npy_array_clear(&a);
    assert_no_temporary(fx);
}

static void test_dtypes(void **state)
{
    (void)state;
    opsched_dtype g;
    opsched_npy_dtype n;
    assert_int_equal(opsched_npy_dtype_to_dtype(OPSCHED_NPY_FLOAT32, &g), OPSCHED_OK);
    assert_int_equal(g, OPSCHED_F32);
    assert_int_equal(opsched_npy_dtype_to_dtype(OPSCHED_NPY_FLOAT16, &g), OPSCHED_OK);
    assert_int_equal(g, OPSCHED_F16);
    assert_int_equal(opsched_npy_dtype_to_dtype(OPSCHED_NPY_INT64, &g), OPSCHED_OK);
    assert_int_equal(g, OPSCHED_INT64);
    assert_int_equal(opsched_npy_dtype_to_dtype(OPSCHED_NPY_FLOAT64, &g), OPSCHED_ERR_UNSUPPORTED);
    assert_int_equal(opsched_npy_dtype_to_dtype(OPSCHED_NPY_UINT16, &g), OPSCHED_ERR_UNSUPPORTED);
    assert_int_equal(opsched_npy_dtype_to_dtype(OPSCHED_NPY_BOOL, &g), OPSCHED_OK);
    assert_int_equal(g, OPSCHED_BOOL);
    assert_int_equal(opsched_npy_dtype_to_dtype(OPSCHED_NPY_UINT8, &g), OPSCHED_OK);
    assert_int_equal(g, OPSCHED_UINT8);
    for (int d = 0; d < OPSCHED_DTYPE_COUNT; d++) {
        opsched_status st = opsched_npy_dtype_from_dtype((opsched_dtype)d, &n);
        if (d == OPSCHED_BF16) {
            assert_int_equal(st, OPSCHED_ERR_UNSUPPORTED);
            continue;
        }
        assert_int_equal(st, OPSCHED_OK);
        assert_int_equal(opsched_npy_dtype_size(n), opsched_dtype_size((opsched_dtype)d));
        assert_int_equal(opsched_npy_dtype_to_dtype(n, &g), OPSCHED_OK);
        assert_int_equal(g, d);
    }
    /* ONNX TensorProto numbering. */
    assert_int_equal(OPSCHED_NPY_FLOAT32, 1);
    assert_int_equal(OPSCHED_NPY_BOOL, 9);
    assert_int_equal(OPSCHED_NPY_FLOAT64, 11);
    assert_int_equal(OPSCHED_NPY_UINT64, 13);
    assert_string_equal(opsched_npy_dtype_name(OPSCHED_NPY_UINT16), "uint16");
    assert_string_equal(opsched_npy_dtype_name((opsched_npy_dtype)8), "?");
    assert_int_equal(opsched_npy_dtype_size((opsched_npy_dtype)16), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_numpy_header_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_big_endian, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fortran, setup, teardown),
        cmocka_unit_test_setup_teardown(test_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_preamble, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_file_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_file, setup, teardown),
        cmocka_unit_test(test_dtypes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
