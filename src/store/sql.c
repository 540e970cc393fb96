/*
 * sql.c - the store's SQLite plumbing: connecting, mapping SQLite result
 * codes to opsched statuses with a message that names the file and the
 * call, preparing and stepping statements, transactions and binding.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include "core/util.h"
#include "store/store_impl.h"

/* The space left to unprivileged users on the file system holding path,
 * as text ("1.5 MiB"), or "unknown". */
static void free_space(const char *path, char *buf, size_t size)
{
    char dir[4096];
    struct statvfs v;
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    if (statvfs(dir, &v) != 0) {
        snprintf(buf, size, "unknown");
        return;
    }
    double bytes = (double)v.f_bavail * (double)v.f_frsize;
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        u++;
    }
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

opsched_status os_store_fail(opsched_store *s, int rc, const char *call, const char *file, int line)
{
    const char *path = s->path ? s->path : "?";
    const char *msg = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
    int sys = s->db ? sqlite3_system_errno(s->db) : 0;
    char space[64];
    int primary = rc & 0xff;
    if (primary == SQLITE_FULL || primary == SQLITE_IOERR) {
        /* SQLite's errno is not always the write's (a rollback may follow
         * it), so the space left and the size limit are stated whatever
         * the error, for the user to judge. */
        struct rlimit lim;
        char limit[96] = "";
        free_space(path, space, sizeof(space));
        if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
            snprintf(limit, sizeof(limit), "; the file size limit (ulimit -f) is %llu KiB",
                     (unsigned long long)(lim.rlim_cur / 1024));
        const char *what = primary == SQLITE_FULL || sys == ENOSPC || sys == EDQUOT
                               ? "disk full"
                               : sys == EFBIG ? "file size limit reached" : "I/O error";
        return os_fail(s->ctx, OPSCHED_ERR_IO, file, line,
                       "database %s: %s, %s free on its file system%s (%s: %s%s%s); what was "
                       "committed before is kept",
                       path, what, space, limit, call, msg, sys ? ", " : "",
                       sys ? strerror(sys) : "");
    }
    switch (primary) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return os_fail(s->ctx, OPSCHED_ERR_IO, file, line,
                       "database %s is locked by another process; gave up after waiting %d s "
                       "(%s: %s)",
                       path, OS_STORE_BUSY_MS / 1000, call, msg);
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
        if (sys != 0)
            return os_fail(s->ctx, OPSCHED_ERR_IO, file, line, "database %s: %s failed: %s (%s)",
                           path, call, msg, strerror(sys));
        return os_fail(s->ctx, OPSCHED_ERR_IO, file, line, "database %s: %s failed: %s", path, call,
                       msg);
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
        return os_fail(s->ctx, OPSCHED_ERR_PARSE, file, line,
                       "database %s is not an opsched database or is corrupt (%s: %s)", path, call,
                       msg);
    case SQLITE_NOMEM:
        return os_fail(s->ctx, OPSCHED_ERR_NOMEM, file, line, "database %s: %s: %s", path, call,
                       msg);
    default:
        return os_fail(s->ctx, OPSCHED_ERR_BACKEND, file, line, "database %s: %s failed: %s", path,
                       call, msg);
    }
}

/* "file:" and path with every byte but a few safe ones percent-encoded,
 * then "?immutable=1"; NULL when out of memory. */
static char *immutable_uri(const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(path);
    char *uri = malloc(5 + 3 * n + 13);
    if (!uri) return NULL;
    char *p = uri;
    memcpy(p, "file:", 5);
    p += 5;
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if (isalnum(*c) || *c == '/' || *c == '.' || *c == '-' || *c == '_') {
            *p++ = (char)*c;
        } else {
            *p++ = '%';
            *p++ = hex[*c >> 4];
            *p++ = hex[*c & 15];
        }
    }
    memcpy(p, "?immutable=1", 13);
    return uri;
}

