#!/usr/bin/env python3
"""The ONNX backend node tests through opsched: a table per operator.

    run.py --opsched BIN --out DIR [--backend cpu|cuda] [--math fp32|tf32]
           [--cases DIR] [--jobs N] [--only REGEX] [--onnx-version V]

The cases are those of the pinned onnx package (ONNX_VERSION below), written
by generate.py into --cases (default: DIR/../cases-onnx-V, made when
missing, inside a virtual environment holding that onnx, made when missing
too: the first run needs PyPI).  Each case whose operators and data types
are in opsched's scope runs as

    opsched run model.onnx --backend B --math M --iters 0
                --input NAME=FILE.npy ... --output-dir OUT

and every output is compared with onnx's expected one as onnx's own
backend test runner compares (same shape, same type, numpy's assert_allclose
with the case's rtol and atol).  The rest are skipped, each with its reason.

DIR gets cases.csv (one row per case: case, op, status, reason), summary.md
(per operator: passed, failed, skipped; the totals; the pass rate over the
in-scope cases) and run.json (command, device, versions, date).  While it
runs, cases.partial.csv holds every case finished so far: a run cut short
goes on from it when run again with the same --out, binary, backend and
math.  Exit 0 when every case ran or was skipped (whatever the results), 1
when the harness itself failed, 2 on bad arguments.
"""
import argparse
import concurrent.futures as cf
import csv
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

ONNX_VERSION = "1.23.2"
HERE = os.path.dirname(os.path.abspath(__file__))

# The operator set opsched covers (the ONNX default domain as inference
# exports use it).  A case is in scope when every node of its graph is.
IN_SCOPE = set("""
Abs Neg Exp Log Sqrt Reciprocal Pow Floor Ceil Round Sign Sin Cos Tan Asin Acos Atan Sinh Cosh
Asinh Acosh Atanh Erf Mod Min Max Mean Sum Where IsNaN IsInf Equal Less LessOrEqual Greater
GreaterOrEqual Not And Or Xor BitShift BitwiseAnd BitwiseOr BitwiseXor BitwiseNot Add Sub Mul Div
Relu LeakyRelu PRelu Elu Selu Celu ThresholdedRelu Sigmoid HardSigmoid HardSwish Softplus Softsign
Mish Gelu Tanh Shrink Clip
BatchNormalization InstanceNormalization GroupNormalization LayerNormalization LpNormalization
MeanVarianceNormalization RMSNormalization LRN
ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp
ReduceSumSquare ArgMax ArgMin CumSum TopK
Conv ConvTranspose MaxPool AveragePool LpPool GlobalLpPool GlobalAveragePool GlobalMaxPool
Resize Upsample
Reshape Flatten Squeeze Unsqueeze Transpose Concat Split Slice Pad Tile Expand DepthToSpace
SpaceToDepth Gather GatherElements GatherND ScatterND ScatterElements OneHot Range Trilu Shape Size
ConstantOfShape EyeLike Identity Cast CastLike Constant Dropout
MatMul Gemm Einsum Softmax LogSoftmax Hardmax
Attention RotaryEmbedding SwiGLU Swish LSTM
QuantizeLinear DequantizeLinear
If
""".split())

# Why the operators outside the set are out of scope (the rest: not an
# operator inference exports use).
OUT_OF_SCOPE = {
    "random generator": "Bernoulli RandomNormal RandomNormalLike RandomUniform RandomUniformLike "
                        "Multinomial",
    "training operator": "Adagrad Adam Momentum Gradient NegativeLogLikelihoodLoss "
                         "SoftmaxCrossEntropyLoss",
    "output shape depends on the data": "NonZero NonMaxSuppression Unique Compress "
                                        "StringSplit RegexFullMatch",
    "control flow other than a folded If": "Loop Scan",
    "sequence, map, optional or string type": "SequenceAt SequenceConstruct SequenceEmpty "
                                              "SequenceErase SequenceInsert SequenceLength "
                                              "SequenceMap SplitToSequence ConcatFromSequence "
                                              "Optional OptionalGetElement OptionalHasElement "
                                              "StringConcat StringNormalizer TfIdfVectorizer "
                                              "ImageDecoder",
}
REASON = {op: why for why, ops in OUT_OF_SCOPE.items() for op in ops.split()}

# TensorProto element types opsched holds at run time.
TYPES_IN_SCOPE = {1: "float32", 10: "float16", 16: "bfloat16", 7: "int64", 6: "int32", 3: "int8",
                  2: "uint8", 9: "bool"}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---- the pinned onnx and its cases ------------------------------------------

def venv_python(venv):
    return os.path.join(venv, "bin", "python")


