profile squeezenet1_1 --sizes 512:224:32
