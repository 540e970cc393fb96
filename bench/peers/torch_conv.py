#!/usr/bin/env python3
"""PyTorch peer for opsched's operator measurements (benchmark tooling only).

Reads convolution configurations from an `opsched export csv` file (the
`signature` column holds the exact configuration) and times them with
PyTorch the way profiling scripts do: nn.functional.conv2d on random input,
warm-up, then CUDA-event-timed samples; the median is reported.

  torch_conv.py loop --csv sweep.csv --out torch.csv [--math tf32] [--algo heuristic|find]
                     [--method events|graph]
  torch_conv.py one  --sig 'Conv|x:1x64x56x56:f32|...' [--math tf32]
  torch_conv.py per-process --csv sweep.csv --out per_process.csv [--limit N]

`loop` is one process over all configurations; `one` is one configuration
per process; `per-process` runs `one` in a fresh Python process for each
configuration, as the common sweep scripts do, and records wall time.
"""
import argparse
import csv
import re
import statistics
import subprocess
import sys
import time


def parse_sig(sig):
    """Conv signature -> dict of conv parameters."""
    parts = sig.split("|")
    if parts[0] != "Conv":
        return None
    shapes = [p for p in parts[1:] if p[:2] in ("x:", "w:")]
    x = [int(v) for v in shapes[0].split(":")[1].split("x")]
    w = [int(v) for v in shapes[1].split(":")[1].split("x")]
    bias = len(shapes) > 2
    kv = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
    ints = lambda k: [int(v) for v in kv[k].split(",")]
    pads = ints("p")
    return dict(x=x, w=w, bias=bias, stride=ints("s"), pads=pads,
                dilation=ints("d"), groups=int(kv["g"]))


def setup(math, algo):
    import torch
    torch.backends.cudnn.enabled = True
    torch.backends.cudnn.benchmark = (algo == "find")
    torch.backends.cudnn.allow_tf32 = (math == "tf32")
    torch.backends.cuda.matmul.allow_tf32 = (math == "tf32")
    return torch


def time_graph(torch, run, iters, sample_min_us=200.0):
    """opsched's method: L launches captured once as a CUDA graph, replayed
    between two events per sample; samples enqueued back to back."""
    L = 1
    for _ in range(10):
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            run()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            for _ in range(L):
                run()
        g.replay()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        ms = a.elapsed_time(b)
        if ms * 1000 >= sample_min_us or L >= 4096:
            break
        per = ms / L
        L = min(max(int(sample_min_us / 1000 / per * 1.2) + 1, 2 * L), 4096)
    start = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    stop = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        start[i].record()
        g.replay()
        stop[i].record()
    torch.cuda.synchronize()
    return [x.elapsed_time(y) / L for x, y in zip(start, stop)]


def time_conv(torch, cfg, warmup_ms, iters, dtype, method="events"):
    import torch.nn.functional as F
    dev = "cuda"
    x = torch.randn(*cfg["x"], device=dev, dtype=dtype)
    w = torch.randn(*cfg["w"], device=dev, dtype=dtype)
    b = torch.randn(cfg["w"][0], device=dev, dtype=dtype) if cfg["bias"] else None
    t, l, bt, r = cfg["pads"]
    if t == bt and l == r:
        pad = (t, l)
        run = lambda: F.conv2d(x, w, b, cfg["stride"], pad, cfg["dilation"], cfg["groups"])
    else:
        xp = F.pad(x, (l, r, t, bt))
        run = lambda: F.conv2d(xp, w, b, cfg["stride"], 0, cfg["dilation"], cfg["groups"])
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    n = 0
    while n < 10 or (time.perf_counter() - t0) * 1e3 < warmup_ms:
        run()
        n += 1
        if n % 32 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    if method == "graph":
        samples = time_graph(torch, run, iters)
        return statistics.median(samples), samples
    start = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    stop = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        start[i].record()
        run()
        stop[i].record()
    torch.cuda.synchronize()
    samples = [s.elapsed_time(e) for s, e in zip(start, stop)]
    return statistics.median(samples), samples


def read_configs(path, limit=None):
    rows = []
    with open(path) as f:
        for row in csv.DictReader(f):
            if row.get("status", "ok") != "ok" or not row.get("signature", "").startswith("Conv|"):
                continue
            rows.append(row)
    seen, out = set(), []
    for r in rows:
        if r["signature"] not in seen:
            seen.add(r["signature"])
            out.append(r)
    return out[:limit] if limit else out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["loop", "one", "per-process"])
    ap.add_argument("--csv")
    ap.add_argument("--sig")
    ap.add_argument("--out")
    ap.add_argument("--math", default="tf32", choices=["fp32", "tf32", "fp16", "bf16"])
    ap.add_argument("--algo", default="heuristic", choices=["heuristic", "find"])
    ap.add_argument("--warmup-ms", type=float, default=20)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--method", default="events", choices=["events", "graph"],
                    help="events: an event pair around each call (common scripts); "
                         "graph: opsched's method, CUDA-graph replays of L calls")
    a = ap.parse_args()

    if a.mode == "per-process":
        rows = read_configs(a.csv, a.limit)
        t0 = time.perf_counter()
        with open(a.out, "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(["signature", "median_ms", "wall_s"])
            for r in rows:
                s0 = time.perf_counter()
                res = subprocess.run([sys.executable, __file__, "one", "--sig", r["signature"],
                                      "--math", a.math, "--algo", a.algo,
                                      "--warmup-ms", str(a.warmup_ms), "--iters", str(a.iters),
                                      "--method", a.method],
                                     capture_output=True, text=True, check=True)
                wr.writerow([r["signature"], res.stdout.strip(), f"{time.perf_counter() - s0:.3f}"])
        total = time.perf_counter() - t0
        print(f"per-process: {len(rows)} configs in {total:.2f} s = {len(rows) / total:.3f} configs/s")
        return

    torch = setup(a.math, a.algo)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.math, torch.float32)
    if a.mode == "one":
        med, _ = time_conv(torch, parse_sig(a.sig), a.warmup_ms, a.iters, dtype, a.method)
        print(f"{med:.6f}")
        return

    rows = read_configs(a.csv, a.limit)
    t0 = time.perf_counter()
    with open(a.out, "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["signature", "median_ms", "cv"])
        for r in rows:
            med, s = time_conv(torch, parse_sig(r["signature"]), a.warmup_ms, a.iters, dtype,
                               a.method)
            cv = statistics.pstdev(s) / statistics.mean(s) if len(s) > 1 else 0
            wr.writerow([r["signature"], f"{med:.6f}", f"{cv:.5f}"])
    total = time.perf_counter() - t0
    print(f"torch loop: {len(rows)} configs in {total:.2f} s = {len(rows) / total:.2f} configs/s")


if __name__ == "__main__":
    main()
