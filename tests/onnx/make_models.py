#!/usr/bin/python3
"""Writes the ONNX files the importer tests read, under OUT/onnx/:

  small/   hand-made models (onnx.helper), one or a few ops each, at the
           opsets whose attribute-versus-input rules they exercise
  bad/     files that must be refused: empty, truncated, random, text, a
           cycle, an unsupported op, impossible shapes
  ext*/    external data: a good one, one whose location is '../x', one
           whose file is a symbolic link out of its folder, offsets near
           INT64_MAX, and one whose file the tests make a FIFO
  torch/   real torch.onnx.export output of the zoo models and a few more
           torchvision networks, mostly with export_params=False (the
           weights become graph inputs and the files stay small)

Run with Debian's python3 (python3-onnx, python3-torch, python3-torchvision).
Idempotent: small and bad files are rewritten only when their bytes change,
torch exports are skipped when the file exists.  The exports run two at a
time; the whole run takes about a minute and a half on two cores.
"""
import argparse
import concurrent.futures as cf
import os
import random
import sys
import time
import warnings
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def write_bytes(path, data):
    """Writes data unless the file already holds exactly it."""
    if os.path.exists(path) and not os.path.islink(path):
        with open(path, "rb") as f:
            if f.read() == data:
                return
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def vi(name, dims, elem=F):
    return helper.make_tensor_value_info(name, elem, dims)


def init(name, dims, elem=F, value=None):
    if value is None:
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        value = rng.standard_normal(dims).astype(np.float32) if elem == F else np.zeros(dims)
    arr = np.asarray(value, dtype=np.float32 if elem == F else np.int64).reshape(dims)
    return numpy_helper.from_array(arr, name)


