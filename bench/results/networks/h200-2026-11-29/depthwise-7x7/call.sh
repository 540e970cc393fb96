#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 7e3d238)
# The four-channel depthwise kernel's 7x7 tiles and the fixed-function activation kernels:
# the GPU tests that run them; ConvNeXt-T at batch 16 (fp16, TF32) and batch 1 with torch.compile,
# its planner's verdicts; MobileNetV3-Small batch 1 TF32 with torch.compile.
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
m=convnext_tiny
for cfg in "16 fp16" "16 tf32"; do
  set -- $cfg; mkdir -p $R/profile/$m-b$1-$2
  OPSCHED_LOG=debug timeout 50 $bin profile bench/networks/models/$m.onnx --batch $1 --math $2 --layout nhwc --check on \
    --min-ms 100 --out-dir $R/profile/$m-b$1-$2 --force > $R/profile/$m-b$1-$2.log 2>&1
  echo "profile $m b$1 $2 rc=$? $(grep -E 'CUDA Graph Latency' $R/profile/$m-b$1-$2.log | cut -c1-90) $(el)s" | tee -a $R/times.txt
done
timeout 200 $py bench/networks/suite.py run --opsched $bin --out $R/cnx --models $m \
  --peers torch_compile --configs 16:fp16,16:tf32,1:fp16 --budget-s 190 --hard-limit-s 195 > $R/cnx.log 2>&1
$py bench/networks/suite.py report $R/cnx >> $R/cnx.log 2>&1
echo "suite convnext $(el)s" | tee -a $R/times.txt
timeout $(( 430 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/b1 --models mobilenet_v3_small,$m \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 415 - $(el) )) --hard-limit-s $(( 425 - $(el) )) > $R/b1.log 2>&1
$py bench/networks/suite.py report $R/b1 >> $R/b1.log 2>&1
echo "suite b1 $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
