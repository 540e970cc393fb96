#!/usr/bin/env bash
# One device call on 4 GPUs: commbench next to torch.distributed (f32, and bf16 all-reduce),
# DDP steps of ResNet-50 and VGG16 on 1 and 4 GPUs; everything packed into $OUT.
set -u
start=$(date +%s)
nvidia-smi -L
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
G=$(nvidia-smi -L | wc -l)
W=/tmp/work; rm -rf $W; mkdir -p $W/comm $W/ddp
finish() { rm -f $W/comm/*.db-wal $W/comm/*.db-shm; tar -C $W -czf $OUT/results.tgz comm ddp; ls -la $OUT; }
trap finish EXIT
DTYPES=f32 RESUME=0 timeout 250 bench/distributed/commbench.sh $W/comm $G 1G > $W/comm/commbench-sh.log 2>&1; echo "commbench.sh rc=$?"
grep -A9 "## Summary" $W/comm/compare-f32.md | tail -7
torchrun=/opt/torch/.venv/bin/torchrun
D=$W/ddp
for spec in "resnet50 64" "vgg16 64" "resnet50 128"; do
  set -- $spec
  [ $(( $(date +%s) - start )) -gt 480 ] && { echo "out of time before $spec"; break; }
  timeout 60 "$py" bench/distributed/torch_ddp.py --model $1 --batch $2 --precision bf16 --strategy single --json $D/ddp.jsonl > $D/$1-$2-single.log 2>&1; echo "$spec single rc=$?"
  timeout 90 "$torchrun" --standalone --nproc_per_node $G bench/distributed/torch_ddp.py --model $1 --batch $2 --precision bf16 --strategy ddp --json $D/ddp.jsonl > $D/$1-$2-ddp.log 2>&1; echo "$spec ddp rc=$?"
done
echo "elapsed $(( $(date +%s) - start )) s"
