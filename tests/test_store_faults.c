/*
 * test_store_faults.c - the measurement database under faults: a disk that
 * fills (an SQLite VFS shim that fails writes after a byte budget, so the
 * test needs neither root nor a small file system) while measuring, while
 * creating a file and while upgrading one; open modes (read-only never
 * writes), foreign and empty files left byte for byte as they were, files
 * from before the application id, and batches.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "opsched/store.h"

/* ---- a VFS whose disk fills after a budget of bytes ----------------------- */

static sqlite3_vfs *real_vfs;
static sqlite3_vfs faulty_vfs;
static long long write_budget = -1; /* -1: unlimited */
static long long writes_refused;

typedef struct shim_file {
    sqlite3_file base;
    sqlite3_file *real;
} shim_file;

static sqlite3_file *real_of(sqlite3_file *f)
{
    return ((shim_file *)f)->real;
}

static int shim_close(sqlite3_file *f)
{
    return real_of(f)->pMethods->xClose(real_of(f));
}
static int shim_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
    return real_of(f)->pMethods->xRead(real_of(f), buf, amt, off);
}
static int shim_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
    if (write_budget >= 0) {
        if (amt > write_budget) {
            writes_refused++;
            return SQLITE_FULL;
        }
        write_budget -= amt;
    }
    return real_of(f)->pMethods->xWrite(real_of(f), buf, amt, off);
}
static int shim_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return real_of(f)->pMethods->xTruncate(real_of(f), size);
}
static int shim_sync(sqlite3_file *f, int flags)
{
    return real_of(f)->pMethods->xSync(real_of(f), flags);
}
static int shim_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return real_of(f)->pMethods->xFileSize(real_of(f), size);
}
static int shim_lock(sqlite3_file *f, int lock)
{
    return real_of(f)->pMethods->xLock(real_of(f), lock);
}
static int shim_unlock(sqlite3_file *f, int lock)
{
    return real_of(f)->pMethods->xUnlock(real_of(f), lock);
}
static int shim_check_reserved(sqlite3_file *f, int *out)
{
    return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}
static int shim_file_control(sqlite3_file *f, int op, void *arg)
{
    return real_of(f)->pMethods->xFileControl(real_of(f), op, arg);
}
static int shim_sector_size(sqlite3_file *f)
{
    return real_of(f)->pMethods->xSectorSize(real_of(f));
}
static int shim_device_characteristics(sqlite3_file *f)
{
    return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}
static int shim_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **out)
{
    return real_of(f)->pMethods->xShmMap(real_of(f), page, size, extend, out);
}
static int shim_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    return real_of(f)->pMethods->xShmLock(real_of(f), offset, n, flags);
}
static void shim_shm_barrier(sqlite3_file *f)
{
    real_of(f)->pMethods->xShmBarrier(real_of(f));
}
static int shim_shm_unmap(sqlite3_file *f, int del)
{
    return real_of(f)->pMethods->xShmUnmap(real_of(f), del);
}

/* Version 2: no memory-mapped I/O, which would bypass xWrite's budget
 * only for reads anyway, but keeps the shim short. */
static const sqlite3_io_methods shim_methods = {
    2,
    shim_close,
    shim_read,
    shim_write,
    shim_truncate,
    shim_sync,
    shim_file_size,
    shim_lock,
    shim_unlock,
    shim_check_reserved,
    shim_file_control,
    shim_sector_size,
    shim_device_characteristics,
    shim_shm_map,
    shim_shm_lock,
    shim_shm_barrier,
    shim_shm_unmap,
    NULL,
    NULL,
};

static int shim_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
    (void)vfs;
    shim_file *p = (shim_file *)f;
    p->real = (sqlite3_file *)&p[1];
    p->real->pMethods = NULL;
    int rc = real_vfs->xOpen(real_vfs, name, p->real, flags, out);
    p->base.pMethods = p->real->pMethods ? &shim_methods : NULL;
    return rc;
}

static int install_faulty_vfs(void **state)
{
    (void)state;
    real_vfs = sqlite3_vfs_find(NULL);
    if (!real_vfs) return -1;
    faulty_vfs = *real_vfs;
    faulty_vfs.iVersion = 2;
    faulty_vfs.zName = "opsched-faulty";
    faulty_vfs.szOsFile = (int)sizeof(shim_file) + real_vfs->szOsFile;
    faulty_vfs.pNext = NULL;
    faulty_vfs.xOpen = shim_open;
    return sqlite3_vfs_register(&faulty_vfs, 1) == SQLITE_OK ? 0 : -1;
}

