#!/usr/bin/env python3
"""Data-parallel training step time and peak memory with PyTorch DDP and
FSDP on random data (benchmark tooling only): the PyTorch peer of opsched's
data-parallel training predictor.

What it measures: the time of one training step, per GPU batch --batch, on
every rank of a torchrun job (one process per GPU), and each rank's peak
memory.
  * models (random initialisation, never pretrained weights):
      resnet50, vgg16  torchvision, 1000 classes, 3x224x224 random images,
                       cross-entropy on random labels;
      bert             transformers.BertForSequenceClassification(BertConfig())
                       (BERT-base, 2 labels), random input_ids of --seq tokens
                       (default 128), random labels;
      gpt2             transformers.GPT2LMHeadModel(GPT2Config()) (GPT-2 small),
                       random input_ids of --seq tokens, loss with
                       labels=input_ids;
      tiny             a 3-layer MLP (256-512-512-10), for testing the script
                       on CPU.
    One random batch is made on the device before the steps and reused.
  * a step: optimizer.zero_grad(set_to_none=True), forward, loss, backward,
    optimizer.step().  --warmup steps (10), then --steps timed steps (30),
    each between two CUDA events and synchronised (time.perf_counter() on
    --device cpu); a step's time is the slowest rank's (all_reduce MAX once
    the steps are done).  Reported: median, p10, p90 in ms, and
    samples/s = batch * world size / median.
  * peak memory: torch.cuda.reset_peak_memory_stats() before the warm-up
    (the model, its gradients and the optimizer state are counted);
    max_memory_allocated() and max_memory_reserved() after the timed steps,
    one value per rank (on CPU: null, and the peak RSS instead).
  * strategies:
      ddp     DistributedDataParallel(model, device_ids=[local_rank],
              bucket_cap_mb=--bucket-mb (25), gradient_as_bucket_view=
              --grad-as-bucket-view (off)); other arguments at their defaults
              (broadcast_buffers on: ResNet's BatchNorm buffers are sent from
              rank 0 every forward).
      fsdp    FSDP2 (torch.distributed.fsdp.fully_shard) where this PyTorch
              has it, else FSDP1 (FullyShardedDataParallel, FULL_SHARD);
              --fsdp-impl chooses.  One unit per block: resnet50 each
              Bottleneck, vgg16 the whole `features` and each Linear of the
              classifier, bert each BertLayer, gpt2 each GPT2Block, tiny each
              Linear; the rest (stem, embeddings, heads) in the root unit.
              FSDP2 keeps its defaults (parameters resharded after forward,
              except the root's); FSDP1 keeps its defaults too.  With bf16,
              each BatchNorm is a unit of its own kept in fp32 (FSDP1's
              MixedPrecision does so by itself; for FSDP2 the script does
              the same): ResNet-50 then has 53 more units.
      single  no wrapper, one process: the one-GPU baseline for scaling
              efficiency (run it without torchrun, or with 1 process).
  * precision:
      fp32    torch.backends.cuda.matmul.allow_tf32 = False and
              torch.backends.cudnn.allow_tf32 = False;
      tf32    both True;
      bf16    ddp/single: torch.autocast(device, dtype=torch.bfloat16) around
              forward and loss, parameters and gradients fp32, as AMP does
              (bf16 needs no GradScaler); TF32 flags left at PyTorch's
              defaults.  fsdp: no autocast; FSDP's own mixed precision
              instead (FSDP2 MixedPrecisionPolicy / FSDP1 MixedPrecision with
              param_dtype bfloat16, reduce_dtype float32): parameters are
              all-gathered and computed in bf16, gradients reduced in fp32,
              the sharded master parameters stay fp32.
  * optimizer: sgd (lr 0.01, momentum 0.9) or adamw (lr 1e-4, weight decay
    0.01); --optimizer-impl default|foreach|fused passes nothing,
    foreach=True or fused=True.

NCCL_NVLS_ENABLE is set to 0 unless the environment sets it; any other
value is refused (as torch_comm.py and opsched commbench do).

Run (GPU machine):
    # the one-GPU baseline
    /opt/torch/.venv/bin/python3 bench/distributed/torch_ddp.py \\
        --model resnet50 --batch 64 --strategy single --json ddp.jsonl
    # 8 GPUs
    /opt/torch/.venv/bin/torchrun --standalone --nproc_per_node 8 \\
        bench/distributed/torch_ddp.py --model resnet50 --batch 64 \\
        --strategy ddp --precision bf16 --json ddp.jsonl
    /opt/torch/.venv/bin/torchrun --standalone --nproc_per_node 8 \\
        bench/distributed/torch_ddp.py --model gpt2 --batch 16 --seq 128 \\
        --strategy fsdp --precision bf16 --optimizer adamw \\
        --optimizer-impl fused --json ddp.jsonl
Test without a GPU (CPU, gloo):
    python3 -m torch.distributed.run --standalone --nproc_per_node 2 \\
        bench/distributed/torch_ddp.py --device cpu --model tiny --batch 8 \\
        --warmup 2 --steps 5

Rank 0 prints one JSON line and appends it to --json FILE: model, strategy,
precision, batch, seq, world_size, bucket_mb, optimizer, optimizer_impl,
step_ms_median, step_ms_p10, step_ms_p90, samples_per_s,
peak_allocated_bytes and peak_reserved_bytes (lists, one per rank), params,
torch_version, nccl_version, gpu, date, and a few more (fsdp_impl, fsdp_units,
grad_as_bucket_view, warmup, steps, step_ms list, final_loss, ...).
"""
import argparse
import datetime
import functools
import json
import math
import os
import platform
import statistics
import sys
import time

