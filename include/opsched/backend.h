/*
 * opsched/backend.h - devices that run operators: CUDA GPUs (cuDNN, cuBLAS)
 * and the CPU (oneDNN).
 *
 * The objects, from the top: a backend ("cuda", "cpu") has devices; a device
 * has streams and buffers (device memory); a plan is one graph node made
 * ready to run on a device: descriptors built, an algorithm chosen, the
 * workspace allocated.  A plan is launched many times, on any stream of its
 * device, reading and writing buffers the caller owns.
 *
 * "Not supported" is an answer, not a failure of the backend: planning a
 * node a backend or an algorithm cannot run returns OPSCHED_ERR_UNSUPPORTED
 * with the reason on the context; device memory exhaustion returns
 * OPSCHED_ERR_DEVICE_OOM.  Both leave the device usable.
 *
 * Ownership: a device must outlive its streams, buffers and plans.  A plan
 * borrows nothing from the graph it was made from once created.
 */
#ifndef OPSCHED_BACKEND_H
#define OPSCHED_BACKEND_H

#include "opsched/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opsched_device opsched_device;
typedef struct opsched_stream opsched_stream;
typedef struct opsched_buffer opsched_buffer;
typedef struct opsched_plan opsched_plan;

typedef enum opsched_math {
    OPSCHED_MATH_FP32 = 0,  /* strict fp32: no tensor-core rounding */
    OPSCHED_MATH_TF32,      /* fp32 data, tf32 tensor cores allowed */
    OPSCHED_MATH_FP16,      /* fp16 data, fp32 accumulation */
    OPSCHED_MATH_BF16,      /* bf16 data, fp32 accumulation */
    OPSCHED_MATH_COUNT
} opsched_math;

const char *opsched_math_name(opsched_math m); /* "fp32", "tf32", "fp16", "bf16" */
opsched_status opsched_math_from_name(const char *name, opsched_math *out);
/* The data type tensors are stored in under a math mode. */
opsched_dtype opsched_math_dtype(opsched_math m);

typedef struct opsched_device_info {
    char backend[16];          /* "cuda" or "cpu" */
    int index;                 /* within the backend */
    char name[128];            /* "NVIDIA H100 80GB HBM3", CPU model name */
    char uuid[80];             /* GPU UUID; CPU: a hash of the model name */
    char pci_bus_id[32];       /* GPU only */
    char driver_version[32];
    char runtime_version[32];  /* CUDA runtime */
    char library_versions[160];/* "cudnn 9.19.0; cublas 13.0.0" or "onednn 2.6.3" */
    int sm_count;              /* GPU SMs or CPU cores */
    int cc_major, cc_minor;    /* compute capability; 0 on CPU */
    int64_t memory_bytes;
    int64_t l2_bytes;          /* last-level cache */
    int has_power;             /* instantaneous power can be read */
    int has_energy;            /* a cumulative energy counter can be read */
    double power_limit_w;      /* 0 when unknown */
} opsched_device_info;

/* Backends compiled into this build, in order of preference ("cuda", "cpu"). */
int opsched_backend_count(void);
const char *opsched_backend_name(int i);

/* Devices a backend can see now (0 when none, e.g. no GPU or no driver).
 * An unknown backend name gives OPSCHED_ERR_NOT_FOUND. */
opsched_status opsched_device_count(opsched_ctx *ctx, const char *backend, int *out);
opsched_status opsched_device_open(opsched_ctx *ctx, const char *backend, int index,
                                   opsched_device **out);
void opsched_device_close(opsched_device *dev);
opsched_status opsched_device_info_get(opsched_device *dev, opsched_device_info *out);
opsched_ctx *opsched_device_ctx(const opsched_device *dev);
/* Waits for all work on the device. */
opsched_status opsched_device_sync(opsched_device *dev);

/* Plans a backend keeps per device so that planning the same node again
 * costs nothing (the CUDA backend: cuDNN graph-API convolution plans,
 * keyed by everything that decides them).  hits/misses count lookups
 * since the device was opened; entries is how many are kept now. */
typedef struct opsched_plan_cache_stats {
    int64_t hits, misses, evictions, entries;
    /* The persistent plan store across runs (the CUDA backend's cuDNN
     * plans, $OPSCHED_PLAN_STORE): plans loaded from it instead of
     * compiled, and plans compiled and written to it, since the device
     * was opened. */
    int64_t store_loads, store_writes;
} opsched_plan_cache_stats;
/* Zeros on backends without such a cache. */
void opsched_device_plan_cache_stats(const opsched_device *dev, opsched_plan_cache_stats *out);

