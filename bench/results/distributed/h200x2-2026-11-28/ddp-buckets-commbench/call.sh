#!/usr/bin/env bash
# One device call: commbench next to torch.distributed again (broadcast in place), the DDP
# peers at a second batch size and other bucket sizes; everything tarred into $OUT.
set -u
start=$(date +%s)
nvidia-smi -L
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
W=/tmp/work; rm -rf $W; mkdir -p $W/comm $W/ddp
finish() { rm -f $W/comm/*.db-wal $W/comm/*.db-shm; tar -C $W -czf $OUT/results.tgz comm ddp; ls -la $OUT; }
trap finish EXIT
timeout 300 bench/distributed/commbench.sh $W/comm 2 1G > $W/comm/commbench-sh.log 2>&1; echo "commbench.sh rc=$?"
grep -A9 "## Summary" $W/comm/compare-f32.md | tail -7
cat $W/comm/resume.txt
torchrun=/opt/torch/.venv/bin/torchrun
D=$W/ddp
run() { # model batch precision optimizer strategy [extra]
  local m=$1 b=$2 p=$3 o=$4 s=$5; shift 5
  local seq=""; { [ $m = gpt2 ] || [ $m = bert ]; } && seq="--seq 128"
  if [ $s = single ]; then
    timeout 80 "$py" bench/distributed/torch_ddp.py --model $m --batch $b --precision $p --optimizer $o $seq --strategy single --json $D/ddp.jsonl "$@" > $D/$m-$b-$p-$s$*.log 2>&1
  else
    timeout 100 "$torchrun" --standalone --nproc_per_node 2 bench/distributed/torch_ddp.py --model $m --batch $b --precision $p --optimizer $o $seq --strategy $s --json $D/ddp.jsonl "$@" > $D/$m-$b-$p-$s$*.log 2>&1
  fi
  echo "$m $b $p $s $* rc=$?"
}
for spec in "resnet50 128 bf16 sgd" "vgg16 64 bf16 sgd" "gpt2 8 bf16 adamw" "bert 16 bf16 adamw" "resnet50 64 bf16 sgd"; do
  set -- $spec
  [ $(( $(date +%s) - start )) -gt 430 ] && { echo "out of time before $spec"; break; }
  run $1 $2 $3 $4 single
  run $1 $2 $3 $4 ddp
done
[ $(( $(date +%s) - start )) -lt 470 ] && run resnet50 64 bf16 sgd ddp --bucket-mb 5
[ $(( $(date +%s) - start )) -lt 500 ] && run resnet50 64 bf16 sgd ddp --bucket-mb 100
echo "elapsed $(( $(date +%s) - start )) s"
