/*
 * cuda_nccl.c - one rank of opsched commbench: NCCL collectives on one
 * GPU, timed as nccl-tests times them (CUDA events around `iters`
 * operations enqueued back to back, after a warm-up) and checked element
 * by element against the values opsched_collective_expected gives.
 *
 * Before each sample the ranks are lined up by a one-element all-reduce
 * that is waited for, outside the timed region.
 * NCCL is opened with dlopen (OPSCHED_NCCL_LIB, else libnccl.so.2), never
 * linked, so a build with CUDA runs where NCCL is missing and says so.
 * The few NCCL types used are declared here with nccl.h's values.
 * Broadcast runs in place (the root's buffer is every rank's), as
 * torch.distributed.broadcast and DDP's parameter broadcast run it; the
 * others out of place.  All-to-all is grouped send/recv, as PyTorch's all_to_all_single runs
 * it; send/recv sends to rank + 1 and receives from rank - 1 in one group.
 * Everything here runs in a process forked by commbench.c; results go up
 * the pipe as os_comm_msg records.
 */
#define _GNU_SOURCE
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cuda/cuda_impl.h"
#include "comm/comm_impl.h"
#include "core/half.h"

/* From nccl.h. */
typedef int nccl_result; /* ncclResult_t: ncclSuccess = 0 */
typedef struct nccl_comm_st *nccl_comm;
typedef struct {
    char internal[OS_NCCL_ID_BYTES];
} nccl_id;
enum { NCCL_FLOAT16 = 6, NCCL_FLOAT32 = 7, NCCL_BFLOAT16 = 9 };
enum { NCCL_SUM = 0 };

typedef struct nccl_fns {
    nccl_result (*get_version)(int *);
    nccl_result (*get_unique_id)(nccl_id *);
    nccl_result (*comm_init_rank)(nccl_comm *, int, nccl_id, int);
    nccl_result (*comm_destroy)(nccl_comm);
    nccl_result (*comm_abort)(nccl_comm);
    const char *(*error_string)(nccl_result);
    const char *(*last_error)(nccl_comm);
    nccl_result (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm, cudaStream_t);
    nccl_result (*all_gather)(const void *, void *, size_t, int, nccl_comm, cudaStream_t);
    nccl_result (*reduce_scatter)(const void *, void *, size_t, int, int, nccl_comm, cudaStream_t);
    nccl_result (*broadcast)(const void *, void *, size_t, int, int, nccl_comm, cudaStream_t);
    nccl_result (*send)(const void *, size_t, int, int, nccl_comm, cudaStream_t);
    nccl_result (*recv)(void *, size_t, int, int, nccl_comm, cudaStream_t);
    nccl_result (*group_start)(void);
    nccl_result (*group_end)(void);
} nccl_fns;

static void load_sym(void *lib, void *fn_ptr, size_t fn_size, const char *name)
{
    void *sym = dlsym(lib, name);
    memcpy(fn_ptr, &sym, fn_size);
}
#define LOAD(lib, field, name) load_sym((lib), (void *)&(field), sizeof(field), (name))

static const char *nccl_file(void)
{
    const char *e = getenv("OPSCHED_NCCL_LIB");
    return e && *e ? e : "libnccl.so.2";
}

