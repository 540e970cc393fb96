#!/usr/bin/python3
"""Where tests/test_zoo.c gets its NASNet-A numbers: the network in PyTorch.

NASNet-A (Zoph et al., "Learning Transferable Architectures for Scalable
Image Recognition", 2018) as TF-slim's nets/nasnet/nasnet.py defines it and
Cadene's pretrainedmodels ports it (nasnet_mobile.py, nasnet.py), written
again here as a plain PyTorch module: TensorFlow's SAME padding is an
explicit F.pad before each strided window (what Cadene's ZeroPad2d-then-
crop does on even inputs), so every convolution's output is its true size.

It prints, for each model:

  params        sum(p.numel() for p in model.parameters()); the published
                counts are Keras' "trainable params" of NASNetMobile
                (5,289,978) and NASNetLarge (88,753,150) with 1000 classes
  folded        the same once each BatchNorm that follows a convolution is
                folded into it (final_path_bn follows a Concat and stays)
  macs          multiply-adds of every Conv2d and Linear (bias excluded),
                counted on their outputs by forward hooks
  ops           nodes per operator as src/zoo/nasnet.c writes the network,
                unfolded and folded, counted while the model runs
  shapes        a few feature maps

    /usr/bin/python3 tests/zoo_nasnet_reference.py
"""
import collections

import torch
import torch.nn as nn
import torch.nn.functional as F

OPS = collections.Counter()
OPS_FOLDED = collections.Counter()


def count(op, folded=True):
    OPS[op] += 1
    if folded:
        OPS_FOLDED[op] += 1


def same_pads(size, k, s):
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def pad_same(x, k, s, value=0.0):
    t, b = same_pads(x.shape[2], k, s)
    l, r = same_pads(x.shape[3], k, s)
    return F.pad(x, (l, r, t, b), value=value), (t, b, l, r)


class Conv(nn.Module):
    """Conv2d with SAME padding (VALID for the stem)."""

    def __init__(self, cin, cout, k, s=1, groups=1, valid=False):
        super().__init__()
        self.k, self.s, self.valid = k, s, valid
        self.conv = nn.Conv2d(cin, cout, k, s, 0, groups=groups, bias=False)

    def forward(self, x):
        count("Conv")
        if not self.valid:
            x, _ = pad_same(x, self.k, self.s)
        return self.conv(x)


def bn(c):
    return nn.BatchNorm2d(c, eps=1e-3)


class BN(nn.Module):
    def __init__(self, c, after_conv=True):
        super().__init__()
        self.bn = bn(c)
        self.after_conv = after_conv

    def forward(self, x):
        count("BatchNormalization", folded=not self.after_conv)
        return self.bn(x)


def relu(x):
    count("Relu")
    return F.relu(x)


def add(a, b):
    count("Add")
    return a + b


def cat(xs):
    count("Concat")
    return torch.cat(xs, 1)


def maxpool(x, s):
    count("MaxPool")
    x, _ = pad_same(x, 3, s, value=float("-inf"))
    return F.max_pool2d(x, 3, s)


def avgpool(x, s):
    """3x3 average of the inputs only (TF's SAME average excludes the pad)."""
    count("AveragePool")
    xp, _ = pad_same(x, 3, s)
    ones, _ = pad_same(torch.ones_like(x[:1, :1]), 3, s)
    return F.avg_pool2d(xp, 3, s) / F.avg_pool2d(ones, 3, s)


