predict resnet50 --data a100
