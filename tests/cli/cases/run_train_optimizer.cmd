run $TESTDATA/onnx/small/multi_input.onnx --shapes tokens:2x5x8,mask:1x5x1 --train --optimizer sgd --compare sequential --backend cpu
