predict alexnet --train --batch 2 --gpus 4 --nodes 2 --inter-node-gbps 400 --comm-data h200x2 --data h100 --quiet
