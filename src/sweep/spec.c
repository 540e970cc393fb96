/*
 * spec.c - sweep specs: reading the YAML document (libyaml's document API,
 * whose marks give every error its line), the top level and the measure:
 * section, the entries (kept with the document they point into), and the
 * built-in default spec.  walk.c goes through the configurations.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"
#include "sweep/sweep_impl.h"

static const char default_spec[] =
    "# The built-in sweep of `opsched sweep --default`: a small conv2d grid,\n"
    "# short measurements.\n"
    "measure:\n"
    "  warmup_ms: 50\n"
    "  warmup_iters: 3\n"
    "  iters: 10\n"
    "  min_ms: 100\n"
    "  algo: heuristic\n"
    "sweeps:\n"
    "  - op: conv2d\n"
    "    params:\n"
    "      batch: [1, 8]\n"
    "      in_channels: [32, 64, 128]\n"
    "      out_channels: [32, 64, 128]\n"
    "      height: [14, 28, 56]\n"
    "      width: same\n"
    "      kernel: [1, 3]\n"
    "      stride: [1, 2]\n"
    "    filters:\n"
    "      - out_channels >= in_channels\n";

const char *opsched_sweep_default_spec(void) { return default_spec; }

const char *const os_sweep_top_keys[] = {"measure", "description"};
const size_t os_sweep_n_top_keys = OS_ARRAY_LEN(os_sweep_top_keys);

/* ---- YAML helpers ------------------------------------------------------- */

opsched_status os_sweep_fail(const os_yaml *y, const yaml_node_t *n, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return OS_FAIL(y->ctx, OPSCHED_ERR_INVALID_ARG, "%s:%zu: %s", y->spec->origin,
                   n ? n->start_mark.line + 1 : (size_t)1, msg);
}

opsched_status os_sweep_fail_at(const os_yaml *y, const yaml_node_t *n, size_t column,
                                const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return OS_FAIL(y->ctx, OPSCHED_ERR_INVALID_ARG, "%s:%zu:%zu: %s", y->spec->origin,
                   n ? n->start_mark.line + 1 : (size_t)1, column, msg);
}

yaml_node_t *os_yaml_node(const os_yaml *y, int id)
{
    return id > 0 ? yaml_document_get_node(y->doc, id) : NULL;
}

const char *os_yaml_scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

opsched_status os_yaml_want(const os_yaml *y, const yaml_node_t *n, yaml_node_type_t type,
                            const char *what)
{
    static const char *const kinds[] = {"nothing", "a value", "a list", "a mapping"};
    if (n && n->type == type) return OPSCHED_OK;
    return os_sweep_fail(y, n, "%s must be %s, not %s", what, kinds[type],
                         n ? kinds[n->type] : "missing");
}

opsched_status os_yaml_int(const os_yaml *y, const yaml_node_t *n, int64_t lo, int64_t hi,
                           const char *what, int64_t *out)
{
    OS_TRY(os_yaml_want(y, n, YAML_SCALAR_NODE, what));
    const char *s = os_yaml_scalar(n);
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || (errno && errno != ERANGE))
        return os_sweep_fail(y, n, "%s must be an integer, not '%s'", what, s);
    if (errno == ERANGE)
        return os_sweep_fail(y, n, "%s must be in %lld..%lld, not %s (out of range)", what,
                             (long long)lo, (long long)hi, s);
    if (v < lo || v > hi)
        return os_sweep_fail(y, n, "%s must be in %lld..%lld, not %lld", what, (long long)lo,
                             (long long)hi, v);
    *out = v;
    return OPSCHED_OK;
}

static opsched_status yaml_double(const os_yaml *y, const yaml_node_t *n, double lo, double hi,
                                  const char *what, double *out)
{
    OS_TRY(os_yaml_want(y, n, YAML_SCALAR_NODE, what));
    const char *s = os_yaml_scalar(n);
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end != '\0') return os_sweep_fail(y, n, "%s must be a number, not '%s'", what, s);
    if (!(v >= lo && v <= hi)) return os_sweep_fail(y, n, "%s must be in %g..%g, not %s", what, lo, hi, s);
    *out = v;
    return OPSCHED_OK;
}

