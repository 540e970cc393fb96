#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h100-x1) after
#   make build && scripts/gpu-carry.sh build
# The rest of the fp16 transformer suite at batch 1 with cuDNN's fused
# attention, against torch.compile, and GPT-2's cudnn-attention ablation.
nvidia-smi -L | grep -q H100 || exit 3
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=$OUT/r; mkdir -p $R; gpu_env_write $R > /dev/null
timeout 440 $py bench/networks/suite.py run --opsched $bin --out $R/suite \
  --models gpt2_s128,distilbert_s128,vit_b_16,vit_b_32 \
  --peers torch_compile --configs 1:fp16 --budget-s 420 > $R/suite.log 2>&1
echo "suite fp16 $(el)s" | tee -a $R/rc.txt
timeout 70 $py bench/networks/suite.py run --opsched $bin --out $R/suite/no-cudnn-attention --models gpt2_s128,vit_b_16 \
  --peers "" --opsched-args="--ablate cudnn-attention" --configs 1:fp16 --budget-s 60 > $R/ablate.log 2>&1
$py bench/networks/suite.py ablation $R/suite $R/suite/no-cudnn-attention >> $R/ablate.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
echo "all $(el)s" | tee -a $R/rc.txt
rm -f $R/suite/*.db* $R/suite/no-cudnn-attention/*.db*
tar -C $OUT -czf $OUT/r.tgz r
grep '^|\|^- batch' $R/suite/summary.md | head -10; grep '^|' $R/suite/ablation.md
