#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h100-x1) after
#   make build && scripts/gpu-carry.sh build
# cuDNN's fused attention: the GPU test, BERT's per-node choice in both
# layouts (debug log, cuDNN's own warnings), the fp16 suite against
# torch.compile and the cudnn-attention ablation.
nvidia-smi -L | grep -q H100 || exit 3
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=$OUT/r; mkdir -p $R; gpu_env_write $R > /dev/null
timeout 120 .carry/tests/test_exec_gpu > $R/test_exec_gpu.log 2>&1; echo "test_exec_gpu rc=$? $(el)s" | tee -a $R/rc.txt
grep "attention .*fp16\|attention .*bf16\|FAILED\|ERROR\|LINE" $R/test_exec_gpu.log | grep -v "multiple of 8" | head -24
for L in nchw nhwc; do
CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=$R/cudnn-$L.log OPSCHED_LOG=debug timeout 100 $bin profile bench/networks/models/bert_base_s128.onnx --shapes input_ids:1x128,attention_mask:1x128 \
  --math fp16 --layout $L --min-ms 30 --out-dir $R/prof-bert-$L --force > $R/prof-bert-$L.log 2>&1; echo "profile $L rc=$? $(el)s" | tee -a $R/rc.txt
grep -i "attention\|sdpa" $R/prof-bert-$L.log | grep -v "^ *[0-9]" | sed 's/layer\.[0-9]*/layer.N/' | sort | uniq -c | head -8
grep -i "numerics\|graph lat" $R/prof-bert-$L.log | head -4
head -c 1500 $R/cudnn-$L.log; echo; gzip -f $R/cudnn-$L.log
done
timeout 200 $py bench/networks/suite.py run --opsched $bin --out $R/suite \
  --models bert_base_s128,gpt2_s128,distilbert_s128 \
  --peers torch_compile --configs 1:fp16 --budget-s 190 > $R/suite.log 2>&1
echo "suite fp16 $(el)s" | tee -a $R/rc.txt
timeout 110 $py bench/networks/suite.py run --opsched $bin --out $R/suite/no-cudnn-attention --models bert_base_s128,gpt2_s128 \
  --peers "" --opsched-args="--ablate cudnn-attention" --configs 1:fp16 --budget-s 95 > $R/ablate.log 2>&1
$py bench/networks/suite.py ablation $R/suite $R/suite/no-cudnn-attention >> $R/ablate.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
echo "all $(el)s" | tee -a $R/rc.txt
rm -f $R/suite/*.db $R/suite/no-cudnn-attention/*.db
tar -C $OUT -czf $OUT/r.tgz r
grep '^|\|^- batch' $R/suite/summary.md | head -10; grep '^|' $R/suite/ablation.md
