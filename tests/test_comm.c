/*
 * test_comm.c - collectives without a GPU: nccl-tests' bus-bandwidth
 * arithmetic and element counts, the check values against collectives
 * simulated here rank by rank, the alpha-beta fits on known numbers, the collectives table (put,
 * resume lookup, export, merge), and commbench's clear refusals when options, NCCL or GPUs are
 * missing.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "opsched/opsched.h"

static void test_busbw_factors(void **state)
{
    (void)state;
    assert_true(fabs(opsched_collective_busbw_factor(OPSCHED_ALLREDUCE, 8) - 1.75) < 1e-12);
    assert_true(fabs(opsched_collective_busbw_factor(OPSCHED_ALLREDUCE, 2) - 1.0) < 1e-12);
    assert_true(opsched_collective_busbw_factor(OPSCHED_ALLREDUCE, 1) == 0.0);
    assert_true(fabs(opsched_collective_busbw_factor(OPSCHED_ALLGATHER, 4) - 0.75) < 1e-12);
    assert_true(fabs(opsched_collective_busbw_factor(OPSCHED_REDUCESCATTER, 8) - 0.875) < 1e-12);
    assert_true(fabs(opsched_collective_busbw_factor(OPSCHED_ALLTOALL, 2) - 0.5) < 1e-12);
    assert_true(opsched_collective_busbw_factor(OPSCHED_BROADCAST, 8) == 1.0);
    assert_true(opsched_collective_busbw_factor(OPSCHED_SENDRECV, 8) == 1.0);
}

static void test_counts_and_buffers(void **state)
{
    (void)state;
    /* Split buffers round down to a multiple of the ranks. */
    assert_int_equal(opsched_collective_count(OPSCHED_ALLGATHER, 1024, 4, 3), 255);
    assert_int_equal(opsched_collective_count(OPSCHED_ALLGATHER, 8, 4, 8), 0);
    assert_int_equal(opsched_collective_count(OPSCHED_ALLREDUCE, 10, 4, 8), 2);
    assert_int_equal(opsched_collective_count(OPSCHED_ALLTOALL, 64, 2, 8), 32);
    int64_t sb = 0, rb = 0;
    opsched_collective_buffers(OPSCHED_ALLGATHER, 1024, 4, 4, &sb, &rb);
    assert_int_equal(sb, 1024);
    assert_int_equal(rb, 4096);
    opsched_collective_buffers(OPSCHED_REDUCESCATTER, 1024, 2, 4, &sb, &rb);
    assert_int_equal(sb, 2048);
    assert_int_equal(rb, 512);
    opsched_collective_buffers(OPSCHED_ALLTOALL, 1024, 4, 4, &sb, &rb);
    assert_int_equal(sb, 4096);
    assert_int_equal(rb, 4096);
}

static void test_names(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    for (int c = 0; c < OPSCHED_COLLECTIVE_COUNT; c++) {
        opsched_collective back;
        assert_int_equal(
            opsched_collective_parse(ctx, opsched_collective_name((opsched_collective)c), &back),
            OPSCHED_OK);
        assert_int_equal(back, c);
    }
    opsched_collective c;
    assert_int_equal(opsched_collective_parse(ctx, "all_reduce", &c), OPSCHED_OK);
    assert_int_equal(c, OPSCHED_ALLREDUCE);
    assert_int_equal(opsched_collective_parse(ctx, "Reduce-Scatter", &c), OPSCHED_OK);
    assert_int_equal(c, OPSCHED_REDUCESCATTER);
    assert_int_equal(opsched_collective_parse(ctx, "gather", &c), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "'gather'"));
    opsched_ctx_free(ctx);
}

/* Each collective simulated over explicit per-rank buffers, by its
 * definition, against the values the GPU check expects. */
