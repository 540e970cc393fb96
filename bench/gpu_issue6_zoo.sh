#!/usr/bin/env bash
# Issue 6, IOS's benchmark networks on the GPU: randwire, randwire_large,
# nasnet, nasnet_large.  Each runs on the CUDA backend in strict fp32 with
# its output checked against the CPU backend (depthwise convolutions,
# asymmetric SAME padding, exclude-pad averages, Pad, Slice, Adds of many
# inputs, a broadcast Mul), then end to end at batch 1 and 16 in tf32.
#   bash bench/gpu_issue6_zoo.sh OUTDIR      (after scripts/gpu-carry.sh)
set -uo pipefail
out=${1:-/tmp/issue6_zoo}
mkdir -p "$out"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
zoo="randwire randwire_large nasnet nasnet_large"
$bin devices > "$out/devices.txt" 2>&1
$bin models > "$out/models.txt" 2>&1

echo "== numerics against the CPU backend (fp32 strict, batch 1)"
for m in $zoo; do
  $bin profile $m --batch 1 --math fp32 --check on --layers off --cuda-graph off --min-ms 200 \
       --out-dir "$out/check_fp32" > "$out/check_$m.log" 2>&1
  echo "$m rc=$? $(grep -E 'Numerics' "$out/check_$m.log")"
done

echo "== end to end, batch 1 and 16, tf32"
for m in $zoo; do
  $bin profile $m --batch 1,16 --math tf32 --check off --warmup-ms 300 --min-ms 1000 \
       --out-dir "$out/profile" > "$out/profile_$m.log" 2>&1
  echo "$m rc=$? $(grep -E '^Latency|^CUDA Graph' "$out/profile_$m.log" | tr '\n' ' ')"
done
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
