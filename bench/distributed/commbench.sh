#!/usr/bin/env bash
# NCCL collectives on this machine's GPUs: opsched commbench next to
# torch.distributed (bench/distributed/torch_comm.py under torchrun) in the
# same call, same sizes, same timing, the same NCCL library; then the
# alpha-beta fits, and an interrupted commbench resumed.  On the GPU
# machine, after the carry is unpacked:
#   [DTYPES="f32 bf16"] [RESUME=1] bench/distributed/commbench.sh OUTDIR [GPUS] [MAX_BYTES]
# Writes OUTDIR/{env.txt, commbench-<dtype>.csv, torch-<dtype>.csv,
# compare-<dtype>.md, fits.txt, fits.csv, resume.txt, commbench.db}.
set -uo pipefail
R=$1
G=${2:-$(nvidia-smi -L | wc -l)}
MAX=${3:-1G}
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here" || exit 1
. bench/gpu_env.sh
mkdir -p "$R"
gpu_env_write "$R"
echo "NCCL: ${OPSCHED_NCCL_LIB:-default}; NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE" | tee -a "$R/env.txt"
nvidia-smi topo -m >> "$R/env.txt" 2>&1
torchrun=/opt/torch/.venv/bin/torchrun
db=$R/commbench.db
rc=0
for dt in ${DTYPES:-f32 bf16}; do
  pydt=float32; [ $dt = bf16 ] && pydt=bfloat16
  ops=allreduce,allgather,reducescatter,broadcast,alltoall,sendrecv
  [ $dt = bf16 ] && ops=allreduce,allgather,reducescatter
  echo "== opsched commbench $dt on $G GPUs"
  /usr/bin/time -f "%e s" "$bin" commbench --gpus "$G" --ops $ops --max-bytes "$MAX" --dtype $dt \
      --db "$db" --csv "$R/commbench-$dt.csv" 2>&1 | tee "$R/commbench-$dt.log" || rc=1
  echo "== torch.distributed $dt on $G GPUs"
  /usr/bin/time -f "%e s" "$torchrun" --standalone --nproc_per_node "$G" \
      bench/distributed/torch_comm.py --ops $ops --max-bytes "$MAX" --dtype $pydt \
      --csv "$R/torch-$dt.csv" 2>&1 | tee "$R/torch-$dt.log" || rc=1
  "$py" bench/distributed/compare_comm.py "$R/commbench-$dt.csv" "$R/torch-$dt.csv" \
      --out "$R/compare-$dt.md" || rc=1
done
echo "== fits"
"$bin" commbench --fit --db "$db" | tee "$R/fits.txt" || rc=1
"$bin" commbench --fit --db "$db" --format csv > "$R/fits.csv" || rc=1
"$bin" export --db "$db" --collectives -o "$R/collectives.csv" || rc=1

[ "${RESUME:-1}" = 0 ] && exit $rc
echo "== interrupted and resumed (SIGINT after 4 s, then the same command)"
rdb=$R/resume.db
{
  "$bin" commbench --gpus "$G" --ops allreduce --max-bytes "$MAX" --db "$rdb" > "$R/resume-1.out" 2>&1 &
  pid=$!
  sleep 4; kill -INT $pid; wait $pid; echo "first run: exit $?"
  echo "rows after the interrupt: $("$py" -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from collectives').fetchone()[0])" "$rdb")"
  "$bin" commbench --gpus "$G" --ops allreduce --max-bytes "$MAX" --db "$rdb" > "$R/resume-2.out" 2>&1
  echo "second run: exit $?"
  echo "skipped in the second run: $(grep -c 'in the database' "$R/resume-2.out")"
  echo "rows now: $("$py" -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from collectives').fetchone()[0])" "$rdb")"
  "$py" -c "import sqlite3,sys; print('runs:', sqlite3.connect(sys.argv[1]).execute('select status from runs order by id').fetchall())" "$rdb"
} 2>&1 | tee "$R/resume.txt"
rm -f "$rdb"*
exit $rc
