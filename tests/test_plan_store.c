/*
 * test_plan_store.c - the persistent plan store (store/plan_store.c):
 * bytes written come back byte for byte, across a close and a reopen and
 * from a second handle open at the same time (two processes' shards);
 * the scope keeps one library version's plans from another's; a file that
 * is not a database, a directory that cannot be made and a store that
 * cannot be written answer "none" and drop writes with a reason, never
 * failing or changing a file they did not create; the default path
 * follows OPSCHED_PLAN_STORE, OPSCHED_CACHE_DIR, XDG_CACHE_HOME and HOME.
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

#include "store/plan_store.h"

typedef struct fixture {
    char dir[256];
    char path[320];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    if (!f) return -1;
    snprintf(f->dir, sizeof(f->dir), "/tmp/opsched-plan-store-XXXXXX");
    if (!mkdtemp(f->dir)) return -1;
    snprintf(f->path, sizeof(f->path), "%s/sub/dir/plans.sqlite", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    if (system(cmd) != 0) return -1;
    free(f);
    return 0;
}

/* A byte string with zeros and every byte value in it. */
static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)((i * 131u + seed * 7u) & 0xffu);
}

static void test_round_trip_and_reopen(void **state)
{
    fixture *f = *state;
    char why[512];
    unsigned char a[5000], b[77];
    fill(a, sizeof(a), 1);
    fill(b, sizeof(b), 2);
    os_plan_store *s = os_plan_store_open(f->path, "cudnn 91900 sm_90", why, sizeof(why));
    assert_non_null(s);
    assert_string_equal(why, "");
    size_t n = 99;
    assert_null(os_plan_store_get(s, "conv a|e12", &n));
    assert_int_equal(n, 0);
    assert_int_equal(os_plan_store_put(s, "conv a|e12", a, sizeof(a)), 0);
    assert_int_equal(os_plan_store_put(s, "conv b|e7", b, sizeof(b)), 0);
    unsigned char *got = os_plan_store_get(s, "conv a|e12", &n);
    assert_non_null(got);
    assert_int_equal(n, sizeof(a));
    assert_memory_equal(got, a, sizeof(a));
    free(got);
    /* Replacing keeps one entry, the new bytes. */
    assert_int_equal(os_plan_store_put(s, "conv b|e7", a, 100), 0);
    got = os_plan_store_get(s, "conv b|e7", &n);
    assert_non_null(got);
    assert_int_equal(n, 100);
    assert_memory_equal(got, a, 100);
    free(got);
    long hits, misses, puts;
    os_plan_store_counts(s, &hits, &misses, &puts);
    assert_int_equal(hits, 2);
    assert_int_equal(misses, 1);
    assert_int_equal(puts, 3);
    os_plan_store_close(s);

    s = os_plan_store_open(f->path, "cudnn 91900 sm_90", why, sizeof(why));
    assert_non_null(s);
    got = os_plan_store_get(s, "conv a|e12", &n);
    assert_non_null(got);
    assert_memory_equal(got, a, sizeof(a));
    free(got);
    os_plan_store_close(s);

    /* Another scope (another cuDNN) sees none of it. */
    s = os_plan_store_open(f->path, "cudnn 92000 sm_90", why, sizeof(why));
    assert_non_null(s);
    assert_null(os_plan_store_get(s, "conv a|e12", &n));
    os_plan_store_close(s);
}

static void test_two_handles_at_once(void **state)
{
    fixture *f = *state;
    unsigned char a[300];
    fill(a, sizeof(a), 3);
    os_plan_store *s1 = os_plan_store_open(f->path, "x", NULL, 0);
    os_plan_store *s2 = os_plan_store_open(f->path, "x", NULL, 0);
    assert_non_null(s1);
    assert_non_null(s2);
    assert_int_equal(os_plan_store_put(s1, "k1", a, sizeof(a)), 0);
    assert_int_equal(os_plan_store_put(s2, "k2", a, 10), 0);
    size_t n = 0;
    void *got = os_plan_store_get(s2, "k1", &n);
    assert_non_null(got);
    assert_int_equal(n, sizeof(a));
    free(got);
    got = os_plan_store_get(s1, "k2", &n);
    assert_non_null(got);
    assert_int_equal(n, 10);
    free(got);
    os_plan_store_close(s1);
    os_plan_store_close(s2);
}

static void test_not_a_database_is_left_alone(void **state)
{
    fixture *f = *state;
    char path[400], why[512];
    snprintf(path, sizeof(path), "%s/notes.txt", f->dir);
    const char text[] = "a user's notes, not a database at all; they must survive untouched.\n";
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    for (int i = 0; i < 100; i++)
        fputs(text, fp);
    fclose(fp);
    os_plan_store *s = os_plan_store_open(path, "x", why, sizeof(why));
    assert_null(s);
    assert_non_null(strstr(why, "the plan store"));
    /* The file is as it was. */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal((long)st.st_size, (long)(100 * (sizeof(text) - 1)));
    fp = fopen(path, "r");
    assert_non_null(fp);
    char line[200];
    assert_non_null(fgets(line, sizeof(line), fp));
    fclose(fp);
    assert_string_equal(line, text);
}

