#!/usr/bin/env bash
# One device call on one GPU: training graphs of several networks profiled layer by layer and in
# isolation into one database (the predictor's data), PyTorch eager steps of the same networks;
# resumable: a database in .carry/train.db is continued.  Packed into $OUT.
set -u
start=$(date +%s)
nvidia-smi -L
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
W=/tmp/work; rm -rf $W; mkdir -p $W/train; T=$W/train
gpu_env_write $T > /dev/null
[ -f .carry/train.db ] && cp .carry/train.db $T/train.db
finish() { rm -f $T/*.db-*; tar -C $W -czf $OUT/results.tgz train; ls -la $OUT; echo "elapsed $(( $(date +%s) - start )) s"; }
trap finish EXIT
left() { echo $(( 570 - ($(date +%s) - start) )); }
while read name model b size; do
  [ "$(left)" -lt 40 ] && { echo "out of time before $name"; break; }
  if [ ! -f $T/torch-$name.json ] && [ ! -f .carry/torch-$name.json ]; then
    timeout 100 "$py" bench/training/torch_train.py --model $model --batch $b --optimizer sgd --size $size --out $T/torch-$name.json < /dev/null > $T/torch-$name.log 2>&1; echo "torch $name rc=$?"
    tail -1 $T/torch-$name.log | cut -c1-160
  fi
  t=$(left); [ $t -gt 240 ] && t=240
  timeout $t "$bin" profile $model --train --optimizer sgd --batch $b --input-size $size --math tf32 --layout nchw --check off --isolated --db $T/train.db --out-dir $T/opsched-$name < /dev/null > $T/opsched-$name.log 2>&1; echo "opsched $name rc=$?"
  grep -E "^Latency|CUDA Graph|already in|error" $T/opsched-$name.log | cut -c1-160
done <<'LIST'
resnet50-b32 resnet50 32 224
googlenet-b32 googlenet 32 224
vgg16-b32 vgg16 32 224
densenet121-b32 densenet121 32 224
resnet152-b16 resnet152 16 224
inception_v3-b32 inception_v3 32 299
LIST
