#!/usr/bin/env bash
# Issue 6 search times on the H100 (one call, < 10 min): inception_v3 and
# googlenet searched with measured stage costs (every distinct stage run
# by the schedule executor, kept in a database), then again on the same
# database (everything answered from it: the "second search is fast"
# target), then with predicted costs, the contention model fitted to the
# stages just measured.  The targets: inception_v3 < 10 s measured and
# < 1 s predicted (IOS: ~48 s on a V100 at r=3, s=8).
#   bash bench/gpu_issue6_search.sh OUTDIR   (after scripts/gpu-carry.sh)
# DB_IN=h100.db seeds the database with the issue-5 data: the predicted
# search needs operator measurements (without them it stops at "no
# measurements"; the measured passes do not need them).
set -uo pipefail
out=${1:-/tmp/issue6_search}
budget=${BUDGET_S:-560}
mkdir -p "$out"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
db=$out/stages.db
[ -n "${DB_IN:-}" ] && [ -f "$DB_IN" ] && cp "$DB_IN" "$db"
models=${MODELS:-"inception_v3 googlenet"}
math=${MATH:-tf32}
left() { echo $((budget - SECONDS)); }
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader
} > "$out/env.txt" 2>&1

for m in $models; do
  for pass in 1 2; do
    echo "== $m measured, pass $pass"
    t0=$SECONDS
    timeout $(( $(left) - 60 > 1 ? $(left) - 60 : 1 )) $bin schedule $m --cost measure --backend cuda \
        --math $math --db "$db" --quiet -o "$out/${m}_measured.json" > "$out/${m}_measured_$pass.log" 2>&1
    echo "rc=$? wall $((SECONDS - t0))s"; head -8 "$out/${m}_measured_$pass.log"
  done
  echo "== $m predicted (contention fitted to the measured stages)"
  t0=$SECONDS
  timeout $(( $(left) - 20 > 1 ? $(left) - 20 : 1 )) $bin schedule $m --cost predict --math $math \
      --db "$db" --quiet -o "$out/${m}_predicted.json" > "$out/${m}_predicted.log" 2>&1
  echo "rc=$? wall $((SECONDS - t0))s"; head -10 "$out/${m}_predicted.log"
  for s in sequential greedy; do
    $bin schedule $m --cost measure --backend cuda --searcher $s --math $math --db "$db" --quiet \
        -o "$out/${m}_$s.json" > "$out/${m}_$s.log" 2>&1
  done
done
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$db"
tar -C "$(dirname "$out")" --exclude='*.db-wal' --exclude='*.db-shm' -czf "$out.tar.gz" "$(basename "$out")"
ls -la "$out.tar.gz"
