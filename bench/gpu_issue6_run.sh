#!/usr/bin/env bash
# Issue 6 on the H100, opsched's side (one call, < 10 min): GPU tests, the
# new networks' numerics against the CPU backend, then for each network at
# batch 1 and 16: the IOS search with stage costs measured on the device
# (kept in a database, so a second search is answered from it; search time
# printed), and `opsched run --compare sequential,greedy,ios` (each schedule
# free-running and as one CUDA graph, numerics against sequential).  Then
# the predicted-cost search (contention fitted to the stages measured here)
# and the specialization table (a batch-1 schedule run at batch 16 and back).
# TF32, cuDNN heuristics, BatchNorm folded (the deployed form).
#   bash bench/gpu_issue6_run.sh OUTDIR    (after scripts/gpu-carry.sh)
# DB_IN: the issue-5 database (operator measurements for --cost predict).
set -uo pipefail
out=${1:-/tmp/issue6_run}
budget=${BUDGET_S:-575}
mkdir -p "$out/sched"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
db=$out/stages.db
[ -n "${DB_IN:-}" ] && [ -f "$DB_IN" ] && cp "$DB_IN" "$db"
models=${MODELS:-"inception_v3 googlenet squeezenet1_1 resnet50 densenet121 randwire nasnet"}
stage_ms=${STAGE_MS:-2,3}
left() { echo $((budget - SECONDS)); }
lim() { local l=$(( $(left) - $1 )); [ $l -lt 1 ] && l=1; echo $l; }
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit,uuid --format=csv,noheader
} > "$out/env.txt" 2>&1
cat "$out/env.txt"
$bin devices > "$out/devices.txt" 2>&1

echo "== GPU tests"
for t in test_cuda_gpu test_exec_gpu test_sched_exec_gpu; do
  [ -x .carry/tests/$t ] || continue
  timeout 120 ./.carry/tests/$t > "$out/$t.log" 2>&1
  echo "$t: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$out/$t.log" | tr '\n' ' ')"
done
echo "== randwire, nasnet: CUDA (fp32) against the CPU backend"
for m in randwire nasnet; do
  timeout 60 $bin profile $m --batch 1 --math fp32 --check on --layers off --host-layers off \
       --cuda-graph off --min-ms 100 --out-dir "$out/check" > "$out/check_$m.log" 2>&1
  echo "$m rc=$? $(grep -E 'Numerics' "$out/check_$m.log")"
done

echo "== search (measured stage costs) and run, batch 1 then 16"
for b in 1 16; do
  for m in $models; do
    [ $(left) -lt 40 ] && { echo "out of time before $m b$b"; continue; }
    t0=$SECONDS
    timeout $(lim 30) $bin schedule $m --cost measure --batch $b --math tf32 --stage-ms $stage_ms \
        --db "$db" --quiet -o "$out/sched/${m}_b${b}_ios.json" > "$out/search_${m}_b$b.log" 2>&1
    rc=$?
    echo "$m b$b search rc=$rc $((SECONDS - t0))s: $(grep -E '^  [0-9.]+ s,' "$out/search_${m}_b$b.log" | head -1)"
    t0=$SECONDS
    timeout $(lim 20) $bin run $m --compare sequential,greedy,ios --batch $b --math tf32 --db "$db" \
        --save-schedules "$out/sched/b$b" --min-ms 300 > "$out/run_${m}_b$b.log" 2>&1
    echo "$m b$b run rc=$? $((SECONDS - t0))s"
    grep -E 'sequential|greedy|ios' "$out/run_${m}_b$b.log" | tail -4
  done
done

echo "== second search of inception_v3 (answered from the database), predicted-cost searches"
for m in inception_v3 googlenet; do
  [ $(left) -lt 20 ] && break
  t0=$SECONDS
  timeout $(lim 15) $bin schedule $m --cost measure --batch 1 --math tf32 --db "$db" --quiet \
      -o "$out/sched/${m}_b1_ios_again.json" > "$out/search_${m}_b1_again.log" 2>&1
  echo "$m again rc=$? $((SECONDS - t0))s"; head -6 "$out/search_${m}_b1_again.log"
  t0=$SECONDS
  timeout $(lim 10) $bin schedule $m --cost predict --target H100 --batch 1 --math tf32 --db "$db" --quiet \
      -o "$out/sched/${m}_b1_predicted.json" > "$out/search_${m}_b1_predicted.log" 2>&1
  echo "$m predicted rc=$? $((SECONDS - t0))s"; head -8 "$out/search_${m}_b1_predicted.log"
  timeout $(lim 5) $bin run $m --schedule "$out/sched/${m}_b1_predicted.json" --batch 1 --math tf32 \
      --min-ms 300 > "$out/run_${m}_b1_predicted.log" 2>&1; tail -4 "$out/run_${m}_b1_predicted.log"
done
echo "== specialization: batch-1 schedule at batch 16 and back"
for m in inception_v3 googlenet; do
  [ $(left) -lt 15 ] && break
  timeout $(lim 5) $bin run $m --schedule "$out/sched/${m}_b1_ios.json" --batch 16 --math tf32 --min-ms 300 \
      > "$out/spec_${m}_b1_at_16.log" 2>&1; tail -3 "$out/spec_${m}_b1_at_16.log"
  timeout $(lim 5) $bin run $m --schedule "$out/sched/${m}_b16_ios.json" --batch 1 --math tf32 --min-ms 300 \
      > "$out/spec_${m}_b16_at_1.log" 2>&1; tail -3 "$out/spec_${m}_b16_at_1.log"
done
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$db" 2>/dev/null
tar -C "$(dirname "$out")" --exclude='*.db-wal' --exclude='*.db-shm' -czf "$out.tar.gz" "$(basename "$out")"
ls -la "$out.tar.gz"
