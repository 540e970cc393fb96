info resnet50 --format xml
