info resnet50 --bacth 2
