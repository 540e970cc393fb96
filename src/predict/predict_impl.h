/*
 * predict_impl.h - what the files of src/predict share: the parsed
 * signature, a string-keyed hash map, the XGBoost wrapper, model training
 * with cross-validation, the metadata file, and the predictor object.
 */
#ifndef OS_PREDICT_IMPL_H
#define OS_PREDICT_IMPL_H

#include <stdint.h>

#include "core/error.h"
#include "opsched/predict.h"

/* Bumped whenever opsched_features changes meaning: saved models of an
 * older version are stale. */
#define OS_FEATURE_VERSION 3
/* Relative margin by which a variant anchored in physics (roofline, base)
 * is preferred to the one with the lowest CV error: random folds do not
 * reward extrapolation, which networks outside the measured range need. */
#define OS_VARIANT_PREFERENCE 1.10
/* Version of the metadata file's layout (4: the host model). */
#define OS_MODEL_FORMAT 4

/* The smooth base every model starts from, per family:
 * target ~ beta . (1, ln(FLOPs + 1), ln(bytes + 1)). */
#define OS_BASE_TERMS 3
/* Where FLOPs and bytes sit in the feature vector (features.c checks). */
#define OS_F_FLOPS 14
#define OS_F_BYTES 15

/* Rows a family needs for a model of its own; smaller ones are merged. */
#define OS_FAMILY_MIN_ROWS 40
/* Rows any model needs at all (else its families fall back). */
#define OS_MODEL_MIN_ROWS 8
/* Rows of an operator kind the learned models must have seen before they
 * are trusted with it. */
#define OS_OP_MIN_ROWS 3
/* Training sets smaller than this train on one thread unless told. */
#define OS_XGB_PARALLEL_ROWS 1000
/* Seed of the fold assignment and of XGBoost. */
#define OS_CV_SEED 20261122u

/* ---- signatures ---------------------------------------------------------- */

#define OS_SIG_MAX_INPUTS 8

/* What opsched_node_signature wrote, read back. */
typedef struct os_sig {
    opsched_op_kind op;
    int n_inputs;                          /* all inputs, omitted ones included */
    char role[OS_SIG_MAX_INPUTS];          /* 'x', 'w', 'c', or '-' (omitted) */
    opsched_shape shape[OS_SIG_MAX_INPUTS];
    int elem_bytes[OS_SIG_MAX_INPUTS];
    int64_t in_elems_total;                /* over every present input */
    int64_t in_elems_max;
    int has_k, has_s, has_p, has_d;
    int64_t k[2], s[2], p[4], d[2], g;
    int ta, tb, ceil_mode;
} os_sig;

opsched_status os_sig_parse(opsched_ctx *ctx, const char *sig, os_sig *out);

/* ---- a map from strings to ints (open addressing, FNV-1a) ------------------ */

typedef struct os_map {
    char **keys;       /* owned; NULL: empty slot */
    int64_t *values;
    size_t cap, count;
} os_map;

uint64_t os_hash64(const char *s);
/* Index of key, or -1. */
int64_t os_map_get(const os_map *m, const char *key);
/* Sets key to value (copied key). */
opsched_status os_map_put(opsched_ctx *ctx, os_map *m, const char *key, int64_t value);
void os_map_free(os_map *m);

/* ---- XGBoost ------------------------------------------------------------------ */

typedef struct os_xgb_params {
    int rounds, max_depth, threads;
    double eta;
    unsigned seed;
} os_xgb_params;

/* Trains a regressor on n rows of OPSCHED_FEATURE_COUNT floats (NaN:
 * missing) and targets y; margin (NULL: none) is each row's starting
 * point, which the trees learn to correct.  *booster freed with
 * os_xgb_free. */
opsched_status os_xgb_train(opsched_ctx *ctx, const float *x, const float *margin, const float *y,
                            int64_t n, const os_xgb_params *prm, void **booster);
