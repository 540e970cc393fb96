profile $TESTDATA/onnx/small/multi_input.onnx --shapes tokens:2x4x8,mask:1x4x1 --backend cpu --dry-run
