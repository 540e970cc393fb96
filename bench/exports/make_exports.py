#!/usr/bin/env python3
"""Writes the public export set: ONNX files without weights and a manifest
(bench/exports/models/manifest.json).

The set (`--list` prints it):

- timm: the smallest variant of every architecture family at its default
  input size.  A family is a module of timm.models (timm.list_modules());
  its variant is the one of fewest parameters among the module's models,
  the `test_*` configurations (timm's own unit-test models) left out.  To
  keep from building every giant of a module, the names are first ranked
  by the size they announce (atto < femto < pico < nano < ... < giant, then
  the numbers in the name) and the first CANDIDATES of them are built and
  counted; ties go to the smaller default input.
- torchvision: the smallest variant (weights' num_params) of every module
  of torchvision.models (classification), .segmentation and .video, at the
  crop size of its weights' transforms (video: 16 frames); `--torchvision
  all` takes every constructor instead.
- Hugging Face transformers: small random-weight configurations (hidden
  64, 2 layers, 4 heads, vocabulary 1000) at sequence 128, no KV cache:
  the encoders, decoders, encoder halves, speech and vision models the
  coverage issue names.

Each is exported at batch 1 with static shapes by the exporters this torch
has (`--exporter torchscript|dynamo|both`; torch 1.13 has only the
TorchScript one, torch 2.x both) and stripped of its weights the way the
network suite's set is (bench/networks/export_models.py, strip_weights):
every floating-point initializer of 1,024 elements or more becomes external
data in a `<file>.weights` that is not written.  opsched gives missing
weights random values; the harness (compare.py) writes the file with
deterministic values for opsched and ONNX Runtime alike.

The manifest keeps one entry per model and exporter, exported or not; an
export that failed in torch carries `export_error` (not an opsched
failure).  Each export runs in a child process with a time limit, so one
that hangs or crashes costs only its own entry.

    python3 bench/exports/make_exports.py                  # the whole set
    python3 bench/exports/make_exports.py --only timm_resnet10t,hf_bert
    python3 bench/exports/make_exports.py --list
"""
import argparse
import concurrent.futures as cf
import json
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "models")
MANIFEST = os.path.join(MODELS, "manifest.json")
SELECTION = os.path.join(HERE, "timm_families.json")
sys.path.insert(0, os.path.join(HERE, "..", "networks"))
from export_models import segmentation_map, strip_weights  # noqa: E402  one rule for both sets

CANDIDATES = 8
BIG_CONSTANT = 16384
SEQ = 128
VOCAB = 1000

# ---- the set ----------------------------------------------------------------

SIZE_WORDS = ["atto", "femto", "pico", "nano", "micro", "xxxs", "xxs", "xs", "tiny", "mini",
              "small", "s", "lite", "base", "b", "medium", "m", "large", "l", "xl", "xlarge",
              "xxl", "huge", "h", "giant", "g", "gigantic", "e"]


def size_rank(name):
    """How small a timm name says its model is: (size word, numbers)."""
    parts = re.split(r"[_.\-]", name)
    word = len(SIZE_WORDS)
    for p in parts:
        if p in SIZE_WORDS:
            word = min(word, SIZE_WORDS.index(p))
    nums = [int(n) for n in re.findall(r"\d+", name)]
    return (word, nums, len(name), name)


def timm_select(log):
    """{module: (model, params, input_size)} — the smallest of each family."""
    import timm
    import torch
    torch.set_grad_enabled(False)
    sel = {}
    for mod in timm.list_modules():
        names = [n for n in timm.list_models(module=mod) if not n.startswith("test_")]
        best = None
        for n in sorted(names, key=size_rank)[:CANDIDATES]:
            try:
                net = timm.create_model(n, pretrained=False)
            except Exception as ex:  # a constructor this torch cannot run
                log("  %s: %s: %s" % (n, type(ex).__name__, str(ex)[:120]))
                continue
            params = sum(p.numel() for p in net.parameters())
            size = list(net.pretrained_cfg.get("input_size", (3, 224, 224)))
            key = (params, size[1] * size[2] if len(size) == 3 else 0, n)
            if best is None or key < best[0]:
                best = (key, n, params, size)
            del net
        if best:
            sel[mod] = {"model": best[1], "parameters": best[2], "input_size": best[3],
                        "variants": len(names)}
            log("timm %-26s %-40s %9d params" % (mod, best[1], best[2]))
        else:
            sel[mod] = {"model": None, "variants": len(names),
                        "error": "no variant could be built"}
    return sel


