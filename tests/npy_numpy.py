#!/usr/bin/env python3
"""opsched's .npy reader and writer against NumPy itself.

NumPy writes files of every dtype opsched reads (bool, int8..int64,
uint8..uint64, float16/32/64; random bits, so NaNs and infinities too), of
ranks 0 to 6 and empty ones, little- and big-endian, C and Fortran order,
format versions 1.0, 2.0 and 3.0.  Through tests/npy_tool.c:

- opsched reads each one as NumPy does: the dtype, the shape and the data
  (in the host's byte order and C order) are NumPy's, bit for bit;
- opsched writes what it read, and the file is the one numpy.save writes
  for the same array, byte for byte, and numpy.load reads it back equal;
- what NumPy can save but opsched does not read (object arrays, complex,
  structured, strings, datetimes, void, long double) and broken files
  (cut short, bytes after the data, an .npz) are refused with a message
  naming the file and the reason.

usage: npy_numpy.py path/to/npy_tool
"""
import io
import os
import subprocess
import sys
import tempfile

import numpy as np

DTYPES = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8"]
SHAPES = [(), (0,), (5,), (2, 3), (2, 0, 3), (3, 1, 4), (2, 3, 2, 2), (1, 2, 1, 3, 2),
          (2, 1, 2, 1, 2, 3)]
VERSIONS = [(1, 0), (2, 0), (3, 0)]

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + name)
    else:
        failed += 1
        print("FAIL %s%s" % (name, ": " + detail if detail else ""))


def run(tool, *args):
    r = subprocess.run([tool] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, check=False)
    if r.returncode != 0:
        sys.exit("npy_tool %s: exit %d: %s" % (args[0], r.returncode, r.stderr))
    return r.stdout.splitlines()


def saved(arr):
    """What numpy.save writes for arr."""
    b = io.BytesIO()
    np.save(b, arr, allow_pickle=False)
    return b.getvalue()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    tool = sys.argv[1]
    rng = np.random.default_rng(1)
    little = sys.byteorder == "little"
    with tempfile.TemporaryDirectory(prefix="opsched_npy_") as tmp:
        # --- NumPy writes, opsched reads and writes back ---------------------
        cases = []  # (name, path, the array in host order and C order)
        k = 0
        for dt in DTYPES:
            for shape in SHAPES:
                n = int(np.prod(shape))
                if dt == "?":
                    base = rng.integers(0, 2, n).astype("?")
                else:
                    base = np.frombuffer(rng.bytes(n * np.dtype(dt).itemsize), dtype="=" + dt)
                base = base.reshape(shape).copy()
                one_byte = np.dtype(dt).itemsize == 1
                for order in ["="] if one_byte else ["<", ">"]:
                    if order == "=" or (order == "<") == little:
                        arr = base
                    else:  # the same values in the other byte order
                        arr = base.byteswap().view(base.dtype.newbyteorder())
                    # (asfortranarray makes a scalar 1-D)
                    for fortran in (False, True) if shape else (False,):
                        a = np.asfortranarray(arr) if fortran else arr
                        version = VERSIONS[k % 3]
                        k += 1
                        name = "%s%s%s%s v%d.0" % (order, dt, shape, " F" if fortran else "",
                                                   version[0])
                        path = os.path.join(tmp, "in%d.npy" % k)
                        with open(path, "wb") as f:
                            np.lib.format.write_array(f, a, version=version, allow_pickle=False)
                        cases.append((name, path, base))
        lines = run(tool, "dump", *[c[1] for c in cases])
        bad = []
        for (name, path, base), line in zip(cases, lines):
            want = "ok %s %s %s" % (base.dtype.name,
                                    ",".join(str(d) for d in base.shape) or "-",
                                    base.tobytes().hex() or "-")
            if line != want:
                bad.append("%s: %s, expected %s" % (name, line[:200], want[:200]))
        check("opsched reads %d files NumPy wrote as NumPy does" % len(cases),
              len(lines) == len(cases) and not bad, "; ".join(bad[:5]))

        pairs = []
        for i, (name, path, base) in enumerate(cases):
            pairs += [path, os.path.join(tmp, "out%d.npy" % i)]
        lines = run(tool, "copy", *pairs)
        bad = []
        for i, ((name, path, base), line) in enumerate(zip(cases, lines)):
            out = os.path.join(tmp, "out%d.npy" % i)
            if line != "ok":
                bad.append("%s: %s" % (name, line))
                continue
            with open(out, "rb") as f:
                data = f.read()
            if data != saved(base):
                bad.append("%s: not numpy.save's bytes" % name)
                continue
            back = np.load(out, allow_pickle=False)
            if back.dtype != base.dtype or back.shape != base.shape or \
                    back.tobytes() != base.tobytes():
                bad.append("%s: numpy.load reads another array" % name)
        check("opsched writes %d files as numpy.save does, numpy.load reads them" % len(cases),
              len(lines) == len(cases) and not bad, "; ".join(bad[:5]))
        left = [f for f in os.listdir(tmp) if ".tmp-" in f]
        check("no temporary file left", not left, " ".join(left))

        # --- what NumPy saves and opsched refuses ------------------------------
        refused = [
            ("object", np.array([1, "a", None], dtype=object), "unsupported", "object array"),
            ("complex64", np.ones(3, np.complex64), "unsupported", "is complex"),
            ("structured", np.zeros(2, [("a", "<f4"), ("b", "<i4")]), "unsupported",
             "structured"),
            ("unicode", np.array(["ab", "c"]), "unsupported", "string dtype"),
            ("bytes", np.array([b"ab", b"c"]), "unsupported", "string dtype"),
            ("datetime64", np.array(["2024-01-01"], dtype="datetime64[s]"), "unsupported",
             "datetime"),
            ("void", np.zeros(2, "V4"), "unsupported", "void"),
        ]
        if np.dtype(np.longdouble).itemsize > 8:
            refused.append(("longdouble", np.ones(2, np.longdouble), "unsupported",
                            "float of a size"))
        files = []
        for name, arr, _, _ in refused:
            path = os.path.join(tmp, "refused_%s.npy" % name)
            np.save(path, arr, allow_pickle=True)
            files.append(path)
        good = saved(np.arange(6, dtype="<f4").reshape(2, 3))
        broken = [("cut short", good[:-1], "malformed input", "truncated .npy data"),
                  ("a byte after the data", good + b"\0", "malformed input",
                   "1 bytes after the .npy data"),
                  ("cut in the header", good[:40], "malformed input", "goes beyond the end"),
                  ("empty", b"", "malformed input", "not a NumPy .npy file")]
        b = io.BytesIO()
        np.savez(b, x=np.ones(2))
        broken.append(("an .npz", b.getvalue(), "malformed input", "not a NumPy .npy file"))
        for name, data, _, _ in broken:
            path = os.path.join(tmp, "broken_%s.npy" % name.replace(" ", "_"))
            with open(path, "wb") as f:
                f.write(data)
            files.append(path)
        lines = run(tool, "dump", *files)
        for (name, _, status, says), path, line in zip(refused + broken, files, lines):
            numpy_refuses = True
            try:
                np.load(path, allow_pickle=False)
                numpy_refuses = False
            except (ValueError, OSError, EOFError):
                pass
            check("%s refused (%s)" % (name, says),
                  line.startswith("error %s %s: " % (status, path)) and says in line,
                  line)
            if name in ("cut short", "cut in the header", "empty", "object"):
                check("%s: numpy.load refuses it too" % name, numpy_refuses)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
