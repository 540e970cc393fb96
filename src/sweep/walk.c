/*
 * walk.c - the configurations of a spec, one at a time: the entries'
 * candidates in the spec's order (grid.c, networks.c), each identified by
 * its signature, duplicates left out, and the iterator of sweep.h.
 *
 * Nothing of a configuration is kept but a 16-byte fingerprint: loading a
 * spec walks it once (the record walk), which finds every error a
 * combination can raise, counts what is left out, and builds the index:
 * one fingerprint per distinct configuration, sorted in the shard split's
 * order (the FNV-1a hash of the signature, then the signature), with the
 * number of the candidate that first produced it.  Every later walk builds
 * its candidates again and looks each up: the one whose number is the
 * first of its fingerprint is new, the others are duplicates, and the
 * position in the index is the shard rank.  So a walk holds one
 * configuration (one network, for networks entries) at a time, whatever
 * the size of the grids.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "sweep/sweep_impl.h"

_Static_assert(sizeof(os_sweep_fp) == 16, "a fingerprint is 16 bytes");

/* A second hash of a key, independent of FNV-1a (a multiplicative hash
 * with a murmur finish), never 0: an empty slot of the table has 0.  Two
 * keys are taken for one configuration when both hashes agree. */
static uint32_t key_check(const char *s)
{
    uint64_t h = 0x6a09e667f3bcc909ULL;
    for (; *s; s++) {
        h = (h + (unsigned char)*s) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    uint32_t c = (uint32_t)(h >> 32);
    return c ? c : 1;
}

void os_sweep_cursor_clear(os_sweep_cursor *c)
{
    opsched_graph_free(c->graph);
    free(c->runs_fused);
    memset(c, 0, sizeof(*c));
}

void os_sweep_walk_init(os_sweep_walk *w, const opsched_sweep_spec *spec, opsched_ctx *ctx,
                        int record)
{
    memset(w, 0, sizeof(*w));
    w->y.spec = spec;
    w->y.doc = spec->doc;
    w->y.ctx = ctx;
    w->record = record;
    w->rank = -1;
}

void os_sweep_walk_free(os_sweep_walk *w)
{
    if (!w) return;
    opsched_graph_free(w->graph);
    w->graph = NULL;
    os_sweep_cursor_clear(&w->cur);
    free(w->table);
    w->table = NULL;
}

/* ---- fingerprints ------------------------------------------------------- */

static size_t slot_of(uint64_t hash, uint32_t check, size_t size)
{
    return (size_t)(hash ^ (uint64_t)check * 0x9e3779b97f4a7c15ULL) & (size - 1);
}

/* The record walk's table: *is_new is 1 when (hash, check) was not there
 * (it is added, first = n). */
static opsched_status table_add(os_sweep_walk *w, uint64_t hash, uint32_t check, uint32_t n,
                                int conv, int *is_new)
{
    opsched_ctx *ctx = w->y.ctx;
    if ((size_t)(w->distinct + 1) * 2 > w->table_size) {
        size_t size = w->table_size ? w->table_size * 2 : 1024;
        os_sweep_fp *t = calloc(size, sizeof(*t));
        if (!t) return OS_NOMEM(ctx);
        for (size_t i = 0; i < w->table_size; i++) {
            if (!w->table[i].check) continue;
            size_t k = slot_of(w->table[i].hash, w->table[i].check, size);
            while (t[k].check) k = (k + 1) & (size - 1);
            t[k] = w->table[i];
        }
        free(w->table);
        w->table = t;
        w->table_size = size;
    }
    size_t k = slot_of(hash, check, w->table_size);
    for (; w->table[k].check; k = (k + 1) & (w->table_size - 1)) {
        if (w->table[k].hash == hash && w->table[k].check == check) {
            *is_new = 0;
            return OPSCHED_OK;
        }
    }
    w->table[k] = (os_sweep_fp){.hash = hash, .check = check, .first = n, .conv = conv != 0};
    *is_new = 1;
    return OPSCHED_OK;
}

/* The position of (hash, check) in the index; 0 when it is not there.
 * Entries of one hash are contiguous (in signature order). */
static int index_find(const opsched_sweep_spec *spec, uint64_t hash, uint32_t check, size_t *pos)
{
    size_t lo = 0, hi = spec->n_configs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (spec->index[mid].hash < hash) lo = mid + 1;
        else hi = mid;
    }
    for (; lo < spec->n_configs && spec->index[lo].hash == hash; lo++) {
        if (spec->index[lo].check == check) {
            *pos = lo;
            return 1;
        }
    }
    return 0;
}

static opsched_status changed(const os_sweep_walk *w)
{
    return OS_FAIL(w->y.ctx, OPSCHED_ERR_INVALID_ARG,
                   "%s: the configurations differ from those found when the spec was loaded "
                   "(a network file changed?); load the spec again", w->y.spec->origin);
}

/* ---- the walk ----------------------------------------------------------- */