/* Opens NCCL and fills f; NULL with why set when it cannot. */
static void *nccl_open(nccl_fns *f, char *why, size_t size)
{
    memset(f, 0, sizeof(*f));
    void *lib = dlopen(nccl_file(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(why, size,
                 "NCCL cannot be loaded (%s); install it or name the file with OPSCHED_NCCL_LIB",
                 e ? e : nccl_file());
        return NULL;
    }
    LOAD(lib, f->get_version, "ncclGetVersion");
    LOAD(lib, f->get_unique_id, "ncclGetUniqueId");
    LOAD(lib, f->comm_init_rank, "ncclCommInitRank");
    LOAD(lib, f->comm_destroy, "ncclCommDestroy");
    LOAD(lib, f->comm_abort, "ncclCommAbort");
    LOAD(lib, f->error_string, "ncclGetErrorString");
    LOAD(lib, f->last_error, "ncclGetLastError");
    LOAD(lib, f->all_reduce, "ncclAllReduce");
    LOAD(lib, f->all_gather, "ncclAllGather");
    LOAD(lib, f->reduce_scatter, "ncclReduceScatter");
    LOAD(lib, f->broadcast, "ncclBroadcast");
    LOAD(lib, f->send, "ncclSend");
    LOAD(lib, f->recv, "ncclRecv");
    LOAD(lib, f->group_start, "ncclGroupStart");
    LOAD(lib, f->group_end, "ncclGroupEnd");
    if (!f->get_version || !f->get_unique_id || !f->comm_init_rank || !f->comm_destroy ||
        !f->all_reduce || !f->all_gather || !f->reduce_scatter || !f->broadcast || !f->send ||
        !f->recv || !f->group_start || !f->group_end) {
        snprintf(why, size, "%s lacks NCCL 2.7's functions (ncclSend, ncclRecv, ...)", nccl_file());
        dlclose(lib);
        return NULL;
    }
    return lib;
}

opsched_status os_nccl_check(opsched_ctx *ctx, int *version, char *path, size_t size)
{
    nccl_fns f;
    char why[512];
    void *lib = nccl_open(&f, why, sizeof(why));
    if (!lib) return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "commbench: %s", why);
    int v = 0;
    (void)f.get_version(&v);
    *version = v;
    Dl_info info;
    void *sym = dlsym(lib, "ncclGetVersion");
    snprintf(path, size, "%s",
             sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : nccl_file());
    dlclose(lib);
    return OPSCHED_OK;
}

static void fail_msg(int fd, int rank, opsched_status st, const char *fmt, const char *a,
                     const char *b)
{
    os_comm_msg m;
    memset(&m, 0, sizeof(m));
    m.kind = OS_COMM_FAIL;
    m.rank = rank;
    m.status = st;
    snprintf(m.text, sizeof(m.text), fmt, a, b);
    (void)os_comm_write(fd, &m);
}

int os_comm_probe_main(int fd)
{
    os_comm_msg m;
    memset(&m, 0, sizeof(m));
    m.kind = OS_COMM_PROBE;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        m.gpus = 0;
        snprintf(m.text, sizeof(m.text), "CUDA: %s",
                 e != cudaSuccess ? cudaGetErrorString(e) : "no device");
        return os_comm_write(fd, &m) == 0 ? 0 : 1;
    }
    m.gpus = n;
    opsched_ctx *ctx = NULL;
    opsched_device *dev = NULL;
    if (opsched_ctx_create(&ctx) != OPSCHED_OK) return 1;
    if (opsched_device_open(ctx, "cuda", 0, &dev) != OPSCHED_OK ||
        opsched_device_info_get(dev, &m.dev) != OPSCHED_OK) {
        m.kind = OS_COMM_FAIL;
        m.status = OPSCHED_ERR_BACKEND;
        snprintf(m.text, sizeof(m.text), "GPU 0: %s", opsched_ctx_last_error(ctx));
    }
    opsched_device_close(dev);
    opsched_ctx_free(ctx);
    return os_comm_write(fd, &m) == 0 ? 0 : 1;
}

/* ---- one rank --------------------------------------------------------- */

typedef struct rank_state {
    const os_comm_rank *a;
    nccl_fns f;
    nccl_comm comm;
    cudaStream_t stream;
    cudaEvent_t start, stop;
    void *send, *recv; /* device buffers of the largest case */
    void *line_up;     /* one float: the all-reduce that lines the ranks up */
    void *host;        /* staging for fills and checks */
    size_t send_cap, recv_cap, host_cap;
    int nccl_type, esz;
    char why[512];
    opsched_status st;
} rank_state;

