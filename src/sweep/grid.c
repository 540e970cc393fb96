/*
 * grid.c - `op:` sweep entries: every combination of the listed parameter
 * values of one operator configuration (opsched_opconfig_params names the
 * parameters), less those a filter rejects and those whose shapes cannot
 * work, in the order the parameters are written (the first varies slowest).
 * An entry is parsed once; a walk goes through its combinations with a
 * mixed-radix counter over the value lists (os_sweep_cursor), building one
 * combination at a time, so a grid costs memory for its values, never for
 * its combinations.
 *
 * A parameter's value is an integer, a list of integers, a range
 * {from, to, step} or {from, to, times}, or `same` for width and kernel_w
 * (the same as height and kernel).  Each value is checked on its own
 * before any combination is built, so a bad one is reported at its line.
 * `fuse: true` (conv2d) measures each configuration with a Relu after it,
 * as the one fused launch a network runs (a ";fused=relu" measurement).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "sweep/sweep_impl.h"

#define MAX_PARAMS OS_SWEEP_MAX_PARAMS
#define MAX_FILTERS 32
#define MAX_RANGE 10000

typedef enum cmp_op { CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_EQ, CMP_NE } cmp_op;

/* A parameter (index into the op's list) or a number. */
typedef struct operand {
    int param;      /* -1: a constant */
    int64_t value;
} operand;

/* One side of a filter: an operand, or two joined by arith
 * ("4 * in_channels", "height / stride"). */
typedef struct side {
    operand x, y;
    char arith;     /* 0 (x alone), '+', '-', '*', '/' or '%' */
    int at;         /* offset of arith in the filter's text: its column in messages */
} side;

typedef struct filter {
    side a, b;
    cmp_op op;
    const yaml_node_t *node;    /* the filter's scalar, for messages */
} filter;

typedef struct os_sweep_grid {
    const yaml_node_t *node;     /* the entry, for messages */
    const char *op;              /* in the document */
    const opsched_param *defs;   /* the op's parameters, with defaults */
    int n_defs;
    /* Parameters the entry lists, in its order: the counter's digits. */
    int n_axes;
    int axis_param[MAX_PARAMS];  /* index into defs */
    int64_t *values[MAX_PARAMS];
    int n_values[MAX_PARAMS];
    filter *filters;
    int n_filters;
    size_t cap_filters;
    int64_t limit;               /* 0: none */
    int fuse;                    /* conv2d: each configuration with a Relu after it, measured
                                  * as the one fused launch a network runs (fuse: true) */
} grid;

void os_sweep_grid_free(grid *g)
{
    if (!g) return;
    for (int i = 0; i < g->n_axes; i++) free(g->values[i]);
    free(g->filters);
    free(g);
}

static int find_param(const grid *g, const char *name, size_t len)
{
    for (int i = 0; i < g->n_defs; i++)
        if (strlen(g->defs[i].name) == len && strncmp(g->defs[i].name, name, len) == 0) return i;
    return -1;
}

static void param_names(const grid *g, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; i < g->n_defs; i++) {
        strncat(buf, i ? ", " : "", size - strlen(buf) - 1);
        strncat(buf, g->defs[i].name, size - strlen(buf) - 1);
    }
}

/* The parameter `same` stands for, or NULL when it has none. */
static const char *same_as(const char *param)
{
    if (strcmp(param, "width") == 0) return "height";
    if (strcmp(param, "kernel_w") == 0) return "kernel";
    return NULL;
}

static opsched_status push_value(const os_yaml *y, const yaml_node_t *n, grid *g, int axis,
                                 size_t *cap, int64_t v)
{
    if (g->n_values[axis] >= MAX_RANGE)
        return os_sweep_fail(y, n, "%s: more than %d values", g->defs[g->axis_param[axis]].name,
                             MAX_RANGE);
    OS_TRY(os_grow(y->ctx, (void **)&g->values[axis], cap, (size_t)g->n_values[axis] + 1,
                   sizeof(int64_t)));
    g->values[axis][g->n_values[axis]++] = v;
    return OPSCHED_OK;
}