/* Identifies candidate g: its signature into w, *is_new 1 when it is the
 * first occurrence of its configuration (the record walk adds it to the
 * table; the others find it in the index, and its rank). */
static opsched_status identify(os_sweep_walk *w, const opsched_graph *g, int fused, int *is_new)
{
    const opsched_sweep_spec *spec = w->y.spec;
    char key[sizeof(w->signature) + 16];
    *is_new = 0;
    OS_TRY(opsched_node_signature(g, 0, w->signature, sizeof(w->signature)));
    /* A fused configuration is an item of its own: another key. */
    snprintf(key, sizeof(key), "%s%s", w->signature, fused ? ";fused=relu" : "");
    uint64_t hash = os_sweep_hash(key) & spec->tuning.hash_mask;
    uint32_t check = key_check(key);
    if (w->candidates == OS_SWEEP_MAX_CANDIDATES)
        return OS_FAIL(w->y.ctx, OPSCHED_ERR_INVALID_ARG, "%s: more than %u configurations",
                       spec->origin, OS_SWEEP_MAX_CANDIDATES);
    uint32_t n = w->candidates++;
    if (w->record)
        return table_add(w, hash, check, n, opsched_graph_node(g, 0)->op == OPSCHED_OP_CONV,
                         is_new);
    size_t pos = 0;
    if (!index_find(spec, hash, check, &pos) || spec->index[pos].first > n) return changed(w);
    *is_new = spec->index[pos].first == n;
    w->rank = (int64_t)pos;
    return OPSCHED_OK;
}

opsched_status os_sweep_walk_next(os_sweep_walk *w)
{
    const opsched_sweep_spec *spec = w->y.spec;
    opsched_graph_free(w->graph);
    w->graph = NULL;
    w->rank = -1;
    while (w->entry < spec->n_entries) {
        const os_sweep_entry *e = &spec->entries[w->entry];
        opsched_graph *g = NULL;
        int fused = 0, is_new = 0;
        if (e->grid) OS_TRY(os_sweep_grid_next(&w->y, e->grid, &w->cur, &w->counts, &g, &fused));
        else OS_TRY(os_sweep_nets_next(&w->y, e->nets, &w->cur, &w->counts, &g, &fused));
        if (!g) {
            os_sweep_cursor_clear(&w->cur);
            w->entry++;
            continue;
        }
        opsched_status st = identify(w, g, fused, &is_new);
        if (st != OPSCHED_OK || !is_new) {
            opsched_graph_free(g);
            OS_TRY(st);
            w->counts.duplicates++;
            continue;
        }
        w->cur.added++;
        w->distinct++;
        w->graph = g;
        w->fused = fused;
        return OPSCHED_OK;
    }
    if (!w->record &&
        (w->candidates != spec->n_candidates || (size_t)w->distinct != spec->n_configs))
        return changed(w);
    return OPSCHED_OK;
}

/* ---- the index ---------------------------------------------------------- */

static int cmp_fp(const void *a, const void *b)
{
    const os_sweep_fp *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    return x->check < y->check ? -1 : x->check > y->check;
}

typedef struct tie {
    size_t pos;             /* in the index, before the ties are ordered */
    os_sweep_fp fp;
    char *signature;
    int fused;
} tie;

