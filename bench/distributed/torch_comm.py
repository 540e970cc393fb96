#!/usr/bin/env python3
"""torch.distributed collectives timed the way nccl-tests and `opsched
commbench` time them (benchmark tooling only): the PyTorch peer of opsched's
NCCL collective benchmark.

What it measures, for each collective and message size:
  * collectives: allreduce (all_reduce, sum, in place), allgather
    (all_gather_into_tensor), reducescatter (reduce_scatter_tensor, sum),
    broadcast (root 0), alltoall (all_to_all_single), sendrecv (each rank
    sends to (rank+1)%N and receives from (rank-1+N)%N, one
    batch_isend_irecv as one operation).
  * "size" is nccl-tests' size: the buffer of allreduce, broadcast and
    sendrecv; the whole output of allgather (each rank sends size/N); the
    whole input of reducescatter (each rank receives size/N); what each rank
    sends in alltoall (size/N to each peer).  The element count is
    size / element size, rounded down to a multiple of N for allgather,
    reducescatter and alltoall (a size left with no element is skipped); the
    bytes reported are count * element size.
  * timing: --warmup operations, then --samples samples, each --iters
    operations enqueued back to back between two CUDA events on the current
    stream (per-operation time = elapsed / iters).  Before each sample the
    ranks are lined up (stream synchronised, barrier), outside the timed
    region.  For each sample the slowest rank's time is kept (all_reduce MAX
    over ranks once a size is done); the median over samples is reported,
    with the minimum and maximum.  On --device cpu (gloo, for testing the
    script) time.perf_counter() brackets the operations and a barrier.
  * bandwidth as nccl-tests defines it: algbw = bytes / time (1 GB = 1e9
    bytes); busbw = algbw * factor, factor 2(N-1)/N for allreduce, (N-1)/N
    for allgather, reducescatter and alltoall, 1 for broadcast and sendrecv.
  * every result is checked: element i of rank r's input holds
    ((r+1)*3 + i) % 17 - 8 (small integers: sums over up to 8 ranks are
    exact in fp32, fp16 and bf16); after the timing the buffers are filled
    afresh, the operation runs once and its output is compared with the
    exact expected values; the number of wrong elements (all ranks) and the
    largest absolute error are reported.  A failed check makes the exit
    status 1 (after every size has been measured and written).

NCCL_NVLS_ENABLE is set to 0 unless the environment sets it; any other
value is refused (NVLink SHARP stays off, as in opsched commbench).

Run (one process per GPU; GPU machine):
    /opt/torch/.venv/bin/torchrun --standalone --nproc_per_node 8 \\
        bench/distributed/torch_comm.py --csv torch_comm.csv
    # options: --ops allreduce,allgather --min-bytes 8 --max-bytes 1G
    #          --step-factor 2 --dtype float32|float16|bfloat16
    #          --warmup 5 --samples 10 --iters 20
Test without a GPU (CPU, gloo):
    python3 -m torch.distributed.run --standalone --nproc_per_node 2 \\
        bench/distributed/torch_comm.py --device cpu --max-bytes 64K

Rank 0 prints an nccl-tests-like table and writes --csv FILE with the
columns collective,dtype,bytes,count,ranks,iters,samples,time_us_median,
time_us_min,time_us_max,algbw_gbs,busbw_gbs,wrong,max_error,torch_version,
nccl_version (compare with `opsched commbench --csv` by compare_comm.py).
"""
import argparse
import csv
import os
import statistics
import sys
import time

import dist_common as common
from dist_common import nccl_version_string, nonneg_int, positive_int

