info resnet50 --memory-limit 3
