/*
 * commbench.c - opsched commbench's parent process: one process per GPU,
 * started here with fork, NCCL bootstrapped through the unique id rank 0
 * makes and the parent passes on, results gathered from the ranks' pipes
 * and stored as they complete.
 *
 * The parent never touches CUDA (a CUDA context does not survive fork):
 * what it must know of the GPUs before starting the ranks (how many, GPU
 * 0's identity for the store's device row and for skipping what is
 * already measured) comes from a probe process.  A size's time is the
 * slowest rank's per sample, as a collective is done when every rank is.
 * A rank that fails, dies or falls silent for timeout_s stops the run
 * with its message; everything measured before it stays in the store.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm_impl.h"
#include "core/error.h"
#include "opsched/store.h"

extern char **environ;

int os_comm_write(int fd, const os_comm_msg *m)
{
    const char *p = (const char *)m;
    size_t left = sizeof(*m);
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        left -= (size_t)w;
    }
    return 0;
}

int os_comm_read(int fd, os_comm_msg *m)
{
    char *p = (char *)m;
    size_t left = sizeof(*m);
    while (left) {
        ssize_t r = read(fd, p, left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        left -= (size_t)r;
    }
    return 0;
}

#ifndef OPSCHED_HAVE_CUDA
int os_comm_rank_main(const os_comm_rank *r)
{
    (void)r;
    return 1;
}
int os_comm_probe_main(int fd)
{
    (void)fd;
    return 1;
}
opsched_status os_nccl_check(opsched_ctx *ctx, int *version, char *path, size_t size)
{
    (void)version;
    (void)path;
    (void)size;
    return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED,
                   "commbench needs the CUDA backend and NCCL; this opsched was built without "
                   "CUDA");
}
#endif

opsched_status opsched_nccl_library(opsched_ctx *ctx, int *version, char *path, size_t size)
{
    return os_nccl_check(ctx, version, path, size);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static opsched_status check_options(opsched_ctx *ctx, const opsched_commbench_options *o)
{
    if (o->ranks < 0 || o->ranks > 64)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "commbench: %d ranks (1 to 64, 0: every GPU)",
                       o->ranks);
    if (o->min_bytes < 1 || o->max_bytes < o->min_bytes)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "commbench: sizes %lld to %lld bytes (at least 1, the largest last)",
                       (long long)o->min_bytes, (long long)o->max_bytes);
    if (o->max_bytes > ((int64_t)16 << 30))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "commbench: %lld bytes is beyond the 16 GiB a size may have",
                       (long long)o->max_bytes);
    if (o->step_factor < 2)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "commbench: step factor %d (at least 2)",
                       o->step_factor);
    if (o->dtype != OPSCHED_F32 && o->dtype != OPSCHED_F16 && o->dtype != OPSCHED_BF16)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "commbench: dtype %s (f32, f16 or bf16)",
                       opsched_dtype_name(o->dtype));
    if (o->warmup < 0 || o->iters < 1 || o->samples < 1 || o->samples > OS_COMM_MAX_SAMPLES)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "commbench: %d warm-up operations, %d per sample, %d samples (at least 0, "
                       "1 and 1; at most %d samples)",
                       o->warmup, o->iters, o->samples, OS_COMM_MAX_SAMPLES);
    if (o->timeout_s < 1)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "commbench: timeout %d s (at least 1)",
                       o->timeout_s);
    if (o->collectives >> OPSCHED_COLLECTIVE_COUNT)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "commbench: unknown collective bits 0x%x",
                       o->collectives);
    return OPSCHED_OK;
}

/* The sizes of each collective, nccl-tests' way; a size that rounds to the
 * one before it is measured once. */
