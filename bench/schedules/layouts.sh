#!/usr/bin/env bash
# Layout and algorithm policy on the H100 at batch 1, opsched and PyTorch in
# one call: `opsched run --compare sequential,greedy` for six zoo models
# in NCHW and NHWC with cuDNN's heuristic and with `find` (timed choice);
# googlenet's measured IOS search in NHWC; then PyTorch eager, CUDA graph and
# torch.compile(reduce-overhead), each also with the model and input in
# channels_last.  TF32 convolutions, BatchNorm folded on both sides.
#   bash bench/schedules/layouts.sh OUTDIR      (after scripts/gpu-carry.sh build)
set -uo pipefail
out=${1:-/tmp/layouts}
budget=${BUDGET_S:-560}
mkdir -p "$out"
. "$(dirname "$0")/../gpu_env.sh"
left() { echo $((budget - SECONDS)); }
gpu_env_write "$out"
models=${MODELS:-"resnet50 googlenet inception_v3 squeezenet1_1 densenet121 vgg16"}
echo "== opsched run --compare sequential,greedy (batch 1)"
for m in $models; do
  for cfg in "nchw heuristic" "nhwc heuristic" "nchw find" "nhwc find"; do
    set -- $cfg
    [ $(left) -lt 300 ] && { echo "skip $m $cfg (time)"; continue; }
    timeout 60 $bin run $m --compare sequential,greedy --batch 1 --math tf32 --layout $1 --algo $2 \
        --warmup-ms 100 --min-ms 200 > "$out/run_${m}_$1_$2.log" 2>&1
    echo "$m $1 $2 rc=$?: $(grep -E '^(sequential|greedy) ' "$out/run_${m}_$1_$2.log" | tr -s ' ' | tr '\n' '|')"
  done
done
echo "== googlenet: measured IOS search in NHWC, then run"
timeout 90 $bin schedule googlenet --cost measure --batch 1 --math tf32 --layout nhwc --stage-ms 2,3 \
    --db "$out/stages.db" --quiet -o "$out/googlenet_nhwc_ios.json" > "$out/search_googlenet_nhwc.log" 2>&1
echo "search rc=$? $(grep -E '^  [0-9.]+ s,' "$out/search_googlenet_nhwc.log" | head -1)"
timeout 60 $bin run googlenet --compare sequential,greedy,ios --batch 1 --math tf32 --layout nhwc \
    --db "$out/stages.db" --min-ms 300 > "$out/run_googlenet_nhwc_ios.log" 2>&1
echo "run rc=$?"; grep -E '^(sequential|greedy|ios) ' "$out/run_googlenet_nhwc_ios.log"
echo "== PyTorch (batch 1)"
t=$(( $(left) - 10 )); [ $t -lt 30 ] && t=30
timeout $t $py bench/peers/torch_models.py --models resnet50,googlenet,inception_v3,vgg16 --batch 1 \
    --modes eager,graph,eager-cl,graph-cl,compile,compile-cl --compile-models resnet50,googlenet,inception_v3 \
    --math tf32 --fold-bn --warmup-ms 200 --min-ms 400 --out "$out/torch_models.csv" > "$out/torch_models.log" 2>&1
echo "torch rc=$?"; grep -E 'median|FAILED' "$out/torch_models.log"
rm -f "$out"/stages.db*
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
