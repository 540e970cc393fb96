# one grouped 3x3 convolution as torch runs it (cudnn.benchmark), in both memory formats
import torch, sys
torch.backends.cudnn.benchmark = True
def t(fn, n=50):
    for _ in range(5): fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n): fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / n
for (c, hw, stride) in [(224, 112, 2), (224, 56, 1), (448, 28, 1), (896, 14, 1), (2016, 7, 1)]:
    for dt in (torch.float16,):
        conv = torch.nn.Conv2d(c, c, 3, stride, 1, groups=c // 56, bias=True).cuda().to(dt)
        for mf in (torch.contiguous_format, torch.channels_last):
            x = torch.randn(16, c, hw, hw, device="cuda", dtype=dt).to(memory_format=mf)
            m = conv.to(memory_format=mf)
            with torch.no_grad():
                ms = t(lambda: m(x))
            print("c=%d hw=%d s=%d %s %s: %.4f ms" % (c, hw, stride, dt, "nhwc" if mf == torch.channels_last else "nchw", ms), flush=True)
