/*
 * test_sched_exec.c - the executor running schedules on the CPU backend:
 * schedules (hand-made concurrent groups, merged convolutions, greedy and
 * IOS searches) give the sequential schedule's outputs on small graphs
 * and on googlenet at 32x32; concat elision and merges happen where
 * they should (and not where slices are not contiguous); the program
 * orders every pair of launches that touch the same memory (checked
 * against a transitive closure of its stream order and event waits) yet
 * leaves concurrent groups unordered; layer-timed, host-timed and traced
 * runs on several streams; a schedule made at one batch size runs at
 * another.
 *
 * The CPU stream is synchronous, so concurrency here is logical: what is
 * tested is the memory plan, the aliasing, the merges and the program.
 * The CUDA side (two streams, capture) is test_sched_exec_gpu.c.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exec/exec_impl.h"
#include "support/netref.h"
#include "opsched/opsched.h"

static struct {
    opsched_ctx *ctx;
    opsched_device *cpu; /* NULL: no CPU backend in this build, every test skips */
} env;

#define SKIP_WITHOUT_CPU()                                                                         \
    do {                                                                                           \
        if (!env.cpu) {                                                                            \
            print_message("SKIP: no cpu device\n");                                                \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK(call)                                                                                \
    do {                                                                                           \
        opsched_status st_ = (call);                                                               \
        if (st_ != OPSCHED_OK)                                                                     \
            fail_msg("%s: %s: %s", #call, opsched_status_str(st_),                                 \
                     opsched_ctx_last_error(env.ctx));                                             \
    } while (0)

/* ---- graphs ------------------------------------------------------------- */

static int node_index(const opsched_graph *g, const char *name)
{
    for (int i = 0; i < opsched_graph_num_nodes(g); i++)
        if (strcmp(opsched_graph_node(g, i)->name, name) == 0) return i;
    fail_msg("no node '%s'", name);
    return -1;
}

static int conv(opsched_graph *g, const char *name, int x, int64_t oc, int64_t k)
{
    opsched_conv_desc d = {.out_channels = oc,
                           .kernel_h = k,
                           .kernel_w = k,
                           .stride_h = 1,
                           .stride_w = 1,
                           .pad_h = k / 2,
                           .pad_w = k / 2,
                           .bias = 1};
    int y = -1;
    CHECK(opsched_build_conv(g, name, x, &d, &y));
    return y;
}

static int relu(opsched_graph *g, const char *name, int x)
{
    int y = -1;
    CHECK(opsched_build_unary(g, name, OPSCHED_OP_RELU, NULL, x, &y));
    return y;
}

/* x[b,3,8,8] -> conv1 -> relu1 -> {convA 1x1, convB 3x3} -> add -> concat
 * with relu1 -> maxpool -> flatten -> fc[10].  Outputs: fc and the add. */
static opsched_graph *small_graph(int64_t batch)
{
    opsched_graph *g = NULL;
    opsched_shape xs = {4, {batch, 3, 8, 8}};
    int x, r1, a, b, s, cat, p, f, fc;
    CHECK(opsched_graph_create(env.ctx, "small", &g));
    CHECK(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x));
    r1 = relu(g, "relu1", conv(g, "conv1", x, 4, 3));
    a = conv(g, "convA", r1, 4, 1);
    b = conv(g, "convB", r1, 4, 3);
    CHECK(opsched_build_binary(g, "add", OPSCHED_OP_ADD, a, b, &s));
    int parts[2] = {s, r1};
    CHECK(opsched_build_concat(g, "concat", parts, 2, 1, &cat));
    CHECK(opsched_build_pool(g, "pool", OPSCHED_OP_MAXPOOL, cat, 2, 2, 0, 0, 0, &p));
    CHECK(opsched_build_flatten(g, "flatten", p, 1, &f));
    CHECK(opsched_build_linear(g, "fc", f, 10, 1, &fc));
    CHECK(opsched_graph_mark_output(g, fc));
    CHECK(opsched_graph_mark_output(g, s));
    return g;
}

/* An inception-like block: x[b,8,10,10] -> stem 3x3 -> relu -> four
 * branches reading it (1x1, 3x3, 5x5 with Relus; 3x3 maxpool -> 1x1) ->
 * concat -> global average pool -> flatten -> fc. */
static opsched_graph *block_graph(int64_t batch)
{
    opsched_graph *g = NULL;
    opsched_shape xs = {4, {batch, 8, 10, 10}};
    int x, st, b1, b2, b3, p, b4, cat, gap, f, fc;
    CHECK(opsched_graph_create(env.ctx, "block", &g));
    CHECK(opsched_graph_add_tensor(g, "x", OPSCHED_TENSOR_INPUT, OPSCHED_F32, &xs, &x));
    st = relu(g, "stem_relu", conv(g, "stem", x, 8, 3));
    b1 = relu(g, "b1_relu", conv(g, "b1", st, 4, 1));
    b2 = relu(g, "b2_relu", conv(g, "b2", st, 6, 3));
    b3 = relu(g, "b3_relu", conv(g, "b3", st, 2, 5));
    CHECK(opsched_build_pool(g, "pool", OPSCHED_OP_MAXPOOL, st, 3, 1, 1, 0, 0, &p));
    b4 = relu(g, "b4_relu", conv(g, "b4", p, 3, 1));
    int parts[4] = {b1, b2, b3, b4};
    CHECK(opsched_build_concat(g, "concat", parts, 4, 1, &cat));
    CHECK(opsched_build_unary(g, "gap", OPSCHED_OP_GLOBALAVGPOOL, NULL, cat, &gap));
    CHECK(opsched_build_flatten(g, "flatten", gap, 1, &f));
    CHECK(opsched_build_linear(g, "fc", f, 5, 1, &fc));
    CHECK(opsched_graph_mark_output(g, fc));
    return g;
}

static opsched_graph *zoo(const char *name, int64_t batch, int64_t size)
{
    opsched_graph *g = NULL;
    opsched_zoo_options zo = {.batch = batch, .height = size, .fold_bn = 1};
    CHECK(opsched_zoo_build(env.ctx, name, &zo, &g));
    return g;
}

/* ---- schedules ---------------------------------------------------------- */

static void add_stage(opsched_schedule *s, const opsched_graph *g, const char *const *groups)
{
    int k = -1;
    CHECK(opsched_schedule_add_stage(s, &k));
    for (int j = 0; groups[j]; j++) {
        char buf[256];
        int nodes[16], n = 0;
        snprintf(buf, sizeof(buf), "%s", groups[j]);
        char *save = NULL;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
            nodes[n++] = node_index(g, t);
        CHECK(opsched_schedule_add_group(s, k, nodes, n));
    }
}

/* One group per stage: a stage list "a|b,c|d" means stages {a}, {b, c}
 * (two groups), {d}; "a;b" inside a group runs a then b. */
static opsched_schedule *hand_schedule(const opsched_graph *g, const char *text)
{
    opsched_schedule *s = NULL;
    CHECK(opsched_schedule_create(g, &s));
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", text);
    char *save = NULL;
    for (char *stage = strtok_r(buf, "|", &save); stage; stage = strtok_r(NULL, "|", &save)) {
        const char *groups[9];
        char gbuf[8][256];
        int n = 0;
        char *save2 = NULL;
        for (char *grp = strtok_r(stage, " ", &save2); grp; grp = strtok_r(NULL, " ", &save2)) {
            snprintf(gbuf[n], sizeof(gbuf[n]), "%s", grp);
            for (char *c = gbuf[n]; *c; c++)
                if (*c == ';') *c = ',';
            groups[n] = gbuf[n];
            n++;
        }
        groups[n] = NULL;
        add_stage(s, g, groups);
    }
    CHECK(opsched_schedule_validate(g, s));
    return s;
}

/* Search options with predicted costs (a FLOP-based cost per node, the
 * default contention model); *ms (malloc'd) holds the node costs pc reads. */
static opsched_search_options predicted_options(const opsched_graph *g, opsched_searcher which,
                                                opsched_predicted_cost *pc, double **ms)
{
    opsched_search_options o;
    memset(&o, 0, sizeof(o));
    o.searcher = which;
    int n = opsched_graph_num_nodes(g);
    *ms = calloc((size_t)n, sizeof(double));
    assert_non_null(*ms);
    for (int i = 0; i < n; i++) {
        const opsched_node *nd = opsched_graph_node(g, i);
        (*ms)[i] = opsched_op_is_view(nd->op) ? 0 : 0.004 + (double)nd->cost.flops * 1e-9;
    }
    memset(pc, 0, sizeof(*pc));
    pc->node_ms = *ms;
    pc->n_nodes = n;
    opsched_contention_defaults(&pc->model);
    o.cost = opsched_stage_cost_predicted;
    o.user = pc;
    return o;
}

static opsched_schedule *searched(const opsched_graph *g, opsched_searcher which)
{
    opsched_predicted_cost pc;
    double *ms = NULL;
    opsched_search_options o = predicted_options(g, which, &pc, &ms);
    opsched_schedule *s = NULL;
    CHECK(opsched_schedule_search(g, &o, &s, NULL));
    free(ms);
    return s;
}

/* ---- checks ------------------------------------------------------------- */

/* Runs g sequentially and as s scheduled (same options, same seed) and
 * returns the relative L2 error between them. */
static double run_both(const opsched_graph *g, const opsched_schedule *s,
                       const opsched_exec_options *so, opsched_exec_info *info)
{
    opsched_exec_options o;
    memset(&o, 0, sizeof(o));
    if (so) o = *so;
    o.seed = 7;
    /* the reference: the sequential schedule, every Concat copying */
    opsched_exec_options ro = o;
    ro.no_concat_elision = 1;
    opsched_executor *ref = NULL;
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, NULL, &ro, &ref));
    CHECK(opsched_executor_create(env.cpu, g, s, &o, &ex));
    CHECK(opsched_executor_run(ref));
    CHECK(opsched_executor_run(ex));
    CHECK(opsched_device_sync(env.cpu));
    double err = -1;
    CHECK(opsched_executor_compare(ex, ref, &err));
    if (info) CHECK(opsched_executor_info(ex, info));
    /* a second run on the same memory gives the same answer */
    CHECK(opsched_executor_run(ex));
    CHECK(opsched_device_sync(env.cpu));
    double again = -1;
    CHECK(opsched_executor_compare(ex, ref, &again));
    assert_true(again == err);
    opsched_executor_free(ex);
    opsched_executor_free(ref);
    return err;
}

