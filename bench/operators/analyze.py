#!/usr/bin/env python3
"""Analysis of the operator sweeps against PyTorch (benchmark tooling only).

Reads the CSV files written by bench/operators/sweep.sh and prints the four
reports: sweep throughput, stability between runs, agreement with PyTorch,
and energy (counter against power integration, run to run).
"""
import csv
import statistics
import sys
from pathlib import Path


def rows(path, ok_only=True):
    with open(path) as f:
        out = [r for r in csv.DictReader(f)]
    return [r for r in out if not ok_only or r.get("status", "ok") == "ok"]


def by_sig(path, col="Latency"):
    d = {}
    for r in rows(path):
        if r.get(col, "") != "":
            d[r["signature"]] = float(r[col])
    return d


def pct(xs, q):
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def main(d):
    d = Path(d)
    times = dict(line.split("=", 1) for line in (d / "times.txt").read_text().split())
    print("== 1. sweep throughput (conv2d, latency only, algo heuristic, math tf32)")
    sweep = rows(d / "sweep.csv", ok_only=False)
    n_sweep = len(sweep)
    t_sweep = float(times["sweep_s"])
    under_1ms = [r for r in sweep if r["status"] == "ok" and float(r["Latency"]) < 1.0]
    r_ops = n_sweep / t_sweep
    t_loop = float(times["torch_loop_s"])
    n_loop = int(times["torch_loop_n"])
    t_pp = float(times["per_process_s"])
    n_pp = int(times["per_process_n"])
    r_loop, r_pp = n_loop / t_loop, n_pp / t_pp
    print(f"opsched sweep        : {n_sweep} configs in {t_sweep:.2f} s = {r_ops:.1f} configs/s "
          f"(process start, warm-up, algorithm selection and database writes included)")
    print(f"  configs under 1 ms : {len(under_1ms)}")
    # Time per configuration from the commit timestamps of consecutive rows
    # (one worker, so rows are committed one after another).
    seq = sorted(sweep, key=lambda r: float(r["created_at"]))
    small_t, small_n = 0.0, 0
    for prev, cur in zip(seq, seq[1:]):
        if cur["status"] == "ok" and float(cur["Latency"]) < 1.0:
            small_t += float(cur["created_at"]) - float(prev["created_at"])
            small_n += 1
    if small_n:
        print(f"  sub-1-ms configs   : {small_n / small_t:.1f} configs/s "
              f"({small_n} configs, time between consecutive database commits)")
    print(f"PyTorch, one process : {n_loop} configs in {t_loop:.2f} s = {r_loop:.1f} configs/s "
          f"(interpreter start and CUDA init included)")
    print(f"PyTorch, per process : {n_pp} configs in {t_pp:.2f} s = {r_pp:.3f} configs/s")
    print(f"ratio vs per-process : {r_ops / r_pp:.0f}x")
    print(f"ratio vs torch loop  : {r_ops / r_loop:.2f}x")
    cvs = [float(r["cv"]) for r in sweep if r["status"] == "ok"]
    tcv = [float(r["cv"]) for r in rows(d / "torch_loop.csv")]
    print(f"statistical quality  : both 50 timed samples after warm-up, each a CUDA-graph replay "
          f"of L launches (>= 200 us); CV under 2.5%: "
          f"opsched {100 * sum(c < 0.025 for c in cvs) / len(cvs):.1f}%, "
          f"PyTorch {100 * sum(c < 0.025 for c in tcv) / len(tcv):.1f}%")
    statuses = {}
    for r in sweep:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    print(f"statuses             : {statuses}")

    print("\n== 2. stability: the same configurations in two separate runs")
    a, b = by_sig(d / "stab1.csv"), by_sig(d / "stab2.csv")
    common = sorted(set(a) & set(b))
    dev = [abs(b[s] / a[s] - 1) for s in common]
    print(f"configs              : {len(common)}")
    print(f"|ratio-1| median     : {100 * statistics.median(dev):.2f}%   (target <= 1%)")
    print(f"|ratio-1| p95        : {100 * pct(dev, 0.95):.2f}%   (target <= 3%)")
    s1 = rows(d / "stab1.csv")
    print(f"CV under 2.5%        : {100 * sum(float(r['cv']) < 0.025 for r in s1) / len(s1):.1f}% of configs")

    if (d / "default1.csv").exists() and (d / "default2.csv").exists():
        print("\n== 2b. default sampling (until the median's 95% interval is within +-0.5%, "
              "or 1 s): the 288-convolution grid twice")
        a, b = by_sig(d / "default1.csv"), by_sig(d / "default2.csv")
        common = sorted(set(a) & set(b))
        dev = [abs(b[s] / a[s] - 1) for s in common]
        n_all = len(rows(d / "default1.csv", ok_only=False))
        secs = float(times.get("default1_s", "nan"))
        print(f"configs              : {len(common)} of {n_all}")
        print(f"configs per second   : {n_all / secs:.1f} (whole command, run 1; target >= 20)")
        print(f"|ratio-1| median     : {100 * statistics.median(dev):.2f}%   (target <= 1%)")
        print(f"|ratio-1| p95        : {100 * pct(dev, 0.95):.2f}%")

    print("\n== 3. agreement with PyTorch (same configs, same method: CUDA-graph replays; "
          "cuDNN 9 engine heuristics as PyTorch with cudnn.benchmark off; TF32)")
    ours = by_sig(d / "sweep.csv")
    theirs = by_sig(d / "torch_loop.csv", "median_ms")
    common = [s for s in ours if s in theirs]
    ratios = [ours[s] / theirs[s] for s in common]
    first50 = ratios[:50]
    for label, rs in (("first 50", first50), ("all", ratios)):
        err = [abs(r - 1) for r in rs]
        print(f"{label:8s}: n={len(rs)}  median |opsched/torch - 1| = {100 * statistics.median(err):.2f}%  "
              f"median ratio {statistics.median(rs):.3f}  p90 |err| {100 * pct(err, 0.9):.1f}%")

    print("\n== 4. energy: counter vs power integration, run to run")
    e1, e2 = rows(d / "energy1.csv"), rows(d / "energy2.csv")
    k2 = {r["signature"]: r for r in e2}
    agree, rep = [], []
    print(f"{'config':60s} {'counter mJ':>11s} {'power mJ':>10s} {'dyn mJ':>9s} {'W':>6s} {'run2 mJ':>9s}")
    for r in e1:
        if r["energy_j"] == "":
            continue
        c, p = float(r["energy_j"]), float(r["energy_power_j"] or "nan")
        agree.append(abs(p / c - 1))
        r2 = k2.get(r["signature"])
        c2 = float(r2["energy_j"]) if r2 and r2["energy_j"] else float("nan")
        rep.append(abs(c2 / c - 1))
        print(f"{r['signature'][:60]:60s} {1e3 * c:11.4f} {1e3 * p:10.4f} "
              f"{1e3 * float(r['dynamic_energy_j'] or 'nan'):9.4f} {float(r['power_mean_w']):6.1f} {1e3 * c2:9.4f}")
    if agree:
        print(f"counter vs power integration: median |diff| {100 * statistics.median(agree):.2f}%, "
              f"max {100 * max(agree):.2f}%")
        print(f"run to run (counter)        : median |diff| {100 * statistics.median(rep):.2f}%, "
              f"max {100 * max(rep):.2f}%")


if __name__ == "__main__":
    main(sys.argv[1])
