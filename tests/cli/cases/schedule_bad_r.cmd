schedule googlenet --r 0
