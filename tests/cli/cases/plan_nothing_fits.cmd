plan alexnet --train --batch 2 --gpus 2 --comm-data h200x2 --data h100 --memory-limit 0.001 --quiet
