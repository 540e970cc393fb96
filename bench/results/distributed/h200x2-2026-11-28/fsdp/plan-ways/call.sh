#!/usr/bin/env bash
# One device call on 2 GPUs: the ways opsched plan weighs for ResNet-50 at
# batch 32 in TF32, measured on one host: DDP (25 MB buckets, gradients as
# bucket views) and FSDP with the whole model one unit, the stages and the
# blocks as units, next to the one-GPU step.  Packed into $OUT.
set -u
start=$(date +%s)
nvidia-smi -L
. bench/gpu_env.sh
W=/tmp/work; rm -rf $W; mkdir -p $W/plan; D=$W/plan
gpu_env_write $D > /dev/null
finish() { tar -C $W -czf $OUT/results.tgz plan; ls -la $OUT; }
trap finish EXIT
torchrun=/opt/torch/.venv/bin/torchrun
common="--model resnet50 --batch 32 --precision tf32 --json $D/steps.jsonl"
timeout 60 "$py" bench/distributed/torch_ddp.py $common --strategy single > $D/single.log 2>&1 < /dev/null; echo "single rc=$?"
while read -r tag args; do
  [ -z "$tag" ] && continue
  [ $(( $(date +%s) - start )) -gt 480 ] && { echo "out of time before $tag"; break; }
  eval timeout 100 "$torchrun" --standalone --nproc_per_node 2 bench/distributed/torch_ddp.py $common $args > $D/$tag.log 2>&1 < /dev/null; echo "$tag rc=$?"
done <<'CFG'
ddp-25mb-views --strategy ddp --bucket-mb 25 --grad-as-bucket-view
ddp-25mb --strategy ddp --bucket-mb 25
fsdp-whole --strategy fsdp --fsdp-wrap -
fsdp-stages --strategy fsdp --fsdp-wrap 'layer*'
fsdp-blocks --strategy fsdp
CFG
echo "elapsed $(( $(date +%s) - start )) s"
