profile squeezenet1_1 --dry-run --backend cpu
