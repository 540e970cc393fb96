/*
 * opsched/predict.h - predicting what an operator and a whole network cost
 * on a device (latency, energy, peak memory) from the measurement database,
 * including configurations that were never measured.
 *
 * Sources, tried in order for each operator, per (device, math, layout,
 * algorithm policy, cache state):
 *   exact     a measurement of the same configuration (signature, and for a
 *             convolution whether the Relu after it ran fused) with the same
 *             settings; its error estimate is the measurement's CV;
 *   learned   gradient-boosted trees (XGBoost) over the operator's
 *             parameters and derived features (opsched_features), one model
 *             per operator family, predicting log latency; energy is that
 *             latency times a learned effective power; the error estimate is
 *             the model's k-fold cross-validated median absolute percentage
 *             error;
 *   roofline  max(FLOPs / peak FLOP rate, bytes / bandwidth) plus the
 *             per-node floor, from the device's calibration (opsched devices
 *             --calibrate), times how far the measured rows of the family
 *             (or, for a family without rows, of all families) run from
 *             it; the error estimate is that ratio's spread (80th
 *             percentile), leave-one-family-out for a family without rows;
 *             with no rows at all, the plain roofline and
 *             OPSCHED_ROOFLINE_ERROR;
 *   none      nothing to predict from: the values are NaN, never invented.
 * Nodes that run nothing (views, a Relu fused into the convolution before
 * it) have source "view" and cost 0.
 *
 * Models are trained from the database and saved next to it, in
 * "<db>.models/" (XGBoost JSON files plus one JSON metadata file per
 * device, math, layout, policy and cache); opening a predictor retrains
 * them when the measurements they were trained on changed (a fingerprint:
 * count, largest id and latest time of the rows) or the calibration did.
 * docs/PREDICT.md describes the method.
 *
 * A network's latency is composed from its layers, mirroring what the
 * executor runs: graph mode (one replayed CUDA graph) = scale x sum of
 * layers + per-launch gap x launches + a cost per GB of weights read (cold
 * in a network, cached when a layer is timed alone); eager mode the longer
 * of that and the host's time to enqueue the launches.  The terms are fitted
 * by least squares to the whole-network runs in the database (opsched
 * profile), and fall back to the calibration's launch costs.
 *
 * Ownership: a predictor borrows its context; results are owned by the
 * caller and freed with their *_free.  Not thread-safe: one per thread.
 */
#ifndef OPSCHED_PREDICT_H
#define OPSCHED_PREDICT_H

#include "opsched/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum opsched_pred_source {
    OPSCHED_SOURCE_NONE = 0,
    OPSCHED_SOURCE_VIEW,
    OPSCHED_SOURCE_EXACT,
    OPSCHED_SOURCE_LEARNED,
    OPSCHED_SOURCE_ROOFLINE,
    OPSCHED_SOURCE_COUNT
} opsched_pred_source;

/* "none", "view", "exact", "learned", "roofline". */
const char *opsched_pred_source_name(opsched_pred_source s);

/* The relative error stated for a roofline estimate (100%): a bound
 * from peaks says little about operators far from them. */
#define OPSCHED_ROOFLINE_ERROR 1.0
#define OPSCHED_ROOFLINE_MIN_ROWS 8

/* ---- operator families and features -------------------------------------- */

/* What one learned model covers; small families share a model. */
typedef enum opsched_op_family {
    OPSCHED_FAMILY_CONV = 0,   /* conv2d */
    OPSCHED_FAMILY_CONV_RELU,  /* conv2d with the following Relu fused in */
    OPSCHED_FAMILY_GEMM,       /* linear (Gemm) and matmul */
    OPSCHED_FAMILY_OTHER,      /* everything else, told apart by an op-kind feature */
    OPSCHED_FAMILY_COUNT
} opsched_op_family;

const char *opsched_op_family_name(opsched_op_family f); /* "conv", "conv+relu", ... */
/* The family of a configuration (op as in opsched_config_record). */
opsched_op_family opsched_op_family_of(const char *op, int fused_relu);

/* What the features need to know about the device.  NaN peaks (no
 * calibration) leave the roofline features NaN (missing to the model). */
typedef struct opsched_feature_device {
    int sm_count;              /* waves are counted against it; 0: unknown */
    double peak_flops;         /* FLOP/s */
    double bandwidth;          /* bytes/s */
    double node_floor_us;      /* the calibration's graph_node_us; NaN: none */
} opsched_feature_device;

