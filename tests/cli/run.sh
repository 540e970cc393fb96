#!/usr/bin/env bash
# CLI tests: each cases/NAME.cmd holds the arguments of one opsched call
# (one line, after the word opsched; $TESTDATA expands to the test data
# folder, $CASE_TMP to an empty folder of the case's own).  The call's exit code must equal cases/NAME.code (default 0) and
# its stdout must equal cases/NAME.out when that file exists; cases/NAME.err,
# when it exists, holds a string stderr must contain.
set -u
bin=$1
dir=$2
export TESTDATA=${OPSCHED_TESTDATA:-/nonexistent}
pass=0
fail=0
skip=0
for cmdf in "$dir"/cases/*.cmd; do
  name=$(basename "$cmdf" .cmd)
  CASE_TMP=$(mktemp -d)
  export CASE_TMP
  args=$(envsubst < "$cmdf" 2>/dev/null ||
         sed -e "s#\$TESTDATA#$TESTDATA#g" -e "s#\$CASE_TMP#$CASE_TMP#g" "$cmdf")
  if grep -q '\$TESTDATA' "$cmdf" && [ ! -d "$TESTDATA" ]; then
    echo "SKIP $name: no test data folder"; skip=$((skip+1)); continue
  fi
  want_code=0
  [ -f "$dir/cases/$name.code" ] && want_code=$(cat "$dir/cases/$name.code")
  out=$(mktemp) err=$(mktemp)
  # shellcheck disable=SC2086
  eval "\"$bin\" $args" >"$out" 2>"$err"
  code=$?
  ok=1
  if [ "$code" != "$want_code" ]; then
    echo "FAIL $name: exit code $code, expected $want_code"; ok=0
  fi
  if [ -f "$dir/cases/$name.out" ] && ! diff -u "$dir/cases/$name.out" "$out" >/dev/null; then
    echo "FAIL $name: stdout differs:"; diff -u "$dir/cases/$name.out" "$out" | head -20; ok=0
  fi
  if [ -f "$dir/cases/$name.err" ] && ! grep -qF -- "$(cat "$dir/cases/$name.err")" "$err"; then
    echo "FAIL $name: stderr lacks '$(cat "$dir/cases/$name.err")':"; head -5 "$err"; ok=0
  fi
  if grep -qE "AddressSanitizer|runtime error:|LeakSanitizer" "$err"; then
    echo "FAIL $name: sanitizer report"; head -20 "$err"; ok=0
  fi
  if [ $ok = 1 ]; then pass=$((pass+1)); else fail=$((fail+1)); fi
  rm -f "$out" "$err"
  rm -rf "$CASE_TMP"
done
echo "cli: $pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
