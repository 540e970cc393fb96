#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 616ea37)
# The gated product (a squeeze-and-excitation multiply folded into the 1x1 product after it):
# test_exec_gpu; EfficientNet-B0's batch-16 plan with verdicts; the suite at batch 16 TF32 with
# torch.compile on SE networks; the gate-product ablation (opsched alone); batch 1.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_exec_gpu; do
  timeout 100 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
m=efficientnet_b0; mkdir -p $R/profile/$m
OPSCHED_LOG=debug timeout 60 $bin profile bench/networks/models/$m.onnx --batch 16 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/$m --force > $R/profile/$m.log 2>&1
echo "profile $m rc=$? $(grep -E 'CUDA Graph Latency|Numerics' $R/profile/$m.log | cut -c1-90 | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
M=efficientnet_b0,mobilenet_v3_large,regnet_y_1_6gf,efficientnet_v2_s
timeout 190 $py bench/networks/suite.py run --opsched $bin --out $R/b16 --models $M \
  --peers torch_compile --configs 16:tf32 --budget-s 175 --hard-limit-s 185 > $R/b16.log 2>&1
$py bench/networks/suite.py report $R/b16 >> $R/b16.log 2>&1
echo "suite b16 $(el)s" | tee -a $R/times.txt
timeout 70 $py bench/networks/suite.py run --opsched $bin --out $R/b16/no-gate-product --models $M \
  --peers "" --opsched-args="--ablate gate-product" --configs 16:tf32 --budget-s 60 --hard-limit-s 66 > $R/ablate.log 2>&1
$py bench/networks/suite.py ablation $R/b16 $R/b16/no-gate-product >> $R/ablate.log 2>&1
echo "ablate gate-product $(el)s" | tee -a $R/times.txt
timeout $(( 405 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/b1 --models efficientnet_b0,mobilenet_v3_large \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 380 - $(el) )) --hard-limit-s $(( 400 - $(el) )) > $R/b1.log 2>&1
$py bench/networks/suite.py report $R/b1 >> $R/b1.log 2>&1
echo "suite b1 $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
