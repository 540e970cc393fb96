#!/usr/bin/env python3
"""The two-level collective model against a multi-node nccl-tests run
(benchmark tooling only).

Imports a one-node log (G ranks) and a multi-node log (M nodes of G ranks)
of the same collective into a fresh database (opsched commbench --import),
then predicts the multi-node times from the one-node fit and the network
(opsched commbench --fit --nodes M --inter-node-gbps B --inter-node-us L)
and compares them size by size.  The network's bandwidth B is the
documented one.  Its latency per hop is either given (--inter-node-us) or,
with --fit-latency, solved so that the smallest size is predicted exactly
(one point spent; every other size is a prediction).

usage: multinode_check.py --opsched BIN --one-node LOG --gpus G --multi-node LOG --nodes M
                          --inter-node-gbps B (--inter-node-us L | --fit-latency)
                          [--device NAME] --out REPORT.md
"""
import argparse
import csv
import io
import os
import subprocess
import sys
import tempfile


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("multinode_check: %s failed (%d): %s" % (" ".join(cmd), p.returncode,
                                                           p.stderr[-800:]))
    return p.stdout


def measured(a, db):
    out = run([a.opsched, "export", "--db", db, "--collectives"])
    rows = list(csv.DictReader(io.StringIO(out)))
    return rows


def predicted(a, db, latency):
    out = run([a.opsched, "commbench", "--fit", "--db", db, "--nodes", str(a.nodes),
               "--inter-node-gbps", str(a.inter_node_gbps), "--inter-node-us", str(latency),
               "--format", "csv"])
    rows = [r for r in csv.DictReader(io.StringIO(out))
            if int(r["gpus_per_node"]) == a.gpus and int(r["nodes"]) == a.nodes]
    return {int(float(r["bytes"])): r for r in rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--opsched", required=True)
    ap.add_argument("--one-node", required=True)
    ap.add_argument("--gpus", type=int, required=True, help="ranks of the one-node log")
    ap.add_argument("--multi-node", required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--inter-node-gbps", type=float, required=True)
    ap.add_argument("--inter-node-us", type=float)
    ap.add_argument("--fit-latency", action="store_true")
    ap.add_argument("--device", default="imported GPU")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if (a.inter_node_us is None) == (not a.fit_latency):
        ap.error("one of --inter-node-us and --fit-latency")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "c.db")
        run([a.opsched, "commbench", "--import", a.one_node, "--db", db, "--gpus", str(a.gpus),
             "--device", a.device])
        run([a.opsched, "commbench", "--import", a.multi_node, "--db", db, "--gpus",
             str(a.gpus * a.nodes), "--nodes", str(a.nodes), "--device", a.device])
        meas = {int(r["bytes"]): float(r["time_us"]) for r in measured(a, db)
                if int(r["ranks"]) == a.gpus * a.nodes and int(r["nodes"]) == a.nodes}
        sizes = sorted(meas)
        lat = a.inter_node_us
        if a.fit_latency:  # bisection on the smallest size: the model grows with the latency
            lo, hi = 0.0, 1000.0
            for _ in range(40):
                mid = 0.5 * (lo + hi)
                if float(predicted(a, db, mid)[sizes[0]]["time_us"]) < meas[sizes[0]]:
                    lo = mid
                else:
                    hi = mid
            lat = round(0.5 * (lo + hi), 3)
        pred = predicted(a, db, lat)
        one = {int(r["bytes"]): float(r["time_us"]) for r in measured(a, db)
               if int(r["ranks"]) == a.gpus and int(r["nodes"]) == 1}
    n = a.gpus * a.nodes
    lines = ["# All-reduce over %d nodes of %d GPUs: the two-level model against the published run"
             % (a.nodes, a.gpus), "",
             "One node's fit (`%s`) and a network of %g Gbit/s per node and %g us per hop%s."
             % (os.path.basename(a.one_node), a.inter_node_gbps, lat,
                " (solved on the smallest size)" if a.fit_latency else ""), "",
             "| size (B) | one node, us | %d ranks measured, us | predicted, us | algorithm | "
             "error | busbw measured | busbw predicted |" % n,
             "|---:|---:|---:|---:|---|---:|---:|---:|"]
    errs = []
    for s in sizes:
        p = pred.get(s)
        if not p:
            continue
        t = float(p["time_us"])
        e = (t - meas[s]) / meas[s]
        if not (a.fit_latency and s == sizes[0]):
            errs.append((s, abs(e)))
        f = 2.0 * (n - 1) / n
        lines.append("| %d | %s | %.2f | %.2f | %s | %+.1f%% | %.2f | %.2f |" % (
            s, "%.2f" % one[s] if s in one else "-", meas[s], t, p["algorithm"], 100 * e,
            s / meas[s] / 1e3 * f, s / t / 1e3 * f))

    def summary(sel, label):
        e = sorted(x for s, x in errs if sel(s))
        if not e:
            return
        med = e[len(e) // 2] if len(e) % 2 else 0.5 * (e[len(e) // 2 - 1] + e[len(e) // 2])
        lines.append("- %s: %d sizes, median |error| %.1f%%, worst %.1f%%" % (
            label, len(e), 100 * med, 100 * e[-1]))
    lines.append("")
    summary(lambda s: True, "every size")
    summary(lambda s: s < 1 << 20, "below 1 MiB")
    summary(lambda s: (1 << 20) <= s < (256 << 20), "1 MiB to 128 MiB")
    summary(lambda s: s >= 256 << 20, "256 MiB and up")
    lines.append("")
    open(a.out, "w").write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
