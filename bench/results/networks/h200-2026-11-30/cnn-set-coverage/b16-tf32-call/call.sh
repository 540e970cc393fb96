#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200-x2) after
#   make build && scripts/gpu-carry.sh build     (at e212da2)
# The coverage of the CNN set goes on, one shard on each GPU: batch 16 TF32 and the batch 16
# fp16 items not yet measured (resumable: .carry/prev holds the earlier rows, this binary's
# included).  Both share one cuDNN plan store.
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
END=$(( T0 + 515 ))
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
suite $R/coverage $R/coverage-0.log $COV --shard 0/2
wait $S1
$py bench/networks/suite.py report $R/coverage > $R/coverage-report.txt 2>&1
ls -la $OPSCHED_PLAN_STORE* >> $R/times.txt 2>&1
echo "done $(el)s" | tee -a $R/times.txt
