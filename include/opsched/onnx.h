/*
 * opsched/onnx.h - ONNX models to graphs.
 *
 * Reads what torch.onnx.export writes (opsets 11 to 21): weights as
 * initializers or, with export_params=False, as graph inputs; Constant nodes;
 * Identity-shared weights; external data (only the shapes are used, and no
 * file outside the model's folder is ever opened).  Shape arithmetic
 * (Shape, Gather, Slice, Unsqueeze, Concat, Reshape, Expand, ConstantOfShape,
 * Cast, ...) whose inputs are known at load time is evaluated while loading,
 * so the graph has static shapes and only compute nodes.
 */
#ifndef OPSCHED_ONNX_H
#define OPSCHED_ONNX_H

#include "opsched/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A value given for a graph input when the model is loaded. */
typedef struct opsched_onnx_value {
    const char *name;     /* a graph input of the model */
    opsched_dtype dtype;  /* must be the input's declared type (f32 may feed bf16) */
    opsched_shape shape;  /* must agree with the declared dims; binds symbolic ones */
    const void *data;     /* numel(shape) elements of dtype, C order; borrowed */
} opsched_onnx_value;

typedef struct opsched_onnx_options {
    /* trtexec-style overrides, "input:1x3x224x224,mask:1x128"; NULL for none.
     * Names must be real inputs of the model. */
    const char *shapes;
    /* Overrides applied to every 4-D real input after `shapes`: batch (dim 0)
     * and spatial size (dims 2, 3); the batch also fixes a symbolic dim 0 of
     * an input of any other rank.  0 leaves the dimension as it is. */
    int64_t batch;
    int64_t height, width;
    /* 1: copy initializer payloads into the graph (for execution); 0: shapes only. */
    int load_weights;
    /* Values for graph inputs (n_values of them; NULL for none), borrowed
     * for the load.  Each is used where the model has it:
     *   - where the importer needs the input's value while loading (a
     *     Reshape's shape, Slice's starts, TopK's k, ..., directly or through
     *     shape arithmetic), as a constant, folded like an initializer;
     *   - where the importer takes the input as a weight (a Conv's W), as
     *     the weight's payload (whatever load_weights says);
     *   - elsewhere the input stays a run-time INPUT, its symbolic dims
     *     bound by the given shape (like `shapes`; the value itself is not
     *     kept: feed it to the executor).
     * An input needed both at load time and as run-time data is both: the
     * INPUT tensor for the data, the constant for the load-time use.
     * Errors: OPSCHED_ERR_NOT_FOUND for a name that is not a graph input
     * (the message lists them), OPSCHED_ERR_SHAPE for a type or shape that
     * contradicts the model's declaration. */
    const struct opsched_onnx_value *values;
    int n_values;
    /* 1: keep the graph as the file spells it; 0 (default): patterns such
     * as x * Sigmoid(x) become the operator they compute
     * (opsched_graph_rewrite_patterns). */
    int no_rewrite;
    /* 1: rewrite the other patterns but leave attention as written (to
     * measure what the fused node buys). */
    int keep_attention;
    /* 1: leave sibling projections (products of one activation that only
     * attention reads) each its own product, not merged into one. */
    int keep_projections;
    /* 1: leave a product's per-column scale (layer scale) a Mul, not
     * folded into its weights. */
    int keep_scales;
} opsched_onnx_options;

/* Loads a model file.  opts may be NULL.  Errors: OPSCHED_ERR_IO (unreadable),
 * OPSCHED_ERR_PARSE (not ONNX, truncated, inconsistent), OPSCHED_ERR_UNSUPPORTED
 * (an operator or attribute this build cannot represent: the message names
 * the op, its node and the opset), OPSCHED_ERR_SHAPE (shapes that cannot work),
 * OPSCHED_ERR_INVALID_ARG (a missing input shape or a bad override). */
opsched_status opsched_onnx_load_file(opsched_ctx *ctx, const char *path,
                                      const opsched_onnx_options *opts, opsched_graph **out);

/* Same from memory.  base_dir (may be NULL) is where external data would be;
 * data is borrowed for the duration of the call. */
opsched_status opsched_onnx_load_buffer(opsched_ctx *ctx, const void *data, size_t size,
                                        const char *base_dir, const opsched_onnx_options *opts,
                                        const char *name, opsched_graph **out);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_ONNX_H */
