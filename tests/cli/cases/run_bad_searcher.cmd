run googlenet --compare sequential,annealing --backend cpu
