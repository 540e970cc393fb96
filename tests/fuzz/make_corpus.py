#!/usr/bin/python3
"""Writes the seed corpus of the ONNX fuzzer (tests/fuzz/corpus/*.onnx):
small valid models covering the importer's paths, each under 20 KB.  The
outputs are committed; run this again only to change the seeds.

Usage: /usr/bin/python3 tests/fuzz/make_corpus.py [OUT_DIR]
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "onnx"))
import make_models  # noqa: E402  (tests/onnx/make_models.py)

SEEDS = ["conv_basic", "conv_same_lower", "gemm", "maxpool_ceil", "pad_avgpool", "global_pools",
         "unary_chain", "gelu_op20", "binary_bcast", "clip_op11", "clip_op6", "concat",
         "shuffle_concat", "se_gated", "dense_concat_bn",
         "split_op11", "split_op13", "split_op18", "slice_op13", "slice_op9", "gather_act",
         "transpose", "pad_reflect", "pad_op2", "expand", "flatten", "reshape", "squeeze_op11",
         "squeeze_op13", "identity_dropout", "batchnorm", "layernorm_op17", "reducemean_op13",
         "reducemean_op18", "softmax_op11_last", "shape_chain", "fold_arith", "constant_nodes",
         "identity_weight", "weights_as_inputs", "dim_param", "multi_input", "unsorted",
         "old_inputs_with_inits", "typed_fields",
         # the operators of the generic graph kinds
         "unary_math", "activations_op22", "swiglu_op28", "logic", "bitwise_op18", "variadic",
         "mod", "cast_op19", "bool_uint8_inputs", "clip_runtime", "dropout_mask",
         "groupnorm_op18", "groupnorm_op18_inputs", "layernorm_stats_op17", "lpnorm", "mvn",
         "rmsnorm_f16_op23", "reduce_op18", "axis_ops", "conv1d", "convtranspose_outshape",
         "convtranspose1d", "pool1d", "lppool_op18", "globallppool", "resize_sizes_op18",
         "resize_tf_crop", "resize_op10", "upsample_op7", "pad_wrap_op19", "tile", "depth_space",
         "gather_scatter_op18", "onehot", "trilu_runtime_k", "eyelike", "fold_more",
         "fold_unary_consts", "einsum_ellipsis", "einsum_diag", "einsum_three",
         "attention_3d_mask_op23", "attention_softcap_op24", "attention_window_op25",
         "rotary_3d_op23", "qdq_op21", "quant_blocked_op21", "dequant_weight_op23", "if_const",
         "if_nested"]
TORCH = [("alexnet_op13", "alexnet", {}, 224, 13, False),
         ("squeezenet1_1_op13", "squeezenet1_1", {}, 224, 13, False)]
LIMIT = 20 * 1024


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus")
    os.makedirs(out, exist_ok=True)
    small = make_models.small_models()
    for name in SEEDS:
        data = small[name].SerializeToString()
        assert len(data) < LIMIT, name
        make_models.write_bytes(os.path.join(out, name + ".onnx"), data)
    with tempfile.TemporaryDirectory() as tmp:
        for stem, ctor, kwargs, size, opset, params in TORCH:
            path = os.path.join(tmp, stem + ".onnx")
            r = make_models.export_one(path, ctor, kwargs, size, opset, params)
            if r.startswith("FAILED"):
                sys.exit(r)
            with open(path, "rb") as f:
                data = f.read()
            assert len(data) < LIMIT, stem
            make_models.write_bytes(os.path.join(out, stem + ".onnx"), data)
    print("corpus in", out)


if __name__ == "__main__":
    main()
