/*
 * plan_store.h - a persistent map from text keys to byte strings in one
 * SQLite file that several processes share: where the CUDA backend keeps
 * cuDNN's serialized execution plans, so that a later run loads a
 * runtime-compiled kernel instead of compiling it again (a network's
 * planning spends most of its seconds in those compiles).
 *
 * A cache, never a record.  Every failure (no directory, a read-only or
 * full disk, a file that is not a database or is corrupt, a lock held too
 * long) turns the store off for the process: lookups answer "none" and
 * writes are dropped, the caller builds what it would have built, and
 * os_plan_store_why says once what went wrong.  The store never deletes a
 * file it did not create.
 *
 * Not thread-safe: a store belongs to one device, used by one thread at a
 * time (see cuda_impl.h).
 */
#ifndef OS_PLAN_STORE_H
#define OS_PLAN_STORE_H

#include <stddef.h>

/* The most the file may hold before the store stops adding to it. */
#define OS_PLAN_STORE_MAX_BYTES ((long long)1 << 30)
/* The longest key (the scope included). */
#define OS_PLAN_STORE_MAX_KEY 4096

typedef struct os_plan_store os_plan_store;

/* Opens (creating it and its directory when missing) the store at path.
 * scope prefixes every key: what the stored bytes depend on beyond the
 * key (library versions, the device).  NULL when it cannot be opened or
 * out of memory; why (may be NULL) then says what went wrong. */
os_plan_store *os_plan_store_open(const char *path, const char *scope, char *why, size_t why_size);
/* NULL is harmless. */
void os_plan_store_close(os_plan_store *s);

/* A malloc'd copy of the bytes stored under key, *n their count; NULL when
 * there are none, the store is off or on any error. */
void *os_plan_store_get(os_plan_store *s, const char *key, size_t *n);
/* Stores n bytes under key (replacing what was there): 0 when stored, -1
 * when not (the store is off, or turned off now: os_plan_store_why). */
int os_plan_store_put(os_plan_store *s, const char *key, const void *bytes, size_t n);

/* Counters since open: lookups that found bytes, lookups that did not,
 * and entries written. */
void os_plan_store_counts(const os_plan_store *s, long *hits, long *misses, long *puts);
/* Why the store is off ("" while it works). */
const char *os_plan_store_why(const os_plan_store *s);

/* The file the CUDA backend uses: $OPSCHED_PLAN_STORE when set, else
 * "<cache>/cudnn-plans.sqlite", where <cache> is $OPSCHED_CACHE_DIR, else
 * $XDG_CACHE_HOME/opsched, else $HOME/.cache/opsched.  0 with the path in
 * buf; -1 when there is none (OPSCHED_PLAN_STORE=off turns the store off;
 * or no variable is set) or it does not fit. */
int os_plan_store_default_path(char *buf, size_t size);

#endif /* OS_PLAN_STORE_H */
