/*
 * plan_store.c - the persistent plan store (plan_store.h): one SQLite
 * table of (key, bytes), write-ahead logged so that processes on several
 * GPUs of a host read and write it at once, a busy wait of a few seconds
 * on a lock, and the store off at the first failure.
 */
#include "store/plan_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "core/file.h"

#define BUSY_MS 5000
#define WHY_LEN 512

struct os_plan_store {
    sqlite3 *db;
    sqlite3_stmt *get, *put;
    char *scope;
    char why[WHY_LEN];
    int off;
    long hits, misses, puts;
};

static void set_why(os_plan_store *s, const char *what, const char *detail)
{
    if (s->why[0]) return; /* the first failure is the one to tell */
    snprintf(s->why, sizeof(s->why), "the plan store %s: %s", what, detail ? detail : "");
}

/* Turns the store off for the process, saying why. */
static void turn_off(os_plan_store *s, const char *what)
{
    set_why(s, what, s->db ? sqlite3_errmsg(s->db) : "");
    s->off = 1;
}

/* mkdir -p of path's directory; 0 when it exists afterwards. */
static int make_parent(const char *path)
{
    char p[OS_PLAN_STORE_MAX_KEY];
    if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p)) return -1;
    char *slash = strrchr(p, '/');
    if (!slash || slash == p) return 0;
    *slash = '\0';
    return os_mkdir_p(p);
}

static int exec(os_plan_store *s, const char *sql)
{
    return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static void fail_open(os_plan_store *s, char *why, size_t why_size, const char *what)
{
    if (why && why_size)
        snprintf(why, why_size, "the plan store %s: %s", what,
                 s && s->db ? sqlite3_errmsg(s->db) : "out of memory");
    os_plan_store_close(s);
}

os_plan_store *os_plan_store_open(const char *path, const char *scope, char *why, size_t why_size)
{
    if (why && why_size) why[0] = '\0';
    if (!path || !*path || !scope) {
        if (why && why_size) snprintf(why, why_size, "the plan store: no path");
        return NULL;
    }
    os_plan_store *s = calloc(1, sizeof(*s));
    if (!s || !(s->scope = strdup(scope))) {
        free(s);
        if (why && why_size) snprintf(why, why_size, "the plan store: out of memory");
        return NULL;
    }
    if (make_parent(path) != 0) {
        if (why && why_size)
            snprintf(why, why_size, "the plan store: cannot make the directory of %s: %s", path,
                     strerror(errno));
        os_plan_store_close(s);
        return NULL;
    }
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        fail_open(s, why, why_size, "cannot be opened");
        return NULL;
    }
    (void)sqlite3_busy_timeout(s->db, BUSY_MS);
    /* WAL lets one process read while another writes; a file system
     * without it keeps the rollback journal, which works too. */
    (void)exec(s, "PRAGMA journal_mode=WAL");
    (void)exec(s, "PRAGMA synchronous=NORMAL");
    if (exec(s, "CREATE TABLE IF NOT EXISTS plans (key TEXT PRIMARY KEY, bytes BLOB NOT NULL, "
                "created REAL NOT NULL)") != 0 ||
        sqlite3_prepare_v2(s->db, "SELECT bytes FROM plans WHERE key = ?", -1, &s->get, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO plans VALUES (?, ?, ?)", -1, &s->put,
                           NULL) != SQLITE_OK) {
        fail_open(s, why, why_size, "is not usable");
        return NULL;
    }
    sqlite3_stmt *size = NULL;
    long long bytes = 0;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT page_count * page_size FROM pragma_page_count(), "
                           "pragma_page_size()",
                           -1, &size, NULL) == SQLITE_OK &&
        sqlite3_step(size) == SQLITE_ROW)
        bytes = sqlite3_column_int64(size, 0);
    sqlite3_finalize(size);
    if (bytes > OS_PLAN_STORE_MAX_BYTES) {
        /* Full: it still answers, it takes nothing more. */
        snprintf(s->why, sizeof(s->why),
                 "the plan store %s holds %lld bytes, over its bound of %lld: nothing more is "
                 "added (delete the file to start again)",
                 path, bytes, OS_PLAN_STORE_MAX_BYTES);
        sqlite3_finalize(s->put);
        s->put = NULL;
    }
    return s;
}

