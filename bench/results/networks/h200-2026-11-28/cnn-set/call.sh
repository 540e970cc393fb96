#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200-x4) after
#   make build && scripts/gpu-carry.sh build     (at c3df26c)
# GPU 3: the GPU unit tests and fp32 numerics (bench/gpu_tests.sh), then opsched alone on
# seven CNNs with the full planner and with gemm-tuning, se-mul and depthwise ablated.
# GPUs 0-2: the suite over every CNN of the public set, batch 1 TF32, with torch.compile;
# then batch 16 TF32 with what is left of the budget.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
nvidia-smi -L > $R/gpus.txt
CNN=resnet18,resnet50,resnext50_32x4d,wide_resnet50_2,vgg16,densenet121,googlenet,inception_v3,squeezenet1_1,mobilenet_v2,mobilenet_v3_small,mobilenet_v3_large,mnasnet1_0,shufflenet_v2_x1_0,efficientnet_b0,efficientnet_b1,efficientnet_b3,efficientnet_v2_s,regnet_x_400mf,regnet_y_1_6gf,regnet_y_8gf,convnext_tiny,convnext_small,fcn_resnet50,lraspp_mobilenet_v3_large
A=mobilenet_v2,efficientnet_b0,convnext_tiny,mobilenet_v3_large,regnet_y_1_6gf,resnet50,mobilenet_v3_small
(
  export CUDA_VISIBLE_DEVICES=3
  TEST_S=90 taskset -c 48-63 bash bench/gpu_tests.sh $R/tests > $R/tests/summary.txt 2>&1
  echo "tests $(el)s" >> $R/times.txt
  taskset -c 48-63 $py bench/networks/suite.py run --opsched $bin --out $R/abl --models $A \
    --peers "" --configs 1:tf32 --budget-s $(( 330 - $(el) )) > $R/abl-full.log 2>&1
  echo "abl full $(el)s" >> $R/times.txt
  for x in gemm-tuning se-mul depthwise; do
    taskset -c 48-63 $py bench/networks/suite.py run --opsched $bin --out $R/abl/no-$x --models $A \
      --peers "" --opsched-args="--ablate $x" --configs 1:tf32 --budget-s $(( 525 - $(el) )) > $R/ablate-$x.log 2>&1
    $py bench/networks/suite.py ablation $R/abl $R/abl/no-$x >> $R/ablate-$x.log 2>&1
    echo "ablate $x $(el)s" >> $R/times.txt
  done
) &
export CUDA_VISIBLE_DEVICES=0,1,2
taskset -c 0-47 $py bench/networks/suite.py run --gpus 3 --opsched $bin --out $R/suite --models $CNN \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 420 - $(el) )) > $R/suite.log 2>&1
echo "suite b1 $(el)s" >> $R/times.txt
taskset -c 0-47 $py bench/networks/suite.py run --gpus 3 --opsched $bin --out $R/suite16 --models $CNN \
  --peers torch_compile --configs 16:tf32 --budget-s $(( 490 - $(el) )) > $R/suite16.log 2>&1
echo "suite b16 $(el)s" >> $R/times.txt
wait
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
$py bench/networks/suite.py report $R/suite16 >> $R/suite16.log 2>&1
echo "done $(el)s" >> $R/times.txt
