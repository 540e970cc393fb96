#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h100-x1) after
#   make build && scripts/gpu-carry.sh build   (at 3f71934)
# Kernel-by-kernel profiles (ncu) of opsched and torch.compile, after the GPU tests.
nvidia-smi -L | grep -q H100 || exit 3
set -u
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=$OUT/k; mkdir -p $R; gpu_env_write $R
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1); echo "ncu: $NCU" >> $R/env.txt
$NCU --version >> $R/env.txt 2>&1
timeout 120 .carry/tests/test_exec_gpu > $R/test_exec_gpu.log 2>&1; echo "test_exec_gpu rc=$?" | tee -a $R/rc.txt
timeout 120 .carry/tests/test_conformance > $R/test_conformance.log 2>&1; echo "test_conformance rc=$?" | tee -a $R/rc.txt
NC="$NCU --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv"
prof() { # model shapes math
  timeout 150 $NC --launch-count 800 --log-file $R/ops-$1-$3.csv $bin run bench/networks/models/$1.onnx --shapes $2 --math $3 --layout nchw --iters 0 --output-dir /tmp/o --force > $R/ops-$1-$3.log 2>&1; echo "ops $1 $3 rc=$?" | tee -a $R/rc.txt
  timeout 200 $NC --profile-from-start off --log-file $R/tc-$1-$3.csv $py bench/profiling/kernels.py torch --model $1 --math $3 > $R/tc-$1-$3.log 2>&1; echo "tc $1 $3 rc=$?" | tee -a $R/rc.txt
}
prof bert_base_s128 input_ids:1x128,attention_mask:1x128 tf32
prof bert_base_s128 input_ids:1x128,attention_mask:1x128 fp16
prof vit_b_16 input:1x3x224x224 tf32
tar -C $OUT -czf $OUT/k.tgz k
