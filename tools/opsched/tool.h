/*
 * tool.h - what the subcommands of the opsched tool share.  The tool uses
 * only libopsched's public API.
 */
#ifndef OPSCHED_TOOL_H
#define OPSCHED_TOOL_H

#include <signal.h>
#include <stdio.h>
#include <stdint.h>

#include "opsched/opsched.h"

/* Exit codes: 0 success, 1 a failure while doing the work, 2 a usage error. */
enum { TOOL_EXIT_OK = 0, TOOL_EXIT_FAIL = 1, TOOL_EXIT_USAGE = 2 };

typedef enum tool_format { TOOL_FMT_TABLE, TOOL_FMT_CSV, TOOL_FMT_JSON } tool_format;

/* How to obtain a graph: a zoo name or an .onnx path, with size overrides. */
typedef struct tool_model_opts {
    const char *model;
    int64_t batch;          /* 0: the model's own */
    int64_t height, width;  /* 0: the model's own */
    const char *shapes;     /* ONNX: "name:1x3x224x224,..." */
    int fold_bn;            /* zoo: deployed form (BN folded) */
    int load_weights;       /* ONNX: keep initializer payloads */
    const opsched_onnx_value *values; /* ONNX: values given for graph inputs */
    int n_values;
    int no_rewrite;         /* ONNX: keep operator patterns as written (--no-fuse) */
    int keep_attention;     /* ONNX: attention as written (--ablate attention) */
    int keep_projections;   /* ONNX: projections not merged (--ablate projections) */
    int keep_scales;        /* ONNX: layer scales kept Muls (--ablate layer-scale) */
    /* Non-NULL: the training graph of the model (opsched_training_graph),
     * an ONNX model loaded with its attention unfused */
    const opsched_training_options *train;
} tool_model_opts;

typedef struct tool_cmd {
    const char *name;
    const char *summary;
    int (*run)(opsched_ctx *ctx, int argc, char **argv);
} tool_cmd;

int cmd_models(opsched_ctx *ctx, int argc, char **argv);
int cmd_info(opsched_ctx *ctx, int argc, char **argv);
int cmd_devices(opsched_ctx *ctx, int argc, char **argv);
int cmd_bench(opsched_ctx *ctx, int argc, char **argv);
int cmd_sweep(opsched_ctx *ctx, int argc, char **argv);
int cmd_merge(opsched_ctx *ctx, int argc, char **argv);
int cmd_export(opsched_ctx *ctx, int argc, char **argv);
int cmd_status(opsched_ctx *ctx, int argc, char **argv);
int cmd_profile(opsched_ctx *ctx, int argc, char **argv);
int cmd_validate(opsched_ctx *ctx, int argc, char **argv);
/* opsched sweep --adaptive (cmd_sweep_adaptive.c). */
int tool_sweep_adaptive(opsched_ctx *ctx, int argc, char **argv);
int cmd_train_model(opsched_ctx *ctx, int argc, char **argv);
int cmd_predict(opsched_ctx *ctx, int argc, char **argv);
int cmd_plan(opsched_ctx *ctx, int argc, char **argv);
int cmd_schedule(opsched_ctx *ctx, int argc, char **argv);
int cmd_run(opsched_ctx *ctx, int argc, char **argv);
int cmd_commbench(opsched_ctx *ctx, int argc, char **argv);

/* Measurement settings shared by bench, sweep, profile, run and schedule
 * --cost measure (the options: args.h). */
typedef struct tool_measure_args {
    opsched_measure_options opts;
    const char *algo;       /* policy as given: heuristic, find, all, or a name */
    const char *backend;    /* NULL: cuda if present, else cpu */
    int device;             /* index within the backend */
    int device_set;         /* --device given */
    int math_auto;          /* 1: opts.plan.math chosen by backend (tool_measure_resolve) */
    int layout_auto;        /* 1: opts.plan.layout chosen by backend */
    int math_set, layout_set; /* given on the command line (auto included) */
    int ci_set;               /* --ci given: --iters and --min-ms keep it */
} tool_measure_args;

void tool_measure_args_init(tool_measure_args *a);
/* The backend a device is opened on by default: cuda when a GPU is
 * present, else cpu. */
const char *tool_default_backend(opsched_ctx *ctx);
/* Chooses the backend when not given, and "auto" math and layout by it:
 * tf32 and nhwc on a GPU, fp32 and nchw on the CPU. */
void tool_measure_resolve(opsched_ctx *ctx, tool_measure_args *a);
/* Opens the device the arguments name (resolves them first). */
opsched_status tool_open_device(opsched_ctx *ctx, tool_measure_args *a, opsched_device **out);

/* Measurement options recorded as given (checked on scratch), to apply
 * over settings known later (a profile stage's, a sweep spec's). */
#define TOOL_MAX_RECORDED 32

