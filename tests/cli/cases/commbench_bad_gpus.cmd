commbench --gpus 0
