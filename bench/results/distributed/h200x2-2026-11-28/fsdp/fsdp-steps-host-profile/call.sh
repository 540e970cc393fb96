#!/usr/bin/env bash
# One device call on 2 GPUs: PyTorch FSDP2 training steps with the host's
# issue time per step and torch.profiler's host-time tables (FSDP's
# record_function labels), next to the one-GPU step; ResNet-50 and VGG16 at
# batch 32 and 64 per GPU, TF32 and bf16; then DDP at TF32 for memory per
# rank.  Packed into $OUT.
set -u
start=$(date +%s)
nvidia-smi -L
. bench/gpu_env.sh
W=/tmp/work; rm -rf $W; mkdir -p $W/fsdp; D=$W/fsdp
gpu_env_write $D > /dev/null
finish() { tar -C $W -czf $OUT/results.tgz fsdp; ls -la $OUT; }
trap finish EXIT
torchrun=/opt/torch/.venv/bin/torchrun
for cfg in "resnet50 32 tf32" "vgg16 32 tf32" "resnet50 32 bf16" "vgg16 32 bf16" \
           "resnet50 64 tf32" "vgg16 64 tf32" "resnet50 64 bf16" "vgg16 64 bf16"; do
  set -- $cfg; m=$1; b=$2; p=$3
  [ $(( $(date +%s) - start )) -gt 480 ] && { echo "out of time before $cfg"; break; }
  timeout 60 "$py" bench/distributed/torch_ddp.py --model $m --batch $b --precision $p --strategy single --profile $D/$m-$b-$p-single.prof --json $D/steps.jsonl > $D/$m-$b-$p-single.log 2>&1; echo "$cfg single rc=$?"
  timeout 100 "$torchrun" --standalone --nproc_per_node 2 bench/distributed/torch_ddp.py --model $m --batch $b --precision $p --strategy fsdp --profile $D/$m-$b-$p-fsdp.prof --json $D/steps.jsonl > $D/$m-$b-$p-fsdp.log 2>&1; echo "$cfg fsdp rc=$?"
done
for m in resnet50 vgg16; do
  [ $(( $(date +%s) - start )) -gt 520 ] && { echo "out of time before ddp $m"; break; }
  timeout 80 "$torchrun" --standalone --nproc_per_node 2 bench/distributed/torch_ddp.py --model $m --batch 64 --precision tf32 --strategy ddp --json $D/steps.jsonl > $D/$m-64-tf32-ddp.log 2>&1; echo "$m ddp rc=$?"
done
echo "elapsed $(( $(date +%s) - start )) s"