/* Predicts n rows (with their margins, as trained) into out. */
opsched_status os_xgb_predict(opsched_ctx *ctx, void *booster, const float *x,
                              const float *margin, int64_t n, float *out);
opsched_status os_xgb_save(opsched_ctx *ctx, void *booster, const char *path);
opsched_status os_xgb_load(opsched_ctx *ctx, const char *path, void **booster);
void os_xgb_free(void *booster);

/* ---- training ----------------------------------------------------------------- */

/* One distinct configuration (signature and fusion) with its latest
 * measurement under the predictor's settings. */
typedef struct os_entry {
    char *key;                      /* owned: "<signature>#<fused>" */
    char op[40];                    /* "conv2d", "conv2d+relu" */
    opsched_op_family family;
    int fused_relu;
    int64_t measurement_id;
    double ms, cv;
    int64_t energy_id;              /* latest with energy; 0: none */
    double energy_j;
    double flops;
    float f[OPSCHED_FEATURE_COUNT];
} os_entry;

/* What a model's trees start from (XGBoost's base_margin): nothing, a
 * least-squares line of the target on ln FLOPs and ln bytes per family,
 * or (latency models with a calibration) the log of the roofline time, so
 * the trees learn how far from the roofline an operator runs. */
typedef enum os_variant { OS_VARIANT_TREES = 0, OS_VARIANT_BASE, OS_VARIANT_ROOFLINE } os_variant;

const char *os_variant_name(os_variant v); /* "trees", "base", "roofline" */

/* A latency model of a group of families, or the power model. */
typedef struct os_model {
    opsched_model_info info;
    unsigned families;              /* bit per opsched_op_family */
    void *booster;                  /* NULL: not trained */
    double base_a[OPSCHED_FAMILY_COUNT], base_b[OPSCHED_FAMILY_COUNT]; /* log ms = a + b log flops */
    os_variant variant;             /* what the trees start from */
    double beta[OPSCHED_FAMILY_COUNT][OS_BASE_TERMS]; /* the trees' starting point */
} os_model;

/* A configuration with host rows, as the host model sees it. */
typedef struct os_host_cfg {
    int family;                     /* -1 when its features cannot be had */
    char op[40];                    /* "conv2d+relu" */
    double flops;
    float f[OPSCHED_FEATURE_COUNT];
} os_host_cfg;

/* A latency model per family at most, the power model and the host model. */
#define OS_MAX_MODELS (OPSCHED_FAMILY_COUNT + 2)

struct opsched_predictor {
    opsched_ctx *ctx;
    opsched_store *store;
    char *db_path;
    opsched_predictor_options o;
    char *device_name, *algo_policy, *models_dir, *exclude_model_runs;
    char math[8], layout[8], cache[8];
    opsched_predictor_info info;
    opsched_feature_device fdev;
    os_entry *entries;              /* distinct measured configurations */
    size_t n_entries, cap_entries;
    os_map index;                   /* key -> entry */
    os_map op_rows;                 /* "conv2d+relu" -> training rows */
    os_map host_index;              /* key -> index in host_ms / host_id (";mode=host" rows) */
    double *host_ms;                /* median host enqueue time of the configuration's rows, ms */
    int64_t *host_id;               /* the median row's measurement */
    size_t n_host;
    os_host_cfg *host_cfg;          /* n_host: what the host model learns of each */
    size_t cap_host_cfg;
    os_map host_own_index;          /* "<model>\x1f<key>" -> index in host_own_ms / host_own_id */
    double *host_own_ms;            /* median of the rows measured profiling that model, ms */
    int64_t *host_own_id;           /* the median row's measurement */
    size_t n_host_own;
    os_map host_run_index;          /* "<model>\x1f<run id>\x1f<key>" -> index in host_run_ms */
    double *host_run_ms;            /* median of the rows of that model measured in that run */
    int64_t *host_run_id;           /* the median row's measurement */
    size_t n_host_run;
    /* Per operator family, the median over its configurations of their
     * host times (host_ms): what a launch of a configuration never
     * measured costs the host; NaN for a family without host rows. */
    double host_family_ms[OPSCHED_FAMILY_COUNT];
    os_model models[OS_MAX_MODELS];
    int n_models;
    int family_model[OPSCHED_FAMILY_COUNT]; /* index in models, or -1 */
    int power_model;                /* index, or -1 */
    int host_model;                 /* index of the host model (log host ms), or -1 */
    double power_energy_ape;        /* median APE of energy = learned ms x learned power */
    double power_only_ape;          /* median APE of energy = measured ms x learned power */
    char tag[96];                   /* file-name part of the exclusion, or "" */
    uint64_t excl_hash;
    int64_t excl_count;
    int comp_done[2];
    opsched_composition comp[2];
};