def ensure_venv(venv, version):
    py = venv_python(venv)
    if os.path.exists(py):
        try:
            got = subprocess.run([py, "-c", "import onnx; print(onnx.__version__)"],
                                 capture_output=True, text=True, check=True).stdout.strip()
            if got == version:
                return py
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(venv)
    log("conformance: making %s with onnx %s (from PyPI)" % (venv, version))
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", "onnx==" + version], check=True)
    return py


def ensure_cases(cases, venv, version):
    stamp = os.path.join(cases, "ONNX_VERSION")
    if os.path.exists(stamp) and open(stamp).read().strip() == version:
        return
    py = ensure_venv(venv, version)
    tmp = cases + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run([py, os.path.join(HERE, "generate.py"), tmp], check=True,
                   stderr=subprocess.DEVNULL)
    shutil.rmtree(cases, ignore_errors=True)
    os.rename(tmp, cases)


# ---- one case (runs inside the virtual environment) -------------------------

def opsched_digest(path):
    """What names the binary a partial run's rows came from."""
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def load_partial(path, key):
    """The rows of an earlier run cut short, by case, when it ran the same
    binary on the same backend and math; {} otherwise."""
    try:
        with open(path, newline="") as f:
            head = f.readline().rstrip("\n")
            if head != "# " + key:
                return {}
            return {r[0]: tuple(r) for r in csv.reader(f) if len(r) == 4}
    except OSError:
        return {}


def safe_name(name):
    """The file name opsched gives output `name` in --output-dir."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "_"


def case_op(case_dir, model):
    """The operator a case is about: the node's, or for an expanded case
    (a function body) the original case's."""
    import onnx
    name = os.path.basename(case_dir)
    base = re.sub(r"_expanded(_ver\d+)?$", "", name)
    if base != name:
        twin = os.path.join(os.path.dirname(case_dir), base, "model.onnx")
        if os.path.exists(twin):
            return onnx.load(twin).graph.node[0].op_type
    return model.graph.node[0].op_type if model.graph.node else "(none)"


def scope(model):
    """None when in scope, else the reason it is not."""
    for imp in model.opset_import:
        if imp.domain not in ("", "ai.onnx"):
            return "domain %s" % imp.domain
    ops = set()

    def walk(graph):
        for n in graph.node:
            if n.domain not in ("", "ai.onnx"):
                ops.add("%s.%s" % (n.domain, n.op_type))
            else:
                ops.add(n.op_type)
            for a in n.attribute:
                if a.g and a.g.node:
                    walk(a.g)
    walk(model.graph)
    for op in sorted(ops):
        if op not in IN_SCOPE:
            return "%s: %s" % (op, REASON.get(op, "not in opsched's operator set"))
    inputs = {vi.name for vi in model.graph.input}
    for n in model.graph.node:
        if n.op_type == "Dropout" and len(n.input) >= 3 and n.input[2] in inputs:
            return "Dropout with training_mode given at run time: training operator"
    for vi in list(model.graph.input) + list(model.graph.output):
        t = vi.type
        if not t.HasField("tensor_type"):
            return "%s has a %s type" % (vi.name, t.WhichOneof("value"))
        et = t.tensor_type.elem_type
        if et not in TYPES_IN_SCOPE:
            import onnx
            return "%s is %s" % (vi.name, onnx.TensorProto.DataType.Name(et).lower())
    return None


def to_npy_array(arr):
    import numpy as np
    if arr.dtype.name == "bfloat16":  # NumPy has no bfloat16: given as float32
        return arr.astype(np.float32)
    return arr


def compare(exp, got, rtol, atol):
    import numpy as np
    if tuple(got.shape) != tuple(exp.shape):
        return "shape %s, expected %s" % (list(got.shape), list(exp.shape))
    if exp.dtype.name == "bfloat16":
        exp = exp.astype(np.float32)
        rtol = max(rtol, 2 ** -6)
        if got.dtype != np.float32:
            return "type %s, expected bfloat16 (as float32)" % got.dtype
    elif got.dtype != exp.dtype:
        return "type %s, expected %s" % (got.dtype, exp.dtype)
    try:
        np.testing.assert_allclose(got, exp, rtol=rtol, atol=atol)
    except AssertionError as e:
        lines = [l.strip() for l in str(e).splitlines() if l.strip()]
        detail = "; ".join(l for l in lines if l.startswith(("Mismatched", "Max abs", "Max rel")))
        return "values differ (%s)" % (detail or "assert_allclose")
    return None


