#!/usr/bin/env bash
# Issue 4, DenseNet-121's concatenations: the CUDA Concat/Split kernel as
# row copies of 16-byte units.  Checks it (test_cuda_gpu: Concat and Split
# on 16-byte rows, 70 inputs in two launches; test_conformance: every op on
# every backend), numerics of the whole network against the CPU backend,
# then DenseNet-121 at batch 1 and 16 end to end (free-running and CUDA
# graph) against PyTorch eager and PyTorch with a CUDA graph, and the time
# and bandwidth of its Concat layers.  About 3 minutes.
#   bash bench/gpu_issue4_concat.sh OUTDIR      (after scripts/gpu-carry.sh)
set -uo pipefail
out=${1:-/tmp/issue4_concat}
mkdir -p "$out"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
py=/opt/torch/.venv/bin/python3
[ -x "$py" ] || py=python3
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader
  $py -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
} > "$out/env.txt" 2>&1
cat "$out/env.txt"

echo "== tests"
for t in test_cuda_gpu test_conformance; do
  OPSCHED_TEST_VERBOSE=1 ./.carry/tests/$t > "$out/$t.log" 2>&1
  echo "$t: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$out/$t.log" | tr '\n' ' ')"
done
echo "test_cuda_gpu Concat/Split runs passed: $(grep -cE '^ *ok (Concat|Split)' "$out/test_cuda_gpu.log")"
grep -E '^ *(Concat|Split) on ' "$out/test_conformance.log"
grep -E 'FAIL' "$out/test_cuda_gpu.log" "$out/test_conformance.log" | head -5

echo "== numerics against the CPU backend, then end to end (tf32, heuristic)"
$bin profile densenet121 --batch 1,16 --math tf32 --check on --warmup-ms 300 --min-ms 1000 \
     --out-dir "$out/profile" > "$out/profile.log" 2>&1
echo "profile rc=$?"; grep -E "Numerics" "$out/profile.log"

echo "== PyTorch eager and CUDA graph"
$py bench/peers/torch_models.py --models densenet121 --batch 1,16 --modes eager,graph --math tf32 \
    --out "$out/torch_models.csv" > "$out/torch_models.log" 2>&1
echo "torch rc=$?"; tail -1 "$out/torch_models.log"

python3 - "$out" <<'EOF' | tee "$out/report.txt"
import csv, math, os, sys
out = sys.argv[1]
def rows(p):
    return list(csv.DictReader(open(p))) if os.path.exists(p) else []
ops = {r["batch"]: r for r in rows(f"{out}/profile/densenet121_heuristic_overall.csv")}
tor = {(r["batch"], r["mode"]): float(r["median_ms"]) for r in rows(f"{out}/torch_models.csv")
       if r["model"] == "densenet121"}
print("densenet121, median ms (tf32, cuDNN heuristics)")
print(f"{'b':>3} {'opsched free':>13} {'opsched graph':>14} {'torch eager':>12} {'torch graph':>12}"
      f" {'ograph/tgraph':>14} {'tgraph/ograph':>14}")
for b in ("1", "16"):
    o = ops.get(b)
    of = float(o["median"]) if o else math.nan
    og = float(o["e2e_graph_median_ms"]) if o and o["e2e_graph_median_ms"] else math.nan
    te, tg = tor.get((b, "eager"), math.nan), tor.get((b, "graph"), math.nan)
    print(f"{b:>3} {of:13.3f} {og:14.3f} {te:12.3f} {tg:12.3f} {og / tg:14.3f} {tg / og:14.3f}")
print("target: opsched graph no slower than torch graph (ograph/tgraph <= 1.00)")
lay = [r for r in rows(f"{out}/profile/densenet121_heuristic_layers.csv") if r["op"] == "Concat"]
for b in ("1", "16"):
    c = [r for r in lay if r["batch"] == b]
    if not c:
        continue
    total = sum(float(r["median_ms"]) for r in c)
    big = max(c, key=lambda r: math.prod(int(d) for d in r["output_shape"].split("x")))
    n = math.prod(int(d) for d in big["output_shape"].split("x"))
    gbs = 2 * 4 * n / (float(big["median_ms"]) * 1e-3) / 1e9
    print(f"b{b}: {len(c)} Concat layers, {total:.3f} ms in all (layer-timed);"
          f" largest {big['output_shape']} {float(big['median_ms']) * 1e3:.1f} us = {gbs:.0f} GB/s"
          f" read + written")
EOF
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