static int remove_faulty_vfs(void **state)
{
    (void)state;
    sqlite3_vfs_unregister(&faulty_vfs);
    sqlite3_vfs_register(real_vfs, 1);
    return 0;
}

/* ---- fixture and helpers -------------------------------------------------- */

typedef struct fixture {
    char dir[64];
    opsched_ctx *ctx;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    if (!fx) return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/opsched_faults_XXXXXX");
    if (!mkdtemp(fx->dir) || opsched_ctx_create(&fx->ctx) != OPSCHED_OK) {
        free(fx);
        return -1;
    }
    write_budget = -1;
    *state = fx;
    return 0;
}

static int count_entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    write_budget = -1;
    DIR *d = opendir(fx->dir);
    if (d) {
        struct dirent *e;
        char p[384];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            snprintf(p, sizeof(p), "%s/%s", fx->dir, e->d_name);
            remove(p);
        }
        closedir(d);
    }
    rmdir(fx->dir);
    opsched_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

static void path_in(const fixture *fx, const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", fx->dir, name);
}

/* The file's bytes (malloc'd; *n its size), NULL when missing. */
static unsigned char *slurp(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    *n = 0;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)*n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)*n, f), (size_t)*n);
    fclose(f);
    return b;
}

static int same_bytes(const unsigned char *a, long na, const char *path)
{
    long nb = 0;
    unsigned char *b = slurp(path, &nb);
    int same = b && na == nb && memcmp(a, b, (size_t)na) == 0;
    free(b);
    return same;
}

static void exec_raw(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static long long query_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    long long v = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return v;
}

static int integrity_ok(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    int ok = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, NULL) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW)
        ok = strcmp((const char *)sqlite3_column_text(stmt, 0), "ok") == 0;
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return ok;
}

typedef struct seeded {
    opsched_store *s;
    int64_t dev, run, cfg;
} seeded;

static seeded seed(const fixture *fx, const char *path)
{
    seeded z = {NULL, 0, 0, 0};
    opsched_device_info d;
    opsched_config_record c;
    opsched_run_info info = {"test", NULL, 0, 1};
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &z.s), OPSCHED_OK);
    memset(&d, 0, sizeof(d));
    snprintf(d.backend, sizeof(d.backend), "cpu");
    snprintf(d.name, sizeof(d.name), "test cpu");
    snprintf(d.uuid, sizeof(d.uuid), "cpu-0");
    memset(&c, 0, sizeof(c));
    snprintf(c.signature, sizeof(c.signature), "Conv|faults");
    snprintf(c.op, sizeof(c.op), "conv2d");
    snprintf(c.dtype, sizeof(c.dtype), "f32");
    c.batch = 1;
    c.kernel = c.stride = c.padding = c.groups = c.height = c.width = -1;
    assert_int_equal(opsched_store_device(z.s, &d, &z.dev), OPSCHED_OK);
    assert_int_equal(opsched_store_begin_run(z.s, &info, &z.run), OPSCHED_OK);
    assert_int_equal(opsched_store_config(z.s, &c, &z.cfg), OPSCHED_OK);
    return z;
}

static opsched_status add(seeded *z, int i)
{
    opsched_measurement m;
    char key[32];
    memset(&m, 0, sizeof(m));
    m.status = OPSCHED_OK;
    m.stats.n = 3;
    m.stats.median = m.stats.mean = m.stats.min = m.stats.max = 1.0 + i;
    snprintf(key, sizeof(key), "key-%d", i);
    return opsched_store_add(z->s, z->run, z->dev, z->cfg, key, "heuristic", &m, NULL);
}

static int64_t measurements(const fixture *fx, const char *path)
{
    opsched_store *s = NULL;
    opsched_store_summary sum;
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_ONLY, &s), OPSCHED_OK);
    assert_int_equal(opsched_store_summary_get(s, &sum), OPSCHED_OK);
    opsched_store_close(s);
    return sum.measurements;
}

/* ---- tests ------------------------------------------------------------------ */

/* The disk fills in the middle of measuring: the failing measurement is
 * refused with the file and the space named, every one before it is kept,
 * the file is sound, and once there is space measuring goes on. */
