#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 5ecf013)
# Batch 16 in fp16 over the CNN set with torch.compile in the same call (never measured
# before); MobileNetV3-Large's batch-1 plan layer by layer with its verdicts.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
m=mobilenet_v3_large; mkdir -p $R/profile/$m
OPSCHED_LOG=debug timeout 40 $bin profile bench/networks/models/$m.onnx --batch 1 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/$m --force > $R/profile/$m.log 2>&1
echo "profile $m rc=$? $(grep -E 'CUDA Graph Latency' $R/profile/$m.log | cut -c1-90) $(el)s" | tee -a $R/times.txt
M=resnet50,mobilenet_v2,mobilenet_v3_large,efficientnet_b0,shufflenet_v2_x1_0,convnext_tiny,regnet_y_1_6gf,googlenet,mnasnet1_0
timeout $(( 415 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/b16-fp16 --models $M \
  --peers torch_compile --configs 16:fp16 --budget-s $(( 395 - $(el) )) --hard-limit-s $(( 405 - $(el) )) > $R/b16-fp16.log 2>&1
$py bench/networks/suite.py report $R/b16-fp16 >> $R/b16-fp16.log 2>&1
echo "suite b16 fp16 $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
