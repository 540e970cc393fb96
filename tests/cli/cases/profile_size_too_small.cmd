profile squeezenet1_1 --input-size 16
