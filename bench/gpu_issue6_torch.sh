#!/usr/bin/env bash
# Issue 6, the PyTorch peers on the GPU machine (one call, < 10 min): eager,
# CUDA graph (torch.cuda.graphs) and torch.compile(mode="reduce-overhead")
# for the seven networks of the issue at batch 1 and 16, TF32 convolutions
# (PyTorch's default), cuDNN heuristics (cudnn.benchmark off), BatchNorm
# folded into the convolutions by torch.fx (as opsched's deployed form,
# `--bn fold`, which `opsched run` uses).  randwire and nasnet are not in
# torchvision: they are rebuilt in PyTorch from `opsched info --format json`
# (bench/peers/opsched_torch.py), the same graph opsched runs.
#   bash bench/gpu_issue6_torch.sh OUTDIR     (after scripts/gpu-carry.sh)
set -uo pipefail
out=${1:-/tmp/issue6_torch}
mkdir -p "$out/json"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
py=/opt/torch/.venv/bin/python3
models=${MODELS:-"inception_v3 googlenet squeezenet1_1 resnet50 densenet121 randwire nasnet"}
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit,uuid --format=csv,noheader
  $py -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
} > "$out/env.txt" 2>&1
cat "$out/env.txt"
for m in randwire nasnet; do
  $bin info $m --format json --bn fold > "$out/json/$m.json" 2>"$out/json/$m.err" || echo "info $m failed"
done
t0=$SECONDS
$py bench/peers/torch_models.py --models "${models// /,}" --batch 1,16 --modes eager,graph,compile \
    --math tf32 --fold-bn --graph-json-dir "$out/json" --warmup-ms 300 --min-ms 1000 \
    --out "$out/torch_models.csv" > "$out/torch_models.log" 2>&1
echo "torch rc=$? $((SECONDS - t0))s"; tail -45 "$out/torch_models.log"
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
