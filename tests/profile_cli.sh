#!/usr/bin/env bash
# `opsched profile` end to end on the CPU backend: two zoo models
# (squeezenet1_1 at small sizes and two batch sizes, alexnet at its
# smallest size) and one ONNX file (torch.onnx.export of squeezenet1_1 with
# its weights, made by tests/onnx/make_models.py), each with --out-dir,
# --trace and --db.  Checks the CSV headers and row counts, that attribution
# and the numerics check were computed, that the trace parses back as JSON
# with one layer event per layer that ran, that a second run skips what the
# database holds, that Ctrl-C stops after the size in flight (exit 130) and a
# re-run completes the rest, and what `opsched status --db` lists.
#
# usage: profile_cli.sh [path/to/opsched]   (default: $OPSCHED_BIN)
# Needs python3 for the checks.  $OPSCHED_TESTDATA locates the ONNX file.
set -u
bin=${1:-${OPSCHED_BIN:-}}
py=${OPSCHED_PYTHON:-python3}
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "usage: $0 path/to/opsched"; exit 2
fi
if ! "$bin" devices 2>/dev/null | grep -q '^cpu:0'; then
  echo "SKIP: no cpu device in this build"; echo "0 passed, 0 failed"; exit 0
fi
# One oneDNN thread: timings on a shared machine are otherwise dominated
# by threads waiting for a time slice.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
tmp=$(mktemp -d /tmp/opsched_profile_XXXXXX)
bg=
cleanup() { [ -n "$bg" ] && kill -9 "$bg" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
. "$(dirname "$0")/support/check.sh"
quick=(--backend cpu --iters 3 --warmup-ms 10 --min-ms 0 --out-dir "$tmp/out" --db "$tmp/p.db")

overall_header="model,algorithm,batch,input_size,mean,std,min,max,median,p90,p99,throughput,power_mean_w,energy_per_inference_j,peak_memory_bytes,e2e_graph_median_ms,layer_sum_ms,attribution_latency_pct,attribution_energy_pct,check_rel_l2,enqueue_ms,cv,math,layout,fallback_layers,attribution_graph_pct,layers_queued,layer_isolated_sum_ms,attribution_isolated_pct"
layers_header="batch,input_size,layer,op,in_channels,out_channels,kernel_size,stride,output_shape,flops,mean_ms,median_ms,percentage,energy_j,algorithm,host_ms"

# csv_ok MODEL ITEMS [CHECKED]: the two CSV files of MODEL have their
# headers, ITEMS overall rows, one layers row per node and item, every
# latency and the attribution filled, the numerics check empty (the CPU
# backend is the reference).
csv_ok() {
  "$py" - "$tmp/out/$1_heuristic_overall.csv" "$tmp/out/$1_heuristic_layers.csv" "$2" \
    "${3:-1}" "$overall_header" "$layers_header" <<'EOF'
import csv, sys
overall, layers, items, checked, oh, lh = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5], sys.argv[6]
def rows(path, header):
    with open(path) as f:
        first = f.readline().strip()
        if first != header:
            sys.exit("%s: header is\n  %s\nnot\n  %s" % (path, first, header))
        f.seek(0)
        return list(csv.DictReader(f))
o, l = rows(overall, oh), rows(layers, lh)
if len(o) != items:
    sys.exit("%s: %d rows, not %d" % (overall, len(o), items))
for r in o:
    for k in ("mean", "median", "p99", "throughput", "layer_sum_ms", "attribution_latency_pct", "peak_memory_bytes"):
        if not r[k] or float(r[k]) <= 0:
            sys.exit("%s b%s %s: %s is '%s'" % (overall, r["batch"], r["input_size"], k, r[k]))
    print("  %s b%s %s: median %s ms, layers %s%% of it" % (r["model"], r["batch"], r["input_size"], r["median"], r["attribution_latency_pct"]))
    # the CPU backend is the reference: nothing to check it against
    if r["check_rel_l2"] != "":
        sys.exit("%s: numerics check '%s' on the CPU backend" % (overall, r["check_rel_l2"]))
groups = {}
for r in l:
    groups.setdefault((r["batch"], r["input_size"]), []).append(r)
if len(groups) != items or len({len(g) for g in groups.values()}) != 1:
    sys.exit("%s: %d (batch, size) groups of %s rows" % (layers, len(groups), sorted({len(g) for g in groups.values()})))
for key, g in groups.items():
    pct = sum(float(r["percentage"]) for r in g if r["percentage"])
    if abs(pct - 100) > 0.5:
        sys.exit("%s %s: percentages add up to %.2f" % (layers, key, pct))
EOF
}