class ReluConvBn(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv, self.bn = Conv(cin, cout, 1), BN(cout)

    def forward(self, x):
        return self.bn(self.conv(relu(x)))


class Separable(nn.Module):
    def __init__(self, cin, cout, k, s):
        super().__init__()
        self.dw = Conv(cin, cin, k, s, groups=cin)
        self.pw = Conv(cin, cout, 1)

    def forward(self, x):
        return self.pw(self.dw(x))


class Branch(nn.Module):
    """relu, separable (stride s), bn, relu, separable, bn.  The first
    separable keeps cin channels (BranchSeparables) unless stem is set
    (BranchSeparablesStem: it goes to cout at once)."""

    def __init__(self, cin, cout, k, s, stem=False):
        super().__init__()
        mid = cout if stem else cin
        self.sep1, self.bn1 = Separable(cin, mid, k, s), BN(mid)
        self.sep2, self.bn2 = Separable(mid, cout, k, 1), BN(cout)

    def forward(self, x):
        x = self.bn1(self.sep1(relu(x)))
        return self.bn2(self.sep2(relu(x)))


class FactorizedReduction(nn.Module):
    """relu; path 1: 1x1 average with stride 2, conv; path 2: shifted by one
    pixel (pad right/bottom, drop the first row and column), the same; cat,
    bn."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = Conv(cin, cout // 2, 1)
        self.conv2 = Conv(cin, cout // 2, 1)
        self.bn = BN(cout, after_conv=False)

    def forward(self, x):
        x = relu(x)
        count("AveragePool")
        p1 = self.conv1(F.avg_pool2d(x, 1, 2))
        count("Pad")
        count("Slice")
        count("AveragePool")
        p2 = F.pad(x, (0, 1, 0, 1))[:, :, 1:, 1:]
        p2 = self.conv2(F.avg_pool2d(p2, 1, 2))
        return self.bn(cat([p1, p2]))


class Stem0(nn.Module):
    def __init__(self, cin, f):
        super().__init__()
        self.conv_1x1 = ReluConvBn(cin, f)
        self.c0l, self.c0r = Branch(f, f, 5, 2), Branch(cin, f, 7, 2, stem=True)
        self.c1r = Branch(cin, f, 7, 2, stem=True)
        self.c2r = Branch(cin, f, 5, 2, stem=True)
        self.c4l = Branch(f, f, 3, 1)

    def forward(self, x):
        x1 = self.conv_1x1(x)
        c0 = add(self.c0l(x1), self.c0r(x))
        c1 = add(maxpool(x1, 2), self.c1r(x))
        c2 = add(avgpool(x1, 2), self.c2r(x))
        c3 = add(avgpool(c0, 1), c1)
        c4 = add(self.c4l(c0), maxpool(x1, 2))
        return cat([c1, c2, c3, c4])


class Reduction(nn.Module):
    """CellStem1 (left input through conv_1x1, right through a factorized
    reduction) and ReductionCell0/1 (both through conv_1x1)."""

    def __init__(self, cin_left, cin_right, f, stem1=False):
        super().__init__()
        self.left = ReluConvBn(cin_left, f)
        self.right = FactorizedReduction(cin_right, f) if stem1 else ReluConvBn(cin_right, f)
        self.stem1 = stem1
        self.c0l, self.c0r = Branch(f, f, 5, 2), Branch(f, f, 7, 2)
        self.c1r = Branch(f, f, 7, 2)
        self.c2r = Branch(f, f, 5, 2)
        self.c4l = Branch(f, f, 3, 1)

    def forward(self, x, x_prev):
        # CellStem1(x_conv0, x_stem_0): conv_1x1 on x_stem_0 is "left".
        # ReductionCell(x, x_prev): conv_1x1 on x is "right" and feeds the
        # pools; conv_prev_1x1 on x_prev feeds the separables.
        if self.stem1:
            a = self.left(x_prev)        # pools and the 5x5 read it
            b = self.right(x)            # the 7x7 and 5x5 separables
        else:
            b = self.left(x_prev)
            a = self.right(x)
        c0 = add(self.c0l(a), self.c0r(b))
        c1 = add(maxpool(a, 2), self.c1r(b))
        c2 = add(avgpool(a, 2), self.c2r(b))
        c3 = add(avgpool(c0, 1), c1)
        c4 = add(self.c4l(c0), maxpool(a, 2))
        return cat([c1, c2, c3, c4])


class Normal(nn.Module):
    """NormalCell, or FirstCell (first=True: x_prev through a factorized
    reduction to 2 * out_left channels)."""

    def __init__(self, in_left, out_left, in_right, out_right, first=False):
        super().__init__()
        self.prev = (FactorizedReduction(in_left, 2 * out_left) if first
                     else ReluConvBn(in_left, out_left))
        self.conv_1x1 = ReluConvBn(in_right, out_right)
        l = 2 * out_left if first else out_left
        self.c0l, self.c0r = Branch(out_right, out_right, 5, 1), Branch(l, l, 3, 1)
        self.c1l, self.c1r = Branch(l, l, 5, 1), Branch(l, l, 3, 1)
        self.c4l = Branch(out_right, out_right, 3, 1)

    def forward(self, x, x_prev):
        left = self.prev(x_prev)
        right = self.conv_1x1(x)
        c0 = add(self.c0l(right), self.c0r(left))
        c1 = add(self.c1l(left), self.c1r(left))
        c2 = add(avgpool(right, 1), left)
        c3 = add(avgpool(left, 1), avgpool(left, 1))
        c4 = add(self.c4l(right), right)
        return cat([left, c0, c1, c2, c3, c4])


class NASNetA(nn.Module):
    def __init__(self, stem_filters, penultimate, n_normal, skip_reduction_input):
        super().__init__()
        f = penultimate // 24
        self.n, self.skip = n_normal, skip_reduction_input
        self.conv0 = Conv(3, stem_filters, 3, 2, valid=True)
        self.conv0_bn = BN(stem_filters)
        self.stem0 = Stem0(stem_filters, f // 4)
        self.stem1 = Reduction(f, stem_filters, f // 2, stem1=True)
        cells = []
        # (multiplier of f for this stage, channels of x_prev, of x)
        prev_ch, x_ch = f, 2 * f
        for stage in range(3):
            m = 1 << stage
            if stage > 0:
                cells.append(Reduction(prev_ch, x_ch, m * f))
                # the first cell's x_prev: see forward()
                prev_ch, x_ch = prev_ch if self.skip else x_ch, 4 * m * f
            for i in range(n_normal):
                first = i == 0
                out_left = m * f // 2 if first else m * f
                cells.append(Normal(prev_ch, out_left, x_ch, m * f, first=first))
                prev_ch, x_ch = x_ch, (2 * out_left if first else out_left) + 5 * m * f
        self.cells = nn.ModuleList(cells)
        self.last_linear = nn.Linear(24 * f, 1000)

    def forward(self, x):
        x0 = self.conv0_bn(self.conv0(x))
        s0 = self.stem0(x0)
        s1 = self.stem1(x0, s0)
        outs = [s0, s1]
        it = iter(self.cells)
        for stage in range(3):
            if stage > 0:
                red = next(it)(outs[-1], outs[-2])
                # TF-slim's skip_reduction_layer_input: the first cell after
                # a reduction reads the cell before the reduction's input.
                outs.append(outs[-2] if self.skip else outs[-1])
                outs.append(red)
                SHAPES.append((f"reduction_cell_{stage - 1}", tuple(red.shape)))
            for i in range(self.n):
                y = next(it)(outs[-1], outs[-2])
                if stage > 0 and i == 0:
                    outs.pop(-2)
                outs.append(y)
                SHAPES.append((f"cell_{6 * stage + i}", tuple(y.shape)))
        x = relu(outs[-1])
        count("GlobalAveragePool")
        x = x.mean((2, 3))
        count("Flatten")
        count("Dropout", folded=False)
        count("Gemm")
        return self.last_linear(x)


SHAPES = []


def folded_params(model):
    return sum(p.numel() for p in model.parameters()) - sum(
        m.bn.num_features for m in model.modules() if isinstance(m, BN) and m.after_conv)


def macs(model, size):
    total = [0]

    def hook(mod, inp, out):
        if isinstance(mod, nn.Conv2d):
            k = mod.kernel_size[0] * mod.kernel_size[1]
            total[0] += out.numel() * (mod.in_channels // mod.groups) * k
        else:
            total[0] += out.numel() * mod.in_features

    hs = [m.register_forward_hook(hook) for m in model.modules()
          if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        model(torch.randn(1, 3, size, size))
    for h in hs:
        h.remove()
    return total[0]


ORDER = ["Conv", "Gemm", "MaxPool", "AveragePool", "GlobalAveragePool", "Relu", "Add",
         "Concat", "Slice", "BatchNormalization", "Pad", "Flatten", "Dropout"]


def main():
    for name, stem, pen, n, skip, size in [("nasnet", 32, 1056, 4, False, 224),
                                           ("nasnet_large", 96, 4032, 6, True, 331)]:
        model = NASNetA(stem, pen, n, skip).eval()
        OPS.clear()
        OPS_FOLDED.clear()
        SHAPES.clear()
        m = macs(model, size)
        params = sum(p.numel() for p in model.parameters())
        print(f"{name:14s} params={params} folded={folded_params(model)} macs={m} size={size}")
        for label, ops in (("ops", OPS), ("ops folded", OPS_FOLDED)):
            print(f"    {label}: " + " ".join(f"{o}:{ops[o]}" for o in ORDER if ops[o]) +
                  f"  ({sum(ops.values())} nodes)")
        print("    shapes: " + " ".join(f"{k}={'x'.join(map(str, s))}" for k, s in SHAPES
                                        if k.startswith("reduction") or k.endswith(("_0", "_15", "_17"))))


if __name__ == "__main__":
    main()