static int nccl_ok(rank_state *s, nccl_result r, const char *call)
{
    if (r == 0) return 1;
    const char *detail = s->f.last_error ? s->f.last_error(s->comm) : NULL;
    snprintf(s->why, sizeof(s->why), "%s: %s%s%s", call,
             s->f.error_string ? s->f.error_string(r) : "NCCL error", detail && *detail ? ": " : "",
             detail ? detail : "");
    s->st = OPSCHED_ERR_BACKEND;
    return 0;
}

static int cuda_ok(rank_state *s, cudaError_t e, const char *call)
{
    if (e == cudaSuccess) return 1;
    snprintf(s->why, sizeof(s->why), "%s: %s", call, cudaGetErrorString(e));
    s->st = e == cudaErrorMemoryAllocation ? OPSCHED_ERR_DEVICE_OOM : OPSCHED_ERR_BACKEND;
    return 0;
}

/* Enqueues one operation of case c on the rank's stream. */
static int launch(rank_state *s, const os_comm_case *c)
{
    const os_comm_rank *a = s->a;
    size_t count = (size_t)c->count, part = count / (size_t)a->ranks;
    int t = s->nccl_type;
    switch (c->collective) {
    case OPSCHED_ALLREDUCE:
        return nccl_ok(s, s->f.all_reduce(s->send, s->recv, count, t, NCCL_SUM, s->comm, s->stream),
                       "ncclAllReduce");
    case OPSCHED_ALLGATHER:
        return nccl_ok(s, s->f.all_gather(s->send, s->recv, part, t, s->comm, s->stream),
                       "ncclAllGather");
    case OPSCHED_REDUCESCATTER:
        return nccl_ok(s,
                       s->f.reduce_scatter(s->send, s->recv, part, t, NCCL_SUM, s->comm, s->stream),
                       "ncclReduceScatter");
    case OPSCHED_BROADCAST: /* in place, as torch.distributed.broadcast runs it */
        return nccl_ok(s, s->f.broadcast(s->send, s->send, count, t, 0, s->comm, s->stream),
                       "ncclBroadcast");
    case OPSCHED_ALLTOALL: {
        if (!nccl_ok(s, s->f.group_start(), "ncclGroupStart")) return 0;
        int ok = 1;
        for (int p = 0; p < a->ranks && ok; p++) {
            const char *sp = (const char *)s->send + (size_t)p * part * (size_t)s->esz;
            char *rp = (char *)s->recv + (size_t)p * part * (size_t)s->esz;
            ok = nccl_ok(s, s->f.send(sp, part, t, p, s->comm, s->stream), "ncclSend") &&
                 nccl_ok(s, s->f.recv(rp, part, t, p, s->comm, s->stream), "ncclRecv");
        }
        return nccl_ok(s, s->f.group_end(), "ncclGroupEnd") && ok;
    }
    case OPSCHED_SENDRECV: {
        int to = (a->rank + 1) % a->ranks, from = (a->rank - 1 + a->ranks) % a->ranks;
        if (!nccl_ok(s, s->f.group_start(), "ncclGroupStart")) return 0;
        int ok = nccl_ok(s, s->f.send(s->send, count, t, to, s->comm, s->stream), "ncclSend") &&
                 nccl_ok(s, s->f.recv(s->recv, count, t, from, s->comm, s->stream), "ncclRecv");
        return nccl_ok(s, s->f.group_end(), "ncclGroupEnd") && ok;
    }
    default:
        snprintf(s->why, sizeof(s->why), "unknown collective %d", (int)c->collective);
    }
    s->st = OPSCHED_ERR_BACKEND;
    return 0;
}

static void put_value(const rank_state *s, size_t i, double v)
{
    switch (s->nccl_type) {
    case NCCL_FLOAT16:
        ((uint16_t *)s->host)[i] = os_f32_to_f16((float)v);
        break;
    case NCCL_BFLOAT16:
        ((uint16_t *)s->host)[i] = os_f32_to_bf16((float)v);
        break;
    default:
        ((float *)s->host)[i] = (float)v;
    }
}

static double get_value(const rank_state *s, size_t i)
{
    switch (s->nccl_type) {
    case NCCL_FLOAT16:
        return os_f16_to_f32(((const uint16_t *)s->host)[i]);
    case NCCL_BFLOAT16:
        return os_bf16_to_f32(((const uint16_t *)s->host)[i]);
    default:
        return ((const float *)s->host)[i];
    }
}

