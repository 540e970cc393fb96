predict alexnet --train --gpus 2 --comm-data h200x2 --format json
