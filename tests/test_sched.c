/*
 * test_sched.c - schedules: units and views, block cutting, merge
 * geometry, validation errors, schedule files, the predicted stage cost
 * and its fit, and the searchers: the IOS dynamic program against a brute
 * force over the same space on random graphs, sequential and greedy
 * validity, and zoo networks searched with a synthetic cost.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "opsched/opsched.h"
#include "sched/sched_impl.h"

/* ---- helpers ---------------------------------------------------------------- */

static opsched_ctx *new_ctx(void)
{
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    return ctx;
}

static void ok(opsched_ctx *ctx, opsched_status st)
{
    if (st != OPSCHED_OK) fprintf(stderr, "failed: %s\n", opsched_ctx_last_error(ctx));
    assert_int_equal(st, OPSCHED_OK);
}

static int input4(opsched_graph *g, int64_t c, int64_t h)
{
    opsched_shape s = {4, {1, c, h, h}};
    int x;
    assert_int_equal(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &s, &x),
                     OPSCHED_OK);
    return x;
}

static int conv(opsched_graph *g, const char *name, int x, int64_t oc, int64_t k, int64_t stride,
                int64_t pad)
{
    opsched_conv_desc d = {.out_channels = oc, .kernel_h = k, .kernel_w = k, .stride_h = stride,
                           .stride_w = stride, .pad_h = pad, .pad_w = pad, .bias = 1};
    int y;
    ok(opsched_graph_ctx(g), opsched_build_conv(g, name, x, &d, &y));
    return y;
}

static int unary(opsched_graph *g, const char *name, opsched_op_kind op, int x)
{
    int y;
    ok(opsched_graph_ctx(g), opsched_build_unary(g, name, op, NULL, x, &y));
    return y;
}

static int add2(opsched_graph *g, const char *name, int a, int b)
{
    int y;
    ok(opsched_graph_ctx(g), opsched_build_binary(g, name, OPSCHED_OP_ADD, a, b, &y));
    return y;
}

static int node_index(const opsched_graph *g, const char *name)
{
    for (int i = 0; i < opsched_graph_num_nodes(g); i++)
        if (strcmp(opsched_graph_node(g, i)->name, name) == 0) return i;
    fail_msg("no node '%s'", name);
    return -1;
}

/* An inception-like module: four branches on x, concatenated. */
static int module(opsched_graph *g, const char *p, int x, int64_t c)
{
    char n[64];
    int b[4], t;
    snprintf(n, sizeof(n), "%s.b1", p);
    b[0] = unary(g, strcat(n, ".relu"), OPSCHED_OP_RELU, conv(g, n, x, c, 1, 1, 0));
    snprintf(n, sizeof(n), "%s.b2a", p);
    t = conv(g, n, x, c, 1, 1, 0);
    snprintf(n, sizeof(n), "%s.b2b", p);
    b[1] = conv(g, n, t, c, 3, 1, 1);
    snprintf(n, sizeof(n), "%s.b3a", p);
    t = conv(g, n, x, c, 1, 1, 0);
    snprintf(n, sizeof(n), "%s.b3b", p);
    t = conv(g, n, t, c, 3, 1, 1);
    snprintf(n, sizeof(n), "%s.b3c", p);
    b[2] = conv(g, n, t, c, 3, 1, 1);
    snprintf(n, sizeof(n), "%s.pool", p);
    int y;
    ok(opsched_graph_ctx(g), opsched_build_pool(g, n, OPSCHED_OP_MAXPOOL, x, 3, 1, 1, 0, 0, &t));
    snprintf(n, sizeof(n), "%s.b4", p);
    b[3] = conv(g, n, t, c, 1, 1, 0);
    snprintf(n, sizeof(n), "%s.cat", p);
    ok(opsched_graph_ctx(g), opsched_build_concat(g, n, b, 4, 1, &y));
    return y;
}

/* stem conv, two modules, a flatten (view) and a linear layer. */
static opsched_graph *mini_inception(opsched_ctx *ctx, const char *name)
{
    opsched_graph *g;
    ok(ctx, opsched_graph_create(ctx, name, &g));
    int x = input4(g, 3, 12);
    x = unary(g, "stem.relu", OPSCHED_OP_RELU, conv(g, "stem", x, 8, 3, 1, 1));
    x = module(g, "m1", x, 4);
    x = module(g, "m2", x, 4);
    int y;
    ok(ctx, opsched_build_unary(g, "gap", OPSCHED_OP_GLOBALAVGPOOL, NULL, x, &y));
    ok(ctx, opsched_build_flatten(g, "flat", y, 1, &y));
    ok(ctx, opsched_build_linear(g, "fc", y, 10, 1, &y));
    ok(ctx, opsched_graph_mark_output(g, y));
    return g;
}

/* Single-op costs from the FLOPs (a stand-in for a predictor). */
static double *flop_costs(const opsched_graph *g)
{
    int n = opsched_graph_num_nodes(g);
    double *ms = calloc((size_t)n, sizeof(double));
    assert_non_null(ms);
    for (int i = 0; i < n; i++) {
        const opsched_node *nd = opsched_graph_node(g, i);
        ms[i] = opsched_op_is_view(nd->op) ? 0 : 0.004 + (double)nd->cost.flops * 1e-9;
    }
    return ms;
}

/* The predicted cost plus a deterministic perturbation that depends on
 * what the stage runs (its signature: the search may answer equal
 * signatures from one evaluation), so that a search missing part of the
 * space shows. */
typedef struct noisy_cost {
    opsched_predicted_cost pred;
    double noise;
} noisy_cost;

static opsched_status noisy_stage_cost(void *user, const opsched_graph *g, const opsched_stage *st,
                                       double *ms)
{
    noisy_cost *c = user;
    opsched_status s = opsched_stage_cost_predicted(&c->pred, g, st, ms);
    if (s != OPSCHED_OK || c->noise == 0) return s;
    char *sig;
    s = opsched_stage_signature(g, st, &sig);
    if (s != OPSCHED_OK) return s;
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = sig; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    free(sig);
    h ^= h >> 29;
    *ms += c->noise * (double)(h % 1000003) / 1000003.0;
    return OPSCHED_OK;
}

static void search(const opsched_graph *g, opsched_searcher which, int r, int s, int cut,
                   int no_merge, opsched_stage_cost_fn fn, void *user, opsched_schedule **out,
                   opsched_search_stats *stats)
{
    opsched_search_options o = {.searcher = which, .r = r, .s = s, .max_block_ops = 64,
                                .no_merge = no_merge, .cost = fn, .user = user};
    ok(opsched_graph_ctx(g), os_schedule_search(g, &o, cut, out, stats));
    ok(opsched_graph_ctx(g), opsched_schedule_validate(g, *out));
}

/* ---- units, views, producers ------------------------------------------------ */