PROG = "torch_comm.py"
OPS = ("allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "sendrecv")
SPLIT_OPS = ("allgather", "reducescatter", "alltoall")  # count rounded to N
CSV_COLUMNS = ["collective", "dtype", "bytes", "count", "ranks", "iters", "samples",
               "time_us_median", "time_us_min", "time_us_max", "algbw_gbs", "busbw_gbs",
               "wrong", "max_error", "torch_version", "nccl_version"]
CHECK_CHUNK = 1 << 24  # elements compared at a time (bounds the check's extra memory)


def parse_bytes(text):
    """'8', '64K', '1M', '1G' (powers of 1024; a trailing B or iB is allowed)."""
    s = text.strip().upper()
    if s.endswith("IB"):
        s = s[:-2]
    elif s.endswith("B"):
        s = s[:-1]
    mult = 1
    if s[-1:] in ("K", "M", "G"):
        mult = 1024 ** ("KMG".index(s[-1]) + 1)
        s = s[:-1]
    try:
        n = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a size (e.g. 8, 64K, 16M, 1G)" % text)
    if n <= 0:
        raise argparse.ArgumentTypeError("%r: a size must be positive" % text)
    return n * mult


def parse_ops(text):
    ops = []
    for w in text.split(","):
        w = w.strip().lower().replace("_", "").replace("-", "")
        if not w:
            continue
        if w not in OPS:
            raise argparse.ArgumentTypeError("unknown collective %r (choices: %s)"
                                             % (w, ",".join(OPS)))
        if w not in ops:
            ops.append(w)
    if not ops:
        raise argparse.ArgumentTypeError("no collective named")
    return ops


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="torch.distributed collectives timed like nccl-tests / opsched commbench "
                    "(run under torchrun, one process per GPU)")
    p.add_argument("--ops", type=parse_ops, default=list(OPS),
                   help="comma list of %s (default: all)" % ",".join(OPS))
    p.add_argument("--min-bytes", type=parse_bytes, default=8,
                   help="smallest size (default 8; suffixes K, M, G = powers of 1024)")
    p.add_argument("--max-bytes", type=parse_bytes, default=1 << 30,
                   help="largest size (default 1G)")
    p.add_argument("--step-factor", type=positive_int, default=2,
                   help="sizes grow by this factor (default 2; at least 2)")
    p.add_argument("--dtype", choices=("float32", "float16", "bfloat16"), default="float32")
    p.add_argument("--warmup", type=nonneg_int, default=5, help="operations before the samples (5)")
    p.add_argument("--samples", type=positive_int, default=10, help="timed samples per size (10)")
    p.add_argument("--iters", type=positive_int, default=20, help="operations per sample (20)")
    common.add_device_option(p)
    p.add_argument("--csv", metavar="FILE", help="write the results here (rank 0)")
    a = p.parse_args(argv)
    if a.step_factor < 2:
        p.error("--step-factor must be at least 2")
    if a.min_bytes > a.max_bytes:
        p.error("--min-bytes (%d) is larger than --max-bytes (%d)" % (a.min_bytes, a.max_bytes))
    return a


def sizes(a):
    out, s = [], a.min_bytes
    while s <= a.max_bytes:
        out.append(s)
        s *= a.step_factor
    return out


