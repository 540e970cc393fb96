#!/usr/bin/env python3
"""Analysis of the zoo end-to-end profiles (bench/profiling/zoo.sh) (benchmark tooling only).

Reads the `opsched profile` overall CSV files and bench/peers/torch_models.py's
CSV from one run directory and prints: end-to-end latency of every zoo model
against PyTorch eager, PyTorch with a CUDA graph and torch.compile; the
attribution of latency (and energy, where measured) to the layers; energy
per inference of resnet50 with its run-to-run spread.
"""
import csv
import glob
import statistics
import sys
from pathlib import Path


def load_opsched(pattern):
    out = {}
    for path in glob.glob(pattern):
        for r in csv.DictReader(open(path)):
            out[(r["model"], int(r["batch"]))] = r
    return out


def f(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def main(d):
    d = Path(d)
    ops = load_opsched(str(d / "profile" / "*_overall.csv"))
    torch = {}
    for r in csv.DictReader(open(d / "torch_models.csv")):
        torch[(r["model"], int(r["batch"]), r["mode"])] = r
    compiled = {}
    if (d / "torch_compile.csv").exists():
        for r in csv.DictReader(open(d / "torch_compile.csv")):
            compiled[(r["model"], int(r["batch"]))] = r
    print("== 1. end-to-end latency, median ms (TF32 convolutions on both sides; cuDNN heuristics)")
    print(f"{'model':14s} {'b':>3s} {'opsched':>9s} {'opsched':>9s} {'torch':>9s} {'torch':>9s} "
          f"{'torch':>9s} | {'eager/':>7s} {'tgraph/':>8s} {'compile/':>9s}")
    print(f"{'':14s} {'':>3s} {'free':>9s} {'graph':>9s} {'eager':>9s} {'graph':>9s} "
          f"{'compile':>9s} | {'free':>7s} {'ograph':>8s} {'ograph':>9s}")
    worst_graph, eager_b1 = [], []
    for (model, b), r in sorted(ops.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        free, graph = f(r["median"]), f(r["e2e_graph_median_ms"])
        te = f(torch.get((model, b, "eager"), {}).get("median_ms"))
        tg = f(torch.get((model, b, "graph"), {}).get("median_ms"))
        tc = f(compiled.get((model, b), {}).get("median_ms"))
        print(f"{model:14s} {b:3d} {free:9.3f} {graph:9.3f} {te:9.3f} {tg:9.3f} {tc:9.3f} | "
              f"{te / free:7.2f} {tg / graph:8.2f} {tc / graph:9.2f}")
        worst_graph.append((tg / graph, model, b))
        if b == 1:
            eager_b1.append((te / free, model))
    print(f"opsched graph vs torch graph: worst ratio {min(worst_graph)[0]:.2f} ({min(worst_graph)[1]} b{min(worst_graph)[2]}) "
          f"(target >= 1.00: opsched no slower)")
    print(f"opsched free vs torch eager, batch 1: worst {min(eager_b1)[0]:.2f}x ({min(eager_b1)[1]}) "
          f"(target >= 2x)")

    print("\n== 2. attribution: sum of per-layer medians / end-to-end free-running median")
    for (model, b), r in sorted(ops.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        ae = f(r["attribution_energy_pct"])
        print(f"{model:14s} b{b:<3d} layers {f(r['layer_sum_ms']):8.3f} ms / e2e {f(r['median']):8.3f} ms "
              f"= {f(r['attribution_latency_pct']):6.1f}%" + (f"   energy {ae:6.1f}%" if ae == ae else ""))

    le = load_opsched(str(d / "layer_energy" / "*_overall.csv"))
    if le:
        print("energy attribution (every distinct layer measured in its own >= 1 s window):")
        for (model, b), r in sorted(le.items()):
            print(f"{model:14s} b{b:<3d} layers sum / end-to-end energy per inference = "
                  f"{f(r['attribution_energy_pct']):6.1f}%   (latency {f(r['attribution_latency_pct']):6.1f}%)")

    e1 = load_opsched(str(d / "energy1" / "*_overall.csv"))
    if not e1:
        return
    print("\n== 3. energy per inference, resnet50 (two separate runs)")
    e2 = load_opsched(str(d / "energy2" / "*_overall.csv"))
    for key in sorted(e1):
        a, b2 = f(e1[key]["energy_per_inference_j"]), f(e2.get(key, {}).get("energy_per_inference_j"))
        print(f"{key[0]} b{key[1]:<3d} {1e3 * a:9.2f} mJ  run 2 {1e3 * b2:9.2f} mJ  spread "
              f"{100 * abs(b2 / a - 1):5.2f}%  power {f(e1[key]['power_mean_w']):6.1f} W  "
              f"{1e3 * a / key[1]:8.3f} mJ/image")


if __name__ == "__main__":
    main(sys.argv[1])
