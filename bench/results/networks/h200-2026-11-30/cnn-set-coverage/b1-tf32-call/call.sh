#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200-x2) after
#   make build && scripts/gpu-carry.sh build     (at e212da2)
# GPU 0: EfficientNetV2-S batch 16 fp16 layer by layer (where it loses to torch.compile), what
# the split-TF32 attention measures against the float kernel in BERT-base s384 at batch 1 and 8
# (debug log), MobileNetV2 batch 1 fp16 against torch.compile again, then shard 0 of the
# coverage suite. GPU 1: shard 1 of the coverage suite the whole call: the CNN set at batch 1
# TF32, batch 16 TF32, and the batch 16 fp16 items not yet measured (resumable: .carry/prev
# holds the earlier rows).  Both share one cuDNN plan store.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/profile $R/coverage; gpu_env_write $R > /dev/null
[ -d $R/coverage ] && cp -n .carry/prev/*.csv $R/coverage/ 2>/dev/null
trap 'find $R -name "*.db" -delete; tar -czf $OUT/r.tgz -C /tmp r' EXIT
export OPSCHED_PLAN_STORE=/tmp/opsched-plans.sqlite
stamp() { $py -u -c 'import sys,time
t=time.time()
for l in sys.stdin: print("%7.2f %s" % (time.time()-t, l), end="")'; }
CNNS=resnet18,resnet50,resnext50_32x4d,wide_resnet50_2,vgg16,densenet121,googlenet,inception_v3,squeezenet1_1,mobilenet_v2,mobilenet_v3_small,mobilenet_v3_large,mnasnet1_0,shufflenet_v2_x1_0,efficientnet_b0,efficientnet_b1,efficientnet_b3,efficientnet_v2_s,regnet_x_400mf,regnet_y_1_6gf,regnet_y_8gf,convnext_tiny,convnext_small,fcn_resnet50,lraspp_mobilenet_v3_large
END=$(( T0 + 535 ))
suite() {  # suite OUT LOG suite-args...
  local o=$1 l=$2; shift 2
  local left=$(( END - $(date +%s) ))
  [ $left -lt 40 ] && { echo "skip $o (no time) $(el)s" | tee -a $R/times.txt; return; }
  timeout $left $py bench/networks/suite.py run --opsched $bin --out $o \
    --budget-s $(( left - 45 )) --hard-limit-s $(( left - 5 )) "$@" >> $l 2>&1
  echo "$(basename $o) $* rc=$? $(el)s" | tee -a $R/times.txt
}
COV="--models $CNNS --configs 1:tf32,16:tf32,16:fp16 --peers torch_compile --retry-errors"
CUDA_VISIBLE_DEVICES=1 suite $R/coverage $R/coverage-1.log $COV --shard 1/2 &
S1=$!
export CUDA_VISIBLE_DEVICES=0
m=efficientnet_v2_s; mkdir -p $R/profile/$m-b16-fp16
OPSCHED_LOG=debug timeout 80 $bin profile bench/networks/models/$m.onnx --batch 16 --math fp16 --check off \
  --min-ms 100 --out-dir $R/profile/$m-b16-fp16 --force 2>&1 | stamp > $R/profile/$m-b16-fp16.log
echo "profile $m $(grep -E 'CUDA Graph Latency' $R/profile/$m-b16-fp16.log | cut -c1-110) $(el)s" | tee -a $R/times.txt
for b in 1 8; do
  OPSCHED_LOG=debug timeout 60 $bin run bench/networks/models/bert_base_s384.onnx \
    --shapes input_ids:${b}x384,attention_mask:${b}x384 --math tf32 --compare sequential \
    --db $R/bert.db --backend cuda --format csv --min-ms 100 --warmup-ms 50 > $R/profile/bert-b$b-tf32.log 2>&1
  echo "bert b$b: $(grep -c 'split' $R/profile/bert-b$b-tf32.log) split lines; $(grep -m1 'split' $R/profile/bert-b$b-tf32.log | cut -c1-200) $(el)s" | tee -a $R/times.txt
  rm -f $R/bert.db*
done
xz -f $R/profile/*.log
suite $R/mobilenet-v2-again $R/mbv2.log --models mobilenet_v2 --configs 1:fp16 --peers torch_compile
suite $R/coverage $R/coverage-0.log $COV --shard 0/2
wait $S1
$py bench/networks/suite.py report $R/coverage > $R/coverage-report.txt 2>&1
ls -la $OPSCHED_PLAN_STORE* >> $R/times.txt 2>&1
echo "done $(el)s" | tee -a $R/times.txt
