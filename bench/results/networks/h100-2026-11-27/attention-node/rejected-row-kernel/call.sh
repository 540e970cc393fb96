# The device call (bash .carry/call.sh $OUT on nvidia-h100-x1) after
#   make build && scripts/gpu-carry.sh build   (at 0ab7160)
set -uo pipefail
nvidia-smi -L | grep -q H100 || exit 3
OUT=$1
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r3; rm -rf $R; mkdir -p $R
gpu_env_write $R > /dev/null
for t in test_exec_gpu test_conformance; do timeout 120 .carry/tests/$t > $R/$t.log 2>&1; echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt; done
grep -E "Attention on|FAILED" $R/test_conformance.log | head; grep -E "FAILED" $R/test_exec_gpu.log | head
timeout 60 $bin profile bench/networks/models/bert_base_s128.onnx --batch 1 --min-ms 100 --math tf32 --layout nchw --out-dir $R/prof --force > $R/prof.log 2>&1; echo "profile rc=$? $(el)s" | tee -a $R/times.txt
grep -E "CUDA Graph Lat|Numerics" $R/prof.log | cut -c1-110; grep -E "layer.3/" $R/prof/*layers.csv | cut -d, -f3,11,15 | grep -v ",0,"
M=bert_base_s128,distilbert_s128,gpt2_s128,vit_b_16,vit_b_32,swin_t
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models $M \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 330 - $(el) )) > $R/suite.log 2>&1
echo "suite done $(el)s" | tee -a $R/times.txt
$py bench/networks/suite.py run --opsched $bin --out $R/suite/no-attention --models $M \
  --peers "" --opsched-args="--ablate attention" --configs 1:tf32 --budget-s $(( 450 - $(el) )) > $R/ablate.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
$py bench/networks/suite.py ablation $R/suite $R/suite/no-attention >> $R/ablate.log 2>&1
$py bench/networks/suite.py run --opsched $bin --out $R/suite-fp16 --models bert_base_s128,gpt2_s128,vit_b_16 \
  --peers torch_compile --configs 1:fp16 --budget-s $(( 545 - $(el) )) > $R/fp16.log 2>&1
$py bench/networks/suite.py report $R/suite-fp16 >> $R/fp16.log 2>&1
echo "all done $(el)s" | tee -a $R/times.txt
rm -f $R/suite/*.db $R/suite/no-attention/*.db $R/prof/*.db $R/suite-fp16/*.db
tar -czf $OUT/r.tgz -C /tmp r3
