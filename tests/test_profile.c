/*
 * test_profile.c - whole-network profiles on the CPU backend: squeezenet1_1
 * at a small size with few iterations (statistics that hold together, the
 * layers against the end to end, the numerics check, graphs unsupported
 * without being an error), a forced algorithm a layer cannot run, the trace
 * file read back with cJSON, and the network_runs table of the store with
 * its resume lookup, its summary and the upgrade of a schema-1 file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <math.h>
#include <sqlite3.h>

#include "core/util.h"
#include "support/assert_near.h"
#include "opsched/opsched.h"

typedef struct fixture {
    opsched_ctx *ctx;
    opsched_device *dev;
    opsched_graph *g;
    char dir[64];
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    if (!fx || opsched_ctx_create(&fx->ctx) != OPSCHED_OK) return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/opsched_profile_XXXXXX");
    if (!mkdtemp(fx->dir)) return -1;
    opsched_zoo_options zo = {.batch = 1, .height = 64};
    if (opsched_zoo_build(fx->ctx, "squeezenet1_1", &zo, &fx->g) != OPSCHED_OK) return -1;
    if (opsched_device_open(fx->ctx, "cpu", 0, &fx->dev) != OPSCHED_OK) {
        print_message("no CPU backend: %s\n", opsched_ctx_last_error(fx->ctx));
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", fx->dir);
    if (system(cmd) != 0) print_message("could not remove %s\n", fx->dir);
    opsched_graph_free(fx->g);
    opsched_device_close(fx->dev);
    opsched_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

static void quick_options(opsched_profile_options *o)
{
    opsched_profile_options_default(o);
    o->warmup_ms = 20;
    o->iters = 5;
    o->min_ms = 0;
    o->energy = 1; /* no sensor here: invalid, not an error */
}

static opsched_profile_result *profile_ok(fixture *fx, const opsched_profile_options *o)
{
    opsched_profile_result *r = NULL;
    opsched_status st = opsched_profile_graph(fx->dev, fx->g, o, &r);
    if (st != OPSCHED_OK) print_message("profile failed: %s\n", opsched_ctx_last_error(fx->ctx));
    assert_int_equal(st, OPSCHED_OK);
    assert_non_null(r);
    return r;
}


/* The sum of the layers' raw median host times. */
static double host_median_sum(const opsched_profile_result *r)
{
    double s = 0;
    for (int i = 0; i < r->n_layers; i++)
        if (r->layers[i].timed) s += r->layers[i].host.median;
    return s;
}

static void stats_sane(const opsched_stats *s, int n)
{
    assert_true(s->n >= n);
    assert_true(s->min > 0);
    assert_true(s->min <= s->median && s->median <= s->max);
    assert_true(s->min <= s->mean && s->mean <= s->max);
    assert_true(s->median <= s->p90 && s->p90 <= s->p99 && s->p99 <= s->max);
}

