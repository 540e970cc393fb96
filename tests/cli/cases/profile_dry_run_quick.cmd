profile squeezenet1_1 --stage quick --batch 1,8 --dry-run --backend cpu
