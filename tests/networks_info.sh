#!/usr/bin/env bash
# `opsched info` on every network of a public model set: each loads at
# batch 1 with the manifest's input shapes, its graph built and shapes
# inferred.  The set is bench/networks (the network suite's, at least 30)
# unless named: tests/networks_info.sh BIN SOURCE_DIR [SET_DIR MIN [XFAIL]],
# e.g. bench/exports 100 tests/exports/info_xfail.txt (the export set;
# entries whose export failed in torch have no file and are not counted;
# the networks XFAIL names, one a line with its reason, are known not to
# load: they are reported, and one that loads is reported as such).
set -uo pipefail
bin=$1
src=$2
set_dir=${3:-$src/bench/networks}
min=${4:-30}
xfail=${5:-/dev/null}
. "$(cd "$(dirname "$0")" && pwd)/support/check.sh"
py=${OPSCHED_PYTHON:-python3}
list=$("$py" - "$set_dir/models/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for e in (m["models"] if isinstance(m, dict) else m):
    if "file" not in e or "export_error" in e:
        continue
    shapes = ",".join("%s:%s" % (i["name"], "x".join(str(1 if d == "batch" else d) for d in i["shape"]))
                      for i in e["inputs"])
    print(e["name"], e["file"], shapes)
PY
)
n=0
while read -r name file shapes; do
  [ -n "$name" ] || continue
  n=$((n+1))
  out=$("$bin" info "$set_dir/$file" --shapes "$shapes" 2>&1)
  rc=$?
  if grep -q "^$name\b" "$xfail"; then
    if [ $rc = 0 ]; then echo "NOW  $name loads: remove it from $xfail"
    else echo "XFAIL $name: $(echo "$out" | tail -1)"; fi
    continue
  fi
  check "$name loads ($shapes)" test $rc = 0
  [ $rc = 0 ] || echo "$out" | tail -2
done <<< "$list"
# Exports come with a symbolic batch: --batch binds it, whatever the
# input's rank, for info and for profile (which has no --shapes).
if [ -f "$set_dir/models/bert_base_s128.onnx" ]; then
  out=$("$bin" info "$set_dir/models/bert_base_s128.onnx" --batch 2 2>&1)
  check "--batch binds a symbolic dimension 0 of a 2-D input" test $? = 0
  check "--batch 2: the tokens are 2x128" grep -q "2x128x768" <<< "$out"
  "$bin" profile "$set_dir/models/resnet18.onnx" --batch 1,8 --dry-run --backend cpu > /dev/null 2>&1
  check "profile of an export with a symbolic batch (dry run)" test $? = 0
fi
echo "$n networks; $pass passed, $fail failed"
[ $fail = 0 ] && [ $n -ge "$min" ]