def tv_select(which):
    """[(name, module, kind, builder, num_params)] of torchvision."""
    import torchvision.models as M
    from torchvision.models import get_model_builder, get_model_weights, list_models
    out = []
    for kind, pkg in (("classification", M), ("segmentation", M.segmentation),
                      ("video", M.video)):
        fams = {}
        for n in list_models(module=pkg):
            mod = get_model_builder(n).__module__.rsplit(".", 1)[-1]
            params = list(get_model_weights(n))[0].meta["num_params"]
            fams.setdefault(mod, []).append((params, n))
        for mod, vs in sorted(fams.items()):
            fam = mod if kind == "classification" else "%s.%s" % (kind, mod)
            for params, n in (sorted(vs) if which == "all" else [min(vs)]):
                out.append((n, fam, kind, params))
    return out


def hf_specs():
    """name -> (family, task, config class, model class, config kwargs, kind)."""
    enc = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=128, max_position_embeddings=512)
    dec = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=128, max_position_embeddings=512, use_cache=False)
    vit = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
               image_size=224)
    conv = [32] * 7
    audio = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                 conv_dim=conv, num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                 vocab_size=32)
    E, D, S, V = "text encoder", "text decoder (no KV cache)", "speech encoder", "vision encoder"
    return {
        "hf_bert": ("bert", E, "BertConfig", "BertModel", enc, "text"),
        "hf_roberta": ("roberta", E, "RobertaConfig", "RobertaModel",
                       dict(enc, max_position_embeddings=514), "text"),
        "hf_distilbert": ("distilbert", E, "DistilBertConfig", "DistilBertModel",
                          dict(vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, hidden_dim=128),
                          "text"),
        "hf_albert": ("albert", E, "AlbertConfig", "AlbertModel", dict(enc, embedding_size=32),
                      "text"),
        "hf_electra": ("electra", E, "ElectraConfig", "ElectraModel", dict(enc, embedding_size=32),
                       "text"),
        "hf_deberta_v2": ("deberta-v2", E, "DebertaV2Config", "DebertaV2Model",
                          dict(enc, relative_attention=True, pos_att_type=["p2c", "c2p"],
                               position_buckets=256, norm_rel_ebd="layer_norm",
                               share_att_key=True, max_relative_positions=-1,
                               position_biased_input=False), "text"),
        "hf_gpt2": ("gpt2", D, "GPT2Config", "GPT2Model",
                    dict(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=512,
                         use_cache=False), "text"),
        "hf_gpt_neox": ("gpt-neox", D, "GPTNeoXConfig", "GPTNeoXModel", dec, "text"),
        "hf_opt": ("opt", D, "OPTConfig", "OPTModel",
                   dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=4, ffn_dim=128, word_embed_proj_dim=64,
                        max_position_embeddings=512, use_cache=False), "text"),
        "hf_llama": ("llama", D, "LlamaConfig", "LlamaModel", dict(dec, num_key_value_heads=2),
                     "text"),
        "hf_mistral": ("mistral", D, "MistralConfig", "MistralModel",
                       # No sliding window (Mistral v0.2 on): transformers 4.44
                       # builds a windowed mask with bitwise_or, which torch 1.13
                       # cannot export.
                       dict(dec, num_key_value_heads=2, sliding_window=None), "text"),
        "hf_qwen2": ("qwen2", D, "Qwen2Config", "Qwen2Model", dict(dec, num_key_value_heads=2),
                     "text"),
        "hf_phi": ("phi", D, "PhiConfig", "PhiModel", dict(dec, partial_rotary_factor=0.5),
                   "text"),
        "hf_gemma": ("gemma", D, "GemmaConfig", "GemmaModel",
                     dict(dec, num_key_value_heads=2, head_dim=16), "text"),
        "hf_t5_encoder": ("t5", "text encoder (encoder half)", "T5Config", "T5EncoderModel",
                          dict(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                               num_heads=4, use_cache=False), "text"),
        "hf_bart_encoder": ("bart", "text encoder (encoder half)", "BartConfig", "BartModel",
                            dict(vocab_size=VOCAB, d_model=64, encoder_layers=2,
                                 decoder_layers=2, encoder_attention_heads=4,
                                 decoder_attention_heads=4, encoder_ffn_dim=128,
                                 decoder_ffn_dim=128, max_position_embeddings=512,
                                 use_cache=False), "encoder"),
        "hf_whisper_encoder": ("whisper", S, "WhisperConfig", "WhisperModel",
                               dict(vocab_size=VOCAB, d_model=64, encoder_layers=2,
                                    decoder_layers=2, encoder_attention_heads=4,
                                    decoder_attention_heads=4, encoder_ffn_dim=128,
                                    decoder_ffn_dim=128, num_mel_bins=80,
                                    max_source_positions=SEQ, use_cache=False,
                                    pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                    decoder_start_token_id=1, suppress_tokens=[],
                                    begin_suppress_tokens=[]), "mel"),
        "hf_wav2vec2": ("wav2vec2", S, "Wav2Vec2Config", "Wav2Vec2Model", audio, "audio"),
        "hf_hubert": ("hubert", S, "HubertConfig", "HubertModel", audio, "audio"),
        "hf_vit": ("vit", V, "ViTConfig", "ViTModel", dict(vit, patch_size=16), "image"),
        "hf_beit": ("beit", V, "BeitConfig", "BeitModel",
                    dict(vit, patch_size=16, vocab_size=VOCAB, use_relative_position_bias=True),
                    "image"),
        "hf_swin": ("swin", V, "SwinConfig", "SwinModel",
                    dict(image_size=224, patch_size=4, embed_dim=32, depths=[1, 1, 2, 1],
                         num_heads=[2, 2, 4, 4], window_size=7), "image"),
        "hf_segformer": ("segformer", "semantic segmentation", "SegformerConfig",
                         "SegformerForSemanticSegmentation",
                         dict(hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
                              num_attention_heads=[1, 2, 4, 4], decoder_hidden_size=64,
                              num_labels=10), "image"),
        "hf_clip_vision": ("clip", V, "CLIPVisionConfig", "CLIPVisionModel",
                           dict(vit, patch_size=32), "image"),
        "hf_clip_text": ("clip", E, "CLIPTextConfig", "CLIPTextModel",
                         dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                              num_attention_heads=4, intermediate_size=128,
                              max_position_embeddings=SEQ), "text"),
        "hf_dinov2": ("dinov2", V, "Dinov2Config", "Dinov2Model",
                      dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                           mlp_ratio=2, image_size=224, patch_size=14), "image"),
    }


