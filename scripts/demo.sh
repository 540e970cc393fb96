#!/usr/bin/env bash
# The main job on an embedded default: what the built-in networks are made
# of, what this machine can measure, one operator measured, and one network
# profiled end to end (on the GPU when there is one, else on the CPU).
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
echo
echo "CSV files and a Perfetto trace are in $out/"
