#!/usr/bin/env bash
# The prediction data on the H100 (one call, < 10 min): the zoo profiled at batch
# 1, 8, 32 and input sizes 224, 299, 320 (end to end free-running and as a
# CUDA graph, energy per inference, every distinct layer alone through the
# operator harness), then the operator grid, the zoo's operators at size
# 256, and a sample of single-operator energies.  Everything goes into one
# database, $OUT/h100.db, that scripts/export-data.py turns into data/h100.
#   bash bench/prediction/collect.sh OUTDIR      (after scripts/gpu-carry.sh)
set -uo pipefail
out=${1:-/tmp/collect}
budget=${BUDGET_S:-560}
mkdir -p "$out"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
db=$out/h100.db
# A database from an earlier call continues (every step resumes).
[ -n "${DB_IN:-}" ] && [ -f "$DB_IN" ] && cp "$DB_IN" "$db"
zoo=${ZOO:-"resnet50 googlenet inception_v3 squeezenet1_1 densenet121 resnet152 vgg16 alexnet"}
left() { echo $((budget - SECONDS)); }
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader
} > "$out/env.txt" 2>&1
$bin devices > "$out/devices.txt" 2>&1

echo "== 1. zoo profiles (tf32, heuristic): b 1,8,32 x 224,299,320"
for m in $zoo; do
  t0=$SECONDS
  timeout $(( $(left) - 40 > 1 ? $(left) - 40 : 1 )) $bin profile $m --batch 1,8,32 --input-size 224,299,320 --math tf32 \
      --isolated --layers off --energy --check off --warmup-ms 50 --min-ms 300 \
      --db "$db" --out-dir "$out/profile" > "$out/profile_$m.log" 2>&1
  echo "$m rc=$? $((SECONDS - t0))s $(tail -1 "$out/profile_$m.log" | cut -c1-100)"
done
echo "== 2. operator grid"
t0=$SECONDS
timeout $(( $(left) - 25 > 1 ? $(left) - 25 : 1 )) $bin sweep bench/specs/prediction_grid.yml --db "$db" > "$out/sweep_grid.log" 2>&1
echo "grid rc=$? $((SECONDS - t0))s $(tail -1 "$out/sweep_grid.log" | cut -c1-120)"
echo "== 3. zoo operators at 256"
t0=$SECONDS
timeout $(( $(left) - 20 > 1 ? $(left) - 20 : 1 )) $bin sweep bench/specs/prediction_networks.yml --db "$db" > "$out/sweep_nets.log" 2>&1
echo "nets rc=$? $((SECONDS - t0))s $(tail -1 "$out/sweep_nets.log" | cut -c1-120)"
echo "== 4. operator energy sample"
t0=$SECONDS
timeout $(( $(left) - 15 > 1 ? $(left) - 15 : 1 )) $bin sweep bench/specs/prediction_energy.yml --shard 0/12 --db "$db" > "$out/sweep_energy.log" 2>&1
echo "energy rc=$? $((SECONDS - t0))s $(tail -1 "$out/sweep_energy.log" | cut -c1-120)"
$bin status --db "$db" > "$out/status.txt" 2>&1; head -30 "$out/status.txt"
sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE);" 2>/dev/null || python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$db"
tar -C "$(dirname "$out")" --exclude='*.db-wal' --exclude='*.db-shm' -czf "$out.tar.gz" "$(basename "$out")"
ls -la "$out.tar.gz"
