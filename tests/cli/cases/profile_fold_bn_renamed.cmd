profile squeezenet1_1 --fold-bn --dry-run