/* The inputs hold a period of 17 in i (opsched_collective_input), so the
 * sums do too: a table of one period checks a gigabyte in a moment. */
static void period_tables(const os_comm_rank *a, double *in, double *sum)
{
    for (int j = 0; j < 17; j++) {
        in[j] = opsched_collective_input(a->rank, j);
        sum[j] = 0;
        for (int r = 0; r < a->ranks; r++)
            sum[j] += opsched_collective_input(r, j);
    }
}

static double expected(const os_comm_rank *a, const os_comm_case *c, const double *sum, int64_t i)
{
    int64_t part = c->count / a->ranks;
    switch (c->collective) {
    case OPSCHED_ALLREDUCE:
        return sum[i % 17];
    case OPSCHED_REDUCESCATTER:
        return sum[(a->rank * part + i) % 17];
    default:
        return opsched_collective_expected(c->collective, c->count, a->ranks, a->rank, i);
    }
}

/* Fills the send buffer with the check's inputs and clears the output. */
static int fill(rank_state *s, const os_comm_case *c, int64_t send_bytes, int64_t recv_bytes)
{
    double in[17], sum[17];
    period_tables(s->a, in, sum);
    size_t n = (size_t)send_bytes / (size_t)s->esz;
    for (size_t i = 0; i < n; i++)
        put_value(s, i, in[i % 17]);
    (void)c;
    return cuda_ok(s, cudaMemcpy(s->send, s->host, (size_t)send_bytes, cudaMemcpyHostToDevice),
                   "cudaMemcpy (inputs)") &&
           cuda_ok(s, cudaMemset(s->recv, 0xff, (size_t)recv_bytes), "cudaMemset (output)");
}

static int check(rank_state *s, const os_comm_case *c, int64_t recv_bytes, int64_t *wrong,
                 double *max_error)
{
    double in[17], sum[17];
    period_tables(s->a, in, sum);
    const void *out = c->collective == OPSCHED_BROADCAST ? s->send : s->recv;
    if (!cuda_ok(s, cudaMemcpy(s->host, out, (size_t)recv_bytes, cudaMemcpyDeviceToHost),
                 "cudaMemcpy (outputs)"))
        return 0;
    size_t n = (size_t)recv_bytes / (size_t)s->esz;
    *wrong = 0;
    *max_error = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(get_value(s, i) - expected(s->a, c, sum, (int64_t)i));
        if (!(d == 0)) {
            (*wrong)++;
            if (!(d <= *max_error)) *max_error = isnan(d) ? INFINITY : d;
        }
    }
    return 1;
}

static int run_case(rank_state *s, int k, os_comm_msg *m)
{
    const os_comm_rank *a = s->a;
    const opsched_commbench_options *o = a->o;
    const os_comm_case *c = &a->cases[k];
    int64_t send_bytes, recv_bytes;
    opsched_collective_buffers(c->collective, c->count, s->esz, a->ranks, &send_bytes, &recv_bytes);
    if (!fill(s, c, send_bytes, recv_bytes)) return 0;
    for (int i = 0; i < o->warmup; i++)
        if (!launch(s, c)) return 0;
    if (!cuda_ok(s, cudaStreamSynchronize(s->stream), "warm-up")) return 0;
    memset(m, 0, sizeof(*m));
    m->kind = OS_COMM_RESULT;
    m->rank = a->rank;
    m->case_index = k;
    m->n = o->samples;
    for (int j = 0; j < o->samples; j++) {
        /* The ranks lined up outside the timed region (nccl-tests' barrier
         * before timing): a one-element all-reduce, waited for. */
        if (!nccl_ok(s,
                     s->f.all_reduce(s->line_up, s->line_up, 1, NCCL_FLOAT32, NCCL_SUM, s->comm,
                                     s->stream),
                     "ncclAllReduce (line-up)") ||
            !cuda_ok(s, cudaStreamSynchronize(s->stream), "line-up"))
            return 0;
        if (!cuda_ok(s, cudaEventRecord(s->start, s->stream), "cudaEventRecord")) return 0;
        for (int i = 0; i < o->iters; i++)
            if (!launch(s, c)) return 0;
        float ms = 0;
        if (!cuda_ok(s, cudaEventRecord(s->stop, s->stream), "cudaEventRecord") ||
            !cuda_ok(s, cudaEventSynchronize(s->stop), "the timed operations") ||
            !cuda_ok(s, cudaEventElapsedTime(&ms, s->start, s->stop), "cudaEventElapsedTime"))
            return 0;
        m->samples[j] = (double)ms / o->iters;
    }
    /* The outputs of the last timed operation, checked. */
    return check(s, c, recv_bytes, &m->wrong, &m->max_error);
}

