profile squeezenet1_1 --sizes 64 --dry-run
