#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 7048abc; the binary of c4d0a59)
# RegNetY-8GF's grouped convolutions (56 channels a group): opsched in NCHW against NHWC at
# batch 16 fp16 (planner verdicts), and one such convolution as torch runs it in both formats
# (gconv.py, carried as .carry/gconv.py).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
timeout 60 $py .carry/gconv.py > $R/torch-grouped.txt 2>&1
echo "torch $(el)s" | tee -a $R/times.txt
x=bench/networks/models/regnet_y_8gf.onnx
for L in nchw nhwc; do
  OPSCHED_LOG=debug timeout 80 $bin run $x --shapes input:16x3x224x224 --math fp16 --layout $L \
    --compare sequential --format csv > $R/run-b16-fp16-$L.csv 2> $R/run-b16-fp16-$L.log
  echo "run $L rc=$? $(tail -1 $R/run-b16-fp16-$L.csv) $(el)s" | tee -a $R/times.txt
done
echo "done $(el)s" | tee -a $R/times.txt
