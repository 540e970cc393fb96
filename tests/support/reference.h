/*
 * reference.h - a plain, deliberately simple reference implementation of
 * every operator in opsched_op_kind, used as ground truth by the op
 * conformance test.  Sums are accumulated in double; every output element is
 * computed from its definition (ONNX semantics; average pooling divisors as
 * PyTorch: include-pad counts the taps inside the declared padding).
 */
#ifndef OS_TEST_REFERENCE_H
#define OS_TEST_REFERENCE_H

#include "opsched/graph.h"

/* Computes node `node` of g on host arrays.  in[i] follows the node's
 * inputs (NULL for an omitted optional input) and holds f32 row-major data,
 * except Gather's indices, which hold the index tensor's dtype (int32 or
 * int64).  out[j] receives output j (f32, row-major).  relu_after applies a
 * Relu to the outputs (a convolution with a fused activation).  Returns 0,
 * or -1 when the operator or an index is not valid. */
int ref_run_node(const opsched_graph *g, int node, const void *const *in, float *const *out,
                 int relu_after);

#endif /* OS_TEST_REFERENCE_H */
