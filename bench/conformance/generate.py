#!/usr/bin/env python3
"""Writes the ONNX backend node tests of the pinned onnx package.

    generate.py OUTDIR

Each case goes to OUTDIR/<name>/model.onnx with OUTDIR/<name>/test_data_set_N/
{input,output}_K.pb and its tolerances in OUTDIR/<name>/case.json, the layout of onnx's own `backend-test-tools
generate-data` (whose installed version writes only the model-kind cases):
the cases are onnx's, collected by onnx.backend.test.case.node, and their
inputs and expected outputs are what onnx's reference code computed.
A file OUTDIR/ONNX_VERSION records the onnx version that wrote them.

Run it with the interpreter of a virtual environment holding the pinned
onnx (bench/conformance/run.py makes one).
"""
import json
import os
import shutil
import sys

import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node as node_cases


def tensor_bytes(value, vi):
    if not vi.type.HasField("tensor_type"):
        return None  # sequences, maps, optionals: out of scope, not written
    if isinstance(value, onnx.TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(value, vi.name).SerializeToString()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: generate.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for case in node_cases.collect_testcases():
        d = os.path.join(out, case.name)
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump({"rtol": case.rtol, "atol": case.atol}, f)
        for i, (inputs, outputs) in enumerate(case.data_sets or []):
            ds = os.path.join(d, "test_data_set_%d" % i)
            os.makedirs(ds)
            g = case.model.graph
            for kind, values, infos in (("input", inputs, g.input), ("output", outputs, g.output)):
                for j, v in enumerate(values):
                    b = tensor_bytes(v, infos[j])
                    if b is None:
                        continue
                    with open(os.path.join(ds, "%s_%d.pb" % (kind, j)), "wb") as f:
                        f.write(b)
        n += 1
    with open(os.path.join(out, "ONNX_VERSION"), "w") as f:
        f.write(onnx.__version__ + "\n")
    print("%d node test cases written to %s (onnx %s)" % (n, out, onnx.__version__))


if __name__ == "__main__":
    main()
