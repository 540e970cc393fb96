predict alexnet --gpus 2 --comm-data h200x2