static int cmp_tie_pos(const void *a, const void *b)
{
    const tie *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int cmp_tie_order(const void *a, const void *b)
{
    const tie *x = a, *y = b;
    if (x->fp.hash != y->fp.hash) return x->fp.hash < y->fp.hash ? -1 : 1;
    int c = strcmp(x->signature, y->signature);
    return c ? c : x->fused - y->fused;
}

/* Configurations that share a hash are ordered by signature, then fusion
 * (the split's order).  Their signatures are not kept, so a second walk
 * finds them; with 64-bit hashes that is almost never needed. */
static opsched_status order_ties(opsched_sweep_spec *spec)
{
    size_t n_ties = 0, k = 0;
    for (size_t i = 0; i < spec->n_configs; i++)
        n_ties += (i > 0 && spec->index[i - 1].hash == spec->index[i].hash) ||
                  (i + 1 < spec->n_configs && spec->index[i + 1].hash == spec->index[i].hash);
    if (!n_ties) return OPSCHED_OK;
    tie *ties = calloc(n_ties, sizeof(*ties));
    if (!ties) return OS_NOMEM(spec->ctx);
    for (size_t i = 0; i < spec->n_configs; i++)
        if ((i > 0 && spec->index[i - 1].hash == spec->index[i].hash) ||
            (i + 1 < spec->n_configs && spec->index[i + 1].hash == spec->index[i].hash))
            ties[k++] = (tie){.pos = i, .fp = spec->index[i]};
    os_sweep_walk w;
    opsched_status st = OPSCHED_OK;
    os_sweep_walk_init(&w, spec, spec->ctx, 0);
    for (;;) {
        OS_TRY_GOTO(st, os_sweep_walk_next(&w), done);
        if (!w.graph) break;
        tie want = {.pos = (size_t)w.rank};
        tie *t = bsearch(&want, ties, n_ties, sizeof(*ties), cmp_tie_pos);
        if (t) {
            OS_TRY_GOTO(st, os_strdup(spec->ctx, w.signature, &t->signature), done);
            t->fused = w.fused;
        }
    }
    for (k = 0; k < n_ties; k++) {
        if (!ties[k].signature) {
            st = OS_FAIL(spec->ctx, OPSCHED_ERR_INVALID_ARG, "%s: a configuration was not met "
                         "again while ordering the shard split", spec->origin);
            goto done;
        }
    }
    /* The tied positions, in order, receive the tied entries sorted. */
    size_t *slots = malloc(n_ties * sizeof(*slots));
    if (!slots) {
        st = OS_NOMEM(spec->ctx);
        goto done;
    }
    for (k = 0; k < n_ties; k++) slots[k] = ties[k].pos;
    qsort(ties, n_ties, sizeof(*ties), cmp_tie_order);
    for (k = 0; k < n_ties; k++) spec->index[slots[k]] = ties[k].fp;
    free(slots);
done:
    os_sweep_walk_free(&w);
    for (k = 0; k < n_ties; k++) free(ties[k].signature);
    free(ties);
    return st;
}

opsched_status os_sweep_index_build(opsched_sweep_spec *spec)
{
    os_sweep_walk w;
    opsched_status st = OPSCHED_OK;
    os_sweep_walk_init(&w, spec, spec->ctx, 1);
    do {
        OS_TRY_GOTO(st, os_sweep_walk_next(&w), done);
    } while (w.graph);
    spec->counts = w.counts;
    spec->n_candidates = w.candidates;
    spec->n_configs = (size_t)w.distinct;
    /* The table becomes the index: its entries moved to the front, sorted. */
    size_t n = 0;
    for (size_t i = 0; i < w.table_size; i++)
        if (w.table[i].check) w.table[n++] = w.table[i];
    spec->index = w.table;
    w.table = NULL;
    if (n) {
        os_sweep_fp *shrunk = realloc(spec->index, n * sizeof(*spec->index));
        if (shrunk) spec->index = shrunk;
        qsort(spec->index, n, sizeof(*spec->index), cmp_fp);
    }
    st = order_ties(spec);
done:
    os_sweep_walk_free(&w);
    return st;
}

void os_sweep_shard_census(const opsched_sweep_spec *spec, int shard, int shards,
                           int64_t *configs, int64_t *convs)
{
    *configs = 0;
    *convs = 0;
    if (shards < 1) shards = 1;
    for (size_t i = (size_t)shard; i < spec->n_configs; i += (size_t)shards) {
        ++*configs;
        *convs += spec->index[i].conv;
    }
}

/* ---- the iterator ------------------------------------------------------- */

struct opsched_sweep_iter {
    os_sweep_walk w;
    int shard_index, shards;
    opsched_sweep_config config;
};

opsched_status opsched_sweep_iter_create(opsched_ctx *ctx, const opsched_sweep_spec *spec,
                                         int shard_index, int shard_count,
                                         opsched_sweep_iter **out)
{
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: no place for the iterator");
    *out = NULL;
    if (!spec) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: no spec");
    int shards = shard_count > 1 ? shard_count : 1;
    if (shard_count < 0 || shard_index < 0 || shard_index >= shards)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep: shard %d of %d does not exist "
                       "(shards are 0 .. count-1)", shard_index, shard_count);
    opsched_sweep_iter *it = calloc(1, sizeof(*it));
    if (!it) return OS_NOMEM(ctx);
    os_sweep_walk_init(&it->w, spec, ctx, 0);
    it->shard_index = shard_index;
    it->shards = shards;
    *out = it;
    return OPSCHED_OK;
}

opsched_status opsched_sweep_iter_next(opsched_sweep_iter *it, const opsched_sweep_config **out)
{
    if (!out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    if (!it) return OPSCHED_ERR_INVALID_ARG;
    for (;;) {
        OS_TRY(os_sweep_walk_next(&it->w));
        if (!it->w.graph) return OPSCHED_OK;
        if (it->w.rank % it->shards != it->shard_index) continue;
        opsched_sweep_config *c = &it->config;
        c->graph = it->w.graph;
        c->signature = it->w.signature;
        c->fused = it->w.fused;
        c->index = (int)(it->w.distinct - 1);
        c->shard_rank = (int)it->w.rank;
        *out = c;
        return OPSCHED_OK;
    }
}

void opsched_sweep_iter_counts(const opsched_sweep_iter *it, opsched_sweep_counts *out)
{
    if (!out) return;
    memset(out, 0, sizeof(*out));
    if (it) *out = it->w.counts;
}

void opsched_sweep_iter_free(opsched_sweep_iter *it)
{
    if (!it) return;
    os_sweep_walk_free(&it->w);
    free(it);
}
