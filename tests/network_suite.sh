#!/usr/bin/env bash
# The network suite's driver (bench/networks/suite.py) on the CPU backend
# for three small models of the public set: a row for every item, each with
# opsched's latencies or its error, a CSV that parses with a constant field
# count, the PyTorch peers skipped with a visible reason where torch has no
# CUDA, a second call that resumes (adds nothing), the report, an
# ablation, the standing over two folders, and --hard-limit-s cutting a run
# at its deadline.
set -euo pipefail
bin=$1
src=${OPSCHED_SOURCE_DIR:?}
py=${OPSCHED_PYTHON:-python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
models=squeezenet1_1,mobilenet_v3_small,bert_base_s128

"$py" "$src/bench/networks/suite.py" run --backend cpu --models $models --configs 1:fp32 \
    --quick --opsched "$bin" --out "$out/r" > "$out/log1" 2>&1 || { cat "$out/log1"; exit 1; }
cat "$out/log1"
"$py" "$src/bench/networks/suite.py" run --backend cpu --models $models --configs 1:fp32 \
    --quick --opsched "$bin" --out "$out/r" > "$out/log2" 2>&1 || { cat "$out/log2"; exit 1; }
grep -q "3 items, 3 done before" "$out/log2" || { echo "FAIL: the second call did not resume"; cat "$out/log2"; exit 1; }
"$py" "$src/bench/networks/suite.py" report "$out/r" > "$out/log3" 2>&1 || { cat "$out/log3"; exit 1; }

"$py" - "$out/r" "$models" <<'PY'
import csv, os, sys
d, models = sys.argv[1], sys.argv[2].split(",")
fail = []
with open(os.path.join(d, "results.csv"), newline="") as f:
    rows = list(csv.reader(f))
head, body = rows[0], rows[1:]
for i, r in enumerate(body):
    if len(r) != len(head):
        fail.append("row %d has %d fields, the header %d" % (i + 1, len(r), len(head)))
recs = [dict(zip(head, r)) for r in body]
if sorted(r["model"] for r in recs) != sorted(models):
    fail.append("rows %s, want one per model %s" % ([r["model"] for r in recs], models))
ran = 0
for r in recs:
    ms, err = r["opsched_ms"], r["opsched_error"]
    if ms:
        if float(ms) <= 0 or float(r["opsched_seq_ms"]) <= 0:
            fail.append("%s: latency %s / %s" % (r["model"], ms, r["opsched_seq_ms"]))
        ran += 1
    elif not err:
        fail.append("%s: neither a latency nor an error" % r["model"])
    for p in ("torch_eager", "torch_graph", "torch_compile"):
        if not r[p + "_ms"] and not r[p + "_error"]:
            fail.append("%s: %s has neither a latency nor a reason" % (r["model"], p))
if ran < 2:
    fail.append("opsched ran %d of the models (squeezenet1_1 and mobilenet_v3_small load)" % ran)
summary = open(os.path.join(d, "summary.md")).read()
if "3 models; opsched ran %d, failed %d" % (ran, 3 - ran) not in summary:
    fail.append("summary.md does not count the rows")
for f in fail:
    print("FAIL:", f)
print("network suite on the CPU backend: %d rows, opsched ran %d; %d passed, %d failed"
      % (len(recs), ran, 1 if not fail else 0, 1 if fail else 0))
sys.exit(1 if fail else 0)
PY
# An ablation: opsched alone with an argument more (--fuse off works on the
# CPU backend too), and the table against the full planner's folder.
"$py" "$src/bench/networks/suite.py" run --backend cpu --models squeezenet1_1 --configs 1:fp32 \
    --quick --opsched "$bin" --out "$out/fuse-off" --peers "" --opsched-args="--fuse off" \
    > "$out/log4" 2>&1 || { cat "$out/log4"; exit 1; }
grep -q -- "--fuse off" "$out/fuse-off/suite.log" || { echo "FAIL: the ablation's command lacks --fuse off"; exit 1; }
"$py" "$src/bench/networks/suite.py" ablation "$out/r" "$out/fuse-off" > "$out/log5" 2>&1 || { cat "$out/log5"; exit 1; }
grep -qE "^\| squeezenet1_1 \| 1 \| fp32 \| [0-9.]+ \| [0-9.]+ \([0-9.]+x\) \|" "$out/r/ablation.md" \
  || { echo "FAIL: ablation.md has no squeezenet1_1 row with a factor"; cat "$out/r/ablation.md"; exit 1; }
grep -q "fuse-off .*x over 1" "$out/log5" || { echo "FAIL: no geometric mean over the one item"; cat "$out/log5"; exit 1; }
echo "ablation: $(tail -2 "$out/log5" | head -1)"
# Where each model stands over two folders: of an item in both, the row
# finished last; an item with an error and one with no row are named.
mkdir -p "$out/s1" "$out/s2"
hdr="model,family,task,batch,math,opsched_ms,opsched_error,torch_compile_ms,torch_compile_error,speedup_vs_compile,finished"
printf '%s\n%s\n%s\n' "$hdr" \
    "resnet50,resnet,image classification,1,tf32,1.0,,1.3,,1.3000,2026-01-01T00:00:00Z" \
    "mobilenet_v2,mobilenet,image classification,16,fp16,1.0,,0.9,,0.9000,2026-01-01T00:00:00Z" \
    > "$out/s1/results.csv"
printf '%s\n%s\n%s\n%s\n' "$hdr" \
    "resnet50,resnet,image classification,1,tf32,1.0,,1.1,,1.1000,2026-01-02T00:00:00Z" \
    "googlenet,inception,image classification,1,tf32,,exit 1: bad,,,,2026-01-02T00:00:00Z" \
    "vgg16,vgg,image classification,16,fp16,1.0,,1.02,,1.0200,2026-01-02T00:00:00Z" \
    > "$out/s2/results.csv"
"$py" "$src/bench/networks/suite.py" standing "$out/s1" "$out/s2" \
    --models resnet50,googlenet,mobilenet_v2,vgg16 --configs 1:tf32,16:fp16 --out "$out/standing.md" \
    > "$out/log7" 2>&1 || { cat "$out/log7"; exit 1; }
for want in "^| resnet50 | 1.10 (s2) | — |" "^| mobilenet_v2 | — | 0.90 (s1) |" \
            "^| googlenet | — (exit 1: bad) | — |"; do
    grep -q "$want" "$out/standing.md" || { echo "FAIL: standing.md lacks '$want'"; cat "$out/standing.md"; exit 1; }
done
grep -qF "batch 1, tf32: 1 of 4 models with a speed-up; geometric mean 1.10x, worst resnet50 1.10x, slower than torch.compile on 0; none for: googlenet (exit 1: bad), mobilenet_v2 (no row), vgg16 (no row)" "$out/log7" \
    || { echo "FAIL: standing's batch 1 line"; cat "$out/log7"; exit 1; }
# the 1.02x item is named as within the peer's spread (--thin, default 3%)
grep -qF "batch 16, fp16: 2 of 4 models with a speed-up; geometric mean 0.96x, worst mobilenet_v2 0.90x, slower than torch.compile on 1; within 3% above it: vgg16 1.02x; none for: resnet50 (no row), googlenet (no row)" "$out/log7" \
    || { echo "FAIL: standing's batch 16 line"; cat "$out/log7"; exit 1; }
echo "standing: $(head -1 "$out/log7")"
# A hard limit: a run that would measure for a minute is cut at the limit,
# its row carries the error, and the call stops (exit 3: run again).
t0=$(date +%s)
rc=0
"$py" "$src/bench/networks/suite.py" run --backend cpu --models squeezenet1_1 --configs 1:fp32 \
    --opsched "$bin" --out "$out/hard" --peers "" --min-ms 60000 --hard-limit-s 15 \
    > "$out/log6" 2>&1 || rc=$?
took=$(( $(date +%s) - t0 ))
[ "$rc" -eq 3 ] || { echo "FAIL: --hard-limit-s: exit $rc, want 3"; cat "$out/log6"; exit 1; }
[ "$took" -lt 45 ] || { echo "FAIL: --hard-limit-s 15 took $took s"; exit 1; }
grep -q "opsched run took over" "$out/hard/results.csv" \
  || { echo "FAIL: the cut run's row has no error"; cat "$out/hard/results.csv"; exit 1; }
echo "hard limit: exit 3 after $took s, the cut row says so"
grep -qi "skipped" "$out/r/results.csv" && echo "(peers: $(grep -o 'skipped: [^,"]*' "$out/r/results.csv" | sort -u | head -1))" || true