static void test_units_and_views(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    opsched_graph *g = mini_inception(ctx, "mini");
    os_units u;
    ok(ctx, os_units_build(g, &u));
    int stem = node_index(g, "stem"), relu = node_index(g, "stem.relu");
    int flat = node_index(g, "flat"), fc = node_index(g, "fc"), gap = node_index(g, "gap");
    /* The stem's Relu is fused into its unit; m1.b2a is read by a conv,
     * not a Relu, and stays alone. */
    assert_int_equal(u.u[u.unit_of_node[stem]].relu, relu);
    assert_int_equal(u.unit_of_node[relu], u.unit_of_node[stem]);
    assert_int_equal(u.u[u.unit_of_node[node_index(g, "m1.b2a")]].relu, -1);
    assert_int_equal(u.unit_of_node[flat], -1);
    /* fc depends on gap through the view. */
    assert_int_equal(opsched_tensor_scheduled_producer(g, opsched_graph_node(g, fc)->inputs[0]),
                     gap);
    int ufc = u.unit_of_node[fc];
    assert_int_equal(u.pred_at[ufc + 1] - u.pred_at[ufc], 1);
    assert_int_equal(u.pred[u.pred_at[ufc]], u.unit_of_node[gap]);
    /* weights and graph inputs have no producer */
    assert_int_equal(opsched_tensor_scheduled_producer(g, opsched_graph_node(g, stem)->inputs[0]),
                     -1);
    assert_int_equal(opsched_tensor_scheduled_producer(g, opsched_graph_node(g, stem)->inputs[1]),
                     -1);
    /* 1 fused stem + 2 x 10 per module (b1 fused) + gap + fc */
    assert_int_equal(u.n, 1 + 2 * 9 + 2);
    os_units_release(&u);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

/* ---- blocks ------------------------------------------------------------------ */

static void parts_of(opsched_graph *g, int max_part, int cut, os_parts *p, os_units *u)
{
    ok(opsched_graph_ctx(g), os_units_build(g, u));
    ok(opsched_graph_ctx(g), os_parts_build(opsched_graph_ctx(g), u, max_part, cut, p));
}

static void test_blocks_chain(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    opsched_graph *g;
    ok(ctx, opsched_graph_create(ctx, "chain", &g));
    int x = input4(g, 4, 8);
    for (int i = 0; i < 10; i++) {
        char n[16];
        snprintf(n, sizeof(n), "c%d", i);
        x = conv(g, n, x, 4, 3, 1, 1);
    }
    os_units u;
    os_parts p;
    /* every unit is a cut; the chain blocks join, then split into parts */
    parts_of(g, 50, 1, &p, &u);
    assert_int_equal(p.n_blocks, 1);
    assert_int_equal(p.n_parts, 1);
    os_parts_release(&p);
    ok(ctx, os_parts_build(ctx, &u, 4, 1, &p));
    assert_int_equal(p.n_parts, 3);
    assert_int_equal(p.part_at[0], 0);
    assert_int_equal(p.part_at[3], 10);
    for (int k = 0; k < 3; k++) assert_true(p.part_at[k + 1] - p.part_at[k] <= 4);
    os_parts_release(&p);
    assert_int_equal(os_parts_build(ctx, &u, 65, 1, &p), OPSCHED_ERR_INVALID_ARG);
    os_units_release(&u);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

static void test_blocks_diamond(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    opsched_graph *g;
    ok(ctx, opsched_graph_create(ctx, "diamond", &g));
    int x = input4(g, 4, 8);
    int a = conv(g, "a", x, 4, 3, 1, 1);
    int b = conv(g, "b", a, 4, 3, 1, 1);
    int c = conv(g, "c", a, 4, 1, 1, 0);
    int s = add2(g, "add", b, c);
    conv(g, "d", s, 4, 1, 1, 0);
    os_units u;
    os_parts p;
    parts_of(g, 50, 1, &p, &u);
    /* [a] [b c add] [d]: the diamond is not a chain, so nothing joins */
    assert_int_equal(p.n_blocks, 3);
    assert_int_equal(p.n_parts, 3);
    assert_int_equal(p.part_at[1], 1);
    assert_int_equal(p.part_at[2], 4);
    assert_int_equal(p.part_at[3], 5);
    os_parts_release(&p);
    ok(ctx, os_parts_build(ctx, &u, 50, 0, &p));
    assert_int_equal(p.n_blocks, 1);
    assert_int_equal(p.part_at[1], 5);
    os_parts_release(&p);
    os_units_release(&u);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

static void test_blocks_inception(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    opsched_graph *g = mini_inception(ctx, "mini");
    os_units u;
    os_parts p;
    parts_of(g, 50, 1, &p, &u);
    /* stem | module 1 (ends at its concat) | module 2 | gap, fc */
    assert_int_equal(p.n_blocks, 4);
    assert_int_equal(p.part_at[1], 1);
    assert_int_equal(p.part_at[2], 1 + 9);
    assert_int_equal(p.part_at[3], 1 + 18);
    assert_int_equal(u.u[p.part_at[2] - 1].node, node_index(g, "m1.cat"));
    os_parts_release(&p);
    /* a part limit below a module's size splits it */
    ok(ctx, os_parts_build(ctx, &u, 5, 1, &p));
    assert_int_equal(p.n_blocks, 4);
    assert_int_equal(p.n_parts, 6);
    os_parts_release(&p);
    os_units_release(&u);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

/* ---- merges ------------------------------------------------------------------- */

static void test_merge_geometry(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    opsched_graph *g;
    ok(ctx, opsched_graph_create(ctx, "merge", &g));
    int x = input4(g, 8, 10);
    conv(g, "k1", x, 16, 1, 1, 0);
    conv(g, "k3", x, 8, 3, 1, 1);
    conv(g, "k5", x, 4, 5, 1, 2);
    conv(g, "k3valid", x, 8, 3, 1, 0);   /* smaller output */
    conv(g, "k3s2", x, 8, 3, 2, 1);      /* other stride */
    int y = conv(g, "other", x, 8, 1, 1, 0);
    conv(g, "on_y", y, 8, 1, 1, 0);       /* other input */
    int k1 = node_index(g, "k1"), k3 = node_index(g, "k3"), k5 = node_index(g, "k5");
    assert_true(opsched_conv_mergeable(g, k1, k3));
    assert_true(opsched_conv_mergeable(g, k5, k1));
    assert_false(opsched_conv_mergeable(g, k3, node_index(g, "k3valid")));
    assert_false(opsched_conv_mergeable(g, k3, node_index(g, "k3s2")));
    assert_false(opsched_conv_mergeable(g, k1, node_index(g, "on_y")));
    assert_false(opsched_conv_mergeable(g, k1, k1));

    opsched_schedule *s;
    ok(ctx, opsched_schedule_create(g, &s));
    int convs[3] = {k1, k3, k5}, idx;
    ok(ctx, opsched_schedule_add_merge(s, g, convs, NULL, 3, &idx));
    const opsched_merge *m = &s->stages[idx].merge;
    assert_int_equal(m->kernel[0], 5);
    assert_int_equal(m->kernel[1], 5);
    for (int d = 0; d < 4; d++) assert_int_equal(m->pads[d], 2);
    assert_int_equal(m->out_channels, 28);
    assert_int_equal(m->input, x);
    assert_int_equal(m->members[0].kernel_offset[0], 2);
    assert_int_equal(m->members[1].kernel_offset[1], 1);
    assert_int_equal(m->members[2].kernel_offset[0], 0);
    assert_int_equal(m->members[1].channel_offset, 16);
    assert_int_equal(m->members[2].channel_offset, 24);
    int bad[2] = {k3, node_index(g, "k3valid")};
    assert_int_equal(opsched_schedule_add_merge(s, g, bad, NULL, 2, NULL), OPSCHED_ERR_SHAPE);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "output sizes"));
    int notconv[2] = {k1, node_index(g, "k1") + 100};
    assert_int_equal(opsched_schedule_add_merge(s, g, notconv, NULL, 2, NULL),
                     OPSCHED_ERR_INVALID_ARG);
    opsched_schedule_free(s);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

/* ---- validation ------------------------------------------------------------------ */

/* A sequential schedule of g, as nodes in order (views left out), one
 * stage per node. */
static opsched_schedule *by_hand(const opsched_graph *g, int skip, int twice)
{
    opsched_schedule *s;
    ok(opsched_graph_ctx(g), opsched_schedule_create(g, &s));
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) {
        if (opsched_op_is_view(opsched_graph_node(g, i)->op) || i == skip) continue;
        int k;
        ok(opsched_graph_ctx(g), opsched_schedule_add_stage(s, &k));
        ok(opsched_graph_ctx(g), opsched_schedule_add_group(s, k, &i, 1));
        if (i == twice) ok(opsched_graph_ctx(g), opsched_schedule_add_group(s, k, &i, 1));
    }
    return s;
}

static void expect_invalid(const opsched_graph *g, opsched_schedule *s, opsched_status want,
                           const char *text)
{
    opsched_ctx *ctx = opsched_graph_ctx(g);
    assert_int_equal(opsched_schedule_validate(g, s), want);
    if (!strstr(opsched_ctx_last_error(ctx), text))
        fail_msg("error '%s' does not mention '%s'", opsched_ctx_last_error(ctx), text);
    opsched_schedule_free(s);
}

static void test_validate_errors(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    opsched_graph *g = mini_inception(ctx, "mini");
    opsched_schedule *s = by_hand(g, -1, -1);
    ok(ctx, opsched_schedule_validate(g, s));
    opsched_schedule_free(s);

    int b3b = node_index(g, "m1.b3b"), b3c = node_index(g, "m1.b3c");
    expect_invalid(g, by_hand(g, b3b, -1), OPSCHED_ERR_INVALID_ARG, "'m1.b3b' (");
    expect_invalid(g, by_hand(g, -1, b3b), OPSCHED_ERR_INVALID_ARG, "scheduled twice");

    /* a consumer in the same stage as its producer, another group */
    s = by_hand(g, b3c, -1);
    for (int k = 0; k < s->n_stages; k++)
        if (s->stages[k].groups[0].nodes[0] == b3b)
            ok(ctx, opsched_schedule_add_group(s, k, &b3c, 1));
    expect_invalid(g, s, OPSCHED_ERR_INVALID_ARG, "reads 'm1.b3b', scheduled concurrently");

    /* the consumer before its producer */
    s = by_hand(g, -1, -1);
    for (int k = 0; k + 1 < s->n_stages; k++)
        if (s->stages[k + 1].groups[0].nodes[0] == b3c) {
            s->stages[k].groups[0].nodes[0] = b3c;
            s->stages[k + 1].groups[0].nodes[0] = b3b;
        }
    expect_invalid(g, s, OPSCHED_ERR_INVALID_ARG, "after it");

    /* the same group, in order, is fine; reversed is not */
    s = by_hand(g, b3c, -1);
    for (int k = 0; k < s->n_stages; k++)
        if (s->stages[k].groups[0].nodes[0] == b3b) {
            int *grown = realloc(s->stages[k].groups[0].nodes, 2 * sizeof(int));
            assert_non_null(grown);
            grown[1] = b3c;
            s->stages[k].groups[0].nodes = grown;
            s->stages[k].groups[0].n_nodes = 2;
            ok(ctx, opsched_schedule_validate(g, s));
            grown[0] = b3c;
            grown[1] = b3b;
        }
    expect_invalid(g, s, OPSCHED_ERR_INVALID_ARG, "reads 'm1.b3b'");

    /* a view listed */
    s = by_hand(g, -1, -1);
    int flat = node_index(g, "flat"), k;
    ok(ctx, opsched_schedule_add_stage(s, &k));
    ok(ctx, opsched_schedule_add_group(s, k, &flat, 1));
    expect_invalid(g, s, OPSCHED_ERR_INVALID_ARG, "is a view");

    /* out of range */
    s = by_hand(g, -1, -1);
    s->stages[0].groups[0].nodes[0] = 999;
    expect_invalid(g, s, OPSCHED_ERR_INVALID_ARG, "out of range");

    /* another model */
    opsched_graph *other = mini_inception(ctx, "other");
    expect_invalid(g, by_hand(other, -1, -1), OPSCHED_ERR_INVALID_ARG, "for model 'other'");
    opsched_graph_free(other);

    /* a merge whose geometry was tampered with */
    s = by_hand(g, -1, -1);
    int convs[2] = {node_index(g, "m2.b2a"), node_index(g, "m2.b3a")};
    ok(ctx, opsched_schedule_add_merge(s, g, convs, NULL, 2, &k));
    s->stages[k].merge.kernel[0] = 3;
    expect_invalid(g, s, OPSCHED_ERR_SHAPE, "merge geometry");
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

/* ---- files -------------------------------------------------------------------------- */

static void assert_same_schedule(const opsched_schedule *a, const opsched_schedule *b)
{
    assert_string_equal(a->model, b->model);
    assert_string_equal(a->searcher, b->searcher);
    assert_string_equal(a->cost, b->cost);
    assert_string_equal(a->device, b->device);
    assert_int_equal(a->r, b->r);
    assert_int_equal(a->s, b->s);
    assert_int_equal(a->batch, b->batch);
    assert_true(fabs(a->predicted_ms - b->predicted_ms) < 1e-9);
    assert_int_equal(a->n_stages, b->n_stages);
    for (int k = 0; k < a->n_stages; k++) {
        const opsched_stage *x = &a->stages[k], *y = &b->stages[k];
        assert_int_equal(x->kind, y->kind);
        assert_true(fabs(x->ms - y->ms) < 1e-9);
        assert_int_equal(x->n_groups, y->n_groups);
        for (int j = 0; j < x->n_groups; j++) {
            assert_int_equal(x->groups[j].n_nodes, y->groups[j].n_nodes);
            assert_memory_equal(x->groups[j].nodes, y->groups[j].nodes,
                                (size_t)x->groups[j].n_nodes * sizeof(int));
        }
        assert_int_equal(x->merge.n_members, y->merge.n_members);
        for (int j = 0; j < x->merge.n_members; j++) {
            assert_int_equal(x->merge.members[j].node, y->merge.members[j].node);
            assert_int_equal(x->merge.members[j].relu, y->merge.members[j].relu);
            assert_int_equal(x->merge.members[j].channel_offset, y->merge.members[j].channel_offset);
        }
    }
}

typedef struct describe_lines {
    int stage_lines;
    char first[256];
} describe_lines;

static void count_line(const char *line, void *user)
{
    describe_lines *d = user;
    if (!d->first[0]) snprintf(d->first, sizeof(d->first), "%s", line);
    if (strncmp(line, "stage ", 6) == 0) d->stage_lines++;
}

static opsched_schedule *searched_mini(opsched_graph *g, noisy_cost *c)
{
    c->pred.node_ms = flop_costs(g);
    c->pred.n_nodes = opsched_graph_num_nodes(g);
    opsched_contention_defaults(&c->pred.model);
    c->pred.model.merge_factor = 0.1; /* so that a merge wins somewhere */
    c->noise = 0;
    opsched_schedule *s;
    search(g, OPSCHED_SEARCH_IOS, 3, 8, 1, 0, noisy_stage_cost, c, &s, NULL);
    return s;
}

static void test_json_roundtrip(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    opsched_graph *g = mini_inception(ctx, "mini");
    noisy_cost c = {0};
    opsched_schedule *s = searched_mini(g, &c);
    int merges = 0;
    for (int k = 0; k < s->n_stages; k++) merges += s->stages[k].kind == OPSCHED_STAGE_MERGE;
    assert_true(merges > 0);
    ok(ctx, opsched_schedule_set_string(s, "device", "test device"));
    ok(ctx, opsched_schedule_set_string(s, "cost", "synthetic"));

    char *text;
    ok(ctx, opsched_schedule_to_json(s, g, &text));
    assert_non_null(strstr(text, "\"format\":\t\"opsched-schedule\""));
    opsched_schedule *back;
    ok(ctx, opsched_schedule_from_json(ctx, g, text, &back));
    assert_same_schedule(s, back);
    opsched_schedule_free(back);

    char path[] = "/tmp/opsched_sched_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    ok(ctx, opsched_schedule_write(s, g, path));
    ok(ctx, opsched_schedule_read(ctx, g, path, &back));
    assert_same_schedule(s, back);
    opsched_schedule_free(back);

    /* the file against another model */
    opsched_graph *other = mini_inception(ctx, "other");
    assert_int_equal(opsched_schedule_read(ctx, other, path, &back), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "not 'other'"));
    opsched_graph_free(other);
    remove(path);

    /* a node whose name disagrees with the graph */
    char *bad = strdup(text);
    char *at = strstr(bad, "\"m1.b3b\"");
    assert_non_null(at);
    memcpy(at + 1, "m1.b3x", 6);
    assert_int_equal(opsched_schedule_from_json(ctx, g, bad, &back), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "'m1.b3x' in the schedule"));
    free(bad);
    /* newer version, wrong format, not JSON, missing stages */
    bad = strdup(text);
    at = strstr(bad, "\"version\":\t1");
    assert_non_null(at);
    at[strlen("\"version\":\t")] = '7';
    assert_int_equal(opsched_schedule_from_json(ctx, g, bad, &back), OPSCHED_ERR_VERSION);
    free(bad);
    assert_int_equal(opsched_schedule_from_json(ctx, g, "{\"format\": \"onnx\"}", &back),
                     OPSCHED_ERR_PARSE);
    assert_int_equal(opsched_schedule_from_json(ctx, g, "{\"format\": ", &back), OPSCHED_ERR_PARSE);
    char doc[256];
    snprintf(doc, sizeof(doc),
             "{\"format\": \"opsched-schedule\", \"version\": 1, \"model\": \"mini\", "
             "\"graph_nodes\": %d}",
             opsched_graph_num_nodes(g));
    assert_int_equal(opsched_schedule_from_json(ctx, g, doc, &back), OPSCHED_ERR_PARSE);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "'stages'"));
    /* a valid file whose schedule misses a node */
    snprintf(doc, sizeof(doc),
             "{\"format\": \"opsched-schedule\", \"version\": 1, \"model\": \"mini\", "
             "\"graph_nodes\": %d, \"stages\": []}",
             opsched_graph_num_nodes(g));
    assert_int_equal(opsched_schedule_from_json(ctx, g, doc, &back), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "is not scheduled"));
    free(text);

    /* the description: a header, a summary, then every stage */
    describe_lines d = {0};
    ok(ctx, opsched_schedule_describe(s, g, count_line, &d));
    assert_true(d.stage_lines == s->n_stages);
    assert_non_null(strstr(d.first, "schedule of mini"));
    free((void *)c.pred.node_ms);
    opsched_schedule_free(s);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

