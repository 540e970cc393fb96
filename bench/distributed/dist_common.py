"""Helpers shared by the PyTorch benchmark peers torch_comm.py and
torch_ddp.py (benchmark tooling only; not a script of its own).

What it holds:
  * fail(prog, msg, code): "PROG: error: MSG" on stderr, then exit CODE;
  * check_nvls(prog): NCCL_NVLS_ENABLE must be unset or 0 (set to 0 where
    unset): NVLink SHARP stays off, as in opsched commbench;
  * the --device cuda|cpu option, add_device_option(parser), and the
    argparse value parsers positive_int and nonneg_int;
  * PyTorch imports with the scripts' messages: import_torch(prog) and
    import_dist(prog) (torch.distributed, refused where unavailable);
  * the process-group set-up: single_rank_env(port) (a plain `python3
    X.py` is one rank; torchrun sets RANK and the rest itself),
    setup_device(prog, torch, cuda) (LOCAL_RANK's GPU, or the CPU) and
    init_process_group(prog, torch, dist, dev) (NCCL on a GPU, gloo on the
    CPU; returns rank and world size);
  * nccl_version_string(torch, device): "2.x.y", "gloo" on the CPU;
  * lsq_nonneg2(rows): the least-squares a, b >= 0 of y = a x1 + b x2 over
    rows of (x1, x2, y), for the check scripts' fitted terms.

The scripts import it as `dist_common` with their own folder first on
sys.path, which Python sets for a script run by path (`python3
bench/distributed/X.py`, and torchrun, which starts each rank that way).
Every helper that can fail takes the script's name (prog) for its messages.
"""
import argparse
import os
import sys


def fail(prog, msg, code=1):
    print("%s: error: %s" % (prog, msg), file=sys.stderr, flush=True)
    sys.exit(code)


def check_nvls(prog):
    """NVLink SHARP must stay off; call before init_process_group."""
    v = os.environ.get("NCCL_NVLS_ENABLE")
    if v is not None and v.strip() != "0":
        fail(prog, "NCCL_NVLS_ENABLE=%r: this benchmark runs with NVLink SHARP off "
             "(NCCL_NVLS_ENABLE=0, as opsched commbench does); unset it or set it to 0" % v)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")


# ---- command line -----------------------------------------------------------

def add_device_option(p):
    """--device cuda|cpu on the argparse parser p."""
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cuda: NCCL (default); cpu: gloo, for testing the script")


def positive_int(text):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % text)
    if n < 1:
        raise argparse.ArgumentTypeError("%r: must be at least 1" % text)
    return n


def nonneg_int(text):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % text)
    if n < 0:
        raise argparse.ArgumentTypeError("%r: must be 0 or more" % text)
    return n


# ---- PyTorch and the process group ----------------------------------------

def import_torch(prog, distributed=False):
    """torch (with torch.distributed imported too where asked); fails where
    PyTorch is missing."""
    try:
        import torch
        if distributed:
            import torch.distributed  # noqa: F401
    except ImportError as e:
        fail(prog, "PyTorch is needed (%s)" % e)
    return torch


def import_dist(prog):
    """torch.distributed; fails where this PyTorch has none."""
    import torch.distributed as dist
    if not dist.is_available():
        fail(prog, "this PyTorch has no torch.distributed")
    return dist


def single_rank_env(port):
    """Without torchrun (plain python3, no RANK): one rank, rendezvous on
    127.0.0.1:port unless MASTER_ADDR / MASTER_PORT are set."""
    if "RANK" not in os.environ:
        os.environ.update({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"})
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(port))


def setup_device(prog, torch, cuda):
    """(local_rank, device): GPU LOCAL_RANK made current where cuda, else the CPU."""
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if not cuda:
        return local_rank, torch.device("cpu")
    if not torch.cuda.is_available():
        fail(prog, "no CUDA device (use --device cpu to test with gloo)")
    if local_rank >= torch.cuda.device_count():
        fail(prog, "LOCAL_RANK %d but only %d GPU(s) visible"
             % (local_rank, torch.cuda.device_count()))
    torch.cuda.set_device(local_rank)
    return local_rank, torch.device("cuda", local_rank)


def init_process_group(prog, torch, dist, dev):
    """NCCL on a GPU device (bound to it where init_process_group takes
    device_id), gloo on the CPU; returns (rank, world size)."""
    cuda = dev.type == "cuda"
    backend = "nccl" if cuda else "gloo"
    if cuda and not dist.is_nccl_available():
        fail(prog, "this PyTorch was built without NCCL")
    kw = {}
    if cuda:
        import inspect
        if "device_id" in inspect.signature(dist.init_process_group).parameters:
            kw["device_id"] = dev
    dist.init_process_group(backend=backend, **kw)
    return dist.get_rank(), dist.get_world_size()


def nccl_version_string(torch, device):
    if device == "cpu":
        return "gloo"
    try:
        v = torch.cuda.nccl.version()
    except Exception:
        return "unknown"
    if isinstance(v, (tuple, list)):
        return ".".join(str(x) for x in v)
    v = int(v)  # old form: 2.x.y as 2*10000 + x*100 + y (or 1000s before 2.9)
    if v >= 10000:
        return "%d.%d.%d" % (v // 10000, (v % 10000) // 100, v % 100)
    return "%d.%d.%d" % (v // 1000, (v % 1000) // 100, v % 100)


def lsq_nonneg2(rows):
    """(a, b) >= 0 minimising the squared error of y = a * x1 + b * x2 over
    rows of (x1, x2, y): both free, or one of them held at 0 where the free
    solution goes negative; (0, 0) when nothing fits."""
    best = None
    for use in ((1, 1), (1, 0), (0, 1)):
        sxx = [[0.0, 0.0], [0.0, 0.0]]
        sxy = [0.0, 0.0]
        for x1, x2, y in rows:
            x = (x1 * use[0], x2 * use[1])
            for i in range(2):
                sxy[i] += x[i] * y
                for j in range(2):
                    sxx[i][j] += x[i] * x[j]
        if use == (1, 1):
            det = sxx[0][0] * sxx[1][1] - sxx[0][1] * sxx[1][0]
            if det <= 0:
                continue
            a = (sxy[0] * sxx[1][1] - sxx[0][1] * sxy[1]) / det
            b = (sxx[0][0] * sxy[1] - sxx[1][0] * sxy[0]) / det
        elif use == (1, 0):
            a, b = (sxy[0] / sxx[0][0] if sxx[0][0] else 0.0), 0.0
        else:
            a, b = 0.0, (sxy[1] / sxx[1][1] if sxx[1][1] else 0.0)
        if a < 0 or b < 0:
            continue
        sse = sum((y - a * x1 - b * x2) ** 2 for x1, x2, y in rows)
        if best is None or sse < best[2]:
            best = (a, b, sse)
    return (best[0], best[1]) if best else (0.0, 0.0)
