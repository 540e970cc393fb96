#!/usr/bin/env bash
# The GPU tests and the fp32/NHWC numerics of the executor on the H100:
# test_cuda_gpu, test_cuda_ops_gpu, test_exec_gpu, test_sched_exec_gpu, test_conformance,
# test_measure from .carry/tests, then resnet50, googlenet and
# inception_v3 in strict fp32, NHWC, against the CPU backend.
#   bash bench/gpu_tests.sh OUTDIR    (after tar -C .carry -xJf .carry/carry.tar.xz;
#   CARRY=DIR for a carry unpacked elsewhere)
set -uo pipefail
out=${1:-/tmp/gpu_tests}
mkdir -p "$out"
. "$(dirname "$0")/gpu_env.sh"
gpu_env_write "$out"
for t in test_cuda_gpu test_cuda_ops_gpu test_exec_gpu test_sched_exec_gpu test_conformance test_measure; do
  [ -x "$carry/tests/$t" ] || continue
  timeout ${TEST_S:-120} "$carry/tests/$t" > "$out/$t.log" 2>&1
  echo "$t: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$out/$t.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] test' "$out/$t.log" | head -5
done
for m in resnet50 googlenet inception_v3; do
  timeout 60 $bin profile $m --batch 1 --math fp32 --layout nhwc --bn fold --check on --layers off \
      --host-layers off --cuda-graph off --min-ms 50 --out-dir "$out/fp32" > "$out/fp32_$m.log" 2>&1
  echo "$m fp32 nhwc rc=$? $(grep -E 'Numerics' "$out/fp32_$m.log")"
done
