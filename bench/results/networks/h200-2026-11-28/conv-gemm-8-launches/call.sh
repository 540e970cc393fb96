#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 04bd582)
# GPU tests, the suite with torch.compile, the conv-gemm ablation (opsched alone).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/prof; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_cuda_gpu test_exec_gpu; do
  timeout 80 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
  grep -E '^\[  FAILED  \] test|cublaslt:|on cuBLASLt' $R/tests/$t.log | head -8
done
OPSCHED_LOG=debug timeout 40 $bin profile bench/networks/models/mobilenet_v2.onnx --batch 1 --min-ms 100 --out-dir $R/prof --force > $R/prof/mobilenet_v2.log 2>&1
M=mobilenet_v2,resnet50,efficientnet_b0,mobilenet_v3_large,mnasnet1_0,shufflenet_v2_x1_0
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models $M \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 380 - $(el) )) > $R/suite.log 2>&1
echo "suite $(el)s" | tee -a $R/times.txt
$py bench/networks/suite.py run --opsched $bin --out $R/suite/no-conv-gemm --models $M \
  --peers "" --opsched-args="--ablate conv-gemm" --configs 1:tf32 --budget-s $(( 465 - $(el) )) > $R/ablate.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
$py bench/networks/suite.py ablation $R/suite $R/suite/no-conv-gemm >> $R/ablate.log 2>&1
echo "done $(el)s" | tee -a $R/times.txt