static void test_profile_squeezenet(void **state)
{
    fixture *fx = *state;
    opsched_profile_options o;
    quick_options(&o);
    opsched_profile_result *r = profile_ok(fx, &o);

    stats_sane(&r->e2e, 5);
    stats_sane(&r->e2e_layered, 5);
    assert_int_equal(r->e2e_graph.n, 0); /* the CPU has no graphs */
    assert_true(r->enqueue_ms > 0);
    assert_true(r->peak_memory_bytes > 0);
    assert_false(r->energy.valid && r->energy.energy_j <= 0);
    assert_int_equal(r->n_layers, opsched_graph_num_nodes(fx->g));

    int timed = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_profile *l = &r->layers[i];
        const opsched_node *n = opsched_graph_node(fx->g, i);
        assert_int_equal(l->node, i);
        assert_true(l->algo[0] != '\0');
        if (opsched_op_is_view(n->op)) assert_false(l->timed);
        if (!l->timed) {
            assert_true(l->host_ms == 0); /* views and fused Relus enqueue nothing */
            assert_int_equal(l->host.n, 0);
            assert_int_equal(l->stats.n, 0);
            assert_true(l->median_ms == 0);
            continue;
        }
        timed++;
        /* every timed free-running inference */
        assert_int_equal(l->host.n, r->e2e.n);
        assert_true(isfinite(l->host_ms) && l->host_ms > 0);
        /* its median's share of the median inference */
        assert_double_equal(l->host_ms,
                            l->host.median * r->free_host_ms / host_median_sum(r), 1e-9 * l->host_ms);
        assert_int_equal(l->stats.n, 5);
        assert_true(l->median_ms > 0 && l->run_ms > 0);
        assert_true(l->median_ms == l->stats.median);
    }
    assert_true(timed > 20);

    /* The layers account for the network within a factor of four: a shared
     * test machine's CPU timings are noisy, and views cost nothing. */
    print_message("squeezenet1_1 b1 64 on cpu: e2e median %.3f ms, layer sum %.3f ms, "
                  "attribution %.1f%%, check rel L2 %.2e\n",
                  r->e2e.median, r->layer_sum_ms, 100 * r->attribution_latency, r->check_rel_l2);
    assert_true(r->layer_sum_ms > 0);
    assert_true(fabs(r->attribution_latency - r->layer_sum_ms / r->e2e.median) < 1e-12);
    assert_true(r->attribution_latency > 0.25 && r->attribution_latency < 4.0);

    assert_true(r->check_passed);
    assert_string_equal(r->check_note, "");
    assert_true(r->check_rel_l2 <= 1e-5);
    assert_true(r->check_tolerance == 1e-5);

    /* Host enqueue times: on the CPU a launch computes, so the layers' sum
     * is one free run's time, at most the measured enqueue time (loosely:
     * a shared machine's CPU timings are noisy, and the medians per layer
     * of 30 runs on a warm cache often come out well below it). */
    double host_sum = 0;
    for (int i = 0; i < r->n_layers; i++)
        host_sum += r->layers[i].host_ms;
    print_message("host enqueue: layer sum %.3f ms, free run's enqueue %.3f ms\n",
                  r->layer_host_sum_ms, r->enqueue_ms);
    assert_true(fabs(host_sum - r->layer_host_sum_ms) < 1e-9);
    assert_true(r->layer_host_sum_ms > 0);
    assert_true(r->layer_host_sum_ms <= 4.0 * r->enqueue_ms);
    /* The host times were read in the timed free-running inferences: their
     * median total is a free run's time (on the CPU, its compute), the
     * layers' shares add up to it, and their raw medians to about it
     * (medians of sums and sums of medians differ a little). */
    print_message("host per timed free-running inference %.3f ms, e2e median %.3f ms\n",
                  r->free_host_ms, r->e2e.median);
    assert_true(r->free_host_ms > 0);
    assert_true(r->free_host_ms <= 4.0 * r->e2e.median && r->free_host_ms >= 0.25 * r->e2e.median);
    assert_double_equal(r->layer_host_sum_ms, r->free_host_ms, 1e-9 * r->free_host_ms);
    /* Within the factor of four the end to end is held to above: on a
     * loaded 2-core machine (the fuzzers, or a parallel test run) most of
     * the 5 inferences are preempted somewhere, which the total's median
     * keeps and the layers' medians drop (0.5 to 2 failed 1 run in 2 there). */
    assert_true(host_median_sum(r) > 0.25 * r->free_host_ms &&
                host_median_sum(r) < 4.0 * r->free_host_ms);
    opsched_profile_result_free(r);
}

/* The executor's host-timed run directly (the sequential schedule, fused
 * Relus and elided Concats): every node gets a time, the nodes that run
 * nothing 0, and the whole run's outputs are a free run's. */
