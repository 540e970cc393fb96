#!/usr/bin/env bash
# Zoo end-to-end profiling on the GPU machine: whole networks.  End-to-end latency of the zoo
# at batch 1 and 16 (free-running and CUDA graph) against PyTorch eager and
# PyTorch with a CUDA graph, attribution, energy per inference of resnet50,
# numerics against the CPU backend, a Perfetto trace; report.txt from
# bench/profiling/analyze.py.  torch.compile is measured by
# bench/profiling/zoo_nhwc.sh (its compile time needs a call of its own).
#   bash bench/profiling/zoo.sh OUTDIR      (after scripts/gpu-carry.sh)
set -uo pipefail
out=${1:-/tmp/profiling}
mkdir -p "$out"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
py=/opt/torch/.venv/bin/python3
zoo="alexnet vgg16 resnet50 resnet152 densenet121 googlenet inception_v3 squeezenet1_1"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader
  $py -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
} > "$out/env.txt" 2>&1
$bin devices > "$out/devices.txt" 2>&1
for t in test_exec_gpu test_cuda_gpu; do
  ./.carry/tests/$t > "$out/$t.log" 2>&1; echo "$t: rc=$? $(grep -E 'PASSED|FAILED' "$out/$t.log" | tr '\n' ' ')"
done

echo "== 1. zoo end to end, batch 1 and 16, tf32"
for m in $zoo; do
  $bin profile $m --batch 1,16 --math tf32 --check off --warmup-ms 300 --min-ms 1000 \
       --out-dir "$out/profile" > "$out/profile_$m.log" 2>&1
  echo "$m rc=$? $(grep -c '^===' "$out/profile_$m.log") summaries"
done
echo "== 1b. PyTorch eager and CUDA graph"
$py bench/peers/torch_models.py --out "$out/torch_models.csv" --batch 1,16 --modes eager,graph \
    --math tf32 > "$out/torch_models.log" 2>&1; tail -2 "$out/torch_models.log"

echo "== numerics against the CPU backend (fp32 strict and tf32)"
for m in resnet50 googlenet inception_v3; do
  $bin profile $m --batch 1 --math fp32 --check on --layers off --cuda-graph off --min-ms 200 \
       --out-dir "$out/check_fp32" > "$out/check_fp32_$m.log" 2>&1; grep -E "Numerics" "$out/check_fp32_$m.log"
done
$bin profile resnet50 --batch 1 --math tf32 --check on --layers off --min-ms 200 \
     --out-dir "$out/check_tf32" > "$out/check_tf32.log" 2>&1; grep -E "Numerics" "$out/check_tf32.log"

echo "== 3. energy per inference, resnet50, two runs"
for r in 1 2; do
  $bin profile resnet50 --batch 1,16,64 --math tf32 --energy --check off --layers off \
       --out-dir "$out/energy$r" > "$out/energy$r.log" 2>&1
done
echo "== energy attribution: every distinct layer in its own window"
for m in resnet50 squeezenet1_1; do
  $bin profile $m --batch 16 --math tf32 --layer-energy --check off --out-dir "$out/layer_energy" \
       > "$out/layer_energy_$m.log" 2>&1; grep -E "Attribution|Layer energy|Energy" "$out/layer_energy_$m.log"
done
echo "== trace"
$bin profile googlenet --batch 1 --math tf32 --energy --check off --trace "$out/googlenet_b1_trace.json" \
     --out-dir "$out/trace" > "$out/trace.log" 2>&1; ls -la "$out/googlenet_b1_trace.json"

python3 bench/profiling/analyze.py "$out" | tee "$out/report.txt"
tar -C "$(dirname "$out")" --exclude='*.db-wal' --exclude='*.db-shm' -czf "$out.tar.gz" "$(basename "$out")"