/* Streams.  The device's default stream is returned by
 * opsched_device_stream (borrowed). */
opsched_status opsched_stream_create(opsched_device *dev, opsched_stream **out);
void opsched_stream_free(opsched_stream *s);
opsched_stream *opsched_device_stream(opsched_device *dev);
opsched_status opsched_stream_sync(opsched_stream *s);

/* Events order work across the streams of one device without the host
 * waiting: opsched_event_record marks the point that the work enqueued on
 * a stream so far has reached; opsched_stream_wait_event makes the work
 * enqueued on a stream after the call wait until the event's latest record
 * (at the time of the call) is reached.  Waiting on an event never recorded
 * waits for nothing.  Events carry no timestamps (opsched_timer does).
 * Both calls may be made while streams are captured into a device graph,
 * where they become the graph's edges: that is how work on several streams
 * is captured together (the other streams wait on an event recorded on the
 * capturing stream, and the capturing stream waits on events recorded on
 * them before the capture ends).  On backends whose streams finish every
 * launch before it returns (the CPU) program order already orders the
 * streams, and both calls do nothing. */
typedef struct opsched_event opsched_event;
opsched_status opsched_event_create(opsched_device *dev, opsched_event **out);
void opsched_event_free(opsched_event *e);
/* s NULL: the device's stream. */
opsched_status opsched_event_record(opsched_event *e, opsched_stream *s);
opsched_status opsched_stream_wait_event(opsched_stream *s, opsched_event *e);

/* Buffers: device memory of a given size. */
opsched_status opsched_buffer_alloc(opsched_device *dev, size_t bytes, opsched_buffer **out);
/* A buffer for bytes [offset, offset + bytes) of parent, without a copy: it
 * can be launched, uploaded and downloaded like any other.  It borrows
 * parent's memory (parent must outlive it); freeing it frees only the
 * view.  A range outside parent gives OPSCHED_ERR_INVALID_ARG. */
opsched_status opsched_buffer_view(opsched_buffer *parent, size_t offset, size_t bytes,
                                   opsched_buffer **out);
/* Frees the buffer, and its memory unless it is a view. */
void opsched_buffer_free(opsched_buffer *b);
size_t opsched_buffer_size(const opsched_buffer *b);
opsched_status opsched_buffer_upload(opsched_buffer *b, size_t offset, const void *src,
                                     size_t bytes);
opsched_status opsched_buffer_download(const opsched_buffer *b, size_t offset, void *dst,
                                       size_t bytes);
/* Fills with uniform values in [-1, 1) of dtype from a seed (reproducible). */
opsched_status opsched_buffer_fill_random(opsched_buffer *b, opsched_dtype dt, uint64_t seed);

/* ---- plans ---------------------------------------------------------- */

/* Algorithm names: "heuristic" (the library's first choice: on CUDA the
 * cuDNN 9 graph API's engine heuristics, as PyTorch uses them), "find" (the
 * fastest of the candidates by measurement, PyTorch's cudnn.benchmark), on
 * CUDA "heuristic_v7" and "find_v7" (the legacy API's choice and search),
 * or a backend-specific algorithm: cuDNN's legacy "implicit_gemm",
 * "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
 * "winograd", "winograd_nonfused"; oneDNN's "direct", "winograd". */
/* Parts of the planner an ablation turns off (opsched_plan_options.ablate),
 * to measure what each buys; the CPU backend has the executor's (chains,
 * residual) only. */
