#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h100-x1) after
#   make build && scripts/gpu-carry.sh build
# The GPU tests after the variant packs moved to cuda_bk.c (shared by the
# convolution and attention graphs), and resnet50 fp32 NHWC numerics.
nvidia-smi -L | grep -q H100 || exit 3
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=$OUT/r; mkdir -p $R; gpu_env_write $R > /dev/null
for t in test_cuda_gpu test_exec_gpu test_sched_exec_gpu test_conformance; do
  timeout 100 .carry/tests/$t > $R/$t.log 2>&1
  echo "$t: rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/rc.txt
  grep -E '^\[  FAILED  \] test' $R/$t.log | head -5
done
timeout 60 $bin profile resnet50 --batch 1 --math fp32 --layout nhwc --bn fold --check on --layers off \
  --host-layers off --min-ms 50 --out-dir $R/fp32 > $R/fp32_resnet50.log 2>&1
echo "resnet50 fp32 nhwc rc=$? $(grep -E 'Numerics|CUDA Graph Lat' $R/fp32_resnet50.log | tr '\n' ' ') $(el)s" | tee -a $R/rc.txt
tar -C $OUT -czf $OUT/r.tgz r
