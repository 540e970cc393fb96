#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 5ecf013)
# Own kernels launched programmatically (PDL): the GPU tests (graphs, streams, every kernel);
# batch 1 TF32 mobile networks with torch.compile; the pdl ablation in the same call.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_cuda_ops_gpu test_conformance test_sched_exec_gpu test_cuda_gpu test_exec_gpu; do
  timeout 100 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
M=mobilenet_v3_small,mobilenet_v3_large,mobilenet_v2
timeout 60 $py bench/networks/suite.py run --opsched $bin --out $R/b1/no-pdl --models $M,efficientnet_b0,resnet50 \
  --peers "" --opsched-args="--ablate pdl" --configs 1:tf32 --budget-s 52 --hard-limit-s 57 > $R/ablate-pdl.log 2>&1
echo "ablate pdl $(el)s" | tee -a $R/times.txt
timeout $(( 420 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/b1 --models $M,efficientnet_b0,resnet50 \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 405 - $(el) )) --hard-limit-s $(( 415 - $(el) )) > $R/b1.log 2>&1
$py bench/networks/suite.py report $R/b1 >> $R/b1.log 2>&1
$py bench/networks/suite.py ablation $R/b1 $R/b1/no-pdl >> $R/ablate-pdl.log 2>&1
echo "suite b1 $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
