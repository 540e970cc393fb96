#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 56702f7)
# test_exec_gpu (squeeze-and-excitation gates as two launches); the suite on five CNNs
# with gates, with torch.compile, and the se-split ablation (opsched alone); opsched's
# kernels read by ncu (one replay of the inference); batch 16 TF32 and batch 1 fp16 on three.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/kernels; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_exec_gpu; do
  timeout 90 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
  grep -E '^\[  FAILED  \] test|  se [0-9]' $R/tests/$t.log | head -12
done
M=mobilenet_v3_large,efficientnet_b0,regnet_y_1_6gf,mobilenet_v3_small,efficientnet_b1
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models $M \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 280 - $(el) )) > $R/suite.log 2>&1
echo "suite $(el)s" | tee -a $R/times.txt
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
$py bench/networks/suite.py run --opsched $bin --out $R/suite/no-se-split --models $M \
  --peers "" --opsched-args="--ablate se-split" --configs 1:tf32 --budget-s $(( 370 - $(el) )) > $R/ablate-se-split.log 2>&1
$py bench/networks/suite.py ablation $R/suite $R/suite/no-se-split >> $R/ablate-se-split.log 2>&1
echo "ablate se-split $(el)s" | tee -a $R/times.txt
NCU="/usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv"
for m in mobilenet_v3_large mobilenet_v2 efficientnet_b0 convnext_tiny; do
  [ $(el) -gt 420 ] && break
  OPSCHED_CUDA_PROFILE_NODES=40 timeout 40 $NCU --profile-from-start off $bin run bench/networks/models/$m.onnx \
    --shapes input:1x3x224x224 --layout nhwc --compare sequential --iters 10 --format csv > $R/kernels/opsched-$m.csv 2> $R/kernels/opsched-$m.err
  $py bench/profiling/kernels.py summary $R/kernels/opsched-$m.csv > $R/kernels/opsched-$m.txt 2>&1
  echo "ncu opsched $m rc=$? $(head -1 $R/kernels/opsched-$m.txt) $(el)s" | tee -a $R/times.txt
done
xz -9 $R/kernels/*.csv 2>/dev/null
$py bench/networks/suite.py run --opsched $bin --out $R/coverage --models mobilenet_v2,resnet50,efficientnet_b0 \
  --peers torch_compile --configs 16:tf32,1:fp16 --budget-s $(( 560 - $(el) )) > $R/coverage.log 2>&1
$py bench/networks/suite.py report $R/coverage >> $R/coverage.log 2>&1
echo "done $(el)s" | tee -a $R/times.txt
