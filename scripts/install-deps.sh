#!/usr/bin/env bash
# Installs the Debian packages opsched builds and tests with, if missing.
# Used by `make demo` and `make check`; safe to run again.
set -euo pipefail

pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev
      libprotobuf-c-dev protobuf-c-compiler libonnx-dev
      libsqlite3-dev libyaml-dev libcjson-dev libcmocka-dev
      libdnnl-dev libxgboost-dev libplplot-dev plplot-driver-cairo
      python3 python3-numpy python3-onnx python3-torch python3-torchvision
      python3-venv)

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "opsched: installing missing packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "opsched: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