import dist_common as common
from dist_common import nccl_version_string, nonneg_int, positive_int

PROG = "torch_ddp.py"
MODELS = ("resnet50", "vgg16", "bert", "gpt2", "tiny")


def fail(msg, code=1):
    common.fail(PROG, msg, code)


def positive_float(text):
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number" % text)
    if not x > 0 or math.isinf(x):
        raise argparse.ArgumentTypeError("%r: must be positive" % text)
    return x


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="PyTorch DDP / FSDP training step time and peak memory on random data "
                    "(run under torchrun, one process per GPU; --strategy single: one process)")
    p.add_argument("--model", choices=MODELS, required=True)
    p.add_argument("--batch", type=positive_int, required=True, help="batch per GPU")
    p.add_argument("--seq", type=positive_int, default=128,
                   help="sequence length of bert and gpt2 (default 128)")
    p.add_argument("--precision", choices=("fp32", "tf32", "bf16"), default="fp32")
    p.add_argument("--strategy", choices=("ddp", "fsdp", "single"), default="ddp")
    p.add_argument("--bucket-mb", type=positive_float, default=25.0,
                   help="DDP bucket_cap_mb (default 25)")
    p.add_argument("--grad-comm", choices=["f32", "bf16", "fp16"], default="f32",
                   help="DDP: gradients all-reduced as they are (f32), or through PyTorch's "
                        "bf16/fp16 compression hook")
    p.add_argument("--grad-as-bucket-view", action="store_true",
                   help="DDP gradient_as_bucket_view=True")
    p.add_argument("--fsdp-wrap", metavar="PATTERNS",
                   help="fsdp: the modules to shard as units instead of the default blocks: "
                        "comma-separated patterns matched against each module's qualified "
                        "name dot component by dot component with fnmatch, as opsched "
                        "predict --fsdp-wrap matches them ('layer*' each ResNet stage; '-' "
                        "none: the whole model one unit)")
    p.add_argument("--fsdp-impl", choices=("auto", "fully_shard", "fsdp1"), default="auto",
                   help="fsdp: fully_shard (FSDP2), FullyShardedDataParallel (fsdp1), "
                        "or auto (FSDP2 where available)")
    p.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd")
    p.add_argument("--optimizer-impl", choices=("default", "foreach", "fused"),
                   default="default")
    p.add_argument("--warmup", type=nonneg_int, default=10, help="untimed steps (10)")
    p.add_argument("--steps", type=positive_int, default=30, help="timed steps (30)")
    p.add_argument("--cudnn-benchmark", action="store_true",
                   help="torch.backends.cudnn.benchmark = True (default off)")
    p.add_argument("--seed", type=int, default=0)
    common.add_device_option(p)
    p.add_argument("--json", metavar="FILE", help="append the result line here (rank 0)")
    p.add_argument("--profile", metavar="FILE",
                   help="after the timed steps, 3 more under torch.profiler; rank 0 writes "
                        "its host-time table (self CPU time per op and record_function "
                        "label, FSDP's included) and the GPU kernels' to FILE, and the "
                        "per-step host time of the FSDP:: and step:: labels to the JSON line")
    a = p.parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if a.strategy == "single" and world > 1:
        p.error("--strategy single is one process (WORLD_SIZE is %d): run it without "
                "torchrun or with --nproc_per_node 1" % world)
    if a.model == "bert" and a.seq > 512:
        p.error("--seq %d: BERT-base has 512 positions" % a.seq)
    if a.model == "gpt2" and a.seq > 1024:
        p.error("--seq %d: GPT-2 has 1024 positions" % a.seq)
    return a


