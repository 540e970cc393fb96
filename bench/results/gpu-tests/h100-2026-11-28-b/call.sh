#!/usr/bin/env bash
# One device call on one GPU: the GPU tests of this build; logs packed into $OUT.
set -u
start=$(date +%s)
nvidia-smi -L
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
W=/tmp/work; rm -rf $W; mkdir -p $W/gpu-tests; T=$W/gpu-tests
gpu_env_write $T > /dev/null
finish() { tar -C $W -czf $OUT/results.tgz gpu-tests; echo "elapsed $(( $(date +%s) - start )) s"; }
trap finish EXIT
for t in test_cuda_gpu test_cuda_ops_gpu test_exec_gpu test_sched_exec_gpu test_conformance test_measure; do
  timeout 110 .carry/tests/$t > $T/$t.log 2>&1; echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $T/$t.log | tr '\n' ' ')"
done
