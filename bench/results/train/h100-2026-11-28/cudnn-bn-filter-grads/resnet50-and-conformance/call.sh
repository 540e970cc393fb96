#!/usr/bin/env bash
# One device call on one GPU: the training operators' GPU tests, then ResNet-50's training
# iteration (forward, loss, backward, SGD step) in opsched next to PyTorch eager; packed into $OUT.
set -u
start=$(date +%s)
nvidia-smi -L
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
W=/tmp/work; rm -rf $W; mkdir -p $W/train; T=$W/train
gpu_env_write $T > /dev/null
finish() { rm -f $T/*.db* $T/*/*.db*; tar -C $W -czf $OUT/results.tgz train; ls -la $OUT; echo "elapsed $(( $(date +%s) - start )) s"; }
trap finish EXIT
timeout 150 .carry/tests/test_conformance > $T/test_conformance.log 2>&1; echo "test_conformance rc=$?"
grep -E "BatchNormTraining|BatchNormBackward|ConvBackwardFilter|FAIL|PASSED|FAILED" $T/test_conformance.log | head -30
timeout 90 "$bin" profile resnet50 --train --optimizer sgd --batch 2 --input-size 64 --math fp32 --layout nchw --check on --out-dir $T/check-b2 --force > $T/check-b2.log 2>&1; echo "check b2 rc=$?"
grep -E "Numerics|error" $T/check-b2.log | head -5
b=32
timeout 100 "$py" bench/training/torch_train.py --model resnet50 --batch $b --optimizer sgd --out $T/torch-resnet50-b$b.json --kernels $T/torch-resnet50-b$b-kernels.txt > $T/torch-b$b.log 2>&1; echo "torch b$b rc=$?"
tail -1 $T/torch-b$b.log | cut -c1-300
timeout 200 "$bin" profile resnet50 --train --optimizer sgd --batch $b --math tf32 --layout nchw --check off --out-dir $T/opsched-b$b --force > $T/opsched-b$b.log 2>&1; echo "opsched b$b rc=$?"
grep -E "Latency|CUDA Graph|Peak memory|Launches|error" $T/opsched-b$b.log | cut -c1-220