/* Every pair of launches that touch overlapping arena bytes, one of them
 * writing, is ordered by the program: the later one is reachable from
 * the earlier through stream order and event waits.  Returns how many
 * pairs of launches of one stage on different streams stay unordered. */
static int check_program(const opsched_executor *ex)
{
    int nl = ex->n_launches;
    unsigned char *reach = calloc((size_t)nl * (size_t)nl, 1);
    int *recorder = malloc(sizeof(int) * (size_t)(ex->n_events + 1));
    assert_non_null(reach);
    assert_non_null(recorder);
    for (int e = 0; e < ex->n_events; e++)
        recorder[e] = -1;
    for (int u = 0; u < nl; u++)
        if (ex->launches[u].record >= 0) recorder[ex->launches[u].record] = u;
    for (int u = 0; u < nl; u++) {
        const ex_launch *l = &ex->launches[u];
        for (int d = 0; d < u; d++) {
            int direct = ex->launches[d].stream == l->stream;
            for (int w = 0; w < l->n_waits; w++) {
                assert_true(recorder[l->waits[w]] >= 0);
                assert_true(recorder[l->waits[w]] < u);
                if (recorder[l->waits[w]] == d) direct = 1;
            }
            if (direct) {
                reach[(size_t)d * nl + u] = 1;
                for (int c = 0; c < d; c++)
                    if (reach[(size_t)c * nl + d]) reach[(size_t)c * nl + u] = 1;
            }
        }
    }
    for (int u = 0; u < nl; u++) {
        const ex_launch *a = &ex->launches[u];
        for (int v = u + 1; v < nl; v++) {
            const ex_launch *b = &ex->launches[v];
            int conflict = 0;
            for (int i = 0; i < a->n_in + a->n_out && !conflict; i++) {
                int ta = i < a->n_in ? a->in[i] : a->out[i - a->n_in];
                if (ta < 0) continue;
                for (int j = 0; j < b->n_in + b->n_out && !conflict; j++) {
                    int tb = j < b->n_in ? b->in[j] : b->out[j - b->n_in];
                    if (tb < 0 || (i < a->n_in && j < b->n_in)) continue;
                    size_t ra = 0, rb = 0;
                    int xa = os_ex_root(ex, ta, &ra), xb = os_ex_root(ex, tb, &rb);
                    const ex_tensor *pa = &ex->tensors[xa], *pb = &ex->tensors[xb];
                    if (pa->arena_off == SIZE_MAX || pb->arena_off == SIZE_MAX) continue;
                    size_t la = pa->arena_off + ra, lb = pb->arena_off + rb;
                    if (la < lb + ex->tensors[tb].bytes && lb < la + ex->tensors[ta].bytes)
                        conflict = 1;
                }
            }
            if (conflict && !reach[(size_t)u * nl + v])
                fail_msg("launches '%s' and '%s' touch the same memory, unordered", a->label,
                         b->label);
        }
    }
    int unordered = 0;
    for (int u = 0; u < nl; u++)
        for (int v = u + 1; v < nl; v++)
            if (ex->launches[u].stage == ex->launches[v].stage &&
                ex->launches[u].stream != ex->launches[v].stream && !reach[(size_t)u * nl + v])
                unordered++;
    free(reach);
    free(recorder);
    return unordered;
}

