#!/usr/bin/env bash
# The machine-readable outputs of the opsched tool on the CPU backend:
# --format json parses (python3 -m json.tool) and --format csv has its
# header on every command that prints results, `opsched run --format csv`
# has exactly the columns benchmark drivers read and nothing else on
# stdout, `opsched status DB` equals `opsched status --db DB`, and
# `opsched predict` and `opsched schedule --cost predict` report the same
# math, layout and BatchNormalization by default.
#
# usage: cli_formats.sh path/to/opsched   (needs python3)
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
tmp=$(mktemp -d /tmp/opsched_formats_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OPSCHED_DATA_DIR=$here/../data OPSCHED_CACHE_DIR=$tmp/cache
. "$(dirname "$0")/support/check.sh"
json_ok() { # json_ok FILE: FILE is one JSON document
  "$py" -m json.tool "$1" >/dev/null
}
header_is() { # header_is FILE PREFIX: the first line of FILE starts with PREFIX
  head -1 "$1" | grep -q "^$2"
}
quick=(--backend cpu --iters 2 --warmup-ms 0 --min-ms 0)

"$bin" models --format json >"$tmp/models.json"
check "models --format json" json_ok "$tmp/models.json"
"$bin" info squeezenet1_1 --format json >"$tmp/info.json"
check "info --format json" json_ok "$tmp/info.json"
"$bin" devices --format json >"$tmp/devices.json"
check "devices --format json" json_ok "$tmp/devices.json"
"$bin" devices --format csv >"$tmp/devices.csv"
check "devices --format csv" header_is "$tmp/devices.csv" "backend,index,name,"

bench=(conv2d --in-channels 3 --out-channels 4 --height 8 "${quick[@]}")
"$bin" bench "${bench[@]}" --format json >"$tmp/bench.json" 2>/dev/null
check "bench --format json" json_ok "$tmp/bench.json"
"$bin" bench "${bench[@]}" --format=csv >"$tmp/bench.csv" 2>/dev/null
check "bench --format=csv" header_is "$tmp/bench.csv" "op,algorithm,algo,status,median_ms"
check "bench --format csv: one row" test "$(wc -l < "$tmp/bench.csv")" = 2

db=$tmp/s.db
"$bin" sweep "$here/cli/data/sweep_small.yml" --db "$db" "${quick[@]}" >/dev/null 2>&1
check "sweep into a database" test $? = 0
"$bin" status "$db" >"$tmp/status1.txt"
"$bin" status --db "$db" >"$tmp/status2.txt"
check "status DB = status --db DB" cmp -s "$tmp/status1.txt" "$tmp/status2.txt"
"$bin" status "$db" --format json >"$tmp/status.json"
check "status --format json" json_ok "$tmp/status.json"
"$bin" status "$db" --format csv >"$tmp/status.csv"
check "status --format csv" header_is "$tmp/status.csv" "device,op,status,configs,rows"
"$bin" export --db "$db" --format csv >"$tmp/export.csv"
check "export --format csv" test "$(wc -l < "$tmp/export.csv")" -gt 1

"$bin" profile squeezenet1_1 --input-size 32 "${quick[@]}" --check off --out-dir "$tmp/p" \
  --format json >"$tmp/profile.json" 2>"$tmp/profile.err"
check "profile --format json" json_ok "$tmp/profile.json"
check "profile: the defaults on the CPU (fp32, nchw, bn fold)" "$py" - "$tmp/profile.json" <<'PY'
import json, sys
items = json.load(open(sys.argv[1]))
assert len(items) == 1 and items[0]["math"] == "fp32" and items[0]["layout"] == "nchw" \
    and items[0]["bn"] == "fold", items
PY

run=(squeezenet1_1 --compare sequential,greedy --input-size 32 "${quick[@]}")
"$bin" run "${run[@]}" --format csv >"$tmp/run.csv" 2>"$tmp/run.err"
check "run --format csv" test $? = 0
check "run --format csv: the driver's columns, then one row per schedule" "$py" - "$tmp/run.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
want = ("model,batch,input,math,layout,schedule,stages,streams,launches,free_ms,free_p10_ms,"
        "free_p90_ms,graph_ms,graph_p10_ms,graph_p90_ms,speedup_free,speedup_graph,rel_err")
assert ",".join(rows[0]) == want, rows[0]
assert [r[5] for r in rows[1:]] == ["sequential", "greedy"], rows
for r in rows[1:]:
    assert len(r) == len(rows[0]) and r[3] == "fp32" and r[4] == "nchw" and r[12] == "", r
    float(r[9]), float(r[15])
PY
"$bin" run "${run[@]}" --format json >"$tmp/run.json" 2>/dev/null
check "run --format json" json_ok "$tmp/run.json"

# predict and schedule --cost predict: one set of defaults
"$bin" predict resnet50 --data h100 --no-fit --quiet --format json >"$tmp/predict.json" \
  2>"$tmp/predict.err"
check "predict --data h100 --format json" json_ok "$tmp/predict.json"
"$bin" schedule resnet50 --searcher sequential --cost predict --data h100 --no-fit --format json \
  >"$tmp/schedule.json" 2>"$tmp/schedule.err"
check "schedule --cost predict --data h100 --format json" json_ok "$tmp/schedule.json"
check "predict and schedule: the same math, layout and bn" "$py" - "$tmp/predict.json" \
  "$tmp/schedule.json" <<'PY'
import json, sys
p, s = (json.load(open(f)) for f in sys.argv[1:3])
got = [(d["math"], d["layout"], d["bn"]) for d in (p, s)]
assert got[0] == got[1] == ("tf32", "nchw", "fold"), got
PY

if [ $fail != 0 ]; then
  for f in "$tmp"/*.err; do echo "--- $f"; tail -5 "$f"; done
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