#define OPSCHED_FEATURE_COUNT 43

/* The feature's name ("flops", "waves_128x128", ...); NULL out of range. */
const char *opsched_feature_name(int i);

/* The feature vector of a configuration, from its record and its signature
 * (parsed for what the record leaves out: both kernel sides, output size,
 * GEMM sizes).  In order:
 *   op kind (opsched_op_kind), fused Relu (0/1); the operator's parameters:
 *   batch, in and out channels, kernel height and width, stride, padding,
 *   groups, input height and width, output height and width; FLOPs, bytes,
 *   log2 of both, arithmetic intensity (FLOPs/byte); log2 of the roofline
 *   time in us and log2 of the intensity over the ridge point (peak/bandwidth:
 *   which side of the roofline the op sits); the GEMM view: M, N, K and the
 *   number of GEMMs (conv: M = N*Ho*Wo, N = Cout/groups, K = Cin/groups*kh*kw,
 *   one per group; linear and matmul their own); output tiles, waves
 *   (ceil(tiles / SMs)) and the tail wave's occupied share for tiles of
 *   64x64, 128x128 and 128x256; element-wise view: output elements, blocks
 *   of 1024 elements and their waves; input elements; whether a Conv or
 *   Gemm has a bias; bytes of the first input, of the second (weights)
 *   and of the output; the power of two (up to 2^6) in the input's H x W
 *   (whether its spatial plane splits into vector-wide rows).
 * Features that do not apply are NaN.  OPSCHED_ERR_INVALID_ARG when the
 * signature cannot be read. */
opsched_status opsched_features(opsched_ctx *ctx, const opsched_config_record *rec, int fused_relu,
                                const opsched_feature_device *dev,
                                double out[OPSCHED_FEATURE_COUNT]);

/* ---- exclusions (validation) ---------------------------------------------- */

/* A set of configurations left out of exact lookups and of training: for
 * leave-one-model-out validation, every signature of a model at the batch
 * sizes and input sizes it is validated at.  Models trained without them
 * are cached under a name of their own (the exclusion's name and a hash of
 * its signatures). */
typedef struct opsched_exclusion opsched_exclusion;

/* name: a short label for the cached models (e.g. the model's name). */
opsched_status opsched_exclusion_create(opsched_ctx *ctx, const char *name,
                                        opsched_exclusion **out);
void opsched_exclusion_free(opsched_exclusion *x);
/* Adds the signature of every node of g (views included). */
opsched_status opsched_exclusion_add_graph(opsched_exclusion *x, const opsched_graph *g);
/* Adds a zoo model's signatures at each batch size x input size (size 0:
 * the model's default). */
opsched_status opsched_exclusion_add_zoo(opsched_exclusion *x, const char *model,
                                         const int64_t *batches, int n_batches,
                                         const int64_t *sizes, int n_sizes);
/* Distinct signatures held. */
int opsched_exclusion_count(const opsched_exclusion *x);

/* ---- the predictor ------------------------------------------------------------ */

typedef struct opsched_predictor opsched_predictor;

/* Builds the graph of a network run for the composition fit (the network
 * that was profiled): *out owned by the caller.  OPSCHED_ERR_NOT_FOUND
 * skips the run. */
typedef opsched_status (*opsched_network_loader_fn)(opsched_ctx *ctx,
                                                    const opsched_network_run_row *run,
                                                    void *user, opsched_graph **out);

typedef struct opsched_predictor_options {
    const char *device;            /* id or part of the name; NULL: the only measured one */
    opsched_math math;             /* default tf32 */
    opsched_layout layout;         /* default NCHW */
    const char *algo_policy;       /* default "heuristic" */
    opsched_cache_state cache;     /* default hot (what a network's layers see) */
    int folds;                     /* cross-validation folds (default 5) */
    int rounds;                    /* boosting rounds (default 600) */
    int max_depth;                 /* tree depth (default 8) */
    double eta;                    /* learning rate (default 0.05) */
    int threads;                   /* XGBoost threads (default 0: one below 1000 rows, else all) */
    int train;                     /* 1 (default): train when the models are missing or stale;
                                    * 0: use current saved models only */
    int retrain;                   /* 1: train even when the saved models are current */
    const char *models_dir;        /* NULL: "<db>.models" */
    const opsched_exclusion *exclude;  /* borrowed; NULL: none */
    /* Network runs of this model are left out of the composition fit
     * (leave-one-model-out; also for judging a model whose own layers are
     * measured without fitting on its end to end).  NULL: none. */
    const char *exclude_model_runs;
    /* Builds a network run's graph; NULL: the zoo by the run's model name
     * (torchvision form, BatchNormalization not folded, as opsched profile
     * runs it by default); runs of other models are skipped. */
    opsched_network_loader_fn loader;
    void *loader_user;
} opsched_predictor_options;

