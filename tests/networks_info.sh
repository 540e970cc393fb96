#!/usr/bin/env bash
# `opsched info` on every network of the public model set
# (bench/networks/models, manifest.json): each loads at batch 1 with the
# manifest's input shapes, its graph built and shapes inferred.
set -uo pipefail
bin=$1
src=$2
. "$(cd "$(dirname "$0")" && pwd)/support/check.sh"
py=${OPSCHED_PYTHON:-python3}
list=$("$py" - "$src/bench/networks/models/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for e in (m["models"] if isinstance(m, dict) else m):
    shapes = ",".join("%s:%s" % (i["name"], "x".join(str(1 if d == "batch" else d) for d in i["shape"]))
                      for i in e["inputs"])
    print(e["name"], e["file"], shapes)
PY
)
n=0
while read -r name file shapes; do
  [ -n "$name" ] || continue
  n=$((n+1))
  out=$("$bin" info "$src/bench/networks/$file" --shapes "$shapes" 2>&1)
  rc=$?
  check "$name loads ($shapes)" test $rc = 0
  [ $rc = 0 ] || echo "$out" | tail -2
done <<< "$list"
echo "$n networks; $pass passed, $fail failed"
[ $fail = 0 ] && [ $n -ge 30 ]
