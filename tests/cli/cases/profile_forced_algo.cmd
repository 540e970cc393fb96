profile squeezenet1_1 --backend cpu --algo winograd --input-size 64 --iters 2 --warmup-ms 0 --check off --layers off --out-dir $CASE_TMP