void opsched_predictor_options_default(opsched_predictor_options *o);

/* Opens the database at db_path (which must exist), finds the device,
 * reads the calibration and the exact measurements, and loads the saved
 * models, training them first when missing or stale (said through the
 * context's log at INFO level) and saving them (a models directory that
 * cannot be written is a warning: the models live in memory).  A device
 * without enough measurements has no learned models: not a failure. */
opsched_status opsched_predictor_open(opsched_ctx *ctx, const char *db_path,
                                      const opsched_predictor_options *opts,
                                      opsched_predictor **out);
void opsched_predictor_free(opsched_predictor *p);

/* Out-of-fold errors: absolute percentage errors of k-fold CV, as
 * fractions (0.05 = 5%). */
typedef struct opsched_cv_error {
    int64_t n;                     /* rows predicted out of fold (0: none) */
    double median_ape, p90_ape, max_ape;
    double within10;               /* share within +-10% */
} opsched_cv_error;

/* One learned model: a latency model of a group of families, or the
 * effective-power model ("power"). */
typedef struct opsched_model_info {
    char name[24];                 /* "conv", "conv+relu", "gemm", "other" or merged:
                                    * "conv+conv+relu"; "power" */
    char ops[192];                 /* operators in its rows, with counts: "conv2d:120,..." */
    int64_t rows;
    int trained;                   /* 0: too few rows (its families fall back) */
    int folds;
    opsched_cv_error cv;           /* the model, out of fold */
    opsched_cv_error baseline;     /* FLOPs-only log-log line per family, out of fold;
                                    * for "power": energy = cv of latency x power */
    char file[160];                /* XGBoost JSON file in the models directory */
} opsched_model_info;

typedef struct opsched_predictor_info {
    opsched_device_row device;
    char math[8], layout[8], algo_policy[48], cache[8];
    int64_t rows;                  /* distinct configurations measured (training rows) */
    int64_t energy_rows;           /* of them, with energy */
    int64_t excluded_rows;         /* left out by the exclusion */
    int64_t host_rows;             /* distinct configurations with a host enqueue time
                                    * (";mode=host" rows, opsched profile): eager mode's
                                    * exact host source */
    int has_calibration;
    opsched_calibration calibration;
    opsched_dataset_fingerprint fingerprint;
    int trained;                   /* 1: open trained the models */
    char train_reason[96];         /* why ("no saved models", "the data changed", ...) */
    double train_seconds;
    char models_dir[512];
    char metadata_file[640];
    /* The roofline calibrated on the measured rows (docs/PREDICT.md): per
     * family, the median of measured / roofline time (NaN with fewer than
     * OPSCHED_ROOFLINE_MIN_ROWS rows) and the 80th percentile of its
     * rows' relative error around it; for a family without rows, the
     * median over all rows and the error of predicting each family's rows
     * from the others' (leave one family out).  NaN scales: no rows, the
     * plain roofline with OPSCHED_ROOFLINE_ERROR. */
    double roofline_scale[OPSCHED_FAMILY_COUNT], roofline_error[OPSCHED_FAMILY_COUNT];
    double roofline_scale_all, roofline_error_unseen;
} opsched_predictor_info;

opsched_status opsched_predictor_info_get(const opsched_predictor *p, opsched_predictor_info *out);
int opsched_predictor_num_models(const opsched_predictor *p);
/* Borrowed; NULL out of range. */
const opsched_model_info *opsched_predictor_model(const opsched_predictor *p, int i);

/* ---- operators ------------------------------------------------------------------ */

