info squeezenet1_1 --batch=2 --input-size=64 --format=csv
