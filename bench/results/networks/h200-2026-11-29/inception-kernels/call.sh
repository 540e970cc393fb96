#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 3833f3b)
# Batch 16 TF32, kernel by kernel, for the inception family, slower than torch.compile there
# (cnn-coverage/): opsched's kernels (one replay of the deployed NHWC graph, verdicts logged)
# and torch.compile's (an earlier call of this script, whose opsched half lacked --compare),
# read by ncu; per-layer profiles of both.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/kernels; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
NCU="/usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv"
for m in inception_v3 googlenet; do
  S=16x3x224x224; [ $m = inception_v3 ] && S=16x3x299x299
  OPSCHED_LOG=debug OPSCHED_CUDA_PROFILE_NODES=40 timeout 70 $NCU --profile-from-start off $bin run bench/networks/models/$m.onnx \
    --shapes input:$S --layout nhwc --compare sequential --iters 10 --format csv > $R/kernels/opsched-$m.csv 2> $R/kernels/opsched-$m.err
  $py bench/profiling/kernels.py summary $R/kernels/opsched-$m.csv > $R/kernels/opsched-$m.txt 2>&1
  $py bench/profiling/kernels.py summary --order $R/kernels/opsched-$m.csv > $R/kernels/opsched-$m.order.txt 2>&1
  echo "ncu opsched $m rc=$? $(head -1 $R/kernels/opsched-$m.txt) $(el)s" | tee -a $R/times.txt
done
for m in; do
  [ $(el) -gt 150 ] && break
  timeout $(( 250 - $(el) )) $NCU --profile-from-start off $py bench/profiling/kernels.py torch --model $m --batch 16 --math tf32 \
    > $R/kernels/torch-$m.csv 2> $R/kernels/torch-$m.err
  $py bench/profiling/kernels.py summary $R/kernels/torch-$m.csv > $R/kernels/torch-$m.txt 2>&1
  $py bench/profiling/kernels.py summary --order $R/kernels/torch-$m.csv > $R/kernels/torch-$m.order.txt 2>&1
  echo "ncu torch $m rc=$? $(head -1 $R/kernels/torch-$m.txt) $(el)s" | tee -a $R/times.txt
done
for m in inception_v3 googlenet; do mkdir -p $R/profile/$m
  timeout 60 $bin profile bench/networks/models/$m.onnx --batch 16 --layout nhwc --check off \
    --min-ms 100 --out-dir $R/profile/$m --force > $R/profile/$m.log 2>&1
  echo "profile $m rc=$? $(el)s" | tee -a $R/times.txt
done
xz -9 $R/kernels/*.csv 2>/dev/null
echo "done $(el)s" | tee -a $R/times.txt
