#!/usr/bin/env bash
# The GPU machine's work, in order of what it unblocks, in calls of under
# ten minutes each: every call runs the phases not finished yet until its
# time is nearly up, and copies what they wrote to OUTDIR ($OUT of the
# device tool).  A phase that finished leaves .gpu-state/PHASE.done (the
# folder is git-ignored, so it stays on the machine between calls while the
# machine is held); a phase cut short starts again in the next call, and
# the phases themselves resume where their tools can (the suite).
#
#   bash bench/gpu_all.sh OUTDIR [PHASE...]      (default: every phase)
#
# Before the first call, on this machine: scripts/gpu-carry.sh build; the
# conformance cases `make check` generated, packed (or the onnx wheel to
# generate them there: pip download --no-deps --only-binary=:all:
# --python-version 3.12 --platform manylinux_2_28_x86_64 -d .carry/wheels
# onnx==1.23.2); and the export set, packed, when the tree goes without it
# (scripts/device-tree.sh aside):
#   tar -C build/conformance -cJf .carry/conformance-cases.tar.xz cases-onnx-1.23.2
#   tar -C bench/exports -cJf .carry/exports-models.tar.xz models
# then send .carry with the device tool's carry (and .gpu-state, to go on
# from an earlier machine's partial results).
#
# Phases:
#   gpu_tests       the GPU unit tests and the executor's fp32 numerics
#   conformance     the ONNX node tests on the CUDA backend, fp32 (TF32 off)
#                   and TF32
#   exports         the export set on the CUDA backend (fp32, TF32) against
#                   ONNX Runtime's CPU provider
#   suite           the network suite against the peers (bench/networks)
#   tf32_peer       PyTorch's own fp32/TF32 error on the exports opsched's TF32
#                   misses (bench/exports/torch_peer.py; TF32_PEER_MODELS)
set -uo pipefail
out=${1:?usage: gpu_all.sh OUTDIR [PHASE...]}
shift
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(gpu_tests conformance exports suite)
budget=${GPU_CALL_S:-540}
start=$(date +%s)
state=$PWD/.gpu-state
mkdir -p "$state" "$out"
[ -x .carry/bin/opsched ] || tar -C .carry -xJf .carry/carry.tar.xz
. "$(dirname "$0")/gpu_env.sh"
left() { echo $((budget - ($(date +%s) - start))); }
log() { echo "[$(date -u +%H:%M:%S) $(left)s left] $*" | tee -a "$out/session.log"; }
gpu_env_write "$out" > /dev/null

# A python with the pinned onnx, for the conformance cases (offline: the
# carried wheel over the machine's PyTorch environment).
onnx_env() {
  local v=$state/venv-onnx-1.23.2
  if ! "$v/bin/python" -c 'import onnx; assert onnx.__version__ == "1.23.2"' 2>/dev/null; then
    rm -rf "$v"
    # The new environment sees the PyTorch environment's packages (numpy,
    # protobuf) behind its own onnx: a .pth line is read after its own
    # site-packages.
    "$py" -m venv "$v" &&
      "$py" -c 'import site; print(site.getsitepackages()[0])' \
        > "$("$v/bin/python" -c 'import site; print(site.getsitepackages()[0])')/torch-env.pth" &&
      "$v/bin/python" -m pip install -q --no-deps --no-index .carry/wheels/onnx-1.23.2-*.whl &&
      "$v/bin/python" -c 'import onnx, onnx.reference; assert onnx.__version__ == "1.23.2"'
  fi
}

phase_gpu_tests() {
  TEST_S=90 bash bench/gpu_tests.sh "$state/gpu_tests" > "$state/gpu_tests/summary.txt" 2>&1
  cat "$state/gpu_tests/summary.txt"
}

