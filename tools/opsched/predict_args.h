/*
 * predict_args.h - the options `opsched train-model` and `opsched predict`
 * share: which database, device and settings the models are of, and how
 * they are trained.
 */
#ifndef OPSCHED_PREDICT_ARGS_H
#define OPSCHED_PREDICT_ARGS_H

#include "args.h"

typedef struct predict_args {
    const char *db;     /* --db, or NULL: the shipped data set --data names */
    const char *data;   /* --data NAME */
    const char *target; /* --target: the device in the database (id or name) */
    opsched_predictor_options po;
    int layout_auto;    /* 1 (default): the layout the database holds for target */
    int quiet;          /* 1: no progress messages */
    char db_path[1024]; /* resolved */
} predict_args;

void predict_args_init(predict_args *a);

/* The prediction-data options (--db, --data, --target, --math, --layout,
 * --algo, --cache) and the training options (--folds, --rounds, --depth,
 * --eta, --threads, --quiet); dest is a predict_args. */
extern const tool_opt predict_data_optlist[];
extern const tool_opt predict_train_optlist[];
int predict_args_opt(void *dest, const char *cmd, const tool_opt *o, const char *value);

/* Resolves the database (db or shipped data) into a->db_path and the
 * "auto" layout, and installs the progress log on ctx.  Returns
 * TOOL_EXIT_OK or the exit code. */
int predict_args_finish(predict_args *a, opsched_ctx *ctx, const char *cmd);

/* Prints a model's line of the training report. */
void predict_print_models(FILE *f, const opsched_predictor *p);

#endif /* OPSCHED_PREDICT_ARGS_H */
