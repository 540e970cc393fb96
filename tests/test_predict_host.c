/*
 * test_predict_host.c - eager (free-running) prediction from measured
 * per-layer host enqueue times.  `opsched profile` on the CPU backend
 * stores each layer's host time (";mode=host" rows) next to the layers
 * measured alone (--isolated) and the free runs; the eager prediction of
 * the profiled network must then take every layer's host time from those
 * rows (host source exact, host coverage 100%), a size that was not
 * profiled must take the host model's for what was not measured, graph
 * mode must not see them, and with the host rows deleted the prediction
 * must fall back to the family costs alone (host_scale 0), as before host
 * rows existed.  A second network ("other") sharing every layer, whose
 * host rows are 10x and later: each network takes its own rows, a
 * network without rows of its own the median of all of them, and leaving
 * "other" out leaves its rows out.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/assert_near.h"

#include "opsched/opsched.h"

typedef struct fixture {
    char dir[64];
    char db[128];
    opsched_ctx *ctx;
} fixture;

#define OK(fx, expr)                                                                               \
    do {                                                                                           \
        opsched_status st_ = (expr);                                                               \
        if (st_ != OPSCHED_OK)                                                                     \
            fail_msg("%s: %s (%s)", #expr, opsched_status_str(st_),                                \
                     opsched_ctx_last_error((fx)->ctx));                                           \
    } while (0)


static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    if (!fx) return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/opsched_phost_XXXXXX");
    if (!mkdtemp(fx->dir) || opsched_ctx_create(&fx->ctx) != OPSCHED_OK) {
        free(fx);
        return -1;
    }
    snprintf(fx->db, sizeof(fx->db), "%s/host.db", fx->dir);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", fx->dir);
    opsched_ctx_free(fx->ctx);
    free(fx);
    return 0;
}

static void predictor(fixture *fx, opsched_predictor **p)
{
    opsched_predictor_options o;
    opsched_predictor_options_default(&o);
    o.math = OPSCHED_MATH_FP32;
    o.rounds = 20; /* the test is about the host side, not the trees */
    o.folds = 2;
    o.threads = 1;
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, p));
}

static opsched_network_prediction *predict(fixture *fx, opsched_predictor *p, int64_t size,
                                           opsched_predict_mode mode)
{
    opsched_zoo_options zo = {.batch = 1, .height = size};
    opsched_graph *g = NULL;
    OK(fx, opsched_zoo_build(fx->ctx, "squeezenet1_1", &zo, &g));
    opsched_predict_options po;
    opsched_predict_options_default(&po);
    po.mode = mode;
    opsched_network_prediction *r = NULL;
    OK(fx, opsched_predict_network(p, g, &po, &r));
    opsched_graph_free(g);
    return r;
}

/* The device side as composed (opsched_composition's formula). */
static double device_ms(const opsched_network_prediction *r)
{
    const opsched_composition *c = &r->composition;
    return c->scale * r->layer_sum_ms + c->launch_us * 1e-3 * r->launches +
           c->fused_launch_us * 1e-3 * r->fused_launches +
           c->weight_ms_per_gb * r->composed_weight_gb;
}

/* The host side from the layers, how much of it is measured, and how
 * many launches the host model predicted. */
static void host_sums(const opsched_network_prediction *r, double *host, double *measured,
                      int *n_measured, int *n_learned)
{
    *host = *measured = 0;
    *n_measured = *n_learned = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_prediction *l = &r->layers[i];
        if (!l->launches) {
            assert_true(l->host_ms == 0 && !l->host_measured && !l->host_learned);
            continue;
        }
        *host += l->host_ms;
        if (l->host_measured) {
            assert_false(l->host_learned);
            *measured += l->host_ms;
            (*n_measured)++;
            assert_true(l->host_measurement_id > 0);
        } else if (l->host_learned) {
            assert_true(l->host_ms > 0 && isfinite(l->host_ms));
            assert_int_equal(l->host_measurement_id, 0);
            (*n_learned)++;
        } else {
            assert_double_equal(l->host_ms, r->composition.host_us[l->p.family] * 1e-3, 1e-15);
        }
    }
}

/* The host model, or NULL when the predictor has none. */
static const opsched_model_info *host_model(const opsched_predictor *p)
{
    for (int i = 0; i < opsched_predictor_num_models(p); i++)
        if (strcmp(opsched_predictor_model(p, i)->name, "host") == 0)
            return opsched_predictor_model(p, i);
    return NULL;
}

