#!/usr/bin/env bash
# `opsched predict` and `opsched schedule --searcher sequential --cost
# predict` compose a network the same way (docs/SCHEDULE.md): on the
# shipped H100 data, with identical settings (BatchNormalization folded or
# kept, tf32, nchw, fusion on, graph mode), the sequential schedule's
# predicted latency is predict's, within 0.1%, for two networks.
#
# The shipped database is built into a cache of the test's own, and its
# learned models trained small first (train-model --rounds 40 --folds 2:
# seconds, not minutes): both commands then use the same saved models.
#
# usage: predict_schedule.sh [path/to/opsched]   (default: $OPSCHED_BIN)
# Needs python3.
set -u
bin=${1:-${OPSCHED_BIN:-}}
py=${OPSCHED_PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "usage: $0 path/to/opsched"; exit 2
fi
tmp=$(mktemp -d /tmp/opsched_predsched_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OPSCHED_DATA_DIR=$here/../data
export OPSCHED_CACHE_DIR=$tmp/cache
. "$(dirname "$0")/support/check.sh"
settings=(--data h100 --math tf32 --layout nchw)
"$bin" train-model "${settings[@]}" --rounds 40 --folds 2 --quiet >"$tmp/train.out" \
  2>"$tmp/train.err"
check "train-model on the shipped data (small)" test $? = 0

# name: model bn
for c in inception_v3:fold inception_v3:keep resnet50:fold; do
  IFS=: read -r m bn <<< "$c"
  "$bin" schedule "$m" --searcher sequential --cost predict --bn "$bn" "${settings[@]}" --quiet \
    -o "$tmp/$m.$bn.json" >"$tmp/$m.$bn.sched" 2>"$tmp/$m.$bn.sched.err"
  check "schedule $m --bn $bn" test $? = 0
  "$bin" predict "$m" --bn "$bn" "${settings[@]}" --mode graph --fuse on --quiet \
    --format json >"$tmp/$m.$bn.pred" 2>"$tmp/$m.$bn.pred.err"
  check "predict $m --bn $bn" test $? = 0
  check "$m bn $bn: sequential schedule = predict (0.1%)" "$py" - "$tmp/$m.$bn.json" \
    "$tmp/$m.$bn.pred" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["predicted_ms"]
p = json.load(open(sys.argv[2]))["totals"]["latency_ms"]
print("  schedule %.6f ms, predict %.6f ms" % (s, p))
assert abs(s - p) <= 1e-3 * p, (s, p)
PY
done

if [ $fail != 0 ]; then
  for f in "$tmp"/*.err; do echo "--- $f"; tail -5 "$f"; done
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
