/*
 * shipped.c - measurements that ship with opsched as SQL text
 * (data/<name>/<table>.sql, written by scripts/export-data.py), built into
 * a database in the cache directory the first time they are used.
 *
 * Text, not a binary database, so that the data is reviewed and diffed
 * like code.  Each file starts with a header line,
 *     -- opsched data: table=<table> schema=<n> rows=<count>
 * and holds INSERTs into that one table only (an authorizer refuses
 * anything else; the one function allowed is char(), for line breaks in
 * texts), one row per line, foreign keys written as lookups by key (run
 * uuid, device backend and uuid, configuration signature), so the rows do
 * not depend on ids.  A row that cannot be inserted is found again by
 * inserting the statement's rows one at a time, and named by its line.  The whole build is one transaction, and the row count in each
 * header is checked, so a truncated file is an error, not a smaller data
 * set.
 *
 * The database's name carries a hash of the text (and of the schema this
 * build writes): "<name>-<16 hex digits>.db".  A file of that name is
 * complete, because it is linked into place only after its build
 * committed; a change to the text gives a new name, and the old files are
 * removed.  Nothing is ever renamed over a database another process may
 * have open.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "core/util.h"
#include "store/store_impl.h"

#ifndef OPSCHED_SOURCE_DATA_DIR
#define OPSCHED_SOURCE_DATA_DIR ""
#endif
#ifndef OPSCHED_INSTALL_DATA_DIR
#define OPSCHED_INSTALL_DATA_DIR ""
#endif
#ifndef OPSCHED_BUILD_CACHE_DIR
#define OPSCHED_BUILD_CACHE_DIR ""
#endif

/* In the order they are loaded: what a row refers to comes first.  The
 * tables from `collectives` on are optional (data sets from before them
 * lack the file). */
static const char *const tables[] = {"devices",      "runs",         "configs",    "measurements",
                                     "network_runs", "calibrations", "collectives"};
#define FIRST_OPTIONAL 6
#define N_TABLES ((int)OS_ARRAY_LEN(tables))

#define PATH_MAX_LEN 1024

static int is_dir(const char *p)
{
    struct stat st;
    return p && *p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int valid_name(const char *n)
{
    if (!n || !*n || n[0] == '.' || strlen(n) > 64) return 0;
    for (const char *c = n; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.') return 0;
    return 1;
}

static opsched_status copy_out(opsched_ctx *ctx, const char *s, char *buf, size_t size)
{
    if (!buf || size == 0) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "shipped data: no buffer");
    if ((size_t)snprintf(buf, size, "%s", s) >= size)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "shipped data: path too long: %s", s);
    return OPSCHED_OK;
}

opsched_status opsched_shipped_data_dir(opsched_ctx *ctx, char *buf, size_t size)
{
    const char *env = getenv("OPSCHED_DATA_DIR");
    if (env && *env) {
        if (!is_dir(env))
            return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND,
                           "OPSCHED_DATA_DIR=%s is not a directory", env);
        return copy_out(ctx, env, buf, size);
    }
    if (is_dir(OPSCHED_SOURCE_DATA_DIR)) return copy_out(ctx, OPSCHED_SOURCE_DATA_DIR, buf, size);
    if (is_dir(OPSCHED_INSTALL_DATA_DIR))
        return copy_out(ctx, OPSCHED_INSTALL_DATA_DIR, buf, size);
    return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND,
                   "no shipped data directory: set OPSCHED_DATA_DIR (looked in '%s' and '%s')",
                   OPSCHED_SOURCE_DATA_DIR, OPSCHED_INSTALL_DATA_DIR);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