opsched_status os_yaml_bool(const os_yaml *y, const yaml_node_t *n, const char *what, int *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1", "True", "TRUE", "Yes", "On"};
    static const char *const no[] = {"false", "no", "off", "0", "False", "FALSE", "No", "Off"};
    OS_TRY(os_yaml_want(y, n, YAML_SCALAR_NODE, what));
    const char *s = os_yaml_scalar(n);
    for (size_t i = 0; i < OS_ARRAY_LEN(yes); i++) {
        if (strcmp(s, yes[i]) == 0 || strcmp(s, no[i]) == 0) {
            *out = strcmp(s, yes[i]) == 0;
            return OPSCHED_OK;
        }
    }
    return os_sweep_fail(y, n, "%s must be true or false, not '%s'", what, s);
}

opsched_status os_yaml_list(const os_yaml *y, int id, const char *what, yaml_node_item_t *one,
                            const yaml_node_item_t **ids, int *count)
{
    const yaml_node_t *n = os_yaml_node(y, id);
    if (n && n->type == YAML_SCALAR_NODE) {
        *one = id;
        *ids = one;
        *count = 1;
        return OPSCHED_OK;
    }
    OS_TRY(os_yaml_want(y, n, YAML_SEQUENCE_NODE, what));
    const yaml_node_item_t *a = n->data.sequence.items.start, *b = n->data.sequence.items.top;
    if (a == b) return os_sweep_fail(y, n, "%s is an empty list", what);
    for (const yaml_node_item_t *it = a; it < b; it++)
        if (os_yaml_node(y, *it)->type != YAML_SCALAR_NODE)
            return os_sweep_fail(y, os_yaml_node(y, *it), "%s: each item must be a single value",
                                 what);
    *ids = a;
    *count = (int)(b - a);
    return OPSCHED_OK;
}

static int key_in(const char *k, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(k, list[i]) == 0) return 1;
    return 0;
}

opsched_status os_yaml_check_keys(const os_yaml *y, const yaml_node_t *m,
                                  const char *const *allowed, size_t n_allowed, int top_level,
                                  const char *where)
{
    for (const yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        const yaml_node_t *kn = os_yaml_node(y, p->key);
        const char *k = os_yaml_scalar(kn);
        if (!k) return os_sweep_fail(y, kn, "%s: keys must be plain names", where);
        for (const yaml_node_pair_t *q = m->data.mapping.pairs.start; q < p; q++) {
            const char *prev = os_yaml_scalar(os_yaml_node(y, q->key));
            if (prev && strcmp(prev, k) == 0)
                return os_sweep_fail(y, kn, "%s: '%s' is given twice", where, k);
        }
        if (key_in(k, allowed, n_allowed) ||
            (top_level && key_in(k, os_sweep_top_keys, os_sweep_n_top_keys)))
            continue;
        char names[256] = "";
        for (size_t i = 0; i < n_allowed; i++) {
            strncat(names, i ? ", " : "", sizeof(names) - strlen(names) - 1);
            strncat(names, allowed[i], sizeof(names) - strlen(names) - 1);
        }
        return os_sweep_fail(y, kn, "%s: unknown key '%s' (known: %s)", where, k, names);
    }
    return OPSCHED_OK;
}

int os_yaml_get(const os_yaml *y, const yaml_node_t *m, const char *key)
{
    for (const yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        const char *k = os_yaml_scalar(os_yaml_node(y, p->key));
        if (k && strcmp(k, key) == 0) return p->value;
    }
    return 0;
}

/* ---- configurations ----------------------------------------------------- */

uint64_t os_sweep_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

/* ---- the measure: section ----------------------------------------------- */

