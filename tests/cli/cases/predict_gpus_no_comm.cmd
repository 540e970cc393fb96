predict alexnet --train --gpus 2