static void test_disk_fills_while_measuring(void **state)
{
    fixture *fx = *state;
    char path[128];
    path_in(fx, "m.db", path, sizeof(path));
    seeded z = seed(fx, path);
    for (int i = 0; i < 10; i++)
        assert_int_equal(add(&z, i), OPSCHED_OK);
    write_budget = 64 * 1024;
    writes_refused = 0;
    int stored = 10;
    opsched_status st = OPSCHED_OK;
    while (stored < 100000 && (st = add(&z, stored)) == OPSCHED_OK)
        stored++;
    assert_int_equal(st, OPSCHED_ERR_IO);
    assert_true(writes_refused > 0);
    assert_true(stored > 10);
    const char *msg = opsched_ctx_last_error(fx->ctx);
    assert_non_null(strstr(msg, path));
    assert_non_null(strstr(msg, "disk full"));
    assert_non_null(strstr(msg, "free on its file system"));
    opsched_store_close(z.s);
    write_budget = -1;
    assert_true(integrity_ok(path));
    assert_int_equal(measurements(fx, path), stored);
    /* Space again: the same file takes more. */
    opsched_store *s = NULL;
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    z.s = s;
    assert_int_equal(add(&z, stored), OPSCHED_OK);
    opsched_store_close(s);
    assert_int_equal(measurements(fx, path), stored + 1);
}

/* The disk is full when a new file is made: no file of that name, and
 * nothing else, is left behind. */
static void test_disk_full_at_creation(void **state)
{
    fixture *fx = *state;
    char path[128];
    path_in(fx, "new.db", path, sizeof(path));
    opsched_store *s = NULL;
    for (long long budget = 0; budget <= 16 * 1024; budget += 2048) {
        write_budget = budget;
        opsched_status st = opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &s);
        write_budget = -1;
        if (st == OPSCHED_OK) { /* budget enough: the file is whole */
            opsched_store_close(s);
            s = NULL;
            assert_true(integrity_ok(path));
            assert_int_equal(query_int(path, "PRAGMA user_version"),
                             opsched_store_schema_version());
            assert_int_equal(query_int(path, "PRAGMA application_id"),
                             OPSCHED_STORE_APPLICATION_ID);
            unlink(path);
            continue;
        }
        assert_int_equal(st, OPSCHED_ERR_IO);
        assert_null(s);
        assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), path));
        assert_int_equal(count_entries(fx->dir), 0);
    }
}

/* The disk is full when an older file is to be upgraded: the copy cannot
 * be written, so the file is left exactly as it was. */
static void test_disk_full_at_upgrade(void **state)
{
    fixture *fx = *state;
    char path[128], bak[160];
    path_in(fx, "old.db", path, sizeof(path));
    seeded z = seed(fx, path);
    assert_int_equal(add(&z, 0), OPSCHED_OK);
    opsched_store_close(z.s);
    exec_raw(path, "DROP TABLE collectives; DROP TABLE stages; PRAGMA user_version = 3; PRAGMA "
                   "application_id = 0;"
                   " PRAGMA journal_mode = DELETE");
    long n = 0;
    unsigned char *before = slurp(path, &n);
    assert_non_null(before);
    opsched_store *s = NULL;
    write_budget = 1024;
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &s),
                     OPSCHED_ERR_IO);
    write_budget = -1;
    assert_true(same_bytes(before, n, path));
    snprintf(bak, sizeof(bak), "%s.bak-v3", path);
    assert_int_not_equal(access(bak, F_OK), 0);
    /* Readers refuse an older file; a writer with space upgrades it. */
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_ONLY, &s),
                     OPSCHED_ERR_UNSUPPORTED);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "schema 3"));
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    opsched_store_close(s);
    assert_int_equal(access(bak, F_OK), 0);
    assert_int_equal(query_int(bak, "PRAGMA user_version"), 3);
    assert_int_equal(query_int(bak, "SELECT count(*) FROM measurements"), 1);
    assert_int_equal(query_int(path, "PRAGMA user_version"), opsched_store_schema_version());
    assert_int_equal(query_int(path, "SELECT count(*) FROM measurements"), 1);
    free(before);
}

