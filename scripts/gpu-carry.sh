#!/usr/bin/env bash
# Packs a release build and the shared libraries the GPU machine lacks into
# .carry/ (git-ignored), for the device tool's `carry`.
#   scripts/gpu-carry.sh [BUILD_DIR]
set -euo pipefail
b=${1:-build-gpu}
rm -rf .carry && mkdir -p .carry/bin .carry/tests .carry/lib
cp "$b/bin/opsched" .carry/bin/
for t in "$b"/tests/test_*; do [ -x "$t" ] && cp "$t" .carry/tests/; done
# Everything the binaries load that the GPU machine does not have:
# protobuf-c, libyaml, cJSON, oneDNN (+OpenCL loader, gomp), cmocka.
for lib in $(ldd .carry/bin/opsched .carry/tests/* | awk '/=>/ {print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread*|libdl.so*|librt.so*|ld-linux*|libcuda.so*|libcudart*|libcublas*|libcudnn*|libstdc++*|libgcc_s*|libsqlite3*) ;;
    *) cp -L "$lib" .carry/lib/ ;;
  esac
done
du -sh .carry
