#!/usr/bin/env python3
"""How far a free-running (eager) measurement repeats, and what that leaves
an eager prediction from host rows measured at another time.

    python3 bench/s4_eager_repeat.py A.db B.db

A.db, B.db: two passes of bench/gpu_s3_host.sh (session 4: bench/gpu_s4_eager.sh's
host/ and repeat/), a minute apart on one machine.  For every (model, batch,
size) both measured free-running: the median latency of each, their
difference, the layers' host-time sum of each pass (";mode=host" rows of
that item), and Σ host rows of A against B's latency: what predicting B's
host time from A's rows would miss (B's device side aside: only items that
the host bounds in both, host sum >= 90% of latency)."""
import sqlite3
import statistics as st
import sys


def items(path):
    c = sqlite3.connect(path)
    out = {}
    prev = {}
    for run, model, b, size, lat, t in c.execute(
            "SELECT run_id, model, batch, input_size, median_ms, created_at FROM network_runs"
            " WHERE mode = 'free' ORDER BY run_id, created_at"):
        s = c.execute("SELECT coalesce(sum(median_ms), 0) FROM measurements WHERE run_id = ?"
                      " AND instr(settings_key, ';mode=host') > 0 AND created_at > ?"
                      " AND created_at <= ?", (run, prev.get(run, 0), t)).fetchone()[0]
        prev[run] = t
        out[(model, b, size)] = (lat, s)
    return out


a, b = items(sys.argv[1]), items(sys.argv[2])
print("%-14s %3s %4s %10s %10s %8s %10s %10s %9s" % ("model", "b", "size", "A ms", "B ms", "B/A-1",
                                                   "A host", "B host", "Ahost/B"))
diff, cross, own = [], [], []
for k in sorted(set(a) & set(b)):
    (la, ha), (lb, hb) = a[k], b[k]
    d = lb / la - 1
    diff.append(abs(d))
    bound = ha >= 0.9 * la and hb >= 0.9 * lb
    if bound:
        cross.append(abs(ha / lb - 1))
        own.append(abs(hb / lb - 1))
    print("%-14s %3d %4d %10.4f %10.4f %+7.1f%% %10.4f %10.4f %+8.1f%%%s" % (
        k + (la, lb, 100 * d, ha, hb, 100 * (ha / lb - 1), "" if bound else "  (device-bound)")))
print()
print("items in both passes: %d; latency B vs A: median |diff| %.1f%%, worst %.1f%%" % (
    len(diff), 100 * st.median(diff), 100 * max(diff)))
if cross:
    print("host-bound in both (%d): B's latency from its own rows' sum: median %.1f%%, worst %.1f%%;"
          " from A's rows' sum: median %.1f%%, worst %.1f%%" % (
              len(cross), 100 * st.median(own), 100 * max(own), 100 * st.median(cross),
              100 * max(cross)))
