/*
 * cuda_impl.h - what the CUDA backend's files share: the device, the plan,
 * the vendor check macros and the helpers that turn graph shapes into
 * strides.
 *
 * Streams: each device owns one stream created non-blocking at open; it is
 * the device's default stream (the registry's NULL stream handle), so work
 * on it can be captured into a CUDA graph and never serialises with the
 * legacy NULL stream.  cuDNN and cuBLAS handles are per device; every launch
 * binds them to the launch's stream first (cudnnSetStream, cublasSetStream,
 * then cublasSetWorkspace, because cublasSetStream resets the workspace).
 * Launches are enqueued from one thread, so the binding holds for the call
 * that follows it.  Plans running at the same time on different streams
 * never share scratch memory: every plan owns its workspace, except GEMMs,
 * which use their launch stream's (cu_gemm_workspace).
 *
 * Layouts: under OPSCHED_LAYOUT_NHWC every 4-D tensor of a plan (conv and
 * pooling activations, conv weights as [M, kh, kw, C/g]) is stored
 * channels-last; tensors of any other rank stay row-major.  Shapes remain
 * logical (NCHW) everywhere in the graph.
 *
 * Data types: floating-point tensors are stored in the math mode's type
 * (opsched_math_dtype); integer tensors (Gather indices, or data moved by
 * Concat/Slice/...) keep the graph's type.
 */
#ifndef OS_CUDA_IMPL_H
#define OS_CUDA_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "backend/backend_impl.h"
#include "backend/plan_cache.h"
#include "store/plan_store.h"
#include "backend/cuda/kernels.h"
#include "core/error.h"
#include "core/util.h"

/* ---- vendor error handling ------------------------------------------- */

/* Record a failed call on ctx and return the status it maps to:
 * cudaErrorMemoryAllocation, CUBLAS_STATUS_ALLOC_FAILED and cuDNN's
 * allocation failures are OPSCHED_ERR_DEVICE_OOM; cuDNN's and cuBLAS's
 * "not supported" are OPSCHED_ERR_UNSUPPORTED; the rest OPSCHED_ERR_BACKEND.
 * The CUDA runtime's last error is cleared so a later launch check does not
 * see it again. */
opsched_status cu_fail_cuda(opsched_ctx *ctx, cudaError_t err, const char *call, const char *file,
                            int line);
opsched_status cu_fail_cudnn(opsched_ctx *ctx, cudnnStatus_t err, const char *call,
                             const char *file, int line);
opsched_status cu_fail_cublas(opsched_ctx *ctx, cublasStatus_t err, const char *call,
                              const char *file, int line);

