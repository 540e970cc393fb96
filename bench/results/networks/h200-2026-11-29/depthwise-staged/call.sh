#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at a604c81)
# The staged depthwise kernel (input patch in shared memory) on a GPU for the first time, and in
# the planner's timed list: the GPU tests; ConvNeXt-T batch 16 fp16 verdicts; with torch.compile:
# ConvNeXt-T batch 16 fp16, batch 1 TF32 and fp16, then CNNs at batch 16 fp16.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_exec_gpu test_cuda_gpu; do
  timeout 100 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
m=convnext_tiny; x=bench/networks/models/$m.onnx; mkdir -p $R/profile/b16-fp16
OPSCHED_LOG=debug timeout 50 $bin profile $x --batch 16 --math fp16 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/b16-fp16 --force > $R/profile/b16-fp16.log 2>&1
echo "profile rc=$? $(grep -E 'CUDA Graph Latency|Programmatic' $R/profile/b16-fp16.log | cut -c1-110 | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
timeout 150 $py bench/networks/suite.py run --opsched $bin --out $R/suite --models $m \
  --peers torch_compile --configs 16:fp16,1:tf32,1:fp16 --budget-s 140 --hard-limit-s 146 > $R/suite-convnext.log 2>&1
echo "suite convnext $(el)s" | tee -a $R/times.txt
timeout $(( 425 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/suite \
  --models efficientnet_b0,mobilenet_v2,resnet50,regnet_y_1_6gf,mobilenet_v3_large --peers torch_compile --configs 16:fp16 \
  --budget-s $(( 410 - $(el) )) --hard-limit-s $(( 418 - $(el) )) > $R/suite-b16.log 2>&1
$py bench/networks/suite.py report $R/suite > $R/report.txt 2>&1
echo "done $(el)s" | tee -a $R/times.txt
