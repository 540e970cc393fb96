#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 7048abc; the binary of c4d0a59)
# RegNetY-8GF, the one CNN at batch 16 fp16 slower than torch.compile (0.72x): opsched's layer
# times and verdicts, and both sides' kernels under ncu (torch's ncu run overran its 120 s).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
NCU="/usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv"
R=/tmp/r; mkdir -p $R/kernels $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
m=regnet_y_8gf; x=bench/networks/models/$m.onnx; mkdir -p $R/profile/b16-fp16
OPSCHED_LOG=debug timeout 90 $bin profile $x --batch 16 --math fp16 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/b16-fp16 --force > $R/profile/b16-fp16.log 2>&1
echo "profile rc=$? $(grep -E 'CUDA Graph Latency|Programmatic' $R/profile/b16-fp16.log | cut -c1-110 | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
OPSCHED_CUDA_PROFILE_NODES=20 timeout 70 $NCU --profile-from-start off $bin run $x \
  --shapes input:16x3x224x224 --math fp16 --layout nhwc --compare sequential --iters 10 --format csv > $R/kernels/opsched-b16-fp16.csv 2> $R/kernels/opsched-b16-fp16.err
echo "ncu opsched $(el)s" | tee -a $R/times.txt
timeout 120 $NCU --profile-from-start off $py bench/profiling/kernels.py torch --model $m --batch 16 --math fp16 > $R/kernels/torch-b16-fp16.csv 2> $R/kernels/torch-b16-fp16.err
echo "ncu torch $(el)s" | tee -a $R/times.txt
for s in opsched torch; do
  $py bench/profiling/kernels.py summary $R/kernels/$s-b16-fp16.csv > $R/kernels/$s-b16-fp16.txt 2>&1
  $py bench/profiling/kernels.py summary --order $R/kernels/$s-b16-fp16.csv > $R/kernels/$s-b16-fp16.order.txt 2>&1
done
xz -9 $R/kernels/*.csv 2>/dev/null
echo "done $(el)s" | tee -a $R/times.txt
