#!/usr/bin/env python3
"""Writes the network suite's public model set: ONNX files without weights
and a manifest (bench/networks/models/manifest.json).

Each network is built the way its users build it (torchvision's and Hugging
Face's constructors, random weights), exported with torch.onnx.export at
batch 1 with a dynamic batch dimension, and then stripped of its weights:
every floating-point initializer of 1024 elements or more is marked as
external data in a file `<name>.weights` that is not written (the ONNX
external-data form, so the file stays a valid ONNX model whose graph, shapes
and small constants are all there).  opsched gives such weights random
values; the PyTorch peers build the same network from its constructor.

Debian's torch exports the torchvision networks on any machine; the
transformers need the `transformers` package (the GPU machine has it):

    python3 bench/networks/export_models.py                 # what this torch can
    python3 bench/networks/export_models.py --only bert_base_s128,gpt2_s128
    python3 bench/networks/export_models.py --list          # the set, no export

The manifest keeps every entry of the set, exported or not; an entry whose
export failed carries the error.
"""
import argparse
import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "models")
MANIFEST = os.path.join(MODELS, "manifest.json")
BATCHES = [1, 8]

# name, family, task, source, builder, input size (H, W) or sequence length
TV = "torchvision"
HF = "transformers"
SET = [
    ("resnet18", "resnet", "image classification", TV, "resnet18", 224),
    ("resnet50", "resnet", "image classification", TV, "resnet50", 224),
    ("resnext50_32x4d", "resnet", "image classification", TV, "resnext50_32x4d", 224),
    ("wide_resnet50_2", "resnet", "image classification", TV, "wide_resnet50_2", 224),
    ("vgg16", "vgg", "image classification", TV, "vgg16", 224),
    ("densenet121", "densenet", "image classification", TV, "densenet121", 224),
    ("googlenet", "inception", "image classification", TV, "googlenet", 224),
    ("inception_v3", "inception", "image classification", TV, "inception_v3", 299),
    ("squeezenet1_1", "squeezenet", "image classification", TV, "squeezenet1_1", 224),
    ("mobilenet_v2", "mobilenet", "image classification", TV, "mobilenet_v2", 224),
    ("mobilenet_v3_small", "mobilenet", "image classification", TV, "mobilenet_v3_small", 224),
    ("mobilenet_v3_large", "mobilenet", "image classification", TV, "mobilenet_v3_large", 224),
    ("mnasnet1_0", "mobilenet", "image classification", TV, "mnasnet1_0", 224),
    ("shufflenet_v2_x1_0", "shufflenet", "image classification", TV, "shufflenet_v2_x1_0", 224),
    ("efficientnet_b0", "efficientnet", "image classification", TV, "efficientnet_b0", 224),
    ("efficientnet_b1", "efficientnet", "image classification", TV, "efficientnet_b1", 240),
    ("efficientnet_b3", "efficientnet", "image classification", TV, "efficientnet_b3", 300),
    ("efficientnet_v2_s", "efficientnet", "image classification", TV, "efficientnet_v2_s", 384),
    ("regnet_x_400mf", "regnet", "image classification", TV, "regnet_x_400mf", 224),
    ("regnet_y_1_6gf", "regnet", "image classification", TV, "regnet_y_1_6gf", 224),
    ("regnet_y_8gf", "regnet", "image classification", TV, "regnet_y_8gf", 224),
    ("convnext_tiny", "convnext", "image classification", TV, "convnext_tiny", 224),
    ("convnext_small", "convnext", "image classification", TV, "convnext_small", 224),
    ("vit_b_16", "vit", "image classification", TV, "vit_b_16", 224),
    ("vit_b_32", "vit", "image classification", TV, "vit_b_32", 224),
    ("swin_t", "swin", "image classification", TV, "swin_t", 224),
    ("fcn_resnet50", "segmentation", "semantic segmentation", TV, "segmentation.fcn_resnet50", 520),
    ("lraspp_mobilenet_v3_large", "segmentation", "semantic segmentation", TV,
     "segmentation.lraspp_mobilenet_v3_large", 520),
    ("bert_base_s128", "bert", "text encoding (masked LM encoder)", HF, "bert", 128),
    ("bert_base_s384", "bert", "text encoding (masked LM encoder)", HF, "bert", 384),
    ("distilbert_s128", "bert", "text encoding (distilled encoder)", HF, "distilbert", 128),
    ("distilbert_s384", "bert", "text encoding (distilled encoder)", HF, "distilbert", 384),
    ("gpt2_s128", "gpt", "text generation (decoder, no KV cache)", HF, "gpt2", 128),
]
NO_AUX = {"aux_logits": False, "init_weights": False}
TV_KWARGS = {"googlenet": NO_AUX, "inception_v3": NO_AUX,
             "segmentation.fcn_resnet50": {"weights_backbone": None, "aux_loss": False},
             "segmentation.lraspp_mobilenet_v3_large": {"weights_backbone": None}}


