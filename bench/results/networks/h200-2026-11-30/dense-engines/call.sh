#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at e21a542)
# First GPU run of the persistent cuDNN plan store, the timed engines of dense convolutions and
# fp32 attention in split TF32: the GPU tests; EfficientNet-B1 batch 16 fp16 run twice on one
# fresh plan store (timestamped logs); BERT-base s384 batch 1 TF32 with and without the tensor
# cores for attention (opsched alone); ResNet-18, FCN-ResNet50, EfficientNetV2-S batch 16 fp16
# against torch.compile, then again with --ablate engines (opsched alone); MobileNetV2 batch 1
# fp16 measured again (its peer moved between calls); then the coverage of the CNN set goes on.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=$(( T0 + 530 ))
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/profile $R/coverage; gpu_env_write $R > /dev/null
cp .carry/prev/*.csv $R/coverage/ 2>/dev/null
trap 'find $R -name "*.db" -delete; tar -czf $OUT/r.tgz -C /tmp r' EXIT
export OPSCHED_PLAN_STORE=/tmp/opsched-plans.sqlite
rm -f $OPSCHED_PLAN_STORE*
stamp() { $py -u -c 'import sys,time
t=time.time()
for l in sys.stdin: print("%7.2f %s" % (time.time()-t, l), end="")'; }
for t in test_cuda_gpu test_exec_gpu; do
  timeout 150 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
  grep -E '^\[  FAILED  \] test' $R/tests/$t.log | head -5 >> $R/times.txt
done
x=bench/networks/models/efficientnet_b1.onnx
for k in 1 2; do
  OPSCHED_LOG=debug timeout 100 $bin run $x --shapes input:16x3x240x240 --math fp16 \
    --db $R/effb1.db --backend cuda --min-ms 200 --warmup-ms 100 2>&1 | stamp > $R/profile/effb1-run$k.log
  echo "effb1 run $k: $(grep -E 'cuDNN plans|stage costs|Latency' $R/profile/effb1-run$k.log | cut -c1-160 | tr '\n' ' ') $(tail -1 $R/profile/effb1-run$k.log | cut -c1-10) $(el)s" | tee -a $R/times.txt
  rm -f $R/effb1.db*
done
CNNS=resnet18,resnet50,resnext50_32x4d,wide_resnet50_2,vgg16,densenet121,googlenet,inception_v3,squeezenet1_1,mobilenet_v2,mobilenet_v3_small,mobilenet_v3_large,mnasnet1_0,shufflenet_v2_x1_0,efficientnet_b0,efficientnet_b1,efficientnet_b3,efficientnet_v2_s,regnet_x_400mf,regnet_y_1_6gf,regnet_y_8gf,convnext_tiny,convnext_small,fcn_resnet50,lraspp_mobilenet_v3_large
suite() {  # suite OUT LOG suite-args...
  local o=$1 l=$2; shift 2
  local left=$(( END - $(date +%s) ))
  [ $left -lt 40 ] && { echo "skip $o (no time) $(el)s" | tee -a $R/times.txt; return; }
  timeout $left $py bench/networks/suite.py run --opsched $bin --out $o \
    --budget-s $(( left - 35 )) --hard-limit-s $(( left - 5 )) "$@" >> $l 2>&1
  echo "$(basename $o) rc=$? $(el)s" | tee -a $R/times.txt
}
suite $R/attention-tf32/full $R/attention.log --models bert_base_s384 --configs 1:tf32 --peers ""
suite $R/attention-tf32/no-tensor-cores $R/attention.log --models bert_base_s384 --configs 1:tf32 --peers "" --opsched-args="--ablate tensor-cores"
D=resnet18,fcn_resnet50,efficientnet_v2_s
suite $R/dense-engines/full $R/engines.log --models $D --configs 16:fp16 --peers torch_compile
suite $R/dense-engines/no-engine-timing $R/engines.log --models $D --configs 16:fp16 --peers "" --opsched-args="--ablate engines"
suite $R/mobilenet-v2-again $R/mbv2.log --models mobilenet_v2 --configs 1:fp16 --peers torch_compile
suite $R/coverage $R/coverage.log --models $CNNS --configs 1:tf32,16:tf32,16:fp16 --peers torch_compile --retry-errors
$py bench/networks/suite.py report $R/coverage > $R/coverage-report.txt 2>&1
ls -la $OPSCHED_PLAN_STORE* >> $R/times.txt 2>&1; xz -c $OPSCHED_PLAN_STORE > $R/plans.sqlite.xz
echo "done $(el)s" | tee -a $R/times.txt
