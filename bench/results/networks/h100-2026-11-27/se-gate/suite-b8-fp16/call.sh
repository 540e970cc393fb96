set -uo pipefail
nvidia-smi -L | grep -q H100 || exit 3
OUT=$1
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R
gpu_env_write $R > /dev/null
M=efficientnet_b0,mobilenet_v3_large,mobilenet_v2,convnext_tiny,shufflenet_v2_x1_0,efficientnet_b1,mnasnet1_0,regnet_y_1_6gf
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models $M \
  --peers torch_compile --configs B:tf32,1:fp16 --budget-s 500 > $R/suite.log 2>&1
echo "suite done $(el)s" | tee -a $R/times.txt
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
rm -f $R/suite/*.db
tar -czf $OUT/r.tgz -C /tmp r
grep '^|\|^- batch' $R/suite/summary.md | head -30
