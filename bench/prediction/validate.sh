#!/usr/bin/env bash
# Prediction accuracy on the shipped H100 data (no GPU): every network run
# of data/h100 predicted (CUDA graph and eager) against its measurement,
# then leave one model out, each into OUTDIR with bench/prediction/validate_summary.py's
# summary by batch and by where a free run's host time came from.
#   bash bench/prediction/validate.sh OUTDIR      (from the repository root)
# LOO=0 skips leave one model out (~15 min on 2 cores: 8 predictors trained
# with --rounds 300 --folds 3, in a fresh cache).
set -euo pipefail
out=${1:?usage: bench/prediction/validate.sh OUTDIR}
bin=${OPSCHED_BIN:-build/bin/opsched}
mkdir -p "$out"
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export OPSCHED_DATA_DIR=$PWD/data OPSCHED_CACHE_DIR=$cache
{ echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "commit: $(git rev-parse --short HEAD)";
  "$bin" --version; nproc; } > "$out/validate_env.txt" 2>&1
t0=$SECONDS
"$bin" validate --data h100 --math tf32 --mode graph,free --csv "$out/validate.csv" \
    > "$out/validate.txt" 2>&1
echo "validate: $((SECONDS - t0)) s" >> "$out/validate_env.txt"
if [ "${LOO:-1}" != 0 ]; then
  t0=$SECONDS
  "$bin" validate --data h100 --math tf32 --loo --rounds 300 --folds 3 \
      --csv "$out/validate_loo.csv" > "$out/validate_loo.txt" 2>&1
  echo "validate --loo: $((SECONDS - t0)) s" >> "$out/validate_env.txt"
fi
python3 bench/prediction/validate_summary.py "$out"/validate*.csv | tee "$out/summary.txt"
