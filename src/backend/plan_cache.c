/*
 * plan_cache.c - the bounded, least-recently-used plan cache of
 * plan_cache.h: a fixed table of hash chains (as many chains as the bound,
 * rounded up to a power of two, so chains stay short) and a doubly linked
 * recency list, most recent first.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/plan_cache.h"

typedef struct pc_entry {
    char *key;
    uint64_t hash;
    void *value;
    struct pc_entry *chain;      /* next in the same bucket */
    struct pc_entry *prev, *next; /* recency: prev is more recent */
} pc_entry;

struct os_plan_cache {
    pc_entry **buckets;
    size_t n_buckets; /* a power of two */
    pc_entry *mru, *lru;
    size_t n, max;
    void (*release)(void *value);
    opsched_plan_cache_stats stats;
};

static uint64_t hash_key(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

os_plan_cache *os_plan_cache_create(size_t max_entries, void (*release)(void *value))
{
    os_plan_cache *c = calloc(1, sizeof(*c));
    if (!c) return NULL;
    c->max = max_entries ? max_entries : OS_PLAN_CACHE_DEFAULT_MAX;
    c->n_buckets = 16;
    while (c->n_buckets < c->max && c->n_buckets < ((size_t)1 << 20))
        c->n_buckets *= 2;
    c->buckets = calloc(c->n_buckets, sizeof(*c->buckets));
    if (!c->buckets) {
        free(c);
        return NULL;
    }
    c->release = release;
    return c;
}

static void entry_release(os_plan_cache *c, pc_entry *e)
{
    if (c->release && e->value) c->release(e->value);
    free(e->key);
    free(e);
}

void os_plan_cache_free(os_plan_cache *c)
{
    if (!c) return;
    pc_entry *e = c->mru;
    while (e) {
        pc_entry *next = e->next;
        entry_release(c, e);
        e = next;
    }
    free(c->buckets);
    free(c);
}

static void list_unlink(os_plan_cache *c, pc_entry *e)
{
    if (e->prev) e->prev->next = e->next;
    else c->mru = e->next;
    if (e->next) e->next->prev = e->prev;
    else c->lru = e->prev;
    e->prev = e->next = NULL;
}

static void list_push_front(os_plan_cache *c, pc_entry *e)
{
    e->prev = NULL;
    e->next = c->mru;
    if (c->mru) c->mru->prev = e;
    c->mru = e;
    if (!c->lru) c->lru = e;
}

static pc_entry *find(const os_plan_cache *c, const char *key, uint64_t h)
{
    for (pc_entry *e = c->buckets[h & (c->n_buckets - 1)]; e; e = e->chain)
        if (e->hash == h && strcmp(e->key, key) == 0) return e;
    return NULL;
}

/* Takes e out of its bucket and the recency list (not freed). */
static void detach(os_plan_cache *c, pc_entry *e)
{
    pc_entry **pp = &c->buckets[e->hash & (c->n_buckets - 1)];
    while (*pp != e)
        pp = &(*pp)->chain;
    *pp = e->chain;
    list_unlink(c, e);
    c->n--;
}

void *os_plan_cache_get(os_plan_cache *c, const char *key)
{
    if (!c || !key) return NULL;
    pc_entry *e = find(c, key, hash_key(key));
    if (!e) return NULL;
    if (c->mru != e) {
        list_unlink(c, e);
        list_push_front(c, e);
    }
    return e->value;
}

int os_plan_cache_put(os_plan_cache *c, const char *key, void *value)
{
    if (!c || !key) return -1;
    uint64_t h = hash_key(key);
    pc_entry *e = find(c, key, h);
    if (e) {
        void *old = e->value;
        e->value = value;
        if (c->mru != e) {
            list_unlink(c, e);
            list_push_front(c, e);
        }
        if (old != value && c->release && old) c->release(old);
        return 0;
    }
    e = calloc(1, sizeof(*e));
    size_t len = strlen(key);
    char *k = malloc(len + 1);
    if (!e || !k) {
        free(e);
        free(k);
        return -1;
    }
    memcpy(k, key, len + 1);
    if (c->n >= c->max && c->lru) {
        pc_entry *victim = c->lru;
        detach(c, victim);
        entry_release(c, victim);
        c->stats.evictions++;
    }
    e->key = k;
    e->hash = h;
    e->value = value;
    pc_entry **b = &c->buckets[h & (c->n_buckets - 1)];
    e->chain = *b;
    *b = e;
    list_push_front(c, e);
    c->n++;
    return 0;
}

void os_plan_cache_count(os_plan_cache *c, int hit)
{
    if (!c) return;
    if (hit) c->stats.hits++;
    else c->stats.misses++;
}

void os_plan_cache_stats(const os_plan_cache *c, opsched_plan_cache_stats *out)
{
    if (!out) return;
    memset(out, 0, sizeof(*out));
    if (!c) return;
    *out = c->stats;
    out->entries = (int64_t)c->n;
}