typedef enum opsched_ablation {
    OPSCHED_ABLATE_DEPTHWISE = 1u << 0,     /* the own depthwise and grouped kernel: cuDNN always */
    OPSCHED_ABLATE_EPILOGUE = 1u << 1,      /* the timed choice of the epilogue: an activation
                                             * cuDNN can fuse is always fused */
    OPSCHED_ABLATE_ENGINES = 1u << 2,       /* the timed choice of engines for grouped
                                             * convolutions: mode A's first */
    OPSCHED_ABLATE_REDUCTIONS = 1u << 3,    /* the column and row reductions of global pooling
                                             * and Reduce*: cuDNN's pooling window the size of
                                             * the map, the generic reduction kernel */
    OPSCHED_ABLATE_CHAINS = 1u << 4,        /* element-wise chains as one launch: every node
                                             * launches on its own (the executor's choice) */
    OPSCHED_ABLATE_RESIDUAL = 1u << 5,      /* residual Adds inside convolutions: the Add and
                                             * its activation launch on their own */
    OPSCHED_ABLATE_LAYOUT = 1u << 6,        /* the layout per tensor: every 4-D tensor in the
                                             * plan's layout (opsched_layout_rowmajor off) */
    OPSCHED_ABLATE_SE = 1u << 7,            /* the squeeze-and-excitation gate as one launch:
                                             * the mean and its layers launch on their own */
    OPSCHED_ABLATE_BIAS = 1u << 8,          /* a MatMul's bias Add, a Gemm's C, in its launch
                                             * (cuBLASLt's epilogue): the Add launches on its
                                             * own, C is copied first */
    OPSCHED_ABLATE_ATTENTION = 1u << 9,     /* attention as one node: an ONNX model keeps
                                             * the products, Softmax and Transposes as
                                             * written (OPSCHED_REWRITE_KEEP_ATTENTION) */
    OPSCHED_ABLATE_PROJECTIONS = 1u << 10,  /* sibling projections that only attention
                                             * reads as one product: each stays its own
                                             * (OPSCHED_REWRITE_KEEP_PROJECTIONS) */
    OPSCHED_ABLATE_TENSOR_CORES = 1u << 11, /* attention on the tensor cores (fp16/bf16,
                                             * fp32 in split TF32 under TF32): the float
                                             * kernel instead */
    OPSCHED_ABLATE_CUDNN_ATTENTION = 1u << 12, /* cuDNN's fused attention engines for
                                                * fp16/bf16: the own kernel always */
    OPSCHED_ABLATE_CONV_GEMM = 1u << 13,       /* 1x1 convolutions as timed cuBLASLt products:
                                                * cuDNN always */
    OPSCHED_ABLATE_MOVEMENT = 1u << 14,        /* runs of movement nodes as one strided gather
                                                * (opsched_move_runs): each node on its own */
    OPSCHED_ABLATE_SE_SPLIT = 1u << 15,        /* gates too large for one block as two launches:
                                                * their mean and layers launch on their own */
    OPSCHED_ABLATE_GEMM_TUNING = 1u << 16,     /* cuBLASLt's algorithms timed per product
                                                * (cu_lt_gemm_tune): the heuristic's first */
    OPSCHED_ABLATE_SE_MUL = 1u << 17,          /* a gate's multiply in the gate's launch
                                                * (opsched_se_gate.mul): its own launch */
    OPSCHED_ABLATE_IM2COL = 1u << 18,          /* grouped convolutions as their columns and one
                                                * batched cuBLASLt product, timed: never */
    OPSCHED_ABLATE_NORM_ACT = 1u << 19,        /* the activation after a batch normalisation in
                                                * its launch: a launch of its own */
    OPSCHED_ABLATE_LAYER_SCALE = 1u << 20,     /* a product's per-column scale (layer scale)
                                                * folded into its weights at load: kept a Mul */
    OPSCHED_ABLATE_CONV_NORM = 1u << 21,       /* a convolution's channels-last LayerNorm in its
                                                * launch (opsched_conv_norm_find): a launch of
                                                * its own */
    OPSCHED_ABLATE_PROLOGUE = 1u << 22,        /* an activation applied by the convolution that
                                                * reads it (opsched_conv_prologue_find): run
                                                * by its producer */
    OPSCHED_ABLATE_GATE = 1u << 23,            /* a gated map's multiply folded into the 1x1
                                                * product that reads it, per sample
                                                * (opsched_conv_gate_find): a pass of its own */
    OPSCHED_ABLATE_CONCAT_GATHER = 1u << 24,   /* movement runs that gather straight from a
                                                * Concat's inputs (opsched_move_concat): the
                                                * Concat written first */
    OPSCHED_ABLATE_MATMUL_GRAPH = 1u << 25,    /* a product, its bias and an activation
                                                * cuBLASLt's epilogue lacks as one cuDNN
                                                * graph: the activation a pass of its own */
    OPSCHED_ABLATE_POOL_VEC = 1u << 26,        /* NHWC pooling four channels a thread
                                                * (cuk_pool_nhwc4): cuDNN's pooling or the
                                                * generic kernel */
    OPSCHED_ABLATE_NORM_CONCAT = 1u << 27,     /* a batch normalisation reading its
                                                * Concat's inputs (opsched_norm_concat): the
                                                * Concat written first */
    OPSCHED_ABLATE_PDL = 1u << 28,             /* own kernels launched programmatically
                                                * (each may start as the one ahead of it
                                                * ends, sm_90 on): ordinary launches */
    OPSCHED_ABLATE_IGEMM = 1u << 29            /* grouped convolutions as an implicit GEMM
                                                * on the tensor cores (cuk_gconv_mma),
                                                * timed: never */
} opsched_ablation;
/* Parses a comma list of "depthwise", "epilogue", "engines", "reductions",
 * "chains", "residual", "layout", "se", "bias", "attention", "projections",
 * "tensor-cores", "cudnn-attention", "conv-gemm", "movement", "se-split", "gemm-tuning", "se-mul",
 * "im2col", "norm-act", "layer-scale", "conv-norm", "act-prologue", "gate-product",
 * "concat-gather", "matmul-graph", "pool-vec", "norm-concat", "pdl", "igemm" (or "none") into
 * *out;
 * OPSCHED_ERR_INVALID_ARG naming the word otherwise. */
