/*
 * search.c - the searchers: sequential, greedy and the IOS dynamic program.
 *
 * The dynamic program works on one part (<= 64 units) at a time, with a
 * 64-bit set per state.  A state S is a set of units closed under
 * predecessors (within the part: earlier parts are done); its cost is the
 * best latency of running exactly S:
 *
 *     cost[S] = min over endings E of S of  cost[S - E] + latency(E)
 *
 * where an ending E is a non-empty subset of S with no edge from E to
 * S - E (so S - E is again a state).  E runs as one stage: its weakly
 * connected components are the groups (at most s of them, at most r units
 * each), or, when E is two or more convolutions that can merge, one merged
 * convolution - whichever costs less.  States are memoised in a hash map;
 * endings are enumerated by deciding units from the last to the first,
 * excluding a unit excluding all its ancestors, so only sets closed under
 * successors are visited, and a component larger than r stops a branch at
 * once.  Stage latencies are memoised twice: by the set within the part,
 * and by the stage's canonical form (the node signatures of its groups),
 * so identical stages in different parts cost one evaluation.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/util.h"
#include "opsched/measure.h"
#include "sched/sched_impl.h"

#define BIT(i) ((uint64_t)1 << (i))

static int popcount64(uint64_t x)
{
    return __builtin_popcountll(x);
}

static int lowest(uint64_t x)
{
    return __builtin_ctzll(x);
}

static int highest(uint64_t x)
{
    return 63 - __builtin_clzll(x);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- a hash map from non-zero 64-bit sets -------------------------------- */

typedef struct memo_val {
    double cost;
    uint64_t choice;       /* states: the best ending; stages: unused */
    int kind;              /* states: the ending's stage kind; stages: 1 legal, 0 not */
} memo_val;

typedef struct memo_map {
    size_t cap, used;      /* cap a power of two */
    uint64_t *keys;        /* 0: empty */
    memo_val *vals;
} memo_map;

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static void memo_release(memo_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

static memo_val *memo_find(const memo_map *m, uint64_t key)
{
    if (!m->cap) return NULL;
    for (size_t i = mix64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) return &m->vals[i];
        if (m->keys[i] == 0) return NULL;
    }
}

static opsched_status memo_put(opsched_ctx *ctx, memo_map *m, uint64_t key, const memo_val *v)
{
    if (2 * (m->used + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 256;
        uint64_t *keys = calloc(cap, sizeof(*keys));
        memo_val *vals = calloc(cap, sizeof(*vals));
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return OS_NOMEM(ctx);
        }
        for (size_t j = 0; j < m->cap; j++) {
            if (!m->keys[j]) continue;
            size_t i = mix64(m->keys[j]) & (cap - 1);
            while (keys[i]) i = (i + 1) & (cap - 1);
            keys[i] = m->keys[j];
            vals[i] = m->vals[j];
        }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t i = mix64(key) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->used++;
    m->keys[i] = key;
    m->vals[i] = *v;
    return OPSCHED_OK;
}

/* ---- stages by canonical form -------------------------------------------- */

/* Keys are int sequences in one pool; slots hold offsets into it. */
typedef struct canon_map {
    size_t cap, used;
    uint64_t *hash;        /* 0: empty */
    size_t *at;            /* key offset in pool */
    int *len;
    double *cost;
    int *pool;
    size_t pool_used, pool_cap;
} canon_map;

static void canon_release(canon_map *m)
{
    free(m->hash);
    free(m->at);
    free(m->len);
    free(m->cost);
    free(m->pool);
    memset(m, 0, sizeof(*m));
}

static uint64_t hash_ints(const int *k, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    for (int i = 0; i < n; i++) h = mix64(h ^ (uint64_t)(uint32_t)k[i]) + (uint64_t)i;
    return h ? h : 1;
}

static double *canon_find(const canon_map *m, const int *k, int n, uint64_t h)
{
    if (!m->cap) return NULL;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->hash[i] == 0) return NULL;
        if (m->hash[i] == h && m->len[i] == n &&
            memcmp(m->pool + m->at[i], k, (size_t)n * sizeof(int)) == 0)
            return &m->cost[i];
    }
}

