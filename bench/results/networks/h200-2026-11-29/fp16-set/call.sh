#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at e7bc2f0: a depthwise convolution and its
#   channels-last LayerNorm as one kernel, filters read through the cache)
# test_exec_gpu; the suite with torch.compile on ConvNeXt-Tiny and -Small at batch 1 TF32,
# then batch 1 fp16 over the CNN set (in list order, as far as the budget goes).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
nvidia-smi -L > $R/gpus.txt
timeout 100 .carry/tests/test_exec_gpu > $R/tests/test_exec_gpu.log 2>&1
echo "test_exec_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/test_exec_gpu.log | tr '\n' ' ') $(el)s" >> $R/times.txt
timeout 110 $py bench/networks/suite.py run --opsched $bin --out $R/suite --models convnext_tiny,convnext_small \
  --peers torch_compile --configs 1:tf32 --budget-s 90 --hard-limit-s 105 > $R/suite.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
echo "suite tf32 $(el)s" >> $R/times.txt
CNN=mobilenet_v2,mobilenet_v3_small,mobilenet_v3_large,efficientnet_b0,mnasnet1_0,shufflenet_v2_x1_0,resnet50,densenet121,regnet_y_1_6gf,lraspp_mobilenet_v3_large,resnet18,squeezenet1_1,googlenet,inception_v3,efficientnet_b1,regnet_x_400mf
timeout $(( 505 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/fp16 --models $CNN \
  --peers torch_compile --configs 1:fp16 --budget-s $(( 470 - $(el) )) --hard-limit-s $(( 500 - $(el) )) > $R/fp16.log 2>&1
$py bench/networks/suite.py report $R/fp16 >> $R/fp16.log 2>&1
echo "suite fp16 $(el)s" >> $R/times.txt
echo "done $(el)s" >> $R/times.txt