opsched_status os_store_connect(opsched_ctx *ctx, const char *path, int flags, opsched_store **out)
{
    opsched_status st = OPSCHED_OK;
    opsched_store *s = calloc(1, sizeof(*s));
    char *uri = NULL;
    *out = NULL;
    if (!s) return OS_NOMEM(ctx);
    s->ctx = ctx;
    s->readonly = (flags & (OS_CONNECT_READONLY | OS_CONNECT_IMMUTABLE)) != 0;
    OS_TRY_GOTO(st, os_strdup(ctx, path, &s->path), done);
    int oflags = s->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
    if (!s->readonly && (flags & OS_CONNECT_CREATE)) oflags |= SQLITE_OPEN_CREATE;
    if (flags & OS_CONNECT_IMMUTABLE) {
        if (!(uri = immutable_uri(path))) {
            st = OS_NOMEM(ctx);
            goto done;
        }
        oflags |= SQLITE_OPEN_URI;
    }
    int rc = sqlite3_open_v2(uri ? uri : path, &s->db, oflags, NULL);
    if (rc != SQLITE_OK) {
        st = OS_STORE_FAIL(s, rc, "sqlite3_open_v2");
        goto done;
    }
    sqlite3_extended_result_codes(s->db, 1);
    rc = sqlite3_busy_timeout(s->db, OS_STORE_BUSY_MS);
    if (rc != SQLITE_OK) {
        st = OS_STORE_FAIL(s, rc, "sqlite3_busy_timeout");
        goto done;
    }
    /* SQLite silently falls back to read-only when the file is not
     * writable; say so now rather than at the first measurement. */
    if (!s->readonly && sqlite3_db_readonly(s->db, "main") == 1) {
        st = OS_FAIL(ctx, OPSCHED_ERR_IO, "database %s: the file is not writable", path);
        goto done;
    }
    if (s->readonly)
        OS_TRY_GOTO(st, OS_STORE_EXEC(s, "PRAGMA query_only = ON", "make the connection read-only"),
                    done);
    /* A reader writes no file at all: sorts and temporary indexes stay in
     * memory, so reading works on a full disk too. */
    if (s->readonly)
        OS_TRY_GOTO(st, OS_STORE_EXEC(s, "PRAGMA temp_store = MEMORY", "keep sorts in memory"),
                    done);
    *out = s;
    s = NULL;
done:
    free(uri);
    opsched_store_close(s);
    return st;
}

void opsched_store_close(opsched_store *s)
{
    if (!s) return;
    sqlite3_close_v2(s->db);
    free(s->path);
    free(s);
}

opsched_status os_store_prepare_at(opsched_store *s, const char *sql, sqlite3_stmt **out,
                                   const char *file, int line)
{
    *out = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, out, NULL);
    if (rc != SQLITE_OK) return os_store_fail(s, rc, "sqlite3_prepare_v2", file, line);
    return OPSCHED_OK;
}

opsched_status os_store_step_at(opsched_store *s, sqlite3_stmt *stmt, const char *what, int *row,
                                const char *file, int line)
{
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
        if (row) *row = rc == SQLITE_ROW;
        return OPSCHED_OK;
    }
    char call[160];
    snprintf(call, sizeof(call), "sqlite3_step (%s)", what);
    return os_store_fail(s, rc, call, file, line);
}

opsched_status os_store_exec_at(opsched_store *s, const char *sql, const char *what,
                                const char *file, int line)
{
    opsched_status st = OPSCHED_OK;
    sqlite3_stmt *stmt = NULL;
    const char *next = sql;
    while (next && *next) {
        const char *tail = NULL;
        int rc = sqlite3_prepare_v2(s->db, next, -1, &stmt, &tail);
        if (rc != SQLITE_OK) {
            st = os_store_fail(s, rc, "sqlite3_prepare_v2", file, line);
            goto done;
        }
        next = tail;
        if (!stmt) continue; /* whitespace or a comment */
        int row = 1;
        while (row)
            OS_TRY_GOTO(st, os_store_step_at(s, stmt, what, &row, file, line), done);
        sqlite3_finalize(stmt);
        stmt = NULL;
    }
done:
    sqlite3_finalize(stmt);
    return st;
}

opsched_status os_store_begin(opsched_store *s)
{
    if (s->readonly)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                       "database %s was opened read-only; this needs it opened for writing",
                       s->path);
    if (s->batch) {
        OS_TRY(OS_STORE_EXEC(s, "SAVEPOINT os_write", "begin a write inside the batch"));
        s->nested = 1;
        return OPSCHED_OK;
    }
    return OS_STORE_EXEC(s, "BEGIN IMMEDIATE", "begin transaction");
}

opsched_status os_store_commit(opsched_store *s)
{
    if (s->batch) {
        OS_TRY(OS_STORE_EXEC(s, "RELEASE os_write", "end a write inside the batch"));
        s->nested = 0;
        return OPSCHED_OK;
    }
    return OS_STORE_EXEC(s, "COMMIT", "commit");
}

void os_store_rollback(opsched_store *s)
{
    if (!s || !s->db || sqlite3_get_autocommit(s->db)) return;
    if (s->batch) {
        if (s->nested)
            sqlite3_exec(s->db, "ROLLBACK TO os_write; RELEASE os_write", NULL, NULL, NULL);
        s->nested = 0;
        return;
    }
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

opsched_status opsched_store_batch_begin(opsched_store *s)
{
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (s->batch)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "database %s: a batch is already open",
                       s->path);
    OS_TRY(os_store_begin(s));
    s->batch = 1;
    s->nested = 0;
    return OPSCHED_OK;
}

opsched_status opsched_store_batch_commit(opsched_store *s)
{
    if (!s) return OPSCHED_ERR_INVALID_ARG;
    if (!s->batch)
        return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG, "database %s: no batch is open", s->path);
    s->batch = 0;
    opsched_status st = os_store_commit(s);
    if (st != OPSCHED_OK) os_store_rollback(s);
    return st;
}

