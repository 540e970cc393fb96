#!/usr/bin/env bash
# The main job on an embedded default: what the built-in networks are made
# of, what this machine can measure, one operator measured, one network
# profiled end to end (on the GPU when there is one, else on the CPU), and,
# from the shipped H100 measurements, a network predicted at a measured and
# at a new input size.
set -euo pipefail
bin=${1:-build/bin/opsched}
out=${DEMO_OUT:-build/demo}
mkdir -p "$out"
echo "== opsched models"
"$bin" models
echo
echo "== opsched info resnet50 (deployed form: BatchNormalization folded), the last lines"
"$bin" info resnet50 --batch 1 | tail -8
echo
echo "== opsched devices"
"$bin" devices
echo
echo "== opsched bench conv2d: resnet50's 3x3 convolution of its first stage, every algorithm"
"$bin" bench conv2d --batch 1 --in-channels 64 --out-channels 64 --height 56 --kernel 3 \
    --algo all --min-ms 100 --warmup-ms 50
echo
echo "== opsched profile squeezenet1_1 --stage sanity (numerics checked against the CPU backend)"
"$bin" profile squeezenet1_1 --stage sanity --warmup-ms 100 --min-ms 300 --out-dir "$out" \
    --trace "$out/squeezenet1_1_trace.json"
if [ -d data/h100 ]; then
  # Shipped H100 measurements (data/h100, SQL text): built into a database in
  # the cache on first use, the learned models trained once (a minute).
  echo
  echo "== opsched predict resnet50 --data h100 (from the shipped H100 measurements)"
  "$bin" predict resnet50 --data h100 | tail -7
  echo
  echo "== ... at an input size never measured, 288x288: learned layers, coverage drops"
  "$bin" predict resnet50 --data h100 --input-size 288 | tail -7
fi
echo
echo "CSV files and a Perfetto trace are in $out/"
