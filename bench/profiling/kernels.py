#!/usr/bin/env python3
"""Kernel by kernel: where an inference's GPU time goes, opsched against torch.compile.

Both sides are read by Nsight Compute (ncu) with the clocks and caches left
alone (--clock-control none --cache-control none), one metric,
gpu__time_duration.sum: the time each kernel ran on the GPU, without the
launch gaps between kernels.

  torch    run one benchmark-suite model under torch.compile (reduce-overhead,
           freezing, channels_last for images, as bench/networks/suite.py
           times it); warm it, then wrap one inference in
           cudaProfilerStart/Stop so that `ncu --profile-from-start off`
           reads only that inference's kernels
  summary  read ncu's --csv output and print the kernels grouped by name:
           launches, total and mean time, and the total per inference
           (--order: each launch in order instead)

Usage on the GPU machine (bench/gpu_env.sh sets $py and $bin):
  ncu --profile-from-start off --clock-control none --cache-control none \\
      --metrics gpu__time_duration.sum --csv \\
      $py bench/profiling/kernels.py torch --model bert_base_s128 --batch 1 --math tf32 > t.csv
  OPSCHED_CUDA_PROFILE_NODES=40 ncu --profile-from-start off --clock-control none \\
      --cache-control none --metrics gpu__time_duration.sum --csv \\
      $bin run bench/networks/models/mobilenet_v2.onnx --shapes input:1x3x224x224 \\
      --layout nhwc --compare sequential --iters 10 --format csv > o.csv
  python3 bench/profiling/kernels.py summary t.csv --runs 1

OPSCHED_CUDA_PROFILE_NODES=N makes opsched bracket one replay with
cudaProfilerStart/Stop: the third launch of the first CUDA graph of at least
N nodes (the inference, not the small graphs that time stages).  Give the
layout the network deploys with (--layout), or the layout trials' graphs
come first.

Under ncu opsched's planner times its candidates far slower than they run
(every launch goes through the profiler: in bench/results/networks/
h200-2026-11-29/b16-kernels its timings read about 0.06 ms for products
whose kernels ncu timed at 7 us), so the plan it keeps there may not be the
deployed one.  Read the kernels' own times here, and the planner's verdicts
from a plain run (OPSCHED_LOG=debug) or `opsched profile`'s per-layer
algorithms.

One caveat, seen on an H200 (bench/results/networks/h200-2026-11-28/se-split):
cuDNN's conv2d_grouped_direct_kernel read several times longer under ncu
than its layer's time in a replayed graph; compare such kernels with the
per-layer profile before trusting them.
"""
import argparse
import collections
import csv
import io
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NETWORKS = os.path.join(HERE, "..", "networks")


def torch_main(a):
    import json
    import torch
    sys.path.insert(0, NETWORKS)
    import suite
    manifest = json.load(open(os.path.join(NETWORKS, "models", "manifest.json")))
    m = next(x for x in manifest["models"] if x["name"] == a.model)
    tf32 = a.math == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    with torch.no_grad():
        net, args = suite.build_model(m, a.batch, a.math, torch)
        import torch._inductor.config as icfg
        icfg.freezing = True
        if args[0].dim() == 4:
            net = net.to(memory_format=torch.channels_last)
            args = tuple(x.contiguous(memory_format=torch.channels_last) for x in args)
        c = torch.compile(net, mode=a.mode)
        for _ in range(a.warmup):
            c(*args)
        torch.cuda.synchronize()
        rt = torch.cuda.cudart()
        rt.cudaProfilerStart()
        for _ in range(a.runs):
            c(*args)
        torch.cuda.synchronize()
        rt.cudaProfilerStop()
    print("profiled %d inference(s) of %s, batch %d, %s" % (a.runs, a.model, a.batch, a.math),
          file=sys.stderr)
    return 0


def read_ncu(path):
    """[(kernel name, ns)] in launch order from ncu --csv output."""
    text = open(path, errors="replace").read()
    start = text.find('"ID"')
    if start < 0:
        raise SystemExit("%s: no ncu CSV table in it" % path)
    rows = []
    for r in csv.DictReader(io.StringIO(text[start:])):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        v = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "ns")
        scale = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}.get(unit, 1.0)
        rows.append((r["Kernel Name"], v * scale))
    return rows


def short(name, width):
    name = name.split("(")[0] if not name.startswith("void") else name[5:].split("(")[0]
    return name if len(name) <= width else name[:width - 3] + "..."


def summary_main(a):
    rows = read_ncu(a.csv)
    if a.skip:
        rows = rows[a.skip:]
    if a.count:
        rows = rows[:a.count]
    if a.order:
        for i, (name, ns) in enumerate(rows):
            print("%4d %8.2f  %s" % (i, ns / 1e3, short(name, a.width)))
        return 0
    agg = collections.OrderedDict()
    for name, ns in rows:
        n, t = agg.get(name, (0, 0.0))
        agg[name] = (n + 1, t + ns)
    total = sum(ns for _, ns in rows)
    print("%d kernels, %.1f us in all, %.1f us per inference (%d)" %
          (len(rows), total / 1e3, total / 1e3 / a.runs, a.runs))
    print("%8s %10s %9s %6s  %s" % ("launches", "total us", "mean us", "share", "kernel"))
    for name, (n, t) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        print("%8d %10.1f %9.2f %5.1f%%  %s" % (n, t / 1e3, t / 1e3 / n,
                                                 100.0 * t / total if total else 0.0, short(name, a.width)))
    return 0


def main():
    # a summary piped into head ends quietly
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("torch", help="one model under torch.compile, profiled by ncu")
    t.add_argument("--model", required=True)
    t.add_argument("--batch", type=int, default=1)
    t.add_argument("--math", choices=("tf32", "fp32", "fp16"), default="tf32")
    t.add_argument("--mode", default="reduce-overhead")
    t.add_argument("--warmup", type=int, default=5)
    t.add_argument("--runs", type=int, default=1)
    s = sub.add_parser("summary", help="ncu --csv output grouped by kernel")
    s.add_argument("csv")
    s.add_argument("--runs", type=int, default=1, help="inferences the file holds (divides the total)")
    s.add_argument("--skip", type=int, default=0, help="leave out the first N kernels")
    s.add_argument("--count", type=int, default=0, help="keep only N kernels (after --skip)")
    s.add_argument("--width", type=int, default=90)
    s.add_argument("--order", action="store_true",
                   help="list the kernels in launch order (index, us, name) instead of grouping them")
    a = p.parse_args()
    return torch_main(a) if a.cmd == "torch" else summary_main(a)


if __name__ == "__main__":
    sys.exit(main())
