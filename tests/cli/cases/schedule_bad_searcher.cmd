schedule googlenet --searcher annealing
