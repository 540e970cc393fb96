info $TESTDATA/no_such_file.onnx
