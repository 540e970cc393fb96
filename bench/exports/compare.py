#!/usr/bin/env python3
"""The export set through opsched, against ONNX Runtime's CPU provider.

    compare.py --opsched BIN --out DIR [--models DIR] [--only NAMES|--list FILE]
               [--jobs N] [--timeout S] [--tol 1e-4] [--force]

For each exported model of the manifest (models/manifest.json):

1. The weights the files leave out (external data in `<file>.weights`) are
   written with deterministic values (seeded by the tensor's name), scaled
   by the fan-in their consumer implies so deep networks stay finite
   (BatchNormalization's variance positive, normalisation scales near 1),
   into a work folder beside a copy of the model: opsched and ONNX Runtime
   read the same file.
2. Inputs from the manifest's specs: floats standard normal, token ids
   below the vocabulary, attention masks ones with the last quarter padding.
3. ONNX Runtime (CPU provider, basic graph optimisations) computes the
   reference; `opsched run FILE --backend cpu --iters 0 --input ...
   --output-dir` computes opsched's outputs.
4. Every output is compared by relative L2, ||opsched - ort|| / ||ort||
   (float64); a model matches when every output is within --tol.

Needs numpy, onnx and onnxruntime only (no torch).  Each model runs in its
own folder and leaves its row in DIR/rows/<name>.json; a model whose row
exists is skipped unless --force, so a run can be stopped and continued,
and several may share DIR.  A model that fails or overruns --timeout is a
row with its error; nothing aborts the run.  At the end DIR gets
results.csv (one row per model), summary.md and run.json.  Exit 0 when the
harness ran (whatever the results), 1 when it could not, 2 on bad
arguments; --require-match makes a mismatch or failure of a listed model
exit 1 too (make check).
"""
import argparse
import concurrent.futures as cf
import csv
import datetime
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ["name", "source", "family", "exporter", "status", "loaded", "ran", "matched",
           "max_rel_l2", "worst_output", "outputs", "error", "ort_s", "opsched_s", "total_s"]
