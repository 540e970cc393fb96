info alexnet --train --batch 4