opsched_status opsched_shipped_names(opsched_ctx *ctx, char *buf, size_t size)
{
    char dir[PATH_MAX_LEN], p[PATH_MAX_LEN + 300];
    char *names[256];
    int n = 0;
    opsched_status st = OPSCHED_OK;
    OS_TRY(opsched_shipped_data_dir(ctx, dir, sizeof(dir)));
    if (!buf || size == 0) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "shipped data: no buffer");
    buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot list: %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < (int)OS_ARRAY_LEN(names)) {
        if (!valid_name(e->d_name)) continue;
        snprintf(p, sizeof(p), "%s/%s/devices.sql", dir, e->d_name);
        if (access(p, R_OK) != 0) continue;
        OS_TRY_GOTO(st, os_strdup(ctx, e->d_name, &names[n]), done);
        n++;
    }
    qsort(names, (size_t)n, sizeof(names[0]), cmp_str);
    for (int i = 0; i < n; i++) {
        size_t used = strlen(buf);
        if ((size_t)snprintf(buf + used, size - used, "%s%s", i ? "," : "", names[i]) >=
            size - used) {
            st = OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "shipped data: names do not fit");
            goto done;
        }
    }
done:
    for (int i = 0; i < n; i++) free(names[i]);
    closedir(d);
    return st;
}

/* ---- the text ------------------------------------------------------------ */

typedef struct text_file {
    char path[PATH_MAX_LEN + 64];
    char *text;
    size_t size;
    int64_t rows;              /* from the header */
    const char *body;          /* after the header line */
} text_file;

static void free_texts(text_file *f)
{
    for (int i = 0; i < N_TABLES; i++) free(f[i].text);
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Reads and checks the header of every file; hashes them all, with the
 * schema this build writes (a new schema rebuilds the database). */
static opsched_status read_texts(opsched_ctx *ctx, const char *name, const char *dir,
                                 text_file *f, uint64_t *hash)
{
    uint64_t h = 14695981039346656037ull;
    int schema = OS_STORE_SCHEMA;
    h = fnv1a(h, &schema, sizeof(schema));
    for (int i = 0; i < N_TABLES; i++) {
        int w = snprintf(f[i].path, sizeof(f[i].path), "%s/%s.sql", dir, tables[i]);
        if (w < 0 || (size_t)w >= sizeof(f[i].path))
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                           "shipped data '%s': the folder's path is too long (%zu bytes at most)",
                           name, sizeof(f[i].path) - 16);
        if (i >= FIRST_OPTIONAL && access(f[i].path, F_OK) != 0) {
            f[i].text = NULL;
            continue;
        }
        if (access(f[i].path, F_OK) != 0)
            return OS_FAIL(ctx, OPSCHED_ERR_IO,
                           "shipped data '%s': %s is missing (every data set has devices, runs, "
                           "configs, measurements, network_runs and calibrations)",
                           name, f[i].path);
        OS_TRY(os_read_file(ctx, f[i].path, &f[i].text, &f[i].size));
        if (strlen(f[i].text) != f[i].size)
            return OS_FAIL(ctx, OPSCHED_ERR_PARSE, "%s: not a text file (it holds a NUL byte)",
                           f[i].path);
        char table[32] = "";
        int file_schema = 0, used = 0;
        long long rows = -1;
        if (sscanf(f[i].text, "-- opsched data: table=%31s schema=%d rows=%lld%n", table,
                   &file_schema, &rows, &used) != 3 ||
            (f[i].text[used] != '\n' && f[i].text[used] != '\r'))
            return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                           "%s:1: the first line must be '-- opsched data: table=%s schema=N "
                           "rows=N' (written by scripts/export-data.py)",
                           f[i].path, tables[i]);
        if (strcmp(table, tables[i]) != 0)
            return OS_FAIL(ctx, OPSCHED_ERR_PARSE, "%s:1: holds table '%s', expected '%s'",
                           f[i].path, table, tables[i]);
        if (file_schema < 1 || file_schema > OS_STORE_SCHEMA)
            return OS_FAIL(ctx, OPSCHED_ERR_VERSION,
                           "%s:1: written from schema %d; this build reads up to %d", f[i].path,
                           file_schema, OS_STORE_SCHEMA);
        if (rows < 0)
            return OS_FAIL(ctx, OPSCHED_ERR_PARSE, "%s:1: negative row count", f[i].path);
        f[i].rows = rows;
        f[i].body = f[i].text + used;
        h = fnv1a(h, tables[i], strlen(tables[i]) + 1);
        h = fnv1a(h, &f[i].size, sizeof(f[i].size));
        h = fnv1a(h, f[i].text, f[i].size);
    }
    *hash = h;
    return OPSCHED_OK;
}

