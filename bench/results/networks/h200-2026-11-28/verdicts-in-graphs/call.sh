#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 1e696a6)
# GPU tests (verdicts timed in CUDA graphs, movement runs), the suite on eight CNNs
# with torch.compile, ablations of conv-gemm and movement (opsched alone), and
# opsched's kernels read by ncu (one replay of the deployed graph).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/kernels; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_cuda_gpu test_exec_gpu; do
  timeout 80 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
  grep -E '^\[  FAILED  \] test' $R/tests/$t.log | head -8
done
M=mobilenet_v2,resnet50,efficientnet_b0,mobilenet_v3_large,mnasnet1_0,shufflenet_v2_x1_0,regnet_y_1_6gf,convnext_tiny
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models $M \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 360 - $(el) )) > $R/suite.log 2>&1
echo "suite $(el)s" | tee -a $R/times.txt
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
A=mobilenet_v2,resnet50,efficientnet_b0,shufflenet_v2_x1_0
for ab in conv-gemm movement; do
  $py bench/networks/suite.py run --opsched $bin --out $R/suite/no-$ab --models $A \
    --peers "" --opsched-args="--ablate $ab" --configs 1:tf32 --budget-s $(( 470 - $(el) )) > $R/ablate-$ab.log 2>&1
  $py bench/networks/suite.py ablation $R/suite $R/suite/no-$ab >> $R/ablate-$ab.log 2>&1
  echo "ablate $ab $(el)s" | tee -a $R/times.txt
done
NCU=/usr/local/cuda/bin/ncu
for m in mobilenet_v2 efficientnet_b0; do
  [ $(el) -gt 530 ] && break
  OPSCHED_CUDA_PROFILE_LAUNCH=60 timeout 60 $NCU --profile-from-start off --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum --csv $bin run bench/networks/models/$m.onnx --compare sequential \
    --iters 10 --format csv > $R/kernels/$m.csv 2> $R/kernels/$m.err
  $py bench/profiling/kernels.py summary $R/kernels/$m.csv > $R/kernels/$m.txt 2>&1
  echo "ncu $m rc=$? $(head -1 $R/kernels/$m.txt) $(el)s" | tee -a $R/times.txt
done
echo "done $(el)s" | tee -a $R/times.txt