static void test_executor_host_timed(void **state)
{
    fixture *fx = *state;
    opsched_executor *ex = NULL;
    opsched_exec_options eo;
    memset(&eo, 0, sizeof(eo));
    eo.plan.fuse_activation = 1;
    assert_int_equal(opsched_executor_create(fx->dev, fx->g, NULL, &eo, &ex), OPSCHED_OK);
    int n = opsched_graph_num_nodes(fx->g);
    double *ms = malloc(sizeof(double) * (size_t)n);
    assert_non_null(ms);
    for (int i = 0; i < n; i++)
        ms[i] = -1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(opsched_executor_run_host_timed(ex, ms), OPSCHED_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(opsched_device_sync(fx->dev), OPSCHED_OK);
    /* One clock read per boundary: the nodes add up to the whole call. */
    double whole = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    double total = 0;
    for (int i = 0; i < n; i++)
        total += ms[i] > 0 ? ms[i] : 0;
    print_message("host-timed run: nodes %.4f ms of the call's %.4f ms\n", total, whole);
    assert_true(total <= whole + 1e-9 && total >= 0.9 * whole);
    int launched = 0, idle = 0;
    for (int i = 0; i < n; i++) {
        const opsched_layer_info *li = opsched_executor_layer(ex, i);
        assert_true(isfinite(ms[i]) && ms[i] >= 0);
        if (li->role != OPSCHED_ROLE_LAUNCH && li->role != OPSCHED_ROLE_VIEW_COPY) {
            assert_true(ms[i] == 0);
            idle++;
        } else {
            assert_true(ms[i] > 0);
            launched++;
        }
    }
    assert_true(launched > 20 && idle > 0);
    size_t numel = opsched_executor_output_numel(ex, 0);
    float *a = malloc(sizeof(float) * numel), *b = malloc(sizeof(float) * numel);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(opsched_executor_get_output(ex, 0, a, numel), OPSCHED_OK);
    assert_int_equal(opsched_executor_run(ex), OPSCHED_OK);
    assert_int_equal(opsched_device_sync(fx->dev), OPSCHED_OK);
    assert_int_equal(opsched_executor_get_output(ex, 0, b, numel), OPSCHED_OK);
    assert_memory_equal(a, b, sizeof(float) * numel);
    assert_int_equal(opsched_executor_run_host_timed(ex, NULL), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_executor_run_host_timed(NULL, ms), OPSCHED_ERR_INVALID_ARG);
    free(a);
    free(b);
    free(ms);
    opsched_executor_free(ex);
}

static void test_profile_options_off(void **state)
{
    fixture *fx = *state;
    opsched_profile_options o;
    quick_options(&o);
    o.layers = 0;
    o.check = 0;
    o.cuda_graph = 0;
    o.energy = 0;
    opsched_profile_result *r = profile_ok(fx, &o);
    stats_sane(&r->e2e, 5);
    assert_int_equal(r->e2e_layered.n, 0);
    assert_true(isnan(r->layer_sum_ms) && isnan(r->attribution_latency));
    assert_true(isnan(r->check_rel_l2));
    assert_false(r->check_passed);
    assert_false(r->energy.valid);
    assert_true(isnan(r->attribution_energy));
    opsched_profile_result_free(r);

    o.host_layers = 0; /* no host-timed runs: NaN, no statistics */
    r = profile_ok(fx, &o);
    assert_true(isnan(r->layer_host_sum_ms));
    for (int i = 0; i < r->n_layers; i++) {
        assert_true(isnan(r->layers[i].host_ms));
        assert_int_equal(r->layers[i].host.n, 0);
    }
    opsched_profile_result_free(r);

    /* Bad options fail before anything runs. */
    o.host_layers = 1;
    o.iters = 0;
    r = NULL;
    assert_int_equal(opsched_profile_graph(fx->dev, fx->g, &o, &r), OPSCHED_ERR_INVALID_ARG);
    assert_null(r);
    opsched_profile_result_free(NULL);
}

static void test_forced_algorithm(void **state)
{
    fixture *fx = *state;
    opsched_profile_options o;
    quick_options(&o);
    o.check = 0;
    /* oneDNN's winograd runs 3x3 stride-1 convolutions only: squeezenet's
     * first (3x3, stride 2) and its 1x1 convolutions cannot use it. */
    o.exec.plan.algo = "winograd";
    opsched_profile_result *r = NULL;
    assert_int_equal(opsched_profile_graph(fx->dev, fx->g, &o, &r), OPSCHED_ERR_UNSUPPORTED);
    assert_null(r);
    const char *msg = opsched_ctx_last_error(fx->ctx);
    print_message("forced winograd: %s\n", msg);
    assert_non_null(strstr(msg, "layer '"));
    assert_non_null(strstr(msg, "winograd"));

    o.exec.algo_fallback = "heuristic";
    o.check = 1;
    r = profile_ok(fx, &o);
    assert_true(r->n_fallbacks > 0);
    int flagged = 0;
    for (int i = 0; i < r->n_layers; i++)
        flagged += r->layers[i].fallback;
    assert_int_equal(flagged, r->n_fallbacks);
    assert_true(r->check_passed);
    opsched_profile_result_free(r);
}

static void test_tolerance(void **state)
{
    (void)state;
    assert_true(opsched_profile_tolerance(OPSCHED_MATH_FP32) == 1e-5);
    assert_true(opsched_profile_tolerance(OPSCHED_MATH_TF32) == 5e-3);
    assert_true(opsched_profile_tolerance(OPSCHED_MATH_FP16) == 2e-2);
    assert_true(opsched_profile_tolerance(OPSCHED_MATH_BF16) == 5e-2);
}

/* Counts the events of trace file path: X events of category cat, and
 * checks every event has what Perfetto needs. */
static int count_events(const char *path, const char *cat, int *counters, int *meta)
{
    char *text = NULL;
    size_t size = 0;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    assert_int_equal(os_read_file(ctx, path, &text, &size), OPSCHED_OK);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    assert_true(cJSON_IsArray(events));
    int n = 0;
    *counters = *meta = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        assert_true(cJSON_IsString(ph));
        assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "pid")));
        assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "tid")));
        assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "name")));
        if (strcmp(ph->valuestring, "M") == 0) {
            (*meta)++;
            continue;
        }
        assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "ts")));
        if (strcmp(ph->valuestring, "C") == 0) {
            (*counters)++;
            continue;
        }
        assert_string_equal(ph->valuestring, "X");
        const cJSON *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
        assert_true(cJSON_IsNumber(dur) && dur->valuedouble >= 0);
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "cat");
        if (!cJSON_IsString(c) || strcmp(c->valuestring, cat) != 0) continue;
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        assert_true(cJSON_IsObject(args));
        if (strcmp(cat, "layer") == 0) {
            assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, "op")));
            assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, "algorithm")));
            assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(args, "flops")));
            assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, "timing")));
        }
        n++;
    }
    cJSON_Delete(root);
    free(text);
    opsched_ctx_free(ctx);
    return n;
}

