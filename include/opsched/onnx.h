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

typedef struct opsched_onnx_options {
    /* trtexec-style overrides, "input:1x3x224x224,mask:1x128"; NULL for none.
     * Names must be real inputs of the model. */
    const char *shapes;
    /* Overrides applied to every 4-D real input after `shapes`: batch (dim 0)
     * and spatial size (dims 2, 3).  0 leaves the dimension as it is. */
    int64_t batch;
    int64_t height, width;
    /* 1: copy initializer payloads into the graph (for execution); 0: shapes only. */
    int load_weights;
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
