run googlenet --compare greedy --cuda-graph maybe
