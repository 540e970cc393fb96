#!/usr/bin/env bash
# Measured IOS search time on the H100 (NHWC, TF32, batch 1), each from an
# empty stage database: inception_v3 with --stage-ms 0,0 (no warm-up beyond
# three replays, exactly 10 samples), at the default bound 0.9 and at 1.0,
# googlenet likewise; each found schedule then run against sequential and
# the sequential one (timed in turns).  Then the GPU tests of the schedule executor.
#   bash bench/schedules/search_time.sh OUTDIR    (after tar -C .carry -xJf .carry/carry.tar.xz)
set -uo pipefail
out=${1:-/tmp/search_time}
mkdir -p "$out"
. "$(dirname "$0")/../gpu_env.sh"
gpu_env_write "$out"
common="--batch 1 --math tf32 --layout nhwc"
# CONFIGS: MODEL:BOUND:SAMPLE_US items (sample: --stage-sample-us)
for cfg in ${CONFIGS:-inception_v3:0.9:100 inception_v3:1.0:100 googlenet:0.9:100}; do
  IFS=: read -r m bound us <<< "$cfg"
  tag=${m}_bound${bound}_us${us}
  t0=$SECONDS
  timeout 120 $bin schedule $m --cost measure $common --stage-ms ${STAGE_MS:-0,0} --bound $bound \
      --stage-sample-us $us --db "$out/s_$tag.db" --quiet -o "$out/$tag.json" > "$out/search_$tag.log" 2>&1
  echo "$m bound $bound sample $us us: rc=$? $((SECONDS - t0)) s in all"
  grep -E '^  [0-9.]+ s,|^verify|stages:|measuring:' "$out/search_$tag.log"
  timeout 90 $bin run $m --schedule "$out/$tag.json" $common --min-ms 300 > "$out/run_$tag.log" 2>&1
  echo "run rc=$?"; grep -E '^(sequential|file)' "$out/run_$tag.log"
done
rm -f "$out"/*.db*
for t in test_sched_exec_gpu test_exec_gpu test_cuda_gpu; do
  timeout 120 ./.carry/tests/$t > "$out/$t.log" 2>&1
  echo "$t: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$out/$t.log" | tr '\n' ' ')"
done
