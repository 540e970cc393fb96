#!/usr/bin/env bash
# The network suite on every GPU of one host, in a call of under ten
# minutes that the next call continues: shard K of N runs on GPU K, pinned
# to the K-th slice of the host's cores (suite.py run --shard K/N), so that
# one shard's compiling never takes the cores another shard times on; all
# of an item's runs, opsched's and its peers', are on one GPU.  With
# --tests the last GPU first runs the GPU unit tests and the fp32 numerics
# (bench/gpu_tests.sh), then its shard; with --profile MODELS (a comma
# list of the set's names) it first profiles those networks layer by layer
# at batch 1 with the tool's defaults (opsched profile --isolated: every
# distinct layer timed alone too), for the CSVs that say where the time goes.
# With --gpus N the suite takes only the first N GPUs (the rest stay free
# for other work of the same call); CARRY=DIR names the carry to run
# (default .carry).  The shards share one cuDNN plan store
# (OPSCHED_PLAN_STORE), so an item's second opsched run, and every later
# item with the same layers, loads its plans instead of compiling them; a
# store carried as CARRY/plans.sqlite seeds it, and it comes back as
# OUTDIR/plans.sqlite.xz (when under 24 MB) to carry to the next call.
#
#   bash bench/networks/run_gpus.sh RESULTS_DIR OUTDIR [--gpus N] [--tests] [--profile MODELS] [suite.py run options]
#
# RESULTS_DIR holds the suite's files (results-K.csv, suite-K.log, env-K.txt)
# and is resumed from; OUTDIR gets them as networks.tgz (without the
# stage-cost caches), the report, and gpu_tests.tgz.  Before the first
# call, here: make build && scripts/gpu-carry.sh build, and send .carry
# with the device tool's carry (and RESULTS_DIR, for a call that continues).
set -uo pipefail
res=${1:?usage: run_gpus.sh RESULTS_DIR OUTDIR [--tests] [suite options]}
out=${2:?usage: run_gpus.sh RESULTS_DIR OUTDIR [--tests] [suite options]}
shift 2
tests=0 profile= gpus=
if [ "${1:-}" = --gpus ]; then gpus=${2:?--gpus wants a count}; shift 2; fi
if [ "${1:-}" = --tests ]; then tests=1; shift; fi
if [ "${1:-}" = --profile ]; then profile=${2:?--profile wants a list}; shift 2; fi
budget=${GPU_CALL_S:-540}
start=$(date +%s)
left() { echo $((budget - ($(date +%s) - start))); }
c=${CARRY:-.carry}
[ -x "$c/bin/opsched" ] || tar -C "$c" -xJf "$c/carry.tar.xz"
. "$(dirname "$0")/../gpu_env.sh"
command -v taskset > /dev/null || taskset() { shift 2; "$@"; }   # unpinned without it
mkdir -p "$res" "$out"
gpu_env_write "$out" > /dev/null
store=/tmp/opsched-plans.sqlite
[ -f "$c/plans.sqlite" ] && [ ! -f "$store" ] && cp "$c/plans.sqlite" "$store"
export OPSCHED_PLAN_STORE=$store
all=$(nvidia-smi -L | wc -l)
n=${gpus:-$all}
[ "$n" -ge 1 ] && [ "$n" -le "$all" ] || { echo "run_gpus: --gpus $n of $all GPUs" >&2; exit 2; }
per=$(( $(nproc) / all ))
echo "run_gpus: $n GPUs, $per cores a shard, ${budget}s" | tee "$out/run.log"
for k in $(seq 0 $((n - 1))); do
  lo=$((k * per)) hi=$((k * per + per - 1))
  (
    export CUDA_VISIBLE_DEVICES=$k TORCHINDUCTOR_COMPILE_THREADS=$per OMP_NUM_THREADS=$per
    if [ $tests = 1 ] && [ $k = $((n - 1)) ]; then
      mkdir -p "$out/gpu_tests"
      TEST_S=90 taskset -c $lo-$hi bash bench/gpu_tests.sh "$out/gpu_tests" \
        > "$out/gpu_tests/summary.txt" 2>&1
    fi
    if [ -n "$profile" ] && [ $k = $((n - 1)) ]; then
      mkdir -p "$out/profile"
      for m in ${profile//,/ }; do
        timeout 120 taskset -c $lo-$hi "$bin" profile "bench/networks/models/$m.onnx" --batch 1 \
          --isolated --check off --min-ms 100 --out-dir "$out/profile" --force \
          > "$out/profile/$m.log" 2>&1
        echo "profile $m: rc=$?" >> "$out/profile/summary.txt"
      done
    fi
    # Items still running at the budget finish; none starts after it.
    taskset -c $lo-$hi "$py" bench/networks/suite.py run --opsched "$bin" --out "$res" \
      --shard $k/$n --budget-s $(( $(left) - 100 )) "$@"
  ) >> "$res/shard-$k.out" 2>&1 &
done
wait
echo "run_gpus: shards ended after $(( $(date +%s) - start ))s" | tee -a "$out/run.log"
"$py" bench/networks/suite.py report "$res" >> "$out/run.log" 2>&1
tail -n 3 "$res"/shard-*.out >> "$out/run.log"
tar -czf "$out/networks.tgz" -C "$(dirname "$res")" --exclude='stages*.db*' "$(basename "$res")"
[ -d "$out/gpu_tests" ] && tar -czf "$out/gpu_tests.tgz" -C "$out" gpu_tests && rm -rf "$out/gpu_tests"
[ -d "$out/profile" ] && tar -czf "$out/profile.tgz" -C "$out" profile && rm -rf "$out/profile"
if [ -f "$store" ]; then
  xz -T0 -c "$store" > "$out/plans.sqlite.xz"
  [ "$(stat -c %s "$out/plans.sqlite.xz")" -le $((24 << 20)) ] || rm -f "$out/plans.sqlite.xz"
fi
cat "$out/run.log"
