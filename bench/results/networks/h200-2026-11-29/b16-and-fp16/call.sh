#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at e7bc2f0, the binary of fp16-set/)
# The suite with torch.compile: batch 16 TF32 over CNNs of the set, then batch 1 fp16 over the
# ones fp16-set/ did not reach, in list order as far as the budget goes.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
nvidia-smi -L > $R/gpus.txt
B16=mobilenet_v2,mobilenet_v3_large,efficientnet_b0,convnext_tiny,densenet121,shufflenet_v2_x1_0,regnet_y_1_6gf
timeout 300 $py bench/networks/suite.py run --opsched $bin --out $R/b16 --models $B16 \
  --peers torch_compile --configs 16:tf32 --budget-s 260 --hard-limit-s 290 > $R/b16.log 2>&1
$py bench/networks/suite.py report $R/b16 >> $R/b16.log 2>&1
echo "suite b16 $(el)s" >> $R/times.txt
F16=lraspp_mobilenet_v3_large,resnet18,squeezenet1_1,googlenet,inception_v3,efficientnet_b1,regnet_x_400mf
timeout $(( 480 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/fp16 --models $F16 \
  --peers torch_compile --configs 1:fp16 --budget-s $(( 440 - $(el) )) --hard-limit-s $(( 470 - $(el) )) > $R/fp16.log 2>&1
$py bench/networks/suite.py report $R/fp16 >> $R/fp16.log 2>&1
echo "suite fp16 $(el)s" >> $R/times.txt
echo "done $(el)s" >> $R/times.txt