/* ---- the dynamic program against brute force ------------------------------------ */

/* A random DAG of about n units on [1,4,6,6] tensors: convolutions (1x1
 * or 3x3, some followed by a Relu, which fuses), Adds, max pools, and
 * Identity views in between; often several readers of one tensor, so
 * merges are possible. */
static opsched_graph *random_dag(opsched_ctx *ctx, unsigned seed, int n)
{
    opsched_graph *g;
    ok(ctx, opsched_graph_create(ctx, "random", &g));
    int t[64], nt = 0;
    t[nt++] = input4(g, 4, 6);
    srand(seed);
    for (int i = 0, id = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "n%d", id++);
        int a = t[nt - 1 - rand() % (nt < 3 ? nt : 3)], kind = rand() % 10, y;
        if (kind < 5) {
            int k = rand() % 2 ? 3 : 1;
            y = conv(g, name, a, 4, k, 1, k / 2);
            if (rand() % 3 == 0) {
                strcat(name, ".relu");
                y = unary(g, name, OPSCHED_OP_RELU, y);
            }
        } else if (kind < 7 && nt > 1) {
            int b = t[rand() % nt];
            if (b == a) b = t[0] == a ? t[nt - 1] : t[0];
            y = add2(g, name, a, b);
        } else if (kind < 9) {
            ok(ctx, opsched_build_pool(g, name, OPSCHED_OP_MAXPOOL, a, 3, 1, 1, 0, 0, &y));
        } else {
            y = unary(g, name, OPSCHED_OP_IDENTITY, a);
            i--;
        }
        t[nt++] = y;
    }
    ok(ctx, opsched_graph_mark_output(g, t[nt - 1]));
    return g;
}

