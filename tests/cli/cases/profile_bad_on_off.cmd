profile squeezenet1_1 --cuda-graph maybe
