sweep --for-model squeezenet1_1 --input-size 64:96:32 --dry-run --backend cpu
