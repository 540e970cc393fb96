#!/usr/bin/env python3
"""Predictions of the network suite's models against what the suite measured.

For every (model, batch, math) row of the given results.csv files (the
newest row of each wins), runs `opsched predict` on the model's ONNX export
with the suite's input shapes and compares the predicted latency with the
measured one: opsched's sequential schedule as one CUDA graph
(`opsched_seq_ms`), which is what `predict` composes in graph mode.  Prints
a Markdown table (error, the printed error bar, whether the bar covers the
error) and a summary line; CPU only, from shipped data or a database.

  bench/prediction/suite_check.py --opsched BIN [--data h100 | --db FILE]
      [--math tf32] [--batch 1] RESULTS.csv [...]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NETS = os.path.join(HERE, "..", "networks")


def shapes_of(model, batch):
    return ",".join("%s:%s" % (s["name"], "x".join(str(batch if d == "batch" else d)
                                                    for d in s["shape"])) for s in model["inputs"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--opsched", required=True)
    ap.add_argument("--data", default="h100")
    ap.add_argument("--db")
    ap.add_argument("--math", default="tf32")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("results", nargs="+")
    a = ap.parse_args()
    manifest = {m["name"]: m for m in json.load(open(os.path.join(NETS, "models", "manifest.json")))["models"]}
    rows = {}
    for path in a.results:
        for r in csv.DictReader(open(path)):
            if r["math"] != a.math or int(r["batch"]) != a.batch or not r.get("opsched_seq_ms"):
                continue
            if r["model"] not in manifest:
                continue
            old = rows.get(r["model"])
            if old is None or r.get("finished", "") >= old.get("finished", ""):
                rows[r["model"]] = r
    print("| model | measured (ms) | predicted (ms) | error | printed +- | covered | roofline share |")
    print("|---|---:|---:|---:|---:|---|---:|")
    errs, covered, n = [], 0, 0
    for name in sorted(rows):
        m = manifest[name]
        cmd = [a.opsched, "predict", os.path.join(NETS, m["file"]), "--shapes",
               shapes_of(m, a.batch), "--math", a.math, "--format", "json"]
        cmd += ["--db", a.db] if a.db else ["--data", a.data]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            msg = (p.stderr.strip().splitlines() or ["?"])[0][:120]
            print("| %s | %s | failed: %s | | | | |" % (name, rows[name]["opsched_seq_ms"], msg))
            continue
        j = json.loads(p.stdout)
        tot = j.get("totals", j)
        pred = tot.get("latency_ms")
        bar = tot.get("latency_error")
        layers = j.get("layers", [])
        roof = sum(l.get("ms", 0) or 0 for l in layers if l.get("source") == "roofline")
        allms = sum(l.get("ms", 0) or 0 for l in layers)
        meas = float(rows[name]["opsched_seq_ms"])
        if pred is None or bar is None:
            print("| %s | %.3f | no total | | | | |" % (name, meas))
            continue
        err = pred / meas - 1
        cov = abs(err) <= bar
        n += 1
        covered += cov
        errs.append(abs(err))
        print("| %s | %.3f | %.3f | %+.1f%% | %.1f%% | %s | %.0f%% |" % (
            name, meas, pred, 100 * err, 100 * bar, "yes" if cov else "no",
            100 * roof / allms if allms > 0 else 0))
    if n:
        print("\n%d models, batch %d, %s: median |error| %.1f%%, worst %.1f%%, the printed +- covers "
              "the error on %d of %d" % (n, a.batch, a.math, 100 * statistics.median(errs),
                                          100 * max(errs), covered, n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
