/*
 * open.c - opening a measurement database: telling an opsched file from any
 * other before anything is written to it, creating a new file whole,
 * upgrading an older schema after keeping a copy, and reading files this
 * process may not write.
 *
 * The promises these keep are in docs/RELIABILITY.md.  Two rules carry
 * them: a file is looked at through a read-only connection first (a
 * read-write one could checkpoint someone else's WAL into their file on
 * close), and every change to a file's schema is one transaction, or, for
 * a new file, a file built aside and given its name only when complete.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "store/store_impl.h"

/* Whether path exists; its size when it does. */
static opsched_status stat_file(opsched_ctx *ctx, const char *path, int *exists, off_t *size)
{
    struct stat sb;
    *exists = 0;
    *size = 0;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT) return OPSCHED_OK;
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "database %s: %s", path, strerror(errno));
    }
    if (!S_ISREG(sb.st_mode))
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "database %s is not a regular file", path);
    *exists = 1;
    *size = sb.st_size;
    return OPSCHED_OK;
}

/* path + suffix into a new string; NULL when out of memory. */
static char *with_suffix(const char *path, const char *suffix)
{
    size_t n = strlen(path), k = strlen(suffix);
    char *p = malloc(n + k + 1);
    if (!p) return NULL;
    memcpy(p, path, n);
    memcpy(p + n, suffix, k + 1);
    return p;
}

/* Removes path and the files SQLite keeps beside it. */
static void remove_db_files(const char *path)
{
    static const char *const suffixes[] = {"", "-journal", "-wal", "-shm"};
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        char *p = with_suffix(path, suffixes[i]);
        if (p) unlink(p);
        free(p);
    }
}

/* Whether a WAL file with content sits beside path. */
static int has_wal(const char *path)
{
    struct stat sb;
    char *p = with_suffix(path, "-wal");
    int yes = p && stat(p, &sb) == 0 && sb.st_size > 0;
    free(p);
    return yes;
}

/* Flushes a directory entry just made, so a crash does not lose the name
 * of a file whose content is already on disk. */
