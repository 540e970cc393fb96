#!/usr/bin/env python3
"""Predicted against measured PyTorch FSDP steps and peak memory per rank
(benchmark tooling only).

For every (model, per-GPU batch, precision) measured by torch_ddp.py both on
one GPU (--strategy single) and under FSDP on N GPUs, in the same file,
runs

  opsched predict MODEL --train --optimizer sgd --batch B --gpus N \\
      --strategy fsdp --fsdp-wrap UNITS [--param-comm bf16] --step-ms S

with S the measured one-GPU step and UNITS the modules torch_ddp.py shards
(ResNet-50: each Bottleneck, with bf16 each BatchNorm too, kept in fp32;
VGG16: `features` and each Linear).  The compute is scaled to the measured
step, so what is predicted is what FSDP adds: the all-gathers and
reduce-scatters (commbench's fits), their overlap, the host time of FSDP's
hooks, and the memory of one rank (opsched's training memory replay,
sharded).  The step is reported with the host terms off, then with terms
given (--terms PER_UNIT_US,PER_PARAM_US, e.g. from a profile) and, with
--grid, with the terms of a grid chosen leave-one-out (each configuration
predicted from the others only).

usage: fsdp_check.py --opsched BIN (--comm-db DB | --comm-data NAME)
                     [--terms U,P] [--grid] --out REPORT.md MEASURED.jsonl...
"""
import argparse
import itertools
import json
import re
import subprocess
import sys

from dist_common import lsq_nonneg2

UNITS = {
    ("resnet50", False): "layer*.*",
    ("resnet50", True): "layer*.*,bn1:f32,layer*.*.bn*:f32,layer*.*.downsample.1:f32",
    ("vgg16", False): "features,classifier.*",
    ("vgg16", True): "features,classifier.*",
}
GRID_UNIT = "0,500,1000,1500,2000"
GRID_PARAM = "0,50,100"


BN_F32 = {"resnet50": "bn1:f32,layer*.*.bn*:f32,layer*.*.downsample.1:f32"}


def units_of(p):
    """The --fsdp-wrap patterns of the run: its own, else the peer's default
    blocks; under bf16 the BatchNorms kept in fp32 as units of their own."""
    bf16 = p["precision"] == "bf16"
    if not p.get("wrap"):
        return UNITS[(p["model"], bf16)]
    if p["wrap"] == "-":  # the whole model one unit
        return BN_F32[p["model"]] if bf16 and p["model"] in BN_F32 else ""
    return p["wrap"] + ("," + BN_F32[p["model"]] if bf16 and p["model"] in BN_F32 else "")


