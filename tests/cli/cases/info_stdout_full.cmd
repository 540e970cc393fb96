info resnet50 >/dev/full