static opsched_status parse_algos(const os_yaml *y, opsched_sweep_spec *spec, int id)
{
    yaml_node_item_t one;
    const yaml_node_item_t *ids;
    int n;
    OS_TRY(os_yaml_list(y, id, "measure: algo", &one, &ids, &n));
    if (n > OS_SWEEP_MAX_POLICIES)
        return os_sweep_fail(y, os_yaml_node(y, id), "measure: algo lists %d policies, more than "
                             "the limit of %d", n, OS_SWEEP_MAX_POLICIES);
    spec->algos = calloc((size_t)n, sizeof(*spec->algos));
    if (!spec->algos) return OS_NOMEM(y->ctx);
    for (int i = 0; i < n; i++) {
        const yaml_node_t *an = os_yaml_node(y, ids[i]);
        const char *a = os_yaml_scalar(an);
        if (!*a || strspn(a, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(a) || strlen(a) > 40)
            return os_sweep_fail(y, an, "measure: algo: '%s' is not a policy (heuristic, find, "
                                        "all) or an algorithm name", a);
        for (int k = 0; k < spec->n_algos; k++)
            if (strcmp(spec->algos[k], a) == 0)
                return os_sweep_fail(y, an, "measure: algo: '%s' is listed twice", a);
        OS_TRY(os_strdup(spec->ctx, a, &spec->algos[spec->n_algos]));
        spec->n_algos++;
    }
    return OPSCHED_OK;
}

static opsched_status parse_measure(const os_yaml *y, opsched_sweep_spec *spec,
                                    const yaml_node_t *m)
{
    static const char *const keys[] = {
        "warmup_ms", "warmup_iters", "iters",  "max_iters", "min_ms", "max_ms",
        "ci",        "sample_us",    "energy", "energy_window_ms", "idle_ms", "cooldown_ms",
        "cache",     "math",         "layout", "algo",  "seed"};
    int fixed = 0, ci_given = 0;
    opsched_measure_options *o = &spec->measure;
    OS_TRY(os_yaml_want(y, m, YAML_MAPPING_NODE, "measure"));
    OS_TRY(os_yaml_check_keys(y, m, keys, OS_ARRAY_LEN(keys), 0, "measure"));
    for (const yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        const char *k = os_yaml_scalar(os_yaml_node(y, p->key));
        const yaml_node_t *v = os_yaml_node(y, p->value);
        const char *s = os_yaml_scalar(v);
        char what[64];
        int64_t iv = 0;
        snprintf(what, sizeof(what), "measure: %s", k);
        if (strcmp(k, "algo") == 0) {
            OS_TRY(parse_algos(y, spec, p->value));
        } else if (strcmp(k, "energy") == 0) {
            OS_TRY(os_yaml_bool(y, v, what, &o->energy));
        } else if (strcmp(k, "warmup_iters") == 0 || strcmp(k, "iters") == 0 ||
                   strcmp(k, "max_iters") == 0) {
            OS_TRY(os_yaml_int(y, v, 1, 10000000, what, &iv));
            if (k[0] == 'w') o->warmup_iters = (int)iv;
            else if (k[0] == 'i') o->iters = (int)iv, fixed = 1;
            else o->max_iters = (int)iv;
        } else if (strcmp(k, "seed") == 0) {
            OS_TRY(os_yaml_int(y, v, 0, INT64_MAX, what, &iv));
            o->seed = (uint64_t)iv;
        } else if (strcmp(k, "cache") == 0) {
            OS_TRY(os_yaml_want(y, v, YAML_SCALAR_NODE, what));
            if (strcmp(s, "hot") == 0) o->cache = OPSCHED_CACHE_HOT;
            else if (strcmp(s, "cold") == 0) o->cache = OPSCHED_CACHE_COLD;
            else return os_sweep_fail(y, v, "measure: cache must be hot or cold, not '%s'", s);
        } else if (strcmp(k, "math") == 0) {
            OS_TRY(os_yaml_want(y, v, YAML_SCALAR_NODE, what));
            if (opsched_math_from_name(s, &o->plan.math) != OPSCHED_OK)
                return os_sweep_fail(y, v, "measure: math must be fp32, tf32, fp16 or bf16, not '%s'", s);
        } else if (strcmp(k, "layout") == 0) {
            OS_TRY(os_yaml_want(y, v, YAML_SCALAR_NODE, what));
            if (strcmp(s, "nchw") == 0) o->plan.layout = OPSCHED_LAYOUT_NCHW;
            else if (strcmp(s, "nhwc") == 0) o->plan.layout = OPSCHED_LAYOUT_NHWC;
            else return os_sweep_fail(y, v, "measure: layout must be nchw or nhwc, not '%s'", s);
        } else {
            double d = 0;
            /* ci in percent, as --ci takes it */
            OS_TRY(yaml_double(y, v, 0, strcmp(k, "ci") == 0 ? 50 : 3.6e6, what, &d));
            if (strcmp(k, "warmup_ms") == 0) o->warmup_ms = d;
            else if (strcmp(k, "min_ms") == 0) o->min_ms = d, fixed = 1;
            else if (strcmp(k, "max_ms") == 0) o->max_ms = d;
            else if (strcmp(k, "ci") == 0) o->ci_target = d / 100.0, ci_given = 1;
            else if (strcmp(k, "sample_us") == 0) o->sample_min_us = d;
            else if (strcmp(k, "energy_window_ms") == 0) o->energy_window_ms = d;
            else if (strcmp(k, "idle_ms") == 0) o->idle_ms = d;
            else o->cooldown_ms = d;
        }
    }
    if (o->max_iters < o->iters) o->max_iters = o->iters;
    /* A spec that fixes a sample budget (iters or min_ms) gets that budget,
     * unless it also asks for a confidence target. */
    if (fixed && !ci_given) o->ci_target = 0;
    return OPSCHED_OK;
}

/* ---- the top level ------------------------------------------------------ */

/* Parses entry e.  sizes[0] gets its grid combinations added, sizes[1]
 * its network loads (saturated).  With spec NULL the entry is only
 * checked, else appended to spec's entries. */
static opsched_status parse_entry(const os_yaml *y, opsched_sweep_spec *spec, const yaml_node_t *e,
                                  int top_level, int64_t *sizes)
{
    OS_TRY(os_yaml_want(y, e, YAML_MAPPING_NODE, "a sweep entry"));
    int has_op = os_yaml_get(y, e, "op") != 0, has_nets = os_yaml_get(y, e, "networks") != 0;
    if (has_op && has_nets)
        return os_sweep_fail(y, e, "a sweep entry has either op: (a parameter grid) or "
                                   "networks:, not both");
    if (!has_op && !has_nets)
        return os_sweep_fail(y, e, "a sweep entry needs op: (a parameter grid) or networks: "
                                   "(every distinct operator of these networks)");
    os_sweep_entry entry = {NULL, NULL};
    int64_t n = 0;
    if (has_op) OS_TRY(os_sweep_grid_parse(y, e, top_level, spec ? &entry.grid : NULL, &n));
    else OS_TRY(os_sweep_nets_parse(y, e, top_level, spec ? &entry.nets : NULL, &n));
    if (!os_add_ok(sizes[!has_op], n, &sizes[!has_op])) sizes[!has_op] = INT64_MAX;
    if (!spec) return OPSCHED_OK;
    opsched_status st = os_grow(y->ctx, (void **)&spec->entries, &spec->cap_entries,
                                spec->n_entries + 1, sizeof(*spec->entries));
    if (st != OPSCHED_OK) {
        os_sweep_grid_free(entry.grid);
        os_sweep_nets_free(entry.nets);
        return st;
    }
    spec->entries[spec->n_entries++] = entry;
    return OPSCHED_OK;
}

static opsched_status parse_root(const os_yaml *y, opsched_sweep_spec *spec,
                                 const yaml_node_t *root)
{
    static const char *const keys[] = {"measure", "description", "sweeps"};
    if (!root || (root->type == YAML_SCALAR_NODE && !*os_yaml_scalar(root)))
        return os_sweep_fail(y, root, "the spec is empty: it needs op: (a parameter grid), "
                                      "networks: or sweeps: (a list of those)");
    OS_TRY(os_yaml_want(y, root, YAML_MAPPING_NODE, "a sweep spec"));
    int measure = os_yaml_get(y, root, "measure"), sweeps = os_yaml_get(y, root, "sweeps");
    const yaml_node_t *desc = os_yaml_node(y, os_yaml_get(y, root, "description"));
    if (desc) OS_TRY(os_yaml_want(y, desc, YAML_SCALAR_NODE, "description"));
    if (measure) OS_TRY(parse_measure(y, spec, os_yaml_node(y, measure)));
    const yaml_node_t *list = NULL;
    if (sweeps) {
        OS_TRY(os_yaml_check_keys(y, root, keys, OS_ARRAY_LEN(keys), 0,
                                  "the top level (with sweeps:)"));
        list = os_yaml_node(y, sweeps);
        OS_TRY(os_yaml_want(y, list, YAML_SEQUENCE_NODE, "sweeps"));
        if (list->data.sequence.items.start == list->data.sequence.items.top)
            return os_sweep_fail(y, list, "sweeps is an empty list");
    }
    /* Every entry is checked and the work of all of them added up before
     * any is kept, so a spec asking for too much (an entry repeated
     * through aliases, say) is refused at once. */
    int64_t sizes[2] = {0, 0};
    if (!list) OS_TRY(parse_entry(y, NULL, root, 1, sizes));
    for (const yaml_node_item_t *it = list ? list->data.sequence.items.start : NULL;
         list && it < list->data.sequence.items.top; it++)
        OS_TRY(parse_entry(y, NULL, os_yaml_node(y, *it), 0, sizes));
    const os_sweep_tuning *t = &spec->tuning;
    if (sizes[0] > t->max_combinations)
        return os_sweep_fail(y, list ? list : root, "the spec's grids have %lld combinations in "
                             "all (aliases expanded), more than the limit of %lld; split the "
                             "spec", (long long)sizes[0], (long long)t->max_combinations);
    if (sizes[1] > t->max_network_loads)
        return os_sweep_fail(y, list ? list : root, "the spec's networks entries load %lld "
                             "networks (networks x batches x sizes, aliases expanded), more than "
                             "the limit of %lld; split the spec", (long long)sizes[1],
                             (long long)t->max_network_loads);
    if (!list) return parse_entry(y, spec, root, 1, sizes);
    for (const yaml_node_item_t *it = list->data.sequence.items.start;
         it < list->data.sequence.items.top; it++)
        OS_TRY(parse_entry(y, spec, os_yaml_node(y, *it), 0, sizes));
    return OPSCHED_OK;
}

/* The nodes under id once aliases are expanded (an alias counts as the
 * whole node it refers to, every time), saturated at INT64_MAX: memoised
 * per node, so a "billion laughs" document costs its own size to count.
 * busy marks the nodes on the current path: libyaml lets an alias refer to
 * a node that contains it, which no spec needs. */
static opsched_status expanded_size(const os_yaml *y, int id, int depth, int64_t *memo,
                                    unsigned char *busy)
{
    yaml_node_t *n = os_yaml_node(y, id);
    if (!n || memo[id - 1]) return OPSCHED_OK;
    if (busy[id - 1])
        return os_sweep_fail(y, n, "an alias refers to a node that contains it");
    if (depth > OS_SWEEP_MAX_DEPTH)
        return os_sweep_fail(y, n, "the spec nests more than %d levels deep", OS_SWEEP_MAX_DEPTH);
    int64_t size = 1;
    busy[id - 1] = 1;
    if (n->type == YAML_SEQUENCE_NODE) {
        for (const yaml_node_item_t *it = n->data.sequence.items.start;
             it < n->data.sequence.items.top; it++) {
            OS_TRY(expanded_size(y, *it, depth + 1, memo, busy));
            if (!os_add_ok(size, memo[*it - 1], &size)) size = INT64_MAX;
        }
    } else if (n->type == YAML_MAPPING_NODE) {
        for (const yaml_node_pair_t *p = n->data.mapping.pairs.start;
             p < n->data.mapping.pairs.top; p++) {
            OS_TRY(expanded_size(y, p->key, depth + 1, memo, busy));
            OS_TRY(expanded_size(y, p->value, depth + 1, memo, busy));
            if (!os_add_ok(size, memo[p->key - 1], &size) ||
                !os_add_ok(size, memo[p->value - 1], &size))
                size = INT64_MAX;
        }
    }
    busy[id - 1] = 0;
    memo[id - 1] = size;
    return OPSCHED_OK;
}

/* Refuses a document that is too large once its aliases are expanded,
 * before anything walks it. */
static opsched_status check_size(const os_yaml *y)
{
    size_t n = (size_t)(y->doc->nodes.top - y->doc->nodes.start);
    if (!n) return OPSCHED_OK;
    int64_t *memo = calloc(n, sizeof(*memo));
    unsigned char *busy = calloc(n, 1);
    opsched_status st = OPSCHED_OK;
    if (!memo || !busy) {
        st = OS_NOMEM(y->ctx);
        goto done;
    }
    OS_TRY_GOTO(st, expanded_size(y, 1, 0, memo, busy), done);
    if (memo[0] > OS_SWEEP_MAX_NODES)
        st = os_sweep_fail(y, os_yaml_node(y, 1), "the spec has %s%lld YAML nodes once its "
                           "aliases are expanded, more than the limit of %d",
                           memo[0] == INT64_MAX ? "at least " : "", (long long)memo[0],
                           OS_SWEEP_MAX_NODES);
done:
    free(memo);
    free(busy);
    return st;
}

/* Loads the one document of text; a YAML syntax error is a parse error
 * with libyaml's description and position. */
static opsched_status load_document(opsched_sweep_spec *spec, const char *text, size_t len,
                                    yaml_document_t *doc, int *loaded)
{
    yaml_parser_t parser;
    yaml_document_t extra;
    opsched_status st = OPSCHED_OK;
    *loaded = 0;
    if (!yaml_parser_initialize(&parser)) return OS_NOMEM(spec->ctx);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, doc)) {
        const char *problem = parser.problem ? parser.problem : "not valid YAML";
        if (parser.context)
            st = OS_FAIL(spec->ctx, OPSCHED_ERR_PARSE, "%s:%zu:%zu: %s (%s on line %zu)",
                         spec->origin, parser.problem_mark.line + 1,
                         parser.problem_mark.column + 1, problem, parser.context,
                         parser.context_mark.line + 1);
        else
            st = OS_FAIL(spec->ctx, OPSCHED_ERR_PARSE, "%s:%zu:%zu: %s", spec->origin,
                         parser.problem_mark.line + 1, parser.problem_mark.column + 1, problem);
        goto done;
    }
    *loaded = 1;
    if (!yaml_parser_load(&parser, &extra)) {
        st = OS_FAIL(spec->ctx, OPSCHED_ERR_PARSE, "%s:%zu: %s after the first document",
                     spec->origin, parser.problem_mark.line + 1,
                     parser.problem ? parser.problem : "not valid YAML");
        goto done;
    }
    if (yaml_document_get_root_node(&extra))
        st = OS_FAIL(spec->ctx, OPSCHED_ERR_INVALID_ARG,
                     "%s:%zu: a spec is one YAML document; this is a second one", spec->origin,
                     extra.start_mark.line + 1);
    yaml_document_delete(&extra);
