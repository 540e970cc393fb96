#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at c8f588a)
# GPU tests (test_exec_gpu: batch normalisation + activation, the residual behind a Transpose;
# test_cuda_ops_gpu: Resize in 32-bit arithmetic; test_cuda_gpu); ConvNeXt-Tiny, DenseNet-121
# and LR-ASPP in strict fp32 NHWC against the CPU backend; the suite on the six CNNs slower
# than torch.compile and ResNet-50, batch 1 TF32; then opsched alone with and without
# --ablate norm-act (DenseNet-121) and --ablate layer-scale (ConvNeXt-Tiny).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/fp32; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_exec_gpu test_cuda_ops_gpu test_cuda_gpu; do
  timeout 100 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" >> $R/times.txt
done
for m in convnext_tiny densenet121 lraspp_mobilenet_v3_large; do
  OPSCHED_LOG=debug timeout 60 $bin profile bench/networks/models/$m.onnx --batch 1 --math fp32 --layout nhwc \
    --check on --layers off --host-layers off --cuda-graph off --min-ms 50 --out-dir $R/fp32 > $R/fp32/$m.log 2> $R/fp32/$m.err
  echo "$m fp32 nhwc rc=$? $(grep -hE 'Numerics' $R/fp32/$m.log $R/fp32/$m.err) $(el)s" >> $R/times.txt
done
M=lraspp_mobilenet_v3_large,densenet121,convnext_tiny,convnext_small,mobilenet_v3_small,mobilenet_v2,resnet50
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models $M \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 430 - $(el) )) > $R/suite.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
echo "suite $(el)s" >> $R/times.txt
for ab in norm-act:densenet121 layer-scale:convnext_tiny; do
  a=${ab%%:*}; m=${ab#*:}
  [ $(el) -gt 500 ] && break
  $py bench/networks/suite.py run --opsched $bin --out $R/abl-$a --models $m \
    --peers "" --configs 1:tf32 --budget-s 30 > $R/abl-$a.log 2>&1
  $py bench/networks/suite.py run --opsched $bin --out $R/abl-$a/no-$a --models $m \
    --peers "" --opsched-args="--ablate $a" --configs 1:tf32 --budget-s 30 >> $R/abl-$a.log 2>&1
  $py bench/networks/suite.py ablation $R/abl-$a $R/abl-$a/no-$a >> $R/abl-$a.log 2>&1
  echo "ablate $a $(el)s" >> $R/times.txt
done
echo "done $(el)s" >> $R/times.txt
