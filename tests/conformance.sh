#!/usr/bin/env bash
# The ONNX backend node tests (onnx 1.23.2's) through opsched's CPU backend
# (bench/conformance/run.py), held to what passes today: every case named
# in tests/conformance/cpu_pass.txt must still pass.  The run's table goes
# to the build folder (conformance/cpu/summary.md).  The first run makes a
# virtual environment with the pinned onnx from PyPI; without network it
# skips, saying so.
#   tests/conformance.sh OPSCHED_BIN SOURCE_DIR WORK_DIR
set -uo pipefail
bin=$1
src=$2
work=$3
py=${OPSCHED_PYTHON:-python3}
mkdir -p "$work"
out=$work/cpu
"$py" "$src/bench/conformance/run.py" --opsched "$bin" --backend cpu --math fp32 \
  --out "$out" --jobs "$(nproc)" 2>"$work/run.err"
rc=$?
if [ $rc != 0 ]; then
  if grep -q "cannot make the onnx" "$work/run.err"; then
    echo "SKIP: the pinned onnx could not be installed (no network?):"
    tail -3 "$work/run.err"
    exit 0
  fi
  cat "$work/run.err"
  echo "FAIL: the conformance run itself failed (exit $rc)"
  exit 1
fi
expected=$src/tests/conformance/cpu_pass.txt
"$py" - "$out/cases.csv" "$expected" <<'PY'
import csv, sys
rows = {r["case"]: r for r in csv.DictReader(open(sys.argv[1]))}
want = [l.strip() for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")]
lost = [c for c in want if rows.get(c, {}).get("status") != "passed"]
n = {s: sum(1 for r in rows.values() if r["status"] == s) for s in ("passed", "failed", "skipped")}
ran = n["passed"] + n["failed"]
print("conformance (CPU): %d passed, %d failed, %d skipped; %.1f%% of the in-scope cases"
      % (n["passed"], n["failed"], n["skipped"], 100.0 * n["passed"] / ran if ran else 0))
new = sorted(c for c, r in rows.items() if r["status"] == "passed" and c not in set(want))
if new:
    print("%d cases pass that %s does not list yet (add them): %s" % (len(new), sys.argv[2],
          " ".join(new[:20]) + (" ..." if len(new) > 20 else "")))
for c in lost:
    r = rows.get(c)
    print("FAIL %s: %s" % (c, (r["status"] + ": " + r["reason"]) if r else "not run"))
sys.exit(1 if lost else 0)
PY
