#!/usr/bin/env bash
# Per-layer host enqueue times of the zoo on the H100, for the eager
# (free-running) predictor (docs/PREDICT.md, "Composition"): `opsched profile`
# with host layers on and everything else that is not needed off (no CUDA
# graph, no layer-timed runs, no isolated layers, no energy, no numerics
# check, no trace), at batch 1 (then 8 and 32 while the budget lasts) and
# input sizes 224, 299, 320, with the settings of bench/prediction/collect.sh
# (tf32, nchw, cuDNN heuristic, --warmup-ms 50 --min-ms 300), so that the
# ";mode=host" rows carry the settings of the shipped data (data/h100) and
# their configurations' signatures.  Each item also stores its free run
# (end to end and enqueue time); the host rows are read in that free
# run's timed inferences (drained-queue runs only where the device
# bounds it: the profile log says which).
#
#   bash bench/prediction/host_rows.sh OUTDIR          (after scripts/gpu-carry.sh build-gpu)
#
# Writes OUTDIR/host.db, OUTDIR/host_sql/*.sql (scripts/export-data.py: the
# format of data/h100), OUTDIR/summary.txt (per item: the layers' host sum
# against the free run's enqueue time), logs, and OUTDIR/device.txt.  The
# device row is renamed to the uuid of data/h100's device when the lent
# H100 is another unit (as the calibrations were), so that merged rows
# belong to the device the shipped data predicts for; device.txt says
# which unit it really was.  Budget: BUDGET_S (default 240) seconds of
# wall time, enforced with timeouts; every step resumes from OUTDIR/host.db.
#
# OPSCHED_BIN and PROFILE_ARGS (appended to every profile call, e.g.
# "--backend cpu --math fp32") are for trying the script without a GPU.
#
# Afterwards, on any machine (no GPU needed): bash bench/prediction/merge.sh
# WORK OUTDIR/host.db merges host.db into data/h100, and
# bench/prediction/validate.sh validates the eager predictions.
set -uo pipefail
out=${1:-/tmp/host_rows}
budget=${BUDGET_S:-240}
mkdir -p "$out"
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=${OPSCHED_BIN:-$PWD/.carry/bin/opsched}
db=$out/host.db
# Worst eager errors first (squeezenet1_1, googlenet, densenet121).
zoo=${ZOO:-"squeezenet1_1 googlenet densenet121 inception_v3 resnet50 resnet152 vgg16 alexnet"}
reserve=25   # seconds kept for the export and the summary
left() { echo $((budget - reserve - SECONDS)); }
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader
  lscpu | grep -E "Model name|^CPU\(s\)"
} > "$out/env.txt" 2>&1
$bin --version >> "$out/env.txt" 2>&1

# One profile call: a model at a batch size, the three sizes, at most
# CALL_MAX_S (60) seconds.  SIGTERM at the limit stops it after the size in
# flight (kept in the database); KILL 10 s later.
profile() {
  local m=$1 b=$2 t
  t=$(left)
  if [ "$t" -lt 8 ]; then echo "$m b$b: skipped (budget)"; return 1; fi
  [ "$t" -gt "${CALL_MAX_S:-60}" ] && t=${CALL_MAX_S:-60}   # one model cannot take it all
  local t0=$SECONDS
  timeout -k 10 "$t" $bin profile "$m" --batch "$b" --input-size 224,299,320 --math tf32 \
      --cuda-graph off --layers off --host-layers on --check off \
      --warmup-ms 50 --min-ms 300 --db "$db" --out-dir "$out/profile" ${PROFILE_ARGS:-} \
      >> "$out/profile_${m}_b$b.log" 2>&1
  echo "$m b$b rc=$? $((SECONDS - t0))s: $(grep -h 'Host enqueue' "$out/profile_${m}_b$b.log" | tr -s ' ' | cut -c1-60 | paste -sd'|')"
}

# BATCHES: the batch sizes, in order (default "1 8 32"); the first is
# measured for every model, the others while the budget lasts.
first=1
for b in ${BATCHES:-1 8 32}; do
  echo "== batch $b"
  for m in $zoo; do
    if [ $first = 1 ]; then profile "$m" "$b"; else profile "$m" "$b" || break; fi
  done
  first=0
done

echo "== device, export, summary ($SECONDS s so far)"
python3 - "$db" data/h100/devices.sql "$out/device.txt" <<'PY'
import re, sqlite3, sys
db, shipped, note = sys.argv[1:4]
c = sqlite3.connect(db)
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
want = re.search(r"\('cuda', '([^']+)'", open(shipped).read()).group(1)
rows = c.execute("SELECT id, uuid, name FROM devices WHERE backend = 'cuda'").fetchall()
with open(note, "w") as f:
    for i, uuid, name in rows:
        f.write("measured on %s %s\n" % (name, uuid))
        if uuid != want:
            c.execute("UPDATE devices SET uuid = ? WHERE id = ?", (want, i))
            f.write("device row renamed to data/h100's %s (another unit of the same model)\n" % want)
c.commit()
c.close()
print(open(note).read(), end="")
PY
timeout 60 python3 scripts/export-data.py "$db" "$out/host_sql" > "$out/export.log" 2>&1
echo "export rc=$? $(head -c 300 "$out/export.log")"
head -n 1 "$out"/host_sql/*.sql
timeout 30 python3 - "$db" > "$out/summary.txt" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
# A profile item stores its host rows, then its free run (one run per call):
# the host rows of an item are those of its run since the run's previous item.
print("%-14s %3s %4s %6s %11s %11s %10s %7s %7s" % ("model", "b", "size", "layers", "host sum ms",
                                                  "enqueue ms", "latency ms", "sum/enq", "sum/lat"))
items = c.execute("SELECT run_id, model, batch, input_size, enqueue_ms, median_ms, created_at"
                  " FROM network_runs WHERE mode = 'free' ORDER BY run_id, created_at").fetchall()
prev = {}
for run, model, b, size, enq, lat, t in items:
    n, s = c.execute("SELECT count(*), coalesce(sum(median_ms), 0) FROM measurements"
                     " WHERE run_id = ? AND instr(settings_key, ';mode=host') > 0"
                     " AND created_at > ? AND created_at <= ?", (run, prev.get(run, 0), t)).fetchone()
    prev[run] = t
    print("%-14s %3d %4d %6d %11.4f %11.4f %10.4f %7.3f %7.3f" % (model, b, size, n, s, enq or 0, lat,
                                                                  s / enq if enq else 0, s / lat))
print("host rows: %d, free runs: %d" % (
    c.execute("SELECT count(*) FROM measurements WHERE instr(settings_key, ';mode=host') > 0").fetchone()[0],
    len(items)))
PY
cat "$out/summary.txt"
rm -f "$db-wal" "$db-shm"
echo "total $SECONDS s"
