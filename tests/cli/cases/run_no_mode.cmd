run googlenet
