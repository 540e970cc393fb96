#!/usr/bin/env python3
"""The network suite: every network of the public model set
(bench/networks/models/manifest.json) run by opsched and by its peers, in
the same call, on the same GPU, with the same input shapes and math.

For each model x batch x math (default: batch 1 in TF32 and fp16, batch 8
in TF32):

  opsched     `opsched run FILE --compare sequential,ios` with the tool's
              defaults (its layout, algorithms and schedule), as one CUDA
              graph: `opsched_ms` is the deployed schedule (the ios row,
              which runs the fastest of the schedules checked whole),
              `opsched_seq_ms` the sequential schedule.  It runs twice,
              before and after the peers, and reports the mean of the two
              medians, so that a drift of the clocks hits both sides alike
              (`opsched_drift` is the second over the first).
              `opsched_s` and `opsched_again_s` are the two runs' wall
              seconds: planning, the schedule search and the timing (the
              second plans from the caches the first filled).
  torch_eager     PyTorch eager, the model as its constructor builds it
  torch_graph     the same, captured once and replayed as a CUDA graph
  torch_compile   torch.compile(mode="reduce-overhead") with inductor
                  freezing and channels_last (4-D inputs)
  torch_autotune  torch.compile(mode="max-autotune"), in a process of its
                  own with a time limit (--autotune-limit-s); a second pass
  ort_cuda        ONNX Runtime's CUDA provider, when the machine has it

The PyTorch peers run in one child process (started again after an item
that overran its time or crashed) and are timed in turns
(round robin, CUDA events around each inference).  An item that fails to
load, compile or run is a row carrying its error.  Rows are written to
OUT/results.csv after every item (a temporary file renamed over it), and a
call continues where the last one stopped, within --budget-s (checked
between items; --hard-limit-s also cuts every step at that many seconds).

    suite.py run --out DIR [--models a,b] [--budget-s 540]     # on the GPU
    suite.py run --out DIR --gpus 4     # the items dealt over 4 GPUs of a host
    suite.py run --out DIR --backend cpu --models squeezenet1_1 # CPU backend
    suite.py report DIR      # summary.md, speedup.png from results.csv
    suite.py run --out DIR/no-depthwise --peers "" --opsched-args="--ablate depthwise"
    suite.py ablation DIR DIR/no-depthwise ...   # ablation.md: what each part buys
    suite.py standing DIR DIR2 ... --out FILE    # a model x configuration matrix over calls

An ablation is a run of opsched alone (--peers "") with extra arguments
(--opsched-args: --ablate depthwise|epilogue|engines|reductions|chains|residual,
--fuse off, --layout nhwc ...) into a folder of its own; `ablation` reads the full planner's
folder first and each variant's after it, and writes the table of
opsched's time in each and the factor by which it is slower than the full
planner (ablation.md in the first folder).

With --gpus N the items are dealt round-robin to N shards, one a GPU of
the host, each run by a process of its own (CUDA_VISIBLE_DEVICES) pinned
to its own slice of the host's cores, so that no shard's compiling takes
the cores another shard times on.  Every item's opsched and peers run on
one GPU: a row compares like with like.  Shard K writes results-K.csv,
suite-K.log, env-K.txt and stages-K.db; every results*.csv of the folder
counts as done when a call resumes (with any number of shards), and the
report reads them all.

On the CPU backend the PyTorch peers are skipped with a message unless torch
has CUDA.
"""
import argparse
import csv
import shlex
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MANIFEST = os.path.join(HERE, "models", "manifest.json")
PEERS = ["torch_eager", "torch_graph", "torch_compile", "torch_autotune", "ort_cuda"]
FIELDS = (["model", "family", "task", "batch", "math", "input", "backend",
           "opsched_ms", "opsched_seq_ms", "opsched_free_ms", "opsched_drift", "opsched_layout",
           "opsched_error"]
          + [c for p in PEERS for c in (p + "_ms", p + "_error")]
          + ["opsched_s", "opsched_again_s", "torch_compile_s", "torch_autotune_s",
             "speedup_vs_compile", "seconds", "finished"])
ROUND = 8


# ---- results file ----------------------------------------------------------

