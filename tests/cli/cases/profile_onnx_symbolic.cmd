profile $TESTDATA/onnx/small/multi_input.onnx --backend cpu --dry-run