static opsched_status make_cases(opsched_ctx *ctx, const opsched_commbench_options *o, int ranks,
                                 os_comm_case **out, int *n_out)
{
    int cap = 0, n = 0;
    os_comm_case *cases = NULL;
    unsigned mask = o->collectives ? o->collectives : (1u << OPSCHED_COLLECTIVE_COUNT) - 1;
    int esz = (int)opsched_dtype_size(o->dtype);
    for (int c = 0; c < OPSCHED_COLLECTIVE_COUNT; c++) {
        if (!(mask & (1u << c))) continue;
        int64_t last = -1;
        for (int64_t b = o->min_bytes, next = b; b <= o->max_bytes; b = next) {
            /* The next size, or past the end without overflowing. */
            next = b > o->max_bytes / o->step_factor ? o->max_bytes + 1 : b * o->step_factor;
            int64_t count = opsched_collective_count((opsched_collective)c, b, esz, ranks);
            if (count <= 0 || count * esz == last) continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                os_comm_case *grown = realloc(cases, (size_t)cap * sizeof(*cases));
                if (!grown) {
                    free(cases);
                    return OS_NOMEM(ctx);
                }
                cases = grown;
            }
            cases[n].collective = (opsched_collective)c;
            cases[n].count = count;
            cases[n].bytes = last = count * esz;
            n++;
        }
    }
    *out = cases;
    *n_out = n;
    return OPSCHED_OK;
}

/* The NCCL_* variables and CUDA_VISIBLE_DEVICES as set. */
static void describe_env(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (char **e = environ; e && *e && used + 1 < size; e++) {
        if (strncmp(*e, "NCCL_", 5) != 0 && strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) != 0) continue;
        int w = snprintf(buf + used, size - used, "%s%s", used ? " " : "", *e);
        if (w < 0) break;
        used += (size_t)w < size - used ? (size_t)w : size - used - 1;
    }
}

static void nap_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

static void kill_all(pid_t *pids, int n)
{
    for (int i = 0; i < n; i++)
        if (pids[i] > 0) kill(pids[i], SIGTERM);
    /* A rank stuck inside NCCL may not see SIGTERM for a while. */
    double until = now_s() + 5.0;
    for (int i = 0; i < n; i++) {
        if (pids[i] <= 0) continue;
        int status;
        while (waitpid(pids[i], &status, WNOHANG) == 0) {
            if (now_s() > until) {
                kill(pids[i], SIGKILL);
                (void)waitpid(pids[i], &status, 0);
                break;
            }
            nap_ms(10);
        }
        pids[i] = 0;
    }
}

/* Why a process that closed its pipe ended. */
static void exit_reason(pid_t pid, char *buf, size_t size)
{
    int status = 0;
    pid_t w = 0;
    for (int i = 0; i < 200 && (w = waitpid(pid, &status, WNOHANG)) == 0; i++)
        nap_ms(10);
    if (w != pid)
        snprintf(buf, size, "closed its pipe");
    else if (WIFSIGNALED(status))
        snprintf(buf, size, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
}

static pid_t fork_child(void)
{
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* The parent's Ctrl-C handling decides when a rank stops. */
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);
    }
    return pid;
}

/* The probe: GPUs visible and GPU 0's identity, from a process of its own. */
static opsched_status probe(opsched_ctx *ctx, os_comm_msg *m)
{
    int fds[2];
    if (pipe(fds) != 0)
        return OS_FAIL(ctx, OPSCHED_ERR_BACKEND, "commbench: pipe: %s", strerror(errno));
    pid_t pid = fork_child();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return OS_FAIL(ctx, OPSCHED_ERR_BACKEND, "commbench: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        _exit(os_comm_probe_main(fds[1]));
    }
    close(fds[1]);
    int got = os_comm_read(fds[0], m);
    close(fds[0]);
    char why[128];
    if (got != 0) {
        exit_reason(pid, why, sizeof(why));
        return OS_FAIL(ctx, OPSCHED_ERR_BACKEND, "commbench: the GPU probe %s", why);
    }
    int status;
    (void)waitpid(pid, &status, 0);
    if (m->kind == OS_COMM_FAIL)
        return OS_FAIL(ctx, m->status ? (opsched_status)m->status : OPSCHED_ERR_BACKEND,
                       "commbench: %s", m->text);
    return OPSCHED_OK;
}

typedef struct gather {
    int ranks, n_cases, samples;
    double *samples_ms;  /* [case][rank][sample] */
    unsigned char *have; /* [case][rank] */
    int64_t *wrong;      /* [case] summed over ranks */
    double *max_error;   /* [case] */
} gather;

