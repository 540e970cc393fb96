#!/usr/bin/env python3
"""Issue 6 report from the logs of bench/gpu_issue6_b1.sh (one directory)."""
import csv, os, re, sys

D = sys.argv[1]
MODELS = ['inception_v3', 'googlenet', 'squeezenet1_1', 'resnet50', 'densenet121', 'randwire', 'nasnet']
nan = float('nan')


def rows(path):
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        parts = [p.strip() for p in line.split('|')]
        if len(parts) < 5 or not parts[0]:
            continue
        name = parts[0].split()[0]
        if name not in ('sequential', 'greedy', 'ios', 'file:ios'):
            continue
        try:
            out[name] = (float(parts[2].split()[0]), float(parts[3].split()[0]))
        except (ValueError, IndexError):
            pass
    return out


tor = {}
if os.path.exists(D + '/torch_models.csv'):
    for r in csv.DictReader(open(D + '/torch_models.csv')):
        tor[(r['model'], r['mode'])] = float(r['median_ms'])
print("# opsched issue 6 on the H100, batch 1 (bench/gpu_issue6_b1.sh; bench/analyze_issue6.py)")
print(open(D + '/env.txt').read().strip())
print("""math: TF32 convolutions (PyTorch's default), cuDNN heuristics on both sides (cudnn.benchmark off),
BatchNorm folded into the convolutions on both sides (opsched --bn fold; PyTorch torch.fx fuse, or the
graph rebuilt from opsched's folded description for randwire/nasnet).
opsched: medians of `opsched run` (free-running launches; the whole inference as one CUDA graph).
ios = IOS search with stage costs measured on this GPU (r=3, s=8, merges); ios(pred) = IOS search with
predicted costs (operators from the issue-5 H100 data, contention fitted to the stages measured here).
PyTorch: eager, torch.cuda graph, torch.compile(mode='reduce-overhead'), same call, same GPU. ms.
""")
print(f"{'model':14s} {'seq free':>8s} {'seq grph':>8s} {'grdy grph':>9s} {'ios free':>8s} {'ios grph':>8s} "
      f"{'pred grph':>9s} | {'t eager':>8s} {'t graph':>8s} {'t compile':>9s} | {'seq/ios':>7s} "
      f"{'tgrph/ios':>9s} {'tcomp/ios':>9s}")
for m in MODELS:
    r, p = rows(f'{D}/run_{m}_b1.log'), rows(f'{D}/run_{m}_b1_predicted.log')
    g = lambda k, i: r[k][i] if k in r else nan
    ip = p['file:ios'][1] if 'file:ios' in p else nan
    te, tg, tc = (tor.get((m, k), nan) for k in ('eager', 'graph', 'compile'))
    ios = g('ios', 1)
    print(f"{m:14s} {g('sequential', 0):8.3f} {g('sequential', 1):8.3f} {g('greedy', 1):9.3f} "
          f"{g('ios', 0):8.3f} {ios:8.3f} {ip:9.3f} | {te:8.3f} {tg:8.3f} {tc:9.3f} | "
          f"{g('sequential', 1) / ios:7.3f} {tg / ios:9.3f} {tc / ios:9.3f}")
print("\nseq/ios, tgrph/ios, tcomp/ios: > 1 means opsched ios (CUDA graph) is faster.\n")
for m in MODELS:
    for kind, f in (('measured', f'{D}/search_{m}_b1.log'), ('predicted', f'{D}/predsearch_{m}_b1.log')):
        if not os.path.exists(f):
            continue
        for l in open(f):
            if re.match(r'^  [\d.]+ s,', l) or 'predicted latency' in l or 'measuring' in l \
                    or l.startswith('opsched'):
                print(f'{kind:9s} search {m:14s} {l.strip()}')
