#!/usr/bin/env python3
"""A PyTorch module rebuilt from `opsched info MODEL --format json --bn keep`
(benchmark tooling only): the peer for the zoo networks torchvision does not
have (randwire, nasnet).  Every node becomes the PyTorch operation that
computes the same thing (nn.Conv2d, nn.BatchNorm2d, F.relu, pooling,
torch.cat, ...), wired by the tensor names of the file, with random weights.
The forward is a straight-line walk over the nodes in the file's (topological)
order, which torch.compile traces like any hand-written module.

    python3 opsched_torch.py FILE.json        # builds it, prints params and
                                              # the output shape (CPU)
"""
import json
import sys


def _pads_sym(p):
    """(top, left, bottom, right) -> symmetric (h, w) or None."""
    return (p[0], p[1]) if p[0] == p[2] and p[1] == p[3] else None


def build(desc):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class OpschedNet(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.model = d["model"]
            self.inputs = [t["name"] for t in d["inputs"]]
            self.steps = []
            self.mods = nn.ModuleDict()
            for i, l in enumerate(d["layers"]):
                op, a = l["op"], l.get("attrs", {})
                ins = [t for t in l["input_tensors"] if t is not None]
                acts = [t["name"] for t in ins if t["kind"] in ("input", "activation")]
                params = [t for t in ins if t["kind"] in ("weight", "constant")]
                key = "m%d" % i
                mod, pre = None, None
                if op == "Conv":
                    w = params[0]["shape"]
                    sym = _pads_sym(a["pads"])
                    mod = nn.Conv2d(w[1] * a["groups"], w[0], tuple(a["kernel"]),
                                    stride=tuple(a["stride"]), padding=sym or 0,
                                    dilation=tuple(a["dilation"]), groups=a["groups"],
                                    bias=len(params) > 1)
                    if sym is None:
                        p = a["pads"]
                        pre = (p[1], p[3], p[0], p[2])
                elif op == "BatchNormalization":
                    mod = nn.BatchNorm2d(params[0]["shape"][0], eps=a["epsilon"])
                elif op == "Gemm":
                    w = params[0]["shape"]
                    if not a.get("trans_b", 0):
                        raise ValueError("%s: Gemm without transB" % l["name"])
                    mod = nn.Linear(w[1], w[0], bias=len(params) > 1)
                elif op in ("MaxPool", "AveragePool") and _pads_sym(a["pads"]) is None:
                    # TensorFlow's SAME padding (NASNet): pad first; an average
                    # that excludes the padding divides by the count of real
                    # elements under the window.
                    p = a["pads"]
                    pre = (p[1], p[3], p[0], p[2])
                    if op == "MaxPool":
                        mod = nn.MaxPool2d(tuple(a["kernel"]), tuple(a["stride"]), 0,
                                           tuple(a["dilation"]), ceil_mode=bool(a["ceil_mode"]))
                        pre = pre + ("max",)
                    else:
                        mod = nn.AvgPool2d(tuple(a["kernel"]), tuple(a["stride"]), 0,
                                           ceil_mode=bool(a["ceil_mode"]), count_include_pad=True)
                        pre = pre + ("avg" if a["count_include_pad"] else "avg_excl",)
                elif op in ("MaxPool", "AveragePool"):
                    sym = _pads_sym(a["pads"])
                    if op == "MaxPool":
                        mod = nn.MaxPool2d(tuple(a["kernel"]), tuple(a["stride"]), sym,
                                           tuple(a["dilation"]), ceil_mode=bool(a["ceil_mode"]))
                    else:
                        mod = nn.AvgPool2d(tuple(a["kernel"]), tuple(a["stride"]), sym,
                                           ceil_mode=bool(a["ceil_mode"]),
                                           count_include_pad=bool(a["count_include_pad"]))
                if mod is not None:
                    self.mods[key] = mod
                elif params:
                    # an element-wise op with a constant operand (RandWire's
                    # aggregation weights): a buffer of that shape, in the
                    # operand's place
                    acts = []
                    for j, t in enumerate(ins):
                        if t["kind"] in ("input", "activation"):
                            acts.append(t["name"])
                        else:
                            b = "%s_c%d" % (key, j)
                            self.register_buffer(b, torch.rand(t["shape"]) + 0.5)
                            acts.append("@" + b)
                self.steps.append((op, key if mod is not None else None, pre, acts,
                                   l["output_tensors"], a))
            self.output = self.steps[-1][4][0]

        def forward(self, *xs):
            env = dict(zip(self.inputs, xs))
            for op, key, pre, acts, outs, a in self.steps:
                x = [getattr(self, n[1:]) if n[0] == "@" else env[n] for n in acts]
                if key is not None and pre is not None and len(pre) == 5:
                    m, kind = self.mods[key], pre[4]
                    if kind == "max":
                        y = m(F.pad(x[0], pre[:4], value=float("-inf")))
                    elif kind == "avg":
                        y = m(F.pad(x[0], pre[:4]))
                    else:
                        ones = torch.ones_like(x[0][:, :1])
                        y = m(F.pad(x[0], pre[:4])) / m(F.pad(ones, pre[:4]))
                elif key is not None:
                    y = self.mods[key](F.pad(x[0], pre) if pre else x[0])
                elif op == "Relu":
                    y = F.relu(x[0])
                elif op == "Sigmoid":
                    y = torch.sigmoid(x[0])
                elif op == "Clip":
                    y = torch.clamp(x[0], a["min"], a["max"])
                elif op in ("Add", "Sum"):
                    y = x[0]
                    for t in x[1:]:
                        y = y + t
                elif op == "Mul":
                    y = x[0] * x[1]
                elif op == "Concat":
                    y = torch.cat(x, a["axis"])
                elif op == "GlobalAveragePool":
                    y = F.adaptive_avg_pool2d(x[0], 1)
                elif op == "GlobalMaxPool":
                    y = F.adaptive_max_pool2d(x[0], 1)
                elif op == "Flatten":
                    y = torch.flatten(x[0], a["axis"])
                elif op == "Reshape":
                    y = x[0].reshape([x[0].shape[0]] + a["shape"][1:])
                elif op in ("Dropout", "Identity"):
                    y = x[0]
                elif op == "Softmax":
                    y = torch.softmax(x[0], a["axis"])
                elif op == "Pad":
                    p, nd = a["pads"], len(a["pads"]) // 2
                    tp = []
                    for d in reversed(range(nd)):
                        tp += [p[d], p[d + nd]]
                    mode = {"edge": "replicate"}.get(a["mode"], a["mode"])
                    y = F.pad(x[0], tp, mode=mode, value=a["value"]) if mode == "constant" \
                        else F.pad(x[0], tp, mode=mode)
                elif op == "Slice":
                    y = x[0][tuple(slice(s, e, st) for s, e, st in
                                   zip(a["starts"], a["ends"], a["steps"]))]
                else:
                    raise ValueError("no PyTorch equivalent written for %s" % op)
                env[outs[0]] = y
            return env[self.output]

    return OpschedNet(desc)


def load(path):
    with open(path) as f:
        return build(json.load(f))


if __name__ == "__main__":
    import torch
    with open(sys.argv[1]) as f:
        d = json.load(f)
    m = build(d).eval()
    x = torch.randn(*d["inputs"][0]["shape"])
    with torch.inference_mode():
        y = m(x)
    n = sum(p.numel() for p in m.parameters())
    print("%s: %d parameters (opsched counts %d), output %s" %
          (d["model"], n, d["totals"]["params"], list(y.shape)))
