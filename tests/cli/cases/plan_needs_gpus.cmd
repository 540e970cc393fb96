plan alexnet --train --data h100 --memory-limit 10
