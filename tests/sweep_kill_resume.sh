#!/usr/bin/env bash
# Faults a sweep must survive, on the CPU backend: kill -9 in the middle
# (the database stays intact, a re-run completes the rest, nothing is
# measured twice), Ctrl-C (exit 130, run recorded "interrupted"), two
# processes writing one database at once (shards 0/2 and 1/2), and merging
# shard databases (twice: nothing is added the second time).
#
# usage: sweep_kill_resume.sh [path/to/opsched]   (default: $OPSCHED_BIN)
# Needs python3 (its sqlite3 and csv modules) for the checks.
set -u
bin=${1:-${OPSCHED_BIN:-}}
py=${OPSCHED_PYTHON:-python3}
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "usage: $0 path/to/opsched"; exit 2
fi
if ! "$bin" devices 2>/dev/null | grep -q '^cpu:0'; then
  echo "SKIP: no cpu device in this build"; echo "0 passed, 0 failed"; exit 0
fi
tmp=$(mktemp -d /tmp/opsched_kill_XXXXXX)
bg=
cleanup() { [ -n "$bg" ] && kill -9 "$bg" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
. "$(dirname "$0")/support/check.sh"

# 30 convolutions, each measured for at least 60 ms.
spec=$tmp/spec.yml
cat > "$spec" <<'EOF'
measure:
  warmup_ms: 5
  warmup_iters: 2
  iters: 5
  min_ms: 60
  sample_us: 0
op: conv2d
params:
  in_channels: [8, 16, 24]
  out_channels: [8, 16, 24, 32, 40]
  height: 16
  kernel: [1, 3]
EOF
total=30

# sql DB QUERY: prints the first column of each row.
sql() {
  "$py" - "$1" "$2" <<'EOF'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for row in con.execute(sys.argv[2]):
    print(row[0])
EOF
}

# measured DB: measurements in the database, by `opsched status`.
measured() {
  "$bin" status --db "$1" 2>/dev/null | awk '$1 == "measurements" { print $2 }'
}

# wait_for DB N PID: until DB holds at least N measurements (or PID ends).
wait_for() {
  for _ in $(seq 1 600); do
    local m
    m=$(measured "$1")
    [ -n "$m" ] && [ "$m" -ge "$2" ] && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}

# exactly_once DB: every configuration measured exactly once per settings,
# read back from the CSV export.
exactly_once() {
  "$bin" export csv --db "$1" -o "$tmp/export.csv" || return 1
  "$py" - "$tmp/export.csv" "$total" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
keys = {(r["signature"], r["algo_policy"], r["math"], r["layout"], r["cache"], r["device_uuid"])
        for r in rows}
ok = len(rows) == int(sys.argv[2]) and len(keys) == len(rows)
if not ok:
    print("  %d rows, %d distinct, %s expected" % (len(rows), len(keys), sys.argv[2]))
sys.exit(0 if ok else 1)
EOF
}

integrity_ok() { [ "$(sql "$1" 'PRAGMA integrity_check')" = ok ]; }

# ---- kill -9 in the middle, then resume ----------------------------------
db=$tmp/kill.db
"$bin" sweep "$spec" --db "$db" --backend cpu >"$tmp/kill.out" 2>&1 &
bg=$!
wait_for "$db" 3 "$bg"
sleep 0.3
kill -9 "$bg" 2>/dev/null
wait "$bg" 2>/dev/null
bg=
before=$(measured "$db")
echo "     killed after $before of $total measurements"
check "kill: database intact" integrity_ok "$db"
check "kill: stopped in the middle" test "$before" -ge 3 -a "$before" -lt "$total"
check "kill: run left as running" test "$(sql "$db" 'SELECT status FROM runs')" = running
"$bin" sweep "$spec" --db "$db" --backend cpu >"$tmp/resume.out" 2>&1
check "resume: exit 0" test $? = 0
check "resume: skipped what was there" grep -q "$((total - before)) measured .* $before already in" "$tmp/resume.out"
check "resume: every configuration once" exactly_once "$db"
check "resume: status counts them" test "$(measured "$db")" = "$total"
"$bin" sweep "$spec" --db "$db" --backend cpu >"$tmp/again.out" 2>&1
check "again: nothing left to measure" grep -q "^0 measured .* $total already in" "$tmp/again.out"

# ---- Ctrl-C: finish the item in flight, exit 130 -------------------------
db=$tmp/int.db
"$bin" sweep "$spec" --db "$db" --backend cpu >"$tmp/int.out" 2>&1 &
bg=$!
wait_for "$db" 2 "$bg"
kill -INT "$bg"
wait "$bg"
code=$?
bg=
check "ctrl-c: exit 130" test "$code" = 130
[ "$code" = 130 ] || { echo "     exit code $code"; sed 's/^/     /' "$tmp/int.out"; }
check "ctrl-c: says it stops" grep -q "stopping after the configurations in flight" "$tmp/int.out"
check "ctrl-c: run recorded interrupted" test "$(sql "$db" 'SELECT status FROM runs')" = interrupted
check "ctrl-c: database intact" integrity_ok "$db"
"$bin" sweep "$spec" --db "$db" --backend cpu >/dev/null 2>&1
check "ctrl-c: re-run completes" exactly_once "$db"

# ---- two processes, one database ------------------------------------------
db=$tmp/shared.db
"$bin" sweep "$spec" --db "$db" --backend cpu --shard 0/2 >"$tmp/s0.out" 2>&1 &
p0=$!
"$bin" sweep "$spec" --db "$db" --backend cpu --shard 1/2 >"$tmp/s1.out" 2>&1
c1=$?
wait "$p0"
c0=$?
check "two writers: both exit 0" test "$c0$c1" = 00
if [ "$c0$c1" != 00 ]; then
  echo "     exit codes $c0 and $c1"; sed 's/^/     /' "$tmp/s0.out" "$tmp/s1.out"
  sql "$db" "SELECT status || ': ' || coalesce(message, '') FROM measurements WHERE status <> 'ok'"
fi
check "two writers: database intact" integrity_ok "$db"
check "two writers: every configuration once" exactly_once "$db"
check "two writers: two runs done" test "$(sql "$db" "SELECT count(*) FROM runs WHERE status = 'done'")" = 2

# ---- shards in their own files, merged -----------------------------------
SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=2 "$bin" sweep "$spec" --db "$tmp/a.db" --backend cpu >/dev/null 2>&1
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2 "$bin" sweep "$spec" --db "$tmp/b.db" --backend cpu >/dev/null 2>&1
na=$(measured "$tmp/a.db")
nb=$(measured "$tmp/b.db")
check "slurm shards: split the work" test "$((na + nb))" = "$total" -a "$na" -gt 0 -a "$nb" -gt 0
"$bin" merge "$tmp/a.db" "$tmp/b.db" -o "$tmp/all.db" >"$tmp/merge.out" 2>&1
check "merge: exit 0" test $? = 0
check "merge: every configuration once" exactly_once "$tmp/all.db"
"$bin" merge "$tmp/a.db" "$tmp/b.db" -o "$tmp/all.db" >"$tmp/merge2.out" 2>&1
check "merge again: nothing added" grep -q "0 measurements added, $total already there" "$tmp/merge2.out"
check "merge: provenance kept" test "$(sql "$tmp/all.db" 'SELECT count(*) FROM runs')" = 2

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