/* Checks one value alone: out-of-range values are errors at their line. */
static opsched_status check_value(const os_yaml *y, const yaml_node_t *n, const grid *g,
                                  const char *name, int64_t v)
{
    opsched_ctx *ctx = y->ctx;
    opsched_param p = {name, v};
    opsched_graph *one = NULL;
    opsched_status st = opsched_opconfig_build(ctx, g->op, &p, 1, OPSCHED_F32, &one);
    opsched_graph_free(one);
    if (st == OPSCHED_ERR_INVALID_ARG) return os_sweep_fail(y, n, "%s", opsched_ctx_last_error(ctx));
    if (st == OPSCHED_ERR_SHAPE) opsched_ctx_clear_error(ctx);
    return st == OPSCHED_ERR_SHAPE ? OPSCHED_OK : st;
}

/* {from: a, to: b, step: s} or {from: a, to: b, times: f}. */
static opsched_status parse_range(const os_yaml *y, const yaml_node_t *m, grid *g, int axis,
                                  size_t *cap)
{
    static const char *const keys[] = {"from", "to", "step", "times"};
    const char *name = g->defs[g->axis_param[axis]].name;
    char what[96];
    int64_t from = 0, to = 0, step = 0, times = 0;
    snprintf(what, sizeof(what), "params: %s", name);
    OS_TRY(os_yaml_check_keys(y, m, keys, OS_ARRAY_LEN(keys), 0, what));
    int from_id = os_yaml_get(y, m, "from"), to_id = os_yaml_get(y, m, "to");
    int step_id = os_yaml_get(y, m, "step"), times_id = os_yaml_get(y, m, "times");
    if (!from_id || !to_id || (step_id != 0) == (times_id != 0))
        return os_sweep_fail(y, m, "%s: a range is {from: A, to: B, step: S} or {from: A, to: B, "
                                   "times: F}", what);
    char part[112];
    snprintf(part, sizeof(part), "%s: from", what);
    OS_TRY(os_yaml_int(y, os_yaml_node(y, from_id), 0, INT32_MAX, part, &from));
    snprintf(part, sizeof(part), "%s: to", what);
    OS_TRY(os_yaml_int(y, os_yaml_node(y, to_id), from, INT32_MAX, part, &to));
    snprintf(part, sizeof(part), "%s: step", what);
    if (step_id) OS_TRY(os_yaml_int(y, os_yaml_node(y, step_id), 1, INT32_MAX, part, &step));
    snprintf(part, sizeof(part), "%s: times", what);
    if (times_id) OS_TRY(os_yaml_int(y, os_yaml_node(y, times_id), 2, 1024, part, &times));
    if (times && from == 0) return os_sweep_fail(y, m, "%s: a range with times: starts above 0", what);
    /* Counted before any value is made: from, to < 2^31 and times <= 1024,
     * so nothing below leaves int64. */
    int64_t count = 0;
    if (step) {
        count = (to - from) / step + 1;
    } else {
        for (int64_t v = from; v <= to; v *= times) count++;
    }
    if (count > MAX_RANGE)
        return os_sweep_fail(y, m, "%s: the range has %lld values, more than the limit of %d", what,
                             (long long)count, MAX_RANGE);
    for (int64_t v = from; v <= to; v = step ? v + step : v * times) {
        OS_TRY(check_value(y, m, g, name, v));
        OS_TRY(push_value(y, m, g, axis, cap, v));
    }
    return OPSCHED_OK;
}