/* ---- building ------------------------------------------------------------ */

/* Only INSERTs into the file's own table, and the reads its key lookups
 * and the foreign keys make. */
static int authorize(void *user, int action, const char *a, const char *b, const char *c,
                     const char *d)
{
    const char *table = user;
    (void)c;
    (void)d;
    switch (action) {
    case SQLITE_INSERT: return a && strcmp(a, table) == 0 ? SQLITE_OK : SQLITE_DENY;
    case SQLITE_SELECT:
    case SQLITE_READ: return SQLITE_OK;
    case SQLITE_FUNCTION: return b && strcmp(b, "char") == 0 ? SQLITE_OK : SQLITE_DENY;
    case SQLITE_SAVEPOINT: return SQLITE_OK; /* find_bad_row's, inside the build's transaction */
    default: return SQLITE_DENY;
    }
}

static int line_of(const char *text, const char *at)
{
    int line = 1;
    for (const char *p = text; p < at; p++)
        if (*p == '\n') line++;
    return line;
}

/* Statement [start, end) failed: inserts its rows one line at a time, each
 * "INSERT ... VALUES" + line, to name the line that fails (*line, and its
 * message in msg).  0 when no single row fails. */
static int find_bad_row(sqlite3 *db, const char *text, const char *start, const char *end,
                        int *line, char *msg, size_t size)
{
    const char *values = NULL;
    for (const char *p = start; p + 6 <= end; p++)
        if (strncmp(p, "VALUES", 6) == 0) {
            values = p + 6;
            break;
        }
    if (!values || sqlite3_exec(db, "SAVEPOINT probe", NULL, NULL, NULL) != SQLITE_OK) return 0;
    int found = 0;
    size_t head = (size_t)(values - start);
    for (const char *p = values; p < end && !found;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *q = p, *r = eol;
        while (q < r && isspace((unsigned char)*q)) q++;
        while (r > q && (isspace((unsigned char)r[-1]) || r[-1] == ',' || r[-1] == ';')) r--;
        if (q < r && *q == '(') {
            size_t n = head + 1 + (size_t)(r - q);
            char *sql = malloc(n + 2);
            if (!sql) break;
            memcpy(sql, start, head);
            sql[head] = ' ';
            memcpy(sql + head + 1, q, (size_t)(r - q));
            sql[n] = '\0';
            if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
                snprintf(msg, size, "%s", sqlite3_errmsg(db));
                *line = line_of(text, q);
                found = 1;
            }
            free(sql);
        }
        p = eol + 1;
    }
    sqlite3_exec(db, "ROLLBACK TO probe; RELEASE probe", NULL, NULL, NULL);
    return found;
}

/* Runs the statements of one file; fails with the file and line. */
static opsched_status load_text(opsched_store *s, const text_file *f, const char *table)
{
    opsched_ctx *ctx = s->ctx;
    opsched_status st = OPSCHED_OK;
    sqlite3_stmt *stmt = NULL;
    const char *next = f->body;
    int64_t rows = 0;
    sqlite3_set_authorizer(s->db, authorize, (void *)table);
    while (next && *next) {
        const char *tail = NULL;
        const char *start = next;
        while (*start && isspace((unsigned char)*start)) start++;
        int rc = sqlite3_prepare_v2(s->db, next, -1, &stmt, &tail);
        if (rc != SQLITE_OK) {
            if ((rc & 0xff) == SQLITE_AUTH)
                st = OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                             "%s:%d: only INSERT INTO %s is allowed in this file (%s)", f->path,
                             line_of(f->text, start), table, sqlite3_errmsg(s->db));
            else
                st = OS_FAIL(ctx, OPSCHED_ERR_PARSE, "%s:%d: %s", f->path,
                             line_of(f->text, start), sqlite3_errmsg(s->db));
            goto done;
        }
        next = tail;
        if (!stmt) continue; /* whitespace or comments */
        for (;;) {
            rc = sqlite3_step(stmt);
            if (rc == SQLITE_ROW) continue;
            if (rc == SQLITE_DONE) break;
            char msg[512];
            int line = line_of(f->text, start);
            snprintf(msg, sizeof(msg), "%s", sqlite3_errmsg(s->db));
            opsched_status kind = (rc & 0xff) == SQLITE_CONSTRAINT ? OPSCHED_ERR_PARSE
                                                                    : OPSCHED_ERR_IO;
            sqlite3_finalize(stmt);
            stmt = NULL;
            if (kind == OPSCHED_ERR_PARSE)
                find_bad_row(s->db, f->text, start, tail, &line, msg, sizeof(msg));
            st = OS_FAIL(ctx, kind, "%s:%d: %s", f->path, line, msg);
            goto done;
        }
        rows += sqlite3_changes(s->db);
        sqlite3_finalize(stmt);
        stmt = NULL;
    }
    if (rows != f->rows)
        st = OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                     "%s: %lld rows inserted, but its header says %lld (a truncated or edited "
                     "file?)",
                     f->path, (long long)rows, (long long)f->rows);
