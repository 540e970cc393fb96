/*
 * profile_report.h - what `opsched profile` makes of one profiled (batch,
 * size): CSV rows, the terminal summary with its warnings, and the rows of
 * the measurement database.  Shared by cmd_profile.c and profile_report.c.
 */
#ifndef OPSCHED_PROFILE_REPORT_H
#define OPSCHED_PROFILE_REPORT_H

#include <stdio.h>

#include "tool.h"

/* One (batch, size) just profiled, with what it was profiled under. */
typedef struct profile_item {
    const char *model;
    const char *algo_policy;   /* "heuristic", "find" or an algorithm */
    const char *algo_fallback; /* NULL or "heuristic" */
    opsched_math math;
    opsched_layout layout;
    int64_t batch, size;
    const opsched_graph *g;
    const opsched_profile_result *r;
    const opsched_device_info *dev;
    int training; /* the training graph (--train): iterations, not inferences */
} profile_item;

/* Starts each CSV file: its header written (header 1, a new file) or only
 * its field count set (appending to a file that has one). */
opsched_status report_overall_begin(opsched_csv_writer *w, int header);
opsched_status report_layers_begin(opsched_csv_writer *w, int header);
/* One row of <model>_<algo>_overall.csv; the rows of _layers.csv.  The
 * numerics check is an empty field on the CPU backend (the reference). */
opsched_status report_overall_row(opsched_csv_writer *w, const profile_item *it);
opsched_status report_layers_rows(opsched_csv_writer *w, const profile_item *it);

/* trtexec's performance summary, for one item. */
void report_summary(FILE *f, const profile_item *it);
/* One line for one item, when many are profiled. */
void report_line(FILE *f, const profile_item *it);
/* Prints the item's warnings (enqueue-bound, unstable, numerics failed)
 * to stderr; returns 1 when the numerics check failed. */
int report_warnings(const profile_item *it);

/* Stores the item: each timed layer as a measurement of its
 * configuration (settings key with ";mode=network"), the layers timed
 * alone (the harness's key), each layer's host enqueue time (the
 * harness's key with ";mode=host"), then one
 * network_runs row per mode (free last, so a size counts as done only
 * when everything of it is in). */
opsched_status report_store(opsched_store *s, int64_t run_id, int64_t device_id,
                            const profile_item *it);

#endif /* OPSCHED_PROFILE_REPORT_H */
