profile squeezenet1_1 --optimizer adamw --backend cpu
