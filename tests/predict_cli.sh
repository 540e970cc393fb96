#!/usr/bin/env bash
# `opsched train-model` and `opsched predict` end to end on the CPU backend:
# squeezenet1_1 at input size 32 profiled with --isolated (every
# distinct layer measured alone, stored as the harness stores it), then the
# models trained (saved next to the database), and the network predicted in
# table, CSV and JSON: every layer exact (coverage 100%), the total equal to
# the stored layers' sum (no CUDA-graph runs and no calibration on this
# database), a second predict reusing the saved models, --leave-out (none
# of the network's own measurements), each kind of data a prediction can
# lack (a layout, a cache state, an algorithm policy, a math mode, shipped
# data without a calibration, shipped data with one but no measurement
# under the settings): exit 1, no nan, the layers named and a sweep that
# `opsched sweep --dry-run` accepts carrying the missing setting (the cold
# cache's run for real, after which the prediction is exact), and the usage
# errors of both commands.
#
# usage: predict_cli.sh [path/to/opsched]   (default: $OPSCHED_BIN)
# Needs python3 for the checks.
set -u
bin=${1:-${OPSCHED_BIN:-}}
py=${OPSCHED_PYTHON:-python3}
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "usage: $0 path/to/opsched"; exit 2
fi
if ! "$bin" devices 2>/dev/null | grep -q '^cpu:0'; then
  echo "SKIP: no cpu device in this build"; echo "0 passed, 0 failed"; exit 0
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
tmp=$(mktemp -d /tmp/opsched_predict_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/support/check.sh"
db=$tmp/p.db
common=(--db "$db" --math fp32 --quiet)

"$bin" profile squeezenet1_1 --input-size 32 --isolated --check off --cuda-graph off --backend cpu \
  --iters 3 --warmup-ms 5 --min-ms 0 --out-dir "$tmp/out" --db "$db" >"$tmp/profile.log" 2>&1
check "profile --isolated stores the layers" test $? = 0

"$bin" train-model "${common[@]}" --folds 3 --rounds 30 >"$tmp/train.txt" 2>"$tmp/train.err"
check "train-model runs" test $? = 0
check "train-model reports the models" grep -q "cv median" "$tmp/train.txt"
check "train-model saves next to the database" test -d "$db.models"
check "train-model writes the metadata" sh -c "ls '$db.models'/*.meta.json >/dev/null"

"$bin" train-model "${common[@]}" --folds 3 --rounds 30 --format json >"$tmp/train.json"
check "train-model json" "$py" -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['configurations'] > 5 and d['models'], d
assert all('cv' in m and 'baseline' in m for m in d['models'])
" "$tmp/train.json"

"$bin" predict squeezenet1_1 --input-size 32 "${common[@]}" --format json >"$tmp/p.json" \
  2>"$tmp/p.err"
check "predict json" test $? = 0
check "every layer exact, total = layer sum" "$py" - "$tmp/p.json" "$tmp/out/squeezenet1_1_heuristic_layers.csv" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["totals"]
assert t["coverage_time"] == 1 and t["coverage_flops"] == 1, t
assert t["sources"]["exact"] == t["launches"] and t["sources"]["none"] == 0, t
assert all(l["source"] == "exact" and l["measurement_id"] > 0 for l in d["layers"])
assert abs(t["latency_ms"] - sum(l["ms"] for l in d["layers"])) < 1e-9 * t["latency_ms"]
assert d["composition"]["source"] == "none", d["composition"]
assert t["peak_memory_bytes"] == t["peak_activation_bytes"] + t["weight_bytes"] > 0
EOF

"$bin" predict squeezenet1_1 --input-size 32 "${common[@]}" --format csv >"$tmp/p.csv"
check "predict csv" "$py" -c "
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows[-1]['kind'] == 'total' and all(r['kind'] == 'layer' for r in rows[:-1])
assert all(r['source'] == 'exact' for r in rows[:-1])
" "$tmp/p.csv"

"$bin" predict squeezenet1_1 --input-size 32 --db "$db" --math fp32 >"$tmp/p.txt" 2>"$tmp/p2.err"
check "predict table" grep -q "coverage (exact)     100.0% of the time, 100.0% of the FLOPs" \
  "$tmp/p.txt"
check "saved models reused" sh -c "! grep -q 'training the models' '$tmp/p2.err'"

"$bin" predict squeezenet1_1 --input-size 32 --db "$db" --math fp32 --fuse off --format json \
  --quiet >"$tmp/nofuse.out" 2>"$tmp/nofuse.err"
check "fuse off: the Relus have no basis: exit 1, no answer" sh -c "test $? = 1 && test ! -s '$tmp/nofuse.out'"
check "fuse off: names the layers, what the database holds, the sweep" sh -c "
  grep -q 'launches of squeezenet1_1 have no basis' '$tmp/nofuse.err' &&
  grep -q 'Relu' '$tmp/nofuse.err' &&
  grep -q 'cpu:.*fp32 nchw heuristic' '$tmp/nofuse.err' &&
  grep -q 'opsched sweep --for-model squeezenet1_1 --db $db --batch 1 --input-size 32x32 --math fp32 --layout nchw --backend cpu --no-fuse' '$tmp/nofuse.err'"
"$bin" predict squeezenet1_1 --input-size 32 --db "$db" --math fp32 --fuse off --format json \
  --quiet --allow-partial >"$tmp/nofuse.json" 2>/dev/null
check "fuse off --allow-partial: the partial answer, exit 1" test $? = 1
check "fuse off: Relus are layers, not measured alone" "$py" -c "
import json, sys
d = json.load(open(sys.argv[1]))
relus = [l for l in d['layers'] if l['op'] == 'Relu']
assert relus and all(l['source'] != 'exact' for l in relus)
t = d['totals']
assert t['partial'] and 0 < t['launches_unpredicted'] < t['launches'], t
assert t['latency_ms'] > 0 and t['coverage_time'] <= 1, t
" "$tmp/nofuse.json"
"$bin" predict squeezenet1_1 --input-size 32 --db "$db" --math fp32 --fuse off --format csv \
  --quiet --allow-partial >"$tmp/nofuse.csv" 2>/dev/null
check "fuse off --allow-partial csv: a partial row, no nan" "$py" -c "
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert all(len(r) == len(rows[0]) for r in rows)
assert rows[-1][0] == 'partial' and float(rows[-1][5]) > 0, rows[-1]
assert not any(f.lower() == 'nan' for r in rows for f in r)
" "$tmp/nofuse.csv"
"$bin" predict squeezenet1_1 --input-size 32 --db "$db" --math fp32 --fuse off --quiet \
  --allow-partial >"$tmp/nofuse.txt" 2>/dev/null
check "fuse off --allow-partial table: PARTIAL, no nan" sh -c "
  grep -q 'predicted latency    PARTIAL: ' '$tmp/nofuse.txt' && ! grep -qiw nan '$tmp/nofuse.txt'"

# --leave-out: the network's own measurements left out of lookups and
# training; this database holds nothing else, so no layer has a source.
"$bin" predict squeezenet1_1 --input-size 32 --db "$db" --math fp32 --leave-out --folds 3 \
  --rounds 30 --format json --allow-partial >"$tmp/lo.json" 2>"$tmp/lo.err"
check "predict --leave-out: no basis left, exit 1" test $? = 1
check "predict --leave-out says what it left out" grep -Eq "leaving squeezenet1_1 out \([1-9][0-9]* signatures\)" "$tmp/lo.err"
check "predict --leave-out: no layer exact" "$py" - "$tmp/lo.json" <<'EOF2'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
assert t["sources"]["exact"] == 0 and t["coverage_time"] == 0, t
assert t["sources"]["none"] + t["sources"]["learned"] + t["sources"]["roofline"] == t["launches"], t
EOF2

# Each kind of data a prediction can lack: a layout, a cache state, an
# algorithm policy or a math mode the database has no measurement under,
# and shipped data without a calibration at a size it never measured.  Each
# must exit 1, print no nan, name the layers without a basis and print the
# sweep that measures them with the setting that was missing; that sweep
# must be one `opsched sweep` accepts (--dry-run) and it must list the
# network's configurations under that setting.
#   no_basis NAME SETTING DRY_RUN_SUMMARY PREDICT_ARGS...
no_basis() {
  local name=$1 setting=$2 summary=$3; shift 3
  "$bin" predict squeezenet1_1 "$@" >"$tmp/nb.out" 2>"$tmp/nb.err"
  local rc=$?
  check "$name: exit 1" test "$rc" = 1
  check "$name: no nan" sh -c "! grep -qiw nan '$tmp/nb.out' '$tmp/nb.err'"
  check "$name: names the layers" \
    grep -Eq 'launches of squeezenet1_1 have no basis \(.*\): [A-Za-z0-9_.]+ \([A-Za-z+]+\)' "$tmp/nb.err"
  sed -n 's/^opsched predict: to measure them: opsched //p' "$tmp/nb.err" >"$tmp/nb.cmd"
  check "$name: the sweep carries $setting" grep -q -- " $setting\( \|$\)" "$tmp/nb.cmd"
  local sweep
  read -ra sweep <"$tmp/nb.cmd"
  "$bin" "${sweep[@]}" --dry-run >"$tmp/nb.dry" 2>&1
  check "$name: the sweep is accepted (--dry-run)" test $? = 0
  check "$name: the sweep lists the layers under $summary" \
    grep -Eq "^[1-9][0-9]* configurations; .*$summary" "$tmp/nb.dry"
}
no_basis "layout absent" "--layout nhwc" "layout nhwc" --input-size 32 --db "$db" --math fp32 --layout nhwc --quiet
no_basis "cache state absent" "--cache cold" "cache cold" --input-size 32 --db "$db" --math fp32 --cache cold --quiet
check "cache state absent: the request names the cache state" \
  grep -q 'no calibration under cpu:.* fp32 nchw heuristic, cache cold)' "$tmp/nb.err"
check "cache state absent: the holdings name theirs" grep -q 'fp32 nchw heuristic, cache hot,' "$tmp/nb.err"
cp "$db" "$tmp/cold.db"
read -ra sweep <"$tmp/nb.cmd"
"$bin" "${sweep[@]/#$db/$tmp/cold.db}" --iters 3 --warmup-ms 5 --min-ms 0 >/dev/null 2>&1
check "cache state absent: the suggested sweep runs" test $? = 0
"$bin" predict squeezenet1_1 --input-size 32 --db "$tmp/cold.db" --math fp32 --cache cold --quiet \
  --format json >"$tmp/cold.json" 2>"$tmp/cold.err"
check "cache state absent: after the sweep, predict succeeds" test $? = 0
check "cache state absent: after the sweep, every layer exact" "$py" -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['cache'] == 'cold' and d['totals']['coverage_time'] == 1, d['totals']
" "$tmp/cold.json"
no_basis "algorithm policy absent" "--algo find" "policies: find;" --input-size 32 --db "$db" --math fp32 --algo find --quiet
no_basis "math mode absent (the default tf32)" "--math tf32" "math tf32" --input-size 32 --db "$db" --quiet
"$bin" predict squeezenet1_1 --input-size 32 --db "$db" --math fp32 --layout nhwc --quiet \
  --allow-partial >"$tmp/nb_partial.out" 2>"$tmp/nb_partial.err"
check "layout absent --allow-partial: still exit 1" test $? = 1
check "layout absent --allow-partial: prints the coverage, no nan" sh -c "
  grep -q 'predicted latency    PARTIAL: ' '$tmp/nb_partial.out' &&
  grep -Eq 'coverage \(exact\) +0\.0% of the predicted layers. time, 0\.0% of the FLOPs' '$tmp/nb_partial.out' &&
  ! grep -qiw nan '$tmp/nb_partial.out' '$tmp/nb_partial.err'"

# Shipped data without a calibration: this database exported as a shipped
# set (the h100 set has a calibration under every math mode, so this is
# the only way to reach it), predicted at a size it never measured with no
# learned models: the layers have no basis, and the sweep must go to a
# database of one's own (--db FILE).
"$py" "$(dirname "$0")/../scripts/export-data.py" "$db" "$tmp/data/cpuset" >/dev/null 2>&1
check "export a shipped set without a calibration" grep -q 'rows=0' "$tmp/data/cpuset/calibrations.sql"
export OPSCHED_DATA_DIR=$tmp/data OPSCHED_CACHE_DIR=$tmp/cache
no_basis "shipped data without a calibration" "--input-size 64x64" "layout nchw" --data cpuset --input-size 64 --math fp32 --no-fit --quiet
check "shipped data without a calibration: measure into a database of one's own" sh -c "
  grep -q -- '--db FILE ' '$tmp/nb.cmd' && grep -q 'the shipped data is read-only' '$tmp/nb.err'"
unset OPSCHED_DATA_DIR OPSCHED_CACHE_DIR

# The shipped H100 data has a calibration but no measurement under the cold
# cache: every layer would rest on the roofline; the same exit 1, and the
# sweep (for the GPU the data is of) carries --cache cold.
export OPSCHED_DATA_DIR=$(dirname "$0")/../data OPSCHED_CACHE_DIR=$tmp/cache
"$bin" predict squeezenet1_1 --data h100 --cache cold --no-fit --quiet >"$tmp/h.out" 2>"$tmp/h.err"
check "shipped h100, cache cold: exit 1, no answer, no nan" sh -c "
  test $? = 1 && test ! -s '$tmp/h.out' && ! grep -qiw nan '$tmp/h.err'"
check "shipped h100, cache cold: says every layer would rest on the roofline" \
  grep -q 'no measurement of cuda:.* under tf32 nchw heuristic, cache cold: every layer of squeezenet1_1' "$tmp/h.err"
sed -n 's/^opsched predict: to measure them: opsched //p' "$tmp/h.err" >"$tmp/h.cmd"
read -ra sweep <"$tmp/h.cmd"
check "shipped h100, cache cold: the sweep carries --cache cold" grep -q -- ' --cache cold --backend cuda' "$tmp/h.cmd"
"$bin" "${sweep[@]}" --dry-run >"$tmp/h.dry" 2>&1
check "shipped h100, cache cold: the sweep is accepted (--dry-run)" \
  grep -Eq '^[1-9][0-9]* configurations; .*cuda, math tf32, layout nchw, cache cold' "$tmp/h.dry"
unset OPSCHED_DATA_DIR OPSCHED_CACHE_DIR

"$bin" predict --db "$db" >/dev/null 2>"$tmp/e1"
check "predict without a network: usage" test $? = 2
"$bin" predict squeezenet1_1 --db "$db" --mode fast >/dev/null 2>"$tmp/e2"
check "predict --mode fast: usage" sh -c "test $? = 2 && grep -q 'graph or eager' '$tmp/e2'"
"$bin" predict squeezenet1_1 --db "$tmp/none.db" >/dev/null 2>"$tmp/e3"
check "predict on a missing database fails" sh -c "test $? = 1 && grep -q 'does not exist' '$tmp/e3'"
"$bin" train-model --db "$db" --folds 1 >/dev/null 2>"$tmp/e4"
check "train-model --folds 1: usage" test $? = 2
"$bin" predict squeezenet1_1 --db "$db" --target h200 --math fp32 >/dev/null 2>"$tmp/e5"
check "predict for a device not in the database fails" sh -c "test $? = 1 && grep -q 'no device' '$tmp/e5'"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
