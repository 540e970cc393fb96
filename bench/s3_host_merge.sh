#!/usr/bin/env bash
# Merges what bench/gpu_s3_host.sh measured (OUTDIR/host.db: ";mode=host"
# rows and free runs) into the shipped H100 data and validates the eager
# predictions with it.  Runs anywhere (no GPU); from the repository root:
#
#   bash bench/s3_host_merge.sh OUTDIR [DATA_OUT]
#
# 1. builds the current data/h100 into a database (any --data h100 command
#    does; here `predict --no-train`, in a cache of its own),
# 2. `opsched merge` of that and OUTDIR/host.db into OUTDIR/merged.db (rows
#    matched by key: the device by its uuid, which gpu_s3_host.sh set to
#    data/h100's, configurations by signature, runs by uuid),
# 3. scripts/export-data.py OUTDIR/merged.db DATA_OUT (default data/h100:
#    `git diff --stat data/h100` then shows only added lines),
# 4. unless VALIDATE=0, `opsched validate --data h100 --mode free` (and
#    graph, which must not change) on the new text, training the models
#    once (a few minutes on 16 cores, ~3 on 2), into OUTDIR/validate_*.
# OPSCHED_BIN: the opsched binary (default build/bin/opsched).
set -euo pipefail
out=${1:?usage: bench/s3_host_merge.sh OUTDIR [DATA_OUT]}
data_out=${2:-data/h100}
bin=${OPSCHED_BIN:-build/bin/opsched}
[ -f "$out/host.db" ] || { echo "no $out/host.db" >&2; exit 2; }
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
OPSCHED_CACHE_DIR=$cache/ship "$bin" predict alexnet --data h100 --no-train > /dev/null
ship=$(ls "$cache"/ship/h100-*.db)
rm -f "$out/merged.db"
"$bin" merge "$ship" "$out/host.db" -o "$out/merged.db"
python3 scripts/export-data.py "$out/merged.db" "$data_out"
head -n 1 "$data_out"/*.sql
if [ "${VALIDATE:-1}" != 0 ]; then
  data_dir=$(cd "$(dirname "$data_out")" && pwd)
  export OPSCHED_DATA_DIR=$data_dir OPSCHED_CACHE_DIR=$out/cache
  "$bin" validate --data h100 --math tf32 --mode free --csv "$out/validate_free.csv" \
      > "$out/validate_free.txt" 2>&1
  "$bin" validate --data h100 --math tf32 --mode graph --csv "$out/validate_graph.csv" \
      > "$out/validate_graph.txt" 2>&1
  "$bin" validate --data h100 --math tf32 --mode free --batch 1 --summary \
      > "$out/validate_free_b1.txt" 2>&1
  cat "$out/validate_free_b1.txt"
fi
