#!/usr/bin/env python3
"""PyTorch's own error in fp32 and TF32 on exports of the set, same weights.

For each named model of the export set (bench/exports/models), the module
is built as make_exports.py built it, its parameters and buffers are given
the values compare.py writes for the export's initializers of the same
name, and it runs on the GPU three times: strict fp32 (TF32 off for matmul and
cuDNN), PyTorch's default (TF32 convolutions, fp32 matrix products) and
TF32 (both on, as torch.compile's "high" precision and
`torch.backends.cuda.matmul.allow_tf32 = True` do).  Each is compared
with ONNX Runtime's CPU run of the export with the same weights and
inputs, the reference compare.py uses, so a row reads beside opsched's.

    torch_peer.py --only NAME,... [--models DIR] [--out FILE.csv] [--tol 1e-2]

Columns: name, matched (state tensors given the export's values, of all),
torch_fp32_rel_l2 (against ONNX Runtime: near 1e-6 when the weights match),
torch_default_rel_l2, torch_tf32_rel_l2, within_tol (TF32 within --tol).
A model whose tensors do not all match by name (an exporter that folded or
renamed them) says so, and its errors describe different weights.
"""
import argparse
import csv
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import consumers, make_inputs, rel_l2, weight_values  # noqa: E402
from make_exports import build  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--only", required=True, help="comma list of model names")
    ap.add_argument("--models", default=os.path.join(HERE, "models"))
    ap.add_argument("--out", default="torch-peer.csv")
    ap.add_argument("--tol", type=float, default=1e-2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    import onnx
    import onnxruntime as ort
    import torch

    with open(os.path.join(a.models, "manifest.json")) as f:
        known = {e["name"]: e for e in json.load(f)["models"]}
    rows = []
    for name in a.only.split(","):
        e = known.get(name)
        if not e or "file" not in e or e["source"] == "transformers":
            print("torch_peer: %s: not an exported timm or torchvision model" % name)
            continue
        path = os.path.join(os.path.dirname(os.path.abspath(a.models)), e["file"])
        model = onnx.load(path, load_external_data=False)
        use = consumers(model.graph)
        inits = {t.name: t for t in model.graph.initializer}
        net, _ = build(e)
        state = net.state_dict()
        values, matched = {}, 0
        for k, v in state.items():
            t = inits.get(k)
            if t is not None and list(t.dims) == list(v.shape) and v.dtype.is_floating_point:
                values[k] = torch.from_numpy(
                    weight_values(k, t.dims, use.get(k, [])).astype(np.float32))
                matched += 1
        net.load_state_dict(values, strict=False)
        # ONNX Runtime's reference, with the initializers as compare.py writes them.
        for t in model.graph.initializer:
            if t.data_location == onnx.TensorProto.EXTERNAL:
                arr = weight_values(t.name, t.dims, use.get(t.name, []))
                arr = arr.astype(onnx.helper.tensor_dtype_to_np_dtype(t.data_type))
                t.ClearField("external_data")
                t.data_location = onnx.TensorProto.DEFAULT
                t.raw_data = arr.tobytes()
        inputs = make_inputs(e["inputs"], a.seed)
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        sess = ort.InferenceSession(model.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        want = sess.run(None, inputs)[0]
        del sess, model
        dev = torch.device("cuda")
        net = net.to(dev).eval()
        args = [torch.from_numpy(v).to(dev) for v in inputs.values()]
        errs = {}
        # PyTorch's own default is the middle one: TF32 convolutions, fp32 products.
        for mode, mm, conv in (("fp32", False, False), ("default", False, True),
                               ("tf32", True, True)):
            torch.backends.cuda.matmul.allow_tf32 = mm
            torch.backends.cudnn.allow_tf32 = conv
            with torch.no_grad():
                out = net(*args)
            if isinstance(out, (tuple, list)):
                out = out[0]
            if isinstance(out, dict):
                out = out["out"]
            errs[mode] = float(rel_l2(out.float().cpu().numpy(), want))
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        row = {"name": name, "matched": "%d/%d" % (matched, len(state)),
               "torch_fp32_rel_l2": "%.3g" % errs["fp32"],
               "torch_default_rel_l2": "%.3g" % errs["default"],
               "torch_tf32_rel_l2": "%.3g" % errs["tf32"],
               "within_tol": int(errs["tf32"] <= a.tol)}
        print("%-28s tensors %-9s fp32 %-9s default %-9s tf32 %-9s" % (
            name, row["matched"], row["torch_fp32_rel_l2"], row["torch_default_rel_l2"],
            row["torch_tf32_rel_l2"]))
        rows.append(row)
        del net
        torch.cuda.empty_cache()
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["name", "matched", "torch_fp32_rel_l2",
                                          "torch_default_rel_l2", "torch_tf32_rel_l2",
                                          "within_tol"])
        w.writeheader()
        w.writerows(rows)
    meta = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
            "device": torch.cuda.get_device_name(0), "onnxruntime": ort.__version__,
            "tol": a.tol, "command": " ".join(["bench/exports/torch_peer.py"] + sys.argv[1:])}
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
