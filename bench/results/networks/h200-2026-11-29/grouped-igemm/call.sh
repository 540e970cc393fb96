#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 8cac2b1)
# The implicit-GEMM grouped convolution on a GPU for the first time: its test, conformance;
# RegNetY-8GF's verdicts at batch 16 fp16 and, with torch.compile, batch 16 and 1 in fp16 and
# TF32 (only when its test passed); then test_exec_gpu.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_cuda_gpu test_conformance; do
  timeout 100 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
grep -E "igemm:|FAILED|ERROR" $R/tests/test_cuda_gpu.log | head -5 | tee -a $R/times.txt
if grep -q "OK \] test_conv_igemm" $R/tests/test_cuda_gpu.log; then
  m=regnet_y_8gf; x=bench/networks/models/$m.onnx; mkdir -p $R/profile/b16-fp16
  OPSCHED_LOG=debug timeout 60 $bin profile $x --batch 16 --math fp16 --layout nhwc --check on \
    --min-ms 100 --out-dir $R/profile/b16-fp16 --force > $R/profile/b16-fp16.log 2>&1
  echo "profile rc=$? $(grep -E 'CUDA Graph Latency' $R/profile/b16-fp16.log | cut -c1-110) $(el)s" | tee -a $R/times.txt
  W=$(( 330 - $(el) ))
  timeout $W $py bench/networks/suite.py run --opsched $bin --out $R/suite --models $m \
    --peers torch_compile --configs 16:fp16,16:tf32,1:fp16,1:tf32 --budget-s $(( W - 40 )) --hard-limit-s $(( W - 5 )) > $R/suite.log 2>&1
  $py bench/networks/suite.py report $R/suite > $R/report.txt 2>&1
  echo "suite $(el)s" | tee -a $R/times.txt
fi
timeout $(( 410 - $(el) )) .carry/tests/test_exec_gpu > $R/tests/test_exec_gpu.log 2>&1
echo "test_exec_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/test_exec_gpu.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
