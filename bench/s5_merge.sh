#!/usr/bin/env bash
# Merges what bench/gpu_s5.sh measured (OUTDIR/conv/h100.db: the large 3x3
# convolutions of bench/specs/s5_conv_large.yml, device row already renamed
# to data/h100's) into the shipped H100 data.  Runs anywhere (no GPU); from
# the repository root:
#
#   bash bench/s5_merge.sh OUTDIR [DATA_OUT]
#
# Writes OUTDIR/merged.db and DATA_OUT (default data/h100).
set -euo pipefail
out=${1:?usage: bench/s5_merge.sh OUTDIR [DATA_OUT]}
data_out=${2:-data/h100}
bin=${OPSCHED_BIN:-build/bin/opsched}
[ -f "$out/conv/h100.db" ] || { echo "no $out/conv/h100.db" >&2; exit 2; }
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
OPSCHED_CACHE_DIR=$cache/ship "$bin" predict alexnet --device h100 --no-train > /dev/null
ship=$(ls "$cache"/ship/h100-*.db)
rm -f "$out/merged.db"
cp "$ship" "$out/merged.db"
"$bin" merge "$out/conv/h100.db" -o "$out/merged.db"
python3 scripts/export-data.py "$out/merged.db" "$data_out"
head -n 1 "$data_out"/*.sql