static void combine(const gather *g, const os_comm_case *c, int k,
                    const opsched_commbench_options *o, opsched_collective_result *r)
{
    double worst[OS_COMM_MAX_SAMPLES];
    for (int s = 0; s < g->samples; s++) {
        worst[s] = 0;
        for (int q = 0; q < g->ranks; q++) {
            double v = g->samples_ms[((size_t)k * g->ranks + q) * g->samples + s];
            if (v > worst[s]) worst[s] = v;
        }
    }
    memset(r, 0, sizeof(*r));
    r->collective = c->collective;
    r->dtype = o->dtype;
    r->bytes = c->bytes;
    r->count = c->count;
    r->ranks = g->ranks;
    r->iters = o->iters;
    (void)opsched_stats_compute(worst, g->samples, &r->stats);
    double sec = r->stats.median * 1e-3;
    r->algbw_gbs = sec > 0 ? (double)c->bytes / sec / 1e9 : NAN;
    r->busbw_gbs = r->algbw_gbs * opsched_collective_busbw_factor(c->collective, g->ranks);
    r->wrong = g->wrong[k];
    r->max_error = g->max_error[k];
}

static void append(char *buf, size_t size, const char *fmt, const char *a, int x, int y)
{
    size_t used = strlen(buf);
    if (used + 1 < size) snprintf(buf + used, size - used, fmt, a, x, y);
}