void opsched_store_batch_rollback(opsched_store *s)
{
    if (!s || !s->batch) return;
    s->batch = 0;
    s->nested = 0;
    os_store_rollback(s);
}

opsched_status os_store_user_version(opsched_store *s, int *out)
{
    opsched_status st;
    sqlite3_stmt *stmt = NULL;
    int row = 0;
    *out = 0;
    OS_TRY_GOTO(st, OS_STORE_PREPARE(s, "PRAGMA user_version", &stmt), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "read the schema version", &row), done);
    if (row) *out = sqlite3_column_int(stmt, 0);
done:
    sqlite3_finalize(stmt);
    return st;
}

opsched_status os_store_check_version(opsched_store *s, int version)
{
    if (version <= OS_STORE_SCHEMA) return OPSCHED_OK;
    return OS_FAIL(s->ctx, OPSCHED_ERR_VERSION,
                   "database %s was written by a newer opsched (schema %d, this build reads up "
                   "to %d)",
                   s->path, version, OS_STORE_SCHEMA);
}

void os_bind_begin(os_binder *b, sqlite3_stmt *stmt)
{
    b->stmt = stmt;
    b->idx = 0;
    b->rc = SQLITE_OK;
}

void os_bind_text(os_binder *b, const char *v)
{
    if (b->rc != SQLITE_OK) return;
    b->idx++;
    b->rc = v ? sqlite3_bind_text(b->stmt, b->idx, v, -1, SQLITE_TRANSIENT)
              : sqlite3_bind_null(b->stmt, b->idx);
}

void os_bind_text_opt(os_binder *b, const char *v)
{
    os_bind_text(b, v && *v ? v : NULL);
}

void os_bind_int(os_binder *b, int64_t v)
{
    if (b->rc != SQLITE_OK) return;
    b->rc = sqlite3_bind_int64(b->stmt, ++b->idx, (sqlite3_int64)v);
}

void os_bind_int_opt(os_binder *b, int64_t v)
{
    if (v < 0)
        os_bind_null(b);
    else
        os_bind_int(b, v);
}

void os_bind_double(os_binder *b, double v)
{
    if (b->rc != SQLITE_OK) return;
    b->idx++;
    b->rc = isnan(v) ? sqlite3_bind_null(b->stmt, b->idx) : sqlite3_bind_double(b->stmt, b->idx, v);
}

void os_bind_null(os_binder *b)
{
    if (b->rc != SQLITE_OK) return;
    b->rc = sqlite3_bind_null(b->stmt, ++b->idx);
}

opsched_status os_bind_end_at(opsched_store *s, const os_binder *b, const char *file, int line)
{
    if (b->rc == SQLITE_OK) return OPSCHED_OK;
    char call[64];
    snprintf(call, sizeof(call), "sqlite3_bind (parameter %d)", b->idx);
    return os_store_fail(s, b->rc, call, file, line);
}

double os_store_now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (double)time(NULL);
    return (double)ts.tv_sec + (double)(ts.tv_nsec / 1000) / 1e6;
}

/* The eleven statistics columns (n, min ... cv) and the twelve energy
 * columns (valid, method, ten values), in schema order; NULL where nothing
 * was measured. */
void os_bind_stats(os_binder *b, const opsched_stats *t)
{
    if (t->n <= 0) { /* nothing was timed: n and the ten statistics are NULL */
        for (int i = 0; i < 11; i++)
            os_bind_null(b);
        return;
    }
    os_bind_int(b, t->n);
    os_bind_double(b, t->min);
    os_bind_double(b, t->max);
    os_bind_double(b, t->mean);
    os_bind_double(b, t->median);
    os_bind_double(b, t->std);
    os_bind_double(b, t->p90);
    os_bind_double(b, t->p95);
    os_bind_double(b, t->p99);
    os_bind_double(b, t->trimmed_mean);
    os_bind_double(b, t->cv);
}

void os_bind_energy(os_binder *b, const opsched_energy *e)
{
    os_bind_int(b, e->valid != 0);
    if (!e->valid) { /* the method and the ten values are NULL */
        for (int i = 0; i < 11; i++)
            os_bind_null(b);
        return;
    }
    char method[sizeof(e->method) + 1];
    memcpy(method, e->method, sizeof(e->method));
    method[sizeof(e->method)] = '\0';
    os_bind_text_opt(b, method);
    os_bind_int(b, e->launches);
    os_bind_double(b, e->window_ms);
    os_bind_double(b, e->energy_j);
    os_bind_double(b, e->dynamic_energy_j);
    os_bind_double(b, e->energy_power_j);
    os_bind_double(b, e->power_mean_w);
    os_bind_double(b, e->idle_power_w);
    os_bind_double(b, e->temperature_c);
    os_bind_double(b, e->sm_clock_mhz);
    os_bind_double(b, e->power_limit_w);
}
