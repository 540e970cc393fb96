sweep --for-model resnet05 --dry-run
