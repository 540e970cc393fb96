schedule resnet50 --cost measure --index 1
