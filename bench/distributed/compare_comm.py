#!/usr/bin/env python3
"""opsched commbench against torch.distributed: a Markdown report
(benchmark tooling only; needs only the Python standard library).

Joins the CSV of `opsched commbench --csv` (columns collective, dtype,
bytes, ranks, time_us, busbw_gbs, check, ...; other columns are ignored)
with the CSV of torch_comm.py (time_us_median, busbw_gbs, wrong, ...) on
(collective, dtype, bytes, ranks).  Names are matched loosely: "all_reduce",
"AllReduce" and "allreduce" are one collective; f32/fp32/float32,
f16/fp16/half/float16 and bf16/bfloat16 one dtype each.

For each collective (and dtype and rank count) the report has a table:
    bytes | opsched time us | torch time us | opsched busbw | torch busbw | ratio
with ratio = opsched busbw / torch busbw (above 1: opsched's NCCL calls are
faster; computed as torch time / opsched time, the same number at equal
bytes and ranks, as the times carry more digits than a printed busbw), and a summary line: the geometric mean of the ratios, the worst
ratio and its size, and at how many sizes opsched is within 3% of torch or
better (ratio >= 0.97).  Sizes found in only one file are listed after the
tables; a result that failed its check in either file is marked "!", and a
file whose busbw_gbs disagrees with bytes * factor / time is noted.

Usage:
    python3 bench/distributed/compare_comm.py OPSCHED.csv TORCH.csv [--out REPORT.md]
(without --out the report goes to stdout).  Exit status 1 when a file
cannot be read, lacks a needed column, or no size is in both.
"""
import argparse
import csv
import math
import sys

WITHIN = 0.97  # "within 3% or better"

DTYPES = {"f32": "float32", "fp32": "float32", "float32": "float32", "float": "float32",
          "f16": "float16", "fp16": "float16", "float16": "float16", "half": "float16",
          "bf16": "bfloat16", "bfloat16": "bfloat16"}