def audio_samples(frames):
    """Raw audio length whose wav2vec2 feature extractor gives `frames`."""
    n = frames
    for k, s in reversed(list(zip((10, 3, 3, 3, 3, 2, 2), (5, 2, 2, 2, 2, 2, 2)))):
        n = (n - 1) * s + k
    return n


def the_set(a, log):
    """Every entry of the set, without exporting: dicts of name, source, ..."""
    out = []
    if os.path.exists(SELECTION) and not a.reselect:
        with open(SELECTION) as f:
            sel = json.load(f)["families"]
    else:
        sel = timm_select(log)
        import timm
        with open(SELECTION, "w") as f:
            json.dump({"timm": timm.__version__, "candidates": CANDIDATES, "families": sel}, f,
                      indent=1, sort_keys=True)
            f.write("\n")
    for mod, s in sorted(sel.items()):
        if not s.get("model"):
            continue
        size = s["input_size"]
        out.append({"name": "timm_" + s["model"].replace(".", "_"), "source": "timm",
                    "family": mod, "task": "image classification", "constructor": s["model"],
                    "parameters": s["parameters"],
                    "inputs": [{"name": "input", "shape": [1] + size, "dtype": "float32",
                                "fill": "normal"}],
                    "outputs": ["output"]})
    import torchvision
    from torchvision.models import get_model_weights
    for n, mod, kind, params in tv_select(a.torchvision):
        t = list(get_model_weights(n))[0].transforms()
        crop = list(t.crop_size) if hasattr(t, "crop_size") else [t.resize_size[0]] * 2
        if len(crop) == 1:
            crop = crop * 2
        if kind == "segmentation":
            crop = [t.resize_size[0]] * 2 if hasattr(t, "resize_size") else crop
        shape = [1, 3, 16] + crop if kind == "video" else [1, 3] + crop
        task = {"classification": "image classification", "segmentation": "semantic segmentation",
                "video": "video classification"}[kind]
        out.append({"name": "tv_" + n, "source": "torchvision", "family": mod, "task": task,
                    "constructor": n, "parameters": params,
                    "inputs": [{"name": "input", "shape": shape, "dtype": "float32",
                                "fill": "normal"}],
                    "outputs": ["output"], "torchvision": torchvision.__version__})
    for name, (fam, task, cfg, cls, kw, kind) in hf_specs().items():
        if kind in ("text", "encoder"):
            inputs = [{"name": "input_ids", "shape": [1, SEQ], "dtype": "int64",
                       "fill": "ids", "high": VOCAB},
                      {"name": "attention_mask", "shape": [1, SEQ], "dtype": "int64",
                       "fill": "mask"}]
            if name in ("hf_clip_text",):
                inputs[0]["fill"] = "ids_eos"  # CLIP pools at the largest id (its end token)
        elif kind == "mel":
            inputs = [{"name": "input_features", "shape": [1, 80, 2 * SEQ], "dtype": "float32",
                       "fill": "normal"}]
        elif kind == "audio":
            inputs = [{"name": "input_values", "shape": [1, audio_samples(SEQ)],
                       "dtype": "float32", "fill": "normal"}]
        else:
            inputs = [{"name": "pixel_values", "shape": [1, 3, 224, 224], "dtype": "float32",
                       "fill": "normal"}]
        out.append({"name": name, "source": "transformers", "family": fam, "task": task,
                    "constructor": "%s(%s)" % (cls, cfg), "config": kw, "inputs": inputs,
                    "outputs": ["logits" if "Segmentation" in cls else "last_hidden_state"]})
    return out


