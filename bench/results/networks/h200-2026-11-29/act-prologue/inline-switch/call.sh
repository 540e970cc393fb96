#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 8235678)
# The prologue activation inline in the four-channel depthwise kernel, timed against the kernel
# kept plus the activation's pass: test_exec_gpu; MobileNetV2's batch-16 plan with verdicts; the
# suite at batch 16 and batch 1 TF32 with torch.compile; the act-prologue ablation (opsched alone).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
timeout 120 .carry/tests/test_exec_gpu > $R/tests/test_exec_gpu.log 2>&1
echo "test_exec_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/test_exec_gpu.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
m=mobilenet_v2; mkdir -p $R/profile/$m
OPSCHED_LOG=debug timeout 60 $bin profile bench/networks/models/$m.onnx --batch 16 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/$m --force > $R/profile/$m.log 2>&1
echo "profile $m rc=$? $(grep -E 'CUDA Graph Latency|Numerics' $R/profile/$m.log | cut -c1-90 | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
timeout 150 $py bench/networks/suite.py run --opsched $bin --out $R/b16 --models mobilenet_v2,mobilenet_v3_large,efficientnet_b0 \
  --peers torch_compile --configs 16:tf32 --budget-s 130 --hard-limit-s 145 > $R/b16.log 2>&1
$py bench/networks/suite.py report $R/b16 >> $R/b16.log 2>&1
echo "suite b16 $(el)s" | tee -a $R/times.txt
timeout 45 $py bench/networks/suite.py run --opsched $bin --out $R/b16/no-act-prologue --models mobilenet_v2,mobilenet_v3_large \
  --peers "" --opsched-args="--ablate act-prologue" --configs 16:tf32 --budget-s 38 --hard-limit-s 43 > $R/ablate.log 2>&1
$py bench/networks/suite.py ablation $R/b16 $R/b16/no-act-prologue >> $R/ablate.log 2>&1
echo "ablate act-prologue $(el)s" | tee -a $R/times.txt
timeout $(( 400 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/b1 --models mobilenet_v3_large,mobilenet_v3_small,mobilenet_v2 \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 370 - $(el) )) --hard-limit-s $(( 395 - $(el) )) > $R/b1.log 2>&1
$py bench/networks/suite.py report $R/b1 >> $R/b1.log 2>&1
echo "suite b1 $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
