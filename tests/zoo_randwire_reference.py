#!/usr/bin/python3
"""Where tests/test_zoo.c gets its RandWire numbers: a second implementation.

src/zoo/randwire.c builds RandWire-WS (Xie et al., "Exploring Randomly
Wired Neural Networks for Image Recognition", 2019) from random graphs it
draws itself.  No published network has these graphs, so this file is the
reference: the same generator (splitmix64, the Watts-Strogatz rewiring, the
orientation from lower to higher index) and the same layer rules written
again in plain Python, with the parameters and multiply-adds counted by
arithmetic.  It prints, for each model:

  params        elements of the learned tensors: every convolution weight,
                BatchNorm's scale and shift, the classifier's weight and bias
  folded        the same with every BatchNorm folded into the convolution
                before it (its 2C parameters become a C-element bias)
  macs          multiply-adds of every convolution and the classifier (bias
                excluded) for one image at 224x224
  nodes         graph nodes, unfolded and folded
  ops           nodes per operator, unfolded and folded, in opsched's
                operator order (the strings tests/test_zoo.c compares)
  wiring        an FNV-1a hash over every stage's edges (stage, from, to),
                which the test recomputes from the built graph
  stage lines   per random stage: nodes, edges, input nodes, output nodes

No network graph library is used on purpose: networkx's watts_strogatz_graph
draws from Python's Mersenne Twister, a different stream, so it would give
other graphs.

    /usr/bin/python3 tests/zoo_randwire_reference.py
"""
import collections

MASK = (1 << 64) - 1

# "RandWire" in ASCII; stage s (2..5, the paper's conv2..conv5) draws its
# graph from the generator seeded with SEED + s.
SEED = 0x52616E6457697265
# Watts-Strogatz parameters of the paper's best family, WS(4, 0.75); the
# rewiring probability is the exact fraction P_NUM / P_DEN.
K = 4
P_NUM, P_DEN = 3, 4


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        """Uniform in [0, n): rejection of the 2^64 mod n lowest draws."""
        threshold = (1 << 64) % n
        while True:
            r = self.next()
            if r >= threshold:
                return r % n


def ws_dag(n, k, seed):
    """Edges (u, v), u < v, of the WS graph, sorted."""
    rng = SplitMix64(seed)
    adj = [[False] * n for _ in range(n)]
    for j in range(1, k // 2 + 1):
        for u in range(n):
            v = (u + j) % n
            adj[u][v] = adj[v][u] = True
    for j in range(1, k // 2 + 1):
        for u in range(n):
            v = (u + j) % n
            if rng.below(P_DEN) >= P_NUM:
                continue
            cands = [w for w in range(n) if w != u and not adj[u][w]]
            if not cands or not adj[u][v]:
                continue
            w = cands[rng.below(len(cands))]
            adj[u][v] = adj[v][u] = False
            adj[u][w] = adj[w][u] = True
    return [(u, v) for u in range(n) for v in range(u + 1, n) if adj[u][v]]


def fnv1a(h, value):
    for i in range(4):
        h ^= (value >> (8 * i)) & 0xFF
        h = (h * 0x100000001B3) & MASK
    return h


class Net:
    def __init__(self):
        self.params = 0
        self.folded = 0
        self.macs = 0
        self.ops = collections.Counter()
        self.ops_folded = collections.Counter()
        self.hash = 0xCBF29CE484222325

    def op(self, name, n=1, folded=True):
        self.ops[name] += n
        if folded:
            self.ops_folded[name] += n

    def conv(self, cin, cout, k, out_hw, groups=1, bn=True):
        w = cout * (cin // groups) * k * k
        self.params += w + (2 * cout if bn else 0)
        self.folded += w + (cout if bn else 0)
        self.macs += w * out_hw * out_hw
        self.op("Conv")
        if bn:
            self.op("BatchNormalization", folded=False)


def out_size(size, stride):
    # 3x3, padding 1 (or 1x1, padding 0): floor((size - 1) / stride) + 1
    return (size - 1) // stride + 1


def stage(net, number, n, cin, c, size):
    edges = ws_dag(n, K, SEED + number)
    preds = [[] for _ in range(n)]
    outdeg = [0] * n
    for u, v in edges:
        preds[v].append(u)
        outdeg[u] += 1
        net.hash = fnv1a(fnv1a(fnv1a(net.hash, number), u), v)
    out = out_size(size, 2)
    inputs = 0
    for v in range(n):
        if preds[v]:
            net.op("Add", len(preds[v]) - 1)
            ch = c
        else:
            inputs += 1
            ch = cin
        net.op("Relu")
        net.conv(ch, ch, 3, out, groups=ch, bn=False)   # depthwise, stride 2 at inputs
        net.conv(ch, c, 1, out)                          # pointwise, then BatchNorm
    sinks = [v for v in range(n) if outdeg[v] == 0]
    if len(sinks) > 1:
        net.op("Add", len(sinks) - 1)
        net.op("Mul")
    print(f"    conv{number}: {n} nodes, {len(edges)} edges, {inputs} input nodes, "
          f"{len(sinks)} output nodes, {c} channels, {out}x{out}")
    return out


def randwire(name, regime, n, c, size=224):
    net = Net()
    s = out_size(size, 2)
    net.conv(3, c // 2, 3, s)                       # conv1 + bn
    if regime == "small":
        net.op("Relu")
        s = out_size(s, 2)
        net.conv(c // 2, c, 3, s)                   # conv2: relu, conv, bn
        stages = [(3, n, c, c), (4, n, c, 2 * c), (5, n, 2 * c, 4 * c)]
    else:
        stages = [(2, n // 2, c // 2, c), (3, n, c, 2 * c), (4, n, 2 * c, 4 * c),
                  (5, n, 4 * c, 8 * c)]
    print(name)
    for number, nodes, cin, cout in stages:
        s = stage(net, number, nodes, cin, cout, s)
    last = stages[-1][3]
    net.op("Relu")
    net.conv(last, 1280, 1, s)                      # classifier: relu, conv, bn
    net.op("GlobalAveragePool")
    net.op("Flatten")
    net.params += 1280 * 1000 + 1000
    net.folded += 1280 * 1000 + 1000
    net.macs += 1280 * 1000
    net.op("Gemm")
    order = ["Conv", "Gemm", "GlobalAveragePool", "Relu", "Add", "Mul", "BatchNormalization",
             "Flatten"]
    fmt = lambda ops: " ".join(f"{o}:{ops[o]}" for o in order if ops[o])
    print(f"  params={net.params} folded={net.folded} macs={net.macs} size={size}")
    print(f"  nodes={sum(net.ops.values())} folded={sum(net.ops_folded.values())} "
          f"wiring=0x{net.hash:016x}")
    print(f"  ops:        {fmt(net.ops)}")
    print(f"  ops folded: {fmt(net.ops_folded)}")


def main():
    # The small regime of the paper's Table 1 (C = 78, the 583M-FLOP model)
    # and the regular regime with C = 154, the model IOS benchmarks.
    randwire("randwire", "small", 32, 78)
    randwire("randwire_large", "regular", 32, 154)


if __name__ == "__main__":
    main()
