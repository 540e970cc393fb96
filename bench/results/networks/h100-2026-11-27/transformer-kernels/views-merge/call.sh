#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h100-x1) after
#   make build && scripts/gpu-carry.sh build   (at 6e0f12b)
# GPU tests, then the transformer suite against torch.compile (batch 1, TF32)
# and the projection-merge ablation, in one call.
nvidia-smi -L | grep -q H100 || exit 3
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=$OUT/r; mkdir -p $R; gpu_env_write $R > /dev/null
timeout 100 .carry/tests/test_exec_gpu > $R/test_exec_gpu.log 2>&1; echo "test_exec_gpu rc=$? $(el)s" | tee -a $R/rc.txt
timeout 100 .carry/tests/test_conformance > $R/test_conformance.log 2>&1; echo "test_conformance rc=$? $(el)s" | tee -a $R/rc.txt
timeout 380 $py bench/networks/suite.py run --opsched $bin --out $R/suite \
  --models bert_base_s128,distilbert_s128,gpt2_s128,vit_b_16,vit_b_32,swin_t \
  --peers torch_compile --configs 1:tf32 --budget-s 330 > $R/suite.log 2>&1
echo "suite $(el)s" | tee -a $R/rc.txt
timeout 80 $py bench/networks/suite.py run --opsched $bin --out $R/suite/no-projections --models bert_base_s128,distilbert_s128 \
  --peers "" --opsched-args="--ablate projections" --configs 1:tf32 --budget-s 60 > $R/ablate.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
$py bench/networks/suite.py ablation $R/suite $R/suite/no-projections >> $R/ablate.log 2>&1
echo "all $(el)s" | tee -a $R/rc.txt
rm -f $R/suite/*.db $R/suite/no-projections/*.db
tar -C $OUT -czf $OUT/r.tgz r
