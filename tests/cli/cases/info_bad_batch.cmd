info resnet50 --batch 0
