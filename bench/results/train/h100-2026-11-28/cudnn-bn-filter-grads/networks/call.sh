#!/usr/bin/env bash
# One device call on one GPU: the training graph's numerics check in both layouts, then training
# iterations in opsched next to PyTorch eager, same call; packed into $OUT.
set -u
start=$(date +%s)
nvidia-smi -L
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
W=/tmp/work; rm -rf $W; mkdir -p $W/train; T=$W/train
gpu_env_write $T > /dev/null
finish() { rm -f $T/*.db* $T/*/*.db*; tar -C $W -czf $OUT/results.tgz train; ls -la $OUT; echo "elapsed $(( $(date +%s) - start )) s"; }
trap finish EXIT
left() { echo $(( 560 - ($(date +%s) - start) )); }
for lay in nchw nhwc; do
  timeout 100 "$bin" profile resnet50 --train --optimizer sgd --batch 2 --input-size 64 --math fp32 --layout $lay --check on --out-dir $T/check-b2-$lay --force < /dev/null > $T/check-b2-$lay.log 2>&1; echo "check b2 $lay rc=$?"
  grep -E "Numerics|error" $T/check-b2-$lay.log | head -3
done
# name model batch optimizer torch-flags opsched-layout
while read name model b opt tflags lay; do
  [ "$tflags" = - ] && tflags=
  [ "$(left)" -lt 60 ] && { echo "out of time before $name"; break; }
  timeout 100 "$py" bench/training/torch_train.py --model $model --batch $b --optimizer $opt $tflags --out $T/torch-$name.json < /dev/null > $T/torch-$name.log 2>&1; echo "torch $name rc=$?"
  tail -1 $T/torch-$name.log | cut -c1-200
  t=$(left); [ $t -gt 150 ] && t=150
  timeout $t "$bin" profile $model --train --optimizer $opt --batch $b --math tf32 --layout $lay --check off --out-dir $T/opsched-$name --force < /dev/null > $T/opsched-$name.log 2>&1; echo "opsched $name rc=$?"
  grep -E "^Latency|CUDA Graph|Peak memory|error" $T/opsched-$name.log | cut -c1-160
done <<'LIST'
resnet50-b32 resnet50 32 sgd - nchw
resnet50-b32-cl resnet50 32 sgd --channels-last nhwc
vgg16-b32 vgg16 32 sgd - nchw
densenet121-b32 densenet121 32 sgd - nchw
googlenet-b32 googlenet 32 sgd - nchw
LIST