static int program_unordered(const opsched_graph *g, const opsched_schedule *s,
                             const opsched_exec_options *o)
{
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, s, o, &ex));
    int n = check_program(ex);
    opsched_executor_free(ex);
    return n;
}

/* ---- tests -------------------------------------------------------------- */

static void test_concurrent_groups(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = small_graph(1);
    opsched_schedule *s = hand_schedule(g, "conv1;relu1|convA convB|add|concat|pool|fc");
    opsched_exec_info info;
    double err = run_both(g, s, NULL, &info);
    print_message("small, two groups: rel L2 %.3g, %d streams, %d launches, %d waits, %d concats "
                  "elided\n",
                  err, info.n_streams, info.n_launches, info.n_waits, info.n_concats_elided);
    assert_true(err <= 1e-6);
    assert_int_equal(info.n_streams, 2);
    assert_int_equal(info.n_concats_elided, 1);
    assert_int_equal(info.n_launches, 7); /* the concat and the flatten run nothing */
    assert_true(info.n_waits >= 1);
    assert_true(program_unordered(g, s, NULL) > 0);

    /* without elision the concat runs */
    opsched_exec_options o;
    memset(&o, 0, sizeof(o));
    o.no_concat_elision = 1;
    err = run_both(g, s, &o, &info);
    assert_true(err <= 1e-6);
    assert_int_equal(info.n_concats_elided, 0);
    assert_int_equal(info.n_launches, 8);
    opsched_schedule_free(s);
    opsched_graph_free(g);
}

