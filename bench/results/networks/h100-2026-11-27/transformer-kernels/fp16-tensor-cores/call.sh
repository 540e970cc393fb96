#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h100-x1, timeout 540 s) after
#   make build && scripts/gpu-carry.sh build   (at 9dcdac4)
# The tensor-core attention's GPU test, then the fp16 transformer suite
# against torch.compile and its tensor-core ablation, in one call.
nvidia-smi -L | grep -q H100 || exit 3
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=$OUT/r; mkdir -p $R; gpu_env_write $R > /dev/null
timeout 100 .carry/tests/test_exec_gpu > $R/test_exec_gpu.log 2>&1; echo "test_exec_gpu rc=$? $(el)s" | tee -a $R/rc.txt
grep "attention .*fp16\|attention .*bf16" $R/test_exec_gpu.log | head -12
timeout 300 $py bench/networks/suite.py run --opsched $bin --out $R/suite \
  --models bert_base_s128,gpt2_s128,distilbert_s128,vit_b_16,vit_b_32 \
  --peers torch_compile --configs 1:fp16 --budget-s 270 > $R/suite.log 2>&1
echo "suite fp16 $(el)s" | tee -a $R/rc.txt
timeout 150 $py bench/networks/suite.py run --opsched $bin --out $R/suite/no-tensor-cores --models bert_base_s128,gpt2_s128 \
  --peers "" --opsched-args="--ablate tensor-cores" --configs 1:fp16 --budget-s 130 > $R/ablate.log 2>&1
$py bench/networks/suite.py ablation $R/suite $R/suite/no-tensor-cores >> $R/ablate.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
echo "all $(el)s" | tee -a $R/rc.txt
rm -f $R/suite/*.db $R/suite/no-tensor-cores/*.db
tar -C $OUT -czf $OUT/r.tgz r
grep '^|\|^- batch' $R/suite/summary.md | head -10; grep '^|' $R/suite/ablation.md
