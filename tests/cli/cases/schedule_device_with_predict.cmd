schedule resnet50 --device 1
