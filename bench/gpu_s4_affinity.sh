#!/usr/bin/env bash
# Does the host's speed at batch 1 depend on where the process runs?  The
# GPU's NUMA node and CPU affinity (nvidia-smi topo), then resnet50 and
# densenet121 at batch 1, 224, free-running, N separate processes each:
# unpinned, pinned to the GPU's CPUs, pinned to the other CPUs.
#   bash bench/gpu_s4_affinity.sh OUTDIR    (after tar -C .carry -xJf .carry/carry.tar.xz)
set -uo pipefail
out=${1:-/tmp/s4_aff}
mkdir -p "$out"
. "$(dirname "$0")/gpu_env.sh"
gpu_env_write "$out" > /dev/null
{ nvidia-smi topo -m; lscpu | grep -iE "numa|^CPU\(s\)|Thread|Socket|Model name"; } > "$out/topo.txt" 2>&1
cat "$out/topo.txt"
local_cpus=$(nvidia-smi topo -m 2>/dev/null | awk '/^GPU0/ {for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$/ && $i ~ /-/) {print $i; exit}}')
n=$(nproc)
echo "GPU0 CPU affinity: ${local_cpus:-unknown}; nproc $n"
one() {  # label, prefix..., model
  local label=$1 m=$2; shift 2
  "$@" $bin profile $m --batch 1 --input-size 224 --math tf32 --cuda-graph off --layers off \
      --host-layers on --check off --warmup-ms 50 --min-ms 300 --out-dir "$out/p" 2>&1 |
    awk -v l="$label" -v m="$m" '/^Latency:/ {lat=$0} /^Host enqueue:/ {h=$0} END {
      match(lat, /median = [0-9.]+/); a=substr(lat, RSTART+9, RLENGTH-9);
      match(h, /sum of layers [0-9.]+/); b=substr(h, RSTART+14, RLENGTH-14);
      printf "%-10s %-12s latency %s ms host %s ms\n", l, m, a, b }'
}
for m in resnet50 densenet121; do
  for i in $(seq ${N:-5}); do one unpinned $m; done
  if [ -n "$local_cpus" ]; then
    for i in $(seq ${N:-5}); do one gpu-local $m taskset -c "$local_cpus"; done
  fi
  for c in 0 $((n / 2)) $((n - 1)); do one "cpu$c" $m taskset -c $c; done
done