/* Brute force, front to back: every sequence of stages where each stage
 * is a set F of the remaining units whose predecessors are done or in F,
 * whose weakly connected components number at most s with at most r
 * units each, run concurrently or (when they merge) as one convolution.
 * Stage costs are cached by set, nothing else. */
typedef struct brute {
    const opsched_graph *g;
    os_units u;
    uint64_t pred[64], succ[64];
    int r, s, no_merge;
    noisy_cost *cost;
    double cache[2][1 << 12];
    int cached[2][1 << 12];
    int64_t schedules;
} brute;

static int brute_components(const brute *b, uint64_t F, int *largest)
{
    int label[64], n = 0;
    *largest = 0;
    for (int i = 0; i < b->u.n; i++) label[i] = -1;
    for (int i = 0; i < b->u.n; i++) {
        if (!(F >> i & 1) || label[i] >= 0) continue;
        int stack[64], top = 0, size = 0;
        stack[top++] = i;
        label[i] = n;
        while (top) {
            int v = stack[--top];
            size++;
            uint64_t nb = (b->pred[v] | b->succ[v]) & F;
            for (int w = 0; w < b->u.n; w++)
                if ((nb >> w & 1) && label[w] < 0) {
                    label[w] = n;
                    stack[top++] = w;
                }
        }
        if (size > *largest) *largest = size;
        n++;
    }
    return n;
}

static double brute_stage(brute *b, uint64_t F, int merge)
{
    if (b->cached[merge][F]) return b->cache[merge][F];
    opsched_schedule *tmp;
    ok(opsched_graph_ctx(b->g), opsched_schedule_create(b->g, &tmp));
    double ms = INFINITY;
    if (merge) {
        int convs[64], relus[64], n = 0;
        for (int i = 0; i < b->u.n; i++)
            if (F >> i & 1) {
                convs[n] = b->u.u[i].node;
                relus[n++] = b->u.u[i].relu;
            }
        int legal = n >= 2;
        for (int i = 0; i < n; i++)
            legal = legal && opsched_graph_node(b->g, convs[i])->op == OPSCHED_OP_CONV &&
                    (relus[i] >= 0) == (relus[0] >= 0);
        if (legal && opsched_schedule_add_merge(tmp, b->g, convs, relus, n, NULL) == OPSCHED_OK)
            ok(opsched_graph_ctx(b->g), noisy_stage_cost(b->cost, b->g, &tmp->stages[0], &ms));
    } else {
        int k;
        ok(opsched_graph_ctx(b->g), opsched_schedule_add_stage(tmp, &k));
        int done[64] = {0};
        for (int i = 0; i < b->u.n; i++) {
            if (!(F >> i & 1) || done[i]) continue;
            /* i's component, in unit order */
            uint64_t comp = (uint64_t)1 << i, grown;
            do {
                grown = comp;
                for (int v = 0; v < b->u.n; v++)
                    if (comp >> v & 1) grown |= (b->pred[v] | b->succ[v]) & F;
                if (grown == comp) break;
                comp = grown;
            } while (1);
            int nodes[128], nn = 0;
            for (int v = 0; v < b->u.n; v++)
                if (comp >> v & 1) {
                    done[v] = 1;
                    nodes[nn++] = b->u.u[v].node;
                    if (b->u.u[v].relu >= 0) nodes[nn++] = b->u.u[v].relu;
                }
            ok(opsched_graph_ctx(b->g), opsched_schedule_add_group(tmp, k, nodes, nn));
        }
        ok(opsched_graph_ctx(b->g), noisy_stage_cost(b->cost, b->g, &tmp->stages[0], &ms));
    }
    opsched_schedule_free(tmp);
    b->cached[merge][F] = 1;
    b->cache[merge][F] = ms;
    return ms;
}

static double brute_best(brute *b, uint64_t done, uint64_t all)
{
    if (done == all) {
        b->schedules++;
        return 0;
    }
    uint64_t rest = all & ~done;
    double best = INFINITY;
    /* every non-empty subset F of what remains */
    for (uint64_t F = rest; F; F = (F - 1) & rest) {
        int legal = 1, largest;
        for (int i = 0; i < b->u.n && legal; i++)
            if (F >> i & 1) legal = (b->pred[i] & ~(done | F)) == 0;
        if (!legal) continue;
        if (brute_components(b, F, &largest) > b->s || largest > b->r) continue;
        double after = brute_best(b, done | F, all);
        for (int merge = 0; merge < (b->no_merge ? 1 : 2); merge++) {
            double c = brute_stage(b, F, merge);
            if (c + after < best) best = c + after;
        }
    }
    return best;
}

static double brute_force(const opsched_graph *g, int r, int s, int no_merge, noisy_cost *c,
                          int64_t *schedules)
{
    brute *b = calloc(1, sizeof(*b));
    assert_non_null(b);
    b->g = g;
    b->r = r;
    b->s = s;
    b->no_merge = no_merge;
    b->cost = c;
    ok(opsched_graph_ctx(g), os_units_build(g, &b->u));
    assert_true(b->u.n <= 12);
    for (int i = 0; i < b->u.n; i++)
        for (int k = b->u.pred_at[i]; k < b->u.pred_at[i + 1]; k++) {
            b->pred[i] |= (uint64_t)1 << b->u.pred[k];
            b->succ[b->u.pred[k]] |= (uint64_t)1 << i;
        }
    double best = brute_best(b, 0, ((uint64_t)1 << b->u.n) - 1);
    *schedules = b->schedules;
    os_units_release(&b->u);
    free(b);
    return best;
}