def ints(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def model(nodes, inputs, outputs, inits=(), opset=13, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="opsched-tests")
    m.ir_version = 8
    return m


def small_models():
    """name -> ModelProto.  The C test knows what each should load as."""
    M = {}
    N = helper.make_node

    # --- convolution -----------------------------------------------------
    M["conv_basic"] = model(
        [N("Conv", ["x", "w", "b"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
        [vi("x", [1, 3, 32, 32])], [vi("y", None)], [init("w", [8, 3, 3, 3]), init("b", [8])])
    M["conv_group_dil"] = model(
        [N("Conv", ["x", "w"], ["y"], name="conv", group=2, dilations=[2, 2], pads=[2, 2, 2, 2])],
        [vi("x", [1, 4, 16, 16])], [vi("y", None)], [init("w", [8, 2, 3, 3])])
    M["conv_asym"] = model(
        [N("Conv", ["x", "w"], ["y"], name="conv", strides=[2, 2], pads=[0, 1, 2, 3])],
        [vi("x", [1, 3, 15, 15])], [vi("y", None)], [init("w", [4, 3, 3, 3])])
    M["conv_same_upper"] = model(
        [N("Conv", ["x", "w"], ["y"], name="conv", strides=[2, 2], auto_pad="SAME_UPPER")],
        [vi("x", [1, 3, 15, 15])], [vi("y", None)], [init("w", [4, 3, 4, 4])])
    M["conv_same_lower"] = model(
        [N("Conv", ["x", "w"], ["y"], name="conv", strides=[2, 2], auto_pad="SAME_LOWER")],
        [vi("x", [1, 3, 15, 15])], [vi("y", None)], [init("w", [4, 3, 4, 4])])
    M["conv_valid"] = model(
        [N("Conv", ["x", "w"], ["y"], name="conv", auto_pad="VALID")],
        [vi("x", [1, 3, 10, 10])], [vi("y", None)], [init("w", [4, 3, 3, 3])])

    # --- dense -------------------------------------------------------------
    M["gemm"] = model(
        [N("Gemm", ["a", "w", "c"], ["y"], name="fc", alpha=0.5, beta=2.0, transB=1)],
        [vi("a", [2, 16])], [vi("y", None)], [init("w", [8, 16]), init("c", [8])])
    M["matmul"] = model([N("MatMul", ["a", "w"], ["y"], name="mm")],
                        [vi("a", [2, 3, 4, 5])], [vi("y", None)], [init("w", [5, 6])])

    # --- pooling -----------------------------------------------------------
    M["maxpool_ceil"] = model(
        [N("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
           ceil_mode=1)], [vi("x", [1, 2, 10, 10])], [vi("y", None)])
    M["maxpool_dil"] = model(
        [N("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2], dilations=[2, 2],
           pads=[1, 1, 1, 1])], [vi("x", [1, 2, 9, 9])], [vi("y", None)])
    M["avgpool"] = model(
        [N("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
           pads=[1, 1, 1, 1], count_include_pad=1)], [vi("x", [1, 2, 9, 9])], [vi("y", None)])
    M["pad_avgpool"] = model(
        [N("Pad", ["x", "p"], ["xp"], name="pad", mode="constant"),
         N("AveragePool", ["xp"], ["y"], name="pool", kernel_shape=[3, 3], strides=[1, 1])],
        [vi("x", [1, 2, 9, 9])], [vi("y", None)], [ints("p", [0, 0, 1, 1, 0, 0, 1, 1])])
    M["global_pools"] = model(
        [N("GlobalAveragePool", ["x"], ["a"], name="gap"),
         N("GlobalMaxPool", ["x"], ["m"], name="gmp")],
        [vi("x", [2, 4, 7, 5])], [vi("a", None), vi("m", None)])

    # --- element-wise --------------------------------------------------------
    M["unary_chain"] = model(
        [N("Relu", ["x"], ["a"], name="relu"), N("Sigmoid", ["a"], ["b"], name="sig"),
         N("Tanh", ["b"], ["c"], name="tanh"), N("Erf", ["c"], ["d"], name="erf"),
         N("HardSigmoid", ["d"], ["e"], name="hsig", alpha=0.25),
         N("HardSwish", ["e"], ["f"], name="hswish"), N("Sqrt", ["f"], ["g"], name="sqrt"),
         N("LRN", ["g"], ["h"], name="lrn", size=5),
         N("Softmax", ["h"], ["y"], name="softmax", axis=1)],
        [vi("x", [2, 6, 4, 4])], [vi("y", None)], opset=14)
    M["gelu_op20"] = model([N("Gelu", ["x"], ["y"], name="gelu", approximate="tanh")],
                           [vi("x", [2, 8])], [vi("y", None)], opset=20)
    M["binary_bcast"] = model(
        [N("Add", ["x", "c"], ["a"], name="add"), N("Sub", ["a", "x"], ["b"], name="sub"),
         N("Mul", ["b", "s"], ["c2"], name="mul"), N("Div", ["c2", "s"], ["d"], name="div"),
         N("Pow", ["d", "two"], ["y"], name="pow")],
        [vi("x", [2, 3, 4])], [vi("y", None)],
        [init("c", [3, 1]), init("s", [], value=3.0), init("two", [], value=2.0)])
    M["two_inputs_add"] = model([N("Add", ["a", "b"], ["y"], name="add")],
                                [vi("a", [2, 3]), vi("b", [2, 3])], [vi("y", None)])
    M["clip_op11"] = model(
        [N("Clip", ["x", "lo", "hi"], ["y"], name="relu6")], [vi("x", [1, 4])], [vi("y", None)],
        [init("lo", [], value=0.0), init("hi", [], value=6.0)], opset=11)
    M["clip_op6"] = model([N("Clip", ["x"], ["y"], name="relu6", min=0.0, max=6.0)],
                          [vi("x", [1, 4])], [vi("y", None)], opset=10)

    # --- data movement ---------------------------------------------------------
    M["concat"] = model([N("Concat", ["a", "b"], ["y"], name="cat", axis=-3)],
                        [vi("a", [1, 2, 4, 4]), vi("b", [1, 3, 4, 4])], [vi("y", None)])
    # ShuffleNetV2's join: Concat, the channel shuffle, the split (runs of
    # movement nodes that may read the Concat's inputs)
    M["shuffle_concat"] = model(
        [N("Concat", ["a", "b"], ["c"], name="cat", axis=1),
         N("Reshape", ["c", "s5"], ["r"], name="split_groups"),
         N("Transpose", ["r"], ["t"], name="swap", perm=[0, 2, 1, 3, 4]),
         N("Reshape", ["t", "s4"], ["u"], name="join_groups"),
         N("Slice", ["u", "st0", "en0", "ax"], ["h0"], name="half0"),
         N("Slice", ["u", "st1", "en1", "ax"], ["h1"], name="half1"),
         N("Add", ["h0", "h1"], ["y"], name="add")],
        [vi("a", [1, 4, 4, 4]), vi("b", [1, 4, 4, 4])], [vi("y", None)],
        [ints("s5", [1, 2, 4, 4, 4]), ints("s4", [1, 8, 4, 4]), ints("st0", [0]),
         ints("en0", [4]), ints("st1", [4]), ints("en1", [8]), ints("ax", [1])])
    # a squeeze-and-excitation gate whose multiply a 1x1 convolution reads
    M["se_gated"] = model(
        [N("GlobalAveragePool", ["x"], ["p"], name="pool"),
         N("Conv", ["p", "w1", "b1"], ["f1"], name="fc1"),
         N("Relu", ["f1"], ["r1"], name="relu"),
         N("Conv", ["r1", "w2", "b2"], ["f2"], name="fc2"),
         N("Sigmoid", ["f2"], ["s"], name="gate"),
         N("Mul", ["x", "s"], ["m"], name="scale"),
         N("Conv", ["m", "w3", "b3"], ["y"], name="proj")],
        [vi("x", [1, 8, 4, 4])], [vi("y", None)],
        [init("w1", [2, 8, 1, 1]), init("b1", [2]), init("w2", [8, 2, 1, 1]), init("b2", [8]),
         init("w3", [4, 8, 1, 1]), init("b3", [4])])
    # DenseNet's layer: the Concat of every feature map before it, normalised
    # (a batch normalisation that may read the Concat's inputs in place)
    M["dense_concat_bn"] = model(
        [N("Concat", ["a", "b"], ["c"], name="cat", axis=1),
         N("BatchNormalization", ["c", "s", "sh", "m", "v"], ["n"], name="norm", epsilon=1e-5),
         N("Relu", ["n"], ["y"], name="relu")],
        [vi("a", [1, 8, 4, 4]), vi("b", [1, 4, 4, 4])], [vi("y", None)],
        [init("s", [12]), init("sh", [12]), init("m", [12]), init("v", [12], value=np.ones(12))])
    M["split_op11"] = model(
        [N("Split", ["x"], ["a", "b"], name="split", axis=1, split=[2, 4])],
        [vi("x", [1, 6, 4])], [vi("a", None), vi("b", None)], opset=11)
    M["split_op13"] = model(
        [N("Split", ["x", "s"], ["a", "b"], name="split", axis=1)],
        [vi("x", [1, 6, 4])], [vi("a", None), vi("b", None)], [ints("s", [2, 4])])
    M["split_equal"] = model(
        [N("Split", ["x"], ["a", "b", "c"], name="split", axis=-1)],
        [vi("x", [1, 2, 9])], [vi("a", None), vi("b", None), vi("c", None)])
    M["split_op18"] = model(
        [N("Split", ["x"], ["a", "b", "c"], name="split", axis=2, num_outputs=3)],
        [vi("x", [1, 2, 8])], [vi("a", None), vi("b", None), vi("c", None)], opset=18)
    M["slice_op13"] = model(
        [N("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="slice")],
        [vi("x", [4, 10, 6])], [vi("y", None)],
        [ints("st", [1, -1]), ints("en", [1 << 62, -(1 << 62)]), ints("ax", [0, 1]),
         ints("sp", [2, -3])])
    M["slice_op9"] = model(
        [N("Slice", ["x"], ["y"], name="slice", starts=[1], ends=[-1], axes=[2])],
        [vi("x", [4, 10, 6])], [vi("y", None)], opset=9)
    M["gather_act"] = model(
        [N("Gather", ["x", "idx"], ["y"], name="gather", axis=1)],
        [vi("x", [2, 5, 3])], [vi("y", None)], [ints("idx", [4, 0])])
    M["transpose"] = model([N("Transpose", ["x"], ["y"], name="tr", perm=[0, 2, 3, 1])],
                           [vi("x", [1, 2, 3, 4])], [vi("y", None)])
    M["pad_reflect"] = model(
        [N("Pad", ["x", "p"], ["y"], name="pad", mode="reflect")],
        [vi("x", [1, 2, 5, 5])], [vi("y", None)], [ints("p", [0, 0, 1, 2, 0, 0, 3, 1])])
    M["pad_op2"] = model(
        [N("Pad", ["x"], ["y"], name="pad", pads=[0, 0, 1, 1, 0, 0, 1, 1], value=0.5)],
        [vi("x", [1, 2, 5, 5])], [vi("y", None)], opset=9)
    M["expand"] = model([N("Expand", ["x", "s"], ["y"], name="expand")],
                        [vi("x", [3, 1])], [vi("y", None)], [ints("s", [2, 1, 4])])
    M["flatten"] = model([N("Flatten", ["x"], ["y"], name="flat", axis=2)],
                         [vi("x", [2, 3, 4, 5])], [vi("y", None)])
    M["reshape"] = model([N("Reshape", ["x", "s"], ["y"], name="reshape")],
                         [vi("x", [2, 3, 4, 5])], [vi("y", None)], [ints("s", [0, -1, 5])])
    M["squeeze_op11"] = model(
        [N("Squeeze", ["x"], ["a"], name="sq", axes=[1]),
         N("Unsqueeze", ["a"], ["y"], name="unsq", axes=[0, -1])],
        [vi("x", [3, 1, 4])], [vi("y", None)], opset=11)
    M["squeeze_op13"] = model(
        [N("Squeeze", ["x", "ax1"], ["a"], name="sq"),
         N("Unsqueeze", ["a", "ax2"], ["y"], name="unsq")],
        [vi("x", [3, 1, 4])], [vi("y", None)], [ints("ax1", [1]), ints("ax2", [0, -1])])
    M["identity_dropout"] = model(
        [N("Identity", ["x"], ["a"], name="id"), N("Dropout", ["a"], ["y"], name="drop")],
        [vi("x", [2, 3])], [vi("y", None)])

    # --- normalisation and reduction -------------------------------------------
    M["batchnorm"] = model(
        [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn", epsilon=1e-3)],
        [vi("x", [1, 4, 3, 3])], [vi("y", None)],
        [init("s", [4]), init("b", [4]), init("m", [4]), init("v", [4], value=np.ones(4))])
    M["batchnorm_training"] = model(
        [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], name="bn",
           training_mode=1)],
        [vi("x", [1, 4, 3, 3])], [vi("y", None), vi("rm", None), vi("rv", None)],
        [init("s", [4]), init("b", [4]), init("m", [4]), init("v", [4], value=np.ones(4))],
        opset=15)
    M["layernorm_op17"] = model(
        [N("LayerNormalization", ["x", "g", "b"], ["y"], name="ln", axis=-1, epsilon=1e-6)],
        [vi("x", [2, 5, 8])], [vi("y", None)], [init("g", [8]), init("b", [8])], opset=17)
    M["reducemean_op13"] = model(
        [N("ReduceMean", ["x"], ["y"], name="mean", axes=[2, 3], keepdims=0)],
        [vi("x", [2, 3, 4, 5])], [vi("y", None)])
    M["reducemean_op18"] = model(
        [N("ReduceMean", ["x", "ax"], ["y"], name="mean", keepdims=1)],
        [vi("x", [2, 3, 4, 5])], [vi("y", None)], [ints("ax", [-1])], opset=18)
    M["softmax_op11_bad_axis"] = model([N("Softmax", ["x"], ["y"], name="sm", axis=1)],
                                       [vi("x", [2, 3, 4])], [vi("y", None)], opset=11)
    M["softmax_op11_last"] = model([N("Softmax", ["x"], ["y"], name="sm", axis=2)],
                                   [vi("x", [2, 3, 4])], [vi("y", None)], opset=11)

    # --- shape arithmetic, constants, shared weights ----------------------------
    M["shape_chain"] = model(
        [N("Shape", ["x"], ["s"], name="shape"),
         N("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
         N("Unsqueeze", ["n", "ax0"], ["n1"], name="unsq"),
         N("Concat", ["n1", "minus1"], ["target"], name="cat", axis=0),
         N("Reshape", ["x", "target"], ["y"], name="reshape")],
        [vi("x", [2, 3, 8, 8])], [vi("y", None)],
        [ints("zero", 0), ints("ax0", [0]), ints("minus1", [-1])])
    M["fold_arith"] = model(
        [N("Shape", ["x"], ["s"], name="shape"),
         N("Slice", ["s", "one", "two"], ["c"], name="slc"),
         N("Cast", ["c"], ["cf"], name="cast", to=F),
         N("Sqrt", ["cf"], ["r"], name="sqrt"),
         N("Div", ["x", "r"], ["scaled"], name="scale"),
         N("ConstantOfShape", ["three"], ["twos"], name="cos",
           value=helper.make_tensor("v", I64, [1], [2])),
         N("Range", ["r0", "r3", "r1"], ["rng"], name="range"),
         N("Equal", ["twos", "rng"], ["eq"], name="eq"),
         N("Where", ["eq", "rng", "twos"], ["w"], name="where"),
         N("ReduceProd", ["w"], ["p"], name="prod", keepdims=0),
         N("Floor", ["r"], ["fl"], name="floor"),
         N("Ceil", ["fl"], ["ce"], name="ceil"),
         N("Cast", ["ce"], ["cei"], name="cast2", to=I64),
         N("Div", ["p", "cei"], ["q"], name="divq"),
         N("Expand", ["q", "one"], ["q2"], name="expand"),
         N("Concat", ["q2", "minus1"], ["target"], name="cat", axis=0),
         N("Reshape", ["scaled", "target"], ["y"], name="reshape")],
        [vi("x", [2, 4, 16])], [vi("y", None)],
        [ints("one", [1]), ints("two", [2]), ints("three", [3]), ints("r0", 0), ints("r3", 3),
         ints("r1", 1), ints("minus1", [-1])])
    M["constant_nodes"] = model(
        [N("Constant", [], ["shape"], name="k1",
           value=helper.make_tensor("s", I64, [2], [3, -1])),
         N("Constant", [], ["half"], name="k2", value_float=0.5),
         N("Constant", [], ["ax"], name="k3", value_ints=[1]),
         N("Reshape", ["x", "shape"], ["r"], name="reshape"),
         N("Mul", ["r", "half"], ["m"], name="mul"),
         N("Unsqueeze", ["m", "ax"], ["y"], name="unsq")],
        [vi("x", [1, 3, 4])], [vi("y", None)])
    M["identity_weight"] = model(
        [N("Identity", ["w"], ["w2"], name="alias"),
         N("Conv", ["x", "w"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
         N("Conv", ["a", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])],
        [vi("x", [1, 4, 8, 8])], [vi("y", None)], [init("w", [4, 4, 3, 3])])
    # Weights as graph inputs, the way export_params=False writes them, with
    # a LayerNorm decomposed into element-wise ops and a class token.
    M["weights_as_inputs"] = model(
        [N("Conv", ["x", "cw", "cb"], ["c"], name="conv", strides=[4, 4]),
         N("Reshape", ["c", "tok_shape"], ["f"], name="flat"),
         N("Transpose", ["f"], ["t"], name="tr", perm=[0, 2, 1]),
         N("Expand", ["cls", "cls_shape"], ["ce"], name="expand"),
         N("Concat", ["ce", "t"], ["tok"], name="cat", axis=1),
         N("Add", ["tok", "pos"], ["e"], name="addpos"),
         N("ReduceMean", ["e"], ["mu"], name="mean", axes=[-1]),
         N("Sub", ["e", "mu"], ["d"], name="sub"),
         N("Mul", ["d", "gamma"], ["g"], name="scale"),
         N("Add", ["beta", "g"], ["h"], name="shift"),
         N("MatMul", ["h", "wq"], ["y"], name="proj")],
        [vi("x", [1, 3, 8, 8]), vi("cw", [16, 3, 4, 4]), vi("cb", [16]), vi("cls", [1, 1, 16]),
         vi("pos", [1, 5, 16]), vi("gamma", [16]), vi("beta", [16]), vi("wq", [16, 32])],
        [vi("y", None)], [ints("cls_shape", [1, 1, 16]), ints("tok_shape", [1, 16, -1])])
    # Payloads in the typed fields instead of raw_data.
    M["typed_fields"] = model(
        [N("Gemm", ["a", "w", "c"], ["g"], name="fc", transB=1),
         N("Gather", ["g", "idx"], ["y"], name="pick", axis=1)],
        [vi("a", [2, 3])], [vi("y", None)],
        [helper.make_tensor("w", F, [2, 3], [1, 2, 3, 4, 5, 6]),
         helper.make_tensor("c", F, [2], [0.5, -0.5]),
         helper.make_tensor("idx", TensorProto.INT32, [1], [1])])
    M["dim_param"] = model(
        [N("Relu", ["x"], ["y"], name="relu")],
        [vi("x", ["batch", 3, "height", "width"])], [vi("y", None)])
    M["multi_input"] = model(
        [N("MatMul", ["tokens", "w"], ["a"], name="mm"), N("Add", ["a", "mask"], ["y"], name="add")],
        [vi("tokens", ["batch", "seq", 8]), vi("mask", [1, "seq", 1])], [vi("y", None)],
        [init("w", [8, 8])])
    M["unsorted"] = model(
        [N("Relu", ["a"], ["y"], name="second"), N("Sigmoid", ["x"], ["a"], name="first")],
        [vi("x", [2, 3])], [vi("y", None)])
    M["old_inputs_with_inits"] = model(
        [N("Conv", ["x", "w"], ["y"], name="conv")],
        [vi("x", [1, 3, 8, 8]), vi("w", [4, 3, 3, 3])], [vi("y", None)], [init("w", [4, 3, 3, 3])])
    # --- values given for inputs when loading ----------------------------
    M["given_conv"] = model(
        [N("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])],
        [vi("x", [1, 3, 6, 6]), vi("w", [4, 3, 3, 3]), vi("b", [4])], [vi("y", None)])
    M["given_reshape"] = model(
        [N("Reshape", ["x", "shape"], ["y"], name="reshape")],
        [vi("x", [2, 3, 4]), vi("shape", [2], I64)], [vi("y", None)])
    M["given_chain"] = model(
        [N("Unsqueeze", ["n", "ax"], ["n1"], name="unsq"),
         N("Concat", ["minus1", "n1"], ["s"], name="cat", axis=0),
         N("Reshape", ["x", "s"], ["y"], name="reshape")],
        [vi("x", [2, 3, 4]), vi("n", [], I64)], [vi("y", None)],
        [ints("ax", [0]), ints("minus1", [-1])])
    M["given_both"] = model(
        [N("Reshape", ["x", "shape"], ["y"], name="reshape"),
         N("Add", ["shape", "one"], ["s2"], name="add")],
        [vi("x", [2, 3, 4]), vi("shape", ["rank"], I64)], [vi("y", None), vi("s2", None)],
        [ints("one", [1])])
    M.update(op_models())
    return M


def tensor(name, arr, elem):
    """An initializer of any element type from a numpy array."""
    t = numpy_helper.from_array(np.asarray(arr), name)
    t.data_type = elem
    return t


def op_models():
    """One or a few models per family of the operators added with the
    generic graph kinds (opsets up to 28: make_model does not check them)."""
    M = {}
    N = helper.make_node
    B = TensorProto.BOOL
    U8 = TensorProto.UINT8
    I8 = TensorProto.INT8
    I32 = TensorProto.INT32
    F16 = TensorProto.FLOAT16

    # --- element-wise ----------------------------------------------------------
    chain = ["Abs", "Neg", "Exp", "Log", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin",
             "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"]
    names = ["x"] + ["u%d" % i for i in range(len(chain) - 1)] + ["y"]
    M["unary_math"] = model(
        [N(op, [names[i]], [names[i + 1]], name=op.lower()) for i, op in enumerate(chain)],
        [vi("x", [2, 3])], [vi("y", None)])
    acts = [("LeakyRelu", {"alpha": 0.2}), ("Elu", {"alpha": 0.5}), ("Selu", {}), ("Celu", {}),
            ("ThresholdedRelu", {"alpha": 0.1}), ("Softplus", {}), ("Softsign", {}), ("Mish", {}),
            ("Shrink", {"bias": 0.25, "lambd": 0.75}), ("HardSigmoid", {}), ("HardSwish", {}),
            ("Gelu", {"approximate": "tanh"})]
    names = ["x"] + ["a%d" % i for i in range(len(acts))]
    nodes = [N(op, [names[i]], [names[i + 1]], name=op.lower(), **kw)
             for i, (op, kw) in enumerate(acts)]
    nodes.append(N("PRelu", [names[-1], "slope"], ["y"], name="prelu"))
    M["activations_op22"] = model(nodes, [vi("x", [2, 3, 4])], [vi("y", None)],
                                  [init("slope", [3, 1])], opset=22)
    M["swish_op24"] = model([N("Swish", ["x"], ["y"], name="swish", alpha=1.5)],
                            [vi("x", [2, 8])], [vi("y", None)], opset=24)
    M["swiglu_op28"] = model([N("SwiGLU", ["a", "b"], ["y"], name="swiglu", alpha=1.702)],
                             [vi("a", [2, 8]), vi("b", [2, 8])], [vi("y", None)], opset=28)
    M["logic"] = model(
        [N("Equal", ["a", "b"], ["eq"], name="eq"), N("Less", ["a", "b"], ["lt"], name="lt"),
         N("LessOrEqual", ["a", "b"], ["le"], name="le"),
         N("Greater", ["a", "b"], ["gt"], name="gt"),
         N("GreaterOrEqual", ["a", "b"], ["ge"], name="ge"),
         N("And", ["eq", "lt"], ["c1"], name="and"), N("Or", ["c1", "le"], ["c2"], name="or"),
         N("Xor", ["c2", "gt"], ["c3"], name="xor"), N("Not", ["ge"], ["c4"], name="not"),
         N("IsNaN", ["a"], ["nan"], name="isnan"),
         N("IsInf", ["b"], ["inf"], name="isinf", detect_positive=0),
         N("Or", ["c3", "c4"], ["c5"], name="or2"), N("Or", ["nan", "inf"], ["c6"], name="or3"),
         N("And", ["c5", "c6"], ["cond"], name="and2"),
         N("Where", ["cond", "a", "b"], ["y"], name="where")],
        [vi("a", [2, 3]), vi("b", [3])], [vi("y", None), vi("cond", None, B)])
    M["bitwise_op18"] = model(
        [N("BitwiseAnd", ["a", "b"], ["x1"], name="band"),
         N("BitwiseOr", ["x1", "b"], ["x2"], name="bor"),
         N("BitwiseXor", ["x2", "a"], ["x3"], name="bxor"),
         N("BitwiseNot", ["x3"], ["y"], name="bnot"),
         N("BitShift", ["s", "n"], ["z"], name="shift", direction="RIGHT")],
        [vi("a", [4], I32), vi("b", [4], I32), vi("s", [2, 4], U8), vi("n", [4], U8)],
        [vi("y", None, I32), vi("z", None, U8)], opset=18)
    M["variadic"] = model(
        [N("Sum", ["a", "b", "c"], ["s"], name="sum"), N("Mean", ["a", "b", "c"], ["m"], name="mean"),
         N("Max", ["a", "b"], ["mx"], name="max"), N("Min", ["a", "b", "c"], ["mn"], name="min"),
         N("Sum", ["s"], ["s1"], name="sum1"),
         N("Add", ["s1", "m"], ["t1"], name="add1"), N("Add", ["t1", "mx"], ["t2"], name="add2"),
         N("Add", ["t2", "mn"], ["y"], name="add3")],
        [vi("a", [2, 3]), vi("b", [3]), vi("c", [2, 1])], [vi("y", None)])
    M["mod"] = model(
        [N("Mod", ["a", "b"], ["y"], name="mod"),
         N("Mod", ["c", "d"], ["z"], name="fmod", fmod=1)],
        [vi("a", [4], I64), vi("b", [4], I64), vi("c", [4]), vi("d", [4])],
        [vi("y", None, I64), vi("z", None)])
    M["cast_op19"] = model(
        [N("Cast", ["x"], ["h"], name="to_half", to=F16),
         N("Cast", ["h"], ["i"], name="to_int", to=I32, saturate=1),
         N("CastLike", ["i", "like"], ["l"], name="like"),
         N("Cast", ["l"], ["y"], name="to_bool", to=B)],
        [vi("x", [2, 3]), vi("like", [1], I64)], [vi("y", None, B)], opset=19)
    M["bool_uint8_inputs"] = model(
        [N("Not", ["m"], ["y"], name="not"),
         N("Cast", ["u"], ["f"], name="cast", to=F),
         N("Where", ["m", "f", "zero"], ["z"], name="where")],
        [vi("m", [2, 3], B), vi("u", [2, 3], U8)], [vi("y", None, B), vi("z", None)],
        [init("zero", [], value=0.0)])

    M["clip_runtime"] = model([N("Clip", ["x", "lo", "hi"], ["y"], name="clip")],
                              [vi("x", [2, 3]), vi("lo", []), vi("hi", [])], [vi("y", None)])
    M["dropout_mask"] = model([N("Dropout", ["x"], ["y", "mask"], name="drop")],
                              [vi("x", [2, 3])], [vi("y", None), vi("mask", None, B)])

    # --- normalisation -----------------------------------------------------------
    M["layernorm_stats_op17"] = model(
        [N("LayerNormalization", ["x", "g", "b"], ["y", "mean", "inv"], name="ln", axis=1)],
        [vi("x", [2, 5, 8])], [vi("y", None), vi("mean", None), vi("inv", None)],
        [init("g", [5, 8]), init("b", [5, 8])], opset=17)
    M["instancenorm"] = model(
        [N("InstanceNormalization", ["x", "s", "b"], ["y"], name="in", epsilon=1e-3)],
        [vi("x", [1, 4, 5, 5])], [vi("y", None)], [init("s", [4]), init("b", [4])])
    M["groupnorm_op18"] = model(
        [N("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=3)],
        [vi("x", [1, 6, 4, 4])], [vi("y", None)],
        [init("s", [3], value=[1.0, 2.0, 3.0]), init("b", [3], value=[0.5, 0.25, 0.125])],
        opset=18)
    M["groupnorm_op21"] = model(
        [N("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=3)],
        [vi("x", [1, 6, 4, 4])], [vi("y", None)], [init("s", [6]), init("b", [6])], opset=21)
    M["groupnorm_op18_inputs"] = model(
        [N("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=2)],
        [vi("x", [1, 6, 4, 4]), vi("s", [2]), vi("b", [2])], [vi("y", None)], opset=18)
    M["lpnorm"] = model(
        [N("LpNormalization", ["x"], ["a"], name="l1", axis=1, p=1),
         N("LpNormalization", ["a"], ["y"], name="l2")],
        [vi("x", [2, 3, 4])], [vi("y", None)])
    M["mvn"] = model([N("MeanVarianceNormalization", ["x"], ["y"], name="mvn")],
                     [vi("x", [2, 3, 4, 4])], [vi("y", None)])
    M["rmsnorm_op23"] = model(
        [N("RMSNormalization", ["x", "s"], ["y"], name="rms", axis=-1, epsilon=1e-6)],
        [vi("x", [2, 5, 8])], [vi("y", None)], [init("s", [8])], opset=23)
    M["rmsnorm_f16_op23"] = model(
        [N("RMSNormalization", ["x", "s"], ["y"], name="rms", axis=1)],
        [vi("x", [2, 5, 8], F16)], [vi("y", None, F16)],
        [tensor("s", np.ones((5, 8), np.float16), F16)], opset=23)

    # --- reductions and ops along an axis -------------------------------------------
    reds = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
            "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]
    M["reduce_op13"] = model(
        [N(r, ["x", "ax"] if r == "ReduceSum" else ["x"], ["y%d" % i], name=r.lower(),
           keepdims=0, **({} if r == "ReduceSum" else {"axes": [1]}))
         for i, r in enumerate(reds)],
        [vi("x", [2, 3, 4])], [vi("y%d" % i, None) for i in range(len(reds))], [ints("ax", [1])])
    M["reduce_op18"] = model(
        [N(r, ["x", "ax"], ["y%d" % i], name=r.lower()) for i, r in enumerate(reds)] +
        [N("ReduceSumSquare", ["x"], ["sq"], name="noop", noop_with_empty_axes=1),
         N("ReduceMax", ["x", "empty"], ["all"], name="all", keepdims=0)],
        [vi("x", [2, 3, 4])],
        [vi("y%d" % i, None) for i in range(len(reds))] + [vi("sq", None), vi("all", None)],
        [ints("ax", [-1, 0]), ints("empty", np.zeros(0, np.int64))], opset=18)
    M["axis_ops"] = model(
        [N("ArgMax", ["x"], ["am"], name="argmax", axis=1, keepdims=0),
         N("ArgMin", ["x"], ["an"], name="argmin", axis=-1, select_last_index=1),
         N("TopK", ["x", "k"], ["tv", "ti"], name="topk", axis=-1, largest=0),
         N("CumSum", ["x", "cax"], ["cs"], name="cumsum", exclusive=1, reverse=1),
         N("LogSoftmax", ["x"], ["ls"], name="logsoftmax"),
         N("Hardmax", ["x"], ["hm"], name="hardmax", axis=1)],
        [vi("x", [2, 3, 4])],
        [vi("am", None, I64), vi("an", None, I64), vi("tv", None), vi("ti", None, I64),
         vi("cs", None), vi("ls", None), vi("hm", None)],
        [ints("k", [2]), ints("cax", 1)])

    # --- convolution and pooling -----------------------------------------------------
    M["conv1d"] = model(
        [N("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1], strides=[2])],
        [vi("x", [1, 3, 32])], [vi("y", None)], [init("w", [8, 3, 3]), init("b", [8])])
    M["convtranspose"] = model(
        [N("ConvTranspose", ["x", "w"], ["y"], name="deconv", group=2, strides=[2, 2],
           pads=[1, 1, 1, 1], output_padding=[1, 1])],
        [vi("x", [1, 4, 5, 5])], [vi("y", None)], [init("w", [4, 2, 3, 3])])
    M["convtranspose_outshape"] = model(
        [N("ConvTranspose", ["x", "w", "b"], ["y"], name="deconv", strides=[2, 2],
           output_shape=[10, 10])],
        [vi("x", [1, 4, 5, 5])], [vi("y", None)], [init("w", [4, 3, 3, 3]), init("b", [3])])
    M["convtranspose_same"] = model(
        [N("ConvTranspose", ["x", "w"], ["y"], name="deconv", strides=[2, 2],
           auto_pad="SAME_UPPER")],
        [vi("x", [1, 4, 5, 5])], [vi("y", None)], [init("w", [4, 3, 3, 3])])
    M["convtranspose1d"] = model(
        [N("ConvTranspose", ["x", "w"], ["y"], name="deconv", strides=[2])],
        [vi("x", [1, 4, 7])], [vi("y", None)], [init("w", [4, 3, 4])])
    M["pool1d"] = model(
        [N("MaxPool", ["x"], ["m"], name="max", kernel_shape=[3], strides=[2], pads=[1, 1]),
         N("AveragePool", ["m"], ["y"], name="avg", kernel_shape=[2], count_include_pad=1)],
        [vi("x", [1, 2, 16])], [vi("y", None)])
    M["conv3d"] = model(
        [N("Conv", ["x", "w"], ["y"], name="conv3d", strides=[2, 1, 1], pads=[1, 0, 1, 1, 0, 2])],
        [vi("x", [1, 2, 4, 4, 4])], [vi("y", None)], [init("w", [2, 2, 3, 3, 3])])
    M["pool3d"] = model(
        [N("MaxPool", ["x"], ["y"], name="max", kernel_shape=[2, 3, 3], pads=[0, 2, 2, 1, 2, 2])],
        [vi("x", [1, 2, 4, 5, 5])], [vi("y", None)])
    M["maxpool_indices"] = model(
        [N("MaxPool", ["x"], ["y", "idx"], name="pool", kernel_shape=[2, 2], storage_order=1)],
        [vi("x", [1, 2, 8, 8])], [vi("y", None), vi("idx", None, I64)])
    M["castlike_symbolic"] = model(
        [N("CastLike", ["x", "like"], ["y"], name="cl")],
        [vi("x", [3, 4]), vi("like", ["n"], TensorProto.FLOAT16)],
        [vi("y", None, TensorProto.FLOAT16)], opset=21)
    M["empty_dims"] = model(
        [N("ReduceSum", ["x", "axes"], ["y"], name="sum", keepdims=1)],
        [vi("x", [2, 0, 4])], [vi("y", None)], [init("axes", [1], I64, value=[1])])
    M["lppool_op18"] = model(
        [N("LpPool", ["x"], ["y"], name="lp", kernel_shape=[3, 3], pads=[1, 1, 1, 1], p=3)],
        [vi("x", [1, 2, 8, 8])], [vi("y", None)], opset=18)
    M["lppool1d"] = model(
        [N("LpPool", ["x"], ["y"], name="lp", kernel_shape=[2], strides=[2])],
        [vi("x", [1, 2, 8])], [vi("y", None)])
    M["globallppool"] = model(
        [N("GlobalLpPool", ["x"], ["a"], name="l2"),
         N("GlobalLpPool", ["x"], ["b"], name="l3", p=3)],
        [vi("x", [1, 2, 4, 4])], [vi("a", None), vi("b", None)])
    M["global_pool_3d"] = model(
        [N("GlobalAveragePool", ["x"], ["a"], name="gap"),
         N("GlobalMaxPool", ["x"], ["y"], name="gmp")],
        [vi("x", [1, 2, 3, 4, 5])], [vi("y", None), vi("a", None)])

    # --- resampling --------------------------------------------------------------
    M["resize_scales"] = model(
        [N("Resize", ["x", "", "sc"], ["y"], name="resize", mode="linear",
           coordinate_transformation_mode="align_corners")],
        [vi("x", [1, 3, 4, 6])], [vi("y", None)], [init("sc", [4], value=[1, 1, 2, 1.5])])
    M["resize_sizes_op18"] = model(
        [N("Resize", ["x", "", "", "sz"], ["y"], name="resize", mode="cubic", axes=[2, 3],
           keep_aspect_ratio_policy="not_larger", cubic_coeff_a=-0.5, exclude_outside=1)],
        [vi("x", [1, 3, 4, 6])], [vi("y", None)], [ints("sz", [7, 5])], opset=18)
    M["resize_tf_crop"] = model(
        [N("Resize", ["x", "roi", "", "sz"], ["y"], name="resize",
           coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=0.5,
           nearest_mode="ceil")],
        [vi("x", [1, 3, 4, 6])], [vi("y", None)],
        [init("roi", [8], value=[0, 0, 0.1, 0.2, 1, 1, 0.9, 0.8]), ints("sz", [1, 3, 5, 5])])
    M["resize_op10"] = model([N("Resize", ["x", "sc"], ["y"], name="resize")],
                             [vi("x", [1, 3, 4, 6])], [vi("y", None)],
                             [init("sc", [4], value=[1, 1, 2, 0.5])], opset=10)
    M["upsample_op7"] = model([N("Upsample", ["x"], ["y"], name="up", scales=[1.0, 1.0, 2.0, 3.0])],
                              [vi("x", [1, 3, 4, 6])], [vi("y", None)], opset=7)
    M["upsample_op9"] = model([N("Upsample", ["x", "sc"], ["y"], name="up", mode="linear")],
                              [vi("x", [1, 3, 4, 6])], [vi("y", None)],
                              [init("sc", [4], value=[1, 1, 2, 2])], opset=9)

    # --- data movement and indexing ---------------------------------------------------
    M["pad_wrap_op19"] = model(
        [N("Pad", ["x", "p"], ["y"], name="pad", mode="wrap")],
        [vi("x", [1, 2, 5, 5])], [vi("y", None)], [ints("p", [0, 0, 1, 2, 0, 0, 3, 1])],
        opset=19)
    M["tile"] = model([N("Tile", ["x", "r"], ["y"], name="tile")],
                      [vi("x", [2, 3])], [vi("y", None)], [ints("r", [2, 3])])
    M["depth_space"] = model(
        [N("DepthToSpace", ["x"], ["a"], name="d2s", blocksize=2),
         N("DepthToSpace", ["x"], ["b"], name="d2s_crd", blocksize=2, mode="CRD"),
         N("SpaceToDepth", ["a"], ["y"], name="s2d", blocksize=2)],
        [vi("x", [1, 8, 3, 4])], [vi("y", None), vi("b", None)])
    M["space_to_depth_op28"] = model(
        [N("SpaceToDepth", ["x"], ["y"], name="s2d", blocksize=2, mode="CRD")],
        [vi("x", [1, 2, 4, 6])], [vi("y", None)], opset=28)
    M["gather_scatter_op18"] = model(
        [N("GatherElements", ["x", "gi"], ["ge"], name="ge", axis=1),
         N("GatherND", ["x", "ni"], ["gn"], name="gnd", batch_dims=1),
         N("ScatterElements", ["x", "gi", "ge"], ["se"], name="se", axis=1, reduction="add"),
         N("ScatterND", ["x", "si", "su"], ["y"], name="snd", reduction="mul")],
        [vi("x", [2, 3, 4]), vi("gi", [2, 2, 4], I64), vi("su", [2, 4])],
        [vi("y", None), vi("ge", None), vi("gn", None), vi("se", None)],
        [ints("ni", [[1], [2]]), ints("si", [[0, 1], [1, 2]])], opset=18)
    M["onehot"] = model(
        [N("OneHot", ["i", "depth", "vals"], ["y"], name="onehot")],
        [vi("i", [2, 3], I64)], [vi("y", None)],
        [ints("depth", 5), init("vals", [2], value=[0.0, 1.0])])
    M["trilu"] = model([N("Trilu", ["x", "k"], ["y"], name="trilu", upper=0)],
                       [vi("x", [2, 4, 5])], [vi("y", None)], [ints("k", -1)], opset=14)
    M["trilu_runtime_k"] = model([N("Trilu", ["x", "k"], ["y"], name="trilu")],
                                 [vi("x", [2, 4, 5]), vi("k", [], I64)], [vi("y", None)],
                                 opset=14)
    M["eyelike"] = model(
        [N("EyeLike", ["x"], ["e"], name="eye", k=1),
         N("Add", ["x", "e"], ["a"], name="add"),
         N("EyeLike", ["big"], ["y"], name="bigeye", dtype=F)],
        [vi("x", [3, 4]), vi("big", [300, 400])], [vi("a", None), vi("y", None)])
    M["constant_of_shape_big"] = model(
        [N("ConstantOfShape", ["s"], ["y"], name="fill",
           value=helper.make_tensor("v", F, [1], [-1.5]))],
        [], [vi("y", None)], [ints("s", [1, 1, 300, 300])])
    M["fold_more"] = model(
        [N("Shape", ["x"], ["s"], name="shape", start=1),
         N("Size", ["x"], ["n"], name="size"),
         N("Unsqueeze", ["n", "zero_v"], ["n1"], name="unsq"),
         N("Cast", ["s"], ["sb"], name="to_bool", to=B),
         N("Not", ["sb"], ["nbb"], name="not"),
         N("Cast", ["nbb"], ["nb"], name="from_bool", to=I64),
         N("Equal", ["s", "four"], ["eq"], name="eq"),
         N("Where", ["eq", "s", "one"], ["w"], name="where"),
         N("Less", ["w", "four"], ["lt"], name="less"),
         N("Greater", ["w", "one"], ["gt"], name="greater"),
         N("Mod", ["s", "five"], ["m"], name="mod"),
         N("Min", ["w", "s"], ["mn"], name="min"),
         N("Max", ["mn", "one"], ["mx"], name="max"),
         N("ReduceMax", ["mx"], ["rmax"], name="rmax", keepdims=1),
         N("ReduceMin", ["mx"], ["rmin"], name="rmin", keepdims=1),
         N("Range", ["r0", "r3", "r1"], ["rng"], name="range"),
         N("Tile", ["rmax", "two"], ["tl"], name="tile"),
         N("Trilu", ["mat"], ["tr"], name="trilu"),
         N("GatherElements", ["rng", "gi"], ["ge"], name="ge"),
         N("GatherND", ["mat", "ni"], ["gn"], name="gnd"),
         N("ScatterND", ["rng", "si", "su"], ["sn"], name="snd"),
         N("ReduceSum", ["tr"], ["trs"], name="trs", keepdims=0),
         N("Transpose", ["mat"], ["mt"], name="tp"),
         N("ArgMax", ["mt"], ["am"], name="argmax", keepdims=0),
         N("CumSum", ["rng", "zero"], ["cs"], name="cumsum"),
         N("Split", ["cs"], ["sp0", "sp1"], name="split", axis=0, num_outputs=2),
         N("Expand", ["one", "two_d"], ["ex"], name="expand"),
         N("ConstantOfShape", ["two_d"], ["cz"], name="cos"),
         N("OneHot", ["ohi", "r3", "ohv"], ["oh"], name="onehot"),
         N("ReduceSum", ["oh", "zero_v"], ["ohs"], name="ohs", keepdims=0),
         N("Concat", ["tl", "m", "n1", "nb", "rmin", "ge", "gn", "sn", "am", "sp1", "ex", "ohs"],
           ["all"],
           name="cat", axis=0),
         N("Slice", ["all", "zero_v", "one"], ["first"], name="first"),
         N("Concat", ["first", "minus1"], ["target"], name="target", axis=0),
         N("Reshape", ["x", "target"], ["y"], name="reshape")],
        [vi("x", [2, 4, 16])], [vi("y", None), vi("all", None, I64)],
        [ints("four", [4]), ints("one", [1]), ints("five", 5), ints("r0", 0), ints("r3", 3),
         ints("r1", 1), ints("two", [2]), ints("mat", [[1, 2, 3], [4, 5, 6]]),
         ints("gi", [2, 0]), ints("ni", [[1, 2]]), ints("si", [[1]]), ints("su", [7]),
         ints("zero", 0), ints("two_d", [2]), ints("ohi", [1]),
         ints("ohv", [0, 1]), ints("minus1", [-1]), ints("zero_v", [0])], opset=18)
    M["fold_unary_consts"] = model(
        [N("Exp", ["c"], ["e"], name="exp"), N("Relu", ["e"], ["r"], name="relu"),
         N("Sigmoid", ["r"], ["s"], name="sig"), N("LeakyRelu", ["s"], ["l"], name="leaky"),
         N("Round", ["l"], ["rd"], name="round"), N("IsNaN", ["rd"], ["nan"], name="isnan"),
         N("Where", ["nan", "c", "rd"], ["w"], name="where"),
         N("Add", ["x", "w"], ["y"], name="add")],
        [vi("x", [2, 4])], [vi("y", None)], [init("c", [4], value=[0.5, -100.0, 2.0, 3.5])])

    M["fold_clip"] = model(
        [N("Clip", ["c", "lo", ""], ["cl"], name="clip_min"),
         N("Clip", ["cl", "", "hi"], ["w"], name="clip_max"),
         N("Add", ["x", "w"], ["y"], name="add")],
        [vi("x", [3])], [vi("y", None)],
        [init("c", [3], value=[-2.0, 0.5, 3.0]), init("lo", [], value=[0.0]),
         init("hi", [], value=[2.5])])

    # --- matrix -------------------------------------------------------------------
    def es(name, eq, shapes, opset=13):
        ins = ["x%d" % i for i in range(len(shapes))]
        M[name] = model([N("Einsum", ins, ["y"], name="einsum", equation=eq)],
                        [vi(n, s) for n, s in zip(ins, shapes)], [vi("y", None)], opset=opset)
    es("einsum_bmm", "bij,bjk->bik", [[2, 3, 4], [2, 4, 5]])
    es("einsum_trace", "ii->", [[4, 4]])
    es("einsum_diag", "bii->bi", [[2, 3, 3]])
    es("einsum_ellipsis", "...ij,...jk->...ik", [[2, 1, 3, 4], [5, 4, 6]])
    es("einsum_outer", "i,j->ij", [[3], [4]])
    es("einsum_implicit", "ij,jk", [[3, 4], [4, 5]])
    es("einsum_transpose", "ij -> ji", [[3, 4]])
    es("einsum_three", "ij,jk,kl->il", [[2, 3], [3, 4], [4, 5]])
    es("einsum_attention", "bhqd,bhkd->bhqk", [[1, 2, 5, 8], [1, 2, 6, 8]], opset=28)

    # --- transformer operators ------------------------------------------------------
    M["attention_op23"] = model(
        [N("Attention", ["q", "k", "v"], ["y"], name="attn", is_causal=1)],
        [vi("q", [2, 4, 5, 8]), vi("k", [2, 2, 6, 8]), vi("v", [2, 2, 6, 3])], [vi("y", None)],
        opset=23)
    M["attention_3d_mask_op23"] = model(
        [N("Attention", ["q", "k", "v", "mask"], ["y"], name="attn", q_num_heads=4,
           kv_num_heads=2, scale=0.25)],
        [vi("q", [2, 5, 32]), vi("k", [2, 6, 16]), vi("v", [2, 6, 16]), vi("mask", [5, 4], B)],
        [vi("y", None)], opset=23)
    M["attention_cache_op23"] = model(
        [N("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "present_k", "present_v"],
           name="attn", is_causal=1)],
        [vi("q", [1, 2, 3, 4]), vi("k", [1, 2, 3, 4]), vi("v", [1, 2, 3, 4]),
         vi("pk", [1, 2, 2, 4]), vi("pv", [1, 2, 2, 4])],
        [vi("y", None), vi("present_k", None), vi("present_v", None)], opset=23)
    M["attention_softcap_op24"] = model(
        [N("Attention", ["q", "k", "v", "bias"], ["y", "", "", "qk"], name="attn", softcap=30.0,
           qk_matmul_output_mode=3, softmax_precision=TensorProto.FLOAT)],
        [vi("q", [1, 2, 3, 4], F16), vi("k", [1, 2, 3, 4], F16), vi("v", [1, 2, 3, 4], F16),
         vi("bias", [1, 1, 3, 3], F16)],
        [vi("y", None, F16), vi("qk", None, F16)], opset=24)
    M["attention_window_op25"] = model(
        [N("Attention", ["q", "k", "v"], ["y"], name="attn", left_window_size=2,
           right_window_size=0)],
        [vi("q", [1, 2, 6, 4]), vi("k", [1, 2, 6, 4]), vi("v", [1, 2, 6, 4])], [vi("y", None)],
        opset=25)
    M["rotary_op23"] = model(
        [N("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], name="rope")],
        [vi("x", [1, 2, 3, 8]), vi("pos", [1, 3], I64)], [vi("y", None)],
        [init("cos", [10, 4]), init("sin", [10, 4])], opset=23)
    M["rotary_3d_op23"] = model(
        [N("RotaryEmbedding", ["x", "cos", "sin"], ["y"], name="rope", interleaved=1,
           num_heads=2, rotary_embedding_dim=4)],
        [vi("x", [1, 3, 16])], [vi("y", None)], [init("cos", [1, 3, 2]), init("sin", [1, 3, 2])],
        opset=23)

    # --- quantisation ---------------------------------------------------------------
    M["qdq_op21"] = model(
        [N("QuantizeLinear", ["x", "s", "zp"], ["q"], name="quant", axis=1),
         N("DequantizeLinear", ["q", "s", "zp"], ["y"], name="dequant", axis=1)],
        [vi("x", [1, 4, 3, 3])], [vi("y", None), vi("q", None, U8)],
        [init("s", [4], value=[0.1, 0.2, 0.3, 0.4]),
         tensor("zp", np.array([0, 1, 2, 3], np.uint8), U8)], opset=21)
    M["quant_blocked_op21"] = model(
        [N("QuantizeLinear", ["x", "s"], ["q"], name="quant", axis=1, block_size=4,
           output_dtype=I8)],
        [vi("x", [4, 8])], [vi("q", None, I8)], [init("s", [4, 2])], opset=21)
    M["dequant_weight_op23"] = model(
        [N("DequantizeLinear", ["w", "s"], ["wf"], name="dequant", output_dtype=F16),
         N("MatMul", ["x", "wf"], ["y"], name="mm")],
        [vi("x", [2, 8], F16)], [vi("y", None, F16)],
        [tensor("w", np.arange(32, dtype=np.int8).reshape(8, 4), I8), init("s", [], value=0.05)],
        opset=23)

    # --- control flow -----------------------------------------------------------------
    then_g = helper.make_graph([N("Relu", ["x"], ["then_y"], name="then_relu")], "then", [],
                               [vi("then_y", None)])
    else_g = helper.make_graph([N("Sigmoid", ["x"], ["else_y"], name="else_sig")], "else", [],
                               [vi("else_y", None)])
    M["if_const"] = model(
        [N("Size", ["x"], ["n"], name="size"),
         N("Equal", ["n", "six"], ["c"], name="eq"),
         N("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g)],
        [vi("x", [2, 3])], [vi("y", None)], [ints("six", 6)])
    inner = helper.make_graph(
        [N("If", ["c2"], ["iy"], name="inner_if",
           then_branch=helper.make_graph([N("Neg", ["w"], ["t2"], name="neg")], "t2", [],
                                         [vi("t2", None)]),
           else_branch=helper.make_graph([N("Mul", ["x", "w"], ["e2"], name="mul")], "e2", [],
                                         [vi("e2", None)]))],
        "outer_then", [], [vi("iy", None)])
    M["if_nested"] = model(
        [N("Constant", [], ["c"], name="c", value=helper.make_tensor("cv", B, [], [1])),
         N("Constant", [], ["c2"], name="c2", value=helper.make_tensor("cv2", B, [1], [0])),
         N("If", ["c"], ["y"], name="if", then_branch=inner, else_branch=else_g)],
        [vi("x", [2, 3])], [vi("y", None)], [init("w", [2, 3])])
    # A branch whose output is an outer value, unchanged.
    M["if_passthrough"] = model(
        [N("Constant", [], ["c"], name="c", value=helper.make_tensor("cv", B, [], [1])),
         N("If", ["c"], ["wb"], name="if",
           then_branch=helper.make_graph([], "pass", [], [vi("w", None)]),
           else_branch=else_g),
         N("Add", ["x", "wb"], ["y"], name="add")],
        [vi("x", [2, 3])], [vi("y", None)], [init("w", [2, 3])])
    # Patterns the importer rewrites (opsched_graph_rewrite_patterns), as
    # exporters write them, and near misses it must leave alone.
    def c(name, v):
        return init(name, [], value=[v])
    M["patterns"] = model(
        [  # SiLU, both operand orders
         N("Sigmoid", ["x"], ["s1"], name="sig1"), N("Mul", ["x", "s1"], ["silu"], name="silu"),
         N("Sigmoid", ["x"], ["s2"], name="sig2"), N("Mul", ["s2", "x"], ["silu_r"], name="silu_r"),
         # HardSwish
         N("HardSigmoid", ["x"], ["h1"], name="hsig", alpha=1.0 / 6, beta=0.5),
         N("Mul", ["x", "h1"], ["hswish"], name="hswish"),
         # GELU as torch's legacy exporter writes it: x * (1 + erf(x / sqrt2)) * 0.5
         N("Div", ["x", "sqrt2"], ["g1"], name="gdiv"), N("Erf", ["g1"], ["g2"], name="gerf"),
         N("Add", ["g2", "one"], ["g3"], name="gadd"), N("Mul", ["x", "g3"], ["g4"], name="gmul"),
         N("Mul", ["g4", "half"], ["gelu"], name="gelu"),
         # GELU as Hugging Face writes it: (x * 0.5) * (1 + erf(x * (1/sqrt2)))
         N("Mul", ["x", "half"], ["e1"], name="ehalf"), N("Mul", ["x", "rsqrt2"], ["e2"], name="escale"),
         N("Erf", ["e2"], ["e3"], name="eerf"), N("Add", ["one", "e3"], ["e4"], name="eadd"),
         N("Mul", ["e1", "e4"], ["gelu_hf"], name="gelu_hf"),
         # GELU's tanh form, as GPT-2 writes it
         N("Mul", ["half", "x"], ["t1"], name="thalf"), N("Pow", ["x", "three"], ["t2"], name="tpow"),
         N("Mul", ["c044", "t2"], ["t3"], name="tcube"), N("Add", ["x", "t3"], ["t4"], name="tadd"),
         N("Mul", ["t4", "csqrt2pi"], ["t5"], name="tscale"), N("Tanh", ["t5"], ["t6"], name="ttanh"),
         N("Add", ["t6", "one"], ["t7"], name="tadd1"), N("Mul", ["t1", "t7"], ["gelu_tanh"], name="gelu_tanh"),
         # near misses: the Sigmoid is also an output; HardSigmoid's default
         # alpha (0.2) is not HardSwish's; a GELU with 1.5 for sqrt 2
         N("Sigmoid", ["x"], ["s3"], name="sig3"), N("Mul", ["x", "s3"], ["silu_shared"], name="silu_shared"),
         N("HardSigmoid", ["x"], ["h2"], name="hsig2"), N("Mul", ["x", "h2"], ["not_hswish"], name="not_hswish"),
         N("Div", ["x", "c15"], ["n1"], name="ndiv"), N("Erf", ["n1"], ["n2"], name="nerf"),
         N("Add", ["n2", "one"], ["n3"], name="nadd"), N("Mul", ["x", "n3"], ["n4"], name="nmul"),
         N("Mul", ["n4", "half"], ["not_gelu"], name="not_gelu")],
        [vi("x", [2, 3, 8])],
        [vi(n, None) for n in ["silu", "silu_r", "hswish", "gelu", "gelu_hf", "gelu_tanh",
                               "silu_shared", "s3", "not_hswish", "not_gelu"]],
        [c("sqrt2", 1.4142135381698608), c("rsqrt2", 0.7071067690849304), c("one", 1.0),
         c("half", 0.5), c("three", 3.0), c("c044", 0.044715), c("csqrt2pi", 0.7978845834732056),
         c("c15", 1.5)])
    # Layer scales (ConvNeXt's, CaiT's): a product, its bias, a Transpose to
    # channels first, a per-channel Mul and the residual Add; the same
    # without the Transpose; and a near miss whose scale varies along the
    # rows, which must stay a Mul.  x [1, 4, 4, 16] is NHWC-shaped.
    M["layer_scale"] = model(
        [N("Transpose", ["x"], ["res"], name="res", perm=[0, 3, 1, 2]),
         N("MatMul", ["x", "w1"], ["p1"], name="mm1"), N("Add", ["p1", "b1"], ["q1"], name="add1"),
         N("Transpose", ["q1"], ["t1"], name="tr1", perm=[0, 3, 1, 2]),
         N("Mul", ["t1", "g1"], ["s1"], name="scale1"),
         N("Add", ["s1", "res"], ["block"], name="residual"),
         N("MatMul", ["x", "w2"], ["p2"], name="mm2"), N("Add", ["b2", "p2"], ["q2"], name="add2"),
         N("Mul", ["g2", "q2"], ["head"], name="scale2"),
         N("MatMul", ["x", "w3"], ["p3"], name="mm3"), N("Add", ["p3", "b3"], ["q3"], name="add3"),
         N("Mul", ["q3", "g3"], ["rows"], name="scale3")],
        [vi("x", [1, 4, 4, 16])], [vi(n, None) for n in ["block", "head", "rows"]],
        [init("w1", [16, 16]), init("b1", [16]), init("g1", [16, 1, 1]),
         init("w2", [16, 8]), init("b2", [8]), init("g2", [8]),
         init("w3", [16, 8]), init("b3", [8]), init("g3", [4, 1])])
    # Attention as exporters write it (the rewrite to one Attention node),
    # x [B=2, S=6, 8] with 2 heads of 4: torch's SDPA decomposition (the
    # Transposes into Q, K and V and out, sqrt-scale Muls on Q and K^T, a
    # mask Add, Softmax, Where(IsNaN) for fully masked rows: batch 1 is all
    # -inf), nn.MultiheadAttention's 3-D [S, B*H, D] form, the legacy
    # encoder form (two Transposes into K^T, a Div of the scores, a 2-D
    # causal bias, no Transpose out), and a near miss whose probabilities
    # are also an output.
    neg = float("-inf")
    mask4 = np.zeros((2, 1, 1, 6), np.float32)
    mask4[0, 0, 0, 4:] = neg
    mask4[1] = neg
    causal = np.triu(np.full((6, 6), neg, np.float32), 1)
    def proj(tag, w, shape, perm):
        return [N("MatMul", ["x", w], [tag + "_p"], name=tag + "_mm"),
                N("Reshape", [tag + "_p", shape], [tag + "_r"], name=tag + "_rs"),
                N("Transpose", [tag + "_r"], [tag + "_t"], name=tag + "_tr", perm=perm)]
    att = []
    att += proj("q", "wq", "s4", [0, 2, 1, 3]) + [N("Mul", ["q_t", "sq"], ["q_s"], name="q_sc")]
    att += proj("k", "wk", "s4", [0, 2, 3, 1]) + [N("Mul", ["k_t", "sq"], ["k_s"], name="k_sc")]
    att += proj("v", "wv", "s4", [0, 2, 1, 3])
    att += [N("MatMul", ["q_s", "k_s"], ["sc"], name="qk"),
            N("Add", ["sc", "mask4"], ["sm_in"], name="mask_add"),
            N("Softmax", ["sm_in"], ["pr"], name="sdpa/Softmax", axis=-1),
            N("IsNaN", ["pr"], ["nan"], name="isnan"),
            N("Where", ["nan", "zero", "pr"], ["pw"], name="nan_zero"),
            N("MatMul", ["pw", "v_t"], ["o4"], name="pv"),
            N("Transpose", ["o4"], ["o4t"], name="out_tr", perm=[0, 2, 1, 3]),
            N("Reshape", ["o4t", "s3"], ["y_sdpa"], name="y_sdpa")]
    # nn.MultiheadAttention: [S, B*H, D], Q divided, K^T as Transpose(1, 2, 0)
    att += [N("Transpose", ["x"], ["xt"], name="xt", perm=[1, 0, 2])]
    for tag, w in (("mq", "wq2"), ("mk", "wk2"), ("mv", "wv2")):
        att += [N("MatMul", ["xt", w], [tag + "_p"], name=tag + "_mm"),
                N("Reshape", [tag + "_p", "s_mha"], [tag + "_r"], name=tag + "_rs")]
    att += [N("Transpose", ["mq_r"], ["mq_t"], name="mq_tr", perm=[1, 0, 2]),
            N("Div", ["mq_t", "two"], ["mq_s"], name="mq_div"),
            N("Transpose", ["mk_r"], ["mk_t"], name="mk_tr", perm=[1, 2, 0]),
            N("Transpose", ["mv_r"], ["mv_t"], name="mv_tr", perm=[1, 0, 2]),
            N("MatMul", ["mq_s", "mk_t"], ["msc"], name="mqk"),
            N("Softmax", ["msc"], ["mpr"], name="mha/Softmax", axis=-1),
            N("MatMul", ["mpr", "mv_t"], ["mo"], name="mpv"),
            N("Transpose", ["mo"], ["mot"], name="mo_tr", perm=[1, 0, 2]),
            N("Reshape", ["mot", "s_mha_out"], ["y_mha"], name="y_mha")]
    # the legacy encoder: K through two Transposes, the scores divided, a causal bias
    att += proj("lq", "wq", "s4", [0, 2, 1, 3]) + proj("lk", "wk2", "s4", [0, 2, 1, 3])
    att += proj("lv", "wv", "s4", [0, 2, 1, 3])
    att += [N("Transpose", ["lk_t"], ["lk_tt"], name="lk_tr2", perm=[0, 1, 3, 2]),
            N("MatMul", ["lq_t", "lk_tt"], ["lsc"], name="lqk"),
            N("Div", ["lsc", "two"], ["lsd"], name="ldiv"),
            N("Add", ["causal", "lsd"], ["lsm"], name="lmask"),
            N("Softmax", ["lsm"], ["lpr"], name="legacy/Softmax", axis=3),
            N("MatMul", ["lpr", "lv_t"], ["y_legacy"], name="lpv")]
    # near miss: the probabilities are an output too
    att += proj("nq", "wq2", "s4", [0, 2, 1, 3]) + proj("nk", "wk", "s4", [0, 2, 3, 1])
    att += proj("nv", "wv2", "s4", [0, 2, 1, 3])
    att += [N("MatMul", ["nq_t", "nk_t"], ["nsc"], name="nqk"),
            N("Softmax", ["nsc"], ["p_shared"], name="near/Softmax", axis=-1),
            N("MatMul", ["p_shared", "nv_t"], ["y_near"], name="npv")]
    M["attention"] = model(
        att, [vi("x", [2, 6, 8])],
        [vi(n, None) for n in ["y_sdpa", "y_mha", "y_legacy", "y_near", "p_shared"]],
        [init("wq", [8, 8]), init("wk", [8, 8]), init("wv", [8, 8]),
         init("wq2", [8, 8]), init("wk2", [8, 8]), init("wv2", [8, 8]),
         init("sq", [], value=[0.5 ** 0.5]), init("two", [], value=[2.0]),
         init("zero", [], value=[0.0]), init("mask4", [2, 1, 1, 6], value=mask4),
         init("causal", [6, 6], value=causal),
         ints("s4", [2, 6, 2, 4]), ints("s3", [2, 6, 8]), ints("s_mha", [6, 4, 4]),
         ints("s_mha_out", [6, 2, 8])], opset=14)
    # Packed projections (the views after the attention rewrite), x [2, 6, 8],
    # 2 heads of 4: GPT-2's form (Reshape to rows, Gemm to [12, 24] with a
    # bias, Reshape back, Split in three, heads by Reshape and Transpose, the
    # out projection a transposed-B Gemm between Reshapes, the residual Add),
    # timm's form (qkv to [2, 6, 3, 2, 4], Transpose (2, 0, 3, 1, 4), Gather
    # 0, 1, 2 on axis 0) and nn.MultiheadAttention's [1, S, C] -> [S, 1, C]
    # Transpose, which only moves an axis of one element.
    pk = [N("Reshape", ["x", "rows"], ["xr"], name="g_rows"),
          N("Gemm", ["xr", "w_qkv", "b_qkv"], ["qkv"], name="g_qkv"),
          N("Reshape", ["qkv", "s_qkv"], ["qkv3"], name="g_qkv3"),
          N("Split", ["qkv3", "split3"], ["gq", "gk", "gv"], name="g_split", axis=2)]
    for t, perm in (("gq", [0, 2, 1, 3]), ("gk", [0, 2, 3, 1]), ("gv", [0, 2, 1, 3])):
        pk += [N("Reshape", [t, "s4"], [t + "_h"], name=t + "_rs"),
               N("Transpose", [t + "_h"], [t + "_t"], name=t + "_tr", perm=perm)]
    pk += [N("MatMul", ["gq_t", "gk_t"], ["g_sc"], name="g_qk"),
           N("Mul", ["g_sc", "half"], ["g_ss"], name="g_scale"),
           N("Softmax", ["g_ss"], ["g_p"], name="gpt/Softmax", axis=-1),
           N("MatMul", ["g_p", "gv_t"], ["g_o"], name="g_pv"),
           N("Transpose", ["g_o"], ["g_ot"], name="g_otr", perm=[0, 2, 1, 3]),
           N("Reshape", ["g_ot", "rows"], ["g_or"], name="g_orows"),
           N("Gemm", ["g_or", "w_out", "b_out"], ["g_proj"], name="g_out", transB=1),
           N("Reshape", ["g_proj", "s3"], ["g_y"], name="g_y3"),
           N("Add", ["x", "g_y"], ["y_gpt"], name="g_res")]
    pk += [N("MatMul", ["x", "w_qkv"], ["t_qkv"], name="t_qkv"),
           N("Reshape", ["t_qkv", "s5"], ["t5"], name="t_rs"),
           N("Transpose", ["t5"], ["t5t"], name="t_tr", perm=[2, 0, 3, 1, 4])]
    for j, t in enumerate(("tq", "tk", "tv")):
        pk += [N("Gather", ["t5t", "i%d" % j], [t], name="t_gather%d" % j, axis=0)]
    pk += [N("Transpose", ["tk"], ["tk_t"], name="tk_tr", perm=[0, 1, 3, 2]),
           N("MatMul", ["tq", "tk_t"], ["t_sc"], name="t_qk"),
           N("Mul", ["t_sc", "half"], ["t_ss"], name="t_scale"),
           N("Softmax", ["t_ss"], ["t_p"], name="timm/Softmax", axis=-1),
           N("MatMul", ["t_p", "tv"], ["t_o"], name="t_pv"),
           N("Transpose", ["t_o"], ["t_ot"], name="t_otr", perm=[0, 2, 1, 3]),
           N("Reshape", ["t_ot", "s3"], ["y_timm"], name="t_y")]
    pk += [N("Slice", ["x", "zero1", "one1", "zero1"], ["x1"], name="x1"),
           N("Transpose", ["x1"], ["y_unit"], name="unit_tr", perm=[1, 0, 2])]
    M["packed_attention"] = model(
        pk, [vi("x", [2, 6, 8])], [vi(n, None) for n in ["y_gpt", "y_timm", "y_unit"]],
        [init("w_qkv", [8, 24]), init("b_qkv", [24]), init("w_out", [8, 8]), init("b_out", [8]),
         init("half", [], value=[0.5]), ints("rows", [12, 8]), ints("s_qkv", [2, 6, 24]),
         ints("split3", [8, 8, 8]), ints("s4", [2, 6, 2, 4]), ints("s3", [2, 6, 8]),
         ints("s5", [2, 6, 3, 2, 4]), ints("i0", 0), ints("i1", 1), ints("i2", 2),
         ints("zero1", [0]), ints("one1", [1])], opset=14)
    M["reduce_noop_fold"] = model(
        [N("ReduceSumSquare", ["c"], ["sq"], name="sq", noop_with_empty_axes=1),
         N("ReduceL1", ["c", "none"], ["l1"], name="l1", noop_with_empty_axes=1),
         N("Add", ["sq", "l1"], ["s"], name="sum"),
         N("Add", ["x", "s"], ["y"], name="add")],
        [vi("x", [3])], [vi("y", None)],
        [init("c", [3], value=[-1.0, 2.0, -3.0]), ints("none", np.zeros(0, np.int64))], opset=18)

    # --- LSTM: unrolled over 2 steps, hidden size 4, input size 3, batch 1 ------------
    def lstm_w(d):
        return [init("W", [d, 16, 3]), init("R", [d, 16, 4])]
    M["lstm_forward_op14"] = model(
        [N("LSTM", ["x", "W", "R", "B"], ["y", "y_h"], name="lstm", hidden_size=4)],
        [vi("x", [2, 1, 3])], [vi("y", None), vi("y_h", None)],
        lstm_w(1) + [init("B", [1, 32])], opset=14)
    M["lstm_reverse_op7"] = model(
        [N("LSTM", ["x", "W", "R"], ["", "y_h"], name="lstm", hidden_size=4,
           direction="reverse")],
        [vi("x", [2, 1, 3])], [vi("y_h", None)], lstm_w(1), opset=7)
    M["lstm_bidirectional_op22"] = model(
        [N("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["y", "y_h", "y_c"], name="lstm",
           hidden_size=4, direction="bidirectional")],
        [vi("x", [2, 1, 3])], [vi("y", None), vi("y_h", None), vi("y_c", None)],
        lstm_w(2) + [init("B", [2, 32]), init("h0", [2, 1, 4]), init("c0", [2, 1, 4])],
        opset=22)
    M["lstm_layout1_op14"] = model(
        [N("LSTM", ["x", "W", "R", "", "", "h0"], ["y", "y_h"], name="lstm", hidden_size=4,
           layout=1)],
        [vi("x", [1, 2, 3]), vi("h0", [1, 1, 4])], [vi("y", None), vi("y_h", None)], lstm_w(1),
        opset=14)
    return M


def bad_models(small):
    """name -> bytes of files the importer must refuse."""
    N = helper.make_node
    B = {}
    good = small["conv_basic"].SerializeToString()
    B["empty"] = b""
    B["truncated"] = good[: len(good) // 2]
    B["random"] = bytes(random.Random(7).getrandbits(8) for _ in range(4096))
    B["text"] = b"This is not an ONNX model, just a text file.\n" * 20
    B["cycle"] = model(
        [N("Relu", ["b"], ["a"], name="relu_a"), N("Relu", ["a"], ["b"], name="relu_b"),
         N("Add", ["x", "b"], ["y"], name="add")],
        [vi("x", [2, 3])], [vi("y", None)]).SerializeToString()
    B["unsupported_op"] = model(
        [N("NonMaxSuppression", ["boxes", "scores"], ["y"], name="nms_1")],
        [vi("boxes", [1, 10, 4]), vi("scores", [1, 1, 10])], [vi("y", None)],
        opset=17).SerializeToString()
    B["opset_too_new"] = model([N("Relu", ["x"], ["y"], name="r")], [vi("x", [2, 3])],
                               [vi("y", None)], opset=29).SerializeToString()
    B["conv_groups"] = model(
        [N("Conv", ["x", "w"], ["y"], name="bad_conv", group=2)],
        [vi("x", [1, 3, 8, 8])], [vi("y", None)], [init("w", [4, 1, 3, 3])]).SerializeToString()
    B["kernel_too_big"] = model(
        [N("Conv", ["x", "w"], ["y"], name="big_kernel", pads=[1, 1, 1, 1])],
        [vi("x", [1, 3, 4, 4])], [vi("y", None)], [init("w", [4, 3, 7, 7])]).SerializeToString()
    B["undefined_input"] = model(
        [N("Relu", ["nowhere"], ["y"], name="relu")],
        [vi("x", [2, 3])], [vi("y", None)]).SerializeToString()
    # Subgraphs nested 40 deep (each level a graph, a node, an attribute):
    # refused before the unpacker could recurse that far.
    leaf = helper.make_graph([N("Relu", ["x"], ["y"])], "leaf", [], [vi("y", [1])])
    inner = leaf
    for level in range(40):
        inner = helper.make_graph(
            [N("If", ["c"], ["y"], name="if%d" % level, then_branch=inner, else_branch=leaf)],
            "level%d" % level, [], [vi("y", [1])])
    B["deep_nesting"] = model(inner.node, [vi("c", [1], TensorProto.BOOL)],
                              [vi("y", [1])]).SerializeToString()
    B.update(bad_op_models())
    m = small["conv_basic"]
    no_ir = onnx.ModelProto()
    no_ir.CopyFrom(m)
    no_ir.ClearField("ir_version")
    B["no_ir_version"] = no_ir.SerializeToString()
    bad_raw = onnx.ModelProto()
    bad_raw.CopyFrom(m)
    bad_raw.graph.initializer[0].raw_data = bad_raw.graph.initializer[0].raw_data[:-4]
    B["short_raw_data"] = bad_raw.SerializeToString()
    huge = onnx.ModelProto()
    huge.CopyFrom(m)
    del huge.graph.initializer[0].dims[:]
    huge.graph.initializer[0].dims.extend([1 << 40, 1 << 40])
    B["huge_dims"] = huge.SerializeToString()
    return B


def bad_op_models():
    """Operator models that must be refused, with messages the tests check."""
    N = helper.make_node
    B = {}
    BOOL = TensorProto.BOOL

    def one(name, nodes, inputs, outputs, inits=(), opset=13):
        B[name] = model(nodes, inputs, outputs, inits, opset=opset).SerializeToString()

    one("conv4d", [N("Conv", ["x", "w"], ["y"], name="conv4d")],
        [vi("x", [1, 2, 4, 4, 4, 4])], [vi("y", None)], [init("w", [2, 2, 3, 3, 3, 3])])
    one("double_input", [N("Relu", ["x"], ["y"], name="relu")],
        [vi("x", [2, 3], TensorProto.DOUBLE)], [vi("y", None, TensorProto.DOUBLE)])
    one("cast_double", [N("Cast", ["x"], ["xd"], name="cast", to=TensorProto.DOUBLE),
                        N("Neg", ["xd"], ["y"], name="neg")],
        [vi("x", [2, 3])], [vi("y", None)])
    one("cumsum_runtime_axis", [N("CumSum", ["x", "ax"], ["y"], name="cumsum")],
        [vi("x", [2, 3]), vi("ax", [], TensorProto.INT64)], [vi("y", None)])
    one("range_runtime", [N("Range", ["a", "b", "c"], ["y"], name="range")],
        [vi("a", [], I64), vi("b", [], I64), vi("c", [], I64)], [vi("y", None, I64)])
    one("if_runtime",
        [N("If", ["c"], ["y"], name="if_rt",
           then_branch=helper.make_graph([N("Relu", ["x"], ["t"])], "t", [], [vi("t", None)]),
           else_branch=helper.make_graph([N("Neg", ["x"], ["e"])], "e", [], [vi("e", None)]))],
        [vi("c", [], BOOL), vi("x", [2])], [vi("y", None)])
    body = helper.make_graph([N("Identity", ["cond_in"], ["cond_out"])], "body",
                             [vi("i", [], I64), vi("cond_in", [], BOOL)], [vi("cond_out", [], BOOL)])
    one("loop", [N("Loop", ["n", "c"], [], name="loop", body=body)],
        [vi("n", [], I64), vi("c", [], BOOL)], [vi("c", None, BOOL)])
    one("random_normal", [N("RandomNormal", [], ["y"], name="rnd", shape=[2, 3])], [], [vi("y", None)])
    one("nonzero", [N("NonZero", ["x"], ["y"], name="nz")], [vi("x", [2, 3])],
        [vi("y", None, I64)])
    one("sequence", [N("SequenceEmpty", [], ["y"], name="seq")], [], [vi("y", None)])
    one("attention_cache",
        [N("Attention", ["q", "k", "v", "", "pk", "pv", "n"], ["y"], name="attn")],
        [vi("q", [1, 2, 3, 4]), vi("k", [1, 2, 3, 4]), vi("v", [1, 2, 3, 4]),
         vi("pk", [1, 2, 2, 4]), vi("pv", [1, 2, 2, 4]), vi("n", [1], I64)], [vi("y", None)],
        opset=23)
    one("lstm_relu",
        [N("LSTM", ["x", "W", "R"], ["y"], name="lstm", hidden_size=4,
           activations=["Relu", "Tanh", "Tanh"])],
        [vi("x", [2, 1, 3])], [vi("y", None)], [init("W", [1, 16, 3]), init("R", [1, 16, 4])])
    one("lstm_seq_lens",
        [N("LSTM", ["x", "W", "R", "", "lens"], ["y"], name="lstm", hidden_size=4)],
        [vi("x", [2, 1, 3]), vi("lens", [1], TensorProto.INT32)], [vi("y", None)],
        [init("W", [1, 16, 3]), init("R", [1, 16, 4])])
    one("einsum_bad", [N("Einsum", ["a", "b"], ["y"], name="es", equation="ij,jk->iq")],
        [vi("a", [2, 3]), vi("b", [3, 4])], [vi("y", None)])
    one("resize_tf_half_pixel",
        [N("Resize", ["x", "roi", "sc"], ["y"], name="rs",
           coordinate_transformation_mode="tf_half_pixel_for_nn")],
        [vi("x", [1, 1, 2, 2])], [vi("y", None)],
        [init("roi", [0]), init("sc", [4], value=[1, 1, 2, 2])], opset=11)
    one("string_constant",
        [N("Constant", [], ["y"], name="str", value_string="hello")], [],
        [vi("y", None, TensorProto.STRING)])
    return B


def external_models(root):
    """A model with external data, and two that try to read outside."""
    N = helper.make_node
    w = init("w", [8, 3, 3, 3])

    def conv_model():
        return model([N("Conv", ["x", "w"], ["y"], name="conv")],
                     [vi("x", [1, 3, 16, 16])], [vi("y", None)], [w])

    raw = numpy_helper.to_array(w).tobytes()
    for sub in ("ext", "ext_escape", "ext_link"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)

    def with_location(loc, offset="0"):
        m = conv_model()
        t = m.graph.initializer[0]
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", loc), ("offset", offset), ("length", str(len(raw)))):
            e = t.external_data.add()
            e.key, e.value = k, v
        return m.SerializeToString()

    # The good one is written by onnx itself, so the format is the real one.
    good = os.path.join(root, "ext", "model.onnx")
    if not os.path.exists(good):
        m = conv_model()
        onnx.save_model(m, good, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="weights.bin", size_threshold=0)
    write_bytes(os.path.join(root, "outside.bin"), raw)
    write_bytes(os.path.join(root, "ext_escape", "model.onnx"), with_location("../outside.bin"))
    link = os.path.join(root, "ext_link", "weights.bin")
    if not os.path.islink(link):
        if os.path.exists(link):
            os.remove(link)
        os.symlink("../outside.bin", link)
    write_bytes(os.path.join(root, "ext_link", "model.onnx"), with_location("weights.bin"))
    # Offsets near INT64_MAX, where offset + length overflows.
    os.makedirs(os.path.join(root, "ext_offset"), exist_ok=True)
    write_bytes(os.path.join(root, "ext_offset", "weights.bin"), raw)
    write_bytes(os.path.join(root, "ext_offset", "near_max.onnx"),
                with_location("weights.bin", str((1 << 63) - 1 - 100)))
    write_bytes(os.path.join(root, "ext_offset", "max.onnx"),
                with_location("weights.bin", str((1 << 63) - 1)))
    # Its weights.bin is made a FIFO by the tests that use it (a FIFO left in
    # the test data would hang anything that reads every file).
    os.makedirs(os.path.join(root, "ext_fifo"), exist_ok=True)
    write_bytes(os.path.join(root, "ext_fifo", "model.onnx"), with_location("weights.bin"))


# --- torch exports ------------------------------------------------------------

# (file stem, torchvision constructor, its keyword arguments, input size, opset, export_params)
ZOO = ["alexnet", "vgg16", "resnet50", "resnet152", "densenet121", "googlenet", "inception_v3",
       "squeezenet1_1"]
NO_INIT = {"googlenet": {"aux_logits": False, "init_weights": False},
           "inception_v3": {"aux_logits": False, "init_weights": False}}
EXPORTS = (
    [(f"{n}_op13", n, NO_INIT.get(n, {}), 299 if n == "inception_v3" else 224, 13, False)
     for n in ZOO] +
    [("alexnet_op11", "alexnet", {}, 224, 11, False),
     ("squeezenet1_1_op11", "squeezenet1_1", {}, 224, 11, False),
     ("googlenet_op17", "googlenet", NO_INIT["googlenet"], 224, 17, False),
     ("squeezenet1_1_params_op13", "squeezenet1_1", {}, 224, 13, True),
     ("mobilenet_v2_op13", "mobilenet_v2", {}, 224, 13, False),
     ("mobilenet_v3_small_op13", "mobilenet_v3_small", {}, 224, 13, False),
     ("mobilenet_v3_small_op17", "mobilenet_v3_small", {}, 224, 17, False),
     ("shufflenet_v2_x0_5_op13", "shufflenet_v2_x0_5", {}, 224, 13, False),
     ("efficientnet_b0_op13", "efficientnet_b0", {}, 224, 13, False),
     ("vit_b_16_op13", "vit_b_16", {}, 224, 13, False),
     ("vit_b_16_op17", "vit_b_16", {}, 224, 17, False)])


def export_one(path, ctor, kwargs, size, opset, params):
    warnings.filterwarnings("ignore")
    import torch
    import torchvision

    torch.set_num_threads(1)
    if torch.get_num_interop_threads() != 1:
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # already fixed in this worker
            pass
    torch.manual_seed(0)
    t0 = time.time()
    try:
        # Not under no_grad: that sends ViT's attention down a fused kernel
        # the exporter does not know.
        net = getattr(torchvision.models, ctor)(**kwargs).eval()
        x = torch.randn(1, 3, size, size)
        tmp = path + ".tmp"
        torch.onnx.export(net, x, tmp, export_params=params, opset_version=opset,
                          input_names=["input"], output_names=["output"],
                          do_constant_folding=True)
        os.replace(tmp, path)
    except Exception as e:  # torch's exceptions do not always survive pickling
        return "FAILED %s: %s: %s" % (os.path.basename(path), type(e).__name__, e)
    return "%s (%.1f s)" % (os.path.basename(path), time.time() - t0)


def torch_models(root, jobs):
    todo = [(os.path.join(root, stem + ".onnx"),) + e[1:]
            for e in EXPORTS for stem in [e[0]]
            if not os.path.exists(os.path.join(root, stem + ".onnx"))]
    if not todo:
        return
    # Largest first, so the two workers finish together, but the two ViTs
    # (a third of the time, and of the memory) not side by side.
    order = {"vit_b_16_op13": 0, "resnet152_op13": 1, "vit_b_16_op17": 2, "vgg16_op13": 3,
             "densenet121_op13": 4, "inception_v3_op13": 5, "efficientnet_b0_op13": 6}
    todo.sort(key=lambda t: order.get(os.path.basename(t[0])[:-5], 9))
    with cf.ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(export_one, *t) for t in todo]
        failed = []
        for f in cf.as_completed(futures):
            r = f.result()
            print("exported", r, flush=True)
            if r.startswith("FAILED"):
                failed.append(r)
    if failed:
        raise SystemExit("torch exports failed:\n  " + "\n  ".join(failed))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="test data folder (files go to OUT/onnx)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-torch", action="store_true", help="skip the torch exports")
    args = ap.parse_args()
    root = os.path.join(args.out, "onnx")
    for sub in ("small", "bad", "torch"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    small = small_models()
    for name, m in small.items():
        write_bytes(os.path.join(root, "small", name + ".onnx"), m.SerializeToString())
    for name, data in bad_models(small).items():
        write_bytes(os.path.join(root, "bad", name + ".onnx"), data)
    external_models(root)
    if not args.no_torch:
        torch_models(os.path.join(root, "torch"), args.jobs)
    print("ONNX test files in", root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
