#!/usr/bin/env bash
# The shipped H100 data (data/h100) predicted on any machine, GPU or not:
# opsched predict --data h100 (BatchNormalization kept, as the data was
# profiled) on zoo networks at shapes the data profiled,
# CUDA graph and eager, from exact lookups and the composition fit alone
# (--no-fit: no XGBoost in the loop, so the numbers are a function of the
# data and the composition), against the numbers recorded in
# tests/data/shipped_h100.txt (relative tolerance 1e-6).  Also: the
# shipped data is found without --db, every layer of a profiled shape is
# exact (coverage 100%).  After the data or the composition change, record
# again (and say why in the commit):
#
#   tests/shipped_predict.sh build/bin/opsched --record
#
# usage: shipped_predict.sh path/to/opsched [--record]   (needs python3)
set -u
bin=${1:-${OPSCHED_BIN:-}}
record=${2:-}
py=${OPSCHED_PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
expected=$here/data/shipped_h100.txt
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "usage: $0 path/to/opsched [--record]"; exit 2
fi
tmp=$(mktemp -d /tmp/opsched_shipped_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OPSCHED_DATA_DIR=$here/../data OPSCHED_CACHE_DIR=$tmp/cache
. "$(dirname "$0")/support/check.sh"
# name: model batch size mode
cases="resnet50:1:224:graph resnet50:1:224:eager googlenet:32:299:graph vgg16:8:320:eager
squeezenet1_1:1:224:eager densenet121:8:224:graph"
: > "$tmp/got.txt"
for c in $cases; do
  IFS=: read -r m b s mode <<< "$c"
  "$bin" predict "$m" --data h100 --bn keep --batch "$b" --input-size "$s" --mode "$mode" --no-fit \
      --quiet --format json > "$tmp/$c.json" 2> "$tmp/$c.err"
  check "predict $m b$b $s $mode on the shipped data" test $? = 0
  "$py" - "$tmp/$c.json" "$c" >> "$tmp/got.txt" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
assert t["coverage_time"] == 1 and t["sources"]["exact"] == t["launches"], t
num = lambda v: "%.9g" % v if v is not None else "-"
# Energy needs the power model for layers measured without energy: "-" here.
print("%s latency_ms=%s energy_j=%s peak_memory_bytes=%d host_ms=%s" % (
    sys.argv[2], num(t["latency_ms"]), num(t["energy_j"]), t["peak_memory_bytes"],
    num(t.get("host_ms"))))
PY
  check "$m b$b $s $mode: every layer exact" test ${PIPESTATUS[0]} = 0
done
if [ "$record" = --record ]; then
  cp "$tmp/got.txt" "$expected"
  echo "recorded $expected:"; cat "$expected"
  exit 0
fi
check "the numbers recorded in tests/data/shipped_h100.txt" "$py" - "$expected" "$tmp/got.txt" <<'PY'
import sys
def read(p):
    out = {}
    for line in open(p):
        f = line.split()
        if f:
            out[f[0]] = dict(kv.split("=") for kv in f[1:])
    return out
want, got = read(sys.argv[1]), read(sys.argv[2])
ok = set(want) == set(got)
for case in sorted(want):
    for k, v in want[case].items():
        g = got.get(case, {}).get(k)
        if v == "-" or g is None or g == "-":
            same = v == g
        else:
            same = abs(float(g) - float(v)) <= 1e-6 * abs(float(v))
        if not same:
            print("  %s %s: recorded %s, now %s" % (case, k, v, g))
            ok = False
sys.exit(0 if ok else 1)
PY
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
