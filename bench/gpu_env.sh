# Sourced by the bench/gpu_s3_*.sh scripts on the GPU machine: the loader
# path for the carried build (.carry/, scripts/gpu-carry.sh) and the cuDNN
# of the machine's PyTorch, the binaries, and gpu_env_write OUTDIR, which
# records date, GPU, driver, PyTorch and cuDNN versions in OUTDIR/env.txt.
cudnn_venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
export LD_LIBRARY_PATH=$PWD/.carry/lib:$cudnn_venv:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bin=$PWD/.carry/bin/opsched
py=/opt/torch/.venv/bin/python3

gpu_env_write() {
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null) (of the tree sent; the binary: .carry)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit,uuid \
        --format=csv,noheader
    [ -x "$py" ] && "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  } > "$1/env.txt" 2>&1
  cat "$1/env.txt"
}