def read_rows(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_rows(path, rows):
    """Whole file to a temporary file, flushed, renamed over the old one."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".results.", dir=d)
    with os.fdopen(fd, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def key(r):
    return (r["model"], str(r["batch"]), r["math"])


def results_files(d):
    """results.csv and the shards' results-K.csv of a folder."""
    names = sorted(n for n in os.listdir(d) if n == "results.csv"
                   or (n.startswith("results-") and n.endswith(".csv"))) if os.path.isdir(d) else []
    return [os.path.join(d, n) for n in names]


def read_all_rows(d):
    """The rows of every results file of a folder, one per item: of two
    rows of an item (one run again, by another shard), the one finished
    last."""
    by = {}
    for path in results_files(d):
        for r in read_rows(path):
            k = key(r)
            if k not in by or r.get("finished", "") >= by[k].get("finished", ""):
                by[k] = r
    return list(by.values())


# ---- opsched ---------------------------------------------------------------

def find_opsched(given):
    for p in [given, os.path.join(ROOT, ".carry", "bin", "opsched"),
              os.path.join(ROOT, "build", "bin", "opsched")]:
        if p and os.access(p, os.X_OK):
            return p
    sys.exit("suite.py: no opsched binary (build it, or give --opsched)")


def one_line(text, limit=300):
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    msg = lines[-1] if lines else "no message"
    for l in lines:
        if l.startswith("opsched") and ("error" in l or ": " in l) and "warning:" not in l:
            msg = l
            break
    return msg[:limit]


def step_limit(a, timeout_s):
    """The seconds a step may take: its own timeout, and no longer than what is
    left of --hard-limit-s."""
    end = getattr(a, "hard_end", None)
    if not end:
        return timeout_s
    return max(1, int(min(timeout_s, end - time.time())))


def opsched_run(a, m, batch, mathmode, stages_db, logf):
    """One `opsched run --compare sequential,ios`: (ios, sequential, free, layout) in ms
    and the run's wall seconds (planning, search, timing), or raises RuntimeError with
    the tool's message."""
    path = os.path.join(HERE, m["file"])
    shapes = ",".join("%s:%s" % (s["name"], "x".join(str(batch if d == "batch" else d)
                                                    for d in s["shape"])) for s in m["inputs"])
    cmd = [a.opsched, "run", path, "--shapes", shapes, "--math", mathmode,
           "--compare", "sequential,ios", "--db", stages_db, "--backend", a.backend]
    cmd += ["--format", "csv"] if a.run_csv else ["--layout", "nhwc" if a.backend == "cuda" else "nchw"]
    cmd += shlex.split(getattr(a, "opsched_args", "") or "")
    if a.quick:
        cmd += ["--iters", "10", "--min-ms", "50", "--warmup-ms", "20"]
    else:
        cmd += ["--min-ms", "%g" % a.min_ms, "--warmup-ms", "%g" % a.warmup_ms]
    logf.write("$ %s\n" % " ".join(cmd))
    logf.flush()
    limit = step_limit(a, a.opsched_timeout_s)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise RuntimeError("opsched run took over %d s" % limit)
    logf.write(p.stdout + p.stderr)
    if p.returncode != 0:
        raise RuntimeError("exit %d: %s" % (p.returncode, one_line(p.stderr or p.stdout)))
    rows = ({r["schedule"]: r for r in csv.DictReader(p.stdout.splitlines())} if a.run_csv
            else parse_run_table(p.stdout))
    if "ios" not in rows or "sequential" not in rows:
        raise RuntimeError("opsched run printed no ios/sequential rows")
    graph = rows["ios"].get("graph_ms") or ""
    col = "graph_ms" if graph else "free_ms"   # the CPU backend has no CUDA graph
    return (float(rows["ios"][col]), float(rows["sequential"][col]),
            float(rows["ios"]["free_ms"]), rows["ios"].get("layout", ""), time.time() - t0)


def parse_run_table(text):
    """Rows of `opsched run`'s table (a binary without --format csv)."""
    rows, layout = {}, ""
    for line in text.splitlines():
        t = line.replace("|", " ").split()
        if "; " in line and (" nhwc" in line or " nchw" in line):
            layout = "nhwc" if " nhwc" in line else "nchw"
        if len(t) >= 14 and t[0] in ("sequential", "greedy", "ios") and t[1].isdigit():
            rows[t[0]] = {"schedule": t[0], "free_ms": t[8],
                          "graph_ms": "" if t[11] == "-" else t[11], "layout": layout}
    return rows


# ---- the PyTorch peers (child process) ---------------------------------------

def build_model(m, batch, mathmode, torch):
    sys.path.insert(0, HERE)
    import export_models
    entry = next(e for e in export_models.SET if e[0] == m["name"])
    net, args, _, _ = export_models.build(entry)
    args = tuple(x.repeat(batch, *([1] * (x.dim() - 1))) for x in args)
    if mathmode == "fp16":
        net = net.half()
        args = tuple(x.half() if x.is_floating_point() else x for x in args)
    return net.cuda().eval(), tuple(x.cuda() for x in args)


def time_turns(torch, fns, min_ms, warmup_ms):
    """Round-robin timing of several callables: {name: [ms, ...]}."""
    for fn in fns.values():
        t0 = time.perf_counter()
        n = 0
        while n < 3 or (time.perf_counter() - t0) * 1e3 < warmup_ms:
            fn()
            n += 1
        torch.cuda.synchronize()
    samples = {k: [] for k in fns}
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(ROUND)]
    rounds = 0
    while rounds < 5 or min(sum(s) for s in samples.values()) < min_ms:
        for k, fn in fns.items():
            for s, e in ev:
                s.record()
                fn()
                e.record()
            ev[-1][1].synchronize()
            samples[k].extend(s.elapsed_time(e) for s, e in ev)
        rounds += 1
        if rounds > 2000:
            break
    return samples


