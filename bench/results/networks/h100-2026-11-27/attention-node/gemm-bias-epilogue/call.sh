# The device call (bash .carry/call.sh $OUT on nvidia-h100-x1, timeout 200 s) after
#   make build && scripts/gpu-carry.sh build   (at 4073a7f)
set -uo pipefail
nvidia-smi -L | grep -q H100 || exit 3
OUT=$1
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r4; rm -rf $R; mkdir -p $R
gpu_env_write $R > /dev/null
timeout 70 .carry/tests/test_conformance > $R/test_conformance.log 2>&1; echo "conformance rc=$? $(el)s"
grep -E "Attention on|Gemm on|FAILED" $R/test_conformance.log | head -5
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models gpt2_s128,bert_base_s128 \
  --peers torch_compile --configs 1:tf32 --budget-s 80 > $R/suite.log 2>&1
$py bench/networks/suite.py run --opsched $bin --out $R/suite/no-bias --models gpt2_s128 \
  --peers "" --opsched-args="--ablate bias" --configs 1:tf32 --budget-s 30 > $R/ablate.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
$py bench/networks/suite.py ablation $R/suite $R/suite/no-bias >> $R/ablate.log 2>&1
echo "all done $(el)s"
rm -f $R/suite/*.db $R/suite/no-bias/*.db
tar -czf $OUT/r.tgz -C /tmp r4
grep '^|\|^- batch' $R/suite/summary.md | head -6; grep '^|' $R/suite/ablation.md