static void test_dp_vs_brute_force(void **state)
{
    (void)state;
    static const int limits[][3] = {{3, 8, 0}, {2, 2, 0}, {1, 3, 0}, {3, 8, 1}, {2, 3, 0}};
    opsched_ctx *ctx = new_ctx();
    int merges_chosen = 0, graphs = 0;
    int64_t pruned = 0;
    int64_t total_schedules = 0;
    for (unsigned seed = 1; seed <= 40; seed++) {
        opsched_graph *g = random_dag(ctx, seed, 5 + (int)(seed % 5));
        noisy_cost c = {0};
        c.pred.node_ms = flop_costs(g);
        c.pred.n_nodes = opsched_graph_num_nodes(g);
        opsched_contention_defaults(&c.pred.model);
        c.pred.model.merge_factor = 0.4;
        c.noise = 0.003;
        graphs++;
        for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
            int r = limits[l][0], s = limits[l][1], no_merge = limits[l][2];
            int64_t schedules;
            double want = brute_force(g, r, s, no_merge, &c, &schedules);
            total_schedules += schedules;
            opsched_schedule *dp, *cut;
            opsched_search_stats st;
            search(g, OPSCHED_SEARCH_IOS, r, s, 0, no_merge, noisy_stage_cost, &c, &dp, &st);
            if (fabs(dp->predicted_ms - want) > 1e-9)
                fail_msg("seed %u r=%d s=%d merge=%d: dp %.9f, brute force %.9f", seed, r, s,
                         !no_merge, dp->predicted_ms, want);
            /* the schedule costs what the search said */
            double said = dp->predicted_ms;
            ok(ctx, opsched_schedule_cost(dp, g, noisy_stage_cost, &c));
            assert_true(fabs(dp->predicted_ms - said) < 1e-9);
            for (int k = 0; k < dp->n_stages; k++) {
                const opsched_stage *sg = &dp->stages[k];
                merges_chosen += sg->kind == OPSCHED_STAGE_MERGE;
                assert_true(sg->kind == OPSCHED_STAGE_MERGE ? sg->merge.n_members <= s
                                                            : sg->n_groups <= s);
            }
            /* branch and bound with an exact bound (every stage costs at
             * least its longest group) finds the same optimum */
            opsched_search_options ob = {.searcher = OPSCHED_SEARCH_IOS, .r = r, .s = s,
                                         .max_block_ops = 64, .no_merge = no_merge,
                                         .cost = noisy_stage_cost, .user = &c,
                                         .node_bound_ms = c.pred.node_ms};
            opsched_schedule *bounded;
            opsched_search_stats sb;
            ok(ctx, os_schedule_search(g, &ob, 0, &bounded, &sb));
            ok(ctx, opsched_schedule_validate(g, bounded));
            if (fabs(bounded->predicted_ms - want) > 1e-9)
                fail_msg("seed %u r=%d s=%d merge=%d: bounded dp %.9f, brute force %.9f", seed, r,
                         s, !no_merge, bounded->predicted_ms, want);
            assert_true(sb.stage_evals <= st.stage_evals);
            pruned += sb.pruned;
            opsched_schedule_free(bounded);
            /* cut into blocks the space is smaller: never better */
            search(g, OPSCHED_SEARCH_IOS, r, s, 1, no_merge, noisy_stage_cost, &c, &cut, NULL);
            assert_true(cut->predicted_ms >= want - 1e-9);
            opsched_schedule_free(dp);
            opsched_schedule_free(cut);
        }
        free((void *)c.pred.node_ms);
        opsched_graph_free(g);
    }
    /* the test means something only if merges and many schedules occur */
    assert_true(merges_chosen > 0);
    assert_true(total_schedules > 10000);
    assert_true(pruned > 0);
    print_message("%d graphs, %lld schedules enumerated, %d merges chosen\n", graphs,
                  (long long)total_schedules, merges_chosen);
    opsched_ctx_free(ctx);
}

/* ---- sequential, greedy, zoo networks ------------------------------------------ */

