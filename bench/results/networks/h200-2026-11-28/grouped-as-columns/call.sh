#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200-x2) after
#   make build && scripts/gpu-carry.sh build     (at baf3d35)
# GPU 1: test_cuda_gpu (grouped convolutions as columns and a batched product, forced, in
# every math mode); RegNetY-8GF and ResNeXt-50 in strict fp32 NHWC against the CPU backend;
# opsched alone on the grouped CNNs with and without --ablate im2col.
# GPU 0: the suite on the CNNs with grouped convolutions, batch 1 and 16, TF32, with
# torch.compile.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/fp32; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
M=regnet_y_8gf,regnet_y_1_6gf,regnet_x_400mf,resnext50_32x4d
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 120 taskset -c 16-31 .carry/tests/test_cuda_gpu > $R/tests/test_cuda_gpu.log 2>&1
  echo "test_cuda_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/test_cuda_gpu.log | tr '\n' ' ') $(el)s" >> $R/times.txt
  for m in regnet_y_8gf resnext50_32x4d; do
    OPSCHED_LOG=debug timeout 90 taskset -c 16-31 $bin profile bench/networks/models/$m.onnx --batch 1 --math fp32 --layout nhwc \
      --check on --layers off --host-layers off --cuda-graph off --min-ms 50 --out-dir $R/fp32 > $R/fp32/$m.log 2> $R/fp32/$m.err
    echo "$m fp32 nhwc rc=$? $(grep -hE 'Numerics' $R/fp32/$m.log $R/fp32/$m.err) $(grep -c 'columns and a batched product' $R/fp32/$m.err) im2col verdicts $(el)s" >> $R/times.txt
  done
  taskset -c 16-31 $py bench/networks/suite.py run --opsched $bin --out $R/abl --models $M \
    --peers "" --configs 1:tf32 --budget-s $(( 300 - $(el) )) > $R/abl-full.log 2>&1
  taskset -c 16-31 $py bench/networks/suite.py run --opsched $bin --out $R/abl/no-im2col --models $M \
    --peers "" --opsched-args="--ablate im2col" --configs 1:tf32 --budget-s $(( 370 - $(el) )) > $R/ablate-im2col.log 2>&1
  $py bench/networks/suite.py ablation $R/abl $R/abl/no-im2col >> $R/ablate-im2col.log 2>&1
  echo "ablation $(el)s" >> $R/times.txt
) &
export CUDA_VISIBLE_DEVICES=0
taskset -c 0-15 $py bench/networks/suite.py run --opsched $bin --out $R/suite --models $M \
  --peers torch_compile --configs 1:tf32,16:tf32 --budget-s $(( 340 - $(el) )) > $R/suite.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
echo "suite $(el)s" >> $R/times.txt
wait
echo "done $(el)s" >> $R/times.txt