typedef struct opsched_op_prediction {
    opsched_pred_source source;
    double ms;                     /* per launch; NaN for none */
    double error;                  /* relative (0.05 = 5%); NaN for none */
    opsched_pred_source energy_source;
    double energy_j;               /* per launch; NaN when nothing predicts it */
    double energy_error;
    int64_t measurement_id;        /* exact: the measurement used; else 0 */
    opsched_op_family family;
    char model[24];                /* learned: the model's name */
} opsched_op_prediction;

/* Predicts one configuration (fused_relu: a convolution with the Relu after
 * it fused in). */
opsched_status opsched_predict_config(opsched_predictor *p, const opsched_config_record *rec,
                                      int fused_relu, opsched_op_prediction *out);
/* Predicts node `node` of g (its configuration as the node is: no view or
 * fusion rules; see opsched_predict_network). */
opsched_status opsched_predict_node(opsched_predictor *p, const opsched_graph *g, int node,
                                    int fused_relu, opsched_op_prediction *out);

/* ---- networks ---------------------------------------------------------------------- */

typedef enum opsched_predict_mode {
    OPSCHED_PREDICT_GRAPH = 0,     /* one replayed CUDA graph per inference */
    OPSCHED_PREDICT_EAGER          /* launches enqueued by the host */
} opsched_predict_mode;

const char *opsched_predict_mode_name(opsched_predict_mode m); /* "graph", "eager" */

/* How layers compose into a network's time and energy, per mode:
 *   device = scale x sum of layers + launch_us x launches
 *            + weight_ms_per_gb x GB of weights the layers read
 *   graph mode: the device's time; eager mode: the longer of the device's
 *   and the host's: the sum over launches of the layer's host time, which
 *   is host_scale x its measured host enqueue time when its configuration
 *   has one under the predictor's settings (";mode=host" rows of opsched
 *   profile, by signature and fusion: predicting a stored network run, the
 *   median of the rows measured with it when it has any; else of the rows
 *   measured profiling this network - the graph's name, a run's model -
 *   when it has any; else of all the configuration's rows), else host_us of its
 *   family.  Without host rows in the database host_scale is 0 and every
 *   launch costs its family's host_us. */
typedef struct opsched_composition {
    opsched_predict_mode mode;
    char source[16];               /* "fit", "calibration" or "none" (plain sum) */
    int runs;                      /* network runs the device terms were fitted to */
    int runs_exact;                /* runs whose layers are all exact */
    double scale;                  /* multiplies the sum of layers */
    double launch_us;              /* per launch */
    double fused_launch_us;        /* more per launch of a convolution with its Relu fused
                                    * (cuDNN's runtime-fused engines) */
    double weight_ms_per_gb;       /* per GB of weights the layers read (cold in a network,
                                    * cached when a layer is timed alone) */
    double rms_rel;                /* relative residual over every run (NaN: no fit) */
    double host_us[OPSCHED_FAMILY_COUNT]; /* eager: host time per launch, by family, of a
                                    * layer without a host measurement */
    double host_scale;             /* eager: multiplies a layer's measured host time (";mode=host"
                                    * row of its configuration); 0 when the database has none */
    int host_runs;                 /* runs the host costs were fitted to: with host rows,
                                    * the runs the host bounds (their latency); without,
                                    * the runs with an enqueue time */
    int host_runs_measured;        /* of them, runs with a layer's host time measured */
    double host_rms_rel;
    char energy_source[16];        /* "fit", "calibration", "none" */
    int energy_runs;
    double energy_scale;           /* multiplies the sum of layer energies */
    double gap_power_w;            /* power outside the layers: (time - sum) x this */
    double energy_rms_rel;
} opsched_composition;

/* The composition of a mode: fitted at first use (every timed network run
 * of this device and settings in the database, but the excluded model's).
 * *out is filled. */
opsched_status opsched_predictor_composition(opsched_predictor *p, opsched_predict_mode mode,
                                             opsched_composition *out);

typedef struct opsched_predict_options {
    opsched_predict_mode mode;     /* default graph */
    int fuse;                      /* a Conv whose only reader is a Relu is one fused
                                    * layer (the executor's rule; default 1) */
} opsched_predict_options;

void opsched_predict_options_default(opsched_predict_options *o);

