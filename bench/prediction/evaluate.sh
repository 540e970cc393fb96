#!/usr/bin/env bash
# Prediction accuracy from the H100 measurements (no GPU needed: the shipped
# data/h100, or a database given as DB=...): the learned models' cross-
# validated per-operator error against the FLOPs-only baseline, and
# predicted against measured end to end (CUDA graph and free-running) with
# each model's own layers measured and with the model left out entirely.
#   bash bench/prediction/evaluate.sh OUTDIR     (bin: $BIN, default build/bin/opsched)
# On a machine with many cores this takes minutes (the leave-one-model-out
# part trains one set of models per network).
set -uo pipefail
out=${1:-/tmp/evaluate}
bin=${BIN:-build/bin/opsched}
mkdir -p "$out"
if [ -n "${DB:-}" ]; then src=(--db "$DB" --target h100); else src=(--data h100); fi
export OPSCHED_CACHE_DIR=${OPSCHED_CACHE_DIR:-$out/cache}

echo "== learned models: 5-fold CV per family against the FLOPs-only line"
$bin train-model "${src[@]}" --math tf32 > "$out/train_model.txt" 2> "$out/train_model.log"
cat "$out/train_model.txt"
$bin train-model "${src[@]}" --math tf32 --format json --quiet > "$out/train_model.json"

echo "== own layers measured (graph and free-running runs)"
$bin validate "${src[@]}" --math tf32 --csv "$out/validate.csv" > "$out/validate.txt" 2>&1
tail -20 "$out/validate.txt"

echo "== leave one model out: every batch and size of the model left out"
$bin validate "${src[@]}" --math tf32 --loo --rounds 600 --csv "$out/validate_loo.csv" \
    > "$out/validate_loo.txt" 2>&1
tail -20 "$out/validate_loo.txt"

echo "== one prediction in full"
$bin predict resnet50 "${src[@]}" --math tf32 --batch 8 > "$out/predict_resnet50_b8.txt" 2>&1
tail -9 "$out/predict_resnet50_b8.txt"
