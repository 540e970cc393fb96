#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 33aa110)
# ConvNeXt-T's in-network costs against the planner's isolated ones: the kernels with every
# activation a launch of its own (--ablate matmul-graph) at batch 16 fp16; what programmatic
# launches do there; batch 1 TF32 (0.86x of torch.compile) verdicts and both sides' kernels.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
NCU="/usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv"
R=/tmp/r; mkdir -p $R/kernels $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
m=convnext_tiny; x=bench/networks/models/$m.onnx
OPSCHED_CUDA_PROFILE_NODES=20 timeout 50 $NCU --profile-from-start off $bin run $x --ablate matmul-graph \
  --shapes input:16x3x224x224 --math fp16 --layout nhwc --compare sequential --iters 10 --format csv > $R/kernels/opsched-b16-fp16-no-mmgraph.csv 2> $R/kernels/opsched-b16-fp16-no-mmgraph.err
$py bench/profiling/kernels.py summary $R/kernels/opsched-b16-fp16-no-mmgraph.csv > $R/kernels/opsched-b16-fp16-no-mmgraph.txt 2>&1
$py bench/profiling/kernels.py summary --order $R/kernels/opsched-b16-fp16-no-mmgraph.csv > $R/kernels/opsched-b16-fp16-no-mmgraph.order.txt 2>&1
echo "ncu b16 fp16 no-mmgraph $(head -1 $R/kernels/opsched-b16-fp16-no-mmgraph.txt) $(el)s" | tee -a $R/times.txt
for a in "" pdl matmul-graph; do
  for cfg in "16 fp16" "1 tf32"; do set -- $cfg
    timeout 40 $bin run $x --shapes input:$1x3x224x224 --math $2 --layout nhwc --compare sequential --format csv ${a:+--ablate $a} > $R/run-b$1-$2-${a:-full}.log 2>&1
    echo "run b$1 $2 ablate=${a:-none} rc=$? $(tail -1 $R/run-b$1-$2-${a:-full}.log | cut -c1-160) $(el)s" | tee -a $R/times.txt
  done
done
mkdir -p $R/profile/b1-tf32
OPSCHED_LOG=debug timeout 40 $bin profile $x --batch 1 --math tf32 --layout nhwc --check on \
  --min-ms 100 --out-dir $R/profile/b1-tf32 --force > $R/profile/b1-tf32.log 2>&1
echo "profile b1 tf32 rc=$? $(el)s" | tee -a $R/times.txt
OPSCHED_CUDA_PROFILE_NODES=20 timeout 50 $NCU --profile-from-start off $bin run $x \
  --shapes input:1x3x224x224 --math tf32 --layout nhwc --compare sequential --iters 10 --format csv > $R/kernels/opsched-b1-tf32.csv 2> $R/kernels/opsched-b1-tf32.err
$py bench/profiling/kernels.py summary --order $R/kernels/opsched-b1-tf32.csv > $R/kernels/opsched-b1-tf32.order.txt 2>&1
echo "ncu opsched b1 $(el)s" | tee -a $R/times.txt
timeout 90 $NCU --profile-from-start off $py bench/profiling/kernels.py torch --model $m --batch 1 --math tf32 \
  > $R/kernels/torch-b1-tf32.csv 2> $R/kernels/torch-b1-tf32.err
$py bench/profiling/kernels.py summary --order $R/kernels/torch-b1-tf32.csv > $R/kernels/torch-b1-tf32.order.txt 2>&1
echo "ncu torch b1 $(el)s" | tee -a $R/times.txt
xz -9 $R/kernels/*.csv 2>/dev/null
echo "done $(el)s" | tee -a $R/times.txt