static void test_sequential_greedy(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    opsched_zoo_options zo = {.fold_bn = 1};
    opsched_graph *g;
    ok(ctx, opsched_zoo_build(ctx, "googlenet", &zo, &g));
    os_units u;
    ok(ctx, os_units_build(g, &u));
    opsched_schedule *seq, *gr, *gr2;
    search(g, OPSCHED_SEARCH_SEQUENTIAL, 0, 0, 1, 0, NULL, NULL, &seq, NULL);
    assert_int_equal(seq->n_stages, u.n);
    assert_string_equal(seq->searcher, "sequential");
    assert_true(seq->predicted_ms < 0);
    for (int k = 0; k < seq->n_stages; k++) assert_int_equal(seq->stages[k].n_groups, 1);
    search(g, OPSCHED_SEARCH_GREEDY, 0, 8, 1, 0, NULL, NULL, &gr, NULL);
    search(g, OPSCHED_SEARCH_GREEDY, 0, 2, 1, 0, NULL, NULL, &gr2, NULL);
    int widest = 0;
    for (int k = 0; k < gr->n_stages; k++) {
        assert_int_equal(gr->stages[k].kind, OPSCHED_STAGE_CONCURRENT);
        if (gr->stages[k].n_groups > widest) widest = gr->stages[k].n_groups;
    }
    /* an inception module starts four branches at once */
    assert_int_equal(widest, 4);
    assert_true(gr->n_stages < seq->n_stages);
    for (int k = 0; k < gr2->n_stages; k++) assert_true(gr2->stages[k].n_groups <= 2);
    assert_true(gr2->n_stages > gr->n_stages);
    /* with a cost, every stage is costed */
    noisy_cost c = {0};
    c.pred.node_ms = flop_costs(g);
    c.pred.n_nodes = opsched_graph_num_nodes(g);
    opsched_contention_defaults(&c.pred.model);
    opsched_schedule *costed;
    search(g, OPSCHED_SEARCH_SEQUENTIAL, 0, 0, 1, 0, noisy_stage_cost, &c, &costed, NULL);
    double sum = 0;
    for (int i = 0; i < opsched_graph_num_nodes(g); i++) sum += c.pred.node_ms[i];
    /* one group a stage: the operators' sum, as predict composes them */
    assert_true(fabs(costed->predicted_ms - sum) < 1e-9);
    /* the IOS search needs a cost */
    opsched_search_options o = {.searcher = OPSCHED_SEARCH_IOS};
    opsched_schedule *none;
    assert_int_equal(opsched_schedule_search(g, &o, &none, NULL), OPSCHED_ERR_INVALID_ARG);
    o.cost = noisy_stage_cost;
    o.user = &c;
    o.r = 65;
    assert_int_equal(opsched_schedule_search(g, &o, &none, NULL), OPSCHED_ERR_INVALID_ARG);
    free((void *)c.pred.node_ms);
    opsched_schedule_free(costed);
    opsched_schedule_free(seq);
    opsched_schedule_free(gr);
    opsched_schedule_free(gr2);
    os_units_release(&u);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

/* Counts calls, so the memo can be checked. */
typedef struct counting_cost {
    noisy_cost inner;
    int64_t calls;
    int stop_after; /* 0: never */
    volatile sig_atomic_t *stop;
} counting_cost;

static opsched_status counting_stage_cost(void *user, const opsched_graph *g,
                                          const opsched_stage *st, double *ms)
{
    counting_cost *c = user;
    c->calls++;
    if (c->stop_after && c->calls >= c->stop_after) *c->stop = 1;
    return noisy_stage_cost(&c->inner, g, st, ms);
}

static void zoo_search(const char *model, double limit_s)
{
    opsched_ctx *ctx = new_ctx();
    opsched_zoo_options zo = {.fold_bn = 1};
    opsched_graph *g;
    ok(ctx, opsched_zoo_build(ctx, model, &zo, &g));
    counting_cost c = {0};
    c.inner.pred.node_ms = flop_costs(g);
    c.inner.pred.n_nodes = opsched_graph_num_nodes(g);
    opsched_contention_defaults(&c.inner.pred.model);
    opsched_schedule *ios, *seq, *gr;
    opsched_search_stats st;
    opsched_search_options o = {.searcher = OPSCHED_SEARCH_IOS, .cost = counting_stage_cost,
                                .user = &c};
    ok(ctx, opsched_schedule_search(g, &o, &ios, &st));
    ok(ctx, opsched_schedule_validate(g, ios));
    print_message("%s: %d stages, %.4f ms predicted; %lld states, %lld endings, %lld stage "
                  "evaluations, %lld memo hits, %d blocks, %d parts (largest %d), %.3f s\n",
                  model, ios->n_stages, ios->predicted_ms, (long long)st.states,
                  (long long)st.endings, (long long)st.stage_evals, (long long)st.cost_cache_hits,
                  st.n_blocks, st.n_parts, st.largest_part, st.seconds);
    assert_true(st.seconds < limit_s);
    assert_int_equal(st.stage_evals, c.calls);
    assert_true(st.cost_cache_hits > 0);
    assert_true(st.states > 0 && st.endings >= st.states);
    /* branch and bound on the single-op costs: the same latency, fewer
     * stages costed */
    opsched_schedule *bounded;
    opsched_search_stats sb;
    o.node_bound_ms = c.inner.pred.node_ms;
    int64_t calls = c.calls;
    ok(ctx, opsched_schedule_search(g, &o, &bounded, &sb));
    print_message("%s with branch and bound: %lld stage evaluations, %lld candidates pruned, "
                  "%.3f s\n",
                  model, (long long)sb.stage_evals, (long long)sb.pruned, sb.seconds);
    assert_true(fabs(bounded->predicted_ms - ios->predicted_ms) < 1e-9);
    assert_true(sb.stage_evals < st.stage_evals);
    assert_int_equal(c.calls - calls, sb.stage_evals);
    opsched_schedule_free(bounded);
    o.node_bound_ms = NULL;
    o.searcher = OPSCHED_SEARCH_SEQUENTIAL;
    ok(ctx, opsched_schedule_search(g, &o, &seq, NULL));
    o.searcher = OPSCHED_SEARCH_GREEDY;
    ok(ctx, opsched_schedule_search(g, &o, &gr, NULL));
    /* sequential and greedy lie in the IOS space (greedy per block): IOS
     * is never worse than either under the same cost */
    assert_true(ios->predicted_ms <= seq->predicted_ms + 1e-9);
    assert_true(ios->predicted_ms <= gr->predicted_ms + 1e-9);
    assert_true(ios->predicted_ms < 0.95 * seq->predicted_ms);

    /* a stop request ends the search at the next evaluation */
    volatile sig_atomic_t stop = 0;
    opsched_schedule *stopped = NULL;
    c.stop = &stop;
    c.stop_after = 5;
    c.calls = 0;
    o.searcher = OPSCHED_SEARCH_IOS;
    o.stop = &stop;
    assert_int_equal(opsched_schedule_search(g, &o, &stopped, NULL), OPSCHED_ERR_INTERRUPTED);
    assert_null(stopped);
    assert_int_equal(c.calls, 5);

    free((void *)c.inner.pred.node_ms);
    opsched_schedule_free(ios);
    opsched_schedule_free(seq);
    opsched_schedule_free(gr);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

static void test_zoo_inception_v3(void **state)
{
    (void)state;
    zoo_search("inception_v3", 5.0);
}

static void test_zoo_googlenet(void **state)
{
    (void)state;
    zoo_search("googlenet", 5.0);
}

/* A part too wide for the endings budget is split, and the result stays
 * valid; the whole part searched is never worse than its halves. */
static void test_budget_splits(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    opsched_graph *g;
    ok(ctx, opsched_graph_create(ctx, "wide", &g));
    int x = input4(g, 4, 8), ys[6];
    for (int i = 0; i < 6; i++) {
        char n[16];
        snprintf(n, sizeof(n), "a%d", i);
        int t = conv(g, n, x, 4, 3, 1, 1);
        snprintf(n, sizeof(n), "b%d", i);
        ys[i] = conv(g, n, t, 4, 1 + 2 * (i % 2), 1, i % 2);
    }
    int y;
    ok(ctx, opsched_build_concat(g, "cat", ys, 6, 1, &y));
    noisy_cost c = {0};
    c.pred.node_ms = flop_costs(g);
    c.pred.n_nodes = opsched_graph_num_nodes(g);
    opsched_contention_defaults(&c.pred.model);
    c.noise = 0.001;
    opsched_search_options o = {.searcher = OPSCHED_SEARCH_IOS, .cost = noisy_stage_cost,
                                .user = &c};
    opsched_schedule *whole, *split;
    opsched_search_stats sw, ss;
    ok(ctx, opsched_schedule_search(g, &o, &whole, &sw));
    assert_int_equal(sw.splits, 0);
    assert_int_equal(sw.n_parts, 1);
    o.max_part_endings = 300;
    ok(ctx, opsched_schedule_search(g, &o, &split, &ss));
    ok(ctx, opsched_schedule_validate(g, split));
    assert_true(ss.splits > 0);
    assert_int_equal(ss.n_parts, ss.splits + 1);
    assert_true(ss.largest_part < 13);
    assert_true(split->predicted_ms >= whole->predicted_ms - 1e-9);
    print_message("wide: whole %.4f ms (%lld endings), split %d times %.4f ms (%lld endings)\n",
                  whole->predicted_ms, (long long)sw.endings, ss.splits, split->predicted_ms,
                  (long long)ss.endings);
    free((void *)c.pred.node_ms);
    opsched_schedule_free(whole);
    opsched_schedule_free(split);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

/* A device that cannot run merges or stages of three groups or more, nor
 * (when bad is set) the node named bad. */
typedef struct picky_cost {
    noisy_cost inner;
    int bad;
} picky_cost;

static opsched_status picky_stage_cost(void *user, const opsched_graph *g, const opsched_stage *st,
                                       double *ms)
{
    picky_cost *c = user;
    if (st->kind == OPSCHED_STAGE_MERGE || st->n_groups >= 3) {
        *ms = INFINITY;
        return OPSCHED_OK;
    }
    for (int j = 0; j < st->n_groups; j++)
        for (int i = 0; i < st->groups[j].n_nodes; i++)
            if (st->groups[j].nodes[i] == c->bad) {
                *ms = INFINITY;
                return OPSCHED_OK;
            }
    return noisy_stage_cost(&c->inner, g, st, ms);
}

static void test_unrunnable_stages(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    opsched_graph *g = mini_inception(ctx, "mini");
    picky_cost c = {.bad = -1};
    c.inner.pred.node_ms = flop_costs(g);
    c.inner.pred.n_nodes = opsched_graph_num_nodes(g);
    opsched_contention_defaults(&c.inner.pred.model);
    c.inner.pred.model.merge_factor = 0.1; /* merges would win */
    opsched_schedule *s;
    search(g, OPSCHED_SEARCH_IOS, 3, 8, 1, 0, picky_stage_cost, &c, &s, NULL);
    for (int k = 0; k < s->n_stages; k++) {
        assert_int_equal(s->stages[k].kind, OPSCHED_STAGE_CONCURRENT);
        assert_true(s->stages[k].n_groups <= 2);
        assert_true(isfinite(s->stages[k].ms));
    }
    assert_true(isfinite(s->predicted_ms));
    opsched_schedule_free(s);
    /* greedy starts four branches at once: it cannot run */
    opsched_search_options o = {.searcher = OPSCHED_SEARCH_GREEDY, .cost = picky_stage_cost,
                                .user = &c};
    assert_int_equal(opsched_schedule_search(g, &o, &s, NULL), OPSCHED_ERR_UNSUPPORTED);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "cannot run"));
    /* a node that runs nowhere: no schedule */
    c.bad = node_index(g, "gap"); /* (a signature no other node has) */
    o.searcher = OPSCHED_SEARCH_IOS;
    assert_int_equal(opsched_schedule_search(g, &o, &s, NULL), OPSCHED_ERR_UNSUPPORTED);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "can run on the device"));
    free((void *)c.inner.pred.node_ms);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

/* ---- predicted costs and the contention fit ----------------------------------- */

static void test_predicted_cost(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    opsched_graph *g = mini_inception(ctx, "mini");
    int n = opsched_graph_num_nodes(g);
    double *ms = calloc((size_t)n, sizeof(double));
    assert_non_null(ms);
    int b2a = node_index(g, "m1.b2a"), b2b = node_index(g, "m1.b2b"), b3a = node_index(g, "m1.b3a");
    int pool = node_index(g, "m1.pool");
    ms[b2a] = 1.0;
    ms[b2b] = 2.0;
    ms[b3a] = 0.5;
    ms[pool] = 0.25;
    opsched_predicted_cost p = {.node_ms = ms, .n_nodes = n};
    opsched_contention_defaults(&p.model);
    assert_int_equal(p.model.n_fit, 0);
    assert_true(isnan(p.model.fit_rms_rel));
    p.model.capacity = 2;
    p.model.stage_ms = 0.1;
    p.model.stream_ms = 0.01;
    p.model.merge_factor = 0.8;
    opsched_schedule *s;
    ok(ctx, opsched_schedule_create(g, &s));
    int k, grp[2] = {b2a, b2b};
    ok(ctx, opsched_schedule_add_stage(s, &k));
    ok(ctx, opsched_schedule_add_group(s, k, grp, 2));
    ok(ctx, opsched_schedule_add_group(s, k, &b3a, 1));
    ok(ctx, opsched_schedule_add_group(s, k, &pool, 1));
    double t;
    /* longest 3.0 > 3.75 / 2 */
    ok(ctx, opsched_stage_cost_predicted(&p, g, &s->stages[k], &t));
    assert_true(fabs(t - (3.0 + 0.1 + 0.02)) < 1e-12);
    p.model.capacity = 1;
    ok(ctx, opsched_stage_cost_predicted(&p, g, &s->stages[k], &t));
    assert_true(fabs(t - (3.75 + 0.1 + 0.02)) < 1e-12);
    /* one group: its operators one after another, no contention terms */
    ok(ctx, opsched_schedule_add_stage(s, &k));
    ok(ctx, opsched_schedule_add_group(s, k, grp, 2));
    ok(ctx, opsched_stage_cost_predicted(&p, g, &s->stages[k], &t));
    assert_true(fabs(t - 3.0) < 1e-12);
    /* a merged 1x1 pair: no kernel growth */
    int convs[2] = {b2a, b3a};
    ok(ctx, opsched_schedule_add_merge(s, g, convs, NULL, 2, &k));
    ok(ctx, opsched_stage_cost_predicted(&p, g, &s->stages[k], &t));
    assert_true(fabs(t - (0.8 * 1.5 + 0.1)) < 1e-12);
    /* a node without a usable cost */
    ms[b3a] = NAN;
    assert_int_equal(opsched_stage_cost_predicted(&p, g, &s->stages[k], &t),
                     OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "'m1.b3a'"));
    p.n_nodes = 3;
    assert_int_equal(opsched_stage_cost_predicted(&p, g, &s->stages[k], &t),
                     OPSCHED_ERR_INVALID_ARG);
    opsched_schedule_free(s);
    free(ms);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