static opsched_status parse_axis(const os_yaml *y, const yaml_node_pair_t *pair, grid *g)
{
    const yaml_node_t *kn = os_yaml_node(y, pair->key), *vn = os_yaml_node(y, pair->value);
    const char *name = os_yaml_scalar(kn);
    char names[256];
    int param = name ? find_param(g, name, strlen(name)) : -1;
    if (param < 0) {
        param_names(g, names, sizeof(names));
        return os_sweep_fail(y, kn, "%s has no parameter '%s' (it has: %s)", g->op,
                             name ? name : "?", names);
    }
    for (int a = 0; a < g->n_axes; a++)
        if (g->axis_param[a] == param) return os_sweep_fail(y, kn, "params: '%s' is given twice", name);
    if (g->n_axes == MAX_PARAMS) return os_sweep_fail(y, kn, "too many parameters");
    int axis = g->n_axes++;
    size_t cap = 0;
    char what[96];
    g->axis_param[axis] = param;
    snprintf(what, sizeof(what), "params: %s", name);
    if (vn->type == YAML_MAPPING_NODE) return parse_range(y, vn, g, axis, &cap);
    yaml_node_item_t one;
    const yaml_node_item_t *ids;
    int n;
    OS_TRY(os_yaml_list(y, pair->value, what, &one, &ids, &n));
    for (int i = 0; i < n; i++) {
        const yaml_node_t *item = os_yaml_node(y, ids[i]);
        int64_t v = 0;
        if (strcmp(os_yaml_scalar(item), "same") == 0) {
            if (!same_as(name))
                return os_sweep_fail(y, item, "%s: only width and kernel_w can be 'same'", what);
        } else {
            OS_TRY(os_yaml_int(y, item, -1, INT32_MAX, what, &v));
            OS_TRY(check_value(y, item, g, name, v));
        }
        for (int k = 0; k < g->n_values[axis]; k++)
            if (g->values[axis][k] == v)
                return os_sweep_fail(y, item, "%s: %s is listed twice", what, os_yaml_scalar(item));
        OS_TRY(push_value(y, item, g, axis, &cap, v));
    }
    return OPSCHED_OK;
}

/* ---- filters ------------------------------------------------------------ */

typedef enum arith_result { ARITH_OK, ARITH_OVERFLOW, ARITH_DIV_ZERO } arith_result;

/* x op y in int64 without undefined behaviour: a result that does not fit
 * is ARITH_OVERFLOW, a zero divisor ARITH_DIV_ZERO.  x % -1 is 0 for every
 * x (the remainder exists even where the quotient, INT64_MIN / -1, does
 * not). */
static arith_result arith(char op, int64_t x, int64_t y, int64_t *out)
{
    switch (op) {
    case '+': return __builtin_add_overflow(x, y, out) ? ARITH_OVERFLOW : ARITH_OK;
    case '-': return __builtin_sub_overflow(x, y, out) ? ARITH_OVERFLOW : ARITH_OK;
    case '*': return __builtin_mul_overflow(x, y, out) ? ARITH_OVERFLOW : ARITH_OK;
    case '/':
        if (y == 0) return ARITH_DIV_ZERO;
        if (x == INT64_MIN && y == -1) return ARITH_OVERFLOW;
        *out = x / y;
        return ARITH_OK;
    case '%':
        if (y == 0) return ARITH_DIV_ZERO;
        *out = y == -1 ? 0 : x % y;
        return ARITH_OK;
    default: *out = x; return ARITH_OK;
    }
}

static const char *skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

/* The column (1-based) of text[offset] in the spec: the scalar's own
 * column, past its opening quote. */
static size_t column_of(const yaml_node_t *n, const char *text, const char *at)
{
    size_t quote = n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                   n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    return n->start_mark.column + 1 + quote + (size_t)(at - text);
}

/* Reads a parameter name or an integer at *s; 0 when there is neither,
 * -1 when the integer does not fit in 64 bits (*bad then points at it).
 * *unknown is set to the first name that is not a parameter. */
static int parse_operand(const grid *g, const char **s, operand *out, const char **unknown,
                         const char **bad)
{
    const char *p = *s;
    if (isalpha((unsigned char)*p) || *p == '_') {
        const char *start = p;
        while (isalnum((unsigned char)*p) || *p == '_') p++;
        out->param = find_param(g, start, (size_t)(p - start));
        out->value = 0;
        if (out->param < 0 && !*unknown) *unknown = start;
    } else {
        char *end = NULL;
        if (*p != '-' && *p != '+' && !isdigit((unsigned char)*p)) return 0;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p) return 0;
        if (errno == ERANGE) {
            *bad = p;
            *s = end;
            return -1;
        }
        out->param = -1;
        out->value = v;
        p = end;
    }
    *s = p;
    return 1;
}

