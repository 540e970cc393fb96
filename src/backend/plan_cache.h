/*
 * plan_cache.h - a bounded map from text keys to a backend's planned
 * objects, least recently used out first (plain C, no vendor library:
 * the CUDA backend keeps its cuDNN graph-API convolution plans in one per
 * device, keyed by everything that decides the plan).
 *
 * The cache owns one reference to every value it holds and gives it back
 * through `release` when the value leaves (evicted, replaced, or the cache
 * freed); values a caller got from os_plan_cache_get are borrowed, so a
 * caller that keeps one past the next put takes its own reference first
 * (the values count their references themselves).
 *
 * Not thread-safe: a cache belongs to one device, and a device is used by
 * one thread at a time (see cuda_impl.h).
 */
#ifndef OS_PLAN_CACHE_H
#define OS_PLAN_CACHE_H

#include <stddef.h>

#include "opsched/backend.h"

#define OS_PLAN_CACHE_DEFAULT_MAX 4096

typedef struct os_plan_cache os_plan_cache;

/* max_entries 0: OS_PLAN_CACHE_DEFAULT_MAX.  NULL when out of memory. */
os_plan_cache *os_plan_cache_create(size_t max_entries, void (*release)(void *value));
/* Releases every value, then frees the cache; NULL is harmless. */
void os_plan_cache_free(os_plan_cache *c);

/* The value stored under key (borrowed), NULL when none; a found entry
 * becomes the most recently used.  Counts nothing: the caller decides
 * whether what it found serves (os_plan_cache_count). */
void *os_plan_cache_get(os_plan_cache *c, const char *key);
/* Stores value under key (copied), as the most recently used: a value
 * already there is released, and when the cache is full the least
 * recently used entry is evicted (released).  -1 when out of memory:
 * nothing changed, and value was not taken (not released). */
int os_plan_cache_put(os_plan_cache *c, const char *key, void *value);
/* Counts a lookup that was served (hit 1) or needed a new plan (hit 0). */
void os_plan_cache_count(os_plan_cache *c, int hit);
/* Zeros for NULL. */
void os_plan_cache_stats(const os_plan_cache *c, opsched_plan_cache_stats *out);

#endif /* OS_PLAN_CACHE_H */
