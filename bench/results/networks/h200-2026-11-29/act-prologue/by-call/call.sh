#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at e4cf1ee)
# The prologue activation (the depthwise kernel applies its 1x1 producer's Relu6/HardSwish as it
# reads): test_exec_gpu; MobileNetV2's batch-16 plan with verdicts; the suite at batch 16 and at
# batch 1 TF32 on the mobile CNNs with torch.compile; the act-prologue ablation (opsched alone).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
timeout 150 .carry/tests/test_exec_gpu > $R/tests/test_exec_gpu.log 2>&1
echo "test_exec_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/test_exec_gpu.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
m=mobilenet_v2; mkdir -p $R/profile/$m
OPSCHED_LOG=debug timeout 60 $bin profile bench/networks/models/$m.onnx --batch 16 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/$m --force > $R/profile/$m.log 2>&1
echo "profile $m rc=$? $(grep -E 'CUDA Graph Latency|Numerics' $R/profile/$m.log | cut -c1-90 | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
M=mobilenet_v2,mobilenet_v3_large,efficientnet_b0,mnasnet1_0
timeout 200 $py bench/networks/suite.py run --opsched $bin --out $R/b16 --models $M \
  --peers torch_compile --configs 16:tf32 --budget-s 170 --hard-limit-s 195 > $R/b16.log 2>&1
$py bench/networks/suite.py report $R/b16 >> $R/b16.log 2>&1
echo "suite b16 $(el)s" | tee -a $R/times.txt
timeout 60 $py bench/networks/suite.py run --opsched $bin --out $R/b16/no-act-prologue --models mobilenet_v2,mobilenet_v3_large \
  --peers "" --opsched-args="--ablate act-prologue" --configs 16:tf32 --budget-s 50 --hard-limit-s 58 > $R/ablate.log 2>&1
$py bench/networks/suite.py ablation $R/b16 $R/b16/no-act-prologue >> $R/ablate.log 2>&1
echo "ablate act-prologue $(el)s" | tee -a $R/times.txt
M1=mobilenet_v3_large,mobilenet_v3_small,mobilenet_v2,efficientnet_b0
timeout $(( 500 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/b1 --models $M1 \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 465 - $(el) )) --hard-limit-s $(( 495 - $(el) )) > $R/b1.log 2>&1
$py bench/networks/suite.py report $R/b1 >> $R/b1.log 2>&1
echo "suite b1 $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
