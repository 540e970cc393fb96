/*
 * opsched/zoo.h - built-in networks, written with the builder API.
 *
 * Each network matches torchvision's architecture of the same name: the same
 * layers, shapes and parameter counts.  Those torchvision lacks follow their
 * paper and a named reference implementation (randwire, nasnet: see
 * src/zoo/randwire.c and nasnet.c).  fold_bn gives the deployed form that
 * torch.onnx.export writes in eval mode: every BatchNormalization that
 * follows a convolution is folded into it (the convolution gains a bias).
 */
#ifndef OPSCHED_ZOO_H
#define OPSCHED_ZOO_H

#include "opsched/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opsched_zoo_options {
    int64_t batch;     /* 0 means 1 */
    int64_t height;    /* 0 means the model's default (224; inception_v3 299, nasnet_large 331) */
    int64_t width;     /* 0 means height */
    int fold_bn;       /* 1: BatchNormalization folded into the preceding conv */
} opsched_zoo_options;

typedef struct opsched_zoo_info {
    const char *name;          /* "resnet50" */
    const char *description;   /* one line */
    int64_t default_size;      /* 224, 299 or 331 */
    int64_t min_size;          /* smallest input side the network accepts */
} opsched_zoo_info;

int opsched_zoo_count(void);
/* Borrowed, static; NULL when i is out of range. */
const opsched_zoo_info *opsched_zoo_at(int i);
/* NULL when no model of that name exists. */
const opsched_zoo_info *opsched_zoo_find(const char *name);

/* Builds a zoo network.  opts may be NULL for the defaults.  An unknown
 * name gives OPSCHED_ERR_NOT_FOUND; an input too small for the network gives
 * OPSCHED_ERR_SHAPE.  *out is owned by the caller. */
opsched_status opsched_zoo_build(opsched_ctx *ctx, const char *name,
                                 const opsched_zoo_options *opts, opsched_graph **out);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_ZOO_H */
