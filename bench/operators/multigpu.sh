#!/usr/bin/env bash
# One operator sweep spread over 2 GPUs: the same sweep (bench/specs/
# operators_multigpu.yml, 288 conv2d configurations, latency only) with
# --gpus 0 and with --gpus 0,1, each into a database of its own.  Checks
# that both databases hold every configuration exactly once with status ok,
# that the one-GPU run's device row is GPU 0 and the two-GPU run recorded
# its measurements under two device rows, GPU 0's and GPU 1's (uuids as
# nvidia-smi lists them; CUDA numbers devices in PCI order here, as
# nvidia-smi does), each with measurements, and prints the throughput of
# both runs and the speed-up.  About 1 minute.
#   bash bench/operators/multigpu.sh OUTDIR      (after scripts/gpu-carry.sh)
set -uo pipefail
out=${1:-/tmp/operators_multigpu}
mkdir -p "$out"
rm -f "$out"/one.db* "$out"/two.db*
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export CUDA_DEVICE_ORDER=PCI_BUS_ID
bin=$PWD/.carry/bin/opsched
spec=bench/specs/operators_multigpu.yml
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,driver_version --format=csv,noheader
} > "$out/env.txt" 2>&1
cat "$out/env.txt"
$bin devices > "$out/devices.txt" 2>&1

tsec() { python3 -c 'import time; print(time.time())'; }
$bin sweep "$spec" --dry-run > "$out/dry.txt" 2>&1; tail -1 "$out/dry.txt"
for run in one:0 two:0,1; do
  name=${run%%:*} gpus=${run#*:}
  t0=$(tsec)
  $bin sweep "$spec" --gpus "$gpus" --db "$out/$name.db" > "$out/$name.log" 2>&1
  rc=$?
  t1=$(tsec)
  echo "$name: --gpus $gpus rc=$rc wall_s=$(python3 -c "print(round($t1 - $t0, 2))")"
  echo "${name}_s=$(python3 -c "print($t1 - $t0)")" >> "$out/times.txt"
  tail -1 "$out/$name.log"
  $bin status --db "$out/$name.db" > "$out/${name}_status.txt" 2>&1
done
cat "$out/two_status.txt"

python3 - "$out" <<'EOF' | tee "$out/report.txt"
import re, sqlite3, subprocess, sys
out = sys.argv[1]
n_spec = int(re.search(r"(\d+) configurations", open(f"{out}/dry.txt").read()).group(1))
times = dict(l.strip().split("=") for l in open(f"{out}/times.txt") if "=" in l)
smi = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.split()
ok = True

def check(name, want):
    """want: the uuids of the GPUs the run used, by CUDA index."""
    global ok
    db = sqlite3.connect(f"file:{out}/{name}.db?mode=ro", uri=True)
    q = lambda s: db.execute(s).fetchall()
    n_cfg = q("SELECT COUNT(*) FROM configs")[0][0]
    n_meas = q("SELECT COUNT(*) FROM measurements")[0][0]
    status = dict(q("SELECT status, COUNT(*) FROM measurements GROUP BY status"))
    twice = q("SELECT config_id, COUNT(*) FROM measurements GROUP BY config_id HAVING COUNT(*) <> 1")
    missing = q("SELECT COUNT(*) FROM configs c WHERE NOT EXISTS"
                " (SELECT 1 FROM measurements m WHERE m.config_id = c.id)")[0][0]
    devs = q("SELECT d.id, d.uuid, d.pci_bus_id, COUNT(m.id) FROM devices d"
             " JOIN measurements m ON m.device_id = d.id GROUP BY d.id ORDER BY d.pci_bus_id")
    good = (n_cfg == n_spec and n_meas == n_spec and status == {"ok": n_spec} and not twice
            and missing == 0 and len(devs) == len(want)
            and sorted(d[1] for d in devs) == sorted(want) and all(d[3] > 0 for d in devs))
    ok &= good
    print(f"{name}: {n_cfg} configs (spec {n_spec}), {n_meas} measurements, status {status},"
          f" {len(twice)} measured more than once, {missing} not measured:"
          f" {'PASS' if good else 'FAIL'}")
    for d in devs:
        gpu = smi.index(d[1]) if d[1] in smi else "?"
        print(f"    device row {d[0]}: GPU {gpu} {d[1]} pci {d[2]}: {d[3]} measurements")
    sigs = {r[0] for r in q("SELECT signature FROM configs")}
    db.close()
    return sigs

if len(smi) < 2:
    print(f"FAIL: nvidia-smi lists {len(smi)} GPU(s), this needs 2")
    smi += ["?", "?"]
s1 = check("one", smi[:1])
s2 = check("two", smi[:2])
same = s1 == s2
ok &= same
print(f"same configurations in both databases: {same}")
t1, t2 = float(times["one_s"]), float(times["two_s"])
print(f"throughput, 1 GPU : {n_spec} configs in {t1:.2f} s = {n_spec / t1:.1f} configs/s"
      " (process start, device setup and database writes included)")
print(f"throughput, 2 GPUs: {n_spec} configs in {t2:.2f} s = {n_spec / t2:.1f} configs/s")
print(f"speed-up          : {t1 / t2:.2f}x")
print("checks: " + ("PASS" if ok else "FAIL"))
EOF
tar -C "$(dirname "$out")" --exclude='*.db-wal' --exclude='*.db-shm' -czf "$out.tar.gz" "$(basename "$out")"
