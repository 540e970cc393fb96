schedule resnet50 --cost measure --target h100