/* The help of --ablate, one text for every command that takes it. */
#define TOOL_ABLATE_HELP                                                                           \
    "turn parts of the planner off, to measure what each\nbuys: depthwise (the own depthwise "     \
    "and grouped\nkernel), epilogue (the timed epilogue choice), engines\n(the timed engine "      \
    "choice of grouped\nconvolutions), reductions (column and row reductions), chains\n"           \
    "(element-wise chains as one launch), residual\n(residual Adds inside convolutions), "         \
    "layout\n(the layout per tensor), se (the squeeze-and-excitation\ngate as one launch), "       \
    "bias (a MatMul's bias Add or a Gemm's C in its\nlaunch), attention (attention as one node), " \
    "projections (sibling\nprojections as one product), tensor-cores (fp32,\nfp16 attention on "   \
    "tensor cores), cudnn-attention\n(cuDNN's fused attention), conv-gemm (1x1\nconvolutions "     \
    "as cuBLASLt products), movement\n(runs of Reshapes, Transposes and Slices as one\n"           \
    "gather), se-split (large gates as two launches),\ngemm-tuning (cuBLASLt's algorithms "        \
    "timed per\nproduct), se-mul (a gate's multiply in its launch),\nim2col (grouped "             \
    "convolutions as "                                                                             \
    "columns and one\nbatched product), norm-act (a batch normalisation's\nactivation in its "     \
    "launch), layer-scale (a\nproduct's per-column scale folded into its weights),\n"              \
    "conv-norm (a depthwise convolution's LayerNorm in\nits launch), act-prologue (an "            \
    "activation applied\nby the depthwise convolution that reads it),\ngate-product (a gated "     \
    "map's multiply folded into\nthe 1x1 product that reads it), concat-gather\n(movement runs "   \
    "gathering from a Concat's inputs), matmul-graph\n(a product, its bias and "                   \
    "activation as one\ncuDNN graph), pool-vec (NHWC pooling four\nchannels a thread), "           \
    "norm-concat (a batch\nnormalisation reading its Concat's inputs), pdl\n(own kernels "         \
    "launched programmatically, each\nstarting as the one ahead of it ends), igemm\n(grouped "     \
    "convolutions as an implicit GEMM on\nthe tensor cores);\ncomma list"
struct tool_opt;
typedef struct tool_measure_record {
    tool_measure_args scratch;
    const char *const *refused;    /* NULL-ended names the command refuses */
    const struct tool_opt *opts[TOOL_MAX_RECORDED];
    const char *values[TOOL_MAX_RECORDED];
    int n;
} tool_measure_record;
int tool_measure_record_opt(void *dest, const char *cmd, const struct tool_opt *o,
                            const char *value);
void tool_measure_replay(const tool_measure_record *r, const char *cmd, tool_measure_args *a);

/* Installs the SIGINT/SIGTERM handler of long commands: the first signal
 * prints message and sets the returned flag (finish what is in flight), a
 * second one ends the process.  tool_stop_restore puts the old ones back. */
volatile sig_atomic_t *tool_stop_install(const char *message);
void tool_stop_restore(void);

/* Prints "opsched: <what>: <library message>" to stderr; returns TOOL_EXIT_FAIL. */
int tool_fail(opsched_ctx *ctx, opsched_status st, const char *what);

/* TOOL_EXIT_OK unless the output path out (NULL: none) names the same file
 * as one of the n inputs (NULL entries skipped): same device and inode,
 * after symbolic links.  Then a usage error naming both, so that writing
 * the output can never destroy what the command reads. */
int tool_check_output(const char *cmd, const char *out, const char *const *inputs, int n);
/* Prints "opsched <cmd>: <msg>" and a hint to stderr; returns TOOL_EXIT_USAGE. */
int tool_usage_error(const char *cmd, const char *fmt, ...);

int tool_parse_format(const char *s, tool_format *out);
/* "224" or "224x320" */
int tool_parse_size(const char *s, int64_t *h, int64_t *w);
int tool_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* The name a model file's runs are stored under: the file stem, with
 * anything but letters, digits, '-', '_' and '.' replaced, so it can name
 * files. */
void tool_model_run_name(const char *path, char *out, size_t n);

/* 1 when model names an ONNX file rather than a zoo model. */
int tool_is_onnx_path(const char *model);
/* Loads a zoo model or an ONNX file (a name ending in .onnx or naming an
 * existing file).  Errors are left on ctx. */
opsched_status tool_load_model(opsched_ctx *ctx, const tool_model_opts *o, opsched_graph **out);

/* The database a prediction command reads (predict, train-model,
 * validate, schedule --cost predict): db when given, else the shipped data
 * set named by data (--data h100: data/h100, built into the cache on first
 * use; matched case-insensitively).  path gets the file.  On failure the
 * problem is printed and TOOL_EXIT_USAGE (no --db and no such data set)
 * or TOOL_EXIT_FAIL (bad data files) is returned; TOOL_EXIT_OK otherwise. */
int tool_db_or_shipped(opsched_ctx *ctx, const char *cmd, const char *db, const char *data,
                       char *path, size_t size);

/* Lists on stderr what the database at path holds: its ok measurements
 * by device, math, layout and algorithm policy ("opsched <cmd>: ..."). */
void tool_print_holdings(opsched_ctx *ctx, const char *cmd, const char *path);

/* The layout the database holds most measurements of for target (NULL:
 * the only device) under math, algo and the hot cache: what "--layout
 * auto" means to prediction.  NCHW when it holds none. */
opsched_layout tool_data_layout(opsched_ctx *ctx, const char *db_path, const char *target,
                                opsched_math math, const char *algo);

/* Prints a failure to load model, as tool_fail does, and for a name that
 * is neither a zoo network nor a file, the nearest zoo name. */
int tool_model_fail(opsched_ctx *ctx, opsched_status st, const char *model);
/* Prints "did you mean" with the zoo name nearest to name, if one is close. */
void tool_suggest_model(const char *name);

/* 1234567 -> "1.23M" (SI, 3 significant digits). */
const char *tool_human(double v, char *buf, size_t n);

#endif /* OPSCHED_TOOL_H */
