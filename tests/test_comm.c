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

static opsched_status collect(const opsched_collective_row *row, void *user);

/* collect, of the rows measured on one node. */
static opsched_status collect_one_node(const opsched_collective_row *row, void *user)
{
    return row->nodes == 1 ? collect(row, user) : OPSCHED_OK;
}

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
    /* Over two nodes: three sizes of all-reduce over 4 ranks, fitted apart
     * from the one-node rows and found only where nodes is 2. */
    for (int k = 0; k < 3; k++) {
        int64_t b = (int64_t)1 << (10 + 4 * k); /* 50 us + 0.2 ns per byte */
        fill_result(&r, OPSCHED_ALLREDUCE, b, 4, 0.05 + 2e-7 * (double)b);
        assert_int_equal(opsched_store_collective_put(s, run, dev, &r, 2, &env), OPSCHED_OK);
    }
    opsched_comm_fit fit;
    assert_int_equal(opsched_comm_fit_from_store_nodes(ctx, s, NULL, OPSCHED_ALLREDUCE,
                                                       OPSCHED_F32, 4, 2, &fit),
                     OPSCHED_OK);
    assert_true(fabs(opsched_comm_fit_eval(&fit, 1 << 14) - (50 + 0.2e-3 * 16384)) < 0.5);
    assert_int_equal(opsched_comm_fit_from_store(ctx, s, NULL, OPSCHED_ALLREDUCE, OPSCHED_F32, 4,
                                                 &fit),
                     OPSCHED_ERR_NOT_FOUND);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "on 1 node"));
    collected c = {0};
    assert_int_equal(opsched_store_collectives(s, NULL, collect, &c), OPSCHED_OK);
    c.n = 0;
    assert_int_equal(opsched_store_collectives(s, NULL, collect_one_node, &c), OPSCHED_OK);
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
    assert_int_equal(lines, 7);

    /* Merge: the rows arrive once however often the file is merged. */
    assert_int_equal(opsched_store_open(ctx, b_path, OPSCHED_STORE_READ_WRITE, &s), OPSCHED_OK);
    opsched_merge_stats ms;
    assert_int_equal(opsched_store_merge(s, a_path, &ms), OPSCHED_OK);
    assert_int_equal(ms.collectives, 6);
    assert_int_equal(opsched_store_merge(s, a_path, &ms), OPSCHED_OK);
    assert_int_equal(ms.collectives, 0);
    c.n = 0;
    assert_int_equal(opsched_store_collectives(s, "Test GPU", collect, &c), OPSCHED_OK);
    assert_int_equal(c.n, 6);
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

static void test_fsdp_unit_of(void **state)
{
    (void)state;
    char u[OPSCHED_FSDP_UNIT_NAME];
    assert_int_equal(opsched_fsdp_unit_of("layer1.0.conv1.weight", "layer*.*", u, sizeof(u)), 0);
    assert_string_equal(u, "layer1.0");
    assert_int_equal(opsched_fsdp_unit_of("layer1.0.downsample.1.bias", "layer*.*", u, sizeof(u)),
                     0);
    assert_string_equal(u, "layer1.0");
    opsched_fsdp_unit_of("conv1.weight", "layer*.*", u, sizeof(u));
    assert_string_equal(u, ""); /* the root */
    opsched_fsdp_unit_of("layer1.weight", "layer*.*", u, sizeof(u));
    assert_string_equal(u, ""); /* one component: no match */
    opsched_fsdp_unit_of("fc.weight", NULL, u, sizeof(u));
    assert_string_equal(u, "");
    /* The innermost unit wins; ":f32" says so. */
    assert_int_equal(
        opsched_fsdp_unit_of("layer2.3.bn1.weight", "layer*.*,layer*.*.bn*:f32", u, sizeof(u)), 1);
    assert_string_equal(u, "layer2.3.bn1");
    assert_int_equal(
        opsched_fsdp_unit_of("layer2.3.conv1.weight", "layer*.*,layer*.*.bn*:f32", u, sizeof(u)),
        0);
    assert_string_equal(u, "layer2.3");
    opsched_fsdp_unit_of("features.28.weight", "features,classifier.*", u, sizeof(u));
    assert_string_equal(u, "features");
    opsched_fsdp_unit_of("classifier.3.bias", "features,classifier.*", u, sizeof(u));
    assert_string_equal(u, "classifier.3");
}

