#!/usr/bin/env bash
# Packs a release build and the shared libraries the GPU machine lacks into
# .carry/carry.tar.xz (git-ignored, about 11 MB), for the device tool's
# `carry`.  On the GPU machine, first: tar -C .carry -xJf .carry/carry.tar.xz
# which gives .carry/bin/opsched, .carry/tests/ and .carry/lib/.
#   scripts/gpu-carry.sh [BUILD_DIR]
set -euo pipefail
b=${1:-build}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/tests" "$stage/lib"
cp "$b/bin/opsched" "$stage/bin/"
# The tests that need a GPU (the rest run here, in make check).
for t in test_cuda_gpu test_cuda_ops_gpu test_exec_gpu test_sched_exec_gpu test_conformance test_measure test_comm; do
  [ -x "$b/tests/$t" ] && cp "$b/tests/$t" "$stage/tests/"
done
# Everything the binaries load that the GPU machine does not have:
# protobuf-c, libyaml, cJSON, oneDNN (+OpenCL loader, gomp), cmocka, XGBoost, PLplot.
for lib in $(ldd "$stage"/bin/opsched "$stage"/tests/* | awk '/=>/ {print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread*|libdl.so*|librt.so*|ld-linux*|libcuda.so*|libcudart*|libcublas*|libcudnn*|libstdc++*|libgcc_s*|libsqlite3*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
strip --strip-debug "$stage"/bin/* "$stage"/tests/* "$stage"/lib/* 2>/dev/null || true
# The commit the binaries were built at (the device's copy of .git may be
# older than the tree it is sent with): gpu_env_write prints it.
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include tools || echo ' with uncommitted changes')" \
  > "$stage/commit.txt"
rm -rf .carry && mkdir -p .carry
tar -C "$stage" -cf - . | xz -T1 --lzma2=preset=6,dict=192MiB > .carry/carry.tar.xz
du -sh .carry/carry.tar.xz