static int setup(rank_state *s, os_comm_msg *hello)
{
    const os_comm_rank *a = s->a;
    int n_dev = 0;
    if (!cuda_ok(s, cudaGetDeviceCount(&n_dev), "cudaGetDeviceCount")) return 0;
    if (a->rank >= n_dev) {
        snprintf(s->why, sizeof(s->why), "no GPU %d (CUDA shows %d)", a->rank, n_dev);
        s->st = OPSCHED_ERR_NOT_FOUND;
        return 0;
    }
    if (!cuda_ok(s, cudaSetDevice(a->rank), "cudaSetDevice")) return 0;

    /* The GPU's description, links and, from rank 0, peer access. */
    opsched_ctx *ctx = NULL;
    opsched_device *dev = NULL;
    memset(hello, 0, sizeof(*hello));
    hello->kind = OS_COMM_HELLO;
    hello->rank = a->rank;
    hello->nvlinks = -1;
    if (opsched_ctx_create(&ctx) == OPSCHED_OK) {
        if (opsched_device_open(ctx, "cuda", a->rank, &dev) == OPSCHED_OK)
            (void)opsched_device_info_get(dev, &hello->dev);
        opsched_device_close(dev);
        cu_nvml *nv = hello->dev.pci_bus_id[0] ? cu_nvml_open(ctx, hello->dev.pci_bus_id) : NULL;
        hello->nvlinks = cu_nvml_nvlinks(nv);
        cu_nvml_close(nv);
        opsched_ctx_free(ctx);
    }
    if (a->rank == 0) {
        size_t used = 0;
        for (int i = 0; i < a->ranks; i++)
            for (int j = i + 1; j < a->ranks; j++) {
                int can = 0, perf = -1;
                (void)cudaDeviceCanAccessPeer(&can, i, j);
                (void)cudaDeviceGetP2PAttribute(&perf, cudaDevP2PAttrPerformanceRank, i, j);
                int w = snprintf(hello->text + used, sizeof(hello->text) - used,
                                 "%sGPU%d-GPU%d peer access %s (rank %d)", used ? ", " : "", i, j,
                                 can ? "yes" : "no", perf);
                if (w < 0 || (size_t)w >= sizeof(hello->text) - used) break;
                used += (size_t)w;
            }
    }
    (void)cudaGetLastError();

    /* NCCL: rank 0 makes the id, the parent passes it on. */
    nccl_id id;
    if (a->rank == 0) {
        if (!nccl_ok(s, s->f.get_unique_id(&id), "ncclGetUniqueId")) return 0;
        os_comm_msg m;
        memset(&m, 0, sizeof(m));
        m.kind = OS_COMM_ID;
        memcpy(m.id, id.internal, OS_NCCL_ID_BYTES);
        if (os_comm_write(a->up, &m) != 0) return 0;
    } else {
        size_t got = 0;
        while (got < OS_NCCL_ID_BYTES) {
            ssize_t r = read(a->down, id.internal + got, OS_NCCL_ID_BYTES - got);
            if (r <= 0) {
                snprintf(s->why, sizeof(s->why), "the parent sent no NCCL id");
                s->st = OPSCHED_ERR_BACKEND;
                return 0;
            }
            got += (size_t)r;
        }
    }
    if (!nccl_ok(s, s->f.comm_init_rank(&s->comm, a->ranks, id, a->rank), "ncclCommInitRank"))
        return 0;

    /* Buffers for the largest case. */
    for (int k = 0; k < a->n_cases; k++) {
        int64_t sb, rb;
        opsched_collective_buffers(a->cases[k].collective, a->cases[k].count, s->esz, a->ranks, &sb,
                                   &rb);
        if ((size_t)sb > s->send_cap) s->send_cap = (size_t)sb;
        if ((size_t)rb > s->recv_cap) s->recv_cap = (size_t)rb;
    }
    s->host_cap = s->send_cap > s->recv_cap ? s->send_cap : s->recv_cap;
    s->host = malloc(s->host_cap ? s->host_cap : 1);
    if (!s->host) {
        snprintf(s->why, sizeof(s->why), "out of host memory for %zu bytes", s->host_cap);
        s->st = OPSCHED_ERR_NOMEM;
        return 0;
    }
    return cuda_ok(s, cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking),
                   "cudaStreamCreate") &&
           cuda_ok(s, cudaEventCreate(&s->start), "cudaEventCreate") &&
           cuda_ok(s, cudaEventCreate(&s->stop), "cudaEventCreate") &&
           cuda_ok(s, cudaMalloc(&s->send, s->send_cap ? s->send_cap : 1), "cudaMalloc (send)") &&
           cuda_ok(s, cudaMalloc(&s->recv, s->recv_cap ? s->recv_cap : 1), "cudaMalloc (recv)") &&
           cuda_ok(s, cudaMalloc(&s->line_up, sizeof(float)), "cudaMalloc (line-up)") &&
           cuda_ok(s, cudaMemset(s->line_up, 0, sizeof(float)), "cudaMemset (line-up)");
}

