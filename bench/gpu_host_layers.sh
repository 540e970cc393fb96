#!/usr/bin/env bash
# Per-layer host enqueue cost on the GPU (helper H7): `opsched profile` of
# densenet121 and resnet50 at batch 1, sizes 224 and 299, tf32, with --db,
# then for each item the sum of the layers' host medians (";mode=host" rows)
# against the free run's measured enqueue time and latency (network_runs,
# mode 'free'), and the ten layers with the largest host cost with their
# engine.  The sums should track enqueue_ms (densenet121 b1: 2.76 ms at 224,
# 4.14 ms at 299 in earlier runs).
#   bash bench/gpu_host_layers.sh OUTDIR      (after scripts/gpu-carry.sh build-gpu)
set -uo pipefail
out=${1:-/tmp/host_layers}
mkdir -p "$out"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
rc=0
for m in densenet121 resnet50; do
  $bin profile $m --batch 1 --input-size 224,299 --math tf32 --check off --db "$out/host.db" \
       --out-dir "$out" > "$out/$m.log" 2>&1
  t=$?; echo "$m rc=$t"; [ $t -eq 0 ] || rc=1
  grep -E "Performance summary|Latency:|Enqueue Time|Host enqueue" "$out/$m.log"
done
python3 - "$out/host.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for run_id, in c.execute("select distinct run_id from measurements where settings_key like '%;mode=host%'"):
    n, s = c.execute("select count(*), sum(median_ms) from measurements where run_id=? and settings_key like '%;mode=host%'", (run_id,)).fetchone()
    print("run %d: %d host rows (distinct layers may repeat per size), sum %.4f ms" % (run_id, n, s))
for row in c.execute("select model, batch, input_size, enqueue_ms, median_ms from network_runs where mode='free' order by model, input_size"):
    print("free: %s b%d %d: enqueue %.4f ms, latency %.4f ms" % row)
print("largest host costs:")
for row in c.execute("select c.op, c.in_channels, c.out_channels, c.kernel, c.stride, c.height, m.algo, m.settings_key, m.median_ms from measurements m join configs c on c.id=m.config_id where m.settings_key like '%;mode=host%' order by m.median_ms desc limit 10"):
    print("  %s in %s out %s k %s s %s h %s %-40s %s %.4f ms" % row)
PY
exit $rc
