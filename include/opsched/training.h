/*
 * training.h - the training iteration of a network, as PyTorch's eager
 * training runs it: the forward pass, the loss, the backward pass of every
 * operator (data and weight gradients), the optimizer step and zero-grad,
 * as one ordered list of steps with their dependencies; and the memory that
 * iteration holds, step by step, as PyTorch's caching allocator counts it.
 *
 * The forward graph is an inference graph (a zoo model built with
 * BatchNormalization kept, or an ONNX file).  Its WEIGHT tensors are the
 * parameters, except BatchNormalization's running statistics (buffers);
 * graph inputs are data and get no gradient.
 *
 * What a step keeps for backward follows autograd's rules per operator:
 * a convolution its input, a matrix product both operands, Relu, Sigmoid,
 * Tanh and the softmaxes their output, the other activations their input,
 * max pooling its input and the int64 indices, the normalisations their
 * input and per-row statistics, additions and views nothing.
 *
 * The memory model (opsched_training_memory) replays one steady-state
 * iteration: zero-grad sets gradients to None (PyTorch's default since 2.0)
 * so they are made during backward and held to the optimizer; optimizer
 * state (SGD's momentum buffer, AdamW's two moments) is held throughout; a
 * forward activation is freed after its last reader, or after the last
 * backward step that uses it when it is kept for backward; the gradient of
 * an activation lives from the first backward step that makes it to the
 * last that reads it; the foreach optimizers' temporaries (AdamW: the
 * square root of the second moment; SGD with weight decay: the decayed
 * gradient) live during the step.  Every allocation is rounded up to
 * 512 bytes, as the caching allocator's blocks are; the peak is what
 * torch.cuda.max_memory_allocated reports.  Workspaces of the libraries are
 * not included (they come with plans on a device); nor is the autocast
 * weight cache (mixed precision comes later).
 */
#ifndef OPSCHED_TRAINING_H
#define OPSCHED_TRAINING_H

#include "opsched/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum opsched_optimizer {
    OPSCHED_OPTIMIZER_SGD = 0,    /* with momentum (a buffer per parameter) */
    OPSCHED_OPTIMIZER_ADAMW
} opsched_optimizer;

typedef enum opsched_optimizer_impl {
    OPSCHED_OPTIMIZER_FOREACH = 0, /* torch.optim's default on CUDA */
    OPSCHED_OPTIMIZER_FUSED
} opsched_optimizer_impl;

typedef enum opsched_loss {
    OPSCHED_LOSS_CROSS_ENTROPY = 0, /* over the last axis of the first output */
    OPSCHED_LOSS_MSE
} opsched_loss;

typedef struct opsched_training_options {
    opsched_optimizer optimizer;
    opsched_optimizer_impl impl;
    opsched_loss loss;
    double weight_decay;          /* SGD: > 0 makes the foreach step use a temporary */
    /* opsched_training_graph: 1 appends the optimizer step (see there) */
    int step;
} opsched_training_options;

typedef enum opsched_train_step_kind {
    OPSCHED_STEP_ZERO_GRAD = 0,
    OPSCHED_STEP_FORWARD,         /* a node of the forward graph */
    OPSCHED_STEP_LOSS,
    OPSCHED_STEP_LOSS_BACKWARD,   /* the gradient of the loss w.r.t. the output */
    OPSCHED_STEP_BACKWARD_DATA,   /* the gradient w.r.t. one activation input */
    OPSCHED_STEP_BACKWARD_WEIGHT, /* the gradients w.r.t. the node's parameters */
    OPSCHED_STEP_OPTIMIZER
} opsched_train_step_kind;

const char *opsched_train_step_kind_name(opsched_train_step_kind k);

typedef struct opsched_train_step {
    opsched_train_step_kind kind;
    int node;                     /* the forward node; -1 for zero-grad, the loss, the optimizer */
    int input;                    /* BACKWARD_DATA: the input whose gradient it makes; else -1 */
    int64_t flops;                /* estimates: backward data and weight as the forward */
    int64_t bytes;                /* read and written */
    int n_deps;
    const int *deps;              /* earlier steps it waits for */
} opsched_train_step;

typedef struct opsched_training opsched_training;

/* Builds the training iteration of g.  opts may be NULL (SGD, foreach,
 * cross-entropy).  g is borrowed and must outlive the result.  Errors:
 * OPSCHED_ERR_UNSUPPORTED for a graph without a float output to take the
 * loss of, OPSCHED_ERR_INVALID_ARG for bad options. */
opsched_status opsched_training_build(const opsched_graph *g, const opsched_training_options *opts,
                                      opsched_training **out);
void opsched_training_free(opsched_training *t);

int opsched_training_num_steps(const opsched_training *t);
const opsched_train_step *opsched_training_step(const opsched_training *t, int i);