static void test_expected_values(void **state)
{
    (void)state;
    enum { RANKS = 3, COUNT = 12 };
    double in[RANKS][COUNT], out[RANKS][COUNT];
    for (int r = 0; r < RANKS; r++)
        for (int i = 0; i < COUNT; i++)
            in[r][i] = opsched_collective_input(r, i);
    const int part = COUNT / RANKS;
    for (int c = 0; c < OPSCHED_COLLECTIVE_COUNT; c++) {
        int n_out = c == OPSCHED_REDUCESCATTER ? part : COUNT;
        for (int r = 0; r < RANKS; r++)
            for (int i = 0; i < n_out; i++) {
                double v = 0;
                switch (c) {
                case OPSCHED_ALLREDUCE:
                    for (int q = 0; q < RANKS; q++)
                        v += in[q][i];
                    break;
                case OPSCHED_ALLGATHER: /* rank q contributes its first `part` elements */
                    v = in[i / part][i % part];
                    break;
                case OPSCHED_REDUCESCATTER:
                    for (int q = 0; q < RANKS; q++)
                        v += in[q][r * part + i];
                    break;
                case OPSCHED_BROADCAST:
                    v = in[0][i];
                    break;
                case OPSCHED_ALLTOALL: /* block j of rank j's buffer lands in block j's slot */
                    v = in[i / part][r * part + i % part];
                    break;
                case OPSCHED_SENDRECV:
                    v = in[(r + RANKS - 1) % RANKS][i];
                    break;
                }
                out[r][i] = v;
            }
        for (int r = 0; r < RANKS; r++)
            for (int i = 0; i < n_out; i++)
                assert_true(out[r][i] ==
                            opsched_collective_expected((opsched_collective)c, COUNT, RANKS, r, i));
    }
    /* Values stay small integers: sums over 64 ranks are exact in bf16. */
    double worst = 0;
    for (int r = 0; r < 64; r++)
        for (int i = 0; i < 17; i++) {
            double v = opsched_collective_input(r, i);
            assert_true(v == floor(v));
            worst = fmax(worst, fabs(v));
        }
    assert_true(worst * 64 <= 512);
}

/* Two pieces with known parameters: 10 us flat up to 64 KiB, then
 * 4 us + bytes / 100 GB/s. */
static void test_fit_known_pieces(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    double b[28], t[28];
    int n = 0;
    for (double x = 8; x <= (double)(1 << 30); x *= 2, n++) {
        b[n] = x;
        t[n] = x <= 65536 ? 10.0 : 4.0 + x / 100e3;
    }
    opsched_comm_fit f;
    assert_int_equal(opsched_comm_fit_points(ctx, b, t, n, 3, &f), OPSCHED_OK);
    assert_true(f.n_segments >= 2);
    assert_true(f.max_rel_err < 0.01);
    const opsched_comm_segment *last = &f.seg[f.n_segments - 1];
    assert_true(fabs(last->bw_gbs - 100.0) / 100.0 < 0.01);
    assert_true(fabs(last->alpha_us - 4.0) < 0.5);
    assert_true(fabs(f.seg[0].alpha_us - 10.0) < 0.1);
    assert_string_equal(opsched_comm_segment_regime(&f, 0), "latency-bound");
    assert_string_equal(opsched_comm_segment_regime(&f, f.n_segments - 1), "bandwidth-bound");
    for (int i = 0; i < n; i++)
        assert_true(fabs(opsched_comm_fit_eval(&f, b[i]) - t[i]) / t[i] < 0.01);
    /* One piece cannot follow both: its worst error is far larger. */
    opsched_comm_fit one;
    assert_int_equal(opsched_comm_fit_points(ctx, b, t, n, 1, &one), OPSCHED_OK);
    assert_int_equal(one.n_segments, 1);
    assert_true(one.max_rel_err > 0.3);
    /* Bad input. */
    double desc[3] = {8, 4, 16}, pos[3] = {1, 1, 1}, zero[3] = {1, 0, 1};
    assert_int_equal(opsched_comm_fit_points(ctx, desc, pos, 3, 2, &f), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "ascend"));
    assert_int_equal(opsched_comm_fit_points(ctx, b, zero, 3, 2, &f), OPSCHED_ERR_INVALID_ARG);
    assert_int_equal(opsched_comm_fit_points(ctx, b, t, 1, 2, &f), OPSCHED_ERR_INVALID_ARG);
    opsched_ctx_free(ctx);
}