static void test_trace(void **state)
{
    fixture *fx = *state;
    opsched_profile_options o;
    quick_options(&o);
    o.check = 0;
    opsched_profile_result *r = profile_ok(fx, &o);
    opsched_device_info di;
    assert_int_equal(opsched_device_info_get(fx->dev, &di), OPSCHED_OK);
    opsched_trace *t = NULL;
    assert_int_equal(opsched_trace_create(fx->ctx, &t), OPSCHED_OK);
    assert_int_equal(opsched_trace_add_profile(t, &di, fx->g, r, "squeezenet1_1 b1 64"),
                     OPSCHED_OK);
    assert_int_equal(opsched_trace_add_profile(t, &di, fx->g, r, "again"), OPSCHED_OK);
    char path[128];
    snprintf(path, sizeof(path), "%s/trace.json", fx->dir);
    assert_int_equal(opsched_trace_write(t, path), OPSCHED_OK);
    char bad[160];
    snprintf(bad, sizeof(bad), "%s/no/such/dir/trace.json", fx->dir);
    assert_int_equal(opsched_trace_write(t, bad), OPSCHED_ERR_IO);
    opsched_trace_free(t);
    opsched_trace_free(NULL);

    int non_views = 0, counters = 0, meta = 0;
    for (int i = 0; i < opsched_graph_num_nodes(fx->g); i++)
        non_views += !opsched_op_is_view(opsched_graph_node(fx->g, i)->op);
    int layers = count_events(path, "layer", &counters, &meta);
    assert_int_equal(layers, 2 * non_views);
    assert_int_equal(count_events(path, "profile", &counters, &meta), 2);
    assert_int_equal(counters, 2 * r->n_power);
    assert_int_equal(meta, 3); /* one device: its process and two tracks */
    opsched_profile_result_free(r);
}

