#!/usr/bin/env python3
"""PyTorch peer for `opsched profile` (benchmark tooling only): end-to-end
latency of the zoo's networks in PyTorch eager mode, replayed as a CUDA
graph, and under torch.compile(mode="reduce-overhead").

Every network is torchvision's constructor with random weights
(googlenet and inception_v3 without auxiliary heads, init_weights=False),
in eval mode under torch.inference_mode(), NCHW, fp32 data.  Math: PyTorch's
defaults, i.e. TF32 allowed for cuDNN convolutions
(torch.backends.cudnn.allow_tf32 = True) and not for matmuls (`--math fp32`
turns TF32 off for convolutions too).  cuDNN's algorithm choice is its
heuristic (torch.backends.cudnn.benchmark = False, PyTorch's default) unless
--benchmark asks for its per-shape autotuning.

Timing follows opsched's method: warm-up by time, then each sample is one
inference between a pair of CUDA events; samples are enqueued in rounds of
16 and a round is enqueued before the previous one is read, so the GPU never
waits for the host to read timers.  The median, mean, min, p90 and p99 are
reported.  torch.compile's compile time (its first calls) is reported on its
own and not counted in the latency.

  torch_models.py --out torch_models.csv
  torch_models.py --models resnet50,googlenet --batch 1,16 \\
      --modes eager,graph,compile --compile-models resnet50 --out t.csv

Runs on the GPU machine with /opt/torch/.venv/bin/python3.
"""
import argparse
import csv
import gc
import statistics
import sys
import time

ZOO = ["alexnet", "vgg16", "resnet50", "resnet152", "densenet121", "googlenet",
       "inception_v3", "squeezenet1_1"]
NO_AUX = {"aux_logits": False, "init_weights": False}
KWARGS = {"googlenet": NO_AUX, "inception_v3": NO_AUX}
ROUND = 16
FIELDS = ["model", "batch", "input_size", "mode", "median_ms", "mean_ms", "min_ms", "p90_ms",
          "p99_ms", "n", "compile_s", "math", "cudnn_benchmark", "device", "torch",
          "cudnn"]


def percentile(xs, p):
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def time_fn(torch, fn, warmup_ms, iters, min_ms):
    """Samples (ms) of fn, one call per event pair, rounds enqueued ahead."""
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while n < 3 or (time.perf_counter() - t0) * 1e3 < warmup_ms:
        fn()
        n += 1
        if n % 8 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    ev = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
           for _ in range(ROUND)] for _ in range(2)]

    def enqueue(pairs):
        for start, end in pairs:
            start.record()
            fn()
            end.record()

    samples, cur = [], 0
    enqueue(ev[cur])
    while True:
        total = sum(samples)
        more = len(samples) + ROUND < iters or total < min_ms
        if more:
            enqueue(ev[1 - cur])
        ev[cur][-1][1].synchronize()
        samples.extend(start.elapsed_time(end) for start, end in ev[cur])
        if not more:
            break
        cur = 1 - cur
    torch.cuda.synchronize()
    return samples


def summarize(samples):
    return dict(median_ms=statistics.median(samples), mean_ms=statistics.fmean(samples),
                min_ms=min(samples), p90_ms=percentile(samples, 90),
                p99_ms=percentile(samples, 99), n=len(samples))


def graph_fn(torch, model, x):
    """A CUDA graph of one forward on a static input; returns its replay."""
    static_x = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm-up on a side stream, as capture requires
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(static_x)
    return g.replay


def compiled_fn(torch, model, x):
    """torch.compile(mode="reduce-overhead") and its compile time (s): its
    first three calls (compilation, then CUDA-graph recording)."""
    cm = torch.compile(model, mode="reduce-overhead")
    t0 = time.perf_counter()
    for _ in range(3):
        cm(x)
        torch.cuda.synchronize()
    return (lambda: cm(x)), time.perf_counter() - t0


def make_model(torch, tv, name, args):
    """torchvision's network, or for the zoo networks torchvision lacks
    (randwire, nasnet) the same graph rebuilt from opsched's description
    (--graph-json-dir, files from `opsched info NAME --format json --bn keep`)."""
    if name in ZOO:
        size = 299 if name == "inception_v3" else 224
        return getattr(tv.models, name)(weights=None, **KWARGS.get(name, {})), size
    import json
    import os
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import opsched_torch
    with open(os.path.join(args.graph_json_dir, name + ".json")) as f:
        desc = json.load(f)
    return opsched_torch.build(desc), desc["inputs"][0]["shape"][2]