# ---- models ---------------------------------------------------------------

def build_model(torch, a):
    """(model, blocks to shard as FSDP units, make_batch(device) -> loss_fn)."""
    nn = torch.nn
    if a.model in ("resnet50", "vgg16"):
        try:
            import torchvision
        except ImportError as e:
            fail("--model %s needs torchvision (%s)" % (a.model, e))
        if a.model == "resnet50":
            m = torchvision.models.resnet50(weights=None, num_classes=1000)
            blocks = [x for x in m.modules()
                      if isinstance(x, torchvision.models.resnet.Bottleneck)]
        else:
            m = torchvision.models.vgg16(weights=None, num_classes=1000)
            blocks = [m.features] + [x for x in m.classifier if isinstance(x, nn.Linear)]

        def batch(dev):
            x = torch.randn(a.batch, 3, 224, 224, device=dev)
            y = torch.randint(0, 1000, (a.batch,), device=dev)
            return lambda model: nn.functional.cross_entropy(model(x).float(), y)
        return m, blocks, batch
    if a.model in ("bert", "gpt2"):
        try:
            import transformers
        except ImportError as e:
            fail("--model %s needs transformers (%s)" % (a.model, e))
        transformers.logging.set_verbosity_error()
        if a.model == "bert":
            from transformers.models.bert.modeling_bert import BertLayer
            cfg = transformers.BertConfig()
            cfg.num_labels = 2
            m = transformers.BertForSequenceClassification(cfg)
            blocks = [x for x in m.modules() if isinstance(x, BertLayer)]

            def batch(dev):
                ids = torch.randint(0, cfg.vocab_size, (a.batch, a.seq), device=dev)
                y = torch.randint(0, 2, (a.batch,), device=dev)
                return lambda model: model(input_ids=ids, labels=y).loss
        else:
            from transformers.models.gpt2.modeling_gpt2 import GPT2Block
            cfg = transformers.GPT2Config()
            m = transformers.GPT2LMHeadModel(cfg)
            blocks = [x for x in m.modules() if isinstance(x, GPT2Block)]

            def batch(dev):
                ids = torch.randint(0, cfg.vocab_size, (a.batch, a.seq), device=dev)
                return lambda model: model(input_ids=ids, labels=ids, use_cache=False).loss
        return m, blocks, batch
    # tiny: a 3-layer MLP for testing the script
    m = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                      nn.Linear(512, 10))
    blocks = [x for x in m if isinstance(x, nn.Linear)]

    def batch(dev):
        x = torch.randn(a.batch, 256, device=dev)
        y = torch.randint(0, 10, (a.batch,), device=dev)
        return lambda model: nn.functional.cross_entropy(model(x).float(), y)
    return m, blocks, batch


# ---- wrappers -------------------------------------------------------------

def wrap_by_patterns(model, patterns):
    """The modules whose qualified names match one of the comma-separated
    patterns component by component (fnmatch per dot component), outermost
    first, the way fully_shard expects nested units to be given."""
    import fnmatch
    pats = [p.split(".") for p in patterns.split(",") if p]
    out = []
    for name, m in model.named_modules():
        if not name:
            continue
        comp = name.split(".")
        if any(len(p) == len(comp) and all(fnmatch.fnmatchcase(c, q) for c, q in zip(comp, p))
               for p in pats):
            out.append((len(comp), name, m))
    if not out:
        fail("--fsdp-wrap %s matches no module" % patterns, 2)
    # innermost first: fully_shard the children before their parents
    return [m for _, _, m in sorted(out, key=lambda t: -t[0])]


