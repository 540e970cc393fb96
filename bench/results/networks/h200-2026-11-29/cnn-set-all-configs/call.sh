#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200-x4; results in cnn-set-all-configs/ and layernorm-segments/) after
#   make build && scripts/gpu-carry.sh build     (at c4d0a59)
# GPU 0: the GPU tests (the LayerNormalization segment kernel's first run), then ConvNeXt-T batch
# 16 fp16 layer times. GPUs 1-3: the coverage suite, every CNN of the public set at batch 16 and
# 1 in fp16 and TF32 against torch.compile, three shards (resumable: a later call goes on).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
CNNS=convnext_tiny,convnext_small,densenet121,efficientnet_b1,efficientnet_b3,efficientnet_v2_s,regnet_x_400mf,regnet_y_8gf,resnext50_32x4d,wide_resnet50_2,vgg16,squeezenet1_1,mnasnet1_0,fcn_resnet50,lraspp_mobilenet_v3_large,resnet18,resnet50,googlenet,inception_v3,mobilenet_v2,mobilenet_v3_small,mobilenet_v3_large,shufflenet_v2_x1_0,efficientnet_b0,regnet_y_1_6gf
W=$(( 540 - $(el) ))
CUDA_VISIBLE_DEVICES=1,2,3 timeout $W $py bench/networks/suite.py run --opsched $bin --out $R/coverage \
  --models $CNNS --peers torch_compile --configs 16:fp16,1:fp16,16:tf32,1:tf32 --gpus 3 \
  --budget-s $(( W - 45 )) --hard-limit-s $(( W - 8 )) > $R/coverage.log 2>&1 &
SUITE=$!
export CUDA_VISIBLE_DEVICES=0
for t in test_exec_gpu test_cuda_gpu test_conformance test_cuda_ops_gpu; do
  timeout 100 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
m=convnext_tiny; x=bench/networks/models/$m.onnx; mkdir -p $R/profile/b16-fp16
OPSCHED_LOG=debug timeout 60 $bin profile $x --batch 16 --math fp16 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/b16-fp16 --force > $R/profile/b16-fp16.log 2>&1
echo "profile rc=$? $(grep -E 'CUDA Graph Latency|Programmatic' $R/profile/b16-fp16.log | cut -c1-110 | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
wait $SUITE; echo "coverage rc=$? $(el)s" | tee -a $R/times.txt
$py bench/networks/suite.py report $R/coverage > $R/coverage-report.txt 2>&1
echo "done $(el)s" | tee -a $R/times.txt
