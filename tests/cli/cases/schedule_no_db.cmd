schedule googlenet --searcher greedy
