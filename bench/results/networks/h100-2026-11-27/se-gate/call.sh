set -uo pipefail
nvidia-smi -L | grep -q H100 || exit 3
OUT=$1
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R
gpu_env_write $R > /dev/null
for t in test_exec_gpu; do timeout 90 .carry/tests/$t > $R/$t.log 2>&1; echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt; done
grep "  se " $R/test_exec_gpu.log
TESTS=0 PROFILE_S=40 bash bench/gpu_check.sh $R efficientnet_b0,mobilenet_v3_large,efficientnet_b0@--ablate+se,mobilenet_v3_large@--ablate+se > $R/check.txt 2>&1
echo "check done $(el)s" | tee -a $R/times.txt
M=efficientnet_b0,mobilenet_v3_large,efficientnet_b1,regnet_y_1_6gf
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models $M \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 330 - $(el) )) > $R/suite.log 2>&1
echo "suite done $(el)s" | tee -a $R/times.txt
$py bench/networks/suite.py run --opsched $bin --out $R/suite/no-se --models $M \
  --peers "" --opsched-args="--ablate se" --configs 1:tf32 --budget-s $(( 430 - $(el) )) > $R/ablate.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
$py bench/networks/suite.py ablation $R/suite $R/suite/no-se >> $R/ablate.log 2>&1
echo "ablation done $(el)s" | tee -a $R/times.txt
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/exports-models.tar.xz
mkdir -p $R/tf32-peer
timeout $(( 555 - $(el) )) $py bench/exports/torch_peer.py --models /tmp/m/models --opsched $bin --only timm_efficientvit_m0 \
  --out $R/tf32-peer/torch-peer.csv > $R/tf32-peer.log 2>&1
echo "all done $(el)s" | tee -a $R/times.txt
tar -czf $OUT/r.tgz -C /tmp r
ls -la $OUT
tail -12 $R/check.txt; grep '^|' $R/suite/summary.md | head -8; tail -8 $R/ablate.log; grep "^name=" $R/tf32-peer.log
