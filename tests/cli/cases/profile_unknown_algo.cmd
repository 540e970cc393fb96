profile squeezenet1_1 --backend cpu --algo bogus --out-dir $CASE_TMP
