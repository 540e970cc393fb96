#!/usr/bin/env bash
# A part of the public export set (bench/exports) through opsched's CPU
# backend against ONNX Runtime's CPU provider (bench/exports/compare.py):
# every model named in tests/exports/ort_list.txt must load, run and match
# (relative L2 <= 1e-4).  The first run makes a virtual environment with the
# pinned onnxruntime and onnx from PyPI in the build folder; without network
# it skips, saying so.  The rows go to WORK_DIR/cpu (summary.md).
#   tests/exports_ort.sh OPSCHED_BIN SOURCE_DIR WORK_DIR
set -uo pipefail
bin=$1
src=$2
work=$3
ORT_VERSION=1.32.0
ONNX_VERSION=1.23.2
py=${OPSCHED_PYTHON:-python3}
venv=$work/venv-ort-$ORT_VERSION
mkdir -p "$work"
if ! "$venv/bin/python" -c "import onnxruntime, onnx, sys
sys.exit(0 if (onnxruntime.__version__, onnx.__version__) == ('$ORT_VERSION', '$ONNX_VERSION') else 1)" 2>/dev/null; then
  rm -rf "$venv"
  echo "making $venv with onnxruntime $ORT_VERSION and onnx $ONNX_VERSION (from PyPI)"
  if ! { "$py" -m venv "$venv" && "$venv/bin/python" -m pip install -q --disable-pip-version-check \
           "onnxruntime==$ORT_VERSION" "onnx==$ONNX_VERSION"; } >"$work/venv.log" 2>&1; then
    echo "SKIP: the pinned onnxruntime could not be installed (no network?):"
    tail -3 "$work/venv.log"
    rm -rf "$venv"
    exit 0
  fi
fi
"$venv/bin/python" "$src/bench/exports/compare.py" --opsched "$bin" --out "$work/cpu" \
  --list "$src/tests/exports/ort_list.txt" --force --require-match \
  --jobs "$(nproc)" --timeout 600
rc=$?
n=$(grep -c '^[a-z]' "$src/tests/exports/ort_list.txt")
echo "$n exports against onnxruntime $ORT_VERSION; summary: $work/cpu/summary.md"
[ $rc = 0 ] && [ "$n" -ge 20 ]