def segmentation_map(net):
    """A torchvision segmentation network that returns its map only (its
    forward returns a dict)."""
    import torch

    class Out(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(x)["out"]
    return Out()


def build(entry):
    """(torch module in eval mode, example inputs, input specs, output names)."""
    import torch
    name, family, task, source, builder, size = entry
    if source == TV:
        import torchvision
        mod = torchvision.models
        for part in builder.split("."):
            mod = getattr(mod, part)
        net = mod(**TV_KWARGS.get(builder, {}))
        if builder.startswith("segmentation."):
            net = segmentation_map(net)
        x = torch.randn(1, 3, size, size)
        specs = [{"name": "input", "shape": ["batch", 3, size, size], "dtype": "float32"}]
        return net.eval(), (x,), specs, ["output"]
    import transformers
    if builder == "bert":
        net = transformers.BertModel(transformers.BertConfig())
    elif builder == "distilbert":
        net = transformers.DistilBertModel(transformers.DistilBertConfig())
    else:
        net = transformers.GPT2Model(transformers.GPT2Config(use_cache=False))
    vocab = net.config.vocab_size

    class Hidden(torch.nn.Module):
        """The last hidden state only, no cache (what an encoder serves)."""
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, input_ids, attention_mask):
            return self.net(input_ids=input_ids, attention_mask=attention_mask,
                            return_dict=False)[0]
    ids = torch.randint(0, vocab, (1, size), dtype=torch.int64)
    mask = torch.ones(1, size, dtype=torch.int64)
    specs = [{"name": "input_ids", "shape": ["batch", size], "dtype": "int64"},
             {"name": "attention_mask", "shape": ["batch", size], "dtype": "int64"}]
    return Hidden().eval(), (ids, mask), specs, ["last_hidden_state"]


def strip_weights(model, name):
    """Marks the large floating-point initializers as external data in a file
    that is never written; returns (tensors stripped, their bytes)."""
    from onnx import TensorProto
    from onnx.external_data_helper import set_external_data
    floats = {TensorProto.FLOAT: 4, TensorProto.FLOAT16: 2, TensorProto.BFLOAT16: 2,
              TensorProto.DOUBLE: 8}
    offset, count = 0, 0
    for t in model.graph.initializer:
        if t.data_type not in floats:
            continue
        numel = 1
        for d in t.dims:
            numel *= d
        if numel < 1024:
            continue
        size = numel * floats[t.data_type]
        set_external_data(t, "%s.weights" % name, offset=offset, length=size)
        t.data_location = TensorProto.EXTERNAL
        for field in ("raw_data", "float_data", "double_data", "int32_data"):
            t.ClearField(field)
        offset += (size + 4095) // 4096 * 4096
        count += 1
    return count, offset


def export(entry, opset):
    import onnx
    import torch
    name = entry[0]
    net, args, specs, outs = build(entry)
    path = os.path.join(MODELS, name + ".onnx")
    axes = {s["name"]: {0: "batch"} for s in specs}
    axes.update({o: {0: "batch"} for o in outs})
    kwargs = {}
    if "dynamo" in torch.onnx.export.__code__.co_varnames:
        kwargs["dynamo"] = False  # the TorchScript exporter, what most exports in the wild are
    # With gradients on: PyTorch's fused attention fast path (taken when
    # they are off) has no ONNX form.
    torch.onnx.export(net, args, path, input_names=[s["name"] for s in specs],
                      output_names=outs, dynamic_axes=axes, opset_version=opset,
                      do_constant_folding=True, **kwargs)
    model = onnx.load(path)
    n, nbytes = strip_weights(model, name)
    onnx.save(model, path)
    params = sum(p.numel() for p in net.parameters())
    return {"file": os.path.relpath(path, HERE), "inputs": specs, "outputs": outs,
            "parameters": params, "stripped_tensors": n, "stripped_bytes": nbytes,
            "opset": opset, "exporter": "torch %s" % torch.__version__,
            "onnx_bytes": os.path.getsize(path)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma list of names (default: all this torch can build)")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--list", action="store_true", help="print the set and exit")
    a = ap.parse_args()
    if a.list:
        for e in SET:
            print("%-26s %-13s %-12s %s" % (e[0], e[1], e[3], e[2]))
        return 0
    only = set(a.only.split(",")) if a.only else None
    if only and only - {e[0] for e in SET}:
        print("unknown: %s" % ",".join(sorted(only - {e[0] for e in SET})), file=sys.stderr)
        return 2
    os.makedirs(MODELS, exist_ok=True)
    manifest = {"batches": BATCHES, "models": []}
    if os.path.exists(MANIFEST):
        with open(MANIFEST) as f:
            manifest = json.load(f)
    old = {m["name"]: m for m in manifest["models"]}
    rc = 0
    out = []
    for e in SET:
        name, family, task, source, builder, size = e
        m = dict(old.get(name, {}))
        m.update({"name": name, "family": family, "task": task, "source": source,
                  "constructor": builder, "batches": BATCHES,
                  "input_size" if source == TV else "sequence": size})
        want = (only is None or name in only)
        if want and source == HF:
            try:
                import transformers  # noqa: F401
            except ImportError:
                want = only is not None
        if want:
            print("exporting %s ..." % name, flush=True)
            try:
                m.pop("error", None)
                m.update(export(e, a.opset))
            except Exception as ex:  # a failed export is an entry with its error
                traceback.print_exc()
                m["error"] = "%s: %s" % (type(ex).__name__, str(ex).splitlines()[0][:300])
                rc = 1
        out.append(m)
    manifest["models"] = out
    tmp = MANIFEST + ".tmp"
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.replace(tmp, MANIFEST)
    print("wrote %s (%d models, %d with files)" % (
        MANIFEST, len(out), sum(1 for m in out if "file" in m and "error" not in m)))
    return rc


if __name__ == "__main__":
    sys.exit(main())
