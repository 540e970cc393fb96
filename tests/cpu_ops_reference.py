#!/usr/bin/env python3
"""Writes tests/cpu_ops_expected.h: inputs and expected outputs of the
operator cases of tests/test_cpu_ops.c, computed by ONNX's reference
implementation (onnx.reference.ReferenceEvaluator, onnx 1.23.2 with its
NumPy) on one-node ONNX models of opset 24.

Run by hand when a case changes (it needs onnx >= 1.23, which the system
python3 does not have):

    python3 tests/cpu_ops_reference.py > tests/cpu_ops_expected.h

Each case lists only the inputs the opsched node takes (Resize's roi,
scales and sizes, TopK's k, Clip's bounds... are attributes there); the
test builds the node's attributes itself.  Float values are printed with 9
significant digits, which read back to the same float32.
"""
import sys
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

warnings.simplefilter("ignore")
OPSET = 24

C_TYPE = {
    np.dtype(np.float32): ("float", "OPSCHED_F32"),
    np.dtype(np.float16): ("float", "OPSCHED_F16"),
    np.dtype(np.int8): ("int8_t", "OPSCHED_INT8"),
    np.dtype(np.int32): ("int32_t", "OPSCHED_INT32"),
    np.dtype(np.int64): ("int64_t", "OPSCHED_INT64"),
    np.dtype(np.uint8): ("uint8_t", "OPSCHED_UINT8"),
    np.dtype(np.bool_): ("uint8_t", "OPSCHED_BOOL"),
}

out = []
arrays = {}  # (ctype, dtype name, text) -> C name
counter = [0]


def c_value(v, ctype):
    if ctype == "float":
        f = float(v)
        if np.isnan(f):
            return "NAN"
        if np.isinf(f):
            return "INFINITY" if f > 0 else "-INFINITY"
        t = "%.9g" % f
        return t + (".0f" if all(c not in t for c in ".e") else "f")
    if ctype == "int64_t":
        iv = int(v)
        return "INT64_MIN" if iv == -(2**63) else "%dLL" % iv
    return "%d" % int(v)


def c_array(a):
    """The C name of an array holding a's values (shared when equal)."""
    dt = a.dtype
    if dt.name == "bfloat16":
        ctype, enum = "float", "OPSCHED_BF16"
        flat = a.astype(np.float32).ravel()
    else:
        ctype, enum = C_TYPE[dt]
        flat = a.ravel()
    text = ", ".join(c_value(v, ctype) for v in flat) if flat.size else "0"
    key = (ctype, text)
    if key not in arrays:
        counter[0] += 1
        name = "ref_a%d" % counter[0]
        arrays[key] = name
        out.append("static const %s %s[] = {%s};" % (ctype, name, text))
    return enum, arrays[key]


def c_shape(a):
    return "x".join(str(d) for d in a.shape)


def tensor(a):
    enum, name = c_array(a)
    return '{%s, "%s", %s}' % (enum, c_shape(a), name)


def np_to_onnx(dt):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dt)) if dt is not None else TensorProto.FLOAT


