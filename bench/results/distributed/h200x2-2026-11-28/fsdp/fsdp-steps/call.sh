#!/usr/bin/env bash
# One device call on 2 GPUs: PyTorch FSDP2 (fully_shard) training steps and
# peak memory per rank, next to the one-GPU step, ResNet-50 and VGG16 at
# batch 32 and 64 per GPU, TF32 and bf16 (FSDP's own mixed precision);
# packed into $OUT.
set -u
start=$(date +%s)
nvidia-smi -L
. bench/gpu_env.sh
W=/tmp/work; rm -rf $W; mkdir -p $W/fsdp; D=$W/fsdp
gpu_env_write $D > /dev/null
nvidia-smi topo -m > $D/topo.txt 2>&1
finish() { tar -C $W -czf $OUT/results.tgz fsdp; ls -la $OUT; }
trap finish EXIT
torchrun=/opt/torch/.venv/bin/torchrun
for cfg in "resnet50 64 bf16" "vgg16 64 bf16" "resnet50 64 tf32" "vgg16 64 tf32" \
           "resnet50 32 bf16" "vgg16 32 bf16" "resnet50 32 tf32" "vgg16 32 tf32"; do
  set -- $cfg; m=$1; b=$2; p=$3
  [ $(( $(date +%s) - start )) -gt 500 ] && { echo "out of time before $cfg"; break; }
  timeout 60 "$py" bench/distributed/torch_ddp.py --model $m --batch $b --precision $p --strategy single --json $D/steps.jsonl > $D/$m-$b-$p-single.log 2>&1; echo "$cfg single rc=$?"
  timeout 90 "$torchrun" --standalone --nproc_per_node 2 bench/distributed/torch_ddp.py --model $m --batch $b --precision $p --strategy fsdp --json $D/steps.jsonl > $D/$m-$b-$p-fsdp.log 2>&1; echo "$cfg fsdp rc=$?"
done
echo "elapsed $(( $(date +%s) - start )) s"
