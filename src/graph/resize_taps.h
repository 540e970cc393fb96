/*
 * resize_taps.h - the taps of one axis of Resize, as ONNX's reference
 * implementation defines them, for every backend: each output coordinate
 * maps to a few input coordinates with weights (taps of weight 0 dropped),
 * or to tf_crop_and_resize's extrapolation value.
 */
#ifndef OPSCHED_GRAPH_RESIZE_TAPS_H
#define OPSCHED_GRAPH_RESIZE_TAPS_H

#include <stdint.h>

#include "opsched/graph.h"

/* For output coordinate o: count[o] taps (index, weight) from o * width,
 * or outside[o] for tf_crop_and_resize's extrapolation.  count[o] is 0
 * without outside[o] where every weight is 0 (exclude_outside). */
typedef struct os_resize_taps {
    int width;
    int64_t *index;
    double *weight;
    int *count;
    unsigned char *outside;
} os_resize_taps;

/* The taps of axis d of nd, input extent in, output extent out; t zeroed
 * by the caller, freed with os_resize_taps_free whatever the status. */
opsched_status os_resize_taps_make(opsched_ctx *ctx, const opsched_resize_attr *a, int d, int nd,
                                   int64_t in, int64_t out, os_resize_taps *t);
void os_resize_taps_free(os_resize_taps *t);

#endif
