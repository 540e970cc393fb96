devices --calibrate --backend tpu
