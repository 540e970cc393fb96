#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 3833f3b)
# Coverage at batch 16 TF32 of the CNNs not yet measured there, and the mobile networks at
# batch 1 TF32 after the gated product, torch.compile in the same call.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
timeout 120 $py bench/networks/suite.py run --opsched $bin --out $R/b1 --models mobilenet_v3_small,mobilenet_v3_large,mobilenet_v2 \
  --peers torch_compile --configs 1:tf32 --budget-s 105 --hard-limit-s 115 > $R/b1.log 2>&1
$py bench/networks/suite.py report $R/b1 >> $R/b1.log 2>&1
echo "suite b1 $(el)s" | tee -a $R/times.txt
timeout $(( 430 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/b16 \
  --models resnet18,googlenet,squeezenet1_1,inception_v3,vgg16,wide_resnet50_2 \
  --peers torch_compile --configs 16:tf32 --budget-s $(( 400 - $(el) )) --hard-limit-s $(( 425 - $(el) )) > $R/b16.log 2>&1
$py bench/networks/suite.py report $R/b16 >> $R/b16.log 2>&1
echo "suite b16 $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