/* Return on failure. */
#define CUDA_CHECK(ctx, call)                                                                      \
    do {                                                                                           \
        cudaError_t cu_e_ = (call);                                                                \
        if (cu_e_ != cudaSuccess) return cu_fail_cuda((ctx), cu_e_, #call, __FILE__, __LINE__);    \
    } while (0)
#define CUDNN_CHECK(ctx, call)                                                                     \
    do {                                                                                           \
        cudnnStatus_t cu_e_ = (call);                                                              \
        if (cu_e_ != CUDNN_STATUS_SUCCESS)                                                         \
            return cu_fail_cudnn((ctx), cu_e_, #call, __FILE__, __LINE__);                         \
    } while (0)
#define CUBLAS_CHECK(ctx, call)                                                                    \
    do {                                                                                           \
        cublasStatus_t cu_e_ = (call);                                                             \
        if (cu_e_ != CUBLAS_STATUS_SUCCESS)                                                        \
            return cu_fail_cublas((ctx), cu_e_, #call, __FILE__, __LINE__);                        \
    } while (0)

/* Set st and jump to a function's cleanup label on failure. */
#define CUDA_CHECK_GOTO(ctx, st, call, label)                                                      \
    do {                                                                                           \
        cudaError_t cu_e_ = (call);                                                                \
        if (cu_e_ != cudaSuccess) {                                                                \
            (st) = cu_fail_cuda((ctx), cu_e_, #call, __FILE__, __LINE__);                          \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)
#define CUDNN_CHECK_GOTO(ctx, st, call, label)                                                     \
    do {                                                                                           \
        cudnnStatus_t cu_e_ = (call);                                                              \
        if (cu_e_ != CUDNN_STATUS_SUCCESS) {                                                       \
            (st) = cu_fail_cudnn((ctx), cu_e_, #call, __FILE__, __LINE__);                         \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)
#define CUBLAS_CHECK_GOTO(ctx, st, call, label)                                                    \
    do {                                                                                           \
        cublasStatus_t cu_e_ = (call);                                                             \
        if (cu_e_ != CUBLAS_STATUS_SUCCESS) {                                                      \
            (st) = cu_fail_cublas((ctx), cu_e_, #call, __FILE__, __LINE__);                        \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

/* ---- NVML (cuda_nvml.c) ---------------------------------------------- */

typedef struct cu_nvml cu_nvml;

/* Opens libnvidia-ml.so.1 and finds the GPU with this PCI bus id.  NULL
 * when NVML or the GPU cannot be had (logged at INFO, not an error): power
 * readings are then simply unavailable. */
cu_nvml *cu_nvml_open(opsched_ctx *ctx, const char *pci_bus_id);
void cu_nvml_close(cu_nvml *n);
int cu_nvml_has_power(const cu_nvml *n);
/* Active NVLinks of the GPU; -1 when NVML cannot tell. */
int cu_nvml_nvlinks(const cu_nvml *n);
int cu_nvml_has_energy(const cu_nvml *n);
/* Enforced power limit in W, 0 when unknown. */
double cu_nvml_power_limit(const cu_nvml *n);
/* The driver version ("580.65.06"); 0 when unknown. */
int cu_nvml_driver_version(const cu_nvml *n, char *buf, size_t size);
/* Fills what can be read (NaN elsewhere); 0 when nothing could be read. */
int cu_nvml_sample(const cu_nvml *n, opsched_power_sample *out);

/* ---- devices --------------------------------------------------------- */

/* The plan cache: planning a cuDNN graph-API convolution (heuristics,
 * trying engine configs, finalizing execution plans, for runtime-fusion
 * engines compiling kernels) costs milliseconds, and the schedule search
 * plans the same convolution in hundreds of candidate stages, so the
 * device keeps what planning chose (cuda_conv_graph.c), at most
 * OS_PLAN_CACHE_DEFAULT_MAX configurations, least recently used out
 * first; plans share a choice by reference count, each keeping its own
 * workspace and variant packs.  No lock: a device is opened and used by
 * one thread (the sweep opens one device per worker thread, src/sweep/
 * run.c; the energy sampler's thread only reads power through NVML), as
 * its cuDNN handle already requires. */
/* A stream of the device and the cuBLAS workspace that GEMMs launched on
 * it use.  GEMM plans own none: one workspace per stream is enough, since
 * work on a stream runs in order, and a network of a thousand GEMMs (an
 * unrolled recurrent network) would otherwise hold a thousand. */
typedef struct cu_stream_ws {
    cudaStream_t s;
    void *ws;      /* NULL until a GEMM is planned on the device */
    void *scratch; /* NULL until a plan asks for scratch (cu_stream_scratch) */
} cu_stream_ws;

typedef struct cu_device {
    int index;
    cudaStream_t stream;   /* the default stream (non-blocking, owned) */
    cu_stream_ws *streams; /* the default stream first, then every stream created */
    int n_streams, cap_streams;
    size_t gemm_ws_bytes; /* each stream's GEMM workspace; 0 until a GEMM is planned */
    size_t scratch_bytes; /* each stream's scratch; 0 until a plan asks for it */
    cudnnHandle_t cudnn;
    cublasHandle_t cublas;
    cublasLtHandle_t cublaslt; /* matrix products with epilogues */
    cu_nvml *nvml;             /* NULL when NVML is unavailable */
    char pci_bus_id[32];
    os_plan_cache *conv_plans; /* cuDNN graph-API convolution choices */
    os_plan_cache *sdpa_plans; /* cuDNN fused-attention choices (cuda_sdpa.c) */
    os_plan_cache *lt_algos;   /* cuBLASLt algorithms timed (cu_lt_gemm_tune) */
    os_plan_cache *mm_plans;   /* products with their bias and activation as cuDNN graphs */
    os_plan_store *plan_store; /* cuDNN's serialized plans across runs (cu_bk_plan); NULL: none */
    int plan_store_tried;      /* its opening was tried (once, at the first graph plan) */
    int pdl_ok;                /* sm_90 or later: own kernels may be launched programmatically */
    int pdl_plain;             /* launch plans made programmatic plainly (cu_launch_pdl) */
} cu_device;

/* Gives every stream of the device (and each created later) a GEMM
 * workspace of `bytes` (the first call decides; later ones keep it). */
opsched_status cu_gemm_workspace_reserve(opsched_ctx *ctx, cu_device *dev, size_t bytes);
/* Stream s's GEMM workspace (NULL when s is not one of the device's, or no
 * GEMM was planned) and its size in *bytes. */
void *cu_gemm_workspace(const cu_device *dev, cudaStream_t s, size_t *bytes);

/* Scratch memory of a launch that lives only while the launch runs (a
 * grouped convolution's columns): one buffer of CU_STREAM_SCRATCH_BYTES a
 * stream, since work on a stream runs in order.  Reserve gives every
 * stream (and each created later) its buffer; cu_stream_scratch is s's
 * (NULL when s is not the device's or nothing was reserved). */
#define CU_STREAM_SCRATCH_BYTES ((size_t)32 << 20)
opsched_status cu_stream_scratch_reserve(opsched_ctx *ctx, cu_device *dev);
void *cu_stream_scratch(const cu_device *dev, cudaStream_t s);

/* Makes dev's GPU current on this thread. */
opsched_status cu_device_use(opsched_ctx *ctx, const cu_device *dev);

/* Device memory that reports exhaustion as OPSCHED_ERR_DEVICE_OOM. */
opsched_status cu_malloc(opsched_ctx *ctx, size_t bytes, void **out);
/* Free device memory in bytes, 0 when it cannot be read. */
size_t cu_free_memory(void);

/* ---- plans ----------------------------------------------------------- */

typedef struct cu_plan cu_plan;

/* Runs one plan on a stream; in/out are device pointers in node order. */
typedef opsched_status (*cu_launch_fn)(opsched_ctx *ctx, cu_device *dev, cu_plan *p, cudaStream_t s,
                                       void *const *in, void *const *out);
/* Releases what the op-specific part of a plan owns (not the plan itself). */
typedef void (*cu_release_fn)(cu_plan *p);

/* The common head of every plan.  Op-specific plans embed it first. */
struct cu_plan {
    cu_launch_fn launch;
    cu_release_fn release; /* may be NULL */
    void *workspace;       /* owned device memory, NULL when none */
    size_t workspace_bytes;
    int n_in, n_out;
    uint64_t need_in; /* bit i: launch must be given input i; inputs from 64 on always */
    int pdl;          /* its own kernels launched programmatically (kernels_launch.cuh) */
};

/* What a planner gets: the node and its tensors, the options, and where
 * to write the plan's info. */
typedef struct cu_plan_args {
    opsched_ctx *ctx;
    cu_device *dev;
    const opsched_graph *g;
    const opsched_node *node;
    const opsched_plan_options *opts;
    opsched_dtype dt; /* floating-point storage type under opts->math */
    cuk_type kt;      /* the same, for kernels.h */
    opsched_plan_info *info;
} cu_plan_args;

/* Allocates a zeroed plan of `size` bytes (>= sizeof(cu_plan)). */
opsched_status cu_plan_alloc(const cu_plan_args *a, size_t size, cu_launch_fn launch,
                             cu_release_fn release, cu_plan **out);
/* Frees a plan: its release hook, its workspace, then the plan. */
void cu_plan_destroy(cu_plan *p);

/* Node tensors; NULL for an omitted optional input or a bad index. */
const opsched_tensor *cu_in(const cu_plan_args *a, int i);
const opsched_tensor *cu_out(const cu_plan_args *a, int i);

/* Fails with OPSCHED_ERR_UNSUPPORTED naming the node and the reason. */
opsched_status cu_unsupported(const cu_plan_args *a, const char *file, int line, const char *fmt,
                              ...) OS_PRINTF(4, 5);
#define CU_UNSUPPORTED(a, ...) cu_unsupported((a), __FILE__, __LINE__, __VA_ARGS__)

/* 1 when every floating-point input is of a float type this plan stores. */
int cu_dtype_is_float(opsched_dtype dt);
/* Element size of tensor t in this plan (math type for floats). */
size_t cu_elem_size(const cu_plan_args *a, const opsched_tensor *t);
cudnnDataType_t cu_cudnn_type(opsched_dtype dt);

/* Products of a strided batch: `count` of them, operand i of product j at
 * element offset j * stride_i, the bias at j * stride_bias; align_* are the
 * byte alignments every product's A, B and C/D pointers keep (cuBLASLt
 * assumes 256 unless told), so that batches of odd offsets pick
 * algorithms that run on them. */
/* The largest power of two up to 16 that divides `bytes`: the alignment a
 * batch's pointers keep when they are that many bytes apart (cu_lt_batch). */
int cu_align16(int64_t bytes);
typedef struct cu_lt_batch {
    int count;
    int64_t stride_a, stride_b, stride_d, stride_bias;
    int align_a, align_b, align_d;
} cu_lt_batch;

/* One cuBLASLt product in column-major terms, D (m x n, leading dimension
 * ldd) = epi(alpha op(A) op(B) + beta C + bias), C shaped as D (cuda_gemm.c):
 * the MatMul and Gemm plans' bias epilogues, and 1x1 convolutions in NHWC. */
typedef struct cu_lt_gemm {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t algo;
    float alpha, beta;
    size_t ws_limit; /* the most of the stream's GEMM workspace it uses */
    /* What it was set up for, for cu_lt_gemm_tune. */
    cudaDataType_t type;
    cublasComputeType_t compute;
    cublasLtEpilogue_t epi;
    int tra, trb, m, n, k, lda, ldb, ldd;
    cu_lt_batch bt; /* count 0: one product */
} cu_lt_gemm;
/* ---- the planner's timed verdicts (cuda_timing.c) ---- */

/* Launches in each timed run of a verdict: a single launch of a few
 * microseconds between two events times mostly the events and the launch
 * itself, and verdicts on such times follow noise. */
#define CU_TIME_REPS 8
#define CU_TIME_RUNS 3 /* timed runs, after one warm-up */
/* A choice whose warm-up run took this long a launch is timed once: its
 * runs differ by far less than the verdicts it takes part in, and a slow
 * candidate (a generic kernel at batch 16) would otherwise cost the
 * planner a second or more. */
#define CU_TIME_LONG_MS 2.0f
/* What a timed verdict launches, CU_TIME_REPS times over. */
typedef opsched_status (*cu_enqueue_fn)(const cu_plan_args *a, void *env, cudaStream_t s);
/* Times fn as the executor deploys it: CU_TIME_REPS enqueues captured into
 * one CUDA graph, launched once to warm up and then CU_TIME_RUNS times
 * (once from CU_TIME_LONG_MS a launch on) between two events on the
 * device's stream; *best is the fastest run's time per enqueue, in ms.  Where the capture fails the enqueues run back
 * to back on the stream instead. */
opsched_status cu_time_reps(const cu_plan_args *a, cu_enqueue_fn fn, void *env, float *best);
/* Device memory of `bytes` set to zero, for a verdict's scratch operands
 * (freed with cudaFree). */
opsched_status cu_zeroed(const cu_plan_args *a, size_t bytes, void **out);
/* buf[i] zeroed scratch of bytes[i] each, NULL where 0 (what was got
 * before a failure stays in buf); cu_free_set frees them all. */
opsched_status cu_zeroed_set(const cu_plan_args *a, const size_t *bytes, int n, void **buf);
void cu_free_set(void **buf, int n);

/* Sets g up with the heuristic's first algorithm (alpha 1); 0 when cuBLASLt
 * offers none (g then holds nothing). */
int cu_lt_gemm_init(cu_device *dev, cudaDataType_t type, cublasComputeType_t compute,
                    cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda,
                    int ldb, int ldd, cublasLtEpilogue_t epi, float beta, size_t ws_limit,
                    cu_lt_gemm *g);
/* The same for a strided batch of products (bt NULL: one product). */
int cu_lt_gemm_init_batched(cu_device *dev, cudaDataType_t type, cublasComputeType_t compute,
                            cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            int lda, int ldb, int ldd, cublasLtEpilogue_t epi, float beta,
                            size_t ws_limit, const cu_lt_batch *bt, cu_lt_gemm *g);
/* Enqueues the product on s with the stream's GEMM workspace; bias may be
 * NULL when the epilogue takes none, C NULL when beta is 0. */
opsched_status cu_lt_gemm_run(opsched_ctx *ctx, cu_device *dev, cu_lt_gemm *g, cudaStream_t s,
                              const void *A, const void *B, const void *bias, const void *C,
                              void *D);
/* Times up to CU_LT_TUNE_ALGOS of the heuristic's algorithms for g (as
 * cu_time_reps does, on zeroed scratch operands) and keeps the fastest in
 * g; the verdict is kept in the device's cache, keyed by the product's
 * shape, types, epilogue and workspace limit, so a product of the same
 * kind is timed once.  The heuristic's first wherever only one is offered
 * or none of the others runs faster. */
#define CU_LT_TUNE_ALGOS 8
opsched_status cu_lt_gemm_tune(const cu_plan_args *a, cu_lt_gemm *g);
void cu_lt_gemm_free(cu_lt_gemm *g);
/* Reserves cuBLAS's recommended workspace on every stream (32 MiB on
 * Hopper and later, 4 MiB before) and gives the part a plan may use under
 * a->opts->workspace_limit. */
opsched_status cu_gemm_default_workspace(const cu_plan_args *a, size_t *limit);

/* The type a tensor of graph type dt is stored in under this plan. */
opsched_dtype cu_storage(const cu_plan_args *a, opsched_dtype dt);
/* The same for kernels.h (CUK_DT_COUNT for an unknown type). */
cuk_dtype cu_kdt(const cu_plan_args *a, const opsched_tensor *t);
/* The bytes of value v in storage type `storage` (low bytes of the result):
 * floats rounded to nearest, integers truncated toward zero and saturated
 * at int64's range then wrapped to the width, bool "not zero". */
uint64_t cu_value_bits(opsched_dtype storage, double v);

/* 1 when t is stored channels-last in this plan (NHWC and rank 4). */
int cu_is_nhwc(const cu_plan_args *a, const opsched_tensor *t);
/* Element strides of t's logical dims as stored in this plan. */
void cu_strides(const cu_plan_args *a, const opsched_tensor *t, int64_t *st);
/* The order in which t's logical dims are laid out in memory, outermost
 * first (identity, or 0,2,3,1 for channels-last). */
void cu_mem_order(const cu_plan_args *a, const opsched_tensor *t, int *order);
/* outer/axis/inner sizes of t around logical dim `axis` in memory order. */
void cu_axis_split(const cu_plan_args *a, const opsched_tensor *t, int axis, int64_t *outer,
                   int64_t *len, int64_t *inner);

/* Strides of t against the dims of `out` (right-aligned, numpy style): 0
 * where t is broadcast. */
void cu_aligned_strides(const cu_plan_args *a, const opsched_tensor *t, const opsched_shape *out,
                        int64_t *st);
/* An iteration over y's dims with y as operand 0 (the others zeroed). */
void cu_nd_over(const cu_plan_args *a, const opsched_tensor *y, cuk_nd *nd);

/* Drops unit dims, orders dims by operand 0's strides (outermost first)
 * and merges dims that are contiguous for all `nops` operands. */
void cu_nd_simplify(cuk_nd *nd, int nops);
/* The same over an iteration of its own: ndim dims of `shape`, nops
 * operands' strides. */
void cu_dims_simplify(int *ndim, int64_t *shape, int64_t (*stride)[CUK_MAX_DIMS], int nops);

/* 1 when v fits a cuDNN int dimension. */
int cu_fits_int(int64_t v);

/* Planners, one per family (cuda_conv.c, cuda_gemm.c, cuda_dnn.c,
 * cuda_kops.c).  Each fills a->info and returns the plan in *out. */
opsched_status cu_plan_conv(const cu_plan_args *a, cu_plan **out);
/* The element-wise chain that starts at a->node (opsched_ew_chain_find) as
 * one kernel (cuda_ew.c); OPSCHED_ERR_UNSUPPORTED when there is none or a
 * function of it has no float kernel. */
opsched_status cu_plan_chain(const cu_plan_args *a, cu_plan **out);
/* The squeeze-and-excitation gate that starts at a->node, a spatial mean
 * (opsched_se_gate_find), as one kernel (cuk_se_gate); UNSUPPORTED when
 * there is none or the kernel does not take it. */
opsched_status cu_plan_se(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_attention(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_gemm(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_matmul(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_pool(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_global_pool(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_activation(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_batchnorm(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_softmax(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_lrn(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_concat(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_split(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_slice(const cu_plan_args *a, cu_plan **out);
/* A run of movement nodes (opts->move_path, opsched_move_run) as one
 * strided copy of its source, in the source's and the output's layouts;
 * unsupported where the run is not affine or needs more than CUK_MAX_DIMS
 * factors. */
opsched_status cu_plan_move(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_gather(const cu_plan_args *a, cu_plan **out);
/* 1 when the reduction d reads its input as [O, R, C] with C the one
 * contiguous kept extent (at least 8) and writes [O, C]: a reduction over
 * H and W of a channels-last tensor, for cuk_colreduce (cuda_reduce.c). */
int cu_column_view(const cuk_reduce_desc *d, int64_t *O, int64_t *R, int64_t *C);
/* Gives p the workspace cuk_colreduce needs for [O, R, C] (none when one
 * block a column suffices). */
opsched_status cu_colreduce_alloc(const cu_plan_args *a, cu_plan *p, int64_t O, int64_t R,
                                  int64_t C);
/* The planner of a->node's operator (cuda_plan.c). */
opsched_status cu_plan_dispatch(const cu_plan_args *a, cu_plan **out);
/* a->node planned under NCHW between copies from and to NHWC, for a
 * planner that refuses NHWC (cuda_layout.c); the NCHW plan itself when no
 * tensor of the node differs between the two. */
opsched_status cu_plan_nchw_adapter(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_transpose(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_pad(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_expand(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_layernorm(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_reduce(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_view(const cu_plan_args *a, cu_plan **out);
/* The generic families: element-wise (cuda_ew.c), reductions and the ops
 * along an axis (cuda_reduce.c), gathers, scatters and other indexing
 * (cuda_index.c), Resize (cuda_resize.c), ConvTranspose
 * (cuda_conv_transpose.c). */
opsched_status cu_plan_elementwise(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_reduce_fn(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_arg(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_axis_norm(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_groupnorm(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_cumsum(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_topk(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_index(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_resize(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_conv_transpose(const cu_plan_args *a, cu_plan **out);
/* The legacy convolution calls' math types (forward, backward data and filter, 2-D and 3-D):
 * 1 when the mode allows math type m that cuDNN reported (fp32 data may not be rounded to fp16
 * behind the caller's back); and m set on conv, FMA in strict fp32. */
int cu_conv_math_ok(const cu_plan_args *a, cudnnMathType_t m);
opsched_status cu_conv_set_math(const cu_plan_args *a, cudnnConvolutionDescriptor_t conv,
                                cudnnMathType_t m);
/* The training operators (cuda_train.c): batch norm's training form and its
 * backward through cuDNN (own kernels where cuDNN cannot), a convolution's
 * filter gradient through cuDNN's backward filter. */
opsched_status cu_plan_batchnorm_train(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_batchnorm_grad(const cu_plan_args *a, cu_plan **out);
opsched_status cu_plan_conv_grad_filter(const cu_plan_args *a, cu_plan **out);
/* 3-D Conv and ConvTranspose (5-D tensors) through cuDNN's Nd descriptors
 * (cuda_conv3d.c). */
opsched_status cu_plan_conv_3d(const cu_plan_args *a, cu_plan **out);

/* Entry points of the function table that live in cuda_plan.c. */
opsched_status cu_plan_create(opsched_ctx *ctx, void *dev, const opsched_graph *g, int node,
                              const opsched_plan_options *opts, void **plan,
                              opsched_plan_info *info);
void cu_plan_free(void *dev, void *plan);
/* The backend's launch_pdl slot (backend_impl.h). */
int cu_launch_pdl(void *dev, int on);
opsched_status cu_plan_launch(opsched_ctx *ctx, void *dev, void *plan, void *stream,
                              void *const *in, void *const *out);

/* Device graphs (cuda_graph.c): the table's optional graph slots. */
opsched_status cu_graph_begin(opsched_ctx *ctx, void *dev, void *stream);
opsched_status cu_graph_end(opsched_ctx *ctx, void *dev, void *stream, void **graph);
opsched_status cu_graph_launch(opsched_ctx *ctx, void *dev, void *graph, void *stream);
void cu_graph_free(void *dev, void *graph);

/* Events without timing (cuda_event.c): the table's optional event slots. */
opsched_status cu_event_create(opsched_ctx *ctx, void *dev, void **event);
void cu_event_free(void *dev, void *event);
opsched_status cu_event_record(opsched_ctx *ctx, void *dev, void *event, void *stream);
opsched_status cu_stream_wait(opsched_ctx *ctx, void *dev, void *stream, void *event);

/* The conv algorithm names, in cuDNN's enum order (cuda_conv.c). */
#define CU_N_CONV_ALGOS 8
extern const char *const cu_conv_algo_names[CU_N_CONV_ALGOS];

/* ---- convolution, shared by the legacy and graph-API paths ------------ */

/* The unary function and constants the element-wise kernels compute for
 * a one-input activation node (cuda_ew.c). */
void cu_unary_fn_of(const opsched_node *n, cuk_ufn *fn, cuk_ew_params *prm);

/* A convolution's epilogue activation (opsched_conv_epilogue's node), as
 * the kernels compute it and as cuDNN's pointwise modes may. */
typedef struct cu_act {
    int on;                   /* 0: none */
    const opsched_node *node; /* the activation node (the graph outlives planning) */
    cuk_ufn fn;
    cuk_ew_params prm;
} cu_act;
/* The activation the plan of a->node may fuse: none unless the options ask
 * for fusion and opsched_conv_epilogue gives one. */
void cu_act_for(const cu_plan_args *a, cu_act *act);
/* The activation of node j of a->g (none when j < 0). */
void cu_act_of(const cu_plan_args *a, int j, cu_act *act);
/* a->node's index in a->g, or -1 (a node of another graph). */
int cu_node_index(const cu_plan_args *a);

/* The epilogue a convolution's plan runs as a kernel after cuDNN: the bias
 * of the convolution, and the activation the graph-API path takes when no
 * cuDNN engine fuses it (cuda_conv_graph.c). */
typedef struct cu_conv_bias {
    int on;     /* 0: the node has no bias input */
    cu_act act; /* applied after the bias */
    int64_t numel, channels, channel_stride;
} cu_conv_bias;
/* Sets b up for the node's bias, without an activation. */
void cu_conv_bias_init(const cu_plan_args *a, cu_conv_bias *b);
/* Enqueues y += bias[c] when b->on, then y = act(y): one kernel for a Relu
 * (or the bias alone), a second for another activation. */
opsched_status cu_conv_bias_add(opsched_ctx *ctx, const cu_conv_bias *b, cuk_type kt,
                                const void *bias, void *y, cudaStream_t s);

/* A convolution plan through cuDNN's graph API (cuda_conv_graph.c): the
 * first engine config of heuristics mode A (then the fallback list) that
 * the math mode allows and that fits the workspace limit, or with `find`
 * the fastest of several such configs timed at plan time.  The bias, and
 * with opts->fuse_activation a Relu that is the output's only reader, are
 * fused into cuDNN's operation graph when an engine runs it, and otherwise
 * run as one kernel after the convolution.  The node has been checked to
 * be a 2-D float convolution. */
typedef enum cu_conv_force {
    CU_CONV_TIMED = 0, /* cuDNN's choice, or the own kernel or cuBLASLt where they measure faster */
    CU_CONV_OWN,       /* the own depthwise/grouped kernel ("own", cu_own_variant) */
    CU_CONV_CUBLASLT,  /* a 1x1 convolution as a cuBLASLt product ("cublaslt") */
    CU_CONV_IM2COL,    /* a grouped one as columns and a batched product ("im2col") */
    CU_CONV_IGEMM,     /* a grouped one as an implicit GEMM on the tensor cores ("igemm") */
    CU_CONV_MM_GRAPH   /* a 1x1 one, its bias and activation as one cuDNN product graph
                        * ("cudnn_matmul", cuda_matmul_graph.c) */
} cu_conv_force;
/* The own kernel's variant that algorithm name asks for: "own" 0 (the
 * planner's), "own-generic" -1, "own-tile1/2/4/8" that tile width
 * (cuk_dw_desc.tile_w, for depthwise NHWC convolutions the tiled kernel
 * runs; others run as "own"), "own-vecHxW" the four-channel kernel's tile
 * of H x W outputs (tile_w W and *tile_h H, where the layer's window has
 * that tile; others run as "own"); -2 when name is none of these.  tile_h
 * may be NULL. */
int cu_own_variant(const char *name, int *tile_h);
opsched_status cu_plan_conv_graph(const cu_plan_args *a, int find, cu_conv_force force,
                                  cu_plan **out);
/* Drops the plan cache's reference to a convolution choice (the cache's
 * release function). */
void cu_conv_choice_release(void *choice);

/* ---- cuDNN's graph API (cuda_bk.c) ----------------------------------- */

void cu_bk_free(cudnnBackendDescriptor_t *d); /* destroys *d (may be NULL), sets NULL */
opsched_status cu_bk_new(opsched_ctx *ctx, cudnnBackendDescriptorType_t type,
                         cudnnBackendDescriptor_t *d);
#define CU_BK_SET(ctx, d, name, type, n, v)                                                        \
    CUDNN_CHECK((ctx), cudnnBackendSetAttribute((d), (name), (type), (n), (v)))
/* The engine configs heuristics `mode` proposes for an operation graph,
 * best first: *cfgs is malloc'd and the caller owns every descriptor in
 * it (cu_bk_configs_free); *n is 0 when the mode has nothing for it. */
opsched_status cu_bk_configs(opsched_ctx *ctx, cudnnBackendDescriptor_t graph,
                             cudnnBackendHeurMode_t mode, cudnnBackendDescriptor_t **cfgs,
                             int64_t *n);
void cu_bk_configs_free(cudnnBackendDescriptor_t *cfgs, int64_t n);

/* A variant pack binds a graph's tensor ids to pointers.  Building one
 * costs 0.4 to 0.8 us of host time (cuDNN 9.19), up to a tenth of a small
 * operation's host-bound launch, so a plan keeps the packs of the last
 * CU_BK_PACKS pointer sets it ran with (the harness rotates up to 64 input
 * sets in cold-cache mode) and builds one only for a new set.  A launch
 * therefore writes to its plan: like its context, a plan is used by one
 * thread at a time. */
#define CU_BK_PACKS 64
#define CU_BK_PACK_PTRS 8
#define CU_BK_ALIGN 16 /* bytes every graph-API tensor claims */
typedef struct cu_bk_pack {
    void *ptrs[CU_BK_PACK_PTRS];
    int n;
    cudnnBackendDescriptor_t pack; /* NULL: slot unused */
} cu_bk_pack;
typedef struct cu_bk_packs {
    cu_bk_pack slot[CU_BK_PACKS];
    int next; /* the slot the next new pointer set replaces */
} cu_bk_packs;
/* A pack of n (uid, pointer) pairs with workspace ws. */
opsched_status cu_bk_pack_build(opsched_ctx *ctx, void *ws, const int64_t *uids, void *const *ptrs,
                                int n, cudnnBackendDescriptor_t *out);
/* The cached pack for this pointer set, built on first sight; the first
 * n_device pointers are device buffers, which must be CU_BK_ALIGN-aligned
 * (the rest, by-value scalars, need not).  `what` names the operation in
 * messages. */
opsched_status cu_bk_pack_for(opsched_ctx *ctx, cu_bk_packs *c, void *ws, const int64_t *uids,
                              void *const *ptrs, int n, int n_device, const char *what,
                              cudnnBackendDescriptor_t *out);
void cu_bk_packs_free(cu_bk_packs *c);

/* An operation graph being built (the attention's, a product's): its
 * tensors, its operations and what describes them, freed together
 * (cu_bk_graph_free).  `what` names it in messages ("attention"). */
#define CU_BK_GRAPH_T 20
#define CU_BK_GRAPH_OPS 12
typedef struct cu_bk_graph {
    const char *what;
    cudnnBackendDescriptor_t t[CU_BK_GRAPH_T];
    cudnnBackendDescriptor_t how[CU_BK_GRAPH_OPS]; /* matmul, pointwise, reduction descs */
    cudnnBackendDescriptor_t ops[CU_BK_GRAPH_OPS];
    int n_t, n_ops;
    cudnnBackendDescriptor_t graph;
} cu_bk_graph;
void cu_bk_graph_free(cu_bk_graph *g);
/* Finalizes d, a part of the graph named `graph` ("attention"): cuDNN's
 * "not supported" or "bad parameter" becomes OPSCHED_ERR_UNSUPPORTED with
 * its reason, which callers turn into another plan. */
opsched_status cu_bk_finalize(const cu_plan_args *a, cudnnBackendDescriptor_t d, const char *graph,
                              const char *what);
/* A tensor of nd (<= 8) dims; *out is kept in g for freeing. */
opsched_status cu_bk_tensor(const cu_plan_args *a, cu_bk_graph *g, int64_t uid, cudnnDataType_t dt,
                            int nd, const int64_t *dims, const int64_t *strides, int is_virtual,
                            int by_value, cudnnBackendDescriptor_t *out);
/* y = x w, computed in float. */
opsched_status cu_bk_matmul(const cu_plan_args *a, cu_bk_graph *g, cudnnBackendDescriptor_t x,
                            cudnnBackendDescriptor_t w, cudnnBackendDescriptor_t y);
/* A pointwise mode with its constants (the RELU_FWD family takes Relu,
 * Clip and LeakyRelu through its clips and slope). */
typedef struct cu_bk_pw {
    cudnnPointwiseMode_t mode;
    cudnnBackendAttributeName_t param_name; /* 0: no constant */
    double param;
    int relu_family; /* lower, upper and slope are set */
    double lower, upper, slope;
    const char *name; /* for a plan's algorithm text */
} cu_bk_pw;
/* The pointwise mode that computes act in float; 0 when cuDNN has none
 * (HardSigmoid, HardSwish, Mish, a Clip without finite bounds). */
int cu_bk_act_mode(const cu_act *act, cu_bk_pw *m);
/* The descriptor *pw of y = m(x[, b]) in float and its operation *op (the
 * caller frees both), part of the graph named `graph`. */
opsched_status cu_bk_pw_op(const cu_plan_args *a, const char *graph, const cu_bk_pw *m,
                           cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                           cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t *pw,
                           cudnnBackendDescriptor_t *op);
/* The same, kept in g. */
opsched_status cu_bk_pointwise(const cu_plan_args *a, cu_bk_graph *g, const cu_bk_pw *m,
                               cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                               cudnnBackendDescriptor_t y);
/* y = reduce(x) over the dims where y has size 1, in float. */
opsched_status cu_bk_reduction(const cu_plan_args *a, cu_bk_graph *g, cudnnReduceTensorOp_t mode,
                               cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y);
/* The operation graph of g's operations, in the order they were made. */
opsched_status cu_bk_graph_finish(const cu_plan_args *a, cu_bk_graph *g);
/* The engine behind engine config cfg: its global index, and whether the
 * plan's math mode allows its numerical notes (strict fp32 drops
 * TENSOR_CORE engines; every mode drops DOWN_CONVERT_INPUTS, as PyTorch
 * does). */
opsched_status cu_bk_engine_info(const cu_plan_args *a, cudnnBackendDescriptor_t cfg,
                                 int64_t *index, int *allowed);
/* An execution plan of engine config cfg for the operation graph that
 * graph_key names whole (every shape, stride, type and operation: the key
 * the caller's in-process plan cache uses): loaded from the device's plan
 * store when it holds one for (graph_key, cfg's engine and knobs), which
 * skips a runtime-fusion engine's compile; else finalized and then stored.
 * graph_key NULL: no store.  When cuDNN turns the config down, *plan is
 * NULL and *why (may be NULL) its status; OPSCHED_OK either way, an error
 * only for a failure of the library (out of memory). */
opsched_status cu_bk_plan(const cu_plan_args *a, cudnnBackendDescriptor_t cfg,
                          const char *graph_key, cudnnBackendDescriptor_t *plan,
                          cudnnStatus_t *why);

/* ---- a product, its bias and activation as one cuDNN graph ------------ */

/* Y[m, n] = act(A[m, k] B[k, n] + bias[n]), row-major (B stored [n, k]
 * with b_trans), in the plan's type (cuda_matmul_graph.c). */
typedef struct cu_mm_desc {
    int m, n, k;
    int b_trans;
    cuk_type kt;
    cu_act act;
} cu_mm_desc;
typedef struct cu_mm_choice cu_mm_choice;
/* The graph's choice for d, planned and measured once per configuration
 * against lt (cuBLASLt's product of the same operands with its bias
 * epilogue) followed by the activation's kernel: *out is a reference to
 * it when the graph measured faster (with `force`, whenever an engine
 * runs it), else NULL.  Engines wanting more than `limit` bytes of
 * workspace are passed over.  With `force`, a product no engine runs
 * fails with OPSCHED_ERR_UNSUPPORTED. */
opsched_status cu_mm_graph_plan(const cu_plan_args *a, const cu_mm_desc *d, cu_lt_gemm *lt,
                                size_t limit, int force, cu_mm_choice **out);
size_t cu_mm_graph_workspace(const cu_mm_choice *c);
/* 1 when the graph has a form for act: a pointwise mode of cuDNN's, or
 * HardSigmoid and HardSwish as a chain of them. */
int cu_mm_graph_act_ok(const cu_act *act);
/* The plan's algorithm text: "cudnn_matmul_bias_<act>:eng<N>". */
void cu_mm_graph_describe(const cu_mm_choice *c, char *buf, size_t size);
/* Runs the choice on s with the pack kept in packs for these pointers and
 * workspace ws (at least cu_mm_graph_workspace bytes). */
opsched_status cu_mm_graph_run(opsched_ctx *ctx, cu_device *dev, const cu_mm_choice *c,
                               cu_bk_packs *packs, void *ws, cudaStream_t s, const void *A,
                               const void *B, const void *bias, void *Y);
void cu_mm_choice_unref(cu_mm_choice *c);
void cu_mm_choice_release(void *choice); /* the plan cache's release function */

/* fp16 and bf16 attention through cuDNN's fused flash-attention engines
 * (cuda_sdpa.c) for the Attention node of a, whose own kernel is d (after
 * cuk_attention_prepare) and whose Q, K and V start off[] bytes into their
 * tensors.  *out is the plan, or NULL when cuDNN has no engine for this
 * attention or its engine measured slower than the own kernel (measured
 * once per configuration); *why then says which, for the log.  With
 * `force` (--algo cudnn) cuDNN's plan is taken whatever it measured, and
 * an attention it cannot run fails with OPSCHED_ERR_UNSUPPORTED. */
opsched_status cu_sdpa_plan(const cu_plan_args *a, const cuk_attention_desc *d, cuk_dtype t,
                            const size_t off[3], int has_bias, int force, cu_plan **out,
                            const char **why);
/* Drops the plan cache's reference to an attention choice. */
void cu_sdpa_choice_release(void *choice);

#endif /* OS_CUDA_IMPL_H */
