#!/usr/bin/env bash
# One device call: commbench next to torch.distributed, then DDP peers while time remains.
set -u
start=$(date +%s)
nvidia-smi -L
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=$OUT/comm; mkdir -p "$R"
ls -la "$OPSCHED_NCCL_LIB" 2>&1 | head -2
( .carry/tests/test_comm; echo "test_comm rc=$?" ) > "$R/test_comm.txt" 2>&1
tail -3 "$R/test_comm.txt"
( "$bin" commbench --gpus 1 --ops allreduce,sendrecv,alltoall --max-bytes 1M; echo "rc=$?" ) > "$R/single-rank.txt" 2>&1
tail -4 "$R/single-rank.txt"
timeout 360 bench/distributed/commbench.sh "$R" 2 1G > "$R/commbench-sh.log" 2>&1; echo "commbench.sh rc=$?"
tail -5 "$R/commbench-sh.log"
rm -f "$R"/*.db-wal "$R"/*.db-shm
D=$OUT/ddp; mkdir -p "$D"
torchrun=/opt/torch/.venv/bin/torchrun
for spec in "resnet50 64 bf16 sgd" "resnet50 64 tf32 sgd" "gpt2 16 bf16 adamw" "bert 32 bf16 adamw" "vgg16 32 bf16 sgd"; do
  set -- $spec
  [ $(( $(date +%s) - start )) -gt 470 ] && { echo "out of time before $spec"; break; }
  seq=""; [ $1 = gpt2 ] || [ $1 = bert ] && seq="--seq 128"
  timeout 60 "$py" bench/distributed/torch_ddp.py --model $1 --batch $2 --precision $3 --optimizer $4 $seq --strategy single --json "$D/ddp.jsonl" > "$D/$1-$2-$3-single.log" 2>&1; echo "$spec single rc=$?"
  timeout 90 "$torchrun" --standalone --nproc_per_node 2 bench/distributed/torch_ddp.py --model $1 --batch $2 --precision $3 --optimizer $4 $seq --strategy ddp --json "$D/ddp.jsonl" > "$D/$1-$2-$3-ddp.log" 2>&1; echo "$spec ddp rc=$?"
done
cat "$D/ddp.jsonl" 2>/dev/null | cut -c1-300
echo "elapsed $(( $(date +%s) - start )) s"