def run(op, inputs, attrs=None, n_out=1, out_types=None):
    """Runs one node; inputs is a list of arrays or None (omitted)."""
    names, graph_inputs, feeds = [], [], {}
    for i, a in enumerate(inputs):
        if a is None:
            names.append("")
            continue
        nm = "i%d" % i
        names.append(nm)
        graph_inputs.append(helper.make_tensor_value_info(nm, np_to_onnx(a.dtype), a.shape))
        feeds[nm] = a
    outs = ["o%d" % k for k in range(n_out)]
    node = helper.make_node(op, names, outs, **(attrs or {}))
    graph = helper.make_graph(
        [node],
        "g",
        graph_inputs,
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    return ReferenceEvaluator(model).run(None, feeds)


def case(name, ir_inputs, outputs, note):
    """Emits ref_case `name` with the IR's inputs and the expected outputs."""
    ins = ", ".join(tensor(np.asarray(a)) for a in ir_inputs)
    outs = ", ".join(tensor(np.asarray(a)) for a in outputs)
    out.append("/* %s */" % note)
    out.append(
        "static const ref_case %s = {\"%s\", %d, {%s}, %d, {%s}};"
        % (name, name, len(ir_inputs), ins, len(outputs), outs)
    )


def one(name, op, inputs, attrs=None, ir=None, n_out=1, note=None):
    res = run(op, inputs, attrs, n_out)
    ir_inputs = [inputs[i] for i in ir] if ir is not None else [a for a in inputs if a is not None]
    case(name, ir_inputs, res, note or "%s %s" % (op, attrs or ""))


f32 = lambda v: np.array(v, dtype=np.float32)
i64 = lambda v: np.array(v, dtype=np.int64)
i32 = lambda v: np.array(v, dtype=np.int32)
i8 = lambda v: np.array(v, dtype=np.int8)
u8 = lambda v: np.array(v, dtype=np.uint8)
bl = lambda v: np.array(v, dtype=np.bool_)

rng = np.random.default_rng(20261125)


def rand(shape, lo=-2.0, hi=2.0):
    return (rng.uniform(lo, hi, size=shape)).astype(np.float32)


def main():
    # ---- unary functions -------------------------------------------------
    xs = f32([-3.0, -2.5, -1.5, -1.0, -0.75, -0.5, -0.25, -0.0, 0.0, 0.3, 0.5, 0.7, 1.0, 1.5,
              2.5, 3.2, 7.9])
    unit = f32([-1.0, -0.9, -0.5, -0.1, 0.0, 0.2, 0.6, 0.99, 1.0])
    big = f32([1.0, 1.01, 1.5, 2.0, 3.7, 10.0, 100.0, 0.5])
    pos = f32([1e-3, 0.1, 0.5, 1.0, 2.0, 7.5, 1e4, 0.0, -1.0])
    special = f32([np.nan, np.inf, -np.inf, 0.0, -1.5, 3.0])
    rnd = f32([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.49999997, 2.4999998, -3.7,
               4.2, 8388609.0])
    table = [
        ("Abs", xs, {}), ("Neg", xs, {}), ("Exp", xs, {}), ("Log", pos, {}),
        ("Reciprocal", xs, {}), ("Floor", xs, {}), ("Ceil", xs, {}), ("Round", rnd, {}),
        ("Sign", xs, {}), ("Sin", xs, {}), ("Cos", xs, {}), ("Tan", xs, {}),
        ("Asin", unit, {}), ("Acos", unit, {}), ("Atan", xs, {}), ("Sinh", xs, {}),
        ("Cosh", xs, {}), ("Asinh", xs, {}), ("Acosh", big, {}), ("Atanh", unit[1:-1], {}),
        ("IsNaN", special, {}), ("IsInf", special, {}),
        ("LeakyRelu", xs, {"alpha": 0.1}), ("Elu", xs, {"alpha": 0.7}),
        ("Selu", xs, {"alpha": 1.6732632, "gamma": 1.0507010}), ("Celu", xs, {"alpha": 0.8}),
        ("ThresholdedRelu", xs, {"alpha": 0.9}), ("Softplus", xs, {}), ("Softsign", xs, {}),
        ("Mish", xs, {}), ("Shrink", xs, {"bias": 0.4, "lambd": 0.6}),
        ("Swish", xs, {"alpha": 1.3}),
    ]
    for op, x, attrs in table:
        one("unary_" + op, op, [x], attrs)
    one("unary_IsInf_neg", "IsInf", [special], {"detect_positive": 0, "detect_negative": 1})
    one("unary_Not", "Not", [bl([True, False, True, True])])
    ints8 = i8([-128, -100, -5, -1, 0, 1, 7, 127])
    for nm, a in (("i8", ints8), ("i32", i32([-2147483648, -70000, -3, 0, 5, 2147483647])),
                  ("i64", i64([-(2**63), -(2**40), -9, 0, 12, 2**62]))):
        for op in ("Abs", "Neg", "Sign"):
            one("unary_%s_%s" % (op, nm), op, [a])
    one("unary_BitwiseNot_u8", "BitwiseNot", [u8([0, 1, 127, 128, 255])])
    one("unary_BitwiseNot_i32", "BitwiseNot", [i32([0, -1, 5, -70000, 2147483647])])
    one("relu_i32", "Relu", [i32([-7, 0, 3, -2147483648, 2147483647])])
    one("clip_i64", "Clip", [i64([-100, -6, -5, 0, 8, 9, 1000]), i64(-5), i64(8)], ir=[0],
        note="Clip(min=-5, max=8) on int64")

    # ---- binary functions ------------------------------------------------
    a = i32([[7, -7, 7, -7, 0, 13], [5, -5, 6, -6, 1, -13]])
    b = i32([[3, 3, -3, -3, 3, 5], [2, 2, -4, -4, -1, -5]])
    for nm, conv in (("i32", i32), ("i64", i64), ("i8", i8)):
        one("mod_" + nm, "Mod", [conv(a), conv(b)], {"fmod": 0})
        one("fmod_" + nm, "Mod", [conv(a), conv(b)], {"fmod": 1})
    one("mod_zero_i32", "Mod", [i32([5, -5, 0]), i32([0, 0, 0])], {"fmod": 0})
    fa = f32([[5.5, -5.5, 5.5, -5.5, 0.0, 7.25], [3.0, -3.0, 1.0, -1.0, 2.5, -2.5]])
    fb = f32([[2.0, 2.0, -2.0, -2.0, 3.0, 0.5], [1.5, 1.5, 3.0, 3.0, -1.0, 1.0]])
    one("mod_f32", "Mod", [fa, fb], {"fmod": 0})
    one("fmod_f32", "Mod", [fa, fb], {"fmod": 1})
    ma = f32([[1.0, np.nan, -2.0], [4.0, 0.5, -np.inf]])
    mb = f32([2.0, 1.0, np.nan])
    one("min_f32", "Min", [ma, mb])
    one("max_f32", "Max", [ma, mb])
    ia = i64([[1, -9, 2**40], [0, 5, -(2**50)]])
    ib = i64([[3], [-4]])
    one("min_i64", "Min", [ia, ib])
    one("max_i64", "Max", [ia, ib])
    ca = f32([[1.0, 2.0, np.nan, -1.0], [0.0, -0.0, 3.5, 2.0]])
    cb = f32([2.0, 2.0, 1.0, -1.0])
    for op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"):
        one("cmp_%s_f32" % op, op, [ca, cb])
        one("cmp_%s_i64" % op, op, [i64([[1, 2, 3], [4, 5, 6]]), i64([[3], [5]])])
    p = bl([[True, True, False, False]])
    q = bl([[True], [False]])
    for op in ("And", "Or", "Xor"):
        one("logic_" + op, op, [p, q])
    one("equal_bool", "Equal", [p, q])
    sa = u8([[1, 255, 16, 128], [3, 7, 200, 1]])
    sb = u8([[0, 1, 4, 7], [8, 9, 2, 3]])
    one("shift_left_u8", "BitShift", [sa, sb], {"direction": "LEFT"})
    one("shift_right_u8", "BitShift", [sa, sb], {"direction": "RIGHT"})
    one("bitand_i32", "BitwiseAnd", [i32([12, -1, 255, -70000]), i32([10, 5, 15, 65535])])
    one("bitor_u8", "BitwiseOr", [u8([12, 1, 128]), u8([3, 2, 127])])
    one("bitxor_i64", "BitwiseXor", [i64([12, -1, 2**40]), i64([10, 5, 2**40 + 3])])
    one("prelu_f32", "PRelu", [rand((2, 3, 2, 2)), f32([[[0.1]], [[-0.5]], [[2.0]]])],
        note="PRelu with a slope of [3, 1, 1] broadcast")

    # ---- the arithmetic kinds on integers ------------------------------------
    aa = np.array([[100, -100, 7, -7, 0, 127], [-128, 50, -9, 9, 3, 1]])
    bb = np.array([3, 28, -2, -3, 5, 2])
    for nm, conv in (("i8", i8), ("i32", i32), ("i64", i64)):
        for op in ("Add", "Sub", "Mul", "Div"):
            one("%s_%s" % (op.lower(), nm), op, [conv(aa), conv(bb)])
    ua = u8([[200, 3, 250, 17], [0, 128, 255, 1]])
    ub = u8([[100], [7]])
    for op in ("Add", "Sub", "Mul", "Div"):
        one("%s_u8" % op.lower(), op, [ua, ub])
    one("pow_i32", "Pow", [i32([2, -3, 5, 0, 7, -1]), i32([10, 3, 0, 4, 12, 7])])
    one("pow_i64", "Pow", [i64([[2], [3]]), i64([62, 3, 1])])
    one("pow_i8", "Pow", [i8([2, 3, -2, 5]), i8([7, 5, 7, 4])])
    one("div_bcast_first_i64", "Div", [i64([[100]]), i64([[7, -7, 3], [-3, 1, 100]])])

    # ---- Where ---------------------------------------------------------------
    cond = bl([[True, False, True], [False, False, True]])
    one("where_f32", "Where", [cond, f32([1.5, 2.5, 3.5]), f32([[-1.0], [-2.0]])])
    one("where_i64", "Where", [cond, i64([[2**40], [7]]), i64(-3)])
    one("where_bool", "Where", [bl([True, False]), bl([[True, True], [False, False]]),
                                bl([[False], [True]])])

    # ---- Cast ------------------------------------------------------------------
    cx = f32([0.1, -0.1, 1.5, -1.5, 2.7, -2.7, 0.0, 100.9, -100.9, 65504.0, 65520.0, 1e-8,
              3.14159265, 1e30, -7.9, 127.5])
    one("cast_f32_f16", "Cast", [cx], {"to": TensorProto.FLOAT16})
    one("cast_f32_bf16", "Cast", [cx], {"to": TensorProto.BFLOAT16})
    cy = f32([0.1, -0.9, 1.5, -1.5, 2.7, -2.7, 0.0, 100.9, -100.9, 126.9, -127.9])
    for nm, to in (("i8", TensorProto.INT8), ("i32", TensorProto.INT32),
                   ("i64", TensorProto.INT64), ("bool", TensorProto.BOOL)):
        one("cast_f32_" + nm, "Cast", [cy], {"to": to})
    one("cast_f32_u8", "Cast", [f32([0.1, 0.9, 1.5, 254.9, 7.0, 0.0])], {"to": TensorProto.UINT8})
    one("cast_i64_f32", "Cast", [i64([1, -2, 2**24 + 1, 2**40 + 3, -(2**53) - 3])],
        {"to": TensorProto.FLOAT})
    one("cast_i64_f16", "Cast", [i64([1, -2, 2049, 4097, 65504, -300])], {"to": TensorProto.FLOAT16})
    one("cast_i32_i8", "Cast", [i32([1, 127, 128, 255, 256, -129, -70000])], {"to": TensorProto.INT8})
    one("cast_u8_i8", "Cast", [u8([0, 127, 128, 255])], {"to": TensorProto.INT8})
    one("cast_i8_u8", "Cast", [i8([0, 127, -128, -1])], {"to": TensorProto.UINT8})
    one("cast_i64_bool", "Cast", [i64([0, 1, -5, 2**40])], {"to": TensorProto.BOOL})
    one("cast_bool_f32", "Cast", [bl([True, False, True])], {"to": TensorProto.FLOAT})
    one("cast_bool_i32", "Cast", [bl([True, False, True])], {"to": TensorProto.INT32})

    # ---- reductions --------------------------------------------------------------
    rx = rand((2, 3, 4))
    rpos = rand((2, 3, 4), 0.1, 3.0)
    fns = ["Mean", "Sum", "Max", "Min", "Prod", "L1", "L2", "LogSum", "LogSumExp", "SumSquare"]
    axes_sets = [None, [1], [0, 2], [-1]]
    for fn in fns:
        x = rpos if fn == "LogSum" else rx
        for ai, axes in enumerate(axes_sets):
            for keep in (0, 1):
                ins = [x, None if axes is None else i64(axes)]
                one("reduce_%s_%d_%d" % (fn, ai, keep), "Reduce" + fn, ins, {"keepdims": keep},
                    ir=[0], note="Reduce%s axes %s keepdims %d" % (fn, axes, keep))
    one("reduce_Sum_noop", "ReduceSum", [rx, i64([])], {"noop_with_empty_axes": 1}, ir=[0])
    rxi = i64([[[3, -7, 2**40], [5, 0, -1]], [[-2, 9, 4], [1, 1, -(2**41)]]])
    for fn in ("Sum", "Prod", "Max", "Min", "Mean", "L1", "SumSquare"):
        one("reduce_%s_i64" % fn, "Reduce" + fn, [rxi, i64([1])], {"keepdims": 0}, ir=[0])
    one("reduce_Max_i8", "ReduceMax", [i8([[-128, -5], [-100, -7]]), i64([0])], {"keepdims": 1},
        ir=[0])
    one("reducemean_i32", "ReduceMean", [i32([[1, 2, 4], [-1, -2, -4]]), i64([1])],
        {"keepdims": 1}, ir=[0])

    # ---- along an axis -----------------------------------------------------------------
    ax = f32([[1.0, 3.0, 3.0, 0.5], [2.0, 2.0, -1.0, 2.0], [0.0, 3.0, 1.0, -1.0]])
    for op in ("ArgMax", "ArgMin"):
        for axis in (0, 1):
            for keep in (0, 1):
                for last in (0, 1):
                    one("%s_%d_%d_%d" % (op.lower(), axis, keep, last), op, [ax],
                        {"axis": axis, "keepdims": keep, "select_last_index": last})
    one("argmax_i32", "ArgMax", [i32([[5, 9, 9, -1], [7, 7, 0, 7]])],
        {"axis": 1, "keepdims": 0, "select_last_index": 1})
    one("argmax_nan", "ArgMax", [f32([[1.0, np.nan, 5.0, np.nan]])], {"axis": 1})
    one("argmin_nan", "ArgMin", [f32([[1.0, np.nan, -5.0]])], {"axis": 1})
    cs = f32([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]])
    for axis in (0, 1):
        for exc in (0, 1):
            for rev in (0, 1):
                one("cumsum_%d_%d_%d" % (axis, exc, rev), "CumSum", [cs, i64(axis)],
                    {"exclusive": exc, "reverse": rev}, ir=[0])
    one("cumsum_i64", "CumSum", [i64([[2**62, 2**62, 5], [1, -2, 3]]), i64(1)], {}, ir=[0])
    tk = f32([[3.0, 1.0, 3.0, 2.0, 3.0, -1.0], [0.5, np.nan, 0.5, 7.0, -2.0, 0.5]])
    for largest in (1, 0):
        one("topk_%d" % largest, "TopK", [tk, i64([3])], {"axis": 1, "largest": largest}, ir=[0],
            n_out=2)
    one("topk_axis0", "TopK", [tk, i64([1])], {"axis": 0}, ir=[0], n_out=2)
    one("topk_i64", "TopK", [i64([[5, 1, 5, 9, 1]]), i64([4])], {"axis": -1, "largest": 0},
        ir=[0], n_out=2)
    ls = rand((2, 3, 4))
    for axis in (1, -1):
        one("logsoftmax_%d" % (axis + 1), "LogSoftmax", [ls], {"axis": axis})
    one("hardmax", "Hardmax", [f32([[1.0, 3.0, 3.0], [-1.0, -2.0, -1.0]])], {"axis": 1})
    one("hardmax_axis0", "Hardmax", [f32([[1.0, 3.0, 3.0], [2.0, -2.0, 3.0]])], {"axis": 0})

    # ---- indexing --------------------------------------------------------------------
    gd = f32([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    one("gather_elements_0", "GatherElements", [gd, i64([[1, -1, 0], [-3, 0, 2]])], {"axis": 0})
    one("gather_elements_1", "GatherElements", [gd, i32([[2, -2], [0, 0], [-1, 1]])], {"axis": 1})
    one("gather_elements_bool", "GatherElements",
        [bl([[True, False], [False, True]]), i64([[1, 1], [0, -2]])], {"axis": 1})
    nd = f32(np.arange(8).reshape(2, 2, 2))
    one("gather_nd_0", "GatherND", [nd, i64([[0, 1], [-1, 0]])])
    one("gather_nd_full", "GatherND", [nd, i64([[[0, 1, 1]], [[1, -1, 0]]])])
    one("gather_nd_batch1", "GatherND", [nd, i64([[1], [-2]])], {"batch_dims": 1})
    one("gather_nd_batch1b", "GatherND", [i64(np.arange(12).reshape(2, 3, 2)),
                                            i64([[[1, 0], [2, 1]], [[0, 1], [-1, -1]]])],
        {"batch_dims": 1})
    sd = f32([[1, 2, 3, 4], [5, 6, 7, 8]])
    si = i64([[1, -1, 1], [0, 0, 3]])
    su = f32([[10, 20, 30], [40, 50, 60]])
    for red in ("none", "add", "mul", "max", "min"):
        ind = si if red != "none" else i64([[1, -1, 0], [0, 2, 3]])
        one("scatter_elements_" + red, "ScatterElements", [sd, ind, su],
            {"axis": 1, "reduction": red})
    one("scatter_elements_axis0_i64", "ScatterElements",
        [i64([[1, 2], [3, 4], [5, 6]]), i64([[2, -3]]), i64([[70, 80]])], {"axis": 0})
    snd = f32(np.arange(16).reshape(4, 2, 2))
    sni = i64([[1], [-1], [1]])
    snu = f32(np.arange(12).reshape(3, 2, 2) * 10 + 5)
    for red in ("none", "add", "mul", "max", "min"):
        ind = sni if red != "none" else i64([[1], [-1], [0]])
        one("scatter_nd_" + red, "ScatterND", [snd, ind, snu], {"reduction": red})
    one("scatter_nd_elems_u8", "ScatterND", [u8([[1, 2], [3, 4]]), i64([[0, 1], [1, 0]]),
                                             u8([200, 100])])
    one("tile_f32", "Tile", [f32([[1, 2, 3], [4, 5, 6]]), i64([2, 2])], ir=[0])
    one("tile_i64", "Tile", [i64([7, 8, 9]), i64([3])], ir=[0])
    one("tile_bool", "Tile", [bl([[[True, False]], [[False, False]]]), i64([1, 3, 2])], ir=[0])
    tr = f32(np.arange(1, 13).reshape(3, 4))
    for upper in (1, 0):
        for k in (0, 1, -1, 2):
            one("trilu_%d_%d" % (upper, k + 1), "Trilu", [tr, i64(k)], {"upper": upper}, ir=[0])
    one("trilu_batch_i64", "Trilu", [i64(np.arange(18).reshape(2, 3, 3)), i64(-1)],
        {"upper": 1}, ir=[0])
    oi = i64([[0, -1, 3], [4, -5, 2]])
    for axis in (-1, 0, 1):
        one("onehot_%d" % (axis + 1), "OneHot", [oi, i64(4), f32([0.5, 3.0])], {"axis": axis},
            ir=[0, 2])
    one("onehot_i64_vals", "OneHot", [i32([1, -2, 7]), i64(3), i64([-1, 2**40])], {"axis": -1},
        ir=[0, 2])
    one("onehot_float_idx", "OneHot", [f32([1.0, -1.0, 2.5, 0.0]), i64(3), f32([0.0, 1.0])],
        {"axis": -1}, ir=[0, 2])

    # ---- data movement on other types ------------------------------------------------
    one("gather_u8", "Gather", [u8([[1, 2], [3, 4], [5, 6]]), i32([-1, 0, 2, -3])], {"axis": 0})
    one("gather_bool_axis1", "Gather", [bl([[True, False, True], [False, False, True]]),
                                         i64([[2, -3]])], {"axis": 1})
    one("gather_i64", "Gather", [i64([[2**40, 2], [3, -(2**41)]]), i64(-1)], {"axis": 1})
    one("concat_bool", "Concat", [bl([[True], [False]]), bl([[False, False], [True, True]])],
        {"axis": 1})
    one("concat_i64", "Concat", [i64([[1, 2]]), i64([[3, 4], [5, 6]])], {"axis": 0})
    one("split_i64", "Split", [i64([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]), i64([2, 3])],
        {"axis": 1}, ir=[0], n_out=2)
    one("slice_u8", "Slice", [u8(np.arange(24).reshape(2, 3, 4)), i64([2, -1]), i64([-100, 0]),
                              i64([1, 2]), i64([-1, -2])], ir=[0],
        note="Slice axes [1, 2], starts [2, -1], ends [-100, 0], steps [-1, -2]")
    one("transpose_i64", "Transpose", [i64(np.arange(24).reshape(2, 3, 4))], {"perm": [2, 0, 1]})
    one("transpose_bool", "Transpose", [bl([[True, False, False], [True, True, False]])])
    pi = i32([[1, 2, 3], [4, 5, 6]])
    for mode in ("constant", "reflect", "edge"):
        one("pad_i32_" + mode, "Pad", [pi, i64([1, 2, 0, 1]), i32(-9)], {"mode": mode}, ir=[0])
    one("expand_bool", "Expand", [bl([[True], [False]]), i64([2, 2, 3])], ir=[0])
    one("matmul_i32", "MatMul", [i32(np.arange(12).reshape(2, 2, 3) - 5),
                                 i32(np.arange(6).reshape(3, 2) * 3 - 4)])
    one("matmul_i64_big", "MatMul", [i64([[2**32, 3]]), i64([[2**32], [5]])])
    one("gemm_i64", "Gemm", [i64([[1, 2], [3, 4], [5, -6]]),
                             i64([[1, 0, 2], [-1, 3, 1], [2, 2, 2], [0, -1, 5]]),
                             i64([10, 20, 30, 40])], {"transA": 1, "transB": 1})
    # The reference pools integers only through float32 (it pads with NaN):
    # exact for 8-bit values.
    for nm, x, attrs in (("maxpool_u8", u8(np.arange(32).reshape(1, 2, 4, 4) * 7 % 256),
                          {"kernel_shape": [2, 2], "strides": [2, 1]}),
                         ("maxpool_i8", i8((np.arange(18).reshape(1, 2, 3, 3) * 37 % 256) - 128),
                          {"kernel_shape": [2, 2], "pads": [1, 1, 1, 1]})):
        res = run("MaxPool", [x.astype(np.float32)], attrs)
        case(nm, [x], [res[0].astype(x.dtype)], "MaxPool %s on %s" % (attrs, x.dtype))

    # ---- Resize --------------------------------------------------------------------------
    rx4 = f32(np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]],
                       dtype=np.float32).reshape(1, 1, 4, 4))
    rx34 = rand((1, 2, 3, 4), -4, 4)
    empty = f32([])

    def resize(name, x, scales=None, sizes=None, roi=None, **attrs):
        ins = [x, roi if roi is not None else empty,
               f32(scales) if scales is not None else None,
               i64(sizes) if sizes is not None else None]
        if scales is None:
            ins[2] = None
        res = run("Resize", ins, attrs)
        case(name, [x], res, "Resize %s scales %s sizes %s roi %s" %
             (attrs, scales, sizes, None if roi is None else list(roi)))

    for nm in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
        for coord in ("asymmetric", "half_pixel"):
            resize("resize_nearest_%s_%s" % (nm, coord), rx4, scales=[1, 1, 1.75, 0.75],
                   mode="nearest", nearest_mode=nm, coordinate_transformation_mode=coord)
        resize("resize_nearest_%s_down" % nm, rx34, sizes=[1, 2, 2, 3], mode="nearest",
               nearest_mode=nm, coordinate_transformation_mode="half_pixel")
    resize("resize_nearest_align", rx4, sizes=[1, 1, 3, 7], mode="nearest",
           coordinate_transformation_mode="align_corners")
    for coord in ("align_corners", "half_pixel", "pytorch_half_pixel", "asymmetric",
                  "half_pixel_symmetric"):
        resize("resize_linear_%s_up" % coord, rx34, scales=[1, 1, 2.0, 1.5], mode="linear",
               coordinate_transformation_mode=coord)
        resize("resize_linear_%s_down" % coord, rx34, sizes=[1, 2, 2, 3], mode="linear",
               coordinate_transformation_mode=coord)
    resize("resize_linear_pytorch_one", rx34, sizes=[1, 2, 1, 3], mode="linear",
           coordinate_transformation_mode="pytorch_half_pixel")
    for exc in (0, 1):
        resize("resize_cubic_%d_up" % exc, rx4, scales=[1, 1, 1.6, 2.3], mode="cubic",
               cubic_coeff_a=-0.75, exclude_outside=exc,
               coordinate_transformation_mode="half_pixel")
        resize("resize_cubic_%d_down" % exc, rx34, sizes=[1, 2, 2, 3], mode="cubic",
               cubic_coeff_a=-0.75, exclude_outside=exc)
    resize("resize_cubic_a05_asym", rx4, scales=[1, 1, 0.5, 1.5], mode="cubic",
           cubic_coeff_a=-0.5, coordinate_transformation_mode="asymmetric")
    roi = f32([0, 0, 0.2, -0.3, 1, 1, 0.8, 1.25])
    resize("resize_tf_crop_linear", rx4, sizes=[1, 1, 3, 5], roi=roi, mode="linear",
           coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=10.0)
    resize("resize_tf_crop_nearest", rx4, scales=[1, 1, 0.8, 1.5], roi=roi, mode="nearest",
           coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-1.0)
    rx8 = rand((1, 1, 8, 7), -4, 4)
    resize("resize_linear_antialias", rx8, scales=[1, 1, 0.5, 0.6], mode="linear", antialias=1)
    resize("resize_cubic_antialias", rx8, sizes=[1, 1, 3, 4], mode="cubic", antialias=1)
    resize("resize_cubic_antialias_up", rx4, sizes=[1, 1, 2, 6], mode="cubic", antialias=1,
           cubic_coeff_a=-0.5, exclude_outside=1)
    ru8 = u8(np.array([[0, 255, 10, 100], [7, 8, 9, 250]], dtype=np.uint8).reshape(1, 1, 2, 4))
    resize("resize_linear_u8", ru8, sizes=[1, 1, 3, 5], mode="linear")
    resize("resize_nearest_3d", rand((2, 3, 4)), scales=[1.5, 1.0, 0.5], mode="nearest")

    # ---- normalisation, ConvTranspose, quantization ---------------------------------------
    gx = rand((2, 4, 2, 3))
    gs = f32([1.0, 0.5, -1.0, 2.0])
    gb = f32([0.0, 0.1, 0.2, -0.3])
    one("groupnorm_2", "GroupNormalization", [gx, gs, gb], {"num_groups": 2, "epsilon": 1e-5})
    one("groupnorm_1", "GroupNormalization", [gx, gs, gb], {"num_groups": 1, "epsilon": 0.01})
    one("instancenorm", "InstanceNormalization", [gx, gs, gb], {"epsilon": 1e-5},
        note="InstanceNormalization, run as GroupNormalization with groups = C")
    tx = rand((1, 2, 3, 3))
    tw = rand((2, 3, 3, 3))
    tb = f32([0.5, -0.25, 1.0])
    one("convt_outpad", "ConvTranspose", [tx, tw, tb],
        {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]})
    gx2 = rand((2, 4, 3, 2))
    gw2 = rand((4, 1, 2, 3))
    # The reference's group > 1 path slices the weight by output channels
    # (right only when depthwise): the groups run one by one through its
    # group = 1 path, on the channels ONNX assigns them, and are concatenated.
    gattrs = {"strides": [2, 3], "output_padding": [1, 2], "pads": [0, 1, 1, 0]}
    parts = [run("ConvTranspose", [gx2[:, 2 * g:2 * g + 2], gw2[2 * g:2 * g + 2]], gattrs)[0]
             for g in range(2)]
    case("convt_groups", [gx2, gw2], [np.concatenate(parts, axis=1)],
         "ConvTranspose %s group 2, each group through the reference" % gattrs)
    one("convt_dilated", "ConvTranspose", [gx2, rand((4, 3, 3, 2)), f32([1, 2, 3])],
        {"dilations": [2, 1], "pads": [1, 0, 0, 1]})
    qx = f32([[[0.0, 1.0], [2.5, -2.5], [300.0, -300.0]],
              [[0.5, 1.5], [2.49, 0.051], [-1.0, 127.6]]])
    one("quant_axis_u8", "QuantizeLinear", [qx, f32([0.5, 1.0, 2.0]), u8([10, 128, 0])],
        {"axis": 1})
    one("quant_tensor_i8", "QuantizeLinear", [qx, f32(0.1), i8(-3)])
    one("quant_default_u8", "QuantizeLinear", [qx, f32(0.02)])
    bx = f32([[0.5, 1.5, 2.5, -3.5, 4.0], [-0.5, 1.0, 2.0, 3.0, 200.0]])
    one("quant_blocked_i8", "QuantizeLinear",
        [bx, f32([[1.0, 0.5, 2.0], [0.25, 1.0, 0.1]]), i8([[0, 1, -1], [2, 0, 5]])],
        {"axis": 1, "block_size": 2})
    dq = i8([[[-128, 127], [0, 5]], [[-1, 1], [100, -100]]])
    one("dequant_axis_i8", "DequantizeLinear", [dq, f32([0.5, 0.25]), i8([1, -2])], {"axis": -1})
    one("dequant_blocked_u8", "DequantizeLinear",
        [u8([[0, 255, 10, 128, 7], [1, 2, 3, 4, 5]]), f32([[0.5, 2.0, 1.0], [0.1, 0.2, 0.3]]),
         u8([[128, 0, 5], [1, 2, 3]])], {"axis": 1, "block_size": 2})
    one("dequant_tensor_i32", "DequantizeLinear", [i32([-70000, 0, 123456]), f32(0.001)])

    # ---- 3-D windows; pooling padding wider than half the kernel ---------------------------
    px3 = rand((1, 2, 4, 5, 5))
    one("maxpool_3d", "MaxPool", [px3],
        {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2], "dilations": [1, 2, 1],
         "pads": [1, 0, 1, 0, 1, 1], "ceil_mode": 1})
    one("avgpool_3d_incl", "AveragePool", [px3],
        {"kernel_shape": [3, 2, 2], "strides": [1, 2, 2], "pads": [1, 1, 0, 1, 0, 1],
         "count_include_pad": 1})
    one("avgpool_3d_excl", "AveragePool", [px3],
        {"kernel_shape": [2, 2, 3], "strides": [2, 2, 1], "pads": [0, 1, 1, 1, 0, 1],
         "ceil_mode": 1})
    px2 = rand((1, 2, 4, 4))
    one("maxpool_widepad", "MaxPool", [px2], {"kernel_shape": [3, 3], "pads": [2, 2, 2, 2]})
    one("avgpool_widepad_incl", "AveragePool", [px2],
        {"kernel_shape": [3, 3], "pads": [2, 1, 2, 2], "count_include_pad": 1})
    one("avgpool_widepad_excl", "AveragePool", [px2],
        {"kernel_shape": [3, 2], "pads": [2, 2, 2, 2]})
    cx3 = rand((1, 4, 3, 4, 5))
    cw3 = rand((6, 2, 2, 3, 2))
    cb3 = f32([0.5, -1.0, 0.25, 0.0, 2.0, -0.5])
    cattrs = {"strides": [1, 2, 1], "dilations": [2, 1, 1], "pads": [1, 1, 0, 0, 1, 1]}
    # group 2 as two group-1 convolutions on the channels ONNX assigns each group
    parts = [run("Conv", [cx3[:, 2 * g:2 * g + 2], cw3[3 * g:3 * g + 3], cb3[3 * g:3 * g + 3]],
                 cattrs)[0] for g in range(2)]
    case("conv_3d", [cx3, cw3, cb3], [np.concatenate(parts, axis=1)],
         "Conv %s group 2, each group through the reference" % cattrs)
    one("convt_3d", "ConvTranspose", [rand((1, 2, 2, 3, 2)), rand((2, 3, 2, 2, 3)),
                                      f32([1.0, -2.0, 0.5])],
        {"strides": [2, 1, 2], "pads": [1, 0, 0, 0, 1, 1], "output_padding": [1, 0, 1]})
    # MaxPool's Indices (ties: the first in window order).  The reference
    # honours storage_order only off its unit-stride path.
    ix = f32(np.round(rand((2, 2, 5, 4)) * 2) / 2)
    one("maxpool_indices", "MaxPool", [ix], {"kernel_shape": [3, 2], "strides": [2, 1],
                                             "pads": [1, 0, 1, 1]}, n_out=2)
    one("maxpool_indices_col", "MaxPool", [ix], {"kernel_shape": [2, 2], "strides": [1, 2],
                                                 "storage_order": 1}, n_out=2)
    one("maxpool_indices_3d", "MaxPool", [px3], {"kernel_shape": [2, 2, 3], "strides": [2, 2, 1],
                                                 "storage_order": 1}, n_out=2)

    print("/* Generated by tests/cpu_ops_reference.py with onnx %s (its reference"
          % onnx.__version__)
    print(" * implementation, NumPy %s); do not edit. */" % np.__version__)
    print("#ifndef CPU_OPS_EXPECTED_H\n#define CPU_OPS_EXPECTED_H\n")
    print("#include <math.h>\n#include <stdint.h>\n")
    print("typedef struct ref_tensor {\n    opsched_dtype dt;\n    const char *shape;\n"
          "    const void *data;\n} ref_tensor;\n")
    print("typedef struct ref_case {\n    const char *name;\n    int n_in;\n"
          "    ref_tensor in[5];\n    int n_out;\n    ref_tensor out[2];\n} ref_case;\n")
    for line in out:
        print(line)
    print("\n#endif")


if __name__ == "__main__":
    sys.exit(main())
