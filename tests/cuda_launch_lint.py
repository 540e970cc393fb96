#!/usr/bin/env python3
"""The launch contract of the CUDA backend's own kernels (kernels_launch.cuh).

Own kernels may be launched programmatically: a launch's blocks can be
scheduled before the kernel ahead of it has finished.  That is safe only
because every kernel waits for the grids it depends on before it reads or
writes anything.  This checks the sources for it:
  - every __global__ function's body begins with cuk_kernel_enter();
  - no launch bypasses cuk_launch/cuk_launch_args (no <<<...>>>, no
    cudaLaunchKernel or cuLaunchKernel call) outside kernels_launch.cuh.

Usage: cuda_launch_lint.py SOURCE_DIR   (src/backend/cuda)
Exit 0 when the contract holds, 1 naming each place that breaks it.
"""
import os
import re
import sys


def strip_comments(s):
    """Comments and string literals blanked, offsets kept."""
    out = []
    i, n = 0, len(s)
    while i < n:
        if s.startswith("//", i):
            j = s.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif s.startswith("/*", i):
            j = s.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", s[i:j]))
            i = j
        elif s[i] == '"':
            j = i + 1
            while j < n and s[j] != '"':
                j += 2 if s[j] == "\\" else 1
            out.append('"' + " " * (j - i - 1) + '"')
            i = j + 1
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def line_of(s, pos):
    return s.count("\n", 0, pos) + 1


def check(path):
    errors = []
    raw = open(path, encoding="utf-8").read()
    s = strip_comments(raw)
    name = os.path.basename(path)
    for m in re.finditer(r"\b__global__\b", s):
        depth, i = 0, m.end()
        # the body's brace: the first '{' outside the parameter list
        while i < len(s):
            if s[i] == "(":
                depth += 1
            elif s[i] == ")":
                depth -= 1
            elif s[i] == "{" and depth == 0:
                break
            elif s[i] == ";" and depth == 0:
                i = -1  # a declaration, not a definition
                break
            i += 1
        if i < 0:
            continue
        body = s[i + 1:].lstrip()
        if not body.startswith("cuk_kernel_enter();"):
            errors.append("%s:%d: a kernel that does not begin with cuk_kernel_enter()"
                          % (name, line_of(s, m.start())))
    if name != "kernels_launch.cuh":
        for pat, what in ((r"<<<", "a <<<>>> launch"),
                          (r"\bcudaLaunchKernel(Ex|ExC)?\s*\(", "a direct cudaLaunchKernel"),
                          (r"\bcuLaunchKernel(Ex)?\s*\(", "a direct cuLaunchKernel")):
            for m in re.finditer(pat, s):
                errors.append("%s:%d: %s (launch through cuk_launch)" % (name, line_of(s, m.start()), what))
    return errors


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: cuda_launch_lint.py SOURCE_DIR", file=sys.stderr)
        return 2
    files = sorted(f for f in os.listdir(argv[1]) if f.endswith((".cu", ".cuh")))
    if not files:
        print("cuda_launch_lint: no .cu or .cuh file in %s" % argv[1], file=sys.stderr)
        return 1
    errors, kernels = [], 0
    for f in files:
        path = os.path.join(argv[1], f)
        errors += check(path)
        kernels += len(re.findall(r"\b__global__\b", strip_comments(open(path).read())))
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    print("cuda_launch_lint: %d files, %d kernels, every one enters by cuk_kernel_enter and "
          "launches through cuk_launch" % (len(files), kernels))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
