#!/usr/bin/env bash
# One device call on one GPU: ResNet-50's training iteration (forward, loss, backward, SGD step)
# in opsched (eager launches and one CUDA graph) next to PyTorch eager training; packed into $OUT.
set -u
start=$(date +%s)
nvidia-smi -L
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
W=/tmp/work; rm -rf $W; mkdir -p $W/train; T=$W/train
gpu_env_write $T > /dev/null
finish() { rm -f $T/*.db*; tar -C $W -czf $OUT/results.tgz train; ls -la $OUT; }
trap finish EXIT
for b in 32; do
  timeout 120 "$py" bench/training/torch_train.py --model resnet50 --batch $b --optimizer sgd --out $T/torch-resnet50-b$b.json > $T/torch-b$b.log 2>&1; echo "torch b$b rc=$?"
  tail -2 $T/torch-b$b.log | cut -c1-300
  timeout 360 "$bin" profile resnet50 --train --optimizer sgd --batch $b --math tf32 --layout nchw --check off --out-dir $T/opsched-b$b --force > $T/opsched-b$b.log 2>&1; echo "opsched b$b rc=$?"
  tail -25 $T/opsched-b$b.log | cut -c1-200
done
echo "elapsed $(( $(date +%s) - start )) s"