opsched_status opsched_commbench_run(opsched_ctx *ctx, const opsched_commbench_options *opts,
                                     opsched_store *store, int64_t run_id,
                                     opsched_commbench_summary *out)
{
    opsched_commbench_options o;
    opsched_commbench_summary sum;
    opsched_status st = OPSCHED_OK;
    os_comm_case *cases = NULL;
    int n_cases = 0, ranks = 0;
    pid_t pids[64] = {0};
    int up[64], down[64];
    gather g;
    memset(&g, 0, sizeof(g));
    memset(&sum, 0, sizeof(sum));
    for (int i = 0; i < 64; i++)
        up[i] = down[i] = -1;
    if (out) memset(out, 0, sizeof(*out));
    if (opts)
        o = *opts;
    else
        opsched_commbench_options_init(&o);
    OS_TRY(check_options(ctx, &o));

    char nccl_path[256] = "";
    OS_TRY(os_nccl_check(ctx, &sum.env.nccl_version, nccl_path, sizeof(nccl_path)));
    snprintf(sum.env.nccl_library, sizeof(sum.env.nccl_library), "%s", nccl_path);
    snprintf(sum.env.nccl_version_str, sizeof(sum.env.nccl_version_str), "%d.%d.%d",
             sum.env.nccl_version / 10000, sum.env.nccl_version / 100 % 100,
             sum.env.nccl_version % 100);
    describe_env(sum.env.env, sizeof(sum.env.env));

    os_comm_msg m;
    OS_TRY(probe(ctx, &m));
    if (m.gpus < 1)
        return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND, "commbench: no GPU is visible (%s)",
                       m.text[0] ? m.text : "CUDA sees none");
    ranks = o.ranks ? o.ranks : m.gpus;
    if (ranks > m.gpus)
        return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND,
                       "commbench: %d ranks need %d GPUs; this machine shows %d", ranks, ranks,
                       m.gpus);
    if (ranks > 64) ranks = 64;
    sum.env.ranks = ranks;
    sum.env.gpu0 = m.dev;

    int64_t device_id = 0;
    if (store) OS_TRY(opsched_store_device(store, &m.dev, &device_id));
    OS_TRY(make_cases(ctx, &o, ranks, &cases, &n_cases));

    /* What the store already holds is skipped, before any rank starts. */
    os_comm_case *todo = malloc((size_t)(n_cases ? n_cases : 1) * sizeof(*todo));
    int n_todo = 0;
    if (!todo) {
        free(cases);
        return OS_NOMEM(ctx);
    }
    for (int k = 0; k < n_cases; k++) {
        int found = 0;
        if (store && !o.force) {
            opsched_collective_result probe_r;
            memset(&probe_r, 0, sizeof(probe_r));
            probe_r.collective = cases[k].collective;
            probe_r.dtype = o.dtype;
            probe_r.bytes = cases[k].bytes;
            probe_r.count = cases[k].count;
            probe_r.ranks = ranks;
            OS_TRY_GOTO(st, opsched_store_collective_has(store, device_id, &probe_r, 1, &found),
                        done);
        }
        if (found) {
            sum.skipped++;
            if (o.on_result) {
                opsched_collective_result r;
                memset(&r, 0, sizeof(r));
                r.collective = cases[k].collective;
                r.dtype = o.dtype;
                r.bytes = cases[k].bytes;
                r.count = cases[k].count;
                r.ranks = ranks;
                o.on_result(&r, 1, o.user);
            }
        } else {
            todo[n_todo++] = cases[k];
        }
    }
    if (n_todo == 0) goto done;

    g.ranks = ranks;
    g.n_cases = n_todo;
    g.samples = o.samples;
    g.samples_ms = calloc((size_t)n_todo * ranks * o.samples, sizeof(double));
    g.have = calloc((size_t)n_todo * ranks, 1);
    g.wrong = calloc((size_t)n_todo, sizeof(int64_t));
    g.max_error = calloc((size_t)n_todo, sizeof(double));
    if (!g.samples_ms || !g.have || !g.wrong || !g.max_error) {
        st = OS_NOMEM(ctx);
        goto done;
    }

    for (int r = 0; r < ranks; r++) {
        int u[2], d[2];
        if (pipe(u) != 0 || pipe(d) != 0) {
            st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND, "commbench: pipe: %s", strerror(errno));
            goto done;
        }
        pid_t pid = fork_child();
        if (pid < 0) {
            close(u[0]);
            close(u[1]);
            close(d[0]);
            close(d[1]);
            st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND, "commbench: fork: %s", strerror(errno));
            goto done;
        }
        if (pid == 0) {
            for (int q = 0; q < r; q++) {
                close(up[q]);
                close(down[q]);
            }
            close(u[0]);
            close(d[1]);
            os_comm_rank a = {r, ranks, todo, n_todo, &o, u[1], d[0], nccl_path};
            _exit(os_comm_rank_main(&a));
        }
        close(u[1]);
        close(d[0]);
        pids[r] = pid;
        up[r] = u[0];
        down[r] = d[1];
    }

    /* Gather: poll every rank's pipe; cases complete in order. */
    {
        int next = 0, done_ranks = 0, stopping = 0;
        int finished[64] = {0};
        char links[256] = "", peer[512] = "";
        double last_word = now_s();
        while (done_ranks < ranks) {
            struct pollfd pf[64];
            for (int r = 0; r < ranks; r++) {
                pf[r].fd = finished[r] ? -1 : up[r];
                pf[r].events = POLLIN;
                pf[r].revents = 0;
            }
            int nr = poll(pf, (nfds_t)ranks, 200);
            if (nr < 0 && errno != EINTR) {
                st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND, "commbench: poll: %s", strerror(errno));
                goto done;
            }
            if (o.stop && *o.stop) stopping = 1;
            if (nr <= 0) {
                if (now_s() - last_word > o.timeout_s) {
                    st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND,
                                 "commbench: no word from the ranks for %d s at %s of %lld bytes "
                                 "(a rank hangs in NCCL?); stopped",
                                 o.timeout_s,
                                 next < n_todo ? opsched_collective_name(todo[next].collective)
                                               : "the end",
                                 next < n_todo ? (long long)todo[next].bytes : 0LL);
                    goto done;
                }
                continue;
            }
            last_word = now_s();
            for (int r = 0; r < ranks; r++) {
                if (!(pf[r].revents & (POLLIN | POLLHUP | POLLERR))) continue;
                if (os_comm_read(up[r], &m) != 0) {
                    char why[128];
                    exit_reason(pids[r], why, sizeof(why));
                    pids[r] = 0;
                    st = OS_FAIL(
                        ctx, OPSCHED_ERR_BACKEND,
                        "commbench: rank %d (GPU %d) %s during %s of %lld bytes", r, r, why,
                        next < n_todo ? opsched_collective_name(todo[next].collective) : "the end",
                        next < n_todo ? (long long)todo[next].bytes : 0LL);
                    goto done;
                }
                switch (m.kind) {
                case OS_COMM_ID:
                    for (int q = 1; q < ranks; q++)
                        if (write(down[q], m.id, OS_NCCL_ID_BYTES) != OS_NCCL_ID_BYTES) {
                            st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND,
                                         "commbench: passing NCCL's id to rank %d failed: %s", q,
                                         strerror(errno));
                            goto done;
                        }
                    break;
                case OS_COMM_HELLO: {
                    char one[256];
                    snprintf(one, sizeof(one), "%s%d:%s (%s)", r ? ", " : "", r, m.dev.name,
                             m.dev.uuid);
                    size_t used = strlen(sum.env.gpus);
                    if (used + 1 < sizeof(sum.env.gpus))
                        snprintf(sum.env.gpus + used, sizeof(sum.env.gpus) - used, "%s", one);
                    if (m.nvlinks >= 0)
                        append(links, sizeof(links), "%sGPU%d %d", r ? ", " : "", r, m.nvlinks);
                    if (r == 0) snprintf(peer, sizeof(peer), "%s", m.text);
                    break;
                }
                case OS_COMM_RESULT: {
                    int k = m.case_index;
                    if (k < 0 || k >= n_todo || m.n != o.samples) {
                        st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND,
                                     "commbench: rank %d sent a malformed result", r);
                        goto done;
                    }
                    memcpy(&g.samples_ms[((size_t)k * ranks + r) * o.samples], m.samples,
                           (size_t)o.samples * sizeof(double));
                    g.have[(size_t)k * ranks + r] = 1;
                    g.wrong[k] += m.wrong;
                    if (m.max_error > g.max_error[k]) g.max_error[k] = m.max_error;
                    break;
                }
                case OS_COMM_FAIL:
                    st = OS_FAIL(ctx, m.status ? (opsched_status)m.status : OPSCHED_ERR_BACKEND,
                                 "commbench: rank %d (GPU %d): %s", r, r, m.text);
                    goto done;
                case OS_COMM_DONE:
                    finished[r] = 1;
                    done_ranks++;
                    break;
                default:
                    st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND,
                                 "commbench: rank %d sent an unknown message (%d)", r, m.kind);
                    goto done;
                }
            }
            if (!sum.env.topology[0] && (links[0] || peer[0]))
                snprintf(sum.env.topology, sizeof(sum.env.topology), "%.300s%s%s%.180s", peer,
                         peer[0] && links[0] ? "; " : "", links[0] ? "active NVLinks: " : "",
                         links);
            /* Emit every case all ranks have reported, in order. */
            while (next < n_todo) {
                int all = 1;
                for (int r = 0; r < ranks; r++)
                    all &= g.have[(size_t)next * ranks + r];
                if (!all) break;
                opsched_collective_result res;
                combine(&g, &todo[next], next, &o, &res);
                if (store)
                    OS_TRY_GOTO(
                        st,
                        opsched_store_collective_put(store, run_id, device_id, &res, 1, &sum.env),
                        done);
                sum.measured++;
                if (res.wrong) sum.wrong_results++;
                if (o.on_result) o.on_result(&res, 0, o.user);
                next++;
                if (stopping) break;
            }
            if (stopping && (next > 0 || n_todo == 0)) {
                st = OS_FAIL(ctx, OPSCHED_ERR_INTERRUPTED,
                             "commbench: stopped on request after %lld of %d sizes; run it again "
                             "to measure the rest",
                             (long long)sum.measured, n_todo);
                goto done;
            }
        }
        if (next < n_todo)
            st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND,
                         "commbench: the ranks finished with %d of %d sizes unreported", next,
                         n_todo);
    }

done:
    kill_all(pids, ranks);
    for (int r = 0; r < 64; r++) {
        if (up[r] >= 0) close(up[r]);
        if (down[r] >= 0) close(down[r]);
    }
    if (st == OPSCHED_OK && sum.wrong_results)
        st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND,
                     "commbench: %lld of %lld results failed their check (stored with wrong > 0)",
                     (long long)sum.wrong_results, (long long)sum.measured);
    free(g.samples_ms);
    free(g.have);
    free(g.wrong);
    free(g.max_error);
    free(todo);
    free(cases);
    if (out) *out = sum;
    return st;
}