def fsdp2_api():
    try:
        from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
        return fully_shard, MixedPrecisionPolicy
    except ImportError:
        pass
    except Exception as e:  # a PyTorch whose FSDP does not import at all
        fail("torch.distributed.fsdp cannot be imported: %s: %s" % (type(e).__name__, e))
    try:
        from torch.distributed._composable.fsdp import fully_shard, MixedPrecisionPolicy
        return fully_shard, MixedPrecisionPolicy
    except ImportError:
        return None


def wrap_fsdp(torch, a, model, blocks, dev, world):
    """Shards the model; returns (model, implementation name, FSDP units)."""
    bf16 = a.precision == "bf16"
    impl = a.fsdp_impl
    api = fsdp2_api()
    if impl == "auto":
        impl = "fully_shard" if api else "fsdp1"
    if impl == "fully_shard":
        if api is None:
            fail("--fsdp-impl fully_shard: this PyTorch (%s) has no fully_shard"
                 % torch.__version__)
        fully_shard, MixedPrecisionPolicy = api
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh(dev.type, (world,))
        kw = {"mesh": mesh}
        units = 0
        if bf16:
            kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                                   reduce_dtype=torch.float32)
            # BatchNorm stays fp32 in a unit of its own, as FSDP1's
            # MixedPrecision does by default (its running statistics are fp32
            # buffers, which batch_norm cannot mix with bf16 weights)
            bn_policy = MixedPrecisionPolicy(reduce_dtype=torch.float32)
            for m in model.modules():
                if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                    fully_shard(m, mesh=mesh, mp_policy=bn_policy)
                    units += 1
        for b in blocks:
            fully_shard(b, **kw)
        fully_shard(model, **kw)
        return model, "fully_shard", units + len(blocks) + 1
    if dev.type != "cuda":
        fail("--fsdp-impl fsdp1: FullyShardedDataParallel needs a GPU "
             "(on --device cpu use --fsdp-impl fully_shard)", 2)
    from torch.distributed.fsdp import (FullyShardedDataParallel, MixedPrecision,
                                        ShardingStrategy)
    from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy
    ids = {id(b) for b in blocks}
    policy = functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: id(m) in ids)
    kw = dict(auto_wrap_policy=policy, sharding_strategy=ShardingStrategy.FULL_SHARD)
    if dev.type == "cuda":
        kw["device_id"] = dev
    if bf16:
        kw["mixed_precision"] = MixedPrecision(param_dtype=torch.bfloat16,
                                               reduce_dtype=torch.float32,
                                               buffer_dtype=torch.float32)
    model = FullyShardedDataParallel(model, **kw)
    units = sum(1 for m in model.modules() if isinstance(m, FullyShardedDataParallel))
    return model, "fsdp1", units


def profile_steps(torch, a, step, rank, dev, cuda, n=3):
    """n steps under torch.profiler; rank 0 writes the tables to a.profile.
    Returns {label: [calls per step, host ms per step]} for the FSDP:: and
    step:: record_function labels (every rank profiles: collectives need
    all of them)."""
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if cuda:
        torch.cuda.synchronize()
    with profile(activities=acts) as prof:
        for _ in range(n):
            step()
        if cuda:
            torch.cuda.synchronize()
    ka = prof.key_averages()
    out = {}
    for e in ka:
        if e.key.startswith("FSDP") or e.key.startswith("step::"):
            out[e.key] = [round(e.count / n, 2), round(e.cpu_time_total / 1e3 / n, 4)]
    if rank == 0:
        with open(a.profile, "w") as f:
            f.write("# %d steps; host (self CPU) time\n" % n)
            f.write(ka.table(sort_by="self_cpu_time_total", row_limit=60))
            if cuda:
                f.write("\n# GPU time\n")
                f.write(ka.table(sort_by="self_device_time_total", row_limit=40))
    return out


def make_optimizer(torch, a, model):
    kw = {}
    if a.optimizer_impl == "foreach":
        kw["foreach"] = True
    elif a.optimizer_impl == "fused":
        kw["fused"] = True
    params = [p for p in model.parameters() if p.requires_grad]
    try:
        if a.optimizer == "sgd":
            return torch.optim.SGD(params, lr=0.01, momentum=0.9, **kw)
        return torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, **kw)
    except (RuntimeError, TypeError, ValueError) as e:
        fail("--optimizer %s --optimizer-impl %s: %s" % (a.optimizer, a.optimizer_impl, e))


