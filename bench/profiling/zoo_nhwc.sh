#!/usr/bin/env bash
# Zoo end-to-end profiling in NHWC against PyTorch (one call): every zoo model profiled at batch
# 1 and 16 (TF32, cuDNN heuristics, BatchNorm folded, NHWC): free-running
# and CUDA-graph end to end, numerics against the CPU backend, the layers
# CSV, and attribution with every distinct layer timed alone (--isolated);
# then the PyTorch peers on the same GPU with BatchNorm folded too: eager,
# CUDA graph, each also channels_last, and torch.compile(reduce-overhead)
# at batch 1; report.txt from bench/profiling/analyze_nhwc.py.
#   bash bench/profiling/zoo_nhwc.sh OUTDIR     (after tar -C .carry -xJf .carry/carry.tar.xz)
set -uo pipefail
out=${1:-/tmp/profiling_nhwc}
budget=${BUDGET_S:-570}
mkdir -p "$out/profile"
. "$(dirname "$0")/../gpu_env.sh"
left() { echo $((budget - SECONDS)); }
gpu_env_write "$out"
models=${MODELS:-"alexnet vgg16 resnet50 resnet152 densenet121 googlenet inception_v3 squeezenet1_1"}
echo "== opsched profile, batch 1 and 16, NHWC"
for m in $models; do
  [ $(left) -lt 260 ] && { echo "skip $m (time)"; continue; }
  t0=$SECONDS
  timeout 90 $bin profile $m --batch 1,16 --math tf32 --layout nhwc --bn fold --isolated --check on \
      --host-layers off --warmup-ms 200 --min-ms 400 --out-dir "$out/profile" > "$out/profile_$m.log" 2>&1
  echo "$m rc=$? $((SECONDS - t0))s"
  grep -E "Numerics|Latency|Attribution|alone|graph" "$out/profile_$m.log" | head -12
done
echo "== PyTorch: batch 1 (eager, graph, -cl, compile) and 16 (eager, graph, -cl)"
pm=$(echo $models | tr ' ' ',')
t=$(( $(left) - 100 )); [ $t -lt 30 ] && t=30
timeout $t $py bench/peers/torch_models.py --models $pm --batch 1 \
    --modes eager,graph,eager-cl,graph-cl,compile --math tf32 --fold-bn --warmup-ms 200 --min-ms 400 \
    --out "$out/torch_b1.csv" > "$out/torch_b1.log" 2>&1
echo "torch b1 rc=$?"; grep -E 'median|FAILED' "$out/torch_b1.log"
t=$(( $(left) - 5 )); [ $t -lt 20 ] && t=20
timeout $t $py bench/peers/torch_models.py --models $pm --batch 16 \
    --modes eager,graph,eager-cl,graph-cl --math tf32 --fold-bn --warmup-ms 200 --min-ms 400 \
    --out "$out/torch_b16.csv" > "$out/torch_b16.log" 2>&1
echo "torch b16 rc=$?"; grep -E 'median|FAILED' "$out/torch_b16.log"
python3 "$(dirname "$0")/analyze_nhwc.py" "$out" > "$out/report.txt"
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
