schedule resnet50 --no-merge=1
