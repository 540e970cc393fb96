#!/usr/bin/env bash
# Inter-operator schedules against PyTorch in NHWC (TF32, cuDNN heuristics,
# BatchNorm folded on both sides), one batch size per call: for each model the IOS search with
# stage costs measured on the device (search time; the found schedule run
# whole against greedy and sequential, the fastest kept), then
# `opsched run --compare sequential,greedy,ios` answered from the stage
# database (free-running and one CUDA graph; numerics against sequential).
# With PRED=1 (batch 1): the operators of inception_v3 and googlenet
# measured alone in NHWC, then the predicted-cost search (contention fitted
# to the stages measured here) and its schedule run.  With TORCH=1: the
# PyTorch peers (eager, CUDA graph, torch.compile reduce-overhead, and
# torch.compile on a channels_last model), same call, same GPU.
#   B=1 bash bench/schedules/compare.sh OUTDIR     (after tar -C .carry -xJf .carry/carry.tar.xz)
# STAGE_MS=W,M: --stage-ms for the searches (the recorded b1/b16 runs used 0.5,1;
# the tool's default since is 0,0 with 50 us samples, see bench/results/schedules/h100-2026-11-24/search)
# Report over one or more OUTDIRs: python3 bench/schedules/analyze.py DIR_B1 [DIR_B16]
set -uo pipefail
out=${1:-/tmp/schedules}
B=${B:-1}
budget=${BUDGET_S:-570}
mkdir -p "$out/sched" "$out/json"
. "$(dirname "$0")/../gpu_env.sh"
db=$out/stages.db
left() { echo $((budget - SECONDS)); }
lim() { local l=$(( $(left) - $1 )); [ $l -lt 1 ] && l=1; echo $l; }
gpu_env_write "$out"
models=${MODELS:-"googlenet inception_v3 squeezenet1_1 resnet50 densenet121 randwire nasnet"}
common="--batch $B --math tf32 --layout nhwc"
echo "== opsched, batch $B: measured IOS search, then run --compare"
# randwire and nasnet: their blocks cut into parts of at most 12 operators,
# so that the measured search fits the call (the parts' DP is exact).
extra() { case $1 in randwire|nasnet) echo "--max-block-ops ${RN_BLOCK:-12}";; esac; }
for m in $models; do
  [ $(left) -lt ${RESERVE:-60} ] && { echo "skip $m (time)"; continue; }
  t0=$SECONDS
  timeout $(lim ${RESERVE:-60}) $bin schedule $m --cost measure $common $(extra $m) ${STAGE_MS:+--stage-ms $STAGE_MS} \
      --db "$db" --quiet -o "$out/sched/${m}_b${B}_ios.json" > "$out/search_${m}_b$B.log" 2>&1
  echo "$m search rc=$? $((SECONDS - t0))s"
  grep -E '^  [0-9.]+ s,|^verify|stages:|build|capture' "$out/search_${m}_b$B.log" | head -5
  timeout $(lim 30) $bin run $m --compare sequential,greedy,ios $common $(extra $m) --db "$db" \
      --min-ms 300 > "$out/run_${m}_b$B.log" 2>&1
  echo "$m run rc=$?"; grep -E '^(sequential|greedy|ios) |verified' "$out/run_${m}_b$B.log"
done
if [ "${CHEAP:-0}" = 1 ]; then
  echo "== inception_v3: measured search again from scratch with cheaper stage timing (--stage-ms 0.2,0.5)"
  t0=$SECONDS
  timeout 90 $bin schedule inception_v3 --cost measure $common --stage-ms 0.2,0.5 --db "$out/cheap.db" \
      --quiet -o "$out/sched/inception_v3_b${B}_ios_cheap.json" > "$out/search_inception_v3_b${B}_cheap.log" 2>&1
  echo "search rc=$? $((SECONDS - t0))s"
  grep -E '^  [0-9.]+ s,|^verify|stages:|measuring:' "$out/search_inception_v3_b${B}_cheap.log" | head -5
  timeout 60 $bin run inception_v3 --schedule "$out/sched/inception_v3_b${B}_ios_cheap.json" $common \
      --min-ms 300 > "$out/run_inception_v3_b${B}_cheap.log" 2>&1
  echo "run rc=$?"; grep -E '^(sequential|file)' "$out/run_inception_v3_b${B}_cheap.log"
  rm -f "$out"/cheap.db*
fi
if [ "${PRED:-0}" = 1 ]; then
  echo "== operators alone in NHWC (sweep), predicted-cost searches"
  timeout $(lim 120) $bin sweep bench/specs/schedules_nhwc.yml --db "$db" --layout nhwc \
      > "$out/sweep_ops.log" 2>&1
  echo "sweep rc=$?"; tail -2 "$out/sweep_ops.log"
  uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
  dev=$(python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('select id from devices where uuid=?',(sys.argv[2],)).fetchone()[0])" "$db" "$uuid" 2>/dev/null)
  for m in inception_v3 googlenet; do
    [ $(left) -lt 30 ] && break
    t0=$SECONDS
    timeout 60 $bin schedule $m --cost predict --target "${dev:-1}" $common --db "$db" --quiet \
        -o "$out/sched/${m}_b${B}_predicted.json" > "$out/predsearch_${m}_b$B.log" 2>&1
    echo "$m predicted search rc=$? $((SECONDS - t0))s"; grep -E ' s,|contention|latency|predicted:' "$out/predsearch_${m}_b$B.log" | head -5
    timeout 60 $bin run $m --schedule "$out/sched/${m}_b${B}_predicted.json" $common --min-ms 300 \
        > "$out/run_${m}_b${B}_predicted.log" 2>&1
    echo "$m run rc=$?"; grep -E '^(sequential|file)' "$out/run_${m}_b${B}_predicted.log"
  done
fi
if [ "${TORCH:-1}" = 1 ]; then
  for m in randwire nasnet; do $bin info $m --batch $B --format json --bn fold > "$out/json/$m.json" 2>/dev/null; done
  echo "== PyTorch (batch $B): eager, CUDA graph, torch.compile, torch.compile channels_last"
  t=$(( $(left) - 5 )); [ $t -lt 30 ] && t=30
  timeout $t $py bench/peers/torch_models.py --models ${TORCH_MODELS:-inception_v3,googlenet,squeezenet1_1,resnet50,densenet121,randwire,nasnet} \
      --batch $B --modes ${TORCH_MODES:-eager,graph,compile,compile-cl} --math tf32 --fold-bn \
      --graph-json-dir "$out/json" --warmup-ms 200 --min-ms 400 --out "$out/torch_models.csv" \
      > "$out/torch_models.log" 2>&1
  echo "torch rc=$?"; grep -E 'median|FAILED' "$out/torch_models.log"
fi
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$db" 2>/dev/null
tar -C "$(dirname "$out")" --exclude='stages.db*' -czf "$out.tar.gz" "$(basename "$out")"
gzip -c "$db" > "$out.stages.db.gz"
