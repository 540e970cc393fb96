#!/usr/bin/env python3
"""Where a network's error grows: every float tensor of an export, run twice.

Runs one export of the set (bench/exports/models) through `opsched run`
twice, with every floating-point tensor of the graph made a graph output:
once as the reference (default: the CUDA backend in strict fp32) and once
as the run under study (default: TF32).  For each node in graph order it
prints the relative L2 error of its outputs against the reference and how
much larger that is than the largest error among its inputs (the node's
own contribution).  The weights and inputs are compare.py's.

    layer_errors.py --opsched BIN --model NAME [--models DIR] [--out DIR]
                    [--ref BACKEND:MATH] [--test BACKEND:MATH] [--top N]
                    [-- extra opsched run options]

Writes DIR/NAME-layers.csv (node, op, output, error, inputs' error, growth)
and prints the nodes with the largest growth.  Making every tensor an
output keeps each node's result in memory and stops fusions that would
hide it, so the run is not the deployed one; the errors each node adds are.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import make_inputs, rel_l2, safe_name, write_weights  # noqa: E402


def run(opsched, model, inputs, backend, math, outdir, extra):
    shutil.rmtree(outdir, ignore_errors=True)
    cmd = [opsched, "run", model, "--backend", backend, "--math", math, "--iters", "0",
           "--output-dir", outdir] + inputs + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("layer_errors: %s: %s" % (" ".join(cmd[:8]), p.stderr.strip()[-2000:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--opsched", required=True)
    ap.add_argument("--model", required=True, help="a name of the export set's manifest")
    ap.add_argument("--models", default=os.path.join(HERE, "models"))
    ap.add_argument("--out", default="layer-errors")
    ap.add_argument("--ref", default="cuda:fp32", help="BACKEND:MATH of the reference")
    ap.add_argument("--test", default="cuda:tf32", help="BACKEND:MATH under study")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("extra", nargs="*", help="after --: more opsched run options")
    a = ap.parse_args()
    import onnx
    from onnx import helper, shape_inference

    with open(os.path.join(a.models, "manifest.json")) as f:
        entry = {e["name"]: e for e in json.load(f)["models"]}.get(a.model)
    if not entry or "file" not in entry:
        sys.exit("layer_errors: %s is not an exported model of the manifest" % a.model)
    work = os.path.abspath(os.path.join(a.out, a.model))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    root = os.path.dirname(os.path.abspath(a.models))
    src = os.path.join(root, entry["file"])
    if not os.path.exists(src):
        src = os.path.join(HERE, entry["file"])
    model = onnx.load(src, load_external_data=False)
    write_weights(model, work)
    inferred = shape_inference.infer_shapes(model)
    types = {v.name: v.type.tensor_type.elem_type for v in
             list(inferred.graph.value_info) + list(inferred.graph.output)}
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}
    have = {o.name for o in model.graph.output}
    added = []
    for n in model.graph.node:
        for o in n.output:
            if o and o not in have and types.get(o) in floats:
                model.graph.output.append(helper.make_tensor_value_info(o, types[o], None))
                have.add(o)
                added.append(o)
    path = os.path.join(work, "all-outputs.onnx")
    onnx.save(model, path)
    inputs = []
    for k, v in make_inputs(entry["inputs"], a.seed).items():
        f = os.path.join(work, "in_%s.npy" % safe_name(k))
        np.save(f, v)
        inputs += ["--input", "%s=%s" % (k, f)]
    rb, rm = a.ref.split(":")
    tb, tm = a.test.split(":")
    run(a.opsched, path, inputs, rb, rm, os.path.join(work, "ref"), a.extra)
    run(a.opsched, path, inputs, tb, tm, os.path.join(work, "test"), a.extra)

    err = {}

    def tensor_err(name):
        if name in err:
            return err[name]
        r, t = (os.path.join(work, d, safe_name(name) + ".npy") for d in ("ref", "test"))
        e = None
        if os.path.exists(r) and os.path.exists(t):
            x, y = np.load(t), np.load(r)
            if x.shape == y.shape and np.all(np.isfinite(y)):
                e = float(rel_l2(x.astype(np.float64), y.astype(np.float64)))
        err[name] = e
        return e

    rows = []
    for i, n in enumerate(model.graph.node):
        outs = [o for o in n.output if o in have]
        es = [tensor_err(o) for o in outs]
        es = [e for e in es if e is not None]
        if not es:
            continue
        ins = [tensor_err(x) for x in n.input if x]
        ins = [e for e in ins if e is not None]
        e_out, e_in = max(es), (max(ins) if ins else 0.0)
        growth = e_out / e_in if e_in > 0 else float("inf") if e_out > 0 else 1.0
        rows.append((i, n.name, n.op_type, outs[0], e_out, e_in, growth))
    with open(os.path.join(a.out, a.model + "-layers.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["index", "node", "op", "output", "rel_l2", "inputs_rel_l2", "growth"])
        for r in rows:
            w.writerow([r[0], r[1], r[2], r[3], "%.3g" % r[4], "%.3g" % r[5], "%.3g" % r[6]])
    final = [tensor_err(o.name) for o in model.graph.output[:len(have) - len(added)]]
    print("%s: %d nodes; %s vs %s; final outputs' relative L2: %s" % (
        a.model, len(rows), a.test, a.ref, ", ".join("%.3g" % e for e in final if e is not None)))
    # The nodes that add the most: largest error added to a tensor whose
    # error is already visible at the output's scale.
    top = sorted((r for r in rows if r[4] > 1e-4), key=lambda r: -(r[4] - r[5]))[:a.top]
    print("%-6s %-22s %-10s %-10s %-8s %s" % ("index", "op", "rel_l2", "inputs", "growth", "node"))
    for r in sorted(top):
        print("%-6d %-22s %-10.3g %-10.3g %-8.3g %s" % (r[0], r[2], r[4], r[5], r[6], r[1][:70]))
    by_op = {}
    for r in rows:
        d = by_op.setdefault(r[2], [0, 0.0])
        d[0] += 1
        d[1] = max(d[1], r[6] if np.isfinite(r[6]) else 0.0)
    print("largest growth by op: " + ", ".join(
        "%s %.3g" % (k, v[1]) for k, v in sorted(by_op.items(), key=lambda kv: -kv[1][1])[:10]))


if __name__ == "__main__":
    sys.exit(main())
