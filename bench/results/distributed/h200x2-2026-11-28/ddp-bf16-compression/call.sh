#!/usr/bin/env bash
# One device call on 2 GPUs: DDP steps at bucket caps 5, 25 and 100 MB and through the bf16
# compression hook, next to the one-GPU step, ResNet-50 and VGG16; packed into $OUT.
set -u
start=$(date +%s)
nvidia-smi -L
. bench/gpu_env.sh
W=/tmp/work; rm -rf $W; mkdir -p $W/ddp; D=$W/ddp
gpu_env_write $D > /dev/null
finish() { tar -C $W -czf $OUT/results.tgz ddp; ls -la $OUT; }
trap finish EXIT
torchrun=/opt/torch/.venv/bin/torchrun
for m in resnet50 vgg16; do
  timeout 60 "$py" bench/distributed/torch_ddp.py --model $m --batch 64 --precision bf16 --strategy single --json $D/ddp.jsonl > $D/$m-single.log 2>&1; echo "$m single rc=$?"
  for v in "--bucket-mb 25" "--bucket-mb 5" "--bucket-mb 100" "--grad-comm bf16"; do
    [ $(( $(date +%s) - start )) -gt 500 ] && { echo "out of time before $m $v"; break; }
    tag=$(echo $v | tr -d ' -')
    timeout 80 "$torchrun" --standalone --nproc_per_node 2 bench/distributed/torch_ddp.py --model $m --batch 64 --precision bf16 --strategy ddp $v --json $D/ddp.jsonl > $D/$m-ddp-$tag.log 2>&1; echo "$m ddp $v rc=$?"
  done
done
echo "elapsed $(( $(date +%s) - start )) s"
