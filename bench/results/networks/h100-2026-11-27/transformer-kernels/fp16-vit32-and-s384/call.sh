#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h100-x1, timeout 300 s) with the carry of 9dcdac4
# The rest of the fp16 suite (ViT-B/32, Swin-T) and sequence 384 in TF32,
# against torch.compile in the same call.
nvidia-smi -L | grep -q H100 || exit 3
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=$OUT/r; mkdir -p $R; gpu_env_write $R > /dev/null
timeout 150 $py bench/networks/suite.py run --opsched $bin --out $R/suite \
  --models vit_b_32,swin_t --peers torch_compile --configs 1:fp16 --budget-s 130 > $R/suite.log 2>&1
echo "fp16 $(el)s" | tee -a $R/rc.txt
timeout $(( 270 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/suite \
  --models bert_base_s384,distilbert_s384 --peers torch_compile --configs 1:tf32 --budget-s $(( 250 - $(el) )) >> $R/suite.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
echo "all $(el)s" | tee -a $R/rc.txt
rm -f $R/suite/*.db $R/suite/*.db-*
tar -C $OUT -czf $OUT/r.tgz r
grep '^|\|^- batch' $R/suite/summary.md | head -12