/* Read-only mode creates nothing, initialises nothing, writes nothing. */
static void test_read_only_mode(void **state)
{
    fixture *fx = *state;
    char path[128], empty[128];
    opsched_store *s = NULL;
    path_in(fx, "missing.db", path, sizeof(path));
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_ONLY, &s),
                     OPSCHED_ERR_NOT_FOUND);
    assert_int_not_equal(access(path, F_OK), 0);

    path_in(fx, "empty.db", empty, sizeof(empty));
    fclose(fopen(empty, "w"));
    assert_int_equal(opsched_store_open(fx->ctx, empty, OPSCHED_STORE_READ_ONLY, &s),
                     OPSCHED_ERR_PARSE);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), empty));
    struct stat sb;
    assert_int_equal(stat(empty, &sb), 0);
    assert_int_equal(sb.st_size, 0);
    /* A writer may initialise it. */
    assert_int_equal(opsched_store_open(fx->ctx, empty, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    opsched_store_close(s);

    seeded z = seed(fx, path);
    assert_int_equal(add(&z, 0), OPSCHED_OK);
    opsched_store_close(z.s);
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_ONLY, &s), OPSCHED_OK);
    opsched_run_info info = {"test", NULL, 0, 1};
    int64_t run = 0;
    assert_int_equal(opsched_store_begin_run(s, &info, &run), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "read-only"));
    opsched_store_summary sum;
    assert_int_equal(opsched_store_summary_get(s, &sum), OPSCHED_OK);
    assert_int_equal(sum.measurements, 1);
    opsched_store_close(s);
}

/* Foreign files are refused by both modes and left byte for byte. */
static void test_foreign_files_untouched(void **state)
{
    fixture *fx = *state;
    static const char *const setups[] = {
        "CREATE TABLE t (x); INSERT INTO t VALUES (1)",
        "PRAGMA application_id = 7; CREATE TABLE devices (x)",
        "PRAGMA user_version = 4; CREATE TABLE devices (x)",
        "PRAGMA journal_mode = WAL; CREATE TABLE t (x)",
    };
    for (size_t i = 0; i < sizeof(setups) / sizeof(setups[0]); i++) {
        char path[128], name[32];
        snprintf(name, sizeof(name), "foreign%zu.db", i);
        path_in(fx, name, path, sizeof(path));
        exec_raw(path, setups[i]);
        long n = 0;
        unsigned char *before = slurp(path, &n);
        assert_non_null(before);
        for (int mode = 0; mode < 2; mode++) {
            opsched_store *s = NULL;
            assert_int_equal(opsched_store_open(fx->ctx, path, (opsched_store_mode)mode, &s),
                             OPSCHED_ERR_PARSE);
            assert_null(s);
            assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), path));
            assert_non_null(strstr(opsched_ctx_last_error(fx->ctx), "not an opsched database"));
            assert_true(same_bytes(before, n, path));
        }
        free(before);
    }
}

/* A file of schema 4 from before the application id: read as it is,
 * stamped by the first writer. */
static void test_unstamped_file(void **state)
{
    fixture *fx = *state;
    char path[128];
    path_in(fx, "legacy.db", path, sizeof(path));
    seeded z = seed(fx, path);
    opsched_store_close(z.s);
    exec_raw(path, "PRAGMA application_id = 0");
    opsched_store *s = NULL;
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_ONLY, &s), OPSCHED_OK);
    opsched_store_close(s);
    assert_int_equal(query_int(path, "PRAGMA application_id"), 0);
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    opsched_store_close(s);
    assert_int_equal(query_int(path, "PRAGMA application_id"), OPSCHED_STORE_APPLICATION_ID);
}

/* A batch lands whole or not at all; a write failing inside it is undone
 * alone. */
static void test_batch(void **state)
{
    fixture *fx = *state;
    char path[128];
    path_in(fx, "batch.db", path, sizeof(path));
    seeded z = seed(fx, path);
    assert_int_equal(opsched_store_batch_begin(z.s), OPSCHED_OK);
    assert_int_equal(opsched_store_batch_begin(z.s), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(add(&z, 1), OPSCHED_OK);
    assert_int_equal(opsched_store_end_run(z.s, 9999, "done"), OPSCHED_ERR_NOT_FOUND);
    assert_int_equal(add(&z, 2), OPSCHED_OK);
    opsched_store_batch_rollback(z.s);
    assert_int_equal(query_int(path, "SELECT count(*) FROM measurements"), 0);
    assert_int_equal(opsched_store_batch_begin(z.s), OPSCHED_OK);
    assert_int_equal(add(&z, 1), OPSCHED_OK);
    assert_int_equal(add(&z, 2), OPSCHED_OK);
    assert_int_equal(opsched_store_batch_commit(z.s), OPSCHED_OK);
    opsched_store_batch_rollback(z.s); /* none open: nothing happens */
    assert_int_equal(opsched_store_batch_commit(z.s), OPSCHED_ERR_INVALID_ARG);
    opsched_store_close(z.s);
    assert_int_equal(query_int(path, "SELECT count(*) FROM measurements"), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_disk_fills_while_measuring, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full_at_creation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full_at_upgrade, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_files_untouched, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unstamped_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
    };
    return cmocka_run_group_tests(tests, install_faulty_vfs, remove_faulty_vfs);
}