static void test_fsdp_timeline(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    /* The root (1 MiB: stem and head), A (2 MiB) and B (4 MiB), 1 ms per
     * MiB for either collective.  Worked out by hand:
     *  forward: AG(root) 0..1; root 1..2, entering it issues AG(A) 1..3;
     *    A 3..5, AG(B) 3..7; B 7..9; the head (root) 9..10.
     *  backward: the head 10..11, entering it issues AG(B) 10..14; B
     *    14..17, AG(A) 14..16, RS(B) 17..21; A 17..20, RS(A) 21..23; the
     *    stem 20..21, RS(root) 23..24.  The optimizer's 2 ms halved: 25. */
    opsched_fsdp_unit units[3] = {{"", (int64_t)(1 * MB), 2, 0},
                                  {"A", (int64_t)(2 * MB), 2, 0},
                                  {"B", (int64_t)(4 * MB), 2, 0}};
    opsched_fsdp_segment segs[8] = {{0, 0, 1}, {1, 0, 2}, {2, 0, 2}, {0, 0, 1},
                                    {0, 1, 1}, {2, 1, 3}, {1, 1, 3}, {0, 1, 1}};
    opsched_fsdp_compute c = {units, 3, segs, 8, 2};
    opsched_fsdp_options o;
    opsched_fsdp_options_init(&o);
    o.ranks = 2;
    opsched_fsdp_result r;
    assert_int_equal(
        opsched_fsdp_timeline(ctx, &c, ms_per_mb, NULL, ms_per_mb, NULL, &o, &r), OPSCHED_OK);
    assert_true(fabs(r.forward_end_ms - 10) < 1e-9);
    assert_true(fabs(r.iteration_ms - 25) < 1e-9);
    assert_true(fabs(r.single_ms - 16) < 1e-9);
    assert_int_equal(r.n_allgathers, 5);
    assert_int_equal(r.n_reducescatters, 3);
    assert_true(fabs(r.allgather_ms - 13) < 1e-9);
    assert_true(fabs(r.reducescatter_ms - 7) < 1e-9);
    /* Under compute: 1 + 2 (forward) + 1 + 2 + 4 (backward). */
    assert_true(fabs(r.hidden_ms - 10) < 1e-9);
    assert_true(fabs(r.exposed_ms - 10) < 1e-9); /* 25 - (6 + 8 + 1) */
    /* Half the gathered bytes (bf16 parameters) and a host-bound step:
     * entering a unit takes the host 2 ms + 1 ms per parameter (two
     * each), so the host enters the root at 4, A at 8, B at 12 and, in
     * backward, the head at 16, B at 20, A at 24.  Forward: AG(root)
     * 0..0.5; root 4..5, AG(A) 4..5; A 8..10, AG(B) 8..10; B 12..14; head
     * 14..15.  Backward: head 16..17, AG(B) 16..18; B 20..23, AG(A)
     * 20..21, RS(B) 23..27; A 24..27, RS(A) 27..29; stem 27..28, RS(root)
     * 29..30; the optimizer's 1 ms. */
    o.gather_bytes_scale = 0.5;
    o.per_unit_us = 2000;
    o.per_param_us = 1000;
    assert_int_equal(
        opsched_fsdp_timeline(ctx, &c, ms_per_mb, NULL, ms_per_mb, NULL, &o, &r), OPSCHED_OK);
    assert_true(fabs(r.forward_end_ms - 15) < 1e-9);
    assert_true(fabs(r.iteration_ms - 31) < 1e-9);
    assert_true(fabs(r.exposed_ms - 16) < 1e-9); /* 31 - (6 + 8 + 1) */
    /* The host issuing the compute at 2 ms per ms of it (28 ms in all),
     * no hooks: each segment ends no sooner than the host has issued it.
     * Forward: root 1..2, A 3..6 (AG(A) 1..3, its host 2..6), B 7..10,
     * head 10..12.  Backward: head 12..14, AG(B) 12..16; B 16..20, RS(B)
     * 20..24; A 20..26, RS(A) 26..28; stem 26..28, RS(root) 28..29; + 1. */
    opsched_fsdp_options_init(&o);
    o.ranks = 2;
    o.host_ms = 28;
    assert_int_equal(
        opsched_fsdp_timeline(ctx, &c, ms_per_mb, NULL, ms_per_mb, NULL, &o, &r), OPSCHED_OK);
    assert_true(fabs(r.forward_end_ms - 12) < 1e-9);
    assert_true(fabs(r.iteration_ms - 30) < 1e-9);
    /* One rank: nothing to communicate, the one-GPU time. */
    opsched_fsdp_options_init(&o);
    assert_int_equal(
        opsched_fsdp_timeline(ctx, &c, ms_per_mb, NULL, ms_per_mb, NULL, &o, &r), OPSCHED_OK);
    assert_true(fabs(r.iteration_ms - 16) < 1e-9);
    assert_int_equal(r.n_allgathers + r.n_reducescatters, 0);
    /* A segment naming a unit that does not exist is refused. */
    segs[3].unit = 7;
    o.ranks = 2;
    assert_int_equal(
        opsched_fsdp_timeline(ctx, &c, ms_per_mb, NULL, ms_per_mb, NULL, &o, &r),
        OPSCHED_ERR_INVALID_ARG);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "segment 3"));
    opsched_ctx_free(ctx);
}

