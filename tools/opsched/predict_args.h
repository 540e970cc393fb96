/*
 * predict_args.h - the options `opsched train-model` and `opsched predict`
 * share: which database, device and settings the models are of, and how
 * they are trained.
 */
#ifndef OPSCHED_PREDICT_ARGS_H
#define OPSCHED_PREDICT_ARGS_H

#include "tool.h"

typedef struct predict_args {
    const char *db;            /* --db, or NULL: shipped data named by --device */
    const char *device;
    opsched_predictor_options po;
    int quiet;                 /* 1: no progress messages */
    char db_path[1024];        /* resolved */
} predict_args;

void predict_args_init(predict_args *a);

/* Applies option argv[*i] (and its value, advancing *i).  Returns 1 when
 * consumed, 0 when not one of these options, -1 after printing a usage
 * error (rc set). */
int predict_args_take(predict_args *a, const char *cmd, int argc, char **argv, int *i, int *rc);

/* The help text of these options. */
extern const char *predict_args_help;

/* Resolves the database (db or shipped data) into a->db_path and installs
 * the progress log on ctx.  Returns TOOL_EXIT_OK or the exit code. */
int predict_args_finish(predict_args *a, opsched_ctx *ctx, const char *cmd);

/* Prints a model's line of the training report. */
void predict_print_models(FILE *f, const opsched_predictor *p);

#endif /* OPSCHED_PREDICT_ARGS_H */
