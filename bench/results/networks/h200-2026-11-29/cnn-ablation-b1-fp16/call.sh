#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200-x2) after
#   make build && scripts/gpu-carry.sh build     (at f77f065, the binary of cnn-set-coverage/)
# The ablation at batch 1 fp16: opsched alone (no peers) on seven CNNs with parts of the planner
# turned off, one variant at a time; the full planner's rows are cnn-set-coverage's (same binary).
#   no-reductions   --ablate reductions
#   no-fusion       --fuse off and every launch-merging rewrite ablated
#   no-depthwise    --ablate depthwise (cuDNN for every depthwise convolution)
#   nchw-only       --layout nchw (no layout planning: every tensor NCHW)
# GPU 0 and GPU 1 take alternate models; a model's four variants run back to back.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/ablation; gpu_env_write $R > /dev/null
trap 'find $R -name "*.db" -delete; tar -czf $OUT/r.tgz -C /tmp r' EXIT
END=$(( T0 + 500 ))
declare -A ARGS=(
  [no-reductions]="--ablate reductions"
  [no-fusion]="--fuse off --ablate epilogue,chains,residual,se,se-mul,norm-act,conv-norm,act-prologue,gate-product,matmul-graph,norm-concat"
  [no-depthwise]="--ablate depthwise"
  [nchw-only]="--layout nchw")
gpu() {  # gpu K MODEL...
  local k=$1; shift
  for m in "$@"; do
    for v in no-reductions no-fusion no-depthwise nchw-only; do
      left=$(( END - $(date +%s) ))
      [ $left -lt 30 ] && return
      CUDA_VISIBLE_DEVICES=$k timeout $left $py bench/networks/suite.py run --opsched $bin \
        --out $R/ablation/g$k/$v --models $m --configs 1:fp16 --peers "" \
        --opsched-args="${ARGS[$v]}" --budget-s $left --hard-limit-s $(( left - 3 )) \
        >> $R/ablation/g$k.log 2>&1
      echo "gpu $k $m $v rc=$? $(el)s" >> $R/times.txt
    done
  done
}
gpu 0 mobilenet_v2 efficientnet_b0 regnet_y_1_6gf inception_v3 &
gpu 1 mobilenet_v3_large convnext_tiny densenet121 &
wait
echo "done $(el)s" | tee -a $R/times.txt
