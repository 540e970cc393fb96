predict resnet50 --device h100