/* An nccl-tests log as all_reduce_perf prints it under mpirun (two
 * ranks; the numbers made up for this test), with a line of another type. */
static void test_nccl_tests_log(void **state)
{
    (void)state;
    opsched_ctx *ctx = NULL;
    assert_int_equal(opsched_ctx_create(&ctx), OPSCHED_OK);
    FILE *f = tmpfile();
    assert_non_null(f);
    fputs("[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup "
          "iters: 5 iters: 50 agg iters: 1 validation: 1 graph: 0\n"
          "[1,0]<stdout>:#\n"
          "[1,0]<stdout>:# Using devices\n"
          "[1,0]<stdout>:#  Rank  0 Group  0 Pid   1001 on     node-a device  0 [0x53] NVIDIA "
          "H100 80GB HBM3\n"
          "[1,0]<stdout>:#  Rank  1 Group  0 Pid   1002 on     node-b device  0 [0x53] NVIDIA "
          "H100 80GB HBM3\n"
          "node-a:1001:1001 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
          "[1,0]<stdout>:# Collective test starting: all_reduce_perf\n"
          "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw "
          "  busbw #wrong     time   algbw   busbw #wrong\n"
          "[1,0]<stdout>:           8             2     float     sum      -1    20.50    0.00 "
          "   0.00      0    20.10    0.00    0.00      0\n"
          "[1,0]<stdout>:        1024           256     float     sum      -1    25.00    0.04 "
          "   0.04    N/A    24.00    0.04    0.04    N/A\n"
          "[1,0]<stdout>:        1024           128    double     sum      -1    26.00    0.04 "
          "   0.04      0    25.00    0.04    0.04      0\n"
          "[1,0]<stdout>:# Out of bounds values : 0 OK\n",
          f);
    rewind(f);
    opsched_nccl_tests_log l;
    assert_int_equal(opsched_nccl_tests_parse(ctx, f, "log", &l), OPSCHED_OK);
    assert_int_equal(l.collective, OPSCHED_ALLREDUCE);
    assert_int_equal(l.ranks, 2);
    assert_int_equal(l.iters, 50);
    assert_string_equal(l.gpu, "NVIDIA H100 80GB HBM3");
    assert_string_equal(l.nccl_version, "2.21.5");
    assert_int_equal(l.n_results, 2);
    assert_int_equal(l.skipped, 1);
    assert_int_equal(l.results[0].bytes, 8);
    assert_int_equal(l.results[1].count, 256);
    assert_true(fabs(l.results[1].stats.median - 0.025) < 1e-12); /* out of place, ms */
    assert_int_equal(l.results[1].wrong, 0);
    assert_int_equal(l.results[1].ranks, 2);
    opsched_nccl_tests_log_free(&l);
    fclose(f);
    /* A size line cut short is an error naming the line. */
    f = tmpfile();
    assert_non_null(f);
    fputs("# Collective test starting: all_gather_perf\n"
          "        8      2     float    none      -1    20.50    0.00    0.00      0    20.10\n"
          "     1024    256     float    none      -1    25.00    zero    0.04      0    24.00    "
          "0.04    0.04      0\n",
          f);
    rewind(f);
    assert_int_equal(opsched_nccl_tests_parse(ctx, f, "cut.log", &l), OPSCHED_ERR_PARSE);
    assert_non_null(strstr(opsched_ctx_last_error(ctx), "cut.log:3"));
    fclose(f);
    /* srun's "0: " labels; no rank lines: the ranks are unknown (0). */
    f = tmpfile();
    assert_non_null(f);
    fputs("0: #       size         count      type   redop    root     time   algbw   busbw "
          "#wrong     time   algbw   busbw #wrong\n"
          "0:     1048576        262144  bfloat16     sum      -1    100.0   10.49   19.66      0"
          "    99.00   10.59   19.86      0\n",
          f);
    rewind(f);
    assert_int_equal(opsched_nccl_tests_parse(ctx, f, "srun.log", &l), OPSCHED_OK);
    assert_int_equal(l.n_results, 1);
    assert_int_equal(l.ranks, 0);
    assert_int_equal(l.collective, -1);
    assert_int_equal(l.results[0].dtype, OPSCHED_BF16);
    assert_true(fabs(l.results[0].busbw_gbs - 19.66) < 1e-9);
    opsched_nccl_tests_log_free(&l);
    fclose(f);
    /* Not nccl-tests output at all. */
    f = tmpfile();
    assert_non_null(f);
    fputs("hello\nworld\n", f);
    rewind(f);
    assert_int_equal(opsched_nccl_tests_parse(ctx, f, "other", &l), OPSCHED_ERR_PARSE);
    fclose(f);
    opsched_ctx_free(ctx);
}