typedef struct opsched_training_memory {
    int64_t weights;              /* parameters and buffers: WEIGHT tensors, float constants */
    int64_t parameters;           /* of them, trained */
    int64_t gradients;            /* one per parameter */
    int64_t optimizer_state;
    int64_t saved;                /* held for backward when the forward pass ends */
    int64_t peak;                 /* the most allocated at once, allocator rounding */
    int peak_step;                /* the step during which it is reached */
} opsched_training_memory;

/* The memory of one steady-state iteration (see the top of this file). */
opsched_status opsched_training_memory_get(const opsched_training *t,
                                           opsched_training_memory *out);

/* How FSDP (fully_shard, FULL_SHARD) lays one rank's memory out: every
 * parameter, its gradient and its optimizer state held as a 1/ranks shard;
 * a unit's parameters gathered whole (gather_scale bytes per stored byte:
 * 0.5 for a bf16 param_dtype, except units with keep_f32) from the
 * prefetch before the unit's first step in a pass to its last step, for
 * forward and, for units other than the root (unit 0) when
 * reshard_after_forward, again for backward; a gradient made whole in the
 * compute's type until its unit's backward ends (its reduce-scatter,
 * which reads an fp32 copy when the compute's type is lower), then its
 * fp32 shard; activations and their gradients activation_scale
 * bytes per fp32 byte (0.5 when computed in bf16).  Buffers (running
 * statistics) stay whole. */
typedef struct opsched_training_sharding {
    int ranks;
    const int *unit_of;           /* per tensor of the forward graph: its unit, -1 none */
    const unsigned char *keep_f32; /* per unit, may be NULL */
    int n_units;
    double gather_scale;
    double activation_scale;
    int reshard_after_forward;
} opsched_training_sharding;

/* The memory of one rank under sh (see opsched_training_sharding): the
 * same replay as opsched_training_memory_get, its counts per rank. */
opsched_status opsched_training_memory_sharded(const opsched_training *t,
                                               const opsched_training_sharding *sh,
                                               opsched_training_memory *out);

/* The caching allocator's block size for a request of n bytes: n rounded
 * up to a multiple of 512 (512 at least). */
int64_t opsched_training_block_bytes(int64_t n);

/* The training graph of g (src/training/autodiff.c): g's forward pass, the
 * loss of o->loss of g's first output against a new float INPUT "target"
 * of that output's shape (cross-entropy over the last axis against
 * probabilities, or mean squared error), and the backward pass, built
 * from ordinary operators so every backend runs it and measures it.  Its
 * outputs: "loss" first, then "grad/<name>" for every float WEIGHT of g,
 * in g's tensor order, each of its parameter's shape (BatchNorm's
 * running statistics are buffers: no gradient; its forward is in
 * training form, the batch's statistics).  Backward rules exist for 2-D
 * convolutions (grouped too), BatchNormalization, MaxPool, AveragePool,
 * MatMul, Gemm, Add, Sub, Mul, Div, Sqrt, Relu, Clip, Sigmoid,
 * Tanh, Gelu, Softmax and LogSoftmax (last axis), LayerNormalization,
 * ReduceSum/Mean, GlobalAveragePool, Expand, Concat, Slice, Gather (axis
 * 0), Where, Cast, Transpose and the views (docs/TRAINING.md); another operator on the way from a parameter
 * to the loss fails with OPSCHED_ERR_UNSUPPORTED naming it.
 * With o->step, the optimizer step follows, element-wise per parameter as
 * torch.optim computes it (the work of foreach and fused alike; fused runs
 * it in fewer launches): SGD with momentum 0.9, lr 0.01 and
 * o->weight_decay; AdamW with lr 1e-3, betas (0.9, 0.999), eps 1e-8 and
 * weight decay o->weight_decay (0.01 when 0), its bias corrections those of
 * step 1.  The optimizer state enters as INPUT tensors "state/momentum/<w>"
 * or "state/exp_avg/<w>" and "state/exp_avg_sq/<w>" after "target"; the
 * outputs add "step/<w>" (the updated parameter) and the updated state
 * ("step/momentum/<w>", "step/exp_avg/<w>", "step/exp_avg_sq/<w>").  *out is new. */
opsched_status opsched_training_graph(const opsched_graph *g, const opsched_training_options *o,
                                      opsched_graph **out);

/* The name a training graph's measurements are stored under, so they never
 * pass for the model's inference nor for another training set-up:
 * "<model>-train-<ce|mse>", then with o->step "-sgd" or "-adamw", "-fused"
 * for the fused implementation and "-wd<W>" for a weight decay (AdamW's
 * default of 0.01 is not written).  Writes at most n bytes; the length, or
 * -1 when it does not fit. */
int opsched_training_run_name(const char *model, const opsched_training_options *o, char *buf,
                              size_t n);
/* The inverse: 1 with the model's name in model (n bytes) and the options in
 * *o when name is such a name, else 0. */
int opsched_training_parse_run_name(const char *name, char *model, size_t n,
                                    opsched_training_options *o);

#ifdef __cplusplus
}
#endif

#endif /* OPSCHED_TRAINING_H */
