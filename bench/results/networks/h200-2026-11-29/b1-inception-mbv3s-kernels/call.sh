#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 620021f)
# Batch 1 TF32 with torch.compile for the inception family and DenseNet-121 (four-channel
# NHWC pooling, batch norm over its Concat's inputs); MobileNetV3-Small at batch 1 kernel by
# kernel (ncu, both sides) with opsched's verdicts; the pool-vec ablation at batch 16;
# DenseNet-121's batch-16 peer.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/kernels $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
timeout 170 $py bench/networks/suite.py run --opsched $bin --out $R/b1 --models inception_v3,googlenet,densenet121 \
  --peers torch_compile --configs 1:tf32 --budget-s 155 --hard-limit-s 165 > $R/b1.log 2>&1
$py bench/networks/suite.py report $R/b1 >> $R/b1.log 2>&1
echo "suite b1 $(el)s" | tee -a $R/times.txt
NCU="/usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv"
m=mobilenet_v3_small; mkdir -p $R/profile/$m
OPSCHED_LOG=debug timeout 40 $bin profile bench/networks/models/$m.onnx --batch 1 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/$m --force > $R/profile/$m.log 2>&1
echo "profile $m rc=$? $(grep -E 'CUDA Graph Latency' $R/profile/$m.log | cut -c1-90) $(el)s" | tee -a $R/times.txt
OPSCHED_CUDA_PROFILE_NODES=20 timeout 50 $NCU --profile-from-start off $bin run bench/networks/models/$m.onnx \
  --shapes input:1x3x224x224 --layout nhwc --compare sequential --iters 10 --format csv > $R/kernels/opsched-$m.csv 2> $R/kernels/opsched-$m.err
$py bench/profiling/kernels.py summary $R/kernels/opsched-$m.csv > $R/kernels/opsched-$m.txt 2>&1
$py bench/profiling/kernels.py summary --order $R/kernels/opsched-$m.csv > $R/kernels/opsched-$m.order.txt 2>&1
echo "ncu opsched $m $(head -1 $R/kernels/opsched-$m.txt) $(el)s" | tee -a $R/times.txt
timeout 90 $NCU --profile-from-start off $py bench/profiling/kernels.py torch --model $m --batch 1 --math tf32 \
  > $R/kernels/torch-$m.csv 2> $R/kernels/torch-$m.err
$py bench/profiling/kernels.py summary $R/kernels/torch-$m.csv > $R/kernels/torch-$m.txt 2>&1
$py bench/profiling/kernels.py summary --order $R/kernels/torch-$m.csv > $R/kernels/torch-$m.order.txt 2>&1
echo "ncu torch $m $(head -1 $R/kernels/torch-$m.txt) $(el)s" | tee -a $R/times.txt
xz -9 $R/kernels/*.csv 2>/dev/null
timeout 70 $py bench/networks/suite.py run --opsched $bin --out $R/b16/no-pool-vec --models googlenet,inception_v3 \
  --peers "" --opsched-args="--ablate pool-vec" --configs 16:tf32 --budget-s 62 --hard-limit-s 67 > $R/ablate-pool.log 2>&1
echo "ablate pool-vec $(el)s" | tee -a $R/times.txt
timeout $(( 430 - $(el) )) $py bench/networks/suite.py run --opsched $bin --out $R/b16 --models densenet121 \
  --peers torch_compile --configs 16:tf32 --budget-s $(( 415 - $(el) )) --hard-limit-s $(( 425 - $(el) )) > $R/b16.log 2>&1
$py bench/networks/suite.py report $R/b16 >> $R/b16.log 2>&1
echo "suite b16 densenet $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