STATUSES = ["match", "mismatch", "run_error", "load_error", "timeout", "ort_error",
            "export_error"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def safe_name(name):
    """The file name opsched gives output `name` in --output-dir."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "_"


# ---- deterministic weights --------------------------------------------------

def consumers(graph):
    """initializer name -> [(op_type, input index, node)], looking through
    Identity (the exporter's alias of an initializer used twice)."""
    use = {}
    for nd in graph.node:
        for i, x in enumerate(nd.input):
            use.setdefault(x, []).append((nd.op_type, i, nd))

    def final(name, depth=0):
        out = []
        for op, i, nd in use.get(name, []):
            if op == "Identity" and depth < 8:
                out += final(nd.output[0], depth + 1)
            else:
                out.append((op, i, nd))
        return out
    return {k: final(k) for k in use}


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return a.i
    return default


def weight_values(name, dims, uses):
    """Seeded values for the stripped initializer `name` of shape `dims`."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    dims = [int(d) for d in dims]
    n = int(np.prod(dims)) if dims else 1
    op, idx, node = uses[0] if uses else ("", 0, None)
    if op in ("BatchNormalization", "LayerNormalization", "InstanceNormalization",
              "GroupNormalization"):
        u = rng.uniform(-1, 1, n)
        if op == "BatchNormalization" and idx == 4:
            return (1.0 + 0.5 * np.abs(u)).reshape(dims)
        return ((1.0 if idx == 1 else 0.0) + 0.1 * u).reshape(dims)
    if op in ("Conv", "ConvTranspose") and idx == 1 and len(dims) >= 3:
        fan = int(np.prod(dims[1:]))
    elif op == "Gemm" and idx in (0, 1) and len(dims) == 2:
        t = attr(node, "transB" if idx == 1 else "transA", 0)
        fan = dims[1] if (t == 1) == (idx == 1) else dims[0]
    elif op == "MatMul" and len(dims) >= 2:
        fan = dims[-2] if idx == 1 else dims[-1]
    elif op == "Gather" and idx == 0:
        return rng.standard_normal(n).reshape(dims)  # an embedding table
    elif op == "Mul" and len(dims) <= 1:
        return (1.0 + 0.1 * rng.uniform(-1, 1, n)).reshape(dims)  # a scale
    elif len(dims) >= 3:
        fan = int(np.prod(dims[1:]))
    elif len(dims) == 2 and op not in ("Add", "Sub"):
        fan = dims[0]
    else:
        return (0.1 * rng.standard_normal(n)).reshape(dims)  # biases, embeddings added
    return (rng.standard_normal(n) / np.sqrt(max(fan, 1))).reshape(dims)


def write_weights(model, folder):
    """Writes every external-data file the model names into `folder`."""
    from onnx import TensorProto, helper
    use = consumers(model.graph)
    files = {}
    for t in model.graph.initializer:
        if t.data_location != TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in t.external_data}
        dtype = helper.tensor_dtype_to_np_dtype(t.data_type) \
            if hasattr(helper, "tensor_dtype_to_np_dtype") \
            else {1: np.float32, 10: np.float16, 11: np.float64}[t.data_type]
        v = weight_values(t.name, t.dims, use.get(t.name, [])).astype(dtype)
        files.setdefault(info["location"], []).append((int(info.get("offset", 0)), v))
    for loc, parts in files.items():
        path = os.path.join(folder, loc)
        with open(path, "wb") as f:
            for off, v in sorted(parts, key=lambda p: p[0]):
                f.seek(off)
                f.write(v.tobytes())
    return len(files)


# ---- inputs -----------------------------------------------------------------

def make_inputs(specs, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for s in specs:
        shape = [int(d) for d in s["shape"]]
        fill = s.get("fill", "normal")
        if fill.startswith("ids"):
            high = int(s["high"])
            v = rng.integers(0, high - 1 if fill == "ids_eos" else high, shape, dtype=np.int64)
            if fill == "ids_eos":  # one end token, the only largest id, before the padding
                v[..., shape[-1] * 3 // 4 - 1] = high - 1
        elif fill == "mask":
            v = np.ones(shape, np.int64)
            v[..., shape[-1] * 3 // 4:] = 0
        else:
            v = rng.standard_normal(shape).astype(s.get("dtype", "float32"))
        out[s["name"]] = v.astype(s.get("dtype", v.dtype))
    return out


def rel_l2(got, want):
    a = np.asarray(got, np.float64).ravel()
    b = np.asarray(want, np.float64).ravel()
    d = np.linalg.norm(a - b)
    nb = np.linalg.norm(b)
    return float(d / nb) if nb > 0 else float(d)


# ---- one model --------------------------------------------------------------

def tail(text, n=1):
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return " | ".join(lines[-n:])[:400]


def opsched_error(text):
    """The line of opsched's stderr that says why it failed."""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    for x in lines:
        if re.search(r"error|unsupported|refused|cannot|failed|invalid", x, re.I) \
                and "warning" not in x.lower():
            return x[:400]
    return (lines[-1] if lines else "")[:400]


def run_model(job):
    e, opts = job
    t_start = time.time()
    row = {k: "" for k in COLUMNS}
    row.update(name=e["name"], source=e["source"], family=e["family"],
               exporter=e.get("exporter", ""), loaded=0, ran=0, matched=0)
    if "export_error" in e or "file" not in e:
        row.update(status="export_error", error=e.get("export_error", "no file"))
        return row
    import onnx
    import onnxruntime as ort
    work = os.path.join(opts["out"], "work", e["name"])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        src = os.path.join(opts["models_root"], e["file"])
        model_path = os.path.join(work, os.path.basename(src))
        shutil.copyfile(src, model_path)
        model = onnx.load(model_path, load_external_data=False)
        write_weights(model, work)
        del model
        inputs = make_inputs(e["inputs"], opts["seed"])
        args = []
        for k, v in inputs.items():
            f = os.path.join(work, "in_%s.npy" % safe_name(k))
            np.save(f, v)
            args += ["--input", "%s=%s" % (k, f)]
        # ONNX Runtime's reference.
        t0 = time.time()
        try:
            so = ort.SessionOptions()
            so.intra_op_num_threads = opts["threads"]
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
            names = [o.name for o in sess.get_outputs()]
            want = dict(zip(names, sess.run(None, inputs)))
            del sess
        except Exception as ex:
            row.update(status="ort_error", error="onnxruntime: " + str(ex).strip()[:300])
            return row
        row["ort_s"] = "%.2f" % (time.time() - t0)
        # opsched.
        outdir = os.path.join(work, "out")
        shutil.rmtree(outdir, ignore_errors=True)  # a call cut short left its files
        env = dict(os.environ, OMP_NUM_THREADS=str(opts["threads"]))
        cmd = [opts["opsched"], "run", model_path, "--backend", opts["backend"], "--math",
               opts["math"], "--iters", "0", "--output-dir", outdir] + args
        t0 = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=opts["timeout"],
                               env=env)
        except subprocess.TimeoutExpired:
            row.update(status="timeout", error="opsched run took more than %d s" % opts["timeout"])
            return row
        row["opsched_s"] = "%.2f" % (time.time() - t0)
        if p.returncode != 0:
            err = opsched_error(p.stderr.replace(work + os.sep, "")) or "exit %d" % p.returncode
            if p.returncode < 0:
                err = "killed by signal %d: %s" % (-p.returncode, tail(p.stderr))
            shapes = ",".join("%s:%s" % (k, "x".join(str(d) for d in v.shape))
                              for k, v in inputs.items())
            q = subprocess.run([opts["opsched"], "info", model_path, "--shapes", shapes],
                               capture_output=True, text=True, timeout=opts["timeout"], env=env)
            loaded = q.returncode == 0
            row.update(loaded=int(loaded), status="run_error" if loaded else "load_error",
                       error=err)
            return row
        row.update(loaded=1, ran=1)
        worst, worst_name, parts = 0.0, "", []
        for name, w in want.items():
            f = os.path.join(outdir, safe_name(name) + ".npy")
            if not os.path.exists(f):
                worst, worst_name = float("inf"), name
                parts.append("%s: missing" % name)
                continue
            g = np.load(f)
            if tuple(g.shape) != tuple(w.shape):
                r = float("inf")
                parts.append("%s: shape %s, want %s" % (name, g.shape, w.shape))
            elif not np.all(np.isfinite(w)):
                r = float("nan")
                parts.append("%s: the reference is not finite" % name)
            else:
                r = rel_l2(g, w)
                if not np.isfinite(r):
                    r = float("inf")
            if not (r <= worst) or worst_name == "":
                worst, worst_name = r, name
        row["max_rel_l2"] = "%.3g" % worst
        row["worst_output"] = worst_name
        row["outputs"] = len(want)
        ok = worst <= opts["tol"]
        row.update(matched=int(ok), status="match" if ok else "mismatch",
                   error="" if ok else ("; ".join(parts) or "relative L2 %.3g > %g on %s"
                                        % (worst, opts["tol"], worst_name)))
        return row
    except Exception as ex:  # the harness's own trouble is the row's error too
        row.update(status=row["status"] or "run_error",
                   error="harness: %s: %s" % (type(ex).__name__, str(ex)[:300]))
        return row
    finally:
        row["total_s"] = "%.1f" % (time.time() - t_start)
        if not opts["keep"]:
            shutil.rmtree(work, ignore_errors=True)


def run_and_save(job):
    e, opts = job
    row = run_model(job)
    row["error"] = " ".join(str(row["error"]).split())  # one line per row
    path = os.path.join(opts["out"], "rows", safe_name(e["name"]) + ".json")
    tmp = path + ".%d.tmp" % os.getpid()
    with open(tmp, "w") as f:
        json.dump(row, f)
    os.replace(tmp, path)
    return row


# ---- the report -------------------------------------------------------------

def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def device_name(opsched, backend):
    """The device opsched runs on, as `opsched devices` names it."""
    if backend == "cpu":
        return "cpu: %s, %d cores" % (platform.processor() or platform.machine(),
                                      os.cpu_count() or 0)
    p = subprocess.run([opsched, "devices", "--format", "json"], capture_output=True, text=True)
    try:
        for d in json.loads(p.stdout):
            if d.get("backend") == backend:
                return "%s: %s" % (backend, d.get("name", "?"))
    except ValueError:
        pass
    return backend


def summary(rows, meta):
    by = {s: [r for r in rows if r["status"] == s] for s in STATUSES}
    exported = [r for r in rows if r["status"] != "export_error"]
    n = len(exported)
    loaded = sum(int(r["loaded"]) for r in exported)
    ran = sum(int(r["ran"]) for r in exported)
    matched = sum(int(r["matched"]) for r in exported)

    def pct(k):
        return "%.1f%%" % (100.0 * k / n) if n else "–"
    out = ["# Export set against ONNX Runtime (%s)" % meta["device"], "",
           "%s; %s; onnxruntime %s; %s on the %s backend; tolerance: relative L2 <= %g."
           % (meta["date"], meta["opsched_version"], meta["onnxruntime"], meta.get("math", "fp32"),
              meta.get("backend", "cpu"), meta["tol"]), "",
           "| | models | share of the exported |", "|---|---|---|",
           "| in the manifest | %d | |" % len(rows),
           "| export failed in torch | %d | |" % len(by["export_error"]),
           "| exported | %d | 100%% |" % n,
           "| loaded by opsched | %d | %s |" % (loaded, pct(loaded)),
           "| ran | %d | %s |" % (ran, pct(ran)),
           "| matched ONNX Runtime | %d | %s |" % (matched, pct(matched)),
           "| ONNX Runtime itself failed | %d | |" % len(by["ort_error"]), ""]
    src = sorted({r["source"] for r in rows})
    out += ["| source | exported | loaded | ran | matched |", "|---|---|---|---|---|"]
    for s in src:
        rs = [r for r in exported if r["source"] == s]
        out.append("| %s | %d | %d | %d | %d |" % (
            s, len(rs), sum(int(r["loaded"]) for r in rs), sum(int(r["ran"]) for r in rs),
            sum(int(r["matched"]) for r in rs)))
    out.append("")
    for s in STATUSES[1:]:
        if by[s]:
            out += ["## %s (%d)" % (s, len(by[s])), "", "| model | family | error |",
                    "|---|---|---|"]
            for r in by[s]:
                err = (r["error"] or ("relative L2 %s" % r["max_rel_l2"])).replace("|", "\\|")
                out.append("| %s | %s | %s |" % (r["name"], r["family"], err))
            out.append("")
    out += ["Rows: results.csv (one per model); how the run was made: run.json.", ""]
    return "\n".join(out), {"models": len(rows), "exported": n, "loaded": loaded, "ran": ran,
                            "matched": matched}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--opsched", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default=os.path.join(HERE, "models"))
    ap.add_argument("--only", help="comma list of model names")
    ap.add_argument("--list", help="file of model names, one a line (# comments)")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    ap.add_argument("--threads", type=int, default=1, help="threads of each model's run")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per opsched call")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--math", default="fp32", choices=["fp32", "tf32"],
                    help="fp32: strict (TF32 off); tf32 on a GPU (default tolerance 1e-2)")
    ap.add_argument("--tol", type=float, help="relative L2 (default 1e-4 in fp32, 1e-2 in tf32)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--force", action="store_true", help="run models whose row exists")
    ap.add_argument("--keep", action="store_true", help="keep each model's work folder")
    ap.add_argument("--require-match", action="store_true",
                    help="exit 1 unless every model run matched")
    a = ap.parse_args()
    if a.tol is None:
        a.tol = 1e-2 if a.math == "tf32" else 1e-4
    opsched = os.path.abspath(a.opsched)
    if not os.access(opsched, os.X_OK):
        ap.error("--opsched %s is not an executable" % a.opsched)
    try:
        import onnx
        import onnxruntime
    except ImportError as ex:
        log("compare: %s (pip install onnx onnxruntime)" % ex)
        return 1
    with open(os.path.join(a.models, "manifest.json")) as f:
        entries = json.load(f)["models"]
    # The summary covers every row in --out, whichever models this call ran.
    all_entries = entries
    names = None
    if a.only:
        names = a.only.split(",")
    elif a.list:
        names = [x.split("#")[0].strip() for x in open(a.list)]
        names = [x for x in names if x]
    if names is not None:
        known = {e["name"]: e for e in entries}
        missing = [x for x in names if x not in known]
        if missing:
            ap.error("not in the manifest: %s" % ",".join(missing))
        entries = [known[x] for x in names]
    out = os.path.abspath(a.out)
    os.makedirs(os.path.join(out, "rows"), exist_ok=True)
    opts = {"opsched": opsched, "out": out, "models_root": os.path.dirname(os.path.abspath(
        a.models)), "threads": a.threads, "timeout": a.timeout, "tol": a.tol, "seed": a.seed,
        "backend": a.backend, "math": a.math,
        "keep": a.keep}
    # Paths in the manifest are relative to bench/exports (models/NAME.onnx).
    if not os.path.exists(os.path.join(opts["models_root"], entries[0].get("file", "models"))):
        opts["models_root"] = HERE
    todo = [e for e in entries if a.force or not os.path.exists(
        os.path.join(out, "rows", safe_name(e["name"]) + ".json"))]
    log("compare: %d models, %d to run, %d jobs" % (len(entries), len(todo), a.jobs))
    with cf.ProcessPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        futs = {ex.submit(run_and_save, (e, opts)): e["name"] for e in todo}
        for i, f in enumerate(cf.as_completed(futs)):
            try:
                r = f.result()
            except Exception as exc:  # a worker that died: its row says so
                r = {k: "" for k in COLUMNS}
                r.update(name=futs[f], status="run_error", error="harness worker: %s" % exc)
            log("[%d/%d] %-34s %-11s %s %s" % (i + 1, len(todo), r["name"], r["status"],
                                               r["max_rel_l2"], r["error"][:160]))
    rows = []
    for e in all_entries:
        path = os.path.join(out, "rows", safe_name(e["name"]) + ".json")
        if os.path.exists(path):
            with open(path) as f:
                rows.append(json.load(f))
    ver = subprocess.run([opsched, "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    meta = {"opsched_version": ver or "?", "commit": commit or "?", "backend": a.backend,
            "math": a.math,
            "device": device_name(opsched, a.backend),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(["bench/exports/compare.py"] + sys.argv[1:]),
            "onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__,
            "numpy": np.__version__, "python": platform.python_version(),
            "ort_graph_optimization": "basic", "tol": a.tol, "seed": a.seed,
            "threads_per_model": a.threads, "jobs": a.jobs}
    s = io.StringIO()
    w = csv.DictWriter(s, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k, "") for k in COLUMNS})
    write_atomic(os.path.join(out, "results.csv"), s.getvalue())
    text, tot = summary(rows, meta)
    write_atomic(os.path.join(out, "summary.md"), text)
    meta.update(tot)
    write_atomic(os.path.join(out, "run.json"), json.dumps(meta, indent=1) + "\n")
    log("compare: %(exported)d exported, %(loaded)d loaded, %(ran)d ran, %(matched)d matched"
        % tot)
    if a.require_match:
        bad = [r for r in rows if r["status"] != "match"]
        for r in bad:
            print("FAIL %s: %s: %s" % (r["name"], r["status"], r["error"] or r["max_rel_l2"]))
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
