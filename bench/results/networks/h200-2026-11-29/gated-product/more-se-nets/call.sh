#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 616ea37)
# The gated product on the other squeeze-and-excitation networks at batch 16 TF32, with
# torch.compile in the same call.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
M=efficientnet_v2_s,mobilenet_v3_small,efficientnet_b1,efficientnet_b3,regnet_y_8gf
timeout 330 $py bench/networks/suite.py run --opsched $bin --out $R/b16 --models $M \
  --peers torch_compile --configs 16:tf32 --budget-s 310 --hard-limit-s 325 > $R/b16.log 2>&1
$py bench/networks/suite.py report $R/b16 >> $R/b16.log 2>&1
echo "suite b16 $(el)s" | tee -a $R/times.txt
