#!/usr/bin/env bash
# One device call on 1 GPU: PyTorch's peak training memory (one GPU, TF32,
# SGD) at the batches opsched info --train --memory-limit points to, for the
# largest-batch prediction.  Packed into $OUT.
set -u
nvidia-smi -L
. bench/gpu_env.sh
W=/tmp/work; rm -rf $W; mkdir -p $W/batch; D=$W/batch
gpu_env_write $D > /dev/null
finish() { tar -C $W -czf $OUT/results.tgz batch; ls -la $OUT; }
trap finish EXIT
while read -r m b; do
  [ -z "$m" ] && continue
  timeout 90 "$py" bench/distributed/torch_ddp.py --model $m --batch $b --precision tf32 --strategy single --warmup 3 --steps 5 --json $D/steps.jsonl > $D/$m-$b.log 2>&1 < /dev/null; echo "$m $b rc=$?"
done <<'CFG'
resnet50 128
resnet50 182
resnet50 256
vgg16 128
vgg16 256
CFG
