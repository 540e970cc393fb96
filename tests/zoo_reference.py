#!/usr/bin/python3
"""Where tests/test_zoo.c gets its numbers: torchvision's own models.

For each zoo model this prints, from torchvision (run it with the system
python3, which has torch 1.13 and torchvision 0.14):

  params        learnable parameters, sum(p.numel() for p in m.parameters()):
                torchvision's published num_params (BatchNorm contributes its
                weight and bias; running statistics are buffers, not counted)
  folded        the same after folding every BatchNorm that follows a
                convolution into it: each such BatchNorm of C channels trades
                its 2C parameters for a C-element convolution bias
  macs          multiply-adds of every Conv2d and Linear (bias excluded) for
                one image at the default size; torchvision's GFLOPS column is
                this number in billions

With --onnx it also exports each model in eval mode with torch.onnx.export
(opset 13) into a temporary directory and prints how many nodes of each
operator type the file holds, the deployed form that fold_bn=1 mirrors.

    /usr/bin/python3 tests/zoo_reference.py [--onnx]
"""
import argparse
import collections
import os
import tempfile
import warnings

import torch
import torchvision.models as M

MODELS = [
    ("alexnet", M.alexnet, {}, 224),
    ("vgg16", M.vgg16, {}, 224),
    ("resnet50", M.resnet50, {}, 224),
    ("resnet152", M.resnet152, {}, 224),
    ("densenet121", M.densenet121, {}, 224),
    # Without the auxiliary heads: they only run in training, and the zoo
    # leaves them out.  For GoogLeNet the published count already excludes
    # them; Inception v3's published 27161264 includes its AuxLogits.
    ("googlenet", M.googlenet, {"aux_logits": False, "init_weights": False}, 224),
    ("inception_v3", M.inception_v3, {"aux_logits": False, "init_weights": False}, 299),
    ("squeezenet1_1", M.squeezenet1_1, {}, 224),
]


def folded_params(model, size):
    """Parameters once each BatchNorm that directly consumes a conv's output
    is folded into that conv (found by running the model, since DenseNet's
    norm5 follows a conv in module order but a torch.cat in data flow)."""
    conv_outs, folded = [], []

    def conv_hook(mod, inp, out):
        conv_outs.append(out)

    def bn_hook(mod, inp):
        if any(inp[0] is t for t in conv_outs):
            folded.append(mod.num_features)

    handles = [m.register_forward_hook(conv_hook) for m in model.modules()
               if isinstance(m, torch.nn.Conv2d)]
    handles += [m.register_forward_pre_hook(bn_hook) for m in model.modules()
                if isinstance(m, torch.nn.BatchNorm2d)]
    with torch.no_grad():
        model(torch.randn(1, 3, size, size))
    for h in handles:
        h.remove()
    return sum(p.numel() for p in model.parameters()) - sum(folded)


def macs(model, size):
    total = [0]

    def hook(mod, inp, out):
        if isinstance(mod, torch.nn.Conv2d):
            k = mod.kernel_size[0] * mod.kernel_size[1]
            total[0] += out.numel() * (mod.in_channels // mod.groups) * k
        else:
            total[0] += out.numel() * mod.in_features

    handles = [m.register_forward_hook(hook) for m in model.modules()
               if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        model(torch.randn(1, 3, size, size))
    for h in handles:
        h.remove()
    return total[0]


def onnx_ops(model, size, path):
    import onnx
    # Distinct random values everywhere, so the exporter does not merge
    # identical initializers behind Identity nodes.
    with torch.no_grad():
        for v in model.state_dict().values():
            if v.is_floating_point():
                v.copy_(torch.rand_like(v) + 0.5)
    torch.onnx.export(model, torch.randn(1, 3, size, size), path, opset_version=13)
    graph = onnx.load(path).graph
    return collections.Counter(n.op_type for n in graph.node)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnx", action="store_true", help="also export and count ONNX nodes")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        for name, ctor, kwargs, size in MODELS:
            model = ctor(**kwargs).eval()
            params = sum(p.numel() for p in model.parameters())
            line = f"{name:14s} params={params} folded={folded_params(model, size)} " \
                   f"macs={macs(model, size)} size={size}"
            print(line)
            if args.onnx:
                ops = onnx_ops(model, size, os.path.join(tmp, name + ".onnx"))
                print("    onnx: " + " ".join(f"{k}:{v}" for k, v in sorted(ops.items())))


if __name__ == "__main__":
    main()
