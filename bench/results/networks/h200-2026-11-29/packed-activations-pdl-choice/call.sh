#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 9c19ec3)
# Float activations and binary ops on the packed element-wise kernels, programmatic launches
# chosen per graph at capture: the GPU tests; ConvNeXt-T batch 16 fp16 (verdicts, kernels);
# with torch.compile: ConvNeXt-T batch 16 fp16 and batch 1 TF32, and the mobile networks PDL
# helped at batch 1 TF32 (is the measured choice still taking it there?).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
NCU="/usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv"
R=/tmp/r; mkdir -p $R/tests $R/kernels $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_exec_gpu test_cuda_gpu test_cuda_ops_gpu test_conformance test_sched_exec_gpu; do
  timeout 100 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
m=convnext_tiny; x=bench/networks/models/$m.onnx; mkdir -p $R/profile/b16-fp16
OPSCHED_LOG=debug timeout 50 $bin profile $x --batch 16 --math fp16 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/b16-fp16 --force > $R/profile/b16-fp16.log 2>&1
echo "profile rc=$? $(grep -E 'CUDA Graph Latency|Programmatic' $R/profile/b16-fp16.log | cut -c1-110 | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
OPSCHED_CUDA_PROFILE_NODES=20 timeout 50 $NCU --profile-from-start off $bin run $x \
  --shapes input:16x3x224x224 --math fp16 --layout nhwc --compare sequential --iters 10 --format csv > $R/kernels/opsched-b16-fp16.csv 2> $R/kernels/opsched-b16-fp16.err
$py bench/profiling/kernels.py summary $R/kernels/opsched-b16-fp16.csv > $R/kernels/opsched-b16-fp16.txt 2>&1
$py bench/profiling/kernels.py summary --order $R/kernels/opsched-b16-fp16.csv > $R/kernels/opsched-b16-fp16.order.txt 2>&1
echo "ncu $(head -1 $R/kernels/opsched-b16-fp16.txt) $(el)s" | tee -a $R/times.txt
xz -9 $R/kernels/*.csv 2>/dev/null
timeout 80 $py bench/networks/suite.py run --opsched $bin --out $R/suite --models $m \
  --peers torch_compile --configs 16:fp16 --budget-s 72 --hard-limit-s 76 > $R/suite-b16.log 2>&1
echo "suite b16 $(el)s" | tee -a $R/times.txt
timeout $(( 425 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/suite \
  --models $m,mobilenet_v2,mobilenet_v3_large,efficientnet_b0 --peers torch_compile --configs 1:tf32 \
  --budget-s $(( 410 - $(el) )) --hard-limit-s $(( 418 - $(el) )) > $R/suite-b1.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite-b1.log 2>&1
echo "suite b1 $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
