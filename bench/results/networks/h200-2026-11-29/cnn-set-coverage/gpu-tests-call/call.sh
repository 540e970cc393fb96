#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200-x2) after
#   make build && scripts/gpu-carry.sh build     (at f77f065)
# GPU 0: the GPU tests (first run of the grouped implicit GEMM's 64-channel slices and the
# channels-last squeeze-excitation sums), where an opsched run's seconds go (timestamped log),
# RegNetY-8GF batch 16 fp16 layer times, then shard 0 of the coverage suite. GPU 1: shard 1 of
# the coverage suite the whole call: every CNN at batch 1 fp16, batch 1 TF32, batch 16 TF32, then
# the batch 16 fp16 items not yet measured (resumable: .carry/prev holds the earlier rows).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/profile $R/coverage; gpu_env_write $R > /dev/null
cp .carry/prev/*.csv $R/coverage/ 2>/dev/null
trap 'rm -f $R/coverage/*.db; tar -czf $OUT/r.tgz -C /tmp r' EXIT
CNNS=convnext_tiny,convnext_small,densenet121,efficientnet_b1,efficientnet_b3,efficientnet_v2_s,regnet_x_400mf,regnet_y_8gf,resnext50_32x4d,wide_resnet50_2,vgg16,squeezenet1_1,mnasnet1_0,fcn_resnet50,lraspp_mobilenet_v3_large,resnet18,resnet50,googlenet,inception_v3,mobilenet_v2,mobilenet_v3_small,mobilenet_v3_large,shufflenet_v2_x1_0,efficientnet_b0,regnet_y_1_6gf
W=$(( 530 - $(el) ))
suite() {  # suite SHARD WALL
  timeout $2 $py bench/networks/suite.py run --opsched $bin --out $R/coverage --shard $1/2 \
    --models $CNNS --peers torch_compile --configs 1:fp16,1:tf32,16:tf32,16:fp16 --retry-errors \
    --budget-s $(( $2 - 50 )) --hard-limit-s $(( $2 - 8 )) > $R/coverage-$1.log 2>&1
}
CUDA_VISIBLE_DEVICES=1 suite 1 $W &
S1=$!
export CUDA_VISIBLE_DEVICES=0
for t in test_cuda_gpu test_exec_gpu; do
  timeout 120 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
stamp() { $py -u -c 'import sys,time
t=time.time()
for l in sys.stdin: print("%7.2f %s" % (time.time()-t, l), end="")'; }
x=bench/networks/models/efficientnet_b1.onnx
OPSCHED_LOG=debug timeout 90 $bin run $x --shapes input:16x3x240x240 --math fp16 --compare sequential,ios \
  --db $R/phases.db --backend cuda --format csv --min-ms 200 --warmup-ms 100 2>&1 | stamp > $R/profile/phases-effb1.log
echo "phases $(tail -1 $R/profile/phases-effb1.log | cut -c1-60) $(el)s" | tee -a $R/times.txt
rm -f $R/phases.db
for m in regnet_y_8gf; do
  x=bench/networks/models/$m.onnx; mkdir -p $R/profile/$m
  OPSCHED_LOG=debug timeout 70 $bin profile $x --batch 16 --math fp16 --check on \
    --min-ms 100 --out-dir $R/profile/$m --force 2>&1 | stamp > $R/profile/$m.log
  echo "profile $m $(grep -E 'CUDA Graph Latency' $R/profile/$m.log | cut -c1-110 | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
W0=$(( 530 - $(el) ))
[ $W0 -gt 90 ] && suite 0 $W0
wait $S1; echo "coverage done $(el)s" | tee -a $R/times.txt
$py bench/networks/suite.py report $R/coverage > $R/coverage-report.txt 2>&1
echo "done $(el)s" | tee -a $R/times.txt
