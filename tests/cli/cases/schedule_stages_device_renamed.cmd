schedule resnet50 --stages-device 2
