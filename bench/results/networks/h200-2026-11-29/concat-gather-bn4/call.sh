#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 7aadf8e)
# The Concat gathered by movement runs and the four-channel NHWC batch norm: the GPU tests;
# ShuffleNetV2's and DenseNet-121's plans; the suite at batch 16 and 1 TF32 with torch.compile;
# the concat-gather ablation.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_exec_gpu test_cuda_ops_gpu test_conformance; do
  timeout 100 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
for m in shufflenet_v2_x1_0 densenet121; do mkdir -p $R/profile/$m
OPSCHED_LOG=debug timeout 60 $bin profile bench/networks/models/$m.onnx --batch 16 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/$m --force > $R/profile/$m.log 2>&1
echo "profile $m rc=$? $(grep -E 'CUDA Graph Latency|Numerics' $R/profile/$m.log | cut -c1-90 | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
timeout 130 $py bench/networks/suite.py run --opsched $bin --out $R/b16 --models shufflenet_v2_x1_0,densenet121 \
  --peers torch_compile --configs 16:tf32 --budget-s 115 --hard-limit-s 125 > $R/b16.log 2>&1
$py bench/networks/suite.py report $R/b16 >> $R/b16.log 2>&1
echo "suite b16 $(el)s" | tee -a $R/times.txt
timeout 45 $py bench/networks/suite.py run --opsched $bin --out $R/b16/no-concat-gather --models shufflenet_v2_x1_0,densenet121 \
  --peers "" --opsched-args="--ablate concat-gather" --configs 16:tf32 --budget-s 38 --hard-limit-s 43 > $R/ablate.log 2>&1
$py bench/networks/suite.py ablation $R/b16 $R/b16/no-concat-gather >> $R/ablate.log 2>&1
echo "ablate concat-gather $(el)s" | tee -a $R/times.txt
timeout $(( 430 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/b1 --models shufflenet_v2_x1_0,densenet121 \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 400 - $(el) )) --hard-limit-s $(( 425 - $(el) )) > $R/b1.log 2>&1
$py bench/networks/suite.py report $R/b1 >> $R/b1.log 2>&1
echo "suite b1 $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
