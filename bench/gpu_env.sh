# Sourced by the GPU scripts of bench/ (bench/gpu_tests.sh, bench/*/*.sh) on the GPU machine: the loader
# path for the carried build (.carry/, scripts/gpu-carry.sh) and the cuDNN
# of the machine's PyTorch, the binaries, and gpu_env_write OUTDIR, which
# records date, GPU, driver, PyTorch and cuDNN versions in OUTDIR/env.txt,
# and gpu_rename_device DB.  CARRY names the unpacked carry (default .carry),
# so one call can hold two builds (one for the suite, one under test).
carry=$PWD/${CARRY:-.carry}
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$carry/bin/opsched
# NCCL: the one the machine's PyTorch uses, so that opsched commbench and
# torch.distributed measure the same library.
nccl_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
[ -z "${OPSCHED_NCCL_LIB:-}" ] && [ -f "$nccl_venv" ] && export OPSCHED_NCCL_LIB=$nccl_venv
export NCCL_NVLS_ENABLE=0
py=/opt/torch/.venv/bin/python3

gpu_env_write() {
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null) (of the tree sent)"
    echo "binary: $(cat "$carry/commit.txt" 2>/dev/null || echo unknown) (${CARRY:-.carry}, built at that commit)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit,uuid \
        --format=csv,noheader
    [ -x "$py" ] && "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  } > "$1/env.txt" 2>&1
  cat "$1/env.txt"
}

# gpu_rename_device DB: its CUDA device row renamed to data/h100's uuid (the
# device tool lends another H100 unit from call to call; the data set has one).
gpu_rename_device() {
  python3 - "$1" data/h100/devices.sql <<'PY'
import re, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
want = re.search(r"\('cuda', '([^']+)'", open(sys.argv[2]).read()).group(1)
for i, uuid, name in c.execute("SELECT id, uuid, name FROM devices WHERE backend = 'cuda'").fetchall():
    print("measured on %s %s" % (name, uuid))
    if uuid != want:
        c.execute("UPDATE devices SET uuid = ? WHERE id = ?", (want, i))
        print("device row renamed to data/h100's %s" % want)
print("measurements: %d ok of %d" % (
    c.execute("SELECT count(*) FROM measurements WHERE status = 'ok'").fetchone()[0],
    c.execute("SELECT count(*) FROM measurements").fetchone()[0]))
c.commit()
PY
}