static void sync_dir_of(const char *path)
{
    char *dir = with_suffix(path, "");
    if (!dir) return;
    char *slash = strrchr(dir, '/');
    const char *d = dir;
    if (!slash)
        d = ".";
    else if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

/* Creates the schema in an open, empty file in one transaction, or
 * upgrades an older one, or stamps an unstamped one: whatever is needed,
 * decided again under the write lock (another process may have done it
 * since the first look). */
static opsched_status build_schema(opsched_store *s, int *from)
{
    opsched_status st;
    int version = 0, stamped = 0;
    OS_TRY(os_store_begin(s));
    OS_TRY_GOTO(st, os_store_identify(s, &version, &stamped), done);
    *from = version;
    if (version < OS_STORE_SCHEMA)
        OS_TRY_GOTO(st, os_store_schema_build(s, version), done);
    else if (!stamped)
        OS_TRY_GOTO(st, OS_STORE_EXEC(s, OS_STORE_SET_APP_ID, "set the application id"), done);
    OS_TRY_GOTO(st, os_store_commit(s), done);
done:
    if (st != OPSCHED_OK) os_store_rollback(s);
    return st;
}

/* Builds a complete new database under a temporary name beside path and
 * links it to path; when path appeared meanwhile (another process created
 * it), that file is kept and this one dropped. */
static opsched_status create_new(opsched_ctx *ctx, const char *path)
{
    opsched_status st = OPSCHED_OK;
    opsched_store *s = NULL;
    char suffix[64];
    unsigned rnd = 0;
    sqlite3_randomness((int)sizeof(rnd), &rnd);
    snprintf(suffix, sizeof(suffix), ".tmp-%ld-%08x", (long)getpid(), rnd);
    char *tmp = with_suffix(path, suffix);
    if (!tmp) return OS_NOMEM(ctx);
    int fd = open(tmp, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0666);
    if (fd < 0) {
        st = OS_FAIL(ctx, OPSCHED_ERR_IO, "database %s cannot be created: %s", path,
                     strerror(errno));
        free(tmp);
        return st;
    }
    close(fd);
    OS_TRY_GOTO(st, os_store_connect(ctx, tmp, 0, &s), done);
    /* Messages name the file the user asked for, not the temporary one. */
    free(s->path);
    s->path = NULL;
    OS_TRY_GOTO(st, os_strdup(ctx, path, &s->path), done);
    int from = 0;
    OS_TRY_GOTO(st, build_schema(s, &from), done);
    OS_TRY_GOTO(st, os_store_set_wal(s), done);
    int rc = sqlite3_close(s->db);
    s->db = NULL;
    if (rc != SQLITE_OK) {
        st = OS_FAIL(ctx, OPSCHED_ERR_IO, "database %s: closing the new file failed: %s", path,
                     sqlite3_errstr(rc));
        goto done;
    }
    if (link(tmp, path) != 0 && errno != EEXIST) {
        /* A file system without hard links: rename, unless path appeared. */
        if (access(path, F_OK) != 0 && rename(tmp, path) != 0) {
            st = OS_FAIL(ctx, OPSCHED_ERR_IO, "database %s cannot be created: %s", path,
                         strerror(errno));
            goto done;
        }
    }
    sync_dir_of(path);
done:
    opsched_store_close(s);
    remove_db_files(tmp);
    free(tmp);
    return st;
}

/* Copies the database s has open to PATH.bak-vN (N: its schema) through a
 * temporary name, so a backup is whole or absent. */
static opsched_status keep_copy(opsched_store *s, int version)
{
    opsched_status st = OPSCHED_OK;
    char suffix[32];
    sqlite3 *dst = NULL;
    snprintf(suffix, sizeof(suffix), ".bak-v%d", version);
    char *bak = with_suffix(s->path, suffix);
    char *tmp = bak ? with_suffix(bak, ".tmp") : NULL;
    if (!bak || !tmp) {
        st = OS_NOMEM(s->ctx);
        goto done;
    }
    remove_db_files(tmp);
    int rc = sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_backup *b = sqlite3_backup_init(dst, "main", s->db, "main");
        if (!b) {
            rc = sqlite3_errcode(dst);
        } else {
            for (int waited = 0;; waited += 10) {
                rc = sqlite3_backup_step(b, -1);
                if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || waited >= OS_STORE_BUSY_MS) break;
                sqlite3_sleep(10);
            }
            int fin = sqlite3_backup_finish(b);
            if (rc == SQLITE_DONE) rc = fin;
        }
    }
    const char *msg = dst ? sqlite3_errmsg(dst) : sqlite3_errstr(rc);
    if (rc != SQLITE_OK) {
        st = OS_FAIL(s->ctx, OPSCHED_ERR_IO,
                     "database %s has schema %d; before upgrading it to %d a copy is kept, but "
                     "writing %s failed: %s (the database was not changed)",
                     s->path, version, OS_STORE_SCHEMA, bak, msg);
        goto done;
    }
    if (sqlite3_close(dst) != SQLITE_OK || rename(tmp, bak) != 0) {
        st = OS_FAIL(s->ctx, OPSCHED_ERR_IO,
                     "database %s: the copy %s could not be completed (the database was not "
                     "changed)",
                     s->path, bak);
        dst = NULL;
        goto done;
    }
    dst = NULL;
    sync_dir_of(bak);
done:
    sqlite3_close(dst);
    if (tmp) remove_db_files(tmp);
    free(tmp);
    free(bak);
    return st;
}

/* Looks at an existing file through a read-only connection: *version and
 * *stamped as os_store_identify gives them; *rc SQLite's extended result
 * code when that failed. */
static opsched_status probe(opsched_ctx *ctx, const char *path, int *version, int *stamped,
                            int *rc)
{
    opsched_status st;
    opsched_store *s = NULL;
    *rc = SQLITE_OK;
    OS_TRY_GOTO(st, os_store_connect(ctx, path, OS_CONNECT_READONLY, &s), done);
    st = os_store_identify(s, version, stamped);
    if (st != OPSCHED_OK) *rc = sqlite3_extended_errcode(s->db);
done:
    opsched_store_close(s);
    return st;
}

static opsched_status open_write(opsched_ctx *ctx, const char *path, opsched_store **out)
{
    opsched_status st;
    opsched_store *s = NULL;
    int exists = 0, version = 0, stamped = 0;
    off_t size = 0;
    OS_TRY(stat_file(ctx, path, &exists, &size));
    if (!exists) OS_TRY(create_new(ctx, path));
    int rc = SQLITE_OK;
    st = probe(ctx, path, &version, &stamped, &rc);
    if (st != OPSCHED_OK && rc != SQLITE_READONLY_ROLLBACK) return st;
    OS_TRY_GOTO(st, os_store_connect(ctx, path, 0, &s), done);
    if (rc == SQLITE_READONLY_ROLLBACK) {
        /* A hot journal: a write was interrupted in rollback-journal mode.
         * This connection rolls it back, as any SQLite client would, which
         * restores the last committed state; then the file is looked at. */
        opsched_ctx_clear_error(ctx);
        OS_TRY_GOTO(st, os_store_identify(s, &version, &stamped), done);
    }
    if (version < OS_STORE_SCHEMA || !stamped) {
        int from = version;
        if (version > 0 && version < OS_STORE_SCHEMA) OS_TRY_GOTO(st, keep_copy(s, version), done);
        OS_TRY_GOTO(st, build_schema(s, &from), done);
        if (from > 0 && from < OS_STORE_SCHEMA)
            os_log(ctx, OPSCHED_LOG_INFO,
                   "database %s upgraded from schema %d to %d; the file as it was is kept as "
                   "%s.bak-v%d",
                   path, from, OS_STORE_SCHEMA, path, version);
    }
    OS_TRY_GOTO(st, os_store_set_wal(s), done);
    *out = s;
    s = NULL;
done:
    opsched_store_close(s);
    return st;
}