done:
    yaml_parser_delete(&parser);
    return st;
}

/* Reads the document, its entries and their configurations (the walk of
 * loading: every combination is built once, so a spec that cannot work
 * fails here).  The document stays with the spec. */
static opsched_status parse_text(opsched_sweep_spec *spec)
{
    int loaded = 0;
    spec->doc = calloc(1, sizeof(*spec->doc));
    if (!spec->doc) return OS_NOMEM(spec->ctx);
    opsched_status st = load_document(spec, spec->text, strlen(spec->text), spec->doc, &loaded);
    if (!loaded) {
        free(spec->doc);
        spec->doc = NULL;
    }
    if (st != OPSCHED_OK) return st;
    os_yaml y = {.spec = spec, .doc = spec->doc, .ctx = spec->ctx};
    OS_TRY(check_size(&y));
    OS_TRY(parse_root(&y, spec, yaml_document_get_root_node(spec->doc)));
    if (spec->n_algos == 0) {
        spec->algos = calloc(1, sizeof(*spec->algos));
        if (!spec->algos) return OS_NOMEM(spec->ctx);
        OS_TRY(os_strdup(spec->ctx, "heuristic", &spec->algos[0]));
        spec->n_algos = 1;
    }
    return os_sweep_index_build(spec);
}

static opsched_status spec_new(opsched_ctx *ctx, const char *text, size_t len, const char *origin,
                               opsched_sweep_spec **out)
{
    if (len > OS_SWEEP_MAX_BYTES)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "%s: the spec has %zu bytes, more than the "
                       "limit of %d", origin ? origin : "<spec>", len, OS_SWEEP_MAX_BYTES);
    opsched_sweep_spec *spec = calloc(1, sizeof(*spec));
    if (!spec) return OS_NOMEM(ctx);
    spec->ctx = ctx;
    os_sweep_tuning_default(&spec->tuning);
    opsched_measure_options_default(&spec->measure);
    opsched_status st = os_strdup(ctx, origin ? origin : "<spec>", &spec->origin);
    if (st == OPSCHED_OK && !(spec->text = malloc(len + 1))) st = OS_NOMEM(ctx);
    if (st != OPSCHED_OK) {
        opsched_sweep_spec_free(spec);
        return st;
    }
    memcpy(spec->text, text, len);
    spec->text[len] = '\0';
    if (strlen(spec->text) != len) {
        opsched_sweep_spec_free(spec);
        return OS_FAIL(ctx, OPSCHED_ERR_PARSE, "%s: not a text file (it holds NUL bytes)",
                       origin ? origin : "<spec>");
    }
    *out = spec;
    return OPSCHED_OK;
}

