profile squeezenet1_1 --input-size 64:96:16 --batch 1 --dry-run --backend cpu
