info resnet50 --train --memory-limit 16
