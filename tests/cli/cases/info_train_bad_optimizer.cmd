info alexnet --train --optimizer adam