done:
    sqlite3_finalize(stmt);
    sqlite3_set_authorizer(s->db, NULL, NULL);
    return st;
}

static opsched_status build(opsched_ctx *ctx, const char *name, const char *dir,
                            const text_file *f, const char *fingerprint, const char *tmp)
{
    opsched_store *s = NULL;
    sqlite3_stmt *stmt = NULL;
    opsched_status st;
    os_binder b;
    OS_TRY(opsched_store_open(ctx, tmp, OPSCHED_STORE_READ_WRITE, &s));
    OS_TRY_GOTO(st, os_store_begin(s), done);
    for (int i = 0; i < N_TABLES; i++)
        if (f[i].text) OS_TRY_GOTO(st, load_text(s, &f[i], tables[i]), done);
    OS_TRY_GOTO(st,
                OS_STORE_EXEC(s,
                              "CREATE TABLE shipped_data (name TEXT NOT NULL, fingerprint TEXT"
                              " NOT NULL, data_dir TEXT NOT NULL, built_at REAL NOT NULL)",
                              "record the shipped data's origin"),
                done);
    OS_TRY_GOTO(st,
                OS_STORE_PREPARE(s, "INSERT INTO shipped_data VALUES (?, ?, ?, ?)", &stmt),
                done);
    os_bind_begin(&b, stmt);
    os_bind_text(&b, name);
    os_bind_text(&b, fingerprint);
    os_bind_text(&b, dir);
    os_bind_double(&b, os_store_now());
    OS_TRY_GOTO(st, OS_BIND_END(s, &b), done);
    OS_TRY_GOTO(st, OS_STORE_STEP(s, stmt, "record the shipped data's origin", NULL), done);
    OS_TRY_GOTO(st, os_store_commit(s), done);
done:
    sqlite3_finalize(stmt);
    if (st != OPSCHED_OK) os_store_rollback(s);
    opsched_store_close(s);
    return st;
}

static opsched_status cache_dir(opsched_ctx *ctx, char *buf, size_t size)
{
    if (os_user_cache_dir(buf, size) != 0) {
        if (!*OPSCHED_BUILD_CACHE_DIR)
            return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND,
                           "no cache directory for shipped data: set OPSCHED_CACHE_DIR");
        snprintf(buf, size, "%s", OPSCHED_BUILD_CACHE_DIR);
    }
    if (os_mkdir_p(buf) != 0)
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "cannot create the cache directory %s: %s", buf,
                       strerror(errno));
    return OPSCHED_OK;
}

/* "<name>-<16 hex>" followed by ".db", ".db-wal", ".db-shm" or ".db.models",
 * with a hash other than keep's: what an older text left behind. */
static int is_stale(const char *entry, const char *name, const char *keep)
{
    size_t n = strlen(name);
    if (strncmp(entry, name, n) != 0 || entry[n] != '-') return 0;
    const char *hex = entry + n + 1;
    for (int i = 0; i < 16; i++)
        if (!isxdigit((unsigned char)hex[i])) return 0;
    const char *rest = hex + 16;
    if (strcmp(rest, ".db") != 0 && strcmp(rest, ".db-wal") != 0 &&
        strcmp(rest, ".db-shm") != 0 && strcmp(rest, ".db.models") != 0)
        return 0;
    return strncmp(hex, keep, 16) != 0;
}

