/*
 * test_csv.c - the CSV writer (opsched/csv.h): RFC 4180 quoting, numbers,
 * and the field count every row must have.
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

typedef struct fixture {
    opsched_ctx *ctx;
    FILE *f;
    char *text;
    size_t len;
    opsched_csv_writer *w;
} fixture;

static int setup(void **state)
{
    fixture *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    assert_int_equal(opsched_ctx_create(&x->ctx), OPSCHED_OK);
    x->f = open_memstream(&x->text, &x->len);
    assert_non_null(x->f);
    assert_int_equal(opsched_csv_writer_create(x->ctx, x->f, &x->w), OPSCHED_OK);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fixture *x = *state;
    opsched_csv_writer_free(x->w);
    fclose(x->f);
    free(x->text);
    opsched_ctx_free(x->ctx);
    free(x);
    return 0;
}

/* What was written so far. */
static const char *written(fixture *x)
{
    fflush(x->f);
    return x->text ? x->text : "";
}

static void test_quoting(void **state)
{
    fixture *x = *state;
    assert_int_equal(opsched_csv_header(x->w, "a,b,c,d,e"), OPSCHED_OK);
    assert_int_equal(opsched_csv_fields(x->w), 5);
    opsched_csv_str(x->w, "plain");
    opsched_csv_str(x->w, "conv,conv+relu");
    opsched_csv_str(x->w, "say \"hi\"");
    opsched_csv_str(x->w, "two\nlines");
    opsched_csv_str(x->w, "cr\r");
    assert_int_equal(opsched_csv_end_row(x->w), OPSCHED_OK);
    opsched_csv_str(x->w, NULL);
    opsched_csv_str(x->w, "");
    opsched_csv_str(x->w, "\"");
    opsched_csv_str(x->w, " spaces kept ");
    opsched_csv_str(x->w, ",");
    assert_int_equal(opsched_csv_end_row(x->w), OPSCHED_OK);
    assert_string_equal(written(x), "a,b,c,d,e\n"
                                    "plain,\"conv,conv+relu\",\"say \"\"hi\"\"\",\"two\nlines\","
                                    "\"cr\r\"\n"
                                    ",,\"\"\"\", spaces kept ,\",\"\n");
    assert_int_equal(opsched_csv_rows(x->w), 3);
}

static void test_numbers(void **state)
{
    fixture *x = *state;
    assert_int_equal(opsched_csv_set_fields(x->w, 6), OPSCHED_OK);
    opsched_csv_int(x->w, -42);
    opsched_csv_int(x->w, INT64_C(1) << 40);
    opsched_csv_double(x->w, 0.00618315782, "%.9g");
    opsched_csv_double(x->w, NAN, "%.6g");
    opsched_csv_double(x->w, INFINITY, "%.6g");
    opsched_csv_double(x->w, 1.5, "%.3f");
    assert_int_equal(opsched_csv_end_row(x->w), OPSCHED_OK);
    opsched_csv_empty(x->w);
    opsched_csv_double(x->w, -INFINITY, NULL);
    opsched_csv_double(x->w, 1e300, "%.6g");
    opsched_csv_int(x->w, 0);
    opsched_csv_str(x->w, "x");
    opsched_csv_double(x->w, 2.0, NULL);
    assert_int_equal(opsched_csv_end_row(x->w), OPSCHED_OK);
    assert_string_equal(written(x), "-42,1099511627776,0.00618315782,,inf,1.500\n"
                                    ",-inf,1e+300,0,x,2\n");
}

static void test_field_count(void **state)
{
    fixture *x = *state;
    assert_int_equal(opsched_csv_header(x->w, "a,b"), OPSCHED_OK);
    /* a row short of a field: an error, and nothing of it written */
    opsched_csv_str(x->w, "1");
    assert_int_equal(opsched_csv_end_row(x->w), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(x->ctx), "1 fields, the header 2"));
    /* one too many */
    opsched_csv_str(x->w, "1");
    opsched_csv_str(x->w, "2");
    opsched_csv_str(x->w, "3");
    assert_int_equal(opsched_csv_end_row(x->w), OPSCHED_ERR_INVALID_ARG);
    /* the writer goes on with the next row */
    opsched_csv_str(x->w, "1");
    opsched_csv_str(x->w, "2");
    assert_int_equal(opsched_csv_end_row(x->w), OPSCHED_OK);
    assert_string_equal(written(x), "a,b\n1,2\n");
    /* a header after rows, another field count, an empty row */
    assert_int_equal(opsched_csv_header(x->w, "c"), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_csv_set_fields(x->w, 3), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_csv_set_fields(x->w, 2), OPSCHED_OK);
    assert_int_equal(opsched_csv_end_row(x->w), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_csv_rows(x->w), 2);
}

static void test_first_row_sets_count(void **state)
{
    fixture *x = *state;
    assert_int_equal(opsched_csv_fields(x->w), 0);
    opsched_csv_str(x->w, "a");
    opsched_csv_str(x->w, "b");
    opsched_csv_str(x->w, "c");
    assert_int_equal(opsched_csv_end_row(x->w), OPSCHED_OK);
    assert_int_equal(opsched_csv_fields(x->w), 3);
    opsched_csv_str(x->w, "a");
    assert_int_equal(opsched_csv_end_row(x->w), OPSCHED_ERR_INVALID_ARG);
}

static void test_null_arguments(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    opsched_csv_writer *w = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    assert_int_equal(opsched_csv_writer_create(ctx, NULL, &w), OPSCHED_ERR_INVALID_ARG);
    assert_null(w);
    assert_int_equal(opsched_csv_str(NULL, "x"), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_csv_end_row(NULL), OPSCHED_ERR_INVALID_ARG);
    opsched_csv_writer_free(NULL);
    opsched_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_quoting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_field_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_row_sets_count, setup, teardown),
        cmocka_unit_test(test_null_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