static void test_contention_fit(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    opsched_contention truth = {.capacity = 3.0, .stage_ms = 0.006, .stream_ms = 0.004};
    opsched_stage_sample smp[60];
    memset(smp, 0, sizeof(smp));
    srand(7);
    for (int i = 0; i < 60; i++) {
        int groups = 1 + i % 6;
        double sum = 0, longest = 0;
        for (int j = 0; j < groups; j++) {
            double w = 0.01 + 0.2 * (double)rand() / RAND_MAX;
            sum += w;
            if (w > longest) longest = w;
        }
        smp[i].n_groups = groups;
        smp[i].longest_ms = longest;
        smp[i].sum_ms = sum;
        smp[i].measured_ms = fmax(longest, sum / truth.capacity) + truth.stage_ms +
                             truth.stream_ms * (groups - 1);
    }
    opsched_contention fit;
    opsched_contention_defaults(&fit);
    ok(ctx, opsched_contention_fit(ctx, smp, 60, &fit));
    assert_int_equal(fit.n_merge_fit, 0);
    assert_true(fit.merge_factor == 0.85); /* kept */
    assert_int_equal(fit.n_fit, 50); /* one-group stages say nothing about contention */
    assert_true(fabs(fit.capacity - 3.0) < 0.05);
    assert_true(fabs(fit.stage_ms - 0.006) < 5e-4);
    assert_true(fabs(fit.stream_ms - 0.004) < 5e-4);
    assert_true(fit.fit_rms_rel < 0.01);
    /* merged stages give the merge factor, after the stage cost */
    opsched_stage_sample mixed[70];
    memcpy(mixed, smp, sizeof(smp));
    for (int i = 60; i < 70; i++) {
        double scaled = 0.05 + 0.01 * i;
        mixed[i] = (opsched_stage_sample){.n_groups = 0, .longest_ms = scaled / 3,
                                          .sum_ms = scaled, .measured_ms = 0.6 * scaled + 0.006,
                                          .merge = 1};
    }
    opsched_contention_defaults(&fit);
    ok(ctx, opsched_contention_fit(ctx, mixed, 70, &fit));
    assert_int_equal(fit.n_fit, 50);
    assert_int_equal(fit.n_merge_fit, 10);
    assert_true(fabs(fit.merge_factor - 0.6) < 0.01);
    assert_true(fabs(fit.capacity - 3.0) < 0.05);
    /* too few samples keep the defaults, and say so */
    opsched_contention few;
    opsched_contention_defaults(&few);
    ok(ctx, opsched_contention_fit(ctx, smp, 2, &few));
    assert_int_equal(few.n_fit, 0);
    assert_true(few.capacity == 2.0);
    /* single-group stages only: they cost their operators, nothing to fit */
    opsched_stage_sample single[5];
    for (int i = 0; i < 5; i++) {
        double t = 0.1 * (i + 1);
        single[i] = (opsched_stage_sample){
            .n_groups = 1, .longest_ms = t, .sum_ms = t, .measured_ms = t + 0.01};
    }
    opsched_contention_defaults(&few);
    ok(ctx, opsched_contention_fit(ctx, single, 5, &few));
    assert_int_equal(few.n_fit, 0);
    assert_true(few.capacity == 2.0);
    assert_true(few.stage_ms == 0.002);
    opsched_ctx_free(ctx);
}

static void test_stage_signature(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    opsched_graph *g = mini_inception(ctx, "mini");
    opsched_schedule *s;
    ok(ctx, opsched_schedule_create(g, &s));
    /* the same branches of the two modules (equal shapes: both read 16
     * channels... m1 reads 8, m2 reads 16, so their first convs differ) */
    int a[2] = {node_index(g, "m1.b3b"), node_index(g, "m1.b3c")};
    int b[2] = {node_index(g, "m2.b3b"), node_index(g, "m2.b3c")};
    int p1 = node_index(g, "m1.b2b"), p2 = node_index(g, "m2.b2b");
    int k1, k2, k3;
    ok(ctx, opsched_schedule_add_stage(s, &k1));
    ok(ctx, opsched_schedule_add_group(s, k1, a, 2));
    ok(ctx, opsched_schedule_add_group(s, k1, &p1, 1));
    ok(ctx, opsched_schedule_add_stage(s, &k2));
    ok(ctx, opsched_schedule_add_group(s, k2, &p2, 1)); /* other group order */
    ok(ctx, opsched_schedule_add_group(s, k2, b, 2));
    ok(ctx, opsched_schedule_add_stage(s, &k3));
    ok(ctx, opsched_schedule_add_group(s, k3, a, 1));
    ok(ctx, opsched_schedule_add_group(s, k3, a + 1, 1));
    ok(ctx, opsched_schedule_add_group(s, k3, &p1, 1));
    char *s1, *s2, *s3;
    ok(ctx, opsched_stage_signature(g, &s->stages[k1], &s1));
    ok(ctx, opsched_stage_signature(g, &s->stages[k2], &s2));
    ok(ctx, opsched_stage_signature(g, &s->stages[k3], &s3));
    assert_string_equal(s1, s2);
    assert_string_not_equal(s1, s3); /* grouping matters */
    assert_null(strstr(s1, "m1.")); /* no names */
    free(s1);
    free(s2);
    free(s3);
    opsched_schedule_free(s);
    opsched_graph_free(g);
    opsched_ctx_free(ctx);
}

/* ---- measured stages in the database --------------------------------------------- */

static void exec_sql(const char *path, const char *text)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, text, NULL, NULL, &err);
    if (rc != SQLITE_OK) fprintf(stderr, "%s: %s\n", text, err ? err : "?");
    sqlite3_free(err);
    assert_int_equal(rc, SQLITE_OK);
    sqlite3_close(db);
}

static int64_t fake_device(opsched_store *s, const char *uuid)
{
    opsched_device_info d;
    memset(&d, 0, sizeof(d));
    snprintf(d.backend, sizeof(d.backend), "cuda");
    snprintf(d.name, sizeof(d.name), "Test GPU");
    snprintf(d.uuid, sizeof(d.uuid), "%s", uuid);
    int64_t id = 0;
    assert_int_equal(opsched_store_device(s, &d, &id), OPSCHED_OK);
    return id;
}

/* A stand-in for the device: the predicted cost, counted. */
typedef struct fake_measure {
    opsched_predicted_cost pred;
    int calls;
} fake_measure;

static opsched_status fake_measure_stage(void *user, const opsched_graph *g,
                                         const opsched_stage *st, double *ms)
{
    fake_measure *m = user;
    m->calls++;
    return opsched_stage_cost_predicted(&m->pred, g, st, ms);
}

static void remove_db(const char *path)
{
    char p[300];
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int k = 0; k < 3; k++) {
        snprintf(p, sizeof(p), "%s%s", path, suffix[k]);
        remove(p);
    }
}

