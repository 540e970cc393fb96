profile squeezenet1_1 --sizes 16
