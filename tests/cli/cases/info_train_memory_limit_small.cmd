info resnet50 --train --memory-limit 0.01
