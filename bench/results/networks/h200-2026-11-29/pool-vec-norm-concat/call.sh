#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 620021f)
# The four-channel NHWC pooling kernel (timed against cuDNN's) and the batch norm that
# reads its Concat's inputs in place: the GPU tests; the inception family and DenseNet-121
# at batch 16 TF32 with torch.compile; the pool-vec and norm-concat ablations; GoogLeNet's
# and Inception-v3's verdicts.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/tests $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
for t in test_exec_gpu test_cuda_ops_gpu test_conformance; do
  timeout 100 .carry/tests/$t > $R/tests/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests/$t.log | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
for m in googlenet inception_v3; do mkdir -p $R/profile/$m
  OPSCHED_LOG=debug timeout 50 $bin profile bench/networks/models/$m.onnx --batch 16 --layout nhwc --check on \
    --min-ms 100 --out-dir $R/profile/$m --force > $R/profile/$m.log 2>&1
  echo "profile $m rc=$? $(grep -E 'CUDA Graph Latency|Numerics' $R/profile/$m.log | cut -c1-90 | tr '\n' ' ') $(el)s" | tee -a $R/times.txt
done
timeout 200 $py bench/networks/suite.py run --opsched $bin --out $R/b16 --models inception_v3,googlenet,densenet121 \
  --peers torch_compile --configs 16:tf32 --budget-s 185 --hard-limit-s 195 > $R/b16.log 2>&1
$py bench/networks/suite.py report $R/b16 >> $R/b16.log 2>&1
echo "suite b16 $(el)s" | tee -a $R/times.txt
timeout 50 $py bench/networks/suite.py run --opsched $bin --out $R/b16/no-pool-vec --models inception_v3,googlenet \
  --peers "" --opsched-args="--ablate pool-vec" --configs 16:tf32 --budget-s 42 --hard-limit-s 47 > $R/ablate-pool.log 2>&1
$py bench/networks/suite.py ablation $R/b16 $R/b16/no-pool-vec >> $R/ablate-pool.log 2>&1
echo "ablate pool-vec $(el)s" | tee -a $R/times.txt
timeout 40 $py bench/networks/suite.py run --opsched $bin --out $R/b16/no-norm-concat --models densenet121 \
  --peers "" --opsched-args="--ablate norm-concat" --configs 16:tf32 --budget-s 32 --hard-limit-s 37 > $R/ablate-nc.log 2>&1
$py bench/networks/suite.py ablation $R/b16 $R/b16/no-norm-concat >> $R/ablate-nc.log 2>&1
echo "ablate norm-concat $(el)s" | tee -a $R/times.txt
echo "done $(el)s" | tee -a $R/times.txt
