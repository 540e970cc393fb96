#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at e3703df; code as 87896f6)
# The landed prologue activation (its own instantiation of the four-channel depthwise kernel)
# and copies through the element-wise driver: the GPU tests; MobileNetV2's batch-16 plan with
# verdicts; the suite at batch 16 TF32 with torch.compile; the act-prologue ablation; batch 1.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_exec_gpu test_cuda_gpu test_cuda_ops_gpu; do
  timeout 100 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
m=mobilenet_v2; mkdir -p $R/profile/$m
OPSCHED_LOG=debug timeout 60 $bin profile bench/networks/models/$m.onnx --batch 16 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/$m --force > $R/profile/$m.log 2>&1
echo "profile $m rc=$? $(grep -E 'CUDA Graph Latency|Numerics' $R/profile/$m.log | cut -c1-90 | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
timeout 200 $py bench/networks/suite.py run --opsched $bin --out $R/b16 --models mobilenet_v2,mobilenet_v3_large,efficientnet_b0,shufflenet_v2_x1_0 \
  --peers torch_compile --configs 16:tf32 --budget-s 180 --hard-limit-s 195 > $R/b16.log 2>&1
$py bench/networks/suite.py report $R/b16 >> $R/b16.log 2>&1
echo "suite b16 $(el)s" | tee -a $R/times.txt
timeout 45 $py bench/networks/suite.py run --opsched $bin --out $R/b16/no-act-prologue --models mobilenet_v2,mobilenet_v3_large \
  --peers "" --opsched-args="--ablate act-prologue" --configs 16:tf32 --budget-s 38 --hard-limit-s 43 > $R/ablate.log 2>&1
$py bench/networks/suite.py ablation $R/b16 $R/b16/no-act-prologue >> $R/ablate.log 2>&1
echo "ablate act-prologue $(el)s" | tee -a $R/times.txt
timeout $(( 430 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/b1 --models mobilenet_v3_large,mobilenet_v2 \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 400 - $(el) )) --hard-limit-s $(( 425 - $(el) )) > $R/b1.log 2>&1
$py bench/networks/suite.py report $R/b1 >> $R/b1.log 2>&1
echo "suite b1 $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
