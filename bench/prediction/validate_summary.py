#!/usr/bin/env python3
"""Summarises `opsched validate --csv` files by mode, batch and where a free
run's host time came from.

    python3 bench/prediction/validate_summary.py validate.csv [more.csv ...]

Free (eager) runs are split by coverage_host_run: "host rows of the run"
(every launch's host time measured in that run's own timed inferences:
the network's layers measured, host and device: "own layers
measured"), and "host rows of other runs" (runs measured before the host
rows existed, or on another machine: their host time comes from rows of
another moment, and the host's speed does not repeat between runs, see
bench/results/prediction/h100-2026-11-24/eager-host-times/repeat.txt)."""
import csv
import statistics as st
import sys


def line(label, rows, key="error_pct"):
    e = [abs(float(r[key])) for r in rows if r.get(key)]
    if not e:
        return
    print("%-44s n=%3d  median %5.2f%%  worst %6.1f%%  within 10%% %3.0f%%" % (
        label, len(e), st.median(e), max(e), 100.0 * sum(x <= 10 for x in e) / len(e)))


def own(r):
    v = r.get("coverage_host_run", "")
    return v != "" and float(v) > 0.99


for path in sys.argv[1:]:
    rows = list(csv.DictReader(open(path)))
    loo = any(r.get("leave_one_out") == "1" for r in rows)
    print("== %s%s" % (path, " (leave one model out)" if loo else ""))
    for mode in ("graph", "free"):
        m = [r for r in rows if r["mode"] == mode]
        if not m:
            continue
        groups = [("all", lambda r: True)]
        if mode == "free" and not loo:
            groups += [("host rows of the run", own), ("host rows of other runs", lambda r: not own(r))]
        for name, f in groups:
            for b in ("1", "8", "32", "all"):
                sel = [r for r in m if f(r) and (b == "all" or r["batch"] == b)]
                line("%s %s b=%s" % ("eager" if mode == "free" else mode, name, b), sel)
        if mode == "graph":
            line("graph energy per inference, all", m, "energy_error_pct")
    print()