void os_plan_store_close(os_plan_store *s)
{
    if (!s) return;
    sqlite3_finalize(s->get);
    sqlite3_finalize(s->put);
    if (s->db) (void)sqlite3_close(s->db);
    free(s->scope);
    free(s);
}

static int bind_key(os_plan_store *s, sqlite3_stmt *st, const char *key)
{
    char full[OS_PLAN_STORE_MAX_KEY];
    int w = snprintf(full, sizeof(full), "%s|%s", s->scope, key);
    if (w < 0 || (size_t)w >= sizeof(full)) return -1;
    return sqlite3_bind_text(st, 1, full, w, SQLITE_TRANSIENT) == SQLITE_OK ? 0 : -1;
}

void *os_plan_store_get(os_plan_store *s, const char *key, size_t *n)
{
    *n = 0;
    if (!s || s->off || !key) return NULL;
    void *out = NULL;
    if (bind_key(s, s->get, key) != 0) {
        s->misses++;
        return NULL; /* a key too long is never stored either */
    }
    int rc = sqlite3_step(s->get);
    if (rc == SQLITE_ROW) {
        const void *b = sqlite3_column_blob(s->get, 0);
        int len = sqlite3_column_bytes(s->get, 0);
        if (b && len > 0 && (out = malloc((size_t)len)) != NULL) {
            memcpy(out, b, (size_t)len);
            *n = (size_t)len;
        }
    } else if (rc != SQLITE_DONE) {
        turn_off(s, "cannot be read");
    }
    sqlite3_reset(s->get);
    sqlite3_clear_bindings(s->get);
    if (out)
        s->hits++;
    else
        s->misses++;
    return out;
}

int os_plan_store_put(os_plan_store *s, const char *key, const void *bytes, size_t n)
{
    if (!s || s->off || !s->put || !key || !bytes || n == 0 || n > (size_t)OS_PLAN_STORE_MAX_BYTES)
        return -1;
    if (bind_key(s, s->put, key) != 0) return -1; /* too long: refused, the store stays on */
    int ok =
        sqlite3_bind_blob64(s->put, 2, bytes, (sqlite3_uint64)n, SQLITE_TRANSIENT) == SQLITE_OK &&
        sqlite3_bind_double(s->put, 3, (double)time(NULL)) == SQLITE_OK;
    int rc = ok ? sqlite3_step(s->put) : SQLITE_MISUSE;
    sqlite3_reset(s->put);
    sqlite3_clear_bindings(s->put);
    if (rc != SQLITE_DONE) {
        /* A full disk, a read-only file, a lock held past the wait: stop
         * writing (lookups may still answer). */
        set_why(s, "cannot be written", sqlite3_errmsg(s->db));
        sqlite3_finalize(s->put);
        s->put = NULL;
        return -1;
    }
    s->puts++;
    return 0;
}

void os_plan_store_counts(const os_plan_store *s, long *hits, long *misses, long *puts)
{
    *hits = s ? s->hits : 0;
    *misses = s ? s->misses : 0;
    *puts = s ? s->puts : 0;
}

const char *os_plan_store_why(const os_plan_store *s)
{
    return s ? s->why : "";
}

int os_plan_store_default_path(char *buf, size_t size)
{
    const char *own = getenv("OPSCHED_PLAN_STORE");
    char dir[OS_PLAN_STORE_MAX_KEY];
    int w;
    if (own && *own) {
        if (strcmp(own, "off") == 0) return -1;
        w = snprintf(buf, size, "%s", own);
    } else {
        if (os_user_cache_dir(dir, sizeof(dir)) != 0) return -1;
        w = snprintf(buf, size, "%s/cudnn-plans.sqlite", dir);
    }
    return w < 0 || (size_t)w >= size ? -1 : 0;
}
