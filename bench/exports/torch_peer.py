#!/usr/bin/env python3
"""PyTorch's own TF32 error beside opsched's, on the same weights.

The export set's files are stripped of their weights and compare.py
writes seeded values by initializer name; an exporter that folds or
renames tensors leaves no way back to the module's parameters.  So for
each named model of the set this script builds the module as
make_exports.py does, gives it weights, exports it again (the same
TorchScript exporter, weights embedded) and runs that one file three
ways, with the same inputs:

  reference   ONNX Runtime's CPU provider on the new export
  opsched     `opsched run FILE --backend cuda --math fp32|tf32`
  torch       the module on the GPU: strict fp32, PyTorch's default (TF32
              convolutions, fp32 matrix products), TF32 (both on, as
              torch.compile's "high" matmul precision)

Two weight sets: `harness`, drawn per parameter the way compare.py draws
per initializer (weights N(0, 1/fan_in), normalisation scales 1 +- 0.1,
biases N(0, 0.01)), and `native`, the module's own initialisation.

    torch_peer.py --only NAME,... --opsched BIN [--models DIR] [--out FILE.csv]

Columns: name, weights, then each run's relative L2 against ONNX Runtime
(opsched_fp32, opsched_tf32, torch_fp32, torch_default, torch_tf32) and
within_tol (opsched's TF32 within --tol).
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import make_inputs, rel_l2, safe_name  # noqa: E402
from make_exports import build  # noqa: E402

FIELDS = ["name", "weights", "opsched_fp32", "opsched_tf32", "torch_fp32", "torch_default",
          "torch_tf32", "within_tol", "error"]


def harness_weights(net):
    """Every floating parameter and buffer drawn as compare.py draws an
    initializer consumed by the same kind of operator."""
    import torch
    norms = (torch.nn.modules.batchnorm._NormBase, torch.nn.LayerNorm, torch.nn.GroupNorm)
    with torch.no_grad():
        for mname, mod in net.named_modules():
            for pname, p in list(mod.named_parameters(recurse=False)) + \
                    list(mod.named_buffers(recurse=False)):
                if p is None or not p.dtype.is_floating_point:
                    continue
                full = (mname + "." if mname else "") + pname
                rng = np.random.default_rng(zlib.crc32(full.encode()))
                shape, n = tuple(p.shape), p.numel()
                u = rng.uniform(-1, 1, n)
                if isinstance(mod, norms) or type(mod).__name__.endswith("Norm2d"):
                    if pname == "running_var":
                        v = 1.0 + 0.5 * np.abs(u)
                    elif pname == "weight":
                        v = 1.0 + 0.1 * u
                    else:
                        v = 0.1 * u
                elif pname == "weight" and p.dim() >= 2:
                    v = rng.standard_normal(n) / np.sqrt(max(int(np.prod(shape[1:])), 1))
                elif p.dim() <= 1 and pname != "bias":
                    v = 1.0 + 0.1 * u  # a scale (layer scale, temperature)
                else:
                    v = 0.1 * rng.standard_normal(n)  # biases, position tables
                p.copy_(torch.from_numpy(v.reshape(shape)).to(p.dtype))


def opsched_run(opsched, path, inputs, math, work):
    args = []
    for k, v in inputs.items():
        f = os.path.join(work, "in_%s.npy" % safe_name(k))
        np.save(f, v)
        args += ["--input", "%s=%s" % (k, f)]
    outdir = os.path.join(work, "out-" + math)
    p = subprocess.run([opsched, "run", path, "--backend", "cuda", "--math", math, "--iters", "0",
                        "--output-dir", outdir] + args, capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        raise RuntimeError("opsched %s: %s" % (math, (p.stderr.strip().splitlines() or ["?"])[-1]))
    return outdir


def one(e, weights, opsched, seed, tol):
    import onnxruntime as ort
    import torch
    net, _ = build(e)
    if weights == "harness":
        harness_weights(net)
    inputs = make_inputs(e["inputs"], seed)
    names = [s["name"] for s in e["inputs"]]
    out0 = e["outputs"][0]
    row = {"name": e["name"], "weights": weights}
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "model.onnx")
        cpu_args = tuple(torch.from_numpy(v) for v in inputs.values())
        kw = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
        torch.onnx.export(net, cpu_args, path, input_names=names, output_names=e["outputs"],
                          opset_version=e.get("opset", 17), do_constant_folding=True, **kw)
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        want = sess.run([out0], inputs)[0]
        del sess
        for math in ("fp32", "tf32"):
            outdir = opsched_run(opsched, path, inputs, math, work)
            got = np.load(os.path.join(outdir, safe_name(out0) + ".npy"))
            row["opsched_" + math] = "%.3g" % rel_l2(got, want)
    dev = torch.device("cuda")
    net = net.to(dev).eval()
    args = [torch.from_numpy(v).to(dev) for v in inputs.values()]
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
        row["torch_" + mode] = "%.3g" % rel_l2(out.float().cpu().numpy(), want)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    row["within_tol"] = int(float(row["opsched_tf32"]) <= tol)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--only", required=True, help="comma list of model names")
    ap.add_argument("--opsched", required=True, help="the opsched binary")
    ap.add_argument("--models", default=os.path.join(HERE, "models"))
    ap.add_argument("--weights", default="harness,native")
    ap.add_argument("--out", default="torch-peer.csv")
    ap.add_argument("--tol", type=float, default=1e-2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    import onnxruntime as ort
    import torch

    with open(os.path.join(a.models, "manifest.json")) as f:
        known = {e["name"]: e for e in json.load(f)["models"]}
    rows = []
    for name in a.only.split(","):
        e = known.get(name)
        if not e or e["source"] == "transformers":
            print("torch_peer: %s: not an exported timm or torchvision model" % name)
            continue
        for w in a.weights.split(","):
            try:
                row = one(e, w, os.path.abspath(a.opsched), a.seed, a.tol)
            except Exception as ex:  # the row says what failed; the others still run
                row = {"name": name, "weights": w, "error": "%s: %s" % (type(ex).__name__,
                                                                       str(ex)[:300])}
            print("  ".join("%s=%s" % (k, row.get(k, "")) for k in FIELDS if row.get(k, "") != ""),
                  flush=True)
            rows.append(row)
            torch.cuda.empty_cache()
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
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
