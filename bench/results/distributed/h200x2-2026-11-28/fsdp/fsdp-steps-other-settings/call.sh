#!/usr/bin/env bash
# One device call on 2 GPUs (another host): PyTorch FSDP2 steps with the
# host's issue time, next to the one-GPU step, at settings the model's host
# terms were not fitted on: batch 48, ResNet-50's stages as units
# (--fsdp-wrap 'layer*'), AdamW.  Packed into $OUT.
set -u
start=$(date +%s)
nvidia-smi -L
. bench/gpu_env.sh
W=/tmp/work; rm -rf $W; mkdir -p $W/fsdp; D=$W/fsdp
gpu_env_write $D > /dev/null
finish() { tar -C $W -czf $OUT/results.tgz fsdp; ls -la $OUT; }
trap finish EXIT
torchrun=/opt/torch/.venv/bin/torchrun
while read -r m b p extra; do
  [ -z "$m" ] && continue
  [ $(( $(date +%s) - start )) -gt 500 ] && { echo "out of time before $m $b $p $extra"; break; }
  tag=$m-$b-$p$(echo "$extra" | tr -d " -'*" | sed 's/^/-/;s/-$//')
  sextra=$(echo "$extra" | grep -o -- "--optimizer [a-z]*")
  timeout 60 "$py" bench/distributed/torch_ddp.py --model $m --batch $b --precision $p --strategy single $sextra --json $D/steps.jsonl > $D/$tag-single.log 2>&1 < /dev/null; echo "$tag single rc=$?"
  eval timeout 100 "$torchrun" --standalone --nproc_per_node 2 bench/distributed/torch_ddp.py --model $m --batch $b --precision $p --strategy fsdp $extra --json $D/steps.jsonl > $D/$tag-fsdp.log 2>&1 < /dev/null; echo "$tag fsdp rc=$?"
done <<'CFG'
resnet50 48 tf32
vgg16 48 tf32
resnet50 32 tf32 --fsdp-wrap 'layer*'
resnet50 32 tf32 --optimizer adamw
resnet50 48 bf16
vgg16 48 bf16
CFG
echo "elapsed $(( $(date +%s) - start )) s"
