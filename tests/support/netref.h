/*
 * netref.h - whole networks on the host for the executor tests: weights
 * written into a graph (so every executor and the reference read the same
 * values), the graph run node by node with the reference operators, and
 * the error measure the comparisons use.
 */
#ifndef OS_TEST_NETREF_H
#define OS_TEST_NETREF_H

#include <stddef.h>
#include <stdint.h>

#include "opsched/graph.h"

/* Gives every WEIGHT and float CONSTANT tensor without a payload random
 * values: He-uniform (+-sqrt(6 / fan_in), fan_in = elements / dim 0) for
 * tensors of rank >= 2, so deep networks neither vanish nor overflow, and
 * +-0.1 for rank 0 and 1 (biases), [0.5, 1.5) for BatchNormalization's
 * running variances.  0 on success. */
int netref_set_weights(opsched_graph *g, uint64_t seed);

/* Runs g on the host: inputs[i] holds graph input i (f32).  Returns one
 * malloc'd f32 array per graph output (free each, then the array), or NULL
 * when an operator failed. */
float **netref_run(const opsched_graph *g, const float *const *inputs);

/* A graph for element-wise chains: a 3x3 convolution of x [n, c, h, w]
 * (node 0), then Add (a [c, 1, 1] bias) -> Gelu -> Mul (a [1, c, 1, 1]
 * scale, the running value its second operand) -> Add (x) -> Sigmoid
 * (nodes 1 to 5, one chain), weights from seed.  NULL when it cannot be
 * built. */
opsched_graph *netref_chain_graph(opsched_ctx *ctx, const opsched_shape *x, uint64_t seed);

/* A graph for activations inside batch normalisations, x [n, c, h, w]:
 * BatchNormalization -> HardSwish (nodes 0, 1), BatchNormalization of
 * that -> Relu (nodes 2, 3), then the Add of the two activations (node 4);
 * weights from seed.  NULL when it cannot be built. */
opsched_graph *netref_norm_act_graph(opsched_ctx *ctx, const opsched_shape *x, uint64_t seed);

/* A ConvNeXt block's end, x [n, c, h, w]: Transpose to [n, h, w, c], a
 * MatMul to c, its bias Add, a Transpose back to [n, c, h, w] and the
 * residual Add of x (nodes 0 to 4); weights from seed.  NULL when it
 * cannot be built. */
opsched_graph *netref_transposed_residual_graph(opsched_ctx *ctx, const opsched_shape *x,
                                                uint64_t seed);

/* Depthwise convolutions and the channels-last LayerNorm after them
 * (ConvNeXt), x [n, c, h, w]: a 7x7 depthwise convolution with bias ->
 * Transpose to [n, h, w, c] -> LayerNormalization over c with scale and
 * bias -> MatMul to c -> Transpose back -> Add x (nodes 0 to 5); a 3x3 one
 * without bias -> Transpose -> LayerNormalization with a scale only ->
 * Transpose back (nodes 6 to 9); a 5x5 one of stride 2 -> Transpose ->
 * LayerNormalization over the last two axes, no channel norm (nodes 10 to
 * 12, the output); weights from seed.  NULL when it cannot be built. */
opsched_graph *netref_conv_norm_graph(opsched_ctx *ctx, const opsched_shape *x, uint64_t seed);

/* A graph of two squeeze-and-excitation blocks over x [n, c, h, w]:
 * GlobalAveragePool -> 1x1 conv to `hidden` with bias -> Swish -> 1x1
 * conv back with bias -> Sigmoid -> Mul with x (nodes 0 to 5), then
 * ReduceMean over H and W -> conv without bias -> Relu -> conv without
 * bias -> HardSigmoid -> Mul (nodes 6 to 11); weights from seed.  NULL
 * when it cannot be built. */
/* A graph for MatMul bias epilogues, x [.., 12]: MatMul to 16 -> Add a
 * [16] bias -> Relu (nodes 0-2), MatMul to 8 -> Add a [1, 1, 8] bias (the
 * product its second operand) -> tanh Gelu (3-5), MatMul to 4 -> Add a [4]
 * bias -> Sigmoid (6-8), MatMul to 4 -> Add of a tensor that is no
 * constant (9-10, not a bias), MatMul to 4 -> Add a [4] bias -> Add of
 * node 10's output (11-13, a residual); weights from seed.  NULL when it
 * cannot be built. */
opsched_graph *netref_bias_graph(opsched_ctx *ctx, const opsched_shape *x, uint64_t seed);
/* An MLP over the last axis of x (K wide): MatMul to 4K -> Add a [4K]
 * bias -> act (nodes 0-2; attr as the op wants it, NULL for none) ->
 * MatMul to K -> Add a [K] bias (3-4); weights from seed.  NULL when it
 * cannot be built. */
