profile squeezenet1_1 --input-size 512:224:32