/* What each node became, through the public per-node information. */
static void test_roles(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = small_graph(1);
    opsched_schedule *s = hand_schedule(g, "conv1;relu1|convA convB|add|concat|pool|fc");
    opsched_exec_options o;
    memset(&o, 0, sizeof(o));
    o.plan.fuse_activation = 1;
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, s, &o, &ex));
    const opsched_layer_info *relu1 = opsched_executor_layer(ex, node_index(g, "relu1"));
    const opsched_layer_info *cat = opsched_executor_layer(ex, node_index(g, "concat"));
    const opsched_layer_info *flat = opsched_executor_layer(ex, node_index(g, "flatten"));
    const opsched_layer_info *a = opsched_executor_layer(ex, node_index(g, "convA"));
    const opsched_layer_info *b = opsched_executor_layer(ex, node_index(g, "convB"));
    assert_int_equal(relu1->role, OPSCHED_ROLE_FUSED);
    assert_int_equal(cat->role, OPSCHED_ROLE_CONCAT_ELIDED);
    assert_int_equal(flat->role, OPSCHED_ROLE_VIEW);
    assert_int_equal(a->role, OPSCHED_ROLE_LAUNCH);
    assert_int_equal(a->stage, 1);
    assert_int_equal(b->stage, 1);
    assert_int_not_equal(a->stream, b->stream);
    assert_null(opsched_executor_layer(ex, -1));
    check_program(ex);
    opsched_executor_free(ex);
    assert_true(run_both(g, s, &o, NULL) <= 1e-6);
    opsched_schedule_free(s);
    opsched_graph_free(g);
}

/* A merged stage of three convolutions (1x1, 3x3, 5x5) with their Relus,
 * whose outputs are also the concat's parts. */
static void test_merge(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    for (int fuse = 0; fuse < 2; fuse++) {
        opsched_graph *g = block_graph(1);
        opsched_schedule *s = NULL;
        CHECK(opsched_schedule_create(g, &s));
        int k = -1;
        add_stage(s, g, (const char *const[]){"stem,stem_relu", NULL});
        int convs[3] = {node_index(g, "b1"), node_index(g, "b2"), node_index(g, "b3")};
        int relus[3] = {node_index(g, "b1_relu"), node_index(g, "b2_relu"),
                        node_index(g, "b3_relu")};
        CHECK(opsched_schedule_add_merge(s, g, convs, relus, 3, &k));
        add_stage(s, g, (const char *const[]){"pool,b4,b4_relu", NULL});
        add_stage(s, g, (const char *const[]){"concat", NULL});
        add_stage(s, g, (const char *const[]){"gap", NULL});
        add_stage(s, g, (const char *const[]){"fc", NULL});
        CHECK(opsched_schedule_validate(g, s));
        opsched_exec_options o;
        memset(&o, 0, sizeof(o));
        o.plan.fuse_activation = fuse;
        opsched_exec_info info;
        double err = run_both(g, s, &o, &info);
        print_message("merge (fuse %d): rel L2 %.3g, %d launches, %d splits, %d concats elided\n",
                      fuse, err, info.n_launches, info.n_merge_splits, info.n_concats_elided);
        assert_true(err <= 1e-5);
        assert_int_equal(info.n_merges, 1);
        assert_int_equal(info.n_merge_splits, 0);
        /* the members are the concat's first three parts: the merged
         * convolution writes straight into the concat's output */
        assert_int_equal(info.n_concats_elided, 1);
        program_unordered(g, s, &o);

        /* the same schedule at batch 3: slices are not contiguous, a Split copies */
        opsched_graph *g3 = block_graph(3);
        err = run_both(g3, s, &o, &info);
        print_message("merge at batch 3: rel L2 %.3g, %d splits\n", err, info.n_merge_splits);
        assert_true(err <= 1e-5);
        assert_int_equal(info.n_merge_splits, 1);
        assert_int_equal(info.n_concats_elided, 0);
        program_unordered(g3, s, &o);
        opsched_graph_free(g3);
        opsched_schedule_free(s);
        opsched_graph_free(g);
    }
}

/* Concat elision needs contiguous slices: at batch 2 the concat copies. */
static void test_no_elision_at_batch(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g1 = small_graph(1), *g2 = small_graph(2);
    opsched_schedule *s = hand_schedule(g1, "conv1;relu1|convA convB|add|concat|pool|fc");
    opsched_exec_info info;
    double err = run_both(g2, s, NULL, &info);
    assert_true(err <= 1e-6);
    assert_int_equal(info.n_concats_elided, 0);
    opsched_schedule_free(s);
    opsched_graph_free(g1);
    opsched_graph_free(g2);
}

/* Schedules from the searchers on the block graph and googlenet at 32x32:
 * the sequential schedule, greedy and IOS (merges allowed), fused and not. */