phase_conformance() {
  # The cases: generated here by the pinned onnx (the carried wheel), or
  # carried already generated (.carry/conformance-cases.tar.xz, made here
  # by: tar -C build/conformance -cJf .carry/conformance-cases.tar.xz
  # cases-onnx-1.23.2) and read with the machine's onnx.
  local cases=$state/conformance/cases-onnx-1.23.2 src
  if [ -f .carry/conformance-cases.tar.xz ]; then
    mkdir -p "$state/conformance"
    [ -f "$cases/ONNX_VERSION" ] || tar -C "$state/conformance" -xJf .carry/conformance-cases.tar.xz || return 1
    src=(--no-venv)
  else
    onnx_env || return 1
    src=(--venv "$state/venv-onnx-1.23.2")
  fi
  for m in fp32 tf32; do
    [ -f "$state/conformance-$m.done" ] && continue
    [ "$(left)" -gt 120 ] || return 1
    timeout $(( $(left) - 30 )) "$py" bench/conformance/run.py --opsched "$bin" --backend cuda \
      --math "$m" --out "$state/conformance/cuda-$m" "${src[@]}" \
      --cases "$cases" --jobs "${CONFORMANCE_JOBS:-8}" || return 1
    touch "$state/conformance-$m.done"
  done
}

# The export set's folder: bench/exports/models, or carried packed when the
# tree was sent without it (scripts/device-tree.sh aside), made here by:
# tar -C bench/exports -cJf .carry/exports-models.tar.xz models
export_models() {
  local models=bench/exports/models
  if [ ! -f "$models/manifest.json" ] && [ -f .carry/exports-models.tar.xz ]; then
    models=$state/exports-models/models
    [ -f "$models/manifest.json" ] ||
      { mkdir -p "$state/exports-models" && tar -C "$state/exports-models" -xJf .carry/exports-models.tar.xz; } ||
      return 1
  fi
  echo "$models"
}

phase_exports() {
  [ -f bench/exports/compare.py ] || { log "exports: no bench/exports/compare.py"; return 0; }
  local models
  models=$(export_models) || return 1
  # Rows already written are kept: a call cut short goes on in the next.
  for m in fp32 tf32; do
    [ -f "$state/exports-$m.done" ] && continue
    [ "$(left)" -gt 120 ] || return 1
    timeout $(( $(left) - 30 )) "$py" bench/exports/compare.py --opsched "$bin" --backend cuda \
      --math "$m" --models "$models" --out "$state/exports/cuda-$m" --jobs "${EXPORTS_JOBS:-4}" || return 1
    touch "$state/exports-$m.done"
  done
}

phase_tf32_peer() {
  local models
  models=$(export_models) || return 1
  mkdir -p "$state/tf32-peer"
  timeout $(( $(left) - 30 )) "$py" bench/exports/torch_peer.py --models "$models" --opsched "$bin" \
    --only "${TF32_PEER_MODELS:-timm_visformer_tiny,timm_mvitv2_tiny,timm_nextvit_small}" \
    --out "$state/tf32-peer/torch-peer.csv"
}

phase_suite() {
  # The suite resumes from its results.csv and stops starting items at
  # --budget-s (exit 3: run again); exit 0 when every item has its row.
  "$py" bench/networks/suite.py run --opsched "$bin" --out "$state/networks" \
    --budget-s $(( $(left) - 90 ))
}

mkdir -p "$state/gpu_tests"
for p in "${phases[@]}"; do
  [ -f "$state/$p.done" ] && { log "$p: done before"; continue; }
  if [ "$(left)" -lt 90 ]; then log "$p: not started, too little time left"; break; fi
  log "$p: starting"
  if "phase_$p" >> "$out/$p.log" 2>&1; then
    touch "$state/$p.done"
    log "$p: done"
  else
    log "$p: stopped (rc $?); the next call goes on"
    break
  fi
done
# What the phases wrote, without the cases and environments.
tar -C "$state" --exclude='venv-*' --exclude='cases-*' --exclude='exports-models' --exclude='work' --exclude='*.db-wal' --exclude='*.db-shm' \
    -czf "$out/state.tar.gz" . 2>/dev/null
log "call ends"
