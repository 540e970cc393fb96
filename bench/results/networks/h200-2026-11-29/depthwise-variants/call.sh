#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 2b218cc, after the depthwise variants)
# Short: the session's device time was nearly spent.  test_cuda_gpu (every variant of the
# own depthwise kernel forced); the suite on ConvNeXt-Tiny, MobileNetV2 and MobileNetV3-Small,
# batch 1 TF32, with torch.compile; the depthwise verdicts on ConvNeXt-Tiny (debug log).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/verdicts; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
timeout 55 .carry/tests/test_cuda_gpu > $R/tests/test_cuda_gpu.log 2>&1
echo "test_cuda_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/test_cuda_gpu.log | tr '\n' ' ') $(el)s" >> $R/times.txt
timeout $(( 165 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/suite \
  --models convnext_tiny,mobilenet_v2,mobilenet_v3_small \
  --peers torch_compile --configs 1:tf32 --budget-s 90 > $R/suite.log 2>&1
echo "suite rc=$? $(el)s" >> $R/times.txt
timeout 10 $py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
if [ $(el) -lt 160 ]; then
  OPSCHED_LOG=debug timeout $(( 178 - $(el) )) $bin profile bench/networks/models/convnext_tiny.onnx --batch 1 --layout nhwc \
    --check off --layers off --host-layers off --min-ms 20 --out-dir $R/verdicts > $R/verdicts/convnext_tiny.log 2> $R/verdicts/convnext_tiny.err
  echo "verdicts rc=$? $(el)s" >> $R/times.txt
fi
echo "done $(el)s" >> $R/times.txt
