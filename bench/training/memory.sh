#!/usr/bin/env bash
# Training memory: opsched's prediction (`opsched info MODEL --train`)
# against PyTorch's torch.cuda.max_memory_allocated for the same network,
# batch and optimizer (bench/training/torch_train.py), on the GPU machine.
#   bash bench/training/memory.sh OUTDIR [BIN]
set -uo pipefail
out=${1:?usage: memory.sh OUTDIR [BIN]}
bin=${2:-$PWD/.carry/bin/opsched}
py=/opt/torch/.venv/bin/python3
[ -x "$py" ] || py=python3
mkdir -p "$out"
csv=$out/memory.csv
echo "model,batch,optimizer,impl,predicted_bytes,measured_bytes,error" > "$csv"
for m in resnet50 vgg16 googlenet squeezenet1_1; do
  for b in 8 32; do
    for o in "sgd foreach" "adamw foreach" "adamw fused"; do
      set -- $o
      pred=$($bin info "$m" --train --batch "$b" --optimizer "$1" --optimizer-impl "$2" --format json \
             | python3 -c 'import json,sys; print(json.load(sys.stdin)["memory_bytes"]["peak"])')
      meas=$($py bench/training/torch_train.py --model "$m" --batch "$b" --optimizer "$1" --impl "$2" \
             --steps 5 --warmup 3 | python3 -c 'import json,sys; print(json.load(sys.stdin)["max_memory_allocated"])')
      err=$(python3 -c "print('%.4f' % ($pred / $meas - 1))" 2>/dev/null || echo "")
      echo "$m,$b,$1,$2,$pred,$meas,$err" | tee -a "$csv"
    done
  done
done
