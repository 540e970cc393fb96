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
        [vi("x", [1, 4, 3, 3])], [vi("y", None)],
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
    B["conv_1d"] = model(
        [N("Conv", ["x", "w"], ["y"], name="conv1d")],
        [vi("x", [1, 3, 32])], [vi("y", None)], [init("w", [8, 3, 3])]).SerializeToString()
    B["maxpool_indices"] = model(
        [N("MaxPool", ["x"], ["y", "idx"], name="pool", kernel_shape=[2, 2])],
        [vi("x", [1, 2, 8, 8])], [vi("y", None), vi("idx", None, I64)]).SerializeToString()
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
