#!/usr/bin/env bash
# Memory of a sweep at the size limit: `opsched sweep --dry-run` on a grid of
# 1,000,000 combinations, every one a distinct configuration, lists them all
# with a peak memory that does not follow the grid (the grid is walked one
# configuration at a time; a spec keeps 16 bytes per configuration).  Held
# whole, the grid took 4.6 GB.
#
# The peak resident set size is measured (getrusage of the child, through
# python3) against that of the same command on a one-configuration spec;
# the difference must stay under LIMIT_MB.  Not `ulimit -v`: a sanitizer
# build reserves terabytes of address space, and the CUDA libraries
# gigabytes.
#
# usage: sweep_memory.sh [path/to/opsched]   (default: $OPSCHED_BIN)
set -u
bin=${1:-${OPSCHED_BIN:-}}
py=${OPSCHED_PYTHON:-python3}
LIMIT_MB=${LIMIT_MB:-128}
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "usage: $0 path/to/opsched"; exit 2
fi
tmp=$(mktemp -d /tmp/opsched_memory_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/support/check.sh"
# AddressSanitizer keeps freed memory in quarantine (256 MB by default) and
# would measure that: a small one.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"

cat > "$tmp/grid.yml" <<'EOF'
op: relu
params:
  batch: {from: 1, to: 100, step: 1}
  channels: {from: 1, to: 100, step: 1}
  height: {from: 1, to: 100, step: 1}
EOF
cat > "$tmp/one.yml" <<'EOF'
op: relu
params: {channels: 3}
EOF

# dry_run SPEC: prints "EXIT LINES PEAK_KB", then the last line of the
# listing; the listing itself is counted, not kept.
dry_run() {
  "$py" - "$bin" "$1" <<'EOF'
import resource, subprocess, sys
p = subprocess.Popen([sys.argv[1], "sweep", sys.argv[2], "--dry-run", "--backend", "cpu"],
                     stdout=subprocess.PIPE)
lines, last = 0, b""
for lines, line in enumerate(p.stdout, 1):
    last = line
rc = p.wait()
print(rc, lines, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(last.decode(errors="replace").strip())
EOF
}

base=$(dry_run "$tmp/one.yml")
read -r base_rc _ base_kb <<<"$(head -1 <<<"$base")"
check "one configuration: exit 0" test "$base_rc" = 0
t0=$(date +%s)
grid=$(dry_run "$tmp/grid.yml")
t1=$(date +%s)
read -r rc lines kb <<<"$(head -1 <<<"$grid")"
check "1,000,000 combinations: exit 0" test "$rc" = 0
check "1,000,000 combinations: every configuration listed" test "$lines" = 1000002
check "1,000,000 combinations: the counts" \
  test "$(tail -1 <<<"$grid")" = "1000000 combinations looked at: 0 filtered, 0 impossible, 0 duplicates"
echo "peak resident set: $((base_kb / 1024)) MB for one configuration, $((kb / 1024)) MB for" \
     "1,000,000 ($((t1 - t0)) s); limit: $LIMIT_MB MB more"
check "1,000,000 combinations: peak memory within $LIMIT_MB MB of one configuration's" \
  test $((kb - base_kb)) -lt $((LIMIT_MB * 1024))

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
