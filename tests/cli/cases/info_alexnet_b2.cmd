info alexnet --batch 2 --input-size 256