/* ---- the store's network_runs ------------------------------------------- */

static void fake_device(opsched_device_info *d)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->backend, sizeof(d->backend), "cuda");
    snprintf(d->uuid, sizeof(d->uuid), "GPU-1234");
    snprintf(d->name, sizeof(d->name), "Test GPU");
}

static void record(opsched_network_record *n, const char *model, int64_t batch, int64_t size,
                   const char *mode)
{
    memset(n, 0, sizeof(*n));
    n->model = model;
    n->batch = batch;
    n->height = n->width = size;
    n->algo_policy = "heuristic";
    n->math = OPSCHED_MATH_TF32;
    n->mode = mode;
    n->stats.n = 10;
    n->stats.min = n->stats.median = n->stats.mean = n->stats.max = 1.5;
    n->enqueue_ms = 0.1;
    n->peak_memory_bytes = 1 << 20;
    n->layer_sum_ms = 1.4;
    n->attribution_latency = 1.4 / 1.5;
    n->layer_energy_j = n->attribution_energy = n->check_rel_l2 = NAN;
    n->check_passed = -1;
}

typedef struct summary_seen {
    int rows;
    char text[512];
} summary_seen;

static void on_summary(const opsched_network_summary *s, void *user)
{
    summary_seen *seen = user;
    size_t len = strlen(seen->text);
    snprintf(seen->text + len, sizeof(seen->text) - len, "%s|%s|%lld|%lld|%lld-%lld|%lld;",
             s->device, s->model, (long long)s->batch, (long long)s->sizes, (long long)s->min_size,
             (long long)s->max_size, (long long)s->rows);
    seen->rows++;
}

