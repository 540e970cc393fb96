#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 0ca1dce: a depthwise convolution and the
#   channels-last LayerNorm after it as one kernel)
# test_exec_gpu (the new conv+norm case among them); ConvNeXt-Tiny in strict fp32 NHWC against
# the CPU backend with the planner's verdicts logged; the suite on ConvNeXt-Tiny and -Small,
# batch 1, TF32 and fp16, with torch.compile; opsched alone with and without --ablate conv-norm.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/fp32; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
timeout 120 .carry/tests/test_exec_gpu > $R/tests/test_exec_gpu.log 2>&1
echo "test_exec_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/test_exec_gpu.log | tr '\n' ' ') $(el)s" >> $R/times.txt
m=convnext_tiny
OPSCHED_LOG=debug timeout 60 $bin profile bench/networks/models/$m.onnx --batch 1 --math fp32 --layout nhwc \
  --check on --layers off --host-layers off --cuda-graph off --min-ms 50 --out-dir $R/fp32 > $R/fp32/$m.log 2> $R/fp32/$m.err
echo "$m fp32 nhwc rc=$? $(grep -hE 'Numerics' $R/fp32/$m.log $R/fp32/$m.err) $(el)s" >> $R/times.txt
timeout 300 $py bench/networks/suite.py run --opsched $bin --out $R/suite --models convnext_tiny,convnext_small \
  --peers torch_compile --configs 1:tf32,1:fp16 --budget-s 250 --hard-limit-s $(( 380 - $(el) )) > $R/suite.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
echo "suite $(el)s" >> $R/times.txt
timeout 60 $py bench/networks/suite.py run --opsched $bin --out $R/abl --models convnext_tiny,convnext_small \
  --peers "" --configs 1:tf32 --budget-s 40 --hard-limit-s 55 > $R/abl.log 2>&1
timeout 60 $py bench/networks/suite.py run --opsched $bin --out $R/abl/no-conv-norm --models convnext_tiny,convnext_small \
  --peers "" --opsched-args="--ablate conv-norm" --configs 1:tf32 --budget-s 40 --hard-limit-s 55 >> $R/abl.log 2>&1
$py bench/networks/suite.py ablation $R/abl $R/abl/no-conv-norm >> $R/abl.log 2>&1
echo "ablation $(el)s" >> $R/times.txt
echo "done $(el)s" >> $R/times.txt