def percentile(xs, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    s = sorted(xs)
    if len(s) == 1:
        return s[0]
    pos = (len(s) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def peak_rss_bytes():
    try:
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    except Exception:
        return None


def run(a):
    import torch
    cuda = a.device == "cuda"
    distributed = a.strategy != "single"
    dist = None
    if distributed:
        dist = common.import_dist(PROG)
        common.single_rank_env(29518)  # plain python3: one rank
    local_rank, dev = common.setup_device(PROG, torch, cuda)
    if distributed:
        rank, world = common.init_process_group(PROG, torch, dist, dev)
    else:
        rank, world = 0, 1

    # precision flags
    if a.precision in ("fp32", "tf32"):
        on = a.precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = on
        torch.backends.cudnn.allow_tf32 = on
    torch.backends.cudnn.benchmark = a.cudnn_benchmark

    torch.manual_seed(a.seed)  # the same initial weights on every rank
    model, blocks, make_batch = build_model(torch, a)
    params = sum(p.numel() for p in model.parameters())
    model = model.to(dev)
    model.train()
    fsdp_impl = fsdp_units = None
    if a.strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model, device_ids=[local_rank] if cuda else None,
                    bucket_cap_mb=a.bucket_mb, gradient_as_bucket_view=a.grad_as_bucket_view)
        if a.grad_comm != "f32":
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            hook = (default_hooks.bf16_compress_hook if a.grad_comm == "bf16"
                    else default_hooks.fp16_compress_hook)
            model.register_comm_hook(None, hook)
    elif a.strategy == "fsdp":
        if a.fsdp_wrap == "-":
            blocks = []  # the whole model one unit
        elif a.fsdp_wrap:
            blocks = wrap_by_patterns(model, a.fsdp_wrap)
        model, fsdp_impl, fsdp_units = wrap_fsdp(torch, a, model, blocks, dev, world)
    opt = make_optimizer(torch, a, model)
    torch.manual_seed(a.seed + 1 + rank)  # each rank its own data
    loss_fn = make_batch(dev)

    autocast = a.precision == "bf16" and a.strategy != "fsdp"

    from torch.autograd.profiler import record_function

    def step():
        opt.zero_grad(set_to_none=True)
        with record_function("step::forward"):
            if autocast:
                with torch.autocast(dev.type, dtype=torch.bfloat16):
                    loss = loss_fn(model)
            else:
                loss = loss_fn(model)
        with record_function("step::backward"):
            loss.backward()
        with record_function("step::optimizer"):
            opt.step()
        return loss

    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    for _ in range(a.warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
    if distributed:
        dist.barrier()
    times = []
    host = []  # host time to issue a step (GPU: before waiting for it)
    loss = None
    if cuda:
        t0 = torch.cuda.Event(enable_timing=True)
        t1 = torch.cuda.Event(enable_timing=True)
    for _ in range(a.steps):
        if cuda:
            t0.record()
            h = time.perf_counter()
            loss = step()
            host.append((time.perf_counter() - h) * 1e3)
            t1.record()
            t1.synchronize()
            times.append(t0.elapsed_time(t1))  # ms
        else:
            s = time.perf_counter()
            loss = step()
            times.append((time.perf_counter() - s) * 1e3)
    final_loss = float(loss.detach().float().item())
    labels = None
    if a.profile:
        labels = profile_steps(torch, a, step, rank, dev, cuda)
    if cuda:
        mem = [torch.cuda.max_memory_allocated(dev), torch.cuda.max_memory_reserved(dev)]
    else:
        mem = [-1, -1]
    rss = peak_rss_bytes() or -1

    # DDP keeps every rank's parameters equal: a cheap check that the
    # gradients were really averaged (per-tensor sums compared across ranks;
    # a difference beyond 1e-6 of a tensor's absolute sum fails the run)
    consistent = diverged = None
    if distributed and a.strategy == "ddp":
        with torch.no_grad():
            ps = [p.detach() for p in model.parameters()]
            s = torch.stack([p.double().sum() for p in ps])
            ab = torch.stack([p.double().abs().sum() for p in ps])
            both = torch.cat([s, -s])
            dist.all_reduce(both, op=dist.ReduceOp.MAX)
            spread = both[:len(ps)] + both[len(ps):]  # max - min per tensor
        consistent = bool((spread == 0).all().item())
        diverged = int((spread > 1e-6 * ab + 1e-12).sum().item())

    # the slowest rank per step; every rank's memory
    t = torch.tensor(times, dtype=torch.float64, device=dev)
    m = torch.tensor(mem + [rss], dtype=torch.int64, device=dev)
    if distributed:
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        ms = [torch.zeros_like(m) for _ in range(world)]
        dist.all_gather(ms, m)
    else:
        ms = [m]
    times = [float(x) for x in t.tolist()]
    ms = [x.tolist() for x in ms]
    med = statistics.median(times)
    res = None
    if rank == 0:
        gpu = torch.cuda.get_device_name(dev) if cuda else (platform.processor() or "cpu")
        res = {
            "model": a.model, "strategy": a.strategy, "precision": a.precision,
            "batch": a.batch, "seq": a.seq if a.model in ("bert", "gpt2") else None,
            "world_size": world,
            "bucket_mb": a.bucket_mb if a.strategy == "ddp" else None,
            "grad_comm": a.grad_comm if a.strategy == "ddp" else None,
            "optimizer": a.optimizer, "optimizer_impl": a.optimizer_impl,
            "fsdp_wrap": a.fsdp_wrap if a.strategy == "fsdp" else None,
            "step_ms_median": round(med, 4),
            "host_ms_median": round(statistics.median(host), 4) if host else None,
            "host_ms_by_label": labels,
            "step_ms_p10": round(percentile(times, 10), 4),
            "step_ms_p90": round(percentile(times, 90), 4),
            "samples_per_s": round(a.batch * world / (med / 1e3), 3) if med > 0 else None,
            "peak_allocated_bytes": [x[0] if x[0] >= 0 else None for x in ms],
            "peak_reserved_bytes": [x[1] if x[1] >= 0 else None for x in ms],
            "params": params,
            "torch_version": torch.__version__,
            "nccl_version": nccl_version_string(torch, a.device),
            "gpu": gpu,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "fsdp_impl": fsdp_impl,
            "fsdp_units": fsdp_units,
            "grad_as_bucket_view": a.grad_as_bucket_view if a.strategy == "ddp" else None,
            "autocast": autocast,
            "cudnn_benchmark": a.cudnn_benchmark,
            "warmup": a.warmup, "steps": a.steps,
            "step_ms": [round(x, 4) for x in times],
            "final_loss": final_loss if math.isfinite(final_loss) else str(final_loss),
            "params_equal_across_ranks": consistent,
            "device": a.device,
        }
        if not cuda:
            res["peak_rss_bytes"] = [x[2] if x[2] >= 0 else None for x in ms]
        if a.model in ("bert", "gpt2"):
            import transformers
            res["transformers_version"] = transformers.__version__
        if a.model in ("resnet50", "vgg16"):
            import torchvision
            res["torchvision_version"] = torchvision.__version__
        line = json.dumps(res)
        print(line, flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(line + "\n")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    if diverged:
        if rank == 0:
            print("torch_ddp.py: error: %d parameter tensor(s) differ between the ranks after "
                  "the steps (DDP did not average the gradients)" % diverged,
                  file=sys.stderr, flush=True)
        return 1
    if consistent is False and rank == 0:
        print("torch_ddp.py: warning: the ranks' parameters differ in the last bits after "
              "the steps", file=sys.stderr, flush=True)
    return 0


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    common.check_nvls(PROG)
    torch = common.import_torch(PROG)
    try:
        return run(a)
    except torch.cuda.OutOfMemoryError as e:
        # the other ranks would wait forever in a collective: leave at once
        msg = str(e).splitlines()[0] if str(e) else "out of memory"
        print("torch_ddp.py: error: rank %s: CUDA out of memory at --model %s --batch %d "
              "--strategy %s --precision %s (%s)"
              % (os.environ.get("RANK", "0"), a.model, a.batch, a.strategy, a.precision, msg),
              file=sys.stderr, flush=True)
        os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