void os_sweep_tuning_default(os_sweep_tuning *t)
{
    t->hash_mask = UINT64_MAX;
    t->max_combinations = OS_SWEEP_MAX_COMBINATIONS;
    t->max_network_loads = OS_SWEEP_MAX_NETWORK_LOADS;
}

opsched_status os_sweep_spec_parse_tuned(opsched_ctx *ctx, const char *text, size_t len,
                                         const char *origin, const os_sweep_tuning *t,
                                         opsched_sweep_spec **out)
{
    if (!out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    if (!text) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep spec: no text");
    opsched_sweep_spec *spec = NULL;
    OS_TRY(spec_new(ctx, text, len, origin, &spec));
    if (t) spec->tuning = *t;
    opsched_status st = parse_text(spec);
    if (st != OPSCHED_OK) {
        opsched_sweep_spec_free(spec);
        return st;
    }
    *out = spec;
    return OPSCHED_OK;
}

opsched_status opsched_sweep_spec_parse(opsched_ctx *ctx, const char *text, size_t len,
                                        const char *origin, opsched_sweep_spec **out)
{
    return os_sweep_spec_parse_tuned(ctx, text, len, origin, NULL, out);
}

opsched_status opsched_sweep_spec_load(opsched_ctx *ctx, const char *path, opsched_sweep_spec **out)
{
    if (!out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    if (!path) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "sweep spec: no path");
    char *text = NULL;
    size_t len = 0;
    opsched_sweep_spec *spec = NULL;
    opsched_status st;
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > OS_SWEEP_MAX_BYTES)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "%s: the spec has %lld bytes, more than the "
                       "limit of %d", path, (long long)sb.st_size, OS_SWEEP_MAX_BYTES);
    OS_TRY(os_file_read(ctx, path, "sweep spec", OS_FILE_MAX_SPEC, &text, &len));
    OS_TRY_GOTO(st, spec_new(ctx, text, len, path, &spec), done);
    const char *slash = strrchr(path, '/');
    if (slash) {
        size_t n = (size_t)(slash - path) + 1;
        spec->base_dir = malloc(n + 1);
        if (!spec->base_dir) {
            st = OS_NOMEM(ctx);
            goto done;
        }
        memcpy(spec->base_dir, path, n);
        spec->base_dir[n] = '\0';
    }
    OS_TRY_GOTO(st, parse_text(spec), done);
    *out = spec;
    spec = NULL;