# ---- building and exporting one (in a child process) ------------------------

def build(e):
    """(module in eval mode, example args) of a manifest entry."""
    import torch
    torch.manual_seed(0)
    args = []
    for s in e["inputs"]:
        shape = s["shape"]
        if s["fill"].startswith("ids"):
            args.append(torch.randint(0, s["high"], shape, dtype=torch.int64))
        elif s["fill"] == "mask":
            args.append(torch.ones(shape, dtype=torch.int64))
        else:
            args.append(torch.randn(shape))
    if e["source"] == "timm":
        import timm
        return timm.create_model(e["constructor"], pretrained=False).eval(), args
    if e["source"] == "torchvision":
        from torchvision.models import get_model_builder
        kw = {}
        if e["constructor"] in ("googlenet", "inception_v3"):
            kw = {"aux_logits": False, "init_weights": False}
        elif e["task"] == "semantic segmentation":
            kw = {"weights_backbone": None, "aux_loss": False} \
                if not e["constructor"].startswith("lraspp") else {"weights_backbone": None}
        net = get_model_builder(e["constructor"])(**kw)
        if e["task"] == "semantic segmentation":
            net = segmentation_map(net)
        return net.eval(), args
    import transformers
    fam, task, cfg, cls, kw, kind = hf_specs()[e["name"]]
    config = getattr(transformers, cfg)(**kw)
    try:
        config._attn_implementation = "eager"  # the math form; fused kernels have no ONNX form
    except AttributeError:
        pass
    inner = getattr(transformers, cls)(config)
    if kind == "encoder":
        inner = inner.get_encoder()
    elif kind == "mel":
        inner = inner.get_encoder()

    class Hidden(torch.nn.Module):
        """The first output only (last hidden state, or logits), no cache."""
        def __init__(self):
            super().__init__()
            self.net = inner

        def forward(self, *xs):
            kwargs = {s["name"]: x for s, x in zip(e["inputs"], xs)}
            return self.net(**kwargs, return_dict=False)[0]
    return Hidden().eval(), args