def run_case(args):
    case_dir, opsched, backend, math, timeout = args
    import numpy as np
    import onnx
    from onnx import numpy_helper
    name = os.path.basename(case_dir)
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    op = case_op(case_dir, model)
    why = scope(model)
    if why:
        return name, op, "skipped", why
    tol = json.load(open(os.path.join(case_dir, "case.json")))
    sets = sorted(d for d in os.listdir(case_dir) if d.startswith("test_data_set_"))
    for ds in sets:
        dsp = os.path.join(case_dir, ds)
        with tempfile.TemporaryDirectory(prefix="opsched-conf-") as tmp:
            cmd = [opsched, "run", os.path.join(case_dir, "model.onnx"), "--backend", backend,
                   "--math", math, "--iters", "0", "--output-dir", os.path.join(tmp, "out")]
            inputs = [i for i in model.graph.input]
            for j, vi in enumerate(inputs):
                pb = os.path.join(dsp, "input_%d.pb" % j)
                if not os.path.exists(pb):
                    continue  # an optional input left empty
                t = onnx.TensorProto()
                t.ParseFromString(open(pb, "rb").read())
                f = os.path.join(tmp, "in%d.npy" % j)
                np.save(f, to_npy_array(numpy_helper.to_array(t)))
                cmd += ["--input", "%s=%s" % (vi.name, f)]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                return name, op, "failed", "no answer in %d s" % timeout
            if p.returncode != 0:
                err = [l for l in p.stderr.splitlines()
                       if l.strip() and not l.startswith("Try '")]
                msg = err[-1] if err else "exit %d" % p.returncode
                if "Sanitizer" in p.stderr or "runtime error:" in p.stderr:
                    msg = "sanitizer: " + next(l for l in err if "Sanitizer" in l or
                                                "runtime error:" in l)
                return name, op, "failed", "exit %d: %s" % (p.returncode, msg[:300])
            for j, vo in enumerate(model.graph.output):
                pb = os.path.join(dsp, "output_%d.pb" % j)
                t = onnx.TensorProto()
                t.ParseFromString(open(pb, "rb").read())
                exp = numpy_helper.to_array(t)
                got_path = os.path.join(tmp, "out", safe_name(vo.name) + ".npy")
                if not os.path.exists(got_path):
                    return name, op, "failed", "no file for output %s" % vo.name
                got = np.load(got_path)
                bad = compare(exp, got, tol["rtol"], tol["atol"])
                if bad:
                    return name, op, "failed", "%s: output %s: %s" % (ds, vo.name, bad)
    return name, op, "passed", ""


# ---- the table --------------------------------------------------------------

