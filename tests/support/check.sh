# Sourced by the shell tests: counters and one check.
#   check NAME COMMAND...   passes when the command succeeds
# The test prints "$pass passed, $fail failed" at its end.
pass=0
fail=0
check() {
  local name=$1; shift
  if "$@"; then pass=$((pass+1)); echo "ok   $name"; else fail=$((fail+1)); echo "FAIL $name"; fi
}
