#!/usr/bin/env bash
# An output that names an input (directly or through a symbolic link) is a
# usage error that names both, and the input is left byte for byte as it
# was: export -o, profile --trace, schedule -o, validate --csv and --plot,
# run --trace, merge -o.
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(cd "$(dirname "$0")" && pwd)/support/check.sh"
cd "$tmp" || exit 1
cat > s.yml <<'YML'
measure:
  iters: 3
  min_ms: 0
  warmup_ms: 0
op: conv2d
params:
  batch: [1]
  in_channels: [4]
  out_channels: [4]
  height: [8]
  kernel: [1, 3]
YML
"$bin" sweep s.yml --db r.db --backend cpu >/dev/null 2>&1
check "a database to read" test -s r.db
ln -s r.db link.db
cp r.db s.db   # a second source for merge
# profile's CSV names in --out-dir: one of them a link to the database
mkdir pd && ln -s ../r.db pd/squeezenet1_1_heuristic_overall.csv
before=$(md5sum < r.db)
n=0
# NAME|OUTPUT|COMMAND[|MESSAGE]: MESSAGE (a fixed string) in place of the
# usual "the output 'OUTPUT' is the input 'r.db'".
while IFS='|' read -r name out cmd msg; do
  n=$((n+1))
  # shellcheck disable=SC2086
  "$bin" $cmd >"$tmp/o.$n" 2>"$tmp/e.$n"
  rc=$?
  check "$name: exit 2" test $rc = 2
  want="the output '$out' is the input 'r.db'"
  [ -n "$msg" ] && want=$msg
  check "$name: names the output and the input" grep -qF "$want" "$tmp/e.$n"
  check "$name: the database is unchanged" test "$before" = "$(md5sum < r.db)"
done <<'CASES'
export -o the database|r.db|export --db r.db -o r.db
export -o a link to it|link.db|export --db r.db -o link.db
profile --trace a link to it|link.db|profile squeezenet1_1 --backend cpu --input-size 32 --db r.db --trace link.db --dry-run
schedule -o the database|r.db|schedule squeezenet1_1 --searcher sequential --cost predict --db r.db -o r.db
validate --csv a link to it|link.db|validate --db r.db --csv link.db
run --trace the database|r.db|run squeezenet1_1 --backend cpu --input-size 32 --compare sequential --db r.db --trace r.db
schedule -o a link to the database|link.db|schedule squeezenet1_1 --searcher sequential --cost predict --db r.db -o link.db
validate --plot the database|r.db|validate --db r.db --plot r.db
validate --plot a link to it|link.db|validate --db r.db --plot link.db
merge -o a source|r.db|merge s.db r.db -o r.db|r.db is both a source and the output
merge --output a source|r.db|merge r.db s.db --output r.db|r.db is both a source and the output
merge -o a source by another name|r.db|merge s.db ./r.db -o r.db|the output 'r.db' is the input './r.db'
merge -o a link to a source|link.db|merge s.db r.db -o link.db
profile's CSV in --out-dir a link to the database, forced|pd/squeezenet1_1_heuristic_overall.csv|profile squeezenet1_1 --backend cpu --input-size 32 --iters 2 --warmup-ms 0 --check off --layers off --cuda-graph off --db r.db --out-dir pd --force --follow-symlinks
CASES
"$bin" status r.db >/dev/null 2>&1
check "the database still opens" test $? = 0

# Outputs are written whole or not at all: an export that fails keeps the
# file that was there, and one whose writes fail (a file-size limit of one
# block) leaves neither a truncated file nor a temporary one.
echo "not a database" > bad.db
echo "the old export" > old.csv
"$bin" export --db bad.db -o old.csv >/dev/null 2>&1
check "a failed export: exit 1" test $? = 1
check "a failed export: the old file kept" test "$(cat old.csv)" = "the old export"
( ulimit -f 0; "$bin" export --db r.db -o full.csv >/dev/null 2>"$tmp/full.err" ); rc=$?
check "export on a full disk: exit 1" test $rc = 1
check "export on a full disk: no file under the name" test ! -e full.csv
check "export on a full disk: no temporary left" test -z "$(ls | grep '\.tmp\.')"
echo "$n cases"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
