#!/usr/bin/env python3
"""The training peer: PyTorch trains a torchvision network on random data,
eagerly, with the optimizer opsched models, and reports the median step time
and torch.cuda.max_memory_allocated (what `opsched info MODEL --train`
predicts as the peak).

    torch_train.py --model resnet50 --batch 32 [--optimizer sgd|adamw]
                   [--impl foreach|fused] [--loss ce|mse] [--steps 30]
                   [--channels-last] [--out result.json] [--kernels table.txt]

One JSON object on stdout (and in --out): model, batch, optimizer, impl,
median_step_ms, max_memory_allocated (bytes, over the steady-state steps:
the statistics are reset after the warm-up steps), torch/CUDA versions.
--kernels writes torch.profiler's table of the GPU kernels of three more
steps (time per kernel name, summed), to say where PyTorch's time goes.
"""
import argparse
import json
import statistics
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd")
    ap.add_argument("--impl", choices=["foreach", "fused"], default="foreach")
    ap.add_argument("--loss", choices=["ce", "mse"], default="ce")
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--kernels")
    a = ap.parse_args()
    import torch
    import torchvision
    if not torch.cuda.is_available():
        print("torch_train.py: no CUDA device", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    kwargs = {"aux_logits": False, "init_weights": False} if a.model in ("googlenet", "inception_v3") else {}
    model = getattr(torchvision.models, a.model)(weights=None, **kwargs).to(dev).train()
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    params = list(model.parameters())
    opt_kw = {a.impl: True}
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=a.weight_decay, **opt_kw)
    else:
        opt = torch.optim.AdamW(params, lr=1e-3, **opt_kw)
    x = torch.randn(a.batch, 3, a.size, a.size, device=dev).to(memory_format=fmt)
    n_out = 1000
    if a.loss == "ce":
        target = torch.randint(0, n_out, (a.batch,), device=dev)
        loss_fn = torch.nn.CrossEntropyLoss()
    else:
        target = torch.randn(a.batch, n_out, device=dev)
        loss_fn = torch.nn.MSELoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), target)
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(a.steps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        step()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    r = {"model": a.model, "batch": a.batch, "size": a.size, "optimizer": a.optimizer,
         "impl": a.impl, "loss": a.loss, "channels_last": a.channels_last,
         "median_step_ms": statistics.median(times),
         "max_memory_allocated": torch.cuda.max_memory_allocated(),
         "torch": torch.__version__, "cuda": torch.version.cuda,
         "device": torch.cuda.get_device_name()}
    if a.kernels:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                step()
            torch.cuda.synchronize()
        with open(a.kernels, "w") as f:
            f.write(prof.key_averages().table(sort_by="cuda_time_total", row_limit=60,
                                              max_name_column_width=90))
    text = json.dumps(r)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
