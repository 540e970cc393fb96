#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at b2282e5: the conv+norm kernel with its
#   filters in shared memory)
# test_exec_gpu; ConvNeXt-Tiny in strict fp32 NHWC against the CPU backend; the suite on
# ConvNeXt-Tiny and -Small, batch 1 TF32, with torch.compile; then per-layer verdicts of
# ConvNeXt-Tiny and MobileNetV2 under --algo find (cuDNN's engines timed, not its heuristic's
# first) against the default, opsched alone.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/fp32 $R/find; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
timeout 120 .carry/tests/test_exec_gpu > $R/tests/test_exec_gpu.log 2>&1
echo "test_exec_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/test_exec_gpu.log | tr '\n' ' ') $(el)s" >> $R/times.txt
m=convnext_tiny
OPSCHED_LOG=debug timeout 60 $bin profile bench/networks/models/$m.onnx --batch 1 --math fp32 --layout nhwc \
  --check on --layers off --host-layers off --cuda-graph off --min-ms 50 --out-dir $R/fp32 > $R/fp32/$m.log 2> $R/fp32/$m.err
echo "$m fp32 nhwc rc=$? $(grep -hE 'Numerics' $R/fp32/$m.log $R/fp32/$m.err) $(el)s" >> $R/times.txt
timeout 200 $py bench/networks/suite.py run --opsched $bin --out $R/suite --models convnext_tiny,convnext_small \
  --peers torch_compile --configs 1:tf32 --budget-s 150 --hard-limit-s 190 > $R/suite.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
echo "suite $(el)s" >> $R/times.txt
for m in convnext_tiny mobilenet_v2; do
  for a in heuristic find; do
    OPSCHED_LOG=debug timeout 90 $bin profile bench/networks/models/$m.onnx --batch 1 --algo $a --check off \
      --layers off --host-layers off --min-ms 100 --out-dir $R/find/$m-$a --force > $R/find/$m-$a.log 2> $R/find/$m-$a.err
    echo "$m $a rc=$? $(el)s" >> $R/times.txt
  done
done
echo "done $(el)s" >> $R/times.txt