def strip_constants(model, base, offset):
    """Moves the floating-point Constant nodes of more than BIG_CONSTANT
    elements (tables the exporter folded: relative position indices made
    floats, rotary tables of long contexts) into external data after
    `offset`, as strip_weights does with initializers; smaller ones (a
    128x128 causal mask) stay.  Returns (tensors moved, end offset)."""
    from onnx import TensorProto
    from onnx.external_data_helper import set_external_data
    floats = {TensorProto.FLOAT: 4, TensorProto.FLOAT16: 2, TensorProto.BFLOAT16: 2,
              TensorProto.DOUBLE: 8}
    keep, moved = [], 0
    for nd in model.graph.node:
        t = nd.attribute[0].t if (nd.op_type == "Constant" and len(nd.attribute) == 1
                                  and nd.attribute[0].name == "value") else None
        numel = 1
        for d in (t.dims if t is not None else []):
            numel *= d
        if t is None or t.data_type not in floats or numel <= BIG_CONSTANT \
                or nd.output[0] in {o.name for o in model.graph.output}:
            keep.append(nd)
            continue
        init = model.graph.initializer.add()
        init.CopyFrom(t)
        init.name = nd.output[0]
        size = numel * floats[t.data_type]
        set_external_data(init, "%s.weights" % base, offset=offset, length=size)
        init.data_location = TensorProto.EXTERNAL
        for field in ("raw_data", "float_data", "double_data", "int32_data"):
            init.ClearField(field)
        offset += (size + 4095) // 4096 * 4096
        moved += 1
    if moved:
        del model.graph.node[:]
        model.graph.node.extend(keep)
    return moved, offset


def export_one(e, exporter, opset, path):
    """Exports and strips entry `e` to `path`; returns the manifest fields."""
    import onnx
    import torch
    net, args = build(e)
    names = [s["name"] for s in e["inputs"]]
    t0 = time.time()
    if exporter == "dynamo":
        prog = torch.onnx.export(net, tuple(args), dynamo=True, input_names=names,
                                 output_names=e["outputs"], opset_version=max(opset, 18))
        prog.save(path, external_data=False)
    else:
        kwargs = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
        # Gradients on: PyTorch's fused attention fast path (taken without
        # them) has no ONNX form.
        torch.onnx.export(net, tuple(args), path, input_names=names, output_names=e["outputs"],
                          opset_version=opset, do_constant_folding=True, **kwargs)
    secs = time.time() - t0
    model = onnx.load(path)
    base = os.path.basename(path)[:-len(".onnx")]
    n, nbytes = strip_weights(model, base)
    k, nbytes = strip_constants(model, base, nbytes)
    onnx.save(model, path)
    ops = sorted({nd.op_type for nd in model.graph.node})
    return {"file": os.path.relpath(path, HERE), "opset": model.opset_import[0].version,
            "stripped_tensors": n + k, "stripped_bytes": nbytes, "onnx_bytes": os.path.getsize(path),
            "nodes": len(model.graph.node), "ops": ops, "export_s": round(secs, 1)}


def restrip(manifest):
    """Applies strip_constants to the files already written (an export set
    made before the rule); updates their entries."""
    import onnx
    for m in manifest:
        if "file" not in m or "export_error" in m:
            continue
        path = os.path.join(HERE, m["file"])
        model = onnx.load(path, load_external_data=False)
        end = 0
        for t in model.graph.initializer:
            info = {x.key: x.value for x in t.external_data}
            if "length" in info:
                end = max(end, (int(info.get("offset", 0)) + int(info["length"]) + 4095)
                          // 4096 * 4096)
        base = os.path.basename(path)[:-len(".onnx")]
        k, end = strip_constants(model, base, end)
        if k:
            onnx.save(model, path)
            m["stripped_tensors"] = m.get("stripped_tensors", 0) + k
            m["stripped_bytes"] = end
            m["onnx_bytes"] = os.path.getsize(path)


def versions():
    v = {}
    for mod in ("torch", "torchvision", "timm", "transformers", "onnx"):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            pass
    return v


def child(a):
    """--child: export one entry given as JSON on stdin; JSON on stdout."""
    e = json.loads(sys.stdin.read())
    res = {"versions": versions()}
    try:
        res.update(export_one(e, a.child, a.opset, e["path"]))
    except Exception as ex:  # a failed export is an entry with its error
        traceback.print_exc()
        res["export_error"] = "%s: %s" % (type(ex).__name__,
                                          (str(ex).strip().splitlines() or [""])[0][:300])
        try:
            os.remove(e["path"])
        except OSError:
            pass
    print("@@RESULT " + json.dumps(res))
    return 0


def run_child(e, exporter, a):
    suffix = "" if exporter == "torchscript" else "-dynamo"
    path = os.path.join(MODELS, e["name"] + suffix + ".onnx")
    job = dict(e, path=path)
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", exporter,
                            "--opset", str(a.opset)], input=json.dumps(job), text=True,
                           capture_output=True, timeout=a.timeout)
        line = [x for x in p.stdout.splitlines() if x.startswith("@@RESULT ")]
        if line:
            res = json.loads(line[-1][len("@@RESULT "):])
        else:
            tail = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
            res = {"export_error": "exporter died (exit %d): %s" % (p.returncode, tail[:300])}
    except subprocess.TimeoutExpired:
        res = {"export_error": "export took more than %d s" % a.timeout}
    m = dict(e, name=e["name"] + suffix, exporter=exporter)
    m.update(res)
    m["wall_s"] = round(time.time() - t0, 1)
    return m