static void test_searched(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    /* resnet50: residual Adds fused into convolutions where the residual's
     * producer launches first, whatever the schedule */
    opsched_graph *graphs[3] = {block_graph(1), zoo("googlenet", 1, 32), zoo("resnet50", 1, 32)};
    const opsched_searcher which[3] = {OPSCHED_SEARCH_SEQUENTIAL, OPSCHED_SEARCH_GREEDY,
                                       OPSCHED_SEARCH_IOS};
    for (int gi = 0; gi < 3; gi++) {
        for (int w = 0; w < 3; w++) {
            opsched_schedule *s = searched(graphs[gi], which[w]);
            for (int fuse = gi > 0; fuse < 2; fuse++) { /* the zoo's: fused only */
                opsched_exec_options o;
                memset(&o, 0, sizeof(o));
                o.plan.fuse_activation = fuse;
                opsched_exec_info info;
                double err = run_both(graphs[gi], s, &o, &info);
                int unordered = program_unordered(graphs[gi], s, &o);
                print_message("%s %s fuse %d: rel L2 %.3g; %d stages, %d streams, %d launches, "
                              "%d waits, %d concats elided, %d merges; arena %zu B; %d pairs "
                              "unordered\n",
                              opsched_graph_name(graphs[gi]), opsched_searcher_name(which[w]), fuse,
                              err, info.n_stages, info.n_streams, info.n_launches, info.n_waits,
                              info.n_concats_elided, info.n_merges, info.arena_bytes, unordered);
                assert_true(err <= 1e-5);
                if (which[w] == OPSCHED_SEARCH_SEQUENTIAL) {
                    assert_int_equal(info.n_streams, 1);
                    assert_int_equal(info.n_waits, 0);
                } else if (gi < 2) {
                    assert_true(info.n_streams > 1);
                    assert_true(unordered > 0);
                }
                if (gi == 1) assert_true(info.n_concats_elided > 0);
            }
            opsched_schedule_free(s);
        }
        opsched_graph_free(graphs[gi]);
    }
}

/* Traced runs: one span per launch, on the streams the groups ran on;
 * capture needs device graphs, which the CPU does not have. */
static void test_trace_and_capture(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = small_graph(1);
    opsched_schedule *s = hand_schedule(g, "conv1;relu1|convA convB|add|concat|pool|fc");
    opsched_executor *ex = NULL;
    CHECK(opsched_executor_create(env.cpu, g, s, NULL, &ex));
    opsched_exec_span *spans = NULL;
    int n = 0;
    double total = 0;
    CHECK(opsched_executor_trace(ex, &spans, &n, &total));
    opsched_exec_info info;
    CHECK(opsched_executor_info(ex, &info));
    assert_int_equal(n, info.n_launches);
    int streams_seen = 0;
    for (int i = 0; i < n; i++) {
        assert_true(spans[i].start_ms >= 0 && spans[i].dur_ms >= 0);
        assert_true(spans[i].start_ms + spans[i].dur_ms <= total + 1e-6);
        streams_seen |= 1 << spans[i].stream;
    }
    assert_int_equal(streams_seen, 3);
    free(spans);
    assert_int_equal(opsched_executor_capture(ex), OPSCHED_ERR_UNSUPPORTED);
    assert_int_equal(opsched_executor_replay(ex), OPSCHED_ERR_INVALID_ARG);
    opsched_run_timing_options to = {.warmup_ms = 1, .iters = 5, .min_ms = 0};
    opsched_run_timing t;
    CHECK(opsched_executor_time(ex, 0, &to, &t));
    assert_int_equal(t.stats.n, 5);
    assert_true(t.p10 <= t.stats.median && t.stats.median <= t.stats.p90);
    opsched_executor_free(ex);
    opsched_schedule_free(s);
    opsched_graph_free(g);
}

/* 1 when node i launches work of its own (a merge's counts under its first member). */
static int launches(const opsched_executor *ex, int i)
{
    const opsched_layer_info *li = opsched_executor_layer(ex, i);
    for (int u = 0; u < ex->n_launches; u++)
        if (ex->launches[u].node == i) return 1;
    assert_true(li->role != OPSCHED_ROLE_LAUNCH && li->role != OPSCHED_ROLE_VIEW_COPY);
    return 0;
}

/* Layer-timed and host-timed runs of schedules on several streams, with a
 * merged convolution: every node that launches gets its time (a merge's
 * under its first member), the others 0; the layers lie inside the
 * layer-timed run (the CPU runs one launch at a time) and add up to the
 * host-timed call; the host-timed run computes what a free run does. */
