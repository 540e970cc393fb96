set -uo pipefail
nvidia-smi -L | grep -q H100 || exit 3
OUT=$1
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R
gpu_env_write $R > /dev/null
for t in test_exec_gpu test_sched_exec_gpu; do timeout 90 .carry/tests/$t > $R/$t.log 2>&1; echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt; done
grep -E "bias|FAILED" $R/test_exec_gpu.log | head -20
TESTS=0 PROFILE_S=40 bash bench/gpu_check.sh $R swin_t > $R/check.txt 2>&1
M=convnext_tiny,swin_t
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models $M \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 330 - $(el) )) > $R/suite.log 2>&1
echo "suite done $(el)s" | tee -a $R/times.txt
$py bench/networks/suite.py run --opsched $bin --out $R/suite/no-bias --models $M \
  --peers "" --opsched-args="--ablate bias" --configs 1:tf32 --budget-s $(( 450 - $(el) )) > $R/ablate.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
$py bench/networks/suite.py ablation $R/suite $R/suite/no-bias >> $R/ablate.log 2>&1
echo "all done $(el)s" | tee -a $R/times.txt
rm -f $R/suite/*.db $R/suite/no-bias/*.db
tar -czf $OUT/r.tgz -C /tmp r
tail -4 $R/check.txt; grep '^|\|^- batch' $R/suite/summary.md | head -12; grep '^|' $R/suite/ablation.md; grep -i "error" $R/suite/suite.log | head -5