static void test_directory_cannot_be_made(void **state)
{
    fixture *f = *state;
    char file[400], path[500], why[512];
    snprintf(file, sizeof(file), "%s/a-file", f->dir);
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fclose(fp);
    /* Its "directory" is a regular file. */
    snprintf(path, sizeof(path), "%s/plans.sqlite", file);
    assert_null(os_plan_store_open(path, "x", why, sizeof(why)));
    assert_non_null(strstr(why, "cannot make the directory"));
    assert_null(os_plan_store_open(NULL, "x", why, sizeof(why)));
    assert_null(os_plan_store_open("", "x", why, sizeof(why)));
}

static void test_read_only_drops_writes(void **state)
{
    fixture *f = *state;
    unsigned char a[64];
    fill(a, sizeof(a), 4);
    os_plan_store *s = os_plan_store_open(f->path, "x", NULL, 0);
    assert_non_null(s);
    assert_int_equal(os_plan_store_put(s, "kept", a, sizeof(a)), 0);
    os_plan_store_close(s);
    if (geteuid() == 0) {
        /* root writes through file modes: a store already turned off is
         * the case left to test. */
        s = os_plan_store_open(f->path, "x", NULL, 0);
        assert_non_null(s);
        size_t n = 0;
        void *got = os_plan_store_get(s, "kept", &n);
        assert_non_null(got);
        free(got);
        os_plan_store_close(s);
        return;
    }
    char wal[400];
    assert_int_equal(chmod(f->path, 0444), 0);
    snprintf(wal, sizeof(wal), "%s-wal", f->path);
    (void)chmod(wal, 0444);
    s = os_plan_store_open(f->path, "x", NULL, 0);
    if (s) {
        assert_int_equal(os_plan_store_put(s, "new", a, sizeof(a)), -1);
        assert_string_not_equal(os_plan_store_why(s), "");
        assert_int_equal(os_plan_store_put(s, "new2", a, sizeof(a)), -1);
        os_plan_store_close(s);
    }
    assert_int_equal(chmod(f->path, 0644), 0);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    size_t n = 5;
    assert_null(os_plan_store_get(NULL, "k", &n));
    assert_int_equal(n, 0);
    assert_int_equal(os_plan_store_put(NULL, "k", "x", 1), -1);
    long h, m, p;
    os_plan_store_counts(NULL, &h, &m, &p);
    assert_int_equal(h + m + p, 0);
    assert_string_equal(os_plan_store_why(NULL), "");
    os_plan_store_close(NULL);
}

static void test_long_key(void **state)
{
    fixture *f = *state;
    os_plan_store *s = os_plan_store_open(f->path, "x", NULL, 0);
    assert_non_null(s);
    char *key = malloc(OS_PLAN_STORE_MAX_KEY + 10);
    assert_non_null(key);
    memset(key, 'k', OS_PLAN_STORE_MAX_KEY + 9);
    key[OS_PLAN_STORE_MAX_KEY + 9] = '\0';
    assert_int_equal(os_plan_store_put(s, key, "abc", 3), -1);
    size_t n = 0;
    assert_null(os_plan_store_get(s, key, &n));
    /* A key too long is refused without turning the store off. */
    assert_int_equal(os_plan_store_put(s, "short", "abc", 3), 0);
    free(key);
    os_plan_store_close(s);
}

static void test_default_path(void **state)
{
    (void)state;
    char buf[512];
    setenv("OPSCHED_PLAN_STORE", "/somewhere/p.sqlite", 1);
    assert_int_equal(os_plan_store_default_path(buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/somewhere/p.sqlite");
    setenv("OPSCHED_PLAN_STORE", "off", 1);
    assert_int_equal(os_plan_store_default_path(buf, sizeof(buf)), -1);
    unsetenv("OPSCHED_PLAN_STORE");
    setenv("OPSCHED_CACHE_DIR", "/c", 1);
    assert_int_equal(os_plan_store_default_path(buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/c/cudnn-plans.sqlite");
    unsetenv("OPSCHED_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/x", 1);
    assert_int_equal(os_plan_store_default_path(buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/x/opsched/cudnn-plans.sqlite");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/h", 1);
    assert_int_equal(os_plan_store_default_path(buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/h/.cache/opsched/cudnn-plans.sqlite");
    assert_int_equal(os_plan_store_default_path(buf, 8), -1);
    unsetenv("HOME");
    assert_int_equal(os_plan_store_default_path(buf, sizeof(buf)), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_handles_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_database_is_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_cannot_be_made, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only_drops_writes, setup, teardown),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test_setup_teardown(test_long_key, setup, teardown),
        cmocka_unit_test(test_default_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