def torch_exporters():
    import torch
    major = int(torch.__version__.split(".")[0])
    return ["torchscript", "dynamo"] if major >= 2 else ["torchscript"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma list of names (default: the whole set)")
    ap.add_argument("--exporter", default="all", choices=["torchscript", "dynamo", "all"],
                    help="all: every exporter this torch has")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--torchvision", default="smallest", choices=["smallest", "all"])
    ap.add_argument("--reselect", action="store_true",
                    help="choose the timm variants again (else timm_families.json)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=900, help="seconds per export")
    ap.add_argument("--skip-done", action="store_true",
                    help="keep entries the manifest has from this exporter")
    ap.add_argument("--list", action="store_true", help="print the set and exit")
    ap.add_argument("--restrip", action="store_true",
                    help="move large float Constants of the written files to external data")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a)

    def log(s):
        print(s, file=sys.stderr, flush=True)
    entries = the_set(a, log)
    if a.list:
        for e in entries:
            print("%-34s %-13s %-22s %s" % (e["name"], e["source"], e["family"], e["task"]))
        print("%d models" % len(entries))
        return 0
    only = set(a.only.split(",")) if a.only else None
    known = {e["name"] for e in entries}
    if only and only - known:
        log("unknown: %s" % ",".join(sorted(only - known)))
        return 2
    exporters = torch_exporters() if a.exporter == "all" else [a.exporter]
    os.makedirs(MODELS, exist_ok=True)
    old = {}
    if os.path.exists(MANIFEST):
        with open(MANIFEST) as f:
            old = {m["name"]: m for m in json.load(f)["models"]}
    jobs = []
    for e in entries:
        for x in exporters:
            key = e["name"] + ("" if x == "torchscript" else "-dynamo")
            if only is not None and e["name"] not in only:
                continue
            if a.skip_done and key in old and "export_error" not in old[key]:
                continue
            jobs.append((e, x))
    done = dict(old)
    if a.restrip:
        restrip(list(done.values()))
        jobs = []

    def save():
        models = sorted(done.values(), key=lambda m: (m["source"], m["name"]))
        ok = sum(1 for m in models if "export_error" not in m)
        tmp = MANIFEST + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"generator": "bench/exports/make_exports.py", "models": models}, f,
                      indent=1)
            f.write("\n")
        os.replace(tmp, MANIFEST)
        return len(models), ok
    with cf.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        futs = {ex.submit(run_child, e, x, a): (e, x) for e, x in jobs}
        for f in cf.as_completed(futs):
            m = f.result()
            done[m["name"]] = m
            log("%-34s %-11s %s" % (m["name"], m["exporter"],
                                    m.get("export_error", "ok %.1f KB, %.0f s"
                                          % (m.get("onnx_bytes", 0) / 1024.0, m["wall_s"]))))
            save()
    n, ok = save()
    log("wrote %s: %d entries, %d exported" % (MANIFEST, n, ok))
    return 0


if __name__ == "__main__":
    sys.exit(main())