def element_count(op, nbytes, elsize, n):
    count = nbytes // elsize
    if op in SPLIT_OPS:
        count = (count // n) * n
    return count


def busbw_factor(op, n):
    if op == "allreduce":
        return 2.0 * (n - 1) / n
    if op in SPLIT_OPS:
        return (n - 1) / n
    return 1.0


class Bench:
    def __init__(self, torch, dist, a):
        self.torch, self.dist, self.a = torch, dist, a
        self.rank = dist.get_rank()
        self.n = dist.get_world_size()
        self.cuda = a.device == "cuda"
        if self.cuda:
            self.dev = torch.device("cuda", torch.cuda.current_device())
        else:
            self.dev = torch.device("cpu")
        self.dtype = {"float32": torch.float32, "float16": torch.float16,
                      "bfloat16": torch.bfloat16}[a.dtype]
        self.elsize = torch.tensor([], dtype=self.dtype).element_size()
        self.notes = set()
        self.native = {}  # probed support of the tensor collectives on gloo

    # ---- data ---------------------------------------------------------
    def pattern(self, r, start, count, out=None):
        """Values f(r, i) = ((r+1)*3 + i) % 17 - 8 for i in [start, start+count)."""
        torch = self.torch
        idx = torch.arange(start, start + count, dtype=torch.int64, device=self.dev)
        v = ((idx + (r + 1) * 3) % 17 - 8).to(self.dtype)
        if out is not None:
            out.copy_(v)
            return out
        return v

    def fill(self, t, r, start=0):
        c = t.numel()
        for s in range(0, c, CHECK_CHUNK):
            m = min(CHECK_CHUNK, c - s)
            self.pattern(r, start + s, m, out=t[s:s + m])

    # ---- operations ---------------------------------------------------
    def make(self, op, count):
        """Allocates the buffers of one size; returns (run, send, recv) (send is recv
        for the in-place allreduce and broadcast)."""
        torch, dist, n, rank = self.torch, self.dist, self.n, self.rank
        empty = lambda c: torch.empty(c, dtype=self.dtype, device=self.dev)
        c = count // n
        if op == "allreduce":
            buf = empty(count)
            run = lambda: dist.all_reduce(buf, op=dist.ReduceOp.SUM)
            return run, buf, buf
        if op == "broadcast":
            buf = empty(count)
            run = lambda: dist.broadcast(buf, src=0)
            return run, buf, buf
        if op == "allgather":
            inp, out = empty(c), empty(count)
            if self.works("allgather", lambda: dist.all_gather_into_tensor(out, inp)):
                run = lambda: dist.all_gather_into_tensor(out, inp)
            else:
                views = list(out.chunk(n))
                run = lambda: dist.all_gather(views, inp)
                self.notes.add("allgather: all_gather into views of one tensor "
                               "(this backend has no all_gather_into_tensor)")
            return run, inp, out
        if op == "reducescatter":
            inp, out = empty(count), empty(c)
            run = lambda: dist.reduce_scatter_tensor(out, inp, op=dist.ReduceOp.SUM)
            if not self.works("reducescatter", run):
                tmp = empty(count)

                def run():  # emulated (gloo): same result, not the same traffic
                    tmp.copy_(inp)
                    dist.all_reduce(tmp, op=dist.ReduceOp.SUM)
                    out.copy_(tmp[rank * c:(rank + 1) * c])
                self.notes.add("reducescatter: EMULATED with all_reduce + slice "
                               "(this backend has no reduce_scatter_tensor)")
            return run, inp, out
        if op == "alltoall":
            inp, out = empty(count), empty(count)
            run = lambda: dist.all_to_all_single(out, inp)
            return run, inp, out
        if op == "sendrecv":
            send, recv = empty(count), empty(count)
            nxt, prv = (rank + 1) % n, (rank - 1 + n) % n
            if hasattr(dist, "batch_isend_irecv") and hasattr(dist, "P2POp"):
                p2p = [dist.P2POp(dist.isend, send, nxt), dist.P2POp(dist.irecv, recv, prv)]

                def run():
                    for w in dist.batch_isend_irecv(p2p):
                        w.wait()
            else:
                def run():
                    ws = [dist.isend(send, nxt), dist.irecv(recv, prv)]
                    for w in ws:
                        w.wait()
            return run, send, recv
        raise ValueError(op)

    def works(self, op, fn):
        """Whether a tensor collective runs on this backend: always on NCCL; on
        gloo (CPU testing) some torch versions lack all_gather_into_tensor or
        reduce_scatter_tensor.  Probed once per collective, agreed by all ranks."""
        if self.cuda:
            return True
        if op not in self.native:
            ok = 1
            try:
                fn()
            except (AttributeError, RuntimeError, NotImplementedError, ValueError):
                ok = 0
            t = self.torch.tensor([ok], dtype=self.torch.int32)
            self.dist.all_reduce(t, op=self.dist.ReduceOp.MIN)
            self.native[op] = bool(t.item())
        return self.native[op]

    # ---- check --------------------------------------------------------
    def expected(self, op, count, start, m):
        """Expected output elements [start, start+m) of this rank."""
        torch, n, rank = self.torch, self.n, self.rank
        f32 = torch.float32
        if op == "allreduce":
            e = torch.zeros(m, dtype=f32, device=self.dev)
            for r in range(n):
                e += self.pattern(r, start, m).float()
            return e
        if op == "broadcast":
            return self.pattern(0, start, m).float()
        if op == "sendrecv":
            return self.pattern((rank - 1 + n) % n, start, m).float()
        c = count // n
        if op == "reducescatter":
            e = torch.zeros(m, dtype=f32, device=self.dev)
            for r in range(n):
                e += self.pattern(r, rank * c + start, m).float()
            return e
        # allgather: out[j*c+i] = f(j, i); alltoall: out[j*c+i] = f(j, rank*c+i)
        parts, pos, end = [], start, start + m
        while pos < end:
            j, i = divmod(pos, c)
            k = min(c - i, end - pos)
            off = i if op == "allgather" else rank * c + i
            parts.append(self.pattern(j, off, k).float())
            pos += k
        return torch.cat(parts)

    def check(self, op, count, run, send, recv):
        torch, dist = self.torch, self.dist
        rank = self.rank
        self.fill(send, rank)
        if recv is not send:
            recv.fill_(float("nan"))  # stale values can't pass the check
        run()
        if self.cuda:
            torch.cuda.synchronize()
        wrong, max_err = 0, 0.0
        total = recv.numel()
        for s in range(0, total, CHECK_CHUNK):
            m = min(CHECK_CHUNK, total - s)
            err = (recv[s:s + m].float() - self.expected(op, count, s, m)).abs()
            bad = ~(err == 0)  # NaN counts as wrong
            nb = int(bad.sum().item())
            wrong += nb
            if nb:
                e = err.max().item() if not torch.isnan(err).any() else float("inf")
                max_err = max(max_err, e)
        t = torch.tensor([float(wrong), max_err], dtype=torch.float64, device=self.dev)
        tw = t[:1].clone()
        tm = t[1:].clone()
        dist.all_reduce(tw, op=dist.ReduceOp.SUM)
        dist.all_reduce(tm, op=dist.ReduceOp.MAX)
        return int(tw.item()), float(tm.item())

    # ---- timing -------------------------------------------------------
    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def time_size(self, run):
        torch, dist, a = self.torch, self.dist, self.a
        for _ in range(a.warmup):
            run()
        self.sync()
        dist.barrier()
        self.sync()
        samples = []
        if self.cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
        for _ in range(a.samples):
            if self.cuda:
                start.record()
                for _ in range(a.iters):
                    run()
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end) * 1e3 / a.iters)  # us
                dist.barrier()
                self.sync()
            else:
                t0 = time.perf_counter()
                for _ in range(a.iters):
                    run()
                dist.barrier()
                samples.append((time.perf_counter() - t0) * 1e6 / a.iters)
        t = torch.tensor(samples, dtype=torch.float64, device=self.dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)  # slowest rank, per sample
        return [float(x) for x in t.tolist()]

    def one(self, op, nbytes):
        """Measures one (collective, size); None when the size has no element."""
        count = element_count(op, nbytes, self.elsize, self.n)
        if count == 0:
            return None
        run, send, recv = self.make(op, count)
        self.fill(send, self.rank)
        if recv is not send:
            recv.zero_()
        times = self.time_size(run)
        wrong, max_err = self.check(op, count, run, send, recv)
        del run, send, recv
        med = statistics.median(times)
        b = count * self.elsize
        algbw = b / med / 1e3 if med > 0 else float("inf")  # bytes/us -> GB/s (1e9)
        return dict(collective=op, dtype=self.a.dtype, bytes=b, count=count, ranks=self.n,
                    iters=self.a.iters, samples=self.a.samples,
                    time_us_median=med, time_us_min=min(times), time_us_max=max(times),
                    algbw_gbs=algbw, busbw_gbs=algbw * busbw_factor(op, self.n),
                    wrong=wrong, max_error=max_err)