ORDER = ["allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "sendrecv"]
PASS_WORDS = {"", "ok", "pass", "passed", "true", "yes", "0", "good", "-"}


class InputError(Exception):
    pass


def norm_collective(s):
    return s.strip().lower().replace("_", "").replace("-", "").replace(" ", "")


def norm_dtype(s):
    k = s.strip().lower()
    return DTYPES.get(k, k)


def to_int(s):
    return int(round(float(s)))


def read_rows(path):
    try:
        with open(path, newline="") as f:
            lines = [l for l in f if l.strip() and not l.lstrip().startswith("#")]
    except OSError as e:
        raise InputError("%s: %s" % (path, e.strerror or e))
    if not lines:
        raise InputError("%s: empty" % path)
    reader = csv.DictReader(lines)
    fields = [h.strip() for h in (reader.fieldnames or [])]
    reader.fieldnames = fields
    return fields, list(reader)


def need(path, fields, cols):
    missing = [c for c in cols if c not in fields]
    if missing:
        raise InputError("%s: no column %s (columns: %s)"
                         % (path, ", ".join(missing), ", ".join(fields)))


def load(path, kind):
    """{(collective, dtype, bytes, ranks): row dict}, duplicates, extras."""
    fields, rows = read_rows(path)
    if kind == "opsched":
        time_col = "time_us"
        need(path, fields, ["collective", "dtype", "bytes", "ranks", time_col, "busbw_gbs"])
    else:
        time_col = "time_us_median" if "time_us_median" in fields else "time_us"
        need(path, fields, ["collective", "dtype", "bytes", "ranks", time_col, "busbw_gbs"])
    out, dups = {}, 0
    for i, r in enumerate(rows, start=2):
        try:
            key = (norm_collective(r["collective"]), norm_dtype(r["dtype"]),
                   to_int(r["bytes"]), to_int(r["ranks"]))
            t = float(r[time_col])
            bw = float(r["busbw_gbs"])
        except (TypeError, ValueError, AttributeError) as e:
            raise InputError("%s: line %d: %s (%r)" % (path, i, e, dict(r)))
        bad = None
        if kind == "opsched":
            c = (r.get("check") or "").strip()
            if c.lower() not in PASS_WORDS:
                bad = "check=%s" % c
            w = (r.get("wrong") or "").strip()
            if w and w not in ("0", "0.0"):
                bad = "wrong=%s" % w
        else:
            w = (r.get("wrong") or "0").strip()
            try:
                if float(w) != 0:
                    bad = "wrong=%s" % w
            except ValueError:
                bad = "wrong=%s" % w
        if key in out:
            dups += 1  # the last row of a key wins
        out[key] = dict(time_us=t, busbw=bw, bad=bad, row=r)
    return out, dups


def busbw_factor(coll, n):
    if coll == "allreduce":
        return 2.0 * (n - 1) / n
    if coll in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def ratio_of(o, t):
    """opsched busbw / torch busbw.  At equal bytes and ranks both busbw are
    bytes * factor / time, so the ratio is torch time / opsched time; it is
    computed from the times, which the files keep with more digits than a
    busbw rounded for print (and which stay meaningful where busbw is 0,
    an all-reduce on one rank)."""
    if o["time_us"] > 0 and t["time_us"] > 0:
        return t["time_us"] / o["time_us"]
    return float("nan")


def busbw_mismatch(key, r):
    """Whether a file's busbw disagrees with bytes * factor / time beyond
    the rounding of its last printed digits."""
    coll, _, nbytes, ranks = key
    if r["time_us"] <= 0 or coll not in ORDER:
        return False
    want = nbytes * busbw_factor(coll, ranks) / r["time_us"] / 1e3
    tol = max(0.01 * abs(want), 0.006)
    return abs(r["busbw"] - want) > tol


def fmt_bw(x):
    return "%.2f" % x if abs(x) >= 1 or x == 0 else "%.3g" % x


def human(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, unit)
    return str(n)


def geomean(xs):
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    if not xs:
        return float("nan")
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def report(ops_path, torch_path, ops, torch_rows, dups):
    keys = sorted(set(ops) & set(torch_rows),
                  key=lambda k: (ORDER.index(k[0]) if k[0] in ORDER else len(ORDER), k[0],
                                 k[1], k[3], k[2]))
    if not keys:
        raise InputError("no (collective, dtype, bytes, ranks) is in both files\n"
                         "  %s: %s\n  %s: %s"
                         % (ops_path, describe(ops), torch_path, describe(torch_rows)))
    groups = {}
    for k in keys:
        groups.setdefault((k[0], k[1], k[3]), []).append(k)

    out = []
    out.append("# opsched commbench against torch.distributed")
    out.append("")
    out.append("- opsched: `%s` (%d rows)" % (ops_path, len(ops)))
    tr = torch_rows[keys[0]]["row"]
    tv, nv = tr.get("torch_version", "?"), tr.get("nccl_version", "?")
    out.append("- torch: `%s` (%d rows; torch %s, NCCL %s)" % (torch_path, len(torch_rows), tv, nv))
    for extra in ("nccl_version", "nccl", "gpu", "device"):
        v = ops[keys[0]]["row"].get(extra)
        if v:
            out.append("- opsched %s: %s" % (extra, v))
    out.append("- ratio = opsched busbw / torch busbw (> 1: opsched faster), computed as "
               "torch time / opsched time (the same number at equal bytes and ranks); "
               "within 3%% or better: ratio >= %.2f; busbw in GB/s (1e9 B/s), time in us "
               "per operation (median)" % WITHIN)
    if any(dups):
        out.append("- duplicate rows (the last one kept): %s" % ", ".join(
            "%s %d" % (n, d) for n, d in zip(("opsched", "torch"), dups) if d))
    out.append("")

    summary, sections, failed = [], [], 0
    for g, ks in groups.items():
        coll, dtype, ranks = g
        rows = []
        for k in ks:
            o, t = ops[k], torch_rows[k]
            rt = ratio_of(o, t)
            mark = ""
            if o["bad"] or t["bad"]:
                mark = " !"
                failed += 1
            rows.append((k[2], o, t, rt, mark))
        ratios = [r[3] for r in rows]
        finite = [r for r in rows if math.isfinite(r[3])]
        gm = geomean(ratios)
        worst = min(finite, key=lambda r: r[3]) if finite else None
        good = sum(1 for r in rows if math.isfinite(r[3]) and r[3] >= WITHIN)
        title = "%s, %s, %d ranks" % (coll, dtype, ranks)
        line = "geometric mean ratio %.3f; worst %s at %s bytes (%s); within 3%% or better " \
               "at %d of %d sizes" % (
                   gm, "%.3f" % worst[3] if worst else "-", worst[0] if worst else "-",
                   human(worst[0]) if worst else "-", good, len(rows))
        summary.append("| %s | %s | %d | %d | %.3f | %s | %s | %d/%d |" % (
            coll, dtype, ranks, len(rows), gm, "%.3f" % worst[3] if worst else "-",
            human(worst[0]) if worst else "-", good, len(rows)))
        sec = ["## %s" % title, "",
               "| bytes | opsched time us | torch time us | opsched busbw | torch busbw | ratio |",
               "|---:|---:|---:|---:|---:|---:|"]
        for b, o, t, rt, mark in rows:
            sec.append("| %d (%s) | %.2f | %.2f | %s | %s | %.3f%s |" % (
                b, human(b), o["time_us"], t["time_us"], fmt_bw(o["busbw"]),
                fmt_bw(t["busbw"]), rt, mark))
        sec += ["", "%s: %s" % (coll, line), ""]
        sections.append("\n".join(sec))

    out.append("## Summary")
    out.append("")
    out.append("| collective | dtype | ranks | sizes | geomean ratio | worst ratio | at | "
               "within 3% or better |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|")
    out += summary
    out.append("")
    if failed:
        out.append("**%d size(s) marked ! failed the correctness check in one of the files.**"
                   % failed)
        out.append("")
    out += sections

    only_o = sorted(set(ops) - set(torch_rows))
    only_t = sorted(set(torch_rows) - set(ops))
    if only_o or only_t:
        out.append("## Sizes in one file only")
        out.append("")
        for name, ks in (("opsched", only_o), ("torch", only_t)):
            if ks:
                out.append("- only in %s (%d): %s" % (name, len(ks), ", ".join(
                    "%s/%s/%dr/%s" % (k[0], k[1], k[3], human(k[2])) for k in ks[:40])
                    + (", ..." if len(ks) > 40 else "")))
        out.append("")
    for name, d in (("opsched", ops), ("torch", torch_rows)):
        mm = [k for k in keys if busbw_mismatch(k, d[k])]
        if mm:
            out.append("- %s's busbw_gbs differs from bytes * busbw factor / time at %d size(s) "
                       "(first: %s/%s/%s: %s GB/s in the file)" % (
                           name, len(mm), mm[0][0], mm[0][1], human(mm[0][2]),
                           d[mm[0]]["row"].get("busbw_gbs")))
    for name, d in (("opsched", ops), ("torch", torch_rows)):
        bad = [k for k in keys if d[k]["bad"]]
        if bad:
            out.append("- failed checks in %s: %s" % (name, ", ".join(
                "%s/%s/%s: %s" % (k[0], k[1], human(k[2]), d[k]["bad"]) for k in bad)))
    return "\n".join(out).rstrip() + "\n", len(groups)


def describe(d):
    if not d:
        return "no rows"
    colls = sorted({k[0] for k in d})
    dts = sorted({k[1] for k in d})
    ranks = sorted({k[3] for k in d})
    b = sorted({k[2] for k in d})
    return "collectives %s, dtypes %s, ranks %s, bytes %d..%d" % (
        ",".join(colls), ",".join(dts), ",".join(map(str, ranks)), b[0], b[-1])


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Markdown report: opsched commbench CSV against torch_comm.py CSV")
    p.add_argument("opsched_csv", metavar="OPSCHED.csv", help="from opsched commbench --csv")
    p.add_argument("torch_csv", metavar="TORCH.csv", help="from torch_comm.py --csv")
    p.add_argument("--out", metavar="REPORT.md", help="write here (default: stdout)")
    a = p.parse_args(argv)
    try:
        ops, d1 = load(a.opsched_csv, "opsched")
        tor, d2 = load(a.torch_csv, "torch")
        text, ngroups = report(a.opsched_csv, a.torch_csv, ops, tor, (d1, d2))
    except InputError as e:
        print("compare_comm.py: error: %s" % e, file=sys.stderr)
        return 1
    if a.out:
        try:
            with open(a.out, "w") as f:
                f.write(text)
        except OSError as e:
            print("compare_comm.py: error: %s: %s" % (a.out, e.strerror or e), file=sys.stderr)
            return 1
        print("compare_comm.py: wrote %s (%d tables)" % (a.out, ngroups))
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
