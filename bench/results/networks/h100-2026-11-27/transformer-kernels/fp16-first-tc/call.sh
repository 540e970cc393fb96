#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h100-x1) after
#   make build && scripts/gpu-carry.sh build   (at 235b2a6)
# GPU tests (the tensor-core attention against the CPU in fp16 and bf16),
# the transformer suite in fp16 with its tensor-core ablation, then batch 8
# in TF32, against torch.compile in the same call.
nvidia-smi -L | grep -q H100 || exit 3
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=$OUT/r; mkdir -p $R; gpu_env_write $R > /dev/null
timeout 100 .carry/tests/test_exec_gpu > $R/test_exec_gpu.log 2>&1; echo "test_exec_gpu rc=$? $(el)s" | tee -a $R/rc.txt
timeout 100 .carry/tests/test_conformance > $R/test_conformance.log 2>&1; echo "test_conformance rc=$? $(el)s" | tee -a $R/rc.txt
timeout 330 $py bench/networks/suite.py run --opsched $bin --out $R/suite \
  --models bert_base_s128,distilbert_s128,gpt2_s128,vit_b_16,vit_b_32,swin_t \
  --peers torch_compile --configs 1:fp16 --budget-s 290 > $R/suite.log 2>&1
timeout 70 $py bench/networks/suite.py run --opsched $bin --out $R/suite/no-tensor-cores --models bert_base_s128,gpt2_s128 \
  --peers "" --opsched-args="--ablate tensor-cores" --configs 1:fp16 --budget-s 50 > $R/ablate.log 2>&1
$py bench/networks/suite.py ablation $R/suite $R/suite/no-tensor-cores >> $R/ablate.log 2>&1
timeout $(( 570 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/suite \
  --models bert_base_s128,gpt2_s128 --peers torch_compile --configs 8:tf32 --budget-s $(( 540 - $(el) )) >> $R/suite.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
rm -f $R/suite/*.db $R/suite/no-tensor-cores/*.db
tar -C $OUT -czf $OUT/r.tgz r