# trace_ok FILE PROFILES: parses as JSON, PROFILES profile events, only
# M/X/C events, layer events with op, algorithm and a duration.
trace_ok() {
  "$py" - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
bad = {e["ph"] for e in ev} - {"M", "X", "C"}
if bad:
    sys.exit("unexpected phases %s" % bad)
prof = [e for e in ev if e.get("cat") == "profile"]
layers = [e for e in ev if e.get("cat") == "layer"]
if len(prof) != int(sys.argv[2]):
    sys.exit("%d profile events, not %s" % (len(prof), sys.argv[2]))
if not layers or any(e["dur"] < 0 or "op" not in e["args"] or "algorithm" not in e["args"] for e in layers):
    sys.exit("layer events missing or incomplete")
print("  %s: %d layer events, %d profiles" % (sys.argv[1], len(layers), len(prof)))
EOF
}

# layers_cover NETWORK MODEL SIZE: the layers rows of MODEL at batch 1 and
# SIZE name every layer `opsched info` lists for NETWORK (info leaves out
# Dropout; the CSV has a row for every node).
layers_cover() {
  local missing
  missing=$(comm -23 <("$bin" info "$1" --format csv | awk -F, 'NR > 1 { print $2 }' | sort) \
    <(awk -F, 'NR > 1 && $1 == "1" && $2 == "'"$3"'" { print $3 }' \
      "$tmp/out/$2_heuristic_layers.csv" | sort))
  [ -z "$missing" ] || { echo "  $2: no layer rows for $missing"; return 1; }
}

run() { # run LOG ARGS...: opsched profile, output to LOG
  local log=$1; shift
  "$bin" profile "$@" >"$log.out" 2>"$log.err"
}

# --- squeezenet1_1: 2 batch sizes x 2 sizes --------------------------------
check "squeezenet1_1 profile" run "$tmp/sq" squeezenet1_1 "${quick[@]}" --batch 1,2 --input-size 64,96 \
  --trace "$tmp/sq.json"
check "squeezenet1_1 CSV files" csv_ok squeezenet1_1 4
check "squeezenet1_1 a row for every layer" layers_cover squeezenet1_1 squeezenet1_1 64
check "squeezenet1_1 trace" trace_ok "$tmp/sq.json" 4
check "squeezenet1_1 summaries" grep -q "=== Performance summary: squeezenet1_1, batch 2, 96x96" "$tmp/sq.out"
check "squeezenet1_1 numerics n/a on the CPU" grep -q "^Numerics: *n/a (the CPU backend is the reference)" "$tmp/sq.out"
# squeezenet1_1: 26 convolutions, each with its Relu fused, 8 Concats
# (copying, as profile runs them), 3 MaxPools, the global pooling and a
# Flatten (a view): 38 launches for 65 layers.
check "squeezenet1_1 launches" grep -q "^Launches: *38 for 65 layers (26 run inside another layer's launch, 1 views)" "$tmp/sq.out"

# host_rows_ok DB: every layer stored as layer-timed (";mode=network") also
# has its host enqueue time (";mode=host", plus ";fused=relu" where it ran
# the Relu after it, the same key otherwise), with an algorithm and a
# non-negative median.
host_rows_ok() {
  "$py" - "$1" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
q = "select run_id, config_id, replace(replace(settings_key, ';mode=%s', ''), ';fused=relu', ''), algo from measurements where settings_key like '%%;mode=%s%%'"
net, host = sorted(c.execute(q % ("network", "network")).fetchall()), sorted(c.execute(q % ("host", "host")).fetchall())
if not host or net != host:
    sys.exit("%d ;mode=network rows, %d ;mode=host rows, not the same layers" % (len(net), len(host)))
bad = c.execute("select count(*) from measurements where settings_key like '%;mode=host%' and (median_ms is null or median_ms < 0 or algo is null or algo = '' or n < 2)").fetchone()[0]
if bad:
    sys.exit("%d ;mode=host rows without a time or an algorithm" % bad)
print("  %d host enqueue rows" % len(host))
EOF
}
check "squeezenet1_1 host enqueue rows" host_rows_ok "$tmp/p.db"
check "squeezenet1_1 host summary" grep -q "^Host enqueue: *sum of layers" "$tmp/sq.out"

# --- resume: everything is in the database --------------------------------
check "resume skips" run "$tmp/again" squeezenet1_1 "${quick[@]}" --batch 1,2 --input-size 64,96
check "resume says so" grep -q "^0 profiled, 4 already in the database" "$tmp/again.out"
check "resume appends nothing" csv_ok squeezenet1_1 4

