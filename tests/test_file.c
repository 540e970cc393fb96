/*
 * test_file.c - src/core/file.c: only regular files are opened (a FIFO is
 * refused at once, never waited on; a directory, a device named as such),
 * a symbolic link to a regular file is followed, and a whole-file read
 * stops at its stated maximum.
 */
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

#include "core/file.h"
#include "opsched/core.h"

typedef struct fixture {
    opsched_ctx *ctx;
    char dir[64];
    char path[128];
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    if (!fx || opsched_ctx_create(&fx->ctx) != OPSCHED_OK) return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/opsched_file_XXXXXX");
    if (!mkdtemp(fx->dir)) return -1;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    const char *names[] = {"regular", "empty", "fifo", "link", "sub"};
    char p[160];
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", fx->dir, names[i]);
        if (remove(p) != 0) rmdir(p);
    }
    rmdir(fx->dir);
    opsched_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

static const char *at(fixture *fx, const char *name)
{
    snprintf(fx->path, sizeof(fx->path), "%s/%s", fx->dir, name);
    return fx->path;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void says(fixture *fx, const char *piece)
{
    const char *msg = opsched_ctx_last_error(fx->ctx);
    if (!strstr(msg, piece)) print_error("'%s' lacks '%s'\n", msg, piece);
    assert_non_null(strstr(msg, piece));
}

static void test_regular(void **state)
{
    fixture *fx = *state;
    char *text = NULL;
    size_t n = 0;
    write_text(at(fx, "regular"), "twelve bytes");
    assert_int_equal(os_file_read(fx->ctx, at(fx, "regular"), "model", 100, &text, &n), OPSCHED_OK);
    assert_int_equal(n, 12);
    assert_string_equal(text, "twelve bytes");
    free(text);

    /* Exactly the maximum is fine; one byte less is not. */
    assert_int_equal(os_file_read(fx->ctx, at(fx, "regular"), "model", 12, &text, &n), OPSCHED_OK);
    free(text);
    assert_int_equal(os_file_read(fx->ctx, at(fx, "regular"), "model", 11, &text, &n),
                     OPSCHED_ERR_IO);
    assert_null(text);
    assert_int_equal(n, 0);
    says(fx, "regular: the model is larger than the 11 bytes it may have");

    write_text(at(fx, "empty"), "");
    assert_int_equal(os_read_file(fx->ctx, at(fx, "empty"), &text, &n), OPSCHED_OK);
    assert_int_equal(n, 0);
    assert_string_equal(text, "");
    free(text);

    /* /proc files say size 0 and hold more than the first buffer: read to
     * the end, and bounded the same way. */
    assert_int_equal(os_file_read(fx->ctx, "/proc/self/status", NULL, 1 << 20, &text, &n),
                     OPSCHED_OK);
    assert_true(n > 256 && strlen(text) == n);
    assert_non_null(strstr(text, "Name:"));
    free(text);
    assert_int_equal(os_file_read(fx->ctx, "/proc/self/status", NULL, 300, &text, &n),
                     OPSCHED_ERR_IO);
    says(fx, "larger than the 300 bytes");

    assert_int_equal(symlink("regular", at(fx, "link")), 0);
    int fd = -1;
    int64_t size = -1;
    assert_int_equal(os_file_open_regular(fx->ctx, at(fx, "link"), "schedule", &fd, &size),
                     OPSCHED_OK);
    assert_true(fd >= 0);
    assert_int_equal(size, 12);
    close(fd);
}

static void test_refused(void **state)
{
    fixture *fx = *state;
    char *text = NULL;
    size_t n = 0;
    int fd = 7;

    assert_int_equal(mkfifo(at(fx, "fifo"), 0600), 0);
    assert_int_equal(os_file_read(fx->ctx, at(fx, "fifo"), "sweep spec", 100, &text, &n),
                     OPSCHED_ERR_IO);
    assert_null(text);
    says(fx, "fifo: the sweep spec is a FIFO, not a regular file");
    assert_int_equal(os_file_open_regular(fx->ctx, at(fx, "fifo"), NULL, &fd, NULL),
                     OPSCHED_ERR_IO);
    assert_int_equal(fd, -1);
    says(fx, "the file is a FIFO");

    assert_int_equal(mkdir(at(fx, "sub"), 0700), 0);
    assert_int_equal(os_read_file(fx->ctx, at(fx, "sub"), &text, &n), OPSCHED_ERR_IO);
    says(fx, "sub: the file is a directory, not a regular file");

    assert_int_equal(os_file_read(fx->ctx, "/dev/null", "model", 100, &text, &n), OPSCHED_ERR_IO);
    says(fx, "/dev/null: the model is a character device, not a regular file");

    assert_int_equal(os_file_read(fx->ctx, at(fx, "missing"), "model", 100, &text, &n),
                     OPSCHED_ERR_IO);
    says(fx, "missing: cannot open the model: No such file or directory");

    assert_int_equal(os_file_read(fx->ctx, "", "model", 100, &text, &n), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(os_file_read(fx->ctx, NULL, "model", 100, &text, &n), OPSCHED_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_regular, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
