#!/usr/bin/env bash
# Every file opsched writes is published whole or not at all, never
# replaces a file the user did not name without --force, and is not written
# through a symbolic link in --out-dir without --follow-symlinks:
#   - profile's CSVs: refused over existing files, replaced with --force,
#     added to with --db; a link at a CSV's name refused, followed on request;
#   - a full disk (a file-size limit) while writing profile's CSVs, a trace,
#     a schedule and validate's CSV: exit 1, the old file kept, no temporary;
#   - a name the user gives that is a link is written through: the link
#     stays and the file it points to is replaced.
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(cd "$(dirname "$0")" && pwd)/support/check.sh"
# Every check is a case tried; the count is printed at the end.
tried=0
eval "counted_$(declare -f check)"
check() { tried=$((tried+1)); counted_check "$@"; }
cd "$tmp" || exit 1
prof=(profile squeezenet1_1 --backend cpu --input-size 32 --iters 2 --warmup-ms 0 --check off
      --layers off --cuda-graph off)
csv=out/squeezenet1_1_heuristic_overall.csv
lay=out/squeezenet1_1_heuristic_layers.csv
no_tmp() { test -z "$(find . -name '*.tmp.*')"; }
# opsched under a file-size limit of zero blocks (every write to a file
# fails), its stderr through a pipe into $1; returns its exit code.
full() {
  local err=$1
  shift
  { ( ulimit -f 0; exec "$bin" "$@" 2>&1 >/dev/null ); echo $? > full.rc; } | cat > "$err"
  return "$(cat full.rc)"
}

"$bin" "${prof[@]}" --out-dir out >/dev/null 2>&1
check "profile writes its CSVs" test -s "$csv" -a -s "$lay"
echo "the user's notes" > "$csv"
sum=$(md5sum < "$csv")
"$bin" "${prof[@]}" --out-dir out >/dev/null 2>e1; rc=$?
check "an existing CSV: exit 1" test $rc = 1
check "an existing CSV: the message names it" grep -q "$csv" e1
check "an existing CSV: the message says --force" grep -q -- "--force" e1
check "an existing CSV: kept byte for byte" test "$sum" = "$(md5sum < "$csv")"
"$bin" "${prof[@]}" --out-dir out --force >/dev/null 2>&1
check "--force replaces it" grep -q "^model," "$csv"
"$bin" "${prof[@]}" --out-dir out --db p.db --input-size 40 >/dev/null 2>&1
check "--db adds to the CSV" test "$(grep -c '^squeezenet1_1,' "$csv")" = 2
check "no temporary left" no_tmp

# a symbolic link where a CSV goes
mkdir -p lk elsewhere
echo "precious" > elsewhere/target.csv
ln -s ../elsewhere/target.csv lk/squeezenet1_1_heuristic_overall.csv
"$bin" "${prof[@]}" --out-dir lk --force >/dev/null 2>e2; rc=$?
check "a link in --out-dir: exit 1" test $rc = 1
check "a link in --out-dir: the message says so" grep -q "symbolic link" e2
check "a link in --out-dir: the message says --follow-symlinks" grep -q -- "--follow-symlinks" e2
check "a link in --out-dir: its target unchanged" test "$(cat elsewhere/target.csv)" = "precious"
"$bin" "${prof[@]}" --out-dir lk --force --follow-symlinks >/dev/null 2>&1
check "--follow-symlinks writes through the link" grep -q "^model," elsewhere/target.csv
check "--follow-symlinks: the link stays a link" test -L lk/squeezenet1_1_heuristic_overall.csv
check "no temporary left" no_tmp

# a name the user gives that is a link: written through
echo "old trace" > real.json
ln -s real.json named.json
"$bin" "${prof[@]}" --out-dir t1 --trace named.json --layers on >/dev/null 2>&1
check "a named link: the trace lands in its target" grep -q "traceEvents" real.json
check "a named link: it stays a link" test -L named.json

# full disk: a file-size limit of zero blocks fails every write
sum=$(md5sum < "$csv")
full e3 "${prof[@]}" --out-dir out --force; rc=$?
check "full disk, profile CSVs: exit 1" test $rc = 1
check "full disk, profile CSVs: the message names the file" grep -q "squeezenet1_1_heuristic_" e3
check "full disk, profile CSVs: the old file kept" test "$sum" = "$(md5sum < "$csv")"
check "full disk, profile CSVs: no temporary left" no_tmp
sum=$(md5sum < real.json)
full e4 run squeezenet1_1 --backend cpu --input-size 32 --compare sequential --trace real.json
rc=$?
check "full disk, trace: exit 1" test $rc = 1
check "full disk, trace: the message names the file" grep -q "real.json" e4
check "full disk, trace: the old trace kept" test "$sum" = "$(md5sum < real.json)"
check "full disk, trace: no temporary left" no_tmp
"$bin" schedule squeezenet1_1 --searcher sequential --cost predict --data h100 -o s.json \
  >/dev/null 2>&1
if [ -s s.json ]; then
  sum=$(md5sum < s.json)
  full e5 schedule squeezenet1_1 --searcher sequential --cost predict --data h100 -o s.json
  rc=$?
  check "full disk, schedule -o: exit 1" test $rc = 1
  check "full disk, schedule -o: the message names the file" grep -q "s.json" e5
  check "full disk, schedule -o: the old schedule kept" test "$sum" = "$(md5sum < s.json)"
  check "full disk, schedule -o: no temporary left" no_tmp
else
  check "schedule -o writes a schedule to replace" false
fi
# full disk while writing run's .npy outputs (--force: replacing them)
"$bin" run squeezenet1_1 --backend cpu --input-size 32 --iters 0 --output-dir npy > /dev/null 2>&1
check "run --output-dir writes the .npy outputs" test -n "$(ls npy/*.npy 2>/dev/null)"
sum=$(cat npy/*.npy | md5sum)
full e6 run squeezenet1_1 --backend cpu --input-size 32 --iters 0 --output-dir npy --force; rc=$?
check "full disk, run --output-dir: exit 1" test $rc = 1
check "full disk, run --output-dir: the message names the file" grep -q "npy/.*\.npy" e6
check "full disk, run --output-dir: the old files kept" test "$sum" = "$(cat npy/*.npy | md5sum)"
check "full disk, run --output-dir: no temporary left" no_tmp
echo "$tried cases tried"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
