#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 3833f3b)
# A product, its bias and an exact GELU as one cuDNN graph: the GPU tests; ConvNeXt's plan
# with its verdicts; the suite at batch 16 and 1 TF32 with torch.compile; the matmul-graph
# ablation; ViT-B/16 at batch 16.
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
m=convnext_tiny; mkdir -p $R/profile/$m
OPSCHED_LOG=debug timeout 60 $bin profile bench/networks/models/$m.onnx --batch 16 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/$m --force > $R/profile/$m.log 2>&1
echo "profile $m rc=$? $(grep -E 'CUDA Graph Latency|Numerics' $R/profile/$m.log | cut -c1-90 | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
timeout 140 $py bench/networks/suite.py run --opsched $bin --out $R/b16 --models convnext_tiny,convnext_small \
  --peers torch_compile --configs 16:tf32 --budget-s 125 --hard-limit-s 135 > $R/b16.log 2>&1
$py bench/networks/suite.py report $R/b16 >> $R/b16.log 2>&1
echo "suite b16 $(el)s" | tee -a $R/times.txt
timeout 45 $py bench/networks/suite.py run --opsched $bin --out $R/b16/no-matmul-graph --models convnext_tiny,convnext_small \
  --peers "" --opsched-args="--ablate matmul-graph" --configs 16:tf32 --budget-s 38 --hard-limit-s 43 > $R/ablate.log 2>&1
$py bench/networks/suite.py ablation $R/b16 $R/b16/no-matmul-graph >> $R/ablate.log 2>&1
echo "ablate matmul-graph $(el)s" | tee -a $R/times.txt
timeout $(( 430 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/b1 --models convnext_tiny,convnext_small,vit_b_16 \
  --peers torch_compile --configs 1:tf32 --budget-s $(( 400 - $(el) )) --hard-limit-s $(( 425 - $(el) )) > $R/b1.log 2>&1
$py bench/networks/suite.py report $R/b1 >> $R/b1.log 2>&1
echo "suite b1 $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
