info resnet05