static int parse_side(const grid *g, const char *text, const char **s, side *out,
                      const char **unknown, const char **bad)
{
    memset(out, 0, sizeof(*out));
    int r = parse_operand(g, s, &out->x, unknown, bad);
    if (r <= 0) return r;
    const char *p = skip_space(*s);
    if (!*p || !strchr("+-*/%", *p)) return 1;
    out->arith = *p;
    out->at = (int)(p - text);
    p = skip_space(p + 1);
    if ((r = parse_operand(g, &p, &out->y, unknown, bad)) <= 0) return r;
    *s = p;
    return 1;
}

static int parse_cmp(const char **s, cmp_op *out)
{
    static const struct { const char *text; cmp_op op; } ops[] = {
        {"<=", CMP_LE}, {">=", CMP_GE}, {"==", CMP_EQ}, {"!=", CMP_NE}, {"<", CMP_LT}, {">", CMP_GT}};
    for (size_t i = 0; i < OS_ARRAY_LEN(ops); i++) {
        size_t n = strlen(ops[i].text);
        if (strncmp(*s, ops[i].text, n) == 0) {
            *s += n;
            *out = ops[i].op;
            return 1;
        }
    }
    return 0;
}

/* Refuses constants whose result does not fit, whatever the combinations.
 * (A division by zero is not an error: it fails the condition.) */
static opsched_status check_constants(const os_yaml *y, const yaml_node_t *n, const side *sd)
{
    const char *text = os_yaml_scalar(n);
    int64_t r;
    if (!sd->arith || sd->x.param >= 0 || sd->y.param >= 0 ||
        arith(sd->arith, sd->x.value, sd->y.value, &r) != ARITH_OVERFLOW)
        return OPSCHED_OK;
    return os_sweep_fail_at(y, n, column_of(n, text, text + sd->at),
                            "filter '%s' overflows: %lld %c %lld", text, (long long)sd->x.value,
                            sd->arith, (long long)sd->y.value);
}

