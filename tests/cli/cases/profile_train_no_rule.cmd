profile squeezenet1_1 --train --backend cpu --min-ms 2 --out-dir $CASE_TMP