/* Key of an entry: signature and fusion. */
void os_entry_key(const char *signature, int fused_relu, char *buf, size_t size);

/* Trains every model from p->entries (cross-validation, baselines, the
 * final fits) and fills p->models, family_model and power_model. */
opsched_status os_predict_train(opsched_predictor *p);
/* Saves the models and the metadata under p->models_dir (created). */
opsched_status os_predict_save(opsched_predictor *p);
/* Loads saved models when their metadata matches p (fingerprint,
 * calibration, exclusion, features); *current is 0 (with the reason) when
 * they are missing or stale. */
opsched_status os_predict_load(opsched_predictor *p, int *current, char *reason, size_t size);
/* The same from the metadata's text (len bytes): *current 1 when it
 * describes the data and its models were loaded, else 0 and why. */
opsched_status os_predict_read_meta(opsched_predictor *p, const char *text, size_t len,
                                    int *current, char *reason, size_t size);
/* The metadata file's path and the base of the model files. */
void os_predict_paths(const opsched_predictor *p, char *meta, size_t meta_size, char *base,
                      size_t base_size);

/* The host model's predictions (ms) of n feature rows, row i of family
 * fam[i], into out_ms; all NaN without a host model. */
opsched_status os_predict_host_learned(opsched_predictor *p, const int *fam, const float *x,
                                       int64_t n, double *out_ms);

/* Learned log-latency predictions of n feature rows of one family into
 * out (NaN when the family has no model). */
opsched_status os_predict_learned(opsched_predictor *p, opsched_op_family family, const float *x,
                                  int64_t n, double *out_ms);
/* A model's raw prediction (its target: log ms or log W) of n rows,
 * row i of family fam[i], base included. */
opsched_status os_model_predict(opsched_predictor *p, const os_model *m, const int *fam,
                                const float *x, int64_t n, float *out);

/* Predicts n configurations (fused[i]: with the Relu after it), the
 * learned ones in one XGBoost call per family.  features (NULL: not
 * wanted) gets each one's feature row, n x OPSCHED_FEATURE_COUNT, all NaN
 * where they cannot be had.  (predictor.c) */
opsched_status os_predict_many(opsched_predictor *p, const opsched_config_record *recs,
                               const int *fused, int n, opsched_op_prediction *out,
                               float *features);

/* The host enqueue time measured for a configuration (";mode=host" rows
 * under the predictor's settings) in network model: predicting a network
 * run that run_id measured (> 0), the median of the rows measured with it
 * (same run, same model: the host as it was then) when it has any; else
 * the median of the rows measured profiling that model when it has any;
 * else the median of all rows of the configuration.  Which of the three
 * (OPSCHED_HOST_ROWS_*) with *ms and *measurement_id (the median row)
 * set, 0 when none.  model may be NULL,
 * run_id 0.  (predictor.c) */
int os_predict_host_lookup(const opsched_predictor *p, const char *model, int64_t run_id,
                           const char *signature, int fused_relu, double *ms,
                           int64_t *measurement_id);

/* Absolute percentage errors -> summary. */
void os_cv_summarize(const double *ape, int64_t n, opsched_cv_error *out);

#endif /* OS_PREDICT_IMPL_H */
