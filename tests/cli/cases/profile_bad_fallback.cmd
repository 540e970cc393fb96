profile squeezenet1_1 --algo-fallback find
