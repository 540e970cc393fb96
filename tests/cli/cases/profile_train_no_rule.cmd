profile $TESTDATA/onnx/small/groupnorm_op18.onnx --train --backend cpu --min-ms 2 --out-dir $CASE_TMP
