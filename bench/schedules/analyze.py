#!/usr/bin/env python3
"""Report of bench/schedules/compare.sh (schedules against PyTorch, NHWC): opsched's
sequential, greedy and IOS schedules (free-running and one CUDA graph, rows
timed in turns) against PyTorch eager, CUDA graph, torch.compile
(reduce-overhead) and torch.compile on a channels_last model, measured in the
same call on the same GPU; search times; the predicted-cost searches.
   python3 bench/schedules/analyze.py DIR_B1 [DIR_B16 ...] > report.txt"""
import csv, math, os, re, sys

MODELS = ["inception_v3", "googlenet", "squeezenet1_1", "resnet50", "densenet121", "randwire", "nasnet"]
ROW = re.compile(r"^(sequential|greedy|ios|file:\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\|\s+(\S+)\s+\|"
                 r"\s+(\S+)\s+(\S+)\s+(\S+)\s+\|\s+(\S+)\s+(\S+)\s+(\S+)\s+\|")


def rows(path):
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        m = ROW.match(line)
        if m:
            f = lambda i: float(m.group(i)) if m.group(i) != "-" else math.nan
            out[m.group(1)] = dict(stages=int(m.group(2)), streams=int(m.group(3)), free=f(9), graph=f(12))
    return out


def grep(path, pat):
    if not os.path.exists(path):
        return ""
    for line in open(path):
        if re.search(pat, line):
            return line.strip()
    return ""


def report(d):
    env = open(os.path.join(d, "env.txt")).read().strip()
    b = int(re.search(r"_b(\d+)\.log$", [f for f in os.listdir(d) if f.startswith("run_")][0]).group(1))
    torch = {}
    p = os.path.join(d, "torch_models.csv")
    if os.path.exists(p):
        for r in csv.DictReader(open(p)):
            torch[(r["model"], r["mode"])] = float(r["median_ms"])
    print("=" * 100)
    print("batch %d   (%s)" % (b, d))
    print(env)
    print("ms, medians. seq/grdy/ios: opsched schedules (NHWC, TF32, cuDNN heuristics, BN folded), free-running")
    print("and as one CUDA graph; the ios row runs the fastest of IOS/greedy/sequential checked whole (--verify).")
    print("PyTorch: BN folded (torch.fx fuse; randwire/nasnet rebuilt from opsched's graph), TF32 convolutions,")
    print("cuDNN heuristics; compile = torch.compile(mode='reduce-overhead'), compile-cl = same on channels_last.\n")
    hdr = ("model", "seq free", "seq grph", "grdy grph", "ios free", "ios grph", "t eager", "t graph", "t compile",
           "t comp-cl", "seq/ios", "tgrph/ios", "tcomp/ios", "tcl/ios")
    print("%-13s %8s %8s %9s %8s %8s | %8s %8s %9s %9s | %7s %9s %9s %7s" % hdr)
    res = {}
    for m in MODELS:
        r = rows(os.path.join(d, "run_%s_b%d.log" % (m, b)))
        if not r:
            print("%-13s (not run)" % m)
            continue
        s, g, i = r.get("sequential", {}), r.get("greedy", {}), r.get("ios", {})
        t = lambda mode: torch.get((m, mode), math.nan)
        ig = i.get("graph", math.nan)
        line = (m, s.get("free", math.nan), s.get("graph", math.nan), g.get("graph", math.nan), i.get("free", math.nan),
                ig, t("eager"), t("graph"), t("compile"), t("compile-cl"), s.get("graph", math.nan) / ig,
                t("graph") / ig, t("compile") / ig, t("compile-cl") / ig)
        print("%-13s %8.3f %8.3f %9.3f %8.3f %8.3f | %8.3f %8.3f %9.3f %9.3f | %7.3f %9.3f %9.3f %7.3f" % line)
        res[m] = line
    print("\nsearch (measured stage costs, from an empty stage database; `opsched schedule --cost measure`):")
    for m in MODELS:
        p = os.path.join(d, "search_%s_b%d.log" % (m, b))
        if not os.path.exists(p):
            continue
        s = grep(p, r"^\s+[0-9.]+ s,")
        meas = grep(p, r"^\s+measuring:")
        ver = grep(p, r"^verify:")
        print("  %-13s %s\n  %-13s %s\n  %-13s %s" % (m, s, "", meas, "", ver))
    for m in ("inception_v3", "googlenet"):
        p = os.path.join(d, "predsearch_%s_b%d.log" % (m, b))
        if os.path.exists(p):
            rr = rows(os.path.join(d, "run_%s_b%d_predicted.log" % (m, b)))
            fr = [v for k, v in rr.items() if k.startswith("file:")]
            meas = res.get(m, [math.nan] * 6)[5]
            print("predicted-cost search %-13s %s; %s; its schedule %.4f ms as a CUDA graph, %.1f%% %s the "
                  "measured-cost schedule (%.4f ms)" % (m, grep(p, r"^\s+[0-9.]+ s,"), grep(p, "predicted latency"),
                  fr[0]["graph"] if fr else math.nan,
                  abs(fr[0]["graph"] / meas - 1) * 100 if fr else math.nan,
                  "slower than" if fr and fr[0]["graph"] > meas else "faster than", meas))
    p = os.path.join(d, "search_inception_v3_b%d_cheap.log" % b)
    if os.path.exists(p):
        print("inception_v3 with --stage-ms 0.2,0.5: %s" % grep(p, r"^\s+[0-9.]+ s,"))
    return b, res


def main():
    allres = {}
    for d in sys.argv[1:]:
        b, r = report(d)
        allres[b] = r
    print("=" * 100)
    print("targets (batch 1): ios >= 1.3x torch.compile and >= 1.5x PyTorch CUDA graph on inception_v3 and googlenet;")
    print("within 5% of torch.compile on resnet50; never slower than opsched sequential (CUDA graph) on any model.")
    r = allres.get(1, {})
    for m in ("inception_v3", "googlenet"):
        if m in r:
            print("  %-13s ios/compile %.2fx (target 1.3x: %s), ios/graph %.2fx (target 1.5x: %s); compile-cl %.2fx"
                  % (m, r[m][12], "met" if r[m][12] >= 1.3 else "MISSED", r[m][11],
                     "met" if r[m][11] >= 1.5 else "MISSED", r[m][13]))
    if "resnet50" in r:
        print("  resnet50      torch.compile / ios %.3f (target >= 0.95: %s); compile-cl %.3f"
              % (r["resnet50"][12], "met" if r["resnet50"][12] >= 0.95 else "MISSED", r["resnet50"][13]))
    for b, rr in sorted(allres.items()):
        worst = min(((v[10], m) for m, v in rr.items()), default=(math.nan, ""))
        print("  batch %-3d     sequential / ios (graph), lowest: %.3f (%s)%s" % (
            b, worst[0], worst[1], "" if worst[0] >= 1 else " (the ios row runs sequential's own schedule"
            " there, so the difference is the timing noise between two runs of one schedule)"))


if __name__ == "__main__":
    main()
