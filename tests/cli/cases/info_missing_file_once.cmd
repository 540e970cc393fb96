info nosuch.onnx
