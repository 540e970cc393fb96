/*
 * fuzz_shipped_sql.c - libFuzzer target for the shipped data reader
 * (src/store/shipped.c): the header lines, the statements and the row
 * checks of data/<name>/<table>.sql.
 *
 * An input is the six files one after the other, each starting at its
 * "-- opsched data:" header line, in load order (devices, runs, configs,
 * measurements, network_runs, calibrations); a table the input has no part
 * for gets an empty file.  They are written to a data set "fuzz" in a
 * temporary folder (under /dev/shm when there is one: the database is
 * built there too) and opsched_shipped_database builds it.  Any input must
 * give a database or a clean error.
 */
/* nftw() is an X/Open interface; the build asks only for POSIX 2008. */
#define _XOPEN_SOURCE 700

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opsched/store.h"
#include "store/store_impl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const tables[] = {"devices",      "runs",         "configs",
                                     "measurements", "network_runs", "calibrations"};
#define N_TABLES 6
#define HEADER "-- opsched data:"

static char root[256], set_dir[512];

static void make_dir(const char *p)
{
    if (mkdir(p, 0700) != 0) __builtin_trap();
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void remove_root(void)
{
    if (root[0]) nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char p[400];
    const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(root, sizeof(root), "%s/opsched-fuzz-shipped.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) __builtin_trap();
    atexit(remove_root);
    snprintf(p, sizeof(p), "%s/data", root);
    make_dir(p);
    setenv("OPSCHED_DATA_DIR", p, 1);
    snprintf(set_dir, sizeof(set_dir), "%s/data/fuzz", root);
    make_dir(set_dir);
    snprintf(p, sizeof(p), "%s/cache", root);
    make_dir(p);
    setenv("OPSCHED_CACHE_DIR", p, 1);
    return 0;
}

/* Where the part after `from` starts: the next header at a line start. */
static size_t next_part(const uint8_t *data, size_t size, size_t from)
{
    size_t n = sizeof(HEADER) - 1;
    for (size_t i = from + 1; i + n <= size; i++)
        if (data[i - 1] == '\n' && memcmp(data + i, HEADER, n) == 0) return i;
    return size;
}

static int write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int bad = n && fwrite(p, 1, n, f) != n;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[700], db[1024], empty[128];
    size_t at = 0;
    for (int i = 0; i < N_TABLES; i++) {
        snprintf(path, sizeof(path), "%s/%s.sql", set_dir, tables[i]);
        if (at < size) {
            size_t end = next_part(data, size, at);
            if (write_file(path, data + at, end - at) != 0) __builtin_trap();
            at = end;
        } else {
            int n = snprintf(empty, sizeof(empty), HEADER " table=%s schema=%d rows=0\n", tables[i],
                             OS_STORE_SCHEMA);
            if (write_file(path, empty, (size_t)n) != 0) __builtin_trap();
        }
    }
    opsched_ctx *ctx = NULL;
    if (opsched_ctx_create(&ctx) != OPSCHED_OK) return 0;
    (void)opsched_shipped_database(ctx, "fuzz", db, sizeof(db));
    opsched_ctx_free(ctx);
    return 0;
}
