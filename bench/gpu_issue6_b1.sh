#!/usr/bin/env bash
# Issue 6 at batch 1 on the H100 in one call (< 10 min), opsched and the
# PyTorch peers on the same device: for inception_v3, googlenet,
# squeezenet1_1, resnet50, densenet121 the IOS search with measured stage
# costs (--stage-ms 2,3) and `opsched run --compare sequential,greedy,ios`
# (answered from the stage database); for randwire and nasnet (whose
# measured search takes minutes) and for inception_v3/googlenet again, the
# IOS search with predicted costs (operators from the issue-5 data, device 1;
# contention fitted to the stages measured here) and `opsched run
# --schedule`; then PyTorch eager, CUDA graph and torch.compile
# (reduce-overhead) with BatchNorm folded, TF32, cuDNN heuristics.
#   DB_IN=issue5.db bash bench/gpu_issue6_b1.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/issue6_b1}
budget=${BUDGET_S:-580}
mkdir -p "$out/sched/b1" "$out/json"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
py=/opt/torch/.venv/bin/python3
db=$out/stages.db
[ -n "${DB_IN:-}" ] && [ -f "$DB_IN" ] && cp "$DB_IN" "$db"
left() { echo $((budget - SECONDS)); }
lim() { local l=$(( $(left) - $1 )); [ $l -lt 1 ] && l=1; echo $l; }
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit,uuid --format=csv,noheader
  $py -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
} > "$out/env.txt" 2>&1
cat "$out/env.txt"
echo "== opsched: measured IOS search, then run --compare (batch 1)"
for m in squeezenet1_1 resnet50 densenet121 googlenet inception_v3; do
  t0=$SECONDS
  timeout $(lim 330) $bin schedule $m --cost measure --batch 1 --math tf32 --stage-ms 2,3 \
      --db "$db" --quiet -o "$out/sched/${m}_b1_ios.json" > "$out/search_${m}_b1.log" 2>&1
  echo "$m search rc=$? $((SECONDS - t0))s: $(grep -E '^  [0-9.]+ s,' "$out/search_${m}_b1.log" | head -1)"
  t0=$SECONDS
  timeout $(lim 310) $bin run $m --compare sequential,greedy,ios --batch 1 --math tf32 --db "$db" \
      --save-schedules "$out/sched/b1" --min-ms 300 > "$out/run_${m}_b1.log" 2>&1
  echo "$m run rc=$? $((SECONDS - t0))s"; grep -E '^(sequential|greedy|ios) ' "$out/run_${m}_b1.log"
done
dev=$(python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('select id from devices where uuid=?',(sys.argv[2],)).fetchone()[0])" "$db" "$uuid" 2>/dev/null)
echo "this GPU is device $dev in $db"
echo "== opsched: predicted-cost IOS search, then run --schedule (batch 1)"
for m in randwire nasnet inception_v3 googlenet; do
  [ $(left) -lt 300 ] && { echo "skipping $m (time)"; continue; }
  t0=$SECONDS
  timeout 30 $bin schedule $m --cost predict --target 1 ${dev:+--stages-target $dev} --batch 1 \
      --math tf32 --db "$db" --quiet -o "$out/sched/${m}_b1_predicted.json" > "$out/predsearch_${m}_b1.log" 2>&1
  echo "$m predicted search rc=$? $((SECONDS - t0))s"; grep -E ' s,|contention|latency' "$out/predsearch_${m}_b1.log" | head -4
  timeout 60 $bin run $m --schedule "$out/sched/${m}_b1_predicted.json" --batch 1 --math tf32 --min-ms 300 \
      > "$out/run_${m}_b1_predicted.log" 2>&1
  echo "$m run rc=$?"; grep -E '^(sequential|file:)' "$out/run_${m}_b1_predicted.log"
done
for m in randwire nasnet; do $bin info $m --format json --bn fold > "$out/json/$m.json" 2>/dev/null; done
echo "== PyTorch (batch 1): eager, CUDA graph, torch.compile"
t0=$SECONDS
timeout $(lim 10) $py bench/peers/torch_models.py \
    --models inception_v3,googlenet,resnet50,squeezenet1_1,densenet121,randwire,nasnet --batch 1 \
    --modes eager,graph,compile --math tf32 --fold-bn --graph-json-dir "$out/json" --warmup-ms 200 \
    --min-ms 500 --out "$out/torch_models.csv" > "$out/torch_models.log" 2>&1
echo "torch rc=$? $((SECONDS - t0))s"; grep -E 'median|FAILED' "$out/torch_models.log"
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$db" 2>/dev/null
tar -C "$(dirname "$out")" --exclude='*.db-wal' --exclude='*.db-shm' --exclude='stages.db' -czf "$out.tar.gz" "$(basename "$out")"
gzip -c "$db" > "$out.stages.db.gz"
