sweep --for-model $TESTDATA/onnx/small/multi_input.onnx --shapes tokens:3x5x8,mask:1x5x1 --dry-run --backend cpu
