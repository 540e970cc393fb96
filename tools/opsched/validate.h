/*
 * validate.h - what `opsched validate` hands its plot: one point per
 * network run, predicted against measured.
 */
#ifndef OPSCHED_VALIDATE_H
#define OPSCHED_VALIDATE_H

#include <stddef.h>

typedef struct validate_point {
    const char *model;         /* borrowed */
    int graph;                 /* 1: CUDA-graph run, 0: free-running (eager) */
    double measured_ms, predicted_ms;
    double error_pct;          /* signed, (predicted - measured) / measured */
} validate_point;

/* 1 when this build can plot (PLplot was found at configure time). */
int validate_plot_available(void);

/* Writes two panels to file, as .svg or .png by path's extension (file is
 * the temporary that becomes path): predicted against measured latency,
 * log-log with the diagonal and +-10% lines, and the signed error of each
 * run by model.  models[] (n_models) fixes the order and colours.  Returns
 * 0, or -1 with the reason in err. */
int validate_plot(const char *path, const char *file, const char *title,
                  const validate_point *pts, int n, const char *const *models, int n_models,
                  char *err, size_t err_size);

#endif /* OPSCHED_VALIDATE_H */