# --- alexnet at its smallest size -----------------------------------------
check "alexnet profile" run "$tmp/alex" alexnet "${quick[@]}" --iters 2 --input-size 224 \
  --trace "$tmp/alex.json"
check "alexnet CSV files" csv_ok alexnet 1
check "alexnet trace" trace_ok "$tmp/alex.json" 1

# --- an ONNX file with its weights ----------------------------------------
onnx=${OPSCHED_TESTDATA:-/nonexistent}/onnx/torch/squeezenet1_1_params_op13.onnx
if [ -f "$onnx" ]; then
  check "onnx profile" run "$tmp/onnx" "$onnx" "${quick[@]}" --input-size 64 --trace "$tmp/onnx.json"
  check "onnx CSV files" csv_ok squeezenet1_1_params_op13 1
  check "onnx trace" trace_ok "$tmp/onnx.json" 1
else
  echo "SKIP onnx: $onnx not found (made by tests/onnx/make_models.py)"
fi

# --- Ctrl-C finishes the size in flight; a re-run completes ----------------
sizes=64,72,80,88,96,104,112,120
"$bin" profile squeezenet1_1 "${quick[@]}" --iters 20 --batch 4 --input-size $sizes --check off \
  --out-dir "$tmp/int" >"$tmp/int.out" 2>"$tmp/int.err" &
bg=$!
# The CSV is published whole at the end; while the run goes on its rows
# grow in the temporary beside it.
for _ in $(seq 1 600); do
  [ "$(cat "$tmp"/int/squeezenet1_1_heuristic_overall.csv.tmp.* 2>/dev/null | wc -l)" -ge 2 ] && break
  kill -0 "$bg" 2>/dev/null || break
  sleep 0.1
done
kill -INT "$bg" 2>/dev/null
wait "$bg"
code=$?
bg=
check "Ctrl-C exits 130" [ "$code" = 130 ]
check "Ctrl-C: the CSVs published, no temporary left" \
  [ -s "$tmp/int/squeezenet1_1_heuristic_layers.csv" -a -z "$(ls "$tmp"/int/*.tmp.* 2>/dev/null)" ]
done_rows=$(( $(wc -l < "$tmp/int/squeezenet1_1_heuristic_overall.csv") - 1 ))
check "Ctrl-C stops early ($done_rows of 8 sizes)" [ "$done_rows" -ge 1 -a "$done_rows" -lt 8 ]
check "re-run completes" run "$tmp/int2" squeezenet1_1 "${quick[@]}" --iters 20 --batch 4 \
  --input-size $sizes --check off --out-dir "$tmp/int"
check "re-run skipped the done sizes" grep -q "already in the database" "$tmp/int2.out"
check "all 8 sizes in the CSV" [ "$(( $(wc -l < "$tmp/int/squeezenet1_1_heuristic_overall.csv") - 1 ))" = 8 ]

# --- opsched status --db ---------------------------------------------------
"$bin" status --db "$tmp/p.db" >"$tmp/status.out" 2>&1
check "status runs" [ $? = 0 ]
check "status lists squeezenet1_1" grep -Eq "squeezenet1_1 +2 +heuristic +fp32 +nchw +2 +64-96" "$tmp/status.out"
check "status lists the interrupted one" \
  grep -Eq "squeezenet1_1 +4 +heuristic +fp32 +nchw +8 +64-120" "$tmp/status.out"
check "status lists alexnet" grep -Eq "alexnet +1 +heuristic +fp32 +nchw +1 +224-224" "$tmp/status.out"
check "status lists the measurements by settings" grep -Eq "cpu:.* +fp32 +nchw +heuristic +hot +[0-9]+ +[0-9]+ +[0-9]+$" "$tmp/status.out"
# the layer rows of a few iterations on a shared machine: some are unstable
if grep -Eq "cpu:.* fp32 +nchw +heuristic +[0-9]+ +[0-9]+ +[1-9][0-9]*$" "$tmp/status.out"; then
  check "status warns about unstable rows as bench does" \
    grep -q "warning: [0-9]* result(s) have a coefficient of variation above 2.5%" "$tmp/status.out"
fi
check "status: interrupted run recorded" \
  "$py" -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); sys.exit(0 if c.execute(\"select count(*) from runs where status='interrupted'\").fetchone()[0]==1 else 1)" "$tmp/p.db"

if [ $fail != 0 ]; then
  for f in "$tmp"/*.err; do echo "--- $f"; tail -5 "$f"; done
fi
echo "$pass passed, $fail failed"
[ $fail = 0 ]
