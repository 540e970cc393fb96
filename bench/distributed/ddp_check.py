#!/usr/bin/env python3
"""Predicted against measured PyTorch DDP steps (benchmark tooling only).

For every (model, per-GPU batch, precision) measured by torch_ddp.py both on
one GPU (--strategy single) and under DDP on N GPUs (default buckets), in
the same file (the same machine), runs

  opsched predict MODEL --train --batch B --gpus N --comm-db DB --step-ms S

with S the measured one-GPU step: the predicted compute is scaled to it, so
what is predicted is what DDP adds (buckets, all-reduces from commbench's
fit, their overlap with backward).  It reports that prediction with the
model's fitted terms off, then with the two fitted terms (backward stretched
per ms of communication resident in it, and per gradient) fitted by least
squares leave-one-out: each configuration predicted from the others only.

usage: ddp_check.py --opsched BIN (--comm-db DB | --comm-data NAME) [--terms S,US]
                    --out REPORT.md MEASURED.jsonl...
Only models opsched builds a training graph of are predicted (zoo CNNs).
"""
import argparse
import json
import re
import subprocess
import sys

from dist_common import lsq_nonneg2

ZOO = {"resnet50", "vgg16", "resnet18", "resnet34", "resnet101", "vgg11", "vgg13", "vgg19"}


def predict(a, model, batch, gpus, step_ms, slowdown=0.0, per_param_us=0.0, bucket_mb=25.0,
            grad_comm="f32"):
    cmd = [a.opsched, "predict", model, "--train", "--batch", str(batch), "--gpus", str(gpus),
           *(["--comm-db", a.comm_db] if a.comm_db else ["--comm-data", a.comm_data]),
           "--step-ms", str(step_ms),
           *(["--db", a.data] if a.data.endswith(".db") else ["--data", a.data]), "--quiet",
           "--overlap-slowdown", str(slowdown), "--per-param-us", str(per_param_us),
           "--bucket-mb", str(bucket_mb), "--grad-comm", grad_comm]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("ddp_check: %s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr[-500:]))
    out = p.stdout
    it = float(re.search(r"iteration\s+([\d.]+) ms", out).group(1))
    m = re.search(r"\((\d+) parameters\): ([\d.]+) ms hidden under backward, ([\d.]+) ms exposed",
                  out)
    return dict(iteration=it, n_params=int(m.group(1)), hidden=float(m.group(2)),
                exposed=float(m.group(3)), cmd=" ".join(cmd[1:]))


def fit(points):
    """Least squares of residual = a * n_params + s * hidden, a, s >= 0."""
    return lsq_nonneg2([(p["n_params"], p["hidden"], p["residual"]) for p in points])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--opsched", required=True)
    ap.add_argument("--comm-db", help="collectives measured by opsched commbench")
    ap.add_argument("--comm-data", help="or a shipped set of them (h200x2, h200x4)")
    ap.add_argument("--data", default="h100", help="the data the one-GPU shares come from")
    ap.add_argument("--out", required=True)
    ap.add_argument("--terms", metavar="SLOWDOWN,US",
                    help="predict with these fitted terms (e.g. fitted on other machines) instead "
                         "of leave-one-out")
    ap.add_argument("measured", nargs="+")
    a = ap.parse_args()
    if bool(a.comm_db) == bool(a.comm_data):
        ap.error("one of --comm-db and --comm-data")
    points = []
    for path in a.measured:
        rows = [json.loads(l) for l in open(path) if l.strip()]
        for r in rows:
            if r["strategy"] != "ddp" or r["model"] not in ZOO:
                continue
            variant = dict(bucket_mb=r.get("bucket_mb") or 25.0,
                           grad_comm=r.get("grad_comm") or "f32")
            single = [s for s in rows if s["strategy"] == "single" and s["model"] == r["model"]
                      and s["batch"] == r["batch"] and s["precision"] == r["precision"]]
            if not single:
                continue
            s = single[-1]
            p = predict(a, r["model"], r["batch"], r["world_size"], s["step_ms_median"], **variant)
            p.update(variant)
            p.update(file=path, model=r["model"], batch=r["batch"], precision=r["precision"],
                     gpus=r["world_size"], single=s["step_ms_median"],
                     measured=r["step_ms_median"])
            p["residual"] = p["measured"] - p["iteration"]
            points.append(p)
    if len(points) < (1 if a.terms else 2):
        sys.exit("ddp_check: fewer than two configurations measured both ways")
    fixed = [float(x) for x in a.terms.split(",")] if a.terms else None
    for i, p in enumerate(points):
        others = points[:i] + points[i + 1:]
        a_ms, s = fit(others) if not fixed else (fixed[1] * 1e-3, fixed[0])
        q = predict(a, p["model"], p["batch"], p["gpus"], p["single"], s, a_ms * 1e3,
                    p["bucket_mb"], p["grad_comm"])
        p["loo"] = q["iteration"]
        p["loo_terms"] = (s, a_ms * 1e3)
    a_all, s_all = fit(points)
    lines = ["# DDP steps: predicted against measured", "",
             "Predicted with `opsched predict MODEL --train --gpus N --comm-db DB --step-ms S`"
             " (S the measured one-GPU step); leave-one-out: the two fitted terms from the"
             " other configurations only.", "",
             "| source | model | batch | precision | GPUs | buckets | 1 GPU ms | DDP ms | predicted, terms off"
             " | error | predicted, %s | error | terms (slowdown, us/grad) |" % (
                 "terms given" if fixed else "leave-one-out"),
             "|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    errs0, errs1 = [], []
    for p in points:
        e0 = (p["iteration"] - p["measured"]) / p["measured"]
        e1 = (p["loo"] - p["measured"]) / p["measured"]
        errs0.append(abs(e0))
        errs1.append(abs(e1))
        lines.append("| %s | %s | %d | %s | %d | %g MB %s | %.2f | %.2f | %.2f | %+.1f%% | %.2f |"
                     " %+.1f%% | %.2f, %.1f |" % (p["file"], p["model"], p["batch"],
                                                 p["precision"], p["gpus"], p["bucket_mb"],
                                                 p["grad_comm"], p["single"], p["measured"], p["iteration"],
                                        100 * e0, p["loo"], 100 * e1, p["loo_terms"][0],
                                        p["loo_terms"][1]))
    errs0.sort()
    errs1.sort()
    med = lambda e: e[len(e) // 2] if len(e) % 2 else 0.5 * (e[len(e) // 2 - 1] + e[len(e) // 2])
    lines += ["", "- terms off: median |error| %.1f%%, worst %.1f%%" % (100 * med(errs0),
                                                                        100 * errs0[-1]),
              "- %s: median |error| %.1f%%, worst %.1f%%" % (
                  "terms given (--terms %s)" % a.terms if fixed else "leave-one-out", 100 * med(errs1),
                                                                        100 * errs1[-1]),
              "- fitted on all %d: --overlap-slowdown %.3f --per-param-us %.1f" % (
                  len(points), s_all, a_all * 1e3), ""]
    open(a.out, "w").write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
