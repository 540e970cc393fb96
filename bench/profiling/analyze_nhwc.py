#!/usr/bin/env python3
"""Report of bench/profiling/zoo_nhwc.sh: opsched (NHWC, TF32, BN folded) free-running
and CUDA-graph end to end against PyTorch eager / CUDA graph / torch.compile
(same call, same GPU), and the attribution of the CUDA-graph end to end to
the layers timed alone.   bench/profiling/analyze_nhwc.py RESULT_DIR > RESULT_DIR/report.txt"""
import csv, glob, math, os, sys

d = sys.argv[1]
t = {}
for f in glob.glob(os.path.join(d, "torch_b*.csv")):
    for r in csv.DictReader(open(f)):
        t[(r["model"], int(r["batch"]), r["mode"])] = float(r["median_ms"])
print(open(os.path.join(d, "env.txt")).read().strip())
print("opsched: `opsched profile M --batch 1,16 --math tf32 --layout nhwc --fold-bn --isolated --check on`;")
print("medians in ms. free = free-running launches (no CUDA graph), graph = the inference replayed as one")
print("CUDA graph. PyTorch: torchvision models, BN folded (torch.fx fuse), TF32 convolutions, cuDNN")
print("heuristics (benchmark off) on both sides; -cl = model and input in channels_last.")
print("eager/free: PyTorch eager over opsched free; graph/graph: PyTorch CUDA graph over opsched graph;")
print("alone%: sum of each distinct layer timed alone (CUDA-graph replays) over the CUDA-graph end to end.\n")
hdr = ("model", "b", "free", "graph", "t.eager", "t.graph", "t.eag-cl", "t.grf-cl", "t.compile",
       "eager/free", "graph/graph", "grf-cl/graph", "compile/graph", "alone%", "relL2 vs CPU")
print("%-13s %3s %7s %7s | %8s %8s %8s %8s %9s | %10s %11s %12s %13s | %6s %s" % hdr)
fails = []
for f in sorted(glob.glob(os.path.join(d, "profile", "*_overall.csv"))):
    for r in csv.DictReader(open(f)):
        m, b = r["model"], int(r["batch"])
        fr, g = float(r["median"]), float(r["e2e_graph_median_ms"])
        get = lambda mode: t.get((m, b, mode), math.nan)
        te, tg, tec, tgc, tc = get("eager"), get("graph"), get("eager-cl"), get("graph-cl"), get("compile")
        iso = float(r["attribution_isolated_pct"])
        print("%-13s %3d %7.3f %7.3f | %8.3f %8.3f %8.3f %8.3f %9.3f | %10.2f %11.2f %12.2f %13.2f | %6.1f %s"
              % (m, b, fr, g, te, tg, tec, tgc, tc, te / fr, tg / g, tgc / g, tc / g, iso,
                 r["check_rel_l2"]))
        if tg / g < 1: fails.append("%s b%d: graph slower than PyTorch's graph" % (m, b))
        if b == 1 and te / fr < 2: fails.append("%s b1: free < 2x PyTorch eager" % m)
        if abs(iso - 100) > 10: fails.append("%s b%d: attribution %.1f%%" % (m, b, iso))
print("\ntargets: opsched graph no slower than PyTorch graph on any model; opsched free >= 2x PyTorch")
print("eager at batch 1; layers alone within 10% of the end to end.")
print("result:", "all met" if not fails else "MISSED: " + "; ".join(fails))
