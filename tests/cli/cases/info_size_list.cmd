info resnet50 --input-size 224,256
