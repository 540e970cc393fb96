#!/usr/bin/env bash
# Issue 4, second call: torch.compile(mode="reduce-overhead") at batch 1 for
# every zoo model, and opsched against PyTorch (eager, CUDA graph) again for
# the models changed since the first call (DenseNet's wide concatenations,
# the flat element-wise kernels), all in this one run.
#   bash bench/gpu_issue4_compile.sh OUTDIR      (after scripts/gpu-carry.sh)
set -uo pipefail
out=${1:-/tmp/issue4b}
mkdir -p "$out"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
py=/opt/torch/.venv/bin/python3
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader
  $py -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
} > "$out/env.txt" 2>&1
for m in densenet121 resnet50 resnet152 squeezenet1_1; do
  $bin profile $m --batch 1,16 --math tf32 --check off --warmup-ms 300 --min-ms 1000 \
       --out-dir "$out/profile" > "$out/profile_$m.log" 2>&1; echo "$m rc=$?"
done
$bin profile densenet121 --batch 1 --math fp32 --check on --layers off --cuda-graph off --min-ms 200 \
     --out-dir "$out/check_fp32" > "$out/check_densenet.log" 2>&1; grep Numerics "$out/check_densenet.log"
$py bench/peers/torch_models.py --out "$out/torch_models.csv" --models densenet121,resnet50,resnet152,squeezenet1_1 \
    --batch 1,16 --modes eager,graph --math tf32 > "$out/torch_models.log" 2>&1; tail -2 "$out/torch_models.log"
timeout 420 $py bench/peers/torch_models.py --out "$out/torch_compile.csv" --batch 1 --modes compile \
    --compile-models alexnet,vgg16,resnet50,resnet152,densenet121,googlenet,inception_v3,squeezenet1_1 \
    --math tf32 > "$out/torch_compile.log" 2>&1; tail -3 "$out/torch_compile.log"
tar -C "$(dirname "$out")" --exclude='*.db-wal' --exclude='*.db-shm' -czf "$out.tar.gz" "$(basename "$out")"
