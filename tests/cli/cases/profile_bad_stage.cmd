profile squeezenet1_1 --stage huge