opsched_status opsched_ablation_parse(opsched_ctx *ctx, const char *list, unsigned *out);
/* The names of the bits set, joined by sep ("depthwise+engines"); "" for 0. */
void opsched_ablation_names(unsigned bits, const char *sep, char *buf, size_t size);

typedef struct opsched_plan_options {
    const char *algo;          /* NULL means "heuristic" */
    opsched_math math;
    opsched_layout layout;     /* NCHW or NHWC activations */
    size_t workspace_limit;    /* 0: no limit beyond free memory */
    int fuse_activation;       /* conv, batch norm, Gemm: run its epilogue activation
                                * (opsched_node_epilogue) */
    int fuse_residual;         /* conv: run its residual Add and the activation after it
                                * (opsched_conv_residual_find); the launch's input 3 is r */
    unsigned ablate;           /* opsched_ablation bits: 0 for the planner as it is */
    int fuse_chain;            /* element-wise node: run the chain that starts at it
                                * (opsched_ew_chain_find) in one launch, whose inputs
                                * are the node's, then the chain's side operands
                                * (opsched_ew_chain_sides) */
    int fuse_bias;             /* MatMul: run the bias Add after it (and with
                                * fuse_activation the activation after that) in its
                                * launch (opsched_matmul_bias_find), the bias as
                                * input 2 */
    int fuse_se;               /* spatial mean: run the squeeze-and-excitation gate
                                * from it (opsched_se_gate_find) in one launch, whose
                                * inputs are the node's, then W1, b1, W2, b2; 2: the
                                * multiply after it (opsched_se_gate.mul) as well,
                                * where the backend can: the launch then writes x * s,
                                * the multiply's output */
    const opsched_graph *rowmajor_graph; /* with rowmajor: the graph it describes */
    const unsigned char *rowmajor; /* NULL, or a byte per tensor of rowmajor_graph: 1 keeps that
                                    * 4-D tensor row-major under the NHWC layout
                                    * (opsched_layout_rowmajor) */
    const int *move_path;      /* movement node: run this run of movement nodes (first
                                * first, the node last; opsched_move_run) as one
                                * strided gather of the first one's input, the launch's
                                * only input */
    int n_move_path;
    int fuse_norm;             /* conv: run the Transpose and LayerNormalization after it
                                * (opsched_conv_norm_find) in its launch, whose inputs
                                * are x, w, the bias, then the norm's scale and bias */
    int fuse_prologue;         /* conv: apply the activation that produced input 0
                                * (opsched_conv_prologue_find) to it as it is read: the
                                * launch reads the activation's input in its place */
    int move_concat;           /* with move_path: gather from the inputs of the Concat
                                * whose output is the run's source
                                * (opsched_move_concat), the launch's inputs, in
                                * the Concat's order */
    int fuse_gate;             /* conv: multiply its input by the per-sample channel
                                * scale of the Mul that produced it
                                * (opsched_conv_gate_find) as the product's weights:
                                * the launch reads the Mul's map as input 0 and the
                                * scale as input 5 */
    int norm_concat;           /* batch normalisation: read the inputs of the Concat it
                                * normalises (opsched_norm_concat) in its place: the
                                * launch reads the first as input 0, the norm's
                                * parameters as 1-4, the rest as 5 on */
} opsched_plan_options;

/* Forward convolution algorithms a backend can try, in its order; the list
 * is static.  *names may be NULL when the backend has none. */
