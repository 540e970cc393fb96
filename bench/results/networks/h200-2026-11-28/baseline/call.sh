#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 44b99a1)
# GPU tests, layered profiles of opsched, torch.compile's kernels (ncu), the suite.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/prof $R/tc; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || ls /usr/local/cuda/bin/ncu); echo "ncu: $NCU" >> $R/env.txt
TESTS=1 TEST_S=60 PROFILE_S=45 bash bench/gpu_check.sh $R shufflenet_v2_x1_0,mobilenet_v2,convnext_tiny,mobilenet_v3_large,efficientnet_b0 > $R/check.txt 2>&1
echo "check $(el)s" | tee -a $R/times.txt
for m in shufflenet_v2_x1_0 mobilenet_v2 convnext_tiny; do
  [ $(el) -gt 330 ] && break
  timeout 110 $NCU --profile-from-start off --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
    --log-file $R/tc/$m.csv $py bench/profiling/kernels.py torch --model $m --math tf32 > $R/tc/$m.log 2>&1
  echo "tc $m rc=$? $(el)s" | tee -a $R/times.txt
  $py bench/profiling/kernels.py summary $R/tc/$m.csv --runs 1 > $R/tc/$m.txt 2>&1
done
M=shufflenet_v2_x1_0,mobilenet_v2,convnext_tiny,mobilenet_v3_large,efficientnet_b0,mnasnet1_0,efficientnet_b1,regnet_y_1_6gf
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models $M \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 560 - $(el) )) > $R/suite.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
echo "suite $(el)s" | tee -a $R/times.txt
