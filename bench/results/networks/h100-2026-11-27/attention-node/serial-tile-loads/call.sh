# The device call (bash .carry/call.sh $OUT on nvidia-h100-x1) after
#   make build && scripts/gpu-carry.sh build   (at 5334de6)
set -uo pipefail
nvidia-smi -L | grep -q H100 || exit 3
OUT=$1
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R
gpu_env_write $R > /dev/null
for t in test_exec_gpu; do timeout 120 .carry/tests/$t > $R/$t.log 2>&1; echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt; done
grep -E "  attention|FAILED" $R/test_exec_gpu.log | head -30
timeout 60 $bin profile bench/networks/models/bert_base_s128.onnx --batch 1 --min-ms 100 --math tf32 --out-dir $R/prof --force > $R/prof.log 2>&1; echo "profile rc=$? $(el)s" | tee -a $R/times.txt
M=bert_base_s128,distilbert_s128,gpt2_s128,vit_b_16,vit_b_32,swin_t
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models $M \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 380 - $(el) )) > $R/suite.log 2>&1
echo "suite done $(el)s" | tee -a $R/times.txt
$py bench/networks/suite.py run --opsched $bin --out $R/suite/no-attention --models $M \
  --peers "" --opsched-args="--ablate attention" --configs 1:tf32 --budget-s $(( 530 - $(el) )) > $R/ablate.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
$py bench/networks/suite.py ablation $R/suite $R/suite/no-attention >> $R/ablate.log 2>&1
echo "all done $(el)s" | tee -a $R/times.txt
rm -f $R/suite/*.db $R/suite/no-attention/*.db $R/prof/*.db
tar -czf $OUT/r.tgz -C /tmp r