static void test_timed_modes(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *graphs[2] = {small_graph(1), block_graph(1)};
    opsched_schedule *sched[2];
    sched[0] = hand_schedule(graphs[0], "conv1;relu1|convA convB|add|concat|pool|fc");
    CHECK(opsched_schedule_create(graphs[1], &sched[1]));
    add_stage(sched[1], graphs[1], (const char *const[]){"stem,stem_relu", NULL});
    int convs[2] = {node_index(graphs[1], "b1"), node_index(graphs[1], "b2")};
    int relus[2] = {node_index(graphs[1], "b1_relu"), node_index(graphs[1], "b2_relu")};
    CHECK(opsched_schedule_add_merge(sched[1], graphs[1], convs, relus, 2, NULL));
    add_stage(sched[1], graphs[1], (const char *const[]){"b3,b3_relu", "pool,b4,b4_relu", NULL});
    add_stage(sched[1], graphs[1], (const char *const[]){"concat", NULL});
    add_stage(sched[1], graphs[1], (const char *const[]){"gap", NULL});
    add_stage(sched[1], graphs[1], (const char *const[]){"fc", NULL});
    CHECK(opsched_schedule_validate(graphs[1], sched[1]));
    for (int k = 0; k < 2; k++) {
        const opsched_graph *g = graphs[k];
        int nn = opsched_graph_num_nodes(g);
        opsched_executor *ex = NULL;
        CHECK(opsched_executor_create(env.cpu, g, sched[k], NULL, &ex));
        opsched_exec_info info;
        CHECK(opsched_executor_info(ex, &info));
        assert_true(info.n_streams == 2);
        double *ms = malloc(sizeof(double) * (size_t)nn), total = 0;
        assert_non_null(ms);
        for (int rep = 0; rep < 2; rep++) {
            for (int i = 0; i < nn; i++)
                ms[i] = -1;
            CHECK(opsched_executor_run_layers(ex, ms, &total));
            double sum = 0;
            for (int i = 0; i < nn; i++) {
                assert_true(ms[i] >= 0);
                if (!launches(ex, i)) assert_true(ms[i] == 0);
                sum += ms[i];
            }
            print_message("%s: layer-timed run %.4f ms, layers %.4f ms\n", opsched_graph_name(g),
                          total, sum);
            assert_true(total > 0 && sum > 0);
            assert_true(sum <= total * (1 + 1e-9));
        }
        if (k == 1) assert_true(ms[convs[1]] == 0 && ms[relus[0]] == 0);

        /* host-timed: the nodes add up to the call, and it computes */
        opsched_executor *ref = NULL;
        CHECK(opsched_executor_create(env.cpu, g, NULL, NULL, &ref));
        CHECK(opsched_executor_run(ref));
        double t1 = 0, sum = 0;
        opsched_timer *tm = NULL;
        CHECK(opsched_timer_create(env.cpu, &tm));
        CHECK(opsched_timer_start(tm, NULL));
        CHECK(opsched_executor_run_host_timed(ex, ms));
        CHECK(opsched_timer_stop(tm, NULL));
        CHECK(opsched_timer_elapsed_ms(tm, &t1));
        opsched_timer_free(tm);
        for (int i = 0; i < nn; i++) {
            assert_true(ms[i] >= 0);
            if (!launches(ex, i)) assert_true(ms[i] == 0);
            sum += ms[i];
        }
        print_message("%s: host-timed call %.4f ms, nodes %.4f ms\n", opsched_graph_name(g), t1,
                      sum);
        assert_true(sum > 0 && sum <= t1 * (1 + 1e-9));
        double err = -1;
        CHECK(opsched_executor_compare(ex, ref, &err));
        assert_true(err <= 1e-6);
        assert_int_equal(opsched_executor_run_host_timed(ex, NULL), OPSCHED_ERR_INVALID_ARG);
        assert_int_equal(opsched_executor_run_layers(NULL, ms, NULL), OPSCHED_ERR_INVALID_ARG);
        free(ms);
        opsched_executor_free(ref);
        opsched_executor_free(ex);
        opsched_schedule_free(sched[k]);
        opsched_graph_free(graphs[k]);
    }
}

/* A schedule of another model, and one that is not valid, are refused. */
static void test_refused(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = small_graph(1), *b = block_graph(1);
    opsched_schedule *s = hand_schedule(g, "conv1;relu1|convA convB|add|concat|pool|fc");
    opsched_executor *ex = NULL;
    assert_int_equal(opsched_executor_create(env.cpu, b, s, NULL, &ex), OPSCHED_ERR_INVALID_ARG);
    assert_null(ex);
    opsched_schedule_free(s);
    CHECK(opsched_schedule_create(g, &s));
    add_stage(s, g, (const char *const[]){"conv1,relu1", NULL});
    assert_int_equal(opsched_executor_create(env.cpu, g, s, NULL, &ex), OPSCHED_ERR_INVALID_ARG);
    print_message("refused: %s\n", opsched_ctx_last_error(env.ctx));
    opsched_schedule_free(s);
    opsched_graph_free(g);
    opsched_graph_free(b);
}

/* Measured stage costs: a concurrent stage and a merged one cost a
 * positive finite time, a stage seen again is answered from the table,
 * and the measured cost drives an IOS search whose schedule runs. */
