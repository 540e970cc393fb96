#!/usr/bin/env bash
# Issue 4, third call: attribution with every distinct layer timed alone
# (opsched profile --isolated) against the CUDA-graph end to end, zoo models
# at batch 1 and 16.
#   bash bench/gpu_issue4_attribution.sh OUTDIR      (after scripts/gpu-carry.sh)
set -uo pipefail
out=${1:-/tmp/issue4c}
mkdir -p "$out"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
{ echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader; } > "$out/env.txt"
for m in alexnet vgg16 resnet50 resnet152 densenet121 googlenet inception_v3 squeezenet1_1; do
  $bin profile $m --batch 1,16 --math tf32 --check off --isolated --warmup-ms 200 --min-ms 500 \
       --out-dir "$out/profile" > "$out/profile_$m.log" 2>&1
  echo "$m rc=$?"; grep -E "Attribution|alone" "$out/profile_$m.log"
done
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
