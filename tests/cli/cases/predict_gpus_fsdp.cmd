predict alexnet --train --batch 2 --gpus 2 --comm-data h200x2 --data h100 --quiet --strategy fsdp --fsdp-wrap 'features,classifier.*'
