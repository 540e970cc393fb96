profile $TESTDATA/onnx/small/multi_input.onnx --shapes tokens:2x5x8,mask:1x5x1 --train --loss mse --backend cpu --min-ms 2 --out-dir $CASE_TMP
