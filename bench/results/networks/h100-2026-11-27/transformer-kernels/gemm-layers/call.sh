#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h100-x1) after
#   make build && scripts/gpu-carry.sh build   (at 5176cb5)
# GPU tests; numerics of three transformers against the CPU backend (profile);
# the transformer suite against torch.compile (batch 1, TF32), in one call.
nvidia-smi -L | grep -q H100 || exit 3
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=$OUT/r; mkdir -p $R; gpu_env_write $R > /dev/null
timeout 100 .carry/tests/test_exec_gpu > $R/test_exec_gpu.log 2>&1; echo "test_exec_gpu rc=$? $(el)s" | tee -a $R/rc.txt
timeout 100 .carry/tests/test_conformance > $R/test_conformance.log 2>&1; echo "test_conformance rc=$? $(el)s" | tee -a $R/rc.txt
for m in "bert_base_s128 input_ids:1x128,attention_mask:1x128" "gpt2_s128 input_ids:1x128,attention_mask:1x128" "vit_b_16 input:1x3x224x224"; do
  set -- $m
  timeout 60 $bin profile bench/networks/models/$1.onnx --shapes $2 --min-ms 30 --math fp32 --out-dir $R/prof --force > $R/prof-$1.log 2>&1
  echo "profile $1 rc=$? $(el)s" | tee -a $R/rc.txt
done
timeout 360 $py bench/networks/suite.py run --opsched $bin --out $R/suite \
  --models bert_base_s128,distilbert_s128,gpt2_s128,vit_b_16,vit_b_32,swin_t \
  --peers torch_compile --configs 1:tf32 --budget-s 320 > $R/suite.log 2>&1
echo "suite $(el)s" | tee -a $R/rc.txt
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
echo "all $(el)s" | tee -a $R/rc.txt
rm -f $R/suite/*.db
tar -C $OUT -czf $OUT/r.tgz r
grep -h "check_rel\|rel.* L2\|numerics" $R/prof-*.log | head -6
grep '^|\|^- batch' $R/suite/summary.md | head -12
