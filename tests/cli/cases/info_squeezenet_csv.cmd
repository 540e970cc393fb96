info squeezenet1_1 --format csv
