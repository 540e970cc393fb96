#!/usr/bin/env bash
# The H100's calibration (peak FLOP rate, bandwidth, launch and
# CUDA-graph node overheads, idle power) for every math mode, stored into
# the prediction database so the shipped data (data/h100) carries it.  About
# 30 s.  After scripts/gpu-carry.sh:
#   bash bench/prediction/calibrate.sh OUTDIR [H100_DB]
# With H100_DB (the database of bench/prediction/collect.sh) the calibration
# is added to a copy of it, OUTDIR/h100.db; then, on this machine:
#   python3 scripts/export-data.py OUTDIR/h100.db data/h100
set -uo pipefail
out=${1:-/tmp/calibrate}
mkdir -p "$out"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
db=$out/h100.db
if [ -n "${2:-}" ]; then cp "$2" "$db"; fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader \
    > "$out/env.txt" 2>&1
# Twice: the second run shows how repeatable each figure is; the database
# keeps the second (the latest replaces the one before).
for i in 1 2; do
  echo "== calibration $i"
  $bin devices --calibrate --backend cuda --device 0 --math fp32,tf32,fp16,bf16 --db "$db" \
      2>&1 | tee "$out/calibrate_$i.txt"
done
sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE);" 2>/dev/null ||
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$db"
ls -la "$db"