static void test_stage_cost(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = block_graph(1);
    opsched_schedule *s = NULL;
    CHECK(opsched_schedule_create(g, &s));
    add_stage(s, g, (const char *const[]){"stem,stem_relu", NULL});
    add_stage(s, g, (const char *const[]){"b1,b1_relu", "b2,b2_relu", "pool,b4,b4_relu", NULL});
    int convs[2] = {node_index(g, "b1"), node_index(g, "b3")};
    int relus[2] = {node_index(g, "b1_relu"), node_index(g, "b3_relu")};
    int k = -1;
    CHECK(opsched_schedule_add_merge(s, g, convs, relus, 2, &k));
    opsched_stage_measure_options mo;
    memset(&mo, 0, sizeof(mo));
    mo.timing = (opsched_run_timing_options){.warmup_ms = 0.1, .iters = 3, .min_ms = 0};
    opsched_stage_measurer *m = NULL;
    CHECK(opsched_stage_measurer_create(env.cpu, &mo, &m));
    double ms[3], again = 0;
    for (int i = 0; i < 3; i++) {
        CHECK(opsched_stage_cost_measured(m, g, &s->stages[i], &ms[i]));
        print_message("stage %d: %.4f ms\n", i + 1, ms[i]);
        assert_true(isfinite(ms[i]) && ms[i] > 0);
    }
    CHECK(opsched_stage_cost_measured(m, g, &s->stages[1], &again));
    assert_true(again == ms[1]);
    opsched_stage_measurer_stats st;
    opsched_stage_measurer_stats_get(m, &st);
    assert_int_equal(st.measured, 3);
    assert_int_equal(st.cached, 1);
    assert_int_equal(st.unsupported, 0);
    opsched_schedule_free(s);

    opsched_search_options o;
    memset(&o, 0, sizeof(o));
    o.searcher = OPSCHED_SEARCH_IOS;
    o.cost = opsched_stage_cost_measured;
    o.user = m;
    CHECK(opsched_schedule_search(g, &o, &s, NULL));
    opsched_stage_measurer_stats_get(m, &st);
    print_message("IOS with measured costs: %d stages, predicted %.4f ms; %lld stages measured, "
                  "%lld cached, %.2f s\n",
                  s->n_stages, s->predicted_ms, (long long)st.measured, (long long)st.cached,
                  st.seconds);
    assert_true(st.measured > 3);
    assert_true(run_both(g, s, NULL, NULL) <= 1e-5);
    opsched_schedule_free(s);
    opsched_stage_measurer_free(m);
    opsched_graph_free(g);
}

/* A layout per tensor in stage costs: under NHWC a stage's signature names
 * the row-major 4-D tensors it reads or writes (ConvNeXt's LayerNorm and
 * product after the Transpose to [N, H, W, C]), so that a cost measured
 * with them row-major is not one of images; without them (NCHW, or a
 * convolution over images) it is the plain signature.  (The stage
 * measurer hands the copy's executor its network's layout per tensor, exec
 * option rowmajor; the CPU backend plans NCHW only, so that runs on the
 * GPU.) */
static void test_stage_rowmajor(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_shape xs = {4, {2, 8, 6, 6}};
    opsched_graph *g = netref_conv_norm_graph(env.ctx, &xs, 5);
    assert_non_null(g);
    int nt = opsched_graph_num_tensors(g);
    unsigned char *rm = calloc((size_t)nt, 1);
    assert_non_null(rm);
    assert_true(opsched_layout_rowmajor(g, rm) > 0);
    opsched_schedule *s = NULL;
    CHECK(opsched_schedule_create(g, &s));
    add_stage(s, g, (const char *const[]){"norm,mm", NULL});
    add_stage(s, g, (const char *const[]){"dw3", NULL});
    char *plain = NULL, *with = NULL, *none = NULL, *conv_plain = NULL, *conv_with = NULL;
    CHECK(opsched_stage_signature(g, &s->stages[0], &plain));
    CHECK(opsched_stage_signature_layout(g, &s->stages[0], rm, &with));
    CHECK(opsched_stage_signature_layout(g, &s->stages[0], NULL, &none));
    CHECK(opsched_stage_signature(g, &s->stages[1], &conv_plain));
    CHECK(opsched_stage_signature_layout(g, &s->stages[1], rm, &conv_with));
    print_message("%s\n%s\n", with, conv_with);
    assert_string_equal(none, plain);
    assert_int_equal(strncmp(with, plain, strlen(plain)), 0);
    /* the norm's input and output and the product's output */
    assert_string_equal(with + strlen(plain), " rowmajor=2x6x6x8,2x6x6x8,2x6x6x8");
    assert_string_equal(conv_with, conv_plain);
    free(plain);
    free(with);
    free(none);
    free(conv_plain);
    free(conv_with);
    opsched_schedule_free(s);
    opsched_graph_free(g);
    free(rm);
}

/* Whole schedules timed against each other: a missing candidate is
 * skipped (+inf), the fastest is named, and nothing to run is an error. */