/* Two densely connected layers, DenseNet's: conv (3x3 to `growth`
 * channels, bias) -> Concat(x, it) -> BatchNormalization -> Relu -> conv
 * (1x1 to growth) -> Concat(x, the first conv's output, it) ->
 * BatchNormalization -> Relu (nodes 0-7, the Concats 1 and 5, the norms 2
 * and 6); weights from seed.  NULL when it cannot be built. */
opsched_graph *netref_dense_graph(opsched_ctx *ctx, const opsched_shape *x, int64_t growth,
                                  uint64_t seed);
opsched_graph *netref_mlp_graph(opsched_ctx *ctx, const opsched_shape *x, opsched_op_kind act,
                                const opsched_op_attr *attr, uint64_t seed);
/* Adds a Slice of channels [c0, c1) of x (axis 1) as *out; nonzero on failure. */
int netref_channel_slice(opsched_graph *g, const char *name, int x, int64_t c0, int64_t c1,
                         int *out);
/* ShuffleNetV2's unit: a 1x1 convolution and Relu, the channel shuffle
 * (Reshape to [N, 2, C/2, H, W], Transpose, Reshape back), two channel
 * Slices, one through a 1x1 convolution and Relu, their Concat, and a
 * second shuffle as the output: movement runs (opsched_move_runs) of
 * four nodes (each Slice) and three (the output). */
opsched_graph *netref_shuffle_graph(opsched_ctx *ctx, const opsched_shape *x, uint64_t seed);

/* Attention as torch's SDPA decomposition writes it, x [B, S, H*D]: Q, K
 * and V projections, Reshape to [B, S, H, D], Transposes (K to K^T), the
 * sqrt-scale Muls, the product, an additive mask [B, 1, 1, S] (batch 0
 * without its last 3 keys, batch 1 without any) or with `causal` a causal
 * mask [1, 1, S, S] whose last query row sees no key, Softmax,
 * Where(IsNaN, 0), the product with V, Transpose and Reshape back; weights
 * from seed.  As written: opsched_graph_rewrite_patterns makes it one
 * Attention node.  NULL when it cannot be built. */
opsched_graph *netref_attention_graph(opsched_ctx *ctx, int64_t B, int64_t S, int64_t H,
                                      int64_t D, int causal, uint64_t seed);

opsched_graph *netref_se_graph(opsched_ctx *ctx, const opsched_shape *x, int64_t hidden,
                               uint64_t seed);

/* Two gated products over x [n, c, h, w]: a gate (GlobalAveragePool, 1x1
 * to `hidden` with bias, Relu, 1x1 back to c with bias, Sigmoid; nodes
 * 0-4), Mul(x, s) (5), a 1x1 convolution c -> c with bias (6), Add x (7, a
 * residual); then over that sum a gate (ReduceMean over H and W, 1x1
 * without bias, Relu, 1x1, HardSigmoid; 8-12), Mul(s, y) (13, operands
 * the other way round), a 1x1 convolution to c / 2 without bias (14) and
 * a Relu (15), the output; weights from seed.  NULL when it cannot be
 * built. */
opsched_graph *netref_gated_product_graph(opsched_ctx *ctx, const opsched_shape *x,
                                          int64_t hidden, uint64_t seed);

/* MobileNet's inverted residual block over x [n, c, h, w]: a 1x1
 * convolution to 4c with bias -> Clip(0, 6) (nodes 0-1), a depthwise 3x3
 * with bias -> HardSwish (2-3), a 1x1 convolution back to c with bias ->
 * Add x (4-5, a residual), then a 1x1 convolution to 2c with bias -> Swish
 * (6-7); weights from seed.  NULL when it cannot be built. */
opsched_graph *netref_inverted_residual_graph(opsched_ctx *ctx, const opsched_shape *x,
                                              uint64_t seed);

/* A classifier head of Linear layers as ONNX exports them (Gemm, transB 1,
 * with its bias C) over x [n, k]: Gemm to 128 -> HardSwish -> Gemm to 64
 * -> Relu -> Gemm to 10 (nodes 0-4), and, with `shared`, the second
 * Gemm's output also added to the Relu's (node 5, so that the Relu is not
 * that Gemm's epilogue); weights from seed.  NULL when it cannot be
 * built. */
opsched_graph *netref_gemm_head_graph(opsched_ctx *ctx, const opsched_shape *x, int shared,
                                      uint64_t seed);

/* ||a - b|| / ||b|| over n values (a NaN or infinity gives +inf). */
double netref_rel_l2(const float *a, const float *b, size_t n);

#endif /* OS_TEST_NETREF_H */
