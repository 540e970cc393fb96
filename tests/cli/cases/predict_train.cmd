predict $TESTDATA/onnx/small/multi_input.onnx --shapes tokens:4x5x8,mask:1x5x1 --train --data h100 --no-fit --quiet