static void test_stage_store(void **state)
{
    (void)state;
    opsched_ctx *ctx = new_ctx();
    char dir[] = "/tmp/opsched_stages_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], other[128];
    snprintf(path, sizeof(path), "%s/a.db", dir);
    snprintf(other, sizeof(other), "%s/b.db", dir);
    opsched_store *s;
    ok(ctx, opsched_store_open(ctx, path, OPSCHED_STORE_READ_WRITE, &s));
    int64_t dev = fake_device(s, "GPU-1");

    opsched_stage_record r = {.signature = "concurrent: [x]", .kind = "concurrent", .batch = 1,
                              .math = "tf32", .layout = "nchw", .algo_policy = "heuristic",
                              .n_groups = 1, .n_ops = 1, .median_ms = 0.5, .longest_ms = NAN,
                              .sum_ms = NAN, .created_at = 100};
    double ms = 0;
    int found = -1;
    ok(ctx, opsched_store_stage_get(s, dev, &r, &ms, &found));
    assert_int_equal(found, 0);
    ok(ctx, opsched_store_stage_put(s, dev, &r));
    ok(ctx, opsched_store_stage_get(s, dev, &r, &ms, &found));
    assert_int_equal(found, 1);
    assert_true(ms == 0.5);
    r.median_ms = 0.25; /* measured again: replaces */
    r.created_at = 200;
    ok(ctx, opsched_store_stage_put(s, dev, &r));
    ok(ctx, opsched_store_stage_get(s, dev, &r, &ms, &found));
    assert_true(ms == 0.25);
    r.batch = 8; /* another key */
    ok(ctx, opsched_store_stage_get(s, dev, &r, &ms, &found));
    assert_int_equal(found, 0);
    r.batch = 1;
    r.kind = "parallel";
    assert_int_equal(opsched_store_stage_put(s, dev, &r), OPSCHED_ERR_INVALID_ARG);
    r.kind = "concurrent";
    assert_int_not_equal(opsched_store_stage_put(s, dev + 7, &r), OPSCHED_OK); /* no device */

    /* a search measures each distinct stage once; the second one runs nothing */
    opsched_graph *g = mini_inception(ctx, "mini");
    fake_measure fm = {0};
    fm.pred.node_ms = flop_costs(g);
    fm.pred.n_nodes = opsched_graph_num_nodes(g);
    opsched_contention_defaults(&fm.pred.model);
    fm.pred.model.capacity = 3.0;
    fm.pred.model.stage_ms = 0.005;
    opsched_stage_cache cache = {.store = s, .device_id = dev, .batch = 1, .math = "tf32",
                                 .layout = "nchw", .algo_policy = "heuristic",
                                 .measure = fake_measure_stage, .measure_user = &fm,
                                 .node_ms = fm.pred.node_ms, .n_nodes = fm.pred.n_nodes};
    opsched_schedule *first, *second;
    opsched_search_stats st1, st2;
    search(g, OPSCHED_SEARCH_IOS, 3, 8, 1, 0, opsched_stage_cost_cached, &cache, &first, &st1);
    assert_true(fm.calls > 0);
    assert_int_equal(cache.measured, fm.calls);
    assert_int_equal(cache.measured, st1.stage_evals);
    int calls = fm.calls;
    cache.hits = 0;
    search(g, OPSCHED_SEARCH_IOS, 3, 8, 1, 0, opsched_stage_cost_cached, &cache, &second, &st2);
    assert_int_equal(fm.calls, calls);
    assert_int_equal(cache.hits, st2.stage_evals);
    assert_true(fabs(first->predicted_ms - second->predicted_ms) < 1e-12);
    /* a stage the device cannot run is answered +inf and not stored */
    picky_cost pk = {.bad = -1};
    pk.inner.pred = fm.pred;
    opsched_stage_cache picky = cache;
    picky.measure = picky_stage_cost;
    picky.measure_user = &pk;
    picky.hits = picky.measured = 0;
    opsched_schedule *merged_s;
    ok(ctx, opsched_schedule_create(g, &merged_s));
    int mconvs[2] = {node_index(g, "m2.b2a"), node_index(g, "m2.b3a")};
    ok(ctx, opsched_schedule_add_merge(merged_s, g, mconvs, NULL, 2, NULL));
    double inf_ms = 0;
    /* the first search stored this merge's cost: answered from there */
    ok(ctx, opsched_stage_cost_cached(&picky, g, &merged_s->stages[0], &inf_ms));
    assert_true(isfinite(inf_ms));
    assert_int_equal(picky.hits, 1);
    int64_t before = picky.unsupported;
    opsched_store_close(s);
    remove_db(path);
    ok(ctx, opsched_store_open(ctx, path, OPSCHED_STORE_READ_WRITE, &s));
    dev = fake_device(s, "GPU-1");
    picky.store = s;
    picky.device_id = dev;
    ok(ctx, opsched_stage_cost_cached(&picky, g, &merged_s->stages[0], &inf_ms));
    assert_true(isinf(inf_ms));
    assert_int_equal(picky.unsupported, before + 1);
    ok(ctx, opsched_stage_cost_cached(&picky, g, &merged_s->stages[0], &inf_ms));
    assert_int_equal(picky.unsupported, before + 2); /* measured again, never stored */
    opsched_schedule_free(merged_s);
    cache.store = s;
    cache.device_id = dev;
    cache.measure = fake_measure_stage;
    opsched_schedule *fresh;
    search(g, OPSCHED_SEARCH_IOS, 3, 8, 1, 0, opsched_stage_cost_cached, &cache, &fresh, NULL);
    opsched_schedule_free(fresh);

    /* lookups only: everything is there */
    cache.measure = NULL;
    opsched_schedule *third;
    search(g, OPSCHED_SEARCH_GREEDY, 0, 8, 1, 0, opsched_stage_cost_cached, &cache, &third, NULL);
    opsched_schedule_free(third);

    /* the contention model fitted from the stored stages finds what
     * "measured" them (the fake measures with capacity 3, 5 us per stage) */
    opsched_contention fit;
    opsched_contention_defaults(&fit);
    ok(ctx, opsched_contention_fit_store(s, ctx, dev, "tf32", "nchw", "heuristic", &fit));
    assert_true(fit.n_fit > 10);
    assert_true(fabs(fit.stage_ms - 0.005) < 1e-4);
    assert_true(fit.fit_rms_rel < 0.01);
    /* the fake merges at the default factor, 0.85 */
    assert_true(fit.n_merge_fit >= 2);
    assert_true(fabs(fit.merge_factor - 0.85) < 0.01);
    opsched_contention none;
    opsched_contention_defaults(&none);
    ok(ctx, opsched_contention_fit_store(s, ctx, dev, "fp16", "nchw", "heuristic", &none));
    assert_int_equal(none.n_fit, 0);
    opsched_store_close(s);

    /* merge: a newer row wins, an older one does not */
    opsched_store *b;
    ok(ctx, opsched_store_open(ctx, other, OPSCHED_STORE_READ_WRITE, &b));
    fake_device(b, "GPU-0");
    int64_t bdev = fake_device(b, "GPU-1");
    r.median_ms = 0.125;
    r.created_at = 300;
    ok(ctx, opsched_store_stage_put(b, bdev, &r));
    opsched_stage_record r2 = r;
    r2.signature = "concurrent: [y]";
    r2.created_at = 50;
    ok(ctx, opsched_store_stage_put(b, bdev, &r2));
    opsched_store_close(b);
    ok(ctx, opsched_store_open(ctx, path, OPSCHED_STORE_READ_WRITE, &s));
    opsched_merge_stats mst;
    ok(ctx, opsched_store_merge(s, other, &mst));
    assert_int_equal(mst.stages, 2);
    ok(ctx, opsched_store_stage_get(s, dev, &r, &ms, &found));
    assert_true(ms == 0.125);
    ok(ctx, opsched_store_merge(s, other, &mst));
    assert_int_equal(mst.stages, 0);
    opsched_store_close(s);

    /* a schema-3 file gains the stages table when opened */
    exec_sql(other, "DROP TABLE collectives; DROP TABLE stages; PRAGMA user_version = 3;");
    ok(ctx, opsched_store_open(ctx, other, OPSCHED_STORE_READ_WRITE, &b));
    ok(ctx, opsched_store_stage_put(b, bdev, &r));
    opsched_store_close(b);
    assert_int_equal(opsched_store_schema_version(), 5);

    free((void *)fm.pred.node_ms);
    opsched_schedule_free(first);
    opsched_schedule_free(second);
    opsched_graph_free(g);
    remove_db(path);
    remove_db(other);
    rmdir(dir);
    opsched_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units_and_views),
        cmocka_unit_test(test_blocks_chain),
        cmocka_unit_test(test_blocks_diamond),
        cmocka_unit_test(test_blocks_inception),
        cmocka_unit_test(test_merge_geometry),
        cmocka_unit_test(test_validate_errors),
        cmocka_unit_test(test_json_roundtrip),
        cmocka_unit_test(test_dp_vs_brute_force),
        cmocka_unit_test(test_sequential_greedy),
        cmocka_unit_test(test_zoo_googlenet),
        cmocka_unit_test(test_zoo_inception_v3),
        cmocka_unit_test(test_budget_splits),
        cmocka_unit_test(test_unrunnable_stages),
        cmocka_unit_test(test_predicted_cost),
        cmocka_unit_test(test_contention_fit),
        cmocka_unit_test(test_stage_signature),
        cmocka_unit_test(test_stage_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
