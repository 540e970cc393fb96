#!/usr/bin/env bash
# Merges what bench/gpu_s4_eager.sh measured (OUTDIR/host/host.db and
# OUTDIR/repeat/host.db: free runs with their layers' host times read in the
# timed free-running inferences) into the shipped H100 data, replacing the
# ";mode=host" rows of session 3 (bench/gpu_s3_host.sh's drained-queue pass,
# read seconds apart from its free runs: 0.66-1.23x of them at batch 1), and
# validates.  Runs anywhere (no GPU); from the repository root:
#
#   bash bench/s4_eager_merge.sh OUTDIR [DATA_OUT]
#
# Session 3's free runs stay (their latency is a measurement like any); only
# their host rows go.  Writes OUTDIR/merged.db, DATA_OUT (default data/h100)
# and, unless VALIDATE=0, OUTDIR/validate_{free,graph}.{txt,csv}.
set -euo pipefail
out=${1:?usage: bench/s4_eager_merge.sh OUTDIR [DATA_OUT]}
data_out=${2:-data/h100}
bin=${OPSCHED_BIN:-build/bin/opsched}
for d in host repeat; do [ -f "$out/$d/host.db" ] || { echo "no $out/$d/host.db" >&2; exit 2; }; done
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
OPSCHED_CACHE_DIR=$cache/ship "$bin" predict alexnet --device h100 --no-train > /dev/null
ship=$(ls "$cache"/ship/h100-*.db)
rm -f "$out/merged.db"
cp "$ship" "$out/merged.db"
python3 - "$out/merged.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n = c.execute("DELETE FROM measurements WHERE instr(settings_key, ';mode=host') > 0").rowcount
c.commit()
print("session 3 host rows removed: %d" % n)
PY
"$bin" merge "$out/host/host.db" "$out/repeat/host.db" -o "$out/merged.db"
python3 scripts/export-data.py "$out/merged.db" "$data_out"
head -n 1 "$data_out"/*.sql
if [ "${VALIDATE:-1}" != 0 ]; then
  data_dir=$(cd "$(dirname "$data_out")" && pwd)
  export OPSCHED_DATA_DIR=$data_dir OPSCHED_CACHE_DIR=$out/cache
  for m in free graph; do
    "$bin" validate --device h100 --math tf32 --mode $m --csv "$out/validate_$m.csv" \
        > "$out/validate_$m.txt" 2>&1
    tail -n 14 "$out/validate_$m.txt"
  done
fi
