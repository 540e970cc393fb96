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
# their host rows go.  With OUTDIR/dense/h100.db (gpu_s4_eager.sh's step
# dense: densenet121 profiled again on today's build), the network runs of
# data/h100's two densenet121 profiles of 2026-11-22 (runs a0dcda73...,
# 1c05cea8..., measured with the Concat kernel that commit 43aced7 replaced:
# 6-12% slower) go too; their layers measured alone stay, and the new
# profile's, measured later, are the ones the predictor takes (the latest
# per configuration).  Writes OUTDIR/merged.db, DATA_OUT (default
# data/h100) and, unless VALIDATE=0, OUTDIR/validate_{free,graph}.{txt,csv}.
set -euo pipefail
out=${1:?usage: bench/s4_eager_merge.sh OUTDIR [DATA_OUT]}
data_out=${2:-data/h100}
bin=${OPSCHED_BIN:-build/bin/opsched}
for d in host repeat; do [ -f "$out/$d/host.db" ] || { echo "no $out/$d/host.db" >&2; exit 2; }; done
OPSCHED_BIN=$bin bash bench/shipped_db.sh "$out/merged.db"
dense=
[ -f "$out/dense/h100.db" ] && dense=$out/dense/h100.db
python3 - "$out/merged.db" "$dense" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n = c.execute("DELETE FROM measurements WHERE instr(settings_key, ';mode=host') > 0").rowcount
print("session 3 host rows removed: %d" % n)
if sys.argv[2]:
    n = c.execute("DELETE FROM network_runs WHERE model = 'densenet121' AND run_id IN"
                  " (SELECT id FROM runs WHERE uuid IN ('a0dcda73cea0495531de9f3952b9ed9a',"
                  " '1c05cea8cbea23f3ca41ebca5b6bb6a2'))").rowcount
    print("densenet121 network runs of the old Concat removed: %d" % n)
c.commit()
PY
"$bin" merge "$out/host/host.db" "$out/repeat/host.db" $dense -o "$out/merged.db"
python3 scripts/export-data.py "$out/merged.db" "$data_out"
head -n 1 "$data_out"/*.sql
if [ "${VALIDATE:-1}" != 0 ]; then
  data_dir=$(cd "$(dirname "$data_out")" && pwd)
  export OPSCHED_DATA_DIR=$data_dir OPSCHED_CACHE_DIR=$out/cache
  for m in free graph; do
    "$bin" validate --data h100 --math tf32 --mode $m --csv "$out/validate_$m.csv" \
        > "$out/validate_$m.txt" 2>&1
    tail -n 14 "$out/validate_$m.txt"
  done
fi
