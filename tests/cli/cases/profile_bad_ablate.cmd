profile squeezenet1_1 --ablate ,