int os_comm_rank_main(const os_comm_rank *a)
{
    rank_state s;
    memset(&s, 0, sizeof(s));
    s.a = a;
    switch (a->o->dtype) {
    case OPSCHED_F16:
        s.nccl_type = NCCL_FLOAT16;
        s.esz = 2;
        break;
    case OPSCHED_BF16:
        s.nccl_type = NCCL_BFLOAT16;
        s.esz = 2;
        break;
    default:
        s.nccl_type = NCCL_FLOAT32;
        s.esz = 4;
    }
    void *lib = nccl_open(&s.f, s.why, sizeof(s.why));
    if (!lib) {
        fail_msg(a->up, a->rank, OPSCHED_ERR_UNSUPPORTED, "%s%s", s.why, "");
        return 1;
    }
    os_comm_msg m;
    char where[96] = "";
    int ok = setup(&s, &m) && os_comm_write(a->up, &m) == 0;
    for (int k = 0; ok && k < a->n_cases; k++) {
        ok = run_case(&s, k, &m);
        if (!ok)
            snprintf(where, sizeof(where), " (%s of %lld bytes)",
                     opsched_collective_name(a->cases[k].collective), (long long)a->cases[k].bytes);
        if (ok) ok = os_comm_write(a->up, &m) == 0;
        if (!ok && !s.why[0]) snprintf(s.why, sizeof(s.why), "the parent went away");
    }
    if (ok) {
        memset(&m, 0, sizeof(m));
        m.kind = OS_COMM_DONE;
        m.rank = a->rank;
        ok = os_comm_write(a->up, &m) == 0;
    } else {
        if (s.comm && s.f.comm_abort) (void)s.f.comm_abort(s.comm), s.comm = NULL;
        fail_msg(a->up, a->rank, s.st ? s.st : OPSCHED_ERR_BACKEND, "%s%s", s.why, where);
    }
    if (s.comm) (void)s.f.comm_destroy(s.comm);
    if (s.send) (void)cudaFree(s.send);
    if (s.recv) (void)cudaFree(s.recv);
    if (s.line_up) (void)cudaFree(s.line_up);
    free(s.host);
    return ok ? 0 : 1;
}
