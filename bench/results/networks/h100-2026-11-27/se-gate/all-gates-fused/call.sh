set -uo pipefail
nvidia-smi -L | grep -q H100 || exit 3
OUT=$1
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R
gpu_env_write $R > /dev/null
for t in test_exec_gpu test_cuda_gpu test_cuda_ops_gpu; do timeout 90 .carry/tests/$t > $R/$t.log 2>&1; echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt; done
TESTS=0 PROFILE_S=40 bash bench/gpu_check.sh $R efficientnet_b0,mobilenet_v3_large > $R/check.txt 2>&1
echo "check done $(el)s" | tee -a $R/times.txt
M=efficientnet_b0,efficientnet_b1,mobilenet_v3_large,regnet_y_1_6gf,mobilenet_v2,mnasnet1_0,convnext_tiny,shufflenet_v2_x1_0
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models $M \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 420 - $(el) )) > $R/suite.log 2>&1
echo "suite done $(el)s" | tee -a $R/times.txt
$py bench/networks/suite.py run --opsched $bin --out $R/suite/no-se --models efficientnet_b0,mobilenet_v3_large,regnet_y_1_6gf \
  --peers "" --opsched-args="--ablate se" --configs 1:tf32 --budget-s $(( 490 - $(el) )) > $R/ablate.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
$py bench/networks/suite.py ablation $R/suite $R/suite/no-se >> $R/ablate.log 2>&1
echo "ablation done $(el)s" | tee -a $R/times.txt
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/exports-models.tar.xz
timeout $(( 560 - $(el) )) $py bench/exports/layer_errors.py --opsched $bin --model timm_efficientvit_m0 --models /tmp/m/models \
  --out $R/layer-errors > $R/layer-errors.log 2>&1
echo "all done $(el)s" | tee -a $R/times.txt
tar -czf $OUT/r.tgz -C /tmp r
tail -8 $R/check.txt; grep '^|' $R/suite/summary.md | head -12; tail -15 $R/ablate.log; tail -25 $R/layer-errors.log
