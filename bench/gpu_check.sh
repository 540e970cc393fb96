#!/usr/bin/env bash
# One device call that checks a carried build: the GPU tests and fp32
# numerics (bench/gpu_tests.sh), then each named network of the suite's
# set profiled layer by layer at batch 1 with the tool's defaults and its
# numerics checked against the CPU backend; everything in OUTDIR/check.tgz
# (the device tool brings back few files, so one archive).
#   bash bench/gpu_check.sh OUTDIR [MODEL,MODEL,...]
# A model may carry profile options after '@', words joined by '+'
# (regnet_y_1_6gf@--algo+find): its files then go to a folder named
# after them.  TESTS=0 skips the tests.
# Before the call, here: make build && scripts/gpu-carry.sh build; carry .carry.
set -uo pipefail
out=${1:?usage: gpu_check.sh OUTDIR [MODELS]}
models=${2:-}
c=${CARRY:-.carry}
[ -x "$c/bin/opsched" ] || tar -C "$c" -xJf "$c/carry.tar.xz"
. "$(dirname "$0")/gpu_env.sh"
work=$(mktemp -d)
mkdir -p "$out" "$work/check/tests" "$work/check/profile"
start=$(date +%s)
if [ "${TESTS:-1}" = 1 ]; then
  TEST_S=${TEST_S:-90} bash "$(dirname "$0")/gpu_tests.sh" "$work/check/tests" \
    > "$work/check/tests/summary.txt" 2>&1
fi
echo "tests: $(( $(date +%s) - start ))s" | tee "$work/check/times.txt"
for spec in ${models//,/ }; do
  m=${spec%%@*} opts= dir="$work/check/profile"
  if [ "$spec" != "$m" ]; then
    opts=${spec#*@}; opts=${opts//+/ }
    dir="$work/check/profile/$(echo "$opts" | tr -c 'a-zA-Z0-9\n' '_')"
  fi
  mkdir -p "$dir"
  t0=$(date +%s)
  timeout ${PROFILE_S:-90} "$bin" profile "bench/networks/models/$m.onnx" --batch 1 \
    --min-ms 100 $opts --out-dir "$dir" --force > "$dir/$m.log" 2>&1
  echo "profile $m $opts: rc=$? $(( $(date +%s) - t0 ))s" | tee -a "$work/check/times.txt"
done
tar -czf "$out/check.tgz" -C "$work" check
cat "$work/check/tests/summary.txt"
find "$work/check/profile" -name '*.log' | sort | xargs grep -h -E "===|CUDA Graph Latency:|Numerics:" 2>/dev/null | sed 's/, p90.*//' | head -60
rm -rf "$work"
