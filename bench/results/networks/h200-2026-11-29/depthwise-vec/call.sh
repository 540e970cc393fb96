#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 9327672)
# The four-channel depthwise kernel: the GPU tests of convolutions and of the executor; per-layer
# profiles of MobileNetV2 and V3-Large at batch 16 with the planner's verdicts logged; the suite
# at batch 16 TF32 over the six modern CNNs slower than torch.compile there, the peer in the same call.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_cuda_gpu test_exec_gpu; do
  timeout 150 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
for m in mobilenet_v2 mobilenet_v3_large; do
  mkdir -p $R/profile/$m
  OPSCHED_LOG=debug timeout 60 $bin profile bench/networks/models/$m.onnx --batch 16 --layout nhwc --check off \
    --min-ms 100 --out-dir $R/profile/$m --force > $R/profile/$m.log 2>&1
  echo "profile $m rc=$? $(grep -E 'CUDA Graph Latency' $R/profile/$m.log | cut -c1-90) $(el)s" | tee -a $R/times.txt
done
B16=mobilenet_v2,mobilenet_v3_large,efficientnet_b0,shufflenet_v2_x1_0,convnext_tiny,densenet121
timeout $(( 500 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/b16 --models $B16 \
  --peers torch_compile --configs 16:tf32 --budget-s $(( 460 - $(el) )) --hard-limit-s $(( 490 - $(el) )) > $R/b16.log 2>&1
$py bench/networks/suite.py report $R/b16 >> $R/b16.log 2>&1
echo "suite b16 $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
