#!/usr/bin/env bash
# Issue 6 smoke test on the GPU: the schedule executor's GPU test (two
# streams, a merged convolution, concat elision, capture and replay against
# the sequential executor, batch 4, greedy googlenet, traced run, measured
# stage cost), then `opsched run googlenet --compare sequential,greedy` at
# batch 1 with the CUDA graph, with a trace, and the greedy schedule it
# searched run again at batch 16 (cross-evaluation).
#   bash bench/gpu_issue6_smoke.sh OUTDIR      (after scripts/gpu-carry.sh build-gpu)
set -uo pipefail
out=${1:-/tmp/issue6_smoke}
mkdir -p "$out"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
{ echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader; } > "$out/env.txt"

rc=0
.carry/tests/test_sched_exec_gpu > "$out/test_sched_exec_gpu.log" 2>&1
t=$?; echo "test_sched_exec_gpu rc=$t"; [ $t -eq 0 ] || rc=1
grep -E "streams|replays|median|stage|traced|OK|FAIL|SKIP" "$out/test_sched_exec_gpu.log"

$bin run googlenet --compare sequential,greedy --batch 1 --math tf32 --cuda-graph on \
     --save-schedules "$out" --trace "$out/googlenet_b1_trace.json" > "$out/run_compare_b1.log" 2>&1
t=$?; echo "run --compare rc=$t"; [ $t -eq 0 ] || rc=1
cat "$out/run_compare_b1.log"

if [ -f "$out/googlenet_greedy.json" ]; then
  $bin run googlenet --schedule "$out/googlenet_greedy.json" --batch 16 --math tf32 \
       > "$out/run_greedy_b16.log" 2>&1
  t=$?; echo "run --schedule (batch 16) rc=$t"; [ $t -eq 0 ] || rc=1
  cat "$out/run_greedy_b16.log"
fi
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
exit $rc