/* Builds squeezenet1_1 for any run (whatever its model name). */
static opsched_status squeeze_loader(opsched_ctx *ctx, const opsched_network_run_row *run,
                                     void *user, opsched_graph **out)
{
    (void)user;
    opsched_zoo_options zo = {.batch = run->batch, .height = run->height, .width = run->width};
    return opsched_zoo_build(ctx, "squeezenet1_1", &zo, out);
}

static opsched_network_prediction *predict_run(fixture *fx, opsched_predictor *p,
                                               const char *model)
{
    opsched_network_run_row run;
    memset(&run, 0, sizeof(run));
    snprintf(run.model, sizeof(run.model), "%s", model);
    run.batch = 1;
    run.height = run.width = 32;
    snprintf(run.mode, sizeof(run.mode), "free");
    opsched_network_prediction *r = NULL;
    OK(fx, opsched_predict_network_run(p, &run, &r));
    return r;
}

/* Every launched layer's host time measured, its measurement id below
 * (own: 1) or at least (own: 0) first_copy. */
static void check_host_ids(const opsched_network_prediction *r, int64_t first_copy, int below)
{
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_prediction *l = &r->layers[i];
        if (!l->launches) continue;
        assert_true(l->host_measured);
        if (below)
            assert_true(l->host_measurement_id < first_copy);
        else
            assert_true(l->host_measurement_id >= first_copy);
    }
}

/* Copies every host row into a run of a network "other" (b1 32: one free
 * run, written after the rows), 10x slower and later than the originals;
 * returns the first copy's measurement id. */
static int64_t add_other_network(fixture *fx)
{
    char script[160], out[160], cmd[600];
    snprintf(script, sizeof(script), "%s/other.py", fx->dir);
    snprintf(out, sizeof(out), "%s/other.txt", fx->dir);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fputs("import sqlite3, sys\n"
          "c = sqlite3.connect(sys.argv[1])\n"
          "first = c.execute('SELECT max(id) FROM measurements').fetchone()[0] + 1\n"
          "t0 = max(c.execute('SELECT max(created_at) FROM measurements').fetchone()[0],\n"
          "         c.execute('SELECT max(created_at) FROM network_runs').fetchone()[0]) + 1\n"
          "c.execute(\"INSERT INTO runs (uuid, command, shard_index, shard_count, started_at,\"\n"
          "          \" ended_at, status, tool_version) VALUES ('other', 'test', 0, 1, ?, ?,\"\n"
          "          \" 'done', 'test')\", (t0, t0 + 2))\n"
          "run = c.execute(\"SELECT id FROM runs WHERE uuid = 'other'\").fetchone()[0]\n"
          "def cols(t, repl):\n"
          "    names = [r[1] for r in c.execute('PRAGMA table_info(%s)' % t) if r[1] != 'id']\n"
          "    return ', '.join(names), ', '.join(repl.get(k, k) for k in names)\n"
          "n, v = cols('measurements', {'run_id': '?', 'median_ms': 'median_ms * 10',\n"
          "                             'created_at': '?'})\n"
          "c.execute(\"INSERT INTO measurements (%s) SELECT %s FROM measurements\"\n"
          "          \" WHERE instr(settings_key, ';mode=host') > 0 ORDER BY id\" % (n, v), (run, t0))\n"
          "n, v = cols('network_runs', {'run_id': '?', 'model': \"'other'\", 'created_at': '?'})\n"
          "c.execute(\"INSERT INTO network_runs (%s) SELECT %s FROM network_runs WHERE\"\n"
          "          \" model = 'squeezenet1_1' AND mode = 'free' AND input_size = 32\"\n"
          "          % (n, v), (run, t0 + 1))\n"
          "c.commit()\n"
          "print(first)\n",
          f);
    fclose(f);
    const char *py = getenv("OPSCHED_PYTHON");
    snprintf(cmd, sizeof(cmd), "'%s' '%s' '%s' > '%s'", py && *py ? py : "python3", script,
             fx->db, out);
    assert_int_equal(system(cmd), 0);
    f = fopen(out, "r");
    assert_non_null(f);
    long long first = 0;
    assert_int_equal(fscanf(f, "%lld", &first), 1);
    fclose(f);
    return (int64_t)first;
}