def peer_item(torch, m, batch, mathmode, modes, min_ms, warmup_ms):
    """Times the PyTorch peers of one item: {column: value}."""
    out = {}
    tf32 = mathmode == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    fns = {}
    with torch.no_grad():
        try:
            net, args = build_model(m, batch, mathmode, torch)
        except Exception as ex:
            msg = "build: %s: %s" % (type(ex).__name__, first_line(ex))
            return {p + "_error": msg for p in modes}
        if "torch_eager" in modes:
            fns["torch_eager"] = lambda: net(*args)
        if "torch_graph" in modes:
            try:
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        net(*args)
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    net(*args)
                fns["torch_graph"] = g.replay
            except Exception as ex:
                out["torch_graph_error"] = "%s: %s" % (type(ex).__name__, first_line(ex))
        for mode, tmode in (("torch_compile", "reduce-overhead"), ("torch_autotune", "max-autotune")):
            if mode not in modes:
                continue
            try:
                import torch._inductor.config as icfg
                icfg.freezing = True
                cnet, cargs = net, args
                if args[0].dim() == 4:
                    cnet = net.to(memory_format=torch.channels_last)
                    cargs = tuple(x.contiguous(memory_format=torch.channels_last) for x in args)
                c = torch.compile(cnet, mode=tmode)
                t0 = time.perf_counter()
                for _ in range(3):
                    c(*cargs)
                torch.cuda.synchronize()
                out[mode + "_s"] = round(time.perf_counter() - t0, 1)
                fns[mode] = (lambda c=c, cargs=cargs: c(*cargs))
            except Exception as ex:
                out[mode + "_error"] = "%s: %s" % (type(ex).__name__, first_line(ex))
        try:
            samples = time_turns(torch, fns, min_ms, warmup_ms)
            for k, v in samples.items():
                out[k + "_ms"] = statistics.median(v)
        except Exception as ex:
            for k in fns:
                out[k + "_error"] = "timing: %s: %s" % (type(ex).__name__, first_line(ex))
    del fns
    try:
        torch._dynamo.reset()
    except Exception:
        pass
    import gc
    gc.collect()
    torch.cuda.empty_cache()
    return out


def first_line(ex):
    lines = str(ex).strip().splitlines()
    return lines[0][:200] if lines else ""


def peer_main(a):
    """Child: reads one JSON item a line on stdin, answers one JSON line on
    stdout; torch is imported once for all the items of a call."""
    try:
        import torch
        skip = None if torch.cuda.is_available() else "torch has no CUDA here"
    except ImportError:
        torch, skip = None, "torch is not installed"
    with open(MANIFEST) as f:
        models = {x["name"]: x for x in json.load(f)["models"]}
    real_stdout = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what torch and inductor print goes to stderr
    for line in sys.stdin:
        it = json.loads(line)
        if skip:
            res = {"skip": skip}
        else:
            res = peer_item(torch, models[it["model"]], it["batch"], it["math"], it["modes"],
                            it["min_ms"], it["warmup_ms"])
        real_stdout.write(json.dumps(res) + "\n")
        real_stdout.flush()
    return 0


class PeerWorker:
    """The child process of the PyTorch peers, started on first use and
    started again after an item that overran its time or killed it."""

    def __init__(self, logf):
        self.p = None
        self.logf = logf

    def ask(self, item, timeout_s):
        """The peers' answer for one item; an item that kills the process is
        tried once more in a new one (a crash can be the previous item's
        leftovers)."""
        res = self.ask_once(item, timeout_s)
        if res.get("died"):
            res = self.ask_once(item, timeout_s)
        res.pop("died", None)
        return res

    def ask_once(self, item, timeout_s):
        import select
        if self.p is None or self.p.poll() is not None:
            self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "peer"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self.logf, text=True, bufsize=1)
        self.p.stdin.write(json.dumps(item) + "\n")
        self.p.stdin.flush()
        ready, _, _ = select.select([self.p.stdout], [], [], timeout_s)
        line = self.p.stdout.readline() if ready else ""
        if not line:
            if not ready:
                self.close()
                return {mm + "_error": "did not finish within %d s (compile and timing)" % timeout_s
                        for mm in item["modes"]}
            try:
                code = self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = "none, closed its output"
            self.close()
            res = {mm + "_error": "the peer process died (exit %s)" % code for mm in item["modes"]}
            res["died"] = True
            return res
        res = json.loads(line)
        if "skip" in res:
            return {mm + "_error": "skipped: " + res["skip"] for mm in item["modes"]}
        return res

    def close(self):
        if self.p is not None:
            if self.p.poll() is None:
                self.p.kill()
            self.p.wait()
            self.p = None


def ort_status():
    try:
        import onnxruntime as ort
    except ImportError:
        return "onnxruntime is not installed"
    prov = ort.get_available_providers()
    if "CUDAExecutionProvider" not in prov:
        return "onnxruntime %s has no CUDA provider here (%s)" % (ort.__version__, ",".join(prov))
    return None