opsched_status opsched_device_conv_algos(opsched_device *dev, const char *const **names,
                                         int *n);

/* Plans graph node `node` (its input and output shapes and attributes).
 * OPSCHED_ERR_UNSUPPORTED when the backend or the requested algorithm
 * cannot run it (the message says why), OPSCHED_ERR_DEVICE_OOM when the
 * workspace does not fit. */
opsched_status opsched_plan_create(opsched_device *dev, const opsched_graph *g, int node,
                                   const opsched_plan_options *opts, opsched_plan **out);
void opsched_plan_free(opsched_plan *p);

typedef struct opsched_plan_info {
    char algo[48];             /* the algorithm actually used */
    size_t workspace_bytes;
    int fused_activation;      /* 1 when the epilogue activation runs in the plan */
    int fused_residual;        /* 1 when the residual Add (and the activation after it,
                                * when fused_activation) runs in the plan */
    int fused_chain;           /* nodes of the element-wise chain the plan runs (the
                                * head among them), 0 when it runs its node alone */
    int fused_bias;            /* 1 when a MatMul's bias Add runs in the plan (input 2) */
    int fused_se;              /* nodes of the squeeze-and-excitation gate the plan
                                * runs (the mean among them; one more with the
                                * multiply), 0 when it runs its node alone */
    int fused_movement;        /* nodes of the movement run the plan gathers through,
                                * 0 when it runs its node alone */
    int fused_norm;            /* 1 when a convolution's LayerNormalization runs in the
                                * plan (inputs 3 and 4: its scale and bias) */
    int fused_prologue;        /* 1 when a convolution applies its input's activation
                                * (fuse_prologue) */
    int fused_concat;          /* inputs of the Concat a movement run gathers from
                                * (move_concat), 0 when it reads the source */
    int fused_gate;            /* 1 when a convolution applies its input's gate
                                * (fuse_gate) */
    int fused_norm_concat;     /* inputs of the Concat a batch normalisation reads in
                                * its place (norm_concat), 0 when it reads the Concat */
    int activation_apart;      /* 1 when the fused activation takes a pass over the
                                * output of its own (a kernel after the product), which
                                * the reader's prologue could save */
} opsched_plan_info;
opsched_status opsched_plan_info_get(const opsched_plan *p, opsched_plan_info *out);

/* Enqueues one run of the plan on stream s (NULL: the default stream).
 * inputs[i] and outputs[i] follow the node's inputs and outputs (an omitted
 * optional input is NULL; a convolution planned with its residual takes r
 * as input 3, after a NULL bias when it has none; a plan that runs an
 * element-wise chain takes the chain's side operands after the node's
 * inputs and writes the chain's last value as its output); each must hold
 * the tensor in the plan's dtype and layout.  Returns without waiting. */
opsched_status opsched_plan_launch(opsched_plan *p, opsched_stream *s,
                                   opsched_buffer *const *inputs, opsched_buffer *const *outputs);

/* ---- timing and energy ---------------------------------------------- */

/* Device-side timestamps on a stream (CUDA events; host clock on CPU). */
typedef struct opsched_timer opsched_timer;
opsched_status opsched_timer_create(opsched_device *dev, opsched_timer **out);
void opsched_timer_free(opsched_timer *t);
opsched_status opsched_timer_start(opsched_timer *t, opsched_stream *s);
opsched_status opsched_timer_stop(opsched_timer *t, opsched_stream *s);
/* Waits for the stop mark; milliseconds between start and stop. */
opsched_status opsched_timer_elapsed_ms(opsched_timer *t, double *ms);
/* Waits for b's start mark; milliseconds from a's start mark to b's.  A
 * chain of timers whose start marks sit at the boundaries between pieces
 * of work times each piece with one mark per boundary, not two. */
opsched_status opsched_timer_between_ms(opsched_timer *a, opsched_timer *b, double *ms);

typedef struct opsched_power_sample {
    double power_w;            /* NaN when unavailable */
    double energy_mj;          /* cumulative counter; NaN when unavailable */
    double temperature_c;      /* NaN when unavailable */
    double sm_clock_mhz;       /* NaN when unavailable */
} opsched_power_sample;

/* Reads the device's power state now.  OPSCHED_ERR_UNSUPPORTED when the
 * device has no sensor at all (then every field is NaN). */
opsched_status opsched_device_power(opsched_device *dev, opsched_power_sample *out);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_BACKEND_H */