static void test_eager_host_rows(void **state)
{
    fixture *fx = *state;
    const char *bin = getenv("OPSCHED_BIN");
    if (!bin || !*bin) {
        print_message("OPSCHED_BIN unset (run through ctest): skipped\n");
        skip();
    }
    opsched_device *dev = NULL;
    if (opsched_device_open(fx->ctx, "cpu", 0, &dev) != OPSCHED_OK) {
        print_message("skipped: no CPU backend in this build\n");
        skip();
    }
    opsched_device_close(dev);
    /* Layers alone (device time), host times per layer, free runs. */
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "'%s' profile squeezenet1_1 --backend cpu --batch 1 --input-size 32,40 --math fp32 "
             "--check off --layers off --isolated --host-layers on --iters 5 --min-ms 0 "
             "--warmup-ms 1 --db '%s' --out-dir '%s' > '%s/profile.log' 2>&1",
             bin, fx->db, fx->dir, fx->dir);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof(cmd), "cat '%s/profile.log'", fx->dir);
        if (system(cmd) != 0) fprintf(stderr, "no log\n");
        fail_msg("opsched profile failed");
    }

    opsched_predictor *p = NULL;
    predictor(fx, &p);
    opsched_predictor_info in;
    OK(fx, opsched_predictor_info_get(p, &in));
    assert_true(in.host_rows > 0);
    /* Host rows are not device time: not training rows of the latency
     * models, but of the host model, cross-validated like them. */
    assert_true(in.rows >= in.host_rows);
    const opsched_model_info *hm = host_model(p);
    assert_non_null(hm);
    assert_true(hm->trained);
    assert_int_equal(hm->rows, in.host_rows);
    assert_true(hm->cv.n == hm->rows && isfinite(hm->cv.median_ape));
    assert_true(isfinite(hm->baseline.median_ape));
    print_message("host model: %lld configurations, cv median %.1f%% (FLOPs-only line %.1f%%)\n",
                  (long long)hm->rows, 100 * hm->cv.median_ape, 100 * hm->baseline.median_ape);

    /* The profiled network: every launch's host time measured. */
    opsched_network_prediction *r = predict(fx, p, 32, OPSCHED_PREDICT_EAGER);
    const opsched_composition *c = &r->composition;
    print_message("eager b1 32: host %.4f ms (scale %.4f, %d runs, %d measured, rms %.1f%%), "
                  "device %.4f ms, total %.4f ms\n",
                  r->host_ms, c->host_scale, c->host_runs, c->host_runs_measured,
                  100 * c->host_rms_rel, device_ms(r), r->total_ms);
    assert_string_equal(c->source, "fit");
    assert_int_equal(c->host_runs, 2);
    assert_int_equal(c->host_runs_measured, 2);
    assert_true(c->host_scale > 0);
    assert_true(isfinite(c->host_rms_rel));
    double host, measured;
    int n_measured, n_learned;
    host_sums(r, &host, &measured, &n_measured, &n_learned);
    assert_int_equal(n_measured, r->launches);
    assert_double_equal(r->coverage_host, 1.0, 1e-12);
    assert_double_equal(r->host_ms, host, 1e-9 * host);
    assert_double_equal(r->total_ms, fmax(device_ms(r), r->host_ms), 1e-9 * r->total_ms);
    opsched_network_prediction_free(r);

    /* A size never profiled: the layers whose configuration was profiled
     * at another size (the small late feature maps can coincide) are
     * measured, the host model predicts the rest. */
    r = predict(fx, p, 48, OPSCHED_PREDICT_EAGER);
    host_sums(r, &host, &measured, &n_measured, &n_learned);
    print_message("eager b1 48: %d of %d launches measured, %d learned, host coverage %.1f%%\n",
                  n_measured, r->launches, n_learned, 100 * r->coverage_host);
    assert_true(n_measured < r->launches);
    assert_int_equal(n_measured + n_learned, r->launches);
    assert_double_equal(r->coverage_host, measured / host, 1e-12);
    assert_double_equal(r->host_ms, host, 1e-9 * host);
    opsched_network_prediction_free(r);

    /* Graph mode does not look at the host. */
    r = predict(fx, p, 32, OPSCHED_PREDICT_GRAPH);
    host_sums(r, &host, &measured, &n_measured, &n_learned);
    assert_int_equal(n_measured, 0);
    assert_true(host == 0 && isnan(r->host_ms) && isnan(r->coverage_host));
    double graph_ms = r->total_ms;
    opsched_network_prediction_free(r);
    opsched_predictor_free(p);

    /* Two networks sharing every layer: each takes its own host rows (not
     * the latest: other's), one without rows of its own the median of all. */
    int64_t first_copy = add_other_network(fx);
    opsched_predictor_options o;
    opsched_predictor_options_default(&o);
    o.math = OPSCHED_MATH_FP32;
    o.rounds = 20;
    o.folds = 2;
    o.threads = 1;
    o.loader = squeeze_loader;
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &p));
    opsched_network_prediction *own = predict_run(fx, p, "squeezenet1_1");
    opsched_network_prediction *other = predict_run(fx, p, "other");
    opsched_network_prediction *none = predict_run(fx, p, "nobody");
    print_message("own rows: squeezenet1_1 host %.4f ms, other %.4f ms, neither (median) %.4f ms\n",
                  own->host_ms, other->host_ms, none->host_ms);
    check_host_ids(own, first_copy, 1);
    check_host_ids(other, first_copy, 0);
    assert_double_equal(other->host_ms, 10 * own->host_ms, 1e-9 * other->host_ms);
    assert_true(none->host_ms > 1.5 * own->host_ms && none->host_ms < 0.9 * other->host_ms);
    opsched_network_prediction_free(none);
    opsched_network_prediction_free(other);
    /* A graph goes by its name: the zoo's squeezenet1_1 takes its own. */
    r = predict(fx, p, 32, OPSCHED_PREDICT_EAGER);
    check_host_ids(r, first_copy, 1);
    assert_double_equal(r->host_ms, own->host_ms, 1e-12 * own->host_ms);
    opsched_network_prediction_free(r);
    opsched_network_prediction_free(own);
    r = predict(fx, p, 32, OPSCHED_PREDICT_GRAPH);
    assert_double_equal(r->total_ms, graph_ms, 0); /* graph mode does not look */
    opsched_network_prediction_free(r);
    opsched_predictor_free(p);
    /* Leaving "other" out leaves its host rows out: the rest's median. */
    o.exclude_model_runs = "other";
    OK(fx, opsched_predictor_open(fx->ctx, fx->db, &o, &p));
    r = predict_run(fx, p, "other");
    check_host_ids(r, first_copy, 1);
    opsched_network_prediction_free(r);
    opsched_predictor_free(p);

    /* The host rows removed: the family costs alone, as without them. */
    const char *py = getenv("OPSCHED_PYTHON");
    snprintf(cmd, sizeof(cmd),
             "'%s' -c \"import sqlite3; c = sqlite3.connect('%s'); c.execute("
             "\\\"DELETE FROM measurements WHERE instr(settings_key, ';mode=host') > 0\\\"); "
             "c.commit()\"",
             py && *py ? py : "python3", fx->db);
    assert_int_equal(system(cmd), 0);
    predictor(fx, &p);
    OK(fx, opsched_predictor_info_get(p, &in));
    assert_int_equal(in.host_rows, 0);
    assert_null(host_model(p)); /* nothing to learn from */
    r = predict(fx, p, 32, OPSCHED_PREDICT_EAGER);
    c = &r->composition;
    assert_double_equal(c->host_scale, 0.0, 0);
    assert_int_equal(c->host_runs_measured, 0);
    assert_int_equal(c->host_runs, 2);
    host_sums(r, &host, &measured, &n_measured, &n_learned);
    assert_int_equal(n_measured, 0);
    assert_int_equal(n_learned, 0);
    assert_double_equal(r->coverage_host, 0.0, 0);
    assert_double_equal(r->host_ms, host, 1e-9 * host);
    assert_double_equal(r->total_ms, fmax(device_ms(r), r->host_ms), 1e-9 * r->total_ms);
    opsched_network_prediction_free(r);
    r = predict(fx, p, 32, OPSCHED_PREDICT_GRAPH);
    assert_double_equal(r->total_ms, graph_ms, 0); /* graph mode never changed */
    opsched_network_prediction_free(r);
    opsched_predictor_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_eager_host_rows, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
