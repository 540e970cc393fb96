#!/usr/bin/env bash
# Every CSV the tool writes parses with Python's csv module: a header, every
# row the header's field count, no "nan" field, and a field holding a comma
# (a measurement's signature, quoted per RFC 4180) reads back as stored.
# On the CPU backend and the shipped H100 data (no GPU): info, models,
# devices, bench, sweep + status + export, profile's two files, run,
# schedule, train-model, predict (table data as CSV, and a partial answer),
# validate --csv.  On the way: sweep and status warn
# about the unstable rows the database holds, with bench's wording.
#
# usage: csv_roundtrip.sh [path/to/opsched]   (default: $OPSCHED_BIN)
# Needs python3.
set -u
bin=${1:-${OPSCHED_BIN:-}}
py=${OPSCHED_PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "usage: $0 path/to/opsched"; exit 2
fi
if ! "$bin" devices 2>/dev/null | grep -q '^cpu:0'; then
  echo "SKIP: no cpu device in this build"; echo "0 passed, 0 failed"; exit 0
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
tmp=$(mktemp -d /tmp/opsched_csv_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OPSCHED_DATA_DIR=$here/../data OPSCHED_CACHE_DIR=$tmp/cache
. "$(dirname "$0")/support/check.sh"

# parses FILE [MIN_ROWS]: a header of distinct names, at least MIN_ROWS
# rows (default 1), each with the header's field count, no field "nan".
parses() {
  "$py" - "$1" "${2:-1}" <<'PY'
import csv, sys
path, min_rows = sys.argv[1], int(sys.argv[2])
with open(path, newline="") as f:
    rows = list(csv.reader(f, strict=True))
if not rows:
    sys.exit("%s: empty" % path)
head = rows[0]
if not head or len(set(head)) != len(head) or any(not h for h in head):
    sys.exit("%s: header %r" % (path, head))
for i, r in enumerate(rows[1:], 2):
    if len(r) != len(head):
        sys.exit("%s line %d: %d fields, the header %d: %r" % (path, i, len(r), len(head), r))
    if any(v.strip().lower() in ("nan", "-nan") for v in r):
        sys.exit("%s line %d: a nan field: %r" % (path, i, r))
if len(rows) - 1 < min_rows:
    sys.exit("%s: %d rows, expected at least %d" % (path, len(rows) - 1, min_rows))
print("  %s: %d fields x %d rows" % (path.rsplit("/", 1)[-1], len(head), len(rows) - 1))
PY
}

# --- info, models ----------------------------------------------------------
for m in squeezenet1_1 inception_v3; do
  "$bin" info "$m" --format csv >"$tmp/info_$m.csv"
  check "info $m --format csv" parses "$tmp/info_$m.csv" 10
done
"$bin" models --format csv >"$tmp/models.csv"
check "models --format csv" parses "$tmp/models.csv" 5
"$bin" devices --format csv >"$tmp/devices.csv" 2>/dev/null
check "devices --format csv" parses "$tmp/devices.csv" 1
check "devices: the cpu device listed" sh -c "grep -q '^cpu,0,' '$tmp/devices.csv'"

# --- bench ------------------------------------------------------------------------
"$bin" bench conv2d --backend cpu --in-channels 4 --out-channels 4 --height 8 --iters 3 \
  --warmup-ms 1 --min-ms 1 --format csv >"$tmp/bench.csv" 2>"$tmp/bench.err"
check "bench conv2d --format csv" parses "$tmp/bench.csv" 1
check "bench: its columns" sh -c "head -1 '$tmp/bench.csv' | grep -qx 'op,algorithm,algo,status,median_ms,mean_ms,min_ms,p99_ms,cv,samples,median_ci,converged,launches,workspace_bytes,tflops,gb_s,message'"

# --- sweep on the CPU, then export ---------------------------------------------
quick=(--backend cpu --iters 3 --warmup-ms 1 --min-ms 0)
"$bin" sweep "$here/cli/data/sweep_small.yml" --db "$tmp/s.db" "${quick[@]}" \
  >"$tmp/sweep.out" 2>"$tmp/sweep.err"
check "sweep a tiny spec" test $? = 0
# sweep and status warn about unstable rows (cv above 2.5%) as bench does:
# both or neither, as the database's rows say
unstable=$("$py" -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"select count(*) from measurements where status='ok' and cv > 0.025\").fetchone()[0])" "$tmp/s.db")
"$bin" status --db "$tmp/s.db" >"$tmp/status.out" 2>"$tmp/status.err"
check "status runs" test $? = 0
warning="warning: $unstable result(s) have a coefficient of variation above 2.5%: the device may be shared or throttling"
if [ "$unstable" -gt 0 ]; then
  check "sweep warns about $unstable unstable rows" grep -qF "$warning" "$tmp/sweep.err"
  check "status warns about them" grep -qF "$warning" "$tmp/status.err"
else
  check "no unstable rows, no warning" sh -c "! grep -q 'coefficient of variation' '$tmp/sweep.err' '$tmp/status.err'"
fi
check "status: the rows by settings" grep -Eq "cpu:.* fp32 +nchw +heuristic +hot +3 +3 +$unstable\$" "$tmp/status.out"
"$bin" status "$tmp/s.db" --format csv >"$tmp/status.csv" 2>/dev/null
check "status --format csv" parses "$tmp/status.csv" 1
check "status: its columns" sh -c "head -1 '$tmp/status.csv' | grep -qx 'device,op,status,configs,rows'"
"$bin" export csv --db "$tmp/s.db" -o "$tmp/export.csv"
check "export csv" parses "$tmp/export.csv" 3
check "export: the classic columns first" sh -c "head -1 '$tmp/export.csv' | grep -q '^Batch size,In Channels,Out Channels,Kernel Size,Stride,Width,Height,Flops,Latency,Latency Type,'"
check "export: a field with commas round-trips" "$py" - "$tmp/export.csv" "$tmp/s.db" <<'PY'
import csv, sqlite3, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
stored = {r[0] for r in sqlite3.connect(sys.argv[2]).execute("select signature from configs")}
sigs = {r["signature"] for r in rows}
assert any("," in s for s in sigs), sigs
assert sigs <= stored, (sigs - stored)
PY
"$bin" export csv --db "$tmp/s.db" --op conv2d >"$tmp/export_stdout.csv"
check "export csv to stdout" parses "$tmp/export_stdout.csv" 3

# --- profile on the CPU: its two files ------------------------------------------
"$bin" profile squeezenet1_1 --input-size 32 --isolated --check off --cuda-graph off \
  "${quick[@]}" --out-dir "$tmp/out" --db "$tmp/p.db" >"$tmp/profile.out" 2>"$tmp/profile.err"
check "profile squeezenet1_1 on the CPU" test $? = 0
check "profile overall CSV" parses "$tmp/out/squeezenet1_1_heuristic_overall.csv" 1
check "profile layers CSV" parses "$tmp/out/squeezenet1_1_heuristic_layers.csv" 20
"$bin" profile squeezenet1_1 --input-size 40 --check on --cuda-graph off "${quick[@]}" \
  --out-dir "$tmp/out" --db "$tmp/p.db" >"$tmp/profile2.out" 2>"$tmp/profile2.err"
check "profile appends a size" parses "$tmp/out/squeezenet1_1_heuristic_overall.csv" 2
check "profile: CPU numerics n/a, its field empty" "$py" - "$tmp/out/squeezenet1_1_heuristic_overall.csv" <<'PY'
import csv, sys
assert all(r["check_rel_l2"] == "" for r in csv.DictReader(open(sys.argv[1], newline="")))
PY

# --- run, schedule ----------------------------------------------------------------
"$bin" run squeezenet1_1 --backend cpu --compare sequential --input-size 32 \
  --iters 3 --min-ms 1 --warmup-ms 1 --format csv >"$tmp/run.csv" 2>"$tmp/run.err"
check "run --format csv" parses "$tmp/run.csv" 1
check "run: the columns a benchmark driver reads" sh -c "head -1 '$tmp/run.csv' | grep -qx 'model,batch,input,math,layout,schedule,stages,streams,launches,free_ms,free_p10_ms,free_p90_ms,graph_ms,graph_p10_ms,graph_p90_ms,speedup_free,speedup_graph,rel_err'"
"$bin" schedule squeezenet1_1 --searcher sequential --cost predict --data h100 --no-fit \
  --format csv >"$tmp/schedule.csv" 2>"$tmp/schedule.err"
check "schedule --format csv" parses "$tmp/schedule.csv" 20
check "schedule: the stages in order, each with its nodes" "$py" - "$tmp/schedule.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert [r["stage"] for r in rows] == [str(i) for i in range(len(rows))], rows
assert all(r["nodes"] and r["kind"] in ("merge", "concurrent") for r in rows), rows
PY

# --- train-model, predict, validate -----------------------------------------------
"$bin" train-model --db "$tmp/p.db" --math fp32 --folds 3 --rounds 30 --format csv \
  >"$tmp/train.csv" 2>"$tmp/train.err"
check "train-model --format csv" parses "$tmp/train.csv" 1
"$bin" predict squeezenet1_1 --input-size 32 --db "$tmp/p.db" --math fp32 --quiet \
  --folds 3 --rounds 30 --format csv >"$tmp/predict.csv"
check "predict --format csv" parses "$tmp/predict.csv" 20
"$bin" predict squeezenet1_1 --input-size 32 --db "$tmp/p.db" --math fp32 --quiet --mode eager \
  --format csv >"$tmp/predict_eager.csv"
check "predict --mode eager --format csv" parses "$tmp/predict_eager.csv" 20
"$bin" predict squeezenet1_1 --input-size 32 --db "$tmp/p.db" --math fp32 --quiet --fuse off \
  --allow-partial --format csv >"$tmp/predict_partial.csv" 2>/dev/null
check "predict --allow-partial --format csv" parses "$tmp/predict_partial.csv" 20
"$bin" predict inception_v3 --data h100 --bn fold --no-fit --quiet --format csv \
  >"$tmp/predict_h100.csv"
check "predict on the shipped data --format csv" parses "$tmp/predict_h100.csv" 100
"$bin" validate --db "$tmp/p.db" --math fp32 --folds 3 --rounds 30 --csv "$tmp/validate.csv" \
  >"$tmp/validate.out" 2>"$tmp/validate.err"
check "validate --csv" parses "$tmp/validate.csv" 1

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