static opsched_status canon_put(opsched_ctx *ctx, canon_map *m, const int *k, int n, uint64_t h,
                                double cost)
{
    if (2 * (m->used + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 256;
        uint64_t *hash = calloc(cap, sizeof(*hash));
        size_t *at = calloc(cap, sizeof(*at));
        int *len = calloc(cap, sizeof(*len));
        double *c = calloc(cap, sizeof(*c));
        if (!hash || !at || !len || !c) {
            free(hash);
            free(at);
            free(len);
            free(c);
            return OS_NOMEM(ctx);
        }
        for (size_t j = 0; j < m->cap; j++) {
            if (!m->hash[j]) continue;
            size_t i = m->hash[j] & (cap - 1);
            while (hash[i]) i = (i + 1) & (cap - 1);
            hash[i] = m->hash[j];
            at[i] = m->at[j];
            len[i] = m->len[j];
            c[i] = m->cost[j];
        }
        free(m->hash);
        free(m->at);
        free(m->len);
        free(m->cost);
        m->hash = hash;
        m->at = at;
        m->len = len;
        m->cost = c;
        m->cap = cap;
    }
    if (m->pool_used + (size_t)n > m->pool_cap) {
        size_t cap = m->pool_cap ? 2 * m->pool_cap : 4096;
        while (cap < m->pool_used + (size_t)n) cap *= 2;
        int *pool = realloc(m->pool, cap * sizeof(int));
        if (!pool) return OS_NOMEM(ctx);
        m->pool = pool;
        m->pool_cap = cap;
    }
    size_t i = h & (m->cap - 1);
    while (m->hash[i]) i = (i + 1) & (m->cap - 1);
    memcpy(m->pool + m->pool_used, k, (size_t)n * sizeof(int));
    m->hash[i] = h;
    m->at[i] = m->pool_used;
    m->len[i] = n;
    m->cost[i] = cost;
    m->pool_used += (size_t)n;
    m->used++;
    return OPSCHED_OK;
}

/* ---- the search's state ---------------------------------------------------- */

typedef struct search {
    const opsched_graph *g;
    opsched_ctx *ctx;
    const opsched_search_options *o;
    int r, s;
    os_units u;
    int *sig_id;              /* per node: its signature's rank (views -1) */
    canon_map canon;
    opsched_search_stats *stats;
    /* scratch for building a stage to cost */
    opsched_group groups[OS_SCHED_MAX_PART];
    int group_nodes[2 * OS_SCHED_MAX_PART];
    opsched_merge_member members[OS_SCHED_MAX_PART];
    int key[4 * OS_SCHED_MAX_PART + 8];
    /* the part being searched */
    int base, k;
    uint64_t pred[OS_SCHED_MAX_PART], succ[OS_SCHED_MAX_PART], anc[OS_SCHED_MAX_PART];
    uint64_t merge_ok[OS_SCHED_MAX_PART]; /* units pairwise mergeable with each */
    memo_map states, par_cost, merge_cost;
    /* endings collected for one state at a time */
    uint64_t *endings;
    size_t n_endings, cap_endings;
    opsched_status enum_status;
    /* endings enumerated in this attempt at the part, and the most allowed */
    int64_t spent, budget;
    int over;
    /* branch and bound (node_bound_ms given): per unit of the part */
    int bound;
    double bound_factor;
    double unit_bound[OS_SCHED_MAX_PART];
} search;

static opsched_status check_stop(search *x)
{
    if (x->o->stop && *x->o->stop)
        return OS_FAIL(x->ctx, OPSCHED_ERR_INTERRUPTED, "the search was stopped");
    return OPSCHED_OK;
}

/* Ranks of node signatures: equal signatures, equal ranks. */
typedef struct sig_entry {
    char *text;
    int node;
} sig_entry;

static int sig_cmp(const void *a, const void *b)
{
    return strcmp(((const sig_entry *)a)->text, ((const sig_entry *)b)->text);
}

static opsched_status rank_signatures(search *x)
{
    int n = opsched_graph_num_nodes(x->g);
    x->sig_id = malloc(((size_t)n + 1) * sizeof(int));
    sig_entry *e = calloc((size_t)n + 1, sizeof(*e));
    opsched_status st = OPSCHED_OK;
    int m = 0;
    if (!x->sig_id || !e) {
        st = OS_NOMEM(x->ctx);
        goto done;
    }
    char buf[4096];
    for (int i = 0; i < n; i++) {
        x->sig_id[i] = -1;
        if (x->u.unit_of_node[i] < 0) continue;
        OS_TRY_GOTO(st, opsched_node_signature(x->g, i, buf, sizeof(buf)), done);
        e[m].text = strdup(buf);
        e[m].node = i;
        if (!e[m].text) {
            st = OS_NOMEM(x->ctx);
            goto done;
        }
        m++;
    }
    if (m) qsort(e, (size_t)m, sizeof(*e), sig_cmp);
    for (int i = 0, rank = -1; i < m; i++) {
        if (i == 0 || strcmp(e[i].text, e[i - 1].text) != 0) rank++;
        x->sig_id[e[i].node] = rank;
    }
done:
    for (int i = 0; e && i < m; i++) free(e[i].text);
    free(e);
    return st;
}

/* ---- stages from sets of units --------------------------------------------- */

/* The weakly connected components of set E (within the part), in order of
 * their lowest unit; returns their count. */
static int components(const search *x, uint64_t E, uint64_t *comp)
{
    int n = 0;
    while (E) {
        uint64_t c = BIT(lowest(E)), grown = c;
        do {
            c = grown;
            for (uint64_t b = c; b; b &= b - 1) {
                int i = lowest(b);
                grown |= (x->pred[i] | x->succ[i]) & E;
            }
        } while (grown != c);
        comp[n++] = c;
        E &= ~c;
    }
    return n;
}

/* Appends unit i's nodes (the node, then its fused Relu). */
static int unit_nodes(const search *x, int unit, int *out)
{
    const os_unit *un = &x->u.u[unit];
    out[0] = un->node;
    if (un->relu < 0) return 1;
    out[1] = un->relu;
    return 2;
}

/* Fills stage with E's components as groups, nodes in unit order. */
static void build_concurrent(search *x, uint64_t E, opsched_stage *stage)
{
    uint64_t comp[OS_SCHED_MAX_PART];
    int nc = components(x, E, comp), used = 0;
    memset(stage, 0, sizeof(*stage));
    stage->kind = OPSCHED_STAGE_CONCURRENT;
    stage->n_groups = nc;
    stage->groups = x->groups;
    stage->ms = -1;
    for (int c = 0; c < nc; c++) {
        x->groups[c].nodes = x->group_nodes + used;
        int len = 0;
        for (uint64_t b = comp[c]; b; b &= b - 1)
            len += unit_nodes(x, x->base + lowest(b), x->group_nodes + used + len);
        x->groups[c].n_nodes = len;
        used += len;
    }
}

static int group_key_cmp(const void *a, const void *b)
{
    const int *x = *(const int *const *)a, *y = *(const int *const *)b;
    int n = OS_MIN(x[0], y[0]);
    for (int i = 1; i <= n; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* The canonical key of a stage: its kind, then for each group (sorted)
 * its length and node signature ranks; for a merge, each member's conv
 * rank and Relu rank (sorted).  Writes it to x->key, returns the length. */
static int canonical_key(search *x, const opsched_stage *st)
{
    int tmp[4 * OS_SCHED_MAX_PART];
    const int *order[OS_SCHED_MAX_PART];
    int n = 0, used = 0, count;
    if (st->kind == OPSCHED_STAGE_CONCURRENT) {
        count = st->n_groups;
        for (int j = 0; j < count; j++) {
            order[j] = tmp + used;
            tmp[used++] = st->groups[j].n_nodes;
            for (int p = 0; p < st->groups[j].n_nodes; p++)
                tmp[used++] = x->sig_id[st->groups[j].nodes[p]];
        }
    } else {
        count = st->merge.n_members;
        for (int j = 0; j < count; j++) {
            const opsched_merge_member *mm = &st->merge.members[j];
            order[j] = tmp + used;
            tmp[used++] = 2;
            tmp[used++] = x->sig_id[mm->node];
            tmp[used++] = mm->relu >= 0 ? x->sig_id[mm->relu] : -1;
        }
    }
    qsort(order, (size_t)count, sizeof(order[0]), group_key_cmp);
    x->key[n++] = (int)st->kind;
    x->key[n++] = count;
    for (int j = 0; j < count; j++)
        for (int p = 0; p <= order[j][0]; p++) x->key[n++] = order[j][p];
    return n;
}

/* Costs stage st: from the canonical memo, else by the cost function. */
static opsched_status cost_stage(search *x, const opsched_stage *st, double *ms)
{
    int n = canonical_key(x, st);
    uint64_t h = hash_ints(x->key, n);
    double *hit = canon_find(&x->canon, x->key, n, h);
    if (hit) {
        x->stats->cost_cache_hits++;
        *ms = *hit;
        return OPSCHED_OK;
    }
    OS_TRY(check_stop(x));
    opsched_status status = x->o->cost(x->o->user, x->g, st, ms);
    x->stats->stage_evals++;
    if (status != OPSCHED_OK) return status;
    /* +inf is an answer (the device cannot run this stage); the search
     * never picks it.  NaN and negative costs are bugs of the caller. */
    if (!(*ms >= 0))
        return OS_FAIL(x->ctx, OPSCHED_ERR_INVALID_ARG,
                       "the stage cost function returned %g ms for a stage starting with '%s'",
                       *ms,
                       opsched_graph_node(x->g, st->kind == OPSCHED_STAGE_MERGE
                                                    ? st->merge.members[0].node
                                                    : st->groups[0].nodes[0])
                           ->name);
    return canon_put(x->ctx, &x->canon, x->key, n, h, *ms);
}

/* 1 when E is a set of two or more convolution units that merge; fills
 * stage. */
static int build_merge(search *x, uint64_t E, opsched_stage *stage)
{
    int n = popcount64(E);
    if (n < 2) return 0;
    int convs[OS_SCHED_MAX_PART] = {0}, i = 0, relu = -2, first = 0;
    for (uint64_t b = E; b; b &= b - 1) {
        int v = lowest(b);
        const os_unit *un = &x->u.u[x->base + v];
        if (relu != -2 && (un->relu >= 0) != relu) return 0;
        if (un->relu >= 0 && i > 0 &&
            !opsched_epilogue_same(opsched_graph_node(x->g, un->relu),
                                   opsched_graph_node(x->g, x->u.u[x->base + first].relu)))
            return 0; /* one merged convolution runs one activation */
        if (i == 0) first = v;
        relu = un->relu >= 0;
        convs[i++] = un->node;
    }
    memset(stage, 0, sizeof(*stage));
    if (os_merge_geometry(NULL, x->g, convs, n, &stage->merge, x->members) != OPSCHED_OK)
        return 0;
    i = 0;
    for (uint64_t b = E; b; b &= b - 1) x->members[i++].relu = x->u.u[x->base + lowest(b)].relu;
    stage->kind = OPSCHED_STAGE_MERGE;
    stage->ms = -1;
    return 1;
}

/* 1 when E has two or more units, each pairwise mergeable with the rest
 * (the cheap test before the merge's geometry). */
static int merge_candidate(const search *x, uint64_t E)
{
    if (popcount64(E) < 2) return 0;
    for (uint64_t b = E; b; b &= b - 1) {
        int v = lowest(b);
        if ((E & ~BIT(v) & ~x->merge_ok[v]) != 0) return 0;
    }
    return 1;
}

/* The latency of E as concurrent groups (kind 0) or merged (kind 1);
 * *legal 0 when E cannot merge. */
static opsched_status ending_cost(search *x, uint64_t E, int kind, double *ms, int *legal)
{
    memo_map *m = kind ? &x->merge_cost : &x->par_cost;
    memo_val *v = memo_find(m, E);
    *legal = 1;
    if (v) {
        if (v->kind) x->stats->cost_cache_hits++;
        *legal = v->kind;
        *ms = v->cost;
        return OPSCHED_OK;
    }
    opsched_stage stage;
    memo_val nv = {0, 0, 1};
    if (kind && !build_merge(x, E, &stage)) {
        nv.kind = 0;
        *legal = 0;
        return memo_put(x->ctx, m, E, &nv);
    }
    if (!kind) build_concurrent(x, E, &stage);
    OS_TRY(cost_stage(x, &stage, &nv.cost));
    *ms = nv.cost;
    return memo_put(x->ctx, m, E, &nv);
}

/* ---- endings ------------------------------------------------------------------ */

static void push_ending(search *x, uint64_t E)
{
    if (x->enum_status != OPSCHED_OK || x->over) return;
    if (++x->spent > x->budget) {
        x->over = 1;
        return;
    }
    if (x->n_endings == x->cap_endings) {
        size_t cap = x->cap_endings ? 2 * x->cap_endings : 256;
        uint64_t *grown = realloc(x->endings, cap * sizeof(*grown));
        if (!grown) {
            x->enum_status = OS_NOMEM(x->ctx);
            return;
        }
        x->endings = grown;
        x->cap_endings = cap;
    }
    x->endings[x->n_endings++] = E;
}

/* The component of unit v within E. */
static uint64_t component_of(const search *x, uint64_t E, int v)
{
    uint64_t c = BIT(v), grown = c;
    do {
        c = grown;
        for (uint64_t b = c; b; b &= b - 1) {
            int i = lowest(b);
            grown |= (x->pred[i] | x->succ[i]) & E;
        }
    } while (grown != c);
    return c;
}

/* Decides the highest undecided unit of `rest`: in E (when every
 * successor in the state is in E, which holds unless an excluded
 * successor removed it from rest) or out (and with it all its ancestors). */
static void enumerate(search *x, uint64_t rest, uint64_t E)
{
    if (x->over) return;
    if (!rest || popcount64(E) == x->r * x->s) {
        if (!E) return;
        uint64_t comp[OS_SCHED_MAX_PART];
        if (components(x, E, comp) <= x->s) push_ending(x, E);
        return;
    }
    int v = highest(rest);
    uint64_t in = E | BIT(v);
    if (popcount64(component_of(x, in, v)) <= x->r) enumerate(x, rest & ~BIT(v), in);
    enumerate(x, rest & ~BIT(v) & ~x->anc[v], E);
}

/* ---- the dynamic program ------------------------------------------------------ */

/* An ending with the rest of the schedule before it, and their bound. */
typedef struct candidate {
    uint64_t E;
    double rest, key;
} candidate;

static int candidate_cmp(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->E > y->E) - (x->E < y->E); /* a fixed order among equals */
}

/* What stage E costs at least: bound_factor x its longest group's sum of
 * the per-unit bounds (a merged convolution: its largest member's). */
static double stage_bound(const search *x, uint64_t E)
{
    uint64_t comp[OS_SCHED_MAX_PART];
    int n = components(x, E, comp);
    double longest = 0;
    for (int c = 0; c < n; c++) {
        double t = 0;
        for (uint64_t b = comp[c]; b; b &= b - 1) t += x->unit_bound[lowest(b)];
        if (t > longest) longest = t;
    }
    double single = 0;
    for (uint64_t b = E; b; b &= b - 1)
        if (x->unit_bound[lowest(b)] > single) single = x->unit_bound[lowest(b)];
    /* Merged or concurrent, a stage is at least its largest unit. */
    return x->bound_factor * (x->o->no_merge || !merge_candidate(x, E) ? longest : single);
}

static opsched_status solve(search *x, uint64_t S, double *out)
{
    if (!S) {
        *out = 0;
        return OPSCHED_OK;
    }
    memo_val *hit = memo_find(&x->states, S);
    if (hit) {
        *out = hit->cost;
        return OPSCHED_OK;
    }
    x->stats->states++;
    size_t from = x->n_endings;
    enumerate(x, S, 0);
    OS_TRY(x->enum_status);
    if (x->over) {
        /* Over budget: the caller splits the part; nothing is recorded on
         * the context. */
        x->n_endings = from;
        return OPSCHED_ERR_UNSUPPORTED;
    }
    size_t to = x->n_endings;
    memo_val best = {INFINITY, 0, 0};
    opsched_status st = OPSCHED_OK;
    candidate *cand = NULL;
    if (x->bound) {
        /* Branch and bound: every ending's rest first (states only, their
         * own stages bounded the same way), then the candidates in order of
         * rest plus the stage's lower bound; once that reaches the best
         * found, no later candidate can beat it and none is costed. */
        cand = malloc((to - from + 1) * sizeof(*cand));
        if (!cand) {
            x->n_endings = from;
            return OS_NOMEM(x->ctx);
        }
        for (size_t e = from; e < to && st == OPSCHED_OK; e++) {
            candidate *cd = &cand[e - from];
            cd->E = x->endings[e];
            st = solve(x, S & ~cd->E, &cd->rest);
            cd->key = cd->rest + stage_bound(x, cd->E);
        }
        if (st == OPSCHED_OK) qsort(cand, to - from, sizeof(*cand), candidate_cmp);
    }
    x->stats->endings += (int64_t)(to - from);
    for (size_t e = from; e < to && st == OPSCHED_OK; e++) {
        uint64_t E = cand ? cand[e - from].E : x->endings[e];
        double rest, c;
        int legal;
        if (cand) {
            if (cand[e - from].key >= best.cost) {
                x->stats->pruned += (int64_t)(to - e);
                break;
            }
            rest = cand[e - from].rest;
        } else {
            st = solve(x, S & ~E, &rest);
            if (st != OPSCHED_OK) break;
        }
        for (int kind = 0; kind < 2 && st == OPSCHED_OK; kind++) {
            if (kind == 1 && (x->o->no_merge || !merge_candidate(x, E))) break;
            st = ending_cost(x, E, kind, &c, &legal);
            if (st == OPSCHED_OK && legal && rest + c < best.cost) {
                best.cost = rest + c;
                best.choice = E;
                best.kind = kind;
            }
        }
    }
    /* The endings of this state were used; later states reuse the room. */
    x->n_endings = from;
    free(cand);
    if (st != OPSCHED_OK) return st;
    if (!best.choice) {
        /* Only when every candidate cost +inf (a singleton always is one). */
        int v = highest(S);
        return OS_FAIL(x->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "no stage that ends with '%s' (and %d other operators before it) can run "
                       "on the device: every candidate cost +inf",
                       opsched_graph_node(x->g, x->u.u[x->base + v].node)->name,
                       popcount64(S) - 1);
    }
    *out = best.cost;
    return memo_put(x->ctx, &x->states, S, &best);
}

static void part_setup(search *x, int base, int k)
{
    x->base = base;
    x->k = k;
    for (int i = 0; i < k; i++) {
        int gu = base + i;
        if (x->bound) {
            const os_unit *un = &x->u.u[gu];
            const double *nb = x->o->node_bound_ms;
            x->unit_bound[i] = (nb[un->node] > 0 ? nb[un->node] : 0) +
                               (un->relu >= 0 && nb[un->relu] > 0 ? nb[un->relu] : 0);
        }
        x->pred[i] = x->succ[i] = x->merge_ok[i] = 0;
        for (int q = x->u.pred_at[gu]; q < x->u.pred_at[gu + 1]; q++)
            if (x->u.pred[q] >= base && x->u.pred[q] < base + k) x->pred[i] |= BIT(x->u.pred[q] - base);
        for (int q = x->u.succ_at[gu]; q < x->u.succ_at[gu + 1]; q++)
            if (x->u.succ[q] >= base && x->u.succ[q] < base + k) x->succ[i] |= BIT(x->u.succ[q] - base);
        x->anc[i] = x->pred[i];
        for (uint64_t b = x->pred[i]; b; b &= b - 1) x->anc[i] |= x->anc[lowest(b)];
    }
    for (int i = 0; i < k; i++)
        for (int j = i + 1; j < k; j++)
            if (opsched_conv_mergeable(x->g, x->u.u[base + i].node, x->u.u[base + j].node)) {
                x->merge_ok[i] |= BIT(j);
                x->merge_ok[j] |= BIT(i);
            }
}

/* Appends E of the current part as a stage of sched. */
static opsched_status emit_stage(search *x, opsched_schedule *sched, uint64_t E, int kind,
                                 double ms)
{
    opsched_stage st;
    int idx;
    if (kind) {
        int convs[OS_SCHED_MAX_PART], relus[OS_SCHED_MAX_PART], n = 0;
        for (uint64_t b = E; b; b &= b - 1) {
            const os_unit *un = &x->u.u[x->base + lowest(b)];
            convs[n] = un->node;
            relus[n++] = un->relu;
        }
        OS_TRY(opsched_schedule_add_merge(sched, x->g, convs, relus, n, &idx));
    } else {
        build_concurrent(x, E, &st);
        OS_TRY(opsched_schedule_add_stage(sched, &idx));
        for (int j = 0; j < st.n_groups; j++)
            OS_TRY(opsched_schedule_add_group(sched, idx, st.groups[j].nodes, st.groups[j].n_nodes));
    }
    sched->stages[idx].ms = ms;
    return OPSCHED_OK;
}

static opsched_status search_part(search *x, opsched_schedule *sched, int base, int k,
                                  double *total)
{
    part_setup(x, base, k);
    memo_release(&x->states);
    memo_release(&x->par_cost);
    memo_release(&x->merge_cost);
    x->spent = 0;
    x->over = 0;
    uint64_t full = k == 64 ? ~(uint64_t)0 : BIT(k) - 1;
    double cost;
    opsched_status st = solve(x, full, &cost);
    if (st != OPSCHED_OK && x->over && k > 1) {
        /* Too wide to search whole within the budget: its halves in unit
         * order (each a valid cut of the part) one after the other.  Stage
         * costs found so far stay in the canonical memo. */
        x->over = 0;
        x->stats->splits++;
        int half = k / 2;
        OS_TRY(search_part(x, sched, base, half, total));
        return search_part(x, sched, base + half, k - half, total);
    }
    OS_TRY(st);
    x->stats->n_parts++;
    if (k > x->stats->largest_part) x->stats->largest_part = k;
    *total += cost;
    /* Walk the choices from the whole part back to nothing; stages come
     * out last first. */
    uint64_t chain[OS_SCHED_MAX_PART];
    int kinds[OS_SCHED_MAX_PART], n = 0;
    for (uint64_t S = full; S;) {
        const memo_val *v = memo_find(&x->states, S);
        chain[n] = v->choice;
        kinds[n++] = v->kind;
        S &= ~v->choice;
    }
    for (int i = n - 1; i >= 0; i--) {
        double ms;
        int legal;
        OS_TRY(ending_cost(x, chain[i], kinds[i], &ms, &legal));
        OS_TRY(emit_stage(x, sched, chain[i], kinds[i], ms));
    }
    return OPSCHED_OK;
}

static void search_release(search *x)
{
    os_units_release(&x->u);
    free(x->sig_id);
    canon_release(&x->canon);
    memo_release(&x->states);
    memo_release(&x->par_cost);
    memo_release(&x->merge_cost);
    free(x->endings);
}

/* ---- sequential and greedy ---------------------------------------------------- */

static opsched_status add_unit_group(opsched_schedule *sched, const os_units *u, int unit,
                                     int stage)
{
    int nodes[2] = {u->u[unit].node, u->u[unit].relu};
    return opsched_schedule_add_group(sched, stage, nodes, nodes[1] >= 0 ? 2 : 1);
}

static opsched_status sequential(const os_units *u, opsched_schedule *sched)
{
    for (int i = 0; i < u->n; i++) {
        int stage;
        OS_TRY(opsched_schedule_add_stage(sched, &stage));
        OS_TRY(add_unit_group(sched, u, i, stage));
    }
    return OPSCHED_OK;
}

/* Stage after stage: every unit whose predecessors are done, in unit
 * order, at most s of them. */
static opsched_status greedy(opsched_ctx *ctx, const os_units *u, int s, opsched_schedule *sched)
{
    int *waiting = malloc(((size_t)u->n + 1) * sizeof(int));
    int *ready = malloc(((size_t)u->n + 1) * sizeof(int));
    unsigned char *done = calloc((size_t)u->n + 1, 1);
    opsched_status st = OPSCHED_OK;
    if (!waiting || !ready || !done) {
        st = OS_NOMEM(ctx);
        goto out;
    }
    for (int i = 0; i < u->n; i++) waiting[i] = u->pred_at[i + 1] - u->pred_at[i];
    for (int finished = 0; finished < u->n;) {
        int nr = 0, stage;
        for (int i = 0; i < u->n && nr < s; i++)
            if (!done[i] && waiting[i] == 0) ready[nr++] = i;
        if (nr == 0) {
            st = OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "the graph has a cycle");
            goto out;
        }
        OS_TRY_GOTO(st, opsched_schedule_add_stage(sched, &stage), out);
        for (int j = 0; j < nr; j++) {
            OS_TRY_GOTO(st, add_unit_group(sched, u, ready[j], stage), out);
            done[ready[j]] = 1;
        }
        for (int j = 0; j < nr; j++)
            for (int q = u->succ_at[ready[j]]; q < u->succ_at[ready[j] + 1]; q++)
                waiting[u->succ[q]]--;
        finished += nr;
    }
out:
    free(waiting);
    free(ready);
    free(done);
    return st;
}

/* ---- the entry points --------------------------------------------------------- */

const char *opsched_searcher_name(opsched_searcher s)
{
    switch (s) {
    case OPSCHED_SEARCH_SEQUENTIAL: return "sequential";
    case OPSCHED_SEARCH_GREEDY: return "greedy";
    case OPSCHED_SEARCH_IOS: return "ios";
    }
    return "?";
}

opsched_status opsched_searcher_from_name(const char *name, opsched_searcher *out)
{
    for (int i = 0; i <= (int)OPSCHED_SEARCH_IOS; i++)
        if (name && strcmp(name, opsched_searcher_name((opsched_searcher)i)) == 0) {
            *out = (opsched_searcher)i;
            return OPSCHED_OK;
        }
    return OPSCHED_ERR_NOT_FOUND;
}

opsched_status opsched_schedule_cost(opsched_schedule *s, const opsched_graph *g,
                                     opsched_stage_cost_fn fn, void *user)
{
    double total = 0;
    for (int i = 0; i < s->n_stages; i++) {
        double ms;
        opsched_ctx_clear_error(s->ctx);
        OS_TRY(fn(user, g, &s->stages[i], &ms));
        if (!(ms >= 0))
            return OS_FAIL(s->ctx, OPSCHED_ERR_INVALID_ARG,
                           "the stage cost function returned %g ms for stage %d", ms, i + 1);
        if (isinf(ms)) {
            /* A cost function that knows why leaves the reason on the
             * context. */
            const char *why = opsched_ctx_last_error(s->ctx);
            char buf[768];
            snprintf(buf, sizeof buf, "%s", why && *why ? why : "");
            const opsched_stage *stg = &s->stages[i];
            const char *first = "?", *op = "?";
            if (stg->n_groups > 0 && stg->groups[0].n_nodes > 0) {
                const opsched_node *nd = opsched_graph_node(g, stg->groups[0].nodes[0]);
                first = nd->name;
                op = opsched_op_name(nd->op);
            }
            return OS_FAIL(s->ctx, OPSCHED_ERR_UNSUPPORTED,
                           "stage %d (from node '%s', %s) cannot run on the device (its cost "
                           "is +inf)%s%s",
                           i + 1, first, op, buf[0] ? ": " : "", buf);
        }
        s->stages[i].ms = ms;
        total += ms;
    }
    s->predicted_ms = total;
    return OPSCHED_OK;
}

opsched_status os_schedule_search(const opsched_graph *g, const opsched_search_options *o,
                                  int cut_blocks, opsched_schedule **out,
                                  opsched_search_stats *stats)
{
    opsched_ctx *ctx = opsched_graph_ctx(g);
    opsched_search_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof(*stats));
    *out = NULL;
    double t0 = now_s();
    search x;
    memset(&x, 0, sizeof(x));
    x.g = g;
    x.ctx = ctx;
    x.o = o;
    x.stats = stats;
    x.r = o->r ? o->r : 3;
    x.s = o->s ? o->s : 8;
    int max_part = o->max_block_ops ? o->max_block_ops : 50;
    if (x.r < 1 || x.r > OS_SCHED_MAX_PART || x.s < 1 || x.s > OS_SCHED_MAX_PART)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "r = %d and s = %d: each must be 1 to %d",
                       x.r, x.s, OS_SCHED_MAX_PART);
    if (max_part < 1 || max_part > OS_SCHED_MAX_PART)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "parts of %d operators: 1 to %d", max_part,
                       OS_SCHED_MAX_PART);
    if (o->searcher == OPSCHED_SEARCH_IOS && !o->cost)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "the ios searcher needs a stage cost function");
    if ((int)o->searcher < 0 || o->searcher > OPSCHED_SEARCH_IOS)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "unknown searcher %d", (int)o->searcher);

    opsched_schedule *sched = NULL;
    os_parts parts;
    memset(&parts, 0, sizeof(parts));
    opsched_status st;
    OS_TRY_GOTO(st, opsched_schedule_create(g, &sched), fail);
    OS_TRY_GOTO(st, opsched_schedule_set_string(sched, "searcher", opsched_searcher_name(o->searcher)),
                fail);
    OS_TRY_GOTO(st, os_units_build(g, &x.u), fail);
    if (o->searcher == OPSCHED_SEARCH_SEQUENTIAL) {
        OS_TRY_GOTO(st, sequential(&x.u, sched), fail);
    } else if (o->searcher == OPSCHED_SEARCH_GREEDY) {
        sched->s = x.s;
        OS_TRY_GOTO(st, greedy(ctx, &x.u, x.s, sched), fail);
    } else {
        sched->r = x.r;
        sched->s = x.s;
        OS_TRY_GOTO(st, rank_signatures(&x), fail);
        OS_TRY_GOTO(st, os_parts_build(ctx, &x.u, max_part, cut_blocks, &parts), fail);
        stats->n_blocks = parts.n_blocks;
        x.budget = o->max_part_endings > 0 ? o->max_part_endings : 100000;
        x.bound = o->node_bound_ms != NULL;
        x.bound_factor = o->bound_factor > 0 ? o->bound_factor : 1.0;
        double total = 0;
        for (int p = 0; p < parts.n_parts; p++) {
            int base = parts.part_at[p], k = parts.part_at[p + 1] - base;
            OS_TRY_GOTO(st, search_part(&x, sched, base, k, &total), fail);
        }
        sched->predicted_ms = total;
    }
    if (o->searcher != OPSCHED_SEARCH_IOS && o->cost)
        OS_TRY_GOTO(st, opsched_schedule_cost(sched, g, o->cost, o->user), fail);
    os_parts_release(&parts);
    search_release(&x);
    stats->seconds = now_s() - t0;
    *out = sched;
    return OPSCHED_OK;
fail:
    os_parts_release(&parts);
    search_release(&x);
    opsched_schedule_free(sched);
    stats->seconds = now_s() - t0;
    return st;
}

opsched_status opsched_schedule_search(const opsched_graph *g, const opsched_search_options *o,
                                       opsched_schedule **out, opsched_search_stats *stats)
{
    return os_schedule_search(g, o, 1, out, stats);
}