static void test_time_whole(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_graph *g = block_graph(1);
    const opsched_schedule *c[3] = {NULL, searched(g, OPSCHED_SEARCH_SEQUENTIAL),
                                    searched(g, OPSCHED_SEARCH_GREEDY)};
    opsched_run_timing_options to = {.warmup_ms = 0.1, .iters = 3, .min_ms = 0};
    double ms[3] = {0, 0, 0};
    int best = -1;
    CHECK(opsched_schedules_time_whole(env.cpu, g, c, 3, NULL, &to, ms, &best));
    print_message("whole: sequential %.4f ms, greedy %.4f ms; best %d\n", ms[1], ms[2], best);
    assert_true(isinf(ms[0]));
    assert_true(isfinite(ms[1]) && ms[1] > 0 && isfinite(ms[2]) && ms[2] > 0);
    assert_true(best == 1 || best == 2);
    assert_true(ms[best] <= ms[1] && ms[best] <= ms[2]);
    const opsched_schedule *none[1] = {NULL};
    assert_int_equal(opsched_schedules_time_whole(env.cpu, g, none, 1, NULL, &to, ms, &best),
                     OPSCHED_ERR_UNSUPPORTED);
    opsched_ctx_clear_error(env.ctx);
    assert_int_equal(opsched_schedules_time_whole(env.cpu, g, c, 0, NULL, &to, ms, &best),
                     OPSCHED_ERR_INVALID_ARG);

    /* --layout auto's choice: the CPU backend's convolutions are NCHW
     * only, so NHWC cannot run and NCHW is chosen untimed; a schedule
     * given is the one run. */
    const opsched_layout lay[2] = {OPSCHED_LAYOUT_NHWC, OPSCHED_LAYOUT_NCHW};
    ms[0] = ms[1] = 0;
    best = -1;
    CHECK(opsched_layouts_time_whole(env.cpu, g, NULL, lay, 2, NULL, &to, ms, &best));
    assert_int_equal(best, 1);
    assert_true(isinf(ms[0]) && isnan(ms[1]));
    best = -1;
    CHECK(opsched_layouts_time_whole(env.cpu, g, c[2], lay, 2, NULL, &to, ms, &best));
    assert_int_equal(best, 1);
    assert_int_equal(opsched_layouts_time_whole(env.cpu, g, NULL, lay, 1, NULL, &to, ms, &best),
                     OPSCHED_ERR_UNSUPPORTED);
    opsched_ctx_clear_error(env.ctx);
    const opsched_layout bad[1] = {(opsched_layout)7};
    assert_int_equal(opsched_layouts_time_whole(env.cpu, g, NULL, bad, 1, NULL, &to, ms, &best),
                     OPSCHED_ERR_INVALID_ARG);
    opsched_schedule_free((opsched_schedule *)c[1]);
    opsched_schedule_free((opsched_schedule *)c[2]);

    /* The check of a searched schedule: greedy and sequential searched
     * under the same options, the fastest kept in place. */
    opsched_predicted_cost pc;
    double *node_ms = NULL;
    opsched_search_options so = predicted_options(g, OPSCHED_SEARCH_IOS, &pc, &node_ms);
    opsched_schedule *s = NULL;
    CHECK(opsched_schedule_search(g, &so, &s, NULL));
    opsched_whole_check w;
    CHECK(opsched_schedule_keep_fastest(env.cpu, g, &so, NULL, &s, &w));
    print_message("kept %s of %d: %.4f %.4f %.4f ms\n", opsched_searcher_name(w.searcher[w.kept]),
                  w.n, w.ms[0], w.ms[1], w.ms[2]);
    assert_int_equal(w.n, 3);
    assert_int_equal(w.searcher[0], OPSCHED_SEARCH_IOS);
    assert_true(w.kept >= 0 && w.kept < 3);
    for (int i = 0; i < 3; i++) assert_true(w.ms[w.kept] <= w.ms[i]);
    assert_true(run_both(g, s, NULL, NULL) <= 1e-5);
    opsched_schedule_free(s);
    so.searcher = OPSCHED_SEARCH_GREEDY; /* the searched one is not timed twice */
    s = searched(g, OPSCHED_SEARCH_GREEDY);
    CHECK(opsched_schedule_keep_fastest(env.cpu, g, &so, NULL, &s, &w));
    assert_int_equal(w.n, 2);
    opsched_schedule_free(s);
    free(node_ms);
    opsched_graph_free(g);
}

/* Events on the CPU: created, recorded and waited on without effect (its
 * streams finish every launch before it returns); NULL is refused. */
static void test_events(void **state)
{
    (void)state;
    SKIP_WITHOUT_CPU();
    opsched_event *e = NULL;
    opsched_stream *s = NULL;
    CHECK(opsched_event_create(env.cpu, &e));
    CHECK(opsched_stream_create(env.cpu, &s));
    CHECK(opsched_event_record(e, NULL));
    CHECK(opsched_stream_wait_event(s, e));
    CHECK(opsched_event_record(e, s));
    CHECK(opsched_stream_wait_event(opsched_device_stream(env.cpu), e));
    assert_int_equal(opsched_stream_wait_event(s, NULL), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_event_record(NULL, s), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_event_create(NULL, &e), OPSCHED_ERR_INVALID_ARG);
    opsched_event_free(NULL);
    opsched_stream_free(s);
    opsched_event_free(e);
}

static int setup(void **state)
{
    (void)state;
    if (opsched_ctx_create(&env.ctx) != OPSCHED_OK) return -1;
    int count = 0;
    if (opsched_device_count(env.ctx, "cpu", &count) != OPSCHED_OK || count == 0) return 0;
    if (opsched_device_open(env.ctx, "cpu", 0, &env.cpu) != OPSCHED_OK) env.cpu = NULL;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    opsched_device_close(env.cpu);
    opsched_ctx_free(env.ctx);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_groups),
        cmocka_unit_test(test_roles),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_no_elision_at_batch),
        cmocka_unit_test(test_searched),
        cmocka_unit_test(test_trace_and_capture),
        cmocka_unit_test(test_timed_modes),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_stage_cost),
        cmocka_unit_test(test_stage_rowmajor),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_time_whole),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