def summary(rows, meta):
    ops = {}
    for name, op, status, reason in rows:
        c = ops.setdefault(op, {"passed": 0, "failed": 0, "skipped": 0, "reasons": set()})
        c[status] += 1
        if status != "passed" and reason:
            c["reasons"].add(reason.split(": ", 1)[0] if status == "skipped" else "")
    tot = {k: sum(c[k] for c in ops.values()) for k in ("passed", "failed", "skipped")}
    ran = tot["passed"] + tot["failed"]
    out = ["# ONNX backend node tests through opsched", "",
           "- onnx %s, %d cases; opsched `%s`" % (meta["onnx"], len(rows), meta["opsched_version"]),
           "- backend %s, math %s, device: %s" % (meta["backend"], meta["math"], meta["device"]),
           "- date %s; command: `%s`" % (meta["date"], meta["command"]), "",
           "**In scope: %d cases; passed %d (%.1f%%), failed %d. Skipped (out of scope): %d.**"
           % (ran, tot["passed"], 100.0 * tot["passed"] / ran if ran else 0.0, tot["failed"],
              tot["skipped"]), "",
           "Every failure and skip, with its reason, is a row of cases.csv.", "",
           "| operator | passed | failed | skipped | pass rate (in scope) |",
           "|---|---:|---:|---:|---:|"]
    for op in sorted(ops):
        c = ops[op]
        n = c["passed"] + c["failed"]
        rate = "%.0f%%" % (100.0 * c["passed"] / n) if n else "–"
        out.append("| %s | %d | %d | %d | %s |" % (op, c["passed"], c["failed"], c["skipped"], rate))
    out.append("| **total** | **%d** | **%d** | **%d** | **%s** |"
               % (tot["passed"], tot["failed"], tot["skipped"],
                  "%.1f%%" % (100.0 * tot["passed"] / ran) if ran else "–"))
    return "\n".join(out) + "\n", tot


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--opsched", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--math", default="fp32")
    ap.add_argument("--cases")
    ap.add_argument("--venv")
    ap.add_argument("--no-venv", action="store_true",
                    help="read existing --cases (made by generate.py with the pinned onnx, "
                         "their ONNX_VERSION says which) with this python's onnx: for a "
                         "machine without PyPI")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", help="regular expression on case names")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--onnx-version", default=ONNX_VERSION)
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    opsched = os.path.abspath(a.opsched)
    if not os.access(opsched, os.X_OK):
        ap.error("--opsched %s is not an executable" % a.opsched)
    out = os.path.abspath(a.out)
    parent = os.path.dirname(out)
    cases = os.path.abspath(a.cases or os.path.join(parent, "cases-onnx-" + a.onnx_version))
    venv = os.path.abspath(a.venv or os.path.join(parent, "venv-onnx-" + a.onnx_version))

    stamp = os.path.join(cases, "ONNX_VERSION")
    cases_version = open(stamp).read().strip() if os.path.exists(stamp) else None
    if a.no_venv:
        if cases_version != a.onnx_version:
            log("conformance: --no-venv wants the cases of onnx %s in %s (found %s)"
                % (a.onnx_version, cases, cases_version or "none"))
            return 1
        a.inside = True
    if not a.inside:  # make what is missing, then run again inside the environment
        try:
            ensure_cases(cases, venv, a.onnx_version)
            py = ensure_venv(venv, a.onnx_version)
        except (subprocess.CalledProcessError, OSError) as e:
            log("conformance: cannot make the onnx %s environment or its cases: %s"
                % (a.onnx_version, e))
            return 1
        argv = [py, os.path.abspath(__file__)] + sys.argv[1:] + ["--inside", "--cases", cases,
                                                                  "--venv", venv]
        return subprocess.run(argv).returncode

    import onnx
    names = sorted(d for d in os.listdir(cases) if os.path.isdir(os.path.join(cases, d)))
    if a.only:
        names = [n for n in names if re.search(a.only, n)]
    os.makedirs(out, exist_ok=True)
    # Every finished case is appended to cases.partial.csv as it ends, so a
    # run cut short (a time limit, a lost machine) keeps its rows and the
    # next run with the same --out, backend and math runs only the rest.
    partial = os.path.join(out, "cases.partial.csv")
    key = "%s %s %s" % (a.backend, a.math, opsched_digest(opsched))
    done = load_partial(partial, key)
    if done:
        log("conformance: %d cases kept from an earlier run (%s)" % (len(done), partial))
    todo = [n for n in names if n not in done]
    work = [(os.path.join(cases, n), opsched, a.backend, a.math, a.timeout) for n in todo]
    new_file = not os.path.exists(partial) or not done
    with open(partial, "w" if new_file else "a", newline="") as pf:
        pw = csv.writer(pf, lineterminator="\n")
        if new_file:
            pf.write("# %s\n" % key)
            pf.flush()
        with cf.ProcessPoolExecutor(max_workers=max(1, a.jobs)) as ex:
            for i, r in enumerate(ex.map(run_case, work, chunksize=4)):
                done[r[0]] = tuple(r)
                pw.writerow(r)
                pf.flush()
                if (i + 1) % 200 == 0:
                    log("conformance: %d of %d cases" % (len(done), len(names)))
    rows = [done[n] for n in names]
    ver = subprocess.run([opsched, "--version"], capture_output=True, text=True).stdout.strip()
    dev = subprocess.run([opsched, "devices", "--format", "json"], capture_output=True,
                         text=True).stdout
    device = a.backend
    try:
        for d in json.loads(dev):
            if d.get("backend") == a.backend:
                device = "%s (%s)" % (d.get("name", a.backend), a.backend)
                break
    except (ValueError, AttributeError):
        pass
    meta = {"onnx": cases_version or onnx.__version__, "onnx_reader": onnx.__version__, "opsched_version": ver or "?", "backend": a.backend,
            "math": a.math, "device": device,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(["bench/conformance/run.py"] +
                                [x for x in sys.argv[1:] if x != "--inside"]),
            "host": platform.node(), "python": platform.python_version(), "cases": len(rows)}
    buf = [["case", "op", "status", "reason"]] + [list(r) for r in rows]
    import io
    s = io.StringIO()
    csv.writer(s, lineterminator="\n").writerows(buf)
    write_atomic(os.path.join(out, "cases.csv"), s.getvalue())
    text, tot = summary(rows, meta)
    write_atomic(os.path.join(out, "summary.md"), text)
    meta.update(tot)
    write_atomic(os.path.join(out, "run.json"), json.dumps(meta, indent=1) + "\n")
    os.remove(partial)
    log("conformance: %d passed, %d failed, %d skipped; %s" % (tot["passed"], tot["failed"],
                                                              tot["skipped"], out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
