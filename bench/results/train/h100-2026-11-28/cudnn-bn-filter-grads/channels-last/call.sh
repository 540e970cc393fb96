#!/usr/bin/env bash
# One device call on one GPU: channels-last training (batch norm through cuDNN's Ex calls): the
# numerics check and ResNet-50 b32 next to PyTorch channels_last, NCHW beside it; into $OUT.
set -u
start=$(date +%s)
nvidia-smi -L
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
W=/tmp/work; rm -rf $W; mkdir -p $W/train; T=$W/train
gpu_env_write $T > /dev/null
finish() { rm -f $T/*.db* $T/*/*.db*; tar -C $W -czf $OUT/results.tgz train; ls -la $OUT; echo "elapsed $(( $(date +%s) - start )) s"; }
trap finish EXIT
OPSCHED_LOG=debug timeout 100 "$bin" profile resnet50 --train --optimizer sgd --batch 2 --input-size 64 --math fp32 --layout nhwc --check on --out-dir $T/check-b2-nhwc --force < /dev/null > $T/check-b2-nhwc.log 2>&1; echo "check b2 nhwc rc=$?"
grep -E "Numerics|error" $T/check-b2-nhwc.log | head -3; grep -m2 "spatial mode" $T/check-b2-nhwc.log
while read name model b tflags lay; do
  [ "$tflags" = - ] && tflags=
  timeout 100 "$py" bench/training/torch_train.py --model $model --batch $b --optimizer sgd $tflags --out $T/torch-$name.json < /dev/null > $T/torch-$name.log 2>&1; echo "torch $name rc=$?"
  tail -1 $T/torch-$name.log | cut -c1-200
  timeout 150 "$bin" profile $model --train --optimizer sgd --batch $b --math tf32 --layout $lay --check off --out-dir $T/opsched-$name --force < /dev/null > $T/opsched-$name.log 2>&1; echo "opsched $name rc=$?"
  grep -E "^Latency|CUDA Graph|Peak memory|error" $T/opsched-$name.log | cut -c1-160
done <<'LIST'
resnet50-b32-cl resnet50 32 --channels-last nhwc
resnet50-b32 resnet50 32 - nchw
LIST
