#!/usr/bin/env bash
# The main job on an embedded default: what the built-in networks are made of.
set -euo pipefail
bin=${1:-build/bin/opsched}
echo "== opsched models"
"$bin" models
echo
echo "== opsched info resnet50 --batch 1 (deployed form: BatchNormalization folded)"
"$bin" info resnet50 --batch 1