/* A WAL file in a directory this process cannot write (or on a full disk,
 * where the -shm file cannot grow) has no -shm to coordinate through; when
 * nothing waits in a -wal file, the database file alone is the whole truth
 * and is read as immutable. */
static opsched_status connect_read(opsched_ctx *ctx, const char *path, opsched_store **out,
                                   int *version, int *stamped)
{
    opsched_status st;
    opsched_store *s = NULL;
    OS_TRY_GOTO(st, os_store_connect(ctx, path, OS_CONNECT_READONLY, &s), done);
    st = os_store_identify(s, version, stamped);
    if (st == OPSCHED_ERR_IO) {
        int xrc = sqlite3_extended_errcode(s->db), rc = xrc & 0xff;
        if (xrc == SQLITE_READONLY_ROLLBACK) {
            st = OS_FAIL(ctx, OPSCHED_ERR_IO,
                         "database %s cannot be read: a write to it was interrupted and its "
                         "journal %s-journal must be rolled back first, which reading must not "
                         "do; any opsched command that writes to it (or the sqlite3 shell) "
                         "does it",
                         path, path);
        } else if ((rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN || rc == SQLITE_IOERR ||
                    rc == SQLITE_FULL) &&
                   !has_wal(path)) {
            opsched_ctx_clear_error(ctx);
            opsched_store_close(s);
            s = NULL;
            OS_TRY_GOTO(st, os_store_connect(ctx, path, OS_CONNECT_IMMUTABLE, &s), done);
            st = os_store_identify(s, version, stamped);
        } else if (rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN) {
            st = OS_FAIL(ctx, OPSCHED_ERR_IO,
                         "database %s cannot be read here: its last writes are still in %s-wal "
                         "and this process cannot create %s-shm beside it; open it once where "
                         "it is writable (any opsched command does), then read it here",
                         path, path, path);
        }
    }
    if (st != OPSCHED_OK) goto done;
    *out = s;
    s = NULL;
done:
    opsched_store_close(s);
    return st;
}

static opsched_status open_read(opsched_ctx *ctx, const char *path, opsched_store **out)
{
    opsched_status st;
    opsched_store *s = NULL;
    int exists = 0, version = 0, stamped = 0;
    off_t size = 0;
    OS_TRY(stat_file(ctx, path, &exists, &size));
    if (!exists) return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND, "database %s does not exist", path);
    if (size == 0)
        return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                       "database %s is an empty file, not an opsched database (only a command "
                       "that writes, such as opsched sweep, initialises an empty file)",
                       path);
    OS_TRY_GOTO(st, connect_read(ctx, path, &s, &version, &stamped), done);
    if (version == 0) {
        st = OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                     "database %s is an SQLite database with no tables, not an opsched one", path);
        goto done;
    }
    if (version < OS_STORE_SCHEMA) {
        st = OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                     "database %s has schema %d and this opsched reads %d; a command that writes "
                     "to it (opsched sweep --db, opsched merge -o) upgrades it, keeping a copy as "
                     "%s.bak-v%d",
                     path, version, OS_STORE_SCHEMA, path, version);
        goto done;
    }
    *out = s;
    s = NULL;
done:
    opsched_store_close(s);
    return st;
}

opsched_status opsched_store_open(opsched_ctx *ctx, const char *path, opsched_store_mode mode,
                                  opsched_store **out)
{
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_open: out is NULL");
    *out = NULL;
    if (!path || !*path)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_open: no database path");
    if (mode == OPSCHED_STORE_READ_ONLY) return open_read(ctx, path, out);
    if (mode == OPSCHED_STORE_READ_WRITE) return open_write(ctx, path, out);
    return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_open: mode %d is not a mode",
                   (int)mode);
}
