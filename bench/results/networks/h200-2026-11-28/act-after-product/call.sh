#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at c3b22c7)
# GPU tests; the suite on five CNNs with torch.compile; ablations of movement (ShuffleNet)
# and conv-gemm (opsched alone); opsched's kernels and torch.compile's read by ncu.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/kernels; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_cuda_gpu test_exec_gpu; do
  timeout 80 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
  grep -E '^\[  FAILED  \] test|inverted residual' $R/tests/$t.log | head -8
done
M=mobilenet_v2,efficientnet_b0,mobilenet_v3_large,shufflenet_v2_x1_0,convnext_tiny
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models $M \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 270 - $(el) )) > $R/suite.log 2>&1
echo "suite $(el)s" | tee -a $R/times.txt
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
for ab in movement conv-gemm; do
  A=mobilenet_v2,efficientnet_b0,mobilenet_v3_large; [ $ab = movement ] && A=shufflenet_v2_x1_0
  $py bench/networks/suite.py run --opsched $bin --out $R/suite/no-$ab --models $A \
    --peers "" --opsched-args="--ablate $ab" --configs 1:tf32 --budget-s $(( 340 - $(el) )) > $R/ablate-$ab.log 2>&1
  $py bench/networks/suite.py ablation $R/suite $R/suite/no-$ab >> $R/ablate-$ab.log 2>&1
  echo "ablate $ab $(el)s" | tee -a $R/times.txt
done
NCU="/usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv"
for m in mobilenet_v3_large mobilenet_v2 convnext_tiny efficientnet_b0; do
  [ $(el) -gt 450 ] && break
  OPSCHED_CUDA_PROFILE_LAUNCH=30 timeout 60 $NCU --profile-from-start off $bin run bench/networks/models/$m.onnx \
    --shapes input:1x3x224x224 --layout nhwc --compare sequential --iters 10 --format csv > $R/kernels/opsched-$m.csv 2> $R/kernels/opsched-$m.err
  $py bench/profiling/kernels.py summary $R/kernels/opsched-$m.csv > $R/kernels/opsched-$m.txt 2>&1
  echo "ncu opsched $m rc=$? $(head -1 $R/kernels/opsched-$m.txt) $(el)s" | tee -a $R/times.txt
done
for m in mobilenet_v3_large efficientnet_b0; do
  [ $(el) -gt 470 ] && break
  timeout $(( 555 - $(el) )) $NCU --profile-from-start off $py bench/profiling/kernels.py torch --model $m --batch 1 --math tf32 \
    > $R/kernels/torch-$m.csv 2> $R/kernels/torch-$m.err
  $py bench/profiling/kernels.py summary $R/kernels/torch-$m.csv > $R/kernels/torch-$m.txt 2>&1
  echo "ncu torch $m rc=$? $(head -1 $R/kernels/torch-$m.txt) $(el)s" | tee -a $R/times.txt
done
xz -9 $R/kernels/*.csv 2>/dev/null
echo "done $(el)s" | tee -a $R/times.txt