done:
    opsched_sweep_spec_free(spec);
    free(text);
    return st;
}

void opsched_sweep_spec_free(opsched_sweep_spec *spec)
{
    if (!spec) return;
    for (size_t i = 0; i < spec->n_entries; i++) {
        os_sweep_grid_free(spec->entries[i].grid);
        os_sweep_nets_free(spec->entries[i].nets);
    }
    free(spec->entries);
    if (spec->doc) yaml_document_delete(spec->doc);
    free(spec->doc);
    for (int i = 0; i < spec->n_algos; i++) free(spec->algos[i]);
    free(spec->algos);
    free(spec->index);
    free(spec->origin);
    free(spec->base_dir);
    free(spec->text);
    free(spec);
}

/* ---- reading ------------------------------------------------------------ */

const char *opsched_sweep_spec_text(const opsched_sweep_spec *spec) { return spec ? spec->text : ""; }

const char *opsched_sweep_spec_origin(const opsched_sweep_spec *spec)
{
    return spec ? spec->origin : "";
}

const opsched_measure_options *opsched_sweep_spec_measure(const opsched_sweep_spec *spec)
{
    return spec ? &spec->measure : NULL;
}

int opsched_sweep_spec_num_algos(const opsched_sweep_spec *spec) { return spec ? spec->n_algos : 0; }

const char *opsched_sweep_spec_algo(const opsched_sweep_spec *spec, int i)
{
    return spec && i >= 0 && i < spec->n_algos ? spec->algos[i] : NULL;
}

int opsched_sweep_spec_num_configs(const opsched_sweep_spec *spec)
{
    return spec ? (int)spec->n_configs : 0;
}

void opsched_sweep_spec_counts(const opsched_sweep_spec *spec, opsched_sweep_counts *out)
{
    if (!out) return;
    memset(out, 0, sizeof(*out));
    if (spec) *out = spec->counts;
}