/* Which host rows a layer's measured host time is the median of. */
enum {
    OPSCHED_HOST_ROWS_CONFIG = 1,  /* every row of its configuration */
    OPSCHED_HOST_ROWS_MODEL = 2,   /* the rows measured profiling this network */
    OPSCHED_HOST_ROWS_RUN = 3      /* the rows measured with the network run predicted
                                    * (opsched_predict_network_run): same host, same time */
};

typedef struct opsched_layer_prediction {
    int node;
    int fused_relu;                /* 1: this layer runs the Relu after it too */
    int fused_into;                /* a fused Relu: the layer running it; else -1 */
    int launches;                  /* 1, or 0 for what runs nothing */
    int64_t flops;                 /* the layer's, with a fused Relu's */
    int64_t weight_bytes;          /* weights it reads, in the math mode's type */
    opsched_op_prediction p;
    /* Eager mode: the host's time to enqueue it (ms; host_scale x the
     * measurement or the host model's prediction, else its family's
     * host_us); 0 in graph mode and for what runs nothing. */
    double host_ms;
    int host_measured;             /* 0: not measured (host_learned, else its family's
                                    * cost); else it rests on ";mode=host" rows:
                                    * OPSCHED_HOST_ROWS_* (which rows) */
    int host_learned;              /* 1: host_scale x the host model's prediction (no
                                    * host row of its configuration) */
    int64_t host_measurement_id;   /* that measurement (the median row); else 0 */
    /* The layer's share of the composed device time: scale x p.ms + the
     * gap of a launch (+ a fused launch's) + the weight term of its
     * weights; graph mode's total is the sum of these (what a sequential
     * schedule's predicted cost sums, stage by stage).  0 for what runs
     * nothing, NaN without a prediction. */
    double composed_ms;
} opsched_layer_prediction;

typedef struct opsched_network_prediction {
    opsched_predict_mode mode;
    int n_layers;                  /* = graph nodes */
    opsched_layer_prediction *layers; /* owned by the result */
    int launches;
    int fused_launches;            /* of them, convolutions with their Relu fused */
    /* GB of weights the composition's weight term counts: of the layers
     * whose weights fit in the device's L2 (a layer timed alone finds only
     * those in the cache). */
    double composed_weight_gb;
    int n_by_source[OPSCHED_SOURCE_COUNT];
    double layer_sum_ms;           /* sum of layers; NaN when any layer has none */
    double total_ms;               /* composed; NaN when any layer has none */
    /* Launches without a time prediction (no exact row, no learned model,
     * no calibration), and the composition over the others: total_ms when
     * every launch has one, else a partial answer (its coverage
     * 1 - launches_unpredicted / launches). */
    int launches_unpredicted;
    double partial_ms;
    double total_error;            /* relative */
    double layer_energy_j;         /* NaN when any layer's energy is unknown */
    double total_energy_j;
    double energy_error;
    /* Shares resting on exact measurements. */
    double coverage_time;          /* of the layer sum */
    double coverage_flops;
    /* Eager mode: the host's time per inference (sum of the layers'
     * host_ms) and the share of it resting on host measurements; NaN in
     * graph mode. */
    double host_ms;
    double coverage_host;
    /* The share of it resting on rows measured with the network run
     * predicted (OPSCHED_HOST_ROWS_RUN); NaN in graph mode. */
    double coverage_host_run;
    /* Peak memory: activations of a sequential run (views aliased) plus
     * weights; workspaces are not included. */
    int64_t peak_activation_bytes, weight_bytes, peak_memory_bytes;
    int64_t flops;
    opsched_composition composition;
} opsched_network_prediction;

/* Predicts g: each layer by opsched_predict_node (views and fused Relus
 * cost nothing), then composed.  *out owned by the caller. */
opsched_status opsched_predict_network(opsched_predictor *p, const opsched_graph *g,
                                       const opsched_predict_options *opts,
                                       opsched_network_prediction **out);
void opsched_network_prediction_free(opsched_network_prediction *r);

/* Predicts a stored network run (validation): its graph from the
 * predictor's loader, mode graph for "graph" rows and eager for "free"
 * rows, fuse on.  OPSCHED_ERR_NOT_FOUND when the loader cannot build it,
 * OPSCHED_ERR_INVALID_ARG for "layered" rows. */
opsched_status opsched_predict_network_run(opsched_predictor *p,
                                           const opsched_network_run_row *run,
                                           opsched_network_prediction **out);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_PREDICT_H */