def run_ort(m, batch, mathmode, a):
    """ONNX Runtime's CUDA provider on the model with random weights."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    if mathmode != "tf32":
        raise RuntimeError("only the TF32 rows run on ONNX Runtime (the files are fp32)")
    model = onnx.load(os.path.join(HERE, m["file"]), load_external_data=False)
    rng = np.random.default_rng(1)
    for i, t in enumerate(model.graph.initializer):
        if t.data_location == onnx.TensorProto.EXTERNAL:
            arr = (rng.standard_normal(tuple(t.dims)) * 0.02).astype(np.float32)
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(arr, t.name))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CUDAExecutionProvider"])
    feeds = {}
    for s in m["inputs"]:
        shape = [batch if d == "batch" else d for d in s["shape"]]
        feeds[s["name"]] = (rng.integers(0, 1000, shape) if s["dtype"] == "int64"
                            else rng.standard_normal(shape).astype(np.float32))
    for _ in range(10):
        sess.run(None, feeds)
    ts = []
    t_end = time.perf_counter() + a.min_ms / 1e3
    while len(ts) < 20 or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        sess.run(None, feeds)
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


# ---- the run ----------------------------------------------------------------

def items(a, manifest):
    names = a.models.split(",") if a.models else [m["name"] for m in manifest["models"]]
    by = {m["name"]: m for m in manifest["models"]}
    bad = [n for n in names if n not in by]
    if bad:
        sys.exit("suite.py: not in the manifest: %s" % ",".join(bad))
    configs = [tuple(c.split(":")) for c in a.configs.split(",")]
    for bs, mm in configs:
        for n in names:
            yield by[n], int(bs) if bs != "B" else by[n]["batches"][-1], mm


def env_write(a, out, name="env.txt"):
    lines = ["date: %s" % time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "host: %s %s" % (platform.node(), platform.platform())]
    try:
        lines.append("commit: " + subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                                 capture_output=True, text=True).stdout.strip())
    except OSError:
        pass
    p = subprocess.run([a.opsched, "--version"], capture_output=True, text=True)
    lines.append(p.stdout.strip())
    if shutil.which("nvidia-smi"):
        q = ("name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,"
             "power.limit,uuid")
        p = subprocess.run(["nvidia-smi", "--query-gpu=" + q, "--format=csv"],
                           capture_output=True, text=True)
        lines.append(p.stdout.strip())
    p = subprocess.run([a.opsched, "devices"], capture_output=True, text=True)
    lines.append(p.stdout.strip())
    p = subprocess.run([sys.executable, "-c",
                        "import torch,sys; print('python', sys.version.split()[0], 'torch', "
                        "torch.__version__, 'cuda', torch.version.cuda, 'cudnn', "
                        "torch.backends.cudnn.version())"],
                       capture_output=True, text=True)
    lines.append((p.stdout or p.stderr).strip().splitlines()[-1] if (p.stdout or p.stderr) else "")
    for mod in ("torchvision", "transformers", "onnx", "onnxruntime", "triton"):
        p = subprocess.run([sys.executable, "-c", "import %s; print('%s', %s.__version__)" % (mod, mod, mod)],
                           capture_output=True, text=True)
        lines.append(p.stdout.strip() or "%s: not installed" % mod)
    lines.append("onnxruntime CUDA provider: %s" % (ort_status() or "present"))
    lines.append("settings: %s" % " ".join(sys.argv[1:]))
    with open(os.path.join(out, name), "a") as f:
        f.write("\n".join(lines) + "\n\n")


def run_sharded(a):
    """--gpus N: N children `run --shard K/N`, child K on GPU K and the K-th
    slice of this process's cores; 0 when all finished, 3 when one stopped
    at its budget (run again), else 1."""
    argv, skip = [], False
    for x in sys.argv[2:]:
        if skip:
            skip = False
            continue
        if x == "--gpus":
            skip = True
            continue
        if x.startswith("--gpus="):
            continue
        argv.append(x)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus = visible.split(",") if visible else [str(i) for i in range(a.gpus)]
    if len(gpus) < a.gpus:
        sys.exit("suite.py: --gpus %d but CUDA_VISIBLE_DEVICES names %d" % (a.gpus, len(gpus)))
    cores = sorted(os.sched_getaffinity(0))
    per = max(1, len(cores) // a.gpus)
    procs = []
    for k in range(a.gpus):
        mine = cores[k * per:(k + 1) * per] or cores
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpus[k],
                   TORCHINDUCTOR_COMPILE_THREADS=str(len(mine)), OMP_NUM_THREADS=str(len(mine)))
        cmd = [sys.executable, os.path.abspath(__file__), "run", "--shard", "%d/%d" % (k, a.gpus)]
        procs.append(subprocess.Popen(cmd + argv, env=env,
                                      preexec_fn=lambda m=mine: os.sched_setaffinity(0, m)))
    codes = [p.wait() for p in procs]
    print("suite: shards ended with %s" % codes, flush=True)
    if all(c == 0 for c in codes):
        return 0
    return 3 if all(c in (0, 3) for c in codes) else 1


def run_main(a):
    a.opsched = find_opsched(a.opsched)
    os.makedirs(a.out, exist_ok=True)
    if a.gpus > 1 and a.shard is None:
        return run_sharded(a)
    with open(MANIFEST) as f:
        manifest = json.load(f)
    shard, nshards, tag = 0, 1, ""
    if a.shard is not None:
        try:
            shard, nshards = (int(x) for x in a.shard.split("/"))
            assert 0 <= shard < nshards
        except (ValueError, AssertionError):
            sys.exit("suite.py: --shard wants K/N with 0 <= K < N, not %r" % a.shard)
        tag = "-%d" % shard
    results = os.path.join(a.out, "results%s.csv" % tag)
    # This process writes its own file; every results file of the folder
    # says what is done.
    rows = read_rows(results)
    done = {key(r): r for r in read_all_rows(a.out)}
    done.update({key(r): r for r in rows})
    if a.retry_errors:
        # Items whose opsched run failed or whose peer process died or
        # overran are run again; their new row replaces the old one.
        done = {k: r for k, r in done.items() if not (
            r.get("opsched_error") or any(
                ("died" in r.get(p + "_error", "") or "did not finish" in r.get(p + "_error", ""))
                for p in PEERS))}
    start = time.time()
    a.hard_end = start + a.hard_limit_s if a.hard_limit_s else None
    env_write(a, a.out, "env%s.txt" % tag)
    stages_db = os.path.join(a.out, "stages%s.db" % tag)
    logf = open(os.path.join(a.out, "suite%s.log" % tag), "a")
    peers = [p for p in a.peers.split(",") if p]
    ort_why = ort_status() if "ort_cuda" in peers else "not asked for"
    worker = PeerWorker(logf)
    a.run_csv = "--format" in subprocess.run([a.opsched, "run", "--help"], capture_output=True,
                                             text=True).stdout
    todo = [t for i, t in enumerate(items(a, manifest)) if i % nshards == shard]
    print("suite%s: %d items, %d done before, %s backend, peers %s" % (
        tag, len(todo), sum(1 for t in todo if (t[0]["name"], str(t[1]), t[2]) in done), a.backend,
        ",".join(peers) or "none"), flush=True)
    # Pass 1: opsched, the quick peers and reduce-overhead compile.  Pass 2:
    # max-autotune for the rows that do not have it yet.
    for phase in (1, 2):
        for m, batch, mathmode in todo:
            if time.time() - start > a.budget_s or step_limit(a, 1e9) < 5:
                print("suite: %s spent; run again to continue" % (
                    "budget of %d s" % a.budget_s if time.time() - start > a.budget_s
                    else "hard limit of %d s" % a.hard_limit_s))
                worker.close()
                logf.close()
                return 3
            k = (m["name"], str(batch), mathmode)
            item = {"model": m["name"], "batch": batch, "math": mathmode,
                    "min_ms": a.min_ms, "warmup_ms": a.warmup_ms}
            if phase == 1 and k in done:
                continue
            if phase == 2:
                r = done.get(k)
                if not r or r.get("torch_autotune_ms") or r.get("torch_autotune_error"):
                    continue
                if not any(x is r for x in rows):
                    rows.append(r)  # another file's row, kept here once updated
                t0 = time.time()
                res = worker.ask(dict(item, modes=["torch_autotune"]),
                                 step_limit(a, a.autotune_limit_s))
                for c in ("torch_autotune_ms", "torch_autotune_error", "torch_autotune_s"):
                    if c in res:
                        r[c] = fmt(res[c])
                r["seconds"] = fmt(float(r.get("seconds") or 0) + time.time() - t0)
                write_rows(results, rows)
                print("  %-26s b%-2d %-4s autotune %s" % (m["name"], batch, mathmode,
                      r.get("torch_autotune_ms") or r.get("torch_autotune_error")), flush=True)
                continue
            t0 = time.time()
            size = m.get("input_size") or m.get("sequence")
            r = {"model": m["name"], "family": m["family"], "task": m["task"], "batch": batch,
                 "math": mathmode, "input": size, "backend": a.backend}
            if "error" in m or "file" not in m:
                r["opsched_error"] = "no ONNX file: %s" % m.get("error", "not exported")
            first = None
            if not r.get("opsched_error"):
                try:
                    first = opsched_run(a, m, batch, mathmode, stages_db, logf)
                except RuntimeError as ex:
                    r["opsched_error"] = str(ex)
            pm = [p for p in peers if p in ("torch_eager", "torch_graph", "torch_compile")]
            if pm:
                r.update({k2: fmt(v) for k2, v in
                          worker.ask(dict(item, modes=pm), step_limit(a, a.peer_timeout_s)).items()})
            if "ort_cuda" in peers:
                if ort_why:
                    r["ort_cuda_error"] = ort_why
                else:
                    try:
                        r["ort_cuda_ms"] = fmt(run_ort(m, batch, mathmode, a))
                    except Exception as ex:
                        r["ort_cuda_error"] = "%s: %s" % (type(ex).__name__, str(ex)[:200])
            if first:
                try:
                    second = opsched_run(a, m, batch, mathmode, stages_db, logf)
                    r["opsched_drift"] = fmt(second[0] / first[0])
                except RuntimeError as ex:
                    second = first
                    r["opsched_drift"] = ""
                    logf.write("second opsched round failed: %s\n" % ex)
                r["opsched_ms"] = fmt((first[0] + second[0]) / 2)
                r["opsched_seq_ms"] = fmt((first[1] + second[1]) / 2)
                r["opsched_free_ms"] = fmt((first[2] + second[2]) / 2)
                r["opsched_layout"] = first[3]
                r["opsched_s"] = fmt(first[4])
                if second is not first:
                    r["opsched_again_s"] = fmt(second[4])
            why = autotune_skip(a, peers, m["name"], batch, mathmode)
            if why:
                r["torch_autotune_error"] = why
            if r.get("opsched_ms") and r.get("torch_compile_ms"):
                r["speedup_vs_compile"] = fmt(float(r["torch_compile_ms"]) / float(r["opsched_ms"]))
            r["seconds"] = fmt(time.time() - t0)
            r["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            rows = [x for x in rows if key(x) != k] + [r]
            done[k] = r
            write_rows(results, rows)
            print("  %-26s b%-2d %-4s opsched %s  compile %s  (%.0f s)" % (
                m["name"], batch, mathmode, r.get("opsched_ms") or "error: " + r.get("opsched_error", ""),
                r.get("torch_compile_ms") or r.get("torch_compile_error", "-"), time.time() - t0),
                flush=True)
    worker.close()
    logf.close()
    print("suite: all %d items done (%s)" % (len(todo), results))
    return 0


def autotune_skip(a, peers, name, batch, mathmode):
    """Why max-autotune does not run for an item, or None."""
    if "torch_autotune" not in peers:
        return "not run (not among --peers)"
    if batch != 1 or mathmode != a.autotune_math:
        return "not run (max-autotune runs at batch 1, %s)" % a.autotune_math
    if a.autotune_models and name not in a.autotune_models.split(","):
        return "not run (not among --autotune-models)"
    return None


def fmt(v):
    if isinstance(v, float):
        return "%.4f" % v if abs(v) < 1000 else "%.1f" % v
    return v


# ---- the report ---------------------------------------------------------------

def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def ablation_main(a):
    """ablation.md in the first folder: for each (model, batch, math) of the
    full planner's rows, opsched's time there and in each variant, and the
    variant's time over the full planner's; the geometric mean of each
    variant's factor over the items both ran."""
    if len(a.dirs) < 2:
        sys.exit("suite.py ablation: give the full planner's folder and at least one variant's")
    tables = []
    for d in a.dirs:
        rows = read_all_rows(d)
        if not rows:
            sys.exit("suite.py ablation: no rows in %s/results*.csv" % d)
        tables.append({key(r): r for r in rows})
    names = [os.path.basename(os.path.normpath(d)) for d in a.dirs]
    head = "| model | batch | math | %s |" % " | ".join(
        [names[0] + " (ms)"] + ["%s (ms, x)" % n for n in names[1:]])
    lines = ["# Ablation", "",
             "opsched's deployed schedule as one CUDA graph (`opsched_ms`, medians in ms) with "
             "the full planner (`%s`) and with parts of it turned off (each variant's folder "
             "name; its `suite-*.log` has the command).  x = the variant's time over the full "
             "planner's: above 1, the part turned off buys that much." % names[0], "",
             head, "|" + "---|" * (3 + len(names))]
    factors = [[] for _ in names[1:]]
    for k, base in tables[0].items():
        cells = [base["model"], base["batch"], base["math"], base.get("opsched_ms") or "—"]
        for i, t in enumerate(tables[1:]):
            v = t.get(k)
            ms = v.get("opsched_ms") if v else ""
            if ms and base.get("opsched_ms"):
                f = float(ms) / float(base["opsched_ms"])
                factors[i].append(f)
                cells.append("%s (%.2fx)" % (ms, f))
            else:
                cells.append((v or {}).get("opsched_error", "")[:60] or "—")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Geometric mean of x: " + ", ".join(
        "%s %.3fx over %d" % (n, geomean(f), len(f)) for n, f in zip(names[1:], factors))]
    path = os.path.join(a.dirs[0], "ablation.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(lines[-1])
    print("wrote %s" % path)
    return 0


def standing_main(a):
    """A matrix of where each model stands against torch.compile over
    several results folders (calls, shards, days): for each (model, batch,
    math) the row finished last in any of them, a row a model, a column a
    configuration; under it, each configuration's geometric mean, worst
    model, how many are slower than torch.compile, which are above it by
    less than --thin percent, and which items have no speed-up (an error, a
    peer that did not finish, or no row at all)."""
    by, src = {}, {}
    for d in a.dirs:
        rows = read_all_rows(d)
        if not rows:
            sys.exit("suite.py standing: no rows in %s/results*.csv" % d)
        for r in rows:
            k = key(r)
            if k not in by or r.get("finished", "") >= by[k].get("finished", ""):
                by[k], src[k] = r, d
    with open(MANIFEST) as f:
        manifest = json.load(f)
    tasks = a.tasks.split(",") if a.tasks else None
    if a.models:
        models = a.models.split(",")
        known = {m["name"] for m in manifest["models"]}
        bad = [m for m in models if m not in known]
        if bad:
            sys.exit("suite.py standing: not in the manifest: %s" % ",".join(bad))
    else:
        models = [m["name"] for m in manifest["models"] if not tasks or m["task"] in tasks]
    if a.configs:
        configs = [tuple(c.split(":")) for c in a.configs.split(",")]
    else:
        configs = sorted({(k[1], k[2]) for k in by if k[0] in models},
                         key=lambda c: (int(c[0]), c[1]))
    names = {d: os.path.basename(os.path.normpath(d)) for d in a.dirs}
    md = ["# Where each model stands against torch.compile", "",
          "Speed-up = torch.compile (reduce-overhead, freezing, channels_last) / opsched's "
          "deployed schedule as one CUDA graph, each pair measured in the same call; for each "
          "item the row finished last in any of these folders (the folder after the number): "
          + ", ".join("`%s`" % d for d in a.dirs) + ".", "",
          "| model | " + " | ".join("batch %s %s" % c for c in configs) + " |",
          "|---|" + "---:|" * len(configs)]
    per = {c: [] for c in configs}
    missing = {c: [] for c in configs}
    for m in models:
        cells = []
        for c in configs:
            r = by.get((m, c[0], c[1]))
            if r and r.get("speedup_vs_compile"):
                x = float(r["speedup_vs_compile"])
                per[c].append((x, m))
                cells.append("%.2f (%s)" % (x, names[src[(m, c[0], c[1])]]))
            elif r:
                why = r.get("opsched_error") or r.get("torch_compile_error") or "no speed-up"
                missing[c].append("%s (%s)" % (m, why[:60]))
                cells.append("— (%s)" % why[:40].replace("|", "/"))
            else:
                missing[c].append("%s (no row)" % m)
                cells.append("—")
        md.append("| %s | %s |" % (m, " | ".join(cells)))
    md += ["", "## By configuration", ""]
    out_lines = []
    for c in configs:
        sp = per[c]
        line = "batch %s, %s: %d of %d models with a speed-up" % (c[0], c[1], len(sp), len(models))
        if sp:
            worst = min(sp)
            line += ("; geometric mean %.2fx, worst %s %.2fx, slower than torch.compile on %d"
                     % (geomean([x for x, _ in sp]), worst[1], worst[0],
                        sum(1 for x, _ in sp if x < 1)))
            thin = [(x, m) for x, m in sp if 1 <= x < 1 + a.thin / 100]
            if thin:
                line += "; within %g%% above it: %s" % (
                    a.thin, ", ".join("%s %.2fx" % (m, x) for x, m in sorted(thin)))
        if missing[c]:
            line += "; none for: " + ", ".join(missing[c])
        out_lines.append(line)
    md += ["- " + l for l in out_lines]
    with open(a.out, "w") as f:
        f.write("\n".join(md) + "\n")
    for l in out_lines:
        print(l)
    print("wrote %s" % a.out)
    return 0


def report_main(a):
    rows = read_all_rows(a.dir)
    if not rows:
        sys.exit("suite.py report: no rows in %s/results*.csv" % a.dir)
    configs = []
    for r in rows:
        c = (r["batch"], r["math"])
        if c not in configs:
            configs.append(c)
    md = ["# The network suite: opsched against its peers", "",
          "From `results.csv` in this folder (`bench/networks/suite.py`); `env.txt` has the "
          "device, versions and settings.  Latencies are medians in ms; speed-up = "
          "torch.compile (reduce-overhead, freezing, channels_last) / opsched's deployed "
          "schedule as one CUDA graph; above 1, opsched is faster.", ""]
    summary = []
    for bs, mm in configs:
        sel = [r for r in rows if (r["batch"], r["math"]) == (bs, mm)]
        sp = [(float(r["speedup_vs_compile"]), r["model"]) for r in sel if r.get("speedup_vs_compile")]
        fails = [r for r in sel if not r.get("opsched_ms")]
        line = "batch %s, %s: %d models; opsched ran %d, failed %d" % (
            bs, mm, len(sel), len(sel) - len(fails), len(fails))
        if sp:
            worst = min(sp)
            line += ("; speed-up over torch.compile: geometric mean %.2fx over %d models, "
                     "worst %s %.2fx, slower than torch.compile on %d" % (
                         geomean([s for s, _ in sp]), len(sp), worst[1], worst[0],
                         sum(1 for s, _ in sp if s < 1)))
        summary.append(line)
    md += ["## Summary", ""] + ["- " + s for s in summary] + [""]
    cols = [("opsched", "opsched_ms"), ("opsched seq", "opsched_seq_ms"),
            ("eager", "torch_eager_ms"), ("torch graph", "torch_graph_ms"),
            ("compile", "torch_compile_ms"), ("max-autotune", "torch_autotune_ms"),
            ("ORT CUDA", "ort_cuda_ms"), ("speed-up", "speedup_vs_compile")]
    for bs, mm in configs:
        sel = [r for r in rows if (r["batch"], r["math"]) == (bs, mm)]
        md += ["## Batch %s, %s" % (bs, mm), "",
               "| model | family | " + " | ".join(c for c, _ in cols) + " |",
               "|---|---|" + "---:|" * len(cols)]
        for r in sorted(sel, key=lambda r: -float(r.get("speedup_vs_compile") or -1)):
            vals = []
            for _, c in cols:
                v = r.get(c, "")
                vals.append(("%.3f" % float(v)) if v else "—")
            md.append("| %s | %s | %s |" % (r["model"], r["family"], " | ".join(vals)))
        md.append("")
    md += ["## Failures", "", "| model | batch | math | who | error |", "|---|---|---|---|---|"]
    ort_env = ("onnxruntime is not installed", "no CUDA provider")
    for r in rows:
        for who in ["opsched"] + PEERS:
            e = r.get(who + "_error", "")
            if (e and not e.startswith("skipped") and not e.startswith("not run")
                    and not any(x in e for x in ort_env)):
                md.append("| %s | %s | %s | %s | %s |" % (r["model"], r["batch"], r["math"], who,
                                                        e.replace("|", "\\|")[:200]))
    ort = {r.get("ort_cuda_error") for r in rows if r.get("ort_cuda_error")}
    if ort:
        md += ["", "ONNX Runtime: " + "; ".join(sorted(ort))]
    skipped = {r[p + "_error"] for r in rows for p in PEERS
               if r.get(p + "_error", "").startswith("skipped")}
    if skipped:
        md += ["", "Peers: " + "; ".join(sorted(skipped))]
    notrun = {}
    for r in rows:
        e = r.get("torch_autotune_error", "")
        if e.startswith("not run"):
            notrun[e] = notrun.get(e, 0) + 1
    if notrun:
        md += ["", "max-autotune: " + "; ".join("%d rows %s" % (n, e) for e, n in sorted(notrun.items()))]
    with open(os.path.join(a.dir, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(summary))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        print("suite.py report: matplotlib is not installed; no plot")
        return 0
    fig, axes = plt.subplots(1, len(configs), figsize=(5.5 * len(configs), 9), squeeze=False)
    for ax, (bs, mm) in zip(axes[0], configs):
        sel = sorted(((float(r["speedup_vs_compile"]), r["model"]) for r in rows
                      if (r["batch"], r["math"]) == (bs, mm) and r.get("speedup_vs_compile")))
        failed = sorted(r["model"] for r in rows
                        if (r["batch"], r["math"]) == (bs, mm) and not r.get("speedup_vs_compile"))
        ys = list(range(len(sel)))
        # Bars grow from 1x, right when opsched is faster, left when slower.
        ax.barh(ys, [s - 1 for s, _ in sel], left=1,
                color=["#2a7" if s >= 1 else "#c44" for s, _ in sel])
        for y, (sv, _) in zip(ys, sel):
            ax.text(sv, y, " %.2fx " % sv, va="center", ha="left" if sv >= 1 else "right",
                    fontsize=7)
        ax.set_yticks(ys)
        ax.set_yticklabels([n for _, n in sel], fontsize=8)
        ax.set_xscale("log")
        if sel:
            lo, hi = min(sel)[0], max(sel)[0]
            span = max(hi, 1 / lo, 1.25) * 1.6
            ax.set_xlim(1 / span, span)
        ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10) if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        ax.set_xticks(ticks)
        ax.set_xticklabels(["%gx" % t for t in ticks])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.axvline(1.0, color="k", lw=0.8)
        if failed:
            ax.text(0.0, -0.09, "no comparison: " + ", ".join(failed), transform=ax.transAxes,
                    fontsize=6, va="top", wrap=True)
        ax.set_xlabel("speed-up over torch.compile (log scale; > 1: opsched faster)")
        ax.set_title("batch %s, %s (%d ran, %d no comparison)" % (bs, mm, len(sel), len(failed)),
                     fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(a.dir, "speedup.png"), dpi=110)
    print("wrote %s/summary.md, %s/speedup.png" % (a.dir, a.dir))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the suite (resumable)")
    r.add_argument("--out", required=True, help="results folder (results.csv, env.txt, suite.log)")
    r.add_argument("--models", help="comma list (default: the whole manifest)")
    r.add_argument("--configs", default="1:tf32,1:fp16,B:tf32",
                   help="batch:math list; B is the manifest's larger batch (default %(default)s)")
    r.add_argument("--backend", default="cuda", choices=["cuda", "cpu"])
    r.add_argument("--peers", default=",".join(PEERS), help="which peers (default: all)")
    r.add_argument("--opsched", help="the opsched binary (default .carry/bin, then build/bin)")
    r.add_argument("--budget-s", type=float, default=540, help="stop starting items after this")
    r.add_argument("--hard-limit-s", type=float, default=0,
                   help="no step runs past this many seconds from the start (a step cut short "
                        "records an error, which --retry-errors runs again; 0: no limit); "
                        "--budget-s only stops starting items")
    r.add_argument("--opsched-timeout-s", type=int, default=180)
    r.add_argument("--peer-timeout-s", type=int, default=240)
    r.add_argument("--autotune-limit-s", type=int, default=240)
    r.add_argument("--autotune-math", default="tf32", help="max-autotune runs at batch 1 in this math")
    r.add_argument("--autotune-models", help="max-autotune for these models only (comma list)")
    r.add_argument("--min-ms", type=float, default=200,
                   help="opsched's schedules and each peer: timed at least this long")
    r.add_argument("--warmup-ms", type=float, default=100, help="warm-up of each, likewise")
    r.add_argument("--quick", action="store_true", help="few iterations (tests)")
    r.add_argument("--retry-errors", action="store_true",
                   help="run again the items whose opsched run failed or whose peer process "
                   "died or overran (their rows are replaced)")
    r.add_argument("--gpus", type=int, default=1,
                   help="deal the items over this many GPUs of the host, a process each")
    r.add_argument("--shard", help="K/N: run the items i with i %% N == K only (what --gpus "
                   "gives each GPU; for scripts that place the shards themselves)")
    r.add_argument("--opsched-args", default="",
                   help="more arguments for `opsched run` (an ablation: '--ablate depthwise', "
                        "'--fuse off', ...)")
    sub.add_parser("peer", help=argparse.SUPPRESS)
    s = sub.add_parser("report", help="summary.md and speedup.png from results.csv")
    s.add_argument("dir")
    ab = sub.add_parser("ablation", help="ablation.md: opsched in each variant's folder "
                                         "against the first folder's (the full planner)")
    ab.add_argument("dirs", nargs="+", help="the full planner's folder, then each variant's")
    st = sub.add_parser("standing", help="a matrix of speed-ups over torch.compile from several "
                                         "results folders, the latest row of each item")
    st.add_argument("dirs", nargs="+", help="results folders (calls, shards, days)")
    st.add_argument("--out", required=True, help="the markdown file to write")
    st.add_argument("--models", help="comma list (default: the manifest's, of --tasks)")
    st.add_argument("--tasks", help="comma list of the manifest's tasks ('image "
                                     "classification,semantic segmentation')")
    st.add_argument("--configs", help="batch:math list (default: those in the rows)")
    st.add_argument("--thin", type=float, default=3,
                    help="name the items at most this many percent above torch.compile, "
                         "within a call-to-call spread of the peer (default 3)")
    a = ap.parse_args()
    if a.cmd == "standing":
        return standing_main(a)
    if a.cmd == "run":
        return run_main(a)
    if a.cmd == "peer":
        return peer_main(a)
    if a.cmd == "ablation":
        return ablation_main(a)
    return report_main(a)


if __name__ == "__main__":
    sys.exit(main())
