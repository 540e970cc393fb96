bench conv2d --format xml