/* The two-level model against arithmetic done by hand. */
static void test_multinode_model(void **state)
{
    (void)state;
    /* One node of 8 GPUs: all-reduce alpha 14 us (1 us per hop over 14
     * hops), then 480 GB/s of bus bandwidth (algorithm bandwidth 274.3). */
    opsched_comm_fit fit;
    memset(&fit, 0, sizeof(fit));
    fit.n_segments = 2;
    fit.seg[0] = (opsched_comm_segment){8, 1 << 20, 14.0, INFINITY, 3, 0, 0};
    fit.seg[1] = (opsched_comm_segment){1 << 20, 1e10, 14.0, 480.0 * 8 / 14, 3, 0, 0};
    opsched_comm_network net = {2, 8, 400.0, 10.0};
    opsched_comm_algo algo;
    /* 8 bytes over 16 GPUs: the ring 26 x 1 + 4 x 10 = 66 us; the tree
     * 2 x 7 x 1 + 2 x 1 x 10 = 34 us: the tree. */
    double us = opsched_comm_multinode_us(OPSCHED_ALLREDUCE, 8, &fit, &net, &algo);
    assert_true(fabs(us - (34 + 8 / (200.0 * 1e3))) < 1e-6);
    assert_int_equal(algo, OPSCHED_COMM_TREE);
    /* 1 GB: the ring moves 2(15)/16 GB at min(480, 400) GB/s: 4.6875 ms
     * + 66 us; the tree 1 GB at min(400 / 2, 480): 5 ms + 34 us. */
    us = opsched_comm_multinode_us(OPSCHED_ALLREDUCE, 1e9, &fit, &net, &algo);
    assert_true(fabs(us - (66 + 1e9 * 30.0 / 16 / 400e3)) < 1e-6);
    assert_int_equal(algo, OPSCHED_COMM_RING);
    /* One node: the fit itself. */
    net.nodes = 1;
    assert_true(fabs(opsched_comm_multinode_us(OPSCHED_ALLREDUCE, 1e9, &fit, &net, NULL) -
                     opsched_comm_fit_eval(&fit, 1e9)) < 1e-9);
    /* All-to-all is not modelled; a missing fit with 8 GPUs a node fails. */
    net.nodes = 2;
    assert_true(isnan(opsched_comm_multinode_us(OPSCHED_ALLTOALL, 1e6, &fit, &net, NULL)));
    assert_true(isnan(opsched_comm_multinode_us(OPSCHED_ALLREDUCE, 1e6, NULL, &net, NULL)));
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
        cmocka_unit_test(test_fsdp_unit_of),
        cmocka_unit_test(test_fsdp_timeline),
        cmocka_unit_test(test_nccl_tests_log),
        cmocka_unit_test(test_multinode_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