def fmt_row(r):
    return "%14s %13d %12d %9s %11.2f %11.2f %11.2f %8.3f %8.3f %8d %9.3g" % (
        r["collective"], r["bytes"], r["count"], r["dtype"], r["time_us_median"],
        r["time_us_min"], r["time_us_max"], r["algbw_gbs"], r["busbw_gbs"], r["wrong"],
        r["max_error"])


HEADER = "%14s %13s %12s %9s %11s %11s %11s %8s %8s %8s %9s" % (
    "collective", "size(B)", "count", "type", "time(us)", "min(us)", "max(us)",
    "algbw", "busbw", "#wrong", "maxerr")


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    common.check_nvls(PROG)
    torch = common.import_torch(PROG, distributed=True)
    dist = common.import_dist(PROG)

    common.single_rank_env(29517)  # plain `python3 torch_comm.py`: one rank
    local_rank, device = common.setup_device(PROG, torch, a.device == "cuda")
    rank, n = common.init_process_group(PROG, torch, dist, device)

    b = Bench(torch, dist, a)
    ver = nccl_version_string(torch, a.device)
    rows, failed = [], 0
    if rank == 0:
        dev = torch.cuda.get_device_name(local_rank) if a.device == "cuda" else "cpu"
        print("# torch_comm.py: %d ranks, %s, torch %s, %s, NCCL_NVLS_ENABLE=%s"
              % (n, dev, torch.__version__, "gloo" if a.device == "cpu" else "NCCL " + ver,
                 os.environ.get("NCCL_NVLS_ENABLE")))
        print("# warmup %d, %d samples of %d ops; time = median over samples of the slowest "
              "rank; min/max over samples; algbw/busbw GB/s (1e9 B/s)"
              % (a.warmup, a.samples, a.iters))
        print(HEADER, flush=True)
    try:
        for op in a.ops:
            if op == "sendrecv" and n == 1:
                b.notes.add("sendrecv: skipped (one rank has no peer)")
                continue
            for nbytes in sizes(a):
                r = b.one(op, nbytes)
                if r is None:
                    continue
                r["torch_version"] = torch.__version__
                r["nccl_version"] = ver
                rows.append(r)
                if r["wrong"]:
                    failed += 1
                if rank == 0:
                    print(fmt_row(r), flush=True)
        if rank == 0:
            for note in sorted(b.notes):
                print("# note: %s" % note)
            if a.csv:
                with open(a.csv, "w", newline="") as f:
                    w = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
                    w.writeheader()
                    for r in rows:
                        w.writerow({k: ("%.6g" % r[k] if isinstance(r[k], float) else r[k])
                                    for k in CSV_COLUMNS})
                print("# wrote %d rows to %s" % (len(rows), a.csv))
            if failed:
                print("# FAILED: %d result(s) failed the check" % failed, flush=True)
            else:
                print("# all %d results passed the check" % len(rows), flush=True)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
