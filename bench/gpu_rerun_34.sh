#!/usr/bin/env bash
# One device call: issue 3's benchmarks again (bench/gpu_issue3.sh) and the
# DenseNet-121 concat check of issue 4 (bench/gpu_issue4_concat.sh), after
# calibrating the GPU for issue 5 (opsched devices --calibrate); results
# packed into OUT.tar.gz.      bash bench/gpu_rerun_34.sh OUT
set -uo pipefail
out=${1:-/tmp/rerun34}
mkdir -p "$out"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
t0=$SECONDS
LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64 timeout 120 ./.carry/bin/opsched devices \
    --calibrate --backend cuda --db "$out/calibrate.db" > "$out/calibrate.txt" 2>&1
echo "calibrate rc=$? $((SECONDS - t0))s"; cat "$out/calibrate.txt"
t0=$SECONDS
bash bench/gpu_issue3.sh "$out/issue3" > "$out/issue3.log" 2>&1; echo "issue3 rc=$? $((SECONDS - t0))s"
tail -25 "$out/issue3/report.txt" 2>/dev/null
t0=$SECONDS
bash bench/gpu_issue4_concat.sh "$out/issue4_concat" > "$out/issue4_concat.log" 2>&1; echo "concat rc=$? $((SECONDS - t0))s"
tail -12 "$out/issue4_concat.log"
tar -C "$(dirname "$out")" --exclude='*.db-wal' --exclude='*.db-shm' -czf "$out.tar.gz" "$(basename "$out")"