static opsched_status parse_filter(const os_yaml *y, const yaml_node_t *n, grid *g)
{
    const char *text = os_yaml_scalar(n);
    const char *s = skip_space(text), *unknown = NULL, *bad = NULL;
    filter f;
    memset(&f, 0, sizeof(f));
    f.node = n;
    if (g->n_filters == MAX_FILTERS) return os_sweep_fail(y, n, "more than %d filters", MAX_FILTERS);
    int ok = parse_side(g, text, &s, &f.a, &unknown, &bad) > 0;
    s = skip_space(s);
    ok = ok && parse_cmp(&s, &f.op);
    s = skip_space(s);
    ok = ok && parse_side(g, text, &s, &f.b, &unknown, &bad) > 0;
    s = skip_space(s);
    if (bad) {
        size_t len = strspn(bad + 1, "0123456789") + 1;
        return os_sweep_fail_at(y, n, column_of(n, text, bad),
                                "filter '%s': the integer %.*s is out of range (%lld..%lld)", text,
                                (int)len, bad, (long long)INT64_MIN, (long long)INT64_MAX);
    }
    if (!ok || *s)
        return os_sweep_fail(y, n, "filter '%s': expected 'A OP B' where A and B are a parameter "
                                   "or an integer, or two joined by + - * / %%, and OP is one of "
                                   "< <= > >= == !=", text);
    if (unknown) {
        size_t len = strspn(unknown, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        char names[256];
        param_names(g, names, sizeof(names));
        return os_sweep_fail(y, n, "filter '%s': %s has no parameter '%.*s' (it has: %s)", text,
                             g->op, (int)len, unknown, names);
    }
    OS_TRY(check_constants(y, n, &f.a));
    OS_TRY(check_constants(y, n, &f.b));
    OS_TRY(os_grow(y->ctx, (void **)&g->filters, &g->cap_filters, (size_t)g->n_filters + 1,
                   sizeof(*g->filters)));
    g->filters[g->n_filters++] = f;
    return OPSCHED_OK;
}

static opsched_status parse_filters(const os_yaml *y, int id, grid *g)
{
    yaml_node_item_t one;
    const yaml_node_item_t *ids;
    int n;
    OS_TRY(os_yaml_list(y, id, "filters", &one, &ids, &n));
    for (int i = 0; i < n; i++) OS_TRY(parse_filter(y, os_yaml_node(y, ids[i]), g));
    return OPSCHED_OK;
}

/* A parameter's value for filters: `same` (0) reads as what it mirrors. */
static int64_t effective(const grid *g, const int64_t *vals, int param)
{
    const char *mirror = same_as(g->defs[param].name);
    if (mirror && vals[param] == 0) return vals[find_param(g, mirror, strlen(mirror))];
    return vals[param];
}

static int64_t operand_value(const grid *g, const int64_t *vals, const operand *o)
{
    return o->param >= 0 ? effective(g, vals, o->param) : o->value;
}

/* A side's value; *defined is 0 when it divides by zero (the filter then
 * fails); a result that does not fit in 64 bits is an error naming it. */
static opsched_status side_value(const os_yaml *y, const grid *g, const filter *f, const side *sd,
                                 const int64_t *vals, int64_t *out, int *defined)
{
    int64_t a = operand_value(g, vals, &sd->x), b = operand_value(g, vals, &sd->y);
    arith_result r = arith(sd->arith, a, b, out);
    *defined = r != ARITH_DIV_ZERO;
    if (r != ARITH_OVERFLOW) return OPSCHED_OK;
    const char *text = os_yaml_scalar(f->node);
    return os_sweep_fail_at(y, f->node, column_of(f->node, text, text + sd->at),
                            "filter '%s' overflows: %lld %c %lld", text, (long long)a, sd->arith,
                            (long long)b);
}

/* *pass is 1 when every filter holds for vals. */
static opsched_status passes(const os_yaml *y, const grid *g, const int64_t *vals, int *pass)
{
    *pass = 0;
    for (int i = 0; i < g->n_filters; i++) {
        const filter *f = &g->filters[i];
        int64_t a = 0, b = 0;
        int da = 0, db = 0, r = 0;
        OS_TRY(side_value(y, g, f, &f->a, vals, &a, &da));
        OS_TRY(side_value(y, g, f, &f->b, vals, &b, &db));
        if (!da || !db) return OPSCHED_OK;
        switch (f->op) {
        case CMP_LT: r = a < b; break;
        case CMP_LE: r = a <= b; break;
        case CMP_GT: r = a > b; break;
        case CMP_GE: r = a >= b; break;
        case CMP_EQ: r = a == b; break;
        case CMP_NE: r = a != b; break;
        }
        if (!r) return OPSCHED_OK;
    }
    *pass = 1;
    return OPSCHED_OK;
}

/* ---- the walk ------------------------------------------------------------ */

/* The number of combinations of g, saturated at INT64_MAX. */
static int64_t grid_size(const grid *g)
{
    int64_t product = 1;
    for (int a = 0; a < g->n_axes; a++)
        if (!os_mul_ok(product, g->n_values[a], &product)) return INT64_MAX;
    return product;
}

opsched_status os_sweep_grid_next(const os_yaml *y, const grid *g, os_sweep_cursor *c,
                                  opsched_sweep_counts *counts, opsched_graph **out, int *fused)
{
    opsched_ctx *ctx = y->ctx;
    int64_t product = grid_size(g);
    int64_t vals[MAX_PARAMS];
    opsched_param params[MAX_PARAMS];
    *out = NULL;
    *fused = 0;
    while (c->combination < product && !(g->limit && c->added >= g->limit)) {
        for (int i = 0; i < g->n_defs; i++) vals[i] = g->defs[i].value;
        for (int a = 0; a < g->n_axes; a++) {
            vals[g->axis_param[a]] = g->values[a][c->idx[a]];
            params[a].name = g->defs[g->axis_param[a]].name;
            params[a].value = g->values[a][c->idx[a]];
        }
        for (int a = g->n_axes - 1; a >= 0; a--) { /* the odometer: the last axis turns fastest */
            if (++c->idx[a] < g->n_values[a]) break;
            c->idx[a] = 0;
        }
        c->combination++;
        counts->combinations++;
        int pass = 0;
        OS_TRY(passes(y, g, vals, &pass));
        if (!pass) {
            counts->filtered++;
            continue;
        }
        opsched_graph *one = NULL;
        opsched_status st = opsched_opconfig_build(ctx, g->op, params, g->n_axes, OPSCHED_F32, &one);
        if (st == OPSCHED_ERR_SHAPE) {
            opsched_ctx_clear_error(ctx);
            counts->impossible++;
            continue;
        }
        if (st == OPSCHED_ERR_INVALID_ARG)
            return os_sweep_fail(y, g->node, "%s", opsched_ctx_last_error(ctx));
        OS_TRY(st);
        if (g->fuse) {
            opsched_graph *with_relu = NULL;
            st = os_sweep_fused_graph(ctx, one, &with_relu);
            opsched_graph_free(one);
            OS_TRY(st);
            one = with_relu;
        }
        *out = one;
        *fused = g->fuse;
        return OPSCHED_OK;
    }
    return OPSCHED_OK;
}

opsched_status os_sweep_grid_parse(const os_yaml *y, const yaml_node_t *entry, int top_level,
                                   grid **out, int64_t *size)
{
    static const char *const keys[] = {"op", "params", "filters", "limit", "fuse"};
    opsched_status st = OPSCHED_OK;
    if (out) *out = NULL;
    OS_TRY(os_yaml_check_keys(y, entry, keys, OS_ARRAY_LEN(keys), top_level, "a grid entry"));
    const yaml_node_t *opn = os_yaml_node(y, os_yaml_get(y, entry, "op"));
    OS_TRY(os_yaml_want(y, opn, YAML_SCALAR_NODE, "op"));
    const char *op = os_yaml_scalar(opn);
    const opsched_param *defs = NULL;
    int n_defs = 0;
    if (opsched_opconfig_params(op, &defs, &n_defs) != OPSCHED_OK) {
        char names[512] = "";
        for (int i = 0; i < opsched_opconfig_count(); i++) {
            strncat(names, i ? ", " : "", sizeof(names) - strlen(names) - 1);
            strncat(names, opsched_opconfig_name(i), sizeof(names) - strlen(names) - 1);
        }
        return os_sweep_fail(y, opn, "unknown operator '%s' (known: %s)", op, names);
    }
    if (n_defs > MAX_PARAMS) return os_sweep_fail(y, opn, "%s: too many parameters", op);
    grid *g = calloc(1, sizeof(*g));
    if (!g) return OS_NOMEM(y->ctx);
    g->node = entry;
    g->op = op;
    g->defs = defs;
    g->n_defs = n_defs;
    const yaml_node_t *params = os_yaml_node(y, os_yaml_get(y, entry, "params"));
    if (params) {
        OS_TRY_GOTO(st, os_yaml_want(y, params, YAML_MAPPING_NODE, "params"), done);
        for (const yaml_node_pair_t *p = params->data.mapping.pairs.start;
             p < params->data.mapping.pairs.top; p++)
            OS_TRY_GOTO(st, parse_axis(y, p, g), done);
    }
    int filters = os_yaml_get(y, entry, "filters");
    if (filters) OS_TRY_GOTO(st, parse_filters(y, filters, g), done);
    const yaml_node_t *limit = os_yaml_node(y, os_yaml_get(y, entry, "limit"));
    if (limit) OS_TRY_GOTO(st, os_yaml_int(y, limit, 1, INT32_MAX, "limit", &g->limit), done);
    const yaml_node_t *fuse = os_yaml_node(y, os_yaml_get(y, entry, "fuse"));
    if (fuse) OS_TRY_GOTO(st, os_yaml_bool(y, fuse, "fuse", &g->fuse), done);
    if (g->fuse && strcmp(g->op, "conv2d") != 0) {
        st = os_sweep_fail(y, fuse, "fuse: a Relu fuses into a convolution only (op %s)", g->op);
        goto done;
    }
    int64_t n = grid_size(g), limit_n = y->spec->tuning.max_combinations;
    if (n > limit_n) {
        st = os_sweep_fail(y, entry, "%s: %s%lld combinations, more than the limit of %lld; "
                                     "split the grid or list fewer values", g->op,
                           n == INT64_MAX ? "at least " : "", (long long)n, (long long)limit_n);
        goto done;
    }
    *size = n;
    if (out) {
        *out = g;
        g = NULL;
    }
done:
    os_sweep_grid_free(g);
    return st;
}