/* Best effort: a file that cannot be removed costs only space. */
static void remove_stale(const char *cache, const char *name, const char *keep)
{
    DIR *d = opendir(cache);
    if (!d) return;
    struct dirent *e;
    char p[PATH_MAX_LEN + 300], q[2 * PATH_MAX_LEN + 600];
    while ((e = readdir(d)) != NULL) {
        if (!is_stale(e->d_name, name, keep)) continue;
        snprintf(p, sizeof(p), "%s/%s", cache, e->d_name);
        if (is_dir(p)) { /* a models directory: flat */
            DIR *m = opendir(p);
            struct dirent *f;
            while (m && (f = readdir(m)) != NULL) {
                if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0) continue;
                snprintf(q, sizeof(q), "%s/%s", p, f->d_name);
                remove(q);
            }
            if (m) closedir(m);
            rmdir(p);
        } else {
            remove(p);
        }
    }
    closedir(d);
}

opsched_status opsched_shipped_database(opsched_ctx *ctx, const char *name, char *path,
                                        size_t size)
{
    char data[PATH_MAX_LEN], dir[PATH_MAX_LEN + 80], cache[PATH_MAX_LEN], names[512];
    char final[PATH_MAX_LEN + 128], tmp[PATH_MAX_LEN + 160], fp[17];
    text_file f[N_TABLES];
    uint64_t hash = 0;
    opsched_status st = OPSCHED_OK;
    memset(f, 0, sizeof(f));
    if (!path || size == 0)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_shipped_database: no buffer");
    path[0] = '\0';
    if (!valid_name(name))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "shipped data: '%s' is not a data set name (letters, digits, . _ -)",
                       name ? name : "(null)");
    OS_TRY(opsched_shipped_data_dir(ctx, data, sizeof(data)));
    snprintf(dir, sizeof(dir), "%s/%s", data, name);
    if (!is_dir(dir)) {
        if (opsched_shipped_names(ctx, names, sizeof(names)) != OPSCHED_OK) names[0] = '\0';
        return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND, "no shipped data '%s' in %s (there is: %s)",
                       name, data, names[0] ? names : "none");
    }
    OS_TRY_GOTO(st, read_texts(ctx, name, dir, f, &hash), done);
    snprintf(fp, sizeof(fp), "%016llx", (unsigned long long)hash);
    OS_TRY_GOTO(st, cache_dir(ctx, cache, sizeof(cache)), done);
    snprintf(final, sizeof(final), "%s/%s-%s.db", cache, name, fp);
    if (access(final, F_OK) != 0) {
        snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", final, (long)getpid());
        remove(tmp);
        os_log(ctx, OPSCHED_LOG_INFO, "building the shipped data '%s' (%s) into %s", name, dir,
               final);
        st = build(ctx, name, dir, f, fp, tmp);
        /* Linked, not renamed: a database built meanwhile by another
         * process (EEXIST) is complete and equal, and stays as it is. */
        if (st == OPSCHED_OK && link(tmp, final) != 0 && errno != EEXIST) {
            /* File systems without hard links: a rename, equally atomic. */
            if ((errno != EPERM && errno != ENOTSUP && errno != ENOSYS) || rename(tmp, final) != 0)
                st = OS_FAIL(ctx, OPSCHED_ERR_IO, "cannot create %s: %s", final, strerror(errno));
        }
        remove(tmp);
        if (st != OPSCHED_OK) goto done;
        remove_stale(cache, name, fp);
    }
    st = copy_out(ctx, final, path, size);
done:
    free_texts(f);
    return st;
}

opsched_status opsched_store_open_shipped(opsched_ctx *ctx, const char *name, opsched_store **out)
{
    char path[PATH_MAX_LEN + 128];
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_store_open_shipped: out is NULL");
    *out = NULL;
    OS_TRY(opsched_shipped_database(ctx, name, path, sizeof(path)));
    return opsched_store_open(ctx, path, OPSCHED_STORE_READ_ONLY, out);
}