def predict(a, p, unit_us=0.0, param_us=0.0):
    bf16 = p["precision"] == "bf16"
    cmd = [a.opsched, "predict", p["model"], "--train", "--optimizer", p["optimizer"], "--batch",
           str(p["batch"]), "--gpus", str(p["gpus"]),
           *(["--comm-db", a.comm_db] if a.comm_db else ["--comm-data", a.comm_data]),
           "--step-ms", str(p["single"]),
           *(["--db", a.data] if a.data.endswith(".db") else ["--data", a.data]),
           "--quiet", "--strategy", "fsdp",
           *(["--fsdp-wrap", units_of(p)] if units_of(p) else []), "--per-unit-us", str(unit_us),
           "--per-unit-param-us", str(param_us)]
    if p.get("single_host") and not a.no_host:
        cmd += ["--host-ms", str(p["single_host"])]
    if bf16:
        cmd += ["--param-comm", "bf16"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("fsdp_check: %s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr[-500:]))
    out = r.stdout
    it = float(re.search(r"iteration\s+([\d.]+) ms", out).group(1))
    units = int(re.search(r"on \d+ GPUs[^,]*, (\d+) units", out).group(1))
    n_params = int(re.search(r"in \d+ collectives \((\d+) parameters", out).group(1))
    mem = re.search(r"memory per rank\s+([\d.]+)([KMGT]?)B peak", out)
    scale = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[mem.group(2)]
    return dict(iteration=it, units=units, n_params=n_params, memory=float(mem.group(1)) * scale,
                cmd=" ".join(cmd[1:]))


def med(e):
    e = sorted(e)
    return e[len(e) // 2] if len(e) % 2 else 0.5 * (e[len(e) // 2 - 1] + e[len(e) // 2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--opsched", required=True)
    ap.add_argument("--comm-db", help="collectives measured by opsched commbench")
    ap.add_argument("--comm-data", help="or a shipped set of them (h200x2, h200x4)")
    ap.add_argument("--data", default="h100",
                    help="the data the one-GPU shares come from: a shipped set, or a .db file")
    ap.add_argument("--terms", metavar="UNIT_US,PARAM_US", help="host terms to predict with")
    ap.add_argument("--grid", action="store_true",
                    help="also choose the host terms from a grid, leave-one-out")
    ap.add_argument("--grid-unit", default=GRID_UNIT, help="--grid: us per unit (%s)" % GRID_UNIT)
    ap.add_argument("--grid-param", default=GRID_PARAM,
                    help="--grid: us per parameter (%s)" % GRID_PARAM)
    ap.add_argument("--fit-host", action="store_true",
                    help="also fit the host terms to the measured host times (FSDP's host time "
                         "less the one-GPU step's = the hooks: per unit entered and per "
                         "parameter), leave-one-out, and predict the steps with them")
    ap.add_argument("--no-host", action="store_true",
                    help="leave out the one-GPU step's measured host time (--host-ms)")
    ap.add_argument("--out", required=True)
    ap.add_argument("measured", nargs="+")
    a = ap.parse_args()
    if bool(a.comm_db) == bool(a.comm_data):
        ap.error("one of --comm-db and --comm-data")
    points = []
    for path in a.measured:
        rows = [json.loads(l) for l in open(path) if l.strip()]
        for r in rows:
            if r["strategy"] != "fsdp" or (r["model"], False) not in UNITS:
                continue
            single = [s for s in rows if s["strategy"] == "single" and s["model"] == r["model"]
                      and s["batch"] == r["batch"] and s["precision"] == r["precision"]
                      and s.get("optimizer", "sgd") == r.get("optimizer", "sgd")]
            if not single:
                continue
            s = single[-1]
            points.append(dict(file=path, model=r["model"], batch=r["batch"],
                               optimizer=r.get("optimizer", "sgd"), wrap=r.get("fsdp_wrap"),
                               precision=r["precision"], gpus=r["world_size"],
                               single=s["step_ms_median"], measured=r["step_ms_median"],
                               single_host=s.get("host_ms_median"),
                               host=r.get("host_ms_median"), units=r.get("fsdp_units"),
                               mem=max(x for x in r["peak_allocated_bytes"] if x),
                               mem_single=max(x for x in s["peak_allocated_bytes"] if x)))
    if not points:
        sys.exit("fsdp_check: no configuration measured both on one GPU and under FSDP")
    for p in points:
        p["off"] = predict(a, p)
    given = [float(x) for x in a.terms.split(",")] if a.terms else None
    if given:
        for p in points:
            p["given"] = predict(a, p, *given)["iteration"]
    if a.grid:
        for p in points:
            p["grid"] = {(u, q): predict(a, p, u, q)["iteration"]
                         for u, q in itertools.product(
                             [float(x) for x in a.grid_unit.split(",")],
                             [float(x) for x in a.grid_param.split(",")])}

        def sse(ps, key):
            return sum(((p["grid"][key] - p["measured"]) / p["measured"]) ** 2 for p in ps)
        for i, p in enumerate(points):
            others = points[:i] + points[i + 1:]
            best = min(p["grid"], key=lambda k: sse(others, k))
            p["loo"], p["loo_terms"] = p["grid"][best], best
        best_all = min(points[0]["grid"], key=lambda k: sse(points, k))
    if a.fit_host:
        hp = [p for p in points if p.get("host") and p.get("single_host")]

        def host_fit(ps):
            """Hooks = u * 2 units + q * 2 params (us), u, q >= 0."""
            u, q = lsq_nonneg2([(2 * p["off"]["units"], 2 * p["off"]["n_params"],
                                 (p["host"] - p["single_host"]) * 1e3) for p in ps])
            return round(u, 1), round(q, 2)
        for i, p in enumerate(points):
            others = [q for q in hp if q is not p]
            terms = host_fit(others)
            p["hf"], p["hf_terms"] = predict(a, p, *terms)["iteration"], terms
        hf_all = host_fit(hp)
    lines = ["# FSDP steps and memory per rank: predicted against measured", "",
             "Predicted with `opsched predict MODEL --train --optimizer OPT --gpus N --strategy "
             "fsdp --fsdp-wrap UNITS --step-ms S%s` (S the measured one-GPU step%s)." % (
                 "" if a.no_host else " --host-ms H",
                 "" if a.no_host else ", H the host time to issue it"), "",
             "| model | batch | precision | GPUs | units (torch, opsched) | 1 GPU ms | FSDP ms "
             "| FSDP host ms | terms off | error |" + (" terms %s | error |" % a.terms if given else "")
             + (" leave-one-out | error | terms |" if a.grid else "")
             + (" host terms fitted, leave-one-out | error | terms (us/unit, us/param) |"
                if a.fit_host else ""),
             "|---|---:|---|---:|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if given else "")
             + ("---:|---:|---|" if a.grid else "") + ("---:|---:|---|" if a.fit_host else "")]
    e_off, e_given, e_loo, e_mem, e_hf = [], [], [], [], []
    for p in points:
        e0 = (p["off"]["iteration"] - p["measured"]) / p["measured"]
        e_off.append(abs(e0))
        row = "| %s%s | %d | %s | %d | %s, %d | %.2f | %.2f | %s | %.2f | %+.1f%% |" % (
            p["model"], "".join(" " + x for x in (p["optimizer"] if p["optimizer"] != "sgd" else "",
                                                   "(%s)" % p["wrap"] if p["wrap"] else "") if x),
            p["batch"], p["precision"], p["gpus"], p["units"], p["off"]["units"],
            p["single"], p["measured"], "%.2f" % p["host"] if p["host"] else "-",
            p["off"]["iteration"], 100 * e0)
        if given:
            e1 = (p["given"] - p["measured"]) / p["measured"]
            e_given.append(abs(e1))
            row += " %.2f | %+.1f%% |" % (p["given"], 100 * e1)
        if a.grid:
            e2 = (p["loo"] - p["measured"]) / p["measured"]
            e_loo.append(abs(e2))
            row += " %.2f | %+.1f%% | %g, %g |" % (p["loo"], 100 * e2, *p["loo_terms"])
        if a.fit_host:
            e3 = (p["hf"] - p["measured"]) / p["measured"]
            e_hf.append(abs(e3))
            row += " %.2f | %+.1f%% | %g, %g |" % (p["hf"], 100 * e3, *p["hf_terms"])
        lines.append(row)
    lines += ["", "- terms off: median |error| %.1f%%, worst %.1f%%" % (100 * med(e_off),
                                                                        100 * max(e_off))]
    if given:
        lines.append("- terms %s: median |error| %.1f%%, worst %.1f%%" % (
            a.terms, 100 * med(e_given), 100 * max(e_given)))
    if a.grid:
        lines.append("- leave-one-out over the grid: median |error| %.1f%%, worst %.1f%%; "
                     "on all: --per-unit-us %g --per-unit-param-us %g" % (
                         100 * med(e_loo), 100 * max(e_loo), *best_all))
    if a.fit_host:
        lines.append("- host terms fitted to the measured host times, leave-one-out: median "
                     "|error| %.1f%%, worst %.1f%%; on all: --per-unit-us %g --per-unit-param-us %g"
                     % (100 * med(e_hf), 100 * max(e_hf), *hf_all))
    lines += ["", "## Peak memory per rank (torch.cuda.max_memory_allocated)", "",
              "| model | batch | precision | GPUs | one GPU, measured | FSDP, measured "
              "| FSDP, predicted | error |", "|---|---:|---|---:|---:|---:|---:|---:|"]
    for p in points:
        e = (p["off"]["memory"] - p["mem"]) / p["mem"]
        e_mem.append(abs(e))
        lines.append("| %s | %d | %s | %d | %.3f GB | %.3f GB | %.3f GB | %+.1f%% |" % (
            p["model"], p["batch"], p["precision"], p["gpus"], p["mem_single"] / 1e9,
            p["mem"] / 1e9, p["off"]["memory"] / 1e9, 100 * e))
    lines += ["", "- memory: median |error| %.1f%%, worst %.1f%%" % (100 * med(e_mem),
                                                                    100 * max(e_mem)), ""]
    open(a.out, "w").write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
