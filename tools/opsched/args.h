/*
 * args.h - the one argument parser of the opsched tool's subcommands.
 *
 * A command describes its options as tables (tool_opt), grouped
 * (tool_optgroup) with the handler that applies them and the place they
 * go; groups shared by several commands (model, measurement,
 * prediction-data and output options) are defined once here.  The parser
 * runs getopt_long over them, so "--name=value", "--name value", short
 * "-o FILE" and "-h" all work, collects the positional arguments, prints
 * the --help text from the same tables, and turns an unknown option into
 * a usage error that names it and suggests the nearest option of the
 * command.
 */
#ifndef OPSCHED_TOOL_ARGS_H
#define OPSCHED_TOOL_ARGS_H

#include "tool.h"

/* One option.  A table ends with an entry whose name is NULL. */
typedef struct tool_opt {
    const char *name;  /* long name without "--" */
    int short_name;    /* 'o' for -o, or 0 */
    const char *value; /* the value's placeholder in the help ("N"); NULL: takes none */
    const char *help;  /* lines separated by '\n'; NULL: not in the help (an
                        * epilog lists it) */
    int id;            /* for the group's handler */
} tool_opt;

/* Applies option o (value NULL for a switch) to dest.  Returns
 * TOOL_EXIT_OK, or the exit code after printing the problem. */
typedef int (*tool_opt_handler)(void *dest, const char *cmd, const tool_opt *o, const char *value);

typedef struct tool_optgroup {
    const char *title; /* heading in the help ("model options"); NULL: none */
    const tool_opt *opts;
    tool_opt_handler handle;
    void *dest;
} tool_optgroup;

typedef struct tool_cli {
    const char *cmd;      /* "info" */
    const char *usage;    /* usage lines and description, printed before the options */
    void (*epilog)(void); /* prints more help after the options; NULL: none */
    const tool_optgroup *groups;
    int n_groups;
    int max_pos;          /* positional arguments allowed (at most 64) */
    const char *pos_what; /* what they are, for "one X at a time" */
} tool_cli;

/* tool_args_parse's result when --help was printed (exit 0). */
#define TOOL_ARGS_HELP (-1)

/* Parses argv (argv[0] is the command's name) against the groups;
 * positional arguments go to pos[] (*n_pos of them).  Returns
 * TOOL_EXIT_OK, TOOL_ARGS_HELP, or TOOL_EXIT_USAGE after printing why. */
int tool_args_parse(const tool_cli *cli, int argc, char **argv, const char **pos, int *n_pos);

/* Prints the --help text of cli. */
void tool_args_help(const tool_cli *cli);

/* The option of the groups nearest to name (edit distance), or NULL when
 * none is close. */
const char *tool_args_suggest(const tool_optgroup *groups, int n_groups, const char *name);

/* Nearest of a list of words; NULL when none is close. */
const char *tool_nearest_word(const char *word, const char *const *words, int n);

/* Prints root as JSON on stdout and frees it; NULL prints nothing.
 * Returns TOOL_EXIT_OK, or TOOL_EXIT_FAIL when out of memory. */
struct cJSON;
int tool_print_json(struct cJSON *root);

/* ---- shared groups ------------------------------------------------------- */

/* Model options: --batch N, --input-size H[xW], --shapes SPEC, --bn
 * fold|keep; dest is a tool_model_opts. */
extern const tool_opt tool_model_optlist[];
int tool_model_opt(void *dest, const char *cmd, const tool_opt *o, const char *value);

/* Training options (info, profile, run): --train, --optimizer,
 * --optimizer-impl, --loss, --weight-decay; dest is a tool_train_opts. */
typedef struct tool_train_opts {
    int on;
    int optimizer_set; /* --optimizer, --optimizer-impl or --weight-decay given */
    opsched_training_options o;
} tool_train_opts;
/* For profile, run and predict: the model options' training graph when
 * --train is on (with the optimizer step when --optimizer,
 * --optimizer-impl or --weight-decay is given); a usage error, returned,
 * for training options without --train; TOOL_EXIT_OK otherwise. */
int tool_train_apply(const char *cmd, const tool_train_opts *t, tool_model_opts *mo);
extern const tool_opt tool_train_optlist[];
int tool_train_opt(void *dest, const char *cmd, const tool_opt *o, const char *value);

/* Measurement options (bench, sweep, profile); dest is a
 * tool_measure_args. */
extern const tool_opt tool_measure_optlist[];
int tool_measure_opt(void *dest, const char *cmd, const tool_opt *o, const char *value);

/* Output options: --format table|csv|json; dest is a tool_format. */
extern const tool_opt tool_format_optlist[];
int tool_format_opt(void *dest, const char *cmd, const tool_opt *o, const char *value);

/* Shared value parsers: each prints a usage error naming flag and returns
 * TOOL_EXIT_USAGE, or TOOL_EXIT_OK. */
int tool_arg_math(const char *cmd, const char *flag, const char *v, opsched_math *out,
                  int *is_auto);
int tool_arg_layout(const char *cmd, const char *flag, const char *v, opsched_layout *out,
                    int *is_auto);
int tool_arg_bn(const char *cmd, const char *flag, const char *v, int *fold);
/* A comma list of planner parts to turn off (opsched_ablation_parse). */
int tool_arg_ablate(const char *cmd, const char *flag, const char *v, unsigned *out);
int tool_arg_on_off(const char *cmd, const char *flag, const char *v, int *out);
/* One input size: H or HxW (a list or range is refused, naming the flag). */
int tool_arg_size(const char *cmd, const char *flag, const char *v, int64_t *h, int64_t *w);
/* Input sizes: H, HxW, a comma list of them, or a range A:B:S (square). */
int tool_arg_sizes(const char *cmd, const char *flag, const char *v, int64_t *h, int64_t *w,
                   int max, int *n);

#endif /* OPSCHED_TOOL_ARGS_H */
