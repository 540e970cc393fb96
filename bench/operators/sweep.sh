#!/usr/bin/env bash
# Operator sweeps against PyTorch on the GPU machine: tests of the CUDA
# backend, then the four benchmarks (throughput, stability, agreement with
# PyTorch, energy); report.txt from bench/operators/analyze.py.  Run from the repo
# root after scripts/gpu-carry.sh packed a release build into .carry.
#   bash bench/operators/sweep.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/operators}
mkdir -p "$out"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
# The cuDNN PyTorch loads, so both sides run the same library.
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
py=/opt/torch/.venv/bin/python3
[ -x "$py" ] || py=python3
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader
  echo "opsched $($bin --version)"
  $py -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
} > "$out/env.txt" 2>&1
cat "$out/env.txt"
$bin devices > "$out/devices.txt" 2>&1; cat "$out/devices.txt"

echo "== tests"
for t in test_cuda_gpu test_conformance test_measure; do
  ./.carry/tests/$t > "$out/$t.log" 2>&1; echo "$t: rc=$? $(grep -E 'PASSED|FAILED' "$out/$t.log" | tr '\n' ' ')"
done

times=$out/times.txt; : > "$times"
tsec() { python3 -c 'import time; print(time.time())'; }

echo "== 1. throughput: opsched sweep"
$bin sweep bench/specs/operators_throughput.yml --dry-run > "$out/sweep_dry.txt" 2>&1; tail -3 "$out/sweep_dry.txt"
t0=$(tsec); $bin sweep bench/specs/operators_throughput.yml --db "$out/sweep.db" > "$out/sweep.log" 2>&1; rc=$?; t1=$(tsec)
echo "sweep rc=$rc"; tail -3 "$out/sweep.log"
echo "sweep_s=$(python3 -c "print($t1-$t0)")" >> "$times"
$bin export csv --db "$out/sweep.db" --op conv2d -o "$out/sweep.csv"
echo "== 1b. PyTorch: one process over the same configs"
t0=$(tsec); $py bench/peers/torch_conv.py loop --csv "$out/sweep.csv" --out "$out/torch_loop.csv" --math tf32 --warmup-ms 20 --iters 50 --method graph 2>&1 | tail -1; t1=$(tsec)
echo "torch_loop_s=$(python3 -c "print($t1-$t0)")" >> "$times"
echo "torch_loop_n=$(($(wc -l < "$out/torch_loop.csv") - 1))" >> "$times"
echo "== 1c. PyTorch: one process per config (20 configs)"
t0=$(tsec); $py bench/peers/torch_conv.py per-process --csv "$out/sweep.csv" --out "$out/per_process.csv" --limit 20 --math tf32 --warmup-ms 20 --iters 50 2>&1 | tail -1; t1=$(tsec)
echo "per_process_s=$(python3 -c "print($t1-$t0)")" >> "$times"
echo "per_process_n=20" >> "$times"

echo "== 2. stability: two separate runs"
$bin sweep bench/specs/operators_stability.yml --db "$out/stab1.db" > "$out/stab1.log" 2>&1
$bin sweep bench/specs/operators_stability.yml --db "$out/stab2.db" > "$out/stab2.log" 2>&1
$bin export csv --db "$out/stab1.db" -o "$out/stab1.csv"
$bin export csv --db "$out/stab2.db" -o "$out/stab2.csv"

echo "== 2b. default sampling: the 288-convolution grid twice, default settings"
for r in 1 2; do
  t0=$(tsec); $bin sweep bench/specs/operators_default.yml --db "$out/default$r.db" > "$out/default$r.log" 2>&1; t1=$(tsec)
  echo "default${r}_s=$(python3 -c "print($t1-$t0)")" >> "$times"
  $bin export csv --db "$out/default$r.db" -o "$out/default$r.csv"
done

echo "== 4. energy: two runs of 20 configs"
$bin sweep bench/specs/operators_energy.yml --db "$out/energy1.db" > "$out/energy1.log" 2>&1
$bin sweep bench/specs/operators_energy.yml --db "$out/energy2.db" > "$out/energy2.log" 2>&1
$bin export csv --db "$out/energy1.db" -o "$out/energy1.csv"
$bin export csv --db "$out/energy2.db" -o "$out/energy2.csv"

echo "== bench, all algorithms, one config"
$bin bench conv2d --batch 16 --in-channels 64 --out-channels 64 --height 56 --kernel 3 --algo all --math tf32 > "$out/bench_all.txt" 2>&1; cat "$out/bench_all.txt"

python3 bench/operators/analyze.py "$out" | tee "$out/report.txt"
# One archive, so every file comes back from the device machine.
tar -C "$(dirname "$out")" --exclude='*.db-wal' --exclude='*.db-shm' -czf "$out.tar.gz" "$(basename "$out")"