def run_model(torch, tv, name, batch, args, writer, env):
    model, size = make_model(torch, tv, name, args)
    model = model.eval()
    if args.fold_bn and name in ZOO:  # the rebuilt graphs come folded (--bn fold)
        # BatchNormalization folded into the convolution before it, as
        # opsched's --bn fold (the deployed form) runs it.
        from torch.fx.experimental.optimization import fuse
        model = fuse(model)
    model = model.cuda()
    x = torch.randn(batch, 3, size, size, device="cuda")
    rows = []
    with torch.inference_mode():
        for mode in args.modes:
            if mode.startswith("compile") and args.compile_models and name not in args.compile_models:
                continue
            compile_s = ""
            # "-cl" modes: the model and input in channels_last (NHWC) memory
            # format, PyTorch's own way to the NHWC cuDNN kernels.
            base, cl = mode[:-3] if mode.endswith("-cl") else mode, mode.endswith("-cl")
            m_run = model.to(memory_format=torch.channels_last) if cl else model
            x_run = x.contiguous(memory_format=torch.channels_last) if cl else x
            try:
                if base == "eager":
                    fn = lambda: m_run(x_run)
                elif base == "graph":
                    fn = graph_fn(torch, m_run, x_run)
                else:
                    fn, compile_s = compiled_fn(torch, m_run, x_run)
                    compile_s = "%.1f" % compile_s
                s = summarize(time_fn(torch, fn, args.warmup_ms, args.iters, args.min_ms))
            except Exception as e:  # one mode failing must not end the run
                print("  %s b%d %s: FAILED %s: %s" % (name, batch, mode, type(e).__name__, e),
                      flush=True)
                continue
            finally:
                if cl:  # Module.to converts in place: back to NCHW for the next mode
                    model.to(memory_format=torch.contiguous_format)
            row = dict(model=name, batch=batch, input_size=size, mode=mode, compile_s=compile_s,
                       **s, **env)
            writer.writerow(row)
            rows.append(row)
            print("  %-14s b%-3d %-8s median %8.3f ms  p99 %8.3f ms%s" %
                  (name, batch, mode, s["median_ms"], s["p99_ms"],
                   ("  compile %s s" % compile_s) if compile_s else ""), flush=True)
            del fn
    del model, x
    gc.collect()
    torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="CSV file to write")
    ap.add_argument("--models", default=",".join(ZOO), help="comma-separated zoo names")
    ap.add_argument("--batch", default="1,16", help="batch sizes (default 1,16)")
    ap.add_argument("--modes", default="eager,graph",
                    help="eager, graph and/or compile, each also as NAME-cl (channels_last "
                         "model and input) (default eager,graph)")
    ap.add_argument("--compile-models", default="",
                    help="models to torch.compile (default: all listed, when compile is a mode)")
    ap.add_argument("--math", choices=["tf32", "fp32"], default="tf32",
                    help="tf32: PyTorch's default (TF32 convolutions); fp32: strict")
    ap.add_argument("--benchmark", action="store_true",
                    help="torch.backends.cudnn.benchmark = True (autotuned algorithms)")
    ap.add_argument("--graph-json-dir", default="",
                    help="folder of NAME.json (opsched info --format json --bn keep) for "
                         "networks torchvision does not have")
    ap.add_argument("--fold-bn", action="store_true",
                    help="fold BatchNormalization into convolutions (torch.fx fuse), "
                         "as opsched's deployed form")
    ap.add_argument("--warmup-ms", type=float, default=500)
    ap.add_argument("--iters", type=int, default=100, help="samples, at least")
    ap.add_argument("--min-ms", type=float, default=1000, help="sample for at least this long")
    args = ap.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    args.modes = [m for m in args.modes.split(",") if m]
    args.compile_models = [m for m in args.compile_models.split(",") if m]
    bad = [m for m in args.models if m not in ZOO and not args.graph_json_dir] + \
          [m for m in args.modes
           if m not in ("eager", "graph", "compile", "eager-cl", "graph-cl", "compile-cl")]
    if bad:
        ap.error("unknown model or mode: %s" % ", ".join(bad))

    import torch
    import torchvision as tv
    if not torch.cuda.is_available():
        sys.exit("torch_models.py: no CUDA device")
    torch.backends.cudnn.enabled = True
    torch.backends.cudnn.benchmark = args.benchmark
    torch.backends.cudnn.allow_tf32 = args.math == "tf32"
    torch.manual_seed(0)
    env = dict(math="tf32-conv" if args.math == "tf32" else "fp32",
               cudnn_benchmark=int(args.benchmark), device=torch.cuda.get_device_name(0),
               torch=torch.__version__, cudnn=torch.backends.cudnn.version())
    print("torch %s, cuDNN %s, %s; math %s, cudnn.benchmark %s" %
          (env["torch"], env["cudnn"], env["device"], env["math"], args.benchmark), flush=True)
    with open(args.out, "w", newline="", buffering=1) as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        for name in args.models:
            for batch in [int(b) for b in args.batch.split(",")]:
                run_model(torch, tv, name, batch, args, writer, env)
                f.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
