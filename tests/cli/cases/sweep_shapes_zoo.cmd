sweep --for-model squeezenet1_1 --shapes x:1x3x64x64 --dry-run --backend cpu
