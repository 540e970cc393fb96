schedule googlenet --stage-sample-us 5
