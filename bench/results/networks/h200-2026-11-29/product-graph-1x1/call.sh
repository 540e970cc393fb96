#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at ac925c3)
# 1x1 convolutions and Gemm epilogues through the cuDNN product graph / cuBLASLt, stage costs
# in row-major regions: the GPU tests that run them; MobileNetV3 batch 1 TF32 with torch.compile
# and the matmul-graph ablation; ConvNeXt-T fp16 batch 16 with torch.compile, both sides' kernels.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
NCU="/usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv"
R=/tmp/r; mkdir -p $R/tests $R/kernels $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_exec_gpu test_sched_exec_gpu; do
  timeout 100 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
M=mobilenet_v3_large,mobilenet_v3_small
timeout 45 $py bench/networks/suite.py run --opsched $bin --out $R/b1/no-matmul-graph --models $M \
  --peers "" --opsched-args="--ablate matmul-graph" --configs 1:tf32 --budget-s 38 --hard-limit-s 42 > $R/ablate.log 2>&1
echo "ablate matmul-graph $(el)s" | tee -a $R/times.txt
timeout 110 $py bench/networks/suite.py run --opsched $bin --out $R/b1 --models $M \
  --peers torch_compile --configs 1:tf32 --budget-s 100 --hard-limit-s 105 > $R/b1.log 2>&1
$py bench/networks/suite.py report $R/b1 >> $R/b1.log 2>&1
$py bench/networks/suite.py ablation $R/b1 $R/b1/no-matmul-graph >> $R/ablate.log 2>&1
echo "suite b1 $(el)s" | tee -a $R/times.txt
m=convnext_tiny
timeout 80 $py bench/networks/suite.py run --opsched $bin --out $R/b16 --models $m \
  --peers torch_compile --configs 16:fp16 --budget-s 70 --hard-limit-s 75 > $R/b16.log 2>&1
$py bench/networks/suite.py report $R/b16 >> $R/b16.log 2>&1
echo "suite b16 fp16 $(el)s" | tee -a $R/times.txt
mkdir -p $R/profile/$m
OPSCHED_LOG=debug timeout 50 $bin profile bench/networks/models/$m.onnx --batch 16 --math fp16 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/$m --force > $R/profile/$m.log 2>&1
echo "profile $m rc=$? $(grep -E 'CUDA Graph Latency' $R/profile/$m.log | cut -c1-90) $(el)s" | tee -a $R/times.txt
OPSCHED_CUDA_PROFILE_NODES=20 timeout 50 $NCU --profile-from-start off $bin run bench/networks/models/$m.onnx \
  --shapes input:16x3x224x224 --math fp16 --layout nhwc --compare sequential --iters 10 --format csv > $R/kernels/opsched-$m.csv 2> $R/kernels/opsched-$m.err
$py bench/profiling/kernels.py summary $R/kernels/opsched-$m.csv > $R/kernels/opsched-$m.txt 2>&1
$py bench/profiling/kernels.py summary --order $R/kernels/opsched-$m.csv > $R/kernels/opsched-$m.order.txt 2>&1
echo "ncu opsched $m $(head -1 $R/kernels/opsched-$m.txt) $(el)s" | tee -a $R/times.txt
timeout $(( 420 - $(el) )) $NCU --profile-from-start off $py bench/profiling/kernels.py torch --model $m --batch 16 --math fp16 \
  > $R/kernels/torch-$m.csv 2> $R/kernels/torch-$m.err
$py bench/profiling/kernels.py summary $R/kernels/torch-$m.csv > $R/kernels/torch-$m.txt 2>&1
$py bench/profiling/kernels.py summary --order $R/kernels/torch-$m.csv > $R/kernels/torch-$m.order.txt 2>&1
echo "ncu torch $m $(head -1 $R/kernels/torch-$m.txt) $(el)s" | tee -a $R/times.txt
xz -9 $R/kernels/*.csv 2>/dev/null
echo "done $(el)s" | tee -a $R/times.txt