static void fill_result(opsched_collective_result *r, opsched_collective c, int64_t bytes,
                        int ranks, double median_ms)
{
    memset(r, 0, sizeof(*r));
    r->collective = c;
    r->dtype = OPSCHED_F32;
    r->bytes = bytes;
    r->count = bytes / 4;
    r->ranks = ranks;
    r->iters = 20;
    double s[3] = {median_ms * 0.99, median_ms, median_ms * 1.02};
    assert_int_equal(opsched_stats_compute(s, 3, &r->stats), OPSCHED_OK);
    r->algbw_gbs = (double)bytes / (median_ms * 1e-3) / 1e9;
    r->busbw_gbs = r->algbw_gbs * opsched_collective_busbw_factor(c, ranks);
}

typedef struct collected {
    int n;
    int64_t bytes[8];
    int ranks[8];
} collected;

static opsched_status collect(const opsched_collective_row *row, void *user)
{
    collected *c = user;
    if (c->n < 8) {
        c->bytes[c->n] = row->r.bytes;
        c->ranks[c->n] = row->r.ranks;
        c->n++;
    }
    return OPSCHED_OK;
}

static void test_store_roundtrip(void **state)
{
    (void)state;
    char dir[] = "/tmp/opsched-comm-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char a_path[256], b_path[256], csv_path[256];
    snprintf(a_path, sizeof(a_path), "%s/a.db", dir);
    snprintf(b_path, sizeof(b_path), "%s/b.db", dir);
    snprintf(csv_path, sizeof(csv_path), "%s/c.csv", dir);
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_store *s = NULL;
    assert_int_equal(opsched_store_open(ctx, a_path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    opsched_run_info info = {"opsched commbench", NULL, 0, 1};
    int64_t run = 0, dev = 0;
    assert_int_equal(opsched_store_begin_run(s, &info, &run), OPSCHED_OK);
    opsched_device_info di;
    memset(&di, 0, sizeof(di));
    snprintf(di.backend, sizeof(di.backend), "cuda");
    snprintf(di.name, sizeof(di.name), "Test GPU");
    snprintf(di.uuid, sizeof(di.uuid), "GPU-test");
    assert_int_equal(opsched_store_device(s, &di, &dev), OPSCHED_OK);
    opsched_commbench_env env;
    memset(&env, 0, sizeof(env));
    snprintf(env.nccl_version_str, sizeof(env.nccl_version_str), "2.27.3");
    snprintf(env.topology, sizeof(env.topology), "GPU0-GPU1 peer access yes, \"quoted\"");
    opsched_collective_result r;
    fill_result(&r, OPSCHED_ALLREDUCE, 1 << 20, 2, 0.02);
    assert_int_equal(opsched_store_collective_put(s, run, dev, &r, 1, &env), OPSCHED_OK);
    fill_result(&r, OPSCHED_ALLREDUCE, 1024, 2, 0.01);
    assert_int_equal(opsched_store_collective_put(s, run, dev, &r, 1, &env), OPSCHED_OK);
    int found = 0;
    assert_int_equal(opsched_store_collective_has(s, dev, &r, 1, &found), OPSCHED_OK);
    assert_true(found);
    r.ranks = 4;
    assert_int_equal(opsched_store_collective_has(s, dev, &r, 1, &found), OPSCHED_OK);
    assert_false(found);
    /* A result that failed its check does not count as measured. */
    fill_result(&r, OPSCHED_ALLGATHER, 4096, 2, 0.01);
    r.wrong = 3;
    assert_int_equal(opsched_store_collective_put(s, run, dev, &r, 1, &env), OPSCHED_OK);
    assert_int_equal(opsched_store_collective_has(s, dev, &r, 1, &found), OPSCHED_OK);
    assert_false(found);
    collected c = {0};
    assert_int_equal(opsched_store_collectives(s, NULL, collect, &c), OPSCHED_OK);
    assert_int_equal(c.n, 3);
    /* Ordered by collective, then size. */
    assert_int_equal(c.bytes[0], 4096);
    assert_int_equal(c.bytes[1], 1024);
    assert_int_equal(c.bytes[2], 1 << 20);
    c.n = 0;
    assert_int_equal(opsched_store_collectives(s, "Other GPU", collect, &c), OPSCHED_OK);
    assert_int_equal(c.n, 0);
    FILE *f = fopen(csv_path, "w");
    assert_non_null(f);
    assert_int_equal(opsched_store_export_collectives_csv(s, f), OPSCHED_OK);
    fclose(f);
    assert_int_equal(opsched_store_end_run(s, run, "done"), OPSCHED_OK);
    opsched_store_close(s);

    /* The CSV: a header and three rows; the quoted topology stays one field. */
    f = fopen(csv_path, "r");
    assert_non_null(f);
    char line[4096];
    int lines = 0;
    while (fgets(line, sizeof(line), f)) {
        if (lines == 0) assert_non_null(strstr(line, "collective,dtype,bytes"));
        lines++;
    }
    fclose(f);
    assert_int_equal(lines, 4);

    /* Merge: the rows arrive once however often the file is merged. */
    assert_int_equal(opsched_store_open(ctx, b_path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    opsched_merge_stats ms;
    assert_int_equal(opsched_store_merge(s, a_path, &ms), OPSCHED_OK);
    assert_int_equal(ms.collectives, 3);
    assert_int_equal(opsched_store_merge(s, a_path, &ms), OPSCHED_OK);
    assert_int_equal(ms.collectives, 0);
    c.n = 0;
    assert_int_equal(opsched_store_collectives(s, "Test GPU", collect, &c), OPSCHED_OK);
    assert_int_equal(c.n, 3);
    opsched_store_close(s);
    opsched_ctx_free(ctx);
    unlink(a_path);
    unlink(b_path);
    unlink(csv_path);
    char side[300];
    snprintf(side, sizeof(side), "%s/a.db-wal", dir);
    unlink(side);
    snprintf(side, sizeof(side), "%s/a.db-shm", dir);
    unlink(side);
    snprintf(side, sizeof(side), "%s/b.db-wal", dir);
    unlink(side);
    snprintf(side, sizeof(side), "%s/b.db-shm", dir);
    unlink(side);
    rmdir(dir);
}

/* Options are checked before anything is loaded; without NCCL (a file
 * that does not exist) or without a GPU the refusal says which. */
static void test_commbench_refusals(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    opsched_commbench_options o;
    opsched_commbench_options_init(&o);
    o.step_factor = 1;
    assert_int_equal(opsched_commbench_run(ctx, &o, NULL, 0, NULL), OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "step factor"));
    opsched_commbench_options_init(&o);
    o.samples = 1000;
    assert_int_equal(opsched_commbench_run(ctx, &o, NULL, 0, NULL), OPSCHED_ERR_INVALID_ARG);
    opsched_commbench_options_init(&o);
    o.dtype = OPSCHED_INT8;
    assert_int_equal(opsched_commbench_run(ctx, &o, NULL, 0, NULL), OPSCHED_ERR_INVALID_ARG);
    opsched_commbench_options_init(&o);
    o.max_bytes = 4;
    o.min_bytes = 8;
    assert_int_equal(opsched_commbench_run(ctx, &o, NULL, 0, NULL), OPSCHED_ERR_INVALID_ARG);

    /* NCCL missing: a clear refusal, whatever the build. */
    setenv("OPSCHED_NCCL_LIB", "/nonexistent/libnccl.so.2", 1);
    opsched_commbench_options_init(&o);
    o.max_bytes = 64;
    opsched_status st = opsched_commbench_run(ctx, &o, NULL, 0, NULL);
    assert_int_equal(st, OPSCHED_ERR_UNSUPPORTED);
    const char *msg = opsched_ctx_last_error(ctx);
    assert_true(strstr(msg, "NCCL cannot be loaded") || strstr(msg, "without CUDA"));
    unsetenv("OPSCHED_NCCL_LIB");

    /* With the default NCCL: on a machine without GPUs (CI) the run stops
     * at the probe, naming what is missing; on one with GPUs, the whole
     * path runs (every GPU, every collective, up to 64 bytes). */
    int version = 0;
    char lib[256];
    if (opsched_nccl_library(ctx, &version, lib, sizeof(lib)) == OPSCHED_OK) {
        assert_true(version >= 20000);
        opsched_commbench_summary sum;
        st = opsched_commbench_run(ctx, &o, NULL, 0, &sum);
        if (st == OPSCHED_ERR_NOT_FOUND) {
            assert_non_null(strstr(opsched_ctx_last_error(ctx), "no GPU"));
        } else {
            assert_int_equal(st, OPSCHED_OK);
            assert_true(sum.measured >= 6);
            assert_int_equal(sum.wrong_results, 0);
        }
    } else {
        assert_int_equal(opsched_commbench_run(ctx, &o, NULL, 0, NULL), OPSCHED_ERR_UNSUPPORTED);
    }
    opsched_ctx_free(ctx);
}

/* ---- the DDP timeline, against timelines worked out by hand ---------------- */

#define MB (1024.0 * 1024.0)

/* 1 ms per MiB, no fixed cost: easy to follow by hand. */
static double ms_per_mb(double bytes, void *user)
{
    (void)user;
    return 1000.0 * bytes / MB;
}

static void test_ddp_buckets(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    /* Registration order: 10, 10, 0.5, 0.5, 30 MiB.  Reversed: 30 MiB
     * fills the 1 MiB first bucket alone; the rest (21 MiB) stay under
     * 25 MiB: one bucket. */
    opsched_ddp_param p[5] = {{(int64_t)(10 * MB), 0},
                              {(int64_t)(10 * MB), 0},
                              {(int64_t)(0.5 * MB), 0},
                              {(int64_t)(0.5 * MB), 0},
                              {(int64_t)(30 * MB), 0}};
    opsched_ddp_options o;
    opsched_ddp_options_init(&o);
    int *of = NULL, nb = 0;
    assert_int_equal(opsched_ddp_buckets(ctx, p, 5, &o, &of, &nb), OPSCHED_OK);
    assert_int_equal(nb, 2);
    int want[5] = {1, 1, 1, 1, 0};
    for (int i = 0; i < 5; i++)
        assert_int_equal(of[i], want[i]);
    free(of);
    /* A 5 MiB cap: 0.5 + 0.5 + 10 closes at 11 MiB, then 10 alone. */
    o.bucket_cap_mb = 5;
    assert_int_equal(opsched_ddp_buckets(ctx, p, 5, &o, &of, &nb), OPSCHED_OK);
    assert_int_equal(nb, 3);
    int want5[5] = {2, 1, 1, 1, 0};
    for (int i = 0; i < 5; i++)
        assert_int_equal(of[i], want5[i]);
    free(of);
    o.bucket_cap_mb = 0;
    assert_int_equal(opsched_ddp_buckets(ctx, p, 5, &o, &of, &nb), OPSCHED_ERR_INVALID_ARG);
    opsched_ctx_free(ctx);
}

static void test_ddp_timeline(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    /* Gradients: p3 (0.5 MiB) at 1 ms, p2 (0.5) at 2, p1 (2) at 6, p0 (2)
     * at 9, of a 10 ms backward.  Buckets: {p3, p2} (1 MiB, ready at 2,
     * all-reduced 2..3), {p1, p0} (4 MiB, ready at 9, 9..13). */
    opsched_ddp_param p[4] = {{(int64_t)(2 * MB), 9},
                              {(int64_t)(2 * MB), 6},
                              {(int64_t)(0.5 * MB), 2},
                              {(int64_t)(0.5 * MB), 1}};
    opsched_ddp_compute c = {5, 10, 1};
    opsched_ddp_options o;
    opsched_ddp_options_init(&o);
    opsched_ddp_result r;
    assert_int_equal(opsched_ddp_timeline(ctx, p, 4, &c, ms_per_mb, NULL, &o, &r), OPSCHED_OK);
    assert_int_equal(r.n_buckets, 2);
    assert_true(fabs(r.buckets[0].start_ms - 2) < 1e-9 && fabs(r.buckets[0].end_ms - 3) < 1e-9);
    assert_true(fabs(r.buckets[1].start_ms - 9) < 1e-9 && fabs(r.buckets[1].end_ms - 13) < 1e-9);
    assert_true(fabs(r.comm_ms - 5) < 1e-9);
    assert_true(fabs(r.exposed_ms - 3) < 1e-9);
    assert_true(fabs(r.hidden_ms - 2) < 1e-9);
    assert_true(fabs(r.iteration_ms - 19) < 1e-9); /* 5 + 13 + 1 */
    assert_true(fabs(r.single_ms - 16) < 1e-9);
    assert_true(fabs(r.scaling_efficiency - 16.0 / 19.0) < 1e-9);
    assert_int_equal(r.bucket_buffer_bytes, (int64_t)(5 * MB));
    opsched_ddp_result_free(&r);

    /* Overlap slows backward: 2 ms of communication inside backward
     * ([2, 3] and [9, 10]) at 0.5 stretch it to 11 ms; the ready times
     * stretch with it (2.2 and 9.9), the last bucket ends at 13.9. */
    o.overlap_slowdown = 0.5;
    assert_int_equal(opsched_ddp_timeline(ctx, p, 4, &c, ms_per_mb, NULL, &o, &r), OPSCHED_OK);
    assert_true(fabs(r.backward_ms - 11) < 1e-9);
    assert_true(fabs(r.buckets[1].end_ms - 13.9) < 1e-9);
    assert_true(fabs(r.iteration_ms - 19.9) < 1e-9);
    assert_true(fabs(r.exposed_ms - 2.9) < 1e-9);
    opsched_ddp_result_free(&r);

    /* The reducer's 250 us per gradient, four gradients: the same 1 ms
     * stretch, the same timeline. */
    o.overlap_slowdown = 0;
    o.per_param_us = 250;
    assert_int_equal(opsched_ddp_timeline(ctx, p, 4, &c, ms_per_mb, NULL, &o, &r), OPSCHED_OK);
    assert_true(fabs(r.backward_ms - 11) < 1e-9);
    assert_true(fabs(r.iteration_ms - 19.9) < 1e-9);
    opsched_ddp_result_free(&r);
    o.per_param_us = 0;

    /* Four micro-steps, three under no_sync: 3 x 15 + 5 + 13 + 1. */
    o.accumulation_steps = 4;
    o.gradient_as_bucket_view = 1;
    assert_int_equal(opsched_ddp_timeline(ctx, p, 4, &c, ms_per_mb, NULL, &o, &r), OPSCHED_OK);
    assert_true(fabs(r.iteration_ms - 64) < 1e-9);
    assert_true(fabs(r.single_ms - 61) < 1e-9);
    assert_int_equal(r.bucket_buffer_bytes, 0);
    opsched_ddp_result_free(&r);

    /* A gradient after backward's end is refused, naming it. */
    p[0].ready_ms = 11;
    o.accumulation_steps = 1;
    assert_int_equal(opsched_ddp_timeline(ctx, p, 4, &c, ms_per_mb, NULL, &o, &r),
                     OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "parameter 0"));
    opsched_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_busbw_factors),
        cmocka_unit_test(test_counts_and_buffers),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_expected_values),
        cmocka_unit_test(test_fit_known_pieces),
        cmocka_unit_test(test_store_roundtrip),
        cmocka_unit_test(test_commbench_refusals),
        cmocka_unit_test(test_ddp_buckets),
        cmocka_unit_test(test_ddp_timeline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