static void sql(const char *path, const char *text)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, text, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void test_store_networks(void **state)
{
    fixture *fx = *state;
    char path[128];
    snprintf(path, sizeof(path), "%s/n.db", fx->dir);
    opsched_store *s = NULL;
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    opsched_run_info ri = {.command = "opsched profile", .shard_count = 1};
    int64_t run = 0, dev = 0, id = 0;
    opsched_device_info d;
    fake_device(&d);
    assert_int_equal(opsched_store_begin_run(s, &ri, &run), OPSCHED_OK);
    assert_int_equal(opsched_store_device(s, &d, &dev), OPSCHED_OK);

    opsched_network_record n;
    int found = -1;
    record(&n, "resnet50", 1, 224, "free");
    assert_int_equal(opsched_store_has_network(s, dev, &n, &found), OPSCHED_OK);
    assert_int_equal(found, 0);
    assert_int_equal(opsched_store_add_network(s, run, dev, &n, &id), OPSCHED_OK);
    assert_true(id > 0);
    record(&n, "resnet50", 1, 224, "graph");
    n.enqueue_ms = NAN;
    n.stats.n = 0; /* statistics stored as NULL */
    assert_int_equal(opsched_store_add_network(s, run, dev, &n, NULL), OPSCHED_OK);
    record(&n, "resnet50", 1, 256, "free");
    assert_int_equal(opsched_store_add_network(s, run, dev, &n, NULL), OPSCHED_OK);
    record(&n, "alexnet", 8, 64, "layered");
    assert_int_equal(opsched_store_add_network(s, run, dev, &n, NULL), OPSCHED_OK);
    record(&n, "alexnet", 8, 64, "bogus");
    assert_int_equal(opsched_store_add_network(s, run, dev, &n, NULL), OPSCHED_ERR_INVALID_ARG);

    record(&n, "resnet50", 1, 224, "free");
    assert_int_equal(opsched_store_has_network(s, dev, &n, &found), OPSCHED_OK);
    assert_int_equal(found, 1);
    n.math = OPSCHED_MATH_FP32; /* other settings: not profiled yet */
    assert_int_equal(opsched_store_has_network(s, dev, &n, &found), OPSCHED_OK);
    assert_int_equal(found, 0);
    record(&n, "resnet50", 16, 224, "free");
    assert_int_equal(opsched_store_has_network(s, dev, &n, &found), OPSCHED_OK);
    assert_int_equal(found, 0);
    record(&n, "resnet50", 1, 224, "free");
    assert_int_equal(opsched_store_has_network(s, dev + 1, &n, &found), OPSCHED_OK);
    assert_int_equal(found, 0);

    summary_seen seen;
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(opsched_store_network_summaries(s, on_summary, &seen), OPSCHED_OK);
    assert_int_equal(seen.rows, 2);
    assert_string_equal(seen.text, "cuda:Test GPU|alexnet|8|1|64-64|1;"
                                   "cuda:Test GPU|resnet50|1|2|224-256|3;");
    assert_int_equal(opsched_store_end_run(s, run, "done"), OPSCHED_OK);
    opsched_store_close(s);

    /* A schema-1 file (no network_runs, no calibrations) gains the tables
     * when opened. */
    sql(path, "DROP TABLE network_runs; DROP TABLE calibrations; DROP TABLE stages; DROP TABLE collectives;"
              " PRAGMA user_version = 1;");
    assert_int_equal(opsched_store_open(fx->ctx, path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    assert_int_equal(opsched_store_has_network(s, dev, &n, &found), OPSCHED_OK);
    assert_int_equal(found, 0);
    opsched_store_summary sum;
    assert_int_equal(opsched_store_summary_get(s, &sum), OPSCHED_OK);
    assert_int_equal(sum.runs, 1);
    opsched_store_close(s);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), opsched_store_schema_version());
    assert_int_equal(opsched_store_schema_version(), 5);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_store_merge_networks(void **state)
{
    fixture *fx = *state;
    char a[128], b[128];
    snprintf(a, sizeof(a), "%s/a.db", fx->dir);
    snprintf(b, sizeof(b), "%s/b.db", fx->dir);
    opsched_store *s = NULL;
    opsched_run_info ri = {.command = "opsched profile", .shard_count = 1};
    int64_t run = 0, dev = 0;
    opsched_device_info d;
    opsched_network_record n;
    fake_device(&d);
    assert_int_equal(opsched_store_open(fx->ctx, b, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    assert_int_equal(opsched_store_begin_run(s, &ri, &run), OPSCHED_OK);
    assert_int_equal(opsched_store_device(s, &d, &dev), OPSCHED_OK);
    record(&n, "googlenet", 1, 224, "free");
    assert_int_equal(opsched_store_add_network(s, run, dev, &n, NULL), OPSCHED_OK);
    record(&n, "googlenet", 1, 224, "graph");
    assert_int_equal(opsched_store_add_network(s, run, dev, &n, NULL), OPSCHED_OK);
    opsched_store_close(s);

    assert_int_equal(opsched_store_open(fx->ctx, a, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    opsched_merge_stats ms;
    assert_int_equal(opsched_store_merge(s, b, &ms), OPSCHED_OK);
    assert_int_equal(ms.network_runs_added, 2);
    assert_int_equal(opsched_store_merge(s, b, &ms), OPSCHED_OK);
    assert_int_equal(ms.network_runs_added, 0);
    int found = 0;
    assert_int_equal(opsched_store_device(s, &d, &dev), OPSCHED_OK);
    assert_int_equal(opsched_store_has_network(s, dev, &n, &found), OPSCHED_OK);
    assert_int_equal(found, 1);
    opsched_store_close(s);
}

int main(int argc, char **argv)
{
    /* One oneDNN thread: on a loaded machine a second thread's barrier
     * waits for a time slice, and every layer pays ~10 ms for it.  The
     * OpenMP runtime reads the variable when it is loaded, before main, so
     * the test starts itself again with it set. */
    (void)argc;
    if (!getenv("OMP_NUM_THREADS")) {
        setenv("OMP_NUM_THREADS", "1", 1);
        execv("/proc/self/exe", argv);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tolerance),
        cmocka_unit_test_setup_teardown(test_profile_squeezenet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_options_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_executor_host_timed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forced_algorithm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_networks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_merge_networks, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
